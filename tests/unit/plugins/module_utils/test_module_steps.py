# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""RdmaModule.apply_steps, the one mechanism of multi-step writes: applied as a whole, undone in reverse on a failure
(an exception or the module's own fail_json in a later step), one failure message that says what was undone."""

from __future__ import annotations

from ansible_collections.gpunet.rdma.plugins.module_utils._module import RdmaModule, Step


def run_steps(run_module, build_steps):
    """Run a module whose only work is ``apply_steps(build_steps(module, log))``; returns (result, log).

    run_module fails the test unless the module printed exactly one result, whatever failed on the way."""
    log = []

    def main():
        module = RdmaModule(argument_spec={})
        module.exit_json(changed=True, done=module.apply_steps(build_steps(module, log)))
    return run_module(main)[1], log


def setting(log, name):
    return Step('set %s' % name, lambda: log.append('apply ' + name), lambda: log.append('undo ' + name))


def test_every_step_applied_in_order(run_module):
    result, log = run_steps(run_module, lambda module, log: [setting(log, 'a'), setting(log, 'b')])
    assert result['changed'] is True and result['done'] == ['set a', 'set b']
    assert log == ['apply a', 'apply b']


def test_a_failing_step_undoes_the_earlier_ones_in_reverse(run_module):
    def broken():
        raise OSError(5, 'Input/output error')

    result, log = run_steps(run_module, lambda module, log: [setting(log, 'a'), setting(log, 'b'),
                                                             Step('set c', broken), setting(log, 'd')])
    assert result['failed'] is True
    assert result['msg'] == ('set c failed: [Errno 5] Input/output error. Changed before the failure and undone: '
                             'set b; set a.')
    assert log == ['apply a', 'apply b', 'undo b', 'undo a']


def test_fail_json_inside_a_later_step_rolls_back_too(run_module):
    def refuse(module):
        return lambda: module.fail_json(msg='port 2 refuses trust dscp.')

    result, log = run_steps(run_module, lambda module, log: [setting(log, 'a'), Step('set b', refuse(module))])
    assert result['msg'] == 'port 2 refuses trust dscp. Changed before the failure and undone: set a.'
    assert log == ['apply a', 'undo a']


def test_an_undo_that_fails_is_named_and_the_others_still_run(run_module):
    def undo_fails(module):
        return lambda: module.fail_json(msg='mlnx_qos -i eth0 timed out')

    def broken():
        raise RuntimeError('setpci exited 1')

    result, log = run_steps(run_module, lambda module, log: [
        setting(log, 'a'), Step('set b', lambda: log.append('apply b'), undo_fails(module)),
        Step('set c', lambda: log.append('apply c')), Step('set d', broken)])
    assert result['msg'] == ('set d failed: setpci exited 1. Changed before the failure and undone: set a. Changed and '
                             'NOT undone, fix by hand: set c (it cannot be undone); set b (mlnx_qos -i eth0 timed out).')
    assert log == ['apply a', 'apply b', 'apply c', 'undo a']


def test_a_failure_before_any_step_says_nothing_changed(run_module):
    def broken():
        raise ValueError('bad plan')

    result, log = run_steps(run_module, lambda module, log: [Step('set a', broken)])
    assert result['msg'] == 'set a failed: bad plan. Nothing was changed.'
    assert not log
