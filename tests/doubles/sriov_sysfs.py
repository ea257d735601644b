# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A double of the kernel's SR-IOV sysfs attributes that refuses what the kernel refuses.

The machines here have no SR-IOV hardware, and a plain file accepts any write: ``echo 9 > sriov_numvfs`` into a
fixture tree "succeeds" where the kernel answers ERANGE, and no VF appears. This double serves a sysfs fixture tree
(``lab/sysfs_fixture.py``) through FUSE, so that a write reaches a store function with the rules of
``drivers/pci/iov.c`` (Linux 6.18, ``sriov_numvfs_store``; excerpt in
``tests/unit/fixtures/public/sriov/linux-6.18-iov.c-sriov-attributes.txt``) and fails with the kernel's errno, in
the kernel's order:

* the value is parsed as ``kstrtou16(buf, 0, ...)`` does (decimal, ``0x`` hex, ``0`` octal, a leading ``+``, one
  trailing newline): anything else, or more than 65535, is EINVAL;
* more than ``sriov_totalvfs`` is ERANGE;
* the count the PF already has is a no-op that succeeds (before any driver check);
* a PF without a driver, or whose driver cannot configure SR-IOV through sysfs (``mlx4_core``), is ENOENT;
* 0 destroys every VF; a non-zero count on a PF that has VFs is EBUSY ("Disable before enabling");
* otherwise the VFs are created: ``virtfnN`` links on the PF, one PCI function per VF beside it (routing ID of the
  PF + ``sriov_offset`` + ``sriov_stride`` * N, as ``pci_iov_virtfn_bus``/``devfn`` compute it) with ``physfn``,
  and, when ``sriov_drivers_autoprobe`` is 1 and the PF's driver is mlx5_core, the VF bound to it with its netdev
  (``<pf netdev>v<N>``) and its RDMA device (``mlx5_<lowest free>``), as the kernel and udev name them.

``sriov_drivers_autoprobe`` takes ``kstrtobool`` values (EINVAL otherwise). Every other file is read-only (open for
writing: EACCES), and creating, removing or renaming anything fails as on sysfs (EACCES for a new file, EPERM for the
rest). The rules work on the fixture tree itself (``SriovSysfs``, used directly by unit tests); the FUSE server
(``FuseServer``) speaks the kernel's FUSE protocol over ``/dev/fuse`` with the standard library only, so that it runs
in a bare Debian container (molecule) and in the unit tests alike.

Usage::

    python3 sriov_sysfs.py serve BACKING MOUNTPOINT [--boot] [--die-with-parent]
        serve the fixture tree BACKING at MOUNTPOINT until unmounted or terminated; --boot first puts every PF in
        its state after a reboot (no VF, autoprobe 1). Under systemd (Type=notify) it reports READY=1 once mounted.
    python3 sriov_sysfs.py boot BACKING      the --boot reset alone
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import os
import re
import shutil
import signal
import socket
import stat
import struct
import sys

U16_MAX = 0xffff
# Drivers whose PF configures SR-IOV through sysfs (->sriov_configure); mlx4_core takes num_vfs as a module
# parameter instead, and the kernel answers ENOENT ("driver does not support SR-IOV configuration via sysfs").
SRIOV_CONFIGURE_DRIVERS = ('mlx5_core',)
WRITABLE_PF_ATTRIBUTES = ('sriov_numvfs', 'sriov_drivers_autoprobe')
_PCI_RE = re.compile(r'^([0-9a-f]{4}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$')


class SysfsError(OSError):
    """What a store function returns: an errno (the write fails with it)."""

    def __init__(self, number, why=''):
        super().__init__(number, os.strerror(number))
        self.why = why


# ----------------------------------------------------------------- the kernel's parsers (lib/kstrtox.c)


