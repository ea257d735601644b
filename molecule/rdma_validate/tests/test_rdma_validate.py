# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Both validation levels after converge, idempotence and check: every count covers the three runs."""

from __future__ import annotations

import json
import os
import subprocess

import kubernetes
import testinfra

EPHEMERAL = os.environ['MOLECULE_EPHEMERAL_DIRECTORY']
STATE = os.path.join(EPHEMERAL, 'kube-apiserver')
LAB = '/opt/gpunet-lab'
NODES = ['val-node-01', 'val-node-02']
PORTS = [('mlx5_0', 'ibp94s0f0'), ('mlx5_1', 'ibp94s0f1')]


def node(name):
    return testinfra.get_host('podman://%s' % name)


def runs(name):
    with open(os.path.join(EPHEMERAL, 'validation-%s.jsonl' % name)) as handle:
        return [json.loads(line) for line in handle]


def perftest_calls(host, tool):
    lines = host.file('%s/firmware/calls.log' % LAB).content_string.splitlines()
    return [json.loads(line)[1:] for line in lines if json.loads(line)[0] == tool]


def audit():
    with open(os.path.join(STATE, 'audit.jsonl')) as handle:
        return [json.loads(line) for line in handle]


def test_three_runs_the_last_in_check_mode():
    for name in NODES:
        assert [run['check_mode'] for run in runs(name)] == [False, False, True], name


def test_loopback_per_active_port_at_the_recorded_share_of_the_line_rate():
    for name in NODES:
        for run in runs(name)[:2]:
            loopback = [t for t in run['validation']['detail']['tests'] if t['kind'] == 'loopback']
            assert [(t['device'], t['netdev']) for t in loopback] == PORTS, name
            for test in loopback:
                # 94.71 Gb/s of 100: what the InfiniBand field report's V100 loopback run printed
                assert (test['ok'], test['average_gbps'], test['line_rate_gbps']) == (True, 94.71, 100.0)
            assert run['validation']['status'] == 'ok' and run['validation']['problems'] == []


def test_cross_node_pairs_over_each_rail():
    pairs = [(name, t['server'], t['device'], t['server_device'], t['ok'])
             for name in NODES for t in runs(name)[0]['validation']['detail']['tests'] if t['kind'] == 'pair']
    assert pairs, 'no pair test ran'
    for client, server, device, server_device, ok in pairs:
        assert client != server and server in NODES and device == server_device and ok
    # every rail (port position) between the two nodes
    assert sorted(set(device for _c, _s, device, _d, _ok in pairs)) == ['mlx5_0', 'mlx5_1']


def test_check_mode_ran_no_test():
    for name in NODES:
        validation = runs(name)[2]['validation']
        assert validation['status'] == 'skipped' and validation['detail']['checked'] is False
        assert validation['detail']['tests'] == []


def test_no_perftest_process_is_left_behind():
    for name in NODES:
        assert node(name).run("pgrep -f '[i]b_write_'").rc == 1, name  # the bracket keeps pgrep's own shell out
        assert perftest_calls(node(name), 'ib_write_bw'), name


def test_the_pod_level_check_passed_with_unlimited_memlock():
    for run in runs('val-node-01')[:2]:
        pods = run['pod_validation']
        assert pods['status'] in ('ok', 'changed') and pods['problems'] == [], pods
        [result] = pods['detail']['results']
        # 93.4 % of 100 Gb/s: the 1 MiB ib_write_bw run of a pod in the InfiniBand field report
        assert (result['ok'], result['memlock'], result['line_rate_pct']) == (True, 'unlimited', 93.4)
    assert runs('val-node-01')[2]['pod_validation']['status'] == 'skipped'


def test_the_pods_requested_the_resource_with_ipc_lock_and_are_gone():
    created = [e for e in audit() if e['verb'] == 'create']
    assert [e['objectRef']['resource'] for e in created] == ['services', 'pods', 'pods'] * 2  # converge, idempotence
    client = [e['requestObject'] for e in created if e['requestObject']['metadata']['name'].endswith('-client')][0]
    container = client['spec']['containers'][0]
    assert container['resources']['limits'] == {'rdma/rdma_v100': 1}
    assert container['securityContext']['capabilities']['add'] == ['IPC_LOCK']
    api = kubernetes.config.new_client_from_config(os.path.join(STATE, 'kubeconfig'))
    v1 = kubernetes.client.CoreV1Api(api)
    assert v1.list_namespaced_pod('default').items == []
    assert v1.list_namespaced_service('default').items == []


def test_zz_slow_port_and_failed_pair():
    """Runs last: a port at 45 % of its line rate and a port whose exchange fails, in loopback and in the pairs."""
    play = subprocess.run(['ansible-playbook', '-i', os.environ['MOLECULE_INVENTORY_FILE'],
                           os.path.join(os.environ['MOLECULE_SCENARIO_DIRECTORY'], 'fault_injection.yml')],
                          check=False, capture_output=True, text=True)
    assert play.returncode == 0, play.stdout[-3000:] + play.stderr[-3000:]
    stages = {}
    for name in NODES:
        with open(os.path.join(EPHEMERAL, 'faults-%s.json' % name)) as handle:
            stages[name] = json.load(handle)
    slow = [t for t in stages['val-node-02']['detail']['tests'] if t['kind'] == 'loopback' and t['device'] == 'mlx5_1']
    assert len(slow) == 1 and slow[0]['ok'] is False
    assert 40 <= slow[0]['line_rate_pct'] <= 50 and 'below 90 %' in slow[0]['problem']
    broken = [t for t in stages['val-node-01']['detail']['tests'] if t['kind'] == 'loopback' and t['device'] == 'mlx5_0']
    assert len(broken) == 1 and broken[0]['ok'] is False and broken[0]['average_gbps'] is None
    failed_pairs = [t for name in NODES for t in stages[name]['detail']['tests']
                    if t['kind'] == 'pair' and 'mlx5_0' in (t['device'], t.get('server_device')) and not t['ok']]
    assert failed_pairs, 'the pair over the failing port passed'
    for name in NODES:
        assert stages[name]['status'] == 'failed' and stages[name]['problems'], name
    # the healthy ports of each node still pass
    good = [t for t in stages['val-node-01']['detail']['tests'] if t['kind'] == 'loopback' and t['device'] == 'mlx5_1']
    assert good and good[0]['ok'] is True
    assert not node('val-node-02').file('%s/perftest/faults.json' % LAB).exists
