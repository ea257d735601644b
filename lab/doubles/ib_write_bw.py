# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Lab test double of perftest's ib_write_bw (the lab kernel has no RDMA, so the real one cannot run).

Command line as perftest: ``ib_write_bw -d DEV [-p PORT] [-s SIZE] [--report_gbits] [-F] [SERVER]``.
Without SERVER it is the server: it listens on TCP PORT (18515), waits for one client and exchanges a
line with it, as perftest exchanges its connection data; with SERVER it is the client and connects to it
("Couldn't connect to ..." when nothing listens). Both then print perftest's report with the bandwidth
row **recorded in seed 003** for the port's line rate (100 Gb/s: 94.72 / 94.71; 200 Gb/s: 183.66 / 183.61);
a port of another rate has no recording and fails. The device and its port come from the lab's sysfs tree:
an unknown device or a port that is not ACTIVE fail with perftest's messages, and a memlock limit
(RLIMIT_MEMLOCK) too small for the buffers fails with "Couldn't allocate MR" as memory registration does.
Every call is logged to ``<lab root>/firmware/calls.log`` like the firmware doubles' calls.
"""

from __future__ import annotations

import os
import resource
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _firmware_state import log_call  # noqa: E402  pylint: disable=wrong-import-position

LAB_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYSFS = os.path.join(LAB_ROOT, 'sys', 'class', 'infiniband')
# Seed 003's rows: #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]
RECORDED = {100: (94.72, 94.71, 0.180640), 200: (183.66, 183.61, 0.350214)}
LINE = '-' * 87


def read(path):
    with open(path) as handle:
        return handle.read().strip()


def fail(*lines):
    sys.stdout.write('\n'.join(lines) + '\n')
    sys.exit(1)


def parse(argv):
    opts = {'device': None, 'port': 18515, 'size': 65536, 'gbits': False, 'server': None}
    args = list(argv)
    while args:
        word = args.pop(0)
        if word in ('-d', '--ib-dev'):
            opts['device'] = args.pop(0)
        elif word in ('-p', '--port'):
            opts['port'] = int(args.pop(0))
        elif word in ('-s', '--size'):
            text = args.pop(0)
            opts['size'] = int(text[:-1]) * 1024 * 1024 if text.endswith('M') else int(text)
        elif word == '--report_gbits':
            opts['gbits'] = True
        elif word in ('-F', '--CPU-freq', '-a', '--all'):
            pass
        elif word in ('-q', '--qp', '-n', '--iters', '-i', '--ib-port'):
            args.pop(0)
        elif word.startswith('-'):
            fail(' Invalid Command or flag.', ' Please check command line and run again.')
        else:
            opts['server'] = word
    return opts


def check_device(device):
    if device is None or not os.path.isdir(os.path.join(SYSFS, device)):
        fail(' IB device %s not found' % device, ' Unable to find the Infiniband/RoCE device')
    port = os.path.join(SYSFS, device, 'ports', '1')
    if read(os.path.join(port, 'state')).split(':')[-1].strip() != 'ACTIVE':
        fail(' Port number 1 state is Down', ' Couldn\'t set the link layer', ' Couldn\'t get context for the device')
    rate = int(float(read(os.path.join(port, 'rate')).split()[0]))
    link_type = 'IB' if read(os.path.join(port, 'link_layer')) == 'InfiniBand' else 'Ethernet'
    return rate, link_type


def exchange(opts):
    if opts['server'] is None:
        sys.stdout.write('\n' + '*' * 36 + '\n* Waiting for client to connect... *\n' + '*' * 36 + '\n')
        sys.stdout.flush()
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(('0.0.0.0', opts['port']))
        listener.listen(1)
        connection, _address = listener.accept()
        connection.sendall(connection.recv(64))
        connection.close()
        listener.close()
        return
    try:
        connection = socket.create_connection((opts['server'], opts['port']), timeout=5)
    except OSError:
        fail('Couldn\'t connect to %s:%d' % (opts['server'], opts['port']),
             'Unable to open file descriptor for socket connection Unable to init the socket connection')
    connection.sendall(b'lab-perftest-exchange\n')
    connection.recv(64)
    connection.close()


def main(argv):
    log_call('ib_write_bw', argv[1:])
    opts = parse(argv[1:])
    rate, link_type = check_device(opts['device'])
    if rate not in RECORDED:
        fail('lab ib_write_bw double: no recorded result for a %d Gb/s port (recordings: %s Gb/s)'
             % (rate, ', '.join(str(r) for r in sorted(RECORDED))))
    soft, _hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    # perftest registers (locks) two buffers of max(message size, page size) per queue pair.
    if soft != resource.RLIM_INFINITY and soft < 2 * max(opts['size'], 4096):
        fail('Couldn\'t allocate MR', 'failed to create mr', 'Failed to create MR', 'Couldn\'t create IB resources')
    exchange(opts)
    peak, average, msg_rate = RECORDED[rate]
    unit = 'Gb' if opts['gbits'] else 'MB'
    if not opts['gbits']:  # perftest's MB/sec is 2**20 bytes per second
        peak, average = (round(value * 1e9 / 8 / 2 ** 20, 2) for value in (peak, average))
    sys.stdout.write('\n'.join([
        LINE, '                    RDMA_Write BW Test',
        ' Dual-port       : OFF          Device         : %s' % opts['device'],
        ' Number of qps   : 1            Transport type : IB',
        ' Connection type : RC           Using SRQ      : OFF',
        ' Mtu             : 4096[B]', ' Link type       : %s' % link_type,
        ' Data ex. method : Ethernet', LINE,
        ' #bytes     #iterations    BW peak[%s/sec]    BW average[%s/sec]   MsgRate[Mpps]' % (unit, unit),
        ' %-10d %-14d %-18.2f %-20.2f %.6f' % (opts['size'], 5000, peak, average, msg_rate), LINE]) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
