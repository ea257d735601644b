# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""perftest results (ib_write_bw, ib_read_bw, ib_send_bw, the latency tests): tables, line-rate share, failures.

Bandwidth tables. perftest prints ``BW average[MB/sec]`` (releases up to 24.04) or ``BW average[MiB/sec]``
(24.07 on), both in units of 2**20 bytes per second, and with ``--report_gbits`` ``BW average[Gb/sec]`` in units of
10**9 bits per second; everything is converted to Gb/s here. Extra columns of some modes are read too: ``#sl``
(raw Ethernet QoS), ``BW PortN`` / ``MsgRate PortN`` (``--report-per-port``), ``CPU_Util[%]`` (``--cpu_util``).

The unit in the header is not always the unit of the numbers: a server prints its own header (MB/sec unless it got
``--report_gbits``) over the numbers the client sends it, computed in the client's unit. Every row is therefore
checked against its message rate - ``MsgRate[Mpps] x #bytes x 8`` is the bandwidth in bit/s, in any mode,
bidirectional and multi-QP included, because perftest derives both columns from the same count. A row whose numbers
fit the other unit is read in that unit and says so (``unit_mismatch``); a row that fits neither is a problem, never
a guess.

Latency tables: ``t_min t_max t_typical`` (releases before 2016), with ``t_avg t_stdev 99% 99.9%`` (since), and
``t_avg[usec] tps average`` for duration runs (``-D``); all times are microseconds.
"""

from __future__ import annotations

import re
import zlib

from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import normalize_pci_address, roce_gid_index
from ansible_collections.gpunet.rdma.plugins.module_utils._tool_runner import ToolRunner, flag_if, option, value_word

# The perftest tools (ib_write_bw, ib_read_lat, ...) share their command line: the server takes the device, port, TCP
# port, GID index (RoCE) and, for bandwidth, the message size and --report_gbits; the client adds the server address.
PERFTEST = ToolRunner('perftest', {
    'device': option('-d'),
    'port': option('-i'),
    'tcp_port': option('-p'),
    'gid_index': lambda index: ['-x', str(index)] if index is not None else [],
    'size': lambda size: ['-s', str(size)] if size is not None else [],
    'gbits': flag_if('--report_gbits'),
    'server': value_word(),
})
SERVER_PARTS = 'device port tcp_port gid_index size gbits'
CLIENT_PARTS = SERVER_PARTS + ' server'

MIB_PER_SECOND_IN_GBPS = 2 ** 20 * 8 / 1e9
# Gb/s per unit of the numbers; MB/sec and MiB/sec are the same 2**20 bytes per second.
GBPS_PER_UNIT = {'Gb/sec': 1.0, 'MiB/sec': MIB_PER_SECOND_IN_GBPS}
# The unit the numbers are in when the header is right.
HEADER_UNITS = {'Gb/sec': 'Gb/sec', 'MB/sec': 'MiB/sec', 'MiB/sec': 'MiB/sec'}
# Rounding of two printed numbers aside, bandwidth and message rate agree exactly; this is the slack on top.
CROSS_CHECK_SLACK = 0.02
# A message rate printed with too few significant digits (0.000001) cannot check anything.
CROSS_CHECK_MAX_RATE_ERROR = 0.25

_NUMBER = re.compile(r'^-?\d{1,30}(?:\.\d{1,30})?$')
_INTEGER = re.compile(r'^\d{1,30}$')
_BW_COLUMN = re.compile(
    r'#bytes|#sl|#iterations|BW peak\[(?P<peak>[^\]\s]*)\]|BW average\[(?P<average>[^\]\s]*)\]'
    r'|MsgRate Port(?P<rate_port>\d)\[Mpps\]|MsgRate\[Mpps\]|BW Port(?P<bw_port>\d)\[[^\]\s]*\]|CPU_Util\[%\]')
_LAT_COLUMN = re.compile(
    r'#bytes|#iterations|t_min\[[^\]\s]*\]|t_max\[[^\]\s]*\]|t_typical\[[^\]\s]*\]|t_avg\[[^\]\s]*\]'
    r'|t_stdev\[[^\]\s]*\]|99\.9% percentile\[[^\]\s]*\]|99% percentile\[[^\]\s]*\]|tps average|CPU_Util\[%\]')
_LAT_NAMES = (('t_min', 't_min_usec'), ('t_max', 't_max_usec'), ('t_typical', 't_typical_usec'),
              ('t_avg', 't_avg_usec'), ('t_stdev', 't_stdev_usec'), ('99.9%', 'p99_9_usec'), ('99%', 'p99_usec'),
              ('tps', 'tps_average'), ('CPU_Util', 'cpu_util_pct'))
_TITLE = re.compile(
    r'^\s*(?P<title>(?P<verb>[A-Za-z][\w]*)(?P<mods>(?: [A-Za-z][\w]*)*?) (?P<kind>BW|Latency) Test)\s*$')
_VERBS = {'RDMA_Write': 'write', 'RDMA_Write_imm': 'write', 'RDMA_Read': 'read', 'Send': 'send', 'Send_imm': 'send',
          'Atomic': 'atomic'}
# "Name : value" pairs of perftest's test information block, two per line in places.
_INFO_PAIR = re.compile(r'(?P<name>[A-Za-z][A-Za-z0-9_*.()-]*(?: [A-Za-z0-9_*.()-]+)*)\s*:\s*(?P<value>\S+)')
_INFO_NAMES = {'Device': 'device', 'Number of qps': 'qps', 'Transport type': 'transport_type',
               'Connection type': 'connection_type', 'Link type': 'link_type', 'Mtu': 'mtu', 'GID index': 'gid_index',
               'Gid index': 'gid_index', 'rdma_cm QPs': 'rdma_cm', 'Data ex. method': 'data_exchange',
               'Dual-port': 'dual_port', 'Post List': 'post_list', 'TX depth': 'tx_depth', 'RX depth': 'rx_depth'}
_WAITING = 'Waiting for client to connect'


class _Table(object):
    """One result table: its kind, columns, the prefix its lines carry and its rows.

    Output collected through mpirun, kubectl logs --timestamps or a job runner carries a prefix on every line
    (``[1,0]<stdout>:``, a timestamp); the rows must carry one of the same shape - digits may differ.
    """

    def __init__(self, kind, columns, prefix, unit=None):
        self.kind, self.columns, self.unit = kind, columns, unit
        self.prefix = re.compile('^' + ''.join(r'\d+' if part.isdigit() else re.escape(part)
                                               for part in re.split(r'(\d+)', prefix))) if prefix else None
        self.rows = []


def _header(line):
    """A result table header in ``line``: a _Table without rows, or None."""
    start = line.find('#bytes')
    if start < 0:
        return None
    prefix, rest = line[:start].strip(), line[start:]
    if 'BW average[' in rest:
        columns, unit = [], None
        for match in _BW_COLUMN.finditer(rest):
            token = match.group(0)
            if match.group('average') is not None:
                columns.append('average')
                unit = match.group('average')
            elif match.group('peak') is not None:
                columns.append('peak')
            elif match.group('rate_port') is not None:
                columns.append('port%s_msg_rate_mpps' % match.group('rate_port'))
            elif match.group('bw_port') is not None:
                columns.append('port%s_bw' % match.group('bw_port'))
            else:
                columns.append({'#bytes': 'bytes', '#sl': 'sl', '#iterations': 'iterations',
                                'MsgRate[Mpps]': 'msg_rate_mpps', 'CPU_Util[%]': 'cpu_util_pct'}[token])
        if columns[:1] == ['bytes'] and 'iterations' in columns and 'average' in columns:
            return _Table('bw', columns, prefix, unit)
        return None
    if 't_' in rest or 'tps average' in rest:
        columns = ['bytes' if m.group(0) == '#bytes' else 'iterations' if m.group(0) == '#iterations'
                   else next(name for key, name in _LAT_NAMES if m.group(0).startswith(key))
                   for m in _LAT_COLUMN.finditer(rest)]
        if columns[:2] == ['bytes', 'iterations'] and len(columns) > 2:
            return _Table('lat', columns, prefix)
    return None


def _row(line, table):
    """The numbers of ``line`` as a row of ``table`` (dict of column -> printed text), or None."""
    text = line.strip()
    if table.prefix:
        match = table.prefix.match(text)
        if not match:
            return None
        text = text[match.end():]
    tokens = text.split()
    if len(tokens) != len(table.columns) or not all(_NUMBER.match(token) for token in tokens):
        return None
    row = dict(zip(table.columns, tokens))
    if not all(_INTEGER.match(row[name]) for name in ('bytes', 'iterations', 'sl') if name in row):
        return None
    return row


def _tables(text):
    """Every result table of ``text`` in order, with the rows that follow each header."""
    tables, current = [], None
    for line in (text or '').splitlines():
        header = _header(line)
        if header is not None:
            tables.append(header)
            current = header
            continue
        if current is not None:
            row = _row(line, current)
            if row is not None:
                current.rows.append(row)
    return tables


def _half_ulp(printed):
    """Half a unit in the last printed place of a number: the rounding error of what perftest printed."""
    decimals = len(printed.partition('.')[2])
    return 0.5 * 10 ** -decimals


def _resolve_unit(printed_unit, row):
    """The unit the row's numbers are in: ``(unit, mismatch, problem, cross_checked)``."""
    header_unit = HEADER_UNITS.get(printed_unit)
    if header_unit is None:
        return None, None, ('the table header names the unit %r, which is neither Gb/sec nor MB/sec / MiB/sec: '
                            'this output is not from a perftest release this parser knows' % printed_unit), False
    average = float(row['average'])
    rate_text, size = row.get('msg_rate_mpps'), int(row['bytes'])
    if average < 0 or (rate_text is not None and float(rate_text) < 0):
        return None, None, ('a negative bandwidth or message rate (%s, %s Mpps) is a perftest counter overflow, '
                            'not a measurement: run the test again' % (row['average'], rate_text)), False
    if rate_text is None or size <= 0 or average == 0 or float(rate_text) == 0:
        return header_unit, None, None, False
    rate = float(rate_text)
    rate_error = _half_ulp(rate_text) / rate
    if rate_error > CROSS_CHECK_MAX_RATE_ERROR:
        return header_unit, None, None, False
    tolerance = CROSS_CHECK_SLACK + rate_error + _half_ulp(row['average']) / average
    expected_gbps = rate * 1e6 * size * 8 / 1e9
    fits = [unit for unit in (header_unit, 'MiB/sec' if header_unit == 'Gb/sec' else 'Gb/sec')
            if abs(average * GBPS_PER_UNIT[unit] - expected_gbps) <= tolerance * expected_gbps]
    if not fits:
        return None, None, (
            'BW average %s fits neither Gb/sec nor MiB/sec against the message rate (%s Mpps x %d bytes = %.2f Gb/s): '
            'the row is garbled (interleaved output of two processes?) and is not used' % (
                row['average'], rate_text, size, expected_gbps)), True
    if fits[0] == header_unit:
        return header_unit, None, None, True
    return fits[0], ('the table header says %s but the numbers are in %s (MsgRate %s Mpps x %d bytes): server and '
                     'client disagree on --report_gbits; read as %s' % (printed_unit, fits[0], rate_text, size,
                                                                        fits[0])), None, True


