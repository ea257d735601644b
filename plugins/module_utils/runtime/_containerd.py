# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Build containerd base runtime specs with rlimits and wire them into containerd's configuration.

Pods get the rlimits of the OCI spec that runc applies, so the memlock limit RDMA needs must be in containerd's
``base_runtime_spec``. The configuration is read and written with tomlkit (comments and layout survive), the
``imports`` of config.toml are followed with the merge rules of the containerd release that runs, and the spec is
set in the table that takes effect. Free of Ansible imports.
"""

from __future__ import annotations

import copy
import difflib
import fnmatch
import json
import os
import re
import traceback

from ansible_collections.gpunet.rdma.plugins.module_utils._host_io import HostReadError, list_dir
from ansible_collections.gpunet.rdma.plugins.module_utils._tool_runner import ToolRunner, fixed, option

# containerd itself: its release, its default config, and the merged config a candidate file gives (nothing written).
CONTAINERD = ToolRunner('containerd', {
    'version': fixed('--version'),
    'config_file': option('--config'),
    'default_config': fixed('config', 'default'),
    'dump_config': fixed('config', 'dump'),
})
# ctr, containerd's client: the default OCI spec (no daemon needed), and the running tasks of a namespace.
CTR = ToolRunner('ctr', {
    'namespace': option('--namespace'),
    'default_spec': fixed('oci', 'spec'),
    'tasks': fixed('task', 'ls'),
    'container_info': lambda container: ['containers', 'info', str(container)],
})
# systemctl, to tell which containerd service unit runs (containerd, k3s, rke2-server, rke2-agent).
SYSTEMCTL = ToolRunner('systemctl', {'is_active': lambda service: ['is-active', '--quiet', str(service)]})

try:
    import tomlkit
    from tomlkit.container import Container
    from tomlkit.items import InlineTable, Table
    HAS_TOMLKIT = True
    TOMLKIT_IMPORT_ERROR = None
except ImportError:  # the module names the package to install (missing_required_lib)
    HAS_TOMLKIT = False
    TOMLKIT_IMPORT_ERROR = traceback.format_exc()

try:
    import tomllib  # Python 3.11+: an independent TOML 1.0 parser to check what tomlkit wrote
except ImportError:
    tomllib = None

UNLIMITED = 18446744073709551615  # RLIM_INFINITY as the OCI spec writes it
# RDMA memory registration fails below this (the kernel's historical default memlock limit).
MEMLOCK_RDMA_MINIMUM = 65536

# The rlimit types runc accepts: rlimitMap of opencontainers/runc libcontainer/specconv/spec_linux.go. Any other
# name makes runc fail every container with "wrong rlimit value: <name>".
RLIMIT_TYPES = (
    'RLIMIT_AS', 'RLIMIT_CORE', 'RLIMIT_CPU', 'RLIMIT_DATA', 'RLIMIT_FSIZE', 'RLIMIT_LOCKS', 'RLIMIT_MEMLOCK',
    'RLIMIT_MSGQUEUE', 'RLIMIT_NICE', 'RLIMIT_NOFILE', 'RLIMIT_NPROC', 'RLIMIT_RSS', 'RLIMIT_RTPRIO',
    'RLIMIT_RTTIME', 'RLIMIT_SIGPENDING', 'RLIMIT_STACK',
)

# The CRI plugin key that holds containerd.runtimes, by config version (what `nvidia-ctk` and containerd use).
CRI_PLUGIN_BY_VERSION = {
    1: 'cri',
    2: 'io.containerd.grpc.v1.cri',
    3: 'io.containerd.cri.v1.runtime',
    4: 'io.containerd.cri.v1.runtime',
}
RUNC_RUNTIME_TYPE = 'io.containerd.runc.v2'
_RELEASE_RE = re.compile(r'\bv?(\d+)\.(\d+)\.(\d+)')


class SpecError(ValueError):
    """A spec or an option that cannot be used."""


class ConfigError(ValueError):
    """A containerd config that cannot be wired."""


# --------------------------------------------------------------------- spec

def parse_limit(value, what):
    """``unlimited`` or a whole number of bytes/units between 0 and RLIM_INFINITY."""
    if value is None:
        raise SpecError('%s is missing: give a whole number or "unlimited"' % what)
    if isinstance(value, bool) or isinstance(value, float):
        raise SpecError('%s must be "unlimited" or a whole number >= 0, got %r' % (what, value))
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.strip().lower() in ('unlimited', 'infinity'):
        return UNLIMITED
    elif isinstance(value, str) and re.match(r'^\s*\d+\s*$', value) and value.strip().isascii():
        number = int(value.strip())
    else:
        raise SpecError('%s must be "unlimited" or a whole number >= 0, got %r' % (what, value))
    if number < 0 or number > UNLIMITED:
        raise SpecError('%s must be between 0 and %d ("unlimited"), got %d' % (what, UNLIMITED, number))
    return number


def closest_rlimit(name):
    """The valid rlimit type nearest to ``name`` (for "did you mean")."""
    text = str(name).upper()
    if not text.startswith('RLIMIT_'):
        text = 'RLIMIT_' + text
    matches = difflib.get_close_matches(text, RLIMIT_TYPES, n=1, cutoff=0.0)
    return matches[0] if matches else 'RLIMIT_NOFILE'


def rlimit_type(value, what):
    """``nofile`` / ``RLIMIT_NOFILE`` -> ``RLIMIT_NOFILE``; any name runc does not accept is refused."""
    if not isinstance(value, str) or not value.strip():
        raise SpecError('%s must be an rlimit type such as RLIMIT_NOFILE, got %r' % (what, value))
    kind = value.strip().upper()
    if not kind.startswith('RLIMIT_'):
        kind = 'RLIMIT_' + kind
    if kind not in RLIMIT_TYPES:
        raise SpecError('%s: %r is not an rlimit type Linux defines (runc fails every container with "wrong rlimit '
                        'value"); did you mean %s? Valid types: %s'
                        % (what, value, closest_rlimit(value), ', '.join(RLIMIT_TYPES)))
    return kind


def strict_json(text, where):
    """JSON as Go reads it: NaN and Infinity are not JSON (containerd cannot load such a spec)."""
    def refuse_constant(name):
        raise SpecError('%s holds %s, which is not JSON (containerd, written in Go, cannot read it); give a number'
                        % (where, name))
    try:
        return json.loads(text, parse_constant=refuse_constant)
    except SpecError:
        raise
    except ValueError as exc:
        raise SpecError('%s is not valid JSON (%s); give a spec file written by `ctr oci spec`' % (where, exc))


def check_spec(spec, where):
    """An OCI spec with a process and, if any, well-formed rlimits of types runc accepts."""
    if not isinstance(spec, dict) or 'ociVersion' not in spec or not isinstance(spec.get('process'), dict):
        raise SpecError('%s is not an OCI runtime spec (it needs "ociVersion" and a "process" object)' % where)
    rlimits = spec['process'].get('rlimits', [])
    if not isinstance(rlimits, list) or not all(isinstance(r, dict) and 'type' in r for r in rlimits):
        raise SpecError('%s has a malformed process.rlimits list (each entry needs type, soft, hard)' % where)
    for index, item in enumerate(rlimits):
        what = '%s process.rlimits[%d]' % (where, index)
        if not isinstance(item['type'], str) or item['type'] not in RLIMIT_TYPES:
            raise SpecError('%s: %r is not an rlimit type Linux defines; did you mean %s?'
                            % (what, item['type'], closest_rlimit(item['type'])))
        for bound in ('soft', 'hard'):
            value = item.get(bound)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= UNLIMITED:
                raise SpecError('%s (%s): %s must be a whole number between 0 and %d, got %r'
                                % (what, item['type'], bound, UNLIMITED, value))
        if item['soft'] > item['hard']:
            raise SpecError('%s (%s): soft %d is above hard %d' % (what, item['type'], item['soft'], item['hard']))


def normalize_rlimits(rlimits, memlock):
    """Validate the ``rlimits`` option and add RLIMIT_MEMLOCK; returns a list of {type, soft, hard}."""
    wanted = []
    for index, item in enumerate(rlimits or []):
        if not isinstance(item, dict) or set(item) - {'type', 'soft', 'hard'} or 'type' not in item:
            raise SpecError('rlimits[%d] must be a dict with type, soft and hard, got %r' % (index, item))
        kind = rlimit_type(item['type'], 'rlimits[%d].type' % index)
        if kind in [limit['type'] for limit in wanted]:
            raise SpecError('rlimits[%d]: %s is given twice; keep one entry' % (index, kind))
        soft = parse_limit(item.get('soft', item.get('hard')), 'rlimits[%d].soft' % index)
        hard = parse_limit(item.get('hard', item.get('soft')), 'rlimits[%d].hard' % index)
        if soft > hard:
            raise SpecError('rlimits[%d] (%s): soft %d is above hard %d' % (index, kind, soft, hard))
        wanted.append({'type': kind, 'soft': soft, 'hard': hard})
    if memlock is not None:
        if any(r['type'] == 'RLIMIT_MEMLOCK' for r in wanted):
            raise SpecError('RLIMIT_MEMLOCK is set by memlock; leave it out of rlimits')
        value = parse_limit(memlock, 'memlock')
        wanted.append({'type': 'RLIMIT_MEMLOCK', 'soft': value, 'hard': value})
    return wanted


def spec_warnings(spec):
    """What will hurt RDMA in a spec that is otherwise valid (memlock 0 or below 64 KiB)."""
    warnings = []
    for item in spec['process'].get('rlimits', []):
        if item['type'] == 'RLIMIT_MEMLOCK' and item['soft'] < MEMLOCK_RDMA_MINIMUM:
            warnings.append('RLIMIT_MEMLOCK is %d bytes: RDMA memory registration fails below %d bytes (64 KiB) '
                            '("Couldn\'t allocate MR"); use "unlimited" or a limit of at least the largest '
                            'buffer an application registers' % (item['soft'], MEMLOCK_RDMA_MINIMUM))
    return warnings


def build_spec(base, memlock='unlimited', rlimits=None, where='base'):
    """Return a copy of ``base`` with the wanted rlimits; every other rlimit of the base is kept."""
    check_spec(base, where)
    wanted = normalize_rlimits(rlimits, memlock)
    spec = copy.deepcopy(base)
    current = spec['process'].setdefault('rlimits', [])
    for limit in wanted:
        for existing in current:
            if existing['type'] == limit['type']:
                existing['soft'], existing['hard'] = limit['soft'], limit['hard']
                break
        else:
            current.append(dict(limit))
    check_spec(spec, 'the result')
    return spec


def serialize(spec):
    """Stable JSON: same content, same bytes (sorted keys, two-space indent)."""
    return json.dumps(spec, indent=2, sort_keys=True) + '\n'


# ------------------------------------------------------------ releases

def parse_release(text):
    """``containerd --version`` output -> (major, minor, patch); ConfigError when there is no version in it."""
    match = _RELEASE_RE.search(text or '')
    if not match:
        raise ConfigError('no containerd version in %r' % (text or '').strip()[:200])
    return tuple(int(part) for part in match.groups())


def release_text(release):
    return '.'.join(str(part) for part in release)


def max_config_version(release):
    """The highest config version the release reads (ValidateVersion / ValidateV2 of each release)."""
    if release[0] < 2:
        return 2
    return 3 if release[:2] < (2, 3) else 4


def default_config_version(release):
    """The version `containerd config default` of the release writes (and the one our new files use)."""
    if release[0] < 2:
        return 2
    return 3 if release[:2] < (2, 3) else max_config_version(release)


# ------------------------------------------------------------------- TOML

def _require_tomlkit():
    if not HAS_TOMLKIT:
        raise ConfigError('the Python library tomlkit is not installed')


def parse_toml(text, where):
    """A tomlkit document; ConfigError naming the file, line and column on a syntax error."""
    _require_tomlkit()
    try:
        return tomlkit.parse(text)
    except Exception as exc:  # tomlkit raises ParseError and a few others (KeyAlreadyPresent, ...)
        line = getattr(exc, 'line', None)
        where_in = ' at line %s column %s' % (line, getattr(exc, 'col', '?')) if line else ''
        raise ConfigError('%s is not TOML that can be edited%s: %s' % (where, where_in, str(exc).split(' at line', maxsplit=1)[0]))


def _plain(value):
    """tomlkit items -> plain Python values (dict, list, str, int, ...)."""
    if hasattr(value, 'unwrap'):
        return value.unwrap()
    if isinstance(value, dict):
        return dict((k, _plain(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def declared_version(document, where):
    """The ``version`` a file declares, 0 when it has none (containerd treats that as version 1)."""
    value = _plain(document.get('version', 0))
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError('%s: version must be a whole number such as 2 or 3, got %r' % (where, value))
    return value


def declared_imports(document, where):
    value = _plain(document.get('imports', []))
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError('%s: imports must be a list of file names or glob patterns, got %r' % (where, value))
    return value


def _body(node):
    if isinstance(node, Container):
        return node.body
    return node.value.body


def find_tables(node, path, prefix=()):
    """Every concrete table (header, dotted or inline) at ``path``, walking tomlkit's own bodies.

    A TOML file may define the same table in pieces (a header out of order, dotted keys), and tomlkit hands
    those out through a proxy whose changes older tomlkit releases lose, so edits go to the pieces themselves.
    """
    found = []
    for key, item in _body(node):
        if key is None or not isinstance(item, (Table, InlineTable)):
            continue
        here = prefix + (key.key,)
        if here != tuple(path[:len(here)]):
            continue
        if len(here) == len(path):
            found.append(item)
        else:
            found.extend(find_tables(item, path, here))
    return found


class ConfigFile(object):
    """One file of containerd's configuration as loaded: main config.toml or an imported file."""

    def __init__(self, path, text, created=False, new=False, original=None):
        self.path = path
        self.text = text
        self.original = text if original is None else original  # the bytes on disk ('' for new files)
        self.created = created      # main config.toml made from `containerd config default`
        self.new = new              # a drop-in of ours that does not exist yet
        self.document = parse_toml(text, path)
        self.version = declared_version(self.document, path)
        self.imports = declared_imports(self.document, path)

    def __repr__(self):
        return 'ConfigFile(%r, version=%r)' % (self.path, self.version)


