# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sriov_vfs against the SR-IOV sysfs double mounted over the lab's RoCE node (tests/doubles/sriov_sysfs.py).

The double answers writes with the kernel's errnos in the kernel's order (test_sriov_vfs_double.py pins that), so
every test here runs the module's real writes (os.open/os.write on the FUSE mount) and reads the tree afterwards
the way the kernel would show it.
"""

from __future__ import annotations

import errno
import os
import sys

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpunet.rdma.plugins.module_utils.tuning import _sriov
from ansible_collections.gpunet.rdma.plugins.modules import sriov_vfs

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, '..', '..', '..', '..'))
PUBLIC = os.path.join(REPO, 'tests', 'unit', 'fixtures', 'public', 'sriov')
sys.path.insert(0, os.path.join(REPO, 'tests', 'doubles'))
import sriov_sysfs  # noqa: E402  pylint: disable=wrong-import-position,import-error

PF = '0000:0b:00.0'
PF_NAME = '0000:0b:00.0 (mlx5_0, enp11s0f0np0)'


@pytest.fixture
def roce_profile(sysfs_profile):
    """The lab's RoCE node with small GID tables (same layout, built faster); only mlx5_0 has SR-IOV (8 VFs)."""
    profile = sysfs_profile('roce_a100')
    for device in profile['devices']:
        for port in device['ports']:
            port['gid_table_len'] = 16
    return profile


@pytest.fixture
def node(tmp_path, hardware, roce_profile):
    """The RoCE node served by the double (booted: no VF yet); ``.mountpoint`` is the sysfs_root."""
    backing = hardware(roce_profile, tmp_path / 'backing')
    with sriov_sysfs.Mounted(backing, str(tmp_path / 'sys'), boot=True) as mounted:
        yield mounted


def numvfs(node, pci=PF):
    with open(os.path.join(node.mountpoint, 'bus', 'pci', 'devices', pci, 'sriov_numvfs')) as handle:
        return int(handle.read())


def pfs(pf=PF, num_vfs=2, **extra):
    return [dict(pf=pf, num_vfs=num_vfs, **extra)]


# ---------------------------------------------------------------- creation, idempotence, facts


def test_creates_vfs_on_a_pf_without_vfs_and_returns_their_facts(node, run_module):
    result = run_module(sriov_vfs, {'pfs': pfs('mlx5_0', 2, drivers_autoprobe=True), 'sysfs_root': node.mountpoint})[1]
    assert result['changed'] is True and 'failed' not in result
    pf = result['pfs'][0]
    assert (pf['pf'], pf['pci_address'], pf['before'], pf['sriov_numvfs'], pf['wanted'], pf['action']) == \
        ('mlx5_0', PF, 0, 2, 2, 'create')
    assert (pf['sriov_totalvfs'], pf['driver'], pf['netdevs'], pf['rdma_devices'], pf['drivers_autoprobe']) == \
        (8, 'mlx5_core', ['enp11s0f0np0'], ['mlx5_0'], True)
    assert pf['vfs'] == [
        {'index': 0, 'pci_address': '0000:0b:00.2', 'driver': 'mlx5_core', 'netdev': 'enp11s0f0v0',
         'rdma_device': 'mlx5_8'},
        {'index': 1, 'pci_address': '0000:0b:00.3', 'driver': 'mlx5_core', 'netdev': 'enp11s0f0v1',
         'rdma_device': 'mlx5_9'}]
    assert result['persist'] == ['0000:0b:00.0 2 1'] and result['pending'] == []
    assert result['msg'] == '%s: 0 -> 2 VFs: nothing exists that could be in use' % PF_NAME
    assert numvfs(node) == 2

    again = run_module(sriov_vfs, {'pfs': pfs('mlx5_0', 2, drivers_autoprobe=True), 'sysfs_root': node.mountpoint})[1]
    assert again['changed'] is False and again['pfs'][0]['action'] == 'none'
    assert again['pfs'][0]['vfs'] == pf['vfs']
    assert again['msg'] == '%s: as wanted (2 VFs)' % PF_NAME


