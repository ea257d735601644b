# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import json
import os
import re

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._network_operator import (
    NetworkOperatorError,
    shared_device_plugin_config,
)
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import (
    roce_gid_index,
    DEVICE_KEYS,
    PORT_KEYS,
    RdmaParseError,
    SysfsReader,
    fill_from_sysfs,
    is_virtual_function,
    normalize_pci_address,
    parse_ibdev2netdev,
    parse_rate,
    parse_rdma_link,
    parse_state,
    sysfs_root_problem,
    unknown_link_layer_gap,
)
from ansible_collections.gpunet.rdma.plugins.plugin_utils._spiderpool import SpiderpoolError, resolve_nics

PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _by_device(ports):
    return dict(((p['device'], p['port']), p) for p in ports)


# ------------------------------------------------------------------ helpers

@pytest.mark.parametrize('text, what, expected', [
    ('4: ACTIVE', 'state', 'ACTIVE'),
    ('1: DOWN\n', 'state', 'DOWN'),
    ('5: ACTIVE_DEFER', 'state', 'ACTIVE_DEFER'),
    ('7: UNKNOWN', 'state', None),
    ('5: LinkUp', 'phys_state', 'LinkUp'),
    ('7: Phy Test', 'phys_state', 'Phy Test'),
    ('4: PortConfigurationTraining', 'phys_state', 'PortConfigurationTraining'),
    ('0: <unknown>', 'phys_state', None),
])
def test_parse_state(text, what, expected):
    assert parse_state(text, what) == expected


@pytest.mark.parametrize('text, what', [('ACTIVE', 'state'), ('4: LinkUp', 'state'), ('5: ACTIVE', 'phys_state'),
                                        ('4: active', 'state')])
def test_parse_state_rejects_garbage(text, what):
    with pytest.raises(RdmaParseError) as error:
        parse_state(text, what)
    assert error.value.line == text


@pytest.mark.parametrize('text, expected', [
    ('100 Gb/sec (4X EDR)', 100),
    ('200 Gb/sec (4X HDR)', 200),
    ('2.5 Gb/sec (1X SDR)', 2.5),
    ('53.125 Gb/sec (1X HDR)', 53.125),
    ('400 Gb/sec (4X NDR)\n', 400),
])
def test_parse_rate(text, expected):
    assert parse_rate(text) == expected


def test_parse_rate_rejects_garbage():
    with pytest.raises(RdmaParseError):
        parse_rate('fast')


@pytest.mark.parametrize('text, expected', [
    ('86:00.0', '0000:86:00.0'),
    ('0000:AF:00.1', '0000:af:00.1'),
    ('mlx5_0', None),
    ('0000:86:00.8', None),
])
def test_normalize_pci_address(text, expected):
    assert normalize_pci_address(text) == expected


@pytest.mark.parametrize('device, expected', [
    ({'virtual_function': True, 'hca_type': 'MT4119'}, True),  # sysfs said so: the ID does not overrule it
    ({'virtual_function': None, 'hca_type': 'MT4116'}, True),  # ConnectX-4 VF, as ibdev2netdev -v prints it
    ({'virtual_function': None, 'hca_type': 'MT4126'}, True),  # the generic mlx5 VF of ConnectX-6 Dx and later
    ({'virtual_function': None, 'hca_type': 'MT4123'}, False),
    ({'virtual_function': None, 'hca_type': None}, None),
    ({}, None),
])
def test_is_virtual_function(device, expected):
    assert is_virtual_function(device) is expected


# ------------------------------------------------------------------ sysfs

def test_sysfs_roce_table_with_a_gap(tmp_path, hardware):
    """roce_a100's mlx5_0: entries 2/3 emptied (an old IPv4 address), IPv6 at 4/5, the new IPv4 at 6/7."""
    root = hardware('roce_a100', tmp_path / 'sys')
    ports, _devices = SysfsReader(root).read()
    gids = _by_device(ports)[('mlx5_0', 1)]['gids']
    assert [(g['index'], g['type'], g['ipv4']) for g in gids] == [
        (0, 'RoCE v1', None), (1, 'RoCE v2', None), (4, 'RoCE v1', None), (5, 'RoCE v2', None),
        (6, 'RoCE v1', '172.16.11.11'), (7, 'RoCE v2', '172.16.11.11')]


def test_sysfs_gid_of_another_shape_is_refused(tmp_path, hardware):
    root = hardware('a100', tmp_path / 'sys')
    gid = os.path.join(root, 'class', 'infiniband', 'mlx5_1', 'ports', '1', 'gids', '7')
    with open(gid, 'w') as handle:
        handle.write('fe80::1\n')
    with pytest.raises(RdmaParseError, match=r"unexpected GID 'fe80::1' in .*/ports/1/gids/7"):
        SysfsReader(root).read()


