# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Address checks shared by the secondary-network builders (Network Operator, Spiderpool)."""

from __future__ import annotations

try:
    import netaddr
except ImportError:  # pragma: no cover - reported by require_netaddr
    netaddr = None


def require_netaddr(error):
    """``netaddr`` or ``error`` (an exception class) saying how to get it."""
    if netaddr is None:
        raise error('the netaddr Python package is needed on the controller (pip install netaddr)')
    return netaddr


def first_overlap(named_networks):
    """The first two of ``[(name, IPNetwork)]`` whose address ranges overlap, or None."""
    for position, (name, network) in enumerate(named_networks):
        for other_name, other in named_networks[:position]:
            if network.first <= other.last and other.first <= network.last:
                return (other_name, other), (name, network)
    return None
