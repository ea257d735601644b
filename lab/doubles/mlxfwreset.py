# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Lab test double of mlxfwreset: ``mlxfwreset -d DEVICE -l LEVEL -y r`` activates Next Boot.

A file ``<lab root>/firmware/mlxfwreset-unsupported`` makes every reset fail the
way mlxfwreset does on a device or host that cannot reset live, so the
fallback to a reboot can be tested.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _firmware_state import STATE_DIR, activate, fail, find_device, log_call  # noqa: E402  pylint: disable=wrong-import-position


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
        sys.stdout.write('Reset-levels:\n0: Driver, PCI link, network link will remain up ("live-Patch")  -Supported\n'
                         '3: Driver restart and PCI reset                                      -Supported\n')
        return 0
    if command not in ('r', 'reset') or not assume_yes:
        fail('usage: mlxfwreset -d DEVICE -l LEVEL -y r', 1)
    if level not in (None, '3') or os.path.exists(os.path.join(STATE_DIR, 'mlxfwreset-unsupported')):
        fail('Reset level %s is not supported for this device' % level, 1)
    activate(path)
    sys.stdout.write('-I- Sending Reset Command To Fw             -Done\n-I- Restarting MST                          -Done\n'
                     '-I- FW was loaded successfully.\n')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
