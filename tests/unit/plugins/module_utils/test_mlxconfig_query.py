# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils._mlxconfig import (
    MlxconfigError,
    apply_changes,
    normalize_wanted,
    parse_query,
    pending,
    plan,
    render_next_boot,
    split_value,
)


@pytest.fixture
def cx6(recorded):
    return parse_query(recorded('mlxconfig-e-q-cx6.txt'))


def test_seed_plain_layout(recorded):
    config = parse_query(recorded('mlxconfig-q-seed001.txt'))
    assert config['LINK_TYPE_P1'] == {'default': None, 'current': None, 'next_boot': 'IB(1)', 'read_only': False,
                                      'modified': False}
    assert config['MEMIC_SIZE_LIMIT']['next_boot'] == '_256KB(1)'
    assert len(config) == 7


def test_verbose_layout(cx6):
    assert cx6['LINK_TYPE_P1'] == {'default': 'IB(1)', 'current': 'ETH(2)', 'next_boot': 'ETH(2)',
                                   'read_only': False, 'modified': True}
    assert cx6['PF_BAR2_SIZE']['read_only'] is True
    assert cx6['ESWITCH_HAIRPIN_DESCRIPTORS']['next_boot'] == 'Array[0..7]'
    assert cx6['IB_ROUTING_MODE_P1']['current'] == 'N/A'
    assert cx6['NUM_OF_VFS']['next_boot'] == '8'


def test_set_output_table(recorded):
    config = parse_query(recorded('mlxconfig-set.txt'))
    assert config == {'LINK_TYPE_P1': {'default': None, 'current': None, 'next_boot': 'ETH(2)', 'read_only': False,
                                       'modified': False, 'new': 'IB(1)'}}


@pytest.mark.parametrize('text, line', [
    ('no table here\n', 'no table here'),
    ('Configurations:   Next Boot\n   LINK_TYPE_P1   IB(1)   extra\n', '   LINK_TYPE_P1   IB(1)   extra'),
    ('Configurations:   Next Boot\n-E- Failed to query device\n', '-E- Failed to query device'),
])
def test_malformed_query_quotes_the_line(text, line):
    with pytest.raises(MlxconfigError) as error:
        parse_query(text)
    assert error.value.line == line


@pytest.mark.parametrize('printed, expected', [
    ('IB(1)', ('IB', 1)), ('True(1)', ('True', 1)), ('_256KB(1)', ('_256KB', 1)), ('8', (None, 8)),
    ('0x10', (None, 16)), ('N/A', (None, None)), ('Array[0..7]', (None, None)), (None, (None, None)),
])
def test_split_value(printed, expected):
    assert split_value(printed) == expected


def test_pending_lists_current_different_from_next(cx6):
    assert pending(cx6) == ['NUM_OF_VFS', 'SRIOV_EN']


def test_plain_layout_has_nothing_known_pending(recorded):
    assert pending(parse_query(recorded('mlxconfig-q-seed001.txt'))) == []


@pytest.mark.parametrize('wanted', ['IB', 'ib', 1, '1', 'IB(1)'])
def test_link_type_by_name_and_number(cx6, wanted):
    changes, set_args = plan(cx6, {'LINK_TYPE_P1': wanted})
    assert changes == {'LINK_TYPE_P1': {'before': 'ETH(2)', 'after': 'IB(1)'}}
    assert set_args == ['LINK_TYPE_P1=IB']


@pytest.mark.parametrize('wanted', ['ETH', 2, 'ETH(2)', 'eth'])
def test_value_equal_to_next_boot_is_no_change(cx6, wanted):
    assert plan(cx6, {'LINK_TYPE_P1': wanted}) == ({}, [])


@pytest.mark.parametrize('wanted', [True, 'True', 'true', 1, 'yes', 'True(1)'])
def test_boolean_values(cx6, wanted):
    assert plan(cx6, {'SRIOV_EN': wanted}) == ({}, [])


def test_boolean_change_sets_true_false(cx6):
    changes, set_args = plan(cx6, {'SRIOV_EN': False})
    assert changes == {'SRIOV_EN': {'before': 'True(1)', 'after': 'False(0)'}}
    assert set_args == ['SRIOV_EN=False']


