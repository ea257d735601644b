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
import time

COMMAND_ENV = {'LC_ALL': 'C', 'LANG': 'C'}
# A tool that hangs (a wedged adapter, a firmware tool waiting on a lock) is stopped after this many seconds unless the
# module has a ``timeout`` option, which then decides.
DEFAULT_TOOL_TIMEOUT = 300
# Node files the modules read are sysfs attributes, configs and manifests; anything larger is not one of them.
MAX_READ_BYTES = 16 * 1024 * 1024
# Where distributions and NVIDIA's packages put the RDMA and firmware tools besides PATH.
SBIN_DIRS = ['/usr/sbin', '/sbin', '/usr/local/sbin', '/usr/local/bin']
# coreutils and systemd's tools: /usr/bin on every distribution, also when a service's PATH leaves it out.
SYSTEM_BIN_DIRS = ['/usr/bin', '/bin']
# containerd and ctr: /usr/local/bin from the upstream release tarball (and kubespray), /usr/bin from packages,
# /usr/sbin from some distributions' containerd packages.
CONTAINERD_DIRS = ['/usr/local/bin', '/usr/bin', '/usr/sbin']
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


def check_path(path):
    """HostReadError when ``path`` cannot name a file at all (a NUL byte: the kernel would refuse it)."""
    if not isinstance(path, (str, bytes)) or not path:
        raise HostReadError('%r is not a file path' % (path,), path)
    if ('\x00' if isinstance(path, str) else b'\x00') in path:
        raise HostReadError('%s contains a NUL byte; a file path cannot' % printable(path, 200), path)


def read_bytes(path, limit=MAX_READ_BYTES):
    """The bytes of ``path``; HostReadError naming the file and the reason otherwise.

    ``limit`` bounds what is read: a path that points at a device or a huge file by mistake is refused, not read whole.
    """
    check_path(path)
    if os.path.isdir(path):
        raise HostReadError('%s is a directory, not a file' % path, path)
    try:
        with open(path, 'rb') as handle:
            data = handle.read(limit + 1)
    except (IOError, OSError) as exc:
        raise HostReadError(describe_os_error(exc, path), path)
    if len(data) > limit:
        raise HostReadError('%s is larger than %d bytes; this is not the file to read here' % (path, limit), path)
    return data


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


def read_text(path, lenient=False, limit=MAX_READ_BYTES):
    """Text of ``path`` (see ``decode_text``); HostReadError naming the file and the reason otherwise."""
    return decode_text(read_bytes(path, limit), path, lenient)


def read_text_or_none(path, lenient=False, limit=MAX_READ_BYTES):
    """Like ``read_text``, but None when the file does not exist (optional files)."""
    check_path(path)
    if not os.path.lexists(path):
        return None
    return read_text(path, lenient, limit)


def read_value(path, default=None):
    """A sysfs attribute or one-line file, stripped; ``default`` when it does not exist; HostReadError otherwise.

    Attributes are read leniently (a firmware-provided string may hold any byte); an unreadable one is an error, not a
    missing value, because "cannot read" and "not there" lead to different fixes.
    """
    text = read_text_or_none(path, lenient=True)
    return default if text is None else text.strip()


def list_dir(path, missing_ok=True):
    """The sorted entry names of the directory ``path``.

    ``[]`` when it does not exist and ``missing_ok``; HostReadError when it is a file or cannot be listed (permission
    denied): an unlistable directory is not an empty one, since what it holds may change the meaning of a config.
    """
    check_path(path)
    if not os.path.lexists(path):
        if missing_ok:
            return []
        raise HostReadError('%s does not exist' % path, path)
    if not os.path.isdir(path):
        raise HostReadError('%s is not a directory' % path, path)
    try:
        return sorted(os.listdir(path))
    except (IOError, OSError) as exc:
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise HostReadError('%s cannot be listed: permission denied' % path, path)
        raise HostReadError(describe_os_error(exc, path), path)


def read_link(path, default=None):
    """The target of the symbolic link ``path``; ``default`` when ``path`` is not a link; HostReadError otherwise."""
    check_path(path)
    if not os.path.islink(path):
        return default
    try:
        return os.readlink(path)
    except (IOError, OSError) as exc:
        raise HostReadError(describe_os_error(exc, path), path)


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


def tool_timeout(module):
    """The seconds a tool may run: the module's ``timeout`` option when it has one, else DEFAULT_TOOL_TIMEOUT."""
    value = module.params.get('timeout') if isinstance(getattr(module, 'params', None), dict) else None
    if value is None:
        return DEFAULT_TOOL_TIMEOUT
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        module.fail_json(msg='timeout: %r is not a number of seconds; give a whole number of seconds, 1 or more.'
                         % (value,))
    return value


def timeout_argv(module, seconds):
    """coreutils ``timeout`` in front of a command: TERM after ``seconds``, KILL 5 s later."""
    timeout = module.get_bin_path('timeout', required=True, opt_dirs=SYSTEM_BIN_DIRS)
    return [timeout, '--kill-after=5', str(max(1, int(seconds)))]


