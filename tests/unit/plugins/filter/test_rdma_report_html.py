# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The HTML fleet report: its text, and the page as a real headless browser (Debian's chromium) loads it.

The fixture is the fleet report of a lab run (7 hosts, loopback tests on every port and one cross-node pair).
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

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.filter.rdma_report import FilterModule as ReportFilters
from ansible_collections.gpunet.rdma.plugins.filter.rdma_report_html import FilterModule
from ansible_collections.gpunet.rdma.plugins.module_utils._fleet_report import (
    build_fleet_report, pod_validation_state, validation_state)

rdma_report_html = FilterModule().filters()['rdma_report_html']
rdma_report_markdown = ReportFilters().filters()['rdma_report_markdown']

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
    from ansible_collections.gpunet.rdma.plugins.filter.rdma_validate import (
        rdma_hostdev_allocatable, rdma_nccl_result, rdma_perftest_records, rdma_pod_checks)
    from ansible_collections.gpunet.rdma.plugins.module_utils._workloads import MARK
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
        self.children, self.text = [], []

    @property
    def classes(self):
        return self.attrs.get('class', '').split()

    def inner_text(self):
        return ''.join(self.text + [c.inner_text() for c in self.children]).strip()

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

    def handle_starttag(self, tag, attrs):
        element = Element(tag, attrs, self.current)
        self.current.children.append(element)
        self.elements.append(element)
        if tag not in VOID:
            self.current = element

    def handle_startendtag(self, tag, attrs):
        element = Element(tag, attrs, self.current)
        self.current.children.append(element)
        self.elements.append(element)

    def handle_endtag(self, tag):
        node = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data):
        self.current.text.append(data)

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


def host_rows(dom):
    return [tr for tr in dom.find('tr', within=('table', 'hosts')) if 'data-host' in tr.attrs]


def check_counts(dom, report):
    """What the page shows adds up to the report: host rows, verdict cells, summary tiles, bars, pair cells."""
    summary = report['summary']
    rows = host_rows(dom)
    assert [tr.attrs['data-host'] for tr in rows] == [h['host'] for h in report['hosts']]
    for verdict, key in (('pass', 'pass'), ('fail', 'fail'), ('unchecked', 'unchecked'), ('no-facts', 'no_facts')):
        cells = dom.find('td', cls='verdict %s' % verdict, within=('table', 'hosts'))
        assert len(cells) == summary[key], verdict
        tile = dom.find('div', cls='count %s' % verdict, within=('div', 'summary'))
        assert [t.attrs['data-count'] for t in tile] == [str(summary[key])]
    for tr in rows:
        host = [h for h in report['hosts'] if h['host'] == tr.attrs['data-host']][0]
        verdict = [td for td in tr.children if 'verdict' in td.classes]
        assert verdict[0].inner_text() == host['verdict'].upper()
        assert tr.attrs['data-verdict'] == host['verdict']

    ports = [(h['host'], p['device'], str(p['port']), p['verdict']) for h in report['hosts'] for p in h['ports']]
    port_rows = dom.find('tr', within=('table', 'ports'))
    assert [(tr.attrs['data-host'], tr.attrs['data-device'], tr.attrs['data-port'], tr.attrs['data-verdict'])
            for tr in port_rows if 'data-host' in tr.attrs] == ports

    tests = report['validation']
    bars = dom.find('div', cls='bar')
    assert len(bars) == len(tests)
    assert len(dom.find('tr', cls='test', within=('table', 'validation'))) == len(tests)
    for box, test in zip(bars, tests):
        assert float(box.attrs['data-pct']) == round(test['line_rate_pct'], 1)
        assert ('ok' if test['ok'] else 'fail') in box.classes
        fill = [c for c in box.children if 'fill' in c.classes][0]
        width = float(fill.attrs['style'].split(':')[1].strip().rstrip('%'))
        assert width == round(min(100.0, max(0.0, test['line_rate_pct'])), 1)
        assert [c for c in box.children if 'threshold' in c.classes][0].attrs['style'] == 'left: 90.0%'

    pairs = [t for t in tests if t['kind'] == 'pair']
    cells = dom.find('td', cls='pair', within=('table', 'pairs'))
    tested = [c for c in cells if 'none' not in c.classes]
    wanted = {}
    for test in pairs:
        wanted[(test['server'], test['host'])] = wanted.get((test['server'], test['host']), True) and test['ok']
    assert sorted((c.attrs['data-server'], c.attrs['data-client'], c.attrs['data-ok']) for c in tested) == sorted(
        (server, client, 'true' if ok else 'false') for (server, client), ok in wanted.items())
    for cell in tested:
        test = [t for t in pairs if (t['server'], t['host']) == (cell.attrs['data-server'], cell.attrs['data-client'])]
        parts = [c for c in cell.children if 'part' in c.classes]
        assert [p.attrs['data-device'] for p in parts] == [t['device'] for t in test]
        for part, one in zip(parts, test):
            text = '%s%g Gb/s, %.1f %%' % ('%s: ' % one['device'] if len(test) > 1 else '', one['average_gbps'],
                                           one['line_rate_pct'])
            if one.get('latency_usec') is not None:
                text += ', %g usec' % one['latency_usec']
            assert part.inner_text().lstrip('; ') == text
            assert ('ok' if one['ok'] else 'fail') in part.classes
        assert ('ok' if all(t['ok'] for t in test) else 'fail') in cell.classes

    stages = [(h['host'], s['stage'], s['status']) for h in report['hosts'] for s in h['stages']]
    stages += [('controller', s['stage'], s['status']) for s in report['controller']]
    assert [(tr.attrs['data-host'], tr.attrs['data-stage'], tr.attrs['data-status'])
            for tr in dom.find('tr', within=('table', 'stages')) if 'data-stage' in tr.attrs] == stages
    actions = ['firmware_reset'] + (['stage_failed'] if summary['failed_stages'] else [])
    actions += ['bandwidth'] if summary['validation_failed'] else []
    actions += ['nccl'] if summary.get('nccl_failed') else []
    actions += ['pod_checks'] if summary.get('pod_checks_failed') else []
    assert [tr.attrs['data-action'] for tr in dom.find('tr', within=('table', 'pending'))
            if 'data-action' in tr.attrs] == actions


