# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""containerd_spec with config_owner, case by case (containerd_spec_owner_cases.yml), on recorded and rendered files.

Every case checks which files changed below its directory: a refusal leaves all of them byte-identical, and no
case ever writes a file the owner writes again. The real containerd 1.6.20 binary of the machine answers
``containerd --version`` where a case does not give the release.
"""

from __future__ import annotations

import hashlib
import os
import stat

import pytest
import yaml

from ansible_collections.gpunet.rdma.plugins.module_utils.runtime import _containerd_owner
from ansible_collections.gpunet.rdma.plugins.modules import containerd_spec

HERE = os.path.dirname(__file__)
OWNERS = os.path.join(HERE, '..', '..', 'fixtures', 'public', 'containerd_owners')
PUBLIC = os.path.join(HERE, '..', '..', 'fixtures', 'public', 'containerd')
CTR_SPEC = os.path.join(HERE, '..', '..', 'fixtures', 'containerd', 'ctr-oci-spec-1.6.20.json')

with open(os.path.join(HERE, 'containerd_spec_owner_cases.yml')) as _handle:
    CASES = yaml.safe_load(_handle)


def fill(value, tmp):
    if isinstance(value, str):
        return value.replace('{tmp}', tmp)
    if isinstance(value, list):
        return [fill(item, tmp) for item in value]
    if isinstance(value, dict):
        return dict((fill(key, tmp), fill(item, tmp)) for key, item in value.items())
    return value


def read(folder, name):
    with open(os.path.join(folder, name)) as handle:
        return handle.read()


def lay_out(tmp, entries):
    for entry in entries or []:
        if 'fixture' in entry:
            text = read(OWNERS, entry['fixture'])
        elif 'public' in entry:
            text = read(PUBLIC, entry['public'])
        else:
            text = entry['text']
        for old, new in (entry.get('replace') or {}).items():
            assert old in text, 'the layout replaces %r, which %s does not hold' % (old, entry['path'])
            text = text.replace(old, new)
        if 'insert_after' in entry:
            assert entry['insert_after'] in text
            text = text.replace(entry['insert_after'], entry['insert_after'] + entry['insert'], 1)
        path = os.path.join(tmp, entry['path'])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as handle:
            handle.write(fill(text, tmp))
        if 'mode' in entry:
            os.chmod(path, int(entry['mode'], 8))


def snapshot(root):
    state = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            if stat.S_ISDIR(info.st_mode):
                state[os.path.relpath(path, root)] = ('dir', stat.S_IMODE(info.st_mode))
            else:
                with open(path, 'rb') as handle:
                    state[os.path.relpath(path, root)] = (hashlib.sha256(handle.read()).hexdigest(),
                                                          stat.S_IMODE(info.st_mode))
    return state


def kubespray_snippet(message):
    """The YAML block of the kubespray refusal (between the inventory hint and "and run kubespray's")."""
    start = message.index('group_vars/all/containerd.yml):\n') + len('group_vars/all/containerd.yml):\n')
    return yaml.safe_load(message[start:message.index("and run kubespray's")])


@pytest.mark.parametrize('case', CASES, ids=[case['id'] for case in CASES])
def test_owner_case(case, tmp_path, run_module, monkeypatch):
    tmp = str(tmp_path)
    lay_out(tmp, case.get('layout'))
    if case.get('spec_dir'):
        os.makedirs(os.path.join(tmp, 'spec'))
    units = os.path.join(tmp, 'units')
    os.makedirs(units)
    for unit in case.get('units', []):
        with open(os.path.join(units, unit + '.service'), 'w') as handle:
            handle.write('[Service]\nExecStart=/usr/local/bin/rke2 agent\n')
    monkeypatch.setattr(_containerd_owner, 'UNIT_DIRS', (units,))
    args = {'path': os.path.join(tmp, 'spec', 'rdma-base-spec.json'), 'base': CTR_SPEC,
            'k3s_data_dir': os.path.join(tmp, 'k3s'), 'rke2_data_dir': os.path.join(tmp, 'rke2'),
            'config_path': os.path.join(tmp, 'etc', 'containerd', 'config.toml')}
    args.update(fill(case.get('args', {}), tmp))
    before = snapshot(tmp)

    code, result = run_module(containerd_spec, args, check_mode=case.get('check_mode', False), diff=True)

    expect = fill(case['expect'], tmp)
    after = snapshot(tmp)
    changed_paths = sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))
    assert changed_paths == sorted(expect['written'])
    if expect.get('failed'):
        assert code == 1 and result['failed'] is True
        for text in expect['msg']:
            assert text in result['msg']
        for text in expect.get('not_msg', []):
            assert text not in result['msg']
        if 'snippet' in expect:
            with open(os.path.join(OWNERS, expect['snippet'])) as handle:
                assert kubespray_snippet(result['msg']) == dict(
                    yaml.safe_load(handle), containerd_base_runtime_specs={
                        'cri-base.json': '{{ containerd_default_base_runtime_spec | combine(containerd_default_base_'
                                         'runtime_spec_patch, recursive=1) }}'})
        return
    assert code == 0, result.get('msg')
    assert result['changed'] is expect['changed']
    owner = result['config_owner']
    for key, value in expect.get('owner', {}).items():
        assert owner[key] == value, key
    assert expect.get('evidence', '') in owner['evidence']
    assert owner['summary'].startswith(owner['name'] + ': ')
    # ansible-core 2.19 returns each warning as {'event': {'msg': ...}}; earlier releases as a string.
    warnings = [(w.get('event') or {}).get('msg', '') if isinstance(w, dict) else str(w)
                for w in result.get('warnings') or []]
    for text in expect.get('warnings', []):
        assert any(text in warning for warning in warnings), (text, warnings)
    if 'written_result' in expect:
        assert result['written'] is expect['written_result']
    if expect.get('diff'):
        assert '"RLIMIT_MEMLOCK"' in result['diff']['after'] and result['diff']['before'] == ''
    # never a file the owner writes again
    for path in owner['regenerated']:
        assert os.path.relpath(path, tmp) not in changed_paths


def test_every_case_runs_a_fixture_or_says_why_not():
    """Cases carry a reason; the fixture files they name exist (a typo would silently test nothing)."""
    for case in CASES:
        assert case.get('why'), case['id']
        for entry in case.get('layout') or []:
            if 'fixture' in entry:
                assert os.path.exists(os.path.join(OWNERS, entry['fixture'])), entry['fixture']
            if 'public' in entry:
                assert os.path.exists(os.path.join(PUBLIC, entry['public'])), entry['public']
    ids = [case['id'] for case in CASES]
    assert len(ids) == len(set(ids))
