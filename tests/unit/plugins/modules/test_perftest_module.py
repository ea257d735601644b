# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The perftest module against the lab's perftest double (perftest cannot run on this kernel)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from ansible_collections.gpunet.rdma.plugins.modules import perftest


def free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


@pytest.fixture
def lab(lab_tree):
    """A lab root (sys/, bin/ with the doubles) of the A100 profile: mlx5_1 ACTIVE 200 Gb/s IB, mlx5_0 DOWN."""
    return lab_tree('a100')


def test_bandwidth_and_latency_in_one_call(lab, run_module):
    code, result = run_module(perftest, {'tool_dir': str(lab / 'bin'), 'tcp_port': free_port(), 'tests': [
        {'device': 'mlx5_1', 'port': 1, 'line_rate_gbps': 200},
        {'device': 'mlx5_1', 'port': 1, 'tool': 'ib_read_lat', 'max_latency_usec': 50},
        {'device': 'mlx5_0', 'port': 1, 'line_rate_gbps': 200}]})
    assert code == 0 and result['changed'] is False
    bandwidth, latency, down = result['results']
    assert bandwidth['ok'] is True and bandwidth['problem'] is None
    # The field report's A100 figure: 183.61 Gb/s of 200.
    assert bandwidth['record']['average_gbps'] == 183.61 and bandwidth['record']['line_rate_pct'] == 91.8
    assert bandwidth['client_argv'][1:] == ['-d', 'mlx5_1', '-i', '1', '-p', bandwidth['client_argv'][6], '-s',
                                            '65536', '--report_gbits', '127.0.0.1']
    assert bandwidth['server_rc'] == 0 and 'Gb/sec' in bandwidth['server_stdout']
    assert latency['ok'] is True and latency['record']['t_typical_usec'] > 0
    # mlx5_0 is DOWN: perftest refuses, the problem says why, and no server is left behind.
    assert down['ok'] is False and 'not ACTIVE' in down['problem']
    assert down['server_rc'] is not None
    assert result['failed_tests'] == ['mlx5_0/1 ib_write_bw']


def test_a_slow_port_misses_the_line_rate(lab, run_module):
    (lab / 'perftest').mkdir(exist_ok=True)
    (lab / 'perftest' / 'faults.json').write_text(json.dumps({'mlx5_1/1': {'share': 0.45}}))
    code, result = run_module(perftest, {'tool_dir': str(lab / 'bin'), 'tcp_port': free_port(), 'tests': [
        {'device': 'mlx5_1', 'line_rate_gbps': 200}]})
    assert code == 0
    test = result['results'][0]
    assert test['ok'] is False and 'below 90 %' in test['problem']
    assert 40 < test['record']['line_rate_pct'] < 50


def test_check_mode_runs_nothing(lab, run_module):
    code, result = run_module(perftest, {'tool_dir': str(lab / 'bin'), 'tests': [{'device': 'mlx5_1'}]}, check_mode=True)
    assert code == 0 and result['results'][0]['skipped'] is True and result['results'][0]['client_argv'] == []
    assert not (lab / 'firmware' / 'calls.log').exists() or 'ib_write_bw' not in (lab / 'firmware' / 'calls.log').read_text()


def test_a_tool_dir_without_the_tool(tmp_path, run_module):
    code, result = run_module(perftest, {'tool_dir': str(tmp_path), 'tests': [{'device': 'mlx5_1'}]})
    assert code == 1 and 'ib_write_bw' in result['msg'] and 'does not exist' in result['msg']


def test_a_server_and_client_that_hang_are_stopped_at_the_timeout(tmp_path, run_module):
    """A server that never hears from its client and a client stuck in its exchange: both are stopped when the
    timeout runs out, the test is reported failed, and no process is left behind."""
    tool = tmp_path / 'ib_write_bw'
    marker = 'gpunet-hang-%s' % os.getpid()
    tool.write_text('#!/bin/bash\nexec -a %s sleep 600\n' % marker)
    tool.chmod(0o755)
    code, result = run_module(perftest, {'tool_dir': str(tmp_path), 'tcp_port': free_port(), 'timeout': 2,
                                         'connect_retries': 0, 'tests': [{'device': 'mlx5_1', 'line_rate_gbps': 200}]})
    assert code == 0
    (entry,) = result['results']
    assert entry['ok'] is False and entry['rc'] is None and entry['server_rc'] is None
    assert 'client stopped after the timeout' in entry['stderr']
    assert [pid for pid in os.listdir('/proc') if pid.isdigit() and marker.encode() in cmdline(pid)] == []


