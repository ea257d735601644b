# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import os

import yaml

from ansible_collections.gpunet.rdma.plugins.modules import crd_validate

CRD = {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
       'spec': {'group': 'mellanox.com', 'names': {'kind': 'HostDeviceNetwork'}, 'versions': [
           {'name': 'v1alpha1', 'served': True, 'schema': {'openAPIV3Schema': {'type': 'object', 'properties': {
               'apiVersion': {'type': 'string'}, 'kind': {'type': 'string'}, 'metadata': {'type': 'object'},
               'spec': {'type': 'object', 'properties': {'resourceName': {'type': 'string'},
                                                         'ipam': {'type': 'string'}}}}}}}]}}


def network(**spec):
    return {'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'HostDeviceNetwork', 'metadata': {'name': 'net'},
            'spec': spec}


def test_valid_objects_from_a_crd_directory(tmp_path, run_module):
    (tmp_path / 'crds').mkdir()
    (tmp_path / 'crds' / 'hdn.yaml').write_text(yaml.safe_dump(CRD))
    code, result = run_module(crd_validate, {'objects': [network(resourceName='hostdev')],
                                             'crd_paths': [str(tmp_path / 'crds')]}, check_mode=True)
    assert code == 0 and result['changed'] is False and result['crd_count'] == 1
    assert result['checked'] == [{'kind': 'HostDeviceNetwork', 'name': 'net', 'problems': []}]


def test_problems_fail_with_every_finding(run_module):
    code, result = run_module(crd_validate, {'objects': [network(resourceName=3, resourcename='typo')], 'crds': [CRD],
                                             'release': 'network-operator v26.4.1'}, check_mode=True)
    assert code == 1
    assert result['msg'].startswith(
        'Objects do not match their schemas (CRDs of network-operator v26.4.1, Kubernetes 1.33): HostDeviceNetwork net:')
    assert "spec.resourceName: 3 is not of type 'string'" in result['msg']
    assert 'spec.resourcename: field not declared by the HostDeviceNetwork CRD' in result['msg']


def test_no_crd_found(tmp_path, run_module):
    (tmp_path / 'empty.yaml').write_text('kind: ConfigMap\n')
    code, result = run_module(crd_validate, {'objects': [network()], 'crd_paths': [str(tmp_path / 'empty.yaml')]},
                              check_mode=True)
    assert code == 1 and 'No CustomResourceDefinition found' in result['msg']


def daemonset(**container):
    return {'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'metadata': {'name': 'rdma-tools', 'namespace': 'default'},
            'spec': {'selector': {'matchLabels': {'app': 'rdma-tools'}},
                     'template': {'metadata': {'labels': {'app': 'rdma-tools'}},
                                  'spec': {'containers': [dict({'name': 'rdma-tools', 'image': 'rdma-tools:1'},
                                                               **container)]}}}}


def test_builtin_objects_need_no_crd(run_module):
    code, result = run_module(crd_validate, {'objects': [
        daemonset(resources={'limits': {'spidernet.io/shared_cx5_gpu1': 1}})]}, check_mode=True)
    assert code == 0 and result['crd_count'] == 0
    assert result['checked'] == [{'kind': 'DaemonSet', 'name': 'rdma-tools', 'problems': []}]


def test_builtin_objects_checked_strictly_next_to_custom_ones(run_module):
    code, result = run_module(crd_validate, {
        'objects': [network(resourceName='hostdev'), daemonset(securityContext={'capabilitys': {}})],
        'crds': [CRD], 'kubernetes_version': '1.30'}, check_mode=True)
    assert code == 1
    assert result['checked'][0]['problems'] == []
    assert result['checked'][1]['problems'] == [
        "spec.template.spec.containers.0.securityContext: Additional properties are not allowed "
        "('capabilitys' was unexpected)"]
    assert 'Kubernetes 1.30' in result['msg']


def test_unknown_kubernetes_release(run_module):
    code, result = run_module(crd_validate, {'objects': [daemonset()], 'kubernetes_version': '0.1'}, check_mode=True)
    assert code == 1 and 'no schemas for Kubernetes 0.1 in kubernetes-validate' in result['msg']


def test_a_release_folder_of_the_repository(upstream_crds, run_module):
    """The folder holds the chart's values too: files without a CRD are skipped, the five CRDs are read."""
    code, result = run_module(crd_validate, {'objects': [network(resourceName='hostdev', networkNamespace='default')],
                                             'crd_paths': [os.path.join(upstream_crds, 'network-operator-v26.4.1')]},
                              check_mode=True)
    assert code == 0 and result['crd_count'] == 5, result


def test_crds_documents_from_the_cluster_with_status(run_module):
    installed = dict(CRD, metadata={'name': 'hostdevicenetworks.mellanox.com', 'resourceVersion': '7'},
                     status={'acceptedNames': {'kind': 'HostDeviceNetwork'}, 'storedVersions': ['v1alpha1']})
    code, result = run_module(crd_validate, {'objects': [network(resourceName='hostdev')], 'crds': [installed]},
                              check_mode=True)
    assert code == 0 and result['crd_count'] == 1


def test_every_object_of_a_run_is_reported(run_module):
    code, result = run_module(crd_validate, {'objects': ['text', network(resourceName='hostdev'), {'apiVersion': 'v1'}],
                                             'crds': [CRD]}, check_mode=True)
    assert code == 1
    assert [(c['kind'], c['name']) for c in result['checked']] == [('?', '?'), ('HostDeviceNetwork', 'net'),
                                                                   ('?', '?')]
    assert result['checked'][0]['problems'][0].startswith('not a mapping but a string')
    assert result['checked'][1]['problems'] == []
    assert result['checked'][2]['problems'] == ['kind: missing; every Kubernetes object has one']


def test_builtin_problems_are_all_reported(run_module):
    code, result = run_module(crd_validate, {'objects': [
        daemonset(securityContext={'capabilitys': {}}, ports=[{'containerPort': 'x'}])]}, check_mode=True)
    assert code == 1
    assert result['checked'][0]['problems'] == [
        "spec.template.spec.containers.0.ports.0.containerPort: 'x' is not of type 'integer'",
        "spec.template.spec.containers.0.securityContext: Additional properties are not allowed "
        "('capabilitys' was unexpected)"]
