# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""node_extended_resources with the kubernetes client's own models and a stand-in for the API server."""

from __future__ import annotations

import json

import pytest

from kubernetes import client

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpunet.rdma.plugins.modules import node_extended_resources


class FakeCoreV1Api(object):
    """Test double of CoreV1Api: nodes in memory, patches recorded."""

    def __init__(self, nodes):
        self.nodes = nodes
        self.api_client = client.ApiClient()
        self.patched = []

    def list_node(self):
        return client.V1NodeList(items=list(self.nodes.values()))

    def read_node_status(self, name):
        return self.nodes[name]

    def patch_node_status(self, name, body):
        self.patched.append((name, body))


def node(name, capacity):
    return client.V1Node(metadata=client.V1ObjectMeta(name=name),
                         status=client.V1NodeStatus(capacity=dict(capacity), allocatable=dict(capacity)))


@pytest.fixture
def api(monkeypatch):
    fake = FakeCoreV1Api({
        'gpu-v100-01': node('gpu-v100-01', {'cpu': '64', 'nvidia.com/hostdev': '2', 'rdma/rdma_v100': '63'}),
        'gpu-a100-01': node('gpu-a100-01', {'cpu': '128', 'rdma/rdma_a100': '63'}),
    })
    monkeypatch.setattr(node_extended_resources, 'core_api', lambda module: fake)
    return fake


def run(args, capsys, check_mode=False):
    with patch_module_args(dict(args, _ansible_check_mode=check_mode)):
        with pytest.raises(SystemExit) as exit_info:
            node_extended_resources.main()
    result = json.loads(capsys.readouterr().out)
    assert exit_info.value.code == 0, result
    return result


PATCH = [{'op': 'remove', 'path': '/status/capacity/nvidia.com~1hostdev'},
         {'op': 'remove', 'path': '/status/allocatable/nvidia.com~1hostdev'}]


def test_check_mode_lists_and_sends_nothing(api, capsys):
    result = run({'names': ['nvidia.com/hostdev']}, capsys, check_mode=True)
    assert result['changed'] is True and result['removed'] == {'gpu-v100-01': ['nvidia.com/hostdev']}
    assert result['patches'] == {'gpu-v100-01': PATCH}
    assert api.patched == []


def test_removes_only_where_present(api, capsys):
    result = run({'names': ['nvidia.com/hostdev', 'rdma/hca_shared_devices_a']}, capsys)
    assert api.patched == [('gpu-v100-01', PATCH)]
    assert result['changed'] is True


def test_nothing_to_remove(api, capsys):
    result = run({'names': ['nvidia.com/hostdev'], 'nodes': ['gpu-a100-01']}, capsys)
    assert result == {'changed': False, 'removed': {}, 'patches': {}, 'invocation': result['invocation']}
    assert api.patched == []