def test_sysfs_a100_node(tmp_path, hardware):
    root = hardware('a100', tmp_path / 'sys')
    ports, devices = SysfsReader(root).read()
    assert [(p['device'], p['port']) for p in ports] == [('mlx5_0', 1), ('mlx5_1', 1), ('mlx5_bond_0', 1)]
    by = _by_device(ports)
    # mlx5_0's firmware has its port in Ethernet mode: RoCE netdev from the GID table.
    assert by[('mlx5_0', 1)] == {
        'device': 'mlx5_0', 'port': 1, 'netdev': 'enp12s0np0', 'netdev_state': 'Down', 'state': 'DOWN',
        'physical_state': 'Disabled', 'link_layer': 'Ethernet', 'rate_gbps': 10, 'rate': '10 Gb/sec (4X SDR)',
        'lid': 0, 'sm_lid': 0, 'pci_address': '0000:0c:00.0', 'source': 'sysfs', 'unknown': [],
        'virtual_function': False, 'physical_function': None, 'physical_function_device': None, 'vfs': [],
        # no IPv4 address on the down netdev: its link-local GID (modified EUI-64 of 0c:42:a1:a1:0c:44) only
        'gids': [
            {'index': 0, 'gid': 'fe80:0000:0000:0000:0e42:a1ff:fea1:0c44', 'type': 'RoCE v1', 'netdev': 'enp12s0np0',
             'ipv4': None},
            {'index': 1, 'gid': 'fe80:0000:0000:0000:0e42:a1ff:fea1:0c44', 'type': 'RoCE v2', 'netdev': 'enp12s0np0',
             'ipv4': None}]}
    # InfiniBand: the port GID (subnet prefix and port GUID), type IB, no netdev (the kernel refuses ndevs reads)
    assert by[('mlx5_1', 1)]['gids'] == [
        {'index': 0, 'gid': 'fe80:0000:0000:0000:0c42:a103:00a1:0d44', 'type': 'IB', 'netdev': None, 'ipv4': None}]
    # the bond's table: link-local v1/v2 at 0/1, bond0's IPv4 address 10.96.83.26 at 2 (v1) and 3 (v2)
    assert [(g['index'], g['type'], g['netdev'], g['ipv4']) for g in by[('mlx5_bond_0', 1)]['gids']] == [
        (0, 'RoCE v1', 'bond0', None), (1, 'RoCE v2', 'bond0', None),
        (2, 'RoCE v1', 'bond0', '10.96.83.26'), (3, 'RoCE v2', 'bond0', '10.96.83.26')]
    assert by[('mlx5_bond_0', 1)]['gids'][3]['gid'] == '0000:0000:0000:0000:0000:ffff:0a60:531a'
    assert by[('mlx5_1', 1)]['state'] == 'ACTIVE'
    assert by[('mlx5_1', 1)]['rate_gbps'] == 200
    assert by[('mlx5_1', 1)]['netdev'] == 'ibp141s0'
    assert by[('mlx5_1', 1)]['lid'] == 3
    # RoCE LAG: the GIDs are bound to the bond, not to the PF's own netdev.
    assert by[('mlx5_bond_0', 1)]['netdev'] == 'bond0'
    assert by[('mlx5_bond_0', 1)]['link_layer'] == 'Ethernet'
    assert by[('mlx5_bond_0', 1)]['pci_address'] == '0000:3b:00.0'
    assert devices[2] == {'device': 'mlx5_bond_0', 'pci_address': '0000:3b:00.0', 'node_guid': '0c42:a103:005e:30d0',
                          'node_desc': 'lab mlx5_bond_0', 'fw_ver': '14.32.1010', 'hca_type': 'MT4117',
                          'board_id': 'MT_2420110034', 'virtual_function': False, 'physical_function': None,
                          'physical_function_device': None, 'sriov_numvfs': None, 'sriov_totalvfs': None,
                          'ports': [1]}


def test_sysfs_v100_node(tmp_path, hardware):
    ports, devices = SysfsReader(hardware('v100', tmp_path / 'sys')).read()
    assert [(p['netdev'], p['state'], p['rate_gbps'], p['link_layer']) for p in ports] == [
        ('ibp94s0f0', 'ACTIVE', 100, 'InfiniBand'), ('ibp94s0f1', 'ACTIVE', 100, 'InfiniBand')]
    assert [d['pci_address'] for d in devices] == ['0000:5e:00.0', '0000:5e:00.1']


def test_sysfs_sr_iov_virtual_functions_of_the_roce_node(tmp_path, hardware):
    """The lab's RoCE node: mlx5_0 has two VFs laid out as the kernel shows them (physfn, virtfnN, sriov_numvfs)."""
    ports, devices = SysfsReader(hardware('roce_a100', tmp_path / 'sys')).read()
    by = dict((d['device'], d) for d in devices)
    assert [name for name, d in by.items() if d['virtual_function']] == ['mlx5_8', 'mlx5_9']
    assert by['mlx5_0']['virtual_function'] is False
    assert (by['mlx5_0']['sriov_numvfs'], by['mlx5_0']['sriov_totalvfs']) == (2, 8)
    assert by['mlx5_1']['sriov_numvfs'] is None  # no SR-IOV on that function
    for name, pci in (('mlx5_8', '0000:0b:00.2'), ('mlx5_9', '0000:0b:00.3')):
        assert by[name]['pci_address'] == pci
        assert by[name]['physical_function'] == '0000:0b:00.0'
        assert by[name]['physical_function_device'] == 'mlx5_0'
        assert by[name]['hca_type'] == 'MT4120'
    vf_ports = _by_device(ports)
    assert (vf_ports[('mlx5_8', 1)]['netdev'], vf_ports[('mlx5_8', 1)]['netdev_state']) == ('enp11s0f0v0', 'Up')
    assert (vf_ports[('mlx5_9', 1)]['netdev'], vf_ports[('mlx5_9', 1)]['netdev_state']) == ('enp11s0f0v1', 'Down')
    # The ports carry it too: a VF's port names its PF, the PF's port lists its VFs (physfn / virtfnN in sysfs).
    for name in ('mlx5_8', 'mlx5_9'):
        assert (vf_ports[(name, 1)]['virtual_function'], vf_ports[(name, 1)]['physical_function'],
                vf_ports[(name, 1)]['physical_function_device'], vf_ports[(name, 1)]['vfs']) == (
            True, '0000:0b:00.0', 'mlx5_0', [])
    assert (vf_ports[('mlx5_0', 1)]['virtual_function'], vf_ports[('mlx5_0', 1)]['vfs']) == (False, ['mlx5_8', 'mlx5_9'])
    assert all(vf_ports[('mlx5_%d' % i, 1)]['vfs'] == [] for i in range(1, 8))


def test_vf_ports_from_a_command_know_their_pf_only_with_sysfs(tmp_path, hardware):
    """ibdev2netdev -v tells a VF by its device ID, not its PF; sysfs fills the PF in."""
    text = ('0000:0b:00.0 mlx5_0 (MT4119 - MCX515A-CCAT) CX515A fw 16.35.2000 port 1 (ACTIVE) ==> enp11s0f0np0 (Up)\n'
            '0000:0b:00.2 mlx5_8 (MT4120 - NA)  fw 16.35.2000 port 1 (ACTIVE) ==> enp11s0f0v0 (Up)\n')
    ports, devices = parse_ibdev2netdev(text)
    by = _by_device(ports)
    assert (by[('mlx5_8', 1)]['virtual_function'], by[('mlx5_8', 1)]['physical_function_device']) == (True, None)
    assert by[('mlx5_0', 1)]['vfs'] == []
    fill_from_sysfs(ports, devices, SysfsReader(hardware('roce_a100', tmp_path / 'sys')))
    by = _by_device(ports)
    assert (by[('mlx5_8', 1)]['physical_function'], by[('mlx5_8', 1)]['physical_function_device']) == (
        '0000:0b:00.0', 'mlx5_0')
    assert by[('mlx5_0', 1)]['vfs'] == ['mlx5_8']


