# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""node_extended_resources through kubernetes.core's client against the kube-apiserver test double.

Nothing is stubbed: the module connects with kubernetes.core's get_api_client (options and K8S_AUTH_* environment),
talks HTTP to tests/doubles/kube_apiserver.py and every error path is a real answer (or a real refused connection)
of that server.
"""

from __future__ import annotations

import json
import os
import tempfile
import sys

import kubernetes
import pytest

from ansible_collections.gpunet.rdma.plugins.modules import node_extended_resources

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..', 'doubles'))

import kube_apiserver  # noqa: E402  pylint: disable=wrong-import-position

HOSTDEV = 'nvidia.com/hostdev'
PATCH = [{'op': 'remove', 'path': '/status/capacity/nvidia.com~1hostdev'},
         {'op': 'remove', 'path': '/status/allocatable/nvidia.com~1hostdev'}]


def node(name, resources):
    return {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name, 'labels': {'kubernetes.io/hostname': name}},
            'status': {'capacity': dict(resources), 'allocatable': dict(resources)}}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    """No credentials of this machine leak in: no K8S_AUTH_*, no KUBECONFIG, no ~/.kube/config, no default."""
    for name in list(os.environ):
        if name.startswith('K8S_AUTH_') or name in ('KUBECONFIG', 'KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT'):
            monkeypatch.delenv(name)
    monkeypatch.setattr(kubernetes.config.kube_config, 'KUBE_CONFIG_DEFAULT_LOCATION', str(tmp_path / 'no-kubeconfig'))
    kubernetes.client.Configuration.set_default(None)
    # kubernetes.core caches API discovery per server address in the temporary directory; a port that an earlier
    # test's server used would skip discovery.
    monkeypatch.setattr(tempfile, 'tempdir', str(tmp_path))


@pytest.fixture
def api():
    server = kube_apiserver.FakeApiServer().start()
    server.add('v1', 'nodes', node('gpu-v100-01', {'cpu': '64', HOSTDEV: '2', 'rdma/rdma_v100': '63'}))
    server.add('v1', 'nodes', node('gpu-a100-01', {'cpu': '128', 'rdma/rdma_a100': '63'}))
    yield server
    server.stop()


@pytest.fixture
def kubeconfig(api, tmp_path):
    return api.kubeconfig(str(tmp_path / 'kubeconfig'))


def ok(args, run_module, **kwargs):
    result = run_module(node_extended_resources, args, **kwargs)[1]
    assert not result.get('failed'), result
    return result


def failed(args, run_module, **kwargs):
    result = run_module(node_extended_resources, args, **kwargs)[1]
    assert result.get('failed') is True, result
    assert 'Traceback' not in result.get('exception', '')
    return result['msg']


def sent(api, method='PATCH'):
    return [(path, details['body']) for m, path, details in api.requests if m == method]


# ------------------------------------------------------------------ what it does

def test_check_mode_sends_only_dry_runs(api, kubeconfig, run_module):
    result = ok({'names': [HOSTDEV], 'kubeconfig': kubeconfig}, run_module, check_mode=True)
    assert result['changed'] is True and result['removed'] == {'gpu-v100-01': [HOSTDEV]}
    assert result['patches'] == {'gpu-v100-01': PATCH}
    assert sent(api) == [('/api/v1/nodes/gpu-v100-01/status?dryRun=All', PATCH)]
    assert HOSTDEV in api.get('v1', 'nodes', 'gpu-v100-01')['status']['capacity']


def test_removes_only_where_present_and_nothing_else(api, kubeconfig, run_module):
    result = ok({'names': [HOSTDEV, 'rdma/hca_shared_devices_a'], 'kubeconfig': kubeconfig}, run_module)
    assert result['changed'] is True and result['api_server'] == api.url
    assert sent(api) == [('/api/v1/nodes/gpu-v100-01/status', PATCH)]
    stored = api.get('v1', 'nodes', 'gpu-v100-01')
    assert stored['status'] == {'capacity': {'cpu': '64', 'rdma/rdma_v100': '63'},
                                'allocatable': {'cpu': '64', 'rdma/rdma_v100': '63'}}
    assert stored['metadata']['labels'] == {'kubernetes.io/hostname': 'gpu-v100-01'}
    again = ok({'names': [HOSTDEV], 'kubeconfig': kubeconfig}, run_module)
    assert again['changed'] is False and len(sent(api)) == 1


def test_only_the_listed_nodes_are_read(api, kubeconfig, run_module):
    result = ok({'names': [HOSTDEV], 'nodes': ['gpu-a100-01'], 'kubeconfig': kubeconfig}, run_module)
    assert result['changed'] is False and result['removed'] == {} and result['patches'] == {}
    assert [path for m, path, _d in api.requests if m == 'GET' and '/nodes' in path] == ['/api/v1/nodes/gpu-a100-01']


def test_diff_shows_the_removed_values(api, kubeconfig, run_module):
    result = ok({'names': [HOSTDEV], 'kubeconfig': kubeconfig}, run_module, check_mode=True, diff=True)
    assert result['diff'] == {'before': {'gpu-v100-01': {'capacity': {HOSTDEV: '2'}, 'allocatable': {HOSTDEV: '2'}}},
                              'after': {'gpu-v100-01': {'capacity': {}, 'allocatable': {}}}}


def test_a_resource_gone_before_the_patch_is_read_again(api, kubeconfig, run_module):
    def device_plugin_restarts(server, method, path):
        if method == 'PATCH' and server.on_request is not None:
            server.on_request = None
            server.add('v1', 'nodes', node('gpu-v100-01', {'cpu': '64', 'rdma/rdma_v100': '63'}))
    api.on_request = device_plugin_restarts
    result = ok({'names': [HOSTDEV], 'kubeconfig': kubeconfig}, run_module)
    assert result['changed'] is False
    assert len(sent(api)) == 1  # the rejected patch (422: nothing to remove), then a fresh read and nothing to send


# ------------------------------------------------------------------ nodes of another shape

def reshape_stored_node(api, name, change):
    """Change a stored node behind the double's checks: what a proxy or a mock that rewrites answers would serve
    (kube-apiserver, like the double, refuses to hold such a node)."""
    for key, obj in api.store.items():
        if key[1] == 'nodes' and obj['metadata']['name'] == name:
            change(obj)
            return
    raise AssertionError('no node %s' % name)


@pytest.mark.parametrize('field, value, expected', [
    ('capacity', 5, 'Node gpu-v100-01: status.capacity is a number (5), not a map of resource name to quantity'),
    ('allocatable', ['nvidia.com/hostdev'], 'Node gpu-v100-01: status.allocatable is a list, not a map of resource '
                                            'name to quantity'),
    ('capacity', 'nvidia.com/hostdev', 'Node gpu-v100-01: status.capacity is a string ("nvidia.com/hostdev"), not a '
                                       'map'),
])
def test_a_resource_map_of_another_type_is_named_and_nothing_is_patched(api, kubeconfig, run_module, field, value,
                                                                        expected):
    reshape_stored_node(api, 'gpu-v100-01', lambda obj: obj['status'].__setitem__(field, value))
    for nodes in ([], ['gpu-a100-01', 'gpu-v100-01']):
        message = failed({'names': [HOSTDEV], 'nodes': nodes, 'kubeconfig': kubeconfig}, run_module)
        assert message.startswith(expected), message
        assert 'in the answer of the server at %s' % api.url in message
        assert message.endswith('check host or the kubeconfig\'s server (a proxy or a mock in the way?). Nothing was '
                                'patched.')
    assert sent(api) == []


def test_a_status_that_is_not_an_object_is_named(api, kubeconfig, run_module):
    reshape_stored_node(api, 'gpu-a100-01', lambda obj: obj.__setitem__('status', 'Ready'))
    message = failed({'names': [HOSTDEV], 'kubeconfig': kubeconfig}, run_module)
    assert message.startswith('Node gpu-a100-01: status is a string ("Ready"), not an object')
    assert sent(api) == []  # gpu-v100-01, listed first and well formed, is not patched either


def test_a_node_without_a_name_is_named(api, kubeconfig, run_module):
    reshape_stored_node(api, 'gpu-a100-01', lambda obj: obj['metadata'].__setitem__('name', 7))
    message = failed({'names': [HOSTDEV], 'kubeconfig': kubeconfig}, run_module)
    assert message.startswith('The server at %s answered a node without a metadata.name' % api.url)
    assert message.endswith('Nothing was patched.') and sent(api) == []


# ------------------------------------------------------------------ connection options, as kubernetes.core's

def test_awx_kubernetes_credential_environment(api, run_module, monkeypatch):
    """AWX's "OpenShift or Kubernetes API Bearer Token" credential injects K8S_AUTH_HOST and K8S_AUTH_API_KEY."""
    api.tokens['awx-token'] = 'system:serviceaccount:awx:runner'
    monkeypatch.setenv('K8S_AUTH_HOST', api.url)
    monkeypatch.setenv('K8S_AUTH_API_KEY', 'awx-token')
    monkeypatch.setenv('K8S_AUTH_VERIFY_SSL', 'false')
    result = ok({'names': [HOSTDEV]}, run_module)
    assert result['changed'] is True
    assert {details['headers'].get('authorization') for _m, _p, details in api.requests} == {'Bearer awx-token'}


