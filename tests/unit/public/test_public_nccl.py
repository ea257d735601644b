# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The NCCL log and nccl-tests parser against outputs recorded on real machines (tests/unit/fixtures/public/nccl).

Every expectation below was written by reading the artifact: the hosts and processes its lines name, the devices of
its ``NET/IB : Using`` lines, its connections (``via NET/...``) counted by hand, and the table rows as printed.
Every artifact of the directory has an entry here and a row in SOURCES.md.
"""

from __future__ import annotations

import glob
import os

import pytest

from ansible_collections.gpunet.rdma.plugins.plugin_utils._nccl import judge, nccl_result, parse, parse_results

CORPUS = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'public', 'nccl')
ARTIFACTS = sorted(os.path.basename(p) for p in glob.glob(os.path.join(CORPUS, '*')) if not p.endswith('.md'))
AKS_DEVICES = ['mlx5_%d' % i for i in range(8)]

# (NCCL version, hosts, RDMA devices, networks the processes chose ({(host, pid): network})).
LOGS = {
    'aks-rdma-infiniband-30-mpijob-launcher-2.25.1.log': (
        '2.25.1+cuda12.8', ['nccl-tests-worker-0', 'nccl-tests-worker-1'], AKS_DEVICES,
        {('nccl-tests-worker-1', 79): 'IB', ('nccl-tests-worker-0', 63): 'IB'}),
    'nccl-tests-29-2.4.7-socket-and-ib.log': (
        None, ['server1', 'server3'], ['mlx5_0', 'mlx5_1'], {}),
    'nccl-278-2.5.6-socket-rings.log': (None, ['sh-01', 'sh-03'], [], {}),
    'nccl-601-socket-channels.log': (None, ['gpu23', 'gpu24'], [], {}),
    'nccl-1537-roce-gdr-disabled.log': (None, ['hostname1'], ['mlx5_0', 'mlx5_1'], {('hostname1', 25668): 'IB'}),
    'nccl-1814-ibext-v8-without-gdrdma.log': (None, ['hostname-test'], [], {}),
    'deeplearningexamples-383-gdr-distance.log': (None, ['node-1'], [], {}),
    'nccl-1737-2.21.5-ibext-sharp-roce.log': (
        '2.21.5+cuda12.4', ['gh-3714u06'], ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_4', 'mlx5_5'],
        {('gh-3714u06', 4197): 'IBext_v8'}),
    'nccl-tests-294-sharp-test-failure.log': (
        None, ['h100-2', 'h100-4'], ['mlx5_%d' % i for i in range(1, 9)], {('h100-4', 739787): 'IBext_v6'}),
    'nccl-tests-82-2.9.6-broadcast-ib-disabled.txt': ('2.9.6+cuda11.2', ['v100-gpu-1', 'v100-gpu-5'], [], {}),
}
# Inter-node connections per rank: {(host, pid, cuda device): (connections via NET, of them /GDRDMA, networks)}.
CONNECTIONS = {
    'aks-rdma-infiniband-30-mpijob-launcher-2.25.1.log': {
        ('nccl-tests-worker-1', 77, 2): (2, 2, ['IB']), ('nccl-tests-worker-1', 81, 6): (2, 2, ['IB']),
        ('nccl-tests-worker-1', 79, 4): (2, 2, ['IB']), ('nccl-tests-worker-0', 69, 6): (2, 2, ['IB']),
        ('nccl-tests-worker-1', 75, 0): (0, 0, []), ('nccl-tests-worker-0', 63, 0): (0, 0, [])},
    'nccl-278-2.5.6-socket-rings.log': {
        ('sh-01', 98911, 3): (1, 0, ['Socket']), ('sh-03', 97552, 3): (1, 0, ['Socket']),
        ('sh-03', 97552, 2): (1, 0, ['Socket']), ('sh-03', 97552, 0): (1, 0, ['Socket'])},
    'nccl-601-socket-channels.log': {('gpu24', 2321, 0): (1, 0, ['Socket'])},
    'nccl-1814-ibext-v8-without-gdrdma.log': {
        ('hostname-test', 987, 7): (6, 0, ['IBext_v8']), ('hostname-test', 986, 6): (6, 0, ['IBext_v8'])},
}
# Result tables: (columns, rows as printed: (size, count, type, redop, root, out-of-place (time, algbw, busbw,
# #wrong or error), in-place (...)) of the first and the last row, number of rows, out of bounds, average).
TABLES = {
    'aks-rdma-infiniband-mpijob-ib-sriov.txt': (
        ['size', 'count', 'type', 'redop', 'root', 'time', 'algbw', 'busbw', '#wrong', 'time', 'algbw', 'busbw',
         '#wrong'],
        (8, 2, 'float', 'sum', -1, (99.09, 0.0, 0.0, None), (36.48, 0.0, 0.0, None)),
        (8589934592, 2147483648, 'float', 'sum', -1, (86026, 99.85, 187.22, None), (86106, 99.76, 187.05, None)),
        16, 0, 56.3994),
    'aks-rdma-infiniband-mpijob-ipoib.txt': (
        ['size', 'count', 'type', 'redop', 'root', 'time', 'algbw', 'busbw', '#wrong', 'time', 'algbw', 'busbw',
         '#wrong'],
        (8, 2, 'float', 'sum', -1, (82.21, 0.0, 0.0, None), (79.73, 0.0, 0.0, None)),
        (8589934592, 2147483648, 'float', 'sum', -1, (5111454, 1.68, 3.15, None), (5220040, 1.65, 3.09, None)),
        16, 0, 1.38997),
    'nccl-tests-252-ring-2.21.5.txt': (
        ['size', 'count', 'type', 'redop', 'root', 'time', 'algbw', 'busbw', '#wrong', 'time', 'algbw', 'busbw',
         '#wrong'],
        (536870912, 134217728, 'float', 'sum', -1, (10052, 53.41, 93.46, 0), (9676.9, 55.48, 97.09, 0)),
        (8589934592, 2147483648, 'float', 'sum', -1, (158070, 54.34, 95.10, 0), (158561, 54.17, 94.80, 0)),
        5, 0, 95.3009),
    'nccl-1244-2.21.5-error-column.txt': (
        ['size', 'count', 'type', 'redop', 'time', 'algbw', 'busbw', 'error', 'time', 'algbw', 'busbw', 'error'],
        (4, 1, 'float', 'sum', None, (47.54, 0.0, 0.0, 0.0), (49.35, 0.0, 0.0, 4e-07)),
        (512, 128, 'float', 'sum', None, (46.58, 0.01, 0.02, 6e-08), (46.42, 0.01, 0.02, 6e-08)),
        8, None, None),
    'nccl-tests-82-2.9.6-broadcast-ib-disabled.txt': (
        ['size', 'count', 'type', 'root', 'time', 'algbw', 'busbw', 'error', 'time', 'algbw', 'busbw', 'error'],
        (8, 2, 'float', None, 0, (45.82, 0.0, 0.0, None), (38.17, 0.0, 0.0, None)),
        (8, 2, 'float', None, 0, (45.82, 0.0, 0.0, None), (38.17, 0.0, 0.0, None)),
        1, None, None),
}
# The verdict of each artifact judged as a validation run of a 200 Gb/s group that expects GPUDirect RDMA:
# (transport, GPUDirect RDMA, the start of every problem, in order).
NO_INFO = 'the log has no NCCL INFO line'
ONE_NODE = 'the ranks ran on '
NO_TABLE = 'all_reduce_perf printed no result table'
SOCKET = 'NET/Socket on '
NO_GDR = 'no /GDRDMA on '
VERDICTS = {
    'aks-rdma-infiniband-30-mpijob-launcher-2.25.1.log': ('IB', 'on', [NO_TABLE]),
    'aks-rdma-infiniband-mpijob-ib-sriov.txt': (None, None, [NO_INFO, ONE_NODE]),
    'aks-rdma-infiniband-mpijob-ipoib.txt': (None, None, [NO_INFO, ONE_NODE]),
    'nccl-tests-252-ring-2.21.5.txt': (None, None, [NO_INFO, ONE_NODE]),
    'nccl-1244-2.21.5-error-column.txt': (None, None, [NO_INFO, ONE_NODE]),
    'nccl-tests-82-2.9.6-broadcast-ib-disabled.txt': (None, None, [NO_INFO]),
    'nccl-tests-29-2.4.7-socket-and-ib.log': ('IB', None, [NO_TABLE]),
    'nccl-278-2.5.6-socket-rings.log': ('Socket', None, [SOCKET, NO_TABLE]),
    'nccl-601-socket-channels.log': ('Socket', None, [SOCKET, NO_TABLE]),
    'nccl-1537-roce-gdr-disabled.log': ('IB', 'off', [ONE_NODE, NO_GDR, NO_TABLE]),
    'nccl-1814-ibext-v8-without-gdrdma.log': ('IB', 'off', [ONE_NODE, NO_GDR, NO_TABLE]),
    'deeplearningexamples-383-gdr-distance.log': (None, 'partial', [ONE_NODE, NO_GDR, NO_TABLE]),
    'nccl-1737-2.21.5-ibext-sharp-roce.log': ('IB', None, [ONE_NODE, NO_TABLE]),
    'nccl-tests-294-sharp-test-failure.log': ('IB', None, [
        'nccl-tests failed: h100-4: Test NCCL failure', 'nccl-tests failed: .. h100-4 pid 739791',
        'nccl-tests failed: h100-4: Test NCCL failure', 'nccl-tests failed: .. h100-4 pid 739787', NO_TABLE]),
}


def read(name):
    with open(os.path.join(CORPUS, name)) as handle:
        return handle.read()


def test_corpus_is_complete_and_sourced():
    assert len(ARTIFACTS) >= 12
    assert set(VERDICTS) == set(ARTIFACTS)
    assert set(LOGS) | set(TABLES) | set(VERDICTS) == set(ARTIFACTS)
    with open(os.path.join(CORPUS, 'SOURCES.md')) as handle:
        rows = [line for line in handle if line.startswith('| `')]
    for name in ARTIFACTS:
        row = [r for r in rows if r.startswith('| `%s`' % name)]
        assert len(row) == 1, name
        assert 'https://github.com/' in row[0], name
        assert row[0].rstrip().rstrip('|').rsplit('|', 1)[1].strip(), '%s: the NCCL release column is empty' % name


@pytest.mark.parametrize('name', sorted(LOGS))
def test_log_names_hosts_versions_devices_and_networks(name):
    version, hosts, devices, networks = LOGS[name]
    parsed = parse(read(name))
    assert parsed['nccl_version'] == version
    assert parsed['hosts'] == hosts
    assert sorted(set(d['name'] for p in parsed['processes'] for d in p['ib_devices'])) == devices
    chosen = dict(((p['host'], p['pid']), p['network']) for p in parsed['processes'] if p['network'])
    assert chosen == networks


@pytest.mark.parametrize('name', sorted(CONNECTIONS))
def test_connections_per_rank(name):
    ranks = dict(((r['host'], r['pid'], r['cuda_dev']), (r['net_connections'], r['gdrdma_connections'], r['networks']))
                 for r in parse(read(name))['ranks'])
    assert ranks == CONNECTIONS[name]


@pytest.mark.parametrize('name', sorted(TABLES))
def test_result_tables(name):
    columns, first, last, count, bounds, average = TABLES[name]
    results = parse_results(read(name))
    assert results['columns'] == columns
    assert len(results['rows']) == count

    def printed(row):
        wrong = 'wrong' if 'wrong' in row['out_of_place'] else 'error'
        return (row['size'], row['count'], row['type'], row['redop'], row['root'],
                tuple(row['out_of_place'][k] for k in ('time_us', 'algbw_gbs', 'busbw_gbs', wrong)),
                tuple(row['in_place'][k] for k in ('time_us', 'algbw_gbs', 'busbw_gbs', wrong)))
    assert printed(results['rows'][0]) == first
    assert printed(results['rows'][-1]) == last
    assert (results['out_of_bounds'], results['avg_busbw_gbs']) == (bounds, average)


@pytest.mark.parametrize('name', ARTIFACTS)
def test_verdict_of_each_recording(name):
    transport, gdr, problems = VERDICTS[name]
    result = nccl_result(read(name), 200, expect_gdr=True)
    assert (result['transport'], result['gdr']) == (transport, gdr)
    assert len(result['problems']) == len(problems), result['problems']
    for problem, start in zip(result['problems'], problems):
        assert problem.startswith(start), problem
    assert result['ok'] is False  # no artifact is a whole passing run


def test_rows_without_their_header_are_not_guessed():
    """The AKS launcher excerpt holds five result rows but not the header above them: no table is read."""
    text = read('aks-rdma-infiniband-30-mpijob-launcher-2.25.1.log')
    assert '        2048           512     float     sum      -1    40.60' in text
    assert parse(text)['results'] is None


def test_socket_bootstrap_lines_of_old_releases_are_no_fallback():
    """NCCL 2.4 prints NET/Socket : Using in every process before NET/IB : Using; the data went over IB."""
    result = nccl_result(read('nccl-tests-29-2.4.7-socket-and-ib.log'), 100)
    assert result['socket_hosts'] == [] and result['transport'] == 'IB'
    assert result['nics_per_node'] == 1 and result['link_layers'] == ['InfiniBand']


def test_launcher_log_with_its_projects_result_table_reports_busbw_as_a_share_of_the_line_rate():
    """The AKS MPIJob's NET/IB lines (8 HDR NICs per node, GDRDMA) with the result table the same project records
    for that job: 187.22 GB/s x 8 = 1497.76 Gb/s of 8 x 200 Gb/s is 93.6 %."""
    text = read('aks-rdma-infiniband-30-mpijob-launcher-2.25.1.log') + read('aks-rdma-infiniband-mpijob-ib-sriov.txt')
    result = nccl_result(text, 200, expect_gdr=True, min_busbw_pct=90)
    assert result['ok'] is True, result['problems']
    assert (result['busbw_gbs'], result['nics_per_node'], result['busbw_line_rate_pct']) == (187.22, 8, 93.6)
    assert (result['size_bytes'], result['peak_busbw_gbs'], result['avg_busbw_gbs']) == (8589934592, 187.22, 56.3994)
    assert result['hosts'] == ['nccl-tests-worker-0', 'nccl-tests-worker-1'] and result['gdr'] == 'on'
    low = nccl_result(text, 200, expect_gdr=True, min_busbw_pct=95)
    assert low['ok'] is False
    assert low['problem'].startswith('bus bandwidth 187.22 GB/s at 8589934592 bytes is 93.6 % of 8 x 200 Gb/s, '
                                     'below 95 %')


def test_ipoib_table_is_three_percent():
    text = read('aks-rdma-infiniband-30-mpijob-launcher-2.25.1.log') + read('aks-rdma-infiniband-mpijob-ipoib.txt')
    assert nccl_result(text, 200)['busbw_line_rate_pct'] == 1.6  # 3.15 GB/s x 8 / 1600 Gb/s


def test_gdr_is_only_required_where_the_group_expects_it():
    text = read('nccl-1814-ibext-v8-without-gdrdma.log')
    assert not any(p.startswith(NO_GDR) for p in nccl_result(text, 200, expect_gdr=False)['problems'])
    assert any(p.startswith(NO_GDR) for p in nccl_result(text, 200, expect_gdr=True)['problems'])


def test_wrong_results_and_failed_bounds_fail():
    text = read('nccl-tests-252-ring-2.21.5.txt').replace('      0   9676.9', '      3   9676.9').replace(
        ': 0 OK', ': 3 FAILED')
    result = judge(parse(text))
    assert result['wrong'] == 3
    assert any(p.startswith('nccl-tests found wrong results (#wrong 3, out of bounds 3)') for p in result['problems'])


def test_busbw_without_nics_or_rate_is_reported_not_guessed():
    result = nccl_result(read('nccl-tests-252-ring-2.21.5.txt'), 200, min_busbw_pct=80)
    assert result['busbw_line_rate_pct'] is None
    assert 'the log names no RDMA device (NET/IB : Using), so the NICs per node are unknown' in result['problem']
    unknown_rate = nccl_result(read('nccl-tests-252-ring-2.21.5.txt'), None, min_busbw_pct=80)
    assert 'the group\'s line rate is unknown' in unknown_rate['problem']


@pytest.mark.parametrize('text', ['', None, 'garbage\n\x00\n', '# size count type\n1 2 3\n'])
def test_empty_and_garbled_input(text):
    result = nccl_result(text, 100)
    assert result['ok'] is False and result['transport'] is None and result['busbw_gbs'] is None
