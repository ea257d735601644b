# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The management path of a node: which interfaces carry the addresses by which the node is reached and run, and
which PCI functions and RDMA devices lie under them.

Before a disruptive step (firmware reset, RDMA driver restart) the rollout asks whether the step would take down
the interface that carries the Ansible connection, the default route or kubelet's node IP: on the A100 nodes of the
InfiniBand field report ``bond0`` runs over the ConnectX-4 Lx ports of ``mlx5_bond_0``.

Inputs are what the node says about itself: ``ip -json address show`` and ``ip -json route show default`` (iproute2),
the server side of ``SSH_CONNECTION``, kubelet's ``--node-ip`` flag and the kernel's sysfs, walked the way the
kernel links stacked interfaces: ``/sys/class/net/<if>/lower_<dev>`` (bond slaves, VLAN parents, macvlan parents),
``/sys/class/net/<if>/device`` (the PCI function), ``<function>/physfn`` (an SR-IOV VF's PF),
``<function>/infiniband/<dev>`` (its RDMA device) and ``<function>/driver`` (its kernel driver).

Free of Ansible imports; the module (ibdev2netdev_facts, option ``management_path``) runs the tools and reads files.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re

from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import list_dir
from ansible_collections.gpunet.rdma.plugins.module_utils._tool_runner import ToolRunner, fixed

# iproute2's ip with JSON output (4.14 and later): the addresses, and the default route of one family.
IP = ToolRunner('ip', {
    'json': fixed('-json'),
    'family': lambda family: ['-%s' % family] if family else [],
    'addresses': fixed('address', 'show'),
    'default_route': fixed('route', 'show', 'default'),
})

# Flags kubelet takes its node address from (kubeadm writes the first into kubeadm-flags.env).
_NODE_IP_FLAG = re.compile(r'--node-ip(?:=|\s+)["\']?([0-9A-Fa-f:.,]+)')
_PCI_ADDRESS = re.compile(r'^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$')


class ManagementPathError(ValueError):
    """Input that cannot be read as what it claims to be; the message says which and why."""


def _address(text, what):
    try:
        return ipaddress.ip_address(str(text).split('%', 1)[0])
    except ValueError:
        raise ManagementPathError('%s: %r is not an IP address' % (what, text))


def parse_ip_addresses(text):
    """``ip -json address show`` -> ``{ifname: [address, ...]}`` (addresses as strings, in the tool's order).

    Refuses what is not that tool's JSON (a list of objects with ``ifname``), so that a changed or foreign output is
    named instead of read as "no interface".
    """
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ManagementPathError('ip -json address show: not JSON (%s)' % exc)
    if not isinstance(data, list):
        raise ManagementPathError('ip -json address show: expected a list of interfaces, got %s' % type(data).__name__)
    result = {}
    for entry in data:
        # iproute2 prints {} for links it filtered out (e.g. with a "dev" filter); they carry nothing.
        if entry == {}:
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get('ifname'), str):
            raise ManagementPathError('ip -json address show: an interface without ifname: %r' % (entry,))
        addresses = result.setdefault(entry['ifname'], [])
        for info in entry.get('addr_info') or []:
            if isinstance(info, dict) and info.get('local'):
                addresses.append(str(_address(info['local'], 'ip -json address show (%s)' % entry['ifname'])))
    return result


def parse_default_routes(text, family='inet'):
    """``ip -json route show default`` -> ``[{dev, gateway, metric, family}]`` (multipath routes give one per hop)."""
    try:
        data = json.loads(text) if text.strip() else []
    except ValueError as exc:
        raise ManagementPathError('ip -json route show default: not JSON (%s)' % exc)
    if not isinstance(data, list):
        raise ManagementPathError('ip -json route show default: expected a list of routes, got %s'
                                  % type(data).__name__)
    routes = []
    for entry in data:
        if not isinstance(entry, dict):
            raise ManagementPathError('ip -json route show default: a route that is not an object: %r' % (entry,))
        hops = entry.get('nexthops') if isinstance(entry.get('nexthops'), list) else [entry]
        for hop in hops:
            if isinstance(hop, dict) and hop.get('dev'):
                routes.append({'dev': hop['dev'], 'gateway': hop.get('gateway'), 'metric': entry.get('metric', 0),
                               'family': family})
    return routes


