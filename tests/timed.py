# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Time the parts of `make test` and print them as one table at its end.

    timed.py run DIR PART -- COMMAND...   run COMMAND, record its start (against DIR/start), wall and CPU time and rc
    timed.py table DIR                    print the table of every recorded part; exit 1 when one of them failed

`make test` runs its parts in parallel (make -j): the start column shows when each began, wall its own duration and
cpu the CPU time of the part and everything it started (user + system of the waited-for children).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def _clock(seconds):
    seconds = int(round(seconds))
    return '%d:%02d' % (seconds // 60, seconds % 60)


def run(directory, part, command):
    os.makedirs(directory, exist_ok=True)
    start_file = os.path.join(directory, 'start')
    if not os.path.exists(start_file):
        with open(start_file, 'w') as handle:
            handle.write('%f\n' % time.time())
    with open(start_file) as handle:
        origin = float(handle.read())
    before = os.times()
    began = time.time()
    # the sub-make keeps the jobserver of make -j (inherited descriptors)
    returncode = subprocess.call(command, close_fds=False)
    after = os.times()
    record = {
        'part': part,
        'start': began - origin,
        'wall': time.time() - began,
        'cpu': (after.children_user - before.children_user) + (after.children_system - before.children_system),
        'rc': returncode,
    }
    with open(os.path.join(directory, part + '.json'), 'w') as handle:
        json.dump(record, handle)
    return returncode


def table(directory):
    records = []
    for name in sorted(os.listdir(directory)):
        if name.endswith('.json'):
            with open(os.path.join(directory, name)) as handle:
                records.append(json.load(handle))
    records.sort(key=lambda r: r['start'])
    row = '%%-%ds %%8s %%8s %%8s  %%s' % max([len('make test')] + [len(r['part']) for r in records])
    lines = [row % ('part', 'start', 'wall', 'cpu', 'result')]
    for record in records:
        result = 'ok' if record['rc'] == 0 else 'FAILED (rc %d)' % record['rc']
        lines.append(row % (record['part'], _clock(record['start']), _clock(record['wall']), _clock(record['cpu']),
                            result))
    if records:
        end = max(r['start'] + r['wall'] for r in records)
        cpu = sum(r['cpu'] for r in records)
        failed = [r['part'] for r in records if r['rc'] != 0]
        lines.append(row % ('make test', '0:00', _clock(end), _clock(cpu),
                            'FAILED: ' + ' '.join(failed) if failed else 'ok'))
    print('\n'.join(lines))
    return 1 if not records or any(r['rc'] != 0 for r in records) else 0


def main(argv):
    if len(argv) >= 5 and argv[0] == 'run' and argv[3] == '--':
        return run(argv[1], argv[2], argv[4:])
    if len(argv) == 2 and argv[0] == 'table':
        return table(argv[1])
    sys.stderr.write(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
