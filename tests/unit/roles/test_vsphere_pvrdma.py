# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/vsphere_pvrdma.yml without a vCenter: syntax, argument specs, the modules' own argument checks and
the VM list it computes. No vCenter can run here: the modules get as far as connecting, which proves that
community.vmware accepted every argument (it validates them before it connects)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
PLAYBOOK = os.path.join(REPO, 'playbooks', 'vsphere_pvrdma.yml')
VCENTER = {'vsphere_pvrdma_vcenter_hostname': '127.0.0.1', 'vsphere_pvrdma_vcenter_username': 'automation',
           'vsphere_pvrdma_vcenter_password': 'not-a-secret', 'vsphere_pvrdma_datacenter': 'DC1',
           'vsphere_pvrdma_validate_certs': False}
# community.vmware's message when no vCenter answers ("the" since 6.x)
CONNECTING = re.compile(r'while connecting to (the )?vCenter or ESXi API at 127\.0\.0\.1:443')


def run(tmp_path, extra, *args):
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(yaml.safe_dump({'all': {'children': {'roce_pvrdma': {'hosts': {
        'k8s-worker-vm-01': None, 'k8s-worker-vm-02': None}}}}}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'),
               ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    result = subprocess.run(['ansible-playbook', '-i', str(inventory), PLAYBOOK, '-e', json.dumps(extra)] + list(args),
                            capture_output=True, text=True, env=env, check=False)
    return result.returncode, ' '.join((result.stdout + result.stderr).split())


def test_syntax(tmp_path):
    code, output = run(tmp_path, {}, '--syntax-check')
    assert code == 0, output


def test_argument_specs_refuse_a_wrong_protocol(tmp_path):
    code, output = run(tmp_path, dict(VCENTER, vsphere_pvrdma_protocol='rocev3'), '--check')
    assert code != 0
    assert 'value of vsphere_pvrdma_protocol must be one of: rocev1, rocev2, got: rocev3' in output


def test_vcenter_and_targets_are_required(tmp_path):
    code, output = run(tmp_path, {}, '--check')
    assert code != 0 and 'Give vCenter (vsphere_pvrdma_vcenter_hostname, _username, _password)' in output


def test_esxi_settings_reach_the_modules(tmp_path):
    code, output = run(tmp_path, dict(VCENTER, vsphere_pvrdma_esxi_hosts=['esxi-01'],
                                      vsphere_pvrdma_portgroup='dvpg-pvrdma'), '--check')
    assert code != 0
    assert 'Bind PVRDMA to the vmknic on each ESXi host' in output and '(item=esxi-01)' in output
    assert CONNECTING.search(output), output[-2000:]
    assert 'Unsupported parameters' not in output and 'missing required arguments' not in output


def test_worker_vms_come_from_the_group(tmp_path):
    code, output = run(tmp_path, dict(VCENTER, vsphere_pvrdma_portgroup='dvpg-pvrdma'), '--check')
    assert code != 0
    assert 'Give each worker VM a PVRDMA adapter on the distributed port group' in output
    assert '(item=k8s-worker-vm-01)' in output and '(item=k8s-worker-vm-02)' in output
    assert CONNECTING.search(output), output[-2000:]
    assert 'Unsupported parameters' not in output
