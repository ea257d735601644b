# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Who owns what in a running cluster, read before the cluster stage writes (controller only).

* Objects: a live object's ``metadata.managedFields`` (server-side apply field management) say which manager owns
  which field. Applying a different value to a field another manager owns is what kube-apiserver answers with 409
  Conflict; an object that Argo CD or Flux keeps is put back at their next sync whatever the API server accepted.
  ``apply_plan`` reads both before anything is written and says, per object, create / apply / unchanged / force /
  refuse, with the fields that would change and the exact change a GitOps repository would need.
* Helm releases: ``release_plan`` compares an existing release (``kubernetes.core.helm_info``) with the chart
  version and values a run wants: a release is never moved to another chart version and never gets its values reset
  unless the inventory says so.

Field paths follow kube-apiserver's conflict messages (``.spec.ofedDriver.version``). Custom resources are
unstructured for server-side apply: every list is atomic (one manager owns the whole list), so a list is compared
and owned as one value here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

MISSING = object()

# Argo CD's annotation tracking (the default since 3.0; "APP:GROUP/KIND:NAMESPACE/NAME") and its custom label.
ARGO_TRACKING_ANNOTATION = 'argocd.argoproj.io/tracking-id'
ARGO_INSTANCE_LABEL = 'argocd.argoproj.io/instance'
# Argo CD's legacy label tracking uses the recommended instance label, which helm charts set as well: it counts
# only next to a field manager of Argo CD's controller.
RECOMMENDED_INSTANCE_LABEL = 'app.kubernetes.io/instance'
FLUX_LABELS = (('kustomize.toolkit.fluxcd.io/name', 'kustomize.toolkit.fluxcd.io/namespace', 'Kustomization'),
               ('helm.toolkit.fluxcd.io/name', 'helm.toolkit.fluxcd.io/namespace', 'HelmRelease'))
# Identity fields: part of every apply, never a change.
IDENTITY = (('apiVersion',), ('kind',), ('metadata', 'name'), ('metadata', 'namespace'))


class OwnershipError(ValueError):
    """Input of a shape the plan cannot read; the message names the object and the field."""


def _metadata(obj):
    metadata = obj.get('metadata') if isinstance(obj, Mapping) else None
    return metadata if isinstance(metadata, Mapping) else {}


def object_name(obj):
    """``Kind namespace/name`` (or ``Kind name``) for messages."""
    metadata = _metadata(obj)
    name = metadata.get('name') or '?'
    if metadata.get('namespace'):
        name = '%s/%s' % (metadata['namespace'], name)
    return '%s %s' % (obj.get('kind') or '?', name)


def field_path(path):
    """``('spec', 'ofedDriver', 'version')`` -> ``.spec.ofedDriver.version`` (kube-apiserver's notation)."""
    return ''.join('.%s' % part for part in path)


def managers_of(live):
    """The managedFields entries of a live object, checked: [(manager, operation, subresource, fieldsV1)]."""
    entries = _metadata(live).get('managedFields') or []
    if not isinstance(entries, list):
        raise OwnershipError('%s: metadata.managedFields is not a list' % object_name(live))
    result = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping) or not isinstance(entry.get('fieldsV1', {}), Mapping):
            raise OwnershipError('%s: metadata.managedFields[%d] is not a managedFields entry (manager, operation, '
                                 'fieldsV1)' % (object_name(live), index))
        result.append((str(entry.get('manager') or ''), str(entry.get('operation') or ''),
                       str(entry.get('subresource') or ''), entry.get('fieldsV1') or {}))
    return result


# Marks the map itself (FieldsV1 ``.``): owning that keeps the map in place, not the fields in it.
ITSELF = '.'


def owned_paths(fields, prefix=()):
    """The field paths a FieldsV1 set holds. ``f:NAME`` is a field; ``.`` the map itself (``PATH + ('.',)``); list
    items (``k:``, ``v:``, ``i:``) count as their list, which is atomic for custom resources."""
    paths = set()
    for key, sub in fields.items():
        if key == ITSELF:
            paths.add(prefix + (ITSELF,))
            continue
        if not isinstance(key, str):
            continue
        if key.startswith('f:'):
            path = prefix + (key[2:],)
            if isinstance(sub, Mapping) and sub:
                paths |= owned_paths(sub, path)
            else:
                paths.add(path)
        elif key[:2] in ('k:', 'v:', 'i:'):
            paths.add(prefix)
    return paths


