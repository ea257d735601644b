# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab's perftest double, run as the lab runs it: bin/<tool> of a built lab root, server and client on 127.0.0.1.

Its output is read back with the collection's own perftest parsers, so the double and the parsers keep agreeing on
perftest's layouts; the figures are the InfiniBand field report's (183.61 / 183.66 Gb/s at 200 Gb/s, 94.71 / 94.72
at 100 Gb/s).
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpunet.rdma.plugins.module_utils.validation._perftest import (
    explain_failure,
    line_rate_result,
    parse_bw,
    parse_lat,
)


DOUBLES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'lab', 'doubles')
LINE = '-' * 87
TIMEOUT = 30
MIB_HEADER = ' #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]'
GB_HEADER = ' #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]'


@pytest.fixture
def a100(lab_tree):
    """A lab root with the A100 profile: mlx5_1 ACTIVE HDR 200 Gb/s IB, mlx5_0 DOWN, mlx5_bond_0 ACTIVE 10 GbE."""
    return lab_tree('a100')


def free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def memlock(limit):
    """A child's soft memlock limit (never above the hard one)."""
    def apply():
        _soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (limit if hard == resource.RLIM_INFINITY else min(limit, hard),
                                                     hard))
    return apply


def run(root, tool, args, limit=None):
    """One call that needs no peer: ``(rc, stdout, stderr)``."""
    done = subprocess.run([str(root / 'bin' / tool)] + args, capture_output=True, text=True, timeout=TIMEOUT,
                          preexec_fn=memlock(limit) if limit else None, check=False)
    return done.returncode, done.stdout, done.stderr


def pair(root, tool, server_args, client_args, client_tool=None, limit=None):
    """Server, then the client against it on 127.0.0.1: ``((rc, out, err) of the server, (...) of the client)``."""
    port = str(free_port())
    server = subprocess.Popen([str(root / 'bin' / tool), '-p', port] + server_args, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, preexec_fn=memlock(limit) if limit else None)
    try:
        banner = ''
        while 'Waiting for client to connect' not in banner:
            line = server.stdout.readline()
            if not line:
                out, err = server.communicate(timeout=TIMEOUT)
                pytest.fail('the server ended before listening: %r %r' % (banner + out, err))
            banner += line
        client = run(root, client_tool or tool, ['-p', port] + client_args + ['127.0.0.1'], limit)
        out, err = server.communicate(timeout=TIMEOUT)
        return (server.returncode, banner + out, err), client
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()


def calls(root):
    with open(str(root / 'firmware' / 'calls.log')) as handle:
        return [json.loads(line) for line in handle]


def test_current_layout_without_report_gbits_is_mebibytes(a100):
    (src, sout, _serr), (crc, cout, cerr) = pair(a100, 'ib_write_bw', ['-d', 'mlx5_1'], ['-d', 'mlx5_1'])
    assert (src, crc, cerr) == (0, 0, '')
    for out in (sout, cout):
        assert MIB_HEADER in out.splitlines()
        parsed = parse_bw(out)
        # 183.61 Gb/s printed as MiB/s (21888.39) reads back as the field report's figure.
        assert (parsed['unit'], parsed['numbers_unit'], parsed['average_gbps'], parsed['peak_gbps']) == (
            'MiB/sec', 'MiB/sec', 183.61, 183.66)
        assert (parsed['device'], parsed['link_type'], parsed['bytes'], parsed['iterations']) == (
            'mlx5_1', 'IB', 65536, 5000)
    assert parse_bw(sout)['side'] == 'server' and parse_bw(cout)['side'] == 'client'
    assert [call[0] for call in calls(a100)] == ['ib_write_bw', 'ib_write_bw']


def test_report_gbits_prints_the_field_report_rows(a100):
    (_src, sout, _serr), (crc, cout, _cerr) = pair(
        a100, 'ib_write_bw', ['-d', 'mlx5_1', '-i', '1', '--report_gbits'],
        ['-d', 'mlx5_1', '--ib-port=1', '--report_gbits', '-F'])
    assert crc == 0
    rows = [line for line in cout.splitlines() if line.startswith(' 65536')]
    assert rows == [' 65536      5000             183.66             183.61 \t\t     0.350208']
    assert GB_HEADER in sout.splitlines() and rows[0] in sout.splitlines()
    assert line_rate_result(cout, 200, 90)['line_rate_pct'] == 91.8


