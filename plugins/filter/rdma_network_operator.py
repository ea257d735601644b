# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Network Operator filters: objects from facts, and cluster state checks. Documentation: the .yml files."""

from __future__ import annotations

import json

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.module_utils._network_operator import (
    NetworkOperatorError, daemonsets_not_ready, helm_values, host_device_networks, merge_tolerations, nic_cluster_policy,
    node_resources)


def _host_ports(hostvars, hosts):
    ports = []
    for host in hosts:
        try:
            facts = hostvars[host].get('ansible_facts') or {}
        except KeyError:
            raise AnsibleFilterError('rdma_network_operator_groups: %s is not a host of the inventory' % host)
        ports.extend(facts.get('rdma_ports') or [])
    return ports


def rdma_network_operator_groups(resources, fabrics, hostvars, rdma_hca_max=63, inventory_groups=None):
    """The groups the NicClusterPolicy serves, each with its hosts' discovered ports.

    ``resources`` (network_operator_resources) names them when not empty; otherwise every GPU group whose fabric
    says ``kubernetes: shared_device_plugin``, with the fabric's ``rdma_resource`` and link layer.
    """
    if resources is not None and (isinstance(resources, (str, dict)) or not isinstance(resources, (list, tuple))):
        raise AnsibleFilterError('rdma_network_operator_groups: network_operator_resources must be a list of '
                                 '{group, resource_name, link_types}, got %s' % type(resources).__name__)
    if not isinstance(fabrics, dict) or not isinstance(fabrics.get('groups', {}), dict):
        raise AnsibleFilterError('rdma_network_operator_groups: the fabrics must be the output of rdma_fabrics')
    groups = []
    if resources:
        for item in resources:
            if not isinstance(item, dict) or not item.get('group') or not item.get('resource_name'):
                raise AnsibleFilterError('rdma_network_operator_groups: every network_operator_resources entry needs '
                                         'group and resource_name, got %r' % (item,))
            members = list((inventory_groups or {}).get(item['group'])
                           or (fabrics['groups'].get(item['group']) or {}).get('hosts') or [])
            groups.append({'group': item['group'], 'resource_name': item['resource_name'],
                           'resource': 'rdma/%s' % item['resource_name'],
                           'rdma_hca_max': item.get('rdma_hca_max', rdma_hca_max),
                           'link_types': item.get('link_types'), 'hosts': members,
                           'ports': _host_ports(hostvars, members)})
        return groups
    for name, fabric in sorted(fabrics['groups'].items()):
        if fabric.get('kubernetes') != 'shared_device_plugin':
            continue
        prefix, _sep, resource_name = (fabric.get('rdma_resource') or '').partition('/')
        if prefix != 'rdma' or not resource_name:
            raise AnsibleFilterError('rdma_network_operator_groups: group %s: the RDMA shared device plugin of the '
                                     'Network Operator serves rdma/<name> resources; rdma_resource is %r'
                                     % (name, fabric.get('rdma_resource')))
        groups.append({'group': name, 'resource_name': resource_name, 'resource': fabric['rdma_resource'],
                       'rdma_hca_max': rdma_hca_max,
                       'link_types': [fabric['link_layer']], 'hosts': list(fabric.get('hosts') or []),
                       'ports': _host_ports(hostvars, fabric.get('hosts') or [])})
    return groups


def rdma_network_operator(groups, release, options=None):
    options = dict(options or {})
    groups = list(groups or [])
    try:
        policy = nic_cluster_policy(release, groups, options)
        objects = [policy] + host_device_networks(list(options.get('host_device_networks') or []))
        values = helm_values(release, options)
    except NetworkOperatorError as exc:
        raise AnsibleFilterError('rdma_network_operator: %s' % exc)
    config = json.loads(policy['spec'].get('rdmaSharedDevicePlugin', {}).get('config') or '{"configList": []}')
    resources = []
    for group, entry in zip(groups, config['configList']):
        selectors = entry.get('selectors') or {}
        resources.append({'group': group.get('group'), 'hosts': list(group.get('hosts') or []),
                          'resource': 'rdma/%s' % entry['resourceName'], 'if_names': selectors.get('ifNames', []),
                          'link_types': selectors.get('linkTypes', [])})
    return {'helm_values': values, 'objects': objects, 'resources': resources}


def rdma_node_resources(resources, nodes, inventory_groups=None):
    resources = [dict(r) for r in resources or []]
    for resource in resources:
        if 'hosts' not in resource:
            resource['hosts'] = list((inventory_groups or {}).get(resource.get('group'), []))
    return node_resources(resources, list(nodes or []))


def rdma_daemonsets_not_ready(daemonsets):
    return daemonsets_not_ready(list(daemonsets or []))


def rdma_merge_tolerations(existing, wanted):
    try:
        return merge_tolerations(list(existing or []), list(wanted or []))
    except NetworkOperatorError as exc:
        raise AnsibleFilterError('rdma_merge_tolerations: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {
            'rdma_network_operator': rdma_network_operator,
            'rdma_network_operator_groups': rdma_network_operator_groups,
            'rdma_node_resources': rdma_node_resources,
            'rdma_daemonsets_not_ready': rdma_daemonsets_not_ready,
            'rdma_merge_tolerations': rdma_merge_tolerations,
        }
