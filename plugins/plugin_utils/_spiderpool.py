# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Spiderpool macvlan RoCE networks built from discovered RoCE ports: one per GPU-affine NIC.

Pure functions: NIC mapping against the facts, the shared device plugin's config.json,
SpiderIPPool / SpiderMultusConfig objects and the address checks they need.
"""

from __future__ import annotations

import json
import re

from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._ip_networks import first_overlap, require_netaddr
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import unknown_link_layer_gap

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
        if port.get('link_layer') is None and unknown_link_layer_gap([port]):
            raise SpiderpoolError('GPU %s: NIC %s (%s): %s' % (entry.get('gpu'), nic, port.get('device'),
                                                               unknown_link_layer_gap([port])))
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


INJECT_KEYS = ('rdma-resource-inject', 'network-resource-inject')
NETWORKS_ANNOTATION = 'k8s.v1.cni.cncf.io/networks'
# Calico's documented autodetection methods (calico-node IP_AUTODETECTION_METHOD / IP6_AUTODETECTION_METHOD).
CALICO_METHODS = ('first-found', 'kubernetes-internal-ip')
CALICO_METHOD_PREFIXES = ('can-reach=', 'interface=', 'skip-interface=', 'cidr=')


def resolve_group_nics(mapping, hosts):
    """The GPU -> NIC mapping resolved on every host of the group: ``(nics, problems)``.

    ``hosts`` is ``[{host, ports}]``. The shared device plugin's ``ifNames`` and the macvlan ``master`` are
    cluster-wide, so a GPU's NIC must carry the same netdev name on every node. ``problems`` lists mapped
    ports that are not ACTIVE (the resource would exist, the network would not carry traffic).
    """
    gpus = [entry.get('gpu') for entry in mapping]
    if not mapping:
        raise SpiderpoolError('no GPU -> NIC mapping: list each GPU index with its NIC (netdev or PCI address), '
                              'e.g. [{gpu: 1, nic: enp11s0f0np0}, ...]')
    duplicates = sorted(set(str(g) for g in gpus if gpus.count(g) > 1))
    if duplicates:
        raise SpiderpoolError('GPU %s is mapped more than once' % ', '.join(duplicates))
    if not hosts:
        raise SpiderpoolError('the group has no host with discovered RDMA ports')
    per_gpu, problems = {}, []
    for host in hosts:
        ports = host.get('ports') or []
        try:
            resolved = resolve_nics(mapping, ports)
        except SpiderpoolError as exc:
            raise SpiderpoolError('%s: %s' % (host['host'], exc))
        state_by_netdev = dict((p.get('netdev'), p.get('state')) for p in ports)
        for nic in resolved:
            per_gpu.setdefault(nic['gpu'], []).append((host['host'], nic))
            if state_by_netdev.get(nic['netdev']) != 'ACTIVE':
                problems.append('%s: GPU %s NIC %s (%s) is %s, not ACTIVE' % (
                    host['host'], nic['gpu'], nic['netdev'], nic['device'], state_by_netdev.get(nic['netdev'])))
    nics = []
    for entry in mapping:
        seen = per_gpu[entry.get('gpu')]
        names = sorted(set(nic['netdev'] for _host, nic in seen))
        if len(names) > 1:
            raise SpiderpoolError(
                'GPU %s: NIC %s is %s on the group\'s nodes (%s); the device plugin selector and the macvlan master '
                'are cluster-wide, so the netdev name must be the same on every node: rename the interfaces '
                '(udev / systemd .link) or split the group' % (
                    entry.get('gpu'), entry.get('nic'), ' / '.join(names),
                    ', '.join('%s: %s' % (host, nic['netdev']) for host, nic in seen)))
        nic = dict(seen[0][1])
        nic['hosts'] = [host for host, _nic in seen]
        nics.append(nic)
    return nics, problems


def netns_refusals(hosts):
    """Hosts whose RDMA subsystem is (or will be after a reboot) in exclusive netns mode.

    ``hosts`` is ``[{host, live, persisted}]`` from ``rdma_driver_facts``' ``netns``. Macvlan shares the
    master's RDMA device with the pods, which needs shared mode (the kernel default); unknown is not refused.
    """
    refusals = []
    for host in hosts:
        live, persisted = host.get('live'), host.get('persisted')
        if live == 'exclusive':
            refusals.append('%s runs its RDMA subsystem in exclusive netns mode' % host['host'])
        elif persisted == 'exclusive':
            refusals.append('%s has exclusive netns mode persisted (it applies at the next boot)' % host['host'])
    return refusals


def _by_gpu(pools, gpus, name_pattern):
    by_gpu = {}
    for pool in pools:
        name = pool.get('name') or name_pattern.format(gpu=pool.get('gpu'))
        if pool.get('gpu') not in gpus:
            raise SpiderpoolError('IP pool %s is for GPU %s, which has no NIC in the mapping (GPUs: %s)' % (
                name, pool.get('gpu'), ', '.join(str(g) for g in gpus)))
        if pool['gpu'] in by_gpu:
            raise SpiderpoolError('GPU %s has more than one IP pool' % pool['gpu'])
        named = dict(pool, name=name)
        by_gpu[pool['gpu']] = named
    missing = [str(g) for g in gpus if g not in by_gpu]
    if missing:
        raise SpiderpoolError('no IP pool for GPU %s: give each mapped GPU a pool (subnet, gateway, ips)'
                              % ', '.join(missing))
    return by_gpu


def calico_autodetection_patch(ipv4_method='', ipv6_method='', container='calico-node'):
    """Strategic merge patch of the calico-node DaemonSet's autodetection env, or None when nothing is set."""
    env = []
    for name, method in (('IP_AUTODETECTION_METHOD', ipv4_method), ('IP6_AUTODETECTION_METHOD', ipv6_method)):
        if not method:
            continue
        if method not in CALICO_METHODS and not method.startswith(CALICO_METHOD_PREFIXES):
            raise SpiderpoolError('%s=%s is not a Calico autodetection method (%s, or %s followed by a value)' % (
                name, method, ', '.join(CALICO_METHODS), ', '.join(CALICO_METHOD_PREFIXES)))
        env.append({'name': name, 'value': method})
    if not env:
        return None
    return {'spec': {'template': {'spec': {'containers': [{'name': container, 'env': env}]}}}}


