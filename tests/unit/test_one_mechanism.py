# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One mechanism per concern: nothing in plugins/ reads a node file, lists a directory, runs a command or writes a file
except through the shared helpers, and every filter is behind the shared argument checks.

The helpers are where the collection's promises live: a read names the file and the reason (EACCES, a directory, a NUL
byte, not UTF-8, too large), a tool run has LC_ALL=C and a timeout, a write is atomic or rolled back. A module that
calls open() or module.run_command itself silently loses them, which is how the last round's raw errors and hangs
came back; this test finds such a call by reading the source (AST), whoever wrote it.
"""

from __future__ import annotations

import ast
import glob
import importlib
import os

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
PLUGINS = os.path.join(REPO, 'plugins')

# The helpers themselves: the only files allowed to touch the operating system directly, each for its concern.
HELPERS = {
    'plugins/module_utils/_host_io.py': 'reads, directory listings, links, tool runs, sysfs attribute writes',
    'plugins/module_utils/_atomic_file.py': 'file writes (atomic, restored on failure)',
}
# Calls that bypass them: builtin open, os-level file and directory access, and every way to start a process.
FORBIDDEN_ATTRIBUTES = {
    'os': {'listdir', 'scandir', 'readlink', 'open', 'fdopen', 'walk', 'system', 'popen', 'execv', 'execvp',
           'spawnv'},
    'subprocess': {'run', 'Popen', 'call', 'check_call', 'check_output', 'getoutput', 'getstatusoutput'},
    'glob': {'glob', 'iglob'},
    'io': {'open'},
    'shutil': {'copy', 'copyfile', 'copy2', 'move'},
}
FORBIDDEN_METHODS = {'run_command', 'read_text', 'write_text', 'read_bytes', 'write_bytes'}


def bypasses(path):
    """``[(line, call)]`` of the calls in ``path`` that go around the helpers."""
    with open(path, encoding='utf-8') as handle:
        tree = ast.parse(handle.read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [alias.name for alias in node.names] + [getattr(node, 'module', None) or '']
            if 'subprocess' in modules:
                found.append((node.lineno, 'import subprocess'))
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == 'open':
            found.append((node.lineno, 'open()'))
        elif isinstance(func, ast.Attribute):
            owner = func.value.id if isinstance(func.value, ast.Name) else None
            if func.attr in FORBIDDEN_ATTRIBUTES.get(owner, ()):
                found.append((node.lineno, '%s.%s()' % (owner, func.attr)))
            elif func.attr in FORBIDDEN_METHODS and owner not in ('self',):
                # pathlib's Path.read_text and module.run_command; the helpers' own functions are called by name
                found.append((node.lineno, '.%s()' % func.attr))
    return found


def plugin_files():
    return sorted(os.path.relpath(path, REPO) for path in glob.glob(os.path.join(PLUGINS, '**', '*.py'), recursive=True))


@pytest.mark.parametrize('relpath', [path for path in plugin_files() if path not in HELPERS])
def test_no_plugin_goes_around_the_helpers(relpath):
    found = bypasses(os.path.join(REPO, relpath))
    assert not found, '%s calls %s; use the helpers of %s instead' % (
        relpath, ', '.join('%s (line %d)' % (call, line) for line, call in found), ', '.join(sorted(HELPERS)))


def test_the_check_finds_every_kind_of_bypass(tmp_path):
    """The oracle for the test above: a file written by hand with one bypass per kind, and one that has none."""
    source = tmp_path / 'module.py'
    source.write_text('\n'.join([
        'import os',
        'import subprocess',
        'def f(module, p):',
        '    open(p).read()',
        '    os.listdir(p)',
        '    os.readlink(p)',
        '    module.run_command(["x"])',
        '    subprocess.run(["x"])',
        '    import pathlib',
        '    pathlib.Path(p).read_text()',
        '']))
    calls = [call for _line, call in bypasses(str(source))]
    assert calls.count('import subprocess') == 1
    assert sorted(set(calls) - {'import subprocess'}) == sorted(
        ['open()', 'os.listdir()', 'os.readlink()', '.run_command()', 'subprocess.run()', '.read_text()'])
    clean = tmp_path / 'clean.py'
    clean.write_text('from x import read_text, run_tool\ndef f(module, p):\n    return read_text(p), run_tool(module, [p])\n')
    assert bypasses(str(clean)) == []


# Tools are run through the one runner of each tool (module_utils/_tool_runner.py over _host_io's run functions): a
# plugin that calls the run functions itself builds its argv by hand again.
RUN_FUNCTIONS = {'run_tool', 'run_argv', 'run_stoppable', 'run_in_step'}
RUNNER_FILES = ('plugins/module_utils/_host_io.py', 'plugins/module_utils/_tool_runner.py')


def direct_runs(path):
    """``[(line, name)]`` of the _host_io run functions that ``path`` imports or calls by name."""
    with open(path, encoding='utf-8') as handle:
        tree = ast.parse(handle.read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found.extend((node.lineno, alias.name) for alias in node.names if alias.name in RUN_FUNCTIONS)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in RUN_FUNCTIONS:
            found.append((node.lineno, node.func.id))
    return found


@pytest.mark.parametrize('relpath', [path for path in plugin_files() if path not in RUNNER_FILES])
def test_every_tool_runs_through_its_runner(relpath):
    found = direct_runs(os.path.join(REPO, relpath))
    assert not found, '%s runs tools itself (%s); declare a ToolRunner in the tool\'s module_utils instead' % (
        relpath, ', '.join('%s line %d' % (name, line) for line, name in found))


def test_the_runner_check_finds_an_import_and_a_call(tmp_path):
    source = tmp_path / 'module.py'
    source.write_text('from x._host_io import run_tool, read_text\nfrom y import run_argv as go\n'
                      'def f(module):\n    return run_in_step(module, ["x"]), QOS(module, "p").run("interface")\n')
    assert direct_runs(str(source)) == [(1, 'run_tool'), (2, 'run_argv'), (4, 'run_in_step')]


def filter_modules():
    for path in sorted(glob.glob(os.path.join(PLUGINS, 'filter', '*.py'))):
        name = os.path.splitext(os.path.basename(path))[0]
        yield name, importlib.import_module('ansible_collections.gpunet.rdma.plugins.filter.%s' % name)


def test_every_filter_is_behind_the_shared_argument_checks():
    unchecked, seen = [], 0
    for module_name, module in filter_modules():
        for filter_name, func in module.FilterModule().filters().items():
            seen += 1
            checked_as = getattr(func, 'checked_filter_name', None)
            if checked_as != filter_name:
                unchecked.append('%s (%s.py, checked as %r)' % (filter_name, module_name, checked_as))
    assert seen >= 30
    assert not unchecked, 'filters without filter_args (or registered under another name): %s' % ', '.join(unchecked)
