# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The nodes after converge, idempotence and check: every count covers the three runs."""

from __future__ import annotations

import json
import os

import testinfra

EPHEMERAL = os.environ['MOLECULE_EPHEMERAL_DIRECTORY']
CONF = '/etc/modprobe.d/gpunet-rdma-netns.conf'


def node(name):
    return testinfra.get_host('podman://%s' % name)


def calls(host, tool):
    log = host.file('/var/log/gpunet-test-doubles/%s.calls' % tool)
    return log.content_string.splitlines() if log.exists else []


def runs():
    with open(os.path.join(EPHEMERAL, 'netns-netns-live.jsonl')) as handle:
        return [json.loads(line) for line in handle]


def test_exclusive_mode_is_persisted_for_the_next_ib_core_load():
    conf = node('netns-live').file(CONF)
    assert (conf.user, conf.group, conf.mode) == ('root', 'root', 0o644)
    assert [line for line in conf.content_string.splitlines() if not line.startswith('#')] == [
        'options ib_core netns_mode=0']


def test_the_initramfs_was_rebuilt_once_for_the_running_kernel():
    host = node('netns-live')
    assert calls(host, 'update-initramfs') == ['update-initramfs -u -k %s' % host.check_output('uname -r')]


def test_the_running_kernel_was_switched_once_in_the_batch():
    host = node('netns-live')
    assert [line for line in calls(host, 'rdma') if ' set ' in line] == ['rdma system set netns exclusive']
    assert host.check_output('/opt/gpunet-test/bin/rdma system') == 'netns exclusive copy-on-fork on'


def test_only_the_first_run_had_the_switch_pending():
    recorded = runs()
    assert [(r['check_mode'], r['in_batch']) for r in recorded] == [(False, True), (False, False), (True, False)]
    for run in recorded:
        netns = run['netns']
        assert netns['pending'] == [] and netns['detail']['live'] == 'exclusive', run
        assert (netns['detail']['wanted'], netns['detail']['persisted']) == ('exclusive', 'exclusive')
        assert netns['detail']['reboot_pending'] is False


def test_a_later_modprobe_file_is_named_and_nothing_switched():
    with open(os.path.join(EPHEMERAL, 'refusal-netns-override.txt')) as handle:
        message = ' '.join(handle.read().split())
    assert message.startswith('/etc/modprobe.d/zz-rdma.conf sets ib_core netns_mode to shared after %s' % CONF)
    assert 'modprobe reads /etc/modprobe.d in name order, the last value wins' in message
    host = node('netns-override')
    assert [line for line in calls(host, 'rdma') if ' set ' in line] == []
    assert host.check_output('/opt/gpunet-test/bin/rdma system') == 'netns shared copy-on-fork on'
    # the role's own file is written before the check; the other file is left as it was
    assert 'options ib_core netns_mode=0' in host.file(CONF).content_string
    assert 'options ib_core netns_mode=1' in host.file('/etc/modprobe.d/zz-rdma.conf').content_string
