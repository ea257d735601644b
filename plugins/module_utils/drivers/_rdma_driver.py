# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The host's RDMA driver stack: OFED version, kernel modules, RDMA netns mode, installer output.

Pure functions over text and a filesystem root, so that unit tests call them directly.
"""

from __future__ import annotations

import os
import re

from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import (
    HostReadError,
    decode_text,
    list_dir,
    printable,
    read_bytes,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._tool_runner import ToolRunner, fixed, value_words

# ofed_info -s prints the release alone; older MLNX_OFED releases only have the long form.
OFED_INFO = ToolRunner('ofed_info', {'short': fixed('-s')})
# rpm -q with a query format that prints name and version-release per package asked for.
RPM = ToolRunner('rpm', {'query': fixed('-q', '--qf', '%{NAME} %{VERSION}-%{RELEASE}\\n'), 'packages': value_words()})

# Where out-of-tree builds of the RDMA modules land: MLNX_OFED/DOCA put them under
# updates/dkms (Debian/Ubuntu), updates (SLES) or extra/mlnx-ofa_kernel (RHEL), and
# RHEL's weak-modules links them into weak-updates for errata kernels.
OUT_OF_TREE_DIRS = ('updates/', 'extra/', 'weak-updates/')
RDMA_CORE_MODULES = ('mlx5_core', 'mlx5_ib', 'ib_core', 'ib_uverbs', 'rdma_ucm')
# The module that tells which driver stack a kernel has: every ConnectX driver needs it.
STACK_MODULE = 'mlx5_core'
NETNS_MODES = {'shared': 1, 'exclusive': 0}

# "MLNX_OFED_LINUX-23.10-1.1.9.0:" (ofed_info -s), "MLNX_OFED_LINUX-23.10-1.1.9.0 (OFED-23.10-1.1.9):" (the first
# line of ofed_info without -s), "OFED-internal-24.07-0.6.1:" (DOCA-OFED, and MLNX_OFED builds for ppc64le). The
# flavor is made of words that start with a letter; the release is MAJOR.MINOR-A[.B...].
_OFED_INFO = re.compile(
    r'^(?P<flavor>[A-Za-z][A-Za-z0-9_]*(?:-[A-Za-z][A-Za-z0-9_]*)*)-(?P<version>[0-9]+\.[0-9]+-[0-9]+(?:\.[0-9A-Za-z]+)*)'
    r'(?:\s+\((?P<base>[^()]*)\))?\s*:?$')
_MODULE_SUFFIX = re.compile(r'\.ko(\.(xz|gz|zst))?$')
# Kernel module names as modprobe accepts them, and kernel releases as `uname -r` prints them.
MODULE_NAME_RE = re.compile(r'^[A-Za-z0-9_-]{1,55}$')
KERNEL_RELEASE_RE = re.compile(r'^[A-Za-z0-9._+~-]{1,64}$')
# What libkmod reads in a modprobe.d directory (conf_files_filter_out): *.conf and *.alias, no dot files.
_MODPROBE_SUFFIXES = ('.conf', '.alias')


class DriverError(Exception):
    """Input that cannot be read as what it should be."""


def parse_ofed_info(text):
    """``ofed_info -s`` or ``ofed_info`` -> ``{flavor, version}``; None for no output.

    MLNX_OFED prints ``MLNX_OFED_LINUX-23.10-1.1.9.0:``, DOCA-OFED ``OFED-internal-24.07-0.3.5.0.110:``; without
    ``-s`` the first line is ``MLNX_OFED_LINUX-23.10-1.1.9.0 (OFED-23.10-1.1.9):`` followed by the components.
    Anything else on the first line is a DriverError quoting it.
    """
    for line in (text or '').splitlines():
        line = line.strip()
        if not line:
            continue
        match = _OFED_INFO.match(line)
        if not match:
            raise DriverError('ofed_info printed %r, which names no OFED release (expected a line such as '
                              'MLNX_OFED_LINUX-24.01-0.3.3.1: or OFED-internal-24.07-0.6.1:)' % printable(line, 200))
        return dict(flavor=match.group('flavor'), version=match.group('version'))
    return None


def check_kernel_release(kernel):
    if not KERNEL_RELEASE_RE.match(kernel or '') or kernel in ('.', '..'):
        raise DriverError('kernel %r is not a kernel release such as 5.15.0-91-generic (as `uname -r` prints it)'
                          % printable(kernel, 80))
    return kernel


def check_module_names(names):
    bad = [name for name in names if not isinstance(name, str) or not MODULE_NAME_RE.match(name)]
    if bad:
        raise DriverError('modules: %s %s not a kernel module name (letters, digits, _ and -, e.g. nvidia_peermem)'
                          % (', '.join(repr(printable(str(b), 60)) for b in bad), 'is' if len(bad) == 1 else 'are'))
    return names


def read_lenient(path, warn=None, fix=''):
    """Text of ``path``; bytes that are not UTF-8 become U+FFFD, with a warning naming the file and the offset.

    HostReadError (missing, a directory, permission denied) is left to the caller.
    """
    data = read_bytes(path)
    try:
        return decode_text(data, path)
    except HostReadError as exc:
        if warn:
            warn('%s; read with the odd bytes replaced%s' % (exc, fix))
        return decode_text(data, path, lenient=True)


def module_name(path):
    """``kernel/drivers/.../mlx5_core.ko.xz`` -> ``mlx5_core`` (dashes become underscores, as modprobe does)."""
    return _MODULE_SUFFIX.sub('', os.path.basename(path)).replace('-', '_')


def parse_modules_dep(text):
    """modules.dep -> ``{module name: path relative to /lib/modules/KERNEL}`` (depmod lists the chosen copy)."""
    found = {}
    for line in (text or '').splitlines():
        path, sep, _deps = line.partition(':')
        if not sep or not path.strip():
            continue
        path = path.strip()
        if os.path.isabs(path):
            # Old depmod wrote absolute paths.
            parts = path.split('/')
            path = '/'.join(parts[4:]) if len(parts) > 4 and parts[1:3] == ['lib', 'modules'] else path
        found.setdefault(module_name(path), path)
    return found


def module_origin(path):
    """Where a module file comes from: ``ofed`` (out-of-tree build), ``inbox`` (the kernel's own) or ``other``."""
    if path is None:
        return None
    if path.startswith(OUT_OF_TREE_DIRS):
        return 'ofed'
    if path.startswith('kernel/'):
        return 'inbox'
    return 'other'


def parse_rdma_system(text):
    """``rdma system`` -> ``{netns, copy_on_fork}``.

    iproute2 prints ``netns shared`` (5.4), ``netns shared copy-on-fork on`` (5.13) and
    ``netns shared privileged-qkey off monitor off copy-on-fork on`` (6.x); unknown pairs are ignored.
    """
    words = (text or '').split()
    result = dict(netns=None, copy_on_fork=None)
    for key, value in zip(words, words[1:]):
        if key == 'netns' and value in NETNS_MODES:
            result['netns'] = value
        elif key == 'copy-on-fork' and value in ('on', 'off'):
            result['copy_on_fork'] = value == 'on'
    if result['netns'] is None:
        raise DriverError('`rdma system` printed no netns mode: %r' % printable((text or '').strip(), 200))
    return result


def _logical_lines(text):
    """Lines as libkmod reads them: a backslash at the end of a line continues it on the next."""
    pending = ''
    for line in (text or '').splitlines():
        if line.endswith('\\'):
            pending += line[:-1] + ' '
            continue
        yield pending + line
        pending = ''
    if pending:
        yield pending


def parse_modprobe_option(text, module, option):
    """The last ``options MODULE OPTION=VALUE`` of a modprobe.d file, or None."""
    value = None
    module = module.replace('-', '_')
    for line in _logical_lines(text):
        words = line.split('#', 1)[0].split()
        if len(words) < 3 or words[0] != 'options' or words[1].replace('-', '_') != module:
            continue
        for word in words[2:]:
            key, sep, val = word.partition('=')
            if sep and key.replace('-', '_') == option:
                value = val
    return value


def netns_mode_from_option(value):
    """``ib_core netns_mode`` value -> ``shared`` / ``exclusive`` / None (the kernel accepts ``"0"`` too)."""
    if value is None:
        return None
    text = str(value).strip().strip('"')
    for mode, number in NETNS_MODES.items():
        if text == str(number):
            return mode
    return None


def persisted_option(modprobe_dir, module, option, warn=None):
    """The value of the last ``options MODULE OPTION=`` in ``modprobe_dir`` and the file that sets it.

    Files are read as libkmod reads them: ``*.conf`` and ``*.alias`` in name order, dot files skipped; a
    directory named like a file and a file that cannot be read are skipped (modprobe does too), with a warning
    naming them. A missing directory sets nothing; a path that is not a directory is a DriverError.
    """
    if not os.path.lexists(modprobe_dir):
        return None, None
    if not os.path.isdir(modprobe_dir):
        raise DriverError('modprobe_dir %s is not a directory; point it at the modprobe configuration directory '
                          '(/etc/modprobe.d)' % modprobe_dir)
    try:
        names = list_dir(modprobe_dir)
    except HostReadError as exc:
        raise DriverError('modprobe_dir: %s' % exc)
    value = found_in = None
    for name in names:
        if name.startswith('.') or not name.endswith(_MODPROBE_SUFFIXES):
            continue
        path = os.path.join(modprobe_dir, name)
        if os.path.isdir(path):
            if warn:
                warn('%s is a directory, skipped: modprobe reads only files there ("Directories inside directories '
                     'are not supported"); move its content into a file or remove it' % path)
            continue
        try:
            text = read_lenient(path, warn, ' (modprobe reads it the same way)')
        except HostReadError as exc:
            if warn:
                warn('%s, skipped as modprobe skips it; fix its permissions so that the persisted %s %s can be '
                     'read' % (exc, module, option))
            continue
        found = parse_modprobe_option(text, module, option)
        if found is not None:
            value, found_in = found, path
    return value, found_in


def _read_sysfs_value(path):
    """A sysfs value (module version, peer-memory version): stripped text, odd bytes as U+FFFD, None if unreadable."""
    try:
        return decode_text(read_bytes(path), path, lenient=True).strip()
    except HostReadError:
        return None


def loaded_module(sysfs_root, name):
    """``/sys/module/NAME`` -> ``{loaded, builtin, version}``."""
    base = os.path.join(sysfs_root, 'module', name)
    if not os.path.isdir(base):
        return dict(loaded=False, builtin=False, version=None)
    version = _read_sysfs_value(os.path.join(base, 'version'))
    # Only loadable modules have an initstate; a directory without one is built into the kernel.
    initstate = _read_sysfs_value(os.path.join(base, 'initstate'))
    return dict(loaded=initstate in (None, 'live'), builtin=initstate is None, version=version)


# The GPU Operator's driver container bind-mounts its root file system here on the host (the toolkit's driverRoot).
GPU_OPERATOR_DRIVER_ROOT = '/run/nvidia/driver'


def nvidia_driver(sysfs_root, installed, driver_root):
    """Where this node's NVIDIA GPU kernel driver comes from: ``{source, loaded, version, host_installed,
    host_path, gpu_operator_root}``.

    ``installed`` is the modules.dep entry of ``nvidia`` for the running kernel (``{installed, path, origin}``).
    ``source`` is V(gpu_operator) while the GPU Operator's driver container root exists (its modules live in the
    container, not in the host's modules.dep), V(host) when the host's kernel has or runs the driver, and None when
    the node has no NVIDIA driver at all (a CPU node, or a GPU node whose driver is not installed yet).
    """
    loaded = loaded_module(sysfs_root, 'nvidia')
    operator_root = bool(driver_root) and os.path.isdir(driver_root)
    if operator_root:
        try:
            operator_root = len(list_dir(driver_root)) > 0
        except HostReadError as exc:
            raise DriverError('%s; the GPU Operator\'s driver root decides where the NVIDIA driver comes from' % exc)
    if operator_root:
        source = 'gpu_operator'
    elif installed['installed'] or loaded['loaded']:
        source = 'host'
    else:
        source = None
    return dict(source=source, loaded=loaded['loaded'], version=loaded['version'],
                host_installed=installed['installed'], host_path=installed['path'],
                gpu_operator_root=driver_root if operator_root else None)


def _listed(path):
    """list_dir for the driver readers: a directory that cannot be listed is a DriverError naming it."""
    try:
        return list_dir(path)
    except HostReadError as exc:
        raise DriverError(str(exc))


def memory_peers(sysfs_root):
    """Peer-memory clients registered with the OFED core (``/sys/kernel/mm/memory_peers/NAME/version``)."""
    base = os.path.join(sysfs_root, 'kernel', 'mm', 'memory_peers')
    peers = {}
    if os.path.isdir(base):
        for name in _listed(base):
            if os.path.isdir(os.path.join(base, name)):
                peers[printable(name, 80)] = _read_sysfs_value(os.path.join(base, name, 'version'))
    return peers


def read_modules_dep(modules_root, kernel, warn=None):
    """The text of ``MODULES_ROOT/KERNEL/modules.dep``, or None when the kernel has none (containers).

    Any other failure (a directory, permission denied) is a DriverError: without it every module would look
    missing and the driver roles would rebuild OFED for nothing.
    """
    path = os.path.join(modules_root, kernel, 'modules.dep')
    if not os.path.lexists(path):
        return None
    try:
        return read_lenient(path, warn, '; regenerate it with `depmod -a %s`' % kernel)
    except HostReadError as exc:
        raise DriverError('%s; depmod writes it: run `depmod -a %s` (as root) to regenerate it' % (exc, kernel))


def kernel_modules(modules_root, kernel, names, warn=None):
    """The modules of one kernel: ``{name: {installed, path, origin}}`` plus whether the kernel has a modules.dep."""
    dep = read_modules_dep(modules_root, kernel, warn)
    table = parse_modules_dep(dep)
    result = {}
    for name in names:
        path = table.get(name)
        result[name] = dict(installed=path is not None, path=path, origin=module_origin(path))
    return result, dep is not None


def kernels_with_ofed(modules_root, warn=None):
    """Installed kernels whose modules.dep resolves mlx5_core to an out-of-tree (OFED) build.

    A kernel whose modules.dep cannot be read is left out with a warning.
    """
    kernels = []
    if not os.path.isdir(modules_root):
        return kernels
    for kernel in _listed(modules_root):
        if not os.path.isdir(os.path.join(modules_root, kernel)):
            continue
        try:
            dep = read_modules_dep(modules_root, kernel, warn)
        except DriverError as exc:
            if warn:
                warn('%s (kernel %s left out of the OFED kernels)' % (exc, kernel))
            continue
        table = parse_modules_dep(dep)
        if module_origin(table.get(STACK_MODULE)) == 'ofed':
            kernels.append(kernel)
    return kernels


def ofed_state(ofed, kernel, modules, ofed_kernels, sysfs_root):
    """OFED as installed and as running: kernel mismatch and a pending driver restart.

    A mismatch is an OFED userspace whose kernel modules are missing for the running kernel
    (typically after a kernel upgrade). The restart is pending while the loaded mlx5_core is
    not the installed release (OFED's modules carry their release as module version).
    """
    if not ofed:
        return dict(installed=False, flavor=None, version=None, kernels=ofed_kernels, kernel_mismatch=False,
                    loaded_version=None, restart_pending=False, remedy=None)
    stack = modules.get(STACK_MODULE) or {}
    mismatch = stack.get('origin') != 'ofed'
    loaded = loaded_module(sysfs_root, STACK_MODULE)
    loaded_version = loaded['version']
    restart_pending = not mismatch and not (loaded['loaded'] and loaded_version
                                            and ofed['version'].startswith(loaded_version))
    state = dict(installed=True, flavor=ofed['flavor'], version=ofed['version'], kernels=ofed_kernels,
                 kernel_mismatch=mismatch, loaded_version=loaded_version, restart_pending=restart_pending,
                 remedy=None)
    if mismatch:
        state['remedy'] = kernel_mismatch_message(state, kernel)
    return state


def kernel_mismatch_message(ofed, kernel):
    """What to do when the installed OFED has no modules for the running kernel."""
    built = ', '.join(ofed.get('kernels') or []) or 'no installed kernel'
    return ('%s %s is installed, but its kernel modules were built for %s, not for the running kernel %s '
            '(a kernel upgrade?). Rebuild them for this kernel: set ofed_add_kernel_support: true to let the role run '
            'mlnxofedinstall --add-kernel-support, or by hand: mount the ISO, run `mlnxofedinstall '
            '--add-kernel-support` (add your usual flags), then `/etc/init.d/openibd restart` or reboot. '
            'Alternatively boot the kernel OFED was built for.'
            % (ofed.get('flavor') or 'OFED', ofed.get('version'), built, kernel))


def explain_modprobe_failure(module, text):
    """A modprobe failure of a GPUDirect module, with its usual cause and remedy."""
    text = (text or '').strip()
    if re.search(r'Invalid argument|Unknown symbol|disagrees about version of symbol|Exec format error', text, re.I):
        return ('Loading %s failed: %s. The module was built against a different RDMA core than the one loaded '
                '(typically the NVIDIA driver was installed before MLNX_OFED/DOCA-OFED, or OFED was upgraded '
                'afterwards), so it cannot resolve the peer-memory symbols (see `dmesg | grep -i %s` for the '
                '"Unknown symbol" lines). Reinstall or rebuild the NVIDIA driver (DKMS) after OFED, or let the GPU '
                'Operator build it against the host OFED (gpudirect_mode: gpu_operator, driver.rdma.useHostMofed: true).'
                % (module, text, module))
    if '/proc/modules' in text:
        return ('Loading %s failed: %s. This kernel has no loadable module support, or this is a container: load the '
                'modules on the host, or set gpudirect_load_modules: false (persistence is still written).'
                % (module, text))
    if re.search(r'not found in directory|Module \S+ not found', text, re.I):
        return ('Loading %s failed: %s. The module is not installed for the running kernel: nvidia_peermem comes '
                'with the NVIDIA driver (R470 and later), nv_peer_mem with the legacy nvidia-peer-memory package, '
                'gdrdrv with gdrcopy (gpudirect_gdrcopy_source). Install it for this kernel, or use '
                'gpudirect_mode: gpu_operator.' % (module, text))
    return 'Loading %s failed: %s. See `dmesg | tail` on the node.' % (module, text)


# ----------------------------------------------------------------- distribution and packages

# os-release ID / ID_LIKE words -> the os_family names Ansible's setup module uses.
_OS_FAMILIES = (('debian', 'Debian'), ('ubuntu', 'Debian'), ('rhel', 'RedHat'), ('fedora', 'RedHat'),
                ('centos', 'RedHat'), ('rocky', 'RedHat'), ('almalinux', 'RedHat'), ('ol', 'RedHat'),
                ('suse', 'Suse'), ('sles', 'Suse'), ('opensuse', 'Suse'))
_OS_RELEASE_LINE = re.compile(r'^(?P<key>[A-Z][A-Z0-9_]*)=(?P<value>.*)$')
_PACKAGE_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9.+_-]{0,127}$')
_DPKG_PACKAGE = re.compile(r'^Package:[ \t]*(\S+)[ \t]*$', re.M)
_DPKG_STANZA_END = re.compile(r'\n[ \t]*\n')


