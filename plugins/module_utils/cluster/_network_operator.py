# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA Network Operator objects built from discovered RDMA facts.

Pure functions: the RDMA shared device plugin configuration from each GPU group's ports, the NicClusterPolicy and,
from Network Operator 26.4, one NicNodePolicy per GPU group; release gates for NicClusterPolicy fields, toleration
merging and JSON-patch paths; the guard against the driver container on hosts that run their own OFED; the
operator's own verdict on its policies (``status.state`` and ``status.appliedStates``).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re

from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._ip_networks import first_overlap, require_netaddr
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import unknown_link_layer_gap

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


def ofed_driver_spec(ofed, what='ofed_driver'):
    """``spec.ofedDriver`` (NicClusterPolicy or NicNodePolicy) from the role's ofed_driver settings."""
    driver = _image(ofed, what)
    driver.update({'forcePrecompiled': bool(ofed.get('force_precompiled', False)),
                   'terminationGracePeriodSeconds': int(ofed.get('termination_grace_period_seconds', 300)),
                   'upgradePolicy': copy.deepcopy(ofed.get('upgrade_policy') or DEFAULT_UPGRADE_POLICY)})
    driver.update(copy.deepcopy(DEFAULT_OFED_PROBES))
    return driver


def nic_cluster_policy(release, rdma_groups, options, per_node_sections=True):
    """The NicClusterPolicy: shared device plugin from the groups' facts plus the optional components.

    Without ``per_node_sections`` (NicNodePolicies carry the driver and the RDMA shared device plugin) it holds
    only the cluster-wide parts, and may be empty: applied empty, it gives up the sections an earlier run put in it.
    """
    spec = {}
    plugin = options.get('rdma_shared_device_plugin') or {}
    if rdma_groups and per_node_sections:
        _config, text = shared_device_plugin_config(rdma_groups, options.get('periodic_update_interval'))
        spec['rdmaSharedDevicePlugin'] = dict(_image(plugin, 'rdma_shared_device_plugin'), config=text)
    ofed = options.get('ofed_driver') or {}
    if ofed and per_node_sections:
        spec['ofedDriver'] = ofed_driver_spec(ofed)
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
    if not spec and per_node_sections:
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
            selector = resource.get('node_selector')
            if selector and not _selects(selector, node):
                row['problem'] = ('not selected by %s (nodeSelector %s): none of its components runs there; label the '
                                  'node or change network_operator_node_selectors'
                                  % (resource.get('policy') or 'its NicNodePolicy',
                                     ', '.join('%s=%s' % item for item in sorted(selector.items()))))
            elif row['mofed_wait'] == 'true':
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


# ------------------------------------------------------------------ NicNodePolicy (Network Operator 26.4 and later)

NODE_POLICY_RELEASE = (26, 4, 0)
# The sections a NicNodePolicy may hold; each lives either in the NicClusterPolicy or in NicNodePolicies, never in
# both (the operator's admission webhook refuses the second).
NODE_POLICY_SECTIONS = ('ofedDriver', 'rdmaSharedDevicePlugin', 'sriovDevicePlugin')
# The v26.4.1 admission webhook's limit (maxNicNodePolicyNameLength): DaemonSet names and label values carry the name.
NODE_POLICY_NAME_MAX = 30
# The node label of the default nodeSelector of a group's NicNodePolicy: its value is the group's name.
GROUP_LABEL = 'gpunet.rdma/group'
MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by'
MANAGED_BY = 'gpunet.rdma'
_LABEL_NAME = re.compile(r'^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$')
_LABEL_VALUE = re.compile(r'^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$')
_DNS_SUBDOMAIN = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
_TRUE = ('true', 'yes', 'on', '1')
_FALSE = ('false', 'no', 'off', '0')


def has_node_policies(release):
    """Whether the release has the NicNodePolicy CRD (Network Operator 26.4.0 and later)."""
    return parse_release(release) >= NODE_POLICY_RELEASE


