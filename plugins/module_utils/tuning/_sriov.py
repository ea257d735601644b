# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""SR-IOV virtual functions of RDMA NICs through sysfs, by the kernel's rules.

The kernel's ABI (Documentation/ABI/testing/sysfs-bus-pci) and ``sriov_numvfs_store`` (drivers/pci/iov.c) decide
what a write to ``<PF>/sriov_numvfs`` does:

* the count cannot exceed ``sriov_totalvfs`` (ERANGE); the PF of a ConnectX card shows the firmware's
  ``NUM_OF_VFS`` there, and has no SR-IOV attribute at all while the firmware's ``SRIOV_EN`` is false;
* writing the count the PF has is a no-op;
* a PF without a driver, or whose driver cannot configure SR-IOV through sysfs, answers ENOENT (ENOSYS before
  Linux 4.x);
* a non-zero count on a PF that has VFs is EBUSY: the VFs must be destroyed (write 0) first, which takes them away
  from whatever uses them (pods, VMs);
* ``sriov_drivers_autoprobe`` is read when VFs are created: it decides whether they are bound to the PF's driver
  (netdev and RDMA device) or left unbound (for VFIO).

This module reads a PF and its VFs (``virtfnN`` links), plans what a wanted count takes - nothing, a creation on a
PF without VFs, or a change that destroys the VFs first - and explains the kernel's refusals. Writes go to the
attribute itself, once, through ``write_attribute`` (truncating, never creating: sysfs has no temporary file to
rename, and a file-backed tree must not keep the tail of a longer old value).

