# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation filters: ib_write_bw results against the line rate, pod-level checks, workload templates.

Documentation: the .yml files.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.plugins.filter.core import to_nice_yaml

from ansible_collections.gpunet.rdma.plugins.module_utils._perftest import (
    line_rate_result, parse_ulimit, ulimit_problem)
from ansible_collections.gpunet.rdma.plugins.module_utils._workloads import (
    mpijob, pod_templates, validation_groups, validation_pods, volcano_job)


def rdma_line_rate(output, rate_gbps, min_pct=90, rc=0):
    return line_rate_result(output or '', float(rate_gbps) if rate_gbps else None, float(min_pct), rc)


def rdma_pod_result(log, rate_gbps, min_pct=90, min_memlock_kib=1048576):
    """A client pod's log: the ulimit -l line and the bandwidth, judged together."""
    record = rdma_line_rate(log, rate_gbps, min_pct)
    memlock = parse_ulimit('\n'.join(line for line in (log or '').splitlines() if line.startswith('ulimit -l')))
    record['memlock'] = memlock
    problem = ulimit_problem(memlock, int(min_memlock_kib))
    if problem:
        record['ok'] = False
        record['problem'] = '; '.join(p for p in (problem, record['problem']) if p)
    return record


def rdma_perftest_tests(ports, line_rate_gbps=None, tool='ib_write_bw'):
    """The perftest module's tests for ``rdma_ports`` records: one per port, judged against the line rate given, else
    the port's own rate."""
    if isinstance(ports, (str, dict)) or not isinstance(ports, (list, tuple)):
        raise AnsibleFilterError('rdma_perftest_tests: the input must be a list of rdma_ports records, got %s'
                                 % type(ports).__name__)
    tests = []
    for port in ports:
        if not isinstance(port, dict) or not port.get('device') or port.get('port') is None:
            raise AnsibleFilterError('rdma_perftest_tests: every port needs device and port (an rdma_ports record), '
                                     'got %r' % (port,))
        rate = line_rate_gbps if line_rate_gbps not in (None, '') else port.get('rate_gbps')
        tests.append({'device': port['device'], 'port': int(port['port']), 'tool': tool,
                      'line_rate_gbps': float(rate) if rate not in (None, '') else None})
    return tests


def rdma_perftest_records(results, ports, host, kind='loopback'):
    """The report's test records from the perftest module's results, with each port's netdev and link layer."""
    if isinstance(results, (str, dict)) or not isinstance(results, (list, tuple)):
        raise AnsibleFilterError('rdma_perftest_records: the input must be the results list of gpunet.rdma.perftest, '
                                 'got %s' % type(results).__name__)
    by_port = dict(((p.get('device'), p.get('port')), p) for p in ports or [] if isinstance(p, dict))
    records = []
    for result in results:
        if not isinstance(result, dict) or 'device' not in result or 'record' not in result:
            raise AnsibleFilterError('rdma_perftest_records: %r is not a result of gpunet.rdma.perftest' % (result,))
        port = by_port.get((result['device'], result.get('port'))) or {}
        record = dict(result['record'] or {})
        record.update(kind=kind, host=host, device=result['device'], port=result.get('port'),
                      netdev=port.get('netdev'), link_layer=port.get('link_layer'), tool=result.get('tool'),
                      ok=result.get('ok'), problem=result.get('problem'))
        records.append(record)
    return records


def rdma_manifest_files(objects, extra=None):
    """``[{name, content}]`` for gpunet.rdma.manifests: ``<kind>-<name>.yaml`` per Kubernetes object, YAML as
    ``to_nice_yaml(indent=2)`` writes it; ``extra`` maps more file names to data (YAML) or text (kept as it is)."""
    if isinstance(objects, (str, dict)) or not isinstance(objects, (list, tuple)):
        raise AnsibleFilterError('rdma_manifest_files: the input must be a list of Kubernetes objects, got %s'
                                 % type(objects).__name__)
    if extra is not None and not isinstance(extra, dict):
        raise AnsibleFilterError('rdma_manifest_files: extra must map file names to content, got %s'
                                 % type(extra).__name__)
    files = []
    for name, data in sorted((extra or {}).items()):
        files.append({'name': name, 'content': data if isinstance(data, str) else to_nice_yaml(data, indent=2)})
    for obj in objects:
        if not isinstance(obj, dict) or not obj.get('kind') or not (obj.get('metadata') or {}).get('name'):
            raise AnsibleFilterError('rdma_manifest_files: every object needs kind and metadata.name, got %r' % (obj,))
        files.append({'name': '%s-%s.yaml' % (str(obj['kind']).lower(), obj['metadata']['name']),
                      'content': to_nice_yaml(obj, indent=2)})
    return files


def rdma_validation_manifests(network_operator_result, spiderpool_result, ports_by_host, options=None):
    options = dict(options or {})
    if not options.get('image'):
        raise AnsibleFilterError('rdma_validation_manifests: options.image (an image with perftest) is required')
    groups = validation_groups(network_operator_result, spiderpool_result, dict(ports_by_host or {}),
                               list(options.get('extra_groups') or []))
    workload_options = dict(options, image=options.get('workload_image') or options['image'])
    workloads = [build(group, workload_options) for group in groups for build in (mpijob, volcano_job)]
    return {
        'groups': groups,
        'pods': [obj for group in groups for obj in validation_pods(group, options)],
        'workloads': workloads,
        'workload_pods': [pod for workload in workloads for pod in pod_templates(workload)],
    }


class FilterModule(object):
    def filters(self):
        return {
            'rdma_line_rate': rdma_line_rate,
            'rdma_perftest_tests': rdma_perftest_tests,
            'rdma_perftest_records': rdma_perftest_records,
            'rdma_manifest_files': rdma_manifest_files,
            'rdma_pod_result': rdma_pod_result,
            'rdma_validation_manifests': rdma_validation_manifests,
        }
