# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the kube-apiserver double holds after converge, idempotence and check, read through its REST API.

Every count covers the three runs: a second patch, or a dry run that was stored, shows up here.
"""

from __future__ import annotations

import json
import os

import kubernetes
import pytest

STATE = os.path.join(os.environ['MOLECULE_EPHEMERAL_DIRECTORY'], 'kube-apiserver')
POLICY_PATH = '/apis/mellanox.com/v1alpha1/nicclusterpolicies/nic-cluster-policy'
GPU_TAINT = {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}
UNSCHEDULABLE = {'key': 'node.kubernetes.io/unschedulable', 'operator': 'Exists', 'effect': 'NoSchedule'}


@pytest.fixture(scope='module')
def client():
    return kubernetes.config.new_client_from_config(os.path.join(STATE, 'kubeconfig'))


def policy(client):
    return kubernetes.client.CustomObjectsApi(client).get_cluster_custom_object(
        'mellanox.com', 'v1alpha1', 'nicclusterpolicies', 'nic-cluster-policy')


def audit():
    with open(os.path.join(STATE, 'audit.jsonl')) as handle:
        return [json.loads(line) for line in handle]


def test_the_wanted_toleration_is_added_after_the_existing_one(client):
    assert policy(client)['spec']['tolerations'] == [GPU_TAINT, UNSCHEDULABLE]


def test_the_rest_of_the_policy_is_kept(client):
    plugin = policy(client)['spec']['rdmaSharedDevicePlugin']
    assert (plugin['image'], plugin['version']) == ('k8s-rdma-shared-dev-plugin', 'v1.5.2')
    assert json.loads(plugin['config'])['configList'][0]['resourceName'] == 'rdma_v100'


def test_one_change_in_three_runs(client):
    # generation 1 at creation; a dry run or a second patch would have raised it further
    assert policy(client)['metadata']['generation'] == 2


def test_the_merge_patch_was_dry_run_first_then_sent_once():
    patches = [e for e in audit() if e['verb'] == 'patch']
    assert [e['requestURI'] for e in patches] == [POLICY_PATH + '?dryRun=All', POLICY_PATH]
    for event in patches:
        assert event['requestObject']['spec']['tolerations'] == [GPU_TAINT, UNSCHEDULABLE]
    # the only writes of the three runs
    assert [e['verb'] for e in audit() if e['verb'] not in ('get', 'list')] == ['patch', 'patch']


def test_every_node_of_the_group_is_back_with_its_resource(client):
    nodes = kubernetes.client.CoreV1Api(client).list_node().items
    assert sorted(n.metadata.name for n in nodes) == ['tol-gpu-v100-01', 'tol-gpu-v100-02']
    for node in nodes:
        assert node.metadata.labels['network.nvidia.com/operator.mofed.wait'] == 'false', node.metadata.name
        assert node.status.allocatable['rdma/rdma_v100'] == '63', node.metadata.name