def test_every_port_and_device_has_every_key(tmp_path, hardware):
    ports, devices = SysfsReader(hardware('roce_a100', tmp_path / 'sys')).read()
    for port in ports:
        assert tuple(sorted(port)) == tuple(sorted(PORT_KEYS))
    for device in devices:
        assert tuple(sorted(device)) == tuple(sorted(DEVICE_KEYS))


def _device(name, pci, ports, netdevs, **extra):
    device = {'name': name, 'pci_address': pci, 'pci_parent': 'pci0000:00/0000:00:02.0', 'hca_type': 'MT4099',
              'board_id': 'MT_1090120019', 'fw_ver': '2.42.5000', 'node_guid': '0002:c903:0031:7a10',
              'ports': ports, 'netdevs': netdevs}
    device.update(extra)
    return device


def _ib_port(number, state='ACTIVE', phys='LinkUp'):
    return {'number': number, 'state': state, 'phys_state': phys, 'rate': '56 Gb/sec (4X FDR)',
            'link_layer': 'InfiniBand', 'lid': '0x%x' % number, 'sm_lid': '0x1'}


def test_sysfs_multi_port_function_maps_netdevs_by_dev_port(tmp_path, hardware):
    """ConnectX-3: one PCI function, two ports, ib0/ib1 told apart by dev_port."""
    profile = {'devices': [_device('mlx4_0', '0000:04:00.0', [_ib_port(1), _ib_port(2, 'DOWN', 'Polling')], [
        {'name': 'ib1', 'dev_port': 1, 'operstate': 'down', 'carrier': 0},
        {'name': 'ib0', 'dev_port': 0},
    ])]}
    ports, _devices = SysfsReader(hardware(profile, tmp_path / 'sys')).read()
    assert [(p['port'], p['netdev'], p['netdev_state']) for p in ports] == [(1, 'ib0', 'Up'), (2, 'ib1', 'Down')]


def test_sysfs_carrier_unreadable_falls_back_to_operstate(tmp_path, hardware):
    profile = {'devices': [_device('mlx5_0', '0000:04:00.0', [_ib_port(1, 'DOWN', 'Disabled')], [
        {'name': 'ib0', 'operstate': 'down', 'carrier': None}])]}
    ports, _devices = SysfsReader(hardware(profile, tmp_path / 'sys')).read()
    assert ports[0]['netdev_state'] == 'Down'


def test_sysfs_unknown_operstate_is_null(tmp_path, hardware):
    profile = {'devices': [_device('mlx5_0', '0000:04:00.0', [_ib_port(1)], [
        {'name': 'ib0', 'operstate': 'unknown', 'carrier': None}])]}
    ports, _devices = SysfsReader(hardware(profile, tmp_path / 'sys')).read()
    assert ports[0]['netdev_state'] is None


def test_sysfs_roce_port_uses_gid_netdev(tmp_path, hardware):
    port = {'number': 1, 'state': 'ACTIVE', 'phys_state': 'LinkUp', 'rate': '100 Gb/sec (2X HDR)',
            'link_layer': 'Ethernet', 'gid_ndevs': ['', 'enp11s0f0np0']}
    profile = {'devices': [_device('mlx5_0', '0000:0b:00.0', [port], [{'name': 'enp11s0f0np0'}])]}
    ports, _devices = SysfsReader(hardware(profile, tmp_path / 'sys')).read()
    assert ports[0]['netdev'] == 'enp11s0f0np0'
    assert ports[0]['netdev_state'] == 'Up'


def test_sysfs_port_without_netdev(tmp_path, hardware):
    profile = {'devices': [_device('mlx5_2', '0000:0d:00.0', [_ib_port(1)], [])]}
    ports, devices = SysfsReader(hardware(profile, tmp_path / 'sys')).read()
    assert ports[0]['netdev'] is None and ports[0]['netdev_state'] is None
    assert devices[0]['ports'] == [1]


def test_sysfs_device_without_pci_parent(tmp_path, hardware):
    """A software device (no `device` link) has no PCI address and no VF state: null, not invented."""
    root = hardware({'devices': [_device('mlx5_0', '0000:04:00.0', [_ib_port(1)], [])]}, tmp_path / 'sys')
    os.unlink(os.path.join(root, 'devices', 'pci0000:00', '0000:00:02.0', '0000:04:00.0', 'infiniband', 'mlx5_0',
                           'device'))
    ports, devices = SysfsReader(root).read()
    assert ports[0]['pci_address'] is None
    assert devices[0]['pci_address'] is None and devices[0]['virtual_function'] is None


def test_sysfs_natural_device_order(tmp_path, hardware):
    profile = {'devices': [_device('mlx5_%d' % n, '0000:%02x:00.0' % (n + 1), [_ib_port(1)], [])
                           for n in (10, 2, 1)]}
    ports, devices = SysfsReader(hardware(profile, tmp_path / 'sys')).read()
    assert [p['device'] for p in ports] == ['mlx5_1', 'mlx5_2', 'mlx5_10']
    assert [d['device'] for d in devices] == ['mlx5_1', 'mlx5_2', 'mlx5_10']


def test_sysfs_without_rdma_class(tmp_path):
    reader = SysfsReader(str(tmp_path))
    assert not reader.has_rdma_class()
    assert reader.read() == ([], [])


def test_sysfs_empty_rdma_class(tmp_path, hardware):
    reader = SysfsReader(hardware({}, tmp_path / 'sys'))
    assert reader.has_rdma_class()
    assert reader.read() == ([], [])


def test_sysfs_malformed_state_quotes_content(tmp_path, hardware):
    root = hardware('v100', tmp_path / 'sys')
    with open(os.path.join(root, 'class', 'infiniband', 'mlx5_1', 'ports', '1', 'state'), 'w') as handle:
        handle.write('garbled\n')
    with pytest.raises(RdmaParseError) as error:
        SysfsReader(root).read()
    assert error.value.line == 'garbled'


def test_sysfs_non_utf8_kernel_value_is_refused_naming_the_file(tmp_path, hardware):
    root = hardware('v100', tmp_path / 'sys')
    path = os.path.join(root, 'class', 'infiniband', 'mlx5_0', 'ports', '1', 'link_layer')
    with open(path, 'wb') as handle:
        handle.write(b'Infini\xffBand\n')
    with pytest.raises(RdmaParseError, match=r'link_layer is not UTF-8 text \(byte 0xff at offset 6\)'):
        SysfsReader(root).read()


