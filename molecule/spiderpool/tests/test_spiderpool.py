# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the kube-apiserver double holds after converge, idempotence and check, read through its REST API.

The expected netdevs come from the nodes' sysfs fixture trees, the pools from the fabric in molecule.yml; every
count covers the three runs.
"""

from __future__ import annotations

import base64
import gzip
import json
import os

import kubernetes
import pytest

EPHEMERAL = os.environ['MOLECULE_EPHEMERAL_DIRECTORY']
STATE = os.path.join(EPHEMERAL, 'kube-apiserver')
GROUP, VERSION = 'spiderpool.spidernet.io', 'v2beta1'
NODES = ['sp-roce-01', 'sp-roce-02']


@pytest.fixture(scope='module')
def client():
    return kubernetes.config.new_client_from_config(os.path.join(STATE, 'kubeconfig'))


def netdev_of(pci_address, node='sp-roce-01'):
    """The netdev the node's sysfs tree gives the PCI function (what discovery read)."""
    names = os.listdir(os.path.join(EPHEMERAL, 'nodes', node, 'sys', 'bus', 'pci', 'devices', pci_address, 'net'))
    assert len(names) == 1, names
    return names[0]


def netdev_named(name, node='sp-roce-01'):
    assert os.path.islink(os.path.join(EPHEMERAL, 'nodes', node, 'sys', 'class', 'net', name))
    return name


def custom(client, plural, name, namespace=None):
    api = kubernetes.client.CustomObjectsApi(client)
    if namespace:
        return api.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
    return api.get_cluster_custom_object(GROUP, VERSION, plural, name)


def audit():
    with open(os.path.join(STATE, 'audit.jsonl')) as handle:
        return [json.loads(line) for line in handle]


def release(client, revision):
    secret = kubernetes.client.CoreV1Api(client).read_namespaced_secret(
        'sh.helm.release.v1.spiderpool.v%d' % revision, 'spiderpool')
    # helm's storage: base64 of the gzipped JSON release, inside the Secret's own base64
    return secret, json.loads(gzip.decompress(base64.b64decode(base64.b64decode(secret.data['release']))))


def expected_device_config():
    return [{'resourcePrefix': 'spidernet.io', 'resourceName': 'shared_cx5_gpu1', 'rdmaHcaMax': 100,
             'selectors': {'ifNames': [netdev_named('enp11s0f0np0')]}},
            {'resourcePrefix': 'spidernet.io', 'resourceName': 'shared_cx5_gpu2', 'rdmaHcaMax': 100,
             'selectors': {'ifNames': [netdev_of('0000:0c:00.0')]}}]


def test_one_ip_pool_per_gpu_from_the_fabric(client):
    gpu1 = custom(client, 'spiderippools', 'gpu1-net11')['spec']
    assert (gpu1['subnet'], gpu1['gateway'], gpu1['ips']) == ('172.16.11.0/24', '172.16.11.254',
                                                              ['172.16.11.1-172.16.11.200'])
    gpu2 = custom(client, 'spiderippools', 'gpu2-net12')['spec']
    assert (gpu2['subnet'], gpu2['gateway'], gpu2['excludeIPs']) == ('172.16.12.0/24', '172.16.12.254',
                                                                     ['172.16.12.100'])


@pytest.mark.parametrize('gpu, pool, master', [
    (1, 'gpu1-net11', lambda: netdev_named('enp11s0f0np0')),
    (2, 'gpu2-net12', lambda: netdev_of('0000:0c:00.0')),
])
def test_one_macvlan_network_per_gpu_on_its_nic(client, gpu, pool, master):
    spec = custom(client, 'spidermultusconfigs', 'gpu%d-macvlan' % gpu, 'spiderpool')['spec']
    assert spec['cniType'] == 'macvlan'
    assert spec['macvlan']['master'] == [master()]
    assert spec['macvlan']['rdmaResourceName'] == 'spidernet.io/shared_cx5_gpu%d' % gpu
    assert spec['macvlan']['ippools']['ipv4'] == [pool]


def test_the_chart_was_installed_once_with_the_device_plugin_resources(client):
    secret, first = release(client, 1)
    assert secret.metadata.labels['status'] == 'deployed'
    assert (first['chart']['metadata']['name'], first['chart']['metadata']['version']) == ('spiderpool', '1.2.2')
    plugin = first['config']['rdma']['rdmaSharedDevicePlugin']
    assert plugin['install'] is True
    assert plugin['deviceConfig']['configList'] == expected_device_config()
    with pytest.raises(kubernetes.client.ApiException) as missing:
        release(client, 2)  # idempotence and check upgraded nothing
    assert missing.value.status == 404


def test_helm_rendered_the_device_plugin_config(client):
    config = kubernetes.client.CoreV1Api(client).read_namespaced_config_map(
        'spiderpool-rdma-shared-device-plugin', 'spiderpool')
    assert json.loads(config.data['config.json'])['configList'] == expected_device_config()


def test_every_node_reports_both_resources(client):
    for node in kubernetes.client.CoreV1Api(client).list_node().items:
        assert node.metadata.name in NODES
        for gpu in (1, 2):
            assert node.status.allocatable['spidernet.io/shared_cx5_gpu%d' % gpu] == '100', node.metadata.name


def test_calico_autodetects_the_node_address_and_keeps_its_other_settings(client):
    calico = kubernetes.client.AppsV1Api(client).read_namespaced_daemon_set('calico-node', 'kube-system')
    env = [(e.name, e.value) for e in calico.spec.template.spec.containers[0].env]
    assert env == [('CALICO_NETWORKING_BACKEND', 'bird'), ('IP_AUTODETECTION_METHOD', 'kubernetes-internal-ip'),
                   ('FELIX_IPINIPMTU', '1440')]
    assert calico.spec.template.spec.containers[0].image == 'docker.io/calico/node:v3.28.0'
    assert calico.metadata.generation == 2  # changed once in three runs


def test_the_controller_was_restarted_once_after_the_install(client):
    controller = kubernetes.client.AppsV1Api(client).read_namespaced_deployment('spiderpool-controller', 'spiderpool')
    assert 'gpunet.rdma/restarted-at' in controller.spec.template.metadata.annotations
    assert controller.metadata.generation == 2
    events = audit()
    install = [i for i, e in enumerate(events) if e['verb'] == 'create' and e['objectRef']['resource'] == 'secrets']
    restart = [i for i, e in enumerate(events) if e['verb'] == 'patch' and
               e['objectRef'].get('name') == 'spiderpool-controller']
    assert len(install) == 1 and len(restart) == 1 and install[0] < restart[0]


def test_the_check_run_only_sent_dry_runs():
    writes = [e for e in audit() if e['verb'] in ('create', 'update', 'patch', 'delete')]
    pools = [e['requestURI'] for e in writes if e['objectRef']['resource'] == 'spiderippools']
    # converge and idempotence applied each pool (server-side apply, the second a no-op); check only dry runs
    assert len([uri for uri in pools if 'dryRun=All' not in uri]) == 4
    assert custom(kubernetes.config.new_client_from_config(os.path.join(STATE, 'kubeconfig')),
                  'spiderippools', 'gpu1-net11')['metadata']['generation'] == 1
