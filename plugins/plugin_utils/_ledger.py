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


# ------------------------------------------------------------------ the shape a reader relies on

_SHORT = 60


def _describe(value):
    """A value for a message: its type and a short form (containers are not printed whole)."""
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'bool %s' % value
    if isinstance(value, Mapping):
        return 'a dict with keys %s' % ', '.join(str(key) for key in list(value)[:5]) if value else 'an empty dict'
    if isinstance(value, (list, tuple)):
        return 'a list of %d item%s' % (len(value), '' if len(value) == 1 else 's') if value else 'an empty list'
    text = repr(value)
    if len(text) > _SHORT:
        text = text[:_SHORT - 4] + '...' + text[-1]
    return '%s %s' % ({str: 'str', int: 'int', float: 'float'}.get(type(value), type(value).__name__), text)


class Shape(object):
    """What one field of a ledger entry must be: ``expected`` for the message; ``problem(value, field)`` says what is
    wrong with ``value`` at ``field`` (a path such as ``detail.devices[0].values``) or returns None."""

    def __init__(self, expected, check=None, nullable=False):
        self.expected = expected + (' or null' if nullable else '')
        self._check = check
        self.nullable = nullable

    def problem(self, value, field):
        if value is None and self.nullable:
            return None
        if self._check is None:
            return None
        return self._check(self, value, field)


def _wrong(shape, value, field):
    return "field '%s' must be %s, got %s" % (field, shape.expected, _describe(value))


def _of_type(expected, types, nullable=False):
    def check(shape, value, field):
        if isinstance(value, bool) and bool not in types or not isinstance(value, types):
            return _wrong(shape, value, field)
        return None
    return Shape(expected, check, nullable)


def _list_of(expected, item=None, nullable=False):
    def check(shape, value, field):
        if not isinstance(value, (list, tuple)):
            return _wrong(shape, value, field)
        for index, element in enumerate(value if item is not None else ()):
            problem = item.problem(element, '%s[%d]' % (field, index))
            if problem:
                return problem
        return None
    return Shape(expected, check, nullable)


def _dict_of(expected, fields=None, required=(), values=None, nullable=False, also=None):
    """A dict: ``required`` keys it must have, ``fields`` the shape of a key's value (when present), ``values`` the
    shape of every value, ``also(value, field)`` a further check of the whole dict."""
    fields = fields or {}

    def check(shape, value, field):
        if not isinstance(value, Mapping):
            return _wrong(shape, value, field)
        missing = [key for key in required if key not in value]
        if missing:
            first = '%s.%s' % (field, missing[0]) if field else missing[0]
            text = "lacks field '%s' (expected %s)" % (first, fields[missing[0]].expected if missing[0] in fields
                                                       else 'a value')
            if len(missing) > 1:
                text += '; also lacks %s' % ', '.join("'%s'" % key for key in missing[1:])
            return text
        for key in [key for key in fields if key in value]:
            problem = fields[key].problem(value[key], '%s.%s' % (field, key) if field else key)
            if problem:
                return problem
        for key, element in (value.items() if values is not None else ()):
            problem = values.problem(element, '%s[%s]' % (field, key))
            if problem:
                return problem
        return also(value, field) if also is not None else None
    return Shape(expected, check, nullable)


def _one_of(expected, choices):
    def check(shape, value, field):
        if isinstance(value, bool) or value not in choices:
            return "field '%s' is %s, not one of %s" % (field, _describe(value), ', '.join(choices))
        return None
    return Shape(expected, check)


def _pending_item(shape, value, field):
    """One pending action as ``normalize_pending`` takes it: a bare action name or ``{action, allowed, reason}``."""
    if isinstance(value, str):
        value = {'action': value}
    if not isinstance(value, Mapping):
        return _wrong(shape, value, field)
    unknown = sorted(str(key) for key in set(value) - {'action', 'allowed', 'reason'})
    if unknown:
        return "field '%s' has unknown keys %s (a pending action has action, allowed, reason)" % (
            field, ', '.join(unknown))
    if value.get('action') not in ACTION_NAMES:
        return "field '%s.action' is %s, not one of %s" % (
            field, _describe(value.get('action')), ', '.join(ACTION_NAMES))
    if not isinstance(value.get('allowed', False), bool):
        return "field '%s.allowed' must be true or false, got %s" % (field, _describe(value['allowed']))
    return None