def kubelet_node_ips(texts):
    """kubelet's ``--node-ip`` addresses from flag files (kubeadm-flags.env, /etc/default/kubelet, ...).

    ``texts`` maps a path to its content; comments are ignored. Dual-stack nodes give two, comma-separated.
    """
    found = []
    for path, text in sorted((texts or {}).items()):
        for line in (text or '').splitlines():
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            for match in _NODE_IP_FLAG.finditer(line):
                for item in match.group(1).split(','):
                    if item:
                        address = str(_address(item, '%s: --node-ip' % path))
                        if address not in found:
                            found.append(address)
    return found


def connection_address(ssh_connection):
    """The node's own address of an SSH connection: the third field of ``SSH_CONNECTION``, or None."""
    fields = (ssh_connection or '').split()
    if len(fields) != 4:
        return None
    try:
        return str(_address(fields[2], 'SSH_CONNECTION'))
    except ManagementPathError:
        return None


class SysfsNet(object):
    """Stacked interfaces and their PCI functions, read from a sysfs tree (``/sys`` or a fixture root)."""

    def __init__(self, root):
        self.root = root

    def _net(self, name, *rest):
        return os.path.join(self.root, 'class', 'net', name, *rest)

    def exists(self, name):
        return os.path.isdir(self._net(name))

    def lowers(self, name):
        """The interfaces ``name`` runs over (``lower_<dev>`` links), sorted."""
        # An interface that cannot be listed is an error, not "nothing below it": the guard would miss the ports
        # that carry the connection.
        entries = list_dir(self._net(name))
        return sorted(entry[len('lower_'):] for entry in entries if entry.startswith('lower_'))

    def stack(self, name):
        """``name`` and every interface below it, depth first (a VLAN over a bond over two ports: all four)."""
        seen = []
        todo = [name]
        while todo:
            current = todo.pop(0)
            if current in seen:
                continue
            seen.append(current)
            todo.extend(self.lowers(current))
        return seen

    def pci_function(self, name):
        """The PCI address of the interface's device, or None for a virtual interface."""
        link = self._net(name, 'device')
        if not os.path.exists(link):
            return None
        address = os.path.basename(os.path.realpath(link))
        return address if _PCI_ADDRESS.match(address) else None

    def _function_dir(self, address):
        return os.path.join(self.root, 'bus', 'pci', 'devices', address)

    def physfn(self, address):
        link = os.path.join(self._function_dir(address), 'physfn')
        if not os.path.exists(link):
            return None
        parent = os.path.basename(os.path.realpath(link))
        return parent if _PCI_ADDRESS.match(parent) else None

    def rdma_devices(self, address):
        return list_dir(os.path.join(self._function_dir(address), 'infiniband'))

    def driver(self, address):
        link = os.path.join(self._function_dir(address), 'driver')
        return os.path.basename(os.path.realpath(link)) if os.path.exists(link) else None


def adapter_of(address):
    """``0000:3b:00.1`` -> ``0000:3b:00``: the functions of one adapter share it (a firmware reset takes them all)."""
    return address.rsplit('.', 1)[0] if address else None


