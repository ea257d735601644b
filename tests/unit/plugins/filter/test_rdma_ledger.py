# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The run's data model: the stage ledger (envelopes, rollout plan, resolution) and the GPU group fabrics."""

from __future__ import annotations

import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.filter.ledger import FilterModule
from ansible_collections.gpunet.rdma.plugins.plugin_utils._ledger import LedgerError, record, resolve

FILTERS = FilterModule().filters()
rdma_ledgers = FILTERS['ledgers']
rdma_rollout_plan = FILTERS['rollout_plan']
rdma_fabrics = FILTERS['fabrics']


def rdma_ledger(ledger, stage, **fields):
    return record(ledger, stage, **fields)


def rdma_ledger_resolve(ledger, actions, how=None):
    return resolve(ledger, actions, how or ', '.join(actions))


REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))


# ------------------------------------------------------------------ envelopes

def test_envelope_status_is_derived():
    ledger = rdma_ledger({}, 'ofed', changed=True)
    assert ledger == {'ofed': {'stage': 'ofed', 'status': 'changed', 'changed': True, 'pending': [], 'problems': [],
                               'detail': {}}}
    ledger = rdma_ledger(ledger, 'firmware', pending=['reboot'], detail={'devices': []})
    assert ledger['firmware']['status'] == 'pending'
    assert ledger['firmware']['pending'] == [{'action': 'reboot', 'allowed': False, 'reason': ''}]
    assert rdma_ledger({}, 'validation', failed=True, problems='slow')['validation']['status'] == 'failed'
    assert rdma_ledger({}, 'validation', status='skipped')['validation']['status'] == 'skipped'
    assert rdma_ledger(None, 'x')['x']['status'] == 'ok'


def test_recording_a_stage_again_replaces_it_and_keeps_the_others():
    first = rdma_ledger({}, 'ofed', changed=True)
    second = rdma_ledger(first, 'netns')
    third = rdma_ledger(second, 'ofed')
    assert sorted(third) == ['netns', 'ofed'] and third['ofed']['changed'] is False
    assert first['ofed']['changed'] is True  # the input is not modified


@pytest.mark.parametrize('kwargs, message', [
    ({'pending': ['firmware_rest']}, "pending action 'firmware_rest' is not one of firmware_reset"),
    ({'pending': [{'action': 'reboot', 'allowed': 'yes'}]}, 'allowed must be true or false'),
    ({'pending': [{'action': 'reboot', 'when': 'now'}]}, 'unknown keys when'),
    ({'pending': 5}, 'pending must be a list'),
    ({'changed': 'yes'}, 'changed must be true or false'),
    ({'detail': ['a']}, 'detail must be a dict'),
    ({'status': 'great'}, "status 'great' is not one of"),
    ({'problems': {'a': 1}}, 'problems must be a list'),
])
def test_wrong_envelopes_are_refused_naming_the_stage(kwargs, message):
    with pytest.raises(LedgerError, match='stage: .*' + message):
        rdma_ledger({}, 'stage', **kwargs)


def test_wrong_ledger_and_stage_name():
    with pytest.raises(LedgerError, match='the ledger must be a dict of stage name -> envelope'):
        rdma_ledger(['x'], 'stage')
    with pytest.raises(LedgerError, match='the stage name must be a non-empty string'):
        rdma_ledger({}, '')


# ------------------------------------------------------------------ rollout plan

def _ledger(*stages):
    ledger = {}
    for stage, pending in stages:
        ledger = rdma_ledger(ledger, stage, changed=True, pending=pending)
    return ledger


def test_nothing_allowed_nothing_to_do():
    plan = rdma_rollout_plan(_ledger(('ofed', [{'action': 'driver_restart', 'allowed': False}]), ('gpudirect', [])))
    assert plan == {'reboot': False, 'actions': [], 'reasons': []}
    assert rdma_rollout_plan({})['actions'] == []