def _wanted_layout(wanted):
    if isinstance(wanted, bool):
        return wanted
    text = str('auto' if wanted is None else wanted).strip().lower()
    if text == 'auto':
        return 'auto'
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise NetworkOperatorError('node_policies must be auto, true or false, not %r' % (wanted,))


def policy_layout(release, wanted='auto', live_policy=None):
    """``('node' | 'cluster', why)``: where the driver container and the device plugins go.

    ``node``: one NicNodePolicy per GPU group, the NicClusterPolicy keeps the cluster-wide parts. ``auto`` takes it
    from 26.4 on, unless ``live_policy`` (the cluster's NicClusterPolicy) already holds one of the per-node sections:
    the operator has no automated migration and moving them interrupts those components, so they stay where they are
    until ``wanted`` is true.
    """
    choice = _wanted_layout(wanted)
    since = '.'.join(str(p) for p in NODE_POLICY_RELEASE)
    supported = has_node_policies(release)
    if choice is True and not supported:
        raise NetworkOperatorError('NicNodePolicies need Network Operator %s or later; the chosen release is %s (set '
                                   'node_policies to auto or false)' % (since, release))
    if choice is False:
        return 'cluster', 'one NicClusterPolicy (node_policies: false)'
    if not supported:
        return 'cluster', 'one NicClusterPolicy: release %s has no NicNodePolicy (since %s)' % (release, since)
    live_spec = ((live_policy or {}).get('spec') or {}) if isinstance(live_policy, dict) else {}
    held = [section for section in NODE_POLICY_SECTIONS if live_spec.get(section)]
    if choice == 'auto' and held:
        return 'cluster', ('one NicClusterPolicy: the cluster\'s NicClusterPolicy %s already holds %s, which move to '
                           'NicNodePolicies only when node_policies is true (the operator has no automated migration; '
                           'the move interrupts these components on every node)'
                           % ((live_policy.get('metadata') or {}).get('name'), ', '.join(held)))
    if held:
        return 'node', 'one NicNodePolicy per GPU group (node_policies: true moves %s out of the NicClusterPolicy)' % (
            ', '.join(held))
    return 'node', 'one NicNodePolicy per GPU group (Network Operator %s)' % release


def node_policy_name(group):
    """A NicNodePolicy name for a group: a DNS name of at most 30 characters (``ib_v100`` -> ``ib-v100``).

    Longer names keep their first 21 characters and a hash of the whole group name, so they stay distinct.
    """
    base = re.sub(r'[^a-z0-9-]+', '-', str(group).lower()).strip('-') or 'group'
    if len(base) <= NODE_POLICY_NAME_MAX:
        return base
    digest = hashlib.sha256(str(group).encode('utf-8')).hexdigest()[:8]
    return '%s-%s' % (base[:NODE_POLICY_NAME_MAX - 9].rstrip('-'), digest)


def check_label_key(key, where):
    prefix, _slash, name = str(key).rpartition('/')
    if not key or (prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix))) or len(name) > 63 \
            or not _LABEL_NAME.match(name):
        raise NetworkOperatorError('%s: %r is not a node label key (an optional DNS prefix and /, then at most 63 '
                                   'letters, digits, -, _ or ., starting and ending with a letter or digit)'
                                   % (where, key))


def check_label_value(value, where):
    if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
        raise NetworkOperatorError('%s: %r is not a node label value (at most 63 letters, digits, -, _ or ., starting '
                                   'and ending with a letter or digit)' % (where, value))


