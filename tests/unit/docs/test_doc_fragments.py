# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The shared option docs (plugins/doc_fragments): one text per option, as ansible-test can read it."""

from __future__ import annotations

import ast
import glob
import os

import yaml

from ansible_collections.gpunet.rdma.plugins.doc_fragments.driver_stack import ModuleDocFragment as DriverStack
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._driver_facts import DRIVER_OPTIONS

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))


def test_the_driver_options_read_the_same_in_both_places():
    own = yaml.safe_load(DriverStack.DOCUMENTATION)['options']
    nested = yaml.safe_load(DriverStack.IN_FACTS)['options']['driver']['suboptions']
    assert sorted(own) == sorted(nested) == sorted(DRIVER_OPTIONS)
    assert own.pop('sysfs_root') == dict(nested.pop('sysfs_root'), default='/sys')  # the facts call passes its own
    assert own == nested


def test_every_fragment_is_a_plain_string_ansible_test_can_read():
    """yamllint and validate-modules read the class attributes from the source (AST), not by importing the file."""
    paths = sorted(glob.glob(os.path.join(REPO, 'plugins', 'doc_fragments', '*.py')))
    assert len(paths) >= 3
    for path in paths:
        with open(path, encoding='utf-8') as handle:
            tree = ast.parse(handle.read(), path)
        classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
        assert [node.name for node in classes] == ['ModuleDocFragment'], path
        for node in classes[0].body:
            if isinstance(node, ast.Assign):
                assert isinstance(node.value, ast.Constant) and isinstance(node.value.value, str), (
                    '%s: %s is not a plain string' % (path, node.targets[0].id))
                assert isinstance(yaml.safe_load(node.value.value)['options'], dict)