def test_sysfs_odd_bytes_in_free_text_become_replacement_characters(tmp_path, hardware):
    """board_id and node_desc come from firmware / the fabric: an odd byte there is shown, not fatal."""
    root = hardware('v100', tmp_path / 'sys')
    device_dir = os.path.join(root, 'class', 'infiniband', 'mlx5_0')
    with open(os.path.join(device_dir, 'board_id'), 'wb') as handle:
        handle.write(b'MT_\xe9000000008\n')
    with open(os.path.join(device_dir, 'node_desc'), 'wb') as handle:
        handle.write(b'gpu-\xff01 mlx5_0\n')
    _ports, devices = SysfsReader(root).read()
    assert devices[0]['board_id'] == 'MT_\ufffd000000008'
    assert devices[0]['node_desc'] == 'gpu-\ufffd01 mlx5_0'


def test_sysfs_gid_netdev_that_is_no_interface_name_is_refused(tmp_path, hardware):
    root = hardware('a100', tmp_path / 'sys')
    with open(os.path.join(root, 'class', 'infiniband', 'mlx5_bond_0', 'ports', '1', 'gid_attrs', 'ndevs', '0'),
              'w') as handle:
        handle.write('../../etc\n')
    with pytest.raises(RdmaParseError, match='not a network interface name'):
        SysfsReader(root).read()


@pytest.mark.parametrize('layout, expected', [
    ('missing', 'does not exist'),
    ('file', 'is not a directory'),
    ('empty', 'is not a sysfs mount: it has none of class/, devices/, bus/, module/, kernel/'),
    ('class', 'it looks like a directory inside one'),
    ('ok', None),
])
def test_sysfs_root_problem(tmp_path, hardware, layout, expected):
    root = str(tmp_path / 'root')
    if layout == 'file':
        (tmp_path / 'root').write_text('')
    elif layout == 'empty':
        os.mkdir(root)
    elif layout == 'class':
        hardware('v100', root)
        root = os.path.join(root, 'class')
    elif layout == 'ok':
        hardware('v100', root)
    problem = sysfs_root_problem(root)
    if expected is None:
        assert problem is None
    else:
        assert expected in problem and root in problem


ATTRIBUTES = [('ports/1/state', 'port'), ('ports/1/phys_state', 'port'), ('ports/1/rate', 'port'),
              ('ports/1/link_layer', 'port'), ('ports/1/lid', 'port'), ('ports/1/sm_lid', 'port'),
              ('node_guid', 'device'), ('fw_ver', 'device'), ('board_id', 'device'), ('hca_type', 'device'),
              ('node_desc', 'device'), ('device/sriov_numvfs', 'device'), ('device/net/ibp94s0f0/dev_port', 'net'),
              ('device/net/ibp94s0f0/carrier', 'net')]


@PROPERTY
@given(attribute=st.sampled_from(ATTRIBUTES),
       content=st.one_of(st.binary(max_size=80), st.text(max_size=80).map(lambda t: t.encode())))
def test_property_sysfs_reader_over_any_attribute_content(tmp_path_factory, hardware, attribute, content):
    """Whatever an attribute holds, the reader returns facts or its own error - never anything else."""
    root = hardware('v100', tmp_path_factory.mktemp('sys'))
    path = os.path.join(root, 'class', 'infiniband', 'mlx5_0', attribute[0])
    with open(path, 'wb') as handle:
        handle.write(content)
    try:
        ports, devices = SysfsReader(root).read()
    except RdmaParseError as exc:
        assert str(exc)
        return
    assert [p['device'] for p in ports] == ['mlx5_0', 'mlx5_1']
    json.dumps(ports), json.dumps(devices)  # facts must serialise (no surrogates, no bytes)
    for port in ports:
        assert port['state'] in (None, 'NOP', 'DOWN', 'INIT', 'ARMED', 'ACTIVE', 'ACTIVE_DEFER')
        assert port['link_layer'] in (None, 'InfiniBand', 'Ethernet')
        assert port['rate_gbps'] is None or isinstance(port['rate_gbps'], (int, float))


# ------------------------------------------------------------ ibdev2netdev

def test_ibdev2netdev_seed003_v100(recorded):
    ports, devices = parse_ibdev2netdev(recorded('seed003-v100-ibdev2netdev.txt'))
    assert [(p['device'], p['port'], p['netdev'], p['netdev_state']) for p in ports] == [
        ('mlx5_0', 1, 'ibxxxxxx0', 'Up'), ('mlx5_1', 1, 'ibxxxxxx1', 'Up')]
    # The plain form says nothing about port state, link layer, rate or PCI address, and says so.
    for port in ports:
        assert port['state'] is None and port['link_layer'] is None and port['rate_gbps'] is None
        assert port['pci_address'] is None
        assert port['source'] == 'ibdev2netdev'
        assert port['unknown'] == ['state', 'physical_state', 'link_layer', 'rate_gbps']
    assert [d['device'] for d in devices] == ['mlx5_0', 'mlx5_1']
    assert devices[0]['fw_ver'] is None and devices[0]['virtual_function'] is None


def test_ibdev2netdev_seed003_a100(recorded):
    ports, _devices = parse_ibdev2netdev(recorded('seed003-a100-ibdev2netdev.txt'))
    assert [(p['device'], p['netdev'], p['netdev_state']) for p in ports] == [
        ('mlx5_0', 'ibxxxx0', 'Down'), ('mlx5_1', 'ibxxxxx0', 'Up'), ('mlx5_bond_0', 'bond0', 'Up')]


def test_ibdev2netdev_verbose(recorded):
    ports, devices = parse_ibdev2netdev(recorded('ibdev2netdev-verbose.txt'))
    by = _by_device(ports)
    assert by[('mlx5_0', 1)]['state'] == 'ACTIVE'
    assert by[('mlx5_1', 1)]['state'] == 'DOWN'  # padded "(DOWN  )"
    assert by[('mlx5_1', 1)]['netdev_state'] == 'Down'
    assert by[('mlx5_bond_0', 1)]['pci_address'] == '0000:3b:00.0'
    assert by[('mlx5_0', 1)]['unknown'] == ['physical_state', 'link_layer', 'rate_gbps']
    assert devices[0] == {'device': 'mlx5_0', 'pci_address': '0000:5e:00.0', 'node_guid': None, 'node_desc': None,
                          'fw_ver': '16.35.2000', 'hca_type': 'MT4119', 'board_id': None,
                          'virtual_function': False, 'physical_function': None, 'physical_function_device': None,
                          'sriov_numvfs': None, 'sriov_totalvfs': None, 'ports': [1]}


