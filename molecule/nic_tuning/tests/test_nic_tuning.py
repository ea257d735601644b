# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Verify the tuning on the RoCE node: the doubles' state, their calls, the boot-time unit and the report.

The instance ran converge, idempotence and check: every count below includes those runs, so a second change of a
port or a function would show up here.
"""

from __future__ import annotations

import json
import os

import testinfra
import yaml

LAB = '/opt/gpunet-lab'
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
REPORT = os.path.join(os.environ['MOLECULE_EPHEMERAL_DIRECTORY'], 'rdma-report', 'rdma-fleet-report.json')
SCRIPT = '/usr/local/sbin/gpunet-rdma-tuning'
UNIT = 'gpunet-rdma-tuning.service'


def profile():
    with open(os.path.join(REPO, 'lab', 'hardware', 'roce_a100.yml')) as handle:
        devices = yaml.safe_load(handle)['devices']
    pfs = [d for d in devices if not d.get('physfn')]
    return [d['pci_address'] for d in pfs], [n['name'] for d in pfs for n in d.get('netdevs', [])]


PFS, NETDEVS = profile()


def host():
    return testinfra.get_host('podman://tuning-roce')


# One podman exec for the whole state (each exec costs a second on a loaded machine): the doubles' QoS and firmware
# state, Device Control of every function as setpci reads it, the ECN switches and the calls logs.
SNAPSHOT = r"""
import glob, json, os, subprocess
lab = '/opt/gpunet-lab'
def text(path):
    with open(path) as handle:
        return handle.read()
out = {'qos': {}, 'firmware': {}, 'devctl': {}, 'ecn': {}, 'calls': {}}
for path in glob.glob(lab + '/qos/*.json'):
    out['qos'][os.path.basename(path)[:-5]] = json.loads(text(path))
for path in glob.glob(lab + '/firmware/0000:*.json'):
    out['firmware'][os.path.basename(path)[:-5]] = json.loads(text(path))['params']
for pci in sorted(os.listdir(lab + '/sys/bus/pci/devices')):
    out['devctl'][pci] = subprocess.check_output([lab + '/bin/setpci', '-s', pci, 'CAP_EXP+8.w'], text=True).strip()
for path in glob.glob(lab + '/sys/class/net/*/ecn/*/enable/*'):
    out['ecn'][path[len(lab + '/sys/class/net/'):]] = text(path).strip()
for kind in ('qos', 'pci', 'firmware'):
    out['calls'][kind] = [json.loads(line) for line in text('%s/%s/calls.log' % (lab, kind)).splitlines()]
