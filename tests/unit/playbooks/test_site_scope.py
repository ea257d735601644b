# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/site.yml's scope on an inventory shaped like a running cluster: a control-plane host in no GPU group, a
GPU-group node whose NICs are gone, and a V100 node (simulated hosts: sysfs fixture trees, local connection).

Only the V100 node reaches the host stages; the other two are read, listed as out of scope with their reason, and
left byte-identical. The GPU-group node without an RDMA device fails its expectation, the control-plane host never
fails.
"""

from __future__ import annotations

import hashlib
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
FABRIC = {'name': 'ib_v100', 'generation': 'V100', 'link_layer': 'InfiniBand', 'line_rate_gbps': 100,
          'expected_ports': {'min_active_ports': 2}, 'rdma_resource': 'rdma/rdma_v100'}


def tree_digest(root):
    """Every file and link under root with its content, for a byte-for-byte comparison."""
    digest = {}
    for directory, _dirs, files in os.walk(str(root)):
        for name in files:
            path = os.path.join(directory, name)
            if os.path.islink(path):
                digest[path] = 'link:' + os.readlink(path)
            else:
                with open(path, 'rb') as handle:
                    digest[path] = hashlib.sha256(handle.read()).hexdigest()
    return digest


def brownfield(tmp_path):
    v100 = tmp_path / 'gpu-v100' / 'sys'
    sysfs_fixture.build(sysfs_fixture.load_profile(os.path.join(HARDWARE, 'v100.yml')), str(v100))
    # a sysfs without /sys/class/infiniband: a CPU host, or a GPU node whose NICs are gone
    for name in ('control-plane', 'gpu-nics-gone'):
        (tmp_path / name / 'sys' / 'class' / 'net').mkdir(parents=True)
    inventory = {'all': {
        'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                 'rdma_discovery_source': 'sysfs', 'rdma_discovery_driver_facts': False,
                 'rdma_discovery_management_path': False,
                 'rdma_discovery_report_dir': str(tmp_path / 'report')},
        'hosts': {'control-plane': {'rdma_discovery_sysfs_root': str(tmp_path / 'control-plane' / 'sys')}},
        'children': {'ib_v100': {'vars': {'gpunet_rdma_fabric': FABRIC}, 'hosts': {
            'gpu-v100': {'rdma_discovery_sysfs_root': str(v100)},
            'gpu-nics-gone': {'rdma_discovery_sysfs_root': str(tmp_path / 'gpu-nics-gone' / 'sys')}}}}}}
    path = tmp_path / 'hosts.yml'
    path.write_text(yaml.safe_dump(inventory))
    return path


def test_host_stages_reach_only_the_gpu_hosts_with_rdma_devices(tmp_path):
    inventory = brownfield(tmp_path)
    before = dict((name, tree_digest(tmp_path / name)) for name in ('control-plane', 'gpu-nics-gone'))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'),
               ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1')
    # --tags rollout: of the host stages only the in-memory batch grouping runs, and it names every host of the play
    done = subprocess.run(['ansible-playbook', '-i', str(inventory), os.path.join(REPO, 'playbooks', 'site.yml'),
                           '--tags', 'rollout', '-e', 'gpunet_rdma_cluster=false'],
                          env=env, capture_output=True, text=True, check=False, cwd=str(tmp_path), timeout=600)
    output = done.stdout + done.stderr
    host_stages = output.split('PLAY [Host stages]', 1)[1].split('\nPLAY [', 1)[0]
    assert re.findall(r'^(?:ok|skipping|changed|fatal): \[([^\]]+)\]', host_stages, re.M) == ['gpu-v100'], output[-4000:]
    # the node without NICs fails its expectation (after the report); the control-plane host never fails
    assert dict((m[0], int(m[4])) for m in RECAP.findall(output)) == {
        'control-plane': 0, 'gpu-nics-gone': 1, 'gpu-v100': 0}, output[-4000:]
    assert done.returncode == 2, output[-4000:]

    report = json.loads((tmp_path / 'report' / 'rdma-fleet-report.json').read_text())
    assert report['out_of_scope'] == [
        {'host': 'control-plane', 'group': 'ungrouped', 'reason': 'in no GPU group (no gpunet_rdma_fabric)'},
        {'host': 'gpu-nics-gone', 'group': 'ib_v100', 'reason': report['out_of_scope'][1]['reason']}]
    assert report['out_of_scope'][1]['reason'].startswith('no RDMA device found (')
    assert report['summary']['out_of_scope_hosts'] == ['control-plane', 'gpu-nics-gone']
    assert report['summary']['failed_hosts'] == ['gpu-nics-gone']
    markdown = (tmp_path / 'report' / 'rdma-fleet-report.md').read_text()
    section = markdown.split('\n## Out of scope\n', 1)[1].split('\n## ', 1)[0]
    assert '| control-plane | ungrouped | in no GPU group (no gpunet_rdma_fabric) |' in section
    assert '| gpu-nics-gone | ib_v100 | no RDMA device found (' in section and 'gpu-v100' not in section
    html = (tmp_path / 'report' / 'rdma-fleet-report.html').read_text()
    assert re.findall(r'<tr data-host="([^"]+)">', html.split('id="section-out-of-scope"', 1)[1].split(
        '</section>', 1)[0]) == ['control-plane', 'gpu-nics-gone']
    # read, never changed
    assert before == dict((name, tree_digest(tmp_path / name)) for name in ('control-plane', 'gpu-nics-gone'))