def test_ibdev2netdev_verbose_without_pci_address():
    """The script prints an empty PCI field when it cannot tell the function (several RDMA devices on one)."""
    ports, devices = parse_ibdev2netdev(
        ' mlx5_0 (MT4129 - MCX75310AAS-NEAT) ConnectX-7 fw 28.39.1002 port 1 (ACTIVE) ==> ibs192 (Up)\n')
    assert (ports[0]['device'], ports[0]['pci_address'], ports[0]['state']) == ('mlx5_0', None, 'ACTIVE')
    assert devices[0]['hca_type'] == 'MT4129' and devices[0]['virtual_function'] is False


def test_ibdev2netdev_old_style_without_state():
    ports, _devices = parse_ibdev2netdev('mlx4_0 port 1 <===> ib0\nmlx4_0 port 2 <===> ib1\n')
    assert [(p['port'], p['netdev'], p['netdev_state']) for p in ports] == [(1, 'ib0', None), (2, 'ib1', None)]


def test_ibdev2netdev_tolerates_spacing():
    ports, _devices = parse_ibdev2netdev('  mlx5_0   port  1  ==>   ib0   (Up)  \n\n')
    assert (ports[0]['device'], ports[0]['port'], ports[0]['netdev'], ports[0]['netdev_state']) == \
        ('mlx5_0', 1, 'ib0', 'Up')


@pytest.mark.parametrize('state', ['NA', '', 'NA/NA'])
def test_ibdev2netdev_unknown_netdev_state_is_null(state):
    ports, _devices = parse_ibdev2netdev('mlx5_0 port 1 ==> ib0 (%s)\n' % state)
    assert ports[0]['netdev_state'] is None


def test_ibdev2netdev_empty_output():
    assert parse_ibdev2netdev('') == ([], [])


@pytest.mark.parametrize('text, line', [
    ('mlx5_0 port 1 ==> ib0 (Up)\nmlx5_1 port one ==> ib1 (Up)\n', 'mlx5_1 port one ==> ib1 (Up)'),
    ('mlx5_0 port 1 ==> ib0 (Up) # CX-7\n', 'mlx5_0 port 1 ==> ib0 (Up) # CX-7'),
    ('mlx5_0 port 1 ==> ib0 (Sideways)\n', 'mlx5_0 port 1 ==> ib0 (Sideways)'),
    ('mlx5_0 port 1 ==> ib/0 (Up)\n', 'ib/0'),
    ('mlx5_0 port 0 ==> ib0 (Up)\n', 'mlx5_0 port 0 ==> ib0 (Up)\n'.rstrip('\n')),
    ('0000:5e:00.0 mlx5_0 (MT4119 - X) fw 1.2 port 1 (FINE) ==> ib0 (Up)\n',
     '0000:5e:00.0 mlx5_0 (MT4119 - X) fw 1.2 port 1 (FINE) ==> ib0 (Up)'),
])
def test_ibdev2netdev_malformed_line_is_quoted(text, line):
    with pytest.raises(RdmaParseError) as error:
        parse_ibdev2netdev(text)
    assert error.value.line == line


def test_ibdev2netdev_same_port_twice():
    ports, _devices = parse_ibdev2netdev('mlx5_0 port 1 ==> ib0 (Up)\nmlx5_0 port 1 ==> ib0 (Up)\n')
    assert len(ports) == 1  # an identical repeat says nothing new
    with pytest.raises(RdmaParseError, match='mlx4_0 port 1 is listed twice, differently'):
        parse_ibdev2netdev('mlx4_0 port 1 <===> ib0\nmlx4_0 port 1 <===> ib0.8001\n')


@PROPERTY
@given(st.text(max_size=300))
def test_property_ibdev2netdev_any_text(text):
    try:
        ports, devices = parse_ibdev2netdev(text)
    except RdmaParseError as exc:
        assert exc.line is not None
        return
    assert all(tuple(sorted(p)) == tuple(sorted(PORT_KEYS)) for p in ports)
    assert sorted(d['device'] for d in devices) == sorted(set(p['device'] for p in ports))


RECORDED = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'recorded')


def _recorded_lines(*names):
    lines = []
    for name in names:
        with open(os.path.join(RECORDED, name), 'rb') as handle:
            lines += handle.read().splitlines()
    return lines


# Lines as the tools print them (recorded, and the older forms), among which any bytes or text fall.
IBDEV2NETDEV_LINES = _recorded_lines('seed003-a100-ibdev2netdev.txt', 'seed003-v100-ibdev2netdev.txt',
                                     'ibdev2netdev-verbose.txt') + [
    b'mlx4_0 port 1 <===> ib0', b'mlx4_0 port 2 <===> ib1', b'mlx5_2 port 1 ==> ib2 (NA)', b'',
    b'0000:5e:00.2 mlx5_2 (MT4120 - NA) fw 16.35.2000 port 1 (ACTIVE) ==> ibp94s0f0v0 (Up)']
RDMA_LINK_LINES = _recorded_lines('seed001-host-rdma-link.txt', 'seed001-pod-rdma-link.txt') + [
    b'1/1: mlx5_0/1: state ACTIVE physical_state LINK_UP netdev ens1f0',
    b'link mlx5_1/1 subnet_prefix fe80:0000:0000:0000 lid 3 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP',
    b'link mlx5_2/1 state DOWN physical_state POLLING', b'link mlx5_3/2 state UNKNOWN physical_state NOP',
    b'link mlx5_4/1 state ACTIVE physical_state ARMED netdev ens8 \\    caps: <CM>', b'    caps: <CM, IP_BASED_GIDS>', b'']
RDMA_LINK_JSON = [b'[]'] + [b'\n'.join(_recorded_lines(name)) for name in (
    'seed001-8nic-rdma-link.json', 'rdma-link-old-ifname.json')] + [
    b'[{"ifname": "mlx5_0", "port": 1, "subnet_prefix": "fe80:0000:0000:0000", "state": "ACTIVE"}]',
    b'[{"ifname": "mlx5_0", "port": 1, "lid": 7, "sm_lid": 1, "state": "UNKNOWN", "netdev": ""}]']


def _lines_among_bytes(lines):
    return st.lists(st.sampled_from(lines) | st.binary(max_size=30), max_size=8).map(b'\n'.join)


