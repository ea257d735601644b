# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NCCL's debug log (NCCL_DEBUG=INFO) and nccl-tests' result table: is the collective library really on RDMA?

NCCL prints every line as ``HOST:PID:TID [CUDADEV] NCCL INFO ...`` (mpirun, srun or a job runner may put a tag in
front). What proves the transport:

* ``NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE ... [RO]; OOB eth0:10.0.0.1<0>`` - the RDMA devices a process
  opened (``/SHARP`` with the SHARP plugin); ``NET/IB : No device found.`` when there were none;
* ``NET/Socket : Using [0]eth0:10.0.0.1<0>`` - the socket interfaces. Releases up to 2.5 print this line in every
  process, before ``NET/IB : Using``, even when IB carries the data: it alone is not a fallback;
* ``Using network IB`` / ``Socket`` / ``IBext_v8`` / ``AWS Libfabric`` (2.6 and later) - the network NCCL chose;
* the connection lines, ``Channel 00/0 : 7[7] -> 8[0] [send] via NET/IB/0/GDRDMA`` (``Ring 00 : 3 -> 10 [send]
  via NET/IB/0/GDRDMA`` before 2.7; ``NET/IBext_v8/2``, ``NET/IB/2(3)/GDRDMA`` with PXN): which network each
  rank's inter-node connections use, and ``/GDRDMA`` when the NIC reads and writes GPU memory directly;
* ``GPU Direct RDMA Enabled|Disabled for HCA 0 'mlx5_0'`` (``for GPU 86000 / HCA 0 (distance 4 <= 4)`` before
  2.12).

nccl-tests prints ``# size count type redop root time algbw busbw #wrong time algbw busbw #wrong`` (out-of-place,
then in-place; ``error`` instead of ``#wrong`` and no ``root`` before 2.13, ``root`` without ``redop`` for broadcast,
``cputime`` with ``-C``, a ``timestamp`` column with ``-S``), a row per size, ``# Out of bounds values : 0 OK`` and
``# Avg bus bandwidth : 56.3994``. Pasted output sometimes lost its ``#``; the header is read with or without it,
and rows are only read under a header: a row's meaning comes from its header, never from its shape.

