# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Network Operator objects for the lab groups and the example inventory, validated against both releases' CRDs."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.filter.rdma_ledger import rdma_fabrics
from ansible_collections.gpunet.rdma.plugins.filter.rdma_network_operator import (
    rdma_daemonsets_not_ready, rdma_network_operator, rdma_network_operator_groups, rdma_node_resources)
from ansible_collections.gpunet.rdma.plugins.module_utils._crd_schema import validate_object
from ansible_collections.gpunet.rdma.plugins.module_utils._rdma_inventory import SysfsReader

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
RELEASES = ['v25.1.0', 'v26.4.1']
with open(os.path.join(REPO, 'roles', 'network_operator', 'defaults', 'main.yml')) as _handle:
    DEFAULTS = yaml.safe_load(_handle)
PLUGIN = DEFAULTS['network_operator_rdma_shared_device_plugin']


def lab_fabric(group):
    with open(os.path.join(REPO, 'inventory', 'lab', 'group_vars', group + '.yml')) as handle:
        return yaml.safe_load(handle)['gpunet_rdma_fabric']


def groups_for(inventory_profiles, tmp_path, hardware, resources=None):
    """The role's collected groups for {group: [(host, hardware profile), ...]}, from the lab's fabrics and facts."""
    hostvars = {}
    for group, hosts in inventory_profiles.items():
        for host, profile in hosts:
            hostvars[host] = {'group_names': [group], 'gpunet_rdma_fabric': lab_fabric(group), 'ansible_facts': {
                'rdma_ports': SysfsReader(hardware(profile, tmp_path / host)).read()[0]}}
    fabrics = rdma_fabrics(sorted(hostvars), hostvars)
    return rdma_network_operator_groups(resources if resources is not None else DEFAULTS['network_operator_resources'],
                                        fabrics, hostvars, 63, None)


LAB = {'ib_v100': [('lab-v100-1', 'v100'), ('lab-v100-2', 'v100')],
       'ib_a100': [('lab-a100-1', 'a100'), ('lab-a100-2', 'a100')]}


def test_lab_groups_get_their_own_resources(tmp_path, hardware):
    built = rdma_network_operator(groups_for(LAB, tmp_path, hardware), 'v26.4.1',
                                  {'rdma_shared_device_plugin': PLUGIN, 'nfd_enabled': True})
    policy = built['objects'][0]
    config = json.loads(policy['spec']['rdmaSharedDevicePlugin']['config'])
    # Groups come in name order from the fabrics; the A100 nodes' Ethernet bond and DOWN mlx5_0 stay out of the
    # InfiniBand resource.
    assert config['configList'][0] == {'resourceName': 'rdma_a100', 'rdmaHcaMax': 63, 'selectors': {
        'ifNames': ['ibp141s0'], 'linkTypes': ['infiniband']}}
    assert config['configList'][1] == {'resourceName': 'rdma_v100', 'rdmaHcaMax': 63, 'selectors': {
        'ifNames': ['ibp94s0f0', 'ibp94s0f1'], 'linkTypes': ['infiniband']}}
    assert built['helm_values'] == {'nfd': {'enabled': True}}
    assert [r['resource'] for r in built['resources']] == ['rdma/rdma_a100', 'rdma/rdma_v100']
    assert built['resources'][1]['hosts'] == ['lab-v100-1', 'lab-v100-2']


def test_groups_come_from_the_fabrics_unless_resources_name_them(tmp_path, hardware):
    roce = {'roce_a100': [('lab-roce-1', 'roce_a100')]}
    assert groups_for(roce, tmp_path / 'a', hardware) == []  # a Spiderpool group is not the Network Operator's
    named = groups_for(dict(LAB, **roce), tmp_path / 'b', hardware, [
        {'group': 'ib_v100', 'resource_name': 'rdma_v100_ib', 'link_types': ['InfiniBand']}])
    assert [(g['group'], g['resource'], g['hosts']) for g in named] == [
        ('ib_v100', 'rdma/rdma_v100_ib', ['lab-v100-1', 'lab-v100-2'])]
    with pytest.raises(AnsibleFilterError, match='rdma_network_operator_groups: every network_operator_resources entry '
                                                 'needs group and resource_name'):
        groups_for(LAB, tmp_path / 'c', hardware, [{'group': 'ib_v100'}])


