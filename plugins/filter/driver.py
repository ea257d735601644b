# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter explaining a failed GPUDirect module load. Documentation: modprobe_explain.yml."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.module_utils.drivers._rdma_driver import explain_modprobe_failure
from ansible_collections.gpunet.rdma.plugins.plugin_utils._filter_args import a_dict, a_str, either, filter_args


@filter_args('modprobe_explain',
             failure=either('a module name (str) or a community.general.modprobe result of a loop (dict)',
                            a_str('a module name'), a_dict('a modprobe result')),
             text=a_str('the modprobe error text', nullable=True))
def rdma_modprobe_explain(failure, text=None):
    if isinstance(failure, Mapping):
        module = failure.get('item') or failure.get('name')
        text = failure.get('stderr') or failure.get('msg') or ''
    else:
        module = failure
    if not module:
        raise AnsibleFilterError('modprobe_explain: give a module name, or a community.general.modprobe result '
                                 'of a loop (with item)')
    return explain_modprobe_failure(str(module), str(text or ''))


class FilterModule(object):
    def filters(self):
        return {'modprobe_explain': rdma_modprobe_explain}
