# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import json
import os

import pytest

import tomlkit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpunet.rdma.plugins.module_utils.runtime._containerd import (
    RLIMIT_TYPES,
    UNLIMITED,
    Analysis,
    ConfigError,
    ConfigFile,
    SpecError,
    build_spec,
    closest_rlimit,
    container_labels,
    dump_base_runtime_specs,
    load_layout,
    parse_memlock,
    parse_release,
    parse_task_list,
    resolve_imports,
    serialize,
    spec_warnings,
    strict_json,
    wire,
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
    ('unlimited', [{'type': 'RLIMIT_BOGUS', 'soft': 1}], 'did you mean'),
    ('unlimited', [{'type': 'RLIMIT_NOFILES', 'soft': 1}], 'did you mean RLIMIT_NOFILE'),
    ('unlimited', [{'type': 'nofile', 'soft': 1}, {'type': 'RLIMIT_NOFILE', 'soft': 2}], 'given twice'),
    ('1.5', None, 'memlock must be "unlimited" or a whole number'),
    ('unlimited', [{'type': 'RLIMIT_NOFILE', 'soft': 10, 'hard': 5}], 'soft 10 is above hard 5'),
    ('unlimited', [{'soft': 1}], 'must be a dict with type, soft and hard'),
    ('unlimited', [{'type': 'RLIMIT_NOFILE', 'soft': 1, 'max': 2}], 'must be a dict with type, soft and hard'),
])
def test_bad_options(ctr_spec, memlock, rlimits, message):
    with pytest.raises(SpecError) as error:
        build_spec(ctr_spec, memlock, rlimits)
    assert message in str(error.value)


@pytest.mark.parametrize('base', [{}, {'ociVersion': '1.0.2'}, {'ociVersion': '1', 'process': []}, [],
                                  {'ociVersion': '1', 'process': {'rlimits': 'none'}},
                                  {'ociVersion': '1', 'process': {'rlimits': [{'type': 'RLIMIT_FOO', 'soft': 1,
                                                                               'hard': 1}]}},
                                  {'ociVersion': '1', 'process': {'rlimits': [{'type': 'RLIMIT_CORE', 'soft': -1,
                                                                               'hard': 1}]}}])
def test_broken_base(base):
    with pytest.raises(SpecError, match='OCI runtime spec|malformed process.rlimits|did you mean|whole number'):
        build_spec(base)


def test_runc_rlimit_list_and_closest():
    assert len(RLIMIT_TYPES) == 16 and 'RLIMIT_SIGPENDING' in RLIMIT_TYPES and 'RLIMIT_NOFILES' not in RLIMIT_TYPES
    assert closest_rlimit('RLIMIT_NOFILES') == 'RLIMIT_NOFILE'
    assert closest_rlimit('memlok') == 'RLIMIT_MEMLOCK'


@pytest.mark.parametrize('text', ['{"ociVersion": NaN}', '{"a": Infinity}', '{"a": -Infinity}'])
def test_strict_json_refuses_nan(text):
    with pytest.raises(SpecError, match='not JSON'):
        strict_json(text, 'base.json')


def test_low_memlock_warns(ctr_spec):
    assert spec_warnings(build_spec(ctr_spec, memlock=0))[0].startswith('RLIMIT_MEMLOCK is 0 bytes')
    assert spec_warnings(build_spec(ctr_spec, memlock=65535)) != []
    assert spec_warnings(build_spec(ctr_spec, memlock=65536)) == []
    assert spec_warnings(build_spec(ctr_spec)) == []


# ------------------------------------------------------------------ TOML wiring

V16 = (1, 6, 20)
V21 = (2, 1, 4)
V23 = (2, 3, 0)
MAIN = '/etc/containerd/config.toml'


def one(text, release=V16, required=('runc',), path=MAIN):
    return wire([ConfigFile(path, text)], release, SPEC, list(required))


def plain(text):
    return tomlkit.parse(text).unwrap()


def runtimes_of(text, key='io.containerd.grpc.v1.cri'):
    return plain(text)['plugins'][key]['containerd']['runtimes']