def node_selector(group, selectors=None, label=GROUP_LABEL):
    """``(nodeSelector, labelled)`` of a group's NicNodePolicy: ``selectors[group]``, else ``{label: group}``
    (``labelled``: the role puts that label on the group's nodes)."""
    chosen = (selectors or {}).get(group)
    labelled = chosen is None
    if labelled:
        check_label_key(label, 'node_label')
        check_label_value(group, 'group %s as the value of the node label %s (set node_selectors.%s)'
                          % (group, label, group))
        chosen = {label: group}
    if not isinstance(chosen, dict) or not chosen:
        # The operator's overlap check reads an empty selector as "every node".
        raise NetworkOperatorError('node_selectors.%s must be a non-empty mapping of node labels to values (an empty '
                                   'nodeSelector selects every node), got %r' % (group, chosen))
    for key, value in chosen.items():
        check_label_key(key, 'node_selectors.%s' % group)
        check_label_value(value, 'node_selectors.%s.%s' % (group, key))
    return dict(chosen), labelled


def group_ofed_driver(group, options):
    """The ofed_driver settings of one group: ``ofed_driver``, ``ofed_driver_groups[group]`` over it (null: none)."""
    overrides = options.get('ofed_driver_groups') or {}
    base = dict(options.get('ofed_driver') or {})
    if group in overrides:
        if overrides[group] is None:
            return {}
        if not isinstance(overrides[group], dict):
            raise NetworkOperatorError('ofed_driver_groups.%s must be a mapping of ofed_driver settings or null, got %r'
                                       % (group, overrides[group]))
        base.update(overrides[group])
    return base


def nic_node_policies(release, rdma_groups, options):
    """One NicNodePolicy per group: its nodes by nodeSelector, its own RDMA resource, the driver container if asked."""
    if not has_node_policies(release):
        raise NetworkOperatorError('NicNodePolicies need Network Operator %s or later; the chosen release is %s'
                                   % ('.'.join(str(p) for p in NODE_POLICY_RELEASE), release))
    # The plugin's rules across all groups first: a resource name may be used once in the cluster.
    shared_device_plugin_config(rdma_groups, options.get('periodic_update_interval'))
    plugin = options.get('rdma_shared_device_plugin') or {}
    unknown = sorted(set(options.get('ofed_driver_groups') or {}) - set(g.get('group') for g in rdma_groups))
    if unknown:
        raise NetworkOperatorError('ofed_driver_groups names %s, not a group of a NicNodePolicy (%s)'
                                   % (', '.join(unknown), ', '.join(g.get('group') for g in rdma_groups) or 'none'))
    policies, names = [], {}
    for group in rdma_groups:
        name = node_policy_name(group['group'])
        if name in names:
            raise NetworkOperatorError('groups %s and %s give the same NicNodePolicy name %s; rename one group'
                                       % (names[name], group['group'], name))
        names[name] = group['group']
        selector, _labelled = node_selector(group['group'], options.get('node_selectors'),
                                            options.get('node_label') or GROUP_LABEL)
        _config, text = shared_device_plugin_config([group], options.get('periodic_update_interval'))
        spec = {'nodeSelector': selector,
                'rdmaSharedDevicePlugin': dict(_image(plugin, 'rdma_shared_device_plugin'), config=text)}
        ofed = group_ofed_driver(group['group'], options)
        if ofed:
            spec['ofedDriver'] = ofed_driver_spec(ofed, 'ofed_driver for group %s' % group['group'])
        if options.get('tolerations'):
            spec['tolerations'] = merge_tolerations([], options['tolerations'])
        labels = {MANAGED_BY_LABEL: MANAGED_BY}
        if _LABEL_VALUE.match(group['group']) and len(group['group']) <= 63:
            labels[GROUP_LABEL] = group['group']
        policies.append({'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'NicNodePolicy',
                         'metadata': {'name': name, 'labels': labels}, 'spec': spec})
    return policies