Free of Ansible imports.
"""

from __future__ import annotations

import errno
import os
import re

from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import (
    HostReadError,
    list_dir,
    printable,
    read_link,
    read_value,
    write_attribute,
)
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import normalize_pci_address

# The kernel prints counts with "%u\n" (sriov_totalvfs_show, sriov_numvfs_show).
_COUNT_RE = re.compile(r'^[0-9]+$')
_VIRTFN_RE = re.compile(r'^virtfn([0-9]+)$')
# What a firmware parameter value looks like in mlxconfig's tables: "8", "True(1)", "False(0)", "0x10".
_FIRMWARE_VALUE_RE = re.compile(r'^\s*(?:[A-Za-z_][A-Za-z0-9_]*)?\s*\(?\s*(0x[0-9a-fA-F]+|[0-9]+)\s*\)?\s*$')
ACTIONS = ('none', 'create', 'change', 'pending', 'waiting_for_firmware')


class SriovError(ValueError):
    """A PF that cannot get the wanted VFs; the message names the PF and what to do."""


def parse_count(text, path):
    """A count as the kernel prints it; SriovError naming the file otherwise."""
    value = (text or '').strip()
    if not _COUNT_RE.match(value):
        raise SriovError('%s holds %r, not a count as the kernel prints it; is this a sysfs tree?'
                         % (path, printable(value, 40)))
    return int(value)


def firmware_number(value):
    """The number in a firmware value as mlxconfig prints it (``8``, ``True(1)``, ``0x10``); None when unknown."""
    if value is None or isinstance(value, bool):
        return None if value is None else int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, (list, dict)):
        return None
    match = _FIRMWARE_VALUE_RE.match(str(value))
    if not match:
        text = str(value).strip().lower()
        return {'true': 1, 'false': 0}.get(text)
    return int(match.group(1), 0)


def write_errno_text(number):
    return os.strerror(number) if number else 'unknown error'


class SysfsPci(object):
    """PCI functions and their SR-IOV attributes under a sysfs mount point (``/sys`` or a fixture tree)."""

    def __init__(self, root):
        self.root = root
        self.devices = os.path.join(root, 'bus', 'pci', 'devices')

    # ------------------------------------------------------------------ reading
    # A missing attribute, link or directory is an answer (no SR-IOV, no driver, no VF); one that exists and cannot be
    # read (a directory where the attribute belongs, permission denied) is not, and fails naming the file.
    def _read(self, path):
        try:
            return read_value(path)
        except HostReadError as exc:
            raise SriovError('%s; point sysfs_root at the sysfs mount (on a host: run as root).' % exc)

    def _names(self, directory):
        try:
            return list_dir(directory)
        except HostReadError as exc:
            raise SriovError('%s; point sysfs_root at the sysfs mount (on a host: run as root).' % exc)

    def _link_name(self, path):
        try:
            target = read_link(path)
        except HostReadError as exc:
            raise SriovError('%s; point sysfs_root at the sysfs mount (on a host: run as root).' % exc)
        return None if target is None else os.path.basename(target.rstrip('/'))

    def function_dir(self, pci):
        return os.path.join(self.devices, pci)

    def attribute(self, pci, name):
        return os.path.join(self.function_dir(pci), name)

    def count(self, pci, name):
        path = self.attribute(pci, name)
        text = self._read(path)
        return None if text is None else parse_count(text, path)

    def driver(self, pci):
        return self._link_name(os.path.join(self.function_dir(pci), 'driver'))

    def netdevs(self, pci):
        return self._names(os.path.join(self.function_dir(pci), 'net'))

    def rdma_devices(self, pci):
        return self._names(os.path.join(self.function_dir(pci), 'infiniband'))

    def physical_function(self, pci):
        return normalize_pci_address(self._link_name(os.path.join(self.function_dir(pci), 'physfn')))

    def virtual_functions(self, pci):
        """``[{index, pci_address, driver, netdev, rdma_device}]`` from the PF's ``virtfnN`` links, by index."""
        result = []
        for name in self._names(self.function_dir(pci)):
            match = _VIRTFN_RE.match(name)
            if not match:
                continue
            address = normalize_pci_address(self._link_name(os.path.join(self.function_dir(pci), name)))
            netdevs = self.netdevs(address) if address else []
            rdma = self.rdma_devices(address) if address else []
            result.append({'index': int(match.group(1)), 'pci_address': address,
                           'driver': self.driver(address) if address else None,
                           'netdev': netdevs[0] if netdevs else None, 'rdma_device': rdma[0] if rdma else None})
        return sorted(result, key=lambda vf: vf['index'])

    # ------------------------------------------------------------------ names
    def resolve(self, name):
        """The PCI address of ``name``: a PCI address, a netdev (``class/net``) or an RDMA device."""
        text = str(name).strip()
        pci = normalize_pci_address(text)
        if pci:
            if not os.path.isdir(self.function_dir(pci)):
                raise SriovError('%s: no PCI function %s in %s; this host has these SR-IOV capable PFs: %s'
                                 % (text, pci, self.devices, self.describe_pfs()))
            return pci
        for kind in ('net', 'infiniband'):
            link = os.path.join(self.root, 'class', kind, text)
            if text and '/' not in text and os.path.lexists(os.path.join(link, 'device')):
                found = normalize_pci_address(os.path.basename(os.path.realpath(os.path.join(link, 'device'))))
                if found:
                    return found
        raise SriovError('%s is neither a PCI address nor a network interface or RDMA device of this host; '
                         'SR-IOV capable PFs here: %s' % (printable(text, 80), self.describe_pfs()))

    def pfs(self):
        """PCI addresses of the functions with the SR-IOV capability (``sriov_totalvfs``)."""
        return [name for name in self._names(self.devices)
                if os.path.exists(os.path.join(self.devices, name, 'sriov_totalvfs'))]

    def describe(self, pci):
        """``0000:0b:00.0 (mlx5_0, enp11s0f0np0)`` for messages; the bare address when its names cannot be read."""
        try:
            names = self.rdma_devices(pci) + self.netdevs(pci)
        except SriovError:
            names = []
        return '%s (%s)' % (pci, ', '.join(names)) if names else pci

    def describe_pfs(self):
        return ', '.join(self.describe(pci) for pci in self.pfs()) or 'none'

    # ------------------------------------------------------------------ one PF
    def read_pf(self, pci):
        """The SR-IOV state of one PCI function (``capable`` false: no SR-IOV capability)."""
        autoprobe = self.count(pci, 'sriov_drivers_autoprobe')
        record = {
            'pci_address': pci,
            'name': self.describe(pci),
            'driver': self.driver(pci),
            'netdevs': self.netdevs(pci),
            'rdma_devices': self.rdma_devices(pci),
            'physical_function': self.physical_function(pci),
            'capable': os.path.exists(self.attribute(pci, 'sriov_totalvfs')),
            'sriov_totalvfs': self.count(pci, 'sriov_totalvfs'),
            'sriov_numvfs': self.count(pci, 'sriov_numvfs'),
            'drivers_autoprobe': None if autoprobe is None else bool(autoprobe),
            'vfs': self.virtual_functions(pci),
        }
        return record

    def check_consistent(self, record):
        """The kernel creates one ``virtfnN`` per VF before the write returns; a tree where they differ is not a
        kernel's sysfs (a plain file accepts any number)."""
        links = len(record['vfs'])
        if record['sriov_numvfs'] is not None and links != record['sriov_numvfs']:
            raise SriovError('%s: sriov_numvfs says %d VFs but there are %d virtfnN links in %s. The kernel creates '
                             'the links with the VFs, so %s is not the kernel\'s sysfs (a plain file accepts any '
                             'write), or another process is changing the VFs right now; point sysfs_root at the '
                             'sysfs mount.' % (record['name'], record['sriov_numvfs'], links,
                                               self.function_dir(record['pci_address']), self.root))

    # ------------------------------------------------------------------ writing
    def write(self, pci, name, value):
        """Write ``value`` to the attribute as the kernel reads it (``%d\\n`` in one write); OSError as the kernel
        answers. No O_CREAT: the attribute exists, and sysfs refuses new files."""
        write_attribute(self.attribute(pci, name), '%d\n' % value)


