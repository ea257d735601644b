# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Lab test double of perftest: ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_read_lat, ib_send_lat.

The lab kernel has no RDMA, so the real tools cannot run. Each tool is a wrapper in ``bin/`` (``ib_write_bw``
runs ``ib_write_bw.py``, and so on); all of them run this module, which takes the tool from the name it was
started as. Every call is logged to ``<lab root>/firmware/calls.log`` like the firmware doubles' calls.

Command line, as perftest's: ``TOOL [options] [SERVER]``. Without SERVER it is the server: it prints "Waiting for
client to connect", listens on TCP PORT and exchanges its connection data with one client; with SERVER it is the
client and connects ("Couldn't connect to SERVER:PORT" when nothing listens). Modelled options:
``-d/--ib-dev``, ``-i/--ib-port``, ``-x/--gid-index``, ``-p/--port``, ``-s/--size`` (K and M suffixes), ``-a/--all``,
``-n/--iters``, ``-D/--duration``, ``-q/--qp``, ``-b/--bidirectional``, ``--report_gbits``, ``-F/--CPU-freq``,
``-N/--noPeak``, ``-m/--mtu``, ``-t/--tx-depth``, ``-Q/--cq-mod``. Anything else perftest does not know is refused
as perftest refuses it (" Invalid Command or flag."), like a duplicated option or a value out of range; a perftest
option this double does not model is refused with a message that says so, never ignored.

What it checks, as perftest does (messages as perftest prints them):

* the device (``<lab root>/sys/class/infiniband/DEV``; without -d the first one) and the port
  (``ports/N``: missing -> "Unable to query port N attributes"; not ACTIVE -> "Port number N state is Down");
