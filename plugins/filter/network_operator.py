# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Network Operator filters: objects from facts, and cluster state checks. Documentation: the .yml files."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._network_operator import (
    GROUP_LABEL, NetworkOperatorError, daemonsets_not_ready, helm_values, host_device_networks, host_ofed_conflicts,
    host_ofed_reason, host_ofed_refusal, merge_tolerations, network_operator_objects, node_label_patches,
    node_resources, policies_status)
from ansible_collections.gpunet.rdma.plugins.plugin_utils._filter_args import (
    Spec, a_dict, a_list, a_number, a_scalar, a_str, checked_ledger, either, filter_args, host_vars, names, nested)

PORTS = a_list('rdma_ports records (dicts)', a_dict('an rdma_ports record'), nullable=True)
INVENTORY_GROUPS = a_dict('the inventory groups (groups): group name -> host names',
                          values=names('host names', nullable=True), nullable=True)
TOLERATIONS = a_list('tolerations (dicts with key, operator, value, effect)', a_dict('a toleration'), nullable=True)
COMPONENT = a_dict('repository, image, version', nullable=True)
A_BOOL = Spec('a boolean', lambda value, expected: None if isinstance(value, bool) else 'must be %s' % expected)
# The options of gpunet.rdma.network_operator: the network_operator role's variables without the prefix.
OPTIONS = a_dict('components and settings: the network_operator role variables without the prefix', nullable=True,
                 keys={
                     'rdma_shared_device_plugin': COMPONENT,
                     'ofed_driver': COMPONENT,
                     'sriov_device_plugin': a_dict('repository, image, version, resources', nullable=True, keys={
                         'resources': a_list('resources (dicts with resource_name)', a_dict('a resource'),
                                             nullable=True)}),
                     'secondary_network': a_dict('multus, cni_plugins, ipam_plugin, ipoib', nullable=True,
                                                 values=COMPONENT),
                     'nv_ipam': COMPONENT,
                     'host_device_networks': a_list('networks (dicts with name, range or pool)',
                                                    a_dict('a network'), nullable=True),
                     'tolerations': TOLERATIONS,
                     'deployment_tolerations': TOLERATIONS,
                     'node_affinity': a_dict('a Kubernetes node affinity', nullable=True),
                     'image_pull_secrets': names('secret names', nullable=True),
                     'node_policies': either('auto, true or false', a_str('auto'), A_BOOL, nullable=True),
                     'node_selectors': a_dict('group -> nodeSelector (node label -> value)', nullable=True,
                                              values=a_dict('a nodeSelector', nullable=True)),
                     'node_label': a_str('a node label key such as gpunet.rdma/group', nullable=True),
                     'live_policy': a_dict('the cluster\'s NicClusterPolicy (k8s_info)', nullable=True),
                     'ofed_driver_groups': a_dict('group -> ofed_driver settings over network_operator_ofed_driver '
                                                  '(null: none)', nullable=True,
                                                  values=a_dict('ofed_driver settings', nullable=True)),
                     'ofed_driver_over_host_ofed': Spec('true or false', lambda value, expected: None if isinstance(
                         value, bool) else 'must be %s, as the role passes it (| bool)' % expected, nullable=True),
                     'host_ofed': a_dict('host -> why it runs its own OFED (gpunet.rdma.host_ofed)', nullable=True),
                     'fleet': a_dict('the output of gpunet.rdma.fabrics', nullable=True, keys={
                         'groups': a_dict('group name -> fabric', nullable=True,
                                          values=a_dict('a fabric of gpunet.rdma.fabrics'))}),
                 })


def _host_ports(hostvars, hosts):
    ports = []
    for host in hosts:
        variables = host_vars('network_operator_groups', hostvars, host)
        if variables is None:
            raise AnsibleFilterError('network_operator_groups: %s is not a host of the inventory' % host)
        facts = nested('network_operator_groups', 'ansible_facts of %s' % host,
                       variables.get('ansible_facts') or {}, a_dict('the facts of the host'))
        ports.extend(nested('network_operator_groups', 'ansible_facts.rdma_ports of %s' % host,
                            facts.get('rdma_ports') or [], PORTS))
    return ports


@filter_args('network_operator_groups',
             resources=a_list('{group, resource_name, link_types}', nullable=True, label='network_operator_resources'),
             fabrics=a_dict('the output of gpunet.rdma.fabrics', keys={
                 'groups': a_dict('group name -> fabric', values=a_dict('a fabric of gpunet.rdma.fabrics', keys={
                     'hosts': names('host names', nullable=True)}))}),
             hostvars=a_dict('hostvars: host name -> variables'),
             rdma_hca_max=a_number('rdmaHcaMax of the resources', whole=True),
             inventory_groups=INVENTORY_GROUPS)