def leaves(obj, prefix=()):
    """{path: value} of every field an apply of ``obj`` sets; maps are walked, lists and scalars are values."""
    result = {}
    for key, value in obj.items():
        path = prefix + (str(key),)
        if isinstance(value, Mapping) and value:
            result.update(leaves(value, path))
        else:
            result[path] = value
    return result


def value_at(obj, path):
    for part in path:
        if not isinstance(obj, Mapping) or part not in obj:
            return MISSING
        obj = obj[part]
    return obj


def _same(live, wanted):
    """Equal as the API server stores them (numbers by value: 1 and 1.0; bools are not numbers)."""
    if live is MISSING:
        return False
    return json.dumps(live, sort_keys=True) == json.dumps(wanted, sort_keys=True) or (
        isinstance(live, (int, float)) and isinstance(wanted, (int, float))
        and not isinstance(live, bool) and not isinstance(wanted, bool) and live == wanted)


def gitops_keeper(live):
    """Which GitOps tool keeps the live object, from the marks it leaves; None when none does."""
    metadata = _metadata(live)
    labels = metadata.get('labels') if isinstance(metadata.get('labels'), Mapping) else {}
    annotations = metadata.get('annotations') if isinstance(metadata.get('annotations'), Mapping) else {}
    tracking = annotations.get(ARGO_TRACKING_ANNOTATION)
    if tracking:
        return dict(tool='Argo CD', application=str(tracking).split(':', 1)[0],
                    mark='annotation %s=%s' % (ARGO_TRACKING_ANNOTATION, tracking))
    if labels.get(ARGO_INSTANCE_LABEL):
        return dict(tool='Argo CD', application=str(labels[ARGO_INSTANCE_LABEL]),
                    mark='label %s=%s' % (ARGO_INSTANCE_LABEL, labels[ARGO_INSTANCE_LABEL]))
    for name_label, namespace_label, kind in FLUX_LABELS:
        if labels.get(name_label):
            owner = str(labels[name_label])
            if labels.get(namespace_label):
                owner = '%s/%s' % (labels[namespace_label], owner)
            return dict(tool='Flux', application='%s %s' % (kind, owner),
                        mark='label %s=%s' % (name_label, labels[name_label]))
    if labels.get(RECOMMENDED_INSTANCE_LABEL) and any(
            entry[0].startswith('argocd') for entry in managers_of(live)):
        return dict(tool='Argo CD', application=str(labels[RECOMMENDED_INSTANCE_LABEL]),
                    mark='label %s=%s (label tracking)' % (RECOMMENDED_INSTANCE_LABEL, labels[RECOMMENDED_INSTANCE_LABEL]))
    return None


def _nested(changes):
    """[(path, value)] -> the nested map of just those fields (the change to make in a repository)."""
    tree = {}
    for path, value in changes:
        node = tree
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return tree


def plan_object(wanted, live, manager, force=False):
    """The plan for one object: what an apply by ``manager`` would change and whether it may."""
    if not isinstance(wanted, Mapping) or not _metadata(wanted).get('name') or not wanted.get('kind'):
        raise OwnershipError('an object to apply needs kind and metadata.name, got %s'
                             % (json.dumps(wanted, default=str)[:120],))
    entry = dict(kind=wanted['kind'], name=_metadata(wanted)['name'], namespace=_metadata(wanted).get('namespace'),
                 object=object_name(wanted), changes=[], conflicts=[], gitops=None, git_change=None, reason=None)
    if live is None or live == {}:
        entry['action'] = 'create'
        return entry
    if not isinstance(live, Mapping):
        raise OwnershipError('%s: the live object is not a map' % object_name(wanted))
    ours = dict((path, value) for path, value in leaves(wanted).items() if path not in IDENTITY)
    changed = [(path, value) for path, value in sorted(ours.items()) if not _same(value_at(live, path), value)]
    entry['changes'] = [dict(field=field_path(path), live=None if value_at(live, path) is MISSING else value_at(live, path),
                             wanted=value) for path, value in changed]
    if not changed:
        entry['action'] = 'unchanged'
        return entry
    keeper = gitops_keeper(live)
    if keeper:
        entry.update(action='refuse', gitops=keeper, git_change=_nested(changed),
                     reason='kept by %s (%s, %s): a change made here is put back at its next sync; make it in Git'
                            % (keeper['tool'], keeper['application'], keeper['mark']))
        return entry
    for other, operation, subresource, fields in managers_of(live):
        if (other == manager and operation == 'Apply') or subresource:
            continue
        owned = sorted(theirs for theirs in owned_paths(fields) if theirs[-1:] != (ITSELF,))
        for path in (change[0] for change in changed):
            # the field itself, a field inside it (our value replaces it), or a map or list above it owned whole;
            # named as the other manager owns it, as kube-apiserver names it
            for theirs in owned:
                if theirs[:len(path)] == path or path[:len(theirs)] == theirs:
                    conflict = dict(manager=other, operation=operation, field=field_path(theirs))
                    if conflict not in entry['conflicts']:
                        entry['conflicts'].append(conflict)
    if entry['conflicts'] and not force:
        entry.update(action='refuse', reason='fields owned by another field manager: %s' % '; '.join(
            'conflict with "%s" using %s: %s' % (c['manager'], wanted.get('apiVersion') or '?', c['field'])
            for c in entry['conflicts']))
    else:
        entry['action'] = 'force' if entry['conflicts'] else 'apply'
    return entry


