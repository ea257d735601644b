# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The HTML fleet report: its text, and the page as a real headless browser (Debian's chromium) loads it.

The oracle is what a person must see on the page, written by hand from the input: the small fleet of
tests/unit/fixtures/small-fleet (four hosts and the controller, run through the filters the report play runs) is
checked table by table, cell by cell; the lab report (tests/unit/fixtures/report: 7 hosts, loopback tests on every
port and one cross-node pair) and its variants by the values each test names. Nothing is compared with the Markdown
report or computed with the report's own cell helpers, which the HTML renderer shares: both could be wrong together.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import tempfile
import time
from html.parser import HTMLParser

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.filter.ledger import rdma_fabrics, rdma_ledgers
from ansible_collections.gpunet.rdma.plugins.filter.report import rdma_check_hosts, rdma_fleet_report
from ansible_collections.gpunet.rdma.plugins.filter.report_html import FilterModule
from ansible_collections.gpunet.rdma.plugins.plugin_utils._fleet_report import (
    build_fleet_report, pod_validation_state, validation_state)

rdma_report_html = FilterModule().filters()['report_html']

FIXTURE = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'report', 'lab-fleet-report.json')
VOID = frozenset(('area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'source', 'track',
                  'wbr'))


def lab_report():
    with open(FIXTURE) as handle:
        return json.load(handle)


def failing_report():
    """The lab report with lab-v100-2 failing: a port down, a stage failed, its pair test below the threshold."""
    report = copy.deepcopy(lab_report())
    host = [h for h in report['hosts'] if h['host'] == 'lab-v100-2'][0]
    host['verdict'] = 'fail'
    host['problems'] = ['expected at least 2 ACTIVE InfiniBand ports >= 100 Gb/s, found 1',
                        'mlx5_1 port 1 (ibp94s0f1): DOWN / Polling: no link partner: check the cable']
    port = [p for p in host['ports'] if p['device'] == 'mlx5_1'][0]
    port.update(state='DOWN', physical_state='Polling', verdict='down', note='no link partner: check the cable')
    host['stages'][0].update(status='failed', problems=['mlxconfig query failed'])
    summary = report['summary']
    summary['failed_stages'] = ['lab-v100-2 %s' % host['stages'][0]['stage']]
    summary['stages'].update(ok=summary['stages']['ok'] - 1, failed=1)
    summary.update({'pass': summary['pass'] - 1, 'fail': summary['fail'] + 1, 'failed_hosts': ['lab-v100-2'],
                    'active_ports': summary['active_ports'] - 1})
    pair = [t for t in report['validation'] if t['kind'] == 'pair'][0]
    pair.update(ok=False, average_gbps=41.3, line_rate_pct=41.3, problem='41.3 % of the line rate, below 90 %')
    # and the other direction, faster than the line rate says: the bar stays inside its box
    report['validation'].append(dict(pair, host='lab-v100-1', server='lab-v100-2', ok=True, average_gbps=131.3,
                                     line_rate_pct=131.3, problem=None))
    summary['validation_failed'] = ['lab-v100-2 mlx5_0']
    summary['validation_failed_hosts'] = ['lab-v100-2']
    return report


def fabric_proof_report():
    """The lab report with what the fabric proof adds: pairs per rail with latency (the V100 nodes' two rails, one
    pair slow, one above its latency threshold), the NCCL job of two groups (the AKS run on RDMA with GPUDirect, the
    NCCL 2.5.6 socket fallback of NCCL issue 278) and in-pod checks (the Spiderpool guide's recorded pod, a hostdev
    node without its resource), all judged by the collection's own filters from recorded outputs."""
    from ansible_collections.gpunet.rdma.plugins.filter.validate import (
        rdma_hostdev_allocatable, rdma_nccl_result, rdma_perftest_records, rdma_pod_checks)
    from ansible_collections.gpunet.rdma.plugins.plugin_utils._workloads import MARK
    fixtures = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures')

    def read(*path):
        with open(os.path.join(fixtures, *path)) as handle:
            return handle.read()
    report = lab_report()
    report['validation'] = [t for t in report['validation'] if t['kind'] != 'pair']
    ports = [{'device': 'mlx5_%d' % i, 'port': 1, 'netdev': 'ibp94s0f%d' % i, 'link_layer': 'InfiniBand'}
             for i in range(2)]

    def pair(client, server, rail, gbps, pct, latency, ok_bw=True, ok_lat=True):
        device = 'mlx5_%d' % rail
        results = [{'device': device, 'port': 1, 'tool': 'ib_write_bw', 'ok': ok_bw,
                    'problem': None if ok_bw else '%.2f Gb/s is %.1f %% of the 100 Gb/s line rate, below 90 %%' % (
                        gbps, pct),
                    'record': {'average_gbps': gbps, 'line_rate_gbps': 100, 'line_rate_pct': pct,
                               'min_line_rate_pct': 90}},
                   {'device': device, 'port': 1, 'tool': 'ib_write_lat', 'ok': ok_lat,
                    'problem': None if ok_lat else 'typical latency %g usec is above 2 usec' % latency,
                    'record': {'t_typical_usec': latency}}]
        return rdma_perftest_records(results, ports, client, 'pair', {'server': server, 'rail': rail,
                                                                      'group': 'ib_v100', 'max_latency_usec': 2.0})
    report['validation'] += validation_state([{'tests': pair('lab-v100-1', 'lab-v100-2', 0, 94.71, 94.7, 1.42)
                                               + pair('lab-v100-1', 'lab-v100-2', 1, 41.3, 41.3, 1.42, ok_bw=False)
                                               + pair('lab-v100-2', 'lab-v100-1', 0, 94.71, 94.7, 3.1, ok_lat=False)}])
    ib = read('public', 'nccl', 'aks-rdma-infiniband-30-mpijob-launcher-2.25.1.log') + read(
        'public', 'nccl', 'aks-rdma-infiniband-mpijob-ib-sriov.txt')
    nccl = [dict(rdma_nccl_result(ib, 200, True, 90), group='ib_a100', job='nccl-tests-ib-a100',
                 state='Succeeded'),
            dict(rdma_nccl_result(read('public', 'nccl', 'nccl-278-2.5.6-socket-rings.log'), 100, True),
                 group='ib_v100', job='nccl-tests-ib-v100', state='Succeeded')]
    guide = '\n'.join([MARK + 'ip -j addr', read('recorded', 'seed001-pod-ip-a.txt'), MARK + 'ip rule',
                       read('recorded', 'seed001-pod-ip-rule.txt'), MARK + 'ip route show table 100',
                       read('recorded', 'seed001-pod-ip-route-table-100.txt'), MARK + 'rdma link',
                       read('recorded', 'seed001-pod-rdma-link.txt'), MARK + 'end'])
    checks = {'mode': 'spiderpool', 'interfaces': 2, 'subnets': ['172.16.11.0/24', '172.16.12.0/24'],
              'policy_routes': True, 'rdma_devices': 2, 'resources': []}
    pod_checks = [dict(rdma_pod_checks(guide, None, checks, 'rdma-validate-roce-a100-client'),
                       group='roce_a100'),
                  dict(rdma_pod_checks(guide, None, dict(checks, policy_routes=False),
                                       'rdma-validate-roce-a100-server'), group='roce_a100')]
    allocatable = rdma_hostdev_allocatable(
        [{'group': 'ib_sriov', 'mode': 'hostdev', 'resources': ['nvidia.com/hostdev'], 'hosts': ['s1', 's2']}],
        [{'metadata': {'name': 's1'}, 'status': {'allocatable': {'nvidia.com/hostdev': '2'}}},
         {'metadata': {'name': 's2'}, 'status': {'allocatable': {}}}])
    report.update(pod_validation_state({'nccl': nccl, 'pod_checks': pod_checks, 'allocatable': allocatable}))
    summary = report['summary']
    summary['validation_failed'] = ['lab-v100-1 mlx5_1', 'lab-v100-2 mlx5_0']
    summary['nccl_failed'] = ['ib_v100']
    summary['pod_checks_failed'] = ['rdma-validate-roce-a100-client', 's2']
    return report


