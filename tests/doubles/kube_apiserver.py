# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""TEST DOUBLE of kube-apiserver (see tests/doubles/README.md).

Serves, in a thread on 127.0.0.1, the part of the Kubernetes REST API that the cluster-stage roles and modules use
through the kubernetes client and kubernetes.core, and answers it as kube-apiserver does:

* discovery (``/version``, ``/api``, ``/apis``, group and resource lists); the groups of custom resources come
  from the CustomResourceDefinitions stored, as on a real server;
* real URL shapes for namespaced and cluster-scoped resources, objects keyed by namespace and name: 404 for a
  namespaced object asked for in another namespace, for a cluster-scoped resource under ``namespaces/``, for a
  namespaced one without a namespace; a create in a namespace that does not exist is refused (404);
* lists with ``labelSelector`` (``=``, ``==``, ``!=``, ``in``, ``notin``, ``key``, ``!key``, ``>``, ``<``) and
  ``fieldSelector`` (``metadata.name``, ``metadata.namespace`` and each resource's own fields, e.g.
  ``spec.nodeName`` and ``status.phase`` for pods); a selector that does not parse or an unsupported field is a 400;
* writes (POST, PUT, PATCH, DELETE) with ``dryRun=All`` validated exactly like the real request but not stored;
  ``fieldValidation`` Strict (400 on an unknown field), Warn (the default: pruned, a ``Warning`` header per field)
  and Ignore (pruned); custom resources validated against their CRD's ``openAPIV3Schema`` (422 Invalid with causes)
  and defaulted; built-in kinds checked against the Kubernetes OpenAPI schemas (kubernetes-validate); all of it with
  the double's own code (api_schemas.py), never the collection's (a gap there must not be a gap of the server);
* patches: JSON patch (RFC 6902, 422 on a failed ``test``), JSON merge patch (RFC 7386), strategic merge patch for
  built-in kinds only (lists merge on the patch merge key the Kubernetes schema declares, e.g. containers and env on
  ``name``; lists without one, such as tolerations, are replaced; custom resources answer 415 as on a real server)
  and server-side apply (``application/apply-patch+yaml``, ``fieldManager`` required, ``metadata.managedFields``
  refused in the patch, fields a manager applied before and leaves out are removed unless another manager owns them);
* field management as structured-merge-diff does it: ``metadata.managedFields`` on every object written through the
  API, one entry per manager, operation and subresource (``manager``, ``operation`` Apply for apply patches and
  Update for creates, PUTs and the other patches, ``apiVersion``, ``time``, ``fieldsType: FieldsV1``, ``fieldsV1``
  encoded as the real server encodes it: ``f:<field>``, ``k:{"name":"x"}`` for items of lists of type map (a built-in
  kind's lists with a patch merge key too, e.g. containers and env on name; tolerations are atomic; a custom
  resource's lists are atomic unless ``x-kubernetes-list-type: map``), ``v:<value>`` for sets, ``.`` where the map or
  item itself is owned, ``subresource: status`` for status writes), Apply entries first. The manager of a write
  without ``fieldManager`` is the User-Agent's program (``kubectl/v1.33.0 ...`` is ``kubectl``). An Update manager
  owns what it added or changed, an Apply manager its applied configuration; a field two appliers set to the same
  value is shared; a change takes the field from the other managers. An apply that would change a field another
  manager owns answers 409 Conflict as kube-apiserver words it (``Apply failed with 1 conflict: conflict with
  "kubectl-create" using mellanox.com/v1alpha1: .spec.ofedDriver.version``, list items as ``[name="x"]``, causes
  ``FieldManagerConflict``), dry runs too; ``force=true`` takes the fields. An object without managedFields (a
  test's set-up, ``add``) belongs to ``before-first-apply`` at its first apply, as on a real server. Not modelled:
  the cap of ten Update managers, managers of other API versions, the ownership of built-in kinds' defaults (the
  double does not default them);
* the ``status`` subresource (writes to it change only the status, writes to the object leave the status alone),
  a pod's ``log``, resourceVersion incremented on every change, 409 Conflict on a stale resourceVersion, 409
  AlreadyExists, Status bodies shaped as kube-apiserver's.

* OpenAPI v3 (``/openapi/v3`` and one document per group-version, with each kind's operations and the CRDs'
  schemas), which kubectl and helm read before they write; protobuf request bodies
  (``application/vnd.kubernetes.protobuf``) of Secrets and ConfigMaps, as helm's release storage sends them (415 for
  custom resources, as the real server answers).

As a process (``python kube_apiserver.py start DIR [--crd FILE] [--objects FILE] [--operator FILE]``, then ``stop
DIR``; the molecule scenarios of the cluster roles): HTTPS on a free port of 127.0.0.1, ``DIR/kubeconfig`` written
once it answers, every request in ``DIR/audit.jsonl`` as kube-apiserver's audit log records it (level Request,
stage RequestReceived), the ``on_change`` of the operator file standing in for an operator.

Behaviours for error tests: ``tokens`` (anything else is 401 Unauthorized), ``forbid()`` (403 Forbidden for a verb on
a resource, as RBAC words it), ``answer_text()`` (every request answered with non-JSON text, e.g. a proxy's HTML
page), ``stop()`` (connections refused), ``tls=True`` (HTTPS with a self-signed certificate). Every request is
logged in ``requests``; ``on_change`` reacts to stored changes, standing in for an operator; ``admission`` holds
validating admission webhooks a test stands in for (an operator's own), their denials worded as kube-apiserver's;
``mutating`` holds mutating admission webhooks (Spiderpool's resource injection) applied to creates.
"""

from __future__ import annotations

import argparse
import base64
import copy
import datetime
import hashlib
import json
import os
import re
import runpy
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse

import yaml

# The double judges objects with its own schema code (api_schemas, next to this file), never with the collection's:
# a gap in the collection's validation must not be a gap of the API server the roles are tested against.
if os.path.dirname(os.path.abspath(__file__)) not in sys.path:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import api_schemas  # noqa: E402  pylint: disable=wrong-import-position

KUBERNETES_VERSION = '1.33'
DEFAULT_TOKEN = 'test-double'
DEFAULT_NAMESPACES = ('default', 'kube-system', 'kube-public', 'kube-node-lease')

# Built-in resources: (group, version, plural, kind, namespaced, subresources).
BUILTIN = [
    ('', 'v1', 'namespaces', 'Namespace', False, ('status',)),
    ('', 'v1', 'nodes', 'Node', False, ('status',)),
    ('', 'v1', 'pods', 'Pod', True, ('status', 'log', 'eviction')),
    ('', 'v1', 'services', 'Service', True, ('status',)),
    ('', 'v1', 'configmaps', 'ConfigMap', True, ()),
    ('', 'v1', 'secrets', 'Secret', True, ()),
    ('', 'v1', 'serviceaccounts', 'ServiceAccount', True, ()),
    ('', 'v1', 'events', 'Event', True, ()),
    ('apps', 'v1', 'daemonsets', 'DaemonSet', True, ('status',)),
    ('apps', 'v1', 'deployments', 'Deployment', True, ('status',)),
    ('batch', 'v1', 'jobs', 'Job', True, ('status',)),
    ('policy', 'v1', 'poddisruptionbudgets', 'PodDisruptionBudget', True, ('status',)),
    ('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', False, ('status',)),
]
# Field selectors each resource supports besides metadata.name (and metadata.namespace when namespaced); the API
# server answers 400 "field label not supported" to any other (pkg/registry/*/strategy.go, GetAttrs).
FIELD_SELECTORS = {
    'pods': ('spec.nodeName', 'spec.restartPolicy', 'spec.schedulerName', 'spec.serviceAccountName',
             'spec.hostNetwork', 'status.phase', 'status.podIP', 'status.podIPs', 'status.nominatedNodeName'),
    'nodes': ('spec.unschedulable',),
    'namespaces': ('status.phase',),
    'secrets': ('type',),
    'events': ('involvedObject.kind', 'involvedObject.namespace', 'involvedObject.name', 'involvedObject.uid',
               'involvedObject.apiVersion', 'involvedObject.resourceVersion', 'involvedObject.fieldPath', 'reason',
               'reportingComponent', 'source', 'type'),
    'jobs': ('status.successful',),
}
# Built-in kinds whose spec and status are value structs: always present in what the server answers.
STRUCT_SPEC_STATUS = ('nodes', 'pods', 'namespaces', 'services', 'poddisruptionbudgets')
# Resources whose DELETE answers with the deleted object instead of a Status (ReturnDeletedObject in the registry).
RETURN_DELETED_OBJECT = ('pods', 'serviceaccounts')
PATCH_TYPES = {
    'application/json-patch+json': 'json',
    'application/merge-patch+json': 'merge',
    'application/strategic-merge-patch+json': 'strategic',
    'application/apply-patch+yaml': 'apply',
    'application/apply-patch+cbor': None,
}
VERBS = {'GET': 'get', 'POST': 'create', 'PUT': 'update', 'PATCH': 'patch', 'DELETE': 'delete'}
DNS1123_SUBDOMAIN = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
DNS1123_LABEL = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')
LABEL_NAME = re.compile(r'^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$')
LABEL_VALUE = re.compile(r'^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$')


# Set-up objects (add) already checked: sha256 of the request -> True.
CHECKED = {}


class ApiError(Exception):
    """An answer other than success: the HTTP code and the Status body kube-apiserver sends."""

    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self):
        body = {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure', 'message': self.message,
                'reason': self.reason, 'code': self.code}
        if self.details is not None:
            body['details'] = self.details
        return body


def bad_request(message):
    return ApiError(400, 'BadRequest', message)


def webhook_denied(webhook, message, code=403, reason='Forbidden'):
    """A validating admission webhook's denial as kube-apiserver answers it (webhookerrors.ToStatusErr): the
    webhook's code (controller-runtime's ``Denied`` is 403 Forbidden) and ``admission webhook "<name>" denied the
    request: <its message>``."""
    return ApiError(max(code, 400), reason, 'admission webhook "%s" denied the request: %s' % (webhook, message))


class Resource(object):
    """One REST resource: where it lives and what it is."""

    def __init__(self, group, version, plural, kind, namespaced, subresources, crd_version=None):
        self.group, self.version, self.plural, self.kind = group, version, plural, kind
        self.namespaced, self.subresources, self.crd_version = namespaced, tuple(subresources), crd_version
        # the CRD version's openAPIV3Schema: what prunes, defaults and validates the custom resources
        self.schema = api_schemas.StructuralSchema(crd_version['schema']['openAPIV3Schema']) if crd_version else None

    @property
    def group_version(self):
        return '%s/%s' % (self.group, self.version) if self.group else self.version

    @property
    def qualified(self):
        """``pods`` / ``nicclusterpolicies.mellanox.com``: how messages name the resource."""
        return '%s.%s' % (self.plural, self.group) if self.group else self.plural

    @property
    def qualified_kind(self):
        return '%s.%s' % (self.kind, self.group) if self.group else self.kind

    @property
    def custom(self):
        return self.crd_version is not None

    def not_found(self, name):
        details = {'name': name, 'kind': self.plural}
        if self.group:
            details['group'] = self.group
        return ApiError(404, 'NotFound', '%s "%s" not found' % (self.qualified, name), details)


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


# ------------------------------------------------------------------------------------------------ selectors

def _split_outside_parentheses(text):
    parts, depth, current = [], 0, ''
    for char in text:
        if char == '(':
            depth += 1
        elif char == ')':
            depth -= 1
        if char == ',' and depth == 0:
            parts.append(current)
            current = ''
        else:
            current += char
    parts.append(current)
    return parts


def _check_label_key(key, selector):
    prefix, _slash, name = key.rpartition('/')
    if not key or (prefix and not DNS1123_SUBDOMAIN.match(prefix)) or len(name) > 63 or not LABEL_NAME.match(name):
        raise bad_request('unable to parse requirement: <nil>: Invalid value: "%s": name part must consist of '
                          'alphanumeric characters, \'-\', \'_\' or \'.\', and must start and end with an alphanumeric '
                          'character (in selector %r)' % (key, selector))


def _check_label_value(value, selector):
    if len(value) > 63 or not LABEL_VALUE.match(value):
        raise bad_request('unable to parse requirement: values[0]: Invalid value: "%s": a valid label must be an '
                          'empty string or consist of alphanumeric characters, \'-\', \'_\' or \'.\', and must start '
                          'and end with an alphanumeric character (in selector %r)' % (value, selector))


def parse_label_selector(selector):
    """``labelSelector`` -> ``[(key, operator, values)]`` (k8s.io/apimachinery/pkg/labels grammar); 400 otherwise."""
    requirements = []
    if not selector.strip():
        return requirements
    for part in _split_outside_parentheses(selector):
        text = part.strip()
        if not text:
            raise bad_request('found \'\', expected: !, identifier, or \'end of string\' (in selector %r)' % selector)
        match = re.match(r'^(\S+?)\s+(in|notin)\s*\(([^()]*)\)$', text)
        if match:
            key, operator = match.group(1), match.group(2)
            values = [v.strip() for v in match.group(3).split(',')]
            if values == ['']:
                raise bad_request('for \'in\', \'notin\' operators, values set can\'t be empty (in selector %r)'
                                  % selector)
            _check_label_key(key, selector)
            for value in values:
                _check_label_value(value, selector)
            requirements.append((key, operator, values))
            continue
        if text.startswith('!'):
            key = text[1:].strip()
            _check_label_key(key, selector)
            requirements.append((key, '!', []))
            continue
        match = re.match(r'^([^=!<>\s]+)\s*(==|=|!=|>|<)\s*(\S*)$', text)
        if match:
            key, operator, value = match.groups()
            _check_label_key(key, selector)
            if operator in ('>', '<'):
                if not re.match(r'^-?\d+$', value):
                    raise bad_request('unable to parse requirement: for \'Gt\', \'Lt\' operators, the value must be '
                                      'an integer (in selector %r)' % selector)
            else:
                _check_label_value(value, selector)
            requirements.append((key, '=' if operator == '==' else operator, [value]))
            continue
        if re.match(r'^[^=!<>()\s,]+$', text):
            _check_label_key(text, selector)
            requirements.append((text, 'exists', []))
            continue
        raise bad_request('unable to parse requirement: found %r, expected: \'=\', \'!=\', \'==\', \'in\', notin '
                          '(in selector %r)' % (text, selector))
    return requirements


def labels_match(labels, requirements):
    labels = labels or {}
    for key, operator, values in requirements:
        present = key in labels
        value = labels.get(key)
        if operator == '=' and (not present or value != values[0]):
            return False
        if operator == '!=' and present and value == values[0]:
            return False
        if operator == 'in' and (not present or value not in values):
            return False
        if operator == 'notin' and present and value in values:
            return False
        if operator == 'exists' and not present:
            return False
        if operator == '!' and present:
            return False
        if operator in ('>', '<'):
            if not present or not re.match(r'^-?\d+$', value or ''):
                return False
            if (operator == '>' and int(value) <= int(values[0])) or (
                    operator == '<' and int(value) >= int(values[0])):
                return False
    return True


def _unescape_field_value(value):
    return re.sub(r'\\(.)', r'\1', value)


def parse_field_selector(selector, resource, selectable=()):
    """``fieldSelector`` -> ``[(field, operator, value)]``; 400 for a field the resource does not support."""
    requirements = []
    if not selector.strip():
        return requirements
    supported = ['metadata.name'] + (['metadata.namespace'] if resource.namespaced else [])
    supported += list(FIELD_SELECTORS.get(resource.plural, ())) + list(selectable)
    for part in re.split(r'(?<!\\),', selector):
        match = re.match(r'^\s*([^=!\s]+)\s*(==|=|!=)(.*)$', part)
        if not match:
            raise bad_request('invalid selector: \'%s\'; can\'t understand \'%s\'' % (selector, part))
        field, operator, value = match.group(1), match.group(2), _unescape_field_value(match.group(3))
        if field not in supported:
            raise bad_request('field label not supported: %s' % field)
        requirements.append((field, '!=' if operator == '!=' else '=', value))
    return requirements


def field_value(obj, field):
    """The string a field selector compares: a missing field is empty, booleans are ``true``/``false``."""
    value = obj
    for part in field.split('.'):
        value = value.get(part) if isinstance(value, dict) else None
    if field == 'status.podIPs' and isinstance(value, list):
        return ','.join(str(item.get('ip', '')) for item in value if isinstance(item, dict))
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return '' if value is None else str(value)


def fields_match(obj, requirements):
    for field, operator, value in requirements:
        actual = field_value(obj, field)
        if (operator == '=') != (actual == value):
            return False
    return True


# ------------------------------------------------------------------------------------------------ patches

def _selector_matches(selector, labels):
    """A LabelSelector (``matchLabels``, ``matchExpressions``) against labels; an empty selector matches all."""
    selector = selector or {}
    for key, value in (selector.get('matchLabels') or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get('matchExpressions') or []:
        key, operator, values = expression.get('key'), expression.get('operator'), expression.get('values') or []
        if operator == 'In' and labels.get(key) not in values:
            return False
        if operator == 'NotIn' and key in labels and labels[key] in values:
            return False
        if operator == 'Exists' and key not in labels:
            return False
        if operator == 'DoesNotExist' and key in labels:
            return False
    return True


def merge_patch(target, patch):
    """RFC 7386: objects merge recursively, null deletes, everything else (lists too) replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path):
    if path == '':
        return []
    if not path.startswith('/'):
        raise ApiError(422, 'Invalid', 'the server rejected our request due to an error in our request',
                       {'causes': [{'reason': 'UnexpectedServerResponse',
                                    'message': 'JSON pointer must be empty or start with a "/": %s' % path}]})
    return [part.replace('~1', '/').replace('~0', '~') for part in path[1:].split('/')]