def network_operator_objects(release, rdma_groups, options):
    """``{layout, layout_reason, policies, resources}``: the policy objects of the chosen layout and, per group,
    where its resource comes from (``policy``) and on which nodes (``node_selector``, ``label_nodes``)."""
    layout, why = policy_layout(release, options.get('node_policies', 'auto'), options.get('live_policy'))
    if layout == 'cluster' and options.get('ofed_driver_groups'):
        raise NetworkOperatorError('ofed_driver_groups (a driver per group) needs NicNodePolicies; the layout is %s'
                                   % why)
    cluster = nic_cluster_policy(release, rdma_groups, options, per_node_sections=(layout == 'cluster'))
    policies = [cluster]
    if layout == 'node':
        policies += nic_node_policies(release, rdma_groups, options)
    resources = []
    for group in rdma_groups:
        config, _text = shared_device_plugin_config([group], options.get('periodic_update_interval'))
        selectors = config['configList'][0].get('selectors') or {}
        record = {'group': group.get('group'), 'hosts': list(group.get('hosts') or []),
                  'resource': 'rdma/%s' % config['configList'][0]['resourceName'],
                  'if_names': selectors.get('ifNames', []), 'link_types': selectors.get('linkTypes', [])}
        if layout == 'node':
            selector, labelled = node_selector(group['group'], options.get('node_selectors'),
                                               options.get('node_label') or GROUP_LABEL)
            record.update(policy='NicNodePolicy %s' % node_policy_name(group['group']), node_selector=selector,
                          label_nodes=labelled)
        else:
            record['policy'] = 'NicClusterPolicy %s' % cluster['metadata']['name']
        resources.append(record)
    return {'layout': layout, 'layout_reason': why, 'policies': policies, 'resources': resources}


# ------------------------------------------------------------------ the driver container over a host OFED

# Packages of MLNX_OFED and DOCA-OFED (Debian and RPM names) that put the out-of-tree driver on the host.
HOST_OFED_PACKAGES = ('mlnx-ofed-kernel-dkms', 'mlnx-ofed-kernel-modules', 'mlnx-ofed-kernel-utils',
                      'kmod-mlnx-ofed-kernel', 'mlnx-ofed-kernel', 'mlnx-ofed-all', 'mlnx-ofed-basic', 'doca-ofed')
HOST_OFED_SOURCES = {'mlnx_iso': 'MLNX_OFED from its ISO', 'doca_repo': 'DOCA-OFED from the DOCA repository'}
FLAVORS = {'MLNX_OFED_LINUX': 'MLNX_OFED', 'OFED-internal': 'DOCA-OFED'}


def host_ofed_reason(driver, ofed_stage=None):
    """Why a host runs NVIDIA's OFED driver on the host itself, or None (the distribution's own driver).

    ``driver`` is the host's ``ansible_facts.rdma_driver``, ``ofed_stage`` the ``ofed`` envelope of its ledger (the
    driver stage may install OFED in this very run). A host without driver facts cannot be told apart: it gets a
    reason too, so that nothing is assumed.
    """
    stage_source = ((ofed_stage or {}).get('detail') or {}).get('source') if isinstance(ofed_stage, dict) else None
    if stage_source in HOST_OFED_SOURCES:
        return 'the driver stage installs %s on the host (ofed_source: %s)' % (HOST_OFED_SOURCES[stage_source],
                                                                               stage_source)
    if not isinstance(driver, dict) or not driver:
        return 'no driver facts (ansible_facts.rdma_driver): run the discovery first (playbooks/site.yml does)'
    ofed = driver.get('ofed') or {}
    if ofed.get('installed'):
        return '%s %s on the host (ofed_info -s)' % (FLAVORS.get(ofed.get('flavor'), ofed.get('flavor') or 'OFED'),
                                                     ofed.get('version') or '')
    core = (driver.get('modules') or {}).get('mlx5_core') or {}
    if core.get('origin') == 'ofed':
        return 'mlx5_core is an out-of-tree OFED build (%s)' % (core.get('path') or 'updates/')
    if ofed.get('kernels'):
        return 'OFED builds of mlx5_core are installed for kernel %s' % ', '.join(ofed['kernels'])
    packages = driver.get('packages') or {}
    installed = ['%s %s' % (name, packages[name]) for name in HOST_OFED_PACKAGES if packages.get(name)]
    if installed:
        return 'package %s installed' % ', '.join(installed)
    return None