def _bw_row(row, printed_unit):
    unit, mismatch, problem, checked = _resolve_unit(printed_unit, row)
    factor = GBPS_PER_UNIT.get(unit)
    result = {'bytes': int(row['bytes']), 'iterations': int(row['iterations']),
              'peak': float(row['peak']) if 'peak' in row else None, 'average': float(row['average']),
              'msg_rate_mpps': float(row['msg_rate_mpps']) if 'msg_rate_mpps' in row else None,
              'unit': printed_unit, 'numbers_unit': unit, 'unit_mismatch': mismatch, 'problem': problem,
              'cross_checked': checked, 'average_gbps': None, 'peak_gbps': None}
    if factor is not None:
        result['average_gbps'] = round(result['average'] * factor, 2)
        if result['peak'] is not None:
            result['peak_gbps'] = round(result['peak'] * factor, 2)
    for name in ('sl', 'port1_bw', 'port1_msg_rate_mpps', 'port2_bw', 'port2_msg_rate_mpps', 'cpu_util_pct'):
        if name in row:
            result[name] = int(row[name]) if name == 'sl' else float(row[name])
            if name.endswith('_bw') and factor is not None:
                result[name + '_gbps'] = round(result[name] * factor, 2)
    return result


def _to_int(value):
    digits = re.match(r'\d{1,12}', value or '')
    return int(digits.group(0)) if digits else None