def test_default_v2_config_changes_one_line():
    before = fixture('config-default-1.6.20.toml')
    _analysis, plan, texts, _after = one(before)
    after = texts[MAIN]
    assert plan.targets == {'runc': MAIN}
    diff = [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]
    assert diff == [('          base_runtime_spec = ""', '          base_runtime_spec = "%s"' % SPEC)]
    assert len(after.splitlines()) == len(before.splitlines())


def test_nvidia_toolkit_config_gets_both_runtimes_and_keeps_comments():
    before = fixture('config-nvidia-toolkit-v2.toml')
    analysis, _plan, texts, after = one(before)
    assert list(analysis.effective_runtimes()) == ['nvidia', 'runc']
    text = texts[MAIN]
    assert '# the default runtime for non-GPU pods' in text
    assert 'base_runtime_spec = "%s"  # from an earlier hand edit' % SPEC in text
    assert after.effective_runtimes() == {'nvidia': SPEC, 'runc': SPEC}
    removed = set(before.splitlines()) - set(text.splitlines())
    assert removed == {'          base_runtime_spec = "/etc/containerd/old-spec.json"  # from an earlier hand edit'}


def test_v3_single_quoted_headers_keep_their_quoting():
    before = fixture('config-v3-single-quotes.toml')
    _analysis, _plan, texts, _after = one(before, V21)
    assert "    base_runtime_spec = '%s'\n" % SPEC in texts[MAIN]
    assert "[plugins.'io.containerd.cri.v1.images']\n  snapshotter = 'overlayfs'\n" in texts[MAIN]


def test_version_3_is_refused_on_containerd_1():
    with pytest.raises(ConfigError, match='reads config versions up to 2'):
        one(fixture('config-v3-single-quotes.toml'), V16)


def test_version_4_needs_containerd_2_3():
    text = 'version = 4\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]\n  runtime_type = "x"\n'
    with pytest.raises(ConfigError, match='up to 3'):
        one(text, V21)
    assert one(text, V23)[3].effective_runtimes() == {'runc': SPEC}


@pytest.mark.parametrize('name', ['config-default-1.6.20.toml', 'config-nvidia-toolkit-v2.toml'])
def test_wiring_is_idempotent(name):
    _a, _p, texts, _after = one(fixture(name))
    assert one(texts[MAIN])[2] == {}


def test_empty_file_gets_a_version_and_a_runc_table():
    _a, _p, texts, after = one('')
    assert plain(texts[MAIN])['version'] == 2
    assert runtimes_of(texts[MAIN]) == {'runc': {'runtime_type': 'io.containerd.runc.v2', 'base_runtime_spec': SPEC}}


def test_missing_other_runtime_is_an_error():
    with pytest.raises(ConfigError, match='no runtime table for nvidia takes effect'):
        one('version = 2\n', required=['runc', 'nvidia'])


def test_path_is_escaped():
    _a, _p, texts, _after = wire([ConfigFile(MAIN, 'version = 2\n')], V16, '/etc/odd"dir/spec.json', ['runc'])
    assert runtimes_of(texts[MAIN])['runc']['base_runtime_spec'] == '/etc/odd"dir/spec.json'


# The four TOML forms the line editor got wrong: each keeps every other value and gets the spec where it belongs.
FORMS = {
    'inline table': ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\n'
                     '  runc = { runtime_type = "io.containerd.runc.v2", options = { SystemdCgroup = true } }\n'),
    'dotted keys': ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "nvidia"\n'
                    '  runtimes.runc.runtime_type = "io.containerd.runc.v2"\n'
                    '  runtimes.nvidia.runtime_type = "io.containerd.runc.v2"  # GPU pods\n'
                    '  runtimes.nvidia.options.BinaryName = "/usr/bin/nvidia-container-runtime"\n'),
    'multi-line array': ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
                         '  runtime_type = "io.containerd.runc.v2"\n  pod_annotations = [\n    "io.kubernetes.cri.*",'
                         '  # [not a header]\n    "x",\n  ]\n[plugins."io.containerd.grpc.v1.cri".cni]\n'
                         '  bin_dir = "/opt/cni/bin"\n'),
    'multi-line string': ('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = """\n'
                          '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.fake]\nbase_runtime_spec = ""\n"""\n'
                          '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
                          "  runtime_type = '''io.containerd.runc.v2'''\n"),
}


