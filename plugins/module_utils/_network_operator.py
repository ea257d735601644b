# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA Network Operator objects built from discovered RDMA facts.

Pure functions: the RDMA shared device plugin configuration from each GPU group's ports,
release gates for NicClusterPolicy fields, toleration merging and JSON-patch paths.
"""

from __future__ import annotations

import json
import re

from ansible_collections.gpunet.rdma.plugins.module_utils._ip_networks import first_overlap, require_netaddr
from ansible_collections.gpunet.rdma.plugins.module_utils._rdma_inventory import unknown_link_layer_gap

# The RDMA shared device plugin's link type names for the kernel's link layers.
LINK_TYPES = {'InfiniBand': 'infiniband', 'Ethernet': 'ether'}
RESOURCE_NAME = re.compile(r'^[a-zA-Z0-9_]+$')
# NicClusterPolicy fields and the operator release that introduced them.
FIELD_RELEASES = {
    'tolerations': (23, 7, 0),
    'deploymentTolerations': (25, 7, 0),
    'deploymentNodeAffinity': (25, 7, 0),
    'global': (26, 4, 0),
}


class NetworkOperatorError(Exception):
    """Input the operator would reject or silently misread."""


def parse_release(release):
    """``v25.1.0`` / ``25.1.0`` / ``26.4.1`` -> ``(25, 1, 0)``."""
    match = re.match(r'^v?(\d+)\.(\d+)(?:\.(\d+))?', str(release or '').strip())
    if not match:
        raise NetworkOperatorError('network operator release %r is not a version such as v25.1.0' % (release,))
    return tuple(int(part or 0) for part in match.groups())


def release_gate(spec, release):
    """Refuse NicClusterPolicy fields the chosen operator release does not have."""
    have = parse_release(release)
    problems = []
    for field, since in sorted(FIELD_RELEASES.items()):
        if field in (spec or {}) and have < since:
            problems.append('spec.%s needs Network Operator %s or later; the chosen release is %s'
                            % (field, '.'.join(str(p) for p in since), release))
    if problems:
        raise NetworkOperatorError('; '.join(problems))


def group_selectors(ports, link_types=None):
    """The selectors of one resource from the group's ports: netdevs of ACTIVE ports and their link types."""
    wanted = set(link_types or LINK_TYPES)
    chosen = [p for p in ports or [] if p.get('state') == 'ACTIVE' and p.get('netdev')
              and p.get('link_layer') in wanted]
    if not chosen:
        return None
    return {
        'ifNames': sorted(set(p['netdev'] for p in chosen)),
        'linkTypes': sorted(set(LINK_TYPES[p['link_layer']] for p in chosen)),
    }


def check_resource(entry, ports=None):
    """The shared device plugin's own rules for one configList entry."""
    name = entry.get('resourceName')
    if not name or not RESOURCE_NAME.match(str(name)):
        raise NetworkOperatorError('resourceName %r must match ^[a-zA-Z0-9_]+$ (e.g. rdma_v100)' % (name,))
    if 'selectors' in entry and 'devices' in entry:
        raise NetworkOperatorError('resource %s has both selectors and devices; the plugin accepts only one' % name)
    if 'selectors' not in entry and 'devices' not in entry:
        # Ports whose link layer (or state) the discovery source could not tell are not "nothing discovered".
        raise NetworkOperatorError('resource %s selects no device: %s' % (
            name, unknown_link_layer_gap(ports) or 'no ACTIVE port with a netdev was discovered in its group'))
    hca_max = entry.get('rdmaHcaMax')
    if not isinstance(hca_max, int) or isinstance(hca_max, bool) or not 0 < hca_max <= 10000:
        raise NetworkOperatorError('resource %s: rdmaHcaMax must be a positive whole number, not %r' % (name, hca_max))


def shared_device_plugin_config(groups, periodic_update_interval=None):
    """configList from ``[{resource_name, rdma_hca_max, ports, link_types?}]``; returns ``(config dict, JSON string)``."""
    config_list = []
    seen = set()
    for group in groups:
        entry = {'resourceName': group.get('resource_name'), 'rdmaHcaMax': group.get('rdma_hca_max', 63)}
        selectors = group_selectors(group.get('ports'), group.get('link_types'))
        if selectors:
            entry['selectors'] = selectors
        check_resource(entry, group.get('ports'))
        if entry['resourceName'] in seen:
            raise NetworkOperatorError('resource %s is defined twice' % entry['resourceName'])
        seen.add(entry['resourceName'])
        config_list.append(entry)
    config = {'configList': config_list}
    if periodic_update_interval is not None:
        config['periodicUpdateInterval'] = periodic_update_interval
    return config, json.dumps(config, sort_keys=True)


