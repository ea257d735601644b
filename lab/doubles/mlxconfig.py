# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Lab test double of mlxconfig (NVIDIA MFT 4.36, the layout of mstflint's mlxconfig/mlxcfg_ui.cpp).

    mlxconfig [-d DEVICE] [-e] [-y] q|query [NAME | NAME[i] | NAME[a..b] ...]
    mlxconfig -d DEVICE [-e] [-y] s|set NAME=VALUE ...

The configuration is the adapter's: every PCI function of a card (0000:5e:00.0 and 0000:5e:00.1 of a dual-port
ConnectX) shows and changes the same values, as on a real card (see _firmware_state).

Prints what mlxconfig prints: the device header, the table (name column of 56, value columns of 33 characters),
the '*' and RO markers and their notes, the set table with its New column and the apply lines. Refuses what
mlxconfig refuses, with its messages and exit codes (3 for an error, 2 when the user does not confirm): argument
errors before the device is opened (invalid argument, duplicate parameter, NAME=VALUE syntax), a device it cannot
open, a parameter the device does not have, an array without an element index, a read-only parameter, and values
by the parameter's kind (a boolean takes True/False/1/0, an enum its names or their numbers, a number anything
strtoul reads that fits the field: NUM_OF_VFS=10^23 is "Cannot parse the value").

A file <lab root>/firmware/mlxconfig-set-fault with {"after": N, "message": "..."} makes the next sets apply the
first N values and then fail with that message, as a set that fails half way.
"""

from __future__ import annotations

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _firmware_state import (  # noqa: E402  pylint: disable=wrong-import-position
    RC_ABORTED,
    RC_ERROR,
    STATE_DIR,
    U32_MAX,
    field,
    find_device,
    load_nv,
    log_call,
    save_nv,
    state_files,
)

NAME_WIDTH, VALUE_WIDTH = 56, 33
USAGE = """    NAME:
        mlxconfig
    SYNOPSIS:
        mlxconfig [Options] <Commands> [Parameters]
    DESCRIPTION:
        Allows the user to change some of the device configurations without having to
        create and burn a new firmware.
    OPTIONS:
        -d|--dev <device>\t\t: Perform operation for a specified MST device.
        -e|--enable_verbosity\t\t: Show default and current configurations.
        -y|--yes        \t\t: Answer yes in prompt.
    COMMANDS SUMMARY
        q|query                  : query supported configurations.
        s|set                    : set configurations to a specific device.
"""
_INDEXED_RE = re.compile(r'^(?P<base>[^\[\]]+)\[(?P<first>\d+)(?:\.\.(?P<last>\d+))?\]$')
_PCI_LIKE_RE = re.compile(r'^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$')


class Refused(Exception):
    """What mlxconfig refuses, with its message."""


def usage_error(message):
    sys.stdout.write('-E- %s\n%s' % (message, USAGE))
    sys.exit(RC_ERROR)


def strtok_pair(argument):
    """NAME and VALUE of a set argument as mlxconfig splits it (strtok on '='), or None."""
    tokens = [token for token in argument.split('=') if token]
    if len(tokens) != 2:
        return None
    return tokens[0], tokens[1]


def strtok_shown(argument):
    """The argument as mlxconfig prints it in an error: strtok ended its first token with a NUL."""
    start = len(argument) - len(argument.lstrip('='))
    end = argument.find('=', start)
    return argument if start == len(argument) or end < 0 else argument[:end]


def strtoul(text):
    """The number strtoul(text, &end, 0) reads from the whole of ``text``, or None."""
    match = re.match(r'^\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)$', text)
    if not match:
        return None
    digits = match.group(2)
    number = int(digits, 16) if digits[:2].lower() == '0x' else int(digits, 8) if digits.startswith('0') else int(
        digits)
    if match.group(1) == '-':
        number = (1 << 64) - number if number else 0
    return number


def printed(param, value):
    kind = param['kind']
    if kind == 'bool':
        return '%s(%d)' % ('True' if value else 'False', value)
    if kind == 'enum':
        names = dict((v, k) for k, v in param.get('values', {}).items())
        return '%s(%d)' % (names[value], value) if value in names else '%d' % value
    if kind == 'na':
        return 'N/A'
    return '%d' % value


def array_printed(param):
    return 'Array[0..%d]' % (param['size'] - 1)


def element(param, column, index):
    elements = param.get('elements') or {}
    values = elements.get(column) or [0] * param['size']
    return values[index]


def parse_value(name, param, bits, text):
    """The number mlxconfig stores for ``text``; Refused with mlxconfig's message otherwise."""
    kind = param['kind']
    if kind in ('bool', 'enum'):
        table = {'False': 0, 'True': 1} if kind == 'bool' else param.get('values', {})
        number = strtoul(text)
        if number is not None:
            if number > U32_MAX:
                raise Refused('value is out of range')
            if number in table.values():
                return number
        else:
            for value_name, value in table.items():
                if value_name.lower() == text.lower():
                    return value
        raise Refused('Unknown value %s' % text)
    number = strtoul(text)
    if number is None:
        raise Refused('Cannot parse the value')
    if number > U32_MAX:
        raise Refused('value is out of range')
    if bits == 32 and number == U32_MAX:
        raise Refused('The value %s is reserved and cannot be used' % text)
    if bits < 32 and number > (1 << bits) - 1:
        raise Refused('The value %s is not valid,  as its size is %d bits' % (text, bits))
    return number


