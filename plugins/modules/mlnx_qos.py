#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
---
module: mlnx_qos
short_description: Lossless RoCE settings of ConnectX ports - trust state and PFC (mlnx_qos), ECN priorities (sysfs)
version_added: 0.1.0
description:
  - Reads each port's QoS state with C(mlnx_qos -i NETDEV), compares the priority trust state and the priorities with
    Priority Flow Control (PFC) with O(trust) and O(pfc_priorities), and changes only what differs, in one call per
    port (C(mlnx_qos -i NETDEV --trust dscp --pfc 0,0,0,1,0,0,0,0)). The port is read again afterwards and the
    module fails when it does not show the wanted state. A second run changes nothing.
  - Every layout C(mlnx_qos) printed since MLNX_OFED 4.2 is read (with or without C(DCBX mode), the dscp2prio
    mapping, C(default priority), receive buffer sizes with C(total_size) or C(max_buffer_size), the PFC buffer
    row); a line of no known form fails the module before anything is changed.
  - With O(ecn_priorities), enables ECN for those priorities in both roles of DCQCN, notification point
    (C(roce_np)) and reaction point (C(roce_rp)), by writing C(1) to
    C(/sys/class/net/NETDEV/ecn/roce_np/enable/PRIO) and C(.../roce_rp/enable/PRIO). Other priorities are left as
    they are. That tree exists with the MLNX_OFED and DOCA-OFED drivers only; without it the port's RV(results[].ecn)
    says so and the firmware's C(ROCE_CC_PRIO_MASK_P1) (M(gpunet.rdma.mlxconfig)) decides the ECN priorities.
  - These are runtime settings of the driver and are lost when the driver restarts or the host reboots; the role
    P(gpunet.rdma.nic_tuning#role) applies them again at boot with a systemd unit.
author:
  - gpunet.rdma contributors (@gpunet)
options:
  interfaces:
    description:
      - Network interfaces of RoCE ports (link layer Ethernet), as the C(rdma_ports) facts of
        M(gpunet.rdma.ibdev2netdev_facts) name them. Each must exist below O(sysfs_root) and must not be an
        InfiniBand interface.
    type: list
    elements: str
    required: true
  trust:
    description:
      - Priority trust state - V(dscp) (classify by the IP header's DSCP, what routed RoCE v2 needs) or V(pcp) (the
        VLAN tag's priority). Omit to leave it alone.
    type: str
    choices: [pcp, dscp]
  pfc_priorities:
    description:
      - The priorities that get PFC (lossless), every other priority gets none; V([3]) is the RoCE priority of
        NVIDIA's lossless RoCE configuration. V([]) turns PFC off on every priority. Omit to leave PFC alone.
    type: list
    elements: int
  ecn_priorities:
    description:
      - Priorities whose ECN notification point and reaction point are enabled through sysfs. Omit to leave ECN
        alone.
    type: list
    elements: int
  executable:
    description: Path of C(mlnx_qos); default C(mlnx_qos) on E(PATH) or in C(/usr/sbin), C(/sbin), C(/usr/local/sbin), C(/usr/local/bin).
    type: path
  sysfs_root:
    description: Mount point of sysfs, to check the interfaces and to read and write the ECN switches.
    type: path
    default: /sys
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Reads every port and reports what would change; calls no setting option and writes no file.
  diff_mode:
    support: full
    details: Shows trust, PFC and the ECN priorities of each port before and after.
  platform:
    platforms: posix
notes:
  - Commands run as argument lists with C(LC_ALL=C).
  - When C(lldpad) runs, C(mlnx_qos) warns that it may overwrite the settings; the module passes that warning on.
  - With C(DCBX mode - Firmware controlled) a switch that advertises DCBX can change PFC again; the module warns.
requirements:
  - C(mlnx_qos) from MLNX_OFED, DOCA-OFED or the C(mlnx-tools) package.
seealso:
  - module: gpunet.rdma.mlxconfig
  - name: mlnx_qos in the mlnx-tools repository
    description: The tool whose output this module reads.
    link: https://github.com/Mellanox/mlnx-tools/blob/master/python/mlnx_qos
'''

EXAMPLES = r'''
- name: Lossless RoCE on every RoCE port of the node - trust DSCP, PFC and ECN on priority 3
  gpunet.rdma.mlnx_qos:
    interfaces: "{{ ansible_facts.rdma_ports | selectattr('link_layer', 'eq', 'Ethernet') | map(attribute='netdev') | list }}"
    trust: dscp
    pfc_priorities: [3]
    ecn_priorities: [3]
  register: qos

- name: Only read the QoS state of one port
  gpunet.rdma.mlnx_qos:
    interfaces: [enp11s0f0np0]
'''

RETURN = r'''
results:
  description: One entry per interface, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    interface:
      description: The network interface.
      type: str
      sample: enp11s0f0np0
    before:
      description: The port's state before the run - C(dcbx), C(trust), C(pfc_priorities), C(cable_len), C(prio2buffer), C(traffic_classes).
      type: dict
      sample: {dcbx: OS controlled, trust: pcp, pfc_priorities: [], cable_len: 7}
    after:
      description: The state after the run as the tool printed it (predicted in check mode).
      type: dict
      sample: {dcbx: OS controlled, trust: dscp, pfc_priorities: [3], cable_len: 7}
    changes:
      description: What changed (or would), C(trust) and C(pfc_priorities) each with C(before) and C(after).
      type: dict
      sample: {trust: {before: pcp, after: dscp}, pfc_priorities: {before: [], after: [3]}}
    ecn:
      description:
        - C(supported) (false without the driver's ECN tree), C(roce_np) and C(roce_rp) (priorities enabled after
          the run) and C(enabled) (the priorities this run enabled).
      type: dict
      sample: {supported: true, roce_np: [0, 1, 2, 3, 4, 5, 6, 7], roce_rp: [3], enabled: [[roce_rp, 3]]}
    layout:
      description: The parts the tool printed, for example V([dcbx, trust, max_buffer_size, buffer_size, cable_len, prio2buffer]).
      type: list
      elements: str
    changed:
      description: Whether this interface changed.
      type: bool
executable:
  description: Path of the C(mlnx_qos) that was used.
  returned: always
  type: str
  sample: /usr/bin/mlnx_qos
'''

import os

from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import (
    SBIN_DIRS,
    find_tool,
    output_summary,
    printable,
    run_tool,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._mlnx_qos import (
    MlnxQosError,
    check_priorities,
    ecn_dir,
    parse,
    pfc_list,
    plan,
    plan_ecn,
    read_ecn,
    render,
    summary,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._module import RdmaModule

_ARPHRD_INFINIBAND = '32'


def check_interface(module, sysfs_root, name):
    if not isinstance(name, str) or not name.strip() or '/' in name or name in ('.', '..'):
        module.fail_json(msg='interfaces: %r is not a network interface name; give the netdev of a RoCE port from '
                         'the rdma_ports facts (e.g. enp11s0f0np0).' % (name,))
    class_net = os.path.join(sysfs_root, 'class', 'net')
    if not os.path.exists(os.path.join(class_net, name)):
        known = sorted(os.listdir(class_net)) if os.path.isdir(class_net) else []
        module.fail_json(msg='interfaces: %s is not a network interface of this host (interfaces: %s); take the '
                         'netdevs from the rdma_ports facts instead of typing them.' % (name, ', '.join(known) or 'none'))
    type_path = os.path.join(class_net, name, 'type')
    try:
        with open(type_path) as handle:
            kind = handle.read().strip()
    except (IOError, OSError):
        kind = None
    if kind == _ARPHRD_INFINIBAND:
        module.fail_json(msg='interfaces: %s is an InfiniBand interface; trust state, PFC and ECN are settings of '
                         'RoCE (Ethernet) ports only - select ports whose link_layer is Ethernet.' % name)


def query(module, executable, interface):
    argv = [executable, '-i', interface]
    rc, out, err = run_tool(module, argv, what='mlnx_qos')
    if rc != 0:
        module.fail_json(msg='%s failed (rc=%d): %s. Check that %s is a port of an mlx5 device and that the driver '
                         'supports DCB.' % (' '.join(argv), rc, output_summary(out, err), interface),
                         rc=rc, stdout=printable(out), stderr=printable(err))
    try:
        return parse(out)
    except MlnxQosError as exc:
        module.fail_json(msg='Cannot read the output of %s: %s. Offending line: %r. Nothing was changed; this '
                         'mlnx_qos prints a layout this module does not know - report it with the output.'
                         % (' '.join(argv), exc, printable(exc.line or '', 200)), stdout=printable(out))


def ecn_state(module, sysfs_root, interface):
    try:
        return read_ecn(sysfs_root, interface)
    except MlnxQosError as exc:
        module.fail_json(msg='ECN of %s: %s. Nothing was changed.' % (interface, exc))


def write_ecn(module, sysfs_root, interface, todo):
    for direction, prio in todo:
        path = os.path.join(ecn_dir(sysfs_root, interface, direction), str(prio))
        try:
            with open(path, 'w') as handle:
                handle.write('1')
        except (IOError, OSError) as exc:
            module.fail_json(msg='Cannot enable ECN %s priority %d of %s: writing 1 to %s failed (%s). Enabled before '
                             'the failure: %s.' % (direction, prio, interface, path, exc.strerror or exc,
                                                   ', '.join('%s/%d' % item for item in todo[:todo.index((direction, prio))])
                                                   or 'nothing'))


def prepare(module, executable, interface, wanted):
    """Read and plan one port; fails (nothing changed on any port) on any problem."""
    sysfs_root = module.params['sysfs_root']
    state = query(module, executable, interface)
    try:
        changes, options = plan(state, wanted['trust'], wanted['pfc'])
    except MlnxQosError as exc:
        module.fail_json(msg='%s: %s. Nothing was changed.' % (interface, exc), before=summary(state))
    ecn_before = ecn_state(module, sysfs_root, interface) if wanted['ecn'] is not None else None
    todo = plan_ecn(ecn_before, wanted['ecn']) if ecn_before is not None else []
    return dict(interface=interface, state=state, changes=changes, options=options, ecn_before=ecn_before,
                todo=todo)


def configure(module, executable, prepared, wanted):
    sysfs_root = module.params['sysfs_root']
    interface, state, changes, options = (prepared['interface'], prepared['state'], prepared['changes'],
                                          prepared['options'])
    ecn_before, todo = prepared['ecn_before'], prepared['todo']
    warnings = ['%s: mlnx_qos warns: %s' % (interface, text) for text in state['warnings']]
    if state.get('dcbx') == 'Firmware controlled' and (changes or wanted['pfc'] is not None):
        warnings.append('%s: DCBX is firmware controlled, so a switch advertising DCBX may change PFC again; '
                        'set DCBX to OS controlled (mlnx_qos -d os) or configure the switch alike.' % interface)
    if wanted['ecn'] is not None and ecn_before is None:
        tree = os.path.dirname(ecn_dir(sysfs_root, interface, 'roce_np'))
        warnings.append('%s: the driver has no ECN tree (%s); the firmware parameter ROCE_CC_PRIO_MASK_P1 decides '
                        'which priorities have ECN.' % (interface, tree))
    after = state
    if options and not module.check_mode:
        argv = [executable, '-i', interface] + options
        rc, out, err = run_tool(module, argv, what='mlnx_qos')
        if rc != 0:
            module.fail_json(msg='%s failed (rc=%d): %s.' % (' '.join(argv), rc, output_summary(out, err)),
                             rc=rc, stdout=printable(out), stderr=printable(err), before=summary(state))
        after = query(module, executable, interface)
        missed = [name for name, change in changes.items()
                  if (after['trust'] if name == 'trust' else summary(after)['pfc_priorities']) != change['after']]
        if missed:
            module.fail_json(msg='%s reported success, but %s still reads %s. Check that no other tool (lldpad, '
                             'DCBX from the switch) owns the port\'s QoS.' % (
                                 ' '.join(argv), interface, ', '.join('%s=%s' % (
                                     name, after['trust'] if name == 'trust' else summary(after)['pfc_priorities'])
                                     for name in missed)),
                             before=summary(state), after=summary(after))
    elif options:
        after = dict(state)
        if 'trust' in changes:
            after['trust'] = changes['trust']['after']
        if 'pfc_priorities' in changes:
            after['pfc'] = [int(flag) for flag in pfc_list(changes['pfc_priorities']['after']).split(',')]
    ecn_after = ecn_before
    if todo:
        if not module.check_mode:
            write_ecn(module, sysfs_root, interface, todo)
            ecn_after = ecn_state(module, sysfs_root, interface)
        else:
            ecn_after = dict((direction, sorted(set(ecn_before[direction]) | set(
                prio for d, prio in todo if d == direction))) for direction in ecn_before)
    ecn = None
    if wanted['ecn'] is not None or ecn_before is not None:
        ecn = {'supported': ecn_before is not None, 'roce_np': (ecn_after or {}).get('roce_np'),
               'roce_rp': (ecn_after or {}).get('roce_rp'), 'enabled': [list(item) for item in todo]}
    result = dict(interface=interface, before=summary(state), after=summary(after), changes=changes, ecn=ecn,
                  layout=state['layout'], changed=bool(changes or todo))
    if module._diff:
        result['diff'] = dict(before=render(state, ecn_before), after=render(after, ecn_after),
                              before_header='%s QoS' % interface, after_header='%s QoS' % interface)
    return result, warnings


def main():
    module = RdmaModule(
        argument_spec=dict(
            interfaces=dict(type='list', elements='str', required=True),
            trust=dict(type='str', choices=['pcp', 'dscp']),
            pfc_priorities=dict(type='list', elements='int'),
            ecn_priorities=dict(type='list', elements='int'),
            executable=dict(type='path'),
            sysfs_root=dict(type='path', default='/sys'),
        ),
        supports_check_mode=True,
    )
    interfaces = module.params['interfaces']
    if not interfaces:
        module.fail_json(msg='interfaces is empty: give the netdevs of the RoCE ports (rdma_ports facts with '
                         'link_layer Ethernet), or leave the task out.')
    twice = sorted(set(name for name in interfaces if interfaces.count(name) > 1))
    if twice:
        module.fail_json(msg='interfaces: %s given twice; give each interface once.' % ', '.join(twice))
    wanted = {'trust': module.params['trust'], 'pfc': module.params['pfc_priorities'],
              'ecn': module.params['ecn_priorities']}
    for option in ('pfc', 'ecn'):
        if wanted[option] is not None:
            try:
                wanted[option] = check_priorities(wanted[option], '%s_priorities' % option)
            except MlnxQosError as exc:
                module.fail_json(msg=str(exc))
    for name in interfaces:
        check_interface(module, module.params['sysfs_root'], name)
    executable = find_tool(module, 'mlnx_qos', explicit=module.params['executable'], option='executable',
                           opt_dirs=list(SBIN_DIRS),
                           hint='Install MLNX_OFED / DOCA-OFED or the mlnx-tools package, or set executable.')
    prepared = [prepare(module, executable, name, wanted) for name in interfaces]
    results = []
    for entry in prepared:
        result, warnings = configure(module, executable, entry, wanted)
        for warning in warnings:
            module.warn(warning)
        results.append(result)
    diffs = [result.pop('diff') for result in results if 'diff' in result]
    output = dict(changed=any(result['changed'] for result in results), results=results, executable=executable)
    if diffs:
        output['diff'] = diffs
    module.exit_json(**output)


if __name__ == '__main__':
    main()
