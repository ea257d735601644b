# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one mode check (``mode_problem``) of every file the collection writes: containerd specs and configs, the
manifests, the reports. A world-writable file would let anyone on the node change what containerd or the cluster
loads; setuid, setgid and sticky bits are never needed. Each mode below is judged by hand, in every form a user can
write it: a quoted octal string, the int YAML makes of an unquoted 0644, and a symbolic mode.
"""

from __future__ import annotations

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils._atomic_file import mode_problem

WORLD_WRITABLE = 'makes the file world-writable'
SPECIAL_BITS = 'sets the setuid, setgid or sticky bit'


@pytest.mark.parametrize('mode', [
    '0644', '0600', '0640', '0444', '0755', '0o644', 0o644, 0o600, 0,
    'u=rw,g=r,o=r', 'u=rw', 'ug=rw,o=r', 'u+w', 'o-w', 'a-w', 'a=r', 'a+r', 'g+w',
])
def test_modes_a_config_may_have_are_accepted(mode):
    assert mode_problem(mode) is None


@pytest.mark.parametrize('mode', [
    # octal, every way the "others may write" bit gets set
    '0666', '0777', '0662', '0602', '0002', '0o666', 0o666, 0o602, 0o002,
    # symbolic: "o" or "a" (all, others included) with w
    'o+w', 'o=rw', 'u=rw,g=r,o=rw', 'a+w', 'a=rw', 'a=rwx', 'ugo=rw', 'uo+w', 'ao=rw',
])
def test_world_writable_modes_are_refused(mode):
    problem = mode_problem(mode)
    assert problem is not None and WORLD_WRITABLE in problem, (mode, problem)
    assert repr(mode) in problem or str(mode) in problem


@pytest.mark.parametrize('mode', ['4644', '2644', '1644', '0o4755', 0o4644, 'u+s', 'g+s', 'o+t', 'a+t'])
def test_setuid_setgid_and_sticky_modes_are_refused(mode):
    problem = mode_problem(mode)
    assert problem is not None and SPECIAL_BITS in problem, (mode, problem)


@pytest.mark.parametrize('mode', ['rw-r--r--', '644x', '0999', 0o10000, -1, True, 6.44, None, ['0644']])
def test_malformed_modes_are_refused_not_written(mode):
    problem = mode_problem(mode)
    assert problem is not None
    assert WORLD_WRITABLE not in problem and SPECIAL_BITS not in problem