@pytest.mark.parametrize('name', ['0b:00.0', PF, 'enp11s0f0np0', 'mlx5_0'])
def test_a_pf_is_named_by_pci_address_netdev_or_rdma_device(node, run_module, name):
    result = run_module(sriov_vfs, {'pfs': pfs(name, 1), 'sysfs_root': node.mountpoint})[1]
    assert result['pfs'][0]['pci_address'] == PF and numvfs(node) == 1


def test_check_mode_writes_nothing_and_shows_the_diff(node, run_module):
    result = run_module(sriov_vfs, {'pfs': pfs(PF, 4, drivers_autoprobe=False), 'sysfs_root': node.mountpoint},
                        check_mode=True, diff=True)[1]
    assert result['changed'] is True and result['pfs'][0]['action'] == 'create'
    assert result['pfs'][0]['sriov_numvfs'] == 4 and result['pfs'][0]['vfs'] == []
    assert result['diff']['before'] == '%s sriov_numvfs 0\n%s sriov_drivers_autoprobe 1\n' % (PF, PF)
    assert result['diff']['after'] == '%s sriov_numvfs 4\n%s sriov_drivers_autoprobe 0\n' % (PF, PF)
    assert numvfs(node) == 0
    with open(os.path.join(node.mountpoint, 'bus', 'pci', 'devices', PF, 'sriov_drivers_autoprobe')) as handle:
        assert handle.read() == '1\n'


def test_unbound_vfs_when_autoprobe_is_off(node, run_module):
    result = run_module(sriov_vfs, {'pfs': pfs(PF, 2, drivers_autoprobe=False), 'sysfs_root': node.mountpoint})[1]
    assert result['pfs'][0]['drivers_autoprobe'] is False
    vfs = result['pfs'][0]['vfs']
    assert [(vf['driver'], vf['netdev'], vf['rdma_device']) for vf in vfs] == [(None, None, None)] * 2


# ---------------------------------------------------------------- changing a count that is not zero


def test_a_change_of_existing_vfs_waits_without_permission(node, run_module):
    run_module(sriov_vfs, {'pfs': pfs(PF, 2), 'sysfs_root': node.mountpoint})
    result = run_module(sriov_vfs, {'pfs': pfs(PF, 4), 'sysfs_root': node.mountpoint})[1]
    assert result['changed'] is False and result['pfs'][0]['action'] == 'pending'
    assert result['pending'] == ['%s: 2 -> 4 VFs destroys the 2 VFs the PF has (pods or VMs using them lose them)'
                                 % PF_NAME]
    assert result['persist'] == ['0000:0b:00.0 4 -'] and numvfs(node) == 2
    removal = run_module(sriov_vfs, {'pfs': pfs(PF, 0), 'sysfs_root': node.mountpoint})[1]
    assert removal['pfs'][0]['action'] == 'pending' and numvfs(node) == 2


def test_a_change_writes_zero_first_when_allowed(node, run_module):
    run_module(sriov_vfs, {'pfs': pfs(PF, 2), 'sysfs_root': node.mountpoint})
    result = run_module(sriov_vfs, {'pfs': pfs(PF, 4), 'allow_change': True, 'sysfs_root': node.mountpoint},
                        diff=True)[1]
    assert result['changed'] is True and result['pfs'][0]['action'] == 'change'
    assert [vf['pci_address'] for vf in result['pfs'][0]['vfs']] == [
        '0000:0b:00.2', '0000:0b:00.3', '0000:0b:00.4', '0000:0b:00.5']
    assert numvfs(node) == 4 and result['diff']['before'].startswith('%s sriov_numvfs 2\n' % PF)
    gone = run_module(sriov_vfs, {'pfs': pfs(PF, 0), 'allow_change': True, 'sysfs_root': node.mountpoint})[1]
    assert gone['pfs'][0]['vfs'] == [] and numvfs(node) == 0