def parse_os_release(text):
    """/etc/os-release -> ``{id, id_like, version_id, pretty_name, family}`` (family as Ansible's os_family, or None).

    Values may be quoted in double or single quotes (os-release(5)); lines that are not KEY=value are ignored, as
    systemd ignores them.
    """
    values = {}
    for line in (text or '').splitlines():
        match = _OS_RELEASE_LINE.match(line.strip())
        if not match:
            continue
        value = match.group('value').strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in '"\'':
            value = value[1:-1]
        values[match.group('key')] = value
    words = [values.get('ID', '').lower()] + values.get('ID_LIKE', '').lower().split()
    family = next((name for word in words for key, name in _OS_FAMILIES if word == key), None)
    return {'id': values.get('ID') or None, 'id_like': values.get('ID_LIKE', '').split(),
            'version_id': values.get('VERSION_ID') or None, 'pretty_name': values.get('PRETTY_NAME') or None,
            'family': family}


def check_package_names(names):
    bad = [name for name in names if not isinstance(name, str) or not _PACKAGE_NAME.match(name)]
    if bad:
        raise DriverError('packages: %s %s not a package name (letters, digits, . + _ -)'
                          % (', '.join(repr(name) for name in bad), 'is' if len(bad) == 1 else 'are'))


def parse_dpkg_status(text, names):
    """dpkg's status database -> ``{name: version or None}`` for ``names`` (installed means "install ok installed").

    Stanzas are separated by blank lines; a package of another architecture (``Package: x`` twice, multi-arch) counts
    as installed when any stanza says so. Only the stanzas of ``names`` are read (a host's database holds thousands).
    """
    wanted = set(names)
    result = dict((name, None) for name in names)
    text = (text or '').replace('\r\n', '\n')
    for match in _DPKG_PACKAGE.finditer(text):
        if match.group(1) not in wanted:
            continue
        end = _DPKG_STANZA_END.search(text, match.end())
        fields = {}
        for line in text[match.start():end.start() if end else len(text)].splitlines():
            if line[:1] in (' ', '\t') or ':' not in line:
                continue
            key, _sep, value = line.partition(':')
            fields[key.strip()] = value.strip()
        name = match.group(1)
        if fields.get('Status', '').split()[-1:] == ['installed'] and result[name] is None:
            result[name] = fields.get('Version') or ''
    return result


