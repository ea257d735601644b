# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Make the collection importable as ansible_collections.gpunet.rdma and share fixtures."""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import settings

# Property tests: 200 examples each; the older ansible-core releases of the matrix run 20 (make unit-<release> sets
# HYPOTHESIS_PROFILE=matrix). Their @settings leave max_examples to the profile.
settings.register_profile('full', max_examples=200)
settings.register_profile('matrix', max_examples=20)
settings.load_profile(os.environ.get('HYPOTHESIS_PROFILE', 'full'))

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
RECORDED = os.path.join(os.path.dirname(__file__), 'fixtures', 'recorded')
HARDWARE = os.path.join(REPO, 'lab', 'hardware')


def _collection_root():
    """Return a directory holding ansible_collections/gpunet/rdma for this checkout.

    Under ansible-test the checkout already sits there; otherwise use (or make)
    the link that `make collection` creates.
    """
    parts = REPO.split(os.sep)
    if len(parts) >= 3 and parts[-3] == 'ansible_collections':
        return os.sep.join(parts[:-3])
    root = os.path.join(REPO, '.build', 'collections')
    link = os.path.join(root, 'ansible_collections', 'gpunet', 'rdma')
    if not os.path.lexists(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(REPO, link)
    return root


sys.path.insert(0, _collection_root())
sys.path.insert(0, os.path.join(REPO, 'lab'))

import sysfs_fixture  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture(scope='session', autouse=True)
def no_ansible_deprecation_warnings(tmp_path_factory):
    """Deprecation warnings of ansible-core are fixed, not silenced.

    Every ansible-playbook, ansible-doc and ansible-runner process a test starts inherits ANSIBLE_LOG_PATH, so ansible
    writes what it displays, deprecations included, to one log; the session fails when that log holds one.
    """
    log = tmp_path_factory.mktemp('ansible-log') / 'ansible.log'
    previous = os.environ.get('ANSIBLE_LOG_PATH')
    os.environ['ANSIBLE_LOG_PATH'] = str(log)
    yield
    if previous is None:
        os.environ.pop('ANSIBLE_LOG_PATH', None)
    else:
        os.environ['ANSIBLE_LOG_PATH'] = previous
    text = log.read_text(errors='replace') if log.exists() else ''
    deprecations = sorted(set(line.split('|', 2)[-1].strip() for line in text.splitlines()
                              if 'DEPRECATION WARNING' in line or 'deprecated' in line.lower() and 'WARNING' in line))
    deprecations = [d for d in deprecations if not any(known in d for known in UPSTREAM_DEPRECATIONS)]
    assert not deprecations, 'ansible printed deprecation warnings:\n' + '\n'.join(deprecations[:20])


# Deprecations that kubernetes.core 6.6.0 (the `ansible` 14.5.0 package) prints on ansible-core 2.21 by itself, whatever
# the caller does: its k8s runner hands the API server's warnings to exit_json (module_utils/k8s/runner.py), and
# kubernetes.core.helm deprecates its own status.values return value on every call. Our own plugins never pass
# warnings to exit_json/fail_json (tests/unit/plugins/test_no_deprecated_calls.py).
UPSTREAM_DEPRECATIONS = (
    'Passing `warnings` to `exit_json` or `fail_json` is deprecated',
    "The 'status.values' return value is deprecated",
)


@pytest.fixture(autouse=True)
def module_warnings_per_test(monkeypatch):
    """Each test starts with no module warnings, and modules run as on a host.

    Warnings are module-global, and once a filter plugin was imported in this process ansible-core takes it for the
    controller and sends module warnings to its display instead of the result.
    """
    from ansible.module_utils.common import warnings as module_warnings
    module_warnings._global_warnings.clear()
    monkeypatch.setattr('ansible.module_utils._internal.is_controller', False)


@pytest.fixture
def recorded():
    """Return the text of a recorded command output from fixtures/recorded."""
    def read(name):
        with open(os.path.join(RECORDED, name)) as handle:
            return handle.read()
    return read


@pytest.fixture
def hardware():
    """Build a sysfs tree from a lab hardware profile (or a dict) and return its root."""
    def build(profile, root):
        if isinstance(profile, str):
            profile = sysfs_fixture.load_profile(os.path.join(HARDWARE, profile + '.yml'))
        return sysfs_fixture.build(profile, str(root))
    return build


@pytest.fixture
def upstream_crds():
    """The upstream CRD directory: the repository's copies in tests/crds, or GPUNET_CRDS_DIR when set.

    Never skipped: a GPUNET_CRDS_DIR that points nowhere is an error of the test setup, not a reason to test less.
    """
    path = os.environ.get('GPUNET_CRDS_DIR') or os.path.join(REPO, 'tests', 'crds')
    if not os.path.isdir(path):
        pytest.fail('GPUNET_CRDS_DIR=%s is not a directory; unset it to use the copies in tests/crds' % path)
    return path


@pytest.fixture
def crd_release(upstream_crds):
    """Load one release folder of the upstream CRDs as a crd_index (``crd_release('spiderpool-v1.2.2')``)."""
    import glob

    import yaml

    from ansible_collections.gpunet.rdma.plugins.module_utils._crd_schema import crd_index

    def load(release):
        documents = []
        paths = sorted(glob.glob(os.path.join(upstream_crds, release, '*.yaml')))
        if not paths:
            pytest.fail('no CRD files in %s' % os.path.join(upstream_crds, release))
        for path in paths:
            with open(path) as handle:
                documents.extend(d for d in yaml.safe_load_all(handle) if d)
        return crd_index(documents)
    return load


# A skipped or expected-to-fail test fails the session (tests/unit/_no_skip.py).
from _no_skip import pytest_collectreport, pytest_runtest_logreport, pytest_sessionfinish, pytest_terminal_summary  # noqa: E402,F401 pylint: disable=wrong-import-position,unused-import
