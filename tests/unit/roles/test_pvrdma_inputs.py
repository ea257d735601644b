# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The pvrdma role checks its inputs before the first task that can change the guest: a wrong value stops the run with
nothing installed, persisted or loaded (the role used to install packages first)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))


def run_role(tmp_path, role_vars):
    play = tmp_path / 'play.yml'
    play.write_text(json.dumps([{'hosts': 'localhost', 'gather_facts': False, 'connection': 'local',
                                 'roles': [{'role': 'gpunet.rdma.pvrdma'}]}]))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'),
               ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    result = subprocess.run(['ansible-playbook', '-i', 'localhost,', str(play), '-e', json.dumps(role_vars)],
                            capture_output=True, text=True, env=env, check=False)
    return result.returncode, ' '.join((result.stdout + result.stderr).split())


def test_wrong_inputs_stop_the_role_before_any_change(tmp_path):
    load_file = tmp_path / 'modules-load.conf'
    code, output = run_role(tmp_path, {'pvrdma_min_devices': -1, 'pvrdma_modules': ['vmw pvrdma'],
                                       'pvrdma_modules_load_path': str(load_file),
                                       'pvrdma_sysfs_root': str(tmp_path / 'sys')})
    assert code != 0
    assert "TASK [gpunet.rdma.pvrdma : Check the role's inputs before anything changes]" in output
    assert 'pvrdma_min_devices must be a whole number of devices (0 or more), got "-1"' in output
    assert 'Nothing was changed.' in output
    # the first task of the role that reads or changes anything never ran
    assert 'Read the distribution and the driver state' not in output
    assert 'Install the RDMA userspace' not in output
    assert not load_file.exists()