class JsonPatchError(Exception):
    pass


def _container(document, parts, operation, path):
    node = document
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise JsonPatchError('%s operation does not apply: doc is missing path: "%s": missing value'
                                 % (operation, path))
    return node


def _get(document, path, operation):
    parts = _pointer(path)
    if not parts:
        return document
    node = _container(document, parts, operation, path)
    key = parts[-1]
    if isinstance(node, dict) and key in node:
        return node[key]
    if isinstance(node, list) and key.isdigit() and int(key) < len(node):
        return node[int(key)]
    raise JsonPatchError('%s operation does not apply: doc is missing %s path: "%s": missing value'
                         % (operation, 'from' if operation in ('move', 'copy') else 'the', path))


def _remove(document, path, operation='remove'):
    parts = _pointer(path)
    if not parts:
        raise JsonPatchError('%s operation does not apply: cannot remove the whole document' % operation)
    node = _container(document, parts, operation, path)
    key = parts[-1]
    if isinstance(node, dict) and key in node:
        return node.pop(key)
    if isinstance(node, list) and key.isdigit() and int(key) < len(node):
        return node.pop(int(key))
    raise JsonPatchError('Unable to remove nonexistent key: %s: missing value' % key)


def _add(document, path, value, operation='add', replace=False):
    parts = _pointer(path)
    if not parts:
        return copy.deepcopy(value)
    node = _container(document, parts, operation, path)
    key = parts[-1]
    if isinstance(node, dict):
        if replace and key not in node:
            raise JsonPatchError('replace operation does not apply: doc is missing key: %s: missing value' % path)
        node[key] = copy.deepcopy(value)
    elif isinstance(node, list):
        if key == '-' and not replace:
            node.append(copy.deepcopy(value))
        elif key.isdigit() and (int(key) < len(node) or (int(key) == len(node) and not replace)):
            if replace:
                node[int(key)] = copy.deepcopy(value)
            else:
                node.insert(int(key), copy.deepcopy(value))
        else:
            raise JsonPatchError('%s operation does not apply: doc is missing path: "%s": missing value'
                                 % (operation, path))
    else:
        raise JsonPatchError('%s operation does not apply: doc is missing path: "%s": missing value'
                             % (operation, path))
    return document


def json_patch(document, operations):
    """RFC 6902 on a copy of ``document``; JsonPatchError (the API server's 422) when an operation does not apply."""
    if not isinstance(operations, list):
        raise bad_request('json: cannot unmarshal %s into Go value of type jsonpatch.Patch'
                          % ('object' if isinstance(operations, dict) else type(operations).__name__))
    result = copy.deepcopy(document)
    for operation in operations:
        if not isinstance(operation, dict) or not isinstance(operation.get('op'), str):
            raise bad_request('json: cannot unmarshal into jsonpatch.Operation: %r' % (operation,))
        op, path = operation['op'], operation.get('path')
        if not isinstance(path, str):
            raise JsonPatchError('%s operation does not apply: missing path' % op)
        if op in ('add', 'replace', 'test') and 'value' not in operation:
            raise JsonPatchError('%s operation does not apply: missing value' % op)
        if op == 'add':
            result = _add(result, path, operation['value'])
        elif op == 'remove':
            _remove(result, path)
        elif op == 'replace':
            result = _add(result, path, operation['value'], 'replace', replace=True)
        elif op in ('move', 'copy'):
            source = operation.get('from')
            if not isinstance(source, str):
                raise JsonPatchError('%s operation does not apply: missing from' % op)
            value = _remove(result, source, op) if op == 'move' else copy.deepcopy(_get(result, source, op))
            result = _add(result, path, value, op)
        elif op == 'test':
            try:
                actual = _get(result, path, op)
            except JsonPatchError:
                raise JsonPatchError('testing value %s failed: test failed' % path)
            if actual != operation['value']:
                raise JsonPatchError('testing value %s failed: test failed' % path)
        else:
            raise bad_request('Unexpected kind: %s' % op)
    return result


class StrategicMerge(object):
    """Strategic merge patch with the patch metadata of the Kubernetes OpenAPI schema of one kind."""

    def __init__(self, schema):
        self.schema = schema

    def _resolve(self, node):
        return self.schema.resolve(node) if self.schema is not None and isinstance(node, dict) else (node or {})

    def _property(self, schema, key):
        schema = self._resolve(schema)
        properties = schema.get('properties') if isinstance(schema, dict) else None
        if isinstance(properties, dict) and key in properties:
            return self._resolve(properties[key])
        additional = schema.get('additionalProperties') if isinstance(schema, dict) else None
        return self._resolve(additional) if isinstance(additional, dict) else {}

    def merge(self, target, patch, schema=None):
        schema = self._resolve(schema if schema is not None else (self.schema.root if self.schema else {}))
        if not isinstance(patch, dict):
            return copy.deepcopy(patch)
        directive = patch.get('$patch')
        if directive == 'replace':
            return dict((k, copy.deepcopy(v)) for k, v in patch.items() if k != '$patch')
        if directive == 'delete':
            return None
        if directive not in (None, 'merge'):
            raise bad_request('Unknown patch type: %s' % directive)
        result = copy.deepcopy(target) if isinstance(target, dict) else {}
        orders, deletions = {}, {}
        for key, value in patch.items():
            if key in ('$patch', '$retainKeys'):
                continue
            if key.startswith('$setElementOrder/'):
                orders[key.split('/', 1)[1]] = value
                continue
            if key.startswith('$deleteFromPrimitiveList/'):
                deletions[key.split('/', 1)[1]] = value
                continue
            if value is None:
                result.pop(key, None)
                continue
            sub = self._property(schema, key)
            if isinstance(value, list):
                result[key] = self._merge_list(result.get(key), value, sub)
            elif isinstance(value, dict):
                merged = self.merge(result.get(key), value, sub)
                if merged is None:
                    result.pop(key, None)
                else:
                    result[key] = merged
            else:
                result[key] = value
        for key, values in deletions.items():
            if isinstance(result.get(key), list):
                result[key] = [item for item in result[key] if item not in (values or [])]
        for key, order in orders.items():
            result[key] = self._order(result.get(key), order, self._property(schema, key))
        if isinstance(patch.get('$retainKeys'), list):
            result = dict((k, v) for k, v in result.items() if k in patch['$retainKeys'])
        return result

    def _merge_list(self, target, patch, schema):
        strategy = str(schema.get('x-kubernetes-patch-strategy', '')).split(',')
        key = schema.get('x-kubernetes-patch-merge-key')
        items = self._resolve(schema.get('items'))
        if any(isinstance(item, dict) and item.get('$patch') == 'replace' for item in patch):
            return [copy.deepcopy(item) for item in patch if not (isinstance(item, dict) and '$patch' in item)]
        if 'merge' not in strategy or not isinstance(target, list):
            return [self.merge(None, item, items) if isinstance(item, dict) else copy.deepcopy(item)
                    for item in patch if not (isinstance(item, dict) and item.get('$patch') == 'delete')]
        if not key:  # a list of scalars with the merge strategy (finalizers): a union
            result = copy.deepcopy(target)
            result.extend(item for item in patch if item not in result)
            return result
        result = copy.deepcopy(target)
        for item in patch:
            if not isinstance(item, dict) or key not in item:
                raise bad_request('map: %s does not contain declared merge key: %s' % (item, key))
            positions = [i for i, existing in enumerate(result) if isinstance(existing, dict)
                         and existing.get(key) == item[key]]
            if item.get('$patch') == 'delete':
                result = [existing for i, existing in enumerate(result) if i not in positions]
            elif positions:
                result[positions[0]] = self.merge(result[positions[0]], item, items)
            else:
                result.append(self.merge(None, item, items))
        return result

    def _order(self, value, order, schema):
        if not isinstance(value, list) or not isinstance(order, list):
            return value
        key = schema.get('x-kubernetes-patch-merge-key')
        ident = (lambda item: item.get(key) if isinstance(item, dict) else item) if key else (lambda item: item)
        wanted = [ident(item) for item in order]
        listed = [item for w in wanted for item in value if ident(item) == w]
        return listed + [item for item in value if ident(item) not in wanted]


def apply_merge(target, applied, schema, strategic):
    """Server-side apply's merge of an applied configuration into the live object."""
    if strategic is not None:
        return strategic.merge(target, applied)
    return _merge_maps(target, applied, schema)


def _merge_maps(target, applied, schema):
    schema = schema if isinstance(schema, dict) else {}
    if not isinstance(applied, dict):
        if isinstance(applied, list) and schema.get('x-kubernetes-list-type') == 'map' and isinstance(target, list):
            keys = schema.get('x-kubernetes-list-map-keys') or []
            result = copy.deepcopy(target)
            for item in applied:
                ident = [item.get(k) for k in keys] if isinstance(item, dict) else None
                positions = [i for i, existing in enumerate(result)
                             if isinstance(existing, dict) and [existing.get(k) for k in keys] == ident]
                if positions:
                    result[positions[0]] = _merge_maps(result[positions[0]], item, schema.get('items') or {})
                else:
                    result.append(copy.deepcopy(item))
            return result
        return copy.deepcopy(applied)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    properties = schema.get('properties') if isinstance(schema.get('properties'), dict) else {}
    for key, value in applied.items():
        sub = properties.get(key) or (schema.get('additionalProperties')
                                      if isinstance(schema.get('additionalProperties'), dict) else {})
        result[key] = _merge_maps(result.get(key), value, sub)
    return result


# ------------------------------------------------------------------------------------------------ field management

