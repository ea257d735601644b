# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""pytest hooks: no test counts when it does not run.

A skip or an expected failure fails the whole session (CI runs a fresh clone with nothing beside it, where every
test must run). tests/unit/conftest.py imports these hooks.
"""

from __future__ import annotations

_NOT_RUN = []


def pytest_runtest_logreport(report):
    if report.skipped:
        _NOT_RUN.append('%s (%s)' % (report.nodeid, 'xfail' if hasattr(report, 'wasxfail') else 'skipped'))
    elif hasattr(report, 'wasxfail') and report.when == 'call':
        # an xfail mark on a test that passes (XPASS): the mark hides whether it is meant to pass
        _NOT_RUN.append('%s (xfail mark on a passing test)' % report.nodeid)


def pytest_collectreport(report):
    """A whole file that skips itself at collection (``pytest.skip(allow_module_level=True)``, ``importorskip``)."""
    if report.skipped:
        _NOT_RUN.append('%s (skipped at collection: %s)' % (report.nodeid or 'a test file', _reason(report)))


def _reason(report):
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return longrepr[2]
    return str(longrepr)


def pytest_sessionfinish(session, exitstatus):
    if _NOT_RUN and exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    if _NOT_RUN:
        terminalreporter.write_line('Tests that did not run (each must run; fix the cause instead of skipping):',
                                    red=True)
        for name in _NOT_RUN:
            terminalreporter.write_line('  ' + name, red=True)
