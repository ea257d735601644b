# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment(object):
    """The ``timeout`` option of every module that runs a tool which can hang on a wedged adapter."""

    DOCUMENTATION = r'''
options:
  timeout:
    description:
      - Seconds each run of the tool may take. A tool still running then is stopped (TERM, then KILL five seconds
        later) and the module fails naming the tool and the command, instead of holding the play forever.
      - A firmware or PCI tool that hangs usually means a wedged adapter or a lock held by another tool run; raise
        the value only when the tool is known to be slow on this host.
    type: int
    default: 300
'''
