# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which ConnectX PCI function a firmware tool's ``-d`` is given: the one device resolver of mlxconfig and
mlxfwmanager.

Admins name a device the way their runbook does: a PCI address (``86:00.0`` or with its domain), an MST device path
(``/dev/mst/mt4119_pciconf0``, after ``mst start``) or an RDMA device name (``mlx5_0``). The firmware tools take the
first two; an RDMA name is resolved through sysfs to its PCI function. A name this host does not have is refused
before any tool runs, naming what the host does have.
"""

from __future__ import annotations

import os

from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import HostReadError, list_dir, printable
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import normalize_pci_address

DEVICE_FORMS = ('a PCI address (0000:86:00.0), an MST device path (/dev/mst/mt4119_pciconf0) or an RDMA device '
                'name (mlx5_0)')
_SYSFS_HINT = 'Point sysfs_root at the sysfs mount (/sys), and run as root.'


class DeviceError(Exception):
    """A device that cannot be resolved; the message names it and what to give instead.

    ``kind`` says what is wrong, for the callers that word a case their own way: ``input`` (not a device at all),
    ``not_found`` (the host has no such device) or ``sysfs`` (sysfs could not be read; nothing wrong with the input).
    """

    def __init__(self, message, kind='input'):
        super().__init__(message)
        self.kind = kind


def sysfs_names(directory):
    """The entries of a sysfs directory (none when it does not exist), printable; DeviceError when unlistable."""
    try:
        return [printable(name, 80) for name in list_dir(directory)]
    except HostReadError as exc:
        raise DeviceError('Cannot read sysfs: %s. %s' % (exc, _SYSFS_HINT), kind='sysfs') from None


def resolve_device(requested, sysfs_root, label='device', rdma_name=False):
    """``(argument for -d, PCI address or None, RDMA device name or None)`` of one requested device.

    ``label`` names the option in messages; with ``rdma_name`` the RDMA device of a PCI address is looked up too
    (None when the function has none). A device path is passed through as it is (no PCI address known).
    """
    if not isinstance(requested, str) or not requested.strip():
        raise DeviceError('%s is empty: give %s.' % (label, DEVICE_FORMS))
    requested = requested.strip()
    if os.path.isabs(requested):
        if os.path.isdir(requested):
            raise DeviceError('%s %s is a directory, not a device: give %s.' % (label, requested, DEVICE_FORMS))
        if not os.path.exists(requested):
            if requested.startswith('/dev/mst/'):
                raise DeviceError('MST device %s does not exist: run `mst start` (NVIDIA MFT) first, or give the PCI '
                                  'address or RDMA device name instead.' % requested)
            raise DeviceError('%s %s does not exist: give %s.' % (label, requested, DEVICE_FORMS))
        return requested, None, None
    pci = normalize_pci_address(requested)
    if pci:
        pci_devices = os.path.join(sysfs_root, 'bus', 'pci', 'devices')
        if os.path.isdir(pci_devices) and not os.path.exists(os.path.join(pci_devices, pci)):
            raise DeviceError('there is no PCI function %s on this host (see `lspci -D -d 15b3:`).' % pci,
                              kind='not_found')
        if not rdma_name:
            return pci, pci, None
        names = sysfs_names(os.path.join(pci_devices, pci, 'infiniband'))
        return pci, pci, names[0] if names else None
    class_ib = os.path.join(sysfs_root, 'class', 'infiniband')
    link = os.path.join(class_ib, requested, 'device')
    if '/' in requested or requested in ('.', '..') or not os.path.exists(link):
        raise DeviceError('%s is not a PCI address, an MST device path or an RDMA device of this host (RDMA '
                          'devices: %s).' % (printable(requested, 80), ', '.join(sysfs_names(class_ib)) or 'none'),
                          kind='not_found')
    pci = normalize_pci_address(os.path.basename(os.path.realpath(link)))
    if pci is None:
        raise DeviceError('RDMA device %s is not a PCI device; the firmware tools work on ConnectX PCI functions only.'
                          % requested)
    return pci, pci, requested
