# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Role nic_firmware plans per adapter, through ansible-playbook against the lab's firmware doubles.

The V100 node's dual-port ConnectX-5 has two PCI functions (0000:5e:00.0 mlx5_0, 0000:5e:00.1 mlx5_1) and one
non-volatile configuration and flash: the stage sets and burns once, the ledger names the adapter and its functions,
and the batch's reset step resets the adapter once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

import sysfs_fixture

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))


def test_a_dual_port_card_is_set_burned_and_reset_once(tmp_path):
    profile = sysfs_fixture.load_profile(os.path.join(REPO, 'lab', 'hardware', 'v100.yml'))
    sysfs_fixture.build(profile, str(tmp_path / 'sys'))
    sysfs_fixture.build_firmware(profile, str(tmp_path))
    image = tmp_path / 'fw-ConnectX5.bin'
    image.write_text(json.dumps({'gpunet_lab_firmware_image': 1, 'psid': 'MT_0000000008', 'version': '16.35.3006'}))
    role_vars = {
        'nic_firmware_params': {'LINK_TYPE_P2': 'ETH'}, 'nic_firmware_apply': 'mlxfwreset',
        'nic_firmware_image': str(image), 'nic_firmware_update': True,
        'nic_firmware_sysfs_root': str(tmp_path / 'sys'), 'nic_firmware_executable': str(tmp_path / 'bin' / 'mlxconfig'),
        'nic_firmware_inventory_executable': str(tmp_path / 'bin' / 'mlxfwmanager'),
        'nic_firmware_mlxfwreset_path': str(tmp_path / 'bin' / 'mlxfwreset')}

    def keep(name, value):
        return {'name': 'Keep ' + name, 'ansible.builtin.copy': {
            'content': '{{ %s | to_json }}' % value, 'dest': str(tmp_path / (name + '.json')), 'mode': '0644'}}
    tasks = [
        {'name': 'Stage', 'ansible.builtin.include_role': {'name': 'gpunet.rdma.nic_firmware'}},
        keep('staged', "{'ledger': ansible_facts.gpunet_rdma_ledger, 'result': nic_firmware_result}"),
        {'name': 'Reset', 'ansible.builtin.include_role': {'name': 'gpunet.rdma.nic_firmware', 'tasks_from': 'reset.yml'}},
        {'name': 'Verify', 'ansible.builtin.include_role': {'name': 'gpunet.rdma.nic_firmware', 'tasks_from': 'verify.yml'}},
        keep('verified', "{'ledger': ansible_facts.gpunet_rdma_ledger, 'result': nic_firmware_result}"),
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

    with open(str(tmp_path / 'firmware' / 'calls.log')) as handle:
        calls = [json.loads(line) for line in handle]
    assert [call[1:] for call in calls if call[0] == 'mlxconfig' and 'set' in call] == [
        ['-d', '0000:5e:00.0', '-y', 'set', 'LINK_TYPE_P2=ETH']]
    assert [call[1:3] for call in calls if call[0] == 'mlxfwmanager' and '-u' in call] == [['-d', '0000:5e:00.0']]
    assert [call[1:] for call in calls if call[0] == 'mlxfwreset'] == [['-d', '0000:5e:00.0', '-l', '3', '-y', 'r']]

    staged = json.loads((tmp_path / 'staged.json').read_text())
    adapters = staged['result']['adapters']
    assert [(a['adapter'], a['functions'], a['configured_through'], a['pending']) for a in adapters] == [
        ('0000:5e:00', ['0000:5e:00.0', '0000:5e:00.1'], '0000:5e:00.0', ['LINK_TYPE_P2'])]
    assert staged['ledger']['firmware']['pending'] == [{
        'action': 'firmware_reset', 'allowed': True,
        'reason': '0000:5e:00 (mlx5_0, mlx5_1): LINK_TYPE_P2, firmware 16.35.3006'}]
    verified = json.loads((tmp_path / 'verified.json').read_text())
    assert verified['result']['pending'] == [] and verified['ledger']['firmware']['pending'] == []
    assert [d['values']['LINK_TYPE_P2'] for d in verified['result']['devices']] == [
        {'current': 'ETH(2)', 'next_boot': 'ETH(2)'}] * 2
