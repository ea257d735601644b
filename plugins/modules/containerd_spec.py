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
  - Only the rlimit types Linux defines and runc accepts are written (C(RLIMIT_AS), C(RLIMIT_CORE), C(RLIMIT_CPU),
    C(RLIMIT_DATA), C(RLIMIT_FSIZE), C(RLIMIT_LOCKS), C(RLIMIT_MEMLOCK), C(RLIMIT_MSGQUEUE), C(RLIMIT_NICE),
    C(RLIMIT_NOFILE), C(RLIMIT_NPROC), C(RLIMIT_RSS), C(RLIMIT_RTPRIO), C(RLIMIT_RTTIME), C(RLIMIT_SIGPENDING),
    C(RLIMIT_STACK)); any other name is refused naming the closest valid type, because runc would fail every
    container with C(wrong rlimit value).
  - The base must be strict JSON as containerd (Go) reads it; C(NaN) and C(Infinity) are refused. A memlock of 0 or
    below 64 KiB is written but warned about, because RDMA memory registration fails with it.
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
      - 0 or a value below 65536 (64 KiB) is written with a warning; RDMA needs more.
    type: str
    default: unlimited
  rlimits:
    description: Other rlimits to set; each replaces the base's entry of the same type or is added.
    type: list
    elements: dict
    default: []
    suboptions:
      type:
        description: The rlimit, V(RLIMIT_NOFILE) (or V(NOFILE)); one of the types listed above.
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
  follow:
    description:
      - When O(path) is a symbolic link, replace the file it points to and keep the link (as M(ansible.builtin.copy)
        with C(follow=true)). V(false) replaces the link itself with a regular file.
    type: bool
    default: true
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
  - The file options (O(mode), O(owner), O(group), SELinux) are applied to the new file before it replaces the old
    one, so a wrong value fails without changing anything.
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

import os


from ansible_collections.gpunet.rdma.plugins.module_utils._atomic_file import (
    FileWrite,
    check_file_options,
    destination,
    update_attributes,
    write_files,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._containerd import (
    SpecError,
    build_spec,
    serialize,
    spec_warnings,
    strict_json,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import (
    HostReadError,
    decode_text,
    find_tool,
    output_summary,
    read_bytes,
    read_text,
    run_tool,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._module import RdmaModule


def load_base(module):
    """(the base spec as a dict, where it came from)"""
    base = module.params['base']
    if base == 'ctr':
        ctr = find_tool(module, 'ctr', explicit=module.params['ctr_path'], option='ctr_path',
                        opt_dirs=['/usr/local/bin', '/usr/bin'],
                        hint='Install containerd, set ctr_path, or give base a spec file.')
        rc, out, err = run_tool(module, [ctr, 'oci', 'spec'], what='ctr')
        if rc != 0:
            module.fail_json(msg='`%s oci spec` failed (rc=%d): %s. Is containerd installed? Or give base a spec '
                             'file.' % (ctr, rc, output_summary(out, err)), rc=rc)
        where, text = '`%s oci spec` output' % ctr, out
    else:
        where = base
        if not base.strip():
            module.fail_json(msg='base is empty; give "ctr" or the path of a spec JSON file.')
        try:
            text = read_text(base)
        except HostReadError as exc:
            module.fail_json(msg='Cannot use the base spec: %s. Give a readable UTF-8 JSON spec file (written by '
                             '`ctr oci spec`) or base: ctr. Nothing was written.' % exc)
    try:
        return strict_json(text, where), where
    except SpecError as exc:
        module.fail_json(msg='Nothing was written to %s: %s.' % (module.params['path'], exc))


def read_destination(module, target):
    """(text, parsed JSON or None) of the current spec file; ('', None) when there is none."""
    if not os.path.exists(target):
        return '', None
    try:
        text = decode_text(read_bytes(target), target, lenient=True)
    except HostReadError as exc:
        module.fail_json(msg='Cannot read the current %s: %s. Nothing was written.' % (module.params['path'], exc))
    try:
        return text, strict_json(text, target)
    except SpecError:
        return text, None  # not a spec containerd can read: rewritten


def main():
    module = RdmaModule(
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
            follow=dict(type='bool', default=True),
        ),
        add_file_common_args=True,
        supports_check_mode=True,
    )
    path = module.params['path']
    if not path or not path.strip():
        module.fail_json(msg='path is empty; give where the spec goes, such as /etc/containerd/rdma-base-spec.json.')
    check_file_options(module)
    target = destination(module, path, module.params['follow'])
    base, where = load_base(module)
    rlimits = [dict((k, v) for k, v in item.items() if v is not None) for item in module.params['rlimits']]
    try:
        spec = build_spec(base, module.params['memlock'], rlimits, where)
    except SpecError as exc:
        module.fail_json(msg='Nothing was written to %s: %s.' % (path, exc))
    for warning in spec_warnings(spec):
        module.warn(warning)

    before_text, before = read_destination(module, target)
    after_text = serialize(spec)
    changed = before != spec
    result = dict(path=path, rlimits=spec['process']['rlimits'])
    if module._diff:
        result['diff'] = dict(before=before_text if changed else after_text, after=after_text,
                              before_header=path, after_header=path)

    if changed and not module.check_mode:
        if not os.path.isdir(os.path.dirname(target) or '.'):
            module.fail_json(msg='The directory of %s does not exist; create it (containerd creates /etc/containerd '
                             'when installed). Nothing was written.' % path)
        backups = write_files(module, [FileWrite(path, after_text, attributes=True)],
                              backup=module.params['backup'], follow=module.params['follow'])
        if path in backups:
            result['backup_file'] = backups[path]
    elif not changed:
        changed = update_attributes(module, path, changed, module.params['follow'])
    module.exit_json(changed=changed, **result)


if __name__ == '__main__':
    main()
