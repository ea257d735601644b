# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gpunet.rdma.ledger action through ansible-playbook: recorded on the controller, read back as a fact."""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap

import pytest

from ansible_collections.gpunet.rdma.plugins.modules import ledger as ledger_module
from ansible_collections.gpunet.rdma.plugins.plugin_utils._ledger import ACTION_NAMES, LedgerError, hold, resolve

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))


def run_playbook(tmp_path, tasks):
    playbook = tmp_path / 'play.yml'
    playbook.write_text(textwrap.dedent('''\
        - hosts: node1
          gather_facts: false
          tasks:
        ''') + textwrap.indent(textwrap.dedent(tasks), '    '))
    inventory = tmp_path / 'hosts.ini'
    # An unreachable address: the action must never connect.
    inventory.write_text('node1 ansible_host=192.0.2.1 ansible_connection=ssh\n')
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'),
               ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_STDOUT_CALLBACK='json', ANSIBLE_NOCOLOR='1')
    done = subprocess.run(['ansible-playbook', '-i', str(inventory), str(playbook)], env=env, capture_output=True,
                          text=True, check=False)
    return done.returncode, json.loads(done.stdout[done.stdout.index('{'):])


def task_results(output):
    return [task['hosts']['node1'] for play in output['plays'] for task in play['tasks']]


def test_record_read_back_and_resolve_without_connecting(tmp_path):
    rc, output = run_playbook(tmp_path, '''\
        - name: Record the firmware stage
          gpunet.rdma.ledger:
            stage: firmware
            changed: true
            pending: [{action: reboot, allowed: true, reason: mlx5_0 LINK_TYPE_P1}]
            detail: {devices: []}
        - name: Record the runtime stage
          gpunet.rdma.ledger:
            stage: runtime
            pending: [runtime_restart]
        - name: Plan the node's batch
          ansible.builtin.debug:
            msg: "{{ ansible_facts.gpunet_rdma_ledger | gpunet.rdma.rollout_plan }}"
        - name: The reboot took everything
          gpunet.rdma.ledger:
            resolve: [reboot]
            how: reboot
        - name: Show the ledger
          ansible.builtin.debug:
            var: ansible_facts.gpunet_rdma_ledger
        ''')
    assert rc == 0, output
    results = task_results(output)
    assert [r.get('changed') for r in results[:2]] == [False, False]
    assert results[2]['msg'] == {'reboot': True, 'actions': ['reboot'],
                                 'reasons': ['firmware: reboot (mlx5_0 LINK_TYPE_P1)']}
    ledger = results[4]['ansible_facts.gpunet_rdma_ledger']
    assert sorted(ledger) == ['firmware', 'runtime']
    assert ledger['firmware']['pending'] == []
    assert ledger['firmware']['detail'] == {'devices': [], 'activated_by': 'reboot'}
    assert ledger['runtime']['pending'] == [] and ledger['runtime']['status'] == 'changed'


def test_wrong_input_fails_naming_the_stage(tmp_path):
    rc, output = run_playbook(tmp_path, '''\
        - name: A typo in an action
          gpunet.rdma.ledger:
            stage: firmware
            pending: [firmware_rest]
        ''')
    assert rc == 2
    result = task_results(output)[0]
    assert result['failed'] is True
    assert "gpunet.rdma.ledger: firmware: pending action 'firmware_rest' is not one of firmware_reset" in result['msg']


def test_stage_or_resolve(tmp_path):
    rc, output = run_playbook(tmp_path, '''\
        - name: Neither
          gpunet.rdma.ledger:
            changed: true
        ''')
    assert rc == 2 and 'one of the following is required: stage, resolve' in task_results(output)[0]['msg']


def test_an_unknown_action_name_to_resolve_or_hold_is_refused_naming_the_known_ones(tmp_path):
    """A typo (rebot) would resolve or hold nothing and leave the step pending without a word."""
    rc, output = run_playbook(tmp_path, '''\
        - name: Record the firmware stage
          gpunet.rdma.ledger:
            stage: firmware
            pending: [{action: reboot, allowed: true}]
        - name: A typo in resolve
          gpunet.rdma.ledger:
            resolve: [rebot]
            how: reboot
          ignore_errors: true
        - name: A typo in hold
          gpunet.rdma.ledger:
            hold: [{action: firmware_rest, reason: bond0 runs over mlx5_bond_0}]
          ignore_errors: true
        - name: Show the ledger
          ansible.builtin.debug:
            var: ansible_facts.gpunet_rdma_ledger
        ''')
    assert rc == 0, output
    results = task_results(output)
    known = 'firmware_reset, driver_restart, netns_switch, runtime_restart, sriov_change, reboot'
    assert results[1]['failed'] is True and 'rebot' in results[1]['msg'] and known in results[1]['msg']
    assert results[2]['failed'] is True and 'firmware_rest' in results[2]['msg'] and known in results[2]['msg']
    # nothing was resolved: the reboot still waits
    assert results[3]['ansible_facts.gpunet_rdma_ledger']['firmware']['pending'] == [
        {'action': 'reboot', 'allowed': True, 'reason': ''}]


@pytest.mark.parametrize('actions, message', [
    (['rebot'], "resolve: 'rebot' is not an action; the actions are firmware_reset, driver_restart"),
    (['reboot', 'fw_reset', 'rebot'], "resolve: 'fw_reset', 'rebot' are not an action"),
    ('reboot', 'resolve must be a list of action names'),
])
def test_resolve_refuses_unknown_actions_for_every_caller(actions, message):
    with pytest.raises(LedgerError, match=re.escape(message)):
        resolve({}, actions, 'reboot')


def test_resolve_and_hold_name_the_stage_of_a_malformed_ledger():
    with pytest.raises(LedgerError, match=re.escape("the ledger, stage firmware: lacks field 'status'")):
        resolve({'firmware': {'stage': 'firmware', 'changed': True, 'pending': [], 'problems': [], 'detail': {}}},
                ['reboot'], 'reboot')
    with pytest.raises(LedgerError, match=re.escape("the ledger, stage ofed: the entry must be a dict")):
        hold({'ofed': 'changed'}, [{'action': 'driver_restart', 'reason': 'bond0'}])


def test_the_module_stub_accepts_the_actions_the_action_plugin_knows():
    """The module (argument spec only; it cannot import controller code) lists the same actions, in the same order."""
    assert ledger_module.ACTION_NAMES == ACTION_NAMES
    assert 'reboot' in ledger_module.ACTION_NAMES and len(set(ledger_module.ACTION_NAMES)) == 6
