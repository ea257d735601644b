# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import os

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpunet.rdma.plugins.module_utils.drivers._rdma_driver import (
    parse_dpkg_status, parse_os_release, parse_rpm_query,
    DriverError,
    check_kernel_release,
    check_module_names,
    explain_modprobe_failure,
    kernel_mismatch_message,
    kernel_modules,
    kernels_with_ofed,
    loaded_module,
    memory_peers,
    module_origin,
    netns_mode_from_option,
    ofed_state,
    parse_modprobe_option,
    parse_modules_dep,
    parse_ofed_info,
    parse_rdma_system,
    persisted_option,
    read_modules_dep,
)

PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'driver')


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


@pytest.mark.parametrize('text, flavor, version', [
    ('MLNX_OFED_LINUX-23.10-1.1.9.0:\n', 'MLNX_OFED_LINUX', '23.10-1.1.9.0'),
    ('OFED-internal-24.07-0.3.5.0.110:\n', 'OFED-internal', '24.07-0.3.5.0.110'),
    ('\nMLNX_OFED_LINUX-4.9-7.1.0.0:', 'MLNX_OFED_LINUX', '4.9-7.1.0.0'),
    # ofed_info without -s: the release line, then the components
    ('MLNX_OFED_LINUX-24.10-2.1.8.0 (OFED-24.10-2.1.8):\n\nclusterkit:\n/sw/release/x.src.rpm\n',
     'MLNX_OFED_LINUX', '24.10-2.1.8.0'),
    ('  OFED-internal-25.04-0.6.1.0 (OFED-25.04-0.6.1):  \n', 'OFED-internal', '25.04-0.6.1.0'),
])
def test_ofed_info_releases(text, flavor, version):
    assert parse_ofed_info(text) == {'flavor': flavor, 'version': version}


@pytest.mark.parametrize('text', ['', '\n  \n'])
def test_ofed_info_without_output(text):
    assert parse_ofed_info(text) is None


@pytest.mark.parametrize('text', ['ofed_info: command not found', 'rdma-core-44.0', '23.10-1.1.9.0:',
                                  'MLNX_OFED_LINUX-23.10:', '{"version": "23.10"}'])
def test_ofed_info_of_another_shape_is_quoted(text):
    with pytest.raises(DriverError) as error:
        parse_ofed_info(text + '\n')
    assert repr(text) in str(error.value) and 'names no OFED release' in str(error.value)


@pytest.mark.parametrize('kernel', ['5.15.0-91-generic', '6.1.0-18-amd64', '4.18.0-513.24.1.el8_9.x86_64',
                                    '6.8.0-1008+rt~jammy'])
def test_kernel_release_accepted(kernel):
    assert check_kernel_release(kernel) == kernel


@pytest.mark.parametrize('kernel', ['', '..', '../../etc', '5.15 generic', 'a/b'])
def test_kernel_release_refused(kernel):
    with pytest.raises(DriverError, match='is not a kernel release'):
        check_kernel_release(kernel)


def test_module_names():
    assert check_module_names(['nvidia_peermem', 'nv-peer-mem']) == ['nvidia_peermem', 'nv-peer-mem']
    with pytest.raises(DriverError, match="'gdr drv', '../x' are not a kernel module name"):
        check_module_names(['gdrdrv', 'gdr drv', '../x'])


def test_modules_dep_mofed_is_out_of_tree():
    table = parse_modules_dep(fixture('modules.dep-ubuntu-mofed'))
    assert table['mlx5_core'] == 'updates/dkms/mlx5_core.ko'
    assert table['nvidia_peermem'] == 'updates/dkms/nvidia-peermem.ko'  # dash in the file name
    assert module_origin(table['mlx5_ib']) == 'ofed'
    assert 'rdma_cm' not in table  # only listed as a dependency


def test_modules_dep_inbox_compressed():
    table = parse_modules_dep(fixture('modules.dep-debian-inbox'))
    assert table['mlx5_core'].endswith('mlx5_core.ko.xz')
    assert module_origin(table['rdma_ucm']) == 'inbox'


