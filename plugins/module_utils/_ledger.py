# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The stage ledger: every stage of a run records its outcome in one envelope, under one fact.

A host's fact ``gpunet_rdma_ledger`` (the controller's for the cluster stages) maps a stage name to::

    {stage: firmware, status: ok | changed | pending | failed | skipped, changed: bool,
     pending: [{action: firmware_reset, allowed: true, reason: "mlx5_0 LINK_TYPE_P1"}],
     problems: ["..."], detail: {... what the stage wants the report to show ...}}

``pending`` lists the disruptive steps a change waits for; ``allowed`` says whether the run may take them
(the stage's opt-in variable). The rollout reads only the ledger to decide which hosts go through serial
batches, the report reads only the ledger to show every stage: a stage added later shows up in both without
touching either. Free of Ansible imports.
"""

from __future__ import annotations

from collections.abc import Mapping

STATUSES = ('ok', 'changed', 'pending', 'failed', 'skipped')
# Disruptive steps in the order a node's batch takes them; a reboot stands for all of them.
ACTIONS = (
    ('firmware_reset', 'firmware reset (mlxfwreset)'),
    ('driver_restart', 'RDMA driver restart (openibd restart)'),
    ('netns_switch', 'RDMA netns mode switch (rdma system set netns)'),
    ('runtime_restart', 'container runtime restart'),
    # after a firmware reset or driver restart: the VFs are destroyed (write 0) and created again with the new count
    ('sriov_change', 'SR-IOV VF count change (VFs destroyed and created again)'),
    ('reboot', 'reboot'),
)
ACTION_NAMES = tuple(name for name, _text in ACTIONS)
ENVELOPE_KEYS = ('stage', 'status', 'changed', 'pending', 'problems', 'detail')


class LedgerError(ValueError):
    """An envelope or a ledger that does not have the documented shape."""


def _text_list(value, what):
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    if not isinstance(value, (list, tuple)):
        raise LedgerError('%s must be a list of strings, got %s' % (what, type(value).__name__))
    return [str(item) for item in value if item not in (None, '')]


def normalize_pending(pending, stage='stage'):
    """``pending`` as a list of ``{action, allowed, reason}``; a bare action name means allowed=False."""
    if pending is None:
        return []
    if isinstance(pending, (str, Mapping)):
        pending = [pending]
    if not isinstance(pending, (list, tuple)):
        raise LedgerError('%s: pending must be a list of actions, got %s' % (stage, type(pending).__name__))
    result = []
    for item in pending:
        if isinstance(item, str):
            item = {'action': item}
        if not isinstance(item, Mapping):
            raise LedgerError('%s: a pending action must be a name or {action, allowed, reason}, got %r'
                              % (stage, item))
        unknown = sorted(set(item) - {'action', 'allowed', 'reason'})
        if unknown:
            raise LedgerError('%s: unknown keys %s in pending action %r' % (stage, ', '.join(unknown), dict(item)))
        action = item.get('action')
        if action not in ACTION_NAMES:
            raise LedgerError('%s: pending action %r is not one of %s' % (stage, action, ', '.join(ACTION_NAMES)))
        allowed = item.get('allowed', False)
        if not isinstance(allowed, bool):
            raise LedgerError('%s: pending %s: allowed must be true or false, got %r' % (stage, action, allowed))
        result.append({'action': action, 'allowed': allowed, 'reason': str(item.get('reason') or '')})
    return result


def plain(value):
    """A plain copy of nested dicts, lists and scalars (mappings and sequences of any kind become dict and list).

    Ansible hands filters and actions lazy containers that template on every access; one walk makes plain data that
    the rest reads cheaply.
    """
    if isinstance(value, Mapping):
        return dict((str(key), plain(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, str):
        return str(value)
    return value


def envelope(stage, changed=False, pending=None, problems=None, detail=None, status=None, failed=False):
    """One stage's outcome, validated; ``status`` is derived when not given.

    failed -> ``failed``; else pending actions -> ``pending``; else changed -> ``changed``; else ``ok``.
    """
    if not isinstance(stage, str) or not stage:
        raise LedgerError('the stage name must be a non-empty string, got %r' % (stage,))
    if not isinstance(changed, bool):
        raise LedgerError('%s: changed must be true or false, got %r' % (stage, changed))
    if detail is not None and not isinstance(detail, Mapping):
        raise LedgerError('%s: detail must be a dict, got %s' % (stage, type(detail).__name__))
    pending = normalize_pending(pending, stage)
    problems = _text_list(problems, '%s: problems' % stage)
    if status is None:
        status = 'failed' if failed else 'pending' if pending else 'changed' if changed else 'ok'
    if status not in STATUSES:
        raise LedgerError('%s: status %r is not one of %s' % (stage, status, ', '.join(STATUSES)))
    return {'stage': stage, 'status': status, 'changed': changed, 'pending': pending, 'problems': problems,
            'detail': plain(detail or {})}


def check_envelope(entry, stage=None, detail=True):
    """An envelope read back from a ledger (e.g. a fact of an earlier play), validated again.

    ``detail=False`` leaves the detail out (an empty dict) for readers that only need status and pending: a detail
    may be large (every firmware value of every device), and Ansible hands it over as data that templates itself on
    every access.
    """
    if not isinstance(entry, Mapping):
        raise LedgerError('ledger entry %s is not a dict: %r' % (stage or '', entry))
    missing = [key for key in ENVELOPE_KEYS if key not in entry]
    if missing:
        raise LedgerError('ledger entry %s lacks %s' % (stage or entry.get('stage'), ', '.join(missing)))
    return envelope(entry['stage'], entry['changed'], entry['pending'], entry['problems'],
                    entry['detail'] if detail else None, entry['status'])


def record(ledger, stage, **fields):
    """A copy of ``ledger`` with ``stage``'s envelope (re)placed."""
    if ledger is None:
        ledger = {}
    if not isinstance(ledger, Mapping):
        raise LedgerError('the ledger must be a dict of stage name -> envelope, got %s' % type(ledger).__name__)
    # The other stages' envelopes are kept as they are (they were checked when recorded).
    result = dict((str(name), entry) for name, entry in ledger.items())
    result[stage] = envelope(stage, **fields)
    return result


def resolve(ledger, actions, how):
    """After a batch took ``actions`` (or a reboot), those pending entries are done: drop them from every stage.

    ``how`` says what was done (``reboot``, ``firmware_reset``...), recorded in each touched stage's detail.
    A reboot resolves every pending action, allowed or not.
    """
    if not isinstance(ledger, Mapping):
        raise LedgerError('the ledger must be a dict, got %s' % type(ledger).__name__)
    done = set(ACTION_NAMES) if 'reboot' in actions else set(actions)
    result = {}
    for name, entry in ledger.items():
        if not [item for item in check_envelope(entry, name, detail=False)['pending'] if item['action'] in done]:
            result[name] = entry
            continue
        entry = check_envelope(entry, name)
        left = [item for item in entry['pending'] if item['action'] not in done]
        if len(left) != len(entry['pending']):
            entry['detail']['activated_by'] = how
            entry['pending'] = left
            if entry['status'] == 'pending' and not left:
                entry['status'] = 'changed'
        result[name] = entry
    return result


def hold(ledger, holds):
    """A copy of ``ledger`` where the allowed pending actions named in ``holds`` are no longer allowed.

    ``holds`` is a list of ``{action, reason}``: a guard found that taking the step now would do harm (e.g. reset the
    device that carries the node's management path). The step stays pending, waiting, with the reason appended, so
    that the plan (``plan``) leaves it out and the report says why.
    """
    if not isinstance(ledger, Mapping):
        raise LedgerError('the ledger must be a dict, got %s' % type(ledger).__name__)
    if not isinstance(holds, (list, tuple)):
        raise LedgerError('hold must be a list of {action, reason}, got %s' % type(holds).__name__)
    reasons = {}
    for item in holds:
        if not isinstance(item, Mapping) or set(item) - {'action', 'reason'} or item.get('action') not in ACTION_NAMES:
            raise LedgerError('a held action must be {action, reason} with action one of %s, got %r'
                              % (', '.join(ACTION_NAMES), item))
        reasons.setdefault(item['action'], []).append(str(item.get('reason') or 'held'))
    result = {}
    for name, entry in ledger.items():
        if not [item for item in check_envelope(entry, name, detail=False)['pending']
                if item['allowed'] and item['action'] in reasons]:
            result[name] = entry
            continue
        entry = check_envelope(entry, name)
        pending = []
        for item in entry['pending']:
            if item['allowed'] and item['action'] in reasons:
                note = 'held: %s' % ' / '.join(reasons[item['action']])
                item = dict(item, allowed=False, reason='%s; %s' % (item['reason'], note) if item['reason'] else note)
            pending.append(item)
        entry['pending'] = pending
        result[name] = entry
    return result


def plan(ledger):
    """What a node's batch must do: ``{reboot, actions, reasons}`` from the allowed pending actions.

    One reboot covers everything: when any stage's allowed action is a reboot, the plan is that reboot alone.
    """
    allowed = []
    reasons = []
    for name, entry in sorted((ledger or {}).items()):
        for item in check_envelope(entry, name, detail=False)['pending']:
            if item['allowed']:
                allowed.append(item['action'])
                reasons.append('%s: %s%s' % (name, dict(ACTIONS)[item['action']],
                                             (' (%s)' % item['reason']) if item['reason'] else ''))
    if 'reboot' in allowed:
        return {'reboot': True, 'actions': ['reboot'], 'reasons': reasons}
    ordered = [name for name in ACTION_NAMES if name in allowed]
    return {'reboot': False, 'actions': ordered, 'reasons': reasons}


def summary(ledgers):
    """Over ``{host: ledger}``: stages per status, hosts per pending action (allowed or waiting), failed stages."""
    by_status = dict((status, 0) for status in STATUSES)
    pending = {}
    failed = []
    for host, ledger in sorted((ledgers or {}).items()):
        for name, entry in sorted((ledger or {}).items()):
            entry = check_envelope(entry, name, detail=False)
            by_status[entry['status']] += 1
            for item in entry['pending']:
                hosts = pending.setdefault(item['action'], [])
                if host not in hosts:
                    hosts.append(host)
            if entry['status'] == 'failed':
                failed.append('%s %s' % (host, name))
    return {'stages': by_status, 'pending': pending, 'failed_stages': failed}
