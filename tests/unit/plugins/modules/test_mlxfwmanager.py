# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The mlxfwmanager module against the lab's mlxfwmanager double (A100 profile), and with mstflint outputs recorded
on real machines (tests/unit/fixtures/public/firmware)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess

import pytest

from ansible_collections.gpunet.rdma.plugins.modules import mlxfwmanager

HERE = os.path.dirname(__file__)
FIXTURES = os.path.join(HERE, '..', '..', 'fixtures', 'public', 'firmware')
CX6 = 'MT_0000000223'


@pytest.fixture
def lab(lab_tree):
    """An unpacked lab node root (sys/, firmware/, bin/) with the A100 profile: two ConnectX-6 (MT_0000000223,
    20.31.1014) and a ConnectX-4 Lx (MT_2420110034, 14.32.1010)."""
    return lab_tree('a100')


def image(lab_root, version='20.35.1012', psid=CX6, name='fw-ConnectX6.bin'):
    path = lab_root / name
    path.write_text(json.dumps({'gpunet_lab_firmware_image': 1, 'psid': psid, 'version': version}))
    return str(path)


def on(lab_root, args):
    """The module's arguments on a lab root: its mlxfwmanager double and sysfs tree unless ``args`` name others."""
    return dict({'executable': str(lab_root / 'bin' / 'mlxfwmanager'), 'sysfs_root': str(lab_root / 'sys')}, **args)


def calls(lab_root, tool='mlxfwmanager'):
    with open(str(lab_root / 'firmware' / 'calls.log')) as handle:
        return [json.loads(line)[1:] for line in handle if json.loads(line)[0] == tool]


def state_digest(lab_root):
    digest = hashlib.sha256()
    for name in sorted(os.listdir(str(lab_root / 'firmware'))):
        if name.endswith('.json'):
            digest.update((lab_root / 'firmware' / name).read_bytes())
    return digest.hexdigest()


def by_device(result):
    return dict((device['device'], device) for device in result['devices'])


def test_inventory_of_every_card(lab, run_module):
    code, result = run_module(mlxfwmanager, on(lab, {'devices': ['mlx5_0', '0000:8d:00.0', 'mlx5_bond_0']}))
    assert code == 0 and result['changed'] is False
    devices = by_device(result)
    assert sorted(devices) == ['mlx5_0', 'mlx5_1', 'mlx5_bond_0']
    mlx5_0 = devices['mlx5_0']
    assert (mlx5_0['pci_address'], mlx5_0['device_type'], mlx5_0['part_number'], mlx5_0['psid'],
            mlx5_0['fw_version'], mlx5_0['running_version'], mlx5_0['pending_activation']) == (
        '0000:0c:00.0', 'ConnectX6', 'MCX653105A-HDA_Ax', CX6, '20.31.1014', '20.31.1014', False)
    assert devices['mlx5_bond_0']['psid'] == 'MT_2420110034'
    assert result['pending'] == [] and result['reboot_required'] is False and result['drift'] == []
    assert [fact['device'] for fact in result['ansible_facts']['rdma_firmware']] == ['mlx5_0', 'mlx5_1', 'mlx5_bond_0']
    assert calls(lab) == [['-d', '0000:0c:00.0', '--query'], ['-d', '0000:8d:00.0', '--query'],
                          ['-d', '0000:3b:00.0', '--query']]


def test_drift_against_the_group_per_psid(lab, run_module):
    _code, result = run_module(mlxfwmanager, on(lab, {
        'devices': ['mlx5_0', 'mlx5_bond_0'], 'expected_version': {CX6: '20.35.1012', 'MT_2420110034': '14.32.1010'},
        'expected_psid': [CX6, 'MT_2420110034']}))
    devices = by_device(result)
    assert devices['mlx5_0']['state'] == 'drift' and devices['mlx5_bond_0']['state'] == 'ok'
    assert result['drift'] == ['mlx5_0: firmware 20.31.1014, the group expects 20.35.1012']


