# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import json
import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.filter.report import FilterModule
from ansible_collections.gpunet.rdma.plugins.plugin_utils._fleet_report import render_json
from ansible_collections.gpunet.rdma.plugins.plugin_utils._ledger import record as rdma_ledger
from ansible_collections.gpunet.rdma.plugins.plugin_utils._report_html import render_html
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import SysfsReader

FILTERS = FilterModule().filters()
rdma_check = FILTERS['check']
rdma_fleet_report = FILTERS['fleet_report']
rdma_report_markdown = FILTERS['report_markdown']

GROUP_EXPECTATIONS = {
    'ib_v100': {'link_layer': 'InfiniBand', 'min_active_ports': 2, 'min_rate_gbps': 100},
    'ib_a100': {'link_layer': 'InfiniBand', 'min_active_ports': 1, 'min_rate_gbps': 200},
}


def ports_of(profile, tmp_path, hardware):
    return SysfsReader(hardware(profile, tmp_path / profile)).read()[0]


def check(ports, groups, expectation=None):
    return rdma_check(ports, expectation=expectation, group_names=groups, group_expectations=GROUP_EXPECTATIONS)


def test_v100_passes(tmp_path, hardware):
    result = check(ports_of('v100', tmp_path, hardware), ['ib_v100'])
    assert result['verdict'] == 'pass'
    assert result['group'] == 'ib_v100'
    assert result['ok_ports'] == 2
    assert result['problems'] == []
    assert [p['verdict'] for p in result['ports']] == ['ok', 'ok']


def test_a100_passes_with_uncabled_ethernet_port_and_bond(tmp_path, hardware):
    result = check(ports_of('a100', tmp_path, hardware), ['gpu', 'ib_a100'])
    assert result['verdict'] == 'pass'
    assert result['group'] == 'ib_a100'
    assert [(p['device'], p['verdict']) for p in result['ports']] == [
        ('mlx5_0', 'ignored'), ('mlx5_1', 'ok'), ('mlx5_bond_0', 'ignored')]
    assert result['ports'][0]['note'] == 'link layer Ethernet, expected InfiniBand'


@pytest.mark.parametrize('state, physical_state, hint', [
    ('DOWN', 'Disabled', 'not cabled'),
    ('DOWN', 'Polling', 'no link partner'),
    ('ARMED', 'LinkUp', 'armed'),
    ('DOWN', 'Phy Test', 'port not ACTIVE'),
])
def test_down_port_hints(state, physical_state, hint):
    port = {'device': 'mlx5_0', 'port': 1, 'netdev': 'ib0', 'state': state, 'physical_state': physical_state,
            'link_layer': 'InfiniBand', 'rate_gbps': 200}
    result = check([port], ['ib_a100'])
    assert result['verdict'] == 'fail'
    assert result['ports'][0]['verdict'] == 'down'
    assert hint in result['ports'][0]['note']


def test_degraded_v100_fails_with_subnet_manager_hint(tmp_path, hardware):
    result = check(ports_of('v100-degraded', tmp_path, hardware), ['ib_v100'])
    assert result['verdict'] == 'fail'
    assert result['ok_ports'] == 1
    assert result['problems'][0] == 'expected at least 2 ACTIVE InfiniBand ports >= 100 Gb/s, found 1'
    assert 'mlx5_1 port 1 (ibp94s0f1): INIT / LinkUp' in result['problems'][1]
    assert 'subnet manager' in result['problems'][1]


def test_a100_card_on_a_v100_expectation_is_slow_not_ok(tmp_path, hardware):
    """A port ACTIVE below the expected rate does not count (e.g. negotiated at a lower speed)."""
    result = check(ports_of('v100', tmp_path, hardware), ['ib_a100'])
    assert result['verdict'] == 'fail'
    assert [p['verdict'] for p in result['ports']] == ['slow', 'slow']
    assert 'below the expected 200 Gb/s' in result['ports'][0]['note']


def test_host_expectation_overrides_group(tmp_path, hardware):
    ports = ports_of('a100', tmp_path, hardware)
    result = check(ports, ['ib_a100'], expectation={'link_layer': 'Ethernet', 'min_active_ports': 1})
    assert result['verdict'] == 'pass'
    assert [p['verdict'] for p in result['ports']] == ['down', 'ignored', 'ok']


def test_required_devices(tmp_path, hardware):
    ports = ports_of('a100', tmp_path, hardware)
    result = check(ports, ['ib_a100'], expectation={'link_layer': 'InfiniBand', 'devices': ['mlx5_0', 'mlx5_1']})
    assert result['verdict'] == 'fail'
    assert result['problems'] == ['mlx5_0 has no port that meets the expectation']


def test_no_expectation_is_unchecked(tmp_path, hardware):
    result = check(ports_of('v100', tmp_path, hardware), ['cpu_nodes'])
    assert result['verdict'] == 'unchecked'
    assert result['group'] == 'cpu_nodes'
    assert result['expectation'] is None


def test_host_without_ports_fails_its_expectation():
    result = check([], ['ib_v100'])
    assert result['verdict'] == 'fail'
    assert result['problems'][0] == 'no RDMA port found'


def test_ungrouped_host():
    assert check([], [])['group'] == 'ungrouped'


@pytest.mark.parametrize('expectation, message', [
    ({'min_ports': 2}, 'unknown keys min_ports'),
    ({'link_layer': 'IB'}, 'link_layer must be one of InfiniBand, Ethernet'),
    ({'min_active_ports': -1}, 'min_active_ports must be a whole number'),
    ({'min_active_ports': True}, 'min_active_ports must be a whole number'),
    ({'min_rate_gbps': 'fast'}, 'min_rate_gbps must be a number'),
    (['InfiniBand'], 'must be a dict'),
])
def test_bad_expectation_is_a_clear_error(expectation, message):
    with pytest.raises(AnsibleFilterError, match=message):
        check([], ['ib_v100'], expectation=expectation)