def test_host_and_api_key_options(api, run_module):
    api.tokens['ops'] = 'ops'
    assert ok({'names': [HOSTDEV], 'host': api.url + '/', 'api_key': 'ops'}, run_module)['changed'] is True


def test_k8s_auth_kubeconfig_and_context(api, tmp_path, run_module, monkeypatch):
    path = api.kubeconfig(str(tmp_path / 'config'))
    with open(path) as handle:
        config = json.load(handle)
    # A current context that points at a dead address, and the right one chosen by name.
    config['clusters'].append({'name': 'dead', 'cluster': {'server': 'http://127.0.0.1:9'}})
    config['contexts'].append({'name': 'dead', 'context': {'cluster': 'dead', 'user': 'fake'}})
    config['current-context'] = 'dead'
    with open(path, 'w') as handle:
        json.dump(config, handle)
    monkeypatch.setenv('K8S_AUTH_KUBECONFIG', path)
    assert 'connection refused' in failed({'names': [HOSTDEV]}, run_module)
    monkeypatch.setenv('K8S_AUTH_CONTEXT', 'fake')
    assert ok({'names': [HOSTDEV]}, run_module)['changed'] is True


def test_impersonation_header_and_its_rbac(api, kubeconfig, run_module):
    api.forbid('patch', 'nodes/status', user='alice')
    message = failed({'names': [HOSTDEV], 'kubeconfig': kubeconfig, 'impersonate_user': 'alice'}, run_module)
    assert ('does not allow patching the status of node gpu-v100-01: nodes "gpu-v100-01" is forbidden: User "alice" '
            'cannot patch resource "nodes/status" in API group "" at the cluster scope. Grant the account patch on '
            'nodes/status') in message
    assert api.requests[-1][2]['headers'].get('impersonate-user') == 'alice'