@pytest.mark.parametrize('form', sorted(FORMS))
def test_toml_forms(form):
    before = FORMS[form]
    _analysis, _plan, texts, after = one(before)
    text = texts[MAIN]
    expected = plain(before)
    names = list(expected['plugins']['io.containerd.grpc.v1.cri']['containerd']['runtimes'])
    for name in names:
        expected['plugins']['io.containerd.grpc.v1.cri']['containerd']['runtimes'][name]['base_runtime_spec'] = SPEC
    assert plain(text) == expected
    assert sorted(after.effective_runtimes()) == sorted(names)
    # lines that were there stay byte for byte (comments, quoting, continuation lines); an inline table is one line
    kept = [line for line in before.splitlines() if line not in text.splitlines()]
    assert kept == ([before.splitlines()[2]] if form == 'inline table' else [])


def test_multiline_string_lookalike_is_not_a_table():
    _a, _p, _t, after = one(FORMS['multi-line string'])
    assert list(after.effective_runtimes()) == ['runc']


def test_dotted_keys_get_dotted_settings():
    text = one(FORMS['dotted keys'])[2][MAIN]
    assert 'runtimes.nvidia.base_runtime_spec = "%s"\n' % SPEC in text
    assert 'runtimes.nvidia.runtime_type = "io.containerd.runc.v2"  # GPU pods' in text


# ------------------------------------------------------------------ imports and merge rules

def layout(tmp_path, files, release, drop_in=None):
    """Write {relative path: text} below tmp_path and load it as containerd would."""
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    main = str(tmp_path / 'config.toml')
    return load_layout(main, (tmp_path / 'config.toml').read_text(), lambda p: open(p).read(), release,
                       drop_in=drop_in)


V2_RUNC = ('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
           '  runtime_type = "io.containerd.runc.v2"\n')
V2_NVIDIA = ('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
             '  runtime_type = "io.containerd.runc.v2"\n'
             '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
             '    BinaryName = "/usr/bin/nvidia-container-runtime"\n')
V3_RUNC = V2_RUNC.replace('io.containerd.grpc.v1.cri', 'io.containerd.cri.v1.runtime')
V3_NVIDIA = V2_NVIDIA.replace('io.containerd.grpc.v1.cri', 'io.containerd.cri.v1.runtime')


def test_load_order_is_breadth_first_with_sorted_globs(tmp_path):
    files = layout(tmp_path, {
        'config.toml': 'version = 2\nimports = ["conf.d/*.toml", "/%s/last.toml"]\n' % str(tmp_path).strip('/'),
        'conf.d/20-b.toml': 'version = 2\nimports = ["../other/nested.toml"]\n',
        'conf.d/10-a.toml': 'version = 2\n',
        'conf.d/.hidden.toml': 'version = 2\n',
        'other/nested.toml': 'version = 2\n',
        'last.toml': 'version = 2\nimports = ["config.toml"]\n',
    }, (1, 7, 20))
    names = [os.path.relpath(config.path, str(tmp_path)) for config in files]
    # filepath.Glob matches dot files with *; nested imports come after the first level; config.toml only once
    assert names == ['config.toml', 'conf.d/.hidden.toml', 'conf.d/10-a.toml', 'conf.d/20-b.toml', 'last.toml',
                     'other/nested.toml']


def test_relative_glob_refused_before_the_fix():
    with pytest.raises(ConfigError, match='working directory'):
        resolve_imports(MAIN, ['conf.d/*.toml'], V16)
    assert resolve_imports(MAIN, ['conf.d/x.toml'], V16) == ['/etc/containerd/conf.d/x.toml']
    assert resolve_imports(MAIN, ['conf.d/*.toml'], (1, 6, 29)) == []


