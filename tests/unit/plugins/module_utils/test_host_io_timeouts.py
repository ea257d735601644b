# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""run_tool's timeout with real processes under coreutils timeout: a tool still running after the module's timeout
option is stopped, and the module fails naming the tool, the limit and the option - not a tool that "exited 124" by
itself. run_stoppable (a perftest client stuck in its exchange, a firmware burn) says it was stopped instead.
"""

from __future__ import annotations

import json

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import run_stoppable, run_tool
from ansible_collections.gpunet.rdma.plugins.module_utils._module import RdmaModule

HANGS = ['/bin/sh', '-c', 'exec sleep 30']


def run_with_timeout_option(seconds, argv, runner=run_tool, **kwargs):
    with patch_module_args({'timeout': seconds}):
        module = RdmaModule(argument_spec=dict(timeout=dict(type='int', default=300)))
        return runner(module, argv, **kwargs)


def test_a_tool_stopped_by_the_timeout_option_fails_the_module_naming_it(capsys):
    with pytest.raises(SystemExit):
        run_with_timeout_option(1, HANGS, what='wedged-tool')
    result = json.loads(capsys.readouterr().out)
    assert result['failed'] is True
    assert result['msg'].startswith('wedged-tool did not finish within 1 seconds and was stopped (/bin/sh -c exec '
                                    'sleep 30)')
    assert "raise the module's timeout option if it is only slow" in result['msg']


def test_an_expected_stop_returns_no_exit_status():
    stopped, _rc, out, err = run_with_timeout_option(1, HANGS, runner=run_stoppable, what='perftest client')
    assert (stopped, out, err) == (True, '', '')


def test_a_tool_that_exits_by_itself_keeps_its_status_and_output():
    assert run_with_timeout_option(5, ['/bin/sh', '-c', 'echo out; echo err >&2; exit 3']) == (3, 'out\n', 'err\n')


def test_a_tool_that_ignores_term_is_killed_and_still_reported_as_stopped(capsys):
    """coreutils timeout sends its follow-up KILL to its whole process group, itself included: the module sees -9,
    not 137. That is still the timeout (it came after the limit), not an exit status of the tool."""
    with pytest.raises(SystemExit):
        run_with_timeout_option(1, ['/bin/sh', '-c', "trap '' TERM; while :; do sleep 1; done"], what='deaf-tool')
    result = json.loads(capsys.readouterr().out)
    assert result['msg'].startswith('deaf-tool did not finish within 1 seconds and was stopped'), result['msg']
