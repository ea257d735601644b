# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The driver facts (``ansible_facts.rdma_driver``) gathered on a host, for rdma_driver_facts and for
ibdev2netdev_facts' ``driver`` option, which reads ports and driver stack in one module call.

``params`` holds the options of rdma_driver_facts; ``option(name)`` names an option in messages as the calling
module spells it (``ofed_info_path``, or ``driver.ofed_info_path``).
"""

from __future__ import annotations

import os
import platform

from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import (
    SBIN_DIRS,
    HostReadError,
    find_tool,
    output_summary,
    printable,
    read_text,
)
from ansible_collections.gpunet.rdma.plugins.module_utils.drivers._rdma_driver import (
    GPU_OPERATOR_DRIVER_ROOT, OFED_INFO, RDMA_CORE_MODULES, RPM, DriverError, check_kernel_release, check_module_names,
    check_package_names, kernel_modules, kernels_with_ofed, loaded_module, memory_peers, netns_mode_from_option,
    nvidia_driver, ofed_state, parse_dpkg_status, parse_ofed_info, parse_os_release, parse_rdma_system,
    parse_rpm_query, persisted_option)
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import RDMA, sysfs_root_problem


# The options, as rdma_driver_facts documents them (ibdev2netdev_facts takes them as suboptions of driver).
DRIVER_OPTIONS = dict(
    modules=dict(type='list', elements='str', default=[]),
    kernel=dict(type='str'),
    modules_root=dict(type='path', default='/lib/modules'),
    sysfs_root=dict(type='path', default='/sys'),
    modprobe_dir=dict(type='path', default='/etc/modprobe.d'),
    ofed_info_path=dict(type='path'),
    rdma_path=dict(type='path'),
    packages=dict(type='list', elements='str', default=[]),
    os_release_path=dict(type='path', default='/etc/os-release'),
    dpkg_status_path=dict(type='path', default='/var/lib/dpkg/status'),
    nvidia_driver_root=dict(type='path', default=GPU_OPERATOR_DRIVER_ROOT),
)

# MLNX_OFED installs ofed_info in /usr/bin and its own iproute2 under /opt/mellanox; searched before PATH.
OFED_INFO_DIRS = ['/usr/bin'] + SBIN_DIRS
RDMA_DIRS = ['/opt/mellanox/iproute2/sbin'] + SBIN_DIRS


def read_ofed(module, params, option):
    """The installed OFED release from `ofed_info -s`, else from the first line of `ofed_info`; None without OFED."""
    path = find_tool(module, 'ofed_info', params['ofed_info_path'], option=option('ofed_info_path'),
                     opt_dirs=OFED_INFO_DIRS, required=False)
    if not path:
        return None
    attempts = []
    for spec in ('short', ''):
        argv, rc, out, err = OFED_INFO(module, path).run(spec)
        if rc != 0:
            attempts.append('`%s` failed (rc=%d): %s' % (' '.join(argv), rc, output_summary(out, err, 300)))
            continue
        try:
            release = parse_ofed_info(out)
        except DriverError as exc:
            attempts.append('`%s`: %s' % (' '.join(argv), exc))
            continue
        if release is None:
            attempts.append('`%s` printed nothing' % ' '.join(argv))
            continue
        if attempts:
            module.warn('%s; the release was read from `%s` instead.' % ('; '.join(attempts), ' '.join(argv)))
        return release
    if all('failed (rc=' in attempt or 'printed nothing' in attempt for attempt in attempts):
        module.warn('%s; OFED reported as not installed.' % '; '.join(attempts))
        return None
    module.fail_json(msg='Cannot read the installed OFED release: %s. Check the OFED installation (`ofed_info -s` '
                         'prints MLNX_OFED_LINUX-<release>: or OFED-internal-<release>:), or set ofed_info_path to '
                         'the right ofed_info.' % '; '.join(attempts).replace('set ofed_info_path', 'set ' + option('ofed_info_path')))
    return None


def read_netns(module, params, option, warn):
    result = dict(live=None, live_error=None, copy_on_fork=None, persisted=None, persisted_file=None)
    value, found_in = persisted_option(params['modprobe_dir'], 'ib_core', 'netns_mode', warn)
    if value is not None:
        result['persisted'] = netns_mode_from_option(value)
        result['persisted_file'] = found_in
        if result['persisted'] is None:
            warn('%s sets ib_core netns_mode=%s, which is neither 1 (shared) nor 0 (exclusive); the kernel refuses '
                 'it when ib_core loads' % (found_in, printable(value, 40)))
    rdma = find_tool(module, 'rdma', params['rdma_path'], option=option('rdma_path'), opt_dirs=RDMA_DIRS,
                     required=False)
    if not rdma:
        result['live_error'] = 'the iproute2 rdma tool is not installed'
        return result
    rc, out, err = RDMA(module, rdma).run('system')[1:]
    if rc != 0:
        result['live_error'] = '%s system failed (rc=%d): %s' % (rdma, rc, output_summary(out, err, 300))
        return result
    try:
        live = parse_rdma_system(out)
    except DriverError as exc:
        result['live_error'] = str(exc)
        return result
    result['live'] = live['netns']
    result['copy_on_fork'] = live['copy_on_fork']
    return result


def read_os_release(module, params, option):
    """The distribution from os-release (os-release(5): /etc, else /usr/lib); all None when neither exists."""
    for path in (params['os_release_path'], '/usr/lib/os-release'):
        if path and os.path.lexists(path):
            try:
                return parse_os_release(read_text(path, lenient=True))
            except HostReadError as exc:
                module.fail_json(msg='%s: %s. Point it at the os-release file.' % (option('os_release_path'), exc))
    return parse_os_release('')


def read_packages(module, params, option):
    """(package manager, {name: installed version or None}) for the packages option; (None, {}) when none asked."""
    names = params['packages']
    if not names:
        return None, {}
    status = params['dpkg_status_path']
    if os.path.lexists(status):
        try:
            return 'dpkg', parse_dpkg_status(read_text(status, lenient=True), names)
        except HostReadError as exc:
            module.fail_json(msg='%s: %s. Point it at dpkg\'s status database.' % (option('dpkg_status_path'), exc))
    rpm = find_tool(module, 'rpm', None, required=False)
    if rpm:
        rc, out, err = RPM(module, rpm).run('query packages', packages=names)[1:]
        # rpm exits non-zero when any package is missing; its lines say which.
        try:
            return 'rpm', parse_rpm_query(out, names, rc)
        except DriverError as exc:
            module.fail_json(msg='%s (rpm -q exited %d%s). Check that the RPM database is readable on this host.'
                             % (exc, rc, ': ' + output_summary('', err, 300) if err.strip() else ''))
    return None, dict((name, None) for name in names)


def check_paths(module, params, option):
    problem = sysfs_root_problem(params['sysfs_root'])
    if problem:
        module.fail_json(msg='%s: %s. Set %s to the sysfs mount point (/sys on a host, or a tree laid '
                             'out like it in the lab), or leave it unset.' % (option('sysfs_root'), problem, option('sysfs_root')))
    if os.path.lexists(params['modules_root']) and not os.path.isdir(params['modules_root']):
        module.fail_json(msg='%s %s is not a directory; point it at the directory that holds one tree per '
                             'kernel (/lib/modules).' % (option('modules_root'), params['modules_root']))


def gather(module, params, option=lambda name: name):
    """``ansible_facts.rdma_driver`` of this host; fails the module (naming the option) on wrong input."""
    check_paths(module, params, option)
    try:
        kernel = check_kernel_release(params['kernel'] if params['kernel'] is not None else platform.release())
        check_module_names(params['modules'])
        check_package_names(params['packages'])
        names = list(RDMA_CORE_MODULES) + [name for name in params['modules'] if name not in RDMA_CORE_MODULES]
        # The NVIDIA GPU driver is read from the same modules.dep: it decides the GPUDirect mode (host or operator).
        modules, dep_found = kernel_modules(params['modules_root'], kernel, names + ['nvidia'], module.warn)
        gpu_driver = nvidia_driver(params['sysfs_root'], modules['nvidia'] if 'nvidia' in names else modules.pop('nvidia'),
                                   params['nvidia_driver_root'])
        for name, entry in modules.items():
            entry.update(loaded_module(params['sysfs_root'], name))
        ofed_kernels = kernels_with_ofed(params['modules_root'], module.warn)
        netns = read_netns(module, params, option, module.warn)
        peers = memory_peers(params['sysfs_root'])
    except DriverError as exc:
        module.fail_json(msg=str(exc))
    ofed = ofed_state(read_ofed(module, params, option), kernel, modules, ofed_kernels, params['sysfs_root'])
    facts = dict(kernel=kernel, modules_dep_found=dep_found, ofed=ofed, modules=modules, netns=netns,
                 memory_peers=peers, nvidia=gpu_driver)
    facts['os'] = read_os_release(module, params, option)
    facts['package_manager'], facts['packages'] = read_packages(module, params, option)
    return facts
