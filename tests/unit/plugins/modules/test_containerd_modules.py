# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""containerd_spec and containerd_config with the real ctr and containerd binaries (Debian's containerd 1.6)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils.runtime._containerd import UNLIMITED, dump_base_runtime_specs
from ansible_collections.gpunet.rdma.plugins.modules import containerd_config, containerd_spec

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'containerd')


def needs_containerd(function):
    """The real binaries are installed by make (Debian's containerd 1.6); no skip: a missing one is a failure."""
    return function


@pytest.fixture
def base_spec(tmp_path):
    path = tmp_path / 'base.json'
    shutil.copy(os.path.join(FIXTURES, 'ctr-oci-spec-1.6.20.json'), str(path))
    return str(path)


# ------------------------------------------------------------ containerd_spec

def test_spec_from_file_then_idempotent(tmp_path, base_spec, run_module):
    dest = str(tmp_path / 'rdma-spec.json')
    code, result = run_module(containerd_spec, {'path': dest, 'base': base_spec, 'mode': '0644'}, diff=True)
    assert code == 0 and result['changed'] is True
    assert result['rlimits'][-1] == {'type': 'RLIMIT_MEMLOCK', 'soft': UNLIMITED, 'hard': UNLIMITED}
    assert oct(os.stat(dest).st_mode & 0o777) == '0o644'
    written = json.load(open(dest))
    assert written['process']['rlimits'][0] == {'type': 'RLIMIT_NOFILE', 'hard': 1024, 'soft': 1024}
    code, again = run_module(containerd_spec, {'path': dest, 'base': base_spec, 'mode': '0644'}, diff=True)
    assert again['changed'] is False


def test_spec_idempotent_by_content_not_bytes(tmp_path, base_spec, run_module):
    dest = tmp_path / 'rdma-spec.json'
    run_module(containerd_spec, {'path': str(dest), 'base': base_spec}, diff=True)
    dest.write_text(json.dumps(json.load(open(str(dest))), indent=4))  # same content, other bytes
    _code, result = run_module(containerd_spec, {'path': str(dest), 'base': base_spec}, diff=True)
    assert result['changed'] is False


def test_spec_check_mode_and_diff(tmp_path, base_spec, run_module):
    dest = tmp_path / 'rdma-spec.json'
    _code, result = run_module(containerd_spec, {'path': str(dest), 'base': base_spec, 'memlock': '4194304'},
                               check_mode=True, diff=True)
    assert result['changed'] is True and not dest.exists()
    assert '"type": "RLIMIT_MEMLOCK"' in result['diff']['after'] and result['diff']['before'] == ''


def test_spec_backup(tmp_path, base_spec, run_module):
    dest = tmp_path / 'rdma-spec.json'
    run_module(containerd_spec, {'path': str(dest), 'base': base_spec}, diff=True)
    _code, result = run_module(containerd_spec, {'path': str(dest), 'base': base_spec, 'memlock': '1024',
                                                 'backup': True}, diff=True)
    assert result['changed'] is True
    assert os.path.exists(result['backup_file'])
    assert json.load(open(result['backup_file']))['process']['rlimits'][-1]['soft'] == UNLIMITED


@pytest.mark.parametrize('args, message', [
    ({'memlock': 'plenty'}, 'memlock must be "unlimited" or a whole number'),
    ({'rlimits': [{'type': 'RLIMIT_NOFILE', 'soft': '10', 'hard': '5'}]}, 'soft 10 is above hard 5'),
    ({'base': '/nonexistent/base.json'}, 'Cannot use the base spec'),
    ({'rlimits': [{'type': 'RLIMIT_NOFILES', 'soft': '10'}]}, 'did you mean RLIMIT_NOFILE'),
    ({'mode': 'rwxbogus'}, 'mode'),
    ({'owner': 'no-such-user-gpunet'}, 'is not a user on this host'),
])
def test_spec_bad_input_leaves_destination_byte_identical(tmp_path, base_spec, run_module, args, message):
    dest = tmp_path / 'rdma-spec.json'
    dest.write_text('{"keep": "these bytes"}\n')
    call = {'path': str(dest), 'base': base_spec}
    call.update(args)
    code, result = run_module(containerd_spec, call, diff=True)
    assert code == 1 and message in result['msg']
    assert dest.read_text() == '{"keep": "these bytes"}\n'


