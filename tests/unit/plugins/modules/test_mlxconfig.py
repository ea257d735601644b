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
import subprocess
import stat

import pytest

from ansible_collections.gpunet.rdma.plugins.modules import mlxconfig


@pytest.fixture
def lab(lab_tree):
    """An unpacked lab node root (sys/, firmware/, bin/) with the A100 profile."""
    return lab_tree('a100')


def on(lab_root, args):
    """The module's arguments on a lab root: its mlxconfig double and its sysfs tree unless ``args`` name others."""
    return dict({'executable': str(lab_root / 'bin' / 'mlxconfig'), 'sysfs_root': str(lab_root / 'sys')}, **args)


def calls(lab_root, tool='mlxconfig'):
    with open(str(lab_root / 'firmware' / 'calls.log')) as handle:
        return [json.loads(line)[1:] for line in handle if json.loads(line)[0] == tool]


def state_digest(lab_root):
    digest = hashlib.sha256()
    for name in sorted(os.listdir(str(lab_root / 'firmware'))):
        if name.endswith('.json'):
            digest.update((lab_root / 'firmware' / name).read_bytes())
    return digest.hexdigest()


def test_query_only(lab, run_module):
    code, result = run_module(mlxconfig, on(lab, {'device': 'mlx5_0'}))
    assert code == 0 and result['changed'] is False
    assert result['device'] == '0000:0c:00.0'
    assert result['config']['LINK_TYPE_P1'] == {'default': 'IB(1)', 'current': 'ETH(2)', 'next_boot': 'ETH(2)',
                                                'read_only': False}
    assert result['changes'] == {} and result['pending'] == [] and result['reboot_required'] is False
    assert result['layout'] == 'verbose'
    assert calls(lab) == [['-d', '0000:0c:00.0', '-e', 'q']]


def test_set_link_type_then_idempotent(lab, run_module):
    code, result = run_module(mlxconfig, on(lab, {'device': '0c:00.0',
                                                  'params': {'LINK_TYPE_P1': 'IB', 'SRIOV_EN': False}}), diff=True)
    assert code == 0 and result['changed'] is True
    assert result['changes'] == {'LINK_TYPE_P1': {'before': 'ETH(2)', 'after': 'IB(1)'}}
    assert result['config']['LINK_TYPE_P1']['next_boot'] == 'IB(1)'
    assert result['config']['LINK_TYPE_P1']['current'] == 'ETH(2)'
    assert result['pending'] == ['LINK_TYPE_P1'] and result['reboot_required'] is True
    assert result['diff']['before'] == 'LINK_TYPE_P1=ETH(2)\nSRIOV_EN=False(0)\n'
    assert result['diff']['after'] == 'LINK_TYPE_P1=IB(1)\nSRIOV_EN=False(0)\n'
    sets = [c for c in calls(lab) if 'set' in c]
    assert sets == [['-d', '0000:0c:00.0', '-y', 'set', 'LINK_TYPE_P1=IB']]

    code, again = run_module(mlxconfig, on(lab, {'device': 'mlx5_0',
                                                 'params': {'LINK_TYPE_P1': 1, 'SRIOV_EN': 'False'}}))
    assert again['changed'] is False and again['changes'] == {}
    # still waiting for a reset: an older change that was never activated stays pending
    assert again['pending'] == ['LINK_TYPE_P1'] and again['reboot_required'] is True
    assert len([c for c in calls(lab) if 'set' in c]) == 1


def test_several_parameters_in_one_set_call(lab, run_module):
    _code, result = run_module(mlxconfig, on(lab, {'device': '0000:0c:00.0', 'params': {
        'LINK_TYPE_P1': 'IB', 'SRIOV_EN': True, 'NUM_OF_VFS': 8}}))
    assert sorted(result['changes']) == ['LINK_TYPE_P1', 'NUM_OF_VFS', 'SRIOV_EN']
    assert [c for c in calls(lab) if 'set' in c] == [
        ['-d', '0000:0c:00.0', '-y', 'set', 'LINK_TYPE_P1=IB', 'NUM_OF_VFS=8', 'SRIOV_EN=True']]
    assert result['pending'] == ['LINK_TYPE_P1', 'NUM_OF_VFS', 'SRIOV_EN']


