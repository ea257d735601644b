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
            'rdma_node_resources': rdma_node_resources,
            'rdma_daemonsets_not_ready': rdma_daemonsets_not_ready,
            'rdma_merge_tolerations': rdma_merge_tolerations,
        }