def _is_glob(pattern):
    return any(char in pattern for char in '*?[')


def go_glob(pattern):
    """filepath.Glob: matches in lexical order, ``*`` also matches names starting with a dot."""
    directory, name = os.path.split(pattern)
    if _is_glob(directory):
        directories = go_glob(directory)
    else:
        directories = [directory]
    matches = []
    for folder in directories:
        if not _is_glob(name):
            candidate = os.path.join(folder, name)
            if os.path.lexists(candidate):
                matches.append(candidate)
            continue
        try:
            names = list_dir(folder or '.')
        except HostReadError as exc:
            # containerd (root) lists it; a directory we cannot list is not an empty one: what it holds decides
            # which file's table wins, so the edit would be guessed.
            raise ConfigError('%s, so the files an imports glob matches there are unknown; make it readable by the '
                              'user the module runs as (root)' % exc)
        matches.extend(os.path.join(folder, entry) for entry in names if fnmatch.fnmatchcase(entry, name))
    return sorted(matches)


def resolve_imports(parent, imports, release, extra=None):
    """The files an ``imports`` list names, in containerd's order (resolveImports of the running release).

    A relative path is relative to the importing file's directory; a glob expands in lexical order. containerd
    before 1.6.29 / 1.7.16 expanded a relative glob against its working directory instead (the path was joined
    after the glob), so such an import is refused there rather than guessed. ``extra`` is a file of ours that
    does not exist yet and is counted as present when a glob would match it.
    """
    resolved = []
    for entry in imports:
        path = os.path.normpath(entry)
        if not os.path.isabs(path):
            if _is_glob(path) and release[0] == 1 and (release[:2] < (1, 6) or (release[:2] == (1, 6) and
                                                                                release[2] < 29)
                                                       or (release[:2] == (1, 7) and release[2] < 16)):
                raise ConfigError('%s imports the relative glob %r: containerd %s expands it against its working '
                                  'directory, not against %s; write it as an absolute path'
                                  % (parent, entry, release_text(release), os.path.dirname(parent)))
            path = os.path.join(os.path.dirname(parent), path)
        if _is_glob(path):
            matches = go_glob(path)
            if extra and extra not in matches and fnmatch.fnmatchcase(extra, path):
                matches = sorted(matches + [extra])
            resolved.extend(matches)
        else:
            resolved.append(path)
    return resolved


