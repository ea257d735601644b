# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab's firmware tool doubles (mlxconfig, mlxfwreset, mst), run as the lab runs them, on a built lab root.

The mlxconfig double must print what mlxconfig prints (the current MFT layout, the parameters of a real card of the
simulated generation) and refuse what it refuses, with its messages and exit codes. Where mstflint's real mstconfig
shows the same refusal without hardware (argument errors, a device it cannot open), both are run side by side.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils.firmware._mlxconfig import parse_query, parse_query_table

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, '..', 'fixtures', 'public', 'mlxconfig')
CX6, CX6_IB, CX4LX = '0000:0c:00.0', '0000:8d:00.0', '0000:3b:00.0'


@pytest.fixture
def lab(lab_tree):
    return lab_tree('a100')


def tool(lab, name, *args, stdin='', stderr=False):
    env = dict(os.environ, GPUNET_LAB_ROOT=str(lab), GPUNET_LAB_MST_DIR=str(lab / 'mst'), LC_ALL='C')
    completed = subprocess.run([str(lab / 'bin' / name)] + list(args), input=stdin, capture_output=True, text=True,
                               env=env, check=False)
    if stderr:
        return completed.returncode, completed.stdout, completed.stderr
    return completed.returncode, completed.stdout


def mlxconfig(lab, *args, **kwargs):
    return tool(lab, 'mlxconfig', *args, **kwargs)


def state(lab, pci):
    with open(str(lab / 'firmware' / (pci + '.json'))) as handle:
        return json.load(handle)['params']


def test_verbose_query_prints_the_current_mft_layout(lab):
    rc, out = mlxconfig(lab, '-d', CX6, '-e', 'q')
    assert rc == 0
    lines = out.splitlines()
    assert lines[:4] == ['', 'Device #1:', '----------', '']
    assert lines[4] == '%-20s%-20s' % ('Device type:', 'ConnectX6')
    assert lines[7] == '%-20s%-20s' % ('Device:', CX6)
    header = lines[9]
    assert header == '%-56s%-33s %-33s %-33s' % ('Configurations:', 'Default', 'Current', 'Next Boot')
    rows = lines[10:lines.index("The '*' shows parameters with next value different from default/current value.")]
    row_re = re.compile(r'^[* ](RO|  )     [A-Za-z0-9_]{1,48} *(\S+ +){2}\S+ *$')
    assert all(row_re.match(row) for row in rows), [row for row in rows if not row_re.match(row)][:3]
    assert ('%s%s     %-48s%-33s %-33s %-33s' % ('*', '  ', 'LINK_TYPE_P1', 'IB(1)', 'ETH(2)', 'ETH(2)')) in rows
    assert ('%s%s     %-48s%-33s %-33s %-33s' % (' ', 'RO', 'PF_BAR2_SIZE', '0', '0', '0')) in rows
    assert lines[-1] == "The 'RO' shows parameters which are for read only and cannot be changed"
    table = parse_query_table(out)
    assert table['layout'] == 'verbose' and table['device_type'] == 'ConnectX6'
    assert table['params']['EXP_ROM_UEFI_x86_ENABLE']['next_boot'] == 'True(1)'
    assert table['params']['PCI_DOWNSTREAM_PORT_OWNER']['current'] == 'Array[0..15]'
    assert table['params']['PCI_ATOMIC_MODE']['default'] == 'PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)'


def test_plain_query_has_next_boot_only(lab):
    rc, out = mlxconfig(lab, '-d', CX6_IB, 'query')
    assert rc == 0
    assert '%-56s%-33s' % ('Configurations:', 'Next Boot') in out.splitlines()
    table = parse_query_table(out)
    assert table['layout'] == 'plain' and table['columns'] == ['Next Boot']
    assert table['params']['LINK_TYPE_P1'] == {'default': None, 'current': None, 'next_boot': 'IB(1)',
                                               'read_only': False, 'modified': False}


def test_the_connectx4_lx_prints_the_parameters_of_the_recorded_card(lab):
    """The bond device simulates the ConnectX-4 Lx of the public corpus: same parameters, same order."""
    with open(os.path.join(CORPUS, 'lore-linux-rdma-cx4lx-mstconfig-q.txt')) as handle:
        recorded = list(parse_query(handle.read()))
    _rc, out = mlxconfig(lab, '-d', CX4LX, 'q')
    simulated = parse_query(out)
    assert list(simulated) == recorded
    # the profile's explicit values replace the recorded ones
    assert simulated['NUM_OF_VFS']['next_boot'] == '0' and simulated['SRIOV_EN']['next_boot'] == 'False(0)'
    # the old tool printed this one as a boolean; current tools print the database's names
    assert simulated['SRIOV_IB_ROUTING_MODE_P1']['next_boot'] == 'LID(1)'
    assert 'LINK_TYPE_P1' not in simulated


