# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""TEST DOUBLE support: how kube-apiserver checks objects, for tests/doubles/kube_apiserver.py.

The double must not judge objects with the collection's own checks (plugins/module_utils/cluster/_crd_schema.py and
_core_schema.py): a gap there would then be a gap of the "API server" too, and every role test against the double
would agree with the collection by construction. So this module imports nothing from the collection; it is written
from the Kubernetes documentation of CustomResourceDefinitions (structural schemas, pruning, defaulting, validation)
and uses the third-party ``jsonschema`` and ``kubernetes_validate`` packages directly.

Custom resources, as kube-apiserver handles them:

* pruning (``prune``): a field the structural schema does not declare is dropped; ``x-kubernetes-preserve-unknown-
  fields: true`` keeps the unknown fields of its subtree (the declared ones are still pruned below it); a map
  (``additionalProperties``) keeps every key and prunes its values; ``apiVersion``, ``kind`` and ``metadata`` of the
  resource and of every ``x-kubernetes-embedded-resource`` are not pruned by the schema, ``metadata`` being decoded
  into ObjectMeta (its unknown fields dropped). The pruned paths are what a ``Warning`` or a strict decoding error
  names;
* defaulting (``default``): on the decoded object (create, update, patch, apply) and on every read, a property that is
  absent gets the ``default`` of its schema, inside objects that are present only (a default never creates its
  parent, unless the parent has a default itself); a ``null`` where the schema is not ``nullable`` is dropped first,
  or replaced by the default when there is one;
* validation (``findings``): the OpenAPI v3 schema checked with jsonschema (OpenAPI v3.0 schemas are JSON Schema
  draft 4 with extensions): ``nullable: true`` lets ``null`` through every keyword of its node,
  ``x-kubernetes-int-or-string: true`` takes an integer or a string, ``x-kubernetes-embedded-resource: true`` needs
  ``apiVersion`` and ``kind`` strings, the ``int32`` / ``int64`` formats are integers and nothing more, the string
  formats kube-apiserver checks (``date-time``, ``date``, ``byte``, ``ipv4``, ``ipv6``, ``cidr``, ``mac``, ``uuid``)
  are checked; the findings are the StatusCauses of a 422 Invalid answer, worded as kube-apiserver words them.
  Not modelled: CEL rules (``x-kubernetes-validations``), list-type uniqueness, ObjectMeta of embedded resources.

Built-in kinds are checked against the Kubernetes OpenAPI schemas that the kubernetes-validate package ships
(``BuiltinSchema``), decoded as Go structs are: an unknown field is dropped anywhere a struct is.
"""

from __future__ import annotations

import base64
import copy
import datetime
import ipaddress
import re
import uuid

import jsonschema

try:
    import kubernetes_validate
except ImportError:  # pragma: no cover - reported when a built-in schema is needed
    kubernetes_validate = None

# metav1.ObjectMeta's fields: a custom resource's metadata is decoded into it, whatever the CRD's schema says.
OBJECT_META_FIELDS = frozenset([
    'name', 'generateName', 'namespace', 'selfLink', 'uid', 'resourceVersion', 'generation', 'creationTimestamp',
    'deletionTimestamp', 'deletionGracePeriodSeconds', 'labels', 'annotations', 'ownerReferences', 'finalizers',
    'managedFields'])
TYPE_META_FIELDS = ('apiVersion', 'kind')
# The values ``type`` may have in a structural schema.
SCHEMA_TYPES = ('object', 'array', 'string', 'integer', 'number', 'boolean')


def _json_type(value):
    if isinstance(value, bool):
        return 'boolean'
    if isinstance(value, int):
        return 'integer'
    names = {dict: 'object', list: 'array', str: 'string', float: 'number', type(None): 'null'}
    return names.get(type(value), type(value).__name__)


def field_path(parts):
    """``['spec', 'items', 0, 'name']`` -> ``spec.items[0].name``, as kube-apiserver names a field."""
    text = ''
    for part in parts:
        if isinstance(part, int):
            text += '[%d]' % part
        else:
            text = '%s.%s' % (text, part) if text else str(part)
    return text


def _child(path, key):
    return '%s.%s' % (path, key) if path else str(key)


def _shown(value):
    """A value in a field error, as Go's ``%v``/``%q`` prints it there."""
    if isinstance(value, str):
        return '"%s"' % value
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if value is None:
        return 'null'
    if isinstance(value, (int, float)):
        return str(value)
    return '"%s"' % _json_type(value)