def rdma_network_operator_groups(resources, fabrics, hostvars, rdma_hca_max=63, inventory_groups=None):
    """The groups the NicClusterPolicy serves, each with its hosts' discovered ports.

    ``resources`` (network_operator_resources) names them when not empty; otherwise every GPU group whose fabric
    says ``kubernetes: shared_device_plugin``, with the fabric's ``rdma_resource`` and link layer.
    """
    fabric_groups = fabrics.get('groups', {})
    groups = []
    if resources:
        for item in resources:
            if not isinstance(item, dict) or not item.get('group') or not item.get('resource_name'):
                raise AnsibleFilterError('network_operator_groups: every network_operator_resources entry needs '
                                         'group and resource_name, got %r' % (item,))
            if item.get('link_types') is not None and (isinstance(item['link_types'], (str, dict))
                                                       or not isinstance(item['link_types'], (list, tuple))):
                raise AnsibleFilterError('network_operator_groups: network_operator_resources entry %s: '
                                         'link_types must be a list of link layers (InfiniBand, Ethernet), got %r'
                                         % (item['group'], item['link_types']))
            members = list((inventory_groups or {}).get(item['group'])
                           or (fabric_groups.get(item['group']) or {}).get('hosts') or [])
            groups.append({'group': item['group'], 'resource_name': item['resource_name'],
                           'resource': 'rdma/%s' % item['resource_name'],
                           'rdma_hca_max': item.get('rdma_hca_max', rdma_hca_max),
                           'link_types': item.get('link_types'), 'hosts': members,
                           'ports': _host_ports(hostvars, members)})
        return groups
    for name, fabric in sorted(fabric_groups.items()):
        if fabric.get('kubernetes') != 'shared_device_plugin':
            continue
        prefix, _sep, resource_name = (fabric.get('rdma_resource') or '').partition('/')
        if prefix != 'rdma' or not resource_name:
            raise AnsibleFilterError('network_operator_groups: group %s: the RDMA shared device plugin of the '
                                     'Network Operator serves rdma/<name> resources; rdma_resource is %r'
                                     % (name, fabric.get('rdma_resource')))
        if not fabric.get('link_layer'):
            raise AnsibleFilterError('network_operator_groups: fabrics.groups.%s has no link_layer: the fabrics '
                                     'must be the output of gpunet.rdma.fabrics' % name)
        groups.append({'group': name, 'resource_name': resource_name, 'resource': fabric['rdma_resource'],
                       'rdma_hca_max': rdma_hca_max,
                       'link_types': [fabric['link_layer']], 'hosts': list(fabric.get('hosts') or []),
                       'ports': _host_ports(hostvars, fabric.get('hosts') or [])})
    return groups


@filter_args('network_operator',
             groups=a_list('groups of gpunet.rdma.network_operator_groups (dicts with resource_name, ports)', a_dict(
                 'a group with resource_name and ports', keys={
                     'ports': PORTS, 'link_types': names('link layers (InfiniBand, Ethernet)', nullable=True),
                     'hosts': names('host names', nullable=True)}), nullable=True),
             release=a_scalar('a Network Operator release such as v26.4.1'),
             options=OPTIONS)
def rdma_network_operator(groups, release, options=None):
    options = dict(options or {})
    groups = list(groups or [])
    fleet_hosts = {}
    for name, fabric in sorted(((options.get('fleet') or {}).get('groups') or {}).items()):
        if fabric.get('platform', 'bare_metal') == 'bare_metal':
            for host in fabric.get('hosts') or []:
                fleet_hosts[host] = name
    try:
        built = network_operator_objects(release, groups, options)
        objects = built['policies'] + host_device_networks(list(options.get('host_device_networks') or []))
        values = helm_values(release, options)
        conflicts = host_ofed_conflicts(built['layout'], built['policies'], groups, options.get('host_ofed'),
                                        fleet_hosts)
    except NetworkOperatorError as exc:
        raise AnsibleFilterError('network_operator: %s' % exc)
    return {'helm_values': values, 'objects': objects, 'resources': built['resources'], 'layout': built['layout'],
            'layout_reason': built['layout_reason'],
            'policies': [{'kind': p['kind'], 'name': p['metadata']['name']} for p in built['policies']],
            'node_labels': [{'group': r['group'], 'hosts': list(r['hosts']), 'label': list(r['node_selector'])[0],
                             'value': r['group']} for r in built['resources'] if r.get('label_nodes')],
            'host_ofed_conflicts': conflicts,
            'host_ofed_refusal': host_ofed_refusal(conflicts, bool(options.get('ofed_driver_over_host_ofed')))}


