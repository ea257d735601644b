# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Read what ``mlnx_qos -i <netdev>`` prints, plan the options that change it, and the ECN switches in sysfs.

``mlnx_qos`` (MLNX_OFED, DOCA-OFED and the ``mlnx-tools`` package) prints the port's QoS state after every call,
in layouts that grew over the releases (mlnx-tools ``python/mlnx_qos``, ``pretty_print``)::

    DCBX mode: OS controlled                          since MLNX_OFED 4.2 (2017)
    Priority trust state: dscp                        since 4.2 (the first 2017 release said "Priority trust mode")
    dscp2prio mapping:                                only with trust dscp
            prio:0 dscp:07,06,05,04,03,02,01,00,
    default priority:                                 OFED 5.x until 2024 (mlnx-tools 374d9b5 removed it)
    Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,max_buffer_size=262016
                                                      since 4.6; ",total_size=N" from late 2022, renamed 2023
    Cable len: 7                                      since 4.2
    PFC configuration:
            priority    0   1   2   3   4   5   6   7
            enabled     0   0   0   1   0   0   0   0
            buffer      0   0   0   1   0   0   0   0 since 4.6
    tc: 0 ratelimit: unlimited, tsa: vendor           one line per traffic class, then its priorities
             priority:  1

Lines are matched after stripping, with any run of whitespace accepted between the words, so copies whose tabs
became spaces (or were collapsed) read the same. A line of no known form is refused: a release that prints
something new must be looked at before its output drives a change. Free of Ansible imports.
"""

from __future__ import annotations

import os
import re

from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import HostReadError, printable, read_text
from ansible_collections.gpunet.rdma.plugins.module_utils._tool_runner import ToolRunner, option, value_words

# mlnx_qos -i IFACE [--trust ... --pfc ...]: read with the interface alone, set with options after it.
MLNX_QOS = ToolRunner('mlnx_qos', {'interface': option('-i'), 'options': value_words()})

TRUST_MODES = ('pcp', 'dscp')
PRIORITIES = tuple(range(8))

_WARNING_RE = re.compile(r'^\*+\s*WARNING:\s*(?P<text>.*?)\s*\*+$')
_DCBX_RE = re.compile(r'^DCBX mode:\s*(?P<mode>OS controlled|Firmware controlled)$')
_TRUST_RE = re.compile(r'^Priority trust (?:state|mode):\s*(?P<trust>pcp|dscp|both|none)$')
_DSCP_RE = re.compile(r'^prio:(?P<prio>[0-7])\s+dscp:(?P<dscps>(?:\d{2},)+)$')
_DEFAULT_PRIO_RE = re.compile(r'^prio:(?P<prio>[0-7])$')
_BUFFER_SIZE_RE = re.compile(r'^Receive buffer size \(bytes\):\s*(?P<sizes>(?:\d+,){8})'
                             r'(?:(?P<key>total_size|max_buffer_size)=(?P<total>\d+))?$')
_CABLE_RE = re.compile(r'^Cable len:\s*(?P<len>\d+)$')
_ROW_RE = re.compile(r'^(?P<name>priority|enabled|buffer)(?P<values>(?:\s+\d+){8})$')
_TC_RE = re.compile(r'^tc:\s*(?P<tc>[0-7])\s+ratelimit:\s*(?P<rate>unlimited|[\d.]+ Gbps),\s*tsa:\s*'
                    r'(?P<tsa>strict|vendor|unknown|ets, bw: (?P<bw>\d+)%)$')
_TC_PRIO_RE = re.compile(r'^priority:\s+(?P<prio>[0-7])$')
_NOTES = {
    'Priority trust state is not supported on your system': 'trust_unsupported',
    'Buffers commands are not supported on your system': 'buffers_unsupported',
    'Rate limit is not supported on your system!': 'ratelimit_unsupported',
}
_FATAL = 'ETS features are not supported on your system'


class MlnxQosError(ValueError):
    """Output that is not what mlnx_qos prints; ``line`` is the offending line."""

    def __init__(self, message, line=None):
        super().__init__(message)
        self.line = line


def _numbers(text):
    return [int(value) for value in text.split()]


def parse(text):
    """The QoS state ``mlnx_qos -i IF`` printed.

    Returns ``dcbx`` (``OS controlled`` / ``Firmware controlled`` / None), ``trust`` (``pcp``/``dscp``/``none``, None
    when the release prints no trust line), ``dscp2prio`` (priority -> DSCP values as printed), ``default_priority``
    (list, None when not printed), ``buffer_size`` (8 sizes or None), ``buffer_total`` (or None), ``cable_len``,
    ``pfc`` (8 flags, priority 0 first), ``prio2buffer`` (8 buffers or None), ``tcs`` (list of ``{tc, ratelimit,
    tsa, bw, priorities}`` in printed order), ``notes`` (what the tool said it cannot do), ``warnings`` (its
    ``*** WARNING ***`` lines) and ``layout`` (the features printed, for messages and tests).
    """
    if text is None or not str(text).strip():
        raise MlnxQosError('mlnx_qos printed nothing')
    state = {'dcbx': None, 'trust': None, 'dscp2prio': {}, 'default_priority': None, 'buffer_size': None,
             'buffer_total': None, 'cable_len': None, 'pfc': None, 'prio2buffer': None, 'tcs': [], 'notes': [],
             'warnings': []}
    section = None
    layout = []
    for raw in str(text).splitlines():
        line = ' '.join(raw.split())
        if not line:
            continue
        if line == _FATAL:
            raise MlnxQosError('mlnx_qos cannot read the port: %s (is this an mlx5 netdev with DCB support?)'
                               % line, raw)
        match = _WARNING_RE.match(line)
        if match:
            state['warnings'].append(match.group('text'))
            continue
        if line in _NOTES:
            state['notes'].append(_NOTES[line])
            continue
        match = _DCBX_RE.match(line)
        if match:
            state['dcbx'], section = match.group('mode'), None
            layout.append('dcbx')
            continue
        match = _TRUST_RE.match(line)
        if match:
            state['trust'], section = match.group('trust'), None
            layout.append('trust')
            continue
        if line == 'dscp2prio mapping:':
            section = 'dscp'
            continue
        if line == 'default priority:':
            section, state['default_priority'] = 'default', []
            layout.append('default_priority')
            continue
        if section == 'dscp':
            match = _DSCP_RE.match(line)
            if match:
                values = [int(v) for v in match.group('dscps').rstrip(',').split(',')]
                if any(v > 63 for v in values):
                    raise MlnxQosError('a DSCP value above 63 in the dscp2prio mapping', raw)
                state['dscp2prio'].setdefault(int(match.group('prio')), []).extend(values)
                continue
        if section == 'default':
            match = _DEFAULT_PRIO_RE.match(line)
            if match:
                state['default_priority'].append(int(match.group('prio')))
                continue
        match = _BUFFER_SIZE_RE.match(line)
        if match:
            state['buffer_size'] = [int(v) for v in match.group('sizes').rstrip(',').split(',')]
            if match.group('total'):
                state['buffer_total'] = int(match.group('total'))
                layout.append(match.group('key'))
            layout.append('buffer_size')
            section = None
            continue
        match = _CABLE_RE.match(line)
        if match:
            state['cable_len'], section = int(match.group('len')), None
            layout.append('cable_len')
            continue
        if line == 'PFC configuration:':
            section = 'pfc'
            continue
        if section == 'pfc':
            match = _ROW_RE.match(line)
            if match:
                values = _numbers(match.group('values'))
                name = match.group('name')
                if name == 'priority':
                    if values != list(PRIORITIES):
                        raise MlnxQosError('the PFC header does not list priorities 0 to 7', raw)
                    state['_pfc_header'] = True
                elif not state.get('_pfc_header'):
                    raise MlnxQosError('a PFC row before the "priority 0 1 ... 7" header', raw)
                elif name == 'enabled':
                    if any(v not in (0, 1) for v in values):
                        raise MlnxQosError('a PFC flag other than 0 or 1', raw)
                    state['pfc'] = values
                else:
                    if any(v > 7 for v in values):
                        raise MlnxQosError('a receive buffer index above 7', raw)
                    state['prio2buffer'] = values
                    layout.append('prio2buffer')
                continue
        match = _TC_RE.match(line)
        if match:
            tsa = match.group('tsa')
            state['tcs'].append({'tc': int(match.group('tc')), 'ratelimit': match.group('rate'),
                                 'tsa': 'ets' if tsa.startswith('ets') else tsa,
                                 'bw': int(match.group('bw')) if match.group('bw') is not None else None,
                                 'priorities': []})
            section = 'tc'
            continue
        if section == 'tc':
            match = _TC_PRIO_RE.match(line)
            if match:
                state['tcs'][-1]['priorities'].append(int(match.group('prio')))
                continue
        raise MlnxQosError('a line mlnx_qos does not print in any known release', raw)
    state.pop('_pfc_header', None)
    if state['pfc'] is None:
        raise MlnxQosError('no "PFC configuration:" block with an "enabled" row')
    seen = [p for tc in state['tcs'] for p in tc['priorities']]
    if len(seen) != len(set(seen)):
        raise MlnxQosError('a priority listed under two traffic classes')
    state['layout'] = layout
    return state


def pfc_priorities(flags):
    """[0,0,0,1,0,0,0,0] -> [3]."""
    return [prio for prio, flag in enumerate(flags or []) if flag]


def pfc_list(priorities):
    """[3] -> '0,0,0,1,0,0,0,0', the form of ``mlnx_qos --pfc``."""
    wanted = set(priorities or [])
    return ','.join('1' if prio in wanted else '0' for prio in PRIORITIES)


def check_priorities(values, option):
    """Refuse anything but distinct priorities 0..7; returns them sorted."""
    values = list(values or [])
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int) or v not in PRIORITIES]
    if bad:
        raise MlnxQosError('%s: %s is not a priority; give numbers from 0 to 7 (e.g. [3] for the RoCE '
                           'priority)' % (option, ', '.join(repr(v) for v in bad)))
    if len(set(values)) != len(values):
        raise MlnxQosError('%s: a priority is given twice (%s)' % (option, values))
    return sorted(values)


def plan(state, trust=None, pfc=None):
    """What to change: ``(changes, options)``.

    ``changes`` maps ``trust``/``pfc_priorities`` to ``{before, after}``, ``options`` is the argument list for one
    ``mlnx_qos -i IF ...`` call (empty when nothing differs). ``pfc`` is the list of priorities that must have PFC
    on, every other priority off; None leaves PFC alone, as None for ``trust`` leaves the trust state alone.
    """
    changes, options = {}, []
    if trust is not None:
        if trust not in TRUST_MODES:
            raise MlnxQosError('trust must be one of %s, got %r' % (', '.join(TRUST_MODES), trust))
        if state.get('trust') is None:
            raise MlnxQosError('this mlnx_qos prints no trust state (a release before MLNX_OFED 4.2?), so the trust '
                               'state can neither be read nor set; update MLNX_OFED / mlnx-tools')
        if 'trust_unsupported' in state.get('notes', []):
            raise MlnxQosError('mlnx_qos says "Priority trust state is not supported on your system": the driver '
                               'has no DSCP trust (an old kernel or a device without it)')
        if state['trust'] != trust:
            changes['trust'] = {'before': state['trust'], 'after': trust}
            options += ['--trust', trust]
    if pfc is not None:
        wanted = check_priorities(pfc, 'pfc_priorities')
        current = pfc_priorities(state['pfc'])
        if current != wanted:
            changes['pfc_priorities'] = {'before': current, 'after': wanted}
            options += ['--pfc', pfc_list(wanted)]
    return changes, options


def summary(state):
    """The part of a parsed state the module returns and the report shows."""
    return {'dcbx': state.get('dcbx'), 'trust': state.get('trust'), 'pfc_priorities': pfc_priorities(state['pfc']),
            'cable_len': state.get('cable_len'), 'prio2buffer': state.get('prio2buffer'),
            'traffic_classes': dict((tc['tc'], tc['priorities']) for tc in state.get('tcs', []))}


def render(state, ecn=None):
    """Text for a diff: the settings this collection manages, one per line."""
    lines = ['trust: %s' % state.get('trust'), 'pfc: %s' % pfc_list(pfc_priorities(state['pfc']))]
    if ecn:
        for direction in ('roce_np', 'roce_rp'):
            if ecn.get(direction) is not None:
                lines.append('ecn %s enabled priorities: %s' % (
                    direction, ','.join(str(p) for p in ecn[direction]) or 'none'))
    return '\n'.join(lines) + '\n'


# ECN of RoCE ports in sysfs (MLNX_OFED and DOCA-OFED drivers; the upstream mlx5 driver has no such tree and takes
# the priorities from firmware, ROCE_CC_PRIO_MASK_P<n>): /sys/class/net/<if>/ecn/<roce_np|roce_rp>/enable/<0..7>.
ECN_DIRECTIONS = ('roce_np', 'roce_rp')


def ecn_dir(sysfs_root, netdev, direction):
    return os.path.join(sysfs_root, 'class', 'net', netdev, 'ecn', direction, 'enable')


def read_ecn_files(sysfs_root, netdev):
    """``{(direction, priority): text as read}`` of the ECN switches, or None when the driver has no ECN tree.

    The text is kept as read (``"0\\n"``) so that an undo writes back exactly what was there. A tree with a direction
    or a priority missing, a file that cannot be read, or a value other than 0/1 raises MlnxQosError naming the file.
    """
    base = os.path.join(sysfs_root, 'class', 'net', netdev, 'ecn')
    if not os.path.isdir(base):
        return None
    files = {}
    for direction in ECN_DIRECTIONS:
        for prio in PRIORITIES:
            path = os.path.join(ecn_dir(sysfs_root, netdev, direction), str(prio))
            try:
                # lenient: a stray byte becomes U+FFFD and is refused below as "not 0 or 1", naming the file
                text = read_text(path, lenient=True, limit=4096)
            except HostReadError as exc:
                raise MlnxQosError('%s; the ECN tree of %s is not the one the MLNX_OFED / DOCA-OFED driver makes '
                                   '(check the driver, or leave ecn_priorities unset)' % (exc, netdev))
            if text.strip() not in ('0', '1'):
                raise MlnxQosError('%s holds %r, not 0 or 1; the ECN tree of %s is not the one the MLNX_OFED / '
                                   'DOCA-OFED driver makes (check the driver, or leave ecn_priorities unset)'
                                   % (path, printable(text.strip(), 40), netdev))
            files[(direction, prio)] = text
    return files


def ecn_enabled(files):
    """``{roce_np: [priorities enabled], roce_rp: [...]}`` of what ``read_ecn_files`` read."""
    return dict((direction, [prio for prio in PRIORITIES if files[(direction, prio)].strip() == '1'])
                for direction in ECN_DIRECTIONS)


def read_ecn(sysfs_root, netdev):
    """``{roce_np: [priorities enabled], roce_rp: [...]}``, or None when the driver has no ECN tree."""
    files = read_ecn_files(sysfs_root, netdev)
    return None if files is None else ecn_enabled(files)


def plan_ecn(current, wanted):
    """Files to write ``1`` to: ``[(direction, priority)]`` for each wanted priority not enabled yet."""
    wanted = check_priorities(wanted, 'ecn_priorities')
    return [(direction, prio) for direction in ECN_DIRECTIONS for prio in wanted
            if prio not in current[direction]]
