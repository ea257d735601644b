#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
---
module: ibdev2netdev_facts
short_description: Discover RDMA devices and ports (InfiniBand and RoCE) as facts
version_added: 0.1.0
description:
  - Reads the RDMA devices of a host and returns one fact item per (device, port) in RV(ansible_facts.rdma_ports)
    and one per device in RV(ansible_facts.rdma_devices), so that later tasks act on discovered netdev names, link layers and rates instead
    of typed ones.
  - The preferred source is the kernel's sysfs (C(/sys/class/infiniband) and C(/sys/class/net)); it needs no
    extra package and sees everything the kernel exposes. The C(ibdev2netdev) (MLNX_OFED) and iproute2
    C(rdma link) commands are used when sysfs is not mounted, or when asked for.
  - What a source cannot know is returned as V(null), never guessed, and named in the port's C(unknown) list.
    For example C(rdma link) does not print the link layer of a RoCE port or the rate, and C(ibdev2netdev)
    without C(-v) does not print the port state. When the port list comes from a command and sysfs is mounted
    at O(sysfs_root), what sysfs knows about the same ports (link layer, state, rate, LIDs, PCI address, the
    netdev of a port the command printed none for) fills the gaps; RV(sysfs_filled) says so.
  - SR-IOV virtual functions are reported as such in RV(ansible_facts.rdma_devices) (sysfs C(physfn) link, or
    the device ID printed by C(ibdev2netdev -v)), with the PCI address and device name of their physical
    function, so that later stages (firmware) can leave them alone. Their ports in RV(ansible_facts.rdma_ports) say
    so too and name their PF, and each PF's port lists its VFs (C(vfs)); discovery's expectations and validation's
    rails count ports of physical functions only.
  - A host without RDMA devices is not an error. The facts are empty lists and RV(msg) says why. A mistyped
    O(sysfs_root) (missing, or not a sysfs mount) is an error naming it.
  - The module reads only; it changes nothing on the host.
author:
  - gpunet.rdma contributors (@gpunet)
options:
  source:
    description:
      - Where to read the hardware from.
      - V(auto) uses sysfs when it is mounted at O(sysfs_root); a sysfs without C(class/infiniband) means the
        kernel has no RDMA device (the commands read the same kernel). Only when O(sysfs_root) is the default
        C(/sys) and missing (a stripped-down container) is the first command found of C(ibdev2netdev) and
        C(rdma) used.
      - V(sysfs) reads O(sysfs_root) only.
      - V(ibdev2netdev) runs C(ibdev2netdev -v) and falls back to plain C(ibdev2netdev) when the verbose form
        fails.
      - V(rdma) runs C(rdma -j link).
    type: str
    choices: [auto, sysfs, ibdev2netdev, rdma]
    default: auto
  sysfs_root:
    description:
      - Mount point of sysfs. Point it at a directory laid out like C(/sys) to read a fixture tree (the lab
        and the tests do this).
      - A path that does not exist or is not a sysfs mount (none of C(class/), C(devices/), C(bus/),
        C(module/), C(kernel/) in it, e.g. C(/sys/class) given for C(/sys)) is an error.
      - With O(source=ibdev2netdev) or O(source=rdma), the sysfs found here fills what the command does not
        print.
    type: path
    default: /sys
  ibdev2netdev_path:
    description:
      - Path of the C(ibdev2netdev) command. Default is to search E(PATH) and the usual sbin directories.
    type: path
  rdma_path:
    description:
      - Path of iproute2's C(rdma) command. Default is to search E(PATH) and the usual sbin directories.
    type: path
  management_path:
    description:
      - Also find the node's management path in the same module call and return it as
        RV(ansible_facts.rdma_management_path) - the interfaces that carry the address of the Ansible connection (the
        server side of E(SSH_CONNECTION)), the default routes, kubelet's C(--node-ip) and O(management_path.addresses),
        each with the interfaces below it (bond slaves, VLAN parents from sysfs C(lower_*) links), their PCI functions
        (an SR-IOV VF's PF included) and RDMA devices.
      - Read with iproute2 (C(ip -json address show), C(ip -json route show default)) and sysfs below O(sysfs_root).
        The rollout's blast-radius guard holds a firmware reset or RDMA driver restart that would take it down.
    type: dict
    suboptions:
      addresses:
        description: More addresses by which the node is managed (e.g. its Kubernetes InternalIP).
        type: list
        elements: str
        default: []
      kubelet_flag_files:
        description: Files whose C(--node-ip) flag gives kubelet's node address; missing files are skipped.
        type: list
        elements: path
        default: [/var/lib/kubelet/kubeadm-flags.env, /etc/default/kubelet, /etc/sysconfig/kubelet]
      ip_path:
        description: Path of iproute2's C(ip) command. Default is to search E(PATH) and the usual sbin directories.
        type: path
extends_documentation_fragment:
  - gpunet.rdma.driver_stack.in_facts
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
  - Commands run as argument lists with C(LC_ALL=C) so that their output does not depend on the host's locale.
  - "Layouts read: C(ibdev2netdev) plain (C(mlx5_0 port 1 ==> ib0 (Up)), also widened by C(column -t) and with
    the two-word C((Down/Up)) state), C(-v) (with or without the PCI address, padded states such as
    C((DOWN  ))) and the old C(<===>) style; C(rdma -j link) of every iproute2 release with JSON (compact or
    C(-p), C(ifname) as C(DEV/PORT) before iproute2 5.5) and the text forms C(link DEV/PORT ...) and
    C(INDEX/PORT: DEV/PORT: ...), with C(-d) capability lines."
  - C(rdma link) prints subnet prefix and LIDs for InfiniBand ports only, so those ports get link layer
    V(InfiniBand) from it; other ports keep V(null) unless sysfs tells.
