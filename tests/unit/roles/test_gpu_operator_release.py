# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The GPU Operator release a cluster already has: installed by "the admin" with the real helm 3 (make helm) into the
kube-apiserver double with values of their own, then read by the gpudirect role's gpu_operator_values entry point.
Without the adopt variable nothing changes and the keys are named; with it, the release keeps its chart version and
its own values and gets driver.rdma merged on top (a new revision)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
HELM = os.path.join(REPO, '.build', 'bin', 'helm')
sys.path.insert(0, os.path.join(REPO, 'tests', 'doubles'))

import kube_apiserver  # noqa: E402  pylint: disable=wrong-import-position

ADMIN_VALUES = {'driver': {'enabled': True, 'version': '550.90.07'}, 'toolkit': {'enabled': True},
                'operator': {'defaultRuntime': 'containerd'}}
PLAY = '''
- name: The GPU Operator values from the fleet, as site.yml's cluster stage runs them
  hosts: localhost
  connection: local
  gather_facts: false
  module_defaults:
    group/kubernetes.core.helm:
      kubeconfig: "{{ kubeconfig }}"
      binary_path: "{{ helm_binary }}"
  tasks:
    - name: A GPU node in GPU Operator mode, as the gpudirect stage records it
      gpunet.rdma.ledger:
        stage: gpudirect
        detail: {host: gpu-a100-01, mode: gpu_operator, ofed_installed: true, gdrcopy: false, use_host_mofed: auto}
      delegate_to: gpu-a100-01
      delegate_facts: true

    - name: The entry point
      ansible.builtin.include_role:
        name: gpunet.rdma.gpudirect
        tasks_from: gpu_operator_values.yml
      vars:
        gpudirect_gpu_operator_release_name: gpu-operator
        gpudirect_gpu_operator_chart_ref: "{{ chart_dir }}"
'''


def helm(kubeconfig, *args):
    result = subprocess.run([HELM, '--kubeconfig', kubeconfig] + list(args), capture_output=True, text=True,
                            check=False, env=dict(os.environ, HELM_CACHE_HOME='/tmp/helm-cache-gpunet'))
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    base = tmp_path_factory.mktemp('gpu-operator-release')
    chart = base / 'gpu-operator'
    (chart / 'templates').mkdir(parents=True)
    (chart / 'Chart.yaml').write_text('apiVersion: v2\nname: gpu-operator\nversion: v24.9.2\nappVersion: v24.9.2\n')
    (chart / 'values.yaml').write_text('driver:\n  enabled: true\n  rdma:\n    enabled: false\n    useHostMofed: false\n')
    (chart / 'templates' / 'config.yaml').write_text(
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gpu-operator-settings\ndata:\n'
        '  rdma: "{{ .Values.driver.rdma.enabled }}"\n')
    api = kube_apiserver.FakeApiServer(tls=True).start()
    api.add('v1', 'namespaces', {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'gpu-operator'}})
    kubeconfig = api.kubeconfig(str(base / 'kubeconfig'))
    values = base / 'admin-values.yaml'
    values.write_text(yaml.safe_dump(ADMIN_VALUES))
    helm(kubeconfig, 'install', 'gpu-operator', str(chart), '-n', 'gpu-operator', '-f', str(values))
    (base / 'play.yml').write_text(PLAY)
    (base / 'hosts.yml').write_text(yaml.safe_dump({'all': {'hosts': {'gpu-a100-01': None}, 'vars': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}))
    yield api, base, kubeconfig, chart
    api.stop()


def run(base, kubeconfig, chart, extra=None):
    extra_vars = dict(kubeconfig=kubeconfig, helm_binary=HELM, chart_dir=str(chart), **(extra or {}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'),
               HELM_CACHE_HOME='/tmp/helm-cache-gpunet')
    result = subprocess.run(['ansible-playbook', '-i', str(base / 'hosts.yml'), str(base / 'play.yml'),
                             '-e', json.dumps(extra_vars)], capture_output=True, text=True, env=env, check=False)
    return result.returncode, ' '.join((result.stdout + result.stderr).split())


def release(kubeconfig):
    [listed] = json.loads(helm(kubeconfig, 'list', '-n', 'gpu-operator', '-o', 'json'))
    values = json.loads(helm(kubeconfig, 'get', 'values', 'gpu-operator', '-n', 'gpu-operator', '-o', 'json'))
    return int(listed['revision']), listed['chart'], values


def test_the_release_is_left_alone_until_adopted_then_keeps_its_own_values(cluster):
    api, base, kubeconfig, chart = cluster
    code, output = run(base, kubeconfig, chart)
    assert code != 0
    assert ('The helm release gpu-operator/gpu-operator exists (chart gpu-operator-v24.9.2, status deployed) and this '
            'run would set .driver.rdma.enabled, .driver.rdma.useHostMofed, .gdrcopy.enabled. Nothing was changed. '
            'Set gpudirect_gpu_operator_adopt_release: true') in output, output
    assert release(kubeconfig) == (1, 'gpu-operator-v24.9.2', ADMIN_VALUES)

    code, output = run(base, kubeconfig, chart, {'gpudirect_gpu_operator_adopt_release': True})
    assert code == 0, output
    revision, version, values = release(kubeconfig)
    assert (revision, version) == (2, 'gpu-operator-v24.9.2')
    assert values == {'driver': {'enabled': True, 'version': '550.90.07',
                                 'rdma': {'enabled': True, 'useHostMofed': True}},
                      'toolkit': {'enabled': True}, 'operator': {'defaultRuntime': 'containerd'},
                      'gdrcopy': {'enabled': False}}
    assert api.get('v1', 'configmaps', 'gpu-operator-settings', 'gpu-operator')['data'] == {'rdma': 'true'}

    # Converged: the release holds every key, nothing to adopt, no new revision even without the variable.
    code, output = run(base, kubeconfig, chart)
    assert code == 0, output
    assert release(kubeconfig)[0] == 2