def _fleet(tmp_path, hardware, ledgers=None):
    results = []
    for host, profile, group in (('lab-v100-1', 'v100', 'ib_v100'), ('lab-a100-1', 'a100', 'ib_a100'),
                                 ('lab-v100-9', 'v100-degraded', 'ib_v100')):
        result = check(ports_of(profile, tmp_path, hardware), [group])
        result.update({'host': host, 'source': 'sysfs', 'devices': []})
        results.append(result)
    return rdma_fleet_report(results, ['lab-v100-1', 'lab-a100-1', 'lab-v100-9', 'lab-gone'], ledgers)


def ledger(**stages):
    """A host's gpunet_rdma_ledger built with the rdma_ledger filter, as the roles build it."""
    result = {}
    for stage, fields in stages.items():
        result = rdma_ledger(result, stage, **fields)
    return result


def test_fleet_report_summary(tmp_path, hardware):
    report = _fleet(tmp_path, hardware)
    assert report['summary'] == {'hosts': 4, 'pass': 2, 'fail': 1, 'unchecked': 0, 'no_facts': 1, 'ports': 7,
                                 'active_ports': 5, 'vf_ports': 0, 'failed_hosts': ['lab-gone', 'lab-v100-9'],
                                 'stages': {'ok': 0, 'changed': 0, 'pending': 0, 'failed': 0, 'skipped': 0},
                                 'pending': {}, 'failed_stages': [], 'driver_kernel_mismatch_hosts': [],
                                 'cluster_problem_nodes': [], 'validation_failed': [], 'validation_failed_hosts': [],
                                 'firmware_drift_hosts': [], 'nccl_failed': [], 'pod_checks_failed': [],
                                 'out_of_scope_hosts': [], 'load_tests_not_asked_hosts': []}
    assert [h['host'] for h in report['hosts']] == ['lab-a100-1', 'lab-gone', 'lab-v100-1', 'lab-v100-9']
    gone = report['hosts'][1]
    assert gone['verdict'] == 'no facts' and 'unreachable' in gone['problems'][0]
    assert gone['stages'] == [] and report['controller'] == []


def test_markdown_report(tmp_path, hardware):
    text = rdma_report_markdown(_fleet(tmp_path, hardware))
    lines = text.splitlines()
    assert lines[0] == '# RDMA fleet report'
    assert '4 hosts: 2 pass, 1 fail, 0 unchecked, 1 without facts. 7 ports, 5 ACTIVE.' in lines
    assert ('| host | group | device | port | netdev | state | link layer | rate | RoCE v2 GID (IPv4) | verdict |'
            in lines)
    # mlx5_0's netdev has no IPv4 address; bond0's is 10.96.83.26 (RoCE v2 at index 3)
    assert ('| lab-a100-1 | ib_a100 | mlx5_0 | 1 | enp12s0np0 (Down) | DOWN / Disabled | Ethernet | 10 Gb/s | '
            'none: no IPv4 address on enp12s0np0 | ignored: link layer Ethernet, expected InfiniBand |') in lines
    assert ('| lab-a100-1 | ib_a100 | mlx5_bond_0 | 1 | bond0 (Up) | ACTIVE / LinkUp | Ethernet | 10 Gb/s | '
            '3 (10.96.83.26) | ignored: link layer Ethernet, expected InfiniBand |') in lines
    assert ('| lab-v100-9 | ib_v100 | at least 2 ACTIVE InfiniBand ports >= 100 Gb/s | 1 | sysfs | - | FAIL |') in lines
    assert not [line for line in lines if line.startswith('Pending:')]
    assert 'Failed hosts: lab-gone, lab-v100-9.' in lines
    for section in ('## Stages', '## Firmware', '## Drivers', '## Container runtime', '## Kubernetes', '## Groups'):
        assert section not in text  # no stage ran, no fabric given
    failing = text.split('## Hosts that miss expectations')[1]
    assert '- **lab-v100-9** (ib_v100):' in failing
    assert '- **lab-gone** (no group):' in failing
    assert 'lab-v100-1' not in failing


def test_markdown_is_stable_and_escapes_pipes(tmp_path, hardware):
    report = _fleet(tmp_path, hardware)
    report['hosts'][0]['ports'][0]['netdev'] = 'odd|name'
    assert rdma_report_markdown(report) == rdma_report_markdown(json.loads(render_json(report)))
    assert 'odd\\|name' in rdma_report_markdown(report)


def test_markdown_needs_a_report():
    with pytest.raises(AnsibleFilterError, match='fleet_report'):
        rdma_report_markdown({'hosts': []})


def test_fleet_report_rejects_results_without_host():
    with pytest.raises(AnsibleFilterError, match='"host" and "verdict"'):
        rdma_fleet_report([{'verdict': 'pass'}], ['a'])


def test_fleet_report_rejects_a_malformed_ledger(tmp_path, hardware):
    with pytest.raises(AnsibleFilterError, match='fleet_report: ledgers: .*lacks'):
        _fleet(tmp_path, hardware, {'lab-v100-1': {'firmware': {'stage': 'firmware', 'status': 'ok'}}})


def _discovery(host):
    discovery = check([], [])
    discovery.update({'host': host, 'source': 'sysfs', 'devices': []})
    return discovery


# ------------------------------------------------------------------ any stage, from the ledger only