def test_server_without_report_gbits_prints_perftests_mismatched_table(a100):
    """The issue: the server's MiB/sec header over the client's Gb/s numbers."""
    (src, sout, _serr), (crc, cout, _cerr) = pair(
        a100, 'ib_write_bw', ['-d', 'mlx5_1'], ['-d', 'mlx5_1', '--report_gbits'])
    assert (src, crc) == (0, 0)
    assert MIB_HEADER in sout.splitlines()
    assert ' 65536      5000             183.66             183.61 \t\t     0.350208' in sout.splitlines()
    server = parse_bw(sout)
    assert (server['numbers_unit'], server['average_gbps']) == ('Gb/sec', 183.61)
    assert 'header says MiB/sec but the numbers are in Gb/sec' in server['unit_mismatch']
    assert parse_bw(cout)['unit_mismatch'] is None


@pytest.mark.parametrize('profile, device, rate, average', [
    ('v100', 'mlx5_1', 100, 94.71),
    # 10 Gb/s: no recording, the 100 Gb/s share scaled (94.71 % of 10).
    ('a100', 'mlx5_bond_0', 10, 9.47),
])
def test_line_rate_figures(lab_tree, profile, device, rate, average):
    root = lab_tree(profile)
    _server, (crc, cout, _cerr) = pair(
        root, 'ib_write_bw', ['-d', device, '--report_gbits'], ['-d', device, '--report_gbits'])
    assert crc == 0 and parse_bw(cout)['average_gbps'] == average
    assert line_rate_result(cout, rate, 90)['ok'] is True


@pytest.mark.parametrize('args, stderr, kind', [
    (['-d', 'mlx5_9'], 'IB device mlx5_9 not found\n Unable to find the Infiniband/RoCE device\n', 'no_device'),
    (['-d', 'mlx5_1', '-i', '2'], ' Unable to query port 2 attributes\n Couldn\'t set the link layer\n Couldn\'t get '
                                  'context for the device\n', 'no_port'),
    (['-d', 'mlx5_0'], ' Port number 1 state is Down\n Couldn\'t set the link layer\n Couldn\'t get context for the '
                       'device\n', 'port_down'),
    (['-d', 'mlx5_1', '--bogus'], 'ib_write_bw: unrecognized option \'--bogus\'\n Invalid Command or flag.\n Please '
                                  'check command line and run again.\n\n Parser function exited with Error\n',
     'bad_option'),
    (['-d', 'mlx5_1', '-d', 'mlx5_0'], ' Duplicated argument: -d \n Parser function exited with Error\n', 'bad_option'),
    (['-d', 'mlx5_1', '-q', '0'], ' num of Qps should be between 1 and 16384\n Parser function exited with Error\n',
     'bad_option'),
    (['-d', 'mlx5_1', '-x', '65'], ' Gid index should be between 0 and 64\n Parser function exited with Error\n',
     'bad_option'),
])
def test_refusals_as_perftest_prints_them(a100, args, stderr, kind):
    rc, out, err = run(a100, 'ib_write_bw', args + ['127.0.0.1'])
    assert (rc, out, err) == (1, '', stderr)
    assert explain_failure(err)[0]['kind'] == kind
    assert calls(a100) == [['ib_write_bw'] + args + ['127.0.0.1']]


def test_perftest_options_the_double_does_not_model_are_refused_by_name(a100):
    rc, _out, err = run(a100, 'ib_write_bw', ['-d', 'mlx5_1', '--use_cuda=0', '127.0.0.1'])
    assert rc == 1 and err.startswith('lab perftest double: --use_cuda is a perftest option this double does not model')


def test_no_server(a100):
    port = str(free_port())
    rc, _out, err = run(a100, 'ib_write_bw', ['-d', 'mlx5_1', '-p', port, '127.0.0.1'])
    assert rc == 1
    assert err == ('Couldn\'t connect to 127.0.0.1:%s\nUnable to open file descriptor for socket connection\n Unable '
                   'to init the socket connection\n' % port)
    assert explain_failure(err)[0]['kind'] == 'no_exchange'


