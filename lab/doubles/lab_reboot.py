# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Lab test double of a reboot, for ansible.builtin.reboot's reboot_command.

Does what a reboot does to the simulated hardware (every device's Next Boot
becomes Current), counts the reboot and gives the node a new boot id, which
boot_time_command (``cat <lab root>/boot_id``) reads.
"""

from __future__ import annotations

import os
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _firmware_state import LAB_ROOT, activate, log_call, state_files  # noqa: E402  pylint: disable=wrong-import-position


def main(argv):
    log_call('reboot', argv[1:])
    for path in state_files():
        activate(path)
    with open(os.path.join(LAB_ROOT, 'boot_id'), 'w') as handle:
        handle.write('%s\n' % uuid.uuid4())
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