def load_layout(main_path, main_text, read_text, release, created=False, drop_in=None):
    """Every file containerd loads, in its order: config.toml, then its imports, breadth first (LoadConfig).

    ``read_text(path)`` reads an imported file (raising the caller's error naming the file). A file imported
    twice is loaded once, as containerd does.
    """
    files = [ConfigFile(main_path, main_text, created=created)]
    loaded = {main_path}
    pending = resolve_imports(main_path, files[0].imports, release, drop_in)
    while pending:
        path, pending = pending[0], pending[1:]
        if path in loaded:
            continue
        loaded.add(path)
        if drop_in and path == drop_in and not os.path.lexists(path):
            config = ConfigFile(path, '', new=True)
        else:
            config = ConfigFile(path, read_text(path))
        files.append(config)
        pending.extend(resolve_imports(path, config.imports, release, drop_in))
    return files


def _cri_keys(version, release):
    """The plugins.<key> of a file of ``version`` that containerd reads as the CRI runtime plugin."""
    if release[0] < 2:
        return [CRI_PLUGIN_BY_VERSION[version if version in (1, 2) else 1]]
    if version in (0, 1):
        # 2.x migrates version 1 names: "cri" -> io.containerd.grpc.v1.cri; dotted names stay (v1MigratePluginName).
        return ['cri', CRI_PLUGIN_BY_VERSION[2]]
    return [CRI_PLUGIN_BY_VERSION[min(version, 4)]]


