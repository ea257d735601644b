# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/timed.py: the per-part table `make test` ends with, and its verdict."""

from __future__ import annotations

import os
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
TIMED = os.path.join(REPO, 'tests', 'timed.py')


def timed(*args):
    return subprocess.run([sys.executable, TIMED] + list(args), capture_output=True, text=True, check=False,
                          timeout=60)


def test_a_failed_part_fails_the_table_and_is_named(tmp_path):
    assert timed('run', str(tmp_path), 'busy', '--', sys.executable, '-c',
                 'sum(range(3 * 10 ** 6))').returncode == 0
    assert timed('run', str(tmp_path), 'broken', '--', 'sh', '-c', 'exit 3').returncode == 3
    table = timed('table', str(tmp_path))
    assert table.returncode == 1
    rows = dict((line.split()[0], line) for line in table.stdout.splitlines()[1:])
    assert rows['broken'].endswith('FAILED (rc 3)') and rows['busy'].endswith('ok')
    assert rows['make'].endswith('FAILED: broken')
    # columns: part, start, wall, cpu as m:ss
    assert all(len(rows[p].split()) >= 5 and rows[p].split()[3].count(':') == 1 for p in ('busy', 'broken'))


def test_all_parts_ok_and_no_parts_at_all(tmp_path):
    assert timed('run', str(tmp_path / 'ok'), 'one', '--', 'true').returncode == 0
    table = timed('table', str(tmp_path / 'ok'))
    assert table.returncode == 0 and table.stdout.splitlines()[-1].split()[-1] == 'ok'
    # nothing recorded is not a success: make test did not run its parts
    (tmp_path / 'empty').mkdir()
    assert timed('table', str(tmp_path / 'empty')).returncode == 1
    assert timed('bogus').returncode == 2
