# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Lab test double of setpci (pciutils setpci.c, 3.x), on simulated configuration spaces.

    setpci [-v] [-f] [-D] [-r] (-s [[[dom]:]bus]:][slot][.[func]] | -d [vendor]:[device])... REG[=VALUES]...
    REG:    <hex address> | <named register> | CAP_<name> | CAP<hex id>, then [+<hex offset>][.B|.W|.L][@<n>]
    VALUES: <hex>[:<hex mask>][,...]

The functions are those of the lab's sysfs tree (<lab root>/sys/bus/pci/devices); each one's configuration space
lives in <lab root>/pci/<domain:bus:slot.func>.json, created the first time it is touched from the 256 bytes a real
ConnectX-3 Pro printed (pciutils tests/cap-aer-root, lspci -xxxx: capability list 40 power management -> 9c MSI-X
-> 60 PCI Express v2 Endpoint, Device Control 0x2020 = MaxPayload 256 bytes, MaxReadReq 512 bytes) with the
function's own vendor and device ID from sysfs. Reads print what setpci prints ("%02x" / "%04x" / "%08x"), writes
with a mask do setpci's read-modify-write; capabilities are found by walking the list from 0x34 as pcilib does.

Refuses what setpci refuses, with its messages ("setpci: ...\\nTry `setpci --help' for more information.", exit 1):
malformed filters, unknown registers, a missing width, unaligned or out-of-range registers, bad values and
masks, a capability the function does not have ("Instance #0 of Capability 0010 not found - there are no
capabilities with that id.", exit 1). A filter that selects no function prints setpci's warning to stderr and
exits 0 - the real tool does the same, so a caller must not take silence for success. Extended capabilities
(ECAP_*) and pcilib's access options (-A, -O, -H, -G) are not simulated and are refused. Every call is appended
to <lab root>/pci/calls.log.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile

LAB_ROOT = os.environ.get('GPUNET_LAB_ROOT', os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STATE_DIR = os.path.join(LAB_ROOT, 'pci')
PCI_DEVICES = os.path.join(LAB_ROOT, 'sys', 'bus', 'pci', 'devices')
# lspci -xxxx of a ConnectX-3 Pro (03:00.0) in pciutils' tests/cap-aer-root, offsets 00..ff.
TEMPLATE = (
    'b3 15 07 10 06 04 10 00 00 00 00 02 10 00 00 00 00 00 10 c0 00 00 00 00 00 00 00 be 00 00 00 00 '
    '00 00 00 00 00 00 00 00 00 00 00 00 e0 1a 34 00 00 00 00 c0 40 00 00 00 00 00 00 00 0b 01 00 00 '
    '01 9c 03 00 08 00 00 00 03 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 '
    '10 00 02 00 01 8e d0 11 20 20 00 00 83 f4 43 08 40 00 83 10 00 00 00 00 00 00 00 00 00 00 00 00 '
    '00 00 00 00 1f 00 00 00 00 00 00 00 0e 00 00 00 03 00 0e 00 00 00 00 00 00 00 00 00 11 60 ff 80 '
    '00 c0 07 00 00 d0 07 00 05 00 8a 00 00 00 00 00 ' + '00 ' * 80).split()
# name: (capability id or None, offset, width, header types mask)
REGISTERS = {
    'VENDOR_ID': (None, 0x00, 2, 0), 'DEVICE_ID': (None, 0x02, 2, 0), 'COMMAND': (None, 0x04, 2, 0),
    'STATUS': (None, 0x06, 2, 0), 'REVISION': (None, 0x08, 1, 0), 'CLASS_PROG': (None, 0x09, 1, 0),
    'CLASS_DEVICE': (None, 0x0a, 2, 0), 'HEADER_TYPE': (None, 0x0e, 1, 0), 'CAPABILITIES': (None, 0x34, 1, 3),
    'CAP_PM': (0x01, 0, 0, 0), 'CAP_MSI': (0x05, 0, 0, 0), 'CAP_EXP': (0x10, 0, 0, 0), 'CAP_MSIX': (0x11, 0, 0, 0),
}
USAGE = """Usage: setpci [<options>] (<device>+ <reg>[=<values>]*)*

General options:
-f\t\tDon't complain if there's nothing to do
-v\t\tBe verbose
-D\t\tList changes, don't commit them
-r\t\tUse raw access without bus scan if possible
--dumpregs\tDump all known register names and exit

Setting commands:
<device>:\t-s [[[<domain>]:][<bus>]:][<slot>][.[<func>]]
\t\t-d [<vendor>]:[<device>]
<reg>:\t\t<base>[+<offset>][.(B|W|L)][@<number>]
<base>:\t\t<address>
\t\t<named-register>
\t\t[E]CAP_<capability-name>
\t\t[E]CAP<capability-number>
<values>:\t<value>[,<value>...]
<value>:\t<hex>
\t\t<hex>:<mask>
"""
_ADDRESS_RE = re.compile(r'^([0-9a-f]{4}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$')


def parse_err(message):
    sys.stderr.write("setpci: %s.\nTry `setpci --help' for more information.\n" % message)
    sys.exit(1)


def die(message):
    sys.stderr.write('setpci: %s\n' % message)
    sys.exit(1)


def parse_x32(text):
    """(value, rest) like strtoul(text, &stop, 16): rest is None when the whole text is a number."""
    match = re.match(r'^[0-9a-fA-F]+', text or '')
    if not match:
        return None, text
    value = int(match.group(0), 16)
    if value > 0xFFFFFFFF:
        return None, text
    rest = text[match.end():]
    return value, (rest or None)


def parse_hex_field(text, maximum):
    if text is None or text in ('', '*'):
        return -1
    value, rest = parse_x32(text)
    if value is None or rest is not None or value > maximum:
        return None
    return value


def parse_slot(text):
    fields = text.split(':')
    if len(text) >= 64:
        return None, 'Expression too long'
    if len(fields) > 3:
        return None, 'Too many fields'
    selector = {'domain': -1, 'bus': -1, 'slot': -1, 'func': -1}
    if len(fields) == 3:
        selector['domain'] = parse_hex_field(fields[0], 0x7fffffff)
        if selector['domain'] is None:
            return None, 'Invalid domain number'
        fields = fields[1:]
    if len(fields) == 2:
        selector['bus'] = parse_hex_field(fields[0], 0xff)
        if selector['bus'] is None:
            return None, 'Invalid bus number'
        fields = fields[1:]
    slot, _dot, func = fields[0].partition('.')
    selector['slot'] = parse_hex_field(slot, 0x1f)
    if selector['slot'] is None:
        return None, 'Invalid slot number'
    if _dot:
        selector['func'] = parse_hex_field(func, 7)
        if selector['func'] is None:
            return None, 'Invalid function number'
    return selector, None


def parse_id(text):
    vendor, sep, device = text.partition(':')
    if not sep:
        return None, 'Invalid ID'
    selector = {'vendor': parse_hex_field(vendor, 0xffff), 'device': parse_hex_field(device, 0xffff)}
    if selector['vendor'] is None:
        return None, 'Invalid vendor ID'
    if selector['device'] is None:
        return None, 'Invalid device ID'
    return selector, None


def parse_op(text):
    base = text
    value = number = width = offset = None
    if '=' in base:
        base, value = base.split('=', 1)
        if not value:
            parse_err('Missing value')
    if '@' in base:
        base, number = base.split('@', 1)
    if '.' in base:
        base, width = base.split('.', 1)
    if '+' in base:
        base, offset = base.split('+', 1)
    op = {'cap': None, 'addr': 0, 'width': 0, 'values': []}
    if width is not None:
        if len(width) != 1 or width.upper() not in 'BWL':
            parse_err('Invalid width "%s"' % width)
        op['width'] = {'B': 1, 'W': 2, 'L': 4}[width.upper()]
    if number is not None:
        parsed, rest = parse_x32(number)
        if parsed is None or rest is not None:
            parse_err('Invalid number "%s"' % number)
        if parsed:
            die('lab double: capability instances other than @0 are not simulated')
    address, rest = parse_x32(base)
    if address is not None and rest is None:
        op['addr'] = address
    elif base.upper() in REGISTERS:
        cap, reg_offset, reg_width, _mask = REGISTERS[base.upper()]
        op['cap'], op['addr'] = cap, reg_offset
        if reg_width and not op['width']:
            op['width'] = reg_width
    elif base.upper().startswith('ECAP'):
        die('lab double: extended capabilities (%s) are not simulated' % base)
    elif base.upper().startswith('CAP') and parse_x32(base[3:])[0] is not None and parse_x32(base[3:])[1] is None \
            and parse_x32(base[3:])[0] < 0x100:
        op['cap'], op['addr'] = parse_x32(base[3:])[0], 0
    else:
        parse_err('Unknown register "%s"' % base)
    if not op['width']:
        parse_err('Missing width')
    if offset is not None:
        parsed, rest = parse_x32(offset)
        if parsed is None or rest is not None or parsed >= 0x1000:
            parse_err('Invalid offset "%s"' % offset)
        op['addr'] += parsed
    count = len(value.split(',')) if value is not None else 1
    if op['addr'] >= 0x1000 or op['addr'] + op['width'] * count > 0x1000:
        parse_err('Register number %02x out of range' % op['addr'])
    if op['addr'] & (op['width'] - 1):
        parse_err('Unaligned register address %02x' % op['addr'])
    limit = {1: 0xFF, 2: 0xFFFF, 4: 0xFFFFFFFF}[op['width']]
    for item in (value.split(',') if value is not None else []):
        number_text, _colon, mask_text = item.partition(':')
        parsed, rest = parse_x32(number_text)
        if parsed is None or (rest is not None and not rest.startswith(':')):
            parse_err('Invalid value "%s"' % item)
        if limit < parsed < 0xFFFFFFFF - limit:
            parse_err('Value "%s" is out of range' % item)
        mask = 0xFFFFFFFF
        if _colon:
            mask, rest = parse_x32(mask_text)
            if mask is None or rest is not None:
                parse_err('Invalid mask "%s"' % mask_text)
            if limit < mask < 0xFFFFFFFF - limit:
                parse_err('Mask "%s" is out of range' % mask_text)
            parsed &= mask
        op['values'].append((parsed, mask))
    return op


def functions():
    if not os.path.isdir(PCI_DEVICES):
        return []
    return sorted(name for name in os.listdir(PCI_DEVICES) if _ADDRESS_RE.match(name))


def sysfs_id(address, name):
    with open(os.path.join(PCI_DEVICES, address, name)) as handle:
        return int(handle.read().strip(), 16)


def matches(address, selector):
    domain, bus, slot, func = [int(part, 16) for part in _ADDRESS_RE.match(address).groups()]
    if 'vendor' in selector:
        pairs = ((selector['vendor'], sysfs_id(address, 'vendor')), (selector['device'], sysfs_id(address, 'device')))
    else:
        pairs = ((selector['domain'], domain), (selector['bus'], bus), (selector['slot'], slot),
                 (selector['func'], func))
    return all(want in (-1, have) for want, have in pairs)


def load(address):
    path = os.path.join(STATE_DIR, address + '.json')
    if os.path.exists(path):
        with open(path) as handle:
            return bytearray.fromhex(json.load(handle)['config'])
    config = bytearray(int(byte, 16) for byte in TEMPLATE)
    config += bytearray(0x1000 - len(config))
    for offset, name in ((0, 'vendor'), (2, 'device')):
        value = sysfs_id(address, name)
        config[offset], config[offset + 1] = value & 0xFF, value >> 8
    return config


def save(address, config):
    os.makedirs(STATE_DIR, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=STATE_DIR)
    with os.fdopen(fd, 'w') as handle:
        json.dump({'config': config.hex()}, handle, indent=1)
    os.rename(tmp, os.path.join(STATE_DIR, address + '.json'))


def find_cap(config, cap_id):
    if not config[0x06] & 0x10:
        return None
    offset, seen = config[0x34] & 0xFC, set()
    while offset and offset not in seen:
        seen.add(offset)
        if config[offset] == cap_id:
            return offset
        offset = config[offset + 1] & 0xFC
    return None


def read(config, addr, width):
    return int.from_bytes(bytes(config[addr:addr + width]), 'little')


def write(config, addr, width, value):
    config[addr:addr + width] = value.to_bytes(width, 'little')


def execute(groups, verbose, demo):
    for number, (selector, ops) in enumerate(groups, 1):
        selected = [address for address in functions() if matches(address, selector)]
        if not selected:
            sys.stderr.write('setpci: Warning: No devices selected for operation group %d.\n' % number)
        for address in selected:
            config = load(address)
            written = False
            for op in ops:
                trace = address + ' '
                addr = 0
                if op['cap'] is not None:
                    found = find_cap(config, op['cap'])
                    if found is None:
                        die('%s: Instance #0 of Capability %04x not found - there are no capabilities with that id.'
                            % (address, op['cap']))
                    addr = found
                    trace += '(cap %02x @%02x) ' % (op['cap'], addr)
                addr += op['addr']
                trace += '@%02x' % addr
                width = op['width']
                if addr & (width - 1):
                    die('%s: Unaligned access of width %d to register %04x' % (address, width, addr))
                if addr + width > 0x1000:
                    die('%s: Access of width %d to register %04x out of range' % (address, width, addr))
                digits = width * 2
                if op['values']:
                    for value, mask in op['values']:
                        full = {1: 0xFF, 2: 0xFFFF, 4: 0xFFFFFFFF}[width]
                        if mask & full == full:
                            new = value & full
                            trace += ' %0*x' % (digits, new)
                        else:
                            old = read(config, addr, width)
                            new = (old & ~mask & full) | value
                            trace += ' %0*x->(%0*x:%0*x)->%0*x' % (
                                digits, old, digits, value, digits, mask & full, digits, new)
                        if not demo:
                            write(config, addr, width, new)
                            written = True
                        addr += width
                    if verbose:
                        print(trace)
                else:
                    if verbose:
                        sys.stdout.write(trace + ' = ')
                    print('%0*x' % (digits, read(config, addr, width)))
            if written:
                save(address, config)


def main(argv):
    os.makedirs(STATE_DIR, exist_ok=True)
    with open(os.path.join(STATE_DIR, 'calls.log'), 'a') as handle:
        handle.write(json.dumps(['setpci'] + list(argv)) + '\n')
    if len(argv) == 1 and argv[0] == '--help':
        sys.stderr.write(USAGE)
        sys.exit(0)
    if len(argv) == 1 and argv[0] == '--version':
        print('setpci version 3.9.0')
        sys.exit(0)
    verbose = demo = 0
    index = 0
    while index < len(argv) and argv[index].startswith('-'):
        letters = argv[index][1:]
        if letters and letters[0] in 'sd':
            break
        for letter in letters:
            if letter == 'v':
                verbose += 1
            elif letter == 'D':
                demo += 1
            elif letter in 'fr':
                pass
            elif letter in 'AOHG':
                die('lab double: pcilib access option -%s is not simulated' % letter)
            else:
                parse_err('Invalid or misplaced option -%s' % letter)
        index += 1
    groups = []
    while index < len(argv):
        arg = argv[index]
        index += 1
        if arg.startswith('-'):
            kind = arg[1:2]
            if kind not in ('s', 'd'):
                parse_err('Invalid option -%s' % kind)
            if len(arg) > 2:
                text = arg[3:] if arg[2] == '=' else arg[2:]
            elif index < len(argv):
                text = argv[index]
                index += 1
            else:
                parse_err('Option -%s requires an argument' % kind)
            selector, error = parse_slot(text) if kind == 's' else parse_id(text)
            if error:
                parse_err('Unable to parse filter -%s %s' % (kind, error))
            if groups and not groups[-1][1]:
                groups[-1] = (selector, [])
            else:
                groups.append((selector, []))
        else:
            if not groups:
                parse_err('Filter specification expected')
            groups[-1][1].append(parse_op(arg))
    if not groups:
        parse_err('No operation specified')
    execute(groups, verbose, demo)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
