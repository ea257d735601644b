# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.filter.devices import rdma_pci_functions
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import SysfsReader

DEVICES = [
    {'device': 'mlx5_0', 'pci_address': '0000:0c:00.0', 'virtual_function': False},
    {'device': 'mlx5_1', 'pci_address': '0000:8d:00.0', 'virtual_function': False},
    {'device': 'mlx5_bond_0', 'pci_address': '0000:3b:00.0'},  # facts of an older run: nothing said about SR-IOV
    {'device': 'mlx5_2', 'pci_address': '0000:3b:00.0'},  # shares its function with the LAG device
    {'device': 'mlx5_3', 'pci_address': '0000:0c:00.2', 'virtual_function': True,
     'physical_function': '0000:0c:00.0', 'physical_function_device': 'mlx5_0'},
    {'device': 'mlx5_4', 'pci_address': '0000:02:00.5', 'hca_type': 'MT4116'},  # a VF by its device ID (-v facts)
    {'device': 'rxe0', 'pci_address': None},
    {'device': 'irdma0', 'pci_address': '0000:5e:00.0'},
]


def pf(device, pci):
    return {'device': device, 'pci_address': pci, 'virtual_function': False, 'physical_function': None,
            'warning': None}


def test_default_is_every_mellanox_physical_function_once():
    assert rdma_pci_functions(DEVICES) == [
        pf('mlx5_0', '0000:0c:00.0'),
        {'device': 'mlx5_bond_0', 'pci_address': '0000:3b:00.0', 'virtual_function': None,
         'physical_function': None, 'warning': None},
        pf('mlx5_1', '0000:8d:00.0'),
    ]


def test_by_name_and_by_pci_address():
    assert rdma_pci_functions(DEVICES, ['mlx5_1', '0c:00.0']) == [pf('mlx5_0', '0000:0c:00.0'),
                                                                  pf('mlx5_1', '0000:8d:00.0')]


def test_a_virtual_function_named_explicitly_comes_with_a_warning():
    chosen = rdma_pci_functions(DEVICES, ['0000:0c:00.2', 'mlx5_4'])
    assert [(c['device'], c['virtual_function'], c['physical_function']) for c in chosen] == [
        ('mlx5_4', True, None), ('mlx5_3', True, '0000:0c:00.0')]
    assert chosen[1]['warning'].startswith('mlx5_3 (0000:0c:00.2) is an SR-IOV virtual function, configured '
                                           'because it was named.')
    assert 'set through its physical function 0000:0c:00.0 (mlx5_0)' in chosen[1]['warning']
    assert 'Name the PF instead' in chosen[1]['warning']


def test_unknown_selector_lists_the_devices_with_their_vfs_marked():
    with pytest.raises(AnsibleFilterError, match=r'no RDMA device matches mlx5_7, af:00.0; this host has mlx5_0 '
                                                 r'\(0000:0c:00.0\), .*mlx5_3 \(0000:0c:00.2, SR-IOV VF\)'):
        rdma_pci_functions(DEVICES, ['mlx5_0', 'mlx5_7', 'af:00.0'])


def test_a_single_name_is_a_list_of_one():
    assert rdma_pci_functions(DEVICES, 'mlx5_1') == [pf('mlx5_1', '0000:8d:00.0')]


@pytest.mark.parametrize('devices, message', [
    ({'mlx5_0': {}}, r'expects the rdma_devices facts \(a list\), not dict'),
    (['mlx5_0'], 'expects rdma_devices items with a "device" name'),
    ([{'pci_address': '0000:0c:00.0'}], 'expects rdma_devices items with a "device" name'),
])
def test_facts_of_another_shape_are_refused(devices, message):
    with pytest.raises(AnsibleFilterError, match=message):
        rdma_pci_functions(devices)


def test_no_devices():
    assert rdma_pci_functions([]) == []
    assert rdma_pci_functions(None) == []


def test_lab_roce_node_leaves_its_vfs_to_the_pf(tmp_path, hardware):
    """The lab's RoCE node: eight PFs chosen, the two VFs of mlx5_0 left out."""
    _ports, devices = SysfsReader(hardware('roce_a100', tmp_path / 'sys')).read()
    chosen = rdma_pci_functions(devices)
    assert [c['device'] for c in chosen] == ['mlx5_%d' % n for n in range(8)]
    assert all(c['virtual_function'] is False for c in chosen)
