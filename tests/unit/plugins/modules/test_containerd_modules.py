# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""containerd_spec and containerd_config with the real ctr and containerd binaries (Debian's containerd 1.6)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpunet.rdma.plugins.module_utils._containerd import UNLIMITED
from ansible_collections.gpunet.rdma.plugins.modules import containerd_config, containerd_spec

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'containerd')
needs_containerd = pytest.mark.skipif(shutil.which('containerd') is None or shutil.which('ctr') is None,
                                      reason='containerd not installed (make apt installs it)')


def run(module, args, capsys, check_mode=False, diff=True):
    args = dict(args)
    args['_ansible_check_mode'] = check_mode
    args['_ansible_diff'] = diff
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exit_info:
            module.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


@pytest.fixture
def base_spec(tmp_path):
    path = tmp_path / 'base.json'
    shutil.copy(os.path.join(FIXTURES, 'ctr-oci-spec-1.6.20.json'), str(path))
    return str(path)


# ------------------------------------------------------------ containerd_spec

def test_spec_from_file_then_idempotent(tmp_path, base_spec, capsys):
    dest = str(tmp_path / 'rdma-spec.json')
    code, result = run(containerd_spec, {'path': dest, 'base': base_spec, 'mode': '0644'}, capsys)
    assert code == 0 and result['changed'] is True
    assert result['rlimits'][-1] == {'type': 'RLIMIT_MEMLOCK', 'soft': UNLIMITED, 'hard': UNLIMITED}
    assert oct(os.stat(dest).st_mode & 0o777) == '0o644'
    written = json.load(open(dest))
    assert written['process']['rlimits'][0] == {'type': 'RLIMIT_NOFILE', 'hard': 1024, 'soft': 1024}
    code, again = run(containerd_spec, {'path': dest, 'base': base_spec, 'mode': '0644'}, capsys)
    assert again['changed'] is False


def test_spec_idempotent_by_content_not_bytes(tmp_path, base_spec, capsys):
    dest = tmp_path / 'rdma-spec.json'
    run(containerd_spec, {'path': str(dest), 'base': base_spec}, capsys)
    dest.write_text(json.dumps(json.load(open(str(dest))), indent=4))  # same content, other bytes
    _code, result = run(containerd_spec, {'path': str(dest), 'base': base_spec}, capsys)
    assert result['changed'] is False


def test_spec_check_mode_and_diff(tmp_path, base_spec, capsys):
    dest = tmp_path / 'rdma-spec.json'
    _code, result = run(containerd_spec, {'path': str(dest), 'base': base_spec, 'memlock': '4194304'}, capsys,
                        check_mode=True)
    assert result['changed'] is True and not dest.exists()
    assert '"type": "RLIMIT_MEMLOCK"' in result['diff']['after'] and result['diff']['before'] == ''


def test_spec_backup(tmp_path, base_spec, capsys):
    dest = tmp_path / 'rdma-spec.json'
    run(containerd_spec, {'path': str(dest), 'base': base_spec}, capsys)
    _code, result = run(containerd_spec, {'path': str(dest), 'base': base_spec, 'memlock': '1024', 'backup': True},
                        capsys)
    assert result['changed'] is True
    assert os.path.exists(result['backup_file'])
    assert json.load(open(result['backup_file']))['process']['rlimits'][-1]['soft'] == UNLIMITED


@pytest.mark.parametrize('args, message', [
    ({'memlock': 'plenty'}, 'memlock must be "unlimited" or a whole number'),
    ({'rlimits': [{'type': 'RLIMIT_NOFILE', 'soft': '10', 'hard': '5'}]}, 'soft 10 is above hard 5'),
    ({'base': '/nonexistent/base.json'}, 'Cannot read the base spec'),
])
def test_spec_bad_input_leaves_destination_byte_identical(tmp_path, base_spec, capsys, args, message):
    dest = tmp_path / 'rdma-spec.json'
    dest.write_text('{"keep": "these bytes"}\n')
    call = {'path': str(dest), 'base': base_spec}
    call.update(args)
    code, result = run(containerd_spec, call, capsys)
    assert code == 1 and message in result['msg']
    assert dest.read_text() == '{"keep": "these bytes"}\n'


