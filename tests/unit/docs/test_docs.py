# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The user documentation: generated variable reference in step with the argument specs, source documents named by
what they are, links that lead somewhere, role variables that exist with the defaults the specs give."""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import subprocess
import sys

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
DOCS = os.path.join(REPO, 'docs')
REFERENCE = os.path.join(DOCS, 'reference')
GENERATOR = os.path.join(DOCS, 'gen_reference.py')
PAGES = [os.path.join(REPO, 'README.md')] + sorted(glob.glob(os.path.join(DOCS, '**', '*.md'), recursive=True))
GUIDES = [page for page in PAGES if not page.startswith(REFERENCE + os.sep)]

ROLE_PREFIXES = sorted((os.path.basename(os.path.dirname(os.path.dirname(path)))
                        for path in glob.glob(os.path.join(REPO, 'roles', '*', 'meta', 'argument_specs.yml'))),
                       key=len, reverse=True)
ROLE_VARIABLE = re.compile(r'\b((?:%s)_\w+)' % '|'.join(ROLE_PREFIXES))
# Names with a role's prefix that are not variables you set: facts the roles set, and the OFED command.
NOT_OPTIONS = {'gpudirect_gpu_operator_values', 'nic_firmware_targets', 'nic_firmware_reboot_instead',
               'rdma_discovery_fabrics', 'ofed_info', 'ofed_scripts'}

FENCE = re.compile(r'^```.*?^```', re.M | re.S)
CODE_SPAN = re.compile(r'`[^`\n]*`')
LINK = re.compile(r'!?\[[^\]\n]*\]\(([^)\s]+)\)')


def relative(path):
    return os.path.relpath(path, REPO)


def read(path):
    with open(path, encoding='utf-8') as handle:
        return handle.read()


def load_generator():
    spec = importlib.util.spec_from_file_location('gen_reference', GENERATOR)
    module = importlib.util.module_from_spec(spec)
    dont_write, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = dont_write
    return module


def role_options():
    """Option name -> its spec, from every entry point of every role (main first)."""
    options = {}
    for path in sorted(glob.glob(os.path.join(REPO, 'roles', '*', 'meta', 'argument_specs.yml'))):
        with open(path, encoding='utf-8') as handle:
            specs = yaml.safe_load(handle)['argument_specs']
        for entry in sorted(specs, key=lambda name: name != 'main'):
            for name, spec in (specs[entry].get('options') or {}).items():
                options.setdefault(name, spec or {})
    return options


def prose(text):
    """Markdown without fenced code blocks and code spans (where links are not links)."""
    return CODE_SPAN.sub('', FENCE.sub('', text))


def slug(heading):
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r'[^\w\- ]', '', heading.strip().lower().replace('`', ''))
    return text.replace(' ', '-')


def anchors(path):
    return {slug(match) for match in re.findall(r'^#{1,6} (.+)$', FENCE.sub('', read(path)), re.M)}


def test_the_reference_pages_are_what_the_argument_specs_say(tmp_path):
    done = subprocess.run([sys.executable, GENERATOR, '--out', str(tmp_path)], capture_output=True, text=True,
                          check=False, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    generated = sorted(os.listdir(str(tmp_path)))
    committed = sorted(os.path.basename(path) for path in glob.glob(os.path.join(REFERENCE, '*.md')))
    assert committed == generated, 'docs/reference/ differs from the roles: run python docs/gen_reference.py'
    for name in generated:
        assert read(os.path.join(REFERENCE, name)) == (tmp_path / name).read_text(encoding='utf-8'), (
            'docs/reference/%s is not what roles/*/meta/argument_specs.yml say: run python docs/gen_reference.py'
            % name)


def test_every_role_has_a_reference_page_linked_from_the_index():
    index = read(os.path.join(REFERENCE, 'README.md'))
    for prefix in ROLE_PREFIXES:
        assert os.path.isfile(os.path.join(REFERENCE, prefix + '.md')), prefix
        assert '](%s.md)' % prefix in index, prefix


def test_the_generator_names_source_documents_and_refuses_a_seed_number():
    generator = load_generator()
    assert generator.markdown('Run it per port (seed 003).', 'test') == 'Run it per port (the InfiniBand field report).'
    assert generator.markdown('Guest side of seed 004', 'test') == 'Guest side of the VMware PVRDMA reference design'
    with pytest.raises(generator.SpecError, match='seed'):
        generator.markdown('as seed 007 shows', 'roles/x entry point main')


def test_the_generator_turns_ansible_markup_into_markdown():
    generator = load_generator()
    text = ('Sets O(nic_firmware_apply=mlxfwreset) with M(gpunet.rdma.mlxconfig), see '
            'O(gpunet.rdma.ibdev2netdev_facts#module:source), C(a | b), V(none), I(once), B(one) call.')
    assert generator.markdown(text, 'test') == (
        'Sets `nic_firmware_apply=mlxfwreset` with `gpunet.rdma.mlxconfig`, see `source`, `a \\| b`, `none`, '
        '*once*, **one** call.')
    assert generator.flow([1, 'a']) == '[1, a]' and generator.flow(100) == '100' and generator.flow(False) == 'false'


@pytest.mark.parametrize('path', PAGES, ids=relative)
def test_source_documents_are_named_by_what_they_are(path):
    text = read(path)
    numbered = re.findall(r'\bseeds?[ _-]*\d+', text, re.I)
    assert not numbered, '%s names a source document by number: %s' % (relative(path), numbered)
    assert not load_generator().UNNAMED_SOURCE.search(text), (
        '%s mentions a seed: name the document (the InfiniBand field report, the Spiderpool RoCE guide, the VMware '
        'PVRDMA reference design)' % relative(path))


@pytest.mark.parametrize('path', PAGES, ids=relative)
def test_relative_links_point_to_existing_files_and_headings(path):
    broken = []
    for target in LINK.findall(prose(read(path))):
        if re.match(r'^[a-z][a-z0-9+.-]*:', target, re.I):
            continue
        file_part, _sep, anchor = target.partition('#')
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not os.path.exists(resolved):
            broken.append(target)
            continue
        if anchor and resolved.endswith('.md') and anchor not in anchors(resolved):
            broken.append(target)
    assert not broken, '%s links to missing files or headings: %s' % (relative(path), broken)


@pytest.mark.parametrize('path', GUIDES, ids=relative)
def test_role_variables_named_in_the_guides_exist(path):
    options = role_options()
    unknown = sorted(set(ROLE_VARIABLE.findall(read(path))) - set(options) - NOT_OPTIONS)
    assert not unknown, '%s names role variables no argument spec declares: %s' % (relative(path), unknown)


@pytest.mark.parametrize('path', GUIDES, ids=relative)
def test_defaults_in_the_guides_tables_are_the_argument_specs_defaults(path):
    options, flow = role_options(), load_generator().flow
    wrong = []
    for name, cell in re.findall(r'^\| `(\w+)` \| (`[^`]*`) \|', read(path), re.M):
        if name not in options:
            continue
        documented = cell[1:-1].replace('\\|', '|')
        actual = options[name].get('default')
        actual = '' if actual is None else flow(actual)
        if documented not in (actual, '""' if actual == '' else actual):
            wrong.append('%s: %s, the spec says %r' % (name, cell, actual))
    assert not wrong, '%s: %s' % (relative(path), wrong)
