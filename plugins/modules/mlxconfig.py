#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
---
module: mlxconfig
short_description: Query and set ConnectX firmware parameters (mlxconfig / mstconfig), aware of pending changes
version_added: 0.1.0
description:
  - Queries the non-volatile firmware configuration of an NVIDIA (Mellanox) ConnectX device with
    C(mlxconfig -d DEVICE -e q) and shows each parameter's Default, Current and Next Boot value.
  - With O(params), compares each wanted value with B(Next Boot), by name and by number (V(IB), V(1) and
    V(IB(1\)) are the same value), and sets everything that differs in B(one) call,
    C(mlxconfig -d DEVICE -y set NAME=VALUE ...). A second run with the same O(params) changes nothing.
  - Firmware parameters take effect only after a firmware reset (C(mlxfwreset)) or a reboot. The module never
    resets or reboots; it returns the parameters whose Current value differs from Next Boot in RV(pending),
    including changes made earlier and never activated, and RV(reboot_required).
  - Every problem with the request (unknown parameter, parameter the device does not have, read-only parameter,
    value the parameter does not accept) fails before anything is set.
  - Works with mlxconfig from NVIDIA MFT and with C(mstconfig) from mstflint, which has the same syntax.
author:
  - gpunet.rdma contributors (@gpunet)
options:
  device:
    description:
      - The device to configure, as a PCI address (V(0000:86:00.0) or V(86:00.0)), an MST device path
        (V(/dev/mst/mt4119_pciconf0), present after C(mst start)), or an RDMA device name (V(mlx5_0)), which is
        resolved to its PCI address through O(sysfs_root).
    type: str
    required: true
  params:
    description:
      - Wanted firmware parameters, NAME to value. A value may be the name (V(IB), V(ETH), V(True), V(False)), the
        number (V(1)), or the form the query prints (V(IB(1\))). YAML booleans are accepted for boolean parameters.
      - Omit to query only.
    type: dict
  executable:
    description:
      - The configuration tool. Default is C(mlxconfig) when it is on E(PATH), else C(mstconfig).
    type: path
  sysfs_root:
    description:
      - Mount point of sysfs, used to resolve RDMA device names and to check that a PCI address exists.
    type: path
    default: /sys
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Queries the device and reports what would be set; never calls C(set).
  diff_mode:
    support: full
    details: Shows the Next Boot values of the parameters in O(params) before and after.
  platform:
    platforms: posix
notes:
  - Commands run as argument lists with C(LC_ALL=C).
  - The plain query layout (tools without C(-e)) has no Current column; RV(pending) then lists only what this run set.
requirements:
  - C(mlxconfig) (NVIDIA MFT) or C(mstconfig) (mstflint) on the host.
seealso:
  - name: mlxconfig in the NVIDIA Firmware Tools (MFT) documentation
    description: Query and set syntax, parameters.
    link: https://docs.nvidia.com/networking/display/mftv4270/mlxconfig+%E2%80%93+changing+device+configuration+tool
'''

EXAMPLES = r'''
- name: Query the firmware configuration of the first HCA
  gpunet.rdma.mlxconfig:
    device: mlx5_0
  register: fw

- name: Switch both ports of a VPI card to InfiniBand (takes effect after a reboot)
  gpunet.rdma.mlxconfig:
    device: "0000:86:00.0"
    params:
      LINK_TYPE_P1: IB
      LINK_TYPE_P2: IB
  register: link_type

- name: Enable SR-IOV with 8 virtual functions
  gpunet.rdma.mlxconfig:
    device: /dev/mst/mt4119_pciconf0
    params:
      SRIOV_EN: true
      NUM_OF_VFS: 8

- name: Tell what is waiting for a reboot
  ansible.builtin.debug:
    msg: "{{ link_type.pending }} pending, reboot required: {{ link_type.reboot_required }}"
'''

RETURN = r'''
device:
  description: The device passed to the tool (a PCI address with domain, or the MST path).
  returned: always
  type: str
  sample: "0000:86:00.0"
executable:
  description: Path of the tool that was used.
  returned: always
  type: str
  sample: /usr/bin/mlxconfig
config:
  description:
    - Every parameter the device reports after the run (predicted in check mode), NAME to its values as printed.
  returned: always
  type: dict
  sample:
    LINK_TYPE_P1: {default: "ETH(2)", current: "ETH(2)", next_boot: "IB(1)", read_only: false}
  contains:
    default:
      description: Default value as printed, null when the layout has no Default column.
      type: str
    current:
      description: Current (active) value as printed, null when the layout has no Current column.
      type: str
    next_boot:
      description: Value after the next firmware reset or reboot, as printed.
      type: str
    read_only:
      description: Whether the tool marks the parameter read-only (RO).
      type: bool
changes:
  description: What was set (or, in check mode, would be set), NAME to its Next Boot value before and after.
  returned: always
  type: dict
  sample:
    LINK_TYPE_P1: {before: "ETH(2)", after: "IB(1)"}
  contains:
    before:
      description: Next Boot value before the run.
      type: str
    after:
      description: Next Boot value after the run.
      type: str
pending:
  description:
    - Parameters whose Current value differs from Next Boot after the run, including older changes never activated.
  returned: always
  type: list
  elements: str
  sample: [LINK_TYPE_P1]
layout:
  description:
    - V(verbose) when the tool printed Default / Current / Next Boot (C(-e q)), V(plain) when only Next Boot was
      available; then RV(pending) lists only what this run set, because older pending changes cannot be seen.
  returned: always
  type: str
  sample: verbose
