# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The mlnx_qos and pci_tuning modules against the lab's doubles: change, idempotence, check mode, diff, failures."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.gpunet.rdma.plugins.modules import mlnx_qos, pci_tuning

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
NETDEVS = ['enp11s0f0np0', 'enp12s0f0np0']
PFS = ['0000:0b:00.0', '0000:0c:00.0']


@pytest.fixture
def lab(lab_tree):
    return lab_tree('roce_a100')


def add_ecn_tree(lab, netdev, enabled=()):
    for direction in ('roce_np', 'roce_rp'):
        base = lab / 'sys' / 'class' / 'net' / netdev / 'ecn' / direction / 'enable'
        base.mkdir(parents=True)
        for prio in range(8):
            (base / str(prio)).write_text('1\n' if prio in enabled else '0\n')


def qos_args(lab, **extra):
    args = dict(interfaces=NETDEVS, trust='dscp', pfc_priorities=[3], executable=str(lab / 'bin' / 'mlnx_qos'),
                sysfs_root=str(lab / 'sys'))
    args.update(extra)
    return dict((key, value) for key, value in args.items() if value is not None)


def calls(lab, kind):
    path = lab / kind / 'calls.log'
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_mlnx_qos_sets_trust_and_pfc_once(lab, run_module):
    rc, result = run_module(mlnx_qos, qos_args(lab), diff=True)
    assert rc == 0 and result['changed']
    first = result['results'][0]
    assert first['changes'] == {'trust': {'before': 'pcp', 'after': 'dscp'},
                                'pfc_priorities': {'before': [], 'after': [3]}}
    assert first['after']['trust'] == 'dscp' and first['after']['pfc_priorities'] == [3]
    assert ['mlnx_qos', '-i', 'enp11s0f0np0', '--trust', 'dscp', '--pfc', '0,0,0,1,0,0,0,0'] in calls(lab, 'qos')
    assert 'trust: pcp' in result['diff'][0]['before'] and 'pfc: 0,0,0,1,0,0,0,0' in result['diff'][0]['after']
    rc, again = run_module(mlnx_qos, qos_args(lab))
    assert rc == 0 and not again['changed']
    assert all(call[2:] == [] or len(call) == 3 for call in calls(lab, 'qos')[-2:])


def test_mlnx_qos_check_mode_changes_nothing(lab, run_module):
    rc, result = run_module(mlnx_qos, qos_args(lab), check_mode=True)
    assert rc == 0 and result['changed']
    assert result['results'][0]['after']['pfc_priorities'] == [3]
    assert all(len(call) == 3 for call in calls(lab, 'qos'))
    rc, real = run_module(mlnx_qos, qos_args(lab, trust=None, pfc_priorities=None))
    assert real['results'][0]['after']['trust'] == 'pcp' and not real['changed']


def test_mlnx_qos_ecn_through_sysfs(lab, run_module):
    add_ecn_tree(lab, 'enp11s0f0np0', enabled=(0, 1))
    rc, result = run_module(mlnx_qos, qos_args(lab, interfaces=['enp11s0f0np0'], ecn_priorities=[3]))
    assert rc == 0
    ecn = result['results'][0]['ecn']
    assert ecn == {'supported': True, 'roce_np': [0, 1, 3], 'roce_rp': [0, 1, 3],
                   'enabled': [['roce_np', 3], ['roce_rp', 3]]}
    rc, again = run_module(mlnx_qos, qos_args(lab, interfaces=['enp11s0f0np0'], ecn_priorities=[3]))
    assert not again['changed'] and again['results'][0]['ecn']['enabled'] == []


def test_mlnx_qos_without_ecn_tree_warns_and_changes_qos(lab, run_module):
    rc, result = run_module(mlnx_qos, qos_args(lab, interfaces=['enp11s0f0np0'], ecn_priorities=[3]))
    assert rc == 0 and result['results'][0]['ecn']['supported'] is False, result
    warnings = [(w.get('event') or {}).get('msg', '') if isinstance(w, dict) else str(w)
                for w in result.get('warnings') or []]
    assert any('ROCE_CC_PRIO_MASK_P1' in w for w in warnings), warnings


def test_mlnx_qos_refuses_before_any_change(lab, run_module):
    rc, result = run_module(mlnx_qos, qos_args(lab, interfaces=['enp11s0f0np0', 'eth9']))
    assert rc == 1 and 'eth9 is not a network interface of this host' in result['msg']
    assert calls(lab, 'qos') == []
    rc, result = run_module(mlnx_qos, qos_args(lab, pfc_priorities=[8]))
    assert rc == 1 and '8 is not a priority' in result['msg']


def test_mlnx_qos_unknown_layout_is_refused(lab, run_module):
    tool = lab / 'odd_qos'
    tool.write_text('#!/bin/sh\necho "PFC configuration:"\necho "  prio 0 1 2 3 4 5 6 7"\n')
    tool.chmod(0o755)
    rc, result = run_module(mlnx_qos, qos_args(lab, executable=str(tool)))
    assert rc == 1 and 'does not print in any known release' in result['msg'] and 'Nothing was changed' in result['msg']


