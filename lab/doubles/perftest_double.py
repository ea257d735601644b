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
* the memlock limit: the double's own soft RLIMIT_MEMLOCK (set it for the process as ``ulimit -l``, ``prlimit``
  or ``resource.setrlimit`` would) against the pages the buffer it registers pins. perftest registers one buffer
  of 2 x max(message size, page size) per queue pair, the size aligned up to the 64-byte cache line
  (perftest_resources.c alloc_ctx: ``INC(BUFF_SIZE(size, cycle_buffer), cache_line_size) * 2 *
  num_of_qps_factor``; ``-a`` sizes it for 8 MiB messages); the kernel pins whole pages and refuses more than the
  limit with ENOMEM (ib_umem_get), so perftest prints "Couldn't allocate MR with error=12", "failed to create
  mr", "Failed to create MR" and " Couldn't create IB resources" and exits 1; the peer sees the exchange break.
  64 KiB (the kernel's default) is too little for the default 64 KiB messages (128 KiB). The queues' own
  pinned pages (CQ and QP rings, some KiB) are not counted, and unlike the kernel the double applies the limit to
  a process holding CAP_IPC_LOCK (root) too, so that tests running as root can set one. A process that is not
  root with a limit of 32 KiB or less also gets libibverbs' warning ("libibverbs: Warning: RLIMIT_MEMLOCK is N
  bytes. This will severely limit memory registrations.", rdma-core libibverbs/init.c check_memlock_limit);
* the GIDs of the pair: an IPv4-mapped GID against one that is not ends both sides after the test header with
  "Found Incompatibility issue with GID types." (ctx_check_gid_compatibility); a RoCE v1 GID against a RoCE v2
  one connects, but no packet of one side is taken by the other, so the client's work completes with "transport
  retry counter exceeded" (" Completion with error at client ... Failed status 12", ib_write_lat adds "Test
  exited with Error", ib_read_lat and ib_send_lat exit 17) and the server sees the exchange break (a real
  latency server would wait for ever).

Figures. Bandwidth is what limits the pair, the slower side of the two for each limit:

* the line: the share of the port's line rate (``ports/N/rate``) that the InfiniBand field report recorded with
  64 KiB messages: 94.71 Gb/s (peak 94.72) of 100 Gb/s and 183.61 (peak 183.66) of 200 Gb/s; a port of another
  rate gets the share of the nearer of the two (below 150 Gb/s the 100 Gb/s one), scaled to its rate - no such
  port was recorded;
* the MTU in use (the smaller of the two sides' active MTUs, or -m when it is smaller; an InfiniBand port's
  active MTU is 4096 unless ``<lab root>/verbs/ports.json`` says otherwise, a RoCE port's follows its netdev's
  mtu): each packet carries its headers, so a message of S bytes takes S + ceil(S / MTU) x H bytes on the wire
  (H: InfiniBand 26, RoCE v2 82, see PACKET_HEADER); the recorded share stands for the MTU the lab's ports run
  at (InfiniBand 4096, RoCE 1024 on a 1500-byte netdev), a smaller MTU scales it by the ratio of the wire bytes,
  a larger one gains nothing;