def test_modules_dep_old_absolute_paths():
    table = parse_modules_dep('/lib/modules/3.10.0-1160.el7.x86_64/extra/mlnx-ofa_kernel/drivers/net/ethernet/'
                              'mellanox/mlx5/core/mlx5_core.ko: /lib/modules/3.10.0-1160.el7.x86_64/extra/x.ko\n')
    assert table['mlx5_core'].startswith('extra/mlnx-ofa_kernel/')
    assert module_origin(table['mlx5_core']) == 'ofed'


def test_module_origin_other_and_missing():
    assert module_origin('misc/vendor.ko') == 'other'
    assert module_origin(None) is None


def _kernel_tree(root, kernel, dep):
    path = root / 'lib' / 'modules' / kernel
    path.mkdir(parents=True)
    (path / 'modules.dep').write_text(dep)
    return str(root / 'lib' / 'modules')


def _sys_module(root, name, version=None, initstate='live'):
    base = root / 'sys' / 'module' / name
    base.mkdir(parents=True)
    if version is not None:
        (base / 'version').write_text(version + '\n')
    if initstate is not None:
        (base / 'initstate').write_text(initstate + '\n')


def test_kernel_mismatch_after_upgrade(tmp_path):
    modules_root = _kernel_tree(tmp_path, '5.15.0-91-generic', fixture('modules.dep-ubuntu-mofed'))
    _kernel_tree(tmp_path, '5.15.0-105-generic', fixture('modules.dep-debian-inbox'))
    modules, found = kernel_modules(modules_root, '5.15.0-105-generic', ['mlx5_core'])
    assert found and modules['mlx5_core']['origin'] == 'inbox'
    state = ofed_state({'flavor': 'MLNX_OFED_LINUX', 'version': '24.01-0.3.3.1'}, '5.15.0-105-generic', modules,
                       kernels_with_ofed(modules_root), str(tmp_path / 'sys'))
    assert state['kernel_mismatch'] is True and state['kernels'] == ['5.15.0-91-generic']
    assert state['restart_pending'] is False  # nothing to restart into
    message = state['remedy']
    assert message == kernel_mismatch_message(state, '5.15.0-105-generic')
    assert '5.15.0-91-generic' in message and '5.15.0-105-generic' in message
    assert 'ofed_add_kernel_support: true' in message and '--add-kernel-support' in message


def test_restart_pending_until_the_installed_release_is_loaded(tmp_path):
    modules_root = _kernel_tree(tmp_path, 'k1', fixture('modules.dep-ubuntu-mofed'))
    modules, _found = kernel_modules(modules_root, 'k1', ['mlx5_core'])
    ofed = {'flavor': 'MLNX_OFED_LINUX', 'version': '24.01-0.3.3.1'}
    sysfs = str(tmp_path / 'sys')
    state = ofed_state(ofed, 'k1', modules, ['k1'], sysfs)
    assert state['kernel_mismatch'] is False and state['restart_pending'] is True
    _sys_module(tmp_path, 'mlx5_core', version='23.10-1.1.9')
    assert ofed_state(ofed, 'k1', modules, ['k1'], sysfs)['restart_pending'] is True  # the old release runs
    (tmp_path / 'sys' / 'module' / 'mlx5_core' / 'version').write_text('24.01-0.3.3\n')
    state = ofed_state(ofed, 'k1', modules, ['k1'], sysfs)
    assert state['restart_pending'] is False and state['loaded_version'] == '24.01-0.3.3'


def test_no_ofed_is_never_a_mismatch(tmp_path):
    state = ofed_state(None, 'k1', {}, [], str(tmp_path))
    assert state == {'installed': False, 'flavor': None, 'version': None, 'kernels': [], 'kernel_mismatch': False,
                     'loaded_version': None, 'restart_pending': False, 'remedy': None}


def test_missing_modules_dep(tmp_path):
    modules, found = kernel_modules(str(tmp_path / 'none'), 'k1', ['mlx5_core'])
    assert found is False and modules == {'mlx5_core': {'installed': False, 'path': None, 'origin': None}}
    assert kernels_with_ofed(str(tmp_path / 'none')) == []