def _toleration_key(toleration):
    return tuple(toleration.get(k) for k in ('key', 'operator', 'value', 'effect', 'tolerationSeconds'))


def merge_tolerations(existing, wanted):
    """``existing`` followed by every ``wanted`` toleration it does not have yet (order kept, no duplicates)."""
    merged = list(existing or [])
    keys = set(_toleration_key(t) for t in merged)
    for toleration in wanted or []:
        if toleration.get('operator', 'Equal') not in ('Equal', 'Exists'):
            raise NetworkOperatorError('toleration %r: operator must be Equal or Exists' % (toleration,))
        if toleration.get('operator') == 'Exists' and toleration.get('value'):
            raise NetworkOperatorError('toleration %r: operator Exists takes no value' % (toleration,))
        if _toleration_key(toleration) not in keys:
            merged.append(dict(toleration))
            keys.add(_toleration_key(toleration))
    return merged


def json_pointer(*parts):
    """RFC 6901 path: ``~`` -> ``~0``, ``/`` -> ``~1`` (``rdma/rdma_v100`` -> ``rdma~1rdma_v100``)."""
    return ''.join('/' + str(part).replace('~', '~0').replace('/', '~1') for part in parts)


def stale_resource_patch(node_status, names):
    """JSON patch removing ``names`` from a node's status capacity and allocatable (only those present)."""
    operations = []
    for section in ('capacity', 'allocatable'):
        present = (node_status or {}).get(section) or {}
        for name in names:
            if name in present:
                operations.append({'op': 'remove', 'path': json_pointer('status', section, name)})
    return operations


# The InfiniBand field report's driver container rollout: one node at a time, drained, no safe-load.
DEFAULT_UPGRADE_POLICY = {
    'autoUpgrade': True,
    'maxParallelUpgrades': 1,
    'safeLoad': False,
    'drain': {'enable': True, 'force': True, 'podSelector': '', 'timeoutSeconds': 300, 'deleteEmptyDir': True},
}
DEFAULT_OFED_PROBES = {
    'startupProbe': {'initialDelaySeconds': 10, 'periodSeconds': 20},
    'livenessProbe': {'initialDelaySeconds': 30, 'periodSeconds': 30},
    'readinessProbe': {'initialDelaySeconds': 10, 'periodSeconds': 30},
}


def _image(component, what):
    """``{repository, image, version}`` of a component; all three are needed by the older CRDs."""
    missing = [key for key in ('repository', 'image', 'version') if not (component or {}).get(key)]
    if missing:
        raise NetworkOperatorError('%s needs %s (the container image to run)' % (what, ', '.join(missing)))
    result = dict((key, component[key]) for key in ('repository', 'image', 'version'))
    result['imagePullSecrets'] = list(component.get('image_pull_secrets') or [])
    return result


def sriov_device_plugin_config(resources):
    """resourceList of the SR-IOV device plugin: ``[{resource_name, vendors?, devices?, is_rdma?}]``."""
    resource_list = []
    for resource in resources:
        name = resource.get('resource_name')
        if not name or not RESOURCE_NAME.match(str(name)):
            raise NetworkOperatorError('SR-IOV resourceName %r must match ^[a-zA-Z0-9_]+$ (e.g. hostdev)' % (name,))
        selectors = {'vendors': list(resource.get('vendors') or ['15b3']), 'isRdma': bool(resource.get('is_rdma', True))}
        for key, field in (('devices', 'devices'), ('drivers', 'drivers'), ('pf_names', 'pfNames'),
                           ('link_types', 'linkTypes')):
            if resource.get(key):
                selectors[field] = list(resource[key])
        resource_list.append({'resourcePrefix': resource.get('resource_prefix', 'nvidia.com'), 'resourceName': name,
                              'selectors': selectors})
    return json.dumps({'resourceList': resource_list}, sort_keys=True)