* PCIe: the PCI function's link as sysfs shows it (``current_link_speed`` "8.0 GT/s PCIe" or, before kernel
  5.7, "8 GT/s"; ``current_link_width`` "8"; an SR-IOV VF, which shows "Unknown" and 0, uses its PF's), usable
  at lanes x GT/s x line encoding x PCIE_EFFICIENCY (a measured Gen3 x8 figure, see there): Gen3 x8 52.5 Gb/s,
  Gen3 x16 105.0, Gen4 x16 210.0, Gen5 x16 420.0. The lab's profiles give every function the link its card
  trains at (x16 at the generation of the node; the a100 profile's PCIe 3.0 x8 ConnectX-4 Lx, x8), which limits
  none of their ports; a profile makes one slow with ``pcie_link_width: 8`` (lab/sysfs_fixture.py);
* the message rate: small messages are bound by 3 million messages per second per QP (as the public corpus'
  ConnectX-7 ``ib_send_bw -a`` run shows).

``-b`` reports both directions summed, as perftest does (a PCIe link carries each direction at its full rate).
Without ``--report_gbits`` the table is ``BW average[MiB/sec]`` (2**20 bytes per second, perftest 24.07 and
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
naming the file. Slow ports and memlock failures need no fault: a narrow PCIe link, a small MTU or a low memlock
limit make them as on real hardware.
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
# What ibv_query_port reports and sysfs does not (an InfiniBand port's active_mtu), written by lab/sysfs_fixture.py.
VERBS_PORTS = os.path.join(LAB_ROOT, 'verbs', 'ports.json')
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
# PCIe. A link moves lanes x transfer rate x line encoding (8b/10b at 2.5 and 5 GT/s, 128b/130b from 8 GT/s,
# 242b/256b flits at 64 GT/s) of raw bits; TLP headers, sequence numbers and LCRCs, ACK and flow-control DLLPs and
# the skip ordered sets take a share of it. That share is taken from a measurement: an FDR port (54.5 Gb/s of data)
# of a ConnectX-3 in a PCIe 3.0 x8 slot moves "52~53Gbps" (Mellanox community answer on PCI generations and lane
# widths, https://mellanox38.rssing.com/chan-11689824/article788.html), 52.5 of the 63.0 Gb/s an x8 Gen3 link
# carries after encoding: 0.833. pcie-bench's model of 256-byte DMA writes gives the same, 52.9 Gb/s at Gen3 x8
# (github.com/pcie-bench/pcie-model, model/pcie.py: TLP_bw less 24 bytes a TLP), and the field report's V100 nodes
# agree: their 100 Gb/s ports reach 94.71 Gb/s through Gen3 x16 (105.0 Gb/s by this figure, so not the limit).
# NVIDIA support says as much of a ConnectX-5 100GbE card in an x8 slot: the port still links at 100GbE and the
# PCIe throughput is the bottleneck (forums.developer.nvidia.com, "PCIe 3.0 x16 card in x16 physical / x8 electrical
# slot?").
PCIE_EFFICIENCY = 52.5 / (8 * 8.0 * 128 / 130)
# MTU. The bytes every packet carries besides its payload: InfiniBand LRH 8 + BTH 12 + ICRC 4 + VCRC 2; RoCE v2 on
# Ethernet preamble and start delimiter 8 + MAC header 14 + FCS 4 + inter-frame gap 12, IPv4 20 + UDP 8 + BTH 12 +
# ICRC 4 (the RETH of a write's first packet is left out). A public ConnectX-4 Lx 25GbE ib_send_bw run at MTU 1024
# reaches 23.15 of 25 Gb/s, 1024 / (1024 + 82) of it (tests/unit/fixtures/public/perftest).
PACKET_HEADER = {'IB': 26, 'Ethernet': 82}
# The MTU the recorded shares stand for: the field report's InfiniBand ports ran at 4096, and the lab's RoCE ports
# have 1500-byte netdevs, on which perftest runs at 1024. (At 1024 a RoCE v2 port cannot pass 1024 / 1106 = 92.6 % of
# its line rate; the lab's RoCE ports keep the recorded 94.71 % all the same, as the lab's expectations rest on it.)
REFERENCE_MTU = {'IB': 4096, 'Ethernet': 1024}
IB_MTUS = (256, 512, 1024, 2048, 4096)
CACHE_LINE = 64
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
    """End the call: ``out`` to stdout, ``err`` to stderr, exit status ``status`` (perftest's FAILURE, 1)."""

    def __init__(self, err='', out='', status=1):
        super().__init__(err)
        self.err, self.out, self.status = err, out, status


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
            'key': '%s/%d' % (device, opts['ib_port']), 'pcie': pcie_gbps(pcie_link(device))}


def pcie_link(device):
    """``(GT/s, lanes)`` of the PCIe link the device's traffic crosses, or None when sysfs shows none.

    The function is the device's ``device`` link; an SR-IOV VF (``physfn``) has no link of its own - sysfs shows
    "Unknown" and 0 - and its traffic crosses its PF's.
    """
    function = os.path.realpath(os.path.join(SYSFS, device, 'device'))
    if os.path.lexists(os.path.join(function, 'physfn')):
        function = os.path.realpath(os.path.join(function, 'physfn'))
    speed_path, width_path = (os.path.join(function, name) for name in ('current_link_speed', 'current_link_width'))
    if not (os.path.isfile(speed_path) and os.path.isfile(width_path)):
        return None
    try:
        # "8.0 GT/s PCIe" (kernel 5.7 and later) or "8 GT/s"; "Unknown" (or "Unknown speed") when there is no link
        gts, lanes = float(read(speed_path).split()[0]), int(read(width_path))
    except (IndexError, ValueError):
        return None
    return (gts, lanes) if gts > 0 and lanes > 0 else None


def pcie_gbps(link):
    """What a PCIe link ``(GT/s, lanes)`` carries of DMA data, Gb/s; None for no link."""
    if link is None:
        return None
    gts, lanes = link
    encoding = 8 / 10 if gts < 8 else 128 / 130 if gts < 64 else 242 / 256
    return lanes * gts * encoding * PCIE_EFFICIENCY


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


def verbs_port(key):
    """What ``<lab root>/verbs/ports.json`` says of port ``DEV/PORT`` ({} when nothing); a broken file is named."""
    if not os.path.exists(VERBS_PORTS):
        return {}
    try:
        with open(VERBS_PORTS) as handle:
            ports = json.load(handle)
    except (OSError, ValueError) as exc:
        raise Failed('lab perftest double: %s cannot be read: %s\n' % (VERBS_PORTS, exc)) from None
    attributes = ports.get(key, {}) if isinstance(ports, dict) else None
    if not isinstance(attributes, dict) or attributes.get('active_mtu', 4096) not in IB_MTUS:
        raise Failed('lab perftest double: %s must map "DEVICE/PORT" to {"active_mtu": one of %s}\n'
                     % (VERBS_PORTS, ', '.join(str(m) for m in IB_MTUS)))
    return attributes


def active_mtu(port):
    """The port's active MTU as ibv_query_port reports it."""
    if port['link'] == 'IB':
        return verbs_port(port['key']).get('active_mtu', 4096)
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


def own_mtu(opts, port):
    """The MTU this side runs at before the pair settles on the smaller of both: -m when the port allows it."""
    mtu = active_mtu(port)
    if opts['mtu'] in IB_MTUS and opts['mtu'] <= mtu:
        mtu = opts['mtu']
    return mtu


def memlock_needed(opts):
    """Bytes of memory the registration pins: whole pages of perftest's buffer (see the module's docstring)."""
    page = resource.getpagesize()
    half = -(-max(opts['size'], page) // CACHE_LINE) * CACHE_LINE
    return -(-2 * half * opts['qps'] // page) * page


def memlock_refused(opts):
    """Whether the kernel refuses the registration: more pages than the soft RLIMIT_MEMLOCK allows."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    page = resource.getpagesize()
    return soft != resource.RLIM_INFINITY and memlock_needed(opts) // page > soft // page


def memlock_warning():
    """libibverbs' warning at initialisation for a process that is not root with 32 KiB or less, or ''."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if os.geteuid() == 0 or soft == resource.RLIM_INFINITY or soft > 32768:
        return ''
    return ('libibverbs: Warning: RLIMIT_MEMLOCK is %d bytes.\n    This will severely limit memory registrations.\n'
            % soft)


def ipv4_mapped(gid):
    """perftest's ipv6_addr_v4mapped of a GID (16 bytes, or None for the zeros of no GID)."""
    return gid is not None and list(gid[:12]) == [0] * 10 + [255, 255]


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


def own_limits(port, fault, mtu=None):
    """What this side brings to the pair: line share (``peak``, ``average``, Gb/s), ``pcie`` Gb/s (None: no link
    known), ``mtu`` (None: the reference one) and ``link``."""
    rate = port['rate']
    base = 100 if rate < 150 else 200
    peak_line, average_line = (value_ * rate / base for value_ in RECORDED[base])
    if 'share' in fault:
        average_line, peak_line = float(fault['share']) * rate, float(fault['share']) * rate * peak_line / average_line
    return {'peak': peak_line, 'average': average_line, 'pcie': port.get('pcie'), 'mtu': mtu,
            'link': port.get('link', 'IB')}


def pair_limits(mine, peer):
    """The limits of the pair: the slower line, the narrower PCIe link, the smaller MTU."""
    if not peer:
        return mine
    line = peer if peer['average'] < mine['average'] else mine
    pcie = [value_ for value_ in (mine['pcie'], peer.get('pcie')) if value_ is not None]
    mtus = [value_ for value_ in (mine['mtu'], peer.get('mtu')) if value_]
    return {'peak': line['peak'], 'average': line['average'], 'pcie': min(pcie) if pcie else None,
            'mtu': min(mtus) if mtus else None, 'link': mine['link']}


def mtu_factor(size, mtu, link):
    """The share of the recorded bandwidth a message of ``size`` bytes keeps at ``mtu`` (1.0 at the reference MTU
    or above): the wire bytes at the reference MTU over those at ``mtu``."""
    if not mtu:
        return 1.0
    header, reference = PACKET_HEADER.get(link, PACKET_HEADER['IB']), REFERENCE_MTU.get(link, REFERENCE_MTU['IB'])

    def wire(at):
        return size + -(-size // at) * header

    return min(1.0, wire(reference) / wire(mtu))


def bw_figures(opts, port, fault, peer=None, mtu=None):
    """``[(size, iterations, peak, average, msg rate)]`` of this side in its unit (one direction).

    ``peer`` is what the other side sent of its limits (own_limits), ``mtu`` the MTU this side runs at.
    """
    limits = pair_limits(own_limits(port, fault, mtu), peer)
    rows = []
    for size in sizes(opts):
        factor = mtu_factor(size, limits['mtu'], limits['link'])
        average_line, peak_line = limits['average'] * factor, limits['peak'] * factor
        if limits['pcie'] is not None and limits['pcie'] < average_line:
            average_line, peak_line = limits['pcie'], limits['pcie'] * limits['peak'] / limits['average']
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


def info_block(tool, opts, port, gid_index, mtu=None):
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
    lines.extend([' Mtu             : %d[B]' % (mtu or own_mtu(opts, port)), ' Link type       : %s' % port['link']])
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
        out.flush()
    # libibverbs checks the limit when perftest first lists the devices.
    sys.stderr.write(memlock_warning())
    sys.stderr.flush()
    port = port_of(opts)
    fault = faults.get(port['key'], {})
    if fault.get('fail') == 'port_down':
        raise Failed(' Port number %d state is Down\n Couldn\'t set the link layer\n Couldn\'t get context for the '
                     'device\n' % opts['ib_port'])
    mtu = own_mtu(opts, port)
    link = connect(opts)
    mine = {'tool': tool, 'size': opts['size'], 'all': opts['all'], 'qps': opts['qps'], 'bidir': opts['bidir'],
            'gbits': opts['gbits'], 'duration': opts['duration'], 'fault': fault.get('fail'),
            'share': fault.get('share'), 'mtu': mtu, 'limits': own_limits(port, fault, mtu)}
    link.send(mine)
    peer = link.receive()
    if peer is None or peer['tool'] != tool or peer['size'] != opts['size'] or peer['all'] != opts['all']:
        raise Failed(exchange_failure(opts))
    # check_mtu: both sides run at the smaller of their MTUs.
    mtu = min(mtu, peer.get('mtu') or mtu)
    # What fails on one side ends the pair: that side says why, the other sees the exchange break.
    own_failure = None
    if fault.get('fail') == 'memlock' or memlock_refused(opts):
        own_failure = 'Couldn\'t allocate MR with error=12\nfailed to create mr\nFailed to create MR\n Couldn\'t ' \
                      'create IB resources\n'
    gid_index, gid, gid_usable = choose_gid(opts, port)
    if own_failure is None and gid_index is None:
        own_failure = set_up_failure(tool)
    if own_failure is None and 'no_exchange' in (fault.get('fail'), peer.get('fault')):
        own_failure = exchange_failure(opts)
    gid_type = gid_entry(port, gid_index)[3] if gid_index is not None and gid_index >= 0 else None
    address = {'lid': port['lid'], 'qpn': random.randint(0x40, 0xffff), 'psn': random.randint(0, 0xffffff),
               'rkey': random.randint(0x1000, 0x1fffff), 'vaddr': random.randint(0x7f0000000000, 0x7fffffffffff),
               'gid': gid, 'usable': gid_usable, 'gid_type': gid_type}
    link.send({'status': 'fail' if own_failure else 'ok', 'address': address})
    status = link.receive()
    if own_failure:
        raise Failed(own_failure)
    if status is None or status['status'] != 'ok':
        raise Failed(exchange_failure(opts))
    remote = status['address']
    lines = info_block(tool, opts, port, gid_index, mtu)
    # ctx_check_gid_compatibility, after the test header: an IPv4-mapped GID against one that is not (no GID, as on
    # InfiniBand without -x, counts as not).
    if ipv4_mapped(gid) != ipv4_mapped(remote['gid']):
        out.write('\n'.join(lines) + '\n')
        out.flush()
        raise Failed('\n Found Incompatibility issue with GID types.\n Please Try to use a different IP version.\n\n')
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
    # RoCE v1 against RoCE v2: the QPs connect, but neither side takes the other's packets.
    lost = bool(port['link'] == 'Ethernet' and gid_type and remote.get('gid_type') and
                gid_type != remote['gid_type'])
    if kind == 'bw':
        return run_bw(tool, opts, port, fault, link, peer, mtu, lost)
    return run_lat(tool, opts, port, fault, link, lost)


def completion_error(opts):
    return ' Completion with error at %s\n Failed status 12: wr_id 0 syndrom 0x81\nscnt=128, ccnt=0\n Failed to ' \
           'complete run_iter_bw function successfully\n' % ('server' if opts['server'] is None else 'client')


def run_bw(tool, opts, port, fault, link, peer, mtu=None, lost=False):
    verb = TOOLS[tool][2]
    server, out = opts['server'] is None, sys.stdout
    failing = lost or 'completion_error' in (fault.get('fail'), peer.get('fault'))
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
    rows = bw_figures(opts, port, fault, peer.get('limits'), mtu)
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


def run_lat(tool, opts, port, fault, link, lost=False):
    verb = TOOLS[tool][2]
    server, out = opts['server'] is None, sys.stdout
    if opts['duration']:
        out.write(' #bytes        #iterations       t_avg[usec]    tps average\n')
    else:
        out.write(' #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]'
                  '   99% percentile[usec]   99.9% percentile[usec] \n')
    out.flush()
    link.send({'done': not lost})
    if lost:
        if not server:
            # run_iter_lat*: NOTIFY_COMP_ERROR_SEND; write_lat's main adds its line, read_lat and send_lat exit 17.
            raise Failed(' Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81\nscnt=1, ccnt=0\n' +
                         ('Test exited with Error\n' if verb == 'write' else ''), status=1 if verb == 'write' else 17)
        link.receive()
        raise Failed(exchange_failure(opts))
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
        return failure.status


def entry():
    """The tool is the name this was started as: ``ib_read_lat.py`` is ib_read_lat."""
    tool = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    if tool not in TOOLS:
        sys.stderr.write('lab perftest double: started as %s, not one of %s\n' % (tool, ', '.join(sorted(TOOLS))))
        return 2
    return main(tool, sys.argv[1:])


if __name__ == '__main__':
    sys.exit(entry())
