# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Turn RDMA hardware descriptions into port and device records.

Three sources are understood, each reporting only what it can know:

* the kernel's sysfs tree (``/sys/class/infiniband`` and ``/sys/class/net``),
* the text printed by MLNX_OFED's / DOCA-OFED's ``ibdev2netdev`` (plain, ``-v`` and the old ``<===>`` style),
* the output of iproute2's ``rdma link`` (``-j`` JSON of every release, compact or ``-p`` pretty, and the
  text forms ``link DEV/PORT ...`` and the older ``INDEX/PORT: DEV/PORT: ...``).

What a source cannot tell stays ``None`` and is listed in the port's ``unknown`` key; the facts module can fill
it from sysfs when the port list came from a command (``fill_from_sysfs``).

Everything here is free of Ansible imports so that unit tests call it directly.
"""

from __future__ import annotations

import json
import os
import re

from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import (
    HostReadError,
    decode_text,
    list_dir,
    printable,
    read_bytes,
    read_link,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._tool_runner import ToolRunner, fixed

# ibdev2netdev (MLNX_OFED / DOCA): -v adds the PCI address and the port state; older releases lack it.
IBDEV2NETDEV = ToolRunner('ibdev2netdev', {'verbose': fixed('-v')})
# iproute2's rdma: `-j link` (the ports, JSON), `system` (netns mode and copy-on-fork).
RDMA = ToolRunner('rdma', {'json': fixed('-j'), 'link': fixed('link'), 'system': fixed('system')})

PCI_ADDRESS_RE = re.compile(r'^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$')
SHORT_PCI_ADDRESS_RE = re.compile(r'^[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$')

# sysfs prints the port state as "<number>: <NAME>" (drivers/infiniband/core/sysfs.c).
_STATE_RE = re.compile(r'^\s*(\d+)\s*:\s*(\S.*?)\s*$')
# "100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)", "53.125 Gb/sec (1X HDR)"
_RATE_RE = re.compile(r'^\s*(\d+(?:\.\d+)?)\s*Gb/sec\b')

# The kernel's names (include/rdma/ib_verbs.h, drivers/infiniband/core/sysfs.c); "UNKNOWN" and "<unknown>" are
# what it prints for a value outside the tables, which is unknown, not a state.
PORT_STATES = ('NOP', 'DOWN', 'INIT', 'ARMED', 'ACTIVE', 'ACTIVE_DEFER')
PHYS_STATES = ('Sleep', 'Polling', 'Disabled', 'PortConfigurationTraining', 'LinkUp', 'LinkErrorRecovery',
               'Phy Test')
LINK_LAYERS = ('InfiniBand', 'Ethernet')
_UNKNOWN_WORDS = ('UNKNOWN', '<unknown>', 'Unknown')

# iproute2 prints physical states in upper snake case (rdma/link.c phys_state_to_str); facts use the sysfs
# spelling so that both sources compare equal. iproute2 labels state 4 "ARMED" although the kernel's name for it
# is PortConfigurationTraining, and prints LINK_ERROR_RECOVER for LinkErrorRecovery.
_RDMA_TOOL_PHYS_STATES = {
    'SLEEP': 'Sleep',
    'POLLING': 'Polling',
    'DISABLED': 'Disabled',
    'ARMED': 'PortConfigurationTraining',
    'PORT_CONFIGURATION_TRAINING': 'PortConfigurationTraining',
    'LINK_UP': 'LinkUp',
    'LINK_ERROR_RECOVER': 'LinkErrorRecovery',
    'LINK_ERROR_RECOVERY': 'LinkErrorRecovery',
    'PHY_TEST': 'Phy Test',
    # Values the kernel's sysfs shows as "<unknown>": no physical state to report.
    'NOP': None,
    'UNKNOWN': None,
    'OPA_OFFLINE': None,
    'OPA_TEST': None,
}

# PCI device IDs that the kernel's mlx4/mlx5 drivers flag as SR-IOV virtual functions (MLX4_PCI_DEV_IS_VF,
# MLX5_PCI_DEV_IS_VF), as `ibdev2netdev -v` prints them ("MT%d" of the device ID): ConnectX-2/-3, Connect-IB,
# ConnectX-4, -4 Lx, -5, -5 Ex, -6, the generic mlx5 VF of ConnectX-6 Dx and later, BlueField.
VF_DEVICE_IDS = frozenset(['MT4098', 'MT4100', 'MT4114', 'MT4116', 'MT4118', 'MT4120', 'MT4122', 'MT4124',
                           'MT4126', 'MT41683'])

PORT_KEYS = (
    'device', 'port', 'netdev', 'netdev_state', 'state', 'physical_state',
    'link_layer', 'rate_gbps', 'rate', 'lid', 'sm_lid', 'pci_address', 'gids', 'source', 'unknown',
    # SR-IOV: a VF's port names its PF (the device's), a PF's port lists the VF devices of its function.
    'virtual_function', 'physical_function', 'physical_function_device', 'vfs',
)
DEVICE_KEYS = (
    'device', 'pci_address', 'node_guid', 'node_desc', 'fw_ver', 'hca_type', 'board_id',
    'virtual_function', 'physical_function', 'physical_function_device', 'sriov_numvfs', 'sriov_totalvfs',
    'ports',
)
# Port keys a source may be unable to tell; listed in the port's "unknown" key while they are None.
UNKNOWABLE_PORT_KEYS = ('state', 'physical_state', 'link_layer', 'rate_gbps')
# What sysfs can add to a port listed by a command.
FILLABLE_PORT_KEYS = ('state', 'physical_state', 'link_layer', 'rate_gbps', 'rate', 'lid', 'sm_lid',
                      'pci_address', 'gids')
FILLABLE_DEVICE_KEYS = ('pci_address', 'node_guid', 'node_desc', 'fw_ver', 'hca_type', 'board_id',
                        'virtual_function', 'physical_function', 'physical_function_device', 'sriov_numvfs',
                        'sriov_totalvfs')

# What any sysfs mount has at its top; a tree with none of them is not a sysfs (e.g. /sys/class given for /sys).
SYSFS_TOP_DIRS = ('class', 'devices', 'bus', 'module', 'kernel')
# dev_valid_name() of the kernel: 1-15 bytes, no '/', ':' or whitespace, not "." or "..".
_NETDEV_NAME_RE = re.compile(r'^[^/:\s]{1,15}$')
# RDMA device names: the kernel refuses '/' and limits them to IB_DEVICE_NAME_MAX (64) bytes.
_DEVICE_NAME_RE = re.compile(r'^[^/\s]{1,63}$')
_DIGITS_RE = re.compile(r'^[0-9]+$')
# ports/N/gids/I: eight groups of four hex digits; the empty entries of the table are all zeros.
_GID_RE = re.compile(r'^[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7}$')
_ZERO_GID = '0000:0000:0000:0000:0000:0000:0000:0000'
# An IPv4-mapped GID (::ffff:a.b.c.d), which RoCE derives from an IPv4 address of the netdev.
_IPV4_MAPPED_PREFIX = '0000:0000:0000:0000:0000:ffff:'


class RdmaParseError(ValueError):
    """Raised when input does not have the documented shape.

    ``line`` holds the offending line (or file content) so the caller can quote it.
    """

    def __init__(self, message, line=None):
        super().__init__(message)
        self.line = line
        self.source = None


def empty_port(device, port, source=None):
    record = dict.fromkeys(PORT_KEYS)
    record['device'] = device
    record['port'] = port
    record['source'] = source
    record['unknown'] = []
    record['vfs'] = []
    return record


def empty_device(device):
    record = dict.fromkeys(DEVICE_KEYS)
    record['device'] = device
    record['ports'] = []
    return record


def normalize_pci_address(text):
    """Return the domain-qualified lower-case form of a PCI address, or None."""
    if text is None:
        return None
    text = str(text).strip()
    if SHORT_PCI_ADDRESS_RE.match(text):
        text = '0000:' + text
    if PCI_ADDRESS_RE.match(text):
        return text.lower()
    return None


def _known_name(text, names, what, line=None):
    """``text`` when it is one of ``names``, None for the kernel's "unknown" words, RdmaParseError otherwise."""
    if text in _UNKNOWN_WORDS:
        return None
    if text not in names:
        raise RdmaParseError('unexpected %s %r (known: %s)' % (what, printable(text, 80), ', '.join(names)),
                             line if line is not None else text)
    return text