# ---------------------------------------------------------------------- planning


FIRMWARE_PARAMETERS = (('num_of_vfs', 'NUM_OF_VFS'), ('sriov_en', 'SRIOV_EN'))
_FIRMWARE_SHAPE = ('{pci_address, values: {NUM_OF_VFS: {current, next_boot}, SRIOV_EN: {current, next_boot}}}, as '
                   'the devices of the firmware stage\'s ledger detail (ansible_facts.gpunet_rdma_ledger.firmware.detail'
                   '.devices) hold them')


def _shape(value):
    return 'a list' if isinstance(value, list) else 'a map' if isinstance(value, dict) else (
        'a %s (%s)' % (type(value).__name__, printable(repr(value), 60)))


def check_firmware(firmware):
    """The problems of firmware records of another shape than ``firmware_limits`` reads, one sentence each.

    Only what the module reads is checked (``pci_address``, ``values`` and its NUM_OF_VFS and SRIOV_EN entries); a
    record of another shape would otherwise be skipped in silence, or end in a Python error.
    """
    problems = []
    if firmware is None:
        return problems
    if not isinstance(firmware, list):
        return ['firmware is %s, not a list of device records %s' % (_shape(firmware), _FIRMWARE_SHAPE)]
    for index, device in enumerate(firmware):
        where = 'firmware[%d]' % index
        if not isinstance(device, dict):
            problems.append('%s is %s, not a device record %s' % (where, _shape(device), _FIRMWARE_SHAPE))
            continue
        address = device.get('pci_address')
        if address is not None and not isinstance(address, str):
            problems.append('%s.pci_address is %s, not a PCI address such as 0000:0b:00.0' % (where, _shape(address)))
        values = device.get('values')
        if values is None:
            continue
        if not isinstance(values, dict):
            problems.append('%s.values is %s, not a map of parameter name to {current, next_boot} %s'
                            % (where, _shape(values), _FIRMWARE_SHAPE))
            continue
        for _key, name in FIRMWARE_PARAMETERS:
            entry = values.get(name)
            if entry is None:
                continue
            if not isinstance(entry, dict):
                problems.append('%s.values.%s is %s, not {current, next_boot} (the Current and Next Boot columns of '
                                'mlxconfig -e q)' % (where, name, _shape(entry)))
                continue
            for column in ('current', 'next_boot'):
                if isinstance(entry.get(column), (list, dict)):
                    problems.append('%s.values.%s.%s is %s, not a value as mlxconfig prints it (8, True(1))'
                                    % (where, name, column, _shape(entry[column])))
    return problems