class Element(object):
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent = tag, dict((k, v if v is not None else '') for k, v in attrs), parent
        # text and child elements in document order
        self.children, self.parts = [], []

    @property
    def classes(self):
        return self.attrs.get('class', '').split()

    def inner_text(self):
        return ''.join(p if isinstance(p, str) else p.inner_text() for p in self.parts).strip()

    def ancestors(self):
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def within(self, tag, element_id):
        return any(a.tag == tag and a.attrs.get('id') == element_id for a in self.ancestors())


class Dom(HTMLParser):
    """Just enough of a DOM for the assertions: every element with its attributes, ancestors and text."""

    def __init__(self, text):
        HTMLParser.__init__(self, convert_charrefs=True)
        self.root = Element('#document', [], None)
        self.current = self.root
        self.elements = []
        self.feed(text)
        self.close()

    def _add(self, tag, attrs):
        element = Element(tag, attrs, self.current)
        self.current.children.append(element)
        self.current.parts.append(element)
        self.elements.append(element)
        return element

    def handle_starttag(self, tag, attrs):
        element = self._add(tag, attrs)
        if tag not in VOID:
            self.current = element

    def handle_startendtag(self, tag, attrs):
        self._add(tag, attrs)

    def handle_endtag(self, tag):
        node = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data):
        self.current.parts.append(data)

    def find(self, tag=None, cls=None, within=None, **attrs):
        """Elements by tag, class, an ancestor ``(tag, id)`` and attributes (``data_host`` for data-host)."""
        found = []
        for element in self.elements:
            if tag and element.tag != tag:
                continue
            if cls and not set(cls.split()) <= set(element.classes):
                continue
            if within and not element.within(*within):
                continue
            if any(element.attrs.get(name.replace('_', '-')) != value for name, value in attrs.items()):
                continue
            found.append(element)
        return found

    def by_id(self, element_id):
        matches = [e for e in self.elements if e.attrs.get('id') == element_id]
        assert len(matches) <= 1, 'id %s is not unique' % element_id
        return matches[0] if matches else None


# ------------------------------------------------------------------ the small fleet, checked against values by hand

SMALL_FLEET = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'small-fleet', 'hostvars.yml')
SMALL_FLEET_HOSTS = ['gpu-a1', 'gpu-a2', 'gpu-a3', 'cpu-1']


def small_fleet_report():
    """The report of tests/unit/fixtures/small-fleet, made as roles/rdma_discovery/tasks/report.yml makes it."""
    with open(SMALL_FLEET) as handle:
        hostvars = yaml.safe_load(handle)
    fabrics = rdma_fabrics(SMALL_FLEET_HOSTS, hostvars)['groups']
    return rdma_fleet_report(rdma_check_hosts(SMALL_FLEET_HOSTS, hostvars, fabrics), SMALL_FLEET_HOSTS,
                             rdma_ledgers(SMALL_FLEET_HOSTS, hostvars), fabrics)