def check_records(ports, devices, source):
    """The shape of what a parser returns: every key of a port and a device record, each of its type."""
    for port in ports:
        assert sorted(port) == sorted(PORT_KEYS)
        assert isinstance(port['device'], str) and port['device']
        assert isinstance(port['port'], int) and not isinstance(port['port'], bool) and port['port'] >= 1
        assert port['source'] == source
        assert port['state'] is None or port['state'] in ('NOP', 'DOWN', 'INIT', 'ARMED', 'ACTIVE', 'ACTIVE_DEFER')
        assert port['physical_state'] is None or port['physical_state'] in (
            'Sleep', 'Polling', 'Disabled', 'PortConfigurationTraining', 'LinkUp', 'LinkErrorRecovery', 'Phy Test')
        assert port['link_layer'] in (None, 'InfiniBand', 'Ethernet')
        assert port['netdev'] is None or (isinstance(port['netdev'], str) and port['netdev'])
        assert port['netdev_state'] in (None, 'Up', 'Down')
        assert port['virtual_function'] in (None, True, False)
        assert isinstance(port['vfs'], list) and all(isinstance(vf, str) for vf in port['vfs'])
        assert port['unknown'] == [key for key in ('state', 'physical_state', 'link_layer', 'rate_gbps')
                                   if port[key] is None]
        for key in ('lid', 'sm_lid'):
            assert port[key] is None or (isinstance(port[key], int) and not isinstance(port[key], bool))
    keys = [(p['device'], p['port']) for p in ports]
    assert len(set(keys)) == len(keys)  # a port once
    assert _in_order([(_natural(device), number) for device, number in keys])  # in natural order of the names
    names = [d['device'] for d in devices]
    assert len(set(names)) == len(names) and set(names) == set(p['device'] for p in ports)
    assert _in_order([_natural(name) for name in names])
    for device in devices:
        assert sorted(device) == sorted(DEVICE_KEYS)
        assert device['ports'] == sorted(p['port'] for p in ports if p['device'] == device['device'])
    json.dumps([ports, devices])  # facts must serialise (no surrogates, no bytes)


def _in_order(keys):
    return all(before <= after for before, after in zip(keys, keys[1:]))


def _natural(name):
    return [(0, int(part), '') if part.isdigit() and part.isascii() else (1, 0, part)
            for part in re.split(r'([0-9]+)', name)]


def render_ibdev2netdev(ports, devices):
    """``ibdev2netdev -v`` lines of parsed records (NA for what a record does not know)."""
    by_device = dict((d['device'], d) for d in devices)
    lines = []
    for port in ports:
        device = by_device[port['device']]
        lines.append('%s%s (%s) fw %s port %d (%s) ==> %s (%s)' % (
            device['pci_address'] + ' ' if device['pci_address'] else '', port['device'], device['hca_type'] or 'NA',
            device['fw_ver'] or 'NA', port['port'], port['state'] or 'NA', port['netdev'], port['netdev_state'] or 'NA'))
    return '\n'.join(lines) + '\n'


@PROPERTY
@given(_lines_among_bytes(IBDEV2NETDEV_LINES))
def test_property_ibdev2netdev_any_bytes_as_the_module_decodes_them(data):
    """Records of the documented shape, and a round trip: the records printed back as ``ibdev2netdev -v`` lines
    parse to the same records."""
    try:
        ports, devices = parse_ibdev2netdev(data.decode('utf-8', 'replace'))
    except RdmaParseError as exc:
        assert str(exc) and exc.line is not None
        return
    check_records(ports, devices, 'ibdev2netdev')
    assert parse_ibdev2netdev(render_ibdev2netdev(ports, devices)) == (ports, devices)


@PROPERTY
@given(device=st.from_regex(r'\A[a-z]{1,6}[0-9]{0,2}_[0-9]{1,2}\Z'), port=st.integers(1, 4),
       netdev=st.from_regex(r'\A[a-z][a-z0-9]{0,14}\Z'), state=st.sampled_from(['Up', 'Down', 'NA', '']),
       spaces=st.integers(1, 4))
def test_property_ibdev2netdev_plain_grammar(device, port, netdev, state, spaces):
    """Every line of the plain grammar parses, whatever the names and the column spacing."""
    gap = ' ' * spaces
    line = '%s%sport%s%d%s==>%s%s%s(%s)\n' % (device, gap, gap, port, gap, gap, netdev, gap, state)
    ports, _devices = parse_ibdev2netdev(line)
    assert (ports[0]['device'], ports[0]['port'], ports[0]['netdev']) == (device, port, netdev)
    assert ports[0]['netdev_state'] == (state if state in ('Up', 'Down') else None)


# --------------------------------------------------------------- rdma link

def test_rdma_link_text_seed001_host(recorded):
    ports, _devices = parse_rdma_link(recorded('seed001-host-rdma-link.txt'))
    assert [(p['device'], p['port'], p['state'], p['physical_state'], p['netdev']) for p in ports] == [
        ('mlx5_0', 1, 'ACTIVE', 'LinkUp', 'ens6f0np0'), ('mlx5_1', 1, 'ACTIVE', 'LinkUp', 'ens6f1np1')]
    assert ports[0]['link_layer'] is None and ports[0]['rate_gbps'] is None
    assert ports[0]['unknown'] == ['link_layer', 'rate_gbps'] and ports[0]['source'] == 'rdma'


def test_rdma_link_text_seed001_pod(recorded):
    ports, _devices = parse_rdma_link(recorded('seed001-pod-rdma-link.txt'))
    assert [p['device'] for p in ports] == ['mlx5_27', 'mlx5_54', 'mlx5_67', 'mlx5_98']
    assert [p['netdev'] for p in ports] == ['net2', 'net1', 'net4', 'net3']


def test_rdma_link_8_nic_text_and_json_agree(recorded):
    text_ports, text_devices = parse_rdma_link(recorded('seed001-8nic-rdma-link.txt'))
    json_ports, json_devices = parse_rdma_link(recorded('seed001-8nic-rdma-link.json'))
    assert [p['netdev'] for p in text_ports] == ['enp%ds0f0np0' % n for n in range(11, 19)]
    assert [p['netdev'] for p in json_ports] == [p['netdev'] for p in text_ports]
    assert len(text_devices) == len(json_devices) == 8
    assert [(p['device'], p['state'], p['physical_state']) for p in json_ports if p['state'] != 'ACTIVE'] == [
        ('mlx5_6', 'DOWN', 'Disabled')]


