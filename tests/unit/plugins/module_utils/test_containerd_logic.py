# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils._containerd import (
    UNLIMITED,
    ConfigError,
    SpecError,
    build_spec,
    config_version,
    dump_base_runtime_specs,
    parse_memlock,
    parse_task_list,
    runtime_names,
    serialize,
    split_dotted_key,
    wire_base_runtime_spec,
)

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'containerd')
SPEC = '/etc/containerd/rdma-base-spec.json'


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


@pytest.fixture
def ctr_spec():
    return json.loads(fixture('ctr-oci-spec-1.6.20.json'))


def test_unlimited_memlock_keeps_nofile(ctr_spec):
    spec = build_spec(ctr_spec)
    assert spec['process']['rlimits'] == [
        {'type': 'RLIMIT_NOFILE', 'hard': 1024, 'soft': 1024},
        {'type': 'RLIMIT_MEMLOCK', 'soft': UNLIMITED, 'hard': UNLIMITED},
    ]
    assert ctr_spec['process']['rlimits'] == [{'type': 'RLIMIT_NOFILE', 'hard': 1024, 'soft': 1024}]  # untouched


def test_numbers_and_overrides(ctr_spec):
    rlimits = [{'type': 'nofile', 'soft': '65536', 'hard': 'unlimited'}, {'type': 'RLIMIT_NPROC', 'hard': 4096}]
    spec = build_spec(ctr_spec, memlock='4194304', rlimits=rlimits)
    assert spec['process']['rlimits'] == [
        {'type': 'RLIMIT_NOFILE', 'soft': 65536, 'hard': UNLIMITED},
        {'type': 'RLIMIT_NPROC', 'soft': 4096, 'hard': 4096},
        {'type': 'RLIMIT_MEMLOCK', 'soft': 4194304, 'hard': 4194304},
    ]


def test_existing_memlock_is_replaced_not_duplicated(ctr_spec):
    once = build_spec(ctr_spec, memlock=1024)
    twice = build_spec(once, memlock='unlimited')
    assert [r['type'] for r in twice['process']['rlimits']] == ['RLIMIT_NOFILE', 'RLIMIT_MEMLOCK']
    assert twice['process']['rlimits'][1]['soft'] == UNLIMITED


def test_serialization_is_stable(ctr_spec):
    text = serialize(build_spec(ctr_spec))
    assert text == serialize(json.loads(text))
    keys = list(json.loads(text))
    assert keys == sorted(keys)
    assert text.endswith('}\n') and '\n  "' in text


@pytest.mark.parametrize('memlock, rlimits, message', [
    ('lots', None, 'memlock must be "unlimited" or a whole number'),
    ('-1', None, 'memlock must be "unlimited" or a whole number'),
    (str(UNLIMITED + 1), None, 'memlock must be between 0 and'),
    ('unlimited', [{'type': 'RLIMIT_MEMLOCK', 'soft': 1}], 'RLIMIT_MEMLOCK is set by memlock'),
    ('unlimited', [{'type': 'nofile!', 'soft': 1}], 'is not an rlimit type'),
    ('unlimited', [{'type': 'RLIMIT_NOFILE', 'soft': 10, 'hard': 5}], 'soft 10 is above hard 5'),
    ('unlimited', [{'soft': 1}], 'must be a dict with type, soft and hard'),
    ('unlimited', [{'type': 'RLIMIT_NOFILE', 'soft': 1, 'max': 2}], 'must be a dict with type, soft and hard'),
])
def test_bad_options(ctr_spec, memlock, rlimits, message):
    with pytest.raises(SpecError) as error:
        build_spec(ctr_spec, memlock, rlimits)
    assert message in str(error.value)


@pytest.mark.parametrize('base', [{}, {'ociVersion': '1.0.2'}, {'ociVersion': '1', 'process': []}, [],
                                  {'ociVersion': '1', 'process': {'rlimits': 'none'}}])
def test_broken_base(base):
    with pytest.raises(SpecError, match='OCI runtime spec|malformed process.rlimits'):
        build_spec(base)


@pytest.mark.parametrize('text, parts', [
    ('plugins."io.containerd.grpc.v1.cri".containerd', ['plugins', 'io.containerd.grpc.v1.cri', 'containerd']),
    ("plugins.'io.containerd.cri.v1.runtime'.containerd", ['plugins', 'io.containerd.cri.v1.runtime', 'containerd']),
    ('a . "b.c" . d', ['a', 'b.c', 'd']),
])
def test_split_dotted_key(text, parts):
    assert split_dotted_key(text) == parts


def test_unterminated_header_key():
    with pytest.raises(ConfigError, match='unterminated'):
        split_dotted_key('plugins."io.containerd')


def test_default_v2_config_changes_one_line():
    before = fixture('config-default-1.6.20.toml')
    assert config_version(before) == 2
    after, changed = wire_base_runtime_spec(before, SPEC, ['runc'], 2)
    assert changed == ['runc']
    diff = [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]
    assert diff == [('          base_runtime_spec = ""', '          base_runtime_spec = "%s"' % SPEC)]
    assert len(after.splitlines()) == len(before.splitlines())
    # default_runtime and untrusted_workload_runtime are not runtimes.<name> tables: untouched
    assert after.count('base_runtime_spec = ""') == before.count('base_runtime_spec = ""') - 1