def test_roce_gid_chosen_like_perftest(a100, tmp_path, lab_tree, sysfs_profile):
    """Without -x perftest picks the best GID of a RoCE port; with -x the entry must exist."""
    (src, _sout, _serr), (crc, cout, _cerr) = pair(a100, 'ib_write_bw', ['-d', 'mlx5_bond_0'], ['-d', 'mlx5_bond_0'])
    assert (src, crc) == (0, 0)
    # bond0's table: link-local (0 v1, 1 v2), 10.96.83.26 (2 v1, 3 v2); perftest prefers RoCE v2 of an IPv4 address
    assert ' GID index       : 3' in cout.splitlines()
    assert ' GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:96:83:26' in cout.splitlines()
    assert parse_bw(cout)['gid_index'] == 3 and parse_bw(cout)['link_type'] == 'Ethernet'
    # A GID index beyond the port's table (16 entries here) cannot be read: perftest stops before connecting.
    profile = sysfs_profile('a100')
    bond = next(device for device in profile['devices'] if device['name'] == 'mlx5_bond_0')
    bond['ports'][0]['gid_table_len'] = 16
    short = lab_tree(profile, root=tmp_path / 'short')
    (src, _sout, serr), (crc, _cout, cerr) = pair(
        short, 'ib_write_bw', ['-d', 'mlx5_bond_0', '-x', '20'], ['-d', 'mlx5_bond_0', '-x', '20'])
    assert (src, crc, serr, cerr) == (1, 1, ' Unable to set up socket connection\n',
                                      ' Unable to set up socket connection\n')
    assert explain_failure(cerr)[0]['kind'] == 'gid_index'


def test_empty_roce_gid_cannot_reach_rtr(lab_tree, sysfs_profile):
    profile = sysfs_profile('a100')
    bond = next(device for device in profile['devices'] if device['name'] == 'mlx5_bond_0')
    bond['ports'][0]['gid'] = '0000:0000:0000:0000:0000:0000:0000:0000'
    root = lab_tree(profile)
    (src, _sout, _serr), (crc, cout, cerr) = pair(
        root, 'ib_write_bw', ['-d', 'mlx5_bond_0', '-x', '0'], ['-d', 'mlx5_bond_0', '-x', '0'])
    assert (src, crc) == (1, 1)
    assert cerr.startswith('Failed to modify QP ')
    assert cerr.endswith(' to RTR\n Unable to Connect the HCA\'s through the link\n')
    assert [f['kind'] for f in explain_failure(cout + cerr)] == ['gid_zero', 'qp_connect']


def test_infiniband_uses_no_gid_unless_asked(a100):
    """On InfiniBand perftest uses no GID by default; -x makes it read (and need) that entry."""
    _server, (crc, cout, _cerr) = pair(a100, 'ib_write_bw', ['-d', 'mlx5_1'], ['-d', 'mlx5_1'])
    assert crc == 0 and not [line for line in cout.splitlines() if 'GID' in line]
    _server, (crc, cout, _cerr) = pair(a100, 'ib_write_bw', ['-d', 'mlx5_1', '-x', '0'], ['-d', 'mlx5_1', '-x', '0'])
    assert crc == 0 and ' GID index       : 0' in cout.splitlines()
    # the port GID: subnet prefix fe80::/64 and the port GUID (node_guid 0c42:a103:00a1:0d44)
    assert ' GID: 254:128:00:00:00:00:00:00:12:66:161:03:00:161:13:68' in cout.splitlines()
    # index 5 of the table is empty: the kernel refuses the QP's path to it
    (src, _sout, _serr), (crc, cout, cerr) = pair(
        a100, 'ib_write_bw', ['-d', 'mlx5_1', '-x', '5'], ['-d', 'mlx5_1', '-x', '5'])
    assert (src, crc) == (1, 1) and cerr.startswith('Failed to modify QP ')


def test_bidirectional_multi_qp(a100):
    (src, sout, _serr), (crc, cout, _cerr) = pair(
        a100, 'ib_write_bw', ['-d', 'mlx5_1', '-b', '-q', '4', '--report_gbits'],
        ['-d', 'mlx5_1', '-b', '-q', '4', '--report_gbits'])
    assert (src, crc) == (0, 0)
    for out in (sout, cout):
        assert '                    RDMA_Write Bidirectional BW Test' in out.splitlines()
        parsed = parse_bw(out)
        assert (parsed['bidirectional'], parsed['qps'], parsed['iterations'], parsed['average_gbps']) == (
            True, 4, 20000, 367.22)
        assert line_rate_result(out, 200, 90)['line_rate_pct'] == 91.8


def test_all_sizes_need_16_mib_of_locked_memory(a100):
    """-a registers 2 x 8 MiB: under an 8 MiB memlock limit perftest fails memory registration."""
    (src, _sout, _serr), (crc, _cout, cerr) = pair(
        a100, 'ib_write_bw', ['-d', 'mlx5_1', '-a'], ['-d', 'mlx5_1', '-a'], limit=8 * 1024 * 1024)
    assert (src, crc) == (1, 1)
    assert cerr.startswith('Couldn\'t allocate MR with error=12\nfailed to create mr\nFailed to create MR\n')
    assert explain_failure(cerr)[0]['kind'] == 'memlock'


