# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Render the fleet report as one self-contained HTML document.

Inline CSS only: no script, no font, no image, no address of any kind, so the file opens the same anywhere without
network. Every value from the report is escaped. Elements carry ids, classes and data attributes that tests (and
anyone scripting against the page) can query:

- ``#summary .count.<verdict>[data-count]``: the verdict counts;
- ``table#groups tr[data-group]``;
- ``table#hosts tr[data-host][data-verdict]`` with ``td.verdict.<verdict>``
  (``pass``, ``fail``, ``unchecked``, ``no-facts``);
- ``table#ports tr[data-host][data-device][data-port][data-verdict]`` with ``td.verdict.<port verdict>``;
- ``table#validation tr.test[data-host][data-device][data-kind][data-ok]`` with one
  ``div.bar[data-pct][data-threshold]`` (``data-pct`` the share of line rate rounded to 0.1, empty when unknown);
- ``table#pairs td.pair[data-server][data-client][data-ok]`` (or ``p#pairs-none``), one ``span.part`` per test of the
  pair (several rails), the latency in it when a latency test ran;
- ``table#nccl tr[data-group][data-transport][data-gdr][data-ok]`` (the NCCL proof per group);
- ``table#pod-checks tr[data-pod][data-mode][data-ok]`` and ``table#allocatable tr[data-node][data-ok]``;
- ``table#pending tr[data-action]``;
- ``table#stages tr[data-host][data-stage][data-status]``.

The same report always gives the same bytes.
"""

from __future__ import annotations

import re
from html import escape

from ansible_collections.gpunet.rdma.plugins.plugin_utils._ledger import ACTIONS, plain
from ansible_collections.gpunet.rdma.plugins.plugin_utils._fleet_report import firmware_inventory_rows, gid_cell
from ansible_collections.gpunet.rdma.plugins.plugin_utils._fleet_report import (
    LOAD_TESTS_NOT_ASKED, allocatable_cells, driver_problems, gpudirect_text, latency_cell, nccl_cells, netns_text,
    ofed_text, pair_matrix, pair_parts, pod_check_cells, port_verdict_text, test_label)

DEFAULT_MIN_LINE_RATE_PCT = 90

_STYLE = """
:root { color-scheme: light; }
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; font-size: 13px; margin: 16px 24px;
       color: #1d2330; background: #fff; }
