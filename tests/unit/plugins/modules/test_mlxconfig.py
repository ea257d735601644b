# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The mlxconfig module against the lab's mlxconfig test double (and mstflint's real mstconfig where installed)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpunet.rdma.plugins.modules import mlxconfig

import sysfs_fixture

HARDWARE = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'lab', 'hardware')


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """An unpacked lab node root (sys/, firmware/, bin/) with the A100 profile."""
    profile = sysfs_fixture.load_profile(os.path.join(HARDWARE, 'a100.yml'))
    sysfs_fixture.build(profile, str(tmp_path / 'sys'))
    sysfs_fixture.build_firmware(profile, str(tmp_path))
    monkeypatch.setenv('GPUNET_LAB_ROOT', str(tmp_path))
    return tmp_path


def run(args, capsys, lab_root, check_mode=False, diff=False):
    args = dict(args)
    args.setdefault('executable', str(lab_root / 'bin' / 'mlxconfig'))
    args.setdefault('sysfs_root', str(lab_root / 'sys'))
    if check_mode:
        args['_ansible_check_mode'] = True
    if diff:
        args['_ansible_diff'] = True
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exit_info:
            mlxconfig.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def calls(lab_root, tool='mlxconfig'):
    with open(str(lab_root / 'firmware' / 'calls.log')) as handle:
        return [json.loads(line)[1:] for line in handle if json.loads(line)[0] == tool]


def state_digest(lab_root):
    digest = hashlib.sha256()
    for name in sorted(os.listdir(str(lab_root / 'firmware'))):
        if name.endswith('.json'):
            digest.update((lab_root / 'firmware' / name).read_bytes())
    return digest.hexdigest()


def test_query_only(lab, capsys):
    code, result = run({'device': 'mlx5_0'}, capsys, lab)
    assert code == 0 and result['changed'] is False
    assert result['device'] == '0000:0c:00.0'
    assert result['config']['LINK_TYPE_P1'] == {'default': 'IB(1)', 'current': 'ETH(2)', 'next_boot': 'ETH(2)',
                                                'read_only': False}
    assert result['changes'] == {} and result['pending'] == [] and result['reboot_required'] is False
    assert result['layout'] == 'verbose'
    assert calls(lab) == [['-d', '0000:0c:00.0', '-e', 'q']]


def test_set_link_type_then_idempotent(lab, capsys):
    code, result = run({'device': '0c:00.0', 'params': {'LINK_TYPE_P1': 'IB', 'SRIOV_EN': False}}, capsys, lab,
                       diff=True)
    assert code == 0 and result['changed'] is True
    assert result['changes'] == {'LINK_TYPE_P1': {'before': 'ETH(2)', 'after': 'IB(1)'}}
    assert result['config']['LINK_TYPE_P1']['next_boot'] == 'IB(1)'
    assert result['config']['LINK_TYPE_P1']['current'] == 'ETH(2)'
    assert result['pending'] == ['LINK_TYPE_P1'] and result['reboot_required'] is True
    assert result['diff']['before'] == 'LINK_TYPE_P1=ETH(2)\nSRIOV_EN=False(0)\n'
    assert result['diff']['after'] == 'LINK_TYPE_P1=IB(1)\nSRIOV_EN=False(0)\n'
    sets = [c for c in calls(lab) if 'set' in c]
    assert sets == [['-d', '0000:0c:00.0', '-y', 'set', 'LINK_TYPE_P1=IB']]

    code, again = run({'device': 'mlx5_0', 'params': {'LINK_TYPE_P1': 1, 'SRIOV_EN': 'False'}}, capsys, lab)
    assert again['changed'] is False and again['changes'] == {}
    # still waiting for a reset: an older change that was never activated stays pending
    assert again['pending'] == ['LINK_TYPE_P1'] and again['reboot_required'] is True
    assert len([c for c in calls(lab) if 'set' in c]) == 1


def test_several_parameters_in_one_set_call(lab, capsys):
    _code, result = run({'device': '0000:0c:00.0', 'params': {'LINK_TYPE_P1': 'IB', 'SRIOV_EN': True,
                                                              'NUM_OF_VFS': 8}}, capsys, lab)
    assert sorted(result['changes']) == ['LINK_TYPE_P1', 'NUM_OF_VFS', 'SRIOV_EN']
    assert [c for c in calls(lab) if 'set' in c] == [
        ['-d', '0000:0c:00.0', '-y', 'set', 'LINK_TYPE_P1=IB', 'NUM_OF_VFS=8', 'SRIOV_EN=True']]
    assert result['pending'] == ['LINK_TYPE_P1', 'NUM_OF_VFS', 'SRIOV_EN']