def test_spec_broken_base_fails(tmp_path, run_module):
    broken = tmp_path / 'broken.json'
    broken.write_text('{"ociVersion": "1.0.2", "process": ')
    dest = tmp_path / 'rdma-spec.json'
    code, result = run_module(containerd_spec, {'path': str(dest), 'base': str(broken)}, diff=True)
    assert code == 1 and 'is not valid JSON' in result['msg'] and not dest.exists()
    broken.write_text('{"hello": "world"}')
    code, result = run_module(containerd_spec, {'path': str(dest), 'base': str(broken)}, diff=True)
    assert code == 1 and 'is not an OCI runtime spec' in result['msg'] and not dest.exists()


@needs_containerd
def test_spec_from_real_ctr(tmp_path, run_module):
    dest = tmp_path / 'rdma-spec.json'
    code, result = run_module(containerd_spec, {'path': str(dest), 'memlock': '4194304'}, diff=True)
    assert code == 0
    assert [r['type'] for r in result['rlimits']] == ['RLIMIT_NOFILE', 'RLIMIT_MEMLOCK']
    assert json.load(open(str(dest)))['ociVersion']


# ---------------------------------------------------------- containerd_config

@pytest.fixture
def spec(tmp_path):
    path = tmp_path / 'rdma-base-spec.json'
    path.write_text('{}\n')
    return str(path)


def test_config_v2_validated_by_real_containerd(tmp_path, run_module, spec):
    config = tmp_path / 'config.toml'
    shutil.copy(os.path.join(FIXTURES, 'config-nvidia-toolkit-v2.toml'), str(config))
    code, result = run_module(containerd_config, {'path': str(config), 'spec_path': spec, 'backup': True}, diff=True)
    assert code == 0, result
    assert result['changed'] is True and result['version'] == 2 and result['release'] == '1.6.20'
    assert result['changed_runtimes'] == ['nvidia', 'runc'] and result['runtimes'] == ['nvidia', 'runc']
    assert os.path.exists(result['backup_file'])
    assert config.read_text().count('base_runtime_spec = "%s"' % spec) == 2
    assert [d['before_header'] for d in result['diff']] == [str(config)]
    _code, again = run_module(containerd_config, {'path': str(config), 'spec_path': spec}, diff=True)
    assert again['changed'] is False and again['changed_runtimes'] == [] and again['files'] == []


def test_config_created_from_containerd_default(tmp_path, run_module, spec):
    config = tmp_path / 'containerd' / 'config.toml'
    config.parent.mkdir()
    code, result = run_module(containerd_config, {'path': str(config), 'spec_path': spec}, diff=True)
    assert code == 0, result
    assert result['created'] is True and result['runtimes'] == ['runc']
    assert 'base_runtime_spec = "%s"' % spec in config.read_text()


def test_config_check_mode_writes_nothing_and_diffs_exactly(tmp_path, run_module, spec):
    config = tmp_path / 'config.toml'
    shutil.copy(os.path.join(FIXTURES, 'config-default-1.6.20.toml'), str(config))
    before = config.read_bytes()
    _code, checked = run_module(containerd_config, {'path': str(config), 'spec_path': spec}, check_mode=True, diff=True)
    assert checked['changed'] is True and config.read_bytes() == before
    assert checked['diff'][0]['before'] == before.decode()
    _code, real = run_module(containerd_config, {'path': str(config), 'spec_path': spec}, diff=True)
    assert checked['diff'] == real['diff'] and config.read_text() == real['diff'][0]['after']


def test_config_imports_drop_in_validated_by_real_containerd(tmp_path, run_module, spec):
    """The NVIDIA Container Toolkit's drop-in layout on containerd 1.6: its CRI section is the one that counts."""
    dropins = tmp_path / 'conf.d'
    dropins.mkdir()
    config = tmp_path / 'config.toml'
    config.write_text('version = 2\nimports = ["%s/*.toml"]\n' % dropins)
    nvidia = dropins / '99-nvidia.toml'
    shutil.copy(os.path.join(FIXTURES, 'config-nvidia-toolkit-v2.toml'), str(nvidia))
    main_before = config.read_bytes()
    code, result = run_module(containerd_config, {'path': str(config), 'spec_path': spec,
                                                  'runtimes': ['runc', 'nvidia']}, diff=True)
    assert code == 0, result
    assert result['files'] == [str(nvidia)] and config.read_bytes() == main_before
    assert result['targets'] == {'runc': str(nvidia), 'nvidia': str(nvidia)}
    assert result['loaded'] == [str(config), str(nvidia)]
    out = subprocess.run(['containerd', '--config', str(config), 'config', 'dump'], capture_output=True, text=True,
                         check=True).stdout
    assert dump_base_runtime_specs(out) == {'runc': spec, 'nvidia': spec}


