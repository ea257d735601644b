# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Built-in Kubernetes objects (DaemonSets, Jobs, Pods) checked against the upstream OpenAPI schemas.

The schemas come from the kubernetes-validate package, one set per Kubernetes minor release; strict mode
reports fields the API does not declare, as the CRD check does for custom resources. The same schemas carry the
API's patch metadata (``x-kubernetes-patch-merge-key``, ``x-kubernetes-patch-strategy``), which the kube-apiserver
test double reads for strategic merge patches.
"""

from __future__ import annotations

import re

try:
    import kubernetes_validate
except ImportError:  # pragma: no cover - reported by require_kubernetes_validate
    kubernetes_validate = None

try:
    import jsonschema
except ImportError:  # pragma: no cover - kubernetes-validate needs it
    jsonschema = None


class CoreSchemaError(Exception):
    """The schemas cannot be used (package missing, unknown Kubernetes release)."""


def is_builtin(api_version):
    """True for the API groups Kubernetes itself serves: ``v1``, ``apps/v1``, ``batch/v1``, ``*.k8s.io/...``."""
    if not isinstance(api_version, str):
        return False
    group = api_version.rpartition('/')[0]
    return group == '' or '.' not in group or group.endswith('.k8s.io')


def require_kubernetes_validate():
    if kubernetes_validate is None:
        raise CoreSchemaError('the kubernetes-validate Python package is needed on the controller to check built-in '
                              'objects (pip install kubernetes-validate)')
    return kubernetes_validate


def _minor(version):
    return '.'.join(str(version).lstrip('v').split('.')[:2])


def supported_versions():
    """The Kubernetes minor releases kubernetes-validate has schemas of, oldest first."""
    validator = require_kubernetes_validate()
    minors = set()
    for version in validator.utils.all_versions():
        if re.match(r'^\d+\.\d+', version):
            minors.add(_minor(version))
    return sorted(minors, key=lambda v: tuple(int(part) for part in v.split('.')))


def check_version(kubernetes_version):
    """The ``major.minor`` of ``kubernetes_version`` when there are schemas of it, else a CoreSchemaError."""
    validator = require_kubernetes_validate()
    supported = supported_versions()
    wanted = _minor(kubernetes_version)
    if wanted not in supported:
        raise CoreSchemaError('no schemas for Kubernetes %s in kubernetes-validate %s (it has %s to %s); set '
                              'kubernetes_version to one of them' % (kubernetes_version, validator.__version__,
                                                                     supported[0], supported[-1]))
    return wanted


def _identity_problems(obj):
    if not isinstance(obj, dict):
        return ['not a mapping but a %s: a Kubernetes object is a mapping with apiVersion, kind and metadata'
                % type(obj).__name__]
    problems = []
    for field in ('apiVersion', 'kind'):
        if field not in obj:
            problems.append('%s: missing; every Kubernetes object has one' % field)
        elif not isinstance(obj[field], str) or not obj[field]:
            problems.append('%s: %r is not a non-empty string' % (field, obj[field]))
    return problems


class BuiltinSchema(object):
    """The strict schema of one built-in kind with its ``$ref`` definitions, for walks and validation."""

    def __init__(self, api_version, kind, kubernetes_version):
        validator = require_kubernetes_validate()
        minor = check_version(kubernetes_version)
        version = [v for v in validator.utils.all_versions() if _minor(v) == minor][-1]
        self.api_version, self.kind, self.version = api_version, kind, minor
        group_version = re.sub(r'^([^./]*)(?:\.[^/]*)?/', r'\1-', api_version)
        folder = 'kubernetes-json-schema/v%s-local-strict' % version
        try:
            self.root = validator.utils.schema_contents('%s/%s-%s.json' % (folder, kind.lower(), group_version),
                                                        version)
        except (IOError, OSError):
            raise LookupError('no schema for %s %s in Kubernetes %s' % (api_version, kind, minor))
        except validator.utils.InvalidSchemaError as exc:
            raise CoreSchemaError('the schemas of Kubernetes %s cannot be used: %s' % (minor, exc.message))
        self.definitions = validator.utils.schema_contents('%s/_definitions.json' % folder, version)
        self._folder_version = version
        self._validator = None

    def resolve(self, node):
        """``node`` with its ``$ref`` followed (``#/$defs/X`` or ``/api/_definitions.json#/$defs/X``)."""
        seen = 0
        while isinstance(node, dict) and '$ref' in node and seen < 20:
            name = node['$ref'].rpartition('/')[2]
            node = (self.definitions.get('$defs') or self.definitions.get('definitions') or {}).get(name, {})
            seen += 1
        return node

    def errors(self, obj):
        """Every jsonschema error of ``obj`` (all of them, not only the first)."""
        if self._validator is None:
            from referencing import Registry, Resource  # kubernetes-validate's own dependency
            registry = Resource.from_contents(self.root) @ Registry()
            registry = Resource.from_contents(self.definitions) @ registry
            self._validator = jsonschema.validators.Draft202012Validator(self.root, registry=registry)
        return sorted(self._validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path])


_SCHEMAS = {}


def builtin_schema(api_version, kind, kubernetes_version):
    """The BuiltinSchema of a kind; LookupError when Kubernetes has no such kind, CoreSchemaError without schemas."""
    key = (api_version, kind, _minor(kubernetes_version))
    if key not in _SCHEMAS:
        _SCHEMAS[key] = BuiltinSchema(api_version, kind, kubernetes_version)
    return _SCHEMAS[key]


def validate_builtin(obj, kubernetes_version):
    """Every problem of one built-in object against the schemas of ``kubernetes_version`` (e.g. ``1.33``)."""
    problems = _identity_problems(obj)
    if problems:
        return problems
    try:
        schema = builtin_schema(obj['apiVersion'], obj['kind'], kubernetes_version)
    except LookupError as exc:
        return ['%s (is apiVersion/kind right?)' % exc]
    return ['%s: %s' % ('.'.join(str(part) for part in error.absolute_path) or '(root)', error.message)
            for error in schema.errors(obj)]