def test_check_mode_never_sets(lab, run_module):
    before = state_digest(lab)
    _code, result = run_module(mlxconfig, on(lab, {'device': 'mlx5_0', 'params': {'LINK_TYPE_P1': 'IB'}}),
                               check_mode=True, diff=True)
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
def test_clear_failures_set_nothing(lab, run_module, device, params, message):
    before = state_digest(lab)
    code, result = run_module(mlxconfig, on(lab, {'device': device, 'params': params}))
    assert code == 1
    assert message in result['msg']
    assert not [c for c in calls(lab) if 'set' in c]
    assert state_digest(lab) == before


def test_mst_device_path(lab, run_module, tmp_path, monkeypatch):
    mst_dir = tmp_path / 'mst'
    monkeypatch.setattr(mlxconfig, 'resolve_device', lambda module, device, root: device)
    monkeypatch.setenv('GPUNET_LAB_MST_DIR', str(mst_dir))
    os.makedirs(str(mst_dir))
    (mst_dir / 'mt4123_pciconf0').write_text('')
    code, result = run_module(mlxconfig, on(lab, {'device': str(mst_dir / 'mt4123_pciconf0')}))
    assert code == 0, result
    assert 'LINK_TYPE_P1' in result['config']


def refusing_double(lab, tmp_path, word, error, rc):
    """The lab's mlxconfig double, except that it fails with ``error`` when ``word`` is an argument."""
    wrapper = tmp_path / ('mlxconfig-refusing%s' % word)
    wrapper.write_text('#!/bin/sh\nfor a in "$@"; do [ "$a" = "%s" ] && { echo "%s"; exit %d; }; done\nexec %s "$@"\n'
                       % (word, error, rc, lab / 'bin' / 'mlxconfig'))
    wrapper.chmod(0o755)
    return str(wrapper)


def test_plain_layout_fallback(lab, run_module, tmp_path):
    """Tools without -e: the plain layout is used; only this run's changes are known to be pending."""
    old_tool = refusing_double(lab, tmp_path, '-e', '-E- Unknown flag -e', 1)
    code, result = run_module(mlxconfig, on(lab, {'device': 'mlx5_0', 'params': {'LINK_TYPE_P1': 'IB'},
                                                  'executable': old_tool}))
    assert code == 0
    assert result['config']['LINK_TYPE_P1'] == {'default': None, 'current': None, 'next_boot': 'IB(1)',
                                                'read_only': False}
    assert result['pending'] == ['LINK_TYPE_P1']
    assert result['layout'] == 'plain'


def test_failing_set_is_reported(lab, run_module, tmp_path):
    busy_tool = refusing_double(lab, tmp_path, 'set', '-E- Failed to set configuration: device busy', 3)
    code, result = run_module(mlxconfig, on(lab, {'device': 'mlx5_0', 'params': {'LINK_TYPE_P1': 'IB'},
                                                  'executable': busy_tool}))
    assert code == 1
    assert '-E- Failed to set configuration: device busy' in result['msg']


def test_missing_tools(lab, run_module, monkeypatch, tmp_path):
    monkeypatch.setenv('PATH', str(tmp_path))
    monkeypatch.setattr(mlxconfig, '_EXTRA_BIN_DIRS', [str(tmp_path)])
    code, result = run_module(mlxconfig, on(lab, {'device': 'mlx5_0', 'executable': None}))
    assert code == 1
    assert 'mlxconfig or mstconfig was not found on PATH' in result['msg']
    assert 'apt install mstflint' in result['msg']


