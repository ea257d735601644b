# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Spiderpool builders; objects validated against the Spiderpool v1.2.2 CRDs when GPUNET_CRDS_DIR is set."""

from __future__ import annotations

import pytest

import json
import os

import yaml

from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._core_schema import validate_builtin
from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._crd_schema import validate_object
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import SysfsReader
from ansible_collections.gpunet.rdma.plugins.plugin_utils._spiderpool import (
    SpiderpoolError,
    build,
    calico_autodetection_patch,
    check_pools,
    ip_pool,
    multus_config,
    netns_refusals,
    resolve_group_nics,
    resolve_nics,
    shared_device_config,
    unknown_values,
)

# Seed 001's eight GPU-affine ConnectX-5 RoCE NICs.
NETDEVS = ['enp%ds0f0np0' % n for n in range(11, 19)]
PORTS = [{'device': 'mlx5_%d' % i, 'port': 1, 'netdev': netdev, 'state': 'ACTIVE', 'link_layer': 'Ethernet',
          'pci_address': '0000:%02x:00.0' % (0x0b + i)} for i, netdev in enumerate(NETDEVS)]
MAPPING = [{'gpu': i + 1, 'nic': netdev} for i, netdev in enumerate(NETDEVS)]


def pools():
    return [{'name': 'gpu%d-net%d' % (g, 10 + g), 'subnet': '172.%d.0.0/16' % (15 + g), 'gateway': '172.%d.0.254' % (15 + g),
             'ips': ['172.%d.0.1-172.%d.0.200' % (15 + g, 15 + g)]} for g in range(1, 9)]


def test_eight_nics_eight_resources():
    nics = resolve_nics(MAPPING, PORTS)
    config = shared_device_config(nics)
    assert len(config['configList']) == 8 and config['periodicUpdateInterval'] == 300
    assert config['configList'][0] == {'resourcePrefix': 'spidernet.io', 'resourceName': 'shared_cx_gpu1',
                                       'rdmaHcaMax': 100, 'selectors': {'ifNames': ['enp11s0f0np0']}}
    assert config['configList'][7]['selectors'] == {'ifNames': ['enp18s0f0np0']}


def test_nic_by_pci_address():
    assert resolve_nics([{'gpu': 3, 'nic': '0d:00.0'}], PORTS)[0]['netdev'] == 'enp13s0f0np0'


@pytest.mark.parametrize('mapping, ports, message', [
    ([{'gpu': 1, 'nic': 'enp99s0'}], PORTS, 'GPU 1: NIC enp99s0 was not discovered'),
    ([{'gpu': 1, 'nic': 'ibp12s0'}], [{'device': 'mlx5_0', 'netdev': 'ibp12s0', 'link_layer': 'InfiniBand'}],
     'has link layer InfiniBand; macvlan needs RoCE'),
    ([{'gpu': 1, 'nic': 'enp11s0f0np0'}, {'gpu': 2, 'nic': 'enp11s0f0np0'}], PORTS, 'mapped to more than one GPU'),
])
def test_nic_refusals(mapping, ports, message):
    with pytest.raises(SpiderpoolError, match=message):
        resolve_nics(mapping, ports)


def test_bad_resource_name():
    with pytest.raises(SpiderpoolError, match='must match'):
        shared_device_config(resolve_nics(MAPPING[:1], PORTS), name_pattern='gpu-{gpu}')


def test_pools_pass():
    check_pools(pools())


@pytest.mark.parametrize('change, message', [
    ({'subnet': '172.16.11.0/16'}, 'subnet 172.16.11.0/16 is not a network address; the network of that prefix is '
                                   '172.16.0.0/16'),
    ({'subnet': '172.16.0.0/33'}, 'is not a network such as'),
    ({'gateway': '10.0.0.1'}, 'gateway 10.0.0.1 is not inside 172.16.0.0/16'),
    ({'gateway': '172.16.0.5'}, 'the gateway 172.16.0.5 is inside ips'),
    ({'ips': ['172.17.0.1-172.17.0.9']}, 'ips 172.17.0.1-172.17.0.9 is outside the subnet'),
    ({'ips': ['172.16.0.9-172.16.0.1']}, 'ends before it starts'),
    ({'ips': ['not-an-ip']}, 'is not an address or an address range'),
    ({'exclude_ips': ['172.18.0.1']}, 'exclude_ips 172.18.0.1 is outside the subnet'),
    ({'ips': []}, 'ips is empty'),
])
def test_pool_errors(change, message):
    bad = pools()
    bad[0].update(change)
    with pytest.raises(SpiderpoolError, match=message):
        check_pools(bad)