def firmware_limits(firmware, pci):
    """``{num_of_vfs: {current, next_boot}, sriov_en: {...}}`` of ``pci`` from firmware records, or None.

    ``firmware`` is the ``devices`` list of the firmware stage's ledger detail (role nic_firmware) or the same shape
    built from an mlxconfig query: ``{pci_address, values: {NAME: {current, next_boot}}}``. Values are what mlxconfig
    prints (``8``, ``True(1)``); a missing parameter is None. Records of another shape (see ``check_firmware``, which
    the module runs first) are skipped, never a Python error.
    """
    for device in firmware if isinstance(firmware, list) else []:
        if not isinstance(device, dict) or normalize_pci_address(device.get('pci_address')) != pci:
            continue
        values = device.get('values') if isinstance(device.get('values'), dict) else {}
        result = {}
        for key, name in FIRMWARE_PARAMETERS:
            entry = values.get(name)
            if not isinstance(entry, dict):
                result[key] = None
                continue
            result[key] = {'current': firmware_number(entry.get('current')),
                           'next_boot': firmware_number(entry.get('next_boot'))}
        if result['num_of_vfs'] is None and result['sriov_en'] is None:
            return None
        return result
    return None


def _firmware_fix(wanted):
    return ('set SRIOV_EN: true and NUM_OF_VFS: %d (or more) in gpunet_rdma_fabric.firmware.params (role '
            'nic_firmware), then activate it (nic_firmware_apply: mlxfwreset or reboot)' % wanted)


def plan_pf(record, wanted, autoprobe=None, allow_change=False, create=True, firmware=None):
    """What ``wanted`` VFs take on the PF of ``record`` (``read_pf``): ``{action, writes, reason}``.

    ``action``: ``none`` (the count is right), ``create`` (0 -> N, nothing to destroy), ``change`` (the PF has VFs:
    write 0, then the count; only with ``allow_change``), ``pending`` (a creation or change this run may not do),
    ``waiting_for_firmware`` (the count needs the firmware's Next Boot ``NUM_OF_VFS``, not active yet).
    ``writes`` are ``(attribute, value)`` in order. SriovError when the kernel or the firmware would refuse.
    """
    name = record['name']
    if record['physical_function']:
        raise SriovError('%s is an SR-IOV virtual function of %s; VFs are created on the physical function: name %s.'
                         % (name, record['physical_function'], record['physical_function']))
    limits = firmware_limits(firmware, record['pci_address'])
    if limits:
        enabled, count = limits['sriov_en'] or {}, limits['num_of_vfs'] or {}
        if wanted > 0 and enabled.get('next_boot') == 0:
            raise SriovError('%s: %d VFs wanted, but the firmware has SR-IOV disabled (SRIOV_EN False, also after the '
                             'next boot); %s.' % (name, wanted, _firmware_fix(wanted)))
        if count.get('next_boot') is not None and wanted > count['next_boot']:
            raise SriovError('%s: %d VFs wanted, but the firmware allows %d (NUM_OF_VFS %s after the next boot); %s.'
                             % (name, wanted, count['next_boot'], count['next_boot'], _firmware_fix(wanted)))
    if not record['capable']:
        if wanted == 0:
            return {'action': 'none', 'writes': [], 'reason': 'no SR-IOV capability, no VF wanted'}
        if limits and (limits['num_of_vfs'] or {}).get('next_boot', 0) and wanted <= limits['num_of_vfs']['next_boot']:
            return {'action': 'waiting_for_firmware', 'writes': [],
                    'reason': 'SR-IOV is enabled in the firmware for the next boot (SRIOV_EN, NUM_OF_VFS %d); the '
                              'VFs can be created after a firmware reset or reboot' % limits['num_of_vfs']['next_boot']}
        raise SriovError('%s has no SR-IOV capability (no sriov_totalvfs): the running firmware has SR-IOV disabled, '
                         'or the card has none; %s.' % (name, _firmware_fix(wanted)))
    total, current = record['sriov_totalvfs'], record['sriov_numvfs']
    if total is None:
        raise SriovError('%s has no readable sriov_totalvfs (it went away while it was read?); point sysfs_root at '
                         'the sysfs mount.' % name)
    if current is None:
        raise SriovError('%s has sriov_totalvfs but no readable sriov_numvfs; point sysfs_root at the sysfs mount.'
                         % name)
    if wanted > total:
        next_boot = ((limits or {}).get('num_of_vfs') or {}).get('next_boot')
        if next_boot is not None and wanted <= next_boot:
            return {'action': 'waiting_for_firmware', 'writes': [],
                    'reason': 'the firmware allows %d VFs after the next boot (NUM_OF_VFS), %d now (sriov_totalvfs); '
                              'the VFs can be created after a firmware reset or reboot' % (next_boot, total)}
        raise SriovError('%s: %d VFs wanted, more than sriov_totalvfs %d (the kernel refuses with ERANGE); the '
                         'firmware allows %d: %s.' % (name, wanted, total, total, _firmware_fix(wanted)))
    writes = []
    if autoprobe is not None:
        if record['drivers_autoprobe'] is None:
            if not autoprobe:
                raise SriovError('%s has no sriov_drivers_autoprobe (a kernel before 4.12): VFs are always bound to '
                                 'the PF\'s driver there; leave drivers_autoprobe unset or true.' % name)
        elif record['drivers_autoprobe'] != autoprobe:
            writes.append(('sriov_drivers_autoprobe', int(autoprobe)))
    if wanted == current:
        return {'action': 'none', 'writes': writes,
                'reason': 'has %d VFs%s' % (current, '; sriov_drivers_autoprobe applies when VFs are created again'
                                            if writes and current else '')}
    if not record['driver']:
        raise SriovError('%s has no driver bound (no driver link), so the kernel cannot create VFs (ENOENT): load or '
                         'bind the PF\'s driver (mlx5_core) first.' % name)
    if current == 0:
        if not create:
            return {'action': 'pending', 'writes': [], 'reason': '0 -> %d VFs waits for the node\'s batch' % wanted}
        return {'action': 'create', 'writes': writes + [('sriov_numvfs', wanted)],
                'reason': '0 -> %d VFs: nothing exists that could be in use' % wanted}
    reason = ('%d -> %d VFs destroys the %d VFs the PF has (pods or VMs using them lose them)'
              % (current, wanted, current))
    if not allow_change:
        return {'action': 'pending', 'writes': [], 'reason': reason}
    writes = writes + [('sriov_numvfs', 0)] + ([('sriov_numvfs', wanted)] if wanted else [])
    return {'action': 'change', 'writes': writes, 'reason': reason}


