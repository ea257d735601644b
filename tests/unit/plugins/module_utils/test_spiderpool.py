# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Spiderpool builders; objects validated against the Spiderpool v1.2.2 CRDs when GPUNET_CRDS_DIR is set."""

from __future__ import annotations

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils._crd_schema import validate_object
from ansible_collections.gpunet.rdma.plugins.module_utils._spiderpool import (
    SpiderpoolError,
    check_pools,
    ip_pool,
    multus_config,
    resolve_nics,
    shared_device_config,
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
