# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Spiderpool filter: macvlan RoCE networks per GPU-affine NIC from facts. Documentation: the .yml file."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.plugin_utils._spiderpool import SpiderpoolError, build, unknown_values
from ansible_collections.gpunet.rdma.plugins.plugin_utils._filter_args import (
    a_dict, a_list, a_scalar, filter_args, names)

_DICTS = {
    'pod_resource_inject': a_dict('enabled, annotation, group, namespaces_include, namespaces_exclude', nullable=True,
                                  keys={'namespaces_include': names('namespaces', nullable=True),
                                        'namespaces_exclude': names('namespaces', nullable=True)}),
    'test_workload': a_dict('name, namespace, image, node_names', nullable=True,
                            keys={'node_names': names('node names', nullable=True)}),
    'calico': a_dict('ipv4_method, ipv6_method, container', nullable=True),
    'extra_helm_values': a_dict('helm values', nullable=True),
}
# The options: the spiderpool role's variables without the prefix.
OPTIONS = a_dict('the spiderpool role variables without the prefix', nullable=True, keys=dict(_DICTS, **{
    'gpu_nics': a_list('{gpu, nic} (GPU index and its NIC)', a_dict('a {gpu, nic} entry'), nullable=True),
    'ip_pools': a_list('IP pools (dicts with gpu, subnet, gateway, ips)', a_dict('an IP pool', keys={
        'ips': names('addresses or address ranges', nullable=True),
        'exclude_ips': names('addresses or address ranges', nullable=True)}), nullable=True),
}))


@filter_args('spiderpool',
             hosts=a_list("the group's hosts (dicts with host, ports, netns)", a_dict(
                 'a host with its ports and netns', required=('host',), keys={
                     'ports': a_list('rdma_ports records (dicts)', a_dict('an rdma_ports record'), nullable=True),
                     'netns': a_dict('the rdma_driver.netns facts', nullable=True)}), nullable=True),
             group=a_scalar('the inventory group'),
             options=OPTIONS,
             chart_values=a_dict("the chart's default values", nullable=True))
def rdma_spiderpool(hosts, group, options=None, chart_values=None):
    options = dict(options or {})
    try:
        built = build(group, list(hosts or []), options)
        if chart_values:
            unknown = unknown_values(built['helm_values'], chart_values)
            if unknown:
                raise SpiderpoolError('helm values the Spiderpool chart does not have (helm would ignore them): %s'
                                      % ', '.join(unknown))
    except SpiderpoolError as exc:
        raise AnsibleFilterError('spiderpool: group %s: %s' % (group, exc))
    return built


class FilterModule(object):
    def filters(self):
        return {'spiderpool': rdma_spiderpool}
