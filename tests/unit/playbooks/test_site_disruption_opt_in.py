# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/site.yml itself (not a copy of its plays) decides who enters the disruptive batches.

A V100 node (the lab's sysfs fixture, local connection) arrives with an earlier run's ledger in the fact cache, as in
the AWX workflow's rollout node: its firmware stage waits for an allowed reset. The batch play's first step that acts
on the node is rollout_pre_tasks, here a task file that leaves a mark and stops the host, so nothing disruptive can
happen on this machine. With the default, the node enters the batch (the mark is there); with
gpunet_rdma_allow_disruption: false it does not, and the report still names the pending step.
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
HARDWARE = os.path.join(REPO, 'lab', 'hardware')
FABRIC = {'name': 'ib_v100', 'generation': 'V100', 'link_layer': 'InfiniBand', 'line_rate_gbps': 100,
          'expected_ports': {'min_active_ports': 2}, 'rdma_resource': 'rdma/rdma_v100'}
EARLIER_LEDGER = {'firmware': {
    'stage': 'firmware', 'status': 'pending', 'changed': True, 'problems': [], 'detail': {},
    'pending': [{'action': 'firmware_reset', 'allowed': True, 'reason': 'mlx5_0: LINK_TYPE_P1 set for the next boot'}]}}


@pytest.fixture(scope='module')
def node(tmp_path_factory):
    root = tmp_path_factory.mktemp('disruption')
    sysfs = root / 'gpu-v100' / 'sys'
    sysfs_fixture.build(sysfs_fixture.load_profile(os.path.join(HARDWARE, 'v100.yml')), str(sysfs))
    return root, sysfs


def run_site(tmp_path, sysfs, extra):
    cache = tmp_path / 'facts'
    mark = tmp_path / 'batch-reached'
    pre_tasks = tmp_path / 'pre.yml'
    pre_tasks.write_text(yaml.safe_dump([
        {'name': 'Leave a mark', 'ansible.builtin.copy': {'content': 'reached\n', 'dest': str(mark), 'mode': '0644'},
         'delegate_to': 'localhost'},
        {'name': 'Stop before anything disruptive', 'ansible.builtin.fail': {'msg': 'stopped by the test'}}]))
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(yaml.safe_dump({'all': {
        'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                 'rdma_discovery_source': 'sysfs', 'rdma_discovery_driver_facts': False,
                 'rdma_discovery_management_path': False, 'rdma_discovery_report_dir': str(tmp_path / 'report'),
                 'rollout_drain': False, 'rollout_pre_tasks': str(pre_tasks)},
        'children': {'ib_v100': {'vars': {'gpunet_rdma_fabric': FABRIC}, 'hosts': {
            'gpu-v100': {'rdma_discovery_sysfs_root': str(sysfs)}}}}}}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'),
               ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_CACHE_PLUGIN='ansible.builtin.jsonfile', ANSIBLE_CACHE_PLUGIN_CONNECTION=str(cache))
    # the earlier run's ledger, kept in the fact cache the way AWX keeps facts between the workflow's nodes
    seeded = subprocess.run(['ansible', '-i', str(inventory), 'gpu-v100', '-m', 'ansible.builtin.set_fact', '-a',
                             json.dumps({'gpunet_rdma_ledger': EARLIER_LEDGER, 'cacheable': True})],
                            env=env, capture_output=True, text=True, check=False, cwd=str(tmp_path), timeout=120)
    assert seeded.returncode == 0, seeded.stdout + seeded.stderr
    argv = ['ansible-playbook', '-i', str(inventory), os.path.join(REPO, 'playbooks', 'site.yml'), '--tags', 'rollout',
            '-e', 'gpunet_rdma_cluster=false']
    for key, value in extra.items():
        argv += ['-e', json.dumps({key: value})]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, cwd=str(tmp_path), timeout=600)
    return done, mark


def test_an_allowed_step_takes_the_node_into_the_batches(node, tmp_path):
    done, mark = run_site(tmp_path, node[1], {})
    output = done.stdout + done.stderr
    assert mark.exists(), output[-4000:]
    assert 'stopped by the test' in output


def test_allow_disruption_false_keeps_the_node_out_and_the_step_pending(node, tmp_path):
    done, mark = run_site(tmp_path, node[1], {'gpunet_rdma_allow_disruption': False})
    output = done.stdout + done.stderr
    assert not mark.exists(), output[-4000:]
    assert 'stopped by the test' not in output
    assert done.returncode == 0, output[-4000:]
    report = json.loads((tmp_path / 'report' / 'rdma-fleet-report.json').read_text())
    assert 'firmware_reset' in json.dumps(report), output[-2000:]