def test_a_stage_the_report_does_not_know_shows_up():
    """A stage added later (here one named nothing the report knows) is shown from its envelope alone."""
    ledgers = {'n1': ledger(pvrdma={'changed': True, 'problems': ['0 ACTIVE PVRDMA device(s), 1 expected']},
                            brand_new_stage={'pending': [{'action': 'reboot', 'allowed': False, 'reason': 'new kernel'}]}),
               'localhost': ledger(gpu_operator={'changed': True, 'detail': {'values': {}}})}
    report = rdma_fleet_report([_discovery('n1')], ['n1'], ledgers)
    assert report['summary']['pending'] == {'reboot': ['n1']}
    assert report['summary']['stages'] == {'ok': 0, 'changed': 2, 'pending': 1, 'failed': 0, 'skipped': 0}
    text = rdma_report_markdown(report)
    assert '| n1 | brand_new_stage | pending | no | reboot (waits for permission) | - |' in text
    assert '| n1 | pvrdma | changed | yes | - | 0 ACTIVE PVRDMA device(s), 1 expected |' in text
    assert '| controller | gpu_operator | changed | yes | - | - |' in text
    assert '| n1 | ungrouped | none | - | sysfs | brand_new_stage pending (changed: pvrdma) | UNCHECKED |' in text
    assert 'Pending: reboot pending on n1.' in text


def test_failed_stages_are_named():
    ledgers = {'n1': ledger(validation={'failed': True, 'problems': ['mlx5_0 below 90 %']})}
    report = rdma_fleet_report([_discovery('n1')], ['n1'], ledgers)
    assert report['summary']['failed_stages'] == ['n1 validation']
    assert 'Pending: stage failed on n1 validation.' in rdma_report_markdown(report)


def test_groups_section_from_the_fabrics():
    fabrics = {'ib_h100': {'name': 'ib_h100', 'generation': 'H100', 'link_layer': 'InfiniBand', 'line_rate_gbps': 400,
                           'rdma_resource': 'rdma/rdma_h100', 'kubernetes': 'shared_device_plugin', 'hosts': ['n1']}}
    report = rdma_fleet_report([_discovery('n1')], ['n1'], {}, fabrics)
    assert report['groups'] == [{'group': 'ib_h100', 'generation': 'H100', 'link_layer': 'InfiniBand',
                                 'line_rate_gbps': 400, 'rdma_resource': 'rdma/rdma_h100',
                                 'kubernetes': 'shared_device_plugin', 'hosts': 1, 'pass': 0}]
    assert ('| ib_h100 | H100 | InfiniBand | 400 Gb/s | rdma/rdma_h100 | shared_device_plugin | 1 | 0 |'
            in rdma_report_markdown(report))


# ------------------------------------------------------------------ firmware

def _module_result(device, pci, changes, pending, config):
    return {'item': {'device': device, 'pci_address': pci}, 'device': pci, 'changes': changes, 'pending': pending,
            'config': config, 'changed': bool(changes)}


LINK_ETH_TO_IB = {'LINK_TYPE_P1': {'default': 'IB(1)', 'current': 'ETH(2)', 'next_boot': 'IB(1)', 'read_only': False},
                  'SRIOV_EN': {'default': 'False(0)', 'current': 'False(0)', 'next_boot': 'False(0)',
                               'read_only': False}}
LINK_IB = {'LINK_TYPE_P1': {'default': 'IB(1)', 'current': 'IB(1)', 'next_boot': 'IB(1)', 'read_only': False}}

rdma_firmware_result = FILTERS['firmware_result']


def test_firmware_result_records_changes_and_pending():
    record = rdma_firmware_result([
        _module_result('mlx5_0', '0000:0c:00.0', {'LINK_TYPE_P1': {'before': 'ETH(2)', 'after': 'IB(1)'}},
                       ['LINK_TYPE_P1'], LINK_ETH_TO_IB),
        _module_result('mlx5_1', '0000:8d:00.0', {}, [], LINK_IB),
    ], 'lab-a100-1', 'none', ['LINK_TYPE_P1'])
    assert record['changed'] == ['mlx5_0 LINK_TYPE_P1']
    assert record['pending'] == ['mlx5_0 LINK_TYPE_P1']
    assert record['reboot_required'] is True and record['activated'] is False
    assert record['devices'][0]['values'] == {'LINK_TYPE_P1': {'current': 'ETH(2)', 'next_boot': 'IB(1)'}}
    assert record['devices'][1]['values'] == {'LINK_TYPE_P1': {'current': 'IB(1)', 'next_boot': 'IB(1)'}}


def test_firmware_result_after_activation_keeps_what_was_set():
    before = rdma_firmware_result([_module_result('mlx5_0', '0000:0c:00.0', {'LINK_TYPE_P1': {
        'before': 'ETH(2)', 'after': 'IB(1)'}}, ['LINK_TYPE_P1'], LINK_ETH_TO_IB)], 'n', 'reboot', ['LINK_TYPE_P1'])
    after = rdma_firmware_result([_module_result('mlx5_0', '0000:0c:00.0', {}, [], LINK_IB)], 'n', 'reboot',
                                 ['LINK_TYPE_P1'], before)
    assert after['activated'] is True
    assert after['changed'] == ['mlx5_0 LINK_TYPE_P1']
    assert after['pending'] == [] and after['reboot_required'] is False


def _firmware_ledger(record, changed):
    pending = [{'action': 'reboot', 'allowed': False, 'reason': ', '.join(record['pending'])}] if record['pending'] else []
    return ledger(firmware={'changed': changed, 'pending': pending, 'detail': record})


