# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPUDirect RDMA on some connections only is not GPUDirect RDMA: a group that expects it fails, naming the rank.

The recorded AKS launcher log (tests/unit/fixtures/public/nccl, NCCL 2.25.1) has four ranks with two inter-node
connections each, every one via NET/IB/<n>/GDRDMA. Taking /GDRDMA off one connection of the rank on
nccl-tests-worker-1's GPU 2 (Channel 10/0, by hand) leaves that rank with one of its two connections through host
memory: the verdict is partial, and with expect_gdr the rank is named.
"""

from __future__ import annotations

import os

from ansible_collections.gpunet.rdma.plugins.plugin_utils._nccl import nccl_result

LOG = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'public', 'nccl',
                   'aks-rdma-infiniband-30-mpijob-launcher-2.25.1.log')
GDR_LINE = 'nccl-tests-worker-1:77:215 [2] NCCL INFO Channel 10/0 : 3[3] -> 10[2] [receive] via NET/IB/10/GDRDMA'


def recorded():
    with open(LOG) as handle:
        return handle.read()


def test_the_recording_uses_gpudirect_rdma_on_every_connection():
    result = nccl_result(recorded(), 200, expect_gdr=True)
    assert result['gdr'] == 'on'
    assert not [p for p in result['problems'] if p.startswith('no /GDRDMA')]


def test_one_connection_without_gdrdma_makes_it_partial_and_fails_where_expected():
    text = recorded()
    assert text.count(GDR_LINE) == 1
    text = text.replace(GDR_LINE, GDR_LINE[:-len('/GDRDMA')])
    expected = nccl_result(text, 200, expect_gdr=True)
    assert expected['gdr'] == 'partial'
    gdr_problems = [p for p in expected['problems'] if p.startswith('no /GDRDMA')]
    assert len(gdr_problems) == 1 and gdr_problems[0].startswith('no /GDRDMA on nccl-tests-worker-1 [2]: ')
    not_expected = nccl_result(text, 200, expect_gdr=False)
    assert not_expected['gdr'] == 'partial'
    assert not [p for p in not_expected['problems'] if p.startswith('no /GDRDMA')]
