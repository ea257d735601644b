#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
---
module: ibdev2netdev_facts
short_description: Discover RDMA devices and ports (InfiniBand and RoCE) as facts
version_added: 0.1.0
description:
  - Reads the RDMA devices of a host and returns one fact item per (device, port) in RV(ansible_facts.rdma_ports)
    and one per device in RV(ansible_facts.rdma_devices), so that later tasks act on discovered netdev names, link layers and rates instead
    of typed ones.
  - The preferred source is the kernel's sysfs (C(/sys/class/infiniband) and C(/sys/class/net)); it needs no
    extra package and sees everything the kernel exposes. The C(ibdev2netdev) (MLNX_OFED) and iproute2
    C(rdma link) commands are used when sysfs has no RDMA class, or when asked for.
  - What a source cannot know is returned as V(null), never guessed. For example C(rdma link) does not print the
    link layer or the rate, and C(ibdev2netdev) without C(-v) does not print the port state.
  - A host without RDMA devices is not an error. The facts are empty lists and RV(msg) says why.
  - The module reads only; it changes nothing on the host.
author:
  - gpunet.rdma contributors (@gpunet)
options:
  source:
    description:
      - Where to read the hardware from.
      - V(auto) uses sysfs when O(sysfs_root)C(/class/infiniband) exists, otherwise the first command found
        of C(ibdev2netdev) and C(rdma).
      - V(sysfs) reads O(sysfs_root) only.
      - V(ibdev2netdev) runs C(ibdev2netdev -v) and falls back to plain C(ibdev2netdev) when the verbose form
        fails.
      - V(rdma) runs C(rdma -j link).
    type: str
    choices: [auto, sysfs, ibdev2netdev, rdma]
    default: auto
  sysfs_root:
    description:
      - Mount point of sysfs. Point it at a directory laid out like C(/sys) to read a fixture tree (the lab
        and the tests do this).
    type: path
    default: /sys
  ibdev2netdev_path:
    description:
      - Path of the C(ibdev2netdev) command. Default is to search E(PATH) and the usual sbin directories.
    type: path
  rdma_path:
    description:
      - Path of iproute2's C(rdma) command. Default is to search E(PATH) and the usual sbin directories.
    type: path
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  facts:
    support: full
  platform:
    platforms: posix
notes:
  - Commands run with C(LC_ALL=C) so that their output does not depend on the host's locale.
seealso:
  - name: Linux kernel sysfs ABI for InfiniBand
    description: The attributes under C(/sys/class/infiniband) that this module reads.
    link: https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-class-infiniband
requirements:
  - For O(source=ibdev2netdev), the C(ibdev2netdev) script from MLNX_OFED or DOCA-OFED.
  - For O(source=rdma), iproute2's C(rdma) command.
'''

EXAMPLES = r'''
- name: Discover RDMA ports
  gpunet.rdma.ibdev2netdev_facts:

- name: Show the netdevs of the ACTIVE InfiniBand ports
  ansible.builtin.debug:
    msg: >-
      {{ ansible_facts.rdma_ports
         | selectattr('state', 'equalto', 'ACTIVE')
         | selectattr('link_layer', 'equalto', 'InfiniBand')
         | map(attribute='netdev') | list }}

- name: Read a fixture tree laid out like /sys (lab, tests)
  gpunet.rdma.ibdev2netdev_facts:
    sysfs_root: /opt/gpunet-lab/sys

- name: Use the MLNX_OFED ibdev2netdev script
  gpunet.rdma.ibdev2netdev_facts:
    source: ibdev2netdev
    ibdev2netdev_path: /usr/sbin/ibdev2netdev
'''

RETURN = r'''
source:
  description: The source the facts were read from; V(none) when no source was available.
  returned: always
  type: str
  sample: sysfs
