#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
---
module: sriov_vfs
short_description: Set the number of SR-IOV virtual functions of RDMA NICs through sysfs
version_added: 0.1.0
description:
  - Sets C(sriov_numvfs) of each physical function (PF) in O(pfs) the way the kernel takes it, and returns every PF's
    counts and its virtual functions (VFs) - index, PCI address, driver, netdev and RDMA device - from the PF's
    C(virtfnN) links.
  - "Follows the kernel's rules (C(Documentation/ABI/testing/sysfs-bus-pci), C(sriov_numvfs_store) in
    C(drivers/pci/iov.c)): the count cannot exceed C(sriov_totalvfs) (ERANGE), which a ConnectX PF sets from the
    firmware's C(NUM_OF_VFS); a PF whose firmware has C(SRIOV_EN) false has no SR-IOV attribute at all; writing the
    count the PF has changes nothing; a PF without a driver cannot create VFs (ENOENT); and a non-zero count on a PF
    that has VFs is refused (EBUSY) until 0 is written, which destroys the VFs."
  - Creating VFs on a PF without VFs (0 -> N) takes nothing away and is done unless O(create=false). Changing the count
    of a PF that has VFs destroys them first (pods or VMs using them lose them); it is done only with
    O(allow_change=true), writing 0 and then the count, and is otherwise returned in RV(pending) without touching the
    PF.
  - Everything is checked before anything is written, and a PF the kernel or the firmware would refuse fails the
    module naming the PF and the fix (the firmware parameters to set, the driver to bind). The PFs are then changed
    one after the other; when one fails (the kernel refuses a write, or the PF does not show the count written), it
    and every PF changed before it get their C(sriov_drivers_autoprobe) and C(sriov_numvfs) back, and the message
    says what was put back (a count put back creates new VFs, and whatever used the old ones lost them). With O(firmware), the
    count is also checked against the firmware's Next Boot C(NUM_OF_VFS) and C(SRIOV_EN); a count the firmware
    allows only after its next activation is returned in RV(waiting_for_firmware).
  - O(pfs[].drivers_autoprobe) is written before VFs are created; the kernel reads it only then (existing VFs keep
    their driver).
  - After a write the module reads the PF again. The count must be the wanted one and a C(virtfnN) link must exist per
    VF, as the kernel creates them before the write returns. A tree where they differ is not a kernel's sysfs (a plain
    file accepts any write) and fails the module.
author:
  - gpunet.rdma contributors (@gpunet)
options:
  pfs:
    description:
      - The physical functions and their wanted VFs.
    type: list
    elements: dict
    required: true
    suboptions:
      pf:
        description:
          - The PF, by PCI address (V(0000:0b:00.0) or V(0b:00.0)), network interface (C(/sys/class/net/<pf>/device))
            or RDMA device (V(mlx5_0)).
        type: str
        required: true
      num_vfs:
        description: VFs wanted on the PF, 0 for none (at most C(sriov_totalvfs)); default O(num_vfs).
        type: int
      drivers_autoprobe:
        description:
          - Whether new VFs are bound to the PF's driver (netdev and RDMA device; V(true), the kernel's default) or left
            unbound for VFIO (V(false)); default O(drivers_autoprobe).
        type: bool
  num_vfs:
    description: VFs wanted on each PF of O(pfs) that does not give its own O(pfs[].num_vfs).
    type: int
  drivers_autoprobe:
    description:
      - C(sriov_drivers_autoprobe) for each PF of O(pfs) that does not give its own. Unset (both) leaves it as it is.
    type: bool
  allow_change:
    description:
      - Change the count of a PF that has VFs (destroying them first). Without it such a change is returned in
        RV(pending) and the PF is left alone.
    type: bool
    default: false
  create:
    description:
      - Create VFs on a PF that has none (0 -> N). V(false) returns those in RV(pending) too.
    type: bool
    default: true
  firmware:
    description:
      - Firmware state of the PFs, to check the counts against C(NUM_OF_VFS) and C(SRIOV_EN) (Current and Next Boot),
        as the C(devices) of the firmware stage's ledger detail (role P(gpunet.rdma.nic_firmware#role)), or the same
        shape built from an C(mlxconfig) query, each a dict of C(pci_address) and C(values) (parameter name to its
        C(current) and C(next_boot) value). Values as mlxconfig prints them (V(8), V(True(1))). A PF without a record
        here is checked against C(sriov_totalvfs) only. A record of another shape (C(values) or a parameter's entry
        that is not a dict) fails the module before anything is written.
    type: list
    elements: dict
    default: []
  sysfs_root:
    description:
      - Mount point of sysfs (the lab and the tests point it at a tree laid out like C(/sys)). PFs are read and written
        under C(<sysfs_root>/bus/pci/devices/<pci address>).
    type: path
    default: /sys
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Plans and checks everything, writes nothing; RV(pfs[].vfs) are the VFs the PF has now.
  diff_mode:
    support: full
    details: C(sriov_numvfs) and C(sriov_drivers_autoprobe) of each PF, before and after.
  platform:
    platforms: posix
