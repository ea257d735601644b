# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""perftest results: the InfiniBand field report's recorded outputs, perftest's own layouts, failures, properties.

The public corpus (outputs recorded on other machines) is tested in tests/unit/public/test_public_perftest.py.
Tables built here come from perftest's format strings (src/perftest_parameters.h: RESULT_FMT*, REPORT_FMT*) with
the numbers of the field report, for the layouts nobody has published a recording of.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpunet.rdma.plugins.module_utils.validation._perftest import (
    explain_failure,
    line_rate_result,
    parse,
    parse_bw,
    parse_info,
    parse_lat,
    parse_ulimit,
    ulimit_problem,
)

LINE = '-' * 87
# perftest's RESULT_FMT_* headers and REPORT_FMT* rows (perftest_parameters.h of the 24.07 to 26.04 releases).
HEADER_MB = ' #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]'
HEADER_MIB = ' #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]'
HEADER_GB = ' #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]'
HEADER_GB_PER_PORT = (' #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]'
                      '   BW Port1[Gb/sec]   MsgRate Port1[Mpps]   BW Port2[Gb/sec]   MsgRate Port2[Mpps]')
HEADER_QOS = ' #bytes    #sl      #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]'


def report_fmt(size, iters, peak, average, rate):
    return ' %-7d    %-10d       %-7.2f            %-7.2f\t\t     %-7.6f' % (size, iters, peak, average, rate)


def test_v100_loopback_is_94_7_percent_of_100(recorded):
    text = recorded('seed003-v100-ib-write-bw-loopback.txt')
    parsed = parse_bw(text)
    expected = {'bytes': 65536, 'iterations': 5000, 'peak_gbps': 94.72, 'average_gbps': 94.71,
                'msg_rate_mpps': 0.18064, 'unit': 'Gb/sec', 'device': 'mlx5_1', 'link_type': 'IB'}
    assert dict((key, parsed[key]) for key in expected) == expected
    # Server and client interleaved: two test titles, the server's MB/sec header before the client's Gb/sec one.
    assert (parsed['side'], parsed['numbers_unit'], parsed['unit_mismatch'], parsed['cross_checked']) == (
        'both', 'Gb/sec', None, True)
    result = line_rate_result(text, 100, 90)
    assert result['line_rate_pct'] == 94.7 and result['ok'] is True and result['problem'] is None


def test_a100_loopback_is_91_8_percent_of_200(recorded):
    result = line_rate_result(recorded('seed003-a100-ib-write-bw-loopback.txt'), 200, 90)
    assert (result['average_gbps'], result['peak_gbps'], result['line_rate_pct'], result['ok']) == (
        183.61, 183.66, 91.8, True)


def test_below_the_threshold_fails_with_hints(recorded):
    result = line_rate_result(recorded('seed003-a100-ib-write-bw-loopback.txt'), 200, 95)
    assert result['ok'] is False
    assert result['problem'].startswith('183.61 Gb/s is 91.8 % of the 200 Gb/s line rate, below 95 %: check the PCIe')


def test_mb_per_second_tables_are_mebibytes(recorded):
    """perftest's MB/sec is 2**20 bytes/s: 11129.09 MB/sec at 1 MiB messages = 93.36 Gb/s."""
    parsed = parse_bw(recorded('seed003-pod-ib-write-bw-1m.txt'))
    assert (parsed['unit'], parsed['bytes'], parsed['average_gbps'], parsed['peak_gbps']) == (
        'MB/sec', 1048576, 93.36, 93.4)
    assert (parsed['numbers_unit'], parsed['cross_checked']) == ('MiB/sec', True)
    assert line_rate_result(recorded('seed003-pod-ib-write-bw-1m.txt'), 100, 90)['line_rate_pct'] == 93.4


def test_server_header_over_client_numbers_is_read_in_the_numbers_unit():
    """The server of the field report's loopback prints its MB/sec header over the client's Gb/s row.

    Read by the header, 94.71 MB/sec would be 0.79 Gb/s; the message rate says 0.18064 Mpps x 65536 B = 94.71 Gb/s.
    """
    text = '\n'.join([LINE, HEADER_MB, report_fmt(65536, 5000, 94.72, 94.71, 0.180640), LINE])
    parsed = parse_bw(text)
    assert (parsed['unit'], parsed['numbers_unit'], parsed['average_gbps'], parsed['peak_gbps']) == (
        'MB/sec', 'Gb/sec', 94.71, 94.72)
    assert parsed['unit_mismatch'].startswith('the table header says MB/sec but the numbers are in Gb/sec')
    assert '--report_gbits' in parsed['unit_mismatch']
    result = line_rate_result(text, 100, 90)
    assert (result['ok'], result['line_rate_pct'], result['unit_mismatch']) == (True, 94.7, parsed['unit_mismatch'])


