# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Make the collection importable as ansible_collections.gpunet.rdma and share fixtures."""

from __future__ import annotations

import os
import sys

import pytest

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
from _no_skip import pytest_runtest_logreport, pytest_sessionfinish, pytest_terminal_summary  # noqa: E402,F401 pylint: disable=wrong-import-position,unused-import
