# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The firmware inventory from the firmware stage to the fleet report: the mlxfwmanager module against the lab's
double, the record the nic_firmware role builds from it (configure.yml), the ledger, and the Markdown and HTML
reports: version, PSID, part number, expectation and drift per node and device."""

from __future__ import annotations

import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpunet.rdma.plugins.filter.report import FilterModule
from ansible_collections.gpunet.rdma.plugins.filter.report_html import FilterModule as HtmlFilters
from ansible_collections.gpunet.rdma.plugins.plugin_utils._fleet_report import render_json
from ansible_collections.gpunet.rdma.plugins.plugin_utils._ledger import record as rdma_ledger
from ansible_collections.gpunet.rdma.plugins.modules import mlxfwmanager

import sysfs_fixture

FILTERS = FilterModule().filters()
HARDWARE = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'lab', 'hardware')
V100_EXPECTED = {'expected_version': '16.35.2000', 'expected_psid': 'MT_0000000008'}


def node(tmp_path, monkeypatch, name, fw_ver=None):
    """A lab V100 node; ``fw_ver`` makes its cards run another firmware (as lab/hardware/v100-old-firmware.yml)."""
    profile = sysfs_fixture.load_profile(os.path.join(HARDWARE, 'v100.yml'))
    for device in profile['devices']:
        device['fw_ver'] = fw_ver or device['fw_ver']
    root = tmp_path / name
    sysfs_fixture.build(profile, str(root / 'sys'))
    sysfs_fixture.build_firmware(profile, str(root))
    monkeypatch.setenv('GPUNET_LAB_ROOT', str(root))
    return root


def inventory(root, capsys, **args):
    args = dict(args, devices=['mlx5_0', 'mlx5_1'], executable=str(root / 'bin' / 'mlxfwmanager'),
                sysfs_root=str(root / 'sys'))
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            mlxfwmanager.main()
    return json.loads(capsys.readouterr().out)


def stage_record(host, result):
    """What roles/nic_firmware/tasks/configure.yml records: the parameters' record joined with the inventory."""
    parameters = FILTERS['firmware_result']([], host, 'none', [])
    record = dict(parameters, inventory=result['devices'], image=result.get('image'), drift=result['drift'])
    record['pending'] = parameters['pending'] + result['pending']
    record['reboot_required'] = parameters['reboot_required'] or result['reboot_required']
    pending = ([{'action': 'firmware_reset', 'allowed': False, 'reason': ', '.join(record['pending'])}]
               if record['reboot_required'] else [])
    return rdma_ledger({}, 'firmware', changed=False, pending=pending, problems=record['drift'], detail=record)


def discovery(host):
    result = FILTERS['check']([], group_names=[], group_expectations={})
    result.update({'host': host, 'source': 'sysfs', 'devices': []})
    return result


@pytest.fixture
def fleet(tmp_path, monkeypatch, capsys):
    """Two V100 nodes of one group: lab-v100-1 runs the group's firmware, lab-v100-2 an older one."""
    ledgers = {}
    for host, fw_ver in (('lab-v100-1', None), ('lab-v100-2', '16.32.1010')):
        root = node(tmp_path, monkeypatch, host, fw_ver)
        ledgers[host] = stage_record(host, inventory(root, capsys, **V100_EXPECTED))
    hosts = sorted(ledgers)
    return FILTERS['fleet_report']([discovery(h) for h in hosts], hosts, ledgers)


def test_the_drifted_node_is_named_in_the_summary_and_its_stage(fleet):
    assert fleet['summary']['firmware_drift_hosts'] == ['lab-v100-2']
    stages = dict((h['host'], h['stages'][0]) for h in fleet['hosts'])
    assert stages['lab-v100-1']['problems'] == []
    assert stages['lab-v100-2']['problems'] == [
        'mlx5_0: firmware 16.32.1010, the group expects 16.35.2000',
        'mlx5_1: firmware 16.32.1010, the group expects 16.35.2000']


