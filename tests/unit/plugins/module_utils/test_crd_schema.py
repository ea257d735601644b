# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation against CRD schemas: a small inline CRD, malformed CRDs and objects, any data, and the upstream CRDs."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._crd_schema import (
    CrdError,
    crd_index,
    schema_findings,
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


# ------------------------------------------------------------------ malformed CRDs: CrdError naming the part

def _broken(**changes):
    document = copy.deepcopy(WIDGET)
    document['metadata'] = {'name': 'widgets.example.com'}
    for path, value in changes.items():
        node = document
        parts = path.split('__')
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node[part]
        node[parts[-1]] = value
    return document


@pytest.mark.parametrize('changes, message', [
    ({'spec': ['not', 'a', 'mapping']}, 'spec is an array, not an object'),
    ({'spec__group': None}, 'spec.group is missing'),
    ({'spec__names': 'Widget'}, 'spec.names is a string, not an object'),
    ({'spec__versions': {'name': 'v1'}}, 'spec.versions is an object, not an array'),
    ({'spec__versions': ['v1']}, 'spec.versions[0] is a string, not an object'),
    ({'spec__versions__0__schema': None}, 'spec.versions[0].schema is missing'),
    ({'spec__versions__0__schema__openAPIV3Schema': []}, 'spec.versions[0].schema.openAPIV3Schema is an array, not '
                                                         'an object'),
    ({'spec__versions__0__served': 'yes'}, 'spec.versions[0].served is a string, not a boolean'),
    ({'spec__scope': 'Galaxy'}, "spec.scope is 'Galaxy'; it is Namespaced or Cluster"),
    ({'spec__versions__0__schema__openAPIV3Schema__properties': ['spec']},
     'openAPIV3Schema.properties is not a valid schema'),
    ({'spec__versions__0__schema__openAPIV3Schema__type': 5}, 'openAPIV3Schema.type is not a valid schema'),
])
def test_malformed_crds_are_named(changes, message):
    with pytest.raises(CrdError) as info:
        crd_index([_broken(**changes)], 'crds/widget.yaml')
    assert str(info.value).startswith('CustomResourceDefinition widgets.example.com (document 1 of crds/widget.yaml): ')
    assert message in str(info.value), str(info.value)


def test_other_documents_are_skipped():
    assert crd_index([None, 'text', 3, ['list'], {'kind': 'ConfigMap'}, {'kind': ['CustomResourceDefinition']}]) == {}


def test_objects_of_every_wrong_shape_give_problems():
    assert validate_object(['a'], INDEX)[0].startswith('not a mapping but an array: a Kubernetes object is a mapping')
    assert validate_object({'kind': 'Widget'}, INDEX) == ['apiVersion: missing; every Kubernetes object has one']
    assert validate_object({'apiVersion': 5, 'kind': ['Widget']}, INDEX) == [
        'apiVersion: an integer, not a string', 'kind: an array, not a string']
    assert validate_object(dict(widget(size=1), metadata='w'), INDEX)[0] == (
        'metadata: a string, not a mapping; every Kubernetes object has a metadata mapping with its name')
    assert "spec.labels: ['a'] is not of type 'object'" in validate_object(widget(size=1, labels=['a']), INDEX)
    assert validate_object(dict(widget(size=1), metadata={'name': 'w', 'nmae': 'x'}), INDEX) == [
        'metadata.nmae: field not declared by the Widget CRD (the API server would prune it)']


def test_findings_are_worded_as_the_api_server_does():
    findings = schema_findings(widget(labels={'a': 1}, items=[{'name': 2}]), INDEX[('example.com/v1', 'Widget')])
    assert [(f['field'], f['reason'], f['message']) for f in findings] == [
        ('spec.size', 'FieldValueRequired', 'Required value'),
        ('spec.items[0].name', 'FieldValueTypeInvalid',
         'Invalid value: "integer": spec.items[0].name in body must be of type string: "integer"'),
        ('spec.labels.a', 'FieldValueTypeInvalid',
         'Invalid value: "integer": spec.labels.a in body must be of type string: "integer"')]


# ------------------------------------------------------------------ any JSON-like data: a result or CrdError

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(['apiVersion', 'kind', 'metadata', 'spec', 'name', 'size', 'labels', 'free', 'items',
                         'properties', 'type', 'items', 'additionalProperties', 'required', 'default', 'x']) |
        st.text(max_size=6), children, max_size=5),
    max_leaves=30)


@settings(deadline=None)
@given(value=JSON)
def test_walks_take_any_object(value):
    schema = INDEX[('example.com/v1', 'Widget')]
    found = unknown_fields(value, schema)
    assert isinstance(found, list) and all(isinstance(item, str) for item in found)
    problems = validate_object(value, INDEX)
    assert isinstance(problems, list) and all(isinstance(item, str) for item in problems)


# Structural schemas of any nesting over the keys JSON uses, so that the walk finds fields the schema does not declare
# (JSON alone is seldom a schema that declares anything).
KEYS = st.sampled_from(['apiVersion', 'kind', 'metadata', 'spec', 'name', 'size', 'labels', 'free', 'items', 'x'])
SCHEMA_FLAGS = {'type': st.sampled_from(['object', 'array', 'string', 'integer']), 'default': JSON,
                'nullable': st.booleans(), 'x-kubernetes-preserve-unknown-fields': st.booleans()}
SCHEMA = st.recursive(
    st.fixed_dictionaries({}, optional=SCHEMA_FLAGS),
    lambda children: st.fixed_dictionaries({}, optional=dict(
        SCHEMA_FLAGS, properties=st.dictionaries(KEYS, children, max_size=4), items=children,
        additionalProperties=children | st.booleans(), **{'x-kubernetes-embedded-resource': st.booleans()})),
    max_leaves=12)


def _outcome(function, *args):
    """``('ok', result)`` or ``('CrdError', message)``: any other exception fails the test."""
    try:
        return 'ok', function(*args)
    except CrdError as exc:
        assert str(exc)
        return 'CrdError', str(exc)


@settings(deadline=None)
@given(value=st.dictionaries(KEYS, JSON, max_size=5) | JSON, schema=SCHEMA | JSON)
def test_walks_take_any_schema(value, schema):
    """Over any schema: the unknown fields are paths or a CrdError, the same on a second call, and the input is
    left alone."""
    before = copy.deepcopy(value)
    found = _outcome(unknown_fields, value, schema)
    if found[0] == 'ok':
        assert all(isinstance(path, str) for path in found[1])
    assert _outcome(unknown_fields, value, schema) == found
    assert value == before


@settings(deadline=None)
@given(documents=st.lists(JSON | st.builds(_broken, spec__versions=JSON) | st.builds(_broken, spec=JSON), max_size=3))
def test_crd_index_takes_any_document(documents):
    try:
        index = crd_index(documents, 'generated')
    except CrdError as exc:
        assert str(exc).startswith('CustomResourceDefinition')
        return
    assert all(isinstance(key, tuple) and isinstance(schema, dict) for key, schema in index.items())
