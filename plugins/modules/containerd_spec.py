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
  - With O(config_owner), the module first finds out who owns containerd's configuration on the node and never writes a
    file that tool writes again. kubespray writes C(config.toml) and the spec file C(cri-base.json) on every run, so
    the module writes nothing and succeeds when kubespray's spec files already carry the limits, else it fails with
    the inventory variables to set (C(containerd_base_runtime_specs) and C(containerd_default_base_runtime_spec_patch)
    as YAML). k3s and RKE2 render C(<data-dir>/agent/etc/containerd/config.toml) at every start; the spec is written
    (its directory created) and RV(config_owner) names a drop-in in the directory their rendered file imports
    (C(config-v3.toml.d) or C(config.toml.d), k3s pull request 13680) for M(gpunet.rdma.containerd_config); without
    such an imports line the module fails and says why a template cannot carry the setting. On plain containerd
    whose imports hold the NVIDIA Container Toolkit's drop-in (written again at every toolkit start), containerd 2.x
    gets a drop-in of ours that sorts after it.
  - The checks run before anything is written; a refusal leaves every file byte-identical.
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
  config_owner:
    description:
      - Who owns containerd's configuration. V(none) writes the spec and looks no further (the default, for use
        without the C(containerd_memlock) role).
      - Not to be confused with O(owner), the owner of the spec file.
      - V(auto) finds out, in this order - a C(config.toml) rendered by k3s or RKE2 under O(k3s_data_dir) or
        O(rke2_data_dir); kubespray's C(base_runtime_spec = "<dir of config_path>/cri-base.json") in O(config_path);
        else plain containerd (with the NVIDIA Container Toolkit drop-in check).
      - V(kubespray), V(k3s), V(rke2) name the owner; a custom spec file name of kubespray needs V(kubespray).
      - Needs the Python library tomlkit (except with V(none)).
    type: str
    choices: [auto, none, kubespray, k3s, rke2]
    default: none
  config_path:
    description: containerd's configuration on a node without k3s or RKE2 (kubespray writes it there too).
    type: path
    default: /etc/containerd/config.toml
  runtimes:
    description: CRI runtimes that must use the memlock limit (checked in kubespray's spec files and in the
      configuration k3s or RKE2 rendered).
    type: list
    elements: str
    default: [runc]
  k3s_data_dir:
    description: The data directory of k3s (its C(--data-dir)).
    type: path
    default: /var/lib/rancher/k3s
  rke2_data_dir:
    description: The data directory of RKE2 (its C(--data-dir)).
    type: path
    default: /var/lib/rancher/rke2
  containerd_version:
    description:
      - The release of the containerd that runs the pods (such as V(2.0.5)), when its binary cannot tell - the one
        k3s or RKE2 embeds outside the data directory's C(bin), or a host containerd outside E(PATH). Default is that
        binary's C(containerd --version); on k3s and RKE2 without either, an C(imports) line of the rendered file
        implies containerd 2. Only read with O(config_owner) other than V(none).
    type: str
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpunet.rdma.containerd_tools
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

- name: The same where kubespray, k3s or RKE2 owns containerd's configuration (the containerd_memlock role's way)
  gpunet.rdma.containerd_spec:
    path: /etc/containerd/rdma-base-spec.json
    config_owner: auto
    mode: "0644"
  register: containerd_spec_result

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
  description: The rlimits of the written spec (with kubespray as owner, the limits found in its spec files).
  returned: always
  type: list
  elements: dict
  sample:
    - {type: RLIMIT_NOFILE, soft: 1024, hard: 1024}
    - {type: RLIMIT_MEMLOCK, soft: 18446744073709551615, hard: 18446744073709551615}
