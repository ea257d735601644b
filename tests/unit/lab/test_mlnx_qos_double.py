# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab's mlnx_qos double prints what the real tool printed on real machines, and refuses what it refuses.

Given the state a recorded port was in, the double must print that recording byte for byte (tabs expanded, as the
recordings stored them); its own four layouts must read back through the module's parser.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils.tuning._mlnx_qos import parse, summary

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, '..', '..', '..'))
CORPUS = os.path.join(REPO, 'tests', 'unit', 'fixtures', 'public', 'mlnx_qos')
DOUBLE = os.path.join(REPO, 'lab', 'doubles', 'mlnx_qos')
NETDEV = 'enp11s0f0np0'


@pytest.fixture
def lab(lab_tree):
    return lab_tree('roce_a100', doubles=False)


def run(lab, *args):
    env = dict(os.environ, GPUNET_LAB_ROOT=str(lab), LC_ALL='C')
    return subprocess.run([DOUBLE] + list(args), capture_output=True, text=True, env=env, check=False)


def set_state(lab, **state):
    os.makedirs(str(lab / 'qos'), exist_ok=True)
    base = json.loads(subprocess.run(
        ['python3', '-c', 'import sys, json; sys.path.insert(0, %r); import mlnx_qos; '
         'print(json.dumps(mlnx_qos.default_state()))' % os.path.dirname(DOUBLE)],
        capture_output=True, text=True, check=True).stdout)
    base.update(state)
    (lab / 'qos' / (NETDEV + '.json')).write_text(json.dumps(base))


def recorded(name):
    with open(os.path.join(CORPUS, name)) as handle:
        return handle.read()


def expanded(text):
    return '\n'.join(line.expandtabs(8) for line in text.split('\n'))


def test_ofed_4_2_layout_is_the_netarbiter_recording(lab):
    set_state(lab, layout='ofed-4.2', trust='dscp', pfc=[0, 0, 0, 1, 0, 0, 0, 0])
    result = run(lab, '-i', NETDEV)
    assert result.returncode == 0
    assert expanded(result.stdout) == recorded('netarbiter-ofed4-trust-dscp-pfc3.txt')


def test_ofed_4_6_layout_is_the_centos12_recording(lab):
    set_state(lab, layout='ofed-4.6', buffer_size=[524160, 0, 0, 0, 0, 0, 0, 0])
    assert expanded(run(lab, '-i', NETDEV).stdout) == recorded('centos12-ofed-buffers-trust-pcp.txt')


def test_current_layout_is_the_proxmox_recording(lab):
    set_state(lab, dcbx='fw', trust='dscp', pfc=[0, 0, 0, 1, 0, 0, 0, 0], prio2buffer=[0, 0, 0, 1, 0, 0, 0, 0],
              prio_tc=[0, 0, 0, 3, 0, 0, 6, 0], tsa=[2, 255, 255, 2, 255, 255, 255, 255],
              tc_bw=[50, 0, 0, 50, 0, 0, 0, 0])
    assert expanded(run(lab, '-i', NETDEV).stdout) == recorded('proxmox-dcbx-firmware-max-buffer-size-pfc3.txt')


@pytest.mark.parametrize('layout', ['ofed-4.2', 'ofed-4.6', 'ofed-5', 'mlnx-tools-24.10'])
def test_every_layout_reads_back(lab, layout):
    (lab / 'qos').mkdir()
    (lab / 'qos' / 'layout').write_text(layout + '\n')
    result = run(lab, '-i', NETDEV, '--trust', 'dscp', '--pfc', '0,0,0,1,0,0,0,0')
    assert result.returncode == 0, result.stderr
    state = parse(result.stdout)
    assert summary(state)['trust'] == 'dscp' and summary(state)['pfc_priorities'] == [3]
    assert ('default_priority' in state['layout']) == (layout == 'ofed-5')
    assert ('prio2buffer' in state['layout']) == (layout != 'ofed-4.2')
    if layout == 'ofed-5':
        # Python 3 kept the traffic classes in the order their first priority appeared: TC 1 (priority 0) first
        assert [tc['tc'] for tc in state['tcs']][:2] == [1, 0]
    assert parse(run(lab, '-i', NETDEV).stdout)['pfc'] == [0, 0, 0, 1, 0, 0, 0, 0]


@pytest.mark.parametrize('args, rc, stdout, stderr', [
    (['--bogus'], 2, '', 'mlnx_qos: error: no such option: --bogus'),
    (['-i', NETDEV, 'extra'], 1, 'Bad arguments', ''),
    ([], 1, 'Interface name is required', ''),
    (['-i', NETDEV, '--pfc', '0,0,0,1'], 1, 'pfc list must have 8 items', ''),
    (['-i', NETDEV, '--pfc', '0,0,0,1,0,0,0,0,0'], 1, 'Too many items for PFC', ''),
    (['-i', NETDEV, '--pfc', '0,0,0,2,0,0,0,0'], 1, 'Bad value for PFC: 2 is not in the range 0..1', ''),
    (['-i', NETDEV, '--trust', 'both'], 1, 'Invalid trust state command. Refer to the help.', ''),
    (['-i', NETDEV, '--trust', 'dscp', '--dscp2prio', 'set,30,2'], 1,
     'trust and dscp2prio commands cannot be used at the same time.', ''),
    (['-i', 'eth9'], 1, 'ETS features are not supported on your system', ''),
    (['-i', NETDEV, '-p', '0,0,0,0,1,1,1,1'], 1, '', 'not simulated'),
])
def test_refuses_what_mlnx_qos_refuses(lab, args, rc, stdout, stderr):
    result = run(lab, *args)
    assert result.returncode == rc
    assert stdout in result.stdout and stderr in result.stderr


def test_a_bad_trust_after_a_good_pfc_list_keeps_the_pfc_as_the_real_tool_does(lab):
    assert run(lab, '-i', NETDEV, '--pfc', '0,0,0,1,0,0,0,0', '--trust', 'x').returncode == 1
    assert parse(run(lab, '-i', NETDEV).stdout)['pfc'] == [0, 0, 0, 1, 0, 0, 0, 0]


def test_lldpad_warning(lab):
    set_state(lab, lldpad=True)
    state = parse(run(lab, '-i', NETDEV).stdout)
    assert state['warnings'] == ['lldpad service is running and may overwrite your settings']


def test_calls_are_logged(lab):
    run(lab, '-i', NETDEV)
    calls = [json.loads(line) for line in (lab / 'qos' / 'calls.log').read_text().splitlines()]
    assert calls == [['mlnx_qos', '-i', NETDEV]]
