# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the vCenter simulator holds after converge, idempotence and check, read through the vSphere API (pyVmomi)."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import pytest
from pyVim.connect import Disconnect, SmartConnect
from pyVmomi import vim

URL_FILE = os.path.join(os.environ['MOLECULE_EPHEMERAL_DIRECTORY'], 'vcsim', 'url')
ESXI_HOSTS = ['DC0_C0_H0', 'DC0_C0_H1']
WORKER_VMS = ['DC0_C0_RP0_VM0', 'DC0_C0_RP0_VM1']


@pytest.fixture(scope='module')
def content():
    with open(URL_FILE) as handle:
        url = urlsplit(handle.read().strip())
    service = SmartConnect(host=url.hostname, port=url.port, user=url.username, pwd=url.password,
                           disableSslCertValidation=True)
    yield service.RetrieveContent()
    Disconnect(service)


def objects(content, kind):
    view = content.viewManager.CreateContainerView(content.rootFolder, [kind], True)
    try:
        return dict((o.name, o) for o in view.view)
    finally:
        view.Destroy()


@pytest.mark.parametrize('name', ESXI_HOSTS)
def test_pvrdma_is_bound_to_the_vmknic(content, name):
    host = objects(content, vim.HostSystem)[name]
    [option] = host.configManager.advancedOption.QueryOptions('Net.PVRDMAVmknic')
    assert option.value == 'vmk1'


@pytest.mark.parametrize('name', ESXI_HOSTS)
def test_the_pvrdma_ruleset_is_enabled_for_every_peer(content, name):
    host = objects(content, vim.HostSystem)[name]
    [ruleset] = [r for r in host.configManager.firewallSystem.firewallInfo.ruleset if r.key == 'pvrdma']
    assert ruleset.enabled is True
    assert ruleset.allowedHosts.allIp is True  # not narrowed to no host at all
    assert 28250 in [rule.port for rule in ruleset.rule]


@pytest.mark.parametrize('name', WORKER_VMS)
def test_each_worker_vm_has_one_pvrdma_adapter_on_the_port_group(content, name):
    vm = objects(content, vim.VirtualMachine)[name]
    portgroups = dict((pg.key, pg.name) for pg in objects(content, vim.dvs.DistributedVirtualPortgroup).values())
    nics = [(type(d).__name__, portgroups[d.backing.port.portgroupKey], d.connectable.startConnected)
            for d in vm.config.hardware.device if isinstance(d, vim.vm.device.VirtualEthernetCard)]
    # the VM's own NIC is kept; one PVRDMA adapter added in three runs
    assert sorted(nics) == sorted([('vim.vm.device.VirtualE1000', 'DC0_DVPG0', True),
                                   ('vim.vm.device.VirtualVmxnet3Vrdma', 'DC0_DVPG1', True)])


def test_other_vms_are_left_alone(content):
    for name, vm in objects(content, vim.VirtualMachine).items():
        if name not in WORKER_VMS:
            assert not [d for d in vm.config.hardware.device if isinstance(d, vim.vm.device.VirtualVmxnet3Vrdma)]