def test_overlapping_pools():
    bad = pools()
    bad[1].update({'subnet': '172.16.128.0/17', 'gateway': '172.16.128.254', 'ips': ['172.16.128.1-172.16.128.9']})
    with pytest.raises(SpiderpoolError, match='pools gpu1-net11 \\(172.16.0.0/16\\) and gpu2-net12 \\(172.16.128.0/17\\) overlap'):
        check_pools(bad)


def test_multus_config_with_injection():
    nic = resolve_nics(MAPPING[:1], PORTS)[0]
    obj = multus_config('gpu1-macvlan', 'spiderpool', nic, 'spidernet.io/shared_cx_gpu1', 'gpu1-net11',
                        inject_group='gpu-macvlan')
    assert obj['spec'] == {'cniType': 'macvlan', 'macvlan': {'master': ['enp11s0f0np0'],
                                                             'rdmaResourceName': 'spidernet.io/shared_cx_gpu1',
                                                             'ippools': {'ipv4': ['gpu1-net11']}}}
    assert obj['metadata']['annotations'] == {'cni.spidernet.io/rdma-resource-inject': 'gpu-macvlan'}


def test_eight_pools_and_configs_validate(crd_release):
    index = crd_release('spiderpool-v1.2.2')
    nics = resolve_nics(MAPPING, PORTS)
    objects = [ip_pool(p) for p in pools()]
    objects += [multus_config('gpu%d-macvlan' % nic['gpu'], 'spiderpool', nic,
                              'spidernet.io/shared_cx_gpu%d' % nic['gpu'], 'gpu%d-net%d' % (nic['gpu'], 10 + nic['gpu']))
                for nic in nics]
    assert len(objects) == 16
    for obj in objects:
        assert validate_object(obj, index, 'spiderpool v1.2.2') == []


def test_the_seed_yaml_is_refused(crd_release):
    """Seed 001's SpiderMultusConfig puts rdmaResourceName at spec level: the CRD does not declare it there."""
    seed = {'apiVersion': 'spiderpool.spidernet.io/v2beta1', 'kind': 'SpiderMultusConfig',
            'metadata': {'name': 'gpu1-macvlan', 'namespace': 'spiderpool'},
            'spec': {'cniType': 'macvlan', 'rdmaResourceName': 'spidernet.io/shared_cx5_gpu1',
                     'macvlan': {'master': ['enp11s0f0np0'], 'ippools': {'ipv4': ['gpu1-net11']}}}}
    assert validate_object(seed, crd_release('spiderpool-v1.2.2'), 'spiderpool v1.2.2') == [
        'spec.rdmaResourceName: field not declared by the SpiderMultusConfig CRD of spiderpool v1.2.2 '
        '(the API server would prune it)']


# ---------------------------------------------------------------- one RoCE group, end to end

def lab_ports(hardware, tmp_path, name='node'):
    """The rdma_ports of the lab's RoCE node (lab/hardware/roce_a100.yml), read from its sysfs fixture tree."""
    ports, _devices = SysfsReader(hardware('roce_a100', tmp_path / name)).read()
    return ports


def options(**changes):
    base = {'gpu_nics': MAPPING, 'resource_name_pattern': 'shared_cx5_gpu{gpu}',
            'ip_pools': [dict(p, gpu=g) for g, p in enumerate(pools(), 1)],
            'test_workload': {'namespace': 'rdma-test', 'node_names': ['lab-roce-1']}}
    base.update(changes)
    return base


def group_hosts(ports, netns=None, names=('lab-roce-1',)):
    return [{'host': name, 'ports': ports, 'netns': netns} for name in names]


