# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gpunet.rdma.manifests action through ansible-playbook: only what differs, all or nothing, links followed."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import textwrap

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))


def run(tmp_path, dest, files, *flags, **task):
    """The action in one task through ansible-playbook; ``task`` adds task keywords or a ``mode``."""
    mode = task.pop('mode', None)
    playbook = tmp_path / 'play.yml'
    playbook.write_text(textwrap.dedent('''\
        - hosts: node1
          gather_facts: false
          tasks:
            - name: Write the manifests
              gpunet.rdma.manifests:
                dest: %s
                files: %s%s
        ''') % (json.dumps(str(dest)), json.dumps(files), '' if mode is None else '\n        mode: %s' % json.dumps(mode))
        + ''.join('      %s: %s\n' % (key, json.dumps(value)) for key, value in task.items()))
    inventory = tmp_path / 'hosts.ini'
    inventory.write_text('node1 ansible_host=192.0.2.1 ansible_connection=ssh\n')  # never connected to
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.build', 'collections'),
               ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_STDOUT_CALLBACK='json', ANSIBLE_NOCOLOR='1')
    done = subprocess.run(['ansible-playbook', '-i', str(inventory), str(playbook)] + list(flags), env=env,
                          capture_output=True, text=True, check=False)
    output = json.loads(done.stdout[done.stdout.index('{'):])
    run.stats = output['stats']['node1']
    return done.returncode, output['plays'][0]['tasks'][0]['hosts']['node1']


FILES = [{'name': 'a.yaml', 'content': 'a: 1\n'}, {'name': 'b.yaml', 'content': 'b: 2\n'}]


def test_writes_then_changes_nothing(tmp_path):
    dest = tmp_path / 'out'
    rc, result = run(tmp_path, dest, FILES)
    assert rc == 0 and result['changed'] and result['written'] == ['a.yaml', 'b.yaml']
    assert (dest / 'a.yaml').read_text() == 'a: 1\n'
    assert stat.S_IMODE(os.stat(dest / 'b.yaml').st_mode) == 0o644
    rc, result = run(tmp_path, dest, FILES)
    assert rc == 0 and not result['changed'] and result['written'] == []


def test_check_mode_and_diff_write_nothing(tmp_path):
    dest = tmp_path / 'out'
    dest.mkdir()
    (dest / 'a.yaml').write_text('a: 0\n')
    rc, result = run(tmp_path, dest, FILES, '--check', '--diff')
    assert rc == 0 and result['changed'] and result['written'] == ['a.yaml', 'b.yaml']
    assert [d['before'] for d in result['diff']] == ['a: 0\n', '']
    assert (dest / 'a.yaml').read_text() == 'a: 0\n' and not (dest / 'b.yaml').exists()


def test_a_mode_change_alone_is_a_change(tmp_path):
    dest = tmp_path / 'out'
    run(tmp_path, dest, FILES)
    os.chmod(dest / 'a.yaml', 0o600)
    rc, result = run(tmp_path, dest, FILES)
    assert rc == 0 and result['written'] == ['a.yaml']
    assert stat.S_IMODE(os.stat(dest / 'a.yaml').st_mode) == 0o644


def test_a_symlinked_manifest_is_written_where_it_points(tmp_path):
    dest, checkout = tmp_path / 'out', tmp_path / 'gitops'
    dest.mkdir()
    checkout.mkdir()
    (checkout / 'a.yaml').write_text('old\n')
    os.symlink(checkout / 'a.yaml', dest / 'a.yaml')
    rc, _result = run(tmp_path, dest, FILES)
    assert rc == 0 and os.path.islink(dest / 'a.yaml')
    assert (checkout / 'a.yaml').read_text() == 'a: 1\n'


def test_a_failed_write_changes_no_file(tmp_path):
    """b.yaml links into a directory that does not exist: a.yaml, staged first, must stay as it was."""
    dest = tmp_path / 'out'
    dest.mkdir()
    (dest / 'a.yaml').write_text('a: 0\n')
    os.symlink(tmp_path / 'missing-dir' / 'b.yaml', dest / 'b.yaml')
    rc, result = run(tmp_path, dest, FILES)
    assert rc != 0 and result['failed']
    assert 'no manifest was changed' in result['msg'] and 'missing-dir' in result['msg']
    assert (dest / 'a.yaml').read_text() == 'a: 0\n'
    assert sorted(os.listdir(dest)) == ['a.yaml', 'b.yaml']  # no temporary left behind


def test_bad_names_and_dest_are_refused(tmp_path):
    rc, result = run(tmp_path, tmp_path / 'out', [{'name': '../escape.yaml', 'content': 'x'}])
    assert rc != 0 and 'is not a file name' in result['msg']
    rc, result = run(tmp_path, tmp_path / 'out', FILES + [{'name': 'a.yaml', 'content': 'y'}])
    assert rc != 0 and 'a.yaml given twice' in result['msg']
    (tmp_path / 'plain').write_text('')
    rc, result = run(tmp_path, tmp_path / 'plain', FILES)
    assert rc != 0 and 'is not a directory' in result['msg']


def test_modes_a_manifest_must_not_have_are_refused_and_nothing_is_written(tmp_path):
    """The one mode check (mode_problem): malformed and out-of-range values, setuid/setgid/sticky, world-writable."""
    bad = {'-1': 'neither an octal mode', '77777': 'neither an octal mode', '4755': 'setuid, setgid or sticky bit',
           '2644': 'setuid, setgid or sticky bit', '0666': 'world-writable', 'u=rw,o=rw': 'world-writable',
           'u=rw,g=r,o=r': 'is not an octal mode'}
    _rc, result = run(tmp_path, tmp_path / 'out', FILES, mode='{{ item }}', loop=sorted(bad), ignore_errors=True)
    results = result['results']
    assert [item['item'] for item in results] == sorted(bad)
    assert run.stats['ignored'] == 1 and run.stats['changed'] == 0
    for item in results:
        assert item['msg'].startswith('gpunet.rdma.manifests: mode: '), item['msg']
        assert bad[item['item']] in item['msg'] and 'Nothing was written.' in item['msg'], item['msg']
    assert not (tmp_path / 'out').exists()
