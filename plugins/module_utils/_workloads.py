# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pods and job templates that use a group's RDMA resources: the pod-level ib_write_bw check, a Kubeflow
MPIJob (nccl-tests) and a Volcano Job like the InfiniBand field report's vLLM example.

Every pod requests the group's RDMA resources, adds IPC_LOCK (memory registration locks memory) and
mounts a memory-backed /dev/shm (NCCL's shared memory transport).
"""

from __future__ import annotations

import copy
import json
import re

LABEL = 'gpunet.rdma/validate'
NAME = re.compile(r'[^a-z0-9-]+')


def dns_name(text):
    return NAME.sub('-', str(text).lower()).strip('-')


def _container(name, image, command, group, gpus=0):
    limits = dict((resource, 1) for resource in group['resources'])
    if gpus:
        limits[group.get('gpu_resource') or 'nvidia.com/gpu'] = gpus
    return {'name': name, 'image': image, 'command': ['sh', '-c', command],
            'securityContext': {'capabilities': {'add': ['IPC_LOCK']}},
            'resources': {'limits': limits, 'requests': dict(limits)},
            'volumeMounts': [{'name': 'dshm', 'mountPath': '/dev/shm'}]}


def _pod_spec(containers, group, restart='Never'):
    spec = {'containers': containers, 'restartPolicy': restart,
            'volumes': [{'name': 'dshm', 'emptyDir': {'medium': 'Memory'}}]}
    if group.get('hosts'):
        spec['affinity'] = {'nodeAffinity': {'requiredDuringSchedulingIgnoredDuringExecution': {'nodeSelectorTerms': [
            {'matchExpressions': [{'key': 'kubernetes.io/hostname', 'operator': 'In',
                                   'values': list(group['hosts'])}]}]}}}
    return spec


# A shell function for the validation pods: the index of the RoCE v2 GID of one of the pod's own IPv4 addresses
# on DEVICE's port 1 (empty when there is none: perftest then picks one itself and says which).
POD_GID_INDEX = (
    'gid_index() { for a in $(ip -4 -o addr show | awk \'{print $4}\' | cut -d/ -f1); do '
    'h=$(printf \'%02x%02x:%02x%02x\' $(echo "$a" | tr . \' \')); '
    'for g in /sys/class/infiniband/$1/ports/1/gids/*; do i=${g##*/}; '
    '[ "$(cat "$g")" = "0000:0000:0000:0000:0000:ffff:$h" ] || continue; '
    '[ "$(cat /sys/class/infiniband/$1/ports/1/gid_attrs/types/$i 2>/dev/null)" = "RoCE v2" ] '
    '&& { echo "$i"; return; }; done; done; };')


def validation_pods(group, options):
    """Server pod, client pod (another node of the group) and the headless Service that names the server.

    The client prints ``ulimit -l`` and runs ``ib_write_bw --report_gbits`` against the server; its log is
    what the role parses.
    """
    base = 'rdma-validate-%s' % dns_name(group['group'])
    namespace = options.get('namespace') or 'default'
    size = int(options.get('message_size') or 1048576)
    device = group['device']
    labels = {LABEL: base}
    bw = 'ib_write_bw -d %s -F --report_gbits -s %d' % (device, size)
    if group.get('link_layer') == 'Ethernet':
        # The GID index is the pod's own: each pod's macvlan address has its own entries in the shared table.
        bw = '%s X=$(%s); %s${X:+ -x $X}' % (POD_GID_INDEX, 'gid_index %s' % device, bw)
    annotations = dict(group.get('annotations') or {})
    server_spec = _pod_spec([_container('server', options['image'], 'echo "ulimit -l: $(ulimit -l)"; exec %s' % bw,
                                        group)], group)
    server_spec.update(hostname='server', subdomain=base)
    client_spec = _pod_spec([_container(
        'client', options['image'],
        'echo "ulimit -l: $(ulimit -l)"; for i in $(seq 1 60); do getent hosts server.%s >/dev/null && break; '
        'sleep 2; done; sleep 2; exec %s server.%s' % (base, bw, base), group)], group)
    if len(group.get('hosts') or []) > 1:
        # Two nodes: the test crosses the fabric, not the host's own loopback.
        client_spec['affinity']['podAntiAffinity'] = {'requiredDuringSchedulingIgnoredDuringExecution': [
            {'labelSelector': {'matchLabels': labels}, 'topologyKey': 'kubernetes.io/hostname'}]}

    def pod(role, spec):
        metadata = {'name': '%s-%s' % (base, role), 'namespace': namespace,
                    'labels': dict(labels, **{'app.kubernetes.io/component': role})}
        if annotations:
            metadata['annotations'] = annotations
        return {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': metadata, 'spec': spec}
    service = {'apiVersion': 'v1', 'kind': 'Service', 'metadata': {'name': base, 'namespace': namespace},
               'spec': {'clusterIP': 'None', 'selector': dict(labels, **{'app.kubernetes.io/component': 'server'}),
                        'ports': [{'name': 'perftest', 'port': 18515}]}}
    return [service, pod('server', server_spec), pod('client', client_spec)]


def nccl_env(group):
    """NCCL over the group's RDMA devices (the InfiniBand field report: NCCL_IB_DISABLE=0, NCCL_DEBUG=INFO).

    RoCE: no NCCL_IB_GID_INDEX. With macvlan and the shared device plugin every pod's address has its own GID
    entries, so a fixed index points at another pod's address or at nothing (the hangs and "no route" errors of
    NCCL issues 718 and 890). NCCL picks the entry itself (NCCL_IB_GID_INDEX unset, -1) from the RoCE version and
    address family it is given: RoCE v2 (NCCL_IB_ROCE_VERSION_NUM) of an IPv4 address (NCCL_IB_ADDR_FAMILY).
    """
    env = [{'name': 'NCCL_IB_DISABLE', 'value': '0'}, {'name': 'NCCL_DEBUG', 'value': 'INFO'},
           {'name': 'NCCL_IB_HCA', 'value': ','.join(group.get('hcas') or [group['device']])}]
    if group.get('link_layer') == 'Ethernet':
        env += [{'name': 'NCCL_IB_ROCE_VERSION_NUM', 'value': '2'}, {'name': 'NCCL_IB_ADDR_FAMILY', 'value': 'AF_INET'}]
    return env


def _with_template_metadata(spec, group):
    template = {'spec': spec}
    if group.get('annotations'):
        template['metadata'] = {'annotations': dict(group['annotations'])}
    return template


def mpijob(group, options):
    """A Kubeflow MPIJob (kubeflow.org/v2beta1) running nccl-tests' all_reduce_perf over the workers."""
    name = 'nccl-tests-%s' % dns_name(group['group'])
    replicas = int(options.get('replicas') or 2)
    gpus = int(group.get('gpus_per_node') or 8)
    worker = _container('worker', options['image'], 'sleep infinity', group, gpus)
    worker['env'] = nccl_env(group)
    launcher = {'name': 'launcher', 'image': options['image'], 'env': nccl_env(group),
                'command': ['mpirun', '--allow-run-as-root', '-np', str(replicas * gpus), '-bind-to', 'none',
                            '-x', 'NCCL_IB_DISABLE', '-x', 'NCCL_DEBUG', '-x', 'NCCL_IB_HCA',
                            'all_reduce_perf', '-b', '8', '-e', '8G', '-f', '2', '-g', '1']}
    return {'apiVersion': 'kubeflow.org/v2beta1', 'kind': 'MPIJob',
            'metadata': {'name': name, 'namespace': options.get('namespace') or 'default'},
            'spec': {'slotsPerWorker': gpus, 'runPolicy': {'cleanPodPolicy': 'Running'},
                     'mpiReplicaSpecs': {
                         'Launcher': {'replicas': 1, 'template': {'spec': {'containers': [launcher],
                                                                           'restartPolicy': 'OnFailure'}}},
                         'Worker': {'replicas': replicas,
                                    'template': _with_template_metadata(_pod_spec([worker], group, 'OnFailure'),
                                                                        group)}}}}


