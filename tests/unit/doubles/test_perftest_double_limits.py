# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What limits a port in the lab's perftest double, without a fault file: the PCIe link of its function, the MTU,
the memlock limit of the process and the GIDs of the pair.

The expected figures are written by hand: the PCIe figure is lanes x GT/s x encoding x 0.833 (52.5 Gb/s through
PCIe 3.0 x8, tests/unit/fixtures/public/perftest_limits/mellanox-community-fdr-pcie-gen3-x8.txt), so Gen3 x16 is
105.0, Gen4 x16 210.0 and Gen5 x16 420.0 Gb/s; the line figures are the field report's 94.71 Gb/s (peak 94.72) of
100 and 183.61 (peak 183.66) of 200 Gb/s.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys

import pytest

from ansible_collections.gpunet.rdma.plugins.module_utils.validation._perftest import explain_failure, line_rate_result, parse_bw


REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
DOUBLES = os.path.join(REPO, 'lab', 'doubles')
PUBLIC = os.path.join(REPO, 'tests', 'unit', 'fixtures', 'public', 'perftest_limits')
TIMEOUT = 30
KIB = 1024
MR_FAILURE = ('Couldn\'t allocate MR with error=12\nfailed to create mr\nFailed to create MR\n Couldn\'t create IB '
              'resources\n')


def device_of(profile, name):
    return next(device for device in profile['devices'] if device['name'] == name)


def read(path):
    with open(str(path)) as handle:
        return handle.read()


def public(name):
    return read(os.path.join(PUBLIC, name))


def free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def memlock(limit):
    """A preexec that sets the child's soft RLIMIT_MEMLOCK, as `ulimit -l` or prlimit would."""
    if limit is None:
        return None

    def apply():
        _soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (limit if hard == resource.RLIM_INFINITY else min(limit, hard),
                                                     hard))
    return apply


def run(root, tool, args, limit=None):
    done = subprocess.run([str(root / 'bin' / tool)] + args, capture_output=True, text=True, timeout=TIMEOUT,
                          preexec_fn=memlock(limit), check=False)
    return done.returncode, done.stdout, done.stderr


def pair(root, tool, server_args, client_args, server_limit=None, client_limit=None):
    """Server, then the client against it on 127.0.0.1: ``((rc, out, err) of the server, (...) of the client)``."""
    port = str(free_port())
    server = subprocess.Popen([str(root / 'bin' / tool), '-p', port] + server_args, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, preexec_fn=memlock(server_limit))
    try:
        banner = ''
        while 'Waiting for client to connect' not in banner:
            line = server.stdout.readline()
            if not line:
                out, err = server.communicate(timeout=TIMEOUT)
                pytest.fail('the server ended before listening: %r %r' % (banner + out, err))
            banner += line
        client = run(root, tool, ['-p', port] + client_args + ['127.0.0.1'], client_limit)
        out, err = server.communicate(timeout=TIMEOUT)
        return (server.returncode, banner + out, err), client
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()


def load_double():
    sys.path.insert(0, DOUBLES)
    try:
        import perftest_double
    finally:
        sys.path.remove(DOUBLES)
    return perftest_double


@pytest.fixture
def double():
    """The double's module, for what it computes in this process."""
    return load_double()


@pytest.fixture
def double_tree(double, lab_tree, monkeypatch):
    """``double_tree(profile)``: build a lab root and point the in-process double at it; its path."""
    def tree(profile):
        root = lab_tree(profile)
        monkeypatch.setattr(double, 'SYSFS', str(root / 'sys' / 'class' / 'infiniband'))
        monkeypatch.setattr(double, 'VERBS_PORTS', str(root / 'verbs' / 'ports.json'))
        return root
    return tree


# ------------------------------------------------------------------ the fixture generator


