# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every role entry point that a playbook, role, molecule scenario, lab or test file runs (include_role /
import_role with tasks_from) is declared in that role's meta/argument_specs.yml, so that ansible-doc and
docs/reference document it."""

from __future__ import annotations

import os
import re

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
TREES = ('roles', 'playbooks', 'molecule', 'tests', 'lab', 'awx')
NAMESPACE = 'gpunet.rdma.'
ROLE_ACTIONS = frozenset(prefix + verb for prefix in ('', 'ansible.builtin.', 'ansible.legacy.')
                         for verb in ('include_role', 'import_role'))


class _AnyTagLoader(yaml.SafeLoader):
    """SafeLoader that reads Ansible's tags (!unsafe, !vault) as the plain node under them."""


def _untagged(loader, _tag_suffix, node):
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


_AnyTagLoader.add_multi_constructor('!', _untagged)


def _yaml_files(root):
    """The YAML files of the trees that mention tasks_from (the rest, such as the CRD copies, is not parsed)."""
    for tree in TREES:
        for directory, dirs, files in os.walk(os.path.join(root, tree)):
            rel_dir = os.path.relpath(directory, root)
            # caches, virtualenvs and ansible-test's output are not part of the checkout
            dirs[:] = sorted(d for d in dirs if not d.startswith('.') and d != '__pycache__'
                             and os.path.join(rel_dir, d) != os.path.join('tests', 'output'))
            for name in sorted(files):
                if name.endswith(('.yml', '.yaml')):
                    path = os.path.join(directory, name)
                    with open(path, encoding='utf-8') as handle:
                        text = handle.read()
                    if 'tasks_from' in text:
                        yield os.path.relpath(path, root), text


