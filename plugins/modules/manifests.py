#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
---
module: manifests
short_description: Write rendered Kubernetes manifests into a directory on the controller, in one task
version_added: 0.1.0
description:
  - The render mode of the cluster stage (GitOps, review, the lab) writes helm values and one file per Kubernetes
    object. This action writes them all in one task on the controller - no module is started per file - and only the
    files whose content or mode differs.
  - All or nothing - every changed file is first written to a temporary file beside it, and only when all are written
    are they renamed over the old ones; a failure (full disk, permissions) leaves every manifest byte-identical.
  - A manifest that is a symlink (for example into a GitOps checkout) is written where the link points; the link
    stays.
  - Runs on the controller as an action plugin (like M(ansible.builtin.set_fact)); the directory is on the controller.
author:
  - gpunet.rdma contributors (@gpunet)
options:
  dest:
    description: The directory; created when missing.
    type: path
    required: true
  files:
    description: The files to write.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: The file name inside O(dest) (no directories).
        type: str
        required: true
      content:
        description: The file's text.
        type: str
        required: true
  mode:
    description: The mode of the files written.
    type: str
    default: "0644"
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details: Reports which files would change, writes nothing.
  diff_mode:
    support: full
    details: One diff per file that changes.
  platform:
    support: full
    platforms: posix
seealso:
  - module: ansible.builtin.copy
'''

EXAMPLES = r'''
- name: Write the NicClusterPolicy and the helm values for GitOps
  gpunet.rdma.manifests:
    dest: ./rdma-manifests
    files:
      - name: network-operator-values.yaml
        content: "{{ values | to_nice_yaml(indent=2) }}"
      - name: nicclusterpolicy-nic-cluster-policy.yaml
        content: "{{ policy | to_nice_yaml(indent=2) }}"
'''

RETURN = r'''
dest:
  description: The directory, absolute.
  returned: always
  type: str
written:
  description: The names of the files that changed (or would change in check mode).
  returned: always
  type: list
  elements: str
files:
  description: The paths of every file of O(files).
  returned: always
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule


def main():
    # The work is done by the action plugin on the controller; reaching the host means it was bypassed.
    module = AnsibleModule(argument_spec=dict(
        dest=dict(type='path', required=True),
        files=dict(type='list', elements='dict', required=True, options=dict(
            name=dict(type='str', required=True), content=dict(type='str', required=True))),
        mode=dict(type='str', default='0644')), supports_check_mode=True)
    module.fail_json(msg='gpunet.rdma.manifests runs on the controller as an action plugin; it was sent to the host, '
                         'which means the collection is not installed where ansible-playbook runs (check '
                         'ANSIBLE_COLLECTIONS_PATH), or the task used ansible.legacy.manifests.')


if __name__ == '__main__':
    main()
