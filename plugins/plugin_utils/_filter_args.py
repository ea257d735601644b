# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Argument checks shared by the collection's filter plugins.

A filter given input of the wrong type or shape fails with ``AnsibleFilterError`` naming the filter, the argument
and what it expects - never with a Python traceback (``TypeError``, ``KeyError``, ``'str' object has no attribute
'get'``)::

    @filter_args('check', ports=a_list('rdma_ports records', a_dict('an rdma_ports record'), nullable=True),
                 expectation=a_dict('an expectation', nullable=True))
    def rdma_check(ports, expectation=None):
        ...

Each spec checks one argument before the filter runs; anything the filter still trips over while processing
(a nested value of an unexpected type) becomes an ``AnsibleFilterError`` that names the filter, the error and the
expected arguments.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Iterable, Iterator, Mapping

from ansible.errors import AnsibleError, AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.plugin_utils._ledger import LedgerError, check_ledger

# What processing input of an unexpected shape raises; converted into AnsibleFilterError by filter_args.
SHAPE_ERRORS = (TypeError, ValueError, LookupError, AttributeError, ArithmeticError)
_SHORT = 60


def type_name(value):
    """The YAML-ish name of a value's type: dict, list, str, int, float, bool, null."""
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'bool'
    if isinstance(value, str):
        return 'str'
    if isinstance(value, Mapping):
        return 'dict'
    if isinstance(value, (list, tuple)):
        return 'list'
    if isinstance(value, int):
        return 'int'
    if isinstance(value, float):
        return 'float'
    return type(value).__name__


def describe(value):
    """A value for an error message: its type and a short form (containers are not printed whole)."""
    name = type_name(value)
    if value is None:
        return name
    if isinstance(value, Mapping):
        keys = [str(key) for key in list(value)[:5]]
        if not keys:
            return 'an empty dict'
        return 'a dict with keys %s%s' % (', '.join(keys), ', ...' if len(value) > 5 else '')
    if isinstance(value, (list, tuple)):
        return 'an empty list' if not value else 'a list of %d item%s' % (len(value), '' if len(value) == 1 else 's')
    if isinstance(value, (str, int, float)):
        text = repr(value)
        if len(text) > _SHORT:
            text = text[:_SHORT - 4] + '...' + text[-1]
        return '%s %s' % (name, text)
    return name


class Spec(object):
    """What one argument must be: ``expected`` for the message, ``problem(value)`` says what is wrong or None."""

    def __init__(self, expected, check, nullable=False, label=None):
        self.expected = expected + (' or null' if nullable else '')
        self._check = check
        self.nullable = nullable
        self.label = label

    def problem(self, value):
        if value is None and self.nullable:
            return None
        return self._check(value, self.expected)


def _joined(problem):
    """A problem after a name: ``[0] must be ...`` and ``.key must be ...`` follow it directly, ``must be ...``
    comes after a space."""
    return problem if problem.startswith(('[', '.')) else ' ' + problem


def _got(expected, value):
    return 'must be %s, got %s' % (expected, describe(value))


def a_dict(what, values=None, required=(), keys=None, nullable=False, label=None):
    """A dict (any mapping, such as hostvars): ``required`` names keys it must have, ``keys`` maps a key to the spec
    of its value (checked when present), ``values`` checks every value."""
    def check(value, expected):
        if not isinstance(value, Mapping):
            return _got(expected, value)
        if required:
            missing = [key for key in required if key not in value]
            if missing:
                return 'needs %s (%s), got %s' % (', '.join(missing), what, describe(value))
        for key, spec in sorted((keys or {}).items()):
            if key in value:
                problem = spec.problem(value[key])
                if problem:
                    return '.%s%s' % (key, _joined(problem))
        if values is not None:
            for key, item in value.items():
                problem = values.problem(item)
                if problem:
                    return '[%s]%s' % (key, _joined(problem))
        return None
    return Spec('a dict (%s)' % what, check, nullable, label)


def _is_list(value):
    return isinstance(value, (list, tuple))


def a_list(what, items=None, nullable=False, label=None, iterable=False):
    """A list; ``items`` checks each item. ``iterable`` also accepts sets, dict views (``params.keys()``) and
    generators (whose items are left to the filter: checking them would use them up)."""
    def check(value, expected):
        if isinstance(value, (str, bytes, Mapping)) or not (
                _is_list(value) or (iterable and isinstance(value, Iterable))):
            return _got(expected, value)
        if items is not None and not isinstance(value, Iterator):
            for index, item in enumerate(value):
                problem = items.problem(item)
                if problem:
                    return '[%d]%s' % (index, _joined(problem))
        return None
    return Spec('a list of %s' % what, check, nullable, label)


def a_name(what='a name'):
    """A name such as a host or group name: a string (a number is taken as its text)."""
    def check(value, expected):
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            return _got(expected, value)
        return None
    return Spec(what, check)


def names(what, nullable=False, label=None):
    """A list of names (host names, group names, parameter names); also a set or ``dict.keys()``."""
    return a_list(what, a_name('a name (str)'), nullable, label, iterable=True)


def a_str(what, nullable=False, label=None):
    def check(value, expected):
        if not isinstance(value, str):
            return _got(expected, value)
        return None
    return Spec('a string (%s)' % what, check, nullable, label)


