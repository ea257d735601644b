# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Lab test double of mlxfwreset: ``mlxfwreset -d DEVICE -l LEVEL -y r`` activates Next Boot.

The reset is the adapter's, as on a real card: through either function of a dual-port card it activates the shared
configuration and the burned image for every function at once, so one reset per adapter is enough.

Prints what mlxfwreset prints for a level-3 reset (lines as recorded on a ConnectX-4 host).

A file ``<lab root>/firmware/mlxfwreset-unsupported`` makes every reset fail the
way mlxfwreset does on a device or host that cannot reset live, so the
fallback to a reboot can be tested.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _firmware_state import (  # noqa: E402  pylint: disable=wrong-import-position
    STATE_DIR,
    activate,
    fail,
    find_device,
    log_call,
)

LEVELS = {
    '0': 'Driver, PCI link, network link will remain up ("live-Patch")',
    '3': 'Driver restart and PCI reset',
    '4': 'Warm Reboot',
}


def main(argv):
    args = list(argv[1:])
    device, level, assume_yes, command = None, None, False, None
    while args:
        word = args.pop(0)
        if word in ('-d', '--device'):
            device = args.pop(0)
        elif word in ('-l', '--level'):
            level = args.pop(0)
        elif word in ('-y', '--yes'):
            assume_yes = True
        elif word in ('r', 'reset', 'q', 'query'):
            command = word
        else:
            fail('Unknown argument %s' % word, 1)
    log_call('mlxfwreset', argv[1:])
    path, _state = find_device(device or '')
    if path is None:
        fail('Failed to open device: %s' % device)
    if command in ('q', 'query'):
        sys.stdout.write('Reset-levels:\n')
        for number, text in sorted(LEVELS.items()):
            sys.stdout.write('%s: %-67s-%s\n' % (number, text, 'Supported' if number == '3' else 'Not Supported'))
        return 0
    if command not in ('r', 'reset') or not assume_yes:
        fail('usage: mlxfwreset -d DEVICE -l LEVEL -y r', 1)
    if level not in (None, '3') or os.path.exists(os.path.join(STATE_DIR, 'mlxfwreset-unsupported')):
        fail('Reset level %s is not supported for this device' % level, 1)
    shown = device[5:] if device.startswith('0000:') else device
    sys.stdout.write('\n%s reset level for device, %s:\n\n3: %s\nContinue with reset?[y/N] y\n'
                     % ('Requested' if level else 'Minimal', shown, LEVELS['3']))
    activate(path)
    for step, outcome in (('Sending Reset Command To Fw', 'Done'), ('Stopping Driver', 'Done'),
                          ('Resetting PCI', 'Done'), ('Starting Driver', 'Done'), ('Restarting MST', 'Skipped')):
        sys.stdout.write('-I- %-40s-%s\n' % (step, outcome))
    sys.stdout.write('-I- FW was loaded successfully.\n')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