def test_real_mstconfig_cannot_open_a_device_that_is_not_there(lab, run_module, tmp_path):
    """mstflint's real mstconfig, on a machine without ConnectX hardware."""
    code, result = run_module(mlxconfig, on(lab, {'device': '0000:0c:00.0', 'executable': shutil.which('mstconfig')}))
    assert code == 1
    assert '-E- Failed to open the device' in result['msg']
    assert 'is a ConnectX device and its driver is loaded' in result['msg']


def fake_tool(tmp_path, name, body):
    """A script standing in for the tool, for outputs of another shape."""
    path = tmp_path / name
    path.write_bytes(b'#!/bin/sh\n' + body)
    path.chmod(0o755)
    return str(path)


def test_the_query_lists_the_parameters_of_a_real_card_of_the_generation(lab, run_module):
    """The double prints a ConnectX-6's parameter list (arrays, mixed case included) in the current MFT layout."""
    _code, result = run_module(mlxconfig, on(lab, {'device': 'mlx5_0'}))
    config = result['config']
    assert len(config) > 150
    assert config['EXP_ROM_UEFI_x86_ENABLE'] == {'default': 'True(1)', 'current': 'True(1)', 'next_boot': 'True(1)',
                                                 'read_only': False}
    assert config['ESWITCH_HAIRPIN_DESCRIPTORS']['next_boot'] == 'Array[0..7]'
    assert config['PF_BAR2_SIZE']['read_only'] is True
    assert result['columns'] == ['Default', 'Current', 'Next Boot']


def test_mixed_case_parameter_on_the_connectx4_lx(lab, run_module):
    _code, result = run_module(mlxconfig, on(lab, {'device': 'mlx5_bond_0',
                                                   'params': {'EXP_ROM_UEFI_x86_ENABLE': True}}))
    assert result['changes'] == {'EXP_ROM_UEFI_x86_ENABLE': {'before': 'False(0)', 'after': 'True(1)'}}
    assert [c for c in calls(lab) if 'set' in c] == [['-d', '0000:3b:00.0', '-y', 'set', 'EXP_ROM_UEFI_x86_ENABLE=True']]
    _code, again = run_module(mlxconfig, on(lab, {'device': 'mlx5_bond_0', 'params': {'EXP_ROM_UEFI_x86_ENABLE': 1}}))
    assert again['changed'] is False and again['pending'] == ['EXP_ROM_UEFI_x86_ENABLE']


def test_array_elements_are_queried_and_set_by_index(lab, run_module):
    params = {'ESWITCH_HAIRPIN_DESCRIPTORS[2]': 64}
    _code, result = run_module(mlxconfig, on(lab, {'device': 'mlx5_1', 'params': params}))
    assert result['changes'] == {'ESWITCH_HAIRPIN_DESCRIPTORS[2]': {'before': '0', 'after': '64'}}
    assert ['-d', '0000:8d:00.0', '-e', 'q', 'ESWITCH_HAIRPIN_DESCRIPTORS[2]'] in calls(lab)
    assert result['config']['ESWITCH_HAIRPIN_DESCRIPTORS[2]']['next_boot'] == '64'
    assert result['pending'] == ['ESWITCH_HAIRPIN_DESCRIPTORS[2]']
    _code, again = run_module(mlxconfig, on(lab, {'device': 'mlx5_1', 'params': params}))
    assert again['changed'] is False
    assert len([c for c in calls(lab) if 'set' in c]) == 1


