# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cluster-stage roles through kubernetes.core against a kube-apiserver test double.

No API server can run here; tests/doubles/kube_apiserver.py answers the requests these roles make (discovery, GET
and lists with selectors, merge, strategic merge and server-side apply patches, dry runs, creates and deletes) as
strictly as kube-apiserver, with the upstream NicClusterPolicy CRD of tests/crds. The plays run on the controller
with the cluster access in module_defaults, as site.yml's cluster play does.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(REPO, 'tests', 'doubles'))

import kube_apiserver  # noqa: E402  pylint: disable=wrong-import-position

UNSCHEDULABLE = {'key': 'node.kubernetes.io/unschedulable', 'operator': 'Exists', 'effect': 'NoSchedule'}
GPU_TAINT = {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}
RESOURCE = 'rdma/rdma_v100'


def crd(crds_dir, without_tolerations=False):
    with open(os.path.join(crds_dir, 'network-operator-v26.4.1', 'mellanox.com_nicclusterpolicies.yaml')) as f:
        document = yaml.safe_load(f)
    if without_tolerations:  # as installed by a Network Operator before 23.7
        for version in document['spec']['versions']:
            version['schema']['openAPIV3Schema']['properties']['spec']['properties'].pop('tolerations')
    return document


def node(name, waiting):
    return {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name, 'labels': {
        'network.nvidia.com/operator.mofed.wait': 'true' if waiting else 'false'}},
        'status': {'allocatable': {} if waiting else {RESOURCE: '63'}}}


def operator_reacts(api, group_version, plural, obj):
    """Stand-in for the operator: once the driver pods tolerate cordoned nodes, they finish everywhere."""
    if plural == 'nicclusterpolicies' and UNSCHEDULABLE in (obj['spec'].get('tolerations') or []):
        for item in api.list('v1', 'nodes'):
            api.add('v1', 'nodes', node(item['metadata']['name'], waiting=False))


@pytest.fixture
def cluster(tmp_path, upstream_crds):
    api = kube_apiserver.FakeApiServer(on_change=operator_reacts).start()
    api.add('apiextensions.k8s.io/v1', 'customresourcedefinitions', crd(upstream_crds))
    api.add('mellanox.com/v1alpha1', 'nicclusterpolicies', {
        'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'NicClusterPolicy',
        'metadata': {'name': 'nic-cluster-policy', 'resourceVersion': '1'},
        'spec': {'tolerations': [GPU_TAINT], 'rdmaSharedDevicePlugin': {'image': 'k8s-rdma-shared-dev-plugin'}}})
    api.add('v1', 'nodes', node('gpu-v100-01', waiting=True))
    api.add('v1', 'nodes', node('gpu-v100-02', waiting=False))
    yield api
    api.stop()