def test_tls_with_and_without_the_cluster_ca(tmp_path, run_module):
    server = kube_apiserver.FakeApiServer(tls=True).start()
    try:
        server.add('v1', 'nodes', node('gpu-v100-01', {HOSTDEV: '2'}))
        without_ca = server.kubeconfig(str(tmp_path / 'no-ca'), ca=False)
        message = failed({'names': [HOSTDEV], 'kubeconfig': without_ca}, run_module)
        assert message.startswith('TLS with the Kubernetes API at %s failed: ' % server.url)
        assert 'CERTIFICATE_VERIFY_FAILED' in message and 'Set ca_cert (K8S_AUTH_SSL_CA_CERT)' in message
        assert ok({'names': [HOSTDEV], 'kubeconfig': without_ca, 'ca_cert': server.ca_path}, run_module)['changed']
    finally:
        server.stop()


# ------------------------------------------------------------------ every error path, named

def test_an_explicit_kubeconfig_that_is_missing_is_named_never_replaced(run_module, tmp_path, monkeypatch):
    monkeypatch.setenv('KUBERNETES_SERVICE_HOST', '10.96.0.1')  # as inside a pod: no silent in-cluster fallback
    monkeypatch.setenv('KUBERNETES_SERVICE_PORT', '443')
    missing = str(tmp_path / 'nope')
    message = failed({'names': [HOSTDEV], 'kubeconfig': missing}, run_module)
    assert message == ('The kubeconfig %s (from the kubeconfig option) cannot be used: %s does not exist. Point the '
                       'kubeconfig option at the cluster\'s kubeconfig file.' % (missing, missing))
    monkeypatch.setenv('K8S_AUTH_KUBECONFIG', missing)
    assert '(from K8S_AUTH_KUBECONFIG) cannot be used' in failed({'names': [HOSTDEV]}, run_module)


