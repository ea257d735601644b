# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pod-level checks and workload templates, checked against the Kubernetes core schemas."""

from __future__ import annotations

import copy
import json
import os
import subprocess

from ansible_collections.gpunet.rdma.plugins.filter.validate import rdma_validation_manifests
from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._core_schema import validate_builtin
from ansible_collections.gpunet.rdma.plugins.plugin_utils._workloads import POD_GID_INDEX

V100_PORTS = [{'device': 'mlx5_0', 'port': 1, 'netdev': 'ibp94s0f0', 'state': 'ACTIVE', 'link_layer': 'InfiniBand',
               'rate_gbps': 100},
              {'device': 'mlx5_1', 'port': 1, 'netdev': 'ibp94s0f1', 'state': 'ACTIVE', 'link_layer': 'InfiniBand',
               'rate_gbps': 100}]
ROCE_PORTS = [{'device': 'mlx5_%d' % i, 'port': 1, 'netdev': 'enp%ds0f0np0' % (11 + i), 'state': 'ACTIVE',
               'link_layer': 'Ethernet', 'rate_gbps': 100} for i in range(8)]
NETWORK_OPERATOR = {'resources': [{'group': 'ib_v100', 'hosts': ['v1', 'v2'], 'resource': 'rdma/rdma_v100',
                                   'if_names': ['ibp94s0f0', 'ibp94s0f1']}]}
SPIDERPOOL = {'resources': [{'group': 'roce_a100', 'hosts': ['r1'], 'resource': 'spidernet.io/shared_cx5_gpu%d' % g,
                             'if_names': ['enp%ds0f0np0' % (10 + g)], 'network': 'spiderpool/gpu%d-macvlan' % g}
                            for g in range(1, 9)]}
PORTS = {'v1': V100_PORTS, 'v2': V100_PORTS, 'r1': ROCE_PORTS}
OPTIONS = {'image': 'ghcr.io/spidernet-io/rdma-tools:v12.5.7', 'workload_image': 'nvcr.io/nvidia/pytorch:24.07-py3'}


def build():
    return rdma_validation_manifests(NETWORK_OPERATOR, SPIDERPOOL, PORTS, OPTIONS)


def test_groups_come_from_the_cluster_stage_and_the_facts():
    groups = build()['groups']
    assert [(g['group'], g['device'], g['hcas'], g['link_layer']) for g in groups] == [
        ('ib_v100', 'mlx5_0', ['mlx5_0', 'mlx5_1'], 'InfiniBand'),
        ('roce_a100', 'mlx5_0', ['mlx5_%d' % i for i in range(8)], 'Ethernet')]
    assert len(groups[1]['resources']) == 8
    networks = json.loads(groups[1]['annotations']['k8s.v1.cni.cncf.io/networks'])
    assert networks[7] == {'name': 'gpu8-macvlan', 'namespace': 'spiderpool'}


def test_validation_pods_cross_nodes_with_ipc_lock_and_the_resources():
    pods = build()['pods']
    assert [(p['kind'], p['metadata']['name']) for p in pods[:3]] == [
        ('Service', 'rdma-validate-ib-v100'), ('Pod', 'rdma-validate-ib-v100-server'),
        ('Pod', 'rdma-validate-ib-v100-client')]
    client = pods[2]['spec']
    container = client['containers'][0]
    assert container['securityContext'] == {'capabilities': {'add': ['IPC_LOCK']}}
    assert container['resources']['limits'] == {'rdma/rdma_v100': 1}
    assert 'ulimit -l' in container['command'][2]
    assert container['command'][2].endswith(
        'exec ib_write_bw -d mlx5_0 -F --report_gbits -s 1048576 server.rdma-validate-ib-v100')
    assert client['affinity']['podAntiAffinity']['requiredDuringSchedulingIgnoredDuringExecution'][0][
        'topologyKey'] == 'kubernetes.io/hostname'
    assert pods[1]['spec']['hostname'] == 'server' and pods[1]['spec']['subdomain'] == 'rdma-validate-ib-v100'
    roce_client = pods[5]
    assert 'k8s.v1.cni.cncf.io/networks' in roce_client['metadata']['annotations']
    assert 'podAntiAffinity' not in roce_client['spec']['affinity']  # one node: both pods on it
    for obj in pods:
        assert validate_builtin(obj, '1.33') == [], obj['metadata']['name']