def play(api, tmp_path, playbook, extra=None, args=(), environment=None):
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(yaml.safe_dump({'all': {'children': {'ib_v100': {'hosts': {
        'gpu-v100-01': None, 'gpu-v100-02': None}}}, 'vars': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}))
    extra_vars = {'gpunet_rdma_kubeconfig': api.kubeconfig(str(tmp_path / 'kubeconfig')),
                  'nicclusterpolicy_tolerations_resources': [{'group': 'ib_v100', 'resource': RESOURCE}],
                  'nicclusterpolicy_tolerations_wait_timeout': 20,
                  'network_operator_wait_timeout': 20}
    extra_vars.update(extra or {})
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'), **(environment or {}))
    command = ['ansible-playbook', '-i', str(inventory), playbook, '-e', json.dumps(extra_vars)] + list(args)
    result = subprocess.run(command,
                            capture_output=True, text=True, env=env, check=False, cwd=str(tmp_path))
    return result.returncode, ' '.join((result.stdout + result.stderr).split())


def patches(api):
    return [(path, details['body']) for method, path, details in api.requests if method == 'PATCH']


TOLERATIONS = os.path.join(REPO, 'playbooks', 'nicclusterpolicy_tolerations.yml')


def test_tolerations_added_after_a_dry_run_and_nodes_recover(cluster, tmp_path):
    code, output = play(cluster, tmp_path, TOLERATIONS)
    assert code == 0, output
    sent = patches(cluster)
    assert [path for path, _body in sent] == [
        '/apis/mellanox.com/v1alpha1/nicclusterpolicies/nic-cluster-policy?dryRun=All',
        '/apis/mellanox.com/v1alpha1/nicclusterpolicies/nic-cluster-policy']
    assert sent[1][1]['spec']['tolerations'] == [GPU_TAINT, UNSCHEDULABLE]  # existing kept, first
    stored = cluster.get('mellanox.com/v1alpha1', 'nicclusterpolicies', 'nic-cluster-policy')
    assert stored['spec']['tolerations'] == [GPU_TAINT, UNSCHEDULABLE]
    # Kept, with the default the v26.4.1 CRD gives imagePullSecrets (the API server defaults on every write).
    assert stored['spec']['rdmaSharedDevicePlugin'] == {'image': 'k8s-rdma-shared-dev-plugin', 'imagePullSecrets': []}
    # Again: nothing to add, nothing sent.
    code, output = play(cluster, tmp_path, TOLERATIONS)
    assert code == 0, output
    assert len(patches(cluster)) == 2


def test_check_mode_sends_only_dry_runs(cluster, tmp_path):
    code, output = play(cluster, tmp_path, TOLERATIONS, args=['--check'])
    assert code == 0, output
    assert [path.endswith('?dryRun=All') for path, _body in patches(cluster)] == [True, True]
    stored = cluster.get('mellanox.com/v1alpha1', 'nicclusterpolicies', 'nic-cluster-policy')
    assert stored['spec']['tolerations'] == [GPU_TAINT]


def test_refused_without_spec_tolerations(cluster, tmp_path, upstream_crds):
    cluster.add('apiextensions.k8s.io/v1', 'customresourcedefinitions', crd(upstream_crds, without_tolerations=True))
    code, output = play(cluster, tmp_path, TOLERATIONS)
    assert code != 0
    assert 'The installed NicClusterPolicy CRD has no spec.tolerations (it came with Network Operator 23.7)' in output
    assert patches(cluster) == []


def test_a_policy_argo_cd_keeps_is_not_patched(cluster, tmp_path):
    """Argo CD would put the tolerations back at its next sync: refused before any patch, the change for Git named."""
    policy = cluster.get('mellanox.com/v1alpha1', 'nicclusterpolicies', 'nic-cluster-policy')
    policy['metadata']['annotations'] = {
        'argocd.argoproj.io/tracking-id': 'rdma:mellanox.com/NicClusterPolicy:/nic-cluster-policy'}
    cluster.add('mellanox.com/v1alpha1', 'nicclusterpolicies', policy)
    code, output = play(cluster, tmp_path, TOLERATIONS)
    assert code != 0
    assert ('NicClusterPolicy nic-cluster-policy is kept by Argo CD (rdma, annotation argocd.argoproj.io/tracking-id='
            'rdma:mellanox.com/NicClusterPolicy:/nic-cluster-policy)') in output, output
    assert '"key": "node.kubernetes.io/unschedulable"' in output and 'Nothing was patched.' in output
    assert patches(cluster) == []


def test_nodes_that_stay_waiting_are_named(cluster, tmp_path):
    cluster.on_change = None  # the operator never recovers the node
    # the wait reads the nodes twice, one second apart
    code, output = play(cluster, tmp_path, TOLERATIONS, extra={'nicclusterpolicy_tolerations_wait_timeout': 1,
                                                               'nicclusterpolicy_tolerations_wait_delay': 1})
    assert code != 0
    assert ('After 1 s: gpu-v100-01: network.nvidia.com/operator.mofed.wait=true: the driver pod has not finished '
            'on this node') in output
    assert 'gpu-v100-02:' not in output.split('After 1 s:')[1]
    assert len(patches(cluster)) == 2


VERIFY = '''
- name: Verify after apply, on the controller as site.yml's cluster play runs it
  hosts: localhost
  connection: local
  gather_facts: false
  module_defaults:
    group/kubernetes.core.k8s:
      kubeconfig: "{{ gpunet_rdma_kubeconfig }}"
  tasks:
    - name: Network Operator verification
      ansible.builtin.include_role:
        name: gpunet.rdma.network_operator
        tasks_from: verify.yml
      vars:
        network_operator_build:
          resources:
            - {group: ib_v100, hosts: [gpu-v100-01, gpu-v100-02], resource: rdma/rdma_v100, if_names: [ibp94s0f0]}

    - name: Show the per-node table
      ansible.builtin.debug:
        msg: "{{ network_operator_result.nodes | map(attribute='node') | zip(network_operator_result.nodes | map(attribute='ok')) | to_json }}"
      run_once: true
'''


def daemonset(name, desired, ready):
    return {'apiVersion': 'apps/v1', 'kind': 'DaemonSet',
            'metadata': {'name': name, 'namespace': 'nvidia-network-operator'},
            'spec': {'selector': {'matchLabels': {'app': name}}, 'template': {
                'metadata': {'labels': {'app': name}}, 'spec': {'containers': [{'name': name, 'image': name}]}}},
            'status': {'currentNumberScheduled': desired, 'numberMisscheduled': 0, 'desiredNumberScheduled': desired,
                       'numberReady': ready, 'updatedNumberScheduled': desired}}


def test_verify_after_apply(cluster, tmp_path):
    (tmp_path / 'verify.yml').write_text(VERIFY)
    cluster.add('apps/v1', 'daemonsets', daemonset('rdma-shared-dp-ds', 2, 2))
    cluster.add('v1', 'nodes', node('gpu-v100-01', waiting=False))
    code, output = play(cluster, tmp_path, str(tmp_path / 'verify.yml'))
    assert code == 0, output
    assert 'msg: \'[["gpu-v100-01", true], ["gpu-v100-02", true]]\'' in output, output


def test_verify_names_what_is_missing(cluster, tmp_path):
    (tmp_path / 'verify.yml').write_text(VERIFY)
    cluster.add('apps/v1', 'daemonsets', daemonset('rdma-shared-dp-ds', 2, 2))
    code, output = play(cluster, tmp_path, str(tmp_path / 'verify.yml'))
    assert code != 0
    assert ('gpu-v100-01: network.nvidia.com/operator.mofed.wait=true: the driver pod has not finished on this node'
            in output)
    cluster.add('apps/v1', 'daemonsets', daemonset('mofed-ubuntu22.04-ds', 2, 1))
    code, output = play(cluster, tmp_path, str(tmp_path / 'verify.yml'), extra={'network_operator_wait_timeout': 1,
                                                                                'network_operator_wait_delay': 1})
    assert code != 0
    assert 'After 1 s in namespace nvidia-network-operator: not ready: mofed-ubuntu22.04-ds' in output


# ------------------------------------------------------------------ stale extended resources, AWX-style credentials

NODE_CLEANUP = '''
- name: Stale resources, with the credentials the kubernetes.core tasks use
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: The nodes, as kubernetes.core reads them
      kubernetes.core.k8s_info:
        kind: Node
        context: "{{ network_operator_context | default(omit, true) }}"
      register: nodes
      delegate_to: localhost
      run_once: true

    - name: Remove the stale resource, as the network_operator apply stage calls the module
      gpunet.rdma.node_extended_resources:
        names: [nvidia.com/hostdev]
        context: "{{ network_operator_context | default(omit, true) }}"
      delegate_to: localhost
      run_once: true
'''


def test_node_cleanup_with_awx_credentials_like_kubernetes_core(cluster, tmp_path):
    """AWX's Kubernetes credential sets K8S_AUTH_*; the module and kubernetes.core's tasks both connect with them."""
    stale = node('gpu-v100-01', waiting=False)
    stale['status']['allocatable']['nvidia.com/hostdev'] = '2'
    cluster.add('v1', 'nodes', stale)
    cluster.tokens['awx'] = 'system:serviceaccount:awx:job'
    (tmp_path / 'cleanup.yml').write_text(NODE_CLEANUP)
    code, output = play(cluster, tmp_path, str(tmp_path / 'cleanup.yml'),
                        environment={'K8S_AUTH_HOST': cluster.url, 'K8S_AUTH_API_KEY': 'awx',
                                     'KUBECONFIG': '/nonexistent'})
    assert code == 0, output
    assert 'nvidia.com/hostdev' not in cluster.get('v1', 'nodes', 'gpu-v100-01')['status']['allocatable']
    assert {details['headers'].get('authorization') for _m, _p, details in cluster.requests} == {'Bearer awx'}
    # The same environment with a token the cluster does not know: refused (401) as for kubernetes.core.
    code, output = play(cluster, tmp_path, str(tmp_path / 'cleanup.yml'),
                        environment={'K8S_AUTH_HOST': cluster.url, 'K8S_AUTH_API_KEY': 'expired'})
    assert code != 0 and 'Unauthorized' in output


def test_node_cleanup_takes_the_module_defaults_of_the_collection_group(cluster, tmp_path):
    """Cluster access given once, as module_defaults of group/gpunet.rdma.k8s: that group extends kubernetes.core's
    (meta/runtime.yml), so the kubernetes.core tasks and this module of the play connect the same way.

    (Defaults for group/kubernetes.core.k8s do not reach the module: extend_group adds kubernetes.core's modules to
    gpunet.rdma.k8s, not the other way round.)
    """
    stale = node('gpu-v100-02', waiting=False)
    stale['status']['allocatable']['nvidia.com/hostdev'] = '2'
    cluster.add('v1', 'nodes', stale)
    (tmp_path / 'cleanup.yml').write_text(NODE_CLEANUP.replace('  gather_facts: false\n', '''  gather_facts: false
  module_defaults:
    group/gpunet.rdma.k8s:
      kubeconfig: "{{ gpunet_rdma_kubeconfig }}"
''', 1))
    code, output = play(cluster, tmp_path, str(tmp_path / 'cleanup.yml'), environment={'KUBECONFIG': '/nonexistent'})
    assert code == 0, output
    assert 'nvidia.com/hostdev' not in cluster.get('v1', 'nodes', 'gpu-v100-02')['status']['allocatable']


# ------------------------------------------------------------------ server-side apply, as network_operator applies

APPLY = '''
- name: The NicClusterPolicy applied as roles/network_operator/tasks/apply.yml applies it
  hosts: localhost
  connection: local
  gather_facts: false
  module_defaults:
    group/gpunet.rdma.k8s:
      kubeconfig: "{{ gpunet_rdma_kubeconfig }}"
  tasks:
    - name: Apply the NicClusterPolicy (strict field validation on the server)
      kubernetes.core.k8s:
        definition: "{{ policy }}"
        state: present
        apply: true
        server_side_apply:
          field_manager: gpunet.rdma
      register: applied

    - name: Show
      ansible.builtin.debug:
        msg: "APPLIED changed={{ applied.changed }}"
'''


def test_server_side_apply_of_the_policy(cluster, tmp_path):
    (tmp_path / 'apply.yml').write_text(APPLY)
    policy = {'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'NicClusterPolicy',
              'metadata': {'name': 'nic-cluster-policy'},
              'spec': {'tolerations': [GPU_TAINT], 'rdmaSharedDevicePlugin': {
                  'image': 'k8s-rdma-shared-dev-plugin', 'repository': 'nvcr.io/nvidia/mellanox', 'version': 'v1',
                  'config': '{}'}, 'nvIpam': {'image': 'nvidia-k8s-ipam', 'enableWebhook': False}}}
    code, output = play(cluster, tmp_path, str(tmp_path / 'apply.yml'), extra={'policy': policy})
    assert code == 0, output
    assert 'APPLIED changed=True' in output
    stored = cluster.get('mellanox.com/v1alpha1', 'nicclusterpolicies', 'nic-cluster-policy')
    assert stored['spec']['nvIpam'] == {'image': 'nvidia-k8s-ipam', 'enableWebhook': False, 'imagePullSecrets': []}
    assert [d['content_type'] for m, p, d in cluster.requests if m == 'PATCH'] == ['application/apply-patch+yaml']
    # The same again changes nothing; without nvIpam, the manager's nvIpam goes.
    code, output = play(cluster, tmp_path, str(tmp_path / 'apply.yml'), extra={'policy': policy})
    assert code == 0 and 'APPLIED changed=False' in output, output
    del policy['spec']['nvIpam']
    code, output = play(cluster, tmp_path, str(tmp_path / 'apply.yml'), extra={'policy': policy})
    assert code == 0 and 'APPLIED changed=True' in output, output
    assert 'nvIpam' not in cluster.get('mellanox.com/v1alpha1', 'nicclusterpolicies', 'nic-cluster-policy')['spec']
    # A field the release does not declare is refused: kubernetes.core sends no fieldValidation, the default Warn
    # prunes it and the task reports the API server's warning.
    policy['spec']['deploymentTolerationz'] = []
    code, output = play(cluster, tmp_path, str(tmp_path / 'apply.yml'), extra={'policy': policy})
    assert 'unknown field' in output and 'spec.deploymentTolerationz' in output, output


# ------------------------------------------------------------------ spiderpool

SPIDERPOOL_RESOURCES = ['spidernet.io/shared_cx5_gpu%d' % gpu for gpu in range(1, 9)]
SPIDERPOOL = '''
- name: Spiderpool cluster calls, on the controller as site.yml's cluster play runs them
  hosts: localhost
  connection: local
  gather_facts: false
  module_defaults:
    group/kubernetes.core.k8s:
      kubeconfig: "{{ gpunet_rdma_kubeconfig }}"
  vars:
    spiderpool_wait_timeout: 10
    spiderpool_build:
      calico_patch:
        spec: {template: {spec: {containers: [{name: calico-node, env: [
          {name: IP_AUTODETECTION_METHOD, value: kubernetes-internal-ip}]}]}}}
      helm_values: {spiderpoolController: {name: spiderpool-controller}}
      resources: %(resources)s
  tasks:
    - name: Calico
      ansible.builtin.include_role:
        name: gpunet.rdma.spiderpool
        tasks_from: calico.yml

    - name: Stand in for a changed helm release
      ansible.builtin.debug:
        msg: values changed
      changed_when: restart | default(false) | bool
      notify: Restart the Spiderpool controller

    - name: Run the handlers
      ansible.builtin.meta: flush_handlers

    - name: Verify
      ansible.builtin.include_role:
        name: gpunet.rdma.spiderpool
        tasks_from: verify.yml
'''


def spiderpool_cluster(api, tmp_path):
    api.add('apps/v1', 'daemonsets', {
        'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'metadata': {'name': 'calico-node', 'namespace': 'kube-system',
                                                                   'resourceVersion': '1'},
        'spec': {'selector': {'matchLabels': {'k8s-app': 'calico-node'}}, 'template': {
            'metadata': {'labels': {'k8s-app': 'calico-node'}},
            'spec': {'containers': [{'name': 'calico-node', 'image': 'calico/node:v3.28.0', 'env': [
                {'name': 'CALICO_NETWORKING_BACKEND', 'value': 'bird'},
                {'name': 'IP_AUTODETECTION_METHOD', 'value': 'first-found'}]}]}}}})
    api.add('apps/v1', 'deployments', {
        'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': {'name': 'spiderpool-controller',
                                                                    'namespace': 'spiderpool', 'resourceVersion': '1'},
        'spec': {'selector': {'matchLabels': {'app': 'spiderpool-controller'}}, 'template': {
            'metadata': {'labels': {'app': 'spiderpool-controller'}},
            'spec': {'containers': [{'name': 'spiderpool-controller', 'image': 'spiderpool-controller:v1.2.2'}]}}}})
    resources = [{'group': 'roce_a100', 'hosts': ['roce-1'], 'resource': r, 'if_names': ['enp%ds0f0np0' % (10 + g)]}
                 for g, r in enumerate(SPIDERPOOL_RESOURCES, 1)]
    playbook = tmp_path / 'spiderpool.yml'
    playbook.write_text(SPIDERPOOL % {'resources': json.dumps(resources)})
    return str(playbook)