@pytest.mark.parametrize('profile, function, link', [
    ('v100', '0000:5e:00.1', ('8.0 GT/s PCIe', '16', '8.0 GT/s PCIe', '16')),
    ('a100', '0000:8d:00.0', ('16.0 GT/s PCIe', '16', '16.0 GT/s PCIe', '16')),
    # the ConnectX-4 Lx is a PCIe 3.0 x8 card
    ('a100', '0000:3b:00.0', ('8.0 GT/s PCIe', '8', '8.0 GT/s PCIe', '8')),
    ('h100', '0000:dc:00.0', ('32.0 GT/s PCIe', '16', '32.0 GT/s PCIe', '16')),
    ('roce_a100', '0000:0b:00.0', ('8.0 GT/s PCIe', '16', '8.0 GT/s PCIe', '16')),
    # a VF: Link Status reads 0, Link Capabilities are the PF's (lspci-connectx5-vf-link.txt)
    ('roce_a100', '0000:0b:00.2', ('Unknown', '0', '8.0 GT/s PCIe', '16')),
    # no speed in the profile: x16 at 16.0 GT/s
    ('pvrdma', '0000:0b:00.1', ('16.0 GT/s PCIe', '16', '16.0 GT/s PCIe', '16')),
])
def test_every_function_has_its_pcie_link_as_sysfs_shows_it(lab_tree, profile, function, link):
    root = lab_tree(profile)
    directory = root / 'sys' / 'bus' / 'pci' / 'devices' / function
    names = ('current_link_speed', 'current_link_width', 'max_link_speed', 'max_link_width')
    assert tuple(read(directory / name) for name in names) == tuple(value + '\n' for value in link)


def test_the_speeds_are_the_kernels_names(lab_generator):
    """The names NCCL reads from the same files, both the current kernels' and those of 5.6 and earlier."""
    text = public('nccl-topo.cc-pci-link-speeds.txt')
    for speed in ('2.5 GT/s PCIe', '5.0 GT/s PCIe', '8.0 GT/s PCIe', '16.0 GT/s PCIe', '32.0 GT/s PCIe', '64.0 GT/s PCIe',
                  '8 GT/s', '16 GT/s'):
        assert '"%s"' % speed in text and speed in lab_generator.PCIE_SPEEDS
    assert 'LnkSta: Speed unknown (downgraded), Width x0 (downgraded)' in public('lspci-connectx5-vf-link.txt')


@pytest.mark.parametrize('change, message', [
    ({'pcie_link_speed': '8 GT/s PCIe'}, "mlx5_1: PCIe link speed '8 GT/s PCIe' is not one the kernel prints"),
    ({'pcie_link_width': 6}, 'mlx5_1: PCIe link width 6 is not a number of lanes'),
    ({'pcie_link_width': 16, 'pcie_max_link_width': 8}, 'mlx5_1: PCIe link width x16 above its maximum x8'),
])
def test_a_link_the_kernel_cannot_show_is_refused(sysfs_profile, hardware, tmp_path, change, message):
    profile = sysfs_profile('v100')
    device_of(profile, 'mlx5_1').update(change)
    with pytest.raises(ValueError) as raised:
        hardware(profile, tmp_path / 'sys')
    assert str(raised.value).startswith(message)


def test_an_ib_ports_active_mtu_goes_to_verbs_only_when_the_profile_sets_it(lab_tree, sysfs_profile, lab_generator,
                                                                            tmp_path):
    assert not os.path.exists(str(lab_tree('a100', root=tmp_path / 'plain') / 'verbs'))
    profile = sysfs_profile('a100')
    device_of(profile, 'mlx5_1')['ports'][0]['active_mtu'] = 2048
    root = lab_tree(profile, root=tmp_path / 'set')
    assert json.loads(read(root / 'verbs' / 'ports.json')) == {'mlx5_1/1': {'active_mtu': 2048}}
    device_of(profile, 'mlx5_bond_0')['ports'][0]['active_mtu'] = 1024
    with pytest.raises(ValueError) as raised:
        lab_generator.build_firmware(profile, str(tmp_path / 'roce'))
    assert str(raised.value) == ('mlx5_bond_0 port 1: active_mtu is for InfiniBand ports; a RoCE port\'s follows its '
                                 'netdev\'s mtu')


# ------------------------------------------------------------------ PCIe


def test_the_efficiency_is_the_measured_gen3_x8_figure(double):
    """52~53 Gb/s through an x8 Gen3 slot: the double carries 52.5 Gb/s there and scales it by lanes and rate."""
    assert '52~53Gbps' in public('mellanox-community-fdr-pcie-gen3-x8.txt')
    assert round(double.PCIE_EFFICIENCY, 3) == 0.833
    assert [round(double.pcie_gbps(link), 2) for link in ((8.0, 8), (8.0, 16), (16.0, 16), (32.0, 16), (16.0, 8),
                                                          (5.0, 16), (2.5, 8))] == [
        52.5, 105.0, 210.0, 420.0, 105.0, 53.32, 13.33]
    assert double.pcie_gbps(None) is None


