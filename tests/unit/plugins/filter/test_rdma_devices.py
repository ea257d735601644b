# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.filter.rdma_devices import rdma_pci_functions

DEVICES = [
    {'device': 'mlx5_0', 'pci_address': '0000:0c:00.0'},
    {'device': 'mlx5_1', 'pci_address': '0000:8d:00.0'},
    {'device': 'mlx5_bond_0', 'pci_address': '0000:3b:00.0'},
    {'device': 'mlx5_2', 'pci_address': '0000:3b:00.0'},  # shares its function with the LAG device
    {'device': 'rxe0', 'pci_address': None},
    {'device': 'irdma0', 'pci_address': '0000:5e:00.0'},
]


def test_default_is_every_mellanox_function_once():
    assert rdma_pci_functions(DEVICES) == [
        {'device': 'mlx5_0', 'pci_address': '0000:0c:00.0'},
        {'device': 'mlx5_bond_0', 'pci_address': '0000:3b:00.0'},
        {'device': 'mlx5_1', 'pci_address': '0000:8d:00.0'},
    ]


def test_by_name_and_by_pci_address():
    assert rdma_pci_functions(DEVICES, ['mlx5_1', '0c:00.0']) == [
        {'device': 'mlx5_0', 'pci_address': '0000:0c:00.0'},
        {'device': 'mlx5_1', 'pci_address': '0000:8d:00.0'},
    ]


def test_unknown_selector_lists_the_devices():
    with pytest.raises(AnsibleFilterError, match=r'no RDMA device matches mlx5_7, af:00.0; this host has mlx5_0 '):
        rdma_pci_functions(DEVICES, ['mlx5_0', 'mlx5_7', 'af:00.0'])


def test_no_devices():
    assert rdma_pci_functions([]) == []