def test_query_of_named_parameters_and_array_elements(lab):
    rc, out = mlxconfig(lab, '-d', CX6, '-e', 'q', 'ESWITCH_HAIRPIN_DESCRIPTORS[0..2]', 'LINK_TYPE_P1')
    assert rc == 0
    assert list(parse_query(out)) == ['ESWITCH_HAIRPIN_DESCRIPTORS[0]', 'ESWITCH_HAIRPIN_DESCRIPTORS[1]',
                                      'ESWITCH_HAIRPIN_DESCRIPTORS[2]', 'LINK_TYPE_P1']
    rc, out = mlxconfig(lab, '-d', CX6, '-e', 'q', 'MPFS_UC_LOOPBACK_DISABLE_P9')
    assert rc == 3
    # as recorded on a real card: the header, then the refusal
    assert out.splitlines()[-2].startswith('Configurations:')
    assert out.splitlines()[-1] == "-E- The Device doesn't support MPFS_UC_LOOPBACK_DISABLE_P9 parameter"


def test_set_prints_the_set_table_and_changes_next_boot_only(lab):
    rc, out = mlxconfig(lab, '-d', CX6, '-y', 'set', 'LINK_TYPE_P1=IB', 'NUM_OF_VFS=0x10', 'SRIOV_EN=true',
                        'ESWITCH_HAIRPIN_DESCRIPTORS[3]=64')
    assert rc == 0
    table = parse_query_table(out)
    assert table['layout'] == 'set'
    assert table['params']['LINK_TYPE_P1']['new'] == 'IB(1)' and table['params']['LINK_TYPE_P1']['next_boot'] == \
        'ETH(2)'
    assert table['params']['NUM_OF_VFS']['new'] == '16'
    assert out.endswith('\n Apply new Configuration? (y/n) [n] : y\nApplying... Done!\n'
                        '-I- Please reboot machine to load new configurations.\n')
    params = state(lab, CX6)
    assert (params['LINK_TYPE_P1']['current'], params['LINK_TYPE_P1']['next']) == (2, 1)
    assert params['NUM_OF_VFS']['next'] == 16 and params['SRIOV_EN']['next'] == 1
    assert params['ESWITCH_HAIRPIN_DESCRIPTORS']['elements']['next'][3] == 64
    _rc, out = mlxconfig(lab, '-d', CX6, '-e', 'q', 'ESWITCH_HAIRPIN_DESCRIPTORS[3]')
    assert parse_query(out)['ESWITCH_HAIRPIN_DESCRIPTORS[3]'] == {
        'default': '0', 'current': '0', 'next_boot': '64', 'read_only': False, 'modified': True}


@pytest.mark.parametrize('assignment, message', [
    ('NUM_OF_VFS=10^23', 'Cannot parse the value'),
    ('NUM_OF_VFS=100000000000000000000000', 'value is out of range'),
    ('NUM_OF_VFS=-1', 'value is out of range'),
    ('NUM_OF_VFS=65536', 'The value 65536 is not valid,  as its size is 16 bits'),
    ('ROCE_CC_PRIO_MASK_P1=256', 'The value 256 is not valid,  as its size is 8 bits'),
    ('SRIOV_EN=yes', 'Unknown value yes'),
    ('SRIOV_EN=2', 'Unknown value 2'),
    ('LINK_TYPE_P1=VPI', 'Unknown value VPI'),
    ('LINK_TYPE_P1=3', 'Unknown value 3'),
    ('CQE_COMPRESSION=FAST', 'Unknown value FAST'),
    ('PF_BAR2_SIZE=1', 'Operation is not supported (Read only TLV: nv_global_pci_conf)'),
    ('ESWITCH_HAIRPIN_DESCRIPTORS=1', 'Operation is not supported'),
    ('ESWITCH_HAIRPIN_DESCRIPTORS[8]=1', 'Failed to find Param / index out of range: ESWITCH_HAIRPIN_DESCRIPTORS[8]'),
    ('ESWITCH_HAIRPIN_DESCRIPTORS[0]=256', 'The value 256 is not valid,  as its size is 8 bits'),
    ('num_of_vfs=1', "The Device doesn't support num_of_vfs parameter"),
])
def test_set_refuses_what_mlxconfig_refuses(lab, assignment, message):
    before = state(lab, CX6)
    rc, out = mlxconfig(lab, '-d', CX6, '-y', 'set', 'UCTX_EN=1', assignment)
    assert rc == 3
    lines = out.splitlines()
    assert lines[-1] == '-E- ' + message
    assert lines[-2].startswith('Configurations:') and 'New' in lines[-2]
    assert state(lab, CX6) == before