# Every ACTIVE port of the lab's profiles: (profile, device, PCIe Gb/s, average Gb/s at 64 KiB).
LAB_PORTS = [
    ('v100', 'mlx5_0', 105.0, 94.71), ('v100', 'mlx5_1', 105.0, 94.71),
    ('v100-degraded', 'mlx5_0', 105.0, 94.71),
    ('v100-old-firmware', 'mlx5_0', 105.0, 94.71), ('v100-old-firmware', 'mlx5_1', 105.0, 94.71),
    ('a100', 'mlx5_1', 210.0, 183.61), ('a100', 'mlx5_bond_0', 52.5, 9.47),
    ('h100', 'mlx5_0', 420.0, 367.22), ('h100', 'mlx5_7', 420.0, 367.22),
    ('roce_a100', 'mlx5_0', 105.0, 94.71), ('roce_a100', 'mlx5_7', 105.0, 94.71),
    # the VFs cross their PF's link
    ('roce_a100', 'mlx5_8', 105.0, 94.71), ('roce_a100', 'mlx5_9', 105.0, 94.71),
    ('pvrdma', 'vmw_pvrdma0', 210.0, 37.88),
]


@pytest.mark.parametrize('profile, device, pcie, average', LAB_PORTS)
def test_the_lab_profiles_links_limit_none_of_their_ports(double, double_tree, profile, device, pcie, average):
    double_tree(profile)
    opts = double.parse('ib_write_bw', ['-d', device, '--report_gbits'])
    port = double.port_of(opts)
    assert round(port['pcie'], 2) == pcie
    (size, _iterations, _peak, figure, _rate), = double.bw_figures(opts, port, {}, mtu=double.own_mtu(opts, port))
    assert (size, round(figure, 2)) == (65536, average)


@pytest.mark.parametrize('profile, device, rate, average, peak', [
    ('h100', 'mlx5_3', 400, 367.22, 367.32),
    ('roce_a100', 'mlx5_8', 100, 94.71, 94.72),
])
def test_the_lab_profiles_still_reach_their_line_rate(lab_tree, profile, device, rate, average, peak):
    root = lab_tree(profile)
    (src, _sout, _serr), (crc, cout, _cerr) = pair(root, 'ib_write_bw', ['-d', device, '--report_gbits'],
                                                   ['-d', device, '--report_gbits'])
    parsed = parse_bw(cout)
    assert (src, crc, parsed['average_gbps'], parsed['peak_gbps']) == (0, 0, average, peak)
    assert line_rate_result(cout, rate, 90)['ok'] is True


def test_an_x8_gen3_function_under_a_100g_port_is_limited_near_the_pcie_figure(lab_tree, sysfs_profile):
    """A dual-port ConnectX-5 trained at x8: 52.50 Gb/s (peak 52.51) instead of 94.71, 52.5 % of the line rate."""
    profile = sysfs_profile('v100')
    for device in profile['devices']:
        device['pcie_link_width'] = 8
    root = lab_tree(profile)
    assert read(root / 'sys' / 'class' / 'infiniband' / 'mlx5_1' / 'device' / 'current_link_width') == '8\n'
    assert read(root / 'sys' / 'class' / 'infiniband' / 'mlx5_1' / 'ports' / '1' / 'rate') == '100 Gb/sec (4X EDR)\n'
    (src, sout, _serr), (crc, cout, _cerr) = pair(root, 'ib_write_bw', ['-d', 'mlx5_1', '--report_gbits'],
                                                  ['-d', 'mlx5_1', '--report_gbits'])
    assert (src, crc) == (0, 0)
    for out in (sout, cout):
        parsed = parse_bw(out)
        assert (parsed['bytes'], parsed['average_gbps'], parsed['peak_gbps'], parsed['msg_rate_mpps']) == (
            65536, 52.5, 52.51, 0.100136)
    result = line_rate_result(cout, 100, 90)
    assert (result['ok'], result['line_rate_pct']) == (False, 52.5)
    assert 'check the PCIe link' in result['problem']
    # In MiB/sec as perftest prints by default: 52.5 Gb/s is 6258.49 MiB/s (52.5e9 / 8 / 2**20).
    _server, (crc, cout, _cerr) = pair(root, 'ib_write_bw', ['-d', 'mlx5_1'], ['-d', 'mlx5_1'])
    assert crc == 0 and parse_bw(cout)['rows'][0]['average'] == 6258.49