def test_loaded_builtin_and_absent(tmp_path):
    _sys_module(tmp_path, 'ib_core', initstate=None)  # built in: no initstate
    _sys_module(tmp_path, 'nvidia_peermem', version='560.35.03')
    sysfs = str(tmp_path / 'sys')
    assert loaded_module(sysfs, 'ib_core') == {'loaded': True, 'builtin': True, 'version': None}
    assert loaded_module(sysfs, 'nvidia_peermem') == {'loaded': True, 'builtin': False, 'version': '560.35.03'}
    assert loaded_module(sysfs, 'gdrdrv') == {'loaded': False, 'builtin': False, 'version': None}


def test_memory_peers(tmp_path):
    base = tmp_path / 'kernel' / 'mm' / 'memory_peers' / 'nv_mem'
    base.mkdir(parents=True)
    (base / 'version').write_text('1.3\n')
    assert memory_peers(str(tmp_path)) == {'nv_mem': '1.3'}
    assert memory_peers(str(tmp_path / 'nothing')) == {}


def test_rdma_system_recorded_in_seed_001(recorded):
    assert parse_rdma_system(recorded('seed001-rdma-system.txt')) == {'netns': 'shared', 'copy_on_fork': True}


def test_rdma_system_older_iproute2_and_exclusive():
    assert parse_rdma_system('netns exclusive\n') == {'netns': 'exclusive', 'copy_on_fork': None}


def test_rdma_system_garbage():
    with pytest.raises(DriverError, match='no netns mode'):
        parse_rdma_system('Failed to open NETLINK_RDMA socket')


def test_rdma_system_of_iproute2_6():
    assert parse_rdma_system('netns shared privileged-qkey off monitor off copy-on-fork on\n') == {
        'netns': 'shared', 'copy_on_fork': True}


def test_modprobe_option_last_wins_and_comments():
    text = ('# options ib_core netns_mode=1\n'
            'options ib_core netns_mode=1\n'
            'options mlx5_core prof_sel=2\n'
            'options ib-core foo=bar netns_mode=0  # exclusive for SR-IOV\n')
    assert parse_modprobe_option(text, 'ib_core', 'netns_mode') == '0'
    assert parse_modprobe_option(text, 'ib_core', 'missing') is None
    assert netns_mode_from_option('0') == 'exclusive' and netns_mode_from_option('1') == 'shared'
    assert netns_mode_from_option('2') is None


def test_modprobe_option_continuation_quotes_and_dashes():
    text = 'options ib_core \\\n    netns_mode="0"\noptions ib-core netns-mode=1 other=2\n'
    assert parse_modprobe_option(text, 'ib_core', 'netns_mode') == '1'
    assert parse_modprobe_option('options ib_core \\\n netns_mode="0"\n', 'ib_core', 'netns_mode') == '"0"'
    assert netns_mode_from_option('"0"') == 'exclusive'


def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)


def test_persisted_option_reads_as_libkmod_does(tmp_path):
    """*.conf and *.alias in name order, the last setting wins; dot files and other names do not count."""
    _write(tmp_path / 'a-rdma.conf', 'options ib_core netns_mode=1\n')
    _write(tmp_path / 'b-old.alias', 'options ib_core netns_mode=0\n')
    _write(tmp_path / '.hidden.conf', 'options ib_core netns_mode=1\n')
    _write(tmp_path / 'z.conf.disabled', 'options ib_core netns_mode=1\n')
    assert persisted_option(str(tmp_path), 'ib_core', 'netns_mode') == ('0', str(tmp_path / 'b-old.alias'))


