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

# Where out-of-tree builds of the RDMA modules land: MLNX_OFED/DOCA put them under
# updates/dkms (Debian/Ubuntu), updates (SLES) or extra/mlnx-ofa_kernel (RHEL), and
# RHEL's weak-modules links them into weak-updates for errata kernels.
OUT_OF_TREE_DIRS = ('updates/', 'extra/', 'weak-updates/')
RDMA_CORE_MODULES = ('mlx5_core', 'mlx5_ib', 'ib_core', 'ib_uverbs', 'rdma_ucm')
# The module that tells which driver stack a kernel has: every ConnectX driver needs it.
STACK_MODULE = 'mlx5_core'
NETNS_MODES = {'shared': 1, 'exclusive': 0}

_OFED_INFO = re.compile(r'^(?P<flavor>.+?)-(?P<version>\d+\.\d+-[\w.\-]+?):?$')
_MODULE_SUFFIX = re.compile(r'\.ko(\.(xz|gz|zst))?$')


class DriverError(Exception):
    """Input that cannot be read as what it should be."""


def parse_ofed_info(text):
    """``ofed_info -s`` -> ``{flavor, version}``, or None when the text names no OFED release.

    MLNX_OFED prints ``MLNX_OFED_LINUX-23.10-1.1.9.0:``, DOCA-OFED ``OFED-internal-24.07-0.3.5.0.110:``.
    """
    for line in (text or '').splitlines():
        line = line.strip()
        if not line:
            continue
        match = _OFED_INFO.match(line)
        if match:
            return dict(flavor=match.group('flavor'), version=match.group('version'))
        return None
    return None


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
    """``rdma system`` -> ``{netns, copy_on_fork}``; e.g. ``netns shared copy-on-fork on``."""
    words = (text or '').split()
    result = dict(netns=None, copy_on_fork=None)
    for key, value in zip(words, words[1:]):
        if key == 'netns' and value in NETNS_MODES:
            result['netns'] = value
        elif key == 'copy-on-fork':
            result['copy_on_fork'] = value == 'on'
    if result['netns'] is None:
        raise DriverError('`rdma system` printed no netns mode: %r' % (text or '').strip())
    return result


def parse_modprobe_option(text, module, option):
    """The last ``options MODULE OPTION=VALUE`` of a modprobe.d file, or None."""
    value = None
    for line in (text or '').splitlines():
        words = line.split('#', 1)[0].split()
        if len(words) < 3 or words[0] != 'options' or words[1].replace('-', '_') != module:
            continue
        for word in words[2:]:
            key, sep, val = word.partition('=')
            if sep and key == option:
                value = val
    return value


def netns_mode_from_option(value):
    """``ib_core netns_mode`` value -> ``shared`` / ``exclusive`` / None."""
    for mode, number in NETNS_MODES.items():
        if value is not None and str(value).strip() == str(number):
            return mode
    return None


def loaded_module(sysfs_root, name):
    """``/sys/module/NAME`` -> ``{loaded, builtin, version}``."""
    base = os.path.join(sysfs_root, 'module', name)
    if not os.path.isdir(base):
        return dict(loaded=False, builtin=False, version=None)
    version = _read(os.path.join(base, 'version'))
    # Only loadable modules have an initstate; a directory without one is built into the kernel.
    initstate = _read(os.path.join(base, 'initstate'))
    return dict(loaded=initstate in (None, 'live'), builtin=initstate is None, version=version)


def memory_peers(sysfs_root):
    """Peer-memory clients registered with the OFED core (``/sys/kernel/mm/memory_peers/NAME/version``)."""
    base = os.path.join(sysfs_root, 'kernel', 'mm', 'memory_peers')
    peers = {}
    if os.path.isdir(base):
        for name in sorted(os.listdir(base)):
            peers[name] = _read(os.path.join(base, name, 'version'))
    return peers


def kernel_modules(modules_root, kernel, names):
    """The modules of one kernel: ``{name: {installed, path, origin}}`` plus whether the kernel has a modules.dep."""
    dep = _read(os.path.join(modules_root, kernel, 'modules.dep'), strip=False)
    table = parse_modules_dep(dep)
    result = {}
    for name in names:
        path = table.get(name)
        result[name] = dict(installed=path is not None, path=path, origin=module_origin(path))
    return result, dep is not None


def kernels_with_ofed(modules_root):
    """Installed kernels whose modules.dep resolves mlx5_core to an out-of-tree (OFED) build."""
    kernels = []
    if not os.path.isdir(modules_root):
        return kernels
    for kernel in sorted(os.listdir(modules_root)):
        table = parse_modules_dep(_read(os.path.join(modules_root, kernel, 'modules.dep'), strip=False))
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


def _read(path, strip=True):
    try:
        with open(path) as handle:
            text = handle.read()
    except (IOError, OSError):
        return None
    return text.strip() if strip else text