def parse_state(text, what='state'):
    """Parse a sysfs ``state`` / ``phys_state`` value such as ``4: ACTIVE`` or ``5: LinkUp``."""
    if text is None:
        return None
    match = _STATE_RE.match(text)
    if not match:
        raise RdmaParseError('unexpected %s value %r' % (what, printable(text.strip(), 80)), text.strip())
    names = PHYS_STATES if what == 'phys_state' else PORT_STATES
    return _known_name(match.group(2), names, '%s value' % what, text.strip())


def parse_rate(text):
    """Parse a sysfs rate (``100 Gb/sec (4X EDR)``) into a number of Gb/s."""
    if text is None:
        return None
    match = _RATE_RE.match(text)
    if not match:
        raise RdmaParseError('unexpected rate value %r' % printable(text.strip(), 80), text.strip())
    return _number(match.group(1))


def parse_lid(text):
    """sysfs prints LIDs in hex (``0x3``)."""
    if text is None:
        return None
    try:
        value = int(text.strip(), 0)
    except ValueError:
        raise RdmaParseError('unexpected LID value %r' % printable(text.strip(), 80), text.strip())
    if not 0 <= value <= 0xffff:
        raise RdmaParseError('LID value %r is outside 0..0xffff' % text.strip(), text.strip())
    return value


def parse_link_layer(text):
    if text is None:
        return None
    return _known_name(text.strip(), LINK_LAYERS, 'link_layer value')


def is_virtual_function_id(hca_type):
    """True / False from a device ID in ``MT<decimal>`` form, None when it is not one."""
    if not hca_type or not re.match(r'^MT\d+$', hca_type):
        return None
    return hca_type in VF_DEVICE_IDS


def is_virtual_function(device):
    """Whether a device record is an SR-IOV VF: from sysfs (``physfn``) when known, else from its device ID."""
    value = device.get('virtual_function')
    if value is not None:
        return bool(value)
    return is_virtual_function_id(device.get('hca_type'))


def _number(text):
    value = float(text)
    return int(value) if value.is_integer() else value


def check_netdev_name(name, where):
    if name is None:
        return None
    if not _NETDEV_NAME_RE.match(name) or name in ('.', '..') or not name.isprintable():
        raise RdmaParseError('%s: %r is not a network interface name' % (where, printable(name, 80)), name)
    return name


def check_device_name(name, where):
    if not _DEVICE_NAME_RE.match(name or '') or not name.isprintable():
        raise RdmaParseError('%s: %r is not an RDMA device name' % (where, printable(name, 80)), name)
    return name


def sort_ports(ports):
    return sorted(ports, key=lambda p: (_natural_key(p['device']), p['port']))


