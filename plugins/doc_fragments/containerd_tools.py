# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment(object):
    """Where the containerd modules find containerd's own tools (``_host_io.CONTAINERD_DIRS``)."""

    # ctr: the containerd client, for the modules that read running containers or the default spec
    DOCUMENTATION = r'''
options:
  ctr_path:
    description:
      - Path of C(ctr), containerd's client. Default is C(ctr) on E(PATH), else in C(/usr/local/bin) (upstream release
        tarball, kubespray), C(/usr/bin) or C(/usr/sbin) (distribution packages).
      - A path that is a directory or not executable is an error naming it.
    type: path
'''

    # containerd itself, for the module that edits its config.toml
    CONTAINERD = r'''
options:
  containerd_path:
    description:
      - Path of the C(containerd) binary used to tell the release, to create a default config and to validate.
        Default is C(containerd) on E(PATH), else in C(/usr/local/bin) (upstream release tarball, kubespray),
        C(/usr/bin) or C(/usr/sbin) (distribution packages).
    type: path
'''