def test_spec_broken_base_fails(tmp_path, capsys):
    broken = tmp_path / 'broken.json'
    broken.write_text('{"ociVersion": "1.0.2", "process": ')
    dest = tmp_path / 'rdma-spec.json'
    code, result = run(containerd_spec, {'path': str(dest), 'base': str(broken)}, capsys)
    assert code == 1 and 'is not valid JSON' in result['msg'] and not dest.exists()
    broken.write_text('{"hello": "world"}')
    code, result = run(containerd_spec, {'path': str(dest), 'base': str(broken)}, capsys)
    assert code == 1 and 'is not an OCI runtime spec' in result['msg'] and not dest.exists()


@needs_containerd
def test_spec_from_real_ctr(tmp_path, capsys):
    dest = tmp_path / 'rdma-spec.json'
    code, result = run(containerd_spec, {'path': str(dest), 'memlock': '4194304'}, capsys)
    assert code == 0
    assert [r['type'] for r in result['rlimits']] == ['RLIMIT_NOFILE', 'RLIMIT_MEMLOCK']
    assert json.load(open(str(dest)))['ociVersion']


# ---------------------------------------------------------- containerd_config

SPEC = '/etc/containerd/rdma-base-spec.json'


@needs_containerd
def test_config_v2_validated_by_real_containerd(tmp_path, capsys):
    config = tmp_path / 'config.toml'
    shutil.copy(os.path.join(FIXTURES, 'config-nvidia-toolkit-v2.toml'), str(config))
    code, result = run(containerd_config, {'path': str(config), 'spec_path': SPEC, 'backup': True}, capsys)
    assert code == 0, result
    assert result['changed'] is True and result['version'] == 2
    assert result['changed_runtimes'] == ['nvidia', 'runc'] and result['runtimes'] == ['nvidia', 'runc']
    assert os.path.exists(result['backup_file'])
    assert config.read_text().count('base_runtime_spec = "%s"' % SPEC) == 2
    _code, again = run(containerd_config, {'path': str(config), 'spec_path': SPEC}, capsys)
    assert again['changed'] is False and again['changed_runtimes'] == []


@needs_containerd
def test_config_created_from_containerd_default(tmp_path, capsys):
    config = tmp_path / 'containerd' / 'config.toml'
    code, result = run(containerd_config, {'path': str(config), 'spec_path': SPEC}, capsys)
    assert code == 0, result
    assert result['created'] is True and result['runtimes'] == ['runc']
    assert 'base_runtime_spec = "%s"' % SPEC in config.read_text()


@needs_containerd
def test_config_check_mode_writes_nothing(tmp_path, capsys):
    config = tmp_path / 'config.toml'
    shutil.copy(os.path.join(FIXTURES, 'config-default-1.6.20.toml'), str(config))
    before = config.read_bytes()
    _code, result = run(containerd_config, {'path': str(config), 'spec_path': SPEC}, capsys, check_mode=True)
    assert result['changed'] is True and config.read_bytes() == before
    assert result['diff']['before'] == before.decode() and SPEC in result['diff']['after']


@needs_containerd
def test_config_v3_rejected_by_containerd_1_6(tmp_path, capsys):
    """containerd 1.6 ignores version 3 tables: validation catches it and the file stays byte-identical."""
    config = tmp_path / 'config.toml'
    shutil.copy(os.path.join(FIXTURES, 'config-v3-single-quotes.toml'), str(config))
    before = config.read_bytes()
    code, result = run(containerd_config, {'path': str(config), 'spec_path': SPEC}, capsys)
    assert code == 1
    assert 'does not show base_runtime_spec' in result['msg'] or 'rejects the new configuration' in result['msg']
    assert config.read_bytes() == before
    assert [f for f in os.listdir(str(tmp_path)) if f.startswith('.config.toml')] == []


@needs_containerd
def test_config_syntax_error_is_rejected(tmp_path, capsys):
    config = tmp_path / 'config.toml'
    config.write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
                      '  runtime_type = "io.containerd.runc.v2\n')
    before = config.read_bytes()
    code, result = run(containerd_config, {'path': str(config), 'spec_path': SPEC}, capsys)
    assert code == 1 and 'containerd rejects the new configuration' in result['msg']
    assert config.read_bytes() == before


def test_config_unknown_runtime(tmp_path, capsys):
    config = tmp_path / 'config.toml'
    config.write_text('version = 2\n')
    code, result = run(containerd_config, {'path': str(config), 'spec_path': SPEC, 'runtimes': ['runc', 'nvidia'],
                                           'validate': False}, capsys)
    assert code == 1 and 'no runtime table for nvidia' in result['msg']
    assert config.read_text() == 'version = 2\n'
