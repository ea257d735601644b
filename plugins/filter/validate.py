# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation filters: perftest results against the line rate, cross-node pairs, pod-level and in-pod checks, the NCCL
proof and the workload templates.

Documentation: the .yml files.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.plugins.filter.core import to_nice_yaml

from ansible_collections.gpunet.rdma.plugins.plugin_utils._nccl import nccl_result
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import roce_gid_index
from ansible_collections.gpunet.rdma.plugins.module_utils.validation._perftest import (
    LATENCY_TOOLS, RailError, fold_latency, line_rate_result, pair_tests, parse_ulimit, ring_pairs, ulimit_problem)
from ansible_collections.gpunet.rdma.plugins.plugin_utils._workloads import (
    hostdev_allocatable, mpijob, pod_checks, pod_templates, validation_groups, validation_pods, volcano_job)
from ansible_collections.gpunet.rdma.plugins.plugin_utils._filter_args import (
    Spec, a_bool, a_dict, a_list, a_number, a_percentage, a_scalar, a_str, describe, filter_args, names, nested)

RATE = a_number('the line rate in Gb/s', nullable=True)
MIN_PCT = a_percentage('the minimum share of the line rate')
PORT_NUMBER = a_number('the port number', whole=True)
PORT_RECORDS = a_list('rdma_ports records (dicts)', a_dict('an rdma_ports record'), nullable=True)
NAMES = names('names', nullable=True)
RESOURCES = a_list('resource records (dicts with group, resource, hosts, if_names)', a_dict(
    'a resource record', required=('group', 'resource'), keys={'hosts': NAMES, 'if_names': NAMES}), nullable=True)
STAGE_RESULT = a_dict('a cluster stage result with resources', nullable=True, keys={'resources': RESOURCES})


def _line_rate(output, rate_gbps, min_pct=90, rc=0):
    return line_rate_result(output or '', float(rate_gbps) if rate_gbps else None, float(min_pct), rc)


@filter_args('line_rate', output=a_str('the output of ib_write_bw', nullable=True), rate_gbps=RATE,
             min_pct=MIN_PCT, rc=a_number('the exit status of ib_write_bw', nullable=True, whole=True))
def rdma_line_rate(output, rate_gbps, min_pct=90, rc=0):
    return _line_rate(output, rate_gbps, min_pct, rc)


@filter_args('pod_result', log=a_str("the client pod's log", nullable=True), rate_gbps=RATE, min_pct=MIN_PCT,
             min_memlock_kib=a_number('the minimum memlock limit in KiB', whole=True))
def rdma_pod_result(log, rate_gbps, min_pct=90, min_memlock_kib=1048576):
    """A client pod's log: the ulimit -l line and the bandwidth, judged together."""
    record = _line_rate(log, rate_gbps, min_pct)
    memlock = parse_ulimit('\n'.join(line for line in (log or '').splitlines() if line.startswith('ulimit -l')))
    record['memlock'] = memlock
    problem = ulimit_problem(memlock, int(min_memlock_kib))
    if problem:
        record['ok'] = False
        record['problem'] = '; '.join(p for p in (problem, record['problem']) if p)
    return record


def _number(name, where, value):
    """``value`` as a float, or None when unset."""
    if value in (None, ''):
        return None
    return float(nested(name, where, value, a_number('Gb/s')))


@filter_args('perftest_tests', ports=a_list('rdma_ports records'), line_rate_gbps=RATE,
             tool=a_str('the perftest tool, e.g. ib_write_bw'))
def rdma_perftest_tests(ports, line_rate_gbps=None, tool='ib_write_bw'):
    """The perftest module's tests for ``rdma_ports`` records: one per port, judged against the line rate given, else
    the port's own rate. A RoCE port whose GID table is known gets the index of its RoCE v2 GID of an IPv4 address
    (``-x``); perftest's own choice stays for InfiniBand and for ports without a usable entry."""
    tests = []
    for index, port in enumerate(ports):
        if not isinstance(port, dict) or not port.get('device') or port.get('port') is None:
            raise AnsibleFilterError('perftest_tests: every port needs device and port (an rdma_ports record), '
                                     'got %r' % (port,))
        nested('perftest_tests', 'the input[%d].port' % index, port['port'], PORT_NUMBER)
        rate = line_rate_gbps if line_rate_gbps not in (None, '') else port.get('rate_gbps')
        gids = port.get('gids')
        if gids is not None and not isinstance(gids, list):
            raise AnsibleFilterError('perftest_tests: the input[%d].gids must be the GID table of the port (a '
                                     'list), got %s' % (index, type(gids).__name__))
        tests.append({'device': port['device'], 'port': int(port['port']), 'tool': tool,
                      'gid_index': roce_gid_index(port) if gids else None,
                      'line_rate_gbps': _number('perftest_tests', 'the input[%d].rate_gbps' % index, rate)})
    return tests