@pytest.mark.parametrize('text, expected', [
    ('clusters: [\n', 'is not valid YAML at line 2'),
    ('just a string\n', 'is not a kubeconfig: it has no clusters, contexts or users'),
    ('apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n',
     'cannot be used: Invalid kube-config file. Expected key current-context in '),
])
def test_a_broken_kubeconfig_is_named(tmp_path, run_module, text, expected):
    path = tmp_path / 'kubeconfig'
    path.write_text(text)
    message = failed({'names': [HOSTDEV], 'kubeconfig': str(path)}, run_module)
    assert str(path) in message and expected in message, message
    assert 'service' not in message.lower()


def test_a_kubeconfig_that_is_a_directory_or_not_utf8(tmp_path, run_module):
    assert 'is a directory, not a file' in failed({'names': [HOSTDEV], 'kubeconfig': str(tmp_path)}, run_module)
    path = tmp_path / 'latin1'
    path.write_bytes(b'clusters: [caf\xe9]\n')
    message = failed({'names': [HOSTDEV], 'kubeconfig': str(path)}, run_module)
    assert 'is not UTF-8 text (byte 0xe9 at offset 14)' in message


def test_a_context_the_kubeconfig_lacks(kubeconfig, run_module):
    message = failed({'names': [HOSTDEV], 'kubeconfig': kubeconfig, 'context': 'prod'}, run_module)
    assert message == ('The context prod is not in the kubeconfig %s (from the kubeconfig option); its contexts are: '
                       'fake. Fix context (or K8S_AUTH_CONTEXT).' % kubeconfig)


def test_no_credentials_at_all(run_module):
    message = failed({'names': [HOSTDEV]}, run_module)
    assert message.startswith('No usable Kubernetes credentials: Invalid kube-config file. No configuration found. '
                              'This is neither a pod')
    assert 'K8S_AUTH_HOST and K8S_AUTH_API_KEY' in message


def test_connection_refused(api, kubeconfig, run_module):
    api.stop()
    assert failed({'names': [HOSTDEV], 'kubeconfig': kubeconfig}, run_module) == (
        'Cannot connect to the Kubernetes API at %s: connection refused. Is the API server running, and is host or '
        'the kubeconfig\'s server the right address and port?' % api.url)


