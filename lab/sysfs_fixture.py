# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test double for RDMA hardware: a sysfs tree laid out like the kernel's, plus firmware state.

The machines here have no RDMA hardware (the kernel is built without
CONFIG_INFINIBAND), so the lab and the tests describe each node's cards in a
hardware profile (``lab/hardware/*.yml``) and this module writes what the
kernel would show for them:

    class/infiniband/<dev>      -> ../../devices/<pci path>/infiniband/<dev>
    devices/<pci path>/infiniband/<dev>/{node_guid,fw_ver,hca_type,board_id,...}
    devices/<pci path>/infiniband/<dev>/device -> ../../../<pci function>
    devices/<pci path>/infiniband/<dev>/ports/<n>/{state,phys_state,rate,link_layer,lid,sm_lid,gid_attrs/...}
    devices/<pci path>/net/<netdev>/{operstate,carrier,dev_port,dev_id,...}
    class/net/<netdev>          -> ../../devices/<pci path>/net/<netdev>
    bus/pci/devices/<function>  -> ../../../devices/<pci path>
    devices/<pci path>/{sriov_totalvfs,sriov_numvfs,virtfn<N> -> ../<vf function>}   (SR-IOV PF)
    devices/<pci path>/physfn   -> ../<pf function>                                      (SR-IOV VF)
    devices/<pci path>/{current,max}_link_{speed,width}                                 (PCIe link)

A device's ``firmware`` section becomes ``firmware/<pci>.json``, the state of
the firmware test doubles in ``lab/doubles`` (mlxconfig, mlxfwreset, mst and a
reboot), which the archive carries in ``bin/``. What a port reports through verbs
(``ibv_query_port``) but not in sysfs - an InfiniBand port's ``active_mtu`` -
goes to ``verbs/ports.json`` for the perftest double, and only when a profile
sets it.

Usage: python lab/sysfs_fixture.py PROFILE.yml OUT.tar.gz
(the archive holds ``sys/``, ``firmware/``, ``bin/`` and ``boot_id``; the lab
unpacks it into /opt/gpunet-lab).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile

import yaml

# Numbers the kernel prints in front of the names (include/rdma/ib_verbs.h).
PORT_STATES = {'NOP': 0, 'DOWN': 1, 'INIT': 2, 'ARMED': 3, 'ACTIVE': 4, 'ACTIVE_DEFER': 5}
PHYS_STATES = {'Sleep': 1, 'Polling': 2, 'Disabled': 3, 'PortConfigurationTraining': 4, 'LinkUp': 5,
               'LinkErrorRecovery': 6, 'Phy Test': 7}
DOUBLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'doubles')
# Named values of enum firmware parameters a hardware profile may give by name (ConnectX-3 had VPI(3); the
# doubles print the names current tools know, from their parameter table).
FIRMWARE_ENUMS = {'LINK_TYPE': {'IB': 1, 'ETH': 2, 'VPI': 3}}
# The PCIe link attributes of a PCI Express function (drivers/pci/pci-sysfs.c, pcie_dev_attrs): the speeds as
# pci_speed_string() names them (the kernel's pci_bus_speed_strings; kernels before 5.7 printed "8 GT/s" and
# "Unknown speed"), the widths as a number of lanes ("%u"). A profile gives them per node (``pcie_link_speed`` and
# ``pcie_link_width`` at the top: what the node's slots train at) and per device (``pcie_link_speed``,
# ``pcie_link_width``, ``pcie_max_link_speed``, ``pcie_max_link_width``); without either, a function is x16 at
# PCIE_DEFAULT_SPEED.
PCIE_SPEEDS = ('2.5 GT/s PCIe', '5.0 GT/s PCIe', '8.0 GT/s PCIe', '16.0 GT/s PCIe', '32.0 GT/s PCIe', '64.0 GT/s PCIe',
               '2.5 GT/s', '5 GT/s', '8 GT/s', '16 GT/s', '32 GT/s', 'Unknown', 'Unknown speed')
PCIE_WIDTHS = (0, 1, 2, 4, 8, 12, 16, 32)
PCIE_DEFAULT_SPEED = '16.0 GT/s PCIe'
PCIE_DEFAULT_WIDTH = 16
# The MTUs a port can be active at (enum ibv_mtu).
IB_MTUS = (256, 512, 1024, 2048, 4096)
# A fixed timestamp keeps archives byte-identical between builds, so unpacking
# them again on a lab node changes nothing.
FIXED_MTIME = 1700000000


def _write(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        handle.write('%s\n' % value)


def _symlink(target, link):
    os.makedirs(os.path.dirname(link), exist_ok=True)
    os.symlink(target, link)


def _netdev(root, parent_rel, netdev, function_name=None):
    """Create a netdev below ``devices/<parent_rel>/net`` and its class/net link."""
    rel = os.path.join(parent_rel, 'net', netdev['name'])
    directory = os.path.join(root, 'devices', rel)
    os.makedirs(directory, exist_ok=True)
    _write(os.path.join(directory, 'operstate'), netdev.get('operstate', 'up'))
    # The kernel refuses to read carrier of an administratively down interface;
    # a profile says so with carrier: null.
    if netdev.get('carrier', 1) is not None:
        _write(os.path.join(directory, 'carrier'), netdev.get('carrier', 1))
    _write(os.path.join(directory, 'dev_port'), netdev.get('dev_port', 0))
    _write(os.path.join(directory, 'dev_id'), '0x%x' % netdev.get('dev_id', 0))
    _write(os.path.join(directory, 'mtu'), netdev.get('mtu', 1500))
    _write(os.path.join(directory, 'address'), netdev.get('address', '00:00:00:00:00:00'))
    _write(os.path.join(directory, 'type'), netdev.get('type', 1))
    if function_name:
        _symlink(os.path.join('..', '..', '..', function_name), os.path.join(directory, 'device'))
    _symlink(os.path.join('..', '..', 'devices', rel), os.path.join(root, 'class', 'net', netdev['name']))


def _port(port_dir, port, device, netdevs):
    _write(os.path.join(port_dir, 'state'), '%d: %s' % (PORT_STATES[port['state']], port['state']))
    _write(os.path.join(port_dir, 'phys_state'),
           '%d: %s' % (PHYS_STATES[port['phys_state']], port['phys_state']))
    _write(os.path.join(port_dir, 'rate'), port['rate'])
    _write(os.path.join(port_dir, 'link_layer'), port['link_layer'])
    _write(os.path.join(port_dir, 'lid'), port.get('lid', '0x0'))
    _write(os.path.join(port_dir, 'sm_lid'), port.get('sm_lid', '0x0'))
    _write(os.path.join(port_dir, 'lid_mask_count'), 0)
    _write(os.path.join(port_dir, 'cap_mask'), port.get('cap_mask', '0x2651e848'))
    _gid_table(port_dir, port, device, netdevs)


ZERO_GID = '0000:0000:0000:0000:0000:0000:0000:0000'


def _link_local_gid(mac):
    """fe80::/64 with the modified EUI-64 of a MAC, as the kernel derives a RoCE port's default GID."""
    octets = [int(part, 16) for part in mac.split(':')]
    octets[0] ^= 0x02
    eui = octets[:3] + [0xff, 0xfe] + octets[3:]
    return 'fe80:0000:0000:0000:' + ':'.join('%02x%02x' % (eui[i], eui[i + 1]) for i in range(0, 8, 2))


def _ipv4_gid(address):
    return _IPV4_MAPPED + '%02x%02x:%02x%02x' % tuple(int(part) for part in address.split('.'))


_IPV4_MAPPED = '0000:0000:0000:0000:0000:ffff:'


def gid_entries(port, device, netdevs):
    """The port's non-empty GID entries as the kernel fills them: [(index, gid, type, ndev)].

    ``port['gids']`` lists them explicitly ({index, gid, type: IB/RoCE v1 | RoCE v2, ndev}); otherwise an
    InfiniBand port has its port GID at 0 (subnet prefix fe80::/64 and the port GUID), and a RoCE port, for each
    netdev of ``gid_ndevs``, its link-local GID (from the MAC) then one GID per IPv4 address of the netdev
    (``ipv4``), each as a RoCE v1 entry followed by a RoCE v2 entry.
    """
    if port.get('gids') is not None:
        return [(entry['index'], entry['gid'], entry.get('type', 'IB/RoCE v1'), entry.get('ndev'))
                for entry in port['gids']]
    if port['link_layer'] == 'InfiniBand':
        return [(0, port.get('gid', 'fe80:0000:0000:0000:' + device['node_guid']), 'IB/RoCE v1', None)]
    entries = []
    for ndev in dict.fromkeys(port.get('gid_ndevs', [])):
        netdev = netdevs.get(ndev, {})
        gids = [port['gid'] if port.get('gid') else _link_local_gid(netdev.get('address', '00:00:00:00:00:00'))]
        gids += [_ipv4_gid(address) for address in netdev.get('ipv4', [])]
        for gid in gids:
            for kind in ('IB/RoCE v1', 'RoCE v2'):
                entries.append((len(entries), gid, kind, ndev))
    return entries


def _gid_table(port_dir, port, device, netdevs):
    """ports/N/gids/0..len-1 (zeros where empty) and gid_attrs/{types,ndevs}/I of the non-empty entries.

    The kernel answers EINVAL to reads of gid_attrs/*/I of empty entries and of ndevs on an InfiniBand port; a
    regular file cannot, so those files are left out.
    """
    entries = dict((index, (gid, kind, ndev)) for index, gid, kind, ndev in gid_entries(port, device, netdevs))
    length = port.get('gid_table_len', 128 if port['link_layer'] == 'InfiniBand' else 255)
    if entries and max(entries) >= length:
        raise ValueError('%s port %s: GID index %d beyond the table length %d'
                         % (device['name'], port['number'], max(entries), length))
    for index in range(length):
        gid, kind, ndev = entries.get(index, (ZERO_GID, None, None))
        _write(os.path.join(port_dir, 'gids', str(index)), gid)
        if kind:
            _write(os.path.join(port_dir, 'gid_attrs', 'types', str(index)), kind)
        if ndev and port['link_layer'] != 'InfiniBand':
            _write(os.path.join(port_dir, 'gid_attrs', 'ndevs', str(index)), ndev)


def _device(root, device, netdevs, link_attributes=None):
    function_name = device['pci_address']
    function_rel = os.path.join(device['pci_parent'], function_name)
    function_dir = os.path.join(root, 'devices', function_rel)
    _write(os.path.join(function_dir, 'vendor'), '0x15b3')
    _write(os.path.join(function_dir, 'device'), device.get('pci_device_id', '0x1017'))
    _write(os.path.join(function_dir, 'class'), device.get('pci_class', '0x020700'))
    for name, value in zip(('current_link_speed', 'current_link_width', 'max_link_speed', 'max_link_width'),
                           link_attributes or ()):
        _write(os.path.join(function_dir, name), value)
    if device.get('physfn'):
        # An SR-IOV virtual function: the kernel links its PCI function to its PF's ("physfn", a sibling on the
        # same bus) and the PF's to it ("virtfnN", written by _link_virtual_functions).
        _symlink(os.path.join('..', device['physfn']), os.path.join(function_dir, 'physfn'))
    # The kernel driver bound to the function (its bus/pci/drivers entry), as /sys/bus/pci/devices/<bdf>/driver.
    driver = device.get('pci_driver', 'vmw_pvrdma' if device['name'].startswith('vmw_pvrdma') else 'mlx5_core')
    os.makedirs(os.path.join(root, 'bus', 'pci', 'drivers', driver), exist_ok=True)
    if not os.path.lexists(os.path.join(function_dir, 'driver')):
        _symlink(os.path.relpath(os.path.join(root, 'bus', 'pci', 'drivers', driver), function_dir),
                 os.path.join(function_dir, 'driver'))
    link = os.path.join(root, 'bus', 'pci', 'devices', function_name)
    if not os.path.lexists(link):
        _symlink(os.path.join('..', '..', '..', 'devices', function_rel), link)

    ib_rel = os.path.join(function_rel, 'infiniband', device['name'])
    ib_dir = os.path.join(root, 'devices', ib_rel)
    for attribute in ('node_guid', 'sys_image_guid', 'fw_ver', 'hca_type', 'board_id'):
        value = device.get(attribute, device['node_guid'] if attribute == 'sys_image_guid' else None)
        _write(os.path.join(ib_dir, attribute), value)
    _write(os.path.join(ib_dir, 'node_type'), '1: CA')
    _write(os.path.join(ib_dir, 'node_desc'), '%s %s' % (device.get('host', 'lab'), device['name']))
    _symlink(os.path.join('..', '..', '..', function_name), os.path.join(ib_dir, 'device'))
    _symlink(os.path.join('..', '..', 'devices', ib_rel), os.path.join(root, 'class', 'infiniband', device['name']))
    for port in device['ports']:
        _port(os.path.join(ib_dir, 'ports', str(port['number'])), port, device, netdevs)
    for netdev in device.get('netdevs', []):
        _netdev(root, function_rel, netdev, function_name)


def build(profile, root):
    """Write the sysfs tree described by ``profile`` (a dict) below ``root``."""
    os.makedirs(os.path.join(root, 'class', 'infiniband'), exist_ok=True)
    os.makedirs(os.path.join(root, 'class', 'net'), exist_ok=True)
    _netdev(root, 'virtual', {'name': 'lo', 'operstate': 'unknown', 'type': 772, 'mtu': 65536})
    for netdev in profile.get('virtual_netdevs', []):
        _netdev(root, 'virtual', netdev)
    netdevs = dict((netdev['name'], netdev) for netdev in profile.get('virtual_netdevs', []))
    for device in profile.get('devices', []):
        netdevs.update((netdev['name'], netdev) for netdev in device.get('netdevs', []))
    by_pci = dict((device['pci_address'], device) for device in profile.get('devices', []))
    for device in profile.get('devices', []):
        _device(root, device, netdevs, pcie_link(profile, device, by_pci))
    _link_virtual_functions(root, profile.get('devices', []))
    _link_stacked_netdevs(root, profile.get('virtual_netdevs', []))
    _loaded_modules(root, profile.get('loaded_modules') or {})
    return root


def pcie_link(profile, device, by_pci=None):
    """``(current_link_speed, current_link_width, max_link_speed, max_link_width)`` of a device's PCI function.

    The current link is the device's ``pcie_link_speed`` / ``pcie_link_width``, else the node's ``pcie_link_speed``
    (the generation its slots train at) and x16; the maximum (the function's Link Capabilities) defaults to the
    current link. An SR-IOV VF has no link of its own: its Link Status register is reserved and reads 0, so the
    kernel shows "Unknown" and 0 (lspci: "LnkSta: Speed unknown, Width x0"), while its Link Capabilities are its
    PF's. Its traffic crosses its PF's link.
    """
    parent = (by_pci or {}).get(device.get('physfn')) if device.get('physfn') else None
    if parent is not None:
        _speed, _width, max_speed, max_width = pcie_link(profile, parent)
        return ('Unknown', 0, device.get('pcie_max_link_speed', max_speed),
                device.get('pcie_max_link_width', max_width))
    speed = device.get('pcie_link_speed', profile.get('pcie_link_speed', PCIE_DEFAULT_SPEED))
    width = device.get('pcie_link_width', profile.get('pcie_link_width', PCIE_DEFAULT_WIDTH))
    link = (speed, width, device.get('pcie_max_link_speed', speed), device.get('pcie_max_link_width', width))
    for value in link[0::2]:
        if value not in PCIE_SPEEDS:
            raise ValueError('%s: PCIe link speed %r is not one the kernel prints (%s)'
                             % (device['name'], value, ', '.join(PCIE_SPEEDS[:6])))
    for value in link[1::2]:
        if value not in PCIE_WIDTHS:
            raise ValueError('%s: PCIe link width %r is not a number of lanes (%s)'
                             % (device['name'], value, ', '.join(str(w) for w in PCIE_WIDTHS)))
    if link[1] > link[3]:
        raise ValueError('%s: PCIe link width x%d above its maximum x%d' % (device['name'], link[1], link[3]))
    return link


def verbs_ports(profile):
    """``{"DEV/PORT": {"active_mtu": N}}``: what ibv_query_port reports of InfiniBand ports that sysfs does not show.

    Only a port with ``active_mtu`` in the profile is listed (the perftest double takes 4096, the ConnectX maximum,
    for the others); a RoCE port's active MTU follows its netdev's mtu, so it cannot be set here.
    """
    ports = {}
    for device in profile.get('devices', []):
        for port in device['ports']:
            if 'active_mtu' not in port:
                continue
            if port['link_layer'] != 'InfiniBand':
                raise ValueError('%s port %s: active_mtu is for InfiniBand ports; a RoCE port\'s follows its netdev\'s '
                                 'mtu' % (device['name'], port['number']))
            if port['active_mtu'] not in IB_MTUS:
                raise ValueError('%s port %s: active_mtu %r is not one of %s'
                                 % (device['name'], port['number'], port['active_mtu'],
                                    ', '.join(str(m) for m in IB_MTUS)))
            ports['%s/%s' % (device['name'], port['number'])] = {'active_mtu': port['active_mtu']}
    return ports


def _loaded_modules(root, modules):
    """``module/NAME`` of each loaded module, as the kernel lists a loadable one: its ``version`` (when it declares
    one) and ``initstate`` live."""
    for name, module in sorted(modules.items()):
        base = os.path.join(root, 'module', name)
        os.makedirs(base, exist_ok=True)
        if (module or {}).get('version'):
            _write(os.path.join(base, 'version'), module['version'])
        _write(os.path.join(base, 'initstate'), 'live')


def _link_stacked_netdevs(root, virtual_netdevs):
    """Bonds and VLANs over other netdevs, linked as the kernel links them.

    ``lowers`` names the netdevs below (bond slaves, a VLAN's parent): the upper gets ``lower_<dev>`` links, each
    lower gets ``upper_<name>`` (and, under a bond, ``master``); a bond (``kind: bond``) also gets
    ``bonding/slaves`` and ``bonding/mode``.
    """
    for netdev in virtual_netdevs:
        lowers = netdev.get('lowers') or []
        upper_dir = os.path.realpath(os.path.join(root, 'class', 'net', netdev['name']))
        for lower in lowers:
            lower_dir = os.path.realpath(os.path.join(root, 'class', 'net', lower))
            if not os.path.isdir(lower_dir):
                raise ValueError('%s: lower netdev %s is not in the profile' % (netdev['name'], lower))
            _symlink(os.path.relpath(lower_dir, upper_dir), os.path.join(upper_dir, 'lower_' + lower))
            _symlink(os.path.relpath(upper_dir, lower_dir), os.path.join(lower_dir, 'upper_' + netdev['name']))
            if netdev.get('kind') == 'bond':
                _symlink(os.path.relpath(upper_dir, lower_dir), os.path.join(lower_dir, 'master'))
        if netdev.get('kind') == 'bond':
            _write(os.path.join(upper_dir, 'bonding', 'slaves'), ' '.join(lowers))
            _write(os.path.join(upper_dir, 'bonding', 'mode'), netdev.get('bond_mode', '802.3ad 4'))


def _link_virtual_functions(root, devices):
    """The PF side of SR-IOV: sriov_totalvfs, sriov_numvfs and one virtfnN link per VF, numbered in profile order.

    A PF with ``sriov_totalvfs`` but no VF in the profile gets sriov_numvfs 0, as a card with SR-IOV enabled in
    firmware and no VF created.
    """
    by_pci = dict((d['pci_address'], d) for d in devices)
    children = {}
    for device in devices:
        parent = device.get('physfn')
        if not parent:
            continue
        if parent not in by_pci or by_pci[parent].get('physfn'):
            raise ValueError('%s: physfn %s is not a physical function of this profile' % (device['name'], parent))
        if device['pci_parent'] != by_pci[parent]['pci_parent']:
            raise ValueError('%s: a VF sits on the bus of its PF (pci_parent %s)'
                             % (device['name'], by_pci[parent]['pci_parent']))
        children.setdefault(parent, []).append(device)
    for device in devices:
        vfs = children.get(device['pci_address'], [])
        if device.get('physfn') or (not vfs and 'sriov_totalvfs' not in device):
            continue
        total = device.get('sriov_totalvfs', len(vfs))
        if len(vfs) > total:
            raise ValueError('%s: %d VFs, more than sriov_totalvfs %d' % (device['name'], len(vfs), total))
        function_dir = os.path.join(root, 'devices', device['pci_parent'], device['pci_address'])
        _write(os.path.join(function_dir, 'sriov_totalvfs'), total)
        _write(os.path.join(function_dir, 'sriov_numvfs'), len(vfs))
        # The rest of a PF's SR-IOV attributes (drivers/pci/iov.c, sriov_pf_dev_attrs): where the VFs land (routing
        # ID of the PF + offset + stride * N), their device ID (hex, no 0x) and whether new VFs get a driver.
        offset, stride = device.get('sriov_offset', 2), device.get('sriov_stride', 1)
        _write(os.path.join(function_dir, 'sriov_offset'), offset)
        _write(os.path.join(function_dir, 'sriov_stride'), stride)
        _write(os.path.join(function_dir, 'sriov_vf_device'),
               '%x' % device.get('sriov_vf_device', int(device.get('pci_device_id', '0x1017'), 16) + 1))
        _write(os.path.join(function_dir, 'sriov_drivers_autoprobe'), int(device.get('sriov_drivers_autoprobe', 1)))
        for index, vf in enumerate(vfs):
            if vf['pci_address'] != _vf_address(device['pci_address'], offset, stride, index):
                raise ValueError('%s: VF %d of %s is at %s, sriov_offset %d and sriov_stride %d put it at %s'
                                 % (vf['name'], index, device['name'], vf['pci_address'], offset, stride,
                                    _vf_address(device['pci_address'], offset, stride, index)))
            _symlink(os.path.join('..', vf['pci_address']), os.path.join(function_dir, 'virtfn%d' % index))


def _vf_address(pf_address, offset, stride, index):
    """The PCI address of VF ``index`` as the kernel computes it (pci_iov_virtfn_bus / pci_iov_virtfn_devfn)."""
    domain, bus, devfn = pf_address.split(':')
    device, function = devfn.split('.')
    routing = (int(bus, 16) << 8) + (int(device, 16) << 3) + int(function) + offset + stride * index
    return '%s:%02x:%02x.%x' % (domain, (routing >> 8) & 0xff, (routing >> 3) & 0x1f, routing & 7)


def _firmware_param(name, spec):
    """Turn a profile entry ({default, current, next} as names or numbers) into the doubles' numeric state."""
    spec = dict(spec) if isinstance(spec, dict) else {'default': spec}
    enum = next((table for prefix, table in FIRMWARE_ENUMS.items() if name.startswith(prefix)), None)
    if enum is not None:
        kind = 'enum'
    elif isinstance(spec['default'], bool):
        kind = 'bool'
    elif spec['default'] == 'N/A':
        kind = 'na'
    elif isinstance(spec['default'], str) and spec['default'].startswith('Array'):
        kind = 'array'
    else:
        kind = 'int'

    def number(value):
        if kind == 'enum' and isinstance(value, str):
            return enum[value]
        return int(value) if kind in ('bool', 'int', 'enum') else 0

    default = number(spec['default'])
    current = number(spec.get('current', spec['default']))
    state = {'kind': kind, 'default': default, 'current': current,
             'next': number(spec.get('next', spec.get('current', spec['default']))), 'ro': bool(spec.get('ro'))}
    if kind == 'enum':
        state['values'] = enum
    if kind == 'array':
        state['size'] = int(spec['default'].split('..')[1].rstrip(']')) + 1
    return state


def build_firmware(profile, root):
    """Write firmware/<pci>.json for every device with a firmware section, verbs/ports.json when a port sets what
    only verbs report, the doubles and a boot id."""
    # The parameters of a card of each generation as a real one printed them, from the doubles' own module
    # (lab/doubles/_firmware_state.py, which the lab copies to bin/ with the doubles).
    import importlib.util  # pylint: disable=import-outside-toplevel
    spec_of_catalog = importlib.util.spec_from_file_location('_gpunet_lab_firmware_state',
                                                             os.path.join(DOUBLES, '_firmware_state.py'))
    catalog = importlib.util.module_from_spec(spec_of_catalog)
    spec_of_catalog.loader.exec_module(catalog)
    firmware_dir = os.path.join(root, 'firmware')
    os.makedirs(firmware_dir, exist_ok=True)
    per_type = {}
    for device in (d for d in profile.get('devices', []) if d.get('firmware')):
        firmware = device['firmware']
        # mst numbers the devices of each type: mt4123_pciconf0, mt4123_pciconf1, mt4117_pciconf0
        index = per_type[device['hca_type']] = per_type.get(device['hca_type'], -1) + 1
        explicit = dict((name, _firmware_param(name, spec)) for name, spec in firmware['params'].items())
        params, order = catalog.device_params(firmware['device_type'], explicit)
        state = {
            'device_type': firmware['device_type'], 'name': firmware['name'],
            'description': firmware['description'],
            'mst': '%s_pciconf%d' % (device['hca_type'].lower(), index),
            'params': params, 'order': order,
        }
        # The firmware image of the card (mlxfwmanager double): PSID and running version as sysfs shows them; the
        # flash holds a newer one only when the profile says so (``flash_version``: burned, not yet activated).
        state['fw'] = {'psid': device['board_id'], 'running': str(device['fw_ver']),
                       'flash': str(firmware.get('flash_version', device['fw_ver'])),
                       'base_guid': device['node_guid'].replace(':', ''), 'roms': dict(firmware.get('roms') or {})}
        with open(os.path.join(firmware_dir, device['pci_address'] + '.json'), 'w') as handle:
            json.dump(state, handle, indent=1, sort_keys=True)
    with open(os.path.join(firmware_dir, 'calls.log'), 'w'):
        pass
    ports = verbs_ports(profile)
    if ports:
        os.makedirs(os.path.join(root, 'verbs'), exist_ok=True)
        with open(os.path.join(root, 'verbs', 'ports.json'), 'w') as handle:
            json.dump(ports, handle, indent=1, sort_keys=True)
    bin_dir = os.path.join(root, 'bin')
    os.makedirs(bin_dir, exist_ok=True)
    for name in sorted(os.listdir(DOUBLES)):
        if not name.startswith('.') and name != '__pycache__':
            shutil.copy2(os.path.join(DOUBLES, name), os.path.join(bin_dir, name))
    _write(os.path.join(root, 'boot_id'), 'lab-boot-0')
    return root


def load_profile(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def _normalize(info):
    info.mtime = FIXED_MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = 'root'
    return info


def write_archive(profile, archive_path):
    """Build the tree and the firmware state in a temporary directory and pack them into a reproducible tar.gz."""
    with tempfile.TemporaryDirectory() as workdir:
        build(profile, os.path.join(workdir, 'sys'))
        build_firmware(profile, workdir)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode='w', format=tarfile.GNU_FORMAT) as archive:
            for dirpath, dirnames, filenames in os.walk(workdir):
                dirnames.sort()
                for name in [dirpath] + [os.path.join(dirpath, f) for f in sorted(filenames)] + \
                        [os.path.join(dirpath, d) for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                    if name == workdir:
                        continue
                    arcname = os.path.relpath(name, workdir)
                    archive.add(name, arcname=arcname, recursive=False, filter=_normalize)
    with open(archive_path, 'wb') as raw:
        with gzip.GzipFile(filename='', fileobj=raw, mode='wb', mtime=FIXED_MTIME) as compressed:
            compressed.write(buffer.getvalue())


def main(argv):
    if len(argv) != 3:
        sys.stderr.write('usage: %s PROFILE.yml OUT.tar.gz\n' % argv[0])
        return 2
    write_archive(load_profile(argv[1]), argv[2])
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