msg:
  description: What was found, or why nothing was found.
  returned: always
  type: str
  sample: "3 RDMA devices, 3 ports (2 ACTIVE) from sysfs"
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: complex
  contains:
    rdma_ports:
      description:
        - One item per (device, port), sorted by device name (natural order) and port number.
      returned: always
      type: list
      elements: dict
      contains:
        device:
          description: RDMA device name.
          type: str
          sample: mlx5_1
        port:
          description: Port number on the device (1-based).
          type: int
          sample: 1
        netdev:
          description:
            - Network interface of the port. For RoCE (link layer Ethernet) the netdev the port's GIDs are bound
              to, so that a LAG device such as C(mlx5_bond_0) maps to C(bond0); otherwise the netdev of the PCI
              function whose C(dev_port)/C(dev_id) matches the port. V(null) when there is none.
          type: str
          sample: ibp12s0
        netdev_state:
          description:
            - V(Up) or V(Down) from the netdev's carrier (its operstate when the carrier cannot be read), as
              C(ibdev2netdev) prints it. V(null) when unknown or without a netdev.
          type: str
          sample: Up
        state:
          description: Logical port state as the kernel names it (V(ACTIVE), V(DOWN), V(INIT), V(ARMED), ...).
          type: str
          sample: ACTIVE
        physical_state:
          description:
            - Physical port state in the kernel's sysfs spelling (V(LinkUp), V(Disabled), V(Polling), V(Sleep),
              ...). Values printed by C(rdma link) (V(LINK_UP)) are converted to this spelling.
          type: str
          sample: LinkUp
        link_layer:
          description: V(InfiniBand) or V(Ethernet) (RoCE). V(null) when the source does not tell.
          type: str
          sample: InfiniBand
        rate_gbps:
          description: Port rate in Gb/s as the kernel reports it (also for ports that are down). V(null) when unknown.
          type: float
          sample: 200
        rate:
          description: The rate as printed by the kernel.
          type: str
          sample: 200 Gb/sec (4X HDR)
        lid:
          description: Base LID of the port (InfiniBand; V(0) on Ethernet). V(null) when unknown.
          type: int
          sample: 3
        sm_lid:
          description: LID of the subnet manager the port sees. V(null) when unknown.
          type: int
          sample: 1
        pci_address:
          description: PCI address of the function the device belongs to, with domain. V(null) when unknown.
          type: str
          sample: "0000:0c:00.0"
    rdma_devices:
      description: One item per RDMA device, sorted by device name (natural order).
      returned: always
      type: list
      elements: dict
      contains:
        device:
          description: RDMA device name.
          type: str
          sample: mlx5_bond_0
        pci_address:
          description: PCI address of the device's function, with domain. V(null) when unknown.
          type: str
          sample: "0000:3b:00.0"
        node_guid:
          description: Node GUID as the kernel prints it. V(null) when the source does not tell.
          type: str
          sample: "0c42:a103:00a1:0c20"
        fw_ver:
          description: Firmware version. V(null) when the source does not tell.
          type: str
          sample: 20.31.1014
        hca_type:
          description: HCA type (device ID in Mellanox naming). V(null) when the source does not tell.
          type: str
          sample: MT4123
        board_id:
          description: Board ID (PSID). V(null) when the source does not tell.
          type: str
          sample: MT_0000000223
        ports:
          description: Port numbers of the device found in RV(ansible_facts.rdma_ports).
          type: list
          elements: int
          sample: [1]
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpunet.rdma.plugins.module_utils._rdma_inventory import (
    RdmaParseError,
    SysfsReader,
    parse_ibdev2netdev,
    parse_rdma_link,
)

_EXTRA_BIN_DIRS = ['/usr/sbin', '/sbin', '/usr/local/sbin']
_COMMAND_ENV = {'LC_ALL': 'C', 'LANG': 'C'}


def _find(module, name, explicit):
    if explicit:
        if not os.access(explicit, os.X_OK):
            module.fail_json(msg='%s_path %s is not an executable file. Fix the path or leave it unset to search PATH.'
                             % (name, explicit))
        return explicit
    return module.get_bin_path(name, required=False, opt_dirs=_EXTRA_BIN_DIRS)


def _run(module, argv):
    return module.run_command(argv, environ_update=_COMMAND_ENV)


def _parse(source, parse, *args):
    try:
        return parse(*args)
    except RdmaParseError as exc:
        exc.source = source
        raise


