# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Verify GPUDirect persistence, the gdrcopy build, the GPU Operator values and the load-failure message."""

from __future__ import annotations

import os
import subprocess

import testinfra
import yaml

SCENARIO = os.environ['MOLECULE_SCENARIO_DIRECTORY']
INVENTORY = os.environ['MOLECULE_INVENTORY_FILE']
EPHEMERAL = os.environ['MOLECULE_EPHEMERAL_DIRECTORY']
MODULES_LOAD = '/etc/modules-load.d/gpunet-gpudirect.conf'
MAKE_CALLS = '/var/log/gpunet-test-doubles/make.calls'


def node(name):
    return testinfra.get_host('podman://%s' % name)


def test_host_modules_persisted():
    conf = node('gpd-host').file(MODULES_LOAD)
    assert conf.mode == 0o644 and conf.user == 'root'
    assert [line for line in conf.content_string.splitlines() if not line.startswith('#')] == ['nvidia_peermem', 'gdrdrv']


def test_gdrcopy_built_once_for_the_running_kernel():
    """converge, idempotence and check ran: the build happened once, with the make variables."""
    host = node('gpd-host')
    assert host.file(MAKE_CALLS).content_string.splitlines() == [
        'make driver CUDA=/usr/local/cuda', 'make drv_install',
        'make lib_install prefix=/usr/local CUDA=/usr/local/cuda']
    kernel = host.check_output('uname -r')
    assert host.file('/lib/modules/%s/extra/gdrdrv.ko' % kernel).is_file
    assert 'extra/gdrdrv.ko:' in host.file('/lib/modules/%s/modules.dep' % kernel).content_string.splitlines()
    assert host.file('/usr/local/include/gdrapi.h').is_file


def test_gdrcopy_from_packages():
    host = node('gpd-package')
    assert host.package('gdrdrv-dkms').is_installed and host.package('libgdrapi').is_installed
    kernel = host.check_output('uname -r')
    assert 'updates/dkms/gdrdrv.ko:' in host.file('/lib/modules/%s/modules.dep' % kernel).content_string.splitlines()
    dkms = host.file('/var/log/gpunet-test-doubles/dkms.calls').content_string.splitlines()
    assert len(dkms) == 1 and dkms[0].startswith('gdrdrv-dkms postinst configure')
    assert not host.file(MAKE_CALLS).exists
    conf = host.file(MODULES_LOAD).content_string.splitlines()
    assert conf[1:] == ['nvidia_peermem', 'gdrdrv']


def test_operator_values_on_the_controller():
    with open(os.path.join(EPHEMERAL, 'gpu-operator-values.yaml')) as handle:
        values = yaml.safe_load(handle)
    assert values == {'driver': {'rdma': {'enabled': True, 'useHostMofed': True}}, 'gdrcopy': {'enabled': True}}


def test_operator_mode_removed_the_host_persistence():
    host = node('gpd-operator')
    assert not host.file(MODULES_LOAD).exists
    assert not host.file(MAKE_CALLS).exists  # nothing built on the host


def test_failed_load_is_explained_and_leaves_the_files_as_they_were():
    host = node('gpd-host')
    before = host.file(MODULES_LOAD).content_string
    play = subprocess.run(['ansible-playbook', '-i', INVENTORY, os.path.join(SCENARIO, 'load_failure.yml')],
                          check=False, capture_output=True, text=True)
    output = ' '.join((play.stdout + play.stderr).split())
    assert play.returncode != 0, output
    assert "Loading nvidia_peermem failed: [Errno 2] No such file or directory: '/proc/modules'" in output
    assert 'no loadable module support, or this is a container' in output
    assert 'set gpudirect_load_modules: false' in output
    # This run wants nvidia_peermem alone (no gdrcopy): a module that did not load is never persisted, the file
    # keeps what converge wrote.
    assert host.file(MODULES_LOAD).content_string == before
    assert before.splitlines()[1:] == ['nvidia_peermem', 'gdrdrv']