def resolve(state, name):
    """``(param name, index or None)`` of a name the device has; Refused otherwise."""
    params = state['params']
    if name in params:
        return name, None
    match = _INDEXED_RE.match(name)
    if match and match.group('base') in params and params[match.group('base')]['kind'] == 'array':
        param = params[match.group('base')]
        index = int(match.group('first'))
        if index >= param['size']:
            raise Refused('Failed to find Param / index out of range: %s[%d]' % (match.group('base'), index))
        return match.group('base'), index
    raise Refused("The Device doesn't support %s parameter" % name)


def expand(state, name):
    """Rows a query argument stands for: NAME, NAME[i] or NAME[a..b]."""
    match = _INDEXED_RE.match(name)
    if match and match.group('last') is not None:
        first, last = int(match.group('first')), int(match.group('last'))
        return [resolve(state, '%s[%d]' % (match.group('base'), index)) for index in range(first, last + 1)]
    return [resolve(state, name)]


def header(state, device, index=1):
    sys.stdout.write('\nDevice #%d:\n----------\n\n' % index)
    for label, value in (('Device type:', state['device_type']), ('Name:', state['name']),
                         ('Description:', state['description']), ('Device:', device)):
        sys.stdout.write('%-20s%-20s\n' % (label, value))
    sys.stdout.write('\n')


def table_header(verbose, new=False):
    labels = (['Default', 'Current'] if verbose else []) + ['Next Boot']
    line = '%-*s' % (NAME_WIDTH, 'Configurations:') + ' '.join('%-*s' % (VALUE_WIDTH, label) for label in labels)
    if new:
        line += ' %-*s' % (VALUE_WIDTH, 'New')
    sys.stdout.write(line + '\n')


def row(name, values, differs, read_only):
    columns = ' '.join('%-*s' % (VALUE_WIDTH, value) for value in values)
    sys.stdout.write('%s%s     %-48s%s\n' % ('*' if differs else ' ', 'RO' if read_only else '  ', name, columns))


def row_values(param, index, columns):
    """(printed values, numbers) of a parameter (or one element) in ``columns``."""
    if param['kind'] == 'array' and index is None:
        return [array_printed(param)] * len(columns), [0] * len(columns)
    if index is not None:
        numbers = [element(param, column, index) for column in columns]
        return ['%d' % number for number in numbers], numbers
    numbers = [param[column] for column in columns]
    return [printed(param, number) for number in numbers], numbers


def trailer(differ, read_only):
    if differ:
        sys.stdout.write("The '*' shows parameters with next value different from default/current value.\n")
    if read_only:
        sys.stdout.write("\nThe 'RO' shows parameters which are for read only and cannot be changed\n")


def query_device(state, device, verbose, names, index=1):
    header(state, device, index)
    table_header(verbose)
    columns = ['default', 'current', 'next'] if verbose else ['next']
    try:
        rows = [item for name in names for item in expand(state, name)] if names else [
            (name, None) for name in state.get('order') or sorted(state['params'])]
    except Refused as exc:
        sys.stdout.write('-E- %s\n' % exc)
        return RC_ERROR
    differ = read_only = False
    for name, element_index in rows:
        param = state['params'][name]
        values, numbers = row_values(param, element_index, columns)
        star = verbose and len(set(numbers)) > 1
        differ = differ or star
        read_only = read_only or bool(param.get('ro'))
        row(name if element_index is None else '%s[%d]' % (name, element_index), values, star, param.get('ro'))
    trailer(differ, read_only)
    return 0


def set_fault():
    path = os.path.join(STATE_DIR, 'mlxconfig-set-fault')
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        return json.load(handle)