def roce_node(resources):
    return {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'roce-1'},
            'status': {'allocatable': dict((r, '100') for r in resources)}}


def test_spiderpool_calico_patch_restart_and_verify(cluster, tmp_path):
    playbook = spiderpool_cluster(cluster, tmp_path)
    cluster.add('v1', 'nodes', roce_node(SPIDERPOOL_RESOURCES))
    code, output = play(cluster, tmp_path, playbook, extra={'restart': True})
    assert code == 0, output
    calico = cluster.get('apps/v1', 'daemonsets', 'calico-node')['spec']['template']['spec']['containers'][0]
    assert calico['env'] == [{'name': 'CALICO_NETWORKING_BACKEND', 'value': 'bird'},
                             {'name': 'IP_AUTODETECTION_METHOD', 'value': 'kubernetes-internal-ip'}]
    assert calico['image'] == 'calico/node:v3.28.0'
    controller = cluster.get('apps/v1', 'deployments', 'spiderpool-controller')
    assert 'gpunet.rdma/restarted-at' in controller['spec']['template']['metadata']['annotations']
    assert [details['content_type'] for method, path, details in cluster.requests
            if method == 'PATCH' and 'calico-node' in path] == ['application/strategic-merge-patch+json']
    # Again, without a values change: nothing to change, no restart.
    versions = [cluster.get('apps/v1', plural, name)['metadata']['resourceVersion']
                for plural, name in (('deployments', 'spiderpool-controller'), ('daemonsets', 'calico-node'))]
    code, output = play(cluster, tmp_path, playbook)
    assert code == 0, output
    assert 'changed=0' in output
    assert [cluster.get('apps/v1', plural, name)['metadata']['resourceVersion']
            for plural, name in (('deployments', 'spiderpool-controller'), ('daemonsets', 'calico-node'))] == versions