@pytest.mark.parametrize('value, number', [('True', 1), ('false', 0), ('1', 1), ('0x0', 0)])
def test_booleans_take_true_false_1_0(lab, value, number):
    rc, _out = mlxconfig(lab, '-d', CX6, '-y', 'set', 'SRIOV_EN=' + value)
    assert rc == 0 and state(lab, CX6)['SRIOV_EN']['next'] == number


@pytest.mark.parametrize('value, number', [('eth', 2), ('IB', 1), ('2', 2)])
def test_enums_take_names_and_their_numbers(lab, value, number):
    rc, _out = mlxconfig(lab, '-d', CX6, '-y', 'set', 'LINK_TYPE_P1=' + value)
    assert rc == 0 and state(lab, CX6)['LINK_TYPE_P1']['next'] == number


def test_set_without_yes_and_no_answer_is_aborted(lab):
    before = state(lab, CX6)
    rc, out = mlxconfig(lab, '-d', CX6, 'set', 'NUM_OF_VFS=4', stdin='n\n')
    assert rc == 2
    assert out.endswith('\n Apply new Configuration? (y/n) [n] : -E- Aborted by user.\n')
    assert state(lab, CX6) == before


def test_set_failing_half_way(lab):
    (lab / 'firmware' / 'mlxconfig-set-fault').write_text(json.dumps({'after': 1, 'message': 'Device busy'}))
    rc, out = mlxconfig(lab, '-d', CX6, '-y', 'set', 'LINK_TYPE_P1=IB', 'NUM_OF_VFS=8')
    assert rc == 3 and out.endswith('Applying... Failed!\n-E- Device busy\n')
    params = state(lab, CX6)
    assert params['LINK_TYPE_P1']['next'] == 1 and params['NUM_OF_VFS']['next'] == 0


# Refusals mstflint's real mstconfig shows without hardware: the double gives the same first line and exit code
# (the tool's own name in its help hint aside).
@pytest.mark.parametrize('args', [
    ['-d', '0000:0c:00.0', '-y', 'set', 'NUM_OF_VFS'],
    ['-d', '0000:0c:00.0', '-y', 'set', 'NUM_OF_VFS='],
    ['-d', '0000:0c:00.0', '-y', 'set', '=1'],
    ['-d', '0000:0c:00.0', '-y', 'set', 'NUM_OF_VFS=1=2'],
    ['-d', '0000:0c:00.0', '-y', 'set', 'NUM_OF_VFS=1', 'NUM_OF_VFS=2'],
    ['-d', '0000:0c:00.0', '-y', 'set', 'ESWITCH_HAIRPIN_DESCRIPTORS[0]=2', 'ESWITCH_HAIRPIN_DESCRIPTORS[0]=1'],
    ['-d', '0000:0c:00.0', '-y', 'set'],
    ['-d', '0000:0c:00.0', '-z', 'q'],
    ['-d', '0000:0c:00.0', 'foo'],
])
def test_argument_errors_match_the_real_mstconfig(lab, args):
    real = subprocess.run([shutil.which('mstconfig')] + args, capture_output=True, text=True, check=False,
                          env=dict(os.environ, LC_ALL='C'))
    rc, out = mlxconfig(lab, *args)
    assert rc == real.returncode == 3
    assert out.splitlines()[0] == real.stdout.splitlines()[0].replace('mstconfig', 'mlxconfig')
    assert state(lab, CX6)['NUM_OF_VFS']['next'] == 0


@pytest.mark.parametrize('device', ['0000:af:00.0', '/nonexistent/x'])
def test_a_device_it_cannot_open_matches_the_real_mstconfig(lab, device):
    real = subprocess.run([shutil.which('mstconfig'), '-d', device, 'q'], capture_output=True, text=True,
                          check=False, env=dict(os.environ, LC_ALL='C'))
    assert (tool(lab, 'mlxconfig', '-d', device, 'q', stderr=True)
            == (real.returncode, real.stdout, real.stderr))


