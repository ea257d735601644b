# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write rendered manifests into a directory on the controller in one task: the files that differ, atomically."""

from __future__ import annotations

import os
import tempfile

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

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
        with open(path, 'rb') as handle:
            return handle.read().decode('utf-8', 'replace')
    except FileNotFoundError:
        return None
    except (IOError, OSError) as exc:
        raise AnsibleActionFail('gpunet.rdma.manifests: cannot read %s: %s' % (path, exc.strerror or exc))


def _mode(path):
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return None


def _stage(path, content, mode):
    """A temporary file beside ``path`` (same filesystem) holding ``content``; renamed over it by _commit."""
    directory = os.path.dirname(path)
    fd, temporary = tempfile.mkstemp(dir=directory, prefix='.%s.' % os.path.basename(path))
    try:
        with os.fdopen(fd, 'wb') as handle:
            handle.write(content.encode('utf-8'))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
    except BaseException:
        _discard([temporary])
        raise
    return temporary


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
        try:
            mode = int(str(args['mode']), 8)
        except ValueError:
            raise AnsibleActionFail('gpunet.rdma.manifests: mode must be octal such as 0644, got %r' % args['mode'])
        dest = os.path.abspath(os.path.expanduser(args['dest']))
        if os.path.exists(dest) and not os.path.isdir(dest):
            raise AnsibleActionFail('gpunet.rdma.manifests: dest %s is not a directory; choose a directory for the '
                                    'rendered manifests' % dest)
        names = [item['name'] for item in args['files']]
        for name in names:
            if not name or os.path.basename(name) != name or name in ('.', '..'):
                raise AnsibleActionFail('gpunet.rdma.manifests: %r is not a file name (no directories); name each file '
                                        'inside dest' % name)
        twice = sorted(set(name for name in names if names.count(name) > 1))
        if twice:
            raise AnsibleActionFail('gpunet.rdma.manifests: %s given twice' % ', '.join(twice))
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
                    temporaries.append(_stage(path, content, mode))
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
