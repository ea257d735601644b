# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The release tarball (`make build`): what it holds, its CHANGELOG, and every plugin and role documented from an
installed copy, as a user gets them from `ansible-galaxy collection install`."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
RELEASE = os.path.join(REPO, '.build', 'release', 'ansible_collections', 'gpunet', 'rdma')

# Written out by hand: what a user gets at the top of the installed collection. A new top-level file or directory of
# the checkout fails the tests below until it is decided on: added here (it is part of the collection) or to
# galaxy.yml's build_ignore (it is not).
COLLECTION_TOP_LEVEL = ['CHANGELOG.rst', 'FILES.json', 'LICENSE', 'MANIFEST.json', 'README.md', 'awx', 'changelogs',
                        'docs', 'inventory', 'meta', 'playbooks', 'plugins', 'roles', 'tests']

# What lies beside the collection in a checkout that ran make test, make lab, pytest from the root, an editor.
CHECKOUT_JUNK = [
    '.hypothesis/examples/0123abcd/fedc', '.build/dist/gpunet-rdma-0.0.9.tar.gz', '.venv/bin/python',
    '.venv/lib/python3.13/site-packages/x.py', '.ansible/collections/x', '.cache/pip/x', '.pytest_cache/v/x',
    '.tox/py/x', '.mypy_cache/x.json', '.idea/workspace.xml', '.vscode/settings.json', '.DS_Store', '.coverage',
    '.envrc', 'tests/output/junit/x.xml', 'tests/unit/__pycache__/x.cpython-313.pyc',
    'plugins/modules/__pycache__/ledger.cpython-313.pyc', 'plugins/modules/.ledger.py.swp',
    'roles/rollout/tasks/.guard.yml.swp', 'docs/.DS_Store', 'changelogs/.plugin-cache.yaml',
    'rdma-report/rdma-fleet-report.md', 'rdma-manifests/nicclusterpolicy.yml', 'gpunet-rdma-0.0.9.tar.gz',
    'playbooks/site.retry', 'inventory/lab/nodes.generated.yml', 'lab/x', 'molecule/x', 'bench/results/x.json',
]