def test_lab_node_yields_eight_resources_pools_and_configs(hardware, tmp_path):
    ports = lab_ports(hardware, tmp_path)
    # The lab node also has two SR-IOV VFs of mlx5_0 (mlx5_8, mlx5_9): not mapped, so not part of any resource.
    assert [p['netdev'] for p in ports if p['device'] not in ('mlx5_8', 'mlx5_9')] == NETDEVS
    assert [p['netdev'] for p in ports][8:] == ['enp11s0f0v0', 'enp11s0f0v1']
    assert set(p['link_layer'] for p in ports) == {'Ethernet'}
    built = build('roce_a100', group_hosts(ports, {'live': None, 'persisted': 'shared'}), options())
    assert [r['resource'] for r in built['resources']] == ['spidernet.io/shared_cx5_gpu%d' % g for g in range(1, 9)]
    assert built['resources'][7] == {
        'resource': 'spidernet.io/shared_cx5_gpu8', 'group': 'roce_a100', 'gpu': 8, 'hosts': ['lab-roce-1'],
        'if_names': ['enp18s0f0np0'], 'link_types': ['Ethernet'], 'pool': 'gpu8-net18', 'subnet': '172.23.0.0/16',
        'network': 'spiderpool/gpu8-macvlan'}
    assert [o['kind'] for o in built['objects']] == ['SpiderIPPool', 'SpiderMultusConfig'] * 8
    assert built['problems'] == [] and built['calico_patch'] is None
    device_plugin = built['helm_values']['rdma']['rdmaSharedDevicePlugin']
    assert device_plugin['install'] is True and device_plugin['deviceConfig'] == built['device_plugin_config']
    assert len(built['device_plugin_config']['configList']) == 8


def test_every_rendered_object_is_schema_valid(hardware, tmp_path, crd_release, upstream_crds):
    built = build('roce_a100', group_hosts(lab_ports(hardware, tmp_path)), options())
    index = crd_release('spiderpool-v1.2.2')
    for obj in built['objects']:
        assert validate_object(obj, index, 'spiderpool v1.2.2') == []
    assert validate_builtin(built['test_workload'], '1.33') == []
    with open(os.path.join(upstream_crds, 'spiderpool-v1.2.2', 'chart-values.yaml')) as handle:
        assert unknown_values(built['helm_values'], yaml.safe_load(handle)) == []


def test_test_workload_requests_every_network_and_resource(hardware, tmp_path):
    workload = build('roce_a100', group_hosts(lab_ports(hardware, tmp_path)), options())['test_workload']
    template = workload['spec']['template']
    networks = json.loads(template['metadata']['annotations']['k8s.v1.cni.cncf.io/networks'])
    assert networks[0] == {'name': 'gpu1-macvlan', 'namespace': 'spiderpool'} and len(networks) == 8
    container = template['spec']['containers'][0]
    assert container['resources']['limits'] == dict(('spidernet.io/shared_cx5_gpu%d' % g, 1) for g in range(1, 9))
    assert container['securityContext'] == {'capabilities': {'add': ['IPC_LOCK']}}
    assert workload['metadata']['namespace'] == 'rdma-test'
    terms = template['spec']['affinity']['nodeAffinity']['requiredDuringSchedulingIgnoredDuringExecution']
    assert terms['nodeSelectorTerms'][0]['matchExpressions'][0]['values'] == ['lab-roce-1']


def test_injection_annotates_configs_and_workload_only(hardware, tmp_path, crd_release):
    inject = {'enabled': True, 'annotation': 'network-resource-inject', 'group': 'rdma-network',
              'namespaces_exclude': ['kube-system'], 'namespaces_include': []}
    built = build('roce_a100', group_hosts(lab_ports(hardware, tmp_path)), options(pod_resource_inject=inject))
    configs = [o for o in built['objects'] if o['kind'] == 'SpiderMultusConfig']
    assert all(c['metadata']['annotations'] == {'cni.spidernet.io/network-resource-inject': 'rdma-network'}
               for c in configs)
    template = built['test_workload']['spec']['template']
    assert template['metadata']['annotations'] == {'cni.spidernet.io/network-resource-inject': 'rdma-network'}
    assert 'resources' not in template['spec']['containers'][0]
    assert built['helm_values']['spiderpoolController']['podResourceInject'] == {
        'enabled': True, 'namespacesExclude': ['kube-system'], 'namespacesInclude': []}
    index = crd_release('spiderpool-v1.2.2')
    assert all(validate_object(c, index) == [] for c in configs)


