# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpunet.rdma.apply_plan and gpunet.rdma.release_plan: objects and releases a cluster already has, read before writing.
The managedFields come from the Kubernetes documentation's own examples (fixtures/public/managed_fields); the
expected conflicts are the ones that documentation states, written by hand."""

from __future__ import annotations

import copy
import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.filter.ownership import (
    rdma_apply_plan, rdma_gitops_kept, rdma_release_plan)

PUBLIC = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'public', 'managed_fields')


def public(name):
    with open(os.path.join(PUBLIC, name)) as handle:
        return yaml.safe_load(handle)


def config_map(**data):
    return {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'test-cm', 'namespace': 'default'},
            'data': data}


def test_a_field_another_manager_updated_is_a_conflict():
    """The documentation: "If this update has instead been attempted using Server-Side Apply, the request would
    have failed due to conflicting ownership." """
    live = public('k8s-docs-ssa-multiple-managers.yaml')
    [entry] = rdma_apply_plan([config_map(key='our value')], [live], 'gpunet.rdma')
    assert entry['action'] == 'refuse'
    assert entry['conflicts'] == [{'manager': 'kube-controller-manager', 'operation': 'Update', 'field': '.data.key'}]
    assert entry['reason'] == ('fields owned by another field manager: conflict with "kube-controller-manager" using '
                               'v1: .data.key')
    assert entry['changes'] == [{'field': '.data.key', 'live': 'new value', 'wanted': 'our value'}]


def test_the_same_value_is_shared_not_a_conflict():
    live = public('k8s-docs-ssa-multiple-managers.yaml')
    [entry] = rdma_apply_plan([config_map(key='new value')], [live], 'gpunet.rdma')
    assert (entry['action'], entry['conflicts'], entry['changes']) == ('unchanged', [], [])


def test_a_label_another_applier_owns_and_a_new_field_nobody_owns():
    live = public('k8s-docs-ssa-multiple-managers.yaml')
    wanted = config_map(key='new value', other='x')
    [entry] = rdma_apply_plan([wanted], [live], 'gpunet.rdma')
    assert (entry['action'], entry['conflicts']) == ('apply', [])  # .data.other belongs to nobody
    wanted['metadata']['labels'] = {'test-label': 'ours'}
    [entry] = rdma_apply_plan([wanted], [live], 'gpunet.rdma')
    assert entry['conflicts'] == [{'manager': 'kubectl', 'operation': 'Apply', 'field': '.metadata.labels.test-label'}]


def test_force_takes_over_and_says_so():
    live = public('k8s-docs-ssa-multiple-managers.yaml')
    [entry] = rdma_apply_plan([config_map(key='our value')], [live], 'gpunet.rdma', True)
    assert entry['action'] == 'force' and entry['conflicts'][0]['manager'] == 'kube-controller-manager'


def test_our_own_earlier_apply_is_no_conflict():
    live = public('k8s-docs-ssa-multiple-managers.yaml')
    [entry] = rdma_apply_plan([config_map(key='new value')], [copy.deepcopy(live)], 'kubectl')
    wanted = config_map(key='new value')
    wanted['metadata']['labels'] = {'test-label': 'changed'}
    [entry] = rdma_apply_plan([wanted], [live], 'kubectl')
    assert entry['action'] == 'apply' and entry['conflicts'] == []


def test_a_field_owned_whole_conflicts_with_a_field_inside_it():
    """manager-one owns spec.data as one field (the documentation's atomic example): changing key1 in it is a
    conflict on .spec.data."""
    live = public('k8s-docs-ssa-crd-atomic.yaml')
    wanted = {'apiVersion': 'example.com/v1', 'kind': 'Foo', 'metadata': {'name': 'foo-sample'},
              'spec': {'data': {'key1': 'changed'}}}
    [entry] = rdma_apply_plan([wanted], [live], 'gpunet.rdma')
    assert entry['action'] == 'refuse'
    assert entry['conflicts'] == [{'manager': 'manager-one', 'operation': 'Apply', 'field': '.spec.data'}]


def test_a_map_kept_in_place_is_not_ownership_of_its_fields():
    live = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'test-cm', 'namespace': 'default',
            'managedFields': [{'manager': 'other', 'operation': 'Update', 'fieldsType': 'FieldsV1',
                               'fieldsV1': {'f:data': {'.': {}, 'f:mine': {}}}}]},
            'data': {'mine': 'x', 'yours': 'y'}}
    [entry] = rdma_apply_plan([config_map(yours='z')], [live], 'gpunet.rdma')
    assert (entry['action'], entry['conflicts']) == ('apply', [])
    [entry] = rdma_apply_plan([config_map(mine='z')], [live], 'gpunet.rdma')
    assert entry['conflicts'] == [{'manager': 'other', 'operation': 'Update', 'field': '.data.mine'}]