def parse_info(text):
    """perftest's test information block (the last one printed): test, device, link type, QPs, side..."""
    info, titles = {}, []
    for line in (text or '').splitlines():
        title = _TITLE.match(line)
        if title:
            titles.append(title)
            continue
        for pair in _INFO_PAIR.finditer(line):
            name = _INFO_NAMES.get(pair.group('name'))
            if name:
                info[name] = pair.group('value')
    title = titles[-1] if titles else None
    mods = title.group('mods').split() if title else []
    # Two test titles: server and client on one node (run_perftest_loopback, a loopback test as the field report
    # runs it). Otherwise the server waits for its client; a client prints its TX depth, a lone server (of the
    # send tests) its RX depth.
    if len(titles) > 1:
        side = 'both'
    elif _WAITING in (text or ''):
        side = 'server'
    elif 'tx_depth' in info:
        side = 'client'
    elif 'rx_depth' in info:
        side = 'server'
    else:
        side = None
    return {
        'test': title.group('title')[:-len(' Test')] if title else None,
        'kind': {'BW': 'bw', 'Latency': 'lat'}[title.group('kind')] if title else None,
        'verb': _VERBS.get(title.group('verb'), title.group('verb').lower()) if title else None,
        'bidirectional': 'Bidirectional' in mods,
        'device': info.get('device'), 'link_type': info.get('link_type'),
        'transport_type': info.get('transport_type'), 'connection_type': info.get('connection_type'),
        'qps': _to_int(info.get('qps')), 'mtu': _to_int(info.get('mtu')), 'gid_index': _to_int(info.get('gid_index')),
        'post_list': _to_int(info.get('post_list')),
        'rdma_cm': {'ON': True, 'OFF': False}.get(info.get('rdma_cm')),
        'data_exchange': info.get('data_exchange'), 'side': side,
    }


