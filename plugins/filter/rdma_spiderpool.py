# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Spiderpool filter: macvlan RoCE networks per GPU-affine NIC from facts. Documentation: the .yml file."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.module_utils._spiderpool import SpiderpoolError, build, unknown_values


def rdma_spiderpool(hosts, group, options=None, chart_values=None):
    options = dict(options or {})
    try:
        built = build(group, list(hosts or []), options)
        if chart_values:
            unknown = unknown_values(built['helm_values'], chart_values)
            if unknown:
                raise SpiderpoolError('helm values the Spiderpool chart does not have (helm would ignore them): %s'
                                      % ', '.join(unknown))
    except SpiderpoolError as exc:
        raise AnsibleFilterError('rdma_spiderpool: group %s: %s' % (group, exc))
    return built


class FilterModule(object):
    def filters(self):
        return {'rdma_spiderpool': rdma_spiderpool}
