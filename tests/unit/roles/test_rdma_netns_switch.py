# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Role rdma_netns's batch step (switch.yml) against the `rdma` test double, through ansible-playbook.

The kernel refuses a change of the RDMA netns mode in either direction while pods' network namespaces exist: an
exclusive node that should go back to shared keeps running exclusive, and the ledger says why and what happens next.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
RDMA = os.path.join(REPO, 'tests', 'doubles', 'rdma')


def test_exclusive_to_shared_refused_while_pods_exist_waits_for_the_next_boot(tmp_path):
    (tmp_path / 'rdma-netns').write_text('exclusive\n')
    (tmp_path / 'rdma-netns-busy').write_text('')
    (tmp_path / 'modprobe.d').mkdir()
    conf = tmp_path / 'modprobe.d' / 'gpunet-rdma-netns.conf'
    conf.write_text('options ib_core netns_mode=1\n')
    role_vars = {'rdma_netns_mode': 'shared', 'rdma_netns_rdma_path': RDMA, 'rdma_netns_conf_path': str(conf)}
    tasks = [
        {'name': 'Read the mode', 'gpunet.rdma.rdma_driver_facts': {
            'modprobe_dir': str(tmp_path / 'modprobe.d'), 'rdma_path': RDMA, 'modules': []}},
        {'name': 'The netns stage planned the switch', 'ansible.builtin.set_fact': {'rdma_netns_result': {
            'host': '{{ inventory_hostname }}', 'wanted': 'shared', 'live': 'exclusive', 'live_error': None,
            'persisted': 'shared', 'persisted_file': str(conf), 'reboot_pending': True}}},
        {'name': 'Switch', 'ansible.builtin.include_role': {'name': 'gpunet.rdma.rdma_netns', 'tasks_from': 'switch.yml'}},
        {'name': 'Keep the ledger', 'ansible.builtin.copy': {
            'content': '{{ ansible_facts.gpunet_rdma_ledger | to_json }}', 'dest': str(tmp_path / 'ledger.json'),
            'mode': '0644'}},
    ]
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(yaml.safe_dump({'all': {'hosts': {'gpu-node-01': None}, 'vars': dict(
        role_vars, ansible_connection='local', ansible_python_interpreter=sys.executable)}}))
    playbook = tmp_path / 'play.yml'
    playbook.write_text(yaml.safe_dump([{'name': 'Test', 'hosts': 'all', 'gather_facts': False, 'tasks': tasks}]))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'),
               GPUNET_TEST_RDMA_DIR=str(tmp_path), GPUNET_TEST_DOUBLES_LOG=str(tmp_path / 'log'))
    run = subprocess.run(['ansible-playbook', '-i', str(inventory), str(playbook)], env=env, capture_output=True,
                         text=True, check=False, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    calls = (tmp_path / 'log' / 'rdma.calls').read_text().splitlines()
    assert [line for line in calls if ' set ' in line] == ['rdma system set netns shared']
    assert (tmp_path / 'rdma-netns').read_text() == 'exclusive\n'
    netns = json.loads((tmp_path / 'ledger.json').read_text())['netns']
    assert netns['detail']['live'] == 'exclusive' and netns['detail']['reboot_pending'] is True
    assert netns['pending'] == [{'action': 'reboot', 'allowed': False, 'reason': (
        'the kernel refused the live switch exclusive -> shared (error: Device or resource busy); network namespaces '
        'other than the initial one (pods) keep it busy, in either direction; the persisted shared mode applies at '
        'the next boot')}]
