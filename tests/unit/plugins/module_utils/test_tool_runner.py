# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The tool runner: argv built from the declared parts, run the one way (LC_ALL=C, timeout), skipped in check mode
when asked. Each tool's declared command lines are checked against the argv its documentation shows, written here
by hand."""

from __future__ import annotations

import json
import os
import stat

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpunet.rdma.plugins.module_utils._module import RdmaModule
from ansible_collections.gpunet.rdma.plugins.module_utils._tool_runner import ToolRunner, fixed, flag_if, option
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._management_path import IP
from ansible_collections.gpunet.rdma.plugins.module_utils.firmware._fw_query import FLINT, MLXFWMANAGER
from ansible_collections.gpunet.rdma.plugins.module_utils.firmware._mlxconfig import MLXCONFIG
from ansible_collections.gpunet.rdma.plugins.module_utils.runtime._containerd import CTR
from ansible_collections.gpunet.rdma.plugins.module_utils.tuning._mlnx_qos import MLNX_QOS
from ansible_collections.gpunet.rdma.plugins.module_utils.tuning._setpci import SETPCI
from ansible_collections.gpunet.rdma.plugins.module_utils.validation._perftest import CLIENT_PARTS, PERFTEST

TOOL = ToolRunner('tool', {'device': option('-d'), 'query': fixed('q'), 'yes': flag_if('-y')})


@pytest.mark.parametrize('runner, spec, values, argv', [
    (MLXCONFIG, 'device layout query', dict(device='0000:86:00.0', layout='-e'), ['mlxconfig', '-d', '0000:86:00.0', '-e', 'q']),
    (MLXCONFIG, 'device layout query', dict(device='0000:86:00.0', query=['LINK_TYPE_P1']),
     ['mlxconfig', '-d', '0000:86:00.0', 'q', 'LINK_TYPE_P1']),
    (MLXCONFIG, 'device set', dict(device='/dev/mst/mt4119_pciconf0', set=['SRIOV_EN=1', 'NUM_OF_VFS=8']),
     ['mlxconfig', '-d', '/dev/mst/mt4119_pciconf0', '-y', 'set', 'SRIOV_EN=1', 'NUM_OF_VFS=8']),
    (MLXFWMANAGER, 'device image update', dict(device='0000:86:00.0', image='fw.bin'),
     ['mlxfwmanager', '-d', '0000:86:00.0', '-i', 'fw.bin', '-u', '-f', '-y']),
    (MLXFWMANAGER, 'device image query', dict(device='0000:86:00.0'), ['mlxfwmanager', '-d', '0000:86:00.0', '--query']),
    (FLINT, 'image query', dict(image='fw.bin'), ['flint', '-i', 'fw.bin', 'q']),
    (MLNX_QOS, 'interface options', dict(interface='enp11s0f0np0', options=['--trust', 'dscp']),
     ['mlnx_qos', '-i', 'enp11s0f0np0', '--trust', 'dscp']),
    (SETPCI, 'address register', dict(address='0000:86:00.0', register='CAP_EXP+8.w=5000:7000'),
     ['setpci', '-s', '0000:86:00.0', 'CAP_EXP+8.w=5000:7000']),
    (IP, 'json family default_route', dict(family='6'), ['ip', '-json', '-6', 'route', 'show', 'default']),
    (CTR, 'namespace container_info', dict(namespace='k8s.io', container_info='abc'),
     ['ctr', '--namespace', 'k8s.io', 'containers', 'info', 'abc']),
    (PERFTEST, CLIENT_PARTS, dict(device='mlx5_0', port=1, tcp_port=18515, gid_index=3, size=65536, gbits=True,
                                  server='10.0.0.2'),
     ['perftest', '-d', 'mlx5_0', '-i', '1', '-p', '18515', '-x', '3', '-s', '65536', '--report_gbits', '10.0.0.2']),
    (PERFTEST, CLIENT_PARTS, dict(device='mlx5_0', port=1, tcp_port=18515, gid_index=None, server='10.0.0.2'),
     ['perftest', '-d', 'mlx5_0', '-i', '1', '-p', '18515', '10.0.0.2']),
])
def test_each_tool_builds_its_documented_command_lines(runner, spec, values, argv):
    assert runner.argv(argv[0], spec, values) == argv


def test_an_unknown_part_is_a_programming_error_naming_the_tool():
    with pytest.raises(KeyError, match="the tool runner has no argv part 'set' \\(parts: device, query, yes\\)"):
        TOOL.argv('tool', 'device set', {'device': 'x'})


@pytest.fixture
def recording_tool(tmp_path):
    """A tool that records its argv and locale, then prints ok."""
    path = tmp_path / 'tool'
    record = tmp_path / 'record.json'
    path.write_text('#!/bin/sh\nprintf \'{"argv": "%%s", "lc_all": "%%s"}\' "$*" "$LC_ALL" > %s\necho ok\n' % record)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path), record


def _module(check_mode=False):
    with patch_module_args({'_ansible_check_mode': check_mode}):
        return RdmaModule(argument_spec={}, supports_check_mode=True)


def test_a_run_goes_through_the_one_mechanism(recording_tool):
    path, record = recording_tool
    argv, rc, out, _err = TOOL(_module(), path).run('device query yes', device='mlx5_0', yes=True)
    assert (argv, rc, out) == ([path, '-d', 'mlx5_0', 'q', '-y'], 0, 'ok\n')
    assert json.loads(record.read_text()) == {'argv': '-d mlx5_0 q -y', 'lc_all': 'C'}


def test_check_mode_skips_only_the_runs_that_ask_for_it(recording_tool):
    path, record = recording_tool
    tool = TOOL(_module(check_mode=True), path)
    assert tool.run('device yes', device='mlx5_0', yes=True, check_mode_skip=True) == (
        [path, '-d', 'mlx5_0', '-y'], None, '', '')
    assert not os.path.exists(str(record))
    assert tool.run('query')[1] == 0 and os.path.exists(str(record))  # a read runs in check mode too
