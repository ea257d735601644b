# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The filters are named gpunet.rdma.<name> (issue 25): the rdma_ prefix repeated the collection's namespace.

The old names gpunet.rdma.rdma_<name> stay for one release as redirects with a deprecation in meta/runtime.yml
(ansible-core's plugin_routing, which its Jinja2 plugin loader follows for filters). This file checks that every old
name still reaches the same function and warns, through ansible-core's own loader and through a real
ansible-playbook, and that nothing in the repository still uses an old name.
"""

from __future__ import annotations

import glob
import importlib
import json
import os
import re
import subprocess
import sys

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
COLLECTIONS = os.path.join(REPO, '.build', 'collections')
FILTER_DIR = os.path.join(REPO, 'plugins', 'filter')
OLD_PREFIX = 'rdma_'
# The only files that may still spell an old name: the redirects, the changelog fragment announcing them, this test.
ALLOWED = {'meta/runtime.yml', 'changelogs/fragments/filter-names-without-prefix.yml',
           'tests/unit/plugins/filter/test_filter_names.py'}


def filter_names():
    """{name: (plugin file stem, function)} of every filter the collection defines."""
    found = {}
    for path in sorted(glob.glob(os.path.join(FILTER_DIR, '*.py'))):
        stem = os.path.splitext(os.path.basename(path))[0]
        module = importlib.import_module('ansible_collections.gpunet.rdma.plugins.filter.' + stem)
        for name, function in module.FilterModule().filters().items():
            assert name not in found, '%s is defined in %s.py and %s.py' % (name, found[name][0], stem)
            found[name] = (stem, function)
    return found


FILTERS = filter_names()


def load_yaml(relpath):
    with open(os.path.join(REPO, relpath), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def filter_routing():
    return (load_yaml('meta/runtime.yml').get('plugin_routing') or {}).get('filter') or {}


def test_no_filter_repeats_the_namespace_and_each_has_its_doc_file():
    assert len(FILTERS) >= 35
    prefixed = sorted(name for name in FILTERS if name.startswith(OLD_PREFIX))
    assert prefixed == [], 'filters named with the old prefix: %s' % ', '.join(prefixed)
    docs = sorted(os.path.splitext(os.path.basename(path))[0] for path in glob.glob(os.path.join(FILTER_DIR, '*.yml')))
    assert docs == sorted(FILTERS), 'plugins/filter/<name>.yml per filter, no other'
    for name in FILTERS:
        assert load_yaml('plugins/filter/%s.yml' % name)['DOCUMENTATION']['name'] == name


def test_every_old_name_redirects_with_a_deprecation_until_the_next_major_release():
    major = int(str(load_yaml('galaxy.yml')['version']).split('.', maxsplit=1)[0])
    routing = filter_routing()
    assert sorted(routing) == sorted(OLD_PREFIX + name for name in FILTERS)
    for name in FILTERS:
        entry = routing[OLD_PREFIX + name]
        assert entry['redirect'] == 'gpunet.rdma.' + name
        assert entry['deprecation']['removal_version'] == '%d.0.0' % (major + 1)
        assert 'gpunet.rdma.' + name in entry['deprecation']['warning_text']


def test_no_plugin_file_is_named_like_a_redirected_name():
    """ansible-core's Jinja2 loader reads a filter file through the plugin routing too: a file rdma_x.py beside a
    redirect of rdma_x is redirected away, and every filter in it disappears (old and new names alike)."""
    stems = set(stem for stem, dummy in FILTERS.values())
    assert not stems & set(filter_routing())


# Run in a fresh interpreter: the loader installs ansible-core's collection finder, which must not replace the
# collection modules the other tests of this process imported.
LOADER_SCRIPT = r'''
import json, sys
from ansible.plugins import loader
loader.init_plugin_loader([sys.argv[1]])
warned = []
loader.display.deprecated = lambda msg, *args, **kwargs: warned.append(msg)
result = {}
for name in json.loads(sys.argv[2]):
    del warned[:]
    old = loader.filter_loader.get('gpunet.rdma.rdma_' + name)
    new = loader.filter_loader.get('gpunet.rdma.' + name)
    result[name] = {'same': old is not None and new is not None and old.j2_function is new.j2_function,
                    'resolved': getattr(old, 'ansible_name', None), 'warned': list(warned)}
print(json.dumps(result))
'''


def test_ansible_cores_filter_loader_resolves_every_old_name_to_the_same_function_and_warns():
    done = subprocess.run([sys.executable, '-c', LOADER_SCRIPT, COLLECTIONS, json.dumps(sorted(FILTERS))],
                          capture_output=True, text=True, check=False, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    for name in FILTERS:
        assert result[name]['same'], (name, result[name])
        assert result[name]['resolved'] == 'gpunet.rdma.' + name, (name, result[name])
        assert [msg for msg in result[name]['warned']
                if 'gpunet.rdma.rdma_%s" has been deprecated' % name in msg], (name, result[name])


PLAYBOOK = [{'hosts': 'localhost', 'gather_facts': False, 'tasks': [
    {'ansible.builtin.set_fact': {
        'old': "{{ ['nvidia_peermem' | gpunet.rdma.rdma_modprobe_explain(modprobe), [] | gpunet.rdma.rdma_merge_tolerations"
               "(wanted), ports | gpunet.rdma.rdma_check(expectation=expected)] }}",
        'new': "{{ ['nvidia_peermem' | gpunet.rdma.modprobe_explain(modprobe), [] | gpunet.rdma.merge_tolerations(wanted),"
               " ports | gpunet.rdma.check(expectation=expected)] }}"}},
    {'ansible.builtin.assert': {'that': [
        'old == new', "'nvidia_peermem' in new[0]", 'new[1] == wanted', "new[2].verdict == 'pass'"]}}],
    'vars': {'modprobe': 'modprobe: FATAL: Module nvidia_peermem not found in directory /lib/modules/6.8.0',
             'wanted': [{'key': 'node.kubernetes.io/unschedulable', 'operator': 'Exists', 'effect': 'NoSchedule'}],
             'expected': {'min_active_ports': 1},
             'ports': [{'device': 'mlx5_0', 'port': 1, 'netdev': 'ibp12s0', 'state': 'ACTIVE',
                        'physical_state': 'LinkUp', 'link_layer': 'InfiniBand', 'rate_gbps': 200,
                        'pci_address': '0000:0c:00.0'}]}}]


def test_a_playbook_using_old_names_gets_the_same_results_and_deprecation_warnings(tmp_path):
    playbook = tmp_path / 'old-names.yml'
    playbook.write_text(yaml.safe_dump(PLAYBOOK))
    # Its own log: the session fails on deprecations in the shared one (conftest), and these are wanted here.
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'),
               ANSIBLE_LOG_PATH=str(tmp_path / 'ansible.log'), ANSIBLE_NOCOLOR='1', ANSIBLE_DEPRECATION_WARNINGS='1',
               ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,',
                           '-c', 'local', str(playbook)], env=env, capture_output=True, text=True, check=False,
                          timeout=300, cwd=str(tmp_path))
    output = ' '.join((done.stdout + done.stderr).split())
    assert done.returncode == 0, output[-4000:]
    assert 'All assertions passed' in output
    for name in ('modprobe_explain', 'merge_tolerations', 'check'):
        warning = 'Filter "gpunet.rdma.rdma_%s" has been deprecated. Use gpunet.rdma.%s instead.' % (name, name)
        assert warning in output, output[-4000:]


def old_name_uses(root=REPO):
    """``[(file, line)]`` of every use of an old filter name: its FQCN, a bare ``| rdma_x`` and a quoted
    ``'rdma_x'`` (a FilterModule key, a filter_args name, a test's lookup) - in every tracked or new file."""
    names = '|'.join(sorted(FILTERS, key=len, reverse=True))
    pattern = r"gpunet\.rdma\.rdma_(%s)\b|\|\s*rdma_(%s)\b|['\"]rdma_(%s)['\"]" % (names, names, names)
    done = subprocess.run(['git', 'grep', '--untracked', '-n', '-I', '-E', pattern], capture_output=True, text=True,
                          check=False, timeout=120, cwd=root)
    assert done.returncode in (0, 1), done.stderr  # 1: no match
    uses = []
    for line in done.stdout.splitlines():
        path, number, text = line.split(':', 2)
        if path not in ALLOWED and re.search(pattern, text):
            uses.append('%s:%s: %s' % (path, number, text.strip()[:120]))
    return uses


def test_no_file_uses_an_old_filter_name():
    uses = old_name_uses()
    assert uses == [], 'old filter names (use gpunet.rdma.<name>):\n' + '\n'.join(uses)


def test_the_search_finds_each_kind_of_old_use(tmp_path):
    """The oracle for the test above: in a repository of one new file, one use of each kind is found, line by line;
    the role gpunet.rdma.rdma_validate and its variable rdma_validate_pairs are not filters."""
    subprocess.run(['git', 'init', '-q', str(tmp_path)], check=True, timeout=60)
    (tmp_path / 'probe.yml').write_text(
        'a: "{{ x | gpunet.rdma.rdma_check }}"\n'
        'b: "{{ x | rdma_fleet_report }}"\n'
        "c: FILTERS['rdma_report_html']\n"
        'd: "{{ x | gpunet.rdma.check }}"\n'
        'e: gpunet.rdma.rdma_validate\n'
        'f: "{{ rdma_validate_pairs | length }}"\n')
    found = [use.split(':')[:2] for use in old_name_uses(str(tmp_path))]
    assert found == [['probe.yml', '1'], ['probe.yml', '2'], ['probe.yml', '3']]
