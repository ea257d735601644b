# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The mlxconfig / mstconfig parser against outputs recorded on real machines (tests/unit/fixtures/public/mlxconfig).

Every expectation below was written by reading the artifact: the header's columns, the number of parameter rows,
and for each listed parameter every column as printed, its RO and '*' markers. Every artifact of the directory
must have an entry here, and a sidecar naming where it was recorded.
"""

from __future__ import annotations

import glob
import os

import pytest
import yaml

from ansible_collections.gpunet.rdma.plugins.module_utils.firmware._mlxconfig import (
    MlxconfigError,
    parse_query,
    parse_query_table,
    pending,
    plan,
)

CORPUS = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'public', 'mlxconfig')
PLAIN, VERBOSE, SET = ['Next Boot'], ['Default', 'Current', 'Next Boot'], ['Next Boot', 'New']


CX4_VPI = 'ConnectX-4 VPI adapter card; FDR IB (56Gb/s) and 40GbE; dual-port QSFP28; PCIe3.0 x8; ROHS R6'
CX5_VPI = ('ConnectX-5 VPI adapter card; EDR IB (100Gb/s) and 100GbE; dual-port QSFP28; PCIe3.0 x16; tall bracket; '
           'ROHS R6')
CX6_VPI = ('ConnectX-6 VPI adapter card; HDR IB (200Gb/s) and 200GbE; dual-port QSFP56; PCIe4.0 x16; tall bracket; '
           'ROHS R6')
MST_REDACTED, MST_CX3PRO, CX6_PART = '/dev/mst/mtxxxx_pciconf0', '/dev/mst/mt4103_pci_cr0', 'MCX653106A-HDA_Ax'
CX7 = ('NVIDIA ConnectX-7 HHHL Adapter Card; 200GbE (default mode) / NDR200 IB; Dual-port QSFP112; PCIe 5.0 x16 with '
       'x16 PCIe extension option; Crypto Disabled; Secure Boot Enabled')


def row(default=None, current=None, next_boot=None, new=None, read_only=False, modified=False):
    return {'default': default, 'current': current, 'next_boot': next_boot, 'new': new, 'read_only': read_only,
            'modified': modified}


# file: (layout, columns, number of parameter rows, (device type, name, description, device), {NAME: row})
TABLES = {
    'lore-linux-rdma-cx4lx-mstconfig-q.txt': ('plain', PLAIN, 115, ('ConnectX4LX', 'N/A', 'N/A', '01:00.1'), {
        'EXP_ROM_UEFI_x86_ENABLE': row(next_boot='False(0)'),
        'EXP_ROM_UEFI_ARM_ENABLE': row(next_boot='False(0)'),
        'MEMIC_SIZE_LIMIT': row(next_boot='_256KB(1)'),
        'NUM_OF_VFS': row(next_boot='8'),
        'SRIOV_EN': row(next_boot='True(1)'),
        'NUM_OF_VL_P1': row(next_boot='_4_VLs(3)'),
        'SRIOV_IB_ROUTING_MODE_P2': row(next_boot='True(1)'),
        'PCI_WR_ORDERING': row(next_boot='per_mkey(0)'),
        'DCR_LIFO_SIZE': row(next_boot='16384'),
        'ADVANCED_PCI_SETTINGS': row(next_boot='False(0)'),
    }),
    'nic-configuration-operator-cx4-e-query.txt': ('verbose', VERBOSE, 4, ('ConnectX4', None, None, None), {
        'KEEP_IB_LINK_UP_P2': row('False(0)', 'True(1)', 'True(1)', modified=True),
        'KEEP_LINK_UP_ON_BOOT_P2': row('False(0)', 'False(0)', 'False(0)'),
        'ESWITCH_HAIRPIN_DESCRIPTORS': row('Array[0..7]', 'Array[0..7]', 'Array[0..7]'),
        'MEMIC_SIZE_LIMIT': row('_256KB(1)', '_256KB(1)', 'DISABLED(0)', modified=True),
    }),
    'nic-configuration-operator-cx4-array-elements.txt': ('verbose', VERBOSE, 8, (None, None, None, None), dict(
        ('ESWITCH_HAIRPIN_DESCRIPTORS[%d]' % i, row('128', '128', '128')) for i in range(8))),
    'nic-configuration-operator-bluefield3-e-query.txt': ('verbose', VERBOSE, 1, ('BlueField3', None, None, None), {
        'INTERNAL_CPU_OFFLOAD_ENGINE': row('ENABLED(0)', 'ENABLED(0)', 'ENABLED(0)'),
    }),
    'nic-configuration-operator-cx9-array-summary.txt': ('verbose', VERBOSE, 1, ('ConnectX9', None, None, None), {
        'PCI_DOWNSTREAM_PORT_OWNER': row('Array[0..15]', 'Array[0..15]', 'Array[0..15]'),
    }),
    'nic-configuration-operator-cx9-array-elements.txt': ('verbose', VERBOSE, 4, ('ConnectX9', None, None, None), {
        'PCI_DOWNSTREAM_PORT_OWNER[0]': row('DEVICE_DEFAULT(0)', '148', 'DEVICE_DEFAULT(0)', modified=True),
        'PCI_DOWNSTREAM_PORT_OWNER[1]': row('DEVICE_DEFAULT(0)', 'HOST_0(1)', 'DEVICE_DEFAULT(0)', modified=True),
        'PCI_DOWNSTREAM_PORT_OWNER[2]': row('DEVICE_DEFAULT(0)', 'DEVICE_DEFAULT(0)', 'DEVICE_DEFAULT(0)'),
        'PCI_DOWNSTREAM_PORT_OWNER[4]': row('DEVICE_DEFAULT(0)', '164', 'DEVICE_DEFAULT(0)', modified=True),
    }),
    'ib-sriov-cni-cx5-mstconfig-set.txt': ('set', SET, 2, ('ConnectX5', 'MCX556A-ECA_Ax', CX5_VPI, '0000:02:00.0'), {
        'SRIOV_EN': row(next_boot='False(0)', new='True(1)'),
        'NUM_OF_VFS': row(next_boot='0', new='8'),
    }),
    'jiegec-blog-cx4-mlxconfig-set.txt': ('set', SET, 2, ('ConnectX4', 'REDACTED', CX4_VPI, MST_REDACTED), {
        'LINK_TYPE_P1': row(next_boot='IB(1)', new='ETH(2)'),
        'LINK_TYPE_P2': row(next_boot='IB(1)', new='ETH(2)'),
    }),
    'jiegec-blog-nvidia-doc-cx3pro-mlxconfig-set.txt': ('set', SET, 2, ('ConnectX3Pro', None, None, MST_CX3PRO), {
        'LINK_TYPE_P1': row(next_boot='ETH(2)', new='IB(1)'),
        'LINK_TYPE_P2': row(next_boot='ETH(2)', new='IB(1)'),
    }),
    'mesa-mofed-utils-cx4-mlxconfig-set.txt': ('set', SET, 1, ('ConnectX4', 'N/A', 'N/A', '0000:04:00.0'), {
        'LINK_TYPE_P1': row(next_boot='ETH(2)', new='IB(1)'),
    }),
    'maas-commissioning-scripts-pr2-cx6-set.txt': ('set', SET, 4, ('ConnectX6', CX6_PART, CX6_VPI, 'c2:00.0'), {
        'BOOT_VLAN': row(next_boot='1', new='0'),
        'BOOT_LACP_DIS': row(next_boot='True(1)', new='True(1)'),
        'BOOT_VLAN_EN': row(next_boot='False(0)', new='False(0)'),
        'BOOT_UNDI_NETWORK_WAIT': row(next_boot='0', new='30'),
    }),
    'sigitp-cx7-mlxconfig-set.txt': ('set', SET, 1, ('ConnectX7', 'MCX755106AS-HEA_Ax', CX7, '05:00.0'), {
        'NUM_OF_VFS': row(next_boot='16', new='127'),
    }),
}

# Outputs that are an error of the tool: the parser refuses them, quoting the line.
ERRORS = {
    'mstflint-issue4-connectx2-unsupported.txt': '-E- Unsupported device',
}


def read(name):
    with open(os.path.join(CORPUS, name)) as handle:
        return handle.read()


def test_every_artifact_has_an_expectation_and_a_sidecar():
    artifacts = sorted(os.path.basename(path) for path in glob.glob(os.path.join(CORPUS, '*'))
                       if not path.endswith('.source.yml'))
    assert len(artifacts) >= 10
    assert sorted(set(TABLES) | set(ERRORS)) == artifacts
    for name in artifacts:
        with open(os.path.join(CORPUS, name + '.source.yml')) as handle:
            sidecar = yaml.safe_load(handle)
        assert sidecar.get('source') or (sidecar.get('repository') and sidecar.get('path')
                                         and len(sidecar.get('commit', '')) == 40), name
        assert sidecar.get('what') and sidecar.get('excerpt'), name


@pytest.mark.parametrize('name', sorted(TABLES))
def test_table(name):
    layout, columns, count, device, rows = TABLES[name]
    table = parse_query_table(read(name))
    assert table['layout'] == layout
    assert table['columns'] == columns
    assert len(table['params']) == count
    assert (table['device_type'], table['name'], table['description'], table['device']) == device
    for param, expected in rows.items():
        got = dict(table['params'][param])
        got.setdefault('new', None)
        assert got == expected, param
    assert parse_query(read(name)) == table['params']


@pytest.mark.parametrize('name', sorted(ERRORS))
def test_tool_errors_are_refused_quoting_the_line(name):
    with pytest.raises(MlxconfigError) as error:
        parse_query(read(name))
    assert error.value.line == ERRORS[name]


def test_connectx4_lx_with_mixed_case_names_plans_a_set():
    """The issue: a real ConnectX-4 Lx query with EXP_ROM_UEFI_x86_ENABLE could not be parsed at all."""
    config = parse_query(read('lore-linux-rdma-cx4lx-mstconfig-q.txt'))
    changes, set_args = plan(config, {'EXP_ROM_UEFI_x86_ENABLE': True, 'NUM_OF_VFS': 8, 'NUM_OF_VL_P1': '_4_VLs'})
    assert changes == {'EXP_ROM_UEFI_x86_ENABLE': {'before': 'False(0)', 'after': 'True(1)'}}
    assert set_args == ['EXP_ROM_UEFI_x86_ENABLE=True']
    with pytest.raises(MlxconfigError) as error:
        plan(config, {'exp_rom_uefi_x86_enable': 1, 'LINK_TYPE_P1': 'ETH', 'NUM_OF_VFS': 70000})
    message = str(error.value)
    assert 'did you mean EXP_ROM_UEFI_x86_ENABLE? (parameter names are case-sensitive)' in message
    assert 'LINK_TYPE_P1 is not a parameter of this device' in message
    assert 'NUM_OF_VFS: 70000 does not fit the 16-bit field (0..65535)' in message


def test_value_names_are_learned_from_default_and_current():
    """_256KB(1) is printed in Default and Current only; DEVICE_DEFAULT/HOST_0 of an array element likewise."""
    config = parse_query(read('nic-configuration-operator-cx4-e-query.txt'))
    assert plan(config, {'MEMIC_SIZE_LIMIT': '_256KB'}) == (
        {'MEMIC_SIZE_LIMIT': {'before': 'DISABLED(0)', 'after': '_256KB(1)'}}, ['MEMIC_SIZE_LIMIT=_256KB'])
    elements = parse_query(read('nic-configuration-operator-cx9-array-elements.txt'))
    assert plan(elements, {'PCI_DOWNSTREAM_PORT_OWNER[1]': 'host_0'})[1] == ['PCI_DOWNSTREAM_PORT_OWNER[1]=HOST_0']
    assert pending(elements) == ['PCI_DOWNSTREAM_PORT_OWNER[0]', 'PCI_DOWNSTREAM_PORT_OWNER[1]',
                                 'PCI_DOWNSTREAM_PORT_OWNER[4]']


def test_array_parameters_are_set_by_element():
    config = parse_query(read('nic-configuration-operator-cx4-e-query.txt'))
    with pytest.raises(MlxconfigError, match=r'set its elements as ESWITCH_HAIRPIN_DESCRIPTORS\[<index>\]'):
        plan(config, {'ESWITCH_HAIRPIN_DESCRIPTORS': 64})
    with pytest.raises(MlxconfigError, match=r'index 8 is out of range; ESWITCH_HAIRPIN_DESCRIPTORS has the '
                                             r'elements 0\.\.7'):
        plan(config, {'ESWITCH_HAIRPIN_DESCRIPTORS[8]': 64})
    elements = parse_query(read('nic-configuration-operator-cx4-array-elements.txt'))
    assert plan(elements, {'ESWITCH_HAIRPIN_DESCRIPTORS[3]': 64})[1] == ['ESWITCH_HAIRPIN_DESCRIPTORS[3]=64']
    with pytest.raises(MlxconfigError, match='does not fit the 8-bit field'):
        plan(elements, {'ESWITCH_HAIRPIN_DESCRIPTORS[3]': 256})
