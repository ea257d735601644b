#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
---
module: containerd_tasks_info
short_description: List running containerd tasks with their memlock limit
version_added: 0.1.0
description:
  - Lists the running tasks (containers) of the given containerd namespaces with the memlock limit their process
    really has (from C(/proc/PID/limits)) and, for Kubernetes containers, their pod.
  - A changed base runtime spec only reaches containers created after containerd restarted; this tells which
    running containers still carry an older limit and need recreating.
  - Reads only.
author:
  - gpunet.rdma contributors (@gpunet)
options:
  namespaces:
    description: containerd namespaces to look in; Kubernetes uses V(k8s.io).
    type: list
    elements: str
    default: [k8s.io]
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpunet.rdma.containerd_tools
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - Commands run as argument lists with C(LC_ALL=C).
'''

EXAMPLES = r'''
- name: Containers whose memlock is not unlimited yet
  gpunet.rdma.containerd_tasks_info:
  register: running

- name: Show them
  ansible.builtin.debug:
    msg: "{{ running.tasks | rejectattr('memlock_soft', 'eq', 18446744073709551615) | map(attribute='pod_name') }}"
'''

RETURN = r'''
tasks:
  description: The running tasks.
  returned: always
  type: list
  elements: dict
  contains:
    namespace:
      description: The containerd namespace.
      type: str
      sample: k8s.io
    id:
      description: The container (task) id.
      type: str
    pid:
      description: The task's process id.
      type: int
    memlock_soft:
      description: Soft memlock limit in bytes (18446744073709551615 for unlimited); null when the process is gone.
      type: int
    memlock_hard:
      description: Hard memlock limit in bytes; null when the process is gone.
      type: int
    pod_name:
      description: The Kubernetes pod (label C(io.kubernetes.pod.name)), null for other containers.
      type: str
    pod_namespace:
      description: The pod's Kubernetes namespace (label C(io.kubernetes.pod.namespace)), or null.
      type: str
'''


from ansible_collections.gpunet.rdma.plugins.module_utils.runtime._containerd import (
    CTR,
    ConfigError,
    container_labels,
    parse_memlock,
    parse_task_list,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import (
    CONTAINERD_DIRS,
    HostReadError,
    find_tool,
    output_summary,
    read_text,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._module import RdmaModule


def main():
    module = RdmaModule(
        argument_spec=dict(
            namespaces=dict(type='list', elements='str', default=['k8s.io']),
            ctr_path=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    namespaces = module.params['namespaces']
    if any(not name or not name.strip() for name in namespaces):
        module.fail_json(msg='namespaces holds an empty name; give containerd namespaces such as k8s.io.')
    ctr = find_tool(module, 'ctr', explicit=module.params['ctr_path'], option='ctr_path',
                    opt_dirs=CONTAINERD_DIRS, hint='Install containerd or set ctr_path.')
    tasks = []
    for namespace in namespaces:
        rc, out, err = CTR(module, ctr).run('namespace tasks', namespace=namespace)[1:]
        if rc != 0:
            module.fail_json(msg='`%s --namespace %s task ls` failed (rc=%d): %s. Is containerd running?'
                             % (ctr, namespace, rc, output_summary(out, err)), rc=rc)
        try:
            listed = parse_task_list(out)
        except ConfigError as exc:
            module.fail_json(msg='%s: is ctr_path (%s) the containerd client `ctr`? Its output is not the task '
                             'table of `ctr task ls`.' % (exc, ctr))
        for task in listed:
            if task['status'] != 'RUNNING':
                continue
            soft = hard = None
            try:
                soft, hard = parse_memlock(read_text('/proc/%d/limits' % task['pid'], lenient=True))
            except (HostReadError, ConfigError):
                pass  # the process ended meanwhile, or the kernel shows no memlock line
            rc, out, err = CTR(module, ctr).run('namespace container_info', namespace=namespace,
                                                container_info=task['id'])[1:]
            labels = container_labels(out) if rc == 0 else {}
            tasks.append(dict(namespace=namespace, id=task['id'], pid=task['pid'], memlock_soft=soft,
                              memlock_hard=hard, pod_name=labels.get('io.kubernetes.pod.name'),
                              pod_namespace=labels.get('io.kubernetes.pod.namespace')))
    module.exit_json(changed=False, tasks=tasks)


if __name__ == '__main__':
    main()