def test_report_shows_firmware_state_and_pending_waits_across_runs():
    first_run = rdma_firmware_result([_module_result('mlx5_0', '0000:0c:00.0', {'LINK_TYPE_P1': {
        'before': 'ETH(2)', 'after': 'IB(1)'}}, ['LINK_TYPE_P1'], LINK_ETH_TO_IB)], 'n1', 'none', ['LINK_TYPE_P1'])
    second_run = rdma_firmware_result([_module_result('mlx5_0', '0000:0c:00.0', {}, ['LINK_TYPE_P1'],
                                                      LINK_ETH_TO_IB)], 'n1', 'none', ['LINK_TYPE_P1'])
    first = rdma_fleet_report([_discovery('n1')], ['n1'], {'n1': _firmware_ledger(first_run, True)})
    second = rdma_fleet_report([_discovery('n1')], ['n1'], {'n1': _firmware_ledger(second_run, False)})
    third = rdma_fleet_report([_discovery('n1')], ['n1'], {'n1': _firmware_ledger(second_run, False)})
    assert render_json(second) == render_json(third)  # a run that changes nothing writes the same report
    assert first['hosts'][0]['firmware'] == second['hosts'][0]['firmware']
    assert first['summary']['pending'] == {'reboot': ['n1']}
    text = rdma_report_markdown(first)
    assert '| n1 | ungrouped | none | - | sysfs | firmware pending | UNCHECKED |' in text
    assert '| n1 | firmware | pending | yes | reboot (waits for permission) | - |' in text
    assert 'Pending: reboot pending on n1.' in text
    assert ('| n1 | mlx5_0 | 0000:0c:00.0 | LINK_TYPE_P1 | ETH(2) | IB(1) | pending: active after a firmware reset '
            'or reboot |') in text


def test_report_of_activated_firmware():
    record = rdma_firmware_result([_module_result('mlx5_1', '0000:8d:00.0', {}, [], LINK_IB)], 'n1', 'reboot',
                                  ['LINK_TYPE_P1'])
    text = rdma_report_markdown(rdma_fleet_report([_discovery('n1')], ['n1'], {'n1': _firmware_ledger(record, False)}))
    assert '| n1 | mlx5_1 | 0000:8d:00.0 | LINK_TYPE_P1 | IB(1) | IB(1) | active |' in text
    assert '| n1 | ungrouped | none | - | sysfs | 1 as wanted | UNCHECKED |' in text


def test_report_shows_the_container_runtime_state():
    runtime = {'host': 'n1', 'engine': 'containerd', 'memlock': 'unlimited', 'spec': '/etc/containerd/x.json',
               'runtimes': ['nvidia', 'runc'], 'restart_pending': True}
    ledgers = {'n1': ledger(runtime={'changed': True, 'detail': runtime, 'pending': [
        {'action': 'runtime_restart', 'allowed': True, 'reason': 'containerd reads the memlock limit at start'}]})}
    report = rdma_fleet_report([_discovery('n1')], ['n1'], ledgers)
    assert report['hosts'][0]['runtime'] == {'engine': 'containerd', 'memlock': 'unlimited',
                                             'runtimes': ['nvidia', 'runc'], 'restart_pending': True}
    assert report['summary']['pending'] == {'runtime_restart': ['n1']}
    text = rdma_report_markdown(report)
    assert '| n1 | containerd | unlimited | nvidia, runc | restart pending |' in text
    assert 'Pending: container runtime restart pending on n1.' in text
    assert '| n1 | runtime | pending | yes | runtime_restart | - |' in text


# ------------------------------------------------------------------ drivers

def _driver_records(host, **changes):
    ofed = {'host': host, 'source': 'mlnx_iso', 'kernel': '5.15.0-105-generic', 'ofed_version': '24.01-0.3.3.1',
            'wanted_version': '24.01-0.3.3.1', 'kernel_mismatch': False, 'restart_pending': False,
            'missing_modules': [], 'devices': 2}
    netns = {'host': host, 'wanted': 'shared', 'live': 'shared', 'live_error': None, 'persisted': 'shared',
             'persisted_file': '/etc/modprobe.d/gpunet-rdma-netns.conf', 'reboot_pending': False}
    gpudirect = {'host': host, 'mode': 'host', 'load_skipped': False, 'persisted': ['nvidia_peermem'],
                 'modules': {'nvidia_peermem': {'installed': True, 'loaded': True}}, 'memory_peer_version': '1.3',
                 'gdrdrv_device': None, 'mode_from': 'nvidia_driver', 'nvidia_driver': 'host'}
    for key, value in changes.items():
        stage, field = key.split('__')
        {'ofed': ofed, 'netns': netns, 'gpudirect': gpudirect}[stage][field] = value
    return ofed, netns, gpudirect


def _drivers_report(*hosts):
    results, ledgers = [], {}
    for name, changes in hosts:
        results.append(_discovery(name))
        ofed, netns, gpudirect = _driver_records(name, **changes)
        ledgers[name] = ledger(
            ofed={'detail': ofed, 'pending': [{'action': 'driver_restart', 'allowed': False}] if ofed['restart_pending']
                  else []},
            netns={'detail': netns, 'pending': [{'action': 'netns_switch', 'allowed': True}] if netns['reboot_pending']
                   else []},
            gpudirect={'detail': gpudirect})
    return rdma_fleet_report(results, [name for name, _changes in hosts], ledgers)