def nic_cluster_policy(release, rdma_groups, options):
    """The NicClusterPolicy: shared device plugin from the groups' facts plus the optional components."""
    spec = {}
    plugin = options.get('rdma_shared_device_plugin') or {}
    if rdma_groups:
        _config, text = shared_device_plugin_config(rdma_groups, options.get('periodic_update_interval'))
        spec['rdmaSharedDevicePlugin'] = dict(_image(plugin, 'rdma_shared_device_plugin'), config=text)
    ofed = options.get('ofed_driver') or {}
    if ofed:
        driver = _image(ofed, 'ofed_driver')
        driver.update({'forcePrecompiled': bool(ofed.get('force_precompiled', False)),
                       'terminationGracePeriodSeconds': int(ofed.get('termination_grace_period_seconds', 300)),
                       'upgradePolicy': ofed.get('upgrade_policy') or DEFAULT_UPGRADE_POLICY})
        driver.update(DEFAULT_OFED_PROBES)
        spec['ofedDriver'] = driver
    sriov = options.get('sriov_device_plugin') or {}
    if sriov:
        spec['sriovDevicePlugin'] = dict(_image(sriov, 'sriov_device_plugin'),
                                         config=sriov_device_plugin_config(sriov.get('resources') or []))
    secondary = options.get('secondary_network') or {}
    if secondary:
        spec['secondaryNetwork'] = dict(
            (field, _image(secondary[key], 'secondary_network.%s' % key))
            for key, field in (('multus', 'multus'), ('cni_plugins', 'cniPlugins'), ('ipam_plugin', 'ipamPlugin'),
                               ('ipoib', 'ipoib'))
            if secondary.get(key))
    if options.get('nv_ipam'):
        spec['nvIpam'] = dict(_image(options['nv_ipam'], 'nv_ipam'),
                              enableWebhook=bool(options['nv_ipam'].get('enable_webhook', False)))
    if options.get('tolerations'):
        spec['tolerations'] = merge_tolerations([], options['tolerations'])
    if options.get('deployment_tolerations'):
        spec['deploymentTolerations'] = merge_tolerations([], options['deployment_tolerations'])
    if options.get('node_affinity'):
        spec['nodeAffinity'] = options['node_affinity']
    if not spec:
        raise NetworkOperatorError('the NicClusterPolicy would be empty: no group with RDMA ports and no component')
    release_gate(spec, release)
    return {'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'NicClusterPolicy',
            'metadata': {'name': options.get('name') or 'nic-cluster-policy'}, 'spec': spec}


def helm_values(release, options):
    """The chart's values: NFD on or off, operator image mirror, pull secrets; nothing the chart does not know."""
    parse_release(release)
    values = {'nfd': {'enabled': bool(options.get('nfd_enabled', True))}}
    operator = {}
    if options.get('image_repository'):
        operator['repository'] = options['image_repository']
    if operator:
        values['operator'] = operator
    if options.get('image_pull_secrets'):
        values['imagePullSecrets'] = list(options['image_pull_secrets'])
    return values


def check_ip_networks(networks):
    """Whereabouts ranges of the secondary networks: valid, excludes and gateway inside, no overlap.

    Whereabouts reads ``range`` as a start address with the network's prefix
    (``192.168.2.152/27`` allocates .152 to the end of that /27), so the start need not be
    the network address; everything else is checked against the /27 network.
    """
    netaddr = require_netaddr(NetworkOperatorError)
    seen = []
    for network in networks:
        name = network.get('name')
        try:
            cidr = netaddr.IPNetwork(network['range'])
        except (KeyError, ValueError, netaddr.AddrFormatError):
            raise NetworkOperatorError('network %s: range %r is not an address/prefix such as 192.168.10.152/27'
                                       % (name, network.get('range')))
        block = cidr.cidr
        for excluded in network.get('exclude') or []:
            try:
                excluded_net = netaddr.IPNetwork(excluded)
            except (ValueError, netaddr.AddrFormatError):
                raise NetworkOperatorError('network %s: exclude %r is not an address/prefix' % (name, excluded))
            if excluded_net not in block:
                raise NetworkOperatorError('network %s: exclude %s is outside the range %s (network %s)'
                                           % (name, excluded, network['range'], block))
        gateway = network.get('gateway')
        if gateway:
            try:
                inside = netaddr.IPAddress(gateway) in block
            except (ValueError, netaddr.AddrFormatError):
                inside = False
            if not inside:
                raise NetworkOperatorError('network %s: gateway %s is not inside %s' % (name, gateway, block))
        seen.append((name, block))
    overlap = first_overlap(seen)
    if overlap:
        raise NetworkOperatorError('networks %s (%s) and %s (%s) overlap' % (overlap[0] + overlap[1]))