def _natural_key(name):
    return [(0, int(part), '') if _is_number(part) else (1, 0, part) for part in re.split(r'([0-9]+)', name or '')]


def _is_number(text):
    """ASCII digits only: str.isdigit() also accepts characters such as '\u00b2' that int() refuses."""
    return bool(_DIGITS_RE.match(text or ''))


def mark_unknown(ports):
    """Set each port's ``unknown`` key: what its sources could not tell."""
    for port in ports:
        port['unknown'] = [key for key in UNKNOWABLE_PORT_KEYS if port.get(key) is None]
    return ports


def devices_from_ports(ports, details=None):
    """Build device records from port records; ``details`` adds per-device fields."""
    details = details or {}
    devices = {}
    for port in ports:
        device = devices.get(port['device'])
        if device is None:
            device = empty_device(port['device'])
            device.update(details.get(port['device'], {}))
            devices[port['device']] = device
        if device['pci_address'] is None:
            device['pci_address'] = port['pci_address']
        device['ports'].append(port['port'])
    for name, extra in details.items():
        if name not in devices:
            device = empty_device(name)
            device.update(extra)
            devices[name] = device
    for device in devices.values():
        device['ports'] = sorted(device['ports'])
    return [devices[name] for name in sorted(devices, key=_natural_key)]


def link_functions(ports, devices):
    """Give each port the SR-IOV role of its device: ``virtual_function`` (None when the source does not tell), and
    for a VF's port its PF (``physical_function``, ``physical_function_device``); a PF's port lists the VF devices
    whose PF it is (``vfs``, natural order). A VF of a multi-port function belongs to the PF port of the same number
    (else to the PF's first port). Returns ``ports``.
    """
    by_device = dict((d['device'], d) for d in devices or [])
    for port in ports:
        device = by_device.get(port['device']) or {}
        virtual = is_virtual_function(device) if device else None
        port['virtual_function'] = virtual
        port['physical_function'] = device.get('physical_function') if virtual else None
        port['physical_function_device'] = device.get('physical_function_device') if virtual else None
        port['vfs'] = []
    pf_ports = [p for p in ports if not p['virtual_function']]
    for port in sort_ports([p for p in ports if p['virtual_function']]):
        if port['physical_function_device']:
            mine = [p for p in pf_ports if p['device'] == port['physical_function_device']]
        elif port['physical_function']:
            mine = [p for p in pf_ports if p['pci_address'] == port['physical_function']]
        else:
            mine = []
        parent = next((p for p in mine if p['port'] == port['port']), mine[0] if mine else None)
        if parent is not None and port['device'] not in parent['vfs']:
            parent['vfs'].append(port['device'])
    return ports


def _add_port(ports, seen, record, line):
    """Append ``record`` unless the same port was listed before: identical lines are dropped, conflicting ones
    (two netdevs for one port) are an error, since picking one would be a guess."""
    key = (record['device'], record['port'])
    earlier = seen.get(key)
    if earlier is None:
        seen[key] = (record, line)
        ports.append(record)
        return
    if earlier[0] != record:
        raise RdmaParseError('%s port %d is listed twice, differently: %r and %r'
                             % (record['device'], record['port'], printable(earlier[1], 200),
                                printable(line, 200)), line)


# --------------------------------------------------------------------- sysfs


def sysfs_root_problem(root):
    """None when ``root`` looks like a sysfs mount, else what is wrong with it (for a message)."""
    if not os.path.lexists(root):
        return '%s does not exist' % root
    if not os.path.isdir(root):
        return '%s is not a directory' % root
    if not any(os.path.isdir(os.path.join(root, name)) for name in SYSFS_TOP_DIRS):
        hint = ''
        parent = os.path.dirname(os.path.normpath(root))
        if os.path.basename(os.path.normpath(root)) in SYSFS_TOP_DIRS and parent != root:
            hint = ' (it looks like a directory inside one: %s?)' % parent
        return '%s is not a sysfs mount: it has none of %s%s' % (
            root, ', '.join(name + '/' for name in SYSFS_TOP_DIRS), hint)
    return None