# ------------------------------------------------------------------ the text

def test_lab_report_shows_every_host_port_test_and_stage():
    report = lab_report()
    html = rdma_report_html(report)
    assert html.startswith('<!DOCTYPE html>\n<html lang="en">')
    assert html.endswith('</html>\n')
    check_counts(Dom(html), report)
    for host in report['hosts']:
        assert 'data-host="%s"' % host['host'] in html
        for port in host['ports']:
            assert port['netdev'] in html
    assert 'rdma/rdma_a100' in html and 'spidernet.io/shared_cx5_gpu1' in html  # groups and Kubernetes
    assert 'LINK_TYPE_P1' in html and 'inbox rdma-core' in html and 'containerd' in html  # firmware, drivers, runtime
    assert 'firmware reset (mlxfwreset) pending' in html
    assert html == rdma_report_html(copy.deepcopy(report))  # stable: same report, same text


def test_html_has_every_value_the_markdown_has():
    report = lab_report()
    dom = Dom(rdma_report_html(report))
    text = ' '.join(e.inner_text() for e in dom.elements if e.tag in ('td', 'th', 'p', 'li'))
    markdown = rdma_report_markdown(report)
    cells = set(c.strip().replace('\\|', '|') for line in markdown.splitlines() if line.startswith('| ')
                for c in line.strip('|').split(' | '))
    missing = sorted(c for c in cells - {'-', '---'} if c not in text and c.upper() not in text)
    assert missing == []


def test_failing_host_is_red_and_counted():
    report = failing_report()
    html = rdma_report_html(report)
    dom = Dom(html)
    check_counts(dom, report)
    row = dom.find('tr', within=('table', 'hosts'), data_host='lab-v100-2')[0]
    assert row.attrs['data-verdict'] == 'fail'
    assert dom.find('td', cls='verdict down', within=('table', 'ports'))[0].parent.attrs['data-device'] == 'mlx5_1'
    assert dom.find('td', cls='status failed', within=('table', 'stages'))[0].parent.attrs['data-host'] == 'lab-v100-2'
    assert dom.find('li', within=('ul', 'problems'), data_host='lab-v100-2')
    assert dom.find('tr', within=('table', 'pending'), data_action='bandwidth')
    bars = dom.find('div', cls='bar fail')
    assert [b.attrs['data-pct'] for b in bars] == ['41.3']
    assert dom.find('div', cls='bar ok', data_pct='131.3')


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
    """What rdma_fleet_report makes of a discover-only run (no ledger) and of no host at all renders."""
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
    with pytest.raises(AnsibleFilterError, match='rdma_report_html: expects the output of rdma_fleet_report'):
        rdma_report_html(value)


def test_wrong_threshold():
    with pytest.raises(AnsibleFilterError, match='min_line_rate_pct must be a number'):
        rdma_report_html(lab_report(), min_line_rate_pct='ninety')


