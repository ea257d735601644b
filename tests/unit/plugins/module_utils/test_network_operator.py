# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import json

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._network_operator import (
    NetworkOperatorError,
    json_pointer,
    merge_tolerations,
    parse_release,
    release_gate,
    shared_device_plugin_config,
    stale_resource_patch,
)
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import SysfsReader


def ports(profile, tmp_path, hardware):
    root = hardware(profile, tmp_path / profile)
    return SysfsReader(root).read()[0]


def test_one_resource_per_group_from_discovered_ports(tmp_path, hardware):
    config, text = shared_device_plugin_config([
        {'resource_name': 'rdma_v100', 'rdma_hca_max': 63, 'ports': ports('v100', tmp_path, hardware)},
        {'resource_name': 'rdma_a100', 'rdma_hca_max': 63, 'ports': ports('a100', tmp_path, hardware),
         'link_types': ['InfiniBand']},
    ])
    assert config['configList'] == [
        {'resourceName': 'rdma_v100', 'rdmaHcaMax': 63,
         'selectors': {'ifNames': ['ibp94s0f0', 'ibp94s0f1'], 'linkTypes': ['infiniband']}},
        {'resourceName': 'rdma_a100', 'rdmaHcaMax': 63,
         'selectors': {'ifNames': ['ibp141s0'], 'linkTypes': ['infiniband']}},
    ]
    assert json.loads(text) == config


def test_down_ports_and_other_link_layers_are_left_out(tmp_path, hardware):
    config, _text = shared_device_plugin_config([
        {'resource_name': 'rdma_a100', 'ports': ports('a100', tmp_path, hardware)}])
    # mlx5_0 is DOWN; the Ethernet bond is ACTIVE and counts when no link type is chosen.
    assert config['configList'][0]['selectors'] == {'ifNames': ['bond0', 'ibp141s0'],
                                                    'linkTypes': ['ether', 'infiniband']}


@pytest.mark.parametrize('group, message', [
    ({'resource_name': 'rdma/v100', 'ports': []}, r'must match \^\[a-zA-Z0-9_\]\+\$'),
    ({'resource_name': 'rdma_v100', 'ports': []}, 'selects no device'),
    ({'resource_name': 'rdma_v100', 'rdma_hca_max': 0,
      'ports': [{'state': 'ACTIVE', 'netdev': 'ib0', 'link_layer': 'InfiniBand'}]}, 'rdmaHcaMax must be a positive'),
])
def test_plugin_rules(group, message):
    with pytest.raises(NetworkOperatorError, match=message):
        shared_device_plugin_config([group])


def test_duplicate_resource():
    group = {'resource_name': 'rdma', 'ports': [{'state': 'ACTIVE', 'netdev': 'ib0', 'link_layer': 'InfiniBand'}]}
    with pytest.raises(NetworkOperatorError, match='defined twice'):
        shared_device_plugin_config([group, group])


def test_release_gates():
    assert parse_release('v25.1.0') == (25, 1, 0) and parse_release('26.4') == (26, 4, 0)
    release_gate({'tolerations': []}, 'v25.1.0')
    release_gate({'deploymentTolerations': [], 'global': {}}, 'v26.4.1')
    with pytest.raises(NetworkOperatorError, match=r'spec.deploymentTolerations needs Network Operator 25.7.0 or '
                                                   r'later; the chosen release is v25.1.0'):
        release_gate({'deploymentTolerations': []}, 'v25.1.0')
    with pytest.raises(NetworkOperatorError, match='spec.global needs Network Operator 26.4.0'):
        release_gate({'global': {}}, '25.10.0')
    with pytest.raises(NetworkOperatorError, match='not a version'):
        parse_release('latest')


