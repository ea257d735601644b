#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
---
module: mlxfwmanager
short_description: ConnectX firmware inventory (version, PSID, part number), drift, and a guarded update from an image
version_added: 0.1.0
description:
  - Reads, for each device, the firmware version on flash and the one running, the PSID (board id) and the part
    number with C(mlxfwmanager -d DEVICE --query) (NVIDIA MFT), or the version and PSID with C(flint -d DEVICE q) /
    C(mstflint -d DEVICE q) (mstflint prints no part number). Returns them per device and as the C(rdma_firmware)
    fact.
  - Compares each device with the group's expected firmware (O(expected_version), O(expected_psid)) and returns what
    drifts, per device.
  - With O(image) and O(update=true), burns the local firmware image on every device whose firmware on flash differs
    from the image's, with C(mlxfwmanager -d DEVICE -i IMAGE -u -f -y) or C(flint -d DEVICE -i IMAGE -y burn). Every
    device is queried and checked before anything is burned; a device whose PSID the image does not match, or whose
    expected version is not the image's, is refused and nothing is burned anywhere.
  - A burn writes the flash only. The card keeps running its firmware until a firmware reset (C(mlxfwreset)) or a
    reboot; the module never does either. It returns the devices whose flash differs from the running firmware in
    RV(pending) and RV(reboot_required). A second run with the same image burns nothing.
  - The flash belongs to the adapter; the PCI functions of a dual-port card (V(0000:3b:00.0) and V(0000:3b:00.1))
    show the same firmware. The image is burned once per adapter, through its first function given; the others are
    queried again afterwards (RV(devices[].burned_through)).
author:
  - gpunet.rdma contributors (@gpunet)
options:
  devices:
    description:
      - The devices, each as a PCI address (V(0000:86:00.0) or V(86:00.0)), an RDMA device name (V(mlx5_0), resolved
        through O(sysfs_root)) or an MST device path (V(/dev/mst/mt4119_pciconf0)).
    type: list
    elements: str
    required: true
  executable:
    description:
      - V(mlxfwmanager) (NVIDIA MFT), V(flint) (NVIDIA MFT) or V(mstflint) (mstflint), by name or path. Default the
        first of them found on E(PATH) or in C(/usr/sbin), C(/sbin), C(/usr/local/sbin), C(/usr/local/bin).
    type: path
  image:
    description:
      - A firmware image file on the host (C(.bin)) for the devices' PSID. Without O(update) the module only reports
        per device whether the image matches and whether burning it would change the flash.
    type: path
  update:
    description:
      - Burn O(image) where the flash holds another version. Needs O(image).
    type: bool
    default: false
  expected_version:
    description:
      - The firmware version the group's devices should run (V(16.35.2000)), or a dict of PSID to version for groups
        with cards of several kinds (C(MT_0000000223) to V(20.35.1012)). Quote versions in YAML.
    type: raw
  expected_psid:
    description:
      - The PSID (board id) the group's devices should have, or a list of allowed PSIDs.
    type: raw
  sysfs_root:
    description: Mount point of sysfs, to resolve RDMA device names and to name the RDMA device of a PCI address.
    type: path
    default: /sys
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpunet.rdma.tool_timeout
attributes:
  check_mode:
    support: full
    details: Queries every device and reports what would be burned; never burns.
  diff_mode:
    support: full
    details: Shows the firmware on flash of each device that would be burned, before and after.
  platform:
    platforms: posix
