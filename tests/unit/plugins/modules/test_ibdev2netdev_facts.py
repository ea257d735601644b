# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import json
import os
import stat

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpunet.rdma.plugins.modules import ibdev2netdev_facts


def run_module(args, capsys):
    """Run the module's main() and return (exit code, parsed JSON result)."""
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exit_info:
            ibdev2netdev_facts.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def command_double(directory, name, output, exit_code=0, verbose_exit_code=None):
    """Write a test double of ibdev2netdev / rdma: prints ``output``, records argv and LC_ALL.

    ``verbose_exit_code`` makes the ``-v`` form fail, as on builds without it.
    """
    log = os.path.join(str(directory), name + '.calls')
    data = os.path.join(str(directory), name + '.out')
    with open(data, 'w') as handle:
        handle.write(output)
    path = os.path.join(str(directory), name)
    with open(path, 'w') as handle:
        handle.write('#!/bin/sh\n'
                     'echo "$* LC_ALL=$LC_ALL" >> %s\n' % log)
        if verbose_exit_code is not None:
            handle.write('[ "$1" = "-v" ] && { echo "unknown option -v" >&2; exit %d; }\n' % verbose_exit_code)
        handle.write('/bin/cat %s\nexit %d\n' % (data, exit_code))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path, log


def read_calls(log):
    with open(log) as handle:
        return handle.read().splitlines()


def test_sysfs_fixture_tree(tmp_path, hardware, capsys):
    root = hardware('a100', tmp_path / 'sys')
    code, result = run_module({'sysfs_root': root}, capsys)
    assert code == 0
    assert result['changed'] is False
    assert result['source'] == 'sysfs'
    facts = result['ansible_facts']
    assert [(p['device'], p['state'], p['netdev']) for p in facts['rdma_ports']] == [
        ('mlx5_0', 'DOWN', 'enp12s0np0'), ('mlx5_1', 'ACTIVE', 'ibp141s0'), ('mlx5_bond_0', 'ACTIVE', 'bond0')]
    assert [d['hca_type'] for d in facts['rdma_devices']] == ['MT4123', 'MT4123', 'MT4117']
    assert result['msg'] == '3 RDMA devices, 3 ports (2 ACTIVE) from sysfs'


def test_check_mode_gives_the_same_facts(tmp_path, hardware, capsys):
    root = hardware('v100', tmp_path / 'sys')
    _code, normal = run_module({'sysfs_root': root}, capsys)
    _code, checked = run_module({'sysfs_root': root, '_ansible_check_mode': True}, capsys)
    assert checked['ansible_facts'] == normal['ansible_facts']
    assert checked['changed'] is False