def test_gbits_header_over_mebibyte_numbers():
    """A --report_gbits server over a client without it: 11129.09 would otherwise be 11129 Gb/s."""
    text = '\n'.join([HEADER_GB, report_fmt(1048576, 5000, 11133.60, 11129.09, 0.011123)])
    parsed = parse_bw(text)
    assert (parsed['numbers_unit'], parsed['average_gbps'], parsed['peak_gbps']) == ('MiB/sec', 93.36, 93.4)
    assert 'header says Gb/sec but the numbers are in MiB/sec' in parsed['unit_mismatch']


def test_numbers_that_fit_no_unit_are_a_problem_not_a_reading():
    text = '\n'.join([HEADER_GB, report_fmt(65536, 5000, 50.00, 50.00, 0.180640)])
    parsed = parse_bw(text)
    assert parsed['average_gbps'] is None and parsed['peak_gbps'] is None
    assert parsed['problem'].startswith('BW average 50.00 fits neither Gb/sec nor MiB/sec')
    result = line_rate_result(text, 100, 90)
    assert (result['ok'], result['line_rate_pct'], result['problem']) == (False, None, parsed['problem'])


def test_negative_counters_are_a_problem():
    """perftest 5.60 printed negative averages after a counter overflow (linux-rdma/perftest issue 82)."""
    row = ' 65536      5000           0.00               -1.25                0.180640'
    parsed = parse_bw('\n'.join([HEADER_GB, row]))
    assert parsed['average_gbps'] is None and 'counter overflow' in parsed['problem']


def test_message_rate_too_coarse_to_check_keeps_the_header_unit():
    parsed = parse_bw('\n'.join([HEADER_GB, report_fmt(8388608, 1000, 0.01, 0.01, 0.000000)]))
    assert (parsed['average_gbps'], parsed['cross_checked'], parsed['unit_mismatch'], parsed['problem']) == (
        0.01, False, None, None)


def test_per_port_columns():
    """--report-per-port on a dual-port run: RESULT_FMT_G_PER_PORT and REPORT_FMT_PER_PORT."""
    row = ' %-7d    %-10d     %-7.2f            %-7.2f\t\t   %-7.6f        %-7.2f            %-7.6f              ' \
          '%-7.2f            %-7.6f' % (65536, 1000, 189.32, 189.20, 0.360870, 94.61, 0.180441, 94.59, 0.180429)
    parsed = parse_bw('\n'.join([' Dual-port       : ON\t\tDevice         : mlx5_0', HEADER_GB_PER_PORT, row]))
    last = parsed['rows'][-1]
    assert (last['port1_bw_gbps'], last['port1_msg_rate_mpps'], last['port2_bw_gbps'], last['port2_msg_rate_mpps']) == (
        94.61, 0.180441, 94.59, 0.180429)
    assert (parsed['average_gbps'], parsed['unit_mismatch'], parsed['problem']) == (189.2, None, None)


def test_qos_and_cpu_util_columns():
    qos = ' %-7d    %d           %d           %-7.2f            %-7.2f                  %-7.6f' % (
        65536, 3, 5000, 11133.60, 11129.09, 0.178065)
    parsed = parse_bw('\n'.join([HEADER_QOS, qos]))
    assert (parsed['rows'][-1]['sl'], parsed['average_gbps']) == (3, 93.36)
    row = report_fmt(65536, 1000, 0.0, 94.71, 0.180640) + '\t    12.50'
    cpu = parse_bw('\n'.join([HEADER_GB + '    CPU_Util[%]', row]))
    assert (cpu['rows'][-1]['cpu_util_pct'], cpu['average_gbps']) == (12.5, 94.71)


