# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the kube-apiserver double holds after converge, idempotence and check, read through its REST API.

The expected ifNames come from the nodes' sysfs fixture trees (ACTIVE InfiniBand ports and their netdevs); every
count covers the three runs.
"""

from __future__ import annotations

import base64
import gzip
import json
import os

import kubernetes
import pytest

EPHEMERAL = os.environ['MOLECULE_EPHEMERAL_DIRECTORY']
STATE = os.path.join(EPHEMERAL, 'kube-apiserver')
NODES = ['no-v100-01', 'no-v100-02']
POLICIES = ('nicclusterpolicies', 'nicnodepolicies')


@pytest.fixture(scope='module')
def client():
    return kubernetes.config.new_client_from_config(os.path.join(STATE, 'kubeconfig'))


def active_infiniband_netdevs(node):
    root = os.path.join(EPHEMERAL, 'nodes', node, 'sys', 'class', 'infiniband')
    netdevs = []
    for device in sorted(os.listdir(root)):
        for port in sorted(os.listdir(os.path.join(root, device, 'ports'))):
            with open(os.path.join(root, device, 'ports', port, 'state')) as handle:
                state = handle.read().split(': ')[-1].strip()
            with open(os.path.join(root, device, 'ports', port, 'link_layer')) as handle:
                link_layer = handle.read().strip()
            if (state, link_layer) == ('ACTIVE', 'InfiniBand'):
                netdevs += sorted(os.listdir(os.path.join(root, device, 'device', 'net')))
    return netdevs


def policies(client):
    api = kubernetes.client.CustomObjectsApi(client)
    return [item for plural in POLICIES
            for item in api.list_cluster_custom_object('mellanox.com', 'v1alpha1', plural)['items']]


def audit():
    with open(os.path.join(STATE, 'audit.jsonl')) as handle:
        return [json.loads(line) for line in handle]


def release(client, revision):
    secret = kubernetes.client.CoreV1Api(client).read_namespaced_secret(
        'sh.helm.release.v1.network-operator.v%d' % revision, 'nvidia-network-operator')
    # helm's storage: base64 of the gzipped JSON release, inside the Secret's own base64
    return json.loads(gzip.decompress(base64.b64decode(base64.b64decode(secret.data['release']))))


def test_the_fixture_has_the_ports_the_test_expects():
    assert active_infiniband_netdevs('no-v100-01') == active_infiniband_netdevs('no-v100-02') == [
        'ibp94s0f0', 'ibp94s0f1']


def test_the_chart_was_installed_once_without_a_second_node_feature_discovery(client):
    first = release(client, 1)
    assert (first['chart']['metadata']['name'], first['chart']['metadata']['version']) == ('network-operator', '26.4.1')
    assert first['info']['status'] == 'deployed'
    # the GPU Operator's node-feature-discovery runs in gpu-operator: the chart must not bring another
    assert first['config']['nfd'] == {'enabled': False}
    with pytest.raises(kubernetes.client.ApiException) as missing:
        release(client, 2)  # idempotence and check upgraded nothing
    assert missing.value.status == 404


def test_the_group_resource_is_configured_once_from_the_discovered_ports(client):
    configured = []
    for policy in policies(client):
        plugin = policy['spec'].get('rdmaSharedDevicePlugin')
        if plugin:
            assert (plugin['repository'], plugin['image'], plugin['version']) == (
                'ghcr.io/mellanox', 'k8s-rdma-shared-dev-plugin', 'v1.5.2')
            configured += [(policy['kind'], policy['spec'].get('nodeSelector'), entry)
                           for entry in json.loads(plugin['config'])['configList']]
    assert len(configured) == 1
    kind, selector, entry = configured[0]
    assert (entry['resourceName'], entry['rdmaHcaMax']) == ('rdma_v100', 63)
    assert entry['selectors']['ifNames'] == active_infiniband_netdevs('no-v100-01')
    assert entry['selectors'].get('linkTypes', ['infiniband']) == ['infiniband']
    if kind == 'NicNodePolicy':  # it selects exactly the group's nodes
        nodes = kubernetes.client.CoreV1Api(client).list_node().items
        selected = [n.metadata.name for n in nodes
                    if all((n.metadata.labels or {}).get(k) == v for k, v in selector.items())]
        assert sorted(selected) == NODES


def test_the_operator_reports_every_policy_ready(client):
    found = policies(client)
    assert found
    for policy in found:
        assert policy['status']['state'] == 'ready', policy['metadata']['name']
        assert policy['metadata']['generation'] == 1, policy['metadata']['name']  # applied once, never changed


def test_every_node_reports_the_resource_and_lost_the_stale_one(client):
    for node in kubernetes.client.CoreV1Api(client).list_node().items:
        assert node.metadata.name in NODES
        assert node.metadata.labels['network.nvidia.com/operator.mofed.wait'] == 'false'
        assert node.status.allocatable['rdma/rdma_v100'] == '63'
        assert 'nvidia.com/hostdev' not in node.status.allocatable
        assert 'nvidia.com/hostdev' not in node.status.capacity


def test_policies_applied_server_side_after_validation_against_the_installed_crds():
    events = audit()
    helm_release = [i for i, e in enumerate(events) if e['verb'] == 'create' and
                    (e.get('objectRef') or {}).get('resource') == 'secrets']
    crd_reads = [i for i, e in enumerate(events) if e['verb'] == 'list' and
                 (e.get('objectRef') or {}).get('resource') == 'customresourcedefinitions']
    applies = [(i, e) for i, e in enumerate(events) if e['verb'] == 'patch' and
               (e.get('objectRef') or {}).get('resource') in POLICIES]
    assert len(helm_release) == 1
    assert applies and all('fieldManager=gpunet.rdma' in e['requestURI'] for _i, e in applies)
    # the first apply comes after helm installed the CRDs and the role read them back to validate against
    assert helm_release[0] < min(i for i in crd_reads if i > helm_release[0]) < applies[0][0]
    # converge and idempotence applied (the second a no-op), check sent dry runs only
    stored = [e for _i, e in applies if 'dryRun=All' not in e['requestURI']]
    assert len(stored) == 2 * len(policies(kubernetes.config.new_client_from_config(
        os.path.join(STATE, 'kubeconfig'))))


def test_nodes_labelled_and_stale_resource_removed_once():
    events = audit()
    node_patches = [e['requestURI'] for e in events if e['verb'] == 'patch' and
                    (e.get('objectRef') or {}).get('resource') == 'nodes' and 'dryRun=All' not in e['requestURI']]
    assert sorted(node_patches) == sorted(['/api/v1/nodes/no-v100-01', '/api/v1/nodes/no-v100-02',
                                           '/api/v1/nodes/no-v100-01/status'])