def parse_bw(text):
    """The bandwidth result of perftest output (the last row of the last table), in Gb/s, or None without a table.

    Returns ``{bytes, iterations, peak_gbps, average_gbps, msg_rate_mpps, unit, device, link_type}`` (``unit`` is
    the header's, as printed) and: ``numbers_unit`` (the unit the numbers turned out to be in), ``unit_mismatch``
    (null, or why the header's unit is not the numbers' unit), ``problem`` (null, or why the row cannot be read;
    then ``average_gbps`` is null), ``cross_checked``, ``peak_measured`` (false for ``-D`` runs: perftest prints
    0.00), ``rows`` (every row of that table, converted), ``all_sizes`` (``-a``), ``tables`` and the test
    information (``test``, ``verb``, ``bidirectional``, ``qps``, ``transport_type``, ``connection_type``, ``mtu``,
    ``gid_index``, ``post_list``, ``rdma_cm``, ``side``).
    """
    tables = [table for table in _tables(text) if table.kind == 'bw' and table.rows]
    if not tables:
        return None
    table = tables[-1]
    rows = [_bw_row(row, table.unit) for row in table.rows]
    last = rows[-1]
    result = parse_info(text)
    result.update({
        'bytes': last['bytes'], 'iterations': last['iterations'], 'peak_gbps': last['peak_gbps'],
        'average_gbps': last['average_gbps'], 'msg_rate_mpps': last['msg_rate_mpps'], 'unit': table.unit,
        'numbers_unit': last['numbers_unit'], 'unit_mismatch': last['unit_mismatch'], 'problem': last['problem'],
        'cross_checked': last['cross_checked'], 'peak_measured': bool(last['peak']), 'rows': rows,
        'all_sizes': len(set(row['bytes'] for row in rows)) > 1, 'tables': len(tables), 'kind': 'bw',
    })
    return result


def parse_lat(text):
    """The latency result of perftest output (the last row of the last table), in microseconds, or None.

    Returns ``{bytes, iterations, t_min_usec, t_max_usec, t_typical_usec, t_avg_usec, t_stdev_usec, p99_usec,
    p99_9_usec, tps_average, layout, rows, all_sizes, ...}`` with the test information of ``parse_info``; a column
    the layout does not print is null. ``layout``: ``iterations`` (7 figures), ``iterations-legacy`` (t_min, t_max,
    t_typical: releases before 2016) or ``duration`` (``-D``: t_avg and transactions per second).
    """
    tables = [table for table in _tables(text) if table.kind == 'lat' and table.rows]
    if not tables:
        return None
    table = tables[-1]
    names = ('t_min_usec', 't_max_usec', 't_typical_usec', 't_avg_usec', 't_stdev_usec', 'p99_usec', 'p99_9_usec',
             'tps_average', 'cpu_util_pct')
    rows = []
    for row in table.rows:
        converted = {'bytes': int(row['bytes']), 'iterations': int(row['iterations'])}
        converted.update((name, float(row[name]) if name in row else None) for name in names)
        rows.append(converted)
    if 'tps_average' in table.columns:
        layout = 'duration'
    elif 't_avg_usec' in table.columns:
        layout = 'iterations'
    else:
        layout = 'iterations-legacy'
    result = parse_info(text)
    result.update(rows[-1])
    result.update({'rows': rows, 'layout': layout, 'all_sizes': len(set(row['bytes'] for row in rows)) > 1,
                   'tables': len(tables), 'kind': 'lat'})
    return result


def parse(text):
    """Everything in one perftest output: ``{kind, bw, lat, failures, info}`` (kind: bw, lat or null)."""
    bw, lat = parse_bw(text), parse_lat(text)
    info = parse_info(text)
    kind = info['kind'] or ('bw' if bw else 'lat' if lat else None)
    return {'kind': kind, 'bw': bw, 'lat': lat, 'failures': explain_failure(text), 'info': info}


_STATUS = {'5': 'work request flushed (the QP went to error state before)',
           '10': 'remote access error (the peer refused the memory key: different buffer sizes or options)',
           '12': 'transport retry counter exceeded (the peer stopped answering: MTU, PFC/ECN, routing, GID or a '
                 'dead link on the way)',
           '13': 'receiver not ready, retries exceeded (the receive side posts no buffers: server and client run '
                 'different tests or options)'}