def test_creation_can_wait_for_the_batch_too(node, run_module):
    result = run_module(sriov_vfs, {'pfs': pfs(PF, 2), 'create': False, 'sysfs_root': node.mountpoint})[1]
    assert result['changed'] is False and result['pending'] == ['%s: 0 -> 2 VFs waits for the node\'s batch' % PF_NAME]
    assert numvfs(node) == 0


# ---------------------------------------------------------------- refusals: nothing written


def refused(node, run_module, args):
    result = run_module(sriov_vfs, dict({'sysfs_root': node.mountpoint}, **args))[1]
    assert result['failed'] is True and result['changed'] is False and result['msg'].startswith('Nothing was written.')
    assert numvfs(node) == 0
    return result['msg']


def test_more_than_totalvfs_is_refused_with_the_firmware_fix(node, run_module):
    message = refused(node, run_module, {'pfs': pfs(PF, 9)})
    assert '%s: 9 VFs wanted, more than sriov_totalvfs 8 (the kernel refuses with ERANGE)' % PF_NAME in message
    assert 'NUM_OF_VFS: 9 (or more) in gpunet_rdma_fabric.firmware.params' in message


def test_every_refusal_is_named_before_anything_is_written(node, run_module):
    message = refused(node, run_module, {'pfs': [{'pf': PF, 'num_vfs': 2}, {'pf': 'mlx5_1', 'num_vfs': 2},
                                                 {'pf': 'enp99s0', 'num_vfs': 1}]})
    assert '0000:0c:00.0 (mlx5_1, enp12s0f0np0) has no SR-IOV capability (no sriov_totalvfs)' in message
    assert "enp99s0 is neither a PCI address nor a network interface or RDMA device of this host; SR-IOV capable " \
           "PFs here: %s" % PF_NAME in message


def test_a_pf_without_sr_iov_may_ask_for_none(node, run_module):
    result = run_module(sriov_vfs, {'pfs': pfs('mlx5_1', 0), 'sysfs_root': node.mountpoint})[1]
    assert result['changed'] is False and result['pfs'][0]['action'] == 'none'


def test_a_vf_is_refused_naming_its_pf(node, run_module):
    run_module(sriov_vfs, {'pfs': pfs(PF, 2), 'sysfs_root': node.mountpoint})
    result = run_module(sriov_vfs, {'pfs': pfs('0000:0b:00.3', 1), 'sysfs_root': node.mountpoint})[1]
    assert result['failed'] is True
    assert '0000:0b:00.3 (mlx5_9, enp11s0f0v1) is an SR-IOV virtual function of %s' % PF in result['msg']


def test_the_same_pf_twice_is_refused(node, run_module):
    message = refused(node, run_module, {'pfs': [{'pf': 'mlx5_0', 'num_vfs': 1}, {'pf': '0b:00.0', 'num_vfs': 2}]})
    assert 'mlx5_0 and 0b:00.0 are the same PF (0000:0b:00.0); name each PF once.' in message


def test_a_pf_without_driver_is_refused_before_the_kernel_says_enoent(node, run_module):
    os.unlink(os.path.join(os.path.realpath(os.path.join(node.backing, 'bus', 'pci', 'devices', PF)), 'driver'))
    message = refused(node, run_module, {'pfs': pfs(PF, 2)})
    assert 'has no driver bound (no driver link), so the kernel cannot create VFs (ENOENT)' in message
    # its own count needs no driver: the kernel's no-op comes first
    assert run_module(sriov_vfs, {'pfs': pfs(PF, 0), 'sysfs_root': node.mountpoint})[1]['changed'] is False


FIRMWARE = [{'device': 'mlx5_0', 'pci_address': PF, 'values': {
    'NUM_OF_VFS': {'current': '8', 'next_boot': '16'}, 'SRIOV_EN': {'current': 'True(1)', 'next_boot': 'True(1)'}}}]


def test_firmware_that_allows_fewer_is_refused(node, run_module):
    firmware = [{'pci_address': PF, 'values': {'NUM_OF_VFS': {'current': '8', 'next_boot': '4'}}}]
    message = refused(node, run_module, {'pfs': pfs(PF, 6), 'firmware': firmware})
    assert '%s: 6 VFs wanted, but the firmware allows 4 (NUM_OF_VFS 4 after the next boot)' % PF_NAME in message