def test_persisted_option_skips_what_modprobe_skips_with_warnings(tmp_path, monkeypatch):
    (tmp_path / 'virtualbox-dkms.conf').mkdir()
    _write(tmp_path / 'locked.conf', 'options ib_core netns_mode=0\n')
    _write(tmp_path / 'odd.conf', b'# caf\xe9\noptions ib_core netns_mode=1\n')
    real_open = open

    def fake_open(path, *args, **kwargs):
        if str(path).endswith('locked.conf'):
            raise PermissionError(13, 'Permission denied', str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr('builtins.open', fake_open)
    warnings = []
    value, found_in = persisted_option(str(tmp_path), 'ib_core', 'netns_mode', warnings.append)
    assert (value, found_in) == ('1', str(tmp_path / 'odd.conf'))
    assert len(warnings) == 3
    assert 'locked.conf cannot be read: permission denied, skipped as modprobe skips it' in warnings[0]
    assert 'odd.conf is not UTF-8 text (byte 0xe9 at offset 5)' in warnings[1]
    assert 'virtualbox-dkms.conf is a directory, skipped' in warnings[2]
    assert 'Directories inside directories are not supported' in warnings[2]


def test_persisted_option_directory(tmp_path):
    assert persisted_option(str(tmp_path / 'missing'), 'ib_core', 'netns_mode') == (None, None)
    _write(tmp_path / 'file', '')
    with pytest.raises(DriverError, match='is not a directory; point it at the modprobe configuration directory'):
        persisted_option(str(tmp_path / 'file'), 'ib_core', 'netns_mode')


def test_modules_dep_unreadable_is_an_error_and_odd_bytes_a_warning(tmp_path):
    (tmp_path / 'k1' / 'modules.dep').mkdir(parents=True)
    with pytest.raises(DriverError, match=r'k1/modules.dep is a directory, not a file; depmod writes it: run '
                                          r'`depmod -a k1`'):
        read_modules_dep(str(tmp_path), 'k1')
    _write(tmp_path / 'k2' / 'modules.dep', b'updates/dkms/mlx5_core.ko:\nkernel/\xff.ko:\n')
    warnings = []
    modules, found = kernel_modules(str(tmp_path), 'k2', ['mlx5_core'], warnings.append)
    assert found and modules['mlx5_core']['origin'] == 'ofed'
    assert 'modules.dep is not UTF-8 text (byte 0xff at offset 34)' in warnings[0] and 'depmod -a k2' in warnings[0]
    warnings = []
    assert kernels_with_ofed(str(tmp_path), warnings.append) == ['k2']
    assert any('kernel k1 left out of the OFED kernels' in w for w in warnings)


@PROPERTY
@given(st.text(max_size=300))
def test_property_ofed_info_any_text(text):
    try:
        result = parse_ofed_info(text)
    except DriverError:
        return
    assert result is None or (result['flavor'] and result['version'][0].isdigit())


# Lines ofed_info prints (-s, and without it the release line, then components), among which any bytes fall.
OFED_INFO_LINES = [b'MLNX_OFED_LINUX-23.10-1.1.9.0:', b'OFED-internal-24.07-0.3.5.0.110:', b'MLNX_OFED_LINUX-4.9-7.1.0.0',
                   b'MLNX_OFED_LINUX-24.10-2.1.8.0 (OFED-24.10-2.1.8):', b'  OFED-internal-25.04-0.6.1.0 (OFED-25.04):  ',
                   b'clusterkit:', b'/sw/release/x.src.rpm', b'', b' \t']


def _ofed_info_outcome(text):
    try:
        return 'ok', parse_ofed_info(text)
    except DriverError as exc:
        return 'DriverError', str(exc)


@PROPERTY
@given(st.lists(st.sampled_from(OFED_INFO_LINES) | st.binary(max_size=30), max_size=6).map(b'\n'.join))
def test_property_ofed_info_any_bytes_as_the_module_decodes_them(data):
    """The first line that is not blank decides, and a release read back from what it names is the same release."""
    text = data.decode('utf-8', 'replace')
    first = next((line.strip() for line in text.splitlines() if line.strip()), None)
    outcome = _ofed_info_outcome(text)
    if first is None:
        assert outcome == ('ok', None)
        return
    assert outcome == _ofed_info_outcome(first)
    if outcome[0] == 'DriverError':
        assert 'names no OFED release' in outcome[1]
        return
    release = outcome[1]
    assert sorted(release) == ['flavor', 'version'] and release['version'][0].isdigit()
    assert first.startswith('%s-%s' % (release['flavor'], release['version']))
    assert parse_ofed_info('%s-%s:\n' % (release['flavor'], release['version'])) == release  # round trip


@PROPERTY
@given(st.text(max_size=400))
def test_property_modules_dep_any_text(text):
    table = parse_modules_dep(text)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in table.items())
    assert all(module_origin(path) in ('ofed', 'inbox', 'other') for path in table.values())


@PROPERTY
@given(st.text(max_size=200))
def test_property_rdma_system_any_text(text):
    try:
        result = parse_rdma_system(text)
    except DriverError:
        return
    assert result['netns'] in ('shared', 'exclusive') and result['copy_on_fork'] in (None, True, False)


