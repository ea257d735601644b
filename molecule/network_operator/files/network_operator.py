# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stand-in for the NVIDIA Network Operator inside the kube-apiserver double (its on_change hook).

When a NicClusterPolicy or NicNodePolicy is stored, the operator reconciles it: one ready DaemonSet per component in
its namespace, the policy's status (state ready, one applied state per component), and on every node the policy
selects (a NicNodePolicy's nodeSelector; every node for the NicClusterPolicy) mofed.wait=false and, from the RDMA
shared device plugin's config, each resource with its rdmaHcaMax.
"""

from __future__ import annotations

import json

NAMESPACE = 'nvidia-network-operator'
# spec section -> the operator's state name and DaemonSet
COMPONENTS = {'rdmaSharedDevicePlugin': ('state-RDMA-device-plugin', 'rdma-shared-dp-ds'),
              'ofedDriver': ('state-OFED', 'mofed-ds'),
              'sriovDevicePlugin': ('state-SRIOV-device-plugin', 'sriov-device-plugin'),
              'nvIpam': ('state-nv-ipam-cni', 'nv-ipam-node')}
WAIT_LABEL = 'network.nvidia.com/operator.mofed.wait'


def daemonset(name, nodes):
    return {'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'metadata': {'name': name, 'namespace': NAMESPACE},
            'spec': {'selector': {'matchLabels': {'app': name}}, 'template': {
                'metadata': {'labels': {'app': name}}, 'spec': {'containers': [{'name': name, 'image': name}]}}},
            'status': {'currentNumberScheduled': nodes, 'numberMisscheduled': 0, 'desiredNumberScheduled': nodes,
                       'numberReady': nodes, 'updatedNumberScheduled': nodes, 'numberAvailable': nodes}}


def on_change(api, group_version, plural, obj):
    if plural not in ('nicclusterpolicies', 'nicnodepolicies'):
        return
    spec = obj.get('spec') or {}
    selector = spec.get('nodeSelector') or {} if plural == 'nicnodepolicies' else {}
    nodes = [n for n in api.list('v1', 'nodes')
             if all((n['metadata'].get('labels') or {}).get(k) == v for k, v in selector.items())]
    present = [section for section in COMPONENTS if spec.get(section)]
    for section in present:
        api.add('apps/v1', 'daemonsets', daemonset(COMPONENTS[section][1], len(nodes)))
    obj['status'] = {'state': 'ready', 'appliedStates': [{'name': COMPONENTS[s][0], 'state': 'ready'}
                                                         for s in present]}
    api.add(group_version, plural, obj)
    config = json.loads((spec.get('rdmaSharedDevicePlugin') or {}).get('config') or '{"configList": []}')
    for node in nodes:
        node['metadata'].setdefault('labels', {})[WAIT_LABEL] = 'false'
        for resource in config['configList']:
            node['status']['allocatable']['rdma/' + resource['resourceName']] = str(resource['rdmaHcaMax'])
        api.add('v1', 'nodes', node)