def test_firmware_with_sr_iov_disabled_next_boot_is_refused(node, run_module):
    firmware = [{'pci_address': PF, 'values': {'SRIOV_EN': {'current': 'True(1)', 'next_boot': 'False(0)'}}}]
    message = refused(node, run_module, {'pfs': pfs(PF, 2), 'firmware': firmware})
    assert 'the firmware has SR-IOV disabled (SRIOV_EN False, also after the next boot)' in message


def test_a_count_the_firmware_allows_after_its_activation_waits(node, run_module):
    result = run_module(sriov_vfs, {'pfs': pfs(PF, 12), 'firmware': FIRMWARE, 'sysfs_root': node.mountpoint})[1]
    assert result['changed'] is False and result['pfs'][0]['action'] == 'waiting_for_firmware'
    assert result['waiting_for_firmware'] == [
        '%s: the firmware allows 16 VFs after the next boot (NUM_OF_VFS), 8 now (sriov_totalvfs); the VFs can be '
        'created after a firmware reset or reboot' % PF_NAME]
    assert result['persist'] == ['0000:0b:00.0 12 -'] and numvfs(node) == 0
    # and within both limits it is simply done
    _code, result = run_module(sriov_vfs, {'pfs': pfs(PF, 8), 'firmware': FIRMWARE, 'sysfs_root': node.mountpoint})
    assert result['changed'] is True


def test_a_pf_whose_firmware_enables_sr_iov_next_boot_waits(node, run_module):
    values = {'NUM_OF_VFS': {'current': '0', 'next_boot': '8'},
              'SRIOV_EN': {'current': 'False(0)', 'next_boot': 'True(1)'}}
    firmware = [{'pci_address': '0000:0c:00.0', 'values': values}]
    result = run_module(sriov_vfs, {'pfs': pfs('mlx5_1', 4), 'firmware': firmware, 'sysfs_root': node.mountpoint})[1]
    assert result['pfs'][0]['action'] == 'waiting_for_firmware' and 'failed' not in result


# ---------------------------------------------------------------- not a kernel


def test_a_plain_file_tree_is_detected_and_put_back(tmp_path, hardware, roce_profile, run_module):
    """A plain file takes any write and grows no virtfnN link: the module says so and restores the file."""
    profile = roce_profile
    profile['devices'] = [d for d in profile['devices'] if not d.get('physfn')]  # mlx5_0 without VFs
    root = hardware(profile, tmp_path / 'sys')
    attribute = os.path.join(root, 'bus', 'pci', 'devices', PF, 'sriov_numvfs')
    result = run_module(sriov_vfs, {'pfs': pfs(PF, 2), 'sysfs_root': root})[1]
    assert result['failed'] is True
    assert 'sriov_numvfs says 2 VFs but there are 0 virtfnN links' in result['msg']
    assert 'is not the kernel\'s sysfs (a plain file accepts any write)' in result['msg']
    assert 'sriov_numvfs set back to what it was.' in result['msg']
    with open(attribute) as handle:
        assert handle.read() == '0\n'


def test_a_write_truncates_a_longer_old_value(tmp_path, hardware, roce_profile):
    """A plain file keeps the tail of a longer old value unless the write truncates: "10\\n" then "0\\n" is "0\\n"."""
    hardware(roce_profile, tmp_path / 'sys')
    sysfs = _sriov.SysfsPci(str(tmp_path / 'sys'))
    sysfs.write(PF, 'sriov_numvfs', 10)
    sysfs.write(PF, 'sriov_numvfs', 0)
    with open(sysfs.attribute(PF, 'sriov_numvfs')) as handle:
        assert handle.read() == '0\n'


# ---------------------------------------------------------------- several PFs: a failure puts the earlier ones back

PF2 = '0000:0c:00.0'
PF2_NAME = '0000:0c:00.0 (mlx5_1, enp12s0f0np0)'