@pytest.mark.parametrize('inject, message', [
    ({'annotation': 'resource-inject'}, 'is not one Spiderpool reads'),
    ({'group': ''}, 'needs a group name'),
    ({'namespaces_exclude': ['rdma-test']}, 'namespace rdma-test of the test workload is excluded'),
    ({'namespaces_include': ['ml']}, 'is not in the injection namespacesInclude \\(ml\\)'),
])
def test_injection_refusals(hardware, tmp_path, inject, message):
    settings = dict({'enabled': True, 'annotation': 'rdma-resource-inject', 'group': 'rdma-network'}, **inject)
    with pytest.raises(SpiderpoolError, match=message):
        build('roce_a100', group_hosts(lab_ports(hardware, tmp_path)), options(pod_resource_inject=settings))


def test_helm_values_flags_and_overrides(hardware, tmp_path):
    built = build('roce_a100', group_hosts(lab_ports(hardware, tmp_path)), options(
        image_registry_override='ghcr.m.daocloud.io', rdma_metrics=True, grafana_dashboard=True,
        periodic_update_interval=60, extra_helm_values={'spiderpoolAgent': {'prometheus': {'port': 5711}}}))
    values = built['helm_values']
    assert values['global'] == {'imageRegistryOverride': 'ghcr.m.daocloud.io'}
    assert values['spiderpoolAgent']['prometheus'] == {'enabled': True, 'enabledRdmaMetric': True, 'port': 5711}
    assert values['grafanaDashboard'] == {'install': True}
    assert values['rdma']['rdmaSharedDevicePlugin']['deviceConfig']['periodicUpdateInterval'] == 60


def test_unknown_chart_values():
    defaults = {'rdma': {'rdmaSharedDevicePlugin': {'install': False, 'deviceConfig': {'configList': []}}},
                'global': {'commonAnnotations': {}}}
    values = {'rdma': {'rdmaSharedDevicePlugin': {'instal': True, 'deviceConfig': {'configList': [{'x': 1}]}}},
              'global': {'commonAnnotations': {'team': 'ml'}}, 'grafana': {'install': True}}
    assert unknown_values(values, defaults) == ['grafana', 'rdma.rdmaSharedDevicePlugin.instal']


def test_mapping_by_pci_address_on_two_nodes(hardware, tmp_path):
    hosts = [{'host': h, 'ports': lab_ports(hardware, tmp_path, h)} for h in ('roce-1', 'roce-2')]
    nics, problems = resolve_group_nics([{'gpu': 1, 'nic': '0000:0b:00.0'}, {'gpu': 2, 'nic': 'enp12s0f0np0'}], hosts)
    assert [(n['gpu'], n['netdev'], n['hosts']) for n in nics] == [
        (1, 'enp11s0f0np0', ['roce-1', 'roce-2']), (2, 'enp12s0f0np0', ['roce-1', 'roce-2'])]
    assert problems == []


def test_netdev_names_must_match_across_nodes():
    other = [dict(p, netdev=p['netdev'].replace('np0', '')) if p['netdev'] == 'enp11s0f0np0' else p for p in PORTS]
    hosts = [{'host': 'roce-1', 'ports': PORTS}, {'host': 'roce-2', 'ports': other}]
    with pytest.raises(SpiderpoolError, match='GPU 1: NIC 0000:0b:00.0 is enp11s0f0 / enp11s0f0np0 on the group'):
        resolve_group_nics([{'gpu': 1, 'nic': '0000:0b:00.0'}], hosts)


def test_a_missing_nic_names_the_host():
    hosts = [{'host': 'roce-1', 'ports': PORTS}, {'host': 'roce-2', 'ports': PORTS[1:]}]
    with pytest.raises(SpiderpoolError, match='roce-2: GPU 1: NIC enp11s0f0np0 was not discovered'):
        resolve_group_nics(MAPPING, hosts)


def test_ports_that_are_not_active_are_reported():
    ports = [dict(p, state='DOWN') if p['netdev'] == 'enp14s0f0np0' else p for p in PORTS]
    _nics, problems = resolve_group_nics(MAPPING, [{'host': 'roce-1', 'ports': ports}])
    assert problems == ['roce-1: GPU 4 NIC enp14s0f0np0 (mlx5_3) is DOWN, not ACTIVE']