def test_config_symlink_is_followed(tmp_path, run_module, spec):
    real = tmp_path / 'real.toml'
    shutil.copy(os.path.join(FIXTURES, 'config-default-1.6.20.toml'), str(real))
    link = tmp_path / 'config.toml'
    link.symlink_to(real)
    code, result = run_module(containerd_config, {'path': str(link), 'spec_path': spec}, diff=True)
    assert code == 0, result
    assert link.is_symlink() and spec in real.read_text()


def test_config_bad_mode_changes_nothing(tmp_path, run_module, spec):
    config = tmp_path / 'config.toml'
    shutil.copy(os.path.join(FIXTURES, 'config-default-1.6.20.toml'), str(config))
    before = config.read_bytes()
    code, result = run_module(containerd_config, {'path': str(config), 'spec_path': spec, 'mode': 'u+bogus'}, diff=True)
    assert code == 1 and 'mode' in result['msg'] and config.read_bytes() == before
    assert sorted(os.listdir(str(tmp_path))) == ['config.toml', 'rdma-base-spec.json']


def test_config_v3_rejected_by_containerd_1_6(tmp_path, run_module, spec):
    config = tmp_path / 'config.toml'
    shutil.copy(os.path.join(FIXTURES, 'config-v3-single-quotes.toml'), str(config))
    before = config.read_bytes()
    code, result = run_module(containerd_config, {'path': str(config), 'spec_path': spec}, diff=True)
    assert code == 1 and 'reads config versions up to 2' in result['msg']
    assert config.read_bytes() == before


def test_config_syntax_error_is_rejected(tmp_path, run_module, spec):
    config = tmp_path / 'config.toml'
    config.write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
                      '  runtime_type = "io.containerd.runc.v2\n')
    before = config.read_bytes()
    code, result = run_module(containerd_config, {'path': str(config), 'spec_path': spec}, diff=True)
    assert code == 1 and 'is not TOML' in result['msg'] and 'line 3' in result['msg']
    assert config.read_bytes() == before


def test_config_containerd_failure_is_quoted_from_its_first_error_line(tmp_path, run_module, spec):
    """A value containerd refuses: its own message is shown from the first error line."""
    config = tmp_path / 'config.toml'
    config.write_text('version = 2\noom_score = "high"\n')
    before = config.read_bytes()
    code, result = run_module(containerd_config, {'path': str(config), 'spec_path': spec}, diff=True)
    assert code == 1 and 'containerd rejects the new configuration' in result['msg'], result
    assert config.read_bytes() == before


def test_config_unknown_runtime(tmp_path, run_module, spec):
    config = tmp_path / 'config.toml'
    config.write_text('version = 2\n')
    code, result = run_module(containerd_config, {'path': str(config), 'spec_path': spec,
                                                  'runtimes': ['runc', 'nvidia'], 'validate': False,
                                                  'containerd_version': '1.7.27'}, diff=True)
    assert code == 1 and 'no runtime table for nvidia' in result['msg']
    assert config.read_text() == 'version = 2\n'


def test_config_without_tomlkit_names_the_package(tmp_path, run_module, spec, monkeypatch):
    monkeypatch.setattr(containerd_config, 'HAS_TOMLKIT', False)
    code, result = run_module(containerd_config, {'path': str(tmp_path / 'c.toml'), 'spec_path': spec}, diff=True)
    assert code == 1 and 'tomlkit' in result['msg'] and 'python3-tomlkit' in result['msg']


def warning_texts(result):
    """Warnings as text: ansible-core 2.19 reports them as structured events."""
    texts = []
    for warning in result.get('warnings') or []:
        texts.append(warning['event']['msg'] if isinstance(warning, dict) else warning)
    return texts


def test_spec_low_memlock_warns(tmp_path, base_spec, run_module):
    dest = tmp_path / 'rdma-spec.json'
    _code, result = run_module(containerd_spec, {'path': str(dest), 'base': base_spec, 'memlock': '0'},
                               check_mode=True, diff=True)
    assert any('RLIMIT_MEMLOCK is 0 bytes' in text and '64 KiB' in text for text in warning_texts(result))


def test_config_spec_pending_in_check_mode_warns(tmp_path, run_module):
    config = tmp_path / 'config.toml'
    config.write_text('version = 2\n')
    _code, result = run_module(containerd_config, {'path': str(config), 'spec_path': str(tmp_path / 'later.json'),
                                                   'spec_pending': True}, check_mode=True, diff=True)
    assert result['changed'] is True and config.read_text() == 'version = 2\n'
    assert any('does not exist yet' in text for text in warning_texts(result))
