# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""AWX readiness: surveys that match the documented variables and that AWX accepts, the batch size as AWX passes a
survey answer, playbooks without prompts, an EE definition that ansible-builder turns into a build context offline
with every version pinned."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys

import ansible_runner
import pytest
import yaml
from ansible.utils.helpers import pct_to_int

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import awx_api_double  # noqa: E402  pylint: disable=wrong-import-position

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


@pytest.mark.parametrize('path', SURVEYS, ids=os.path.basename)
def test_awx_accepts_each_survey_and_its_defaults(path):
    with open(path) as handle:
        survey = json.load(handle)
    assert awx_api_double.check_survey_spec(survey) is None
    for question in survey['spec']:
        assert awx_api_double.check_survey_answer(question, question['default']) is None, question['variable']


def site_serial():
    """The serial keyword of site.yml's play of disruptive batches."""
    with open(os.path.join(REPO, 'playbooks', 'site.yml')) as handle:
        (play,) = [p for p in yaml.safe_load(handle) if p['name'] == 'Disruptive steps, in batches']
    return play['serial']


@pytest.mark.parametrize('name', ['site.json', 'generation.json'])
def test_the_batch_size_is_a_number_or_a_percentage_as_serial_takes_it(name):
    with open(os.path.join(REPO, 'awx', 'surveys', name)) as handle:
        (question,) = [q for q in json.load(handle)['spec'] if q['variable'] == 'gpunet_rdma_serial']
    assert question['type'] == 'text' and '25%' in question['question_description']
    # what AWX lets through (a string of 1 to 4 characters) and what serial makes of it for 40 hosts
    for answer, batch in (('1', 1), ('2', 2), ('1000', 1000), ('25%', 10), ('100%', 40), ('1%', 1)):
        assert awx_api_double.check_survey_answer(question, answer) is None, answer
        assert pct_to_int(answer, 40) == batch, answer
    for answer in ('', '10000', 2):
        assert awx_api_double.check_survey_answer(question, answer) is not None, answer


def site_serial_check():
    """The pattern site.yml checks gpunet_rdma_serial against before anything runs."""
    with open(os.path.join(REPO, 'playbooks', 'site.yml')) as handle:
        facts = yaml.safe_load(handle)[0]
    (check,) = [t for t in facts['tasks'] if 'gpunet_rdma_serial' in t['name']]
    return re.search(r"match\('([^']+)'\)", check['ansible.builtin.assert']['that']).group(1)


def test_site_yml_stops_at_its_first_task_on_a_batch_size_serial_would_crash_on(tmp_path):
    pattern = site_serial_check()
    for answer in ('1', '25%', '100%', '1000', 1, 3):
        assert re.match(pattern, str(answer)), answer
        assert pct_to_int(answer, 40) >= 1
    for answer in ('abc', '2x', '0', '0%', '%', '-1', '1.5'):
        assert not re.match(pattern, answer), answer
    private = tmp_path / 'private'
    private.mkdir()
    inventory = {'all': {'hosts': {'node-1': {}, 'node-2': {}}, 'vars': {'ansible_connection': 'local',
                                                                         'ansible_python_interpreter': sys.executable}}}
    runner = ansible_runner.run(private_data_dir=str(private), playbook=os.path.join(REPO, 'playbooks', 'site.yml'),
                                inventory=inventory, extravars={'gpunet_rdma_serial': 'abc'}, quiet=True,
                                envvars={'ANSIBLE_CONFIG': os.path.join(REPO, 'ansible.cfg'),
                                         'ANSIBLE_COLLECTIONS_PATH': os.path.join(REPO, '.build', 'collections'),
                                         'PATH': os.path.dirname(sys.executable) + os.pathsep + os.environ['PATH']})
    assert runner.status == 'failed'
    (failed,) = [e['event_data'] for e in runner.events if e['event'] == 'runner_on_failed']
    assert failed['task'] == 'Check the batch size of the disruptive steps (gpunet_rdma_serial)'
    assert 'gpunet_rdma_serial is abc' in failed['res']['msg']
    assert not [e for e in runner.events if e['event'] == 'runner_on_ok']
    assert 'Traceback' not in runner.stdout.read()