def whereabouts_ipam(network):
    """The IPAM JSON string of a HostDeviceNetwork using whereabouts (as in the InfiniBand field report)."""
    ipam = {'type': 'whereabouts', 'datastore': 'kubernetes',
            'kubernetes': {'kubeconfig': '/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig'},
            'range': network['range'], 'log_file': '/var/log/whereabouts.log', 'log_level': 'info'}
    if network.get('exclude'):
        ipam['exclude'] = list(network['exclude'])
    if network.get('gateway'):
        ipam['gateway'] = network['gateway']
    return json.dumps(ipam, sort_keys=True)


def host_device_networks(networks):
    """HostDeviceNetwork objects (cluster scoped) for ``[{name, namespace, resource_name, ipam, range, ...}]``."""
    check_ip_networks([n for n in networks if n.get('ipam', 'whereabouts') == 'whereabouts'])
    objects = []
    for network in networks:
        if network.get('ipam', 'whereabouts') == 'whereabouts':
            ipam = whereabouts_ipam(network)
        elif network.get('ipam') == 'nv-ipam':
            if not network.get('pool'):
                raise NetworkOperatorError('network %s: nv-ipam needs pool (the nv-ipam IPPool name)' % network.get('name'))
            ipam = json.dumps({'type': 'nv-ipam', 'poolName': network['pool']}, sort_keys=True)
        else:
            raise NetworkOperatorError('network %s: ipam must be whereabouts or nv-ipam' % network.get('name'))
        objects.append({'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'HostDeviceNetwork',
                        'metadata': {'name': network['name']},
                        'spec': {'networkNamespace': network.get('namespace', 'default'),
                                 'resourceName': network.get('resource_name', 'hostdev'), 'ipam': ipam}})
    return objects


MOFED_WAIT_LABEL = 'network.nvidia.com/operator.mofed.wait'


def daemonsets_not_ready(daemonsets):
    """Names of DaemonSets whose pods are not all ready (``kubectl get ds`` READY < DESIRED)."""
    waiting = []
    for daemonset in daemonsets or []:
        status = daemonset.get('status') or {}
        desired = status.get('desiredNumberScheduled')
        if desired is None or status.get('numberReady', 0) < desired or \
                status.get('updatedNumberScheduled', desired) < desired:
            waiting.append((daemonset.get('metadata') or {}).get('name'))
    return waiting


def _node_for(host, nodes_by_name):
    for name in (host, host.split('.')[0]):
        if name in nodes_by_name:
            return nodes_by_name[name]
    return None


def node_resources(resources, nodes):
    """Per node of each RDMA group: the mofed.wait label and the group's resource in allocatable."""
    nodes_by_name = dict(((n.get('metadata') or {}).get('name'), n) for n in nodes or [])
    rows = []
    for resource in resources:
        for host in resource.get('hosts') or []:
            node = _node_for(host, nodes_by_name)
            row = {'node': host, 'group': resource.get('group'), 'resource': resource['resource'], 'mofed_wait': None,
                   'allocatable': None, 'ok': False, 'problem': None}
            if node is None:
                row['problem'] = 'no Kubernetes node of that name'
                rows.append(row)
                continue
            row['node'] = node['metadata']['name']
            labels = (node.get('metadata') or {}).get('labels') or {}
            row['mofed_wait'] = labels.get(MOFED_WAIT_LABEL)
            allocatable = ((node.get('status') or {}).get('allocatable') or {}).get(resource['resource'])
            row['allocatable'] = allocatable
            if row['mofed_wait'] == 'true':
                row['problem'] = ('%s=true: the driver pod has not finished on this node (often a taint its DaemonSet '
                                  'does not tolerate: add it with the nicclusterpolicy_tolerations role)'
                                  % MOFED_WAIT_LABEL)
            elif not allocatable or str(allocatable) == '0':
                row['problem'] = 'no %s in allocatable: the shared device plugin found none of %s' % (
                    resource['resource'], ', '.join(resource.get('if_names') or []) or 'its interfaces')
            else:
                row['ok'] = True
            rows.append(row)
    return rows