def test_everything_in_one_set_call(cx6):
    changes, set_args = plan(cx6, {'LINK_TYPE_P1': 'IB', 'NUM_OF_VFS': 16, 'SRIOV_EN': True})
    assert sorted(changes) == ['LINK_TYPE_P1', 'NUM_OF_VFS']
    assert set_args == ['LINK_TYPE_P1=IB', 'NUM_OF_VFS=16']
    assert changes['NUM_OF_VFS'] == {'before': '8', 'after': '16'}


def test_enum_not_in_known_tables_accepts_printed_name_and_numbers(cx6):
    assert plan(cx6, {'CQE_COMPRESSION': 'balanced'}) == ({}, [])
    assert plan(cx6, {'PCI_WR_ORDERING': 'force_relax'})[1] == ['PCI_WR_ORDERING=force_relax']
    assert plan(cx6, {'CQE_COMPRESSION': 1})[1] == ['CQE_COMPRESSION=1']
    assert plan(cx6, {'LINK_TYPE_P1': 3})[1] == ['LINK_TYPE_P1=VPI']


@pytest.mark.parametrize('params, message', [
    ({'LINK_TYPE_P9': 'IB'}, 'unknown parameter LINK_TYPE_P9; did you mean LINK_TYPE_P1?'),
    ({'SRIOV_ENABLE': True}, 'did you mean SRIOV_EN?'),
    ({'TOTALLY_UNKNOWN': 1}, 'unknown parameter TOTALLY_UNKNOWN'),
    ({'LINK_TYPE_P1': 'INFINIBAND'}, 'LINK_TYPE_P1 does not accept'),
    ({'LINK_TYPE_P1': 7}, 'known values: IB(1), ETH(2), VPI(3)'),
    ({'LINK_TYPE_P1': 'ETH(1)'}, 'mixes ETH with the number 1'),
    ({'SRIOV_EN': 'maybe'}, 'SRIOV_EN is a boolean'),
    ({'SRIOV_EN': 2}, 'SRIOV_EN is a boolean'),
    ({'NUM_OF_VFS': 'eight'}, 'NUM_OF_VFS takes a number'),
    ({'NUM_OF_VFS': 'a b'}, 'is not a value mlxconfig accepts'),
    ({'PF_BAR2_SIZE': 1}, 'PF_BAR2_SIZE is read-only'),
    ({'ESWITCH_HAIRPIN_DESCRIPTORS': 1}, 'set its elements as ESWITCH_HAIRPIN_DESCRIPTORS[<index>]'),
    ({'CQE_COMPRESSION': 'AGGRESSIVE'}, 'known values: BALANCED(0), or a number'),
])
def test_bad_requests(cx6, params, message):
    with pytest.raises(MlxconfigError) as error:
        plan(cx6, params)
    assert message in str(error.value)


def test_parameter_the_device_does_not_have(recorded):
    config = parse_query(recorded('mlxconfig-e-q-cx4lx.txt'))
    with pytest.raises(MlxconfigError, match='LINK_TYPE_P1 is not a parameter of this device'):
        plan(config, {'LINK_TYPE_P1': 'ETH'})


def test_all_errors_are_reported_together(cx6):
    with pytest.raises(MlxconfigError) as error:
        plan(cx6, {'LINK_TYPE_P1': 'IB', 'PF_BAR2_SIZE': 1, 'NOPE': 1})
    assert 'read-only' in str(error.value) and 'unknown parameter NOPE' in str(error.value)


def test_na_parameter_takes_numbers(cx6):
    assert normalize_wanted('IB_ROUTING_MODE_P1', 1, cx6['IB_ROUTING_MODE_P1']) == ('1', 1, None)
    assert plan(cx6, {'IB_ROUTING_MODE_P1': 1})[0] == {'IB_ROUTING_MODE_P1': {'before': 'N/A', 'after': '1'}}


def test_check_mode_prediction_and_diff(cx6):
    changes, _args = plan(cx6, {'LINK_TYPE_P1': 'IB'})
    after = apply_changes(cx6, changes)
    assert after['LINK_TYPE_P1']['next_boot'] == 'IB(1)'
    assert cx6['LINK_TYPE_P1']['next_boot'] == 'ETH(2)'  # input untouched
    assert pending(after) == ['LINK_TYPE_P1', 'NUM_OF_VFS', 'SRIOV_EN']
    assert render_next_boot(cx6, ['LINK_TYPE_P1', 'NOPE']) == 'LINK_TYPE_P1=ETH(2)\nNOPE=(absent)\n'