def test_mlxfwreset_activates_next_boot_including_array_elements(lab):
    mlxconfig(lab, '-d', CX6, '-y', 'set', 'LINK_TYPE_P1=IB', 'ESWITCH_HAIRPIN_DESCRIPTORS[1]=32')
    rc, out = tool(lab, 'mlxfwreset', '-d', CX6, '-l', '3', '-y', 'r')
    assert rc == 0
    assert out.startswith('\nRequested reset level for device, 0c:00.0:\n\n3: Driver restart and PCI reset\n'
                          'Continue with reset?[y/N] y\n')
    assert out.endswith('-I- FW was loaded successfully.\n')
    params = state(lab, CX6)
    assert params['LINK_TYPE_P1']['current'] == 1
    assert params['ESWITCH_HAIRPIN_DESCRIPTORS']['elements']['current'][1] == 32
    _rc, out = mlxconfig(lab, '-d', CX6, '-e', 'q', 'LINK_TYPE_P1')
    assert parse_query(out)['LINK_TYPE_P1']['current'] == 'IB(1)'


@pytest.fixture
def dual_port(lab_tree):
    """The V100 node: one dual-port ConnectX-5, functions 0000:5e:00.0 and 0000:5e:00.1 of one adapter."""
    return lab_tree('v100')


def test_the_functions_of_an_adapter_share_its_configuration(dual_port):
    port0, port1 = '0000:5e:00.0', '0000:5e:00.1'
    assert mlxconfig(dual_port, '-d', port1, '-y', 'set', 'LINK_TYPE_P2=ETH')[0] == 0
    assert mlxconfig(dual_port, '-d', '5e:00.0', '-y', 'set', 'SRIOV_EN=True', 'NUM_OF_VFS=4')[0] == 0
    for device in (port0, port1):
        config = parse_query(mlxconfig(dual_port, '-d', device, '-e', 'q')[1])
        assert config['LINK_TYPE_P2']['next_boot'] == 'ETH(2)' and config['LINK_TYPE_P2']['current'] == 'IB(1)'
        assert config['SRIOV_EN']['next_boot'] == 'True(1)' and config['NUM_OF_VFS']['next_boot'] == '4'
    # one reset, through either function, activates the adapter: both functions read the new values as Current
    assert tool(dual_port, 'mlxfwreset', '-d', port0, '-l', '3', '-y', 'r')[0] == 0
    for device in (port1, port0):
        config = parse_query(mlxconfig(dual_port, '-d', device, '-e', 'q', 'LINK_TYPE_P2', 'NUM_OF_VFS')[1])
        assert config['LINK_TYPE_P2']['current'] == 'ETH(2)' and config['NUM_OF_VFS']['current'] == '4'
    with open(str(dual_port / 'firmware' / 'calls.log')) as handle:
        calls = [json.loads(line) for line in handle]
    assert [call for call in calls if call[0] == 'mlxfwreset'] == [['mlxfwreset', '-d', port0, '-l', '3', '-y', 'r']]
    # a query of every device prints the one configuration for each function
    tables = mlxconfig(dual_port, '-e', 'q', 'NUM_OF_VFS')[1].split('Device #')[1:]
    assert len(tables) == 2 and all(parse_query(table)['NUM_OF_VFS']['current'] == '4' for table in tables)


def test_mst_start_and_status(lab):
    rc, out = tool(lab, 'mst', 'start')
    assert rc == 0 and 'Loading MST PCI configuration module - Success' in out
    assert sorted(os.listdir(str(lab / 'mst'))) == ['mt4117_pciconf0', 'mt4123_pciconf0', 'mt4123_pciconf1']
    rc, out = tool(lab, 'mst', 'status')
    assert rc == 0
    assert '%-33s- PCI configuration cycles access.' % (str(lab / 'mst' / 'mt4123_pciconf1')) in out
    assert 'domain:bus:dev.fn=0000:8d:00.0 addr.reg=88 data.reg=92 cr_bar.gw_offset=-1' in out
    rc, out = mlxconfig(lab, '-d', str(lab / 'mst' / 'mt4117_pciconf0'), 'q', 'SRIOV_EN')
    assert rc == 0 and parse_query_table(out)['device_type'] == 'ConnectX4LX'