def volcano_job(group, options):
    """A Volcano Job like the InfiniBand field report's vLLM inference: a master and workers with the RDMA resource and IPC_LOCK."""
    name = 'vllm-rdma-%s' % dns_name(group['group'])
    replicas = int(options.get('replicas') or 2)
    gpus = int(group.get('gpus_per_node') or 8)
    master = _container('master', options['image'], 'ray start --head --port=6667 --disable-usage-stats; '
                        'sleep infinity', group, gpus)
    worker = _container('worker', options['image'], 'ray start --address="$MASTER_ADDR:6667"; sleep infinity',
                        group, gpus)
    for container in (master, worker):
        container['env'] = nccl_env(group)
    return {'apiVersion': 'batch.volcano.sh/v1alpha1', 'kind': 'Job',
            'metadata': {'name': name, 'namespace': options.get('namespace') or 'default'},
            'spec': {'minAvailable': replicas, 'schedulerName': 'volcano', 'queue': 'default', 'maxRetry': 3,
                     'plugins': {'svc': [], 'env': []},
                     'policies': [{'event': 'PodEvicted', 'action': 'RestartJob'}],
                     'tasks': [
                         {'name': 'master', 'replicas': 1, 'minAvailable': 1,
                          'policies': [{'event': 'TaskCompleted', 'action': 'CompleteJob'},
                                       {'event': 'PodFailed', 'action': 'TerminateJob'}],
                          'template': _with_template_metadata(_pod_spec([master], group), group)},
                         {'name': 'worker', 'replicas': replicas - 1, 'minAvailable': 1,
                          'template': _with_template_metadata(_pod_spec([worker], group, 'OnFailure'), group)}]}}