def test_rows_must_have_integer_counts():
    """#bytes, #iterations and #sl are printed with %lu / %d: a fraction there is not a row of the table."""
    assert parse_bw('\n'.join([HEADER_QOS, ' 65536    0.5           5000           1.00            1.00     0.000016'])) is None
    assert parse_bw('\n'.join([HEADER_GB, ' 65536.0      5000           1.00            1.00     0.001907'])) is None


def test_log_prefixes_are_carried_by_header_and_rows():
    """Tables collected through mpirun or kubectl carry the same prefix on every line."""
    prefix = '(worker1, rank=1, pid=33870, ip=192.168.0.15) '
    text = '\n'.join([prefix + HEADER_GB, prefix + report_fmt(65536, 1000, 361.82, 361.67, 0.689839),
                      report_fmt(65536, 1000, 1.0, 1.0, 0.001907)])
    parsed = parse_bw(text)
    assert (len(parsed['rows']), parsed['average_gbps']) == (1, 361.67)
    # kubectl logs --timestamps: the digits of the prefix change from line to line, its shape does not.
    stamped = '\n'.join([
        '2025-03-14T08:15:02.118312522Z ' + HEADER_MIB,
        '2025-03-14T08:15:02.118990731Z Conflicting CPU frequency values detected',
        '2025-03-14T08:15:03.902117094Z ' + report_fmt(1048576, 5000, 11133.60, 11129.09, 0.011123)])
    assert parse_bw(stamped)['average_gbps'] == 93.36


def test_latency_layouts():
    legacy = (' #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n'
              ' 2       1000          2.56           6.11         2.66')
    assert (parse_lat(legacy)['layout'], parse_lat(legacy)['t_typical_usec'], parse_lat(legacy)['t_avg_usec']) == (
        'iterations-legacy', 2.66, None)
    assert parse_bw(legacy) is None
    duration = (' #bytes        #iterations       t_avg[usec]    tps average\n'
                ' 2             62078352            2.42           413812.77')
    parsed = parse_lat(duration)
    assert (parsed['layout'], parsed['iterations'], parsed['t_avg_usec'], parsed['tps_average']) == (
        'duration', 62078352, 2.42, 413812.77)


def test_mr_failure_is_explained(recorded):
    text = recorded('seed003-mr-failure.txt')
    assert parse_bw(text) is None
    kinds = [f['kind'] for f in explain_failure(text)]
    assert kinds == ['memlock', 'no_exchange']
    result = line_rate_result(text, 100, 90, rc=1)
    assert result['ok'] is False and 'containerd_memlock' in result['problem'] and 'IPC_LOCK' in result['problem']


@pytest.mark.parametrize('text, kinds', [
    ('Port number 1 state is Down\nCouldn\'t set the link layer\nCouldn\'t get context for the device', ['port_down']),
    ('IB device mlx5_bond_0 not found\nUnable to find the Infiniband/RoCE device', ['no_device']),
    (' Couldn\'t connect to 10.0.0.2:18515', ['no_exchange']),
    # The messages below are perftest's own (perftest_parameters.c, perftest_resources.c, write_bw.c).
    (' Port number 1 state is Init\n Couldn\'t set the link layer\n Couldn\'t get context for the device',
     ['port_init']),
    (' Unable to query port 2 attributes\n Couldn\'t set the link layer\n Couldn\'t get context for the device',
     ['no_port']),
    (' Unable to set up socket connection', ['gid_index']),
    (' Unable to set up my IB connection parameters', ['gid_index']),
    ('\n Found Incompatibility issue with GID types.\n Please Try to use a different IP version.', ['gid_type']),
    ('Failed to modify QP 59 to RTR\n Unable to Connect the HCA\'s through the link', ['qp_connect']),
    (' Invalid Command or flag.\n Please check command line and run again.\n\n', ['bad_option']),
    (' Duplicated argument: -d \n Parser function exited with Error', ['bad_option']),
    ('Couldn\'t get context for the device', ['no_context']),
])
def test_failure_signatures(text, kinds):
    assert [f['kind'] for f in explain_failure(text)] == kinds


def test_completion_status_is_named():
    found = explain_failure(' Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81\n'
                            'scnt=128, ccnt=0')
    assert found[0]['kind'] == 'completion_error'
    assert 'Status 12: transport retry counter exceeded' in found[0]['remedy']


def test_no_table_and_no_signature():
    result = line_rate_result('Segmentation fault', 100, 90, rc=139)
    assert result['problem'] == 'ib_write_bw printed no result table (exit status 139)'