def test_all_sizes_table():
    """The -a rows the double prints (read in-process: the run needs more locked memory than this machine allows)."""
    perftest_double = load_double()
    opts = perftest_double.parse('ib_send_bw', ['-a', '--report_gbits', '-d', 'mlx5_1'])
    port = {'rate': 200.0}
    rows = perftest_double.bw_figures(opts, port, {})
    text = '\n'.join([GB_HEADER] + [perftest_double.bw_row(row, True).rstrip('\n') for row in rows])
    parsed = parse_bw(text)
    assert [row['bytes'] for row in parsed['rows']] == [2 ** n for n in range(1, 24)]
    assert all(row['problem'] is None and row['unit_mismatch'] is None and row['cross_checked']
               for row in parsed['rows'])
    assert parsed['rows'][0]['average'] == 0.048 and parsed['average_gbps'] == 183.61


def test_duration_runs_measure_no_peak(a100):
    (_s, _sout, _serr), (crc, cout, _cerr) = pair(
        a100, 'ib_read_bw', ['-d', 'mlx5_1', '-D', '5'], ['-d', 'mlx5_1', '-D', '5'])
    assert crc == 0 and cout.startswith(' WARNING: BW peak won\'t be measured in this run.\n')
    parsed = parse_bw(cout)
    assert (parsed['peak_measured'], parsed['average_gbps'], parsed['test']) == (False, 183.61, 'RDMA_Read BW')
    assert ' local address: LID 0x03 ' in cout and ' OUT 0x10 RKey ' in cout
    rc, out, err = run(a100, 'ib_read_bw', ['-d', 'mlx5_1', '-D', '5', '-a'])
    assert (rc, out, err) == (1, LINE + '\n', 'Duration mode currently doesn\'t support running on all sizes.\n')


def faults(root, content, name='faults.json'):
    os.makedirs(str(root / 'perftest'), exist_ok=True)
    with open(str(root / 'perftest' / name), 'w') as handle:
        handle.write(content)


def test_fault_share_slows_the_port(a100):
    faults(a100, json.dumps({'mlx5_1/1': {'share': 0.45}}))
    _server, (crc, cout, _cerr) = pair(
        a100, 'ib_write_bw', ['-d', 'mlx5_1', '--report_gbits'], ['-d', 'mlx5_1', '--report_gbits'])
    result = line_rate_result(cout, 200, 90)
    assert (crc, result['average_gbps'], result['line_rate_pct'], result['ok']) == (0, 90.0, 45.0, False)


@pytest.mark.parametrize('fault, client_kind, server_kind', [
    ('no_exchange', 'no_exchange', 'no_exchange'),
    ('memlock', 'memlock', 'memlock'),
    ('completion_error', 'completion_error', 'no_exchange'),
    ('port_down', 'port_down', None),
])
def test_fault_fails_the_pair(a100, fault, client_kind, server_kind):
    faults(a100, json.dumps({'mlx5_1/1': {'fail': fault}}))
    if fault == 'port_down':
        rc, _out, err = run(a100, 'ib_write_bw', ['-d', 'mlx5_1', '127.0.0.1'])
        assert rc == 1 and explain_failure(err)[0]['kind'] == client_kind
        return
    (src, sout, serr), (crc, cout, cerr) = pair(a100, 'ib_write_bw', ['-d', 'mlx5_1'], ['-d', 'mlx5_1'])
    assert (src, crc) == (1, 1)
    assert explain_failure(cout + cerr)[0]['kind'] == client_kind
    assert explain_failure(sout + serr)[0]['kind'] == server_kind
    assert line_rate_result(cout + '\n' + cerr, 200, 90, crc)['ok'] is False


def test_a_broken_faults_file_is_named(a100):
    faults(a100, json.dumps({'mlx5_1/1': {'fail': 'melted'}}))
    rc, _out, err = run(a100, 'ib_write_bw', ['-d', 'mlx5_1', '127.0.0.1'])
    assert rc == 1 and err.startswith('lab perftest double: %s: mlx5_1/1 has an unknown fault' % (
        a100 / 'perftest' / 'faults.json'))


def test_server_and_client_of_different_tests(a100):
    (src, _sout, serr), (crc, _cout, cerr) = pair(
        a100, 'ib_write_bw', ['-d', 'mlx5_1'], ['-d', 'mlx5_1'], client_tool='ib_read_bw')
    assert (src, crc) == (1, 1) and 'Failed to exchange data' in serr and 'Failed to exchange data' in cerr
    assert [call[0] for call in calls(a100)] == ['ib_write_bw', 'ib_read_bw']