# Everything below is what a person reading the fixture must find on the page, written by hand: never computed from
# the report, the Markdown renderer or the report's cell helpers.
EXPECTATION_A100 = 'at least 2 ACTIVE InfiniBand ports >= 200 Gb/s'
DOWN_NOTE = 'no link partner: check the cable and the switch port'
SLOW_PAIR = '81.6 Gb/s is 40.8 % of the 200 Gb/s line rate, below 90 %'
BY_HAND = {
    'title': 'RDMA fleet report',
    'nav': ['Pending actions', 'Groups', 'Hosts', 'Hosts that miss expectations', 'Validation', 'Pair matrix',
            'Ports', 'Stages', 'Kubernetes'],
    'tables': ['pending', 'pending-stages', 'groups', 'hosts', 'validation', 'pairs', 'ports', 'stages',
               'network-operator', 'left-alone'],
    # tile class -> (data-count, text)
    'tiles': [('hosts', '4', '4hosts'), ('pass', '1', '1pass'), ('fail', '1', '1fail'),
              ('unchecked', '1', '1unchecked'), ('no-facts', '1', '1no facts'), ('ports', '5', '5ports'),
              ('ports active', '4', '4ACTIVE'), ('pending', '1', '1hosts with pending actions')],
    'summary-text': '4 hosts: 1 pass, 1 fail, 1 unchecked, 1 without facts. 5 ports, 4 ACTIVE.',
    # gpu-a1: firmware ok, runtime pending, validation ok; gpu-a2: firmware failed, validation ok; the controller's
    # network_operator ok
    'summary-stages': 'Stages: 0 changed, 1 failed, 4 ok, 1 pending, 0 skipped.',
    'summary-failed': 'Failed hosts: gpu-a2, gpu-a3.',
    'pending': [('runtime_restart', ['container runtime restart pending', 'gpu-a1']),
                ('stage_failed', ['stage failed', 'gpu-a2 firmware']),
                ('bandwidth', ['bandwidth below the line rate threshold', 'gpu-a2 mlx5_0'])],
    'pending-stages': [['gpu-a1', 'runtime', 'runtime_restart (waits for permission)']],
    'groups': [('ib_a100', ['ib_a100', 'A100', 'InfiniBand', '200 Gb/s', 'rdma/rdma_a100', 'shared_device_plugin',
                            '3', '1'])],
    # data-host, data-verdict, verdict cell class, cells
    'hosts': [
        ('cpu-1', 'unchecked', 'unchecked', ['cpu-1', 'cpu', 'none', '-', 'sysfs', '-', 'UNCHECKED']),
        ('gpu-a1', 'pass', 'pass', ['gpu-a1', 'ib_a100', EXPECTATION_A100, '2', 'sysfs', 'runtime pending', 'PASS']),
        ('gpu-a2', 'fail', 'fail', ['gpu-a2', 'ib_a100', EXPECTATION_A100, '1', 'sysfs', 'firmware failed', 'FAIL']),
        ('gpu-a3', 'no facts', 'no-facts', ['gpu-a3', '-', 'none', '-', '-', '-', 'NO FACTS'])],
    'problems': [
        ('gpu-a2', 'gpu-a2 (ib_a100):', ['expected %s, found 1' % EXPECTATION_A100,
                                         'mlx5_1 port 1 (ibp141s0): DOWN / Polling: %s' % DOWN_NOTE]),
        ('gpu-a3', 'gpu-a3 (no group):', ['no facts: the host failed or was unreachable before discovery finished'])],
    # data-host, data-device, data-kind, data-ok, cells (the bar's cell has no text)
    'validation': [
        ('gpu-a1', 'mlx5_0', 'loopback', 'true',
         ['gpu-a1', 'loopback', 'mlx5_0', '1', 'ibp12s0', '188.4', '200 Gb/s', '', '94.2 %', '-', 'unlimited', 'ok']),
        ('gpu-a2', 'mlx5_0', 'pair', 'false',
         ['gpu-a2', 'pair from gpu-a1', 'mlx5_0', '1', 'ibp12s0', '81.6', '200 Gb/s', '', '40.8 %', '-', 'unlimited',
          SLOW_PAIR])],
    # class, data-pct, data-threshold, fill, threshold mark
    'bars': [('ok', '94.2', '90', 'width: 94.2%', 'left: 90.0%'), ('fail', '40.8', '90', 'width: 40.8%', 'left: 90.0%')],
    'pair-columns': ['server \\ client', 'gpu-a2'],
    # server, client, data-ok, text, title of the part
    'pairs': [('gpu-a1', 'gpu-a2', 'false', '81.6 Gb/s, 40.8 %', SLOW_PAIR)],
    # data-host, data-device, data-verdict, verdict cell class, cells
    'ports': [
        ('cpu-1', 'mlx5_0', 'unchecked', 'unchecked',
         ['cpu-1', 'cpu', 'mlx5_0', '1', 'enp65s0f0np0 (Up)', 'ACTIVE / LinkUp', 'Ethernet', '25 Gb/s',
          'unknown (no GID table from this source)', 'unchecked']),
        ('gpu-a1', 'mlx5_0', 'ok', 'ok',
         ['gpu-a1', 'ib_a100', 'mlx5_0', '1', 'ibp12s0 (Up)', 'ACTIVE / LinkUp', 'InfiniBand', '200 Gb/s', '-', 'ok']),
        ('gpu-a1', 'mlx5_1', 'ok', 'ok',
         ['gpu-a1', 'ib_a100', 'mlx5_1', '1', 'ibp141s0 (Up)', 'ACTIVE / LinkUp', 'InfiniBand', '200 Gb/s', '-',
          'ok']),
        ('gpu-a2', 'mlx5_0', 'ok', 'ok',
         ['gpu-a2', 'ib_a100', 'mlx5_0', '1', 'ibp12s0 (Up)', 'ACTIVE / LinkUp', 'InfiniBand', '200 Gb/s', '-', 'ok']),
        ('gpu-a2', 'mlx5_1', 'down', 'down',
         ['gpu-a2', 'ib_a100', 'mlx5_1', '1', 'ibp141s0 (Down)', 'DOWN / Polling', 'InfiniBand', '200 Gb/s', '-',
          'down: ' + DOWN_NOTE])],
    # data-host, data-stage, data-status, status cell class, cells
    'stages': [
        ('gpu-a1', 'firmware', 'ok', 'ok', ['gpu-a1', 'firmware', 'ok', 'no', '-', '-']),
        ('gpu-a1', 'runtime', 'pending', 'pending',
         ['gpu-a1', 'runtime', 'pending', 'yes', 'runtime_restart (waits for permission)', '-']),
        ('gpu-a1', 'validation', 'ok', 'ok', ['gpu-a1', 'validation', 'ok', 'no', '-', '-']),
        ('gpu-a2', 'firmware', 'failed', 'failed',
         ['gpu-a2', 'firmware', 'failed', 'no', '-', 'mlxconfig -d 0000:8d:00.0 query: exit status 3']),
        ('gpu-a2', 'validation', 'ok', 'ok', ['gpu-a2', 'validation', 'ok', 'no', '-', '-']),
        ('controller', 'network_operator', 'ok', 'ok', ['controller', 'network_operator', 'ok', 'no', '-', '-'])],
    'kubernetes-headings': ['NVIDIA Network Operator', 'Left alone'],
    'network-operator-note': 'NVIDIA Network Operator v25.4.0: helm values and objects applied.',
    'network-operator': [('rdma/rdma_a100', ['rdma/rdma_a100', 'ib_a100', '3', 'ibp12s0, ibp141s0', 'infiniband'])],
    'left-alone': [
        ('helm release', ['Network Operator', 'helm release', 'not upgraded',
                          'release network-operator was installed by hand (helm install), not by this collection']),
        ('NicClusterPolicy/nic-cluster-policy', ['Network Operator', 'NicClusterPolicy/nic-cluster-policy',
                                                 'not applied', 'managed by Argo CD application rdma-fabric'])],
}


def cells(row):
    return [cell.inner_text() for cell in row.children if cell.tag in ('td', 'th')]


def rows(dom, table_id, attribute):
    return [tr for tr in dom.find('tr', within=('table', table_id)) if attribute in tr.attrs]


def check_small_fleet(dom):
    """The page of the small fleet against BY_HAND, table by table."""
    expected = BY_HAND
    assert [e.inner_text() for e in dom.find('title')] == [expected['title']]
    assert [e.inner_text() for e in dom.find('h1')] == [expected['title']]
    assert [a.inner_text() for a in dom.find('a', within=None) if a.parent.tag == 'nav'] == expected['nav']
    assert [t.attrs['id'] for t in dom.find('table')] == expected['tables']
    assert not dom.find('script') and not dom.find('img')

    tiles = dom.find('div', cls='count', within=('div', 'summary'))
    assert [(' '.join(t.classes[1:]).replace(' zero', ''), t.attrs['data-count'], t.inner_text()) for t in tiles] \
        == expected['tiles']
    assert not [t for t in tiles if 'zero' in t.classes]  # every count of this fleet is above zero
    for key in ('summary-text', 'summary-stages', 'summary-failed'):
        assert dom.by_id(key).inner_text() == expected[key], key

    assert [(tr.attrs['data-action'], cells(tr)) for tr in rows(dom, 'pending', 'data-action')] == expected['pending']
    assert [cells(tr) for tr in rows(dom, 'pending-stages', 'data-stage')] == expected['pending-stages']
    assert [(tr.attrs['data-group'], cells(tr)) for tr in rows(dom, 'groups', 'data-group')] == expected['groups']

    hosts = rows(dom, 'hosts', 'data-host')
    assert [(tr.attrs['data-host'], tr.attrs['data-verdict'], tr.children[-1].classes, cells(tr)) for tr in hosts] \
        == [(host, verdict, ['verdict', cls], text) for host, verdict, cls, text in expected['hosts']]

    problems = [li for li in dom.find('li', within=('ul', 'problems')) if 'data-host' in li.attrs]
    assert [(li.attrs['data-host'], ''.join(p if isinstance(p, str) else p.inner_text() for p in li.parts
                                            if isinstance(p, str) or p.tag == 'b').strip(),
             [item.inner_text() for item in li.children[-1].children]) for li in problems] == expected['problems']

    tests = dom.find('tr', cls='test', within=('table', 'validation'))
    assert [(tr.attrs['data-host'], tr.attrs['data-device'], tr.attrs['data-kind'], tr.attrs['data-ok'], cells(tr))
            for tr in tests] == expected['validation']
    bars = dom.find('div', cls='bar', within=('table', 'validation'))
    assert [(b.classes[1], b.attrs['data-pct'], b.attrs['data-threshold'], b.children[0].attrs['style'],
             b.children[1].attrs['style']) for b in bars] == expected['bars']
    assert [t.children[-1].classes for t in tests] == [['verdict', 'ok', 'wrap'], ['verdict', 'fail', 'wrap']]

    assert [th.inner_text() for th in dom.find('th', within=('table', 'pairs')) if th.parent.parent.tag == 'thead'] \
        == expected['pair-columns']
    tested = dom.find('td', cls='pair', within=('table', 'pairs'))
    assert [(c.attrs['data-server'], c.attrs['data-client'], c.attrs['data-ok'], c.inner_text(),
             c.children[0].attrs['title']) for c in tested] == expected['pairs']
    assert [c.classes for c in tested] == [['pair', 'fail']]

    ports = rows(dom, 'ports', 'data-device')
    assert [(tr.attrs['data-host'], tr.attrs['data-device'], tr.attrs['data-verdict'], tr.children[-1].classes,
             cells(tr)) for tr in ports] == [
        (host, device, verdict, ['verdict', cls], text) for host, device, verdict, cls, text in expected['ports']]

    stages = rows(dom, 'stages', 'data-stage')
    assert [(tr.attrs['data-host'], tr.attrs['data-stage'], tr.attrs['data-status'], tr.children[2].classes,
             cells(tr)) for tr in stages] == [
        (host, stage, status, ['status', cls], text) for host, stage, status, cls, text in expected['stages']]
    assert [li.inner_text() for li in dom.find('li', within=('table', 'stages'))] == [
        'mlxconfig -d 0000:8d:00.0 query: exit status 3']

    kubernetes = dom.by_id('section-kubernetes')
    assert [h.inner_text() for h in dom.find('h3') if kubernetes in h.ancestors()] == expected['kubernetes-headings']
    assert expected['network-operator-note'] in [p.inner_text() for p in dom.find('p') if kubernetes in p.ancestors()]
    assert [(tr.attrs['data-resource'], cells(tr)) for tr in rows(dom, 'network-operator', 'data-resource')] \
        == expected['network-operator']
    assert [(tr.attrs['data-object'], cells(tr)) for tr in rows(dom, 'left-alone', 'data-object')] \
        == expected['left-alone']


