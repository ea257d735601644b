# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Network Operator's own verdict on its policies, judged from statuses NVIDIA published and users recorded.

Every artifact of fixtures/public/network_operator/ is the unchanged ``status`` (or the whole object) of a
NicClusterPolicy. Its verdict - ready or not, and the problem lines naming each failing component - was written by
hand from reading the file. Each status is also stored through the kube-apiserver double with the v26.4.1 CRD's
status subresource and judged as the role reads it back, so that the CRD accepts what the operator writes.
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys

import pytest
import yaml

from ansible_collections.gpunet.rdma.plugins.filter.network_operator import rdma_network_operator_status
from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._network_operator import policy_status

HERE = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'public', 'network_operator')
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(REPO, 'tests', 'doubles'))

import kube_apiserver  # noqa: E402  pylint: disable=wrong-import-position

NCP = 'NicClusterPolicy nic-cluster-policy'
NO_STATE = (NCP + ': no status.state yet: the operator has not reconciled it (is the network-operator Deployment '
            'running?)')
# artifact: (state, ok, problems, failing component names)
EXPECTED = {
    'network-operator-v26.4.1-readme-status.yaml': ('ready', True, [], []),
    'network-operator-docs-life-cycle-management-status.yaml': ('ready', True, [], []),
    # The OFED container never became ready; the stored copy ends before the global state.
    'issue-720-openshift-ofed-notready.yaml': (None, False, [NCP + ': state-OFED (spec.ofedDriver): notReady',
                                                             NO_STATE], ['state-OFED']),
    # The message sits in a field the released CRD calls message, not error: the component is named without it.
    'pr-895-ofed-forceprecompiled-status.yaml': (None, False, [NCP + ': state-OFED (spec.ofedDriver): notReady',
                                                               NO_STATE], ['state-OFED']),
}


def artifacts():
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(HERE, '*'))
                  if not p.endswith('.source.yml') and not p.endswith('.md'))


def load(name):
    """The artifact as a NicClusterPolicy object (a bare status excerpt gets the policy's identity)."""
    with open(os.path.join(HERE, name)) as handle:
        document = yaml.safe_load(handle)
    if 'kind' not in document:
        document = {'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'NicClusterPolicy',
                    'metadata': {'name': 'nic-cluster-policy'}, 'status': document['status']}
    return document


def test_every_artifact_has_an_expectation_a_source_and_a_line_in_sources_md():
    assert artifacts() == sorted(EXPECTED)
    with open(os.path.join(HERE, 'SOURCES.md')) as handle:
        listed = handle.read()
    for name in artifacts():
        with open(os.path.join(HERE, name + '.source.yml')) as handle:
            source = yaml.safe_load(handle)
        assert source.get('source') or (source.get('repository') and source.get('path')), name
        if source.get('commit'):
            assert re.match(r'^[0-9a-f]{40}$', source['commit']), name
        assert source.get('what') and source.get('excerpt'), name
        assert '`%s`' % name in listed, name


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_verdict(name):
    state, ok, problems, failing = EXPECTED[name]
    record = policy_status(load(name))
    assert (record['state'], record['ok']) == (state, ok)
    assert [c['name'] for c in record['components'] if c['state'] in ('notReady', 'error')] == failing
    # The failing component is named whenever the status has one, even without a global state.
    assert record['problems'] == problems


def test_issue_720_names_the_driver_container():
    record = policy_status(load('issue-720-openshift-ofed-notready.yaml'))
    # Without a global state the verdict is "not reconciled"; the component table still shows OFED notReady.
    ofed = [c for c in record['components'] if c['name'] == 'state-OFED'][0]
    assert ofed == {'name': 'state-OFED', 'state': 'notReady', 'message': None, 'field': 'spec.ofedDriver'}