def test_report_shows_the_driver_stack():
    report = _drivers_report(('n1', {}), ('n2', {'ofed__restart_pending': True, 'netns__live': 'exclusive',
                                                 'netns__reboot_pending': True}),
                             ('n3', {'ofed__kernel_mismatch': True, 'ofed__missing_modules': ['mlx5_ib'],
                                     'gpudirect__mode': 'gpu_operator'}))
    assert report['hosts'][0]['drivers'] == {
        'ofed': {'source': 'mlnx_iso', 'kernel': '5.15.0-105-generic', 'ofed_version': '24.01-0.3.3.1',
                 'wanted_version': '24.01-0.3.3.1', 'kernel_mismatch': False, 'restart_pending': False,
                 'missing_modules': [], 'devices': 2},
        'netns': {'wanted': 'shared', 'live': 'shared', 'persisted': 'shared', 'reboot_pending': False},
        'gpudirect': {'mode': 'host', 'load_skipped': False, 'persisted': ['nvidia_peermem'],
                      'loaded': ['nvidia_peermem'], 'memory_peer_version': '1.3', 'gdrdrv_device': None,
                      'mode_from': 'nvidia_driver', 'reason': None}}
    summary = report['summary']
    assert summary['pending'] == {'driver_restart': ['n2'], 'netns_switch': ['n2']}
    assert summary['driver_kernel_mismatch_hosts'] == ['n3']
    text = rdma_report_markdown(report)
    assert '| host | kernel | OFED | RDMA netns (live / persisted) | GPUDirect | status |' in text
    assert ('| n1 | 5.15.0-105-generic | mlnx_iso 24.01-0.3.3.1 | shared / shared | loaded nvidia_peermem, nv_mem 1.3 '
            '| as wanted |') in text
    assert ('| n2 | 5.15.0-105-generic | mlnx_iso 24.01-0.3.3.1 | exclusive / shared | loaded nvidia_peermem, '
            'nv_mem 1.3 | driver restart or reboot pending; netns shared after reboot |') in text
    assert ('| n3 | 5.15.0-105-generic | mlnx_iso 24.01-0.3.3.1; missing modules: mlx5_ib | shared / shared '
            '| GPU Operator | OFED has no modules for this kernel |') in text
    assert 'Pending: RDMA driver restart (openibd restart) pending on n2.' in text
    assert 'Pending: RDMA netns mode switch (rdma system set netns) pending on n2.' in text
    assert 'Pending: OFED needs a rebuild for the running kernel on n3.' in text


def test_report_of_an_inbox_host_in_a_container():
    report = _drivers_report(('lab', {'ofed__source': 'inbox', 'ofed__ofed_version': None, 'ofed__wanted_version': None,
                                      'ofed__devices': None, 'netns__live': None, 'netns__persisted': 'shared',
                                      'gpudirect__load_skipped': True,
                                      'gpudirect__persisted': ['nvidia_peermem', 'gdrdrv']}))
    text = rdma_report_markdown(report)
    assert ('| lab | 5.15.0-105-generic | inbox rdma-core | unknown / shared | persisted nvidia_peermem, gdrdrv '
            '(load skipped) | as wanted |') in text
    assert rdma_report_markdown(report) == rdma_report_markdown(json.loads(render_json(report)))


# ------------------------------------------------------------------ cluster (the controller's ledger)

def test_report_shows_the_cluster_stage():
    resources = [{'group': 'ib_v100', 'hosts': ['v1', 'v2'], 'resource': 'rdma/rdma_v100',
                  'if_names': ['ibp94s0f0', 'ibp94s0f1'], 'link_types': ['infiniband']}]
    rendered = {'mode': 'render', 'release': 'v26.4.1', 'manifest_dir': '/x/rdma-manifests', 'resources': resources}
    text = rdma_report_markdown(rdma_fleet_report([_discovery('v1')], ['v1'], {
        'localhost': ledger(network_operator={'changed': True, 'detail': rendered})}))
    assert 'NVIDIA Network Operator v26.4.1: helm values and objects rendered to /x/rdma-manifests.' in text
    assert '| rdma/rdma_v100 | ib_v100 | 2 | ibp94s0f0, ibp94s0f1 | infiniband |' in text
    assert '| controller | network_operator | changed | yes | - | - |' in text
    applied = dict(rendered, mode='apply', manifest_dir=None, nodes=[
        {'node': 'v1', 'group': 'ib_v100', 'resource': 'rdma/rdma_v100', 'mofed_wait': 'false', 'allocatable': '63',
         'ok': True, 'problem': None},
        {'node': 'v2', 'group': 'ib_v100', 'resource': 'rdma/rdma_v100', 'mofed_wait': 'true', 'allocatable': None,
         'ok': False, 'problem': 'mofed.wait=true'}])
    report = rdma_fleet_report([_discovery('v1')], ['v1'], {
        'localhost': ledger(network_operator={'detail': applied, 'problems': ['mofed.wait=true']})})
    assert report['summary']['cluster_problem_nodes'] == ['v2']
    text = rdma_report_markdown(report)
    assert '| v1 | ib_v100 | rdma/rdma_v100 | false | 63 | ok |' in text
    assert '| v2 | ib_v100 | rdma/rdma_v100 | true | - | mofed.wait=true |' in text
    assert 'Pending: RDMA resource not reported by Kubernetes on v2.' in text