@filter_args('perftest_records', results=a_list('results of gpunet.rdma.perftest (dicts)'),
             ports=a_list('rdma_ports records', nullable=True), host=a_str('the host name'),
             kind=a_str('what the test was: loopback, pair'),
             extra=a_dict('more keys of every record (server, group, rail, ...)', nullable=True))
def rdma_perftest_records(results, ports, host, kind='loopback', extra=None):
    """The report's test records from the perftest module's results, with each port's netdev and link layer; a
    latency test's figures join the bandwidth record of the same port before it."""
    by_port = dict(((p.get('device'), p.get('port')), p) for p in ports or [] if isinstance(p, dict))
    records = []
    for index, result in enumerate(results):
        if not isinstance(result, dict) or 'device' not in result or 'record' not in result:
            raise AnsibleFilterError('perftest_records: %r is not a result of gpunet.rdma.perftest' % (result,))
        port = by_port.get((result['device'], result.get('port'))) or {}
        record = dict(nested('perftest_records', 'the input[%d].record' % index, result['record'] or {},
                             a_dict('the test record of gpunet.rdma.perftest')))
        record.update(kind=kind, host=host, device=result['device'], port=result.get('port'),
                      netdev=port.get('netdev'), link_layer=port.get('link_layer'), tool=result.get('tool'),
                      ok=result.get('ok'), problem=result.get('problem'))
        record.update(extra or {})
        records.append(record)
    return fold_latency(records)


@filter_args('manifest_files', objects=a_list('Kubernetes objects'),
             extra=a_dict('file name -> content', nullable=True))
def rdma_manifest_files(objects, extra=None):
    """``[{name, content}]`` for gpunet.rdma.manifests: ``<kind>-<name>.yaml`` per Kubernetes object, YAML as
    ``to_nice_yaml(indent=2)`` writes it; ``extra`` maps more file names to data (YAML) or text (kept as it is)."""
    odd = [name for name in extra or {} if not isinstance(name, str)]
    if odd:
        raise AnsibleFilterError('manifest_files: extra must map file names (strings) to content, got the key %s'
                                 % describe(odd[0]))
    files = []
    for name, data in sorted((extra or {}).items()):
        files.append({'name': name, 'content': data if isinstance(data, str) else to_nice_yaml(data, indent=2)})
    for obj in objects:
        if not isinstance(obj, dict) or not isinstance(obj.get('metadata') or {}, dict) or not obj.get('kind') \
                or not (obj.get('metadata') or {}).get('name'):
            raise AnsibleFilterError('manifest_files: every object needs kind and metadata.name, got %r' % (obj,))
        files.append({'name': '%s-%s.yaml' % (str(obj['kind']).lower(), obj['metadata']['name']),
                      'content': to_nice_yaml(obj, indent=2)})
    return files


FABRIC_GROUPS = a_dict('group name -> fabric (the groups of gpunet.rdma.fabrics)', nullable=True, values=a_dict(
    'a fabric of gpunet.rdma.fabrics', keys={'hosts': NAMES, 'validation': a_dict('validation settings', nullable=True)}))


@filter_args('validation_manifests', network_operator_result=STAGE_RESULT, spiderpool_result=STAGE_RESULT,
             ports_by_host=a_dict('host name -> rdma_ports', values=PORT_RECORDS, nullable=True),
             options=a_dict('image, workload_image, nccl_image, namespace, message_size, replicas, extra_groups, '
                            'fabrics, resource_inject', nullable=True,
                            keys={'image': a_str('an image with perftest', nullable=True),
                                  'workload_image': a_str('the image of the workloads', nullable=True),
                                  'nccl_image': a_str('an image with nccl-tests, MPI and sshd', nullable=True),
                                  'nccl_binary': a_str('the path of all_reduce_perf in the image', nullable=True),
                                  'namespace': a_str('a namespace', nullable=True),
                                  'message_size': a_number('bytes', nullable=True, whole=True),
                                  'replicas': a_number('pods', nullable=True, whole=True),
                                  'gpus_per_node': a_number('GPUs', nullable=True, whole=True),
                                  'fabrics': FABRIC_GROUPS,
                                  'resource_inject': a_dict('annotation, group', nullable=True),
                                  'extra_groups': a_list('groups (dicts with group, resources, device)', a_dict(
                                      'a group', required=('group', 'resources'), keys={
                                          'resources': names('RDMA resource names'), 'hosts': NAMES,
                                          'hcas': NAMES, 'networks': NAMES,
                                          'device': a_str('an RDMA device', nullable=True),
                                          'mode': a_str('shared, spiderpool or hostdev', nullable=True)}),
                                      nullable=True)}))