@pytest.fixture
def two_pfs(tmp_path, hardware, roce_profile):
    """The RoCE node with SR-IOV on mlx5_1 too (4 VFs), served by the double."""
    profile = roce_profile
    for device in profile['devices']:
        if device['name'] == 'mlx5_1':
            device['sriov_totalvfs'] = 4
    backing = hardware(profile, tmp_path / 'backing')
    with sriov_sysfs.Mounted(backing, str(tmp_path / 'sys'), boot=True) as mounted:
        yield mounted


def autoprobe(node, pci=PF):
    with open(os.path.join(node.mountpoint, 'bus', 'pci', 'devices', pci, 'sriov_drivers_autoprobe')) as handle:
        return int(handle.read())


def fail_writes_to(monkeypatch, pci, attribute, number):
    real = _sriov.SysfsPci.write

    def write(self, address, name, value):
        if (address, name) == (pci, attribute):
            raise OSError(number, os.strerror(number), self.attribute(address, name))
        return real(self, address, name, value)
    monkeypatch.setattr(_sriov.SysfsPci, 'write', write)


def test_a_failure_on_a_later_pf_undoes_the_earlier_ones(two_pfs, run_module, monkeypatch):
    fail_writes_to(monkeypatch, PF2, 'sriov_numvfs', errno.ENOMEM)
    result = run_module(sriov_vfs, {'pfs': [{'pf': PF, 'num_vfs': 2, 'drivers_autoprobe': False},
                                            {'pf': PF2, 'num_vfs': 2}], 'sysfs_root': two_pfs.mountpoint})[1]
    assert result['failed'] is True
    assert result['msg'].startswith('%s: writing 2 to sriov_numvfs failed: Cannot allocate memory (' % PF2_NAME)
    assert result['msg'].endswith('Changed before the failure and undone: sriov_drivers_autoprobe 1 -> 0 and '
                                  'sriov_numvfs 0 -> 2 on %s.' % PF_NAME)
    assert (numvfs(two_pfs), autoprobe(two_pfs), numvfs(two_pfs, PF2)) == (0, 1, 0)
    assert result['written'] == [
        {'pci_address': PF, 'attribute': 'sriov_drivers_autoprobe', 'value': 0},
        {'pci_address': PF, 'attribute': 'sriov_numvfs', 'value': 2},
        {'pci_address': PF, 'attribute': 'sriov_drivers_autoprobe', 'value': 1},
        {'pci_address': PF, 'attribute': 'sriov_numvfs', 'value': 0}]
    assert result['changed'] is True and result['pf'] == PF2


def test_an_undone_change_gets_the_old_count_back(two_pfs, run_module, monkeypatch):
    run_module(sriov_vfs, {'pfs': [{'pf': PF, 'num_vfs': 2}], 'sysfs_root': two_pfs.mountpoint})
    fail_writes_to(monkeypatch, PF2, 'sriov_numvfs', errno.EIO)
    result = run_module(sriov_vfs, {'pfs': [{'pf': PF, 'num_vfs': 4}, {'pf': PF2, 'num_vfs': 1}], 'allow_change': True,
                                    'sysfs_root': two_pfs.mountpoint})[1]
    assert 'Changed before the failure and undone: sriov_numvfs 2 -> 4 on %s.' % PF_NAME in result['msg']
    assert (numvfs(two_pfs), numvfs(two_pfs, PF2)) == (2, 0)


def test_the_failing_pf_is_put_back_too(two_pfs, run_module, monkeypatch):
    """A change writes 0, then the count: when the count fails, the PF gets its VFs again."""
    run_module(sriov_vfs, {'pfs': [{'pf': PF2, 'num_vfs': 1}], 'sysfs_root': two_pfs.mountpoint})
    real = _sriov.SysfsPci.write

    def write(self, address, name, value):
        if (address, name, value) == (PF2, 'sriov_numvfs', 3):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, address, name, value)
    monkeypatch.setattr(_sriov.SysfsPci, 'write', write)
    result = run_module(sriov_vfs, {'pfs': [{'pf': PF, 'num_vfs': 1}, {'pf': PF2, 'num_vfs': 3}], 'allow_change': True,
                                    'sysfs_root': two_pfs.mountpoint})[1]
    assert ('sriov_numvfs set back to what it was (its 1 VFs were created again: whatever used the old ones lost '
            'them). Changed before the failure and undone: sriov_numvfs 0 -> 1 on %s.' % PF_NAME) in result['msg']
    assert (numvfs(two_pfs), numvfs(two_pfs, PF2)) == (0, 1)


