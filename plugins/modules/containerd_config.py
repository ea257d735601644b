#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
---
module: containerd_config
short_description: Point containerd's CRI runtimes at a base runtime spec, validated by containerd itself
version_added: 0.1.0
description:
  - Sets C(base_runtime_spec) in containerd's C(config.toml) for each runtime of O(runtimes) and for every other
    runtime table present (the NVIDIA container toolkit copies the runc table into C(nvidia), so a setting on runc
    alone does not reach GPU pods).
  - Uses the table of the file's config version, C(version = 2) (containerd 1.x)
    C(plugins."io.containerd.grpc.v1.cri".containerd.runtimes.NAME), C(version = 3) (containerd 2.x)
    C(plugins."io.containerd.cri.v1.runtime".containerd.runtimes.NAME). A file without C(version) gets the version
    of the installed containerd.
  - Changes only the C(base_runtime_spec) lines; comments, key order and every other table stay as they are. Both
    quote styles of table headers are understood. A missing config is created from C(containerd config default).
  - Before the file is replaced, the candidate is checked with the real binary, C(containerd --config CANDIDATE
    config dump) must succeed and show the spec on each runtime. Otherwise nothing is written.
  - Does not restart containerd; the C(containerd_memlock) role does that in a handler.
author:
  - gpunet.rdma contributors (@gpunet)
options:
  path:
    description: containerd's configuration file.
    type: path
    default: /etc/containerd/config.toml
  spec_path:
    description: The base runtime spec to use (see M(gpunet.rdma.containerd_spec)).
    type: path
    required: true
  runtimes:
    description:
      - Runtimes that must use the spec. A missing V(runc) table is created; other runtime names must have a table
        already. Every runtime table present is configured as well.
    type: list
    elements: str
    default: [runc]
  containerd_path:
    description: Path of the C(containerd) binary used to create a default config and to validate; default searches E(PATH).
    type: path
  validate:
    description: Check the candidate with C(containerd --config CANDIDATE config dump) before replacing the file.
    type: bool
    default: true
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
  - containerd 1.6 ignores version 3 tables, so a version 3 file must be validated with containerd 2.x.
seealso:
  - module: gpunet.rdma.containerd_spec
'''

EXAMPLES = r'''
- name: Use the RDMA base spec for runc and every other CRI runtime (nvidia, ...)
  gpunet.rdma.containerd_config:
    spec_path: /etc/containerd/rdma-base-spec.json
    backup: true
  register: containerd_config
'''

RETURN = r'''
path:
  description: The configuration file.
  returned: always
  type: str
  sample: /etc/containerd/config.toml
version:
  description: The config version the tables were chosen for (2 for containerd 1.x, 3 for 2.x).
  returned: always
  type: int
  sample: 2
runtimes:
  description: Every runtime whose table carries the spec after the run.
  returned: always
  type: list
  elements: str
  sample: [nvidia, runc]
changed_runtimes:
  description: The runtimes whose C(base_runtime_spec) was (or, in check mode, would be) set.
  returned: always
  type: list
  elements: str
  sample: [runc]
created:
  description: Whether the file did not exist and was created from C(containerd config default).
  returned: always
  type: bool
  sample: false
backup_file:
  description: The copy of the previous file.
  returned: when O(backup=true) and the file changed
  type: str
  sample: /etc/containerd/config.toml.2468.2026-11-22@22:30:00~
'''

import os
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpunet.rdma.plugins.module_utils._atomic_file import apply_file_attributes, replace_file
from ansible_collections.gpunet.rdma.plugins.module_utils._containerd import (
    ConfigError,
    config_version,
    dump_base_runtime_specs,
    runtime_names,
    wire_base_runtime_spec,
)

_COMMAND_ENV = {'LC_ALL': 'C', 'LANG': 'C'}
_VERSION_RE = re.compile(r'\bv?(\d+)\.\d+\.\d+')


def _containerd(module):
    path = module.params['containerd_path'] or module.get_bin_path('containerd', opt_dirs=['/usr/local/bin'])
    if not path:
        module.fail_json(msg='containerd was not found: install it or set containerd_path.')
    return path


def installed_config_version(module, containerd):
    rc, out, err = module.run_command([containerd, '--version'], environ_update=_COMMAND_ENV)
    match = _VERSION_RE.search(out)
    if rc != 0 or not match:
        module.fail_json(msg='Cannot tell the containerd version from `%s --version`: %s'
                         % (containerd, (err or out).strip()))
    return 3 if int(match.group(1)) >= 2 else 2


def validate(module, containerd, candidate, spec_path, runtimes, version):
    rc, out, err = module.run_command([containerd, '--config', candidate, 'config', 'dump'],
                                      environ_update=_COMMAND_ENV)
    if rc != 0:
        module.fail_json(msg='containerd rejects the new configuration (nothing was written): %s'
                         % (err or out).strip()[-800:], rc=rc)
    dumped = dump_base_runtime_specs(out, version)
    wrong = sorted(name for name in runtimes if dumped.get(name) != spec_path)
    if wrong:
        module.fail_json(msg='containerd does not show base_runtime_spec = %s on %s in `config dump` (nothing was '
                         'written). For a version %d file, the installed containerd must understand that version.'
                         % (spec_path, ', '.join(wrong), version), dump=dumped)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', default='/etc/containerd/config.toml'),
            spec_path=dict(type='path', required=True),
            runtimes=dict(type='list', elements='str', default=['runc']),
            containerd_path=dict(type='path'),
            validate=dict(type='bool', default=True),
            backup=dict(type='bool', default=False),
        ),
        add_file_common_args=True,
        supports_check_mode=True,
    )
    path = module.params['path']
    spec_path = module.params['spec_path']
    containerd = None
    created = not os.path.exists(path)
    if created:
        containerd = _containerd(module)
        rc, before, err = module.run_command([containerd, 'config', 'default'], environ_update=_COMMAND_ENV)
        if rc != 0:
            module.fail_json(msg='`%s config default` failed: %s' % (containerd, (err or before).strip()))
    else:
        with open(path) as handle:
            before = handle.read()

    version = config_version(before)
    if version is None:
        containerd = containerd or _containerd(module)
        version = installed_config_version(module, containerd)
    try:
        after, changed_runtimes = wire_base_runtime_spec(before, spec_path, module.params['runtimes'], version)
    except ConfigError as exc:
        module.fail_json(msg='Nothing was written to %s: %s.' % (path, exc))
    runtimes = runtime_names(after, version)
    changed = created or after != before
    result = dict(path=path, version=version, runtimes=runtimes, changed_runtimes=changed_runtimes, created=created)
    if module._diff:
        result['diff'] = dict(before='' if created else before, after=after, before_header=path, after_header=path)

    if changed and not module.check_mode:
        binary = (containerd or _containerd(module)) if module.params['validate'] else None

        def check(candidate):
            if binary:
                validate(module, binary, candidate, spec_path, runtimes, version)

        backup_file = replace_file(module, path, after, backup=module.params['backup'], check=check)
        if backup_file:
            result['backup_file'] = backup_file
    module.exit_json(changed=apply_file_attributes(module, path, changed), **result)


if __name__ == '__main__':
    main()