# Server-side apply's field ownership (sigs.k8s.io/structured-merge-diff, k8s.io/apiserver's fieldmanager). A field
# path is a tuple of path elements written as in fieldsV1: ``f:<field>``, ``k:<key fields as JSON>`` (an item of a
# list of type map), ``v:<value as JSON>`` (an item of a set), ``i:<index>``. A manager's set holds the paths it
# owns; a map or list item is a member itself (``.`` in fieldsV1) when it was added as a whole.
# Fields no manager owns (stripMetaManager) and the manager kube-apiserver gives the fields of an object that has
# none when it is first applied to (skipNonAppliedManager).
STRIPPED_FIELDS = frozenset([('f:apiVersion',), ('f:kind',), ('f:metadata',)] + [
    ('f:metadata', 'f:' + name) for name in ('name', 'namespace', 'creationTimestamp', 'selfLink', 'uid', 'clusterName',
                                             'generation', 'managedFields', 'resourceVersion')])
BEFORE_FIRST_APPLY = 'before-first-apply'
# The Go structs (not pointers) inside the new, empty object of a built-in kind that a create is compared with, the
# required lists in them null: no ``.`` for them in the creator's fieldsV1 (a workload's template and its spec, as in
# what kube-apiserver records for ``kubectl create``). Every built-in kind's spec and status are such structs.
_POD_TEMPLATE = {'metadata': {}, 'spec': {'containers': None}}
GO_STRUCTS = {
    'deployments': {'spec': {'template': _POD_TEMPLATE, 'strategy': {}}},
    'daemonsets': {'spec': {'template': _POD_TEMPLATE, 'updateStrategy': {}}},
    'jobs': {'spec': {'template': _POD_TEMPLATE}},
    'pods': {'spec': {'containers': None}},
}
FIELD_MANAGER_MAX_LENGTH = 128
# ObjectMeta as structured-merge-diff sees it (the same for built-in kinds and custom resources).
_STRING_MAP = {'type': 'object', 'additionalProperties': {'type': 'string'}}
META_SCHEMA = {'type': 'object', 'properties': {
    'labels': _STRING_MAP, 'annotations': _STRING_MAP,
    'finalizers': {'type': 'array', 'x-kubernetes-list-type': 'set', 'items': {'type': 'string'}},
    'ownerReferences': {'type': 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['uid'],
                        'items': {'type': 'object', 'properties': dict(
                            (name, {'type': 'string'}) for name in ('apiVersion', 'kind', 'name', 'uid',
                                                                    'controller', 'blockOwnerDeletion'))}},
    'managedFields': {'type': 'array', 'x-kubernetes-list-type': 'atomic'}}}
for _name in ('name', 'generateName', 'namespace', 'uid', 'resourceVersion', 'generation', 'creationTimestamp',
              'deletionTimestamp', 'deletionGracePeriodSeconds', 'selfLink'):
    META_SCHEMA['properties'][_name] = {'type': 'string'}


class FieldSchema(object):
    """How structured-merge-diff types one kind: struct fields, maps, lists (atomic, set, map with keys), scalars.

    ``root`` is the CRD's openAPIV3Schema or the built-in kind's OpenAPI schema, ``resolve`` follows its ``$ref``s.
    A list of a built-in kind without ``x-kubernetes-list-type`` is a map keyed by its patch merge key, a set with the
    merge strategy and no key, else atomic; a list of a custom resource without it is atomic. Where there is no schema
    (``x-kubernetes-preserve-unknown-fields``), maps are granular with every key a member, lists atomic (deduced).
    """

    def __init__(self, root, resolve=None):
        self.root = root if isinstance(root, dict) else {}
        self._resolve = resolve

    def resolve(self, node):
        node = self._resolve(node) if self._resolve is not None and isinstance(node, dict) else node
        return node if isinstance(node, dict) else None

    def child(self, node, key, top=False):
        """(schema of field ``key`` of a map, whether it is a declared struct field)."""
        if top and key == 'metadata':
            return META_SCHEMA, True
        node = self.resolve(node)
        if node is None:
            return None, False
        properties = node.get('properties') if isinstance(node.get('properties'), dict) else {}
        if key in properties:
            return properties[key], True
        additional = node.get('additionalProperties')
        return (additional if isinstance(additional, dict) else None), False

    def shape(self, node, value):
        """``('atomic',)``, ``('map',)`` or ``('list', 'map' or 'set', keys, items schema)`` of ``value`` at ``node``."""
        node = self.resolve(node)
        if node is None:  # untyped (deduced): maps are granular, lists and scalars atomic
            return ('map',) if isinstance(value, dict) else ('atomic',)
        types = node.get('type') if isinstance(node.get('type'), list) else [node.get('type')]
        if 'array' in types or 'items' in node:
            list_type = node.get('x-kubernetes-list-type')
            keys = list(node.get('x-kubernetes-list-map-keys') or [])
            if list_type is None and self._resolve is not None:  # a built-in kind: its patch strategy
                strategy = str(node.get('x-kubernetes-patch-strategy', '')).split(',')
                merge_key = node.get('x-kubernetes-patch-merge-key')
                list_type = 'atomic' if 'merge' not in strategy else ('map' if merge_key else 'set')
                keys = [merge_key] if merge_key else []
            if list_type not in ('map', 'set') or not isinstance(value, list) or (list_type == 'map' and not keys):
                return ('atomic',)
            return ('list', list_type, keys, node.get('items'))
        if isinstance(value, dict) and node.get('x-kubernetes-map-type') != 'atomic':
            return ('map',)
        return ('atomic',)


def _item_element(item, shape):
    if shape[1] == 'set' or not isinstance(item, dict):
        return 'v:' + json.dumps(item, separators=(',', ':'))
    return 'k:' + json.dumps(dict((key, item.get(key)) for key in shape[2] if key in item), sort_keys=True,
                             separators=(',', ':'))


def field_set(value, schema, node=None, path=(), out=None):
    """The paths an applied configuration sets (structured-merge-diff's ToFieldSet)."""
    out = set() if out is None else out
    node = schema.root if not path else node
    shape = schema.shape(node, value)
    if shape[0] == 'atomic':
        if path:
            out.add(path)
        return out
    if shape[0] == 'list':
        for item in value:
            child = path + (_item_element(item, shape),)
            field_set(item, schema, shape[3], child, out)
            out.add(child)
        return out
    for key, item in value.items():
        sub, declared = schema.child(node, key, top=not path)
        child = path + ('f:' + key,)
        field_set(item, schema, sub, child, out)
        if item is None or item == {} or not declared:
            out.add(child)
    return out


MISSING = object()


def _items(value, shape):
    items = {}
    for item in value if isinstance(value, list) else []:
        items.setdefault(_item_element(item, shape), item)
    return items


def compare_fields(old, new, schema, node=None, path=(), result=None):
    """``{'added', 'modified', 'removed'}`` path sets from ``old`` to ``new`` (structured-merge-diff's Compare): a
    map or list item that appears or disappears as a whole is a path of its own."""
    result = {'added': set(), 'modified': set(), 'removed': set()} if result is None else result
    node = schema.root if not path else node
    shape = schema.shape(node, old if old is not MISSING and old is not None else new)
    if shape[0] != 'atomic' and all(v is not MISSING and v is not None for v in (old, new)) and \
            schema.shape(node, new) != shape:
        shape = ('atomic',)  # the value changed its kind: a leaf
    empty = all(v is MISSING or v is None or v in ({}, []) for v in (old, new))
    if shape[0] == 'atomic' or empty:
        if path:
            if old is MISSING and new is not MISSING:
                result['added'].add(path)
            elif new is MISSING and old is not MISSING:
                result['removed'].add(path)
            elif old != new:
                result['modified'].add(path)
        return result
    if shape[0] == 'list':
        olds = _items(old, shape) if old is not MISSING else {}
        news = _items(new, shape) if new is not MISSING else {}
        for element in list(olds) + [e for e in news if e not in olds]:
            compare_fields(olds.get(element, MISSING), news.get(element, MISSING), schema, shape[3],
                           path + (element,), result)
    else:
        olds = old if isinstance(old, dict) else {}
        news = new if isinstance(new, dict) else {}
        for key in list(olds) + [k for k in news if k not in olds]:
            sub, _declared = schema.child(node, key, top=not path)
            compare_fields(olds.get(key, MISSING), news.get(key, MISSING), schema, sub, path + ('f:' + key,), result)
    if path and old is MISSING and new is not MISSING:
        result['added'].add(path)
    elif path and new is MISSING and old is not MISSING:
        result['removed'].add(path)
    return result


def fields_v1(paths):
    """A set of paths in the fieldsV1 encoding: nested ``f:``/``k:``/``v:``/``i:`` keys, ``.`` for a member that also
    has members below it; fields first, then keys, values and indices, each sorted."""
    tree = {}
    for path in paths:
        node = tree
        for element in path:
            node = node.setdefault(element, {})
        node['.'] = True

    def render(node):
        children = sorted((k for k in node if k != '.'), key=lambda k: path_order((k,)))
        rendered = {'.': {}} if node.get('.') and children else {}
        for key in children:
            rendered[key] = render(node[key])
        return rendered
    return render(tree)


def parse_fields_v1(encoded, path=()):
    """fieldsV1 -> the set of paths it stands for."""
    paths = set()
    for key, sub in (encoded or {}).items():
        if key == '.':
            paths.add(path)
        elif not sub:
            paths.add(path + (key,))
        else:
            paths |= parse_fields_v1(sub, path + (key,))
    return paths


def field_path_string(path):
    """A path as kube-apiserver's conflict messages print it: ``.spec.x``, ``[name="y"]``, ``[=v]``, ``[0]``."""
    text = ''
    for element in path:
        kind, rest = element[:2], element[2:]
        if kind == 'f:':
            text += '.' + rest
        elif kind == 'k:':
            keys = json.loads(rest)
            text += '[%s]' % ','.join('%s=%s' % (k, json.dumps(keys[k])) for k in sorted(keys))
        elif kind == 'v:':
            text += '[=%s]' % json.dumps(json.loads(rest))
        else:
            text += '[%s]' % rest
    return text


def _element_matches(element, item):
    """Whether a list item is the one a ``k:`` or ``v:`` path element names."""
    if element.startswith('v:'):
        return item == json.loads(element[2:])
    keys = json.loads(element[2:])
    return isinstance(item, dict) and all(item.get(k) == v for k, v in keys.items())


def value_at(obj, path):
    """The value at ``path`` in ``obj``; MISSING when there is none."""
    value = obj
    for element in path:
        if element.startswith('f:') and isinstance(value, dict) and element[2:] in value:
            value = value[element[2:]]
        elif element[:2] in ('k:', 'v:') and isinstance(value, list):
            found = [item for item in value if _element_matches(element, item)]
            if not found:
                return MISSING
            value = found[0]
        else:
            return MISSING
    return value


def remove_field(obj, path):
    """Remove the field or list item at ``path`` from ``obj`` (in place)."""
    parent = value_at(obj, path[:-1])
    element = path[-1]
    if element.startswith('f:') and isinstance(parent, dict):
        parent.pop(element[2:], None)
    elif isinstance(parent, list):
        parent[:] = [item for item in parent if not _element_matches(element, item)]


def prune_dropped(obj, last, owned):
    """Server-side apply's prune (in place): what the applier applied last time and leaves out now is removed with
    everything below it, unless a manager owns it or something below it."""
    kept = set(p[:i] for p in owned for i in range(1, len(p) + 1))
    candidates = set(p[:i] for p in last for i in range(1, len(p) + 1))
    for path in sorted(candidates, key=lambda p: (len(p), p)):
        if path in kept or path[0] in ('f:apiVersion', 'f:kind') or path in STRIPPED_FIELDS:
            continue
        if value_at(obj, path) is not MISSING:
            remove_field(obj, path)


def path_order(path):
    """structured-merge-diff's path order: fields, then keys, values and indices, each sorted."""
    return [('fkvi'.index(e[0]) if e[0] in 'fkvi' else 4, e) for e in path]


class Managers(object):
    """The managedFields of one object: (manager, operation, subresource) -> [apiVersion, time, set of paths]."""

    def __init__(self, entries=()):
        self.sets = {}
        for entry in entries:
            key = (entry.get('manager', ''), entry.get('operation'), entry.get('subresource', ''))
            self.sets[key] = [entry.get('apiVersion'), entry.get('time'), parse_fields_v1(entry.get('fieldsV1'))]

    @staticmethod
    def decode(entries):
        """Managers of a managedFields list; None when it is not one (the request's is then ignored)."""
        if not isinstance(entries, list) or not all(isinstance(e, dict) and e.get('operation') in ('Apply', 'Update')
                                                    and e.get('fieldsType', 'FieldsV1') == 'FieldsV1'
                                                    for e in entries):
            return None
        return Managers(entries)

    def owned(self):
        """Every path some manager owns."""
        return set().union(*[paths for _version, _time, paths in self.sets.values()])

    def encode(self):
        entries = []
        for (manager, operation, subresource), (api_version, stamp, paths) in self.sets.items():
            if not paths:
                continue
            entry = {'manager': manager, 'operation': operation, 'apiVersion': api_version}
            if stamp:
                entry['time'] = stamp
            entry.update(fieldsType='FieldsV1', fieldsV1=fields_v1(paths))
            if subresource:
                entry['subresource'] = subresource
            entries.append(entry)

        def order(entry):  # kube-apiserver's sortEncodedManagedFields
            return (entry['operation'], entry.get('time') or '', entry['manager'], entry['apiVersion'],
                    entry.get('subresource', ''))
        return sorted(entries, key=order)


