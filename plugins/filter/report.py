# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters that check RDMA facts against expectations and build the fleet report.

Documentation: check.yml, fleet_report.yml, report_markdown.yml, firmware_result.yml beside
this file.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.plugin_utils._fleet_report import (
    ExpectationError,
    build_fleet_report,
    evaluate_host,
    firmware_result,
    render_markdown,
    resolve_expectation,
)
from ansible_collections.gpunet.rdma.plugins.plugin_utils._ledger import LedgerError
from ansible_collections.gpunet.rdma.plugins.plugin_utils._filter_args import (
    a_dict, a_list, a_name, a_str, describe, filter_args, host_vars, names, nested)

PORTS = a_list('rdma_ports records (dicts with device and port)',
               a_dict('an rdma_ports record', required=('device', 'port')), nullable=True)
# group_by groups of a run of the collection's playbooks (gpunet_rdma_in_scope, gpunet_rdma_disrupt, ...)
RUN_GROUP_PREFIX = 'gpunet_rdma_'
GROUP_NAMES = names('group names (e.g. group_names)', nullable=True)
GROUP_EXPECTATIONS = a_dict('group name -> expectation', nullable=True)
HOST_NAME = a_name('a host name (str)')
RESULT_PORTS = a_list('port records (dicts)', a_dict('a port record'))
DEVICES = a_list('rdma_devices records (dicts with device)', a_dict('an rdma_devices record', required=('device',)),
                 nullable=True)
FABRIC_GROUPS = a_dict('the groups of gpunet.rdma.fabrics: group name -> fabric', nullable=True, values=a_dict(
    'a fabric of gpunet.rdma.fabrics', keys={'hosts': names('host names', nullable=True)}))


def _check(name, ports, expectation, group_names, group_expectations, devices=None):
    try:
        group, resolved = resolve_expectation(expectation, group_names, group_expectations)
    except ExpectationError as exc:
        raise AnsibleFilterError('%s: %s' % (name, exc))
    result = evaluate_host(list(ports or []), resolved, list(devices or []))
    result['group'] = group
    result['expectation'] = resolved
    return result


@filter_args('check', ports=PORTS,
             expectation=a_dict('an expectation: link_layer, min_active_ports, min_rate_gbps, devices', nullable=True),
             group_names=GROUP_NAMES, group_expectations=GROUP_EXPECTATIONS, devices=DEVICES)
def rdma_check(ports, expectation=None, group_names=None, group_expectations=None, devices=None):
    return _check('check', ports, expectation, group_names, group_expectations, devices)


@filter_args('check_hosts', hosts=names('host names (e.g. ansible_play_hosts_all)', nullable=True),
             hostvars=a_dict('hostvars: host name -> variables'), fabrics=FABRIC_GROUPS)
def rdma_check_hosts(hosts, hostvars, fabrics=None):
    """gpunet.rdma.check for every host that ran the facts module (registered ``rdma_discovery_facts``), in one call.

    A host's expectation is its own ``rdma_discovery_expected_ports`` or else the ``expected_ports`` of its GPU
    group's fabric (``fabrics``: the ``groups`` of ``gpunet.rdma.fabrics``); it is reported under that group.
    """
    name = 'check_hosts'
    groups = (fabrics or {})
    expectations = dict((group, fabric.get('expected_ports')) for group, fabric in groups.items())
    group_of = dict((host, group) for group, fabric in groups.items() for host in fabric.get('hosts') or [])
    results = []
    for host in hosts or []:
        variables = host_vars(name, hostvars, host)
        if variables is None:
            continue
        facts = variables.get('rdma_discovery_facts')
        if not facts:
            continue
        nested(name, 'rdma_discovery_facts of %s' % host, facts, a_dict('the registered facts module result'))
        if facts.get('failed') or facts.get('skipped'):
            continue
        gathered = nested(name, 'ansible_facts of %s' % host, variables.get('ansible_facts') or {},
                          a_dict('the facts of the host'))
        group_names = list(nested(name, 'group_names of %s' % host, variables.get('group_names') or [],
                                  GROUP_NAMES))
        # the in-memory groups this run makes (scope, batches, failed nodes) are not where a host belongs
        group_names = [g for g in group_names if not g.startswith(RUN_GROUP_PREFIX)]
        if host in group_of:
            group_names = [group_of[host]] + [g for g in group_names if g != group_of[host]]
        ports = nested(name, 'ansible_facts.rdma_ports of %s' % host, gathered.get('rdma_ports') or [], PORTS)
        devices = nested(name, 'ansible_facts.rdma_devices of %s' % host, gathered.get('rdma_devices') or [],
                         a_list('rdma_devices records'))
        result = _check('%s: %s' % (name, host), ports, variables.get('rdma_discovery_expected_ports') or None,
                        group_names, expectations, [d for d in devices if isinstance(d, dict)])
        result.update(host=host, source=facts.get('source'), devices=list(devices))
        results.append(result)
    return results


