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


def rdma_check(ports, expectation=None, group_names=None, group_expectations=None):
    try:
        group, resolved = resolve_expectation(expectation, group_names, group_expectations)
    except ExpectationError as exc:
        raise AnsibleFilterError('rdma_check: %s' % exc)
    result = evaluate_host(list(ports or []), resolved)
    result['group'] = group
    result['expectation'] = resolved
    return result


def rdma_check_hosts(hosts, hostvars, group_expectations=None):
    """rdma_check for every host that ran the facts module (registered ``rdma_discovery_facts``), in one call."""
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
        result = rdma_check(gathered.get('rdma_ports') or [], host_vars.get('rdma_discovery_expected_ports') or None,
                            host_vars.get('group_names') or [], group_expectations)
        result.update(host=host, source=facts.get('source'), devices=list(gathered.get('rdma_devices') or []))
        results.append(result)
    return results


# Per-host records of the later stages: hostvars name -> report parameter, and whether the first one is enough.
STAGE_RECORDS = (('nic_firmware_result', 'firmware', False), ('containerd_memlock_result', 'runtime', False),
                 ('ofed_result', 'ofed', False), ('rdma_netns_result', 'netns', False),
                 ('gpudirect_result', 'gpudirect', False), ('network_operator_result', 'cluster', True),
                 ('spiderpool_result', 'spiderpool', True), ('rdma_validate_result', 'validation', False),
                 ('rdma_validate_pod_results', 'pod_validation', True))


def rdma_stage_records(hosts, hostvars):
    """Every later stage's records from the hosts' variables, in one pass (the report's stage parameters)."""
    records = dict((parameter, None if single else []) for _name, parameter, single in STAGE_RECORDS)
    for host in hosts or []:
        try:
            host_vars = hostvars[host]
        except KeyError:
            continue
        for name, parameter, single in STAGE_RECORDS:
            value = host_vars.get(name)
            if value is None:
                continue
            if not single:
                records[parameter].append(value)
            elif records[parameter] is None:
                records[parameter] = value
    return records


def rdma_fleet_report(results, all_hosts, firmware=None, runtime=None, ofed=None, netns=None, gpudirect=None,
                      cluster=None, spiderpool=None, validation=None, pod_validation=None, stages=None):
    if stages:
        firmware, runtime, ofed, netns, gpudirect = (stages.get(k) for k in ('firmware', 'runtime', 'ofed', 'netns',
                                                                             'gpudirect'))
        cluster, spiderpool, validation, pod_validation = (stages.get(k) for k in ('cluster', 'spiderpool',
                                                                                   'validation', 'pod_validation'))
    missing = [r for r in results if not isinstance(r, dict) or 'host' not in r or 'verdict' not in r]
    if missing:
        raise AnsibleFilterError('rdma_fleet_report: every result needs "host" and "verdict" (the rdma_check output '
                                 'plus the host name); got %r' % missing[0])
    return build_fleet_report(list(results), list(all_hosts), list(firmware or []), list(runtime or []),
                              list(ofed or []), list(netns or []), list(gpudirect or []), cluster or None,
                              spiderpool or None, list(validation or []), list(pod_validation or []))


def rdma_firmware_result(module_results, host, apply, wanted=None, previous=None):
    return firmware_result(list(module_results or []), host, apply, list(wanted or []), previous)


def rdma_report_markdown(report):
    if not isinstance(report, dict) or 'hosts' not in report or 'summary' not in report:
        raise AnsibleFilterError('rdma_report_markdown: expects the output of rdma_fleet_report')
    return render_markdown(report)


class FilterModule(object):
    def filters(self):
        return {
            'rdma_check': rdma_check,
            'rdma_check_hosts': rdma_check_hosts,
            'rdma_stage_records': rdma_stage_records,
            'rdma_fleet_report': rdma_fleet_report,
            'rdma_report_markdown': rdma_report_markdown,
            'rdma_firmware_result': rdma_firmware_result,
        }