@PROPERTY
@given(st.text(max_size=300), st.sampled_from(['ib_core', 'ib-core', 'mlx5_core']))
def test_property_modprobe_option_any_text(text, module):
    value = parse_modprobe_option(text, module, 'netns_mode')
    assert value is None or isinstance(value, str)
    assert netns_mode_from_option(value) in (None, 'shared', 'exclusive')


@PROPERTY
@given(st.binary(max_size=300))
def test_property_modprobe_dir_file_of_any_bytes(tmp_path_factory, data):
    directory = tmp_path_factory.mktemp('modprobe.d')
    (directory / 'rdma.conf').write_bytes(data)
    warnings = []
    value, found_in = persisted_option(str(directory), 'ib_core', 'netns_mode', warnings.append)
    assert value is None or found_in == str(directory / 'rdma.conf')


@pytest.mark.parametrize('stderr', [
    "modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument",
    'nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -2)',
])
def test_modprobe_failure_symbol_mismatch(stderr):
    message = explain_modprobe_failure('nvidia_peermem', stderr)
    assert 'different RDMA core' in message and 'useHostMofed' in message
    assert 'Reinstall or rebuild the NVIDIA driver' in message and stderr in message


def test_modprobe_failure_not_installed():
    message = explain_modprobe_failure(
        'gdrdrv', 'modprobe: FATAL: Module gdrdrv not found in directory /lib/modules/6.1.0-18-amd64')
    assert 'not installed for the running kernel' in message and 'gdrcopy' in message


def test_modprobe_failure_without_module_support():
    message = explain_modprobe_failure('nvidia_peermem', "[Errno 2] No such file or directory: '/proc/modules'")
    assert 'no loadable module support, or this is a container' in message
    assert 'gpudirect_load_modules: false' in message


def test_modprobe_failure_other():
    assert explain_modprobe_failure('gdrdrv', 'Operation not permitted').endswith('See `dmesg | tail` on the node.')


@PROPERTY
@given(st.text(max_size=300))
def test_property_os_release_any_text(text):
    result = parse_os_release(text)
    assert result['family'] in (None, 'Debian', 'RedHat', 'Suse')
    assert isinstance(result['id_like'], list)


@PROPERTY
@given(st.dictionaries(st.sampled_from(['ID', 'ID_LIKE', 'VERSION_ID', 'NAME']),
                       st.text(st.characters(blacklist_characters='\n\r"\'\\\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029'),
                               max_size=20)),
       st.sampled_from(['"', "'", '']))
def test_property_os_release_values_round_trip(values, quote):
    text = ''.join('%s=%s%s%s\n' % (key, quote, value, quote) for key, value in values.items())
    expected = values.get('ID', '')
    if not quote:  # unquoted values lose surrounding blanks, as systemd's parser drops them
        expected = expected.strip()
    assert parse_os_release(text)['id'] == (expected or None)


@PROPERTY
@given(st.lists(st.tuples(st.sampled_from(['rdma-core', 'perftest', 'libc6']),
                          st.sampled_from(['install ok installed', 'deinstall ok config-files', 'hold ok installed',
                                           'install ok half-configured', 'purge ok not-installed']),
                          st.from_regex(r'\A[0-9][0-9a-z.+~:-]{0,10}\Z')), max_size=6))
def test_property_dpkg_status_installed_means_an_installed_stanza(stanzas):
    text = '\n\n'.join('Package: %s\nStatus: %s\nVersion: %s' % stanza for stanza in stanzas)
    result = parse_dpkg_status(text, ['rdma-core', 'perftest', 'libc6'])
    for name, version in result.items():
        installed = [v for n, status, v in stanzas if n == name and status.endswith(' installed')]
        assert version == (installed[0] if installed else None)


@PROPERTY
@given(st.text(max_size=200), st.integers(0, 3))
def test_property_rpm_query_any_text(text, rc):
    try:
        result = parse_rpm_query(text, ['rdma-core', 'perftest'], rc)
    except DriverError:
        return
    assert set(result) == {'rdma-core', 'perftest'}
    assert sum(1 for v in result.values() if v is None) <= rc
