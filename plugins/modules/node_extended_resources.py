#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
---
module: node_extended_resources
short_description: Remove stale extended resources from Kubernetes nodes
version_added: 0.1.0
description:
  - A device plugin that is removed or renamed (e.g. C(nvidia.com/hostdev) after moving to the RDMA shared device
    plugin) leaves its extended resource in the nodes' C(status.capacity) and C(status.allocatable); the scheduler
    keeps placing pods that request it. This removes the named resources through the node status subresource with a
    JSON patch (C(/) in a resource name escaped as C(~1)), as the InfiniBand field report's C(kubectl proxy) and
    C(curl) script does.
  - Only resources present on a node are patched; nothing else of the status is touched.
  - Connects as every C(kubernetes.core) module does, with the same options, the same C(K8S_AUTH_*) environment that
    AWX's Kubernetes credentials set and the same order (explicit options, then the in-cluster service account, then
    C(KUBECONFIG) or C(~/.kube/config)). An explicit O(kubeconfig) that cannot be used is an error naming it; it is
    never replaced by another source.
  - Failures say what happened and what to fix. They name a refused connection, a TLS failure, refused credentials
    (401), a missing permission (403, with the verb and resource RBAC needs), a node that does not exist (404), and a
    server that answers with something other than the Kubernetes API's JSON (a proxy or a login page in the way).
  - In check mode it sends the patches as server-side dry runs (C(dryRun=All)), so the API server checks them and
    the permissions without storing anything, and lists what would be removed.
author:
  - gpunet.rdma contributors (@gpunet)
requirements:
  - kubernetes (Python client) >= 24.2.0
options:
  names:
    description:
      - Extended resources to remove, e.g. V(nvidia.com/hostdev).
      - Only extended resources (C(domain/name), outside the C(kubernetes.io) domain) are accepted; C(cpu),
        C(memory), C(hugepages-*) and the like are the kubelet's own and are refused.
    type: list
    elements: str
    required: true
  nodes:
    description: Nodes to clean; empty = every node of the cluster. A node that does not exist is an error.
    type: list
    elements: str
    default: []
  request_timeout:
    description: Seconds to wait for each answer of the API server.
    type: int
    default: 60
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
notes:
  - Run it once from the controller (C(run_once), C(delegate_to=localhost)), not per node.
  - The account needs C(list) and C(get) on C(nodes) and C(patch) on C(nodes/status).
'''

EXAMPLES = r'''
- name: Remove the SR-IOV hostdev resource left by the old NicClusterPolicy
  gpunet.rdma.node_extended_resources:
    names: [nvidia.com/hostdev]
  delegate_to: localhost
  run_once: true

- name: The same with the kubeconfig and context of the kubernetes.core tasks
  gpunet.rdma.node_extended_resources:
    names: [nvidia.com/hostdev, rdma/hca_shared_devices_a]
    nodes: [gpu-v100-01, gpu-v100-02]
    kubeconfig: ~/.kube/gpu-cluster
    context: admin@gpu-cluster
  delegate_to: localhost
  run_once: true

# Under AWX, a Kubernetes credential sets K8S_AUTH_HOST, K8S_AUTH_API_KEY, K8S_AUTH_VERIFY_SSL and
# K8S_AUTH_SSL_CA_CERT; no option is needed.
'''

RETURN = r'''
removed:
  description: Per node, the resources removed (or, in check mode, that would be removed).
  returned: always
  type: dict
  sample: {gpu-v100-01: [nvidia.com/hostdev]}
patches:
  description: Per node, the JSON patch sent (or, in check mode, sent as a dry run).
  returned: always
  type: dict
  sample: {gpu-v100-01: [{op: remove, path: /status/capacity/nvidia.com~1hostdev}]}
api_server:
  description: The URL of the API server the module talked to.
  returned: always
  type: str
  sample: https://10.0.0.1:6443
