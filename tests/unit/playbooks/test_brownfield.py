# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/site.yml on a cluster an admin already runs, with the collection's defaults: a control-plane host in no
GPU group, a V100 node with a training job's pod on it (simulated hosts: sysfs fixture trees, local connection), a
Network Operator release the admin installed by hand with values of their own (the real helm 3 of make helm, into the
kube-apiserver double), their NicClusterPolicy made with kubectl, and a NicNodePolicy rendered by an earlier run that
Argo CD now keeps.

The default run writes nothing to the cluster and changes no host outside its scope; its report says what it left
alone and why. The adopt variables then take over exactly what they name: the release (its own values kept, ours on
top, same chart version) and the NicClusterPolicy's fields; the Argo CD object and the pod stay as they are.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

import sysfs_fixture

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
HELM = os.path.join(REPO, '.build', 'bin', 'helm')
sys.path.insert(0, os.path.join(REPO, 'tests', 'doubles'))

import kube_apiserver  # noqa: E402  pylint: disable=wrong-import-position

NAMESPACE = 'nvidia-network-operator'
ADMIN_VALUES = {'nfd': {'enabled': False}, 'operator': {'repository': 'registry.corp.example/mellanox'}}
ADMIN_AFFINITY = {'requiredDuringSchedulingIgnoredDuringExecution': {'nodeSelectorTerms': [
    {'matchExpressions': [{'key': 'team', 'operator': 'In', 'values': ['vision']}]}]}}
OUR_AFFINITY = {'requiredDuringSchedulingIgnoredDuringExecution': {'nodeSelectorTerms': [
    {'matchExpressions': [{'key': 'feature.node.kubernetes.io/pci-15b3.present', 'operator': 'In',
                           'values': ['true']}]}]}}
FABRIC = {'name': 'ib_v100', 'generation': 'V100', 'link_layer': 'InfiniBand', 'line_rate_gbps': 100,
          'expected_ports': {'min_active_ports': 2}, 'rdma_resource': 'rdma/rdma_v100',
          'kubernetes': 'shared_device_plugin'}
TRACKING = 'gpu-network:mellanox.com/NicNodePolicy:/ib-h100'


def operator(api, group_version, plural, obj):
    """Stand-in for the Network Operator: a policy gets a ready status; its RDMA shared device plugin advertises each
    configured resource on the GPU node."""
    if plural not in ('nicclusterpolicies', 'nicnodepolicies') or obj.get('status'):
        return
    api.add(group_version, plural, dict(obj, status={'state': 'ready', 'appliedStates': [
        {'name': 'state-RDMA-device-plugin', 'state': 'ready' if obj['spec'].get('rdmaSharedDevicePlugin')
         else 'ignore'}]}))
    plugin = obj['spec'].get('rdmaSharedDevicePlugin')
    if plugin:
        node = api.get('v1', 'nodes', 'gpu-v100')
        for entry in json.loads(plugin['config'])['configList']:
            node['status']['allocatable']['rdma/' + entry['resourceName']] = '63'
        api.add('v1', 'nodes', node)