def test_spiderpool_verify_names_the_missing_resource(cluster, tmp_path):
    playbook = spiderpool_cluster(cluster, tmp_path)
    cluster.add('v1', 'nodes', roce_node(SPIDERPOOL_RESOURCES[:7]))
    code, output = play(cluster, tmp_path, playbook)
    assert code != 0
    assert ('roce-1: no spidernet.io/shared_cx5_gpu8 in allocatable: the shared device plugin found none of '
            'enp18s0f0np0') in output
    assert 'shared_cx5_gpu7 in allocatable' not in output


# ------------------------------------------------------------------ rdma_validate pods

POD_CHECK = '''
- name: Pod-level RDMA check, on the controller as site.yml's cluster play runs it
  hosts: localhost
  connection: local
  gather_facts: false
  module_defaults:
    group/kubernetes.core.k8s:
      kubeconfig: "{{ gpunet_rdma_kubeconfig }}"
  vars:
    rdma_validate_run_pods: true
    rdma_validate_timeout: 10
    rdma_validate_workloads: false
  tasks:
    - name: The GPU nodes' facts as discovery leaves them
      ansible.builtin.set_fact:
        ansible_facts:
          rdma_ports:
            - {device: mlx5_0, port: 1, netdev: ibp94s0f0, state: ACTIVE, link_layer: InfiniBand, rate_gbps: 100}
      delegate_to: "{{ item }}"
      delegate_facts: true
      loop: [gpu-v100-01, gpu-v100-02]

    - name: The cluster stage's record in the controller's ledger
      ansible.builtin.set_fact:
        ansible_facts:
          gpunet_rdma_ledger:
            network_operator:
              detail:
                resources: [{group: ib_v100, hosts: [gpu-v100-01, gpu-v100-02], resource: rdma/rdma_v100,
                             if_names: [ibp94s0f0]}]

    - name: Pods
      ansible.builtin.include_role:
        name: gpunet.rdma.rdma_validate
        tasks_from: pods.yml

    - name: Show the result
      ansible.builtin.debug:
        msg: "RESULT {{ rdma_validate_pod_results | to_json }}"
'''


def client_finishes(log):
    def react(api, group_version, plural, obj):
        if plural == 'pods' and obj['metadata']['name'].endswith('-client') and obj['status']['phase'] == 'Pending':
            api.set_log(obj['metadata']['namespace'], obj['metadata']['name'], log)
            api.add(group_version, plural, dict(obj, status={'phase': 'Succeeded'}))
    return react


def pod_check(api, tmp_path):
    playbook = tmp_path / 'pods.yml'
    playbook.write_text(POD_CHECK)
    return play(api, tmp_path, str(playbook))


def seed_log(name):
    with open(os.path.join(REPO, 'tests', 'unit', 'fixtures', 'recorded', name)) as handle:
        return handle.read()


def test_pod_check_runs_judges_and_cleans_up(cluster, tmp_path):
    cluster.on_change = client_finishes('ulimit -l: unlimited\n' + seed_log('seed003-pod-ib-write-bw-1m.txt'))
    code, output = pod_check(cluster, tmp_path)
    assert code == 0, output
    created = [path for method, path, _d in cluster.requests if method == 'POST']
    assert created == ['/api/v1/namespaces/default/services', '/api/v1/namespaces/default/pods',
                       '/api/v1/namespaces/default/pods']
    posted = [d['body'] for method, _p, d in cluster.requests if method == 'POST']
    client = posted[2]['spec']['containers'][0]
    assert client['resources']['limits'] == {'rdma/rdma_v100': 1}
    assert client['securityContext'] == {'capabilities': {'add': ['IPC_LOCK']}}
    assert ('"line_rate_pct": 93.4' in output and '"memlock": "unlimited"' in output and '"ok": true' in output), output
    deleted = sorted(path for method, path, _d in cluster.requests if method == 'DELETE')
    assert deleted == ['/api/v1/namespaces/default/pods/rdma-validate-ib-v100-client',
                       '/api/v1/namespaces/default/pods/rdma-validate-ib-v100-server',
                       '/api/v1/namespaces/default/services/rdma-validate-ib-v100']