def test_an_undo_that_fails_is_named(two_pfs, run_module, monkeypatch):
    real = _sriov.SysfsPci.write
    calls = []

    def write(self, address, name, value):
        calls.append((address, name, value))
        if address == PF2 or (address == PF and len(calls) > 1):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(self, address, name, value)
    monkeypatch.setattr(_sriov.SysfsPci, 'write', write)
    result = run_module(sriov_vfs, {'pfs': [{'pf': PF, 'num_vfs': 2}, {'pf': PF2, 'num_vfs': 2}],
                                    'sysfs_root': two_pfs.mountpoint})[1]
    assert ('Changed and NOT undone, fix by hand: sriov_numvfs 0 -> 2 on %s (%s is left with sriov_numvfs 2 and '
            'sriov_drivers_autoprobe 1, not 0 and 1 as before: putting it back failed (Input/output error); set them '
            'by hand).' % (PF_NAME, PF_NAME)) in result['msg']


def test_sysfs_root_must_be_a_sysfs(tmp_path, run_module):
    result = run_module(sriov_vfs, {'pfs': pfs(), 'sysfs_root': str(tmp_path / 'missing')})[1]
    assert result['failed'] is True
    assert result['msg'].startswith('sysfs_root: %s does not exist.' % (tmp_path / 'missing'))


# ---------------------------------------------------------------- what the kernel's answers mean


RECORD = {'name': PF_NAME, 'pci_address': PF, 'sriov_totalvfs': 8, 'sriov_numvfs': 0, 'driver': 'mlx4_core'}


def public_error(name):
    """The strerror a recorded output shows (after 'write error: ' or the file name)."""
    with open(os.path.join(PUBLIC, name)) as handle:
        line = [text for text in handle.read().splitlines() if 'error' in text or 'implemented' in text][-1]
    return line.rsplit(': ', 1)[-1]


@pytest.mark.parametrize('number, recorded, hint', [
    (errno.ERANGE, 'i915-sriov-dkms-143-enoent-erange.txt', 'the firmware allows fewer VFs'),
    (errno.EBUSY, 'k8s-rdma-sriov-dev-plugin-12-echo-ebusy.txt', 'the PF driver refused while no VF exists'),
    (errno.ENOENT, 'i915-sriov-dkms-105-echo-enoent.txt', 'ConnectX-3 (mlx4_core) takes num_vfs as a module'),
    (errno.ENOSYS, 'k8s-rdma-sriov-dev-plugin-19-tee-enosys.txt', 'does not configure SR-IOV through sysfs'),
])
def test_write_errors_are_explained(number, recorded, hint):
    message = _sriov.explain_write_error(OSError(number, os.strerror(number)), RECORD, 'sriov_numvfs', 9)
    assert message.startswith('%s: writing 9 to sriov_numvfs failed: %s (' % (PF_NAME, public_error(recorded)))
    assert hint in message


def test_ebusy_with_vfs_names_the_write_of_zero():
    message = _sriov.explain_write_error(OSError(errno.EBUSY, 'busy'), dict(RECORD, sriov_numvfs=2), 'sriov_numvfs', 4)
    assert 'the PF has 2 VFs and the kernel takes a new count only after 0' in message


@settings(deadline=None)
@given(st.text(max_size=20))
def test_counts_are_read_strictly(text):
    try:
        value = _sriov.parse_count(text, 'sriov_numvfs')
    except _sriov.SriovError as exc:
        assert 'sriov_numvfs' in str(exc)
    else:
        assert value >= 0 and text.strip().isdigit()


