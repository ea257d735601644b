# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""os-release files, dpkg status databases and rpm queries recorded on real machines.

The ofed role decides what to install from rdma_driver_facts' ``os`` and ``packages``; these tests hold the parsers
to files and outputs as distributions write them (expectations written by hand from reading each artifact), and
run the module over them with the same paths and argv it uses on a host.
"""

from __future__ import annotations

import glob
import json
import os
import re

import pytest
import yaml

from ansible_collections.gpunet.rdma.plugins.module_utils.drivers._rdma_driver import (
    DriverError, parse_dpkg_status, parse_os_release, parse_rpm_query)
from ansible_collections.gpunet.rdma.plugins.modules import rdma_driver_facts

PUBLIC = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'public')

# artifact -> (id, id_like, version_id, pretty_name, family)
OS_RELEASE = {
    'debian-12-bookworm.os-release': ('debian', [], '12', 'Debian GNU/Linux 12 (bookworm)', 'Debian'),
    'rockylinux_8_3.json': ('rocky', ['rhel', 'fedora'], '8.3', 'Rocky Linux 8.3', 'RedHat'),
    'sles_15_6.json': ('sles', ['suse'], '15.6', 'SUSE Linux Enterprise Server 15 SP6', 'Suse'),
    'ubuntu_18.04.json': ('ubuntu', ['debian'], '18.04', 'Ubuntu 18.04.3 LTS', 'Debian'),
}

# artifact -> {package asked for: version the file says is installed, or None}
DPKG_STATUS = {
    'debian12_status_excerpt': {'libc6': '2.36-9+deb12u14', 'openssh-client': '1:9.2p1-2+deb12u6',
                                'base-files': '12.4+deb12u11', 'rdma-core': None, 'perftest': None},
    # removed but not purged: dpkg keeps the stanza and its Version, the files are gone
    'ubuntu_maverick_deinstall_stanza': {'virtualbox-3.0': None, 'libc6': None},
}

# artifact -> (exit status recorded with it, {package asked for: version or None})
RPM_QUERY = {
    'rpm418_installed_and_missing.txt': (1, {'rdma-core': '48.0-1.el9', 'perftest': None}),
}


def os_release_text(name):
    with open(os.path.join(PUBLIC, 'os_release', name)) as handle:
        text = handle.read()
    # ansible-core's distribution fixtures hold the recorded files under "input"
    return json.loads(text)['input']['/etc/os-release'] if name.endswith('.json') else text


def read(kind, name):
    with open(os.path.join(PUBLIC, kind, name)) as handle:
        return handle.read()


@pytest.mark.parametrize('kind, expected', [('os_release', OS_RELEASE), ('dpkg_status', DPKG_STATUS),
                                            ('rpm_query', RPM_QUERY)])
def test_every_artifact_has_an_expectation_and_a_source(kind, expected):
    found = sorted(os.path.basename(path) for path in glob.glob(os.path.join(PUBLIC, kind, '*'))
                   if not path.endswith('.source.yml'))
    assert found == sorted(expected)
    for name in found:
        with open(os.path.join(PUBLIC, kind, name + '.source.yml')) as handle:
            source = yaml.safe_load(handle)
        assert source.get('what') and source.get('excerpt'), name
        assert source.get('source') or source.get('repository'), name


@pytest.mark.parametrize('name', sorted(OS_RELEASE))
def test_os_release_is_read_as_written(name):
    parsed = parse_os_release(os_release_text(name))
    assert (parsed['id'], parsed['id_like'], parsed['version_id'], parsed['pretty_name'],
            parsed['family']) == OS_RELEASE[name]


@pytest.mark.parametrize('name', sorted(DPKG_STATUS))
def test_dpkg_status_names_installed_packages_only(name):
    expected = DPKG_STATUS[name]
    assert parse_dpkg_status(read('dpkg_status', name), list(expected)) == expected


def test_dpkg_status_read_with_windows_line_ends_and_no_trailing_newline():
    text = read('dpkg_status', 'debian12_status_excerpt').replace('\n', '\r\n').rstrip()
    assert parse_dpkg_status(text, ['openssh-client'])['openssh-client'] == '1:9.2p1-2+deb12u6'


@pytest.mark.parametrize('name', sorted(RPM_QUERY))
def test_rpm_query_reads_installed_and_missing_packages(name):
    rc, expected = RPM_QUERY[name]
    assert parse_rpm_query(read('rpm_query', name), list(expected), rc) == expected


@pytest.mark.parametrize('rc, names, message', [
    (0, ['rdma-core', 'perftest'], 'reported 1 missing package(s) but exited 0'),
    (1, ['rdma-core', 'perftest', 'infiniband-diags'], 'did not report on infiniband-diags'),
])
def test_rpm_query_that_does_not_add_up_is_refused(rc, names, message):
    with pytest.raises(DriverError, match=re.escape(message)):
        parse_rpm_query(read('rpm_query', 'rpm418_installed_and_missing.txt'), names, rc)


def test_rpm_error_lines_are_refused_not_read_as_missing():
    text = 'error: rpmdb: BDB0113 Thread/process 2893/140109 failed: BDB1507 Thread died in Berkeley DB library\n'
    with pytest.raises(DriverError, match='neither'):
        parse_rpm_query(text, ['rdma-core'], 1)


@pytest.fixture
def bare_host(tmp_path):
    (tmp_path / 'lib' / 'modules' / '6.1.0-13-amd64').mkdir(parents=True)
    (tmp_path / 'sys' / 'module').mkdir(parents=True)
    (tmp_path / 'modprobe.d').mkdir()
    return dict(kernel='6.1.0-13-amd64', modules_root=str(tmp_path / 'lib' / 'modules'),
                sysfs_root=str(tmp_path / 'sys'), modprobe_dir=str(tmp_path / 'modprobe.d'))


@pytest.mark.parametrize('name', sorted(OS_RELEASE))
def test_module_reports_the_distribution(name, bare_host, tmp_path, run_module):
    os_release = tmp_path / 'os-release'
    os_release.write_text(os_release_text(name))
    facts = run_module(rdma_driver_facts, dict(bare_host, os_release_path=str(os_release)), check_mode=True, code=0,
                       env={'PATH': tmp_path})[1]['ansible_facts']['rdma_driver']  # no ofed_info, rdma or rpm
    assert (facts['os']['id'], facts['os']['family']) == (OS_RELEASE[name][0], OS_RELEASE[name][4])
    assert (facts['package_manager'], facts['packages']) == (None, {})  # nothing asked, nothing read


def test_module_reads_packages_from_dpkg_status(bare_host, tmp_path, run_module):
    status = os.path.join(PUBLIC, 'dpkg_status', 'debian12_status_excerpt')
    facts = run_module(rdma_driver_facts, dict(bare_host, dpkg_status_path=status, packages=['libc6', 'rdma-core']),
                       check_mode=True, code=0, env={'PATH': tmp_path})[1]['ansible_facts']['rdma_driver']
    assert facts['package_manager'] == 'dpkg'
    assert facts['packages'] == {'libc6': '2.36-9+deb12u14', 'rdma-core': None}


def test_module_asks_rpm_once_with_the_recorded_argv(bare_host, tmp_path, run_module):
    """Without a dpkg database the module runs rpm -q once; the double refuses any other argv and exits 1
    (one package missing) as the recording did."""
    recorded = os.path.abspath(os.path.join(PUBLIC, 'rpm_query', 'rpm418_installed_and_missing.txt'))
    rpm = tmp_path / 'rpm'
    rpm.write_text('#!/bin/sh\n[ "$LC_ALL" = C ] || exit 9\n'
                   '[ "$*" = "-q --qf %%{NAME} %%{VERSION}-%%{RELEASE}\\n rdma-core perftest" ] || '
                   '{ echo "rpm: unexpected argv $*" >&2; exit 8; }\n/bin/cat %s\nexit 1\n' % recorded)
    rpm.chmod(0o755)
    (tmp_path / 'rpm.calls').write_text('')
    facts = run_module(rdma_driver_facts, dict(bare_host, dpkg_status_path=str(tmp_path / 'no-dpkg'),
                                               packages=['rdma-core', 'perftest']),
                       check_mode=True, code=0, env={'PATH': tmp_path})[1]['ansible_facts']['rdma_driver']
    assert facts["package_manager"] == "rpm", facts
    assert facts['packages'] == {'rdma-core': '48.0-1.el9', 'perftest': None}


def test_module_fails_when_rpm_does_not_answer(bare_host, tmp_path, run_module):
    rpm = tmp_path / 'rpm'
    rpm.write_text('#!/bin/sh\necho "error: cannot open Packages database in /var/lib/rpm" >&2\nexit 1\n')
    rpm.chmod(0o755)
    code, result = run_module(rdma_driver_facts, dict(bare_host, dpkg_status_path=str(tmp_path / 'no-dpkg'),
                                                      packages=['rdma-core']), check_mode=True, env={'PATH': tmp_path})
    assert code == 1
    assert 'did not report on rdma-core' in result['msg'] and 'cannot open Packages database' in result['msg']