def test_containerd_1_uses_the_last_cri_section_only(tmp_path):
    """1.x replaces whole plugin sections: the drop-in's CRI section wins, the main file's runc is ignored."""
    files = layout(tmp_path, {
        'config.toml': 'version = 2\nimports = ["%s/conf.d/*.toml"]\n' % tmp_path + V2_RUNC,
        'conf.d/99-nvidia.toml': 'version = 2\n' + V2_RUNC + V2_NVIDIA,
    }, V16)
    analysis, plan, texts, after = wire(files, V16, SPEC, ['runc'])
    drop_in = str(tmp_path / 'conf.d/99-nvidia.toml')
    assert plan.targets == {'runc': drop_in, 'nvidia': drop_in}
    assert list(texts) == [drop_in]
    assert analysis.ignored and 'replaced by the one of' in analysis.ignored[0]
    assert after.effective_runtimes() == {'runc': SPEC, 'nvidia': SPEC}


def test_containerd_1_drop_in_without_runc_gets_a_runc_table(tmp_path):
    files = layout(tmp_path, {
        'config.toml': 'version = 2\nimports = ["%s/conf.d/*.toml"]\n' % tmp_path + V2_RUNC,
        'conf.d/99-nvidia.toml': 'version = 2\n' + V2_NVIDIA,
    }, V16)
    _a, _p, texts, after = wire(files, V16, SPEC, ['runc'])
    dropped = runtimes_of(texts[str(tmp_path / 'conf.d/99-nvidia.toml')])
    assert dropped['runc'] == {'runtime_type': 'io.containerd.runc.v2', 'base_runtime_spec': SPEC}
    assert after.effective_runtimes() == {'nvidia': SPEC, 'runc': SPEC}


def test_containerd_2_merges_key_by_key_and_edits_the_defining_file(tmp_path):
    """The NVIDIA Container Toolkit's 2.x layout: runc in config.toml, nvidia in the drop-in."""
    files = layout(tmp_path, {
        'config.toml': 'version = 3\nimports = ["%s/conf.d/*.toml"]\n' % tmp_path + V3_RUNC,
        'conf.d/99-nvidia.toml': 'version = 3\n' + V3_NVIDIA,
    }, V21)
    analysis, plan, texts, after = wire(files, V21, SPEC, ['runc', 'nvidia'])
    assert plan.targets == {'runc': str(tmp_path / 'config.toml'), 'nvidia': str(tmp_path / 'conf.d/99-nvidia.toml')}
    assert sorted(texts) == sorted(plan.targets.values())
    assert analysis.ignored == []
    assert after.effective_runtimes() == {'runc': SPEC, 'nvidia': SPEC}


def test_containerd_2_later_setting_wins(tmp_path):
    files = layout(tmp_path, {
        'config.toml': ('version = 3\nimports = ["%s/conf.d/*.toml"]\n' % tmp_path + V3_RUNC
                        + '  base_runtime_spec = "/old.json"\n'),
        'conf.d/10-runc.toml': 'version = 3\n' + V3_RUNC + '  base_runtime_spec = "/older.json"\n',
        'conf.d/20-other.toml': 'version = 3\n' + V3_RUNC,
    }, V23)
    analysis, plan, _texts, _after = wire(files, V23, SPEC, ['runc'])
    assert analysis.effective_runtimes() == {'runc': '/older.json'}
    assert plan.targets == {'runc': str(tmp_path / 'conf.d/10-runc.toml')}


def test_containerd_2_0_to_2_2_ignore_tables_of_another_version(tmp_path):
    files = layout(tmp_path, {
        'config.toml': 'version = 2\nimports = ["%s/conf.d/*.toml"]\n' % tmp_path + V2_RUNC,
        'conf.d/99-nvidia.toml': 'version = 3\n' + V3_NVIDIA,
    }, V21)
    analysis, plan, _texts, after = wire(files, V21, SPEC, ['runc'])
    assert analysis.merged_version == 3
    assert 'ignores them' in analysis.ignored[0] and analysis.ignored[0].startswith(str(tmp_path / 'config.toml'))
    # runc is created where it takes effect, in the version 3 drop-in, not in the ignored version 2 table
    assert plan.targets == {'nvidia': str(tmp_path / 'conf.d/99-nvidia.toml'),
                            'runc': str(tmp_path / 'conf.d/99-nvidia.toml')}
    assert after.effective_runtimes() == {'nvidia': SPEC, 'runc': SPEC}