seealso:
  - name: Linux kernel sysfs ABI for InfiniBand
    description: The attributes under C(/sys/class/infiniband) that this module reads.
    link: https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-class-infiniband
requirements:
  - For O(source=ibdev2netdev), the C(ibdev2netdev) script from MLNX_OFED or DOCA-OFED.
  - For O(source=rdma), iproute2's C(rdma) command.
'''

EXAMPLES = r'''
- name: Discover RDMA ports
  gpunet.rdma.ibdev2netdev_facts:

- name: Show the netdevs of the ACTIVE InfiniBand ports
  ansible.builtin.debug:
    msg: >-
      {{ ansible_facts.rdma_ports
         | selectattr('state', 'equalto', 'ACTIVE')
         | selectattr('link_layer', 'equalto', 'InfiniBand')
         | map(attribute='netdev') | list }}

- name: The RoCE v2 GID of each ACTIVE Ethernet port's IPv4 address (JMESPath; needs jmespath on the controller)
  ansible.builtin.debug:
    msg: >-
      {{ ansible_facts.rdma_ports | community.general.json_query(
           "[?link_layer=='Ethernet' && state=='ACTIVE'].{port: join(':', [device, to_string(port)]), netdev: netdev,
             gid: (gids[?type=='RoCE v2' && ipv4] | [0])}") }}

- name: Read the ports and the management path (interfaces of the connection, default routes, kubelet node IP)
  gpunet.rdma.ibdev2netdev_facts:
    management_path:
      addresses: [10.96.83.26]

- name: Read a fixture tree laid out like /sys (lab, tests)
  gpunet.rdma.ibdev2netdev_facts:
    sysfs_root: /opt/gpunet-lab/sys

- name: Read the ports and the driver stack in one call (what the rdma_discovery role does)
  gpunet.rdma.ibdev2netdev_facts:
    driver:
      modules: [nvidia_peermem, gdrdrv]
      packages: [rdma-core, perftest]

- name: Use the MLNX_OFED ibdev2netdev script
  gpunet.rdma.ibdev2netdev_facts:
    source: ibdev2netdev
    ibdev2netdev_path: /usr/sbin/ibdev2netdev
'''

RETURN = r'''
source:
  description: The source the facts were read from; V(none) when no source was available.
  returned: always
  type: str
  sample: sysfs
msg:
  description: What was found, or why nothing was found.
  returned: always
  type: str
  sample: "3 RDMA devices, 3 ports (2 ACTIVE) from sysfs"
sysfs_filled:
  description: Whether sysfs filled facts the command source did not print (always V(false) for sysfs itself).
  returned: always
  type: bool
  sample: true
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: complex
  contains:
    rdma_ports:
      description:
        - One item per (device, port), sorted by device name (natural order) and port number.
      returned: always
      type: list
      elements: dict
      contains:
        device:
          description: RDMA device name.
          type: str
          sample: mlx5_1
        port:
          description: Port number on the device (1-based).
          type: int
          sample: 1
        netdev:
          description:
            - Network interface of the port. For RoCE (link layer Ethernet) the netdev the port's GIDs are bound
              to, so that a LAG device such as C(mlx5_bond_0) maps to C(bond0); otherwise the netdev of the PCI
              function whose C(dev_port)/C(dev_id) matches the port. V(null) when there is none.
          type: str
          sample: ibp12s0
        netdev_state:
          description:
            - V(Up) or V(Down) from the netdev's carrier (its operstate when the carrier cannot be read), as
              C(ibdev2netdev) prints it. V(null) when unknown or without a netdev.
          type: str
          sample: Up
        state:
          description: Logical port state as the kernel names it (V(ACTIVE), V(DOWN), V(INIT), V(ARMED), ...).
          type: str
          sample: ACTIVE
        physical_state:
          description:
            - Physical port state in the kernel's sysfs spelling (V(LinkUp), V(Disabled), V(Polling), V(Sleep),
              ...). Values printed by C(rdma link) (V(LINK_UP)) are converted to this spelling.
          type: str
          sample: LinkUp
        link_layer:
          description: V(InfiniBand) or V(Ethernet) (RoCE). V(null) when the source does not tell.
          type: str
          sample: InfiniBand
        rate_gbps:
          description: Port rate in Gb/s as the kernel reports it (also for ports that are down). V(null) when unknown.
          type: float
          sample: 200
        rate:
          description: The rate as printed by the kernel.
          type: str
          sample: 200 Gb/sec (4X HDR)
        lid:
          description: Base LID of the port (InfiniBand; V(0) on Ethernet). V(null) when unknown.
          type: int
          sample: 3
        sm_lid:
          description: LID of the subnet manager the port sees. V(null) when unknown.
          type: int
          sample: 1
        pci_address:
          description: PCI address of the function the device belongs to, with domain. V(null) when unknown.
          type: str
          sample: "0000:0c:00.0"
        source:
          description: The source that listed the port (V(sysfs), V(ibdev2netdev) or V(rdma)).
          type: str
          sample: rdma
        unknown:
          description:
            - Which of C(state), C(physical_state), C(link_layer) and C(rate_gbps) the sources could not tell
              (their value is V(null)). The cluster-stage builders name these gaps instead of ignoring the port
              silently.
          type: list
          elements: str
          sample: [link_layer, rate_gbps]
        virtual_function:
          description:
            - V(true) for a port of an SR-IOV virtual function, as its device's C(virtual_function); V(null) when the
              source does not tell. A VF shares its PF's link, so discovery's expectations and validation's rails count
              only the other ports.
          type: bool
          sample: false
        physical_function:
          description: For a VF's port, the PCI address of its physical function; V(null) otherwise or when unknown.
          type: str
          sample: "0000:0b:00.0"
        physical_function_device:
          description: For a VF's port, the RDMA device of its physical function, when sysfs lists it.
          type: str
          sample: mlx5_0
        vfs:
          description:
            - For a PF's port, the RDMA devices of the VFs whose PF it is (the port of the same number, else the PF's
              first port), natural order; empty otherwise.
          type: list
          elements: str
          sample: [mlx5_8, mlx5_9]
    rdma_devices:
      description: One item per RDMA device, sorted by device name (natural order).
      returned: always
      type: list
      elements: dict
      contains:
        device:
          description: RDMA device name.
          type: str
          sample: mlx5_bond_0
        pci_address:
          description: PCI address of the device's function, with domain. V(null) when unknown.
          type: str
          sample: "0000:3b:00.0"
        node_guid:
          description: Node GUID as the kernel prints it. V(null) when the source does not tell.
          type: str
          sample: "0c42:a103:00a1:0c20"
        fw_ver:
          description: Firmware version. V(null) when the source does not tell.
          type: str
          sample: 20.31.1014
        hca_type:
          description: HCA type (device ID in Mellanox naming). V(null) when the source does not tell.
          type: str
          sample: MT4123
        board_id:
          description: Board ID (PSID). V(null) when the source does not tell. Bytes that are not UTF-8 are shown
            as U+FFFD.
          type: str
          sample: MT_0000000223
        node_desc:
          description: Node description (host name and device on an InfiniBand fabric) from sysfs; V(null) otherwise.
          type: str
          sample: gpu-a100-07 mlx5_1
        virtual_function:
          description:
            - V(true) for an SR-IOV virtual function, V(false) for a physical function, V(null) when the source
              does not tell (C(rdma link), plain C(ibdev2netdev)).
          type: bool
          sample: false
        physical_function:
          description: PCI address of the VF's physical function (from sysfs); V(null) for a PF or when unknown.
          type: str
          sample: "0000:0b:00.0"
        physical_function_device:
          description: RDMA device of the VF's physical function, when sysfs lists it.
          type: str
          sample: mlx5_0
        sriov_numvfs:
          description: VFs enabled on this physical function (C(device/sriov_numvfs)); V(null) without SR-IOV.
          type: int
          sample: 2
        sriov_totalvfs:
          description: VFs the function supports (C(device/sriov_totalvfs), set by C(NUM_OF_VFS) in firmware).
          type: int
          sample: 8
        ports:
          description: Port numbers of the device found in RV(ansible_facts.rdma_ports).
          type: list
          elements: int
          sample: [1]
    rdma_management_path:
      description:
        - With O(management_path), the interfaces that carry the node's management addresses and what lies under
          them. C(interfaces) lists each with C(name), C(sources) (V(connection), V(default_route),
          V(kubelet_node_ip), V(declared)), C(addresses), C(stack) (the interface and every interface below it),
          C(pci_functions), C(rdma_devices), C(drivers) and C(over_rdma); C(pci_functions), C(adapters),
          C(rdma_devices) and C(drivers) are their unions; C(unresolved) lists addresses found on no interface.
      returned: when O(management_path) is given
      type: dict
      sample:
        interfaces:
          - name: bond0
            sources: [connection, default_route]
            addresses: [10.96.83.26]
            stack: [bond0, enp59s0f0np0]
            pci_functions: ["0000:3b:00.0"]
            rdma_devices: [mlx5_bond_0]
            drivers: [mlx5_core]
            over_rdma: true
        pci_functions: ["0000:3b:00.0"]
        adapters: ["0000:3b:00"]
        rdma_devices: [mlx5_bond_0]
        drivers: [mlx5_core]
        unresolved: []
    rdma_driver:
      description:
        - With O(driver), the driver stack (kernel, modules, OFED, netns mode, memory peers, NVIDIA GPU driver, distribution and packages),
          exactly as M(gpunet.rdma.rdma_driver_facts) returns it under C(ansible_facts.rdma_driver).
      returned: when O(driver) is given
      type: dict
