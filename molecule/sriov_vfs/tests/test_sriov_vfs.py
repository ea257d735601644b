# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Verify the SR-IOV stage on a node whose sysfs answers like the kernel (the SR-IOV double over FUSE).

The tests run in file order: the last ones change the node (a count change in the node's batch, a simulated reboot).
"""

from __future__ import annotations

import json
import os
import subprocess

import testinfra

SCENARIO = os.environ['MOLECULE_SCENARIO_DIRECTORY']
INVENTORY = os.environ['MOLECULE_INVENTORY_FILE']
EPHEMERAL = os.environ['MOLECULE_EPHEMERAL_DIRECTORY']
NODE = 'sriov-node'
SYS = '/opt/gpunet-lab/kernel-sys'
PF = SYS + '/bus/pci/devices/0000:0b:00.0'
PF_NAME = '0000:0b:00.0 (mlx5_0, enp11s0f0np0)'
CONF = '/etc/gpunet-rdma/sriov-vfs.conf'
UNIT = 'gpunet-sriov-vfs.service'


def host():
    return testinfra.get_host('podman://%s' % NODE)


def numvfs():
    return int(host().file(PF + '/sriov_numvfs').content_string)


def virtfns():
    listing = 'cd %s && for link in virtfn*; do [ ! -L "$link" ] || echo "$link $(readlink "$link")"; done' % PF
    return host().check_output(listing).splitlines()


def ledger(name='sriov'):
    with open(os.path.join(EPHEMERAL, '%s-%s.json' % (name, NODE))) as handle:
        return json.load(handle)


def playbook(name, *extra):
    done = subprocess.run(['ansible-playbook', '-i', INVENTORY, os.path.join(SCENARIO, name)] + list(extra),
                          check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return done.stdout


def test_the_double_serves_the_node():
    assert host().mount_point(SYS).exists and host().mount_point(SYS).filesystem == 'fuse'
    assert host().service('sriov-sysfs-double').is_running


def test_vfs_created_in_the_host_phase():
    """converge made 0 -> 2 (the double booted without VF), idempotence and check changed nothing."""
    assert numvfs() == 2
    assert virtfns() == ['virtfn0 ../0000:0b:00.2', 'virtfn1 ../0000:0b:00.3']
    assert host().file(SYS + '/class/net/enp11s0f0v1').is_symlink
    assert host().file(SYS + '/class/infiniband/mlx5_9/device').linked_to.endswith('0000:0b:00.3')
    stage = ledger()
    assert (stage['status'], stage['pending'], stage['problems']) == ('ok', [], [])
    pf = stage['detail']['pfs'][0]
    assert (pf['pci_address'], pf['action'], pf['sriov_numvfs'], pf['sriov_totalvfs']) == ('0000:0b:00.0', 'none', 2, 8)
    assert [(vf['index'], vf['pci_address'], vf['netdev'], vf['rdma_device'], vf['driver']) for vf in pf['vfs']] == [
        (0, '0000:0b:00.2', 'enp11s0f0v0', 'mlx5_8', 'mlx5_core'),
        (1, '0000:0b:00.3', 'enp11s0f0v1', 'mlx5_9', 'mlx5_core')]
    assert stage['detail']['vfs'] == 2 and stage['detail']['unit'] == UNIT


def test_the_boot_unit_is_written_and_enabled_not_started():
    node = host()
    assert node.file(CONF).content_string.splitlines()[-2:] == ['sysfs_root %s' % SYS, '0000:0b:00.0 2 1']
    assert node.file('/usr/local/libexec/gpunet-sriov-vfs').mode == 0o755
    unit = node.file('/etc/systemd/system/' + UNIT).content_string
    assert 'Before=network-pre.target kubelet.service shutdown.target' in unit
    assert 'ExecStart=/usr/local/libexec/gpunet-sriov-vfs %s 120' % CONF in unit
    assert node.service(UNIT).is_enabled and not node.service(UNIT).is_running


def test_the_kernels_rules_hold_in_the_node():
    """The double answers the shell as the kernel would: ERANGE above sriov_totalvfs, EBUSY for another count."""
    node = host()
    # bash's echo names the errno (dash's says "I/O error" for every one)
    refusals = ((9, 'Numerical result out of range'), (3, 'Device or resource busy'), ('x', 'Invalid argument'))
    for value, error in refusals:
        result = node.run("bash -c 'echo %s > %s/sriov_numvfs'" % (value, PF))
        assert result.rc == 1 and 'echo: write error: %s' % error in result.stderr, result.stderr
    assert node.run("bash -c 'echo 2 > %s/sriov_numvfs'" % PF).rc == 0  # its own count: nothing happens
    assert numvfs() == 2


def test_the_module_refuses_before_writing():
    playbook('refusals.yml')
    with open(os.path.join(EPHEMERAL, 'sriov-refusals-%s.json' % NODE)) as handle:
        results = json.load(handle)
    # failed_when: false keeps the play going; the module's refusal is in its message, and nothing was written
    assert all(result['msg'].startswith('Nothing was written.') and result['written'] == [] and not result['changed']
               for result in results.values())
    assert '%s: 9 VFs wanted, more than sriov_totalvfs 8 (the kernel refuses with ERANGE)' % PF_NAME \
        in results['too_many']['msg']
    assert '0000:0c:00.0 (mlx5_1, enp12s0f0np0) has no SR-IOV capability (no sriov_totalvfs)' \
        in results['sr_iov_disabled']['msg']
    assert '0000:0b:00.2 (mlx5_8, enp11s0f0v0) is an SR-IOV virtual function of 0000:0b:00.0' in results['a_vf']['msg']
    assert '6 VFs wanted, but the firmware allows 4 (NUM_OF_VFS 4 after the next boot)' \
        in results['firmware_allows_fewer']['msg']
    assert numvfs() == 2


def test_a_change_waits_for_permission_then_the_batch_makes_it():
    output = playbook('change.yml')
    pending = ledger('sriov-pending')
    assert pending['status'] == 'pending'
    assert pending['pending'] == [{'action': 'sriov_change', 'allowed': False, 'reason': (
        '%s: 2 -> 4 VFs destroys the 2 VFs the PF has (pods or VMs using them lose them)' % PF_NAME)}]
    with open(os.path.join(EPHEMERAL, 'sriov-kept-%s' % NODE)) as handle:
        assert handle.read() == '2\n'
    assert 'sriov_vfs_allow_change: true (gpunet_rdma_fabric.sriov.allow_change) lets the node' \
        in ' '.join(output.split())
    changed = ledger('sriov-changed')
    assert (changed['status'], changed['pending'], changed['changed']) == ('changed', [], True)
    assert changed['detail']['pfs'][0]['action'] == 'change' and changed['detail']['pfs'][0]['before'] == 2
    assert numvfs() == 4 and len(virtfns()) == 4
    assert host().file(CONF).content_string.splitlines()[-1] == '0000:0b:00.0 4 1'


def test_the_boot_unit_creates_the_vfs_after_a_reboot():
    node = host()
    node.run_expect([0], 'systemctl restart sriov-sysfs-double')  # the kernel after a boot: no VF
    assert numvfs() == 0 and virtfns() == []
    node.run_expect([0], 'systemctl start %s' % UNIT)
    assert node.service(UNIT).is_running  # a oneshot that stays active (RemainAfterExit)
    assert numvfs() == 4 and len(virtfns()) == 4
    journal = node.check_output('journalctl -u %s --no-pager -o cat' % UNIT)
    assert '0000:0b:00.0: 4 VFs created' in journal
