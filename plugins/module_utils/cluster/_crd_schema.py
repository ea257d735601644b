# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validate custom resources against a CustomResourceDefinition's openAPIV3Schema.

Two checks: the schema itself (with jsonschema when it is installed), and a walk that
reports every key the schema does not declare. The API server prunes such keys silently
(or rejects them with strict field validation), so a field of another operator release
would otherwise vanish without a word.

Pruning and defaulting (what the API server stores) are the kube-apiserver test double's own code
(tests/doubles/api_schemas.py), not shipped. Every function takes any JSON-like data: a CRD or an object of the wrong
shape is a ``CrdError`` naming the part, never another exception.
"""

from __future__ import annotations

import re

try:
    import jsonschema
except ImportError:  # pragma: no cover - reported by schema_errors
    jsonschema = None

# metav1.ObjectMeta: the API server decodes a custom resource's metadata into it, whatever the CRD says.
OBJECT_META_FIELDS = frozenset([
    'name', 'generateName', 'namespace', 'selfLink', 'uid', 'resourceVersion', 'generation', 'creationTimestamp',
    'deletionTimestamp', 'deletionGracePeriodSeconds', 'labels', 'annotations', 'ownerReferences', 'finalizers',
    'managedFields'])
# What a reason of a Kubernetes field error is called in a Status' causes (k8s.io/apimachinery field errors).
REASONS = {
    'required': 'FieldValueRequired',
    'type': 'FieldValueTypeInvalid',
    'enum': 'FieldValueNotSupported',
    'maxItems': 'FieldValueTooMany',
    'maxLength': 'FieldValueTooLong',
    'maxProperties': 'FieldValueTooMany',
    'uniqueItems': 'FieldValueDuplicate',
}
_JSON_TYPES = {dict: 'object', list: 'array', str: 'string', bool: 'boolean', int: 'integer', float: 'number',
               type(None): 'null'}


class CrdError(Exception):
    """A document that is not a usable CRD, or an object of another kind."""


def _type_name(value):
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _a(name):
    """``an array``, ``a string``: a JSON type name with its article, for messages."""
    return '%s %s' % ('an' if name[:1] in 'aeiou' else 'a', name)


def _describe(document, position, origin):
    name = ''
    if isinstance(document.get('metadata'), dict) and isinstance(document['metadata'].get('name'), str):
        name = ' %s' % document['metadata']['name']
    where = 'document %d' % (position + 1)
    return 'CustomResourceDefinition%s (%s%s)' % (name, where, ' of ' + origin if origin else '')


def _part(container, key, wanted, what, where):
    """``container[key]`` when it has the JSON type ``wanted``, else a CrdError naming ``what``."""
    value = container.get(key)
    if value is None:
        raise CrdError('%s: %s is missing; a CRD of apiextensions.k8s.io/v1 needs it' % (where, what))
    if _type_name(value) != wanted:
        raise CrdError('%s: %s is %s, not %s' % (where, what, _a(_type_name(value)), _a(wanted)))
    return value


def crd_versions(document, position=0, origin=''):
    """The served versions of one CRD document: ``[(group, version, kind, plural, scope, schema, version_doc)]``.

    Refuses (CrdError naming the CRD, the part and the fix) what the API server would refuse to install: missing or
    wrongly typed group, names, versions, schemas.
    """
    where = _describe(document, position, origin)
    spec = _part(document, 'spec', 'object', 'spec', where)
    group = _part(spec, 'group', 'string', 'spec.group', where)
    names = _part(spec, 'names', 'object', 'spec.names', where)
    kind = _part(names, 'kind', 'string', 'spec.names.kind', where)
    plural = _part(names, 'plural', 'string', 'spec.names.plural', where) if 'plural' in names else kind.lower() + 's'
    scope = spec.get('scope', 'Namespaced')
    if scope not in ('Namespaced', 'Cluster'):
        raise CrdError('%s: spec.scope is %r; it is Namespaced or Cluster' % (where, scope))
    versions = _part(spec, 'versions', 'array', 'spec.versions', where)
    served = []
    for number, version in enumerate(versions):
        what = 'spec.versions[%d]' % number
        if not isinstance(version, dict):
            raise CrdError('%s: %s is %s, not an object' % (where, what, _a(_type_name(version))))
        name = _part(version, 'name', 'string', what + '.name', where)
        if not isinstance(version.get('served', True), bool):
            raise CrdError('%s: %s.served is %s, not a boolean' % (where, what, _a(_type_name(version['served']))))
        schema = _part(_part(version, 'schema', 'object', what + '.schema', where), 'openAPIV3Schema', 'object',
                       what + '.schema.openAPIV3Schema', where)
        check_schema(schema, '%s: %s.schema.openAPIV3Schema' % (where, what))
        if version.get('served', True):
            served.append((group, name, kind, plural, scope, schema, version))
    return served


def crd_index(documents, origin=''):
    """CRD documents -> ``{(apiVersion, kind): openAPIV3Schema}`` for every served version.

    Documents of other kinds are skipped (a chart's folder holds values too); a CRD that is malformed is a CrdError.
    """
    index = {}
    for position, document in enumerate(documents if isinstance(documents, list) else [documents]):
        if not isinstance(document, dict) or document.get('kind') != 'CustomResourceDefinition':
            continue
        for group, version, kind, _plural, _scope, schema, _doc in crd_versions(document, position, origin):
            index[('%s/%s' % (group, version), kind)] = schema
    return index


def check_schema(schema, where='openAPIV3Schema'):
    """A CrdError naming the first part of ``schema`` that jsonschema cannot use (wrong types of keywords)."""
    if jsonschema is None:
        return
    try:
        jsonschema.Draft7Validator.check_schema(_schema_for_jsonschema(schema))
    except jsonschema.SchemaError as exc:
        path = '.'.join(str(part) for part in exc.absolute_path)
        raise CrdError('%s%s is not a valid schema: %s; fix the CRD (it is not what the API server accepts)'
                       % (where, '.' + path if path else '', exc.message))
    _check_structure(schema, where)


def _check_structure(schema, where):
    """The parts the walks read must have the types Kubernetes' structural schemas give them."""
    if not isinstance(schema, dict):
        raise CrdError('%s is %s, not a schema object' % (where, _a(_type_name(schema))))
    for key, wanted in (('properties', 'object'), ('items', 'object')):
        if key in schema and _type_name(schema[key]) != wanted:
            raise CrdError('%s.%s is %s, not %s (structural schemas of CRDs need one)'
                           % (where, key, _a(_type_name(schema[key])), _a(wanted)))
    for name, sub in (schema.get('properties') or {}).items():
        _check_structure(sub, '%s.properties.%s' % (where, name))
    if isinstance(schema.get('items'), dict):
        _check_structure(schema['items'], where + '.items')
    if isinstance(schema.get('additionalProperties'), dict):
        _check_structure(schema['additionalProperties'], where + '.additionalProperties')


def _join(path, key):
    return '%s.%s' % (path, key) if path else str(key)


def _schema_properties(schema, path):
    properties = schema.get('properties')
    if properties is not None and not isinstance(properties, dict):
        raise CrdError('the schema at %s has properties of type %s, not an object'
                       % (path or '(root)', _type_name(properties)))
    return properties


def _walk(value, schema, path, found, root, resolve=None):
    """``value`` without the keys ``schema`` does not declare; their paths are appended to ``found``.

    ``resolve`` follows references (``$ref``) of schemas that have them (the built-in kinds' OpenAPI schemas).
    """
    if resolve is not None:
        schema = resolve(schema)
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        properties = _schema_properties(schema, path)
        additional = schema.get('additionalProperties')
        preserve = schema.get('x-kubernetes-preserve-unknown-fields') is True
        embedded = schema.get('x-kubernetes-embedded-resource') is True
        kept = {}
        for key, item in value.items():
            where = _join(path, key)
            if properties is not None and key in properties:
                if (root or embedded) and key == 'metadata' and isinstance(item, dict):
                    sub = resolve(properties[key]) if resolve is not None else properties[key]
                    kept[key] = _walk_metadata(item, sub if isinstance(sub, dict) else {}, where, found)
                else:
                    kept[key] = _walk(item, properties[key], where, found, False, resolve)
            elif (root or embedded) and key in ('apiVersion', 'kind'):
                kept[key] = item
            elif (root or embedded) and key == 'metadata' and isinstance(item, dict):
                kept[key] = _walk_metadata(item, {}, where, found)
            elif isinstance(additional, dict):
                kept[key] = _walk(item, additional, where, found, False, resolve)
            elif additional is True or preserve or (properties is None and additional is None
                                                    and schema.get('type') != 'object'):
                kept[key] = item
            else:
                found.append(where)
        return kept
    if isinstance(value, list):
        items = schema.get('items')
        if items is not None and not isinstance(items, dict):
            raise CrdError('the schema at %s has items of type %s, not an object'
                           % (path or '(root)', _type_name(items)))
        if items is None:
            return value
        return [_walk(item, items, '%s[%d]' % (path, position), found, False, resolve)
                for position, item in enumerate(value)]
    return value


def _walk_metadata(metadata, schema, path, found):
    """ObjectMeta: the API server knows its fields whatever the CRD's (usually empty) metadata schema says."""
    kept = {}
    for key, item in metadata.items():
        if key in OBJECT_META_FIELDS or (isinstance(schema.get('properties'), dict) and key in schema['properties']):
            kept[key] = item
        else:
            found.append(_join(path, key))
    return kept


def unknown_fields(value, schema, path='', resolve=None):
    """Paths of keys that ``schema`` does not declare (honours preserve-unknown-fields and maps)."""
    found = []
    _walk(value, schema, path, found, not path, resolve)
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
    if schema.get('nullable') is True:
        kind = converted.get('type')
        if isinstance(kind, str):
            converted['type'] = [kind, 'null']
        if isinstance(converted.get('enum'), list) and None not in converted['enum']:
            converted['enum'] = converted['enum'] + [None]
    return converted


def field_path(parts):
    """``['spec', 'items', 0, 'name']`` -> ``spec.items[0].name`` (how the API server names fields)."""
    text = ''
    for part in parts:
        text = text + '[%d]' % part if isinstance(part, int) else _join(text, part)
    return text


def schema_findings(value, schema):
    """jsonschema findings as the API server reports them: ``[{'field', 'reason', 'message', 'detail'}]``.

    ``field`` is the Kubernetes field path (``spec.items[0].name``), ``reason`` a StatusCause reason, ``message``
    what kube-apiserver says of it; ``detail`` is jsonschema's own message with its dotted path.
    """
    if jsonschema is None:
        raise CrdError('the jsonschema Python package is needed on the controller to validate against CRDs '
                       '(pip install jsonschema)')
    check_schema(schema)
    validator = jsonschema.Draft7Validator(_schema_for_jsonschema(schema))
    findings = []
    try:
        errors = sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
    except (re.error, TypeError, ValueError) as exc:  # a pattern Python's re cannot compile, and the like
        raise CrdError('the schema cannot be applied: %s; fix the CRD' % exc)
    for error in errors:
        parts = list(error.absolute_path)
        dotted = '.'.join(str(part) for part in parts) or '(root)'
        reason = REASONS.get(error.validator, 'FieldValueInvalid')
        if error.validator == 'required' and isinstance(error.instance, dict):
            # one error per missing property; jsonschema names it only in its message
            match = re.match(r"^'(.*)' is a required property$", error.message)
            missing = [match.group(1)] if match else [n for n in error.validator_value if n not in error.instance]
            for name in missing:
                findings.append({'field': field_path(parts + [name]), 'reason': reason,
                                 'message': 'Required value', 'detail': '%s: %s' % (dotted, error.message)})
            continue
        field = field_path(parts) or '<root>'
        shown = error.instance if isinstance(error.instance, (str, int, float, bool)) else _type_name(error.instance)
        if error.validator == 'type':
            message = 'Invalid value: "%s": %s in body must be of type %s: "%s"' % (
                _type_name(error.instance), field, _expected_type(error.validator_value), _type_name(error.instance))
        elif error.validator == 'enum':
            message = 'Unsupported value: %s: supported values: %s' % (
                _quote(error.instance), ', '.join(_quote(v) for v in error.validator_value or []))
        elif error.validator == 'pattern':
            message = 'Invalid value: %s: %s in body should match \'%s\'' % (
                _quote(shown), field, error.validator_value)
        else:
            message = 'Invalid value: %s: %s' % (_quote(shown), error.message)
        findings.append({'field': field, 'reason': reason, 'message': message,
                         'detail': '%s: %s' % (dotted, error.message)})
    return findings


def _expected_type(value):
    if isinstance(value, list):
        return '/'.join(str(v) for v in value if v != 'null')
    return str(value)


def _quote(value):
    if isinstance(value, str):
        return '"%s"' % value
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if value is None:
        return 'null'
    return str(value)


def schema_errors(value, schema):
    """jsonschema findings as ``path: message`` strings (sorted)."""
    return sorted(finding['detail'] for finding in schema_findings(value, schema))


def object_identity(obj):
    """``(apiVersion, kind, name)`` of an object of any shape, for messages (``?`` where it has none)."""
    if not isinstance(obj, dict):
        return '?', '?', '?'
    metadata = obj.get('metadata') if isinstance(obj.get('metadata'), dict) else {}
    return tuple(value if isinstance(value, str) and value else '?'
                 for value in (obj.get('apiVersion'), obj.get('kind'), metadata.get('name')))


def validate_object(obj, index, release=''):
    """Every problem of one object against the CRDs of ``index``; an empty list when it is valid."""
    if not isinstance(obj, dict):
        return ['not a mapping but %s: a Kubernetes object is a mapping with apiVersion, kind and metadata'
                % _a(_type_name(obj))]
    problems = []
    for field in ('apiVersion', 'kind'):
        if field not in obj:
            problems.append('%s: missing; every Kubernetes object has one' % field)
        elif not isinstance(obj[field], str):
            problems.append('%s: %s, not a string' % (field, _a(_type_name(obj[field]))))
    if problems:
        return problems
    key = (obj['apiVersion'], obj['kind'])
    schema = index.get(key)
    if schema is None:
        known = ', '.join(sorted('%s %s' % k for k in index)) or 'none'
        return ['no CRD for %s %s%s (known: %s)' % (key[0], key[1], ' in ' + release if release else '', known)]
    if not isinstance(obj.get('metadata'), dict):
        shape = 'missing' if 'metadata' not in obj else '%s, not a mapping' % _a(_type_name(obj['metadata']))
        problems.append('metadata: %s; every Kubernetes object has a metadata mapping with its name' % shape)
    elif not obj['metadata'].get('name') and not obj['metadata'].get('generateName'):
        problems.append('metadata.name: missing; the API server needs a name (or generateName)')
    problems.extend(schema_errors(obj, schema))
    for where in unknown_fields(obj, schema):
        problems.append('%s: field not declared by the %s CRD%s (the API server would prune it)'
                        % (where, key[1], ' of ' + release if release else ''))
    return problems
