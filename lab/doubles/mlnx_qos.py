# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Lab test double of mlnx_qos (mlnx-tools python/mlnx_qos, "%prog 1.2").

    mlnx_qos -i IF [--trust pcp|dscp] [-f|--pfc LIST] [-F LIST] [-P PRIO] [-d os|fw|get] [--cable_len N] [-a]

Keeps each port's QoS state in <lab root>/qos/<netdev>.json (created with the driver's defaults the first time a
netdev of the lab's sysfs tree, <lab root>/sys/class/net, is named) and prints it as the real tool does after
every call, in the layout of the release named by the state's "layout" (or by the file <lab root>/qos/layout):

    ofed-4.2            DCBX mode, trust, dscp2prio, Cable len, PFC without the buffer row (MLNX_OFED 4.2 - 4.5)
    ofed-4.6            + "Receive buffer size (bytes): ...," and the PFC buffer row
    ofed-5              + "default priority:", ",total_size=N", traffic classes in the order Python 3 keeps
    mlnx-tools-24.10    no "default priority:", ",max_buffer_size=N", traffic classes sorted (current)

Refuses what the real tool refuses, with its messages and exit codes: options optparse does not know (exit 2,
usage on stderr), extra arguments ("Bad arguments"), no interface, a PFC list that is not 8 flags of 0 or 1,
trust other than pcp/dscp, --trust with --dscp2prio. A netdev the lab does not have prints what the tool prints
when the kernel knows no such device ("... not supported on your system", exit 1). Options that change ETS,
buffers, rate limits or the dscp2prio mapping are not simulated and are refused with exit 1. Every call is
appended to <lab root>/qos/calls.log.
"""

from __future__ import annotations

import json
import optparse  # pylint: disable=deprecated-module  # the real tool's parser, for its exact errors
import os
import sys
import tempfile

LAB_ROOT = os.environ.get('GPUNET_LAB_ROOT', os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STATE_DIR = os.path.join(LAB_ROOT, 'qos')
CLASS_NET = os.path.join(LAB_ROOT, 'sys', 'class', 'net')
LAYOUTS = ('ofed-4.2', 'ofed-4.6', 'ofed-5', 'mlnx-tools-24.10')
DEFAULT_LAYOUT = 'mlnx-tools-24.10'
TSA_STRICT, TSA_ETS, TSA_VENDOR = 0, 2, 255
NOT_SIMULATED = ('prio_tc', 'tsa', 'tc_bw', 'ratelimit', 'dscp2prio', 'prio2buffer', 'buffer_size')


def default_state():
    """What an mlx5 port reports after the driver loads: trust pcp, no PFC, vendor TSA, UP 0 on TC 1."""
    return {
        'dcbx': 'os', 'trust': 'pcp', 'pfc': [0] * 8, 'cable_len': 7, 'prio_tc': [1, 0, 2, 3, 4, 5, 6, 7],
        'tsa': [TSA_VENDOR] * 8, 'tc_bw': [0] * 8, 'ratelimit': [0] * 8,
        'buffer_size': [130944, 130944, 0, 0, 0, 0, 0, 0], 'buffer_total': 262016, 'prio2buffer': [0] * 8,
        'dscp2prio': dict((str(dscp), dscp >> 3) for dscp in range(64)), 'default_priority': [],
        'lldpad': False,
    }


def parser():
    result = optparse.OptionParser(usage='%prog -i <interface> [options]', version='%prog 1.2', prog='mlnx_qos')
    add = result.add_option
    add('-f', '--pfc', dest='pfc', metavar='LIST', help='Set priority flow control for each priority.')
    add('-F', '--specific_pfc', dest='specific_pfc', metavar='LIST', help='Set PFC for specific priorities.')
    add('-P', '--get_pfc', dest='get_pfc', help='Get PFC status of a priority.')
    add('-p', '--prio_tc', dest='prio_tc', metavar='LIST', help='maps UPs to TCs.')
    add('-s', '--tsa', dest='tsa', metavar='LIST', help='Transmission algorithm for each TC.')
    add('-t', '--tcbw', dest='tc_bw', metavar='LIST', help='Set minimal guaranteed %BW for ETS TCs.')
    add('-r', '--ratelimit', dest='ratelimit', metavar='LIST', help='Rate limit for TCs (in Gbps).')
    add('-d', '--dcbx', dest='dcbx', help='set dcbx mode to firmware controlled(fw) or OS controlled(os).')
    add('--trust', dest='trust', help='set priority trust state to pcp or dscp')
    add('--dscp2prio', dest='dscp2prio', action='append', help='set/del a (dscp,prio) mapping')
    add('--cable_len', dest='cable_len', help="set cable_len for buffer's xoff and xon thresholds")
    add('--prio2buffer', dest='prio2buffer', metavar='LIST', help='maps priority to receive buffer.')
    add('--buffer_size', dest='buffer_size', metavar='LIST', help='Set receive buffer size.')
    add('-i', '--interface', dest='intf', help='Interface name')
    add('-a', action='store_true', dest='printall', default=False, help="Show all interface's TCs")
    return result


def fail(message, usage_of=None, rc=1):
    sys.stdout.write(message + '\n')
    if usage_of is not None:
        usage_of.print_usage()
    sys.exit(rc)


def parse_int(text, low, high, description, usage_of):
    """The real tool's parse_int: the ValueError text of int() or of the range, then the usage line."""
    try:
        value = int(text)
        if value < low or value > high:
            raise ValueError('%d is not in the range %d..%d' % (value, low, high))
        return value
    except ValueError as exc:
        fail('Bad value for %s: %s' % (description, exc), usage_of)
    return None


