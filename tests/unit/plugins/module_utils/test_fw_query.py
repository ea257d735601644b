# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The firmware inventory parser against outputs recorded on real machines (tests/unit/fixtures/public/firmware,
SOURCES.md there), with the expected values written by hand from each recording, and the drift judgement."""

from __future__ import annotations

import os
import re

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils.firmware._fw_query import (
    FwQueryError,
    evaluate,
    normalize_expectation,
    parse_flint_query,
    parse_mlxfwmanager,
    same_version,
)

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'public', 'firmware')


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def summary(device, *keys):
    return tuple(device[key] for key in keys)


INVENTORY = ('device_type', 'part_number', 'psid', 'pci_device_name', 'fw_version', 'running_version',
             'pending_activation', 'available_version', 'status')


@pytest.mark.parametrize('name, expected', [
    ('mlxup-query-cx6lx-update-required.txt',
     [('ConnectX6LX', 'MCX631102AS-ADA_Ax', 'MT_0000000575', '0002:01:00.0', '26.33.1048', '26.33.1048', False,
       '26.43.1014', 'Update required')]),
    ('mlxfwmanager-no-matching-image-cx4.txt',
     [('ConnectX4', 'MCX416A-CCA_Ax', 'MT_2150110033', '0000:81:00.0', '12.28.2006', '12.28.2006', False, None,
       'No matching image found')]),
    # A Dell card: OEM part number and PSID prefix.
    ('mlxfwmanager-no-matching-image-dell.txt',
     [('ConnectX4LX', '020NJD_0MRT0D_Ax', 'DEL2420110034', '0000:01:00.0', '14.14.2320', '14.14.2320', False, None,
       'No matching image found')]),
    # Burned, not yet activated: FW is the flash, FW (Running) the running firmware.
    ('mlxfwmanager-fw-running-cx6dx.txt',
     [('ConnectX6DX', 'MCX623106AC-CDA_Ax', 'MT_0000000436', '03:00.0', '22.45.3608', '22.43.1020', True, None,
       None)]),
    ('mlxfwmanager-burned-only-cx6dx.txt',
     [('ConnectX6DX', 'MCX623106AC-CDA_Ax', 'MT_0000000436', '03:00.0', '22.29.2002', '22.29.2002', False, None,
       None)]),
    ('mlxfwmanager-fw-running-bluefield2.txt',
     [('BlueField2', 'MBF2H536C-CECO_Ax_Bx', 'MT_0000000768', '/dev/mst/mt41686_pciconf0', '24.40.1000',
       '24.35.2000', True, None, None)]),
    ('mlxfwmanager-bluefield3-unindented-type.txt',
     [('BlueField3', '900-9D3B6-00CV-A_Ax', 'MT_0000000884', '/dev/mst/mt41692_pciconf0', '32.41.1000',
       '32.41.1000', False, None, 'No matching image found')]),
    ('mlxup-update-two-cx7.txt',
     [('ConnectX7', 'MCX715105AS-WEAT_Ax', 'MT_0000001244', '/dev/mst/mt4129_pciconf1', '28.42.1000', '28.42.1000',
       False, '28.43.1014', 'Update required'),
      ('ConnectX7', 'MCX715105AS-WEAT_Ax', 'MT_0000001244', '/dev/mst/mt4129_pciconf0', '28.42.1000', '28.42.1000',
       False, '28.43.1014', 'Update required')]),
    ('mlxup-online-release-notes.txt',
     [('ConnectX6LX', 'MCX631102AS-ADA_Ax', 'MT_0000000575', '/dev/mst/mt4127_pciconf0', '26.33.1048',
       '26.33.1048', False, '26.43.1014', 'Update required')]),
])
def test_mlxfwmanager_layouts(name, expected):
    parsed = parse_mlxfwmanager(fixture(name))
    assert [summary(device, *INVENTORY) for device in parsed['devices']] == expected


def test_mlxfwmanager_version_rows_keep_multi_word_components():
    device = parse_mlxfwmanager(fixture('mlxfwmanager-fw-running-bluefield2.txt'))['devices'][0]
    assert device['versions'] == {
        'FW': {'current': '24.40.1000', 'available': None},
        'FW (Running)': {'current': '24.35.2000', 'available': None},
        'PXE': {'current': '3.6.0805', 'available': None},
        'UEFI': {'current': '14.28.0016', 'available': None},
        'UEFI Virtio blk': {'current': '22.4.0010', 'available': None},
        'UEFI Virtio net': {'current': '21.4.0010', 'available': None},
    }
    assert (device['base_guid'], device['base_mac']) == ('a088c20300ea8240', 'a088c2ea8240')


def test_mlxfwmanager_update_run_summary():
    parsed = parse_mlxfwmanager(fixture('mlxup-update-two-cx7.txt'))
    assert parsed['found_updates'] == 2 and parsed['restart_needed'] is True
    assert parsed['trailer'][-2:] == ['Restart needed for updates to take effect.',
                                      'Log File: /tmp/mlxup_workdir/mlxup-20250109_190606_17886.log']


def test_mlxfwmanager_release_notes_are_not_device_fields():
    parsed = parse_mlxfwmanager(fixture('mlxup-online-release-notes.txt'))
    assert len(parsed['release_notes']) == 13
    assert parsed['release_notes'][0] == 'For more details, please refer to the following FW release notes:'
    assert parsed['found_updates'] == 1 and parsed['restart_needed'] is False
    assert parsed['trailer'][-1] == 'Perform FW update? [y/N]: N'


@pytest.mark.parametrize('name, message', [
    ('mlxup-query-xml-cx6lx.xml', 'this is the XML layout (--query-format XML)'),
    ('flint-q-cx7-secure-fw.txt', 'not the output of mlxfwmanager'),
    ('mstflint-burn-psid-mismatch.txt', 'not the output of mlxfwmanager'),
    ('mstflint-q-no-device.txt', 'the tool reported an error: -E- Cannot open Device: 0000:5e:00.0'),
])
def test_mlxfwmanager_refuses_other_outputs(name, message):
    with pytest.raises(FwQueryError) as info:
        parse_mlxfwmanager(fixture(name))
    assert message in str(info.value)


@pytest.mark.parametrize('text, message', [
    ('Querying Mellanox devices firmware ...\n\nDevice #1:\n----------\n\n  PSID:             MT_0000000436\n'
     '  Versions:         Current        Available\n', 'has no FW row'),
    ('Device #1:\n----------\n  Device Type:      ConnectX6DX\n  Versions:         Current        Available\n'
     '     FW             22.29.2002     N/A\n', 'has no PSID line'),
    ('Device #1:\n----------\n  PSID:             MT_1\n  Versions:         Current        Next\n',
     'unknown version columns'),
    ('Device #1:\n----------\n  PSID:             MT_1\n  Serial Number:    MT2118X09951\n', 'unknown line'),
    ('Device #1:\n----------\n  PSID:             MT_1\n  Versions:         Current        Available\n'
     '     FW             1.2.3     N/A\n\n  Status:           Exploded\n', "unknown status 'Exploded'"),
    ('', 'no "Device #" block'),
])
def test_mlxfwmanager_refuses_unknown_layouts(text, message):
    with pytest.raises(FwQueryError) as info:
        parse_mlxfwmanager(text)
    assert message in str(info.value)


@pytest.mark.parametrize('name, expected', [
    ('flint-q-cx7-secure-fw.txt', ('FS4', '28.43.1014', '28.43.1014', False, 'MT_0000001244', 'e09d730300126744',
                                   None)),
    ('flint-q-cx7-after-reset.txt', ('FS4', '28.43.1014', '28.43.1014', False, 'MT_0000001244', 'e09d730300126474',
                                     None)),
    ('mstflint-q-cx4-fs3.txt', ('FS3', '12.28.2006', '12.28.2006', False, 'MT_2150110033', '98039b0300688698',
                                None)),
    ('mstflint-q-cx4lx-dell-psid.txt', ('FS3', '14.14.2320', '14.14.2320', False, 'DEL2420110034',
                                        '248a070300914da4', None)),
    ('mstflint-q-cx4lx-after-psid-change.txt', ('FS3', '14.32.1900', '14.32.1900', False, 'MT_2420110034',
                                                '248a070300914da4', None)),
    ('mstflint-q-cx6-ironic.txt', ('FS4', '20.35.1012', '20.35.1012', False, 'MT_0000000228', '043f720300f04c46',
                                   None)),
    ('mstflint-q-cx6-running-ironic.txt', ('FS4', '20.35.1012', '20.34.1002', True, 'MT_0000000228',
                                           '043f720300f04c46', None)),
    # An image file: no GUIDs yet ("N/A  4").
    ('mstflint-image-q-cx6-ironic.txt', ('FS4', '20.36.1012', '20.36.1012', False, 'MT_0000000228', None, None)),
])
def test_flint_layouts(name, expected):
    parsed = parse_flint_query(fixture(name))
    assert summary(parsed, 'image_type', 'fw_version', 'running_version', 'pending_activation', 'psid', 'base_guid',
                   'part_number') == expected


def test_flint_keeps_rom_info_continuation_and_ignores_the_uid_table_header():
    parsed = parse_flint_query(fixture('mstflint-q-cx4lx-dell-psid.txt'))
    assert parsed['rom_info'] == ['type=UEFI version=14.9.50', 'type=PXE version=3.4.729']
    assert parsed['description'] is None
    assert parsed['product_version'] == 'rel-14_14_2320'


@pytest.mark.parametrize('name, message', [
    ('mstflint-image-q-not-an-image.txt', 'Image size should be 4-bytes aligned'),
    ('mstflint-image-q-missing-file.txt', 'Can not open file "/tmp/fw-missing.bin"'),
    ('mstflint-image-q-zero-filled.txt', 'No valid image found'),
    ('mstflint-q-no-device.txt', 'Cannot open Device: 0000:5e:00.0'),
    ('mstflint-burn-psid-mismatch.txt', 'not a "Key: value" line'),
    ('mlxfwmanager-fw-running-cx6dx.txt', 'not a "Key: value" line'),
])
def test_flint_refuses_errors_and_other_layouts(name, message):
    with pytest.raises(FwQueryError) as info:
        parse_flint_query(fixture(name))
    assert message in str(info.value)


@pytest.mark.parametrize('text, message', [
    ('Image type:            FS4\nFW Version:            20.35.1012\n', 'no PSID line'),
    ('Image type:            FS4\nPSID:                  MT_0000000228\n', 'no "FW Version:" line'),
    ('FW Version:            20.35.1012\nPSID:                  MT_0000000228\n', 'it starts with "Image type:"'),
    ('', 'empty output'),
])
def test_flint_refuses_incomplete_output(text, message):
    with pytest.raises(FwQueryError) as info:
        parse_flint_query(text)
    assert message in str(info.value)


# ------------------------------------------------------------------ drift

def device(fw, running=None, psid='MT_0000000008'):
    return {'psid': psid, 'fw_version': fw, 'running_version': running or fw, 'pending_activation': bool(
        running and running != fw)}


def test_versions_compare_by_number():
    assert same_version('16.35.2000', '16.35.2000') and not same_version('16.35.2000', '16.35.4030')
    assert same_version('2.42.5000', '2.42.05000')
    assert not same_version(None, '1.2.3') and same_version(None, None)


def test_the_expected_version_is_ok_and_another_is_drift():
    expectation = normalize_expectation('16.35.2000', 'MT_0000000008')
    assert evaluate(device('16.35.2000'), expectation, 'mlx5_0') == {
        'expected_version': '16.35.2000', 'expected_psids': ['MT_0000000008'], 'drift': [], 'state': 'ok'}
    judged = evaluate(device('16.32.1010'), expectation, 'mlx5_0')
    assert judged['state'] == 'drift'
    assert judged['drift'] == ['mlx5_0: firmware 16.32.1010, the group expects 16.35.2000']


def test_an_expected_image_on_flash_waits_for_activation_and_is_no_drift():
    judged = evaluate(device('16.35.2000', running='16.32.1010'), normalize_expectation('16.35.2000'), 'mlx5_0')
    assert judged == {'expected_version': '16.35.2000', 'expected_psids': None, 'drift': [], 'state': 'pending'}


def test_another_version_on_flash_is_named_in_the_drift():
    judged = evaluate(device('16.33.1048', running='16.32.1010'), normalize_expectation('16.35.2000'), 'mlx5_1')
    assert judged['drift'] == ['mlx5_1: firmware 16.32.1010 (16.33.1048 on flash), the group expects 16.35.2000']


def test_psid_drift_and_per_psid_versions():
    expectation = normalize_expectation({'MT_0000000223': '20.31.1014', 'MT_2420110034': '14.32.1010'},
                                        ['MT_0000000223', 'MT_2420110034'])
    assert evaluate(device('14.32.1010', psid='MT_2420110034'), expectation, 'mlx5_bond_0')['state'] == 'ok'
    judged = evaluate(device('20.31.1014', psid='DEL0000000223'), expectation, 'mlx5_0')
    assert judged['expected_version'] is None
    assert judged['drift'] == ['mlx5_0: PSID DEL0000000223, the group expects MT_0000000223 or MT_2420110034']


def test_no_expectation_leaves_the_device_unchecked():
    assert evaluate(device('1.2.3'), normalize_expectation(), 'mlx5_0') == {
        'expected_version': None, 'expected_psids': None, 'drift': [], 'state': 'unchecked'}


@pytest.mark.parametrize('version, psid, message', [
    (16.35, None, 'firmware.version must be a firmware version such as 16.35.2000 (quoted in YAML)'),
    ('latest', None, 'firmware.version must be a firmware version'),
    ({'MT_0000000223': 20}, None, 'firmware.version[MT_0000000223] must be a firmware version'),
    ({'': '1.2.3'}, None, 'the keys are PSIDs'),
    (None, {'a': 'b'}, 'firmware.psid must be a PSID'),
    (None, ['MT_1', ''], 'firmware.psid must be a PSID'),
])
def test_expectations_of_the_wrong_shape_are_refused(version, psid, message):
    with pytest.raises(FwQueryError) as info:
        normalize_expectation(version, psid)
    assert message in str(info.value)


def test_every_recording_has_a_source_and_every_source_a_recording():
    with open(os.path.join(FIXTURES, 'SOURCES.md')) as handle:
        sources = handle.read()
    recordings = sorted(name for name in os.listdir(FIXTURES) if name != 'SOURCES.md')
    named = sorted(set(re.findall(r'^\| `([^`]+)` \|', sources, re.M)))
    assert recordings == named