@pytest.mark.parametrize('params, message', [
    ({'NUM_OF_VFS': 70000}, 'NUM_OF_VFS: 70000 does not fit the 16-bit field (0..65535)'),
    ({'NUM_OF_VFS': '10^23'}, "NUM_OF_VFS: '10^23' is not a value mlxconfig accepts"),
    ({'NUM_OF_VFS': [8]}, 'NUM_OF_VFS: a list is not a firmware value'),
    ({'SRIOV_EN': {'on': True}}, 'SRIOV_EN: a dict is not a firmware value'),
    ({'ESWITCH_HAIRPIN_DESCRIPTORS': 64}, 'set its elements as ESWITCH_HAIRPIN_DESCRIPTORS[<index>]'),
    ({'ESWITCH_HAIRPIN_DESCRIPTORS[8]': 64}, 'index 8 is out of range'),
    ({'LINK_TYPE_P1': 'VPI'}, 'LINK_TYPE_P1 does not accept'),
    ({'exp_rom_uefi_x86_enable': True}, 'did you mean EXP_ROM_UEFI_x86_ENABLE?'),
])
def test_values_the_tool_refuses_are_refused_before_anything_is_set(lab, run_module, params, message):
    before = state_digest(lab)
    code, result = run_module(mlxconfig, on(lab, {'device': 'mlx5_0', 'params': params}))
    assert code == 1 and message in result['msg'], result['msg']
    assert result['msg'].startswith('Nothing was set on 0000:0c:00.0')
    assert not [c for c in calls(lab) if 'set' in c]
    assert state_digest(lab) == before


def test_the_double_refuses_the_same_values_as_the_module(lab):
    """Without the module's checks, the tool double refuses them with mlxconfig's own messages."""
    before = state_digest(lab)
    tool = str(lab / 'bin' / 'mlxconfig')
    for args, message in [(['NUM_OF_VFS=10^23'], '-E- Cannot parse the value'),
                          (['NUM_OF_VFS=70000'], '-E- The value 70000 is not valid,  as its size is 16 bits'),
                          (['LINK_TYPE_P1=VPI'], '-E- Unknown value VPI'),
                          (['PF_BAR2_SIZE=1'], '-E- Operation is not supported (Read only TLV: nv_global_pci_conf)')]:
        completed = subprocess.run([tool, '-d', '0000:0c:00.0', '-y', 'set'] + args, capture_output=True, text=True,
                                   check=False)
        assert completed.returncode == 3 and message in completed.stdout.splitlines()
    assert state_digest(lab) == before


@pytest.mark.parametrize('body, message', [
    (b'echo \'{"Device #1": {"tlv_configuration": {}}}\'\n', 'no "Configurations:" table'),
    (b'exit 0\n', 'The tool printed: (nothing)'),
    (b'printf "Configurations:   Next Boot\\n   LINK_TYPE_P1   \\377\\376\\n"\n', 'unrecognised value'),
    (b'printf "Device #1:\\nConfigurations:   Next Boot\\n   A  1\\nDevice #2:\\n"\n', 'more than one device'),
])
def test_tool_output_of_another_shape_is_quoted(lab, run_module, tmp_path, body, message):
    tool = fake_tool(tmp_path, 'odd-mlxconfig', body)
    code, result = run_module(mlxconfig, on(lab, {'device': 'mlx5_0', 'executable': tool}))
    assert code == 1 and message in result['msg'], result['msg']
    assert 'Cannot parse the output of %s -d 0000:0c:00.0 -e q' % tool in result['msg']
    assert 'Check that executable is mlxconfig (NVIDIA MFT) or mstconfig (mstflint)' in result['msg']


@pytest.mark.parametrize('make, message', [
    (lambda p: p.mkdir(), 'is a directory, not an executable file'),
    (lambda p: None, 'does not exist'),
    (lambda p: p.write_text('#!/bin/sh\n'), 'is not executable'),
])
def test_explicit_executable_that_cannot_run(lab, run_module, tmp_path, make, message):
    path = tmp_path / 'tool'
    make(path)
    code, result = run_module(mlxconfig, on(lab, {'device': 'mlx5_0', 'executable': str(path)}))
    assert code == 1 and message in result['msg'] and 'executable' in result['msg']


def test_device_that_is_a_directory(lab, run_module, tmp_path):
    code, result = run_module(mlxconfig, on(lab, {'device': str(tmp_path)}))
    assert code == 1
    assert 'device %s is a directory, not a device' % tmp_path in result['msg']
    assert 'a PCI address (0000:86:00.0)' in result['msg']


