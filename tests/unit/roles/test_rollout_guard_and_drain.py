# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Role rollout's blast-radius guard and drain, through ansible-playbook.

The guard reads the management path the facts module finds (the lab's A100 sysfs tree, where bond0 runs over
mlx5_bond_0's port, and recorded iproute2 output); the drain runs kubernetes.core.k8s_drain against the
kube-apiserver test double, whose eviction subresource answers as kube-apiserver's (PodDisruptionBudgets decide).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(REPO, 'tests', 'doubles'))
sys.path.insert(0, os.path.join(REPO, 'tests', 'unit', 'plugins', 'module_utils'))

import kube_apiserver  # noqa: E402  pylint: disable=wrong-import-position
from test_management_path import ip_double, recorded  # noqa: E402  pylint: disable=wrong-import-position


def run_playbook(tmp_path, tasks, extra=None, environment=None):
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(yaml.safe_dump({'all': {'hosts': {'gpu-a100-02': None}, 'vars': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}))
    playbook = tmp_path / 'play.yml'
    playbook.write_text(yaml.safe_dump([{'name': 'Test', 'hosts': 'all', 'gather_facts': False, 'tasks': tasks}]))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'), **(environment or {}))
    argv = ['ansible-playbook', '-i', str(inventory), str(playbook)]
    for key, value in (extra or {}).items():
        argv += ['-e', json.dumps({key: value})]
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=300)


def guard_tasks(tmp_path, sysfs, ip):
    return [
        {'name': 'Facts with the management path', 'gpunet.rdma.ibdev2netdev_facts': {
            'sysfs_root': sysfs, 'management_path': {'ip_path': ip, 'kubelet_flag_files': []}}},
        {'name': 'A firmware change of the bond card waits for a reset', 'gpunet.rdma.ledger': {
            'stage': 'firmware', 'changed': True,
            'pending': [{'action': 'firmware_reset', 'allowed': True, 'reason': 'mlx5_bond_0 SRIOV_EN'}],
            'detail': {'devices': [{'device': 'mlx5_bond_0', 'pci_address': '0000:3b:00.0', 'pending': ['SRIOV_EN']}]}}},
        {'name': 'Guard', 'ansible.builtin.include_role': {'name': 'gpunet.rdma.rollout', 'tasks_from': 'guard.yml'}},
        {'name': 'Keep the ledger', 'ansible.builtin.copy': {
            'content': '{{ ansible_facts.gpunet_rdma_ledger | to_json }}', 'dest': str(tmp_path / 'ledger.json'),
            'mode': '0644'}},
    ]


@pytest.fixture
def bond_node(tmp_path, hardware):
    sysfs = hardware('a100', tmp_path / 'sys')
    ip = ip_double(tmp_path, {
        '-json address show': recorded('ip-json-address-show-bond0-eth0.json'),
        '-json -4 route show default': recorded('ip-json-4-route-show-default-two.json'),
        '-json -6 route show default': recorded('ip-json-6-route-show-default-none.json'),
    })
    return sysfs, ip


def test_guard_holds_the_reset_of_the_card_under_the_ssh_connection(tmp_path, bond_node):
    sysfs, ip = bond_node
    result = run_playbook(tmp_path, guard_tasks(tmp_path, sysfs, ip),
                          environment={'SSH_CONNECTION': '10.96.83.1 50000 10.96.83.26 22'})
    assert result.returncode == 0, result.stdout + result.stderr
    ledger = json.loads((tmp_path / 'ledger.json').read_text())
    step = ledger['firmware']['pending'][0]
    assert step['action'] == 'firmware_reset' and step['allowed'] is False and 'bond0' in step['reason']
    assert ledger['guard']['status'] == 'pending'
    assert 'rollout_allow_management_path_disruption' in ledger['guard']['problems'][0]
    assert ledger['guard']['detail']['management_interfaces'] == ['bond0', 'eth0']
    assert ledger['guard']['detail']['over_rdma'] == [  # the JMESPath projection of guard.yml
        {'interface': 'bond0', 'carries': ['connection', 'default_route'], 'devices': ['mlx5_bond_0']}]


def test_guard_lets_an_allowed_disruption_through(tmp_path, bond_node):
    sysfs, ip = bond_node
    result = run_playbook(tmp_path, guard_tasks(tmp_path, sysfs, ip),
                          extra={'rollout_allow_management_path_disruption': True},
                          environment={'SSH_CONNECTION': '10.96.83.1 50000 10.96.83.26 22'})
    assert result.returncode == 0, result.stdout + result.stderr
    ledger = json.loads((tmp_path / 'ledger.json').read_text())
    assert ledger['firmware']['pending'][0]['allowed'] is True
    assert ledger['guard']['status'] == 'ok' and ledger['guard']['problems'] == []


def test_guard_lets_a_reset_through_when_managed_elsewhere(tmp_path, bond_node):
    # Reached over eth0 (the podman network); bond0 still carries a default route: that alone is a management
    # path too, so the reset stays held.
    sysfs, ip = bond_node
    result = run_playbook(tmp_path, guard_tasks(tmp_path, sysfs, ip),
                          environment={'SSH_CONNECTION': '10.88.0.1 50000 10.88.0.90 22'})
    assert result.returncode == 0, result.stdout + result.stderr
    ledger = json.loads((tmp_path / 'ledger.json').read_text())
    assert ledger['firmware']['pending'][0]['allowed'] is False
    assert 'the default route' in ledger['firmware']['pending'][0]['reason']


def pod(name, node, labels, owner='ReplicaSet', phase='Running'):
    return {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {
        'name': name, 'namespace': 'default', 'labels': labels,
        'ownerReferences': [{'apiVersion': 'apps/v1', 'kind': owner, 'name': name + '-owner', 'uid': name + '-uid',
                             'controller': True}]},
            'spec': {'nodeName': node, 'containers': [{'name': 'main', 'image': 'busybox'}]},
            'status': {'phase': phase, 'conditions': [{'type': 'Ready', 'status': 'True'}]}}


@pytest.fixture
def cluster(tmp_path):
    api = kube_apiserver.FakeApiServer().start()
    for name in ('gpu-a100-02', 'gpu-a100-03'):
        api.add('v1', 'nodes', {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name}})
    api.add('v1', 'pods', pod('trainer-a', 'gpu-a100-02', {'app': 'trainer'}))
    api.add('v1', 'pods', pod('trainer-b', 'gpu-a100-03', {'app': 'trainer'}))
    api.add('v1', 'pods', pod('rdma-shared-dp-x1', 'gpu-a100-02', {'app': 'rdma-dp'}, owner='DaemonSet'))
    yield api
    api.stop()