def _pending_list(shape, value, field):
    # what normalize_pending takes: a list of actions, or one action alone
    if isinstance(value, (str, Mapping)):
        return _pending_item(PENDING_ITEM, value, field)
    if not isinstance(value, (list, tuple)):
        return _wrong(shape, value, field)
    for index, item in enumerate(value):
        problem = _pending_item(PENDING_ITEM, item, '%s[%d]' % (field, index))
        if problem:
            return problem
    return None


def _problems(shape, value, field):
    # what _text_list takes: a list of texts, or one text alone
    if isinstance(value, str):
        return None
    if not isinstance(value, (list, tuple)) or any(isinstance(item, (Mapping, list, tuple)) for item in value):
        return _wrong(shape, value, field)
    return None


def _stage_name(shape, value, field):
    if not isinstance(value, str) or not value:
        return _wrong(shape, value, field)
    return None


TEXT = _of_type('a string', (str,), nullable=True)
STRING = _of_type('a string', (str,))
TEXTS = _list_of('a list of strings', STRING, nullable=True)
NUMBER = _of_type('a number', (int, float), nullable=True)
BOOL = _of_type('true or false', (bool,), nullable=True)
PENDING_ITEM = Shape('an action name or {action, allowed, reason}', _pending_item)


def _records(what, fields=None, required=()):
    """A list of dicts (rows of a detail, ``what`` names one row) or null."""
    return _list_of('a list of %ss (dicts)' % what, _dict_of('a dict (a %s)' % what, fields, required), nullable=True)


def _scope_reason(value, field):
    if value.get('in_scope', True) is False and not isinstance(value.get('reason'), str):
        return ("lacks field '%s.reason' (expected a string: why the host is out of scope)" % field
                if 'reason' not in value else _wrong(STRING, value['reason'], '%s.reason' % field))
    return None


# A bandwidth or latency test of the validation stages: the numbers the report formats (%g, %.1f).
_TEST = dict((key, NUMBER) for key in ('line_rate_gbps', 'line_rate_pct', 'latency_usec', 'max_latency_usec'))
_CLUSTER_STAGE = _dict_of('a dict (the cluster stage record)', {
    'resources': _records('resource', {
        'hosts': _list_of('a list of host names', nullable=True), 'if_names': TEXTS, 'link_types': TEXTS}),
    'nodes': _records('node record'),
    'ownership': _dict_of('a dict (the ownership plan)', nullable=True),
    'left_alone': _list_of('a list', nullable=True)})

# What the fleet report (and a filter that looks into one stage) takes from a stage's detail; a stage not named here
# (one added later) is read from its envelope alone. Only the fields a reader indexes, iterates, joins or formats are
# checked, so that a stage may record more than the report shows.
DETAILS = {
    'firmware': _dict_of('a dict (the record of gpunet.rdma.firmware_result)', {
        'apply': _of_type('a string naming how pending changes are activated (none, mlxfwreset, reboot)', (str,),
                          nullable=True),
        'pending': _list_of('a list of strings (the pending parameters)', STRING),
        'reboot_required': BOOL,
        'devices': _list_of('a list of device records (dicts)', _dict_of('a dict (a device record)', {
            'device': TEXT, 'pci_address': TEXT,
            'pending': _list_of('a list of strings (the pending parameters)', STRING),
            'values': _dict_of('a dict (parameter -> {current, next_boot})',
                               values=_dict_of('a dict ({current, next_boot})'))},
            required=('device', 'pci_address', 'pending', 'values'))),
        'inventory': _records('firmware inventory record', {'expected_psids': TEXTS, 'drift': TEXTS})},
        required=('apply', 'pending', 'reboot_required', 'devices')),
    'runtime': _dict_of('a dict (the container runtime record)', {'runtimes': TEXTS}),
    'ofed': _dict_of('a dict (the OFED record)', {'source': TEXT, 'missing_modules': TEXTS}),
    'netns': _dict_of('a dict (the RDMA netns record)'),
    'gpudirect': _dict_of('a dict (the GPUDirect record)', {
        'persisted': TEXTS,
        'modules': _dict_of('a dict (module name -> state)', values=_dict_of('a dict (a module state)'),
                            nullable=True)}),
    'tuning': _dict_of('a dict (the NIC tuning record)', {
        'ports': _records('port record', {
            'pfc_priorities': _list_of('a list of priorities', nullable=True),
            'ecn': _dict_of('a dict (roce_np, roce_rp)', {'roce_np': _list_of('a list of priorities', nullable=True),
                                                          'roce_rp': _list_of('a list of priorities', nullable=True)},
                            nullable=True)}),
        'pci': _records('PCI function record'),
        'firmware': _dict_of('a dict (the firmware values)', {'pending': TEXTS}, nullable=True),
        'wanted': _dict_of('a dict (the wanted settings)', {
            'firmware_params': _dict_of('a dict (parameter -> value)', nullable=True)}, nullable=True)}),
    'sriov': _dict_of('a dict (the SR-IOV record)', {
        'pfs': _records('PF record', {'vfs': _records('VF record')})}),
    'validation': _dict_of('a dict (the validation record)', {'tests': _records('test record', _TEST)}),
    'scope': _dict_of('a dict (in_scope, reason)', {'reason': TEXT}, also=_scope_reason),
    'pod_validation': _dict_of('a dict (the pod-level validation record)', {
        'results': _records('test record', _TEST),
        'nccl': _records('NCCL run', {
            'ib_devices': TEXTS, 'hosts': TEXTS, 'gdr': TEXT, 'nics_per_node': NUMBER, 'busbw_gbs': NUMBER,
            'busbw_line_rate_pct': NUMBER, 'min_busbw_pct': NUMBER, 'size_bytes': NUMBER}),
        'pod_checks': _records('in-pod check', {
            'interfaces': _records('interface', {'addresses': TEXTS}), 'rdma': _records('RDMA device'),
            'resources': _dict_of('a dict (resource -> count)', nullable=True), 'routes': TEXTS}),
        'allocatable': _records('allocatable row')}),
    'network_operator': _CLUSTER_STAGE,
    'spiderpool': _CLUSTER_STAGE,
}

