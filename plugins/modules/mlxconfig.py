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
    value the parameter does not accept, a number wider than the parameter's field, an array parameter without an
    element index) fails before anything is set. Parameter names are case-sensitive, as the tools print them
    (V(EXP_ROM_UEFI_x86_ENABLE)); a name that differs only in case is refused with the printed name suggested.
  - Value names are learned from every column the query prints (Default, Current, Next Boot), so a name printed
    only as a default (V(_256KB)) can be set by name.
  - Elements of array parameters (the query prints C(Array[0..7])) are set one by one as C(NAME[index]); their
    values are queried by name (C(mlxconfig -d DEVICE -e q NAME[index])) before they are compared.
  - When the C(set) call fails, the module queries the device again and reports what the tool said, what was set
    before the failure and what is now pending.
  - The non-volatile configuration belongs to the adapter, not to a PCI function - the functions of a dual-port card
    (V(0000:3b:00.0) and V(0000:3b:00.1), the same domain:bus:device) show and change the same values. With
    O(devices), functions of one adapter are queried and set once, through the first of them given; each of the
    others gets the adapter's result (its C(configured_through) in RV(results)), and a firmware reset of any one function
    activates the adapter (RV(adapters)).
  - Works with mlxconfig from NVIDIA MFT and with C(mstconfig) from mstflint, which has the same syntax. The
    table layouts of every release are read, older releases (name column of 36 or 44 characters, 16-character
    values that an exactly 16-character value touches, the oldest printing C(PCI device:)), releases around MFT 4.30
    (20-character values) and MFT 4.36 and later (48-character names, 33-character values); with Default, Current
    and Next Boot, with Default and Next Boot (firmware that cannot read current values) or with Next Boot only.
author:
  - gpunet.rdma contributors (@gpunet)
options:
  device:
    description:
      - The device to configure, as a PCI address (V(0000:86:00.0) or V(86:00.0)), an MST device path
        (V(/dev/mst/mt4119_pciconf0), present after C(mst start)) or another device path the tool accepts, or an
        RDMA device name (V(mlx5_0)), which is resolved to its PCI address through O(sysfs_root).
      - Exactly one of O(device) and O(devices).
    type: str
  devices:
    description:
      - Several devices (each in any form O(device) accepts) configured with the same O(params) in one module call,
        as a node with eight HCAs needs; one connection instead of one per device.
      - Every device is resolved, queried and planned before anything is set on any of them, so a request one device
        refuses sets nothing anywhere. The devices are then set one after the other; a failure names what was set on
        the devices before it.
      - The result holds one entry per device in RV(results) and one per adapter in RV(adapters); the top-level
        RV(changes), RV(pending) and RV(reboot_required) are then absent, C(changed) is true when any device changed.
      - PCI functions of one adapter (same domain:bus:device) share its configuration; it is queried and set through
        the first of them in O(devices) only.
    type: list
    elements: str
  params:
    description:
      - Wanted firmware parameters, NAME to value. A value may be the name (V(IB), V(ETH), V(True), V(False)), the
        number (V(1)), or the form the query prints (V(IB(1\))). YAML booleans are accepted for boolean parameters.
        Lists, dictionaries and fractional numbers are refused.
      - An element of an array parameter is named C(NAME[index]), for example V(ESWITCH_HAIRPIN_DESCRIPTORS[0]).
      - Omit to query only.
    type: dict
  executable:
    description:
      - The configuration tool. Default is C(mlxconfig) when it is on E(PATH) or in C(/usr/sbin), C(/sbin),
        C(/usr/local/sbin), C(/usr/local/bin), else C(mstconfig). An explicit path must be an executable file.
    type: path
  sysfs_root:
    description:
      - Mount point of sysfs, used to resolve RDMA device names and to check that a PCI address exists.
    type: path
    default: /sys
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpunet.rdma.tool_timeout
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
  - Commands run as argument lists with C(LC_ALL=C), each under O(timeout) (mlxconfig and mstconfig wait for ever on
    an adapter whose firmware does not answer). A C(set) call that is stopped fails the module naming the device and
    what was set on the devices before it; the device itself is not queried again then (it would hang as well).
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

- name: Give the first two hairpin descriptor elements 64 entries (array parameters are set by element)
  gpunet.rdma.mlxconfig:
    device: mlx5_0
    params:
      ESWITCH_HAIRPIN_DESCRIPTORS[0]: 64
      ESWITCH_HAIRPIN_DESCRIPTORS[1]: 64