def runtime_tables(config, keys):
    """runtime name -> [concrete tables] of one file, for the given CRI plugin keys (file order)."""
    tables = {}
    for key in keys:
        for runtimes in find_tables(config.document, ('plugins', key, 'containerd', 'runtimes')):
            for name, item in _body(runtimes):
                if name is None:
                    continue
                if not isinstance(item, (Table, InlineTable)):
                    raise ConfigError('%s: plugins.%s.containerd.runtimes.%s is not a table'
                                      % (config.path, key, name.key))
                tables.setdefault(name.key, []).append(item)
    return tables


def has_cri_section(config, keys):
    return any(find_tables(config.document, ('plugins', key)) for key in keys)


def _table_value(tables, key):
    """The value of ``key`` in the pieces of one table (the last piece that sets it), or None."""
    value = None
    for table in tables:
        if key in table:
            value = _plain(table[key])
    return value


class Analysis(object):
    """How containerd of ``release`` merges the loaded files, for the CRI runtimes.

    Merge rules (read in containerd's source and docs, imports in docs/man/containerd-config.toml.5.md):

    * 1.x (services/server/config/config.go, mergeConfig: "Replace entire sections instead of merging map's
      values"): the files merge in load order and a file's ``plugins.<id>`` section replaces the whole section
      of earlier files. Only the CRI section of the LAST file that has one takes effect, with its runtime tables;
      every file is read with the merged ``version`` (the last non-zero one). 1.x reads versions 1 and 2.
    * 2.0-2.2 (cmd/containerd/server/config/config.go, commit "Allow sections of Plugins to be merged, and not
      overwritten as entire sections"): plugin sections merge key by key, a later file's value wins. Files of
      version 0/1 are migrated on load; the merged ``version`` is the last one declared, and only tables named
      for it take effect (version 3: io.containerd.cri.v1.runtime; below: io.containerd.grpc.v1.cri, which the
      CRI plugin's migration then moves, replacing any version 3 tables).
    * 2.3 and later (same file, "Update plugin config migration to run on load"): each file is migrated from
      its own version on load, then merged key by key; a drop-in whose version is higher than the root's makes
      containerd refuse to start.
    """

    def __init__(self, files, release):
        self.files = files
        self.release = release
        self.ignored = []          # messages: tables containerd does not use
        self.keys = {}             # path -> CRI plugin keys read in that file
        self.effective = []        # files whose CRI runtime tables take effect, in load order
        self.winner = None         # 1.x: the file whose CRI section takes effect
        self.merged_version = None
        self._analyse()

    def _analyse(self):
        release, files = self.release, self.files
        highest = max_config_version(release)
        for config in files:
            if config.version > highest:
                raise ConfigError('%s declares version %d: containerd %s reads config versions up to %d (version 3 '
                                  'is for containerd 2.x); write it for version %d or upgrade containerd'
                                  % (config.path, config.version, release_text(release), highest, highest))
        if release[0] < 2:
            declared = [config.version for config in files if config.version]
            self.merged_version = declared[-1] if declared else 1
            for config in files:
                self.keys[config.path] = _cri_keys(self.merged_version, release)
            with_section = [config for config in files if has_cri_section(config, self.keys[config.path])]
            self.winner = with_section[-1] if with_section else files[0]
            self.effective = [self.winner]
            for config in with_section[:-1]:
                if runtime_tables(config, self.keys[config.path]):
                    self.ignored.append('%s: its CRI section is replaced by the one of %s (containerd %s replaces '
                                        'whole plugin sections of earlier files), so its runtime tables are not used'
                                        % (config.path, self.winner.path, release_text(release)))
            return
        if release[:2] < (2, 3):
            current = 3  # containerd's default config is version 3; a version 0/1 file takes the current one
            family = {}
            for config in files:
                version = config.version if config.version >= 2 else current
                current = version
                family[config.path] = 2 if config.version < 3 else 3
                self.keys[config.path] = _cri_keys(config.version, release)
            self.merged_version = current
            wanted = 3 if current >= 3 else 2
            for config in files:
                if family[config.path] == wanted:
                    self.effective.append(config)
                elif runtime_tables(config, self.keys[config.path]):
                    self.ignored.append('%s: version %d tables, but the merged configuration is version %d on '
                                        'containerd %s, which ignores them; give every file the same version'
                                        % (config.path, config.version or 1, current, release_text(release)))
            return
        root = 0
        for config in files:
            if root == 0:
                root = config.version
            if config.version > root:
                raise ConfigError('%s declares version %d, higher than %d of the root config %s: containerd %s '
                                  'refuses to start with it; give the drop-in the root\'s version'
                                  % (config.path, config.version, root, files[0].path, release_text(release)))
            self.keys[config.path] = _cri_keys(config.version, release)
        self.merged_version = root or 1
        self.effective = list(files)

    def runtimes(self, config):
        return runtime_tables(config, self.keys[config.path])

    def effective_runtimes(self):
        """Runtime name -> effective base_runtime_spec ('' when unset), in first-seen order."""
        result = {}
        for config in self.effective:
            for name, tables in self.runtimes(config).items():
                value = _table_value(tables, 'base_runtime_spec')
                if name not in result or value is not None:
                    result[name] = '' if value is None else value
        return result

    def sources(self, name):
        """(files defining runtime ``name``, files setting its base_runtime_spec), effective files only."""
        defining, setting = [], []
        for config in self.effective:
            tables = self.runtimes(config).get(name)
            if tables:
                defining.append(config)
                if _table_value(tables, 'base_runtime_spec') is not None:
                    setting.append(config)
        return defining, setting