def test_unknown_rate_cannot_be_judged(recorded):
    result = line_rate_result(recorded('seed003-v100-ib-write-bw-loopback.txt'), None, 90)
    assert result['ok'] is False and 'line rate is unknown' in result['problem']


def test_parse_info_without_a_test_block():
    assert parse_info('') == {
        'test': None, 'kind': None, 'verb': None, 'bidirectional': False, 'device': None, 'link_type': None,
        'transport_type': None, 'connection_type': None, 'qps': None, 'mtu': None, 'gid_index': None,
        'post_list': None, 'rdma_cm': None, 'data_exchange': None, 'side': None}
    assert parse('') == {'kind': None, 'bw': None, 'lat': None, 'failures': [], 'info': parse_info('')}


@pytest.mark.parametrize('text, value, problem', [
    ('unlimited\n', 'unlimited', None),
    ('ulimit -l: 64\n', 64, 'ulimit -l is 64 KiB (the kernel default), below 1048576 KiB'),
    ('8192', 8192, 'ulimit -l is 8192 KiB (a common systemd / container runtime default), below 1048576 KiB'),
    ('4194304', 4194304, None),
    ('', None, 'ulimit -l printed nothing readable'),
])
def test_ulimit(text, value, problem):
    assert parse_ulimit(text) == value
    found = ulimit_problem(parse_ulimit(text), 1048576)
    assert (found if found is None else found[:len(problem)]) == problem


# Property tests: arbitrary text, and text made of perftest's own pieces so that tables are found and rows vary.
NUMBER = st.one_of(st.integers(-10, 10 ** 12).map(str),
                   st.floats(-1e6, 1e12, allow_nan=False).map(lambda value: '%.*f' % (2, value)),
                   st.floats(0, 10, allow_nan=False).map(lambda value: '%.6f' % value))
FRAGMENTS = [
    HEADER_MB, HEADER_MIB, HEADER_GB, HEADER_GB_PER_PORT, HEADER_QOS, LINE,
    ' #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]'
    '   99% percentile[usec]   99.9% percentile[usec]',
    ' #bytes        #iterations       t_avg[usec]    tps average',
    '                    RDMA_Write Bidirectional BW Test',
    ' Dual-port       : OFF\t\tDevice         : mlx5_0', ' Number of qps   : 4\t\tTransport type : IB',
    ' Link type       : Ethernet', ' GID index       : 3', ' GID: 00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00',
    ' #bytes     #iterations    BW peak[GB/sec]    BW average[GB/sec]   MsgRate[Mpps]',
    'Failed status 12: wr_id 0', 'Port number 1 state is Armed', '* Waiting for client to connect... *']
PIECES = st.one_of(
    st.sampled_from(FRAGMENTS),
    st.lists(NUMBER, min_size=1, max_size=10).map(lambda numbers: ' ' + '   '.join(numbers)),
    st.text(max_size=40))


@settings(deadline=None)
@given(st.text())
def test_arbitrary_text_never_breaks_the_parsers(text):
    check_well_formed(text)


@settings(deadline=None)
@given(st.lists(PIECES, max_size=25).map('\n'.join))
def test_perftest_like_text_never_breaks_the_parsers(text):
    check_well_formed(text)


@settings(deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_as_ansible_decodes_them(data):
    check_well_formed(data.decode('utf-8', 'replace'))


def check_well_formed(text):
    bw, lat, everything = parse_bw(text), parse_lat(text), parse(text)
    assert bw is None or (isinstance(bw['rows'], list) and bw['rows'] and bw['kind'] == 'bw')
    if bw is not None:
        assert (bw['average_gbps'] is None) is (bw['problem'] is not None or bw['numbers_unit'] is None)
        assert bw['unit_mismatch'] is None or bw['numbers_unit'] != bw['unit']
    assert lat is None or (lat['layout'] in ('iterations', 'iterations-legacy', 'duration') and lat['rows'])
    assert everything['kind'] in (None, 'bw', 'lat')
    for failure in explain_failure(text):
        assert set(failure) == {'kind', 'matched', 'remedy'} and failure['remedy']
    result = line_rate_result(text, 100.0, 90.0, 0)
    assert result['ok'] is (result['problem'] is None)
    assert result['line_rate_pct'] is None or isinstance(result['line_rate_pct'], float)
