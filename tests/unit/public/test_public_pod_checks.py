# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The in-pod checks against outputs recorded on real machines: `ip -j addr` (netplan's capture), `ip addr` inside
an SR-IOV pod (sriov-network-device-plugin issue 94), and the Spiderpool RoCE guide's outputs inside its rdma-tools
pod (`ip a`, `ip rule`, `ip route show table 100`, `rdma link`; tests/unit/fixtures/recorded).

Expectations were written by reading the outputs. The pods' own shell snippet runs too, with an `ip` and an `rdma`
that print those recordings, so that what the pods print and what the role reads are the same.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from ansible_collections.gpunet.rdma.plugins.plugin_utils._workloads import (
    MARK, POD_CHECKS, parse_ip_addr, parse_ip_rules, parse_rdma_links, parse_routes, pod_checks, pod_sections)

PUBLIC = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'public', 'ip_addr')
RECORDED = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'recorded')


def public(name):
    with open(os.path.join(PUBLIC, name)) as handle:
        return handle.read()


def recorded(name):
    with open(os.path.join(RECORDED, name)) as handle:
        return handle.read()


def test_every_public_artifact_is_sourced():
    import yaml
    names = sorted(n for n in os.listdir(PUBLIC) if not n.endswith('.source.yml'))
    assert names == ['netplan-status-test-ip-j-addr.json', 'sriov-network-device-plugin-94-pod-ip-addr.txt']
    for name in names:
        with open(os.path.join(PUBLIC, name + '.source.yml')) as handle:
            sidecar = yaml.safe_load(handle)
        assert sidecar['what'] and sidecar['excerpt']
        assert sidecar.get('source', '').startswith('https://github.com/') or len(sidecar['commit']) == 40


def test_ip_j_addr_json():
    interfaces = parse_ip_addr(public('netplan-status-test-ip-j-addr.json'))
    assert [(i['name'], i['state'], i['addresses']) for i in interfaces] == [
        ('lo', 'UNKNOWN', ['127.0.0.1/8', '::1/128']),
        ('enp0s31f6', 'UP', ['192.168.178.62/24', '2001:9e8:a19f:1c00:56e1:adff:fe5f:24b4/64',
                             'fe80::56e1:adff:fe5f:24b4/64']),
        ('wlan0', 'UP', ['192.168.178.142/24', '2001:9e8:a19f:1c00:7011:2d1:951:ad03/64',
                         '2001:9e8:a19f:1c00:f24f:f724:5dd1:d0ad/64', 'fe80::fec1:6ced:5268:b46c/64']),
        ('wg0', 'UNKNOWN', ['10.10.0.2/24']), ('wwan0', 'DOWN', []), ('tun0', 'UNKNOWN', ['2001:dead:beef::2/64'])]


def test_ip_addr_text_of_an_sriov_pod():
    interfaces = parse_ip_addr(public('sriov-network-device-plugin-94-pod-ip-addr.txt'))
    assert [(i['name'], i['state'], i['addresses']) for i in interfaces] == [
        ('lo', 'UNKNOWN', ['127.0.0.1/8']), ('eth0', 'UP', ['10.97.126.167/32']), ('tunl0', 'DOWN', []),
        ('net1', 'UP', ['10.56.217.27/24'])]


def test_the_guides_pod_outputs():
    interfaces = parse_ip_addr(recorded('seed001-pod-ip-a.txt'))
    # net2's address line names net1 in the recording; the address belongs to the interface block it is in.
    assert [(i['name'], [a for a in i['addresses'] if ':' not in a]) for i in interfaces] == [
        ('lo', ['127.0.0.1/8']), ('tunl0', []), ('eth0', ['10.233.119.164/32']), ('net1', ['172.16.11.10/24']),
        ('net2', ['172.16.12.10/24'])]
    rules = parse_ip_rules(recorded('seed001-pod-ip-rule.txt'))
    assert [(r['priority'], r['from'], r['table']) for r in rules] == [
        (0, 'all', 'local'), (32762, '172.16.11.10', '107'), (32763, '172.16.12.10', '106'),
        (32764, '172.16.13.10', '105'), (32765, '172.16.14.10', '104'), (32765, '172.16.15.10', '103'),
        (32765, '172.16.16.10', '102'), (32765, '172.16.17.10', '101'), (32765, '172.16.18.10', '100'),
        (32766, 'all', 'main'), (32767, 'all', 'default')]
    assert parse_routes(recorded('seed001-pod-ip-route-table-100.txt')) == [
        {'dst': 'default', 'via': '172.16.11.254', 'dev': 'net1'}]
    main = parse_routes(recorded('seed001-pod-ip-route-main.txt'))
    assert main[0] == {'dst': 'default', 'via': '169.254.1.1', 'dev': 'eth0'} and len(main) == 14
    assert main[1] == {'dst': '172.16.11.0/24', 'via': None, 'dev': 'net1'}
    assert parse_rdma_links(recorded('seed001-pod-rdma-link.txt')) == [
        {'device': 'mlx5_27', 'port': 1, 'state': 'ACTIVE', 'netdev': 'net2'},
        {'device': 'mlx5_54', 'port': 1, 'state': 'ACTIVE', 'netdev': 'net1'},
        {'device': 'mlx5_67', 'port': 1, 'state': 'ACTIVE', 'netdev': 'net4'},
        {'device': 'mlx5_98', 'port': 1, 'state': 'ACTIVE', 'netdev': 'net3'}]


