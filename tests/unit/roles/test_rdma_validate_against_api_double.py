# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rdma_validate role's pod level end to end against the kube-apiserver double: the NCCL job (a Kubeflow
MPIJob, validated against the MPI Operator's CRD), the validation pods with their in-pod checks, Spiderpool's
webhook injection and the hostdev allocatable check.

The double runs no pod. Its ``on_change`` stands in for the MPI Operator and the kubelet as the cluster-stage tests do
for the operators: when an MPIJob is stored it creates the launcher pod with the labels the MPI Operator v0.8.0 gives
it, serves as its log an NCCL run recorded on real machines (tests/unit/fixtures/public/nccl) and marks the job
Succeeded; when a validation client pod is stored it serves recorded outputs as its log and marks it Succeeded.
Spiderpool's injection webhook is a mutating admission webhook of the double.
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

import kube_apiserver  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.gpunet.rdma.plugins.plugin_utils._workloads import MARK  # noqa: E402

FIXTURES = os.path.join(REPO, 'tests', 'unit', 'fixtures')
MPI_CRD = os.path.join(REPO, 'tests', 'crds', 'mpi-operator-v0.8.0', 'kubeflow.org_mpijobs.yaml')
V100_PORTS = [{'device': 'mlx5_0', 'port': 1, 'netdev': 'ibp94s0f0', 'state': 'ACTIVE', 'link_layer': 'InfiniBand',
               'rate_gbps': 200},
              {'device': 'mlx5_1', 'port': 1, 'netdev': 'ibp94s0f1', 'state': 'ACTIVE', 'link_layer': 'InfiniBand',
               'rate_gbps': 200}]
ROCE_PORTS = [{'device': 'mlx5_%d' % i, 'port': 1, 'netdev': 'enp%ds0f0np0' % (11 + i), 'state': 'ACTIVE',
               'link_layer': 'Ethernet', 'rate_gbps': 100} for i in range(8)]
# The groups' fabrics, as group_vars of the test inventory.
FABRICS = {
    'ib_v100': {'name': 'ib_v100', 'link_layer': 'InfiniBand', 'line_rate_gbps': 200,
                'rdma_resource': 'rdma/rdma_v100', 'validation': {'nccl_min_busbw_pct': 90}},
    'ib_a100': {'name': 'ib_a100', 'link_layer': 'InfiniBand', 'line_rate_gbps': 200,
                'rdma_resource': 'rdma/rdma_a100'},
    'roce_a100': {'name': 'roce_a100', 'link_layer': 'Ethernet', 'line_rate_gbps': 100, 'kubernetes': 'spiderpool',
                  'rdma_resource': 'spidernet.io/shared_cx5_gpu{gpu}', 'gpudirect': {'mode': 'none'}},
    'ib_sriov': {'name': 'ib_sriov', 'link_layer': 'InfiniBand', 'line_rate_gbps': 200, 'kubernetes': 'sriov',
                 'rdma_resource': 'nvidia.com/hostdev', 'validation': {'networks': ['default/hostdevice-net']}},
}
HOSTS = {'ib_v100': ['gpu-v100-01', 'gpu-v100-02'], 'ib_a100': ['gpu-a100-01', 'gpu-a100-02'],
         'roce_a100': ['roce-1', 'roce-2'], 'ib_sriov': ['sriov-1', 'sriov-2']}
PORTS = {'ib_v100': V100_PORTS, 'ib_a100': V100_PORTS, 'roce_a100': ROCE_PORTS, 'ib_sriov': V100_PORTS}


def read(*path):
    with open(os.path.join(FIXTURES, *path)) as handle:
        return handle.read()


def node(name, allocatable=None):
    return {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name},
            'status': {'allocatable': dict({'cpu': '64'}, **(allocatable or {}))}}


