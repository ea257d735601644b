# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/discover.yml over simulated hosts (sysfs fixture trees, local connection): the node that misses its
group's expectation fails by itself, the others and the controller do not, and the report is written first."""

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


def fleet(tmp_path, profiles):
    hosts = {}
    for name, profile in profiles.items():
        root = tmp_path / name / 'sys'
        sysfs_fixture.build(sysfs_fixture.load_profile(os.path.join(HARDWARE, profile + '.yml')), str(root))
        hosts[name] = {'rdma_discovery_sysfs_root': str(root)}
    inventory = {'all': {
        'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                 'rdma_discovery_source': 'sysfs', 'rdma_discovery_driver_facts': False,
                 'rdma_discovery_report_dir': str(tmp_path / 'report')},
        'children': {'ib_v100': {'hosts': hosts, 'vars': {'gpunet_rdma_fabric': {
            'name': 'ib_v100', 'generation': 'V100', 'link_layer': 'InfiniBand', 'line_rate_gbps': 100,
            'expected_ports': {'min_active_ports': 2}, 'rdma_resource': 'rdma/rdma_v100'}}}}}}
    path = tmp_path / 'hosts.yml'
    path.write_text(yaml.safe_dump(inventory))
    return path


def run(inventory):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'),
               ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1')
    done = subprocess.run(['ansible-playbook', '-i', str(inventory), os.path.join(REPO, 'playbooks', 'discover.yml')],
                          env=env, capture_output=True, text=True, check=False, cwd=REPO)
    return done.returncode, done.stdout + done.stderr


def test_the_degraded_node_fails_alone_after_the_report(tmp_path):
    rc, output = run(fleet(tmp_path, {'node-ok': 'v100', 'node-degraded': 'v100-degraded'}))
    recap = dict((m[0], int(m[4])) for m in RECAP.findall(output))
    assert rc == 2, output[-2000:]
    assert recap == {'node-ok': 0, 'node-degraded': 1}, output[-3000:]
    assert re.search(r'fatal: \[node-degraded\].*\n(.*\n)*?.*node-degraded misses its RDMA expectation \(ib_v100\)',
                     output), output[-3000:]
    report = json.loads((tmp_path / 'report' / 'rdma-fleet-report.json').read_text())
    assert report['summary']['failed_hosts'] == ['node-degraded']


def test_a_fleet_that_passes_runs_no_failure_play(tmp_path):
    rc, output = run(fleet(tmp_path, {'node-a': 'v100', 'node-b': 'v100'}))
    assert rc == 0, output[-3000:]
    assert 'Fail each node with what it misses' not in output
    assert dict((m[0], int(m[4])) for m in RECAP.findall(output)) == {'node-a': 0, 'node-b': 0}