def test_small_fleet_shows_what_a_person_must_see():
    html = rdma_report_html(small_fleet_report())
    assert html.startswith('<!DOCTYPE html>\n<html lang="en">')
    assert html.endswith('</html>\n')
    check_small_fleet(Dom(html))


def test_small_fleet_sections_that_have_nothing_to_show_are_left_out():
    """No firmware, driver, runtime detail, NCCL, in-pod check or out-of-scope host in the small fleet."""
    dom = Dom(rdma_report_html(small_fleet_report()))
    assert [s.attrs['id'] for s in dom.find('section')] == [
        'section-pending', 'section-groups', 'section-hosts', 'section-problems', 'section-validation',
        'section-pair-matrix', 'section-ports', 'section-stages', 'section-kubernetes']
    assert dom.by_id('validation-not-asked') is None and dom.by_id('pairs-none') is None


def test_small_fleet_without_the_failures():
    """The same fleet once gpu-a2 is cabled, its firmware stage passes and its pair reaches 94 %: green, and the
    pending runtime restart is all that is left to do."""
    with open(SMALL_FLEET) as handle:
        hostvars = yaml.safe_load(handle)
    a2 = hostvars['gpu-a2']['ansible_facts']
    a2['rdma_ports'][1].update(state='ACTIVE', physical_state='LinkUp', netdev_state='Up')
    a2['gpunet_rdma_ledger']['firmware'].update(status='ok', problems=[])
    a2['gpunet_rdma_ledger']['validation']['detail']['tests'][0].update(
        average_gbps=188.0, line_rate_pct=94.0, ok=True, problem=None)
    fabrics = rdma_fabrics(SMALL_FLEET_HOSTS, hostvars)['groups']
    report = rdma_fleet_report(rdma_check_hosts(SMALL_FLEET_HOSTS, hostvars, fabrics), SMALL_FLEET_HOSTS,
                               rdma_ledgers(SMALL_FLEET_HOSTS, hostvars), fabrics)
    dom = Dom(rdma_report_html(report))
    assert [(tr.attrs['data-host'], tr.attrs['data-verdict']) for tr in rows(dom, 'hosts', 'data-host')] == [
        ('cpu-1', 'unchecked'), ('gpu-a1', 'pass'), ('gpu-a2', 'pass'), ('gpu-a3', 'no facts')]
    assert dom.by_id('summary-text').inner_text() == \
        '4 hosts: 2 pass, 0 fail, 1 unchecked, 1 without facts. 5 ports, 5 ACTIVE.'
    assert dom.by_id('summary-failed').inner_text() == 'Failed hosts: gpu-a3.'
    assert [t.attrs['data-count'] for t in dom.find('div', cls='count fail')] == ['0']
    assert 'zero' in dom.find('div', cls='count fail')[0].classes
    assert [(tr.attrs['data-action'], cells(tr)) for tr in rows(dom, 'pending', 'data-action')] == [
        ('runtime_restart', ['container runtime restart pending', 'gpu-a1'])]
    assert [c.inner_text() for c in dom.find('td', cls='pair', within=('table', 'pairs'))] == ['188 Gb/s, 94.0 %']
    assert [(b.classes[1], b.attrs['data-pct']) for b in dom.find('div', cls='bar')] == [('ok', '94.2'),
                                                                                         ('ok', '94.0')]
    assert [li.attrs['data-host'] for li in dom.find('li', within=('ul', 'problems')) if 'data-host' in li.attrs] \
        == ['gpu-a3']


def host_rows(dom):
    return [tr for tr in dom.find('tr', within=('table', 'hosts')) if 'data-host' in tr.attrs]


def check_every_record_has_its_row(dom, report):
    """Nothing of a large report is dropped: a row per host, port, test, pair and stage, in the report's order, with
    the identity and the verdict the report gives it. What the cells say is checked against values written by hand
    (BY_HAND, LAB_BY_HAND and the tests below), not here."""
    assert [(tr.attrs['data-host'], tr.attrs['data-verdict']) for tr in host_rows(dom)] == [
        (h['host'], h['verdict']) for h in report['hosts']]
    assert [(tr.attrs['data-host'], tr.attrs['data-device'], tr.attrs['data-port'], tr.attrs['data-verdict'])
            for tr in rows(dom, 'ports', 'data-device')] == [
        (h['host'], p['device'], str(p['port']), p['verdict']) for h in report['hosts'] for p in h['ports']]
    tests = report['validation'] or []
    assert [(tr.attrs['data-host'], tr.attrs['data-device'], tr.attrs['data-kind'], tr.attrs['data-ok'])
            for tr in dom.find('tr', cls='test', within=('table', 'validation'))] == [
        (t['host'], t['device'], t['kind'], 'true' if t['ok'] else 'false') for t in tests]
    assert len(dom.find('div', cls='bar')) == len(tests)
    pairs = set((t['server'], t['host']) for t in tests if t['kind'] == 'pair')
    assert sorted((c.attrs['data-server'], c.attrs['data-client']) for c in dom.find('td', cls='pair')
                  if 'none' not in c.classes) == sorted(pairs)
    stages = [(h['host'], s['stage'], s['status']) for h in report['hosts'] for s in h['stages']]
    stages += [('controller', s['stage'], s['status']) for s in report['controller']]
    assert [(tr.attrs['data-host'], tr.attrs['data-stage'], tr.attrs['data-status'])
            for tr in rows(dom, 'stages', 'data-stage')] == stages


