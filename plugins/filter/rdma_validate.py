# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation filters: ib_write_bw results against the line rate, pod-level checks, workload templates.

Documentation: the .yml files.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

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
            'rdma_pod_result': rdma_pod_result,
            'rdma_validation_manifests': rdma_validation_manifests,
        }
