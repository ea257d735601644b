# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The failed-load message, from a real community.general.modprobe result.

community.general.modprobe runs the modprobe test double (tests/doubles/modprobe-invalid-argument),
which fails like a peer-memory module built against another RDMA core. This kernel has no
/proc/modules, so the module's read of it is given an empty list of loaded modules.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import shutil

import pytest

from ansible.errors import AnsibleFilterError
from ansible.module_utils.testing import patch_module_args

from ansible_collections.community.general.plugins.modules import modprobe
from ansible_collections.gpunet.rdma.plugins.filter.driver import rdma_modprobe_explain

DOUBLES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'doubles')


def _empty_module_lists(real_open):
    def fake_open(path, *args, **kwargs):
        if path == '/proc/modules' or str(path).endswith('/modules.builtin'):
            return io.StringIO('')
        return real_open(path, *args, **kwargs)
    return fake_open


def test_invalid_argument_from_community_modprobe(tmp_path, monkeypatch, capsys):
    shutil.copy(os.path.join(DOUBLES, 'modprobe-invalid-argument'), str(tmp_path / 'modprobe'))
    (tmp_path / 'modprobe').chmod(0o755)
    monkeypatch.setenv('PATH', '%s:%s' % (tmp_path, os.environ['PATH']))
    monkeypatch.setenv('GPUNET_TEST_DOUBLES_LOG', str(tmp_path / 'calls'))
    monkeypatch.setattr(modprobe, 'open', _empty_module_lists(builtins.open), raising=False)
    with patch_module_args({'name': 'nvidia_peermem', 'state': 'present'}):
        with pytest.raises(SystemExit) as exit_info:
            modprobe.main()
    result = json.loads(capsys.readouterr().out)
    assert exit_info.value.code == 1 and result['rc'] == 1
    assert (tmp_path / 'calls' / 'modprobe.calls').read_text() == 'modprobe nvidia_peermem\n'
    result['item'] = 'nvidia_peermem'  # as in the role's loop
    message = rdma_modprobe_explain(result)
    assert message.startswith("Loading nvidia_peermem failed: modprobe: ERROR: could not insert 'nvidia_peermem': "
                              "Invalid argument.")
    assert 'built against a different RDMA core' in message and 'useHostMofed' in message


def test_module_name_and_text():
    assert 'gdrcopy' in rdma_modprobe_explain('gdrdrv', 'modprobe: FATAL: Module gdrdrv not found in directory /x')


def test_needs_a_module():
    with pytest.raises(AnsibleFilterError, match='module name'):
        rdma_modprobe_explain({'msg': 'failed'})
