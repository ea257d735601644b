#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
---
module: node_extended_resources
short_description: Remove stale extended resources from Kubernetes nodes
version_added: 0.1.0
description:
  - A device plugin that is removed or renamed (e.g. C(nvidia.com/hostdev) after moving to the RDMA shared device
    plugin) leaves its extended resource in the nodes' C(status.capacity) and C(status.allocatable); the scheduler
    keeps placing pods that request it. This removes the named resources through the node status subresource with a
    JSON patch (C(/) in a resource name escaped as C(~1)), as the seed's C(kubectl proxy) and C(curl) script does.
  - Only resources present on a node are patched; nothing else of the status is touched.
  - In check mode it lists what would be removed.
author:
  - gpunet.rdma contributors (@gpunet)
requirements:
  - kubernetes (Python client)
options:
  names:
    description: Extended resources to remove, e.g. V(nvidia.com/hostdev).
    type: list
    elements: str
    required: true
  nodes:
    description: Nodes to clean; empty = every node of the cluster.
    type: list
    elements: str
    default: []
  kubeconfig:
    description: Kubeconfig file; default the client's (E(KUBECONFIG), C(~/.kube/config)) or the in-cluster service account.
    type: path
  context:
    description: Kubeconfig context.
    type: str
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - Run it once from the controller (C(run_once), C(delegate_to=localhost)), not per node.
'''

EXAMPLES = r'''
- name: Remove the SR-IOV hostdev resource left by the old NicClusterPolicy
  gpunet.rdma.node_extended_resources:
    names: [nvidia.com/hostdev]
  delegate_to: localhost
  run_once: true
'''

RETURN = r'''
removed:
  description: Per node, the resources removed (or, in check mode, that would be removed).
  returned: always
  type: dict
  sample: {gpu-v100-01: [nvidia.com/hostdev]}
patches:
  description: Per node, the JSON patch sent (or, in check mode, that would be sent).
  returned: always
  type: dict
  sample: {gpu-v100-01: [{op: remove, path: /status/capacity/nvidia.com~1hostdev}]}
'''

import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpunet.rdma.plugins.module_utils._network_operator import stale_resource_patch

try:
    from kubernetes import client, config
    from kubernetes.client.rest import ApiException
    KUBERNETES_IMPORT_ERROR = None
except ImportError:  # pragma: no cover
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()
    client = config = None
    ApiException = Exception


def core_api(module):
    try:
        config.load_kube_config(config_file=module.params['kubeconfig'], context=module.params['context'])
    except Exception:  # pylint: disable=broad-except
        try:
            config.load_incluster_config()
        except Exception as exc:  # pylint: disable=broad-except
            module.fail_json(msg='No Kubernetes credentials: %s. Set kubeconfig (or KUBECONFIG).' % exc)
    return client.CoreV1Api()


def main():
    module = AnsibleModule(
        argument_spec=dict(
            names=dict(type='list', elements='str', required=True),
            nodes=dict(type='list', elements='str', default=[]),
            kubeconfig=dict(type='path'),
            context=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    if KUBERNETES_IMPORT_ERROR:
        module.fail_json(msg=missing_required_lib('kubernetes'), exception=KUBERNETES_IMPORT_ERROR)
    api = core_api(module)
    try:
        if module.params['nodes']:
            nodes = [api.read_node_status(name) for name in module.params['nodes']]
        else:
            nodes = api.list_node().items
    except ApiException as exc:
        module.fail_json(msg='Cannot read the nodes: %s' % exc)
    removed, patches = {}, {}
    for node in nodes:
        status = api.api_client.sanitize_for_serialization(node.status) or {}
        patch = stale_resource_patch(status, module.params['names'])
        if not patch:
            continue
        name = node.metadata.name
        patches[name] = patch
        removed[name] = sorted(set(n for n in module.params['names']
                                   if n in (status.get('capacity') or {}) or n in (status.get('allocatable') or {})))
        if not module.check_mode:
            try:
                api.patch_node_status(name, patch)
            except ApiException as exc:
                module.fail_json(msg='Removing %s from node %s failed: %s' % (', '.join(removed[name]), name, exc),
                                 removed=removed, patches=patches)
    module.exit_json(changed=bool(patches), removed=removed, patches=patches)


if __name__ == '__main__':
    main()