def explain_write_error(exc, record, attribute, value):
    """A message for an OSError of a write, naming the PF, what the kernel said and what to do."""
    number = getattr(exc, 'errno', None)
    said = write_errno_text(number)
    name = record['name']
    head = '%s: writing %d to %s failed: %s' % (name, value, attribute, said)
    if attribute == 'sriov_drivers_autoprobe':
        hint = 'the kernel takes 0 or 1 there'
    elif number == errno.ERANGE:
        hint = ('%d is more than sriov_totalvfs (%s): the firmware allows fewer VFs; %s'
                % (value, record['sriov_totalvfs'], _firmware_fix(value)))
    elif number == errno.EBUSY:
        if record['sriov_numvfs']:
            hint = ('the PF has %d VFs and the kernel takes a new count only after 0 (allow_change lets this module '
                    'write 0 first)' % record['sriov_numvfs'])
        else:
            hint = ('the PF driver refused while no VF exists: the device is busy (a firmware reset or driver '
                    'reload in progress, switchdev mode, VFs still assigned to VMs); see the kernel log (dmesg) for '
                    '%s' % record['pci_address'])
    elif number in (errno.ENOENT, errno.ENOSYS):
        hint = ('the PF\'s driver (%s) does not configure SR-IOV through sysfs ("driver does not support SR-IOV '
                'configuration via sysfs" in dmesg): ConnectX-3 (mlx4_core) takes num_vfs as a module parameter; '
                'mlx5_core must be bound to the PF' % (record['driver'] or 'none bound'))
    elif number == errno.EINVAL:
        hint = 'the kernel did not read %r as a number' % value
    elif number in (errno.EACCES, errno.EPERM, errno.EROFS):
        hint = 'sysfs is read-only here: run as root, on the host (not in an unprivileged container)'
    elif number in (errno.ENOMEM, errno.ENOSPC, errno.EIO):
        hint = ('the PF driver could not enable the VFs (interrupt vectors or BAR space): see dmesg for %s; the '
                'firmware parameters NUM_VF_MSIX and the BAR sizes (PF_LOG_BAR_SIZE, VF_LOG_BAR_SIZE) limit them'
                % record['pci_address'])
    else:
        hint = 'see the kernel log (dmesg) for %s' % record['pci_address']
    return '%s (%s).' % (head, hint)


def vf_summary(record):
    """What the facts keep of a PF record: counts, autoprobe and its VFs."""
    return dict((key, record[key]) for key in ('pci_address', 'name', 'driver', 'netdevs', 'rdma_devices',
                                               'sriov_totalvfs', 'sriov_numvfs', 'drivers_autoprobe', 'vfs'))


