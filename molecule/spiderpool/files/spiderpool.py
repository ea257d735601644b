# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stand-ins inside the kube-apiserver double (its on_change hook) for what runs on the nodes.

* the DaemonSet controller and the kubelets: a DaemonSet of the spiderpool namespace runs, ready, on every node its
  pod template's nodeSelector selects;
* the RDMA shared device plugin (its DaemonSet, ``spiderpool-rdma-shared-device-plugin``): once its ConfigMap is
  stored, every node the DaemonSet runs on reports each resource of config.json's configList
  (resourcePrefix/resourceName) in its capacity and allocatable, as the plugin and the kubelet do: its rdmaHcaMax
  when one of the node's RDMA netdevs matches the resource's selectors (vendors, deviceIDs, drivers, ifNames,
  linkTypes), 0 when none does (the plugin's empty resource server).

A node's netdevs come from its ``gpunet.test/rdma-netdevs`` annotation (a JSON list of ``{ifName, vendor, deviceID,
driver, linkType}``, for a test to set) or else from the scenario's sysfs fixture of the node,
``$MOLECULE_EPHEMERAL_DIRECTORY/nodes/<node>/sys`` (molecule.yml's gpunet_rdma_sysfs_root): the netdevs of
``class/net`` whose PCI function has an RDMA device. A node described by neither has none.
"""

from __future__ import annotations

import json
import os

NAMESPACE = 'spiderpool'
PLUGIN_CONFIG = 'spiderpool-rdma-shared-device-plugin'
NETDEVS_ANNOTATION = 'gpunet.test/rdma-netdevs'
LINK_TYPES = {'32': 'infiniband', '1': 'ether'}  # ARPHRD_* of class/net/<netdev>/type, as netlink names them
SELECTORS = (('vendors', 'vendor'), ('deviceIDs', 'deviceID'), ('drivers', 'driver'), ('ifNames', 'ifName'),
             ('linkTypes', 'linkType'))


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


def runs_on(daemonset, node):
    """Whether the DaemonSet's pod template's nodeSelector selects the node (no DaemonSet: every node)."""
    wanted = ((((daemonset or {}).get('spec') or {}).get('template') or {}).get('spec') or {}).get('nodeSelector')
    labels = node['metadata'].get('labels') or {}
    return all(labels.get(k) == v for k, v in (wanted or {}).items())


def on_change(api, group_version, plural, obj):
    metadata = obj['metadata']
    if plural == 'daemonsets' and metadata.get('namespace') == NAMESPACE and (
            (obj.get('status') or {}).get('observedGeneration') != metadata.get('generation')):
        nodes = len([n for n in api.list('v1', 'nodes') if runs_on(obj, n)])
        obj['status'] = {'observedGeneration': metadata.get('generation'), 'desiredNumberScheduled': nodes,
                         'currentNumberScheduled': nodes, 'numberReady': nodes, 'updatedNumberScheduled': nodes,
                         'numberAvailable': nodes, 'numberMisscheduled': 0}
        api.add(group_version, plural, obj, manager='kube-controller-manager', subresource='status')
    if plural == 'configmaps' and metadata['name'] == PLUGIN_CONFIG:
        config = json.loads(obj['data']['config.json'])
        plugin = api.get('apps/v1', 'daemonsets', PLUGIN_CONFIG, metadata.get('namespace'))
        for node in api.list('v1', 'nodes'):
            if not runs_on(plugin, node):
                continue
            netdevs = node_netdevs(node)
            status = node.setdefault('status', {})
            for resource in config['configList']:
                name = '%s/%s' % (resource['resourcePrefix'], resource['resourceName'])
                matched = any(selected(d, resource) for d in netdevs)
                for field in ('capacity', 'allocatable'):
                    status.setdefault(field, {})[name] = str(resource['rdmaHcaMax'] if matched else 0)
            api.add('v1', 'nodes', node, manager='kubelet', subresource='status')
