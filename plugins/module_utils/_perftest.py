# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""perftest (ib_write_bw) results: the bandwidth table, its share of the port's line rate, known failures.

perftest prints ``BW average[MB/sec]`` in units of 2**20 bytes per second and, with ``--report_gbits``,
``BW average[Gb/sec]`` in units of 10**9 bits per second; both are converted to Gb/s here.
"""

from __future__ import annotations

import re

HEADER = re.compile(r'#bytes\s+#iterations\s+BW peak\[(?P<unit>MB|Gb)/sec\]\s+BW average\[(?P=unit)/sec\]')
ROW = re.compile(r'^\s*(?P<bytes>\d+)\s+(?P<iterations>\d+)\s+(?P<peak>\d+(?:\.\d+)?)\s+(?P<average>\d+(?:\.\d+)?)'
                 r'\s+(?P<rate>\d+(?:\.\d+)?)\s*$')
DEVICE = re.compile(r'Device\s*:\s*(\S+)')
LINK_TYPE = re.compile(r'Link type\s*:\s*(\S+)')
MIB_PER_SECOND_IN_GBPS = 2 ** 20 * 8 / 1e9

# Failure signatures (as perftest prints them) -> cause and remedy.
FAILURES = (
    (('Couldn\'t allocate MR', 'failed to create mr', 'Failed to create MR'), 'memlock',
     'memory registration failed: the process may lock too little memory (ulimit -l; 64 KiB is the kernel default, '
     '8192 KiB a common systemd default). In pods: lift the container runtime\'s memlock limit with the '
     'containerd_memlock role and give the container IPC_LOCK.'),
    (('state is Down', 'Couldn\'t set the link layer'), 'port_down',
     'the port is not ACTIVE: test an ACTIVE port (the fleet report lists them) or cable / enable this one.'),
    (('not found', 'Unable to find the Infiniband/RoCE device'), 'no_device',
     'the RDMA device is not visible here: check the name (ibv_devices) and, in a pod, the RDMA resource request '
     'and the RDMA netns mode.'),
    (('Couldn\'t read remote address', 'Unable to read to socket/rdma_cm', 'Failed to exchange data',
      'Couldn\'t connect to'), 'no_exchange',
     'client and server could not exchange connection data over TCP: the server was not running, or its port '
     '(18515 by default) is blocked between the two.'),
    (('Couldn\'t get context for the device',), 'no_context',
     'the device could not be opened: driver not loaded (ibv_devinfo), or /dev/infiniband missing in the container.'),
)


def parse_bw(text):
    """The last bandwidth row of ``ib_write_bw`` output, in Gb/s, or None when there is no table.

    Returns ``{bytes, iterations, peak_gbps, average_gbps, msg_rate_mpps, unit, device, link_type}``; the unit is
    the one of the table header above the row (server and client outputs may be interleaved, as in seed 003).
    """
    unit, found = None, None
    for line in (text or '').splitlines():
        header = HEADER.search(line)
        if header:
            unit = header.group('unit')
            continue
        row = ROW.match(line)
        if row and unit:
            factor = 1.0 if unit == 'Gb' else MIB_PER_SECOND_IN_GBPS
            found = {'bytes': int(row.group('bytes')), 'iterations': int(row.group('iterations')),
                     'peak_gbps': round(float(row.group('peak')) * factor, 2),
                     'average_gbps': round(float(row.group('average')) * factor, 2),
                     'msg_rate_mpps': float(row.group('rate')), 'unit': '%s/sec' % unit}
    if found is None:
        return None
    devices, link_types = DEVICE.findall(text), LINK_TYPE.findall(text)
    found['device'] = devices[-1] if devices else None
    found['link_type'] = link_types[-1] if link_types else None
    return found


def explain_failure(text):
    """Every known failure signature in the output: ``[{kind, matched, remedy}]`` (first match per kind)."""
    found = []
    for signatures, kind, remedy in FAILURES:
        for signature in signatures:
            if signature.lower() in (text or '').lower():
                found.append({'kind': kind, 'matched': signature, 'remedy': remedy})
                break
    return found


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


def line_rate_result(output, rate_gbps, min_pct, rc=0):
    """One test's record: bandwidth, share of ``rate_gbps`` (the port's line rate) and verdict.

    ``{ok, average_gbps, peak_gbps, line_rate_gbps, line_rate_pct, problem, failures}``.
    """
    parsed = parse_bw(output)
    failures = explain_failure(output)
    record = {'ok': False, 'average_gbps': None, 'peak_gbps': None, 'line_rate_gbps': rate_gbps,
              'line_rate_pct': None, 'problem': None, 'failures': failures, 'bytes': None}
    if parsed is None:
        record['problem'] = (failures[0]['remedy'] if failures
                             else 'ib_write_bw printed no result table (exit status %s)' % rc)
        return record
    record.update(average_gbps=parsed['average_gbps'], peak_gbps=parsed['peak_gbps'], bytes=parsed['bytes'])
    if not rate_gbps:
        record['problem'] = 'the port\'s line rate is unknown, so the result cannot be judged'
        return record
    share = round(100.0 * parsed['average_gbps'] / rate_gbps, 1)
    record['line_rate_pct'] = share
    if share < min_pct:
        record['problem'] = ('%.2f Gb/s is %.1f %% of the %g Gb/s line rate, below %g %%: check the PCIe link '
                             '(lspci -vv LnkSta), the NUMA placement and the MTU' % (
                                 parsed['average_gbps'], share, rate_gbps, min_pct))
    else:
        record['ok'] = True
    return record
