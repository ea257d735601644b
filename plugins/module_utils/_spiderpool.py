# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Spiderpool macvlan RoCE networks built from discovered RoCE ports: one per GPU-affine NIC.

Pure functions: NIC mapping against the facts, the shared device plugin's config.json,
SpiderIPPool / SpiderMultusConfig objects and the address checks they need.
"""

from __future__ import annotations

import re

from ansible_collections.gpunet.rdma.plugins.module_utils._ip_networks import first_overlap, require_netaddr

RESOURCE_NAME = re.compile(r'^[a-zA-Z0-9_]+$')
API_VERSION = 'spiderpool.spidernet.io/v2beta1'


class SpiderpoolError(Exception):
    """Input Spiderpool would reject or silently misread."""


def resolve_nics(mapping, ports):
    """``[{gpu, nic}]`` (nic: netdev or PCI address) -> ``[{gpu, netdev, device, pci_address}]`` from ``rdma_ports``.

    Refuses a NIC that was not discovered and one whose link layer is InfiniBand (macvlan needs Ethernet).
    """
    by_netdev = dict((p.get('netdev'), p) for p in ports or [] if p.get('netdev'))
    by_pci = {}
    for port in ports or []:
        address = port.get('pci_address') or ''
        by_pci[address] = port
        by_pci[address.split(':', 1)[-1] if address.count(':') == 2 else address] = port
    resolved, seen = [], set()
    for entry in mapping:
        nic = str(entry.get('nic') or '')
        port = by_netdev.get(nic) or by_pci.get(nic)
        if port is None:
            raise SpiderpoolError('GPU %s: NIC %s was not discovered on this group\'s nodes (netdevs: %s)'
                                  % (entry.get('gpu'), nic, ', '.join(sorted(by_netdev)) or 'none'))
        if port.get('link_layer') != 'Ethernet':
            raise SpiderpoolError('GPU %s: NIC %s (%s) has link layer %s; macvlan needs RoCE (Ethernet). Use the '
                                  'Network Operator role for InfiniBand, or switch the port to ETH in firmware.'
                                  % (entry.get('gpu'), nic, port.get('device'), port.get('link_layer')))
        if port['netdev'] in seen:
            raise SpiderpoolError('NIC %s is mapped to more than one GPU' % port['netdev'])
        seen.add(port['netdev'])
        resolved.append({'gpu': entry.get('gpu'), 'netdev': port['netdev'], 'device': port.get('device'),
                         'pci_address': port.get('pci_address')})
    return resolved


def resource_name(pattern, gpu):
    name = pattern.format(gpu=gpu)
    if not RESOURCE_NAME.match(name):
        raise SpiderpoolError('resource name %r must match ^[a-zA-Z0-9_]+$' % name)
    return name


def shared_device_config(nics, name_pattern='shared_cx_gpu{gpu}', prefix='spidernet.io', rdma_hca_max=100,
                         periodic_update_interval=300):
    """The RDMA shared device plugin's config.json for the chart's configmap: one resource per NIC."""
    return {
        'periodicUpdateInterval': periodic_update_interval,
        'configList': [{'resourcePrefix': prefix, 'resourceName': resource_name(name_pattern, nic['gpu']),
                        'rdmaHcaMax': rdma_hca_max, 'selectors': {'ifNames': [nic['netdev']]}} for nic in nics],
    }


def _range_bounds(text, where):
    netaddr = require_netaddr(SpiderpoolError)
    first, sep, last = str(text).partition('-')
    try:
        start = netaddr.IPAddress(first.strip())
        end = netaddr.IPAddress(last.strip()) if sep else start
    except (ValueError, netaddr.AddrFormatError):
        raise SpiderpoolError('%s: %r is not an address or an address range a-b' % (where, text))
    if end < start:
        raise SpiderpoolError('%s: range %s ends before it starts' % (where, text))
    return start, end


def check_pools(pools):
    """Each pool's subnet is a network address; gateway, ips and excludeIPs inside it; subnets do not overlap."""
    netaddr = require_netaddr(SpiderpoolError)
    seen = []
    for pool in pools:
        name = pool.get('name')
        try:
            subnet = netaddr.IPNetwork(pool['subnet'])
        except (KeyError, ValueError, netaddr.AddrFormatError):
            raise SpiderpoolError('pool %s: subnet %r is not a network such as 172.16.0.0/16' % (name, pool.get('subnet')))
        if subnet.ip != subnet.network:
            raise SpiderpoolError('pool %s: subnet %s is not a network address; the network of that prefix is %s'
                                  % (name, pool['subnet'], subnet.cidr))
        for field in ('ips', 'exclude_ips'):
            for item in pool.get(field) or []:
                start, end = _range_bounds(item, 'pool %s %s' % (name, field))
                if start not in subnet or end not in subnet:
                    raise SpiderpoolError('pool %s: %s %s is outside the subnet %s' % (name, field, item, subnet))
        if not pool.get('ips'):
            raise SpiderpoolError('pool %s: ips is empty; give the addresses pods may get (e.g. 172.16.11.1-172.16.11.200)'
                                  % name)
        gateway = pool.get('gateway')
        if gateway:
            start, _end = _range_bounds(gateway, 'pool %s gateway' % name)
            if start not in subnet:
                raise SpiderpoolError('pool %s: gateway %s is not inside %s' % (name, gateway, subnet))
            for item in pool.get('ips') or []:
                first, last = _range_bounds(item, 'pool %s ips' % name)
                if first <= start <= last:
                    raise SpiderpoolError('pool %s: the gateway %s is inside ips %s; exclude it' % (name, gateway, item))
        seen.append((name, subnet))
    overlap = first_overlap(seen)
    if overlap:
        raise SpiderpoolError('pools %s (%s) and %s (%s) overlap' % (overlap[0] + overlap[1]))


def ip_pool(pool):
    spec = {'subnet': pool['subnet'], 'ips': list(pool['ips'])}
    if pool.get('gateway'):
        spec['gateway'] = pool['gateway']
    if pool.get('exclude_ips'):
        spec['excludeIPs'] = list(pool['exclude_ips'])
    return {'apiVersion': API_VERSION, 'kind': 'SpiderIPPool', 'metadata': {'name': pool['name']}, 'spec': spec}


def multus_config(name, namespace, nic, resource, pool_name, inject_group=None, inject_key='rdma-resource-inject'):
    """A macvlan SpiderMultusConfig on one NIC, with its RDMA resource and IP pool.

    With ``inject_group``, the config joins that injection group: a pod annotated with
    ``cni.spidernet.io/<inject_key>: <group>`` gets every network and RDMA resource of the group.
    """
    obj = {'apiVersion': API_VERSION, 'kind': 'SpiderMultusConfig',
           'metadata': {'name': name, 'namespace': namespace},
           'spec': {'cniType': 'macvlan', 'macvlan': {'master': [nic['netdev']], 'rdmaResourceName': resource,
                                                      'ippools': {'ipv4': [pool_name]}}}}
    if inject_group:
        obj['metadata']['annotations'] = {'cni.spidernet.io/%s' % inject_key: inject_group}
    return obj