def pod_templates(obj):
    """The pod templates of an MPIJob or Volcano Job as Pods, to check them against the core schemas."""
    if obj['kind'] == 'MPIJob':
        templates = [(role, spec['template']) for role, spec in sorted(obj['spec']['mpiReplicaSpecs'].items())]
    else:
        templates = [(task['name'], task['template']) for task in obj['spec']['tasks']]
    pods = []
    for role, template in templates:
        metadata = dict(copy.deepcopy(template.get('metadata') or {}),
                        name='%s-%s' % (obj['metadata']['name'], dns_name(role)))
        pods.append({'apiVersion': 'v1', 'kind': 'Pod', 'metadata': metadata, 'spec': copy.deepcopy(template['spec'])})
    return pods


def networks_annotation(networks):
    return {'k8s.v1.cni.cncf.io/networks': json.dumps([{'name': n.split('/')[1], 'namespace': n.split('/')[0]}
                                                       for n in networks], separators=(',', ':'))}


def _devices(ports, if_names):
    return [p for p in ports or [] if p.get('netdev') in if_names]


def validation_groups(network_operator_result, spiderpool_result, ports_by_host, extra=None):
    """What each RDMA group's pods request, from the cluster stage's records and the hosts' ports.

    ``[{group, resources, hosts, device, hcas, link_layer, annotations}]``: one entry per Network Operator
    resource, one for the Spiderpool group (all its per-GPU resources and networks), then ``extra``.
    """
    groups = []
    for resource in (network_operator_result or {}).get('resources') or []:
        hosts = list(resource.get('hosts') or [])
        ports = _devices(ports_by_host.get(hosts[0]) if hosts else [], resource.get('if_names') or [])
        if not ports:
            continue
        groups.append({'group': resource['group'], 'resources': [resource['resource']], 'hosts': hosts,
                       'device': ports[0]['device'], 'hcas': sorted(set(p['device'] for p in ports)),
                       'link_layer': ports[0].get('link_layer'), 'annotations': {}})
    spider = (spiderpool_result or {}).get('resources') or []
    if spider:
        hosts = sorted(set(h for r in spider for h in r.get('hosts') or []))
        if_names = [name for r in spider for name in r.get('if_names') or []]
        ports = _devices(ports_by_host.get(hosts[0]) if hosts else [], if_names)
        if ports:
            by_netdev = dict((p['netdev'], p) for p in ports)
            groups.append({'group': spider[0]['group'], 'resources': [r['resource'] for r in spider], 'hosts': hosts,
                           'device': by_netdev.get(if_names[0], ports[0])['device'],
                           'hcas': [by_netdev[n]['device'] for n in if_names if n in by_netdev],
                           'link_layer': 'Ethernet',
                           'annotations': networks_annotation([r['network'] for r in spider if r.get('network')])})
    return groups + [dict({'annotations': {}, 'hosts': [], 'hcas': []}, **g) for g in extra or []]