# The lab report (tests/unit/fixtures/report/lab-fleet-report.json) as a person reads it, by hand: the sections the
# small fleet has no data for (firmware, drivers, container runtime, Spiderpool) and the counts of the whole fleet.
LAB_DRIVERS = ('inbox rdma-core; missing modules: mlx5_core, mlx5_ib, ib_uverbs, rdma_ucm', 'unknown / shared',
               'persisted nvidia_peermem (load skipped)', 'as wanted')
LAB_BY_HAND = {
    'summary-text': '7 hosts: 7 pass, 0 fail, 0 unchecked, 0 without facts. 29 ports, 27 ACTIVE.',
    'summary-stages': 'Stages: 0 changed, 0 failed, 40 ok, 2 pending, 2 skipped.',
    'tiles': [('hosts', '7'), ('pass', '7'), ('fail', '0'), ('unchecked', '0'), ('no-facts', '0'), ('ports', '29'),
              ('ports active', '27'), ('pending', '2')],
    'pending': [('firmware_reset', ['firmware reset (mlxfwreset) pending', 'lab-a100-1, lab-a100-2'])],
    'pending-stages': [['lab-a100-1', 'firmware', 'firmware_reset (waits for permission)'],
                       ['lab-a100-2', 'firmware', 'firmware_reset (waits for permission)']],
    'groups': [['ib_a100', 'A100', 'InfiniBand', '200 Gb/s', 'rdma/rdma_a100', 'shared_device_plugin', '2', '2'],
               ['ib_h100', 'H100', 'InfiniBand', '400 Gb/s', 'rdma/rdma_h100', 'shared_device_plugin', '1', '1'],
               ['ib_v100', 'V100', 'InfiniBand', '100 Gb/s', 'rdma/rdma_v100', 'shared_device_plugin', '2', '2'],
               ['roce_a100', 'A100 RoCE', 'Ethernet', '100 Gb/s', 'spidernet.io/shared_cx5_gpu{gpu}', 'spiderpool',
                '1', '1'],
               ['roce_pvrdma', 'vGPU VM (PVRDMA)', 'Ethernet', '40 Gb/s', 'rdma/rdma_pvrdma', 'shared_device_plugin',
                '1', '1']],
    # host, group, ports meeting it, stages, verdict
    'hosts': [('lab-a100-1', 'ib_a100', '1', 'firmware pending', 'PASS'),
              ('lab-a100-2', 'ib_a100', '1', 'firmware pending', 'PASS'),
              ('lab-h100-1', 'ib_h100', '8', '6 as wanted', 'PASS'),
              ('lab-pvrdma-1', 'roce_pvrdma', '1', 'gpudirect skipped', 'PASS'),
              ('lab-roce-1', 'roce_a100', '10', '6 as wanted', 'PASS'),
              ('lab-v100-1', 'ib_v100', '2', '6 as wanted', 'PASS'),
              ('lab-v100-2', 'ib_v100', '2', '6 as wanted', 'PASS')],
    'problems': 'None.',
    'port lab-a100-1 mlx5_0': ['lab-a100-1', 'ib_a100', 'mlx5_0', '1', 'enp12s0np0 (Down)', 'DOWN / Disabled',
                               'Ethernet', '10 Gb/s', 'unknown (no GID table from this source)',
                               'ignored: link layer Ethernet, expected InfiniBand'],
    'port lab-a100-1 mlx5_1': ['lab-a100-1', 'ib_a100', 'mlx5_1', '1', 'ibp141s0 (Up)', 'ACTIVE / LinkUp',
                               'InfiniBand', '200 Gb/s', '-', 'ok'],
    'firmware lab-a100-1': [
        ['lab-a100-1', 'mlx5_0', '0000:0c:00.0', 'LINK_TYPE_P1', 'ETH(2)', 'IB(1)',
         'pending: active after a firmware reset or reboot'],
        ['lab-a100-1', 'mlx5_1', '0000:8d:00.0', 'LINK_TYPE_P1', 'IB(1)', 'IB(1)', 'active']],
    'firmware lab-v100-1': [
        ['lab-v100-1', 'mlx5_0', '0000:5e:00.0', 'LINK_TYPE_P1', 'IB(1)', 'IB(1)', 'active'],
        ['lab-v100-1', 'mlx5_0', '0000:5e:00.0', 'LINK_TYPE_P2', 'IB(1)', 'IB(1)', 'active'],
        ['lab-v100-1', 'mlx5_1', '0000:5e:00.1', 'LINK_TYPE_P1', 'IB(1)', 'IB(1)', 'active'],
        ['lab-v100-1', 'mlx5_1', '0000:5e:00.1', 'LINK_TYPE_P2', 'IB(1)', 'IB(1)', 'active']],
    'drivers': [['lab-a100-1', '6.18.44-fc-v669'] + list(LAB_DRIVERS),
                ['lab-a100-2', '6.18.44-fc-v669'] + list(LAB_DRIVERS),
                ['lab-h100-1', '6.18.44-fc-v669'] + list(LAB_DRIVERS),
                # a PVRDMA VM: no OFED stage, no GPUDirect
                ['lab-pvrdma-1', '-', '-', 'unknown / shared', 'none (not used)', 'as wanted'],
                ['lab-roce-1', '6.18.44-fc-v669'] + list(LAB_DRIVERS),
                ['lab-v100-1', '6.18.44-fc-v669'] + list(LAB_DRIVERS),
                ['lab-v100-2', '6.18.44-fc-v669'] + list(LAB_DRIVERS)],
    'runtime': [[host, 'containerd', '4194304', 'runc', 'as wanted'] for host in (
        'lab-a100-1', 'lab-a100-2', 'lab-h100-1', 'lab-pvrdma-1', 'lab-roce-1', 'lab-v100-1', 'lab-v100-2')],
    'kubernetes-notes': ['NVIDIA Network Operator v26.4.1: helm values and objects rendered to '
                         '/work/main/rdma-manifests.',
                         'Spiderpool 1.2.2: helm values and macvlan networks rendered to '
                         '/work/main/rdma-manifests/spiderpool.'],
    'network-operator': [['rdma/rdma_a100', 'ib_a100', '2', 'ibp141s0', 'infiniband'],
                         ['rdma/rdma_h100', 'ib_h100', '1', 'ibp154s0, ibp192s0, ibp206s0, ibp220s0, ibp24s0, ibp64s0, '
                          'ibp79s0, ibp94s0', 'infiniband'],
                         ['rdma/rdma_v100', 'ib_v100', '2', 'ibp94s0f0, ibp94s0f1', 'infiniband'],
                         ['rdma/rdma_pvrdma', 'roce_pvrdma', '1', 'ens224', 'ether']],
    'spiderpool gpu1': ['spidernet.io/shared_cx5_gpu1', 'roce_a100', '1', '1', 'enp11s0f0np0', 'spiderpool/gpu1-macvlan',
                        '172.16.11.0/24'],
    'validation lab-a100-1': ['lab-a100-1', 'loopback', 'mlx5_1', '1', 'ibp141s0', '183.61', '200 Gb/s', '', '91.8 %',
                              '-', '-', 'ok'],
    'pair': ('lab-v100-1', 'lab-v100-2', 'true', '94.71 Gb/s, 94.7 %'),
}