# (kind, signature as a regular expression, remedy). The order puts causes before their consequences.
FAILURES = (
    ('bad_option', r'Invalid Command (?:or flag|line)|Duplicated argument: \S+|\S[^\n]* should be between \d+ and \d+'
                   r'|Parser function exited with Error',
     'perftest refused its command line (an option this release does not know, a duplicated option or a value out '
     'of range): run the tool with --help on the node and use only the options it lists.'),
    ('no_device', r'IB device \S+ not found|Unable to find the Infiniband/RoCE device|No IB devices found',
     'the RDMA device is not visible here: check the name (ibv_devices) and, in a pod, the RDMA resource request '
     'and the RDMA netns mode.'),
    ('no_port', r'Unable to query port \d+ attributes',
     'the device has no such port (-i / --ib-port): use a port number the device has (ibv_devinfo, or the ports/ '
     'directory in sysfs).'),
    ('port_init', r'Port number \d+ state is Init',
     'the port is INIT: the link trained but no subnet manager has configured it; run opensm (or enable the SM on '
     'the switch) and test again.'),
    ('port_down', r'Port number \d+ state is (?!Init\b)\S+|state is Down',
     'the port is not ACTIVE: test an ACTIVE port (the fleet report lists them) or cable / enable this one.'),
    ('link_layer', r'Couldn\'t set the link layer|Link layer on port \d+ is Unknown',
     'perftest could not use the port (its state or link layer): check it with ibv_devinfo and test an ACTIVE port.'),
    ('memlock', r'Couldn\'t allocate MR|failed to create mr|Failed to create MR',
     'memory registration failed: the process may lock too little memory (ulimit -l; 64 KiB is the kernel default, '
     '8192 KiB a common systemd default). In pods: lift the container runtime\'s memlock limit with the '
     'containerd_memlock role and give the container IPC_LOCK.'),
    ('gid_type', r'Found Incompatibility issue with GID types',
     'server and client picked GIDs of different kinds (IPv4 against IPv6, RoCE v1 against v2): give both sides '
     'the same kind of GID index with -x (show_gids lists them).'),
    ('gid_index', r'Unable to set up (?:socket connection|my IB connection parameters)',
     'perftest could not read a usable GID: the -x index is beyond the port\'s GID table or empty, or (without -x '
     'on RoCE) the port has no GID with an address; pick a RoCE v2 index with an IP address (show_gids, or '
     '/sys/class/infiniband/DEV/ports/N/gids and gid_attrs) - in a pod the interface must be in the pod\'s '
     'network namespace.'),
    ('gid_zero', r'(?m)^\s*GID: 00(?::00){15}\s*$',
     'the RoCE GID in use is all zeros: the GID index points at an empty entry (no IP address on that netdev, or '
     'the netdev is not in this network namespace); use -x with a RoCE v2 index that has an address (show_gids).'),
    ('qp_connect', r'Failed to modify QP \d* ?to RT[RS]|Unable to Connect the HCA\'s through the link',
     'the queue pairs could not be connected: on RoCE a wrong or empty GID index (-x), or a GID type the peer does '
     'not use; on InfiniBand a peer LID the subnet manager does not route. Check show_gids / ibstat on both sides.'),
    ('completion_error', r'Completion with error at (?:client|server)|Failed status \d+',
     'work completions failed during the test: the connection came up but traffic did not flow.'),
    ('no_exchange', r'Couldn\'t read remote address|Unable to read (?:to|from) socket/rdma_cm|Failed to exchange data'
                    r'|Couldn\'t connect to \S+|Unable to init the socket connection'
                    r'|Unable to open file descriptor for socket connection',
     'client and server could not exchange connection data over TCP: the server was not running, or its port '
     '(18515 by default) is blocked between the two.'),
    ('no_context', r'Couldn\'t get context for the device',
     'the device could not be opened: driver not loaded (ibv_devinfo), or /dev/infiniband missing in the container.'),
)
# A failure that only follows from another one is not listed beside it.
_CONSEQUENCES = {'no_context': ('no_port', 'port_init', 'port_down', 'link_layer', 'bad_option'),
                 'link_layer': ('no_port', 'port_init', 'port_down')}


def explain_failure(text):
    """Every known failure signature in the output: ``[{kind, matched, remedy}]`` (first match per kind)."""
    found = []
    for kind, signature, remedy in FAILURES:
        match = re.search(signature, text or '', re.IGNORECASE)
        if not match:
            continue
        if kind == 'completion_error':
            status = re.search(r'Failed status (\d+)', text or '')
            if status:
                remedy = '%s Status %s: %s.' % (remedy, status.group(1),
                                                _STATUS.get(status.group(1), 'see ibv_wc_status_str'))
        found.append({'kind': kind, 'matched': match.group(0).strip(), 'remedy': remedy})
    kinds = set(item['kind'] for item in found)
    return [item for item in found if not kinds.intersection(_CONSEQUENCES.get(item['kind'], ()))]


def parse_ulimit(text):
    """``ulimit -l`` output -> ``'unlimited'`` or KiB as int, or None."""
    for line in (text or '').splitlines():
        value = line.strip().rpartition(':')[2].strip() if 'ulimit' in line else line.strip()
        if value == 'unlimited':
            return value
        if value.isdigit():
            return int(value)
    return None


def ulimit_problem(value, minimum_kib):
    """Why a memlock limit is too low for RDMA, or None when it is enough."""
    if value == 'unlimited':
        return None
    if value is None:
        return 'ulimit -l printed nothing readable'
    if value < minimum_kib:
        hint = {64: ' (the kernel default)', 8192: ' (a common systemd / container runtime default)'}.get(value, '')
        return ('ulimit -l is %d KiB%s, below %d KiB: memory registration of large buffers fails with "Couldn\'t '
                'allocate MR"; lift the limit with the containerd_memlock role' % (value, hint, minimum_kib))
    return None


def percentage_problem(value):
    """Why ``value`` is not a share of the line rate to pass at (a number from 1 to 100, or a string of one), or None.

    Below 1 every port passes (-5 passes a dead link), above 100 none does: both are typos, never a threshold.
    """
    try:
        number = None if isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        number = None
    if number is None or not 1 <= number <= 100:  # NaN is not between either
        return 'must be a percentage between 1 and 100, got %r' % (value,)
    return None


