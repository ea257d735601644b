# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rdma_validate role's host level as site.yml runs it: two V100 nodes of one GPU group (both this machine,
connection local), perftest being the lab's double (lab/doubles) over a sysfs tree of the lab's V100 profile.

The role plans the pairs from the inventory (the listed one, then a ring per rail), runs each pair's servers in the
background on one node and its clients on the other (bandwidth, then latency), and records one record per pair in the
client's validation ledger.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import yaml

import sysfs_fixture

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
HARDWARE = os.path.join(REPO, 'lab', 'hardware')

PLAYBOOK = '''
- name: Facts as discovery leaves them
  hosts: ib_v100
  gather_facts: false
  tasks:
    - name: Read the ports of the lab's sysfs tree
      gpunet.rdma.ibdev2netdev_facts:
        source: sysfs
        sysfs_root: "{{ lab_root }}/sys"

- name: Host-level validation
  hosts: ib_v100
  gather_facts: false
  roles:
    - role: gpunet.rdma.rdma_validate

- name: Keep each node's record for the test
  hosts: ib_v100
  gather_facts: false
  tasks:
    - name: Write it
      ansible.builtin.copy:
        content: "{{ ansible_facts.gpunet_rdma_ledger.validation | to_json }}"
        dest: "{{ lab_root }}/{{ inventory_hostname }}.json"
        mode: "0644"
      delegate_to: localhost
'''


def free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def run_validation(tmp_path, **extra_vars):
    """The role on the two nodes, with extra_vars on top of the test's; returns both nodes' validation records."""
    profile = sysfs_fixture.load_profile(os.path.join(HARDWARE, 'v100.yml'))
    sysfs_fixture.build(profile, str(tmp_path / 'sys'))
    sysfs_fixture.build_firmware(profile, str(tmp_path))
    fabric = {'name': 'ib_v100', 'link_layer': 'InfiniBand', 'line_rate_gbps': 100,
              'rdma_resource': 'rdma/rdma_v100',
              'validation': {'max_latency_usec': 1.5,
                             'pairs': [{'server': 'v100-b', 'client': 'v100-a', 'device': 'mlx5_1',
                                        'address': '127.0.0.1'}]}}
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(yaml.safe_dump({'all': {'children': {'ib_v100': {
        'hosts': {'v100-a': None, 'v100-b': None}, 'vars': {'gpunet_rdma_fabric': fabric}}}, 'vars': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}))
    playbook = tmp_path / 'validate.yml'
    playbook.write_text(PLAYBOOK)
    extra = {'lab_root': str(tmp_path), 'rdma_validate_perftest_dir': str(tmp_path / 'bin'),
             'rdma_validate_tcp_port': free_port(), 'rdma_validate_loopback': False, 'rdma_validate_timeout': 30}
    extra.update(extra_vars)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'), GPUNET_LAB_ROOT=str(tmp_path))
    done = subprocess.run(['ansible-playbook', '-i', str(inventory), str(playbook), '-e', json.dumps(extra)],
                          capture_output=True, text=True, env=env, check=False, cwd=str(tmp_path))
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    with open(str(tmp_path / 'v100-a.json')) as handle:
        a = json.load(handle)
    with open(str(tmp_path / 'v100-b.json')) as handle:
        b = json.load(handle)
    return a, b


def test_a_default_run_puts_no_load_on_the_links(tmp_path):
    """Without gpunet_rdma_load_tests no perftest tool starts; the stage says what was not asked for."""
    a, b = run_validation(tmp_path, rdma_validate_loopback=True)
    assert not (tmp_path / 'firmware' / 'calls.log').exists() or not (tmp_path / 'firmware' / 'calls.log').read_text()
    for record in (a, b):
        assert record['status'] == 'skipped' and record['detail']['load_tests'] is False
        assert record['detail']['tests'] == [] and 'gpunet_rdma_load_tests=true' in record['detail']['not_asked']


def test_pairs_per_rail_with_latency(tmp_path):
    a, b = run_validation(tmp_path, gpunet_rdma_load_tests=True)
    # v100-a is the client of the listed pair (mlx5_1) and of the ring's two rails (mlx5_0, mlx5_1 against v100-b)
    pairs = [(t['server'], t['device'], t['rail']) for t in a['detail']['tests']]
    assert pairs == [('v100-b', 'mlx5_1', None), ('v100-b', 'mlx5_0', 0)]  # the ring's rail 1 repeats the listed one
    # the ledger names the ring's rail by identity: its PCI function (no fabric rails); a listed pair is on none
    assert [t['rail_name'] for t in a['detail']['tests']] == [None, '0000:5e:00.0']
    assert b['detail']['tests'] == [] and b['detail']['pairs_planned'] == 0 and a['detail']['pairs_planned'] == 2
    for test in a['detail']['tests']:
        # the field report's 94.71 Gb/s on 100 Gb/s; the double's EDR write latency (1.60 x 0.78 / 0.88)
        assert (test['kind'], test['average_gbps'], test['line_rate_pct']) == ('pair', 94.71, 94.7)
        assert (test['latency_tool'], test['latency_usec'], test['max_latency_usec'], test['latency_ok']) == (
            'ib_write_lat', 1.42, 1.5, True)
        assert test['ok'] is True and test['group'] == 'ib_v100'
    assert a['status'] == 'ok'
    calls = [json.loads(line) for line in (tmp_path / 'firmware' / 'calls.log').read_text().splitlines()]
    assert sorted(set(call[0] for call in calls)) == ['ib_write_bw', 'ib_write_lat']
    # Two pairs, two tests each: one server each (a server takes no address) and its client, which retries while
    # the server is not listening yet - how often depends on the machine's load.
    servers = [call for call in calls if '.' not in call[-1]]  # a client's last word is the server's address
    assert [call[0] for call in servers] == ['ib_write_bw', 'ib_write_lat'] * 2
    assert len(calls) >= 8
