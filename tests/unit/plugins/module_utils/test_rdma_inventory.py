# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import os

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils._rdma_inventory import (
    PORT_KEYS,
    RdmaParseError,
    SysfsReader,
    normalize_pci_address,
    parse_ibdev2netdev,
    parse_rate,
    parse_rdma_link,
    parse_state,
)


def _by_device(ports):
    return dict(((p['device'], p['port']), p) for p in ports)


# ------------------------------------------------------------------ helpers

@pytest.mark.parametrize('text, expected', [
    ('4: ACTIVE', 'ACTIVE'),
    ('1: DOWN\n', 'DOWN'),
    ('5: LinkUp', 'LinkUp'),
    ('7: Phy Test', 'Phy Test'),
])
def test_parse_state(text, expected):
    assert parse_state(text) == expected


def test_parse_state_rejects_garbage():
    with pytest.raises(RdmaParseError) as error:
        parse_state('ACTIVE')
    assert error.value.line == 'ACTIVE'


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


# ------------------------------------------------------------------ sysfs

def test_sysfs_a100_node(tmp_path, hardware):
    root = hardware('a100', tmp_path / 'sys')
    ports, devices = SysfsReader(root).read()
    assert [(p['device'], p['port']) for p in ports] == [('mlx5_0', 1), ('mlx5_1', 1), ('mlx5_bond_0', 1)]
    by = _by_device(ports)
    # mlx5_0's firmware has its port in Ethernet mode: RoCE netdev from the GID table.
    assert by[('mlx5_0', 1)] == {
        'device': 'mlx5_0', 'port': 1, 'netdev': 'enp12s0np0', 'netdev_state': 'Down', 'state': 'DOWN',
        'physical_state': 'Disabled', 'link_layer': 'Ethernet', 'rate_gbps': 10, 'rate': '10 Gb/sec (4X SDR)',
        'lid': 0, 'sm_lid': 0, 'pci_address': '0000:0c:00.0'}
    assert by[('mlx5_1', 1)]['state'] == 'ACTIVE'
    assert by[('mlx5_1', 1)]['rate_gbps'] == 200
    assert by[('mlx5_1', 1)]['netdev'] == 'ibp141s0'
    assert by[('mlx5_1', 1)]['lid'] == 3
    # RoCE LAG: the GIDs are bound to the bond, not to the PF's own netdev.
    assert by[('mlx5_bond_0', 1)]['netdev'] == 'bond0'
    assert by[('mlx5_bond_0', 1)]['link_layer'] == 'Ethernet'
    assert by[('mlx5_bond_0', 1)]['pci_address'] == '0000:3b:00.0'
    assert devices[2] == {'device': 'mlx5_bond_0', 'pci_address': '0000:3b:00.0', 'node_guid': '0c42:a103:005e:30d0',
                          'fw_ver': '14.32.1010', 'hca_type': 'MT4117', 'board_id': 'MT_2420110034', 'ports': [1]}


def test_sysfs_v100_node(tmp_path, hardware):
    ports, devices = SysfsReader(hardware('v100', tmp_path / 'sys')).read()
    assert [(p['netdev'], p['state'], p['rate_gbps'], p['link_layer']) for p in ports] == [
        ('ibp94s0f0', 'ACTIVE', 100, 'InfiniBand'), ('ibp94s0f1', 'ACTIVE', 100, 'InfiniBand')]
    assert [d['pci_address'] for d in devices] == ['0000:5e:00.0', '0000:5e:00.1']


def test_every_port_has_every_key(tmp_path, hardware):
    ports, _devices = SysfsReader(hardware('a100', tmp_path / 'sys')).read()
    for port in ports:
        assert tuple(sorted(port)) == tuple(sorted(PORT_KEYS))


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
    """A software device (no `device` link) has no PCI address: null, not invented."""
    root = hardware({'devices': [_device('mlx5_0', '0000:04:00.0', [_ib_port(1)], [])]}, tmp_path / 'sys')
    os.unlink(os.path.join(root, 'devices', 'pci0000:00', '0000:00:02.0', '0000:04:00.0', 'infiniband', 'mlx5_0',
                           'device'))
    ports, devices = SysfsReader(root).read()
    assert ports[0]['pci_address'] is None
    assert devices[0]['pci_address'] is None


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