# ------------------------------------------------------------------------------------------------ CRDs

def _text(value):
    return value if isinstance(value, str) and value else None


def served_versions(crd):
    """``[(group, version, kind, plural, scope, openAPIV3Schema, version document)]`` of a stored CRD's served versions.

    Lenient (a CRD that is not usable serves nothing, as it would never have been stored): ``crd_problems`` is what
    refuses one when it is written.
    """
    spec = crd.get('spec') if isinstance(crd, dict) else None
    if not isinstance(spec, dict) or not isinstance(spec.get('names'), dict):
        return []
    group, kind, plural = _text(spec.get('group')), _text(spec['names'].get('kind')), _text(spec['names'].get('plural'))
    scope = spec.get('scope')
    if not (group and kind and plural) or scope not in ('Namespaced', 'Cluster'):
        return []
    served = []
    for version in spec.get('versions') if isinstance(spec.get('versions'), list) else []:
        if not isinstance(version, dict) or not _text(version.get('name')) or version.get('served') is False:
            continue
        schema = (version.get('schema') or {}).get('openAPIV3Schema') if isinstance(version.get('schema'),
                                                                                    dict) else None
        if isinstance(schema, dict):
            served.append((group, version['name'], kind, plural, scope, schema, version))
    return served


def _required(field, detail=''):
    return {'reason': 'FieldValueRequired', 'field': field, 'message': 'Required value' + (': ' + detail if detail
                                                                                           else '')}


def _invalid(field, value, detail):
    return {'reason': 'FieldValueInvalid', 'field': field, 'message': 'Invalid value: %s: %s' % (_shown(value), detail)}


def _forbidden(field, detail):
    return {'reason': 'FieldValueForbidden', 'field': field, 'message': 'Forbidden: ' + detail}


def crd_problems(crd):
    """The StatusCauses kube-apiserver answers a CRD it refuses with (apiextensions.k8s.io/v1); ``[]`` if it is fine."""
    spec = crd.get('spec') if isinstance(crd.get('spec'), dict) else {}
    names = spec.get('names') if isinstance(spec.get('names'), dict) else {}
    causes = []
    group, plural = _text(spec.get('group')), _text(names.get('plural'))
    for field, value in (('spec.group', group), ('spec.names.plural', plural), ('spec.names.kind', names.get('kind'))):
        if not _text(value):
            causes.append(_required(field))
    name = (crd.get('metadata') or {}).get('name')
    if group and plural and name != '%s.%s' % (plural, group):
        causes.append(_invalid('metadata.name', name, 'must be spec.names.plural+"."+spec.group'))
    if spec.get('scope') not in ('Namespaced', 'Cluster'):
        causes.append(_required('spec.scope') if spec.get('scope') is None else {
            'reason': 'FieldValueNotSupported', 'field': 'spec.scope',
            'message': 'Unsupported value: %s: supported values: "Cluster", "Namespaced"' % _shown(spec['scope'])})
    versions = spec.get('versions') if isinstance(spec.get('versions'), list) else []
    if not versions:
        causes.append(_invalid('spec.versions', 'null', 'must have exactly one version marked as storage version'))
    elif len([v for v in versions if isinstance(v, dict) and v.get('storage') is True]) != 1:
        causes.append(_invalid('spec.versions', '%d storage versions' % len(
            [v for v in versions if isinstance(v, dict) and v.get('storage') is True]),
            'must have exactly one version marked as storage version'))
    for number, version in enumerate(versions):
        where = 'spec.versions[%d]' % number
        if not isinstance(version, dict):
            continue
        if not _text(version.get('name')):
            causes.append(_required(where + '.name'))
        schema = (version.get('schema') or {}).get('openAPIV3Schema') if isinstance(version.get('schema'),
                                                                                    dict) else None
        if not isinstance(schema, dict):
            causes.append(_required(where + '.schema.openAPIV3Schema', 'schemas are required'))
            continue
        causes.extend(_schema_problems(schema, where + '.schema.openAPIV3Schema'))
    return causes


def _schema_problems(schema, where):
    """What makes a schema unusable: not structural in the parts the double reads, or not a JSON schema."""
    causes = []
    _structure_problems(schema, where, causes)
    if not causes:
        try:
            jsonschema.Draft4Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            causes.append(_invalid(field_path([where] + list(exc.absolute_path)), exc.instance, exc.message))
    return causes


