# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Apply each mutant of mutants.yml, one at a time, to a copy of the checkout and run the tests that must catch it.

A mutant is a small plausible bug in a behaviour users depend on. It is caught when its tests fail (pytest exit
status 1); it survived when they still pass; it is broken when its `old` text no longer occurs exactly once (the
list is out of date), when its tests cannot even run (a collection or usage error), when they time out, or when the
same tests fail without the mutation (then the mutant proves nothing). Exit status 0 only when every mutant selected
is caught.

    .venv/bin/python tests/mutants/run.py [--only id1,id2] [--list] [--keep]

The checkout itself is never written: the files of `git ls-files --cached --others --exclude-standard` are copied
to a temporary directory that gets its own .build/collections link (as `make collection` makes one), and the
tests run there with the environment of `make unit`. Each run's pytest output is kept in .build/mutants/<id>.log.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, '..', '..'))
LIST = os.path.join(HERE, 'mutants.yml')
LOGS = os.path.join(REPO, '.build', 'mutants')
# What the copy leaves out: the venv and the build outputs are reused from the checkout (they are large and are not
# under test), git's own directory is not needed.
EXCLUDED_TOP = ('.venv', '.build', '.git')
FIELDS = ('id', 'why', 'file', 'old', 'new', 'tests')
# One test set's time limit: a mutant whose tests hang is reported, not waited for.
DEFAULT_TIMEOUT = 900


class ListError(Exception):
    """mutants.yml itself is wrong."""


def load_mutants(path=LIST):
    with open(path, encoding='utf-8') as handle:
        mutants = yaml.safe_load(handle)
    if not isinstance(mutants, list) or not mutants:
        raise ListError('%s: expected a list of mutants' % path)
    seen = set()
    for number, mutant in enumerate(mutants, 1):
        where = '%s: entry %d' % (path, number)
        if not isinstance(mutant, dict):
            raise ListError('%s: expected a mapping, got %r' % (where, mutant))
        # `new` may be empty (the mutation deletes `old`)
        missing = [field for field in FIELDS if mutant.get(field) in (None, '', []) and field != 'new' or field not in mutant]
        unknown = sorted(set(mutant) - set(FIELDS) - {'timeout'})
        if missing or unknown:
            raise ListError('%s (%s): missing %s; unknown %s' % (where, mutant.get('id'), missing, unknown))
        if mutant['id'] in seen:
            raise ListError('%s: id %s used twice' % (where, mutant['id']))
        seen.add(mutant['id'])
        if not all(isinstance(mutant[field], str) for field in ('id', 'why', 'file', 'old', 'new')):
            raise ListError('%s (%s): id, why, file, old and new must be strings' % (where, mutant['id']))
        if mutant['old'] == mutant['new']:
            raise ListError('%s (%s): old and new are the same text' % (where, mutant['id']))
        if isinstance(mutant['tests'], str):
            mutant['tests'] = mutant['tests'].split()
        if os.path.isabs(mutant['file']) or '..' in mutant['file'].split('/'):
            raise ListError('%s (%s): file must be a path inside the repository' % (where, mutant['id']))
    return mutants


def repository_files():
    listed = subprocess.run(['git', 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], cwd=REPO,
                            capture_output=True, check=True).stdout.decode('utf-8', 'surrogateescape')
    for name in sorted(set(listed.split('\0'))):
        if not name or name.split('/', 1)[0] in EXCLUDED_TOP:
            continue
        yield name