def test_update_burns_the_flash_only_then_a_reset_activates_it(lab, run_module):
    path = image(lab)
    code, result = run_module(mlxfwmanager, on(lab, {'devices': ['mlx5_0', 'mlx5_1'], 'image': path, 'update': True,
                                                     'expected_version': '20.35.1012'}), diff=True)
    assert code == 0 and result['changed'] is True
    mlx5_0 = by_device(result)['mlx5_0']
    assert (mlx5_0['fw_version'], mlx5_0['running_version'], mlx5_0['burned']) == ('20.35.1012', '20.31.1014', True)
    assert mlx5_0['image'] == {'version': '20.35.1012', 'matches': True, 'burn': True}
    assert result['image'] == {'path': path, 'version': '20.35.1012', 'psid': None}
    # the expected firmware waits on flash: pending, not drift
    assert mlx5_0['state'] == 'pending' and result['drift'] == []
    assert result['pending'] == ['mlx5_0 firmware 20.35.1012', 'mlx5_1 firmware 20.35.1012']
    assert result['reboot_required'] is True
    assert result['diff']['after'] == ('mlx5_0 firmware on flash: 20.35.1012\nmlx5_1 firmware on flash: 20.35.1012\n')
    burns = [call for call in calls(lab) if '-u' in call]
    assert burns == [['-d', '0000:0c:00.0', '-i', path, '-u', '-f', '-y'],
                     ['-d', '0000:8d:00.0', '-i', path, '-u', '-f', '-y']]
    # the kernel still shows the running firmware
    assert (lab / 'sys' / 'class' / 'infiniband' / 'mlx5_0' / 'fw_ver').read_text() == '20.31.1014\n'

    code, again = run_module(mlxfwmanager, on(lab, {'devices': ['mlx5_0', 'mlx5_1'], 'image': path, 'update': True}))
    assert again['changed'] is False and len([c for c in calls(lab) if '-u' in c]) == 2
    assert again['pending'] == result['pending']

    subprocess.run([str(lab / 'bin' / 'mlxfwreset'), '-d', '0000:0c:00.0', '-l', '3', '-y', 'r'], check=True,
                   capture_output=True)
    _code, after = run_module(mlxfwmanager, on(lab, {'devices': ['mlx5_0', 'mlx5_1'],
                                                     'expected_version': '20.35.1012'}))
    assert by_device(after)['mlx5_0']['state'] == 'ok' and by_device(after)['mlx5_1']['state'] == 'pending'
    assert after['pending'] == ['mlx5_1 firmware 20.35.1012']
    assert (lab / 'sys' / 'class' / 'infiniband' / 'mlx5_0' / 'fw_ver').read_text() == '20.35.1012\n'


def test_a_reboot_activates_every_burned_image(lab, run_module):
    run_module(mlxfwmanager, on(lab, {'devices': ['mlx5_0', 'mlx5_1'], 'image': image(lab), 'update': True}))
    subprocess.run([str(lab / 'bin' / 'lab-reboot')], check=True)
    _code, result = run_module(mlxfwmanager, on(lab, {'devices': ['mlx5_0', 'mlx5_1']}))
    assert [d['running_version'] for d in result['devices']] == ['20.35.1012', '20.35.1012']
    assert result['pending'] == []


def test_an_older_image_is_burned_too(lab, run_module):
    """The group pins a release: a newer card is brought back to it (mlxfwmanager needs -f for that)."""
    path = image(lab, version='20.28.1002')
    _code, result = run_module(mlxfwmanager, on(lab, {'devices': ['mlx5_0'], 'image': path, 'update': True}))
    assert result['changed'] is True and result['devices'][0]['fw_version'] == '20.28.1002'


def test_check_mode_never_burns(lab, run_module):
    before = state_digest(lab)
    _code, result = run_module(mlxfwmanager, on(lab, {'devices': ['mlx5_0'], 'image': image(lab), 'update': True}),
                               check_mode=True, diff=True)
    assert result['changed'] is True and result['devices'][0]['burned'] is True
    assert result['devices'][0]['fw_version'] == '20.35.1012' and result['pending'] == ['mlx5_0 firmware 20.35.1012']
    assert result['diff']['before'] == 'mlx5_0 firmware on flash: 20.31.1014\n'
    assert not [call for call in calls(lab) if '-u' in call]
    assert state_digest(lab) == before


def test_image_without_update_only_reports(lab, run_module):
    before = state_digest(lab)
    _code, result = run_module(mlxfwmanager, on(lab, {'devices': ['mlx5_0', 'mlx5_bond_0'], 'image': image(lab)}))
    devices = by_device(result)
    assert devices['mlx5_0']['image'] == {'version': '20.35.1012', 'matches': True, 'burn': True}
    assert devices['mlx5_bond_0']['image'] == {'version': None, 'matches': False, 'burn': False}
    assert result['changed'] is False and state_digest(lab) == before