@pytest.fixture
def api():
    server = kube_apiserver.FakeApiServer().start()
    with open(MPI_CRD) as handle:
        server.add('apiextensions.k8s.io/v1', 'customresourcedefinitions', yaml.safe_load(handle))
    for hosts in HOSTS.values():
        for host in hosts:
            server.add('v1', 'nodes', node(host, {'nvidia.com/hostdev': '2'} if host == 'sriov-1' else None))
    yield server
    server.stop()


PLAYBOOK = '''
- name: Pod-level validation, on the controller as site.yml's cluster play runs it
  hosts: localhost
  connection: local
  gather_facts: false
  module_defaults:
    group/kubernetes.core.k8s:
      kubeconfig: "{{ gpunet_rdma_kubeconfig }}"
  tasks:
    - name: The GPU nodes' facts as discovery leaves them
      ansible.builtin.set_fact:
        ansible_facts:
          rdma_ports: "{{ hostvars[item].test_ports }}"
      delegate_to: "{{ item }}"
      delegate_facts: true
      loop: "{{ groups.gpus }}"

    # recorded as the cluster stage records them (a real fact: a set_fact of ansible_facts would be a variable that
    # hides the facts the role records)
    - name: The cluster stage's records in the controller's ledger
      gpunet.rdma.ledger:
        stage: "{{ item.key }}"
        status: "{{ item.value.status | default(omit) }}"
        changed: "{{ item.value.changed | default(false) }}"
        pending: "{{ item.value.pending | default([]) }}"
        problems: "{{ item.value.problems | default([]) }}"
        detail: "{{ item.value.detail | default({}) }}"
      loop: "{{ test_ledger | dict2items }}"
      loop_control:
        label: "{{ item.key }}"

    - name: Pods and NCCL jobs
      ansible.builtin.include_role:
        name: gpunet.rdma.rdma_validate
        tasks_from: pods.yml

    - name: Keep the stage's record for the test
      ansible.builtin.copy:
        content: "{{ ansible_facts.gpunet_rdma_ledger.pod_validation | to_json }}"
        dest: "{{ playbook_dir }}/stage.json"
        mode: "0644"
'''


def play(api, tmp_path, groups, extra):
    children = dict((name, {'hosts': dict((h, {'test_ports': PORTS[name]}) for h in HOSTS[name]),
                            'vars': {'gpunet_rdma_fabric': FABRICS[name]}}) for name in groups)
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(yaml.safe_dump({'all': {'children': {'gpus': {'children': children}}, 'vars': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}))
    playbook = tmp_path / 'pods.yml'
    playbook.write_text(PLAYBOOK)
    extra_vars = dict({'gpunet_rdma_kubeconfig': api.kubeconfig(str(tmp_path / 'kubeconfig')),
                       'rdma_validate_timeout': 10, 'rdma_validate_workloads': False}, **extra)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'))
    done = subprocess.run(['ansible-playbook', '-i', str(inventory), str(playbook), '-e', json.dumps(extra_vars)],
                          capture_output=True, text=True, env=env, check=False, cwd=str(tmp_path))
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    with open(str(tmp_path / 'stage.json')) as handle:
        return json.load(handle)


def operator_and_kubelet(logs):
    """The MPI Operator and the kubelet: an MPIJob gets its launcher pod, that pod the log ``logs[job name]`` and
    the job the Succeeded condition (the workers are left out: nothing reads them)."""
    def react(api, group_version, plural, obj):
        if plural != 'mpijobs' or obj.get('status'):
            return
        name, namespace = obj['metadata']['name'], obj['metadata']['namespace']
        launcher = obj['spec']['mpiReplicaSpecs']['Launcher']['template']
        api.add('v1', 'pods', {
            'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {'name': '%s-launcher-x7k2p' % name, 'namespace': namespace, 'labels': {
                'training.kubeflow.org/operator-name': 'mpi-operator', 'training.kubeflow.org/job-name': name,
                'training.kubeflow.org/job-role': 'launcher'}},
            'spec': launcher['spec'], 'status': {'phase': 'Succeeded'}})
        api.set_log(namespace, '%s-launcher-x7k2p' % name, logs[name])
        api.add(group_version, plural, dict(obj, status={'conditions': [
            {'type': 'Created', 'status': 'True', 'reason': 'MPIJobCreated'},
            {'type': 'Succeeded', 'status': 'True', 'reason': 'MPIJobSucceeded',
             'message': 'MPIJob %s/%s successfully completed.' % (namespace, name)}]}))
    return react


