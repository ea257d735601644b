# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one device resolver of the firmware modules, on a sysfs tree laid out as the kernel does (class/infiniband/X/
device is a link into the PCI device tree). Expected answers written by hand."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils.firmware._device import DeviceError, resolve_device


@pytest.fixture
def sysfs(tmp_path):
    pci = tmp_path / 'devices' / 'pci0000:80' / '0000:80:01.0'
    for function, name in (('0000:86:00.0', 'mlx5_0'), ('0000:86:00.1', 'mlx5_1'), ('0000:87:00.0', None)):
        (pci / function).mkdir(parents=True)
        os.symlink(str(pci / function), str(_mkdir(tmp_path / 'bus' / 'pci' / 'devices') / function))
        if name:
            (pci / function / 'infiniband' / name).mkdir(parents=True)
            os.symlink(str(pci / function), str(_mkdir(tmp_path / 'class' / 'infiniband' / name) / 'device'))
    # a software RDMA device (rxe): its device link leads to a netdev, not a PCI function
    (tmp_path / 'devices' / 'virtual' / 'net' / 'eth0').mkdir(parents=True)
    os.symlink(str(tmp_path / 'devices' / 'virtual' / 'net' / 'eth0'),
               str(_mkdir(tmp_path / 'class' / 'infiniband' / 'rxe0') / 'device'))
    return tmp_path


def _mkdir(path):
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_a_pci_address_of_the_host_with_its_rdma_name(sysfs):
    assert resolve_device('86:00.1', str(sysfs), rdma_name=True) == ('0000:86:00.1', '0000:86:00.1', 'mlx5_1')
    assert resolve_device('0000:86:00.0', str(sysfs)) == ('0000:86:00.0', '0000:86:00.0', None)
    # a ConnectX function without an RDMA driver bound has no name, and is still a device
    assert resolve_device('0000:87:00.0', str(sysfs), rdma_name=True) == ('0000:87:00.0', '0000:87:00.0', None)


def test_an_rdma_name_becomes_its_pci_function(sysfs):
    assert resolve_device(' mlx5_0 ', str(sysfs)) == ('0000:86:00.0', '0000:86:00.0', 'mlx5_0')


def test_a_device_path_is_passed_through(sysfs):
    device = sysfs / 'mt4119_pciconf0'
    device.write_text('')
    assert resolve_device(str(device), str(sysfs)) == (str(device), None, None)


@pytest.mark.parametrize('requested, message, kind', [
    ('', 'device is empty: give a PCI address (0000:86:00.0), an MST device path', 'input'),
    (None, 'device is empty', 'input'),
    ('0000:af:00.0', 'there is no PCI function 0000:af:00.0 on this host (see `lspci -D -d 15b3:`).', 'not_found'),
    ('mlx5_9', 'mlx5_9 is not a PCI address, an MST device path or an RDMA device of this host (RDMA devices: '
               'mlx5_0, mlx5_1, rxe0).', 'not_found'),
    ('../mlx5_0', 'is not a PCI address', 'not_found'),
    ('rxe0', 'RDMA device rxe0 is not a PCI device; the firmware tools work on ConnectX PCI functions only.', 'input'),
    ('/dev/mst/mt4119_pciconf9', 'MST device /dev/mst/mt4119_pciconf9 does not exist: run `mst start`', 'input'),
])
def test_what_the_host_does_not_have_is_refused_naming_it(sysfs, requested, message, kind):
    with pytest.raises(DeviceError) as caught:
        resolve_device(requested, str(sysfs))
    assert message in str(caught.value)
    assert caught.value.kind == kind


def test_a_directory_and_an_unlistable_sysfs_are_named(sysfs):
    with pytest.raises(DeviceError, match='devices entry %s is a directory, not a device' % sysfs):
        resolve_device(str(sysfs), str(sysfs), label='devices entry')
    (sysfs / 'class' / 'infiniband' / 'mlx5_0' / 'device').unlink()
    (sysfs / 'class' / 'infiniband').rename(sysfs / 'class' / 'ib-moved')
    (sysfs / 'class' / 'infiniband').write_text('')
    with pytest.raises(DeviceError, match='Cannot read sysfs: .*class/infiniband is not a directory. Point sysfs_root') as caught:
        resolve_device('mlx5_0', str(sysfs))
    assert caught.value.kind == 'sysfs'
