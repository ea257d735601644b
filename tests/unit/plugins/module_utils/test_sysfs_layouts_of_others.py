# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sysfs reader against sysfs trees that this project did not write, and the project's fixture generator
against the kernel's description of the attributes.

The trees are the RDMA and network parts of the test trees of prometheus/procfs and prometheus/node_exporter, kept
as verbatim excerpts of their ttar archives (tests/unit/fixtures/public/sysfs-others/SOURCE.md) and extracted here
at test time. Every expectation below is written by hand from reading those upstream files.
"""

from __future__ import annotations

import glob
import os
import re

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils.facts import _rdma_inventory
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import SysfsReader
from ansible_collections.gpunet.rdma.plugins.modules import ibdev2netdev_facts

HERE = os.path.dirname(os.path.abspath(__file__))
OTHERS = os.path.join(HERE, '..', '..', 'fixtures', 'public', 'sysfs-others')
REPO = os.path.normpath(os.path.join(HERE, '..', '..', '..', '..'))
HARDWARE_PROFILES = sorted(glob.glob(os.path.join(REPO, 'lab', 'hardware', '*.yml')))


# ------------------------------------------------------------------ ttar


def _ttar_content(line):
    """One content line of a ttar file entry, as ttar's extract writes it: a NULLBYTE not escaped is a NUL byte, an
    EOF not escaped ends the file without a newline, and one backslash in front of either is dropped."""
    newline = not re.search(r'[^\\]EOF', line)
    line = re.sub(r'(^|[^\\])EOF', r'\1', line)
    line = re.sub(r'(^|[^\\])NULLBYTE', '\\1\x00', line)
    line = re.sub(r'(^|[^\\])NULLBYTE', '\\1\x00', line)  # again, for consecutive NUL bytes
    line = line.replace('\\NULLBYTE', 'NULLBYTE').replace('\\EOF', 'EOF')
    return line + ('\n' if newline else '')


def extract_ttar(path, dest):
    """Extract a ttar archive (the text archive format of prometheus' ``ttar`` script) below ``dest``.

    Entries: ``Directory: P`` + ``Mode: M``; ``Path: P`` + ``Lines: N`` + N content lines + ``Mode: M``;
    ``Path: P`` + ``SymlinkTo: T``; lines starting with ``#`` separate them. Parent directories are created as
    needed, since an excerpt leaves out the entries above the ones it keeps.
    """
    with open(path, encoding='utf-8', newline='') as handle:
        lines = handle.read().split('\n')
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line or line.startswith('#'):
            continue
        keyword, _sep, name = line.partition(': ')
        if os.path.isabs(name) or '..' in name.split('/') or keyword not in ('Directory', 'Path'):
            raise ValueError('%s line %d: unexpected %r' % (path, index, line))
        target = os.path.join(dest, name)
        if keyword == 'Directory':
            os.makedirs(target, exist_ok=True)
            mode = lines[index].partition('Mode: ')[2]
            os.chmod(target, int(mode, 8))
            index += 1
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        kind, _sep, value = lines[index].partition(': ')
        index += 1
        if kind == 'SymlinkTo':
            os.symlink(value, target)
            continue
        if kind != 'Lines':
            raise ValueError('%s line %d: expected Lines or SymlinkTo, got %r' % (path, index, lines[index - 1]))
        count = int(value)
        with open(target, 'w', encoding='utf-8', newline='') as handle:
            handle.write(''.join(_ttar_content(content) for content in lines[index:index + count]))
        index += count
        mode = lines[index].partition('Mode: ')[2]
        os.chmod(target, int(mode, 8))
        index += 1
    return dest


@pytest.fixture
def procfs_sys(tmp_path):
    """The sysfs tree of prometheus/procfs' testdata, as published."""
    extract_ttar(os.path.join(OTHERS, 'procfs', 'fixtures.ttar.excerpt'), str(tmp_path))
    return str(tmp_path / 'fixtures' / 'sys')


@pytest.fixture
def node_exporter_sys(tmp_path):
    """The sysfs tree of prometheus/node_exporter's collector fixtures, as published."""
    extract_ttar(os.path.join(OTHERS, 'node_exporter', 'sys.ttar.excerpt'), str(tmp_path))
    return str(tmp_path / 'sys')


def read(path):
    with open(path, encoding='utf-8', newline='') as handle:
        return handle.read()


def port_summary(port):
    return (port['device'], port['port'], port['state'], port['physical_state'], port['rate'], port['rate_gbps'],
            port['link_layer'], port['netdev'], port['pci_address'])


def device_summary(device):
    return (device['device'], device['fw_ver'], device['hca_type'], device['board_id'], device['node_guid'],
            device['pci_address'], device['ports'])


def test_the_extracted_trees_keep_the_upstream_quirks(procfs_sys, node_exporter_sys):
    """The extractor keeps what the readers below must cope with (a check of the extractor, not of the reader)."""
    ib = os.path.join(procfs_sys, 'class', 'infiniband')
    # Plain directories, not links into devices/ as on a real host, and no "device" link.
    assert sorted(os.listdir(ib)) == ['hfi1_0', 'mlx4_0', 'mlx5_0']
    assert not any(os.path.islink(os.path.join(ib, name)) for name in os.listdir(ib))
    assert not os.path.lexists(os.path.join(ib, 'mlx5_0', 'device'))
    assert read(os.path.join(ib, 'mlx5_0', 'node_guid')) == '0a7f:bc12:45ef:d23b'  # "EOF": no newline
    assert read(os.path.join(ib, 'mlx4_0', 'ports', '2', 'link_layer')) == 'InfiniBand\n\n'  # "Lines: 2"
    assert read(os.path.join(ib, 'mlx5_0', 'ports', '1', 'phys_state')) == '4: ACTIVE\n'
    assert os.path.realpath(os.path.join(procfs_sys, 'class', 'net', 'eth0', 'device')) == os.path.join(
        os.path.realpath(procfs_sys), 'devices', 'pci0000:00', '0000:00:1f.6')
    eth0 = os.path.join(node_exporter_sys, 'class', 'net', 'eth0')
    assert os.path.islink(eth0) and read(os.path.join(eth0, 'carrier')) == '1\n'
    assert read(os.path.join(node_exporter_sys, 'class', 'infiniband', 'i40iw0', 'ports', '1', 'rate')) == \
        '10 Gb/sec (4X)\n'


# ------------------------------------------------------- the upstream trees


def test_procfs_tree_as_published_fails_on_its_phys_state_without_a_traceback(procfs_sys, run_module):
    """procfs' mlx5_0 port 1 has phys_state "4: ACTIVE": a port state in the physical-state file, which no kernel
    writes (4 is "PortConfigurationTraining", drivers/infiniband/core/sysfs.c phys_state_to_str). The reader
    refuses unknown values rather than guessing, so the module fails, quoting the value."""
    code, result = run_module(ibdev2netdev_facts, {'source': 'sysfs', 'sysfs_root': procfs_sys})
    assert code == 1
    assert result['failed'] is True and 'exception' not in result
    assert result['msg'].startswith('Cannot read RDMA hardware from sysfs: ')
    assert "unexpected phys_state value 'ACTIVE'" in result['msg']
    assert result['offending_line'] == '4: ACTIVE'


def test_procfs_tree_as_published_the_failure_names_the_file(procfs_sys, run_module):
    """The message must say which file held the value: on a host with many ports, "unexpected phys_state value
    'ACTIVE'" alone cannot be acted on."""
    code, result = run_module(ibdev2netdev_facts, {'source': 'sysfs', 'sysfs_root': procfs_sys})
    assert code == 1
    assert 'mlx5_0' in result['msg'] and 'phys_state' in result['msg']
    assert os.path.join('mlx5_0', 'ports', '1', 'phys_state') in result['msg']


def test_procfs_tree_with_the_kernels_phys_state(procfs_sys, run_module):
    """The same tree with mlx5_0's phys_state in the kernel's words for physical state 4; everything else as
    published."""
    phys_state = os.path.join(procfs_sys, 'class', 'infiniband', 'mlx5_0', 'ports', '1', 'phys_state')
    with open(phys_state, 'w') as handle:
        handle.write('4: PortConfigurationTraining\n')
    code, result = run_module(ibdev2netdev_facts, {'source': 'sysfs', 'sysfs_root': procfs_sys})
    assert code == 0, result.get('msg')
    ports = result['ansible_facts']['rdma_ports']
    devices = result['ansible_facts']['rdma_devices']
    # No class/infiniband/<dev>/device link in this tree: no PCI address and nothing to find a netdev through.
    assert [port_summary(p) for p in ports] == [
        ('hfi1_0', 1, 'ACTIVE', 'LinkUp', '100 Gb/sec (4X EDR)', 100, 'InfiniBand', None, None),
        ('mlx4_0', 1, 'ACTIVE', 'LinkUp', '40 Gb/sec (4X QDR)', 40, 'InfiniBand', None, None),
        # link_layer of this port is "InfiniBand" followed by an empty line
        ('mlx4_0', 2, 'ACTIVE', 'LinkUp', '40 Gb/sec (4X QDR)', 40, 'InfiniBand', None, None),
        ('mlx5_0', 1, 'ACTIVE', 'PortConfigurationTraining', '25 Gb/sec (1X EDR)', 25, 'InfiniBand', None, None),
    ]
    # No lid/sm_lid files and no GID table: unknown, not an error; nothing a facts consumer needs is missing.
    assert all(p['lid'] is None and p['sm_lid'] is None and p['gids'] == [] for p in ports)
    assert all(p['unknown'] == [] and p['netdev_state'] is None for p in ports)
    assert [device_summary(d) for d in devices] == [
        ('hfi1_0', '1.27.0', None, 'HPE 100Gb 1-port OP101 QSFP28 x16 PCIe Gen3 with Intel Omni-Path Adapter',
         None, None, [1]),
        ('mlx4_0', '2.31.5050', 'MT4099', 'SM_1141000001000', None, None, [1, 2]),
        # node_guid ends without a newline upstream
        ('mlx5_0', '14.28.2006', 'MT4118', 'SM_2001000001034', '0a7f:bc12:45ef:d23b', None, [1]),
    ]
    # MT4118 is the ConnectX-4 Lx virtual function (0x1016); without a PCI link the device ID is all that tells it.
    assert [(p['device'], p['virtual_function']) for p in ports] == [
        ('hfi1_0', None), ('mlx4_0', False), ('mlx4_0', False), ('mlx5_0', True)]
    assert result['msg'] == '3 RDMA devices (1 SR-IOV VF), 4 ports (4 ACTIVE) from sysfs'


def test_node_exporter_tree(node_exporter_sys, run_module):
    code, result = run_module(ibdev2netdev_facts, {'source': 'sysfs', 'sysfs_root': node_exporter_sys})
    assert code == 0, result.get('msg')
    ports = result['ansible_facts']['rdma_ports']
    assert [port_summary(p) for p in ports] == [
        # "(4X)" without a speed word: 4 lanes of SDR as older kernels print it (rate_show named no SDR speed)
        ('i40iw0', 1, 'ACTIVE', 'LinkUp', '10 Gb/sec (4X)', 10, 'InfiniBand', None, None),
        ('mlx4_0', 1, 'ACTIVE', 'LinkUp', '40 Gb/sec (4X QDR)', 40, 'InfiniBand', None, None),
        ('mlx4_0', 2, 'ACTIVE', 'LinkUp', '40 Gb/sec (4X QDR)', 40, 'InfiniBand', None, None),
    ]
    assert all(p['unknown'] == [] and p['gids'] == [] and p['lid'] is None for p in ports)
    assert [device_summary(d) for d in result['ansible_facts']['rdma_devices']] == [
        ('i40iw0', '0.2', 'I40IW', 'I40IW Board ID', None, None, [1]),
        ('mlx4_0', '2.31.5050', 'MT4099', 'SM_1141000001000', None, None, [1, 2]),
    ]
    assert [(p['device'], p['virtual_function']) for p in ports] == [
        ('i40iw0', None), ('mlx4_0', False), ('mlx4_0', False)]
    assert result['msg'] == '2 RDMA devices, 3 ports (3 ACTIVE) from sysfs'


@pytest.mark.parametrize('tree, netdevs', [
    ('procfs', {'eth0': 'Up'}),
    # eth0 is a link into devices/ here, the bonds are directories; all have carrier 1
    ('node_exporter', {'bond0': 'Up', 'dmz': 'Up', 'int': 'Up', 'eth0': 'Up', 'nosuchdev': None}),
])
def test_netdev_state_from_upstream_class_net(request, tree, netdevs):
    root = request.getfixturevalue(tree + '_sys')
    reader = SysfsReader(root)
    assert dict((name, reader.netdev_state(name)) for name in netdevs) == netdevs


def test_netdev_state_falls_back_to_operstate(node_exporter_sys):
    """carrier is unreadable on an interface that is down (net-sysfs.c carrier_show: EINVAL unless running);
    operstate "up" of the upstream bond then decides."""
    os.remove(os.path.join(node_exporter_sys, 'class', 'net', 'bond0', 'carrier'))
    assert SysfsReader(node_exporter_sys).netdev_state('bond0') == 'Up'


# ------------------------------------------- the kernel's ABI document


def abi_document():
    return read(os.path.join(OTHERS, 'linux', 'sysfs-class-infiniband.excerpt'))


def abi_attributes():
    """The attribute paths of the ABI excerpt's What: lines, relative to /sys/class/infiniband/<device>/ with the
    placeholders as the document spells them."""
    paths = re.findall(r'^What:\s+/sys/class/infiniband/[^/\s]+/(\S+)$', abi_document(), re.M)
    return set(paths)


def abi_values(label):
    """The values an entry of the description table names in parentheses, e.g. state: "(DOWN, INIT, ARMED, ACTIVE
    or ACTIVE_DEFER)"."""
    match = re.search(r'^\s*%s:\s+\(RO\) [^(]*\(([^)]*)\)' % re.escape(label), abi_document(), re.M)
    assert match, label
    return [word for word in re.split(r',\s*|\s+or\s+', ' '.join(match.group(1).split())) if word != 'etc']


# What the reader reads, with where the kernel's exact text is given. "abi": a What: line of the ABI document;
# "sysfs.c" / "net-sysfs.c": only the kernel's show function defines it (drivers/infiniband/core/sysfs.c,
# net/core/net-sysfs.c); "driver": a per-driver attribute the document lists for some drivers.
READER_ATTRIBUTES = {
    'node_guid': 'abi', 'node_desc': 'abi', 'fw_ver': 'abi', 'hca_type': 'driver', 'board_id': 'driver',
    'ports/<port-num>/state': 'abi', 'ports/<port-num>/phys_state': 'abi', 'ports/<port-num>/rate': 'abi',
    'ports/<port-num>/link_layer': 'abi', 'ports/<port-num>/lid': 'abi', 'ports/<port-num>/sm_lid': 'abi',
    'ports/<port-number>/gid_attrs/ndevs/<gid-index>': 'abi', 'ports/<port-number>/gid_attrs/types/<gid-index>': 'abi',
    'ports/<port-num>/gids/<index>': 'sysfs.c',
}


def test_abi_document_lists_the_attributes_the_reader_relies_on():
    documented = abi_attributes()
    assert sorted(name for name, where in READER_ATTRIBUTES.items() if where == 'abi' and name not in documented) == []
    # hca_type and board_id are per-driver attributes: the document lists them for mlx4 (and hca_type for mlx5).
    assert {'hca_type', 'board_id'} <= set(re.findall(r'^What:\s+/sys/class/infiniband/mlx4_X/(\S+)$',
                                                      abi_document(), re.M))
    assert 'hca_type' in re.findall(r'^What:\s+/sys/class/infiniband/mlx5_X/(\S+)$', abi_document(), re.M)


def test_reader_knows_every_value_the_abi_document_names():
    assert abi_values('state') == ['DOWN', 'INIT', 'ARMED', 'ACTIVE', 'ACTIVE_DEFER']
    assert set(abi_values('state')) <= set(_rdma_inventory.PORT_STATES)
    assert abi_values('phys_state') == ['Sleep', 'Polling', 'LinkUp']
    assert set(abi_values('phys_state')) <= set(_rdma_inventory.PHYS_STATES)
    # The document writes "Infiniband"; the kernel prints "InfiniBand" (sysfs.c link_layer_show), as the reader
    # expects and both upstream trees show.
    assert re.search(r'\(Infiniband or Ethernet type\)', abi_document())
    assert sorted(name.lower() for name in _rdma_inventory.LINK_LAYERS) == ['ethernet', 'infiniband']
    assert re.findall(r'"([^"]+)"', abi_document().split('gid_attrs/types', 1)[1]) == ['IB/RoCE v1', 'RoCE v2']


# ------------------------------------- the project's generator vs the kernel

# Numbers and names as the kernel prints them: "%d: %s" of enum ib_port_state (state_show's table, in enum order
# NOP..ACTIVE_DEFER) and "%u: %s" of phys_state_to_str's table (index = number; 0 is "<unknown>").
KERNEL_PORT_STATES = ['NOP', 'DOWN', 'INIT', 'ARMED', 'ACTIVE', 'ACTIVE_DEFER']
KERNEL_PHYS_STATES = ['<unknown>', 'Sleep', 'Polling', 'Disabled', 'PortConfigurationTraining', 'LinkUp',
                      'LinkErrorRecovery', 'Phy Test']
# rate_show: "%d%s Gb/sec (%dX%s)" where %s is ".5" or "" and the speed word is one of these (empty for SDR in
# older kernels); Gb/s per lane of each speed, from the same switch.
LANE_RATES = {'SDR': 2.5, 'DDR': 5, 'QDR': 10, 'FDR10': 10, 'FDR': 14, 'EDR': 25, 'HDR': 50, 'NDR': 100}
RATE_RE = re.compile(r'^(?P<gbps>\d+(?:\.5)?) Gb/sec \((?P<lanes>1|2|4|8|12)X(?: (?P<speed>%s))?\)\n$'
                     % '|'.join(LANE_RATES))
NETDEV_NAME_RE = r'[^/:\s]{1,15}'
# Free text the kernel prints with "%s\n" (fw_ver, node_desc up to 64 bytes; hca_type and board_id of the drivers).
ONE_LINE_RE = r'^[^\n]+\n$'

FORMATS = {
    # sysfs.c state_show
    'state': r'^(?P<number>\d+): (?P<name>%s)\n$' % '|'.join(KERNEL_PORT_STATES),
    # sysfs.c phys_state_show
    'phys_state': r'^(?P<number>\d+): (?P<name>%s)\n$' % '|'.join(re.escape(s) for s in KERNEL_PHYS_STATES),
    'rate': RATE_RE.pattern,
    # sysfs.c link_layer_show
    'link_layer': r'^(InfiniBand|Ethernet)\n$',
    # sysfs.c lid_show, sm_lid_show: "0x%x"
    'lid': r'^0x(0|[1-9a-f][0-9a-f]{0,3})\n$',
    'sm_lid': r'^0x(0|[1-9a-f][0-9a-f]{0,3})\n$',
    # sysfs.c node_guid_show: "%04x:%04x:%04x:%04x"
    'node_guid': r'^[0-9a-f]{4}(:[0-9a-f]{4}){3}\n$',
    'node_desc': ONE_LINE_RE, 'fw_ver': ONE_LINE_RE, 'hca_type': ONE_LINE_RE, 'board_id': ONE_LINE_RE,
    # sysfs.c show_port_gid: "%pI6", eight groups of four lower-case hex digits
    'gids': r'^[0-9a-f]{4}(:[0-9a-f]{4}){7}\n$',
    # the ABI document's two GID types (ib_cache_gid_type_str)
    'gid_attrs/types': r'^(IB/RoCE v1|RoCE v2)\n$',
    # print_ndev: the netdev's name
    'gid_attrs/ndevs': r'^%s\n$' % NETDEV_NAME_RE,
    # net-sysfs.c: dev_id "%#x" (the kernel's vsprintf prints 0 as 0x0), dev_port and carrier "%d",
    # operstate one of operstates[]
    'dev_id': r'^0x[0-9a-f]+\n$',
    'dev_port': r'^\d+\n$',
    'carrier': r'^[01]\n$',
    'operstate': r'^(unknown|notpresent|down|lowerlayerdown|testing|dormant|up)\n$',
    # drivers/pci/iov.c: "%u"
    'sriov_numvfs': r'^\d+\n$',
    'sriov_totalvfs': r'^\d+\n$',
}
# Where in a sysfs tree the reader's reads land, relative to its root; the key names the format above.
READ_PLACES = [
    (r'^class/infiniband/[^/]+/(?P<key>node_guid|node_desc|fw_ver|hca_type|board_id)$', True),
    (r'^class/infiniband/[^/]+/ports/\d+/(?P<key>state|phys_state|rate|link_layer|lid|sm_lid)$', True),
    (r'^class/infiniband/[^/]+/ports/\d+/(?P<key>gids)/\d+$', True),
    # the kernel refuses reads of empty GID entries and of ndevs on InfiniBand ports: absent in a file tree
    (r'^class/infiniband/[^/]+/ports/\d+/(?P<key>gid_attrs/types|gid_attrs/ndevs)/\d+$', False),
    # PF attributes, absent on functions without SR-IOV
    (r'^class/infiniband/[^/]+/device/(?P<key>sriov_numvfs|sriov_totalvfs)$', False),
    (r'^class/infiniband/[^/]+/device/net/%s/(?P<key>dev_id|dev_port)$' % NETDEV_NAME_RE, True),
    # carrier: unreadable while the interface is down
    (r'^class/net/%s/(?P<key>carrier)$' % NETDEV_NAME_RE, False),
    (r'^class/net/%s/(?P<key>operstate)$' % NETDEV_NAME_RE, True),
]


def record_reads(monkeypatch):
    """Record every file the reader reads (SysfsReader._read goes through read_bytes)."""
    reads = []
    real = _rdma_inventory.read_bytes

    def recording_read_bytes(path, *args, **kwargs):
        reads.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(_rdma_inventory, 'read_bytes', recording_read_bytes)
    return reads


def place_of(relative):
    for pattern, required in READ_PLACES:
        match = re.match(pattern, relative)
        if match:
            return match.group('key'), required
    return None, None


def check_value(key, text, relative):
    """The problems of one attribute's content against the kernel's format (empty list when it conforms)."""
    match = re.match(FORMATS[key], text)
    if not match:
        return ['%s: %r is not in the kernel\'s format %s' % (relative, text, FORMATS[key])]
    if key in ('state', 'phys_state'):
        names = KERNEL_PORT_STATES if key == 'state' else KERNEL_PHYS_STATES
        number = names.index(match.group('name'))
        if int(match.group('number')) != number:
            return ['%s: %r: the kernel prints %s as %d' % (relative, text, match.group('name'), number)]
    if key == 'rate':
        lanes, speed = int(match.group('lanes')), match.group('speed') or 'SDR'
        if float(match.group('gbps')) != lanes * LANE_RATES[speed]:
            return ['%s: %r: %dX %s is %s Gb/sec' % (relative, text, lanes, speed, lanes * LANE_RATES[speed])]
    return []


def test_format_checks_accept_what_the_upstream_trees_hold(node_exporter_sys):
    """The hand-written formats against values others recorded (node_exporter's tree, where all conform)."""
    ib = os.path.join(node_exporter_sys, 'class', 'infiniband')
    problems = []
    for device in ('i40iw0', 'mlx4_0'):
        for port in os.listdir(os.path.join(ib, device, 'ports')):
            for key in ('state', 'phys_state', 'rate', 'link_layer'):
                relative = os.path.join('class/infiniband', device, 'ports', port, key)
                problems += check_value(key, read(os.path.join(node_exporter_sys, relative)), relative)
    assert problems == []
    assert check_value('phys_state', '4: ACTIVE\n', 'procfs') != []  # the procfs quirk is caught
    assert check_value('rate', '40 Gb/sec (4X QDR)\n', 'x') == [] and check_value('rate', '40 Gb/sec (4X EDR)\n', 'x')


@pytest.mark.parametrize('profile', [os.path.basename(path)[:-4] for path in HARDWARE_PROFILES])
def test_fixture_generator_writes_what_the_reader_reads_as_the_kernel_does(tmp_path, hardware, monkeypatch, profile):
    root = hardware(profile, tmp_path / 'sys')
    reads = record_reads(monkeypatch)
    ports, _devices = SysfsReader(root).read()
    assert ports, 'profile %s has no RDMA port' % profile
    problems = []
    seen = set()
    for path in reads:
        relative = os.path.relpath(path, root)
        key, required = place_of(relative)
        if key is None:
            problems.append('the reader reads %s, which this test has no kernel format for' % relative)
            continue
        seen.add(key)
        if not os.path.isfile(path):
            if required:
                problems.append('the generator does not write %s, which the kernel always has' % relative)
            continue
        problems += check_value(key, read(path), relative)
    for key in ('gid_attrs/ndevs', 'gid_attrs/types'):
        for path in glob.glob(os.path.join(root, 'class', 'infiniband', '*', 'ports', '*', key, '*')):
            if key == 'gid_attrs/ndevs' and not os.path.isdir(os.path.join(root, 'class', 'net', read(path).strip())):
                problems.append('%s names %r, which is not in class/net' % (os.path.relpath(path, root), read(path)))
    assert problems == []
    # Every port and device attribute the reader reads was seen being read (the check above covered it).
    assert {'state', 'phys_state', 'rate', 'link_layer', 'lid', 'sm_lid', 'gids', 'node_guid', 'node_desc',
            'fw_ver', 'hca_type', 'board_id'} <= seen