- name: Set the same parameters on every HCA of a node in one call
  gpunet.rdma.mlxconfig:
    devices: ["0000:0c:00.0", "0000:12:00.0", "0000:48:00.0", "0000:54:00.0"]
    params:
      ADVANCED_PCI_SETTINGS: true
      MAX_ACC_OUT_READ: 44
  register: hcas

- name: Tell what is waiting for a reboot
  ansible.builtin.debug:
    msg: "{{ link_type.pending }} pending, reboot required: {{ link_type.reboot_required }}"
'''

RETURN = r'''
results:
  description:
    - With O(devices), one entry per device in the order given, each with the keys returned for O(device)
      (RV(device), RV(requested), RV(executable), RV(config), RV(changes), RV(pending), RV(layout), RV(columns),
      RV(reboot_required), RV(adapter)), C(changed) and C(configured_through).
    - C(configured_through) is the device the adapter's configuration was queried and set through, the entry's own
      RV(device), or for another function of the same adapter the first one given. Such an entry has the adapter's
      RV(config) and RV(pending), no RV(changes) of its own and C(changed=false).
  returned: when O(devices) is given
  type: list
  elements: dict
adapters:
  description:
    - With O(devices), one entry per adapter in the order its first function was given. A firmware reset
      (C(mlxfwreset -d FUNCTION)) or a reboot activates what is pending for all its functions at once.
  returned: when O(devices) is given
  type: list
  elements: dict
  sample:
    - adapter: "0000:3b:00"
      functions: ["0000:3b:00.0", "0000:3b:00.1"]
      requested: [mlx5_0, mlx5_1]
      configured_through: "0000:3b:00.0"
      changes: {LINK_TYPE_P2: {before: "IB(1)", after: "ETH(2)"}}
      pending: [LINK_TYPE_P2]
      reboot_required: true
  contains:
    adapter:
      description: The adapter's PCI domain:bus:device (the C(adapters) of M(gpunet.rdma.ibdev2netdev_facts)'s
        management path), or the device path as given when it is not a PCI address.
      type: str
    functions:
      description: The adapter's PCI functions (or the device path) given in O(devices), in that order.
      type: list
      elements: str
    requested:
      description: The same devices as given in O(devices).
      type: list
      elements: str
    configured_through:
      description: The function its configuration was queried and set through.
      type: str
    changes:
      description: What was set (or would be set) on the adapter, as RV(changes).
      type: dict
    pending:
      description: The adapter's parameters whose Current value differs from Next Boot, as RV(pending).
      type: list
      elements: str
    reboot_required:
      description: True when RV(adapters[].pending) is not empty.
      type: bool
adapter:
  description:
    - The adapter the device belongs to, its PCI domain:bus:device (V(0000:3b:00) for V(0000:3b:00.1)); its
      functions share its configuration. The device path as given when it is not a PCI address.
  returned: with O(device); with O(devices) in each entry of RV(results)
  type: str
  sample: "0000:3b:00"
requested:
  description: The device as given in O(device) or O(devices) (for example the RDMA device name).
  returned: with O(device); with O(devices) in each entry of RV(results)
  type: str
  sample: mlx5_0
device:
  description: The device passed to the tool (a PCI address with domain, or the MST path).
  returned: with O(device); with O(devices) in each entry of RV(results)
  type: str
  sample: "0000:86:00.0"
executable:
  description: Path of the tool that was used.
  returned: with O(device); with O(devices) in each entry of RV(results)
  type: str
  sample: /usr/bin/mlxconfig
config:
  description:
    - Every parameter the device reports after the run (predicted in check mode), NAME to its values as printed.
  returned: with O(device); with O(devices) in each entry of RV(results)
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
  returned: with O(device); with O(devices) in each entry of RV(results)
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
  returned: with O(device); with O(devices) in each entry of RV(results)
  type: list
  elements: str
  sample: [LINK_TYPE_P1]
layout:
  description:
    - V(verbose) when the tool printed Default / Current / Next Boot (C(-e q)), V(plain) when only Next Boot was
      available; then RV(pending) lists only what this run set, because older pending changes cannot be seen.
  returned: with O(device); with O(devices) in each entry of RV(results)
  type: str
  sample: verbose
