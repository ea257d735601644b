# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One runner per external tool, declared once in the tool's module_utils (after community.general's CmdRunner).

A ``ToolRunner`` names a tool and the parts its command lines are built from, each part a function from its value
to argv words. A module binds it to itself and the tool's path (``MLNX_QOS(module, path)``) and runs command lines by
naming their parts (``qos.run('interface', interface='eth0')``). Every run goes through the one mechanism of
``_host_io`` (argument list, ``LC_ALL=C``, coreutils ``timeout`` from the module's ``timeout`` option); a run that
changes the node can be skipped in check mode (``check_mode_skip``). ``tests/unit/test_one_mechanism.py`` fails when
a plugin runs a command any other way.
"""

from __future__ import annotations

import os

from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import run_argv, run_in_step, run_stoppable, run_tool


def option(flag):
    """``-d VALUE``: a flag and its value."""
    return lambda value: [flag, str(value)]


def value_word():
    """The value itself, one word."""
    return lambda value: [str(value)]


def value_words():
    """A list value, one word per item (nothing for an empty or absent list)."""
    return lambda value: [str(item) for item in value or ()]


def fixed(*words):
    """Always the same words, whatever the value."""
    return lambda _value: list(words)


def flag_if(flag):
    """``flag`` when the value is true, nothing otherwise."""
    return lambda value: [flag] if value else []


class ToolRunner(object):
    """An external tool's argv parts; ``runner(module, executable)`` binds it for a module run."""

    def __init__(self, tool, parts):
        self.tool = tool
        self.parts = dict(parts)

    def argv(self, executable, spec, values):
        """``[executable] + the words of each part named in ``spec`` (space separated), in that order``."""
        argv = [executable]
        for name in spec.split():
            if name not in self.parts:
                raise KeyError('the %s runner has no argv part %r (parts: %s)'
                               % (self.tool, name, ', '.join(sorted(self.parts))))
            argv.extend(self.parts[name](values.get(name)))
        return argv

    def __call__(self, module, executable):
        return BoundTool(self, module, executable)


class BoundTool(object):
    """A ToolRunner bound to a module and the tool's path."""

    def __init__(self, runner, module, executable):
        self.runner = runner
        self.module = module
        self.executable = executable

    @property
    def name(self):
        """The tool as the messages name it: the file actually run (mstconfig for mlxconfig, say)."""
        return os.path.basename(self.executable) or self.runner.tool

    def argv(self, spec, **values):
        return self.runner.argv(self.executable, spec, values)

    def run(self, spec, data=None, timeout=None, check_mode_skip=False, **values):
        """``(argv, rc, out, err)``; a tool that cannot start or hangs fails the module naming it (``run_tool``).

        With ``check_mode_skip`` nothing runs in check mode and the answer is ``(argv, None, '', '')``.
        """
        argv = self.argv(spec, **values)
        if check_mode_skip and self.module.check_mode:
            return argv, None, '', ''
        rc, out, err = run_tool(self.module, argv, data=data, what=self.name, timeout=timeout)
        return argv, rc, out, err

    def run_stoppable(self, spec, data=None, timeout=None, **values):
        """``(argv, stopped, rc, out, err)``, for a run whose stop the caller explains itself."""
        argv = self.argv(spec, **values)
        stopped, rc, out, err = run_stoppable(self.module, argv, data=data, what=self.name, timeout=timeout)
        return argv, stopped, rc, out, err

    def run_in_step(self, spec, **values):
        """``(argv, out, err)`` inside a Step of a multi-step write: RuntimeError instead of a failed module."""
        argv = self.argv(spec, **values)
        out, err = run_in_step(self.module, argv)
        return argv, out, err

    def run_in_thread(self, spec, seconds, data=None, **values):
        """``(argv, rc, out, err, stopped)`` for a thread, where fail_json cannot end the module; raises OSError."""
        argv = self.argv(spec, **values)
        rc, out, err, stopped = run_argv(self.module, argv, seconds, data=data)
        return argv, rc, out, err, stopped
