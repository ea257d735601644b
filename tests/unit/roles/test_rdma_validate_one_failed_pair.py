# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One slow pair fails its client's validation stage, even when the client's other pairs pass.

The rdma_validate role's host level on two V100 nodes (the harness of test_rdma_validate_pairs_play.py): v100-a is
the client of two pairs, the listed one on mlx5_1 and the ring's rail 0 on mlx5_0. The lab's perftest double runs
mlx5_0's port at 45 % of its line rate (its faults file), below the 90 % threshold: that pair fails, the other passes,
and v100-a's stage is failed with the slow pair as its problem.
"""

from __future__ import annotations

import json

from test_rdma_validate_pairs_play import run_validation


def test_one_slow_pair_among_passing_ones_fails_the_clients_stage(tmp_path):
    (tmp_path / 'perftest').mkdir()
    (tmp_path / 'perftest' / 'faults.json').write_text(json.dumps({'mlx5_0/1': {'share': 0.45}}))
    a, b = run_validation(tmp_path, gpunet_rdma_load_tests=True)
    verdicts = [(t['server'], t['device'], t['ok']) for t in a['detail']['tests']]
    assert verdicts == [('v100-b', 'mlx5_1', True), ('v100-b', 'mlx5_0', False)]
    assert a['status'] == 'failed'
    assert len(a['problems']) == 1
    assert a['problems'][0].startswith('45.00 Gb/s is 45.0 % of the 100 Gb/s line rate, below 90 %')
    assert b['status'] != 'failed' and b['detail']['tests'] == []
