# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Wrong input types and shapes to every filter: an AnsibleFilterError naming the filter and the argument, never a
Python traceback (TypeError, KeyError, AttributeError, "list indices must be integers or slices, not str").

One table of cases: the filter (called through the FilterModule of its plugin file, as Ansible calls it), the input,
the other arguments, a fragment naming the argument and fragments saying what is expected. A filter that no case
calls fails ``test_every_filter_has_a_case``.
"""

from __future__ import annotations

import glob
import importlib
import os

import pytest

from ansible.errors import AnsibleFilterError

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
PLUGIN_FILES = sorted(os.path.splitext(os.path.basename(path))[0]
                      for path in glob.glob(os.path.join(REPO, 'plugins', 'filter', '*.py'))
                      if not os.path.basename(path).startswith('_'))
# What the wrapper of plugins/plugin_utils/_filter_args.py says when processing trips over a nested value.
FALLBACK = 'holds a value of an unexpected type or shape'


def load_filters():
    """{filter name: function} of every filter plugin file, from its FilterModule."""
    filters = {}
    for stem in PLUGIN_FILES:
        module = importlib.import_module('ansible_collections.gpunet.rdma.plugins.filter.' + stem)
        for name, function in module.FilterModule().filters().items():
            assert name not in filters, '%s is defined twice' % name
            filters[name] = function
    return filters


FILTERS = load_filters()

PORT = {'device': 'mlx5_0', 'port': 1, 'netdev': 'ibp12s0', 'state': 'ACTIVE', 'physical_state': 'LinkUp',
        'link_layer': 'InfiniBand', 'rate_gbps': 200, 'pci_address': '0000:0c:00.0'}
FABRIC = {'name': 'ib_a100', 'generation': 'A100', 'link_layer': 'InfiniBand', 'line_rate_gbps': 200,
          'expected_ports': {'min_active_ports': 1}, 'rdma_resource': 'rdma/rdma_a100'}
HOSTVARS = {'h1': {'group_names': ['ib_a100'], 'gpunet_rdma_fabric': FABRIC,
                   'rdma_discovery_facts': {'source': 'sysfs'},
                   'ansible_facts': {'rdma_ports': [PORT], 'rdma_devices': [], 'gpunet_rdma_ledger': {}}}}
FABRICS = {'groups': {'ib_a100': dict(FABRIC, hosts=['h1'], kubernetes='shared_device_plugin')},
           'hosts': {'h1': 'ib_a100'}}
RESULT = {'host': 'h1', 'verdict': 'pass', 'group': 'ib_a100', 'expectation': None, 'ok_ports': 1, 'source': 'sysfs',
          'ports': [dict(PORT, verdict='ok', note='')], 'problems': [], 'devices': []}
SUMMARY = {'hosts': 1, 'pass': 1, 'fail': 0, 'unchecked': 0, 'no_facts': 0, 'ports': 1, 'active_ports': 1}
PLUGIN = {'repository': 'ghcr.io/mellanox', 'image': 'k8s-rdma-shared-dev-plugin', 'version': 'v1.5.2'}
GROUP = {'group': 'ib_a100', 'resource_name': 'rdma_a100', 'hosts': ['h1'], 'ports': [PORT]}
RESOURCE = {'group': 'ib_a100', 'resource': 'rdma/rdma_a100', 'hosts': ['h1'], 'if_names': ['ibp12s0']}
NODE = {'metadata': {'name': 'h1', 'labels': {}}, 'status': {'allocatable': {'rdma/rdma_a100': '63'}}}
TOLERATION = {'key': 'node.kubernetes.io/unschedulable', 'operator': 'Exists', 'effect': 'NoSchedule'}
POLICY = {'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'NicClusterPolicy', 'metadata': {'name': 'nic-cluster-policy'},
          'spec': {'tolerations': []}}
SPIDER_HOST = {'host': 'roce-1', 'ports': [dict(PORT, netdev='enp11s0f0np0', link_layer='Ethernet')], 'netns': None}
SPIDER_OPTIONS = {'gpu_nics': [{'gpu': 1, 'nic': 'enp11s0f0np0'}],
                  'ip_pools': [{'gpu': 1, 'subnet': '172.16.11.0/24', 'gateway': '172.16.11.254',
                                'ips': ['172.16.11.1-172.16.11.200']}]}
MLXCONFIG = {'item': {'device': 'mlx5_0', 'pci_address': '0000:0c:00.0'}, 'device': '0000:0c:00.0', 'changes': {},
             'pending': [], 'config': {'LINK_TYPE_P1': {'current': 'IB(1)', 'next_boot': 'IB(1)'}}}
PERFTEST = {'device': 'mlx5_0', 'port': 1, 'tool': 'ib_write_bw', 'ok': True, 'problem': None, 'record': {}}
FIRMWARE = {'apply': 'none', 'pending': [], 'reboot_required': False, 'devices': [
    {'device': 'mlx5_0', 'pci_address': '0000:0c:00.0', 'pending': [],
     'values': {'LINK_TYPE_P1': {'current': 'IB(1)', 'next_boot': 'IB(1)'}}}]}


def entry(stage, detail=None, **fields):
    """A stage's envelope as the ledger action records it, with ``fields`` replaced (``drop`` names keys to leave
    out)."""
    result = {'stage': stage, 'status': 'ok', 'changed': False, 'pending': [], 'problems': [], 'detail': detail or {}}
    for key in fields.pop('drop', ()):
        del result[key]
    result.update(fields)
    return result


def without(record, key):
    return dict((k, v) for k, v in record.items() if k != key)


FIRMWARE_VALUE_NOT_A_DICT = dict(FIRMWARE, devices=[dict(FIRMWARE['devices'][0], values={'LINK_TYPE_P1': 'IB(1)'})])
FIRMWARE_DEVICE_NO_PENDING = dict(FIRMWARE, devices=[without(FIRMWARE['devices'][0], 'pending')])
VALIDATION_RATE_TEXT = {'tests': [{'host': 'h1', 'line_rate_gbps': '200 Gb/s'}]}
OPERATOR_IF_NAMES_TEXT = entry('network_operator', {'resources': [{'resource': 'rdma/rdma_a100', 'if_names': 'ibp12s0'}]})


def case(name, value, *args, **kwargs):
    """One case: ``arg`` names the argument in the message, ``says`` lists what else it must say, ``fallback`` marks
    a case the wrapper converts (a nested value the explicit checks do not look at)."""
    arg = kwargs.pop('arg')
    says = kwargs.pop('says', ())
    fallback = kwargs.pop('fallback', False)
    return (name, value, args, kwargs, arg, tuple(says), fallback)


CASES = [
    # devices.py
    case('pci_functions', {'mlx5_0': {}}, arg='rdma_devices facts', says=['(a list), not dict']),
    case('pci_functions', ['mlx5_0'], arg='rdma_devices items', says=['with a "device" name']),
    case('pci_functions', [], 5, arg='selectors', says=['must be a list of device names or PCI addresses']),
    # driver.py
    case('modprobe_explain', 5, arg='the input', says=['a module name (str)', 'got int 5']),
    case('modprobe_explain', None, arg='the input', says=['modprobe result', 'got null']),
    case('modprobe_explain', 'nvidia_peermem', ['x'], arg='text', says=['must be a string']),
    # ledger.py
    case('ledgers', 'h1', HOSTVARS, arg='the input', says=['must be a list of host names', "got str 'h1'"]),
    case('ledgers', 5, HOSTVARS, arg='the input', says=['must be a list of host names', 'got int 5']),
    case('ledgers', ['h1'], 'hostvars', arg='hostvars', says=['must be a dict']),
    case('ledgers', ['h1'], {'h1': None}, arg='hostvars[h1]', says=['must be a dict', 'got null']),
    case('ledgers', ['h1'], {'h1': {'ansible_facts': 'x'}}, arg='ansible_facts of h1', says=['must be a dict']),
    case('rollout_plan', 'firmware', arg='the input', says=['must be a dict', 'gpunet_rdma_ledger']),
    case('rollout_plan', ['firmware'], arg='the input', says=['must be a dict', 'got a list of 1 item']),
    case('rollout_plan', {'firmware': 'ok'}, arg='the ledger, stage firmware',
         says=['the entry must be a dict (an envelope: stage, status', "got str 'ok'"]),
    case('rollout_plan', {'firmware': entry('firmware', drop=['changed', 'problems'])},
         arg='the ledger, stage firmware', says=["lacks field 'changed' (expected true or false)", "also lacks 'problems'"]),
    case('rollout_plan', {'ofed': entry('ofed', pending=[{'action': 'driver_restart', 'allowed': 'yes'}])},
         arg='the ledger, stage ofed', says=["field 'pending[0].allowed' must be true or false", "got str 'yes'"]),
    case('rollout_plan', {'ofed': entry('ofed', status='done')}, arg='the ledger, stage ofed',
         says=["field 'status' is str 'done', not one of ok, changed, pending, failed, skipped"]),
    case('disruption_guard', ['firmware'], {}, arg='the input', says=['must be a dict', 'gpunet_rdma_ledger']),
    case('disruption_guard', {}, 'bond0', arg='management_path', says=['must be a dict', 'rdma_management_path']),
    case('disruption_guard', {'firmware': 'ok'}, {}, arg='the ledger, stage firmware',
         says=['the entry must be a dict']),
    case('disruption_guard', {'firmware': entry('firmware', detail='mlx5_0')}, {'interfaces': []},
         arg='the ledger, stage firmware', says=["field 'detail' must be a dict", "got str 'mlx5_0'"]),
    case('disruption_guard', {'firmware': entry('firmware', pending=['rebot'])}, {},
         arg='the ledger, stage firmware', says=["field 'pending[0].action' is str 'rebot'", 'firmware_reset']),
    case('fabrics', None, HOSTVARS, arg='the input', says=['must be a list of host names', 'got null']),
    case('fabrics', ['h1'], [], arg='hostvars', says=['must be a dict', 'got an empty list']),
    case('fabrics', ['h1'], {'h1': {'gpunet_rdma_fabric': 7}}, arg='gpunet_rdma_fabric of h1',
         says=['must be a dict']),
    case('fabrics', ['h1'], {'h1': dict(HOSTVARS['h1'], group_names='ib_a100')}, arg='group_names of h1',
         says=['must be a list of group names']),
    # network_operator.py
    case('network_operator_groups', 'ib_a100', FABRICS, HOSTVARS, arg='network_operator_resources',
         says=['must be a list of {group, resource_name, link_types}']),
    case('network_operator_groups', [], 'fabrics', HOSTVARS, arg='fabrics',
         says=['must be a dict (the output of gpunet.rdma.fabrics)']),
    case('network_operator_groups', [], {'groups': ['ib_a100']}, HOSTVARS, arg='fabrics.groups',
         says=['must be a dict']),
    case('network_operator_groups', [{'group': 'g', 'resource_name': 'r'}], FABRICS,
         {'h1': {'ansible_facts': {'rdma_ports': 'ibp12s0'}}}, 63, {'g': ['h1']},
         arg='ansible_facts.rdma_ports of h1', says=['must be a list of rdma_ports records']),
    case('network_operator_groups', [], FABRICS, HOSTVARS, 'many', arg='rdma_hca_max',
         says=['must be a whole number']),
    case('network_operator_groups', [], FABRICS, HOSTVARS, inventory_groups=['ib_a100'],
         arg='inventory_groups', says=['must be a dict']),
    case('network_operator_groups', [dict(group='g', resource_name='r', link_types='InfiniBand')], FABRICS,
         HOSTVARS, arg='link_types', says=['must be a list of link layers']),
    case('network_operator', 'groups', 'v26.4.1', arg='the input', says=['must be a list of groups']),
    case('network_operator', [GROUP], ['v26.4.1'], arg='release', says=['must be a string']),
    case('network_operator', [GROUP], 'v26.4.1', 'options', arg='options', says=['must be a dict']),
    case('network_operator', [GROUP], 'v26.4.1', {'rdma_shared_device_plugin': PLUGIN, 'ofed_driver': 'doca'},
         arg='options.ofed_driver', says=['must be a dict (repository, image, version)']),
    case('network_operator', [GROUP], 'v26.4.1', dict(rdma_shared_device_plugin=PLUGIN, tolerations=TOLERATION),
         arg='options.tolerations', says=['must be a list of tolerations']),
    case('network_operator', [dict(GROUP, ports='ibp12s0')], 'v26.4.1', {'rdma_shared_device_plugin': PLUGIN},
         arg='the input[0].ports', says=['must be a list of rdma_ports records']),
    case('node_resources', RESOURCE, [NODE], arg='the input', says=['must be a list of resources']),
    case('node_resources', [{'group': 'ib_a100'}], [NODE], arg='the input[0]', says=['needs resource']),
    case('node_resources', [RESOURCE], 'h1', arg='nodes', says=['must be a list of Kubernetes Node objects']),
    case('node_resources', [RESOURCE], [{'metadata': 'h1'}], arg='nodes[0].metadata', says=['must be a dict']),
    case('node_resources', [{'group': 'g', 'resource': 'rdma/r'}], [NODE], {'g': 'h1'},
         arg='inventory_groups[g]', says=['must be a list of host names']),
    case('daemonsets_not_ready', 'network-operator', arg='the input',
         says=['must be a list of DaemonSet objects']),
    case('daemonsets_not_ready', [{'status': 'Ready'}], arg='the input[0].status', says=['must be a dict']),
    case('daemonsets_not_ready', [{'status': {'desiredNumberScheduled': 2, 'numberReady': 'two'}}],
         arg='the input (daemonsets)', says=['TypeError', 'a list of DaemonSet objects'], fallback=True),
    case('merge_tolerations', 'key=node.kubernetes.io/unschedulable', [TOLERATION], arg='the input',
         says=['must be a list of tolerations']),
    case('merge_tolerations', [], TOLERATION, arg='wanted', says=['must be a list of tolerations']),
    case('merge_tolerations', [], ['node.kubernetes.io/unschedulable'], arg='wanted[0]',
         says=['must be a dict (a toleration)']),
    case('merge_tolerations', [{'key': ['a']}], [TOLERATION], arg='the input (existing)',
         says=['unhashable'], fallback=True),
    case('merge_tolerations', [], [], [], arg='wanted', says=['too many positional arguments']),
    case('network_operator', [GROUP], 'v26.4.1', dict(rdma_shared_device_plugin=PLUGIN, node_policies=[True]),
         arg='options.node_policies', says=['must be auto, true or false']),
    case('network_operator', [GROUP], 'v26.4.1', dict(rdma_shared_device_plugin=PLUGIN,
                                                      node_selectors={'ib_a100': 'gpu=a100'}),
         arg='options.node_selectors[ib_a100]', says=['must be a dict (a nodeSelector)']),
    case('network_operator', [GROUP], 'v26.4.1', dict(rdma_shared_device_plugin=PLUGIN,
                                                      ofed_driver_over_host_ofed='yes'),
         arg='options.ofed_driver_over_host_ofed', says=['must be true or false']),
    case('host_ofed', 'h1', HOSTVARS, arg='the input', says=['must be a list of host names']),
    case('host_ofed', ['h1'], {'h1': {'ansible_facts': {'rdma_driver': 'MLNX_OFED'}}},
         arg='ansible_facts.rdma_driver of h1', says=['must be a dict (rdma_driver facts)']),
    case('host_ofed', ['h1'], {'h1': {'ansible_facts': {'rdma_driver': {}, 'gpunet_rdma_ledger': {
        'ofed': 'changed'}}}}, arg='ledger of host h1, stage ofed', says=['must be a dict']),
    case('network_operator_status', {'kind': 'NicClusterPolicy'}, [], arg='the input',
         says=['must be a list of NicClusterPolicy and NicNodePolicy objects']),
    case('network_operator_status', [{'status': 'ready'}], [], arg='the input[0].status', says=['must be a dict']),
    case('network_operator_status', [], [{'kind': 'NicNodePolicy'}], arg='expected[0]', says=['needs name']),
    case('node_policy_labels', [RESOURCE], [NODE], ['gpunet.rdma/group'], arg='label', says=['must be a string']),
    case('node_policy_labels', [RESOURCE], [{'metadata': {'labels': 'a=b'}}], 'gpunet.rdma/group',
         arg='nodes[0].metadata.labels', says=['must be a dict']),
    # report.py
    case('check', 'mlx5_0', arg='the input', says=['must be a list of rdma_ports records']),
    case('check', [{'device': 'mlx5_0'}], arg='the input[0]', says=['needs port']),
    case('check', [PORT], 'InfiniBand', arg='expectation', says=['must be a dict']),
    case('check', [PORT], None, 'ib_a100', arg='group_names', says=['must be a list of group names']),
    case('check', [PORT], group_expectations=['ib_a100'], arg='group_expectations', says=['must be a dict']),
    case('check', [PORT], devices=[{'pci_address': '0000:0b:00.0'}], arg='devices[0]', says=['needs device']),
    case('check_hosts', 'h1', HOSTVARS, arg='the input', says=['must be a list of host names']),
    case('check_hosts', ['h1'], None, arg='hostvars', says=['must be a dict', 'got null']),
    case('check_hosts', ['h1'], HOSTVARS, ['ib_a100'], arg='fabrics', says=['must be a dict']),
    case('check_hosts', ['h1'], {'h1': {'rdma_discovery_facts': 'done'}}, arg='rdma_discovery_facts of h1',
         says=['must be a dict']),
    case('check_hosts', ['h1'], {'h1': dict(HOSTVARS['h1'], ansible_facts={'rdma_ports': {'mlx5_0': {}}})},
         arg='ansible_facts.rdma_ports of h1', says=['must be a list of rdma_ports records']),
    case('check_hosts', ['h1'], {'h1': dict(HOSTVARS['h1'], rdma_discovery_expected_ports=['InfiniBand'])},
         arg='h1: rdma_discovery_expected_ports', says=['must be a dict']),
    case('fleet_report', 'results', ['h1'], arg='the input', says=['must be a list of gpunet.rdma.check results']),
    case('fleet_report', [RESULT], 'h1', arg='all_hosts', says=['must be a list of host names']),
    case('fleet_report', [RESULT], 7, arg='all_hosts', says=['must be a list of host names', 'got int 7']),
    case('fleet_report', [{'verdict': 'pass'}], ['h1'], arg='every result', says=['"host" and "verdict"']),
    case('fleet_report', [{'host': 'h1', 'verdict': 'pass'}], ['h1'], arg='the input[0]', says=['"ports"']),
    case('fleet_report', [RESULT], ['h1'], ['h1'], arg='ledgers', says=['must be a dict']),
    case('fleet_report', [RESULT], ['h1'], {'h1': 'ok'}, arg='ledgers[h1]', says=['must be a dict']),
    case('fleet_report', [RESULT], ['h1'], fabrics='ib_a100', arg='fabrics', says=['must be a dict']),
    case('fleet_report', [RESULT], arg='all_hosts', says=['missing a required argument']),
    # the stage ledgers it reads: the host, the stage and the field, never "unexpected type or shape"
    case('fleet_report', [RESULT], ['h1'], {'h1': {'firmware': entry('firmware', without(FIRMWARE, 'apply'))}},
         arg='ledgers: ledger of host h1, stage firmware',
         says=["lacks field 'detail.apply' (expected a string naming how pending changes are activated"]),
    case('fleet_report', [RESULT], ['h1'], {'h1': {'firmware': 'ok'}},
         arg='ledgers: ledger of host h1, stage firmware', says=['the entry must be a dict', "got str 'ok'"]),
    case('fleet_report', [RESULT], ['h1'], {'h1': {'firmware': entry('firmware', drop=['status'])}},
         arg='ledger of host h1, stage firmware', says=["lacks field 'status' (expected one of ok, changed"]),
    case('fleet_report', [RESULT], ['h1'], {'h1': {'firmware': entry('firmware',
                                                                     dict(FIRMWARE, devices='mlx5_0'))}},
         arg='ledger of host h1, stage firmware', says=["field 'detail.devices' must be a list of device records"]),
    case('fleet_report', [RESULT], ['h1'], {'h1': {'firmware': entry('firmware', FIRMWARE_VALUE_NOT_A_DICT)}},
         arg='ledger of host h1, stage firmware', says=["field 'detail.devices[0].values[LINK_TYPE_P1]' must be a dict", "got str 'IB(1)'"]),
    case('fleet_report', [RESULT], ['h1'], {'h1': {'firmware': entry('firmware', FIRMWARE_DEVICE_NO_PENDING)}},
         arg='ledger of host h1, stage firmware', says=["lacks field 'detail.devices[0].pending'"]),
    case('fleet_report', [RESULT], ['h1'], {'h1': {'tuning': entry('tuning', {'ports': ['enp11s0f0np0']})}},
         arg='ledger of host h1, stage tuning', says=["field 'detail.ports[0]' must be a dict (a port record)"]),
    case('fleet_report', [RESULT], ['h1'], {'h1': {'ofed': entry('ofed', {'missing_modules': 'mlx5_ib'})}},
         arg='ledger of host h1, stage ofed', says=["field 'detail.missing_modules' must be a list of strings"]),
    case('fleet_report', [RESULT], ['h1'], {'h1': {'validation': entry('validation', VALIDATION_RATE_TEXT)}},
         arg='ledger of host h1, stage validation', says=["field 'detail.tests[0].line_rate_gbps' must be a number", "got str '200 Gb/s'"]),
    case('fleet_report', [RESULT], ['h1'], {'h1': {'scope': entry('scope', {'in_scope': False})}},
         arg='ledger of host h1, stage scope', says=["lacks field 'detail.reason'", 'why the host is out of scope']),
    case('fleet_report', [RESULT], ['h1'], {'h1': {'sriov': entry('sriov', {'pfs': [{'vfs': 'virtfn0'}]})}},
         arg='ledger of host h1, stage sriov', says=["field 'detail.pfs[0].vfs' must be a list of VF records"]),
    case('fleet_report', [RESULT], ['h1'], {'localhost': {'network_operator': OPERATOR_IF_NAMES_TEXT}},
         arg='ledger of host localhost, stage network_operator',
         says=["field 'detail.resources[0].if_names' must be a list of strings"]),
    case('fleet_report', [RESULT], ['h1'], {'h1': {'pvrdma': entry('pvrdma', problems={'count': 0})}},
         arg='ledger of host h1, stage pvrdma', says=["field 'problems' must be a list of strings"]),
    case('firmware_result', 'mlx5_0', 'h1', 'none', arg='the input',
         says=['must be a list of results of gpunet.rdma.mlxconfig']),
    case('firmware_result', [MLXCONFIG], None, 'none', arg='host', says=['must be a string']),
    case('firmware_result', [MLXCONFIG], 'h1', True, arg='apply', says=['must be a string', 'got bool True']),
    case('firmware_result', [MLXCONFIG], 'h1', 'none', 'LINK_TYPE_P1', arg='wanted',
         says=['must be a list of parameter names']),
    case('firmware_result', [MLXCONFIG], 'h1', 'none', previous='none', arg='previous', says=['must be a dict']),
    case('firmware_result', [MLXCONFIG], 'h1', 'none', targets={'device': 'mlx5_0'}, arg='targets',
         says=['must be a list of PCI functions']),
    case('firmware_result', [dict(MLXCONFIG, config={'LINK_TYPE_P1': 'IB(1)'})], 'h1', 'none',
         ['LINK_TYPE_P1'], arg='the input[0].config[LINK_TYPE_P1]', says=['must be a dict']),
    case('report_markdown', 'report', arg='the input', says=['output of gpunet.rdma.fleet_report', "got str 'report'"]),
    case('report_markdown', {'hosts': {}, 'summary': SUMMARY}, arg='the input.hosts',
         says=['must be a list of host records']),
    case('report_markdown', {'hosts': [], 'summary': {'hosts': 1}}, arg='the input.summary',
         says=['needs pass, fail']),
    case('report_markdown', {'hosts': [], 'summary': dict(SUMMARY, hosts='one')}, arg='the input (report)',
         says=['TypeError'], fallback=True),
    # report_html.py: the checks of gpunet.rdma.report_markdown
    case('report_html', 'report', arg='the input', says=['output of gpunet.rdma.fleet_report', "got str 'report'"]),
    case('report_html', {'hosts': [], 'summary': 'all pass'}, arg='the input.summary', says=['must be a dict']),
    case('report_html', {'hosts': {}, 'summary': SUMMARY}, arg='the input.hosts',
         says=['must be a list of host records']),
    case('report_html', {'hosts': ['h1'], 'summary': SUMMARY}, arg='the input.hosts[0]',
         says=['must be a dict (a host record of gpunet.rdma.fleet_report)']),
    case('report_html', {'hosts': [], 'summary': SUMMARY}, '90%', arg='min_line_rate_pct',
         says=['must be a number']),
    case('report_html', {'hosts': [], 'summary': SUMMARY}, -5, arg='min_line_rate_pct',
         says=['must be a percentage between 1 and 100', 'got -5']),
    case('report_html', {'hosts': [], 'summary': SUMMARY}, 'many', 2, arg='the input',
         says=['too many positional arguments']),
    # spiderpool.py
    case('spiderpool', 'roce-1', 'roce_a100', SPIDER_OPTIONS, arg='the input',
         says=["must be a list of the group's hosts"]),
    case('spiderpool', [{'ports': []}], 'roce_a100', SPIDER_OPTIONS, arg='the input[0]', says=['needs host']),
    case('spiderpool', [dict(SPIDER_HOST, ports={'mlx5_0': {}})], 'roce_a100', SPIDER_OPTIONS,
         arg='the input[0].ports', says=['must be a list of rdma_ports records']),
    case('spiderpool', [SPIDER_HOST], ['roce_a100'], SPIDER_OPTIONS, arg='group', says=['must be a string']),
    case('spiderpool', [SPIDER_HOST], 'roce_a100', 'gpu_nics', arg='options', says=['must be a dict']),
    case('spiderpool', [SPIDER_HOST], 'roce_a100', dict(SPIDER_OPTIONS, gpu_nics='enp11s0f0np0'),
         arg='options.gpu_nics', says=['must be a list of {gpu, nic}']),
    case('spiderpool', [SPIDER_HOST], 'roce_a100', SPIDER_OPTIONS, 'values.yaml', arg='chart_values',
         says=['must be a dict']),
    # validate.py
    case('line_rate', ['#bytes'], 200, arg='the input', says=['must be a string (the output of ib_write_bw)']),
    case('line_rate', '', 'fast', arg='rate_gbps', says=['must be a number', "got str 'fast'"]),
    case('line_rate', '', 200, None, arg='min_pct', says=['must be a percentage above 0 and at most 100', 'got null']),
    case('line_rate', '', 200, -5, arg='min_pct', says=['must be a percentage above 0 and at most 100', 'got int -5']),
    case('pod_result', '', 200, '150', arg='min_pct', says=['must be a percentage above 0 and at most 100',
                                                            "got str '150'"]),
    case('line_rate', '', 200, rc='failed', arg='rc', says=['must be a whole number']),
    case('pod_result', {'log': ''}, 200, arg='the input', says=["must be a string (the client pod's log)"]),
    case('pod_result', '', [200], arg='rate_gbps', says=['must be a number']),
    case('pod_result', '', 200, min_memlock_kib='unlimited', arg='min_memlock_kib',
         says=['must be a whole number']),
    case('perftest_tests', PORT, arg='the input', says=['must be a list of rdma_ports records']),
    case('perftest_tests', ['mlx5_0'], arg='every port', says=['needs device and port']),
    case('perftest_tests', [PORT], 'fast', arg='line_rate_gbps', says=['must be a number']),
    case('perftest_tests', [dict(PORT, port='one')], arg='the input[0].port', says=['must be a whole number']),
    case('perftest_tests', [dict(PORT, rate_gbps='fast')], arg='the input[0].rate_gbps',
         says=['must be a number']),
    case('perftest_tests', [PORT], tool=5, arg='tool', says=['must be a string']),
    case('perftest_records', 'results', [PORT], 'h1', arg='the input',
         says=['must be a list of results of gpunet.rdma.perftest']),
    case('perftest_records', [PERFTEST], 'ibp12s0', 'h1', arg='ports', says=['must be a list']),
    case('perftest_records', [PERFTEST], [PORT], ['h1'], arg='host', says=['must be a string']),
    case('perftest_records', [PERFTEST], [PORT], 'h1', None, arg='kind', says=['must be a string']),
    case('perftest_records', [dict(PERFTEST, record='ok')], [PORT], 'h1', arg='the input[0].record',
         says=['must be a dict']),
    case('manifest_files', {'kind': 'Pod', 'metadata': {'name': 'p'}}, arg='the input',
         says=['must be a list of Kubernetes objects']),
    case('manifest_files', [], ['values.yaml'], arg='extra', says=['must be a dict']),
    case('manifest_files', [], {1: 'text'}, arg='extra', says=['file names (strings)', 'got the key int 1']),
    case('manifest_files', [{'kind': 'Pod', 'metadata': 'p'}], arg='every object',
         says=['needs kind and metadata.name']),
    case('validation_manifests', 'detail', None, {}, {'image': 'img'}, arg='the input',
         says=['must be a dict (a cluster stage result']),
    case('validation_manifests', {'resources': [{'group': 'ib_a100'}]}, None, {}, {'image': 'img'},
         arg='the input.resources[0]', says=['needs resource']),
    case('validation_manifests', None, ['roce'], {}, {'image': 'img'}, arg='spiderpool_result',
         says=['must be a dict']),
    case('validation_manifests', None, None, ['h1'], {'image': 'img'}, arg='ports_by_host',
         says=['must be a dict']),
    case('validation_manifests', None, None, {'h1': 'ibp12s0'}, {'image': 'img'}, arg='ports_by_host[h1]',
         says=['must be a list of rdma_ports records']),
    case('validation_manifests', None, None, {}, 'img', arg='options', says=['must be a dict']),
    case('validation_manifests', None, None, {}, {'image': 'img', 'extra_groups': [{'group': 'g'}]},
         arg='options.extra_groups[0]', says=['needs resources']),
    case('validation_manifests', None, None, {}, {'image': 'img', 'extra_groups': [
        {'group': 'g', 'resources': ['rdma/x']}]}, arg='options.extra_groups[0] (g)', says=['needs device']),
    case('validation_manifests', None, None, {}, {'image': 'img', 'fabrics': {'g': 'fabric'}},
         arg='options.fabrics[g]', says=['must be a dict']),
    case('pod_checks', ['log'], arg='the input', says=["must be a string (a validation pod's log)"]),
    case('pod_checks', '', 'pod', arg='pod', says=['must be a dict']),
    case('pod_checks', '', None, {'subnets': '172.16.11.0/24'}, arg='checks.subnets', says=['must be a list']),
    case('nccl_result', {'log': ''}, arg='the input', says=["must be a string (the NCCL job launcher's log)"]),
    case('nccl_result', '', 'fast', arg='line_rate_gbps', says=['must be a number']),
    case('nccl_result', '', 200, True, 'ninety', arg='min_busbw_pct', says=['must be a number']),
    case('validate_pairs', ['ib_a100'], {}, arg='the input', says=['must be a dict']),
    case('validate_pairs', {}, {}, {'explicit': [{'server': 'h1'}]}, arg='options.explicit[0]',
         says=['needs client, device']),
    case('validate_pairs', {}, {}, {'tools': ['ib_write_bw', 'iperf3']}, arg='options.tools',
         says=['iperf3, not a perftest tool']),
    case('validate_pairs', {}, {}, {'sample': 'some'}, arg='options.sample', says=['must be a whole number']),
    case('validate_pairs', {}, {}, {'ring': 'false'}, arg='options.ring', says=['must be true or false']),
    case('nccl_result', '', 200, 'maybe', arg='expect_gdr', says=['must be true or false']),
    case('hostdev_allocatable', {'group': 'g'}, [], arg='the input', says=['must be a list']),
    case('sriov_nodes', 'h1', HOSTVARS, [NODE], arg='the input', says=['must be a list of host names']),
    case('sriov_nodes', ['h1'], 'h1', [NODE], arg='hostvars', says=['must be a dict']),
    case('sriov_nodes', ['h1'], HOSTVARS, ['h1'], arg='nodes[0]', says=['must be a dict (a Node object)']),
    case('sriov_nodes', ['h1'], {'h1': {'ansible_facts': {'gpunet_rdma_ledger': {'sriov': 'ok'}}}}, [NODE],
         arg='ledger of host h1, stage sriov', says=['must be a dict']),
    case('hostdev_allocatable', [{'group': 'g'}], [], arg='the input[0]', says=['needs mode']),
    case('perftest_records', [], [], 'h1', 'pair', ['server'], arg='extra', says=['must be a dict']),
    # ownership.py
    case('apply_plan', {'kind': 'NicClusterPolicy'}, [None], arg='the input', says=['must be a list']),
    case('apply_plan', [{'kind': 'NicClusterPolicy'}], [None], arg='the input[0]', says=['needs metadata']),
    case('apply_plan', [POLICY], 'none', arg='live', says=['must be a list']),
    case('gitops_kept', 'none', arg='the input', says=['must be a list']),
    case('gitops_kept', [{'kind': 'NicNodePolicy'}], arg='the input[0]', says=['needs metadata']),
    case('apply_plan', [POLICY], [None], 'gpunet.rdma', 'yes', arg='force', says=['must be true or false']),
    case('apply_plan', [POLICY], [{'kind': 'NicClusterPolicy', 'metadata': {'managedFields': [
         {'manager': 'kubectl', 'fieldsV1': ['f:spec']}]}}], arg='metadata.managedFields[0]',
         says=['is not a managedFields entry']),
    case('release_plan', ['deployed'], 'network-operator', 'v26.4.1', {}, arg='the input', says=['must be a dict']),
    case('release_plan', {}, 'network-operator', 'v26.4.1', 'nfd.enabled=true', arg='values',
         says=['must be a dict']),
    case('release_plan', {'name': 'r', 'chart': 'c-1', 'values': 'nfd: {}'}, 'c', '1', {'nfd': {}},
         arg='release r', says=['its values are not a map']),
]


def _id(index, item):
    return '%03d-%s-%s' % (index, item[0], item[4].replace(' ', '_'))


@pytest.mark.parametrize('name, value, args, kwargs, arg, says, fallback',
                         [pytest.param(*item, id=_id(index, item)) for index, item in enumerate(CASES)])
def test_a_bad_input_is_a_filter_error_naming_filter_and_argument(name, value, args, kwargs, arg, says, fallback):
    with pytest.raises(AnsibleFilterError) as error:
        FILTERS[name](value, *args, **kwargs)
    message = str(error.value)
    assert message.startswith(name + ': '), message
    assert arg in message, message
    for fragment in says:
        assert fragment in message, message
    # The explicit checks say what is wrong; only the marked cases may reach the wrapper's conversion.
    assert (FALLBACK in message) is fallback, message


def test_the_table_is_large_enough():
    assert len(CASES) >= 45


def test_every_filter_has_a_case():
    assert len(PLUGIN_FILES) >= 7
    without = sorted(set(FILTERS) - set(item[0] for item in CASES))
    assert without == [], 'filters without a bad-input case in test_bad_filter_inputs.py: %s' % ', '.join(without)
    unknown = sorted(set(item[0] for item in CASES) - set(FILTERS))
    assert unknown == [], 'cases for filters that no plugin file defines: %s' % ', '.join(unknown)