@pytest.fixture(scope='module')
def tarball():
    result = subprocess.run(['make', '-s', 'build'], cwd=REPO, capture_output=True, text=True, check=False, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    with open(os.path.join(REPO, 'galaxy.yml')) as handle:
        version = yaml.safe_load(handle)['version']
    path = os.path.join(REPO, '.build', 'dist', 'gpunet-rdma-%s.tar.gz' % version)
    assert os.path.isfile(path)
    return path


def test_tarball_holds_what_runs_from_an_installed_copy(tarball):
    with tarfile.open(tarball) as archive:
        names = set(archive.getnames())
    assert {'MANIFEST.json', 'FILES.json', 'README.md', 'CHANGELOG.rst', 'meta/runtime.yml',
            'playbooks/site.yml', 'roles/rollout/tasks/guard.yml', 'plugins/modules/ibdev2netdev_facts.py'} <= names
    shipped_tests = sorted(n for n in names if n.startswith(('tests/unit', 'tests/doubles', 'tests/crds')))
    assert not shipped_tests, 'tests that need the checkout are shipped: %s' % shipped_tests[:5]
    assert not [n for n in names if n.startswith(('lab/', 'molecule/', 'bench/', 'changelogs/fragments/', '.venv'))]


def test_the_top_level_holds_only_the_collection(tarball):
    """Nothing of the checkout's tooling (linter wheels, the Makefile, requirements, CI) beside the collection."""
    with tarfile.open(tarball) as archive:
        top = sorted(set(name.split('/', 1)[0] for name in archive.getnames()))
    assert top == COLLECTION_TOP_LEVEL
    with tarfile.open(tarball) as archive:
        tests = sorted(set('/'.join(n.split('/')[:2]) for n in archive.getnames() if n.startswith('tests/')))
    # ansible-test sanity's ignore files only (empty: they say no check is ignored)
    assert tests == ['tests/sanity']


@pytest.fixture(scope='module')
def tarball_beside_junk(tarball, tmp_path_factory):
    """The same release tree as `make build`'s, with a checkout's junk beside and inside it, built by
    ansible-galaxy collection build: only galaxy.yml's build_ignore keeps the junk out."""
    root = tmp_path_factory.mktemp('junk')
    tree = root / 'ansible_collections' / 'gpunet' / 'rdma'
    shutil.copytree(RELEASE, str(tree), symlinks=True)
    for junk in CHECKOUT_JUNK:
        path = tree / junk
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('junk\n')
    result = subprocess.run(['ansible-galaxy', 'collection', 'build', '--force', '--output-path', str(root / 'dist'),
                             str(tree)], capture_output=True, text=True, check=False, timeout=300,
                            env=dict(os.environ, ANSIBLE_NOCOLOR='1'))
    assert result.returncode == 0, result.stdout + result.stderr
    built = os.listdir(str(root / 'dist'))
    assert len(built) == 1, built
    return str(root / 'dist' / built[0])


def test_junk_beside_the_collection_is_not_shipped(tarball, tarball_beside_junk):
    with tarfile.open(tarball_beside_junk) as archive:
        names = sorted(archive.getnames())
    assert sorted(set(name.split('/', 1)[0] for name in names)) == COLLECTION_TOP_LEVEL
    assert not [name for name in names if any(part.startswith('.') for part in name.split('/'))]
    assert not [name for name in names if name in CHECKOUT_JUNK or name.endswith(('.pyc', '.retry', '.tar.gz'))]
    # file for file what make build ships from the release tree alone
    with tarfile.open(tarball) as archive:
        assert names == sorted(archive.getnames())


def test_execution_environment_builds_from_the_installed_collection(tarball, tmp_path):
    """awx/execution-environment.yml of an installed copy: ansible-builder writes the build context from it alone
    (its pins ship with it), offline."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / 'collections'), ANSIBLE_NOCOLOR='1',
               http_proxy='http://127.0.0.1:9', https_proxy='http://127.0.0.1:9')
    install = subprocess.run(['ansible-galaxy', 'collection', 'install', '--offline', '--no-deps', '-p',
                              str(tmp_path / 'collections'), tarball],
                             capture_output=True, text=True, check=False, timeout=300, env=env)
    assert install.returncode == 0, install.stdout + install.stderr
    root = tmp_path / 'collections' / 'ansible_collections' / 'gpunet' / 'rdma'
    builder = os.path.join(os.path.dirname(sys.executable), 'ansible-builder')
    result = subprocess.run([builder, 'create', '-f', str(root / 'awx' / 'execution-environment.yml'), '-c',
                             str(tmp_path / 'context'), '--output-filename', 'Containerfile'],
                            cwd=str(tmp_path), capture_output=True, text=True, check=False, timeout=300, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    containerfile = (tmp_path / 'context' / 'Containerfile').read_text()
    # every file the Containerfile copies from the context is there
    for source in re.findall(r'^COPY (?:--\S+ )*(_build/\S+) ', containerfile, re.M):
        assert (tmp_path / 'context' / source).exists(), source
    assert 'COPY _build/constraints/ee-constraints.txt ' in containerfile
    with open(os.path.join(REPO, 'requirements', 'constraints.txt')) as handle:
        assert (tmp_path / 'context' / '_build' / 'constraints' / 'ee-constraints.txt').read_text() == handle.read()


def test_changelog_is_generated_from_the_fragments(tarball):
    with tarfile.open(tarball) as archive:
        changelog = archive.extractfile('CHANGELOG.rst').read().decode()
    fragments = glob.glob(os.path.join(REPO, 'changelogs', 'fragments', '*.yml'))
    assert fragments, 'no changelog fragments in the checkout'
    assert 'gpunet.rdma Release Notes' in changelog and 'Minor Changes' in changelog
    # an entry of one fragment, word for word (antsibull-changelog reflows nothing within a line)
    with open(os.path.join(REPO, 'changelogs', 'fragments', 'blast-radius-guard.yml')) as handle:
        entry = yaml.safe_load(handle)['minor_changes'][0]
    assert entry.split(' - ', 1)[1][:60] in ' '.join(changelog.split())


def test_every_plugin_and_role_is_documented_from_the_installed_copy(tarball, tmp_path):
    # Only the target directory counts (the checkout is on ANSIBLE_COLLECTIONS_PATH of the test run and would make
    # ansible-galaxy answer "already installed").
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path), ANSIBLE_NOCOLOR='1')
    install = subprocess.run(['ansible-galaxy', 'collection', 'install', '--offline', '--no-deps', '-p',
                              str(tmp_path), tarball], capture_output=True, text=True, check=False, timeout=300, env=env)
    assert install.returncode == 0, install.stdout + install.stderr
    root = tmp_path / 'ansible_collections' / 'gpunet' / 'rdma'
    assert (root / 'MANIFEST.json').is_file()
    # Only the installed copy (the checkout's own link out of the way); kubernetes.core and friends come from the
    # `ansible` package as for a user.
    kinds = {
        'module': [os.path.splitext(os.path.basename(p))[0] for p in glob.glob(str(root / 'plugins/modules/*.py'))
                   if not os.path.basename(p).startswith('_')],
        'filter': [os.path.splitext(os.path.basename(p))[0] for p in glob.glob(str(root / 'plugins/filter/*.yml'))],
        'role': sorted(os.listdir(str(root / 'roles'))),
    }
    for kind, names in kinds.items():
        assert names, kind
        result = subprocess.run(['ansible-doc', '-t', kind] + ['gpunet.rdma.' + name for name in sorted(names)],
                                cwd=str(tmp_path), env=env, capture_output=True, text=True, check=False, timeout=300)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        # ansible-core 2.21's ansible-doc warns about its own internal collection (ansible._protomatter has no
        # MANIFEST.json); any other warning is ours
        stderr = '\n'.join(line for line in result.stderr.splitlines() if not (
            'ansible/_protomatter' in line and 'does not have a MANIFEST.json' in line))
        assert '[WARNING]' not in stderr and 'ERROR' not in stderr, stderr[-2000:]
        for name in names:
            assert 'gpunet.rdma.' + name in result.stdout, '%s %s not documented from the installed copy' % (kind, name)