class Plan(object):
    def __init__(self, analysis):
        self.analysis = analysis
        self.targets = {}          # runtime -> path of the file that gets the setting
        self.create = {}           # runtime -> True when its table is created
        self.drop_in = None        # ConfigFile of ours, when used


def plan_wiring(analysis, spec_path, required, drop_in=None):
    """Where ``base_runtime_spec`` goes so that it takes effect on every runtime (and the required ones)."""
    release, files = analysis.release, analysis.files
    plan = Plan(analysis)
    present = analysis.effective_runtimes()
    names = list(present) + [name for name in required if name not in present]
    unknown = [name for name in required if name not in present and name != 'runc']
    if unknown:
        elsewhere = [config.path for config in files for name in unknown
                     if config not in analysis.effective and runtime_tables(config, _all_keys())
                     .get(name)]
        raise ConfigError('no runtime table for %s takes effect in %s%s; configure that runtime first (for nvidia: '
                          'nvidia-ctk runtime configure --runtime=containerd)'
                          % (', '.join(unknown), ', '.join(config.path for config in files),
                             (' (ignored tables in %s)' % ', '.join(sorted(set(elsewhere)))) if elsewhere else ''))
    if drop_in:
        if release[0] < 2:
            raise ConfigError('drop_in needs containerd 2.x: containerd %s replaces whole plugin sections, so a '
                              'drop-in holding base_runtime_spec alone would drop every other CRI setting; leave '
                              'drop_in unset to edit the file whose CRI section takes effect'
                              % release_text(release))
        ours = [config for config in files if config.path == drop_in]
        if not ours:
            raise ConfigError('drop_in %s is not covered by the imports of %s (imports: %s); add its directory to '
                              'imports, e.g. imports = ["%s/*.toml"]'
                              % (drop_in, files[0].path, ', '.join(files[0].imports) or 'none',
                                 os.path.dirname(drop_in)))
        plan.drop_in = ours[0]
        order = [config.path for config in files]
        for name in names:
            _defining, setting = analysis.sources(name)
            later = [config.path for config in setting if order.index(config.path) > order.index(drop_in)]
            if later:
                raise ConfigError('drop_in %s loads before %s, which sets base_runtime_spec for %s and would win; '
                                  'name the drop-in so that it sorts after it' % (drop_in, later[-1], name))
            plan.targets[name] = drop_in
            plan.create[name] = name not in present
        return plan
    for name in names:
        if release[0] < 2:
            plan.targets[name] = analysis.winner.path
            plan.create[name] = name not in present
            continue
        defining, setting = analysis.sources(name)
        if setting:
            plan.targets[name] = setting[-1].path
        elif defining:
            plan.targets[name] = defining[-1].path
        else:
            plan.targets[name] = (analysis.effective[0] if analysis.effective else files[0]).path
        plan.create[name] = name not in present
    return plan