def test_set_failing_half_way_reports_what_was_set_and_what_is_pending(lab, run_module):
    (lab / 'firmware' / 'mlxconfig-set-fault').write_text(json.dumps(
        {'after': 1, 'message': 'Failed to set nv_global_pci_conf settings ME_REG_ACCESS_BAD_PARAM (4)'}))
    wanted = {'device': 'mlx5_0', 'params': {'LINK_TYPE_P1': 'IB', 'NUM_OF_VFS': 8, 'SRIOV_EN': True}}
    code, result = run_module(mlxconfig, on(lab, wanted))
    assert code == 1
    assert '-E- Failed to set nv_global_pci_conf settings ME_REG_ACCESS_BAD_PARAM (4)' in result['msg']
    assert 'Set before the failure: LINK_TYPE_P1; not set: NUM_OF_VFS, SRIOV_EN' in result['msg']
    assert 'Pending until a firmware reset or reboot: LINK_TYPE_P1' in result['msg']
    assert result['changes'] == {'LINK_TYPE_P1': {'before': 'ETH(2)', 'after': 'IB(1)'}}
    assert result['pending'] == ['LINK_TYPE_P1'] and result['reboot_required'] is True
    # the run after the fix sets only what is missing
    (lab / 'firmware' / 'mlxconfig-set-fault').unlink()
    _code, again = run_module(mlxconfig, on(lab, wanted))
    assert sorted(again['changes']) == ['NUM_OF_VFS', 'SRIOV_EN']


def test_success_without_effect_is_reported(lab, run_module, tmp_path):
    """A tool that says it set the values but did not: the module reads the device again and says so."""
    tool = fake_tool(tmp_path, 'lying-mlxconfig', (
        'for a in "$@"; do [ "$a" = set ] && { echo "Applying... Done!"; exit 0; }; done\nexec %s "$@"\n'
        % (lab / 'bin' / 'mlxconfig')).encode())
    code, result = run_module(mlxconfig, on(lab, {'device': 'mlx5_0', 'params': {'LINK_TYPE_P1': 'IB'},
                                                  'executable': tool}))
    assert code == 1
    assert 'reported success, but the device still reads LINK_TYPE_P1=ETH(2)' in result['msg']


def test_the_double_is_executable_as_the_lab_installs_it(lab):
    mode = os.stat(str(lab / 'bin' / 'mlxconfig')).st_mode
    assert mode & stat.S_IXUSR


def test_several_devices_in_one_call_query_all_before_setting_any(lab, run_module):
    both = {'devices': ['mlx5_0', 'mlx5_1'], 'params': {'ADVANCED_PCI_SETTINGS': True}}
    code, result = run_module(mlxconfig, on(lab, both))
    assert code == 0 and result['changed'] is True
    assert [entry['requested'] for entry in result['results']] == ['mlx5_0', 'mlx5_1']
    assert [entry['device'] for entry in result['results']] == ['0000:0c:00.0', '0000:8d:00.0']
    assert all(entry['pending'] == ['ADVANCED_PCI_SETTINGS'] for entry in result['results'])
    assert 'pending' not in result and 'device' not in result
    made = calls(lab)
    assert made[:2] == [['-d', '0000:0c:00.0', '-e', 'q'], ['-d', '0000:8d:00.0', '-e', 'q']]
    assert [call for call in made if 'set' in call] == [
        ['-d', '0000:0c:00.0', '-y', 'set', 'ADVANCED_PCI_SETTINGS=True'],
        ['-d', '0000:8d:00.0', '-y', 'set', 'ADVANCED_PCI_SETTINGS=True']]
    code, again = run_module(mlxconfig, on(lab, both))
    assert code == 0 and again['changed'] is False


def test_several_devices_diff_and_check_mode(lab, run_module):
    before = state_digest(lab)
    code, result = run_module(mlxconfig, on(lab, {'devices': ['mlx5_0', 'mlx5_1'],
                                                  'params': {'ADVANCED_PCI_SETTINGS': True}}),
                              check_mode=True, diff=True)
    assert code == 0 and result['changed'] is True and state_digest(lab) == before
    assert [d['before_header'] for d in result['diff']] == ['0000:0c:00.0 next boot', '0000:8d:00.0 next boot']


