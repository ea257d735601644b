# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write the variable reference of every role, docs/reference/<role>.md, from its meta/argument_specs.yml.

    python docs/gen_reference.py              # rewrite docs/reference/
    python docs/gen_reference.py --out DIR    # write somewhere else (the docs test compares the two)

The argument specs are the one place where a role's variables, types and defaults are written down (ansible-core
checks them at run time, ``ansible-doc -t role`` shows them); the pages here are generated from them so that the
documentation cannot drift. Ansible's markup (C(), O(), V(), M(), ...) becomes Markdown.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import sys

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
NAMESPACE = 'gpunet.rdma'

# The user guide that explains each role (relative to docs/).
GUIDES = {
    'rdma_discovery': ('discovery.md', 'Discovery and the fleet report'),
    'nic_firmware': ('firmware.md', 'Firmware'),
    'ofed': ('drivers.md', 'Drivers'),
    'rdma_netns': ('drivers.md', 'Drivers'),
    'gpudirect': ('drivers.md', 'Drivers'),
    'containerd_memlock': ('runtime.md', 'Container runtime'),
    'network_operator': ('cluster.md', 'Cluster stage'),
    'nicclusterpolicy_tolerations': ('cluster.md', 'Cluster stage'),
    'spiderpool': ('cluster.md', 'Cluster stage'),
    'rdma_validate': ('validation.md', 'Validation'),
    'rollout': ('rollout.md', 'Rolling out'),
    'pvrdma': ('pvrdma.md', 'VMware PVRDMA'),
    'vsphere_pvrdma': ('pvrdma.md', 'VMware PVRDMA'),
    'nic_tuning': ('tuning.md', 'NIC tuning'),
    'sriov_vfs': ('sriov.md', 'SR-IOV virtual functions'),
}

# The documents the collection was designed from, named by what they are (a reader has no use for an internal
# number). Applied to every description before it is written.
SOURCE_DOCUMENTS = [
    (re.compile(r'\bseed 0*1\b'), 'the Spiderpool RoCE guide'),
    (re.compile(r'\bseed 0*3\b'), 'the InfiniBand field report'),
    (re.compile(r'\bseed 0*4\b'), 'the VMware PVRDMA reference design'),
    (re.compile(r"\bthe seed's upgrade policy\b"), "the InfiniBand field report's upgrade policy"),
]
# A source document called a seed: "seed 003", "the seeds", "seeds/", "seed document". A random seed (of a sample)
# is not one.
UNNAMED_SOURCE = re.compile(r'\bseeds?\s*[_-]?\d|\bseeds/|\bseed (?:documents?|reports?|guides?)\b|\bthe seeds?\b', re.I)

# Ansible's documentation markup (https://docs.ansible.com/ansible/latest/dev_guide/developing_modules_documenting.html)
MARKUP = re.compile(r'\b(?:(?P<code>RV|[CVOEMP])|(?P<em>[IB])|(?P<url>U)|(?P<link>[LR]))\((?P<arg>[^)]*)\)'
                    r'|(?P<rule>\bHORIZONTALLINE\b)')


class SpecError(Exception):
    """An argument spec the generator cannot document."""


def name_sources(text, where):
    for pattern, name in SOURCE_DOCUMENTS:
        text = pattern.sub(name, text)
    if UNNAMED_SOURCE.search(text):
        raise SpecError('%s: a source document is mentioned as a seed; name it by what it is (add it to '
                        'SOURCE_DOCUMENTS in docs/gen_reference.py or reword the argument spec): %s' % (where, text))
    return text


def escape_plain(text):
    """Markdown-escape text outside code spans (table cells: the pipe too)."""
    return (text.replace('\\', '\\\\').replace('*', '\\*').replace('<', '&lt;').replace('|', '\\|')
            .replace('[', '\\[').replace(']', '\\]'))


def code(text):
    return '`%s`' % text.replace('|', '\\|')


def option_name(arg):
    """O(name), O(name=value), O(fqcn#module:name): the option as a reader looks for it."""
    if '#' in arg:
        arg = arg.split('#', 1)[1].split(':', 1)[-1]
    return arg


def plugin_name(arg):
    return arg.split('#', 1)[0]


def markdown(text, where):
    """One description paragraph in Markdown, on one line."""
    text = ' '.join(name_sources(str(text), where).split())
    out, pos = [], 0
    for match in MARKUP.finditer(text):
        out.append(escape_plain(text[pos:match.start()]))
        pos = match.end()
        arg = match.group('arg')
        if match.group('rule'):
            out.append(' ')
        elif match.group('code') == 'O':
            out.append(code(option_name(arg)))
        elif match.group('code') in ('M', 'P'):
            out.append(code(plugin_name(arg)))
        elif match.group('code'):
            out.append(code(arg))
        elif match.group('em') == 'I':
            out.append('*%s*' % escape_plain(arg))
        elif match.group('em') == 'B':
            out.append('**%s**' % escape_plain(arg))
        elif match.group('url'):
            out.append('<%s>' % arg)
        elif match.group('link') == 'L':
            label, _sep, url = arg.partition(',')
            out.append('[%s](%s)' % (escape_plain(label.strip()), url.strip()))
        else:
            out.append(escape_plain(arg.partition(',')[0].strip()))
    out.append(escape_plain(text[pos:]))
    return ''.join(out)


def paragraphs(value, where):
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    return [markdown(item, where) for item in value]


