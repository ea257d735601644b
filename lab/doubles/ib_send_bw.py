# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Lab test double of perftest's ib_send_bw: see perftest_double.py
(one double serves every perftest tool by the name it is started as)."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from perftest_double import entry  # noqa: E402  pylint: disable=wrong-import-position

if __name__ == '__main__':
    sys.exit(entry())