reboot_required:
  description: True when RV(pending) is not empty, a firmware reset or reboot is needed to activate it.
  returned: always
  type: bool
  sample: true
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpunet.rdma.plugins.module_utils._mlxconfig import (
    MlxconfigError,
    apply_changes,
    parse_query,
    pending,
    plan,
    render_next_boot,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._rdma_inventory import normalize_pci_address

_COMMAND_ENV = {'LC_ALL': 'C', 'LANG': 'C'}
_EXTRA_BIN_DIRS = ['/usr/sbin', '/sbin', '/usr/local/sbin', '/usr/local/bin']


def resolve_device(module, device, sysfs_root):
    """Return what to pass to ``-d``: the PCI address with domain, or the MST path."""
    if device.startswith('/dev/mst/'):
        if not os.path.exists(device):
            module.fail_json(msg='MST device %s does not exist: run `mst start` (NVIDIA MFT) first, or give the PCI '
                             'address or RDMA device name instead.' % device)
        return device
    pci = normalize_pci_address(device)
    if pci:
        pci_devices = os.path.join(sysfs_root, 'bus', 'pci', 'devices')
        if os.path.isdir(pci_devices) and not os.path.exists(os.path.join(pci_devices, pci)):
            module.fail_json(msg='Device not found: there is no PCI function %s on this host (see `lspci -D -d '
                             '15b3:`).' % pci)
        return pci
    class_ib = os.path.join(sysfs_root, 'class', 'infiniband')
    link = os.path.join(class_ib, device, 'device')
    if not os.path.exists(link):
        known = sorted(os.listdir(class_ib)) if os.path.isdir(class_ib) else []
        module.fail_json(msg='Device not found: %s is not a PCI address, an MST device path or an RDMA device of '
                         'this host (RDMA devices: %s).' % (device, ', '.join(known) or 'none'))
    pci = normalize_pci_address(os.path.basename(os.path.realpath(link)))
    if pci is None:
        module.fail_json(msg='RDMA device %s is not a PCI device; mlxconfig configures ConnectX PCI functions only.'
                         % device)
    return pci


def find_executable(module):
    if module.params['executable']:
        if not os.access(module.params['executable'], os.X_OK):
            module.fail_json(msg='executable %s is not an executable file.' % module.params['executable'])
        return module.params['executable']
    for name in ('mlxconfig', 'mstconfig'):
        path = module.get_bin_path(name, opt_dirs=_EXTRA_BIN_DIRS)
        if path:
            return path
    module.fail_json(msg='Neither mlxconfig (NVIDIA MFT) nor mstconfig (mstflint) was found. Install one of them '
                     '(Debian/Ubuntu: apt install mstflint) or set executable.')


def _tool_error(out, err):
    lines = [line.strip() for line in (err + '\n' + out).splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith('-E-')]
    return (errors or lines or ['no output'])[0]


def query(module, executable, device, layouts=('-e', None)):
    """Query with -e (Default/Current/Next Boot), falling back to the plain layout.

    Returns the layout flag that worked and the parsed configuration.
    """
    failure = None
    for flag in layouts:
        argv = [executable, '-d', device] + ([flag] if flag else []) + ['q']
        rc, out, err = module.run_command(argv, environ_update=_COMMAND_ENV)
        if rc == 0:
            try:
                return flag, parse_query(out)
            except MlxconfigError as exc:
                module.fail_json(msg='Cannot parse the output of %s: %s. Offending line: %r.'
                                 % (' '.join(argv), exc, exc.line), stdout=out, stderr=err)
        failure = (argv, rc, out, err)
    argv, rc, out, err = failure
    message = _tool_error(out, err)
    hint = ''
    if 'open' in message.lower() or 'no such' in message.lower():
        hint = (' Check that %s is a ConnectX device and its driver is loaded (for /dev/mst paths run `mst start`).'
                % device)
    module.fail_json(msg='%s failed (rc=%d): %s.%s' % (' '.join(argv), rc, message, hint), rc=rc, stdout=out,
                     stderr=err)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            device=dict(type='str', required=True),
            params=dict(type='dict'),
            executable=dict(type='path'),
            sysfs_root=dict(type='path', default='/sys'),
        ),
        supports_check_mode=True,
    )
    wanted = module.params['params'] or {}
    executable = find_executable(module)
    device = resolve_device(module, module.params['device'].strip(), module.params['sysfs_root'])
    layout_flag, config = query(module, executable, device)
    has_current = any(entry['current'] is not None for entry in config.values())

    try:
        changes, set_args = plan(config, wanted)
    except MlxconfigError as exc:
        module.fail_json(msg='Nothing was set on %s: %s.' % (device, exc), config=config, device=device,
                         executable=executable)

    after = config
    if changes:
        if module.check_mode:
            after = apply_changes(config, changes)
        else:
            argv = [executable, '-d', device, '-y', 'set'] + set_args
            rc, out, err = module.run_command(argv, environ_update=_COMMAND_ENV)
            if rc != 0:
                module.fail_json(msg='%s failed (rc=%d): %s' % (' '.join(argv), rc, _tool_error(out, err)), rc=rc,
                                 stdout=out, stderr=err, changes=changes)
            after = query(module, executable, device, layouts=(layout_flag,))[1]

    if has_current:
        waiting = pending(after)
    else:
        waiting = sorted(changes)
        if waiting:
            module.warn('%s has no Current column: only this run\'s changes are known to be pending.' % executable)

    result = dict(
        changed=bool(changes),
        device=device,
        executable=executable,
        config=dict((name, dict((k, entry[k]) for k in ('default', 'current', 'next_boot', 'read_only')))
                    for name, entry in after.items()),
        changes=changes,
        layout='verbose' if has_current else 'plain',
        pending=waiting,
        reboot_required=bool(waiting),
    )
    if module._diff and wanted:
        result['diff'] = dict(before=render_next_boot(config, wanted), after=render_next_boot(after, wanted),
                              before_header='%s next boot' % device, after_header='%s next boot' % device)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