def test_pod_check_explains_a_low_memlock_limit(cluster, tmp_path):
    cluster.on_change = client_finishes('ulimit -l: 64\n' + seed_log('seed003-mr-failure.txt'))
    code, output = pod_check(cluster, tmp_path)
    assert code == 0, output  # recorded; the report (summary.validation_failed) fails the run at its end
    assert '"ok": false' in output and '"memlock": 64' in output
    assert 'ulimit -l is 64 KiB (the kernel default), below 1048576 KiB' in output


# ------------------------------------------------------------------ network_operator: NicNodePolicy per group, guard

NO_GROUPS = {
    'ib_v100': {'hosts': ['gpu-v100-01', 'gpu-v100-02'], 'netdev': 'ibp94s0f0', 'rate': 100},
    'ib_a100': {'hosts': ['gpu-a100-01'], 'netdev': 'ibp141s0', 'rate': 200},
}
NETWORK_OPERATOR = '''
- name: The Network Operator cluster stage without installing the chart, as roles/network_operator/tasks/main.yml runs it
  hosts: localhost
  connection: local
  gather_facts: false
  module_defaults:
    group/gpunet.rdma.k8s:
      kubeconfig: "{{ gpunet_rdma_kubeconfig }}"
    group/kubernetes.core.helm:
      kubeconfig: "{{ gpunet_rdma_kubeconfig }}"
      binary_path: "{{ helm_binary }}"
  vars:
    network_operator_nfd_enabled: true
    network_operator_wait_timeout: 10
  tasks:
    - name: The GPU nodes' facts as discovery leaves them
      ansible.builtin.set_fact:
        ansible_facts: "{{ facts[item] }}"
      delegate_to: "{{ item }}"
      delegate_facts: true
      loop: "{{ facts | list }}"

    - name: The stage and what it recorded
      block:
        - name: The stage, from the groups to the verification (apply.yml without the chart)
          ansible.builtin.include_role:
            name: gpunet.rdma.network_operator
            tasks_from: "{{ step }}"
          loop: [build.yml, nfd.yml, objects.yml, ownership.yml, validate.yml, apply_objects.yml, verify.yml]
          loop_control:
            loop_var: step
      always:
        # printed, not written to a file: a copy task runs two modules on the controller for the test's own record
        - name: Show the result and the controller's ledger entry to the test, also when the stage fails
          ansible.builtin.debug:
            msg: >-
              NETWORK_OPERATOR_RESULT {{ {'result': network_operator_result | default(none),
                                          'ledger': ansible_facts.gpunet_rdma_ledger.network_operator | default(none)}
                                         | to_json | b64encode }}
'''


def inbox_driver():
    return {'kernel': '6.1.0-18-amd64', 'ofed': {'installed': False, 'flavor': None, 'version': None, 'kernels': []},
            'modules': {'mlx5_core': {'installed': True, 'origin': 'inbox', 'loaded': True,
                                      'path': 'kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko'}},
            'packages': {'rdma-core': '44.0-2'}}


def no_facts(host_ofed=()):
    facts = {}
    for group in NO_GROUPS.values():
        for host in group['hosts']:
            driver = inbox_driver()
            if host in host_ofed:  # as rdma_driver_facts reports an MLNX_OFED host (ofed_info -s)
                driver['ofed'] = {'installed': True, 'flavor': 'MLNX_OFED_LINUX', 'version': '23.07-0.5.1.2',
                                  'kernels': [driver['kernel']]}
                driver['modules']['mlx5_core'].update(origin='ofed', path='updates/dkms/mlx5_core.ko')
            facts[host] = {'rdma_driver': driver, 'rdma_ports': [
                {'device': 'mlx5_0', 'port': 1, 'netdev': group['netdev'], 'state': 'ACTIVE',
                 'link_layer': 'InfiniBand', 'rate_gbps': group['rate']}]}
    return facts