h1 { font-size: 22px; margin: 0 0 8px; }
h2 { font-size: 16px; margin: 22px 0 6px; border-bottom: 2px solid #d6dbe4; padding-bottom: 3px; }
h3 { font-size: 14px; margin: 14px 0 4px; }
nav a { margin-right: 10px; color: #2a5db0; text-decoration: none; }
p.note { color: #555; margin: 4px 0; }
table { border-collapse: collapse; margin: 4px 0 8px; }
th, td { border: 1px solid #d6dbe4; padding: 3px 7px; text-align: left; vertical-align: top; white-space: nowrap; }
td.wrap { white-space: normal; min-width: 100px; max-width: 480px; }
th { background: #eef1f6; font-weight: 600; }
tr:nth-child(even) td { background: #fafbfd; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.muted { color: #8a93a3; }
#summary { display: flex; flex-wrap: wrap; gap: 8px; align-items: stretch; margin: 6px 0 4px; }
#summary .count { border-radius: 6px; padding: 6px 12px; min-width: 70px; text-align: center; color: #fff;
                  font-weight: 600; }
#summary .count b { display: block; font-size: 22px; }
#summary .count.hosts, #summary .count.ports { background: #4a5568; }
.count.pass { background: #2f855a; } .count.fail { background: #c53030; }
.count.unchecked { background: #718096; } .count.no-facts { background: #b7791f; }
.count.pending { background: #b7791f; }
#summary .count.zero { background: #e2e8f0; color: #4a5568; }
td.verdict, td.status, td.pair { font-weight: 600; }
td.verdict.pass, td.verdict.ok, td.status.ok { background: #c6f6d5 !important; color: #22543d; }
td.verdict.fail, td.verdict.down, td.verdict.slow, td.status.failed { background: #fed7d7 !important;
                                                                       color: #822727; }
td.verdict.no-facts, td.status.pending { background: #feebc8 !important; color: #7b341e; }
td.verdict.unchecked, td.verdict.ignored, td.verdict.vf, td.status.skipped { background: #edf2f7 !important; color: #4a5568; }
td.status.changed { background: #bee3f8 !important; color: #2a4365; }
div.bar { position: relative; width: 200px; height: 14px; background: #e2e8f0; border-radius: 3px; }
div.bar span.fill { position: absolute; left: 0; top: 0; bottom: 0; border-radius: 3px; }
div.bar.ok span.fill { background: #38a169; }
div.bar.fail span.fill { background: #e53e3e; }
div.bar span.threshold { position: absolute; top: -3px; bottom: -3px; width: 2px; margin-left: -1px;
                         background: #1a202c; }
td.pair.ok { background: #c6f6d5 !important; color: #22543d; }
td.pair.fail { background: #fed7d7 !important; color: #822727; }
td.pair.none { background: #f7fafc !important; color: #a0aec0; font-weight: normal; }
td.pair span { display: block; white-space: nowrap; }
ul.problems { margin: 2px 0; padding-left: 18px; }
"""

_SECTIONS = (('pending', 'Pending actions'), ('groups', 'Groups'), ('hosts', 'Hosts'),
             ('problems', 'Hosts that miss expectations'), ('out-of-scope', 'Out of scope'), ('validation', 'Validation'), ('pair-matrix', 'Pair matrix'),
             ('nccl', 'NCCL'), ('pod-checks', 'In-pod checks'),
             ('ports', 'Ports'), ('stages', 'Stages'), ('firmware', 'Firmware'), ('drivers', 'Drivers'),
             ('runtime', 'Container runtime'), ('kubernetes', 'Kubernetes'))


class ReportError(ValueError):
    """What is given is not a fleet report."""


def _e(value):
    """Escaped text of a value; ``-`` for nothing."""
    if value is None or value == '' or value == []:
        return '-'
    if isinstance(value, bool):
        return 'yes' if value else 'no'
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return escape(str(value), quote=True)


def _attr(value):
    return escape('' if value is None else str(value), quote=True)


def _css(value):
    """A CSS class name from a verdict or status (``no facts`` -> ``no-facts``)."""
    return re.sub(r'[^a-z0-9]+', '-', str(value if value is not None else 'none').lower()).strip('-') or 'none'


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def _join(values, sep=', '):
    return sep.join(str(v) for v in values or [] if v is not None and v != '')


def _row(cells, attrs=''):
    """One table row; each cell is ``text`` (escaped) or ``(html, class)`` already escaped."""
    out = []
    for cell in cells:
        if isinstance(cell, tuple):
            html, cls = cell
            out.append('<td%s>%s</td>' % (' class="%s"' % cls if cls else '', html))
        else:
            out.append('<td>%s</td>' % _e(cell))
    return '<tr%s>%s</tr>' % (attrs, ''.join(out))


def _table(table_id, headers, rows):
    return ['<table id="%s">' % table_id,
            '<thead><tr>%s</tr></thead>' % ''.join('<th>%s</th>' % escape(h) for h in headers),
            '<tbody>'] + rows + ['</tbody>', '</table>']


def _section(section_id, title, body):
    return ['<section id="section-%s">' % section_id, '<h2>%s</h2>' % escape(title)] + body + ['</section>']


def _note(text, element_id=None):
    return '<p class="note"%s>%s</p>' % (' id="%s"' % element_id if element_id else '', escape(text))


def _fmt(value):
    value = _number(value)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def _gbps(value):
    text = _fmt(value)
    return None if text is None else '%s Gb/s' % text


def _expectation(expectation):
    if not expectation or not isinstance(expectation, dict):
        return 'none'
    active = expectation.get('min_active_ports', 1)
    text = 'at least %s ACTIVE' % active
    if expectation.get('link_layer'):
        text += ' %s' % expectation['link_layer']
    text += ' port' if active == 1 else ' ports'
    if expectation.get('min_rate_gbps') is not None:
        text += ' >= %s Gb/s' % (_fmt(expectation['min_rate_gbps']) or expectation['min_rate_gbps'])
    if expectation.get('devices'):
        text += ' on %s' % _join(expectation['devices'])
    return text


def _stages_cell(stages):
    if not stages:
        return None
    unusual = ['%s %s' % (row.get('stage'), row.get('status')) for row in stages
               if row.get('status') not in ('ok', 'changed')]
    changed = [str(row.get('stage')) for row in stages if row.get('status') == 'changed']
    text = '; '.join(unusual) or '%d as wanted' % len(stages)
    if changed:
        text += ' (changed: %s)' % ', '.join(changed)
    return text


# ------------------------------------------------------------------ sections

def _header(report):
    summary = report.get('summary') or {}
    counts = [('hosts', 'hosts', summary.get('hosts', len(report['hosts'])))]
    counts += [(cls, label, summary.get(key, 0)) for cls, label, key in (
        ('pass', 'pass', 'pass'), ('fail', 'fail', 'fail'), ('unchecked', 'unchecked', 'unchecked'),
        ('no-facts', 'no facts', 'no_facts'))]
    counts += [('ports', 'ports', summary.get('ports', 0)), ('ports active', 'ACTIVE', summary.get('active_ports', 0))]
    pending_hosts = sorted(set(h for hosts in (summary.get('pending') or {}).values() for h in hosts or []))
    counts.append(('pending', 'hosts with pending actions', len(pending_hosts)))
    lines = ['<header>', '<h1>RDMA fleet report</h1>', '<div id="summary">']
    lines += ['<div class="count %s%s" data-count="%s"><b>%s</b>%s</div>' % (
        cls, ' zero' if not value else '', _attr(value), _e(value), escape(label)) for cls, label, value in counts]
    lines.append('</div>')
    text = '%s hosts: %s pass, %s fail, %s unchecked, %s without facts. %s ports, %s ACTIVE.' % tuple(
        summary.get(key, 0) for key in ('hosts', 'pass', 'fail', 'unchecked', 'no_facts', 'ports', 'active_ports'))
    if summary.get('vf_ports'):
        text += ' %s SR-IOV VF ports besides (never counted: a VF shares its PF\'s link).' % summary['vf_ports']
    lines.append(_note(text, 'summary-text'))
    stages = summary.get('stages') or {}
    if stages:
        lines.append(_note('Stages: %s.' % ', '.join('%s %s' % (count, status) for status, count in sorted(
            stages.items())), 'summary-stages'))
    if summary.get('failed_hosts'):
        lines.append(_note('Failed hosts: %s.' % _join(summary['failed_hosts']), 'summary-failed'))
    lines.append('</header>')
    return lines


def _nav(body):
    """Links to the sections present in ``body`` (in-page anchors only)."""
    present = [(sid, title) for sid, title in _SECTIONS if '<section id="section-%s">' % sid in body]
    return '<nav>%s</nav>' % ''.join('<a href="#section-%s">%s</a>' % (sid, escape(title)) for sid, title in present)


def _groups(report):
    groups = report.get('groups') or []
    if not groups:
        return _section('groups', 'Groups', [_note('No GPU group fabric in this report.')])
    rows = [_row((g.get('group'), g.get('generation'), g.get('link_layer'), _gbps(g.get('line_rate_gbps')),
                  g.get('rdma_resource'), g.get('kubernetes'), (_e(g.get('hosts')), 'num'), (_e(g.get('pass')), 'num')),
                 ' data-group="%s"' % _attr(g.get('group'))) for g in groups]
    return _section('groups', 'Groups', _table('groups', (
        'group', 'generation', 'link layer', 'line rate', 'RDMA resource', 'pods get RDMA by', 'hosts', 'pass'), rows))


def _hosts(report):
    rows = []
    for host in report['hosts']:
        verdict = host.get('verdict') or 'unknown'
        expectation = host.get('expectation')
        rows.append(_row((
            host.get('host'), host.get('group'), _expectation(expectation),
            (_e(host.get('ok_ports')) if expectation else '-', 'num'), host.get('source'),
            (_e(_stages_cell(host.get('stages'))), 'wrap'), (_e(str(verdict).upper()), 'verdict %s' % _css(verdict))),
            ' data-host="%s" data-verdict="%s"' % (_attr(host.get('host')), _attr(verdict))))
    return _section('hosts', 'Hosts', _table('hosts', (
        'host', 'group', 'expectation', 'ports meeting it', 'source', 'stages', 'verdict'), rows))


def _port_state(port):
    if port.get('state') and port.get('physical_state'):
        return '%s / %s' % (port['state'], port['physical_state'])
    return port.get('state') or port.get('physical_state')


def _port_netdev(port):
    if not port.get('netdev'):
        return None
    if port.get('netdev_state'):
        return '%s (%s)' % (port['netdev'], port['netdev_state'])
    return port['netdev']


def _ports(report):
    rows = []
    for host in report['hosts']:
        for port in host.get('ports') or []:
            verdict = port.get('verdict') or 'unchecked'
            text = _e(port_verdict_text(port))
            rows.append(_row((
                host.get('host'), host.get('group'), port.get('device'), port.get('port'), _port_netdev(port),
                _port_state(port), port.get('link_layer'), _gbps(port.get('rate_gbps')), gid_cell(port),
                (text, 'verdict %s' % _css(verdict))),
                ' data-host="%s" data-device="%s" data-port="%s" data-verdict="%s"' % (
                    _attr(host.get('host')), _attr(port.get('device')), _attr(port.get('port')), _attr(verdict))))
    if not rows:
        return _section('ports', 'Ports', [_note('No RDMA port in this report.')])
    return _section('ports', 'Ports', _table('ports', (
        'host', 'group', 'device', 'port', 'netdev', 'state', 'link layer', 'rate', 'RoCE v2 GID (IPv4)', 'verdict'),
        rows))


def _bar(test, threshold):
    pct = _number(test.get('line_rate_pct'))
    ok = bool(test.get('ok'))
    width = 0.0 if pct is None else min(100.0, max(0.0, float(pct)))
    marker = min(100.0, max(0.0, float(threshold)))
    title = ('%.1f %% of the line rate; threshold %s %%' % (pct, _fmt(threshold))) if pct is not None \
        else 'no result; threshold %s %%' % _fmt(threshold)
    return ('<div class="bar %s" data-pct="%s" data-threshold="%s" title="%s">'
            '<span class="fill" style="width: %.1f%%"></span>'
            '<span class="threshold" style="left: %.1f%%"></span></div>') % (
        'ok' if ok else 'fail', '' if pct is None else '%.1f' % round(pct, 1), _attr(_fmt(threshold)), _attr(title),
        width, marker)


def _threshold(test, default):
    value = _number(test.get('min_line_rate_pct'))
    return default if value is None else value


def _status(test):
    if test.get('ok'):
        return 'ok'
    return test.get('problem') or 'failed'


def _validation(report, threshold):
    tests = report.get('validation')
    if tests is None:
        return _section('validation', 'Validation', [_note('No validation ran in this play.', 'validation-none')])
    not_asked = [str(h) for h in (report.get('summary') or {}).get('load_tests_not_asked_hosts') or []]
    asked = [_note(LOAD_TESTS_NOT_ASKED.replace('`', '') % ', '.join(not_asked), 'validation-not-asked')] \
        if not_asked else []
    if not tests:
        return _section('validation', 'Validation', asked + [_note(
            'No bandwidth test ran (check mode, not asked for, or no ACTIVE port of the expected link layer).',
            'validation-none')])
    rows = []
    for test in tests:
        pct = _number(test.get('line_rate_pct'))
        kind = test.get('kind')
        label = test_label(test)
        ok = bool(test.get('ok'))
        rows.append(_row((
            test.get('host'), label, test.get('device'), test.get('port'), test.get('netdev'),
            (_e(_fmt(test.get('average_gbps'))), 'num'), _gbps(test.get('line_rate_gbps')),
            (_bar(test, _threshold(test, threshold)), 'bar-cell'),
            ('-' if pct is None else '%.1f %%' % pct, 'num'), latency_cell(test), test.get('memlock'),
            (_e(_status(test)), 'verdict %s wrap' % ('ok' if ok else 'fail'))),
            ' class="test" data-host="%s" data-device="%s" data-port="%s" data-kind="%s" data-ok="%s"' % (
                _attr(test.get('host')), _attr(test.get('device')), _attr(test.get('port')), _attr(kind),
                'true' if ok else 'false')))
    body = [_note('Bar: average bandwidth as a share of the line rate (100 %% at the right end); the black mark is '
                  'the pass threshold (%s %% unless the test says otherwise).' % _fmt(threshold))]
    return _section('validation', 'Validation', asked + body + _table('validation', (
        'host', 'test', 'device', 'port', 'netdev', 'Gb/s', 'line rate', 'share of line rate', '% of line rate',
        'latency', 'memlock', 'status'), rows))


def _pair_matrix(report):
    servers, clients, cells = pair_matrix(report.get('validation'))
    if not cells:
        return _section('pair-matrix', 'Pair matrix', [_note('no cross-node pairs tested', 'pairs-none')])
    rows = []
    for server in servers:
        out = ['<th scope="row">%s</th>' % _e(server)]
        for client in clients:
            tests = cells.get((server, client))
            attrs = ' data-server="%s" data-client="%s"' % (_attr(server), _attr(client))
            if not tests:
                out.append('<td class="pair none"%s>-</td>' % attrs)
                continue
            ok = all(t.get('ok') for t in tests)
            parts = pair_parts(tests)
            # Each part but the first starts with "; ", so that the cell reads as the Markdown report's.
            lines = ['<span class="part %s" title="%s" data-device="%s">%s%s</span>' % (
                'ok' if test.get('ok') else 'fail', _attr(_status(test)), _attr(test.get('device')),
                '; ' if index else '', _e(part)) for index, (test, part) in enumerate(zip(tests, parts))]
            out.append('<td class="pair %s"%s data-ok="%s">%s</td>' % (
                'ok' if ok else 'fail', attrs, 'true' if ok else 'false', ''.join(lines)))
        rows.append('<tr data-server="%s">%s</tr>' % (_attr(server), ''.join(out)))
    head = '<thead><tr><th>server \\ client</th>%s</tr></thead>' % ''.join(
        '<th scope="col">%s</th>' % _e(client) for client in clients)
    return _section('pair-matrix', 'Pair matrix', [
        _note('Rows: the host running the perftest server; columns: the client host. Cell: average Gb/s, share '
              'of the line rate and typical latency, per rail.'),
        '<table id="pairs">', head, '<tbody>'] + rows + ['</tbody>', '</table>'])


def _nccl(report):
    runs = report.get('nccl')
    if not runs:
        return []
    rows = []
    for run in runs:
        cells = list(nccl_cells(run))
        ok = bool(run.get('ok'))
        cells[-1] = (_e(cells[-1]), 'status %s wrap' % ('ok' if ok else 'failed'))
        rows.append(_row(cells, ' data-group="%s" data-transport="%s" data-gdr="%s" data-ok="%s"' % (
            _attr(run.get('group')), _attr(run.get('transport')), _attr(run.get('gdr')), 'true' if ok else 'false')))
    return _section('nccl', 'NCCL', [_note(
        'The NCCL job of each group (nccl-tests all_reduce_perf across its nodes, NCCL_DEBUG=INFO): the transport of '
        'every rank (NET/IB, or a NET/Socket fallback), GPUDirect RDMA, and the bus bandwidth of the largest size as '
        'a share of the line rate times the NICs a node used.')] + _table('nccl', (
            'group', 'job state', 'transport', 'RDMA devices', 'GPUDirect RDMA', 'nodes', 'NCCL', 'bus bandwidth',
            'share of line rate', 'status'), rows))


def _pod_checks(report):
    checks, allocatable = report.get('pod_checks'), report.get('allocatable')
    if not checks and not allocatable:
        return []
    body = []
    if checks:
        rows = []
        for check in checks:
            cells = list(pod_check_cells(check))
            ok = bool(check.get('ok'))
            cells[3:7] = [(_e(value), 'wrap') for value in cells[3:7]]
            cells[-1] = (_e(cells[-1]), 'status %s wrap' % ('ok' if ok else 'failed'))
            rows.append(_row(cells, ' data-pod="%s" data-mode="%s" data-ok="%s"' % (
                _attr(check.get('pod')), _attr(check.get('mode')), 'true' if ok else 'false')))
        body += _table('pod-checks', ('pod', 'group', 'mode', 'interfaces', 'policy routes', 'RDMA devices',
                                      'resources', 'status'), rows)
    if allocatable:
        rows = []
        for row in allocatable:
            cells = list(allocatable_cells(row))
            cells[-1] = (_e(cells[-1]), 'status %s wrap' % ('ok' if row.get('ok') else 'failed'))
            rows.append(_row(cells, ' data-node="%s" data-ok="%s"' % (
                _attr(row.get('node')), 'true' if row.get('ok') else 'false')))
        body += ['<h3>Hostdev resources</h3>'] + _table('allocatable', (
            'node', 'group', 'hostdev resource', 'allocatable', 'status'), rows)
    return _section('pod-checks', 'In-pod checks', body)


def _pending(report):
    summary = report.get('summary') or {}
    names = [name for name, _text in ACTIONS]
    texts = dict(ACTIONS)
    pending = summary.get('pending') or {}
    items = [(action, '%s pending' % texts.get(action, action), hosts) for action, hosts in sorted(
        pending.items(), key=lambda item: (names.index(item[0]) if item[0] in names else len(names), item[0]))]
    items += [('driver_rebuild', 'OFED needs a rebuild for the running kernel',
               summary.get('driver_kernel_mismatch_hosts')),
              ('stage_failed', 'stage failed', summary.get('failed_stages')),
              ('cluster_resource', 'RDMA resource not reported by Kubernetes', summary.get('cluster_problem_nodes')),
              ('bandwidth', 'bandwidth below the line rate threshold', summary.get('validation_failed')),
              ('firmware_drift', "firmware other than the group's", summary.get('firmware_drift_hosts')),
              ('nccl', 'NCCL not on RDMA or below its bus bandwidth', summary.get('nccl_failed')),
              ('pod_checks', 'in-pod checks failed', summary.get('pod_checks_failed'))]
    rows = [_row((what, _join(hosts)), ' data-action="%s"' % _attr(action)) for action, what, hosts in items if hosts]
    waiting = [(host.get('host'), row) for host in report['hosts'] for row in host.get('stages') or []
               if row.get('pending')]
    waiting += [('controller', row) for row in report.get('controller') or [] if row.get('pending')]
    if not rows:
        return _section('pending', 'Pending actions', [_note('Nothing pending.', 'pending-none')])
    body = _table('pending', ('pending', 'on'), rows)
    if waiting:
        body += ['<h3>By stage</h3>'] + _table('pending-stages', ('host', 'stage', 'actions'), [
            _row((host, row.get('stage'), _join(row.get('pending'))),
                 ' data-host="%s" data-stage="%s"' % (_attr(host), _attr(row.get('stage'))))
            for host, row in waiting])
    return _section('pending', 'Pending actions', body)


def _problems_cell(problems):
    if not problems:
        return ('-', '')
    return ('<ul class="problems">%s</ul>' % ''.join('<li>%s</li>' % _e(p) for p in problems), 'wrap')


def _stages(report):
    rows = [(host.get('host'), row) for host in report['hosts'] for row in host.get('stages') or []]
    rows += [('controller', row) for row in report.get('controller') or []]
    if not rows:
        return _section('stages', 'Stages', [_note('No stage ledger in this report.', 'stages-none')])
    out = [_row((host, row.get('stage'), (_e(row.get('status')), 'status %s' % _css(row.get('status'))),
                 'yes' if row.get('changed') else 'no', _join(row.get('pending')) or None,
                 _problems_cell(row.get('problems'))),
                ' data-host="%s" data-stage="%s" data-status="%s"' % (
                    _attr(host), _attr(row.get('stage')), _attr(row.get('status'))))
           for host, row in rows]
    return _section('stages', 'Stages', _table('stages', (
        'host', 'stage', 'status', 'changed', 'pending', 'problems'), out))


def _firmware(report):
    hosts = [h for h in report['hosts'] if h.get('firmware')]
    if not hosts:
        return []
    rows = []
    for host in hosts:
        for device in host['firmware'].get('devices') or []:
            pending = device.get('pending') or []
            for name, values in sorted((device.get('values') or {}).items()):
                values = values or {}
                waiting = name in pending
                rows.append(_row((host.get('host'), device.get('device'), device.get('pci_address'), name,
                                  values.get('current'), values.get('next_boot'),
                                  (_e('pending: active after a firmware reset or reboot' if waiting else 'active'),
                                   'status %s' % ('pending' if waiting else 'ok'))),
                                 ' data-host="%s" data-device="%s" data-parameter="%s"' % (
                                     _attr(host.get('host')), _attr(device.get('device')), _attr(name))))
    if not rows:
        return _section('firmware', 'Firmware', [_note('No firmware parameter is wanted or pending on the chosen '
                                                       'devices.')] + _firmware_inventory(report))
    return _section('firmware', 'Firmware', _table('firmware', (
        'host', 'device', 'PCI address', 'parameter', 'current', 'next boot', 'status'), rows)
        + _firmware_inventory(report))


# The state of a card's firmware against its group's expectation, as a status cell class.
_FIRMWARE_STATE_CLASS = {'drift': 'failed', 'pending': 'pending', 'ok': 'ok', 'unchecked': 'skipped'}


def _firmware_inventory(report):
    rows = firmware_inventory_rows(report)
    if not rows:
        return []
    return ['<h3>Firmware inventory</h3>'] + _table('firmware-inventory', (
        'host', 'device', 'PCI address', 'part number', 'PSID', 'running', 'on flash', 'expected', 'status'), [
        _row((row['host'], row['device'], row['pci_address'], row['part_number'], row['psid'], row['running'],
              row['flash'], row['expected'],
              (_e(row['status']), 'status %s wrap' % _FIRMWARE_STATE_CLASS.get(row['state'], 'skipped'))),
             ' data-host="%s" data-device="%s" data-state="%s"' % (
                 _attr(row['host']), _attr(row['device']), _attr(row['state'])))
        for row in rows])


def _drivers(report):
    hosts = [h for h in report['hosts'] if h.get('drivers')]
    if not hosts:
        return []
    rows = []
    for host in hosts:
        drivers = host['drivers']
        status = '; '.join(driver_problems(drivers))
        rows.append(_row((host.get('host'), (drivers.get('ofed') or {}).get('kernel'), ofed_text(drivers.get('ofed')),
                          netns_text(drivers.get('netns')), gpudirect_text(drivers.get('gpudirect')),
                          (_e(status or 'as wanted'), 'status %s' % ('pending' if status else 'ok'))),
                         ' data-host="%s"' % _attr(host.get('host'))))
    return _section('drivers', 'Drivers', _table('drivers', (
        'host', 'kernel', 'OFED', 'RDMA netns (live / persisted)', 'GPUDirect', 'status'), rows))


def _runtime(report):
    hosts = [h for h in report['hosts'] if h.get('runtime')]
    if not hosts:
        return []
    rows = []
    for host in hosts:
        runtime = host['runtime']
        restart = bool(runtime.get('restart_pending'))
        rows.append(_row((host.get('host'), runtime.get('engine'), runtime.get('memlock'),
                          _join(runtime.get('runtimes')) or None,
                          (_e('restart pending' if restart else 'as wanted'),
                           'status %s' % ('pending' if restart else 'ok'))),
                         ' data-host="%s"' % _attr(host.get('host'))))
    return _section('runtime', 'Container runtime', _table('runtime', (
        'host', 'engine', 'memlock', 'runtimes', 'status'), rows))


def _where(stage):
    if stage.get('mode') == 'render':
        return 'rendered to %s' % stage.get('manifest_dir')
    return 'applied'


def _nodes(table_id, nodes):
    if not nodes:
        return []
    return _table(table_id, ('node', 'group', 'resource', 'mofed.wait', 'allocatable', 'status'), [
        _row((n.get('node'), n.get('group'), n.get('resource'), n.get('mofed_wait'), n.get('allocatable'),
              (_e('ok' if n.get('ok') else n.get('problem') or 'not ok'), 'status %s' % (
                  'ok' if n.get('ok') else 'failed'))),
             ' data-node="%s"' % _attr(n.get('node'))) for n in nodes])


def _kubernetes(report):
    cluster, spiderpool = report.get('cluster'), report.get('spiderpool')
    if not cluster and not spiderpool:
        return []
    body = []
    if cluster:
        body += ['<h3>NVIDIA Network Operator</h3>',
                 _note('NVIDIA Network Operator %s: helm values and objects %s.'
                       % (cluster.get('release'), _where(cluster)))]
        body += _table('network-operator', ('resource', 'group', 'hosts', 'interfaces', 'link types'), [
            _row((r.get('resource'), r.get('group'), (_e(len(r.get('hosts') or [])), 'num'), _join(r.get('if_names')),
                  _join(r.get('link_types'))), ' data-resource="%s"' % _attr(r.get('resource')))
            for r in cluster.get('resources') or []])
        body += _nodes('network-operator-nodes', cluster.get('nodes'))
    if spiderpool:
        body += ['<h3>Spiderpool</h3>',
                 _note('Spiderpool %s: helm values and macvlan networks %s.'
                       % (spiderpool.get('release'), _where(spiderpool)))]
        body += _table('spiderpool', ('resource', 'group', 'GPU', 'hosts', 'interface', 'network', 'subnet'), [
            _row((r.get('resource'), r.get('group'), r.get('gpu'), (_e(len(r.get('hosts') or [])), 'num'),
                  _join(r.get('if_names')), r.get('network'), r.get('subnet')),
                 ' data-resource="%s"' % _attr(r.get('resource')))
            for r in spiderpool.get('resources') or []])
        body += _nodes('spiderpool-nodes', spiderpool.get('nodes'))
    left = [(name, row) for name, stage in (('Network Operator', cluster), ('Spiderpool', spiderpool)) if stage
            for row in stage.get('left_alone') or [] if isinstance(row, dict)]
    if left:
        body += ['<h3>Left alone</h3>',
                 _note('Read, not written: another field manager, a release installed by hand or a GitOps tool owns '
                       'these; the reason names what takes them over.')]
        body += _table('left-alone', ('stage', 'object', 'what the run did not do', 'reason'), [
            _row((name, row.get('object'), row.get('action'), row.get('reason')),
                 ' data-object="%s"' % _attr(row.get('object'))) for name, row in left])
    return _section('kubernetes', 'Kubernetes', body)


def _failing(report):
    failing = [h for h in report['hosts'] if h.get('problems')]
    if not failing:
        return _section('problems', 'Hosts that miss expectations', [_note('None.', 'problems-none')])
    body = ['<ul id="problems">']
    for host in failing:
        body.append('<li data-host="%s"><b>%s</b> (%s):<ul class="problems">%s</ul></li>' % (
            _attr(host.get('host')), _e(host.get('host')), _e(host.get('group') or 'no group'),
            ''.join('<li>%s</li>' % _e(p) for p in host['problems'])))
    body.append('</ul>')
    return _section('problems', 'Hosts that miss expectations', body)


def _out_of_scope(report):
    """Hosts the host stages left alone, with the reason (only when there are some)."""
    hosts = [h for h in report.get('out_of_scope') or [] if isinstance(h, dict)]
    if not hosts:
        return []
    body = [_note('Read and reported, never changed: the host stages act only on hosts of a GPU group with an RDMA '
                  'device.')]
    body += _table('out-of-scope', ('host', 'group', 'reason'), [
        _row((h.get('host'), h.get('group') or 'no group', h.get('reason')), ' data-host="%s"' % _attr(h.get('host')))
        for h in hosts])
    return _section('out-of-scope', 'Out of scope', body)


def render_html(report, min_line_rate_pct=None):
    """Render the fleet report as one self-contained HTML5 document (stable output: same report, same bytes).

    ``min_line_rate_pct`` places the threshold mark on the bandwidth bars of tests that do not carry their own
    (the report's validation rows do not): 90, the validation role's default, when not given.
    """
    if not isinstance(report, dict) or 'hosts' not in report or 'summary' not in report:
        raise ReportError('expects the output of gpunet.rdma.fleet_report (a dict with "hosts" and "summary")')
    report = plain(report)
    report['hosts'] = [h for h in report.get('hosts') or [] if isinstance(h, dict)]
    threshold = _number(min_line_rate_pct)
    if threshold is None:
        threshold = DEFAULT_MIN_LINE_RATE_PCT
    lines = ['<!DOCTYPE html>', '<html lang="en">', '<head>', '<meta charset="utf-8">',
             '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             '<title>RDMA fleet report</title>', '<style>%s</style>' % _STYLE, '</head>', '<body>']
    body = (_pending(report) + _groups(report) + _hosts(report) + _failing(report) + _out_of_scope(report)
            + _validation(report, threshold)
            + _pair_matrix(report) + _nccl(report) + _pod_checks(report)
            + _ports(report) + _stages(report) + _firmware(report) + _drivers(report)
            + _runtime(report) + _kubernetes(report))
    lines += _header(report) + [_nav(body), '<main>'] + body + ['</main>', '</body>', '</html>']
    return '\n'.join(lines) + '\n'
