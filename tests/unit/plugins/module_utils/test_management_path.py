# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The management path and the blast-radius guard: recorded iproute2 output, the lab's A100 sysfs tree (bond0 over
mlx5_bond_0's port, as on the InfiniBand field report's nodes), and the decisions the rollout takes from them."""

from __future__ import annotations

import json
import os
import stat

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpunet.rdma.plugins.plugin_utils import _ledger
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._management_path import (
    ManagementPathError,
    SysfsNet,
    connection_address,
    guard,
    kubelet_node_ips,
    management_path,
    parse_default_routes,
    parse_ip_addresses,
)
from ansible_collections.gpunet.rdma.plugins.modules import ibdev2netdev_facts

IPROUTE2 = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'public', 'iproute2')


def recorded(name):
    with open(os.path.join(IPROUTE2, name)) as handle:
        return handle.read()


def test_recorded_ip_address_output():
    addresses = parse_ip_addresses(recorded('ip-json-address-show-bond0-eth0.json'))
    assert addresses == {
        'lo': ['127.0.0.1', '::1'],
        'bond0': ['10.96.83.26', 'fe80::b424:aff:fea0:f2fc'],
        'eth0': ['10.88.0.90', 'fe80::f495:efff:fee1:e77d'],
    }


def test_recorded_default_routes():
    assert parse_default_routes(recorded('ip-json-4-route-show-default-two.json')) == [
        {'dev': 'eth0', 'gateway': '10.88.0.1', 'metric': 100, 'family': 'inet'},
        {'dev': 'bond0', 'gateway': '10.96.83.1', 'metric': 100, 'family': 'inet'},
    ]
    assert parse_default_routes(recorded('ip-json-6-route-show-default-none.json'), 'inet6') == []
    assert parse_default_routes('') == []


def test_multipath_default_route_gives_each_hop():
    # iproute2 prints an ECMP route with a nexthops list instead of dev/gateway.
    text = json.dumps([{'dst': 'default', 'protocol': 'static', 'metric': 10, 'flags': [], 'nexthops': [
        {'gateway': '10.0.0.1', 'dev': 'bond0', 'weight': 1, 'flags': []},
        {'gateway': '10.0.1.1', 'dev': 'eno1', 'weight': 1, 'flags': []}]}])
    assert [route['dev'] for route in parse_default_routes(text)] == ['bond0', 'eno1']


@pytest.mark.parametrize('text, message', [
    ('1: lo: <LOOPBACK,UP> mtu 65536', 'not JSON'),
    ('{"ifname": "lo"}', 'expected a list'),
    ('[{"ifindex": 1}]', 'without ifname'),
    ('[{"ifname": "eth0", "addr_info": [{"local": "10.0.0.300"}]}]', 'not an IP address'),
])
def test_foreign_ip_output_is_refused(text, message):
    with pytest.raises(ManagementPathError, match=message):
        parse_ip_addresses(text)


def test_kubelet_node_ip_from_recorded_flags_file():
    assert kubelet_node_ips({'/var/lib/kubelet/kubeadm-flags.env': recorded('kubeadm-flags.env')}) == \
        ['192.168.99.100']


def test_kubelet_dual_stack_and_comments():
    texts = {'/etc/default/kubelet': '# KUBELET_EXTRA_ARGS="--node-ip=10.9.9.9"\n'
                                     'KUBELET_EXTRA_ARGS="--node-ip 10.1.2.3,fd00::3 --max-pods=200"\n'}
    assert kubelet_node_ips(texts) == ['10.1.2.3', 'fd00::3']
    with pytest.raises(ManagementPathError, match='--node-ip'):
        kubelet_node_ips({'/etc/default/kubelet': 'KUBELET_EXTRA_ARGS=--node-ip=10.1.2.300'})


def test_connection_address_is_the_server_side():
    assert connection_address('10.96.83.1 52144 10.96.83.26 22') == '10.96.83.26'
    assert connection_address(None) is None
    assert connection_address('garbage') is None


@pytest.fixture
def a100_sysfs(tmp_path, hardware):
    return hardware('a100', tmp_path / 'sys')


def test_bond_over_connectx_port_is_resolved_to_its_rdma_device(a100_sysfs):
    sysfs = SysfsNet(a100_sysfs)
    assert sysfs.stack('bond0') == ['bond0', 'enp59s0f0np0']
    path = management_path(parse_ip_addresses(recorded('ip-json-address-show-bond0-eth0.json')),
                           [('connection', '10.96.83.26')], sysfs,
                           parse_default_routes(recorded('ip-json-4-route-show-default-two.json')))
    bond0 = [item for item in path['interfaces'] if item['name'] == 'bond0'][0]
    assert bond0['sources'] == ['connection', 'default_route']
    assert bond0['pci_functions'] == ['0000:3b:00.0'] and bond0['rdma_devices'] == ['mlx5_bond_0']
    assert bond0['drivers'] == ['mlx5_core'] and bond0['over_rdma'] is True
    eth0 = [item for item in path['interfaces'] if item['name'] == 'eth0'][0]
    assert eth0['sources'] == ['default_route'] and eth0['over_rdma'] is False and eth0['pci_functions'] == []
    assert path['adapters'] == ['0000:3b:00'] and path['rdma_devices'] == ['mlx5_bond_0']


def test_address_on_no_interface_is_reported_unresolved(a100_sysfs):
    path = management_path({'eth0': ['10.0.0.5']}, [('kubelet_node_ip', '10.0.0.99')], SysfsNet(a100_sysfs))
    assert path['interfaces'] == [] and path['unresolved'] == [{'source': 'kubelet_node_ip', 'address': '10.0.0.99'}]


def firmware_ledger(devices, action='firmware_reset'):
    return _ledger.record({}, 'firmware', changed=True,
                          pending=[{'action': action, 'allowed': True, 'reason': 'mlx5 SRIOV_EN'}],
                          detail={'devices': devices})


def bond_path(a100_sysfs):
    return management_path({'bond0': ['10.96.83.26'], 'eth0': ['10.88.0.5']}, [('connection', '10.96.83.26')],
                           SysfsNet(a100_sysfs))


def test_reset_of_the_bond_card_is_held_naming_interface_and_variable(a100_sysfs):
    ledger = firmware_ledger([{'device': 'mlx5_bond_0', 'pci_address': '0000:3b:00.0', 'pending': ['SRIOV_EN']}])
    holds = guard(ledger, bond_path(a100_sysfs))
    assert [hold['action'] for hold in holds] == ['firmware_reset']
    reason = holds[0]['reason']
    assert 'mlx5_bond_0' in reason and 'bond0 (over enp59s0f0np0)' in reason and '10.96.83.26' in reason
    assert 'rollout_allow_management_path_disruption: true' in reason
    held = _ledger.hold(ledger, holds)
    assert held['firmware']['pending'][0]['allowed'] is False and 'held:' in held['firmware']['pending'][0]['reason']
    assert _ledger.plan(held)['actions'] == []


def test_reset_of_another_adapter_goes_ahead(a100_sysfs):
    # mlx5_0 (0000:0c:00.0) carries no management interface: the node's batch resets it.
    ledger = firmware_ledger([{'device': 'mlx5_0', 'pci_address': '0000:0c:00.0', 'pending': ['LINK_TYPE_P1']},
                              {'device': 'mlx5_bond_0', 'pci_address': '0000:3b:00.0', 'pending': []}])
    assert guard(ledger, bond_path(a100_sysfs)) == []


def test_second_function_of_the_same_adapter_is_held(tmp_path, hardware):
    # A firmware reset takes every function of the adapter: a change on function 1 cuts off a bond over function 0.
    ledger = firmware_ledger([{'device': 'mlx5_bond_1', 'pci_address': '0000:3b:00.1', 'pending': ['X']}])
    root = hardware('a100', tmp_path / 'sys')
    assert [hold['action'] for hold in guard(ledger, bond_path(root))] == ['firmware_reset']


def test_driver_restart_is_held_when_any_management_interface_runs_over_rdma(a100_sysfs):
    ledger = _ledger.record({}, 'ofed', changed=True,
                            pending=[{'action': 'driver_restart', 'allowed': True, 'reason': 'new OFED'}])
    holds = guard(ledger, bond_path(a100_sysfs))
    assert [hold['action'] for hold in holds] == ['driver_restart'] and 'bond0' in holds[0]['reason']
    only_eth0 = management_path({'eth0': ['10.88.0.5']}, [('connection', '10.88.0.5')], SysfsNet(a100_sysfs))
    assert guard(ledger, only_eth0) == []


def test_reboot_and_steps_not_allowed_are_never_held(a100_sysfs):
    devices = [{'device': 'mlx5_bond_0', 'pci_address': '0000:3b:00.0', 'pending': ['SRIOV_EN']}]
    assert guard(firmware_ledger(devices, action='reboot'), bond_path(a100_sysfs)) == []
    waiting = _ledger.record({}, 'firmware', pending=[{'action': 'firmware_reset', 'allowed': False}],
                             detail={'devices': devices})
    assert guard(waiting, bond_path(a100_sysfs)) == []


def test_hold_refuses_unknown_actions():
    with pytest.raises(_ledger.LedgerError, match='held action'):
        _ledger.hold({}, [{'action': 'power_cycle', 'reason': 'x'}])


def ip_double(directory, outputs):
    """A test double of iproute2's ip: answers the three JSON queries the module makes, refuses anything else."""
    path = os.path.join(str(directory), 'ip')
    cases = ''.join("  '%s') cat <<'EOF'\n%s\nEOF\n  ;;\n" % (argv, text.strip()) for argv, text in outputs.items())
    with open(path, 'w') as handle:
        handle.write('#!/bin/sh\ncase "$*" in\n%s  *) echo "Object \\"$1\\" is unknown, try \\"ip help\\"." >&2; '
                     'exit 255 ;;\nesac\n' % cases)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def test_module_returns_the_management_path(tmp_path, a100_sysfs, capsys, monkeypatch):
    ip = ip_double(tmp_path, {
        '-json address show': recorded('ip-json-address-show-bond0-eth0.json'),
        '-json -4 route show default': recorded('ip-json-4-route-show-default-two.json'),
        '-json -6 route show default': recorded('ip-json-6-route-show-default-none.json'),
    })
    flags = tmp_path / 'kubeadm-flags.env'
    flags.write_text('KUBELET_KUBEADM_ARGS="--node-ip=10.96.83.26"\n')
    monkeypatch.setenv('SSH_CONNECTION', '10.96.83.1 40000 10.96.83.26 22')
    args = {'sysfs_root': a100_sysfs, 'management_path': {'ip_path': ip, 'kubelet_flag_files': [str(flags)]}}
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            ibdev2netdev_facts.main()
    result = json.loads(capsys.readouterr().out)
    path = result['ansible_facts']['rdma_management_path']
    bond0 = [item for item in path['interfaces'] if item['name'] == 'bond0'][0]
    assert bond0['sources'] == ['connection', 'kubelet_node_ip', 'default_route']
    assert path['rdma_devices'] == ['mlx5_bond_0']


def test_module_names_a_failing_ip(tmp_path, a100_sysfs, capsys):
    ip = ip_double(tmp_path, {})
    with patch_module_args({'sysfs_root': a100_sysfs, 'management_path': {'ip_path': ip}}):
        with pytest.raises(SystemExit):
            ibdev2netdev_facts.main()
    result = json.loads(capsys.readouterr().out)
    assert result['failed'] and 'exited with 255' in result['msg'] and 'iproute2' in result['msg']