def _all_keys():
    return sorted(set(CRI_PLUGIN_BY_VERSION.values()))


def _is_literal(item):
    kind = getattr(item, 'type', None)
    try:
        return bool(kind is not None and kind.is_literal() and not kind.is_multiline())
    except AttributeError:
        return False


def _new_string(value, like=None):
    """A TOML string item for ``value``, literal ('...') when the file writes its strings that way and can."""
    item = tomlkit.item(value)
    if like is not None and _is_literal(like) and "'" not in value and '\n' not in value:
        try:
            item = tomlkit.string(value, literal=True)
        except (TypeError, AttributeError):  # tomlkit before 0.11 cannot make literal strings
            pass
    return item


def _string_style(table):
    """A string of ``table`` (or None) whose quoting new strings follow."""
    for key, item in _body(table):
        if key is not None and getattr(item, 'type', None) is not None and isinstance(_plain(item), str):
            return item
    return None


def _key_indent(table):
    for key, item in _body(table):
        if key is not None and not isinstance(item, Table):
            return item.trivia.indent
    return None


def _set_key(table, name, value):
    """Set ``name = value`` in a concrete table, keeping the comment and indent of the line it replaces."""
    if name in table:
        old = table.item(name) if hasattr(table, 'item') else table[name]
        new = _new_string(value, old)
        for attribute in ('indent', 'comment_ws', 'comment', 'trail'):
            setattr(new.trivia, attribute, getattr(old.trivia, attribute))
        table[name] = new
        return
    new = _new_string(value, _string_style(table))
    indent = _key_indent(table) if isinstance(table, Table) else None
    table.append(name, new)
    if indent is not None:
        new.trivia.indent = indent