notes:
  - Commands run as argument lists with C(LC_ALL=C), each under O(timeout). A burn that is stopped by the timeout
    fails the module naming the device, what was burned before it and the query to run before trying again.
  - A drifting device is reported, not failed; the firmware stage of the P(gpunet.rdma.nic_firmware#role) role records
    it as a problem and the fleet report lists it.
requirements:
  - C(mlxfwmanager) or C(flint) (NVIDIA MFT), or C(mstflint) (mstflint) on the host.
seealso:
  - module: gpunet.rdma.mlxconfig
  - name: mlxfwmanager in the NVIDIA Firmware Tools (MFT) documentation
    description: Query and update syntax, statuses.
    link: https://docs.nvidia.com/networking/display/mftv4270/mlxfwmanager+%E2%80%93+firmware+update+and+query+tool
'''

EXAMPLES = r'''
- name: Firmware version, PSID and part number of two cards, checked against the group's release
  gpunet.rdma.mlxfwmanager:
    devices: [mlx5_0, mlx5_1]
    expected_version: "20.35.1012"
    expected_psid: MT_0000000223
  register: firmware

- name: Name the devices that drift
  ansible.builtin.debug:
    msg: "{{ firmware.drift }}"

- name: Burn the group's image where the flash holds another version (active after a firmware reset or reboot)
  gpunet.rdma.mlxfwmanager:
    devices: ["0000:0c:00.0", "0000:8d:00.0"]
    image: /var/lib/firmware/fw-ConnectX6-rel-20_35_1012-MCX653105A-HDA_Ax.bin
    update: true
    expected_version: "20.35.1012"

- name: The same with mstflint (Debian/Ubuntu package mstflint)
  gpunet.rdma.mlxfwmanager:
    devices: [mlx5_0]
    executable: mstflint
    image: /var/lib/firmware/fw-ConnectX6-rel-20_35_1012-MCX653105A-HDA_Ax.bin
    update: true
'''

RETURN = r'''
devices:
  description: One entry per device, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    requested:
      description: The device as given.
      type: str
    device:
      description: The RDMA device name of the PCI function (V(null) when sysfs names none).
      type: str
    pci_address:
      description: The PCI address with domain (V(null) for an MST path).
      type: str
    device_type:
      description: The card generation as mlxfwmanager prints it (V(ConnectX6)); V(null) with flint / mstflint.
      type: str
    part_number:
      description: The part number (V(MCX653105A-HDA_Ax)); V(null) when the tool does not print it (mstflint).
      type: str
    description:
      description: The card's description, when the tool prints it.
      type: str
    psid:
      description: The PSID (board id), V(MT_0000000223).
      type: str
    fw_version:
      description: The firmware version on flash (the one the next firmware reset or reboot starts).
      type: str
    running_version:
      description: The firmware version running now.
      type: str
    pending_activation:
      description: Whether the flash holds another version than the running one.
      type: bool
    base_guid:
      description: The card's base GUID, when printed.
      type: str
    image:
      description: With O(image), what the image holds for this device.
      type: dict
      contains:
        version:
          description: The image's firmware version for the device's PSID, V(null) when it has none.
          type: str
        matches:
          description: Whether the image is for the device's PSID.
          type: bool
        burn:
          description: Whether the flash differs from the image (what O(update) burns).
          type: bool
    burned:
      description: Whether this run burned the image through this device (in check mode, would burn).
      type: bool
    adapter:
      description: The adapter's PCI domain:bus:device (V(0000:3b:00)); V(null) for an MST path.
      type: str
    burned_through:
      description: The device (label as in RV(pending)) the image was burned through when another function of the
        same adapter took the burn, else V(null).
      type: str
    expected_version:
      description: The version the group expects for this device, V(null) when none.
      type: str
    expected_psids:
      description: The PSIDs the group allows, V(null) when any.
      type: list
      elements: str
    drift:
      description: What differs from the expectation, one sentence each.
      type: list
      elements: str
    state:
      description: V(drift), V(pending) (flash holds the expected or a burned version, not yet running), V(ok), or
        V(unchecked) (no expectation).
      type: str
image:
  description:
    - With O(image), the file, its firmware release (with mlxfwmanager, the release it holds for the devices' PSID;
      V(null) when it matches none) and, with flint / mstflint, its PSID (V(null) with mlxfwmanager, which does not
      print it).
  returned: when O(image) is given
  type: dict
  sample: {path: /var/lib/firmware/fw.bin, version: 20.35.1012, psid: MT_0000000223}
pending:
  description: The devices whose flash differs from the running firmware, as V(mlx5_0 firmware 20.35.1012).
  returned: always
  type: list
  elements: str
reboot_required:
  description: True when RV(pending) is not empty; a firmware reset or reboot activates it.
  returned: always
  type: bool
drift:
  description: Every device's drift, one sentence each, naming the device.
  returned: always
  type: list
  elements: str
executable:
  description: The tool that was used.
  returned: always
  type: str
ansible_facts:
  description: The inventory as facts.
  returned: always
  type: dict
  contains:
    rdma_firmware:
      description: Per device C(device), C(pci_address), C(device_type), C(part_number), C(psid), C(fw_version),
        C(running_version), C(pending_activation).
      type: list
      elements: dict
'''

import os

from ansible_collections.gpunet.rdma.plugins.module_utils.firmware._device import DEVICE_FORMS, DeviceError, resolve_device
from ansible_collections.gpunet.rdma.plugins.module_utils.firmware._fw_query import (
    FLINT,
    MLXFWMANAGER,
    STATUS_NO_IMAGE,
    FwQueryError,
    evaluate,
    expected_version_of,
    normalize_expectation,
    parse_flint_query,
    parse_mlxfwmanager,
    same_version,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import (
    SBIN_DIRS,
    find_tool,
    output_summary,
    printable,
    tool_timeout,
)
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._management_path import adapter_of
from ansible_collections.gpunet.rdma.plugins.module_utils._module import RdmaModule

TOOLS = ('mlxfwmanager', 'flint', 'mstflint')
FACT_KEYS = ('device', 'pci_address', 'device_type', 'part_number', 'psid', 'fw_version', 'running_version',
             'pending_activation')


def tool_family(module, executable):
    name = os.path.basename(executable)
    if 'mlxfwmanager' in name or name.startswith('mlxup'):
        return 'mlxfwmanager'
    if name.endswith('flint') or name.startswith('flint') or name.startswith('mstflint'):
        return 'flint'
    module.fail_json(msg='executable %s is not one of %s: the module reads their query layouts only. Set executable '
                     'to mlxfwmanager, flint or mstflint.' % (executable, ', '.join(TOOLS)))
    return None


def resolve(module, requested, sysfs_root):
    """``(argument for -d, pci address or None, rdma device name or None)`` of one requested device."""
    try:
        return resolve_device(requested, sysfs_root, label='devices entry', rdma_name=True)
    except DeviceError as exc:
        module.fail_json(msg=('%s' if exc.kind == 'sysfs' else 'devices: %s') % exc)
    return None


def run(module, tool, spec, **values):
    """``(argv, out)`` of a query that must succeed."""
    argv, rc, out, err = tool.run(spec, **values)
    if rc != 0:
        module.fail_json(msg='%s failed (rc=%d): %s.' % (' '.join(argv), rc, output_summary(out, err)), rc=rc,
                         stdout=printable(out), stderr=printable(err))
    return argv, out


def parse_or_fail(module, argv, out, parser):
    try:
        return parser(out)
    except FwQueryError as exc:
        module.fail_json(msg='Cannot read the output of %s: %s. Offending line: %r. Check that executable is '
                         'mlxfwmanager, flint or mstflint.' % (' '.join(argv), exc, printable(exc.line or '', 200)),
                         stdout=printable(out))
    return None


def query_device(module, executable, family, target, image):
    """The device's inventory; with mlxfwmanager and an image, also what the image holds for it."""
    if family == 'mlxfwmanager':
        argv, out = run(module, MLXFWMANAGER(module, executable), 'device image query', device=target, image=image)
        parsed = parse_or_fail(module, argv, out, parse_mlxfwmanager)
        if len(parsed['devices']) != 1:
            module.fail_json(msg='%s printed %d devices; expected the one asked for.' % (' '.join(argv),
                                                                                         len(parsed['devices'])),
                             stdout=printable(out))
        device = parsed['devices'][0]
        offered = None
        if image:
            offered = None if device['status'] == STATUS_NO_IMAGE else device['available_version']
        return device, offered
    argv, out = run(module, FLINT(module, executable), 'device query', device=target)
    device = parse_or_fail(module, argv, out, parse_flint_query)
    return device, None


def query_image(module, executable, image):
    """flint / mstflint: the image file's version and PSID (``-i IMAGE q``)."""
    argv, out = run(module, FLINT(module, executable), 'image query', image=image)
    parsed = parse_or_fail(module, argv, out, parse_flint_query)
    return {'path': image, 'version': parsed['fw_version'], 'psid': parsed['psid']}


def burn(module, executable, family, target, image, done_before):
    if family == 'mlxfwmanager':
        argv, stopped, rc, out, err = MLXFWMANAGER(module, executable).run_stoppable(
            'device image update', device=target, image=image)
    else:
        argv, stopped, rc, out, err = FLINT(module, executable).run_stoppable('device image burn', device=target,
                                                                              image=image)
    if stopped or rc != 0:
        # A burn stopped by the timeout is a failed burn too: the flash may hold part of the image.
        failure = ('did not finish within %d seconds and was stopped (raise timeout if burns are that slow here)'
                   % tool_timeout(module) if stopped else 'failed (rc=%d): %s' % (rc, output_summary(out, err)))
        module.fail_json(msg='%s %s. Burned before this device: %s. The firmware on flash of %s is unknown now: '
                         'query it (%s) before running again.'
                         % (' '.join(argv), failure, ', '.join(done_before) or 'nothing',
                            target, '%s -d %s %s' % (executable, target, '--query' if family == 'mlxfwmanager'
                                                     else 'q')),
                         rc=rc, stdout=printable(out), stderr=printable(err), burned=done_before)


def label_of(entry):
    return entry['device'] or entry['pci_address'] or entry['requested']


def main():
    module = RdmaModule(
        argument_spec=dict(
            devices=dict(type='list', elements='str', required=True),
            executable=dict(type='path'),
            image=dict(type='path'),
            update=dict(type='bool', default=False),
            expected_version=dict(type='raw'),
            expected_psid=dict(type='raw'),
            sysfs_root=dict(type='path', default='/sys'),
            timeout=dict(type='int', default=300),
        ),
        supports_check_mode=True,
    )
    params = module.params
    tool_timeout(module)  # a timeout below 1 s is refused before any tool runs
    try:
        expectation = normalize_expectation(params['expected_version'], params['expected_psid'], where='expected')
    except FwQueryError as exc:
        problem = str(exc).replace('expected.version', 'expected_version').replace('expected.psid', 'expected_psid')
        module.fail_json(msg='%s. Fix the group\'s firmware expectation (gpunet_rdma_fabric.firmware.version / .psid).'
                         % problem)
    if not params['devices']:
        module.fail_json(msg='devices is empty: give at least one device (%s), or leave the task out.' % DEVICE_FORMS)
    image = params['image']
    if params['update'] and not image:
        module.fail_json(msg='update=true needs image: the path of a firmware image file on the host.')
    if image and not os.path.isfile(image):
        module.fail_json(msg='image %s is not a file on this host: copy the firmware image there first (it is read '
                         'by the tool on the host, not on the controller).' % image)
    executable = find_tool(module, list(TOOLS), explicit=params['executable'], option='executable',
                           opt_dirs=list(SBIN_DIRS),
                           hint='Install NVIDIA MFT (mlxfwmanager, flint) or mstflint (Debian/Ubuntu: apt install '
                                'mstflint), or set executable.')
    family = tool_family(module, executable)

    entries = []
    for requested in params['devices']:
        target, pci, name = resolve(module, requested, params['sysfs_root'])
        entries.append({'requested': requested, 'target': target, 'pci_address': pci, 'device': name})
    targets = [entry['target'] for entry in entries]
    twice = sorted(set(t for t in targets if targets.count(t) > 1))
    if twice:
        module.fail_json(msg='devices: %s given more than once (as %s); give each device once.' % (
            ', '.join(twice), ', '.join(e['requested'] for e in entries if e['target'] in twice)))

    image_info = query_image(module, executable, image) if image and family == 'flint' else (
        {'path': image, 'version': None, 'psid': None} if image else None)
    for entry in entries:
        device, offered = query_device(module, executable, family, entry['target'], image)
        entry['query'] = device
        if image:
            if family == 'flint':
                matches = image_info['psid'] == device['psid']
                offered = image_info['version'] if matches else None
            else:
                matches = offered is not None
                # mlxfwmanager names the image's release only for the devices it is for
                image_info['version'] = image_info['version'] or offered
            entry['image'] = {'version': offered, 'matches': matches,
                              'burn': matches and not same_version(device['fw_version'], offered)}

    # Every device is checked before anything is burned: one refusal burns nothing anywhere.
    if params['update']:
        refused = []
        for entry in entries:
            device = entry['query']
            if not entry['image']['matches']:
                refused.append('%s has PSID %s, the image is for %s' % (
                    label_of(entry), device['psid'], image_info.get('psid') or 'another PSID (mlxfwmanager: %s)'
                    % STATUS_NO_IMAGE))
                continue
            wanted = expected_version_of(expectation, device['psid'])
            if wanted and not same_version(wanted, entry['image']['version']):
                refused.append('%s: the image holds %s, the group expects %s' % (
                    label_of(entry), entry['image']['version'], wanted))
        if refused:
            module.fail_json(msg='Nothing was burned: %s. Burn an image for the PSID (and version) of each device, '
                             'or limit the devices to those the image is for.' % '; '.join(refused),
                             devices=[public(entry, expectation) for entry in entries])

    burned = []
    diff_before, diff_after = [], []
    # the flash is the adapter's: burned once, through its first function; the other functions read it again
    burned_adapters = {}
    for entry in entries:
        entry['burned'] = bool(params['update'] and entry['image']['burn'])
        if not entry['burned']:
            continue
        adapter = adapter_of(entry['pci_address']) if entry['pci_address'] else None
        if adapter in burned_adapters:
            entry['burned'], entry['burned_through'] = False, burned_adapters[adapter]
            entry['query'] = dict(entry['query'], fw_version=entry['image']['version']) if module.check_mode else (
                query_device(module, executable, family, entry['target'], None)[0])
            entry['query']['pending_activation'] = not same_version(entry['query']['running_version'],
                                                                    entry['query']['fw_version'])
            continue
        if adapter:
            burned_adapters[adapter] = label_of(entry)
        diff_before.append('%s firmware on flash: %s' % (label_of(entry), entry['query']['fw_version']))
        diff_after.append('%s firmware on flash: %s' % (label_of(entry), entry['image']['version']))
        if module.check_mode:
            entry['query'] = dict(entry['query'], fw_version=entry['image']['version'])
            entry['query']['pending_activation'] = not same_version(entry['query']['running_version'],
                                                                    entry['query']['fw_version'])
            continue
        burn(module, executable, family, entry['target'], image, burned)
        burned.append(label_of(entry))
        after, _offered = query_device(module, executable, family, entry['target'], None)
        if not same_version(after['fw_version'], entry['image']['version']):
            module.fail_json(msg='%s burned %s without an error, but the flash reads %s. Query the device and check '
                             'the image (%s).' % (os.path.basename(executable), label_of(entry), after['fw_version'],
                                                  image), burned=burned)
        entry['query'] = after

    devices = [public(entry, expectation) for entry in entries]
    pending = ['%s firmware %s' % (label_of(entry), entry['query']['fw_version'])
               for entry in entries if entry['query']['pending_activation']]
    result = dict(
        changed=bool(diff_after),
        devices=devices,
        pending=pending,
        reboot_required=bool(pending),
        drift=[line for device in devices for line in device['drift']],
        executable=executable,
        ansible_facts={'rdma_firmware': [dict((key, device[key]) for key in FACT_KEYS) for device in devices]},
    )
    if image_info:
        result['image'] = image_info
    if module._diff and diff_after:
        result['diff'] = dict(before='\n'.join(diff_before) + '\n', after='\n'.join(diff_after) + '\n')
    module.exit_json(**result)


def public(entry, expectation):
    """The returned record of one device: inventory, image, expectation and drift."""
    device = entry['query']
    judged = evaluate(device, expectation, label=label_of(entry))
    record = {
        'requested': entry['requested'], 'device': entry['device'], 'pci_address': entry['pci_address'],
        'device_type': device.get('device_type'), 'part_number': device.get('part_number'),
        'description': device.get('description'), 'psid': device['psid'], 'fw_version': device['fw_version'],
        'running_version': device['running_version'], 'pending_activation': device['pending_activation'],
        'base_guid': device.get('base_guid'), 'burned': bool(entry.get('burned')),
        'adapter': adapter_of(entry['pci_address']) if entry['pci_address'] else None,
        'burned_through': entry.get('burned_through'),
    }
    if 'image' in entry:
        record['image'] = entry['image']
    record.update(judged)
    return record


if __name__ == '__main__':
    main()
