# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stand-in for the NVIDIA Network Operator inside the kube-apiserver double (its on_change hook).

When a NicClusterPolicy or NicNodePolicy is stored, the operator reconciles it: one ready DaemonSet per component in
its namespace, the policy's status (state ready, one applied state per component), and on every node the policy
selects (a NicNodePolicy's nodeSelector; the NicClusterPolicy's nodeAffinity, every node without one)
mofed.wait=false and, as the RDMA shared device plugin and the kubelet report it, each resource of the plugin's
config in the node's capacity and allocatable: its rdmaHcaMax when one of the node's RDMA netdevs matches the
resource's selectors (vendors, deviceIDs, drivers, ifNames, linkTypes), 0 when none does (the plugin's empty
resource server). Nodes the policy does not select get nothing.

The stand-in knows a node's netdevs from its ``gpunet.test/rdma-netdevs`` annotation (a JSON list of
``{ifName, vendor, deviceID, driver, linkType}``, for a test to set) or else from the scenario's sysfs fixture of the
node, ``$MOLECULE_EPHEMERAL_DIRECTORY/nodes/<node>/sys`` (molecule.yml's gpunet_rdma_sysfs_root): the netdevs of
``class/net`` whose PCI function has an RDMA device. A node described by neither has none.
"""

from __future__ import annotations

import json
import os

NAMESPACE = 'nvidia-network-operator'
MANAGER = 'network-operator'
# spec section -> the operator's state name and DaemonSet
COMPONENTS = {'rdmaSharedDevicePlugin': ('state-RDMA-device-plugin', 'rdma-shared-dp-ds'),
              'ofedDriver': ('state-OFED', 'mofed-ds'),
              'sriovDevicePlugin': ('state-SRIOV-device-plugin', 'sriov-device-plugin'),
              'nvIpam': ('state-nv-ipam-cni', 'nv-ipam-node')}
WAIT_LABEL = 'network.nvidia.com/operator.mofed.wait'
NETDEVS_ANNOTATION = 'gpunet.test/rdma-netdevs'
LINK_TYPES = {'32': 'infiniband', '1': 'ether'}  # ARPHRD_* of class/net/<netdev>/type, as netlink names them
SELECTORS = (('vendors', 'vendor'), ('deviceIDs', 'deviceID'), ('drivers', 'driver'), ('ifNames', 'ifName'),
             ('linkTypes', 'linkType'))


def daemonset(name, nodes):
    return {'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'metadata': {'name': name, 'namespace': NAMESPACE},
            'spec': {'selector': {'matchLabels': {'app': name}}, 'template': {
                'metadata': {'labels': {'app': name}}, 'spec': {'containers': [{'name': name, 'image': name}]}}},
            'status': {'currentNumberScheduled': nodes, 'numberMisscheduled': 0, 'desiredNumberScheduled': nodes,
                       'numberReady': nodes, 'updatedNumberScheduled': nodes, 'numberAvailable': nodes}}


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return ''


def node_netdevs(node):
    """The node's RDMA netdevs as the RDMA shared device plugin sees them (annotation, else sysfs fixture)."""
    annotation = (node['metadata'].get('annotations') or {}).get(NETDEVS_ANNOTATION)
    if annotation:
        return json.loads(annotation)
    ephemeral = os.environ.get('MOLECULE_EPHEMERAL_DIRECTORY')
    net = os.path.join(ephemeral or '', 'nodes', node['metadata']['name'], 'sys', 'class', 'net')
    if not ephemeral or not os.path.isdir(net):
        return []
    found = []
    for name in sorted(os.listdir(net)):
        interface = os.path.realpath(os.path.join(net, name))
        pci = os.path.dirname(os.path.dirname(interface))
        if not os.path.isdir(os.path.join(pci, 'infiniband')):
            continue  # no RDMA device on this function: the plugin leaves the netdev out
        driver = os.path.join(pci, 'driver')
        found.append({'ifName': name, 'vendor': _read(os.path.join(pci, 'vendor')).replace('0x', ''),
                      'deviceID': _read(os.path.join(pci, 'device')).replace('0x', ''),
                      'driver': os.path.basename(os.readlink(driver)) if os.path.islink(driver) else '',
                      'linkType': LINK_TYPES.get(_read(os.path.join(interface, 'type')), '')})
    return found


def selected(netdev, resource):
    """Whether a netdev passes every selector the resource sets (an empty or absent one passes all); a resource of
    the plugin's older form lists its netdevs in ``devices``."""
    selectors = resource.get('selectors') or ({'ifNames': resource['devices']} if resource.get('devices') else {})
    return all(not selectors.get(name) or netdev.get(field) in selectors[name] for name, field in SELECTORS)


def _expression_matches(expression, values_of):
    key, operator, values = expression.get('key'), expression.get('operator'), expression.get('values') or []
    value = values_of.get(key)
    if operator == 'In':
        return value in values
    if operator == 'NotIn':
        return value not in values
    if operator == 'Exists':
        return key in values_of
    if operator == 'DoesNotExist':
        return key not in values_of
    if operator in ('Gt', 'Lt') and value is not None and values:
        try:
            return int(value) > int(values[0]) if operator == 'Gt' else int(value) < int(values[0])
        except ValueError:
            return False
    return False


def affinity_selects(affinity, node):
    """A NodeAffinity's requiredDuringSchedulingIgnoredDuringExecution: any term whose expressions (labels) and
    fields (metadata.name) all match; no requirement selects every node."""
    required = (affinity or {}).get('requiredDuringSchedulingIgnoredDuringExecution') or {}
    terms = required.get('nodeSelectorTerms') or []
    if not required:
        return True
    labels = node['metadata'].get('labels') or {}
    fields = {'metadata.name': node['metadata']['name']}
    return any(all(_expression_matches(e, labels) for e in term.get('matchExpressions') or [])
               and all(_expression_matches(e, fields) for e in term.get('matchFields') or [])
               and (term.get('matchExpressions') or term.get('matchFields')) for term in terms)


def policy_selects(plural, spec, node):
    if plural == 'nicnodepolicies':
        labels = node['metadata'].get('labels') or {}
        return all(labels.get(k) == v for k, v in (spec.get('nodeSelector') or {}).items())
    return affinity_selects(spec.get('nodeAffinity'), node)


def on_change(api, group_version, plural, obj):
    if plural not in ('nicclusterpolicies', 'nicnodepolicies'):
        return
    spec = obj.get('spec') or {}
    nodes = [n for n in api.list('v1', 'nodes') if policy_selects(plural, spec, n)]
    present = [section for section in COMPONENTS if spec.get(section)]
    for section in present:
        api.add('apps/v1', 'daemonsets', daemonset(COMPONENTS[section][1], len(nodes)), manager=MANAGER)
    obj['status'] = {'state': 'ready', 'appliedStates': [{'name': COMPONENTS[s][0], 'state': 'ready'}
                                                         for s in present]}
    api.add(group_version, plural, obj, manager=MANAGER, subresource='status')
    config = json.loads((spec.get('rdmaSharedDevicePlugin') or {}).get('config') or '{"configList": []}')
    for node in nodes:
        node['metadata'].setdefault('labels', {})[WAIT_LABEL] = 'false'
        node = api.add('v1', 'nodes', node, manager=MANAGER)
        netdevs = node_netdevs(node)
        status = node.setdefault('status', {})
        for resource in config['configList']:
            name = '%s/%s' % (resource.get('resourcePrefix') or 'rdma', resource['resourceName'])
            count = resource['rdmaHcaMax'] if any(selected(d, resource) for d in netdevs) else 0
            for field in ('capacity', 'allocatable'):
                status.setdefault(field, {})[name] = str(count)
        api.add('v1', 'nodes', node, manager='kubelet', subresource='status')