def management_path(addresses_by_interface, sources, sysfs, default_routes=()):
    """Which interfaces carry the node's management addresses, and what lies under them.

    ``sources`` is a list of ``(source, address)``: ``connection`` (the SSH connection's address on this node),
    ``kubelet_node_ip``, ``declared`` (given by the inventory). ``default_routes`` adds each route's interface with
    source ``default_route``. Returns ``{interfaces, pci_functions, adapters, rdma_devices, drivers, unresolved}``.
    """
    owners = {}
    for interface, addresses in addresses_by_interface.items():
        for address in addresses:
            owners.setdefault(address, []).append(interface)
    found = {}
    unresolved = []

    def add(interface, source, address=None):
        item = found.setdefault(interface, {'name': interface, 'sources': [], 'addresses': []})
        if source not in item['sources']:
            item['sources'].append(source)
        if address and address not in item['addresses']:
            item['addresses'].append(address)

    for source, address in sources:
        if not address:
            continue
        address = str(_address(address, source))
        interfaces = [name for name in owners.get(address, []) if name != 'lo']
        if not interfaces:
            unresolved.append({'source': source, 'address': address})
        for interface in interfaces:
            add(interface, source, address)
    for route in default_routes or ():
        add(route['dev'], 'default_route')

    functions, adapters, devices, drivers = [], [], [], []
    for item in sorted(found.values(), key=lambda entry: entry['name']):
        item['stack'] = sysfs.stack(item['name'])
        item['pci_functions'] = []
        item['rdma_devices'] = []
        item['drivers'] = []
        for name in item['stack']:
            address = sysfs.pci_function(name)
            for function in [address, sysfs.physfn(address) if address else None]:
                if function and function not in item['pci_functions']:
                    item['pci_functions'].append(function)
        for function in item['pci_functions']:
            for device in sysfs.rdma_devices(function):
                if device not in item['rdma_devices']:
                    item['rdma_devices'].append(device)
            driver = sysfs.driver(function)
            if driver and driver not in item['drivers']:
                item['drivers'].append(driver)
        item['over_rdma'] = bool(item['rdma_devices'])
        for target, values in ((functions, item['pci_functions']), (devices, item['rdma_devices']),
                               (drivers, item['drivers']), (adapters, [adapter_of(f) for f in item['pci_functions']])):
            target.extend(value for value in values if value not in target)
    return {
        'interfaces': sorted(found.values(), key=lambda entry: entry['name']),
        'pci_functions': sorted(functions), 'adapters': sorted(adapters), 'rdma_devices': sorted(devices),
        'drivers': sorted(drivers), 'unresolved': unresolved,
    }


def _interface_text(item):
    text = item['name']
    if len(item['stack']) > 1:
        text += ' (over %s)' % ', '.join(item['stack'][1:])
    return '%s, which carries %s' % (text, ' and '.join(
        {'connection': "the Ansible connection's address", 'default_route': 'the default route',
         'kubelet_node_ip': "kubelet's node IP", 'declared': 'a declared management address'}.get(source, source)
        + (' %s' % ', '.join(item['addresses']) if source != 'default_route' and item['addresses'] else '')
        for source in item['sources']))


def guard(ledger, path, allow_variable='rollout_allow_management_path_disruption'):
    """The allowed pending steps of ``ledger`` that would cut the node off through its management path.

    A firmware reset takes down every function of each adapter with pending firmware changes (the firmware stage's
    ``detail.devices[].pending``); an RDMA driver restart (openibd restart) unloads mlx5_core, and with it every
    interface over any RDMA device. Returns ``[{action, reason}]`` for the ledger's ``hold``; a reboot is not held
    (the node comes back with its path), nor are steps that leave interfaces up (netns switch, runtime restart).
    """
    holds = []
    if not isinstance(path, dict) or not path.get('interfaces'):
        return holds
    allowed = set()
    for name, entry in sorted((ledger or {}).items()):
        for item in (entry or {}).get('pending') or []:
            if isinstance(item, dict) and item.get('allowed'):
                allowed.add(item.get('action'))
    over_rdma = [item for item in path['interfaces'] if item.get('rdma_devices')]
    if 'driver_restart' in allowed and over_rdma:
        holds.append({'action': 'driver_restart', 'reason': (
            'restarting the RDMA driver takes down %s; restart it in a maintenance window from the console, '
            'or set %s: true' % ('; '.join(_interface_text(item) for item in over_rdma), allow_variable))})
    if 'firmware_reset' in allowed:
        firmware = (ledger or {}).get('firmware') or {}
        reset = [device for device in (firmware.get('detail') or {}).get('devices') or []
                 if isinstance(device, dict) and device.get('pending')]
        reset_adapters = dict((adapter_of(device.get('pci_address')), device.get('device') or device.get('pci_address'))
                              for device in reset if device.get('pci_address'))
        hit = [item for item in path['interfaces']
               if set(adapter_of(function) for function in item.get('pci_functions') or []) & set(reset_adapters)]
        if hit:
            names = sorted(set(reset_adapters[adapter_of(function)] for item in hit
                               for function in item.get('pci_functions') or [] if adapter_of(function) in reset_adapters))
            holds.append({'action': 'firmware_reset', 'reason': (
                'a firmware reset of %s takes down %s; activate with a reboot (nic_firmware_apply: reboot) or set '
                '%s: true' % (', '.join(names), '; '.join(_interface_text(item) for item in hit), allow_variable))})
    return holds