def test_nccl_jobs_run_and_are_judged(api, tmp_path):
    """ib_v100: the AKS MPIJob launcher's NET/IB lines (8 HDR NICs, GDRDMA) with that project's result table for the
    job - IB, GPUDirect RDMA on, 187.22 GB/s = 93.6 % of 8 x 200 Gb/s, above the group's 90 %. ib_a100: NCCL 2.5.6
    falling back to sockets (NCCL issue 278)."""
    ib = read('public', 'nccl', 'aks-rdma-infiniband-30-mpijob-launcher-2.25.1.log') + read(
        'public', 'nccl', 'aks-rdma-infiniband-mpijob-ib-sriov.txt')
    socket = read('public', 'nccl', 'nccl-278-2.5.6-socket-rings.log')
    api.on_change = operator_and_kubelet({'nccl-tests-ib-v100': ib, 'nccl-tests-ib-a100': socket})
    ledger = {'network_operator': {'detail': {'resources': [
        {'group': 'ib_v100', 'hosts': HOSTS['ib_v100'], 'resource': 'rdma/rdma_v100', 'if_names': ['ibp94s0f0']},
        {'group': 'ib_a100', 'hosts': HOSTS['ib_a100'], 'resource': 'rdma/rdma_a100', 'if_names': ['ibp94s0f0']}]}}}
    # a training job of the cluster's users, in the same namespace: its launcher is neither read nor touched
    api.add('v1', 'pods', {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {
        'name': 'llm-pretrain-launcher-4fj2q', 'namespace': 'default', 'labels': {
            'training.kubeflow.org/job-name': 'llm-pretrain', 'training.kubeflow.org/job-role': 'launcher'}},
        'spec': {'containers': [{'name': 'launcher', 'image': 'mpioperator/mpi-pi'}]}, 'status': {'phase': 'Running'}})
    api.set_log('default', 'llm-pretrain-launcher-4fj2q', 'NCCL INFO NET/Socket : Using [0]eth0\n')
    stage = play(api, tmp_path, ['ib_v100', 'ib_a100'], {'test_ledger': ledger, 'rdma_validate_run_nccl': True})
    posted = [(path, d['body']) for method, path, d in api.requests if method == 'POST' and 'mpijobs' in path]
    assert [p for p, _b in posted] == ['/apis/kubeflow.org/v2beta1/namespaces/default/mpijobs'] * 2
    launcher = posted[0][1]['spec']['mpiReplicaSpecs']['Launcher']['template']['spec']['containers'][0]
    assert '-x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS' in launcher['command'][2]
    v100, a100 = stage['detail']['nccl']
    assert (v100['group'], v100['state'], v100['ok'], v100['transport'], v100['gdr']) == (
        'ib_v100', 'Succeeded', True, 'IB', 'on')
    assert (v100['busbw_gbs'], v100['nics_per_node'], v100['busbw_line_rate_pct'], v100['min_busbw_pct']) == (
        187.22, 8, 93.6, 90.0)
    assert v100['hosts'] == ['nccl-tests-worker-0', 'nccl-tests-worker-1'] and v100['nccl_version'] == '2.25.1+cuda12.8'
    assert (a100['ok'], a100['transport'], a100['socket_hosts']) == (False, 'Socket', ['sh-01', 'sh-03'])
    assert a100['problems'][0].startswith('NET/Socket on sh-01, sh-03: NCCL fell back to TCP sockets')
    assert stage['status'] == 'failed' and stage['problems'][0].startswith('NCCL: NET/Socket on sh-01, sh-03')
    # every group's job at once: the launchers found by the MPI Operator's labels in one list, each log read, the
    # jobs removed
    listed = [path for method, path, _d in api.requests if method == 'GET' and 'labelSelector' in path]
    assert listed == ['/api/v1/namespaces/default/pods?labelSelector=training.kubeflow.org/job-name%20in%20%28'
                      'nccl-tests-ib-v100%2Cnccl-tests-ib-a100%29%2Ctraining.kubeflow.org/job-role%3Dlauncher']
    logs = sorted(path for method, path, _d in api.requests if method == 'GET' and path.endswith('/log'))
    assert logs == ['/api/v1/namespaces/default/pods/nccl-tests-%s-launcher-x7k2p/log' % group
                    for group in ('ib-a100', 'ib-v100')]
    assert api.get('v1', 'pods', 'llm-pretrain-launcher-4fj2q', 'default')['status']['phase'] == 'Running'
    assert sorted(path for method, path, _d in api.requests if method == 'DELETE') == [
        '/apis/kubeflow.org/v2beta1/namespaces/default/mpijobs/nccl-tests-ib-a100',
        '/apis/kubeflow.org/v2beta1/namespaces/default/mpijobs/nccl-tests-ib-v100']