def test_tolerations_merge_keeps_existing_and_never_duplicates():
    existing = [{'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}]
    wanted = [{'key': 'node.kubernetes.io/unschedulable', 'operator': 'Exists', 'effect': 'NoSchedule'},
              {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}]
    merged = merge_tolerations(existing, wanted)
    assert merged == existing + [wanted[0]]
    assert merge_tolerations(merged, wanted) == merged
    with pytest.raises(NetworkOperatorError, match='operator Exists takes no value'):
        merge_tolerations([], [{'key': 'a', 'operator': 'Exists', 'value': 'x'}])


def test_json_patch_paths_escape_slashes():
    assert json_pointer('status', 'capacity', 'rdma/rdma_v100') == '/status/capacity/rdma~1rdma_v100'
    assert json_pointer('a~b') == '/a~0b'
    status = {'capacity': {'rdma/rdma_v100': '63', 'cpu': '64'}, 'allocatable': {'rdma/rdma_v100': '63'}}
    assert stale_resource_patch(status, ['rdma/rdma_v100', 'rdma/hca_shared_devices_a']) == [
        {'op': 'remove', 'path': '/status/capacity/rdma~1rdma_v100'},
        {'op': 'remove', 'path': '/status/allocatable/rdma~1rdma_v100'}]


def test_node_policy_names_fit_the_operators_limit():
    from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._network_operator import (
        NODE_POLICY_NAME_MAX, node_policy_name)
    assert node_policy_name('ib_v100') == 'ib-v100'
    assert node_policy_name('RoCE.A100') == 'roce-a100'
    long_a = node_policy_name('infiniband_a100_80gb_sxm4_rack_twelve')
    long_b = node_policy_name('infiniband_a100_80gb_sxm4_rack_thirteen')
    # The v26.4.1 webhook refuses names over 30 characters (maxNicNodePolicyNameLength).
    assert NODE_POLICY_NAME_MAX == 30 and len(long_a) <= 30 and len(long_b) <= 30 and long_a != long_b
    assert long_a.startswith('infiniband-a100-80gb-')
    assert node_policy_name('infiniband_a100_80gb_sxm4_rack_twelve') == long_a  # stable across runs


def test_policy_layout():
    from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._network_operator import policy_layout
    assert policy_layout('v26.4.1')[0] == 'node'
    assert policy_layout('26.7.0', 'auto', None)[0] == 'node'
    assert policy_layout('v26.1.1')[0] == 'cluster'
    assert policy_layout('v26.4.1', False)[0] == 'cluster'
    assert policy_layout('v26.4.1', 'no')[0] == 'cluster'
    live = {'metadata': {'name': 'nic-cluster-policy'}, 'spec': {'ofedDriver': {'image': 'doca-driver'}}}
    assert policy_layout('v26.4.1', 'auto', live)[0] == 'cluster'
    assert policy_layout('v26.4.1', 'yes', live)[0] == 'node'
    with pytest.raises(NetworkOperatorError, match='need Network Operator 26.4.0 or later'):
        policy_layout('v25.10.0', True)


def test_group_names_that_cannot_be_label_values():
    from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._network_operator import node_selector
    assert node_selector('ib_v100') == ({'gpunet.rdma/group': 'ib_v100'}, True)
    assert node_selector('ib_v100', {'ib_v100': {'a/b': 'c'}}) == ({'a/b': 'c'}, False)
    with pytest.raises(NetworkOperatorError, match='set node_selectors._ib'):
        node_selector('_ib')
    with pytest.raises(NetworkOperatorError, match='node_label: .* is not a node label key'):
        node_selector('ib_v100', None, 'gpunet.rdma/')


def test_duplicate_policy_names_are_refused():
    from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._network_operator import nic_node_policies
    port = [{'state': 'ACTIVE', 'netdev': 'ib0', 'link_layer': 'InfiniBand'}]
    plugin = {'repository': 'r', 'image': 'k8s-rdma-shared-dev-plugin', 'version': 'v1'}
    with pytest.raises(NetworkOperatorError, match='groups ib_v100 and ib-v100 give the same NicNodePolicy name'):
        nic_node_policies('v26.4.1', [{'group': 'ib_v100', 'resource_name': 'a', 'ports': port},
                                      {'group': 'ib-v100', 'resource_name': 'b', 'ports': port}],
                          {'rdma_shared_device_plugin': plugin})
    with pytest.raises(NetworkOperatorError, match='resource a is defined twice'):
        nic_node_policies('v26.4.1', [{'group': 'g1', 'resource_name': 'a', 'ports': port},
                                      {'group': 'g2', 'resource_name': 'a', 'ports': port}],
                          {'rdma_shared_device_plugin': plugin})
