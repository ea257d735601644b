# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The SR-IOV VFs of the fleet against what Kubernetes advertises.

Documentation: sriov_nodes.yml beside this file.
"""

from __future__ import annotations

from ansible_collections.gpunet.rdma.plugins.module_utils.tuning._sriov import hostdev_expectations, hostdev_rows
from ansible_collections.gpunet.rdma.plugins.plugin_utils._filter_args import (
    a_dict, a_list, checked_ledger, filter_args, host_vars, names)


@filter_args('sriov_nodes', hosts=names('host names (e.g. groups.all)'),
             hostvars=a_dict('hostvars: host name -> variables'),
             nodes=a_list('Node objects (the resources of kubernetes.core.k8s_info)', a_dict('a Node object'),
                          nullable=True))
def rdma_sriov_nodes(hosts, hostvars, nodes):
    """One row per host whose SR-IOV stage made VFs for a Kubernetes resource: does its node advertise them?"""
    def variables_of(host):
        variables = host_vars('sriov_nodes', hostvars, host)
        checked_ledger('sriov_nodes', variables, host)
        return variables

    expectations = hostdev_expectations([str(host) for host in hosts], variables_of)
    return hostdev_rows(expectations, list(nodes or []))


class FilterModule(object):
    def filters(self):
        return {'sriov_nodes': rdma_sriov_nodes}