@filter_args('fleet_report',
             results=a_list('gpunet.rdma.check results with the host name (dicts with host, verdict and ports)'),
             all_hosts=names('host names (e.g. ansible_play_hosts_all)'),
             ledgers=a_dict('host name -> gpunet_rdma_ledger (e.g. the output of gpunet.rdma.ledgers)', nullable=True,
                            values=a_dict('a gpunet_rdma_ledger: stage name -> envelope', nullable=True)),
             fabrics=FABRIC_GROUPS)
def rdma_fleet_report(results, all_hosts, ledgers=None, fabrics=None):
    missing = [r for r in results if not isinstance(r, dict) or 'host' not in r or 'verdict' not in r]
    if missing:
        raise AnsibleFilterError('fleet_report: every result needs "host" and "verdict" (the gpunet.rdma.check output '
                                 'plus the host name); got %r' % missing[0])
    for index, result in enumerate(results):
        nested('fleet_report', 'the input[%d].host' % index, result['host'], HOST_NAME)
        if 'ports' not in result:
            raise AnsibleFilterError('fleet_report: the input[%d] (host %s) needs "ports" (the gpunet.rdma.check output '
                                     'plus the host name)' % (index, result['host']))
        nested('fleet_report', 'the input[%d].ports' % index, result['ports'], RESULT_PORTS)
    try:
        return build_fleet_report(list(results), list(all_hosts), dict(ledgers or {}), dict(fabrics or {}))
    except LedgerError as exc:
        raise AnsibleFilterError('fleet_report: ledgers: %s' % exc)


@filter_args('firmware_result',
             module_results=a_list('results of gpunet.rdma.mlxconfig (dicts)', a_dict('an mlxconfig result', keys={
                 'item': a_dict('the loop item: device, pci_address', nullable=True),
                 'config': a_dict('parameter -> {current, next_boot}', nullable=True,
                                  values=a_dict('current, next_boot')),
                 'pending': names('parameter names', nullable=True),
                 'changes': a_dict('parameter -> {before, after}', nullable=True)}), nullable=True),
             host=a_str('the host name'),
             apply=a_str('how pending changes are activated: none, mlxfwreset, reboot'),
             wanted=names('parameter names (e.g. nic_firmware_params.keys())', nullable=True),
             previous=a_dict('the record of gpunet.rdma.firmware_result from before the activation', nullable=True, keys={
                 'devices': a_list('device records', a_dict('a device record', required=('pci_address', 'changes')),
                                   nullable=True)}),
             targets=a_list('PCI functions (dicts with device and pci_address)', nullable=True))
def rdma_firmware_result(module_results, host, apply, wanted=None, previous=None, targets=None):
    return firmware_result(list(module_results or []), host, apply, list(wanted or []), previous, targets)


REPORT = a_dict('the output of gpunet.rdma.fleet_report', keys={
    'summary': a_dict('the summary of gpunet.rdma.fleet_report', required=(
        'hosts', 'pass', 'fail', 'unchecked', 'no_facts', 'ports', 'active_ports')),
    'hosts': a_list('host records', a_dict('a host record of gpunet.rdma.fleet_report', required=(
        'host', 'group', 'expectation', 'ok_ports', 'source', 'verdict', 'ports', 'problems'), keys={
            'ports': RESULT_PORTS, 'problems': a_list('problems (str)')}))})


def check_report(name, report):
    """The checks of the renderings (Markdown, HTML) of a fleet report: a dict with hosts and summary, each
    host record with what the renderings index."""
    if not isinstance(report, Mapping) or 'hosts' not in report or 'summary' not in report:
        raise AnsibleFilterError('%s: expects the output of gpunet.rdma.fleet_report (the input must be a dict with hosts and '
                                 'summary), got %s' % (name, describe(report)))
    nested(name, 'the input', report, REPORT)
    return report


@filter_args('report_markdown')
def rdma_report_markdown(report):
    return render_markdown(check_report('report_markdown', report))


class FilterModule(object):
    def filters(self):
        return {
            'check': rdma_check,
            'check_hosts': rdma_check_hosts,
            'fleet_report': rdma_fleet_report,
            'report_markdown': rdma_report_markdown,
            'firmware_result': rdma_firmware_result,
        }