def test_a_percentage_from_the_survey_makes_the_batches_of_site_yml(tmp_path):
    """The survey's text answer as AWX passes it (an extra var string) through site.yml's serial expression."""
    playbook = tmp_path / 'batches.yml'
    playbook.write_text(yaml.safe_dump([{'name': 'Batches', 'hosts': 'all', 'gather_facts': False,
                                         'serial': site_serial(),
                                         # a task that runs no module on the hosts: only the batches count here
                                         'tasks': [{'name': 'One batch', 'ansible.builtin.debug': {'msg': 'batch'}}]}]))
    hosts = dict(('node-%d' % i, {}) for i in range(8))
    inventory = {'all': {'hosts': hosts, 'vars': {'ansible_connection': 'local',
                                                  'ansible_python_interpreter': sys.executable}}}
    batches = {}
    for answer in ('25%', '3'):
        private = tmp_path / answer.replace('%', 'pct')
        private.mkdir()
        runner = ansible_runner.run(private_data_dir=str(private), playbook=str(playbook),
                                    inventory=inventory, extravars={'gpunet_rdma_serial': answer}, quiet=True,
                                    envvars={'ANSIBLE_CONFIG': os.path.join(REPO, 'ansible.cfg'),
                                             'PATH': os.path.dirname(sys.executable) + os.pathsep + os.environ['PATH']})
        assert runner.status == 'successful', runner.stdout.read()[-2000:]
        batches[answer] = len([e for e in runner.events if e['event'] == 'playbook_on_task_start'])
    assert batches == {'25%': 4, '3': 3}


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
    # Not variables a user sets: the stage ledger fact, the groups of the nodes in scope, of the nodes with disruptive
    # steps and of the nodes that failed, where a stopped cluster stage stopped, and the artifacts the AWX workflow's
    # nodes hand on to each other (docs/awx.md names them).
    workflow = set(v for v in used if v.startswith('gpunet_rdma_workflow_'))
    assert workflow == {'gpunet_rdma_workflow_controller_ledger', 'gpunet_rdma_workflow_coverage',
                        'gpunet_rdma_workflow_ledgers_'}
    with open(os.path.join(REPO, 'docs', 'awx.md')) as handle:
        awx_doc = handle.read()
    assert all(v in awx_doc for v in workflow)
    assert used - workflow - {'gpunet_rdma_ledger', 'gpunet_rdma_in_scope', 'gpunet_rdma_disrupt',
                              'gpunet_rdma_failed_nodes', 'gpunet_rdma_cluster_stopped'} \
        == set(playbook_variables())


def test_configure_variables_are_prefixed_and_documented():
    with open(os.path.join(REPO, 'awx', 'configure.yml')) as handle:
        text = handle.read()
    with open(os.path.join(REPO, 'docs', 'awx.md')) as handle:
        documented = set(re.findall(r'^\| `(gpunet_rdma_awx_\w+)` \|', handle.read(), re.M))
    play_vars = set(re.findall(r'^    (\w+):', text.split('\n  vars:\n', 1)[1].split('\n  tasks:\n', 1)[0], re.M))
    settings = set(v for v in play_vars if not v.startswith('__'))
    assert settings and all(v.startswith('gpunet_rdma_awx_') for v in settings), settings
    assert settings == documented


def pins(path):
    with open(path) as handle:
        return dict(line.strip().split('==', 1) for line in handle if '==' in line and not line.startswith('#'))


def installed_collection_version(name):
    namespace, collection = name.split('.')
    import ansible_collections  # pylint: disable=import-outside-toplevel
    for root in ansible_collections.__path__:
        manifest = os.path.join(root, namespace, collection, 'MANIFEST.json')
        if os.path.exists(manifest):
            with open(manifest) as handle:
                return json.load(handle)['collection_info']['version']
    raise AssertionError('%s is not installed' % name)


@pytest.fixture(scope='module')
def build_context(tmp_path_factory):
    builder = shutil.which('ansible-builder') or os.path.join(os.path.dirname(sys.executable), 'ansible-builder')
    context = tmp_path_factory.mktemp('ee') / 'context'
    # offline: every proxy points at a closed port
    result = subprocess.run([builder, 'create', '-f', os.path.join(REPO, 'awx', 'execution-environment.yml'),
                             '-c', str(context), '--output-filename', 'Containerfile'],
                            capture_output=True, text=True, check=False,
                            env=dict(os.environ, http_proxy='http://127.0.0.1:9', https_proxy='http://127.0.0.1:9'))
    assert result.returncode == 0, result.stdout + result.stderr
    return context


