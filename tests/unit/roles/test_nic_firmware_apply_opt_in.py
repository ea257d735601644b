# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Role nic_firmware's activation is opt-in: what nic_firmware_apply allows is what the node's batch may do.

Through ansible-playbook against the lab's firmware doubles (the V100 node's dual-port ConnectX-5): the stage sets a
parameter for the next boot and records the activation in the ledger. With nic_firmware_apply none the reset waits,
not allowed, so the rollout's plan for the node is empty; with mlxfwreset the reset is allowed; with reboot the node's
batch is one reboot. The stage itself never resets or reboots anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

import sysfs_fixture

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
REASON = '0000:5e:00 (mlx5_0, mlx5_1): LINK_TYPE_P2'


@pytest.mark.parametrize('apply, action, allowed, plan', [
    ('none', 'firmware_reset', False, {'reboot': False, 'actions': []}),
    ('mlxfwreset', 'firmware_reset', True, {'reboot': False, 'actions': ['firmware_reset']}),
    ('reboot', 'reboot', True, {'reboot': True, 'actions': ['reboot']}),
], ids=['none', 'mlxfwreset', 'reboot'])
def test_the_activation_is_allowed_only_as_nic_firmware_apply_says(apply, action, allowed, plan, tmp_path):
    profile = sysfs_fixture.load_profile(os.path.join(REPO, 'lab', 'hardware', 'v100.yml'))
    sysfs_fixture.build(profile, str(tmp_path / 'sys'))
    sysfs_fixture.build_firmware(profile, str(tmp_path))
    role_vars = {
        'nic_firmware_params': {'LINK_TYPE_P2': 'ETH'}, 'nic_firmware_apply': apply,
        'nic_firmware_sysfs_root': str(tmp_path / 'sys'), 'nic_firmware_executable': str(tmp_path / 'bin' / 'mlxconfig'),
        'nic_firmware_inventory_executable': str(tmp_path / 'bin' / 'mlxfwmanager'),
        'nic_firmware_mlxfwreset_path': str(tmp_path / 'bin' / 'mlxfwreset')}
    tasks = [
        {'name': 'Stage', 'ansible.builtin.include_role': {'name': 'gpunet.rdma.nic_firmware'}},
        {'name': 'Keep the ledger and the plan', 'ansible.builtin.copy': {
            'content': "{{ {'ledger': ansible_facts.gpunet_rdma_ledger, 'plan': ansible_facts.gpunet_rdma_ledger"
                       " | gpunet.rdma.rollout_plan} | to_json }}",
            'dest': str(tmp_path / 'staged.json'), 'mode': '0644'}},
    ]
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(yaml.safe_dump({'all': {'hosts': {'gpu-v100-01': None}, 'vars': dict(
        role_vars, ansible_connection='local', ansible_python_interpreter=sys.executable)}}))
    playbook = tmp_path / 'play.yml'
    playbook.write_text(yaml.safe_dump([{'name': 'Test', 'hosts': 'all', 'gather_facts': False, 'tasks': tasks}]))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'), GPUNET_LAB_ROOT=str(tmp_path))
    run = subprocess.run(['ansible-playbook', '-i', str(inventory), str(playbook)], env=env, capture_output=True,
                         text=True, check=False, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    staged = json.loads((tmp_path / 'staged.json').read_text())
    assert staged['ledger']['firmware']['pending'] == [{'action': action, 'allowed': allowed, 'reason': REASON}]
    assert {key: staged['plan'][key] for key in ('reboot', 'actions')} == plan
    # the stage sets Next Boot only: no reset, whatever the batch may do later
    with open(str(tmp_path / 'firmware' / 'calls.log')) as handle:
        calls = [json.loads(line) for line in handle]
    assert [call[1:] for call in calls if call[0] == 'mlxconfig' and 'set' in call] == [
        ['-d', '0000:5e:00.0', '-y', 'set', 'LINK_TYPE_P2=ETH']]
    assert [call for call in calls if call[0] == 'mlxfwreset'] == []