def test_the_narrower_side_limits_the_pair(lab_tree, sysfs_profile):
    """Only mlx5_1's function is x8: a pair of mlx5_0 (x16) and mlx5_1 runs at 52.50 Gb/s on both sides."""
    profile = sysfs_profile('v100')
    device_of(profile, 'mlx5_1')['pcie_link_width'] = 8
    root = lab_tree(profile)
    (src, sout, _serr), (crc, cout, _cerr) = pair(root, 'ib_send_bw', ['-d', 'mlx5_0', '--report_gbits'],
                                                  ['-d', 'mlx5_1', '--report_gbits'])
    assert (src, crc) == (0, 0)
    assert (parse_bw(sout)['average_gbps'], parse_bw(cout)['average_gbps']) == (52.5, 52.5)


def test_a_vf_crosses_its_pfs_link(double, double_tree, sysfs_profile):
    profile = sysfs_profile('roce_a100')
    device_of(profile, 'mlx5_0')['pcie_link_width'] = 8
    double_tree(profile)
    assert [round(double.port_of(double.parse('ib_write_bw', ['-d', name]))['pcie'], 2)
            for name in ('mlx5_0', 'mlx5_8', 'mlx5_9', 'mlx5_1')] == [52.5, 52.5, 52.5, 105.0]


def test_a_kernel_before_5_7_and_a_link_that_did_not_train(double, double_tree):
    root = double_tree('v100')
    function = root / 'sys' / 'bus' / 'pci' / 'devices' / '0000:5e:00.0'
    (function / 'current_link_speed').write_text('8 GT/s\n')
    (function / 'current_link_width').write_text('4\n')
    assert double.pcie_link('mlx5_0') == (8.0, 4)
    (function / 'current_link_speed').write_text('Unknown speed\n')
    assert double.pcie_link('mlx5_0') is None
    # a tree from before the PCIe attributes: no limit
    for name in ('current_link_speed', 'current_link_width'):
        (function / name).unlink()
    assert double.pcie_link('mlx5_0') is None and double.pcie_link('mlx5_1') == (8.0, 16)


# ------------------------------------------------------------------ MTU


def test_an_ib_port_active_at_2048_loses_the_extra_headers(lab_tree, sysfs_profile):
    """65536 bytes in 32 packets of 26 header bytes instead of 16: 65952 / 66368 of 183.61 is 182.46."""
    profile = sysfs_profile('a100')
    device_of(profile, 'mlx5_1')['ports'][0]['active_mtu'] = 2048
    root = lab_tree(profile)
    (src, sout, _serr), (crc, cout, _cerr) = pair(root, 'ib_write_bw', ['-d', 'mlx5_1', '--report_gbits'],
                                                  ['-d', 'mlx5_1', '--report_gbits'])
    assert (src, crc) == (0, 0)
    for out in (sout, cout):
        assert ' Mtu             : 2048[B]' in out.splitlines()
        parsed = parse_bw(out)
        assert (parsed['average_gbps'], parsed['peak_gbps'], parsed['msg_rate_mpps']) == (182.46, 182.51, 0.348013)


def test_the_pair_runs_at_the_smaller_mtu(lab_tree):
    """The server asks for 256 (-m): both sides print it, and 65952 / 72192 of 183.61 is 167.74."""
    root = lab_tree('a100')
    (src, sout, _serr), (crc, cout, _cerr) = pair(root, 'ib_write_bw', ['-d', 'mlx5_1', '-m', '256', '--report_gbits'],
                                                  ['-d', 'mlx5_1', '--report_gbits'])
    assert (src, crc) == (0, 0)
    for out in (sout, cout):
        assert ' Mtu             : 256[B]' in out.splitlines()
        assert parse_bw(out)['average_gbps'] == 167.74


@pytest.mark.parametrize('size, mtu, link, factor', [
    # a message that fits one packet at both MTUs loses nothing; 1024 bytes in 4 RoCE packets of 256 instead of 1
    (2048, 2048, 'IB', 1.0), (1024, 256, 'Ethernet', 1106 / 1352),
    (65536, 2048, 'IB', 65952 / 66368),
    # RoCE: the share stands for perftest's 1024 on a 1500-byte netdev; 512 costs, 4096 (jumbo frames) gains nothing
    (65536, 512, 'Ethernet', 70784 / 76032), (65536, 4096, 'Ethernet', 1.0), (65536, 1024, 'Ethernet', 1.0),
    (65536, None, 'IB', 1.0),
])
def test_mtu_factor(double, size, mtu, link, factor):
    assert double.mtu_factor(size, mtu, link) == pytest.approx(factor, abs=1e-12)


