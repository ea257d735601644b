# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The tree says the architecture, and this test keeps it saying it.

Node-side code (``plugins/module_utils``: the shared mechanisms at the top, one subpackage per stage) is what AnsiballZ
ships to a node, so it can import only node-side code. Controller-only code (``plugins/plugin_utils``) may use node-side
parsers but never a plugin. Modules import node-side code only; filters and action plugins import either. And nothing
imports in a circle.
"""

from __future__ import annotations

import ast
import glob
import os

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
PREFIX = 'ansible_collections.gpunet.rdma.'
STAGES = ('facts', 'firmware', 'drivers', 'runtime', 'tuning', 'cluster', 'validation')
SHARED = ('plugins.module_utils._host_io', 'plugins.module_utils._tool_runner', 'plugins.module_utils._module',
          'plugins.module_utils._atomic_file')
# Which layer may import which (by the dotted path's start).
MAY_IMPORT = {
    'shared': ('shared',),
    'node': ('shared', 'node'),
    'controller': ('shared', 'node', 'controller'),
    'module': ('shared', 'node'),
    'plugin': ('shared', 'node', 'controller', 'plugin'),
}


def layer(dotted):
    """The layer of a module named like ``plugins.module_utils.facts._rdma_inventory``, or None outside plugins/."""
    parts = dotted.split('.')
    if parts[:1] != ['plugins'] or len(parts) < 3:
        return None
    if dotted in SHARED:
        return 'shared'
    if parts[1] == 'module_utils':
        if len(parts) == 3 and parts[2] in STAGES:
            return None  # the stage's package, not a module
        return 'node' if len(parts) == 4 and parts[2] in STAGES else 'misplaced'
    return {'plugin_utils': 'controller', 'modules': 'module', 'filter': 'plugin', 'action': 'plugin',
            'doc_fragments': 'plugin'}.get(parts[1], 'misplaced')


def imports_of(root):
    """``{module: [(line, imported module)]}`` for every .py under ``root/plugins``, names relative to the collection."""
    graph = {}
    for path in sorted(glob.glob(os.path.join(root, 'plugins', '**', '*.py'), recursive=True)):
        name = os.path.relpath(path, root)[:-3].replace(os.sep, '.')
        with open(path, encoding='utf-8') as handle:
            tree = ast.parse(handle.read(), path)
        found = []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
                base = node.module[len(PREFIX):]
                for alias in node.names:
                    # `from ...module_utils.facts import _rdma_inventory` names the module itself
                    candidate = '%s.%s' % (base, alias.name)
                    found.append((node.lineno, candidate if layer(candidate) and not layer(base) else base))
            elif isinstance(node, ast.Import):
                found.extend((node.lineno, alias.name[len(PREFIX):]) for alias in node.names
                             if alias.name.startswith(PREFIX))
        graph[name] = found
    return graph


def layer_problems(graph):
    problems = []
    for name, found in sorted(graph.items()):
        own = layer(name)
        if own in (None, 'misplaced'):
            problems.append('%s: not in a layer (node-side code goes in a stage subpackage of module_utils)' % name)
            continue
        for line, target in found:
            theirs = layer(target)
            if theirs not in MAY_IMPORT[own]:
                problems.append('%s line %d: a %s file imports %s (%s)' % (name, line, own, target, theirs))
    return problems


def cycles(graph):
    """Every import cycle, each as the list of modules along it (depth-first search, white/grey/black)."""
    state, found, stack = {}, [], []

    def visit(name):
        state[name] = 'grey'
        stack.append(name)
        for _line, target in graph.get(name, ()):
            if state.get(target) == 'grey':
                found.append(stack[stack.index(target):] + [target])
            elif target in graph and target not in state:
                visit(target)
        stack.pop()
        state[name] = 'black'

    for name in sorted(graph):
        if name not in state:
            visit(name)
    return found


def test_every_plugin_file_sits_in_its_layer_and_imports_downwards_only():
    graph = imports_of(REPO)
    assert 'plugins.module_utils.facts._rdma_inventory' in graph and 'plugins.plugin_utils._fleet_report' in graph
    assert layer_problems(graph) == []


def test_the_imports_have_no_cycle():
    assert cycles(imports_of(REPO)) == []


def test_the_checks_find_an_upward_import_a_misplaced_file_and_a_cycle(tmp_path):
    """The oracle for the two tests above: a tree written by hand with one of each fault, and the answers by hand."""
    files = {
        'plugins/module_utils/facts/_a.py': 'from ansible_collections.gpunet.rdma.plugins.plugin_utils._report import x\n',
        'plugins/module_utils/_loose.py': 'X = 1\n',
        'plugins/plugin_utils/_report.py': 'from ansible_collections.gpunet.rdma.plugins.plugin_utils import _other\n',
        'plugins/plugin_utils/_other.py': 'import ansible_collections.gpunet.rdma.plugins.plugin_utils._report\n',
        'plugins/modules/m.py': ('from ansible_collections.gpunet.rdma.plugins.module_utils.facts import _a\n'
                                 'from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import read_text\n'),
    }
    for relpath, text in files.items():
        (tmp_path / relpath).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relpath).write_text(text)
    graph = imports_of(str(tmp_path))
    assert layer_problems(graph) == [
        'plugins.module_utils._loose: not in a layer (node-side code goes in a stage subpackage of module_utils)',
        'plugins.module_utils.facts._a line 1: a node file imports plugins.plugin_utils._report (controller)',
    ]
    assert cycles(graph) == [['plugins.plugin_utils._report', 'plugins.plugin_utils._other', 'plugins.plugin_utils._report']]
