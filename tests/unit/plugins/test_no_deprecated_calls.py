# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection's plugins call nothing ansible-core 2.21 deprecates that the unit session lets through because an
upstream collection does it (tests/unit/conftest.py UPSTREAM_DEPRECATIONS): warnings go through module.warn()."""

from __future__ import annotations

import ast
import glob
import os

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))


def test_no_plugin_passes_warnings_to_exit_json_or_fail_json():
    offenders = []
    for path in sorted(glob.glob(os.path.join(REPO, 'plugins', '**', '*.py'), recursive=True)):
        with open(path) as handle:
            tree = ast.parse(handle.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ('exit_json', 'fail_json'):
                if any(k.arg == 'warnings' for k in node.keywords):
                    offenders.append('%s:%d' % (os.path.relpath(path, REPO), node.lineno))
    assert not offenders, 'warnings passed to exit_json/fail_json (use module.warn): %s' % offenders
    # the walk sees the modules' calls at all
    with open(os.path.join(REPO, 'plugins', 'modules', 'mlxconfig.py')) as handle:
        assert 'exit_json' in handle.read()
