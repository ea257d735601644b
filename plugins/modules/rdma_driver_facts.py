#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
---
module: rdma_driver_facts
short_description: Report the host's RDMA driver stack (OFED release, kernel modules, RDMA netns mode) as facts
version_added: 0.1.0
description:
  - Returns RV(ansible_facts.rdma_driver) - what the driver roles (P(gpunet.rdma.ofed#role),
    P(gpunet.rdma.gpudirect#role), P(gpunet.rdma.rdma_netns#role)) and the fleet report decide on.
  - The installed OFED release comes from C(ofed_info -s) (MLNX_OFED or DOCA-OFED); when that fails or prints
    something else, from the first line of C(ofed_info) without C(-s). Whether the running kernel has
    the RDMA modules, and from which build, comes from the kernel's C(modules.dep) (out-of-tree builds live under
    C(updates/), C(extra/) or C(weak-updates/)); which modules are loaded, and their version, from
    C(/sys/module).
  - An OFED whose modules are missing for the running kernel (after a kernel upgrade) is reported as
    RV(ansible_facts.rdma_driver.ofed.kernel_mismatch); an installed release that is not the loaded one as
    RV(ansible_facts.rdma_driver.ofed.restart_pending).
  - The RDMA subsystem's network namespace mode is read live with C(rdma system) and from the C(ib_core netns_mode)
    option persisted in modprobe.d.
  - Files are read as the kernel tools read them. In O(modprobe_dir) only C(*.conf) and C(*.alias) count; a
    directory or an unreadable file there is skipped with a warning, as modprobe skips it; bytes that are not UTF-8
    in a modprobe.d file or a C(modules.dep) are replaced, with a warning naming the file and the offset. A
    C(modules.dep) that exists but cannot be read is an error (every module would look missing).
  - Wrong input fails naming it and the fix - a O(sysfs_root) that is missing or not a sysfs mount, a O(kernel)
    that is not a kernel release, a O(modules) entry that is not a module name, a tool path that is a directory or
    not executable, C(ofed_info) output that names no release - and nothing is changed on the host.
  - Reads only.
author:
  - gpunet.rdma contributors (@gpunet)
options:
  modules:
    description: Kernel modules to report on; the RDMA core modules are always included.
    type: list
    elements: str
    default: []
  kernel:
    description:
      - Kernel release to check the modules of; default the running kernel (C(uname -r)).
      - Must look like a kernel release (letters, digits, C(.), C(_), C(+), C(~) and C(-); no C(/)).
    type: str
  modules_root:
    description: Directory holding one C(modules.dep) tree per kernel. Missing (containers) means no module is
      installed; a file there is an error.
    type: path
    default: /lib/modules
  sysfs_root:
    description:
      - Where sysfs is mounted (C(module/), C(kernel/mm/memory_peers/)).
      - Must exist and look like a sysfs mount (one of C(class/), C(devices/), C(bus/), C(module/), C(kernel/)
        in it); anything else is an error naming the path.
    type: path
    default: /sys
  modprobe_dir:
    description: The modprobe configuration directory searched for C(options ib_core netns_mode=...). Missing
      means nothing is persisted; a file there is an error.
    type: path
    default: /etc/modprobe.d
  ofed_info_path:
    description: Path of C(ofed_info); default searches C(/usr/bin), E(PATH) and the sbin directories.
    type: path
  rdma_path:
    description: Path of the iproute2 C(rdma) tool; default searches E(PATH) (MLNX_OFED's own copy in
      C(/opt/mellanox/iproute2/sbin) first).
    type: path
  packages:
    description:
      - Distribution packages to report the installed version of (RV(ansible_facts.rdma_driver.packages)), e.g. the
        RDMA userspace the driver stage installs, so that a run finds them installed without asking the package
        manager again. Read from dpkg's status database, or with one C(rpm -q) call.
    type: list
    elements: str
    default: []
  os_release_path:
    description: The os-release file (RV(ansible_facts.rdma_driver.os)); C(/usr/lib/os-release) when it is missing.
    type: path
    default: /etc/os-release
  dpkg_status_path:
    description: dpkg's status database, read for O(packages) on Debian-like hosts.
    type: path
    default: /var/lib/dpkg/status
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  facts:
    support: full
  platform:
    platforms: posix
notes:
  - Commands run as argument lists with C(LC_ALL=C).
  - On kernels without loadable module support (and in containers) C(/lib/modules) may be missing; every module is
    then reported as not installed and RV(ansible_facts.rdma_driver.modules_dep_found) is V(false).
'''

EXAMPLES = r'''
- name: Read the driver stack
  gpunet.rdma.rdma_driver_facts:
    modules: [nvidia_peermem, gdrdrv]

- name: Stop when OFED needs a rebuild for the running kernel
  ansible.builtin.assert:
    that: not ansible_facts.rdma_driver.ofed.kernel_mismatch
    fail_msg: "OFED {{ ansible_facts.rdma_driver.ofed.version }} has no modules for {{ ansible_facts.rdma_driver.kernel }}"
'''

RETURN = r'''
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    rdma_driver:
      description: The RDMA driver stack of the host.
      type: dict
      contains:
        kernel:
          description: The kernel release the modules were checked for.
          type: str
          sample: 5.15.0-91-generic
        modules_dep_found:
          description: Whether that kernel has a C(modules.dep) (false in containers and on monolithic kernels).
          type: bool
        ofed:
          description: The installed OFED (MLNX_OFED or DOCA-OFED), from C(ofed_info -s).
          type: dict
          contains:
            installed:
              description: Whether C(ofed_info -s) (or C(ofed_info)) names a release.
              type: bool
            flavor:
              description: C(MLNX_OFED_LINUX) or C(OFED-internal) (DOCA-OFED); null without OFED.
              type: str
              sample: MLNX_OFED_LINUX
            version:
              description: The release, without flavor and trailing colon; null without OFED.
              type: str
              sample: 24.01-0.3.3.1
            kernels:
              description: Installed kernels whose C(mlx5_core) is an out-of-tree (OFED) build.
              type: list
              elements: str
            kernel_mismatch:
              description: OFED is installed but the running kernel has no OFED build of C(mlx5_core).
              type: bool
            loaded_version:
              description: Module version of the loaded C(mlx5_core) (OFED modules carry their release); null when
                not loaded or in-tree.
              type: str
            restart_pending:
              description: OFED modules are installed for this kernel but not the ones loaded; restart the driver
                (C(/etc/init.d/openibd restart)) or reboot.
              type: bool
            remedy:
              description: With RV(ansible_facts.rdma_driver.ofed.kernel_mismatch), what to do about it; null otherwise.
              type: str
        modules:
          description: One entry per reported kernel module.
          type: dict
          sample:
            mlx5_core: {installed: true, path: updates/dkms/mlx5_core.ko, origin: ofed, loaded: true, builtin: false,
                        version: "24.01-0.3.3"}
          contains:
            installed:
              description: The kernel's C(modules.dep) lists the module.
              type: bool
            path:
              description: Its path below C(/lib/modules/KERNEL).
              type: str
            origin:
              description: V(ofed) (out-of-tree build), V(inbox) (the kernel's own) or V(other); null when not installed.
              type: str
            loaded:
              description: Loaded (or built into the kernel), from C(/sys/module).
              type: bool
            builtin:
              description: Built into the kernel.
              type: bool
            version:
              description: The loaded module's version, when it declares one.
              type: str
        netns:
          description: The RDMA subsystem's network namespace mode.
          type: dict
          contains:
            live:
              description: V(shared) or V(exclusive) from C(rdma system); null when it cannot be read.
              type: str
            live_error:
              description: Why the live mode could not be read (no C(rdma) tool, no RDMA netlink in the kernel).
              type: str
            copy_on_fork:
              description: The C(copy-on-fork) flag of C(rdma system), when printed.
              type: bool
            persisted:
              description: The mode of the last C(options ib_core netns_mode=) in modprobe.d; null when not set
                (the kernel default is shared).
              type: str
            persisted_file:
              description: The modprobe.d file that sets it.
              type: str
        memory_peers:
          description: Peer-memory clients registered with the OFED core and their versions
            (C(/sys/kernel/mm/memory_peers/NAME/version)); C(nv_mem) is GPUDirect RDMA's.
          type: dict
          sample: {nv_mem: "1.3"}
        os:
          description: The distribution from os-release - C(id), C(id_like), C(version_id), C(pretty_name) and
            C(family) (Ansible's os_family names, V(Debian), V(RedHat), V(Suse), or null), so that stages choose
            their package names without gathering facts.
          type: dict
          sample: {id: debian, id_like: [], version_id: "12", pretty_name: Debian GNU/Linux 12 (bookworm), family: Debian}
        package_manager:
          description: Where O(packages) were read from, V(dpkg) or V(rpm); null when none was asked for or neither
            exists.
          type: str
        packages:
          description: O(packages) to the installed version, or null when not installed.
          type: dict
          sample: {rdma-core: 44.0-2, perftest: null}
'''

import os
import platform

from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import (
    SBIN_DIRS,
    HostReadError,
    find_tool,
    output_summary,
    printable,
    read_text,
    run_tool,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._module import RdmaModule
from ansible_collections.gpunet.rdma.plugins.module_utils._rdma_driver import (
    RDMA_CORE_MODULES, DriverError, check_kernel_release, check_module_names, check_package_names, kernel_modules,
    kernels_with_ofed, loaded_module, memory_peers, netns_mode_from_option, ofed_state, parse_dpkg_status,
    parse_ofed_info, parse_os_release, parse_rdma_system, parse_rpm_query, persisted_option)
from ansible_collections.gpunet.rdma.plugins.module_utils._rdma_inventory import sysfs_root_problem

# MLNX_OFED installs ofed_info in /usr/bin and its own iproute2 under /opt/mellanox; searched before PATH.
OFED_INFO_DIRS = ['/usr/bin'] + SBIN_DIRS
RDMA_DIRS = ['/opt/mellanox/iproute2/sbin'] + SBIN_DIRS


def read_ofed(module):
    """The installed OFED release from `ofed_info -s`, else from the first line of `ofed_info`; None without OFED."""
    path = find_tool(module, 'ofed_info', module.params['ofed_info_path'], option='ofed_info_path',
                     opt_dirs=OFED_INFO_DIRS, required=False)
    if not path:
        return None
    attempts = []
    for argv in ([path, '-s'], [path]):
        rc, out, err = run_tool(module, argv, what='ofed_info')
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
                         'the right ofed_info.' % '; '.join(attempts))
    return None


def read_netns(module, warn):
    result = dict(live=None, live_error=None, copy_on_fork=None, persisted=None, persisted_file=None)
    value, found_in = persisted_option(module.params['modprobe_dir'], 'ib_core', 'netns_mode', warn)
    if value is not None:
        result['persisted'] = netns_mode_from_option(value)
        result['persisted_file'] = found_in
        if result['persisted'] is None:
            warn('%s sets ib_core netns_mode=%s, which is neither 1 (shared) nor 0 (exclusive); the kernel refuses '
                 'it when ib_core loads' % (found_in, printable(value, 40)))
    rdma = find_tool(module, 'rdma', module.params['rdma_path'], option='rdma_path', opt_dirs=RDMA_DIRS,
                     required=False)
    if not rdma:
        result['live_error'] = 'the iproute2 rdma tool is not installed'
        return result
    rc, out, err = run_tool(module, [rdma, 'system'], what='rdma')
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


def read_os_release(module):
    """The distribution from os-release (os-release(5): /etc, else /usr/lib); all None when neither exists."""
    for path in (module.params['os_release_path'], '/usr/lib/os-release'):
        if path and os.path.lexists(path):
            try:
                return parse_os_release(read_text(path, lenient=True))
            except HostReadError as exc:
                module.fail_json(msg='os_release_path: %s. Point it at the os-release file.' % exc)
    return parse_os_release('')


def read_packages(module):
    """(package manager, {name: installed version or None}) for the packages option; (None, {}) when none asked."""
    names = module.params['packages']
    if not names:
        return None, {}
    status = module.params['dpkg_status_path']
    if os.path.lexists(status):
        try:
            return 'dpkg', parse_dpkg_status(read_text(status, lenient=True), names)
        except HostReadError as exc:
            module.fail_json(msg='dpkg_status_path: %s. Point it at dpkg\'s status database.' % exc)
    rpm = find_tool(module, 'rpm', None, required=False)
    if rpm:
        rc, out, err = run_tool(module, [rpm, '-q', '--qf', '%{NAME} %{VERSION}-%{RELEASE}\\n'] + list(names),
                                  what='rpm')
        # rpm exits non-zero when any package is missing; its lines say which.
        try:
            return 'rpm', parse_rpm_query(out, names, rc)
        except DriverError as exc:
            module.fail_json(msg='%s (rpm -q exited %d%s). Check that the RPM database is readable on this host.'
                             % (exc, rc, ': ' + output_summary('', err, 300) if err.strip() else ''))
    return None, dict((name, None) for name in names)


def check_paths(module):
    params = module.params
    problem = sysfs_root_problem(params['sysfs_root'])
    if problem:
        module.fail_json(msg='sysfs_root: %s. Set sysfs_root to the sysfs mount point (/sys on a host, or a tree laid '
                             'out like it in the lab), or leave it unset.' % problem)
    if os.path.lexists(params['modules_root']) and not os.path.isdir(params['modules_root']):
        module.fail_json(msg='modules_root %s is not a directory; point it at the directory that holds one tree per '
                             'kernel (/lib/modules).' % params['modules_root'])


def main():
    module = RdmaModule(
        argument_spec=dict(
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
        ),
        supports_check_mode=True,
    )
    params = module.params
    check_paths(module)
    try:
        kernel = check_kernel_release(params['kernel'] if params['kernel'] is not None else platform.release())
        check_module_names(params['modules'])
        check_package_names(params['packages'])
        names = list(RDMA_CORE_MODULES) + [name for name in params['modules'] if name not in RDMA_CORE_MODULES]
        modules, dep_found = kernel_modules(params['modules_root'], kernel, names, module.warn)
        for name, entry in modules.items():
            entry.update(loaded_module(params['sysfs_root'], name))
        ofed_kernels = kernels_with_ofed(params['modules_root'], module.warn)
        netns = read_netns(module, module.warn)
    except DriverError as exc:
        module.fail_json(msg=str(exc))
    ofed = ofed_state(read_ofed(module), kernel, modules, ofed_kernels, params['sysfs_root'])
    facts = dict(kernel=kernel, modules_dep_found=dep_found, ofed=ofed, modules=modules, netns=netns,
                 memory_peers=memory_peers(params['sysfs_root']))
    facts['os'] = read_os_release(module)
    facts['package_manager'], facts['packages'] = read_packages(module)
    module.exit_json(changed=False, ansible_facts=dict(rdma_driver=facts))


if __name__ == '__main__':
    main()