def helm(env, *args):
    done = subprocess.run([HELM] + list(args), capture_output=True, text=True, check=False, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def brownfield(tmp_path, upstream_crds):
    api = kube_apiserver.FakeApiServer(on_change=operator, tls=True).start()
    crds = os.path.join(upstream_crds, 'network-operator-v26.4.1')
    for name in ('mellanox.com_nicclusterpolicies.yaml', 'mellanox.com_nicnodepolicies.yaml'):
        with open(os.path.join(crds, name)) as handle:
            api.add('apiextensions.k8s.io/v1', 'customresourcedefinitions', yaml.safe_load(handle))
    for name, labels in (('control-plane', {'node-role.kubernetes.io/control-plane': ''}),
                         ('gpu-v100', {'nvidia.com/gpu.present': 'true'})):
        api.add('v1', 'nodes', {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name, 'labels': dict(
            labels, **{'kubernetes.io/hostname': name, 'network.nvidia.com/operator.mofed.wait': 'false'})},
            'status': {'allocatable': {'cpu': '96'}}})
    api.add('v1', 'namespaces', {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': NAMESPACE}})
    api.add('v1', 'pods', {
        'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'llm-pretrain-0', 'namespace': 'training'},
        'spec': {'nodeName': 'gpu-v100', 'containers': [{'name': 'trainer', 'image': 'pytorch'}]},
        'status': {'phase': 'Running'}})
    api.add('apps/v1', 'daemonsets', {
        'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'metadata': {'name': 'rdma-shared-dp-ds', 'namespace': NAMESPACE},
        'spec': {'selector': {'matchLabels': {'app': 'rdma-shared-dp'}}, 'template': {
            'metadata': {'labels': {'app': 'rdma-shared-dp'}}, 'spec': {'containers': [{'name': 'dp', 'image': 'dp'}]}}},
        'status': {'currentNumberScheduled': 1, 'numberMisscheduled': 0, 'desiredNumberScheduled': 1,
                   'numberReady': 1, 'updatedNumberScheduled': 1}})
    # the admin's NicClusterPolicy, made with kubectl apply (client-side: its own field manager)
    api.add('mellanox.com/v1alpha1', 'nicclusterpolicies', {
        'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'NicClusterPolicy', 'metadata': {'name': 'nic-cluster-policy'},
        'spec': {'nodeAffinity': ADMIN_AFFINITY}}, manager='kubectl-client-side-apply')
    # a policy an earlier run rendered (it carries our managed-by label), committed to Git and kept by Argo CD
    api.add('mellanox.com/v1alpha1', 'nicnodepolicies', {
        'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'NicNodePolicy', 'metadata': {
            'name': 'ib-h100', 'labels': {'app.kubernetes.io/managed-by': 'gpunet.rdma'},
            'annotations': {'argocd.argoproj.io/tracking-id': TRACKING}},
        'spec': {'nodeSelector': {'gpunet.rdma/group': 'ib_h100'}}}, manager='argocd-controller')

    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'),
               PATH=os.path.dirname(HELM) + os.pathsep + os.environ['PATH'],
               HELM_CACHE_HOME=str(tmp_path / 'helm' / 'cache'), HELM_CONFIG_HOME=str(tmp_path / 'helm' / 'config'),
               HELM_DATA_HOME=str(tmp_path / 'helm' / 'data'))
    kubeconfig = api.kubeconfig(str(tmp_path / 'kubeconfig'))
    # the release the admin installed by hand, from the chart they pulled (helm pull --untar), with values of their own
    chart = tmp_path / 'network-operator'
    (chart / 'templates').mkdir(parents=True)
    (chart / 'Chart.yaml').write_text('apiVersion: v2\nname: network-operator\nversion: v26.4.1\nappVersion: v26.4.1\n')
    with open(os.path.join(crds, 'chart-values.yaml')) as handle:
        (chart / 'values.yaml').write_text(handle.read())
    (tmp_path / 'admin-values.yaml').write_text(yaml.safe_dump(ADMIN_VALUES))
    helm(env, '--kubeconfig', kubeconfig, 'install', 'network-operator', str(chart), '-n', NAMESPACE,
         '-f', str(tmp_path / 'admin-values.yaml'))

    v100 = tmp_path / 'gpu-v100' / 'sys'
    sysfs_fixture.build(sysfs_fixture.load_profile(os.path.join(REPO, 'lab', 'hardware', 'v100.yml')), str(v100))
    (tmp_path / 'control-plane' / 'sys' / 'class' / 'net').mkdir(parents=True)
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(yaml.safe_dump({'all': {
        'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                 'rdma_discovery_source': 'sysfs', 'rdma_discovery_driver_facts': False,
                 'rdma_discovery_management_path': False, 'rdma_discovery_report_dir': str(tmp_path / 'report'),
                 'gpunet_rdma_kubeconfig': kubeconfig, 'network_operator_chart_ref': str(chart),
                 'network_operator_node_affinity': OUR_AFFINITY, 'network_operator_wait_timeout': 10},
        'hosts': {'control-plane': {'rdma_discovery_sysfs_root': str(tmp_path / 'control-plane' / 'sys')}},
        'children': {'ib_v100': {'vars': {'gpunet_rdma_fabric': FABRIC}, 'hosts': {
            'gpu-v100': {'rdma_discovery_sysfs_root': str(v100)}}}}}}))

    def site(*extra):
        done = subprocess.run(['ansible-playbook', '-i', str(inventory), os.path.join(REPO, 'playbooks', 'site.yml'),
                               '--tags', 'cluster'] + list(extra), env=env, capture_output=True, text=True,
                              check=False, cwd=str(tmp_path), timeout=900)
        output = ' '.join((done.stdout + done.stderr).split())
        assert (tmp_path / 'report' / 'rdma-fleet-report.json').exists(), output[-4000:]
        report = json.loads((tmp_path / 'report' / 'rdma-fleet-report.json').read_text())
        markdown = (tmp_path / 'report' / 'rdma-fleet-report.md').read_text()
        html = (tmp_path / 'report' / 'rdma-fleet-report.html').read_text()
        # the HTML report's table holds the same rows, in the same order
        table = html.split('<table id="left-alone">', 1)[1].split('</table>', 1)[0] if report['cluster'] else ''
        assert re.findall(r'<tr data-object="([^"]+)">', table) == [
            row['object'] for row in (report['cluster'] or {}).get('left_alone', [])]
        (tmp_path / 'report').rename(tmp_path / ('report-%d' % len(list(tmp_path.glob('report*')))))
        return done.returncode, output, report, markdown

    def release():
        [listed] = json.loads(helm(env, '--kubeconfig', kubeconfig, 'list', '-n', NAMESPACE, '-o', 'json'))
        values = json.loads(helm(env, '--kubeconfig', kubeconfig, 'get', 'values', 'network-operator', '-n', NAMESPACE,
                                 '-o', 'json'))
        return int(listed['revision']), listed['chart'], values

    yield api, site, release
    api.stop()
    assert api.errors == []


