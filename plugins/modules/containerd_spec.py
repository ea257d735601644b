#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
---
module: containerd_spec
short_description: Write a containerd base runtime spec with the memlock limit RDMA needs
version_added: 0.1.0
description:
  - Writes an OCI runtime spec (JSON) for containerd's C(base_runtime_spec), starting from C(ctr oci spec) on the
    host or from an existing spec file, with C(RLIMIT_MEMLOCK) set to O(memlock) and any other O(rlimits).
  - Pods get the rlimits of this spec (runc applies them), which is how RDMA memory registration gets past the
    64 KiB / 8 MiB default that makes large transfers fail with C(Couldn't allocate MR).
  - Every rlimit of the base that is not overridden is kept (for example C(RLIMIT_NOFILE 1024/1024) of C(ctr oci spec)).
  - Idempotent by JSON content, not bytes. The file is written with sorted keys and a two-space indent so diffs
    read well, atomically; a broken base or a bad option fails and leaves the destination byte-identical.
  - To point containerd at the file, use M(gpunet.rdma.containerd_config).
author:
  - gpunet.rdma contributors (@gpunet)
options:
  path:
    description: Destination of the spec.
    type: path
    required: true
  base:
    description:
      - V(ctr) starts from C(ctr oci spec), the default spec of the containerd on the host.
      - Any other value is the path of an existing spec JSON to start from.
    type: str
    default: ctr
  memlock:
    description:
      - C(RLIMIT_MEMLOCK), soft and hard, in bytes, or V(unlimited) (18446744073709551615).
      - A number cannot raise a container above the hard limit of the container runtime's own process; give
        containerd C(LimitMEMLOCK=infinity) as the C(containerd_memlock) role does.
    type: str
    default: unlimited
  rlimits:
    description: Other rlimits to set; each replaces the base's entry of the same type or is added.
    type: list
    elements: dict
    default: []
    suboptions:
      type:
        description: The rlimit, V(RLIMIT_NOFILE) (or V(NOFILE)).
        type: str
        required: true
      soft:
        description: Soft limit, a number or V(unlimited). Defaults to O(rlimits[].hard).
        type: str
      hard:
        description: Hard limit, a number or V(unlimited). Defaults to O(rlimits[].soft).
        type: str
  ctr_path:
    description: Path of C(ctr); default is to search E(PATH).
    type: path
  backup:
    description: Keep a timestamped copy of the previous file when it changes.
    type: bool
    default: false
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.files
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
notes:
  - Commands run as argument lists with C(LC_ALL=C).
seealso:
  - module: gpunet.rdma.containerd_config
'''

EXAMPLES = r'''
- name: Base spec with unlimited memlock for RDMA pods
  gpunet.rdma.containerd_spec:
    path: /etc/containerd/rdma-base-spec.json
    mode: "0644"

- name: 4 MiB memlock and more open files, from an existing spec
  gpunet.rdma.containerd_spec:
    path: /etc/containerd/rdma-base-spec.json
    base: /etc/containerd/cri-base.json
    memlock: 4194304
    rlimits:
      - type: RLIMIT_NOFILE
        soft: 65536
        hard: 65536
    backup: true
'''

RETURN = r'''
path:
  description: The spec file.
  returned: always
  type: str
  sample: /etc/containerd/rdma-base-spec.json
rlimits:
  description: The rlimits of the written spec.
  returned: always
  type: list
  elements: dict
  sample:
    - {type: RLIMIT_NOFILE, soft: 1024, hard: 1024}
    - {type: RLIMIT_MEMLOCK, soft: 18446744073709551615, hard: 18446744073709551615}
backup_file:
  description: The copy of the previous file.
  returned: when O(backup=true) and the file changed
  type: str
  sample: /etc/containerd/rdma-base-spec.json.2468.2026-11-22@22:30:00~
'''

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpunet.rdma.plugins.module_utils._atomic_file import apply_file_attributes, replace_file
from ansible_collections.gpunet.rdma.plugins.module_utils._containerd import SpecError, build_spec, serialize

_COMMAND_ENV = {'LC_ALL': 'C', 'LANG': 'C'}


def load_base(module):
    base = module.params['base']
    if base == 'ctr':
        ctr = module.params['ctr_path'] or module.get_bin_path('ctr', opt_dirs=['/usr/local/bin'])
        if not ctr:
            module.fail_json(msg='ctr was not found: install containerd, set ctr_path, or give base a spec file.')
        rc, out, err = module.run_command([ctr, 'oci', 'spec'], environ_update=_COMMAND_ENV)
        if rc != 0:
            module.fail_json(msg='%s oci spec failed (rc=%d): %s' % (ctr, rc, (err or out).strip()), rc=rc)
        where = '`%s oci spec` output' % ctr
        text = out
    else:
        where = base
        try:
            with open(base) as handle:
                text = handle.read()
        except (IOError, OSError) as exc:
            module.fail_json(msg='Cannot read the base spec %s: %s' % (base, exc))
    try:
        return json.loads(text), where
    except ValueError as exc:
        module.fail_json(msg='%s is not valid JSON (%s); give a spec file written by `ctr oci spec`.' % (where, exc))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            base=dict(type='str', default='ctr'),
            memlock=dict(type='str', default='unlimited'),
            rlimits=dict(type='list', elements='dict', default=[], options=dict(
                type=dict(type='str', required=True),
                soft=dict(type='str'),
                hard=dict(type='str'),
            )),
            ctr_path=dict(type='path'),
            backup=dict(type='bool', default=False),
        ),
        add_file_common_args=True,
        supports_check_mode=True,
    )
    path = module.params['path']
    base, where = load_base(module)
    rlimits = [dict((k, v) for k, v in item.items() if v is not None) for item in module.params['rlimits']]
    try:
        spec = build_spec(base, module.params['memlock'], rlimits, where)
    except SpecError as exc:
        module.fail_json(msg='Nothing was written to %s: %s.' % (path, exc))

    before_text = ''
    before = None
    if os.path.exists(path):
        with open(path) as handle:
            before_text = handle.read()
        try:
            before = json.loads(before_text)
        except ValueError:
            before = None  # not JSON: rewrite it
    after_text = serialize(spec)
    changed = before != spec
    result = dict(path=path, rlimits=spec['process']['rlimits'])
    if module._diff:
        result['diff'] = dict(before=before_text if changed else after_text, after=after_text,
                              before_header=path, after_header=path)

    if changed and not module.check_mode:
        if not os.path.isdir(os.path.dirname(path) or '.'):
            module.fail_json(msg='The directory of %s does not exist; create it (containerd creates /etc/containerd '
                             'when installed).' % path)
        backup_file = replace_file(module, path, after_text, backup=module.params['backup'])
        if backup_file:
            result['backup_file'] = backup_file
    module.exit_json(changed=apply_file_attributes(module, path, changed), **result)


if __name__ == '__main__':
    main()