class SysfsReader(object):
    """Read RDMA devices from a tree laid out like the kernel's ``/sys``.

    ``root`` is the sysfs mount point (``/sys`` on a real host, a fixture
    directory in tests and in the lab).
    """

    # Attributes whose bytes come from firmware or VPD and may legitimately be odd: undecodable bytes become
    # U+FFFD. Everything else is written by the kernel in ASCII, so a stray byte there is refused.
    LENIENT = ('node_desc', 'board_id', 'fw_ver', 'hca_type')

    def __init__(self, root='/sys'):
        self.root = root
        self.class_ib = os.path.join(root, 'class', 'infiniband')
        self.class_net = os.path.join(root, 'class', 'net')

    def root_problem(self):
        return sysfs_root_problem(self.root)

    def has_rdma_class(self):
        return os.path.isdir(self.class_ib)

    @staticmethod
    def _list(directory):
        """The entries of a sysfs directory ([] when it is absent); one that cannot be listed is a parse error naming
        it, never an empty directory (a port or a GID table would silently vanish)."""
        try:
            return list_dir(directory)
        except HostReadError as exc:
            raise RdmaParseError('%s; read sysfs as root' % exc, '')

    def read(self):
        """Return ``(ports, devices)`` lists, sorted by device then port."""
        if not self.has_rdma_class():
            return [], []
        ports = []
        details = {}
        for device in sorted(self._list(self.class_ib), key=_natural_key):
            check_device_name(device, self.class_ib)
            device_dir = os.path.join(self.class_ib, device)
            pci_address = self._pci_address(device_dir)
            details[device] = self._device_details(device_dir, pci_address)
            netdevs_by_port = self._function_netdevs(device_dir)
            ports_dir = os.path.join(device_dir, 'ports')
            if not os.path.isdir(ports_dir):
                continue
            for port_name in self._list(ports_dir):
                if not _is_number(port_name):
                    continue
                ports.append(self._port(device, int(port_name), os.path.join(ports_dir, port_name),
                                        pci_address, netdevs_by_port))
        self._name_physical_functions(details)
        ports = mark_unknown(sort_ports(ports))
        devices = devices_from_ports(ports, details)
        return link_functions(ports, devices), devices

    def _device_details(self, device_dir, pci_address):
        record = {'pci_address': pci_address}
        for attribute in ('node_guid', 'node_desc', 'fw_ver', 'hca_type', 'board_id'):
            record[attribute] = self._read(device_dir, attribute)
        function_dir = os.path.join(device_dir, 'device')
        physfn = os.path.join(function_dir, 'physfn')
        record['virtual_function'] = None
        record['physical_function'] = None
        record['physical_function_device'] = None
        if pci_address:
            # The kernel links a VF's PCI function to its PF with "physfn" (and the PF to its VFs with virtfnN).
            record['virtual_function'] = os.path.lexists(physfn)
            if record['virtual_function']:
                try:
                    target = read_link(physfn)
                except HostReadError:
                    target = None
                record['physical_function'] = normalize_pci_address(os.path.basename(target)) if target else None
        record['sriov_numvfs'] = self._count(function_dir, 'sriov_numvfs')
        record['sriov_totalvfs'] = self._count(function_dir, 'sriov_totalvfs')
        return record

    @staticmethod
    def _name_physical_functions(details):
        by_pci = {}
        for name in sorted(details, key=_natural_key):
            record = details[name]
            if record['pci_address'] and not record['virtual_function']:
                by_pci.setdefault(record['pci_address'], name)
        for record in details.values():
            if record['virtual_function'] and record['physical_function']:
                record['physical_function_device'] = by_pci.get(record['physical_function'])

    def _count(self, directory, name):
        value = self._read(directory, name)
        if value is None:
            return None
        if not _is_number(value):
            raise RdmaParseError('unexpected %s value %r in %s' % (name, printable(value, 80), directory), value)
        return int(value)

    def _parsed(self, port_dir, name, parse):
        """``parse`` of the attribute ``name``; a value it refuses is reported with the file it came from (on a host
        with many ports, "unexpected phys_state" alone cannot be acted on)."""
        text = self._read(port_dir, name)
        try:
            return parse(text)
        except RdmaParseError as exc:
            raise RdmaParseError('%s: %s' % (os.path.join(port_dir, name), exc), exc.line)

    def _port(self, device, number, port_dir, pci_address, netdevs_by_port):
        record = empty_port(device, number, 'sysfs')
        record['pci_address'] = pci_address
        record['state'] = self._parsed(port_dir, 'state', lambda text: parse_state(text, 'state'))
        record['physical_state'] = self._parsed(port_dir, 'phys_state', lambda text: parse_state(text, 'phys_state'))
        record['rate'] = self._read(port_dir, 'rate')
        record['rate_gbps'] = self._parsed(port_dir, 'rate', parse_rate)
        record['link_layer'] = self._parsed(port_dir, 'link_layer', parse_link_layer)
        record['lid'] = self._parsed(port_dir, 'lid', parse_lid)
        record['sm_lid'] = self._parsed(port_dir, 'sm_lid', parse_lid)
        netdev = None
        if record['link_layer'] == 'Ethernet':
            # A RoCE port's netdev is the one its GIDs are bound to; for a LAG
            # device (mlx5_bond_0) that is the bond, not the PF's own netdev.
            netdev = self._gid_netdev(port_dir)
        if netdev is None:
            netdev = netdevs_by_port.get(number)
        record['netdev'] = netdev
        record['netdev_state'] = self.netdev_state(netdev)
        record['gids'] = self._gids(port_dir, record['link_layer'])
        return record

    def _gids(self, port_dir, link_layer):
        """The port's GID table without its empty entries: index, GID, type, netdev and the IPv4 address of an
        IPv4-mapped GID.

        ``gid_attrs/types/I`` reads "IB/RoCE v1" or "RoCE v2"; on an InfiniBand port the type is IB. The kernel
        refuses reads of ``gid_attrs/*/I`` for empty entries and of ``ndevs`` on InfiniBand ports (EINVAL): those
        are None. The table keeps its gaps (an address removed from a netdev empties its entries).
        """
        gids_dir = os.path.join(port_dir, 'gids')
        names = self._list(gids_dir)
        table = []
        for index in sorted((int(name) for name in names if _is_number(name))):
            gid = self._read(gids_dir, str(index))
            if gid is None or gid == _ZERO_GID:
                continue
            if not _GID_RE.match(gid):
                where = os.path.join(gids_dir, str(index))
                raise RdmaParseError('unexpected GID %r in %s' % (printable(gid, 80), where), gid)
            kind = self._read(os.path.join(port_dir, 'gid_attrs', 'types'), str(index))
            if link_layer == 'InfiniBand':
                kind = 'IB'
            elif kind is not None:
                kind = {'IB/RoCE v1': 'RoCE v1', 'RoCE v2': 'RoCE v2'}.get(kind, kind)
            netdev = self._read(os.path.join(port_dir, 'gid_attrs', 'ndevs'), str(index)) or None
            if netdev is not None:
                check_netdev_name(netdev, os.path.join(port_dir, 'gid_attrs', 'ndevs', str(index)))
            ipv4 = None
            if gid.lower().startswith(_IPV4_MAPPED_PREFIX):
                packed = gid[len(_IPV4_MAPPED_PREFIX):].replace(':', '')
                ipv4 = '.'.join(str(int(packed[i:i + 2], 16)) for i in range(0, 8, 2))
            table.append({'index': index, 'gid': gid.lower(), 'type': kind, 'netdev': netdev, 'ipv4': ipv4})
        return table

    def _pci_address(self, device_dir):
        link = os.path.join(device_dir, 'device')
        if not os.path.exists(link):
            return None
        return normalize_pci_address(os.path.basename(os.path.realpath(link)))

    def _function_netdevs(self, device_dir):
        """Map port number -> netdev for the netdevs of the device's PCI function.

        Like ibdev2netdev: port = max(dev_id, dev_port) + 1, so multi-port
        functions (ConnectX-3: ib0 and ib1 on one function) map correctly.
        """
        net_dir = os.path.join(device_dir, 'device', 'net')
        result = {}
        if not os.path.isdir(net_dir):
            return result
        for netdev in sorted(self._list(net_dir), key=_natural_key):
            check_netdev_name(netdev, net_dir)
            netdev_dir = os.path.join(net_dir, netdev)
            index = 0
            for attribute in ('dev_id', 'dev_port'):
                value = self._read(netdev_dir, attribute)
                if value is None:
                    continue
                try:
                    index = max(index, int(value, 0))
                except ValueError:
                    raise RdmaParseError('unexpected %s value %r in %s'
                                         % (attribute, printable(value, 80), netdev_dir), value)
            result.setdefault(index + 1, netdev)
        return result

    def _gid_netdev(self, port_dir):
        ndevs_dir = os.path.join(port_dir, 'gid_attrs', 'ndevs')
        if not os.path.isdir(ndevs_dir):
            return None
        for index in sorted((n for n in self._list(ndevs_dir) if _is_number(n)), key=int):
            value = self._read(ndevs_dir, index)
            if value:
                return check_netdev_name(value, os.path.join(ndevs_dir, index))
        return None

    def netdev_state(self, netdev):
        """"Up"/"Down" as ibdev2netdev prints it: carrier first, operstate if carrier is unreadable."""
        if not netdev or not _NETDEV_NAME_RE.match(netdev) or netdev in ('.', '..'):
            return None
        netdev_dir = os.path.join(self.class_net, netdev)
        carrier = self._read(netdev_dir, 'carrier')
        if carrier in ('0', '1'):
            return 'Up' if carrier == '1' else 'Down'
        operstate = self._read(netdev_dir, 'operstate')
        if operstate == 'up':
            return 'Up'
        if operstate in ('down', 'lowerlayerdown', 'notpresent'):
            return 'Down'
        return None

    def _read(self, directory, name):
        """Return the stripped content of a sysfs attribute, or None when it cannot be read.

        The kernel refuses some reads (``carrier`` of an interface that is
        administratively down, ``gid_attrs/ndevs/N`` of an InfiniBand port)
        with EINVAL: that is "unknown", not an error. Content that is not text
        is refused naming the file, except for the free-text attributes in
        LENIENT, where an odd byte becomes U+FFFD.
        """
        path = os.path.join(directory, name)
        try:
            data = read_bytes(path)
        except HostReadError:
            return None
        try:
            text = decode_text(data, path, lenient=name in self.LENIENT)
        except HostReadError as exc:
            raise RdmaParseError(str(exc), printable(data.decode('utf-8', 'replace').strip(), 200))
        if '\x00' in text:
            raise RdmaParseError('%s holds a NUL byte; sysfs attributes are text' % path,
                                 printable(text.strip(), 200))
        return text.strip()


