#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r'''
---
module: containerd_config
short_description: Point containerd's CRI runtimes at a base runtime spec, where containerd takes it from
version_added: 0.1.0
description:
  - Sets C(base_runtime_spec) for each runtime of O(runtimes) and for every other CRI runtime that takes effect
    (the NVIDIA Container Toolkit adds C(nvidia) runtimes; a setting on runc alone does not reach GPU pods).
  - Follows the C(imports) of C(config.toml) (files and glob patterns, relative to the importing file, loaded
    breadth first as containerd does) and applies the merge rules of the containerd release that runs. On
    containerd 1.x a file's C(plugins) section replaces the whole section of earlier files, so only the CRI section
    of the last file that has one counts and the spec goes there (for example the drop-in the NVIDIA Container
    Toolkit writes with a copy of the CRI section). On containerd 2.x plugin sections merge key by key, so the
    spec goes into the file whose table of that runtime takes effect (the drop-in that defines C(nvidia)), or
    into a drop-in of yours (O(drop_in)). Tables containerd ignores (another config version, a replaced section)
    are never edited; the module warns about them.
  - Each file's own C(version) decides its table names, C(version = 1) C(plugins.cri), C(version = 2)
    C(plugins."io.containerd.grpc.v1.cri"), C(version = 3) and C(4) C(plugins."io.containerd.cri.v1.runtime");
    containerd 2.3 and later migrate each file from its own version, 2.0 to 2.2 use the tables of the merged
    version only, and a drop-in of a higher version than C(config.toml) is refused (containerd 2.3 does not start).
  - Reads and writes TOML with tomlkit, so comments, quoting and layout stay; inline tables, dotted keys, multi-line
    arrays and strings are understood. Every edit is checked by parsing the result again; an edit that would
    change any other setting is refused. A missing C(config.toml) is created from C(containerd config default).
  - Before anything is replaced, the merged result is checked with the real binary, C(containerd --config
    CANDIDATE config dump) on copies of every file, which must succeed and show the spec on every runtime.
    Otherwise nothing is written. All files change together or none does.
  - Does not restart containerd; the C(containerd_memlock) role does that in a handler.
author:
  - gpunet.rdma contributors (@gpunet)
requirements:
  - The Python library tomlkit on the managed node (Debian/Ubuntu C(python3-tomlkit), RHEL-likes C(python3-tomlkit)
    from EPEL, or C(pip install tomlkit)); the C(containerd_memlock) role installs it.