@pytest.mark.parametrize('tool, device, t_typical', [
    # InfiniBand: the HDR ib_send_lat row of 2 bytes (1.60), write and read scaled by the ConnectX-5 ratios.
    ('ib_send_lat', 'mlx5_1', 1.60), ('ib_write_lat', 'mlx5_1', 1.42), ('ib_read_lat', 'mlx5_1', 2.69),
    # Ethernet: the ConnectX-5 rows themselves.
    ('ib_send_lat', 'mlx5_bond_0', 0.88), ('ib_write_lat', 'mlx5_bond_0', 0.78), ('ib_read_lat', 'mlx5_bond_0', 1.48),
])
def test_latency_doubles(a100, tool, device, t_typical):
    (src, sout, _serr), (crc, cout, _cerr) = pair(a100, tool, ['-d', device], ['-d', device])
    assert (src, crc) == (0, 0)
    parsed = parse_lat(cout)
    assert (parsed['layout'], parsed['bytes'], parsed['iterations'], parsed['t_typical_usec']) == (
        'iterations', 2, 1000, t_typical)
    assert parsed['t_min_usec'] <= parsed['t_typical_usec'] <= parsed['p99_usec'] <= parsed['t_max_usec']
    # An ib_read_lat server prints no table, as perftest's.
    assert (parse_lat(sout) is None) is (tool == 'ib_read_lat')


def test_latency_duration_and_sizes(a100):
    (_s, _o, _e), (crc, cout, _cerr) = pair(
        a100, 'ib_write_lat', ['-d', 'mlx5_1', '-D', '2'], ['-d', 'mlx5_1', '-D', '2'])
    parsed = parse_lat(cout)
    # t_avg x tps = 10**6 / 2 for writes (half the round trip).
    assert crc == 0 and parsed['layout'] == 'duration' and abs(parsed['t_avg_usec'] * parsed['tps_average'] - 5e5) < 5e3
    (_s, _o, _e), (crc, cout, _cerr) = pair(
        a100, 'ib_send_lat', ['-d', 'mlx5_1', '-s', '1M'], ['-d', 'mlx5_1', '-s', '1M'])
    # 16 KiB recorded (3.76) plus the serialization of the other 1032192 bytes at 200 Gb/s (41.29 usec).
    assert crc == 0 and parse_lat(cout)['t_typical_usec'] == 45.05


@pytest.mark.parametrize('args, stderr', [
    (['-q', '2'], ' Multiple QPs only available on bw tests\n Parser function exited with Error\n'),
    (['-b'], ' Bidirectional is only available in BW test\n Parser function exited with Error\n'),
    # perftest_parameters.c refuses -N (--noPeak) for the latency tools, as the double does.
    (['-N'], ' NoPeak only valid for BW tests\n Parser function exited with Error\n'),
    (['--noPeak'], ' NoPeak only valid for BW tests\n Parser function exited with Error\n'),
])
def test_latency_refusals(a100, args, stderr):
    assert run(a100, 'ib_read_lat', ['-d', 'mlx5_1'] + args) == (1, '', stderr)


def load_double():
    sys.path.insert(0, DOUBLES)
    try:
        import perftest_double
    finally:
        sys.path.remove(DOUBLES)
    return perftest_double


WORDS = st.one_of(st.sampled_from(['-d', 'mlx5_1', '-i', '1', '-x', '3', '-s', '1M', '-a', '-D', '5', '-q', '4',
                                   '-b', '--report_gbits', '-F', '-n', '5', '-p', '18515', '--size=64K', '--qp=2',
                                   '-N', '-m', '4096', '--use_cuda=0', '--bogus', '-sK', '-x65', '-i0', '127.0.0.1',
                                   '--', '-', '--all=1', '-Q', '-t']),
                  st.text(max_size=8))


@settings(deadline=None)
@given(st.sampled_from(['ib_write_bw', 'ib_read_bw', 'ib_send_bw', 'ib_write_lat', 'ib_read_lat', 'ib_send_lat']),
       st.lists(WORDS, max_size=8))
def test_any_command_line_is_read_or_refused_as_perftest_would(tool, argv):
    double = load_double()
    try:
        opts = double.parse(tool, argv)
    except double.Failed as failure:
        assert failure.err.endswith('\n') and failure.err.strip()
        return
    assert 1 <= opts['size'] <= 2147483647 and 1 <= opts['qps'] <= 16384 and opts['ib_port'] >= 1
    assert not (opts['all'] and opts['duration'])