def cmdline(pid):
    try:
        with open('/proc/%s/cmdline' % pid, 'rb') as handle:
            return handle.read()
    except OSError:  # gone meanwhile
        return b''


# The server side of a two-node test, as the validation role starts it on the server host (async, in the background).
SERVE = '''
import json, sys
from ansible.module_utils.testing import patch_module_args
from ansible_collections.gpunet.rdma.plugins.modules import perftest
with patch_module_args(json.loads(sys.argv[1])):
    try:
        perftest.main()
    except SystemExit:
        pass
'''


def test_servers_on_one_side_clients_on_the_other(lab, run_module):
    """A pair as the validation role runs it: the servers of a bandwidth and a latency test (serve) in another
    process, the clients (server_address) here; the client side is judged, latency against its threshold."""
    port = free_port()
    server_tests = [{'device': 'mlx5_1'}, {'device': 'mlx5_1', 'tool': 'ib_write_lat'}]
    args = {'tool_dir': str(lab / 'bin'), 'tcp_port': port, 'serve': True, 'tests': server_tests, 'timeout': 30}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    server = subprocess.Popen([sys.executable, '-c', SERVE, json.dumps(args)], stdout=subprocess.PIPE, text=True,
                              env=env)
    try:
        code, result = run_module(perftest, {'tool_dir': str(lab / 'bin'), 'tcp_port': port,
                                             'server_address': '127.0.0.1', 'connect_retries': 20, 'timeout': 30, 'tests': [
                                                 {'device': 'mlx5_1', 'line_rate_gbps': 200},
                                                 {'device': 'mlx5_1', 'tool': 'ib_write_lat', 'max_latency_usec': 1.0}]})
        out, _err = server.communicate(timeout=90)
    finally:
        if server.poll() is None:
            server.kill()
    assert code == 0
    bandwidth, latency = result['results']
    assert bandwidth['ok'] is True and bandwidth['record']['average_gbps'] == 183.61
    assert bandwidth['client_argv'][-1] == '127.0.0.1' and bandwidth['server_argv'] == []
    # The HDR port's write latency (the lab double: 1.60 x 0.78 / 0.88 usec) is above the 1 usec threshold.
    assert latency['ok'] is False and latency['problem'] == 'typical latency 1.42 usec is above 1 usec'
    assert result['failed_tests'] == ['mlx5_1/1 ib_write_lat']
    served = json.loads(out)
    assert [r['ok'] for r in served['results']] == [True, True]
    assert served['results'][0]['client_argv'] == [] and served['results'][0]['server_argv'][-1] == '--report_gbits'
    assert 'Gb/sec' in served['results'][0]['server_stdout']


def test_a_server_whose_client_never_comes_is_reported(lab, run_module):
    code, result = run_module(perftest, {'tool_dir': str(lab / 'bin'), 'tcp_port': free_port(), 'serve': True,
                                         'timeout': 2, 'tests': [{'device': 'mlx5_1'}]})
    assert code == 0
    assert result['results'][0]['ok'] is False
    assert result['results'][0]['problem'].startswith('the ib_write_bw server was stopped after the timeout')


@pytest.mark.parametrize('args, message', [
    ({'serve': True, 'server_address': '10.0.0.1'}, 'parameters are mutually exclusive: server_address|serve'),
    ({'server_address': '-x 3'}, 'server_address must be a host name or address'),
])
def test_two_sided_parameters_are_checked(lab, run_module, args, message):
    code, result = run_module(perftest, dict({'tool_dir': str(lab / 'bin'), 'tests': [{'device': 'mlx5_1'}]}, **args))
    assert code == 1 and message in result['msg']