def test_report_shows_spiderpool_next_to_the_network_operator():
    resources = [{'group': 'roce_a100', 'hosts': ['r1'], 'resource': 'spidernet.io/shared_cx5_gpu1', 'gpu': 1,
                  'if_names': ['enp11s0f0np0'], 'link_types': ['Ethernet'], 'pool': 'gpu1-net11',
                  'subnet': '172.16.0.0/16', 'network': 'spiderpool/gpu1-macvlan'}]
    rendered = {'mode': 'render', 'release': '1.2.2', 'manifest_dir': '/x/spiderpool', 'resources': resources}
    report = rdma_fleet_report([_discovery('r1')], ['r1'], {'localhost': ledger(spiderpool={'detail': rendered})})
    assert report['cluster'] is None and report['spiderpool']['resources'][0]['gpu'] == 1
    assert 'pool' not in report['spiderpool']['resources'][0]
    text = rdma_report_markdown(report)
    assert 'Spiderpool 1.2.2: helm values and macvlan networks rendered to /x/spiderpool.' in text
    assert ('| spidernet.io/shared_cx5_gpu1 | roce_a100 | 1 | 1 | enp11s0f0np0 | spiderpool/gpu1-macvlan | '
            '172.16.0.0/16 |') in text
    assert 'NVIDIA Network Operator' not in text
    applied = dict(rendered, mode='apply', manifest_dir=None, nodes=[
        {'node': 'r1', 'group': 'roce_a100', 'resource': 'spidernet.io/shared_cx5_gpu1', 'mofed_wait': None,
         'allocatable': None, 'ok': False, 'problem': 'no spidernet.io/shared_cx5_gpu1 in allocatable'}])
    report = rdma_fleet_report([_discovery('r1')], ['r1'], {'localhost': ledger(spiderpool={'detail': applied})})
    assert report['summary']['cluster_problem_nodes'] == ['r1']
    assert '| r1 | roce_a100 | spidernet.io/shared_cx5_gpu1 | - | - | no spidernet.io/shared_cx5_gpu1 in allocatable |' \
        in rdma_report_markdown(report)


def test_report_shows_the_line_rate_of_every_test(recorded):
    from ansible_collections.gpunet.rdma.plugins.filter.validate import rdma_line_rate, rdma_pod_result
    loopback = dict(rdma_line_rate(recorded('seed003-v100-ib-write-bw-loopback.txt'), 100, 90),
                    kind='loopback', host='v1', device='mlx5_1', port=1, netdev='ibp94s0f1')
    pair = dict(rdma_line_rate(recorded('seed003-a100-ib-write-bw-loopback.txt'), 200, 95),
                kind='pair', host='a2', server='a1', device='mlx5_1', port=1, netdev='ibp141s0')
    pod = dict(rdma_pod_result('ulimit -l: 64\n' + recorded('seed003-mr-failure.txt'), 100, 90),
               kind='pod', host='ib_v100', device='mlx5_0', port=1, netdev=None)
    ledgers = {'v1': ledger(validation={'detail': {'host': 'v1', 'tests': [loopback]}}),
               'a2': ledger(validation={'detail': {'host': 'a2', 'tests': [pair]}, 'failed': True}),
               'localhost': ledger(pod_validation={'detail': {'results': [pod]}, 'failed': True})}
    report = rdma_fleet_report([_discovery('v1'), _discovery('a2')], ['v1', 'a2'], ledgers)
    assert report['summary']['validation_failed'] == ['a2 mlx5_1', 'ib_v100 mlx5_0']
    assert report['summary']['validation_failed_hosts'] == ['a2', 'ib_v100']
    text = rdma_report_markdown(report)
    assert '| v1 | loopback | mlx5_1 | 1 | ibp94s0f1 | 94.71 | 100 Gb/s | 94.7 % | - | - | ok |' in text
    assert '| a2 | pair from a1 | mlx5_1 | 1 | ibp141s0 | 183.61 | 200 Gb/s | 91.8 % | - | - | 183.61 Gb/s is 91.8 %' \
        in text
    assert '| ib_v100 | pod | mlx5_0 | 1 | - | - | 100 Gb/s | - | - | 64 | ulimit -l is 64 KiB (the kernel default)' \
        in text
    assert 'Pending: bandwidth below the line rate threshold on a2 mlx5_1, ib_v100 mlx5_0.' in text
    assert '## Validation' not in rdma_report_markdown(rdma_fleet_report([_discovery('v1')], ['v1']))


def test_report_shows_nccl_in_pod_checks_and_hostdev_from_the_controllers_ledger():
    """The pod-level stage's NCCL runs, in-pod checks and hostdev rows reach the report and its summary."""
    nccl = [{'group': 'ib_v100', 'job': 'nccl-tests-ib-v100', 'state': 'Succeeded', 'ok': False,
             'problem': 'NET/Socket on v1, v2: NCCL fell back to TCP sockets', 'transport': 'Socket',
             'hosts': ['v1', 'v2'], 'gdr': None, 'busbw_gbs': 3.15, 'size_bytes': 8589934592, 'warnings': ['x']}]
    checks = [{'group': 'roce', 'pod': 'rdma-validate-roce-client', 'mode': 'spiderpool', 'ok': True, 'problem': None,
               'interfaces': [{'name': 'net1', 'addresses': ['172.16.11.10/24']}], 'rules': 1, 'routes': ['100'],
               'rdma': [{'device': 'mlx5_54', 'port': 1, 'state': 'ACTIVE', 'netdev': 'net1'}],
               'resources': {'spidernet.io/shared_cx5_gpu1': '1'}, 'injected': True, 'env': []}]
    rows = [{'node': 's2', 'group': 'ib_sriov', 'resource': 'nvidia.com/hostdev', 'allocatable': None, 'ok': False,
             'problem': 's2: no nvidia.com/hostdev in allocatable'}]
    ledgers = {'localhost': ledger(pod_validation={'detail': {'results': [], 'nccl': nccl, 'pod_checks': checks,
                                                              'allocatable': rows}, 'failed': True})}
    report = rdma_fleet_report([_discovery('v1')], ['v1'], ledgers)
    assert report['nccl'][0]['transport'] == 'Socket' and 'warnings' not in report['nccl'][0]
    assert report['pod_checks'][0]['injected'] is True and 'env' not in report['pod_checks'][0]
    assert report['summary']['nccl_failed'] == ['ib_v100'] and report['summary']['pod_checks_failed'] == ['s2']
    text = rdma_report_markdown(report)
    assert ('| ib_v100 | Succeeded | Socket | - | - | v1, v2 | - | 3.15 GB/s at 8 GiB | - | NET/Socket on '
            'v1, v2: NCCL fell back to TCP sockets |') in text
    assert ('| rdma-validate-roce-client | roce | spiderpool | net1 172.16.11.10/24 | 1 rules, tables 100 | '
            'mlx5_54/1 ACTIVE net1 | spidernet.io/shared_cx5_gpu1=1 (injected) | ok |') in text
    assert '| s2 | ib_sriov | nvidia.com/hostdev | - | s2: no nvidia.com/hostdev in allocatable |' in text
    assert 'Pending: NCCL not on RDMA or below its bus bandwidth on ib_v100.' in text
    assert 'Pending: in-pod checks failed on s2.' in text
    assert rdma_fleet_report([_discovery('v1')], ['v1'])['nccl'] is None


