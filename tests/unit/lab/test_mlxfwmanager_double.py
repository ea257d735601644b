# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab's mlxfwmanager double prints the layout real mlxfwmanager/mlxup runs printed (the recordings in
tests/unit/fixtures/public/firmware) and refuses what the real tool refuses."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils.firmware._fw_query import parse_mlxfwmanager

HERE = os.path.dirname(__file__)
FIXTURES = os.path.join(HERE, '..', 'fixtures', 'public', 'firmware')


@pytest.fixture
def lab(lab_tree):
    return lab_tree('a100')


def double(lab_root, *args, stdin=''):
    return subprocess.run([str(lab_root / 'bin' / 'mlxfwmanager')] + list(args), capture_output=True, text=True,
                          input=stdin, check=False)


def recorded(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def shape(text):
    """Each line with its words masked: the columns, labels and order of a layout, not its values."""
    lines = []
    for line in text.splitlines():
        label = re.match(r'^(\s*(?:[A-Za-z][A-Za-z0-9 ]*:)?\s*)', line).group(1)
        lines.append(label if label.strip() else re.sub(r'\S+', 'x', line.rstrip()))
    return lines


def test_query_prints_the_recorded_layout(lab):
    done = double(lab, '-d', '0000:0c:00.0', '--query')
    assert done.returncode == 0 and done.stderr == ''
    real = recorded('mlxfwmanager-burned-only-cx6dx.txt')
    # Same header, labels at the same columns (an InfiniBand card prints its Base GUID only, printDeviceInfoQuery),
    # version rows with the same column widths (14-character values).
    ours = [line for line in shape(done.stdout) if line.strip()]
    theirs = [line for line in shape(real) if line.strip()]
    assert ours[:8] == theirs[:8]
    assert [line for line in ours if 'Versions' in line] == [line for line in theirs if 'Versions' in line]
    versions = [line for line in done.stdout.splitlines() if line.startswith('     FW ')]
    assert versions == ['     FW             20.31.1014     N/A           ']
    assert '  Status:           No matching image found' in done.stdout.splitlines()
    device = parse_mlxfwmanager(done.stdout)['devices'][0]
    assert (device['psid'], device['part_number'], device['fw_version']) == ('MT_0000000223', 'MCX653105A-HDA_Ax',
                                                                             '20.31.1014')


def test_a_burned_image_shows_the_running_row_until_activation(lab):
    image = lab / 'fw.bin'
    image.write_text(json.dumps({'gpunet_lab_firmware_image': 1, 'psid': 'MT_0000000223', 'version': '20.35.1012'}))
    burn = double(lab, '-d', '0000:0c:00.0', '-i', str(image), '-u', '-f', '-y')
    assert burn.returncode == 0
    # the recorded update lines (mlxup on two ConnectX-7 cards)
    for line in ('Found 1 device(s) requiring firmware update...', 'Device #1: Updating FW ...     ',
                 'Writing Boot image component -   OK          ', 'Restart needed for updates to take effect.'):
        assert line in burn.stdout.splitlines()
    assert 'Perform FW update?' not in burn.stdout  # -y: mlxfwmanager asks nothing
    query = double(lab, '-d', '0000:0c:00.0', '--query').stdout
    rows = [line for line in query.splitlines() if line.startswith('     FW')]
    assert rows == ['     FW             20.35.1012     N/A           ',
                    '     FW (Running)   20.31.1014     N/A           ']
    # the same rows, value for value in width, as NVIDIA's recording of a burned card
    assert [re.sub(r'\S+', 'x', r).rstrip() for r in rows] == [
        re.sub(r'\S+', 'x', r).rstrip() for r in recorded('mlxfwmanager-fw-running-cx6dx.txt').splitlines()
        if r.startswith('     FW')]
    subprocess.run([str(lab / 'bin' / 'lab-reboot')], check=True)
    assert 'FW (Running)' not in double(lab, '-d', '0000:0c:00.0', '--query').stdout


@pytest.mark.parametrize('content, rc, message', [
    ('not an image\n', 17, '-E- Error parsing file: '),
    (json.dumps({'psid': 'MT_0000000223', 'version': '20.35.1012'}), 17, '-E- Error parsing file: '),
])
def test_a_file_that_is_no_image_is_refused(lab, content, rc, message):
    image = lab / 'fw.bin'
    image.write_text(content)
    done = double(lab, '-d', '0000:0c:00.0', '-i', str(image), '--query')
    assert done.returncode == rc and message in done.stdout


def test_an_image_for_another_psid_is_never_burned(lab):
    image = lab / 'fw.bin'
    image.write_text(json.dumps({'gpunet_lab_firmware_image': 1, 'psid': 'MT_0000000223', 'version': '14.35.1012'}))
    before = (lab / 'firmware' / '0000:3b:00.0.json').read_text()
    done = double(lab, '-d', '0000:3b:00.0', '-i', str(image), '-u', '-y')
    assert done.returncode == 9
    assert '-E- Could not find matching firmware images for 1 device(s).' in done.stderr
    assert (lab / 'firmware' / '0000:3b:00.0.json').read_text() == before


def test_an_older_image_needs_force(lab):
    image = lab / 'fw.bin'
    image.write_text(json.dumps({'gpunet_lab_firmware_image': 1, 'psid': 'MT_0000000223', 'version': '20.28.1002'}))
    plain = double(lab, '-d', '0000:0c:00.0', '-i', str(image), '-u', '-y')
    assert plain.returncode == 0 and 'Status:           Up to date' in plain.stdout and 'Updating' not in plain.stdout
    forced = double(lab, '-d', '0000:0c:00.0', '-i', str(image), '-u', '-f', '-y')
    assert 'Status:           Forced update required' in forced.stdout and 'Updating FW' in forced.stdout


def test_without_yes_it_asks_and_a_no_burns_nothing(lab):
    image = lab / 'fw.bin'
    image.write_text(json.dumps({'gpunet_lab_firmware_image': 1, 'psid': 'MT_0000000223', 'version': '20.35.1012'}))
    done = double(lab, '-d', '0000:0c:00.0', '-i', str(image), '-u', stdin='n\n')
    assert 'Perform FW update? [y/N]: No updates performed' in done.stdout
    assert 'FW (Running)' not in double(lab, '-d', '0000:0c:00.0', '--query').stdout


def test_unknown_flags_and_devices_are_refused(lab):
    assert double(lab, '--burn').returncode == 3
    missing = double(lab, '-d', '0000:af:00.0', '--query')
    assert missing.returncode == 1 and '-E- Failed to query 0000:af:00.0 device' in missing.stderr