def test_the_report_keeps_state_only(fleet):
    card = fleet['hosts'][1]['firmware']['inventory'][0]
    assert card == {'device': 'mlx5_0', 'pci_address': '0000:5e:00.0', 'device_type': 'ConnectX5',
                    'part_number': 'MCX556A-ECA_Ax', 'psid': 'MT_0000000008', 'fw_version': '16.32.1010',
                    'running_version': '16.32.1010', 'pending_activation': False, 'expected_version': '16.35.2000',
                    'expected_psids': ['MT_0000000008'],
                    'drift': ['mlx5_0: firmware 16.32.1010, the group expects 16.35.2000'], 'state': 'drift'}


def test_markdown_inventory_table(fleet):
    text = FILTERS['report_markdown'](fleet)
    assert "Pending: firmware other than the group's on lab-v100-2." in text
    assert '### Firmware inventory' in text
    assert ('| lab-v100-1 | mlx5_0 | 0000:5e:00.0 | MCX556A-ECA_Ax | MT_0000000008 | 16.35.2000 | 16.35.2000 | '
            '16.35.2000, PSID MT_0000000008 | as expected |') in text
    assert ('| lab-v100-2 | mlx5_1 | 0000:5e:00.1 | MCX556A-ECA_Ax | MT_0000000008 | 16.32.1010 | 16.32.1010 | '
            '16.35.2000, PSID MT_0000000008 | drift: firmware 16.32.1010, the group expects 16.35.2000 |') in text


def test_html_inventory_table(fleet):
    page = HtmlFilters().filters()['report_html'](fleet)
    assert '<table id="firmware-inventory">' in page
    assert ('<tr data-host="lab-v100-2" data-device="mlx5_0" data-state="drift"><td>lab-v100-2</td><td>mlx5_0</td>'
            in page)
    assert 'class="status failed wrap">drift: firmware 16.32.1010, the group expects 16.35.2000</td>' in page
    assert 'data-action="firmware_drift"' in page


def test_a_burned_image_is_pending_not_drift_and_waits_for_the_batch(tmp_path, monkeypatch, capsys):
    root = node(tmp_path, monkeypatch, 'lab-v100-2', '16.32.1010')
    image = root / 'fw-ConnectX5.bin'
    image.write_text(json.dumps({'gpunet_lab_firmware_image': 1, 'psid': 'MT_0000000008', 'version': '16.35.2000'}))
    result = inventory(root, capsys, image=str(image), update=True, **V100_EXPECTED)
    report = FILTERS['fleet_report']([discovery('lab-v100-2')], ['lab-v100-2'],
                                     {'lab-v100-2': stage_record('lab-v100-2', result)})
    assert report['summary']['firmware_drift_hosts'] == []
    assert report['summary']['pending'] == {'firmware_reset': ['lab-v100-2']}
    text = FILTERS['report_markdown'](report)
    assert ('| lab-v100-2 | mlx5_0 | 0000:5e:00.0 | MCX556A-ECA_Ax | MT_0000000008 | 16.32.1010 | 16.35.2000 | '
            '16.35.2000, PSID MT_0000000008 | pending: 16.35.2000 runs after a firmware reset or reboot |') in text
    # a second run that burns nothing writes the same report
    again = inventory(root, capsys, image=str(image), update=True, **V100_EXPECTED)
    assert again['changed'] is False
    second = FILTERS['fleet_report']([discovery('lab-v100-2')], ['lab-v100-2'],
                                     {'lab-v100-2': stage_record('lab-v100-2', again)})
    assert render_json(second) == render_json(report)


def test_a_node_without_inventory_shows_no_table(tmp_path):
    parameters = FILTERS['firmware_result']([], 'n1', 'none', [])
    report = FILTERS['fleet_report']([discovery('n1')], ['n1'],
                                     {'n1': rdma_ledger({}, 'firmware', detail=parameters)})
    text = FILTERS['report_markdown'](report)
    assert '## Firmware' in text and 'Firmware inventory' not in text
    assert report['hosts'][0]['firmware']['inventory'] == []