def test_check_hosts_in_one_call(tmp_path, hardware):
    from ansible_collections.gpunet.rdma.plugins.filter.report import rdma_check_hosts
    from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import SysfsReader
    ports, devices = SysfsReader(hardware('v100', tmp_path / 'v100')).read()
    hostvars = {
        'v1': {'rdma_discovery_facts': {'source': 'sysfs'}, 'group_names': ['gpu', 'ib_v100'],
               'ansible_facts': {'rdma_ports': ports, 'rdma_devices': devices}},
        'v2': {'rdma_discovery_facts': {'source': 'sysfs'}, 'group_names': ['ib_v100'],
               'rdma_discovery_expected_ports': {'min_active_ports': 3},
               'ansible_facts': {'rdma_ports': ports, 'rdma_devices': devices}},
        'c1': {'rdma_discovery_facts': {'source': 'sysfs'}, 'group_names': ['cpu'],
               'ansible_facts': {'rdma_ports': ports, 'rdma_devices': devices}},
        'gone': {'group_names': ['ib_v100']},
        'broken': {'rdma_discovery_facts': {'failed': True}, 'group_names': []},
    }
    fabrics = {'ib_v100': {'hosts': ['v1', 'v2', 'gone'], 'expected_ports': {
        'link_layer': 'InfiniBand', 'min_active_ports': 2, 'min_rate_gbps': 100, 'devices': []}}}
    results = rdma_check_hosts(['v1', 'v2', 'c1', 'gone', 'broken', 'unknown'], hostvars, fabrics)
    assert [(r['host'], r['group'], r['verdict'], r['source']) for r in results] == [
        ('v1', 'ib_v100', 'pass', 'sysfs'), ('v2', 'ib_v100', 'fail', 'sysfs'), ('c1', 'cpu', 'unchecked', 'sysfs')]
    assert results[0]['devices'] == devices
    report = rdma_fleet_report(results, ['v1', 'v2', 'c1', 'gone', 'broken'])
    assert report['summary']['failed_hosts'] == ['broken', 'gone', 'v2']


def test_out_of_scope_hosts_and_load_tests_not_asked(tmp_path, hardware):
    """The two records a default run leaves: a host out of scope (rdma_discovery's scope stage) and a host level
    without load tests (rdma_validate's not_asked); the Markdown and HTML renderings name both."""
    ledgers = {
        'lab-gone': ledger(scope={'status': 'skipped', 'detail': {'in_scope': False,
                                                                  'reason': 'in no GPU group (no gpunet_rdma_fabric)'}}),
        'lab-v100-1': ledger(validation={'status': 'skipped', 'detail': {
            'host': 'lab-v100-1', 'checked': False, 'load_tests': False, 'tests': [],
            'not_asked': 'bandwidth and latency tests'}}),
    }
    report = _fleet(tmp_path, hardware, ledgers)
    assert report['out_of_scope'] == [{'host': 'lab-gone', 'group': None,
                                       'reason': 'in no GPU group (no gpunet_rdma_fabric)'}]
    assert report['summary']['out_of_scope_hosts'] == ['lab-gone']
    assert report['summary']['load_tests_not_asked_hosts'] == ['lab-v100-1']
    assert report['validation'] == []
    text = rdma_report_markdown(report)
    assert '\n## Out of scope\n' in text and '| lab-gone | - | in no GPU group (no gpunet_rdma_fabric) |' in text
    validation = text.split('\n## Validation\n', 1)[1].split('\n## ', 1)[0]
    assert 'Bandwidth and latency tests not asked for on lab-v100-1' in validation
    assert '`gpunet_rdma_load_tests: true`' in validation
    html = render_html(report)
    assert '<section id="section-out-of-scope">' in html and '<tr data-host="lab-gone">' in html
    assert 'id="validation-not-asked">Bandwidth and latency tests not asked for on lab-v100-1' in html
    # a report without either has neither
    plain = _fleet(tmp_path / 'plain', hardware)
    assert '## Out of scope' not in rdma_report_markdown(plain) and 'section-out-of-scope' not in render_html(plain)
    assert 'not asked for on' not in rdma_report_markdown(plain)