def policy(**spec):
    return {'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'NicClusterPolicy', 'metadata': {'name': 'nic-cluster-policy'},
            'spec': spec}


def kept(labels=None, annotations=None, managers=('argocd-controller',)):
    live = policy(tolerations=[{'key': 'a', 'operator': 'Exists'}], rdmaSharedDevicePlugin={'version': 'v1.5.1'})
    live['metadata'].update(labels=labels or {}, annotations=annotations or {}, managedFields=[
        {'manager': name, 'operation': 'Update', 'fieldsType': 'FieldsV1', 'fieldsV1': {'f:spec': {}}}
        for name in managers])
    return live


@pytest.mark.parametrize('labels, annotations, managers, tool, application', [
    ({}, {'argocd.argoproj.io/tracking-id': 'rdma-stack:mellanox.com/NicClusterPolicy:/nic-cluster-policy'},
     ('argocd-controller',), 'Argo CD', 'rdma-stack'),
    ({'argocd.argoproj.io/instance': 'rdma-stack'}, {}, ('argocd-controller',), 'Argo CD', 'rdma-stack'),
    ({'app.kubernetes.io/instance': 'rdma-stack'}, {}, ('argocd-application-controller',), 'Argo CD', 'rdma-stack'),
    ({'kustomize.toolkit.fluxcd.io/name': 'network', 'kustomize.toolkit.fluxcd.io/namespace': 'flux-system'}, {},
     ('kustomize-controller',), 'Flux', 'Kustomization flux-system/network'),
    ({'helm.toolkit.fluxcd.io/name': 'network-operator'}, {}, ('helm-controller',), 'Flux', 'HelmRelease network-operator'),
])
def test_an_object_kept_by_gitops_is_refused_with_the_change_for_git(labels, annotations, managers, tool, application):
    wanted = policy(tolerations=[{'key': 'a', 'operator': 'Exists'}], rdmaSharedDevicePlugin={'version': 'v1.5.2'})
    [entry] = rdma_apply_plan([wanted], [kept(labels, annotations, managers)], 'gpunet.rdma', True)
    assert entry['action'] == 'refuse'  # force never applies over a GitOps tool
    assert (entry['gitops']['tool'], entry['gitops']['application']) == (tool, application)
    assert entry['git_change'] == {'spec': {'rdmaSharedDevicePlugin': {'version': 'v1.5.2'}}}
    assert 'make it in Git' in entry['reason']
    # nothing to change: nothing to refuse
    same = policy(tolerations=[{'key': 'a', 'operator': 'Exists'}], rdmaSharedDevicePlugin={'version': 'v1.5.1'})
    [entry] = rdma_apply_plan([same], [kept(labels, annotations, managers)], 'gpunet.rdma')
    assert entry['action'] == 'unchanged'
    # the same marks name the objects the cluster stage must not delete
    [found] = rdma_gitops_kept([kept(labels, annotations, managers), policy()])
    assert (found['object'], found['name'], found['tool'], found['application']) == (
        'NicClusterPolicy nic-cluster-policy', 'nic-cluster-policy', tool, application)
    assert found['reason'].startswith('kept by %s (%s, ' % (tool, application))


def test_the_instance_label_of_a_helm_chart_is_not_argo_cd():
    live = kept({'app.kubernetes.io/instance': 'network-operator', 'app.kubernetes.io/managed-by': 'Helm'},
                {'meta.helm.sh/release-name': 'network-operator'}, ('helm',))
    wanted = policy(tolerations=[{'key': 'a', 'operator': 'Exists'}], rdmaSharedDevicePlugin={'version': 'v1.5.2'})
    [entry] = rdma_apply_plan([wanted], [live], 'gpunet.rdma')
    assert entry['gitops'] is None
    assert entry['conflicts'] == [{'manager': 'helm', 'operation': 'Update', 'field': '.spec'}]
    assert rdma_gitops_kept([live]) == []


def test_a_missing_object_is_created():
    assert [e['action'] for e in rdma_apply_plan([policy(), config_map(a='b')], [None, {}], 'gpunet.rdma')] == [
        'create', 'create']


