# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The perftest parsers against outputs recorded on real machines (tests/unit/fixtures/public/perftest).

Every expectation below was written by reading the artifact: the rows as printed, the unit of the header, the
Gb/s of the result row (MB/sec and MiB/sec are 2**20 bytes per second: x 0.008388608), the test information.
Every artifact of the directory must have an entry here, and a sidecar naming where it was recorded.
"""

from __future__ import annotations

import glob
import os

import pytest
import yaml

from ansible_collections.gpunet.rdma.plugins.module_utils.validation._perftest import (
    explain_failure,
    line_rate_result,
    parse,
    parse_bw,
    parse_lat,
)

CORPUS = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'public', 'perftest')
MIB_IN_GB = 2 ** 20 * 8 / 1e9

# Information block: (test, device, link type, qps, bidirectional, side, gid_index, mtu, rdma_cm, transport).
INFO = {
    'ib_send_bw-ib-ndr200-cx7-a-gbits-client.txt': ('Send BW', 'mlx5_2', 'IB', 1, False, 'client', None, 4096, False,
                                                    'IB'),
    'ib_send_bw-roce-25g-cx4lx-a-gbits-client.txt': ('Send BW', 'mlx5_0', 'Ethernet', 1, False, 'client', 3, 1024,
                                                     False, 'IB'),
    'ib_read_bw-roce-cx5-mofed44-rdma-cm.txt': ('RDMA_Read BW', 'mlx5_0', 'Ethernet', 1, False, 'client', 3, 1024, True,
                                                'IB'),
    'ib_write_bw-roce-cx5-mofed44-duration.txt': ('RDMA_Write BW', 'mlx5_0', 'Ethernet', 1, False, 'client', 3, 1024,
                                                  True, 'IB'),
    'ib_read_lat-roce-cx5-mofed44.txt': ('RDMA_Read Latency', 'mlx5_0', 'Ethernet', 1, False, 'client', 3, 1024, True,
                                         'IB'),
    'ib_write_lat-roce-cx5-mofed44-duration.txt': ('RDMA_Write Latency', 'mlx5_0', 'Ethernet', 1, False, 'client', 3,
                                                   1024, True, 'IB'),
    'ib_write_lat-roce-cx5-mofed44.txt': ('RDMA_Write Latency', 'mlx5_0', 'Ethernet', 1, False, 'client', 3, 1024, True,
                                          'IB'),
    'ib_send_lat-roce-cx5-mofed44.txt': ('Send Latency', 'mlx5_0', 'Ethernet', 1, False, 'client', 3, 1024, True, 'IB'),
    'ib_write_bw-ib-hdr-loopback-8m.log': ('RDMA_Write BW', 'ib0', 'IB', 1, False, 'both', None, 4096, False, 'IB'),
    'ib_write_bw-ib-hdr-loopback-all-sizes.log': ('RDMA_Write BW', 'ib0', 'IB', 1, False, 'both', None, 4096, False,
                                                  'IB'),
    'ib_send_lat-ib-cx5vf-hc44rs-a-server.txt': ('Send Latency', 'mlx5_0', 'IB', 1, False, 'server', None, 4096, False,
                                                 'IB'),
    'ib_send_bw-ib-cx5vf-hc44rs-a-server.txt': ('Send BW', 'mlx5_0', 'IB', 1, False, 'server', None, 4096, False, 'IB'),
    'ib_write_bw-roce-ionic-bidir-q4-a-server.txt': ('RDMA_Write Bidirectional BW', 'ionic_7', 'Ethernet', 4, True,
                                                     'server', 1, 4096, False, 'IB'),
    'ib_write_bw-roce-ionic-bidir-q4-a-client.txt': ('RDMA_Write Bidirectional BW', 'ionic_1', 'Ethernet', 4, True,
                                                     'client', 1, 4096, False, 'IB'),
    'ib_write_bw-ib-hdr-cx6vf-loopback-mib.txt': ('RDMA_Write BW', 'mlx5_ib0', 'IB', 1, False, 'both', None, 4096,
                                                  False, 'IB'),
    'ib_send_lat-ib-hdr-cx6vf-all-client.txt': ('Send Latency', 'mlx5_ib0', 'IB', 1, False, 'client', None, 4096, False,
                                                'IB'),
    'ib_send_bw-ib-hdr-cx6vf-all-server-mib.txt': ('Send BW', 'mlx5_ib0', 'IB', 1, False, 'server', None, 4096, False,
                                                   'IB'),
    'ib_write_bw-roce-post-list-duration-gbits.txt': ('RDMA_Write Post List BW', 'ib0', 'Ethernet', 1, False, 'client',
                                                      2, 4096, False, 'IB'),
    'ib_write_bw-couldnt-connect.txt': (None, None, None, None, False, None, None, None, None, None),
    'ib_write_bw-roce-zero-gid-rtr-failure.txt': ('RDMA_Write BW', 'mlx5_2', 'Ethernet', 1, False, 'client', 0, 1024,
                                                  False, 'IB'),
    'ib_send_bw-iwarp-siw-mr-failure.txt': ('Send BW', 'siw_ens33', 'Ethernet', 1, False, 'client', 0, 1024, False,
                                            'IW'),
    # The authors elided the information block (and the title): nothing of it is read.
    'ib_read_lat-ib-hdr-aks-ndv4-client.txt': (None, None, None, None, False, None, None, None, None, None),
}

# Bandwidth: header unit, result Gb/s (last row), and every row of the last table as printed:
# (#bytes, #iterations, BW peak, BW average, MsgRate[Mpps]).
BW = {
    'ib_send_bw-ib-ndr200-cx7-a-gbits-client.txt': ('Gb/sec', 196.69, [
        (2, 1000, 0.052812, 0.050794, 3.174618), (4, 1000, 0.080899, 0.080547, 2.517093),
        (8, 1000, 0.17, 0.17, 2.624748), (16, 1000, 0.35, 0.35, 2.741373), (32, 1000, 0.70, 0.70, 2.736427),
        (64, 1000, 1.62, 1.62, 3.159528), (128, 1000, 3.07, 3.07, 2.994503), (256, 1000, 5.46, 5.46, 2.663988),
        (512, 1000, 13.24, 13.23, 3.230121), (1024, 1000, 26.58, 26.56, 3.241834),
        (2048, 1000, 51.80, 51.75, 3.158744), (4096, 1000, 82.15, 82.11, 2.505647),
        (8192, 1000, 89.37, 89.33, 1.363014), (16384, 1000, 89.01, 87.24, 0.665597),
        (32768, 1000, 172.67, 96.54, 0.368268), (65536, 1000, 181.95, 108.83, 0.207586),
        (131072, 1000, 181.82, 137.78, 0.131399), (262144, 1000, 187.32, 163.15, 0.077797),
        (524288, 1000, 190.12, 179.08, 0.042696), (1048576, 1000, 191.18, 187.28, 0.022326),
        (2097152, 1000, 192.69, 192.69, 0.011485), (4194304, 1000, 195.53, 195.53, 0.005827),
        (8388608, 1000, 196.69, 196.69, 0.002931)]),
    'ib_send_bw-roce-25g-cx4lx-a-gbits-client.txt': ('Gb/sec', 23.15, [
        (2, 1000, 0.029629, 0.028911, 1.806916), (4, 1000, 0.059258, 0.056530, 1.766561),
        (8, 1000, 0.12, 0.12, 1.822011), (16, 1000, 0.24, 0.23, 1.814474), (32, 1000, 0.47, 0.47, 1.827926),
        (64, 1000, 0.95, 0.92, 1.803978), (128, 1000, 2.23, 2.14, 2.087232), (256, 1000, 4.65, 4.51, 2.202802),
        (512, 1000, 6.83, 6.70, 1.635296), (1024, 1000, 13.65, 13.21, 1.612778),
        (2048, 1000, 23.41, 22.54, 1.375834), (4096, 1000, 23.08, 22.96, 0.700620),
        (8192, 1000, 23.08, 23.06, 0.351821), (16384, 1000, 23.16, 23.10, 0.176238),
        (32768, 1000, 23.16, 23.12, 0.088211), (65536, 1000, 23.14, 23.13, 0.044119),
        (131072, 1000, 23.15, 23.14, 0.022069), (262144, 1000, 23.15, 23.14, 0.011036),
        (524288, 1000, 23.15, 23.15, 0.005518), (1048576, 1000, 23.15, 23.15, 0.002759),
        (2097152, 1000, 23.15, 23.15, 0.001380), (4194304, 1000, 23.15, 23.15, 0.000690),
        (8388608, 1000, 23.15, 23.15, 0.000345)]),
    'ib_read_bw-roce-cx5-mofed44-rdma-cm.txt': ('MB/sec', 70.08, [(65536, 1000, 8354.37, 8354.22, 0.133667)]),
    'ib_write_bw-roce-cx5-mofed44-duration.txt': ('MB/sec', 86.59, [(65536, 24777100, 0.00, 10322.23, 0.165156)]),
    'ib_write_bw-ib-hdr-loopback-8m.log': ('MB/sec', 201.8, [(8388608, 20000, 24056.74, 24056.72, 0.003007)]),
    # Both headers come before the rows: the client's 23 sizes, then the server's one row.
    'ib_write_bw-ib-hdr-loopback-all-sizes.log': ('MB/sec', 194.96, [
        (2, 2000, 5.32, 5.30, 2.778732), (4, 2000, 10.65, 10.64, 2.788833), (8, 2000, 21.30, 21.27, 2.787609),
        (16, 2000, 42.60, 42.55, 2.788268), (32, 2000, 84.90, 82.82, 2.713896), (64, 2000, 173.55, 171.66, 2.812504),
        (128, 2000, 362.27, 353.83, 2.898535), (256, 2000, 687.82, 679.37, 2.782698),
        (512, 2000, 1337.12, 1311.59, 2.686135), (1024, 2000, 2674.25, 2649.39, 2.712980),
        (2048, 2000, 5248.56, 5118.18, 2.620509), (4096, 2000, 10034.02, 9948.41, 2.546793),
        (8192, 2000, 18620.51, 12782.56, 1.636168), (16384, 2000, 23115.27, 16782.50, 1.074080),
        (32768, 2000, 22927.94, 18586.03, 0.594753), (65536, 2000, 23330.56, 21167.79, 0.338685),
        (131072, 2000, 22750.35, 21443.14, 0.171545), (262144, 2000, 22673.63, 22411.35, 0.089645),
        (524288, 2000, 22679.02, 22678.86, 0.045358), (1048576, 2000, 22817.06, 22816.86, 0.022817),
        (2097152, 2000, 22919.37, 22919.27, 0.011460), (4194304, 2000, 23277.93, 23277.91, 0.005819),
        (8388608, 2000, 23240.68, 23240.68, 0.002905), (8388608, 2000, 23240.68, 23240.68, 0.002905)]),
    'ib_send_bw-ib-cx5vf-hc44rs-a-server.txt': ('MB/sec', 96.67, [
        (2, 1000, 0.00, 10.51, 5.512208), (4, 1000, 0.00, 20.64, 5.410485), (8, 1000, 0.00, 41.18, 5.397476),
        (16, 1000, 0.00, 82.49, 5.405794), (32, 1000, 0.00, 165.01, 5.407096), (64, 1000, 0.00, 331.14, 5.425436),
        (128, 1000, 0.00, 660.11, 5.407661), (256, 1000, 0.00, 1306.88, 5.352986),
        (512, 1000, 0.00, 2608.38, 5.341967), (1024, 1000, 0.00, 5093.40, 5.215638),
        (2048, 1000, 0.00, 8031.43, 4.112093), (4096, 1000, 0.00, 8018.60, 2.052763),
        (8192, 1000, 0.00, 11051.50, 1.414592), (16384, 1000, 0.00, 11482.77, 0.734897),
        (32768, 1000, 0.00, 11514.51, 0.368464), (65536, 1000, 0.00, 11516.88, 0.184270),
        (131072, 1000, 0.00, 11523.18, 0.092185), (262144, 1000, 0.00, 11526.74, 0.046107),
        (524288, 1000, 0.00, 11507.83, 0.023016), (1048576, 1000, 0.00, 11494.89, 0.011495),
        (2097152, 1000, 0.00, 11510.98, 0.005755), (4194304, 1000, 0.00, 11526.34, 0.002882),
        (8388608, 1000, 0.00, 11524.21, 0.001441)]),
    'ib_write_bw-roce-ionic-bidir-q4-a-server.txt': ('Gb/sec', 779.21, [
        (2, 20000, 0.147331, 0.146472, 9.154486), (4, 20000, 0.30, 0.30, 9.239950),
        (8, 20000, 0.60, 0.59, 9.224424), (16, 20000, 1.20, 1.18, 9.235043), (32, 20000, 1.94, 1.92, 7.496597),
        (64, 20000, 3.87, 3.84, 7.499745), (128, 20000, 7.75, 7.69, 7.506438), (256, 20000, 15.52, 15.40, 7.520808),
        (512, 20000, 31.04, 30.79, 7.516752), (1024, 20000, 60.78, 60.26, 7.356253),
        (2048, 20000, 123.25, 122.10, 7.452446), (4096, 20000, 246.35, 243.94, 7.444587),
        (8192, 20000, 485.25, 481.20, 7.342513), (16384, 20000, 773.59, 773.21, 5.899086),
        (32768, 20000, 776.90, 776.75, 2.963059), (65536, 20000, 775.85, 775.03, 1.478245),
        (131072, 20000, 777.86, 777.81, 0.741774), (262144, 20000, 778.50, 778.47, 0.371202),
        (524288, 20000, 778.95, 778.93, 0.185712), (1048576, 20000, 779.09, 779.08, 0.092874),
        (2097152, 20000, 779.16, 779.16, 0.046441), (4194304, 20000, 779.16, 779.16, 0.023221),
        (8388608, 20000, 779.21, 779.21, 0.011611)]),
    'ib_write_bw-ib-hdr-cx6vf-loopback-mib.txt': ('MiB/sec', 33.73, [
        (1000, 5000, 4104.91, 4020.54, 4.215846), (1000, 5000, 4104.91, 4020.54, 4.215846)]),
    'ib_send_bw-ib-hdr-cx6vf-all-server-mib.txt': ('MiB/sec', 197.57, [
        (2, 100000, 0.00, 9.29, 4.869852), (4, 100000, 0.00, 18.47, 4.841161), (8, 100000, 0.00, 37.35, 4.894914),
        (16, 100000, 0.00, 74.60, 4.889038), (32, 100000, 0.00, 149.31, 4.892644),
        (64, 100000, 0.00, 298.53, 4.891084), (128, 100000, 0.00, 596.10, 4.883235),
        (256, 100000, 0.00, 1189.91, 4.873857), (512, 100000, 0.00, 2370.48, 4.854738),
        (1024, 100000, 0.00, 4710.37, 4.823419), (2048, 100000, 0.00, 9303.36, 4.763320),
        (4096, 100000, 0.00, 18287.02, 4.681478), (8192, 100000, 0.00, 23539.34, 3.013035),
        (16384, 100000, 0.00, 23551.65, 1.507306)]),
    'ib_write_bw-roce-post-list-duration-gbits.txt': ('Gb/sec', 0.48, [(8, 224958464, 0.00, 0.48, 7.498617)]),
}
# The two ionic outputs print the same (summed, bidirectional) table on both sides.
BW['ib_write_bw-roce-ionic-bidir-q4-a-client.txt'] = BW['ib_write_bw-roce-ionic-bidir-q4-a-server.txt']

# Latency: layout and every row as printed, microseconds:
# iterations: (#bytes, #iterations, t_min, t_max, t_typical, t_avg, t_stdev, 99%, 99.9%);
# iterations-legacy: (#bytes, #iterations, t_min, t_max, t_typical); duration: (#bytes, #iterations, t_avg, tps).
LAT = {
    'ib_read_lat-roce-cx5-mofed44.txt': ('iterations', [(2, 1000, 1.44, 2.93, 1.48, 1.49, 0.02, 1.56, 2.93)]),
    'ib_read_lat-ib-hdr-aks-ndv4-client.txt': ('iterations', [(2, 1000, 5.35, 11.78, 5.49, 5.50, 0.18, 5.74, 11.78)]),
    'ib_write_lat-roce-cx5-mofed44-duration.txt': ('duration', [(2, 58732912, 1.28, 391518.70)]),
    'ib_write_lat-roce-cx5-mofed44.txt': ('iterations', [(2, 1000, 0.76, 0.95, 0.78, 0.78, 0.01, 0.83, 0.95)]),
    'ib_send_lat-roce-cx5-mofed44.txt': ('iterations', [(2, 1000, 0.82, 1.01, 0.88, 0.88, 0.02, 0.94, 1.01)]),
    'ib_send_lat-ib-cx5vf-hc44rs-a-server.txt': ('iterations-legacy', [
        (2, 1000, 2.56, 6.11, 2.66), (4, 1000, 2.48, 6.41, 2.54), (8, 1000, 2.49, 6.22, 2.56),
        (16, 1000, 2.49, 6.36, 2.55), (32, 1000, 2.50, 6.06, 2.56), (64, 1000, 2.56, 6.28, 2.61),
        (128, 1000, 2.58, 6.11, 2.65), (256, 1000, 2.63, 5.71, 2.69), (512, 1000, 2.67, 5.89, 2.73),
        (1024, 1000, 2.81, 6.39, 2.93), (2048, 1000, 3.05, 7.42, 3.15), (4096, 1000, 3.56, 6.56, 3.65),
        (8192, 1000, 4.20, 8.57, 4.36), (16384, 1000, 5.66, 27.24, 5.88), (32768, 1000, 7.79, 10.89, 8.07),
        (65536, 1000, 10.82, 14.28, 11.10), (131072, 1000, 20.37, 23.25, 20.61),
        (262144, 1000, 31.81, 34.65, 32.22), (524288, 1000, 53.74, 62.65, 59.27),
        (1048576, 1000, 97.66, 105.15, 101.36), (2097152, 1000, 185.08, 192.99, 188.32),
        (4194304, 1000, 359.43, 364.06, 361.37), (8388608, 1000, 706.45, 713.13, 709.48)]),
    'ib_send_lat-ib-hdr-cx6vf-all-client.txt': ('iterations', [
        (2, 100000, 1.55, 7.17, 1.60, 1.60, 0.09, 1.62, 3.65), (4, 100000, 1.54, 7.22, 1.58, 1.59, 0.06, 1.62, 3.27),
        (8, 100000, 1.55, 22.40, 1.58, 1.59, 0.07, 1.62, 3.22), (16, 100000, 1.55, 21.40, 1.58, 1.59, 0.08, 1.62, 3.40),
        (32, 100000, 1.55, 6.20, 1.58, 1.59, 0.07, 1.62, 3.43), (64, 100000, 1.62, 6.19, 1.65, 1.65, 0.07, 1.68, 3.47),
        (128, 100000, 1.65, 13.83, 1.68, 1.68, 0.07, 1.72, 3.52),
        (256, 100000, 2.09, 18.54, 2.12, 2.13, 0.10, 2.17, 3.98),
        (512, 100000, 2.12, 8.49, 2.16, 2.17, 0.07, 2.31, 3.87),
        (1024, 100000, 2.17, 27.38, 2.21, 2.23, 0.10, 2.37, 4.04),
        (2048, 100000, 2.30, 12.34, 2.34, 2.35, 0.08, 2.43, 4.23),
        (4096, 100000, 2.81, 14.48, 2.85, 2.86, 0.07, 3.02, 4.43),
        (8192, 100000, 3.11, 8.18, 3.19, 3.19, 0.07, 3.34, 5.03),
        (16384, 100000, 3.68, 17.45, 3.76, 3.77, 0.08, 3.92, 5.58)]),
}

# Recognised failures, in the order explain_failure reports them.
FAILURE_KINDS = {
    'ib_write_bw-couldnt-connect.txt': ['no_exchange'],
    'ib_write_bw-roce-zero-gid-rtr-failure.txt': ['gid_zero', 'qp_connect'],
    'ib_send_bw-iwarp-siw-mr-failure.txt': ['memlock'],
}

ARTIFACTS = sorted(os.path.basename(path) for path in glob.glob(os.path.join(CORPUS, '*'))
                   if not path.endswith('.source.yml'))


def read(name):
    with open(os.path.join(CORPUS, name)) as handle:
        return handle.read()


def test_corpus_is_complete():
    """Every artifact has an expectation and a sidecar; every expectation has its artifact."""
    assert len(ARTIFACTS) >= 12
    assert set(INFO) == set(ARTIFACTS)
    assert set(BW) | set(LAT) | set(FAILURE_KINDS) == set(ARTIFACTS)


@pytest.mark.parametrize('name', ARTIFACTS)
def test_sidecar_names_the_source(name):
    with open(os.path.join(CORPUS, name + '.source.yml')) as handle:
        sidecar = yaml.safe_load(handle)
    assert sidecar['what'] and sidecar['excerpt']
    if 'source' in sidecar:
        assert sidecar['source'].startswith('https://github.com/')
    else:
        assert sidecar['repository'].count('/') == 1 and sidecar['path']
        assert len(sidecar['commit']) == 40 and int(sidecar['commit'], 16) >= 0


@pytest.mark.parametrize('name', ARTIFACTS)
def test_information_block(name):
    test, device, link_type, qps, bidirectional, side, gid_index, mtu, rdma_cm, transport = INFO[name]
    info = parse(read(name))['info']
    assert (info['test'], info['device'], info['link_type'], info['qps'], info['bidirectional'], info['side']) == (
        test, device, link_type, qps, bidirectional, side)
    assert (info['gid_index'], info['mtu'], info['rdma_cm'], info['transport_type']) == (
        gid_index, mtu, rdma_cm, transport)


@pytest.mark.parametrize('name', ARTIFACTS)
def test_bandwidth(name):
    parsed = parse_bw(read(name))
    if name not in BW:
        assert parsed is None
        return
    unit, gbps, rows = BW[name]
    factor = 1.0 if unit == 'Gb/sec' else MIB_IN_GB
    assert parsed['unit'] == unit
    assert [(r['bytes'], r['iterations'], r['peak'], r['average'], r['msg_rate_mpps']) for r in parsed['rows']] == rows
    assert [r['average_gbps'] for r in parsed['rows']] == [round(row[3] * factor, 2) for row in rows]
    assert [r['peak_gbps'] for r in parsed['rows']] == [round(row[2] * factor, 2) for row in rows]
    # Every row of the corpus fits the unit its header names: nothing is re-read, nothing is a problem.
    assert all(r['unit_mismatch'] is None and r['problem'] is None for r in parsed['rows'])
    assert all(r['cross_checked'] for r in parsed['rows'])
    assert parsed['average_gbps'] == gbps
    assert (parsed['bytes'], parsed['iterations']) == rows[-1][:2]
    assert parsed['peak_measured'] is (rows[-1][2] != 0)
    assert parsed['all_sizes'] is (len(set(row[0] for row in rows)) > 1)
    assert parse(read(name))['kind'] == 'bw'


@pytest.mark.parametrize('name', ARTIFACTS)
def test_latency(name):
    parsed = parse_lat(read(name))
    if name not in LAT:
        assert parsed is None
        return
    layout, rows = LAT[name]
    assert parsed['layout'] == layout
    if layout == 'iterations':
        names = ('t_min_usec', 't_max_usec', 't_typical_usec', 't_avg_usec', 't_stdev_usec', 'p99_usec',
                 'p99_9_usec')
    elif layout == 'iterations-legacy':
        names = ('t_min_usec', 't_max_usec', 't_typical_usec')
    else:
        names = ('t_avg_usec', 'tps_average')
    assert [tuple([r['bytes'], r['iterations']] + [r[n] for n in names]) for r in parsed['rows']] == rows
    assert tuple([parsed['bytes'], parsed['iterations']] + [parsed[n] for n in names]) == rows[-1]
    if layout != 'iterations':
        assert parsed['p99_usec'] is None and parsed['p99_9_usec'] is None
    assert parse(read(name))['kind'] == 'lat'


@pytest.mark.parametrize('name', ARTIFACTS)
def test_failures(name):
    assert [f['kind'] for f in explain_failure(read(name))] == FAILURE_KINDS.get(name, [])


# What the problem of each failed run must tell a person, written by hand from the recorded output: how it opens (the
# cause, not one of its consequences), then what else it must name (the fix). Not explain_failure's own text: the
# test would agree with any remedy the module printed.
FAILURE_PROBLEMS = {
    # "Couldn't connect to 192.168.125.211:18515": nobody listened on the server's port.
    'ib_write_bw-couldnt-connect.txt': (
        'client and server could not exchange connection data over TCP',
        ['the server was not running', '18515', 'blocked between the two']),
    # GID index 0 is all zeros on both sides, then "Failed to modify QP 59 to RTR": the zero GID is the cause, the
    # QP that cannot reach RTR its consequence.
    'ib_write_bw-roce-zero-gid-rtr-failure.txt': (
        'the RoCE GID in use is all zeros',
        ['no IP address on that netdev', 'not in this network namespace',
         '-x with a RoCE v2 index that has an address', 'show_gids']),
    # "Couldn't allocate MR" on softiwarp, then the exchange never happens: the memlock limit.
    'ib_send_bw-iwarp-siw-mr-failure.txt': (
        'memory registration failed',
        ['ulimit -l', '64 KiB is the kernel default', 'containerd_memlock', 'IPC_LOCK']),
}


@pytest.mark.parametrize('name', sorted(FAILURE_KINDS))
def test_failed_runs_are_judged_with_the_cause(name):
    assert set(FAILURE_PROBLEMS) == set(FAILURE_KINDS)
    opening, needed = FAILURE_PROBLEMS[name]
    result = line_rate_result(read(name), 100, 90, rc=1)
    assert result['ok'] is False and result['average_gbps'] is None and result['line_rate_pct'] is None
    assert result['problem'].startswith(opening), result['problem']
    assert [text for text in needed if text not in result['problem']] == [], result['problem']


def test_bidirectional_runs_are_judged_against_both_directions():
    """The ionic run sums both directions of a 400G port: 779.21 Gb/s is 97.4 % of 2 x 400 Gb/s."""
    result = line_rate_result(read('ib_write_bw-roce-ionic-bidir-q4-a-client.txt'), 400, 90)
    assert (result['ok'], result['directions'], result['line_rate_pct'], result['qps']) == (True, 2, 97.4, 4)


def test_duration_run_has_no_peak():
    result = line_rate_result(read('ib_write_bw-roce-cx5-mofed44-duration.txt'), 100, 90)
    assert (result['average_gbps'], result['peak_gbps'], result['line_rate_pct'], result['ok']) == (
        86.59, 0.0, 86.6, False)
    assert '86.59 Gb/s is 86.6 % of the 100 Gb/s line rate, below 90 %' in result['problem']