'''

import os


from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import (
    SBIN_DIRS,
    HostReadError,
    find_tool,
    output_summary,
    printable,
    read_text_or_none,
)
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._driver_facts import DRIVER_OPTIONS
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._driver_facts import gather as gather_driver_facts
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._management_path import (
    IP,
    ManagementPathError,
    SysfsNet,
    connection_address,
    kubelet_node_ips,
    management_path,
    parse_default_routes,
    parse_ip_addresses,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._module import RdmaModule
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import (
    IBDEV2NETDEV,
    RDMA,
    RdmaParseError,
    SysfsReader,
    fill_from_sysfs,
    is_virtual_function,
    parse_ibdev2netdev,
    parse_rdma_link,
)

# Where distributions and MLNX_OFED install the tools besides PATH (tests replace it).
_EXTRA_BIN_DIRS = SBIN_DIRS
DEFAULT_SYSFS_ROOT = '/sys'


class Discovery(object):
    """One run of the module: which source, what it found, and the message for an empty result."""

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.reader = SysfsReader(self.params['sysfs_root'])
        self.sysfs_problem = self.reader.root_problem()
        self.sysfs_filled = False

    def fail_sysfs_root(self):
        self.module.fail_json(msg='sysfs_root: %s. Set sysfs_root to the sysfs mount point (/sys on a host, or a '
                                  'tree laid out like it in the lab), or leave it unset.' % self.sysfs_problem,
                              sysfs_root=self.params['sysfs_root'])

    def run(self):
        """Return (source, ports, devices, why_empty)."""
        source = self.params['source']
        explicit_root = os.path.normpath(self.params['sysfs_root']) != DEFAULT_SYSFS_ROOT
        if self.sysfs_problem and (explicit_root or source == 'sysfs'):
            self.fail_sysfs_root()
        if source == 'sysfs' or (source == 'auto' and not self.sysfs_problem):
            if not self.reader.has_rdma_class():
                return 'sysfs', [], [], ('%s does not exist: the kernel has no RDMA device (no RDMA driver loaded, '
                                         'or no RDMA hardware)' % self.reader.class_ib)
            ports, devices = _parse('sysfs', self.reader.read)
            return 'sysfs', ports, devices, 'the kernel lists no RDMA device in %s' % self.reader.class_ib

        ibdev2netdev = rdma = None
        if source in ('auto', 'ibdev2netdev'):
            ibdev2netdev = find_tool(self.module, 'ibdev2netdev', self.params['ibdev2netdev_path'],
                                     option='ibdev2netdev_path', opt_dirs=_EXTRA_BIN_DIRS,
                                     required=source == 'ibdev2netdev',
                                     hint='Install MLNX_OFED/DOCA-OFED, set ibdev2netdev_path, or use source=sysfs.')
        if source in ('auto', 'rdma') and not ibdev2netdev:
            rdma = find_tool(self.module, 'rdma', self.params['rdma_path'], option='rdma_path',
                             opt_dirs=_EXTRA_BIN_DIRS, required=source == 'rdma',
                             hint='Install iproute2, set rdma_path, or use source=sysfs.')
        if ibdev2netdev:
            ports, devices = _parse('ibdev2netdev', parse_ibdev2netdev, self._from_ibdev2netdev(ibdev2netdev))
            self._fill(ports, devices)
            return 'ibdev2netdev', ports, devices, '%s printed no RDMA port' % ibdev2netdev
        if rdma:
            ports, devices = _parse('rdma link', parse_rdma_link, self._from_rdma(rdma))
            self._fill(ports, devices)
            return 'rdma', ports, devices, '%s -j link printed no RDMA port' % rdma
        return 'none', [], [], ('sysfs is not mounted at %s and neither ibdev2netdev nor rdma is installed: no '
                                'RDMA device can be seen on this host' % self.params['sysfs_root'])

    def _fill(self, ports, devices):
        if ports and not self.sysfs_problem and self.reader.has_rdma_class():
            self.sysfs_filled = _parse('sysfs', fill_from_sysfs, ports, devices, self.reader) > 0

    def _from_ibdev2netdev(self, path):
        ibdev2netdev = IBDEV2NETDEV(self.module, path)
        rc, out, err = ibdev2netdev.run('verbose')[1:]
        if rc != 0:
            rc, out, err = ibdev2netdev.run('')[1:]
        if rc != 0:
            hint = ''
            if rc == 255 and not (out or err).strip():
                hint = ' It exits so when /sys/class/infiniband is missing: the RDMA driver is not loaded.'
            self.module.fail_json(msg='%s exited with %d: %s.%s Check that the MLNX_OFED/DOCA driver stack is '
                                      'installed and loaded, or use source=sysfs.'
                                  % (path, rc, output_summary(out, err), hint), rc=rc, stdout=out, stderr=err)
        return out

    def _from_rdma(self, path):
        rc, out, err = RDMA(self.module, path).run('json link')[1:]
        if rc != 0:
            hint = ''
            if 'NETLINK_RDMA' in (out + err):
                hint = ' The kernel has no RDMA netlink: ib_core is not loaded or the kernel has no RDMA support.'
            self.module.fail_json(msg='%s -j link exited with %d: %s.%s Check that the RDMA kernel modules (ib_core, '
                                      'the device driver) are loaded, or use source=sysfs.'
                                  % (path, rc, output_summary(out, err), hint), rc=rc, stdout=out, stderr=err)
        return out


def _parse(source, parse, *args):
    try:
        return parse(*args)
    except RdmaParseError as exc:
        exc.source = source
        raise


def read_management_path(module, params, sysfs_root):
    """ansible_facts.rdma_management_path: the interfaces of the node's management addresses and what is below."""
    ip = find_tool(module, 'ip', params['ip_path'], 'management_path.ip_path',
                   hint='Install iproute2 or set management_path.ip_path.')
    outputs = {}
    for key, spec, family in (('addresses', 'json addresses', None), ('inet', 'json family default_route', '4'),
                              ('inet6', 'json family default_route', '6')):
        argv, rc, out, err = IP(module, ip).run(spec, family=family)
        if rc != 0:
            module.fail_json(msg='%s exited with %d: %s. The management path is read with iproute2 4.14 or later '
                                 '(JSON output).' % (' '.join(argv), rc, output_summary(out, err)), cmd=argv)
        outputs[key] = out
    flag_texts = {}
    for path in params['kubelet_flag_files']:
        try:
            text = read_text_or_none(path)
        except HostReadError as exc:
            module.fail_json(msg='management_path.kubelet_flag_files: %s' % exc)
        if text is not None:
            flag_texts[path] = text
    try:
        sources = [('connection', connection_address(os.environ.get('SSH_CONNECTION')))]
        sources += [('kubelet_node_ip', address) for address in kubelet_node_ips(flag_texts)]
        sources += [('declared', address) for address in params['addresses']]
        routes = parse_default_routes(outputs['inet'], 'inet') + parse_default_routes(outputs['inet6'], 'inet6')
        return management_path(parse_ip_addresses(outputs['addresses']), sources, SysfsNet(sysfs_root), routes)
    except ManagementPathError as exc:
        module.fail_json(msg='Cannot read the management path: %s. Check management_path.addresses and the kubelet '
                             'flag files, or report the iproute2 version.' % exc)
    except HostReadError as exc:
        module.fail_json(msg='Cannot read the management path: %s. Check sysfs_root and run the module as root.' % exc)


def main():
    module = RdmaModule(
        argument_spec=dict(
            source=dict(type='str', default='auto', choices=['auto', 'sysfs', 'ibdev2netdev', 'rdma']),
            sysfs_root=dict(type='path', default=DEFAULT_SYSFS_ROOT),
            ibdev2netdev_path=dict(type='path'),
            rdma_path=dict(type='path'),
            driver=dict(type='dict', apply_defaults=False, options=dict(
                (name, dict(spec, default=None) if name == 'sysfs_root' else dict(spec))
                for name, spec in DRIVER_OPTIONS.items())),
            management_path=dict(type='dict', apply_defaults=False, options=dict(
                addresses=dict(type='list', elements='str', default=[]),
                kubelet_flag_files=dict(type='list', elements='path', default=[
                    '/var/lib/kubelet/kubeadm-flags.env', '/etc/default/kubelet', '/etc/sysconfig/kubelet']),
                ip_path=dict(type='path'))),
        ),
        supports_check_mode=True,
    )
    driver_params = module.params['driver']
    if driver_params is not None and driver_params['sysfs_root'] is None:
        driver_params = dict(driver_params, sysfs_root=module.params['sysfs_root'])

    discovery = Discovery(module)
    try:
        source, ports, devices, why_empty = discovery.run()
    except RdmaParseError as exc:
        module.fail_json(msg='Cannot read RDMA hardware from %s: %s. Offending line: %s. Report it with the '
                             'tool and kernel versions, or choose another source.'
                             % (exc.source, exc, printable(exc.line, 300)),
                         offending_line=printable(exc.line, 300))

    if ports or devices:
        active = len([p for p in ports if p['state'] == 'ACTIVE'])
        vfs = len([d for d in devices if is_virtual_function(d)])
        msg = '%d RDMA devices%s, %d ports (%d ACTIVE) from %s' % (
            len(devices), ' (%d SR-IOV VF)' % vfs if vfs else '', len(ports), active, source)
        if discovery.sysfs_filled:
            msg += ', completed from sysfs'
        unknown = sorted(set(key for p in ports for key in p['unknown']))
        if unknown:
            msg += '; unknown from this source: %s' % ', '.join(unknown)
    else:
        msg = 'No RDMA device found: %s' % why_empty

    facts = dict(rdma_ports=ports, rdma_devices=devices)
    if driver_params is not None:
        facts['rdma_driver'] = gather_driver_facts(module, driver_params, lambda name: 'driver.' + name)
    if module.params['management_path'] is not None:
        facts['rdma_management_path'] = read_management_path(module, module.params['management_path'],
                                                             module.params['sysfs_root'])
    module.exit_json(changed=False, source=source, msg=msg, sysfs_filled=discovery.sysfs_filled, ansible_facts=facts)


if __name__ == '__main__':
    main()