def set_params(path, state, device, assignments, verbose, assume_yes):
    header(state, device)
    table_header(verbose, new=True)
    updates = []
    try:
        for name, text in assignments:
            param_name, index = resolve(state, name)
            param = state['params'][param_name]
            if param['kind'] == 'array' and index is None:
                raise Refused('Operation is not supported')
            if param.get('ro'):
                raise Refused('Operation is not supported (Read only TLV: %s)'
                              % ((field(param_name) or (None, None, None, param_name))[3]))
            bits = param.get('bits') or (field(param_name) or (None, 32))[1]
            if param['kind'] == 'na':
                bits = 32
            kind_param = dict(param, kind='int') if index is not None or param['kind'] == 'na' else param
            updates.append((name, param_name, index, parse_value(name, kind_param, bits, text)))
    except Refused as exc:
        sys.stdout.write('-E- %s\n' % exc)
        return RC_ERROR
    columns = ['default', 'current', 'next'] if verbose else ['next']
    for name, param_name, index, value in updates:
        param = state['params'][param_name]
        values, numbers = row_values(param, index, columns)
        new = '%d' % value if index is not None else printed(param, value)
        row(name, values + [new], verbose and len(set(numbers)) > 1, param.get('ro'))
    sys.stdout.write('\n Apply new Configuration? (y/n) [n] : ')
    if assume_yes:
        sys.stdout.write('y\n')
    else:
        sys.stdout.flush()
        answer = sys.stdin.readline().strip()
        if answer.lower() not in ('y', 'yes'):
            sys.stdout.write('-E- Aborted by user.\n')
            return RC_ABORTED
    sys.stdout.write('Applying... ')
    fault = set_fault()
    applied = updates[:fault.get('after', 0)] if fault else updates
    for _name, param_name, index, value in applied:
        param = state['params'][param_name]
        if index is None:
            param['next'] = value
        else:
            elements = param.setdefault('elements', {})
            for column in ('default', 'current', 'next'):
                elements.setdefault(column, [0] * param['size'])
            elements['next'][index] = value
    save_nv(path, state)
    if fault:
        sys.stdout.write('Failed!\n-E- %s\n' % fault.get('message', 'Failed to set configuration'))
        return RC_ERROR
    sys.stdout.write('Done!\n-I- Please reboot machine to load new configurations.\n')
    return 0


def parse_args(args):
    device, verbose, assume_yes, command = None, False, False, None
    while args:
        word = args.pop(0)
        if word in ('-d', '--dev'):
            if not args:
                usage_error('missing device name')
            device = args.pop(0)
        elif word in ('-e', '--enable_verbosity'):
            verbose = True
        elif word in ('-y', '--yes'):
            assume_yes = True
        elif word in ('q', 'query', 's', 'set'):
            command = 'query' if word in ('q', 'query') else 'set'
            break
        else:
            usage_error('invalid argument: %s' % word)
    if command is None:
        usage_error('missing command')
    return device, verbose, assume_yes, command, args


def set_assignments(args):
    if not args:
        usage_error('missing configuration arguments. For more information please run mlxconfig -h|--help.')
    assignments = []
    for argument in args:
        pair = strtok_pair(argument)
        if pair is None:
            usage_error('Invalid Configuration argument %s' % strtok_shown(argument))
        if pair[0] in [name for name, _value in assignments]:
            usage_error('Duplicate parameter, %s.' % pair[0])
        assignments.append(pair)
    return assignments


def open_device(device):
    path, state = find_device(device)
    if state is not None:
        state = load_nv(path)
    if state is None:
        if not _PCI_LIKE_RE.match(device) and not os.path.exists(device):
            sys.stderr.write('Unable to parse device name %s\n' % device)
        sys.stdout.write('-E- Failed to open the device\n')
        sys.exit(RC_ERROR)
    return path, state


def main(argv):
    log_call('mlxconfig', argv[1:])
    device, verbose, assume_yes, command, rest = parse_args(list(argv[1:]))
    if command == 'set':
        assignments = set_assignments(rest)
        if device is None:
            sys.stdout.write('-E- missing device name. For more information please run mlxconfig -h|--help.\n')
            return RC_ERROR
        path, state = open_device(device)
        return set_params(path, state, device, assignments, verbose, assume_yes)
    if device is None:
        files = state_files()
        if not files:
            sys.stdout.write('-E- Failed to get devices.\n')
            return RC_ERROR
        rc = 0
        for index, path in enumerate(files, 1):
            rc = query_device(load_nv(path), os.path.basename(path)[:-len('.json')], verbose, rest, index) or rc
        return rc
    _path, state = open_device(device)
    return query_device(state, device, verbose, rest)


if __name__ == '__main__':
    sys.exit(main(sys.argv))