def rdma_validation_manifests(network_operator_result, spiderpool_result, ports_by_host, options=None):
    options = dict(options or {})
    if not options.get('image'):
        raise AnsibleFilterError('validation_manifests: options.image (an image with perftest) is required')
    for index, group in enumerate(options.get('extra_groups') or []):
        mode = group.get('mode') or 'shared'
        if mode not in ('shared', 'spiderpool', 'hostdev'):
            raise AnsibleFilterError('validation_manifests: options.extra_groups[%d].mode must be shared, '
                                     'spiderpool or hostdev, got %r' % (index, mode))
        if not group.get('device') and mode != 'hostdev':
            raise AnsibleFilterError('validation_manifests: options.extra_groups[%d] (%s) needs device (the RDMA '
                                     'device inside its pods); only hostdev groups find theirs in the pod'
                                     % (index, group['group']))
    groups = validation_groups(network_operator_result, spiderpool_result, dict(ports_by_host or {}),
                               list(options.get('extra_groups') or []), dict(options.get('fabrics') or {}))
    workload_options = dict(options, image=options.get('workload_image') or options['image'])
    nccl_jobs = [mpijob(group, workload_options) for group in groups]
    workloads = [build for group, job in zip(groups, nccl_jobs)
                 for build in (job, volcano_job(group, workload_options))]
    return {
        'groups': groups,
        'pods': [obj for group in groups for obj in validation_pods(group, options)],
        'workloads': workloads,
        'nccl_jobs': nccl_jobs,
        'workload_pods': [pod for workload in workloads for pod in pod_templates(workload)],
    }


@filter_args('pod_checks', log=a_str("a validation pod's log", nullable=True),
             pod=a_dict('the pod as the API server stored it', nullable=True),
             checks=a_dict("what the group's pods must show (a group's checks of gpunet.rdma.validation_manifests)",
                           nullable=True, keys={'subnets': a_list('subnets', nullable=True),
                                                'gateways': a_list('gateways', nullable=True),
                                                'hcas': NAMES, 'resources': NAMES,
                                                'interfaces': a_number('interfaces', nullable=True, whole=True),
                                                'rdma_devices': a_number('devices', nullable=True, whole=True)}),
             pod_name=a_str('the pod name', nullable=True))
def rdma_pod_checks(log, pod=None, checks=None, pod_name=None):
    """The in-pod checks of one validation pod, judged."""
    return pod_checks(log or '', pod, checks, pod_name)


_FLAGS = {'true': True, 'yes': True, 'on': True, '1': True, 'false': False, 'no': False, 'off': False, '0': False}


def a_flag(what):
    """true or false, or the words Ansible reads as such (extra vars are strings)."""
    def check(value, expected):
        if isinstance(value, bool) or (isinstance(value, str) and value.lower() in _FLAGS):
            return None
        return 'must be %s, got %s' % (expected, describe(value))
    return Spec('true or false (%s)' % what, check)


@filter_args('nccl_result', log=a_str("the NCCL job launcher's log", nullable=True), line_rate_gbps=RATE,
             expect_gdr=a_flag('whether the group expects GPUDirect RDMA'),
             min_busbw_pct=a_number('the minimum bus bandwidth in % of the line rate', nullable=True),
             min_hosts=a_number('nodes', whole=True))
def rdma_nccl_result(log, line_rate_gbps=None, expect_gdr=False, min_busbw_pct=None, min_hosts=2):
    """The NCCL proof of one group: transport per rank, GPUDirect RDMA and bus bandwidth, judged."""
    return nccl_result(log or '', float(line_rate_gbps) if line_rate_gbps not in (None, '') else None,
                       expect_gdr if isinstance(expect_gdr, bool) else _FLAGS[expect_gdr.lower()],
                       float(min_busbw_pct) if min_busbw_pct not in (None, '') else None, int(min_hosts))