def host_ofed_conflicts(layout, policies, rdma_groups, host_ofed, fleet_hosts=None):
    """``[{host, group, reason}]``: hosts with their own OFED where the chosen objects run the driver container.

    NicNodePolicies run it on the hosts of their groups; a NicClusterPolicy on every node with a ConnectX device,
    here every bare-metal host of the fleet (``fleet_hosts``: host -> group), whatever group its pods serve.
    """
    host_ofed = host_ofed or {}
    targets = []
    if layout == 'node':
        names = dict((node_policy_name(g['group']), g['group']) for g in rdma_groups)
        driven = set(names.get(p['metadata']['name']) for p in policies
                     if p['kind'] == 'NicNodePolicy' and p['spec'].get('ofedDriver'))
        for group in rdma_groups:
            if group['group'] in driven:
                targets.extend((host, group['group']) for host in group.get('hosts') or [])
    elif any(p['kind'] == 'NicClusterPolicy' and p['spec'].get('ofedDriver') for p in policies):
        hosts = dict(fleet_hosts or {})
        for group in rdma_groups:
            for host in group.get('hosts') or []:
                hosts.setdefault(host, group['group'])
        targets = sorted(hosts.items())
    conflicts, seen = [], set()
    for host, group in targets:
        if host in host_ofed and host not in seen:
            seen.add(host)
            conflicts.append({'host': host, 'group': group, 'reason': host_ofed[host]})
    return conflicts


def host_ofed_refusal(conflicts, allowed=False):
    """The refusal for ``conflicts`` (None when there is none or ``allowed``), naming every node and the variable."""
    if not conflicts or allowed:
        return None
    return ('Refusing ofedDriver: the Network Operator\'s driver container would replace the driver of nodes that run '
            'their own MLNX_OFED/DOCA-OFED: %s. The container unloads the host\'s modules and builds its own; when '
            'that fails the node has no RDMA at all (the InfiniBand field report\'s outage). Leave '
            'network_operator_ofed_driver empty (or null for these groups in network_operator_ofed_driver_groups), '
            'move these hosts to the inbox driver (ofed_source: inbox), or set '
            'network_operator_ofed_driver_over_host_ofed: true to allow it.'
            % '; '.join('%s (group %s: %s)' % (c['host'], c['group'], c['reason']) for c in conflicts))


# ------------------------------------------------------------------ the operator's verdict on its policies

# appliedStates names of the per-node sections and of the NicClusterPolicy's other components, with the spec field.
COMPONENTS = {
    'state-OFED': 'spec.ofedDriver',
    'state-RDMA-device-plugin': 'spec.rdmaSharedDevicePlugin',
    'state-SRIOV-device-plugin': 'spec.sriovDevicePlugin',
    'state-multus-cni': 'spec.secondaryNetwork.multus',
    'state-container-networking-plugins': 'spec.secondaryNetwork.cniPlugins',
    'state-ipoib-cni': 'spec.secondaryNetwork.ipoib',
    'state-whereabouts-cni': 'spec.secondaryNetwork.ipamPlugin',
    'state-nv-ipam-cni': 'spec.nvIpam',
    'state-ib-kubernetes': 'spec.ibKubernetes',
    'state-nic-feature-discovery': 'spec.nicFeatureDiscovery',
    'state-doca-telemetry-service': 'spec.docaTelemetryService',
    'state-nic-configuration-operator': 'spec.nicConfigurationOperator',
}
FAILING = ('notReady', 'error')


