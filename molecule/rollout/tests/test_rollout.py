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
LAB = '/opt/gpunet-lab'


def node(name):
    return testinfra.get_host('podman://%s' % name)


def runs(name):
    with open(os.path.join(EPHEMERAL, 'ledger-%s.jsonl' % name)) as handle:
        return [json.loads(line) for line in handle]


def lab_calls(host, tool):
    log = host.file('%s/firmware/calls.log' % LAB)
    lines = log.content_string.splitlines() if log.exists else []
    return [json.loads(line)[1:] for line in lines if json.loads(line)[0] == tool]


def test_three_runs_recorded_the_last_in_check_mode():
    for name in ('rollout-reboot', 'rollout-steps'):
        assert [run['check_mode'] for run in runs(name)] == [False, False, True], name


def test_one_reboot_in_three_runs():
    host = node('rollout-reboot')
    assert len(lab_calls(host, 'reboot')) == 1
    assert host.file('%s/boot_id' % LAB).content_string.strip() != 'lab-boot-0'


def test_the_reboot_ran_between_the_pre_and_post_tasks():
    host = node('rollout-reboot')
    boot_id = host.file('%s/boot_id' % LAB).content_string.strip()
    assert host.file('%s/drained' % LAB).content_string.split() == ['lab-boot-0']
    assert host.file('%s/uncordoned' % LAB).content_string.split() == [boot_id]


def test_the_reboot_covered_the_driver_restart():
    host = node('rollout-reboot')
    assert not host.file('/var/log/gpunet-test-doubles/openibd.calls').exists
    kernel = runs('rollout-reboot')[0]['ledger']['kernel']
    assert kernel['pending'] == [] and kernel['detail']['activated_by'] == 'reboot'
    assert kernel['status'] == 'changed'


def test_only_the_first_run_took_the_node_into_a_batch():
    for name in ('rollout-reboot', 'rollout-steps'):
        assert [run['in_batch'] for run in runs(name)] == [True, False, False], name
    for run in runs('rollout-reboot')[1:]:
        assert run['ledger']['kernel']['pending'] == []


def test_the_netns_switch_ran_live_once_without_a_reboot():
    host = node('rollout-steps')
    calls = host.file('/var/log/gpunet-test-doubles/rdma.calls').content_string.splitlines()
    assert [line for line in calls if ' set ' in line] == ['rdma system set netns exclusive']
    assert host.file('/opt/gpunet-test/rdma-netns').content_string.strip() == 'exclusive'
    assert lab_calls(host, 'reboot') == []
    assert host.file('%s/boot_id' % LAB).content_string.strip() == 'lab-boot-0'
    assert host.file('%s/drained' % LAB).content_string.split() == ['lab-boot-0']
    assert host.file('%s/uncordoned' % LAB).content_string.split() == ['lab-boot-0']


def test_the_netns_stage_records_the_switch():
    # the switch re-records the stage with the mode it reads afterwards
    first = runs('rollout-steps')[0]['ledger']['netns']
    assert first['pending'] == [] and first['status'] == 'changed'
    assert first['detail']['live'] == 'exclusive' and first['detail']['reboot_pending'] is False
    for run in runs('rollout-steps')[1:]:
        assert run['ledger']['netns']['pending'] == [] and run['ledger']['netns']['detail']['live'] == 'exclusive'
