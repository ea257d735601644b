# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpunet.rdma.plugins.module_utils.firmware._mlxconfig import (
    MlxconfigError,
    apply_changes,
    element_queries,
    normalize_wanted,
    parse_query,
    parse_query_table,
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
    assert plan(cx6, {'LINK_TYPE_P1': 3}, 'ConnectX3Pro')[1] == ['LINK_TYPE_P1=VPI']
    with pytest.raises(MlxconfigError, match=r'known values: IB\(1\), ETH\(2\)$'):
        plan(cx6, {'LINK_TYPE_P1': 'VPI'}, 'ConnectX6')


@pytest.mark.parametrize('params, message', [
    ({'LINK_TYPE_P9': 'IB'}, 'unknown parameter LINK_TYPE_P9; did you mean LINK_TYPE_P1?'),
    ({'SRIOV_ENABLE': True}, 'did you mean SRIOV_EN?'),
    ({'TOTALLY_UNKNOWN': 1}, 'unknown parameter TOTALLY_UNKNOWN'),
    ({'LINK_TYPE_P1': 'INFINIBAND'}, 'LINK_TYPE_P1 does not accept'),
    ({'LINK_TYPE_P1': 7}, 'known values: IB(1), ETH(2)'),
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


# The layouts below follow the printf formats of mlxconfig's source (mstflint mlxconfig/mlxcfg_ui.cpp) of each era;
# the outputs recorded on real machines are in tests/unit/public/test_public_mlxconfig.py.
def old_row(marker, name, *values):
    """MFT <= 4.30: '%-9s%-36s' then '%-16s' values, a space only after a value longer than 16 characters."""
    out = '%-9s%-36s' % (marker, name)
    for i, value in enumerate(values):
        if i and len(values[i - 1]) > 16:
            out += ' '
        out += '%-16s' % value
    return out


def test_values_glued_by_an_old_tool_are_split():
    text = '\n'.join([
        '%-16s%36s%16s%18s' % ('Configurations:', 'Default', 'Current', 'Next Boot'),
        old_row('', 'PCI_BUS00_HIERARCHY_TYPE', 'PCIE_ENDPOINT(0)', 'PCIE_ENDPOINT(0)', 'PCIE_ENDPOINT(0)'),
        old_row('*', 'PHY_FEC_OVERRIDE_P1', 'DEVICE_DEFAULT(0)', 'DEVICE_DEFAULT(0)', 'FEC_RS(2)'),
        old_row('', 'HOST_CHAINING_DESCRIPTORS', 'Array[0..7]', 'Array[0..7]', 'Array[0..7]'),
    ])
    assert 'PCIE_ENDPOINT(0)PCIE_ENDPOINT(0)' in text  # the format really glues them
    config = parse_query(text)
    assert config['PCI_BUS00_HIERARCHY_TYPE'] == {'default': 'PCIE_ENDPOINT(0)', 'current': 'PCIE_ENDPOINT(0)',
                                                  'next_boot': 'PCIE_ENDPOINT(0)', 'read_only': False,
                                                  'modified': False}
    assert config['PHY_FEC_OVERRIDE_P1']['next_boot'] == 'FEC_RS(2)' and config['PHY_FEC_OVERRIDE_P1']['modified']


def test_current_mft_layout_with_read_only_marker():
    """MFT 4.36: name column of 56, value columns of 33 plus one space, 'RO' after the '*' column."""
    header = '%-56s%-33s %-33s %-33s' % ('Configurations:', 'Default', 'Current', 'Next Boot')
    rows = ['%s%s     %-48s%-33s %-33s %-33s' % ('*', 'RO', 'PF_BAR2_SIZE', '0', '0', '1'),
            '%s%s     %-48s%-33s %-33s %-33s' % (' ', '  ', 'EXP_ROM_UEFI_x86_ENABLE', 'True(1)', 'True(1)', 'True(1)')]
    trailer = "The '*' shows parameters with next value different from default/current value.\n\n" \
              "The 'RO' shows parameters which are for read only and cannot be changed\n"
    config = parse_query('\n'.join([header] + rows) + '\n' + trailer)
    assert config['PF_BAR2_SIZE'] == {'default': '0', 'current': '0', 'next_boot': '1', 'read_only': True,
                                      'modified': True}
    assert config['EXP_ROM_UEFI_x86_ENABLE']['current'] == 'True(1)'


def test_default_and_next_boot_without_current():
    """ConnectX-3 firmware cannot read current values: -e prints Default and Next Boot, and says so."""
    text = ('Configurations:                              Default         Next Boot\n'
            '         SRIOV_EN                            True(1)         True(1)         \n'
            '         LINK_TYPE_P1                        VPI(3)          ETH(2)          \n'
            'Device Firmware does not support reading current configurations\n')
    table = parse_query_table(text)
    assert table['layout'] == 'verbose' and table['columns'] == ['Default', 'Next Boot']
    assert table['notes'] == ['Device Firmware does not support reading current configurations']
    assert table['params']['LINK_TYPE_P1'] == {'default': 'VPI(3)', 'current': None, 'next_boot': 'ETH(2)',
                                               'read_only': False, 'modified': False}
    assert pending(table['params']) == []


def test_set_with_default_labels_next_boot_default():
    table = parse_query_table('Configurations:                              Default         New\n'
                              '         NUM_OF_VFS                          0               8\n')
    assert table['columns'] == ['Next Boot', 'New'] and table['layout'] == 'set'
    assert table['params']['NUM_OF_VFS']['next_boot'] == '0' and table['params']['NUM_OF_VFS']['new'] == '8'


def test_name_as_wide_as_its_column():
    """MFT <= 4.30 prints names with %-36s: a 36-character name touches its value; the other rows tell where."""
    name = 'VIRTIO_BLK_EMULATION_SUBSYSTEM_ID_P1'
    assert len(name) == 36
    text = '\n'.join(['%-16s%38s' % ('Configurations:', 'Next Boot'), old_row('', 'NUM_OF_VFS', '8'),
                      old_row('*', name, '4162'), old_row('', 'SRIOV_EN', 'True(1)')])
    assert name + '4162' in text
    config = parse_query(text)
    assert config[name]['next_boot'] == '4162' and config[name]['modified'] is True
    assert config['NUM_OF_VFS']['next_boot'] == '8'


@pytest.mark.parametrize('text, message, line', [
    ('Configurations:   Next Boot\n   A   1\nDevice #2:\nConfigurations:   Next Boot\n   A   1\n',
     'more than one device', 'Device #2:'),
    ('Configurations:   Next Boot\n   A   1\n   A   2\n', 'printed twice', '   A   2'),
    ('Configurations:   Next Boot\n   A   {1}\n', 'unrecognised value', '   A   {1}'),
    ('Configurations:   Next Boot\n   A-B   1\n', 'unrecognised query line', '   A-B   1'),
    ('Configurations:   Next Boot   Next Boot\n', 'names a column twice', 'Configurations:   Next Boot   Next Boot'),
    ('Configurations:   Current\n', 'without a Next Boot column', 'Configurations:   Current'),
    ('{"Device #1": {"tlv_configuration": {}}}', 'no "Configurations:" table',
     '{"Device #1": {"tlv_configuration": {}}}'),
    ('', 'no "Configurations:" table', ''),
])
def test_other_shapes_are_refused(text, message, line):
    with pytest.raises(MlxconfigError) as error:
        parse_query(text)
    assert message in str(error.value)
    assert error.value.line == line


@pytest.mark.parametrize('wanted, message', [
    ([1], 'a list is not a firmware value'),
    ({'IB': 1}, 'a dict is not a firmware value'),
    (None, 'has no value; give a name'),
    (1.5, 'is not a whole number'),
    (-1, 'is negative'),
    (2 ** 32, 'is out of range'),
    ('10^23', 'is not a value mlxconfig accepts'),
    (10 ** 23, 'is out of range'),
])
def test_values_of_the_wrong_type_or_range(cx6, wanted, message):
    # A number parameter whose field width is not known: only the 32-bit limit of every tool applies.
    config = dict(cx6, VENDOR_NUMBER_X={'default': '0', 'current': '0', 'next_boot': '0', 'read_only': False,
                                        'modified': False})
    with pytest.raises(MlxconfigError) as error:
        plan(config, {'VENDOR_NUMBER_X': wanted})
    assert message in str(error.value)
    assert str(error.value).startswith('VENDOR_NUMBER_X')


def test_numbers_are_checked_against_the_field_width(cx6):
    assert plan(cx6, {'ROCE_CC_PRIO_MASK_P1': 255}) == ({}, [])
    with pytest.raises(MlxconfigError, match=r'ROCE_CC_PRIO_MASK_P1: 256 does not fit the 8-bit field \(0\.\.255\)'):
        plan(cx6, {'ROCE_CC_PRIO_MASK_P1': 256})
    assert plan(cx6, {'NUM_OF_VFS': 65535.0})[1] == ['NUM_OF_VFS=65535']
    with pytest.raises(MlxconfigError, match='16-bit field'):
        plan(cx6, {'NUM_OF_VFS': '0x10000'})


@pytest.mark.parametrize('name', ['NUM OF VFS', 'NUM_OF_VFS=1', '', 'X[1', 3])
def test_names_that_are_not_parameter_names(cx6, name):
    with pytest.raises(MlxconfigError, match='is not a parameter name'):
        plan(cx6, {name: 1})


def test_typo_suggestion_is_case_insensitive(cx6):
    with pytest.raises(MlxconfigError, match='did you mean SRIOV_EN'):
        plan(cx6, {'sriov_enable': True})
    with pytest.raises(MlxconfigError, match=r'did you mean NUM_OF_VFS\? \(parameter names are case-sensitive\)'):
        plan(cx6, {'num_of_vfs': 8})


def test_element_queries(cx6):
    assert element_queries(cx6, ['ESWITCH_HAIRPIN_DESCRIPTORS[3]', 'ESWITCH_HAIRPIN_DESCRIPTORS[9]', 'NUM_OF_VFS',
                                 'NOPE[1]']) == ['ESWITCH_HAIRPIN_DESCRIPTORS[3]']


# Property tests: whatever the tool prints, the parser returns a well-formed table or its own error.
ROW_VALUES = st.one_of(
    st.from_regex(r'\A[A-Za-z_][A-Za-z0-9_]{0,20}\([0-9]{1,5}\)\Z'),
    st.integers(min_value=0, max_value=2 ** 32 - 1).map(str),
    st.sampled_from(['N/A', 'Array[0..7]', 'Array[0..15]', '0x1F']),
)
# Names fit their column (the database's names have at most 34 characters, array indexes are short); a name of
# exactly the column's width glues to its value, see test_name_as_wide_as_its_column.
ROW_NAMES = st.from_regex(r'\A[A-Za-z_][A-Za-z0-9_]{0,31}(\[[0-9]{1,2}\])?\Z')


def _check_well_formed(config):
    assert isinstance(config, dict)
    for name, entry in config.items():
        assert isinstance(name, str) and name
        assert set(entry) >= {'default', 'current', 'next_boot', 'read_only', 'modified'}
        assert isinstance(entry['read_only'], bool) and isinstance(entry['modified'], bool)
        assert entry['next_boot'] is None or isinstance(entry['next_boot'], str)


@settings(deadline=None)
@given(st.text())
def test_parse_query_on_arbitrary_text(text):
    try:
        config = parse_query(text)
    except MlxconfigError:
        return
    _check_well_formed(config)


@settings(deadline=None)
@given(st.binary())
def test_parse_query_on_arbitrary_bytes_decoded_as_the_module_does(data):
    try:
        config = parse_query(data.decode('utf-8', 'replace'))
    except MlxconfigError:
        return
    _check_well_formed(config)


@settings(deadline=None)
@given(st.lists(st.tuples(ROW_NAMES, st.sampled_from(['', '*', 'RO', '*RO']), ROW_VALUES, ROW_VALUES, ROW_VALUES),
                min_size=1, max_size=8, unique_by=lambda r: r[0]),
       st.sampled_from([(36, 16), (44, 20), (48, 33)]))
def test_generated_tables_parse_back(rows, widths):
    name_width, value_width = widths
    labels = ('Default', 'Current', 'Next Boot')
    lines = ['%-*s' % (name_width + 9, 'Configurations:') + ' '.join('%-*s' % (value_width, label) for label in labels)]
    for name, marker, default, current, next_boot in rows:
        lines.append('%-9s%-*s%-*s %-*s %-*s' % (marker, name_width, name, value_width, default, value_width, current,
                                                 value_width, next_boot))
    config = parse_query('\n'.join(lines) + '\n')
    assert sorted(config) == sorted(r[0] for r in rows)
    for name, marker, default, current, next_boot in rows:
        assert config[name] == {'default': default, 'current': current, 'next_boot': next_boot,
                                'read_only': 'RO' in marker, 'modified': '*' in marker}


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20),
                 st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)))
def test_plan_on_arbitrary_wanted_values(cx6, wanted):
    # plan() never changes its input, so sharing the parsed fixture between examples is safe.
    for name in ('LINK_TYPE_P1', 'SRIOV_EN', 'NUM_OF_VFS', 'CQE_COMPRESSION', 'IB_ROUTING_MODE_P1'):
        try:
            changes, set_args = plan(cx6, {name: wanted})
        except MlxconfigError:
            continue
        assert len(changes) == len(set_args) <= 1
        assert all(arg.startswith(name + '=') and ' ' not in arg for arg in set_args)