def kstrtou16_base0(data):
    """The value of ``kstrtou16(buf, 0, &v)``; SysfsError(EINVAL) where sriov_numvfs_store returns -EINVAL.

    sysfs hands the store function the written bytes NUL-terminated, so the string ends at the first NUL byte.
    ``_kstrtoull``: after an optional ``+``, ``0x`` followed by a hex digit means base 16, a leading ``0`` base 8,
    else base 10; at least one digit; then one optional newline and nothing else. Overflow (ERANGE inside kstrtox)
    is EINVAL too: ``sriov_numvfs_store`` maps every kstrtou16 failure to -EINVAL.
    """
    text = bytes(data).split(b'\0', 1)[0]
    if text[:1] == b'+':
        text = text[1:]
    base = 10
    if text[:1] == b'0':
        if text[1:2] in (b'x', b'X') and text[2:3] and text[2:3] in b'0123456789abcdefABCDEF':
            base, text = 16, text[2:]
        else:
            base = 8
    digits = '0123456789abcdef'[:base]
    count = 0
    value = 0
    while count < len(text) and chr(text[count]).lower() in digits:
        value = value * base + digits.index(chr(text[count]).lower())
        count += 1
    rest = text[count:]
    if count == 0:
        raise SysfsError(errno.EINVAL, 'no digits in %r' % data)
    if rest[:1] == b'\n':
        rest = rest[1:]
    if rest:
        raise SysfsError(errno.EINVAL, 'trailing characters in %r' % data)
    if value > U16_MAX:
        raise SysfsError(errno.EINVAL, '%d does not fit u16' % value)
    return value


def kstrtobool(data):
    """``kstrtobool``: the first character decides (y/Y/t/T/e/E/1 true, n/N/f/F/d/D/0 false, on/off)."""
    text = bytes(data).split(b'\0', 1)[0]
    first = text[:1]
    if first and first in b'eEyYtT1':
        return True
    if first and first in b'dDnNfF0':
        return False
    if first and first in b'oO':
        if text[1:2] and text[1:2] in b'nN':
            return True
        if text[1:2] and text[1:2] in b'fF':
            return False
    raise SysfsError(errno.EINVAL, 'not a boolean: %r' % data)


# ----------------------------------------------------------------- the SR-IOV state of a fixture tree


def _read(path, default=None):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return default


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        handle.write('%s\n' % text)


def _symlink(target, link):
    os.makedirs(os.path.dirname(link), exist_ok=True)
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(target, link)


def _remove(path):
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def _natural(name):
    return [int(part) if part.isdigit() else part for part in re.split(r'([0-9]+)', name)]


