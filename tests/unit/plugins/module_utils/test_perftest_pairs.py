# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Cross-node pairs from the inventory: a ring per rail within each group, samples, listed pairs, latency folding.

The ports are what discovery reads from the lab's sysfs trees (lab/hardware): the V100 nodes' two IB rails, the
A100 nodes' one ACTIVE IB port, the RoCE node's eight GPU-affine rails.
"""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.filter.validate import rdma_perftest_records, rdma_validate_pairs
from ansible_collections.gpunet.rdma.plugins.module_utils.validation._perftest import RailError, fold_latency, node_rails, ring_pairs
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import SysfsReader


@pytest.fixture(scope='module')
def profiles(tmp_path_factory):
    """rdma_ports of each lab hardware profile, as discovery reads them from its sysfs tree; ``roce_down``: the RoCE
    node with its middle PF mlx5_3 uncabled (its VFs of mlx5_0 still up)."""
    import copy
    import os
    import sysfs_fixture
    hardware = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'lab', 'hardware')
    ports = {}
    for name in ('v100', 'a100', 'roce_a100', 'h100', 'roce_down'):
        root = tmp_path_factory.mktemp(name)
        profile = copy.deepcopy(sysfs_fixture.load_profile(os.path.join(hardware, name.replace('_down', '_a100')
                                                                        + '.yml')))
        for device in profile['devices']:
            if name == 'roce_down' and device['name'] == 'mlx5_3':
                device['ports'][0].update(state='DOWN', phys_state='Disabled')
        sysfs_fixture.build(profile, str(root))
        ports[name], ports[name + '-devices'] = SysfsReader(str(root)).read()
    return ports


def fabric(name, link_layer, rate, hosts, **validation):
    return {'name': name, 'link_layer': link_layer, 'line_rate_gbps': rate, 'hosts': hosts,
            'validation': validation}


def names(rails):
    return [p['device'] if p else None for p in rails]


def test_rails_are_the_physical_functions_ports_in_pci_order(profiles):
    assert names(node_rails(profiles['v100'], 'InfiniBand')) == ['mlx5_0', 'mlx5_1']
    assert names(node_rails(profiles['a100'], 'InfiniBand')) == ['mlx5_1']
    # mlx5_0 (0000:0c:00.0) is an uncabled Ethernet port: its rail is a gap, the bond (0000:3b:00.0) stays rail 1
    assert names(node_rails(profiles['a100'], 'Ethernet')) == [None, 'mlx5_bond_0']
    # The RoCE node's two SR-IOV VFs of mlx5_0 (mlx5_8, mlx5_9) share its cable: no rails of their own, whether the
    # ports say so (virtual_function) or the devices do.
    roce = ['mlx5_%d' % i for i in range(8)]
    assert names(node_rails(profiles['roce_a100'], 'Ethernet')) == roce
    vfs = [d['device'] for d in profiles['roce_a100-devices'] if d.get('virtual_function')]
    assert vfs == ['mlx5_8', 'mlx5_9']
    bare = [dict((k, v) for k, v in p.items() if k != 'virtual_function') for p in profiles['roce_a100']]
    assert names(node_rails(bare, 'Ethernet', virtual_functions=vfs)) == roce


def test_a_down_middle_port_leaves_a_gap_and_the_rails_after_it_stay(profiles):
    """Rail = PCI order of the PFs' ports, ACTIVE or not: mlx5_3 down does not move mlx5_4..7 to rails 3..6."""
    assert names(node_rails(profiles['roce_down'], 'Ethernet')) == [
        'mlx5_0', 'mlx5_1', 'mlx5_2', None, 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7']
    # no VF fills the gap, even with every PF down
    down = [dict(p, state='DOWN') if not p['virtual_function'] else p for p in profiles['roce_a100']]
    assert node_rails(down, 'Ethernet') == [None] * 8
    hosts = ['r1', 'r2', 'r3']
    ports = {'r1': profiles['roce_a100'], 'r2': profiles['roce_down'], 'r3': profiles['roce_a100']}
    pairs = ring_pairs({'roce_a100': fabric('roce_a100', 'Ethernet', 100, hosts)}, ports)
    by_rail = {}
    for pair in pairs:
        by_rail.setdefault(pair['rail'], []).append(pair)
    assert sorted(by_rail) == list(range(8))
    # rail 3: r2's port is down, so r1 and r3 make the one pair; every other rail is a ring of three
    assert [(p['client'], p['server']) for p in by_rail[3]] == [('r1', 'r3')]
    assert all(len(by_rail[r]) == 3 for r in range(8) if r != 3)
    # every pair of rail i is mlx5_i on both sides, named by its PCI function
    for rail, members in by_rail.items():
        assert set((p['device'], p['client_device']) for p in members) == {('mlx5_%d' % rail, 'mlx5_%d' % rail)}
    assert [by_rail[r][0]['rail_name'] for r in range(8)] == [
        '0000:0b:00.0', '0000:0c:00.0', '0000:0d:00.0', '0000:0e:00.0', '0000:0f:00.0', '0000:10:00.0',
        '0000:11:00.0', '0000:12:00.0']
    assert not [p for p in pairs if {p['device'], p['client_device']} & {'mlx5_8', 'mlx5_9'}]


def test_rails_named_by_the_fabric(profiles):
    named = ['mlx5_1', ['mlx5_9', 'mlx5_0'], 'mlx5_7', {'device': 'mlx5_0', 'port': 2}]
    rails = node_rails(profiles['v100'], 'InfiniBand', named)
    assert [p['device'] if p else None for p in rails] == ['mlx5_1', 'mlx5_0', None, None]
    # a named rail whose port is down is a gap
    assert names(node_rails(profiles['roce_down'], 'Ethernet', ['mlx5_2', 'mlx5_3', 'mlx5_4'])) == [
        'mlx5_2', None, 'mlx5_4']
    rails = ['mlx5_4', ['mlx5_20', 'mlx5_5'], {'device': 'mlx5_6', 'port': 1}]
    pairs = ring_pairs({'g': fabric('g', 'Ethernet', 100, ['r1', 'r2'], rails=rails)},
                       {'r1': profiles['roce_a100'], 'r2': profiles['roce_down']})
    assert [(p['rail'], p['rail_name'], p['device']) for p in pairs] == [
        (0, 'mlx5_4', 'mlx5_4'), (1, 'mlx5_20|mlx5_5', 'mlx5_5'), (2, 'mlx5_6/1', 'mlx5_6')]


def test_a_vf_named_as_a_rail_is_refused(profiles):
    with pytest.raises(RailError, match=r'validation.rails\[1\] \(mlx5_8\) names mlx5_8, an SR-IOV virtual function'):
        node_rails(profiles['roce_a100'], 'Ethernet', ['mlx5_0', 'mlx5_8'])
    with pytest.raises(AnsibleFilterError, match=r'validate_pairs: .*group g, host r1: validation.rails\[0\] '
                                                 r'\(mlx5_9\|mlx5_1\) names mlx5_9'):
        rdma_validate_pairs({'g': fabric('g', 'Ethernet', 100, ['r1', 'r2'], rails=[['mlx5_9', 'mlx5_1']])},
                            {'r1': profiles['roce_a100'], 'r2': profiles['roce_a100']})


def test_two_nodes_make_one_pair_per_rail(profiles):
    pairs = ring_pairs({'ib_v100': fabric('ib_v100', 'InfiniBand', 100, ['v1', 'v2'])},
                       {'v1': profiles['v100'], 'v2': profiles['v100']})
    assert [(p['rail'], p['client'], p['server'], p['device'], p['client_device']) for p in pairs] == [
        (0, 'v1', 'v2', 'mlx5_0', 'mlx5_0'), (1, 'v1', 'v2', 'mlx5_1', 'mlx5_1')]
    assert all(p['line_rate_gbps'] == 100 and p['server_gid_index'] is None for p in pairs)  # InfiniBand: no -x


def test_a_ring_per_rail_with_each_sides_own_roce_gid(profiles):
    hosts = ['r1', 'r2', 'r3', 'r4']
    pairs = ring_pairs({'roce_a100': fabric('roce_a100', 'Ethernet', 100, hosts, max_latency_usec=5)},
                       dict((h, profiles['roce_a100']) for h in hosts),
                       {'devices': dict((h, profiles['roce_a100-devices']) for h in hosts)})
    assert len(pairs) == 8 * 4
    rail0 = [(p['client'], p['server']) for p in pairs if p['rail'] == 0]
    assert rail0 == [('r1', 'r2'), ('r2', 'r3'), ('r3', 'r4'), ('r4', 'r1')]
    first = pairs[0]
    # The lab's RoCE tables have gaps: mlx5_0's RoCE v2 entry of its IPv4 address is index 7, not 3.
    assert (first['device'], first['server_gid_index'], first['client_gid_index']) == ('mlx5_0', 7, 7)
    assert first['max_latency_usec'] == 5.0 and first['link_layer'] == 'Ethernet'


def test_nodes_without_a_rail_are_left_out_of_its_ring(profiles):
    degraded = [p for p in profiles['v100'] if p['device'] != 'mlx5_1']
    pairs = ring_pairs({'ib_v100': fabric('ib_v100', 'InfiniBand', 100, ['v1', 'v2', 'v3'])},
                       {'v1': profiles['v100'], 'v2': degraded, 'v3': profiles['v100']})
    assert [(p['rail'], p['client'], p['server']) for p in pairs] == [
        (0, 'v1', 'v2'), (0, 'v2', 'v3'), (0, 'v3', 'v1'), (1, 'v1', 'v3')]


def test_sample_is_the_same_every_run_and_the_seed_changes_it(profiles):
    hosts = ['r%d' % i for i in range(1, 9)]
    groups = {'roce_a100': fabric('roce_a100', 'Ethernet', 100, hosts, pair_sample=10)}
    ports = dict((h, profiles['roce_a100']) for h in hosts)
    first = ring_pairs(groups, ports)
    assert len(first) == 10 and first == ring_pairs(groups, ports)
    other = ring_pairs(groups, ports, {'seed': 'week-2'})
    assert len(other) == 10 and other != first
    assert len(ring_pairs(groups, ports, {'sample': 3})) == 3  # the role variable overrides the fabric
    # the sample keeps the plan's order (rail by rail, ring order)
    assert first == sorted(first, key=lambda p: (p['rail'], hosts.index(p['client'])))


def test_listed_pairs_first_and_not_repeated(profiles):
    groups = {'ib_v100': fabric('ib_v100', 'InfiniBand', 100, ['v1', 'v2'])}
    ports = {'v1': profiles['v100'], 'v2': profiles['v100']}
    pairs = ring_pairs(groups, ports, {'explicit': [
        {'server': 'v2', 'client': 'v1', 'device': 'mlx5_0', 'address': '192.0.2.2'},
        {'server': 'v1', 'client': 'v2', 'device': 'mlx5_1'}]})
    assert [(p['client'], p['server'], p['device'], p['rail'], p['group']) for p in pairs] == [
        ('v1', 'v2', 'mlx5_0', None, 'ib_v100'), ('v2', 'v1', 'mlx5_1', None, 'ib_v100'),
        ('v1', 'v2', 'mlx5_1', 1, 'ib_v100')]
    assert pairs[0]['address'] == '192.0.2.2'


def test_ring_false_and_hosts_outside_the_play(profiles):
    ports = {'v1': profiles['v100'], 'v2': profiles['v100'], 'v3': profiles['v100']}
    assert ring_pairs({'g': fabric('g', 'InfiniBand', 100, ['v1', 'v2'], ring=False)}, ports) == []
    assert len(ring_pairs({'g': fabric('g', 'InfiniBand', 100, ['v1', 'v2', 'v3'])}, ports, {'hosts': ['v1', 'v3']})) \
        == 2
    assert ring_pairs({'g': fabric('g', 'InfiniBand', 100, ['v1'])}, ports) == []


def test_the_filter_adds_each_sides_tests(profiles):
    pairs = rdma_validate_pairs({'g': fabric('g', 'InfiniBand', 100, ['v1', 'v2'], max_latency_usec=3)},
                                {'v1': profiles['v100'], 'v2': profiles['v100']},
                                {'tools': ['ib_write_bw', 'ib_write_lat']})
    assert pairs[0]['server_tests'] == [
        {'device': 'mlx5_0', 'port': 1, 'gid_index': None, 'tool': 'ib_write_bw'},
        {'device': 'mlx5_0', 'port': 1, 'gid_index': None, 'tool': 'ib_write_lat'}]
    assert pairs[0]['client_tests'] == [
        {'device': 'mlx5_0', 'port': 1, 'gid_index': None, 'tool': 'ib_write_bw', 'line_rate_gbps': 100.0},
        {'device': 'mlx5_0', 'port': 1, 'gid_index': None, 'tool': 'ib_write_lat', 'max_latency_usec': 3.0}]
    with pytest.raises(AnsibleFilterError, match='ib_write_bw2, not a perftest tool'):
        rdma_validate_pairs({}, {}, {'tools': ['ib_write_bw2']})


def test_every_groups_listed_pairs_whichever_host_plans(profiles):
    """The role plans once, on one host, whose rdma_validate_pairs is its own group's validation.pairs: another group's
    listed pairs must be planned all the same (the lab's ib_v100 pair went missing when an A100 node planned)."""
    v100 = fabric('ib_v100', 'InfiniBand', 100, ['v1', 'v2'],
                  pairs=[{'server': 'v1', 'client': 'v2', 'device': 'mlx5_0'}])
    a100 = fabric('ib_a100', 'InfiniBand', 200, ['a1', 'a2'], ring=False)
    ports = {'v1': profiles['v100'], 'v2': profiles['v100'], 'a1': profiles['v100'], 'a2': profiles['v100']}
    listed_by_a100 = [{'server': 'a2', 'client': 'a1', 'device': 'mlx5_1'}]
    for options in ({'explicit': listed_by_a100}, {'explicit': listed_by_a100, 'ring': False}):
        pairs = rdma_validate_pairs({'ib_v100': v100, 'ib_a100': a100}, ports, options)
        listed = [(p['client'], p['server'], p['device'], p['group']) for p in pairs if p['rail'] is None]
        assert listed == [('a1', 'a2', 'mlx5_1', 'ib_a100'), ('v2', 'v1', 'mlx5_0', 'ib_v100')]
        rings = [(p['client'], p['server'], p['device']) for p in pairs if p['rail'] is not None]
        assert rings == ([] if options.get('ring') is False else [('v1', 'v2', 'mlx5_0'), ('v1', 'v2', 'mlx5_1')])
    # the planning host's own list repeats its group's: planned once
    assert len([p for p in rdma_validate_pairs({'ib_v100': v100}, ports, {'explicit': v100['validation']['pairs']})
                if p['rail'] is None]) == 1
    with pytest.raises(AnsibleFilterError, match=r"validate_pairs: the input\[ib_v100\].validation.pairs"):
        rdma_validate_pairs({'ib_v100': dict(v100, validation={'pairs': [{'server': 'v1'}]})}, ports)


def result(tool, ok=True, problem=None, **record):
    return {'device': 'mlx5_0', 'port': 1, 'tool': tool, 'ok': ok, 'problem': problem, 'record': record}


def test_latency_folds_into_the_bandwidth_record_of_its_port():
    records = rdma_perftest_records(
        [result('ib_write_bw', average_gbps=94.71, line_rate_pct=94.7),
         result('ib_write_lat', ok=False, problem='typical latency 7.2 usec is above 5 usec', t_typical_usec=7.2,
                p99_usec=7.9)],
        [{'device': 'mlx5_0', 'port': 1, 'netdev': 'ibp94s0f0', 'link_layer': 'InfiniBand'}], 'v1', 'pair',
        {'server': 'v2', 'rail': 0, 'group': 'ib_v100', 'max_latency_usec': 5.0})
    assert len(records) == 1
    record = records[0]
    assert (record['kind'], record['server'], record['rail'], record['average_gbps']) == ('pair', 'v2', 0, 94.71)
    assert (record['latency_tool'], record['latency_usec'], record['latency_p99_usec'], record['latency_ok']) == (
        'ib_write_lat', 7.2, 7.9, False)
    assert record['ok'] is False and record['problem'] == 'typical latency 7.2 usec is above 5 usec'


def test_latency_alone_stays_a_record():
    records = fold_latency([{'device': 'mlx5_0', 'port': 1, 'tool': 'ib_read_lat', 'ok': True, 't_typical_usec': None,
                             't_avg_usec': 1.28}])
    assert records[0]['latency_usec'] == 1.28 and records[0]['latency_ok'] is True
