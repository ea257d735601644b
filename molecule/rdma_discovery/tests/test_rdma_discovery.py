# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Verify the fleet report on the controller against the real state of each instance.

Every row of the report must say what the instance's sysfs tree says, so the
test fails if discovery, the checks or the report drift from the hardware.
"""

from __future__ import annotations

import json
import os

import pytest
import testinfra
import testinfra.utils.ansible_runner

HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(os.environ['MOLECULE_INVENTORY_FILE']).get_hosts('all')
REPORT_DIR = os.path.join(os.environ['MOLECULE_EPHEMERAL_DIRECTORY'], 'rdma-report')
SYSFS = '/opt/gpunet-lab/sys'

EXPECTED_VERDICTS = {'mol-v100': 'pass', 'mol-a100': 'pass', 'mol-v100-degraded': 'fail'}

# podman exec directly: the same containers as the inventory, without an Ansible round trip per file read.
testinfra_hosts = ['podman://%s' % name for name in HOSTS]


def _report():
    with open(os.path.join(REPORT_DIR, 'rdma-fleet-report.json')) as handle:
        return json.load(handle)


def _host_entry(name):
    entries = [h for h in _report()['hosts'] if h['host'] == name]
    assert len(entries) == 1, 'host %s appears %d times in the report' % (name, len(entries))
    return entries[0]


def _sysfs_value(host, path):
    return host.file(os.path.join(SYSFS, path)).content_string.strip()


def test_report_lists_every_instance_once():
    assert sorted(h['host'] for h in _report()['hosts']) == sorted(EXPECTED_VERDICTS)


def test_report_summary_counts():
    summary = _report()['summary']
    assert (summary['hosts'], summary['pass'], summary['fail']) == (3, 2, 1)
    assert summary['failed_hosts'] == ['mol-v100-degraded']


def test_host_verdict(host):
    name = host.backend.get_hostname()
    assert _host_entry(name)['verdict'] == EXPECTED_VERDICTS[name]


def test_report_ports_match_the_instance_sysfs(host):
    name = host.backend.get_hostname()
    entry = _host_entry(name)
    devices = sorted(host.file(os.path.join(SYSFS, 'class', 'infiniband')).listdir())
    assert sorted(set(p['device'] for p in entry['ports'])) == devices
    for port in entry['ports']:
        port_dir = os.path.join('class', 'infiniband', port['device'], 'ports', str(port['port']))
        assert _sysfs_value(host, os.path.join(port_dir, 'state')).split(': ')[1] == port['state']
        assert _sysfs_value(host, os.path.join(port_dir, 'phys_state')).split(': ')[1] == port['physical_state']
        assert _sysfs_value(host, os.path.join(port_dir, 'link_layer')) == port['link_layer']
        assert _sysfs_value(host, os.path.join(port_dir, 'rate')) == port['rate']
        assert host.file(os.path.join(SYSFS, 'class', 'net', port['netdev'])).is_symlink
        pci = host.file(os.path.join(SYSFS, 'class', 'infiniband', port['device'], 'device')).linked_to
        assert os.path.basename(pci) == port['pci_address']


def test_markdown_report_rows(host):
    name = host.backend.get_hostname()
    with open(os.path.join(REPORT_DIR, 'rdma-fleet-report.md')) as handle:
        rows = [line for line in handle.read().splitlines() if line.startswith('| %s | ' % name)]
    entry = _host_entry(name)
    # one row in the hosts table and one per port
    assert len(rows) == 1 + len(entry['ports'])


@pytest.mark.parametrize('name, device, verdict', [
    ('mol-a100', 'mlx5_0', 'ignored'),
    ('mol-a100', 'mlx5_1', 'ok'),
    ('mol-a100', 'mlx5_bond_0', 'ignored'),
    ('mol-v100-degraded', 'mlx5_1', 'down'),
])
def test_port_verdicts(name, device, verdict):
    ports = [p for p in _host_entry(name)['ports'] if p['device'] == device]
    assert [p['verdict'] for p in ports] == [verdict]


def test_bond_netdev_comes_from_the_gid_table():
    a100 = testinfra.get_host('podman://mol-a100')
    bond = [p for p in _host_entry('mol-a100')['ports'] if p['device'] == 'mlx5_bond_0'][0]
    ndev = _sysfs_value(a100, 'class/infiniband/mlx5_bond_0/ports/1/gid_attrs/ndevs/0')
    assert bond['netdev'] == ndev == 'bond0'


def test_discovery_changed_nothing_on_the_instance(host):
    """The module only reads: nothing may appear in the fixture tree or in /etc."""
    assert host.run('find %s -newer %s/class/infiniband -type f | wc -l' % (SYSFS, SYSFS)).stdout.strip() == '0'
