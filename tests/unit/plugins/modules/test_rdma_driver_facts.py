# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""rdma_driver_facts against a fixture tree and command doubles that record their argv and LC_ALL."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpunet.rdma.plugins.modules import rdma_driver_facts

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'driver')


def double(path, output, rc=0):
    """A command double printing ``output``; it appends its argv and LC_ALL to PATH.calls."""
    path.write_text('#!/bin/sh\necho "$LC_ALL $*" >> "%s.calls"\ncat <<\'OUT\'\n%sOUT\nexit %d\n' % (path, output, rc))
    path.chmod(0o755)
    return str(path)


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
    (tmp_path / 'empty' / 'module').mkdir(parents=True)  # a sysfs without modules or peers
    return tmp_path


def test_facts_of_a_mofed_host(host, run_module):
    _code, result = run_module(rdma_driver_facts, dict(
        kernel='5.15.0-91-generic', modules=['nvidia_peermem', 'gdrdrv'], modules_root=str(host / 'lib' / 'modules'),
        sysfs_root=str(host / 'sys'), modprobe_dir=str(host / 'modprobe.d'),
        ofed_info_path=double(host / 'ofed_info', 'MLNX_OFED_LINUX-24.01-0.3.3.1:\n'),
        rdma_path=double(host / 'rdma', 'netns exclusive copy-on-fork on\n')), check_mode=True, code=0)
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


def test_facts_without_rdma_kernel_support(host, run_module, monkeypatch):
    """A container on a kernel without RDMA: no modules.dep, rdma system fails; nothing is guessed."""
    warnings = []
    # Where the warning lands depends on what else the process imported; catch it at the source.
    monkeypatch.setattr(rdma_driver_facts.RdmaModule, 'warn', lambda self, text: warnings.append(text))
    _code, result = run_module(rdma_driver_facts, dict(
        kernel='6.1.0-18-amd64', modules_root=str(host / 'none'), sysfs_root=str(host / 'empty'),
        modprobe_dir=str(host / 'empty'),
        ofed_info_path=double(host / 'ofed_info', 'bash: ofed_info: not found\n', rc=127),
        rdma_path=double(host / 'rdma', 'Failed to open NETLINK_RDMA socket\n', rc=1)), check_mode=True, code=0)
    facts = result['ansible_facts']['rdma_driver']
    assert facts['modules_dep_found'] is False and facts['ofed']['installed'] is False
    assert facts['netns']['live'] is None and 'NETLINK_RDMA' in facts['netns']['live_error']
    assert facts['netns']['persisted'] is None
    assert all(not entry['installed'] and not entry['loaded'] for entry in facts['modules'].values())
    assert len(warnings) == 1 and 'ofed_info -s` failed (rc=127)' in warnings[0]
    assert 'ofed_info` failed (rc=127)' in warnings[0]  # the full form was tried too
    assert 'OFED reported as not installed' in warnings[0]


def nvidia_node(root, dep_line, loaded_version, operator_root_files):
    """A node tree: modules.dep with ``dep_line``, /sys/module/nvidia when loaded, the operator's driver root."""
    kernel = root / 'lib' / 'modules' / '6.8.0-45-generic'
    kernel.mkdir(parents=True)
    (kernel / 'modules.dep').write_text('kernel/drivers/infiniband/core/ib_core.ko.zst:\n' + dep_line)
    (root / 'sys' / 'module').mkdir(parents=True)
    if loaded_version:
        (root / 'sys' / 'module' / 'nvidia').mkdir()
        (root / 'sys' / 'module' / 'nvidia' / 'version').write_text(loaded_version + '\n')
        (root / 'sys' / 'module' / 'nvidia' / 'initstate').write_text('live\n')
    (root / 'run-nvidia-driver').mkdir()
    for name in operator_root_files:
        (root / 'run-nvidia-driver' / name).mkdir()
    return dict(kernel='6.8.0-45-generic', modules_root=str(root / 'lib' / 'modules'), sysfs_root=str(root / 'sys'),
                modprobe_dir=str(root / 'none'), nvidia_driver_root=str(root / 'run-nvidia-driver'),
                ofed_info_path=double(root / 'ofed_info', '', rc=127), rdma_path=double(root / 'rdma', 'netns shared\n'))


@pytest.mark.parametrize('dep_line, loaded_version, operator_root_files, expected', [
    # the driver package's DKMS build, loaded
    ('updates/dkms/nvidia.ko.zst: kernel/drivers/video/video.ko.zst\n', '550.54.15', [],
     dict(source='host', loaded=True, version='550.54.15', host_installed=True, host_path='updates/dkms/nvidia.ko.zst',
          gpu_operator_root=None)),
    # installed on the host, not loaded yet (before the first boot with it)
    ('updates/dkms/nvidia.ko: \n', None, [],
     dict(source='host', loaded=False, version=None, host_installed=True, host_path='updates/dkms/nvidia.ko',
          gpu_operator_root=None)),
    # the GPU Operator's driver container: loaded from the container, nothing in the host's modules.dep
    ('', '550.90.07', ['bin', 'usr', 'lib'],
     dict(source='gpu_operator', loaded=True, version='550.90.07', host_installed=False, host_path=None,
          gpu_operator_root='ROOT')),
    # an empty mount point left behind is not a driver container
    ('', None, [], dict(source=None, loaded=False, version=None, host_installed=False, host_path=None,
                        gpu_operator_root=None)),
])
def test_the_nvidia_driver_source(tmp_path, run_module, dep_line, loaded_version, operator_root_files, expected):
    args = nvidia_node(tmp_path, dep_line, loaded_version, operator_root_files)
    facts = run_module(rdma_driver_facts, args, check_mode=True, code=0)[1]['ansible_facts']['rdma_driver']
    if expected['gpu_operator_root']:
        expected = dict(expected, gpu_operator_root=args['nvidia_driver_root'])
    assert facts['nvidia'] == expected
    assert 'nvidia' not in facts['modules']  # reported under nvidia only, unless asked for