@filter_args('host_ofed', hosts=names('host names', nullable=True),
             hostvars=a_dict('hostvars: host name -> variables'))
def rdma_host_ofed(hosts, hostvars):
    """``{host: reason}`` for the hosts that run NVIDIA's OFED on the host (or whose driver facts are missing)."""
    found = {}
    for host in hosts or []:
        variables = host_vars('host_ofed', hostvars, host)
        if variables is None:
            raise AnsibleFilterError('host_ofed: %s is not a host of the inventory' % host)
        facts = nested('host_ofed', 'ansible_facts of %s' % host, variables.get('ansible_facts') or {},
                       a_dict('the facts of the host'))
        driver = nested('host_ofed', 'ansible_facts.rdma_driver of %s' % host, facts.get('rdma_driver'),
                        a_dict('rdma_driver facts', nullable=True))
        ledger = checked_ledger('host_ofed', variables, host)
        reason = host_ofed_reason(driver, ledger.get('ofed'))
        if reason:
            found[host] = reason
    return found


POLICY_REF = a_dict('{kind, name}', required=('kind', 'name'))


@filter_args('network_operator_status',
             found=a_list('NicClusterPolicy and NicNodePolicy objects (k8s_info resources)',
                          a_dict('a policy object', keys={'status': a_dict('the status', nullable=True)}),
                          nullable=True),
             expected=a_list('the policies to judge ({kind, name}, gpunet.rdma.network_operator\'s policies)', POLICY_REF,
                             nullable=True))
def rdma_network_operator_status(found, expected):
    return policies_status(list(expected or []), list(found or []))


@filter_args('node_policy_labels',
             resources=a_list('resources of gpunet.rdma.network_operator (dicts with group, hosts, label_nodes)',
                              a_dict('a resource record', keys={'hosts': names('host names', nullable=True)}),
                              nullable=True),
             nodes=a_list('Kubernetes Node objects (dicts)', a_dict('a Node object', keys={
                 'metadata': a_dict('name, labels', nullable=True, keys={
                     'labels': a_dict('labels', nullable=True)})}), nullable=True),
             label=a_str('the node label key of the default nodeSelectors'))
def rdma_node_policy_labels(resources, nodes, label=GROUP_LABEL):
    return node_label_patches(list(resources or []), list(nodes or []), label)


@filter_args('node_resources',
             resources=a_list('resources of gpunet.rdma.network_operator or gpunet.rdma.spiderpool (dicts with resource)', a_dict(
                 'a resource record', required=('resource',), keys={
                     'hosts': names('host names', nullable=True),
                     'if_names': names('interface names', nullable=True)}), nullable=True),
             nodes=a_list('Kubernetes Node objects (dicts)', a_dict('a Node object', keys={
                 'metadata': a_dict('name, labels', nullable=True, keys={
                     'labels': a_dict('labels', nullable=True)}),
                 'status': a_dict('allocatable', nullable=True, keys={
                     'allocatable': a_dict('resource -> quantity', nullable=True)})}), nullable=True),
             inventory_groups=INVENTORY_GROUPS)
def rdma_node_resources(resources, nodes, inventory_groups=None):
    resources = [dict(r) for r in resources or []]
    for resource in resources:
        if 'hosts' not in resource:
            resource['hosts'] = list((inventory_groups or {}).get(resource.get('group'), []))
    return node_resources(resources, list(nodes or []))


@filter_args('daemonsets_not_ready',
             daemonsets=a_list('DaemonSet objects (dicts)', a_dict('a DaemonSet object', keys={
                 'metadata': a_dict('name', nullable=True),
                 'status': a_dict('desiredNumberScheduled, numberReady', nullable=True)}), nullable=True))
def rdma_daemonsets_not_ready(daemonsets):
    return daemonsets_not_ready(list(daemonsets or []))


@filter_args('merge_tolerations', existing=TOLERATIONS, wanted=TOLERATIONS)
def rdma_merge_tolerations(existing, wanted):
    try:
        return merge_tolerations(list(existing or []), list(wanted or []))
    except NetworkOperatorError as exc:
        raise AnsibleFilterError('merge_tolerations: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {
            'network_operator': rdma_network_operator,
            'network_operator_groups': rdma_network_operator_groups,
            'node_resources': rdma_node_resources,
            'daemonsets_not_ready': rdma_daemonsets_not_ready,
            'merge_tolerations': rdma_merge_tolerations,
            'host_ofed': rdma_host_ofed,
            'network_operator_status': rdma_network_operator_status,
            'node_policy_labels': rdma_node_policy_labels,
        }