@settings(deadline=None)
@given(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20)))
def test_firmware_values_read_without_crashing(value):
    number = _sriov.firmware_number(value)
    assert number is None or isinstance(number, int)


@pytest.mark.parametrize('value, number', [('8', 8), ('True(1)', 1), ('False(0)', 0), ('0x10', 16), (None, None),
                                           ('DEVICE_DEFAULT(0)', 0), (True, 1), ('N/A', None)])
def test_firmware_values_as_mlxconfig_prints_them(value, number):
    assert _sriov.firmware_number(value) == number


# ---------------------------------------------------------------- the boot unit's script, against the double

SCRIPT = os.path.join(REPO, 'roles', 'sriov_vfs', 'files', 'gpunet-sriov-vfs')


def boot_script(node, tmp_path, lines, timeout=0):
    import subprocess  # pylint: disable=import-outside-toplevel
    conf = tmp_path / 'sriov-vfs.conf'
    conf.write_text('# comment\nsysfs_root %s\n%s\n' % (node.mountpoint, '\n'.join(lines)))
    done = subprocess.run(['sh', SCRIPT, str(conf), str(timeout)], capture_output=True, text=True, check=False)
    return done.returncode, done.stdout, done.stderr


def test_the_boot_script_creates_the_persisted_vfs(node, tmp_path, run_module):
    persisted = run_module(sriov_vfs, {'pfs': pfs(PF, 3, drivers_autoprobe=False), 'sysfs_root': node.mountpoint},
                           check_mode=True)[1]['persist']
    assert persisted == ['0000:0b:00.0 3 0']
    assert boot_script(node, tmp_path, persisted) == (0, '0000:0b:00.0: 3 VFs created\n', '')
    assert numvfs(node) == 3
    with open(os.path.join(node.mountpoint, 'bus', 'pci', 'devices', PF, 'sriov_drivers_autoprobe')) as handle:
        assert handle.read() == '0\n'
    assert boot_script(node, tmp_path, persisted) == (0, '0000:0b:00.0: 3 VFs, as wanted\n', '')


def test_the_boot_script_keeps_the_kernels_rules(node, tmp_path):
    assert boot_script(node, tmp_path, ['%s 2 -' % PF])[0] == 0
    code, _out, err = boot_script(node, tmp_path, ['%s 4 1' % PF, '0000:0c:00.0 2 1', '%s 9 -' % '0000:0b:00.0'])
    assert code == 1 and numvfs(node) == 2
    assert '0000:0b:00.0 has 2 VFs, 4 wanted: not destroying VFs that may be in use' in err
    assert '0000:0c:00.0: no sriov_numvfs after 0s: not an SR-IOV capable PF' in err
    assert boot_script(node, tmp_path, ['%s 0 -' % PF])[0] == 1  # 0 destroys VFs too: the batch's step
    assert numvfs(node) == 2


def test_the_boot_script_reports_what_the_kernel_refuses(node, tmp_path):
    code, _out, err = boot_script(node, tmp_path, ['%s 9 -' % PF])
    assert code == 1
    assert '0000:0b:00.0: 9 VFs wanted, sriov_totalvfs is 8: the firmware allows fewer (NUM_OF_VFS, SRIOV_EN)' in err
    # what the script cannot foresee, the kernel answers; the message carries its errno
    os.unlink(os.path.join(os.path.realpath(os.path.join(node.backing, 'bus', 'pci', 'devices', PF)), 'driver'))
    os.makedirs(os.path.join(node.backing, 'bus', 'pci', 'drivers', 'mlx4_core'))
    os.symlink('../../../../bus/pci/drivers/mlx4_core',
               os.path.join(os.path.realpath(os.path.join(node.backing, 'bus', 'pci', 'devices', PF)), 'driver'))
    code, _out, err = boot_script(node, tmp_path, ['%s 2 -' % PF])
    assert code == 1
    assert 'printf: write error: No such file or directory' in err
    assert '0000:0b:00.0: the kernel refused 2 VFs (see the error above and the kernel log)' in err
    code, _out, err = boot_script(node, tmp_path, ['%s two -' % PF, '%s 2 yes' % PF])
    assert code == 1 and "the count must be a number" in err and 'autoprobe must be 0, 1 or -, not yes' in err


