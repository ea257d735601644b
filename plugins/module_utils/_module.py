# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection's AnsibleModule: argument errors always name the option.

ansible-core checks a list-of-dicts option for no_log values before it converts its elements, so a string given
where the list of dicts belongs (``rlimits: NOFILE``) fails with the bare "dictionary requested, could not parse
JSON or key=value" of that scan, and the user is not told which option is wrong. The converter's own error names the
option ("Elements value for option 'rlimits' is of type str ..."); this class reports that one instead.
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
        super().fail_json(msg=msg, **kwargs)