def guide_log():
    """A pod log as the validation pods print it, from the guide's recordings."""
    return '\n'.join([
        'ulimit -l: unlimited',
        MARK + 'ip -j addr', recorded('seed001-pod-ip-a.txt'),
        MARK + 'ip rule', recorded('seed001-pod-ip-rule.txt'),
        MARK + 'ip route show table 100', recorded('seed001-pod-ip-route-table-100.txt'),
        MARK + 'rdma link', recorded('seed001-pod-rdma-link.txt'),
        MARK + 'env', MARK + 'end', 'ib_write_bw output follows'])


TWO_NETWORKS = {'mode': 'spiderpool', 'interfaces': 2, 'subnets': ['172.16.11.0/24', '172.16.12.0/24'],
                'gateways': ['172.16.11.254', '172.16.12.254'], 'policy_routes': True, 'rdma_devices': 2, 'hcas': [],
                'resources': ['spidernet.io/shared_cx5_gpu1', 'spidernet.io/shared_cx5_gpu2']}


def test_the_guides_recordings_judged_as_a_two_network_pod():
    """Interfaces, addresses and RDMA devices fit; the routes do not: the recorded rules send 172.16.11.10 to table
    107 and 172.16.12.10 to 106, but the recorded default route via 172.16.11.254 is table 100's - the guide's
    outputs come from different moments (or were edited), which is exactly what the check catches."""
    result = pod_checks(guide_log(), None, TWO_NETWORKS, 'rdma-tools-4v8t8')
    assert [i['name'] for i in result['interfaces']] == ['net1', 'net2']
    assert result['rules'] == 8 and result['routes'] == ['100']
    assert result['problems'] == ['table 107 of 172.16.11.10 (net1) has no default route',
                                  'table 106 of 172.16.12.10 (net2) has no default route']
    assert sorted(r['netdev'] for r in result['rdma']) == ['net1', 'net2', 'net3', 'net4']


def test_eight_networks_expected_two_shown():
    checks = dict(TWO_NETWORKS, interfaces=8, rdma_devices=8, subnets=[], gateways=[], policy_routes=False)
    problems = pod_checks(guide_log(), None, checks)['problems']
    assert problems[0].startswith('expected 8 secondary interfaces with an IPv4 address (net1..net8), found 2 '
                                  '(net1, net2)')
    assert problems[1].startswith('rdma link shows 2 ACTIVE RDMA devices on the pod\'s interfaces '
                                  '(mlx5_27/1 net2, mlx5_54/1 net1), 8 expected')


def test_pool_order_and_gateways():
    swapped = dict(TWO_NETWORKS, subnets=['172.16.12.0/24', '172.16.11.0/24'])
    problems = pod_checks(guide_log(), None, swapped)['problems']
    assert 'net1 has 172.16.11.10/24, outside its pool\'s subnet 172.16.12.0/24: the networks annotation and the ' \
           'pools are in another order' in problems
    routed = guide_log().replace(MARK + 'ip route show table 100', MARK + 'ip route show table 107')
    result = pod_checks(routed, None, dict(TWO_NETWORKS, gateways=['172.16.11.1', '172.16.12.254']))
    assert result['problems'][0] == 'table 107 of 172.16.11.10 goes via 172.16.11.254, not the pool\'s gateway ' \
                                    '172.16.11.1'