# ---------------------------------------------------------------- the ledger and the report


def test_a_change_is_a_step_of_the_batch_and_a_reboot_covers_it():
    from ansible_collections.gpunet.rdma.plugins.plugin_utils._ledger import plan, resolve, envelope
    ledger = {'sriov': envelope('sriov', True, [{'action': 'sriov_change', 'allowed': True, 'reason': 'mlx5_0 2 -> 4'}]),
              'runtime': envelope('runtime', True, [{'action': 'runtime_restart', 'allowed': True}])}
    assert plan(ledger)['actions'] == ['runtime_restart', 'sriov_change']
    assert 'sriov: SR-IOV VF count change (VFs destroyed and created again) (mlx5_0 2 -> 4)' in plan(ledger)['reasons']
    ledger['netns'] = envelope('netns', True, [{'action': 'reboot', 'allowed': True}])
    assert plan(ledger) == dict(plan(ledger), reboot=True, actions=['reboot'])
    assert resolve(ledger, ['reboot'], 'reboot')['sriov']['pending'] == []


def test_the_report_shows_each_pf_and_vf(node, run_module):
    from ansible_collections.gpunet.rdma.plugins.plugin_utils._fleet_report import build_fleet_report, render_markdown
    from ansible_collections.gpunet.rdma.plugins.plugin_utils._ledger import envelope
    created = run_module(sriov_vfs, {'pfs': [{'pf': PF, 'num_vfs': 2}, {'pf': 'mlx5_1', 'num_vfs': 0}],
                                     'sysfs_root': node.mountpoint})[1]
    waiting = run_module(sriov_vfs, {'pfs': pfs(PF, 4), 'sysfs_root': node.mountpoint})[1]
    detail = {'host': 'roce-1', 'wanted': 2, 'drivers_autoprobe': True, 'unit': 'gpunet-sriov-vfs.service',
              'pfs': created['pfs'], 'pending': [],
              'waiting_for_firmware': []}
    pending = dict(detail, pfs=waiting['pfs'], pending=waiting['pending'])
    result = {'host': 'roce-1', 'group': 'roce_a100', 'verdict': 'pass', 'expectation': None, 'source': 'sysfs',
              'ok_ports': 0, 'ports': [], 'devices': [], 'problems': []}
    report = build_fleet_report([result, dict(result, host='roce-2')], ['roce-1', 'roce-2'], {
        'roce-1': {'sriov': envelope('sriov', True, detail=detail)},
        'roce-2': {'sriov': envelope('sriov', False, [{'action': 'sriov_change', 'allowed': False,
                                                       'reason': waiting['pending'][0]}], detail=pending)}})
    text = render_markdown(report)
    assert '| roce-1 | %s | 2 | 2 | 8 | gpunet-sriov-vfs.service | as wanted |' % PF_NAME in text
    assert '| roce-1 | 0000:0c:00.0 (mlx5_1, enp12s0f0np0) | - | 0 | - | gpunet-sriov-vfs.service | as wanted |' in text
    assert ('| roce-2 | %s | 2 | 4 | 8 | gpunet-sriov-vfs.service | pending: 2 -> 4 VFs destroys the 2 VFs the PF has '
            '(pods or VMs using them lose them) |' % PF_NAME) in text
    assert '| roce-1 | 0000:0b:00.0 | virtfn1 | 0000:0b:00.3 | enp11s0f0v1 | mlx5_9 | mlx5_core |' in text
    assert 'Pending: SR-IOV VF count change (VFs destroyed and created again) pending on roce-2.' in text
    assert report['hosts'][0]['sriov']['pfs'][0]['vfs'][0] == {
        'index': 0, 'pci_address': '0000:0b:00.2', 'driver': 'mlx5_core', 'netdev': 'enp11s0f0v0',
        'rdma_device': 'mlx5_8'}