def pci_args(lab, **extra):
    args = dict(devices=PFS, max_read_request=4096, executable=str(lab / 'bin' / 'setpci'), sysfs_root=str(lab / 'sys'))
    args.update(extra)
    return args


def test_pci_tuning_writes_only_the_size_bits_once(lab, run_module):
    rc, result = run_module(pci_tuning, pci_args(lab), diff=True)
    assert rc == 0 and result['changed']
    assert result['results'][0]['before'] == {'word': '2020', 'max_read_request': 512, 'max_payload': 256}
    assert result['results'][0]['after'] == {'word': '5020', 'max_read_request': 4096, 'max_payload': 256}
    assert ['setpci', '-s', '0000:0b:00.0', 'CAP_EXP+8.w=5000:7000'] in calls(lab, 'pci')
    assert 'MaxReadReq 4096 bytes' in result['diff'][0]['after']
    rc, again = run_module(pci_tuning, pci_args(lab))
    assert rc == 0 and not again['changed']
    assert not any('=' in call[-1] for call in calls(lab, 'pci')[-4:])


def test_pci_tuning_check_mode_writes_nothing(lab, run_module):
    rc, result = run_module(pci_tuning, pci_args(lab), check_mode=True)
    assert rc == 0 and result['changed'] and result['results'][0]['after']['max_read_request'] == 4096
    assert not any('=' in call[-1] for call in calls(lab, 'pci'))


def test_pci_tuning_refuses_a_function_it_cannot_trust_before_any_write(lab, run_module):
    # a config space whose Device Control reads a reserved size encoding
    (lab / 'pci').mkdir(exist_ok=True)
    import importlib.util  # pylint: disable=import-outside-toplevel
    spec = importlib.util.spec_from_file_location('setpci_double', os.path.join(REPO, 'lab', 'doubles', 'setpci.py'))
    double = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(double)
    config = bytearray(int(b, 16) for b in double.TEMPLATE) + bytearray(0x1000 - 0x100)
    config[0x69] = 0x70
    (lab / 'pci' / '0000:0c:00.0.json').write_text(json.dumps({'config': config.hex()}))
    rc, result = run_module(pci_tuning, pci_args(lab))
    assert rc == 1 and 'reserved Max_Read_Request_Size' in result['msg'] and 'Nothing was written' in result['msg']
    assert not any('=' in call[-1] for call in calls(lab, 'pci'))


@pytest.mark.parametrize('devices, message', [
    (['0000:99:00.0'], 'there is no PCI function 0000:99:00.0'),
    (['not-an-address'], 'is not a PCI address'),
    (['0000:0b:00.0', '0b:00.0'], 'given twice'),
    ([], 'devices is empty'),
])
def test_pci_tuning_bad_devices(lab, run_module, devices, message):
    rc, result = run_module(pci_tuning, pci_args(lab, devices=devices))
    assert rc == 1 and message in result['msg']


def test_pci_tuning_refuses_other_vendors(lab, run_module):
    vendor = lab / 'sys' / 'bus' / 'pci' / 'devices' / '0000:0b:00.0' / 'vendor'
    vendor.write_text('0x8086\n')
    rc, result = run_module(pci_tuning, pci_args(lab, devices=['0000:0b:00.0']))
    assert rc == 1 and 'not a Mellanox/NVIDIA function (vendor 0x8086' in result['msg']


# ---------------------------------------------------------------- a port or function that refuses after others changed

def wrapper(lab, name, script):
    """A tool in front of the lab's double: ``script`` (sh) runs first and may refuse, else the double runs."""
    path = lab / ('wrapped_' + name)
    path.write_text('#!/bin/sh\n%s\nexec "%s" "$@"\n' % (script, lab / 'bin' / name))
    path.chmod(0o755)
    return str(path)


def qos_reads(lab, run_module, interface):
    rc, result = run_module(mlnx_qos, qos_args(lab, interfaces=[interface], trust=None, pfc_priorities=None))
    assert rc == 0, result
    return result['results'][0]['after']['trust'], result['results'][0]['after']['pfc_priorities']


def test_mlnx_qos_second_port_refusing_undoes_the_first(lab, run_module):
    tool = wrapper(lab, 'mlnx_qos', 'case " $* " in *" -i enp12s0f0np0 "*--trust*) '
                   'echo "Priority trust state is not supported on your system"; exit 1 ;; esac')
    rc, result = run_module(mlnx_qos, qos_args(lab, executable=tool))
    assert rc == 1
    assert 'on enp12s0f0np0 failed' in result['msg'] and 'enp12s0f0np0 still reads as before' in result['msg']
    assert result['msg'].endswith('Changed before the failure and undone: trust pcp -> dscp and PFC priorities '
                                  'none -> 3 on enp11s0f0np0.'), result['msg']
    assert ['mlnx_qos', '-i', 'enp11s0f0np0', '--trust', 'pcp', '--pfc', '0,0,0,0,0,0,0,0'] in calls(lab, 'qos')
    assert qos_reads(lab, run_module, 'enp11s0f0np0') == ('pcp', [])
    assert qos_reads(lab, run_module, 'enp12s0f0np0') == ('pcp', [])


