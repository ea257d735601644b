# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every role's defaults/main.yml and meta/argument_specs.yml (all entry points together) name the same
variables, with the same default values in every entry point, and every variable carries the role's name as prefix."""

from __future__ import annotations

import os

import pytest
import yaml

ROLES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'roles')


def _load(role, *path):
    with open(os.path.join(ROLES, role, *path)) as handle:
        return yaml.safe_load(handle) or {}


@pytest.mark.parametrize('role', sorted(os.listdir(ROLES)))
def test_defaults_and_argument_specs_agree(role):
    defaults = _load(role, 'defaults', 'main.yml')
    entry_points = _load(role, 'meta', 'argument_specs.yml')['argument_specs']
    options = {}
    for entry in entry_points.values():
        for name, spec in (entry.get('options') or {}).items():
            options.setdefault(name, []).append(spec)
    assert sorted(defaults) == sorted(options)
    for name, value in defaults.items():
        assert name.startswith(role + '_')
        assert [spec.get('default') for spec in options[name]] == [value] * len(options[name]), name
