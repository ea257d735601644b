# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpunet.rdma.perftest_tests: the -x of each RoCE test comes from the port's GID table, never a fixed index."""

from __future__ import annotations

from ansible_collections.gpunet.rdma.plugins.filter.validate import rdma_perftest_tests
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import SysfsReader


def test_roce_tests_use_the_ipv4_roce_v2_gid_of_each_port(tmp_path, hardware):
    ports, _devices = SysfsReader(hardware('roce_a100', tmp_path / 'sys')).read()
    active = [p for p in ports if p['state'] == 'ACTIVE' and p['netdev_state'] == 'Up']
    tests = dict(((t['device'], t['port']), t) for t in rdma_perftest_tests(active, 100))
    assert tests[('mlx5_0', 1)]['gid_index'] == 7  # the table with a gap (lab/hardware/roce_a100.yml)
    assert tests[('mlx5_1', 1)]['gid_index'] == 3
    assert tests[('mlx5_8', 1)]['gid_index'] == 3  # the VF's netdev enp11s0f0v0 has its own address
    assert all(t['line_rate_gbps'] == 100.0 for t in tests.values())


def test_infiniband_and_unknown_tables_leave_the_choice_to_perftest(tmp_path, hardware):
    ports, _devices = SysfsReader(hardware('a100', tmp_path / 'sys')).read()
    tests = dict(((t['device'], t['port']), t) for t in rdma_perftest_tests(ports))
    assert tests[('mlx5_1', 1)]['gid_index'] is None  # InfiniBand
    assert tests[('mlx5_bond_0', 1)]['gid_index'] == 3
    command_source = [dict(p, gids=None) for p in ports]
    assert all(t['gid_index'] is None for t in rdma_perftest_tests(command_source))