def test_containerd_2_3_migrates_each_file_and_refuses_a_higher_drop_in(tmp_path):
    files = layout(tmp_path, {
        'config.toml': 'version = 3\nimports = ["%s/conf.d/*.toml"]\n' % tmp_path + V3_RUNC,
        'conf.d/50-legacy.toml': 'version = 2\n' + V2_NVIDIA,
    }, V23)
    analysis, plan, _texts, after = wire(files, V23, SPEC, ['runc', 'nvidia'])
    assert analysis.ignored == [] and plan.targets['nvidia'] == str(tmp_path / 'conf.d/50-legacy.toml')
    assert after.effective_runtimes() == {'runc': SPEC, 'nvidia': SPEC}
    higher = layout(tmp_path / 'b', {
        'config.toml': 'version = 2\nimports = ["%s/b/conf.d/*.toml"]\n' % tmp_path,
        'conf.d/toolkit.toml': 'version = 3\n' + V3_NVIDIA,
    }, V23)
    with pytest.raises(ConfigError, match='higher than 2 of the root config'):
        Analysis(higher, V23)


def test_drop_in_of_ours_on_containerd_2(tmp_path):
    ours = str(tmp_path / 'conf.d/99-zz-gpunet.toml')
    files = layout(tmp_path, {
        'config.toml': 'version = 3\nimports = ["%s/conf.d/*.toml"]\n' % tmp_path + V3_RUNC,
        'conf.d/99-nvidia.toml': 'version = 3\n' + V3_NVIDIA,
    }, V21, drop_in=ours)
    _analysis, plan, texts, after = wire(files, V21, SPEC, ['runc', 'nvidia'], drop_in=ours)
    assert list(texts) == [ours]
    assert plain(texts[ours]) == {'version': 3, 'plugins': {'io.containerd.cri.v1.runtime': {'containerd': {
        'runtimes': {'runc': {'base_runtime_spec': SPEC}, 'nvidia': {'base_runtime_spec': SPEC}}}}}}
    assert after.effective_runtimes() == {'runc': SPEC, 'nvidia': SPEC}


def test_drop_in_refusals(tmp_path):
    early = str(tmp_path / 'conf.d/00-gpunet.toml')
    files = layout(tmp_path, {
        'config.toml': 'version = 3\nimports = ["%s/conf.d/*.toml"]\n' % tmp_path,
        'conf.d/99-nvidia.toml': 'version = 3\n' + V3_NVIDIA.replace('runc.v2"\n', 'runc.v2"\n  base_runtime_spec = "/x"\n'),
    }, V21, drop_in=early)
    with pytest.raises(ConfigError, match='loads before'):
        wire(files, V21, SPEC, ['runc'], drop_in=early)
    with pytest.raises(ConfigError, match='not covered by the imports'):
        wire(files, V21, SPEC, ['runc'], drop_in='/elsewhere/x.toml')
    v2 = layout(tmp_path / 'one', {'config.toml': 'version = 2\n' + V2_RUNC}, V16)
    with pytest.raises(ConfigError, match='drop_in needs containerd 2.x'):
        wire(v2, V16, SPEC, ['runc'], drop_in=str(tmp_path / 'one/x.toml'))


def test_version_1_files():
    text = '[plugins.cri.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
    _a, _p, texts, after = one(text)
    assert plain(texts[MAIN])['plugins']['cri']['containerd']['runtimes']['runc']['base_runtime_spec'] == SPEC
    assert after.merged_version == 1


def test_parse_errors_name_the_file_and_line():
    with pytest.raises(ConfigError, match='/etc/containerd/config.toml is not TOML .* line 2'):
        ConfigFile(MAIN, 'version = 2\n[plugins\n')
    with pytest.raises(ConfigError, match='version must be a whole number'):
        ConfigFile(MAIN, 'version = "2"\n')
    with pytest.raises(ConfigError, match='imports must be a list'):
        ConfigFile(MAIN, 'imports = "conf.d/*.toml"\n')


