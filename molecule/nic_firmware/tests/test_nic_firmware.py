# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Verify firmware state, tool calls and reboots on each instance, and the fleet report.

The instances ran converge, idempotence and check: every count below includes
those runs, so a second set, reset or reboot would show up here.
"""

from __future__ import annotations

import json
import os

import testinfra

LAB = '/opt/gpunet-lab'
REPORT = os.path.join(os.environ['MOLECULE_EPHEMERAL_DIRECTORY'], 'rdma-report', 'rdma-fleet-report.json')
LINK_TYPE_IB, LINK_TYPE_ETH = 1, 2


def node(name):
    return testinfra.get_host('podman://%s' % name)


def state(host, pci):
    return json.loads(host.file('%s/firmware/%s.json' % (LAB, pci)).content_string)['params']


def calls(host, tool):
    lines = host.file('%s/firmware/calls.log' % LAB).content_string.splitlines()
    return [json.loads(line)[1:] for line in lines if json.loads(line)[0] == tool]


def sets(host):
    return [call for call in calls(host, 'mlxconfig') if 'set' in call]


def report_firmware(name):
    with open(REPORT) as handle:
        return [h for h in json.load(handle)['hosts'] if h['host'] == name][0]['firmware']


def test_none_sets_next_boot_and_leaves_it_pending():
    host = node('fw-none')
    link_type = state(host, '0000:0c:00.0')['LINK_TYPE_P1']
    assert (link_type['current'], link_type['next']) == (LINK_TYPE_ETH, LINK_TYPE_IB)
    assert sets(host) == [['-d', '0000:0c:00.0', '-y', 'set', 'LINK_TYPE_P1=IB']]
    assert calls(host, 'mlxfwreset') == [] and calls(host, 'reboot') == []


def firmware_of(host, pci):
    return json.loads(host.file('%s/firmware/%s.json' % (LAB, pci)).content_string)['fw']


def burns(host):
    return [call for call in calls(host, 'mlxfwmanager') if '-u' in call]


def test_none_burns_the_image_once_and_leaves_it_pending():
    host = node('fw-none')
    image = '/opt/gpunet-lab/fw-ConnectX6-rel-20_35_1012-MCX653105A-HDA_Ax.bin'
    assert burns(host) == [['-d', '0000:0c:00.0', '-i', image, '-u', '-f', '-y'],
                           ['-d', '0000:8d:00.0', '-i', image, '-u', '-f', '-y']]
    for pci in ('0000:0c:00.0', '0000:8d:00.0'):
        firmware = firmware_of(host, pci)
        assert (firmware['flash'], firmware['running']) == ('20.35.1012', '20.31.1014')
    # the kernel shows the firmware that runs
    assert host.file('%s/sys/class/infiniband/mlx5_0/fw_ver' % LAB).content_string == '20.31.1014\n'


def test_none_is_reported_pending():
    firmware = report_firmware('fw-none')
    assert firmware['reboot_required'] is True
    assert firmware['pending'] == ['mlx5_0 LINK_TYPE_P1', 'mlx5_0 firmware 20.35.1012', 'mlx5_1 firmware 20.35.1012']
    states = [(card['device'], card['state']) for card in firmware['inventory']]
    assert states == [('mlx5_0', 'pending'), ('mlx5_1', 'pending')]
    mlx5_0 = [d for d in firmware['devices'] if d['device'] == 'mlx5_0'][0]
    assert mlx5_0['values'] == {'LINK_TYPE_P1': {'current': 'ETH(2)', 'next_boot': 'IB(1)'}}


def test_mlxfwreset_activates_the_change_and_the_image_once():
    host = node('fw-reset')
    link_type = state(host, '0000:0c:00.0')['LINK_TYPE_P1']
    assert link_type['current'] == link_type['next'] == LINK_TYPE_IB
    # mlx5_0 for its parameter and its image, mlx5_1 for its image: one reset each
    assert calls(host, 'mlxfwreset') == [['-d', '0000:0c:00.0', '-l', '3', '-y', 'r'],
                                         ['-d', '0000:8d:00.0', '-l', '3', '-y', 'r']]
    assert len(sets(host)) == 1 and len(burns(host)) == 2
    assert calls(host, 'reboot') == []
    for pci in ('0000:0c:00.0', '0000:8d:00.0'):
        assert firmware_of(host, pci)['running'] == '20.35.1012'
    assert host.file('%s/sys/class/infiniband/mlx5_1/fw_ver' % LAB).content_string == '20.35.1012\n'
    firmware = report_firmware('fw-reset')
    assert firmware['reboot_required'] is False
    assert [(card['device'], card['running_version'], card['state']) for card in firmware['inventory']] == [
        ('mlx5_0', '20.35.1012', 'ok'), ('mlx5_1', '20.35.1012', 'ok')]


def test_nodes_without_the_image_are_reported_as_drift():
    with open(REPORT) as handle:
        report = json.load(handle)
    assert report['summary']['firmware_drift_hosts'] == ['fw-fallback', 'fw-reboot']
    reboot = [h for h in report['hosts'] if h['host'] == 'fw-reboot'][0]
    card = reboot['firmware']['inventory'][0]
    assert (card['device'], card['part_number'], card['psid'], card['running_version'], card['state']) == (
        'mlx5_0', 'MCX653105A-HDA_Ax', 'MT_0000000223', '20.31.1014', 'drift')
    stage = [row for row in reboot['stages'] if row['stage'] == 'firmware'][0]
    assert 'mlx5_0: firmware 20.31.1014, the group expects 20.35.1012' in stage['problems']
    with open(REPORT.replace('.json', '.md')) as handle:
        text = handle.read()
    assert "Pending: firmware other than the group's on fw-fallback, fw-reboot." in text
    assert ('| fw-reboot | mlx5_0 | 0000:0c:00.0 | MCX653105A-HDA_Ax | MT_0000000223 | 20.31.1014 | 20.31.1014 | '
            '20.35.1012, PSID MT_0000000223 | drift: firmware 20.31.1014, the group expects 20.35.1012 |') in text
    assert burns(node('fw-reboot')) == [] and burns(node('fw-fallback')) == []


def test_mst_start_created_the_mst_devices():
    host = node('fw-reset')
    assert host.file('/dev/mst').is_directory
    assert sorted(host.file('/dev/mst').listdir()) == ['mt4117_pciconf0', 'mt4123_pciconf0', 'mt4123_pciconf1']
    assert calls(host, 'mst') == [['start']]


def test_reboot_happens_exactly_once_for_changes_on_two_devices():
    host = node('fw-reboot')
    assert sets(host) == [['-d', '0000:0c:00.0', '-y', 'set', 'LINK_TYPE_P1=IB', 'NUM_OF_VFS=8', 'SRIOV_EN=True'],
                          ['-d', '0000:8d:00.0', '-y', 'set', 'NUM_OF_VFS=8', 'SRIOV_EN=True']]
    assert len(calls(host, 'reboot')) == 1
    mlx5_0, mlx5_1 = state(host, '0000:0c:00.0'), state(host, '0000:8d:00.0')
    assert mlx5_0['LINK_TYPE_P1']['current'] == LINK_TYPE_IB
    assert (mlx5_1['SRIOV_EN']['current'], mlx5_1['NUM_OF_VFS']['current']) == (1, 8)
    assert mlx5_0['NUM_OF_VFS']['current'] == 8
    assert calls(host, 'mlxfwreset') == []


def test_reboot_runs_between_drain_and_uncordon():
    host = node('fw-reboot')
    boot_id = host.file('%s/boot_id' % LAB).content_string.strip()
    assert host.file('%s/drained' % LAB).content_string.strip() == 'lab-boot-0'
    assert host.file('%s/uncordoned' % LAB).content_string.strip() == boot_id != 'lab-boot-0'


def test_failed_reset_falls_back_to_one_allowed_reboot():
    host = node('fw-fallback')
    assert calls(host, 'mlxfwreset') == [['-d', '0000:0c:00.0', '-l', '3', '-y', 'r']]
    assert len(calls(host, 'reboot')) == 1
    link_type = state(host, '0000:0c:00.0')['LINK_TYPE_P1']
    assert link_type['current'] == link_type['next'] == LINK_TYPE_IB


def test_hosts_without_pending_changes_are_not_listed():
    with open(REPORT) as handle:
        summary = json.load(handle)['summary']
    # summary.pending: each pending disruptive action -> the hosts it waits on (from the stage ledger)
    assert summary['pending']['firmware_reset'] == ['fw-none'] and 'reboot' not in summary['pending']


def test_validation_ran_ib_write_bw_on_the_active_infiniband_port_only():
    """Converge and idempotence each ran one loopback test (server and client) on mlx5_1; check mode runs none.

    mlx5_0 is DOWN (and Ethernet until the reboot) and mlx5_bond_0 is Ethernet: not the A100 link layer.
    """
    for name in ('fw-none', 'fw-reset', 'fw-reboot', 'fw-fallback'):
        host = node(name)
        runs = calls(host, 'ib_write_bw')
        assert set(run[run.index('-d') + 1] for run in runs) == {'mlx5_1'}, name
        servers = [run for run in runs if run[-1] != '127.0.0.1']
        clients = [run for run in runs if run[-1] == '127.0.0.1']
        # one server per run; a client that came before its server was listening is retried
        assert len(servers) == 2 and 2 <= len(clients) <= 4, name
        assert all('--report_gbits' in run for run in runs)
        # No server left behind by a test.
        assert host.run("pgrep -f '[i]b_write_bw.py'").rc == 1  # the bracket keeps pgrep's own shell out