def apply_plan(wanted_objects, live_objects, manager, force=False):
    """One plan entry per wanted object; ``live_objects`` holds the live object (or None) at the same index."""
    if len(wanted_objects) != len(live_objects):
        raise OwnershipError('%d objects to apply but %d live reads' % (len(wanted_objects), len(live_objects)))
    return [plan_object(wanted, _live_object(live), manager, force) for wanted, live in zip(wanted_objects, live_objects)]


def _live_object(live):
    """The live object, also from a kubernetes.core.k8s_info result of a loop (its first resource, or None)."""
    if isinstance(live, Mapping) and 'resources' in live and 'kind' not in live:
        resources = live.get('resources') or []
        if not isinstance(resources, list):
            raise OwnershipError('a k8s_info result whose resources is not a list')
        return resources[0] if resources else None
    return live


def _chart_version(status, chart_name):
    """The version of an installed release from helm's ``CHART-VERSION`` (``network-operator-26.4.1``)."""
    chart = str(status.get('chart') or '')
    if chart_name and chart.startswith(chart_name + '-'):
        return chart[len(chart_name) + 1:]
    match = re.match(r'^(.*?)-(v?\d+\.\d+.*)$', chart)
    return match.group(2) if match else None


def _normal_version(version):
    return str(version or '').lstrip('v')


def merge_values(base, ours):
    """``ours`` merged over ``base`` as helm merges --reuse-values with --values: maps deep, everything else
    replaced."""
    result = dict(base)
    for key, value in ours.items():
        if isinstance(value, Mapping) and isinstance(result.get(key), Mapping):
            result[key] = merge_values(result[key], value)
        else:
            result[key] = value
    return result


def release_plan(status, chart_name, version, values, adopt=False, upgrade_chart=False, adopt_variable='',
                 upgrade_variable=''):
    """What to do with a helm release: install, unchanged, adopt (reuse its values, ours on top) or refuse."""
    if not status:
        return dict(action='install', chart_version=version, reuse_values=False, values=values,
                    installed_version=None, changed_values=[], message=None)
    installed = _chart_version(status, chart_name)
    existing = status.get('release_values')
    if existing is None:
        existing = status.get('values') or {}
    if not isinstance(existing, Mapping):
        raise OwnershipError('release %s: its values are not a map' % status.get('name'))
    merged = merge_values(existing, values)
    changed = sorted(field_path(path) for path, value in leaves(merged).items()
                     if not _same(value_at(existing, path), value))
    move = _normal_version(installed) != _normal_version(version)
    plan = dict(installed_version=installed, changed_values=changed, values=values, reuse_values=True,
                chart_version=version if (move and upgrade_chart) else (installed or version), message=None)
    if not changed and not (move and upgrade_chart):
        plan['action'] = 'unchanged'
        return plan
    if not adopt:
        what = []
        if changed:
            what.append('set %s' % ', '.join(changed))
        if move and upgrade_chart:
            what.append('move it from chart %s to %s' % (installed, version))
        plan.update(action='refuse', message=(
            'The helm release %s/%s exists (chart %s, status %s) and this run would %s. Nothing was changed. Set %s: '
            'true to adopt it - its values are kept and only these keys are merged on top (reuse_values)%s - or '
            'render the manifests for whoever manages it.' % (
                status.get('namespace'), status.get('name'), status.get('chart'), status.get('status'),
                ' and '.join(what), adopt_variable,
                '; the chart stays at %s unless %s: true' % (installed, upgrade_variable) if move and not upgrade_chart
                else '')))
        return plan
    plan['action'] = 'adopt'
    return plan