def _structure_problems(node, where, causes):
    if not isinstance(node, dict):
        causes.append(_invalid(where, node, 'must be a schema object'))
        return
    kind = node.get('type')
    if kind is not None and kind not in SCHEMA_TYPES:
        causes.append({'reason': 'FieldValueNotSupported', 'field': where + '.type',
                       'message': 'Unsupported value: %s: supported values: %s'
                                  % (_shown(kind), ', '.join('"%s"' % t for t in SCHEMA_TYPES))})
    properties = node.get('properties')
    if properties is not None and not isinstance(properties, dict):
        causes.append(_invalid(where + '.properties', properties, 'must be a map of schemas'))
        properties = None
    if properties and isinstance(node.get('additionalProperties'), dict):
        causes.append(_forbidden(where + '.additionalProperties', 'additionalProperties and properties are mutual '
                                                                  'exclusive'))
    for name, sub in (properties or {}).items():
        _structure_problems(sub, '%s.properties[%s]' % (where, name), causes)
    if 'items' in node:
        if isinstance(node['items'], dict):
            _structure_problems(node['items'], where + '.items', causes)
        else:
            causes.append(_forbidden(where + '.items', 'items must be a schema object and not an array'))
    if isinstance(node.get('additionalProperties'), dict):
        _structure_problems(node['additionalProperties'], where + '.additionalProperties', causes)


# ------------------------------------------------------------------------------------------------ custom resources

def _preserves(node):
    return isinstance(node, dict) and node.get('x-kubernetes-preserve-unknown-fields') is True


def _object_meta(value, node, path, found):
    """ObjectMeta as the decoder reads it: its own fields, and those the CRD's metadata schema names."""
    if not isinstance(value, dict):
        return value
    declared = node.get('properties') if isinstance(node, dict) and isinstance(node.get('properties'), dict) else {}
    kept = {}
    for key, item in value.items():
        if key in OBJECT_META_FIELDS or key in declared:
            kept[key] = item
        else:
            found.append(_child(path, key))
    return kept


def _prune(value, node, path, found, resource, preserving=False):
    """``value`` without what ``node`` does not declare; the dropped paths appended to ``found``.

    ``node`` None is no schema at all (an array without items, a map of ``additionalProperties: true``): every field
    of an object there is dropped. ``resource`` marks the resource root and embedded resources (TypeMeta and
    ObjectMeta are not the schema's); ``preserving`` is a subtree under ``x-kubernetes-preserve-unknown-fields``.
    """
    preserving = preserving or _preserves(node)
    if isinstance(value, dict):
        resource = resource or (isinstance(node, dict) and node.get('x-kubernetes-embedded-resource') is True)
        node = node if isinstance(node, dict) else {}
        properties = node.get('properties') if isinstance(node.get('properties'), dict) else {}
        additional = node.get('additionalProperties')
        kept = {}
        for key, item in value.items():
            where = _child(path, key)
            if resource and key in TYPE_META_FIELDS:
                kept[key] = item
            elif resource and key == 'metadata':
                kept[key] = _object_meta(item, properties.get('metadata'), where, found)
            elif key in properties:
                kept[key] = _prune(item, properties[key], where, found, False)
            elif additional is not None and additional is not False:
                kept[key] = _prune(item, additional if isinstance(additional, dict) else None, where, found, False)
            elif preserving:
                kept[key] = item
            else:
                found.append(where)
        return kept
    if isinstance(value, list):
        items = node.get('items') if isinstance(node, dict) and isinstance(node.get('items'), dict) else None
        if items is None and preserving:
            return value
        return [_prune(item, items, '%s[%d]' % (path, number), found, False, preserving)
                for number, item in enumerate(value)]
    return value


def _has_default(node):
    return isinstance(node, dict) and node.get('default') is not None


def _non_nullable(node):
    return isinstance(node, dict) and node.get('nullable') is not True


def _default(value, node):
    """Apply the defaults of ``node`` inside ``value`` (changed in place)."""
    if not isinstance(node, dict):
        return
    if isinstance(value, dict):
        properties = node.get('properties') if isinstance(node.get('properties'), dict) else {}
        additional = node.get('additionalProperties') if isinstance(node.get('additionalProperties'), dict) else None
        for key in list(value):
            sub = properties.get(key) if key in properties else additional
            if value[key] is None and _non_nullable(sub):
                if _has_default(sub):
                    value[key] = copy.deepcopy(sub['default'])
                else:
                    del value[key]  # a null the schema does not allow is dropped before defaulting
        for key, sub in properties.items():
            if key not in value and _has_default(sub):
                value[key] = copy.deepcopy(sub['default'])
        for key, item in value.items():
            _default(item, properties.get(key) if key in properties else additional)
    elif isinstance(value, list) and isinstance(node.get('items'), dict):
        items = node['items']
        for number, item in enumerate(value):
            if item is None and _non_nullable(items) and _has_default(items):
                value[number] = copy.deepcopy(items['default'])
            _default(value[number], items)


