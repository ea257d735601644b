# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Device Control decoding against registers recorded on real ConnectX functions (fixtures/public/pci).

The ConnectX-3 Pro dump carries both the raw configuration space and lspci's decoding of it, so the capability walk
and the bit fields are checked against what lspci said about the same bytes; the setpci pairs check the read
values against the lspci line recorded next to them, and the masked write against the value the author wrote.
"""

from __future__ import annotations

import os
import re

import pytest
import yaml

from ansible_collections.gpunet.rdma.plugins.module_utils.tuning._setpci import (
    PCIE_CAP_ID,
    SetpciError,
    apply_size,
    check_endpoint,
    decode_devctl,
    find_capability,
    lspci_devctl_sizes,
    parse_hexdump,
    parse_word,
    read_word,
    write_argument,
)

CORPUS = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'public', 'pci')


def read(name):
    with open(os.path.join(CORPUS, name)) as handle:
        return handle.read()


def test_every_artifact_has_a_source():
    names = sorted(n for n in os.listdir(CORPUS) if n.endswith('.txt'))
    assert names == ['nvidia-pcie-article-copy-setpci-68w.txt', 'pciutils-cap-aer-root-connectx3pro.txt',
                     'tuning-guide-rst-setpci-68w.txt']
    sources = read('SOURCES.md')
    for name in names:
        with open(os.path.join(CORPUS, name + '.source.yml')) as handle:
            assert yaml.safe_load(handle)['what'], name
        assert '`%s`' % name in sources


def test_connectx3pro_dump_decodes_as_lspci_did():
    text = read('pciutils-cap-aer-root-connectx3pro.txt')
    config = parse_hexdump(text)
    assert len(config) == 0x1000
    assert read_word(config, 0) == 0x15b3 and read_word(config, 2) == 0x1007
    offset = find_capability(config, PCIE_CAP_ID)
    assert offset == 0x60 and 'Capabilities: [60] Express (v2) Endpoint' in text
    assert check_endpoint(read_word(config, offset + 2)) == 'PCI Express Endpoint'
    devctl = decode_devctl(read_word(config, offset + 8))
    assert devctl == {'word': '2020', 'max_read_request': 512, 'max_payload': 256}
    assert lspci_devctl_sizes(text) == (256, 512)
    # the write the module would make, and what lspci would then print
    assert write_argument(4096) == 'CAP_EXP+8.w=5000:7000'
    assert decode_devctl(apply_size(0x2020, 4096)) == {'word': '5020', 'max_read_request': 4096, 'max_payload': 256}


@pytest.mark.parametrize('name', ['nvidia-pcie-article-copy-setpci-68w.txt', 'tuning-guide-rst-setpci-68w.txt'])
def test_setpci_reads_match_the_lspci_lines_recorded_beside_them(name):
    lines = [line.strip() for line in read(name).splitlines() if line.strip()]
    read_at = lines.index('# setpci -s 04:00.0 68.w')
    word = parse_word(lines[read_at + 1])
    before = decode_devctl(word)
    first_lspci = lspci_devctl_sizes('\n'.join(lines[:read_at]))
    assert (before['max_payload'], before['max_read_request']) == first_lspci
    written = next(re.match(r'^# setpci -s 04:00\.0 68\.w=([0-9a-f]{4})$', line).group(1)
                   for line in lines if '68.w=' in line)
    after = decode_devctl(int(written, 16))
    last_lspci = lspci_devctl_sizes(lines[-1])
    assert (after['max_payload'], after['max_read_request']) == last_lspci
    # the authors changed only the size selector: the masked write of the module gives the same register
    assert apply_size(word, after['max_read_request']) == int(written, 16)


@pytest.mark.parametrize('word, reason', [
    (0x6020, 'reserved Max_Read_Request_Size'),
    (0x70e0, 'reserved Max_Read_Request_Size'),
    (0x20e0, 'reserved Max_Payload_Size'),
    (0xa020, 'bit 15'),
])
def test_reserved_and_impossible_registers_are_refused(word, reason):
    with pytest.raises(SetpciError) as error:
        decode_devctl(word)
    assert reason in str(error.value)


@pytest.mark.parametrize('word, reason', [(0x0042, 'not an endpoint'), (0x0003, 'version 3'), (0x0000, 'version 0')])
def test_functions_other_than_endpoints_are_refused(word, reason):
    with pytest.raises(SetpciError) as error:
        check_endpoint(word)
    assert reason in str(error.value)


@pytest.mark.parametrize('out, err, reason', [
    ('', 'setpci: Warning: No devices selected for operation group 1.\n', 'selected no device'),
    ('2020\n2020\n', '', 'instead of one 16-bit value'),
    ('202\n', '', 'instead of one 16-bit value'),
    ('0000:0b:00.0 (cap 10 @60) @68 = 2020\n', '', 'instead of one 16-bit value'),
])
def test_setpci_answers_of_another_shape_are_refused(out, err, reason):
    with pytest.raises(SetpciError) as error:
        parse_word(out, err)
    assert reason in str(error.value)


def test_sizes_outside_pci_express_are_refused():
    with pytest.raises(SetpciError):
        write_argument(8192)
