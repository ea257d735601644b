# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab's hardware double must look like the kernel's sysfs and unpack the same way every time."""

from __future__ import annotations

import os
import tarfile

import pytest

import sysfs_fixture


def test_archive_is_reproducible(tmp_path):
    profile = sysfs_fixture.load_profile(os.path.join(os.path.dirname(__file__), '..', '..', '..', 'lab',
                                                      'hardware', 'a100.yml'))
    first, second = tmp_path / 'first.tar.gz', tmp_path / 'second.tar.gz'
    sysfs_fixture.write_archive(profile, str(first))
    sysfs_fixture.write_archive(profile, str(second))
    assert first.read_bytes() == second.read_bytes()


def test_archive_keeps_kernel_style_links(tmp_path):
    profile = sysfs_fixture.load_profile(os.path.join(os.path.dirname(__file__), '..', '..', '..', 'lab',
                                                      'hardware', 'v100.yml'))
    archive = tmp_path / 'v100.tar.gz'
    sysfs_fixture.write_archive(profile, str(archive))
    with tarfile.open(str(archive)) as tar:
        members = dict((m.name, m) for m in tar.getmembers())
    link = members['sys/class/infiniband/mlx5_0']
    assert link.issym()
    assert link.linkname == '../../devices/pci0000:5d/0000:5d:00.0/0000:5e:00.0/infiniband/mlx5_0'
    device = members['sys/devices/pci0000:5d/0000:5d:00.0/0000:5e:00.0/infiniband/mlx5_0/device']
    assert device.issym() and device.linkname == '../../../0000:5e:00.0'
    assert members['sys/class/net/ibp94s0f0'].issym()
    assert all(m.mtime == sysfs_fixture.FIXED_MTIME for m in members.values())


def test_tree_resolves_like_sysfs(tmp_path, hardware):
    root = hardware('a100', tmp_path / 'sys')
    device = os.path.realpath(os.path.join(root, 'class', 'infiniband', 'mlx5_bond_0', 'device'))
    assert device == os.path.realpath(os.path.join(root, 'bus', 'pci', 'devices', '0000:3b:00.0'))
    assert os.listdir(os.path.join(root, 'class', 'infiniband', 'mlx5_bond_0', 'device', 'net')) == ['enp59s0f0np0']
    with open(os.path.join(root, 'class', 'infiniband', 'mlx5_1', 'ports', '1', 'state')) as handle:
        assert handle.read() == '4: ACTIVE\n'


def test_sr_iov_layout_is_the_kernels(tmp_path, hardware):
    """PF: sriov_totalvfs, sriov_numvfs, virtfnN -> ../<vf>; VF: physfn -> ../<pf>, its own infiniband and net."""
    root = hardware('roce_a100', tmp_path / 'sys')
    pf = os.path.join(root, 'bus', 'pci', 'devices', '0000:0b:00.0')
    with open(os.path.join(pf, 'sriov_numvfs')) as handle:
        assert handle.read() == '2\n'
    with open(os.path.join(pf, 'sriov_totalvfs')) as handle:
        assert handle.read() == '8\n'
    assert [os.readlink(os.path.join(pf, 'virtfn%d' % n)) for n in (0, 1)] == ['../0000:0b:00.2', '../0000:0b:00.3']
    assert not os.path.lexists(os.path.join(pf, 'virtfn2'))
    vf = os.path.join(root, 'bus', 'pci', 'devices', '0000:0b:00.2')
    assert os.readlink(os.path.join(vf, 'physfn')) == '../0000:0b:00.0'
    assert os.path.realpath(os.path.join(vf, 'physfn')) == os.path.realpath(pf)
    assert os.listdir(os.path.join(vf, 'infiniband')) == ['mlx5_8']
    assert os.listdir(os.path.join(vf, 'net')) == ['enp11s0f0v0']
    assert os.path.realpath(os.path.join(root, 'class', 'infiniband', 'mlx5_9', 'device')) == \
        os.path.realpath(os.path.join(root, 'bus', 'pci', 'devices', '0000:0b:00.3'))
    # the other PFs have no SR-IOV files at all, as functions without the capability
    assert not os.path.exists(os.path.join(root, 'bus', 'pci', 'devices', '0000:0c:00.0', 'sriov_numvfs'))


def test_sr_iov_links_survive_the_archive(tmp_path):
    profile = sysfs_fixture.load_profile(os.path.join(os.path.dirname(__file__), '..', '..', '..', 'lab',
                                                      'hardware', 'roce_a100.yml'))
    archive = tmp_path / 'roce.tar.gz'
    sysfs_fixture.write_archive(profile, str(archive))
    with tarfile.open(str(archive)) as tar:
        members = dict((m.name, m) for m in tar.getmembers())
    pf = 'sys/devices/pci0000:00/0000:00:01.0/0000:0b:00.0/'
    assert members[pf + 'virtfn1'].issym() and members[pf + 'virtfn1'].linkname == '../0000:0b:00.3'
    physfn = members['sys/devices/pci0000:00/0000:00:01.0/0000:0b:00.2/physfn']
    assert physfn.issym() and physfn.linkname == '../0000:0b:00.0'


def test_profile_with_a_vf_of_an_unknown_pf_is_refused(tmp_path):
    vf = {'name': 'mlx5_1', 'pci_address': '0000:04:00.2', 'physfn': '0000:04:00.0', 'pci_parent': 'pci0000:00',
          'node_guid': '0', 'ports': []}
    with pytest.raises(ValueError, match='physfn 0000:04:00.0 is not a physical function of this profile'):
        sysfs_fixture.build({'devices': [vf]}, str(tmp_path / 'sys'))