def _role_args(value):
    """The arguments of include_role / import_role: a mapping, or the free form `name=x tasks_from=y`."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        return dict(re.findall(r'(\w+)=(\S+)', value))
    return {}


def _walk(node, parent_key, found, strays):
    if isinstance(node, dict):
        if 'tasks_from' in node and parent_key not in ROLE_ACTIONS:
            strays.append(node)
        for key, value in node.items():
            if key in ROLE_ACTIONS:
                args = _role_args(value)
                if 'tasks_from' in args:
                    found.append(args)
            _walk(value, key, found, strays)
    elif isinstance(node, list):
        for item in node:
            _walk(item, parent_key, found, strays)


def usages(root):
    """(file, role, entry point) of every tasks_from in the trees, and the problems that keep one from being checked."""
    result, problems = [], []
    for rel, text in _yaml_files(root):
        try:
            documents = list(yaml.load_all(text, Loader=_AnyTagLoader))  # a SafeLoader
        except yaml.YAMLError as exc:
            problems.append('%s: not YAML (%s)' % (rel, str(exc).splitlines()[0]))
            continue
        found, strays = [], []
        _walk(documents, None, found, strays)
        for stray in strays:
            problems.append('%s: tasks_from outside include_role/import_role: %r' % (rel, stray))
        for args in found:
            name, tasks_from = str(args.get('name', '')), str(args['tasks_from'])
            if '{{' in name or '{{' in tasks_from:
                problems.append('%s: templated role or tasks_from (%s, %s): write it out so that it can be checked'
                                % (rel, name, tasks_from))
                continue
            if name.startswith(NAMESPACE):
                role = name[len(NAMESPACE):]
            elif '.' not in name and '/' not in name:
                role = name
            else:
                continue  # another collection's role
            # docs/gen_reference.py's convention: entry point X is run as tasks_from: X.yml
            result.append((rel, role, os.path.splitext(os.path.basename(tasks_from))[0]))
    return result, problems


def declared(root, role):
    path = os.path.join(root, 'roles', role, 'meta', 'argument_specs.yml')
    if not os.path.isfile(path):
        return set()
    with open(path, encoding='utf-8') as handle:
        return set((yaml.safe_load(handle) or {}).get('argument_specs') or {})


def undeclared(root):
    found, problems = usages(root)
    for rel, role, entry in found:
        if not os.path.isdir(os.path.join(root, 'roles', role)):
            problems.append('%s: role %s is not a role of the collection' % (rel, role))
        elif entry not in declared(root, role):
            problems.append('%s: roles/%s entry point %s is not declared in roles/%s/meta/argument_specs.yml'
                            % (rel, role, entry, role))
    return found, sorted(problems)


def test_every_entry_point_run_is_declared():
    found, problems = undeclared(REPO)
    assert not problems, '\n'.join(problems)
    entries = set((role, entry) for _rel, role, entry in found)
    # the scan sees the entry points of site.yml (a scan that finds nothing passes nothing)
    assert {('rdma_discovery', 'facts'), ('rdma_discovery', 'report'), ('rdma_discovery', 'fail'),
            ('rollout', 'guard'), ('sriov_vfs', 'batch')} <= entries, sorted(entries)


ORACLE_SPECS = '''---
argument_specs:
  main:
    short_description: Main
  ready:
    short_description: Ready
'''

ORACLE_PLAYBOOK = '''---
- name: Oracle
  hosts: all
  tasks:
    - name: Declared, with the extension
      ansible.builtin.include_role:
        name: gpunet.rdma.alpha
        tasks_from: ready.yml
    - name: Declared, short role name, no extension
      import_role:
        name: alpha
        tasks_from: ready
    - name: Not declared
      ansible.builtin.import_role:
        name: gpunet.rdma.alpha
        tasks_from: missing.yml
    - name: Free form, not declared
      ansible.builtin.include_role: name=gpunet.rdma.alpha tasks_from=gone.yml
    - name: Another collection's role is not ours to check
      ansible.builtin.include_role:
        name: other.collection.role
        tasks_from: anything.yml
    - name: In a block, a role without argument specs
      block:
        - name: Beta
          ansible.legacy.include_role:
            name: gpunet.rdma.beta
            tasks_from: main.yml
'''

ORACLE_MOLECULE = '''---
- name: Converge
  hosts: all
  vars:
    secret: !unsafe '{{ not templated }}'
  tasks:
    - name: Looped
      ansible.builtin.include_role:
        name: gpunet.rdma.alpha
        tasks_from: "{{ step }}"
      loop: [ready.yml]
      loop_control:
        loop_var: step
    - name: Unknown role
      ansible.builtin.include_role:
        name: gamma
        tasks_from: ready.yml
    - name: A misplaced tasks_from
      ansible.builtin.debug:
        tasks_from: ready.yml
'''


def test_oracle_on_a_small_tree(tmp_path):
    (tmp_path / 'roles' / 'alpha' / 'meta').mkdir(parents=True)
    (tmp_path / 'roles' / 'alpha' / 'meta' / 'argument_specs.yml').write_text(ORACLE_SPECS)
    (tmp_path / 'roles' / 'beta' / 'tasks').mkdir(parents=True)
    (tmp_path / 'roles' / 'beta' / 'tasks' / 'main.yml').write_text('---\n[]\n')
    (tmp_path / 'playbooks').mkdir()
    (tmp_path / 'playbooks' / 'play.yml').write_text(ORACLE_PLAYBOOK)
    (tmp_path / 'molecule' / 'alpha').mkdir(parents=True)
    (tmp_path / 'molecule' / 'alpha' / 'converge.yml').write_text(ORACLE_MOLECULE)
    # not scanned: ansible-test's output and a hidden directory
    for skipped in ('tests/output', 'lab/.cache'):
        (tmp_path / skipped).mkdir(parents=True)
        (tmp_path / skipped / 'x.yml').write_text(ORACLE_MOLECULE)
    (tmp_path / 'lab' / 'broken.yml').write_text('tasks_from: [\n')

    found, problems = undeclared(str(tmp_path))

    assert sorted(found) == [
        ('molecule/alpha/converge.yml', 'gamma', 'ready'),
        ('playbooks/play.yml', 'alpha', 'gone'),
        ('playbooks/play.yml', 'alpha', 'missing'),
        ('playbooks/play.yml', 'alpha', 'ready'),
        ('playbooks/play.yml', 'alpha', 'ready'),
        ('playbooks/play.yml', 'beta', 'main'),
    ]
    assert problems == [
        "lab/broken.yml: not YAML (while parsing a flow node)",
        "molecule/alpha/converge.yml: role gamma is not a role of the collection",
        "molecule/alpha/converge.yml: tasks_from outside include_role/import_role: {'tasks_from': 'ready.yml'}",
        "molecule/alpha/converge.yml: templated role or tasks_from (gpunet.rdma.alpha, {{ step }}): write it out so "
        "that it can be checked",
        "playbooks/play.yml: roles/alpha entry point gone is not declared in roles/alpha/meta/argument_specs.yml",
        "playbooks/play.yml: roles/alpha entry point missing is not declared in roles/alpha/meta/argument_specs.yml",
        "playbooks/play.yml: roles/beta entry point main is not declared in roles/beta/meta/argument_specs.yml",
    ]