def test_workloads_carry_nccl_settings_and_valid_pod_templates():
    built = build()
    kinds = [(w['kind'], w['metadata']['name']) for w in built['workloads']]
    assert kinds == [('MPIJob', 'nccl-tests-ib-v100'), ('Job', 'vllm-rdma-ib-v100'),
                     ('MPIJob', 'nccl-tests-roce-a100'), ('Job', 'vllm-rdma-roce-a100')]
    worker = built['workloads'][0]['spec']['mpiReplicaSpecs']['Worker']['template']['spec']['containers'][0]
    assert {'name': 'NCCL_IB_DISABLE', 'value': '0'} in worker['env']
    assert {'name': 'NCCL_DEBUG', 'value': 'INFO'} in worker['env']
    assert {'name': 'NCCL_IB_HCA', 'value': 'mlx5_0,mlx5_1'} in worker['env']
    assert worker['resources']['limits'] == {'rdma/rdma_v100': 1, 'nvidia.com/gpu': 8}
    roce_worker = built['workloads'][2]['spec']['mpiReplicaSpecs']['Worker']['template']['spec']['containers'][0]
    # RoCE: NCCL chooses the GID (RoCE v2 of an IPv4 address), never a fixed index
    assert not [e for e in roce_worker['env'] if e['name'] == 'NCCL_IB_GID_INDEX']
    assert {'name': 'NCCL_IB_ROCE_VERSION_NUM', 'value': '2'} in roce_worker['env']
    assert {'name': 'NCCL_IB_ADDR_FAMILY', 'value': 'AF_INET'} in roce_worker['env']
    volcano = built['workloads'][1]['spec']
    assert volcano['schedulerName'] == 'volcano' and [t['name'] for t in volcano['tasks']] == ['master', 'worker']
    assert len(built['workload_pods']) == 8
    for pod in built['workload_pods']:
        assert validate_builtin(pod, '1.33') == [], pod['metadata']['name']


def test_extra_groups_without_a_cluster_stage():
    built = rdma_validation_manifests(None, None, {}, dict(OPTIONS, extra_groups=[
        {'group': 'ib_a100', 'resources': ['rdma/rdma_a100'], 'device': 'mlx5_1'}]))
    assert [p['metadata']['name'] for p in built['pods']] == [
        'rdma-validate-ib-a100', 'rdma-validate-ib-a100-server', 'rdma-validate-ib-a100-client']


def test_pod_gid_index_finds_the_pods_own_roce_v2_entry(tmp_path, hardware):
    """The shell function the RoCE validation pods run, against the lab's RoCE sysfs tree and an `ip` that prints
    what iproute2's `ip -4 -o addr show` prints in a pod with a macvlan interface."""
    root = hardware('roce_a100', tmp_path / 'sys')
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    ip = bindir / 'ip'
    ip.write_text('#!/bin/sh\n[ "$*" = "-4 -o addr show" ] || exit 2\n'
                  "printf '1: lo    inet 127.0.0.1/8 scope host lo\\\\       valid_lft forever preferred_lft forever\\n'\n"
                  "printf '3: net1    inet %s/16 brd 172.16.255.255 scope global net1\\\\       valid_lft forever "
                  "preferred_lft forever\\n' \"$POD_ADDRESS\"\n")
    ip.chmod(0o755)
    function = POD_GID_INDEX.replace('/sys/class/infiniband', os.path.join(root, 'class', 'infiniband'))

    def index(device, address):
        env = dict(os.environ, PATH='%s:%s' % (bindir, os.environ['PATH']), POD_ADDRESS=address)
        return subprocess.run(['sh', '-c', '%s gid_index %s' % (function, device)], capture_output=True, text=True,
                              env=env, check=True).stdout.strip()
    assert index('mlx5_0', '172.16.11.11') == '7'  # after the table's gap, not 3
    assert index('mlx5_1', '172.16.12.11') == '3'
    assert index('mlx5_1', '10.9.9.9') == ''  # not this pod's address: no index, perftest chooses


# ------------------------------------------------------------------ the NCCL job