def line_rate_result(output, rate_gbps, min_pct, rc=0):
    """One test's record: bandwidth, share of ``rate_gbps`` (the port's line rate) and verdict.

    ``{ok, average_gbps, peak_gbps, bytes, line_rate_gbps, line_rate_pct, problem, failures}`` and, read from the
    output: ``unit`` (the header's), ``numbers_unit``, ``unit_mismatch``, ``msg_rate_mpps``, ``device``,
    ``link_type``, ``qps``, ``bidirectional`` and ``directions``. A bidirectional run (``-b``) reports both
    directions summed, so it is judged against twice the line rate. ``min_pct`` outside 1..100 is a ValueError.
    """
    problem = percentage_problem(min_pct)
    if problem:
        raise ValueError('the share of the line rate to pass at (min_line_rate_pct) %s' % problem)
    parsed = parse_bw(output)
    failures = explain_failure(output)
    record = {'ok': False, 'average_gbps': None, 'peak_gbps': None, 'line_rate_gbps': rate_gbps,
              'line_rate_pct': None, 'problem': None, 'failures': failures, 'bytes': None, 'unit': None,
              'numbers_unit': None, 'unit_mismatch': None, 'msg_rate_mpps': None, 'device': None, 'link_type': None,
              'qps': None, 'bidirectional': False, 'directions': 1, 'min_line_rate_pct': min_pct, 'gid_index': None}
    if parsed is None:
        record['problem'] = (failures[0]['remedy'] if failures
                             else 'ib_write_bw printed no result table (exit status %s)' % rc)
        return record
    directions = 2 if parsed['bidirectional'] else 1
    record.update((key, parsed[key]) for key in ('average_gbps', 'peak_gbps', 'bytes', 'unit', 'numbers_unit',
                                                 'unit_mismatch', 'msg_rate_mpps', 'device', 'link_type', 'qps',
                                                 'bidirectional', 'gid_index'))
    record['directions'] = directions
    if parsed['problem']:
        record['problem'] = parsed['problem']
        return record
    if not rate_gbps:
        record['problem'] = 'the port\'s line rate is unknown, so the result cannot be judged'
        return record
    share = round(100.0 * parsed['average_gbps'] / (rate_gbps * directions), 1)
    record['line_rate_pct'] = share
    if share < min_pct:
        record['problem'] = ('%.2f Gb/s is %.1f %% of the %g Gb/s line rate%s, below %g %%: check the PCIe link '
                             '(lspci -vv LnkSta), the NUMA placement and the MTU' % (
                                 parsed['average_gbps'], share, rate_gbps,
                                 ' (both directions: twice that)' if directions == 2 else '', min_pct))
    else:
        record['ok'] = True
    return record


# ------------------------------------------------------------------ cross-node pairs

LATENCY_TOOLS = ('ib_write_lat', 'ib_read_lat', 'ib_send_lat')


def _natural(name):
    return [int(part) if part.isdigit() else part for part in re.split(r'(\d+)', str(name))]


class RailError(ValueError):
    """A fabric's ``validation.rails`` that cannot be used on a node (the message names the entry and the node), or
    a ``validation`` setting that cannot be used at all (the message names the group)."""


def _is_vf(port, virtual_functions):
    return bool(port.get('virtual_function')) or port.get('device') in virtual_functions


def _pci_key(port):
    """PCI address order (domain, bus, device, function), then the port number; ports whose function is unknown (a
    command source without sysfs) after them, in device order."""
    pci = normalize_pci_address(port.get('pci_address'))
    return (0 if pci else 1, pci or '', _natural(port.get('device')), port.get('port') or 0)


def rail_entry_name(entry):
    """The identity of a fabric ``validation.rails`` entry: ``mlx5_2``, ``mlx5_9|mlx5_0`` (the first a node has),
    ``mlx5_0/2`` (a device's port)."""
    if isinstance(entry, dict):
        return '%s/%s' % (entry.get('device'), int(entry.get('port') or 1))
    if isinstance(entry, (list, tuple)):
        return '|'.join(str(name) for name in entry)
    return str(entry)