def _example_options():
    """The seed's full setup: driver container, SR-IOV hostdev network with whereabouts, tolerations."""
    image = {'repository': 'ghcr.io/k8snetworkplumbingwg', 'version': 'v1.5.0'}
    return {
        'rdma_shared_device_plugin': PLUGIN,
        'ofed_driver': {'repository': 'nvcr.io/nvidia/mellanox', 'image': 'doca-driver', 'version': '25.01-0.6.0.0-0'},
        'sriov_device_plugin': {'repository': 'ghcr.io/k8snetworkplumbingwg', 'image': 'sriov-network-device-plugin',
                                'version': 'v3.9.0', 'resources': [{'resource_name': 'hostdev', 'is_rdma': True}]},
        'secondary_network': {'multus': dict(image, image='multus-cni', version='v4.1.0'),
                              'cni_plugins': dict(image, image='plugins')},
        'host_device_networks': [{'name': 'hostdevice-net', 'namespace': 'crater-workspace',
                                  'range': '192.168.10.152/27', 'exclude': ['192.168.10.151/32']}],
        'tolerations': [{'key': 'node.kubernetes.io/unschedulable', 'operator': 'Exists', 'effect': 'NoSchedule'}],
        'node_affinity': {'requiredDuringSchedulingIgnoredDuringExecution': {'nodeSelectorTerms': [
            {'matchExpressions': [{'key': 'feature.node.kubernetes.io/pci-15b3.present', 'operator': 'In',
                                   'values': ['true']}]}]}},
    }


@pytest.mark.parametrize('release', RELEASES)
def test_lab_objects_validate(release, tmp_path, hardware, crd_release):
    built = rdma_network_operator(groups_for(LAB, tmp_path, hardware), release, {'rdma_shared_device_plugin': PLUGIN})
    index = crd_release('network-operator-' + release)
    for obj in built['objects']:
        assert validate_object(obj, index, release) == []


@pytest.mark.parametrize('release', RELEASES)
def test_example_inventory_objects_validate(release, tmp_path, hardware, crd_release):
    with open(os.path.join(REPO, 'inventory', 'example', 'hosts.yml')) as handle:
        inventory = yaml.safe_load(handle)
    children = inventory['all']['children']
    profiles = {'ib_v100': [(h, 'v100') for h in children['ib_v100']['hosts']],
                'ib_a100': [(h, 'a100') for h in children['ib_a100']['hosts']]}
    built = rdma_network_operator(groups_for(profiles, tmp_path, hardware), release, _example_options())
    kinds = [o['kind'] for o in built['objects']]
    assert kinds == ['NicClusterPolicy', 'HostDeviceNetwork']
    index = crd_release('network-operator-' + release)
    for obj in built['objects']:
        assert validate_object(obj, index, release) == []


def test_whereabouts_plugin_only_where_the_release_has_it(tmp_path, hardware, crd_release):
    options = _example_options()
    options['secondary_network']['ipam_plugin'] = {'repository': 'ghcr.io/k8snetworkplumbingwg', 'image': 'whereabouts',
                                                   'version': 'v0.7.0'}
    groups = groups_for(LAB, tmp_path, hardware)
    for release, expected in (('v25.1.0', []), ('v26.4.1', [
            'spec.secondaryNetwork.ipamPlugin: field not declared by the NicClusterPolicy CRD of v26.4.1 '
            '(the API server would prune it)'])):
        policy = rdma_network_operator(groups, release, options)['objects'][0]
        assert validate_object(policy, crd_release('network-operator-' + release), release) == expected


def test_release_gate_names_the_release(tmp_path, hardware):
    with pytest.raises(AnsibleFilterError, match='spec.deploymentTolerations needs Network Operator 25.7.0'):
        rdma_network_operator(groups_for(LAB, tmp_path, hardware), 'v25.1.0', {
            'rdma_shared_device_plugin': PLUGIN, 'deployment_tolerations': [{'key': 'a', 'operator': 'Exists'}]})