'''

import copy
import json
import os
import pwd
import re
import traceback

from urllib.parse import quote

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import HostReadError, printable, read_text
from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._network_operator import stale_resource_patch

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
    KUBERNETES_CORE_IMPORT_ERROR = None
except ImportError:  # pragma: no cover - kubernetes.core is a dependency of the collection
    KUBERNETES_CORE_IMPORT_ERROR = traceback.format_exc()
    AUTH_ARG_SPEC = {}
    AnsibleK8SModule = None

try:
    import kubernetes
    import urllib3
    from kubernetes.client.rest import ApiException
    from urllib3.exceptions import HTTPError as Urllib3Error, MaxRetryError, ProtocolError
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException
    KUBERNETES_IMPORT_ERROR = None
except ImportError:  # pragma: no cover - AnsibleK8SModule reports the missing client
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()

    class ApiException(Exception):
        """Stands in for the kubernetes client's exception: never raised without the client."""

    class CoreException(Exception):
        """Stands in for kubernetes.core's exception."""

    class Urllib3Error(Exception):
        """Stands in for urllib3's base exception."""

    class MaxRetryError(Urllib3Error):
        """Stands in for urllib3's MaxRetryError."""

    class ProtocolError(Urllib3Error):
        """Stands in for urllib3's ProtocolError."""

try:
    import yaml
except ImportError:  # pragma: no cover - AnsibleK8SModule requires PyYAML
    yaml = None

# Resources the kubelet reports itself: never extended resources, never to be removed by this module.
NATIVE_RESOURCES = ('cpu', 'memory', 'ephemeral-storage', 'pods', 'storage')
QUALIFIED_NAME = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/'
                            r'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$')


class ClusterError(Exception):
    """A failure to talk to the cluster, worded for the user: what happened and what to fix."""


class PatchRejected(ClusterError):
    """422 on a patch: it no longer applies (the node changed since it was read)."""


def argument_spec():
    spec = copy.deepcopy(AUTH_ARG_SPEC)
    # kubernetes.core hides the kubeconfig option as a whole (it may be a mapping with credentials), which hides a
    # path too, so that no message could name the file that is wrong. Here a path is shown; a mapping's user
    # credentials are hidden (hide_kubeconfig_credentials).
    spec['kubeconfig'] = dict(spec.get('kubeconfig') or {'type': 'raw'}, no_log=False)
    spec.update(
        names=dict(type='list', elements='str', required=True),
        nodes=dict(type='list', elements='str', default=[]),
        request_timeout=dict(type='int', default=60),
    )
    return spec


def hide_kubeconfig_credentials(module):
    """The credentials of a kubeconfig given as a mapping are no_log values, as the whole option is elsewhere."""
    value = module.params.get('kubeconfig')
    if not isinstance(value, dict):
        return
    secrets = set()

    def collect(node):
        if isinstance(node, dict):
            for item in node.values():
                collect(item)
        elif isinstance(node, list):
            for item in node:
                collect(item)
        elif isinstance(node, str) and node:
            secrets.add(node)
    for user in value.get('users') or []:
        collect(user.get('user') if isinstance(user, dict) else None)
    for cluster in value.get('clusters') or []:
        if isinstance(cluster, dict) and isinstance(cluster.get('cluster'), dict):
            collect(cluster['cluster'].get('certificate-authority-data'))
    module._module.no_log_values.update(secrets)


def check_names(names):
    """Only extended resources: a native one (cpu, memory, hugepages-2Mi) removed from a node is a broken node."""
    problems = []
    for name in names:
        if name in NATIVE_RESOURCES or name.startswith('hugepages-') or '/' not in name:
            problems.append('%s is not an extended resource (extended resources are named domain/name, e.g. '
                            'nvidia.com/hostdev); the kubelet owns it' % name)
        elif name.split('/')[0] == 'kubernetes.io' or name.split('/')[0].endswith('.kubernetes.io'):
            problems.append('%s is in the kubernetes.io domain, which Kubernetes reserves for its own resources'
                            % name)
        elif len(name.split('/')[1]) > 63 or not QUALIFIED_NAME.match(name):
            problems.append('%s is not a valid resource name (domain/name: a DNS subdomain, then up to 63 '
                            'alphanumeric characters, "-", "_" or ".")' % name)
    return problems


def explicit_kubeconfig(module):
    """``(value, where it came from)`` of a kubeconfig given on purpose: the option, else K8S_AUTH_KUBECONFIG."""
    if module.params.get('kubeconfig') is not None:
        return module.params['kubeconfig'], 'the kubeconfig option'
    if os.environ.get('K8S_AUTH_KUBECONFIG'):
        return os.environ['K8S_AUTH_KUBECONFIG'], 'K8S_AUTH_KUBECONFIG'
    return None, None


def home_path(path):
    """``~/config`` or ``~user/config`` with the home directory, as the kubernetes client reads a kubeconfig path."""
    if not path.startswith('~'):
        return path
    user, slash, rest = path[1:].partition('/')
    try:
        home = pwd.getpwnam(user).pw_dir if user else (os.environ.get('HOME') or pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        return path
    return home.rstrip('/') + '/' + rest if slash else home


def check_kubeconfig(module):
    """An explicit kubeconfig must be usable: every file readable, YAML, a kubeconfig, with the context asked for.

    The kubernetes client skips a missing file of a path list silently, and a failure would otherwise be reported
    in its own words; checking first names the file and the fix.
    """
    value, source = explicit_kubeconfig(module)
    if value is None:
        return
    context = module.params.get('context') or os.environ.get('K8S_AUTH_CONTEXT')
    documents = []
    if isinstance(value, dict):
        documents.append(('the kubeconfig given as a mapping', value))
    elif isinstance(value, str):
        for path in [home_path(p) for p in value.split(os.pathsep) if p]:
            try:
                text = read_text(path)
            except HostReadError as exc:
                raise ClusterError('The kubeconfig %s (from %s) cannot be used: %s. Point %s at the cluster\'s '
                                   'kubeconfig file.' % (path, source, exc, source))
            try:
                documents.append((path, yaml.safe_load(text)))
            except yaml.YAMLError as exc:
                mark = getattr(exc, 'problem_mark', None)
                raise ClusterError('The kubeconfig %s (from %s) is not valid YAML%s: %s. Fix the file or point %s at '
                                   'another.' % (path, source, ' at line %d' % (mark.line + 1) if mark else '',
                                                 printable(getattr(exc, 'problem', None) or exc, 200), source))
    else:
        raise ClusterError('The kubeconfig option must be a path or a kubeconfig mapping, not a %s.'
                           % type(value).__name__)
    contexts = []
    for where, document in documents:
        if not isinstance(document, dict) or not any(k in document for k in ('clusters', 'contexts', 'users')):
            raise ClusterError('The kubeconfig %s (from %s) is not a kubeconfig: it has no clusters, contexts or '
                               'users. Point %s at the file kubectl uses (kubectl config view --raw).'
                               % (where, source, source))
        for entry in document.get('contexts') or []:
            if isinstance(entry, dict) and isinstance(entry.get('name'), str):
                contexts.append(entry['name'])
    if context and context not in contexts:
        raise ClusterError('The context %s is not in the kubeconfig %s (from %s); its contexts are: %s. Fix context '
                           '(or K8S_AUTH_CONTEXT).' % (context, value if isinstance(value, str) else 'mapping',
                                                       source, ', '.join(contexts) or 'none'))


def default_server(module):
    """The URL requests go to, for messages: the host option/environment, else the loaded kubeconfig's."""
    host = module.params.get('host') or os.environ.get('K8S_AUTH_HOST')
    if host:
        return host.rstrip('/')
    try:
        return kubernetes.client.Configuration.get_default_copy().host or 'the Kubernetes API server'
    except Exception:  # pylint: disable=broad-except
        # only for a message: any failure leaves it out
        return 'the Kubernetes API server'


def status_message(body):
    """The ``message`` of a Kubernetes Status body, or None when the body is not one (not JSON, not a Status)."""
    try:
        status = json.loads(body) if isinstance(body, (str, bytes)) else body
    except ValueError:
        return None
    if isinstance(status, dict) and status.get('kind') == 'Status':
        return status.get('message') or status.get('reason') or ''
    return None


def describe_http_error(exc, server, action, rbac):
    """An HTTP error of the API, in words: ``action`` is what was tried, ``rbac`` the permission it needs."""
    code = getattr(exc, 'status', None)
    body = getattr(exc, 'body', None)
    if isinstance(body, bytes):
        body = body.decode('utf-8', 'replace')
    message = status_message(body)
    if message is None:
        return ('The server at %s answered %s with HTTP %s and not the Kubernetes API\'s JSON (it said: %s). It is '
                'not a Kubernetes API server, or a proxy or login page is in the way: check host or the kubeconfig\'s '
                'server.' % (server, action, code, printable((body or '').strip(), 200) or 'nothing'))
    if code == 401:
        return ('The Kubernetes API at %s refused the credentials (401 Unauthorized) when %s: the token or client '
                'certificate is not accepted (expired or for another cluster). Renew the kubeconfig\'s user, or '
                'api_key / K8S_AUTH_API_KEY.' % (server, action))
    if code == 403:
        return ('The Kubernetes API at %s does not allow %s: %s. Grant the account %s (RBAC ClusterRole and '
                'ClusterRoleBinding), or use another account.' % (server, action, message, rbac))
    return 'The Kubernetes API at %s failed %s: HTTP %s: %s' % (server, action, code, message or exc)


def describe_connection_error(exc, server):
    reason = getattr(exc, 'reason', None) or exc
    text = str(reason)
    if 'SSL' in type(reason).__name__ or 'ssl' in text.lower() or 'certificate' in text.lower():
        return ('TLS with the Kubernetes API at %s failed: %s. Set ca_cert (K8S_AUTH_SSL_CA_CERT) to the cluster\'s '
                'CA or fix the kubeconfig\'s certificate-authority; validate_certs=false is only for test clusters. '
                'A server that speaks plain HTTP fails this way too: check the URL\'s scheme.'
                % (server, printable(text, 300)))
    if 'refused' in text.lower():
        return ('Cannot connect to the Kubernetes API at %s: connection refused. Is the API server running, and is '
                'host or the kubeconfig\'s server the right address and port?' % server)
    if isinstance(reason, ProtocolError) or 'aborted' in text.lower() or 'RemoteDisconnected' in text:
        return ('The server at %s closed the connection without an HTTP answer (%s): check the URL\'s scheme '
                '(https for an API server) and port.' % (server, printable(text, 200)))
    return ('Cannot connect to the Kubernetes API at %s: %s. Check host or the kubeconfig\'s server, the network and '
            'proxy settings.' % (server, printable(text, 300)))


def connect(module):
    """kubernetes.core's client for this module's options and environment; ClusterError on any failure."""
    check_kubeconfig(module)
    value, source = explicit_kubeconfig(module)
    try:
        client = get_api_client(module=module)
    except CoreException as exc:
        if value is not None:
            raise ClusterError('The kubeconfig %s (from %s) cannot be used: %s. Fix it or point %s at another.'
                               % (value if isinstance(value, str) else 'mapping', source,
                                  str(exc).replace('Could not create API client: ', '').rstrip('.'), source))
        raise ClusterError('No usable Kubernetes credentials: %s. This is neither a pod with a service account nor a '
                           'host with a kubeconfig (KUBECONFIG=%s, else ~/.kube/config). Set kubeconfig (or '
                           'K8S_AUTH_KUBECONFIG), or host with api_key (K8S_AUTH_HOST and K8S_AUTH_API_KEY, as '
                           'AWX\'s Kubernetes credential sets them).'
                           % (str(exc).replace('Could not create API client: ', '').rstrip('.'),
                              os.environ.get('KUBECONFIG') or 'unset'))
    except ApiException as exc:
        raise ClusterError(describe_http_error(exc, default_server(module), 'API discovery (/version, /apis)',
                                               'get on the discovery endpoints (system:discovery)'))
    except (MaxRetryError, Urllib3Error) as exc:
        raise ClusterError(describe_connection_error(exc, default_server(module)))
    except (ValueError, AttributeError, TypeError, KeyError) as exc:
        # kubernetes' discovery takes a text answer for JSON and fails further on (no 'groups', 'should start
        # with https://'): the server is not an API server. Show what it says instead.
        server = default_server(module)
        said = probe_text(server, module.params['request_timeout'])
        raise ClusterError('The server at %s did not answer the API discovery (/version, /apis) with the Kubernetes '
                           'API\'s JSON (%s): it is not a Kubernetes API server, or a proxy or login page is in the '
                           'way. Check host or the kubeconfig\'s server.'
                           % (server, 'it said: %s' % said if said is not None else 'the client said: %s'
                              % printable(exc, 200)))
    return client


def probe_text(server, timeout):
    """What ``server`` answers to GET /version, for a message (None when that cannot be read either).

    Sent without credentials; certificates are not verified because the text is only shown, never trusted.
    """
    try:
        pool = urllib3.PoolManager(cert_reqs='CERT_NONE', retries=False, timeout=min(timeout, 10))
        response = pool.request('GET', server.rstrip('/') + '/version')
        text = response.data.decode('utf-8', 'replace').strip()
    except Exception:  # pylint: disable=broad-except
        # only for a message: any failure leaves it out
        return None
    return printable(text, 200) or 'nothing (an empty answer)'


class Cluster(object):
    """The few node requests, through kubernetes.core's dynamic client, with errors worded by ClusterError."""

    def __init__(self, module, client):
        self.module = module
        self.client = client
        self.server = client.configuration.host

    def request(self, method, path, action, rbac, **params):
        try:
            response = self.client.client.request(method, path, serialize=False,
                                                  _request_timeout=self.module.params['request_timeout'], **params)
        except ApiException as exc:
            if getattr(exc, 'status', None) == 404 and status_message(getattr(exc, 'body', None)) is not None:
                raise LookupError(status_message(exc.body))
            if getattr(exc, 'status', None) == 422 and status_message(getattr(exc, 'body', None)) is not None:
                raise PatchRejected(describe_http_error(exc, self.server, action, rbac))
            raise ClusterError(describe_http_error(exc, self.server, action, rbac))
        except (MaxRetryError, Urllib3Error) as exc:
            raise ClusterError(describe_connection_error(exc, self.server))
        data = getattr(response, 'data', response)
        if isinstance(data, bytes):
            data = data.decode('utf-8', 'replace')
        try:
            return json.loads(data)
        except (TypeError, ValueError):
            raise ClusterError('The server at %s answered %s with something other than the Kubernetes API\'s JSON '
                               '(it said: %s). It is not a Kubernetes API server, or a proxy or login page is in the '
                               'way: check host or the kubeconfig\'s server.'
                               % (self.server, action, printable(str(data).strip(), 200) or 'nothing'))

    def nodes(self):
        listed = self.request('GET', '/api/v1/nodes', 'listing the nodes', 'list on nodes')
        items = listed.get('items') if isinstance(listed, dict) else None
        if not isinstance(items, list):
            raise ClusterError('The server at %s answered the node list without items: %s'
                               % (self.server, printable(json.dumps(listed), 200)))
        return [item for item in items if isinstance(item, dict)]

    def node(self, name):
        try:
            node = self.request('GET', '/api/v1/nodes/%s' % quote(name, safe=''), 'reading node %s' % name,
                                'get on nodes')
        except LookupError:
            known = sorted(node_name(n) for n in self.nodes())
            raise ClusterError('Node %s does not exist in the cluster at %s (its nodes: %s). Fix nodes.'
                               % (name, self.server, ', '.join(known) or 'none'))
        if not isinstance(node, dict):
            raise ClusterError('The server at %s answered node %s with %s, not a Node object. It is not a Kubernetes '
                               'API server, or a proxy is in the way: check host or the kubeconfig\'s server.'
                               % (self.server, name, shape(node)))
        return node

    def patch_status(self, name, patch, dry_run):
        params = dict(body=patch, content_type='application/json-patch+json')
        if dry_run:
            params['dry_run'] = 'All'
        return self.request('PATCH', '/api/v1/nodes/%s/status' % quote(name, safe=''),
                            'patching the status of node %s' % name, 'patch on nodes/status', **params)


def node_name(node):
    metadata = node.get('metadata') if isinstance(node.get('metadata'), dict) else {}
    return str(metadata.get('name', '?'))


def shape(value):
    """``a list``, ``an object`` or ``a number (5)``, for messages about a field of another type."""
    if isinstance(value, dict):
        return 'an object'
    if isinstance(value, list):
        return 'a list'
    kind = {bool: 'a boolean', int: 'a number', float: 'a number', str: 'a string'}.get(type(value), 'a value')
    return '%s (%s)' % (kind, printable(json.dumps(value), 60))


def node_status(node, server):
    """A node's status with its capacity and allocatable maps; ClusterError naming the node and the field otherwise.

    kube-apiserver validates both as maps of resource name to quantity, so a node of another shape did not come
    from one as it is: a proxy, a mock or a mutating layer changed it, and patching JSON pointers into it would
    remove something else or fail half way.
    """
    metadata = node.get('metadata')
    name = metadata.get('name') if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        raise ClusterError('The server at %s answered a node without a metadata.name (%s); it is not a Kubernetes '
                           'API server\'s Node: check host or the kubeconfig\'s server.'
                           % (server, printable(json.dumps(node)[:200], 200)))
    status = node.get('status')
    if status is None:
        return {}
    if not isinstance(status, dict):
        raise ClusterError('Node %s: status is %s, not an object, in the answer of the server at %s. A Kubernetes '
                           'API server\'s Node has a status object: check host or the kubeconfig\'s server (a '
                           'proxy or a mock in the way?).' % (name, shape(status), server))
    for section in ('capacity', 'allocatable'):
        value = status.get(section)
        if value is not None and not isinstance(value, dict):
            raise ClusterError('Node %s: status.%s is %s, not a map of resource name to quantity (such as '
                               '{"nvidia.com/hostdev": "2"}), in the answer of the server at %s. kube-apiserver '
                               'refuses such a node, so this is not its answer as it is: check host or the '
                               'kubeconfig\'s server (a proxy or a mock in the way?).'
                               % (name, section, shape(value), server))
    return status


def present(status, names):
    """The names of ``names`` that a node's status lists in capacity or allocatable."""
    found = []
    for section in ('capacity', 'allocatable'):
        values = status.get(section) if isinstance(status.get(section), dict) else {}
        found.extend(name for name in names if name in values)
    return sorted(set(found))


def clean(module, cluster):
    names = module.params['names']
    nodes = [cluster.node(name) for name in module.params['nodes']] if module.params['nodes'] else cluster.nodes()
    # every node is checked before the first patch: a node of another shape stops the run with nothing patched
    try:
        statuses = [(node_name(node), node_status(node, cluster.server)) for node in nodes]
    except ClusterError as exc:
        raise ClusterError('%s Nothing was patched.' % exc)
    removed, patches, before, after = {}, {}, {}, {}
    for name, status in statuses:
        patch = stale_resource_patch(status, names)
        if not patch:
            continue
        try:
            cluster.patch_status(name, patch, dry_run=module.check_mode)
        except LookupError:
            raise ClusterError('Node %s disappeared from the cluster at %s while it was being cleaned.'
                               % (name, cluster.server))
        except PatchRejected:
            # The resources changed since the node was read (its device plugin restarted): read it again, once.
            try:
                status = node_status(cluster.node(name), cluster.server)
            except ClusterError as exc:
                raise ClusterError('%s Patched before it: %s.' % (exc, ', '.join(sorted(patches)) or 'nothing'))
            patch = stale_resource_patch(status, names)
            if not patch:
                continue
            cluster.patch_status(name, patch, dry_run=module.check_mode)
        patches[name] = patch
        removed[name] = present(status, names)
        before[name] = dict((section, dict((k, v) for k, v in (status.get(section) or {}).items() if k in names))
                            for section in ('capacity', 'allocatable'))
        after[name] = {'capacity': {}, 'allocatable': {}}
    return removed, patches, before, after


def main():
    if AnsibleK8SModule is None:  # pragma: no cover
        from ansible.module_utils.basic import AnsibleModule
        module = AnsibleModule(argument_spec=dict(names=dict(type='list', elements='str', required=True)),
                               supports_check_mode=True)
        module.fail_json(msg=missing_required_lib('the kubernetes.core collection'),
                         exception=KUBERNETES_CORE_IMPORT_ERROR)
    module = AnsibleK8SModule(argument_spec=argument_spec(), supports_check_mode=True)
    hide_kubeconfig_credentials(module)
    if KUBERNETES_IMPORT_ERROR:  # pragma: no cover - AnsibleK8SModule has already refused
        module.fail_json(msg=missing_required_lib('kubernetes'), exception=KUBERNETES_IMPORT_ERROR)
    problems = check_names(module.params['names'])
    if problems:
        module.fail_json(msg='names: %s. Give the extended resources to remove, e.g. nvidia.com/hostdev.'
                         % '; '.join(problems), removed={}, patches={})
    server = None
    try:
        client = connect(module)
        cluster = Cluster(module, client)
        server = cluster.server
        removed, patches, before, after = clean(module, cluster)
    except ClusterError as exc:
        module.fail_json(msg=str(exc), removed={}, patches={}, api_server=server or default_server(module))
    result = dict(changed=bool(patches), removed=removed, patches=patches, api_server=server)
    if module._diff:
        result['diff'] = dict(before=before, after=after)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