def play_network_operator(api, tmp_path, extra=None, host_ofed=()):
    inventory = tmp_path / 'hosts.yml'
    children = {}
    for name, group in NO_GROUPS.items():
        children[name] = {'hosts': dict((h, None) for h in group['hosts']), 'vars': {'gpunet_rdma_fabric': {
            'name': name, 'link_layer': 'InfiniBand', 'line_rate_gbps': group['rate'],
            'rdma_resource': 'rdma/rdma_%s' % name.split('_')[1], 'kubernetes': 'shared_device_plugin'}}}
    inventory.write_text(yaml.safe_dump({'all': {'children': children, 'vars': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}))
    playbook = tmp_path / 'network_operator.yml'
    playbook.write_text(NETWORK_OPERATOR)
    extra_vars = {'gpunet_rdma_kubeconfig': api.kubeconfig(str(tmp_path / 'kubeconfig')), 'facts': no_facts(host_ofed),
                  'helm_binary': os.path.join(REPO, '.build', 'bin', 'helm')}
    extra_vars.update(extra or {})
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'))
    result = subprocess.run(['ansible-playbook', '-i', str(inventory), str(playbook), '-e', json.dumps(extra_vars)],
                            capture_output=True, text=True, env=env, check=False, cwd=str(tmp_path))
    output = ' '.join((result.stdout + result.stderr).split())
    shown = re.findall(r'NETWORK_OPERATOR_RESULT ([A-Za-z0-9+/=]+)', output)
    recorded = json.loads(base64.b64decode(shown[-1])) if shown else {}
    play_network_operator.ledger = recorded.get('ledger')
    return result.returncode, output, recorded.get('result')


def _selects(selector, node):
    labels = node['metadata'].get('labels') or {}
    return all(labels.get(k) == v for k, v in (selector or {}).items())


def network_operator_webhook(api, operation, resource, obj, old):
    """Stand-in for the Network Operator's validating webhook at v26.4.1 (api/v1alpha1/validator/nicpolicy_webhook.go,
    pkg/policyoverlap/overlap.go): name length, section exclusivity, node selector overlap."""
    sections = ('ofedDriver', 'rdmaSharedDevicePlugin', 'sriovDevicePlugin')
    if resource.plural == 'nicnodepolicies':
        name = obj['metadata']['name']
        if len(name) > 30:
            raise kube_apiserver.webhook_denied(
                'vnicnodepolicy.kb.io', 'NicNodePolicy.mellanox.com "%s" is invalid: metadata.name: Invalid value: '
                '"%s": NicNodePolicy name must be at most 50 characters to avoid exceeding DaemonSet name limits'
                % (name, name), 422, 'Invalid')
        for cluster in api.list('mellanox.com/v1alpha1', 'nicclusterpolicies')[:1]:
            conflicts = ['NicClusterPolicy already defines %s; NicNodePolicy "%s" cannot also define it' % (s, name)
                         for s in sections if cluster['spec'].get(s) is not None and obj['spec'].get(s) is not None]
            if conflicts:
                raise kube_apiserver.webhook_denied('vnicnodepolicy.kb.io', '; '.join(conflicts))
        others = [p for p in api.list('mellanox.com/v1alpha1', 'nicnodepolicies') if p['metadata']['name'] != name]
        overlaps = []
        for node in api.list('v1', 'nodes'):
            names = sorted([name] * _selects(obj['spec'].get('nodeSelector'), node) + [
                p['metadata']['name'] for p in others if _selects(p['spec'].get('nodeSelector'), node)])
            if len(names) > 1:
                overlaps.append('node "%s" is selected by policies: [%s]'
                                % (node['metadata']['name'], ', '.join(names)))
        if overlaps:
            raise kube_apiserver.webhook_denied('vnicnodepolicy.kb.io',
                                                'node selector overlap detected: ' + '; '.join(overlaps))
    if resource.plural == 'nicclusterpolicies':
        conflicts = ['NicNodePolicy "%s" already defines %s; NicClusterPolicy cannot also define it'
                     % (p['metadata']['name'], s) for p in api.list('mellanox.com/v1alpha1', 'nicnodepolicies')
                     for s in sections if obj['spec'].get(s) is not None and p['spec'].get(s) is not None]
        if conflicts:
            raise kube_apiserver.webhook_denied('vnicclusterpolicy.kb.io', '; '.join(conflicts))


NETDEV = dict((host, group['netdev']) for group in NO_GROUPS.values() for host in group['hosts'])


def operator_reconciles(api, group_version, plural, obj):
    """Stand-in for the operator: a policy gets its status; the RDMA shared device plugin it deploys (on the nodes a
    NicNodePolicy selects, on every node for the NicClusterPolicy) advertises each resource whose ifNames hold the
    node's netdev."""
    if plural not in ('nicclusterpolicies', 'nicnodepolicies') or obj.get('status'):
        return
    states = [{'name': 'state-OFED', 'state': 'ready' if obj['spec'].get('ofedDriver') else 'ignore'},
              {'name': 'state-RDMA-device-plugin',
               'state': 'ready' if obj['spec'].get('rdmaSharedDevicePlugin') else 'ignore'}]
    api.add(group_version, plural, dict(obj, status={'state': 'ready', 'appliedStates': states}))
    plugin = obj['spec'].get('rdmaSharedDevicePlugin')
    if not plugin:
        return
    for node in api.list('v1', 'nodes'):
        if plural == 'nicnodepolicies' and not _selects(obj['spec']['nodeSelector'], node):
            continue
        for entry in json.loads(plugin['config'])['configList']:
            if NETDEV.get(node['metadata']['name']) in entry['selectors']['ifNames']:
                node['status'].setdefault('allocatable', {})['rdma/' + entry['resourceName']] = '63'
        api.add('v1', 'nodes', node)


@pytest.fixture
def operator_cluster(upstream_crds):
    api = kube_apiserver.FakeApiServer(on_change=operator_reconciles, tls=True).start()
    for name in ('mellanox.com_nicclusterpolicies.yaml', 'mellanox.com_nicnodepolicies.yaml',
                 'mellanox.com_hostdevicenetworks.yaml'):
        with open(os.path.join(upstream_crds, 'network-operator-v26.4.1', name)) as handle:
            api.add('apiextensions.k8s.io/v1', 'customresourcedefinitions', yaml.safe_load(handle))
    api.admission.append(network_operator_webhook)
    for group in NO_GROUPS.values():
        for host in group['hosts']:
            api.add('v1', 'nodes', {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': host, 'labels': {
                'network.nvidia.com/operator.mofed.wait': 'false'}}, 'status': {'allocatable': {}}})
    api.add('apps/v1', 'daemonsets', daemonset('rdma-shared-dp-ds', 3, 3))
    yield api
    api.stop()
    assert api.errors == []


def test_nicnodepolicy_per_group_labelled_applied_and_verified(operator_cluster, tmp_path):
    api = operator_cluster
    # A node that left the V100 group still carries its label: the V100 policy must stop selecting it.
    api.add('v1', 'nodes', {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'gpu-v100-09', 'labels': {
        'gpunet.rdma/group': 'ib_v100', 'team': 'vision'}}, 'status': {'allocatable': {}}})
    code, output, result = play_network_operator(api, tmp_path)
    assert code == 0, output
    assert result['layout'] == 'node'
    # Each group's nodes carry the label their policy selects, so each node got its own group's resource.
    labels = dict((n['metadata']['name'], n['metadata']['labels'].get('gpunet.rdma/group'))
                  for n in api.list('v1', 'nodes'))
    assert labels == {'gpu-a100-01': 'ib_a100', 'gpu-v100-01': 'ib_v100', 'gpu-v100-02': 'ib_v100', 'gpu-v100-09': None}
    assert api.get('v1', 'nodes', 'gpu-v100-09')['metadata']['labels'] == {'team': 'vision'}
    assert sorted((n['node'], n['value']) for n in result['node_labels']) == [
        ('gpu-a100-01', 'ib_a100'), ('gpu-v100-01', 'ib_v100'), ('gpu-v100-02', 'ib_v100'), ('gpu-v100-09', None)]
    assert api.get('v1', 'nodes', 'gpu-a100-01')['status']['allocatable'] == {'rdma/rdma_a100': '63'}
    v100 = api.get('mellanox.com/v1alpha1', 'nicnodepolicies', 'ib-v100')
    assert v100['spec']['nodeSelector'] == {'gpunet.rdma/group': 'ib_v100'}
    assert json.loads(v100['spec']['rdmaSharedDevicePlugin']['config'])['configList'][0]['resourceName'] == 'rdma_v100'
    assert 'rdmaSharedDevicePlugin' not in api.get('mellanox.com/v1alpha1', 'nicclusterpolicies',
                                                   'nic-cluster-policy')['spec']
    assert [(p['kind'], p['name'], p['ok']) for p in result['policies']] == [
        ('NicClusterPolicy', 'nic-cluster-policy', True), ('NicNodePolicy', 'ib-a100', True),
        ('NicNodePolicy', 'ib-v100', True)]
    assert [n['ok'] for n in result['nodes']] == [True, True, True] and result['problems'] == []
    # NicClusterPolicy first, then the NicNodePolicies: server-side apply by gpunet.rdma.
    applied = [path.split('?')[0] for method, path, d in api.requests
               if method == 'PATCH' and d['content_type'] == 'application/apply-patch+yaml']
    assert applied == ['/apis/mellanox.com/v1alpha1/nicclusterpolicies/nic-cluster-policy',
                       '/apis/mellanox.com/v1alpha1/nicnodepolicies/ib-a100',
                       '/apis/mellanox.com/v1alpha1/nicnodepolicies/ib-v100']
    # Again: nothing to label, nothing changes.
    versions = dict((p['metadata']['name'], p['metadata']['resourceVersion'])
                    for p in api.list('mellanox.com/v1alpha1', 'nicnodepolicies'))
    code, output, result = play_network_operator(api, tmp_path)
    assert code == 0, output
    assert result['node_labels'] == [] and 'changed=0' in output
    assert versions == dict((p['metadata']['name'], p['metadata']['resourceVersion'])
                            for p in api.list('mellanox.com/v1alpha1', 'nicnodepolicies'))