@pytest.mark.parametrize('networks, message', [
    ([{'name': 'a', 'range': '192.168.10.300/27'}], 'range .* is not an address/prefix'),
    ([{'name': 'a', 'range': '192.168.10.152/27', 'exclude': ['192.168.11.1/32']}],
     'exclude 192.168.11.1/32 is outside the range 192.168.10.152/27 \\(network 192.168.10.128/27\\)'),
    ([{'name': 'a', 'range': '192.168.10.152/27', 'gateway': '192.168.10.1'}], 'gateway 192.168.10.1 is not inside'),
    ([{'name': 'a', 'range': '192.168.10.0/24'}, {'name': 'b', 'range': '192.168.10.128/25'}],
     'networks a \\(192.168.10.0/24\\) and b \\(192.168.10.128/25\\) overlap'),
    ([{'name': 'a', 'ipam': 'nv-ipam'}], 'nv-ipam needs pool'),
])
def test_ip_network_checks(networks, message, tmp_path, hardware):
    with pytest.raises(AnsibleFilterError, match=message):
        rdma_network_operator(groups_for(LAB, tmp_path, hardware), 'v26.4.1',
                              {'rdma_shared_device_plugin': PLUGIN, 'host_device_networks': networks})


def test_missing_image_is_explained(tmp_path, hardware):
    with pytest.raises(AnsibleFilterError, match='ofed_driver needs version'):
        rdma_network_operator(groups_for(LAB, tmp_path, hardware), 'v26.4.1', {
            'rdma_shared_device_plugin': PLUGIN, 'ofed_driver': {'repository': 'r', 'image': 'doca-driver'}})


def _node(name, wait, allocatable):
    return {'metadata': {'name': name, 'labels': {'network.nvidia.com/operator.mofed.wait': wait}},
            'status': {'allocatable': allocatable}}


def test_node_resources():
    resources = [{'group': 'ib_v100', 'hosts': ['gpu-v100-01.example.com', 'gpu-v100-02', 'gpu-v100-03'],
                  'resource': 'rdma/rdma_v100', 'if_names': ['ibp94s0f0']}]
    nodes = [_node('gpu-v100-01', 'false', {'rdma/rdma_v100': '63'}), _node('gpu-v100-02', 'true', {}),
             _node('other', 'false', {})]
    rows = rdma_node_resources(resources, nodes)
    assert [(r['node'], r['ok']) for r in rows] == [('gpu-v100-01', True), ('gpu-v100-02', False),
                                                    ('gpu-v100-03', False)]
    assert rows[0]['allocatable'] == '63'
    assert 'mofed.wait=true' in rows[1]['problem'] and 'nicclusterpolicy_tolerations' in rows[1]['problem']
    assert rows[2]['problem'] == 'no Kubernetes node of that name'
    rows = rdma_node_resources(resources[:1], [_node('gpu-v100-02', 'false', {'rdma/rdma_v100': '0'})])
    assert rows[1]['problem'] == 'no rdma/rdma_v100 in allocatable: the shared device plugin found none of ibp94s0f0'


def test_daemonsets_not_ready():
    def ds(name, desired, ready, updated=None):
        status = {'desiredNumberScheduled': desired, 'numberReady': ready,
                  'updatedNumberScheduled': desired if updated is None else updated}
        return {'metadata': {'name': name}, 'status': status}
    assert rdma_daemonsets_not_ready([ds('rdma-shared-dp-ds', 36, 36), ds('mofed', 36, 35),
                                      ds('multus', 2, 2, updated=1), {'metadata': {'name': 'new'}}]) == [
        'mofed', 'multus', 'new']


def test_node_resources_from_inventory_groups():
    rows = rdma_node_resources([{'group': 'ib_a100', 'resource': 'rdma/rdma_a100'}],
                               [_node('gpu-a100-01', 'false', {'rdma/rdma_a100': '63'})],
                               {'ib_a100': ['gpu-a100-01', 'gpu-a100-02']})
    assert [(r['node'], r['ok']) for r in rows] == [('gpu-a100-01', True), ('gpu-a100-02', False)]


def test_merge_tolerations_filter():
    from ansible_collections.gpunet.rdma.plugins.filter.rdma_network_operator import rdma_merge_tolerations
    wanted = [{'key': 'node.kubernetes.io/unschedulable', 'operator': 'Exists', 'effect': 'NoSchedule'}]
    assert rdma_merge_tolerations(None, wanted) == wanted
    assert rdma_merge_tolerations(wanted, wanted) == wanted
    with pytest.raises(AnsibleFilterError, match='operator must be Equal or Exists'):
        rdma_merge_tolerations([], [{'key': 'a', 'operator': 'In'}])
