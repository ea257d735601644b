# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""TEST DOUBLE of kube-apiserver (see tests/doubles/README.md).

Serves the subset of the Kubernetes REST API that the cluster-stage roles use through the
kubernetes client and kubernetes.core: discovery (/version, /api, /apis, resource lists),
GET of single objects and lists (404 Status when missing), and PATCH with a JSON merge patch
(RFC 7386) or a strategic merge patch (lists of named items such as containers and env merge by
``name``, their patch merge key) honouring ``dryRun=All`` (answered, not stored), POST (create, 409 when the
object exists), DELETE, and a pod's ``log`` subresource (text from ``logs``). Every request is logged.
An optional hook reacts to stored changes, standing in for an operator.
"""

from __future__ import annotations

import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

# (group, version) -> [(plural, kind, namespaced)]
RESOURCES = {
    ('', 'v1'): [('nodes', 'Node', False), ('namespaces', 'Namespace', False), ('pods', 'Pod', True),
                 ('pods/log', 'Pod', True), ('services', 'Service', True)],
    ('apps', 'v1'): [('daemonsets', 'DaemonSet', True), ('deployments', 'Deployment', True)],
    ('apiextensions.k8s.io', 'v1'): [('customresourcedefinitions', 'CustomResourceDefinition', False)],
    ('mellanox.com', 'v1alpha1'): [
        ('nicclusterpolicies', 'NicClusterPolicy', False), ('hostdevicenetworks', 'HostDeviceNetwork', False)],
}


def merge_patch(target, patch, merge_lists=False):
    """RFC 7386: objects merge recursively, null deletes, everything else (lists too) replaces.

    With ``merge_lists`` (Kubernetes strategic merge, for the lists these roles patch), lists whose items all
    have a ``name`` - containers, env - merge item by item on that name.
    """
    if merge_lists and isinstance(patch, list) and isinstance(target, list) and all(
            isinstance(item, dict) and 'name' in item for item in patch + target):
        result = [copy.deepcopy(item) for item in target]
        for item in patch:
            names = [existing['name'] for existing in result]
            if item['name'] in names:
                position = names.index(item['name'])
                result[position] = merge_patch(result[position], item, merge_lists)
            else:
                result.append(copy.deepcopy(item))
        return result
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value, merge_lists)
    return result


def strategic_merge_patch(target, patch):
    return merge_patch(target, patch, merge_lists=True)


PATCHES = {'application/merge-patch+json': merge_patch, 'application/strategic-merge-patch+json': strategic_merge_patch}


class FakeApiServer(object):
    """Objects keyed by (group/version, plural, name); start() serves them on 127.0.0.1."""

    def __init__(self, on_change=None):
        self.objects = {}
        self.logs = {}
        self.requests = []
        self.on_change = on_change
        self._server = None

    def add(self, group_version, plural, obj):
        self.objects[(group_version, plural, obj['metadata']['name'])] = copy.deepcopy(obj)

    def get(self, group_version, plural, name):
        return self.objects.get((group_version, plural, name))

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self._server.server_address[1]

    def start(self):
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _route(self):
                url = urlparse(self.path)
                parts = [p for p in url.path.split('/') if p]
                if parts[:1] == ['api']:
                    group, rest = '', parts[1:]
                elif parts[:1] == ['apis']:
                    group, rest = (parts[1], parts[2:]) if len(parts) > 1 else (None, [])
                else:
                    return None
                if rest[1:2] == ['namespaces'] and len(rest) > 3:  # objects are keyed by name alone here
                    rest = [rest[0]] + rest[3:]
                return group, rest, parse_qs(url.query)

            def do_GET(self):  # noqa: N802 - http.server's naming
                api.requests.append(('GET', self.path, None))
                url = urlparse(self.path)
                if url.path == '/version':
                    return self._send(200, {'major': '1', 'minor': '30', 'gitVersion': 'v1.30.0'})
                if url.path == '/api':
                    return self._send(200, {'kind': 'APIVersions', 'versions': ['v1'], 'serverAddressByClientCIDRs': []})
                if url.path == '/apis':
                    groups = sorted(set(g for g, _v in RESOURCES if g))
                    return self._send(200, {'kind': 'APIGroupList', 'apiVersion': 'v1', 'groups': [{
                        'name': g, 'versions': [{'groupVersion': '%s/%s' % (g, v), 'version': v}
                                                for gg, v in RESOURCES if gg == g],
                        'preferredVersion': {'groupVersion': '%s/%s' % (g, [v for gg, v in RESOURCES if gg == g][0]),
                                             'version': [v for gg, v in RESOURCES if gg == g][0]}} for g in groups]})
                group, rest, _query = self._route() or (None, [], {})
                if not rest:
                    return self._send(404, {'kind': 'Status', 'code': 404})
                version = rest[0]
                group_version = '%s/%s' % (group, version) if group else version
                kinds = RESOURCES.get((group or '', version))
                if kinds is None:
                    return self._send(404, {'kind': 'Status', 'code': 404})
                if len(rest) == 1:
                    return self._send(200, {'kind': 'APIResourceList', 'apiVersion': 'v1', 'groupVersion': group_version,
                                            'resources': [{'name': plural, 'singularName': kind.lower(),
                                                           'namespaced': namespaced, 'kind': kind,
                                                           'verbs': ['get', 'list', 'patch', 'create', 'update']}
                                                          for plural, kind, namespaced in kinds]})
                plural = rest[1]
                kind = dict((p, k) for p, k, _n in kinds).get(plural)
                if len(rest) == 2:
                    items = [o for (gv, p, _n), o in sorted(api.objects.items()) if gv == group_version and p == plural]
                    return self._send(200, {'kind': kind + 'List', 'apiVersion': group_version,
                                            'metadata': {'resourceVersion': '1'}, 'items': items})
                obj = api.get(group_version, plural, rest[2])
                if obj is None:
                    return self._send(404, {'kind': 'Status', 'apiVersion': 'v1', 'status': 'Failure', 'code': 404,
                                            'reason': 'NotFound', 'message': '%s "%s" not found' % (plural, rest[2])})
                if rest[3:] == ['log']:
                    data = api.logs.get(rest[2], '').encode()
                    self.send_response(200)
                    self.send_header('Content-Type', 'text/plain')
                    self.send_header('Content-Length', str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return None
                return self._send(200, obj)

            def do_POST(self):  # noqa: N802 - http.server's naming
                length = int(self.headers.get('Content-Length') or 0)
                body = json.loads(self.rfile.read(length) or b'null')
                api.requests.append(('POST', self.path, {'body': body}))
                group, rest, query = self._route()
                group_version = '%s/%s' % (group, rest[0]) if group else rest[0]
                if api.get(group_version, rest[1], body['metadata']['name']) is not None:
                    return self._send(409, {'kind': 'Status', 'code': 409, 'reason': 'AlreadyExists'})
                created = copy.deepcopy(body)
                created['metadata']['resourceVersion'] = '1'
                if query.get('dryRun') != ['All']:
                    api.add(group_version, rest[1], created)
                    if api.on_change:
                        api.on_change(api, group_version, rest[1], created)
                return self._send(201, created)

            def do_DELETE(self):  # noqa: N802 - http.server's naming
                api.requests.append(('DELETE', self.path, None))
                group, rest, _query = self._route()
                group_version = '%s/%s' % (group, rest[0]) if group else rest[0]
                obj = api.objects.pop((group_version, rest[1], rest[2]), None)
                if obj is None:
                    return self._send(404, {'kind': 'Status', 'code': 404, 'reason': 'NotFound'})
                return self._send(200, {'kind': 'Status', 'apiVersion': 'v1', 'status': 'Success'})

            def do_PATCH(self):  # noqa: N802 - http.server's naming
                length = int(self.headers.get('Content-Length') or 0)
                body = json.loads(self.rfile.read(length) or b'null')
                api.requests.append(('PATCH', self.path, {'content_type': self.headers.get('Content-Type'),
                                                          'body': body}))
                group, rest, query = self._route()
                group_version = '%s/%s' % (group, rest[0]) if group else rest[0]
                obj = api.get(group_version, rest[1], rest[2])
                if obj is None:
                    return self._send(404, {'kind': 'Status', 'code': 404, 'reason': 'NotFound'})
                apply_patch = PATCHES.get(self.headers.get('Content-Type'))
                if apply_patch is None:
                    return self._send(415, {'kind': 'Status', 'code': 415,
                                            'message': 'only merge and strategic merge patches here'})
                patched = apply_patch(obj, body)
                patched['metadata']['resourceVersion'] = str(int(obj['metadata'].get('resourceVersion', '1')) + 1)
                if query.get('dryRun') != ['All']:
                    api.add(group_version, rest[1], patched)
                    if api.on_change:
                        api.on_change(api, group_version, rest[1], patched)
                return self._send(200, patched)

        self._server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        self._server.shutdown()
        self._server.server_close()

    def kubeconfig(self, path):
        """Write a kubeconfig for this server (no authentication, plain HTTP)."""
        config = {'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'fake',
                  'clusters': [{'name': 'fake', 'cluster': {'server': self.url}}],
                  'users': [{'name': 'fake', 'user': {'token': 'test-double'}}],
                  'contexts': [{'name': 'fake', 'context': {'cluster': 'fake', 'user': 'fake'}}]}
        with open(path, 'w') as handle:
            json.dump(config, handle)
        return path