@pytest.mark.parametrize('devices, message', [
    (['mlx5_0', '0000:99:00.0'], 'no PCI function 0000:99:00.0'),
    (['mlx5_0', 'mlx5_0'], 'mlx5_0 given twice'),
    (['mlx5_0', '0000:0c:00.0'], 'name the same device 0000:0c:00.0'),
    ([], 'devices is empty'),
])
def test_a_device_the_request_cannot_use_sets_nothing_on_the_others(lab, run_module, devices, message):
    before = state_digest(lab)
    code, result = run_module(mlxconfig, on(lab, {'devices': devices, 'params': {'ADVANCED_PCI_SETTINGS': True}}))
    assert code == 1 and message in result['msg']
    assert state_digest(lab) == before
    assert not [call for call in calls(lab) if 'set' in call] if (lab / 'firmware' / 'calls.log').exists() else True


def test_the_functions_of_a_dual_port_card_are_set_once_through_the_first(tmp_path, lab_tree, run_module):
    """V100 node: mlx5_0 and mlx5_1 are the two functions (0000:5e:00.0, .1) of one ConnectX-5; one NV config."""
    lab_tree('v100')
    wanted = {'LINK_TYPE_P2': 'ETH', 'SRIOV_EN': True}
    code, result = run_module(mlxconfig, on(tmp_path, {'devices': ['mlx5_1', 'mlx5_0'], 'params': wanted}))
    assert code == 0 and result['changed'] is True
    assert calls(tmp_path) == [['-d', '0000:5e:00.1', '-e', 'q'],
                               ['-d', '0000:5e:00.1', '-y', 'set', 'LINK_TYPE_P2=ETH', 'SRIOV_EN=True'],
                               ['-d', '0000:5e:00.1', '-e', 'q']]
    first, second = result['results']
    assert (first['device'], first['changed'], first['configured_through']) == ('0000:5e:00.1', True, '0000:5e:00.1')
    assert (second['requested'], second['device'], second['changed'], second['changes']) == (
        'mlx5_0', '0000:5e:00.0', False, {})
    assert second['configured_through'] == '0000:5e:00.1' and second['adapter'] == first['adapter'] == '0000:5e:00'
    assert first['pending'] == second['pending'] == ['LINK_TYPE_P2', 'SRIOV_EN']
    assert result['adapters'] == [{
        'adapter': '0000:5e:00', 'functions': ['0000:5e:00.1', '0000:5e:00.0'], 'requested': ['mlx5_1', 'mlx5_0'],
        'configured_through': '0000:5e:00.1', 'changes': first['changes'], 'pending': ['LINK_TYPE_P2', 'SRIOV_EN'],
        'reboot_required': True}]
    # the set through .1 is the adapter's: a query through .0 alone finds nothing left to set
    code, again = run_module(mlxconfig, on(tmp_path, {'device': 'mlx5_0', 'params': wanted}))
    assert code == 0 and again['changed'] is False and again['pending'] == ['LINK_TYPE_P2', 'SRIOV_EN']
    assert again['adapter'] == '0000:5e:00' and 'configured_through' not in again


def test_an_unlistable_class_infiniband_is_named(lab, run_module, monkeypatch):
    """os.listdir refused (EACCES): root lists anything, an unprivileged user or an LSM may not."""
    directory = str(lab / 'sys' / 'class' / 'infiniband')
    real = os.listdir

    def listdir(path='.'):
        if os.path.normpath(str(path)) == directory:
            raise PermissionError(13, 'Permission denied', str(path))
        return real(path)
    monkeypatch.setattr(os, 'listdir', listdir)
    code, result = run_module(mlxconfig, on(lab, {'device': 'mlx5_7'}))
    assert code == 1 and result['msg'] == (
        'Cannot read sysfs: %s cannot be listed: permission denied. Point sysfs_root at the sysfs mount (/sys), and '
        'run as root.' % directory)