print(json.dumps(out))
"""
_STATE = {}


def state():
    if not _STATE:
        _STATE.update(json.loads(host().check_output("python3 -c '%s'" % SNAPSHOT.replace("'", "'\\''"))))
    return _STATE


def calls(kind, tool):
    return [call[1:] for call in state()['calls'][kind] if call[0] == tool]


def devctl(node, pci):
    return node.check_output('%s/bin/setpci -s %s CAP_EXP+8.w' % (LAB, pci))


def test_the_eight_roce_ports_trust_dscp_with_pfc_on_priority_3():
    assert len(NETDEVS) == 8
    for netdev in NETDEVS:
        port = state()['qos'][netdev]
        assert (port['trust'], port['pfc']) == ('dscp', [0, 0, 0, 1, 0, 0, 0, 0]), netdev
    sets = [call for call in calls('qos', 'mlnx_qos') if len(call) > 2]
    assert sorted(call[1] for call in sets) == sorted(NETDEVS), 'one change per port over all runs'
    assert all(call[2:] == ['--trust', 'dscp', '--pfc', '0,0,0,1,0,0,0,0'] for call in sets)


def test_ecn_on_priority_3_where_the_driver_has_the_tree():
    ecn = state()['ecn']
    for direction in ('roce_np', 'roce_rp'):
        assert ecn['enp11s0f0np0/ecn/%s/enable/3' % direction] == '1'
        assert ecn['enp11s0f0np0/ecn/%s/enable/2' % direction] == '0'
    assert not [path for path in ecn if not path.startswith('enp11s0f0np0/')]


def test_max_read_request_4096_on_every_physical_function_written_once_with_a_mask():
    assert len(PFS) == 8
    for pci in PFS:
        assert state()['devctl'][pci] == '5020', pci
    writes = [call for call in calls('pci', 'setpci') if '=' in call[-1]]
    assert sorted(call[1] for call in writes) == sorted(PFS)
    assert all(call[-1] == 'CAP_EXP+8.w=5000:7000' for call in writes)
    # the SR-IOV VFs of mlx5_0 are left alone
    assert state()['devctl']['0000:0b:00.2'] == '2020'


def test_firmware_values_are_next_boot_and_set_once():
    for pci in PFS:
        params = state()['firmware'][pci]
        assert (params['CNP_DSCP_P1']['current'], params['CNP_DSCP_P1']['next']) == (48, 4), pci
        assert params['ATS_ENABLED']['next'] == 0 and params['ROCE_CC_PRIO_MASK_P1']['next'] == 255
    sets = [call for call in calls('firmware', 'mlxconfig') if 'set' in call]
    assert sorted(call[1] for call in sets) == sorted(PFS)
    assert all(call[-1:] == ['CNP_DSCP_P1=4'] for call in sets)


def test_the_boot_time_unit_is_enabled_and_sets_everything_again_after_a_reboot():
    node = host()
    assert node.service(UNIT).is_enabled
    # what the driver and the PCI configuration look like after a reboot: every runtime setting back at its default
    node.check_output('rm -f %s/qos/*.json %s/pci/*.json' % (LAB, LAB))
    node.check_output('for f in %s/sys/class/net/enp11s0f0np0/ecn/*/enable/3; do echo 0 > $f; done' % LAB)
    assert qos_trust(node) == 'pcp' and devctl(node, PFS[0]) == '2020'
    node.check_output('systemctl restart %s' % UNIT)
    assert node.check_output('systemctl is-active %s' % UNIT) == 'active'
    after = json.loads(node.check_output("python3 -c '%s'" % SNAPSHOT.replace("'", "'\\''")))
    for netdev in NETDEVS:
        assert (after['qos'][netdev]['trust'], after['qos'][netdev]['pfc']) == ('dscp', [0, 0, 0, 1, 0, 0, 0, 0])
    assert all(after['devctl'][pci] == '5020' for pci in PFS)
    assert after['ecn']['enp11s0f0np0/ecn/roce_rp/enable/3'] == '1'


def qos_trust(node):
    return node.check_output('%s/bin/mlnx_qos -i enp11s0f0np0 | sed -n "s/^Priority trust state: //p"' % LAB)


def test_the_boot_time_script_skips_a_function_that_changed():
    node = host()
    node.check_output('cp %s/sys/bus/pci/devices/%s/device /tmp/device.orig' % (LAB, PFS[1]))
    node.check_output('echo 0x101b > %s/sys/bus/pci/devices/%s/device' % (LAB, PFS[1]))
    node.check_output('rm -f %s/pci/%s.json' % (LAB, PFS[1]))
    result = node.run(SCRIPT)
    node.check_output('cp /tmp/device.orig %s/sys/bus/pci/devices/%s/device' % (LAB, PFS[1]))
    assert result.rc == 1
    assert 'is not the ConnectX endpoint 0x1017 it was; not written' in result.stderr
    assert devctl(node, PFS[1]) == '2020'


def test_the_report_shows_the_qos_of_the_roce_node():
    with open(REPORT) as handle:
        tuning = [h for h in json.load(handle)['hosts'] if h['host'] == 'tuning-roce'][0]['tuning']
    assert sorted(p['interface'] for p in tuning['ports']) == sorted(NETDEVS)
    assert all((p['trust'], p['pfc_priorities']) == ('dscp', [3]) for p in tuning['ports'])
    ecn = dict((p['interface'], p['ecn']) for p in tuning['ports'])
    assert ecn['enp11s0f0np0'] == [3] and ecn['enp12s0f0np0'] == 'firmware'
    assert all(f['max_read_request'] == 4096 for f in tuning['pci'])
    assert len(tuning['firmware_pending']) == 8
    with open(REPORT.replace('.json', '.md')) as handle:
        assert '## NIC tuning' in handle.read()