# ------------------------------------------------------------------ the text

def test_lab_report_shows_every_host_port_test_and_stage():
    report = lab_report()
    html = rdma_report_html(report)
    assert html.startswith('<!DOCTYPE html>\n<html lang="en">')
    assert html.endswith('</html>\n')
    check_every_record_has_its_row(Dom(html), report)
    assert html == rdma_report_html(copy.deepcopy(report))  # stable: same report, same text


def test_lab_report_by_hand():
    dom = Dom(rdma_report_html(lab_report()))
    expected = LAB_BY_HAND
    for key in ('summary-text', 'summary-stages'):
        assert dom.by_id(key).inner_text() == expected[key], key
    assert dom.by_id('summary-failed') is None
    assert [(' '.join(t.classes[1:]).replace(' zero', ''), t.attrs['data-count'])
            for t in dom.find('div', cls='count', within=('div', 'summary'))] == expected['tiles']
    assert [' '.join(t.classes[1:]) for t in dom.find('div', cls='count zero')] == [
        'fail zero', 'unchecked zero', 'no-facts zero']
    assert [(tr.attrs['data-action'], cells(tr)) for tr in rows(dom, 'pending', 'data-action')] == expected['pending']
    assert [cells(tr) for tr in rows(dom, 'pending-stages', 'data-stage')] == expected['pending-stages']
    assert [cells(tr) for tr in rows(dom, 'groups', 'data-group')] == expected['groups']
    assert [tuple(cells(tr)[i] for i in (0, 1, 3, 5, 6)) for tr in host_rows(dom)] == expected['hosts']
    assert dom.by_id('problems-none').inner_text() == expected['problems']
    for host, device in (('lab-a100-1', 'mlx5_0'), ('lab-a100-1', 'mlx5_1')):
        row = dom.find('tr', within=('table', 'ports'), data_host=host, data_device=device)
        assert [cells(tr) for tr in row] == [expected['port %s %s' % (host, device)]]
    for host in ('lab-a100-1', 'lab-v100-1'):
        assert [cells(tr) for tr in dom.find('tr', within=('table', 'firmware'), data_host=host)] == \
            expected['firmware %s' % host]
    assert [tr.children[-1].classes for tr in dom.find('tr', within=('table', 'firmware'), data_host='lab-a100-1')] \
        == [['status', 'pending'], ['status', 'ok']]
    assert [cells(tr) for tr in rows(dom, 'drivers', 'data-host')] == expected['drivers']
    assert [cells(tr) for tr in rows(dom, 'runtime', 'data-host')] == expected['runtime']
    kubernetes = dom.by_id('section-kubernetes')
    assert [p.inner_text() for p in dom.find('p') if kubernetes in p.ancestors()] == expected['kubernetes-notes']
    assert [cells(tr) for tr in rows(dom, 'network-operator', 'data-resource')] == expected['network-operator']
    assert cells(rows(dom, 'spiderpool', 'data-resource')[0]) == expected['spiderpool gpu1']
    assert len(rows(dom, 'spiderpool', 'data-resource')) == 8  # one macvlan network per GPU of the RoCE node
    assert dom.by_id('left-alone') is None
    assert cells(dom.find('tr', cls='test', within=('table', 'validation'))[0]) == expected['validation lab-a100-1']
    assert [(c.attrs['data-server'], c.attrs['data-client'], c.attrs['data-ok'], c.inner_text())
            for c in dom.find('td', cls='pair') if 'none' not in c.classes] == [expected['pair']]


def check_failing(dom):
    """The lab report with lab-v100-2 failing (failing_report), by hand."""
    row = dom.find('tr', within=('table', 'hosts'), data_host='lab-v100-2')[0]
    assert row.attrs['data-verdict'] == 'fail'
    assert (row.children[-1].inner_text(), row.children[-1].classes) == ('FAIL', ['verdict', 'fail'])
    assert [(tr.attrs['data-host'], tr.attrs['data-verdict']) for tr in host_rows(dom)] == [
        ('lab-a100-1', 'pass'), ('lab-a100-2', 'pass'), ('lab-h100-1', 'pass'), ('lab-pvrdma-1', 'pass'),
        ('lab-roce-1', 'pass'), ('lab-v100-1', 'pass'), ('lab-v100-2', 'fail')]
    assert [(t.attrs['data-count']) for t in dom.find('div', cls='count', within=('div', 'summary'))] == [
        '7', '6', '1', '0', '0', '29', '26', '2']
    assert dom.by_id('summary-failed').inner_text() == 'Failed hosts: lab-v100-2.'
    down = dom.find('td', cls='verdict down', within=('table', 'ports'))
    assert [(td.parent.attrs['data-host'], td.parent.attrs['data-device'], td.inner_text()) for td in down] == [
        ('lab-v100-2', 'mlx5_1', 'down: no link partner: check the cable')]
    failed = dom.find('td', cls='status failed', within=('table', 'stages'))
    assert [(td.parent.attrs['data-host'], td.parent.attrs['data-stage'], cells(td.parent)[-1]) for td in failed] == [
        ('lab-v100-2', 'firmware', 'mlxconfig query failed')]
    problems = dom.find('li', within=('ul', 'problems'), data_host='lab-v100-2')
    assert [[li.inner_text() for li in p.children[-1].children] for p in problems] == [[
        'expected at least 2 ACTIVE InfiniBand ports >= 100 Gb/s, found 1',
        'mlx5_1 port 1 (ibp94s0f1): DOWN / Polling: no link partner: check the cable']]
    assert [(tr.attrs['data-action'], cells(tr)) for tr in rows(dom, 'pending', 'data-action')] == [
        ('firmware_reset', ['firmware reset (mlxfwreset) pending', 'lab-a100-1, lab-a100-2']),
        ('stage_failed', ['stage failed', 'lab-v100-2 firmware']),
        ('bandwidth', ['bandwidth below the line rate threshold', 'lab-v100-2 mlx5_0'])]
    assert [(b.attrs['data-pct'], b.children[0].attrs['style']) for b in dom.find('div', cls='bar fail')] == [
        ('41.3', 'width: 41.3%')]
    # faster than the line rate says: the bar is full and stays inside its box
    assert [b.children[0].attrs['style'] for b in dom.find('div', cls='bar ok', data_pct='131.3')] == ['width: 100.0%']
    assert [(c.attrs['data-server'], c.attrs['data-client'], c.attrs['data-ok'], c.inner_text())
            for c in dom.find('td', cls='pair') if 'none' not in c.classes] == [
        ('lab-v100-1', 'lab-v100-2', 'false', '41.3 Gb/s, 41.3 %'),
        ('lab-v100-2', 'lab-v100-1', 'true', '131.3 Gb/s, 131.3 %')]


def test_failing_host_is_red_and_counted():
    report = failing_report()
    dom = Dom(rdma_report_html(report))
    check_every_record_has_its_row(dom, report)
    check_failing(dom)