def _ensure_path(document, path):
    """The concrete table at ``path`` (the last piece), created as headers where it is missing."""
    node = document
    for depth, part in enumerate(path):
        pieces = find_tables(node, (part,)) if node is document or isinstance(node, (Table, InlineTable)) else []
        if pieces:
            node = pieces[-1]
            continue
        leaf = depth == len(path) - 1
        if isinstance(node, InlineTable):
            table = tomlkit.inline_table()
        else:
            table = tomlkit.table() if leaf else tomlkit.table(True)
        node.append(part, table)
        node = table
    return node


def _runtime_table_path(version, name):
    return ('plugins', CRI_PLUGIN_BY_VERSION[version if version in CRI_PLUGIN_BY_VERSION else 1], 'containerd',
            'runtimes', name)


def apply_plan(plan, spec_path):
    """{path: new text} of every file whose text changes (a new drop-in included)."""
    analysis = plan.analysis
    by_path = dict((config.path, config) for config in analysis.files)
    edits = {}
    for name, path in plan.targets.items():
        edits.setdefault(path, []).append(name)
    texts = {}
    for path, names in edits.items():
        config = by_path[path]
        document = parse_toml(config.text, path)  # a fresh copy: the analysis keeps reading the original
        if config.new and 'version' not in document:
            version = analysis.merged_version if analysis.release[:2] < (2, 3) else analysis.files[0].version
            version = version if version >= 2 else default_config_version(analysis.release)
            document.add('version', version)
            config_version = version
        else:
            config_version = config.version
        keys = (_cri_keys(config_version, analysis.release) if config.new else analysis.keys[path])
        fresh = ConfigFile(path, tomlkit.dumps(document))
        tables = runtime_tables_document(document, keys)
        for name in names:
            pieces = tables.get(name)
            if pieces:
                current = [piece for piece in pieces if 'base_runtime_spec' in piece]
                target = current[-1] if current else pieces[-1]
                if _plain(target.get('base_runtime_spec')) != spec_path:
                    _set_key(target, 'base_runtime_spec', spec_path)
                continue
            naming = config_version if config_version else analysis.merged_version
            if analysis.release[0] >= 2 and naming < 2:
                naming = 2
            table = _ensure_path(document, _runtime_table_path(naming, name))
            if plan.create.get(name):
                # a runtime no file defines (runc, from containerd's defaults): a complete table, not a fragment
                table.append('runtime_type', RUNC_RUNTIME_TYPE)
            _set_key(table, 'base_runtime_spec', spec_path)
        text = tomlkit.dumps(document)
        if not text.endswith('\n'):
            text += '\n'
        _check_edit(fresh, text, keys, names, spec_path)
        if text != config.original:
            texts[path] = text
    for config in analysis.files:
        if config.path not in texts and config.text != config.original:
            texts[config.path] = config.text
    return texts


def runtime_tables_document(document, keys):
    tables = {}
    for key in keys:
        for runtimes in find_tables(document, ('plugins', key, 'containerd', 'runtimes')):
            for name, item in _body(runtimes):
                if name is not None and isinstance(item, (Table, InlineTable)):
                    tables.setdefault(name.key, []).append(item)
    return tables


def _parse_independently(text, where):
    """What a TOML 1.0 parser reads from ``text`` (tomllib when Python has it, else tomlkit again)."""
    try:
        if tomllib is not None:
            return tomllib.loads(text)
        return _plain(tomlkit.parse(text))
    except Exception as exc:  # any parse failure means our edit broke the file
        raise ConfigError('the edited %s would not be valid TOML (%s); nothing was written. Upgrade tomlkit '
                          '(this edit was made with tomlkit %s)' % (where, exc, getattr(tomlkit, '__version__', '?')))


