# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Verify the driver stack on each instance after converge, idempotence and check.

Every call count includes those three runs, so a second install, restart or initramfs
update would show up here.
"""

from __future__ import annotations

import json
import os
import subprocess

import testinfra

SCENARIO = os.environ['MOLECULE_SCENARIO_DIRECTORY']
EPHEMERAL = os.environ['MOLECULE_EPHEMERAL_DIRECTORY']
INVENTORY = os.environ['MOLECULE_INVENTORY_FILE']
CALLS = '/var/log/gpunet-test-doubles/%s.calls'
MOUNT_POINT = '/mnt/gpunet-mlnx-ofed'
FLAGS = '--all --without-fw-update --force'


def node(name):
    return testinfra.get_host('podman://%s' % name)


def calls(host, tool):
    path = CALLS % tool
    return host.file(path).content_string.splitlines() if host.file(path).exists else []


def result(name):
    with open(os.path.join(EPHEMERAL, 'result-%s.json' % name)) as handle:
        return json.load(handle)


def module_path(host, module):
    kernel = host.check_output('uname -r')
    for line in host.file('/lib/modules/%s/modules.dep' % kernel).content_string.splitlines():
        path = line.split(':', 1)[0]
        if os.path.basename(path).split('.ko')[0] == module:
            return path
    return None


# ---------------------------------------------------------------- inbox

def test_inbox_packages_installed():
    host = node('ofed-inbox')
    for package in ('rdma-core', 'ibverbs-utils', 'ibverbs-providers', 'infiniband-diags', 'perftest'):
        assert host.package(package).is_installed, package


def test_inbox_tools_run():
    """The real binaries run; this kernel has no RDMA support, which they report."""
    host = node('ofed-inbox')
    devinfo = host.run('ibv_devinfo -l')
    assert 'Failed to get IB devices list: Function not implemented' in devinfo.stderr + devinfo.stdout
    assert 'ib_write_bw <host>     connect to server at <host>' in host.run('ib_write_bw --help').stdout
    assert host.exists('ibstat')


def test_inbox_netns_exclusive_persisted():
    host = node('ofed-inbox')
    assert calls(host, 'update-initramfs') == []  # no initramfs in /boot, nothing to update
    conf = host.file('/etc/modprobe.d/gpunet-rdma-netns.conf')
    assert conf.mode == 0o644 and conf.user == 'root'
    lines = [line for line in conf.content_string.splitlines() if not line.startswith('#')]
    assert lines == ['options ib_core netns_mode=0']


def test_iso_node_netns_shared_persisted():
    lines = node('ofed-iso').file('/etc/modprobe.d/gpunet-rdma-netns.conf').content_string.splitlines()
    assert 'options ib_core netns_mode=1' in lines


def test_netns_unknown_live_mode_is_reported_not_guessed():
    netns = result('ofed-inbox')['netns']
    assert netns['wanted'] == 'exclusive' and netns['persisted'] == 'exclusive' and netns['live'] is None
    assert 'NETLINK_RDMA' in netns['live_error'] and netns['reboot_pending'] is False


def test_netns_switched_live_once():
    host = node('ofed-doca')
    assert host.file('/opt/gpunet-test/rdma-netns').content_string.strip() == 'exclusive'
    assert [line for line in calls(host, 'rdma') if ' set ' in line] == ['rdma system set netns exclusive']
    netns = result('ofed-doca')['netns']
    assert netns['live'] == 'exclusive' and netns['reboot_pending'] is False


def test_netns_refused_live_waits_for_reboot():
    host = node('ofed-rebuild')
    assert not host.file('/opt/gpunet-test/rdma-netns').exists  # still the kernel default, shared
    netns = result('ofed-rebuild')['netns']
    assert netns['live'] == 'shared' and netns['persisted'] == 'exclusive' and netns['reboot_pending'] is True
    assert netns['live_error'] == 'error: Device or resource busy'
    assert 'options ib_core netns_mode=0' in host.file('/etc/modprobe.d/gpunet-rdma-netns.conf').content_string


# ---------------------------------------------------------------- MLNX_OFED ISO

def test_iso_installer_ran_once_from_the_mount_with_the_flags():
    host = node('ofed-iso')
    assert calls(host, 'mlnxofedinstall') == ['%s/mlnxofedinstall %s' % (MOUNT_POINT, FLAGS)]


def test_iso_unmounted_and_not_in_fstab():
    host = node('ofed-iso')
    assert MOUNT_POINT not in host.file('/proc/mounts').content_string
    assert MOUNT_POINT not in host.file('/etc/fstab').content_string
    assert host.file('/var/cache/gpunet-rdma/mlnx-ofed.iso').is_file


def test_iso_release_and_modules_installed():
    host = node('ofed-iso')
    assert host.check_output('ofed_info -s') == 'MLNX_OFED_LINUX-24.01-0.3.3.1:'
    for module in ('mlx5_core', 'mlx5_ib', 'ib_uverbs', 'rdma_ucm'):
        assert module_path(host, module) == 'updates/dkms/%s.ko' % module


def test_iso_result_after_the_restart():
    ofed = result('ofed-iso')['ofed']
    assert ofed['ofed_version'] == ofed['wanted_version'] == '24.01-0.3.3.1'
    assert ofed['restart_pending'] is False and ofed['kernel_mismatch'] is False and ofed['missing_modules'] == []


def test_iso_initramfs_updated_and_driver_restarted_once():
    host = node('ofed-iso')
    kernel = host.check_output('uname -r')
    # Once for OFED (the installer asked), once for the persisted netns mode (rdma_netns).
    assert calls(host, 'update-initramfs') == ['update-initramfs -u', 'update-initramfs -u -k %s' % kernel]
    assert calls(host, 'openibd') == ['openibd restart']
    assert host.file('/opt/gpunet-test/sys/module/mlx5_core/version').content_string.strip() == '24.01-0.3.3'


# ---------------------------------------------------------------- kernel mismatch

def test_rebuild_for_the_running_kernel_once_without_restart():
    host = node('ofed-rebuild')
    assert calls(host, 'mlnxofedinstall') == ['%s/mlnxofedinstall %s --add-kernel-support' % (MOUNT_POINT, FLAGS)]
    assert module_path(host, 'mlx5_core') == 'updates/dkms/mlx5_core.ko'
    assert calls(host, 'openibd') == []  # ofed_restart_driver is false: the restart stays pending
    assert result('ofed-rebuild')['ofed']['restart_pending'] is True


def test_rebuild_downloaded_the_iso_by_url():
    host = node('ofed-rebuild')
    assert host.file('/var/cache/gpunet-rdma/mlnx-ofed.iso').sha256sum == \
        host.file('/srv/mirror/MLNX_OFED_LINUX-24.01-0.3.3.1-test-double.iso').sha256sum


def test_kernel_mismatch_refused_without_add_kernel_support():
    host = node('ofed-rebuild')
    kernel = host.check_output('uname -r')
    play = subprocess.run(['ansible-playbook', '-i', INVENTORY, os.path.join(SCENARIO, 'kernel_mismatch.yml')],
                          check=False, capture_output=True, text=True)
    output = ' '.join((play.stdout + play.stderr).split())
    assert play.returncode != 0, output
    assert ('MLNX_OFED_LINUX 24.01-0.3.3.1 is installed, but its kernel modules were built for 5.15.0-91-generic, '
            'not for the running kernel %s' % kernel) in output
    assert 'set ofed_add_kernel_support: true' in output
    assert len(calls(host, 'mlnxofedinstall')) == 1  # nothing ran
    assert MOUNT_POINT not in host.file('/proc/mounts').content_string


# ---------------------------------------------------------------- DOCA repository

def test_doca_repository_and_packages():
    host = node('ofed-doca')
    sources = host.file('/etc/apt/sources.list.d/gpunet-doca.sources').content_string
    assert 'URIs: file:/srv/doca-repo' in sources and 'Suites: ./' in sources
    assert host.package('doca-ofed').is_installed
    assert host.package('mlnx-ofed-kernel-dkms').is_installed
    assert host.check_output('ofed_info -s') == 'OFED-internal-25.01-0.6.0:'
    assert module_path(host, 'mlx5_core') == 'updates/dkms/mlx5_core.ko'
    assert len(calls(host, 'dkms')) == 1