PAIR_SPEC = a_dict('a pair', required=('server', 'client', 'device'), keys={
    'server': a_str('a host'), 'client': a_str('a host'), 'device': a_str('an RDMA device'),
    'client_device': a_str('an RDMA device', nullable=True), 'address': a_str('an address', nullable=True)})


@filter_args('validate_pairs', fabric_groups=FABRIC_GROUPS,
             ports_by_host=a_dict('host name -> rdma_ports', values=PORT_RECORDS, nullable=True),
             options=a_dict('hosts, devices, sample, seed, explicit, tools, line_rate_gbps, max_latency_usec, ring',
                            nullable=True,
                            keys={'hosts': NAMES, 'sample': a_number('pairs', nullable=True, whole=True),
                                  'devices': a_dict('host name -> rdma_devices', nullable=True, values=a_list(
                                      'rdma_devices records', a_dict('an rdma_devices record'), nullable=True)),
                                  'seed': a_scalar('a seed', nullable=True),
                                  'explicit': a_list('pairs (dicts with server, client, device)', PAIR_SPEC,
                                                     nullable=True),
                                  'tools': names('perftest tools', nullable=True),
                                  'line_rate_gbps': RATE,
                                  'max_latency_usec': a_number('microseconds', nullable=True),
                                  'ring': a_bool('whether each group gets its ring', nullable=True)}))
def rdma_validate_pairs(fabric_groups, ports_by_host, options=None):
    """The cross-node pairs: the listed ones, then a ring per rail in each group; each with its perftest tests.

    Listed are ``options.explicit`` and every group's own ``validation.pairs``: the role's rdma_validate_pairs is
    the planning (run_once) host's, which holds its own group's pairs only.
    """
    options = dict(options or {})
    explicit = list(options.get('explicit') or [])
    for name, fabric in sorted(dict(fabric_groups or {}).items()):
        listed = ((fabric.get('validation') or {}) if isinstance(fabric, dict) else {}).get('pairs')
        if listed is not None:
            nested('validate_pairs', 'the input[%s].validation.pairs' % name, listed,
                   a_list('pairs (dicts with server, client, device)', PAIR_SPEC))
            explicit.extend(item for item in listed if item not in explicit)
    options['explicit'] = explicit
    if options.get('ring') is False:
        fabric_groups = dict((name, dict(fabric, validation=dict(fabric.get('validation') or {}, ring=False)))
                             for name, fabric in dict(fabric_groups or {}).items())
    tools = list(options.get('tools') or ['ib_write_bw'])
    unknown = [t for t in tools if t not in ('ib_write_bw', 'ib_read_bw', 'ib_send_bw') + LATENCY_TOOLS]
    if unknown:
        raise AnsibleFilterError('validate_pairs: options.tools has %s, not a perftest tool of '
                                 'gpunet.rdma.perftest' % ', '.join(unknown))
    try:
        pairs = ring_pairs(dict(fabric_groups or {}), dict(ports_by_host or {}), options)
    except RailError as exc:
        raise AnsibleFilterError('validate_pairs: the input (fabric groups): %s' % exc)
    for pair in pairs:
        pair['server_tests'], pair['client_tests'] = pair_tests(pair, tools)
    return pairs


@filter_args('hostdev_allocatable',
             groups=a_list('the groups of gpunet.rdma.validation_manifests', a_dict('a group', required=('group', 'mode'),
                                                                                    keys={'resources': NAMES,
                                                                                          'hosts': NAMES})),
             nodes=a_list('Kubernetes Node objects (dicts)', a_dict('a Node object'), nullable=True))
def rdma_hostdev_allocatable(groups, nodes):
    """Per node of each hostdev group: the SR-IOV device plugin's resource in allocatable."""
    return hostdev_allocatable(groups, list(nodes or []))


class FilterModule(object):
    def filters(self):
        return {
            'line_rate': rdma_line_rate,
            'perftest_tests': rdma_perftest_tests,
            'perftest_records': rdma_perftest_records,
            'manifest_files': rdma_manifest_files,
            'pod_result': rdma_pod_result,
            'validation_manifests': rdma_validation_manifests,
            'pod_checks': rdma_pod_checks,
            'nccl_result': rdma_nccl_result,
            'validate_pairs': rdma_validate_pairs,
            'hostdev_allocatable': rdma_hostdev_allocatable,
        }