def test_components_keep_their_spec_field():
    record = policy_status(load('network-operator-v26.4.1-readme-status.yaml'))
    fields = dict((c['name'], c['field']) for c in record['components'])
    assert fields['state-RDMA-device-plugin'] == 'spec.rdmaSharedDevicePlugin'
    assert fields['state-nv-ipam-cni'] == 'spec.nvIpam'
    assert fields['state-pod-security-policy'] is None  # a component of older releases, named as it comes
    docs = policy_status(load('network-operator-docs-life-cycle-management-status.yaml'))
    assert 'state-NV-Peer' in [c['name'] for c in docs['components']]


def _with_global_state(name, state):
    obj = load(name)
    obj['status']['state'] = state
    return obj


def test_recorded_failures_with_the_global_state_the_operator_sets():
    """The operator ANDs its components (pkg/state/manager.go): a notReady component makes the policy notReady."""
    record = policy_status(_with_global_state('issue-720-openshift-ofed-notready.yaml', 'notReady'))
    assert record['ok'] is False
    assert record['problems'] == [NCP + ': state-OFED (spec.ofedDriver): notReady']
    record = policy_status(_with_global_state('pr-895-ofed-forceprecompiled-status.yaml', 'notReady'))
    assert record['problems'] == [NCP + ': state-OFED (spec.ofedDriver): notReady']
    # As the released CRD names the field: the message is given with the component.
    obj = _with_global_state('pr-895-ofed-forceprecompiled-status.yaml', 'notReady')
    for entry in obj['status']['appliedStates']:
        if 'error' in entry:
            entry['message'] = entry.pop('error')
    assert policy_status(obj)['problems'] == [
        NCP + ': state-OFED (spec.ofedDriver): notReady: failed to create k8s objects from manifest: failed to render '
              'objects: ForcePrecompiled is enabled and precompiled image was not found']


@pytest.fixture
def api(upstream_crds):
    server = kube_apiserver.FakeApiServer().start()
    for name in ('mellanox.com_nicclusterpolicies.yaml', 'mellanox.com_nicnodepolicies.yaml'):
        with open(os.path.join(upstream_crds, 'network-operator-v26.4.1', name)) as handle:
            server.add('apiextensions.k8s.io/v1', 'customresourcedefinitions', yaml.safe_load(handle))
    yield server
    server.stop()


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_statuses_round_trip_through_the_crds_status_subresource(api, name):
    """Each status as the operator writes it (PUT .../status) is one the v26.4.1 CRD holds, and reads back the same.

    The bare excerpts without a global state are refused by the CRD (status.state is required): the operator always
    writes one, so the stored copies stand for statuses cut short, and the CRD check gets the state added.
    """
    obj = load(name)
    spec_free = {'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'NicClusterPolicy',
                 'metadata': {'name': 'nic-cluster-policy'}, 'spec': {}}
    api.add('mellanox.com/v1alpha1', 'nicclusterpolicies', spec_free)
    status = dict(obj['status'])
    for entry in status.get('appliedStates') or []:
        if 'error' in entry:  # the field of the pull request's first version; the released CRD prunes it
            entry['message'] = entry.pop('error')
    status.setdefault('state', 'notReady')
    stored = api.get('mellanox.com/v1alpha1', 'nicclusterpolicies', 'nic-cluster-policy')
    path = '/apis/mellanox.com/v1alpha1/nicclusterpolicies/nic-cluster-policy/status'
    code, _body, _warnings = api.handle('PUT', path, {'Authorization': 'Bearer ' + kube_apiserver.DEFAULT_TOKEN},
                                        json.dumps(dict(stored, status=status)).encode())
    assert code == 200
    read = api.get('mellanox.com/v1alpha1', 'nicclusterpolicies', 'nic-cluster-policy')
    verdict = rdma_network_operator_status([read], [{'kind': 'NicClusterPolicy', 'name': 'nic-cluster-policy'}])[0]
    assert verdict['ok'] == EXPECTED[name][1]
    assert [c['name'] for c in verdict['components'] if c['state'] in ('notReady', 'error')] == EXPECTED[name][3]