# ------------------------------------------------------------ ibdev2netdev

def test_ibdev2netdev_seed003_v100(recorded):
    ports, devices = parse_ibdev2netdev(recorded('seed003-v100-ibdev2netdev.txt'))
    assert [(p['device'], p['port'], p['netdev'], p['netdev_state']) for p in ports] == [
        ('mlx5_0', 1, 'ibxxxxxx0', 'Up'), ('mlx5_1', 1, 'ibxxxxxx1', 'Up')]
    # The plain form says nothing about port state, link layer, rate or PCI address.
    for port in ports:
        assert port['state'] is None and port['link_layer'] is None and port['rate_gbps'] is None
        assert port['pci_address'] is None
    assert [d['device'] for d in devices] == ['mlx5_0', 'mlx5_1']
    assert devices[0]['fw_ver'] is None


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
    assert devices[0] == {'device': 'mlx5_0', 'pci_address': '0000:5e:00.0', 'node_guid': None,
                          'fw_ver': '16.35.2000', 'hca_type': 'MT4119', 'board_id': None, 'ports': [1]}


def test_ibdev2netdev_tolerates_spacing():
    ports, _devices = parse_ibdev2netdev('  mlx5_0   port  1  ==>   ib0   (Up)  \n\n')
    assert (ports[0]['device'], ports[0]['port'], ports[0]['netdev'], ports[0]['netdev_state']) == \
        ('mlx5_0', 1, 'ib0', 'Up')


def test_ibdev2netdev_na_state_is_null():
    ports, _devices = parse_ibdev2netdev('mlx5_0 port 1 ==> ib0 (NA)\n')
    assert ports[0]['netdev_state'] is None


def test_ibdev2netdev_empty_output():
    assert parse_ibdev2netdev('') == ([], [])


def test_ibdev2netdev_malformed_line_is_quoted():
    with pytest.raises(RdmaParseError) as error:
        parse_ibdev2netdev('mlx5_0 port 1 ==> ib0 (Up)\nmlx5_1 port one ==> ib1 (Up)\n')
    assert error.value.line == 'mlx5_1 port one ==> ib1 (Up)'


# --------------------------------------------------------------- rdma link

def test_rdma_link_text_seed001_host(recorded):
    ports, _devices = parse_rdma_link(recorded('seed001-host-rdma-link.txt'))
    assert [(p['device'], p['port'], p['state'], p['physical_state'], p['netdev']) for p in ports] == [
        ('mlx5_0', 1, 'ACTIVE', 'LinkUp', 'ens6f0np0'), ('mlx5_1', 1, 'ACTIVE', 'LinkUp', 'ens6f1np1')]
    assert ports[0]['link_layer'] is None and ports[0]['rate_gbps'] is None


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


def test_rdma_link_json_wrapped_in_object():
    ports, _devices = parse_rdma_link('{"link": [{"ifname": "mlx5_0", "port": 1, "state": "ACTIVE"}]}')
    assert ports[0]['device'] == 'mlx5_0'


def test_rdma_link_older_text_form():
    ports, _devices = parse_rdma_link('1/1: mlx5_0/1: state ACTIVE physical_state LINK_UP netdev ens1f0\n')
    assert (ports[0]['device'], ports[0]['port'], ports[0]['netdev']) == ('mlx5_0', 1, 'ens1f0')


def test_rdma_link_empty_json_array():
    assert parse_rdma_link('[]\n') == ([], [])


@pytest.mark.parametrize('text, line', [
    ('[{"ifname": "mlx5_0", "port": 1}', '[{"ifname": "mlx5_0", "port": 1}'),
    ('link mlx5_0 state ACTIVE\n', 'link mlx5_0 state ACTIVE'),
])
def test_rdma_link_malformed_is_quoted(text, line):
    with pytest.raises(RdmaParseError) as error:
        parse_rdma_link(text)
    assert error.value.line == line


def test_rdma_link_json_entry_without_port():
    with pytest.raises(RdmaParseError, match='without a port number'):
        parse_rdma_link('[{"ifname": "mlx5_0"}]')