def test_nvidia_toolkit_config_gets_both_runtimes_and_keeps_comments():
    before = fixture('config-nvidia-toolkit-v2.toml')
    assert runtime_names(before, 2) == ['nvidia', 'runc']
    after, changed = wire_base_runtime_spec(before, SPEC, ['runc'], 2)
    assert changed == ['nvidia', 'runc']
    assert '# the default runtime for non-GPU pods' in after
    assert 'base_runtime_spec = "%s"  # from an earlier hand edit' % SPEC in after
    assert after.count('base_runtime_spec = "%s"' % SPEC) == 2
    nvidia = after.split('runtimes.nvidia]')[1].split('[')[0]
    assert '          base_runtime_spec = "%s"\n' % SPEC in nvidia
    removed = set(before.splitlines()) - set(after.splitlines())
    assert removed == {'          base_runtime_spec = "/etc/containerd/old-spec.json"  # from an earlier hand edit'}


def test_v3_single_quoted_headers():
    before = fixture('config-v3-single-quotes.toml')
    assert config_version(before) == 3
    after, changed = wire_base_runtime_spec(before, SPEC, ['runc'], 3)
    assert changed == ['runc']
    runc = after.split("runtimes.runc]")[1].split('[')[0]
    assert '    base_runtime_spec = "%s"\n' % SPEC in runc
    assert "[plugins.'io.containerd.cri.v1.images']\n  snapshotter = 'overlayfs'\n" in after


def test_wrong_version_tables_are_not_used():
    """A version 2 file wired as version 3 would be ignored by containerd 2.x: the runc table is created anew."""
    before = fixture('config-default-1.6.20.toml')
    after, changed = wire_base_runtime_spec(before, SPEC, ['runc'], 3)
    assert changed == ['runc']
    assert after.endswith('\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]\n'
                          '  runtime_type = "io.containerd.runc.v2"\n  base_runtime_spec = "%s"\n' % SPEC)


@pytest.mark.parametrize('name', ['config-default-1.6.20.toml', 'config-nvidia-toolkit-v2.toml',
                                  'config-v3-single-quotes.toml'])
def test_wiring_is_idempotent(name):
    before = fixture(name)
    version = config_version(before)
    once, _changed = wire_base_runtime_spec(before, SPEC, ['runc'], version)
    assert wire_base_runtime_spec(once, SPEC, ['runc'], version) == (once, [])


def test_missing_runc_table_is_created_in_empty_file():
    after, changed = wire_base_runtime_spec('version = 2\n', SPEC, ['runc'], 2)
    assert changed == ['runc']
    assert config_version(after) == 2
    assert runtime_names(after, 2) == ['runc']


def test_missing_other_runtime_is_an_error():
    with pytest.raises(ConfigError, match='no runtime table for nvidia'):
        wire_base_runtime_spec('version = 2\n', SPEC, ['runc', 'nvidia'], 2)


def test_unsupported_version():
    with pytest.raises(ConfigError, match='version 1 is not supported'):
        wire_base_runtime_spec('version = 1\n', SPEC, ['runc'], 1)


def test_path_is_escaped():
    after, _changed = wire_base_runtime_spec('version = 2\n', '/etc/odd"dir/spec.json', ['runc'], 2)
    assert 'base_runtime_spec = "/etc/odd\\"dir/spec.json"' in after
    assert dump_base_runtime_specs(after, 2) == {'runc': '/etc/odd"dir/spec.json'}


def test_dump_reading():
    dumped, _changed = wire_base_runtime_spec(fixture('config-nvidia-toolkit-v2.toml'), SPEC, ['runc'], 2)
    assert dump_base_runtime_specs(dumped, 2) == {'nvidia': SPEC, 'runc': SPEC}
    assert dump_base_runtime_specs(fixture('config-default-1.6.20.toml'), 2) == {'runc': ''}


def test_task_list():
    text = 'TASK       PID      STATUS    \nrdma-a     4242     RUNNING\nold        17       STOPPED\n'
    assert parse_task_list(text) == [{'id': 'rdma-a', 'pid': 4242, 'status': 'RUNNING'},
                                     {'id': 'old', 'pid': 17, 'status': 'STOPPED'}]
    assert parse_task_list('TASK    PID    STATUS    \n') == []
    with pytest.raises(ConfigError, match='unrecognised'):
        parse_task_list('TASK PID STATUS\nbroken line\n')


def test_memlock_from_proc_limits():
    limits = ('Limit                     Soft Limit           Hard Limit           Units     \n'
              'Max locked memory         8388608              8388608              bytes     \n')
    assert parse_memlock(limits) == (8388608, 8388608)
    assert parse_memlock(limits.replace('8388608              8388608', 'unlimited            unlimited')) == \
        (UNLIMITED, UNLIMITED)
    with pytest.raises(ConfigError):
        parse_memlock('Max open files  1024  1024  files\n')