def test_nvidia_is_also_a_module_entry_when_asked_for(tmp_path, run_module):
    args = nvidia_node(tmp_path, 'updates/dkms/nvidia.ko: \n', '550.54.15', [])
    facts = run_module(rdma_driver_facts, dict(args, modules=['nvidia']), check_mode=True,
                       code=0)[1]['ansible_facts']['rdma_driver']
    assert facts['modules']['nvidia']['installed'] is True and facts['modules']['nvidia']['loaded'] is True
    assert facts['nvidia']['source'] == 'host'


@pytest.mark.parametrize('short_output, short_rc', [('', 0), ('Usage: ofed_info [-s|-n|-l|-p]\n', 2)])
def test_release_from_ofed_info_without_s(host, run_module, monkeypatch, short_output, short_rc):
    """An ofed_info whose -s prints nothing or fails: the release comes from the first line of the full output."""
    warnings = []
    monkeypatch.setattr(rdma_driver_facts.RdmaModule, 'warn', lambda self, text: warnings.append(text))
    script = host / 'ofed_info'
    script.write_text('#!/bin/sh\necho "$LC_ALL $*" >> "%s.calls"\n'
                      'if [ "$1" = "-s" ]; then printf "%s"; exit %d; fi\n'
                      'printf "MLNX_OFED_LINUX-24.01-0.3.3.1 (OFED-24.01-0.3.3):\\n\\nclusterkit:\\n"\n'
                      % (script, short_output.replace('\n', '\\n'), short_rc))
    script.chmod(0o755)
    _code, result = run_module(rdma_driver_facts, dict(
        kernel='5.15.0-91-generic', modules_root=str(host / 'lib' / 'modules'), sysfs_root=str(host / 'sys'),
        modprobe_dir=str(host / 'modprobe.d'), ofed_info_path=str(script),
        rdma_path=double(host / 'rdma', 'netns shared\n')), check_mode=True, code=0)
    ofed = result['ansible_facts']['rdma_driver']['ofed']
    assert (ofed['installed'], ofed['flavor'], ofed['version']) == (True, 'MLNX_OFED_LINUX', '24.01-0.3.3.1')
    assert (host / 'ofed_info.calls').read_text() == 'C -s\nC \n'
    assert len(warnings) == 1 and 'the release was read from' in warnings[0]


def test_ofed_info_of_another_shape_fails_quoting_it(host, run_module):
    _code, result = run_module(rdma_driver_facts, dict(
        kernel='5.15.0-91-generic', modules_root=str(host / 'lib' / 'modules'), sysfs_root=str(host / 'sys'),
        modprobe_dir=str(host / 'modprobe.d'), ofed_info_path=double(host / 'ofed_info', 'rdma-core 44.0\n'),
        rdma_path=double(host / 'rdma', 'netns shared\n')), check_mode=True, code=1)
    assert result['msg'].startswith('Cannot read the installed OFED release:')
    assert "'rdma-core 44.0'" in result['msg'] and 'ofed_info_path' in result['msg']


@pytest.mark.parametrize('args, expected', [
    ({'sysfs_root': 'MISSING'}, 'sysfs_root: %s does not exist. Set sysfs_root to the sysfs mount point'),
    ({'sysfs_root': 'MODPROBE'}, 'is not a sysfs mount'),
    ({'kernel': '../../etc'}, "kernel '../../etc' is not a kernel release"),
    ({'modules': ['nvidia peermem']}, "modules: 'nvidia peermem' is not a kernel module name"),
    ({'modules_root': 'FILE'}, 'is not a directory; point it at the directory that holds one tree per kernel'),
    ({'modprobe_dir': 'FILE'}, 'modprobe_dir %s is not a directory'),
    ({'rdma_path': 'DIR'}, 'rdma_path: %s is a directory, not an executable file'),
])
def test_wrong_input_is_named(host, run_module, args, expected):
    (host / 'file').write_text('')
    names = {'MISSING': str(host / 'missing'), 'MODPROBE': str(host / 'modprobe.d'), 'FILE': str(host / 'file'),
             'DIR': str(host)}
    base = dict(kernel='5.15.0-91-generic', modules_root=str(host / 'lib' / 'modules'), sysfs_root=str(host / 'sys'),
                modprobe_dir=str(host / 'modprobe.d'), ofed_info_path=double(host / 'ofed_info', ''),
                rdma_path=double(host / 'rdma', 'netns shared\n'))
    for key, value in args.items():
        base[key] = [names.get(v, v) for v in value] if isinstance(value, list) else names.get(value, value)
    _code, result = run_module(rdma_driver_facts, base, check_mode=True, code=1)
    path = [names[v] for v in args.values() if isinstance(v, str) and v in names]
    assert (expected % path[0] if '%s' in expected else expected) in result['msg']