class SriovSysfs(object):
    """The SR-IOV side of a sysfs fixture tree at ``root``: stores, creation and removal of VFs.

    A PF is a PCI function directory with ``sriov_totalvfs``. ``sriov_offset`` and ``sriov_stride`` default to 2 and
    1 (a ConnectX PF at function 0 of a two-function card), ``sriov_vf_device`` to the PF's device ID + 1 (the mlx5
    VF IDs of ConnectX-4 to -5 Ex), ``sriov_drivers_autoprobe`` to 1; the PF's driver is its ``driver`` link.
    """

    def __init__(self, root):
        self.root = os.path.abspath(root)
        # (directory, name) of every entry created or removed by the last store, relative to the root, for the FUSE
        # server to invalidate in the kernel's dentry cache
        self.touched = []

    def _touch(self, path):
        directory, name = os.path.split(os.path.relpath(os.path.realpath(os.path.dirname(path)), self.root) + '/' +
                                        os.path.basename(path))
        self.touched.append(('' if directory == '.' else directory, name))

    def pop_touched(self):
        touched, self.touched = self.touched, []
        return touched

    # -- lookups
    def function_dir(self, pci):
        return os.path.realpath(os.path.join(self.root, 'bus', 'pci', 'devices', pci))

    def is_pf(self, directory):
        return os.path.isfile(os.path.join(directory, 'sriov_totalvfs'))

    def pfs(self):
        devices = os.path.join(self.root, 'bus', 'pci', 'devices')
        names = sorted(os.listdir(devices)) if os.path.isdir(devices) else []
        return [name for name in names if self.is_pf(self.function_dir(name))]

    def _number(self, directory, name, default):
        value = _read(os.path.join(directory, name))
        if value is None:
            return default
        return int(value, 16) if name == 'sriov_vf_device' else int(value)

    def driver(self, directory):
        link = os.path.join(directory, 'driver')
        return os.path.basename(os.readlink(link)) if os.path.islink(link) else None

    def numvfs(self, directory):
        return self._number(directory, 'sriov_numvfs', 0)

    # -- the store functions
    def store(self, path, data):
        """A write of ``data`` to the attribute file ``path`` (inside the tree): the kernel's store function."""
        directory, name = os.path.split(os.path.realpath(path))
        if name not in WRITABLE_PF_ATTRIBUTES or not self.is_pf(directory):
            raise SysfsError(errno.EACCES, '%s is read-only' % path)
        if name == 'sriov_drivers_autoprobe':
            _write(path, 1 if kstrtobool(data) else 0)
            return len(data)
        return self.store_numvfs(directory, data)

    def store_numvfs(self, directory, data):
        """``sriov_numvfs_store`` of drivers/pci/iov.c, step by step."""
        wanted = kstrtou16_base0(data)
        total = self._number(directory, 'sriov_totalvfs', 0)
        if wanted > total:
            raise SysfsError(errno.ERANGE, '%d VFs > sriov_totalvfs %d' % (wanted, total))
        current = self.numvfs(directory)
        if wanted == current:
            return len(data)
        driver = self.driver(directory)
        if driver is None:
            raise SysfsError(errno.ENOENT, 'no driver bound to device; cannot configure SR-IOV')
        if driver not in SRIOV_CONFIGURE_DRIVERS:
            raise SysfsError(errno.ENOENT, 'driver does not support SR-IOV configuration via sysfs')
        if wanted == 0:
            self.disable(directory)
            return len(data)
        if current:
            raise SysfsError(errno.EBUSY, '%d VFs already enabled. Disable before enabling %d VFs' % (current, wanted))
        self.enable(directory, wanted)
        return len(data)

    # -- what the PF driver does
    def vf_addresses(self, directory, count):
        match = _PCI_RE.match(os.path.basename(directory))
        domain, bus, dev, fn = match.group(1), int(match.group(2), 16), int(match.group(3), 16), int(match.group(4))
        offset = self._number(directory, 'sriov_offset', 2)
        stride = self._number(directory, 'sriov_stride', 1)
        routing = (bus << 8) | (dev << 3) | fn
        result = []
        for index in range(count):
            vf = routing + offset + stride * index
            result.append('%s:%02x:%02x.%x' % (domain, (vf >> 8) & 0xff, (vf >> 3) & 0x1f, vf & 7))
        return result

    def enable(self, directory, count):
        autoprobe = self._number(directory, 'sriov_drivers_autoprobe', 1)
        driver = self.driver(directory)
        pf_netdevs = sorted(os.listdir(os.path.join(directory, 'net'))) if os.path.isdir(
            os.path.join(directory, 'net')) else []
        pf_ib = sorted(os.listdir(os.path.join(directory, 'infiniband'))) if os.path.isdir(
            os.path.join(directory, 'infiniband')) else []
        for index, address in enumerate(self.vf_addresses(directory, count)):
            self._add_vf(directory, index, address, driver if autoprobe else None, pf_netdevs, pf_ib)
        _write(os.path.join(directory, 'sriov_numvfs'), count)

    def disable(self, directory):
        for name in sorted(os.listdir(directory)):
            if not re.match(r'^virtfn[0-9]+$', name):
                continue
            vf_dir = os.path.realpath(os.path.join(directory, name))
            for kind in ('net', 'infiniband'):
                for child in (os.listdir(os.path.join(vf_dir, kind)) if os.path.isdir(os.path.join(vf_dir, kind))
                              else []):
                    self._touch(os.path.join(self.root, 'class', kind, child))
                    _remove(os.path.join(self.root, 'class', kind, child))
            self._touch(os.path.join(self.root, 'bus', 'pci', 'devices', os.path.basename(vf_dir)))
            _remove(os.path.join(self.root, 'bus', 'pci', 'devices', os.path.basename(vf_dir)))
            self._touch(vf_dir)
            _remove(vf_dir)
            self._touch(os.path.join(directory, name))
            os.unlink(os.path.join(directory, name))
        _write(os.path.join(directory, 'sriov_numvfs'), 0)

    def boot(self):
        """Every PF as after a reboot: no VF (the kernel creates none by itself), autoprobe 1."""
        for pci in self.pfs():
            directory = self.function_dir(pci)
            if self.numvfs(directory) or os.path.lexists(os.path.join(directory, 'virtfn0')):
                self.disable(directory)
            if os.path.exists(os.path.join(directory, 'sriov_drivers_autoprobe')):
                _write(os.path.join(directory, 'sriov_drivers_autoprobe'), 1)

    def _rel_from(self, start, path):  # path as a link placed in start names it
        return os.path.relpath(path, start)

    def _add_vf(self, pf_dir, index, address, driver, pf_netdevs, pf_ib):
        parent = os.path.dirname(pf_dir)
        vf_dir = os.path.join(parent, address)
        for path in (vf_dir, os.path.join(pf_dir, 'virtfn%d' % index),
                     os.path.join(self.root, 'bus', 'pci', 'devices', address)):
            self._touch(path)
        os.makedirs(vf_dir)
        _write(os.path.join(vf_dir, 'vendor'), _read(os.path.join(pf_dir, 'vendor'), '0x15b3'))
        pf_device = int(_read(os.path.join(pf_dir, 'device'), '0x1017'), 16)
        vf_device = self._number(pf_dir, 'sriov_vf_device', pf_device + 1)
        _write(os.path.join(vf_dir, 'device'), '0x%04x' % vf_device)
        _write(os.path.join(vf_dir, 'class'), _read(os.path.join(pf_dir, 'class'), '0x020000'))
        os.symlink(os.path.join('..', os.path.basename(pf_dir)), os.path.join(vf_dir, 'physfn'))
        os.symlink(os.path.join('..', address), os.path.join(pf_dir, 'virtfn%d' % index))
        _symlink(self._rel_from(os.path.join(self.root, 'bus', 'pci', 'devices'), vf_dir),
                 os.path.join(self.root, 'bus', 'pci', 'devices', address))
        if driver is None:
            return
        drivers = os.path.join(self.root, 'bus', 'pci', 'drivers', driver)
        os.makedirs(drivers, exist_ok=True)
        os.symlink(self._rel_from(vf_dir, drivers), os.path.join(vf_dir, 'driver'))
        # A locally administered MAC from the VF's PCI address: stable, unique on the host.
        domain, bus, dev, fn = (int(part, 16) for part in re.split('[:.]', address))
        mac = '02:%02x:%02x:%02x:%02x:%02x' % (domain >> 8, domain & 0xff, bus, dev, fn)
        netdev = None
        if pf_netdevs:
            netdev = re.sub(r'np[0-9]+$', '', pf_netdevs[0]) + 'v%d' % index
            net_dir = os.path.join(vf_dir, 'net', netdev)
            kind = _read(os.path.join(pf_dir, 'net', pf_netdevs[0], 'type'), 1)
            for name, value in (('operstate', 'down'), ('dev_port', 0), ('dev_id', '0x0'), ('mtu', 1500),
                                ('address', mac), ('type', kind)):
                _write(os.path.join(net_dir, name), value)
            os.symlink(os.path.join('..', '..', '..', address), os.path.join(net_dir, 'device'))
            _symlink(self._rel_from(os.path.join(self.root, 'class', 'net'), net_dir),
                     os.path.join(self.root, 'class', 'net', netdev))
            self._touch(os.path.join(self.root, 'class', 'net', netdev))
        if pf_ib:
            self._add_rdma_device(pf_dir, vf_dir, address, pf_ib[0], netdev, vf_device, mac)

    def _add_rdma_device(self, pf_dir, vf_dir, address, pf_device, netdev, vf_device, mac):
        class_ib = os.path.join(self.root, 'class', 'infiniband')
        taken = set(os.listdir(class_ib)) if os.path.isdir(class_ib) else set()
        prefix = re.sub(r'[0-9]+$', '', re.sub(r'_bond_[0-9]+$', '_', pf_device))
        number = 0
        while '%s%d' % (prefix, number) in taken:
            number += 1
        name = '%s%d' % (prefix, number)
        pf_ib_dir = os.path.join(pf_dir, 'infiniband', pf_device)
        ib_dir = os.path.join(vf_dir, 'infiniband', name)
        octets = [int(part, 16) for part in mac.split(':')]
        guid = '%02x%02x:%02xff:fe%02x:%02x%02x' % (octets[0], octets[1], octets[2], octets[3], octets[4], octets[5])
        for attribute, value in (('node_guid', guid), ('sys_image_guid', guid),
                                 ('fw_ver', _read(os.path.join(pf_ib_dir, 'fw_ver'), '')),
                                 ('hca_type', 'MT%d' % vf_device),
                                 ('board_id', _read(os.path.join(pf_ib_dir, 'board_id'), '')),
                                 ('node_type', '1: CA'), ('node_desc', name)):
            _write(os.path.join(ib_dir, attribute), value)
        os.symlink(os.path.join('..', '..', '..', address), os.path.join(ib_dir, 'device'))
        ports = os.path.join(pf_ib_dir, 'ports')
        for port in sorted(os.listdir(ports) if os.path.isdir(ports) else [], key=_natural):
            self._add_port(os.path.join(ports, port), os.path.join(ib_dir, 'ports', port), netdev, guid)
        _symlink(self._rel_from(class_ib, ib_dir), os.path.join(class_ib, name))
        self._touch(os.path.join(class_ib, name))

    @staticmethod
    def _add_port(pf_port, port_dir, netdev, guid):
        """The VF's port as mlx5 shows a new VF in legacy SR-IOV mode: it follows the uplink (vport state auto)."""
        link_layer = _read(os.path.join(pf_port, 'link_layer'), 'Ethernet')
        for attribute in ('state', 'phys_state', 'rate', 'link_layer', 'lid', 'sm_lid', 'lid_mask_count',
                          'cap_mask'):
            value = _read(os.path.join(pf_port, attribute))
            if value is not None:
                _write(os.path.join(port_dir, attribute), value)
        length = len(os.listdir(os.path.join(pf_port, 'gids'))) if os.path.isdir(os.path.join(pf_port, 'gids')) \
            else 0
        zero = '0000:0000:0000:0000:0000:0000:0000:0000'
        first = 'fe80:0000:0000:0000:' + guid
        for index in range(length):
            entry = first if (index < (1 if link_layer == 'InfiniBand' else 2)) else zero
            _write(os.path.join(port_dir, 'gids', str(index)), entry)
        if length:
            kinds = ['IB/RoCE v1'] if link_layer == 'InfiniBand' else ['IB/RoCE v1', 'RoCE v2']
            for index, kind in enumerate(kinds):
                _write(os.path.join(port_dir, 'gid_attrs', 'types', str(index)), kind)
                if link_layer != 'InfiniBand' and netdev:
                    _write(os.path.join(port_dir, 'gid_attrs', 'ndevs', str(index)), netdev)