config_owner:
  description:
    - Who owns containerd's configuration and where base_runtime_spec goes (O(config_owner=none) reports plain
      containerd without looking).
  returned: always
  type: dict
  contains:
    name:
      description: V(none), V(kubespray), V(k3s) or V(rke2).
      type: str
      sample: k3s
    evidence:
      description: What showed the owner.
      type: str
      sample: /var/lib/rancher/k3s/agent/etc/containerd/config.toml starts with "# File generated by k3s. DO NOT EDIT."
    config:
      description: The file M(gpunet.rdma.containerd_config) reads (containerd's config.toml, or the one k3s or RKE2
        rendered).
      type: str
      sample: /var/lib/rancher/k3s/agent/etc/containerd/config.toml
    write:
      description: V(config) edit the files in place, V(drop_in) write the drop-in of ours RV(config_owner.drop_in),
        V(none) nothing to write (the owner carries the limit already).
      type: str
      sample: drop_in
    drop_in:
      description: The drop-in of ours for M(gpunet.rdma.containerd_config) (empty when RV(config_owner.write) is not
        V(drop_in)).
      type: str
      sample: /var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.d/99-zz-gpunet-rdma.toml
    regenerated:
      description: The files the owner writes again (never written by this collection).
      type: list
      elements: str
      sample: [/var/lib/rancher/k3s/agent/etc/containerd/config.toml]
    containerd:
      description: The containerd binary matching the one that runs (k3s and RKE2 embed theirs), empty when none.
      type: str
      sample: /var/lib/rancher/k3s/data/current/bin/containerd
    release:
      description: That containerd's release (given, from its C(--version), or inferred), empty when not looked up.
      type: str
      sample: 2.0.5
    validate:
      description: Whether M(gpunet.rdma.containerd_config) can check the result with that binary.
      type: bool
      sample: true
    service:
      description: The systemd service that runs containerd (C(containerd), C(k3s), C(k3s-agent), C(rke2-server),
        C(rke2-agent)).
      type: str
      sample: k3s
    ctr:
      description: The C(ctr) that comes with it (empty - the one on E(PATH)).
      type: str
      sample: /var/lib/rancher/k3s/data/current/bin/ctr
    address:
      description: The socket of that containerd for C(ctr) (empty - ctr's default).
      type: str
      sample: /run/k3s/containerd/containerd.sock
    satisfied:
      description: The owner's files carry the limit already.
      type: bool
      sample: false
    notes:
      description: What the role reports about the owner (also returned as warnings).
      type: list
      elements: str
      sample: []
    summary:
      description: One line - the owner and where the setting goes.
      type: str
      sample: 'k3s: in /var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.d/99-zz-gpunet-rdma.toml'
written:
  description: Whether the module writes the spec (V(false) when kubespray owns the spec files).
  returned: always
  type: bool
  sample: true
backup_file:
  description: The copy of the previous file.
  returned: when O(backup=true) and the file changed
  type: str
  sample: /etc/containerd/rdma-base-spec.json.2468.2026-11-22@22:30:00~
'''

import os

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.gpunet.rdma.plugins.module_utils._atomic_file import (
    FileWrite,
    check_file_options,
    destination,
    update_attributes,
    write_files,
)
from ansible_collections.gpunet.rdma.plugins.module_utils.runtime._containerd import (
    CONTAINERD,
    CTR,
    SYSTEMCTL,
    HAS_TOMLKIT,
    TOMLKIT_IMPORT_ERROR,
    ConfigError,
    SpecError,
    build_spec,
    normalize_rlimits,
    parse_release,
    serialize,
    spec_warnings,
    strict_json,
)
from ansible_collections.gpunet.rdma.plugins.module_utils.runtime._containerd_owner import (
    DISTRIBUTIONS,
    OWNER_CHOICES,
    OwnerError,
    describe,
    detect,
    distribution_plan,
    find_service,
    kubespray_plan,
    record,
    toolkit_plan,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import (
    CONTAINERD_DIRS,
    SYSTEM_BIN_DIRS,
    HostReadError,
    decode_text,
    find_tool,
    output_summary,
    read_bytes,
    read_text,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._module import RdmaModule


def load_base(module, owner):
    """(the base spec as a dict, where it came from)"""
    base = module.params['base']
    if base == 'ctr':
        # k3s and RKE2 bring their own ctr (in the data directory's bin); `ctr oci spec` needs no running daemon
        explicit = module.params['ctr_path'] or (owner['ctr'] or None)
        ctr = find_tool(module, 'ctr', explicit=explicit, option='ctr_path',
                        opt_dirs=CONTAINERD_DIRS,
                        hint='Install containerd, set ctr_path, or give base a spec file.')
        rc, out, err = CTR(module, ctr).run('default_spec')[1:]
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


def executable(path):
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else ''


def containerd_release(module, containerd):
    """(major, minor, patch) that ``containerd --version`` prints, or None when it does not say."""
    rc, out, _err = CONTAINERD(module, containerd).run('version')[1:]
    if rc != 0:
        return None
    try:
        return parse_release(out)
    except ConfigError:
        return None


def explicit_release(module):
    text = module.params['containerd_version']
    if not text:
        return None
    try:
        return parse_release(text)
    except ConfigError:
        module.fail_json(msg='containerd_version %r is not a release such as 2.0.5. Nothing was written.' % text)


def service_is_active(module):
    systemctl = find_tool(module, 'systemctl', opt_dirs=SYSTEM_BIN_DIRS, required=False)

    def active(service):
        if not systemctl:
            return False
        rc = SYSTEMCTL(module, systemctl).run('is_active', is_active=service)[1]
        return rc == 0
    return active


def resolve_owner(module, wanted_rlimits):
    """The owner record; fails (nothing written) where the owner's tool must make the change."""
    params = module.params
    config_path = params['config_path']
    if params['config_owner'] == 'none':
        return record('none', config=config_path)
    if not HAS_TOMLKIT:
        module.fail_json(msg=missing_required_lib('tomlkit', reason='to read containerd\'s configuration and tell who '
                                                  'owns it (config_owner: %s)' % params['config_owner']),
                         exception=TOMLKIT_IMPORT_ERROR)
    data_dirs = {'k3s': params['k3s_data_dir'], 'rke2': params['rke2_data_dir']}
    name = params['config_owner']
    try:
        evidence = ''
        if name == 'auto':
            name, evidence = detect(config_path, data_dirs, read_text)
        if name == 'kubespray':
            memlock, extra = wanted_rlimits
            return kubespray_plan(config_path, read_text, memlock, extra, params['runtimes'], evidence)
        if name in DISTRIBUTIONS:
            bin_dir = os.path.join(data_dirs[name], *DISTRIBUTIONS[name]['bin'])
            containerd = executable(os.path.join(bin_dir, 'containerd'))
            release = explicit_release(module)
            if release is None and containerd:
                release = containerd_release(module, containerd)
            service = find_service(name, active=service_is_active(module))
            return distribution_plan(name, data_dirs[name], read_text, module.params['path'], params['runtimes'],
                                     release=release, containerd=containerd,
                                     ctr=executable(os.path.join(bin_dir, 'ctr')), service=service)
        if os.path.exists(config_path):
            containerd = find_tool(module, 'containerd', opt_dirs=CONTAINERD_DIRS,
                                   required=False) or ''
            release = explicit_release(module)
            if release is None and containerd:
                release = containerd_release(module, containerd)
            if release is not None:
                return toolkit_plan(config_path, read_text(config_path), read_text, release, containerd)
        return record('none', config=config_path)
    except OwnerError as exc:
        module.fail_json(msg=str(exc), config_owner=name)
    except (ConfigError, SpecError, HostReadError) as exc:
        module.fail_json(msg='Cannot tell who owns containerd\'s configuration (config_owner: %s): %s. Nothing was '
                         'written.' % (params['config_owner'], exc), config_owner=name)


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
            config_owner=dict(type='str', default='none', choices=list(OWNER_CHOICES)),
            config_path=dict(type='path', default='/etc/containerd/config.toml'),
            runtimes=dict(type='list', elements='str', default=['runc']),
            k3s_data_dir=dict(type='path', default=DISTRIBUTIONS['k3s']['data_dir']),
            rke2_data_dir=dict(type='path', default=DISTRIBUTIONS['rke2']['data_dir']),
            containerd_version=dict(type='str'),
        ),
        add_file_common_args=True,
        supports_check_mode=True,
    )
    path = module.params['path']
    if not path or not path.strip():
        module.fail_json(msg='path is empty; give where the spec goes, such as /etc/containerd/rdma-base-spec.json.')
    runtimes = [name.strip() for name in module.params['runtimes']]
    if not runtimes or any(not name for name in runtimes):
        module.fail_json(msg='runtimes must name at least one runtime (such as runc), without empty names.')
    module.params['runtimes'] = runtimes
    check_file_options(module)
    target = destination(module, path, module.params['follow'])
    rlimits = [dict((k, v) for k, v in item.items() if v is not None) for item in module.params['rlimits']]
    try:
        wanted = normalize_rlimits(rlimits, module.params['memlock'])
    except SpecError as exc:
        module.fail_json(msg='Nothing was written to %s: %s.' % (path, exc))
    owner = resolve_owner(module, (module.params['memlock'], rlimits))
    owner['summary'] = describe(owner)
    for note in owner['notes']:
        module.warn(note)
    if owner['name'] == 'kubespray':
        # kubespray's spec files carry the limits (resolve_owner refuses otherwise): nothing of ours to write
        module.exit_json(changed=False, path=path, rlimits=wanted, config_owner=owner, written=False)

    base, where = load_base(module, owner)
    try:
        spec = build_spec(base, module.params['memlock'], rlimits, where)
    except SpecError as exc:
        module.fail_json(msg='Nothing was written to %s: %s.' % (path, exc))
    for warning in spec_warnings(spec):
        module.warn(warning)

    before_text, before = read_destination(module, target)
    after_text = serialize(spec)
    changed = before != spec
    result = dict(path=path, rlimits=spec['process']['rlimits'], config_owner=owner, written=True)
    if module._diff:
        result['diff'] = dict(before=before_text if changed else after_text, after=after_text,
                              before_header=path, after_header=path)

    folder = os.path.dirname(target) or '.'
    if changed and not module.check_mode:
        if not os.path.isdir(folder):
            if owner['name'] not in DISTRIBUTIONS:
                module.fail_json(msg='The directory of %s does not exist; create it (containerd creates '
                                 '/etc/containerd when installed). Nothing was written.' % path, config_owner=owner)
            # k3s and RKE2 keep their containerd files under their data directory: /etc/containerd may not exist
            try:
                os.makedirs(folder, 0o755)
            except OSError as exc:
                module.fail_json(msg='Cannot create %s for the spec: %s. Nothing was written.' % (folder, exc),
                                 config_owner=owner)
        backups = write_files(module, [FileWrite(path, after_text, attributes=True)],
                              backup=module.params['backup'], follow=module.params['follow'])
        if path in backups:
            result['backup_file'] = backups[path]
    elif not changed:
        changed = update_attributes(module, path, changed, module.params['follow'])
    module.exit_json(changed=changed, **result)


if __name__ == '__main__':
    main()
