# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The PVRDMA guest: real packages and persistence on the instance, the device found, the refusal without it."""

from __future__ import annotations

import glob
import json
import os

import testinfra

EPHEMERAL = os.environ['MOLECULE_EPHEMERAL_DIRECTORY']
HOST = testinfra.get_host('podman://pvrdma-vm')


def test_rdma_userspace_with_the_pvrdma_provider_is_installed():
    for package in ('rdma-core', 'ibverbs-providers', 'ibverbs-utils', 'perftest'):
        assert HOST.package(package).is_installed, package
    providers = HOST.run('dpkg -L ibverbs-providers').stdout
    assert 'libvmw_pvrdma' in providers
    assert HOST.run('ibv_devices').rc in (0, 1)  # the tool runs; this kernel has no RDMA devices


def test_the_driver_is_persisted_for_every_boot():
    persisted = HOST.file('/etc/modules-load.d/gpunet-pvrdma.conf')
    assert persisted.mode == 0o644
    assert [line for line in persisted.content_string.splitlines() if not line.startswith('#')] == ['vmw_pvrdma']


def test_the_pvrdma_device_is_found_as_roce():
    with open(os.path.join(EPHEMERAL, 'pvrdma-result-pvrdma-vm.json')) as handle:
        result = json.load(handle)
    assert result['active_devices'] == ['vmw_pvrdma0']
    assert [(p['device'], p['netdev'], p['link_layer'], p['state']) for p in result['ports']] == [
        ('vmw_pvrdma0', 'ens224', 'Ethernet', 'ACTIVE')]
    assert result['load_skipped'] is True and result['persisted'] == ['vmw_pvrdma']


def test_a_vm_without_the_adapter_is_refused_with_the_fix():
    refusals = glob.glob(os.path.join(EPHEMERAL, 'pvrdma-refusal-*.txt'))
    assert refusals
    with open(refusals[0]) as handle:
        message = handle.read()
    assert 'has 0 ACTIVE PVRDMA device(s)' in message
    assert 'playbooks/vsphere_pvrdma.yml' in message and 'Net.PVRDMAVmknic' in message
