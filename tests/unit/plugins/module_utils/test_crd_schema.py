# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation against CRD schemas: a small inline CRD, and the upstream CRDs when GPUNET_CRDS_DIR is set."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils._crd_schema import (
    crd_index,
    unknown_fields,
    validate_object,
)


WIDGET = {
    'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
    'spec': {'group': 'example.com', 'names': {'kind': 'Widget'}, 'versions': [{'name': 'v1', 'served': True, 'schema': {
        'openAPIV3Schema': {'type': 'object', 'properties': {
            'apiVersion': {'type': 'string'}, 'kind': {'type': 'string'}, 'metadata': {'type': 'object'},
            'spec': {'type': 'object', 'required': ['size'], 'properties': {
                'size': {'x-kubernetes-int-or-string': True},
                'labels': {'type': 'object', 'additionalProperties': {'type': 'string'}},
                'free': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True},
                'items': {'type': 'array', 'items': {'type': 'object', 'properties': {'name': {'type': 'string'}}}},
                'note': {'type': 'string', 'nullable': True},
            }}}}}}]}}
INDEX = crd_index([WIDGET, {'kind': 'ConfigMap'}])


def widget(**spec):
    return {'apiVersion': 'example.com/v1', 'kind': 'Widget', 'metadata': {'name': 'w'}, 'spec': spec}


def test_valid_object_with_maps_preserved_fields_and_int_or_string():
    obj = widget(size='10%', labels={'a': 'b'}, free={'anything': {'goes': 1}}, items=[{'name': 'x'}], note=None)
    assert validate_object(obj, INDEX) == []
    assert validate_object(widget(size=3), INDEX) == []


def test_unknown_fields_are_reported_with_their_path():
    obj = widget(size=1, sizes=2, items=[{'name': 'x', 'nmae': 'typo'}])
    assert unknown_fields(obj, INDEX[('example.com/v1', 'Widget')]) == ['spec.sizes', 'spec.items[0].nmae']
    problems = validate_object(obj, INDEX, 'example v1')
    assert 'spec.sizes: field not declared by the Widget CRD of example v1 (the API server would prune it)' in problems


def test_schema_errors():
    problems = validate_object(widget(labels={'a': 1}), INDEX)
    assert "spec: 'size' is a required property" in problems
    assert 'spec.labels.a: 1 is not of type \'string\'' in problems


def test_unknown_kind():
    assert validate_object({'apiVersion': 'example.com/v2', 'kind': 'Widget'}, INDEX)[0].startswith(
        'no CRD for example.com/v2 Widget (known: example.com/v1 Widget)')


def _policy(spec):
    return {'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'NicClusterPolicy', 'metadata': {'name': 'nic-cluster-policy'},
            'spec': spec}


PLUGIN = {'image': 'k8s-rdma-shared-dev-plugin', 'repository': 'ghcr.io/mellanox', 'version': 'v1.5.2',
          'config': json.dumps({'configList': [{'resourceName': 'rdma_v100', 'rdmaHcaMax': 63,
                                                'selectors': {'ifNames': ['ibp94s0f0']}}]})}


@pytest.mark.parametrize('release', ['network-operator-v25.1.0', 'network-operator-v26.4.1'])
def test_upstream_nicclusterpolicy(release, crd_release):
    index = crd_release(release)
    tolerations = [{'key': 'node.kubernetes.io/unschedulable', 'operator': 'Exists', 'effect': 'NoSchedule'}]
    assert validate_object(_policy({'rdmaSharedDevicePlugin': PLUGIN, 'tolerations': tolerations}), index, release) == []
    problems = validate_object(_policy({'rdmaSharedDevicePlugin': dict(PLUGIN, rdmaHcaMax=63)}), index, release)
    assert problems == ['spec.rdmaSharedDevicePlugin.rdmaHcaMax: field not declared by the NicClusterPolicy CRD of '
                        '%s (the API server would prune it)' % release]


def test_upstream_release_differences(crd_release):
    policy = _policy({'rdmaSharedDevicePlugin': PLUGIN, 'deploymentTolerations': []})
    assert validate_object(policy, crd_release('network-operator-v26.4.1')) == []
    assert validate_object(policy, crd_release('network-operator-v25.1.0')) == [
        'spec.deploymentTolerations: field not declared by the NicClusterPolicy CRD (the API server would prune it)']