def node_rails(ports, link_layer=None, rails=None, virtual_functions=()):
    """The rails of one node: ``[port or None]``, rail ``i`` at index ``i``; None where the node's port of that rail
    is not ACTIVE (or missing), so that a dead port leaves a gap instead of shifting the rails after it.

    Rails are ports of physical functions: an SR-IOV VF (a port with ``virtual_function``, or a device named in
    ``virtual_functions``) shares its PF's cable and is no rail. Without ``rails`` rail ``i`` is the ``i``-th port of the
    link layer, ACTIVE or not, in PCI address order of the node's functions (then port number) - the Spiderpool RoCE
    guide's rail-optimized nodes, one NIC per GPU, cabled the same way on every node. ``rails`` (a fabric's
    ``validation.rails``) names them instead: one entry per rail, a device name, a list of names (the first one the
    node has) or ``{device, port}``. An entry that names a VF of the node raises RailError.
    """
    ports = [p for p in ports or [] if isinstance(p, dict)]
    candidates = [p for p in ports if (not link_layer or p.get('link_layer') == link_layer)
                  and not _is_vf(p, virtual_functions)]
    candidates.sort(key=_pci_key)
    if not rails:
        return [p if p.get('state') == 'ACTIVE' else None for p in candidates]
    vf_names = set(p.get('device') for p in ports if _is_vf(p, virtual_functions)) | set(virtual_functions or ())
    found = []
    for index, entry in enumerate(rails):
        if isinstance(entry, dict):
            wanted = [(entry.get('device'), int(entry.get('port') or 1))]
        elif isinstance(entry, (list, tuple)):
            wanted = [(name, None) for name in entry]
        else:
            wanted = [(entry, None)]
        port = None
        for device, number in wanted:
            if device in vf_names:
                raise RailError('validation.rails[%d] (%s) names %s, an SR-IOV virtual function of this node: a VF '
                                'shares its PF\'s cable and is no rail; name the physical function'
                                % (index, rail_entry_name(entry), device))
            port = next((p for p in candidates if p.get('device') == device and number in (None, p.get('port'))), None)
            if port is not None:
                break
        found.append(port if port is not None and port.get('state') == 'ACTIVE' else None)
    return found


def _rail_name(rails, rail, server_port, client_port):
    """A pair's rail by identity: the fabric's entry, else the PCI function (and port) of the client's rail port, with
    the server's when it differs."""
    if rails:
        return rail_entry_name(rails[rail])
    names = []
    for port in (client_port, server_port):
        pci = normalize_pci_address(port.get('pci_address'))
        text = pci or str(port.get('device'))
        if int(port.get('port') or 1) != 1:
            text += '/%d' % int(port['port'])
        names.append(text)
    return names[0] if names[0] == names[1] else '%s, server %s' % tuple(names)


def _pair_key(seed, pair):
    text = '%s|%s|%s|%s|%s' % (seed, pair['group'], pair['rail'], pair['client'], pair['server'])
    return zlib.crc32(text.encode('utf-8')) & 0xffffffff


def _gid(port):
    return roce_gid_index(port) if port.get('gids') else None


def _pair(group, rail, server, server_port, client, client_port, line_rate, max_latency):
    return {'group': group, 'rail': rail, 'server': server, 'client': client,
            'device': server_port['device'], 'port': int(server_port.get('port') or 1),
            'client_device': client_port['device'], 'client_port': int(client_port.get('port') or 1),
            'server_gid_index': _gid(server_port), 'client_gid_index': _gid(client_port),
            'link_layer': client_port.get('link_layer'), 'netdev': client_port.get('netdev'),
            'line_rate_gbps': float(line_rate) if line_rate else (client_port.get('rate_gbps') or None),
            'max_latency_usec': float(max_latency) if max_latency not in (None, '') else None}


def _min_line_rate_pct(validation, group):
    """A group's ``validation.min_line_rate_pct`` (None when it sets none), checked."""
    value = validation.get('min_line_rate_pct')
    problem = None if value is None else percentage_problem(value)
    if problem:
        raise RailError('group %s: validation.min_line_rate_pct %s' % (group, problem))
    return value


