# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The SR-IOV sysfs double (tests/doubles/sriov_sysfs.py) refuses what the kernel refuses, the way it refuses it.

Each rule is pinned to the kernel source stored in fixtures/public/sriov (Linux 6.18.44: sriov_numvfs_store,
kstrtou16, kstrtobool, the ABI documentation) and checked through the FUSE mount with real processes (bash's echo,
Python's os.write), so that what the module and the molecule scenario meet is what the kernel would answer.
"""

from __future__ import annotations

import errno
import os
import subprocess

import pytest
from hypothesis import given, settings, strategies as st

import sysfs_fixture

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, '..', '..', '..', '..'))
PUBLIC = os.path.join(REPO, 'tests', 'unit', 'fixtures', 'public', 'sriov')
DOUBLES = os.path.join(REPO, 'tests', 'doubles')

import sys  # noqa: E402  pylint: disable=wrong-import-position
sys.path.insert(0, DOUBLES)
import sriov_sysfs  # noqa: E402  pylint: disable=wrong-import-position,import-error

PF = '0000:0b:00.0'


def public(name):
    with open(os.path.join(PUBLIC, name)) as handle:
        return handle.read()


def roce_profile():
    """The lab's RoCE node cut to the SR-IOV PF mlx5_0 (with its two VFs), the PF mlx5_1 without SR-IOV and the
    other PFs' RDMA devices, GID tables of 16 entries: the same layout, built in a fraction of the time."""
    profile = sysfs_fixture.load_profile(os.path.join(REPO, 'lab', 'hardware', 'roce_a100.yml'))
    for device in profile['devices']:
        for port in device['ports']:
            port['gid_table_len'] = 16
        if device['pci_address'] not in (PF, '0000:0c:00.0', '0000:0b:00.2', '0000:0b:00.3'):
            device['netdevs'] = []
    return profile


@pytest.fixture
def roce(tmp_path):
    """The RoCE node served by the double at tmp/sys, booted (no VF); ``.backing`` is its tree."""
    backing = str(tmp_path / 'backing')
    sysfs_fixture.build(roce_profile(), backing)
    with sriov_sysfs.Mounted(backing, str(tmp_path / 'sys'), boot=True) as mounted:
        yield mounted


def pf_path(roce, name=''):
    return os.path.join(roce.mountpoint, 'bus', 'pci', 'devices', PF, name)


def write(path, data):
    """One write() of ``data``; the errno the kernel (here: the double) answered, or 0."""
    try:
        handle = os.open(path, os.O_WRONLY)
    except OSError as exc:
        return exc.errno
    try:
        os.write(handle, data)
    except OSError as exc:
        return exc.errno
    finally:
        os.close(handle)
    return 0


def read(path):
    with open(path) as handle:
        return handle.read()


def echo(value, path):
    """bash's echo into an attribute, as the recorded outputs ran it: (exit code, the error after 'echo: ')."""
    done = subprocess.run(['bash', '-c', 'echo %s > "$0"' % value, path], capture_output=True, text=True, check=False)
    return done.returncode, done.stderr.strip().split('echo: ', 1)[-1]


# ---------------------------------------------------------------- the parsers, as lib/kstrtox.c reads


def test_the_stored_kernel_source_is_what_the_double_follows():
    """The order and the errnos of sriov_numvfs_store, as stored: a change of the source shows up here."""
    source = public('linux-6.18-iov.c-sriov-attributes.txt')
    store = source[source.index('static ssize_t sriov_numvfs_store'):source.index('static ssize_t sriov_offset_show')]
    steps = ['kstrtou16(buf, 0, &num_vfs) < 0', 'return -EINVAL', 'return -ERANGE',
             'if (num_vfs == pdev->sriov->num_VFs)', 'ret = -ENOENT', 'if (num_vfs == 0)', 'ret = -EBUSY']
    positions = [store.index(step) for step in steps]
    assert positions == sorted(positions)
    assert 'kstrtobool(buf, &drivers_autoprobe) < 0' in source and 'DEVICE_ATTR_RW(sriov_drivers_autoprobe)' in source
    assert 'if (!dev_is_pf(dev))\n\t\treturn 0;' in source  # the attributes exist on PFs only
    assert 'if (*s == \'\\n\')\n\t\ts++;' in public('linux-6.18-kstrtox.c-kstrtoull.txt')  # one newline allowed
    assert 'if (tmp != (u16)tmp)\n\t\treturn -ERANGE;' in public('linux-6.18-kstrtox.c-kstrtou16.txt')


@pytest.mark.parametrize('data, value', [
    (b'4', 4), (b'4\n', 4), (b'+4\n', 4), (b'0x10', 16), (b'0X1f\n', 31), (b'010', 8), (b'0', 0), (b'00', 0),
    (b'65535', 65535), (b'4\x00garbage', 4),
])
def test_kstrtou16_reads_what_the_kernel_reads(data, value):
    assert sriov_sysfs.kstrtou16_base0(data) == value


@pytest.mark.parametrize('data', [b'', b'\n', b'-1', b' 4', b'4 ', b'4\n\n', b'08', b'0x', b'0x1g', b'65536', b'4.0',
                                  b'++4', b'four', b'\x00'])
def test_kstrtou16_refusals_are_einval(data):
    with pytest.raises(sriov_sysfs.SysfsError) as info:
        sriov_sysfs.kstrtou16_base0(data)
    assert info.value.errno == errno.EINVAL


@settings(deadline=None)
@given(st.integers(min_value=0, max_value=0xffff), st.sampled_from(['%d', '+%d', '0x%x', '0X%X', '0%o', '%d\n']))
def test_kstrtou16_reads_every_spelling_of_a_count(number, spelling):
    assert sriov_sysfs.kstrtou16_base0((spelling % number).encode()) == number


@settings(deadline=None)
@given(st.binary(max_size=12))
def test_kstrtou16_takes_any_bytes_without_crashing(data):
    try:
        value = sriov_sysfs.kstrtou16_base0(data)
    except sriov_sysfs.SysfsError as exc:
        assert exc.errno == errno.EINVAL
    else:
        assert 0 <= value <= 0xffff


@pytest.mark.parametrize('data, value', [(b'1', True), (b'0', False), (b'y', True), (b'N', False), (b'on', True),
                                         (b'off', False), (b'true\n', True), (b'False', False), (b'enable', True),
                                         (b'disable', False), (b'1garbage', True)])
def test_kstrtobool_reads_the_first_character(data, value):
    assert sriov_sysfs.kstrtobool(data) is value


@pytest.mark.parametrize('data', [b'', b'2', b'o', b'ox', b' 1', b'-1'])
def test_kstrtobool_refusals_are_einval(data):
    with pytest.raises(sriov_sysfs.SysfsError) as info:
        sriov_sysfs.kstrtobool(data)
    assert info.value.errno == errno.EINVAL


# ---------------------------------------------------------------- the rules, through the FUSE mount


def test_the_abi_documentation_examples(roce):
    """'writing a 2 to this file when sriov_numvfs is not 0 and not 2 already will return an error. Writing a 10 when
    the value of sriov_totalvfs is 8 will return an error.'"""
    documentation = public('linux-6.18-abi-sysfs-bus-pci-sriov-totalvfs-numvfs.txt')
    assert 'writing a 2 to this file when sriov_numvfs\n\t\tis not 0 and not 2 already will return an error' \
        in documentation
    assert read(pf_path(roce, 'sriov_totalvfs')) == '8\n'
    assert write(pf_path(roce, 'sriov_numvfs'), b'10') == errno.ERANGE
    assert write(pf_path(roce, 'sriov_numvfs'), b'3') == 0
    assert write(pf_path(roce, 'sriov_numvfs'), b'2') == errno.EBUSY
    assert write(pf_path(roce, 'sriov_numvfs'), b'3') == 0  # the count it has: a no-op
    assert write(pf_path(roce, 'sriov_numvfs'), b'0') == 0
    assert write(pf_path(roce, 'sriov_numvfs'), b'2') == 0
    assert read(pf_path(roce, 'sriov_numvfs')) == '2\n'


def test_vfs_appear_as_the_kernel_creates_them(roce):
    assert write(pf_path(roce, 'sriov_numvfs'), b'3\n') == 0
    assert [os.readlink(pf_path(roce, 'virtfn%d' % n)) for n in range(3)] == [
        '../0000:0b:00.2', '../0000:0b:00.3', '../0000:0b:00.4']
    vf = os.path.join(roce.mountpoint, 'bus', 'pci', 'devices', '0000:0b:00.4')
    assert os.readlink(os.path.join(vf, 'physfn')) == '../0000:0b:00.0'
    assert os.path.basename(os.readlink(os.path.join(vf, 'driver'))) == 'mlx5_core'
    assert read(os.path.join(vf, 'device')) == '0x1018\n'  # sriov_vf_device of a ConnectX-5 PF (0x1017)
    assert os.listdir(os.path.join(vf, 'net')) == ['enp11s0f0v2']
    # the RDMA devices take the lowest free mlx5_N: mlx5_8 .. mlx5_10 after the PFs' mlx5_0 .. mlx5_7
    assert os.listdir(os.path.join(vf, 'infiniband')) == ['mlx5_10']
    assert read(os.path.join(roce.mountpoint, 'class', 'infiniband', 'mlx5_10', 'hca_type')) == 'MT4120\n'
    assert os.path.realpath(os.path.join(roce.mountpoint, 'class', 'net', 'enp11s0f0v2', 'device')) == \
        os.path.realpath(vf)
    assert write(pf_path(roce, 'sriov_numvfs'), b'0') == 0
    assert not os.path.lexists(pf_path(roce, 'virtfn0')) and not os.path.lexists(vf)
    assert not os.path.lexists(os.path.join(roce.mountpoint, 'class', 'net', 'enp11s0f0v2'))


def test_drivers_autoprobe_applies_when_vfs_are_created(roce):
    documentation = public('linux-6.18-abi-sysfs-bus-pci-sriov-drivers-autoprobe.txt')
    assert 'changing this file does not affect already-\n\t\tenabled VFs' in documentation
    assert write(pf_path(roce, 'sriov_numvfs'), b'1') == 0
    assert write(pf_path(roce, 'sriov_drivers_autoprobe'), b'0') == 0
    existing = os.path.join(roce.mountpoint, 'bus', 'pci', 'devices', '0000:0b:00.2')
    assert os.path.lexists(os.path.join(existing, 'driver'))  # not affected
    assert write(pf_path(roce, 'sriov_numvfs'), b'0') == 0
    assert write(pf_path(roce, 'sriov_numvfs'), b'2') == 0
    vf = os.path.join(roce.mountpoint, 'bus', 'pci', 'devices', '0000:0b:00.3')
    assert not os.path.lexists(os.path.join(vf, 'driver')) and not os.path.exists(os.path.join(vf, 'net'))
    assert write(pf_path(roce, 'sriov_drivers_autoprobe'), b'maybe') == errno.EINVAL
    assert read(pf_path(roce, 'sriov_drivers_autoprobe')) == '0\n'


def test_no_op_comes_before_the_driver_check(roce, tmp_path):
    """A PF without a driver answers ENOENT to a change, but its own count succeeds (the kernel checks equality
    first); more than sriov_totalvfs is ERANGE before either."""
    backing_pf = os.path.join(roce.backing, 'bus', 'pci', 'devices', PF)
    os.unlink(os.path.join(os.path.realpath(backing_pf), 'driver'))
    assert write(pf_path(roce, 'sriov_numvfs'), b'0') == 0
    assert write(pf_path(roce, 'sriov_numvfs'), b'1') == errno.ENOENT
    assert write(pf_path(roce, 'sriov_numvfs'), b'9') == errno.ERANGE
    assert write(pf_path(roce, 'sriov_numvfs'), b'x') == errno.EINVAL


def test_a_driver_without_sysfs_sr_iov_is_enoent(roce):
    backing_pf = os.path.realpath(os.path.join(roce.backing, 'bus', 'pci', 'devices', PF))
    os.unlink(os.path.join(backing_pf, 'driver'))
    os.makedirs(os.path.join(roce.backing, 'bus', 'pci', 'drivers', 'mlx4_core'))
    os.symlink('../../../../bus/pci/drivers/mlx4_core', os.path.join(backing_pf, 'driver'))
    assert write(pf_path(roce, 'sriov_numvfs'), b'2') == errno.ENOENT


def test_everything_else_is_read_only_as_on_sysfs(roce):
    assert write(pf_path(roce, 'sriov_totalvfs'), b'16') == errno.EACCES
    assert write(os.path.join(roce.mountpoint, 'class', 'net', 'enp11s0f0np0', 'mtu'), b'9000') == errno.EACCES
    # a PF without the SR-IOV capability has no attribute to write
    other = os.path.join(roce.mountpoint, 'bus', 'pci', 'devices', '0000:0c:00.0')
    assert not os.path.exists(os.path.join(other, 'sriov_numvfs'))
    for action, number in ((lambda: open(os.path.join(other, 'sriov_numvfs'), 'w'), errno.EACCES),
                           (lambda: os.mkdir(os.path.join(other, 'new')), errno.EPERM),
                           (lambda: os.unlink(os.path.join(other, 'vendor')), errno.EPERM),
                           (lambda: os.rename(os.path.join(other, 'vendor'), os.path.join(other, 'v2')), errno.EPERM),
                           (lambda: os.symlink('x', os.path.join(other, 'link')), errno.EPERM)):
        with pytest.raises(OSError) as info:
            action()
        assert info.value.errno == number


def test_metadata_looks_like_sysfs(roce):
    info = os.lstat(pf_path(roce, 'sriov_totalvfs'))
    assert (info.st_size, oct(info.st_mode & 0o777)) == (4096, '0o444')
    assert oct(os.lstat(pf_path(roce, 'sriov_numvfs')).st_mode & 0o777) == '0o644'
    assert write(pf_path(roce, 'sriov_numvfs'), b'1') == 0
    assert os.lstat(pf_path(roce, 'virtfn0')).st_size == 0


def test_boot_removes_every_vf(tmp_path):
    backing = str(tmp_path / 'backing')
    sysfs_fixture.build(roce_profile(), backing)
    sysfs = sriov_sysfs.SriovSysfs(backing)
    directory = sysfs.function_dir(PF)
    assert sysfs.numvfs(directory) == 2  # the profile's two VFs
    sysfs.boot()
    assert sysfs.numvfs(directory) == 0 and not os.path.lexists(os.path.join(directory, 'virtfn0'))
    assert not os.path.lexists(os.path.join(backing, 'class', 'infiniband', 'mlx5_8'))
    assert sysfs.pfs() == [PF]


# ---------------------------------------------------------------- the recorded outputs, reproduced


def test_shell_errors_read_as_recorded(roce):
    """bash prints the kernel's errno as strerror: the double's answers read as the recorded ones."""
    recorded = public('i915-sriov-dkms-143-enoent-erange.txt').splitlines()
    assert recorded[4] == '-bash: echo: write error: Numerical result out of range'
    assert echo(9, pf_path(roce, 'sriov_numvfs')) == (1, recorded[4].split('echo: ', 1)[1])
    assert echo(2, pf_path(roce, 'sriov_numvfs'))[0] == 0
    busy = public('k8s-rdma-sriov-dev-plugin-12-echo-ebusy.txt').splitlines()[2]
    assert echo(8, pf_path(roce, 'sriov_numvfs')) == (1, busy.split('echo: ', 1)[1])
    assert public('doca-platform-58-ebusy.txt').rstrip().endswith('sriov_numvfs: device or resource busy')
    enoent = public('i915-sriov-dkms-105-echo-enoent.txt').strip()
    assert echo(0, pf_path(roce, 'sriov_numvfs'))[0] == 0
    os.unlink(os.path.join(os.path.realpath(os.path.join(roce.backing, 'bus', 'pci', 'devices', PF)), 'driver'))
    assert echo(3, pf_path(roce, 'sriov_numvfs')) == (1, enoent.split('echo: ', 1)[1])


def test_listing_of_a_pf_with_four_vfs(tmp_path):
    """The hwloc listing: virtfn0..3 of 04:00.0 point at 04:00.1..4 (offset 1, stride 1), the VF's physfn back."""
    listing = public('hwloc-242-pf-vf-listing.txt').splitlines()
    links = dict(line.split()[-3:][0::2] for line in listing if line.startswith('l'))
    assert links == {'virtfn0': '../0000:04:00.1/', 'virtfn1': '../0000:04:00.2/', 'virtfn2': '../0000:04:00.3/',
                     'virtfn3': '../0000:04:00.4/', 'physfn': '../0000:04:00.0/'}
    profile = {'devices': [{'name': 'mlx5_0', 'pci_address': '0000:04:00.0', 'pci_parent': 'pci0000:00',
                            'node_guid': '0c42:a103:0000:0001', 'sriov_totalvfs': 7, 'sriov_offset': 1,
                            'sriov_stride': 1, 'ports': []}]}
    backing = str(tmp_path / 'backing')
    sysfs_fixture.build(profile, backing)
    with sriov_sysfs.Mounted(backing, str(tmp_path / 'sys')) as mounted:
        pf = os.path.join(mounted.mountpoint, 'bus', 'pci', 'devices', '0000:04:00.0')
        assert write(os.path.join(pf, 'sriov_numvfs'), b'4') == 0
        # `ls -F` shows a link to a directory with a trailing slash
        assert dict(('virtfn%d' % n, os.readlink(os.path.join(pf, 'virtfn%d' % n)) + '/') for n in range(4)) == \
            dict((k, v) for k, v in links.items() if k != 'physfn')
        vf = os.path.join(mounted.mountpoint, 'bus', 'pci', 'devices', '0000:04:00.2')
        assert os.readlink(os.path.join(vf, 'physfn')) + '/' == links['physfn']
        sizes = dict((line.split()[-1], int(line.split()[4])) for line in listing
                     if line.startswith('-'))
        assert sizes == {'sriov_numvfs': 4096, 'sriov_totalvfs': 4096}
        assert os.lstat(os.path.join(pf, 'sriov_numvfs')).st_size == sizes['sriov_numvfs']
        assert [line.split()[0] for line in listing if line.endswith('sriov_totalvfs')] == ['-r--r--r--']
        assert not os.lstat(os.path.join(pf, 'sriov_totalvfs')).st_mode & 0o222
