# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A test double of the AWX REST API (/api/v2/) for what awx/configure.yml's awx.awx modules ask of it.

In memory, on 127.0.0.1, one thread. It answers as AWX 24 does for the requests awx.awx 24.6.1 makes: list views
filtered by field (``?name=x&organization=1``, ``or__id`` / ``or__name``), detail views, create (201), update
(PATCH, 200), the association sub-lists (``POST {id}`` / ``{id, disassociate: true}``, 204), survey specs, the
project update that AWX starts when a project is created, ``unified_job_templates``; bearer-token authentication.

It is at least as strict as AWX where AWX refuses: an unknown field, a field of the wrong type, a choice AWX does
not have, a reference to a missing object, a name taken in the organization, a playbook or inventory path the
project does not have, a credential input its type does not define or a missing required one, injector templates
naming undefined inputs, a survey spec AWX rejects (its rules, checked here as AWX's survey spec view checks them),
two credentials of one type on a job template, a workflow edge that makes a cycle or links two nodes twice. Secret
credential inputs come back as ``$encrypted$``, as AWX shows them. Every refusal is a 400 with a JSON body naming the
field, and is kept in ``refusals`` for the test to look at; ``errors`` holds requests the double itself could not
handle (it must stay empty).
"""

from __future__ import annotations

import copy
import json
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlparse

ENCRYPTED = '$encrypted$'
TOKEN = 'gpunet-rdma-test-token'
VERSION = '24.6.1'
SURVEY_TYPES = {'text': str, 'textarea': str, 'password': str, 'integer': int, 'float': (float, int),
                'multiplechoice': str, 'multiselect': (str, list)}

# field -> kind: str, bool, int, dict, json-text (a string holding JSON/YAML), fk:<collection>,
# choice:<a|b|...> (an empty choice written as a leading |).
SCHEMAS = {
    'organizations': {
        'fields': {'name': 'str', 'description': 'str', 'max_hosts': 'int', 'custom_virtualenv': 'str',
                   'default_environment': 'fk:execution_environments'},
        'required': ('name',), 'unique': ('name',), 'defaults': {'description': '', 'max_hosts': 0}},
    'execution_environments': {
        'fields': {'name': 'str', 'description': 'str', 'image': 'str', 'organization': 'fk:organizations',
                   'credential': 'fk:credentials', 'pull': 'choice:|always|missing|never'},
        'required': ('name', 'image'), 'unique': ('name', 'organization'), 'defaults': {'pull': '', 'description': ''}},
    'projects': {
        'fields': {'name': 'str', 'description': 'str', 'organization': 'fk:organizations',
                   'scm_type': 'choice:|git|svn|insights|archive', 'scm_url': 'str', 'scm_branch': 'str',
                   'scm_refspec': 'str', 'scm_clean': 'bool', 'scm_delete_on_update': 'bool',
                   'scm_track_submodules': 'bool', 'scm_update_on_launch': 'bool', 'scm_update_cache_timeout': 'int',
                   'timeout': 'int', 'allow_override': 'bool', 'credential': 'fk:credentials',
                   'signature_validation_credential': 'fk:credentials', 'default_environment': 'fk:execution_environments',
                   'local_path': 'str', 'custom_virtualenv': 'str'},
        'required': ('name', 'organization'), 'unique': ('name', 'organization'),
        'defaults': {'scm_branch': '', 'scm_clean': False, 'scm_update_on_launch': False, 'description': ''}},
    'inventories': {
        'fields': {'name': 'str', 'description': 'str', 'organization': 'fk:organizations',
                   'kind': 'choice:|smart|constructed', 'host_filter': 'str', 'variables': 'json-text',
                   'prevent_instance_group_fallback': 'bool'},
        'required': ('name', 'organization'), 'unique': ('name', 'organization'),
        'defaults': {'kind': '', 'host_filter': None, 'variables': '', 'description': ''}},
    'inventory_sources': {
        'fields': {'name': 'str', 'description': 'str', 'inventory': 'fk:inventories',
                   'source': 'choice:file|constructed|scm|ec2|gce|azure_rm|vmware|satellite6|openstack|rhv|'
                             'controller|insights|terraform|openshift_virtualization',
                   'source_path': 'str', 'source_project': 'fk:projects', 'source_vars': 'json-text',
                   'credential': 'fk:credentials', 'execution_environment': 'fk:execution_environments',
                   'overwrite': 'bool', 'overwrite_vars': 'bool', 'update_on_launch': 'bool',
                   'update_cache_timeout': 'int', 'timeout': 'int', 'verbosity': 'int', 'limit': 'str',
                   'enabled_var': 'str', 'enabled_value': 'str', 'host_filter': 'str', 'scm_branch': 'str',
                   'custom_virtualenv': 'str'},
        'required': ('name', 'inventory', 'source'), 'unique': ('name', 'inventory'),
        'defaults': {'source_path': '', 'overwrite': False, 'overwrite_vars': False, 'update_on_launch': False}},
    'credential_types': {
        'fields': {'name': 'str', 'description': 'str', 'kind': 'choice:cloud|net', 'inputs': 'dict',
                   'injectors': 'dict', 'managed': 'bool'},
        'required': ('name', 'kind'), 'unique': ('name', 'kind'), 'defaults': {'inputs': {}, 'injectors': {}}},
    'credentials': {
        'fields': {'name': 'str', 'description': 'str', 'organization': 'fk:organizations',
                   'credential_type': 'fk:credential_types', 'inputs': 'dict', 'user': 'int', 'team': 'int'},
        'required': ('name', 'credential_type'), 'unique': ('name', 'organization', 'credential_type'),
        'defaults': {'inputs': {}, 'description': ''}},
    'job_templates': {
        'fields': {'name': 'str', 'description': 'str', 'organization': 'fk:organizations', 'job_type': 'choice:run|check',
                   'inventory': 'fk:inventories', 'project': 'fk:projects', 'playbook': 'str', 'scm_branch': 'str',
                   'forks': 'int', 'limit': 'str', 'verbosity': 'choice-int:0|1|2|3|4|5', 'extra_vars': 'json-text',
                   'job_tags': 'str', 'force_handlers': 'bool', 'skip_tags': 'str', 'start_at_task': 'str', 'timeout': 'int',
                   'use_fact_cache': 'bool', 'execution_environment': 'fk:execution_environments', 'host_config_key': 'str',
                   'ask_scm_branch_on_launch': 'bool', 'ask_diff_mode_on_launch': 'bool', 'ask_variables_on_launch': 'bool',
                   'ask_limit_on_launch': 'bool', 'ask_tags_on_launch': 'bool', 'ask_skip_tags_on_launch': 'bool',
                   'ask_job_type_on_launch': 'bool', 'ask_verbosity_on_launch': 'bool', 'ask_inventory_on_launch': 'bool',
                   'ask_credential_on_launch': 'bool', 'ask_execution_environment_on_launch': 'bool',
                   'ask_forks_on_launch': 'bool', 'ask_instance_groups_on_launch': 'bool',
                   'ask_job_slice_count_on_launch': 'bool', 'ask_labels_on_launch': 'bool', 'ask_timeout_on_launch': 'bool',
                   'survey_enabled': 'bool', 'become_enabled': 'bool', 'diff_mode': 'bool', 'allow_simultaneous': 'bool',
                   'custom_virtualenv': 'str', 'job_slice_count': 'int', 'webhook_service': 'choice:|github|gitlab|bitbucket_dc',
                   'webhook_credential': 'fk:credentials', 'prevent_instance_group_fallback': 'bool'},
        'required': ('name', 'project', 'playbook'), 'unique': ('name', 'organization'),
        'defaults': {'job_type': 'run', 'job_tags': '', 'skip_tags': '', 'limit': '', 'extra_vars': '',
                     'use_fact_cache': False, 'job_slice_count': 1, 'survey_enabled': False, 'verbosity': 0,
                     'ask_inventory_on_launch': False, 'description': ''}},
    'workflow_job_templates': {
        'fields': {'name': 'str', 'description': 'str', 'organization': 'fk:organizations', 'inventory': 'fk:inventories',
                   'extra_vars': 'json-text', 'limit': 'str', 'scm_branch': 'str', 'job_tags': 'str', 'skip_tags': 'str',
                   'survey_enabled': 'bool', 'allow_simultaneous': 'bool', 'ask_variables_on_launch': 'bool',
                   'ask_inventory_on_launch': 'bool', 'ask_scm_branch_on_launch': 'bool', 'ask_limit_on_launch': 'bool',
                   'ask_labels_on_launch': 'bool', 'ask_skip_tags_on_launch': 'bool', 'ask_tags_on_launch': 'bool',
                   'webhook_service': 'choice:|github|gitlab|bitbucket_dc', 'webhook_credential': 'fk:credentials'},
        'required': ('name',), 'unique': ('name', 'organization'),
        'defaults': {'extra_vars': '', 'survey_enabled': False, 'description': ''}},
    'workflow_job_template_nodes': {
        'fields': {'workflow_job_template': 'fk:workflow_job_templates', 'unified_job_template': 'fk:unified_job_templates',
                   'identifier': 'str', 'extra_data': 'dict', 'inventory': 'fk:inventories', 'scm_branch': 'str',
                   'job_type': 'choice:run|check', 'job_tags': 'str', 'skip_tags': 'str', 'limit': 'str',
                   'diff_mode': 'bool', 'verbosity': 'choice-int:0|1|2|3|4|5', 'all_parents_must_converge': 'bool',
                   'forks': 'int', 'job_slice_count': 'int', 'timeout': 'int',
                   'execution_environment': 'fk:execution_environments',
                   # awx.awx sends the object's type along; AWX ignores it
                   'type': 'choice:workflow_job_template_node'},
        'required': ('workflow_job_template', 'identifier'), 'unique': ('identifier', 'workflow_job_template'),
        'defaults': {'all_parents_must_converge': False, 'extra_data': {}}},
}
ASSOCIATIONS = {
    'organizations': ('instance_groups', 'galaxy_credentials', 'notification_templates_started',
                      'notification_templates_success', 'notification_templates_error', 'notification_templates_approvals'),
    'projects': ('notification_templates_started', 'notification_templates_success', 'notification_templates_error'),
    'inventories': ('instance_groups', 'input_inventories'),
    'inventory_sources': ('notification_templates_started', 'notification_templates_success', 'notification_templates_error'),
    'job_templates': ('credentials', 'labels', 'instance_groups', 'notification_templates_started',
                      'notification_templates_success', 'notification_templates_error'),
    'workflow_job_templates': ('labels', 'notification_templates_started', 'notification_templates_success',
                               'notification_templates_error', 'notification_templates_approvals'),
    'workflow_job_template_nodes': ('success_nodes', 'failure_nodes', 'always_nodes', 'credentials', 'labels',
                                    'instance_groups'),
}
UNIFIED = ('projects', 'inventory_sources', 'job_templates', 'workflow_job_templates')
EDGES = ('success_nodes', 'failure_nodes', 'always_nodes')
# a line that starts a play or imports playbooks (include / import_playbook), with or without the list dash
PLAY_LINE = re.compile(r'^\s*-?\s*(?:hosts|(?:ansible\.builtin\.)?include|(?:ansible\.builtin\.)?import_playbook):')
TYPE_NAMES = {'organizations': 'organization', 'execution_environments': 'execution_environment', 'projects': 'project',
              'inventories': 'inventory', 'inventory_sources': 'inventory_source', 'credential_types': 'credential_type',
              'credentials': 'credential', 'job_templates': 'job_template', 'workflow_job_templates': 'workflow_job_template',
              'workflow_job_template_nodes': 'workflow_job_template_node', 'project_updates': 'project_update',
              'instance_groups': 'instance_group', 'labels': 'label', 'notification_templates': 'notification_template'}

# The managed credential types awx/configure.yml uses, with the inputs AWX defines for them.
MANAGED_TYPES = [
    {'name': 'Machine', 'kind': 'ssh', 'namespace': 'ssh', 'inputs': {'fields': [
        {'id': 'username', 'label': 'Username', 'type': 'string'},
        {'id': 'password', 'label': 'Password', 'type': 'string', 'secret': True, 'ask_at_runtime': True},
        {'id': 'ssh_key_data', 'label': 'SSH Private Key', 'type': 'string', 'format': 'ssh_private_key',
         'secret': True, 'multiline': True},
        {'id': 'ssh_public_key_data', 'label': 'Signed SSH Certificate', 'type': 'string', 'multiline': True,
         'secret': True},
        {'id': 'ssh_key_unlock', 'label': 'Private Key Passphrase', 'type': 'string', 'secret': True,
         'ask_at_runtime': True},
        {'id': 'become_method', 'label': 'Privilege Escalation Method', 'type': 'string'},
        {'id': 'become_username', 'label': 'Privilege Escalation Username', 'type': 'string'},
        {'id': 'become_password', 'label': 'Privilege Escalation Password', 'type': 'string', 'secret': True,
         'ask_at_runtime': True}]}},
    {'name': 'OpenShift or Kubernetes API Bearer Token', 'kind': 'kubernetes', 'namespace': 'kubernetes_bearer_token',
     'inputs': {'fields': [
         {'id': 'host', 'label': 'OpenShift or Kubernetes API Endpoint', 'type': 'string'},
         {'id': 'bearer_token', 'label': 'API authentication bearer token', 'type': 'string', 'secret': True},
         {'id': 'verify_ssl', 'label': 'Verify SSL', 'type': 'boolean', 'default': True},
         {'id': 'ssl_ca_cert', 'label': 'Certificate Authority data', 'type': 'string', 'secret': True,
          'multiline': True}],
         'required': ['host', 'bearer_token']}},
    {'name': 'Source Control', 'kind': 'scm', 'namespace': 'scm', 'inputs': {'fields': [
        {'id': 'username', 'label': 'Username', 'type': 'string'},
        {'id': 'password', 'label': 'Password', 'type': 'string', 'secret': True},
        {'id': 'ssh_key_data', 'label': 'SCM Private Key', 'type': 'string', 'secret': True, 'multiline': True},
        {'id': 'ssh_key_unlock', 'label': 'Private Key Passphrase', 'type': 'string', 'secret': True}]}},
    {'name': 'Container Registry', 'kind': 'registry', 'namespace': 'registry', 'inputs': {'fields': [
        {'id': 'host', 'label': 'Authentication URL', 'type': 'string', 'default': 'quay.io'},
        {'id': 'username', 'label': 'Username', 'type': 'string'},
        {'id': 'password', 'label': 'Password or Token', 'type': 'string', 'secret': True},
        {'id': 'verify_ssl', 'label': 'Verify SSL', 'type': 'boolean', 'default': True}],
        'required': ['host']}},
]


class Refused(Exception):
    """A request AWX refuses: answered with ``status`` and ``body``."""

    def __init__(self, body, status=400):
        super().__init__(body)
        self.body, self.status = body, status


def project_playbooks(root):
    """The playbooks AWX offers for a project checked out at ``root``: YAML files with a line that starts a play or
    imports one, outside hidden, roles, tasks, group_vars and host_vars directories."""
    found = []
    for directory, dirs, files in os.walk(root):
        relative = os.path.relpath(directory, root).split(os.sep)
        dirs[:] = sorted(d for d in dirs if not d.startswith('.'))
        hidden = [part for part in relative if part.startswith('.') and part != '.']
        if hidden or set(relative) & {'roles', 'tasks', 'group_vars', 'host_vars'}:
            continue
        for name in sorted(files):
            if not name.endswith(('.yml', '.yaml')):
                continue
            path = os.path.join(directory, name)
            with open(path, encoding='utf-8', errors='ignore') as handle:
                if any(PLAY_LINE.match(line) for line in handle):
                    found.append(os.path.relpath(path, root))
    return found


def check_survey_spec(spec):
    """What AWX's survey spec view refuses, as its error text; None when AWX stores the spec."""
    for field, kind in (('name', str), ('description', str), ('spec', list)):
        if field not in spec:
            return "Field '%s' is missing from survey spec." % field
        if not isinstance(spec[field], kind):
            return "Expected %s for field '%s', received %s type." % (kind.__name__, field, type(spec[field]).__name__)
    if not spec['spec']:
        return "'spec' doesn't contain any items."
    variables = set()
    for idx, item in enumerate(spec['spec']):
        if not isinstance(item, dict):
            return 'Survey question %s is not a json object.' % idx
        for field in ('type', 'question_name', 'variable', 'required'):
            if field not in item:
                return "'%s' missing from survey question %s" % (field, idx)
            if not isinstance(item[field], bool if field == 'required' else str):
                return "'%s' in survey question %s expected to be %s." % (
                    field, idx, 'boolean' if field == 'required' else 'string')
        if item['variable'] in variables:
            return "'variable' '%s' duplicated in survey question %s." % (item['variable'], idx)
        variables.add(item['variable'])
        if item['type'] not in SURVEY_TYPES:
            return "'%s' in survey question %s is not one of the allowed question types." % (item['type'], idx)
        if item.get('default', '') != '' and not isinstance(item['default'], SURVEY_TYPES[item['type']]):
            return 'Default value %s in survey question %s has the wrong type.' % (item['default'], idx)
        for key in ('min', 'max'):
            if item.get(key) is not None and (not isinstance(item[key], int) or isinstance(item[key], bool)):
                return 'The %s limit in survey question %s expected to be integer.' % (key, idx)
        if item['type'] in ('multiplechoice', 'multiselect'):
            if 'choices' not in item:
                return 'Survey question %s of type %s must specify choices.' % (idx, item['type'])
            if 'default' in item:
                defaults = item['default'].splitlines() if isinstance(item['default'], str) else item['default']
                if item['type'] == 'multiplechoice' and len(defaults) > 1:
                    return 'Multiple Choice (Single Select) can only have one default value.'
                if any(d not in item['choices'] for d in defaults):
                    return 'Default choice must be answered from the choices listed.'
        if isinstance(item.get('default'), str) and item['default'].startswith(ENCRYPTED):
            return '$encrypted$ is a reserved keyword, may not be used for new default in position %s.' % idx
    return None


def check_survey_answer(item, value):
    """What AWX says when a job is launched with ``value`` for the survey question ``item`` (None: accepted)."""
    kind = item['type']
    if kind in ('text', 'textarea', 'password'):
        if not isinstance(value, str):
            return "Value %s for '%s' expected to be a string." % (value, item['variable'])
        if item.get('min') not in ('', None) and len(value) < int(item['min']):
            return "'%s' value %s is too small." % (item['variable'], value)
        if item.get('max') not in ('', None) and len(value) > int(item['max']):
            return "'%s' value %s is too large." % (item['variable'], value)
    elif kind == 'integer':
        # AWX refuses a bool here too
        if type(value) is not int:  # pylint: disable=unidiomatic-typecheck
            return "Value %s for '%s' expected to be an integer." % (value, item['variable'])
        if item.get('min') not in ('', None) and value < int(item['min']):
            return "'%s' value %s is too small." % (item['variable'], value)
        if item.get('max') not in ('', None) and value > int(item['max']):
            return "'%s' value %s is too large." % (item['variable'], value)
    elif kind == 'multiplechoice':
        choices = item['choices'].splitlines() if isinstance(item['choices'], str) else item['choices']
        if value not in choices:
            return "Value %s for '%s' expected to be one of %s." % (value, item['variable'], choices)
    return None


class AwxApiDouble:
    """The double's state and its request handling; ``start()`` serves it on 127.0.0.1."""

    def __init__(self, project_root):
        self.project_root = project_root
        self.playbooks = project_playbooks(project_root)
        kept = list(SCHEMAS) + ['project_updates', 'instance_groups', 'labels', 'notification_templates']
        self.objects = dict((name, {}) for name in kept)
        self.links = {}           # (collection, id, association) -> [ids]
        self.surveys = {}         # (collection, id) -> spec
        self.requests = []        # (method, path) of every request
        self.refusals = []        # (method, path, body) of every 400
        self.errors = []          # requests the double could not handle
        self._next_id = 1
        self._server = None
        for managed in MANAGED_TYPES:
            self._store('credential_types', dict(managed, managed=True, description='', injectors={}))
        self._store('instance_groups', {'name': 'default'})

    # ------------------------------------------------------------------ serving
    def start(self):
        double = self

        class Handler(BaseHTTPRequestHandler):
            # one write per answer, sent at once: headers and body in small unbuffered writes meet delayed ACKs
            wbufsize = 65536
            disable_nagle_algorithm = True

            def log_message(self, *args):  # pylint: disable=arguments-differ
                pass

            def _answer(self, method):
                length = int(self.headers.get('Content-Length') or 0)
                raw = self.rfile.read(length) if length else b''
                status, body = double.handle(method, self.path, self.headers.get('Authorization', ''), raw)
                data = b'' if body is None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('X-API-Product-Name', 'AWX')
                self.send_header('X-API-Product-Version', VERSION)
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # pylint: disable=invalid-name
                self._answer('GET')

            def do_POST(self):  # pylint: disable=invalid-name
                self._answer('POST')

            def do_PATCH(self):  # pylint: disable=invalid-name
                self._answer('PATCH')

            def do_DELETE(self):  # pylint: disable=invalid-name
                self._answer('DELETE')

        self._server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self._server.server_address[1]

    def stop(self):
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------------ views
    def handle(self, method, raw_path, authorization, raw_body):
        parsed = urlparse(raw_path)
        self.requests.append((method, parsed.path))
        try:
            if authorization != 'Bearer %s' % TOKEN:
                raise Refused({'detail': 'Authentication credentials were not provided.'}, 401)
            body = json.loads(raw_body) if raw_body else {}
            parts = [p for p in parsed.path.split('/') if p]
            if parts[:2] != ['api', 'v2'] or len(parts) < 3:
                raise Refused({'detail': 'Not found.'}, 404)
            return self._route(method, parts[2:], dict(parse_qsl(parsed.query, keep_blank_values=True)), body)
        except Refused as refused:
            if refused.status == 400:
                self.refusals.append((method, parsed.path, refused.body))
            return refused.status, refused.body
        # the double's own failure, for the test to see
        except Exception as exc:  # pylint: disable=broad-except
            self.errors.append('%s %s: %r' % (method, raw_path, exc))
            return 500, {'detail': 'test double error: %r' % exc}

    def _route(self, method, parts, query, body):
        collection = parts[0]
        if collection not in self.objects and collection != 'unified_job_templates':
            raise Refused({'detail': 'Not found.'}, 404)
        if len(parts) == 1:
            if method == 'GET':
                return 200, self._list(collection, query)
            if method == 'POST' and collection in SCHEMAS:
                return 201, self._view(collection, self._create(collection, body))
            raise Refused({'detail': 'Method "%s" not allowed.' % method}, 405)
        obj = self._get(collection, parts[1])
        if len(parts) == 2:
            if method == 'GET':
                return 200, self._view(collection, obj)
            if method == 'PATCH' and collection in SCHEMAS:
                self._write(collection, obj, body, creating=False)
                return 200, self._view(collection, obj)
            raise Refused({'detail': 'Method "%s" not allowed.' % method}, 405)
        sub = parts[2]
        if sub == 'survey_spec' and collection in ('job_templates', 'workflow_job_templates'):
            return self._survey(collection, obj, method, body)
        if sub in ASSOCIATIONS.get(collection, ()):
            if method == 'GET':
                ids = self.links.get((collection, obj['id'], sub), [])
                return 200, self._page([self._view(self._target(collection, sub), self._get(self._target(collection, sub), i))
                                        for i in ids])
            if method == 'POST':
                self._associate(collection, obj, sub, body)
                return 204, None
        raise Refused({'detail': 'Not found.'}, 404)

    # ------------------------------------------------------------------ reading
    def _get(self, collection, key):
        pool = self._unified() if collection == 'unified_job_templates' else self.objects[collection]
        try:
            return pool[int(key)]
        except (KeyError, ValueError):
            raise Refused({'detail': 'Not found.'}, 404) from None

    def _unified(self):
        return dict((i, o) for c in UNIFIED for i, o in self.objects[c].items())

    def _list(self, collection, query):
        pool = self._unified() if collection == 'unified_job_templates' else self.objects[collection]
        ors = dict((k[4:], v) for k, v in query.items() if k.startswith('or__'))
        ands = dict((k, v) for k, v in query.items() if not k.startswith('or__') and k not in ('page', 'page_size'))
        found = []
        for obj in sorted(pool.values(), key=lambda o: o['id']):
            shown = self._view(obj['_collection'], obj)   # the type of a unified job template is a filter too
            if any(_text(shown.get(k)) != v for k, v in ands.items()):
                continue
            if ors and not any(_text(shown.get(k)) == v for k, v in ors.items()):
                continue
            found.append(shown)
        return self._page(found)

    @staticmethod
    def _page(results):
        return {'count': len(results), 'next': None, 'previous': None, 'results': results}

    def _view(self, collection, obj):
        """An object as AWX shows it: url, related, summary_fields; secrets as $encrypted$."""
        shown = dict((k, copy.deepcopy(v)) for k, v in obj.items() if not k.startswith('_'))
        url = '/api/v2/%s/%d/' % (collection, obj['id'])
        shown['url'] = url
        shown['type'] = TYPE_NAMES[collection]
        shown['related'] = dict((a, url + a + '/') for a in ASSOCIATIONS.get(collection, ()))
        shown['summary_fields'] = {}
        if collection in ('job_templates', 'workflow_job_templates'):
            shown['related']['survey_spec'] = url + 'survey_spec/'
        if collection == 'projects':
            shown['related']['update'] = url + 'update/'
            shown['summary_fields']['current_update'] = {'id': obj['_update'], 'status': 'successful'}
        if collection == 'credentials':
            secret = set(f['id'] for f in self._type_fields(obj['credential_type']) if f.get('secret'))
            shown['inputs'] = dict((k, ENCRYPTED if k in secret and v not in ('', None) else v)
                                   for k, v in obj.get('inputs', {}).items())
        if collection == 'workflow_job_template_nodes':
            shown['summary_fields']['workflow_job_template'] = {'id': obj['workflow_job_template']}
        return shown

    # ------------------------------------------------------------------ writing
    def _store(self, collection, fields):
        obj = dict(fields, id=self._next_id, _collection=collection)
        self._next_id += 1
        self.objects[collection][obj['id']] = obj
        return obj

    def _create(self, collection, body):
        obj = dict(SCHEMAS[collection].get('defaults', {}))
        self._write(collection, obj, body, creating=True)
        stored = self._store(collection, obj)
        if collection == 'projects':
            update = self._store('project_updates', {'status': 'successful', 'project': stored['id']})
            stored['_update'] = update['id']
            stored['scm_revision'] = '0' * 40
        return stored

    def _write(self, collection, obj, body, creating):
        schema = SCHEMAS[collection]
        if not isinstance(body, dict):
            raise Refused({'detail': 'JSON object expected'})
        candidate = dict(obj)
        for field, value in body.items():
            if field not in schema['fields']:
                raise Refused({field: ['Unknown field: %s does not have it.' % TYPE_NAMES[collection]]})
            candidate[field] = self._value(collection, field, schema['fields'][field], value, schema)
        if creating:
            missing = [f for f in schema['required'] if candidate.get(f) in (None, '')]
            if missing:
                raise Refused(dict((f, ['This field is required.']) for f in missing))
        self._unique(collection, candidate, obj.get('id'))
        getattr(self, '_check_' + collection, lambda c: None)(candidate)
        obj.update(candidate)

    def _value(self, collection, field, kind, value, schema):
        if value is None:
            # awx.awx sends None for what it was not given (inventory kind, host_filter): AWX keeps its default
            return schema.get('defaults', {}).get(field)
        bad = Refused({field: ['Not a valid %s: %r.' % (kind, value)]})
        if kind == 'str' or kind == 'json-text':
            if not isinstance(value, str):
                raise bad
            if kind == 'json-text' and value:
                try:
                    json.loads(value)
                except ValueError:
                    raise bad from None
        elif kind == 'bool':
            if not isinstance(value, bool):
                raise bad
        elif kind == 'int':
            if not isinstance(value, int) or isinstance(value, bool):
                raise bad
        elif kind == 'dict':
            if not isinstance(value, dict):
                raise bad
        elif kind.startswith('choice-int:'):
            if str(value) not in kind.split(':', 1)[1].split('|'):
                raise bad
            value = int(value)
        elif kind.startswith('choice:'):
            if value not in kind.split(':', 1)[1].split('|'):
                raise Refused({field: ['"%s" is not a valid choice.' % value]})
        elif kind.startswith('fk:'):
            target = kind.split(':', 1)[1]
            pool = self._unified() if target == 'unified_job_templates' else self.objects[target]
            if not isinstance(value, int) or value not in pool:
                raise Refused({field: ['Invalid pk "%s" - object does not exist.' % value]})
        del collection
        return value

    def _unique(self, collection, candidate, own_id):
        keys = SCHEMAS[collection]['unique']
        for other in self.objects[collection].values():
            if other['id'] != own_id and all(other.get(k) == candidate.get(k) for k in keys):
                raise Refused({'__all__': ['%s with this %s already exists.' % (TYPE_NAMES[collection], ', '.join(keys))]})

    def _type_fields(self, type_id):
        return (self.objects['credential_types'][type_id].get('inputs') or {}).get('fields', [])

    # ------------------------------------------------------------------ what AWX checks per object
    def _check_projects(self, obj):
        if obj.get('scm_type') and not obj.get('scm_url'):
            raise Refused({'scm_url': ['SCM URL is required.']})

    def _check_inventory_sources(self, obj):
        if obj.get('source') == 'scm':
            if not obj.get('source_project'):
                raise Refused({'source_project': ['Project required for scm type sources.']})
            path = os.path.join(self.project_root, obj.get('source_path') or '')
            if not os.path.exists(path):
                raise Refused({'source_path': ['%s is not in the project.' % obj.get('source_path')]})

    def _check_credential_types(self, obj):
        if obj.get('managed'):
            raise Refused({'managed': ['Managed credential types cannot be created or changed.']})
        fields = (obj.get('inputs') or {}).get('fields', [])
        ids = set()
        for field in fields:
            if not isinstance(field, dict) or not field.get('id') or not field.get('label'):
                raise Refused({'inputs': ['Every input field needs an id and a label: %r' % (field,)]})
            if field.get('type', 'string') not in ('string', 'boolean'):
                raise Refused({'inputs': ['%s is not a valid input type' % field.get('type')]})
            ids.add(field['id'])
        for name in (obj.get('inputs') or {}).get('required', []):
            if name not in ids:
                raise Refused({'inputs': ['required names %s, which is not a field' % name]})
        for section, entries in (obj.get('injectors') or {}).items():
            if section not in ('env', 'extra_vars', 'file'):
                raise Refused({'injectors': ['%s is not an injector section' % section]})
            for key, template in entries.items():
                if section == 'extra_vars' and not key.isidentifier():
                    raise Refused({'injectors': ['%s is not a valid variable name' % key]})
                for name in re.findall(r'{{\s*(\w+)', str(template)):
                    if name not in ids and name != 'tower':
                        raise Refused({'injectors': ['%s uses %s, which is not an input field' % (key, name)]})

    def _check_credentials(self, obj):
        fields = dict((f['id'], f) for f in self._type_fields(obj['credential_type']))
        inputs = obj.get('inputs') or {}
        for key, value in inputs.items():
            if key not in fields:
                raise Refused({'inputs': {key: ['Additional properties are not allowed (%s was unexpected)' % key]}})
            if fields[key].get('type') == 'boolean' and not isinstance(value, bool):
                raise Refused({'inputs': {key: ['%r is not of type boolean' % (value,)]}})
            if fields[key].get('type', 'string') == 'string' and not isinstance(value, str):
                raise Refused({'inputs': {key: ['%r is not of type string' % (value,)]}})
        required = (self.objects['credential_types'][obj['credential_type']].get('inputs') or {}).get('required', [])
        for key in required:
            if inputs.get(key) in (None, ''):
                raise Refused({'inputs': {key: ['required for %s' % self.objects['credential_types'][obj['credential_type']]['name']]}})

    def _check_job_templates(self, obj):
        if obj.get('playbook') not in self.playbooks:
            raise Refused({'playbook': ['Playbook not found for project.']})
        if not obj.get('inventory') and not obj.get('ask_inventory_on_launch'):
            raise Refused({'inventory': ['Job Template must provide \'inventory\' or allow prompting for it.']})
        if obj.get('job_slice_count', 1) < 1:
            raise Refused({'job_slice_count': ['Ensure this value is greater than or equal to 1.']})

    # ------------------------------------------------------------------ sub-lists
    @staticmethod
    def _target(collection, association):
        if association in EDGES:
            return 'workflow_job_template_nodes'
        if association in ('galaxy_credentials', 'credentials'):
            return 'credentials'
        if association == 'input_inventories':
            return 'inventories'
        if association.startswith('notification_templates'):
            return 'notification_templates'
        del collection
        return association

    def _associate(self, collection, obj, association, body):
        target = self._target(collection, association)
        if not isinstance(body.get('id'), int) or body['id'] not in self.objects[target]:
            raise Refused({'msg': 'Related object %r does not exist' % body.get('id')})
        key = (collection, obj['id'], association)
        ids = self.links.setdefault(key, [])
        if body.get('disassociate'):
            if body['id'] in ids:
                ids.remove(body['id'])
            return
        if body['id'] in ids:
            return
        child = self.objects[target][body['id']]
        if association in EDGES:
            self._check_edge(obj, child, association)
        if collection == 'job_templates' and association == 'credentials':
            taken = [self.objects['credentials'][i]['credential_type'] for i in ids]
            if child['credential_type'] in taken:
                raise Refused({'error': 'Cannot assign multiple %s credentials.'
                               % self.objects['credential_types'][child['credential_type']]['name']})
        ids.append(body['id'])

    def _check_edge(self, parent, child, association):
        if parent['workflow_job_template'] != child['workflow_job_template']:
            raise Refused({'msg': 'Cannot associate a node of another workflow job template.'})
        if parent['id'] == child['id']:
            raise Refused({'Error': 'Cycle detected.'})
        for other in EDGES:
            if other != association and child['id'] in self.links.get(('workflow_job_template_nodes', parent['id'], other), []):
                raise Refused({'Error': 'Relationship not allowed.'})
        # the edge would close a cycle when the parent is reachable from the child
        seen, todo = set(), [child['id']]
        while todo:
            node = todo.pop()
            if node == parent['id']:
                raise Refused({'Error': 'Cycle detected.'})
            if node not in seen:
                seen.add(node)
                for edge in EDGES:
                    todo.extend(self.links.get(('workflow_job_template_nodes', node, edge), []))

    def _survey(self, collection, obj, method, body):
        key = (collection, obj['id'])
        if method == 'GET':
            return 200, copy.deepcopy(self.surveys.get(key, {}))
        if method == 'DELETE':
            self.surveys.pop(key, None)
            return 200, None
        if method == 'POST':
            error = check_survey_spec(body)
            if error:
                raise Refused({'error': error})
            self.surveys[key] = copy.deepcopy(body)
            return 200, None
        raise Refused({'detail': 'Method "%s" not allowed.' % method}, 405)

    # ------------------------------------------------------------------ for the tests
    def find(self, collection, **fields):
        """The stored objects of ``collection`` whose fields equal ``fields``."""
        return [o for o in self.objects[collection].values() if all(o.get(k) == v for k, v in fields.items())]

    def linked(self, collection, obj, association):
        return [self.objects[self._target(collection, association)][i]
                for i in self.links.get((collection, obj['id'], association), [])]


def _text(value):
    """A stored value as it compares with a query string value."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return '' if value is None else str(value)