# ----------------------------------------------------------------- the FUSE protocol (include/uapi/linux/fuse.h)

FUSE_LOOKUP, FUSE_FORGET, FUSE_GETATTR, FUSE_SETATTR, FUSE_READLINK, FUSE_SYMLINK = 1, 2, 3, 4, 5, 6
FUSE_MKNOD, FUSE_MKDIR, FUSE_UNLINK, FUSE_RMDIR, FUSE_RENAME, FUSE_LINK = 8, 9, 10, 11, 12, 13
FUSE_OPEN, FUSE_READ, FUSE_WRITE, FUSE_STATFS, FUSE_RELEASE, FUSE_FSYNC = 14, 15, 16, 17, 18, 20
FUSE_SETXATTR, FUSE_GETXATTR, FUSE_LISTXATTR, FUSE_REMOVEXATTR, FUSE_FLUSH, FUSE_INIT = 21, 22, 23, 24, 25, 26
FUSE_OPENDIR, FUSE_READDIR, FUSE_RELEASEDIR, FUSE_FSYNCDIR, FUSE_ACCESS, FUSE_CREATE = 27, 28, 29, 30, 34, 35
FUSE_INTERRUPT, FUSE_DESTROY, FUSE_BATCH_FORGET, FUSE_RENAME2 = 36, 38, 42, 45
FOPEN_DIRECT_IO = 1 << 0
FUSE_NOTIFY_INVAL_ENTRY = 3
# The kernel may keep names and attributes this long: what changes (VFs appearing and going) is invalidated
# explicitly (FUSE_NOTIFY_INVAL_ENTRY), and attribute contents are read without the page cache (FOPEN_DIRECT_IO).
CACHE_SECONDS = 3600
NOTIFY_INVAL_ENTRY = struct.Struct('<QII')
IN_HEADER = struct.Struct('<IIQQIIIHH')
OUT_HEADER = struct.Struct('<IiQ')
ATTR = struct.Struct('<QQQQQQIIIIIIIIII')
ENTRY_OUT = struct.Struct('<QQQQII')
ATTR_OUT = struct.Struct('<QII')
OPEN_OUT = struct.Struct('<QIi')
INIT_IN = struct.Struct('<IIII')
INIT_OUT = struct.Struct('<IIIIHHIIHHIIH22x')
READ_IN = struct.Struct('<QQIIQII')
WRITE_OUT = struct.Struct('<II')
DIRENT = struct.Struct('<QQII')
STATFS_OUT = struct.Struct('<QQQQQIIII24x')
# Replies for what must fail as it fails on sysfs (kernfs has no create, mkdir, link ... operations: the VFS answers
# EACCES for a new file and EPERM for the rest).
REFUSED = {FUSE_CREATE: errno.EACCES, FUSE_MKNOD: errno.EPERM, FUSE_MKDIR: errno.EPERM, FUSE_SYMLINK: errno.EPERM,
           FUSE_LINK: errno.EPERM, FUSE_UNLINK: errno.EPERM, FUSE_RMDIR: errno.EPERM, FUSE_RENAME: errno.EPERM,
           FUSE_RENAME2: errno.EPERM, FUSE_SETXATTR: errno.EPERM, FUSE_REMOVEXATTR: errno.EPERM}