def _skipping_null(check):
    """A keyword's check that lets ``null`` through where the schema node is ``nullable: true``."""

    def nullable_check(validator, value, instance, schema):
        if instance is None and schema.get('nullable') is True:
            return
        yield from check(validator, value, instance, schema) or ()
    return nullable_check


def _int_or_string(validator, value, instance, schema):  # pylint: disable=unused-argument
    if value is True and not (validator.is_type(instance, 'integer') or validator.is_type(instance, 'string')):
        yield jsonschema.ValidationError('%r is not an integer or a string' % (instance,), validator='type',
                                         validator_value=['integer', 'string'])


def _any_of(check):
    """``anyOf`` without the integer/string branches that accompany ``x-kubernetes-int-or-string`` (the extension
    already says it, and kube-apiserver reports it once)."""

    def any_of(validator, value, instance, schema):
        if schema.get('x-kubernetes-int-or-string') is True:
            value = [branch for branch in value if not (isinstance(branch, dict) and set(branch) <= {'type'}
                                                        and branch.get('type') in ('integer', 'string'))]
            if not value:
                return
        yield from check(validator, value, instance, schema) or ()
    return any_of


def _embedded_resource(validator, value, instance, schema):  # pylint: disable=unused-argument
    if value is not True or not validator.is_type(instance, 'object'):
        return
    for key in TYPE_META_FIELDS:
        if key not in instance or instance[key] == '':
            yield jsonschema.ValidationError('%r is a required property' % key, validator='required',
                                             validator_value=[key])
        elif not isinstance(instance[key], str):
            yield jsonschema.ValidationError('must be a string', validator='x-kubernetes-embedded-resource',
                                             validator_value=True, path=[key], instance=instance[key])


def _integer(checker, instance):  # pylint: disable=unused-argument
    """JSON numbers with no fraction are integers, as Go's JSON decoding and kube-openapi's validation see them."""
    if isinstance(instance, bool):
        return False
    return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())


FORMATS = jsonschema.FormatChecker(formats=())
_DATE_TIME = re.compile(r'^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$')
_MAC = re.compile(r'^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{2}[:-]){19}[0-9A-Fa-f]{2}$'
                  r'|^([0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}$')


@FORMATS.checks('date-time')
def _is_date_time(value):
    if not isinstance(value, str):
        return True
    if not _DATE_TIME.match(value):
        return False
    try:
        datetime.date(int(value[0:4]), int(value[5:7]), int(value[8:10]))
    except ValueError:
        return False
    return True


@FORMATS.checks('date')
def _is_date(value):
    if not isinstance(value, str):
        return True
    try:
        datetime.datetime.strptime(value, '%Y-%m-%d')
    except ValueError:
        return False
    return True


@FORMATS.checks('byte')
def _is_base64(value):
    if not isinstance(value, str):
        return True
    try:
        base64.b64decode(value, validate=True)
    except ValueError:
        return False
    return True


@FORMATS.checks('ipv4')
def _is_ipv4(value):
    return not isinstance(value, str) or _parses(ipaddress.IPv4Address, value)


@FORMATS.checks('ipv6')
def _is_ipv6(value):
    return not isinstance(value, str) or _parses(ipaddress.IPv6Address, value)


@FORMATS.checks('cidr')
def _is_cidr(value):
    return not isinstance(value, str) or ('/' in value and _parses(lambda v: ipaddress.ip_network(v, strict=False),
                                                                   value))


@FORMATS.checks('mac')
def _is_mac(value):
    return not isinstance(value, str) or bool(_MAC.match(value))


@FORMATS.checks('uuid')
def _is_uuid(value):
    return not isinstance(value, str) or _parses(uuid.UUID, value)


def _parses(parse, value):
    try:
        parse(value)
    except ValueError:
        return False
    return True


def _openapi_v3_validator():
    """JSON Schema draft 4 (what OpenAPI v3.0 schemas are) with kube-apiserver's reading of the extensions."""
    base = jsonschema.Draft4Validator
    keywords = dict((name, _skipping_null(check)) for name, check in base.VALIDATORS.items() if name != '$ref')
    keywords['anyOf'] = _skipping_null(_any_of(base.VALIDATORS['anyOf']))
    keywords['x-kubernetes-int-or-string'] = _skipping_null(_int_or_string)
    keywords['x-kubernetes-embedded-resource'] = _skipping_null(_embedded_resource)
    checker = base.TYPE_CHECKER.redefine('integer', _integer)
    return jsonschema.validators.extend(base, validators=keywords, type_checker=checker)


