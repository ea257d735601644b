# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The run's data model: GPU group fabrics and the stage ledger (recorded with the gpunet.rdma.ledger action).

Documentation: the .yml files beside this one.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.module_utils._fabric import FabricError, fleet
from ansible_collections.gpunet.rdma.plugins.module_utils._ledger import LedgerError, plan

LEDGER_FACT = 'gpunet_rdma_ledger'
CONTROLLER = 'localhost'


def _hostvars_of(hostvars, name):
    def read(host):
        try:
            return hostvars[host]
        except KeyError:
            raise AnsibleFilterError('%s: %s is not a host of the inventory' % (name, host))
    return read


def _hosts(hosts, name):
    if isinstance(hosts, str) or not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError('%s: the input must be a list of host names (e.g. groups.all), got %s'
                                 % (name, type(hosts).__name__))
    return [str(host) for host in hosts]


def rdma_ledgers(hosts, hostvars):
    """``{host: ansible_facts.gpunet_rdma_ledger}`` of ``hosts`` plus ``localhost`` (the controller's cluster stages)."""
    result = {}
    for host in _hosts(hosts, 'rdma_ledgers') + [CONTROLLER]:
        try:
            variables = hostvars[host]
        except KeyError:
            if host == CONTROLLER:
                continue
            raise AnsibleFilterError('rdma_ledgers: %s is not a host of the inventory' % host)
        ledger = (variables.get('ansible_facts') or {}).get(LEDGER_FACT)
        if ledger is None:
            continue
        if not isinstance(ledger, Mapping):
            raise AnsibleFilterError('rdma_ledgers: %s of %s is not a dict' % (LEDGER_FACT, host))
        result[host] = dict(ledger)
    return result


def rdma_rollout_plan(ledger):
    """What the host's batch must do: ``{reboot, actions, reasons}``."""
    try:
        return plan(ledger or {})
    except LedgerError as exc:
        raise AnsibleFilterError('rdma_rollout_plan: %s' % exc)


def rdma_fabrics(hosts, hostvars):
    """``{groups: {name: fabric + hosts}, hosts: {host: group or null}}`` from every host's gpunet_rdma_fabric."""
    try:
        return fleet(_hosts(hosts, 'rdma_fabrics'), _hostvars_of(hostvars, 'rdma_fabrics'))
    except FabricError as exc:
        raise AnsibleFilterError('rdma_fabrics: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {
            'rdma_ledgers': rdma_ledgers,
            'rdma_rollout_plan': rdma_rollout_plan,
            'rdma_fabrics': rdma_fabrics,
        }