def test_release_parsing():
    assert parse_release('containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3') == (1, 6, 20)
    assert parse_release('containerd containerd.io v2.2.3 77c84241c7cbdd9b4eca2591793e3d4f4317c590') == (2, 2, 3)
    with pytest.raises(ConfigError):
        parse_release('containerd: command not found')


def test_dump_reading():
    dumped = one(fixture('config-nvidia-toolkit-v2.toml'))[2][MAIN]
    assert dump_base_runtime_specs(dumped) == {'nvidia': SPEC, 'runc': SPEC}
    assert dump_base_runtime_specs(fixture('config-default-1.6.20.toml')) == {'runc': ''}
    assert dump_base_runtime_specs(fixture('config-v3-single-quotes.toml')) == {'runc': ''}


# ------------------------------------------------------------------ property-based

BARE = st.text(alphabet='abcdefghijklmnopqrstuvwxyz0123456789_-', min_size=1, max_size=8)
SCALARS = st.one_of(st.text(max_size=12), st.integers(-2 ** 40, 2 ** 40), st.booleans(),
                    st.lists(st.text(max_size=5), max_size=3))


@st.composite
def containerd_documents(draw):
    """Valid config.toml documents built with tomlkit: runtime tables as headers, inline tables or dotted keys,
    other keys of every kind, multi-line strings and arrays."""
    version = draw(st.sampled_from([2, 3]))
    key = 'io.containerd.grpc.v1.cri' if version == 2 else 'io.containerd.cri.v1.runtime'
    document = tomlkit.document()
    document.add('version', version)
    for name, value in draw(st.dictionaries(BARE.filter(lambda k: k not in ('version', 'imports', 'plugins')),
                                            SCALARS, max_size=3)).items():
        document.add(name, value)
    plugins = tomlkit.table(True)
    cri = tomlkit.table(True)
    containerd = tomlkit.table()
    containerd.add('default_runtime_name', 'runc')
    runtimes = tomlkit.table(True)
    names = draw(st.lists(BARE, min_size=1, max_size=4, unique=True))
    for name in names:
        style = draw(st.sampled_from(['table', 'inline']))
        values = draw(st.dictionaries(BARE.filter(lambda k: k != 'base_runtime_spec'), SCALARS, max_size=3))
        runtime = tomlkit.inline_table() if style == 'inline' else tomlkit.table()
        runtime.update(values)
        if draw(st.booleans()):
            runtime.add('base_runtime_spec', draw(st.text(max_size=10)))
        runtimes.add(name, runtime)
    containerd.add('runtimes', runtimes)
    cri.add('containerd', containerd)
    if draw(st.booleans()):
        cri.add('sandbox_image', tomlkit.string(draw(st.text(max_size=20)), multiline=True))
    plugins.add(key, cri)
    other = tomlkit.table()
    other.add('platforms', draw(st.lists(st.text(max_size=6), max_size=3)))
    plugins.add('io.containerd.runtime.v2.task', other)
    document.add('plugins', plugins)
    return version, key, names, tomlkit.dumps(document)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(containerd_documents())
def test_wiring_any_document(case):
    version, key, names, text = case
    release = V16 if version == 2 else V21
    before = plain(text)
    _analysis, _plan, texts, after = wire([ConfigFile(MAIN, text)], release, SPEC, ['runc'])
    result = plain(texts.get(MAIN, text))
    expected = copy_with_spec(before, key, set(names) | {'runc'})
    assert result == expected
    assert set(after.effective_runtimes()) == set(names) | {'runc'}
    assert set(after.effective_runtimes().values()) == {SPEC}


def copy_with_spec(document, key, names):
    expected = json.loads(json.dumps(document))
    runtimes = expected['plugins'][key]['containerd']['runtimes']
    for name in names:
        if name not in runtimes:
            runtimes[name] = {'runtime_type': 'io.containerd.runc.v2'}
        runtimes[name]['base_runtime_spec'] = SPEC
    return expected


@settings(deadline=None)
@given(st.text())
def test_config_file_on_any_text(text):
    try:
        config = ConfigFile(MAIN, text)
    except ConfigError:
        return
    assert isinstance(config.version, int) and isinstance(config.imports, list)


