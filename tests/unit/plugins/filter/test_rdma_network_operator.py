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

from ansible_collections.gpunet.rdma.plugins.filter.ledger import rdma_fabrics
from ansible_collections.gpunet.rdma.plugins.filter.network_operator import (
    rdma_daemonsets_not_ready, rdma_network_operator, rdma_network_operator_groups, rdma_node_resources)
from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._crd_schema import validate_object
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import SysfsReader

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
    # One NicClusterPolicy holds every group's resource: node_policies false (or a release before 26.4).
    built = rdma_network_operator(groups_for(LAB, tmp_path, hardware), 'v26.4.1',
                                  {'rdma_shared_device_plugin': PLUGIN, 'nfd_enabled': True, 'node_policies': False})
    assert built['layout'] == 'cluster' and [o['kind'] for o in built['objects']] == ['NicClusterPolicy']
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
    with pytest.raises(AnsibleFilterError, match='network_operator_groups: every network_operator_resources entry '
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
    assert kinds == {'v25.1.0': ['NicClusterPolicy', 'HostDeviceNetwork'],
                     'v26.4.1': ['NicClusterPolicy', 'NicNodePolicy', 'NicNodePolicy', 'HostDeviceNetwork']}[release]
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
    groups = groups_for(LAB, tmp_path, hardware)
    with pytest.raises(AnsibleFilterError, match='ofed_driver needs version'):
        rdma_network_operator(groups, 'v25.1.0', {
            'rdma_shared_device_plugin': PLUGIN, 'ofed_driver': {'repository': 'r', 'image': 'doca-driver'}})
    with pytest.raises(AnsibleFilterError, match='ofed_driver for group ib_a100 needs version'):
        rdma_network_operator(groups, 'v26.4.1', {
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
    from ansible_collections.gpunet.rdma.plugins.filter.network_operator import rdma_merge_tolerations
    wanted = [{'key': 'node.kubernetes.io/unschedulable', 'operator': 'Exists', 'effect': 'NoSchedule'}]
    assert rdma_merge_tolerations(None, wanted) == wanted
    assert rdma_merge_tolerations(wanted, wanted) == wanted
    with pytest.raises(AnsibleFilterError, match='operator must be Equal or Exists'):
        rdma_merge_tolerations([], [{'key': 'a', 'operator': 'In'}])


# ------------------------------------------------------------------ NicNodePolicy per GPU group (Network Operator 26.4)

def test_one_nicnodepolicy_per_lab_group_from_26_4(tmp_path, hardware, crd_release):
    built = rdma_network_operator(groups_for(LAB, tmp_path, hardware), 'v26.4.1', {'rdma_shared_device_plugin': PLUGIN})
    assert built['layout'] == 'node'
    assert [(o['kind'], o['metadata']['name']) for o in built['objects']] == [
        ('NicClusterPolicy', 'nic-cluster-policy'), ('NicNodePolicy', 'ib-a100'), ('NicNodePolicy', 'ib-v100')]
    # The NicClusterPolicy keeps only cluster-wide parts: none asked for here, so it is applied empty and gives up
    # what an earlier run put in it.
    assert built['objects'][0]['spec'] == {}
    a100, v100 = built['objects'][1:]
    assert v100['spec']['nodeSelector'] == {'gpunet.rdma/group': 'ib_v100'}
    assert v100['metadata']['labels'] == {'app.kubernetes.io/managed-by': 'gpunet.rdma', 'gpunet.rdma/group': 'ib_v100'}
    # Each policy carries its own group's resource, nothing of the other group.
    assert json.loads(v100['spec']['rdmaSharedDevicePlugin']['config']) == {'configList': [{
        'resourceName': 'rdma_v100', 'rdmaHcaMax': 63,
        'selectors': {'ifNames': ['ibp94s0f0', 'ibp94s0f1'], 'linkTypes': ['infiniband']}}]}
    assert json.loads(a100['spec']['rdmaSharedDevicePlugin']['config'])['configList'][0]['resourceName'] == 'rdma_a100'
    assert 'ofedDriver' not in v100['spec']
    assert [(r['resource'], r['policy'], r['label_nodes']) for r in built['resources']] == [
        ('rdma/rdma_a100', 'NicNodePolicy ib-a100', True), ('rdma/rdma_v100', 'NicNodePolicy ib-v100', True)]
    assert built['node_labels'][1] == {'group': 'ib_v100', 'hosts': ['lab-v100-1', 'lab-v100-2'],
                                       'label': 'gpunet.rdma/group', 'value': 'ib_v100'}
    assert built['policies'] == [{'kind': 'NicClusterPolicy', 'name': 'nic-cluster-policy'},
                                 {'kind': 'NicNodePolicy', 'name': 'ib-a100'},
                                 {'kind': 'NicNodePolicy', 'name': 'ib-v100'}]
    for obj in built['objects']:
        assert validate_object(obj, crd_release('network-operator-v26.4.1'), 'v26.4.1') == []
    # v25.1.0 has no NicNodePolicy CRD: such an object would not validate, and is never built for it.
    assert validate_object(v100, crd_release('network-operator-v25.1.0'), 'v25.1.0')[0].startswith(
        'no CRD for mellanox.com/v1alpha1 NicNodePolicy in v25.1.0')


def test_releases_before_26_4_keep_one_nicclusterpolicy(tmp_path, hardware):
    groups = groups_for(LAB, tmp_path, hardware)
    built = rdma_network_operator(groups, 'v25.1.0', {'rdma_shared_device_plugin': PLUGIN})
    assert built['layout'] == 'cluster' and [o['kind'] for o in built['objects']] == ['NicClusterPolicy']
    assert built['layout_reason'] == 'one NicClusterPolicy: release v25.1.0 has no NicNodePolicy (since 26.4.0)'
    assert built['node_labels'] == [] and built['resources'][0]['policy'] == 'NicClusterPolicy nic-cluster-policy'
    with pytest.raises(AnsibleFilterError, match='NicNodePolicies need Network Operator 26.4.0 or later; the chosen '
                                                 'release is v25.1.0 \\(set node_policies to auto or false\\)'):
        rdma_network_operator(groups, 'v25.1.0', {'rdma_shared_device_plugin': PLUGIN, 'node_policies': True})
    with pytest.raises(AnsibleFilterError, match='node_policies must be auto, true or false'):
        rdma_network_operator(groups, 'v26.4.1', {'rdma_shared_device_plugin': PLUGIN, 'node_policies': 'sometimes'})


def _live(**spec):
    return {'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'NicClusterPolicy',
            'metadata': {'name': 'nic-cluster-policy'}, 'spec': spec}


def test_auto_leaves_per_node_sections_where_the_cluster_has_them(tmp_path, hardware):
    groups = groups_for(LAB, tmp_path, hardware)
    options = {'rdma_shared_device_plugin': PLUGIN}
    held = _live(rdmaSharedDevicePlugin={'image': 'k8s-rdma-shared-dev-plugin', 'config': '{}'}, nvIpam={'image': 'x'})
    built = rdma_network_operator(groups, 'v26.4.1', dict(options, live_policy=held))
    assert built['layout'] == 'cluster'
    assert 'already holds rdmaSharedDevicePlugin' in built['layout_reason']
    assert 'node_policies is true' in built['layout_reason']
    moved = rdma_network_operator(groups, 'v26.4.1', dict(options, live_policy=held, node_policies='true'))
    assert moved['layout'] == 'node' and 'moves rdmaSharedDevicePlugin' in moved['layout_reason']
    # A NicClusterPolicy without those sections (an earlier run of this layout, or only multus/nv-ipam): per group.
    assert rdma_network_operator(groups, 'v26.4.1', dict(options, live_policy=_live(nvIpam={'image': 'x'})))[
        'layout'] == 'node'


def test_node_selectors_of_groups(tmp_path, hardware, crd_release):
    groups = groups_for(LAB, tmp_path, hardware)
    product = {'nvidia.com/gpu.product': 'Tesla-V100-SXM2-32GB'}
    built = rdma_network_operator(groups, 'v26.4.1', {'rdma_shared_device_plugin': PLUGIN,
                                                      'node_selectors': {'ib_v100': product},
                                                      'node_label': 'example.com/gpu-group'})
    v100 = [o for o in built['objects'] if o['metadata']['name'] == 'ib-v100'][0]
    a100 = [o for o in built['objects'] if o['metadata']['name'] == 'ib-a100'][0]
    assert v100['spec']['nodeSelector'] == product
    assert a100['spec']['nodeSelector'] == {'example.com/gpu-group': 'ib_a100'}
    assert [n['group'] for n in built['node_labels']] == ['ib_a100']  # the role labels only its own label
    assert validate_object(v100, crd_release('network-operator-v26.4.1'), 'v26.4.1') == []
    for selectors, message in (({'ib_v100': {}}, 'an empty nodeSelector selects every node'),
                               ({'ib_v100': {'nvidia.com/gpu product': 'x'}}, 'is not a node label key'),
                               ({'ib_v100': {'nvidia.com/gpu.product': 'Tesla V100'}}, 'is not a node label value')):
        with pytest.raises(AnsibleFilterError, match=message):
            rdma_network_operator(groups, 'v26.4.1', {'rdma_shared_device_plugin': PLUGIN,
                                                      'node_selectors': selectors})


DOCA = {'repository': 'nvcr.io/nvidia/mellanox', 'image': 'doca-driver', 'version': '25.01-0.6.0.0-0'}


def test_driver_container_per_group(tmp_path, hardware, crd_release):
    groups = groups_for(LAB, tmp_path, hardware)
    built = rdma_network_operator(groups, 'v26.4.1', {
        'rdma_shared_device_plugin': PLUGIN, 'ofed_driver': DOCA,
        'ofed_driver_groups': {'ib_a100': {'version': '24.10-0.7.0.0-0', 'upgrade_policy': {
            'autoUpgrade': True, 'maxParallelUpgrades': 2}}, 'ib_v100': None},
        'tolerations': [{'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}]})
    ncp, a100, v100 = built['objects']
    assert 'ofedDriver' not in ncp['spec'] and 'ofedDriver' not in v100['spec']
    assert a100['spec']['ofedDriver']['version'] == '24.10-0.7.0.0-0'
    assert a100['spec']['ofedDriver']['upgradePolicy'] == {'autoUpgrade': True, 'maxParallelUpgrades': 2}
    # The driver DaemonSets come from the NicNodePolicies: the tolerations go with them (and with the cluster's).
    assert a100['spec']['tolerations'] == ncp['spec']['tolerations'] == [
        {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}]
    for obj in built['objects']:
        assert validate_object(obj, crd_release('network-operator-v26.4.1'), 'v26.4.1') == []
    with pytest.raises(AnsibleFilterError, match='ofed_driver_groups names ib_h100, not a group of a NicNodePolicy'):
        rdma_network_operator(groups, 'v26.4.1', {'rdma_shared_device_plugin': PLUGIN, 'ofed_driver': DOCA,
                                                  'ofed_driver_groups': {'ib_h100': None}})
    with pytest.raises(AnsibleFilterError, match='ofed_driver_groups \\(a driver per group\\) needs NicNodePolicies'):
        rdma_network_operator(groups, 'v25.1.0', {'rdma_shared_device_plugin': PLUGIN, 'ofed_driver': DOCA,
                                                  'ofed_driver_groups': {'ib_a100': {'version': '24.10-0.7.0.0-0'}}})


# ------------------------------------------------------------------ the driver container over a host OFED

PUBLIC_OFED_INFO = os.path.join(REPO, 'tests', 'unit', 'fixtures', 'public', 'ofed_info')


def _driver_facts(ofed_info_file=None, mlx5_origin='inbox'):
    """rdma_driver facts as rdma_driver_facts reports them, the OFED part parsed from a recorded ofed_info output."""
    from ansible_collections.gpunet.rdma.plugins.module_utils.drivers._rdma_driver import parse_ofed_info
    ofed = {'installed': False, 'flavor': None, 'version': None, 'kernels': [], 'kernel_mismatch': False}
    if ofed_info_file:
        with open(os.path.join(PUBLIC_OFED_INFO, ofed_info_file)) as handle:
            ofed.update(parse_ofed_info(handle.read()), installed=True)
    path = 'updates/dkms/mlx5_core.ko' if mlx5_origin == 'ofed' else 'kernel/drivers/net/ethernet/mellanox/mlx5_core.ko'
    return {'kernel': '5.15.0-91-generic', 'ofed': ofed,
            'modules': {'mlx5_core': {'installed': True, 'origin': mlx5_origin, 'loaded': True, 'path': path}},
            'packages': {'rdma-core': '44.0-2'}}


def test_rdma_host_ofed_from_recorded_ofed_info():
    from ansible_collections.gpunet.rdma.plugins.filter.network_operator import rdma_host_ofed
    from ansible_collections.gpunet.rdma.plugins.plugin_utils._ledger import envelope
    hostvars = {
        'inbox': {'ansible_facts': {'rdma_driver': _driver_facts()}},
        'mlnx': {'ansible_facts': {'rdma_driver': _driver_facts('daocloud-spiderpool-ofed-driver-s.txt', 'ofed')}},
        'doca': {'ansible_facts': {'rdma_driver': _driver_facts('openshift-docs-network-operator-doca-s.txt')}},
        'oot': {'ansible_facts': {'rdma_driver': _driver_facts(mlx5_origin='ofed')}},
        'pkg': {'ansible_facts': {'rdma_driver': dict(_driver_facts(), packages={'doca-ofed': '25.01-0.6.0.0'})}},
        'planned': {'ansible_facts': {'rdma_driver': _driver_facts(), 'gpunet_rdma_ledger': {
            'ofed': envelope('ofed', detail={'source': 'doca_repo'})}}},
        'unknown': {'ansible_facts': {}},
    }
    found = rdma_host_ofed(sorted(hostvars), hostvars)
    assert found == {
        'doca': 'DOCA-OFED 24.07-0.6.1 on the host (ofed_info -s)',
        'mlnx': 'MLNX_OFED 23.07-0.5.1.2 on the host (ofed_info -s)',
        'oot': 'mlx5_core is an out-of-tree OFED build (updates/dkms/mlx5_core.ko)',
        'pkg': 'package doca-ofed 25.01-0.6.0.0 installed',
        'planned': 'the driver stage installs DOCA-OFED from the DOCA repository on the host (ofed_source: doca_repo)',
        'unknown': 'no driver facts (ansible_facts.rdma_driver): run the discovery first (playbooks/site.yml does)',
    }
    with pytest.raises(AnsibleFilterError, match='host_ofed: nowhere is not a host of the inventory'):
        rdma_host_ofed(['nowhere'], hostvars)


def test_driver_container_refused_where_hosts_run_their_own_ofed(tmp_path, hardware):
    groups = groups_for(dict(LAB, ib_h100=[('lab-h100-1', 'h100')]), tmp_path, hardware)
    host_ofed = {'lab-v100-1': 'MLNX_OFED 23.07-0.5.1.2 on the host (ofed_info -s)',
                 'lab-h100-1': 'DOCA-OFED 24.07-0.6.1 on the host (ofed_info -s)',
                 'lab-roce-1': 'MLNX_OFED 23.10-1.1.9.0 on the host (ofed_info -s)',
                 'lab-pvrdma-1': 'no driver facts (ansible_facts.rdma_driver): run the discovery first'}
    fleet = {'groups': {'ib_v100': {'platform': 'bare_metal', 'hosts': ['lab-v100-1', 'lab-v100-2']},
                        'ib_a100': {'platform': 'bare_metal', 'hosts': ['lab-a100-1', 'lab-a100-2']},
                        'ib_h100': {'platform': 'bare_metal', 'hosts': ['lab-h100-1']},
                        'roce_a100': {'platform': 'bare_metal', 'hosts': ['lab-roce-1']},
                        'roce_pvrdma': {'platform': 'vmware_pvrdma', 'hosts': ['lab-pvrdma-1']}}}
    options = {'rdma_shared_device_plugin': PLUGIN, 'ofed_driver': DOCA, 'host_ofed': host_ofed, 'fleet': fleet}
    # Per group: only where a NicNodePolicy runs the container (not ib_h100 here).
    built = rdma_network_operator(groups, 'v26.4.1', dict(options, ofed_driver_groups={'ib_h100': None}))
    assert built['host_ofed_conflicts'] == [
        {'host': 'lab-v100-1', 'group': 'ib_v100', 'reason': 'MLNX_OFED 23.07-0.5.1.2 on the host (ofed_info -s)'}]
    refusal = built['host_ofed_refusal']
    assert refusal.startswith('Refusing ofedDriver: ')
    assert 'lab-v100-1 (group ib_v100: MLNX_OFED 23.07-0.5.1.2 on the host (ofed_info -s))' in refusal
    assert 'network_operator_ofed_driver_over_host_ofed: true' in refusal and 'lab-h100-1' not in refusal
    # One NicClusterPolicy: its driver DaemonSet reaches every bare-metal node, the Spiderpool group's too.
    cluster = rdma_network_operator(groups, 'v25.1.0', options)
    assert [c['host'] for c in cluster['host_ofed_conflicts']] == ['lab-h100-1', 'lab-roce-1', 'lab-v100-1']
    # Allowed: listed, not refused.
    allowed = rdma_network_operator(groups, 'v26.4.1', dict(options, ofed_driver_over_host_ofed=True))
    assert allowed['host_ofed_refusal'] is None and len(allowed['host_ofed_conflicts']) == 2
    # No driver container: nothing to refuse.
    assert rdma_network_operator(groups, 'v26.4.1', dict(options, ofed_driver={}))['host_ofed_conflicts'] == []
    with pytest.raises(AnsibleFilterError, match='ofed_driver_over_host_ofed must be true or false'):
        rdma_network_operator(groups, 'v26.4.1', dict(options, ofed_driver_over_host_ofed='false'))


# ------------------------------------------------------------------ node labels, node selection, policy status

def test_node_policy_labels():
    from ansible_collections.gpunet.rdma.plugins.filter.network_operator import rdma_node_policy_labels
    resources = [{'group': 'ib_v100', 'hosts': ['gpu-v100-01.example.com', 'gpu-v100-02'], 'label_nodes': True},
                 {'group': 'ib_a100', 'hosts': ['gpu-a100-01'], 'label_nodes': False}]

    def node(name, group=None):
        labels = {'kubernetes.io/hostname': name}
        if group:
            labels['gpunet.rdma/group'] = group
        return {'metadata': {'name': name, 'labels': labels}}
    nodes = [node('gpu-v100-01'), node('gpu-v100-02', 'ib_v100'), node('gpu-v100-03', 'ib_v100'),
             node('gpu-a100-01', 'ib_v100'), node('other', 'ib_h100')]

    def patch(name, value):
        return {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name, 'labels': {'gpunet.rdma/group': value}}}
    assert rdma_node_policy_labels(resources, nodes, 'gpunet.rdma/group') == [
        # a100-01 left ib_v100; its own group's policy selects by another selector: the label goes
        {'node': 'gpu-a100-01', 'value': None, 'was': 'ib_v100', 'patch': patch('gpu-a100-01', None)},
        {'node': 'gpu-v100-01', 'value': 'ib_v100', 'was': None, 'patch': patch('gpu-v100-01', 'ib_v100')},
        {'node': 'gpu-v100-03', 'value': None, 'was': 'ib_v100', 'patch': patch('gpu-v100-03', None)}]
    assert rdma_node_policy_labels(resources, nodes[1:2], 'gpunet.rdma/group') == []


def test_node_resources_check_the_nicnodepolicy_selects_the_node():
    resources = [{'group': 'ib_v100', 'hosts': ['gpu-v100-01', 'gpu-v100-02'], 'resource': 'rdma/rdma_v100',
                  'if_names': ['ibp94s0f0'], 'policy': 'NicNodePolicy ib-v100',
                  'node_selector': {'gpunet.rdma/group': 'ib_v100'}}]
    selected = _node('gpu-v100-01', 'false', {'rdma/rdma_v100': '63'})
    selected['metadata']['labels']['gpunet.rdma/group'] = 'ib_v100'
    rows = rdma_node_resources(resources, [selected, _node('gpu-v100-02', 'false', {})])
    assert rows[0]['ok'] is True
    assert rows[1]['problem'] == ('not selected by NicNodePolicy ib-v100 (nodeSelector gpunet.rdma/group=ib_v100): '
                                  'none of its components runs there; label the node or change '
                                  'network_operator_node_selectors')


def test_status_of_node_policies_names_the_failing_component():
    from ansible_collections.gpunet.rdma.plugins.filter.network_operator import rdma_network_operator_status
    expected = [{'kind': 'NicClusterPolicy', 'name': 'nic-cluster-policy'}] + [
        {'kind': 'NicNodePolicy', 'name': name} for name in ('ib-v100', 'ib-a100', 'ib-h100')]

    def nnp(name, status):
        return {'kind': 'NicNodePolicy', 'metadata': {'name': name}, 'status': status}
    found = [
        {'kind': 'NicClusterPolicy', 'metadata': {'name': 'nic-cluster-policy'},
         'status': {'state': 'ready', 'reason': 'an old reason the operator left', 'appliedStates': [
             {'name': 'state-multus-cni', 'state': 'ignore'}]}},
        nnp('ib-v100', {'state': 'notReady', 'appliedStates': [
            {'name': 'state-OFED', 'state': 'notReady', 'message': 'daemonset not available yet'},
            {'name': 'state-RDMA-device-plugin', 'state': 'ready'}]}),
        # The reason as the NicNodePolicy controller words an overlap (policyoverlap.FormatNodeOverlap, v26.4.1).
        nnp('ib-a100', {'state': 'error', 'reason': 'node selector overlap detected: node "gpu-a100-01" is selected '
                                                    'by policies: [ib-a100, storage]'}),
    ]
    states = rdma_network_operator_status(found, expected)
    assert [(s['name'], s['ok']) for s in states] == [('nic-cluster-policy', True), ('ib-v100', False),
                                                      ('ib-a100', False), ('ib-h100', False)]
    assert states[0]['reason'] is None and states[0]['problems'] == []
    assert states[1]['problems'] == [
        'NicNodePolicy ib-v100: state-OFED (spec.ofedDriver): notReady: daemonset not available yet']
    assert states[2]['problems'] == [
        'NicNodePolicy ib-a100: error: node selector overlap detected: node "gpu-a100-01" is selected by policies: '
        '[ib-a100, storage]']
    assert states[3]['problems'] == ['NicNodePolicy ib-h100: not found in the cluster']
    mine = {'kind': 'NicClusterPolicy', 'metadata': {'name': 'mine'}, 'status': {
        'state': 'ignore', 'reason': 'Unsupported NicClusterPolicy instance mine. Only instance with name '
                                     'nic-cluster-policy is supported'}}
    ignored = rdma_network_operator_status([mine], [{'kind': 'NicClusterPolicy', 'name': 'mine'}])
    assert ignored[0]['problems'] == ['NicClusterPolicy mine: ignored by the operator: Unsupported NicClusterPolicy '
                                      'instance mine. Only instance with name nic-cluster-policy is supported']
