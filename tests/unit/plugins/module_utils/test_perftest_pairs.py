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

from ansible_collections.gpunet.rdma.plugins.filter.rdma_validate import rdma_perftest_records, rdma_validate_pairs
from ansible_collections.gpunet.rdma.plugins.module_utils._perftest import fold_latency, node_rails, ring_pairs
from ansible_collections.gpunet.rdma.plugins.module_utils._rdma_inventory import SysfsReader


@pytest.fixture(scope='module')
def profiles(tmp_path_factory):
    """rdma_ports of each lab hardware profile, as discovery reads them from its sysfs tree."""
    import os
    import sysfs_fixture
    hardware = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'lab', 'hardware')
    ports = {}
    for name in ('v100', 'a100', 'roce_a100', 'h100'):
        root = tmp_path_factory.mktemp(name)
        sysfs_fixture.build(sysfs_fixture.load_profile(os.path.join(hardware, name + '.yml')), str(root))
        ports[name], ports[name + '-devices'] = SysfsReader(str(root)).read()
    return ports


def fabric(name, link_layer, rate, hosts, **validation):
    return {'name': name, 'link_layer': link_layer, 'line_rate_gbps': rate, 'hosts': hosts,
            'validation': validation}


def test_rails_are_the_active_ports_of_the_link_layer_in_device_order(profiles):
    assert [p['device'] for p in node_rails(profiles['v100'], 'InfiniBand')] == ['mlx5_0', 'mlx5_1']
    assert [p['device'] for p in node_rails(profiles['a100'], 'InfiniBand')] == ['mlx5_1']
    assert [p['device'] for p in node_rails(profiles['a100'], 'Ethernet')] == ['mlx5_bond_0']
    # The RoCE node's two SR-IOV VFs of mlx5_0 (mlx5_8, mlx5_9) share its cable: no rails of their own.
    vfs = [d['device'] for d in profiles['roce_a100-devices'] if d.get('virtual_function')]
    assert vfs == ['mlx5_8', 'mlx5_9']
    roce = [p['device'] for p in node_rails(profiles['roce_a100'], 'Ethernet', virtual_functions=vfs)]
    assert roce == ['mlx5_%d' % i for i in range(8)]


def test_rails_named_by_the_fabric(profiles):
    named = ['mlx5_1', ['mlx5_9', 'mlx5_0'], 'mlx5_7', {'device': 'mlx5_0', 'port': 2}]
    rails = node_rails(profiles['v100'], 'InfiniBand', named)
    assert [p['device'] if p else None for p in rails] == ['mlx5_1', 'mlx5_0', None, None]


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
