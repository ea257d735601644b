# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""`ofed_info -s` and `ofed_info` outputs of MLNX_OFED and DOCA-OFED releases, recorded and published.

Every artifact of fixtures/public/ofed_info/ has its flavor and release written by hand from reading the file.
parse_ofed_info reads each one, and rdma_driver_facts reads each one through an ofed_info double: as the
answer to `-s`, and - for the outputs of `ofed_info` without `-s` - when `-s` prints nothing.
"""

from __future__ import annotations

import glob
import json
import os
import re

import pytest
import yaml

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpunet.rdma.plugins.module_utils.drivers._rdma_driver import parse_ofed_info
from ansible_collections.gpunet.rdma.plugins.modules import rdma_driver_facts

HERE = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'public', 'ofed_info')

# name: (flavor, release, printed by `ofed_info -s` (True) or `ofed_info` (False))
EXPECTED = {
    'daocloud-spiderpool-ofed-driver-full-head.txt': ('MLNX_OFED_LINUX', '23.10-1.1.9.0', False),
    'daocloud-spiderpool-ofed-driver-s.txt': ('MLNX_OFED_LINUX', '23.07-0.5.1.2', True),
    'openshift-docs-network-operator-doca-s.txt': ('OFED-internal', '24.07-0.6.1', True),
    'ucx-420-full-first-line.txt': ('MLNX_OFED_LINUX', '2.4-1.0.4', False),
    'ucx-8022-ppc64le-s.txt': ('OFED-internal', '4.9-2.2.4', True),
}


def artifacts():
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(HERE, '*')) if not p.endswith('.source.yml'))


def test_every_artifact_has_an_expectation_and_a_source():
    assert artifacts() == sorted(EXPECTED)
    for name in artifacts():
        with open(os.path.join(HERE, name + '.source.yml')) as handle:
            source = yaml.safe_load(handle)
        assert source.get('source') or (source.get('repository') and source.get('path')), name
        if source.get('commit'):
            assert re.match(r'^[0-9a-f]{40}$', source['commit']), name
        assert source.get('what') and source.get('excerpt'), name
    # releases of several generations and both flavors, both forms of the output
    assert set(e[0] for e in EXPECTED.values()) == {'MLNX_OFED_LINUX', 'OFED-internal'}
    assert set(e[2] for e in EXPECTED.values()) == {True, False}


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_parser_reads_the_artifact(name):
    with open(os.path.join(HERE, name)) as handle:
        assert parse_ofed_info(handle.read()) == {'flavor': EXPECTED[name][0], 'version': EXPECTED[name][1]}


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_driver_facts_read_the_artifact(name, tmp_path, capsys, monkeypatch):
    """-s answers with the artifact; an artifact of `ofed_info` without -s is the answer after -s printed nothing."""
    warnings = []
    monkeypatch.setattr(rdma_driver_facts.RdmaModule, 'warn', lambda self, text: warnings.append(text))
    flavor, release, short = EXPECTED[name]
    tool = tmp_path / 'ofed_info'
    artifact = os.path.abspath(os.path.join(HERE, name))
    if short:
        body = '[ "$*" = "-s" ] || { echo "usage" >&2; exit 1; }\ncat %s\n' % artifact
    else:
        body = '[ "$*" = "-s" ] && exit 0\n[ -z "$*" ] || exit 1\ncat %s\n' % artifact
    tool.write_text('#!/bin/sh\n' + body)
    tool.chmod(0o755)
    (tmp_path / 'sys' / 'module').mkdir(parents=True)
    args = {'kernel': '5.15.0-91-generic', 'modules_root': str(tmp_path / 'lib'), 'sysfs_root': str(tmp_path / 'sys'),
            'modprobe_dir': str(tmp_path / 'modprobe.d'), 'ofed_info_path': str(tool),
            'rdma_path': '/bin/false', '_ansible_check_mode': True}
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exit_info:
            rdma_driver_facts.main()
    result = json.loads(capsys.readouterr().out)
    assert exit_info.value.code == 0, result
    ofed = result['ansible_facts']['rdma_driver']['ofed']
    assert (ofed['installed'], ofed['flavor'], ofed['version']) == (True, flavor, release)
    assert len(warnings) == (0 if short else 1)
