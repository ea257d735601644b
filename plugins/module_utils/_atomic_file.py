# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Replace one or several files atomically, all or nothing, with their attributes set before they take effect.

Every new content is written to a temporary file beside its destination, which gets the destination's owner,
mode and SELinux context and then the ``mode``/``owner``/``group``/SELinux options: a wrong option fails there,
before anything is moved. An optional check sees all candidates before any is moved. Then backups are taken and
the candidates are renamed over their destinations; if a rename fails, the destinations already replaced get
their previous inode back (a hard link kept for that), so a failure of any kind leaves every file as it was.

A symbolic link as destination is followed by default (its target is replaced and the link stays), like
``ansible.builtin.copy`` with ``follow: true``; with ``follow`` false the link itself is replaced by the file.

The functions take an AnsibleModule (they call its attribute setters and ``fail_json``).
"""

from __future__ import annotations

import errno
import grp
import os
import pwd
import re
import stat
import tempfile

from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import describe_os_error

_OCTAL_MODE_RE = re.compile(r'^0?[0-7]{1,4}$|^0o[0-7]{1,4}$')
_SYMBOLIC_MODE_RE = re.compile(r'^[ugoa]*[-+=](?:[rwxXst]*|[ugo])(?:[-+=](?:[rwxXst]*|[ugo]))*'
                               r'(?:,[ugoa]*[-+=](?:[rwxXst]*|[ugo])(?:[-+=](?:[rwxXst]*|[ugo]))*)*$')


class FileWrite(object):
    """New content for ``path``; ``attributes`` True when the module's file options apply to it."""

    def __init__(self, path, data, attributes=False):
        self.path = path
        self.data = data if isinstance(data, bytes) else data.encode('utf-8')
        self.attributes = attributes
        self.target = None
        self.candidate = None
        self.rollback = None
        self.backup = None
        self.moved = False


def destination(module, path, follow=True):
    """The file that a write to ``path`` replaces: the link's target when following links. Fails when unusable."""
    target = path
    if follow and os.path.islink(path):
        try:
            os.stat(path)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                module.fail_json(msg='%s is a symbolic link loop; point the link at a file or set follow: false to '
                                 'replace the link itself.' % path)
        target = os.path.realpath(path)
    if os.path.isdir(target):
        module.fail_json(msg='%s is a directory, not a file; give the path of the file (for example %s).'
                         % (path, os.path.join(path, 'config.toml') if 'containerd' in path else path + '/FILE'))
    directory = os.path.dirname(target) or '.'
    if os.path.lexists(directory) and not os.path.isdir(directory):
        module.fail_json(msg='The directory %s of %s is not a directory; fix the path.' % (directory, path))
    return target


def check_file_options(module):
    """Refuse ``mode``/``owner``/``group`` values that cannot be applied, naming the option and the fix."""
    params = module.params
    owner, group, mode = params.get('owner'), params.get('group'), params.get('mode')
    if owner is not None:
        try:
            int(owner)
        except ValueError:
            try:
                pwd.getpwnam(owner)
            except KeyError:
                module.fail_json(msg='owner %r is not a user on this host; give an existing user name or a uid. '
                                 'Nothing was written.' % owner)
    if group is not None:
        try:
            int(group)
        except ValueError:
            try:
                grp.getgrnam(group)
            except KeyError:
                module.fail_json(msg='group %r is not a group on this host; give an existing group name or a gid. '
                                 'Nothing was written.' % group)
    if mode is not None:
        problem = mode_problem(mode)
        if problem:
            module.fail_json(msg='mode: %s. Nothing was written.' % problem)


def mode_problem(mode):
    """None when ``mode`` is a file mode the collection may write (files it writes are configs and manifests), else
    why not: the one check of modes for every module and action plugin.

    Octal (``"0644"``, ``0o644``, or the int of ``0644`` in YAML) or symbolic (``u=rw,g=r,o=r``). Refused besides
    malformed values: setuid, setgid and sticky bits (no config needs them) and world-writable files (anyone on the
    node could change what containerd or the cluster loads).
    """
    if isinstance(mode, bool) or not isinstance(mode, (int, str)):
        return '%r is neither an octal mode (quoted, such as "0644") nor a symbolic one (such as "u=rw,g=r,o=r")' % (
            mode,)
    if isinstance(mode, int):
        if not 0 <= mode <= 0o7777:
            return '%r is out of range for a file mode (0 to 07777; quote octal modes, such as "0644")' % (mode,)
        bits = mode
    else:
        text = mode.strip()
        if _OCTAL_MODE_RE.match(text):
            bits = int(text.replace('0o', ''), 8)
        elif _SYMBOLIC_MODE_RE.match(text):
            return _symbolic_mode_problem(text)
        else:
            return '%r is neither an octal mode (quoted, such as "0644") nor a symbolic one (such as "u=rw,g=r,o=r")' % (
                mode,)
    if bits & 0o7000:
        return '%r sets the setuid, setgid or sticky bit, which no file of this collection needs; use a mode such ' \
               'as "0644"' % (mode,)
    if bits & 0o002:
        return '%r makes the file world-writable, so anyone on the node could change it; use a mode such as ' \
               '"0644"' % (mode,)
    return None