def _from_ibdev2netdev(module, path):
    rc, out, err = _run(module, [path, '-v'])
    if rc != 0:
        rc, out, err = _run(module, [path])
    if rc != 0:
        module.fail_json(msg='%s exited with %d: %s. Check that the MLNX_OFED/DOCA driver stack is installed and '
                         'loaded, or use source=sysfs.' % (path, rc, (err or out).strip()), rc=rc,
                         stdout=out, stderr=err)
    return out


def _from_rdma(module, path):
    rc, out, err = _run(module, [path, '-j', 'link'])
    if rc != 0:
        module.fail_json(msg='%s -j link exited with %d: %s. Check that the RDMA kernel modules (ib_core, the '
                         'device driver) are loaded, or use source=sysfs.' % (path, rc, (err or out).strip()),
                         rc=rc, stdout=out, stderr=err)
    return out


def discover(module):
    """Return (source, ports, devices, why_empty)."""
    params = module.params
    source = params['source']
    reader = SysfsReader(params['sysfs_root'])

    if source == 'sysfs' or (source == 'auto' and reader.has_rdma_class()):
        if not reader.has_rdma_class():
            return 'sysfs', [], [], '%s does not exist: the kernel has no RDMA device' % reader.class_ib
        ports, devices = _parse('sysfs', reader.read)
        return 'sysfs', ports, devices, 'the kernel lists no RDMA device in %s' % reader.class_ib

    ibdev2netdev = _find(module, 'ibdev2netdev', params['ibdev2netdev_path']) if source in ('auto', 'ibdev2netdev') else None
    rdma = _find(module, 'rdma', params['rdma_path']) if source in ('auto', 'rdma') else None

    if source == 'ibdev2netdev' and not ibdev2netdev:
        module.fail_json(msg='ibdev2netdev was not found on PATH or in %s. Install MLNX_OFED/DOCA-OFED, set '
                         'ibdev2netdev_path, or use source=sysfs.' % ', '.join(_EXTRA_BIN_DIRS))
    if source == 'rdma' and not rdma:
        module.fail_json(msg='rdma was not found on PATH or in %s. Install iproute2, set rdma_path, or use '
                         'source=sysfs.' % ', '.join(_EXTRA_BIN_DIRS))

    if ibdev2netdev:
        ports, devices = _parse('ibdev2netdev', parse_ibdev2netdev, _from_ibdev2netdev(module, ibdev2netdev))
        return 'ibdev2netdev', ports, devices, '%s printed no RDMA port' % ibdev2netdev
    if rdma:
        ports, devices = _parse('rdma link', parse_rdma_link, _from_rdma(module, rdma))
        return 'rdma', ports, devices, '%s -j link printed no RDMA port' % rdma
    return 'none', [], [], ('%s does not exist and neither ibdev2netdev nor rdma is installed: no RDMA device '
                            'can be seen on this host' % reader.class_ib)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            source=dict(type='str', default='auto', choices=['auto', 'sysfs', 'ibdev2netdev', 'rdma']),
            sysfs_root=dict(type='path', default='/sys'),
            ibdev2netdev_path=dict(type='path'),
            rdma_path=dict(type='path'),
        ),
        supports_check_mode=True,
    )

    try:
        source, ports, devices, why_empty = discover(module)
    except RdmaParseError as exc:
        module.fail_json(msg='Cannot read RDMA hardware from %s: %s. Offending line: %r. Report it with the '
                         'tool and kernel versions, or choose another source.' % (exc.source, exc, exc.line),
                         offending_line=exc.line)

    if ports or devices:
        active = len([p for p in ports if p['state'] == 'ACTIVE'])
        msg = '%d RDMA devices, %d ports (%d ACTIVE) from %s' % (len(devices), len(ports), active, source)
    else:
        msg = 'No RDMA device found: %s' % why_empty

    module.exit_json(changed=False, source=source, msg=msg,
                     ansible_facts=dict(rdma_ports=ports, rdma_devices=devices))


if __name__ == '__main__':
    main()