@pytest.mark.parametrize('args, message', [
    (([policy()], []), 'apply_plan: 1 objects to apply but 0 live reads'),
    (([policy()], [{'kind': 'NicClusterPolicy', 'metadata': {'managedFields': 'x'}}]),
     'apply_plan: NicClusterPolicy ?: metadata.managedFields is not a list'),
    (([{'kind': 'X', 'metadata': {}}], [None]), 'apply_plan: an object to apply needs kind and metadata.name'),
    (('nope', [None]), 'apply_plan: the input'),
])
def test_apply_plan_input_errors_name_the_filter_and_the_field(args, message):
    with pytest.raises(AnsibleFilterError) as error:
        rdma_apply_plan(*args)
    assert str(error.value).startswith(message), str(error.value)


STATUS = {'name': 'network-operator', 'namespace': 'nvidia-network-operator', 'chart': 'network-operator-26.4.1',
          'status': 'deployed',
          'release_values': {'nfd': {'enabled': False}, 'operator': {'repository': 'registry.local/mellanox'}}}


def test_no_release_is_installed():
    plan = rdma_release_plan(None, 'network-operator', 'v26.4.1', {'nfd': {'enabled': True}})
    assert (plan['action'], plan['chart_version'], plan['reuse_values']) == ('install', 'v26.4.1', False)


def test_a_release_with_our_values_already_is_left_alone():
    plan = rdma_release_plan(STATUS, 'network-operator', 'v26.4.1', {'nfd': {'enabled': False}})
    assert (plan['action'], plan['installed_version'], plan['changed_values']) == ('unchanged', '26.4.1', [])


def test_a_release_someone_installed_is_refused_naming_the_keys_and_the_variable():
    plan = rdma_release_plan(STATUS, 'network-operator', 'v26.4.1', {'nfd': {'enabled': True}, 'imagePullSecrets': []},
                             adopt_variable='network_operator_adopt_release')
    assert plan['action'] == 'refuse'
    assert plan['changed_values'] == ['.imagePullSecrets', '.nfd.enabled']
    assert plan['message'].startswith('The helm release nvidia-network-operator/network-operator exists (chart '
                                      'network-operator-26.4.1, status deployed) and this run would set '
                                      '.imagePullSecrets, .nfd.enabled. Nothing was changed. Set '
                                      'network_operator_adopt_release: true to adopt it')


def test_adopting_keeps_the_values_and_the_chart_version():
    plan = rdma_release_plan(STATUS, 'network-operator', 'v26.7.0', {'nfd': {'enabled': True}}, adopt=True)
    assert (plan['action'], plan['reuse_values'], plan['chart_version']) == ('adopt', True, '26.4.1')
    assert plan['values'] == {'nfd': {'enabled': True}}  # helm merges them over the release's (--reuse-values)
    moved = rdma_release_plan(STATUS, 'network-operator', 'v26.7.0', {'nfd': {'enabled': True}}, adopt=True,
                              upgrade_chart=True)
    assert moved['chart_version'] == 'v26.7.0'


def test_another_chart_version_alone_moves_nothing_unless_asked():
    plan = rdma_release_plan(STATUS, 'network-operator', 'v26.7.0', {'nfd': {'enabled': False}})
    assert (plan['action'], plan['chart_version']) == ('unchanged', '26.4.1')
    plan = rdma_release_plan(STATUS, 'network-operator', 'v26.7.0', {'nfd': {'enabled': False}}, upgrade_chart=True,
                             adopt_variable='network_operator_adopt_release')
    assert plan['action'] == 'refuse' and 'move it from chart 26.4.1 to v26.7.0' in plan['message']


@pytest.mark.parametrize('args, kwargs, message', [
    (('x', 'network-operator', 'v1', {}), {}, 'release_plan: the input'),
    ((STATUS, 'network-operator', 'v1', []), {}, 'release_plan: values'),
    ((STATUS, 'network-operator', 'v1', {}), {'adopt': 'yes'}, 'release_plan: adopt must be true or false'),
    ((dict(STATUS, release_values=['a']), 'network-operator', 'v1', {}), {},
     'release_plan: release network-operator: its values are not a map'),
])
def test_release_plan_input_errors_name_the_filter_and_the_field(args, kwargs, message):
    with pytest.raises(AnsibleFilterError) as error:
        rdma_release_plan(*args, **kwargs)
    assert str(error.value).startswith(message), str(error.value)


def test_the_results_of_a_k8s_info_loop_are_read_as_live_objects():
    live = public('k8s-docs-ssa-multiple-managers.yaml')
    results = [{'item': config_map(key='our value'), 'api_found': True, 'resources': [live]},
               {'item': config_map(a='b'), 'api_found': False, 'resources': []}]
    plans = rdma_apply_plan([config_map(key='our value'), policy()], results, 'gpunet.rdma')
    assert [p['action'] for p in plans] == ['refuse', 'create']
