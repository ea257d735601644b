# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import json

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils._network_operator import (
    NetworkOperatorError,
    json_pointer,
    merge_tolerations,
    parse_release,
    release_gate,
    shared_device_plugin_config,
    stale_resource_patch,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._rdma_inventory import SysfsReader


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
