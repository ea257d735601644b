# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment(object):
    """The driver stack's options (module_utils/facts/_driver_facts.py DRIVER_OPTIONS), documented in one file.

    As a module's own options (rdma_driver_facts), and as the suboptions of ``driver`` of ibdev2netdev_facts (the same
    read in the facts call). ansible-test reads each block as a plain string, so the two are written out; a unit test
    (tests/unit/docs/test_doc_fragments.py) fails when they differ in anything but sysfs_root's default.
    """

    DOCUMENTATION = r'''
options:
  sysfs_root:
    description:
      - Where sysfs is mounted (C(module/), C(kernel/mm/memory_peers/)).
      - Must exist and look like a sysfs mount (one of C(class/), C(devices/), C(bus/), C(module/), C(kernel/)
        in it); anything else is an error naming the path.
    type: path
    default: /sys
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
      - Distribution packages to report the installed version of (C(ansible_facts.rdma_driver.packages)), e.g. the
        RDMA userspace the driver stage installs, so that a run finds them installed without asking the package
        manager again. Read from dpkg's status database, or with one C(rpm -q) call.
    type: list
    elements: str
    default: []
  os_release_path:
    description: The os-release file (C(ansible_facts.rdma_driver.os)); C(/usr/lib/os-release) when it is missing.
    type: path
    default: /etc/os-release
  dpkg_status_path:
    description: dpkg's status database, read for the C(packages) given, on Debian-like hosts.
    type: path
    default: /var/lib/dpkg/status
  nvidia_driver_root:
    description:
      - Where the GPU Operator's driver container bind-mounts its root file system on the host. While it exists and is
        not empty, the NVIDIA driver is the operator's (C(ansible_facts.rdma_driver.nvidia.source) V(gpu_operator)).
    type: path
    default: /run/nvidia/driver
'''

    IN_FACTS = r'''
options:
  driver:
    description:
      - Also read the driver stack in the same module call and return it as RV(ansible_facts.rdma_driver), exactly as
        M(gpunet.rdma.rdma_driver_facts) does with these options (one connection per host for both facts, as
        P(gpunet.rdma.rdma_discovery#role) reads them).
      - C(driver.sysfs_root) defaults to O(sysfs_root).
    type: dict
    suboptions:
      sysfs_root:
        description:
          - Where sysfs is mounted (C(module/), C(kernel/mm/memory_peers/)).
          - Must exist and look like a sysfs mount (one of C(class/), C(devices/), C(bus/), C(module/), C(kernel/)
            in it); anything else is an error naming the path.
        type: path
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
          - Distribution packages to report the installed version of (C(ansible_facts.rdma_driver.packages)), e.g. the
            RDMA userspace the driver stage installs, so that a run finds them installed without asking the package
            manager again. Read from dpkg's status database, or with one C(rpm -q) call.
        type: list
        elements: str
        default: []
      os_release_path:
        description: The os-release file (C(ansible_facts.rdma_driver.os)); C(/usr/lib/os-release) when it is missing.
        type: path
        default: /etc/os-release
      dpkg_status_path:
        description: dpkg's status database, read for the C(packages) given, on Debian-like hosts.
        type: path
        default: /var/lib/dpkg/status
      nvidia_driver_root:
        description:
          - Where the GPU Operator's driver container bind-mounts its root file system on the host. While it exists and is
            not empty, the NVIDIA driver is the operator's (C(ansible_facts.rdma_driver.nvidia.source) V(gpu_operator)).
        type: path
        default: /run/nvidia/driver
'''
