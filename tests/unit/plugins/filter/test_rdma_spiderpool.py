# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gpunet.rdma.spiderpool filter: errors as AnsibleFilterError naming the group, the chart's values checked."""

from __future__ import annotations

import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.filter.spiderpool import rdma_spiderpool

PORTS = [{'device': 'mlx5_0', 'port': 1, 'netdev': 'enp11s0f0np0', 'state': 'ACTIVE', 'link_layer': 'Ethernet',
          'pci_address': '0000:0b:00.0'}]
OPTIONS = {'gpu_nics': [{'gpu': 1, 'nic': 'enp11s0f0np0'}],
           'ip_pools': [{'gpu': 1, 'subnet': '172.16.11.0/24', 'gateway': '172.16.11.254',
                         'ips': ['172.16.11.1-172.16.11.200']}]}
HOSTS = [{'host': 'roce-1', 'ports': PORTS, 'netns': {'live': None, 'persisted': 'shared'}}]


def chart_values(upstream_crds):
    with open(os.path.join(upstream_crds, 'spiderpool-v1.2.2', 'chart-values.yaml')) as handle:
        return yaml.safe_load(handle)


def test_builds_against_the_chart_values(upstream_crds):
    built = rdma_spiderpool(HOSTS, 'roce_a100', OPTIONS, chart_values(upstream_crds))
    assert [r['resource'] for r in built['resources']] == ['spidernet.io/shared_cx_gpu1']


def test_a_misspelt_helm_value_is_refused(upstream_crds):
    options = dict(OPTIONS, extra_helm_values={'spiderpoolAgent': {'prometheus': {'enableRdmaMetric': True}}})
    with pytest.raises(AnsibleFilterError, match='group roce_a100: helm values the Spiderpool chart does not have '
                                                 '\\(helm would ignore them\\): spiderpoolAgent.prometheus.enableRdmaMetric'):
        rdma_spiderpool(HOSTS, 'roce_a100', options, chart_values(upstream_crds))


def test_builder_errors_name_the_group():
    with pytest.raises(AnsibleFilterError, match='spiderpool: group roce_a100: no IP pool for GPU 1'):
        rdma_spiderpool(HOSTS, 'roce_a100', dict(OPTIONS, ip_pools=[]))
