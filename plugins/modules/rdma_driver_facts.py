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
extends_documentation_fragment:
  - gpunet.rdma.driver_stack
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
        nvidia:
          description:
            - The NVIDIA GPU kernel driver, which decides the GPUDirect mode of P(gpunet.rdma.gpudirect#role).
          type: dict
          contains:
            source:
              description: V(gpu_operator) while the GPU Operator's driver container root (O(nvidia_driver_root))
                exists, V(host) when the host's kernel has (C(modules.dep)) or runs the C(nvidia) module, null when
                the node has no NVIDIA driver.
              type: str
              sample: host
            loaded:
              description: C(nvidia) is loaded (C(/sys/module/nvidia)), whoever loaded it.
              type: bool
            version:
              description: The loaded driver's version; null when not loaded.
              type: str
              sample: 550.54.15
            host_installed:
              description: The host's C(modules.dep) lists C(nvidia) for the running kernel.
              type: bool
            host_path:
              description: Its path below C(/lib/modules/KERNEL); null when not installed on the host.
              type: str
            gpu_operator_root:
              description: O(nvidia_driver_root) when it holds the operator's driver root, else null.
              type: str
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

from ansible_collections.gpunet.rdma.plugins.module_utils.facts._driver_facts import DRIVER_OPTIONS, gather
from ansible_collections.gpunet.rdma.plugins.module_utils._module import RdmaModule


def main():
    module = RdmaModule(argument_spec=dict((name, dict(spec)) for name, spec in DRIVER_OPTIONS.items()),
                        supports_check_mode=True)
    module.exit_json(changed=False, ansible_facts=dict(rdma_driver=gather(module, module.params)))


if __name__ == '__main__':
    main()