HARDWARE = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'lab', 'hardware')
# The example inventory's RoCE group: eight GPU-affine PFs, two SR-IOV VFs of mlx5_0 (fabric sriov.num_vfs: 2).
ROCE = {'link_layer': 'Ethernet', 'min_active_ports': 8, 'min_rate_gbps': 100}


def roce_node(tmp_path, hardware, down=()):
    """The lab's RoCE node (lab/hardware/roce_a100.yml) with the PFs in ``down`` uncabled; its VFs stay up."""
    import copy
    import sysfs_fixture
    profile = copy.deepcopy(sysfs_fixture.load_profile(os.path.join(HARDWARE, 'roce_a100.yml')))
    for device in profile['devices']:
        if device['name'] in down:
            device['ports'][0].update(state='DOWN', phys_state='Disabled')
    return SysfsReader(hardware(profile, tmp_path / ('roce-' + '-'.join(down)))).read()


def test_a_pf_down_fails_min_active_ports_although_vfs_are_up(tmp_path, hardware):
    ports, devices = roce_node(tmp_path, hardware, down=('mlx5_3',))
    # ten ports, nine ACTIVE: without telling VFs apart the node would count 9 >= 8
    assert (len(ports), len([p for p in ports if p['state'] == 'ACTIVE'])) == (10, 9)
    result = rdma_check(ports, expectation=ROCE, devices=devices)
    assert result['verdict'] == 'fail' and result['ok_ports'] == 7
    assert result['problems'] == [
        'expected at least 8 ACTIVE Ethernet ports >= 100 Gb/s, found 7 on physical functions (the 2 ACTIVE SR-IOV '
        "VF ports mlx5_8 port 1, mlx5_9 port 1 do not count: a VF shares its PF's link)",
        'mlx5_3 port 1 (enp14s0f0np0): DOWN / Disabled: port disabled: not cabled, or disabled on the switch or in '
        'firmware']
    # each VF's port right after its PF's port, which lists them
    assert [(p['device'], p['verdict']) for p in result['ports']] == [
        ('mlx5_0', 'ok'), ('mlx5_8', 'vf'), ('mlx5_9', 'vf'), ('mlx5_1', 'ok'), ('mlx5_2', 'ok'), ('mlx5_3', 'down'),
        ('mlx5_4', 'ok'), ('mlx5_5', 'ok'), ('mlx5_6', 'ok'), ('mlx5_7', 'ok')]
    assert result['ports'][0]['vfs'] == ['mlx5_8', 'mlx5_9']
    assert result['ports'][1]['note'] == 'SR-IOV VF of mlx5_0: not counted (expectations count physical functions)'

    healthy_ports, healthy_devices = roce_node(tmp_path, hardware)
    results = [dict(result, host='roce-1', source='sysfs', devices=devices),
               dict(rdma_check(healthy_ports, expectation=ROCE), host='roce-2', source='sysfs', devices=healthy_devices)]
    assert results[1]['verdict'] == 'pass' and results[1]['ok_ports'] == 8
    report = rdma_fleet_report(results, ['roce-1', 'roce-2'])
    summary = report['summary']
    assert summary['failed_hosts'] == ['roce-1']
    assert (summary['ports'], summary['active_ports'], summary['vf_ports']) == (16, 15, 4)
    lines = rdma_report_markdown(report).splitlines()
    assert ("2 hosts: 1 pass, 1 fail, 0 unchecked, 0 without facts. 16 ports, 15 ACTIVE. 4 SR-IOV VF ports besides "
            "(never counted: a VF shares its PF's link).") in lines
    assert 'Failed hosts: roce-1.' in lines
    assert ('| roce-1 | ungrouped | mlx5_0 | 1 | enp11s0f0np0 (Up) | ACTIVE / LinkUp | Ethernet | 100 Gb/s | '
            '7 (172.16.11.11) | ok (SR-IOV VFs: mlx5_8, mlx5_9) |') in lines
    assert ('| roce-1 | ungrouped | mlx5_8 | 1 | enp11s0f0v0 (Up) | ACTIVE / LinkUp | Ethernet | 100 Gb/s | '
            '3 (172.16.11.21) | vf: SR-IOV VF of mlx5_0: not counted (expectations count physical functions) |') in lines


def test_vfs_never_satisfy_a_pf_expectation(tmp_path, hardware):
    ports, devices = roce_node(tmp_path, hardware)
    # facts cached before ports carried their SR-IOV role: the devices tell
    role = ('virtual_function', 'physical_function', 'physical_function_device', 'vfs')
    old = [dict((k, v) for k, v in p.items() if k not in role) for p in ports]
    pfs_down = [dict(p, state='DOWN', physical_state='Polling') if p['device'] in ('mlx5_0', 'mlx5_1') else p
                for p in old]
    result = rdma_check(pfs_down, expectation=dict(ROCE, min_active_ports=7), devices=devices)
    assert result['ok_ports'] == 6 and result['verdict'] == 'fail'
    assert [p['device'] for p in result['ports']][:3] == ['mlx5_0', 'mlx5_8', 'mlx5_9']
    assert result['problems'][0].startswith('expected at least 7 ACTIVE Ethernet ports >= 100 Gb/s, found 6 on physical '
                                            'functions (the 2 ACTIVE SR-IOV VF ports mlx5_8 port 1, mlx5_9 port 1 do')
    # a VF named among the required devices is refused, naming its PF
    named = rdma_check(ports, expectation=dict(ROCE, devices=['mlx5_1', 'mlx5_8']), devices=devices)
    assert named['verdict'] == 'fail'
    assert named['problems'] == ['mlx5_8 is an SR-IOV VF of mlx5_0: expectations count physical functions; name '
                                 'mlx5_0 in devices']
