# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parse ``mlxconfig``/``mstconfig`` query output and plan a single ``set`` call.

Query layouts understood (columns are found from the header, values are split
by whitespace because column widths differ between tool versions):

    Configurations:                              Default         Current         Next Boot
    *        LINK_TYPE_P1                        ETH(2)          ETH(2)          IB(1)
    RO       PF_BAR2_SIZE                        0               0               0
             ESWITCH_HAIRPIN_DESCRIPTORS         Array[0..7]     Array[0..7]     Array[0..7]

and the plain ``q`` layout with only ``Next Boot``. Free of Ansible imports.
"""

from __future__ import annotations

import difflib
import re

# 'New' appears in the table that `set` prints before applying.
COLUMNS = ('Default', 'Current', 'Next Boot', 'New')
_VALUE_RE = re.compile(r'^(?P<name>[^()\s]+)\((?P<number>-?\d+)\)$')
_INT_RE = re.compile(r'^(?:0[xX][0-9a-fA-F]+|-?\d+)$')
_ARRAY_RE = re.compile(r'^Array\[\d+\.\.\d+\]$')
_PARAM_NAME_RE = re.compile(r'^[A-Z][A-Z0-9_]*(?:\[\d+\])?$')
_WORD_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
_MARKERS = ('*', 'RO', '*RO', 'RO*')

# Named values of enum parameters whose names the query alone does not list.
KNOWN_ENUMS = {
    'LINK_TYPE': {'IB': 1, 'ETH': 2, 'VPI': 3},
    'PCI_WR_ORDERING': {'per_mkey': 0, 'force_relax': 1},
}
# Parameters that exist on some ConnectX models but not others: a name from this
# list that the device does not print is "not on this device", not a typo.
KNOWN_PARAMS = frozenset([
    'LINK_TYPE_P1', 'LINK_TYPE_P2', 'SRIOV_EN', 'NUM_OF_VFS', 'NUM_OF_PF', 'ATS_ENABLED',
    'ADVANCED_PCI_SETTINGS', 'PCI_WR_ORDERING', 'KEEP_ETH_LINK_UP_P1', 'KEEP_ETH_LINK_UP_P2',
    'KEEP_IB_LINK_UP_P1', 'KEEP_IB_LINK_UP_P2', 'ROCE_CC_PRIO_MASK_P1', 'ROCE_CC_PRIO_MASK_P2',
    'SRIOV_IB_ROUTING_MODE_P1', 'SRIOV_IB_ROUTING_MODE_P2', 'INTERNAL_CPU_MODEL', 'MEMIC_BAR_SIZE',
])
_TRUE_WORDS = ('true', 'yes', 'on', '1')
_FALSE_WORDS = ('false', 'no', 'off', '0')


class MlxconfigError(ValueError):
    """Input that cannot be used; ``line`` quotes the offending output line when there is one."""

    def __init__(self, message, line=None):
        super().__init__(message)
        self.line = line


def parse_query(text):
    """Parse query output into ``{NAME: {default, current, next_boot, read_only, modified}}``.

    Columns the layout does not show are None; the table printed by ``set``
    adds ``new`` (the value being applied).
    """
    columns = None
    config = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith('Configurations:'):
            header = line[len('Configurations:'):]
            columns = [c for c in COLUMNS if c in header]
            if not columns:
                # labelNextAsDefault: some queries print "Default" for the only column
                raise MlxconfigError('query header without Default/Current/Next Boot columns', raw)
            columns.sort(key=header.index)
            continue
        if columns is None or line.startswith(("The '*'", "The 'RO'", '-I-', '-W-', 'Device', 'Apply')):
            continue
        if line.startswith('-E-'):
            raise MlxconfigError('the tool reported an error: %s' % line, raw)
        words = line.split()
        markers = ''
        if words[0] in _MARKERS:
            markers = words.pop(0)
        if len(words) != 1 + len(columns) or not _PARAM_NAME_RE.match(words[0]):
            raise MlxconfigError('unrecognised query line (expected NAME and %d values)' % len(columns), raw)
        entry = {'default': None, 'current': None, 'next_boot': None,
                 'read_only': 'RO' in markers, 'modified': '*' in markers}
        if 'New' in columns:
            entry['new'] = None
        for column, value in zip(columns, words[1:]):
            entry[column.lower().replace(' ', '_')] = value
        config[words[0]] = entry
    if columns is None:
        raise MlxconfigError('no "Configurations:" table in the query output',
                             (text.strip().splitlines() or [''])[0])
    return config


def split_value(printed):
    """``IB(1)`` -> ('IB', 1); ``8`` -> (None, 8); ``N/A`` / ``Array[0..7]`` -> (None, None)."""
    if printed is None:
        return None, None
    match = _VALUE_RE.match(printed)
    if match:
        return match.group('name'), int(match.group('number'))
    if _INT_RE.match(printed):
        return None, int(printed, 0)
    return None, None


def _enum_table(name):
    for prefix, table in KNOWN_ENUMS.items():
        if name == prefix or name.startswith(prefix + '_'):
            return table
    return None


def _describe(table):
    return ', '.join('%s(%d)' % item for item in sorted(table.items(), key=lambda item: item[1]))


def _wanted_parts(name, wanted):
    """(value name or None, number or None) of a wanted value as the user wrote it."""
    if isinstance(wanted, bool):  # YAML true/false
        return ('True', 1) if wanted else ('False', 0)
    if isinstance(wanted, int):
        return None, wanted
    text = str(wanted).strip()
    value_name, number = split_value(text)
    if value_name is None and number is None:
        if not _WORD_RE.match(text):
            raise MlxconfigError('%s: %r is not a value mlxconfig accepts (a name such as IB, a number, or '
                                 'the printed form such as IB(1))' % (name, wanted))
        value_name = text
    return value_name, number


def normalize_wanted(name, wanted, entry):
    """Return ``(set_token, number, value_name)`` of a wanted value for parameter ``name``.

    The parameter's kind comes from what the query prints for it: a boolean
    (``True(1)``), an enum (``IB(1)``), a number, or an array. Raises
    MlxconfigError for a value the parameter does not accept.
    """
    printed = next((v for v in (entry['next_boot'], entry['current'], entry['default'])
                    if v not in (None, 'N/A')), None)
    if printed and _ARRAY_RE.match(printed):
        raise MlxconfigError('%s is an array parameter (%s); set its elements as %s[<index>] instead'
                             % (name, printed, name))
    kind_name, kind_number = split_value(printed)
    wanted_name, wanted_number = _wanted_parts(name, wanted)

    if kind_name in ('True', 'False'):
        if wanted_name is not None:
            lowered = wanted_name.lower()
            number = 1 if lowered in _TRUE_WORDS else 0 if lowered in _FALSE_WORDS else None
            if number is None or (wanted_number is not None and wanted_number != number):
                raise MlxconfigError('%s is a boolean (True/False or 1/0), not %r' % (name, wanted))
            wanted_number = number
        if wanted_number not in (0, 1):
            raise MlxconfigError('%s is a boolean (True/False or 1/0), not %r' % (name, wanted))
        token = 'True' if wanted_number else 'False'
        return token, wanted_number, token

    known_table = _enum_table(name)
    table = known_table or ({kind_name: kind_number} if kind_name is not None else {})
    if wanted_name is not None:
        match = [(k, v) for k, v in table.items() if k.lower() == wanted_name.lower()]
        if not match:
            if table:
                raise MlxconfigError('%s does not accept %r; known values: %s, or a number'
                                     % (name, wanted, _describe(table)))
            raise MlxconfigError('%s takes a number (the device prints %s), not %r' % (name, printed, wanted))
        canonical, number = match[0]
        if wanted_number is not None and wanted_number != number:
            raise MlxconfigError('%s: %r mixes %s with the number %d; %s is %d'
                                 % (name, wanted, canonical, wanted_number, canonical, number))
        return canonical, number, canonical
    if known_table is not None and wanted_number not in known_table.values():
        raise MlxconfigError('%s does not accept %r; known values: %s' % (name, wanted, _describe(known_table)))
    value_name = dict((v, k) for k, v in table.items()).get(wanted_number)
    return value_name or str(wanted_number), wanted_number, value_name


def matches(printed, number, value_name):
    """True when the printed value equals the wanted one, by number or else by name."""
    printed_name, printed_number = split_value(printed)
    if number is not None and printed_number is not None:
        return number == printed_number
    if value_name is not None and printed_name is not None:
        return value_name.lower() == printed_name.lower()
    return False


def printed_form(token, number, value_name):
    """How the tool will print the value: ``IB(1)``, ``True(1)`` or a plain number."""
    if value_name is not None and number is not None:
        return '%s(%d)' % (value_name, number)
    return token


def plan(config, wanted_params):
    """Compare wanted values with Next Boot.

    Returns ``(changes, set_args)``: ``changes`` maps NAME -> {before, after}
    (printed forms) for what differs, ``set_args`` the ``NAME=VALUE`` words for
    one ``set`` call. Raises MlxconfigError, before anything is set, for an
    unknown parameter, one the device does not have, a read-only one, or a
    value the parameter does not accept.
    """
    changes = {}
    set_args = []
    errors = []
    for name in sorted(wanted_params):
        base = name.split('[')[0]
        entry = config.get(name)
        if entry is None:
            if base in KNOWN_PARAMS:
                errors.append('%s is not a parameter of this device (the query does not list it; e.g. LINK_TYPE '
                              'on an Ethernet-only card)' % name)
            else:
                close = difflib.get_close_matches(name, list(config), n=3, cutoff=0.6)
                errors.append('unknown parameter %s%s' % (
                    name, ('; did you mean %s?' % ', '.join(close)) if close else ''))
            continue
        if entry['read_only']:
            errors.append('%s is read-only (RO) on this device' % name)
            continue
        try:
            token, number, value_name = normalize_wanted(name, wanted_params[name], entry)
        except MlxconfigError as exc:
            errors.append(str(exc))
            continue
        if not matches(entry['next_boot'], number, value_name):
            changes[name] = {'before': entry['next_boot'], 'after': printed_form(token, number, value_name)}
            set_args.append('%s=%s' % (name, token))
    if errors:
        raise MlxconfigError('; '.join(errors))
    return changes, set_args


def pending(config):
    """Names whose Current differs from Next Boot: set, but not active until a firmware reset or reboot."""
    result = []
    for name, entry in sorted(config.items()):
        if entry['current'] is None or entry['next_boot'] is None:
            continue
        current_number = split_value(entry['current'])[1]
        next_number = split_value(entry['next_boot'])[1]
        if current_number is not None and next_number is not None:
            differs = current_number != next_number
        else:
            differs = entry['current'] != entry['next_boot']
        if differs:
            result.append(name)
    return result


def apply_changes(config, changes):
    """The configuration as it will read after ``changes`` are set (check mode's prediction)."""
    result = dict((name, dict(entry)) for name, entry in config.items())
    for name, change in changes.items():
        result[name]['next_boot'] = change['after']
    return result


def render_next_boot(config, names):
    """Lines ``NAME=<next boot>`` for the diff."""
    return ''.join('%s=%s\n' % (name, config[name]['next_boot'] if name in config else '(absent)')
                   for name in sorted(names))
