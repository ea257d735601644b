# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write rendered manifests into a directory on the controller in one task: the files that differ, atomically."""

from __future__ import annotations

import os
import re

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpunet.rdma.plugins.module_utils._atomic_file import mode_problem, stage_beside
from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import HostReadError, read_text_or_none

ARGUMENT_SPEC = dict(
    dest=dict(type='path', required=True),
    files=dict(type='list', elements='dict', required=True, options=dict(
        name=dict(type='str', required=True),
        content=dict(type='str', required=True),
    )),
    mode=dict(type='str', default='0644'),
)


def _read(path):
    try:
        return read_text_or_none(path, lenient=True)
    except HostReadError as exc:
        raise AnsibleActionFail('gpunet.rdma.manifests: %s; no manifest was changed' % exc)


def _content_problem(item):
    """Why ``item['content']`` cannot be written as a UTF-8 manifest, or None."""
    try:
        item['content'].encode('utf-8')
    except UnicodeEncodeError as exc:
        return 'the content of %s is not UTF-8 text (character %d); render it from UTF-8 sources' % (
            item['name'], exc.start)
    return None


def _mode(path):
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return None


def _discard(paths):
    for path in paths:
        try:
            os.unlink(path)
        except OSError:
            pass


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        problem = mode_problem(args['mode'])
        if problem is None and not re.match(r'^0?[0-7]{3,4}$|^0o[0-7]{3,4}$', args['mode'].strip()):
            problem = '%r is not an octal mode; give one such as "0644"' % args['mode']
        if problem:
            raise AnsibleActionFail('gpunet.rdma.manifests: mode: %s. Nothing was written.' % problem)
        mode = int(args['mode'].strip().replace('0o', ''), 8)
        if '\x00' in args['dest']:
            raise AnsibleActionFail('gpunet.rdma.manifests: dest %r contains a NUL byte; give a directory path'
                                    % args['dest'])
        dest = os.path.abspath(os.path.expanduser(args['dest']))
        if os.path.exists(dest) and not os.path.isdir(dest):
            raise AnsibleActionFail('gpunet.rdma.manifests: dest %s is not a directory; choose a directory for the '
                                    'rendered manifests' % dest)
        names = [item['name'] for item in args['files']]
        for name in names:
            if not name or os.path.basename(name) != name or name in ('.', '..') or '\x00' in name:
                raise AnsibleActionFail('gpunet.rdma.manifests: %r is not a file name (no directories); name each file '
                                        'inside dest' % name)
        twice = sorted(set(name for name in names if names.count(name) > 1))
        if twice:
            raise AnsibleActionFail('gpunet.rdma.manifests: %s given twice' % ', '.join(twice))
        for item in args['files']:
            problem = _content_problem(item)
            if problem:
                raise AnsibleActionFail('gpunet.rdma.manifests: %s. Nothing was written.' % problem)
        written, diffs, staged = [], [], []
        for item in args['files']:
            # A manifest that is a symlink (e.g. into a GitOps checkout) is written where it points.
            path = os.path.realpath(os.path.join(dest, item['name']))
            before = _read(path)
            if before == item['content'] and _mode(path) in (None, mode):
                continue
            written.append(item['name'])
            diffs.append({'before': before or '', 'after': item['content'], 'before_header': path,
                          'after_header': path})
            staged.append((path, item['content']))
        if staged and not self._task.check_mode:
            # Every file is written to a temporary beside it first; only when all are written are they renamed,
            # so a failure (full disk, permissions) leaves every manifest as it was.
            temporaries = []
            try:
                os.makedirs(dest, exist_ok=True)
                for path, content in staged:
                    temporaries.append(stage_beside(path, content.encode('utf-8'), mode))
            except (IOError, OSError) as exc:
                _discard(temporaries)
                raise AnsibleActionFail('gpunet.rdma.manifests: cannot write %s: %s; no manifest was changed'
                                        % (getattr(exc, 'filename', None) or dest, exc.strerror or exc))
            for (path, _content), temporary in zip(staged, temporaries):
                os.rename(temporary, path)
        result.update(changed=bool(written), dest=dest, written=written,
                      files=[os.path.join(dest, name) for name in names])
        if self._task.diff and diffs:
            result['diff'] = diffs
        return result