def roce_gid_index(port, version='RoCE v2', family='ipv4'):
    """The GID index a RoCE test of ``port`` (an rdma_ports record) should use: the first entry of ``version`` bound
    to an address of ``family`` (``ipv4``: an IPv4-mapped GID; ``ipv6``: a global IPv6 GID, not link-local) on the
    port's netdev. None for InfiniBand ports (no GID needed), for ports whose GID table is unknown (a command
    source) or has no such entry - callers then let the tool choose and say so.
    """
    if port.get('link_layer') != 'Ethernet' or not port.get('gids'):
        return None
    for entry in port['gids']:
        if entry.get('type') != version:
            continue
        if port.get('netdev') and entry.get('netdev') not in (None, port['netdev']):
            continue
        if family == 'ipv4' and entry.get('ipv4'):
            return entry['index']
        if family == 'ipv6' and not entry.get('ipv4') and not str(entry.get('gid', '')).startswith('fe80:'):
            return entry['index']
    return None


def fill_from_sysfs(ports, devices, reader):
    """Fill what a command could not tell from sysfs, for the ports sysfs knows too.

    Values the command printed are kept; only ``None`` fields are filled (a netdev only when the command printed
    none, its state only for that same netdev). Returns the number of ports that gained something.
    """
    sysfs_ports, sysfs_devices = reader.read()
    by_port = dict(((p['device'], p['port']), p) for p in sysfs_ports)
    by_device = dict((d['device'], d) for d in sysfs_devices)
    filled = 0
    for port in ports:
        known = by_port.get((port['device'], port['port']))
        if known is None:
            continue
        before = dict(port)
        for key in FILLABLE_PORT_KEYS:
            if port[key] is None:
                port[key] = known[key]
        if port['netdev'] is None:
            port['netdev'] = known['netdev']
        if port['netdev_state'] is None:
            port['netdev_state'] = (known['netdev_state'] if port['netdev'] == known['netdev']
                                    else reader.netdev_state(port['netdev']))
        if port != before:
            filled += 1
    for device in devices:
        known = by_device.get(device['device'])
        if known is None:
            continue
        for key in FILLABLE_DEVICE_KEYS:
            if device[key] is None:
                device[key] = known[key]
    mark_unknown(ports)
    link_functions(ports, devices)
    return filled


