# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab's setpci double: a real ConnectX configuration space, setpci's syntax, messages and exit codes."""

from __future__ import annotations

import os
import subprocess

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils.tuning._setpci import decode_devctl, find_capability, parse_hexdump

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
DOUBLE = os.path.join(REPO, 'lab', 'doubles', 'setpci')
PF = '0000:0b:00.0'


@pytest.fixture
def lab(lab_tree):
    return lab_tree('roce_a100', doubles=False)


def run(lab, *args):
    env = dict(os.environ, GPUNET_LAB_ROOT=str(lab), LC_ALL='C')
    return subprocess.run([DOUBLE] + list(args), capture_output=True, text=True, env=env, check=False)


def test_template_is_the_recorded_connectx_space():
    with open(os.path.join(REPO, 'tests', 'unit', 'fixtures', 'public', 'pci',
                           'pciutils-cap-aer-root-connectx3pro.txt')) as handle:
        recorded = parse_hexdump(handle.read())
    import importlib.util  # pylint: disable=import-outside-toplevel
    spec = importlib.util.spec_from_file_location('setpci_double', os.path.join(REPO, 'lab', 'doubles', 'setpci.py'))
    double = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(double)
    assert bytes(int(b, 16) for b in double.TEMPLATE) == recorded[:0x100]


def test_reads_the_registers_of_the_lab_function(lab):
    assert run(lab, '-s', PF, 'VENDOR_ID').stdout == '15b3\n'
    assert run(lab, '-s', '0b:00.0', 'DEVICE_ID').stdout == '1017\n'
    assert run(lab, '-s', PF, 'CAP_EXP+2.w').stdout == '0002\n'
    assert decode_devctl(int(run(lab, '-s', PF, 'CAP_EXP+8.w').stdout, 16))['max_read_request'] == 512
    assert run(lab, '-s', PF, '68.w').stdout == '2020\n'


def test_masked_write_is_setpci_read_modify_write(lab):
    result = run(lab, '-v', '-s', PF, 'CAP_EXP+8.w=5000:7000')
    assert result.returncode == 0
    assert result.stdout == '0000:0b:00.0 (cap 10 @60) @68 2020->(5000:7000)->5020\n'
    assert run(lab, '-s', PF, 'CAP_EXP+8.w').stdout == '5020\n'
    assert run(lab, '-s', '0000:0c:00.0', 'CAP_EXP+8.w').stdout == '2020\n'
    assert run(lab, '-D', '-s', PF, 'CAP_EXP+8.w=2000:7000').returncode == 0
    assert run(lab, '-s', PF, 'CAP_EXP+8.w').stdout == '5020\n'


def test_a_filter_without_operations_does_nothing_as_in_setpci(lab):
    assert (run(lab, '-s', PF).returncode, run(lab, '-s', PF).stdout) == (0, '')


def test_no_device_selected_is_a_warning_with_exit_0_as_in_setpci(lab):
    result = run(lab, '-s', '0000:99:00.0', 'CAP_EXP+8.w')
    assert (result.returncode, result.stdout) == (0, '')
    assert result.stderr == 'setpci: Warning: No devices selected for operation group 1.\n'


@pytest.mark.parametrize('args, message', [
    (['-s', PF, 'CAP_EXP+8'], 'setpci: Missing width.'),
    (['-s', PF, 'CAP_EXP+9.w'], 'Unaligned register address 09'),
    (['-s', PF, 'NO_SUCH_REG.w'], 'Unknown register "NO_SUCH_REG"'),
    (['-s', PF, 'CAP_EXP+8.q'], 'Invalid width "q"'),
    (['-s', PF, 'CAP_EXP+8.w=12345'], 'Value "12345" is out of range'),
    (['-s', PF, 'CAP_EXP+8.w=5000:zz'], 'Invalid mask "zz"'),
    (['-s', PF, 'CAP_EXP+8.w='], 'Missing value'),
    (['-s', '0000:0b:00.9', 'CAP_EXP+8.w'], 'Unable to parse filter -s Invalid function number'),
    (['CAP_EXP+8.w'], 'Filter specification expected'),
    (['-x', '-s', PF, 'CAP_EXP+8.w'], 'Invalid or misplaced option -x'),
    ([], 'No operation specified'),
    (['-s', PF, 'CAP5.w'], 'Instance #0 of Capability 0005 not found - there are no capabilities with that id.'),
])
def test_refuses_what_setpci_refuses(lab, args, message):
    result = run(lab, *args)
    assert result.returncode == 1
    assert message in result.stderr
    if 'not found' not in message:
        assert "Try `setpci --help' for more information." in result.stderr


def test_walks_the_capability_list_like_pcilib(lab):
    assert run(lab, '-s', PF, 'CAP_EXP+8.w').returncode == 0
    assert not (lab / 'pci' / (PF + '.json')).exists(), 'a read must not write the state'
    run(lab, '-s', PF, 'CAP_EXP+8.w=2000:7000')
    import json  # pylint: disable=import-outside-toplevel
    config = bytes.fromhex(json.loads((lab / 'pci' / (PF + '.json')).read_text())['config'])
    assert find_capability(config, 0x10) == 0x60
    assert run(lab, '-s', PF, 'CAP_MSIX+2.w').stdout == '80ff\n'