Free of Ansible imports.
"""

from __future__ import annotations

import re

# HOST:PID:TID [DEV] NCCL LEVEL message. The host may carry a launcher's tag ([1,0]<stdout>:, [155] ).
_LINE = re.compile(r'(?P<host>\S*?):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] (?:(?P<where>\S+) )?NCCL '
                   r'(?P<level>INFO|WARN|TRACE|ABORT)\s?(?P<msg>.*)$')
_TAG = re.compile(r'^(?:\[[\d,]+\](?:<std(?:out|err)>)?:?)+')
_VERSION = re.compile(r'NCCL version (?P<version>\d+\.\d+\.\d+\S*)')
_IB_USING = re.compile(r'^NET/IB ?: Using (?P<list>.*?)(?:\s*;\s*OOB (?P<oob>\S+))?\s*$')
_IB_DEVICE = re.compile(r'\[(?P<index>\d+)\](?P<name>[^:\s\[\]]+):(?P<port>\d+)/(?P<link>IB|RoCE)(?P<sharp>/SHARP)?')
_SOCKET_USING = re.compile(r'^NET/Socket ?: Using (?P<list>.*)$')
_SOCKET_DEVICE = re.compile(r'\[(?P<index>\d+)\](?P<name>[^:\s\[\]]+):(?P<address>[^<\s]*)<\d+>')
_NETWORK = re.compile(r'^Using network (?P<network>.+?)\s*$')
_GDR = re.compile(r'GPU Direct RDMA (?P<state>Enabled|Disabled) for (?:GPU (?P<gpu>\S+) / )?HCA (?P<hca>\d+)'
                  r"(?: '(?P<name>[^']+)')?")
_CONNECTION = re.compile(r'^(?:Channel|Ring) (?P<channel>\d+)(?:/\d+)? : (?P<src>\d+)(?:\[[^\]]*\])? -> '
                         r'(?P<dst>\d+)(?:\[[^\]]*\])?(?: \[(?P<direction>send|receive)\])? via (?P<via>.+?)\s*$')
_VIA_NET = re.compile(r'^NET/(?P<net>[^/]+)/(?P<device>\d+)(?:\((?P<proxy>\d+)\))?(?P<flags>(?:/\w+)*)$')
_COMM_RANK = re.compile(r'comm 0x[0-9a-fA-F]+ rank (?P<rank>\d+) n[Rr]anks (?P<nranks>\d+)'
                        r'(?: cudaDev (?P<dev>\d+))?(?:.* - (?P<phase>Init START|Init COMPLETE))?')
_TEST_RANK = re.compile(r'^#?\s*Rank\s+(?P<rank>\d+)(?:\s+Group\s+\d+)?(?:\s+Pid\s+(?P<pid>\d+))?\s+on\s+'
                        r'(?P<host>\S+)\s+device\s+(?P<dev>\d+)')
_TEST_FAILURE = re.compile(r'(?P<what>Test (?:NCCL |CUDA )?failure) (?P<where>\S+)(?: \'(?P<reason>.*)\')?')
_FOOTER_BOUNDS = re.compile(r'^#?\s*Out of bounds values\s*:\s*(?P<count>\d+)\s*(?P<verdict>OK|FAILED)?')
_FOOTER_AVG = re.compile(r'^#?\s*Avg bus bandwidth\s*:\s*(?P<value>[-+0-9.eE]+)')
_NUMBER = re.compile(r'^[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$')
# The nccl-tests data types (every release): a row's third column.
_TYPES = frozenset(('int8', 'uint8', 'int32', 'uint32', 'int64', 'uint64', 'half', 'float', 'double', 'bfloat16',
                    'fp8_e4m3', 'fp8_e5m2', 'char', 'int', 'float16', 'float32', 'float64'))
# Networks that are RDMA: the built-in IB transport and the NCCL RDMA SHARP plugin (IBext, IBext_v6, ...).
_RDMA_NETWORKS = re.compile(r'^(?:IB|IBext(?:_v\d+)?)$')

SOCKET_REMEDY = ('NCCL fell back to TCP sockets: give the pods the RDMA resource of the group (and /dev/infiniband), '
                 'IPC_LOCK and an unlimited memlock limit, name the devices in NCCL_IB_HCA as the pods see them, and '
                 'on RoCE let NCCL pick the GID of the pod\'s own address (NCCL_IB_ADDR_FAMILY, '
                 'NCCL_IB_ROCE_VERSION_NUM) instead of a fixed NCCL_IB_GID_INDEX')
GDR_REMEDY = ('GPUDirect RDMA is off: the NIC copies through host memory. Load nvidia_peermem (the gpudirect role, '
              'or the GPU Operator\'s driver.rdma) or use a DMA-BUF capable driver and kernel, and check that ACS is '
              'off on the PCIe switches between GPU and NIC (NCCL_NET_GDR_LEVEL decides by distance)')


def _key(match):
    return (_TAG.sub('', match.group('host')), int(match.group('pid')))


def _is_rdma(network):
    return bool(network) and bool(_RDMA_NETWORKS.match(network))


def _new_process(host, pid):
    return {'host': host, 'pid': pid, 'ib_devices': [], 'ib_missing': False, 'socket_devices': [], 'network': None,
            'gdr': {}, 'devs': set()}


def _new_rank(host, pid, dev):
    return {'host': host, 'pid': pid, 'cuda_dev': dev, 'rank': None, 'net_connections': 0, 'gdrdma_connections': 0,
            'networks': set(), 'net_devices': set(), 'p2p_connections': 0}


def _header_columns(line):
    """The columns of an nccl-tests result header (``#`` optional), or None."""
    tokens = line.lstrip('#').split()
    if len(tokens) < 8 or tokens[:2] != ['size', 'count'] or 'busbw' not in tokens or 'algbw' not in tokens:
        return None
    return tokens


def _row(tokens, columns):
    """One result row as ``{size, count, type, redop, root, out_of_place: {...}, in_place: {...}}``, or None."""
    timestamp = 'timestamp' in columns
    names = [c for c in columns if c != 'timestamp']
    if timestamp:
        # -S prints a date and a time in the last column.
        if len(tokens) < len(names) + 1:
            return None
        tokens = tokens[:len(names)]
    if len(tokens) != len(names):
        return None
    values = dict(zip(names[:3], tokens[:3]))
    if not values['size'].isdigit() or not values['count'].isdigit() or values['type'] not in _TYPES:
        return None
    row = {'size': int(values['size']), 'count': int(values['count']), 'type': values['type'], 'redop': None,
           'root': None, 'out_of_place': {}, 'in_place': {}}
    side = 'out_of_place'
    seen = set()
    for name, token in zip(names[3:], tokens[3:]):
        if name in ('redop', 'root'):
            if name == 'root':
                if not re.match(r'^-?\d+$', token):
                    return None
                row['root'] = int(token)
            else:
                if _NUMBER.match(token):
                    return None
                row['redop'] = token
            continue
        key = {'time': 'time_us', 'cputime': 'time_us', 'algbw': 'algbw_gbs', 'busbw': 'busbw_gbs',
               '#wrong': 'wrong', 'error': 'error'}.get(name, name)
        if key in seen:
            side = 'in_place'
            seen = set()
        seen.add(key)
        if token == 'N/A':
            row[side][key] = None
        elif _NUMBER.match(token):
            number = float(token)
            row[side][key] = int(number) if key == 'wrong' else number
        else:
            return None
    if 'busbw_gbs' not in row['out_of_place']:
        return None
    return row


def parse_results(text):
    """nccl-tests' result tables: ``{rows, columns, out_of_bounds, out_of_bounds_ok, avg_busbw_gbs}`` or None."""
    columns, rows, bounds, bounds_ok, average = None, [], None, None, None
    for line in (text or '').splitlines():
        stripped = line.strip()
        header = _header_columns(stripped)
        if header is not None:
            columns = header
            continue
        bounds_match = _FOOTER_BOUNDS.match(stripped)
        if bounds_match:
            bounds = int(bounds_match.group('count'))
            bounds_ok = bounds_match.group('verdict') != 'FAILED' and bounds == 0
            continue
        average_match = _FOOTER_AVG.match(stripped)
        if average_match:
            average = float(average_match.group('value'))
            continue
        if columns is None or not stripped or stripped.startswith('#'):
            continue
        row = _row(stripped.split(), columns)
        if row is not None:
            rows.append(row)
    if not rows and average is None:
        return None
    return {'rows': rows, 'columns': columns, 'out_of_bounds': bounds, 'out_of_bounds_ok': bounds_ok,
            'avg_busbw_gbs': average}


def parse(text):
    """Everything the log proves: ``{nccl_version, processes, ranks, hosts, networks, results, warnings,
    failures, info_lines}``.

    ``processes``: per HOST:PID the RDMA devices it opened (``ib_devices``: name, port, link layer, SHARP), whether
    NET/IB found none, its socket interfaces, the network it chose and its GPUDirect RDMA lines. ``ranks``: per
    HOST:PID and CUDA device (NCCL's rank where the log names it) the inter-node connections, their networks and
    how many carry ``/GDRDMA``.
    """
    processes, ranks, warnings, failures = {}, {}, [], []
    version, info_lines = None, 0
    test_ranks = {}
    for raw in (text or '').splitlines():
        line = raw.rstrip()
        version_match = _VERSION.search(line)
        if version_match and version is None:
            version = version_match.group('version')
        test_rank = _TEST_RANK.match(line.strip())
        if test_rank:
            test_ranks[int(test_rank.group('rank'))] = (
                test_rank.group('host'), int(test_rank.group('pid')) if test_rank.group('pid') else None,
                int(test_rank.group('dev')))
            continue
        failure = _TEST_FAILURE.search(line)
        if failure and 'NCCL INFO' not in line:
            failures.append(line.strip())
            continue
        match = _LINE.search(line)
        if not match:
            continue
        host, pid = _key(match)
        dev = int(match.group('dev'))
        message = match.group('msg').strip()
        level = match.group('level')
        process = processes.setdefault((host, pid), _new_process(host, pid))
        process['devs'].add(dev)
        if level in ('WARN', 'ABORT'):
            warnings.append('%s:%d [%d] %s' % (host, pid, dev, message))
            continue
        info_lines += 1
        ib_using = _IB_USING.match(message)
        if ib_using:
            process['ib_devices'] = [
                {'index': int(d.group('index')), 'name': d.group('name'), 'port': int(d.group('port')),
                 'link_layer': 'InfiniBand' if d.group('link') == 'IB' else 'Ethernet', 'sharp': bool(d.group('sharp'))}
                for d in _IB_DEVICE.finditer(ib_using.group('list'))]
            continue
        if re.match(r'^NET/IB ?: No device found', message):
            process['ib_missing'] = True
            continue
        socket_using = _SOCKET_USING.match(message)
        if socket_using:
            process['socket_devices'] = [{'name': d.group('name'), 'address': d.group('address') or None}
                                         for d in _SOCKET_DEVICE.finditer(socket_using.group('list'))]
            continue
        network = _NETWORK.match(message)
        if network:
            process['network'] = network.group('network')
            continue
        gdr = _GDR.search(message)
        if gdr:
            key = gdr.group('name') or 'HCA %s' % gdr.group('hca')
            if gdr.group('gpu'):
                key = '%s / GPU %s' % (key, gdr.group('gpu'))
            process['gdr'][key] = gdr.group('state') == 'Enabled'
            continue
        comm = _COMM_RANK.search(message)
        if comm and comm.group('dev') is not None:
            rank = ranks.setdefault((host, pid, int(comm.group('dev'))), _new_rank(host, pid, int(comm.group('dev'))))
            rank['rank'] = int(comm.group('rank'))
            continue
        connection = _CONNECTION.match(message)
        if connection:
            rank = ranks.setdefault((host, pid, dev), _new_rank(host, pid, dev))
            via = _VIA_NET.match(connection.group('via'))
            if via:
                rank['net_connections'] += 1
                rank['networks'].add(via.group('net'))
                rank['net_devices'].add(int(via.group('device')))
                if 'GDRDMA' in via.group('flags').split('/'):
                    rank['gdrdma_connections'] += 1
            else:
                rank['p2p_connections'] += 1
    # nccl-tests' own table of ranks names host, pid and device where NCCL's lines do not.
    for number, (host, pid, dev) in test_ranks.items():
        for (rhost, rpid, rdev), rank in ranks.items():
            if rank['rank'] is None and rhost == host and rdev == dev and (pid is None or pid == rpid):
                rank['rank'] = number
    hosts = sorted(set(p['host'] for p in processes.values()) | set(h for h, _p, _d in test_ranks.values()))
    return {
        'nccl_version': version,
        'processes': [dict(p, devs=sorted(p['devs'])) for _k, p in sorted(processes.items())],
        'ranks': [dict(r, networks=sorted(r['networks']), net_devices=sorted(r['net_devices']))
                  for _k, r in sorted(ranks.items(), key=lambda item: (item[0][0], item[0][1], item[0][2]))],
        'hosts': hosts,
        'test_ranks': len(test_ranks),
        'results': parse_results(text),
        'warnings': warnings,
        'failures': failures,
        'info_lines': info_lines,
    }


def _process_network(process):
    """The network a process chose by its own lines: ``Using network X``, else IB when it opened RDMA devices,
    Socket when NET/IB found none; unknown otherwise - a ``NET/Socket : Using`` line alone is what every process of
    2.5 and earlier prints for its bootstrap, whatever carries the data."""
    if process['network']:
        return process['network']
    if process['ib_devices']:
        return 'IB'
    if process['ib_missing']:
        return 'Socket'
    return None


def _largest(results):
    rows = [r for r in (results or {}).get('rows') or [] if r['out_of_place'].get('busbw_gbs') is not None]
    return max(rows, key=lambda r: r['size']) if rows else None


def judge(parsed, line_rate_gbps=None, expect_gdr=False, min_busbw_pct=None, min_hosts=2):
    """The verdict of one NCCL validation run: ``{ok, problem, problems, transport, ...}``.

    Fails on: no NCCL INFO line (the transport cannot be proven), a test failure, fewer hosts than ``min_hosts``
    (the network was not crossed), any connection or process on sockets, RDMA connections without GPUDirect RDMA when
    ``expect_gdr``, no result table, wrong results, and a bus bandwidth below ``min_busbw_pct`` of the group's line
    rate times the RDMA devices a node used (``busbw_line_rate_pct``: nccl-tests' bus bandwidth of the largest size,
    GB/s x 8, against that aggregate; NCCL reaches about 96 % of it on a healthy fabric with rings).
    """
    problems = []
    processes, ranks = parsed.get('processes') or [], parsed.get('ranks') or []
    networks = sorted(set(n for r in ranks for n in r['networks']) | set(
        n for n in (_process_network(p) for p in processes) if n))
    socket_hosts = sorted(set([r['host'] for r in ranks if 'Socket' in r['networks']]
                              + [p['host'] for p in processes if _process_network(p) == 'Socket']))
    rdma_ranks = [r for r in ranks if any(_is_rdma(n) for n in r['networks'])]
    ib_devices = sorted(set(d['name'] for p in processes for d in p['ib_devices']))
    nics = max([len(p['ib_devices']) for p in processes] or [0]) or None
    link_layers = sorted(set(d['link_layer'] for p in processes for d in p['ib_devices']))
    gdr_lines = [state for p in processes for state in p['gdr'].values()]
    without_gdr = [r for r in rdma_ranks if r['gdrdma_connections'] < r['net_connections']]
    gdr = None
    if rdma_ranks:
        gdr = 'on' if not without_gdr else ('off' if all(r['gdrdma_connections'] == 0 for r in rdma_ranks)
                                            else 'partial')
    elif gdr_lines:
        gdr = 'on' if all(gdr_lines) else ('off' if not any(gdr_lines) else 'partial')

    if not parsed.get('info_lines'):
        problems.append('the log has no NCCL INFO line: the job must run with NCCL_DEBUG=INFO '
                        '(NCCL_DEBUG_SUBSYS=INIT,NET), otherwise the transport cannot be proven')
    for failure in parsed.get('failures') or []:
        problems.append('nccl-tests failed: %s' % failure)
    if len(parsed.get('hosts') or []) < min_hosts:
        problems.append('the ranks ran on %s: the collective never crossed the network between nodes'
                        % (', '.join(parsed.get('hosts') or []) or 'no node named in the log'))
    if socket_hosts:
        problems.append('NET/Socket on %s: %s' % (', '.join(socket_hosts), SOCKET_REMEDY))
    elif parsed.get('info_lines') and len(parsed.get('hosts') or []) >= min_hosts and not rdma_ranks \
            and not any(_is_rdma(_process_network(p)) for p in processes):
        problems.append('no connection or process of the log used RDMA (NET/IB): %s' % SOCKET_REMEDY)
    if expect_gdr and (without_gdr or (not rdma_ranks and gdr_lines and not all(gdr_lines))):
        names = sorted(set('%s [%d]' % (r['host'], r['cuda_dev']) for r in without_gdr)) or sorted(
            set('%s %s' % (p['host'], k) for p in processes for k, v in p['gdr'].items() if not v))
        problems.append('no /GDRDMA on %s: %s' % (', '.join(names[:8]) + (' ...' if len(names) > 8 else ''),
                                                  GDR_REMEDY))
    results = parsed.get('results')
    largest = _largest(results)
    if largest is None:
        problems.append('all_reduce_perf printed no result table (the job failed or was stopped before the first '
                        'size; the launcher\'s log says why)')
    wrong = sum(side.get('wrong') or 0 for r in (results or {}).get('rows') or []
                for side in (r['out_of_place'], r['in_place']))
    if wrong or (results and results.get('out_of_bounds_ok') is False):
        problems.append('nccl-tests found wrong results (#wrong %d, out of bounds %s): data corruption on the way; '
                        'check the NICs\' error counters and the GPU' % (wrong, results.get('out_of_bounds')))
    busbw = largest['out_of_place']['busbw_gbs'] if largest else None
    peak = max([max(r['out_of_place'].get('busbw_gbs') or 0, r['in_place'].get('busbw_gbs') or 0)
                for r in (results or {}).get('rows') or []] or [0]) or None
    share = None
    if busbw is not None and line_rate_gbps and nics:
        share = round(100.0 * busbw * 8 / (float(line_rate_gbps) * nics), 1)
    if min_busbw_pct is not None and busbw is not None:
        if share is None:
            problems.append('the bus bandwidth cannot be judged: %s' % (
                'the group\'s line rate is unknown' if not line_rate_gbps
                else 'the log names no RDMA device (NET/IB : Using), so the NICs per node are unknown'))
        elif share < float(min_busbw_pct):
            problems.append('bus bandwidth %.2f GB/s at %d bytes is %.1f %% of %d x %g Gb/s, below %g %%: check '
                            'each port with ib_write_bw, the NIC-GPU affinity (NCCL_DEBUG_SUBSYS=GRAPH) and '
                            'NCCL_ALGO=Ring' % (busbw, largest['size'], share, nics, float(line_rate_gbps),
                                                float(min_busbw_pct)))
    if rdma_ranks and socket_hosts:
        transport = 'mixed'
    elif socket_hosts:
        transport = 'Socket'
    elif rdma_ranks or any(_is_rdma(_process_network(p)) for p in processes):
        transport = 'IB'
    else:
        transport = networks[0] if networks else None
    return {
        'ok': not problems, 'problem': '; '.join(problems) or None, 'problems': problems,
        'transport': transport, 'networks': networks, 'link_layers': link_layers, 'ib_devices': ib_devices,
        'nics_per_node': nics, 'gdr': gdr, 'expect_gdr': bool(expect_gdr),
        'hosts': list(parsed.get('hosts') or []), 'ranks': len(ranks) or parsed.get('test_ranks') or None,
        'socket_hosts': socket_hosts, 'nccl_version': parsed.get('nccl_version'),
        'size_bytes': largest['size'] if largest else None, 'busbw_gbs': busbw, 'peak_busbw_gbs': peak,
        'avg_busbw_gbs': (results or {}).get('avg_busbw_gbs'), 'wrong': wrong,
        'line_rate_gbps': float(line_rate_gbps) if line_rate_gbps else None,
        'busbw_line_rate_pct': share, 'min_busbw_pct': float(min_busbw_pct) if min_busbw_pct is not None else None,
        'warnings': list(parsed.get('warnings') or [])[:20],
    }


def nccl_result(text, line_rate_gbps=None, expect_gdr=False, min_busbw_pct=None, min_hosts=2):
    """``judge(parse(text), ...)``."""
    return judge(parse(text), line_rate_gbps, expect_gdr, min_busbw_pct, min_hosts)