def test_verification_names_the_failing_component_and_records_it(operator_cluster, tmp_path):
    api = operator_cluster

    def driver_never_ready(server, group_version, plural, obj):
        operator_reconciles(server, group_version, plural, obj)
        if plural == 'nicnodepolicies' and obj['metadata']['name'] == 'ib-v100':
            stored = server.get(group_version, plural, 'ib-v100')
            stored['status'] = {'state': 'notReady', 'appliedStates': [
                {'name': 'state-OFED', 'state': 'notReady', 'message': 'daemonset not available yet'},
                {'name': 'state-RDMA-device-plugin', 'state': 'ready'}]}
            server.add(group_version, plural, stored)
    api.on_change = driver_never_ready
    code, output, _result = play_network_operator(api, tmp_path, {'network_operator_ofed_driver': {
        'repository': 'nvcr.io/nvidia/mellanox', 'image': 'doca-driver', 'version': '25.01-0.6.0.0-0'},
        'network_operator_wait_timeout': 1, 'network_operator_wait_delay': 1})
    assert code != 0
    assert ('After 1 s: NicNodePolicy ib-v100: state-OFED (spec.ofedDriver): notReady: daemonset not available yet'
            in output), output
    # Recorded in the controller's ledger before the failure: the problem and each policy's state.
    ledger = play_network_operator.ledger
    assert ledger['problems'] == [
        'NicNodePolicy ib-v100: state-OFED (spec.ofedDriver): notReady: daemonset not available yet']
    states = dict((p['name'], (p['state'], p['ok'])) for p in ledger['detail']['policies'])
    assert states == {'nic-cluster-policy': ('ready', True), 'ib-a100': ('ready', True),
                      'ib-v100': ('notReady', False)}


def test_driver_container_refused_over_a_host_ofed(operator_cluster, tmp_path):
    api = operator_cluster
    doca = {'repository': 'nvcr.io/nvidia/mellanox', 'image': 'doca-driver', 'version': '25.01-0.6.0.0-0'}
    code, output, _result = play_network_operator(api, tmp_path, {'network_operator_ofed_driver': doca},
                                                  host_ofed=['gpu-v100-02'])
    assert code != 0
    assert ('Refusing ofedDriver: the Network Operator\'s driver container would replace the driver of nodes that run '
            'their own MLNX_OFED/DOCA-OFED: gpu-v100-02 (group ib_v100: MLNX_OFED 23.07-0.5.1.2 on the host '
            '(ofed_info -s))') in output, output
    assert 'network_operator_ofed_driver_over_host_ofed: true' in output
    ledger = play_network_operator.ledger
    assert ledger['status'] == 'failed' and ledger['problems'][0].startswith('Refusing ofedDriver: ')
    assert ledger['detail']['host_ofed_conflicts'] == [
        {'host': 'gpu-v100-02', 'group': 'ib_v100', 'reason': 'MLNX_OFED 23.07-0.5.1.2 on the host (ofed_info -s)'}]
    # Nothing was written to the cluster.
    assert [m for m, _p, _d in api.requests if m != 'GET'] == []
    assert api.list('mellanox.com/v1alpha1', 'nicnodepolicies') == []
    # A group without the driver container may hold such hosts; or the variable allows it.
    code, output, result = play_network_operator(
        api, tmp_path, {'network_operator_ofed_driver': doca, 'network_operator_ofed_driver_groups': {'ib_v100': None}},
        host_ofed=['gpu-v100-02'])
    assert code == 0, output
    assert 'ofedDriver' in api.get('mellanox.com/v1alpha1', 'nicnodepolicies', 'ib-a100')['spec']
    assert 'ofedDriver' not in api.get('mellanox.com/v1alpha1', 'nicnodepolicies', 'ib-v100')['spec']
    code, output, result = play_network_operator(api, tmp_path, {'network_operator_ofed_driver': doca,
                                                                 'network_operator_ofed_driver_over_host_ofed': True},
                                                 host_ofed=['gpu-v100-02'])
    assert code == 0, output
    assert [c['host'] for c in result['host_ofed_conflicts']] == ['gpu-v100-02']