def manager_from_user_agent(user_agent):
    """kube-apiserver's default field manager of a non-apply write: the User-Agent up to its first ``/``,
    printable characters only, at most 128 bytes (prefixFromUserAgent)."""
    name = ''
    for char in (user_agent or '').split('/')[0]:
        if not char.isprintable():
            continue
        if len((name + char).encode('utf-8')) > FIELD_MANAGER_MAX_LENGTH:
            break
        name += char
    return name


def describe_manager(key, api_version):
    """A manager as conflict messages name it (printManager): the time never shows, it is not in the identifier."""
    manager, operation, subresource = key
    text = json.dumps(manager)
    if subresource:
        text += ' with subresource %s' % json.dumps(subresource)
    if operation == 'Update':
        text += ' using %s' % api_version
    return text


def apply_conflict(conflicts):
    """409 Conflict as kube-apiserver answers a refused apply (NewConflictError): ``conflicts`` is
    ``[(manager description, path)]``, sorted by manager then path."""
    causes = [{'reason': 'FieldManagerConflict', 'message': 'conflict with %s' % manager,
               'field': field_path_string(path)} for manager, path in conflicts]
    if len(conflicts) == 1:
        manager, path = conflicts[0]
        message = 'Apply failed with 1 conflict: conflict with %s: %s' % (manager, field_path_string(path))
    else:
        lines = []
        for manager in sorted(set(m for m, _p in conflicts)):
            lines.append('conflicts with %s:' % manager)
            lines += ['- %s' % field_path_string(p) for m, p in conflicts if m == manager]
        message = 'Apply failed with %d conflicts: %s' % (len(conflicts), '\n'.join(lines))
    return ApiError(409, 'Conflict', message, {'causes': causes})


# ------------------------------------------------------------------------------------------------ protobuf bodies

# Clients built on client-go's typed clientsets (helm's release storage among them) send built-in objects as
# Kubernetes protobuf: the magic ``k8s\0``, then a runtime.Unknown (typeMeta, raw = the object's message). Field
# numbers from the generated.proto files of k8s.io/apimachinery (meta/v1, runtime) and k8s.io/api (core/v1).
PROTOBUF = 'application/vnd.kubernetes.protobuf'
PROTOBUF_MAGIC = b'k8s\x00'
PROTO_TIME = {1: ('seconds', 'int'), 2: ('nanos', 'int')}
PROTO_OBJECT_META = {
    1: ('name', 'string'), 2: ('generateName', 'string'), 3: ('namespace', 'string'), 4: ('selfLink', 'string'),
    5: ('uid', 'string'), 6: ('resourceVersion', 'string'), 7: ('generation', 'int'),
    8: ('creationTimestamp', 'time'), 9: ('deletionTimestamp', 'time'), 10: ('deletionGracePeriodSeconds', 'int'),
    11: ('labels', ('map', 'string')), 12: ('annotations', ('map', 'string')),
    13: ('ownerReferences', ('repeated', {5: ('apiVersion', 'string'), 1: ('kind', 'string'), 3: ('name', 'string'),
                                          4: ('uid', 'string'), 6: ('controller', 'bool'),
                                          7: ('blockOwnerDeletion', 'bool')})),
    14: ('finalizers', ('repeated', 'string')),
    17: ('managedFields', ('repeated', {1: ('manager', 'string'), 2: ('operation', 'string'),
                                        3: ('apiVersion', 'string'), 4: ('time', 'time'), 6: ('fieldsType', 'string'),
                                        7: ('fieldsV1', 'fields'), 8: ('subresource', 'string')})),
}
# The built-in kinds whose messages the double decodes: (group/version, kind) -> field table.
PROTO_KINDS = {
    ('v1', 'Secret'): {1: ('metadata', PROTO_OBJECT_META), 2: ('data', ('map', 'bytes')), 3: ('type', 'string'),
                       4: ('stringData', ('map', 'string')), 5: ('immutable', 'bool')},
    ('v1', 'ConfigMap'): {1: ('metadata', PROTO_OBJECT_META), 2: ('data', ('map', 'string')),
                          3: ('binaryData', ('map', 'bytes')), 4: ('immutable', 'bool')},
}
PROTO_UNKNOWN = {1: ('typeMeta', {1: ('apiVersion', 'string'), 2: ('kind', 'string')}), 2: ('raw', 'raw'),
                 3: ('contentEncoding', 'string'), 4: ('contentType', 'string')}


class ProtobufError(Exception):
    """A protobuf body that does not decode."""


def _varint(data, offset):
    value, shift = 0, 0
    while True:
        if offset >= len(data) or shift > 63:
            raise ProtobufError('truncated varint at byte %d' % offset)
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7f) << shift
        shift += 7
        if not byte & 0x80:
            return value, offset


def _proto_fields(data):
    """``[(number, wire type, value)]`` of one message: ints for varints, bytes for the rest."""
    fields, offset = [], 0
    while offset < len(data):
        key, offset = _varint(data, offset)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, offset = _varint(data, offset)
        elif wire == 2:
            length, offset = _varint(data, offset)
            if offset + length > len(data):
                raise ProtobufError('field %d runs past the end of the message' % number)
            value, offset = data[offset:offset + length], offset + length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, offset = data[offset:offset + size], offset + size
        else:
            raise ProtobufError('unsupported wire type %d of field %d' % (wire, number))
        fields.append((number, wire, value))
    return fields


def _proto_scalar(kind, wire, value, name):
    if kind in ('string', 'bytes', 'raw', 'fields'):
        if wire != 2:
            raise ProtobufError('field %s is not length-delimited' % name)
        if kind == 'string':
            try:
                return value.decode('utf-8')
            except UnicodeDecodeError:
                raise ProtobufError('field %s is not UTF-8' % name)
        if kind == 'bytes':
            return base64.b64encode(value).decode('ascii')
        if kind == 'fields':
            raw = dict((n, v) for n, _w, v in _proto_fields(value)).get(1, b'{}')
            return json.loads(raw.decode('utf-8'))
        return value
    if wire != 0:
        raise ProtobufError('field %s is not a varint' % name)
    if kind == 'bool':
        return bool(value)
    return value - (1 << 64) if value >= 1 << 63 else value


def proto_message(data, table):
    """One message as the JSON object the same object serialises to (Go's omitempty: zero values left out)."""
    obj = {}
    for number, wire, value in _proto_fields(data):
        if number not in table:
            continue  # a field of a newer release: ignored, as an older server's decoder ignores it
        name, kind = table[number]
        if isinstance(kind, tuple) and kind[0] == 'map':
            entry = dict((n, (w, v)) for n, w, v in _proto_fields(value))
            key = _proto_scalar('string', *entry.get(1, (2, b'')), name=name + ' key')
            obj.setdefault(name, {})[key] = _proto_scalar(kind[1], *entry.get(2, (2, b'')), name=name)
        elif isinstance(kind, tuple) and kind[0] == 'repeated':
            item = proto_message(value, kind[1]) if isinstance(kind[1], dict) else _proto_scalar(kind[1], wire, value,
                                                                                                 name)
            obj.setdefault(name, []).append(item)
        elif isinstance(kind, dict):
            obj[name] = proto_message(value, kind)
        elif kind == 'time':
            seconds = proto_message(value, PROTO_TIME).get('seconds', 0)
            if seconds:
                obj[name] = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime(
                    '%Y-%m-%dT%H:%M:%SZ')
        else:
            scalar = _proto_scalar(kind, wire, value, name)
            if scalar not in ('', 0, False) or kind == 'bool' and name == 'immutable':
                obj[name] = scalar
    return obj


def decode_protobuf(raw):
    """A Kubernetes protobuf body -> the JSON object; ProtobufError names what does not decode."""
    if not raw.startswith(PROTOBUF_MAGIC):
        raise ProtobufError('provided data does not appear to be a protobuf message, expected prefix %r'
                            % PROTOBUF_MAGIC)
    unknown = proto_message(raw[len(PROTOBUF_MAGIC):], PROTO_UNKNOWN)
    type_meta = unknown.get('typeMeta') or {}
    table = PROTO_KINDS.get((type_meta.get('apiVersion'), type_meta.get('kind')))
    if table is None:
        raise ProtobufError('the double decodes protobuf for %s only, not %s %s' % (
            ', '.join('%s %s' % key for key in sorted(PROTO_KINDS)), type_meta.get('apiVersion'),
            type_meta.get('kind')))
    obj = {'apiVersion': type_meta['apiVersion'], 'kind': type_meta['kind']}
    obj.update(proto_message(unknown.get('raw', b''), table))
    obj.setdefault('metadata', {})
    return obj


# ------------------------------------------------------------------------------------------------ OpenAPI v3

# kube-apiserver publishes one OpenAPI v3 document per group-version (GET /openapi/v3 lists them); kubectl and helm
# read it to learn that the PATCH of a kind takes fieldValidation, then leave validation to the server.
OPENAPI_PATCH_TYPES = ('application/apply-patch+yaml', 'application/json-patch+json', 'application/merge-patch+json',
                       'application/strategic-merge-patch+json')


def _openapi_gv_path(group, version):
    return 'apis/%s/%s' % (group, version) if group else 'api/%s' % version


def _openapi_schema_name(resource):
    if resource.custom:
        return '%s.%s.%s' % ('.'.join(reversed(resource.group.split('.'))), resource.version, resource.kind)
    if resource.group == 'apiextensions.k8s.io':
        return 'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.%s.%s' % (resource.version, resource.kind)
    return 'io.k8s.api.%s.%s.%s' % (resource.group.split('.')[0] or 'core', resource.version, resource.kind)


def _openapi_param(name, where, description, required=False):
    param = {'name': name, 'in': where, 'description': description, 'schema': {'type': 'string', 'uniqueItems': True}}
    if required:
        param['required'] = True
    return param


OPENAPI_WRITE_PARAMS = [
    _openapi_param('dryRun', 'query', 'When present, indicates that modifications should not be persisted.'),
    _openapi_param('fieldManager', 'query', 'A name associated with the actor or entity that is making these changes.'),
    _openapi_param('fieldValidation', 'query', 'How the server handles objects in the request containing unknown or '
                                               'duplicate fields: Ignore, Warn or Strict.'),
]
OPENAPI_FORCE = _openapi_param('force', 'query', 'Force is going to "force" Apply requests.')


def openapi_v3_document(resources, group, version, kubernetes_version):
    """The OpenAPI v3 document of one group-version: every path, operation and (for CRDs) schema; None if not served."""
    served = [r for r in resources if (r.group, r.version) == (group, version)]
    if not served:
        return None
    prefix = '/' + _openapi_gv_path(group, version)
    paths, schemas = {}, {}
    for r in served:
        gvk = {'group': r.group, 'version': r.version, 'kind': r.kind}
        schema_name = _openapi_schema_name(r)
        ref = {'$ref': '#/components/schemas/%s' % schema_name}
        if r.custom:
            schema = copy.deepcopy((r.crd_version.get('schema') or {}).get('openAPIV3Schema') or {'type': 'object'})
        else:  # the built-in kinds' schemas are not published by the double
            schema = {'type': 'object', 'description': '%s (%s).' % (r.kind, r.group_version)}
        schema['x-kubernetes-group-version-kind'] = [gvk]
        schemas[schema_name] = schema
        scope = 'Namespaced' if r.namespaced else ''
        collection = prefix + ('/namespaces/{namespace}/' if r.namespaced else '/') + r.plural
        path_params = [_openapi_param('namespace', 'path', 'object name and auth scope', True)] if r.namespaced else []
        item_params = [_openapi_param('name', 'path', 'name of the %s' % r.kind, True)] + path_params
        patch_types = [t for t in OPENAPI_PATCH_TYPES if not (r.custom and 'strategic' in t)]

        # the loop's values bound as defaults (a closure per resource); the dicts are never changed
        def operation(action, verb, params=(), body_types=None, sub='', resource=r, gvk=gvk, ref=ref,  # pylint: disable=dangerous-default-value
                      scope=scope):
            op = {'tags': [resource.group_version.replace('/', '_')],
                  'operationId': '%s%s%s%s' % (verb, scope, resource.kind, sub), 'parameters': list(params),
                  'responses': {'200': {'description': 'OK', 'content': {'application/json': {'schema': ref}}},
                                '401': {'description': 'Unauthorized'}},
                  'x-kubernetes-action': action, 'x-kubernetes-group-version-kind': gvk}
            if body_types:
                op['requestBody'] = {'content': dict((t, {'schema': ref}) for t in body_types), 'required': True}
            return op

        plain = ('application/json', 'application/yaml')
        paths[collection] = {'get': operation('list', 'list'),
                             'post': operation('post', 'create', OPENAPI_WRITE_PARAMS, plain),
                             'delete': operation('deletecollection', 'deleteCollection'), 'parameters': path_params}
        paths[collection + '/{name}'] = {
            'get': operation('get', 'read'), 'put': operation('put', 'replace', OPENAPI_WRITE_PARAMS, plain),
            'patch': operation('patch', 'patch', OPENAPI_WRITE_PARAMS + [OPENAPI_FORCE], patch_types),
            'delete': operation('delete', 'delete', OPENAPI_WRITE_PARAMS[:1]), 'parameters': item_params}
        for sub in r.subresources:
            suffix = sub[0].upper() + sub[1:]
            if sub == 'eviction':
                paths[collection + '/{name}/eviction'] = {
                    'post': operation('post', 'create', OPENAPI_WRITE_PARAMS, plain, sub=suffix),
                    'parameters': item_params}
                continue
            if sub == 'log':
                paths[collection + '/{name}/log'] = {'get': operation('get', 'read', [
                    _openapi_param('container', 'query', 'The container for which to stream logs.'),
                    _openapi_param('tailLines', 'query', 'The number of lines from the end of the logs to show.')],
                    sub=suffix), 'parameters': item_params}
            else:
                paths['%s/{name}/%s' % (collection, sub)] = {
                    'get': operation('get', 'read', sub=suffix),
                    'put': operation('put', 'replace', OPENAPI_WRITE_PARAMS, plain, sub=suffix),
                    'patch': operation('patch', 'patch', OPENAPI_WRITE_PARAMS + [OPENAPI_FORCE], patch_types,
                                       sub=suffix),
                    'parameters': item_params}
    return {'openapi': '3.0.0', 'info': {'title': 'Kubernetes', 'version': 'v%s.0' % kubernetes_version},
            'paths': paths, 'components': {'schemas': schemas}}