def test_hostile_values_are_escaped():
    report = lab_report()
    evil = '<script>alert("x")</script>'
    report['hosts'][0]['host'] = evil
    report['hosts'][0]['ports'][0]['note'] = '<img src=x onerror=alert(1)>'
    report['hosts'][0]['stages'][0]['problems'] = ['a & b "quoted" \'single\'']
    report['validation'][0]['host'] = evil
    report['groups'][0]['rdma_resource'] = '</style><style>@import "x";'
    html = rdma_report_html(report)
    assert '<script' not in html and '<img' not in html and html.count('<style>') == 1
    assert '&lt;/style&gt;&lt;style&gt;@import' in html
    assert '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;' in html
    assert 'data-host="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"' in html
    assert 'a &amp; b &quot;quoted&quot; &#x27;single&#x27;' in html
    dom = Dom(html)
    assert evil in [tr.attrs['data-host'] for tr in host_rows(dom)]
    assert not dom.find('script') and not dom.find('img')


def test_self_contained():
    for report in (lab_report(), failing_report()):
        html = rdma_report_html(report).lower()
        for needle in ('http://', 'https://', 'src=', '@import', 'url(', '<script', '<link', '<img', '//fonts'):
            assert needle not in html, needle
        assert "default-src 'none'" in html  # and the browser would not fetch anything even if something slipped in
        assert html.count('<style>') == 1


@pytest.mark.parametrize('drop', ['groups', 'validation', 'controller', 'cluster', 'spiderpool', 'stages', 'all'])
def test_missing_sections_tolerated(drop):
    report = lab_report()
    optional = ['groups', 'validation', 'controller', 'cluster', 'spiderpool']
    for key in optional if drop == 'all' else [drop] if drop != 'stages' else []:
        report.pop(key)
    if drop in ('stages', 'all'):
        for host in report['hosts']:
            for key in ('stages', 'firmware', 'runtime', 'drivers'):
                host.pop(key)
    if drop == 'all':
        kept = ('hosts', 'pass', 'fail', 'unchecked', 'no_facts', 'ports', 'active_ports', 'failed_hosts')
        report['summary'] = dict((k, report['summary'][k]) for k in kept)
    html = rdma_report_html(report)
    dom = Dom(html)
    assert len(host_rows(dom)) == 7
    if drop in ('validation', 'all'):
        assert dom.by_id('validation-none') is not None and not dom.find('div', cls='bar')
        assert dom.by_id('pairs-none').inner_text() == 'no cross-node pairs tested'
    if drop in ('stages', 'all'):
        assert 'id="section-firmware"' not in html and 'id="section-drivers"' not in html
    if drop == 'all':
        assert dom.by_id('stages-none') is not None and dom.by_id('pending-none') is not None


def test_reports_the_filters_build():
    """What gpunet.rdma.fleet_report makes of a discover-only run (no ledger) and of no host at all renders."""
    result = {'host': 'node-1', 'group': 'ungrouped', 'verdict': 'unchecked', 'expectation': None, 'source': 'sysfs',
              'ok_ports': 0, 'problems': [], 'devices': [],
              'ports': [{'device': 'mlx5_0', 'port': 1, 'state': 'ACTIVE', 'verdict': 'unchecked', 'note': ''}]}
    report = build_fleet_report([result], ['node-1', 'node-2'])
    dom = Dom(rdma_report_html(report))
    assert [(tr.attrs['data-host'], tr.attrs['data-verdict']) for tr in host_rows(dom)] == [
        ('node-1', 'unchecked'), ('node-2', 'no facts')]
    assert len(dom.find('td', cls='verdict no-facts')) == 1 and len(dom.find('td', cls='verdict unchecked')) == 2
    assert dom.by_id('validation-none') is not None and dom.by_id('pairs-none') is not None
    assert Dom(rdma_report_html(build_fleet_report([], []))).by_id('section-hosts') is not None


def test_loopback_only_has_no_pair_matrix():
    report = lab_report()
    report['validation'] = [t for t in report['validation'] if t['kind'] != 'pair']
    dom = Dom(rdma_report_html(report))
    assert dom.by_id('pairs') is None
    assert dom.by_id('pairs-none').inner_text() == 'no cross-node pairs tested'
    assert len(dom.find('div', cls='bar')) == len(report['validation'])


def test_threshold_and_unknown_share():
    report = lab_report()
    report['validation'][0].update(line_rate_pct=None, ok=False, problem='no result')
    report['validation'][1]['min_line_rate_pct'] = 75
    dom = Dom(rdma_report_html(report, min_line_rate_pct=85))
    bars = dom.find('div', cls='bar')
    assert bars[0].attrs['data-pct'] == '' and 'fail' in bars[0].classes
    assert [b.attrs['data-threshold'] for b in bars[:3]] == ['85', '75', '85']


@pytest.mark.parametrize('value', [None, [], 'text', {'hosts': []}, {'summary': {}}])
def test_wrong_input(value):
    with pytest.raises(AnsibleFilterError, match='report_html: expects the output of gpunet.rdma.fleet_report'):
        rdma_report_html(value)


def test_wrong_threshold():
    with pytest.raises(AnsibleFilterError, match='min_line_rate_pct must be a number'):
        rdma_report_html(lab_report(), min_line_rate_pct='ninety')