def test_mlnx_qos_port_left_half_changed_by_the_tool_is_put_back(lab, run_module):
    # mlnx_qos sets PFC before it looks at --trust: a trust value it refuses leaves the new PFC on the port
    tool = wrapper(lab, 'mlnx_qos', 'case " $* " in *" -i enp12s0f0np0 --trust dscp "*) '
                   'exec "%s" -i enp12s0f0np0 --trust none --pfc 0,0,0,1,0,0,0,0 ;; esac' % (lab / 'bin' / 'mlnx_qos'))
    rc, result = run_module(mlnx_qos, qos_args(lab, executable=tool))
    assert rc == 1 and 'Invalid trust state command' in result['msg'], result['msg']
    assert 'enp12s0f0np0 was put back as it was' in result['msg']
    assert 'undone: trust pcp -> dscp and PFC priorities none -> 3 on enp11s0f0np0.' in result['msg']
    assert qos_reads(lab, run_module, 'enp11s0f0np0') == ('pcp', [])
    assert qos_reads(lab, run_module, 'enp12s0f0np0') == ('pcp', [])


def test_mlnx_qos_ecn_write_refused_on_the_second_port_undoes_the_first(lab, run_module):
    for netdev in NETDEVS:
        add_ecn_tree(lab, netdev, enabled=(0,))
    refused = str(lab / 'sys' / 'class' / 'net' / 'enp12s0f0np0' / 'ecn' / 'roce_rp' / 'enable' / '3')
    real_open = os.open

    def refusing_open(path, flags, *args, **kwargs):
        if os.fspath(path) == refused and flags & os.O_WRONLY:
            raise OSError(13, 'Permission denied', refused)
        return real_open(path, flags, *args, **kwargs)

    rc, result = run_module(mlnx_qos, qos_args(lab, ecn_priorities=[3]), patch={(os, 'open'): refusing_open})
    assert rc == 1 and 'ECN roce_rp priority 3 on enp12s0f0np0 failed: writing 1 to %s failed' % refused in result['msg']
    assert ('undone: ECN roce_np priority 3 on enp12s0f0np0; trust pcp -> dscp and PFC priorities none -> 3 on '
            'enp12s0f0np0; ECN roce_rp priority 3 on enp11s0f0np0; ECN roce_np priority 3 on enp11s0f0np0; trust pcp '
            '-> dscp and PFC priorities none -> 3 on enp11s0f0np0.') in result['msg'], result['msg']
    for netdev in NETDEVS:
        for direction in ('roce_np', 'roce_rp'):
            base = lab / 'sys' / 'class' / 'net' / netdev / 'ecn' / direction / 'enable'
            assert [(base / str(prio)).read_text() for prio in range(8)] == ['1\n'] + ['0\n'] * 7
        assert qos_reads(lab, run_module, netdev) == ('pcp', [])


def test_mlnx_qos_unlistable_class_net_is_named(lab, run_module):
    class_net = str(lab / 'sys' / 'class' / 'net')
    real_listdir = os.listdir

    def refusing_listdir(path='.'):
        if os.fspath(path) == class_net:
            raise PermissionError(13, 'Permission denied', class_net)
        return real_listdir(path)

    rc, result = run_module(mlnx_qos, qos_args(lab, interfaces=['eth9']), patch={(os, 'listdir'): refusing_listdir})
    assert rc == 1 and '%s cannot be listed: permission denied' % class_net in result['msg'], result['msg']
    assert 'Run the module as root' in result['msg'] and calls(lab, 'qos') == []


def pci_devctl(lab, run_module, device):
    args = pci_args(lab, devices=[device])
    del args['max_read_request']
    rc, result = run_module(pci_tuning, args)
    assert rc == 0, result
    return result['results'][0]['after']['word']


@pytest.mark.parametrize('refusal, message', [
    ('echo "pcilib: sysfs_write: write failed: Input/output error" >&2; exit 1', 'failed (rc=1): pcilib'),
    # a platform that drops the write silently: setpci exits 0 and the register keeps its value
    ('exit 0', 'does not accept 4096'),
])
def test_pci_tuning_second_function_refusing_undoes_the_first(lab, run_module, refusal, message):
    tool = wrapper(lab, 'setpci', 'case "$1 $2 $3" in "-s 0000:0c:00.0 CAP_EXP+8.w="*) %s ;; esac' % refusal)
    rc, result = run_module(pci_tuning, pci_args(lab, executable=tool))
    assert rc == 1 and message in result['msg'], result['msg']
    assert '0000:0c:00.0 still reads Device Control 2020' in result['msg']
    assert result['msg'].endswith('Changed before the failure and undone: Max Read Request 512 -> 4096 bytes on '
                                  '0000:0b:00.0.'), result['msg']
    assert ['setpci', '-s', '0000:0b:00.0', 'CAP_EXP+8.w=2000:7000'] in calls(lab, 'pci')
    assert [pci_devctl(lab, run_module, device) for device in PFS] == ['2020', '2020']