def test_a_roce_port_with_jumbo_frames_is_not_faster_and_one_at_512_is_slower(lab_tree, sysfs_profile):
    profile = sysfs_profile('a100')
    profile['virtual_netdevs'][0]['mtu'] = 9000
    root = lab_tree(profile)
    _server, (crc, cout, _cerr) = pair(root, 'ib_write_bw', ['-d', 'mlx5_bond_0', '--report_gbits'],
                                       ['-d', 'mlx5_bond_0', '--report_gbits'])
    assert crc == 0 and ' Mtu             : 4096[B]' in cout.splitlines() and parse_bw(cout)['average_gbps'] == 9.47
    _server, (crc, cout, _cerr) = pair(root, 'ib_write_bw', ['-d', 'mlx5_bond_0', '-m', '512', '--report_gbits'],
                                       ['-d', 'mlx5_bond_0', '-m', '512', '--report_gbits'])
    # 70784 / 76032 of 9.471
    assert crc == 0 and parse_bw(cout)['average_gbps'] == 8.82


# ------------------------------------------------------------------ memlock


def test_the_buffer_is_perftests(double):
    """2 x max(size, page) aligned to the 64-byte cache line, per QP (perftest_resources.c alloc_ctx), whole pages."""
    text = public('perftest_resources.c-alloc_ctx-buff_size.txt')
    assert 'ctx->buff_size = INC(BUFF_SIZE(ctx->size, ctx->cycle_buffer),' in text
    assert '* 2 * num_of_qps_factor * user_param->flows;' in text
    assert resource.getpagesize() == 4096
    needed = [double.memlock_needed(double.parse('ib_write_bw', args)) for args in (
        [], ['-s', '2'], ['-s', '32768'], ['-s', '32769'], ['-q', '4'], ['-a'])]
    assert needed == [128 * KIB, 8 * KIB, 64 * KIB, 68 * KIB, 512 * KIB, 16 * KIB * KIB]


def test_a_64_kib_memlock_limit_fails_ib_write_bw_with_perftests_message(lab_tree):
    """The default 64 KiB messages need 128 KiB locked: the registration is refused (ENOMEM, 12) on both sides."""
    root = lab_tree('v100')
    (src, sout, serr), (crc, cout, cerr) = pair(root, 'ib_write_bw', ['-d', 'mlx5_1'], ['-d', 'mlx5_1'],
                                                server_limit=64 * KIB, client_limit=64 * KIB)
    assert (src, serr, crc, cout, cerr) == (1, MR_FAILURE, 1, '', MR_FAILURE)
    assert 'Waiting for client to connect' in sout and 'RDMA_Write BW Test' not in sout
    # perftest's messages, innermost first, and its main's line (perftest_resources.c; 5.96 printed no errno)
    sources = public('perftest_resources.c-mr-failure-messages.txt')
    messages = ('Couldn\'t allocate MR with error=%d', 'failed to create mr', 'Failed to create MR')
    assert all(('"%s\\n"' % message) in sources for message in messages)
    assert cerr.replace(' with error=12', '') == public('ib_write_bw-5.96-mr-failure.txt')
    assert [failure['kind'] for failure in explain_failure(cerr)] == ['memlock']
    assert line_rate_result(cout + cerr, 100, 90, crc)['problem'].startswith('memory registration failed')


def test_the_side_with_the_limit_fails_and_the_other_sees_the_exchange_break(lab_tree):
    root = lab_tree('v100')
    (src, _sout, serr), (crc, _cout, cerr) = pair(root, 'ib_write_bw', ['-d', 'mlx5_1'], ['-d', 'mlx5_1'],
                                                  client_limit=64 * KIB)
    assert (crc, cerr) == (1, MR_FAILURE)
    assert src == 1 and [failure['kind'] for failure in explain_failure(serr)] == ['no_exchange']