# ------------------------------------------------------------------------------------------------ the server

class FakeApiServer(object):
    """The API server's state; ``start()`` serves it on 127.0.0.1 (HTTPS with ``tls=True``)."""

    def __init__(self, on_change=None, kubernetes_version=KUBERNETES_VERSION, tls=False):
        self.store = {}
        self.logs = {}
        self.requests = []
        self.errors = []
        self.connections = set()
        self.on_change = on_change
        self.on_request = None
        # Validating admission webhooks: callables (api, operation, resource, obj, old) raising webhook_denied();
        # called for CREATE and UPDATE of the object (not its status), dry runs included, after schema validation.
        self.admission = []
        # Mutating admission webhooks (a CNI's resource injection): callables (api, operation, resource, obj)
        # returning the object to store, or None to leave it; called for CREATE, dry runs included, before the
        # object is decoded and validated, so that what they add is validated like the rest of the request.
        self.mutating = []
        self.kubernetes_version = kubernetes_version
        self.tokens = {DEFAULT_TOKEN: 'system:admin'}
        self.forbidden = []
        self.text_answer = None
        self.tls = tls
        self.ca_path = None
        self.revision = 0
        self._resources = None
        self.lock = threading.RLock()
        self._server = None
        self._tls_dir = None
        for name in DEFAULT_NAMESPACES:
            self.add('v1', 'namespaces', {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': name}})

    # ---------------------------------------------------------------- resources

    def resources(self):
        """Every served resource: the built-in ones and those of the stored CRDs."""
        crds = sorted((key, crd) for key, crd in self.store.items() if key[1] == 'customresourcedefinitions')
        state = [(key, crd['metadata'].get('resourceVersion')) for key, crd in crds]
        if self._resources is not None and self._resources[0] == state:
            return self._resources[1]
        found = [Resource(*row) for row in BUILTIN]
        for _key, crd in crds:
            for group, version, kind, plural, scope, _schema, document in api_schemas.served_versions(crd):
                subresources = ['status'] if 'status' in (document.get('subresources') or {}) else []
                found.append(Resource(group, version, plural, kind, scope == 'Namespaced', subresources,
                                      crd_version=document))
        self._resources = (state, found)
        return found

    def resource(self, group_version, plural):
        group, _slash, version = group_version.rpartition('/')
        for resource in self.resources():
            if (resource.group, resource.version, resource.plural) == (group, version, plural):
                return resource
        raise KeyError('%s %s is not served' % (group_version, plural))

    def _key(self, resource, namespace, name):
        return (resource.group, resource.plural, namespace or '', name)

    def _next_revision(self):
        self.revision += 1
        return str(self.revision)

    # ---------------------------------------------------------------- test set-up and inspection

    def add(self, group_version, plural, obj, manager=None, subresource=None):
        """Store ``obj`` for a test's set-up, status included; a namespace it names is created when missing.

        The object is checked as a create would check it (schema, unknown fields, name), so that a test cannot set
        up what no API server would hold; ApiError says what is wrong. Its ``metadata.managedFields`` are kept as
        given, else those of the object it replaces; with ``manager`` the change is also recorded as that manager's
        Update (``subresource='status'`` for a status write), as the write of an operator or a kubectl would be. An
        object without managedFields is one no manager owns: the first apply gives its fields to before-first-apply.
        """
        with self.lock:
            resource = self.resource(group_version, plural)
            digest = hashlib.sha256(json.dumps([group_version, plural, obj], sort_keys=True).encode()).hexdigest()
            obj = copy.deepcopy(obj)
            metadata = obj.setdefault('metadata', {})
            namespace = metadata.get('namespace') if resource.namespaced else None
            if resource.namespaced:
                namespace = metadata.setdefault('namespace', 'default')
                if self.get('v1', 'namespaces', namespace) is None:
                    self.add('v1', 'namespaces', {'apiVersion': 'v1', 'kind': 'Namespace',
                                                  'metadata': {'name': namespace}})
            obj.setdefault('apiVersion', group_version)
            obj.setdefault('kind', resource.kind)
            metadata.setdefault('uid', str(uuid.uuid4()))
            metadata.setdefault('creationTimestamp', now())
            if resource.custom or plural in ('deployments', 'daemonsets', 'jobs'):
                metadata.setdefault('generation', 1)  # as a create sets it
            metadata['resourceVersion'] = self._next_revision()
            if plural == 'namespaces':
                obj.setdefault('status', {'phase': 'Active'})
            if digest not in CHECKED:  # the upstream CRDs are big: check each one once per test run
                obj, _warnings = self._decode(resource, obj, {'validation': 'Strict'})
                if resource.custom:
                    obj = resource.schema.default(obj)
                if plural == 'customresourcedefinitions':
                    self._check_crd(obj)
                self._validate(resource, obj)
                if plural == 'customresourcedefinitions':
                    CHECKED[digest] = True
            old = self.store.get(self._key(resource, namespace, metadata['name']))
            if 'managedFields' not in metadata and old is not None and old['metadata'].get('managedFields'):
                metadata['managedFields'] = copy.deepcopy(old['metadata']['managedFields'])
            if manager is not None:
                self._track(resource, old, obj, subresource, manager)
            self.store[self._key(resource, namespace, metadata['name'])] = obj
            return copy.deepcopy(obj)

    def get(self, group_version, plural, name, namespace=None):
        """The stored object (a copy), or None."""
        with self.lock:
            resource = self.resource(group_version, plural)
            if resource.namespaced and namespace is None:
                namespace = 'default'
                matches = [o for k, o in self.store.items() if k[:2] == (resource.group, plural) and k[3] == name]
                if len(matches) == 1:
                    return copy.deepcopy(matches[0])
            obj = self.store.get(self._key(resource, namespace if resource.namespaced else None, name))
            return copy.deepcopy(obj)

    def list(self, group_version, plural, namespace=None):
        with self.lock:
            resource = self.resource(group_version, plural)
            return [copy.deepcopy(o) for k, o in sorted(self.store.items())
                    if k[:2] == (resource.group, plural) and (namespace is None or k[2] == namespace)]

    def set_log(self, namespace, pod, text):
        self.logs[(namespace, pod)] = text

    def forbid(self, verb, resource, namespace=None, user=None):
        """Answer 403 to ``verb`` (get, list, create, update, patch, delete) on ``resource`` (``nodes/status``)."""
        self.forbidden.append((verb, resource, namespace, user))

    def answer_text(self, code=200, text='<html><body>Sign in</body></html>', content_type='text/html'):
        """Answer every request with ``text`` instead of the API (a proxy or a login page in the way)."""
        self.text_answer = (code, text, content_type)

    # ---------------------------------------------------------------- serving

    @property
    def url(self):
        return '%s://127.0.0.1:%d' % ('https' if self.tls else 'http', self._server.server_address[1])

    def start(self):
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'
            # One write per answer, sent at once: on a kept-alive connection the body written after the headers
            # waited for the client's delayed ACK (Nagle), 40 ms on every request but the first.
            wbufsize = 65536
            disable_nagle_algorithm = True

            def log_message(self, *args):  # keep test output clean
                pass

            def setup(self):
                BaseHTTPRequestHandler.setup(self)
                api.connections.add(self.connection)

            def handle(self):
                try:
                    BaseHTTPRequestHandler.handle(self)
                except ConnectionResetError:  # a client that resets its kept-alive connection (helm at exit)
                    self.close_connection = True

            def finish(self):
                api.connections.discard(self.connection)
                BaseHTTPRequestHandler.finish(self)

            def _answer(self, code, body, content_type='application/json', warnings=()):
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(code)
                self.send_header('Content-Type', content_type)
                self.send_header('Content-Length', str(len(data)))
                for warning in warnings:
                    self.send_header('Warning', '299 - %s' % json.dumps(warning))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self):
                length = int(self.headers.get('Content-Length') or 0)
                raw = self.rfile.read(length) if length else b''
                details = {'content_type': self.headers.get('Content-Type'), 'body': None,
                           'headers': dict((k.lower(), v) for k, v in self.headers.items())}
                try:
                    details['body'] = json.loads(raw) if raw else None
                except ValueError:
                    details['body'] = raw.decode('utf-8', 'replace')
                api.requests.append((self.command, self.path, details))
                if api.on_request is not None:
                    api.on_request(api, self.command, self.path)
                if api.text_answer is not None:
                    code, text, content_type = api.text_answer
                    return self._answer(code, text.encode(), content_type)
                try:
                    code, body, warnings = api.handle(self.command, self.path, self.headers, raw)
                except ApiError as exc:
                    return self._answer(exc.code, exc.status())
                # a bug of the double: answered, and kept for the test to show
                except Exception as exc:  # pylint: disable=broad-except
                    api.errors.append(exc)
                    failure = ApiError(500, 'InternalError', 'the test double failed: %r' % exc)
                    return self._answer(500, failure.status())
                if isinstance(body, str):
                    return self._answer(code, body.encode(), 'text/plain')
                return self._answer(code, body, warnings=warnings)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle  # noqa: N815 - http.server's naming

        self._server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        if self.tls:
            self._wrap_tls()
        threading.Thread(target=self._server.serve_forever, kwargs={'poll_interval': 0.05}, daemon=True).start()
        return self

    def _wrap_tls(self):
        self._tls_dir = tempfile.mkdtemp(prefix='kube-apiserver-double-')
        cert, key = os.path.join(self._tls_dir, 'server.crt'), os.path.join(self._tls_dir, 'server.key')
        subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj',
                        '/CN=kube-apiserver-double', '-addext', 'subjectAltName=IP:127.0.0.1',
                        '-keyout', key, '-out', cert], check=True, capture_output=True)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.ca_path = cert

    def stop(self):
        """Stop serving: connections to the address are refused from now on."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            for connection in list(self.connections):  # kept-alive connections would go on being served
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                    connection.close()
                except OSError:
                    pass
        if self._tls_dir:
            shutil.rmtree(self._tls_dir, ignore_errors=True)
            self._tls_dir = None

    def kubeconfig(self, path, token=DEFAULT_TOKEN, ca=True):
        """Write a kubeconfig for this server (bearer token; with TLS the certificate authority unless ``ca=False``)."""
        cluster = {'server': self.url}
        if self.tls and ca:
            cluster['certificate-authority'] = self.ca_path
        config = {'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'fake', 'preferences': {},
                  'clusters': [{'name': 'fake', 'cluster': cluster}],
                  'users': [{'name': 'fake', 'user': {'token': token}}],
                  'contexts': [{'name': 'fake', 'context': {'cluster': 'fake', 'user': 'fake'}}]}
        with open(path, 'w') as handle:
            json.dump(config, handle)
        return path

    # ---------------------------------------------------------------- requests

    def handle(self, method, raw_path, headers, raw):
        """``(code, body, warnings)`` for one request, or ApiError."""
        with self.lock:
            user = self._authenticate(headers)
            url = urlparse(raw_path)
            query = parse_qs(url.query, keep_blank_values=True)
            parts = [unquote(p) for p in url.path.split('/') if p]
            discovery = self._discovery(parts)
            if discovery is not None:
                if method != 'GET':
                    raise ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested '
                                                            'resource')
                return 200, discovery, []
            resource, namespace, name, sub = self._route(parts)
            self._authorize(user, method, resource, namespace, name, sub, query)
            if method in ('POST', 'PUT') and (headers.get('Content-Type') or '').split(';')[0].strip() == PROTOBUF:
                raw = self._protobuf_body(resource, raw)
            if method == 'GET':
                if name is None:
                    return 200, self._list(resource, namespace, query), []
                return 200, self._read(resource, namespace, name, sub, query), []
            options = self._write_options(method, query, headers)
            if method == 'POST':
                if name is not None and sub == 'eviction':
                    return self._evict(resource, namespace, name, self._body(raw), options)
                if name is not None:
                    raise ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested '
                                                            'resource')
                return self._create(resource, namespace, self._body(raw), options)
            if name is None:
                if method == 'DELETE':
                    return self._delete_collection(resource, namespace, query, options)
                raise ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested '
                                                        'resource')
            if method == 'PUT':
                return self._replace(resource, namespace, name, sub, self._body(raw), options)
            if method == 'PATCH':
                return self._patch(resource, namespace, name, sub, raw, headers, options)
            if method == 'DELETE':
                return self._delete(resource, namespace, name, options)
            raise ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource')

    def _authenticate(self, headers):
        authorization = headers.get('Authorization') or ''
        token = authorization[len('Bearer '):] if authorization.startswith('Bearer ') else None
        if token not in self.tokens:
            raise ApiError(401, 'Unauthorized', 'Unauthorized')
        return headers.get('Impersonate-User') or self.tokens[token]

    def _authorize(self, user, method, resource, namespace, name, sub, query):
        verb = VERBS[method]
        if method == 'GET' and name is None:
            verb = 'watch' if query.get('watch', [''])[0] in ('1', 'true') else 'list'
        if method == 'DELETE' and name is None:
            verb = 'deletecollection'
        target = resource.plural + ('/' + sub if sub else '')
        for f_verb, f_resource, f_namespace, f_user in self.forbidden:
            if (f_verb in (verb, '*') and f_resource in (target, '*') and f_namespace in (None, namespace)
                    and f_user in (None, user)):
                where = 'in the namespace "%s"' % namespace if namespace else 'at the cluster scope'
                subject = '%s "%s"' % (resource.qualified, name) if name else resource.qualified
                details = {'kind': resource.plural}
                if name:
                    details['name'] = name
                if resource.group:
                    details['group'] = resource.group
                raise ApiError(403, 'Forbidden', '%s is forbidden: User "%s" cannot %s resource "%s" in API group '
                                                 '"%s" %s' % (subject, user, verb, target, resource.group, where),
                               details)

    def _protobuf_body(self, resource, raw):
        """A protobuf body as the JSON body it stands for; custom resources take JSON and YAML only (415)."""
        if resource.custom:
            raise ApiError(415, 'UnsupportedMediaType', 'the body of the request was in an unknown format - accepted '
                                                        'media types include: application/json, application/yaml')
        try:
            return json.dumps(decode_protobuf(raw)).encode()
        except (ProtobufError, ValueError) as exc:
            raise bad_request('the body of the request could not be decoded as %s: %s' % (PROTOBUF, exc))

    def _openapi_v3(self, rest):
        """``/openapi/v3``: each group-version's document URL (with its hash); ``/openapi/v3/<gv>``: the document."""
        resources = self.resources()
        if not rest:
            listed = {}
            for group, version in sorted(set((r.group, r.version) for r in resources)):
                document = openapi_v3_document(resources, group, version, self.kubernetes_version)
                digest = hashlib.sha512(json.dumps(document, sort_keys=True).encode()).hexdigest().upper()
                path = _openapi_gv_path(group, version)
                listed[path] = {'serverRelativeURL': '/openapi/v3/%s?hash=%s' % (path, digest)}
            return {'paths': listed}
        if rest[:1] == ['api'] and len(rest) == 2:
            return openapi_v3_document(resources, '', rest[1], self.kubernetes_version)
        if rest[:1] == ['apis'] and len(rest) == 3:
            return openapi_v3_document(resources, rest[1], rest[2], self.kubernetes_version)
        return None

    def _discovery(self, parts):
        if parts[:2] == ['openapi', 'v3']:
            return self._openapi_v3(parts[2:])
        if parts == ['version']:
            minor = self.kubernetes_version.split('.')[1]
            return {'major': '1', 'minor': minor, 'gitVersion': 'v%s.0' % self.kubernetes_version,
                    'gitCommit': '0' * 40, 'gitTreeState': 'clean', 'buildDate': '2025-01-01T00:00:00Z',
                    'goVersion': 'go1.24.0', 'compiler': 'gc', 'platform': 'linux/amd64'}
        resources = self.resources()
        if parts == ['api']:
            return {'kind': 'APIVersions', 'versions': ['v1'],
                    'serverAddressByClientCIDRs': [{'clientCIDR': '0.0.0.0/0', 'serverAddress': '127.0.0.1:6443'}]}
        if parts == ['apis']:
            return {'kind': 'APIGroupList', 'apiVersion': 'v1', 'groups': [self._group(g, resources) for g in
                                                                           sorted(set(r.group for r in resources
                                                                                      if r.group))]}
        if len(parts) == 2 and parts[0] == 'apis' and any(r.group == parts[1] for r in resources):
            return dict(self._group(parts[1], resources), kind='APIGroup', apiVersion='v1')
        if parts == ['api', 'v1'] or (len(parts) == 3 and parts[0] == 'apis'):
            group, version = ('', 'v1') if parts[0] == 'api' else (parts[1], parts[2])
            served = [r for r in resources if (r.group, r.version) == (group, version)]
            if not served:
                return None
            listed = []
            for r in served:
                verbs = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']
                listed.append({'name': r.plural, 'singularName': r.kind.lower(), 'namespaced': r.namespaced,
                               'kind': r.kind, 'verbs': verbs})
                for sub in r.subresources:
                    if sub == 'eviction':  # as kube-apiserver lists it: create only, kind Eviction of policy/v1
                        listed.append({'name': 'pods/eviction', 'singularName': '', 'namespaced': True,
                                       'group': 'policy', 'version': 'v1', 'kind': 'Eviction', 'verbs': ['create']})
                        continue
                    listed.append({'name': '%s/%s' % (r.plural, sub), 'singularName': '', 'namespaced': r.namespaced,
                                   'kind': r.kind, 'verbs': ['get'] if sub == 'log' else ['get', 'patch', 'update']})
            return {'kind': 'APIResourceList', 'apiVersion': 'v1',
                    'groupVersion': '%s/%s' % (group, version) if group else version, 'resources': listed}
        return None

    def _group(self, group, resources):
        versions = []
        for r in resources:
            if r.group == group and r.version not in versions:
                versions.append(r.version)
        entries = [{'groupVersion': '%s/%s' % (group, v), 'version': v} for v in versions]
        return {'name': group, 'versions': entries, 'preferredVersion': entries[0]}

    def _route(self, parts):
        not_found = ApiError(404, 'NotFound', 'the server could not find the requested resource', {})
        if parts[:1] == ['api'] and len(parts) >= 3:
            group, version, rest = '', parts[1], parts[2:]
        elif parts[:1] == ['apis'] and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise not_found
        served = dict((r.plural, r) for r in self.resources() if (r.group, r.version) == (group, version))
        namespace = None
        if rest[0] == 'namespaces' and len(rest) >= 3 and rest[2] in served and served[rest[2]].namespaced:
            namespace, rest = rest[1], rest[2:]
        if len(rest) > 3 or rest[0] not in served:
            raise not_found
        resource = served[rest[0]]
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if (namespace is not None and not resource.namespaced) or (
                resource.namespaced and namespace is None and name is not None):
            raise not_found
        if sub is not None and sub not in resource.subresources:
            raise not_found
        return resource, namespace, name, sub

    def _stored(self, resource, namespace, name):
        obj = self.store.get(self._key(resource, namespace, name))
        if obj is None:
            raise resource.not_found(name)
        return obj

    def _present(self, resource, obj):
        shown = copy.deepcopy(obj)
        shown['apiVersion'] = resource.group_version
        if resource.plural in STRUCT_SPEC_STATUS:
            # Go structs, not pointers, in the core types: kube-apiserver always writes them, empty as {}.
            shown.setdefault('spec', {})
            shown.setdefault('status', {})
        if resource.custom:  # defaults apply to what is read from storage too
            shown = resource.schema.default(shown)
        return shown

    def _read(self, resource, namespace, name, sub, query):
        obj = self._stored(resource, namespace, name)
        if sub == 'log':
            text = self.logs.get((namespace, name), '')
            tail = query.get('tailLines', [''])[0]
            if tail.isdigit():
                lines = text.splitlines(True)
                text = ''.join(lines[len(lines) - int(tail):]) if int(tail) else ''
            return text
        return self._present(resource, obj)

    def _list(self, resource, namespace, query):
        labels = parse_label_selector(query.get('labelSelector', [''])[0])
        selectable = []
        if resource.custom:
            selectable = [f.get('jsonPath', '').lstrip('.') for f in resource.crd_version.get('selectableFields') or []
                          if isinstance(f, dict)]
        fields = parse_field_selector(query.get('fieldSelector', [''])[0], resource, selectable)
        items = []
        for key, obj in sorted(self.store.items()):
            if key[:2] != (resource.group, resource.plural) or (namespace is not None and key[2] != namespace):
                continue
            if labels_match((obj.get('metadata') or {}).get('labels'), labels) and fields_match(obj, fields):
                item = self._present(resource, obj)
                items.append(item)
        return {'kind': resource.kind + 'List', 'apiVersion': resource.group_version,
                'metadata': {'resourceVersion': str(self.revision)}, 'items': items}

    # ---------------------------------------------------------------- writes

    def _write_options(self, method, query, headers):
        dry_run = query.get('dryRun', [])
        if dry_run and dry_run != ['All']:
            raise bad_request('Invalid dry run value: %s; the only supported value is "All"' % ','.join(dry_run))
        validation = query.get('fieldValidation', ['Warn'])[0] or 'Warn'
        if validation not in ('Ignore', 'Warn', 'Strict'):
            raise bad_request('fieldValidation: Unsupported value: "%s": supported values: "Ignore", "Strict", "Warn"'
                              % validation)
        field_manager = query.get('fieldManager', [None])[0]
        if field_manager is not None and (len(field_manager.encode('utf-8')) > FIELD_MANAGER_MAX_LENGTH
                                          or not field_manager.isprintable()):
            problem = ('Too long: may not be more than %d bytes' % FIELD_MANAGER_MAX_LENGTH
                       if field_manager.isprintable() else 'Invalid value: "%s": must only contain printable '
                                                           'characters' % field_manager)
            raise ApiError(422, 'Invalid', '%s "" is invalid: fieldManager: %s'
                           % ('PatchOptions.meta.k8s.io' if method == 'PATCH' else 'CreateOptions.meta.k8s.io'
                              if method == 'POST' else 'UpdateOptions.meta.k8s.io', problem))
        # the manager of a create, update or patch: fieldManager, else the User-Agent's program (managerOrUserAgent)
        manager = field_manager if field_manager else manager_from_user_agent(headers.get('User-Agent'))
        return {'dry_run': bool(dry_run), 'validation': validation, 'field_manager': field_manager, 'manager': manager,
                'force': query.get('force', [''])[0] == 'true', 'method': method}

    def _body(self, raw):
        try:
            body = json.loads(raw.decode('utf-8')) if raw else None
        except (ValueError, UnicodeDecodeError) as exc:
            raise bad_request('couldn\'t get version/kind; json parse error: %s' % exc)
        if not isinstance(body, dict):
            raise bad_request('Object \'Kind\' is missing in \'%s\'' % (raw[:200].decode('utf-8', 'replace')))
        return body

    def _check_identity(self, resource, body, namespace, name=None):
        if not isinstance(body.get('kind'), str) or not body.get('kind'):
            raise bad_request('Object \'Kind\' is missing in \'%s\'' % json.dumps(body)[:200])
        if body.get('apiVersion') != resource.group_version:
            raise bad_request('the API version in the data (%s) does not match the expected API version (%s)'
                              % (body.get('apiVersion'), resource.group_version))
        if body['kind'] != resource.kind:
            raise bad_request('%s in version "%s" cannot be handled as a %s: no kind "%s" is registered for version '
                              '"%s"' % (body['kind'], resource.version, resource.kind, body['kind'],
                                        resource.group_version))
        metadata = body.get('metadata')
        if metadata is None:
            metadata = body['metadata'] = {}
        if not isinstance(metadata, dict):
            raise bad_request('%s in version "%s" cannot be handled as a %s: json: cannot unmarshal %s into Go struct '
                              'field %s.metadata of type v1.ObjectMeta'
                              % (resource.kind, resource.version, resource.kind, _json_type(metadata), resource.kind))
        if resource.namespaced:
            if metadata.get('namespace') not in (None, '', namespace):
                raise bad_request('the namespace of the provided object does not match the namespace sent on the '
                                  'request')
            metadata['namespace'] = namespace
        else:
            metadata.pop('namespace', None)
        if name is not None and metadata.get('name') not in (None, name):
            raise bad_request('the name of the object (%s) does not match the name on the URL (%s)'
                              % (metadata.get('name'), name))
        if name is not None:
            metadata['name'] = name

    @staticmethod
    def _crd_schema(resource):
        return resource.schema.root

    def _builtin_schema(self, resource):
        try:
            return api_schemas.builtin_schema(resource.group_version, resource.kind, self.kubernetes_version)
        except LookupError:
            return None

    def _decode(self, resource, obj, options):
        """Prune unknown fields per fieldValidation; check types as decoding does. Returns (obj, warnings)."""
        if resource.custom:
            pruned, unknown = resource.schema.prune(obj)
        else:
            schema = self._builtin_schema(resource)
            if schema is None:
                return obj, []
            pruned, unknown = schema.prune(obj)
            for error in schema.errors(pruned):
                if error.validator == 'type':
                    path = '.'.join(str(p) for p in error.absolute_path if not isinstance(p, int))
                    raise bad_request('%s in version "%s" cannot be handled as a %s: json: cannot unmarshal %s into Go '
                                      'struct field %s.%s of type %s'
                                      % (resource.kind, resource.version, resource.kind, _json_type(error.instance),
                                         resource.kind, path, _expected(error.validator_value)))
        if unknown and options['validation'] == 'Strict':
            raise bad_request('%s in version "%s" cannot be handled as a %s: strict decoding error: %s'
                              % (resource.kind, resource.version, resource.kind,
                                 ', '.join('unknown field "%s"' % field for field in unknown)))
        warnings = ['unknown field "%s"' % field for field in unknown] if options['validation'] == 'Warn' else []
        return pruned, warnings

    @staticmethod
    def _invalid(resource, name, causes):
        """422 Invalid with ``causes``, worded as kube-apiserver's."""
        text = ['%s: %s' % (c['field'], c['message']) for c in causes]
        details = {'name': name, 'kind': resource.kind, 'causes': causes}
        if resource.group:
            details['group'] = resource.group
        return ApiError(422, 'Invalid', '%s "%s" is invalid: %s' % (
            resource.qualified_kind, name, text[0] if len(text) == 1 else '[%s]' % ', '.join(text)), details)

    def _check_crd(self, crd):
        """A CRD kube-apiserver would refuse (no group, names, storage version or usable schema) is a 422."""
        causes = api_schemas.crd_problems(crd)
        if causes:
            raise self._invalid(self.resource('apiextensions.k8s.io/v1', 'customresourcedefinitions'),
                                (crd.get('metadata') or {}).get('name') or '', causes)

    def _validate(self, resource, obj):
        """422 Invalid with causes, as the registry's validation answers."""
        causes = []
        metadata = obj.get('metadata') or {}
        name = metadata.get('name') or ''
        pattern = DNS1123_LABEL if resource.plural in ('namespaces', 'services') else DNS1123_SUBDOMAIN
        if not name:
            causes.append({'reason': 'FieldValueRequired', 'message': 'Required value: name or generateName is '
                                                                      'required', 'field': 'metadata.name'})
        elif not isinstance(name, str) or len(name) > 253 or not pattern.match(name):
            what = 'RFC 1123 label' if pattern is DNS1123_LABEL else 'RFC 1123 subdomain'
            allowed = ' or \'-\',' if pattern is DNS1123_LABEL else ', \'-\' or \'.\','
            causes.append({'reason': 'FieldValueInvalid', 'field': 'metadata.name',
                           'message': 'Invalid value: "%s": a lowercase %s must consist of lower case alphanumeric '
                                      'characters%s and must start and end with an alphanumeric character'
                                      % (name, what, allowed)})
        for _key, value in (metadata.get('labels') or {}).items():
            if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
                causes.append({'reason': 'FieldValueInvalid', 'field': 'metadata.labels',
                               'message': 'Invalid value: "%s": a valid label must be an empty string or consist of '
                                          'alphanumeric characters, \'-\', \'_\' or \'.\', and must start and end '
                                          'with an alphanumeric character' % value})
        if resource.custom:
            causes.extend(resource.schema.findings(obj))
        else:
            schema = self._builtin_schema(resource)
            for error in (schema.errors(obj) if schema is not None else []):
                match = re.match(r"^'(.*)' is a required property$", error.message)
                if error.validator == 'required' and match:
                    causes.append({'reason': 'FieldValueRequired', 'message': 'Required value',
                                   'field': api_schemas.field_path(list(error.absolute_path) + [match.group(1)])})
        if causes:
            raise self._invalid(resource, name, causes)

    def _prepare_create(self, resource, obj):
        if 'status' in resource.subresources and resource.plural != 'nodes':
            obj.pop('status', None)
        if resource.plural == 'pods':
            obj['status'] = {'phase': 'Pending'}
        if resource.plural == 'namespaces':
            obj['status'] = {'phase': 'Active'}
        if resource.plural == 'customresourcedefinitions':
            spec = obj.get('spec') or {}
            storage = [v.get('name') for v in spec.get('versions') or [] if isinstance(v, dict) and v.get('storage')]
            obj['status'] = {'acceptedNames': spec.get('names') or {}, 'storedVersions': storage,
                             'conditions': [{'type': 'Established', 'status': 'True',
                                             'reason': 'InitialNamesAccepted'}]}

    def _finish(self, resource, obj, old=None):
        """Defaults and validation of the object to store; its metadata as the server keeps it."""
        if resource.custom:
            obj = resource.schema.default(obj)
        if resource.plural == 'customresourcedefinitions':
            self._check_crd(obj)
        self._validate(resource, obj)
        metadata = obj['metadata']
        if old is None:
            metadata['uid'] = str(uuid.uuid4())
            metadata['creationTimestamp'] = now()
            if resource.custom or resource.plural in ('deployments', 'daemonsets', 'jobs'):
                metadata['generation'] = 1
        else:
            for key in ('uid', 'creationTimestamp'):
                if key in old['metadata']:
                    metadata[key] = old['metadata'][key]
            generation = old['metadata'].get('generation')
            if generation is not None:
                changed = dict((k, v) for k, v in obj.items() if k not in ('metadata', 'status')) != dict(
                    (k, v) for k, v in old.items() if k not in ('metadata', 'status'))
                metadata['generation'] = generation + 1 if changed else generation
        metadata.pop('selfLink', None)
        return obj

    def _commit(self, resource, obj, options, old=None):
        if old is not None and self._same(old, obj):
            return copy.deepcopy(old)  # a no-op write changes nothing, not even the resourceVersion
        if options['dry_run']:
            obj['metadata']['resourceVersion'] = old['metadata']['resourceVersion'] if old else str(self.revision + 1)
            return obj
        obj['metadata']['resourceVersion'] = self._next_revision()
        namespace = obj['metadata'].get('namespace') if resource.namespaced else None
        self.store[self._key(resource, namespace, obj['metadata']['name'])] = obj
        if self.on_change:
            self.on_change(self, resource.group_version, resource.plural, copy.deepcopy(obj))
        return copy.deepcopy(obj)

    @staticmethod
    def _same(old, new):
        def strip(obj):
            metadata = dict((k, v) for k, v in obj['metadata'].items() if k not in ('resourceVersion', 'generation'))
            return dict(obj, metadata=metadata, apiVersion=None)
        return strip(old) == strip(new)

    def _create(self, resource, namespace, body, options, warnings=(), apply=None):
        self._check_identity(resource, body, namespace)
        for webhook in self.mutating:
            mutated = webhook(self, 'CREATE', resource, copy.deepcopy(body))
            if mutated is not None:
                body = mutated
        metadata = body['metadata']
        if not metadata.get('name') and isinstance(metadata.get('generateName'), str):
            metadata['name'] = metadata['generateName'] + uuid.uuid4().hex[:5]
        if metadata.get('resourceVersion'):
            raise bad_request('resourceVersion should not be set on objects to be created')
        if resource.namespaced and self.store.get(('', 'namespaces', '', namespace)) is None:
            raise ApiError(404, 'NotFound', 'namespaces "%s" not found' % namespace,
                           {'name': namespace, 'kind': 'namespaces'})
        obj, decode_warnings = self._decode(resource, body, options)
        self._prepare_create(resource, obj)
        obj = self._finish(resource, obj)
        self._track(resource, None, obj, None, options.get('manager', ''), apply)
        self._admit('CREATE', resource, obj, None)
        if self.store.get(self._key(resource, namespace, obj['metadata']['name'])) is not None:
            details = {'name': obj['metadata']['name'], 'kind': resource.plural}
            if resource.group:
                details['group'] = resource.group
            raise ApiError(409, 'AlreadyExists', '%s "%s" already exists' % (resource.qualified,
                                                                             obj['metadata']['name']), details)
        return 201, self._present(resource, self._commit(resource, obj, options)), list(warnings) + decode_warnings

    def _conflict(self, resource, name):
        details = {'name': name, 'kind': resource.plural}
        if resource.group:
            details['group'] = resource.group
        return ApiError(409, 'Conflict', 'Operation cannot be fulfilled on %s "%s": the object has been modified; '
                                         'please apply your changes to the latest version and try again'
                        % (resource.qualified, name), details)

    def _update(self, resource, old, new, sub, options, apply=None):
        """Store ``new`` over ``old`` with the status subresource's rules and its managedFields."""
        new, warnings = self._decode(resource, new, options)
        if 'status' in resource.subresources:
            if sub == 'status':
                status = new.get('status')
                new = copy.deepcopy(old)
                if status is None:
                    new.pop('status', None)
                else:
                    new['status'] = status
            elif 'status' in old:
                new['status'] = copy.deepcopy(old['status'])
            else:
                new.pop('status', None)
        new = self._finish(resource, new, old)
        self._track(resource, old, new, sub, options.get('manager', ''), apply)
        if sub != 'status':
            self._admit('UPDATE', resource, new, old)
        return 200, self._present(resource, self._commit(resource, new, options, old)), warnings

    def _field_schema(self, resource):
        if resource.custom:
            return FieldSchema(self._crd_schema(resource))
        schema = self._builtin_schema(resource)
        return FieldSchema(schema.root, schema.resolve) if schema is not None else FieldSchema({}, lambda node: node)

    def _baseline(self, resource, obj):
        """What a create is compared with: the empty object of the kind (a built-in kind's Go structs are present in
        it, GO_STRUCTS; a custom resource has no spec in it)."""
        base = {'apiVersion': obj.get('apiVersion'), 'kind': obj.get('kind'), 'metadata': {}}
        schema = None if resource.custom else self._builtin_schema(resource)
        properties = (schema.resolve(schema.root).get('properties') or {}) if schema is not None else {}
        for field in ('spec', 'status'):
            if field in properties:
                base[field] = copy.deepcopy(GO_STRUCTS.get(resource.plural, {}).get(field, {}))
        return base

    @staticmethod
    def _comparable(resource, obj):
        """The object as the field manager compares it: without managedFields, the Go structs always there."""
        shown = copy.deepcopy(obj)
        shown.get('metadata', {}).pop('managedFields', None)
        if resource.plural in STRUCT_SPEC_STATUS:
            shown.setdefault('spec', {})
            shown.setdefault('status', {})
        return shown

    @staticmethod
    def _owned_paths(resource, sub, paths):
        """The paths a write can own: not the identity and bookkeeping of the object (stripMetaManager), and with a
        status subresource only the status through it and anything but the status through the object (reset
        fields)."""
        paths = set(p for p in paths if p not in STRIPPED_FIELDS)
        if 'status' in resource.subresources:
            paths = set(p for p in paths if (p[:1] == ('f:status',)) == (sub == 'status'))
        return paths

    def _request_managers(self, old, new, sub):
        """The managers an update starts from (decodeLiveOrNew): the live object's, unless the request sets
        managedFields (an empty list resets them); a subresource write always starts from the live object's."""
        live = Managers.decode(((old or {}).get('metadata') or {}).get('managedFields') or []) or Managers()
        requested = new['metadata'].get('managedFields')
        if sub:
            return live
        if requested == [] or requested == [{}]:
            return Managers()
        decoded = Managers.decode(requested) if requested else None
        return decoded if decoded is not None and decoded.sets else live

    def _track(self, resource, old, new, sub, manager, apply=None):
        """Set ``new``'s managedFields for this write; 409 for an apply that changes another manager's field.

        An Update manager comes to own what it added or changed; an Apply manager owns its applied configuration.
        Either way what changed leaves the other managers (an apply only with force), what was removed leaves all.
        """
        if apply is not None:
            managers, key = apply['managers'], apply['key']
        else:
            managers, key = self._request_managers(old, new, sub), (manager, 'Update', sub or '')
        new['metadata'].pop('managedFields', None)
        before = self._comparable(resource, old) if old is not None else self._baseline(resource, new)
        diff = compare_fields(before, self._comparable(resource, new), self._field_schema(resource))
        changed = self._owned_paths(resource, sub, diff['added'] | diff['modified'])
        removed = self._owned_paths(resource, sub, diff['removed'])
        conflicts = []
        for other, entry in sorted(managers.sets.items()):
            if other == key:
                continue
            clash = entry[2] & changed
            if clash and apply is not None and not apply['force']:
                conflicts += [(describe_manager(other, entry[0]), path) for path in sorted(clash, key=path_order)]
            entry[2] = entry[2] - changed - removed
        if conflicts:
            raise apply_conflict(sorted(conflicts, key=lambda c: (c[0], path_order(c[1]))))
        if apply is None:  # the time of an Update entry moves when the write added or changed a field
            previous = managers.sets.get(key, [resource.group_version, None, set()])
            managers.sets[key] = [resource.group_version, now() if changed else previous[1],
                                  (previous[2] - removed) | changed]
        else:
            entry = managers.sets[key]
            if changed or removed or entry[1] is None or entry[2] != apply.get('last'):
                entry[1] = now()
        encoded = managers.encode()
        if encoded:
            new['metadata']['managedFields'] = encoded

    def _admit(self, operation, resource, obj, old):
        for webhook in self.admission:
            webhook(self, operation, resource, copy.deepcopy(obj), copy.deepcopy(old))

    def _replace(self, resource, namespace, name, sub, body, options):
        if sub == 'log':
            raise ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource')
        self._check_identity(resource, body, namespace, name)
        old = self._stored(resource, namespace, name)
        version = body['metadata'].get('resourceVersion')
        if not version and resource.custom:
            raise ApiError(422, 'Invalid', '%s "%s" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be '
                                           'specified for an update' % (resource.qualified_kind, name),
                           {'name': name, 'group': resource.group, 'kind': resource.kind, 'causes': [
                               {'reason': 'FieldValueInvalid', 'field': 'metadata.resourceVersion',
                                'message': 'Invalid value: 0x0: must be specified for an update'}]})
        if version and version != old['metadata']['resourceVersion']:
            raise self._conflict(resource, name)
        return self._update(resource, old, body, sub, options)

    def _patch(self, resource, namespace, name, sub, raw, headers, options):
        if sub == 'log':
            raise ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource')
        content_type = (headers.get('Content-Type') or '').split(';')[0].strip()
        kind = PATCH_TYPES.get(content_type)
        accepted = [t for t, k in PATCH_TYPES.items() if k and not (resource.custom and k == 'strategic')]
        if kind is None or (resource.custom and kind == 'strategic'):
            raise ApiError(415, 'UnsupportedMediaType', 'the body of the request was in an unknown format - accepted '
                                                        'media types include: %s' % ', '.join(accepted))
        if kind == 'apply':
            return self._apply(resource, namespace, name, sub, raw, options)
        try:
            patch = json.loads(raw.decode('utf-8')) if raw else None
        except (ValueError, UnicodeDecodeError) as exc:
            raise bad_request('error decoding patch: %s' % exc)
        old = self._stored(resource, namespace, name)
        if kind == 'json':
            try:
                new = json_patch(old, patch)
            except JsonPatchError as exc:
                raise ApiError(422, 'Invalid', 'the server rejected our request due to an error in our request',
                               {'causes': [{'reason': 'UnexpectedServerResponse', 'message': str(exc)}]})
        else:
            if not isinstance(patch, dict):
                raise bad_request('json: cannot unmarshal %s into Go value of type map[string]interface {}'
                                  % _json_type(patch))
            version = (patch.get('metadata') or {}).get('resourceVersion') if isinstance(
                patch.get('metadata'), dict) else None
            if version and version != old['metadata']['resourceVersion']:
                raise self._conflict(resource, name)
            if kind == 'merge':
                new = merge_patch(old, patch)
            else:
                new = StrategicMerge(self._builtin_schema(resource)).merge(old, patch)
        if not isinstance(new, dict):
            raise bad_request('the patch did not produce an object')
        self._check_identity(resource, new, namespace, name)
        return self._update(resource, old, new, sub, options)

    def _apply(self, resource, namespace, name, sub, raw, options):
        if not options['field_manager']:
            raise ApiError(422, 'Invalid', 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is '
                                           'required for apply patch',
                           {'group': 'meta.k8s.io', 'kind': 'PatchOptions', 'causes': [
                               {'reason': 'FieldValueRequired', 'message': 'Required value: is required for apply '
                                                                           'patch', 'field': 'fieldManager'}]})
        try:
            applied = yaml.safe_load(raw.decode('utf-8')) if raw else None
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise bad_request('error decoding YAML: %s' % exc)
        if not isinstance(applied, dict):
            raise bad_request('error decoding YAML: the apply patch is not an object')
        self._check_identity(resource, applied, namespace, name)
        if applied['metadata'].get('managedFields') not in (None, []):
            raise bad_request('metadata.managedFields must be nil')
        applied['metadata'].pop('managedFields', None)
        old = self.store.get(self._key(resource, namespace, name))
        schema = self._field_schema(resource)
        key = (options['field_manager'], 'Apply', sub or '')
        known, _warnings = self._decode(resource, copy.deepcopy(applied), dict(options, validation='Ignore'))
        config = self._owned_paths(resource, sub, field_set(known, schema))  # unknown fields are pruned, not owned
        if old is None:
            if sub == 'status':
                raise resource.not_found(name)
            managers = Managers()
            managers.sets[key] = [resource.group_version, None, config]
            return self._create(resource, namespace, copy.deepcopy(applied), options,
                                apply={'managers': managers, 'key': key, 'force': options['force']})
        managers = Managers.decode(old['metadata'].get('managedFields')) or Managers()
        if not managers.sets:  # fields of an object no manager owns go to before-first-apply (skipNonAppliedManager)
            before = compare_fields(self._baseline(resource, old), self._comparable(resource, old), schema)
            managers.sets[(BEFORE_FIRST_APPLY, 'Update', '')] = [
                resource.group_version, now(), self._owned_paths(resource, None, before['added'] | before['modified'])]
        last = managers.sets.get(key, [None, None, set()])
        managers.sets[key] = [resource.group_version, last[1], config]
        live = self._comparable(resource, old)
        custom_schema = self._crd_schema(resource) if resource.custom else None
        strategic = None if resource.custom else StrategicMerge(self._builtin_schema(resource))
        new = apply_merge(live, applied, custom_schema, strategic)
        prune_dropped(new, last[2], managers.owned())
        return self._update(resource, old, new, sub, options,
                            apply={'managers': managers, 'key': key, 'force': options['force'], 'last': last[2]})

    def _evict(self, resource, namespace, name, body, options):
        """POST pods/NAME/eviction, as kube-apiserver's eviction REST (pkg/registry/core/pod/storage/eviction.go).

        The PodDisruptionBudgets of the namespace whose selector matches the pod decide: more than one is a 500;
        ``disruptionsAllowed`` is what the disruption controller would compute now (healthy pods - pods the budget
        needs, from ``minAvailable`` or ``maxUnavailable``, counts or percentages); at 0 the answer is 429
        TooManyRequests with a DisruptionBudget cause, else the pod is deleted (201 Success). A finished pod
        (Succeeded, Failed) is deleted without asking.
        """
        pod = self._stored(resource, namespace, name)
        if not isinstance(body, dict) or body.get('kind') not in (None, 'Eviction') \
                or (body.get('metadata') or {}).get('name', name) != name:
            raise bad_request('name in URL does not match name in Eviction object')
        if (pod.get('status') or {}).get('phase') not in ('Succeeded', 'Failed'):
            labels = (pod.get('metadata') or {}).get('labels') or {}
            budgets = [pdb for key, pdb in sorted(self.store.items())
                       if key[:3] == ('policy', 'poddisruptionbudgets', namespace)
                       and _selector_matches((pdb.get('spec') or {}).get('selector'), labels)]
            if len(budgets) > 1:
                raise ApiError(500, 'InternalError', 'This pod has more than one PodDisruptionBudget, which the '
                                                     'eviction subresource does not support.')
            if budgets:
                allowed, healthy, needed = self._disruptions_allowed(namespace, budgets[0])
                if allowed < 1:
                    budget = budgets[0]['metadata']['name']
                    raise ApiError(429, 'TooManyRequests', "Cannot evict pod as it would violate the pod's "
                                   'disruption budget.',
                                   {'causes': [{'reason': 'DisruptionBudget', 'message': (
                                       'The disruption budget %s needs %d healthy pods and has %d currently'
                                       % (budget, needed, healthy))}]})
        if not options['dry_run']:
            del self.store[self._key(resource, namespace, name)]
            self.revision += 1
        return 201, {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Success', 'code': 201}, []

    def _disruptions_allowed(self, namespace, pdb):
        spec = pdb.get('spec') or {}
        pods = [pod for key, pod in self.store.items() if key[:3] == ('', 'pods', namespace)
                and _selector_matches(spec.get('selector'), (pod.get('metadata') or {}).get('labels') or {})]
        healthy = len([pod for pod in pods if (pod.get('status') or {}).get('phase') == 'Running'
                       and any(c.get('type') == 'Ready' and c.get('status') == 'True'
                               for c in (pod.get('status') or {}).get('conditions') or [])])

        def count(value):
            if isinstance(value, str) and value.endswith('%'):
                return -(-int(value[:-1]) * len(pods) // 100)  # rounded up, as the controller does
            return int(value)
        if 'minAvailable' in spec:
            needed = count(spec['minAvailable'])
        else:
            needed = len(pods) - count(spec.get('maxUnavailable', 0))
        return healthy - needed, healthy, needed

    def _delete(self, resource, namespace, name, options):
        obj = self._stored(resource, namespace, name)
        key = self._key(resource, namespace, name)
        if not options['dry_run']:
            del self.store[key]
            if resource.plural == 'namespaces':
                for other in [k for k in self.store if k[2] == name]:
                    del self.store[other]
            self.revision += 1
        if resource.plural in RETURN_DELETED_OBJECT or resource.plural == 'namespaces':
            shown = self._present(resource, obj)
            if resource.plural == 'namespaces':
                shown['status'] = {'phase': 'Terminating'}
            return 200, shown, []
        details = {'name': name, 'kind': resource.plural, 'uid': obj['metadata'].get('uid')}
        if resource.group:
            details['group'] = resource.group
        return 200, {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Success',
                     'details': details}, []

    def _delete_collection(self, resource, namespace, query, options):
        listed = self._list(resource, namespace, query)
        for item in listed['items']:
            self._delete(resource, item['metadata'].get('namespace'), item['metadata']['name'], options)
        return 200, listed, []


def _json_type(value):
    return {dict: 'object', list: 'array', str: 'string', bool: 'bool', type(None): 'null'}.get(type(value), 'number')


def _expected(value):
    names = [v for v in (value if isinstance(value, list) else [value]) if v != 'null']
    return '/'.join(str(v) for v in names)


# ------------------------------------------------------------------------------------------------ as a process

AUDIT_VERBS = {'POST': 'create', 'PUT': 'update', 'PATCH': 'patch', 'DELETE': 'delete'}


def audit_event(api, method, path):
    """The request as kube-apiserver's audit log records it at level Request, stage RequestReceived."""
    details = api.requests[-1][2]
    url = urlparse(path)
    parts = [unquote(p) for p in url.path.split('/') if p]
    verb = AUDIT_VERBS.get(method, 'get')
    event = {'kind': 'Event', 'apiVersion': 'audit.k8s.io/v1', 'level': 'Request', 'auditID': str(uuid.uuid4()),
             'stage': 'RequestReceived', 'requestURI': path, 'verb': verb, 'stageTimestamp': now()}
    try:
        resource, namespace, name, sub = api._route(parts)  # pylint: disable=protected-access
    except ApiError:
        return event  # discovery and other non-resource URLs
    if method == 'GET':
        event['verb'] = 'get' if name else ('watch' if 'watch=' in (url.query or '') else 'list')
    elif method == 'DELETE' and name is None:
        event['verb'] = 'deletecollection'
    ref = {'resource': resource.plural, 'apiGroup': resource.group, 'apiVersion': resource.version}
    for key, value in (('namespace', namespace), ('name', name), ('subresource', sub)):
        if value:
            ref[key] = value
    event['objectRef'] = ref
    content_type = (details.get('content_type') or '').split(';')[0].strip()
    if details.get('body') is not None and content_type != PROTOBUF:
        event['requestObject'] = details['body']
    return event


def serve(directory, crds, objects, operator):
    """Serve until SIGTERM; the kubeconfig in ``directory`` is written last, when the server answers."""
    on_change = runpy.run_path(operator)['on_change'] if operator else None
    api = FakeApiServer(on_change=on_change, tls=True)
    for path in crds:
        with open(path) as handle:
            for document in yaml.safe_load_all(handle):
                if document:
                    api.add('apiextensions.k8s.io/v1', 'customresourcedefinitions', document)
    for path in objects:
        with open(path) as handle:
            documents = [d for d in yaml.safe_load_all(handle) if d]
            # a kind: List (as kubectl reads and writes it) holds its objects in items
            documents = [item for d in documents for item in (d.get('items') or [] if d.get('kind') == 'List' else [d])]
            for document in documents:
                if document:
                    plural = [r.plural for r in api.resources()
                              if (r.group_version, r.kind) == (document['apiVersion'], document['kind'])]
                    api.add(document['apiVersion'], plural[0], document)
    with open(os.path.join(directory, 'audit.jsonl'), 'w') as audit:  # a new server: its state and log start empty

        def log_request(server, method, path):
            audit.write(json.dumps(audit_event(server, method, path)) + '\n')
            audit.flush()

        api.on_request = log_request
        api.start()
        stopping = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_args: stopping.set())
        with open(os.path.join(directory, 'pid'), 'w') as handle:
            handle.write('%d\n' % os.getpid())
        api.kubeconfig(os.path.join(directory, 'kubeconfig.tmp'))
        os.rename(os.path.join(directory, 'kubeconfig.tmp'), os.path.join(directory, 'kubeconfig'))
        sys.stdout.write('serving %s\n' % api.url)
        sys.stdout.flush()
        while not stopping.wait(0.2):
            pass
        api.stop()
    for error in api.errors:
        sys.stdout.write('the double failed on a request: %r\n' % error)
    for name in ('pid', 'kubeconfig'):
        os.unlink(os.path.join(directory, name))
    return 1 if api.errors else 0


def start(directory, crds, objects, operator, timeout=60):
    """Start ``serve`` as a detached process and return once its kubeconfig is written (or it failed)."""
    os.makedirs(directory, exist_ok=True)
    if os.path.exists(os.path.join(directory, 'pid')):
        stop(directory)
    argv = [sys.executable, os.path.abspath(__file__), 'serve', directory]
    argv += sum([['--crd', p] for p in crds], []) + sum([['--objects', p] for p in objects], [])
    argv += ['--operator', operator] if operator else []
    with open(os.path.join(directory, 'kube-apiserver.log'), 'a') as log:
        # the server outlives this call: no context manager that would wait for it
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,  # pylint: disable=consider-using-with
                                   stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(os.path.join(directory, 'kubeconfig')):
            return 0
        if process.poll() is not None:
            break
        time.sleep(0.1)
    with open(os.path.join(directory, 'kube-apiserver.log')) as log:
        sys.stderr.write('the kube-apiserver double did not start:\n%s' % log.read()[-4000:])
    if process.poll() is None:
        process.terminate()
    return 1


def stop(directory, timeout=30):
    """Stop the process ``start`` started in ``directory``; nothing to do when none runs."""
    try:
        with open(os.path.join(directory, 'pid')) as handle:
            pid = int(handle.read())
    except (OSError, ValueError):
        return 0
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        os.unlink(os.path.join(directory, 'pid'))
        return 0
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return 0
        time.sleep(0.1)
    return 1


def main(argv):
    parser = argparse.ArgumentParser(description='The kube-apiserver test double as a process (HTTPS on 127.0.0.1): '
                                                 'start writes DIR/kubeconfig once it answers, DIR/audit.jsonl '
                                                 'logs every request; stop ends it.')
    parser.add_argument('command', choices=['start', 'serve', 'stop'])
    parser.add_argument('directory')
    parser.add_argument('--crd', action='append', default=[], help='CustomResourceDefinition file to install')
    parser.add_argument('--objects', action='append', default=[], help='YAML file of objects to store at start')
    parser.add_argument('--operator', help='Python file whose on_change(api, group_version, plural, obj) stands in '
                                           'for an operator')
    args = parser.parse_args(argv)
    directory = os.path.abspath(args.directory)
    if args.command == 'stop':
        return stop(directory)
    if args.command == 'start':
        return start(directory, args.crd, args.objects, args.operator)
    return serve(directory, args.crd, args.objects, args.operator)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