def _deep_merge(base, extra):
    merged = dict(base)
    for key, value in (extra or {}).items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def unknown_values(values, defaults, path=''):
    """Keys of ``values`` the chart's default values do not have (a typo there is silently ignored by helm).

    A key whose default is an empty map, a list or null takes free-form content.
    """
    unknown = []
    for key, value in sorted((values or {}).items()):
        where = '%s.%s' % (path, key) if path else key
        if key not in defaults:
            unknown.append(where)
        elif isinstance(value, dict) and isinstance(defaults[key], dict) and defaults[key]:
            unknown.extend(unknown_values(value, defaults[key], where))
    return unknown


def helm_values(device_config, options):
    inject = options.get('pod_resource_inject') or {}
    values = {
        'rdma': {'rdmaSharedDevicePlugin': {'install': True, 'deviceConfig': device_config}},
        'spiderpoolAgent': {'prometheus': {'enabled': bool(options.get('rdma_metrics')),
                                           'enabledRdmaMetric': bool(options.get('rdma_metrics'))}},
        'grafanaDashboard': {'install': bool(options.get('grafana_dashboard'))},
        'spiderpoolController': {'podResourceInject': {
            'enabled': bool(inject.get('enabled')),
            'namespacesExclude': list(inject.get('namespaces_exclude') or []),
            'namespacesInclude': list(inject.get('namespaces_include') or [])}},
    }
    if options.get('image_registry_override'):
        values['global'] = {'imageRegistryOverride': options['image_registry_override']}
    return _deep_merge(values, options.get('extra_helm_values'))


def _check_inject(inject, workload_namespace):
    key = inject.get('annotation') or INJECT_KEYS[0]
    if key not in INJECT_KEYS:
        raise SpiderpoolError('injection annotation %s is not one Spiderpool reads (%s)' % (key, ', '.join(INJECT_KEYS)))
    if not inject.get('group'):
        raise SpiderpoolError('pod resource injection needs a group name: the value of cni.spidernet.io/%s' % key)
    if not workload_namespace:
        return key
    if workload_namespace in (inject.get('namespaces_exclude') or []):
        raise SpiderpoolError('namespace %s of the test workload is excluded from injection (namespacesExclude); '
                              'its pods would get no RDMA network' % workload_namespace)
    include = inject.get('namespaces_include') or []
    if include and workload_namespace not in include:
        raise SpiderpoolError('namespace %s of the test workload is not in the injection namespacesInclude (%s)'
                              % (workload_namespace, ', '.join(include)))
    return key