def test_allowed_steps_in_order():
    plan = rdma_rollout_plan(_ledger(
        ('runtime', [{'action': 'runtime_restart', 'allowed': True}]),
        ('firmware', [{'action': 'firmware_reset', 'allowed': True, 'reason': 'mlx5_0 LINK_TYPE_P1'}]),
        ('ofed', [{'action': 'driver_restart', 'allowed': True}]),
        ('netns', [{'action': 'netns_switch', 'allowed': False}])))
    assert plan['reboot'] is False
    assert plan['actions'] == ['firmware_reset', 'driver_restart', 'runtime_restart']
    assert plan['reasons'][0] == 'firmware: firmware reset (mlxfwreset) (mlx5_0 LINK_TYPE_P1)'


def test_one_reboot_covers_everything():
    plan = rdma_rollout_plan(_ledger(('firmware', [{'action': 'reboot', 'allowed': True}]),
                                     ('runtime', [{'action': 'runtime_restart', 'allowed': True}])))
    assert plan['reboot'] is True and plan['actions'] == ['reboot'] and len(plan['reasons']) == 2


def test_resolve_after_the_batch():
    ledger = _ledger(('firmware', [{'action': 'firmware_reset', 'allowed': True}]),
                     ('netns', [{'action': 'netns_switch', 'allowed': False}]))
    after = rdma_ledger_resolve(ledger, ['firmware_reset'])
    assert after['firmware']['pending'] == [] and after['firmware']['status'] == 'changed'
    assert after['firmware']['detail']['activated_by'] == 'firmware_reset'
    assert after['netns']['pending'] == ledger['netns']['pending']
    rebooted = rdma_ledger_resolve(ledger, ['reboot'], 'reboot')
    assert [rebooted[s]['pending'] for s in ('firmware', 'netns')] == [[], []]
    assert rdma_rollout_plan(rebooted)['actions'] == []
    with pytest.raises(AnsibleFilterError, match='rollout_plan: .*lacks'):
        rdma_rollout_plan({'firmware': {'stage': 'firmware'}})


def test_ledgers_of_hosts_and_controller():
    hostvars = {'a': {'ansible_facts': {'gpunet_rdma_ledger': {}}}, 'b': {'ansible_facts': {}},
                'localhost': {'ansible_facts': {'gpunet_rdma_ledger': {'x': 1}}}}
    assert rdma_ledgers(['a', 'b'], hostvars) == {'a': {}, 'localhost': {'x': 1}}
    with pytest.raises(AnsibleFilterError, match='ledgers: c is not a host'):
        rdma_ledgers(['c'], hostvars)
    with pytest.raises(AnsibleFilterError, match='ledgers: gpunet_rdma_ledger of a is not a dict'):
        rdma_ledgers(['a'], {'a': {'ansible_facts': {'gpunet_rdma_ledger': 'text'}}})
    with pytest.raises(AnsibleFilterError, match='ledgers: the input must be a list of host names'):
        rdma_ledgers('a', hostvars)


# ------------------------------------------------------------------ fabrics

H100 = {'name': 'ib_h100', 'generation': 'H100', 'link_layer': 'InfiniBand', 'line_rate_gbps': 400,
        'expected_ports': {'min_active_ports': 8}, 'rdma_resource': 'rdma/rdma_h100',
        'firmware': {'params': {'LINK_TYPE_P1': 'IB'}}}


def test_fabric_defaults_and_hosts():
    hostvars = {'h1': {'gpunet_rdma_fabric': H100, 'group_names': ['ib_h100']},
                'h2': {'gpunet_rdma_fabric': dict(H100), 'group_names': ['gpu', 'ib_h100']},
                'c1': {'group_names': ['cpu']}}
    fleet = rdma_fabrics(['h1', 'h2', 'c1'], hostvars)
    assert fleet['hosts'] == {'h1': 'ib_h100', 'h2': 'ib_h100', 'c1': None}
    group = fleet['groups']['ib_h100']
    assert group['hosts'] == ['h1', 'h2']
    assert group['expected_ports'] == {'link_layer': 'InfiniBand', 'min_active_ports': 8, 'min_rate_gbps': 400,
                                       'devices': []}
    assert group['kubernetes'] == 'shared_device_plugin' and group['platform'] == 'bare_metal'
    assert group['firmware'] == {'params': {'LINK_TYPE_P1': 'IB'}} and group['ofed'] == {}


