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
  - Every port is read and planned before the first change. When a port then refuses a change (the tool fails,
    the port does not read the wanted state, an ECN switch cannot be written), the changes already made on this
    and the other ports are undone - trust and PFC set back to what C(mlnx_qos) showed before, ECN switches to
    what they held before - and the failure message lists what was changed and undone.
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
      - The module only enables ECN, it never disables it, so V([]) is refused rather than silently changing
        nothing.
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
  - gpunet.rdma.tool_timeout
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
    HostReadError,
    find_tool,
    list_dir,
    output_summary,
    printable,
    read_value,
    tool_timeout,
    write_attribute,
)
from ansible_collections.gpunet.rdma.plugins.module_utils.tuning._mlnx_qos import (
    MLNX_QOS,
    MlnxQosError,
    check_priorities,
    ecn_dir,
    ecn_enabled,
    parse,
    pfc_list,
    pfc_priorities,
    plan,
    plan_ecn,
    read_ecn_files,
    render,
    summary,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._module import RdmaModule, Step

_ARPHRD_INFINIBAND = '32'


def check_interface(module, sysfs_root, name):
    if not isinstance(name, str) or not name.strip() or '/' in name or '\x00' in name or name in ('.', '..'):
        module.fail_json(msg='interfaces: %r is not a network interface name; give the netdev of a RoCE port from '
                         'the rdma_ports facts (e.g. enp11s0f0np0).' % (name,))
    class_net = os.path.join(sysfs_root, 'class', 'net')
    try:
        if not os.path.exists(os.path.join(class_net, name)):
            known = list_dir(class_net)
            module.fail_json(msg='interfaces: %s is not a network interface of this host (interfaces: %s); take the '
                             'netdevs from the rdma_ports facts instead of typing them.'
                             % (name, ', '.join(known) or 'none'))
        kind = read_value(os.path.join(class_net, name, 'type'))
    except HostReadError as exc:
        module.fail_json(msg='interfaces: cannot check %s: %s. Run the module as root on the node, with sysfs_root '
                         'the mount point of sysfs (/sys). Nothing was changed.' % (name, exc))
    if kind == _ARPHRD_INFINIBAND:
        module.fail_json(msg='interfaces: %s is an InfiniBand interface; trust state, PFC and ECN are settings of '
                         'RoCE (Ethernet) ports only - select ports whose link_layer is Ethernet.' % name)


def check_sysfs_root(module, sysfs_root):
    class_net = os.path.join(sysfs_root, 'class', 'net')
    if not os.path.isdir(class_net):
        module.fail_json(msg='sysfs_root: %s is not a directory, so %s is not where sysfs is mounted; leave '
                         'sysfs_root at /sys (or point it at a copy of the node\'s /sys). Nothing was changed.'
                         % (class_net, sysfs_root))


def query(module, qos, interface):
    argv, rc, out, err = qos.run('interface', interface=interface)
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


def ecn_files(module, sysfs_root, interface):
    try:
        return read_ecn_files(sysfs_root, interface)
    except MlnxQosError as exc:
        module.fail_json(msg='ECN of %s: %s. Nothing was changed.' % (interface, exc))


def qos_reads(state):
    """``{trust, pfc_priorities}`` of a parsed state, the two settings this module changes."""
    return {'trust': state.get('trust'), 'pfc_priorities': pfc_priorities(state['pfc'])}


def set_qos(qos, interface, options, expected):
    """``mlnx_qos -i IF OPTIONS``, then read the port again; the state read, RuntimeError unless it is ``expected``.

    ``expected`` maps ``trust``/``pfc_priorities`` to the values the port must read afterwards.
    """
    argv = qos.run_in_step('interface options', interface=interface, options=options)[0]
    state = parse(qos.run_in_step('interface', interface=interface)[1])
    reads = qos_reads(state)
    missed = ['%s=%s' % (name, reads[name]) for name in sorted(expected) if reads[name] != expected[name]]
    if missed:
        raise RuntimeError('%s reported success, but %s still reads %s; check that no other tool (lldpad, DCBX '
                           'from the switch) owns the port\'s QoS' % (' '.join(argv), interface, ', '.join(missed)))
    return state


def describe_changes(interface, changes):
    """``trust pcp -> dscp and PFC priorities none -> 3 on enp11s0f0np0``, for the roll-back message."""
    parts = []
    if 'trust' in changes:
        parts.append('trust %s -> %s' % (changes['trust']['before'], changes['trust']['after']))
    if 'pfc_priorities' in changes:
        parts.append('PFC priorities %s -> %s' % tuple(
            ','.join(str(p) for p in changes['pfc_priorities'][key]) or 'none' for key in ('before', 'after')))
    return '%s on %s' % (' and '.join(parts), interface)


def qos_step(qos, entry):
    """The Step that sets trust and PFC of one port, with an undo that sets back what was read before."""
    interface, changes = entry['interface'], entry['changes']
    wanted = dict((name, change['after']) for name, change in changes.items())
    before = dict((name, change['before']) for name, change in changes.items())
    restore = []
    if 'trust' in changes:
        restore += ['--trust', before['trust']]
    if 'pfc_priorities' in changes:
        restore += ['--pfc', pfc_list(before['pfc_priorities'])]
    what = describe_changes(interface, changes)

    def undo():
        if before.get('trust') not in (None, 'pcp', 'dscp'):
            raise RuntimeError('mlnx_qos can set trust pcp or dscp only, not %s' % before['trust'])
        set_qos(qos, interface, restore, before)

    def put_back():
        """After a failed call, which may have changed part of the port (mlnx_qos sets PFC before it looks at
        --trust): what became of the port, as a sentence. It is set back only when it no longer reads as before."""
        try:
            reads = qos_reads(parse(qos.run_in_step('interface', interface=interface)[1]))
            if all(reads[name] == before[name] for name in before):
                return '%s still reads as before' % interface
            undo()
            return '%s was put back as it was' % interface
        except (RuntimeError, ValueError) as exc:
            return 'putting %s back failed too, check it by hand: %s' % (interface, exc)

    def apply():
        try:
            entry['after'] = set_qos(qos, interface, entry['options'], wanted)
        except (RuntimeError, ValueError) as exc:
            raise RuntimeError('%s (%s)' % (exc, put_back()))

    return Step(what, apply, undo)


def ecn_step(sysfs_root, interface, direction, prio, text_before):
    """The Step that enables ECN of one priority in one role, with an undo that writes back what was read."""
    path = os.path.join(ecn_dir(sysfs_root, interface, direction), str(prio))

    def undo():
        write_attribute(path, text_before)

    def apply():
        try:
            write_attribute(path, '1')
            value = read_value(path)
        except (HostReadError, OSError) as exc:
            problem = str(exc) if isinstance(exc, HostReadError) else 'writing 1 to %s failed: %s' % (
                path, exc.strerror or exc)
            try:
                undo()
            except OSError:
                pass  # the write never got through (the usual case): there is nothing to put back
            raise RuntimeError('%s; run the module as root on the node, with a driver that has the ECN tree' % problem)
        if value != '1':
            undo()
            raise RuntimeError('%s reads %r after 1 was written to it: the driver refuses ECN on priority %d'
                               % (path, printable(value, 40), prio))

    return Step('ECN %s priority %d on %s' % (direction, prio, interface), apply, undo)


def prepare(module, qos, interface, wanted):
    """Read and plan one port; fails (nothing changed on any port) on any problem."""
    sysfs_root = module.params['sysfs_root']
    state = query(module, qos, interface)
    try:
        changes, options = plan(state, wanted['trust'], wanted['pfc'])
    except MlnxQosError as exc:
        module.fail_json(msg='%s: %s. Nothing was changed.' % (interface, exc), before=summary(state))
    files = ecn_files(module, sysfs_root, interface) if wanted['ecn'] is not None else None
    ecn_before = ecn_enabled(files) if files is not None else None
    todo = plan_ecn(ecn_before, wanted['ecn']) if ecn_before is not None else []
    return dict(interface=interface, state=state, changes=changes, options=options, ecn_before=ecn_before,
                ecn_files=files, todo=todo, after=None)


def steps_of(module, qos, entry):
    """The changes of one port, in the order they are made: trust and PFC in one call, then each ECN switch."""
    sysfs_root = module.params['sysfs_root']
    steps = [qos_step(qos, entry)] if entry['options'] else []
    for direction, prio in entry['todo']:
        steps.append(ecn_step(sysfs_root, entry['interface'], direction, prio, entry['ecn_files'][(direction, prio)]))
    return steps


def predicted(state, changes):
    """The state a port reads after ``changes`` (check mode)."""
    after = dict(state)
    if 'trust' in changes:
        after['trust'] = changes['trust']['after']
    if 'pfc_priorities' in changes:
        after['pfc'] = [int(flag) for flag in pfc_list(changes['pfc_priorities']['after']).split(',')]
    return after


def warnings_of(module, entry, wanted):
    """What the user should know about one port whatever the run's outcome (given before the first change)."""
    interface, state = entry['interface'], entry['state']
    warnings = ['%s: mlnx_qos warns: %s' % (interface, text) for text in state['warnings']]
    if state.get('dcbx') == 'Firmware controlled' and (entry['changes'] or wanted['pfc'] is not None):
        warnings.append('%s: DCBX is firmware controlled, so a switch advertising DCBX may change PFC again; '
                        'set DCBX to OS controlled (mlnx_qos -d os) or configure the switch alike.' % interface)
    if wanted['ecn'] is not None and entry['ecn_before'] is None:
        tree = os.path.dirname(ecn_dir(module.params['sysfs_root'], interface, 'roce_np'))
        warnings.append('%s: the driver has no ECN tree (%s); the firmware parameter ROCE_CC_PRIO_MASK_P1 decides '
                        'which priorities have ECN.' % (interface, tree))
    return warnings


def report(module, entry, wanted):
    """The result of one port after the run (or as the run would leave it in check mode)."""
    interface, state, changes = entry['interface'], entry['state'], entry['changes']
    ecn_before, todo = entry['ecn_before'], entry['todo']
    after = entry['after'] or (predicted(state, changes) if changes else state)
    # every ECN write was read back by its step, so the priorities enabled now are known without another read
    ecn_after = None if ecn_before is None else dict(
        (direction, sorted(set(ecn_before[direction]) | set(p for d, p in todo if d == direction)))
        for direction in ecn_before)
    ecn = None
    if wanted['ecn'] is not None or ecn_before is not None:
        ecn = {'supported': ecn_before is not None, 'roce_np': (ecn_after or {}).get('roce_np'),
               'roce_rp': (ecn_after or {}).get('roce_rp'), 'enabled': [list(item) for item in todo]}
    result = dict(interface=interface, before=summary(state), after=summary(after), changes=changes, ecn=ecn,
                  layout=state['layout'], changed=bool(changes or todo))
    if module._diff:
        result['diff'] = dict(before=render(state, ecn_before), after=render(after, ecn_after),
                              before_header='%s QoS' % interface, after_header='%s QoS' % interface)
    return result


def main():
    module = RdmaModule(
        argument_spec=dict(
            interfaces=dict(type='list', elements='str', required=True),
            trust=dict(type='str', choices=['pcp', 'dscp']),
            pfc_priorities=dict(type='list', elements='int'),
            ecn_priorities=dict(type='list', elements='int'),
            executable=dict(type='path'),
            sysfs_root=dict(type='path', default='/sys'),
            timeout=dict(type='int', default=300),
        ),
        supports_check_mode=True,
    )
    tool_timeout(module)
    interfaces = module.params['interfaces']
    if not interfaces:
        module.fail_json(msg='interfaces is empty: give the netdevs of the RoCE ports (rdma_ports facts with '
                         'link_layer Ethernet), or leave the task out.')
    twice = sorted(set(name for name in interfaces if interfaces.count(name) > 1))
    if twice:
        module.fail_json(msg='interfaces: %s given twice; give each interface once.' % ', '.join(twice))
    wanted = {'trust': module.params['trust'], 'pfc': module.params['pfc_priorities'],
              'ecn': module.params['ecn_priorities']}
    if wanted['ecn'] == []:
        # unlike pfc_priorities, where [] turns PFC off, this module never disables ECN: [] would silently do nothing
        module.fail_json(msg='ecn_priorities is empty: this module only enables ECN and never disables it, so [] '
                         'changes nothing. Give the priorities to enable (e.g. [3]), or leave ecn_priorities unset.')
    for option in ('pfc', 'ecn'):
        if wanted[option] is not None:
            try:
                wanted[option] = check_priorities(wanted[option], '%s_priorities' % option)
            except MlnxQosError as exc:
                module.fail_json(msg=str(exc))
    check_sysfs_root(module, module.params['sysfs_root'])
    for name in interfaces:
        check_interface(module, module.params['sysfs_root'], name)
    executable = find_tool(module, 'mlnx_qos', explicit=module.params['executable'], option='executable',
                           opt_dirs=list(SBIN_DIRS),
                           hint='Install MLNX_OFED / DOCA-OFED or the mlnx-tools package, or set executable.')
    # every port is read and planned before the first change; the changes are then made as one, so a port that
    # refuses undoes the ports changed before it
    qos = MLNX_QOS(module, executable)
    prepared = [prepare(module, qos, name, wanted) for name in interfaces]
    for entry in prepared:
        for warning in warnings_of(module, entry, wanted):
            module.warn(warning)
    if not module.check_mode:
        module.apply_steps([step for entry in prepared for step in steps_of(module, qos, entry)])
    results = [report(module, entry, wanted) for entry in prepared]
    diffs = [result.pop('diff') for result in results if 'diff' in result]
    output = dict(changed=any(result['changed'] for result in results), results=results, executable=executable)
    if diffs:
        output['diff'] = diffs
    module.exit_json(**output)


if __name__ == '__main__':
    main()