* the GID on Ethernet (RoCE) ports: with ``-x IDX`` the entry ``ports/N/gids/IDX`` must exist ("Unable to set up
  socket connection" otherwise) and be usable - not all zeros and with a type in ``gid_attrs/types/IDX`` - or
  the queue pair cannot reach RTR ("Failed to modify QP N to RTR"); without -x the best entry is chosen as current
  perftest does (RoCE v2 before v1, IPv4-mapped first), and none usable fails like a bad -x. On InfiniBand no GID
  is used without -x; with -x the entry must exist as on RoCE;
* the memlock limit (RLIMIT_MEMLOCK) against the buffers it registers: "Couldn't allocate MR".

Figures. Bandwidth is the share of the port's line rate (``ports/N/rate``) that the InfiniBand field report
recorded with 64 KiB messages: 94.71 Gb/s (peak 94.72) of 100 Gb/s and 183.61 (peak 183.66) of 200 Gb/s; a port
of another rate gets the share of the nearer of the two (below 150 Gb/s the 100 Gb/s one), scaled to its rate -
no such port was recorded. Small messages are bound by the message rate, 3 million messages per second per QP
(as the public corpus' ConnectX-7 ``ib_send_bw -a`` run shows); ``-b`` reports both directions summed, as perftest
does. Without ``--report_gbits`` the table is ``BW average[MiB/sec]`` (2**20 bytes per second, perftest 24.07 and
later); a write or read server prints its own header over the numbers the client sends it, so a server and a
client that disagree on ``--report_gbits`` print perftest's mismatched table.

Latency follows the public corpus: on Ethernet ports the ConnectX-5 100GbE rows of MLNX_OFED 4.4 (2 bytes: read
1.48, write 0.78, send 0.88 usec typical); on InfiniBand ports the HDR ConnectX-6 ``ib_send_lat`` rows (2 bytes to
16 KiB), write and read scaled from them by the ratios of the ConnectX-5 rows (0.78/0.88 and 1.48/0.88); sizes
beyond a recording add the serialization time at the port's line rate. ``-D`` prints t_avg and transactions per
second; an ``ib_read_lat`` server prints no table, as perftest's.

Faults: ``<lab root>/perftest/faults.json`` (or ``faults.yml`` where PyYAML is installed) maps ``DEVICE/PORT`` to
what that port does::

    {"mlx5_1/1": {"share": 0.45},           # bandwidth at 45 % of the line rate (a slow port)
     "mlx5_2/1": {"fail": "no_exchange"},   # the connection data exchange fails on both sides
     "mlx5_3/1": {"latency_factor": 3}}      # latencies three times the recorded ones

``fail`` is one of ``no_exchange`` (both sides: "Couldn't read remote address ... Failed to exchange data"),
``memlock`` ("Couldn't allocate MR" on that side, the exchange failure on the other), ``completion_error`` (the
client: "Completion with error ... Failed status 12") and ``port_down`` (as if the port were DOWN). A fault of
either side's port applies to the pair. An unreadable faults file or an unknown fault ends the call with a message
naming the file.
"""

from __future__ import annotations

import json
import os
import random
import resource
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _firmware_state import LAB_ROOT, log_call  # noqa: E402  pylint: disable=wrong-import-position

SYSFS = os.path.join(LAB_ROOT, 'sys', 'class', 'infiniband')
FAULTS = os.path.join(LAB_ROOT, 'perftest')
LINE = '-' * 87
# tool -> (title verb, kind, verb)
TOOLS = {'ib_write_bw': ('RDMA_Write', 'bw', 'write'), 'ib_read_bw': ('RDMA_Read', 'bw', 'read'),
         'ib_send_bw': ('Send', 'bw', 'send'), 'ib_write_lat': ('RDMA_Write', 'lat', 'write'),
         'ib_read_lat': ('RDMA_Read', 'lat', 'read'), 'ib_send_lat': ('Send', 'lat', 'send')}
# The InfiniBand field report's ib_write_bw rows at 64 KiB: line rate -> (BW peak, BW average) in Gb/s.
RECORDED = {100: (94.72, 94.71), 200: (183.66, 183.61)}
MSG_RATE_PER_QP = 3.0e6
MIB = 2 ** 20
MAX_SIZE = 8388608
# Latency rows of the public corpus (usec): t_min, t_max, t_typical, t_avg, t_stdev, 99 %, 99.9 %.
LAT_ROCE = {'read': {2: (1.44, 2.93, 1.48, 1.49, 0.02, 1.56, 2.93)},
            'write': {2: (0.76, 0.95, 0.78, 0.78, 0.01, 0.83, 0.95)},
            'send': {2: (0.82, 1.01, 0.88, 0.88, 0.02, 0.94, 1.01)}}
LAT_IB_SEND = {2: (1.55, 7.17, 1.60, 1.60, 0.09, 1.62, 3.65), 4: (1.54, 7.22, 1.58, 1.59, 0.06, 1.62, 3.27),
               8: (1.55, 22.40, 1.58, 1.59, 0.07, 1.62, 3.22), 16: (1.55, 21.40, 1.58, 1.59, 0.08, 1.62, 3.40),
               32: (1.55, 6.20, 1.58, 1.59, 0.07, 1.62, 3.43), 64: (1.62, 6.19, 1.65, 1.65, 0.07, 1.68, 3.47),
               128: (1.65, 13.83, 1.68, 1.68, 0.07, 1.72, 3.52), 256: (2.09, 18.54, 2.12, 2.13, 0.10, 2.17, 3.98),
               512: (2.12, 8.49, 2.16, 2.17, 0.07, 2.31, 3.87), 1024: (2.17, 27.38, 2.21, 2.23, 0.10, 2.37, 4.04),
               2048: (2.30, 12.34, 2.34, 2.35, 0.08, 2.43, 4.23), 4096: (2.81, 14.48, 2.85, 2.86, 0.07, 3.02, 4.43),
               8192: (3.11, 8.18, 3.19, 3.19, 0.07, 3.34, 5.03), 16384: (3.68, 17.45, 3.76, 3.77, 0.08, 3.92, 5.58)}
LAT_IB_RATIO = {'send': 1.0, 'write': 0.78 / 0.88, 'read': 1.48 / 0.88}
PORT_STATES = {0: 'Nop', 1: 'Down', 2: 'Init', 3: 'Armed', 5: 'Active Defer'}
FAULT_KINDS = ('no_exchange', 'memlock', 'completion_error', 'port_down')

# perftest's options: short letters taking an argument, flags, long names (-> short letter or themselves).
SHORT_ARG = set('wypdimsntuSxcqIoMrQAlDfBTLEJjKkXW')
SHORT_FLAG = set('aFegzRvhbNVCHUOZP')
LONG = {'port': 'p', 'ib-dev': 'd', 'ib-port': 'i', 'mtu': 'm', 'size': 's', 'iters': 'n', 'tx-depth': 't',
        'qp-timeout': 'u', 'sl': 'S', 'gid-index': 'x', 'all': 'a', 'CPU-freq': 'F', 'connection': 'c', 'qp': 'q',
        'events': 'e', 'vector': 'X', 'inline_size': 'I', 'outs': 'o', 'mcg': 'g', 'comm_rdma_cm': 'z',
        'rdma_cm': 'R', 'tos': 'T', 'hop_limit': 'L', 'help': 'h', 'MGID': 'M', 'rx-depth': 'r',
        'bidirectional': 'b', 'cq-mod': 'Q', 'noPeak': 'N', 'version': 'V', 'report-cycles': 'C',
        'report-histogrm': 'H', 'report-unsorted': 'U', 'atomic_type': 'A', 'dualport': 'O', 'post_list': 'l',
        'duration': 'D', 'margin': 'f', 'source_mac': 'B', 'dest_mac': 'E', 'dest_ip': 'J', 'source_ip': 'j',
        'dest_port': 'K', 'source_port': 'k', 'limit_bw': 'w', 'limit_msgrate': 'y', 'server': 'Z',
        'client': 'P', 'mac_fwd': 'v', 'report-counters': 'W'}
LONG_FLAG_ONLY = {'run_infinitely', 'report_gbits', 'use-srq', 'no_lock', 'use-null-mr', 'report-both', 'reversed',
                  'tcp', 'cpu_util', 'out_json', 'dont_xchg_versions', 'use_cuda_dmabuf', 'use_cuda_pcie_mapping',
                  'use_data_direct', 'use_musa_dmabuf', 'use_musa_pcie_mapping', 'use_rocm_dmabuf',
                  'use_neuron_dmabuf', 'use_mlu_dmabuf', 'ipv6', 'ipv6-addr', 'raw_ipv6', 'report-per-port', 'odp',
                  'use_hugepages', 'use_old_post_send', 'promiscuous', 'sniffer', 'raw_mcast', 'mr_per_qp',
                  'perform_warm_up', 'vlan_en', 'aes_xts', 'encrypt_on_tx', 'sig_before', 'disable_pcie_relaxed',
                  'use_ooo', 'write_with_imm', 'send_with_imm', 'no_enhanced_reorder', 'unsolicited_write',
                  'connectionless', 'disable_dynamic_polling'}
LONG_WITH_ARG = {'force-link', 'remote_mac', 'local_mac', 'remote_ip', 'local_ip', 'remote_port', 'local_port',
                 'pkey_index', 'burst_size', 'typical_pkt_size', 'rate_limit', 'rate_limit_type', 'rate_units',
                 'output', 'out_json_file', 'latency_gap', 'flow_label', 'retry_count', 'payload_file_path',
                 'use_cuda', 'use_cuda_bus_id', 'cuda_mem_type', 'use_musa', 'use_musa_bus_id', 'use_rocm',
                 'use_neuron', 'use_hl', 'use_mlu', 'use_opencl', 'opencl_platform_id', 'use_ib_dm_dmabuf',
                 'gpu_touch', 'mmap', 'mmap-offset', 'dlid', 'tclass', 'wait_destroy', 'flows', 'flows_burst',
                 'reply_every', 'vlan_pcp', 'recv_post_list', 'aes_block_size', 'kek_path', 'credentials_path',
                 'data_enc_keys_number', 'data_enc_key_app_path', 'log_dci_streams', 'log_active_dci_streams',
                 'congest_type', 'bind_source_ip', 'cqe_poll', 'tph_mem', 'cpu_id', 'ph'}
MODELLED = set('dipsanDqbFNmtQx') | {'report_gbits'}


class Failed(Exception):
    """End the call: ``out`` to stdout, ``err`` to stderr, exit status 1."""

    def __init__(self, err='', out=''):
        super().__init__(err)
        self.err, self.out = err, out


def read(path):
    with open(path) as handle:
        return handle.read().strip()


def strtol(text):
    """C strtol(text, &end, 0) that must consume the whole text: the int, or None."""
    value = text.strip()
    if not value.isascii():
        return None
    try:
        if value.lower().lstrip('+-').startswith('0x'):
            return int(value, 16)
        if len(value.lstrip('+-')) > 1 and value.lstrip('+-').startswith('0'):
            return int(value, 8)
        return int(value, 10)
    except ValueError:
        return None


def value(name, text, kind, low=None, high=None):
    """perftest's CHECK_VALUE* macros: the number, or its messages."""
    number = strtol(text)
    if number is None:
        raise Failed(' %s argument %s should be %s\n Parser function exited with Error\n' % (name, text, kind))
    if low is not None and (number < low or number > high):
        raise Failed(' %s should be between %d and %d\n Parser function exited with Error\n' % (name, low, high))
    return number


def parse(tool, argv):
    """The command line as perftest's parser reads it (getopt_long, then its own checks)."""
    kind = TOOLS[tool][1]
    opts = {'server': None, 'device': None, 'ib_port': 1, 'port': 18515, 'size': None, 'all': False,
            'iters': 5000 if tool == 'ib_write_bw' else 1000, 'duration': None, 'qps': 1, 'bidir': False,
            'gbits': False, 'gid_index': None, 'mtu': None, 'tx_depth': None, 'cq_mod': None, 'no_peak': False}
    seen, positional, args = set(), [], list(argv)
    while args:
        word = args.pop(0)
        if word == '--':
            positional.extend(args)
            break
        if word.startswith('--'):
            name, equals, attached = word[2:].partition('=')
            if name in LONG:
                letter = LONG[name]
                takes = letter in SHORT_ARG
            elif name in LONG_FLAG_ONLY or name in LONG_WITH_ARG:
                letter, takes = name, name in LONG_WITH_ARG
            else:
                raise Failed("%s: unrecognized option '%s'\n Invalid Command or flag.\n Please check command line "
                             "and run again.\n\n Parser function exited with Error\n" % (tool, word))
            if takes and not equals:
                if not args:
                    raise Failed("%s: option '%s' requires an argument\n Invalid Command or flag.\n Please check "
                                 "command line and run again.\n\n Parser function exited with Error\n" % (tool, word))
                attached = args.pop(0)
            elif not takes and equals:
                raise Failed("%s: option '--%s' doesn't allow an argument\n Invalid Command or flag.\n Please check "
                             "command line and run again.\n\n Parser function exited with Error\n" % (tool, name))
            options = [(letter, attached if takes else None)]
        elif word.startswith('-') and len(word) > 1:
            options, rest = [], word[1:]
            while rest:
                letter, rest = rest[0], rest[1:]
                if letter in SHORT_ARG:
                    if not rest:
                        if not args:
                            raise Failed("%s: option requires an argument -- '%s'\n Invalid Command or flag.\n Please "
                                         "check command line and run again.\n\n Parser function exited with Error\n"
                                         % (tool, letter))
                        rest = args.pop(0)
                    options.append((letter, rest))
                    rest = ''
                elif letter in SHORT_FLAG:
                    options.append((letter, None))
                else:
                    raise Failed("%s: invalid option -- '%s'\n Invalid Command or flag.\n Please check command line "
                                 "and run again.\n\n Parser function exited with Error\n" % (tool, letter))
        else:
            positional.append(word)
            continue
        for letter, argument in options:
            if letter in seen:
                raise Failed(' Duplicated argument: %s \n Parser function exited with Error\n'
                             % (('-' + letter) if len(letter) == 1 else letter))
            seen.add(letter)
            if letter not in MODELLED:
                raise Failed('lab perftest double: %s is a perftest option this double does not model; test it on '
                             'real hardware\n' % (('-' + letter) if len(letter) == 1 else '--' + letter))
            apply(opts, kind, letter, argument)
    if len(positional) > 1:
        raise Failed(' Invalid Command line. Please check command rerun \n Parser function exited with Error\n')
    opts['server'] = positional[0] if positional else None
    if opts['duration'] is not None and opts['all']:
        raise Failed('Duration mode currently doesn\'t support running on all sizes.\n', LINE + '\n')
    if opts['all']:
        opts['size'] = MAX_SIZE
    elif opts['size'] is None:
        opts['size'] = 65536 if kind == 'bw' else 2
    return opts


def apply(opts, kind, letter, argument):
    if letter == 'd':
        opts['device'] = argument
    elif letter == 'i':
        opts['ib_port'] = value('IB Port', argument, 'uint8_t')
        if opts['ib_port'] < 1:
            raise Failed('IB Port can\'t be less than 1\n Parser function exited with Error\n')
    elif letter == 'p':
        opts['port'] = value('Port', argument, 'int')
    elif letter == 's':
        factor = {'K': 1024, 'M': 1024 * 1024}.get(argument[-1:], 1)
        size = strtol(argument[:-1] if factor > 1 else argument)
        if size is None or not 1 <= size * factor <= 2147483647:
            raise Failed(' Message Size should be between 1 and 2147483647\n Parser function exited with Error\n')
        opts['size'] = size * factor
    elif letter == 'n':
        opts['iters'] = value('Iteration num', argument, 'uint64_t', 5, 4294967296)
    elif letter == 'D':
        opts['duration'] = value('Duration period', argument, 'int')
        if opts['duration'] <= 0:
            raise Failed(' Duration period must be positive\n Parser function exited with Error\n')
    elif letter == 'q':
        opts['qps'] = value('num of Qps', argument, 'int', 1, 16384)
        if kind != 'bw' and opts['qps'] > 1:
            raise Failed(' Multiple QPs only available on bw tests\n Parser function exited with Error\n')
    elif letter == 'b':
        if kind != 'bw':
            raise Failed(' Bidirectional is only available in BW test\n Parser function exited with Error\n')
        opts['bidir'] = True
    elif letter == 'x':
        opts['gid_index'] = value('Gid index', argument, 'uint8_t', 0, 64)
    elif letter == 'm':
        opts['mtu'] = value('MTU', argument, 'int')
    elif letter == 't':
        opts['tx_depth'] = value('Tx depth', argument, 'int', 1, 15000)
    elif letter == 'Q':
        opts['cq_mod'] = value('CQ moderation', argument, 'int', 1, 1024)
    elif letter == 'a':
        opts['all'] = True
    elif letter == 'N':
        # perftest_parameters.c: "NoPeak only valid for BW tests" for the latency tools.
        if kind != 'bw':
            raise Failed(' NoPeak only valid for BW tests\n Parser function exited with Error\n')
        opts['no_peak'] = True
    elif letter == 'report_gbits':
        opts['gbits'] = True


def load_faults():
    """The faults file: ``{"DEV/PORT": {...}}``; a broken one ends the call naming it."""
    for name in ('faults.json', 'faults.yml', 'faults.yaml'):
        path = os.path.join(FAULTS, name)
        if not os.path.exists(path):
            continue
        try:
            with open(path) as handle:
                if name.endswith('.json'):
                    faults = json.load(handle)
                else:
                    import yaml  # pylint: disable=import-outside-toplevel
                    faults = yaml.safe_load(handle)
        except ImportError:
            raise Failed('lab perftest double: %s needs PyYAML, which this node lacks; write faults.json\n'
                         % path) from None
        except (OSError, ValueError) as exc:
            raise Failed('lab perftest double: %s cannot be read: %s\n' % (path, exc)) from None
        if faults is None:
            return {}
        if not isinstance(faults, dict) or not all(isinstance(v, dict) for v in faults.values()):
            raise Failed('lab perftest double: %s must map "DEVICE/PORT" to a mapping of faults\n' % path)
        for key, fault in faults.items():
            if not valid_fault(fault):
                raise Failed('lab perftest double: %s: %s has an unknown fault %s (share: 0..1, fail: one of %s, '
                             'latency_factor: > 0)\n' % (path, key, json.dumps(fault, sort_keys=True, default=str),
                                                         ', '.join(FAULT_KINDS)))
        return faults
    return {}


def valid_fault(fault):
    if set(fault) - {'share', 'fail', 'latency_factor'} or fault.get('fail', FAULT_KINDS[0]) not in FAULT_KINDS:
        return False
    try:
        return 0 < float(fault.get('share', 1)) <= 1 and float(fault.get('latency_factor', 1)) > 0
    except (TypeError, ValueError):
        return False


def gid_bytes(text):
    """``fe80:0000:...`` (sysfs) -> 16 bytes."""
    groups = text.split(':')
    if len(groups) != 8:
        return [0] * 16
    raw = []
    for group in groups:
        number = int(group or '0', 16)
        raw.extend([number >> 8, number & 0xff])
    return raw


def port_of(opts):
    """Device, port directory and what perftest reads of them; perftest's failures otherwise."""
    devices = sorted(os.listdir(SYSFS)) if os.path.isdir(SYSFS) else []
    device = opts['device'] or (devices[0] if devices else None)
    if device is None:
        raise Failed('No IB devices found\n')
    if device not in devices:
        raise Failed('IB device %s not found\n Unable to find the Infiniband/RoCE device\n' % device)
    port_dir = os.path.join(SYSFS, device, 'ports', str(opts['ib_port']))
    if not os.path.isdir(port_dir):
        raise Failed(' Unable to query port %d attributes\n Couldn\'t set the link layer\n Couldn\'t get context for '
                     'the device\n' % opts['ib_port'])
    state = int(read(os.path.join(port_dir, 'state')).split(':')[0])
    if state != 4:
        raise Failed(' Port number %d state is %s\n Couldn\'t set the link layer\n Couldn\'t get context for the '
                     'device\n' % (opts['ib_port'], PORT_STATES.get(state, 'Nop')))
    link = 'IB' if read(os.path.join(port_dir, 'link_layer')) == 'InfiniBand' else 'Ethernet'
    rate = float(read(os.path.join(port_dir, 'rate')).split()[0])
    lid = int(read(os.path.join(port_dir, 'lid')), 16) if os.path.exists(os.path.join(port_dir, 'lid')) else 0
    return {'device': device, 'dir': port_dir, 'link': link, 'rate': rate, 'lid': lid if link == 'IB' else 0,
            'key': '%s/%d' % (device, opts['ib_port'])}


def gid_entry(port, index):
    """``(exists, usable, bytes, type)`` of GID ``index`` of the port."""
    path = os.path.join(port['dir'], 'gids', str(index))
    if not os.path.exists(path):
        return False, False, [0] * 16, None
    raw = gid_bytes(read(path))
    type_path = os.path.join(port['dir'], 'gid_attrs', 'types', str(index))
    gid_type = read(type_path) if os.path.exists(type_path) else None
    return True, any(raw) and (gid_type is not None or port['link'] == 'IB'), raw, gid_type


def choose_gid(opts, port):
    """perftest's GID choice: ``(index or None, bytes, usable)``; "Unable to set up ..." when there is none."""
    if opts['gid_index'] is not None:
        exists, usable, raw, _type = gid_entry(port, opts['gid_index'])
        if not exists:
            return None, None, False
        return opts['gid_index'], raw, usable
    if port['link'] == 'IB':
        return -1, None, True
    best, best_score = None, -1
    for name in sorted(os.listdir(os.path.join(port['dir'], 'gids')), key=lambda n: int(n) if n.isdigit() else 0):
        if not name.isdigit():
            continue
        exists, usable, raw, gid_type = gid_entry(port, int(name))
        if not usable:
            continue
        score = (2 if gid_type == 'RoCE v2' else 1) * 2 + (1 if raw[:12] == [0] * 10 + [255, 255] else 0)
        if score > best_score:
            best, best_score = (int(name), raw), score
    if best is None:
        return None, None, False
    return best[0], best[1], True


def set_up_failure(tool):
    return ' Unable to set up my IB connection parameters\n' if tool.startswith('ib_send') else \
        ' Unable to set up socket connection\n'


def active_mtu(port):
    if port['link'] == 'IB':
        return 4096
    ndevs = os.path.join(port['dir'], 'gid_attrs', 'ndevs')
    netdevs = sorted(os.listdir(ndevs)) if os.path.isdir(ndevs) else []
    mtu = 1500
    for index in netdevs:
        netdev = read(os.path.join(port['dir'], 'gid_attrs', 'ndevs', index))
        path = os.path.join(LAB_ROOT, 'sys', 'class', 'net', netdev, 'mtu')
        if os.path.exists(path):
            mtu = int(read(path))
            break
    return max(m for m in (256, 512, 1024, 2048, 4096) if m <= max(mtu - 100, 256))


def memlock_needed(opts):
    # perftest registers a send and a receive buffer of max(message size, page size) per queue pair.
    return 2 * max(opts['size'], 4096) * opts['qps']


class Link(object):
    """The TCP connection of server and client: one JSON object a line."""

    def __init__(self, sock):
        self.sock, self.buffer = sock, b''

    def send(self, message):
        try:
            self.sock.sendall((json.dumps(message) + '\n').encode())
        except OSError:
            pass

    def receive(self):
        while b'\n' not in self.buffer:
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                chunk = b''
            if not chunk:
                return None
            self.buffer += chunk
        line, _newline, self.buffer = self.buffer.partition(b'\n')
        try:
            return json.loads(line.decode())
        except ValueError:
            return None


def connect(opts):
    if not 0 <= opts['port'] <= 65535:
        raise Failed('Problem in resolving basic address and port\nUnable to open file descriptor for socket '
                     'connection\n Unable to init the socket connection\n')
    if opts['server'] is None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind(('0.0.0.0', opts['port']))
        except OSError:
            raise Failed('Couldn\'t listen to port %d\nUnable to open file descriptor for socket connection\n '
                         'Unable to init the socket connection\n' % opts['port']) from None
        listener.listen(1)
        # perftest prints this before it binds; printed once listening, a client started on seeing it connects.
        sys.stdout.write('\n' + '*' * 36 + '\n* Waiting for client to connect... *\n' + '*' * 36 + '\n')
        sys.stdout.flush()
        connection, _address = listener.accept()
        listener.close()
        return Link(connection)
    try:
        connection = socket.create_connection((opts['server'], opts['port']), timeout=10)
        connection.settimeout(None)
    except (OSError, ValueError, UnicodeError):
        raise Failed('Couldn\'t connect to %s:%d\nUnable to open file descriptor for socket connection\n Unable to '
                     'init the socket connection\n' % (opts['server'], opts['port'])) from None
    return Link(connection)


def exchange_failure(opts):
    side = 'from' if opts['server'] else 'to'
    return ('ethernet_read_keys: Couldn\'t read remote address\n Unable to read %s socket/rdma_cm\n Failed to '
            'exchange data between server and clients\n' % side)


def sizes(opts):
    return [2 ** n for n in range(1, 24)] if opts['all'] else [opts['size']]


def bw_figures(opts, port, fault):
    """``[(size, iterations, peak, average, msg rate)]`` of this side in its unit (one direction)."""
    rate = port['rate']
    base = 100 if rate < 150 else 200
    peak_line, average_line = (value_ * rate / base for value_ in RECORDED[base])
    if 'share' in fault:
        average_line, peak_line = float(fault['share']) * rate, float(fault['share']) * rate * peak_line / average_line
    rows = []
    for size in sizes(opts):
        cap = opts['qps'] * MSG_RATE_PER_QP * size * 8 / 1e9
        average, peak = min(average_line, cap), min(peak_line, cap * 1.001)
        msg_rate = average * 1e9 / (size * 8) / 1e6
        if opts['duration']:
            iterations = int(msg_rate * 1e6 * opts['duration'])
        else:
            iterations = opts['iters'] * opts['qps']
        if opts['no_peak'] or opts['duration'] or opts['iters'] > 20000:
            peak = 0.0
        if not opts['gbits']:
            average, peak = average * 1e9 / 8 / MIB, peak * 1e9 / 8 / MIB
        rows.append([size, iterations, peak, average, msg_rate])
    return rows


def bw_row(row, gbits):
    size, iterations, peak, average, msg_rate = row
    numbers = (size, iterations, peak, average, msg_rate)
    if gbits and average < 0.1:
        # perftest's REPORT_FMT_EXT: six decimals for Gb/s below 0.1.
        return ' %-7d    %d           %-7.6f            %-7.6f            %-7.6f\n' % numbers
    return ' %-7d    %-10d       %-7.2f            %-7.2f\t\t     %-7.6f\n' % numbers


def lat_figures(tool, opts, port, fault):
    verb = TOOLS[tool][2]
    factor = float(fault.get('latency_factor', 1))
    rows = []
    for size in sizes(opts):
        if port['link'] == 'IB':
            table, ratio = LAT_IB_SEND, LAT_IB_RATIO[verb]
        else:
            table, ratio = LAT_ROCE[verb], 1.0
        recorded = max([s for s in table if s <= size] or [min(table)])
        extra = max(0, size - recorded) * 8 / (port['rate'] * 1e3)
        figures = [value_ * ratio * factor + (extra if i != 4 else 0) for i, value_ in enumerate(table[recorded])]
        rows.append((size, figures))
    return rows


def info_block(tool, opts, port, gid_index):
    title, kind, verb = TOOLS[tool]
    server = opts['server'] is None
    words = [title] + (['Bidirectional'] if opts['bidir'] else []) + ['BW' if kind == 'bw' else 'Latency', 'Test']
    lines = [LINE, '                    ' + ' '.join(words),
             ' Dual-port       : OFF\t\tDevice         : %s' % port['device'],
             ' Number of qps   : %d\t\tTransport type : IB' % opts['qps'],
             ' Connection type : RC\t\tUsing SRQ      : OFF',
             ' PCIe relax order: ON\t\tLock-free      : OFF',
             ' ibv_wr* API     : ON\t\tUsing Enhanced Reorder      : OFF']
    if not server or opts['bidir']:
        lines.append(' TX depth        : %d' % (opts['tx_depth'] or (128 if kind == 'bw' else 1)))
    if verb == 'send' and (server or opts['bidir']):
        lines.append(' RX depth        : 512')
    if kind == 'bw':
        cq_mod = opts['cq_mod'] or (1 if opts['size'] > 8192 and not opts['all'] else 100)
        lines.extend([' CQ Moderation   : %d' % cq_mod, ' CQE Poll Batch  : Dynamic'])
    mtu = active_mtu(port)
    if opts['mtu'] in (256, 512, 1024, 2048, 4096) and opts['mtu'] <= mtu:
        mtu = opts['mtu']
    lines.extend([' Mtu             : %d[B]' % mtu, ' Link type       : %s' % port['link']])
    if gid_index is not None and gid_index >= 0:
        lines.append(' GID index       : %d' % gid_index)
    if verb == 'read':
        lines.append(' Outstand reads  : 16')
    else:
        lines.append(' Max inline data : %d[B]' % (0 if kind == 'bw' else 220 if verb == 'write' else 236))
    lines.extend([' rdma_cm QPs\t : OFF', ' Data ex. method : Ethernet', LINE])
    return lines


def address_lines(tool, side, address, gid):
    verb = TOOLS[tool][2]
    line = ' %s address: LID %s QPN %s PSN %s' % (side, c_hex(address['lid'], 4), c_hex(address['qpn'], 6),
                                                  c_hex(address['psn'], 6))
    if verb == 'read':
        line += ' OUT %s' % c_hex(16, 4)
    if verb in ('read', 'write'):
        line += ' RKey %s VAddr %s' % (c_hex(address['rkey'], 8), c_hex(address['vaddr'], 16))
    lines = [line]
    if gid is not None:
        lines.append(' GID: ' + ':'.join('%02d' % byte for byte in gid))
    return lines


def c_hex(number, width):
    """C's ``%#0Nx``: 0x and zero padding to N characters, but a plain zero without 0x."""
    return '0' * width if number == 0 else '0x' + ('%x' % number).rjust(width - 2, '0')


def run(tool, opts):
    _title, kind, verb = TOOLS[tool]
    server = opts['server'] is None
    out = sys.stdout
    faults = load_faults()
    if kind == 'bw' and (opts['duration'] or opts['no_peak'] or opts['iters'] > 20000 or
                         (server and verb == 'send' and not opts['bidir'])):
        out.write(' WARNING: BW peak won\'t be measured in this run.\n')
    port = port_of(opts)
    fault = faults.get(port['key'], {})
    if fault.get('fail') == 'port_down':
        raise Failed(' Port number %d state is Down\n Couldn\'t set the link layer\n Couldn\'t get context for the '
                     'device\n' % opts['ib_port'])
    link = connect(opts)
    mine = {'tool': tool, 'size': opts['size'], 'all': opts['all'], 'qps': opts['qps'], 'bidir': opts['bidir'],
            'gbits': opts['gbits'], 'duration': opts['duration'], 'fault': fault.get('fail'),
            'share': fault.get('share')}
    link.send(mine)
    peer = link.receive()
    if peer is None or peer['tool'] != tool or peer['size'] != opts['size'] or peer['all'] != opts['all']:
        raise Failed(exchange_failure(opts))
    # What fails on one side ends the pair: that side says why, the other sees the exchange break.
    soft, _hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    own_failure = None
    if fault.get('fail') == 'memlock' or (soft != resource.RLIM_INFINITY and soft < memlock_needed(opts)):
        own_failure = 'Couldn\'t allocate MR with error=12\nfailed to create mr\nFailed to create MR\n Couldn\'t ' \
                      'create IB resources\n'
    gid_index, gid, gid_usable = choose_gid(opts, port)
    if own_failure is None and gid_index is None:
        own_failure = set_up_failure(tool)
    if own_failure is None and 'no_exchange' in (fault.get('fail'), peer.get('fault')):
        own_failure = exchange_failure(opts)
    address = {'lid': port['lid'], 'qpn': random.randint(0x40, 0xffff), 'psn': random.randint(0, 0xffffff),
               'rkey': random.randint(0x1000, 0x1fffff), 'vaddr': random.randint(0x7f0000000000, 0x7fffffffffff),
               'gid': gid, 'usable': gid_usable}
    link.send({'status': 'fail' if own_failure else 'ok', 'address': address})
    status = link.receive()
    if own_failure:
        raise Failed(own_failure)
    if status is None or status['status'] != 'ok':
        raise Failed(exchange_failure(opts))
    remote = status['address']
    lines = info_block(tool, opts, port, gid_index)
    lines.extend(address_lines(tool, 'local', address, gid if gid_index is not None and gid_index >= 0 else None))
    lines.extend(address_lines(tool, 'remote', remote, remote['gid'] if gid_index is not None and gid_index >= 0
                               else None))
    lines.append(LINE)
    out.write('\n'.join(lines) + '\n')
    out.flush()
    if not gid_usable:
        raise Failed('Failed to modify QP %d to RTR\n Unable to Connect the HCA\'s through the link\n' % address['qpn'])
    if not remote['usable']:
        raise Failed(exchange_failure(opts))
    if kind == 'bw':
        return run_bw(tool, opts, port, fault, link, peer)
    return run_lat(tool, opts, port, fault, link, peer)


def completion_error(opts):
    return ' Completion with error at %s\n Failed status 12: wr_id 0 syndrom 0x81\nscnt=128, ccnt=0\n Failed to ' \
           'complete run_iter_bw function successfully\n' % ('server' if opts['server'] is None else 'client')


def run_bw(tool, opts, port, fault, link, peer):
    verb = TOOLS[tool][2]
    server, out = opts['server'] is None, sys.stdout
    failing = 'completion_error' in (fault.get('fail'), peer.get('fault'))
    header = (' #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n' if opts['gbits']
              else ' #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n')
    out.write(header)
    out.flush()
    if failing:
        link.send({'rows': None})
        if not server:
            raise Failed(completion_error(opts))
        link.receive()
        raise Failed(exchange_failure(opts))
    rows = bw_figures(opts, port, fault)
    link.send({'rows': rows})
    remote = link.receive()
    if remote is None or remote.get('rows') is None:
        raise Failed(exchange_failure(opts))
    if opts['bidir']:
        # Both directions summed; each side adds the peer's numbers, in the peer's unit, to its own.
        printed = [[r[0], r[1], r[2] + p[2], r[3] + p[3], r[4] + p[4]] for r, p in zip(rows, remote['rows'])]
    elif server and verb in ('write', 'read'):
        # The server prints its own header over the client's numbers, one row (the last size).
        printed = remote['rows'][-1:]
    else:
        printed = rows
    for row in printed:
        out.write(bw_row(row, opts['gbits']))
    out.write(LINE + '\n')
    return 0


def run_lat(tool, opts, port, fault, link, _peer):
    verb = TOOLS[tool][2]
    server, out = opts['server'] is None, sys.stdout
    if opts['duration']:
        out.write(' #bytes        #iterations       t_avg[usec]    tps average\n')
    else:
        out.write(' #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]'
                  '   99% percentile[usec]   99.9% percentile[usec] \n')
    link.send({'done': True})
    link.receive()
    if server and verb == 'read':
        out.write(LINE + '\n')
        return 0
    rtt = 1 if verb == 'read' else 2
    for size, figures in lat_figures(tool, opts, port, fault):
        if opts['duration']:
            tps = 1e6 / (figures[3] * rtt)
            out.write(' %-7d       %d            %-7.2f        %-7.2f\n' % (size, int(tps * opts['duration']),
                                                                            figures[3], tps))
        else:
            out.write(' %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t'
                      '%-7.2f\n' % tuple([size, opts['iters']] + figures))
    out.write(LINE + '\n')
    return 0


def main(tool, argv):
    """Run ``tool`` (ib_write_bw, ...) with ``argv``; the exit status."""
    log_call(tool, argv)
    try:
        opts = parse(tool, argv)
        return run(tool, opts)
    except Failed as failure:
        sys.stdout.write(failure.out)
        sys.stdout.flush()
        sys.stderr.write(failure.err)
        sys.stderr.flush()
        return 1


def entry():
    """The tool is the name this was started as: ``ib_read_lat.py`` is ib_read_lat."""
    tool = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    if tool not in TOOLS:
        sys.stderr.write('lab perftest double: started as %s, not one of %s\n' % (tool, ', '.join(sorted(TOOLS))))
        return 2
    return main(tool, sys.argv[1:])


if __name__ == '__main__':
    sys.exit(entry())