def state_path(interface):
    return os.path.join(STATE_DIR, interface + '.json')


def load(interface):
    path = state_path(interface)
    if os.path.exists(path):
        with open(path) as handle:
            state = json.load(handle)
    else:
        state = default_state()
    if 'layout' not in state:
        layout_file = os.path.join(STATE_DIR, 'layout')
        state['layout'] = DEFAULT_LAYOUT
        if os.path.exists(layout_file):
            with open(layout_file) as handle:
                state['layout'] = handle.read().strip() or DEFAULT_LAYOUT
    if state['layout'] not in LAYOUTS:
        sys.stderr.write('lab double: unknown layout %r in %s (known: %s)\n'
                         % (state['layout'], STATE_DIR, ', '.join(LAYOUTS)))
        sys.exit(1)
    return state


def save(interface, state):
    os.makedirs(STATE_DIR, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=STATE_DIR)
    with os.fdopen(fd, 'w') as handle:
        json.dump(state, handle, indent=1, sort_keys=True)
    os.rename(tmp, state_path(interface))


def log_call(argv):
    os.makedirs(STATE_DIR, exist_ok=True)
    with open(os.path.join(STATE_DIR, 'calls.log'), 'a') as handle:
        handle.write(json.dumps(['mlnx_qos'] + list(argv)) + '\n')


def buffers_follow_pfc(state):
    """The driver's automatic buffer mode: PFC priorities get receive buffer 1, the others buffer 0."""
    state['prio2buffer'] = [1 if flag else 0 for flag in state['pfc']]


def print_dscp2prio(state):
    by_prio = [''] * 8
    for dscp in range(63, -1, -1):
        prio = state['dscp2prio'].get(str(dscp))
        if prio is not None:
            by_prio[prio] += '%02d,' % dscp
    for prio in range(8):
        text, chunk = '', by_prio[prio]
        pad = '\tprio:%d dscp:' % prio
        while len(chunk) > 24:
            text += pad + chunk[:24] + '\n'
            chunk = chunk[24:]
        if chunk:
            text += pad + chunk
        if text:
            print(text)