def test_stored_pod_and_injection():
    pod = {'metadata': {'name': 'p', 'annotations': {'cni.spidernet.io/rdma-resource-inject': 'rdma-network'}},
           'spec': {'containers': [{'name': 'client', 'resources': {'limits': {'spidernet.io/shared_cx5_gpu1': 1}}}]}}
    result = pod_checks(guide_log(), pod, dict(TWO_NETWORKS, policy_routes=False))
    assert result['injected'] is True and result['resources'] == {'spidernet.io/shared_cx5_gpu1': '1'}
    assert result['problems'] == [
        'the pod as stored lacks spidernet.io/shared_cx5_gpu2 in its limits: Spiderpool\'s webhook did not inject '
        'them (podResourceInject enabled? the namespace included? a SpiderMultusConfig with the same annotation?)',
        'the pod as stored has no k8s.v1.cni.cncf.io/networks: Spiderpool\'s webhook did not inject the networks']


def test_hostdev_pod():
    log = '\n'.join([MARK + 'ip -j addr', public('sriov-network-device-plugin-94-pod-ip-addr.txt'), MARK + 'ip rule',
                     MARK + 'rdma link', 'link mlx5_4/1 state ACTIVE physical_state LINK_UP netdev net1',
                     MARK + 'env', 'PCIDEVICE_NVIDIA_COM_HOSTDEV=0000:3b:00.2', MARK + 'end'])
    checks = {'mode': 'hostdev', 'interfaces': 1, 'rdma_devices': 1, 'resources': ['nvidia.com/hostdev']}
    result = pod_checks(log, None, checks)
    assert result['ok'] is True and result['env'] == ['PCIDEVICE_NVIDIA_COM_HOSTDEV']
    without_vf = pod_checks(log.replace('PCIDEVICE_NVIDIA_COM_HOSTDEV=0000:3b:00.2', ''), None, checks)
    assert without_vf['problems'] == ['no PCIDEVICE_* variable in the pod: the SR-IOV device plugin allocated no VF '
                                      'to it']


@pytest.mark.parametrize('log, start', [
    ('', 'the log holds no in-pod checks'),
    (MARK + 'ip -j addr\nsh: ip: not found\n' + MARK + 'end', 'ip addr printed nothing readable: the image needs'),
])
def test_pods_that_printed_no_checks(log, start):
    assert pod_checks(log, None, {'mode': 'shared'})['problems'][0].startswith(start)


def test_the_pods_shell_snippet_prints_what_the_reader_reads(tmp_path):
    """POD_CHECKS under sh with an `ip` and an `rdma` that print the guide's recordings (and refuse -j, as busybox's
    ip does): the tables the rules name are read, in order, and the reader sees the same as above."""
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    for name in ('seed001-pod-ip-a.txt', 'seed001-pod-ip-rule.txt', 'seed001-pod-ip-route-table-100.txt',
                 'seed001-pod-rdma-link.txt'):
        (tmp_path / name).write_text(recorded(name))
    (bindir / 'ip').write_text(
        '#!/bin/sh\nD=%s\ncase "$*" in\n'
        '  "-j addr") echo "ip: invalid option -j" >&2; exit 1 ;;\n'
        '  addr) cat "$D/seed001-pod-ip-a.txt" ;;\n  rule) cat "$D/seed001-pod-ip-rule.txt" ;;\n'
        '  "route show table 100") cat "$D/seed001-pod-ip-route-table-100.txt" ;;\n'
        '  "route show table "*) ;;\n  *) exit 2 ;;\nesac\n' % tmp_path)
    (bindir / 'rdma').write_text('#!/bin/sh\n[ "$*" = link ] && cat %s/seed001-pod-rdma-link.txt\n' % tmp_path)
    for tool in ('ip', 'rdma'):
        (bindir / tool).chmod(0o755)
    env = dict(os.environ, PATH='%s:%s' % (bindir, os.environ['PATH']), NCCL_DEBUG='INFO')
    log = subprocess.run(['sh', '-c', POD_CHECKS], capture_output=True, text=True, env=env, check=True).stdout
    sections = pod_sections(log)
    assert sorted(sections) == ['', 'env', 'ip -j addr', 'ip route show table 100', 'ip route show table 101',
                                'ip route show table 102', 'ip route show table 103', 'ip route show table 104',
                                'ip route show table 105', 'ip route show table 106', 'ip route show table 107',
                                'ip rule', 'rdma link']
    assert sections['env'] == 'NCCL_DEBUG=INFO'
    result = pod_checks(log, None, TWO_NETWORKS)
    assert [i['name'] for i in result['interfaces']] == ['net1', 'net2'] and result['rules'] == 8
    assert result['problems'] == ['table 107 of 172.16.11.10 (net1) has no default route',
                                  'table 106 of 172.16.12.10 (net2) has no default route']