def parse_rpm_query(text, names, rc=0):
    """``rpm -q --qf '%{NAME} %{VERSION}-%{RELEASE}\\n' NAMES`` -> ``{name: version or None}``.

    rpm prints one "NAME VERSION-RELEASE" line per installed package (several for multilib; the first wins) and
    "package NAME is not installed" for a missing one, and exits with the number of missing packages. Any other
    line, a package it did not report, or an exit status that does not match the missing ones means rpm did not
    answer the query (a locked or damaged database): DriverError, never a guess.
    """
    result = dict((name, None) for name in names)
    answered, missing = set(), 0
    for line in (text or '').splitlines():
        if not line.strip():
            continue
        words = line.split()
        absent = re.match(r'^package (\S+) is not installed$', line.strip())
        if absent and absent.group(1) in result:
            answered.add(absent.group(1))
            missing += 1
        elif len(words) == 2 and words[0] in result:
            answered.add(words[0])
            if result[words[0]] is None:
                result[words[0]] = words[1]
        else:
            raise DriverError('rpm printed %r, which is neither "NAME VERSION-RELEASE" nor "package NAME is not '
                              'installed" for a package asked for' % printable(line.strip(), 120))
    unanswered = [name for name in names if name not in answered]
    if unanswered:
        raise DriverError('rpm did not report on %s' % ', '.join(unanswered))
    if rc != min(missing, 255):
        raise DriverError('rpm reported %d missing package(s) but exited %d' % (missing, rc))
    return result