def test_check_mode_never_sets(lab, capsys):
    before = state_digest(lab)
    _code, result = run({'device': 'mlx5_0', 'params': {'LINK_TYPE_P1': 'IB'}}, capsys, lab, check_mode=True,
                        diff=True)
    assert result['changed'] is True
    assert result['changes'] == {'LINK_TYPE_P1': {'before': 'ETH(2)', 'after': 'IB(1)'}}
    assert result['pending'] == ['LINK_TYPE_P1']
    assert result['diff']['after'] == 'LINK_TYPE_P1=IB(1)\n'
    assert not [c for c in calls(lab) if 'set' in c]
    assert state_digest(lab) == before


@pytest.mark.parametrize('device, params, message', [
    ('mlx5_0', {'LINK_TYPE_P7': 'IB'}, 'unknown parameter LINK_TYPE_P7; did you mean LINK_TYPE_P1?'),
    ('mlx5_0', {'LINK_TYPE_P1': 'INFINIBAND'}, 'LINK_TYPE_P1 does not accept'),
    ('mlx5_0', {'PF_BAR2_SIZE': 1}, 'read-only'),
    ('mlx5_bond_0', {'LINK_TYPE_P1': 'ETH'}, 'LINK_TYPE_P1 is not a parameter of this device'),
    ('mlx5_9', {}, 'Device not found: mlx5_9 is not a PCI address, an MST device path or an RDMA device'),
    ('0000:af:00.0', {}, 'Device not found: there is no PCI function 0000:af:00.0'),
    ('/dev/mst/mt4123_pciconf9', {}, 'run `mst start`'),
])
def test_clear_failures_set_nothing(lab, capsys, device, params, message):
    before = state_digest(lab)
    code, result = run({'device': device, 'params': params}, capsys, lab)
    assert code == 1
    assert message in result['msg']
    assert not [c for c in calls(lab) if 'set' in c]
    assert state_digest(lab) == before


def test_mst_device_path(lab, capsys, tmp_path, monkeypatch):
    mst_dir = tmp_path / 'mst'
    monkeypatch.setattr(mlxconfig, 'resolve_device', lambda module, device, root: device)
    monkeypatch.setenv('GPUNET_LAB_MST_DIR', str(mst_dir))
    os.makedirs(str(mst_dir))
    (mst_dir / 'mt4123_pciconf0').write_text('')
    code, result = run({'device': str(mst_dir / 'mt4123_pciconf0')}, capsys, lab)
    assert code == 0, result
    assert 'LINK_TYPE_P1' in result['config']


def refusing_double(lab, tmp_path, word, error, rc):
    """The lab's mlxconfig double, except that it fails with ``error`` when ``word`` is an argument."""
    wrapper = tmp_path / ('mlxconfig-refusing%s' % word)
    wrapper.write_text('#!/bin/sh\nfor a in "$@"; do [ "$a" = "%s" ] && { echo "%s"; exit %d; }; done\nexec %s "$@"\n'
                       % (word, error, rc, lab / 'bin' / 'mlxconfig'))
    wrapper.chmod(0o755)
    return str(wrapper)


def test_plain_layout_fallback(lab, capsys, tmp_path):
    """Tools without -e: the plain layout is used; only this run's changes are known to be pending."""
    old_tool = refusing_double(lab, tmp_path, '-e', '-E- Unknown flag -e', 1)
    code, result = run({'device': 'mlx5_0', 'params': {'LINK_TYPE_P1': 'IB'}, 'executable': old_tool}, capsys, lab)
    assert code == 0
    assert result['config']['LINK_TYPE_P1'] == {'default': None, 'current': None, 'next_boot': 'IB(1)',
                                                'read_only': False}
    assert result['pending'] == ['LINK_TYPE_P1']
    assert result['layout'] == 'plain'


def test_failing_set_is_reported(lab, capsys, tmp_path):
    busy_tool = refusing_double(lab, tmp_path, 'set', '-E- Failed to set configuration: device busy', 3)
    code, result = run({'device': 'mlx5_0', 'params': {'LINK_TYPE_P1': 'IB'}, 'executable': busy_tool}, capsys, lab)
    assert code == 1
    assert '-E- Failed to set configuration: device busy' in result['msg']


def test_missing_tools(lab, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv('PATH', str(tmp_path))
    monkeypatch.setattr(mlxconfig, '_EXTRA_BIN_DIRS', [])
    code, result = run({'device': 'mlx5_0', 'executable': None}, capsys, lab)
    assert code == 1
    assert 'Neither mlxconfig (NVIDIA MFT) nor mstconfig (mstflint) was found' in result['msg']


@pytest.mark.skipif(shutil.which('mstconfig') is None, reason='mstflint not installed (make apt installs it)')
def test_real_mstconfig_cannot_open_a_device_that_is_not_there(lab, capsys, tmp_path):
    """mstflint's real mstconfig, on a machine without ConnectX hardware."""
    code, result = run({'device': '0000:0c:00.0', 'executable': shutil.which('mstconfig')}, capsys, lab)
    assert code == 1
    assert '-E- Failed to open the device' in result['msg']
    assert 'is a ConnectX device and its driver is loaded' in result['msg']
