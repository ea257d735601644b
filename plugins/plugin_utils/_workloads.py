# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pods and job templates that use a group's RDMA resources: the pod-level ib_write_bw check with its in-pod checks,
the NCCL proof (a Kubeflow MPIJob running nccl-tests' all_reduce_perf across nodes) and a Volcano Job like the
InfiniBand field report's vLLM example.

Every pod requests the group's RDMA resources (or, with Spiderpool's webhook injection, only carries its annotation),
adds IPC_LOCK (memory registration locks memory) and mounts a memory-backed /dev/shm (NCCL's shared memory transport).

The in-pod checks are what the Spiderpool RoCE guide checks by hand inside a test pod: the interfaces (``ip -j
addr``), the policy routes Spiderpool tunes per interface (``ip rule``, ``ip route show table N``), the RDMA devices
(``rdma link``) and what the device plugins injected; the pods print them between marker lines before their
perftest run, and :func:`pod_checks` reads them back from the log.
"""

from __future__ import annotations

import copy
import ipaddress
import json
import re

from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import RdmaParseError, parse_rdma_link

LABEL = 'gpunet.rdma/validate'
NAME = re.compile(r'[^a-z0-9-]+')


def dns_name(text):
    return NAME.sub('-', str(text).lower()).strip('-')


def _container(name, image, command, group, gpus=0):
    limits = dict((resource, 1) for resource in group['resources'])
    if gpus:
        limits[group.get('gpu_resource') or 'nvidia.com/gpu'] = gpus
    container = {'name': name, 'image': image,
                 'command': command if isinstance(command, list) else ['sh', '-c', command],
                 'securityContext': {'capabilities': {'add': ['IPC_LOCK']}},
                 'volumeMounts': [{'name': 'dshm', 'mountPath': '/dev/shm'}]}
    if limits:
        container['resources'] = {'limits': limits, 'requests': dict(limits)}
    return container


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


# What the in-pod checks print, each after a marker line; the log reader splits on the markers. iproute2 without
# JSON output (busybox) prints the text form of ip addr, which is read too.
MARK = '==== gpunet.rdma '
POD_CHECKS = (
    'M="%s"; echo "${M}ip -j addr"; ip -j addr 2>/dev/null || ip addr 2>&1; '
    'echo "${M}ip rule"; ip rule 2>&1; '
    'for t in $(ip rule 2>/dev/null | sed -n \'s/.*lookup \\([0-9][0-9]*\\).*/\\1/p\' | sort -un); do '
    'echo "${M}ip route show table $t"; ip route show table "$t" 2>&1; done; '
    'echo "${M}rdma link"; rdma link 2>&1; '
    'echo "${M}env"; env | grep -E \'^(NCCL_|PCIDEVICE_|RDMA_)\' | sort; '
    'echo "${M}end";' % MARK)
# A hostdev pod's RDMA device is the VF whose netdev is its net1, whatever the VF is called on the node.
POD_HOSTDEV_DEVICE = ('D=$(rdma link 2>/dev/null | awk \'$NF == "net1" {split($2, a, "/"); print a[1]; exit}\'); '
                      '[ -n "$D" ] || D=$(rdma link 2>/dev/null | awk \'NR == 1 {split($2, a, "/"); print a[1]}\');')


def inject_annotation(options):
    """The Spiderpool webhook's annotation for the validation pods, or None (they request everything themselves)."""
    inject = options.get('resource_inject') or {}
    if not inject.get('group'):
        return None
    return {'cni.spidernet.io/%s' % (inject.get('annotation') or 'rdma-resource-inject'): inject['group']}


def validation_pods(group, options):
    """Server pod, client pod (another node of the group) and the headless Service that names the server.

    Both pods print the in-pod checks and ``ulimit -l``; the client then runs ``ib_write_bw --report_gbits``
    against the server. Their logs are what the role parses. With Spiderpool's webhook injection on
    (``options.resource_inject``), a Spiderpool group's pods carry only the injection annotation, so that the check
    proves the webhook added the networks and the RDMA resources.
    """
    base = 'rdma-validate-%s' % dns_name(group['group'])
    namespace = options.get('namespace') or 'default'
    size = int(options.get('message_size') or 1048576)
    device = group.get('device')
    labels = {LABEL: base}
    injected = inject_annotation(options) if group.get('mode') == 'spiderpool' else None
    if device:
        bw = 'ib_write_bw -d %s -F --report_gbits -s %d' % (device, size)
        if group.get('link_layer') == 'Ethernet':
            # The GID index is the pod's own: each pod's macvlan address has its own entries in the shared table.
            bw = '%s X=$(%s); %s${X:+ -x $X}' % (POD_GID_INDEX, 'gid_index %s' % device, bw)
    else:
        bw = '%s ib_write_bw -d "$D" -F --report_gbits -s %d' % (POD_HOSTDEV_DEVICE, size)
        if group.get('link_layer') == 'Ethernet':
            bw = '%s %s X=$(gid_index "$D"); ib_write_bw -d "$D" -F --report_gbits -s %d${X:+ -x $X}' % (
                POD_HOSTDEV_DEVICE, POD_GID_INDEX, size)
    annotations = {} if injected else dict(group.get('annotations') or {})
    annotations.update(injected or {})
    prelude = '%s echo "ulimit -l: $(ulimit -l)";' % POD_CHECKS
    requested = dict(group, resources=[]) if injected else group
    server_spec = _pod_spec([_container('server', options['image'], '%s exec %s' % (prelude, bw), requested)],
                            group)
    server_spec.update(hostname='server', subdomain=base)
    client_spec = _pod_spec([_container(
        'client', options['image'],
        '%s for i in $(seq 1 60); do getent hosts server.%s >/dev/null && break; '
        'sleep 2; done; sleep 2; exec %s server.%s' % (prelude, base, bw, base), requested)], group)
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
    """NCCL over the group's RDMA devices (the InfiniBand field report: NCCL_IB_DISABLE=0, NCCL_DEBUG=INFO), with the
    INIT and NET lines that prove the transport (NCCL_DEBUG_SUBSYS=INIT,NET).

    RoCE: no NCCL_IB_GID_INDEX. With macvlan and the shared device plugin every pod's address has its own GID
    entries, so a fixed index points at another pod's address or at nothing (the hangs and "no route" errors of
    NCCL issues 718 and 890). NCCL picks the entry itself (NCCL_IB_GID_INDEX unset, -1) from the RoCE version and
    address family it is given: RoCE v2 (NCCL_IB_ROCE_VERSION_NUM) of an IPv4 address (NCCL_IB_ADDR_FAMILY).
    A hostdev (SR-IOV) pod sees only its own VFs, whatever they are called: no NCCL_IB_HCA.
    """
    env = [{'name': 'NCCL_IB_DISABLE', 'value': '0'}, {'name': 'NCCL_DEBUG', 'value': 'INFO'},
           {'name': 'NCCL_DEBUG_SUBSYS', 'value': 'INIT,NET'}]
    hcas = group.get('hcas') or ([group['device']] if group.get('device') else [])
    if hcas:
        env.append({'name': 'NCCL_IB_HCA', 'value': ','.join(hcas)})
    if group.get('link_layer') == 'Ethernet':
        env += [{'name': 'NCCL_IB_ROCE_VERSION_NUM', 'value': '2'}, {'name': 'NCCL_IB_ADDR_FAMILY', 'value': 'AF_INET'}]
    if group.get('expect_gdr') is False:
        # No GPUDirect RDMA on these nodes (e.g. PVRDMA worker VMs: no peer memory through the paravirtual adapter):
        # NCCL stages through host memory. The VMware PVRDMA reference design sets NCCL_IB_GDR_LEVEL=0, the name
        # NCCL releases before 2.4 read; later ones read NCCL_NET_GDR_LEVEL (LOC: never GPUDirect RDMA).
        env += [{'name': 'NCCL_NET_GDR_LEVEL', 'value': 'LOC'}, {'name': 'NCCL_IB_GDR_LEVEL', 'value': '0'}]
    return env


def _with_template_metadata(spec, group, labels=None):
    template = {'spec': spec}
    metadata = {}
    if group.get('annotations'):
        metadata['annotations'] = dict(group['annotations'])
    if labels:
        metadata['labels'] = dict(labels)
    if metadata:
        template['metadata'] = metadata
    return template


NCCL_BINARY = '/opt/nccl_tests/build/all_reduce_perf'


def nccl_job_name(group):
    return 'nccl-tests-%s' % dns_name(group['group'])


def mpijob(group, options):
    """The NCCL proof of a group: a Kubeflow MPIJob (kubeflow.org/v2beta1) running nccl-tests' all_reduce_perf
    ``-b 8 -e 8G -f 2 -g <GPUs per node>``, one worker per node, one rank per worker driving all its GPUs.

    The workers run sshd (mpirun reaches them over SSH, as the MPI Operator's examples do) and request the GPUs and
    the group's RDMA resources; the launcher waits until every worker answers, then starts mpirun and exports every
    NCCL variable (processes started over SSH do not inherit the pod's environment). NCCL_ALGO=Ring: on two nodes
    NCCL's default trees reach more than the network's bandwidth (NCCL issues 1576, nccl-tests 196), rings make bus
    bandwidth comparable with the NICs' line rate. The launcher's log holds every rank's NCCL INFO lines and the
    result table; :func:`gpunet.rdma._nccl.nccl_result` judges it.
    """
    name = nccl_job_name(group)
    replicas = int(options.get('replicas') or 2)
    gpus = int(group.get('gpus_per_node') or options.get('gpus_per_node') or 8)
    image = options.get('nccl_image') or options['image']
    binary = options.get('nccl_binary') or NCCL_BINARY
    env = nccl_env(group) + [{'name': 'NCCL_ALGO', 'value': 'Ring'}]
    worker_labels = {LABEL: name}
    worker = _container('worker', image, ['/usr/sbin/sshd', '-De'], group, gpus)
    worker['env'] = env
    worker_spec = _pod_spec([worker], group, 'OnFailure')
    if len(group.get('hosts') or []) != 1:
        worker_spec.setdefault('affinity', {})['podAntiAffinity'] = {
            'requiredDuringSchedulingIgnoredDuringExecution': [
                {'labelSelector': {'matchLabels': worker_labels}, 'topologyKey': 'kubernetes.io/hostname'}]}
    exports = ' '.join('-x %s' % e['name'] for e in env)
    command = ('set -e; until mpirun --allow-run-as-root -np %(n)d --bind-to none hostname >/dev/null 2>&1; '
               'do sleep 5; done; exec mpirun --allow-run-as-root -np %(n)d -npernode 1 --bind-to none %(x)s '
               '%(bin)s -b 8 -e 8G -f 2 -g %(gpus)d' % {'n': replicas, 'x': exports, 'bin': binary, 'gpus': gpus})
    launcher = {'name': 'launcher', 'image': image, 'env': env, 'command': ['sh', '-c', command]}
    return {'apiVersion': 'kubeflow.org/v2beta1', 'kind': 'MPIJob',
            'metadata': {'name': name, 'namespace': options.get('namespace') or 'default',
                         'labels': {LABEL: name}},
            'spec': {'slotsPerWorker': 1,
                     'runPolicy': {'cleanPodPolicy': 'Running', 'backoffLimit': 0},
                     'mpiReplicaSpecs': {
                         'Launcher': {'replicas': 1, 'template': {'spec': {'containers': [launcher],
                                                                           'restartPolicy': 'Never'}}},
                         'Worker': {'replicas': replicas,
                                    'template': _with_template_metadata(worker_spec, group, worker_labels)}}}}


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
    return {'k8s.v1.cni.cncf.io/networks': json.dumps(
        [dict(zip(('namespace', 'name'), n.split('/', 1))) if '/' in n else {'name': n} for n in networks],
        separators=(',', ':'))}


def _devices(ports, if_names):
    return [p for p in ports or [] if p.get('netdev') in if_names]


def _fabric_settings(fabric):
    """A group's validation settings from its fabric: line rate, GPUs per node, GPUDirect expected, NCCL threshold."""
    fabric = fabric or {}
    validation = fabric.get('validation') or {}
    gpudirect = (fabric.get('gpudirect') or {}).get('mode') or (
        'none' if fabric.get('platform') == 'vmware_pvrdma' else 'host')
    return {'line_rate_gbps': fabric.get('line_rate_gbps'),
            'gpus_per_node': validation.get('gpus_per_node'),
            'expect_gdr': bool(validation.get('nccl_expect_gdr', gpudirect != 'none')),
            'nccl_min_busbw_pct': validation.get('nccl_min_busbw_pct')}


def _checks(mode, group, subnets=None, gateways=None):
    """What the in-pod checks expect of a group's pods."""
    if mode == 'spiderpool':
        count = len(group['resources'])
        return {'mode': mode, 'interfaces': count, 'subnets': list(subnets or []), 'gateways': list(gateways or []),
                'policy_routes': True, 'rdma_devices': count, 'hcas': [], 'resources': list(group['resources'])}
    if mode == 'hostdev':
        count = len(group.get('networks') or []) or 1
        return {'mode': mode, 'interfaces': count, 'subnets': [], 'gateways': [], 'policy_routes': False,
                'rdma_devices': 1, 'hcas': [], 'resources': list(group['resources'])}
    return {'mode': 'shared', 'interfaces': 0, 'subnets': [], 'gateways': [], 'policy_routes': False,
            'rdma_devices': len(group.get('hcas') or []), 'hcas': list(group.get('hcas') or []),
            'resources': list(group['resources'])}


def validation_groups(network_operator_result, spiderpool_result, ports_by_host, extra=None, fabrics=None):
    """What each RDMA group's pods request and what their checks expect, from the cluster stage's records, the hosts'
    ports and the groups' fabrics (``gpunet.rdma.fabrics``' ``groups``).

    ``[{group, mode, resources, hosts, device, hcas, link_layer, annotations, networks, checks, line_rate_gbps,
    gpus_per_node, expect_gdr, nccl_min_busbw_pct}]``: one entry per Network Operator resource (mode ``shared``), one
    for the Spiderpool group (mode ``spiderpool``: all its per-GPU resources and networks), one per group whose fabric
    says ``kubernetes: sriov`` (mode ``hostdev``: the SR-IOV device plugin's resource, the networks of its fabric's
    ``validation.networks``; the device is the pod's own VF), then ``extra``.
    """
    fabrics = fabrics or {}
    groups = []
    for resource in (network_operator_result or {}).get('resources') or []:
        hosts = list(resource.get('hosts') or [])
        ports = _devices(ports_by_host.get(hosts[0]) if hosts else [], resource.get('if_names') or [])
        if not ports:
            continue
        group = {'group': resource['group'], 'mode': 'shared', 'resources': [resource['resource']], 'hosts': hosts,
                 'device': ports[0]['device'], 'hcas': sorted(set(p['device'] for p in ports)),
                 'link_layer': ports[0].get('link_layer'), 'annotations': {}, 'networks': []}
        group.update(_fabric_settings(fabrics.get(resource['group'])))
        group['checks'] = _checks('shared', group)
        groups.append(group)
    spider = (spiderpool_result or {}).get('resources') or []
    if spider:
        hosts = sorted(set(h for r in spider for h in r.get('hosts') or []))
        if_names = [name for r in spider for name in r.get('if_names') or []]
        ports = _devices(ports_by_host.get(hosts[0]) if hosts else [], if_names)
        if ports:
            by_netdev = dict((p['netdev'], p) for p in ports)
            networks = [r['network'] for r in spider if r.get('network')]
            fabric = fabrics.get(spider[0]['group']) or {}
            pools = dict((p.get('gpu'), p) for p in (fabric.get('spiderpool') or {}).get('ip_pools') or []
                         if isinstance(p, dict))
            group = {'group': spider[0]['group'], 'mode': 'spiderpool', 'resources': [r['resource'] for r in spider],
                     'hosts': hosts, 'device': by_netdev.get(if_names[0], ports[0])['device'],
                     'hcas': [by_netdev[n]['device'] for n in if_names if n in by_netdev],
                     'link_layer': 'Ethernet', 'networks': networks,
                     'annotations': networks_annotation(networks) if networks else {}}
            group.update(_fabric_settings(fabric))
            group['checks'] = _checks('spiderpool', group, [r.get('subnet') for r in spider],
                                      [(pools.get(r.get('gpu')) or {}).get('gateway') for r in spider])
            groups.append(group)
    for name, fabric in sorted(fabrics.items()):
        if (fabric or {}).get('kubernetes') != 'sriov' or not fabric.get('rdma_resource'):
            continue
        networks = list((fabric.get('validation') or {}).get('networks') or [])
        group = {'group': name, 'mode': 'hostdev', 'resources': [fabric['rdma_resource']],
                 'hosts': list(fabric.get('hosts') or []), 'device': None, 'hcas': [],
                 'link_layer': fabric.get('link_layer'), 'networks': networks,
                 'annotations': networks_annotation(networks) if networks else {}}
        group.update(_fabric_settings(fabric))
        group['checks'] = _checks('hostdev', group)
        groups.append(group)
    for item in extra or []:
        group = dict({'annotations': {}, 'hosts': [], 'hcas': [], 'networks': [], 'mode': 'shared'}, **item)
        if group.get('networks') and not group['annotations']:
            group['annotations'] = networks_annotation(group['networks'])
        group.update(dict((k, v) for k, v in _fabric_settings(fabrics.get(group['group'])).items()
                          if k not in item))
        group['checks'] = _checks(group['mode'], group)
        groups.append(group)
    return groups


# ------------------------------------------------------------------ in-pod checks, read back from the pod's log

_SECONDARY = re.compile(r'^net\d+$')
_ADDR_HEAD = re.compile(r'^\d+:\s+(?P<name>[^:@\s]+)(?:@\S+)?:\s+<(?P<flags>[^>]*)>(?P<rest>.*)$')
_ADDR_INET = re.compile(r'^\s+inet6?\s+(?P<cidr>\S+)')
_RULE = re.compile(r'^(?P<priority>\d+):\s+(?P<selector>.*?)\s+(?:lookup|table)\s+(?P<table>\S+)')


def pod_sections(log):
    """The in-pod checks' outputs by command (``ip -j addr``, ``ip rule``, ``ip route show table 100``, ``rdma link``,
    ``env``); the rest of the log (ulimit, perftest) under ``''``."""
    sections, current = {'': []}, ''
    for line in (log or '').splitlines():
        if line.startswith(MARK):
            current = line[len(MARK):].strip()
            if current == 'end':
                current = ''
            sections.setdefault(current, [])
            continue
        sections.setdefault(current, []).append(line)
    return dict((name, '\n'.join(lines)) for name, lines in sections.items())


def parse_ip_addr(text):
    """``ip -j addr`` (JSON) or ``ip addr`` (text): ``[{name, state, flags, addresses: ['a.b.c.d/n', ...]}]``."""
    stripped = (text or '').strip()
    if stripped.startswith('['):
        try:
            data = json.loads(stripped)
        except ValueError:
            return None
        if not isinstance(data, list):
            return None
        interfaces = []
        for entry in data:
            if not isinstance(entry, dict) or not isinstance(entry.get('ifname'), str):
                return None
            addresses = ['%s/%s' % (a.get('local'), a.get('prefixlen')) for a in entry.get('addr_info') or []
                         if isinstance(a, dict) and a.get('local')]
            interfaces.append({'name': entry['ifname'], 'state': entry.get('operstate'),
                               'flags': list(entry.get('flags') or []), 'addresses': addresses})
        return interfaces
    interfaces = []
    for line in stripped.splitlines():
        head = _ADDR_HEAD.match(line.strip())
        if head:
            state = re.search(r'\sstate (\S+)', head.group('rest'))
            interfaces.append({'name': head.group('name'), 'state': state.group(1) if state else None,
                               'flags': head.group('flags').split(','), 'addresses': []})
            continue
        inet = _ADDR_INET.match(line)
        if inet and interfaces:
            interfaces[-1]['addresses'].append(inet.group('cidr'))
    return interfaces if interfaces else None


def parse_ip_rules(text):
    """``ip rule``: ``[{priority, from, table}]`` (``from`` is ``all`` or an address)."""
    rules = []
    for line in (text or '').splitlines():
        match = _RULE.match(line.strip())
        if not match:
            continue
        words = match.group('selector').split()
        source = words[words.index('from') + 1] if 'from' in words and words.index('from') + 1 < len(words) else None
        rules.append({'priority': int(match.group('priority')), 'from': source, 'table': match.group('table')})
    return rules


def parse_routes(text):
    """``ip route show table N``: ``[{dst, via, dev}]``."""
    routes = []
    for line in (text or '').splitlines():
        words = line.split()
        if not words or words[0] in ('Error:', 'RTNETLINK'):
            continue
        fields = dict(zip(words[1::2], words[2::2])) if len(words) > 1 else {}
        routes.append({'dst': words[0], 'via': fields.get('via'), 'dev': fields.get('dev')})
    return routes


def parse_rdma_links(text):
    """``rdma link`` lines (what is not a link line - an author's ``.....``, an error - is skipped)."""
    wanted = [line for line in (text or '').splitlines() if re.match(r'^\s*(?:link\s|\d+/\d+:)', line)]
    if not wanted:
        return []
    try:
        ports, _devices = parse_rdma_link('\n'.join(wanted))
    except RdmaParseError:
        return []
    return [{'device': p['device'], 'port': p['port'], 'state': p.get('state'), 'netdev': p.get('netdev')}
            for p in ports]


def _in_subnet(cidr, subnet):
    try:
        return ipaddress.ip_interface(cidr).ip in ipaddress.ip_network(subnet, strict=False)
    except ValueError:
        return False


def _ipv4(addresses):
    return [a for a in addresses if ':' not in a]


def pod_checks(log, pod=None, checks=None, name=None):
    """Judge one validation pod's in-pod checks against what its group expects (``checks`` of
    :func:`validation_groups`) and the pod as the API server stored it (``pod``: its resources and annotations).

    Returns ``{pod, mode, ok, problem, problems, interfaces, rules, routes, rdma, resources, injected, env}``.
    """
    checks = checks or {}
    sections = pod_sections(log)
    problems = []
    pod_name = name or ((pod or {}).get('metadata') or {}).get('name')
    mode = checks.get('mode') or 'shared'
    if 'ip -j addr' not in sections:
        problems.append('the log holds no in-pod checks (the pod did not start its command, or its image lacks a '
                        'shell): kubectl logs %s' % (pod_name or 'the pod'))
    interfaces = parse_ip_addr(sections.get('ip -j addr')) or []
    if 'ip -j addr' in sections and not interfaces:
        problems.append('ip addr printed nothing readable: the image needs iproute2 (ip): %s'
                        % (sections.get('ip -j addr') or '')[:120].strip())
    secondary = [i for i in interfaces if _SECONDARY.match(i['name'])]
    with_address = [i for i in secondary if _ipv4(i['addresses'])]
    wanted = int(checks.get('interfaces') or 0)
    if interfaces and len(with_address) < wanted:
        problems.append('expected %d secondary interfaces with an IPv4 address (net1..net%d), found %d%s: the %s '
                        'did not attach them (the pod\'s k8s.v1.cni.cncf.io/networks annotation and the Multus / '
                        'Spiderpool logs say why)' % (
                            wanted, wanted, len(with_address),
                            (' (%s)' % ', '.join(i['name'] for i in with_address)) if with_address else '',
                            'macvlan networks' if mode == 'spiderpool' else 'host device network'))
    by_name = dict((i['name'], i) for i in secondary)
    for index, subnet in enumerate(checks.get('subnets') or []):
        interface = by_name.get('net%d' % (index + 1))
        if not subnet or interface is None or not _ipv4(interface['addresses']):
            continue
        if not any(_in_subnet(a, subnet) for a in _ipv4(interface['addresses'])):
            problems.append('net%d has %s, outside its pool\'s subnet %s: the networks annotation and the pools are '
                            'in another order' % (index + 1, ', '.join(_ipv4(interface['addresses'])), subnet))
    rules = parse_ip_rules(sections.get('ip rule'))
    routes = dict((key[len('ip route show table '):], parse_routes(text)) for key, text in sections.items()
                  if key.startswith('ip route show table '))
    if checks.get('policy_routes') and interfaces:
        gateways = checks.get('gateways') or []
        for index, interface in enumerate(with_address):
            for cidr in _ipv4(interface['addresses']):
                address = cidr.split('/')[0]
                rule = [r for r in rules if r['from'] in (address, cidr)]
                if not rule:
                    problems.append('no policy route for %s (%s): no ip rule "from %s lookup <table>", so replies to '
                                    'it leave by the default interface; Spiderpool\'s coordinator tunes these routes '
                                    '(its logs say why it did not)' % (address, interface['name'], address))
                    continue
                table = rule[0]['table']
                default = [r for r in routes.get(table) or [] if r['dst'] == 'default']
                if not default:
                    problems.append('table %s of %s (%s) has no default route' % (table, address, interface['name']))
                    continue
                if default[0]['dev'] != interface['name'] or not default[0]['via'] or not _in_subnet(
                        default[0]['via'], cidr):
                    problems.append('table %s of %s has "default via %s dev %s", not a gateway of %s on %s' % (
                        table, address, default[0]['via'], default[0]['dev'], cidr, interface['name']))
                    continue
                number = int(interface['name'][3:]) - 1
                gateway = gateways[number] if number < len(gateways) else None
                if gateway and default[0]['via'] != gateway:
                    problems.append('table %s of %s goes via %s, not the pool\'s gateway %s' % (
                        table, address, default[0]['via'], gateway))
    rdma = parse_rdma_links(sections.get('rdma link'))
    if 'rdma link' in sections:
        active = [r for r in rdma if r['state'] == 'ACTIVE']
        if mode in ('spiderpool', 'hostdev'):
            mine = [r for r in active if r['netdev'] in by_name]
            if len(mine) < int(checks.get('rdma_devices') or 0):
                problems.append('rdma link shows %d ACTIVE RDMA devices on the pod\'s interfaces (%s), %d expected: '
                                'the RDMA subsystem must be in shared netns mode for macvlan, exclusive for SR-IOV '
                                'VFs, and the device plugin must hand the device to the pod' % (
                                    len(mine), ', '.join('%s/%d %s' % (r['device'], r['port'], r['netdev'])
                                                         for r in mine) or 'none',
                                    int(checks.get('rdma_devices') or 0)))
        else:
            seen = set(r['device'] for r in active)
            missing = [h for h in checks.get('hcas') or [] if h not in seen]
            if missing:
                problems.append('rdma link in the pod shows no ACTIVE %s: the shared device plugin did not hand '
                                'them to the pod (its resource request, /dev/infiniband)' % ', '.join(missing))
    containers = ((pod or {}).get('spec') or {}).get('containers') or []
    limits = dict(((containers[0].get('resources') or {}).get('limits') or {}) if containers else {})
    annotations = ((pod or {}).get('metadata') or {}).get('annotations') or {}
    injected = any(k.startswith('cni.spidernet.io/') and k.endswith('-inject') for k in annotations)
    if pod is not None:
        missing = [r for r in checks.get('resources') or [] if r not in limits]
        if missing:
            problems.append('the pod as stored lacks %s in its limits%s' % (
                ', '.join(missing), ': Spiderpool\'s webhook did not inject them (podResourceInject enabled? the '
                'namespace included? a SpiderMultusConfig with the same annotation?)' if injected else ''))
        if injected and mode == 'spiderpool' and 'k8s.v1.cni.cncf.io/networks' not in annotations:
            problems.append('the pod as stored has no k8s.v1.cni.cncf.io/networks: Spiderpool\'s webhook did not '
                            'inject the networks')
    env = sorted(line.split('=', 1)[0] for line in (sections.get('env') or '').splitlines() if '=' in line)
    if mode == 'hostdev' and 'env' in sections and not [e for e in env if e.startswith('PCIDEVICE_')]:
        problems.append('no PCIDEVICE_* variable in the pod: the SR-IOV device plugin allocated no VF to it')
    return {'pod': pod_name, 'mode': mode, 'ok': not problems, 'problem': '; '.join(problems) or None,
            'problems': problems,
            'interfaces': [{'name': i['name'], 'addresses': _ipv4(i['addresses'])} for i in secondary],
            'rules': len([r for r in rules if r['from'] not in (None, 'all')]), 'routes': sorted(routes),
            'rdma': rdma, 'resources': dict((k, str(v)) for k, v in sorted(limits.items())),
            'injected': injected, 'env': env}


def hostdev_allocatable(groups, nodes):
    """Per node of each hostdev group: the SR-IOV device plugin's resource in the node's allocatable (what the
    InfiniBand field report reads with ``kubectl get nodes -o json | jq``). ``[{node, group, resource, allocatable,
    ok, problem}]``."""
    by_name = dict((((n or {}).get('metadata') or {}).get('name'), n) for n in nodes or [] if isinstance(n, dict))
    rows = []
    for group in groups or []:
        if group.get('mode') != 'hostdev':
            continue
        for resource in group.get('resources') or []:
            for host in group.get('hosts') or []:
                node = by_name.get(host) or by_name.get(str(host).split('.', maxsplit=1)[0])
                row = {'node': host, 'group': group['group'], 'resource': resource, 'allocatable': None, 'ok': False,
                       'problem': None}
                if node is None:
                    row['problem'] = '%s: no Kubernetes node of that name' % host
                    rows.append(row)
                    continue
                row['node'] = node['metadata']['name']
                value = ((node.get('status') or {}).get('allocatable') or {}).get(resource)
                row['allocatable'] = None if value is None else str(value)
                if value is None or str(value) in ('0', ''):
                    row['problem'] = ('%s: no %s in allocatable: the SR-IOV device plugin found no VF of its selectors '
                                      '(sriovDevicePlugin config: vendors, isRdma, pfNames; SR-IOV enabled and VFs '
                                      'created in the firmware)' % (row['node'], resource))
                else:
                    row['ok'] = True
                rows.append(row)
    return rows
