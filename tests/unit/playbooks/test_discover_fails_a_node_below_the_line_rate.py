# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A node whose hardware meets its expectation but whose bandwidth test failed fails in the recap by itself.

Two healthy V100 nodes (sysfs fixture trees, local connection), as in test_discover_failures.py. Before
playbooks/discover.yml runs in the same ansible-playbook run, node-a's ledger gets the validation stage of an earlier
play: one pair test of mlx5_0 at 45 % of the line rate, below its 90 % threshold (the record written by hand in the
shape the rdma_validate role writes). The report counts node-a's hardware as passing and its test as failed; the
failure play fails node-a alone, naming the device, and the report is written first.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import yaml

import sysfs_fixture

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
HARDWARE = os.path.join(REPO, 'lab', 'hardware')
RECAP = re.compile(r'^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)', re.M)
PROBLEM = '45.00 Gb/s is 45.0 % of the 100 Gb/s line rate, below 90 %'
SLOW_PAIR = {'kind': 'pair', 'host': 'node-a', 'server': 'node-b', 'device': 'mlx5_0', 'port': 1,
             'netdev': 'ibp94s0f0', 'server_device': 'mlx5_0', 'group': 'ib_v100', 'rail': 0, 'rail_name': None,
             'average_gbps': 45.0, 'line_rate_gbps': 100, 'line_rate_pct': 45.0, 'min_line_rate_pct': 90,
             'ok': False, 'problem': PROBLEM}


def test_a_node_below_the_line_rate_fails_alone_after_the_report(tmp_path):
    hosts = {}
    for name in ('node-a', 'node-b'):
        root = tmp_path / name / 'sys'
        sysfs_fixture.build(sysfs_fixture.load_profile(os.path.join(HARDWARE, 'v100.yml')), str(root))
        hosts[name] = {'rdma_discovery_sysfs_root': str(root)}
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(yaml.safe_dump({'all': {
        'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                 'rdma_discovery_source': 'sysfs', 'rdma_discovery_driver_facts': False,
                 'rdma_discovery_report_dir': str(tmp_path / 'report')},
        'children': {'ib_v100': {'hosts': hosts, 'vars': {'gpunet_rdma_fabric': {
            'name': 'ib_v100', 'generation': 'V100', 'link_layer': 'InfiniBand', 'line_rate_gbps': 100,
            'expected_ports': {'min_active_ports': 2}, 'rdma_resource': 'rdma/rdma_v100'}}}}}}))
    playbook = tmp_path / 'validated-then-discovered.yml'
    playbook.write_text(yaml.safe_dump([
        {'name': 'An earlier validation of node-a', 'hosts': 'node-a', 'gather_facts': False, 'tasks': [
            {'name': 'Record it', 'gpunet.rdma.ledger': {
                'stage': 'validation', 'failed': True, 'problems': [PROBLEM],
                'detail': {'host': 'node-a', 'min_line_rate_pct': 90, 'checked': True, 'load_tests': True,
                           'tests': [SLOW_PAIR], 'pairs_planned': 1}}}]},
        {'import_playbook': os.path.join(REPO, 'playbooks', 'discover.yml')}]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'),
               ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1')
    done = subprocess.run(['ansible-playbook', '-i', str(inventory), str(playbook)], env=env, capture_output=True,
                          text=True, check=False, cwd=str(tmp_path), timeout=600)
    output = done.stdout + done.stderr

    assert done.returncode == 2, output[-3000:]
    assert dict((m[0], int(m[4])) for m in RECAP.findall(output)) == {'node-a': 1, 'node-b': 0}, output[-3000:]
    assert re.search(r'fatal: \[node-a\].*\n(.*\n)*?.*RDMA tests below the line rate threshold or failed: mlx5_0 ',
                     output), output[-3000:]
    report = json.loads((tmp_path / 'report' / 'rdma-fleet-report.json').read_text())
    summary = report['summary']
    assert (summary['pass'], summary['fail'], summary['failed_hosts']) == (2, 0, [])
    assert (summary['validation_failed'], summary['validation_failed_hosts']) == (['node-a mlx5_0'], ['node-a'])
