# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ib_write_bw results from seed 003's recorded outputs."""

from __future__ import annotations

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils._perftest import (
    explain_failure,
    line_rate_result,
    parse_bw,
    parse_ulimit,
    ulimit_problem,
)


def test_v100_loopback_is_94_7_percent_of_100(recorded):
    text = recorded('seed003-v100-ib-write-bw-loopback.txt')
    parsed = parse_bw(text)
    assert parsed == {'bytes': 65536, 'iterations': 5000, 'peak_gbps': 94.72, 'average_gbps': 94.71,
                      'msg_rate_mpps': 0.18064, 'unit': 'Gb/sec', 'device': 'mlx5_1', 'link_type': 'IB'}
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
    assert line_rate_result(recorded('seed003-pod-ib-write-bw-1m.txt'), 100, 90)['line_rate_pct'] == 93.4


def test_mr_failure_is_explained(recorded):
    text = recorded('seed003-mr-failure.txt')
    assert parse_bw(text) is None
    kinds = [f['kind'] for f in explain_failure(text)]
    assert kinds == ['memlock', 'no_exchange']
    result = line_rate_result(text, 100, 90, rc=1)
    assert result['ok'] is False and 'containerd_memlock' in result['problem'] and 'IPC_LOCK' in result['problem']


@pytest.mark.parametrize('text, kind', [
    ('Port number 1 state is Down\nCouldn\'t set the link layer\nCouldn\'t get context for the device', 'port_down'),
    ('IB device mlx5_bond_0 not found\nUnable to find the Infiniband/RoCE device', 'no_device'),
    (' Couldn\'t connect to 10.0.0.2:18515', 'no_exchange'),
])
def test_other_seed_failures(text, kind):
    assert explain_failure(text)[0]['kind'] == kind


def test_no_table_and_no_signature():
    result = line_rate_result('Segmentation fault', 100, 90, rc=139)
    assert result['problem'] == 'ib_write_bw printed no result table (exit status 139)'


def test_unknown_rate_cannot_be_judged(recorded):
    result = line_rate_result(recorded('seed003-v100-ib-write-bw-loopback.txt'), None, 90)
    assert result['ok'] is False and 'line rate is unknown' in result['problem']


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
