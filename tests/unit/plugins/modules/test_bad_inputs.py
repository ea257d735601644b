# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Wrong and odd inputs to every module: a deliberate failure (or warning), never a traceback, no file touched.

The cases are tables, one YAML file per module in ``bad_inputs/`` (format in ``bad_inputs/README.md``). Each case
builds its files in a fresh directory, runs the module's ``main()`` and checks that

* the module ended through ``fail_json``/``exit_json`` (any other exception is a failure of the test, shown with
  its type: that is the traceback a user would have seen);
* ``failed`` is what the case expects and the message holds every expected substring (naming the input and the
  fix), or the warnings hold the expected ones;
* every file, directory and link below the case's directory is identical afterwards: type, bytes (sha256),
  mode and link target (the lab doubles' call logs excepted).
"""

from __future__ import annotations

import builtins
import errno
import glob
import hashlib
import json
import os
import stat
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
CASES_DIR = os.path.join(HERE, 'bad_inputs')
REPO = os.path.abspath(os.path.join(HERE, '..', '..', '..', '..'))
# Written by the lab doubles on every call, whatever the outcome.
ALWAYS_IGNORED = ('lab/firmware/calls.log', 'lab/perftest/calls.log')
MINIMUM_CASES = 80


def load_cases():
    cases = []
    for path in sorted(glob.glob(os.path.join(CASES_DIR, '*.yml'))):
        with open(path) as handle:
            for case in yaml.safe_load(handle) or []:
                case['_file'] = os.path.basename(path)
                cases.append(case)
    return cases


CASES = load_cases()


def substitute(value, names):
    """Replace {tmp}, {lab}, {repo} in every string of ``value`` (no str.format: TOML and JSON have braces)."""
    if isinstance(value, str):
        for key, replacement in names.items():
            value = value.replace('{%s}' % key, replacement)
        return value
    if isinstance(value, list):
        return [substitute(item, names) for item in value]
    if isinstance(value, dict):
        return dict((key, substitute(item, names)) for key, item in value.items())
    return value


def make_files(root, files, names):
    for entry in files or []:
        entry = substitute(entry, names)
        path = os.path.join(root, entry['path'])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if entry.get('dir'):
            os.makedirs(path, exist_ok=True)
        elif 'symlink' in entry:
            os.symlink(entry['symlink'], path)
        elif 'hex' in entry:
            with open(path, 'wb') as handle:
                handle.write(bytes.fromhex(entry['hex']))
        else:
            with open(path, 'w') as handle:
                handle.write(entry.get('text', ''))
        if 'mode' in entry:
            os.chmod(path, int(str(entry['mode']), 8))


def snapshot(root, ignored):
    """(relative path) -> (type, sha256 or link target, mode) of everything below ``root``."""
    state = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, root)
            if relative in ignored:
                continue
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                state[relative] = ('link', os.readlink(path), None)
            elif stat.S_ISDIR(info.st_mode):
                state[relative] = ('dir', None, stat.S_IMODE(info.st_mode))
            else:
                with open(path, 'rb') as handle:
                    digest = hashlib.sha256(handle.read()).hexdigest()
                state[relative] = ('file', digest, stat.S_IMODE(info.st_mode))
    return state


def fault_patches(faults, names):
    """Simulated OS errors, as patches for the run: the tests run as root, which reads and writes anything, so EACCES
    is injected."""
    read_faults, write_faults = {}, {}
    for fault in faults or []:
        fault = substitute(fault, names)
        number = getattr(errno, fault.get('errno', 'EACCES'))
        target = os.path.normpath(fault['path'])
        (write_faults if fault.get('op') == 'write' else read_faults)[target] = number

    def failing(path, writing):
        path = os.path.normpath(os.path.abspath(os.fspath(path)))
        table = write_faults if writing else read_faults
        for target, number in table.items():
            if path == target or (writing and os.path.dirname(path) == target):
                return number
        return None

    real_open, real_os_open = builtins.open, os.open

    def fake_open(file, mode='r', *args, **kwargs):
        if isinstance(file, (str, bytes, os.PathLike)):
            number = failing(file, any(flag in mode for flag in 'wax+'))
            if number:
                raise OSError(number, os.strerror(number), os.fspath(file))
        return real_open(file, mode, *args, **kwargs)

    def fake_os_open(path, flags, *args, **kwargs):
        number = failing(path, bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)))
        if number:
            raise OSError(number, os.strerror(number), os.fspath(path))
        return real_os_open(path, flags, *args, **kwargs)

    return {(builtins, 'open'): fake_open, (os, 'open'): fake_os_open} if read_faults or write_faults else {}


def start_apiserver(spec, tmp_path, names):
    """The kube-apiserver double of a case's ``apiserver:`` key; ``{kubeconfig}`` and ``{apiserver}`` for its strings.

    ``apiserver: {objects: [[group_version, plural, object]], forbid: [[verb, resource]], answer_text: [code, text],
    tls: false, ca: true, token: <kubeconfig token>, stopped: false}``; the kubeconfig is written outside ``{tmp}``.
    """
    sys.path.insert(0, os.path.join(REPO, 'tests', 'doubles'))
    import kube_apiserver  # pylint: disable=import-outside-toplevel
    api = kube_apiserver.FakeApiServer(tls=bool(spec.get('tls'))).start()
    for group_version, plural, obj in spec.get('objects') or []:
        api.add(group_version, plural, obj)
    for verb, resource in spec.get('forbid') or []:
        api.forbid(verb, resource)
    names['apiserver'] = api.url
    names['kubeconfig'] = api.kubeconfig(str(tmp_path / 'apiserver-kubeconfig'), ca=spec.get('ca', True),
                                         token=spec.get('token', kube_apiserver.DEFAULT_TOKEN))
    if spec.get('answer_text'):
        api.answer_text(*spec['answer_text'])
    if spec.get('stopped'):
        api.stop()
    return api


def run_case(case, tmp_path, run_module, lab_tree):
    root = str(tmp_path / 'case')
    os.makedirs(root)
    names = {'tmp': root, 'lab': os.path.join(root, 'lab'), 'repo': REPO}
    apiserver = start_apiserver(case['apiserver'], tmp_path, names) if case.get('apiserver') is not None else None
    if case.get('lab'):
        lab_tree(case['lab'], root=names['lab'])
    make_files(root, case.get('files'), names)
    expect = substitute(case.get('expect') or {}, names)
    ignored = set(ALWAYS_IGNORED) | set(expect.get('ignore') or [])
    before = snapshot(root, ignored)
    try:
        _code, result = run_module(case['module'], substitute(dict(case.get('args') or {}), names),
                                   check_mode=case.get('check_mode'), diff=case.get('diff'),
                                   env=substitute(case.get('env') or {}, names),
                                   patch=fault_patches(case.get('faults'), names))
    finally:
        if apiserver is not None:
            apiserver.stop()
    return result, before, snapshot(root, ignored), expect


def test_enough_cases():
    assert len(CASES) >= MINIMUM_CASES, '%d bad-input cases, want at least %d' % (len(CASES), MINIMUM_CASES)
    ids = [case['id'] for case in CASES]
    assert len(ids) == len(set(ids)), 'duplicate case ids: %s' % sorted(i for i in ids if ids.count(i) > 1)


def test_every_module_has_cases():
    modules = sorted(os.path.splitext(name)[0] for name in os.listdir(os.path.join(REPO, 'plugins', 'modules'))
                     if name.endswith('.py') and not name.startswith('_'))
    covered = set(case['module'] for case in CASES)
    assert [name for name in modules if name not in covered] == []


@pytest.mark.parametrize('case', CASES, ids=[case['id'] for case in CASES])
def test_bad_input(case, tmp_path, run_module, lab_tree):
    result, before, after, expect = run_case(case, tmp_path, run_module, lab_tree)
    wanted_failed = expect.get('failed', True)
    message = result.get('msg', '')
    assert bool(result.get('failed')) is wanted_failed, '%s: %s' % (case['id'], json.dumps(result)[:2000])
    assert 'exception' not in result or not wanted_failed or 'Traceback' not in result.get('exception', ''), (
        result['exception'])
    for text in expect.get('msg') or []:
        assert text in message, '%s: %r not in %r' % (case['id'], text, message)
    # ansible-core 2.19 returns each warning as {'event': {'msg': ...}}; earlier releases as a string.
    warnings = [(w.get('event') or {}).get('msg', '') if isinstance(w, dict) else str(w)
                for w in result.get('warnings') or []]
    for text in expect.get('warnings') or []:
        assert any(text in warning for warning in warnings), '%s: %r not in %r' % (case['id'], text, warnings)
    if expect.get('unchanged', True):
        changed = sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))
        assert changed == [], '%s changed %s' % (case['id'], changed)