@pytest.mark.parametrize('change, message', [
    ({'name': None}, 'name must name the inventory group'),
    ({'link_layer': 'IB'}, 'link_layer must be one of InfiniBand, Ethernet'),
    ({'line_rate_gbps': '400G'}, 'line_rate_gbps must be a number'),
    ({'line_rate_gbps': 0}, 'line_rate_gbps must be a number'),
    ({'expected_ports': {'min_ports': 8}}, 'expected_ports has unknown keys min_ports'),
    ({'expected_ports': {'min_active_ports': -1}}, 'min_active_ports must be a whole number'),
    ({'rdma_resource': 'rdma_h100'}, 'rdma_resource must be an extended resource name'),
    ({'kubernetes': 'sriov_dp'}, 'kubernetes must be one of'),
    ({'rdma_resource': None, 'kubernetes': 'shared_device_plugin'}, 'shared_device_plugin needs rdma_resource'),
    ({'firmware': ['LINK_TYPE_P1=IB']}, 'firmware must be a dict of nic_firmware settings'),
    ({'line_rate': 400}, 'unknown keys line_rate'),
    ({'platform': 'vmware'}, 'platform must be one of bare_metal, vmware_pvrdma'),
    ({'validation': {'rails': 'mlx5_0'}}, 'validation.rails must be a list, one entry per rail'),
    ({'validation': {'rails': ['mlx5_0', {'device': 'mlx5_1', 'port': 0}]}},
     r'validation.rails\[1\] must be a device name'),
    ({'validation': {'rails': [['mlx5_0', 3]]}}, r'validation.rails\[0\] must be a device name'),
    ({'validation': {'min_line_rate_pct': -5}}, 'validation.min_line_rate_pct must be a percentage above 0 and at most'),
    ({'validation': {'nccl_min_busbw_pct': 150}}, 'validation.nccl_min_busbw_pct must be a percentage above 0'),
    ({'validation': {'min_line_rate_pct': '90'}}, r"validation.min_line_rate_pct must be a percentage .*got '90'"),
])
def test_fabric_errors_name_the_group_and_key(change, message):
    fabric = dict(H100, **change)
    with pytest.raises(AnsibleFilterError, match='fabrics: gpunet_rdma_fabric of h1.*' + message):
        rdma_fabrics(['h1'], {'h1': {'gpunet_rdma_fabric': fabric, 'group_names': ['ib_h100']}})


def test_fabric_of_another_group_and_host_overrides_are_refused():
    with pytest.raises(AnsibleFilterError, match='h1: gpunet_rdma_fabric.name is ib_h100, but the host is in ib_a100'):
        rdma_fabrics(['h1'], {'h1': {'gpunet_rdma_fabric': H100, 'group_names': ['ib_a100']}})
    other = dict(H100, line_rate_gbps=200)
    with pytest.raises(AnsibleFilterError, match='h1 and h2 are both in group ib_h100 but have different'):
        rdma_fabrics(['h1', 'h2'], {'h1': {'gpunet_rdma_fabric': H100, 'group_names': ['ib_h100']},
                                    'h2': {'gpunet_rdma_fabric': other, 'group_names': ['ib_h100']}})
    with pytest.raises(AnsibleFilterError, match='fabrics: gpunet_rdma_fabric of h1 must be a dict'):
        rdma_fabrics(['h1'], {'h1': {'gpunet_rdma_fabric': 'ib_h100'}})


@pytest.mark.parametrize('inventory', ['example', 'lab'])
def test_every_group_vars_fabric_of_the_inventories_is_valid(inventory):
    """The shipped example and the lab: each GPU group's group_vars hold one valid fabric named after the group."""
    directory = os.path.join(REPO, 'inventory', inventory, 'group_vars')
    found = []
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name)) as handle:
            data = yaml.safe_load(handle) or {}
        if 'gpunet_rdma_fabric' in data:
            group = os.path.splitext(name)[0]
            found.append(group)
            fleet = rdma_fabrics(['h'], {'h': {'gpunet_rdma_fabric': data['gpunet_rdma_fabric'], 'group_names': [group]}})
            assert list(fleet['groups']) == [group]
    assert {'ib_v100', 'ib_a100', 'ib_h100', 'roce_a100'} <= set(found)