def test_rdma_link_json_old_ifname_form(recorded):
    ports, _devices = parse_rdma_link(recorded('rdma-link-old-ifname.json'))
    assert [(p['device'], p['port'], p['state'], p['physical_state'], p['netdev']) for p in ports] == [
        ('mlx5_0', 1, 'ACTIVE', 'LinkUp', 'ens1f0'), ('mlx5_1', 1, 'DOWN', 'Polling', None)]


def test_rdma_link_infiniband_port_tells_its_link_layer():
    """The kernel sends LIDs for InfiniBand ports only: they name the link layer; their absence does not."""
    ports, _devices = parse_rdma_link(
        'link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 12 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP\n'
        'link mlx5_1/1 state ACTIVE physical_state LINK_UP netdev ens1f1\n')
    assert [(p['link_layer'], p['lid'], p['sm_lid']) for p in ports] == [('InfiniBand', 12, 1), (None, None, None)]


def test_rdma_link_iproute2_phys_state_names_map_to_the_kernels():
    text = ''.join('link mlx5_%d/1 state DOWN physical_state %s\n' % (n, name) for n, name in enumerate(
        ['SLEEP', 'POLLING', 'DISABLED', 'ARMED', 'LINK_UP', 'LINK_ERROR_RECOVER', 'PHY_TEST', 'NOP']))
    ports, _devices = parse_rdma_link(text)
    assert [p['physical_state'] for p in ports] == [
        'Sleep', 'Polling', 'Disabled', 'PortConfigurationTraining', 'LinkUp', 'LinkErrorRecovery', 'Phy Test', None]


def test_rdma_link_details_caps_line_and_oneline():
    ports, _devices = parse_rdma_link('link mlx5_3/1 state ACTIVE physical_state LINK_UP netdev ens7 netdev_index 7 \n'
                                      '    caps: <CM, IP_BASED_GIDS>\n'
                                      'link mlx5_4/1 state DOWN physical_state POLLING netdev ens8 \\    caps: <CM>\n')
    assert [(p['device'], p['netdev'], p['state']) for p in ports] == [('mlx5_3', 'ens7', 'ACTIVE'),
                                                                       ('mlx5_4', 'ens8', 'DOWN')]


def test_rdma_link_older_text_form():
    ports, _devices = parse_rdma_link('1/1: mlx5_0/1: state ACTIVE physical_state LINK_UP netdev ens1f0\n')
    assert (ports[0]['device'], ports[0]['port'], ports[0]['netdev']) == ('mlx5_0', 1, 'ens1f0')


def test_rdma_link_empty_json_array():
    assert parse_rdma_link('[]\n') == ([], [])


@pytest.mark.parametrize('text, message', [
    ('[{"ifname": "mlx5_0", "port": 1}', 'invalid JSON'),
    ('{"link": [{"ifname": "mlx5_0", "port": 1}]}', 'printed a JSON dict where a list of links belongs'),
    ('"mlx5_0"', 'unrecognised rdma link line'),
    ('[["mlx5_0", 1]]', 'printed a list where a link object belongs'),
    ('[{"ifname": "mlx5_0"}]', 'without a port number'),
    ('[{"ifname": "mlx5_0", "port": "1"}]', 'without a port number'),
    ('[{"ifname": "mlx5_0", "port": true}]', 'without a port number'),
    ('[{"ifname": 5, "port": 1}]', 'without an "ifname" string'),
    ('[{"ifname": "mlx5_0", "port": 1, "state": 4}]', 'with a int where the "state" string belongs'),
    ('[{"ifname": "mlx5_0", "port": 1, "lid": "0x3"}]', 'with a str where the "lid" number belongs'),
    ('[{"ifname": "mlx5_0", "port": 1, "state": "RUNNING"}]', "unexpected link state 'RUNNING'"),
    ('[{"ifname": "mlx5_0", "port": 1, "caps": "CM"}]', '"caps" that are not a list of names'),
    ('[{"ifname": "mlx5_0/2", "port": 1}]', 'odd "ifname" port'),
    ('link mlx5_0 state ACTIVE\n', 'unrecognised rdma link line'),
    ('link mlx5_0/1 state\n', 'a name but no value'),
    ('link mlx5_0/1 state ACTIVE lid x12\n', 'lid'),
    ('error: Function not implemented\n', 'unrecognised rdma link line'),
])
def test_rdma_link_of_another_shape_is_a_parse_error(text, message):
    with pytest.raises(RdmaParseError) as error:
        parse_rdma_link(text)
    assert message in str(error.value)
    assert error.value.line


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 70000) | st.text(max_size=12) | st.sampled_from(
        ['mlx5_0', 'mlx5_0/1', 'ACTIVE', 'LINK_UP', 'ib0', 'fe80:0000:0000:0000']),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(['ifname', 'port', 'state', 'physical_state', 'netdev', 'lid', 'sm_lid', 'caps', 'x']),
        children, max_size=5),
    max_leaves=12)


@PROPERTY
@given(json_values)
def test_property_rdma_link_any_json(value):
    """JSON of any shape: links or the parser's own error, never AttributeError / TypeError."""
    try:
        ports, _devices = parse_rdma_link(json.dumps(value))
    except RdmaParseError:
        return
    assert all(isinstance(p['port'], int) and p['port'] >= 1 for p in ports)


# iproute2's spelling of the kernel's physical states (the facts keep the kernel's).
RDMA_TOOL_PHYS_STATES = {'Sleep': 'SLEEP', 'Polling': 'POLLING', 'Disabled': 'DISABLED',
                         'PortConfigurationTraining': 'PORT_CONFIGURATION_TRAINING', 'LinkUp': 'LINK_UP',
                         'LinkErrorRecovery': 'LINK_ERROR_RECOVERY', 'Phy Test': 'PHY_TEST'}


def render_rdma_link(ports, as_json):
    """Parsed records printed back as ``rdma -j link`` or ``rdma link`` prints them; an InfiniBand port without a
    LID keeps its link layer through the subnet prefix (the kernel sends both for IB ports only)."""
    entries = []
    for port in ports:
        fields = [('state', port['state']), ('physical_state', RDMA_TOOL_PHYS_STATES.get(port['physical_state'])),
                  ('netdev', port['netdev']), ('lid', port['lid']), ('sm_lid', port['sm_lid']),
                  ('subnet_prefix', 'fe80:0000:0000:0000' if port['link_layer'] == 'InfiniBand' and port['lid'] is None
                   else None)]
        entries.append((port['device'], port['port'], [(k, v) for k, v in fields if v is not None]))
    if as_json:
        return json.dumps([dict([('ifname', device), ('port', number)] + fields) for device, number, fields in entries])
    return ''.join('link %s/%d%s\n' % (device, number, ''.join(' %s %s' % field for field in fields))
                   for device, number, fields in entries)