@pytest.mark.parametrize('tool, args, rc', [
    # 32 KiB messages need exactly the 16 pages of 64 KiB; one byte more needs 17
    ('ib_write_bw', ['-s', '32768'], 0),
    ('ib_write_bw', ['-s', '32769'], 1),
    # 2-byte latency messages need 8 KiB
    ('ib_write_lat', [], 0),
])
def test_what_fits_in_64_kib(lab_tree, tool, args, rc):
    root = lab_tree('v100')
    (src, _sout, _serr), (crc, _cout, cerr) = pair(root, tool, ['-d', 'mlx5_1'] + args, ['-d', 'mlx5_1'] + args,
                                                   server_limit=64 * KIB, client_limit=64 * KIB)
    assert (src, crc) == (rc, rc) and (cerr == MR_FAILURE) is (rc == 1)


@pytest.mark.parametrize('euid, soft, warning', [
    (1000, 32 * KIB, 'libibverbs: Warning: RLIMIT_MEMLOCK is 32768 bytes.\n'
                     '    This will severely limit memory registrations.\n'),
    (1000, 64 * KIB, ''),
    (0, 32 * KIB, ''),
    (1000, -1, ''),
])
def test_libibverbs_warns_a_process_that_is_not_root_of_32_kib_or_less(double, monkeypatch, euid, soft, warning):
    text = public('rdma-core-init.c-check_memlock_limit.txt')
    assert 'if (!geteuid())' in text and 'rlim.rlim_cur <= 32768' in text
    assert '"    This will severely limit memory registrations.\\n"' in text
    monkeypatch.setattr(double.os, 'geteuid', lambda: euid)
    monkeypatch.setattr(double.resource, 'getrlimit', lambda _which: (soft, soft))
    assert double.memlock_warning() == warning


# ------------------------------------------------------------------ GIDs


def test_an_ipv4_gid_against_a_link_local_one_is_refused_after_the_header(lab_tree):
    """bond0's table: 0/1 link-local (v1/v2), 2/3 10.96.83.26 (v1/v2)."""
    root = lab_tree('a100')
    (src, sout, serr), (crc, cout, cerr) = pair(root, 'ib_write_bw', ['-d', 'mlx5_bond_0', '-x', '1'],
                                                ['-d', 'mlx5_bond_0', '-x', '3'])
    expected = '\n Found Incompatibility issue with GID types.\n Please Try to use a different IP version.\n\n'
    assert (src, serr, crc, cerr) == (1, expected, 1, expected)
    assert public('write_bw.c-gid-compatibility.txt').count('Found Incompatibility issue with GID types.') == 1
    for out in (sout, cout):
        assert 'RDMA_Write BW Test' in out and 'local address' not in out
    assert [failure['kind'] for failure in explain_failure(cerr)] == ['gid_type']


def test_roce_v1_against_v2_connects_but_no_work_completes(lab_tree):
    root = lab_tree('a100')
    (src, sout, serr), (crc, cout, cerr) = pair(root, 'ib_write_bw', ['-d', 'mlx5_bond_0', '-x', '2'],
                                                ['-d', 'mlx5_bond_0', '-x', '3'])
    assert (src, crc) == (1, 1)
    assert ' remote address: ' in cout and ' GID index       : 3' in cout.splitlines()
    assert cerr.startswith(' Completion with error at client\n Failed status 12: ')
    assert [failure['kind'] for failure in explain_failure(cerr)] == ['completion_error']
    assert 'retry counter exceeded' in explain_failure(cerr)[0]['remedy']
    assert [failure['kind'] for failure in explain_failure(serr)] == ['no_exchange'] and ' GID index       : 2' in sout


@pytest.mark.parametrize('tool, rc, last', [
    ('ib_write_lat', 1, 'Test exited with Error'),
    ('ib_send_lat', 17, 'scnt=1, ccnt=0'),
])
def test_roce_v1_against_v2_fails_the_latency_tools_too(lab_tree, tool, rc, last):
    root = lab_tree('a100')
    (src, _sout, _serr), (crc, _cout, cerr) = pair(root, tool, ['-d', 'mlx5_bond_0', '-x', '0'],
                                                   ['-d', 'mlx5_bond_0', '-x', '1'])
    assert (src, crc) == (1, rc)
    assert cerr.startswith(' Completion with error at client\n') and cerr.splitlines()[-1] == last


def test_the_same_gid_kind_on_both_sides_runs(lab_tree):
    root = lab_tree('a100')
    _server, (crc, cout, _cerr) = pair(root, 'ib_write_bw', ['-d', 'mlx5_bond_0', '-x', '2', '--report_gbits'],
                                       ['-d', 'mlx5_bond_0', '-x', '2', '--report_gbits'])
    assert crc == 0 and parse_bw(cout)['average_gbps'] == 9.47
