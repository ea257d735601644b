# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The files kubespray, k3s and RKE2 write, as recorded or rendered (fixtures/public/containerd_owners/).

Every file has an entry in SOURCES.md, and each one's content is what the hand-written expectations below say:
which version, which runtimes, which base_runtime_spec, what kubespray's spec files hold.
"""

from __future__ import annotations

import json
import os
import re
import tomllib

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils.runtime._containerd import UNLIMITED, Analysis, ConfigFile

HERE = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'public', 'containerd_owners')
V16, V17, V23 = (1, 6, 20), (1, 7, 24), (2, 3, 4)

# name: (release that reads it, version, runtime -> base_runtime_spec)
CONFIGS = {
    'k3s-issue-9194-config.toml': (V17, 2, {'runc': '', 'crun': ''}),
    'kubespray-v2.27.0-config.toml': (V17, 2, {'runc': '/etc/containerd/cri-base.json'}),
    'kubespray-46dbdd39-config.toml': (V23, 4, {'runc': '/etc/containerd/cri-base.json'}),
}
SPECS = {
    'kubespray-cri-base.json': [{'type': 'RLIMIT_NOFILE', 'hard': 65535, 'soft': 65535}],
    'kubespray-cri-base-memlock-patch.json': [{'type': 'RLIMIT_NOFILE', 'hard': 65535, 'soft': 65535},
                                              {'type': 'RLIMIT_MEMLOCK', 'hard': UNLIMITED, 'soft': UNLIMITED}],
}
TEMPLATES = ('k3s-docs-issue-566-config-v3.toml.tmpl', 'rke2-docs-config-v3.toml.tmpl')
OTHER = ('kubespray-memlock-patch.yml',)


def read(name):
    with open(os.path.join(HERE, name)) as handle:
        return handle.read()


def test_every_file_has_a_source_and_an_expectation():
    names = sorted(name for name in os.listdir(HERE) if name != 'SOURCES.md')
    assert names == sorted(list(CONFIGS) + list(SPECS) + list(TEMPLATES) + list(OTHER))
    sources = read('SOURCES.md')
    rows = dict((match.group(1), match.group(2)) for match in re.finditer(r'^\| `([^`]+)` \| ([^|]+) \|', sources,
                                                                          re.MULTILINE))
    for name in names:
        assert name in rows, '%s has no row in SOURCES.md' % name
        assert 'https://github.com/' in rows[name] or 'this collection' in rows[name], name


@pytest.mark.parametrize('name', sorted(CONFIGS))
def test_config(name):
    release, version, runtimes = CONFIGS[name]
    config = ConfigFile('/etc/containerd/config.toml', read(name))
    assert config.version == version and config.imports == []
    assert Analysis([config], release).effective_runtimes() == runtimes
    tomllib.loads(read(name))  # an independent TOML parser reads it too


@pytest.mark.parametrize('name', sorted(SPECS))
def test_kubespray_spec(name):
    text = read(name)
    assert '\n' not in text.strip()  # one line: the copy module's json.dumps of a dict
    spec = json.loads(text)
    assert spec['ociVersion'] == '1.0.2-dev' and spec['process']['rlimits'] == SPECS[name]


def test_templates_extend_the_base_template():
    for name in TEMPLATES:
        body = read(name)
        assert '{{ template "base" . }}' in body
        rest = body.split('{{ template "base" . }}', 1)[1]
        tables = re.findall(r"^\[plugins\.'io\.containerd\.cri\.v1\.runtime'\.containerd\.runtimes\.'?([\w-]+)'?\]$",
                            rest, re.MULTILINE)
        assert tables == {'k3s-docs-issue-566-config-v3.toml.tmpl': ['runc'],
                          'rke2-docs-config-v3.toml.tmpl': ['custom']}[name]