# ---------------------------------------------------------------------- persistence


def persist_lines(pfs):
    """The lines of the boot unit's configuration: ``PCI NUM_VFS AUTOPROBE`` (AUTOPROBE 0, 1 or - to leave it)."""
    lines = []
    for pf in pfs:
        autoprobe = pf.get('drivers_autoprobe')
        lines.append('%s %d %s' % (pf['pci_address'], pf['num_vfs'], '-' if autoprobe is None else int(autoprobe)))
    return lines


# ---------------------------------------------------------------------- the Kubernetes side


def _node_of(host, nodes_by_name):
    """The node named as the host, or as its short name (inventories often use FQDNs, kubelet the short name)."""
    if host in nodes_by_name:
        return nodes_by_name[host]
    return nodes_by_name.get(str(host).split('.', 1)[0])


def hostdev_expectations(hosts, hostvars_of):
    """``[{host, group, resource, vfs}]``: what each host's SR-IOV device plugin resource should count.

    From each host's ledger (stage ``sriov``) and fabric: the resource is ``gpunet_rdma_fabric.sriov.resource``, else
    ``rdma_resource`` of a group with ``kubernetes: sriov``; hosts without either are not checked. The VFs counted are
    the ones with an RDMA device (what a device plugin with ``isRdma`` offers), or every VF when the stage leaves them
    unbound (``drivers_autoprobe`` false, VFIO).
    """
    result = []
    for host in hosts or []:
        variables = hostvars_of(host) or {}
        fabric = variables.get('gpunet_rdma_fabric') or {}
        facts = variables.get('ansible_facts') or {}
        stage = ((facts.get('gpunet_rdma_ledger') or {}).get('sriov') or {})
        detail = stage.get('detail') or {}
        sriov = fabric.get('sriov') or {}
        resource = sriov.get('resource') or (fabric.get('rdma_resource') if fabric.get('kubernetes') == 'sriov'
                                             else None)
        if not detail or not resource:
            continue
        vfs = [vf for pf in detail.get('pfs') or [] for vf in pf.get('vfs') or []]
        if detail.get('drivers_autoprobe', True):
            vfs = [vf for vf in vfs if vf.get('rdma_device')]
        result.append({'host': str(host), 'group': fabric.get('name'), 'resource': str(resource), 'vfs': len(vfs)})
    return result


def hostdev_rows(expectations, nodes):
    """Per expectation: the node, its allocatable count of the resource, ``ok`` and the problem otherwise."""
    nodes_by_name = dict(((node.get('metadata') or {}).get('name'), node) for node in nodes or []
                         if isinstance(node, dict))
    rows = []
    for expected in expectations:
        row = dict(expected, node=None, allocatable=None, ok=False, problem=None, summary=None)
        node = _node_of(expected['host'], nodes_by_name)
        if node is None:
            row['problem'] = 'no Kubernetes node of that name'
            rows.append(row)
            continue
        row['node'] = node['metadata']['name']
        value = ((node.get('status') or {}).get('allocatable') or {}).get(expected['resource'])
        row['allocatable'] = value
        try:
            count = int(str(value)) if value is not None else 0
        except ValueError:
            count = None
        if count is None:
            row['problem'] = '%s in allocatable is %r, not a count' % (expected['resource'], value)
        elif expected['vfs'] == 0:
            row['problem'] = ('the host has no VF to offer as %s: see its SR-IOV stage in the report'
                              % expected['resource'])
        elif count == 0:
            row['problem'] = ('no %s in allocatable although the host has %d VFs: is the SR-IOV device plugin deployed '
                              'with that resource name and selectors that match the VFs? It lists the VFs when it '
                              'starts: restart its pod on the node after the VFs were created'
                              % (expected['resource'], expected['vfs']))
        elif count < expected['vfs']:
            row['problem'] = ('%s: %d allocatable of the %d VFs the host has; the SR-IOV device plugin lists the VFs '
                              'when it starts: restart its pod on the node after the VFs were created, or widen its '
                              'selectors' % (expected['resource'], count, expected['vfs']))
        else:
            row['ok'] = True
        rows.append(row)
    for row in rows:
        row['summary'] = '%s: %s' % (row['node'] or row['host'], row['problem']) if row['problem'] else None
    return rows