def test_no_rdma_device_is_not_a_failure(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv('PATH', str(tmp_path))
    monkeypatch.setattr(ibdev2netdev_facts, '_EXTRA_BIN_DIRS', [str(tmp_path)])
    code, result = run_module({'sysfs_root': str(tmp_path)}, capsys)
    assert code == 0
    assert result['source'] == 'none'
    assert result['ansible_facts'] == {'rdma_ports': [], 'rdma_devices': []}
    assert result['msg'].startswith('No RDMA device found: ')
    assert 'class/infiniband does not exist' in result['msg']


def test_sysfs_source_without_rdma_class(tmp_path, capsys):
    code, result = run_module({'source': 'sysfs', 'sysfs_root': str(tmp_path)}, capsys)
    assert code == 0
    assert result['ansible_facts']['rdma_ports'] == []
    assert 'the kernel has no RDMA device' in result['msg']


def test_auto_falls_back_to_ibdev2netdev(tmp_path, capsys, monkeypatch, recorded):
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    _path, log = command_double(bindir, 'ibdev2netdev', recorded('ibdev2netdev-verbose.txt'))
    monkeypatch.setenv('PATH', str(bindir))
    monkeypatch.setattr(ibdev2netdev_facts, '_EXTRA_BIN_DIRS', [])
    code, result = run_module({'sysfs_root': str(tmp_path / 'nosys')}, capsys)
    assert code == 0
    assert result['source'] == 'ibdev2netdev'
    assert [p['state'] for p in result['ansible_facts']['rdma_ports']] == ['ACTIVE', 'DOWN', 'ACTIVE']
    # argv as a list, locale forced so the output can be parsed
    assert read_calls(log) == ['-v LC_ALL=C']


def test_ibdev2netdev_without_verbose_support(tmp_path, capsys, recorded):
    path, log = command_double(tmp_path, 'ibdev2netdev', recorded('seed003-a100-ibdev2netdev.txt'),
                               verbose_exit_code=1)
    code, result = run_module({'source': 'ibdev2netdev', 'ibdev2netdev_path': path}, capsys)
    assert code == 0
    assert [p['netdev'] for p in result['ansible_facts']['rdma_ports']] == ['ibxxxx0', 'ibxxxxx0', 'bond0']
    assert read_calls(log) == ['-v LC_ALL=C', ' LC_ALL=C']


def test_rdma_source(tmp_path, capsys, recorded):
    path, log = command_double(tmp_path, 'rdma', recorded('seed001-8nic-rdma-link.json'))
    code, result = run_module({'source': 'rdma', 'rdma_path': path}, capsys)
    assert code == 0
    assert result['source'] == 'rdma'
    assert len(result['ansible_facts']['rdma_ports']) == 8
    assert result['msg'] == '8 RDMA devices, 8 ports (7 ACTIVE) from rdma'
    assert read_calls(log) == ['-j link LC_ALL=C']


def test_malformed_output_fails_quoting_the_line(tmp_path, capsys):
    path, _log = command_double(tmp_path, 'ibdev2netdev', 'mlx5_0 port 1 ==> ib0 (Up)\nsomething odd\n')
    code, result = run_module({'source': 'ibdev2netdev', 'ibdev2netdev_path': path}, capsys)
    assert code == 1
    assert result['failed'] is True
    assert result['offending_line'] == 'something odd'
    assert "'something odd'" in result['msg']
    assert result['msg'].startswith('Cannot read RDMA hardware from ibdev2netdev')


def test_malformed_sysfs_fails_quoting_the_content(tmp_path, hardware, capsys):
    root = hardware('v100', tmp_path / 'sys')
    with open(os.path.join(root, 'class', 'infiniband', 'mlx5_0', 'ports', '1', 'rate'), 'w') as handle:
        handle.write('unknown\n')
    code, result = run_module({'sysfs_root': root}, capsys)
    assert code == 1
    assert result['offending_line'] == 'unknown'
    assert 'from sysfs' in result['msg']


def test_failing_command_fails_with_remedy(tmp_path, capsys):
    path, _log = command_double(tmp_path, 'rdma', 'error: Function not implemented\n', exit_code=1)
    code, result = run_module({'source': 'rdma', 'rdma_path': path}, capsys)
    assert code == 1
    assert 'exited with 1' in result['msg']
    assert 'source=sysfs' in result['msg']


@pytest.mark.parametrize('source, option', [('ibdev2netdev', 'ibdev2netdev_path'), ('rdma', 'rdma_path')])
def test_explicit_source_missing_command_fails(tmp_path, capsys, monkeypatch, source, option):
    monkeypatch.setenv('PATH', str(tmp_path))
    monkeypatch.setattr(ibdev2netdev_facts, '_EXTRA_BIN_DIRS', [])
    code, result = run_module({'source': source}, capsys)
    assert code == 1
    assert 'was not found' in result['msg'] and option in result['msg']


def test_path_that_is_not_executable_fails(tmp_path, capsys):
    not_executable = tmp_path / 'ibdev2netdev'
    not_executable.write_text('')
    code, result = run_module({'source': 'ibdev2netdev', 'ibdev2netdev_path': str(not_executable)}, capsys)
    assert code == 1
    assert 'is not an executable file' in result['msg']


def test_bad_source_value_is_rejected(capsys):
    code, result = run_module({'source': 'lspci'}, capsys)
    assert code == 1
    assert 'source' in result['msg'] and 'lspci' in result['msg']