def _symbolic_mode_problem(text):
    for clause in text.split(','):
        who = re.match(r'^[ugoa]*', clause).group(0)
        for _op, perms in re.findall(r'([-+=])([rwxXstugo]*)', clause[len(who):]):
            if _op == '-':
                continue
            if 's' in perms or 't' in perms:
                return '%r sets the setuid, setgid or sticky bit, which no file of this collection needs; use a mode ' \
                       'such as "u=rw,g=r,o=r"' % text
            if 'w' in perms and ('o' in who or 'a' in who):
                return '%r makes the file world-writable, so anyone on the node could change it; use a mode such as ' \
                       '"u=rw,g=r,o=r"' % text
    return None


def _new_file_mode():
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _copy_attributes(module, source, candidate):
    """Owner, mode and SELinux context of ``source`` (the file being replaced) onto ``candidate``."""
    if os.path.exists(source):
        info = os.stat(source)
        os.chmod(candidate, stat.S_IMODE(info.st_mode))
        if os.geteuid() == 0:
            os.chown(candidate, info.st_uid, info.st_gid)
        if module.selinux_enabled():
            module.set_context_if_different(candidate, module.selinux_context(source), False)
    else:
        os.chmod(candidate, _new_file_mode())
        if module.selinux_enabled():
            module.set_context_if_different(candidate, module.selinux_default_context(source), False)


def _remove(path):
    if path and os.path.lexists(path):
        try:
            os.unlink(path)
        except OSError:
            pass


def _fail(module, writes, message, **extra):
    _cleanup(writes)
    module.fail_json(msg=message, **extra)


def _cleanup(writes):
    for write in writes:
        _remove(write.candidate)
        write.candidate = None
        _remove(write.rollback)
        write.rollback = None


def stage_beside(path, data, mode=None):
    """A temporary file beside ``path`` (same filesystem, so a rename replaces ``path`` atomically) holding
    ``data``, synced; removed again when it cannot be written whole. Returns its path."""
    handle, candidate = tempfile.mkstemp(dir=os.path.dirname(path) or '.', prefix='.%s.' % os.path.basename(path))
    try:
        with os.fdopen(handle, 'wb') as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        if mode is not None:
            os.chmod(candidate, mode)
    except BaseException:
        _remove(candidate)
        raise
    return candidate


def _prepare(module, write, follow):
    write.target = destination(module, write.path, follow)
    directory = os.path.dirname(write.target) or '.'
    if not os.path.isdir(directory):
        module.fail_json(msg='The directory %s of %s does not exist; create it first. Nothing was written.'
                         % (directory, write.path))
    try:
        write.candidate = stage_beside(write.target, write.data)
    except (IOError, OSError) as exc:
        module.fail_json(msg='Cannot write a file in %s (%s); nothing was written.'
                         % (directory, describe_os_error(exc, directory).split(' ', 1)[1]))
    _copy_attributes(module, write.target, write.candidate)
    if write.attributes:
        file_args = module.load_file_common_arguments(module.params, path=write.candidate)
        module.set_fs_attributes_if_different(file_args, False)


def write_files(module, writes, backup=False, follow=True, check=None):
    """Replace every file of ``writes`` or none; returns {path: backup file} of the files that had one.

    ``check(candidates)`` gets {path: candidate file} before anything is moved and may call ``fail_json``.
    """
    check_file_options(module)
    try:
        for write in writes:
            _prepare(module, write, follow)
        if check is not None:
            check(dict((write.path, write.candidate) for write in writes))
        for write in writes:
            if os.path.exists(write.target):
                rollback = write.candidate + '.previous'
                try:
                    os.link(write.target, rollback)
                except OSError as exc:
                    _fail(module, writes, 'Cannot keep the previous %s for a rollback (%s); nothing was written.'
                          % (write.target, exc))
                write.rollback = rollback
                if backup:
                    write.backup = module.backup_local(write.target)
        for write in writes:
            try:
                os.rename(write.candidate, write.target)
            except OSError as exc:
                _restore(writes)
                _fail(module, writes, 'Cannot replace %s (%s); every file was left as it was.'
                      % (write.target, describe_os_error(exc, write.target).split(' ', 1)[1]))
            write.candidate = None
            write.moved = True
    finally:
        _cleanup(writes)
    return dict((write.path, write.backup) for write in writes if write.backup)


def _restore(writes):
    """Put back the previous inode of every destination already replaced; drop the backups of this run."""
    for write in writes:
        if write.moved:
            if write.rollback:
                os.rename(write.rollback, write.target)
                write.rollback = None
            else:
                _remove(write.target)
            write.moved = False
        if write.backup:
            _remove(write.backup)
            write.backup = None


def update_attributes(module, path, changed, follow=True):
    """Mode, owner, group, SELinux options on an existing file whose content stays; returns the changed flag."""
    check_file_options(module)
    target = destination(module, path, follow)
    if not os.path.exists(target):
        return changed
    file_args = module.load_file_common_arguments(module.params, path=target)
    return module.set_fs_attributes_if_different(file_args, changed)


def write_scratch(path, text):
    """Write ``text`` to a new file of the module's own temporary directory (a copy a tool checks, never a node's
    file: those go through write_files)."""
    with open(path, 'x', encoding='utf-8') as handle:
        handle.write(text)
