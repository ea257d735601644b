# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stand-in for the NVIDIA Network Operator inside the kube-apiserver double (its on_change hook).

Once the NicClusterPolicy tolerates cordoned nodes, the driver pod runs on every node: the operator clears the
mofed.wait label and the RDMA shared device plugin reports the policy's resource with its rdmaHcaMax.
"""

from __future__ import annotations

import json

UNSCHEDULABLE = {'key': 'node.kubernetes.io/unschedulable', 'operator': 'Exists', 'effect': 'NoSchedule'}
WAIT_LABEL = 'network.nvidia.com/operator.mofed.wait'


def on_change(api, group_version, plural, obj):
    if plural != 'nicclusterpolicies' or UNSCHEDULABLE not in (obj['spec'].get('tolerations') or []):
        return
    config = json.loads(obj['spec']['rdmaSharedDevicePlugin']['config'])['configList']
    for node in api.list('v1', 'nodes'):
        node['metadata']['labels'][WAIT_LABEL] = 'false'
        for resource in config:
            node['status']['allocatable']['rdma/' + resource['resourceName']] = str(resource['rdmaHcaMax'])
        api.add('v1', 'nodes', node)
