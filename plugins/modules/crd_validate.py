#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
---
module: crd_validate
short_description: Validate Kubernetes objects against the CRDs of an operator release and the core schemas
version_added: 0.1.0
description:
  - Checks every object against the C(openAPIV3Schema) of its CRD (with jsonschema), and reports every field the
    schema does not declare. The API server silently prunes such fields (or rejects them under strict field
    validation), so a field from another operator release would otherwise vanish without a word.
  - The CRDs come from YAML files (O(crd_paths), e.g. a chart's C(crds/) directory) or as documents (O(crds), e.g.
    the C(resources) of M(kubernetes.core.k8s_info) on C(CustomResourceDefinition)).
  - Built-in objects (C(v1), C(apps/v1), C(batch/v1), C(*.k8s.io) groups, e.g. a test DaemonSet) are checked
    against the upstream OpenAPI schemas of O(kubernetes_version) with the kubernetes-validate package, in strict
    mode (undeclared fields are problems too).
  - The module fails, naming the file or document and the fix, on a CRD path that is missing, a directory that
    cannot be listed, a file that is not UTF-8 or not YAML, a named file without a CRD, and a CRD whose group, names,
    versions or C(openAPIV3Schema) are missing or of the wrong type (what the API server would refuse to install).
    Files of a directory that hold no CRD (a chart's C(values.yaml)) are skipped.
  - Reads only; run it on the controller.
author:
  - gpunet.rdma contributors (@gpunet)
requirements:
  - jsonschema (Python, on the host that runs the module)
  - kubernetes-validate (Python), only when O(objects) holds built-in objects
options:
  objects:
    description:
      - The objects to validate (mappings with C(apiVersion), C(kind), C(metadata)). An item that is not a mapping is
        reported as a problem of that item.
    type: list
    elements: raw
    required: true
  crd_paths:
    description: CRD YAML files (UTF-8), or directories whose C(*.yaml) / C(*.yml) files are read.
    type: list
    elements: path
    default: []
  crds:
    description:
      - CRD documents, e.g. the C(resources) of M(kubernetes.core.k8s_info) on C(CustomResourceDefinition). An item
        that is not a CustomResourceDefinition mapping fails the module, naming its position.
    type: list
    elements: raw
    default: []
  kubernetes_version:
    description:
      - The Kubernetes minor release whose schemas check the built-in objects.
    type: str
    default: "1.33"
  release:
    description: A name for the CRD set, used in messages (e.g. V(network-operator v26.4.1)).
    type: str
    default: ""
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
'''

EXAMPLES = r'''
- name: Validate the rendered objects against the chart's CRDs
  gpunet.rdma.crd_validate:
    objects: "{{ built.objects }}"
    crd_paths: [./network-operator/crds]
    release: network-operator v26.4.1
  delegate_to: localhost
  run_once: true
'''

RETURN = r'''
checked:
  description: One entry per object.
  returned: always
  type: list
  elements: dict
  contains:
    kind:
      description: The object's kind.
      type: str
    name:
      description: The object's C(metadata.name).
      type: str
    problems:
      description: What is wrong with it; empty when it is valid.
      type: list
      elements: str
crd_count:
  description: How many CRD versions were read.
  returned: always
  type: int
'''

import os

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._core_schema import (
    CoreSchemaError,
    is_builtin,
    validate_builtin,
)
from ansible_collections.gpunet.rdma.plugins.module_utils.cluster._crd_schema import (
    CrdError,
    crd_index,
    object_identity,
    validate_object,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import HostReadError, list_dir, printable, read_text
from ansible_collections.gpunet.rdma.plugins.module_utils._module import RdmaModule

try:
    import yaml
except ImportError:  # pragma: no cover
    yaml = None

CRD_SUFFIXES = ('.yaml', '.yml')


class CrdFileError(Exception):
    """A CRD path that cannot be used; the message names it and the fix."""


def crd_files(paths):
    """``[(file, named)]``: the files of ``paths``, ``named`` when the user listed the file itself."""
    files = []
    for path in paths:
        if not os.path.lexists(path):
            raise CrdFileError('crd_paths: %s does not exist; point it at the chart\'s crds directory or a CRD file'
                               % path)
        if os.path.isdir(path):
            try:
                names = list_dir(path)
            except HostReadError as exc:
                raise CrdFileError('crd_paths: %s' % exc)
            files.extend((os.path.join(path, name), False) for name in names
                         if name.endswith(CRD_SUFFIXES) and not os.path.isdir(os.path.join(path, name)))
        else:
            files.append((path, True))
    return files


def load_documents(path):
    """The YAML documents of one file; CrdFileError naming the file, the line and the reason otherwise."""
    try:
        text = read_text(path)
    except HostReadError as exc:
        raise CrdFileError('Cannot read the CRD file: %s; point crd_paths at the chart\'s CRD YAML files' % exc)
    try:
        return [document for document in yaml.safe_load_all(text) if document is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, 'problem_mark', None)
        where = ' at line %d, column %d' % (mark.line + 1, mark.column + 1) if mark is not None else ''
        raise CrdFileError('CRD file %s is not valid YAML%s: %s; fix the file or take the CRDs of the chart again'
                           % (path, where, printable(getattr(exc, 'problem', None) or exc, 200)))


def describe_kinds(documents):
    kinds = []
    for document in documents:
        kinds.append(document.get('kind') if isinstance(document, dict) and isinstance(document.get('kind'), str)
                     else 'a %s' % type(document).__name__)
    return ', '.join(str(kind) for kind in kinds[:5]) or 'nothing'


def read_crds(module):
    """``{(apiVersion, kind): schema}`` of every CRD of O(crds) and O(crd_paths); fails naming what is wrong."""
    index = {}
    try:
        for position, document in enumerate(module.params['crds']):
            if not isinstance(document, dict) or document.get('kind') != 'CustomResourceDefinition':
                raise CrdFileError('crds[%d] is %s, not a CustomResourceDefinition; pass the resources of '
                                   'kubernetes.core.k8s_info on CustomResourceDefinition'
                                   % (position, describe_kinds([document])))
            index.update(crd_index([document], 'crds[%d]' % position))
        for path, named in crd_files(module.params['crd_paths']):
            documents = load_documents(path)
            found = crd_index(documents, path)
            if named and not found:
                raise CrdFileError('No CustomResourceDefinition found in %s (it holds %s); point crd_paths at the '
                                   'operator chart\'s crds directory or its CRD files'
                                   % (path, describe_kinds(documents)))
            index.update(found)
    except (CrdFileError, CrdError) as exc:
        module.fail_json(msg=str(exc))
    return index


def check(obj, index, release, kubernetes_version):
    if isinstance(obj, dict) and is_builtin(obj.get('apiVersion')):
        return validate_builtin(obj, kubernetes_version)
    return validate_object(obj, index, release)


def main():
    module = RdmaModule(
        argument_spec=dict(
            objects=dict(type='list', elements='raw', required=True),
            crd_paths=dict(type='list', elements='path', default=[]),
            crds=dict(type='list', elements='raw', default=[]),
            release=dict(type='str', default=''),
            kubernetes_version=dict(type='str', default='1.33'),
        ),
        supports_check_mode=True,
    )
    if yaml is None:
        module.fail_json(msg=missing_required_lib('PyYAML'))
    index = read_crds(module)
    custom = [obj for obj in module.params['objects']
              if isinstance(obj, dict) and not is_builtin(obj.get('apiVersion'))]
    if custom and not index:
        module.fail_json(msg='No CustomResourceDefinition found in %s; point crd_paths at the operator chart\'s crds '
                             'directory' % (', '.join(module.params['crd_paths']) or 'crds (empty)'))
    checked = []
    try:
        for obj in module.params['objects']:
            _api_version, kind, name = object_identity(obj)
            checked.append(dict(kind=kind, name=name,
                                problems=check(obj, index, module.params['release'],
                                               module.params['kubernetes_version'])))
    except (CrdError, CoreSchemaError) as exc:
        module.fail_json(msg='Cannot validate %s %s: %s' % (kind, name, exc))
    bad = [c for c in checked if c['problems']]
    if bad:
        module.fail_json(msg='Objects do not match their schemas (CRDs%s, Kubernetes %s): %s' % (
            ' of ' + module.params['release'] if module.params['release'] else '', module.params['kubernetes_version'],
            '; '.join('%s %s: %s' % (c['kind'], c['name'], ', '.join(c['problems'])) for c in bad)),
            checked=checked, crd_count=len(index))
    module.exit_json(changed=False, checked=checked, crd_count=len(index))


if __name__ == '__main__':
    main()
