# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The NVIDIA Network Operator's own NicClusterPolicy examples, validated against the CRDs of two releases.

Every artifact of fixtures/public/nicclusterpolicy/ is an unchanged example CR of a Network Operator release. Its
verdict against the v25.1.0 and the v26.4.1 CRD was written by hand from reading the example and the two CRDs
(tests/crds): valid, or the exact fields the release does not declare and the required fields that are missing.
Each artifact is checked by the schema walk (_crd_schema), by crd_validate, and by the kube-apiserver double, which
must answer as kube-apiserver would (strict field validation: 400 naming the unknown fields; 422 with causes).
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys

import pytest
import yaml

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._crd_schema import (
    crd_index,
    schema_findings,
    unknown_fields,
)
from ansible_collections.gpunet.rdma.plugins.modules import crd_validate

HERE = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'public', 'nicclusterpolicy')
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(REPO, 'tests', 'doubles'))

import kube_apiserver  # noqa: E402  pylint: disable=wrong-import-position

VALID = {'undeclared': [], 'required': []}
# v26.4.1 dropped secondaryNetwork.ipamPlugin (Whereabouts), which every v25.1.0 example deploys.
V25_ON_V26 = {'undeclared': ['spec.secondaryNetwork.ipamPlugin'], 'required': []}
# v25.1.0 requires repository and version of every component; the spec.global example gives only images.
GLOBAL_ON_V25 = {'undeclared': ['spec.global'], 'required': [
    'spec.ofedDriver.repository',
    'spec.rdmaSharedDevicePlugin.repository', 'spec.rdmaSharedDevicePlugin.version',
    'spec.nvIpam.repository', 'spec.nvIpam.version',
    'spec.secondaryNetwork.cniPlugins.repository', 'spec.secondaryNetwork.cniPlugins.version',
    'spec.secondaryNetwork.multus.repository', 'spec.secondaryNetwork.multus.version']}

# artifact: {CRD release: verdict}
EXPECTED = {
    'network-operator-v25.1.0-nicclusterpolicy_cr.yaml': {'v25.1.0': VALID, 'v26.4.1': V25_ON_V26},
    'network-operator-v25.1.0-nicclusterpolicy_cr-full.yaml': {'v25.1.0': VALID, 'v26.4.1': V25_ON_V26},
    'network-operator-v25.1.0-nicclusterpolicy_cr-ipoib.yaml': {'v25.1.0': VALID, 'v26.4.1': V25_ON_V26},
    'network-operator-v26.4.1-nicclusterpolicy_cr.yaml': {'v25.1.0': VALID, 'v26.4.1': VALID},
    'network-operator-v26.4.1-nicclusterpolicy_cr-full.yaml': {
        'v25.1.0': {'undeclared': ['spec.nicConfigurationOperator'], 'required': []}, 'v26.4.1': VALID},
    'network-operator-v26.4.1-nicclusterpolicy_cr_global_config.yaml': {'v25.1.0': GLOBAL_ON_V25, 'v26.4.1': VALID},
    'network-operator-v26.4.1-nicclusterpolicy_cr-nvidia-ipam.yaml': {'v25.1.0': VALID, 'v26.4.1': VALID},
}
CASES = [(name, release) for name in sorted(EXPECTED) for release in ('v25.1.0', 'v26.4.1')]


def artifacts():
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(HERE, '*')) if not p.endswith('.source.yml'))


def load(name):
    with open(os.path.join(HERE, name)) as handle:
        return yaml.safe_load(handle)


def crd_document(upstream_crds, release):
    with open(os.path.join(upstream_crds, 'network-operator-' + release, 'mellanox.com_nicclusterpolicies.yaml')) as f:
        return yaml.safe_load(f)


def test_every_artifact_has_an_expectation_and_a_source():
    assert artifacts() == sorted(EXPECTED)
    releases = set()
    for name in artifacts():
        with open(os.path.join(HERE, name + '.source.yml')) as handle:
            source = yaml.safe_load(handle)
        assert source['repository'] == 'Mellanox/network-operator', name
        assert source['path'].startswith('example/crs/') and source['path'].endswith(name.split('-', 3)[3]), name
        assert re.match(r'^[0-9a-f]{40}$', source['commit']), name
        assert name.startswith('network-operator-%s-' % source['release']), name
        assert source['what'] and source['excerpt'] == 'whole file', name
        releases.add(source['release'])
    assert releases == {'v25.1.0', 'v26.4.1'}
    # at least one example uses fields newer than v25.1.0
    assert any(verdict['v25.1.0']['undeclared'] for name, verdict in EXPECTED.items() if 'v26.4.1' in name)