def budget(api, min_available):
    api.add('policy/v1', 'poddisruptionbudgets', {
        'apiVersion': 'policy/v1', 'kind': 'PodDisruptionBudget', 'metadata': {'name': 'trainer', 'namespace': 'default'},
        'spec': {'minAvailable': min_available, 'selector': {'matchLabels': {'app': 'trainer'}}}})


def drain_tasks(file):
    return [{'name': file, 'ansible.builtin.include_role': {'name': 'gpunet.rdma.rollout', 'tasks_from': file}}]


def test_drain_evicts_within_the_budget_and_uncordon_restores(tmp_path, cluster):
    budget(cluster, 1)  # two healthy trainers, one needed: one may go
    kubeconfig = cluster.kubeconfig(str(tmp_path / 'kubeconfig'))
    result = run_playbook(tmp_path, drain_tasks('drain.yml'), extra={
        'gpunet_rdma_kubeconfig': kubeconfig, 'rollout_drain_timeout': 10})
    assert result.returncode == 0, result.stdout + result.stderr
    assert cluster.get('v1', 'nodes', 'gpu-a100-02')['spec']['unschedulable'] is True
    remaining = sorted(p['metadata']['name'] for p in cluster.list('v1', 'pods'))
    assert remaining == ['rdma-shared-dp-x1', 'trainer-b']  # the DaemonSet's pod stays
    assert [r for r in cluster.requests if r[0] == 'POST' and r[1].endswith('/pods/trainer-a/eviction')]
    result = run_playbook(tmp_path, drain_tasks('uncordon.yml'), extra={'gpunet_rdma_kubeconfig': kubeconfig})
    assert result.returncode == 0, result.stdout + result.stderr
    assert not cluster.get('v1', 'nodes', 'gpu-a100-02')['spec'].get('unschedulable')


def test_drain_refused_by_the_budget_fails_before_anything_disruptive(tmp_path, cluster):
    budget(cluster, 2)  # both trainers needed: the eviction is refused (429)
    result = run_playbook(tmp_path, drain_tasks('drain.yml') + [
        {'name': 'Never reached', 'ansible.builtin.file': {'path': str(tmp_path / 'disrupted'), 'state': 'touch',
                                                           'mode': '0644'}}],
        extra={'gpunet_rdma_kubeconfig': cluster.kubeconfig(str(tmp_path / 'kubeconfig')),
               'rollout_drain_timeout': 10})
    assert result.returncode != 0
    assert "violate the pod's disruption budget" in result.stdout
    assert not (tmp_path / 'disrupted').exists()
    assert 'trainer-a' in [p['metadata']['name'] for p in cluster.list('v1', 'pods')]
