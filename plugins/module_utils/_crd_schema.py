# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validate custom resources against a CustomResourceDefinition's openAPIV3Schema.

Two checks: the schema itself (with jsonschema when it is installed), and a walk that
reports every key the schema does not declare. The API server prunes such keys silently
(or rejects them with strict field validation), so a field of another operator release
would otherwise vanish without a word.
"""

from __future__ import annotations

try:
    import jsonschema
except ImportError:  # pragma: no cover - reported by schema_errors
    jsonschema = None


class CrdError(Exception):
    """A document that is not a usable CRD, or an object of another kind."""


def crd_index(documents):
    """CRD documents -> ``{(apiVersion, kind): openAPIV3Schema}`` for every served version."""
    index = {}
    for document in documents:
        if not isinstance(document, dict) or document.get('kind') != 'CustomResourceDefinition':
            continue
        spec = document.get('spec') or {}
        group, kind = spec.get('group'), (spec.get('names') or {}).get('kind')
        for version in spec.get('versions') or []:
            schema = ((version.get('schema') or {}).get('openAPIV3Schema'))
            if group and kind and schema and version.get('served', True):
                index[('%s/%s' % (group, version['name']), kind)] = schema
    return index


def unknown_fields(value, schema, path=''):
    """Paths of keys that ``schema`` does not declare (honours preserve-unknown-fields and maps)."""
    found = []
    if not isinstance(schema, dict):
        return found
    if isinstance(value, dict):
        if schema.get('x-kubernetes-preserve-unknown-fields'):
            return found
        properties = schema.get('properties')
        additional = schema.get('additionalProperties')
        for key, item in value.items():
            where = '%s.%s' % (path, key) if path else key
            if properties is not None and key in properties:
                found.extend(unknown_fields(item, properties[key], where))
            elif isinstance(additional, dict):
                found.extend(unknown_fields(item, additional, where))
            elif additional is True:
                continue
            elif properties is not None or additional is False:
                found.append(where)
    elif isinstance(value, list) and isinstance(schema.get('items'), dict):
        for position, item in enumerate(value):
            found.extend(unknown_fields(item, schema['items'], '%s[%d]' % (path, position)))
    return found


def _schema_for_jsonschema(schema):
    """Kubernetes extensions that plain JSON schema reads differently."""
    if isinstance(schema, list):
        return [_schema_for_jsonschema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    converted = dict((key, _schema_for_jsonschema(value)) for key, value in schema.items())
    if schema.get('x-kubernetes-int-or-string'):
        converted.pop('type', None)
        converted['anyOf'] = [{'type': 'integer'}, {'type': 'string'}]
    if schema.get('nullable'):
        kind = converted.get('type')
        if isinstance(kind, str):
            converted['type'] = [kind, 'null']
    return converted


def schema_errors(value, schema):
    """jsonschema findings as ``path: message`` strings (sorted)."""
    if jsonschema is None:
        raise CrdError('the jsonschema Python package is needed on the controller to validate against CRDs '
                       '(pip install jsonschema)')
    validator = jsonschema.Draft7Validator(_schema_for_jsonschema(schema))
    errors = []
    for error in validator.iter_errors(value):
        where = '.'.join(str(part) for part in error.absolute_path)
        errors.append('%s: %s' % (where or '(root)', error.message))
    return sorted(errors)


def validate_object(obj, index, release=''):
    """Every problem of one object against the CRDs of ``index``; an empty list when it is valid."""
    if not isinstance(obj, dict):
        return ['not a mapping']
    key = (obj.get('apiVersion'), obj.get('kind'))
    schema = index.get(key)
    if schema is None:
        known = ', '.join(sorted('%s %s' % k for k in index)) or 'none'
        return ['no CRD for %s %s%s (known: %s)' % (key[0], key[1], ' in ' + release if release else '', known)]
    problems = schema_errors(obj, schema)
    for where in unknown_fields(obj, schema):
        problems.append('%s: field not declared by the %s CRD%s (the API server would prune it)'
                        % (where, key[1], ' of ' + release if release else ''))
    return problems