@pytest.mark.parametrize('name, release', CASES)
def test_schema_walk_gives_the_verdict(name, release, crd_release):
    schema = crd_release('network-operator-' + release)[('mellanox.com/v1alpha1', 'NicClusterPolicy')]
    obj = load(name)
    expected = EXPECTED[name][release]
    assert unknown_fields(obj, schema) == expected['undeclared']
    findings = schema_findings(obj, schema)
    assert sorted(f['field'] for f in findings) == sorted(expected['required'])
    assert set(f['reason'] for f in findings) <= {'FieldValueRequired'}


@pytest.mark.parametrize('name, release', CASES)
def test_crd_validate_gives_the_verdict(name, release, upstream_crds, capsys):
    args = {'objects': [load(name)], 'crd_paths': [os.path.join(upstream_crds, 'network-operator-' + release)],
            'release': 'network-operator ' + release, '_ansible_check_mode': True}
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            crd_validate.main()
    result = json.loads(capsys.readouterr().out)
    expected = EXPECTED[name][release]
    problems = result['checked'][0]['problems']
    if expected == VALID:
        assert not result.get('failed') and problems == [], result
        return
    assert result['failed'] is True
    assert sorted(p.split(':')[0] for p in problems if 'field not declared' in p) == expected['undeclared']
    required = sorted('%s.%s' % (p.split(':')[0], re.search(r"'(\w+)' is a required property", p).group(1))
                      for p in problems if 'is a required property' in p)
    assert required == sorted(expected['required'])
    assert len(problems) == len(expected['undeclared']) + len(expected['required'])


@pytest.mark.parametrize('name, release', CASES)
def test_the_api_double_answers_as_kube_apiserver(name, release, upstream_crds):
    api = kube_apiserver.FakeApiServer().start()
    try:
        api.add('apiextensions.k8s.io/v1', 'customresourcedefinitions', crd_document(upstream_crds, release))
        client = kubernetes_client(api)
        expected = EXPECTED[name][release]
        strict = post(client, load(name), 'Strict')
        ignore = post(client, load(name), 'Ignore')
    finally:
        api.stop()
    if expected == VALID:
        assert strict[0] == 201 and ignore[0] == 409  # created, then AlreadyExists
        return
    if expected['undeclared']:
        assert strict == (400, 'BadRequest', 'NicClusterPolicy in version "v1alpha1" cannot be handled as a '
                                             'NicClusterPolicy: strict decoding error: %s'
                          % ', '.join('unknown field "%s"' % f for f in expected['undeclared']), None)
    if expected['required']:
        code, reason, message, causes = ignore
        assert (code, reason) == (422, 'Invalid')
        assert message.startswith('NicClusterPolicy.mellanox.com "nic-cluster-policy" is invalid: [')
        assert sorted(c['field'] for c in causes) == sorted(expected['required'])
        assert set((c['reason'], c['message']) for c in causes) == {('FieldValueRequired', 'Required value')}
    else:
        assert ignore[0] == 201  # the unknown fields pruned, as the API server stores it


def kubernetes_client(api):
    import kubernetes
    configuration = kubernetes.client.Configuration()
    configuration.host = api.url
    configuration.api_key = {'authorization': 'Bearer ' + kube_apiserver.DEFAULT_TOKEN}
    return kubernetes.client.CustomObjectsApi(kubernetes.client.ApiClient(configuration))


def post(client, obj, validation):
    from kubernetes.client.rest import ApiException
    try:
        client.create_cluster_custom_object('mellanox.com', 'v1alpha1', 'nicclusterpolicies', obj,
                                            field_validation=validation)
    except ApiException as exc:
        status = json.loads(exc.body)
        return exc.status, status['reason'], status['message'], (status.get('details') or {}).get('causes')
    return 201, None, None, None


def test_the_index_reads_both_releases(crd_release):
    for release in ('v25.1.0', 'v26.4.1'):
        assert ('mellanox.com/v1alpha1', 'NicClusterPolicy') in crd_release('network-operator-' + release)
    assert crd_index([]) == {}