def check_rdma_link(text):
    """Records of the documented shape or the parser's own error, and a round trip: the records printed back in
    the form they came in (JSON or text) parse to the same records."""
    try:
        ports, devices = parse_rdma_link(text)
    except RdmaParseError as exc:
        assert str(exc) and exc.line is not None
        return
    check_records(ports, devices, 'rdma')
    assert all(p['link_layer'] in (None, 'InfiniBand') and p['netdev_state'] is None for p in ports)
    as_json = text.strip().startswith(('[', '{'))
    assert parse_rdma_link(render_rdma_link(ports, as_json)) == (ports, devices)


@PROPERTY
@given(_lines_among_bytes(RDMA_LINK_LINES).map(lambda data: data.decode('utf-8', 'replace'))
       | st.sampled_from(RDMA_LINK_JSON).map(bytes.decode) | st.text(max_size=300))
def test_property_rdma_link_any_text(text):
    check_rdma_link(text)


@PROPERTY
@given(_lines_among_bytes(RDMA_LINK_LINES) | st.sampled_from(RDMA_LINK_JSON) | st.binary(max_size=300))
def test_property_rdma_link_any_bytes_as_the_module_decodes_them(data):
    check_rdma_link(data.decode('utf-8', 'replace'))


# ------------------------------------------------- sources completed by sysfs

def test_fill_from_sysfs_completes_a_command_source(tmp_path, hardware):
    """rdma link on the A100 node: link layer, rate, PCI address and the IB port's netdev come from sysfs."""
    reader = SysfsReader(hardware('a100', tmp_path / 'sys'))
    ports, devices = parse_rdma_link(
        'link mlx5_0/1 state DOWN physical_state DISABLED netdev enp12s0np0\n'
        'link mlx5_1/1 subnet_prefix fe80:0000:0000:0000 lid 3 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP\n'
        'link mlx5_bond_0/1 state ACTIVE physical_state LINK_UP netdev enp59s0f0np0\n'
        'link mlx5_9/1 state ACTIVE physical_state LINK_UP netdev ens9\n')
    assert fill_from_sysfs(ports, devices, reader) == 3
    by = _by_device(ports)
    assert by[('mlx5_1', 1)]['netdev'] == 'ibp141s0' and by[('mlx5_1', 1)]['netdev_state'] == 'Up'
    assert by[('mlx5_1', 1)]['rate_gbps'] == 200 and by[('mlx5_1', 1)]['pci_address'] == '0000:8d:00.0'
    # What the command printed stays: rdma names the LAG's first PF netdev, sysfs the bond.
    assert by[('mlx5_bond_0', 1)]['netdev'] == 'enp59s0f0np0'
    assert by[('mlx5_bond_0', 1)]['netdev_state'] == 'Up'
    assert by[('mlx5_bond_0', 1)]['link_layer'] == 'Ethernet' and by[('mlx5_bond_0', 1)]['unknown'] == []
    # A device sysfs does not know (another network namespace) keeps its gaps.
    assert by[('mlx5_9', 1)]['link_layer'] is None and by[('mlx5_9', 1)]['unknown'] == ['link_layer', 'rate_gbps']
    assert [d['fw_ver'] for d in devices] == ['20.31.1014', '20.31.1014', None, '14.32.1010']


def test_unknown_link_layer_gap_names_source_ports_and_fix():
    ports, _devices = parse_rdma_link('link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens1f0\n'
                                      'link mlx5_1/1 state DOWN physical_state DISABLED netdev ens1f1\n')
    message = unknown_link_layer_gap(ports)
    assert message.startswith('link layer unknown from source rdma for mlx5_0 port 1 (ens1f0): use source sysfs')
    assert 'rdma_discovery_sysfs_root' in message and 'mlx5_1' not in message  # a DOWN port is not a gap
    plain, _devices = parse_ibdev2netdev('mlx5_0 port 1 ==> ib0 (Up)\n')
    assert unknown_link_layer_gap(plain).startswith('link layer and port state unknown from source ibdev2netdev')
    assert unknown_link_layer_gap([]) is None


def test_network_operator_names_the_gap_instead_of_nothing_discovered():
    ports, _devices = parse_rdma_link('link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens1f0\n')
    with pytest.raises(NetworkOperatorError) as error:
        shared_device_plugin_config([{'resource_name': 'rdma_a100', 'ports': ports}])
    assert 'resource rdma_a100 selects no device: link layer unknown from source rdma' in str(error.value)
    assert 'no ACTIVE port with a netdev was discovered' not in str(error.value)
    with pytest.raises(NetworkOperatorError, match='no ACTIVE port with a netdev was discovered'):
        shared_device_plugin_config([{'resource_name': 'rdma_a100', 'ports': []}])


def test_spiderpool_names_the_gap_for_a_nic_without_link_layer():
    ports, _devices = parse_rdma_link('link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev enp11s0f0np0\n')
    with pytest.raises(SpiderpoolError, match=r'GPU 1: NIC enp11s0f0np0 \(mlx5_0\): link layer unknown from source '
                                              r'rdma'):
        resolve_nics([{'gpu': 1, 'nic': 'enp11s0f0np0'}], ports)


def test_roce_gid_index_follows_the_table_not_a_fixed_number(tmp_path, hardware):
    ports, _devices = SysfsReader(hardware('roce_a100', tmp_path / 'roce')).read()
    by = _by_device(ports)
    assert roce_gid_index(by[('mlx5_0', 1)]) == 7  # after the gap: not the 3 a fixed index assumes
    assert roce_gid_index(by[('mlx5_0', 1)], family='ipv6') == 5
    assert roce_gid_index(by[('mlx5_0', 1)], version='RoCE v1') == 6
    assert roce_gid_index(by[('mlx5_1', 1)]) == 3
    ports, _devices = SysfsReader(hardware('a100', tmp_path / 'a100')).read()
    by = _by_device(ports)
    assert roce_gid_index(by[('mlx5_bond_0', 1)]) == 3
    assert roce_gid_index(by[('mlx5_1', 1)]) is None  # InfiniBand
    assert roce_gid_index(by[('mlx5_0', 1)]) is None  # RoCE without an IPv4 address: nothing to pick
    assert roce_gid_index(dict(by[('mlx5_bond_0', 1)], gids=None)) is None  # a command source: table unknown