OpenApiV3Validator = _openapi_v3_validator()
# What a schema keyword's failure is called in a StatusCause (k8s.io/apimachinery field errors).
REASONS = {
    'required': 'FieldValueRequired',
    'type': 'FieldValueTypeInvalid',
    'enum': 'FieldValueNotSupported',
    'maxItems': 'FieldValueTooMany',
    'maxProperties': 'FieldValueTooMany',
    'maxLength': 'FieldValueTooLong',
    'uniqueItems': 'FieldValueDuplicate',
}


def _expected(value):
    names = [v for v in (value if isinstance(value, list) else [value]) if v != 'null']
    return '/'.join(str(v) for v in names)


def _bound(error, field, word):
    exclusive = error.schema.get('exclusive' + word.capitalize()) is True
    relation = {'maximum': 'less than', 'minimum': 'greater than'}[word]
    return '%s in body should be %s%s %s' % (field, relation, '' if exclusive else ' or equal to',
                                             error.validator_value)


def _message(error, field):
    """What kube-apiserver says of one failed keyword (its OpenAPI validation's wording)."""
    value, limit, keyword = error.instance, error.validator_value, error.validator
    if keyword == 'type':
        return 'Invalid value: "%s": %s in body must be of type %s: "%s"' % (
            _json_type(value), field, _expected(limit), _json_type(value))
    if keyword == 'enum':
        return 'Unsupported value: %s: supported values: %s' % (_shown(value), ', '.join(_shown(v) for v in limit))
    if keyword == 'pattern':
        return 'Invalid value: %s: %s in body should match \'%s\'' % (_shown(value), field, limit)
    if keyword == 'format':
        return 'Invalid value: %s: %s in body must be of type %s: %s' % (_shown(value), field, limit, _shown(value))
    if keyword == 'maxLength':
        return 'Too long: may not be more than %d bytes' % limit
    if keyword in ('maxItems', 'maxProperties'):
        return 'Too many: %d: must have at most %d items' % (len(value), limit)
    if keyword == 'uniqueItems':
        return 'Duplicate value: %s' % _shown(value)
    details = {
        'minLength': lambda: '%s in body should be at least %d chars long' % (field, limit),
        'minItems': lambda: '%s in body should have at least %d items' % (field, limit),
        'minProperties': lambda: '%s in body should have at least %d properties' % (field, limit),
        'maximum': lambda: _bound(error, field, 'maximum'),
        'minimum': lambda: _bound(error, field, 'minimum'),
        'multipleOf': lambda: '%s in body should be a multiple of %s' % (field, limit),
        'anyOf': lambda: '%s in body must validate at least one schema (anyOf)' % field,
        'oneOf': lambda: '%s in body must validate one and only one schema (oneOf)' % field,
        'allOf': lambda: '%s in body must validate all the schemas (allOf)' % field,
        'not': lambda: '%s in body must not validate the schema (not)' % field,
        'x-kubernetes-embedded-resource': lambda: 'must be a string',
    }
    return 'Invalid value: %s: %s' % (_shown(value), details.get(keyword, lambda: error.message)())


class StructuralSchema(object):
    """One version of a CRD: its openAPIV3Schema, used to prune, default and validate custom resources."""

    def __init__(self, root):
        self.root = root if isinstance(root, dict) else {}
        self._validator = None

    def prune(self, obj):
        """``(obj without its undeclared fields, their paths)``: what kube-apiserver decodes of a request."""
        found = []
        return _prune(copy.deepcopy(obj), self.root, '', found, True), found

    def default(self, obj):
        """``obj`` (a copy) with the schema's defaults, as decoding and reading from storage give them."""
        result = copy.deepcopy(obj)
        _default(result, self.root)
        return result

    def findings(self, obj):
        """The StatusCauses of the schema's validation: ``[{'reason', 'message', 'field'}]``, by field."""
        if self._validator is None:
            self._validator = OpenApiV3Validator(self.root, format_checker=FORMATS)
        try:
            errors = sorted(self._validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path])
        except re.error as exc:
            raise RuntimeError('the double cannot evaluate a pattern of the CRD with Python\'s re (%s); the API '
                               'server evaluates it with RE2' % exc)
        causes = []
        for error in errors:
            parts = list(error.absolute_path)
            if error.validator == 'required':
                match = re.match(r"^'(.*)' is a required property$", error.message)
                missing = [match.group(1)] if match else [n for n in error.validator_value if n not in error.instance]
                causes.extend(_required(field_path(parts + [name])) for name in missing)
                continue
            field = field_path(parts) or '<root>'
            causes.append({'reason': REASONS.get(error.validator, 'FieldValueInvalid'), 'field': field,
                           'message': _message(error, field)})
        return causes