def timed_out(rc, elapsed=None, seconds=None):
    """True when coreutils ``timeout`` stopped the command: 124 when TERM was enough, 137 when it took KILL - or -9,
    since ``timeout`` sends the follow-up KILL to its whole process group, itself included. A -9 before the limit is
    someone else's KILL (the OOM killer), not the timeout."""
    if rc in (124, 137):
        return True
    return rc == -9 and elapsed is not None and seconds is not None and elapsed >= seconds


def run_argv(module, argv, seconds, data=None):
    """The one place a module runs a command: ``LC_ALL=C``, under coreutils ``timeout``, output decoded.

    Returns ``(rc, out, err, stopped)``; ``stopped`` says the timeout stopped the command (``rc`` is then the status
    ``timeout`` left). Raises OSError when the command cannot be started; ``run_tool`` turns that into a failure naming
    the tool, callers in a thread (where fail_json cannot end the module) handle it themselves.
    """
    started = time.monotonic()
    rc, out, err = module.run_command(timeout_argv(module, seconds) + [str(arg) for arg in argv], data=data,
                                      environ_update=COMMAND_ENV, encoding=None, handle_exceptions=False)
    stopped = timed_out(rc, time.monotonic() - started, max(1, int(seconds)))
    return rc, decode_text(out or b'', lenient=True), decode_text(err or b'', lenient=True), stopped


def _start(module, argv, data, what, timeout):
    """run_argv behind the checks every tool run shares: ``(argv, name, seconds, rc, out, err, stopped)``."""
    argv = [str(arg) for arg in argv]
    name = what or os.path.basename(argv[0])
    problem = check_executable(argv[0]) if os.path.isabs(argv[0]) else None
    if problem:
        module.fail_json(msg='Cannot run %s: %s.' % (name, problem), cmd=argv)
    seconds = tool_timeout(module) if timeout is None else timeout
    try:
        rc, out, err, stopped = run_argv(module, argv, seconds, data=data)
    except (IOError, OSError) as exc:
        module.fail_json(msg='Cannot run %s: %s.' % (' '.join(argv), describe_os_error(exc, argv[0])), cmd=argv)
    return argv, name, seconds, rc, out, err, stopped


def run_tool(module, argv, data=None, what=None, timeout=None):
    """Run ``argv`` with ``LC_ALL=C`` under a timeout; returns ``(rc, out, err)`` as text (stray bytes become U+FFFD).

    A tool that cannot be started at all fails the module naming the tool and the reason instead of Ansible's
    generic "Error executing command."; one that runs past ``timeout`` seconds (default: the module's ``timeout``
    option, see ``tool_timeout``) is stopped and fails the module naming the tool, the limit and the option.
    """
    argv, name, seconds, rc, out, err, stopped = _start(module, argv, data, what, timeout)
    if stopped:
        module.fail_json(msg='%s did not finish within %d seconds and was stopped (%s). The device or the tool may be '
                         'hung; check it by hand, or raise the module\'s timeout option if it is only slow.'
                         % (name, seconds, ' '.join(argv)), cmd=argv)
    return rc, out, err


def run_stoppable(module, argv, data=None, what=None, timeout=None):
    """Like run_tool for a run whose stop the caller explains itself (a firmware burn: the flash is unknown now; a
    perftest client stuck in its exchange): returns ``(stopped, rc, out, err)``."""
    _argv, _name, _seconds, rc, out, err, stopped = _start(module, argv, data, what, timeout)
    return stopped, rc, out, err


def run_in_step(module, argv):
    """Run ``argv`` like run_tool inside a Step of a multi-step write; returns ``(out, err)``.

    Raises RuntimeError instead of failing the module: an undo runs while the module is already failing, where a
    second fail_json would cut the roll-back short, and an apply that fails must first put its own port back.
    """
    seconds = tool_timeout(module)
    try:
        rc, out, err, stopped = run_argv(module, argv, seconds)
    except (IOError, OSError) as exc:
        raise RuntimeError('cannot run %s: %s' % (' '.join(argv), exc.strerror or exc))
    if stopped:
        raise RuntimeError('%s did not finish within %d seconds and was stopped; the device or the tool may be hung, '
                           'check it by hand or raise the timeout option if it is only slow' % (' '.join(argv), seconds))
    if rc != 0:
        raise RuntimeError('%s failed (rc=%d): %s' % (' '.join(argv), rc, output_summary(out, err)))
    return out, err


def write_attribute(path, text):
    """Write ``text`` to the sysfs attribute or one-value file ``path``: the one sysfs write of the collection.

    Truncating (a file-backed attribute never keeps the tail of a longer old value) and in one write(2), which is how
    the kernel takes an attribute. OSError carries the path; callers run it inside a Step so that it is undone with
    the rest of its change.
    """
    check_path(path)
    data = text.encode('utf-8') if isinstance(text, str) else bytes(text)
    handle = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        written = os.write(handle, data)
        if written != len(data):
            # an attribute takes its value in one write; a part of it is not the value asked for
            raise OSError(errno.EIO, 'short write (%d of %d bytes)' % (written, len(data)), path)
    except OSError as exc:
        if not exc.filename:
            exc.filename = path
        raise
    finally:
        os.close(handle)
