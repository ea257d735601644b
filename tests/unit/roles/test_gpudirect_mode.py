# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gpudirect role decides its mode from the node's NVIDIA driver (gpudirect_mode auto), and an explicit mode that
contradicts the node stops before anything is written. One ansible-playbook run over four local "nodes", each a tree
laid out like the host (sysfs, modules.dep, the GPU Operator's driver root); the facts come from the real
rdma_driver_facts module, as the facts play reads them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
KERNEL = '6.8.0-45-generic'
CONF = 'modules-load.d/gpunet-gpudirect.conf'

PLAY = [{
    'name': 'GPUDirect on nodes read from their trees',
    'hosts': 'all',
    'gather_facts': False,
    'tasks': [
        {'name': 'Read the driver stack as the facts play does',
         'gpunet.rdma.rdma_driver_facts': {
             'kernel': KERNEL, 'modules': ['nvidia_peermem', 'gdrdrv'], 'sysfs_root': '{{ node_root }}/sys', 'modules_root': '{{ node_root }}/lib/modules',
             'modprobe_dir': '{{ node_root }}/modprobe.d', 'nvidia_driver_root': '{{ node_root }}/run/nvidia/driver',
             'rdma_path': '{{ node_root }}/rdma', 'ofed_info_path': '{{ node_root }}/ofed_info'}},
        {'name': 'GPUDirect', 'ansible.builtin.include_role': {'name': 'gpunet.rdma.gpudirect'},
         'vars': {'gpudirect_sysfs_root': '{{ node_root }}/sys', 'gpudirect_modules_root': '{{ node_root }}/lib/modules',
                  'gpudirect_modules_load_path': '{{ node_root }}/' + CONF, 'gpudirect_load_modules': False,
                  'gpudirect_require_installed': False}},
        {'name': 'Keep the ledger entry', 'ansible.builtin.copy': {
            'content': '{{ ansible_facts.gpunet_rdma_ledger.gpudirect | to_json }}', 'dest': '{{ node_root }}/ledger.json',
            'mode': '0644'}},
    ],
}]


def node(root, loaded=None, host_module=False, operator_root=False):
    """A node tree; ``loaded`` is the version of a loaded nvidia module, ``host_module`` puts the driver's DKMS
    build in modules.dep, ``operator_root`` fills /run/nvidia/driver as the GPU Operator's driver container does."""
    (root / 'sys' / 'module').mkdir(parents=True)
    (root / 'modules-load.d').mkdir()
    (root / 'modprobe.d').mkdir()
    kernel = root / 'lib' / 'modules' / KERNEL
    kernel.mkdir(parents=True)
    (kernel / 'modules.dep').write_text('kernel/drivers/infiniband/core/ib_core.ko.zst:\n'
                                        + ('updates/dkms/nvidia.ko.zst: kernel/drivers/video/video.ko.zst\n'
                                           if host_module else ''))
    if loaded:
        (root / 'sys' / 'module' / 'nvidia').mkdir()
        (root / 'sys' / 'module' / 'nvidia' / 'version').write_text(loaded + '\n')
        (root / 'sys' / 'module' / 'nvidia' / 'initstate').write_text('live\n')
    (root / 'run' / 'nvidia' / 'driver').mkdir(parents=True)
    if operator_root:
        (root / 'run' / 'nvidia' / 'driver' / 'usr' / 'bin').mkdir(parents=True)
    for tool, text, rc in (('rdma', 'netns shared copy-on-fork on', 0), ('ofed_info', '', 127)):
        (root / tool).write_text('#!/bin/sh\necho "%s"\nexit %d\n' % (text, rc))
        (root / tool).chmod(0o755)
    return str(root)


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp('gpudirect-mode')
    hosts = {
        'host-driver': dict(node_root=node(base / 'host-driver', loaded='550.54.15', host_module=True)),
        'operator-driver': dict(node_root=node(base / 'operator-driver', loaded='550.90.07', operator_root=True)),
        'no-driver': dict(node_root=node(base / 'no-driver')),
        'host-mode-on-operator': dict(node_root=node(base / 'host-mode-on-operator', loaded='550.90.07',
                                                     operator_root=True), gpudirect_mode='host'),
    }
    for variables in hosts.values():
        variables.update(ansible_connection='local', ansible_python_interpreter=sys.executable)
    (base / 'hosts.yml').write_text(yaml.safe_dump({'all': {'hosts': hosts}}))
    (base / 'play.yml').write_text(yaml.safe_dump(PLAY, sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'))
    result = subprocess.run(['ansible-playbook', '-i', str(base / 'hosts.yml'), str(base / 'play.yml')],
                            capture_output=True, text=True, env=env, check=False)
    output = ' '.join((result.stdout + result.stderr).split())

    def entry(name):
        path = base / name / 'ledger.json'
        return json.loads(path.read_text()) if path.exists() else None
    return result.returncode, output, base, entry


def test_auto_follows_the_driver_of_each_node(run):
    output, base, entry = run[1:]
    assert (entry('host-driver') or {}).get('detail', {}).get('mode') == 'host', output
    assert entry('host-driver')['detail']['mode_from'] == 'nvidia_driver'
    assert entry('host-driver')['detail']['nvidia_driver_version'] == '550.54.15'
    assert (base / 'host-driver' / CONF).read_text().splitlines()[1:] == ['nvidia_peermem']
    assert entry('operator-driver')['detail']['mode'] == 'gpu_operator'
    assert entry('operator-driver')['detail']['nvidia_driver'] == 'gpu_operator'
    assert not (base / 'operator-driver' / CONF).exists()


def test_a_node_without_an_nvidia_driver_gets_nothing_and_says_why(run):
    output, base, entry = run[1:]
    record = entry('no-driver')
    assert record is not None, output
    assert (record['status'], record['detail']['mode'], record['detail']['nvidia_driver']) == ('skipped', 'none', None)
    assert record['detail']['reason'].startswith('no NVIDIA GPU driver on the node')
    assert not (base / 'no-driver' / CONF).exists()


def test_an_explicit_mode_against_the_driver_stops_before_any_write(run):
    code, output, base, entry = run
    assert code != 0
    assert ('gpudirect_mode is host, but the NVIDIA driver of host-mode-on-operator is the GPU Operator\'s driver '
            'container (%s/run/nvidia/driver)' % (base / 'host-mode-on-operator')) in output
    assert 'Set gpunet_rdma_fabric.gpudirect.mode to gpu_operator, or leave it unset to follow the driver.' in output
    assert entry('host-mode-on-operator') is None
    assert os.listdir(base / 'host-mode-on-operator' / 'modules-load.d') == []
