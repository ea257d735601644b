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
  - Reads only; run it on the controller.
author:
  - gpunet.rdma contributors (@gpunet)
requirements:
  - jsonschema (Python, on the host that runs the module)
  - kubernetes-validate (Python), only when O(objects) holds built-in objects
options:
  objects:
    description: The objects to validate.
    type: list
    elements: dict
    required: true
  crd_paths:
    description: CRD YAML files, or directories whose C(*.yaml) / C(*.yml) files are read.
    type: list
    elements: path
    default: []
  crds:
    description: CRD documents.
    type: list
    elements: dict
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

import glob
import os

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpunet.rdma.plugins.module_utils._core_schema import CoreSchemaError, is_builtin, validate_builtin
from ansible_collections.gpunet.rdma.plugins.module_utils._crd_schema import CrdError, crd_index, validate_object

try:
    import yaml
except ImportError:  # pragma: no cover
    yaml = None


def crd_files(paths):
    files = []
    for path in paths:
        if os.path.isdir(path):
            files.extend(sorted(glob.glob(os.path.join(path, '*.yaml')) + glob.glob(os.path.join(path, '*.yml'))))
        else:
            files.append(path)
    return files


def main():
    module = AnsibleModule(
        argument_spec=dict(
            objects=dict(type='list', elements='dict', required=True),
            crd_paths=dict(type='list', elements='path', default=[]),
            crds=dict(type='list', elements='dict', default=[]),
            release=dict(type='str', default=''),
            kubernetes_version=dict(type='str', default='1.33'),
        ),
        supports_check_mode=True,
    )
    if yaml is None:
        module.fail_json(msg=missing_required_lib('PyYAML'))
    documents = list(module.params['crds'])
    for path in crd_files(module.params['crd_paths']):
        try:
            with open(path) as handle:
                documents.extend(yaml.safe_load_all(handle))
        except (IOError, OSError, yaml.YAMLError) as exc:
            module.fail_json(msg='Cannot read CRD file %s: %s' % (path, exc))
    index = crd_index(documents)
    custom = [obj for obj in module.params['objects'] if not is_builtin(obj.get('apiVersion'))]
    if custom and not index:
        module.fail_json(msg='No CustomResourceDefinition found in %s; point crd_paths at the operator chart\'s crds '
                             'directory' % (module.params['crd_paths'] or 'crds'))
    checked = []
    try:
        for obj in module.params['objects']:
            checked.append(dict(kind=obj.get('kind'), name=(obj.get('metadata') or {}).get('name'),
                                problems=validate_builtin(obj, module.params['kubernetes_version'])
                                if is_builtin(obj.get('apiVersion'))
                                else validate_object(obj, index, module.params['release'])))
    except (CrdError, CoreSchemaError) as exc:
        module.fail_json(msg=str(exc))
    bad = [c for c in checked if c['problems']]
    if bad:
        module.fail_json(msg='Objects do not match their schemas (CRDs%s, Kubernetes %s): %s' % (
            ' of ' + module.params['release'] if module.params['release'] else '', module.params['kubernetes_version'],
            '; '.join('%s %s: %s' % (c['kind'], c['name'], ', '.join(c['problems'])) for c in bad)),
            checked=checked, crd_count=len(index))
    module.exit_json(changed=False, checked=checked, crd_count=len(index))


if __name__ == '__main__':
    main()