FABRICS = {'ib_v100': {'name': 'ib_v100', 'link_layer': 'InfiniBand', 'line_rate_gbps': 100, 'hosts': ['v1', 'v2'],
                       'gpudirect': {}, 'validation': {'gpus_per_node': 4, 'nccl_min_busbw_pct': 80}},
           'roce_a100': {'name': 'roce_a100', 'link_layer': 'Ethernet', 'line_rate_gbps': 100, 'hosts': ['r1'],
                         'gpudirect': {'mode': 'none'},
                         'spiderpool': {'ip_pools': [{'gpu': g, 'gateway': '172.16.%d.254' % (10 + g)}
                                                     for g in range(1, 9)]}},
           'ib_sriov': {'name': 'ib_sriov', 'link_layer': 'InfiniBand', 'line_rate_gbps': 200, 'hosts': ['s1', 's2'],
                        'kubernetes': 'sriov', 'rdma_resource': 'nvidia.com/hostdev',
                        'validation': {'networks': ['crater-workspace/hostdevice-net']}}}
SPIDERPOOL_SUBNETS = dict(SPIDERPOOL, resources=[
    dict(r, gpu=i + 1, subnet='172.16.%d.0/24' % (11 + i)) for i, r in enumerate(SPIDERPOOL['resources'])])


def build_with_fabrics(**options):
    return rdma_validation_manifests(NETWORK_OPERATOR, SPIDERPOOL_SUBNETS, PORTS,
                                     dict(OPTIONS, fabrics=FABRICS, **options))


def test_groups_carry_the_fabrics_nccl_and_check_settings():
    groups = dict((g['group'], g) for g in build_with_fabrics()['groups'])
    assert list(groups) == ['ib_v100', 'roce_a100', 'ib_sriov']
    v100, roce, sriov = groups['ib_v100'], groups['roce_a100'], groups['ib_sriov']
    assert (v100['mode'], v100['gpus_per_node'], v100['expect_gdr'], v100['nccl_min_busbw_pct']) == (
        'shared', 4, True, 80)
    assert v100['checks'] == {'mode': 'shared', 'interfaces': 0, 'subnets': [], 'gateways': [], 'policy_routes': False,
                              'rdma_devices': 2, 'hcas': ['mlx5_0', 'mlx5_1'], 'resources': ['rdma/rdma_v100']}
    # GPUDirect mode none (a PVRDMA-like group): GDRDMA is not expected
    assert roce['expect_gdr'] is False and roce['checks']['interfaces'] == 8 and roce['checks']['policy_routes']
    assert roce['checks']['subnets'][0] == '172.16.11.0/24' and roce['checks']['gateways'][7] == '172.16.18.254'
    assert (sriov['mode'], sriov['device'], sriov['resources'], sriov['hosts']) == (
        'hostdev', None, ['nvidia.com/hostdev'], ['s1', 's2'])
    assert json.loads(sriov['annotations']['k8s.v1.cni.cncf.io/networks']) == [
        {'namespace': 'crater-workspace', 'name': 'hostdevice-net'}]


def test_nccl_job_runs_all_reduce_perf_one_rank_per_node_with_every_nccl_variable_exported():
    built = build_with_fabrics(nccl_image='ghcr.io/azure/aks-rdma-infiniband/nccl-tests:latest')
    job = built['nccl_jobs'][0]
    assert (job['kind'], job['apiVersion'], job['metadata']['name']) == ('MPIJob', 'kubeflow.org/v2beta1',
                                                                         'nccl-tests-ib-v100')
    spec = job['spec']
    assert spec['slotsPerWorker'] == 1 and spec['runPolicy'] == {'cleanPodPolicy': 'Running', 'backoffLimit': 0}
    worker = spec['mpiReplicaSpecs']['Worker']['template']['spec']
    container = worker['containers'][0]
    assert container['command'] == ['/usr/sbin/sshd', '-De']
    assert container['resources']['limits'] == {'rdma/rdma_v100': 1, 'nvidia.com/gpu': 4}
    assert worker['affinity']['podAntiAffinity']['requiredDuringSchedulingIgnoredDuringExecution'][0][
        'topologyKey'] == 'kubernetes.io/hostname'
    env = dict((e['name'], e['value']) for e in container['env'])
    assert env == {'NCCL_IB_DISABLE': '0', 'NCCL_DEBUG': 'INFO', 'NCCL_DEBUG_SUBSYS': 'INIT,NET',
                   'NCCL_IB_HCA': 'mlx5_0,mlx5_1', 'NCCL_ALGO': 'Ring'}
    launcher = spec['mpiReplicaSpecs']['Launcher']['template']['spec']['containers'][0]
    command = launcher['command'][2]
    assert launcher['image'] == 'ghcr.io/azure/aks-rdma-infiniband/nccl-tests:latest'
    assert command.endswith('/opt/nccl_tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 4')
    assert '-np 2 -npernode 1' in command
    for name in env:  # processes started over SSH get the environment only through mpirun -x
        assert '-x %s ' % name in command
    roce = dict((e['name'], e['value']) for e in built['nccl_jobs'][1]['spec']['mpiReplicaSpecs']['Worker'][
        'template']['spec']['containers'][0]['env'])
    assert roce['NCCL_IB_ROCE_VERSION_NUM'] == '2' and 'NCCL_IB_GID_INDEX' not in roce
    hostdev = dict((e['name'], e['value']) for e in built['nccl_jobs'][2]['spec']['mpiReplicaSpecs']['Worker'][
        'template']['spec']['containers'][0]['env'])
    assert 'NCCL_IB_HCA' not in hostdev  # a hostdev pod sees only its own VFs, whatever their names


