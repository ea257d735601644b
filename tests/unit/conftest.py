# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Make the collection importable as ansible_collections.gpunet.rdma and share fixtures."""

from __future__ import annotations

import importlib
import json
import os
import pathlib
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
# Tests take the lab's generator through the fixtures below; tests/unit/awx, roles and playbooks still import it.
sys.path.insert(0, os.path.join(REPO, 'lab'))

import sysfs_fixture  # noqa: E402  pylint: disable=wrong-import-position
from ansible.module_utils.common import warnings as module_warnings  # noqa: E402  pylint: disable=wrong-import-position
from ansible.module_utils.testing import patch_module_args  # noqa: E402  pylint: disable=wrong-import-position


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
    module_warnings._global_warnings.clear()
    monkeypatch.setattr('ansible.module_utils._internal.is_controller', False)


@pytest.fixture
def recorded():
    """Return the text of a recorded command output from fixtures/recorded."""
    def read(name):
        with open(os.path.join(RECORDED, name)) as handle:
            return handle.read()
    return read


def _profile(profile):
    return sysfs_fixture.load_profile(os.path.join(HARDWARE, profile + '.yml')) if isinstance(profile, str) else profile


@pytest.fixture
def sysfs_profile():
    """Load a lab hardware profile (lab/hardware/<name>.yml) as a dict, for a test that changes it before building."""
    return _profile


@pytest.fixture
def lab_generator():
    """The lab's sysfs and firmware generator (lab/sysfs_fixture.py), for the tests of the generator itself."""
    return sysfs_fixture


@pytest.fixture
def hardware():
    """Build a sysfs tree from a lab hardware profile (or a dict) and return its root."""
    def build(profile, root):
        return sysfs_fixture.build(_profile(profile), str(root))
    return build


@pytest.fixture
def lab_tree(tmp_path, monkeypatch):
    """``lab_tree(profile, root=tmp_path, doubles=True)``: a lab node root (a Path) from a hardware profile.

    ``profile`` is a name in lab/hardware or a dict. The root holds sys/ (the sysfs tree); with ``doubles`` also the
    firmware state (firmware/, verbs/, boot_id) and the lab's tool doubles in bin/, which goes first on PATH.
    GPUNET_LAB_ROOT names the root last built, as the lab's node images set it.
    """
    def build(profile, root=None, doubles=True):
        root = tmp_path if root is None else pathlib.Path(root)
        profile = _profile(profile)
        sysfs_fixture.build(profile, str(root / 'sys'))
        if doubles:
            sysfs_fixture.build_firmware(profile, str(root))
            monkeypatch.setenv('PATH', str(root / 'bin') + os.pathsep + os.environ.get('PATH', os.defpath))
        monkeypatch.setenv('GPUNET_LAB_ROOT', str(root))
        return root
    return build


@pytest.fixture
def run_module(capsys):
    """``run_module(module, args, check_mode=False, diff=False, env=None, patch=None, code=None)``: (exit code, result).

    Runs a module of the collection in this process as ansible runs it on a host: ``module`` is the module, its
    name (``'mlxconfig'``) or a ``main`` callable; ``check_mode`` and ``diff`` are ``_ansible_check_mode`` and
    ``_ansible_diff``. ``env`` ({name: value, None unsets}) and ``patch`` ({'dotted.name' or (object, 'name'): value})
    hold during the run only. ``code`` is the exit code the test expects (checked, the result shown otherwise).
    The module must end through exit_json or fail_json with one JSON result; a traceback fails the test, naming it.
    """
    def run(module, args=None, check_mode=False, diff=False, env=None, patch=None, code=None):
        if isinstance(module, str):
            module = importlib.import_module('ansible_collections.gpunet.rdma.plugins.modules.' + module)
        main = getattr(module, 'main', module)
        name = getattr(module, '__name__', repr(module))
        args = dict(args or {})
        if check_mode:
            args['_ansible_check_mode'] = True
        if diff:
            args['_ansible_diff'] = True
        module_warnings._global_warnings.clear()  # a module runs in a process of its own: no warnings of an earlier run
        with pytest.MonkeyPatch.context() as scoped, patch_module_args(args):
            for key, value in (env or {}).items():
                if value is None:
                    scoped.delenv(key, raising=False)
                else:
                    scoped.setenv(key, str(value))
            for target, value in (patch or {}).items():
                scoped.setattr(*(target if isinstance(target, tuple) else (target,)), value)
            exit_code = None
            try:
                main()
            except SystemExit as exc:
                exit_code = exc.code
            except Exception as exc:  # pylint: disable=broad-except
                pytest.fail('%s ended in a traceback: %s: %s' % (name, type(exc).__name__, exc))
            else:
                pytest.fail('%s returned without exit_json or fail_json' % name)
        out = capsys.readouterr().out
        try:
            result = json.loads(out)
        except ValueError:
            pytest.fail('%s printed no single JSON result: %r' % (name, out[-2000:]))
        if code is not None:
            assert exit_code == code, result
        return exit_code, result
    return run


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

    from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._crd_schema import crd_index

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
