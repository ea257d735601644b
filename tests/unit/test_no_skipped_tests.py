# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A skipped test fails the run: the hook of tests/unit/conftest.py, exercised on a throwaway test directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(tmp_path, body, extra=None):
    shutil.copy(os.path.join(HERE, '_no_skip.py'), str(tmp_path / '_no_skip.py'))
    (tmp_path / 'conftest.py').write_text('from _no_skip import pytest_collectreport, pytest_runtest_logreport, '
                                          'pytest_sessionfinish, pytest_terminal_summary  # noqa: F401\n')
    (tmp_path / 'test_probe.py').write_text('import pytest\n\n\ndef test_runs():\n    assert True\n\n\n' + body)
    if extra:
        (tmp_path / 'test_other.py').write_text(extra)
    return subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', str(tmp_path)],
                          capture_output=True, text=True, check=False, cwd=str(tmp_path))


def test_a_skip_fails_the_session(tmp_path):
    done = run(tmp_path, 'def test_skipped():\n    pytest.skip("no hardware")\n')
    assert done.returncode == 1, done.stdout
    assert 'test_probe.py::test_skipped (skipped)' in done.stdout


def test_an_expected_failure_fails_the_session(tmp_path):
    done = run(tmp_path, '@pytest.mark.xfail\ndef test_xfail():\n    assert False\n')
    assert done.returncode == 1 and 'test_probe.py::test_xfail (xfail)' in done.stdout


def test_a_session_where_everything_runs_passes(tmp_path):
    assert run(tmp_path, '').returncode == 0


def test_a_file_that_skips_itself_at_collection_fails_the_session(tmp_path):
    done = run(tmp_path, '', extra='import pytest\n\npytest.skip("no GPU here", allow_module_level=True)\n\n\n'
                                   'def test_never():\n    assert False\n')
    assert done.returncode == 1, done.stdout
    assert 'test_other.py (skipped at collection: Skipped: no GPU here)' in done.stdout


def test_importorskip_of_a_missing_package_fails_the_session(tmp_path):
    done = run(tmp_path, '', extra='import pytest\n\npytest.importorskip("gpunet_no_such_package")\n\n\n'
                                   'def test_never():\n    assert False\n')
    assert done.returncode == 1, done.stdout
    assert "test_other.py (skipped at collection: Skipped: could not import 'gpunet_no_such_package'" in done.stdout


def test_an_xfail_mark_on_a_passing_test_fails_the_session(tmp_path):
    done = run(tmp_path, '@pytest.mark.xfail(strict=False)\ndef test_marked():\n    assert True\n')
    assert done.returncode == 1, done.stdout
    assert 'test_probe.py::test_marked (xfail mark on a passing test)' in done.stdout
