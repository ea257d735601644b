# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Address ranges of the secondary networks that cannot work are refused before anything is applied.

Two networks (Spiderpool pools, whereabouts ranges of the Network Operator's networks) whose addresses overlap hand
the same address to two pods, whichever of the two is listed first; a pool's gateway that is one of the addresses
pods get - its first or last one included - goes to a pod. Every expectation below is worked out by hand.
"""

from __future__ import annotations

import netaddr
import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._ip_networks import first_overlap
from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._network_operator import (
    NetworkOperatorError, check_ip_networks)
from ansible_collections.gpunet.rdma.plugins.plugin_utils._spiderpool import SpiderpoolError, check_pools


def named(*cidrs):
    return [('net%d' % number, netaddr.IPNetwork(cidr)) for number, cidr in enumerate(cidrs, 1)]


@pytest.mark.parametrize('first, second', [
    ('10.0.0.0/16', '10.0.128.0/17'),    # the first holds the second
    ('10.0.128.0/17', '10.0.0.0/16'),    # the second holds the first
    ('10.0.0.0/24', '10.0.0.0/24'),      # the same network
    ('10.0.0.255/32', '10.0.0.0/24'),    # the last address of the second
    ('10.0.0.0/24', '10.0.0.0/32'),      # the first address of the first
])
def test_overlapping_networks_are_found_in_either_order(first, second):
    networks = named(first, second)
    assert first_overlap(networks) == (networks[0], networks[1])


@pytest.mark.parametrize('first, second', [
    ('10.0.0.0/24', '10.0.1.0/24'),      # adjacent: .255 and the next .0 are different addresses
    ('10.0.1.0/24', '10.0.0.0/24'),
    ('10.0.0.0/25', '10.0.0.128/25'),
])
def test_adjacent_networks_do_not_overlap(first, second):
    assert first_overlap(named(first, second)) is None


def test_the_first_overlapping_pair_is_named_in_list_order():
    networks = named('192.168.0.0/24', '10.0.0.0/24', '10.0.0.0/8')
    assert first_overlap(networks) == (networks[1], networks[2])


def test_whereabouts_ranges_that_hold_an_earlier_one_are_refused():
    networks = [{'name': 'rdma-small', 'range': '192.168.2.152/27'}, {'name': 'rdma-big', 'range': '192.168.0.0/16'}]
    with pytest.raises(NetworkOperatorError, match=r'^networks rdma-small \(192\.168\.2\.128/27\) and rdma-big '
                                                   r'\(192\.168\.0\.0/16\) overlap$'):
        check_ip_networks(networks)


def pool(name, subnet, gateway, ips):
    return {'name': name, 'subnet': subnet, 'gateway': gateway, 'ips': ips}


def test_a_pool_inside_an_earlier_listed_one_is_refused():
    pools = [pool('gpu1-net11', '172.16.11.0/24', '172.16.11.254', ['172.16.11.1-172.16.11.200']),
             pool('gpu2-net12', '172.16.0.0/16', '172.16.0.254', ['172.16.0.1-172.16.0.200'])]
    with pytest.raises(SpiderpoolError, match=r'^pools gpu1-net11 \(172\.16\.11\.0/24\) and gpu2-net12 '
                                              r'\(172\.16\.0\.0/16\) overlap$'):
        check_pools(pools)


@pytest.mark.parametrize('gateway, ips', [
    ('172.16.11.1', ['172.16.11.1-172.16.11.200']),     # the first address pods get
    ('172.16.11.200', ['172.16.11.1-172.16.11.200']),   # the last one
    ('172.16.11.7', ['172.16.11.7']),                   # the only one
    ('172.16.11.50', ['172.16.11.1-172.16.11.9', '172.16.11.50-172.16.11.60']),  # the start of a second range
])
def test_a_gateway_that_pods_could_get_is_refused(gateway, ips):
    with pytest.raises(SpiderpoolError, match='^pool gpu1-net11: the gateway %s is inside ips ' % gateway.replace('.', r'\.')):
        check_pools([pool('gpu1-net11', '172.16.11.0/24', gateway, ips)])


@pytest.mark.parametrize('gateway', ['172.16.11.254', '172.16.11.201'])
def test_a_gateway_outside_the_ips_is_accepted(gateway):
    assert check_pools([pool('gpu1-net11', '172.16.11.0/24', gateway, ['172.16.11.1-172.16.11.200'])]) is None
