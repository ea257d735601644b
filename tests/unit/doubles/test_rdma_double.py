# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The `rdma system` test double (tests/doubles/rdma) answers as the kernel does.

rdma_compatdev_set (drivers/infiniband/core/device.c) returns 0 when the mode asked for is the one it has, and
-EBUSY for a change in either direction while any network namespace other than init_net exists.
"""

from __future__ import annotations

import os
import subprocess

import pytest

RDMA = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', 'doubles', 'rdma'))


def rdma(tmp_path, *args):
    env = dict(os.environ, GPUNET_TEST_RDMA_DIR=str(tmp_path), GPUNET_TEST_DOUBLES_LOG=str(tmp_path / 'log'))
    completed = subprocess.run(['sh', RDMA] + list(args), capture_output=True, text=True, env=env, check=False)
    return completed.returncode, completed.stdout, completed.stderr


def start(tmp_path, mode, busy):
    if mode != 'shared':
        (tmp_path / 'rdma-netns').write_text(mode + '\n')
    if busy:
        (tmp_path / 'rdma-netns-busy').write_text('')


@pytest.mark.parametrize('mode, other', [('shared', 'exclusive'), ('exclusive', 'shared')])
def test_busy_refuses_a_switch_in_either_direction(tmp_path, mode, other):
    start(tmp_path, mode, busy=True)
    assert rdma(tmp_path, 'system', 'set', 'netns', other) == (1, '', 'error: Device or resource busy\n')
    assert rdma(tmp_path, 'system', 'show') == (0, 'netns %s copy-on-fork on\n' % mode, '')


@pytest.mark.parametrize('mode', ['shared', 'exclusive'])
def test_the_mode_it_has_is_a_no_op_busy_or_not(tmp_path, mode):
    start(tmp_path, mode, busy=True)
    assert rdma(tmp_path, 'system', 'set', 'netns', mode) == (0, '', '')
    assert rdma(tmp_path, 'system') == (0, 'netns %s copy-on-fork on\n' % mode, '')


def test_switches_both_ways_without_other_namespaces_and_logs_every_call(tmp_path):
    assert rdma(tmp_path, 'system', 'set', 'netns', 'exclusive')[0] == 0
    assert rdma(tmp_path, 'system', 'show')[1] == 'netns exclusive copy-on-fork on\n'
    assert rdma(tmp_path, 'system', 'set', 'netns', 'shared')[0] == 0
    assert rdma(tmp_path, 'system', 'show')[1] == 'netns shared copy-on-fork on\n'
    assert rdma(tmp_path, 'system', 'set', 'netns', 'private')[0] == 1
    assert (tmp_path / 'log' / 'rdma.calls').read_text().splitlines() == [
        'rdma system set netns exclusive', 'rdma system show', 'rdma system set netns shared', 'rdma system show',
        'rdma system set netns private']
