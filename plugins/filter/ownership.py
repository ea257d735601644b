# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters reading who owns an object or a helm release before the cluster stage writes.
Documentation: apply_plan.yml, release_plan.yml, gitops_kept.yml."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpunet.rdma.plugins.plugin_utils._filter_args import a_dict, a_list, a_str, filter_args
from ansible_collections.gpunet.rdma.plugins.plugin_utils._ownership import (
    OwnershipError, apply_plan, gitops_keeper, object_name, release_plan)


@filter_args('apply_plan',
             wanted=a_list('the objects to apply', a_dict('a Kubernetes object', required=('kind', 'metadata'))),
             live=a_list('the live objects, one per object to apply (null when it does not exist)',
                         a_dict('a live Kubernetes object', nullable=True)),
             manager=a_str('the field manager of this run'))
def rdma_apply_plan(wanted, live, manager='gpunet.rdma', force=False):
    if not isinstance(force, bool):
        raise AnsibleFilterError('apply_plan: force must be true or false, got %r' % (force,))
    try:
        return apply_plan(wanted, live, manager, force)
    except OwnershipError as exc:
        raise AnsibleFilterError('apply_plan: %s' % exc)


@filter_args('release_plan',
             status=a_dict('the status of kubernetes.core.helm_info (empty when the release does not exist)',
                           nullable=True),
             chart_name=a_str('the chart name'), version=a_str('the chart version this run wants'),
             values=a_dict('the values this run sets'),
             adopt_variable=a_str('the variable that adopts the release'),
             upgrade_variable=a_str('the variable that allows another chart version'))
def rdma_release_plan(status, chart_name, version, values, adopt=False, upgrade_chart=False, adopt_variable='',
                      upgrade_variable=''):
    for name, value in (('adopt', adopt), ('upgrade_chart', upgrade_chart)):
        if not isinstance(value, bool):
            raise AnsibleFilterError('release_plan: %s must be true or false, got %r' % (name, value))
    try:
        return release_plan(status, chart_name, version, values, adopt, upgrade_chart, adopt_variable, upgrade_variable)
    except OwnershipError as exc:
        raise AnsibleFilterError('release_plan: %s' % exc)


@filter_args('gitops_kept',
             live=a_list('live Kubernetes objects', a_dict('a live Kubernetes object', required=('kind', 'metadata'))))
def rdma_gitops_kept(live):
    """The objects of ``live`` that Argo CD or Flux keeps, with the tool, its application and the mark it left."""
    kept = []
    for obj in live:
        keeper = gitops_keeper(obj)
        if keeper:
            kept.append(dict(keeper, object=object_name(obj), name=obj['metadata'].get('name'),
                             reason='kept by %s (%s, %s): change it in Git' % (
                                 keeper['tool'], keeper['application'], keeper['mark'])))
    return kept


class FilterModule(object):
    def filters(self):
        return {'apply_plan': rdma_apply_plan, 'release_plan': rdma_release_plan,
                'gitops_kept': rdma_gitops_kept}