# ------------------------------------------------------------- ibdev2netdev

_PCI = r'[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]'
# "mlx5_0 port 1 ==> ib0 (Up)"; `ibdev2netdev | column -t` widens the spaces.
_IBDEV2NETDEV_PLAIN_RE = re.compile(
    r'^(?P<device>\S+)\s+port\s+(?P<port>[0-9]+)\s+==>\s+(?P<netdev>\S+)\s+\((?P<netdev_state>[^()]*)\)$')
# Scripts before MLNX_OFED 4.x on hosts whose netdevs lack dev_id: "mlx4_0 port 1 <===> ib0".
_IBDEV2NETDEV_OLD_RE = re.compile(r'^(?P<device>\S+)\s+port\s+(?P<port>[0-9]+)\s+<===>\s+(?P<netdev>\S+)$')
# "0000:86:00.0 mlx5_0 (MT4119 - MCX556A-ECAT) CX556A - ConnectX-5 fw 16.26.1040 port 1 (ACTIVE) ==> ens1f0 (Up)"
# The PCI address is empty when the script cannot find the device's function (several RDMA devices on one
# function); the description is free text from the VPD, parentheses included.
_IBDEV2NETDEV_VERBOSE_RE = re.compile(
    r'^(?:(?P<pci>' + _PCI + r')\s+)?(?P<device>\S+)\s+\((?P<hca>[^()]*)\)\s*(?P<description>.*?)\s*'
    r'\bfw\s+(?P<fw>\S+)\s+port\s+(?P<port>[0-9]+)\s+\(\s*(?P<state>[^()]*?)\s*\)\s+==>\s+'
    r'(?P<netdev>\S+)\s+\((?P<netdev_state>[^()]*)\)$')


def _netdev_state_word(text, line):
    """ibdev2netdev prints (Up), (Down), (NA) or () when it cannot read the carrier; builds seen in the field
    print two words such as (Down/Up). The first word is the netdev's own carrier state."""
    words = [word.strip() for word in text.split('/')]
    for word in words:
        if word not in ('Up', 'Down', 'NA', ''):
            raise RdmaParseError('unexpected netdev state %r in ibdev2netdev line %r'
                                 % (printable(text, 40), printable(line, 200)), line)
    return words[0] if words[0] in ('Up', 'Down') else None


def _na(text):
    text = (text or '').strip()
    return None if text in ('', 'NA', 'N/A') else text


def _port_number(text, line):
    number = int(text)
    if number < 1:
        raise RdmaParseError('port number %d in %r; RDMA ports are numbered from 1' % (number, printable(line, 200)),
                             line)
    return number


def parse_ibdev2netdev(text):
    """Parse ``ibdev2netdev`` or ``ibdev2netdev -v`` output into ``(ports, devices)``."""
    ports = []
    seen = {}
    details = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        match = _IBDEV2NETDEV_VERBOSE_RE.match(line)
        if match:
            device = check_device_name(match.group('device'), 'ibdev2netdev')
            record = empty_port(device, _port_number(match.group('port'), raw), 'ibdev2netdev')
            record['pci_address'] = normalize_pci_address(match.group('pci'))
            state = _na(match.group('state'))
            record['state'] = None if state is None else _known_name(state, PORT_STATES, 'port state', raw)
            # "(MT4119 - MCX556A-ECAT)": the device ID, then the VPD part number (not the kernel's board_id).
            hca_type = _na(match.group('hca').partition(' - ')[0])
            detail = {'pci_address': record['pci_address'], 'fw_ver': _na(match.group('fw')), 'hca_type': hca_type,
                      'virtual_function': is_virtual_function_id(hca_type)}
            if details.setdefault(device, detail) != detail:
                raise RdmaParseError('%s is described twice, differently, in %r' % (device, printable(raw, 200)),
                                     raw)
            record['netdev_state'] = _netdev_state_word(match.group('netdev_state'), raw)
        else:
            match = _IBDEV2NETDEV_PLAIN_RE.match(line) or _IBDEV2NETDEV_OLD_RE.match(line)
            if not match:
                raise RdmaParseError('unrecognised ibdev2netdev line: %r' % printable(raw, 200), raw)
            device = check_device_name(match.group('device'), 'ibdev2netdev')
            record = empty_port(device, _port_number(match.group('port'), raw), 'ibdev2netdev')
            if 'netdev_state' in match.groupdict():
                record['netdev_state'] = _netdev_state_word(match.group('netdev_state'), raw)
        record['netdev'] = check_netdev_name(match.group('netdev'), 'ibdev2netdev line %r' % printable(raw, 200))
        _add_port(ports, seen, record, raw)
    ports = mark_unknown(sort_ports(ports))
    devices = devices_from_ports(ports, details)
    return link_functions(ports, devices), devices


# ----------------------------------------------------------------- rdma link

# "link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens6f0np0"
# "0/1: mlx5_0/1: state ACTIVE physical_state LINK_UP netdev ens6f0np0" (iproute2 before 5.5)
_RDMA_LINK_TEXT_RE = re.compile(
    r'^(?:link\s+|\d+/\d+:\s+)(?P<device>[^/\s]+)/(?P<port>[0-9]+):?(?:\s+(?P<rest>.*?))?\s*$')