@settings(deadline=None)
@given(st.binary())
def test_task_list_and_limits_on_any_bytes(data):
    text = data.decode('utf-8', 'replace')  # as run_tool decodes ctr's output
    for parser in (parse_task_list, parse_memlock):
        try:
            parsed = parser(text)
        except ConfigError:
            continue
        if parser is parse_task_list:
            assert all(set(task) == {'id', 'pid', 'status'} and isinstance(task['pid'], int) for task in parsed)
        else:
            assert len(parsed) == 2 and all(0 <= value <= UNLIMITED for value in parsed)
    assert isinstance(container_labels(text), dict)


@settings(deadline=None)
@given(st.lists(st.tuples(st.text(alphabet='abc-_0123456789', min_size=1, max_size=12),
                          st.integers(0, 2 ** 31), st.sampled_from(['RUNNING', 'STOPPED', 'CREATED', 'PAUSED'])),
                max_size=5), st.sampled_from([' ', '    ', '\t']))
def test_task_list_columns(rows, gap):
    text = 'TASK%sPID%sSTATUS    \n' % (gap, gap) + ''.join('%s%s%d%s%s\n' % (r[0], gap, r[1], gap, r[2]) for r in rows)
    assert parse_task_list(text) == [{'id': r[0], 'pid': r[1], 'status': r[2]} for r in rows]


def test_task_list():
    text = 'TASK       PID      STATUS    \nrdma-a     4242     RUNNING\nold        17       STOPPED\n'
    assert parse_task_list(text) == [{'id': 'rdma-a', 'pid': 4242, 'status': 'RUNNING'},
                                     {'id': 'old', 'pid': 17, 'status': 'STOPPED'}]
    assert parse_task_list('TASK    PID    STATUS    \n') == []
    with pytest.raises(ConfigError, match='unrecognised'):
        parse_task_list('TASK PID STATUS\nbroken line\n')
    with pytest.raises(ConfigError, match='unrecognised'):
        parse_task_list('{"tasks": []}\n')


def test_memlock_from_proc_limits():
    limits = ('Limit                     Soft Limit           Hard Limit           Units     \n'
              'Max locked memory         8388608              8388608              bytes     \n')
    assert parse_memlock(limits) == (8388608, 8388608)
    assert parse_memlock(limits.replace('8388608              8388608', 'unlimited            unlimited')) == \
        (UNLIMITED, UNLIMITED)
    with pytest.raises(ConfigError):
        parse_memlock('Max open files  1024  1024  files\n')
    with pytest.raises(ConfigError):
        parse_memlock('Max locked memory  lots  1024  bytes\n')


def test_container_labels_of_any_shape():
    assert container_labels('{"Labels": {"io.kubernetes.pod.name": "p", "n": 1}}') == {'io.kubernetes.pod.name': 'p'}
    assert container_labels('[1, 2]') == {} and container_labels('not json') == {}
    assert container_labels('{"Labels": "x"}') == {} and container_labels('') == {}


def test_an_imports_directory_that_cannot_be_listed_is_refused_not_read_as_empty(tmp_path, monkeypatch):
    """containerd (root) lists it; read as empty, the drop-in of ours would be placed against a table another file of
    that directory replaces. root can list anything here, so the kernel's EACCES is simulated at the syscall."""
    from ansible_collections.gpunet.rdma.plugins.module_utils.runtime import _containerd
    conf_d = tmp_path / 'conf.d'
    conf_d.mkdir()
    (conf_d / '99-nvidia.toml').write_text('version = 2\n')
    real_listdir = os.listdir

    def listdir(path='.'):
        if os.path.abspath(path) == str(conf_d):
            raise PermissionError(13, 'Permission denied', path)
        return real_listdir(path)

    monkeypatch.setattr(os, 'listdir', listdir)
    with pytest.raises(_containerd.ConfigError) as error:
        _containerd.go_glob(str(conf_d / '*.toml'))
    assert str(error.value) == ('%s cannot be listed: permission denied, so the files an imports glob matches there '
                                'are unknown; make it readable by the user the module runs as (root)' % conf_d)
