# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Lab test double of MFT's ``mst``: ``mst start`` creates /dev/mst/<name> for every simulated device."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _firmware_state import MST_DIR, fail, load, log_call, state_files  # noqa: E402  pylint: disable=wrong-import-position


def main(argv):
    command = argv[1] if len(argv) > 1 else 'status'
    log_call('mst', argv[1:])
    if command == 'start':
        sys.stdout.write('Starting MST (Mellanox Software Tools) driver set\nLoading MST PCI module - Success\n')
        os.makedirs(MST_DIR, exist_ok=True)
        for path in state_files():
            open(os.path.join(MST_DIR, load(path)['mst']), 'a').close()
        return 0
    if command == 'status':
        if not os.path.isdir(MST_DIR):
            sys.stdout.write('MST modules:\n------------\n    MST PCI module is not loaded\n')
            return 1
        sys.stdout.write('MST modules:\n------------\n    MST PCI module loaded\n\nMST devices:\n------------\n')
        for name in sorted(os.listdir(MST_DIR)):
            sys.stdout.write('%s/%s\n' % (MST_DIR, name))
        return 0
    fail('unknown mst command %s' % command, 1)
    return 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
