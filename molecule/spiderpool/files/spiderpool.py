# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stand-ins inside the kube-apiserver double (its on_change hook) for what runs on the nodes.

* the DaemonSet controller and the kubelets: a DaemonSet of the spiderpool namespace runs, ready, on every node;
* the RDMA shared device plugin: once its ConfigMap is stored, every node reports each resource of config.json's
  configList (resourcePrefix/resourceName) with its rdmaHcaMax, as the plugin does on a node that has the ifNames.
"""

from __future__ import annotations

import json

PLUGIN_CONFIG = 'spiderpool-rdma-shared-device-plugin'


def on_change(api, group_version, plural, obj):
    metadata = obj['metadata']
    if plural == 'daemonsets' and metadata.get('namespace') == 'spiderpool' and (
            (obj.get('status') or {}).get('observedGeneration') != metadata.get('generation')):
        nodes = len(api.list('v1', 'nodes'))
        obj['status'] = {'observedGeneration': metadata.get('generation'), 'desiredNumberScheduled': nodes,
                         'currentNumberScheduled': nodes, 'numberReady': nodes, 'updatedNumberScheduled': nodes,
                         'numberAvailable': nodes, 'numberMisscheduled': 0}
        api.add(group_version, plural, obj)
    if plural == 'configmaps' and metadata['name'] == PLUGIN_CONFIG:
        config = json.loads(obj['data']['config.json'])
        for node in api.list('v1', 'nodes'):
            for resource in config['configList']:
                name = '%s/%s' % (resource['resourcePrefix'], resource['resourceName'])
                node['status']['allocatable'][name] = str(resource['rdmaHcaMax'])
            api.add('v1', 'nodes', node)