def test_nccl_job_is_valid_against_the_mpi_operator_crd():
    """The MPIJob against the MPI Operator v0.8.0 CRD (tests/crds), unknown fields included."""
    import yaml
    from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._crd_schema import crd_index, validate_object
    path = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'crds', 'mpi-operator-v0.8.0',
                        'kubeflow.org_mpijobs.yaml')
    with open(path) as handle:
        index = crd_index(yaml.safe_load(handle))
    for job in build_with_fabrics()['nccl_jobs']:
        assert validate_object(job, index, 'v0.8.0') == [], job['metadata']['name']
    bad = copy.deepcopy(build_with_fabrics()['nccl_jobs'][0])
    bad['spec']['slotsPerNode'] = 1
    assert validate_object(bad, index, 'v0.8.0') == [
        'spec.slotsPerNode: field not declared by the MPIJob CRD of v0.8.0 (the API server would prune it)']


def test_spiderpool_injection_leaves_the_requests_to_the_webhook():
    built = build_with_fabrics(resource_inject={'group': 'rdma-network', 'annotation': 'rdma-resource-inject'})
    roce_client = [p for p in built['pods'] if p['metadata']['name'] == 'rdma-validate-roce-a100-client'][0]
    assert roce_client['metadata']['annotations'] == {'cni.spidernet.io/rdma-resource-inject': 'rdma-network'}
    assert 'resources' not in roce_client['spec']['containers'][0]
    v100_client = [p for p in built['pods'] if p['metadata']['name'] == 'rdma-validate-ib-v100-client'][0]
    assert v100_client['spec']['containers'][0]['resources']['limits'] == {'rdma/rdma_v100': 1}  # not Spiderpool


def test_hostdev_pods_find_their_vf():
    built = build_with_fabrics()
    client = [p for p in built['pods'] if p['metadata']['name'] == 'rdma-validate-ib-sriov-client'][0]
    command = client['spec']['containers'][0]['command'][2]
    assert '$NF == "net1"' in command and 'ib_write_bw -d "$D" -F --report_gbits -s 1048576' in command
    assert client['spec']['containers'][0]['resources']['limits'] == {'nvidia.com/hostdev': 1}
    for obj in built['pods'] + built['workload_pods']:
        assert validate_builtin(obj, '1.33') == [], obj['metadata']['name']


def test_groups_without_gpudirect_run_nccl_through_host_memory():
    # The VMware PVRDMA reference design runs its MPIJob with NCCL_IB_GDR_LEVEL=0: no peer memory in the guest.
    from ansible_collections.gpunet.rdma.plugins.plugin_utils._workloads import nccl_env
    no_gdr = dict((e['name'], e['value']) for e in nccl_env({'link_layer': 'Ethernet', 'expect_gdr': False}))
    assert no_gdr['NCCL_NET_GDR_LEVEL'] == 'LOC' and no_gdr['NCCL_IB_GDR_LEVEL'] == '0'
    assert no_gdr['NCCL_IB_DISABLE'] == '0' and no_gdr['NCCL_IB_ROCE_VERSION_NUM'] == '2'
    with_gdr = dict((e['name'], e['value']) for e in nccl_env({'link_layer': 'InfiniBand', 'expect_gdr': True}))
    assert 'NCCL_NET_GDR_LEVEL' not in with_gdr and 'NCCL_IB_GDR_LEVEL' not in with_gdr
    groups = dict((g['group'], g) for g in build_with_fabrics()['groups'])
    roce_env = dict((e['name'], e['value']) for e in nccl_env(groups['roce_a100']))
    assert roce_env['NCCL_NET_GDR_LEVEL'] == 'LOC'  # the fixture's roce group has GPUDirect mode none
