#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
---
module: pci_tuning
short_description: PCI Express Max Read Request size of ConnectX functions (setpci), read-modify-write, verified
version_added: 0.1.0
description:
  - Reads the PCI Express Device Control register of each function with C(setpci -s ADDRESS CAP_EXP+8.w), decodes
    Max_Read_Request_Size (bits 14:12, 128 << n bytes) and Max_Payload_Size (bits 7:5), and when the read request
    size differs from O(max_read_request) writes only those three bits, C(setpci -s ADDRESS CAP_EXP+8.w=5000:7000)
    (setpci reads the register and writes C((old & ~7000) | 5000) itself). The register is read again and the
    module fails when the size is not the wanted one or any other bit changed.
  - A wrong write to Device Control can hang a node (bit 15 of an endpoint initiates a Function Level Reset), so
    before anything is written every function is checked - it must exist below O(sysfs_root), its vendor must be
    Mellanox/NVIDIA (C(0x15b3)), C(setpci) must print exactly one 16-bit value, the PCI Express capability must be
    version 1 or 2 of an Endpoint (C(CAP_EXP+2.w)), and Device Control must hold no reserved size encoding and read
    bit 15 as 0. Any doubt fails the module before the first write on any function.
  - When a function then refuses the write (C(setpci) fails, or the register does not read the wanted size), the
    functions already written are written back to the size read before, and the failure message lists what was
    changed and undone.
  - The value lives in the running PCI configuration and is lost at reboot, at a firmware reset and at a Function
    Level Reset; the role P(gpunet.rdma.nic_tuning#role) writes it again at boot with a systemd unit.
author:
  - gpunet.rdma contributors (@gpunet)
options:
  devices:
    description: PCI addresses of ConnectX physical functions (V(0000:0b:00.0) or V(0b:00.0)), from the C(rdma_devices) facts.
    type: list
    elements: str
    required: true
  max_read_request:
    description:
      - Wanted Max Read Request size in bytes. V(4096) is what NVIDIA recommends for ConnectX adapters (the
        nic-configuration-operator's C(pciPerformanceOptimized) default). Omit to only read.
    type: int
    choices: [128, 256, 512, 1024, 2048, 4096]
  executable:
    description: Path of C(setpci) (pciutils); default C(setpci) on E(PATH) or in C(/usr/sbin), C(/sbin), C(/usr/local/sbin), C(/usr/local/bin).
    type: path
  sysfs_root:
    description: Mount point of sysfs, to check the functions and their vendor.
    type: path
    default: /sys
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpunet.rdma.tool_timeout
attributes:
  check_mode:
    support: full
    details: Reads and checks every function and reports what would be written; writes nothing.
  diff_mode:
    support: full
    details: Shows each function's Device Control value and sizes before and after.
  platform:
    platforms: posix
notes:
  - Commands run as argument lists with C(LC_ALL=C). C(setpci) needs root to read past the first 64 bytes.
  - C(setpci) exits 0 and only warns when no function matches the address; the module checks the address itself.
requirements:
  - C(setpci) from pciutils.
seealso:
  - name: Understanding PCIe Configuration for Maximum Performance (NVIDIA)
    description: Max Read Request, how to read and change it with setpci.
    link: https://enterprise-support.nvidia.com/s/article/understanding-pcie-configuration-for-maximum-performance
'''

EXAMPLES = r'''
- name: Max Read Request 4096 on every ConnectX physical function of the node
  gpunet.rdma.pci_tuning:
    devices: "{{ ansible_facts.rdma_devices | gpunet.rdma.pci_functions | map(attribute='pci_address') | list }}"
    max_read_request: 4096

- name: Read the current sizes only
  gpunet.rdma.pci_tuning:
    devices: ["0000:0b:00.0"]
  register: pci
'''

RETURN = r'''
results:
  description: One entry per function, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    device:
      description: The function's PCI address with domain.
      type: str
      sample: "0000:0b:00.0"
    before:
      description: Device Control before the run - C(word) (four hex digits), C(max_read_request), C(max_payload) in bytes.
      type: dict
      sample: {word: "2936", max_read_request: 512, max_payload: 256}
    after:
      description: The same after the run (predicted in check mode).
      type: dict
      sample: {word: "5936", max_read_request: 4096, max_payload: 256}
    device_id:
      description: The function's PCI device ID as sysfs shows it (the boot-time unit checks it before writing).
      type: str
      sample: "0x1017"
    endpoint:
      description: The function's PCI Express device type.
      type: str
      sample: PCI Express Endpoint
    changed:
      description: Whether the size of this function changed.
      type: bool
executable:
  description: Path of the C(setpci) that was used.
  returned: always
  type: str
  sample: /usr/bin/setpci
'''

import os

from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import (
    SBIN_DIRS,
    HostReadError,
    find_tool,
    output_summary,
    printable,
    read_value,
    tool_timeout,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._module import RdmaModule, Step
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import normalize_pci_address
from ansible_collections.gpunet.rdma.plugins.module_utils.tuning._setpci import (
    DEVCTL,
    MAX_READ_REQUEST_SIZES,
    MRRS_MASK,
    PCIE_CAPS,
    SETPCI,
    SetpciError,
    apply_size,
    check_endpoint,
    decode_devctl,
    parse_word,
    write_argument,
)

MELLANOX_VENDOR = '0x15b3'


class RegisterChanged(RuntimeError):
    """Device Control changed outside the size bits: the function is in an unknown state and is not written again."""


def check_sysfs_root(module, sysfs_root):
    devices_dir = os.path.join(sysfs_root, 'bus', 'pci', 'devices')
    if not os.path.isdir(devices_dir):
        module.fail_json(msg='sysfs_root: %s is not a directory, so %s is not where sysfs is mounted; leave '
                         'sysfs_root at /sys (or point it at a copy of the node\'s /sys). Nothing was written.'
                         % (devices_dir, sysfs_root))


def check_function(module, sysfs_root, given):
    address = normalize_pci_address(given) if isinstance(given, str) else None
    if address is None:
        module.fail_json(msg='devices: %r is not a PCI address; give one such as 0000:0b:00.0 from the rdma_devices '
                         'facts.' % (given,))
    function_dir = os.path.join(sysfs_root, 'bus', 'pci', 'devices', address)
    if not os.path.isdir(function_dir):
        module.fail_json(msg='devices: there is no PCI function %s on this host (see `lspci -D -d 15b3:`); nothing '
                         'was written.' % address)
    try:
        vendor = read_value(os.path.join(function_dir, 'vendor'))
        device_id = read_value(os.path.join(function_dir, 'device'))
    except HostReadError as exc:
        module.fail_json(msg='Cannot read the vendor and device ID of %s: %s. Run the module as root on the node, with '
                         'sysfs_root the mount point of sysfs (/sys). Nothing was written.' % (address, exc))
    if vendor is None or device_id is None:
        module.fail_json(msg='%s has no %s file: this is not the sysfs directory of a PCI function; point '
                         'sysfs_root at the mount point of sysfs (/sys). Nothing was written.'
                         % (function_dir, 'vendor' if vendor is None else 'device'))
    vendor, device_id = vendor.lower(), device_id.lower()
    if vendor != MELLANOX_VENDOR:
        module.fail_json(msg='devices: %s is not a Mellanox/NVIDIA function (vendor %s, not %s); this module only '
                         'writes to ConnectX functions. Nothing was written.'
                         % (address, printable(vendor, 40), MELLANOX_VENDOR))
    return address, device_id


def read_register(module, setpci, address, register):
    argv, rc, out, err = setpci.run('address register', address=address, register=register)
    if rc != 0:
        module.fail_json(msg='%s failed (rc=%d): %s. Nothing was written.' % (' '.join(argv), rc,
                                                                              output_summary(out, err)),
                         rc=rc, stdout=printable(out), stderr=printable(err))
    try:
        return parse_word(out, err, register)
    except SetpciError as exc:
        module.fail_json(msg='%s: %s. Nothing was written.' % (' '.join(argv), exc), stdout=printable(out),
                         stderr=printable(err))


def read_devctl(setpci, address, word, writer):
    """Device Control of ``address`` now; RegisterChanged when a bit outside the size bits differs from ``word``."""
    new_word = parse_word(*setpci.run_in_step('address register', address=address, register=DEVCTL)[1:])
    if (new_word & ~MRRS_MASK) != (word & ~MRRS_MASK):
        raise RegisterChanged('%s changed Device Control of %s from %04x to %04x: bits outside 14:12 changed. Stop '
                              'and look at the function (lspci -vvv -s %s) before anything else runs on it'
                              % (writer, address, word, new_word, address))
    return new_word


def write_size(setpci, address, word, size):
    """Write Max Read Request ``size`` to a function whose Device Control read ``word``; the register read after.

    RuntimeError (SetpciError) when the register then differs from ``word`` in any other bit or does not hold ``size``.
    """
    argv = setpci.run_in_step('address register', address=address, register=write_argument(size))[0]
    after = decode_devctl(read_devctl(setpci, address, word, ' '.join(argv)))
    if after['max_read_request'] != size:
        raise RuntimeError('%s reported success, but %s reads Max Read Request %d bytes (Device Control %s); the '
                           'device or platform does not accept %d' % (' '.join(argv), address,
                                                                      after['max_read_request'], after['word'], size))
    return after


def size_step(setpci, entry, wanted):
    """The Step that writes the size of one function, with an undo that writes back the size bits read before."""
    address, word, before = entry['device'], entry['word'], entry['before']

    def undo():
        write_size(setpci, address, word, before['max_read_request'])

    def put_back():
        """After a failed write, which may or may not have got through: what became of the function, as a sentence.

        The register is read and written back only when it no longer reads as before; a register changed outside
        the size bits raises RegisterChanged and is not written again.
        """
        try:
            if read_devctl(setpci, address, word, 'the failed write') == word:
                return '%s still reads Device Control %s' % (address, before['word'])
            undo()
            return '%s was put back to Device Control %s' % (address, before['word'])
        except RegisterChanged:
            raise
        except (RuntimeError, ValueError) as exc:
            return 'putting %s back to Device Control %s failed too, check it by hand: %s' % (
                address, before['word'], exc)

    def apply():
        try:
            entry['after'] = write_size(setpci, address, word, wanted)
        except RegisterChanged:
            raise  # a register in an unknown state is not written again, not even to put it back
        except (RuntimeError, ValueError) as exc:
            raise RuntimeError('%s (%s)' % (exc, put_back()))

    return Step('Max Read Request %d -> %d bytes on %s' % (before['max_read_request'], wanted, address), apply, undo)


def prepare(module, setpci, address, wanted):
    """Read and check one function; fails before any write on any function."""
    try:
        endpoint = check_endpoint(read_register(module, setpci, address, PCIE_CAPS))
        word = read_register(module, setpci, address, DEVCTL)
        before = decode_devctl(word)
    except SetpciError as exc:
        module.fail_json(msg='%s: %s. Nothing was written.' % (address, exc))
    change = wanted is not None and before['max_read_request'] != wanted
    return dict(device=address, word=word, before=before, endpoint=endpoint, change=change, after=None)


def report(module, entry, wanted):
    """The result of one function after the run (predicted in check mode)."""
    address, before = entry['device'], entry['before']
    after = entry['after'] or before
    if entry['change'] and entry['after'] is None:
        after = decode_devctl(apply_size(entry['word'], wanted))
    result = dict(device=address, device_id=entry['device_id'], before=before, after=after,
                  endpoint=entry['endpoint'], changed=entry['change'])
    if module._diff:
        result['diff'] = dict(
            before='%s Device Control %s: MaxPayload %d bytes, MaxReadReq %d bytes\n' % (
                address, before['word'], before['max_payload'], before['max_read_request']),
            after='%s Device Control %s: MaxPayload %d bytes, MaxReadReq %d bytes\n' % (
                address, after['word'], after['max_payload'], after['max_read_request']))
    return result


def main():
    module = RdmaModule(
        argument_spec=dict(
            devices=dict(type='list', elements='str', required=True),
            max_read_request=dict(type='int', choices=list(MAX_READ_REQUEST_SIZES)),
            executable=dict(type='path'),
            sysfs_root=dict(type='path', default='/sys'),
            timeout=dict(type='int', default=300),
        ),
        supports_check_mode=True,
    )
    tool_timeout(module)
    devices = module.params['devices']
    if not devices:
        module.fail_json(msg='devices is empty: give the PCI addresses of the ConnectX functions, or leave the task '
                         'out.')
    check_sysfs_root(module, module.params['sysfs_root'])
    checked = [check_function(module, module.params['sysfs_root'], given) for given in devices]
    addresses = [address for address, _device_id in checked]
    device_ids = dict(checked)
    twice = sorted(set(a for a in addresses if addresses.count(a) > 1))
    if twice:
        module.fail_json(msg='devices: %s given twice; give each function once.' % ', '.join(twice))
    executable = find_tool(module, 'setpci', explicit=module.params['executable'], option='executable',
                           opt_dirs=list(SBIN_DIRS), hint='Install pciutils (apt install pciutils / dnf install '
                           'pciutils), or set executable.')
    wanted = module.params['max_read_request']
    # every function is read and checked before the first write; the writes are then made as one, so a function
    # that refuses puts back the functions written before it
    setpci = SETPCI(module, executable)
    prepared = [prepare(module, setpci, address, wanted) for address in addresses]
    for entry in prepared:
        entry['device_id'] = device_ids[entry['device']]
    if not module.check_mode:
        module.apply_steps([size_step(setpci, entry, wanted) for entry in prepared if entry['change']])
    results = [report(module, entry, wanted) for entry in prepared]
    diffs = [result.pop('diff') for result in results if 'diff' in result]
    output = dict(changed=any(r['changed'] for r in results), results=results, executable=executable)
    if diffs:
        output['diff'] = diffs
    module.exit_json(**output)


if __name__ == '__main__':
    main()