# `rdma link -d` prints the capabilities on an indented line of their own, `-o` (oneline) after a backslash.
_RDMA_CAPS_RE = re.compile(r'(?:^|\s)\\?\s*caps:\s*<[^<>]*>\s*$')
_RDMA_LINK_INT_KEYS = ('lid', 'sm_lid', 'lmc', 'netdev_index', 'ifindex')
_RDMA_PORT_STATES = PORT_STATES + ('UNKNOWN',)


def _rdma_state(value, entry):
    if value is None:
        return None
    if value not in _RDMA_PORT_STATES:
        raise RdmaParseError('unexpected link state %r in rdma link output: %s' % (printable(value, 40), entry),
                             entry)
    return None if value == 'UNKNOWN' else value


def _rdma_phys_state(value, entry):
    if value is None:
        return None
    if value not in _RDMA_TOOL_PHYS_STATES:
        raise RdmaParseError('unexpected physical_state %r in rdma link output: %s' % (printable(value, 40), entry),
                             entry)
    return _RDMA_TOOL_PHYS_STATES[value]


def _rdma_record(device, port, fields, entry):
    record = empty_port(check_device_name(device, 'rdma link'), port, 'rdma')
    if port < 1:
        raise RdmaParseError('port number %d in rdma link output: %s' % (port, entry), entry)
    record['state'] = _rdma_state(fields.get('state'), entry)
    record['physical_state'] = _rdma_phys_state(fields.get('physical_state'), entry)
    record['netdev'] = check_netdev_name(fields.get('netdev') or None, 'rdma link output %s' % entry)
    if fields.get('lid') is not None:
        record['lid'] = fields['lid']
        record['sm_lid'] = fields.get('sm_lid')
    # The kernel sends subnet prefix, LID, SM LID and LMC for InfiniBand ports only (nldev fill_port_info,
    # rdma_protocol_ib), so their presence tells the link layer; their absence does not (RoCE or iWARP).
    if fields.get('lid') is not None or fields.get('subnet_prefix') is not None:
        record['link_layer'] = 'InfiniBand'
    return record


def _json_entry(entry, quoted):
    """One entry of ``rdma -j link``: device, port and the fields, types checked."""
    if not isinstance(entry, dict):
        raise RdmaParseError('rdma -j link printed a %s where a link object belongs: %s'
                             % (type(entry).__name__, quoted), quoted)
    ifname = entry.get('ifname')
    if not isinstance(ifname, str) or not ifname:
        raise RdmaParseError('rdma -j link entry without an "ifname" string: %s' % quoted, quoted)
    port = entry.get('port')
    if '/' in ifname:
        # iproute2 before 5.5 printed "ifname": "mlx5_0/1" (and "port" as well)
        ifname, _sep, port_text = ifname.partition('/')
        if not _is_number(port_text) or (port is not None and port != int(port_text)):
            raise RdmaParseError('rdma -j link entry with an odd "ifname" port: %s' % quoted, quoted)
        port = int(port_text)
    if not isinstance(port, int) or isinstance(port, bool):
        raise RdmaParseError('rdma -j link entry without a port number: %s' % quoted, quoted)
    fields = {}
    for key in ('state', 'physical_state', 'netdev', 'subnet_prefix'):
        value = entry.get(key)
        if value is not None and not isinstance(value, str):
            raise RdmaParseError('rdma -j link entry with a %s where the "%s" string belongs: %s'
                                 % (type(value).__name__, key, quoted), quoted)
        fields[key] = value
    for key in _RDMA_LINK_INT_KEYS:
        value = entry.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise RdmaParseError('rdma -j link entry with a %s where the "%s" number belongs: %s'
                                 % (type(value).__name__, key, quoted), quoted)
        fields[key] = value
    caps = entry.get('caps')
    if caps is not None and (not isinstance(caps, list) or not all(isinstance(c, str) for c in caps)):
        raise RdmaParseError('rdma -j link entry with "caps" that are not a list of names: %s' % quoted, quoted)
    return ifname, port, fields


def _parse_rdma_link_json(stripped):
    try:
        data = json.loads(stripped)
    except ValueError as exc:
        raise RdmaParseError('rdma -j link printed invalid JSON (%s)' % exc, printable(stripped, 200))
    if not isinstance(data, list):
        raise RdmaParseError('rdma -j link printed a JSON %s where a list of links belongs: %s'
                             % (type(data).__name__, printable(json.dumps(data), 200)),
                             printable(json.dumps(data), 200))
    ports = []
    seen = {}
    for entry in data:
        quoted = printable(json.dumps(entry, sort_keys=True), 300)
        ifname, port, fields = _json_entry(entry, quoted)
        _add_port(ports, seen, _rdma_record(ifname, port, fields, quoted), quoted)
    return ports


def _parse_rdma_link_text(text):
    ports = []
    seen = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or _RDMA_CAPS_RE.match(line):
            continue
        match = _RDMA_LINK_TEXT_RE.match(_RDMA_CAPS_RE.sub('', line))
        if not match:
            raise RdmaParseError('unrecognised rdma link line: %r' % printable(raw, 200), raw)
        words = (match.group('rest') or '').split()
        if len(words) % 2:
            raise RdmaParseError('rdma link line with a name but no value: %r' % printable(raw, 200), raw)
        fields = dict(zip(words[0::2], words[1::2]))
        for key in _RDMA_LINK_INT_KEYS:
            if key in fields:
                if not _is_number(fields[key]):
                    raise RdmaParseError('rdma link line with %s %r, not a number: %r'
                                         % (key, printable(fields[key], 40), printable(raw, 200)), raw)
                fields[key] = int(fields[key])
        _add_port(ports, seen, _rdma_record(match.group('device'), int(match.group('port')), fields,
                                            printable(raw.strip(), 200)), raw)
    return ports


