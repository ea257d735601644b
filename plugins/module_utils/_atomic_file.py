# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Replace a file atomically, after an optional check of the candidate, with an optional backup."""

from __future__ import annotations

import os
import tempfile


def replace_file(module, path, text, backup=False, check=None):
    """Write ``text`` to a temporary file beside ``path``, run ``check(candidate)``, then move it over ``path``.

    ``check`` may call ``module.fail_json``; the candidate is removed and ``path``
    stays byte-identical. Returns the backup file name, or None.
    """
    directory = os.path.dirname(path) or '.'
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    fd, candidate = tempfile.mkstemp(dir=directory, prefix='.%s.' % os.path.basename(path))
    with os.fdopen(fd, 'w') as handle:
        handle.write(text)
    try:
        if check is not None:
            check(candidate)
    except BaseException:
        os.unlink(candidate)
        raise
    backup_file = module.backup_local(path) if backup and os.path.exists(path) else None
    module.atomic_move(candidate, path)
    return backup_file


def apply_file_attributes(module, path, changed):
    """Mode, owner and group from the common file arguments; returns the updated changed flag."""
    if module.check_mode or not os.path.exists(path):
        return changed
    return module.set_fs_attributes_if_different(module.load_file_common_arguments(module.params, path=path), changed)