options:
  path:
    description: containerd's main configuration file.
    type: path
    default: /etc/containerd/config.toml
  spec_path:
    description:
      - The base runtime spec to use (see M(gpunet.rdma.containerd_spec)). An absolute path of an existing file,
        because containerd loads it when it starts and its CRI plugin fails without it.
    type: path
    required: true
  spec_pending:
    description:
      - Set to V(true) when O(spec_path) is written by an earlier task of the same run that, in check mode, did not
        write it (for example a registered M(gpunet.rdma.containerd_spec) result that is C(changed)). Only honoured
        in check mode, where a missing O(spec_path) is then reported instead of refused; in a real run the file must
        exist.
    type: bool
    default: false
  runtimes:
    description:
      - Runtimes that must use the spec. A missing V(runc) table is created (runc is containerd's default runtime);
        other names must have a table that takes effect. Every runtime table that takes effect is configured too.
    type: list
    elements: str
    default: [runc]
  drop_in:
    description:
      - Write the setting into this file of yours instead of the files that define the runtimes (containerd 2.x
        only, which merges plugin sections key by key). It must be covered by the C(imports) of O(path) (for
        example C(/etc/containerd/conf.d/99-zz-gpunet-rdma.toml) with C(imports = ["/etc/containerd/conf.d/*.toml"]))
        and sort after every file that sets C(base_runtime_spec) itself. Leave unset to edit the files in place.
    type: path
  containerd_version:
    description:
      - The containerd release whose merge rules apply (such as V(2.1.4)). Default is what C(containerd --version)
        says; set it when the containerd that runs is not the binary found (an embedded one).
    type: str
  validate:
    description: Check the merged candidate with C(containerd --config CANDIDATE config dump) before replacing files.
    type: bool
    default: true
  backup:
    description: Keep a timestamped copy of every file that changes.
    type: bool
    default: false
  follow:
    description:
      - When a file to write is a symbolic link, replace the file it points to and keep the link (as
        M(ansible.builtin.copy) with C(follow=true)). V(false) replaces the link itself with a regular file.
    type: bool
    default: true
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpunet.rdma.containerd_tools.containerd
  - ansible.builtin.files
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: One diff per file that would be written.
  platform:
    platforms: posix
notes:
  - Commands run as argument lists with C(LC_ALL=C).
  - The file options (O(mode), O(owner), O(group), SELinux) apply to O(path) and to a O(drop_in) this module
    creates; they are applied to the new file before it replaces the old one, so a wrong value changes nothing.
    Other files keep their own attributes.
  - containerd 1.6 ignores version 3 tables, so a version 3 file is refused on containerd 1.x.
seealso:
  - module: gpunet.rdma.containerd_spec
'''

EXAMPLES = r'''
- name: Use the RDMA base spec for runc and every other CRI runtime (nvidia, ...), wherever they are defined
  gpunet.rdma.containerd_config:
    spec_path: /etc/containerd/rdma-base-spec.json
    backup: true
  register: containerd_config

- name: In check mode, accept a spec that the containerd_spec task above would write
  gpunet.rdma.containerd_config:
    spec_path: /etc/containerd/rdma-base-spec.json
    spec_pending: "{{ containerd_spec_result is changed }}"

- name: containerd 2.x with imports = ["/etc/containerd/conf.d/*.toml"], the setting in a drop-in of ours
  gpunet.rdma.containerd_config:
    spec_path: /etc/containerd/rdma-base-spec.json
    runtimes: [runc, nvidia]
    drop_in: /etc/containerd/conf.d/99-zz-gpunet-rdma.toml
'''

RETURN = r'''
path:
  description: The main configuration file.
  returned: always
  type: str
  sample: /etc/containerd/config.toml
release:
  description: The containerd release whose merge rules were applied.
  returned: always
  type: str
  sample: 1.6.20
version:
  description: The config version of the merged configuration (2 for containerd 1.x files, 3 or 4 for 2.x).
  returned: always
  type: int
  sample: 2
runtimes:
  description: Every runtime that takes effect, all of them with the spec after the run.
  returned: always
  type: list
  elements: str
  sample: [nvidia, runc]
changed_runtimes:
  description: The runtimes whose effective C(base_runtime_spec) was (or, in check mode, would be) set.
  returned: always
  type: list
  elements: str
  sample: [runc]
targets:
  description: For each runtime, the file that holds its setting.
  returned: always
  type: dict
  sample: {runc: /etc/containerd/conf.d/99-nvidia.toml, nvidia: /etc/containerd/conf.d/99-nvidia.toml}
files:
  description: The files that were (or, in check mode, would be) written.
  returned: always
  type: list
  elements: str
  sample: [/etc/containerd/conf.d/99-nvidia.toml]
loaded:
  description: Every file containerd loads, in its order (config.toml first, then its imports).
  returned: always
  type: list
  elements: str
  sample: [/etc/containerd/config.toml, /etc/containerd/conf.d/99-nvidia.toml]
ignored:
  description: Runtime tables that containerd does not use, and why (also reported as warnings).
  returned: always
  type: list
  elements: str
created:
  description: Whether O(path) did not exist and was created from C(containerd config default).
  returned: always
  type: bool
  sample: false
backup_file:
  description: The copy of the previous O(path).
  returned: when O(backup=true) and O(path) changed
  type: str
  sample: /etc/containerd/config.toml.2468.2026-11-22@22:30:00~
backup_files:
  description: The copy of every previous file that changed, by file.
  returned: always
  type: dict
  sample: {/etc/containerd/conf.d/99-nvidia.toml: /etc/containerd/conf.d/99-nvidia.toml.2468.2026-11-22@22:30:00~}
'''

import os
import shutil
import tempfile

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.gpunet.rdma.plugins.module_utils._atomic_file import (
    FileWrite,
    check_file_options,
    destination,
    update_attributes,
    write_files,
    write_scratch,
)
from ansible_collections.gpunet.rdma.plugins.module_utils.runtime._containerd import (
    CONTAINERD,
    HAS_TOMLKIT,
    TOMLKIT_IMPORT_ERROR,
    ConfigError,
    ConfigFile,
    dump_base_runtime_specs,
    load_layout,
    parse_release,
    release_text,
    wire,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import (
    CONTAINERD_DIRS,
    HostReadError,
    find_tool,
    output_summary,
    read_text,
)
from ansible_collections.gpunet.rdma.plugins.module_utils._module import RdmaModule

TOMLKIT_REASON = ('to read and write containerd\'s config.toml keeping its comments (install python3-tomlkit on '
                  'Debian/Ubuntu, python3-tomlkit from EPEL on RHEL-likes, or `pip install tomlkit` for the Python '
                  'that runs Ansible modules)')


def check_spec_path(module):
    spec_path = module.params['spec_path']
    if not spec_path or not spec_path.strip():
        module.fail_json(msg='spec_path is empty; give the absolute path of the base runtime spec (written by '
                         'gpunet.rdma.containerd_spec). Nothing was written.')
    if not os.path.isabs(spec_path):
        module.fail_json(msg='spec_path %r is relative; containerd needs an absolute path such as '
                         '/etc/containerd/rdma-base-spec.json. Nothing was written.' % spec_path)
    if os.path.isdir(spec_path):
        module.fail_json(msg='spec_path %s is a directory; give the spec file itself. Nothing was written.'
                         % spec_path)
    if not os.path.exists(spec_path):
        if module.params['spec_pending'] and module.check_mode:
            module.warn('spec_path %s does not exist yet; spec_pending says an earlier task of this run writes it '
                        '(check mode wrote nothing).' % spec_path)
            return
        module.fail_json(msg='spec_path %s does not exist: containerd\'s CRI plugin fails to start without it. '
                         'Write it first (gpunet.rdma.containerd_spec); in check mode, set spec_pending when that '
                         'task would write it. Nothing was written.' % spec_path)


def containerd_binary(module):
    return find_tool(module, 'containerd', explicit=module.params['containerd_path'], option='containerd_path',
                     opt_dirs=CONTAINERD_DIRS,
                     hint='Install containerd, set containerd_path, or set containerd_version and validate: false.')


def running_release(module, containerd):
    if module.params['containerd_version']:
        try:
            return parse_release(module.params['containerd_version'])
        except ConfigError:
            module.fail_json(msg='containerd_version %r is not a release such as 1.7.27 or 2.1.4.'
                             % module.params['containerd_version'])
    rc, out, err = CONTAINERD(module, containerd).run('version')[1:]
    try:
        if rc != 0:
            raise ConfigError('rc=%d' % rc)
        return parse_release(out)
    except ConfigError:
        module.fail_json(msg='Cannot tell the containerd release from `%s --version` (rc=%d): %s. Set '
                         'containerd_version or fix containerd_path.' % (containerd, rc, output_summary(out, err)))


def read_main(module, containerd):
    """(path of the file read, its text, created?)"""
    path = module.params['path']
    target = destination(module, path, module.params['follow'])
    if os.path.lexists(target) and os.path.exists(target):
        try:
            return target, read_text(target), False
        except HostReadError as exc:
            module.fail_json(msg='Nothing was written: %s.' % exc)
    rc, out, err = CONTAINERD(module, containerd).run('default_config')[1:]
    if rc != 0 or not out.strip():
        module.fail_json(msg='%s does not exist and `%s config default` failed (rc=%d): %s. Create the file or fix '
                         'containerd.' % (path, containerd, rc, output_summary(out, err)), rc=rc)
    return target, out, True


def read_imported(path):
    return read_text(path)


def validate(module, containerd, files, texts, runtimes, spec_path):
    """containerd config dump on copies of every loaded file, in containerd's load order."""
    import tomlkit  # present: checked at start

    workdir = tempfile.mkdtemp(prefix='gpunet-containerd-')
    try:
        copies = []
        for index, config in enumerate(files):
            copies.append(os.path.join(workdir, '%02d-%s' % (index, os.path.basename(config.path) or 'config.toml')))
        for index, config in enumerate(files):
            document = tomlkit.parse(texts.get(config.path, config.original))
            if 'imports' in document:
                del document['imports']
            if index == 0 and len(copies) > 1:
                document['imports'] = copies[1:]
            write_scratch(copies[index], tomlkit.dumps(document))
        rc, out, err = CONTAINERD(module, containerd).run('config_file dump_config', config_file=copies[0])[1:]
        if rc != 0:
            module.fail_json(msg='containerd rejects the new configuration (nothing was written): %s'
                             % output_summary(out, err), rc=rc)
        try:
            dumped = dump_base_runtime_specs(out)
        except ConfigError as exc:
            module.fail_json(msg='Cannot read `containerd config dump` (nothing was written): %s' % exc)
        wrong = sorted(name for name in runtimes if dumped.get(name) != spec_path)
        if wrong:
            module.fail_json(msg='containerd does not show base_runtime_spec = %s on %s in `config dump` (nothing '
                             'was written); the installed containerd must understand the config version of '
                             'the files.' % (spec_path, ', '.join(wrong)), dump=dumped)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main():
    module = RdmaModule(
        argument_spec=dict(
            path=dict(type='path', default='/etc/containerd/config.toml'),
            spec_path=dict(type='path', required=True),
            spec_pending=dict(type='bool', default=False),
            runtimes=dict(type='list', elements='str', default=['runc']),
            drop_in=dict(type='path'),
            containerd_path=dict(type='path'),
            containerd_version=dict(type='str'),
            validate=dict(type='bool', default=True),
            backup=dict(type='bool', default=False),
            follow=dict(type='bool', default=True),
        ),
        add_file_common_args=True,
        supports_check_mode=True,
    )
    if not HAS_TOMLKIT:
        module.fail_json(msg=missing_required_lib('tomlkit', reason=TOMLKIT_REASON), exception=TOMLKIT_IMPORT_ERROR)
    params = module.params
    check_spec_path(module)
    check_file_options(module)
    spec_path = params['spec_path']
    runtimes = [name.strip() for name in params['runtimes']]
    if not runtimes or any(not name for name in runtimes):
        module.fail_json(msg='runtimes must name at least one runtime (such as runc), without empty names.')
    drop_in = params['drop_in']
    if drop_in is not None and not os.path.isabs(drop_in):
        module.fail_json(msg='drop_in %r is relative; give an absolute path covered by the imports of %s.'
                         % (drop_in, params['path']))
    if drop_in is not None:
        drop_in = destination(module, drop_in, params['follow'])
    needs_binary = params['validate'] or not params['containerd_version'] or not os.path.exists(params['path'])
    containerd = containerd_binary(module) if needs_binary else None
    release = running_release(module, containerd)
    main_path, main_text, created = read_main(module, containerd)
    try:
        files = load_layout(main_path, main_text, read_imported, release, created=created, drop_in=drop_in)
        if created:
            files[0] = ConfigFile(main_path, main_text, created=True, original='')
        analysis, plan, texts, after = wire(files, release, spec_path, runtimes, drop_in)
    except HostReadError as exc:
        module.fail_json(msg='Nothing was written: %s (an imported file of %s).' % (exc, params['path']))
    except ConfigError as exc:
        module.fail_json(msg='Nothing was written to %s: %s.' % (params['path'], exc))
    for note in analysis.ignored:
        module.warn(note)
    before_values = analysis.effective_runtimes()
    effective = after.effective_runtimes()
    changed_runtimes = sorted(name for name, value in effective.items() if before_values.get(name) != value)
    order = [config.path for config in after.files]
    written = sorted(texts, key=order.index)
    result = dict(path=params['path'], release=release_text(release), version=after.merged_version,
                  runtimes=sorted(effective), changed_runtimes=changed_runtimes, targets=plan.targets,
                  files=written, loaded=order, ignored=analysis.ignored, created=created, backup_files={})
    if module._diff:
        originals = dict((config.path, config.original) for config in analysis.files)
        result['diff'] = [dict(before=originals.get(path, ''), after=texts[path], before_header=path,
                               after_header=path) for path in written]
    changed = bool(written)
    if written and params['validate']:
        validate(module, containerd, analysis.files, texts, sorted(effective), spec_path)
    if written and not module.check_mode:
        writes = [FileWrite(path, texts[path], attributes=(path == main_path or path == drop_in)) for path in written]
        backups = write_files(module, writes, backup=params["backup"], follow=params["follow"])
        result['backup_files'] = backups
        if main_path in backups:
            result['backup_file'] = backups[main_path]
    if main_path not in written:
        changed = update_attributes(module, params['path'], changed, params['follow'])
    module.exit_json(changed=changed, **result)


if __name__ == '__main__':
    main()