def a_scalar(what, nullable=False, label=None):
    """A string or a number (a version such as v25.1.0 or 25.1)."""
    def check(value, expected):
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            return _got(expected, value)
        return None
    return Spec('a string (%s)' % what, check, nullable, label)


def a_bool(what, nullable=False, label=None):
    """true or false, as YAML and Jinja write them (not a string: "false" would read as true)."""
    def check(value, expected):
        if not isinstance(value, bool):
            return _got(expected, value)
        return None
    return Spec('true or false (%s)' % what, check, nullable, label)


def a_number(what, nullable=False, label=None, whole=False):
    """A number, or a string that reads as one (extra vars are strings); with ``nullable`` also an empty string."""
    def check(value, expected):
        if nullable and isinstance(value, str) and not value:
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            return _got(expected, value)
        try:
            number = float(value)
            if whole:
                int(value)
        except (TypeError, ValueError, OverflowError):
            return _got(expected, value)
        if math.isnan(number):
            return _got(expected, value)
        return None
    return Spec('%s (%s)' % ('a whole number' if whole else 'a number', what), check, nullable, label)


def a_percentage(what, nullable=False, label=None):
    """A share in percent: a number (or a string that reads as one) above 0 and at most 100. -5 or 150 would pass or
    fail every port, so they are refused rather than judged with."""
    number_check = a_number(what, nullable, label)._check  # pylint: disable=protected-access

    def check(value, expected):
        problem = number_check(value, expected)
        if problem or (nullable and value in (None, '')):
            return problem
        if not 0 < float(value) <= 100:
            return _got(expected, value)
        return None
    return Spec('a percentage above 0 and at most 100 (%s)' % what, check, nullable, label)


def either(what, *specs, **kwargs):
    """Any one of ``specs``."""
    def check(value, expected):
        if any(spec.problem(value) is None for spec in specs):
            return None
        return _got(expected, value)
    return Spec(what, check, kwargs.get('nullable', False), kwargs.get('label'))


def _label(param, first, spec):
    if spec is not None and spec.label:
        return spec.label
    return 'the input' if param == first else param


def _usage(signature, specs):
    """What the filter takes: ``expected the input (ports): a list of ...; expectation (optional): a dict ...``."""
    params = list(signature.parameters.values())
    parts = []
    for param in params:
        spec = specs.get(param.name)
        text = _label(param.name, params[0].name, spec)
        if text != param.name:
            text += ' (%s)' % param.name
        if param.default is not inspect.Parameter.empty:
            text += ' (optional)'
        if spec is not None:
            text += ': %s' % spec.expected
        parts.append(text)
    return 'expected %s' % '; '.join(parts)


def filter_args(name, **specs):
    """Decorate a filter function: check its arguments against ``specs``, and turn any exception of an unexpected
    input shape raised while it runs into ``AnsibleFilterError("<name>: ...")``."""
    def decorate(func):
        signature = inspect.signature(func)
        first = next(iter(signature.parameters))
        unknown = sorted(set(specs) - set(signature.parameters))
        if unknown:
            raise TypeError('%s: no argument named %s' % (name, ', '.join(unknown)))

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise AnsibleFilterError('%s: %s; %s' % (name, exc, _usage(signature, specs))) from None
            for param, value in bound.arguments.items():
                spec = specs.get(param)
                problem = spec.problem(value) if spec is not None else None
                if problem:
                    raise AnsibleFilterError('%s: %s%s' % (name, _label(param, first, spec), _joined(problem)))
            try:
                return func(*bound.args, **bound.kwargs)
            except AnsibleError:
                raise
            except SHAPE_ERRORS as exc:
                raise AnsibleFilterError('%s: the input or an argument holds a value of an unexpected type or shape '
                                         '(%s: %s); %s' % (name, type(exc).__name__, exc, _usage(signature, specs)))
        wrapper.checked_filter_name = name  # what tests/unit/test_one_mechanism.py looks for
        return wrapper
    return decorate


def host_vars(name, hostvars, host):
    """The variables of ``host`` from ``hostvars``, or None when the inventory has no such host."""
    try:
        known = host in hostvars
    except TypeError:
        known = False
    if not known:
        return None
    variables = hostvars[host]
    if not isinstance(variables, Mapping):
        raise AnsibleFilterError('%s: hostvars[%s] must be a dict (the variables of the host), got %s'
                                 % (name, host, describe(variables)))
    return variables


def nested(name, where, value, spec):
    """Check a value inside an argument (``where`` names it, e.g. ``ansible_facts.rdma_ports of h1``)."""
    problem = spec.problem(value)
    if problem:
        raise AnsibleFilterError('%s: %s%s' % (name, where, _joined(problem)))
    return value


def checked_ledger(name, variables, host):
    """The stage ledger of ``host`` (``ansible_facts.gpunet_rdma_ledger`` of its ``variables``, {} when it has none)
    after the one ledger check of the collection: AnsibleFilterError naming the filter, the host, the stage and the
    field otherwise, never a KeyError from deep inside a reader."""
    facts = (variables or {}).get('ansible_facts') or {}
    if not isinstance(facts, Mapping):
        raise AnsibleFilterError('%s: ansible_facts of %s must be a dict, got %s' % (name, host, type_name(facts)))
    ledger = facts.get('gpunet_rdma_ledger') or {}
    try:
        return check_ledger(ledger, host)
    except LedgerError as exc:
        raise AnsibleFilterError('%s: %s' % (name, exc)) from None
