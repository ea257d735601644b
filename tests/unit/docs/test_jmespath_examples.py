# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The JMESPath queries the docs and the module EXAMPLES show, run with jmespath on facts read from the lab's
RoCE and A100 sysfs trees: what a reader copies works and selects what the text says."""

from __future__ import annotations

import json
import os
import re

import jmespath
import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpunet.rdma.plugins.modules import ibdev2netdev_facts

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
QUERY = re.compile(r'json_query\(\s*"((?:[^"\\]|\\.)*)"\s*\)|json_query\(\'([^\']*)\'\)', re.S)


def queries(path):
    with open(os.path.join(REPO, path)) as handle:
        text = handle.read()
    return [re.sub(r'\s*\n\s*', ' ', a or b) for a, b in QUERY.findall(text)]


def facts(tmp_path, hardware, profile, capsys):
    with patch_module_args({'sysfs_root': hardware(profile, tmp_path / profile)}):
        with pytest.raises(SystemExit):
            ibdev2netdev_facts.main()
    return json.loads(capsys.readouterr().out)['ansible_facts']


@pytest.mark.parametrize('path', ['docs/discovery.md', 'plugins/modules/ibdev2netdev_facts.py'])
def test_documented_roce_gid_query_picks_the_roce_v2_ipv4_gid(tmp_path, hardware, capsys, path):
    found = [q for q in queries(path) if 'RoCE v2' in q]
    assert len(found) == 1, found
    ports = facts(tmp_path, hardware, 'roce_a100', capsys)['rdma_ports']
    result = jmespath.search(found[0], ports)
    active_ethernet = [p for p in ports if p['link_layer'] == 'Ethernet' and p['state'] == 'ACTIVE']
    assert len(result) == len(active_ethernet) > 0
    first = result[0]
    assert first['port'] == 'mlx5_0:1' and first['gid']['type'] == 'RoCE v2'
    # mlx5_0's table has a gap: its RoCE v2 IPv4 GID is at index 7 (lab/hardware/roce_a100.yml).
    assert first['gid']['index'] == 7 and first['gid']['ipv4'] == '172.16.11.11'


def test_documented_management_path_query():
    found = [q for q in queries('docs/discovery.md') if 'over_rdma' in q]
    assert len(found) == 1
    path = {'interfaces': [
        {'name': 'bond0', 'sources': ['connection'], 'rdma_devices': ['mlx5_bond_0'], 'over_rdma': True},
        {'name': 'eth0', 'sources': ['default_route'], 'rdma_devices': [], 'over_rdma': False}]}
    assert jmespath.search(found[0], path) == [
        {'interface': 'bond0', 'carries': ['connection'], 'devices': ['mlx5_bond_0']}]
