# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The kube-apiserver test double itself, through the real kubernetes client and kubernetes.core's client.

The double must be at least as strict as kube-apiserver for what the roles and modules use: these tests pin the
answers (codes, Status bodies, what is stored) that the real server gives to the same requests.
"""

from __future__ import annotations

import ast
import copy
import json
import os
import re
import runpy
import subprocess
import sys

import kubernetes
import pytest
import urllib3
import yaml
from kubernetes.client.rest import ApiException

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(REPO, 'tests', 'doubles'))

import kube_apiserver  # noqa: E402  pylint: disable=wrong-import-position

GROUP, VERSION, PLURAL = 'mellanox.com', 'v1alpha1', 'nicclusterpolicies'


@pytest.fixture
def api(upstream_crds):
    server = kube_apiserver.FakeApiServer().start()
    with open(os.path.join(upstream_crds, 'network-operator-v26.4.1', 'mellanox.com_nicclusterpolicies.yaml')) as f:
        server.add('apiextensions.k8s.io/v1', 'customresourcedefinitions', yaml.safe_load(f))
    yield server
    server.stop()
    assert server.errors == []  # no request made the double itself fail


def client(api, token=kube_apiserver.DEFAULT_TOKEN):
    configuration = kubernetes.client.Configuration()
    configuration.host = api.url
    configuration.api_key = {'authorization': 'Bearer ' + token}
    return kubernetes.client.ApiClient(configuration)


def core(api):
    return kubernetes.client.CoreV1Api(client(api))


def apps(api):
    return kubernetes.client.AppsV1Api(client(api))


def custom(api):
    return kubernetes.client.CustomObjectsApi(client(api))


def raw(api, method, path, body=None, content_type='application/json', token=kube_apiserver.DEFAULT_TOKEN,
        user_agent=None):
    """``(code, headers, decoded body)`` of one plain HTTP request."""
    headers = {'Authorization': 'Bearer ' + token, 'Content-Type': content_type}
    if user_agent:
        headers['User-Agent'] = user_agent
    data = body if isinstance(body, (str, bytes)) or body is None else json.dumps(body)
    response = urllib3.PoolManager().request(method, api.url + path, body=data, headers=headers, retries=False)
    try:
        decoded = json.loads(response.data)
    except ValueError:
        decoded = response.data.decode()
    return response.status, response.headers, decoded


def error(call, *args, **kwargs):
    with pytest.raises(ApiException) as info:
        call(*args, **kwargs)
    return info.value.status, json.loads(info.value.body)


def pod(name, node='', phase=None, labels=None, namespace='default'):
    obj = {'apiVersion': 'v1', 'kind': 'Pod',
           'metadata': {'name': name, 'namespace': namespace, 'labels': labels or {}},
           'spec': {'containers': [{'name': 'main', 'image': 'busybox'}]}}
    if node:
        obj['spec']['nodeName'] = node
    if phase:
        obj['status'] = {'phase': phase}
    return obj


def policy(**spec):
    return {'apiVersion': '%s/%s' % (GROUP, VERSION), 'kind': 'NicClusterPolicy',
            'metadata': {'name': 'nic-cluster-policy'}, 'spec': spec}


def deployment(name='web'):
    return {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': {'name': name, 'namespace': 'default'},
            'spec': {'selector': {'matchLabels': {'app': name}}, 'template': {
                'metadata': {'labels': {'app': name}},
                'spec': {'containers': [
                    {'name': 'app', 'image': 'app:1',
                     'env': [{'name': 'A', 'value': '1'}, {'name': 'B', 'value': '2'}]},
                    {'name': 'sidecar', 'image': 'sidecar:1'}],
                    'tolerations': [{'key': 'a', 'operator': 'Exists'}]}}}}


# ------------------------------------------------------------------ discovery and URL shapes

def test_discovery_follows_the_installed_crds(api):
    dynamic = kubernetes.dynamic.DynamicClient(client(api))
    pods = dynamic.resources.get(api_version='v1', kind='Pod')
    assert pods.namespaced and 'log' in pods.subresources and 'status' in pods.subresources
    assert dynamic.resources.get(api_version='mellanox.com/v1alpha1', kind='NicClusterPolicy').namespaced is False
    code, _h, body = raw(api, 'GET', '/apis/spiderpool.spidernet.io/v2beta1')
    assert code == 404 and body['reason'] == 'NotFound'  # no CRD installed, no group


def test_namespaced_objects_live_in_their_namespace(api):
    v1 = core(api)
    v1.create_namespaced_pod('default', pod('p'))
    assert v1.read_namespaced_pod('p', 'default').metadata.namespace == 'default'
    code, body = error(v1.read_namespaced_pod, 'p', 'kube-system')
    assert code == 404 and body == {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure',
                                    'message': 'pods "p" not found', 'reason': 'NotFound',
                                    'details': {'name': 'p', 'kind': 'pods'}, 'code': 404}
    v1.create_namespaced_pod('kube-system', pod('p', namespace='kube-system'))  # same name, other namespace
    assert sorted(p.metadata.namespace for p in v1.list_pod_for_all_namespaces().items) == ['default', 'kube-system']
    assert [p.metadata.namespace for p in v1.list_namespaced_pod('kube-system').items] == ['kube-system']


def test_create_needs_the_namespace_and_a_matching_one(api):
    v1 = core(api)
    code, body = error(v1.create_namespaced_pod, 'nope', pod('p', namespace='nope'))
    assert code == 404 and body['message'] == 'namespaces "nope" not found'
    code, body = error(v1.create_namespaced_pod, 'default', pod('p', namespace='kube-system'))
    assert code == 400 and body['message'] == ('the namespace of the provided object does not match the namespace '
                                               'sent on the request')


@pytest.mark.parametrize('path', ['/api/v1/pods/p', '/api/v1/namespaces/default/nodes/n',
                                  '/api/v1/namespaces/default/pods/p/exec/x', '/api/v1/nodes/n/log', '/healthz/x'])
def test_wrong_url_shapes_are_404(api, path):
    core(api).create_namespaced_pod('default', pod('p'))
    code, _h, body = raw(api, 'GET', path)
    assert code == 404 and body['reason'] == 'NotFound'


def test_already_exists_and_invalid_names(api):
    v1 = core(api)
    v1.create_namespaced_pod('default', pod('p'))
    code, body = error(v1.create_namespaced_pod, 'default', pod('p'))
    assert code == 409 and body['reason'] == 'AlreadyExists' and body['message'] == 'pods "p" already exists'
    code, body = error(v1.create_namespaced_pod, 'default', pod('Bad_Name'))
    assert code == 422 and body['details']['causes'][0]['field'] == 'metadata.name'
    assert body['message'].startswith('Pod "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a '
                                      'lowercase RFC 1123 subdomain')


# ------------------------------------------------------------------ selectors

@pytest.fixture
def labelled(api):
    v1 = core(api)
    v1.create_namespaced_pod('default', pod('a', node='n1', labels={'app': 'rdma', 'tier': '1'}))
    v1.create_namespaced_pod('default', pod('b', node='n2', labels={'app': 'rdma', 'tier': '2'}))
    v1.create_namespaced_pod('default', pod('c', node='n1', labels={'app': 'web'}))
    api.add('v1', 'pods', pod('d', node='n2', phase='Succeeded', labels={'app': 'web', 'tier': '3'},
                              namespace='kube-system'))
    return v1


@pytest.mark.parametrize('selector, names', [
    ('app=rdma', ['a', 'b']), ('app==rdma', ['a', 'b']), ('app!=rdma', ['c', 'd']),
    ('tier in (1, 3)', ['a', 'd']), ('tier notin (1)', ['b', 'c', 'd']), ('tier', ['a', 'b', 'd']), ('!tier', ['c']),
    ('app=web,tier', ['d']), ('tier>1', ['b', 'd']), ('tier<2', ['a']), ('', ['a', 'b', 'c', 'd']),
])
def test_label_selectors(labelled, selector, names):
    listed = labelled.list_pod_for_all_namespaces(label_selector=selector).items
    assert sorted(p.metadata.name for p in listed) == names


@pytest.mark.parametrize('selector, names', [
    ('spec.nodeName=n1', ['a', 'c']), ('spec.nodeName!=n1', ['b', 'd']), ('status.phase=Succeeded', ['d']),
    ('status.phase=Pending', ['a', 'b', 'c']), ('metadata.namespace=kube-system', ['d']),
    ('metadata.name=b,spec.nodeName=n2', ['b']),
])
def test_field_selectors(labelled, selector, names):
    listed = labelled.list_pod_for_all_namespaces(field_selector=selector).items
    assert sorted(p.metadata.name for p in listed) == names


@pytest.mark.parametrize('kwargs, message', [
    ({'field_selector': 'spec.foo=bar'}, 'field label not supported: spec.foo'),
    ({'field_selector': 'spec.nodeName'}, "invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'"),
    ({'label_selector': 'app in ()'}, "for 'in', 'notin' operators, values set can't be empty"),
    ({'label_selector': 'app=a b'}, 'unable to parse requirement'),
    ({'label_selector': 'tier>x'}, "for 'Gt', 'Lt' operators, the value must be an integer"),
])
def test_bad_selectors_are_400(labelled, kwargs, message):
    code, body = error(labelled.list_pod_for_all_namespaces, **kwargs)
    assert code == 400 and body['reason'] == 'BadRequest' and message in body['message']


def test_node_field_selector_and_unsupported_on_nodes(api):
    api.add('v1', 'nodes', {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'n1'},
                            'spec': {'unschedulable': True}})
    api.add('v1', 'nodes', {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'n2'}})
    v1 = core(api)
    assert [n.metadata.name for n in v1.list_node(field_selector='spec.unschedulable=true').items] == ['n1']
    assert [n.metadata.name for n in v1.list_node(field_selector='spec.unschedulable!=true').items] == ['n2']
    assert error(v1.list_node, field_selector='status.phase=Running')[1]['message'] == (
        'field label not supported: status.phase')


# ------------------------------------------------------------------ dry runs and validation

def test_dry_run_validates_but_stores_nothing(api):
    v1 = core(api)
    created = v1.create_namespaced_pod('default', pod('p'), dry_run='All')
    assert created.metadata.name == 'p' and created.metadata.uid
    assert api.get('v1', 'pods', 'p', 'default') is None
    code, body = error(v1.create_namespaced_pod, 'default', pod('Bad_Name'), dry_run='All')
    assert code == 422
    v1.create_namespaced_pod('default', pod('p'))
    v1.patch_namespaced_pod('p', 'default', {'metadata': {'labels': {'x': 'y'}}}, dry_run='All')
    v1.delete_namespaced_pod('p', 'default', dry_run='All')
    stored = api.get('v1', 'pods', 'p', 'default')
    assert stored is not None and stored['metadata']['labels'] == {}
    code, _h, body = raw(api, 'DELETE', '/api/v1/namespaces/default/pods/p?dryRun=Some')
    assert code == 400 and 'dry run' in body['message']


def test_custom_resources_are_validated_against_the_crd(api):
    objects = custom(api)
    code, body = error(objects.create_cluster_custom_object, GROUP, VERSION, PLURAL,
                       policy(ofedDriver={'image': 7}, nicConfigurationOperator={
                           'operator': {'image': 'op'}, 'configurationDaemon': {'image': 'd'}, 'logLevel': 'trace'}))
    assert code == 422 and body['reason'] == 'Invalid'
    assert body['details']['causes'] == [
        {'reason': 'FieldValueNotSupported', 'field': 'spec.nicConfigurationOperator.logLevel',
         'message': 'Unsupported value: "trace": supported values: "info", "debug"'},
        {'reason': 'FieldValueTypeInvalid', 'field': 'spec.ofedDriver.image',
         'message': 'Invalid value: "integer": spec.ofedDriver.image in body must be of type string: "integer"'}]
    assert body['message'].startswith('NicClusterPolicy.mellanox.com "nic-cluster-policy" is invalid: [')
    assert body['details']['group'] == GROUP and body['details']['kind'] == 'NicClusterPolicy'


def test_field_validation_strict_warn_ignore(api):
    body = policy(rdmaSharedDevicePlugin={'image': 'plugin', 'rdmaHcaMax': 63})
    code, _h, answer = raw(api, 'POST', '/apis/%s/%s/%s?fieldValidation=Strict' % (GROUP, VERSION, PLURAL), body)
    assert code == 400 and answer['message'] == (
        'NicClusterPolicy in version "v1alpha1" cannot be handled as a NicClusterPolicy: strict decoding error: '
        'unknown field "spec.rdmaSharedDevicePlugin.rdmaHcaMax"')
    code, headers, answer = raw(api, 'POST', '/apis/%s/%s/%s' % (GROUP, VERSION, PLURAL), body)
    assert code == 201
    assert headers.get('Warning') == '299 - "unknown field \\"spec.rdmaSharedDevicePlugin.rdmaHcaMax\\""'
    assert 'rdmaHcaMax' not in answer['spec']['rdmaSharedDevicePlugin']
    assert answer['spec']['rdmaSharedDevicePlugin']['imagePullSecrets'] == []  # the CRD's default
    raw(api, 'DELETE', '/apis/%s/%s/%s/nic-cluster-policy' % (GROUP, VERSION, PLURAL))
    code, headers, answer = raw(api, 'POST', '/apis/%s/%s/%s?fieldValidation=Ignore' % (GROUP, VERSION, PLURAL), body)
    assert code == 201 and 'Warning' not in headers and 'rdmaHcaMax' not in answer['spec']['rdmaSharedDevicePlugin']


def test_built_in_objects_strict_and_type_errors(api):
    bad = pod('p')
    bad['spec']['containers'][0]['ulimits'] = {'memlock': -1}
    code, _h, body = raw(api, 'POST', '/api/v1/namespaces/default/pods?fieldValidation=Strict', bad)
    assert code == 400 and body['message'] == ('Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
                                               'unknown field "spec.containers[0].ulimits"')
    wrong = pod('p')
    wrong['spec']['containers'][0]['env'] = [{'name': 'A', 'value': True}]
    code, _h, body = raw(api, 'POST', '/api/v1/namespaces/default/pods', wrong)
    assert code == 400 and body['message'] == ('Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal '
                                               'bool into Go struct field Pod.spec.containers.env.value of type string')


# ------------------------------------------------------------------ patches

@pytest.fixture
def configmap(api):
    core(api).create_namespaced_config_map('default', {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {
        'name': 'cm', 'labels': {'a': '1'}}, 'data': {'x': '1', 'y': '2'}})
    return '/api/v1/namespaces/default/configmaps/cm'


def test_json_patch_operations(api, configmap):
    patch = [{'op': 'add', 'path': '/data/z', 'value': '3'}, {'op': 'remove', 'path': '/data/x'},
             {'op': 'replace', 'path': '/data/y', 'value': '20'}, {'op': 'copy', 'from': '/data/y', 'path': '/data/w'},
             {'op': 'move', 'from': '/data/z', 'path': '/data/v'}, {'op': 'test', 'path': '/data/v', 'value': '3'},
             {'op': 'add', 'path': '/metadata/labels/b~1c', 'value': '2'}]
    code, _h, body = raw(api, 'PATCH', configmap, patch, 'application/json-patch+json')
    assert code == 200 and body['data'] == {'y': '20', 'w': '20', 'v': '3'}
    assert body['metadata']['labels'] == {'a': '1', 'b/c': '2'}


@pytest.mark.parametrize('patch, message', [
    ([{'op': 'test', 'path': '/data/x', 'value': 'other'}], 'testing value /data/x failed: test failed'),
    ([{'op': 'remove', 'path': '/data/nope'}], 'Unable to remove nonexistent key: nope: missing value'),
    ([{'op': 'replace', 'path': '/data/nope', 'value': '1'}], 'replace operation does not apply'),
])
def test_json_patch_that_does_not_apply_is_422(api, configmap, patch, message):
    code, _h, body = raw(api, 'PATCH', configmap, patch, 'application/json-patch+json')
    assert code == 422 and body['reason'] == 'Invalid'
    assert body['message'] == 'the server rejected our request due to an error in our request'
    assert message in body['details']['causes'][0]['message']
    assert api.get('v1', 'configmaps', 'cm', 'default')['data'] == {'x': '1', 'y': '2'}


def test_merge_patch_deletes_with_null_and_replaces_lists(api):
    v1 = apps(api)
    v1.create_namespaced_deployment('default', deployment())
    path = '/apis/apps/v1/namespaces/default/deployments/web'
    code, _h, body = raw(api, 'PATCH', path, {'metadata': {'labels': {'x': '1'}}, 'spec': {'template': {'spec': {
        'containers': [{'name': 'only', 'image': 'only:1'}]}}}}, 'application/merge-patch+json')
    assert code == 200 and [c['name'] for c in body['spec']['template']['spec']['containers']] == ['only']
    code, _h, body = raw(api, 'PATCH', path, {'metadata': {'labels': {'x': None}}}, 'application/merge-patch+json')
    assert code == 200 and body['metadata'].get('labels', {}) == {}


def test_strategic_merge_uses_the_patch_merge_keys(api):
    apps(api).create_namespaced_deployment('default', deployment())
    path = '/apis/apps/v1/namespaces/default/deployments/web'
    code, _h, body = raw(api, 'PATCH', path, {'spec': {'template': {'spec': {
        'containers': [{'name': 'app', 'env': [{'name': 'B', 'value': '20'}, {'name': 'C', 'value': '3'}]},
                       {'name': 'sidecar', '$patch': 'delete'}],
        'tolerations': [{'key': 'b', 'operator': 'Exists'}]}}}}, 'application/strategic-merge-patch+json')
    assert code == 200, body
    spec = body['spec']['template']['spec']
    assert spec['containers'] == [{'name': 'app', 'image': 'app:1', 'env': [
        {'name': 'A', 'value': '1'}, {'name': 'B', 'value': '20'}, {'name': 'C', 'value': '3'}]}]
    assert spec['tolerations'] == [{'key': 'b', 'operator': 'Exists'}]  # no merge key: replaced


def test_custom_resources_refuse_strategic_merge(api):
    custom(api).create_cluster_custom_object(GROUP, VERSION, PLURAL, policy(tolerations=[]))
    code, _h, body = raw(api, 'PATCH', '/apis/%s/%s/%s/nic-cluster-policy' % (GROUP, VERSION, PLURAL),
                         {'spec': {'tolerations': []}}, 'application/strategic-merge-patch+json')
    assert code == 415 and body['reason'] == 'UnsupportedMediaType'
    assert 'application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml' in body['message']


def test_server_side_apply(api):
    path = '/apis/%s/%s/%s/nic-cluster-policy' % (GROUP, VERSION, PLURAL)
    applied = policy(tolerations=[{'key': 'a', 'operator': 'Exists'}], nvIpam={'image': 'ipam', 'enableWebhook': False})
    code, _h, body = raw(api, 'PATCH', path, yaml.safe_dump(applied), 'application/apply-patch+yaml')
    assert code == 422 and body['message'].startswith('PatchOptions.meta.k8s.io "" is invalid: fieldManager: '
                                                      'Required value')
    code, _h, body = raw(api, 'PATCH', path + '?fieldManager=gpunet', yaml.safe_dump(applied),
                         'application/apply-patch+yaml')
    assert code == 201 and body['spec']['nvIpam']['enableWebhook'] is False
    raw(api, 'PATCH', path, {'spec': {'ofedDriver': {'image': 'doca-driver'}}}, 'application/merge-patch+json')
    applied['spec'].pop('nvIpam')
    code, _h, body = raw(api, 'PATCH', path + '?fieldManager=gpunet', yaml.safe_dump(applied),
                         'application/apply-patch+yaml')
    assert code == 200 and 'nvIpam' not in body['spec']  # dropped by its manager
    assert body['spec']['ofedDriver']['image'] == 'doca-driver'  # another writer's field stays


def test_status_subresource(api):
    objects = custom(api)
    objects.create_cluster_custom_object(GROUP, VERSION, PLURAL,
                                         dict(policy(tolerations=[]), status={'state': 'ready'}))
    stored = api.get('%s/%s' % (GROUP, VERSION), PLURAL, 'nic-cluster-policy')
    assert 'status' not in stored  # dropped on create
    path = '/apis/%s/%s/%s/nic-cluster-policy' % (GROUP, VERSION, PLURAL)
    code, _h, body = raw(api, 'PATCH', path + '/status', {'status': {'state': 'ready'}, 'spec': {'tolerations': None}},
                         'application/merge-patch+json')
    assert code == 200 and body['status'] == {'state': 'ready'} and body['spec']['tolerations'] == []
    code, _h, body = raw(api, 'PATCH', path, {'status': {'state': 'notReady'}, 'spec': {'nvIpam': {'image': 'i'}}},
                         'application/merge-patch+json')
    assert code == 200 and body['status'] == {'state': 'ready'} and body['spec']['nvIpam']['image'] == 'i'


def test_mutating_admission_webhooks(api):
    """A mutating webhook the test registers (Spiderpool's resource injection) changes a create before it is
    validated and stored; what it adds is validated like the rest (an unknown field it adds is refused)."""
    def inject(server, operation, resource, obj):
        if resource.plural != 'pods' or not obj['metadata'].get('annotations', {}).get('inject'):
            return None
        obj['spec']['containers'][0]['resources'] = {'limits': {'spidernet.io/shared_cx5_gpu1': '1'}}
        if obj['metadata']['annotations']['inject'] == 'bad':
            obj['spec']['containers'][0]['ulimits'] = {'memlock': -1}
        return obj
    api.mutating.append(inject)
    plain = pod('plain')
    marked = dict(pod('marked'), metadata=dict(pod('marked')['metadata'], annotations={'inject': 'yes'}))
    core(api).create_namespaced_pod('default', plain)
    core(api).create_namespaced_pod('default', marked)
    assert 'resources' not in api.get('v1', 'pods', 'plain', 'default')['spec']['containers'][0]
    assert api.get('v1', 'pods', 'marked', 'default')['spec']['containers'][0]['resources'] == {
        'limits': {'spidernet.io/shared_cx5_gpu1': '1'}}
    bad = dict(pod('bad'), metadata=dict(pod('bad')['metadata'], annotations={'inject': 'bad'}))
    code, body = error(core(api).create_namespaced_pod, 'default', bad, field_validation='Strict')
    assert code == 400 and 'ulimits' in body['message']


def test_validating_admission_webhooks(api):
    """A webhook the test registers sees creates and updates (dry runs too) after schema validation, never status
    writes; its denial is answered as kube-apiserver words it, nothing is stored."""
    seen = []

    def no_nv_ipam(server, operation, resource, obj, old):
        seen.append((operation, resource.kind, (old or {}).get('spec', {}).get('tolerations')))
        if resource.plural == PLURAL and 'nvIpam' in obj['spec']:
            raise kube_apiserver.webhook_denied('vnicclusterpolicy.kb.io', 'nvIpam is not allowed here')
    api.admission.append(no_nv_ipam)
    objects = custom(api)
    objects.create_cluster_custom_object(GROUP, VERSION, PLURAL, policy(tolerations=[]))
    code, body = error(objects.patch_cluster_custom_object, GROUP, VERSION, PLURAL, 'nic-cluster-policy',
                       {'spec': {'nvIpam': {'image': 'i'}}})
    assert code == 403 and body['reason'] == 'Forbidden' and body['message'] == (
        'admission webhook "vnicclusterpolicy.kb.io" denied the request: nvIpam is not allowed here')
    assert 'nvIpam' not in api.get('%s/%s' % (GROUP, VERSION), PLURAL, 'nic-cluster-policy')['spec']
    code, body = error(objects.patch_cluster_custom_object, GROUP, VERSION, PLURAL, 'nic-cluster-policy',
                       {'spec': {'nvIpam': {'image': 'i'}}}, dry_run='All')
    assert code == 403
    # Schema validation comes first: an invalid object never reaches the webhook.
    code, body = error(objects.patch_cluster_custom_object, GROUP, VERSION, PLURAL, 'nic-cluster-policy',
                       {'spec': {'tolerations': 'all'}})
    assert code == 422
    path = '/apis/%s/%s/%s/nic-cluster-policy/status' % (GROUP, VERSION, PLURAL)
    code, _h, _body = raw(api, 'PATCH', path, {'status': {'state': 'ready'}}, 'application/merge-patch+json')
    assert code == 200
    assert seen == [('CREATE', 'NicClusterPolicy', None), ('UPDATE', 'NicClusterPolicy', []),
                    ('UPDATE', 'NicClusterPolicy', [])]


def test_resource_versions_and_conflicts(api):
    objects = custom(api)
    created = objects.create_cluster_custom_object(GROUP, VERSION, PLURAL, policy(tolerations=[]))
    first = created['metadata']['resourceVersion']
    patched = objects.patch_cluster_custom_object(GROUP, VERSION, PLURAL, 'nic-cluster-policy',
                                                  {'spec': {'nvIpam': {'image': 'i'}}})
    assert int(patched['metadata']['resourceVersion']) > int(first)
    assert patched['metadata']['generation'] == 2
    stale = dict(created, spec={'tolerations': [{'key': 'x', 'operator': 'Exists'}]})
    code, body = error(objects.replace_cluster_custom_object, GROUP, VERSION, PLURAL, 'nic-cluster-policy', stale)
    assert code == 409 and body['reason'] == 'Conflict' and body['message'] == (
        'Operation cannot be fulfilled on nicclusterpolicies.mellanox.com "nic-cluster-policy": the object has been '
        'modified; please apply your changes to the latest version and try again')
    unversioned = dict(stale, metadata={'name': 'nic-cluster-policy'})
    code, body = error(objects.replace_cluster_custom_object, GROUP, VERSION, PLURAL, 'nic-cluster-policy', unversioned)
    assert code == 422 and 'metadata.resourceVersion: Invalid value: 0x0: must be specified for an update' in \
        body['message']
    current = dict(stale, metadata=patched['metadata'])
    replaced = objects.replace_cluster_custom_object(GROUP, VERSION, PLURAL, 'nic-cluster-policy', current)
    assert replaced['spec']['tolerations'] == [{'key': 'x', 'operator': 'Exists'}]
    same = objects.replace_cluster_custom_object(GROUP, VERSION, PLURAL, 'nic-cluster-policy', replaced)
    assert same['metadata']['resourceVersion'] == replaced['metadata']['resourceVersion']  # a no-op changes nothing


def test_delete_answers_as_the_registry_does(api):
    v1 = core(api)
    v1.create_namespaced_pod('default', pod('p'))
    v1.create_namespaced_config_map('default', {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'c'}})
    code, _h, body = raw(api, 'DELETE', '/api/v1/namespaces/default/pods/p')
    assert code == 200 and body['kind'] == 'Pod'  # pods return the deleted object
    code, _h, body = raw(api, 'DELETE', '/api/v1/namespaces/default/configmaps/c')
    assert code == 200 and body['kind'] == 'Status' and body['status'] == 'Success'
    assert body['details']['name'] == 'c' and body['details']['kind'] == 'configmaps'
    code, _h, body = raw(api, 'DELETE', '/api/v1/namespaces/default/configmaps/c')
    assert code == 404


def test_pod_log(api):
    v1 = core(api)
    v1.create_namespaced_pod('default', pod('p'))
    api.set_log('default', 'p', 'one\ntwo\nthree\n')
    assert v1.read_namespaced_pod_log('p', 'default') == 'one\ntwo\nthree\n'
    assert v1.read_namespaced_pod_log('p', 'default', tail_lines=1) == 'three\n'
    assert error(v1.read_namespaced_pod_log, 'q', 'default')[0] == 404


# ------------------------------------------------------------------ behaviours for error tests

def test_unknown_token_is_401(api):
    code, body = error(kubernetes.client.CoreV1Api(client(api, token='expired')).list_node)
    assert code == 401 and body == {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure',
                                    'message': 'Unauthorized', 'reason': 'Unauthorized', 'code': 401}


def test_forbidden_as_rbac_words_it(api):
    api.forbid('patch', 'nodes/status')
    api.add('v1', 'nodes', {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'n1'}})
    code, body = error(core(api).patch_node_status, 'n1', [{'op': 'add', 'path': '/status/capacity', 'value': {}}])
    assert code == 403 and body['reason'] == 'Forbidden' and body['message'] == (
        'nodes "n1" is forbidden: User "system:admin" cannot patch resource "nodes/status" in API group "" at the '
        'cluster scope')
    assert core(api).read_node('n1').metadata.name == 'n1'  # only that verb


def test_text_answers_and_refused_connections(api):
    api.answer_text(200, '<html>login</html>')
    code, headers, body = raw(api, 'GET', '/api/v1/nodes')
    assert code == 200 and headers['Content-Type'] == 'text/html' and body == '<html>login</html>'
    api.stop()
    with pytest.raises(urllib3.exceptions.MaxRetryError) as info:
        urllib3.PoolManager().request('GET', api.url + '/version', retries=urllib3.Retry(0))
    assert 'refused' in str(info.value.reason).lower()


def test_kubernetes_core_client_against_the_double(api):
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    k8s = get_api_client(host=api.url, api_key=kube_apiserver.DEFAULT_TOKEN)
    resource = k8s.resource('NicClusterPolicy', 'mellanox.com/v1alpha1')
    k8s.create(resource, policy(tolerations=[]))
    k8s.patch(resource, {'spec': {'tolerations': [{'key': 'a', 'operator': 'Exists'}]}}, name='nic-cluster-policy',
              content_type='application/merge-patch+json')
    got = k8s.get(resource, name='nic-cluster-policy').to_dict()
    assert got['spec']['tolerations'] == [{'key': 'a', 'operator': 'Exists'}]
    nodes = k8s.resource('Node', 'v1')
    assert k8s.get(nodes).to_dict()['items'] == []


# ------------------------------------------------------------------ OpenAPI v3, protobuf bodies, as a process (helm)

def test_openapi_v3_publishes_each_group_version_with_the_patch_parameters(api):
    """kubectl and helm look for fieldValidation among the PATCH parameters of the kind before they write it."""
    code, _headers, index = raw(api, 'GET', '/openapi/v3')
    assert code == 200 and {'api/v1', 'apis/apps/v1', 'apis/mellanox.com/v1alpha1'} <= set(index['paths'])
    url = index['paths']['apis/mellanox.com/v1alpha1']['serverRelativeURL']
    assert url.startswith('/openapi/v3/apis/mellanox.com/v1alpha1?hash=')
    code, _headers, document = raw(api, 'GET', url)
    assert code == 200 and document['openapi'] == '3.0.0'
    patch = document['paths']['/apis/mellanox.com/v1alpha1/nicclusterpolicies/{name}']['patch']
    assert patch['x-kubernetes-group-version-kind'] == {'group': 'mellanox.com', 'version': 'v1alpha1',
                                                        'kind': 'NicClusterPolicy'}
    assert {'name': 'fieldValidation', 'in': 'query'}.items() <= [
        p for p in patch['parameters'] if p['name'] == 'fieldValidation'][0].items()
    # custom resources take no strategic merge patch, as the server answers 415 to one
    assert 'application/strategic-merge-patch+json' not in patch['requestBody']['content']
    schema = document['components']['schemas']['com.mellanox.v1alpha1.NicClusterPolicy']
    assert 'tolerations' in schema['properties']['spec']['properties']
    _code, _headers, core_document = raw(api, 'GET', index['paths']['api/v1']['serverRelativeURL'])
    secret = core_document['paths']['/api/v1/namespaces/{namespace}/secrets/{name}']
    assert 'application/strategic-merge-patch+json' in secret['patch']['requestBody']['content']
    assert [p['name'] for p in secret['parameters']] == ['name', 'namespace']
    assert raw(api, 'GET', '/openapi/v3/apis/example.com/v1')[0] == 404


def _varint(value):
    out = b''
    while True:
        byte, value = value & 0x7f, value >> 7
        out += bytes([byte | (0x80 if value else 0)])
        if not value:
            return out


def _bytes_field(number, data):
    data = data.encode() if isinstance(data, str) else data
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _map_entry(number, key, value):
    return _bytes_field(number, _bytes_field(1, key) + _bytes_field(2, value))


def _protobuf_secret(name, namespace='default'):
    """A Secret as client-go's protobuf serializer writes it (empty strings sent, as gogo-protobuf does)."""
    meta = (_bytes_field(1, name) + _bytes_field(2, '') + _bytes_field(3, namespace) + _bytes_field(4, '') +
            _bytes_field(5, '') + _bytes_field(6, '') + _varint(7 << 3) + _varint(0) + _bytes_field(8, b'') +
            _map_entry(11, 'owner', 'helm') + _map_entry(11, 'name', 'rel'))
    secret = (_bytes_field(1, meta) + _map_entry(2, 'release', b'\x00\xffbinary') + _bytes_field(3, 'helm.sh/release.v1'))
    unknown = _bytes_field(1, _bytes_field(1, 'v1') + _bytes_field(2, 'Secret')) + _bytes_field(2, secret)
    return kube_apiserver.PROTOBUF_MAGIC + unknown + _bytes_field(3, '') + _bytes_field(4, '')


def test_protobuf_bodies_of_built_in_kinds_are_stored_as_json_would_be(api):
    code, _headers, body = raw(api, 'POST', '/api/v1/namespaces/default/secrets', _protobuf_secret('s1'),
                               content_type=kube_apiserver.PROTOBUF)
    assert code == 201, body
    stored = core(api).read_namespaced_secret('s1', 'default')
    assert stored.metadata.labels == {'owner': 'helm', 'name': 'rel'}
    assert stored.type == 'helm.sh/release.v1'
    assert stored.data == {'release': 'AP9iaW5hcnk='}  # base64 of the bytes
    assert stored.metadata.generate_name is None and stored.metadata.uid  # empty strings left out, uid the server's
    code, _headers, body = raw(api, 'PUT', '/api/v1/namespaces/default/secrets/s1', _protobuf_secret('s1'),
                               content_type=kube_apiserver.PROTOBUF)
    assert code == 200, body


def test_protobuf_is_refused_for_custom_resources_and_garbage(api):
    code, _headers, body = raw(api, 'POST', '/apis/mellanox.com/v1alpha1/nicclusterpolicies', _protobuf_secret('p'),
                               content_type=kube_apiserver.PROTOBUF)
    assert code == 415 and body['reason'] == 'UnsupportedMediaType'
    code, _headers, body = raw(api, 'POST', '/api/v1/namespaces/default/secrets', b'{"not": "protobuf"}',
                               content_type=kube_apiserver.PROTOBUF)
    assert code == 400 and 'expected prefix' in body['message']
    code, _headers, body = raw(api, 'POST', '/api/v1/namespaces/default/secrets',
                               kube_apiserver.PROTOBUF_MAGIC + _bytes_field(1, b'\x0a\x05v'),
                               content_type=kube_apiserver.PROTOBUF)
    assert code == 400 and 'runs past the end' in body['message']


OPERATOR = '''
def on_change(api, group_version, plural, obj):
    if plural == 'configmaps':
        obj.setdefault('metadata', {}).setdefault('labels', {})['seen-by'] = 'operator'
        api.add(group_version, plural, obj)
'''


def test_the_double_as_a_process_with_an_operator_and_an_audit_log(tmp_path, upstream_crds):
    objects = tmp_path / 'objects.yml'
    objects.write_text(yaml.safe_dump_all([{'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'n1'}}]))
    operator = tmp_path / 'operator.py'
    operator.write_text(OPERATOR)
    state = tmp_path / 'state'
    script = os.path.join(REPO, 'tests', 'doubles', 'kube_apiserver.py')
    crd = os.path.join(upstream_crds, 'network-operator-v26.4.1', 'mellanox.com_nicclusterpolicies.yaml')
    # the collection as conftest.py put it on sys.path
    collections = [p for p in sys.path if os.path.isdir(os.path.join(p, 'ansible_collections', 'gpunet', 'rdma'))][0]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections)
    started = subprocess.run([sys.executable, script, 'start', str(state), '--crd', crd, '--objects', str(objects),
                              '--operator', str(operator)], capture_output=True, text=True, env=env, check=False)
    assert started.returncode == 0, started.stderr
    try:
        client_ = kubernetes.config.new_client_from_config(str(state / 'kubeconfig'))
        v1 = kubernetes.client.CoreV1Api(client_)
        assert [n.metadata.name for n in v1.list_node().items] == ['n1']
        v1.create_namespaced_config_map('default', {'apiVersion': 'v1', 'kind': 'ConfigMap',
                                                    'metadata': {'name': 'c1'}, 'data': {'a': 'b'}})
        assert v1.read_namespaced_config_map('c1', 'default').metadata.labels == {'seen-by': 'operator'}
        assert kubernetes.client.CustomObjectsApi(client_).list_cluster_custom_object(
            'mellanox.com', 'v1alpha1', 'nicclusterpolicies')['items'] == []
        pid = int((state / 'pid').read_text())
    finally:
        stopped = subprocess.run([sys.executable, script, 'stop', str(state)], capture_output=True, text=True,
                                 env=env, check=False)
    assert stopped.returncode == 0, stopped.stderr
    assert not (state / 'kubeconfig').exists() and not (state / 'pid').exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    events = [json.loads(line) for line in (state / 'audit.jsonl').read_text().splitlines()]
    created = [e for e in events if e['verb'] == 'create']
    assert [(e['objectRef']['resource'], e['objectRef']['namespace'], e['requestObject']['metadata']['name'])
            for e in created] == [('configmaps', 'default', 'c1')]
    assert {e['verb'] for e in events} >= {'list', 'create', 'get'}
    assert all(e['apiVersion'] == 'audit.k8s.io/v1' and e['stage'] == 'RequestReceived' for e in events)


def test_set_up_objects_get_the_generation_a_create_gives(api):
    """A custom resource or workload the test sets up has metadata.generation 1, as after a create; a ConfigMap none."""
    stored = api.add('mellanox.com/v1alpha1', 'nicclusterpolicies', policy(tolerations=[]))
    assert stored['metadata']['generation'] == 1
    assert 'generation' not in api.add('v1', 'configmaps', {'apiVersion': 'v1', 'kind': 'ConfigMap',
                                                            'metadata': {'name': 'c'}})['metadata']


# ------------------------------------------------------------------ field management (server-side apply)

TIME = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$')
APPLY = 'application/apply-patch+yaml'
KUBECTL_UA = 'kubectl/v1.33.0 (linux/amd64) kubernetes/60a317e'


def managed(body):
    """managedFields without their times (each checked to be RFC 3339 in UTC), Apply entries first (as the server
    sorts them), then by manager: the server orders entries of one operation by time, equal within a second."""
    entries = copy.deepcopy(body['metadata']['managedFields'])
    assert [e['operation'] for e in entries] == sorted(e['operation'] for e in entries)
    assert all(TIME.match(entry.pop('time')) for entry in entries)
    return sorted(entries, key=lambda e: (e['operation'], e['manager'], e.get('subresource', '')))


def entry(manager, operation, fields, api_version='v1', subresource=None):
    found = {'manager': manager, 'operation': operation, 'apiVersion': api_version, 'fieldsType': 'FieldsV1',
             'fieldsV1': fields}
    if subresource:
        found['subresource'] = subresource
    return found


def test_managed_fields_after_create_update_apply_and_status_write(api):
    """One entry per manager and operation, fieldsV1 as kube-apiserver encodes it; the manager of a write without
    fieldManager is the User-Agent's program; a field the same value is given by two managers is shared; an Update
    takes a field from every other manager; Apply entries come first."""
    path = '/api/v1/namespaces/default/configmaps'
    code, _h, body = raw(api, 'POST', path + '?fieldManager=kubectl-create', {
        'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'c', 'labels': {'app': 'web'}}, 'data': {'a': '1'}})
    assert code == 201 and managed(body) == [entry('kubectl-create', 'Update', {
        'f:data': {'.': {}, 'f:a': {}}, 'f:metadata': {'f:labels': {'.': {}, 'f:app': {}}}})]
    code, _h, body = raw(api, 'PATCH', path + '/c', {'data': {'b': '2'}}, 'application/merge-patch+json',
                         user_agent=KUBECTL_UA)
    assert code == 200 and managed(body)[0] == entry('kubectl', 'Update', {'f:data': {'f:b': {}}})
    code, _h, body = raw(api, 'PATCH', path + '/c?fieldManager=gpunet.rdma', yaml.safe_dump({
        'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'c'}, 'data': {'a': '1', 'c': '3'}}), APPLY)
    assert code == 200 and managed(body) == [
        entry('gpunet.rdma', 'Apply', {'f:data': {'f:a': {}, 'f:c': {}}}),
        entry('kubectl', 'Update', {'f:data': {'f:b': {}}}),
        entry('kubectl-create', 'Update', {'f:data': {'.': {}, 'f:a': {}}, 'f:metadata': {'f:labels': {
            '.': {}, 'f:app': {}}}})]
    replaced = dict(body, data={'a': '1', 'b': 'two', 'c': '3'})
    code, _h, body = raw(api, 'PUT', path + '/c?fieldManager=helm', replaced)
    assert code == 200 and [(e['manager'], e['fieldsV1']) for e in managed(body)][1:] == [
        ('helm', {'f:data': {'f:b': {}}}),  # kubectl's only field went to helm: its entry is gone
        ('kubectl-create', {'f:data': {'.': {}, 'f:a': {}}, 'f:metadata': {'f:labels': {'.': {}, 'f:app': {}}}})]
    core(api).create_namespaced_pod('default', pod('p'))
    code, _h, body = raw(api, 'PATCH', '/api/v1/namespaces/default/pods/p/status?fieldManager=kubelet',
                         {'status': {'phase': 'Running'}}, 'application/merge-patch+json')
    assert code == 200 and managed(body)[-1] == entry('kubelet', 'Update', {'f:status': {'f:phase': {}}},
                                                      subresource='status')
    assert managed(body)[0]['manager'] == 'OpenAPI-Generator'  # the kubernetes client's User-Agent
    assert managed(body)[0]['fieldsV1']['f:spec']['f:containers'] == {
        'k:{"name":"main"}': {'.': {}, 'f:image': {}, 'f:name': {}}}


def test_apply_conflicts_with_the_fields_of_other_managers(api):
    """A changed value owned by another manager is a 409 worded as kube-apiserver's (dry runs too, nothing stored);
    the same value is shared; force takes the field; an object without managedFields belongs to before-first-apply."""
    path = '/apis/%s/%s/%s/nic-cluster-policy' % (GROUP, VERSION, PLURAL)
    driver = {'image': 'doca-driver', 'repository': 'nvcr.io/nvidia/mellanox', 'version': '25.01'}
    code, _h, _body = raw(api, 'POST', '/apis/%s/%s/%s?fieldManager=kubectl-create' % (GROUP, VERSION, PLURAL),
                          policy(ofedDriver=driver))
    assert code == 201
    created = api.get('%s/%s' % (GROUP, VERSION), PLURAL, 'nic-cluster-policy')

    def apply(query='', **changes):
        return raw(api, 'PATCH', path + '?fieldManager=gpunet.rdma' + query,
                   yaml.safe_dump(policy(ofedDriver=dict(driver, **changes))), APPLY)
    for query in ('', '&dryRun=All'):
        code, _h, body = apply(query, version='25.04')
        assert code == 409 and body['reason'] == 'Conflict' and body['message'] == (
            'Apply failed with 1 conflict: conflict with "kubectl-create" using mellanox.com/v1alpha1: '
            '.spec.ofedDriver.version')
        assert body['details'] == {'causes': [{'reason': 'FieldManagerConflict', 'field': '.spec.ofedDriver.version',
                                               'message': 'conflict with "kubectl-create" using mellanox.com/v1alpha1'}]}
        assert api.get('%s/%s' % (GROUP, VERSION), PLURAL, 'nic-cluster-policy') == created
    code, _h, body = apply(version='25.04', image='doca')
    assert code == 409 and body['message'] == (
        'Apply failed with 2 conflicts: conflicts with "kubectl-create" using mellanox.com/v1alpha1:\n'
        '- .spec.ofedDriver.image\n- .spec.ofedDriver.version')
    code, _h, body = apply()  # the same values: shared
    shared = {'f:image': {}, 'f:repository': {}, 'f:version': {}}
    assert code == 200 and managed(body)[0] == entry('gpunet.rdma', 'Apply', {'f:spec': {'f:ofedDriver': shared}},
                                                     '%s/%s' % (GROUP, VERSION))
    assert shared.items() <= managed(body)[1]['fieldsV1']['f:spec']['f:ofedDriver'].items()
    code, _h, body = apply('&force=true', version='25.04')
    assert code == 200 and body['spec']['ofedDriver']['version'] == '25.04'
    fields = [e['fieldsV1']['f:spec']['f:ofedDriver'] for e in managed(body)]
    assert 'f:version' in fields[0] and 'f:version' not in fields[1] and 'f:image' in fields[1]
    # list items are named by their keys; a set-up object without managedFields is before-first-apply's
    api.add('apps/v1', 'deployments', deployment())
    code, _h, body = raw(api, 'PATCH', '/apis/apps/v1/namespaces/default/deployments/web?fieldManager=gpunet.rdma',
                         yaml.safe_dump({'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': {'name': 'web'},
                                         'spec': {'template': {'spec': {'containers': [
                                             {'name': 'app', 'image': 'app:2'}]}}}}), APPLY)
    assert code == 409 and body['message'] == (
        'Apply failed with 1 conflict: conflict with "before-first-apply" using apps/v1: '
        '.spec.template.spec.containers[name="app"].image')


def test_network_operator_stand_in_advertises_where_the_policy_and_the_devices_match(api):
    """The molecule stand-in: a NicNodePolicy's resource on the nodes it selects only, 0 where no netdev passes the
    plugin's selectors."""
    operator = runpy.run_path(os.path.join(REPO, 'molecule', 'network_operator', 'files', 'network_operator.py'))
    with open(os.path.join(REPO, 'tests', 'crds', 'network-operator-v26.4.1', 'mellanox.com_nicnodepolicies.yaml')) as f:
        api.add('apiextensions.k8s.io/v1', 'customresourcedefinitions', yaml.safe_load(f))
    for name, group, netdev in (('n1', 'ib', 'ibp94s0f0'), ('n2', 'ib', 'ibp12s0'), ('n3', 'roce', 'ibp94s0f0')):
        netdevs = [{'ifName': netdev, 'vendor': '15b3', 'deviceID': '1017', 'driver': 'mlx5_core',
                    'linkType': 'infiniband'}]
        api.add('v1', 'nodes', {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {
            'name': name, 'labels': {'group': group}, 'annotations': {'gpunet.test/rdma-netdevs': json.dumps(netdevs)}}})
    api.on_change = operator['on_change']
    config = {'configList': [{'resourceName': 'rdma_ib', 'rdmaHcaMax': 63, 'selectors': {'ifNames': ['ibp94s0f0']}}]}
    custom(api).create_cluster_custom_object(GROUP, VERSION, 'nicnodepolicies', {
        'apiVersion': '%s/%s' % (GROUP, VERSION), 'kind': 'NicNodePolicy', 'metadata': {'name': 'ib'},
        'spec': {'nodeSelector': {'group': 'ib'}, 'rdmaSharedDevicePlugin': {
            'image': 'k8s-rdma-shared-dev-plugin', 'repository': 'ghcr.io/mellanox', 'version': 'v1.5.2',
            'config': json.dumps(config)}}})
    allocatable = dict((n, api.get('v1', 'nodes', n).get('status', {}).get('allocatable')) for n in ('n1', 'n2', 'n3'))
    assert allocatable == {'n1': {'rdma/rdma_ib': '63'}, 'n2': {'rdma/rdma_ib': '0'}, 'n3': None}
    assert sorted((e['manager'], e.get('subresource')) for e in api.get('v1', 'nodes', 'n1')['metadata'][
        'managedFields']) == [('kubelet', 'status'), ('network-operator', None)]


# ------------------------------------------------------------------ the double's own validation

DOUBLES = os.path.join(REPO, 'tests', 'doubles')
FORBIDDEN_IMPORTS = ('ansible_collections.gpunet', 'plugins')


def _docstrings(tree):
    """The docstring nodes of a module and of its classes and functions (prose, not code)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _collection_uses(directory, start):
    """``(modules read, [(file, line, what)])``: the imports of ``start`` and of every module of ``directory`` it
    imports (transitively) that reach the collection, whether by an import statement, an import by name
    (importlib, __import__, runpy) or a string naming the collection's code (a sys.path or file trick)."""
    seen, queue, uses = set(), [start], []
    while queue:
        name = queue.pop()
        if name in seen:
            continue
        seen.add(name)
        path = os.path.join(directory, name + '.py')
        with open(path) as handle:
            tree = ast.parse(handle.read(), path)
        prose = _docstrings(tree)
        for node in ast.walk(tree):
            modules = []
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ''] + ['%s.%s' % (node.module, a.name) if node.module else a.name
                                                 for a in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
                text = node.value.replace('/', '.')
                if 'ansible_collections.gpunet' in text or 'plugins.module_utils' in text:
                    uses.append((os.path.basename(path), node.lineno, node.value))
            reaching = [m for m in modules if m.startswith(FORBIDDEN_IMPORTS[0]) or m.split('.')[0] == FORBIDDEN_IMPORTS[1]]
            if reaching:
                uses.append((os.path.basename(path), node.lineno, reaching[0]))
            queue.extend(m.split('.')[0] for m in modules if os.path.exists(os.path.join(directory, m.split('.')[0] + '.py')))
    return seen, uses


def test_the_double_validates_with_its_own_code_not_the_collections():
    """A gap in the collection's validation must not be one of the API server the roles are tested against: the
    double (and what it imports from tests/doubles) takes nothing from plugins/."""
    read, uses = _collection_uses(DOUBLES, 'kube_apiserver')
    assert 'api_schemas' in read  # the walk follows the double's own modules
    assert uses == []


def test_the_import_check_finds_every_way_to_reach_the_collection(tmp_path):
    (tmp_path / 'double.py').write_text('"""Says plugins/module_utils/cluster/_crd_schema.py in prose: fine."""\n'
                                        'import helper\n')
    (tmp_path / 'helper.py').write_text(
        'import importlib\n'
        'from ansible_collections.gpunet.rdma.plugins.module_utils import _crd_schema\n'
        'from plugins.module_utils.cluster._core_schema import validate_builtin\n'
        'SCHEMA = importlib.import_module("ansible_collections.gpunet.rdma.plugins.module_utils.cluster._crd_schema")\n'
        'PATH = "../../plugins/module_utils"\n')
    read, uses = _collection_uses(str(tmp_path), 'double')
    assert read == {'double', 'helper'}
    assert sorted(line for _name, line, _what in uses) == [2, 3, 4, 5]


NIC_NODE_POLICY_CRD = os.path.join('network-operator-v26.4.1', 'mellanox.com_nicnodepolicies.yaml')


def test_a_nicclusterpolicy_of_wrong_types_is_422_naming_each_field(api):
    """What kube-apiserver answers, written out by hand from the v26.4.1 CRD: types, pattern, minimum, required."""
    code, _h, body = raw(api, 'POST', '/apis/%s/%s/%s' % (GROUP, VERSION, PLURAL), policy(
        ofedDriver={'image': '!!!', 'repository': 'nvcr.io/nvidia/mellanox', 'version': '25.04',
                    'terminationGracePeriodSeconds': '300', 'upgradePolicy': {'maxParallelUpgrades': -1}},
        rdmaSharedDevicePlugin={'repository': 'ghcr.io/mellanox', 'version': 'v1.5.2', 'useCdi': 'yes'}))
    assert code == 422 and body['reason'] == 'Invalid'
    assert body['details']['causes'] == [
        {'reason': 'FieldValueInvalid', 'field': 'spec.ofedDriver.image',
         'message': 'Invalid value: "!!!": spec.ofedDriver.image in body should match \'[a-zA-Z0-9\\-]+\''},
        {'reason': 'FieldValueTypeInvalid', 'field': 'spec.ofedDriver.terminationGracePeriodSeconds',
         'message': 'Invalid value: "string": spec.ofedDriver.terminationGracePeriodSeconds in body must be of type '
                    'integer: "string"'},
        {'reason': 'FieldValueInvalid', 'field': 'spec.ofedDriver.upgradePolicy.maxParallelUpgrades',
         'message': 'Invalid value: -1: spec.ofedDriver.upgradePolicy.maxParallelUpgrades in body should be greater '
                    'than or equal to 0'},
        {'reason': 'FieldValueRequired', 'field': 'spec.rdmaSharedDevicePlugin.image', 'message': 'Required value'},
        {'reason': 'FieldValueTypeInvalid', 'field': 'spec.rdmaSharedDevicePlugin.useCdi',
         'message': 'Invalid value: "string": spec.rdmaSharedDevicePlugin.useCdi in body must be of type boolean: '
                    '"string"'}]
    assert api.list(GROUP + '/' + VERSION, PLURAL) == []


def test_a_nicnodepolicy_loses_its_unknown_fields_with_a_warning_and_gets_the_crd_defaults(api, upstream_crds):
    with open(os.path.join(upstream_crds, NIC_NODE_POLICY_CRD)) as f:
        api.add('apiextensions.k8s.io/v1', 'customresourcedefinitions', yaml.safe_load(f))
    body = {'apiVersion': '%s/%s' % (GROUP, VERSION), 'kind': 'NicNodePolicy', 'metadata': {'name': 'ib'},
            'spec': {'nodeSelector': {'group': 'ib', 'rdma': 'true'}, 'ofedDriver': {
                'image': 'doca-driver', 'repository': 'nvcr.io/nvidia/mellanox', 'version': '25.04',
                'upgradePolicy': {'autoUpgrade': True, 'drain': {'timeout': 600}}}}}
    path = '/apis/%s/%s/nicnodepolicies' % (GROUP, VERSION)
    code, _h, answer = raw(api, 'POST', path + '?fieldValidation=Strict', body)
    assert code == 400 and answer['message'] == (
        'NicNodePolicy in version "v1alpha1" cannot be handled as a NicNodePolicy: strict decoding error: '
        'unknown field "spec.ofedDriver.upgradePolicy.drain.timeout"')
    code, headers, answer = raw(api, 'POST', path, body)
    assert code == 201
    assert headers.get('Warning') == '299 - "unknown field \\"spec.ofedDriver.upgradePolicy.drain.timeout\\""'
    # The defaults of the fields whose parent is there; the map's keys are not unknown fields; no default creates
    # its parent (no waitForCompletion, no rdmaSharedDevicePlugin).
    assert answer['spec'] == {'nodeSelector': {'group': 'ib', 'rdma': 'true'}, 'ofedDriver': {
        'image': 'doca-driver', 'repository': 'nvcr.io/nvidia/mellanox', 'version': '25.04',
        'forcePrecompiled': False, 'imagePullSecrets': [], 'terminationGracePeriodSeconds': 300,
        'upgradePolicy': {'autoUpgrade': True, 'maxParallelUpgrades': 1, 'safeLoad': False, 'drain': {
            'enable': True, 'force': False, 'deleteEmptyDir': False, 'timeoutSeconds': 300}}}}
    assert api.get(GROUP + '/' + VERSION, 'nicnodepolicies', 'ib')['spec'] == answer['spec']


WIDGET_CRD = {
    'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
    'metadata': {'name': 'widgets.example.com'},
    'spec': {'group': 'example.com', 'scope': 'Namespaced',
             'names': {'kind': 'Widget', 'plural': 'widgets', 'singular': 'widget', 'listKind': 'WidgetList'},
             'versions': [{'name': 'v1', 'served': True, 'storage': True, 'schema': {'openAPIV3Schema': {
                 'type': 'object', 'properties': {
                     'apiVersion': {'type': 'string'}, 'kind': {'type': 'string'}, 'metadata': {'type': 'object'},
                     'spec': {'type': 'object', 'properties': {
                         'size': {'x-kubernetes-int-or-string': True,
                                  'anyOf': [{'type': 'integer'}, {'type': 'string'}]},
                         'note': {'type': 'string', 'nullable': True},
                         'mode': {'type': 'string', 'default': 'shared'},
                         'count': {'type': 'integer', 'format': 'int64'},
                         'free': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True, 'properties': {
                             'known': {'type': 'object', 'properties': {'a': {'type': 'string'}}}}},
                         'template': {'type': 'object', 'x-kubernetes-embedded-resource': True, 'properties': {
                             'spec': {'type': 'object', 'properties': {'x': {'type': 'string'}}}}},
                         'labels': {'type': 'object', 'additionalProperties': {'type': 'string'}},
                     }}}}}}]}}


def test_the_openapi_extensions_as_kube_apiserver_reads_them(api):
    """nullable, x-kubernetes-int-or-string, -preserve-unknown-fields, -embedded-resource, int64, maps, and nulls."""
    api.add('apiextensions.k8s.io/v1', 'customresourcedefinitions', WIDGET_CRD)
    path = '/apis/example.com/v1/namespaces/default/widgets'

    def widget(name, **spec):
        return {'apiVersion': 'example.com/v1', 'kind': 'Widget', 'metadata': {'name': name}, 'spec': spec}

    code, headers, answer = raw(api, 'POST', path, widget(
        'a', size='2Gi', note=None, mode=None, count=3, labels={'k': 'v'}, extra=1,
        free={'anything': {'deep': [1]}, 'known': {'a': 'b', 'pruned': 2}},
        template={'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'x', 'bogus': 1},
                  'spec': {'x': 'y', 'z': 1}}))
    assert code == 201, answer
    assert headers.get('Warning') == ', '.join('299 - "unknown field \\"%s\\""' % field for field in (
        'spec.extra', 'spec.free.known.pruned', 'spec.template.metadata.bogus', 'spec.template.spec.z'))
    assert answer['spec'] == {
        'size': '2Gi', 'note': None, 'mode': 'shared', 'count': 3, 'labels': {'k': 'v'},
        'free': {'anything': {'deep': [1]}, 'known': {'a': 'b'}},
        'template': {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'x'}, 'spec': {'x': 'y'}}}
    code, _h, answer = raw(api, 'POST', path, widget('b', size=7, count=None))
    assert code == 201 and answer['spec'] == {'size': 7, 'mode': 'shared'}  # a null it does not allow: dropped
    code, _h, answer = raw(api, 'POST', path, widget('c', size=True, note=5, count=1.5, template={'apiVersion': 'v1'}))
    assert code == 422
    assert [(c['reason'], c['field']) for c in answer['details']['causes']] == [
        ('FieldValueTypeInvalid', 'spec.count'), ('FieldValueTypeInvalid', 'spec.note'),
        ('FieldValueTypeInvalid', 'spec.size'), ('FieldValueRequired', 'spec.template.kind')]
    assert answer['details']['causes'][0]['message'] == (
        'Invalid value: "number": spec.count in body must be of type integer: "number"')


def test_a_crd_kube_apiserver_would_refuse_is_422(api):
    crd = copy.deepcopy(WIDGET_CRD)
    crd['metadata']['name'] = 'widget.example.com'
    crd['spec']['versions'][0]['storage'] = False
    del crd['spec']['versions'][0]['schema']
    code, _h, answer = raw(api, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)
    assert code == 422 and answer['message'].startswith(
        'CustomResourceDefinition.apiextensions.k8s.io "widget.example.com" is invalid: [')
    assert [(c['reason'], c['field']) for c in answer['details']['causes']] == [
        ('FieldValueInvalid', 'metadata.name'), ('FieldValueInvalid', 'spec.versions'),
        ('FieldValueRequired', 'spec.versions[0].schema.openAPIV3Schema')]
