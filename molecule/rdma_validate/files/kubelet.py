# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stand-in for the kubelets inside the kube-apiserver double (its on_change hook).

A validation client pod that requests an RDMA resource with IPC_LOCK runs to completion: its log is what such a pod
printed in the InfiniBand field report (ulimit -l unlimited, then its ib_write_bw run with 1 MiB messages).
A client pod without them fails, as ib_write_bw cannot register its memory there.
"""

from __future__ import annotations

import os

RECORDED = os.path.join(os.environ['MOLECULE_PROJECT_DIRECTORY'], 'tests', 'unit', 'fixtures', 'recorded')


def on_change(api, group_version, plural, obj):
    metadata = obj['metadata']
    if plural != 'pods' or not metadata['name'].endswith('-client') or obj['status']['phase'] != 'Pending':
        return
    container = obj['spec']['containers'][0]
    limits = (container.get('resources') or {}).get('limits') or {}
    locked = 'IPC_LOCK' in ((container.get('securityContext') or {}).get('capabilities') or {}).get('add', [])
    if any(name.startswith('rdma/') for name in limits) and locked:
        with open(os.path.join(RECORDED, 'seed003-pod-ib-write-bw-1m.txt')) as handle:
            log, phase = 'ulimit -l: unlimited\n' + handle.read(), 'Succeeded'
    else:
        with open(os.path.join(RECORDED, 'seed003-mr-failure.txt')) as handle:
            log, phase = 'ulimit -l: 64\n' + handle.read(), 'Failed'
    api.set_log(metadata['namespace'], metadata['name'], log)
    obj['status'] = {'phase': phase}
    api.add(group_version, plural, obj)