NO_REPLY = (FUSE_FORGET, FUSE_BATCH_FORGET, FUSE_INTERRUPT)
MS_NOSUID, MS_NODEV, MNT_DETACH = 2, 4, 2
PR_SET_PDEATHSIG = 1


class FuseServer(object):
    """Serve ``sysfs.root`` at ``mountpoint``; writes go through ``sysfs.store``."""

    def __init__(self, sysfs, mountpoint):
        self.sysfs = sysfs
        self.mountpoint = os.path.abspath(mountpoint)
        self.paths = {1: ''}
        self.inodes = {'': 1}
        self.fd = None
        self.libc = ctypes.CDLL(None, use_errno=True)

    def mount(self):
        self.fd = os.open('/dev/fuse', os.O_RDWR)
        options = 'fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other,default_permissions' % self.fd
        if self.libc.mount(b'sriov-sysfs-double', self.mountpoint.encode(), b'fuse', MS_NOSUID | MS_NODEV,
                           options.encode()) != 0:
            number = ctypes.get_errno()
            raise OSError(number, 'mount of %s: %s' % (self.mountpoint, os.strerror(number)))

    def unmount(self):
        self.libc.umount2(self.mountpoint.encode(), MNT_DETACH)

    # -- paths and attributes
    def _path(self, nodeid):
        return os.path.join(self.sysfs.root, self.paths[nodeid]) if self.paths[nodeid] else self.sysfs.root

    def _inode(self, relative):
        if relative not in self.inodes:
            number = len(self.paths) + 1
            self.inodes[relative] = number
            self.paths[number] = relative
        return self.inodes[relative]

    def _attr(self, nodeid):
        """What sysfs reports: attributes of one page (4096 bytes) with the mode of what they take (0644 for the ones
        this double stores, 0444 for the rest), links and directories of size 0."""
        path = self._path(nodeid)
        info = os.lstat(path)
        mode, size = info.st_mode, 0
        if stat.S_ISREG(mode):
            size = 4096
            directory, name = os.path.split(path)
            writable = name in WRITABLE_PF_ATTRIBUTES and self.sysfs.is_pf(directory)
            mode = stat.S_IFREG | (0o644 if writable else 0o444)
        return ATTR.pack(nodeid, size, 0, int(info.st_atime), int(info.st_mtime), int(info.st_ctime), 0, 0, 0,
                         mode, info.st_nlink, 0, 0, 0, 4096, 0)

    def _entry(self, nodeid):
        return ENTRY_OUT.pack(nodeid, 0, CACHE_SECONDS, CACHE_SECONDS, 0, 0) + self._attr(nodeid)

    def _invalidate(self, touched):
        """Tell the kernel to forget the names a store created or removed (its dentries would otherwise live on)."""
        for directory, name in touched:
            parent = self.inodes.get(directory)
            if parent is None:
                continue  # never looked up: the kernel has nothing cached below it
            encoded = name.encode('utf-8', 'surrogateescape')
            payload = NOTIFY_INVAL_ENTRY.pack(parent, len(encoded), 0) + encoded + b'\0'
            try:
                os.write(self.fd, OUT_HEADER.pack(OUT_HEADER.size + len(payload), FUSE_NOTIFY_INVAL_ENTRY, 0) + payload)
            except OSError:
                pass  # not cached (ENOENT) is what we wanted

    # -- the loop
    def serve(self, ready=None):
        if ready:
            ready()
        while True:
            try:
                request = os.read(self.fd, 1 << 17)
            except OSError as exc:
                if exc.errno in (errno.EINTR, errno.EAGAIN, errno.ENOENT):
                    continue
                if exc.errno == errno.ENODEV:  # unmounted
                    return
                raise
            if not request:
                return
            length, opcode, unique, nodeid, _uid, _gid, _pid, _ext, _pad = IN_HEADER.unpack_from(request)
            body = request[IN_HEADER.size:length]
            if opcode in NO_REPLY:
                continue
            try:
                payload = self.handle(opcode, nodeid, body)
                error = 0
            except OSError as exc:
                payload, error = b'', -(exc.errno or errno.EIO)
            except (KeyError, ValueError, struct.error):
                payload, error = b'', -errno.EIO
            self._reply(unique, error, payload)
            if opcode == FUSE_DESTROY:
                return

    def _reply(self, unique, error, payload):
        try:
            os.write(self.fd, OUT_HEADER.pack(OUT_HEADER.size + len(payload), error, unique) + payload)
        except OSError as exc:
            if exc.errno != errno.ENOENT:  # the request was interrupted meanwhile
                raise

    def handle(self, opcode, nodeid, body):
        if opcode == FUSE_INIT:
            major, minor, readahead, _flags = INIT_IN.unpack_from(body)
            if major != 7:
                raise OSError(errno.EPROTO, 'FUSE major %d' % major)
            return INIT_OUT.pack(7, min(minor, 31), readahead, 0, 0, 0, 4096, 1, 0, 0, 0, 0, 0)
        if opcode in REFUSED:
            raise OSError(REFUSED[opcode], 'sysfs')
        if opcode == FUSE_LOOKUP:
            name = body.split(b'\0', 1)[0].decode('utf-8', 'surrogateescape')
            parent = self.paths[nodeid]
            relative = os.path.join(parent, name) if parent else name
            if name in ('.', '..') or not os.path.lexists(os.path.join(self.sysfs.root, relative)):
                raise OSError(errno.ENOENT, relative)
            return self._entry(self._inode(relative))
        if opcode in (FUSE_GETATTR, FUSE_SETATTR):
            # kernfs ignores a truncation (O_TRUNC of `echo N > attr`): the attributes stay as they are
            return ATTR_OUT.pack(CACHE_SECONDS, 0, 0) + self._attr(nodeid)
        if opcode == FUSE_READLINK:
            return os.readlink(self._path(nodeid)).encode('utf-8', 'surrogateescape')
        if opcode == FUSE_OPEN:
            flags = struct.unpack_from('<I', body)[0]
            path = self._path(nodeid)
            if flags & os.O_ACCMODE != os.O_RDONLY:
                directory, name = os.path.split(path)
                if name not in WRITABLE_PF_ATTRIBUTES or not self.sysfs.is_pf(directory):
                    raise OSError(errno.EACCES, path)
            return OPEN_OUT.pack(0, FOPEN_DIRECT_IO, 0)
        if opcode == FUSE_READ:
            _fh, offset, size = READ_IN.unpack_from(body)[:3]
            with open(self._path(nodeid), 'rb') as handle:
                return handle.read()[offset:offset + size]
        if opcode == FUSE_WRITE:
            size = READ_IN.unpack_from(body)[2]
            data = body[READ_IN.size:READ_IN.size + size]
            try:
                written = self.sysfs.store(self._path(nodeid), data)
            finally:
                self._invalidate(self.sysfs.pop_touched())
            return WRITE_OUT.pack(written, 0)
        if opcode == FUSE_FLUSH:
            raise OSError(errno.ENOSYS, 'no flush')  # the kernel stops sending it: sysfs has nothing to flush
        if opcode in (FUSE_RELEASE, FUSE_RELEASEDIR, FUSE_FSYNC, FUSE_FSYNCDIR, FUSE_ACCESS):
            return b''
        if opcode == FUSE_OPENDIR:
            if not os.path.isdir(self._path(nodeid)):
                raise OSError(errno.ENOTDIR, self._path(nodeid))
            return OPEN_OUT.pack(0, 0, 0)
        if opcode == FUSE_READDIR:
            return self._readdir(nodeid, body)
        if opcode == FUSE_STATFS:
            return STATFS_OUT.pack(0, 0, 0, 0, 0, 4096, 255, 4096, 0)
        if opcode == FUSE_GETXATTR:
            raise OSError(errno.ENODATA, 'no xattr')
        if opcode == FUSE_DESTROY:
            return b''
        raise OSError(errno.ENOSYS, 'opcode %d' % opcode)

    def _readdir(self, nodeid, body):
        _fh, offset, size = READ_IN.unpack_from(body)[:3]
        relative = self.paths[nodeid]
        names = ['.', '..'] + sorted(os.listdir(self._path(nodeid)))
        out = b''
        for index in range(offset, len(names)):
            name = names[index]
            if name in ('.', '..'):
                ino, kind = nodeid, stat.S_IFDIR >> 12
            else:
                child = os.path.join(relative, name) if relative else name
                mode = os.lstat(os.path.join(self.sysfs.root, child)).st_mode
                ino, kind = self._inode(child), stat.S_IFMT(mode) >> 12
            encoded = name.encode('utf-8', 'surrogateescape')
            record = DIRENT.pack(ino, index + 1, len(encoded), kind) + encoded
            record += b'\0' * (-len(record) % 8)
            if len(out) + len(record) > size:
                break
            out += record
        return out