def policy_status(obj, kind=None, name=None):
    """The operator's verdict on one NicClusterPolicy or NicNodePolicy from its ``status``.

    ``{kind, name, state, reason, components: [{name, state, message, field}], ok, problems}``; ``ok`` when
    ``status.state`` is ``ready`` and no applied state is ``notReady`` or ``error``. Each failing component is named
    as ``state-OFED (spec.ofedDriver): notReady: <its message>``. ``reason`` is shown only when the policy is not
    ready (the operator leaves an old one in place once the policy recovers).
    """
    obj = obj if isinstance(obj, dict) else {}
    metadata = obj.get('metadata') or {}
    kind = kind or obj.get('kind') or 'NicClusterPolicy'
    name = name or metadata.get('name')
    what = '%s %s' % (kind, name)
    status = obj.get('status') if isinstance(obj.get('status'), dict) else {}
    components = []
    for entry in status.get('appliedStates') or []:
        if isinstance(entry, dict):
            components.append({'name': entry.get('name'), 'state': entry.get('state'),
                               'message': entry.get('message') or None,
                               'field': COMPONENTS.get(entry.get('name'))})
    state = status.get('state')
    reason = status.get('reason') or None
    record = {'kind': kind, 'name': name, 'state': state, 'reason': reason, 'components': components, 'ok': False,
              'problems': []}
    if not obj:
        record['problems'] = ['%s: not found in the cluster' % what]
        return record
    failing = [c for c in components if c['state'] in FAILING]
    for component in failing:
        label = component['name'] if not component['field'] else '%s (%s)' % (component['name'], component['field'])
        record['problems'].append('%s: %s: %s%s' % (what, label, component['state'],
                                                    ': ' + component['message'] if component['message'] else ''))
    if not state:
        record['problems'].append('%s: no status.state yet: the operator has not reconciled it (is the '
                                  'network-operator Deployment running?)' % what)
    elif state == 'ignore':
        record['problems'].append('%s: ignored by the operator%s' % (what, ': ' + reason if reason else ''))
    elif state != 'ready' and (reason or not failing):
        record['problems'].append('%s: %s%s' % (what, state, ': ' + reason if reason else ''))
    record['ok'] = state == 'ready' and not failing
    if record['ok']:
        record['reason'] = None
    return record


def policies_status(expected, found):
    """One policy_status record per ``expected`` ``{kind, name}``, from the ``found`` objects (k8s_info results)."""
    by_key = dict(((o.get('kind'), (o.get('metadata') or {}).get('name')), o) for o in found or []
                  if isinstance(o, dict))
    return [policy_status(by_key.get((item['kind'], item['name'])), item['kind'], item['name'])
            for item in expected or []]


# ------------------------------------------------------------------ the node label of the default nodeSelectors

def node_label_patches(resources, nodes, label=GROUP_LABEL):
    """``[{node, value, was, patch}]``: the nodes whose ``label`` must change for the groups' default nodeSelectors,
    each with ``patch``, the Node merge patch that sets (or, with null, removes) the label.

    Each host of a group whose NicNodePolicy selects ``{label: group}`` gets ``value`` = the group; a node that
    carries the label for one of these groups without being one of its hosts gets ``value`` null (label removed), so
    that the group's policy stops selecting it. Nodes labelled for other groups are left alone.
    """
    nodes_by_name = dict(((n.get('metadata') or {}).get('name'), n) for n in nodes or [] if isinstance(n, dict))
    wanted = {}
    labelled_groups = set()
    for resource in resources or []:
        if not resource.get('label_nodes'):
            continue
        labelled_groups.add(resource['group'])
        for host in resource.get('hosts') or []:
            node = _node_for(host, nodes_by_name)
            if node is not None:
                wanted[node['metadata']['name']] = resource['group']
    patches = []
    for name, node in sorted(nodes_by_name.items()):
        current = ((node.get('metadata') or {}).get('labels') or {}).get(label)
        if name in wanted:
            if current != wanted[name]:
                patches.append({'node': name, 'value': wanted[name], 'was': current})
        elif current in labelled_groups:
            patches.append({'node': name, 'value': None, 'was': current})
    for row in patches:
        row['patch'] = {'apiVersion': 'v1', 'kind': 'Node',
                        'metadata': {'name': row['node'], 'labels': {label: row['value']}}}
    return patches


def _selects(selector, node):
    labels = (node.get('metadata') or {}).get('labels') or {}
    return all(labels.get(key) == value for key, value in (selector or {}).items())