notes:
  - Persistence across reboots is not this module's job (the kernel creates no VF at boot); role
    P(gpunet.rdma.sriov_vfs#role) writes a systemd unit that sets the counts at boot.
  - Writes go to the attribute itself (one C(write) of the number and a newline, no temporary file), as sysfs takes
    them; the file is opened truncating, so that a tree of plain files laid out like sysfs never keeps the tail of a
    longer old value.
seealso:
  - name: Linux kernel sysfs ABI for PCI devices
    description: C(sriov_totalvfs), C(sriov_numvfs), C(sriov_drivers_autoprobe), C(virtfnN) and C(physfn).
    link: https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-bus-pci
  - module: gpunet.rdma.mlxconfig
requirements:
  - A kernel with SR-IOV support and the PF's driver loaded (mlx5_core); root.
'''

EXAMPLES = r'''
- name: Four VFs on each of two ConnectX PFs
  gpunet.rdma.sriov_vfs:
    pfs:
      - {pf: "0000:0b:00.0"}
      - {pf: mlx5_1}
    num_vfs: 4

- name: Change the count of a PF that has VFs (drain the node first)
  gpunet.rdma.sriov_vfs:
    pfs:
      - {pf: enp11s0f0np0, num_vfs: 8}
    allow_change: true

- name: VFs left unbound for VFIO, checked against the firmware the nic_firmware role recorded
  gpunet.rdma.sriov_vfs:
    pfs:
      - {pf: "0000:0b:00.0", num_vfs: 8, drivers_autoprobe: false}
    firmware: "{{ ansible_facts.gpunet_rdma_ledger.firmware.detail.devices | default([]) }}"
'''

RETURN = r'''
msg:
  description: What was done per PF, or why nothing was.
  returned: always
  type: str
  sample: "0000:0b:00.0 (mlx5_0, enp11s0f0np0): 0 -> 4 VFs created"
pfs:
  description: One entry per PF of O(pfs), in that order.
  returned: always
  type: list
  elements: dict
  contains:
    pf:
      description: The PF as given in O(pfs).
      type: str
      sample: mlx5_0
    pci_address:
      description: The PF's PCI address.
      type: str
      sample: "0000:0b:00.0"
    name:
      description: The PCI address with the PF's RDMA devices and netdevs, as messages name it.
      type: str
      sample: "0000:0b:00.0 (mlx5_0, enp11s0f0np0)"
    driver:
      description: The PF's driver (C(driver) link), V(null) when none is bound.
      type: str
      sample: mlx5_core
    netdevs:
      description: The PF's network interfaces.
      type: list
      elements: str
    rdma_devices:
      description: The PF's RDMA devices.
      type: list
      elements: str
    sriov_totalvfs:
      description: The most VFs the PF allows (the firmware's C(NUM_OF_VFS) on ConnectX); V(null) without SR-IOV.
      type: int
      sample: 8
    before:
      description: C(sriov_numvfs) before the run.
      type: int
      sample: 0
    sriov_numvfs:
      description: C(sriov_numvfs) after the run (in check mode, what it would be).
      type: int
      sample: 4
    wanted:
      description: The count of O(pfs[].num_vfs).
      type: int
      sample: 4
    drivers_autoprobe:
      description: C(sriov_drivers_autoprobe) after the run; V(null) on kernels without it.
      type: bool
    action:
      description:
        - V(none) (as wanted), V(create) (0 -> N), V(change) (VFs destroyed and created again), V(pending) (not allowed
          in this run), V(waiting_for_firmware) (the firmware allows the count only after its next activation).
      type: str
      sample: create
    reason:
      description: Why the action is what it is.
      type: str
    vfs:
      description: The PF's VFs after the run, by index, from its C(virtfnN) links.
      type: list
      elements: dict
      contains:
        index:
          description: N of C(virtfnN).
          type: int
        pci_address:
          description: The VF's PCI address.
          type: str
          sample: "0000:0b:00.2"
        driver:
          description: The driver bound to the VF, V(null) when none (C(drivers_autoprobe) false).
          type: str
        netdev:
          description: The VF's network interface, V(null) when it has none.
          type: str
          sample: enp11s0f0v0
        rdma_device:
          description: The VF's RDMA device, V(null) when it has none.
          type: str
          sample: mlx5_8
pending:
  description: The PFs whose count this run did not change because it may not (O(allow_change), O(create)).
  returned: always
  type: list
  elements: str
  sample: ["0000:0b:00.0 (mlx5_0, enp11s0f0np0): 2 -> 4 VFs destroys the 2 VFs the PF has"]
waiting_for_firmware:
  description: The PFs whose count the firmware allows only after its next activation (firmware reset or reboot).
  returned: always
  type: list
  elements: str
problems:
  description: On a refusal, one message per PF that cannot get its VFs (nothing was written then).
  returned: on failure
  type: list
  elements: str
written:
  description:
    - On a failure, the writes done, in order, each C({pci_address, attribute, value}), including those that put the
      PFs back; empty when the module failed before writing.
  returned: on failure
  type: list
  elements: dict
persist:
  description:
    - One line per PF for the boot unit's configuration, C(PCI NUM_VFS AUTOPROBE) (C(-) leaves autoprobe as it is),
      with the wanted counts, also where this run left them pending.
  returned: always
  type: list
  elements: str
  sample: ["0000:0b:00.0 4 1"]
'''

from ansible_collections.gpunet.rdma.plugins.module_utils._module import RdmaModule, Step
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import sysfs_root_problem
from ansible_collections.gpunet.rdma.plugins.module_utils.tuning._sriov import (
    SriovError,
    SysfsPci,
    check_firmware,
    explain_write_error,
    persist_lines,
    plan_pf,
    write_errno_text,
)

U16_MAX = 0xffff


def _state_text(records):
    lines = []
    for record in records:
        if record.get('sriov_numvfs') is not None:
            lines.append('%s sriov_numvfs %d' % (record['pci_address'], record['sriov_numvfs']))
        if record.get('drivers_autoprobe') is not None:
            lines.append('%s sriov_drivers_autoprobe %d' % (record['pci_address'], int(record['drivers_autoprobe'])))
    return '\n'.join(lines) + ('\n' if lines else '')


class SriovRun(object):

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.sysfs = SysfsPci(self.params['sysfs_root'])
        self.written = []

    def fail(self, msg, **extra):
        # RdmaModule.fail_json undoes the PFs already changed when this is called while the steps are applied, and
        # appends what it undid; ``written`` is the same list, so it holds those writes too.
        self.module.fail_json(msg=msg, changed=bool(self.written), written=self.written, **extra)

    def check_inputs(self):
        problem = sysfs_root_problem(self.params['sysfs_root'])
        if problem:
            self.fail('sysfs_root: %s. Set sysfs_root to the sysfs mount point (/sys on a host, or a tree laid out '
                      'like it), or leave it unset.' % problem)
        if not self.params['pfs']:
            self.fail('pfs is empty: name at least one PF (PCI address, netdev or RDMA device) with its num_vfs.')
        problems = check_firmware(self.params['firmware'])
        if problems:
            self.fail('Nothing was written. %s. Pass the firmware stage\'s records unchanged, or leave firmware unset.'
                      % '; '.join(problems), problems=problems)
        for entry in self.params['pfs']:
            if entry['num_vfs'] is None:
                entry['num_vfs'] = self.params['num_vfs']
            if entry['drivers_autoprobe'] is None:
                entry['drivers_autoprobe'] = self.params['drivers_autoprobe']
            if entry['num_vfs'] is None:
                self.fail('pfs: %s has no num_vfs and the module has no num_vfs to default to; give one of them.'
                          % entry['pf'])
            if not 0 <= entry['num_vfs'] <= U16_MAX:
                self.fail('pfs: num_vfs %d of %s is not a count of VFs (0 to sriov_totalvfs); give 0 for none.'
                          % (entry['num_vfs'], entry['pf']))

    def plan(self):
        """Resolve, read and plan every PF before anything is written; all refusals in one message."""
        plans, problems, seen = [], [], {}
        for entry in self.params['pfs']:
            try:
                pci = self.sysfs.resolve(entry['pf'])
                if pci in seen:
                    raise SriovError('%s and %s are the same PF (%s); name each PF once.'
                                     % (seen[pci], entry['pf'], pci))
                seen[pci] = entry['pf']
                record = self.sysfs.read_pf(pci)
                self.sysfs.check_consistent(record)
                step = plan_pf(record, entry['num_vfs'], entry['drivers_autoprobe'], self.params['allow_change'],
                               self.params['create'], self.params['firmware'])
            except SriovError as exc:
                problems.append(str(exc))
                continue
            plans.append((entry, record, step))
        if problems:
            self.fail('Nothing was written. %s' % ' '.join(problems), problems=problems)
        return plans

    # ------------------------------------------------------------------ applying
    # Each PF with writes is one Step of module.apply_steps: a PF that fails is put back by its own step (below), the
    # PFs changed before it by their undo, in reverse order, so that a failed run leaves every PF with the count and
    # autoprobe it had (new VFs where a count was put back: whatever used the old ones lost them).

    def write(self, record, attribute, value):
        self.sysfs.write(record['pci_address'], attribute, value)
        self.written.append({'pci_address': record['pci_address'], 'attribute': attribute, 'value': value})

    def step_for(self, entry, record, plan):
        """The Step of one PF: its writes and the check of what the kernel made of them; undo puts the PF back."""
        changes = ['sriov_drivers_autoprobe %s -> %d' % (_autoprobe_text(record['drivers_autoprobe']), value)
                   for attribute, value in plan['writes'] if attribute == 'sriov_drivers_autoprobe']
        if any(attribute == 'sriov_numvfs' for attribute, _value in plan['writes']):
            changes.append('sriov_numvfs %d -> %d' % (record['sriov_numvfs'], entry['num_vfs']))
        holder = {}

        def apply():
            holder['after'] = self.apply(entry, record, plan)

        def undo():
            problem = self.put_back(record)
            if problem:
                raise RuntimeError(problem)

        return Step('%s on %s' % (' and '.join(changes), record['name']), apply, undo), holder

    def apply(self, entry, record, plan):
        """The writes of one PF, then the PF read again; on a failure the PF is put back and the module fails."""
        for attribute, value in plan['writes']:
            try:
                self.write(record, attribute, value)
            except OSError as exc:
                self.fail_pf(explain_write_error(exc, record, attribute, value), record,
                             errno=getattr(exc, 'errno', None))
        try:
            after = self.sysfs.read_pf(record['pci_address'])
        except SriovError as exc:
            self.fail_pf('%s: reading it again after the writes failed: %s' % (record['name'], exc), record)
        if after['sriov_numvfs'] != entry['num_vfs']:
            self.fail_pf('%s: %d VFs written, the kernel reports %s: the PF driver enabled fewer ("VFs requested; only '
                         'N enabled" in dmesg), often for lack of interrupt vectors or BAR space (firmware NUM_VF_MSIX, '
                         'VF_LOG_BAR_SIZE).' % (record['name'], entry['num_vfs'], after['sriov_numvfs']), record)
        try:
            self.sysfs.check_consistent(after)
        except SriovError as exc:
            # A kernel creates the links before the write returns: this is not one (a plain file takes any write).
            self.fail_pf(str(exc), record)
        return after

    def put_back(self, record):
        """Give the PF the autoprobe and count of ``record`` again; None when done, else what is left and why.

        autoprobe first: the kernel reads it when the VFs are created again. A count the PF has is a no-op; another
        non-zero count takes 0 first (EBUSY otherwise).
        """
        pci = record['pci_address']
        try:
            autoprobe_now = self.sysfs.count(pci, 'sriov_drivers_autoprobe')
            if record['drivers_autoprobe'] is not None and autoprobe_now != int(record['drivers_autoprobe']):
                self.write(record, 'sriov_drivers_autoprobe', int(record['drivers_autoprobe']))
            now = self.sysfs.count(pci, 'sriov_numvfs')
            if now != record['sriov_numvfs']:
                if now:
                    self.write(record, 'sriov_numvfs', 0)
                if record['sriov_numvfs']:
                    self.write(record, 'sriov_numvfs', record['sriov_numvfs'])
        except (OSError, SriovError) as exc:
            said = write_errno_text(exc.errno) if isinstance(exc, OSError) else str(exc)
            return ('%s is left with sriov_numvfs %s and sriov_drivers_autoprobe %s, not %s and %s as before: putting '
                    'it back failed (%s); set them by hand'
                    % (record['name'], self.shown(pci, 'sriov_numvfs'), self.shown(pci, 'sriov_drivers_autoprobe'),
                       record['sriov_numvfs'], _autoprobe_text(record['drivers_autoprobe']), said))
        return None

    def shown(self, pci, attribute):
        try:
            value = self.sysfs.count(pci, attribute)
        except SriovError:
            value = None
        return 'unreadable' if value is None else value

    def fail_pf(self, message, record, **extra):
        """Fail on the PF of ``record``, put back first; the PFs changed before it are undone by apply_steps."""
        self.fail(' '.join(part for part in (message, self.put_back_sentence(record)) if part),
                  pf=record['pci_address'], **extra)

    def put_back_sentence(self, record):
        """``put_back`` for the message of the PF that failed: what it was given back, or what is left ('')."""
        pci = record['pci_address']
        problem = self.put_back(record)
        if problem:
            return problem + '.'
        now_written = [(w['attribute'], w['value']) for w in self.written if w['pci_address'] == pci]
        if not now_written:
            return ''
        again = ''
        if record['sriov_numvfs'] and ('sriov_numvfs', 0) in now_written:
            again = ' (its %d VFs were created again: whatever used the old ones lost them)' % record['sriov_numvfs']
        names = sorted(set(attribute for attribute, _value in now_written))
        return '%s set back to what %s%s.' % (' and '.join(names), 'it was' if len(names) == 1 else 'they were', again)

    def run(self):
        self.check_inputs()
        plans = self.plan()
        check = self.module.check_mode
        steps, holders = [], {}
        if not check:
            for entry, record, plan in plans:
                if plan['writes']:
                    step, holders[record['pci_address']] = self.step_for(entry, record, plan)
                    steps.append(step)
            self.module.apply_steps(steps)
        results, pending, waiting, before, after_records, lines = [], [], [], [], [], []
        for entry, record, plan in plans:
            before.append(record)
            after = record
            if plan['writes'] and not check:
                after = holders[record['pci_address']]['after']
            elif plan['writes']:
                after = dict(record)
                for attribute, value in plan['writes']:
                    key = 'sriov_numvfs' if attribute == 'sriov_numvfs' else 'drivers_autoprobe'
                    after[key] = value if key == 'sriov_numvfs' else bool(value)
            after_records.append(after)
            result = dict((key, after[key]) for key in ('pci_address', 'name', 'driver', 'netdevs', 'rdma_devices',
                                                        'sriov_totalvfs', 'sriov_numvfs', 'drivers_autoprobe', 'vfs'))
            result.update(pf=entry['pf'], before=record['sriov_numvfs'], wanted=entry['num_vfs'],
                          action=plan['action'], reason=plan['reason'])
            results.append(result)
            if plan['action'] == 'pending':
                pending.append('%s: %s' % (record['name'], plan['reason']))
            elif plan['action'] == 'waiting_for_firmware':
                waiting.append('%s: %s' % (record['name'], plan['reason']))
            lines.append('%s: %s' % (record['name'], plan['reason'] if plan['action'] != 'none'
                                     else 'as wanted (%s VFs)' % record['sriov_numvfs']))
        changed = any(plan['writes'] for _entry, _record, plan in plans)
        persist = persist_lines([{'pci_address': r['pci_address'], 'num_vfs': e['num_vfs'],
                                  'drivers_autoprobe': e['drivers_autoprobe']} for e, r, _s in plans])
        result = dict(changed=changed, msg='; '.join(lines), pfs=results, pending=pending,
                      waiting_for_firmware=waiting, persist=persist)
        if self.module._diff:
            result['diff'] = {'before': _state_text(before), 'after': _state_text(after_records),
                              'before_header': 'sriov', 'after_header': 'sriov'}
        self.module.exit_json(**result)


def _autoprobe_text(value):
    return 'unchanged' if value is None else int(value)


def main():
    module = RdmaModule(
        argument_spec=dict(
            pfs=dict(type='list', elements='dict', required=True, options=dict(
                pf=dict(type='str', required=True),
                num_vfs=dict(type='int'),
                drivers_autoprobe=dict(type='bool'),
            )),
            num_vfs=dict(type='int'),
            drivers_autoprobe=dict(type='bool'),
            allow_change=dict(type='bool', default=False),
            create=dict(type='bool', default=True),
            firmware=dict(type='list', elements='dict', default=[]),
            sysfs_root=dict(type='path', default='/sys'),
        ),
        supports_check_mode=True,
    )
    SriovRun(module).run()


if __name__ == '__main__':
    main()
