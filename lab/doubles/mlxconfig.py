# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Lab test double of mlxconfig: query / set with the documented output layout.

mlxconfig -d DEVICE [-e] q|query
mlxconfig -d DEVICE [-y] s|set NAME=VALUE ...
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _firmware_state import fail, find_device, log_call, save  # noqa: E402  pylint: disable=wrong-import-position


def printed(param, value):
    kind = param['kind']
    if kind == 'bool':
        return '%s(%d)' % ('True' if value else 'False', value)
    if kind == 'enum':
        names = dict((v, k) for k, v in param['values'].items())
        return '%s(%d)' % (names.get(value, 'UNKNOWN'), value)
    if kind == 'array':
        return 'Array[0..%d]' % (param['size'] - 1)
    if kind == 'na':
        return 'N/A'
    return str(value)


def header(state, device):
    sys.stdout.write('\nDevice #1:\n----------\n\n')
    for label, value in (('Device type:', state['device_type']), ('Name:', state['name']),
                         ('Description:', state['description']), ('Device:', device)):
        sys.stdout.write('%-16s%s\n' % (label, value))
    sys.stdout.write('\n')


def query(state, device, verbose):
    header(state, device)
    columns = ['Default', 'Current', 'Next Boot'] if verbose else ['Next Boot']
    sys.stdout.write('%-45s%s\n' % ('Configurations:', ''.join('%-16s' % c for c in columns).rstrip()))
    differ = False
    for name, param in state['params'].items():
        values = [param['default'], param['current'], param['next']] if verbose else [param['next']]
        star = verbose and (param['next'] != param['default'] or param['next'] != param['current'])
        differ = differ or star
        marker = ('*' if star else '') + ('RO' if param.get('ro') else '')
        sys.stdout.write('%-9s%-36s%s\n' % (marker, name, ''.join('%-16s' % printed(param, v) for v in values).rstrip()))
    if differ:
        sys.stdout.write("The '*' shows parameters with next value different from default/current value.\n")


def parse_value(param, text):
    if param['kind'] == 'bool':
        table = {'true': 1, '1': 1, 'false': 0, '0': 0}
        return table.get(text.lower())
    if param['kind'] == 'enum':
        by_name = dict((k.lower(), v) for k, v in param['values'].items())
        if text.lower() in by_name:
            return by_name[text.lower()]
        return int(text) if text.isdigit() and int(text) in param['values'].values() else None
    if param['kind'] == 'int':
        return int(text) if text.isdigit() else None
    return None


def set_params(path, state, device, assignments, assume_yes):
    updates = []
    for assignment in assignments:
        name, sep, text = assignment.partition('=')
        param = state['params'].get(name)
        if not sep or param is None:
            fail('The Device doesn\'t support %s parameter' % name, 1)
        if param.get('ro'):
            fail('The %s parameter is read only' % name, 1)
        value = parse_value(param, text)
        if value is None:
            fail('Failed to set configuration: unknown value %s for parameter %s' % (text, name), 1)
        updates.append((name, param, value))
    header(state, device)
    sys.stdout.write('%-45s%-16s%s\n' % ('Configurations:', 'Next Boot', 'New'))
    for name, param, value in updates:
        sys.stdout.write('%-9s%-36s%-16s%s\n' % ('', name, printed(param, param['next']), printed(param, value)))
    if not assume_yes:
        fail('Aborted by user (run with -y)', 1)
    sys.stdout.write('\n Apply new Configuration? (y/n) [n] : y\nApplying... Done!\n'
                     '-I- Please reboot machine to load new configurations.\n')
    for name, param, value in updates:
        param['next'] = value
    save(path, state)


def main(argv):
    args = list(argv[1:])
    device, verbose, assume_yes = None, False, False
    while args and args[0].startswith('-'):
        option = args.pop(0)
        if option in ('-d', '--dev'):
            device = args.pop(0)
        elif option in ('-e', '--enable_verbosity'):
            verbose = True
        elif option in ('-y', '--yes'):
            assume_yes = True
        else:
            fail('Unknown flag %s' % option, 1)
    if device is None or not args:
        fail('usage: mlxconfig -d DEVICE [-e] [-y] q|set ...', 1)
    log_call('mlxconfig', argv[1:])
    path, state = find_device(device)
    if state is None:
        fail('Failed to open the device')
    command = args.pop(0)
    if command in ('q', 'query'):
        query(state, device, verbose)
    elif command in ('s', 'set'):
        set_params(path, state, device, args, assume_yes)
    else:
        fail('Unknown command %s' % command, 1)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
