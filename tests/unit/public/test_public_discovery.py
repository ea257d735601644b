# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ibdev2netdev and `rdma link` outputs recorded on real machines and published (issues, docs, commit messages).

Every artifact of fixtures/public/ibdev2netdev/ and fixtures/public/rdma_link/ has an expectation written by hand
from reading the file: each port's device, port, netdev, state, physical state, netdev state, link layer and PCI
address (None where the output does not print it), and what the verbose form tells about each device. Each parser
runs over every artifact of its kind, directly and through the facts module with a command double that prints
the artifact.
"""

from __future__ import annotations

import glob
import json
import os
import re
import stat

import pytest
import yaml

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import parse_ibdev2netdev, parse_rdma_link
from ansible_collections.gpunet.rdma.plugins.modules import ibdev2netdev_facts

PUBLIC = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'public')
SOURCE_KEYS = ('what', 'excerpt')

# (device, port, netdev, state, physical state, netdev state, link layer, PCI address)
IBDEV2NETDEV = {
    'cloud-native-docs-gpu-operator-rdma-mofed-pod.txt': [
        ('mlx5_0', 1, 'ens64np1', None, None, 'Up', None, None)],
    'daocloud-spiderpool-ofed-driver-roce.txt': [
        ('mlx5_0', 1, 'enp4s0f0np0', None, None, 'Up', None, None),
        ('mlx5_1', 1, 'enp4s0f1np1', None, None, 'Up', None, None)],
    'docker-sriov-plugin-6-connectx3-two-ports.txt': [
        ('mlx4_0', 1, 'ib0', None, None, 'Up', None, None),
        ('mlx4_0', 2, 'ib1', None, None, 'Up', None, None)],
    'openshift-sriov-network-operator-635-ib-vfs.txt': [
        ('mlx5_19', 1, 'ibp75s0v7', None, None, 'Down', None, None),
        ('mlx5_2', 1, 'ibp75s0', None, None, 'Up', None, None),
        ('mlx5_20', 1, 'ibp141s0v0', None, None, 'Down', None, None),
        ('mlx5_21', 1, 'ibp141s0v1', None, None, 'Down', None, None),
        ('mlx5_22', 1, 'ibp141s0v2', None, None, 'Down', None, None),
        ('mlx5_23', 1, 'ibp141s0v3', None, None, 'Down', None, None),
        ('mlx5_24', 1, 'ibp141s0v4', None, None, 'Down', None, None),
        ('mlx5_25', 1, 'ibp141s0v5', None, None, 'Down', None, None),
        ('mlx5_26', 1, 'ibp141s0v6', None, None, 'Down', None, None),
        ('mlx5_3', 1, 'ibp84s0', None, None, 'Down', None, None),
        ('mlx5_4', 1, 'enp97s0f0', None, None, 'Up', None, None),
        ('mlx5_5', 1, 'ibp97s0f1', None, None, 'Down', None, None),
        ('mlx5_6', 1, 'ibp141s0', None, None, 'Up', None, None),
        ('mlx5_7', 1, 'ibp148s0', None, None, 'Down', None, None),
        ('mlx5_8', 1, 'ibp186s0', None, None, 'Down', None, None),
        ('mlx5_9', 1, 'ibp204s0', None, None, 'Down', None, None)],
    'sriov-cni-vf-setup-before-vfs.txt': [
        ('mlx5_0', 1, 'enp2s0f0', None, None, 'Up', None, None),
        ('mlx5_1', 1, 'enp2s0f1', None, None, 'Up', None, None)],
    'sriov-cni-vf-setup-verbose-with-vfs.txt': [
        ('mlx5_0', 1, 'enp2s0f0', 'ACTIVE', None, 'Up', None, '0000:02:00.0'),
        ('mlx5_1', 1, 'enp2s0f1', 'ACTIVE', None, 'Up', None, '0000:02:00.1'),
        ('mlx5_2', 1, 'enp2s0f2', 'DOWN', None, 'Down', None, '0000:02:00.5'),
        ('mlx5_3', 1, 'enp2s0f3', 'DOWN', None, 'Down', None, '0000:02:00.6'),
        ('mlx5_4', 1, 'enp2s0f4', 'DOWN', None, 'Down', None, '0000:02:00.7'),
        ('mlx5_5', 1, 'enp2s0f5', 'DOWN', None, 'Down', None, '0000:02:00.2')],
    'sriov-network-operator-382-pod-ib-vf.txt': [
        ('mlx5_3', 1, 'net1', None, None, 'Down', None, None)],
}

# What the -v form says about the devices: (device ID, firmware, SR-IOV VF); plain forms tell nothing.
IBDEV2NETDEV_DEVICES = {
    'sriov-cni-vf-setup-verbose-with-vfs.txt': {
        'mlx5_0': ('MT4115', '12.23.1020', False), 'mlx5_1': ('MT4115', '12.23.1020', False),
        'mlx5_2': ('MT4116', '12.23.1020', True), 'mlx5_3': ('MT4116', '12.23.1020', True),
        'mlx5_4': ('MT4116', '12.23.1020', True), 'mlx5_5': ('MT4116', '12.23.1020', True)},
}

RDMA_LINK = {
    'daocloud-spiderpool-ofed-driver-roce.txt': [
        ('mlx5_0', 1, 'enp4s0f0np0', 'ACTIVE', 'LinkUp', None, None, None),
        ('mlx5_1', 1, 'enp4s0f1np1', 'ACTIVE', 'LinkUp', None, None, None)],
    'deepseek-3fs-263-soft-roce.txt': [
        ('rxe_0', 1, 'p1p1', 'ACTIVE', 'LinkUp', None, None, None)],
    'deepseek-3fs-283-connectx6dx-roce.txt': [
        ('mlx5_0', 1, 'p1p1', 'ACTIVE', 'LinkUp', None, None, None),
        ('mlx5_1', 1, 'p1p2', 'ACTIVE', 'LinkUp', None, None, None)],
    'iproute2-15259427-link-show-d.txt': [
        ('mlx5_3', 1, 'ens7', 'ACTIVE', 'LinkUp', None, None, None)],
    'iproute2-15259427-link-show.txt': [
        ('mlx5_3', 1, 'ens7', 'ACTIVE', 'LinkUp', None, None, None)],
    'iproute2-7fc75744-link-d-p-j.json': [
        ('mlx5_0', 1, None, 'ACTIVE', 'LinkUp', None, 'InfiniBand', None),
        ('mlx5_1', 1, None, 'ACTIVE', 'LinkUp', None, 'InfiniBand', None)],
    'openshift-docs-rdma-verifying-pod-with-vf.txt': [
        ('mlx5_0', 1, None, 'ACTIVE', 'LinkUp', None, None, None),
        ('mlx5_1', 1, None, 'ACTIVE', 'LinkUp', None, 'InfiniBand', None),
        ('mlx5_2', 1, None, 'DOWN', 'Disabled', None, None, None),
        ('mlx5_3', 1, None, 'DOWN', 'Disabled', None, None, None),
        ('mlx5_4', 1, None, 'DOWN', 'Disabled', None, None, None),
        ('mlx5_5', 1, None, 'DOWN', 'Disabled', None, None, None),
        ('mlx5_6', 1, None, 'DOWN', 'Disabled', None, None, None),
        ('mlx5_7', 1, 'net1', 'ACTIVE', 'LinkUp', None, None, None),
        ('mlx5_8', 1, None, 'DOWN', 'Disabled', None, None, None),
        ('mlx5_9', 1, None, 'DOWN', 'Disabled', None, None, None)],
    'rocm-rccl-1423-ib-port-polling.txt': [
        ('mlx5_7', 1, None, 'DOWN', 'Polling', None, 'InfiniBand', None)],
    'spiderpool-ipoib-ib-port-without-netdev.txt': [
        ('mlx5_0', 1, None, 'ACTIVE', 'LinkUp', None, 'InfiniBand', None)],
}

# LIDs printed for InfiniBand ports: (device, port) -> (LID, SM LID)
RDMA_LINK_LIDS = {
    'iproute2-7fc75744-link-d-p-j.json': {('mlx5_0', 1): (13399, 49151), ('mlx5_1', 1): (13400, 49151)},
    'openshift-docs-rdma-verifying-pod-with-vf.txt': {('mlx5_1', 1): (12, 1)},
    'rocm-rccl-1423-ib-port-polling.txt': {('mlx5_7', 1): (3403, 1)},
    'spiderpool-ipoib-ib-port-without-netdev.txt': {('mlx5_0', 1): (2, 2)},
}

KINDS = {'ibdev2netdev': (IBDEV2NETDEV, parse_ibdev2netdev), 'rdma_link': (RDMA_LINK, parse_rdma_link)}
CASES = [(kind, name) for kind, (table, _parse) in sorted(KINDS.items()) for name in sorted(table)]


def artifacts(kind):
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(PUBLIC, kind, '*'))
                  if not p.endswith('.source.yml'))


def read(kind, name):
    with open(os.path.join(PUBLIC, kind, name)) as handle:
        return handle.read()


def as_rows(ports):
    return dict(((p['device'], p['port']), (p['device'], p['port'], p['netdev'], p['state'], p['physical_state'],
                                            p['netdev_state'], p['link_layer'], p['pci_address'])) for p in ports)


@pytest.mark.parametrize('kind', sorted(KINDS))
def test_every_artifact_has_an_expectation_and_a_source(kind):
    table = KINDS[kind][0]
    names = artifacts(kind)
    assert names == sorted(table), 'artifacts without an expectation: %s; expectations without an artifact: %s' % (
        sorted(set(names) - set(table)), sorted(set(table) - set(names)))
    for name in names:
        with open(os.path.join(PUBLIC, kind, name + '.source.yml')) as handle:
            source = yaml.safe_load(handle)
        assert source.get('source') or (source.get('repository') and source.get('path')), name
        if source.get('commit'):
            assert re.match(r'^[0-9a-f]{40}$', source['commit']), name
        for key in SOURCE_KEYS:
            assert source.get(key), '%s: sidecar without %s' % (name, key)
    sidecars = [os.path.basename(p)[:-len('.source.yml')] for p in glob.glob(os.path.join(PUBLIC, kind, '*.yml'))]
    assert sorted(sidecars) == names


def test_the_corpus_covers_the_layouts():
    """Plain and -v, SR-IOV VFs, two ports on one function, rdma text (both forms) and JSON, IB and RoCE."""
    assert len(artifacts('ibdev2netdev')) + len(artifacts('rdma_link')) >= 14
    verbose = [n for n in IBDEV2NETDEV if any(row[7] for row in IBDEV2NETDEV[n])]
    two_ports = [n for n in IBDEV2NETDEV if any(row[1] == 2 for row in IBDEV2NETDEV[n])]
    json_form = [n for n in RDMA_LINK if n.endswith('.json')]
    old_text = [n for n in RDMA_LINK if re.match(r'^\s*\d+/\d+: ', read('rdma_link', n))]
    infiniband = [n for n in RDMA_LINK if any(row[6] == 'InfiniBand' for row in RDMA_LINK[n])]
    assert verbose and two_ports and json_form and old_text and infiniband


@pytest.mark.parametrize('kind, name', CASES)
def test_parser_reads_the_artifact(kind, name):
    table, parse = KINDS[kind]
    ports, devices = parse(read(kind, name))
    expected = dict(((row[0], row[1]), row) for row in table[name])
    assert as_rows(ports) == expected
    # natural order: mlx5_2 before mlx5_10, ports ascending
    keys = [(p['device'], p['port']) for p in ports]
    assert keys == sorted(keys, key=lambda k: ([int(x) if x.isdigit() else x for x in re.split(r'(\d+)', k[0])],
                                               k[1]))
    assert sorted(d['device'] for d in devices) == sorted(set(row[0] for row in table[name]))
    for port in ports:
        assert port['source'] == ('ibdev2netdev' if kind == 'ibdev2netdev' else 'rdma')
        assert port['unknown'] == [key for key in ('state', 'physical_state', 'link_layer', 'rate_gbps')
                                   if port[key] is None]
    if kind == 'rdma_link':
        lids = dict(((p['device'], p['port']), (p['lid'], p['sm_lid'])) for p in ports if p['lid'] is not None)
        assert lids == RDMA_LINK_LIDS.get(name, {})
    else:
        described = dict((d['device'], (d['hca_type'], d['fw_ver'], d['virtual_function'])) for d in devices
                         if d['hca_type'] or d['fw_ver'])
        assert described == IBDEV2NETDEV_DEVICES.get(name, {})


def command_double(directory, kind, name):
    """A stand-in for the tool that recorded the artifact: it prints it for the argv the module uses."""
    tool = 'ibdev2netdev' if kind == 'ibdev2netdev' else 'rdma'
    argv = '-v' if tool == 'ibdev2netdev' else '-j link'
    path = os.path.join(str(directory), tool)
    with open(path, 'w') as handle:
        handle.write('#!/bin/sh\n[ "$*" = "%s" ] || { echo "usage" >&2; exit 1; }\ncat %s\n'
                     % (argv, os.path.abspath(os.path.join(PUBLIC, kind, name))))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return tool, path


@pytest.mark.parametrize('kind, name', CASES)
def test_facts_module_reads_the_artifact(kind, name, tmp_path, hardware, capsys):
    sysfs = hardware({}, tmp_path / 'sys')  # a host sysfs that knows none of these devices: nothing is filled
    tool, path = command_double(tmp_path, kind, name)
    args = {'source': 'ibdev2netdev' if tool == 'ibdev2netdev' else 'rdma', tool + '_path': path,
            'sysfs_root': sysfs}
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exit_info:
            ibdev2netdev_facts.main()
    result = json.loads(capsys.readouterr().out)
    assert exit_info.value.code == 0, result
    expected = dict(((row[0], row[1]), row) for row in KINDS[kind][0][name])
    assert as_rows(result['ansible_facts']['rdma_ports']) == expected
    assert result['sysfs_filled'] is False
