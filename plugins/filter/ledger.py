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

from ansible_collections.gpunet.rdma.plugins.plugin_utils._fabric import FabricError, fleet
from ansible_collections.gpunet.rdma.plugins.plugin_utils._ledger import LedgerError, plan
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._management_path import ManagementPathError, guard
from ansible_collections.gpunet.rdma.plugins.plugin_utils._filter_args import (
    a_dict, filter_args, host_vars, names, nested)

LEDGER_FACT = 'gpunet_rdma_ledger'
CONTROLLER = 'localhost'
HOSTS = names('host names (e.g. groups.all)')
HOSTVARS = a_dict('hostvars: host name -> variables')


def _hostvars_of(hostvars, name):
    def read(host):
        variables = host_vars(name, hostvars, host)
        if variables is None:
            raise AnsibleFilterError('%s: %s is not a host of the inventory' % (name, host))
        nested(name, 'group_names of %s' % host, variables.get('group_names'),
               names('group names', nullable=True))
        return variables
    return read


@filter_args('ledgers', hosts=HOSTS, hostvars=HOSTVARS)
def rdma_ledgers(hosts, hostvars):
    """``{host: ansible_facts.gpunet_rdma_ledger}`` of ``hosts`` plus ``localhost`` (the controller's cluster
    stages)."""
    result = {}
    for host in [str(host) for host in hosts] + [CONTROLLER]:
        variables = host_vars('ledgers', hostvars, host)
        if variables is None:
            if host == CONTROLLER:
                continue
            raise AnsibleFilterError('ledgers: %s is not a host of the inventory' % host)
        facts = nested('ledgers', 'ansible_facts of %s' % host, variables.get('ansible_facts') or {},
                       a_dict('the facts of the host'))
        ledger = facts.get(LEDGER_FACT)
        if ledger is None:
            continue
        if not isinstance(ledger, Mapping):
            raise AnsibleFilterError('ledgers: %s of %s is not a dict' % (LEDGER_FACT, host))
        result[host] = dict(ledger)
    return result


@filter_args('rollout_plan', ledger=a_dict('the gpunet_rdma_ledger fact: stage name -> envelope', nullable=True))
def rdma_rollout_plan(ledger):
    """What the host's batch must do: ``{reboot, actions, reasons}``."""
    try:
        return plan(ledger or {})
    except LedgerError as exc:
        raise AnsibleFilterError('rollout_plan: %s' % exc)


@filter_args('disruption_guard',
             ledger=a_dict('the gpunet_rdma_ledger fact: stage name -> envelope', nullable=True),
             management_path=a_dict('ansible_facts.rdma_management_path (ibdev2netdev_facts management_path)',
                                    nullable=True))
def rdma_disruption_guard(ledger, management_path):
    """The allowed pending steps that would take down the node's management path: ``[{action, reason}]``."""
    try:
        plan(ledger or {})  # the ledger's shape, checked as the plan checks it
        return guard(ledger or {}, management_path or {})
    except (LedgerError, ManagementPathError) as exc:
        raise AnsibleFilterError('disruption_guard: %s' % exc)


@filter_args('fabrics', hosts=HOSTS, hostvars=HOSTVARS)
def rdma_fabrics(hosts, hostvars):
    """``{groups: {name: fabric + hosts}, hosts: {host: group or null}}`` from every host's gpunet_rdma_fabric."""
    try:
        return fleet([str(host) for host in hosts], _hostvars_of(hostvars, 'fabrics'))
    except FabricError as exc:
        raise AnsibleFilterError('fabrics: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {
            'ledgers': rdma_ledgers,
            'rollout_plan': rdma_rollout_plan,
            'disruption_guard': rdma_disruption_guard,
            'fabrics': rdma_fabrics,
        }