@pytest.mark.parametrize('mapping, message', [
    ([], 'no GPU -> NIC mapping'),
    ([{'gpu': 1, 'nic': 'enp11s0f0np0'}, {'gpu': 1, 'nic': 'enp12s0f0np0'}], 'GPU 1 is mapped more than once'),
])
def test_mapping_refusals(mapping, message):
    with pytest.raises(SpiderpoolError, match=message):
        resolve_group_nics(mapping, [{'host': 'roce-1', 'ports': PORTS}])


def test_infiniband_group_is_refused(hardware, tmp_path):
    ports, _devices = SysfsReader(hardware('v100', tmp_path / 'v100')).read()
    ib = [p['netdev'] for p in ports if p['link_layer'] == 'InfiniBand'][0]
    with pytest.raises(SpiderpoolError, match='has link layer InfiniBand; macvlan needs RoCE'):
        build('ib_v100', group_hosts(ports), options(gpu_nics=[{'gpu': 1, 'nic': ib}]))


@pytest.mark.parametrize('netns, refused', [
    ({'live': 'shared', 'persisted': 'shared'}, []),
    ({'live': None, 'persisted': None}, []),
    ({'live': 'exclusive', 'persisted': 'shared'}, ['roce-1 runs its RDMA subsystem in exclusive netns mode']),
    ({'live': 'shared', 'persisted': 'exclusive'},
     ['roce-1 has exclusive netns mode persisted (it applies at the next boot)']),
])
def test_netns_refusals(netns, refused):
    assert netns_refusals([dict(netns, host='roce-1')]) == refused


def test_exclusive_netns_refuses_the_build(hardware, tmp_path):
    with pytest.raises(SpiderpoolError, match='needs the RDMA subsystem in shared netns mode: lab-roce-1 runs'):
        build('roce_a100', group_hosts(lab_ports(hardware, tmp_path), {'live': 'exclusive'}), options())


@pytest.mark.parametrize('ip_pools, message', [
    ([], 'no IP pool for GPU 1, 2, 3, 4, 5, 6, 7, 8'),
    ([{'gpu': 9, 'subnet': '10.9.0.0/24', 'ips': ['10.9.0.1']}], 'IP pool gpu9-pool is for GPU 9, which has no NIC'),
    ([dict(pools()[0], gpu=1), dict(pools()[1], gpu=1)], 'GPU 1 has more than one IP pool'),
])
def test_pool_mapping_refusals(hardware, tmp_path, ip_pools, message):
    with pytest.raises(SpiderpoolError, match=message):
        build('roce_a100', group_hosts(lab_ports(hardware, tmp_path)), options(ip_pools=ip_pools))


def test_the_seed_pool_subnet_is_refused_with_the_right_network(hardware, tmp_path):
    seed_pools = [dict(p, gpu=g) for g, p in enumerate(pools(), 1)]
    seed_pools[0].update(name='gpu1-net11', subnet='172.16.11.0/16', gateway='172.16.11.254',
                         ips=['172.16.11.1-172.16.11.200'])
    with pytest.raises(SpiderpoolError, match='pool gpu1-net11: subnet 172.16.11.0/16 is not a network address; the '
                                              'network of that prefix is 172.16.0.0/16'):
        build('roce_a100', group_hosts(lab_ports(hardware, tmp_path)), options(ip_pools=seed_pools))


def test_calico_patch():
    assert calico_autodetection_patch('kubernetes-internal-ip', 'kubernetes-internal-ip') == {'spec': {'template': {
        'spec': {'containers': [{'name': 'calico-node', 'env': [
            {'name': 'IP_AUTODETECTION_METHOD', 'value': 'kubernetes-internal-ip'},
            {'name': 'IP6_AUTODETECTION_METHOD', 'value': 'kubernetes-internal-ip'}]}]}}}}
    assert calico_autodetection_patch('interface=eth0')['spec']['template']['spec']['containers'][0]['env'] == [
        {'name': 'IP_AUTODETECTION_METHOD', 'value': 'interface=eth0'}]
    assert calico_autodetection_patch() is None
    with pytest.raises(SpiderpoolError, match='IP_AUTODETECTION_METHOD=eth0 is not a Calico autodetection method'):
        calico_autodetection_patch('eth0')
