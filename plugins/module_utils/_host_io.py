# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run the host tools the modules read, and read the host files they parse, with failures that say what to fix.

One place for what every module would otherwise repeat (the style of community.general's ``_xfconf``): the
tool's path (an explicit option is checked before it is run: a directory or a non-executable file is named as
such, not reported as "Error executing command."), ``LC_ALL=C`` so that output is parseable, output decoded so
that a stray byte never ends a module in a UnicodeDecodeError, and file reads that name the file and the reason
(missing, a directory, permission denied, not UTF-8 at byte N).

``find_tool`` and ``run_tool`` take an AnsibleModule; everything else is free of Ansible imports.
"""

from __future__ import annotations

import errno
import os

COMMAND_ENV = {'LC_ALL': 'C', 'LANG': 'C'}
# Where distributions and NVIDIA's packages put the RDMA and firmware tools besides PATH.
SBIN_DIRS = ['/usr/sbin', '/sbin', '/usr/local/sbin', '/usr/local/bin']
_MESSAGE_LIMIT = 800


class HostReadError(Exception):
    """A host file that cannot be read as text; the message names the file and the reason."""

    def __init__(self, message, path=None):
        super().__init__(message)
        self.path = path


def describe_os_error(exc, path):
    """``[Errno 21] Is a directory: 'x'`` -> ``/x is a directory`` (and the like), for messages."""
    reasons = {
        errno.ENOENT: 'does not exist',
        errno.EISDIR: 'is a directory, not a file',
        errno.ENOTDIR: 'has a path component that is not a directory',
        errno.EACCES: 'cannot be read: permission denied',
        errno.EPERM: 'cannot be read: operation not permitted',
        errno.EINVAL: 'cannot be read: the kernel refuses the read (EINVAL)',
        errno.ELOOP: 'is a symbolic link loop',
    }
    return '%s %s' % (path, reasons.get(exc.errno, 'cannot be read: %s' % (exc.strerror or exc)))


def read_bytes(path):
    """The bytes of ``path``; HostReadError naming the file and the reason otherwise."""
    if os.path.isdir(path):
        raise HostReadError('%s is a directory, not a file' % path, path)
    try:
        with open(path, 'rb') as handle:
            return handle.read()
    except (IOError, OSError) as exc:
        raise HostReadError(describe_os_error(exc, path), path)


def decode_text(data, path='input', lenient=False):
    """UTF-8 text of ``data``.

    Strict by default: a file that is not UTF-8 raises HostReadError naming the byte offset, because a config or a
    manifest with a stray byte must be fixed, not guessed. ``lenient`` replaces undecodable bytes with U+FFFD, for
    values that are legitimately odd (a node description, a tool's free-text output).
    """
    if isinstance(data, str):
        return data
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as exc:
        if lenient:
            return data.decode('utf-8', 'replace')
        raise HostReadError('%s is not UTF-8 text (byte 0x%02x at offset %d); fix or remove that byte'
                            % (path, data[exc.start], exc.start), path)


def read_text(path, lenient=False):
    """Text of ``path`` (see ``decode_text``); HostReadError naming the file and the reason otherwise."""
    return decode_text(read_bytes(path), path, lenient)


def read_text_or_none(path, lenient=False):
    """Like ``read_text``, but None when the file does not exist (optional files)."""
    if not os.path.lexists(path):
        return None
    return read_text(path, lenient)


def printable(text, limit=_MESSAGE_LIMIT):
    """Text safe to quote in a message: control characters escaped, cut at ``limit`` characters."""
    text = '' if text is None else str(text)
    shown = ''.join(c if (c.isprintable() or c in '\n\t') else '\\x%02x' % (ord(c) & 0xff) for c in text)
    if len(shown) > limit:
        shown = shown[:limit] + '... (%d more characters)' % (len(shown) - limit)
    return shown


def output_summary(out, err, limit=_MESSAGE_LIMIT):
    """What a failed tool said, for a message: its error lines first, from the first one on.

    A Go program (containerd, kubectl) that panics prints ``panic: ...`` followed by a long goroutine dump; the
    first line is the one that explains, so the summary starts there and is cut at the end, never at the start.
    """
    text = '\n'.join(part.strip() for part in (err, out) if part and part.strip())
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    if not lines:
        return 'no output'
    for marker in ('panic:', 'fatal error:', '-E-', 'Error:', 'error:', 'ERROR'):
        hits = [i for i, line in enumerate(lines) if line.lstrip().startswith(marker)]
        if hits:
            lines = lines[hits[0]:]
            break
    return printable('\n'.join(lines), limit)


def check_executable(path):
    """None when ``path`` can be run, else why not (for an explicit ``*_path`` option)."""
    if not os.path.lexists(path):
        return '%s does not exist' % path
    if not os.path.exists(path):
        return '%s is a broken symbolic link' % path
    if os.path.isdir(path):
        return '%s is a directory, not an executable file' % path
    if not os.access(path, os.X_OK):
        return '%s is not executable (chmod +x, or point at the tool itself)' % path
    return None


def find_tool(module, names, explicit=None, option=None, opt_dirs=None, required=True, hint=''):
    """The path of the first tool of ``names`` found, or of ``explicit`` after checking it can be run.

    ``option`` names the module option that set ``explicit``, so the message says what to change. Returns None
    when nothing is found and ``required`` is false.
    """
    if isinstance(names, str):
        names = [names]
    if explicit:
        problem = check_executable(explicit)
        if problem:
            module.fail_json(msg='%s: %s. Fix %s or leave it unset to search PATH.'
                             % (option or names[0], problem, option or 'the path'))
        return explicit
    dirs = SBIN_DIRS if opt_dirs is None else opt_dirs
    for name in names:
        path = module.get_bin_path(name, required=False, opt_dirs=dirs)
        if path:
            return path
    if required:
        module.fail_json(msg='%s was not found on PATH or in %s.%s' % (
            ' or '.join(names), ', '.join(dirs), (' ' + hint) if hint else ''))
    return None


def run_tool(module, argv, data=None, what=None):
    """Run ``argv`` with ``LC_ALL=C``; returns ``(rc, out, err)`` as text (stray bytes become U+FFFD).

    A tool that cannot be started at all fails the module naming the tool and the reason instead of Ansible's
    generic "Error executing command.".
    """
    argv = [str(arg) for arg in argv]
    problem = check_executable(argv[0]) if os.path.isabs(argv[0]) else None
    if problem:
        module.fail_json(msg='Cannot run %s: %s.' % (what or os.path.basename(argv[0]), problem), cmd=argv)
    try:
        rc, out, err = module.run_command(argv, data=data, environ_update=COMMAND_ENV, encoding=None,
                                          handle_exceptions=False)
    except (IOError, OSError) as exc:
        module.fail_json(msg='Cannot run %s: %s.' % (' '.join(argv), describe_os_error(exc, argv[0])), cmd=argv)
    return rc, decode_text(out or b'', lenient=True), decode_text(err or b'', lenient=True)
