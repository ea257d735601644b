# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The PCI Express Device Control register of a ConnectX function, as ``setpci`` reads and writes it.

Device Control is the 16-bit register at offset 8 of the PCI Express capability (``setpci`` names it
``CAP_EXP+8.w``; ``68.w`` on cards whose capability sits at 0x60). Bits 14:12 are Max_Read_Request_Size, an
index: 128 << index bytes, 0..5 valid (128 .. 4096), 6 and 7 reserved; bits 7:5 are Max_Payload_Size, the same
encoding. Bit 15 is Initiate Function Level Reset on an endpoint: writing 1 there resets the function, so no write
may ever carry it. ``setpci -s BDF CAP_EXP+8.w`` prints the register as four hex digits; ``setpci -s BDF
CAP_EXP+8.w=5000:7000`` changes only the bits of the mask (setpci reads the register and writes
``(old & ~mask) | value``), which is the only form of write used here.

The PCI Express Capabilities register (``CAP_EXP+2.w``) tells what the function is: bits 3:0 the capability
version (1 or 2), bits 7:4 the device/port type, 0 for a PCI Express Endpoint and 1 for a Legacy Endpoint. Any
other value is a layout this code does not write to (a root port or switch port has another Device Control
meaning for some bits). Free of Ansible imports (the runner below is declared here, used by the module).
"""

from __future__ import annotations

import re

from ansible_collections.gpunet.rdma.plugins.module_utils._tool_runner import ToolRunner, option, value_word

# setpci -s DOMAIN:BUS:DEV.FN REGISTER[=VALUE[:MASK]]: a read names the register, a write adds the value.
SETPCI = ToolRunner('setpci', {'address': option('-s'), 'register': value_word()})

MAX_READ_REQUEST_SIZES = (128, 256, 512, 1024, 2048, 4096)
DEVCTL = 'CAP_EXP+8.w'
PCIE_CAPS = 'CAP_EXP+2.w'
MRRS_MASK = 0x7000
FLR_BIT = 0x8000
PCIE_CAP_ID = 0x10
ENDPOINT_TYPES = {0: 'PCI Express Endpoint', 1: 'Legacy PCI Express Endpoint'}
_WORD_RE = re.compile(r'^[0-9a-f]{4}$')
_HEXDUMP_RE = re.compile(r'^(?P<offset>[0-9a-f]{2,3}):(?P<bytes>(?: [0-9a-f]{2}){16})$')
_DEVCTL_SIZES_RE = re.compile(r'MaxPayload (?P<mps>\d+) bytes, MaxReadReq (?P<mrrs>\d+) bytes')
_NO_DEVICE = 'Warning: No devices selected'


class SetpciError(ValueError):
    """A read or a register value this code refuses to act on; the message says why."""


def parse_word(out, err='', what=DEVCTL):
    """The 16-bit value ``setpci -s BDF REG.w`` printed; anything but one line of four hex digits is refused."""
    text = (out or '').strip()
    if _NO_DEVICE in (err or '') or (not text and 'No devices' in (err or '')):
        raise SetpciError('setpci selected no device (it printed "%s"); the PCI address is not on this host'
                          % (err or '').strip())
    lines = text.splitlines()
    if len(lines) != 1 or not _WORD_RE.match(lines[0].strip()):
        raise SetpciError('setpci printed %r for %s instead of one 16-bit value (four hex digits)' % (text, what))
    return int(lines[0].strip(), 16)


def size_index(size):
    """4096 -> 5; ValueError for a size PCI Express does not have."""
    if size not in MAX_READ_REQUEST_SIZES:
        raise SetpciError('max_read_request must be one of %s bytes, got %r'
                          % (', '.join(str(s) for s in MAX_READ_REQUEST_SIZES), size))
    return MAX_READ_REQUEST_SIZES.index(size)


def decode_devctl(word):
    """``{word, max_read_request, max_payload}`` of a Device Control value; reserved encodings are refused."""
    if not 0 <= word <= 0xFFFF:
        raise SetpciError('Device Control 0x%x is not a 16-bit value' % word)
    mrrs, mps = (word >> 12) & 7, (word >> 5) & 7
    if mrrs > 5:
        raise SetpciError('Device Control %04x has the reserved Max_Read_Request_Size encoding %d (bits 14:12); '
                          'this is not a register to write to' % (word, mrrs))
    if mps > 5:
        raise SetpciError('Device Control %04x has the reserved Max_Payload_Size encoding %d (bits 7:5); this is '
                          'not a register to write to' % (word, mps))
    if word & FLR_BIT:
        raise SetpciError('Device Control %04x reads with bit 15 (Initiate Function Level Reset) set, which an '
                          'endpoint always reads as 0; the register read is not trustworthy' % word)
    return {'word': '%04x' % word, 'max_read_request': 128 << mrrs, 'max_payload': 128 << mps}


def check_endpoint(word):
    """Refuse a PCI Express Capabilities value that is not an Endpoint of capability version 1 or 2."""
    version, port_type = word & 0xF, (word >> 4) & 0xF
    if version not in (1, 2):
        raise SetpciError('PCI Express capability version %d (Capabilities register %04x); only versions 1 and 2 '
                          'are known' % (version, word))
    if port_type not in ENDPOINT_TYPES:
        raise SetpciError('device/port type %d (Capabilities register %04x) is not an endpoint; Device Control is '
                          'only changed on ConnectX endpoints' % (port_type, word))
    return ENDPOINT_TYPES[port_type]


def write_argument(size):
    """``CAP_EXP+8.w=5000:7000``: only bits 14:12, never bit 15."""
    return '%s=%x000:%04x' % (DEVCTL, size_index(size), MRRS_MASK)


def apply_size(word, size):
    """The register after the masked write of ``size``."""
    return (word & ~MRRS_MASK & 0xFFFF) | (size_index(size) << 12)


# What lspci prints, to check the decoding above against outputs recorded on real machines.
def parse_hexdump(text):
    """The configuration space bytes of ``lspci -xxx``/``-xxxx`` lines (``60: 10 00 02 00 ...``)."""
    data = {}
    for line in (text or '').splitlines():
        match = _HEXDUMP_RE.match(line.strip())
        if match:
            offset = int(match.group('offset'), 16)
            for index, value in enumerate(match.group('bytes').split()):
                data[offset + index] = int(value, 16)
    if not data:
        raise SetpciError('no configuration space dump in the text')
    size = max(data) + 1
    return bytes(data.get(i, 0) for i in range(size))


def find_capability(config, cap_id):
    """Offset of a capability in the standard list (pointer at 0x34, each entry id, next), or None."""
    if len(config) < 0x40 or not config[0x06] & 0x10:
        return None
    offset, seen = config[0x34] & 0xFC, set()
    while offset and offset not in seen and offset + 1 < len(config):
        seen.add(offset)
        if config[offset] == cap_id:
            return offset
        offset = config[offset + 1] & 0xFC
    return None


def read_word(config, offset):
    return config[offset] | (config[offset + 1] << 8)


def lspci_devctl_sizes(text):
    """``(max_payload, max_read_request)`` from the line lspci prints under DevCtl, or None."""
    lines = (text or '').splitlines()
    for index, line in enumerate(lines):
        if 'DevCtl:' in line:
            for candidate in lines[index:index + 4]:
                match = _DEVCTL_SIZES_RE.search(candidate)
                if match:
                    return int(match.group('mps')), int(match.group('mrrs'))
    for line in lines:
        match = _DEVCTL_SIZES_RE.search(line)
        if match:
            return int(match.group('mps')), int(match.group('mrrs'))
    return None