def test_the_double_refuses_an_image_for_another_psid_even_when_asked_directly(lab):
    """At least as strict as mlxfwmanager: an image matches a device by PSID only, and -f does not change that."""
    path = image(lab, psid='MT_0000000228')
    before = state_digest(lab)
    done = subprocess.run([str(lab / 'bin' / 'mlxfwmanager'), '-d', '0000:0c:00.0', '-i', path, '-u', '-f', '-y'],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 255
    assert 'Status:           No matching image found' in done.stdout
    assert 'Device #1: Error - no matching image found' in done.stdout
    assert '-E- One or more errors were encountered.' in done.stderr
    assert state_digest(lab) == before


def write_mstflint(lab_root, device_output, image_output):
    """An mstflint that prints recorded outputs: the device's for ``-d DEV q``, the image's for ``-i IMAGE q``."""
    script = lab_root / 'mstflint'
    script.write_text('#!/bin/sh\necho "$@" >> %s\ncase "$*" in\n  *burn) exit 0;;\n  -i*) cat %s;;\n  *) cat %s;;\n'
                      'esac\n' % (lab_root / 'mstflint.calls', os.path.join(FIXTURES, image_output),
                                  os.path.join(FIXTURES, device_output)))
    script.chmod(0o755)
    return str(script)


def test_mstflint_inventory_from_a_recorded_query(lab, run_module):
    mstflint = write_mstflint(lab, 'mstflint-q-cx6-running-ironic.txt', 'mstflint-image-q-cx6-ironic.txt')
    _code, result = run_module(mlxfwmanager, on(lab, {'devices': ['mlx5_0'], 'executable': mstflint,
                                                      'expected_version': '20.35.1012'}))
    device = result['devices'][0]
    assert (device['psid'], device['fw_version'], device['running_version'], device['part_number']) == (
        'MT_0000000228', '20.35.1012', '20.34.1002', None)
    assert device['state'] == 'pending' and result['pending'] == ['mlx5_0 firmware 20.35.1012']


def test_mstflint_burn_that_leaves_the_flash_unchanged_is_a_failure(lab, run_module):
    """The tool said nothing wrong, but the flash still holds the old firmware: the module says so."""
    mstflint = write_mstflint(lab, 'mstflint-q-cx6-ironic.txt', 'mstflint-image-q-cx6-ironic.txt')
    path = lab / 'fw.bin'
    path.write_bytes(b'\0' * 16)
    code, result = run_module(mlxfwmanager, on(lab, {'devices': ['mlx5_0'], 'executable': mstflint, 'image': str(path),
                                                     'update': True}))
    assert code == 1 and result['failed'] is True
    assert 'burned mlx5_0 without an error, but the flash reads 20.35.1012' in result['msg']
    assert result['burned'] == ['mlx5_0']
    assert (lab / 'mstflint.calls').read_text().splitlines() == [
        '-i %s q' % path, '-d 0000:0c:00.0 q', '-d 0000:0c:00.0 -i %s -y burn' % path, '-d 0000:0c:00.0 q']


def test_the_flash_of_a_dual_port_card_is_burned_once_and_one_reset_runs_it(tmp_path, lab_tree, run_module):
    """V100 node: mlx5_0 and mlx5_1 are the two functions (0000:5e:00.0, .1) of one ConnectX-5 (MT_0000000008)."""
    lab_tree('v100')
    path = image(tmp_path, version='16.35.3006', psid='MT_0000000008', name='fw-ConnectX5.bin')
    code, result = run_module(mlxfwmanager, on(tmp_path, {'devices': ['mlx5_0', 'mlx5_1'], 'image': path,
                                                          'update': True}))
    assert code == 0 and result['changed'] is True
    assert [call for call in calls(tmp_path) if '-u' in call] == [['-d', '0000:5e:00.0', '-i', path, '-u', '-f', '-y']]
    mlx5_0, mlx5_1 = by_device(result)['mlx5_0'], by_device(result)['mlx5_1']
    assert (mlx5_0['burned'], mlx5_0['burned_through'], mlx5_0['adapter']) == (True, None, '0000:5e:00')
    assert (mlx5_1['burned'], mlx5_1['burned_through'], mlx5_1['adapter']) == (False, 'mlx5_0', '0000:5e:00')
    assert mlx5_1['fw_version'] == '16.35.3006' and mlx5_1['pending_activation'] is True
    subprocess.run([str(tmp_path / 'bin' / 'mlxfwreset'), '-d', '0000:5e:00.1', '-l', '3', '-y', 'r'], check=True,
                   capture_output=True)
    _code, after = run_module(mlxfwmanager, on(tmp_path, {'devices': ['mlx5_0', 'mlx5_1']}))
    assert after['pending'] == [] and after['reboot_required'] is False
    for name in ('mlx5_0', 'mlx5_1'):
        assert (tmp_path / 'sys' / 'class' / 'infiniband' / name / 'fw_ver').read_text() == '16.35.3006\n'


def deny_listing(monkeypatch, directory):
    """os.listdir refused (EACCES) on ``directory``: root lists anything, an unprivileged user or an LSM may not."""
    real = os.listdir

    def listdir(path='.'):
        if os.path.normpath(str(path)) == os.path.normpath(directory):
            raise PermissionError(13, 'Permission denied', str(path))
        return real(path)
    monkeypatch.setattr(os, 'listdir', listdir)


def test_an_unlistable_sysfs_directory_is_named(lab, run_module, monkeypatch):
    deny_listing(monkeypatch, str(lab / 'sys' / 'class' / 'infiniband'))
    code, result = run_module(mlxfwmanager, on(lab, {'devices': ['mlx5_7']}))
    assert code == 1 and result['msg'] == (
        'Cannot read sysfs: %s cannot be listed: permission denied. Point sysfs_root at the sysfs mount (/sys), and '
        'run as root.' % (lab / 'sys' / 'class' / 'infiniband'))
    deny_listing(monkeypatch, str(lab / 'sys' / 'bus' / 'pci' / 'devices' / '0000:0c:00.0' / 'infiniband'))
    code, result = run_module(mlxfwmanager, on(lab, {'devices': ['0000:0c:00.0']}))
    assert code == 1 and 'bus/pci/devices/0000:0c:00.0/infiniband cannot be listed: permission denied' in result['msg']
