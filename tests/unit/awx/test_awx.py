# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""AWX readiness: surveys that match the documented variables, playbooks without prompts, an EE definition
that ansible-builder accepts offline."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
SURVEYS = sorted(glob.glob(os.path.join(REPO, 'awx', 'surveys', '*.json')))
QUESTION_TYPES = {'text', 'textarea', 'password', 'integer', 'float', 'multiplechoice', 'multiselect'}


def role_options():
    options = {}
    for path in glob.glob(os.path.join(REPO, 'roles', '*', 'meta', 'argument_specs.yml')):
        with open(path) as handle:
            for entry in yaml.safe_load(handle)['argument_specs'].values():
                options.update(entry.get('options') or {})
    return options


def playbook_variables():
    """The README's table of playbook-level variables: | `name` | `default` | meaning |."""
    with open(os.path.join(REPO, 'README.md')) as handle:
        text = handle.read()
    section = text.split('### Playbook variables', 1)[1].split('\n#', 1)[0]
    return dict(re.findall(r'^\| `(gpunet_rdma_\w+)` \| `([^`]*)` \|', section, re.M))


def test_there_are_surveys_for_the_main_job_templates():
    assert [os.path.basename(p) for p in SURVEYS] == [
        'discover.json', 'generation.json', 'nicclusterpolicy_tolerations.json', 'site.json']


@pytest.mark.parametrize('path', SURVEYS, ids=os.path.basename)
def test_survey_questions_are_documented_variables_with_their_defaults(path):
    with open(path) as handle:
        survey = json.load(handle)
    assert survey['name'] and survey['description'] and survey['spec']
    options, playbook = role_options(), playbook_variables()
    for question in survey['spec']:
        assert question['type'] in QUESTION_TYPES
        assert question['question_name'] and question['question_description']
        variable, default = question['variable'], question['default']
        if question['type'] == 'multiplechoice':
            assert default in question['choices']
        if question['type'] == 'integer':
            assert question['min'] <= default <= question['max']
        if variable in options:
            documented = options[variable].get('default')
            if options[variable].get('type') == 'bool':
                assert default == str(documented).lower(), variable
            else:
                assert default == documented, variable
            if options[variable].get('choices'):
                assert sorted(question['choices']) == sorted(options[variable]['choices'])
        else:
            assert variable in playbook, '%s is neither a role option nor a documented playbook variable' % variable
            assert str(default).lower() == playbook[variable].lower(), variable


def test_playbooks_never_prompt():
    for path in glob.glob(os.path.join(REPO, 'playbooks', '*.yml')):
        with open(path) as handle:
            plays = yaml.safe_load(handle)
        assert all('vars_prompt' not in play for play in plays), path


def test_playbook_variables_used_are_documented():
    used = set()
    for path in glob.glob(os.path.join(REPO, 'playbooks', '*.yml')):
        with open(path) as handle:
            used.update(re.findall(r'\b(gpunet_rdma_\w+)', handle.read()))
    # Not variables a user sets: the stage ledger fact, the groups of the nodes with disruptive steps and of the
    # nodes that failed.
    assert used - {'gpunet_rdma_ledger', 'gpunet_rdma_disrupt', 'gpunet_rdma_failed_nodes'} == set(playbook_variables())


def test_ansible_builder_creates_the_build_context_offline(tmp_path):
    builder = shutil.which('ansible-builder') or os.path.join(os.path.dirname(sys.executable), 'ansible-builder')
    context = tmp_path / 'context'
    result = subprocess.run([builder, 'create', '-f', os.path.join(REPO, 'awx', 'execution-environment.yml'),
                             '-c', str(context), '--output-filename', 'Containerfile'],
                            capture_output=True, text=True, check=False,
                            env=dict(os.environ, http_proxy='http://127.0.0.1:9', https_proxy='http://127.0.0.1:9'))
    assert result.returncode == 0, result.stdout + result.stderr
    containerfile = (context / 'Containerfile').read_text()
    assert 'ansible-core==2.19.14' in containerfile
    assert 'linux-amd64/helm' in containerfile
    requirements = yaml.safe_load((context / '_build' / 'requirements.yml').read_text())
    assert {c['name'] for c in requirements['collections']} >= {'kubernetes.core', 'community.general', 'ansible.posix'}
    python = (context / '_build' / 'requirements.txt').read_text().split()
    assert {'netaddr', 'kubernetes', 'jsonschema', 'kubernetes-validate', 'jmespath'} <= set(python)


def test_the_collection_declares_what_its_plugins_import():
    with open(os.path.join(REPO, 'meta', 'execution-environment.yml')) as handle:
        meta = yaml.safe_load(handle)
    with open(os.path.join(REPO, meta['dependencies']['python'])) as handle:
        declared = set(line.strip() for line in handle if line.strip() and not line.startswith('#'))
    imported = set()
    for path in glob.glob(os.path.join(REPO, 'plugins', '**', '*.py'), recursive=True):
        with open(path) as handle:
            imported.update(re.findall(r'^\s+import (netaddr|jsonschema|kubernetes_validate|yaml|jmespath)\b',
                                       handle.read(), re.M))
    names = {'kubernetes_validate': 'kubernetes-validate', 'yaml': 'PyYAML'}
    assert {names.get(module, module) for module in imported} <= declared