def check_fabric_proof(dom):
    """The fabric proof (fabric_proof_report) by hand: pairs per rail with latency, the NCCL job of two groups, the
    in-pod checks and the hostdev allocatable, each value read from the recorded outputs the report is made of."""
    # Two rails between the V100 nodes in one cell (one slow), the other direction above its latency threshold.
    cell = dom.find('td', cls='pair', within=('table', 'pairs'), data_server='lab-v100-2', data_client='lab-v100-1')[0]
    assert cell.attrs['data-ok'] == 'false' and 'fail' in cell.classes
    assert cell.inner_text() == 'mlx5_0: 94.71 Gb/s, 94.7 %, 1.42 usec; mlx5_1: 41.3 Gb/s, 41.3 %, 1.42 usec'
    assert [(p.attrs['data-device'], p.classes) for p in cell.children] == [
        ('mlx5_0', ['part', 'ok']), ('mlx5_1', ['part', 'fail'])]
    back = dom.find('td', cls='pair', within=('table', 'pairs'), data_server='lab-v100-1', data_client='lab-v100-2')[0]
    assert back.inner_text() == '94.71 Gb/s, 94.7 %, 3.1 usec' and back.attrs['data-ok'] == 'false'
    assert back.children[0].attrs['title'] == 'typical latency 3.1 usec is above 2 usec'
    # no node tests against itself: the diagonal is empty
    assert [(c.attrs['data-server'], c.attrs['data-client'], c.inner_text())
            for c in dom.find('td', cls='pair none', within=('table', 'pairs'))] == [
        ('lab-v100-1', 'lab-v100-1', '-'), ('lab-v100-2', 'lab-v100-2', '-')]
    # the test, latency and status columns of the validation table
    tests = dom.find('tr', cls='test', within=('table', 'validation'), data_kind='pair')
    assert [[cells(r)[i] for i in (0, 1, 2, 9, 11)] for r in tests] == [
        ['lab-v100-1', 'pair from lab-v100-2, rail 0', 'mlx5_0', '1.42 usec (max 2)', 'ok'],
        ['lab-v100-1', 'pair from lab-v100-2, rail 1', 'mlx5_1', '1.42 usec (max 2)',
         '41.30 Gb/s is 41.3 % of the 100 Gb/s line rate, below 90 %'],
        ['lab-v100-2', 'pair from lab-v100-1, rail 0', 'mlx5_0', '3.1 usec (max 2)',
         'typical latency 3.1 usec is above 2 usec']]

    # NCCL: the AKS job on InfiniBand with GPUDirect RDMA (8 HCAs per node, 187.22 GB/s at 8 GiB); NCCL issue 278's
    # job that fell back to TCP sockets on sh-01 and sh-03 and printed no result table.
    runs = rows(dom, 'nccl', 'data-group')
    assert [(r.attrs['data-group'], r.attrs['data-transport'], r.attrs['data-gdr'], r.attrs['data-ok'])
            for r in runs] == [('ib_a100', 'IB', 'on', 'true'), ('ib_v100', 'Socket', '', 'false')]
    assert cells(runs[0]) == [
        'ib_a100', 'Succeeded', 'IB', 'mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7 (8 per node)',
        'on (expected)', 'nccl-tests-worker-0, nccl-tests-worker-1', '2.25.1+cuda12.8', '187.22 GB/s at 8 GiB',
        '93.6 % of 8 x 200 Gb/s (min 90 %)', 'ok']
    assert cells(runs[1])[:9] == ['ib_v100', 'Succeeded', 'Socket', '-', '-', 'sh-01, sh-03', '-', '-', '-']
    status = cells(runs[1])[9]
    assert status.startswith('NET/Socket on sh-01, sh-03: NCCL fell back to TCP sockets: give the pods the RDMA '
                             'resource of the group')
    assert 'IPC_LOCK' in status and 'NCCL_IB_HCA' in status
    assert status.endswith('all_reduce_perf printed no result table (the job failed or was stopped before the first '
                           'size; the launcher\'s log says why)')
    assert runs[1].children[-1].classes == ['status', 'failed', 'wrap']

    # In-pod checks: the Spiderpool guide's pod (net1, net2; 8 source rules, only table 100 dumped, holding net1's
    # default route), once asking for a default route in every rule's table.
    pods = rows(dom, 'pod-checks', 'data-pod')
    assert [(r.attrs['data-pod'], r.attrs['data-mode'], r.attrs['data-ok']) for r in pods] == [
        ('rdma-validate-roce-a100-client', 'spiderpool', 'false'),
        ('rdma-validate-roce-a100-server', 'spiderpool', 'true')]
    rdma = 'mlx5_27/1 ACTIVE net2, mlx5_54/1 ACTIVE net1, mlx5_67/1 ACTIVE net4, mlx5_98/1 ACTIVE net3'
    assert cells(pods[0]) == [
        'rdma-validate-roce-a100-client', 'roce_a100', 'spiderpool', 'net1 172.16.11.10/24, net2 172.16.12.10/24',
        '8 rules, tables 100', rdma, '-',
        'table 107 of 172.16.11.10 (net1) has no default route; table 106 of 172.16.12.10 (net2) has no default route']
    assert cells(pods[1]) == [
        'rdma-validate-roce-a100-server', 'roce_a100', 'spiderpool', 'net1 172.16.11.10/24, net2 172.16.12.10/24',
        '8 rules, tables 100', rdma, '-', 'ok']
    nodes = rows(dom, 'allocatable', 'data-node')
    assert [(r.attrs['data-node'], r.attrs['data-ok']) for r in nodes] == [('s1', 'true'), ('s2', 'false')]
    assert cells(nodes[0]) == ['s1', 'ib_sriov', 'nvidia.com/hostdev', '2', 'ok']
    assert cells(nodes[1])[:4] == ['s2', 'ib_sriov', 'nvidia.com/hostdev', '-']
    assert cells(nodes[1])[4].startswith('s2: no nvidia.com/hostdev in allocatable: the SR-IOV device plugin found no '
                                         'VF of its selectors')

    assert [(tr.attrs['data-action'], cells(tr)) for tr in rows(dom, 'pending', 'data-action')] == [
        ('firmware_reset', ['firmware reset (mlxfwreset) pending', 'lab-a100-1, lab-a100-2']),
        ('bandwidth', ['bandwidth below the line rate threshold', 'lab-v100-1 mlx5_1, lab-v100-2 mlx5_0']),
        ('nccl', ['NCCL not on RDMA or below its bus bandwidth', 'ib_v100']),
        ('pod_checks', ['in-pod checks failed', 'rdma-validate-roce-a100-client, s2'])]
    assert [a.inner_text() for a in dom.find('a') if a.parent.tag == 'nav'] == [
        'Pending actions', 'Groups', 'Hosts', 'Hosts that miss expectations', 'Validation', 'Pair matrix', 'NCCL',
        'In-pod checks', 'Ports', 'Stages', 'Firmware', 'Drivers', 'Container runtime', 'Kubernetes']
    assert [h.inner_text() for h in dom.find('h3') if dom.by_id('section-pod-checks') in h.ancestors()] == [
        'Hostdev resources']


def test_pair_matrix_nccl_and_in_pod_checks():
    report = fabric_proof_report()
    html = rdma_report_html(report)
    dom = Dom(html)
    check_every_record_has_its_row(dom, report)
    check_fabric_proof(dom)
    assert '<a href="#section-nccl">NCCL</a>' in html
    assert '<a href="#section-pod-checks">In-pod checks</a>' in html


# ------------------------------------------------------------------ the page in a browser


def chromium():
    for name in ('chromium', 'chromium-browser'):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail('chromium is not installed: `make apt` installs it (Debian package chromium)')


def load_in_browser(directory, name, html, size='1400,2000'):
    """Open the page in headless chromium: its DOM after parsing, and a screenshot. Returns (dom text, png bytes)."""
    page = os.path.join(directory, '%s.html' % name)
    with open(page, 'w', encoding='utf-8') as handle:
        handle.write(html)
    png = os.path.join(directory, '%s.png' % name)
    run = subprocess.run([chromium(), '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
                          '--user-data-dir=%s' % os.path.join(directory, 'profile'), '--hide-scrollbars',
                          '--screenshot=%s' % png, '--window-size=%s' % size, '--dump-dom', 'file://' + page],
                         capture_output=True, text=True, timeout=90, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert os.path.exists(png), 'no screenshot: %s' % run.stderr[-2000:]
    with open(png, 'rb') as handle:
        return run.stdout, handle.read()


def check_png(data, size):
    assert data[:8] == b'\x89PNG\r\n\x1a\n'
    assert data[12:16] == b'IHDR'
    width, height = int.from_bytes(data[16:20], 'big'), int.from_bytes(data[20:24], 'big')
    assert (width, height) == tuple(int(v) for v in size.split(','))
    assert len(data) > 20000  # a rendered page, not a blank one


@pytest.mark.parametrize('name, make, check', [('small-fleet', small_fleet_report, check_small_fleet),
                                               ('failing', failing_report, check_failing),
                                               ('fabric-proof', fabric_proof_report, check_fabric_proof)])
def test_in_headless_chromium(name, make, check):
    report = make()
    started = time.monotonic()
    # Not tmp_path: the chromium profile goes away with the test.
    with tempfile.TemporaryDirectory(prefix='rdma-report-html-') as directory:
        text, png = load_in_browser(directory, name, rdma_report_html(report))
    assert time.monotonic() - started < 60
    check_png(png, '1400,2000')
    assert '<body>' in text and 'RDMA fleet report' in text
    # What chromium parsed (not what we wrote) holds every row, verdict, bar and cell written by hand.
    check(Dom(text))
