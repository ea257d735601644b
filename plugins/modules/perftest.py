#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
---
module: perftest
short_description: Run perftest (ib_write_bw, ib_read_lat, ...) on a node or between two nodes and judge them
version_added: 0.1.0
description:
  - For each entry of O(tests), starts the perftest server on the node, runs the client against it over the loopback
    address (the check of the InfiniBand field report, C(ib_write_bw -d DEV &) then C(ib_write_bw -d DEV 127.0.0.1)),
    collects both outputs and judges them - bandwidth as a share of the port's line rate, latency from its table - with
    the same parser as the fleet report (every perftest layout, unit cross-check, failure explanations).
  - Between two nodes the module runs one side on each - with O(serve) only the servers (one test after the other,
    each waiting for its client), with O(server_address) only the clients, against that node; the client side is
    judged. Run the server side asynchronously (C(async), C(poll) 0) and the client side on the other node.
  - All tests of a node run one after the other in one module call, so that validating a node with eight rails costs one
    round trip, not thirty-two.
  - A client that cannot reach its server yet (C(Couldn't connect)) is retried; a server the client never reached is
    stopped after O(timeout), so no perftest process is left behind.
  - Tests load the links they run on; in check mode none runs.
author:
  - gpunet.rdma contributors (@gpunet)
options:
  tests:
    description: The tests to run, in order; at least one.
    type: list
    elements: dict
    required: true
    suboptions:
      device:
        description: The RDMA device (C(-d)).
        type: str
        required: true
      port:
        description: The device's port (C(-i)).
        type: int
        default: 1
      gid_index:
        description: The GID index (C(-x)), for RoCE; omit to let perftest choose.
        type: int
      tool:
        description: The perftest tool.
        type: str
        default: ib_write_bw
        choices: [ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_read_lat, ib_send_lat]
      line_rate_gbps:
        description: The port's line rate, to judge a bandwidth test against; omitted, it is not judged.
        type: float
      max_latency_usec:
        description: The highest typical latency a latency test may show; omitted, it is not judged.
        type: float
  tool_dir:
    description: Directory of the perftest tools; default searches E(PATH).
    type: path
  tcp_port:
    description: TCP port of perftest's connection exchange (C(-p)).
    type: int
    default: 18515
  message_size:
    description: Message size in bytes of the bandwidth tests (C(-s)).
    type: int
    default: 65536
  report_gbits:
    description: Bandwidth in Gb/s (C(--report_gbits)); otherwise perftest prints MB/sec or MiB/sec.
    type: bool
    default: true
  min_line_rate_pct:
    description: A bandwidth test passes at this share (%) of its line rate, from 1 to 100.
    type: float
    default: 90
  timeout:
    description: Seconds one test (server and client) may take.
    type: int
    default: 60
  connect_retries:
    description: How often the client retries while the server is not listening yet (one second apart).
    type: int
    default: 5
  server_address:
    description:
      - Run only the clients, against the servers on this address (another node running the same O(tests) with
        O(serve)). Mutually exclusive with O(serve).
    type: str
  serve:
    description:
      - Run only the servers, one test after the other, each until its client is done or O(timeout) passed. The
        results carry the servers' outputs and are not judged (the client side is).
    type: bool
    default: false
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: No test runs in check mode (they load production links); the results say so.
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - Commands run as argument lists with C(LC_ALL=C).
requirements:
  - perftest (Debian/Ubuntu C(perftest), RHEL C(perftest), or MLNX_OFED/DOCA-OFED).
seealso:
  - name: perftest
    description: The RDMA performance tests.
    link: https://github.com/linux-rdma/perftest
'''

EXAMPLES = r'''
- name: ib_write_bw on both ports of a V100 node, judged against 100 Gb/s
  gpunet.rdma.perftest:
    tests:
      - {device: mlx5_0, port: 1, line_rate_gbps: 100}
      - {device: mlx5_1, port: 1, line_rate_gbps: 100}
  register: bandwidth

- name: Latency of one RoCE port with its RoCE v2 GID
  gpunet.rdma.perftest:
    tests:
      - {device: mlx5_0, port: 1, gid_index: 3, tool: ib_read_lat, max_latency_usec: 5}

- name: Bandwidth and latency between two nodes - the servers, in the background
  gpunet.rdma.perftest:
    serve: true
    tests:
      - {device: mlx5_0}
      - {device: mlx5_0, tool: ib_write_lat}
  async: 130
  poll: 0
  delegate_to: gpu-a100-02
  register: servers

- name: The clients on the other node, judged
  gpunet.rdma.perftest:
    server_address: 10.0.0.12
    tests:
      - {device: mlx5_0, line_rate_gbps: 200}
      - {device: mlx5_0, tool: ib_write_lat, max_latency_usec: 5}
  delegate_to: gpu-a100-01
'''

RETURN = r'''
results:
  description: One result per test, in the order of O(tests).
  returned: always
  type: list
  elements: dict
  contains:
    device:
      description: The device.
      type: str
    port:
      description: The port.
      type: int
    tool:
      description: The tool.
      type: str
    ok:
      description: The test ran and met its threshold (a test without threshold passes when it printed its table).
      type: bool
    skipped:
      description: Check mode, nothing ran.
      type: bool
    problem:
      description: What is wrong and what to do, or null.
      type: str
    record:
      description: The parsed result - for bandwidth tests C(average_gbps), C(line_rate_pct), C(unit_mismatch),
        C(failures) and the rest of P(gpunet.rdma.line_rate#filter)'s result; for latency tests the latency
        table (C(t_typical_usec), C(t_avg_usec), C(p99_usec), ...).
      type: dict
    client_argv:
      description: The client's command line (empty with O(serve)).
      type: list
      elements: str
    server_argv:
      description: The server's command line (empty with O(server_address)).
      type: list
      elements: str
    rc:
      description: The client's exit status.
      type: int
    stdout:
      description: The client's output.
      type: str
    stderr:
      description: The client's error output.
      type: str
    server_rc:
      description: The server's exit status (null when it had to be stopped, or with O(server_address)).
      type: int
    server_stdout:
      description: The server's output.
      type: str
failed_tests:
  description: C(device/port tool) of every test that did not pass.
  returned: always
  type: list
  elements: str
'''

import os
import threading
import time

from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import check_executable
from ansible_collections.gpunet.rdma.plugins.module_utils._module import RdmaModule
from ansible_collections.gpunet.rdma.plugins.module_utils.validation._perftest import (
    CLIENT_PARTS, PERFTEST, SERVER_PARTS, line_rate_result, parse_lat, percentage_problem)

BANDWIDTH_TOOLS = ('ib_write_bw', 'ib_read_bw', 'ib_send_bw')


def tool_path(module, tool):
    directory = module.params['tool_dir']
    if directory:
        path = os.path.join(directory, tool)
        problem = check_executable(path)
        if problem:
            module.fail_json(msg='%s: %s. Fix tool_dir or leave it unset to search PATH.' % (tool, problem))
        return path
    path = module.get_bin_path(tool)
    if not path:
        module.fail_json(msg='%s was not found on PATH: install perftest (apt/dnf install perftest, or MLNX_OFED / '
                             'DOCA-OFED) or set tool_dir.' % tool)
    return path


def arguments(module, test):
    """The values of the argv parts (PERFTEST) of one test; the message size only for the bandwidth tools."""
    values = dict(device=test['device'], port=test['port'], tcp_port=module.params['tcp_port'],
                  gid_index=test['gid_index'])
    if test['tool'] in BANDWIDTH_TOOLS:
        values.update(size=module.params['message_size'], gbits=module.params['report_gbits'])
    return values


def _run_client(module, tool, values, address, deadline, server_alive=lambda: True):
    """The client against ``address``, retried while the server is not listening yet; a client stuck in its exchange
    is stopped at the deadline (TERM, then KILL 5 s later) instead of holding the module."""
    attempt = 0
    while True:
        attempt += 1
        client_argv, stopped, rc, out, err = tool.run_stoppable(
            CLIENT_PARTS, timeout=deadline - time.time(), server=address, **values)
        if stopped:
            err += '\nclient stopped after the timeout'
            rc = None
            break
        if "Couldn't connect" not in out + err or attempt > module.params['connect_retries'] or not server_alive() \
                or time.time() >= deadline:
            break
        time.sleep(1)
    return client_argv, rc, out, err


def _run_server(tool, values, deadline):
    """The server until its client is done or the deadline: ``(rc or None when stopped, out, err)``.

    It runs in a thread, where fail_json cannot end the module: a server that cannot start is returned as such.
    """
    try:
        rc, out, err, stopped = tool.run_in_thread(SERVER_PARTS, deadline - time.time(), **values)[1:]
        return (None if stopped else rc), out, err
    except (IOError, OSError) as exc:
        return None, '', 'cannot start %s: %s' % (tool.executable, exc)


def run_pair(module, tool, values):
    """Server in the background, client against 127.0.0.1 with retries; returns the outputs of both.

    Both run through module.run_command (LC_ALL=C); the server in a thread, so that the client can start beside it.
    """
    deadline = time.time() + module.params['timeout']
    server = {}

    def serve():
        server['rc'], server['out'], server['err'] = _run_server(tool, values, deadline)

    thread = threading.Thread(target=serve, name='perftest-server')
    thread.daemon = True
    thread.start()
    time.sleep(0.3)  # the server's listening socket, before the first client (a refused client is retried anyway)
    client_argv, rc, out, err = _run_client(module, tool, values, '127.0.0.1', deadline, thread.is_alive)
    thread.join(max(1, deadline - time.time()) + 6)
    return {'client_argv': client_argv, 'rc': rc, 'stdout': out, 'stderr': err, 'server_rc': server.get('rc'),
            'server_argv': tool.argv(SERVER_PARTS, **values), 'server_stdout': server.get('out', ''),
            'server_stderr': server.get('err', '')}


def run_client_only(module, tool, values):
    """The client of a test whose server runs on another node (``server_address``)."""
    deadline = time.time() + module.params['timeout']
    client_argv, rc, out, err = _run_client(module, tool, values, module.params['server_address'], deadline)
    return {'client_argv': client_argv, 'rc': rc, 'stdout': out, 'stderr': err, 'server_rc': None,
            'server_argv': [], 'server_stdout': '', 'server_stderr': ''}


def run_server_only(module, tool, values):
    """The server of a test whose client runs on another node (``serve``)."""
    rc, out, err = _run_server(tool, values, time.time() + module.params['timeout'])
    return {'client_argv': [], 'rc': None, 'stdout': '', 'stderr': '', 'server_rc': rc,
            'server_argv': tool.argv(SERVER_PARTS, **values), 'server_stdout': out, 'server_stderr': err}


def judge(module, test, run):
    output = run['stdout'] + '\n' + run['stderr']
    if test['tool'] in BANDWIDTH_TOOLS:
        record = line_rate_result(output, test['line_rate_gbps'], module.params['min_line_rate_pct'], run['rc'] or 0)
        if test['line_rate_gbps'] is None and record.get('average_gbps') is not None:
            record['ok'], record['problem'] = True, None
        return record['ok'], record['problem'], record
    table = parse_lat(output)
    if table is None:
        return False, '%s printed no latency table (exit status %s)' % (test['tool'], run['rc']), {}
    record = dict(table)
    typical = table.get('t_typical_usec') or table.get('t_avg_usec')
    limit = test['max_latency_usec']
    if limit is not None and (typical is None or typical > limit):
        return False, 'typical latency %s usec is above %g usec' % (typical, limit), record
    return True, None, record


def main():
    module = RdmaModule(
        argument_spec=dict(
            tests=dict(type='list', elements='dict', required=True, options=dict(
                device=dict(type='str', required=True),
                port=dict(type='int', default=1),
                gid_index=dict(type='int'),
                tool=dict(type='str', default='ib_write_bw', choices=list(BANDWIDTH_TOOLS) + [
                    'ib_write_lat', 'ib_read_lat', 'ib_send_lat']),
                line_rate_gbps=dict(type='float'),
                max_latency_usec=dict(type='float'),
            )),
            tool_dir=dict(type='path'),
            tcp_port=dict(type='int', default=18515),
            message_size=dict(type='int', default=65536),
            report_gbits=dict(type='bool', default=True),
            min_line_rate_pct=dict(type='float', default=90),
            timeout=dict(type='int', default=60),
            connect_retries=dict(type='int', default=5),
            server_address=dict(type='str'),
            serve=dict(type='bool', default=False),
        ),
        mutually_exclusive=[('server_address', 'serve')],
        supports_check_mode=True,
    )
    # Every argument is checked before the first test runs: a bad entry late in the list must not stop the call after
    # the tests before it loaded the links.
    if not module.params['tests']:
        module.fail_json(msg='tests is empty: give at least one test ({device, port, tool}); a call without tests '
                             'would validate nothing and pass.')
    for name, low in (('tcp_port', 1), ('message_size', 1), ('timeout', 1), ('connect_retries', 0)):
        if module.params[name] < low:
            module.fail_json(msg='%s must be %d or more, got %d.' % (name, low, module.params[name]))
    if module.params['tcp_port'] > 65535:
        module.fail_json(msg='tcp_port must be a TCP port (1-65535), got %d.' % module.params['tcp_port'])
    problem = percentage_problem(module.params['min_line_rate_pct'])
    if problem:
        module.fail_json(msg='min_line_rate_pct %s: it is the share (%%) of the line rate a bandwidth test passes at '
                             '(90 by default).' % problem)
    address = module.params['server_address']
    if address is not None and (not address.strip() or address.startswith('-') or any(c.isspace() for c in address)):
        module.fail_json(msg='server_address must be a host name or address of the node running the servers (serve: '
                             'true), got %r.' % address)
    for test in module.params['tests']:
        if test['port'] < 1:
            module.fail_json(msg='tests: port of %s must be 1 or more, got %d.' % (test['device'], test['port']))
    results, failed = [], []
    for test in module.params['tests']:
        base = {'device': test['device'], 'port': test['port'], 'tool': test['tool'], 'gid_index': test['gid_index']}
        if module.check_mode:
            results.append(dict(base, ok=True, skipped=True, problem=None, record={}, client_argv=[], rc=None,
                                stdout='', stderr='', server_rc=None, server_argv=[], server_stdout=''))
            continue
        tool = PERFTEST(module, tool_path(module, test['tool']))
        if module.params['serve']:
            run = run_server_only(module, tool, arguments(module, test))
            ok = run['server_rc'] == 0
            problem = None if ok else ('the %s server %s: %s' % (
                test['tool'], 'was stopped after the timeout (its client never came)' if run['server_rc'] is None
                else 'failed (exit status %s)' % run['server_rc'],
                (run['server_stdout'] + run['server_stderr']).strip()[-300:]))
            results.append(dict(base, ok=ok, skipped=False, problem=problem, record={}, **run))
            if not ok:
                failed.append('%s/%d %s' % (test['device'], test['port'], test['tool']))
            continue
        if module.params['server_address']:
            run = run_client_only(module, tool, arguments(module, test))
        else:
            run = run_pair(module, tool, arguments(module, test))
        ok, problem, record = judge(module, test, run)
        results.append(dict(base, ok=ok, skipped=False, problem=problem, record=record, **run))
        if not ok:
            failed.append('%s/%d %s' % (test['device'], test['port'], test['tool']))
    module.exit_json(changed=False, results=results, failed_tests=failed)


if __name__ == '__main__':
    main()