columns:
  description:
    - The value columns of the query table as the tool printed them, for example V([Default, Current, Next Boot]) or
      V([Next Boot]).
  returned: with O(device); with O(devices) in each entry of RV(results)
  type: list
  elements: str
  sample: [Default, Current, Next Boot]
reboot_required:
  description: True when RV(pending) is not empty, a firmware reset or reboot is needed to activate it.
  returned: with O(device); with O(devices) in each entry of RV(results)
  type: bool
  sample: true
'''

from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import (
    SBIN_DIRS,
    find_tool,
    output_summary,
    printable,
    tool_timeout,
)
from ansible_collections.gpunet.rdma.plugins.module_utils.firmware._device import DEVICE_FORMS, DeviceError
from ansible_collections.gpunet.rdma.plugins.module_utils.firmware._device import resolve_device as firmware_device
from ansible_collections.gpunet.rdma.plugins.module_utils.firmware._mlxconfig import (
    MLXCONFIG,
    MlxconfigError,
    apply_changes,
    element_queries,
    matches,
    parse_query_table,
    pending,
    plan,
    render_next_boot,
    split_value,
)
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._management_path import adapter_of
from ansible_collections.gpunet.rdma.plugins.module_utils._module import RdmaModule
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import normalize_pci_address

_EXTRA_BIN_DIRS = list(SBIN_DIRS)


def resolve_device(module, device, sysfs_root):
    """Return what to pass to ``-d``: the PCI address with domain, or the device path."""
    try:
        return firmware_device(device, sysfs_root)[0]
    except DeviceError as exc:
        module.fail_json(msg=('Device not found: %s' if exc.kind == 'not_found' else '%s') % exc)
    return None


def find_executable(module):
    return find_tool(module, ['mlxconfig', 'mstconfig'], explicit=module.params['executable'], option='executable',
                     opt_dirs=_EXTRA_BIN_DIRS,
                     hint='Install NVIDIA MFT (mlxconfig) or mstflint (mstconfig; Debian/Ubuntu: apt install '
                          'mstflint), or set executable.')


def _failure_hint(message, device):
    lowered = message.lower()
    if 'open' in lowered or 'no such' in lowered or 'unable to parse device' in lowered:
        return (' Check that %s is a ConnectX device and its driver is loaded (for /dev/mst paths run `mst start`).'
                % device)
    return ''


def run_query(module, executable, device, flag, names=()):
    """``(rc, out, err, argv)`` of one query, with ``-e`` or without."""
    argv, rc, out, err = MLXCONFIG(module, executable).run('device layout query', device=device, layout=flag, query=names)
    return rc, out, err, argv


def parse_or_fail(module, argv, out, err):
    try:
        return parse_query_table(out)
    except MlxconfigError as exc:
        shown = printable(out, 400) if out.strip() else '(nothing)'
        module.fail_json(msg='Cannot parse the output of %s: %s. Offending line: %r. The tool printed: %s. Check that '
                         'executable is mlxconfig (NVIDIA MFT) or mstconfig (mstflint).'
                         % (' '.join(argv), exc, printable(exc.line or '', 200), shown),
                         stdout=printable(out), stderr=printable(err))


def query(module, executable, device, layouts=('-e', None), names=()):
    """Query with -e (Default/Current/Next Boot), falling back to the plain layout.

    Returns the layout flag that worked and the parsed table.
    """
    failure = None
    for flag in layouts:
        rc, out, err, argv = run_query(module, executable, device, flag, names)
        if rc == 0:
            return flag, parse_or_fail(module, argv, out, err)
        failure = (argv, rc, out, err)
    argv, rc, out, err = failure
    message = output_summary(out, err)
    module.fail_json(msg='%s failed (rc=%d): %s.%s' % (' '.join(argv), rc, message, _failure_hint(message, device)),
                     rc=rc, stdout=printable(out), stderr=printable(err))


def read_config(module, executable, device, wanted, layouts=('-e', None)):
    """The device's table, with the array elements of ``wanted`` queried by name (the table shows Array[a..b])."""
    flag, table = query(module, executable, device, layouts)
    config = table['params']
    names = element_queries(config, wanted)
    if names:
        config.update(query(module, executable, device, (flag,), names)[1]['params'])
    return flag, table


def report_failed_set(module, executable, device, argv, rc, out, err, layout_flag, config, changes, wanted):
    """The set call failed: say what the tool said and what the device holds now (some values may be set)."""
    said = output_summary(out, err)
    try:
        rc2, out2, err2, argv2 = run_query(module, executable, device, layout_flag)
        after = parse_query_table(out2)['params'] if rc2 == 0 else None
        if after is not None:
            names = element_queries(after, wanted)
            if names:
                rc3, out3, _err3, _argv3 = run_query(module, executable, device, layout_flag, names)
                after.update(parse_query_table(out3)['params'] if rc3 == 0 else {})
    except MlxconfigError:
        after = None
    if after is None:
        module.fail_json(msg='%s failed (rc=%d): %s. The configuration could not be read again, so what was set '
                         'before the failure is unknown: query the device (%s -d %s -e q) before retrying.'
                         % (' '.join(argv), rc, said, executable, device), rc=rc, stdout=printable(out),
                         stderr=printable(err), changes={}, config=config)
    applied = dict((name, change) for name, change in changes.items() if is_set(after.get(name), change))
    not_applied = sorted(set(changes) - set(applied))
    has_current = any(entry['current'] is not None for entry in after.values())
    waiting = pending(after) if has_current else sorted(applied)
    module.fail_json(
        msg='%s failed (rc=%d): %s. Set before the failure: %s; not set: %s. Pending until a firmware reset or '
            'reboot: %s. Fix the cause and run again (what is set is not set twice).'
            % (' '.join(argv), rc, said, ', '.join(sorted(applied)) or 'nothing', ', '.join(not_applied) or 'nothing',
               ', '.join(waiting) or 'nothing'),
        rc=rc, stdout=printable(out), stderr=printable(err), changes=applied, pending=waiting,
        reboot_required=bool(waiting), config=public_config(after), device=device, executable=executable)


def is_set(entry, change):
    """Whether the device's Next Boot value of a parameter is the one ``change`` wanted."""
    value_name, number = split_value(change['after'])
    return entry is not None and matches(entry['next_boot'], number, value_name)


def public_config(config):
    return dict((name, dict((k, entry[k]) for k in ('default', 'current', 'next_boot', 'read_only')))
                for name, entry in config.items())


def adapter_of_device(device):
    """The adapter of a resolved device: domain:bus:device of a PCI address, else the device path itself."""
    return adapter_of(device) if normalize_pci_address(device) == device else device


def prepare(module, executable, requested, wanted, device):
    """Query and plan one resolved device; fails (nothing set anywhere) on any problem with the request."""
    layout_flag, table = read_config(module, executable, device, wanted)
    config = table['params']
    try:
        changes, set_args = plan(config, wanted, table['device_type'])
    except MlxconfigError as exc:
        module.fail_json(msg='Nothing was set on %s: %s.' % (device, exc), config=public_config(config), device=device,
                         executable=executable)
    return dict(requested=requested, device=device, layout_flag=layout_flag, table=table, changes=changes,
                set_args=set_args, adapter=adapter_of_device(device))


def configure(module, executable, prepared, wanted, done_before):
    """Set one prepared device; returns its result (the keys documented for device)."""
    device, table, changes = prepared['device'], prepared['table'], prepared['changes']
    config = table['params']
    has_current = any(entry['current'] is not None for entry in config.values())
    after = config
    if changes:
        if module.check_mode:
            after = apply_changes(config, changes)
        else:
            argv, stopped, rc, out, err = MLXCONFIG(module, executable).run_stoppable(
                'device set', device=device, set=prepared['set_args'])
            set_before = '; '.join('%s %s' % (result['device'], ', '.join(sorted(result['changes'])))
                                   for result in done_before if result['changes']) or 'nothing'
            if stopped:
                module.fail_json(msg='%s did not finish within %d seconds and was stopped: the adapter\'s firmware '
                                 'does not answer, or another tool holds it. What it set on %s is unknown: query it '
                                 '(%s -d %s -e q) once it answers, before running again (a firmware reset or reboot '
                                 'may be needed). Set on the devices before it: %s.'
                                 % (' '.join(argv), tool_timeout(module), device, executable, device, set_before),
                                 changes={}, device=device, executable=executable)
            if rc != 0:
                if done_before:
                    module.warn('Set before %s failed: %s.' % (device, set_before))
                report_failed_set(module, executable, device, argv, rc, out, err, prepared['layout_flag'], config,
                                  changes, wanted)
            after = read_config(module, executable, device, wanted, layouts=(prepared['layout_flag'],))[1]['params']
            missed = sorted(name for name, change in changes.items() if not is_set(after.get(name), change))
            if missed:
                reads = ', '.join('%s=%s' % (name, after[name]['next_boot'] if name in after else '(absent)')
                                  for name in missed)
                module.fail_json(msg='%s reported success, but the device still reads %s. Query the device (%s -d %s '
                                 '-e q) and check the firmware release notes for these parameters.'
                                 % (' '.join(argv), reads, executable, device),
                                 stdout=printable(out), changes=changes, config=public_config(after))

    if has_current:
        waiting = pending(after)
    else:
        waiting = sorted(changes)
        if waiting:
            module.warn('%s has no Current column: only this run\'s changes are known to be pending.' % executable)
    result = dict(
        changed=bool(changes),
        requested=prepared['requested'],
        device=device,
        adapter=prepared['adapter'],
        executable=executable,
        config=public_config(after),
        changes=changes,
        layout='verbose' if has_current else 'plain',
        columns=table['columns'],
        pending=waiting,
        reboot_required=bool(waiting),
    )
    if module._diff and wanted:
        result['diff'] = dict(before=render_next_boot(config, wanted), after=render_next_boot(after, wanted),
                              before_header='%s next boot' % device, after_header='%s next boot' % device)
    return result


def main():
    module = RdmaModule(
        argument_spec=dict(
            device=dict(type='str'),
            devices=dict(type='list', elements='str'),
            params=dict(type='dict'),
            executable=dict(type='path'),
            sysfs_root=dict(type='path', default='/sys'),
            timeout=dict(type='int', default=300),
        ),
        mutually_exclusive=[('device', 'devices')],
        required_one_of=[('device', 'devices')],
        supports_check_mode=True,
    )
    tool_timeout(module)  # a timeout below 1 s is refused before any tool runs
    wanted = module.params['params'] or {}
    requested = module.params['devices'] if module.params['devices'] is not None else [module.params['device']]
    if module.params['devices'] is not None:
        if not requested:
            module.fail_json(msg='devices is empty: give at least one device (%s), or leave the task out.'
                             % DEVICE_FORMS)
        twice = sorted(set(name for name in requested if requested.count(name) > 1))
        if twice:
            module.fail_json(msg='devices: %s given twice; give each device once.' % ', '.join(twice))
    executable = find_executable(module)
    resolved = [(name, resolve_device(module, name.strip() if isinstance(name, str) else name,
                                      module.params['sysfs_root'])) for name in requested]
    addresses = [device for _name, device in resolved]
    same = sorted(set(address for address in addresses if addresses.count(address) > 1))
    if same:
        module.fail_json(msg='devices: %s name the same device %s; give each device once.' % (
            ', '.join(name for name, device in resolved if device in same), ', '.join(same)))
    # The configuration is the adapter's: queried, planned and set once, through its first function given.
    adapters = []
    for name, device in resolved:
        adapter = adapter_of_device(device)
        group = [entry for entry in adapters if entry['adapter'] == adapter]
        if group:
            group[0]['functions'].append(device)
            group[0]['requested'].append(name)
        else:
            adapters.append(dict(adapter=adapter, functions=[device], requested=[name]))
    prepared = dict((entry['functions'][0], prepare(module, executable, entry['requested'][0], wanted,
                                                    entry['functions'][0])) for entry in adapters)
    configured = []
    for entry in adapters:
        configured.append(configure(module, executable, prepared[entry['functions'][0]], wanted, configured))
        entry.update(configured_through=entry['functions'][0], changes=configured[-1]['changes'],
                     pending=configured[-1]['pending'], reboot_required=configured[-1]['reboot_required'])
    by_device = dict((result['device'], result) for result in configured)
    results = []
    for name, device in resolved:
        if device in by_device:
            result = dict(by_device[device], configured_through=device)
        else:
            through = [entry for entry in adapters if device in entry['functions']][0]['functions'][0]
            result = dict(by_device[through], requested=name, device=device, changed=False, changes={},
                          configured_through=through)
            result.pop('diff', None)
        results.append(result)
    if module.params['devices'] is None:
        results[0].pop('configured_through')
        module.exit_json(**results[0])
    diffs = [result.pop('diff') for result in results if 'diff' in result]
    output = dict(changed=any(result['changed'] for result in results), results=results, adapters=adapters)
    if diffs:
        output['diff'] = diffs
    module.exit_json(**output)


if __name__ == '__main__':
    main()