def test_pair_matrix_per_rail_with_latency():
    """Two rails between the V100 nodes in one cell (one slow), the other direction above its latency threshold."""
    report = fabric_proof_report()
    dom = Dom(rdma_report_html(report))
    check_counts(dom, report)
    cell = dom.find('td', cls='pair', within=('table', 'pairs'), data_server='lab-v100-2', data_client='lab-v100-1')[0]
    assert cell.attrs['data-ok'] == 'false' and 'fail' in cell.classes
    assert cell.inner_text() == 'mlx5_0: 94.71 Gb/s, 94.7 %, 1.42 usec; mlx5_1: 41.3 Gb/s, 41.3 %, 1.42 usec'
    assert [('ok' in p.classes) for p in cell.children if 'part' in p.classes] == [True, False]
    back = dom.find('td', cls='pair', within=('table', 'pairs'), data_server='lab-v100-1', data_client='lab-v100-2')[0]
    assert back.inner_text() == '94.71 Gb/s, 94.7 %, 3.1 usec' and back.attrs['data-ok'] == 'false'
    assert back.children[0].attrs['title'] == 'typical latency 3.1 usec is above 2 usec'
    # no node tests against itself: the diagonal is empty
    assert [(c.attrs['data-server'], c.attrs['data-client'])
            for c in dom.find('td', cls='pair none', within=('table', 'pairs'))] == [
        ('lab-v100-1', 'lab-v100-1'), ('lab-v100-2', 'lab-v100-2')]
    # the latency column of the validation table
    rows = dom.find('tr', cls='test', within=('table', 'validation'), data_kind='pair')
    assert [r.children[9].inner_text() for r in rows] == ['1.42 usec (max 2)', '1.42 usec (max 2)', '3.1 usec (max 2)']


def test_nccl_and_in_pod_check_tables():
    report = fabric_proof_report()
    html = rdma_report_html(report)
    dom = Dom(html)
    runs = dom.find('tr', within=('table', 'nccl'))
    runs = [r for r in runs if 'data-group' in r.attrs]
    assert [(r.attrs['data-group'], r.attrs['data-transport'], r.attrs['data-gdr'], r.attrs['data-ok'])
            for r in runs] == [('ib_a100', 'IB', 'on', 'true'), ('ib_v100', 'Socket', '', 'false')]
    cells = [c.inner_text() for c in runs[0].children]
    assert cells[3] == 'mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7 (8 per node)'
    assert cells[7:9] == ['187.22 GB/s at 8 GiB', '93.6 % of 8 x 200 Gb/s (min 90 %)']
    assert 'status failed' in ' '.join(runs[1].children[-1].classes)
    assert runs[1].children[-1].inner_text().startswith('NET/Socket on sh-01, sh-03: NCCL fell back to TCP sockets')
    pods = [r for r in dom.find('tr', within=('table', 'pod-checks')) if 'data-pod' in r.attrs]
    assert [(r.attrs['data-pod'], r.attrs['data-mode'], r.attrs['data-ok']) for r in pods] == [
        ('rdma-validate-roce-a100-client', 'spiderpool', 'false'), ('rdma-validate-roce-a100-server', 'spiderpool',
                                                                    'true')]
    assert pods[0].children[3].inner_text() == 'net1 172.16.11.10/24, net2 172.16.12.10/24'
    assert pods[0].children[4].inner_text() == '8 rules, tables 100'
    nodes = [r for r in dom.find('tr', within=('table', 'allocatable')) if 'data-node' in r.attrs]
    assert [(r.attrs['data-node'], r.attrs['data-ok']) for r in nodes] == [('s1', 'true'), ('s2', 'false')]
    assert '<a href="#section-nccl">NCCL</a>' in html
    assert '<a href="#section-pod-checks">In-pod checks</a>' in html
    # every value of the Markdown report is on the page
    text = ' '.join(e.inner_text() for e in dom.elements if e.tag in ('td', 'th', 'p', 'li'))
    markdown = rdma_report_markdown(report)
    assert '## NCCL' in markdown and '## In-pod checks' in markdown and '## Pair matrix' in markdown
    cells = set(c.strip().replace('\\|', '|') for line in markdown.splitlines() if line.startswith('| ')
                for c in line.strip('|').split(' | '))
    assert sorted(c for c in cells - {'-', '---'} if c not in text and c.upper() not in text) == []

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


@pytest.mark.parametrize('name, make', [('lab', lab_report), ('failing', failing_report),
                                        ('fabric-proof', fabric_proof_report)])
def test_in_headless_chromium(name, make):
    report = make()
    started = time.monotonic()
    # Not tmp_path: the chromium profile goes away with the test.
    with tempfile.TemporaryDirectory(prefix='rdma-report-html-') as directory:
        text, png = load_in_browser(directory, name, rdma_report_html(report))
    assert time.monotonic() - started < 60
    check_png(png, '1400,2000')
    assert '<body>' in text and 'RDMA fleet report' in text
    dom = Dom(text)
    # What chromium parsed (not what we wrote) holds every row, verdict and bar.
    check_counts(dom, report)
    assert not dom.find('script')
