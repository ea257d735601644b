# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""awx/configure.yml against the AWX API double (awx_api_double.py): what it creates, that a second run in check mode
changes nothing, and every awx.awx task's options against the module's own argument spec."""

from __future__ import annotations

import glob
import importlib
import json
import os
import subprocess
import sys

import ansible_runner
import pytest
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import awx_api_double  # noqa: E402  pylint: disable=wrong-import-position

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
CONFIGURE = os.path.join(REPO, 'awx', 'configure.yml')
ORG = 'GPU clusters'
EXTRAVARS = {
    'gpunet_rdma_awx_project_scm_url': 'https://git.example.com/gpu/rdma.git',
    'gpunet_rdma_awx_ee_image': 'registry.example.com/gpunet-rdma-ee:0.1.0',
    'gpunet_rdma_awx_machine_ssh_key_data': '-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n-----END OPENSSH PRIVATE KEY-----\n',
    'gpunet_rdma_awx_kubernetes_host': 'https://k8s.example.com:6443',
    'gpunet_rdma_awx_kubernetes_bearer_token': 'token-of-the-service-account',
    'gpunet_rdma_awx_vcenter_hostname': 'vcenter.example.com',
    'gpunet_rdma_awx_vcenter_username': 'automation@vsphere.local',
    'gpunet_rdma_awx_vcenter_password': 'secret',
}


class PlaybookLoader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
    """YAML as Ansible reads a playbook: !unsafe marks a string Ansible does not template."""


PlaybookLoader.add_constructor('!unsafe', lambda loader, node: loader.construct_scalar(node))


def configure_plays():
    with open(CONFIGURE) as handle:
        return yaml.load(handle, Loader=PlaybookLoader)  # nosec: a SafeLoader


def play_vars():
    return configure_plays()[0]['vars']


def run_configure(private, double, check=False):
    runner = ansible_runner.run(
        private_data_dir=private, playbook=CONFIGURE, project_dir=REPO, quiet=True, extravars=EXTRAVARS,
        cmdline='--check' if check else None,
        envvars={'CONTROLLER_HOST': double.url, 'CONTROLLER_OAUTH_TOKEN': awx_api_double.TOKEN,
                 # awx.awx builds a TLS context with the system's CA bundle for every request, plain HTTP too (about
                 # a third of the run's CPU); the double speaks plain HTTP, so no CA is loaded
                 'SSL_CERT_FILE': os.devnull,
                 'ANSIBLE_COLLECTIONS_PATH': os.path.join(REPO, '.build', 'collections'),
                 'ANSIBLE_CONFIG': os.path.join(REPO, 'ansible.cfg'),
                 'PATH': os.path.dirname(sys.executable) + os.pathsep + os.environ['PATH']})
    return runner


@pytest.fixture(scope='module')
def controller(tmp_path_factory):
    double = awx_api_double.AwxApiDouble(REPO).start()
    first = run_configure(str(tmp_path_factory.mktemp('configure')), double)
    writes = len([r for r in double.requests if r[0] != 'GET'])
    second = run_configure(str(tmp_path_factory.mktemp('configure-check')), double, check=True)
    yield {'double': double, 'first': first, 'second': second, 'writes_before_second': writes}
    double.stop()


def changed_tasks(runner):
    return [(e['event_data']['task'], (e['event_data'].get('res') or {}).get('item'))
            for e in runner.events if e['event'] == 'runner_on_ok' and (e['event_data'].get('res') or {}).get('changed')]


def one(double, collection, **fields):
    found = double.find(collection, **fields)
    assert len(found) == 1, (collection, fields, found)
    return found[0]


def test_configure_runs_against_the_double_without_refusals(controller):
    double, first = controller['double'], controller['first']
    assert first.status == 'successful', first.stdout.read()[-4000:]
    assert double.refusals == [] and double.errors == []


def test_a_second_run_in_check_mode_would_change_nothing(controller):
    double, second = controller['double'], controller['second']
    assert second.status == 'successful', second.stdout.read()[-4000:]
    assert changed_tasks(second) == []
    # check mode: nothing written either
    assert len([r for r in double.requests if r[0] != 'GET']) == controller['writes_before_second']


def test_everything_belongs_to_one_organization(controller):
    double = controller['double']
    org = one(double, 'organizations', name=ORG)['id']
    project = one(double, 'projects', name='gpunet.rdma')
    assert (project['organization'], project['scm_type'], project['scm_url'], project['scm_branch']) == (
        org, 'git', EXTRAVARS['gpunet_rdma_awx_project_scm_url'], '0.1.0')
    ee = one(double, 'execution_environments', name='gpunet.rdma execution environment')
    assert (ee['organization'], ee['image'], project['default_environment']) == (
        org, EXTRAVARS['gpunet_rdma_awx_ee_image'], ee['id'])
    inventory = one(double, 'inventories', name='gpunet.rdma GPU nodes')
    assert inventory['organization'] == org
    for collection in ('credentials', 'job_templates', 'workflow_job_templates'):
        assert double.objects[collection] and all(o['organization'] == org for o in double.objects[collection].values())


def test_the_inventory_comes_from_the_project_s_inventory_directory_with_the_gpu_groups(controller):
    double = controller['double']
    source = one(double, 'inventory_sources', name='gpunet.rdma inventory from the project')
    assert (source['source'], source['source_project'], source['overwrite'], source['update_on_launch']) == (
        'scm', one(double, 'projects', name='gpunet.rdma')['id'], True, True)
    # AWX imports the source with ansible-inventory -i <source_path> --list
    listed = json.loads(subprocess.run(
        ['ansible-inventory', '-i', os.path.join(REPO, source['source_path']), '--list'], capture_output=True,
        text=True, check=True, env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'))).stdout)
    for group in ('ib_v100', 'ib_a100', 'ib_h100', 'roce_a100', 'roce_pvrdma'):
        hosts = listed[group]['hosts']
        assert hosts, group
        assert all(listed['_meta']['hostvars'][h]['gpunet_rdma_fabric']['name'] == group for h in hosts), group


def test_credentials_machine_kubernetes_bearer_token_and_vcenter(controller):
    double = controller['double']
    types = dict((t['name'], t['id']) for t in double.objects['credential_types'].values())
    machine = one(double, 'credentials', name='gpunet.rdma nodes')
    kubernetes = one(double, 'credentials', name='gpunet.rdma Kubernetes API')
    vcenter = one(double, 'credentials', name='gpunet.rdma vCenter')
    assert machine['credential_type'] == types['Machine']
    assert machine['inputs'] == {'username': 'root', 'ssh_key_data': EXTRAVARS['gpunet_rdma_awx_machine_ssh_key_data']}
    assert kubernetes['credential_type'] == types['OpenShift or Kubernetes API Bearer Token']
    assert kubernetes['inputs'] == {'host': 'https://k8s.example.com:6443', 'bearer_token': 'token-of-the-service-account',
                                    'verify_ssl': True}
    vcenter_type = one(double, 'credential_types', name='gpunet.rdma vCenter')
    assert vcenter['credential_type'] == vcenter_type['id'] and vcenter_type['kind'] == 'cloud'
    # AWX renders the injectors with the inputs into the vsphere_pvrdma role's variables
    injected = dict((k, v.replace('{{ ', '').replace(' }}', '')) for k, v in vcenter_type['injectors']['extra_vars'].items())
    assert injected == {'vsphere_pvrdma_vcenter_hostname': 'hostname', 'vsphere_pvrdma_vcenter_username': 'username',
                        'vsphere_pvrdma_vcenter_password': 'password', 'vsphere_pvrdma_validate_certs': 'validate_certs'}
    with open(os.path.join(REPO, 'roles', 'vsphere_pvrdma', 'meta', 'argument_specs.yml')) as handle:
        options = yaml.safe_load(handle)['argument_specs']['main']['options']
    assert set(injected) <= set(options)


def test_one_job_template_per_entry_playbook_with_its_survey(controller):
    double = controller['double']
    templates = dict((t['playbook'], t) for t in double.objects['job_templates'].values() if 'workflow:' not in t['name'])
    entry = sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, 'playbooks', '*.yml'))
                   if not os.path.basename(p).startswith('phase_'))
    assert sorted(templates) == entry
    surveys = dict((t['playbook'], t['survey']) for t in play_vars()['gpunet_rdma_awx_job_templates'])
    for playbook, template in templates.items():
        stored = double.surveys.get(('job_templates', template['id']))
        if surveys[playbook]:
            with open(os.path.join(REPO, 'awx', 'surveys', surveys[playbook])) as handle:
                assert stored == json.load(handle), playbook
            assert template['survey_enabled'] is True
        else:
            assert stored is None and template['survey_enabled'] is False
        # the report goes to the persistent directory, not into the job's container
        assert json.loads(template['extra_vars']) == {'rdma_discovery_report_dir': '/var/lib/gpunet-rdma/reports'}
        assert template['ask_job_type_on_launch'] is True
    kinds = dict((c['name'], c['credential_type']) for c in double.objects['credentials'].values())
    assert sorted(kinds[c['name']] for c in double.linked('job_templates', templates['playbooks/site.yml'], 'credentials')) \
        == sorted([kinds['gpunet.rdma nodes'], kinds['gpunet.rdma Kubernetes API']])
    assert [c['name'] for c in double.linked('job_templates', templates['playbooks/vsphere_pvrdma.yml'], 'credentials')] \
        == ['gpunet.rdma vCenter']


def test_the_workflow_runs_discover_host_stages_rollout_cluster_validate_then_always_the_report(controller):
    double = controller['double']
    workflow = one(double, 'workflow_job_templates', name='gpunet.rdma workflow')
    with open(os.path.join(REPO, 'awx', 'surveys', 'site.json')) as handle:
        assert double.surveys[('workflow_job_templates', workflow['id'])] == json.load(handle)
    nodes = dict((n['identifier'], n) for n in double.find('workflow_job_template_nodes', workflow_job_template=workflow['id']))
    assert sorted(nodes) == sorted(['discover', 'host-stages', 'rollout', 'cluster', 'validate', 'report'])
    edges = dict((name, dict((kind, [c['identifier'] for c in double.linked('workflow_job_template_nodes', node, kind)])
                             for kind in awx_api_double.EDGES)) for name, node in nodes.items())
    chain = ['discover', 'host-stages', 'rollout', 'cluster', 'validate']
    for parent, child in zip(chain, chain[1:] + ['report']):
        assert edges[parent]['success_nodes'] == ([child] if child != 'report' else []), parent
        assert (edges[parent]['failure_nodes'] + edges[parent]['always_nodes']) == ['report'], parent
    assert edges['validate']['always_nodes'] == ['report']
    assert edges['report'] == {'success_nodes': [], 'failure_nodes': [], 'always_nodes': []}
    templates = dict((n, double.objects['job_templates'][nodes[n]['unified_job_template']]) for n in nodes)
    assert templates['host-stages']['job_slice_count'] == 4
    assert [t['job_slice_count'] for n, t in templates.items() if n != 'host-stages'] == [1] * 5
    assert (templates['host-stages']['job_tags'], templates['host-stages']['skip_tags']) == (
        '', 'rollout,cluster,validate,report')
    assert (templates['rollout']['job_tags'], templates['report']['job_tags']) == ('rollout', 'report')
    assert templates['discover']['playbook'] == 'playbooks/phase_discover.yml'
    assert set(t['playbook'] for n, t in templates.items() if n != 'discover') == {'playbooks/phase_stages.yml'}
    assert not [t for t in templates.values() if t['use_fact_cache']]


def test_skipping_the_later_stages_leaves_exactly_the_host_stages_of_site_yml():
    """The host-stage node names no host stage tag (there are more of them over time): it skips the later ones."""
    with open(os.path.join(REPO, 'playbooks', 'site.yml')) as handle:
        plays = yaml.safe_load(handle)
    skipped = set(dict((p['name'], p) for p in play_vars()['__awx_phases'])['host stages']['skip_tags'].split(','))

    def tasks(listed):
        """Each task, those of a block in its place (a rescue runs only after one of them ran and failed)."""
        for task in listed:
            if 'block' in task:
                for inner in tasks(task['block']):
                    yield dict(inner, tags=list(task.get('tags', [])) + list(inner.get('tags', [])))
            else:
                yield task
    for play in plays:
        for task in tasks(play.get('tasks', []) or [{'name': 'roles', 'tags': []}]):
            tags = set(task.get('tags', [])) | set(play.get('tags', []))
            runs = not tags & skipped
            if play['name'] == 'Host stages' and task['name'] != 'Put the nodes with an allowed disruptive step into the batches':
                assert runs, (play['name'], task['name'])
            elif play['name'] != 'Facts':
                assert not runs, (play['name'], task['name'])


def module_argument_spec(name):
    """The argument spec an awx.awx module builds in its main(), taken as the module hands it to AnsibleModule."""
    module = importlib.import_module('ansible_collections.awx.awx.plugins.modules.%s' % name)
    from ansible_collections.awx.awx.plugins.module_utils import controller_api  # pylint: disable=import-outside-toplevel

    captured = {}

    class Captured(Exception):
        pass

    def capture(self, argument_spec=None, **kwargs):
        del self
        captured.update(argument_spec=argument_spec, **kwargs)
        raise Captured()
    original = controller_api.ControllerAPIModule.__init__
    controller_api.ControllerAPIModule.__init__ = capture
    try:
        module.main()
    except Captured:
        pass
    finally:
        controller_api.ControllerAPIModule.__init__ = original
    spec = dict(controller_api.ControllerModule.AUTH_ARGSPEC, **captured['argument_spec'])
    for option in list(spec.values()):
        spec.update((alias, option) for alias in option.get('aliases', []))
    return spec


def test_every_awx_task_uses_options_of_its_module_with_valid_literal_choices():
    plays = configure_plays()
    tasks = [t for t in plays[0]['tasks'] if any(k.startswith('awx.awx.') for k in t)]
    assert len(tasks) == 12
    defaults = plays[0]['module_defaults']['group/awx.awx.controller']
    for task in tasks:
        (action,) = [k for k in task if k.startswith('awx.awx.')]
        spec = module_argument_spec(action.split('.')[-1])
        for option, value in list(task[action].items()) + list(defaults.items()):
            assert option in spec, '%s: %s is not an option of %s' % (task['name'], option, action)
            if isinstance(value, str) and '{{' not in value and spec[option].get('choices'):
                assert value in spec[option]['choices'], (task['name'], option, value)
        required = [o for o, s in spec.items() if s.get('required')]
        assert set(required) <= set(task[action]), (task['name'], required)


def test_the_double_refuses_what_awx_refuses():
    double = awx_api_double.AwxApiDouble(REPO)
    auth = 'Bearer %s' % awx_api_double.TOKEN

    def post(path, body):
        return double.handle('POST', '/api/v2/%s/' % path, auth, json.dumps(body).encode())
    assert double.handle('GET', '/api/v2/organizations/', '', b'')[0] == 401
    assert post('organizations', {'name': 'o', 'colour': 'blue'})[0] == 400
    org = post('organizations', {'name': 'o'})[1]['id']
    assert post('organizations', {'name': 'o'})[0] == 400
    assert post('projects', {'name': 'p', 'organization': org, 'scm_type': 'git'})[0] == 400
    project = post('projects', {'name': 'p', 'organization': org, 'scm_type': 'git', 'scm_url': 'https://x'})[1]['id']
    inventory = post('inventories', {'name': 'i', 'organization': org})[1]['id']
    assert post('inventory_sources', {'name': 's', 'inventory': inventory, 'source': 'scm', 'source_project': project,
                                      'source_path': 'inventory/nowhere'})[0] == 400
    template = {'name': 't', 'organization': org, 'project': project, 'inventory': inventory}
    assert post('job_templates', dict(template, playbook='playbooks/missing.yml'))[0] == 400
    assert post('job_templates', dict(template, playbook='playbooks/site.yml', job_type='apply'))[0] == 400
    jt = post('job_templates', dict(template, playbook='playbooks/site.yml'))[1]['id']
    spec = {'name': 's', 'description': '', 'spec': [{'question_name': 'q', 'variable': 'v', 'required': True,
                                                      'type': 'integer', 'default': '1'}]}
    assert post('job_templates/%d/survey_spec' % jt, spec)[0] == 400
    spec['spec'][0]['default'] = 1
    assert post('job_templates/%d/survey_spec' % jt, spec)[0] == 200
    machine = [t['id'] for t in double.objects['credential_types'].values() if t['name'] == 'Machine'][0]
    assert post('credentials', {'name': 'c', 'credential_type': machine, 'inputs': {'user': 'root'}})[0] == 400
    first = post('credentials', {'name': 'c1', 'credential_type': machine, 'inputs': {'username': 'root'}})[1]['id']
    second = post('credentials', {'name': 'c2', 'credential_type': machine, 'inputs': {'username': 'root'}})[1]['id']
    assert post('job_templates/%d/credentials' % jt, {'id': first})[0] == 204
    assert post('job_templates/%d/credentials' % jt, {'id': second})[0] == 400
    assert post('credential_types', {'name': 'x', 'kind': 'cloud', 'inputs': {'fields': [{'id': 'a', 'label': 'A'}]},
                                     'injectors': {'extra_vars': {'v': '{{ b }}'}}})[0] == 400
    workflow = post('workflow_job_templates', {'name': 'w', 'organization': org})[1]['id']
    a = post('workflow_job_template_nodes', {'workflow_job_template': workflow, 'identifier': 'a',
                                             'unified_job_template': jt})[1]['id']
    b = post('workflow_job_template_nodes', {'workflow_job_template': workflow, 'identifier': 'b',
                                             'unified_job_template': jt})[1]['id']
    assert post('workflow_job_template_nodes/%d/success_nodes' % a, {'id': b})[0] == 204
    assert post('workflow_job_template_nodes/%d/failure_nodes' % a, {'id': b})[1] == {'Error': 'Relationship not allowed.'}
    assert post('workflow_job_template_nodes/%d/always_nodes' % b, {'id': a})[1] == {'Error': 'Cycle detected.'}
    assert double.errors == []
