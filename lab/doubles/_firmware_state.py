# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared state of the lab's firmware test doubles (mlxconfig, mlxfwreset, mst, lab-reboot).

One JSON file per PCI function in <lab root>/firmware/<pci>.json keeps each
parameter's Default / Current / Next Boot as numbers; a simulated firmware
reset or reboot copies Next Boot to Current. Every call is appended to
<lab root>/firmware/calls.log so tests can count sets, resets and reboots.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile

LAB_ROOT = os.environ.get('GPUNET_LAB_ROOT', os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STATE_DIR = os.path.join(LAB_ROOT, 'firmware')
MST_DIR = os.environ.get('GPUNET_LAB_MST_DIR', '/dev/mst')
_PCI_RE = re.compile(r'^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$')


def log_call(tool, argv):
    with open(os.path.join(STATE_DIR, 'calls.log'), 'a') as handle:
        handle.write(json.dumps([tool] + list(argv)) + '\n')


def state_files():
    if not os.path.isdir(STATE_DIR):
        return []
    return sorted(os.path.join(STATE_DIR, f) for f in os.listdir(STATE_DIR) if f.endswith('.json'))


def load(path):
    with open(path) as handle:
        return json.load(handle)


def save(path, state):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
    with os.fdopen(fd, 'w') as handle:
        json.dump(state, handle, indent=1, sort_keys=True)
    os.rename(tmp, path)


def find_device(device):
    """Return (path, state) of a PCI address or MST path, or (None, None)."""
    if _PCI_RE.match(device):
        pci = device.lower() if len(device) > 7 else '0000:' + device.lower()
        path = os.path.join(STATE_DIR, pci + '.json')
        return (path, load(path)) if os.path.exists(path) else (None, None)
    if os.path.dirname(device) == MST_DIR.rstrip('/'):
        if not os.path.exists(device):
            return None, None
        for path in state_files():
            state = load(path)
            if state.get('mst') == os.path.basename(device):
                return path, state
    return None, None


def activate(path):
    """What a firmware reset or a reboot does: Next Boot becomes Current."""
    state = load(path)
    for param in state['params'].values():
        param['current'] = param['next']
    save(path, state)


def fail(message, rc=3):
    sys.stdout.write('-E- %s\n' % message)
    sys.exit(rc)