def ring_pairs(fabric_groups, ports_by_host, options=None):
    """Cross-node perftest pairs from the inventory: per GPU group and per rail, a ring over the group's nodes that
    have the rail (node i's client against node i+1's server, the last against the first; two nodes make one pair).

    ``fabric_groups``: ``gpunet.rdma.fabrics``' ``groups`` (each fabric with its ``hosts``); ``options.devices``: each host's
    ``rdma_devices`` (its virtual functions are no rail). A fabric's ``validation`` section may
    set ``ring: false``, ``rails``, ``pair_sample`` (at most this many pairs per group, the same ones every run),
    ``max_latency_usec``. ``options``: ``hosts`` (only these nodes), ``sample`` (overrides every group's
    ``pair_sample``; 0 keeps them), ``seed`` (another seed picks another sample), ``line_rate_gbps`` and
    ``max_latency_usec`` (override the fabrics'), ``explicit`` (listed pairs ``{server, client, device,
    client_device, address}``, kept first; a generated pair that repeats one is dropped).
    Returns ``[{group, rail, rail_name, server, client, device, port, client_device, client_port, server_gid_index,
    client_gid_index, link_layer, netdev, line_rate_gbps, max_latency_usec, min_line_rate_pct, address?}]``; ``rail``
    is the index of :func:`node_rails`, ``rail_name`` its identity (the fabric's entry, else the PCI function).
    """
    options = dict(options or {})
    only = set(options.get('hosts') or []) or None
    pairs = []
    for item in options.get('explicit') or []:
        client_ports = ports_by_host.get(item['client']) or []
        server_ports = ports_by_host.get(item['server']) or []
        device = item['device']
        client_device = item.get('client_device') or device
        server_port = next((p for p in server_ports if p.get('device') == device), {'device': device, 'port': 1})
        client_port = next((p for p in client_ports if p.get('device') == client_device),
                           {'device': client_device, 'port': 1})
        group = next((name for name, fabric in (fabric_groups or {}).items()
                      if item['client'] in (fabric.get('hosts') or [])), None)
        validation = ((fabric_groups or {}).get(group) or {}).get('validation') or {}
        pair = _pair(group, None, item['server'], server_port, item['client'], client_port,
                     options.get('line_rate_gbps') or ((fabric_groups or {}).get(group) or {}).get('line_rate_gbps'),
                     options.get('max_latency_usec') if options.get('max_latency_usec') not in (None, '')
                     else validation.get('max_latency_usec'))
        if item.get('address'):
            pair['address'] = item['address']
        pair['min_line_rate_pct'] = _min_line_rate_pct(validation, group)
        pair['rail_name'] = None
        pairs.append(pair)
    listed = set((p['client'], p['server'], p['device']) for p in pairs)
    for name, fabric in sorted((fabric_groups or {}).items()):
        validation = fabric.get('validation') or {}
        if validation.get('ring') is False:
            continue
        hosts = [h for h in fabric.get('hosts') or [] if (only is None or h in only) and h in ports_by_host]
        node = {}
        for host in hosts:
            try:
                node[host] = node_rails(ports_by_host.get(host), fabric.get('link_layer'), validation.get('rails'),
                                        [d.get('device') for d in (options.get('devices') or {}).get(host) or []
                                         if isinstance(d, dict) and d.get('virtual_function')])
            except RailError as exc:
                raise RailError('group %s, host %s: %s' % (name, host, exc))
        group_pairs = []
        for rail in range(max([len(r) for r in node.values()] or [0])):
            members = [h for h in hosts if rail < len(node[h]) and node[h][rail] is not None]
            if len(members) < 2:
                continue
            steps = [(members[0], members[1])] if len(members) == 2 else [
                (members[i], members[(i + 1) % len(members)]) for i in range(len(members))]
            for client, server in steps:
                pair = _pair(name, rail, server, node[server][rail], client, node[client][rail],
                             options.get('line_rate_gbps') or fabric.get('line_rate_gbps'),
                             options.get('max_latency_usec') if options.get('max_latency_usec') not in (None, '')
                             else validation.get('max_latency_usec'))
                pair['min_line_rate_pct'] = _min_line_rate_pct(validation, name)
                pair['rail_name'] = _rail_name(validation.get('rails'), rail, node[server][rail], node[client][rail])
                if (pair['client'], pair['server'], pair['device']) not in listed:
                    group_pairs.append(pair)
        sample = int(options.get('sample') or validation.get('pair_sample') or 0)
        if sample and len(group_pairs) > sample:
            chosen = sorted(group_pairs, key=lambda p: _pair_key(options.get('seed') or '', p))[:sample]
            group_pairs = [p for p in group_pairs if p in chosen]
        pairs.extend(group_pairs)
    return pairs


def pair_tests(pair, tools=('ib_write_bw',)):
    """The perftest module's tests of one pair: ``(server side, client side)``."""
    server, client = [], []
    for tool in tools:
        server.append({'device': pair['device'], 'port': pair['port'], 'gid_index': pair.get('server_gid_index'),
                       'tool': tool})
        test = {'device': pair['client_device'], 'port': pair['client_port'], 'gid_index': pair.get('client_gid_index'),
                'tool': tool}
        if tool in LATENCY_TOOLS:
            test['max_latency_usec'] = pair.get('max_latency_usec')
        else:
            test['line_rate_gbps'] = pair.get('line_rate_gbps')
        client.append(test)
    return server, client


def fold_latency(records):
    """Records of one port's tests with each latency test folded into the bandwidth record before it: ``latency_tool``,
    ``latency_usec`` (typical, else average), ``latency_p99_usec``, ``max_latency_usec``, ``latency_ok``; the record
    passes when both do."""
    folded = []
    for record in records:
        if record.get('tool') in LATENCY_TOOLS:
            base = next((r for r in reversed(folded) if r.get('tool') not in LATENCY_TOOLS and
                         (r.get('device'), r.get('port')) == (record.get('device'), record.get('port'))), None)
            latency = {'latency_tool': record.get('tool'),
                       'latency_usec': record.get('t_typical_usec') if record.get('t_typical_usec') is not None
                       else record.get('t_avg_usec'),
                       'latency_p99_usec': record.get('p99_usec'),
                       'max_latency_usec': record.get('max_latency_usec'),
                       'latency_ok': bool(record.get('ok'))}
            if base is None:
                folded.append(dict(record, **latency))
                continue
            base.update(latency)
            if not record.get('ok'):
                base['ok'] = False
                base['problem'] = '; '.join(p for p in (base.get('problem'), record.get('problem')) if p)
            continue
        folded.append(dict(record))
    return folded
