# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters that check RDMA facts against expectations and build the fleet report.

Documentation: rdma_check.yml, rdma_fleet_report.yml, rdma_report_markdown.yml, rdma_firmware_result.yml beside
this file.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.module_utils._fleet_report import (
    ExpectationError,
    build_fleet_report,
    evaluate_host,
    firmware_result,
    render_markdown,
    resolve_expectation,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._ledger import LedgerError


def rdma_check(ports, expectation=None, group_names=None, group_expectations=None):
    try:
        group, resolved = resolve_expectation(expectation, group_names, group_expectations)
    except ExpectationError as exc:
        raise AnsibleFilterError('rdma_check: %s' % exc)
    result = evaluate_host(list(ports or []), resolved)
    result['group'] = group
    result['expectation'] = resolved
    return result


def rdma_check_hosts(hosts, hostvars, fabrics=None):
    """rdma_check for every host that ran the facts module (registered ``rdma_discovery_facts``), in one call.

    A host's expectation is its own ``rdma_discovery_expected_ports`` or else the ``expected_ports`` of its GPU
    group's fabric (``fabrics``: the ``groups`` of ``rdma_fabrics``); it is reported under that group.
    """
    groups = (fabrics or {})
    expectations = dict((name, fabric.get('expected_ports')) for name, fabric in groups.items())
    group_of = dict((host, name) for name, fabric in groups.items() for host in fabric.get('hosts') or [])
    results = []
    for host in hosts or []:
        try:
            host_vars = hostvars[host]
        except KeyError:
            continue
        facts = host_vars.get('rdma_discovery_facts')
        if not facts or facts.get('failed') or facts.get('skipped'):
            continue
        gathered = host_vars.get('ansible_facts') or {}
        group_names = list(host_vars.get('group_names') or [])
        if host in group_of:
            group_names = [group_of[host]] + [g for g in group_names if g != group_of[host]]
        result = rdma_check(gathered.get('rdma_ports') or [], host_vars.get('rdma_discovery_expected_ports') or None,
                            group_names, expectations)
        result.update(host=host, source=facts.get('source'), devices=list(gathered.get('rdma_devices') or []))
        results.append(result)
    return results


def rdma_fleet_report(results, all_hosts, ledgers=None, fabrics=None):
    missing = [r for r in results if not isinstance(r, dict) or 'host' not in r or 'verdict' not in r]
    if missing:
        raise AnsibleFilterError('rdma_fleet_report: every result needs "host" and "verdict" (the rdma_check output '
                                 'plus the host name); got %r' % missing[0])
    try:
        return build_fleet_report(list(results), list(all_hosts), dict(ledgers or {}), dict(fabrics or {}))
    except LedgerError as exc:
        raise AnsibleFilterError('rdma_fleet_report: ledgers: %s' % exc)


def rdma_firmware_result(module_results, host, apply, wanted=None, previous=None, targets=None):
    return firmware_result(list(module_results or []), host, apply, list(wanted or []), previous, targets)


def rdma_report_markdown(report):
    if not isinstance(report, dict) or 'hosts' not in report or 'summary' not in report:
        raise AnsibleFilterError('rdma_report_markdown: expects the output of rdma_fleet_report')
    return render_markdown(report)


class FilterModule(object):
    def filters(self):
        return {
            'rdma_check': rdma_check,
            'rdma_check_hosts': rdma_check_hosts,
            'rdma_fleet_report': rdma_fleet_report,
            'rdma_report_markdown': rdma_report_markdown,
            'rdma_firmware_result': rdma_firmware_result,
        }
