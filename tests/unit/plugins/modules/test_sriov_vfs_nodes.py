# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cluster side of SR-IOV: each node advertises, as its group's resource, the VFs its host has.

The rows are checked directly (``_sriov.hostdev_rows``), through the filter, and through the role's entry point
``nodes`` in a play against the kube-apiserver double (tests/doubles/kube_apiserver.py), with the hosts' SR-IOV stage
recorded in their ledgers by the ledger action as the host stage records it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpunet.rdma.plugins.plugin_utils._ledger import envelope
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.filter.sriov import rdma_sriov_nodes
from ansible_collections.gpunet.rdma.plugins.module_utils.tuning._sriov import hostdev_expectations, hostdev_rows

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
sys.path.insert(0, os.path.join(REPO, 'tests', 'doubles'))
import kube_apiserver  # noqa: E402  pylint: disable=wrong-import-position,import-error

RESOURCE = 'nvidia.com/hostdev'


def vf(index, rdma=True):
    return {'index': index, 'pci_address': '0000:0b:00.%d' % (index + 2), 'driver': 'mlx5_core' if rdma else None,
            'netdev': 'enp11s0f0v%d' % index if rdma else None, 'rdma_device': 'mlx5_%d' % (index + 8) if rdma else None}


def host(vfs, autoprobe=True, kubernetes='sriov', resource=None):
    fabric = {'name': 'ib_a100', 'kubernetes': kubernetes, 'rdma_resource': RESOURCE}
    if resource:
        fabric['sriov'] = {'num_vfs': len(vfs), 'resource': resource}
    detail = {'drivers_autoprobe': autoprobe, 'pfs': [{'pci_address': '0000:0b:00.0', 'vfs': vfs}]}
    return {'gpunet_rdma_fabric': fabric, 'ansible_facts': {'gpunet_rdma_ledger': {'sriov': envelope('sriov', detail=detail)}}}


def node(name, allocatable=None):
    return {'metadata': {'name': name}, 'status': {'allocatable': {} if allocatable is None else {RESOURCE: allocatable}}}


def test_what_each_host_should_advertise():
    hostvars = {
        'gpu-1.example.com': host([vf(0), vf(1)]),
        'gpu-2': host([vf(0), vf(1, rdma=False)]),            # a VF without RDMA device is not offered
        'gpu-3': host([vf(0, rdma=False)] * 3, autoprobe=False),  # unbound for VFIO: every VF counts
        'gpu-4': host([vf(0)], kubernetes='shared_device_plugin'),  # no SR-IOV resource: not checked
        'gpu-5': host([vf(0)], kubernetes='none', resource='example.com/vfs'),
        'gpu-6': {'gpunet_rdma_fabric': {'name': 'ib_a100', 'kubernetes': 'sriov', 'rdma_resource': RESOURCE}},
    }
    assert [(e['host'], e['resource'], e['vfs']) for e in hostdev_expectations(sorted(hostvars), hostvars.get)] == [
        ('gpu-1.example.com', RESOURCE, 2), ('gpu-2', RESOURCE, 1), ('gpu-3', RESOURCE, 3),
        ('gpu-5', 'example.com/vfs', 1)]


def test_each_node_is_judged_with_the_cause():
    expectations = [{'host': h, 'group': 'ib_a100', 'resource': RESOURCE, 'vfs': n}
                    for h, n in (('gpu-1.example.com', 2), ('gpu-2', 2), ('gpu-3', 4), ('gpu-4', 2), ('gpu-5', 0),
                                 ('gpu-6', 2))]
    nodes = [node('gpu-1', '2'), node('gpu-2'), node('gpu-3', '2'), node('gpu-5', '0'), node('gpu-6', 'many')]
    rows = dict((row['host'], row) for row in hostdev_rows(expectations, nodes))
    assert (rows['gpu-1.example.com']['node'], rows['gpu-1.example.com']['ok']) == ('gpu-1', True)
    assert rows['gpu-2']['problem'].startswith('no nvidia.com/hostdev in allocatable although the host has 2 VFs')
    assert 'restart its pod on the node after the VFs were created' in rows['gpu-2']['problem']
    assert rows['gpu-3']['problem'].startswith('nvidia.com/hostdev: 2 allocatable of the 4 VFs the host has')
    assert rows['gpu-3']['summary'].startswith('gpu-3: nvidia.com/hostdev: 2 allocatable')
    assert rows['gpu-4']['problem'] == 'no Kubernetes node of that name' and rows['gpu-4']['node'] is None
    assert rows['gpu-5']['problem'].startswith('the host has no VF to offer as nvidia.com/hostdev')
    assert rows['gpu-6']['problem'] == "nvidia.com/hostdev in allocatable is 'many', not a count"
    assert [row['ok'] for row in rows.values()] == [True, False, False, False, False, False]


