# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fleet report's "NIC tuning" section, from the tuning stage's ledger record."""

from __future__ import annotations

from ansible_collections.gpunet.rdma.plugins.plugin_utils._fleet_report import (
    build_fleet_report,
    render_markdown,
    tuning_state,
)

RECORD = {
    'ports': [
        {'interface': 'enp11s0f0np0', 'trust': 'dscp', 'pfc_priorities': [3], 'dcbx': 'OS controlled',
         'ecn': {'supported': False, 'roce_np': None, 'roce_rp': None, 'enabled': []}, 'changes': {}},
        {'interface': 'enp12s0f0np0', 'trust': 'dscp', 'pfc_priorities': [3], 'dcbx': 'OS controlled',
         'ecn': {'supported': True, 'roce_np': [0, 3], 'roce_rp': [3], 'enabled': []}, 'changes': {}},
    ],
    'wanted': {'firmware_params': {'CNP_DSCP_P1': 4, 'ATS_ENABLED': False}},
    'firmware': {'pending': ['mlx5_0 CNP_DSCP_P1'], 'reboot_required': True},
    'pci': [{'device': '0000:0b:00.0', 'max_read_request': 4096, 'max_payload': 256, 'before': 512}],
    'persisted': '/etc/systemd/system/gpunet-rdma-tuning.service',
}


def ledger():
    return {'tuning': {'stage': 'tuning', 'status': 'pending', 'changed': True,
                       'pending': [{'action': 'reboot', 'allowed': False, 'reason': 'mlx5_0 CNP_DSCP_P1'}],
                       'problems': [], 'detail': RECORD}}


def test_tuning_state_condenses_the_record():
    state = tuning_state(RECORD)
    assert [p['ecn'] for p in state['ports']] == ['firmware', [3]]
    assert state['pci'] == [{'device': '0000:0b:00.0', 'max_read_request': 4096, 'max_payload': 256}]
    assert state['firmware_pending'] == ['mlx5_0 CNP_DSCP_P1']
    assert tuning_state(None) is None and tuning_state({}) is None


def test_markdown_shows_the_qos_of_the_roce_node_and_nothing_for_others():
    results = [{'host': h, 'group': 'roce_a100', 'expectation': None, 'source': 'sysfs', 'devices': [],
                'verdict': 'unchecked', 'ok_ports': 0, 'ports': [], 'problems': []} for h in ('lab-roce-1', 'lab-v100-1')]
    report = build_fleet_report(results, ['lab-roce-1', 'lab-v100-1'], ledgers={'lab-roce-1': ledger()})
    text = render_markdown(report)
    assert '## NIC tuning' in text
    assert '| lab-roce-1 | enp11s0f0np0 | OS controlled | dscp | 3 | firmware mask (no driver ECN tree) |' in text
    assert '| lab-roce-1 | enp12s0f0np0 | OS controlled | dscp | 3 | 3 |' in text
    assert ('| lab-roce-1 | 0000:0b:00.0 | 4096 bytes | 256 bytes | ATS_ENABLED=False, CNP_DSCP_P1=4 (pending a '
            'reboot: mlx5_0 CNP_DSCP_P1) | /etc/systemd/system/gpunet-rdma-tuning.service |') in text
    assert 'lab-v100-1 | enp' not in text
    report = build_fleet_report(results, ['lab-roce-1', 'lab-v100-1'], ledgers={})
    assert '## NIC tuning' not in render_markdown(report)