def make_copy(root):
    """Copy the checkout's files to ``root`` and give the copy what `make collection` gives the checkout."""
    for name in repository_files():
        source = os.path.join(REPO, name)
        if not os.path.lexists(source):  # deleted in the work tree, not yet in git
            continue
        target = os.path.join(root, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.islink(source):
            os.symlink(os.readlink(source), target)
        else:
            shutil.copy2(source, target)
    collections = os.path.join(root, '.build', 'collections', 'ansible_collections')
    os.makedirs(os.path.join(collections, 'gpunet'))
    os.symlink(root, os.path.join(collections, 'gpunet', 'rdma'))
    # Built by other targets and not under test: awx.awx (make awx-collection), helm (make helm).
    real_collections = os.path.join(REPO, '.build', 'collections', 'ansible_collections')
    for namespace in sorted(os.listdir(real_collections)) if os.path.isdir(real_collections) else []:
        if namespace != 'gpunet':
            os.symlink(os.path.join(real_collections, namespace), os.path.join(collections, namespace))
    if os.path.isdir(os.path.join(REPO, '.build', 'bin')):
        os.symlink(os.path.join(REPO, '.build', 'bin'), os.path.join(root, '.build', 'bin'))
    os.makedirs(os.path.join(root, '.build', 'tmp-mutants'))


def test_environment(root):
    """The environment of `make unit` (the Makefile's exports), pointed at the copy."""
    env = dict(os.environ)
    env.update({
        'PATH': os.path.join(REPO, '.venv', 'bin') + os.pathsep + env.get('PATH', ''),
        'ANSIBLE_COLLECTIONS_PATH': os.path.join(root, '.build', 'collections'),
        'ANSIBLE_CONFIG': os.path.join(root, 'ansible.cfg'),
        'GPUNET_CRDS_DIR': os.path.join(root, 'tests', 'crds'),
        'CONTAINERS_CONF': os.path.join(root, 'lab', 'containers.conf'),
        'LAB_FIXTURES': env.get('LAB_FIXTURES') or os.path.join(REPO, '.build', 'lab-fixtures'),
        'PYTHONDONTWRITEBYTECODE': '1',
        'NO_COLOR': '1', 'PY_COLORS': '0', 'ANSIBLE_NOCOLOR': '1',
        'PYTEST_DEBUG_TEMPROOT': os.path.join(root, '.build', 'tmp-mutants'),
    })
    for name in ('PYTEST_ADDOPTS', 'HYPOTHESIS_PROFILE', 'ANSIBLE_LOG_PATH'):
        env.pop(name, None)
    return env


def run_tests(root, env, tests, log, timeout):
    """pytest's exit status (None when it timed out) and the seconds it took; its output goes to ``log``."""
    argv = [os.path.join(REPO, '.venv', 'bin', 'python'), '-m', 'pytest', '-x', '-q', '-p', 'no:cacheprovider'] + tests
    started = time.monotonic()
    with open(log, 'w', encoding='utf-8') as output:
        output.write('$ %s\n' % ' '.join(argv))
        output.flush()
        process = subprocess.Popen(argv, cwd=root, env=env, stdout=output, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            status = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
            status = None
    return status, time.monotonic() - started


def judge(status):
    if status == 1:
        return 'caught', ''
    if status == 0:
        return 'SURVIVED', 'the tests still pass with the mutation'
    if status is None:
        return 'broken', 'the tests timed out'
    return 'broken', 'pytest exit status %s (collection or usage error, not a failing test)' % status


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--only', default=os.environ.get('MUTANTS', ''),
                        help='comma-separated mutant ids (default: $MUTANTS, else every mutant)')
    parser.add_argument('--list', action='store_true', help='print the mutants and exit')
    parser.add_argument('--keep', action='store_true', help='keep the temporary copy (its path is printed)')
    args = parser.parse_args(argv)
    try:
        mutants = load_mutants()
    except ListError as exc:
        print('mutants: %s' % exc, file=sys.stderr)
        return 2
    if args.list:
        for mutant in mutants:
            print('%-40s %s' % (mutant['id'], mutant['why']))
        return 0
    wanted = [name.strip() for name in args.only.split(',') if name.strip()]
    unknown = sorted(set(wanted) - set(mutant['id'] for mutant in mutants))
    if unknown:
        print('mutants: no mutant named %s in %s' % (', '.join(unknown), LIST), file=sys.stderr)
        return 2
    if wanted:
        mutants = [mutant for mutant in mutants if mutant['id'] in wanted]

    os.makedirs(LOGS, exist_ok=True)
    root = tempfile.mkdtemp(prefix='gpunet-mutants-', dir=os.environ.get('TMPDIR') or None)
    try:
        make_copy(root)
        env = test_environment(root)
        results = run_all(mutants, root, env)
    finally:
        if args.keep:
            print('copy kept in %s' % root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return report(results)


def run_all(mutants, root, env):
    baselines = {}
    results = []
    for mutant in mutants:
        path = os.path.join(root, mutant['file'])
        timeout = int(mutant.get('timeout') or DEFAULT_TIMEOUT)
        if not os.path.isfile(path):
            results.append((mutant['id'], 'broken', 0.0, '%s does not exist' % mutant['file']))
            continue
        with open(path, 'rb') as handle:
            original = handle.read()
        text = original.decode('utf-8')
        count = text.count(mutant['old'])
        if count != 1:
            results.append((mutant['id'], 'broken', 0.0, '`old` occurs %d times in %s (expected once): '
                            'the list is out of date' % (count, mutant['file'])))
            continue
        key = tuple(mutant['tests'])
        if key not in baselines:
            log = os.path.join(LOGS, 'unmutated-%d.log' % (len(baselines) + 1))
            status, seconds = run_tests(root, env, list(key), log, timeout)
            baselines[key] = (status, log)
            verdict = 'pass' if status == 0 else 'FAIL (exit %s)' % status
            print('unmutated  %-60s %s in %.0f s' % (' '.join(key)[:60], verdict, seconds), flush=True)
        status, log = baselines[key]
        if status != 0:
            results.append((mutant['id'], 'broken', 0.0, 'its tests fail without the mutation (exit %s, %s)'
                            % (status, os.path.relpath(log, REPO))))
            continue
        log = os.path.join(LOGS, '%s.log' % mutant['id'])
        try:
            with open(path, 'wb') as handle:
                handle.write(text.replace(mutant['old'], mutant['new']).encode('utf-8'))
            status, seconds = run_tests(root, env, list(key), log, timeout)
        finally:
            with open(path, 'wb') as handle:
                handle.write(original)
        verdict, note = judge(status)
        if note:
            note += ' (%s)' % os.path.relpath(log, REPO)
        results.append((mutant['id'], verdict, seconds, note))
        print('%-40s %-8s %6.0f s' % (mutant['id'], verdict, seconds), flush=True)
    return results


def report(results):
    print()
    print('%-40s %-8s %8s' % ('mutant', 'result', 'seconds'))
    for name, verdict, seconds, _note in results:
        print('%-40s %-8s %8.0f' % (name, verdict, seconds))
    bad = [(name, verdict, note) for name, verdict, _seconds, note in results if verdict != 'caught']
    caught = len(results) - len(bad)
    print('\n%d of %d mutants caught' % (caught, len(results)))
    for name, verdict, note in bad:
        print('%s %s: %s' % (name, verdict, note))
    return 0 if not bad and results else 1


if __name__ == '__main__':
    sys.exit(main())
