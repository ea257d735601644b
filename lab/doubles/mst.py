# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Lab test double of MFT's ``mst``: ``mst start`` creates /dev/mst/<name> for every simulated device.

Prints what MFT 4.30's ``mst start`` and ``mst status`` print on a host with the configuration-cycle driver
(lines as recorded on a ConnectX-7 host).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _firmware_state import (  # noqa: E402  pylint: disable=wrong-import-position
    MST_DIR,
    fail,
    load,
    log_call,
    pci_of,
    state_files,
)


def main(argv):
    command = argv[1] if len(argv) > 1 else 'status'
    log_call('mst', argv[1:])
    if command == 'start':
        sys.stdout.write('Starting MST (Mellanox Software Tools) driver set\nLoading MST PCI module - Success\n'
                         'Loading MST PCI configuration module - Success\nCreate devices\n'
                         'Unloading MST PCI module (unused) - Success\n')
        os.makedirs(MST_DIR, exist_ok=True)
        for path in state_files():
            open(os.path.join(MST_DIR, load(path)['mst']), 'a').close()
        return 0
    if command == 'status':
        if not os.path.isdir(MST_DIR):
            sys.stdout.write('MST modules:\n------------\n    MST PCI module is not loaded\n'
                             '    MST PCI configuration module is not loaded\n')
            return 1
        sys.stdout.write('MST modules:\n------------\n    MST PCI module is not loaded\n'
                         '    MST PCI configuration module loaded\n\nMST devices:\n------------\n')
        by_name = dict((load(path)['mst'], pci_of(path)) for path in state_files())
        for name in sorted(os.listdir(MST_DIR)):
            sys.stdout.write('%-33s- PCI configuration cycles access.\n' % ('%s/%s' % (MST_DIR.rstrip('/'), name)))
            sys.stdout.write('%35sdomain:bus:dev.fn=%s addr.reg=88 data.reg=92 cr_bar.gw_offset=-1\n'
                             % ('', by_name.get(name, '0000:00:00.0')))
            sys.stdout.write('%35sChip revision is: 00\n' % '')
        sys.stdout.write('\n')
        return 0
    fail('unknown mst command %s' % command, 1)
    return 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
