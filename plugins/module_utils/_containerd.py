# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Build containerd base runtime specs with rlimits and wire them into config.toml.

Pods get the rlimits of the OCI spec that runc applies, so the memlock limit
RDMA needs must be in containerd's ``base_runtime_spec``. The TOML editing
here works on lines: it touches only the ``base_runtime_spec`` key of the
runtime tables and keeps everything else (comments, order, other tables)
byte for byte. Free of Ansible imports.
"""

from __future__ import annotations

import copy
import json
import re

UNLIMITED = 18446744073709551615  # RLIM_INFINITY as the OCI spec writes it
_RLIMIT_TYPE_RE = re.compile(r'^RLIMIT_[A-Z]+$')

RUNTIME_TABLE_PREFIX = {
    2: ('plugins', 'io.containerd.grpc.v1.cri', 'containerd', 'runtimes'),   # containerd 1.x
    3: ('plugins', 'io.containerd.cri.v1.runtime', 'containerd', 'runtimes'),  # containerd 2.x
}


class SpecError(ValueError):
    """A spec or an option that cannot be used."""


class ConfigError(ValueError):
    """A containerd config that cannot be wired."""


# --------------------------------------------------------------------- spec

def parse_limit(value, what):
    """``unlimited`` or a whole number of bytes/units >= 0."""
    if isinstance(value, bool):
        raise SpecError('%s must be "unlimited" or a whole number >= 0, got %r' % (what, value))
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.strip().lower() in ('unlimited', 'infinity'):
        return UNLIMITED
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    else:
        raise SpecError('%s must be "unlimited" or a whole number >= 0, got %r' % (what, value))
    if number < 0 or number > UNLIMITED:
        raise SpecError('%s must be between 0 and %d ("unlimited"), got %d' % (what, UNLIMITED, number))
    return number


def check_spec(spec, where):
    if not isinstance(spec, dict) or 'ociVersion' not in spec or not isinstance(spec.get('process'), dict):
        raise SpecError('%s is not an OCI runtime spec (it needs "ociVersion" and a "process" object)' % where)
    rlimits = spec['process'].get('rlimits', [])
    if not isinstance(rlimits, list) or not all(isinstance(r, dict) and 'type' in r for r in rlimits):
        raise SpecError('%s has a malformed process.rlimits list' % where)


def normalize_rlimits(rlimits, memlock):
    """Validate the ``rlimits`` option and add RLIMIT_MEMLOCK; returns a list of {type, soft, hard}."""
    wanted = []
    for index, item in enumerate(rlimits or []):
        if not isinstance(item, dict) or set(item) - {'type', 'soft', 'hard'} or 'type' not in item:
            raise SpecError('rlimits[%d] must be a dict with type, soft and hard, got %r' % (index, item))
        kind = str(item['type']).upper()
        if not kind.startswith('RLIMIT_'):
            kind = 'RLIMIT_' + kind
        if not _RLIMIT_TYPE_RE.match(kind):
            raise SpecError('rlimits[%d]: %r is not an rlimit type such as RLIMIT_NOFILE' % (index, item['type']))
        soft = parse_limit(item.get('soft', item.get('hard')), 'rlimits[%d].soft' % index)
        hard = parse_limit(item.get('hard', item.get('soft')), 'rlimits[%d].hard' % index)
        if soft > hard:
            raise SpecError('rlimits[%d] (%s): soft %d is above hard %d' % (index, kind, soft, hard))
        wanted.append({'type': kind, 'soft': soft, 'hard': hard})
    if memlock is not None:
        if any(r['type'] == 'RLIMIT_MEMLOCK' for r in wanted):
            raise SpecError('RLIMIT_MEMLOCK is set by memlock; leave it out of rlimits')
        value = parse_limit(memlock, 'memlock')
        wanted.append({'type': 'RLIMIT_MEMLOCK', 'soft': value, 'hard': value})
    return wanted


def build_spec(base, memlock='unlimited', rlimits=None, where='base'):
    """Return a copy of ``base`` with the wanted rlimits; every other rlimit of the base is kept."""
    check_spec(base, where)
    wanted = normalize_rlimits(rlimits, memlock)
    spec = copy.deepcopy(base)
    current = spec['process'].setdefault('rlimits', [])
    for limit in wanted:
        for existing in current:
            if existing['type'] == limit['type']:
                existing['soft'], existing['hard'] = limit['soft'], limit['hard']
                break
        else:
            current.append(dict(limit))
    check_spec(spec, 'the result')
    return spec


def serialize(spec):
    """Stable JSON: same content, same bytes (sorted keys, two-space indent)."""
    return json.dumps(spec, indent=2, sort_keys=True) + '\n'


# --------------------------------------------------------------------- TOML

_HEADER_RE = re.compile(r'^(?P<indent>\s*)\[(?!\[)(?P<key>[^\]]+)\](?P<rest>\s*(?:#.*)?)$')
_KEY_RE = re.compile(r'^(?P<indent>\s*)(?P<key>[A-Za-z0-9_\-]+|"[^"]*"|\'[^\']*\')\s*=\s*(?P<value>.*)$')
_VERSION_RE = re.compile(r'^\s*version\s*=\s*(?P<number>\d+)\s*(?:#.*)?$')
_BARE_KEY_RE = re.compile(r'^[A-Za-z0-9_\-]+$')


def split_dotted_key(text):
    """``plugins."io.containerd.grpc.v1.cri".containerd`` -> ['plugins', 'io.containerd.grpc.v1.cri', 'containerd']."""
    parts = []
    position = 0
    text = text.strip()
    while position < len(text):
        char = text[position]
        if char in '"\'':
            end = text.find(char, position + 1)
            while char == '"' and end != -1 and text[end - 1] == '\\':
                end = text.find(char, end + 1)
            if end == -1:
                raise ConfigError('unterminated quoted key in [%s]' % text)
            parts.append(text[position + 1:end])
            position = end + 1
        else:
            end = position
            while end < len(text) and text[end] not in '.':
                end += 1
            part = text[position:end].strip()
            if not _BARE_KEY_RE.match(part):
                raise ConfigError('unexpected key %r in table header [%s]' % (part, text))
            parts.append(part)
            position = end
        while position < len(text) and text[position] == ' ':
            position += 1
        if position < len(text):
            if text[position] != '.':
                raise ConfigError('unexpected character %r in table header [%s]' % (text[position], text))
            position += 1
            while position < len(text) and text[position] == ' ':
                position += 1
    return parts


def _toml_string(value):
    return '"%s"' % value.replace('\\', '\\\\').replace('"', '\\"')


def _format_key(part):
    return part if _BARE_KEY_RE.match(part) else _toml_string(part)


def config_version(text):
    """The top-level ``version`` of a containerd config, or None when the file has none."""
    for line in text.splitlines():
        if _HEADER_RE.match(line):
            return None
        match = _VERSION_RE.match(line)
        if match:
            return int(match.group('number'))
    return None


def _tables(lines):
    """[(start line index, key parts)] of every table header."""
    tables = []
    for index, line in enumerate(lines):
        match = _HEADER_RE.match(line)
        if match:
            tables.append((index, tuple(split_dotted_key(match.group('key')))))
    return tables


def runtime_names(text, version):
    """Names of the runtime tables present for ``version`` (e.g. runc, nvidia), in file order."""
    prefix = RUNTIME_TABLE_PREFIX[version]
    names = []
    for _index, key in _tables(text.splitlines()):
        if len(key) == len(prefix) + 1 and key[:len(prefix)] == prefix and key[-1] not in names:
            names.append(key[-1])
    return names


def wire_base_runtime_spec(text, spec_path, runtimes, version):
    """Set ``base_runtime_spec = spec_path`` in each runtime table of ``version``.

    ``runtimes`` are the runtimes that must carry the spec (a missing ``runc``
    table is created); every other runtime table present gets it too, because
    the NVIDIA container toolkit copies the runc table into ``nvidia``.
    Returns ``(new_text, changed_runtimes)``.
    """
    if version not in RUNTIME_TABLE_PREFIX:
        raise ConfigError('containerd config version %r is not supported (2 for containerd 1.x, 3 for 2.x)' % version)
    prefix = RUNTIME_TABLE_PREFIX[version]
    present = runtime_names(text, version)
    missing = [name for name in runtimes if name not in present]
    unknown = [name for name in missing if name != 'runc']
    if unknown:
        raise ConfigError('no runtime table for %s in the version %d config; configure that runtime first (for '
                          'nvidia: nvidia-ctk runtime configure --runtime=containerd)' % (', '.join(unknown), version))
    lines = text.splitlines(True)
    if lines and not lines[-1].endswith('\n'):
        lines[-1] += '\n'
    wanted_line_value = _toml_string(spec_path)
    changed = []
    # Work from the end so that inserted lines do not shift the tables still to visit.
    tables = _tables([line.rstrip('\n') for line in lines])
    bounds = [(start, tables[i + 1][0] if i + 1 < len(tables) else len(lines), key)
              for i, (start, key) in enumerate(tables)]
    for start, end, key in reversed(bounds):
        if not (len(key) == len(prefix) + 1 and key[:len(prefix)] == prefix):
            continue
        name = key[-1]
        key_lines = [i for i in range(start + 1, end) if _KEY_RE.match(lines[i].rstrip('\n'))]
        existing = [i for i in key_lines
                    if _KEY_RE.match(lines[i].rstrip('\n')).group('key').strip('"\'') == 'base_runtime_spec']
        if existing:
            index = existing[0]
            match = _KEY_RE.match(lines[index].rstrip('\n'))
            value, comment = _split_comment(match.group('value'))
            if _parse_string(value) == spec_path:
                continue
            lines[index] = '%sbase_runtime_spec = %s%s\n' % (match.group('indent'), wanted_line_value, comment)
        else:
            header_indent = _HEADER_RE.match(lines[start].rstrip('\n')).group('indent')
            indent = (_KEY_RE.match(lines[key_lines[0]].rstrip('\n')).group('indent') if key_lines
                      else header_indent + '  ')
            insert_at = (key_lines[-1] + 1) if key_lines else start + 1
            lines.insert(insert_at, '%sbase_runtime_spec = %s\n' % (indent, wanted_line_value))
        changed.append(name)
    for name in missing:
        lines.append('\n[%s]\n  runtime_type = "io.containerd.runc.v2"\n  base_runtime_spec = %s\n'
                     % ('.'.join(_format_key(p) for p in prefix + (name,)), wanted_line_value))
        changed.append(name)
    return ''.join(lines), sorted(changed)


def _split_comment(value):
    """Split a TOML value from a trailing comment (outside quotes), keeping the spacing before the comment."""
    quote = None
    for index, char in enumerate(value):
        if quote:
            if char == quote and (quote == "'" or value[index - 1] != '\\'):
                quote = None
        elif char in '"\'':
            quote = char
        elif char == '#':
            stripped = value[:index].rstrip()
            return stripped, value[len(stripped):].rstrip()
    return value.rstrip(), ''


def _parse_string(value):
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1]
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1].replace('\\"', '"').replace('\\\\', '\\')
    return None


def dump_base_runtime_specs(dump_text, version):
    """From ``containerd config dump`` output: runtime name -> its base_runtime_spec ('' when unset)."""
    prefix = RUNTIME_TABLE_PREFIX[version]
    lines = dump_text.splitlines()
    tables = _tables(lines)
    result = {}
    for position, (start, key) in enumerate(tables):
        if not (len(key) == len(prefix) + 1 and key[:len(prefix)] == prefix):
            continue
        end = tables[position + 1][0] if position + 1 < len(tables) else len(lines)
        result[key[-1]] = ''
        for line in lines[start + 1:end]:
            match = _KEY_RE.match(line)
            if match and match.group('key').strip('"\'') == 'base_runtime_spec':
                result[key[-1]] = _parse_string(_split_comment(match.group('value'))[0]) or ''
    return result


# ------------------------------------------------------------ running tasks

def parse_task_list(text):
    """``ctr task ls`` -> [{id, pid, status}] (header ``TASK PID STATUS``)."""
    tasks = []
    lines = [line for line in text.splitlines() if line.strip()]
    if lines and lines[0].split()[:3] == ['TASK', 'PID', 'STATUS']:
        lines = lines[1:]
    for line in lines:
        words = line.split()
        if len(words) != 3 or not words[1].isdigit():
            raise ConfigError('unrecognised `ctr task ls` line: %r' % line)
        tasks.append({'id': words[0], 'pid': int(words[1]), 'status': words[2]})
    return tasks


def parse_memlock(limits_text):
    """``/proc/PID/limits`` -> (soft, hard) of "Max locked memory", UNLIMITED for unlimited."""
    for line in limits_text.splitlines():
        if line.startswith('Max locked memory'):
            words = line[len('Max locked memory'):].split()
            if len(words) >= 2:
                return tuple(UNLIMITED if w == 'unlimited' else int(w) for w in words[:2])
    raise ConfigError('no "Max locked memory" line in the limits')