def stage(containerfile, name):
    """The lines of one build stage of the Containerfile."""
    return containerfile.split('AS %s\n' % name, 1)[1].split('\nFROM ', 1)[0]


def test_ansible_builder_creates_the_build_context_offline(build_context):
    containerfile = (build_context / 'Containerfile').read_text()
    constraints = pins(os.path.join(REPO, 'requirements', 'constraints.txt'))
    assert 'ansible-core==%s ansible-runner==%s' % (constraints['ansible-core'], constraints['ansible-runner']) \
        in containerfile
    assert pins(os.path.join(REPO, 'requirements', 'dev.txt'))['ansible-runner'] == constraints['ansible-runner']
    python = pins(build_context / '_build' / 'requirements.txt')
    with open(os.path.join(REPO, 'meta', 'ee-requirements.txt')) as handle:
        needed = set(line.strip() for line in handle if line.strip() and not line.startswith('#'))
    # every Python package of the collection, at the version the tests ran with
    assert set(python) == needed
    assert all(constraints[name] == version for name, version in python.items())


def test_git_is_there_before_the_galaxy_stage_installs_from_git(build_context):
    galaxy = stage((build_context / 'Containerfile').read_text(), 'galaxy')
    install_git = galaxy.index('install -y git-core')
    assert install_git < galaxy.index('ansible-galaxy collection install')


def test_the_collection_comes_at_its_release_and_the_dependencies_at_the_tested_versions(build_context):
    requirements = yaml.safe_load((build_context / '_build' / 'requirements.yml').read_text())['collections']
    with open(os.path.join(REPO, 'galaxy.yml')) as handle:
        galaxy = yaml.safe_load(handle)
    (own,) = [c for c in requirements if c['name'].endswith('/rdma.git')]
    assert own['type'] == 'git' and own['version'] == galaxy['version']
    with open(os.path.join(REPO, 'awx', 'configure.yml')) as handle:
        assert 'gpunet_rdma_awx_project_scm_branch: "%s"' % galaxy['version'] in handle.read()
    dependencies = dict((c['name'], c['version']) for c in requirements if c is not own)
    assert set(dependencies) == set(galaxy['dependencies'])
    for name, version in dependencies.items():
        assert version == installed_collection_version(name), name


def test_pip_reads_the_constraints_in_every_stage(build_context):
    containerfile = (build_context / 'Containerfile').read_text()
    base = stage(containerfile, 'base')
    assert base.index('ENV PIP_CONSTRAINT=/usr/share/gpunet-rdma/constraints.txt') \
        < base.index('pip install --no-cache-dir $ANSIBLE_INSTALL_REFS')
    # galaxy, builder and final are built FROM base and inherit the environment
    assert containerfile.count('FROM base AS') == 3
    # the pins the tests ran with, shipped with the collection (make constraints keeps the two the same)
    copied = (build_context / '_build' / 'constraints' / 'ee-constraints.txt').read_text()
    with open(os.path.join(REPO, 'requirements', 'constraints.txt')) as handle:
        assert copied == handle.read()


def test_helm_and_helm_diff_are_checked_against_their_published_sums(build_context):
    final = stage((build_context / 'Containerfile').read_text(), 'final')
    args = dict(re.findall(r'^ARG (HELM\w*)=(\S+)$', final, re.M))
    assert re.fullmatch(r'v3\.\d+\.\d+', args['HELM_VERSION']) and re.fullmatch(r'v3\.\d+\.\d+', args['HELM_DIFF_VERSION'])
    assert re.fullmatch(r'[0-9a-f]{64}', args['HELM_SHA256']) and re.fullmatch(r'[0-9a-f]{64}', args['HELM_DIFF_SHA256'])
    run = final[final.index('helm.tgz'):]
    for archive, checksum in (('/tmp/helm.tgz', 'HELM_SHA256'), ('/tmp/helm-diff.tgz', 'HELM_DIFF_SHA256')):
        assert 'echo "${%s}  %s" | sha256sum -c -' % (checksum, archive) in run
        # checked before it is unpacked
        assert run.index('sha256sum', run.index(archive)) < run.index('tar -xzf %s' % archive)
    assert 'helm diff version' in run and 'ENV HELM_PLUGINS=' in final


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