def pod_log(*parts):
    return '\n'.join(parts)


def spiderpool_injection(api, operation, resource, obj):
    """Spiderpool's webhook: a pod with cni.spidernet.io/rdma-resource-inject gets every network and RDMA resource of
    the SpiderMultusConfigs carrying the same annotation (here the eight GPU networks)."""
    annotations = (obj.get('metadata') or {}).get('annotations') or {}
    if resource.plural != 'pods' or annotations.get('cni.spidernet.io/rdma-resource-inject') != 'rdma-network':
        return None
    annotations['k8s.v1.cni.cncf.io/networks'] = json.dumps(
        [{'name': 'gpu%d-macvlan' % g, 'namespace': 'spiderpool'} for g in range(1, 9)])
    limits = dict(('spidernet.io/shared_cx5_gpu%d' % g, 1) for g in range(1, 9))
    for container in obj['spec']['containers']:
        container['resources'] = {'limits': dict(limits), 'requests': dict(limits)}
    return obj


def test_pods_in_pod_checks_injection_and_hostdev(api, tmp_path):
    perftest = read('recorded', 'seed003-pod-ib-write-bw-1m.txt')
    shared = pod_log('ulimit -l: unlimited', MARK + 'ip -j addr', read('public', 'ip_addr',
                                                                       'netplan-status-test-ip-j-addr.json'),
                     MARK + 'ip rule', MARK + 'rdma link', read('recorded', 'seed001-host-rdma-link.txt'),
                     MARK + 'env', MARK + 'end', perftest)
    guide = pod_log('ulimit -l: unlimited', MARK + 'ip -j addr', read('recorded', 'seed001-pod-ip-a.txt'),
                    MARK + 'ip rule', read('recorded', 'seed001-pod-ip-rule.txt'),
                    MARK + 'ip route show table 100', read('recorded', 'seed001-pod-ip-route-table-100.txt'),
                    MARK + 'rdma link', read('recorded', 'seed001-pod-rdma-link.txt'), MARK + 'env', MARK + 'end',
                    perftest)
    hostdev = pod_log('ulimit -l: unlimited', MARK + 'ip -j addr',
                      read('public', 'ip_addr', 'sriov-network-device-plugin-94-pod-ip-addr.txt'), MARK + 'ip rule',
                      MARK + 'rdma link', read('public', 'rdma_link', 'openshift-docs-rdma-verifying-pod-with-vf.txt'),
                      MARK + 'env', 'PCIDEVICE_NVIDIA_COM_HOSTDEV=0000:3b:00.2', MARK + 'end', perftest)
    logs = {'ib-v100': shared, 'roce-a100': guide, 'ib-sriov': hostdev}

    def kubelet(api, group_version, plural, obj):
        if plural != 'pods' or obj['status'].get('phase') not in (None, 'Pending'):
            return
        name = obj['metadata']['name']
        group = name[len('rdma-validate-'):].rsplit('-', 1)[0]
        api.set_log(obj['metadata']['namespace'], name, logs[group])
        api.add(group_version, plural, dict(obj, status={'phase': 'Succeeded' if name.endswith('-client')
                                                         else 'Running'}))
    api.on_change = kubelet
    api.mutating.append(spiderpool_injection)
    ledger = {'network_operator': {'detail': {'resources': [
        {'group': 'ib_v100', 'hosts': HOSTS['ib_v100'], 'resource': 'rdma/rdma_v100',
         'if_names': ['ibp94s0f0', 'ibp94s0f1']}]}},
        'spiderpool': {'detail': {'resources': [
            {'group': 'roce_a100', 'hosts': HOSTS['roce_a100'], 'resource': 'spidernet.io/shared_cx5_gpu%d' % g,
             'gpu': g, 'if_names': ['enp%ds0f0np0' % (10 + g)], 'network': 'spiderpool/gpu%d-macvlan' % g,
             'subnet': '172.16.%d.0/24' % (10 + g)} for g in range(1, 9)]}}}
    stage = play(api, tmp_path, ['ib_v100', 'roce_a100', 'ib_sriov'], {
        'test_ledger': ledger, 'rdma_validate_run_pods': True, 'rdma_validate_pod_resource_inject': 'rdma-network'})
    posted = dict((d['body']['metadata']['name'], d['body']) for method, path, d in api.requests
                  if method == 'POST' and path.endswith('/pods'))
    # Spiderpool's pods carry only the injection annotation; the stored pods have what the webhook injected.
    sent = posted['rdma-validate-roce-a100-client']
    assert sent['metadata']['annotations'] == {'cni.spidernet.io/rdma-resource-inject': 'rdma-network'}
    assert 'resources' not in sent['spec']['containers'][0]
    checks = dict((c['pod'], c) for c in stage['detail']['pod_checks'])
    assert sorted(checks) == ['rdma-validate-ib-sriov-client', 'rdma-validate-ib-sriov-server',
                              'rdma-validate-ib-v100-client', 'rdma-validate-ib-v100-server',
                              'rdma-validate-roce-a100-client', 'rdma-validate-roce-a100-server']
    assert checks['rdma-validate-ib-v100-client']['ok'] is True, checks['rdma-validate-ib-v100-client']
    assert checks['rdma-validate-ib-sriov-client']['ok'] is True, checks['rdma-validate-ib-sriov-client']
    roce = checks['rdma-validate-roce-a100-client']
    assert roce['injected'] is True and len(roce['resources']) == 8
    # the guide's recording shows two of the eight networks, with routes that do not match its rules
    assert [p.split(':')[0] for p in roce['problems']] == [
        'expected 8 secondary interfaces with an IPv4 address (net1..net8), found 2 (net1, net2)',
        'table 107 of 172.16.11.10 (net1) has no default route',
        'table 106 of 172.16.12.10 (net2) has no default route',
        "rdma link shows 2 ACTIVE RDMA devices on the pod's interfaces (mlx5_27/1 net2, mlx5_54/1 net1), 8 expected"]
    # hostdev: the SR-IOV device plugin's resource per node
    assert [(row['node'], row['allocatable'], row['ok']) for row in stage['detail']['allocatable']] == [
        ('sriov-1', '2', True), ('sriov-2', None, False)]
    assert stage['detail']['allocatable'][1]['problem'].startswith(
        'sriov-2: no nvidia.com/hostdev in allocatable: the SR-IOV device plugin found no VF')
    results = dict((r['group'], r) for r in stage['detail']['results'])
    # the device is the one perftest names in the client's output (the pod's VF on a real hostdev pod)
    assert results['ib_sriov']['device'] == 'mlx5_0' and results['ib_v100']['memlock'] == 'unlimited'
    assert stage['status'] == 'failed'
    assert sum(1 for p in stage['problems'] if p.startswith('in-pod checks: ')) == 2  # roce client and server
