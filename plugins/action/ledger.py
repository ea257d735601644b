# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Record a stage's outcome in the host's ledger fact, on the controller (no connection to the host)."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpunet.rdma.plugins.plugin_utils._ledger import ACTION_NAMES, LedgerError, hold, record, resolve

FACT = 'gpunet_rdma_ledger'
ARGUMENT_SPEC = dict(
    stage=dict(type='str'),
    changed=dict(type='bool', default=False),
    pending=dict(type='list', elements='raw', default=[]),
    problems=dict(type='list', elements='str', default=[]),
    detail=dict(type='dict', default={}),
    status=dict(type='str', choices=['ok', 'changed', 'pending', 'failed', 'skipped']),
    failed=dict(type='bool', default=False),
    # an unknown action name is refused naming the known ones: a typo would resolve or hold nothing, silently
    resolve=dict(type='list', elements='str', choices=list(ACTION_NAMES)),
    how=dict(type='str'),
    hold=dict(type='list', elements='dict', options=dict(
        action=dict(type='str', required=True, choices=list(ACTION_NAMES)),
        reason=dict(type='str'))),
)


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        # An option templated to null is an option not given (as with omit).
        for name in [key for key, value in self._task.args.items() if value is None]:
            del self._task.args[name]
        _validation, args = self.validate_argument_spec(
            argument_spec=ARGUMENT_SPEC,
            required_one_of=[('stage', 'resolve', 'hold')],
            mutually_exclusive=[('stage', 'resolve', 'hold')])
        facts = (task_vars or {}).get('ansible_facts') or {}
        ledger = facts.get(FACT) or {}
        try:
            if args['hold'] is not None:
                ledger = hold(ledger, args['hold'])
            elif args['resolve'] is not None:
                ledger = resolve(ledger, args['resolve'], args['how'] or ', '.join(args['resolve']))
            else:
                ledger = record(ledger, args['stage'], changed=args['changed'], pending=args['pending'],
                                problems=args['problems'], detail=args['detail'], status=args['status'],
                                failed=args['failed'])
        except LedgerError as exc:
            raise AnsibleActionFail('gpunet.rdma.ledger: %s' % exc)
        # Recording is bookkeeping on the controller: the host did not change.
        result.update(changed=False, ansible_facts={FACT: ledger})
        return result
