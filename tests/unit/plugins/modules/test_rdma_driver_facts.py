# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""rdma_driver_facts against a fixture tree and command doubles that record their argv and LC_ALL."""

from __future__ import annotations

import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpunet.rdma.plugins.modules import rdma_driver_facts

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'driver')


def double(path, output, rc=0):
    """A command double printing ``output``; it appends its argv and LC_ALL to PATH.calls."""
    path.write_text('#!/bin/sh\necho "$LC_ALL $*" >> "%s.calls"\ncat <<\'OUT\'\n%sOUT\nexit %d\n' % (path, output, rc))
    path.chmod(0o755)
    return str(path)


def run(args, capsys):
    with patch_module_args(dict(args, _ansible_check_mode=True)):
        with pytest.raises(SystemExit) as exit_info:
            rdma_driver_facts.main()
    result = json.loads(capsys.readouterr().out)
    assert exit_info.value.code == 0, result
    return result


@pytest.fixture
def host(tmp_path):
    kernel = tmp_path / 'lib' / 'modules' / '5.15.0-91-generic'
    kernel.mkdir(parents=True)
    with open(os.path.join(FIXTURES, 'modules.dep-ubuntu-mofed')) as handle:
        (kernel / 'modules.dep').write_text(handle.read())
    module = tmp_path / 'sys' / 'module' / 'mlx5_core'
    module.mkdir(parents=True)
    (module / 'version').write_text('24.01-0.3.3\n')
    (module / 'initstate').write_text('live\n')
    peers = tmp_path / 'sys' / 'kernel' / 'mm' / 'memory_peers' / 'nv_mem'
    peers.mkdir(parents=True)
    (peers / 'version').write_text('1.3\n')
    modprobe = tmp_path / 'modprobe.d'
    modprobe.mkdir()
    (modprobe / 'ib_core.conf').write_text('options ib_core netns_mode=0\n')
    return tmp_path


def test_facts_of_a_mofed_host(host, capsys):
    result = run(dict(kernel='5.15.0-91-generic', modules=['nvidia_peermem', 'gdrdrv'],
                      modules_root=str(host / 'lib' / 'modules'), sysfs_root=str(host / 'sys'),
                      modprobe_dir=str(host / 'modprobe.d'),
                      ofed_info_path=double(host / 'ofed_info', 'MLNX_OFED_LINUX-24.01-0.3.3.1:\n'),
                      rdma_path=double(host / 'rdma', 'netns exclusive copy-on-fork on\n')), capsys)
    facts = result['ansible_facts']['rdma_driver']
    assert result['changed'] is False
    assert facts['ofed'] == {'installed': True, 'flavor': 'MLNX_OFED_LINUX', 'version': '24.01-0.3.3.1',
                             'kernels': ['5.15.0-91-generic'], 'kernel_mismatch': False,
                             'loaded_version': '24.01-0.3.3', 'restart_pending': False,
                             'remedy': None}
    assert facts['modules']['mlx5_core'] == {'installed': True, 'path': 'updates/dkms/mlx5_core.ko',
                                             'origin': 'ofed', 'loaded': True, 'builtin': False,
                                             'version': '24.01-0.3.3'}
    assert facts['modules']['nvidia_peermem']['installed'] is True
    assert facts['modules']['gdrdrv'] == {'installed': False, 'path': None, 'origin': None, 'loaded': False,
                                          'builtin': False, 'version': None}
    assert facts['netns']['live'] == 'exclusive' and facts['netns']['persisted'] == 'exclusive'
    assert facts['netns']['persisted_file'].endswith('ib_core.conf')
    assert facts['memory_peers'] == {'nv_mem': '1.3'}
    assert (host / 'ofed_info.calls').read_text() == 'C -s\n'
    assert (host / 'rdma.calls').read_text() == 'C system\n'


def test_facts_without_rdma_kernel_support(host, capsys, monkeypatch):
    """A container on a kernel without RDMA: no modules.dep, rdma system fails; nothing is guessed."""
    warnings = []
    # Where the warning lands depends on what else the process imported; catch it at the source.
    monkeypatch.setattr(rdma_driver_facts.AnsibleModule, 'warn', lambda self, text: warnings.append(text))
    result = run(dict(kernel='6.1.0-18-amd64', modules_root=str(host / 'none'), sysfs_root=str(host / 'empty'),
                      modprobe_dir=str(host / 'empty'),
                      ofed_info_path=double(host / 'ofed_info', 'bash: ofed_info: not found\n', rc=127),
                      rdma_path=double(host / 'rdma', 'Failed to open NETLINK_RDMA socket\n', rc=1)), capsys)
    facts = result['ansible_facts']['rdma_driver']
    assert facts['modules_dep_found'] is False and facts['ofed']['installed'] is False
    assert facts['netns']['live'] is None and 'NETLINK_RDMA' in facts['netns']['live_error']
    assert facts['netns']['persisted'] is None
    assert all(not entry['installed'] and not entry['loaded'] for entry in facts['modules'].values())
    assert len(warnings) == 1 and 'ofed_info -s failed (rc=127)' in warnings[0]
    assert 'OFED reported as not installed' in warnings[0]