def left_alone(markdown):
    return markdown.split('\n### Left alone\n', 1)[1].split('\n## ', 1)[0]


def test_the_default_run_leaves_what_others_own_and_the_adopt_variables_take_exactly_that(brownfield):
    api, site, release = brownfield
    pod = api.get('v1', 'pods', 'llm-pretrain-0', 'training')
    admin = len(api.requests)  # the admin's helm install

    code, output, report, markdown = site()
    assert code != 0, output[-3000:]
    assert 'The cluster stage stopped at Stop, naming each refusal and what allows it' in output
    assert ("Set network_operator_force_conflicts: true to take NicClusterPolicy nic-cluster-policy's fields over from "
            "kubectl-client-side-apply.") in output
    # nothing written to the cluster: no request but reads
    assert [r[:2] for r in api.requests[admin:] if r[0] != 'GET'] == []
    assert release() == (1, 'network-operator-v26.4.1', ADMIN_VALUES)
    assert api.get('mellanox.com/v1alpha1', 'nicclusterpolicies', 'nic-cluster-policy')['spec'] == {
        'nodeAffinity': ADMIN_AFFINITY}
    # the report: the control-plane host out of scope, the release and the policy left alone with what allows them
    assert report['out_of_scope'] == [
        {'host': 'control-plane', 'group': 'ungrouped', 'reason': 'in no GPU group (no gpunet_rdma_fabric)'}]
    rows = dict((row['object'], row) for row in report['cluster']['left_alone'])
    assert sorted(rows) == ['NicClusterPolicy nic-cluster-policy', 'helm release']
    assert rows['helm release']['action'] == 'not upgraded'
    assert 'this run would set .nfd.enabled.' in rows['helm release']['reason']
    assert 'network_operator_adopt_release' in rows['helm release']['reason']
    assert rows['NicClusterPolicy nic-cluster-policy']['reason'] == (
        'fields owned by another field manager: conflict with "kubectl-client-side-apply" using '
        'mellanox.com/v1alpha1: .spec.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution')
    section = left_alone(markdown)
    assert '| Network Operator | NicClusterPolicy nic-cluster-policy | not applied | fields owned by another' in section
    assert '| Network Operator | helm release | not upgraded | ' in section
    assert '\n## Out of scope\n' in markdown and '| control-plane | ungrouped |' in markdown

    code, output, report, markdown = site('-e', json.dumps({'network_operator_adopt_release': True,
                                                            'network_operator_force_conflicts': True}))
    assert code == 0, output[-3000:]
    # the release: a new revision of the same chart, the admin's values kept and ours on top
    revision, chart, values = release()
    assert (revision, chart) == (2, 'network-operator-v26.4.1')
    assert values == dict(ADMIN_VALUES, nfd={'enabled': True})
    # the policy's fields taken over, exactly those
    policy = api.get('mellanox.com/v1alpha1', 'nicclusterpolicies', 'nic-cluster-policy')
    assert policy['spec']['nodeAffinity'] == OUR_AFFINITY
    managers = dict((entry['manager'], entry) for entry in policy['metadata']['managedFields'])
    assert 'f:nodeAffinity' in json.dumps(managers['gpunet.rdma']['fieldsV1'])
    # what Argo CD keeps: not deleted, not changed, reported with the reason; the training pod untouched
    kept = api.get('mellanox.com/v1alpha1', 'nicnodepolicies', 'ib-h100')
    assert kept['metadata']['annotations'] == {'argocd.argoproj.io/tracking-id': TRACKING}
    assert kept['spec'] == {'nodeSelector': {'gpunet.rdma/group': 'ib_h100'}}
    [row] = report['cluster']['left_alone']
    assert (row['object'], row['action']) == ('NicNodePolicy ib-h100', 'not deleted (this run no longer builds it)')
    assert row['reason'].startswith('kept by Argo CD (gpu-network, annotation argocd.argoproj.io/tracking-id=')
    assert '| Network Operator | NicNodePolicy ib-h100 | not deleted' in left_alone(markdown)
    assert [path for method, path, _d in api.requests[admin:] if method != 'GET' and '/pods' in path] == []
    assert api.get('v1', 'pods', 'llm-pretrain-0', 'training') == pod
