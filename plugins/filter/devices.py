# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter that picks PCI functions from rdma_devices facts. Documentation: pci_functions.yml."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import select_pci_functions
from ansible_collections.gpunet.rdma.plugins.plugin_utils._filter_args import filter_args


# The input and the selectors are checked by select_pci_functions (its messages name the rdma_devices facts).
@filter_args('pci_functions')
def rdma_pci_functions(devices, selectors=None):
    if selectors is not None and isinstance(selectors, str):
        # A single name is a common slip in group_vars (nic_firmware_devices: mlx5_0); treat it as a list of one.
        selectors = [selectors]
    try:
        return select_pci_functions(devices if devices is not None else [], selectors or [])
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('pci_functions: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'pci_functions': rdma_pci_functions}