def flow(value):
    """A default as YAML flow text on one line."""
    if isinstance(value, str):
        return ' '.join(value.split()) if '{{' in value else value
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (int, float)):
        return str(value)
    return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=float('inf')).strip()


def type_of(spec):
    kind = spec.get('type', 'str')
    if kind == 'list' and spec.get('elements'):
        return 'list of %s' % spec['elements']
    return kind


def default_of(spec):
    if spec.get('required'):
        return '*required*'
    if 'default' not in spec or spec['default'] is None:
        return ''
    text = flow(spec['default'])
    return code(text) if text != '' else '`""`'


def option_rows(options, where, prefix=''):
    rows = []
    for name, spec in (options or {}).items():
        spec = spec or {}
        full = prefix + name
        text = ' '.join(paragraphs(spec.get('description'), '%s %s' % (where, full)))
        if spec.get('choices'):
            text += ' Choices: %s.' % ', '.join(code(flow(choice)) for choice in spec['choices'])
        if spec.get('no_log'):
            text += ' Not logged.'
        rows.append('| %s | %s | %s | %s |' % (code(full), type_of(spec), default_of(spec), text.strip()))
        sub = spec.get('options') or spec.get('suboptions')
        if sub:
            rows.extend(option_rows(sub, where, full + ('[].' if spec.get('type') == 'list' else '.')))
    return rows


def role_page(role, specs):
    fqcn = '%s.%s' % (NAMESPACE, role)
    lines = ['# Role `%s`' % fqcn, '',
             '<!-- Generated by docs/gen_reference.py from roles/%s/meta/argument_specs.yml; do not edit. -->' % role,
             '']
    summary = 'Variables of the role, per entry point, as `roles/%s/meta/argument_specs.yml` declares them ' % role
    summary += '(ansible-core checks them when the role starts; `ansible-doc -t role %s` shows the same).' % fqcn
    lines.extend([summary, ''])
    if role in GUIDES:
        lines.extend(['User guide: [%s](../%s).' % (GUIDES[role][1], GUIDES[role][0]), ''])
    for entry, spec in specs.items():
        where = 'roles/%s entry point %s' % (role, entry)
        lines.extend(['## Entry point `%s`' % entry, ''])
        if entry != 'main':
            lines.extend(['`tasks_from: %s.yml`' % entry, ''])
        short = paragraphs(spec.get('short_description'), where)
        if short:
            lines.extend(['**%s**' % short[0], ''])
        for paragraph in paragraphs(spec.get('description'), where):
            lines.extend([paragraph, ''])
        rows = option_rows(spec.get('options'), where)
        if rows:
            lines.extend(['| option | type | default | description |', '| --- | --- | --- | --- |'] + rows + [''])
        else:
            lines.extend(['No options.', ''])
    return '\n'.join(lines).rstrip('\n') + '\n'


def index_page(roles):
    lines = ['# Role variable reference', '',
             '<!-- Generated by docs/gen_reference.py from roles/*/meta/argument_specs.yml; do not edit. -->', '',
             'One page per role, generated from its `meta/argument_specs.yml` (`python docs/gen_reference.py`; a unit',
             'test fails when a page differs from what the specs say). Group-level settings go into each GPU group\'s',
             '`gpunet_rdma_fabric` ([docs/fabric.md](../fabric.md)); many defaults below read it.', '',
             '| role | entry points | what it does | guide |', '| --- | --- | --- | --- |']
    for role, specs in roles:
        main = specs.get('main') or next(iter(specs.values()))
        what = ' '.join(paragraphs(main.get('short_description'), 'roles/%s' % role))
        guide = '[%s](../%s)' % (GUIDES[role][1], GUIDES[role][0]) if role in GUIDES else ''
        lines.append('| [`%s.%s`](%s.md) | %s | %s | %s |' % (
            NAMESPACE, role, role, ', '.join(code(entry) for entry in specs), what, guide))
    return '\n'.join(lines) + '\n'


def load_roles(repo):
    roles = []
    for path in sorted(glob.glob(os.path.join(repo, 'roles', '*', 'meta', 'argument_specs.yml'))):
        role = path.split(os.sep)[-3]
        with open(path, encoding='utf-8') as handle:
            data = yaml.safe_load(handle) or {}
        specs = data.get('argument_specs')
        if not isinstance(specs, dict) or not specs:
            raise SpecError('%s has no argument_specs entry points' % os.path.relpath(path, repo))
        roles.append((role, specs))
    return roles


def generate(repo=REPO):
    """File name -> content of every reference page."""
    roles = load_roles(repo)
    pages = {'%s.md' % role: role_page(role, specs) for role, specs in roles}
    pages['README.md'] = index_page(roles)
    return pages


def write(pages, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for stale in glob.glob(os.path.join(out_dir, '*.md')):
        if os.path.basename(stale) not in pages:
            os.remove(stale)
    for name, text in sorted(pages.items()):
        with open(os.path.join(out_dir, name), 'w', encoding='utf-8') as handle:
            handle.write(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', default=os.path.join(REPO, 'docs', 'reference'),
                        help='directory to write the pages to (default: docs/reference)')
    args = parser.parse_args(argv)
    try:
        pages = generate()
    except (SpecError, OSError, yaml.YAMLError) as error:
        print('gen_reference: %s' % error, file=sys.stderr)
        return 1
    write(pages, args.out)
    print('gen_reference: %d pages written to %s' % (len(pages), args.out))
    return 0


if __name__ == '__main__':
    sys.exit(main())