def test_move_from_one_nicclusterpolicy_to_nicnodepolicies(operator_cluster, tmp_path):
    """An earlier run's NicClusterPolicy holds the device plugin: auto keeps it there; true moves it, the
    NicClusterPolicy giving up the section before the NicNodePolicies take it (the webhook refuses it in both)."""
    api = operator_cluster
    code, output, result = play_network_operator(api, tmp_path, {'network_operator_node_policies': False})
    assert code == 0, output
    assert result['layout'] == 'cluster' and api.list('mellanox.com/v1alpha1', 'nicnodepolicies') == []
    assert 'rdmaSharedDevicePlugin' in api.get('mellanox.com/v1alpha1', 'nicclusterpolicies',
                                               'nic-cluster-policy')['spec']
    code, output, result = play_network_operator(api, tmp_path)
    assert code == 0, output
    assert result['layout'] == 'cluster' and 'already holds rdmaSharedDevicePlugin' in result['layout_reason']
    code, output, result = play_network_operator(api, tmp_path, {'network_operator_node_policies': True})
    assert code == 0, output
    assert result['layout'] == 'node'
    assert 'rdmaSharedDevicePlugin' not in api.get('mellanox.com/v1alpha1', 'nicclusterpolicies',
                                                   'nic-cluster-policy')['spec']
    assert sorted(p['metadata']['name'] for p in api.list('mellanox.com/v1alpha1', 'nicnodepolicies')) == [
        'ib-a100', 'ib-v100']
    # And back: the NicNodePolicies go first, then the NicClusterPolicy takes the section again.
    code, output, result = play_network_operator(api, tmp_path, {'network_operator_node_policies': False})
    assert code == 0, output
    assert api.list('mellanox.com/v1alpha1', 'nicnodepolicies') == []
    assert sorted(result['removed_policies']) == ['ib-a100', 'ib-v100']


RENDER = '''
- name: The Network Operator stage in render mode (GitOps, the lab), with no cluster at all
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: The GPU nodes' facts as discovery leaves them
      ansible.builtin.set_fact:
        ansible_facts: "{{ facts[item] }}"
      delegate_to: "{{ item }}"
      delegate_facts: true
      loop: "{{ facts | list }}"

    - name: The whole role
      ansible.builtin.include_role:
        name: gpunet.rdma.network_operator
'''


def test_render_mode_writes_a_nicnodepolicy_per_group_and_the_node_labels(tmp_path, upstream_crds):
    (tmp_path / 'render.yml').write_text(RENDER)
    manifests = tmp_path / 'manifests'
    inventory = tmp_path / 'hosts.yml'
    children = dict((name, {'hosts': dict((h, None) for h in group['hosts']), 'vars': {'gpunet_rdma_fabric': {
        'name': name, 'link_layer': 'InfiniBand', 'line_rate_gbps': group['rate'],
        'rdma_resource': 'rdma/rdma_%s' % name.split('_')[1], 'kubernetes': 'shared_device_plugin'}}})
        for name, group in NO_GROUPS.items())
    inventory.write_text(yaml.safe_dump({'all': {'children': children, 'vars': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}))
    extra = {'facts': no_facts(), 'network_operator_manifest_dir': str(manifests),
             'network_operator_crd_paths': [os.path.join(upstream_crds, 'network-operator-v26.4.1')]}
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'))
    command = ['ansible-playbook', '-i', str(inventory), str(tmp_path / 'render.yml'), '-e']
    result = subprocess.run(command + [json.dumps(extra)], capture_output=True, text=True, env=env, check=False,
                            cwd=str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(os.listdir(str(manifests))) == [
        'network-operator-values.yaml', 'nicclusterpolicy-nic-cluster-policy.yaml', 'nicnodepolicy-ib-a100.yaml',
        'nicnodepolicy-ib-v100.yaml', 'nicnodepolicy-node-labels.txt']
    v100 = yaml.safe_load((manifests / 'nicnodepolicy-ib-v100.yaml').read_text())
    assert v100['kind'] == 'NicNodePolicy' and v100['spec']['nodeSelector'] == {'gpunet.rdma/group': 'ib_v100'}
    labels = (manifests / 'nicnodepolicy-node-labels.txt').read_text().splitlines()
    assert [line for line in labels if line.startswith('kubectl')] == [
        'kubectl label node gpu-a100-01 gpunet.rdma/group=ib_a100 --overwrite',
        'kubectl label node gpu-v100-01 gpunet.rdma/group=ib_v100 --overwrite',
        'kubectl label node gpu-v100-02 gpunet.rdma/group=ib_v100 --overwrite']
    # The same for v25.1.0: one NicClusterPolicy, no NicNodePolicy, no labels to set.
    extra.update(network_operator_release='v25.1.0', network_operator_manifest_dir=str(tmp_path / 'v25'),
                 network_operator_crd_paths=[os.path.join(upstream_crds, 'network-operator-v25.1.0')])
    result = subprocess.run(command + [json.dumps(extra)], capture_output=True, text=True, env=env, check=False,
                            cwd=str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(os.listdir(str(tmp_path / 'v25'))) == ['network-operator-values.yaml',
                                                         'nicclusterpolicy-nic-cluster-policy.yaml']


def test_tolerations_reach_the_nicnodepolicies(cluster, tmp_path, upstream_crds):
    """From 26.4 the driver DaemonSet of a NicNodePolicy takes the NicNodePolicy's tolerations: the day-2 fix adds
    them there too, each after a server-side dry run, and leaves a policy that has them alone."""
    with open(os.path.join(upstream_crds, 'network-operator-v26.4.1', 'mellanox.com_nicnodepolicies.yaml')) as handle:
        cluster.add('apiextensions.k8s.io/v1', 'customresourcedefinitions', yaml.safe_load(handle))
    for name, tolerations in (('ib-v100', [GPU_TAINT]), ('ib-a100', [GPU_TAINT, UNSCHEDULABLE])):
        cluster.add('mellanox.com/v1alpha1', 'nicnodepolicies', {
            'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'NicNodePolicy', 'metadata': {'name': name},
            'spec': {'nodeSelector': {'gpunet.rdma/group': name.replace('-', '_')}, 'tolerations': tolerations,
                     'ofedDriver': {'image': 'doca-driver', 'repository': 'nvcr.io/nvidia/mellanox',
                                    'version': '25.01-0.6.0.0-0'}}})
    code, output = play(cluster, tmp_path, TOLERATIONS)
    assert code == 0, output
    assert [path for path, _body in patches(cluster)] == [
        '/apis/mellanox.com/v1alpha1/nicclusterpolicies/nic-cluster-policy?dryRun=All',
        '/apis/mellanox.com/v1alpha1/nicclusterpolicies/nic-cluster-policy',
        '/apis/mellanox.com/v1alpha1/nicnodepolicies/ib-v100?dryRun=All',
        '/apis/mellanox.com/v1alpha1/nicnodepolicies/ib-v100']
    assert cluster.get('mellanox.com/v1alpha1', 'nicnodepolicies', 'ib-v100')['spec']['tolerations'] == [
        GPU_TAINT, UNSCHEDULABLE]
    code, output = play(cluster, tmp_path, TOLERATIONS)
    assert code == 0, output
    assert len(patches(cluster)) == 4
