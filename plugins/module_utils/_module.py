# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection's AnsibleModule: argument errors always name the option.

ansible-core checks a list-of-dicts option for no_log values before it converts its elements, so a string given
where the list of dicts belongs (``rlimits: NOFILE``) fails with the bare "dictionary requested, could not parse
JSON or key=value" of that scan, and the user is not told which option is wrong. The converter's own error names the
option ("Elements value for option 'rlimits' is of type str ..."); this class reports that one instead.

It also applies multi-step writes as a whole (``apply_steps``): see the comment there.
"""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.errors import NoLogError


class RdmaModule(AnsibleModule):

    def __init__(self, *args, **kwargs):
        self._validating_arguments = True
        super().__init__(*args, **kwargs)
        self._validating_arguments = False

    def fail_json(self, msg, **kwargs):
        result = getattr(self, 'validation_result', None)
        if getattr(self, '_validating_arguments', False) and result is not None and result.errors:
            errors = list(result.errors)
            if isinstance(errors[0], NoLogError):
                named = [str(error) for error in errors if not isinstance(error, NoLogError)]
                if named:
                    msg = named[0]
        if getattr(self, '_rolling_back', False):
            # an undo that fails through a helper: one failure message only, and the other undos still run
            raise RuntimeError(msg)
        if getattr(self, '_applied_steps', None) is not None:
            msg = '%s %s' % (msg, self._roll_back())
        super().fail_json(msg=msg, **kwargs)

    # ------------------------------------------------------------------ multi-step writes
    # A change that touches several files, ports or functions is planned first (a list of Steps) and applied as a
    # whole by apply_steps. When a step fails - an exception, or the module's own fail_json while steps are being
    # applied - the steps already applied are undone in reverse order, and the failure message says what was changed
    # and undone (or could not be undone), so a failed run leaves the node as it found it or says exactly where not.

    def apply_steps(self, steps):
        """Apply ``steps`` (Step objects) in order; returns their descriptions. Fails the module, rolled back, else."""
        self._applied_steps = []
        for step in steps:
            try:
                step.apply()
            except (IOError, OSError, ValueError, RuntimeError) as exc:
                self.fail_json(msg='%s failed: %s.' % (step.what, exc))
            self._applied_steps.append(step)
        applied, self._applied_steps = self._applied_steps, None
        return [step.what for step in applied]

    def _roll_back(self):
        """Undo the steps applied so far; returns the sentence for the failure message."""
        applied, self._applied_steps = getattr(self, '_applied_steps', None), None
        if not applied:
            return 'Nothing was changed.'
        undone, kept = [], []
        self._rolling_back = True
        for step in reversed(applied):
            try:
                if step.undo is None:
                    raise RuntimeError('it cannot be undone')
                step.undo()
                undone.append(step.what)
            except Exception as exc:  # pylint: disable=broad-except  # every step is undone even if one cannot be
                kept.append('%s (%s)' % (step.what, exc))
        self._rolling_back = False
        sentence = 'Changed before the failure and undone: %s.' % ('; '.join(undone) if undone else 'nothing')
        if kept:
            sentence += ' Changed and NOT undone, fix by hand: %s.' % '; '.join(kept)
        return sentence


class Step(object):
    """One change of a planned multi-step write: ``apply()`` makes it, ``undo()`` restores what was there."""

    def __init__(self, what, apply, undo=None):
        self.what = what
        self.apply = apply
        self.undo = undo
