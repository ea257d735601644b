# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab's hardware double must look like the kernel's sysfs and unpack the same way every time."""

from __future__ import annotations

import os
import tarfile

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
