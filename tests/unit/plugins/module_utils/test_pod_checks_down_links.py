# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A validation pod's RDMA device counts only when `rdma link` in the pod shows its port ACTIVE.

A device handed to the pod whose port is DOWN (a cable pulled, the switch port disabled) carries no traffic, so the
pod check fails naming it, in each mode: the shared device plugin's HCAs (by device), an SR-IOV VF (hostdev) or a
macvlan master (spiderpool) on the pod's own interfaces. Logs written by hand in the form the pods print.
"""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpunet.rdma.plugins.plugin_utils._workloads import MARK, pod_checks

INTERFACE = json.dumps([
    {'ifname': 'lo', 'operstate': 'UNKNOWN', 'addr_info': [{'local': '127.0.0.1', 'prefixlen': 8}]},
    {'ifname': 'eth0', 'operstate': 'UP', 'addr_info': [{'local': '10.42.0.17', 'prefixlen': 24}]},
    {'ifname': 'net1', 'operstate': 'UP', 'addr_info': [{'local': '172.16.11.10', 'prefixlen': 24}]}])


def log(state, physical_state, env=''):
    return '\n'.join([
        MARK + 'ip -j addr', INTERFACE,
        MARK + 'rdma link', 'link mlx5_4/1 state %s physical_state %s netdev net1' % (state, physical_state),
        MARK + 'env', env,
        MARK + 'end'])


def test_shared_mode_hca_with_a_down_port_is_missing():
    checks = {'mode': 'shared', 'hcas': ['mlx5_4']}
    assert pod_checks(log('ACTIVE', 'LINK_UP'), None, checks)['ok'] is True
    result = pod_checks(log('DOWN', 'DISABLED'), None, checks)
    assert result['problems'] == ['rdma link in the pod shows no ACTIVE mlx5_4: the shared device plugin did not hand '
                                  'them to the pod (its resource request, /dev/infiniband)']


@pytest.mark.parametrize('mode, env', [('hostdev', 'PCIDEVICE_NVIDIA_COM_HOSTDEV=0000:3b:00.2'), ('spiderpool', '')])
def test_a_device_on_the_pods_interface_with_a_down_port_does_not_count(mode, env):
    checks = {'mode': mode, 'interfaces': 1, 'rdma_devices': 1}
    assert pod_checks(log('ACTIVE', 'LINK_UP', env), None, checks)['ok'] is True
    result = pod_checks(log('DOWN', 'POLLING', env), None, checks)
    assert result['ok'] is False
    assert result['problems'][0].startswith("rdma link shows 0 ACTIVE RDMA devices on the pod's interfaces (none), 1 "
                                            'expected')