def parse_rdma_link(text):
    """Parse ``rdma -j link`` (JSON) or ``rdma link`` (text) output into ``(ports, devices)``."""
    stripped = text.strip()
    if stripped.startswith('[') or stripped.startswith('{'):
        ports = _parse_rdma_link_json(stripped)
    else:
        ports = _parse_rdma_link_text(text)
    ports = mark_unknown(sort_ports(ports))
    devices = devices_from_ports(ports)
    return link_functions(ports, devices), devices


# ------------------------------------------------------- what the builders say


def unknown_link_layer_gap(ports):
    """Why ports with a netdev cannot be chosen for lack of facts: a sentence naming the source and the fix.

    None when no port with a netdev (ACTIVE or of unknown state) misses its link layer or its state. The
    NicClusterPolicy and Spiderpool builders quote it instead of saying that nothing was discovered.
    """
    gaps = [p for p in ports or [] if isinstance(p, dict) and p.get('netdev')
            and p.get('state') in ('ACTIVE', None) and (p.get('link_layer') is None or p.get('state') is None)]
    if not gaps:
        return None
    missing = []
    if any(p.get('link_layer') is None for p in gaps):
        missing.append('link layer')
    if any(p.get('state') is None for p in gaps):
        missing.append('port state')
    sources = sorted(set(str(p.get('source') or 'unknown') for p in gaps))
    names = ['%s port %s (%s)' % (p.get('device'), p.get('port'), p.get('netdev')) for p in gaps]
    shown = ', '.join(names[:6]) + (' and %d more' % (len(names) - 6) if len(names) > 6 else '')
    return ('%s unknown from source %s for %s: use source sysfs (rdma_discovery_source: sysfs), or set '
            'rdma_discovery_sysfs_root (the facts module\'s sysfs_root) to the host\'s sysfs so that the missing '
            'facts are read from it' % (' and '.join(missing), ', '.join(sources), shown))


# ---------------------------------------------------------------- selection

_MELLANOX_DEVICE_RE = re.compile(r'^mlx\d+_')


def _check_devices(devices):
    if not isinstance(devices, (list, tuple)):
        raise ValueError('expects the rdma_devices facts (a list), not %s' % type(devices).__name__)
    for device in devices:
        if not isinstance(device, dict) or not isinstance(device.get('device'), str):
            raise ValueError('expects rdma_devices items with a "device" name, not %s'
                             % printable(json.dumps(device, default=str), 200))


def _vf_warning(device):
    pf = device.get('physical_function')
    pf_name = device.get('physical_function_device')
    parent = ('its physical function %s%s' % (pf, ' (%s)' % pf_name if pf_name else '')) if pf \
        else 'its physical function'
    return ('%s (%s) is an SR-IOV virtual function, configured because it was named. Firmware settings belong to '
            'the card and are set through %s: a VF refuses most of them or changes the whole card. Name the PF '
            'instead unless the card\'s documentation says otherwise.'
            % (device['device'], device['pci_address'], parent))


def select_pci_functions(devices, selectors=None):
    """Pick the PCI functions to configure from ``rdma_devices`` facts.

    ``selectors`` lists device names (``mlx5_0``) or PCI addresses (``86:00.0``
    or ``0000:86:00.0``); empty selects every Mellanox HCA (``mlx<N>_*``) that
    is a physical function: firmware is configured per card, through its PF,
    so SR-IOV virtual functions are left out unless named, and then carry a
    ``warning``. Each PCI function is returned once (a LAG device shares its
    function with a port device). A selector that matches nothing raises
    ValueError.
    """
    _check_devices(devices if devices is not None else [])
    devices = list(devices or [])
    if not isinstance(selectors, (list, tuple, type(None))):
        raise ValueError('selectors must be a list of device names or PCI addresses, not %s'
                         % type(selectors).__name__)
    devices = [d for d in devices if normalize_pci_address(d.get('pci_address'))]
    if not selectors:
        chosen = [d for d in devices if _MELLANOX_DEVICE_RE.match(d['device']) and is_virtual_function(d) is not True]
    else:
        chosen = []
        unmatched = []
        for selector in selectors:
            pci = normalize_pci_address(str(selector))
            hits = [d for d in devices if d['device'] == selector
                    or (pci and normalize_pci_address(d['pci_address']) == pci)]
            if not hits:
                unmatched.append(str(selector))
            chosen.extend(hits)
        if unmatched:
            raise ValueError('no RDMA device matches %s; this host has %s' % (
                ', '.join(unmatched),
                ', '.join('%s (%s%s)' % (d['device'], d['pci_address'],
                                         ', SR-IOV VF' if is_virtual_function(d) else '')
                          for d in devices) or 'no PCI RDMA device'))
    seen = set()
    result = []
    for device in sorted(chosen, key=lambda d: normalize_pci_address(d['pci_address'])):
        pci = normalize_pci_address(device['pci_address'])
        if pci in seen:
            continue
        seen.add(pci)
        virtual = is_virtual_function(device)
        item = {'device': device['device'], 'pci_address': pci, 'virtual_function': virtual,
                'physical_function': device.get('physical_function') if virtual else None, 'warning': None}
        if virtual:
            item['warning'] = _vf_warning(dict(device, pci_address=pci))
        result.append(item)
    return result