def test_credentials_refused(api, tmp_path, run_module):
    stale = api.kubeconfig(str(tmp_path / 'stale'), token='expired')
    message = failed({'names': [HOSTDEV], 'kubeconfig': stale}, run_module)
    assert message.startswith('The Kubernetes API at %s refused the credentials (401 Unauthorized) when API discovery '
                              '(/version, /apis)' % api.url)


def test_listing_nodes_forbidden(api, kubeconfig, run_module):
    api.forbid('list', 'nodes')
    message = failed({'names': [HOSTDEV], 'kubeconfig': kubeconfig}, run_module)
    assert ('does not allow listing the nodes: nodes is forbidden: User "system:admin" cannot list resource "nodes" in '
            'API group "" at the cluster scope. Grant the account list on nodes') in message


def test_a_node_that_does_not_exist(api, kubeconfig, run_module):
    message = failed({'names': [HOSTDEV], 'kubeconfig': kubeconfig, 'nodes': ['gpu-v100-01', 'gpu-h100-07']},
                     run_module)
    assert message == ('Node gpu-h100-07 does not exist in the cluster at %s (its nodes: gpu-a100-01, gpu-v100-01). '
                       'Fix nodes.' % api.url)
    assert sent(api) == []


@pytest.mark.parametrize('code, text, content_type, expected', [
    (200, '<html><body>Sign in to continue</body></html>', 'text/html',
     'did not answer the API discovery (/version, /apis) with the Kubernetes API\'s JSON (it said: <html><body>Sign in '
     'to continue</body></html>): it is not a Kubernetes API server, or a proxy or login page is in the way.'),
    (502, 'Bad Gateway', 'text/plain',
     'answered API discovery (/version, /apis) with HTTP 502 and not the Kubernetes API\'s JSON (it said: Bad '
     'Gateway). It is not a Kubernetes API server, or a proxy or login page is in the way'),
])
def test_a_server_that_answers_text(api, kubeconfig, run_module, code, text, content_type, expected):
    api.answer_text(code, text, content_type)
    message = failed({'names': [HOSTDEV], 'kubeconfig': kubeconfig}, run_module)
    assert message.startswith('The server at %s ' % api.url) and expected in message, message


def test_text_after_discovery_is_named_too(api, kubeconfig, run_module):
    """A proxy that starts answering with its page between discovery and the node list."""
    def proxy_takes_over(server, method, path):
        if path == '/api/v1/nodes':
            server.answer_text(200, 'upstream connect error', 'text/plain')
    api.on_request = proxy_takes_over
    message = failed({'names': [HOSTDEV], 'kubeconfig': kubeconfig}, run_module)
    assert message == ('The server at %s answered listing the nodes with something other than the Kubernetes API\'s '
                       'JSON (it said: upstream connect error). It is not a Kubernetes API server, or a proxy or login '
                       'page is in the way: check host or the kubeconfig\'s server.' % api.url)


def test_refuses_native_resources_before_connecting(api, kubeconfig, run_module):
    message = failed({'names': ['cpu', 'hugepages-1Gi', 'kubernetes.io/batteries', HOSTDEV], 'kubeconfig': kubeconfig},
                     run_module)
    assert message.startswith('names: cpu is not an extended resource')
    assert 'hugepages-1Gi is not an extended resource' in message
    assert 'kubernetes.io/batteries is in the kubernetes.io domain' in message
    assert api.requests == []


def test_a_kubeconfig_under_the_home_directory(api, tmp_path, run_module, monkeypatch):
    monkeypatch.setenv('HOME', str(tmp_path))
    api.kubeconfig(str(tmp_path / 'cluster.conf'))
    assert ok({'names': [HOSTDEV], 'kubeconfig': '~/cluster.conf'}, run_module)['changed'] is True
    message = failed({'names': [HOSTDEV], 'kubeconfig': '~/other.conf'}, run_module)
    assert message.startswith('The kubeconfig %s (from the kubeconfig option) cannot be used: %s does not exist.'
                              % (tmp_path / 'other.conf', tmp_path / 'other.conf'))