def rdma_tools_daemonset(options, networks, resources, inject_key=None):
    """A DaemonSet like the Spiderpool RoCE guide's rdma-tools: one pod per node of the group, every GPU network attached.

    With injection on, the pods carry only the injection annotation (Spiderpool's webhook adds the networks and
    the RDMA resources; any other network annotation would break the injection).
    """
    workload = options.get('test_workload') or {}
    name = workload.get('name') or 'rdma-tools'
    labels = {'app.kubernetes.io/name': name, 'app.kubernetes.io/managed-by': 'gpunet.rdma'}
    if inject_key:
        annotations = {'cni.spidernet.io/%s' % inject_key: options['pod_resource_inject']['group']}
        limits = {}
    else:
        annotations = {NETWORKS_ANNOTATION: json.dumps(networks, separators=(',', ':'))}
        limits = dict((resource, 1) for resource in resources)
    container = {'name': name, 'image': workload.get('image') or 'ghcr.io/spidernet-io/rdma-tools:v12.5.7',
                 'command': ['sleep', 'infinity'],
                 # ib_write_bw registers memory: without IPC_LOCK the pod's memlock limit stops it.
                 'securityContext': {'capabilities': {'add': ['IPC_LOCK']}}}
    if limits:
        container['resources'] = {'limits': limits}
    spec = {'containers': [container], 'terminationGracePeriodSeconds': 1}
    if workload.get('node_names'):
        spec['affinity'] = {'nodeAffinity': {'requiredDuringSchedulingIgnoredDuringExecution': {'nodeSelectorTerms': [
            {'matchExpressions': [{'key': 'kubernetes.io/hostname', 'operator': 'In',
                                   'values': list(workload['node_names'])}]}]}}}
    return {'apiVersion': 'apps/v1', 'kind': 'DaemonSet',
            'metadata': {'name': name, 'namespace': workload.get('namespace') or 'default', 'labels': labels},
            'spec': {'selector': {'matchLabels': {'app.kubernetes.io/name': name}},
                     'template': {'metadata': {'labels': labels, 'annotations': annotations}, 'spec': spec}}}


def build(group, hosts, options):
    """Everything the spiderpool role renders or applies for one RoCE group.

    ``hosts``: ``[{host, ports, netns}]`` (``ports`` = ``rdma_ports``, ``netns`` = ``rdma_driver.netns`` or None).
    Returns ``helm_values``, ``device_plugin_config``, ``objects`` (SpiderIPPools, SpiderMultusConfigs),
    ``test_workload``, ``calico_patch``, ``resources`` (per GPU, for the node check and the fleet report),
    ``nics`` and ``problems`` (mapped ports that are not ACTIVE).
    """
    refusals = netns_refusals([dict(netns or {}, host=h['host']) for h in hosts for netns in [h.get('netns')]])
    if refusals:
        raise SpiderpoolError('macvlan RDMA needs the RDMA subsystem in shared netns mode: %s. Set rdma_netns_mode: '
                              'shared for the group (the rdma_netns role) and reboot, or use SR-IOV for exclusive '
                              'mode' % '; '.join(refusals))
    nics, problems = resolve_group_nics(list(options.get('gpu_nics') or []), hosts)
    prefix = options.get('resource_prefix') or 'spidernet.io'
    device_config = shared_device_config(nics, options.get('resource_name_pattern') or 'shared_cx_gpu{gpu}', prefix,
                                         options.get('rdma_hca_max', 100),
                                         options.get('periodic_update_interval', 300))
    pools = _by_gpu(list(options.get('ip_pools') or []), [n['gpu'] for n in nics],
                    options.get('ip_pool_name_pattern') or 'gpu{gpu}-pool')
    check_pools([pools[n['gpu']] for n in nics])
    inject = options.get('pod_resource_inject') or {}
    workload_namespace = (options.get('test_workload') or {}).get('namespace') or 'default'
    inject_key = _check_inject(inject, workload_namespace) if inject.get('enabled') else None
    namespace = options.get('networks_namespace') or 'spiderpool'
    multus_pattern = options.get('multus_name_pattern') or 'gpu{gpu}-macvlan'
    objects, networks, resources = [], [], []
    for nic, entry in zip(nics, device_config['configList']):
        pool = pools[nic['gpu']]
        resource = '%s/%s' % (prefix, entry['resourceName'])
        multus_name = multus_pattern.format(gpu=nic['gpu'])
        objects.append(ip_pool(pool))
        objects.append(multus_config(multus_name, namespace, nic, resource, pool['name'],
                                     inject.get('group') if inject_key else None, inject_key or INJECT_KEYS[0]))
        networks.append({'name': multus_name, 'namespace': namespace})
        resources.append({'resource': resource, 'group': group, 'gpu': nic['gpu'], 'hosts': nic['hosts'],
                          'if_names': [nic['netdev']], 'link_types': ['Ethernet'], 'pool': pool['name'],
                          'subnet': pool['subnet'], 'network': '%s/%s' % (namespace, multus_name)})
    calico = options.get('calico') or {}
    return {
        'helm_values': helm_values(device_config, options),
        'device_plugin_config': device_config,
        'objects': objects,
        'test_workload': rdma_tools_daemonset(options, networks, [r['resource'] for r in resources], inject_key),
        'calico_patch': calico_autodetection_patch(calico.get('ipv4_method') or '', calico.get('ipv6_method') or '',
                                                   calico.get('container') or 'calico-node'),
        'resources': resources,
        'nics': nics,
        'problems': problems,
    }