def pretty_print(state, printall):
    layout = state['layout']
    print('DCBX mode: %s' % ('OS controlled' if state['dcbx'] == 'os' else 'Firmware controlled'))
    print('Priority trust state: ' + state['trust'])
    if state['trust'] == 'dscp':
        print('dscp2prio mapping:')
        print_dscp2prio(state)
    if layout == 'ofed-5':
        print('default priority:')
        for prio in state.get('default_priority') or []:
            print('\tprio:%d' % prio)
    if layout != 'ofed-4.2':
        msg = 'Receive buffer size (bytes): ' + ''.join('%1d,' % size for size in state['buffer_size'])
        if layout == 'ofed-5':
            msg += 'total_size=%d' % state['buffer_total']
        elif layout == 'mlnx-tools-24.10':
            msg += 'max_buffer_size=%d' % state['buffer_total']
        print(msg)
    print('Cable len: %d' % state['cable_len'])
    print('PFC configuration:')
    print('\tpriority    0   1   2   3   4   5   6   7')
    msg = '\tenabled     ' + ''.join('%1d   ' % flag for flag in state['pfc'])
    if layout != 'ofed-4.2':
        msg += '\n\tbuffer      ' + ''.join('%1d   ' % buf for buf in state['prio2buffer'])
    print(msg)
    tc2up = {}
    if printall:
        for tc in range(8):
            tc2up.setdefault(tc, [])
    for up, tc in enumerate(state['prio_tc']):
        tc2up.setdefault(tc, []).append(up)
    order = list(tc2up) if layout == 'ofed-5' else sorted(tc2up)
    for tc in order:
        rate = 'unlimited' if not state['ratelimit'][tc] else '%.1f Gbps' % (state['ratelimit'][tc] / 1000.0 / 1000.0)
        msg = 'tc: %d ratelimit: %s, tsa: ' % (tc, rate)
        tsa = state['tsa'][tc]
        msg += {TSA_ETS: 'ets, bw: %s%%' % state['tc_bw'][tc], TSA_STRICT: 'strict', TSA_VENDOR: 'vendor'}.get(
            tsa, 'unknown')
        print(msg)
        for up in tc2up[tc]:
            print('\t priority:  %s' % up)


def missing_interface(options):
    """What mlnx_qos prints when the kernel has no such netdev (every DCB netlink request fails)."""
    if options.pfc or options.cable_len or options.dcbx or options.specific_pfc or options.get_pfc:
        sys.stderr.write('Traceback (most recent call last):\n  File "/usr/bin/mlnx_qos", in <module>\n'
                         'OSError: [Errno 19] No such device\n')
        sys.exit(1)
    print('Priority trust state is not supported on your system')
    print('Buffers commands are not supported on your system')
    print('ETS features are not supported on your system')
    sys.exit(1)


def main(argv):
    log_call(argv)
    opts = parser()
    options, args = opts.parse_args(argv)
    if args:
        fail('Bad arguments', opts)
    if options.intf is None:
        fail('Interface name is required', opts)
    if not os.path.exists(os.path.join(CLASS_NET, options.intf)):
        missing_interface(options)
    state = load(options.intf)
    initial = json.dumps(state, sort_keys=True)
    if state.get('lldpad'):
        print('****** WARNING: lldpad service is running and may overwrite your settings ******\n')
    if options.dcbx is not None:
        if options.dcbx in ('os', 'fw'):
            state['dcbx'] = options.dcbx
        elif options.dcbx != 'get':
            fail('Invalid dcbx mode command. Refer to the help.')
    if options.cable_len:
        state['cable_len'] = parse_int(options.cable_len, 0, 0xffff, 'cable_len', opts)
    if options.get_pfc:
        index = parse_int(options.get_pfc, -(1 << 31), 1 << 31, 'get_pfc', opts)
        if index not in range(8):
            fail('pfc index must be in range of 0-7')
        print(state['pfc'][index])
        sys.exit(0)
    if options.specific_pfc:
        flags = options.specific_pfc.split(',')
        if len(flags) != 8:
            fail('pfc list must have 8 items')
        for prio, flag in enumerate(flags):
            if flag != 'x':
                if flag not in ('0', '1'):
                    fail("Bad value for 'PFC': %s" % flag)
                state['pfc'][prio] = int(flag)
        buffers_follow_pfc(state)
        save(options.intf, state)
        sys.exit(0)
    if options.pfc:
        flags = []
        for item in options.pfc.split(','):
            if len(flags) >= 8:
                fail('Too many items for PFC')
            flags.append(parse_int(item, 0, 1, 'PFC', opts))
        if len(flags) != 8:
            fail('pfc list must have 8 items')
        state['pfc'] = flags
        buffers_follow_pfc(state)
        # the real tool sets PFC before it looks at --trust: a bad trust value after a good PFC list keeps the PFC
        save(options.intf, state)
    if options.dscp2prio and options.trust:
        fail('trust and dscp2prio commands cannot be used at the same time.')
    if options.trust:
        if options.trust not in ('dscp', 'pcp'):
            fail('Invalid trust state command. Refer to the help.')
        state['trust'] = options.trust
    asked = [name for name in NOT_SIMULATED if getattr(options, name)]
    if asked:
        sys.stderr.write('lab double: mlnx_qos option(s) %s are not simulated\n' % ', '.join(asked))
        sys.exit(1)
    if json.dumps(state, sort_keys=True) != initial:
        save(options.intf, state)
    pretty_print(state, options.printall)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
