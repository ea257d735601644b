#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
---
module: ledger
short_description: Record a stage's outcome in the host's stage ledger (gpunet_rdma_ledger)
version_added: 0.1.0
description:
  - Every stage of the collection, host or cluster, records its outcome in one envelope under one fact,
    C(ansible_facts.gpunet_rdma_ledger), a dict of stage name to C(stage), C(status), C(changed), C(pending),
    C(problems), C(detail). The rollout (filter P(gpunet.rdma.rollout_plan#filter)) decides from the ledger
    alone which hosts go through serial batches and what they do there; the fleet report
    (P(gpunet.rdma.fleet_report#filter)) shows every stage from it. A stage added later shows up in both.
  - Runs on the controller, without connecting to the host (an action plugin, like M(ansible.builtin.set_fact)).
  - Refuses an unknown pending action, a C(pending) item of another shape and a C(detail) that is not a dict, naming
    the stage.
author:
  - gpunet.rdma contributors (@gpunet)
options:
  stage:
    description: The stage to record (C(firmware), C(ofed), C(netns), C(gpudirect), C(runtime), C(validation), ...).
    type: str
  changed:
    description: Whether the stage changed something on this run.
    type: bool
    default: false
  pending:
    description:
      - Disruptive steps the stage's changes wait for, each an action name or C({action, allowed, reason}).
      - Actions are V(firmware_reset), V(driver_restart), V(netns_switch), V(runtime_restart), V(sriov_change) and
        V(reboot); C(allowed) says whether this run may take the step (the stage's opt-in variable), a bare name means
        not allowed.
    type: list
    elements: raw
    default: []
  problems:
    description: What the report should point out.
    type: list
    elements: str
    default: []
  detail:
    description: The stage's own record, shown by the report (e.g. firmware values, driver versions).
    type: dict
    default: {}
  status:
    description: The status; derived when omitted (failed, else pending, else changed, else ok).
    type: str
    choices: [ok, changed, pending, failed, skipped]
  failed:
    description: The stage failed (the report names it; the node is failed by the report play).
    type: bool
    default: false
  resolve:
    description:
      - Instead of recording a stage, mark these actions as done in every stage (after a node's batch took them); a
        V(reboot) resolves every pending action. Mutually exclusive with O(stage).
      - An action name other than these is refused (a typo would resolve nothing and leave the step pending).
    type: list
    elements: str
    choices: [firmware_reset, driver_restart, netns_switch, runtime_restart, sriov_change, reboot]
  how:
    description: With O(resolve), what to note in each touched stage's C(detail.activated_by).
    type: str
  hold:
    description:
      - Instead of recording a stage, hold these allowed pending actions in every stage (a guard found that taking
        them now would do harm, e.g. the blast-radius guard of role P(gpunet.rdma.rollout#role)); each stays
        pending, no longer allowed, its reason followed by the hold's. Mutually exclusive with O(stage) and
        O(resolve).
    type: list
    elements: dict
    suboptions:
      action:
        description: The pending action to hold, one of the actions of O(pending).
        type: str
        required: true
        choices: [firmware_reset, driver_restart, netns_switch, runtime_restart, sriov_change, reboot]
      reason:
        description: Why it is held (shown in the report).
        type: str
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
    details: Bookkeeping on the controller; it works the same in check mode.
  diff_mode:
    support: none
  platform:
    support: full
    platforms: all
seealso:
  - module: ansible.builtin.set_fact
notes:
  - The fact is C(ansible_facts.gpunet_rdma_ledger); the cluster stage records on C(localhost).
'''

EXAMPLES = r'''
- name: Record the firmware stage with a reboot it waits for
  gpunet.rdma.ledger:
    stage: firmware
    changed: true
    pending:
      - action: reboot
        allowed: true
        reason: mlx5_0 LINK_TYPE_P1
    detail: "{{ nic_firmware_result }}"

- name: Hold a firmware reset that would cut the node off (the management path runs over the device)
  gpunet.rdma.ledger:
    hold:
      - action: firmware_reset
        reason: bond0 carries the SSH connection and runs over mlx5_bond_0

- name: After the node's reboot, everything pending is done
  gpunet.rdma.ledger:
    resolve: [reboot]
    how: reboot
'''

RETURN = r'''
ansible_facts:
  description: The host's ledger after the call.
  returned: always
  type: dict
  contains:
    gpunet_rdma_ledger:
      description: Stage name to envelope (C(stage), C(status), C(changed), C(pending), C(problems), C(detail)).
      type: dict
      sample:
        firmware:
          stage: firmware
          status: pending
          changed: true
          pending: [{action: reboot, allowed: true, reason: mlx5_0 LINK_TYPE_P1}]
          problems: []
          detail: {}
'''

from ansible.module_utils.basic import AnsibleModule

# The action plugin's list (plugins/plugin_utils/_ledger.py, controller-only, which a module cannot import); a unit
# test keeps the two equal.
ACTION_NAMES = ('firmware_reset', 'driver_restart', 'netns_switch', 'runtime_restart', 'sriov_change', 'reboot')


def main():
    # The work is done by the action plugin on the controller; reaching the host means it was bypassed.
    module = AnsibleModule(argument_spec=dict(
        stage=dict(type='str'), changed=dict(type='bool', default=False),
        pending=dict(type='list', elements='raw', default=[]), problems=dict(type='list', elements='str', default=[]),
        detail=dict(type='dict', default={}), status=dict(type='str', choices=['ok', 'changed', 'pending', 'failed', 'skipped']),
        failed=dict(type='bool', default=False), resolve=dict(type='list', elements='str', choices=list(ACTION_NAMES)),
        how=dict(type='str'),
        hold=dict(type='list', elements='dict', options=dict(
            action=dict(type='str', required=True, choices=list(ACTION_NAMES)),
            reason=dict(type='str')))),
        supports_check_mode=True)
    module.fail_json(msg='gpunet.rdma.ledger runs on the controller as an action plugin; it was sent to the host, '
                         'which means the collection is not installed where ansible-playbook runs (check '
                         'ANSIBLE_COLLECTIONS_PATH), or the task used ansible.legacy.ledger.')


if __name__ == '__main__':
    main()