ENVELOPE = _dict_of('a dict (an envelope: %s)' % ', '.join(ENVELOPE_KEYS), {
    'stage': Shape('a non-empty string (the stage name)', _stage_name),
    'status': _one_of('one of %s' % ', '.join(STATUSES), STATUSES),
    'changed': _of_type('true or false', (bool,)),
    'pending': Shape('a list of pending actions (an action name or {action, allowed, reason})', _pending_list,
                     nullable=True),
    'problems': Shape('a list of strings', _problems, nullable=True),
    'detail': _dict_of('a dict (what the stage wants the report to show)', nullable=True)}, required=ENVELOPE_KEYS)


def _where(host, stage=None):
    where = 'ledger of host %s' % host if host is not None else 'the ledger'
    return where if stage is None else '%s, stage %s' % (where, stage)


def check_ledger(ledger, host=None, details=True):
    """Check a ledger read back (a host's ``gpunet_rdma_ledger``) before anything reads it: every entry is an envelope
    and, with ``details``, the detail of each stage of ``DETAILS`` has the fields the report takes (an empty detail is
    no record). The one check of every reader; the rollout's readers (plan, resolve, hold) read the envelopes only.

    Raises LedgerError naming the host (when given), the stage and the field: ``ledger of host gpu-1, stage firmware:
    lacks field 'detail.apply' (expected a string ...)``. Returns the ledger.
    """
    if ledger is None:
        return ledger
    if not isinstance(ledger, Mapping):
        raise LedgerError('%s must be a dict (stage name -> envelope), got %s' % (_where(host), _describe(ledger)))
    for stage, entry in ledger.items():
        problem = ENVELOPE.problem(entry, '')
        if problem is None and details and stage in DETAILS and entry.get('detail'):
            problem = DETAILS[stage].problem(entry['detail'], 'detail')
        if problem:
            if not isinstance(entry, Mapping):
                problem = 'the entry must be %s, got %s' % (ENVELOPE.expected, _describe(entry))
            raise LedgerError('%s: %s' % (_where(host, stage), problem))
    return ledger


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
    if isinstance(actions, str) or not isinstance(actions, (list, tuple)):
        raise LedgerError('resolve must be a list of action names (%s), got %s'
                          % (', '.join(ACTION_NAMES), _describe(actions)))
    unknown = [action for action in actions if action not in ACTION_NAMES]
    if unknown:
        # a typo would resolve nothing and leave the step pending without a word
        raise LedgerError('resolve: %s %s not an action; the actions are %s' % (
            ', '.join(repr(action) for action in unknown), 'is' if len(unknown) == 1 else 'are',
            ', '.join(ACTION_NAMES)))
    check_ledger(ledger, details=False)
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
    check_ledger(ledger, details=False)
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
    check_ledger(ledger, details=False)
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
