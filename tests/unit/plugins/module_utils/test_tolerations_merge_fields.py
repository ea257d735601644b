# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Merging our tolerations into the ones an admin set (NicClusterPolicy, role nicclusterpolicy_tolerations).

Two tolerations are the same only when every field the scheduler reads is the same: key, operator, value, effect and
tolerationSeconds. One that differs in any of them tolerates something else (a NoExecute taint is not a NoSchedule
one; a toleration with tolerationSeconds ends), so ours is added after the admin's, which stay first and untouched.
"""

from __future__ import annotations

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._network_operator import merge_tolerations

ADMIN = {'key': 'nvidia.com/gpu', 'operator': 'Equal', 'value': 'present', 'effect': 'NoSchedule'}


@pytest.mark.parametrize('field, value', [
    ('key', 'node-role.kubernetes.io/gpu'),
    ('operator', 'Exists'),
    ('value', 'absent'),
    ('effect', 'NoExecute'),
    ('tolerationSeconds', 300),
])
def test_a_toleration_differing_in_one_field_is_added_after_the_admins(field, value):
    ours = dict(ADMIN, **{field: value})
    if field == 'operator':
        ours.pop('value')  # Exists takes no value
    assert merge_tolerations([ADMIN], [ours]) == [ADMIN, ours]


def test_the_same_toleration_is_not_added_twice_and_the_admins_stay_first():
    wanted = [dict(ADMIN), {'key': 'node.kubernetes.io/unschedulable', 'operator': 'Exists', 'effect': 'NoSchedule'}]
    merged = merge_tolerations([ADMIN], wanted)
    assert merged == [ADMIN, wanted[1]]
    assert merge_tolerations(merged, wanted) == merged
