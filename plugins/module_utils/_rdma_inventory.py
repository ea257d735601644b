# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Turn RDMA hardware descriptions into port and device records.

Three sources are understood, each reporting only what it can know:

* the kernel's sysfs tree (``/sys/class/infiniband`` and ``/sys/class/net``),
* the text printed by ``ibdev2netdev`` (plain and ``-v``),
* the output of iproute2's ``rdma link`` (``-j`` JSON in its current and older
  forms, and the plain text form).

Everything here is free of Ansible imports so that unit tests call it directly.
"""

from __future__ import annotations

import json
import os
import re

PCI_ADDRESS_RE = re.compile(r'^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$')
SHORT_PCI_ADDRESS_RE = re.compile(r'^[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$')

# sysfs prints the port state as "<number>: <NAME>" (drivers/infiniband/core/sysfs.c).
_STATE_RE = re.compile(r'^\s*(\d+)\s*:\s*(\S.*?)\s*$')
# "100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)", "53.125 Gb/sec (1X HDR)"
_RATE_RE = re.compile(r'^\s*(\d+(?:\.\d+)?)\s*Gb/sec\b')

# iproute2 prints physical states in upper snake case; sysfs in CamelCase.
# Facts use the sysfs spelling so both sources compare equal.
_RDMA_TOOL_PHYS_STATES = {
    'SLEEP': 'Sleep',
    'POLLING': 'Polling',
    'DISABLED': 'Disabled',
    'PORT_CONFIGURATION_TRAINING': 'PortConfigurationTraining',
    'LINK_UP': 'LinkUp',
    'LINK_ERROR_RECOVERY': 'LinkErrorRecovery',
    'PHY_TEST': 'Phy Test',
    'NOP': 'NOP',
}

PORT_KEYS = (
    'device', 'port', 'netdev', 'netdev_state', 'state', 'physical_state',
    'link_layer', 'rate_gbps', 'rate', 'lid', 'sm_lid', 'pci_address',
)
DEVICE_KEYS = ('device', 'pci_address', 'node_guid', 'fw_ver', 'hca_type', 'board_id', 'ports')


class RdmaParseError(ValueError):
    """Raised when input does not have the documented shape.

    ``line`` holds the offending line (or file content) so the caller can quote it.
    """

    def __init__(self, message, line=None):
        super().__init__(message)
        self.line = line
        self.source = None


def empty_port(device, port):
    record = dict.fromkeys(PORT_KEYS)
    record['device'] = device
    record['port'] = port
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
    text = text.strip()
    if SHORT_PCI_ADDRESS_RE.match(text):
        text = '0000:' + text
    if PCI_ADDRESS_RE.match(text):
        return text.lower()
    return None


def parse_state(text, what='state'):
    """Parse a sysfs ``state`` / ``phys_state`` value such as ``4: ACTIVE``."""
    if text is None:
        return None
    match = _STATE_RE.match(text)
    if not match:
        raise RdmaParseError('unexpected %s value %r' % (what, text.strip()), text.strip())
    return match.group(2)


def parse_rate(text):
    """Parse a sysfs rate (``100 Gb/sec (4X EDR)``) into a number of Gb/s."""
    if text is None:
        return None
    match = _RATE_RE.match(text)
    if not match:
        raise RdmaParseError('unexpected rate value %r' % text.strip(), text.strip())
    return _number(match.group(1))


def parse_lid(text):
    """sysfs prints LIDs in hex (``0x3``)."""
    if text is None:
        return None
    try:
        return int(text.strip(), 0)
    except ValueError:
        raise RdmaParseError('unexpected LID value %r' % text.strip(), text.strip())


def _number(text):
    value = float(text)
    return int(value) if value.is_integer() else value


def sort_ports(ports):
    return sorted(ports, key=lambda p: (_natural_key(p['device']), p['port']))


def _natural_key(name):
    return [int(part) if part.isdigit() else part for part in re.split(r'(\d+)', name or '')]


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


# --------------------------------------------------------------------- sysfs


class SysfsReader(object):
    """Read RDMA devices from a tree laid out like the kernel's ``/sys``.

    ``root`` is the sysfs mount point (``/sys`` on a real host, a fixture
    directory in tests and in the lab).
    """

    def __init__(self, root='/sys'):
        self.root = root
        self.class_ib = os.path.join(root, 'class', 'infiniband')
        self.class_net = os.path.join(root, 'class', 'net')

    def has_rdma_class(self):
        return os.path.isdir(self.class_ib)

    def read(self):
        """Return ``(ports, devices)`` lists, sorted by device then port."""
        if not self.has_rdma_class():
            return [], []
        ports = []
        details = {}
        for device in sorted(os.listdir(self.class_ib), key=_natural_key):
            device_dir = os.path.join(self.class_ib, device)
            pci_address = self._pci_address(device_dir)
            details[device] = {
                'pci_address': pci_address,
                'node_guid': self._read(device_dir, 'node_guid'),
                'fw_ver': self._read(device_dir, 'fw_ver'),
                'hca_type': self._read(device_dir, 'hca_type'),
                'board_id': self._read(device_dir, 'board_id'),
            }
            netdevs_by_port = self._function_netdevs(device_dir)
            ports_dir = os.path.join(device_dir, 'ports')
            if not os.path.isdir(ports_dir):
                continue
            for port_name in os.listdir(ports_dir):
                if not port_name.isdigit():
                    continue
                ports.append(self._port(device, int(port_name), os.path.join(ports_dir, port_name),
                                        pci_address, netdevs_by_port))
        ports = sort_ports(ports)
        return ports, devices_from_ports(ports, details)

    def _port(self, device, number, port_dir, pci_address, netdevs_by_port):
        record = empty_port(device, number)
        record['pci_address'] = pci_address
        record['state'] = parse_state(self._read(port_dir, 'state'), 'state')
        record['physical_state'] = parse_state(self._read(port_dir, 'phys_state'), 'phys_state')
        record['rate'] = self._read(port_dir, 'rate')
        record['rate_gbps'] = parse_rate(record['rate'])
        record['link_layer'] = self._read(port_dir, 'link_layer')
        record['lid'] = parse_lid(self._read(port_dir, 'lid'))
        record['sm_lid'] = parse_lid(self._read(port_dir, 'sm_lid'))
        netdev = None
        if record['link_layer'] == 'Ethernet':
            # A RoCE port's netdev is the one its GIDs are bound to; for a LAG
            # device (mlx5_bond_0) that is the bond, not the PF's own netdev.
            netdev = self._gid_netdev(port_dir)
        if netdev is None:
            netdev = netdevs_by_port.get(number)
        record['netdev'] = netdev
        record['netdev_state'] = self._netdev_state(netdev)
        return record

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
        for netdev in sorted(os.listdir(net_dir), key=_natural_key):
            netdev_dir = os.path.join(net_dir, netdev)
            index = 0
            for attribute in ('dev_id', 'dev_port'):
                value = self._read(netdev_dir, attribute)
                if value is None:
                    continue
                try:
                    index = max(index, int(value, 0))
                except ValueError:
                    raise RdmaParseError('unexpected %s value %r in %s' % (attribute, value, netdev_dir), value)
            result.setdefault(index + 1, netdev)
        return result

    def _gid_netdev(self, port_dir):
        ndevs_dir = os.path.join(port_dir, 'gid_attrs', 'ndevs')
        if not os.path.isdir(ndevs_dir):
            return None
        for index in sorted((n for n in os.listdir(ndevs_dir) if n.isdigit()), key=int):
            value = self._read(ndevs_dir, index)
            if value:
                return value
        return None

    def _netdev_state(self, netdev):
        """"Up"/"Down" as ibdev2netdev prints it: carrier first, operstate if carrier is unreadable."""
        if not netdev:
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

    @staticmethod
    def _read(directory, name):
        """Return the stripped content of a sysfs attribute, or None when it cannot be read.

        The kernel refuses some reads (``carrier`` of an interface that is
        administratively down, ``gid_attrs/ndevs/N`` of an InfiniBand port)
        with EINVAL: that is "unknown", not an error.
        """
        try:
            with open(os.path.join(directory, name), 'r') as handle:
                return handle.read().strip()
        except (IOError, OSError):
            return None


# ------------------------------------------------------------- ibdev2netdev

# "mlx5_0 port 1 ==> ib0 (Up)"
_IBDEV2NETDEV_PLAIN_RE = re.compile(
    r'^(?P<device>\S+)\s+port\s+(?P<port>\d+)\s+==>\s+(?P<netdev>\S+)(?:\s+\((?P<netdev_state>[^)]*)\))?\s*$')
# "0000:86:00.0 mlx5_0 (MT4119 - MCX556A-ECAT) CX556A - ConnectX-5 fw 16.26.1040 port 1 (ACTIVE) ==> ens1f0 (Up)"
_IBDEV2NETDEV_VERBOSE_RE = re.compile(
    r'^(?P<pci>\S+)\s+(?P<device>\S+)\s+\((?P<hca>[^)]*)\)\s*(?P<description>.*?)\s*'
    r'\bfw\s+(?P<fw>\S+)\s+port\s+(?P<port>\d+)\s+\(\s*(?P<state>[^)]*?)\s*\)\s+==>\s+'
    r'(?P<netdev>\S+)(?:\s+\((?P<netdev_state>[^)]*)\))?\s*$')


def _netdev_state_word(text):
    """ibdev2netdev prints (Up), (Down) or (NA); some builds print two words such as (Down/Up).

    The first word is the netdev's own carrier state.
    """
    if text is None:
        return None
    word = text.strip().split('/')[0].strip()
    if word.lower() == 'up':
        return 'Up'
    if word.lower() == 'down':
        return 'Down'
    return None


def _na(text):
    text = (text or '').strip()
    return None if text in ('', 'NA', 'N/A') else text


def parse_ibdev2netdev(text):
    """Parse ``ibdev2netdev`` or ``ibdev2netdev -v`` output into ``(ports, devices)``."""
    ports = []
    details = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        match = _IBDEV2NETDEV_VERBOSE_RE.match(line)
        if match:
            record = empty_port(match.group('device'), int(match.group('port')))
            record['pci_address'] = normalize_pci_address(match.group('pci'))
            record['state'] = _na(match.group('state'))
            # "(MT4119 - MCX556A-ECAT)": the second half is the VPD part number,
            # not the kernel's board_id, so board_id stays unknown.
            details.setdefault(record['device'], {
                'pci_address': record['pci_address'],
                'fw_ver': _na(match.group('fw')),
                'hca_type': _na(match.group('hca').partition(' - ')[0]),
            })
        else:
            match = _IBDEV2NETDEV_PLAIN_RE.match(line)
            if not match:
                raise RdmaParseError('unrecognised ibdev2netdev line: %r' % raw, raw)
            record = empty_port(match.group('device'), int(match.group('port')))
        record['netdev'] = match.group('netdev')
        record['netdev_state'] = _netdev_state_word(match.group('netdev_state'))
        ports.append(record)
    ports = sort_ports(ports)
    return ports, devices_from_ports(ports, details)


# ----------------------------------------------------------------- rdma link

# "link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens6f0np0"
# "0/1: mlx5_0/1: state ACTIVE physical_state LINK_UP netdev ens6f0np0" (older iproute2)
_RDMA_LINK_TEXT_RE = re.compile(
    r'^(?:link\s+|\d+/\d+:\s+)(?P<device>[^/\s]+)/(?P<port>\d+):?(?P<rest>(?:\s+\S+\s+\S+)*)\s*$')


def _rdma_phys_state(text):
    if text is None:
        return None
    return _RDMA_TOOL_PHYS_STATES.get(text.upper(), text)


def _rdma_record(device, port, state, phys_state, netdev):
    record = empty_port(device, port)
    record['state'] = state
    record['physical_state'] = _rdma_phys_state(phys_state)
    record['netdev'] = netdev or None
    return record


def _rdma_json_entries(data):
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        # Some iproute2 releases wrap the array: {"link": [...]}
        for value in data.values():
            if isinstance(value, list):
                return value
    raise RdmaParseError('rdma -j link printed JSON that is neither an array nor an object holding one',
                         json.dumps(data)[:200])


def parse_rdma_link(text):
    """Parse ``rdma -j link`` (JSON) or ``rdma link`` (text) output into ``(ports, devices)``."""
    stripped = text.strip()
    ports = []
    if stripped.startswith('[') or stripped.startswith('{'):
        try:
            data = json.loads(stripped)
        except ValueError as exc:
            raise RdmaParseError('rdma -j link printed invalid JSON (%s)' % exc, stripped.splitlines()[0])
        for entry in _rdma_json_entries(data):
            if not isinstance(entry, dict) or 'ifname' not in entry:
                raise RdmaParseError('rdma -j link entry without "ifname": %s' % json.dumps(entry), json.dumps(entry))
            ifname = str(entry['ifname'])
            port = entry.get('port')
            if '/' in ifname:
                ifname, _sep, port_text = ifname.partition('/')
                port = port_text
            try:
                port = int(port)
            except (TypeError, ValueError):
                raise RdmaParseError('rdma -j link entry without a port number: %s' % json.dumps(entry),
                                     json.dumps(entry))
            ports.append(_rdma_record(ifname, port, entry.get('state'), entry.get('physical_state'),
                                      entry.get('netdev')))
    else:
        for raw in text.splitlines():
            line = raw.strip()
            if not line:
                continue
            match = _RDMA_LINK_TEXT_RE.match(line)
            if not match:
                raise RdmaParseError('unrecognised rdma link line: %r' % raw, raw)
            words = match.group('rest').split()
            fields = dict(zip(words[0::2], words[1::2]))
            ports.append(_rdma_record(match.group('device'), int(match.group('port')), fields.get('state'),
                                      fields.get('physical_state'), fields.get('netdev')))
    ports = sort_ports(ports)
    return ports, devices_from_ports(ports)


# ---------------------------------------------------------------- selection

_MELLANOX_DEVICE_RE = re.compile(r'^mlx\d+_')


def select_pci_functions(devices, selectors=None):
    """Pick the PCI functions to configure from ``rdma_devices`` facts.

    ``selectors`` lists device names (``mlx5_0``) or PCI addresses (``86:00.0``
    or ``0000:86:00.0``); empty selects every Mellanox HCA (``mlx<N>_*``). Each
    PCI function is returned once (a LAG device shares its function with a
    port device). A selector that matches nothing raises ValueError.
    """
    devices = [d for d in devices or [] if d.get('pci_address')]
    if not selectors:
        chosen = [d for d in devices if _MELLANOX_DEVICE_RE.match(d['device'])]
    else:
        chosen = []
        unmatched = []
        for selector in selectors:
            pci = normalize_pci_address(str(selector))
            hits = [d for d in devices if d['device'] == selector or (pci and d['pci_address'] == pci)]
            if not hits:
                unmatched.append(str(selector))
            chosen.extend(hits)
        if unmatched:
            raise ValueError('no RDMA device matches %s; this host has %s' % (
                ', '.join(unmatched),
                ', '.join('%s (%s)' % (d['device'], d['pci_address']) for d in devices) or 'no PCI RDMA device'))
    seen = set()
    result = []
    for device in sorted(chosen, key=lambda d: d['pci_address']):
        if device['pci_address'] not in seen:
            seen.add(device['pci_address'])
            result.append({'device': device['device'], 'pci_address': device['pci_address']})
    return result