class Mounted(object):
    """``with Mounted(backing, mountpoint):`` the double served in a child process (for tests)."""

    def __init__(self, backing, mountpoint, boot=False, timeout=10):
        self.backing, self.mountpoint, self.boot, self.timeout = backing, mountpoint, boot, timeout
        self.process = None

    def __enter__(self):
        import subprocess  # pylint: disable=import-outside-toplevel
        import time  # pylint: disable=import-outside-toplevel
        argv = [sys.executable, os.path.abspath(__file__), 'serve', '--die-with-parent', self.backing, self.mountpoint]
        if self.boot:
            argv.insert(3, '--boot')
        os.makedirs(self.mountpoint, exist_ok=True)
        self.process = subprocess.Popen(argv, stderr=subprocess.PIPE)
        deadline = time.time() + self.timeout
        while not os.path.ismount(self.mountpoint):
            if self.process.poll() is not None:
                raise RuntimeError('the SR-IOV sysfs double exited with %s: %s'
                                   % (self.process.returncode, self.process.stderr.read().decode(errors='replace')))
            if time.time() > deadline:
                self.__exit__(None, None, None)
                raise RuntimeError('the SR-IOV sysfs double did not mount %s in %d s' % (self.mountpoint, self.timeout))
            time.sleep(0.02)
        return self

    def __exit__(self, *_exc):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except Exception:  # pylint: disable=broad-except
                self.process.kill()
                self.process.wait()
        if self.process is not None:
            self.process.stderr.close()
        if os.path.ismount(self.mountpoint):
            ctypes.CDLL(None).umount2(self.mountpoint.encode(), MNT_DETACH)
        return False


def _notify_systemd():
    address = os.environ.get('NOTIFY_SOCKET')
    if not address:
        return
    if address.startswith('@'):
        address = '\0' + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.sendto(b'READY=1', address)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    sub = parser.add_subparsers(dest='command', required=True)
    serve = sub.add_parser('serve')
    serve.add_argument('backing')
    serve.add_argument('mountpoint')
    serve.add_argument('--boot', action='store_true')
    serve.add_argument('--die-with-parent', action='store_true')
    boot = sub.add_parser('boot')
    boot.add_argument('backing')
    args = parser.parse_args(argv)
    sysfs = SriovSysfs(args.backing)
    if args.command == 'boot' or args.boot:
        sysfs.boot()
    if args.command == 'boot':
        return 0
    if args.die_with_parent:
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    os.makedirs(args.mountpoint, exist_ok=True)
    server = FuseServer(sysfs, args.mountpoint)
    server.mount()

    def stop(_signum, _frame):
        server.unmount()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve(_notify_systemd)
    return 0


if __name__ == '__main__':
    sys.exit(main())
