# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The mlnx_qos parser against outputs recorded on real machines (tests/unit/fixtures/public/mlnx_qos).

Every expectation was written by reading the artifact: DCBX mode, trust, the PFC flags and buffer row, the cable
length, the traffic classes with their priorities, the buffer total. Every artifact must have an entry and a
sidecar naming where it was recorded; the lab double's layouts must read the same way.
"""

from __future__ import annotations

import glob
import os

import pytest
import yaml

from ansible_collections.gpunet.rdma.plugins.module_utils.tuning._mlnx_qos import MlnxQosError, parse, plan, summary

CORPUS = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'public', 'mlnx_qos')
VENDOR_TCS = {0: [1], 1: [0], 2: [2], 3: [3], 4: [4], 5: [5], 6: [6], 7: [7]}

# file: (dcbx, trust, pfc priorities, cable len, prio2buffer, buffer total, traffic classes, dscp of prio 5, layout)
EXPECTED = {
    'netarbiter-ofed4-trust-dscp-pfc3.txt': (
        'OS controlled', 'dscp', [3], 7, None, None, VENDOR_TCS, [47, 46, 45, 44, 43, 42, 41, 40],
        ['dcbx', 'trust', 'cable_len']),
    'mellanox-community-mlnx-qos-ofed42-ets.txt': (
        'OS controlled', 'dscp', [0, 2, 6, 7], 10, None, None, VENDOR_TCS, [47, 46, 45, 44, 43, 42, 41, 40],
        ['dcbx', 'trust', 'cable_len']),
    'centos12-ofed-buffers-trust-pcp.txt': (
        'OS controlled', 'pcp', [], 7, [0] * 8, None, VENDOR_TCS, None,
        ['dcbx', 'trust', 'buffer_size', 'cable_len', 'prio2buffer']),
    'ens14f0-ofed-buffers-trust-pcp-pfc3.txt': (
        'OS controlled', 'pcp', [3], 7, [0, 2, 5, 7, 1, 2, 3, 6], None, VENDOR_TCS, None,
        ['dcbx', 'trust', 'buffer_size', 'cable_len', 'prio2buffer']),
    'gpu-prod-default-priority-max-buffer-size-pfc5.txt': (
        'OS controlled', 'dscp', [5], 30, [0, 0, 0, 0, 0, 1, 0, 0], 4151520, dict((tc, [tc]) for tc in range(8)),
        [40, 47, 46, 45, 44, 43, 42, 41],
        ['dcbx', 'trust', 'default_priority', 'max_buffer_size', 'buffer_size', 'cable_len', 'prio2buffer']),
    'proxmox-dcbx-firmware-max-buffer-size-pfc3.txt': (
        'Firmware controlled', 'dscp', [3], 7, [0, 0, 0, 1, 0, 0, 0, 0], 262016,
        {0: [0, 1, 2, 4, 5, 7], 3: [3], 6: [6]}, [47, 46, 45, 44, 43, 42, 41, 40],
        ['dcbx', 'trust', 'max_buffer_size', 'buffer_size', 'cable_len', 'prio2buffer']),
}


def artifacts():
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(CORPUS, '*.txt')))


def read(name):
    with open(os.path.join(CORPUS, name)) as handle:
        return handle.read()


def test_every_artifact_has_an_expectation_and_a_source():
    assert artifacts() == sorted(EXPECTED)
    with open(os.path.join(CORPUS, 'SOURCES.md')) as handle:
        sources = handle.read()
    for name in artifacts():
        with open(os.path.join(CORPUS, name + '.source.yml')) as handle:
            source = yaml.safe_load(handle)
        assert source.get('what') and (source.get('url') or source.get('repository') or source.get('index')), name
        assert '`%s`' % name in sources, name


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_recorded_output(name):
    dcbx, trust, pfc, cable, prio2buffer, total, tcs, dscp5, layout = EXPECTED[name]
    state = parse(read(name))
    got = summary(state)
    assert (got['dcbx'], got['trust'], got['pfc_priorities'], got['cable_len'], got['prio2buffer']) == (
        dcbx, trust, pfc, cable, prio2buffer)
    assert state['buffer_total'] == total
    assert got['traffic_classes'] == tcs
    assert state['dscp2prio'].get(5) == dscp5
    assert state['layout'] == layout
    if trust == 'dscp':
        assert sorted(d for values in state['dscp2prio'].values() for d in values) == list(range(64))


def test_the_corpus_covers_the_layouts():
    layouts = set(tuple(EXPECTED[name][-1]) for name in EXPECTED)
    features = set(f for layout in layouts for f in layout)
    assert {'prio2buffer', 'default_priority', 'max_buffer_size'} <= features
    assert any('prio2buffer' not in layout for layout in layouts)


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_plan_of_the_lossless_roce_settings(name):
    state = parse(read(name))
    changes, options = plan(state, 'dscp', [3])
    if state['trust'] == 'dscp' and summary(state)['pfc_priorities'] == [3]:
        assert (changes, options) == ({}, [])
    else:
        assert options[-2:] == ['--pfc', '0,0,0,1,0,0,0,0'] or options == ['--trust', 'dscp']
        assert set(changes) <= {'trust', 'pfc_priorities'}


def test_the_ecn_and_pfc_example_of_the_gpu_node_plans_priority_3():
    changes, options = plan(parse(read('gpu-prod-default-priority-max-buffer-size-pfc5.txt')), 'dscp', [3])
    assert changes == {'pfc_priorities': {'before': [5], 'after': [3]}}
    assert options == ['--pfc', '0,0,0,1,0,0,0,0']


@pytest.mark.parametrize('mangle, reason', [
    (lambda text: text.replace('PFC configuration:', 'PFC config:'), 'does not print'),
    (lambda text: text.replace('tc: 3 ratelimit', 'tc: 3 rate-limit'), 'does not print'),
    (lambda text: text.replace('enabled     0   0   0   1', 'enabled     0   0   0   2'), 'other than 0 or 1'),
    (lambda text: text.replace('priority    0   1   2   3', 'priority    0   1   3   2'), 'does not list'),
    (lambda text: text.replace('        enabled     0   0   0   1   0   0   0   0   \n', ''), 'no "PFC'),
    (lambda text: text + 'Some new line of a future release\n', 'does not print'),
    (lambda text: '', 'printed nothing'),
])
def test_outputs_of_another_shape_are_refused(mangle, reason):
    with pytest.raises(MlnxQosError) as error:
        parse(mangle(read('netarbiter-ofed4-trust-dscp-pfc3.txt')))
    assert reason in str(error.value)


def test_the_tool_saying_ets_is_unsupported_is_an_error():
    text = ('Priority trust state is not supported on your system\nBuffers commands are not supported on your '
            'system\nETS features are not supported on your system\n')
    with pytest.raises(MlnxQosError) as error:
        parse(text)
    assert 'cannot read the port' in str(error.value)


def test_a_release_without_trust_cannot_set_it():
    # the first mlnx_qos (mlnx-tools 80fb22e, 2017) printed PFC and the traffic classes only
    text = 'PFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   0   0   0   0   0   \n\n'
    text += 'tc: 0 ratelimit: unlimited, tsa: vendor\n\t priority:  0\n'
    state = parse(text)
    assert state['trust'] is None
    assert plan(state, None, [3])[1] == ['--pfc', '0,0,0,1,0,0,0,0']
    with pytest.raises(MlnxQosError) as error:
        plan(state, 'dscp', None)
    assert 'prints no trust state' in str(error.value)
