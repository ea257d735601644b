# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.gpunet.rdma.plugins.modules import ibdev2netdev_facts

PUBLIC = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'public')


def command_double(directory, name, output, exit_code=0, verbose_exit_code=None):
    """Write a test double of ibdev2netdev / rdma: prints ``output``, records argv and LC_ALL.

    As strict as the real tools about their arguments: ibdev2netdev takes nothing or ``-v`` (anything else prints
    its usage and exits 255, as the MLNX_OFED script does), rdma here answers ``-j link`` and ``link`` only.
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
        if name == 'ibdev2netdev':
            handle.write('case "$*" in ""|-v) ;; *) echo "ibdev2netdev <options>" ; exit 255 ;; esac\n')
        else:
            handle.write('case "$*" in "-j link"|link) ;; *) echo "Usage: rdma [ OPTIONS ] OBJECT" >&2; exit 1 ;; '
                         'esac\n')
        if verbose_exit_code is not None:
            handle.write('[ "$1" = "-v" ] && { echo "unknown option -v" >&2; exit %d; }\n' % verbose_exit_code)
        handle.write('/bin/cat %s\nexit %d\n' % (data, exit_code))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path, log


def read_calls(log):
    with open(log) as handle:
        return handle.read().splitlines()


def public(kind, name):
    with open(os.path.join(PUBLIC, kind, name)) as handle:
        return handle.read()


def test_sysfs_fixture_tree(tmp_path, hardware, run_module):
    root = hardware('a100', tmp_path / 'sys')
    code, result = run_module(ibdev2netdev_facts, {'sysfs_root': root})
    assert code == 0
    assert result['changed'] is False
    assert result['source'] == 'sysfs' and result['sysfs_filled'] is False
    facts = result['ansible_facts']
    assert [(p['device'], p['state'], p['netdev']) for p in facts['rdma_ports']] == [
        ('mlx5_0', 'DOWN', 'enp12s0np0'), ('mlx5_1', 'ACTIVE', 'ibp141s0'), ('mlx5_bond_0', 'ACTIVE', 'bond0')]
    assert [d['hca_type'] for d in facts['rdma_devices']] == ['MT4123', 'MT4123', 'MT4117']
    assert result['msg'] == '3 RDMA devices, 3 ports (2 ACTIVE) from sysfs'


def test_sr_iov_node_reports_its_virtual_functions(tmp_path, hardware, run_module):
    code, result = run_module(ibdev2netdev_facts, {'sysfs_root': hardware('roce_a100', tmp_path / 'sys')})
    assert code == 0
    assert result['msg'] == '10 RDMA devices (2 SR-IOV VF), 10 ports (10 ACTIVE) from sysfs'
    vfs = [(d['device'], d['physical_function_device']) for d in result['ansible_facts']['rdma_devices']
           if d['virtual_function']]
    assert vfs == [('mlx5_8', 'mlx5_0'), ('mlx5_9', 'mlx5_0')]


def test_check_mode_gives_the_same_facts(tmp_path, hardware, run_module):
    root = hardware('v100', tmp_path / 'sys')
    _code, normal = run_module(ibdev2netdev_facts, {'sysfs_root': root})
    _code, checked = run_module(ibdev2netdev_facts, {'sysfs_root': root}, check_mode=True)
    assert checked['ansible_facts'] == normal['ansible_facts']
    assert checked['changed'] is False


def test_sysfs_without_rdma_class_is_no_device_not_a_failure(tmp_path, hardware, run_module):
    """A sysfs without class/infiniband: the kernel has no RDMA device, whatever tool is installed."""
    root = hardware({}, tmp_path / 'sys')
    os.rmdir(os.path.join(root, 'class', 'infiniband'))
    for source in ('auto', 'sysfs'):
        code, result = run_module(ibdev2netdev_facts, {'source': source, 'sysfs_root': root})
        assert code == 0
        assert result['source'] == 'sysfs'
        assert result['ansible_facts'] == {'rdma_ports': [], 'rdma_devices': []}
        assert result['msg'].startswith('No RDMA device found: ')
        assert 'class/infiniband does not exist: the kernel has no RDMA device' in result['msg']


@pytest.mark.parametrize('layout, expected', [
    ('missing', 'does not exist'),
    ('empty', 'is not a sysfs mount'),
])
def test_mistyped_sysfs_root_is_named(tmp_path, run_module, layout, expected):
    root = tmp_path / 'sys'
    if layout == 'empty':
        root.mkdir()
    code, result = run_module(ibdev2netdev_facts, {'sysfs_root': str(root)})
    assert code == 1
    assert expected in result['msg'] and str(root) in result['msg']
    assert 'Set sysfs_root to the sysfs mount point' in result['msg']


def test_default_sysfs_missing_falls_back_to_the_commands(tmp_path, run_module, monkeypatch, recorded):
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    _path, log = command_double(bindir, 'ibdev2netdev', recorded('ibdev2netdev-verbose.txt'))
    monkeypatch.setenv('PATH', str(bindir))
    monkeypatch.setattr(ibdev2netdev_facts, '_EXTRA_BIN_DIRS', [])
    monkeypatch.setattr(ibdev2netdev_facts, 'DEFAULT_SYSFS_ROOT', str(tmp_path / 'nosys'))
    code, result = run_module(ibdev2netdev_facts, {'sysfs_root': str(tmp_path / 'nosys')})
    assert code == 0
    assert result['source'] == 'ibdev2netdev'
    assert [p['state'] for p in result['ansible_facts']['rdma_ports']] == ['ACTIVE', 'DOWN', 'ACTIVE']
    # argv as a list, locale forced so the output can be parsed
    assert read_calls(log) == ['-v LC_ALL=C']


def test_nothing_to_read_from(tmp_path, run_module, monkeypatch):
    monkeypatch.setenv('PATH', str(tmp_path))
    monkeypatch.setattr(ibdev2netdev_facts, '_EXTRA_BIN_DIRS', [str(tmp_path)])
    monkeypatch.setattr(ibdev2netdev_facts, 'DEFAULT_SYSFS_ROOT', str(tmp_path / 'nosys'))
    code, result = run_module(ibdev2netdev_facts, {'sysfs_root': str(tmp_path / 'nosys')})
    assert code == 0 and result['source'] == 'none'
    assert 'sysfs is not mounted at' in result['msg'] and 'neither ibdev2netdev nor rdma is installed' in result['msg']


def test_ibdev2netdev_without_verbose_support(tmp_path, run_module, recorded):
    path, log = command_double(tmp_path, 'ibdev2netdev', recorded('seed003-a100-ibdev2netdev.txt'),
                               verbose_exit_code=1)
    code, result = run_module(ibdev2netdev_facts, {'source': 'ibdev2netdev', 'ibdev2netdev_path': path})
    assert code == 0
    assert [p['netdev'] for p in result['ansible_facts']['rdma_ports']] == ['ibxxxx0', 'ibxxxxx0', 'bond0']
    assert read_calls(log) == ['-v LC_ALL=C', ' LC_ALL=C']
    assert 'unknown from this source: link_layer, physical_state, rate_gbps, state' in result['msg']


def test_rdma_source(tmp_path, run_module, recorded, hardware):
    root = hardware({}, tmp_path / 'sys')  # a sysfs without RDMA devices: nothing to complete from
    path, log = command_double(tmp_path, 'rdma', recorded('seed001-8nic-rdma-link.json'))
    code, result = run_module(ibdev2netdev_facts, {'source': 'rdma', 'rdma_path': path, 'sysfs_root': root})
    assert code == 0
    assert result['source'] == 'rdma'
    assert len(result['ansible_facts']['rdma_ports']) == 8
    assert result['msg'].startswith('8 RDMA devices, 8 ports (7 ACTIVE) from rdma')
    assert read_calls(log) == ['-j link LC_ALL=C']


def test_rdma_source_completed_from_sysfs(tmp_path, hardware, run_module):
    """rdma link prints neither the link layer of a RoCE port nor rates: sysfs at sysfs_root fills them."""
    root = hardware('roce_a100', tmp_path / 'sys')
    path, _log = command_double(tmp_path, 'rdma', public('rdma_link', 'daocloud-spiderpool-ofed-driver-roce.txt'))
    code, result = run_module(ibdev2netdev_facts, {'source': 'rdma', 'rdma_path': path, 'sysfs_root': root})
    assert code == 0 and result['sysfs_filled'] is True
    ports = result['ansible_facts']['rdma_ports']
    # The command's netdevs stay; sysfs adds link layer, rate and PCI address of the same ports.
    assert [(p['device'], p['netdev'], p['link_layer'], p['rate_gbps'], p['pci_address'], p['unknown'])
            for p in ports] == [
        ('mlx5_0', 'enp4s0f0np0', 'Ethernet', 100, '0000:0b:00.0', []),
        ('mlx5_1', 'enp4s0f1np1', 'Ethernet', 100, '0000:0c:00.0', [])]
    assert result['msg'] == '2 RDMA devices, 2 ports (2 ACTIVE) from rdma, completed from sysfs'


def test_rdma_source_without_sysfs_says_what_is_unknown(tmp_path, hardware, run_module):
    root = hardware({}, tmp_path / 'sys')
    os.rmdir(os.path.join(root, 'class', 'infiniband'))
    path, _log = command_double(tmp_path, 'rdma', public('rdma_link', 'daocloud-spiderpool-ofed-driver-roce.txt'))
    code, result = run_module(ibdev2netdev_facts, {'source': 'rdma', 'rdma_path': path, 'sysfs_root': root})
    assert code == 0 and result['sysfs_filled'] is False
    assert all(p['unknown'] == ['link_layer', 'rate_gbps'] for p in result['ansible_facts']['rdma_ports'])
    assert result['msg'].endswith('unknown from this source: link_layer, rate_gbps')


def test_malformed_output_fails_quoting_the_line(tmp_path, run_module):
    path, _log = command_double(tmp_path, 'ibdev2netdev', 'mlx5_0 port 1 ==> ib0 (Up)\nsomething odd\n')
    code, result = run_module(ibdev2netdev_facts, {'source': 'ibdev2netdev', 'ibdev2netdev_path': path})
    assert code == 1
    assert result['failed'] is True
    assert result['offending_line'] == 'something odd'
    assert "'something odd'" in result['msg']
    assert result['msg'].startswith('Cannot read RDMA hardware from ibdev2netdev')


def test_rdma_json_of_another_shape_fails_quoting_it(tmp_path, run_module):
    path, _log = command_double(tmp_path, 'rdma', '{"link": [{"ifname": "mlx5_0", "port": 1}]}\n')
    code, result = run_module(ibdev2netdev_facts, {'source': 'rdma', 'rdma_path': path})
    assert code == 1
    assert 'printed a JSON dict where a list of links belongs' in result['msg']
    assert '"ifname": "mlx5_0"' in result['msg']


def test_malformed_sysfs_fails_quoting_the_content(tmp_path, hardware, run_module):
    root = hardware('v100', tmp_path / 'sys')
    with open(os.path.join(root, 'class', 'infiniband', 'mlx5_0', 'ports', '1', 'rate'), 'w') as handle:
        handle.write('unknown\n')
    code, result = run_module(ibdev2netdev_facts, {'sysfs_root': root})
    assert code == 1
    assert result['offending_line'] == 'unknown'
    assert 'from sysfs' in result['msg']


def test_failing_command_fails_with_remedy(tmp_path, run_module):
    path, _log = command_double(tmp_path, 'rdma', 'Failed to open NETLINK_RDMA socket\n', exit_code=1)
    code, result = run_module(ibdev2netdev_facts, {'source': 'rdma', 'rdma_path': path})
    assert code == 1
    assert 'exited with 1: Failed to open NETLINK_RDMA socket.' in result['msg']
    assert 'The kernel has no RDMA netlink' in result['msg'] and 'source=sysfs' in result['msg']


@pytest.mark.parametrize('source, option', [('ibdev2netdev', 'ibdev2netdev_path'), ('rdma', 'rdma_path')])
def test_explicit_source_missing_command_fails(tmp_path, run_module, monkeypatch, source, option):
    monkeypatch.setenv('PATH', str(tmp_path))
    monkeypatch.setattr(ibdev2netdev_facts, '_EXTRA_BIN_DIRS', [])
    code, result = run_module(ibdev2netdev_facts, {'source': source})
    assert code == 1
    assert 'was not found' in result['msg'] and option in result['msg']


def test_path_that_is_not_executable_fails(tmp_path, run_module):
    not_executable = tmp_path / 'ibdev2netdev'
    not_executable.write_text('')
    code, result = run_module(ibdev2netdev_facts, {'source': 'ibdev2netdev', 'ibdev2netdev_path': str(not_executable)})
    assert code == 1
    assert 'is not executable' in result['msg'] and 'ibdev2netdev_path' in result['msg']


def test_path_that_is_a_directory_fails(tmp_path, run_module):
    code, result = run_module(ibdev2netdev_facts, {'source': 'rdma', 'rdma_path': str(tmp_path)})
    assert code == 1
    assert 'is a directory, not an executable file' in result['msg'] and 'rdma_path' in result['msg']


def test_bad_source_value_is_rejected(run_module):
    code, result = run_module(ibdev2netdev_facts, {'source': 'lspci'})
    assert code == 1
    assert 'source' in result['msg'] and 'lspci' in result['msg']