# ------------------------------------------------------------------------------------------------ built-in kinds

def _minor(version):
    return '.'.join(str(version).lstrip('v').split('.')[:2])


def _prune_struct(value, node, path, found, resolve):
    """Go's JSON decoding into the API structs: fields a struct does not have are dropped, maps keep their keys, and
    a free-form value (RawExtension, FieldsV1, JSON: an object schema without properties) is kept whole."""
    node = resolve(node)
    if not isinstance(node, dict):
        return value
    if isinstance(value, dict):
        properties = node.get('properties')
        additional = node.get('additionalProperties')
        if not isinstance(properties, dict) and not isinstance(additional, dict):
            return value
        kept = {}
        for key, item in value.items():
            where = _child(path, key)
            if isinstance(properties, dict) and key in properties:
                kept[key] = _prune_struct(item, properties[key], where, found, resolve)
            elif isinstance(additional, dict):
                kept[key] = _prune_struct(item, additional, where, found, resolve)
            else:
                found.append(where)
        return kept
    if isinstance(value, list) and isinstance(node.get('items'), dict):
        return [_prune_struct(item, node['items'], '%s[%d]' % (path, number), found, resolve)
                for number, item in enumerate(value)]
    return value


class BuiltinSchema(object):
    """The strict OpenAPI schema of one built-in kind (kubernetes-validate's), with its ``$ref`` definitions."""

    def __init__(self, api_version, kind, kubernetes_version):
        if kubernetes_validate is None:
            raise RuntimeError('the kube-apiserver double needs the kubernetes-validate package (pip install '
                               'kubernetes-validate)')
        utils = kubernetes_validate.utils
        minor = _minor(kubernetes_version)
        releases = [v for v in utils.all_versions() if _minor(v) == minor]
        if not releases:
            raise RuntimeError('kubernetes-validate %s has no schemas of Kubernetes %s'
                               % (kubernetes_validate.__version__, minor))
        folder = 'kubernetes-json-schema/v%s-local-strict' % releases[-1]
        group_version = re.sub(r'^([^./]*)(?:\.[^/]*)?/', r'\1-', api_version)
        try:
            self.root = utils.schema_contents('%s/%s-%s.json' % (folder, kind.lower(), group_version), releases[-1])
        except (IOError, OSError):
            raise LookupError('no schema for %s %s in Kubernetes %s' % (api_version, kind, minor))
        definitions = utils.schema_contents('%s/_definitions.json' % folder, releases[-1])
        self.definitions = definitions.get('$defs') or definitions.get('definitions') or {}
        self._documents = (self.root, definitions)
        self._validator = None

    def resolve(self, node):
        """``node`` with its ``$ref`` followed (``#/$defs/X`` or ``/api/_definitions.json#/$defs/X``)."""
        for _hop in range(20):
            if not (isinstance(node, dict) and '$ref' in node):
                break
            node = self.definitions.get(node['$ref'].rpartition('/')[2], {})
        return node

    def prune(self, obj):
        """``(obj without the fields the kind's structs do not have, their paths)``."""
        found = []
        return _prune_struct(copy.deepcopy(obj), self.root, '', found, self.resolve), found

    def errors(self, obj):
        """Every jsonschema error of ``obj``, by path."""
        if self._validator is None:
            from referencing import Registry, Resource  # jsonschema's own dependency
            registry = Registry()
            for document in self._documents:
                registry = Resource.from_contents(document) @ registry
            self._validator = jsonschema.Draft202012Validator(self.root, registry=registry)
        return sorted(self._validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path])


_BUILTIN = {}


def builtin_schema(api_version, kind, kubernetes_version):
    """The BuiltinSchema of a kind (cached); LookupError when Kubernetes has no such kind."""
    key = (api_version, kind, _minor(kubernetes_version))
    if key not in _BUILTIN:
        _BUILTIN[key] = BuiltinSchema(api_version, kind, kubernetes_version)
    return _BUILTIN[key]
