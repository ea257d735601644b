# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""containerd configurations published upstream (containerd, the NVIDIA Container Toolkit, issue threads).

Every artifact of fixtures/public/containerd/ has an expectation written by hand from reading the file: its
version, its runtime tables with their base_runtime_spec before, where the setting goes and what the runtimes
carry after the wiring, and how many lines change.
"""

from __future__ import annotations

import glob
import os
import shutil

import pytest
import yaml

from ansible_collections.gpunet.rdma.plugins.module_utils.runtime._containerd import (
    Analysis,
    ConfigError,
    ConfigFile,
    load_layout,
    wire,
)

HERE = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'public', 'containerd')
SPEC = '/etc/containerd/rdma-base-spec.json'
V16, V17, V21, V23 = (1, 6, 20), (1, 7, 27), (2, 1, 4), (2, 3, 0)

# name: (release, declared version, imports, runtimes before, runtimes after, created runtimes, changed old lines)
SINGLE = {
    'containerd-1.6-config-default.toml': (V16, 2, [], {'runc': ''}, {'runc': SPEC}, [], 1),
    'containerd-1.7-config-default.toml': (V17, 2, [], {'runc': ''}, {'runc': SPEC}, [], 1),
    'containerd-1.7-custom.toml': (V17, 2, [], {'runc': ''}, {'runc': SPEC}, [], 1),
    'containerd-2.x-docs-full-config-v3.toml': (V21, 3, [], {'runc': ''}, {'runc': SPEC}, [], 1),
    'containerd-cri-in-userns.toml': (V16, 2, [], {}, {'runc': SPEC}, ['runc'], 0),
    'nvidia-ctk-configure-set-as-default-v2.toml': (
        V16, 2, [], {'nvidia': ''}, {'nvidia': SPEC, 'runc': SPEC}, ['runc'], 0),
    'nvidia-ctk-test-config-v1.toml': (V16, 0, [], {}, {'runc': SPEC}, ['runc'], 0),
    'nvidia-ctk-test-config-v2.toml': (V16, 2, [], {'runc': ''}, {'runc': SPEC}, [], 0),
}
# The pair of containerd PR 12891: a version 2 root importing conf.d/*.toml, a version 3 drop-in with runtime "test".
LAYOUT = ('containerd-pr12891-config.toml', 'containerd-pr12891-conf.d-toolkit.toml')


def read(name):
    with open(os.path.join(HERE, name)) as handle:
        return handle.read()


def test_every_artifact_has_an_expectation_and_a_source():
    artifacts = sorted(os.path.basename(p) for p in glob.glob(os.path.join(HERE, '*')) if not p.endswith('.yml'))
    assert len(artifacts) >= 8
    assert sorted(set(SINGLE) | set(LAYOUT)) == artifacts
    for name in artifacts:
        with open(os.path.join(HERE, name + '.source.yml')) as handle:
            source = yaml.safe_load(handle)
        assert source.get('what') and source.get('excerpt')
        assert source.get('source', '').startswith('https://github.com/') or (
            source.get('repository') and source.get('path') and len(str(source.get('commit'))) == 40)


@pytest.mark.parametrize('name', sorted(SINGLE))
def test_single_file(name):
    release, version, imports, before, after, created, changed_lines = SINGLE[name]
    text = read(name)
    config = ConfigFile('/etc/containerd/config.toml', text)
    assert config.version == version and config.imports == imports
    analysis = Analysis([config], release)
    assert analysis.effective_runtimes() == before
    _analysis, plan, texts, result = wire([config], release, SPEC, ['runc'])
    assert result.effective_runtimes() == after
    assert set(plan.targets.values()) == {'/etc/containerd/config.toml'}
    assert sorted(name for name, create in plan.create.items() if create) == created
    new = texts['/etc/containerd/config.toml']
    gone = [line for line in text.splitlines() if line not in new.splitlines()]
    assert len(gone) == changed_lines
    assert all('base_runtime_spec' in line for line in gone)
    # the wiring is stable: a second run changes nothing
    assert wire([ConfigFile('/etc/containerd/config.toml', new)], release, SPEC, ['runc'])[2] == {}


def test_docs_v3_keeps_single_quotes():
    _a, _p, texts, _r = wire([ConfigFile('/c.toml', read('containerd-2.x-docs-full-config-v3.toml'))], V21, SPEC,
                             ['runc'])
    assert "          base_runtime_spec = '%s'\n" % SPEC in texts['/c.toml']


def test_v1_file_on_containerd_1_uses_plugins_cri():
    _a, _p, texts, result = wire([ConfigFile('/c.toml', read('nvidia-ctk-test-config-v1.toml'))], V16, SPEC,
                                 ['runc'])
    assert result.merged_version == 1
    assert '[plugins.cri.containerd.runtimes.runc]' in texts['/c.toml']


def layout(tmp_path):
    """The PR's layout at its own paths, rooted below tmp_path (the import is rewritten to the same place)."""
    (tmp_path / 'conf.d').mkdir()
    root = read(LAYOUT[0]).replace('/etc/containerd/conf.d/', '%s/conf.d/' % tmp_path)
    (tmp_path / 'config.toml').write_text(root)
    shutil.copy(os.path.join(HERE, LAYOUT[1]), str(tmp_path / 'conf.d' / 'toolkit.toml'))
    return str(tmp_path / 'config.toml'), root


@pytest.mark.parametrize('release', [V21, V23, V16])
def test_pr12891_layout(tmp_path, release):
    main, root = layout(tmp_path)
    drop_in = str(tmp_path / 'conf.d' / 'toolkit.toml')
    if release == V16:
        with pytest.raises(ConfigError, match='declares version 3'):
            Analysis(load_layout(main, root, lambda p: open(p).read(), release), release)
        return
    files = load_layout(main, root, lambda p: open(p).read(), release)
    assert [config.path for config in files] == [main, drop_in]
    assert [config.version for config in files] == [2, 3]
    if release == V23:
        # 2.3 refuses a drop-in of a higher version than the root: the case the PR adds a check for
        with pytest.raises(ConfigError, match='higher than 2 of the root config'):
            Analysis(files, release)
        return
    analysis, plan, texts, result = wire(files, release, SPEC, ['runc'])
    # 2.0-2.2: the last version declared (3) is the merged one; the root's version 2 CRI section holds no runtimes
    assert analysis.merged_version == 3 and analysis.ignored == []
    assert analysis.effective_runtimes() == {'test': ''}
    assert plan.targets == {'test': drop_in, 'runc': drop_in}
    assert list(texts) == [drop_in]
    assert result.effective_runtimes() == {'test': SPEC, 'runc': SPEC}