def _check_edit(before, text, keys, names, spec_path):
    """The edited file must hold exactly the old settings plus base_runtime_spec on ``names``."""
    expected = _parse_independently(before.text, before.path) if before.text.strip() else {}
    expected = copy.deepcopy(expected)
    after = _parse_independently(text, before.path)
    if 'version' in after and 'version' not in expected:
        expected['version'] = after['version']
    for name in names:
        placed = False
        for key in keys:
            runtimes = after.get('plugins', {}).get(key, {}).get('containerd', {}).get('runtimes', {})
            if name in runtimes:
                node = expected.setdefault('plugins', {}).setdefault(key, {}).setdefault('containerd', {})
                node = node.setdefault('runtimes', {}).setdefault(name, {})
                for extra in ('runtime_type',):
                    if extra in runtimes[name] and extra not in node:
                        node[extra] = runtimes[name][extra]
                node['base_runtime_spec'] = spec_path
                placed = True
        if not placed:
            raise ConfigError('the edit of %s did not place base_runtime_spec on runtime %s; nothing was written'
                              % (before.path, name))
    if after != expected:
        raise ConfigError('editing %s with tomlkit %s would change other settings; nothing was written. Upgrade '
                          'tomlkit or set base_runtime_spec by hand'
                          % (before.path, getattr(tomlkit, '__version__', '?')))


def wire(files, release, spec_path, required, drop_in=None):
    """Analyse, plan and edit: returns (analysis, plan, {path: new text}, analysis of the result)."""
    main = files[0]
    if not len(main.document):
        # An empty config.toml is a version 1 file to containerd; say which version its tables are written for.
        text = 'version = %d\n' % default_config_version(release) + main.text
        files = [ConfigFile(main.path, text, main.created, main.new, main.original)] + list(files[1:])
    analysis = Analysis(files, release)
    plan = plan_wiring(analysis, spec_path, required, drop_in)
    texts = apply_plan(plan, spec_path)
    result_files = [ConfigFile(config.path, texts.get(config.path, config.original), config.created, config.new)
                    for config in files]
    after = Analysis(result_files, release)
    wrong = sorted(name for name, value in after.effective_runtimes().items() if value != spec_path)
    missing = sorted(name for name in required if name not in after.effective_runtimes())
    if wrong or missing:
        raise ConfigError('after the edit, containerd %s would still not use %s for %s; nothing was written'
                          % (release_text(release), spec_path, ', '.join(wrong + missing)))
    return analysis, plan, texts, after


def dump_base_runtime_specs(dump_text):
    """From ``containerd config dump`` output: runtime name -> its base_runtime_spec ('' when unset)."""
    document = _parse_independently(dump_text, '`containerd config dump` output') if dump_text.strip() else {}
    version = document.get('version', 1)
    plugins = document.get('plugins', {})
    key = CRI_PLUGIN_BY_VERSION.get(version, CRI_PLUGIN_BY_VERSION[2])
    runtimes = plugins.get(key, {}).get('containerd', {}).get('runtimes', {})
    if not runtimes and version < 3:
        runtimes = plugins.get(CRI_PLUGIN_BY_VERSION[3], {}).get('containerd', {}).get('runtimes', {})
    return dict((name, (table or {}).get('base_runtime_spec', '')) for name, table in runtimes.items()
                if isinstance(table, dict))


# ------------------------------------------------------------ running tasks

def parse_task_list(text):
    """``ctr task ls`` -> [{id, pid, status}] (header ``TASK PID STATUS``; columns separated by spaces/tabs)."""
    tasks = []
    lines = [line for line in (text or '').splitlines() if line.strip()]
    if lines and lines[0].split()[:3] == ['TASK', 'PID', 'STATUS']:
        lines = lines[1:]
    for line in lines:
        words = line.split()
        if len(words) != 3 or not words[1].isdigit() or not words[1].isascii():
            raise ConfigError('unrecognised `ctr task ls` line: %r' % line[:200])
        tasks.append({'id': words[0], 'pid': int(words[1]), 'status': words[2]})
    return tasks


def parse_memlock(limits_text):
    """``/proc/PID/limits`` -> (soft, hard) of "Max locked memory", UNLIMITED for unlimited."""
    for line in (limits_text or '').splitlines():
        if line.startswith('Max locked memory'):
            words = line[len('Max locked memory'):].split()
            values = []
            for word in words[:2]:
                if word == 'unlimited':
                    values.append(UNLIMITED)
                elif word.isdigit() and word.isascii():
                    values.append(int(word))
                else:
                    raise ConfigError('unrecognised "Max locked memory" line: %r' % line[:200])
            if len(values) == 2:
                return tuple(values)
            raise ConfigError('unrecognised "Max locked memory" line: %r' % line[:200])
    raise ConfigError('no "Max locked memory" line in the limits')


def container_labels(info_text):
    """Labels of ``ctr containers info`` JSON, {} for anything of another shape."""
    try:
        info = json.loads(info_text or '')
    except ValueError:
        return {}
    labels = info.get('Labels') if isinstance(info, dict) else None
    if not isinstance(labels, dict):
        return {}
    return dict((str(key), value) for key, value in labels.items() if isinstance(value, str))