def test_the_filter_refuses_what_is_not_hostvars():
    with pytest.raises(AnsibleFilterError, match='sriov_nodes'):
        rdma_sriov_nodes(['gpu-1'], 'hostvars', [])
    assert rdma_sriov_nodes(['gpu-1'], {'gpu-1': host([vf(0)])}, [node('gpu-1', '1')])[0]['ok'] is True


# ---------------------------------------------------------------- the role's entry point against the API double

PLAYBOOK = """
- name: The SR-IOV stage each host recorded
  hosts: all
  gather_facts: false
  tasks:
    - name: Record the stage as role sriov_vfs does
      gpunet.rdma.ledger:
        stage: sriov
        changed: true
        detail: {drivers_autoprobe: true, pfs: [{pci_address: "0000:0b:00.0", vfs: "{{ vfs }}"}]}

- name: Cluster stage
  hosts: localhost
  connection: local
  gather_facts: false
  module_defaults:
    group/gpunet.rdma.k8s:
      kubeconfig: "{{ gpunet_rdma_kubeconfig }}"
  tasks:
    - name: SR-IOV resources of the nodes
      ansible.builtin.include_role:
        name: gpunet.rdma.sriov_vfs
        tasks_from: nodes.yml

    - name: Keep the controller's ledger
      ansible.builtin.copy:
        content: "{{ ansible_facts.gpunet_rdma_ledger.sriov_resources | to_json }}"
        dest: "{{ ledger_file }}"
        mode: "0644"
"""


@pytest.fixture
def api():
    server = kube_apiserver.FakeApiServer().start()
    yield server
    server.stop()


def play(api, tmp_path, allocatable):
    for name, count in allocatable.items():
        api.add('v1', 'nodes', {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name},
                                'status': {'allocatable': {RESOURCE: count}}})
    vfs = [vf(0), vf(1)]
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(yaml.safe_dump({'all': {'children': {'ib_a100': {'hosts': {
        'gpu-a100-01': None, 'gpu-a100-02': None}, 'vars': {'gpunet_rdma_fabric': {
            'name': 'ib_a100', 'link_layer': 'InfiniBand', 'line_rate_gbps': 200, 'kubernetes': 'sriov',
            'rdma_resource': RESOURCE, 'sriov': {'num_vfs': 2}}, 'vfs': vfs}}}, 'vars': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}))
    playbook = tmp_path / 'play.yml'
    playbook.write_text(PLAYBOOK)
    extra = {'gpunet_rdma_kubeconfig': api.kubeconfig(str(tmp_path / 'kubeconfig')),
             'ledger_file': str(tmp_path / 'ledger.json')}
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'))
    done = subprocess.run(['ansible-playbook', '-i', str(inventory), str(playbook), '-e', json.dumps(extra)],
                          capture_output=True, text=True, env=env, check=False, cwd=str(tmp_path))
    return done.returncode, ' '.join((done.stdout + done.stderr).split())


def test_nodes_that_advertise_their_vfs_pass(api, tmp_path):
    code, output = play(api, tmp_path, {'gpu-a100-01': '2', 'gpu-a100-02': '4'})
    assert code == 0, output
    with open(str(tmp_path / 'ledger.json')) as handle:
        stage = json.load(handle)
    assert (stage['status'], stage['problems']) == ('ok', [])
    assert [(row['node'], row['vfs'], row['allocatable'], row['ok']) for row in stage['detail']['nodes']] == [
        ('gpu-a100-01', 2, '2', True), ('gpu-a100-02', 2, '4', True)]
    assert [(method, path) for method, path, _details in api.requests if path.startswith('/api/v1/nodes')] == [
        ('GET', '/api/v1/nodes')]


def test_a_node_that_advertises_fewer_fails_the_stage_naming_it(api, tmp_path):
    code, output = play(api, tmp_path, {'gpu-a100-01': '2', 'gpu-a100-02': '1'})
    assert code != 0
    assert ('gpu-a100-02: nvidia.com/hostdev: 1 allocatable of the 2 VFs the host has; the SR-IOV device plugin lists '
            'the VFs when it starts') in output
    assert 'The fleet report lists every node.' in output
