# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The SR-IOV corpus (fixtures/public/sriov): every artifact has a sidecar, a SOURCES.md row and an expectation.

Expectations are written by hand from reading each file: the errno a recorded shell error stands for (its strerror
text is what the module's message quotes), the kernel messages the module's hints repeat, the links of the recorded
listing. The double's behaviour against the kernel excerpts is tested in test_sriov_vfs_double.py.
"""

from __future__ import annotations

import errno
import glob
import os

import pytest
import yaml

from ansible_collections.gpunet.rdma.plugins.module_utils.tuning._sriov import explain_write_error

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.abspath(os.path.join(HERE, '..', '..', 'fixtures', 'public', 'sriov'))
RECORD = {'name': '0000:0b:00.0 (mlx5_0, enp11s0f0np0)', 'pci_address': '0000:0b:00.0', 'sriov_totalvfs': 8,
          'sriov_numvfs': 0, 'driver': 'mlx5_core'}

# artifact -> (errno the recorded error line stands for, or None; the hint of the module's message for it)
ERRORS = {
    'k8s-rdma-sriov-dev-plugin-12-echo-ebusy.txt': (errno.EBUSY, 'the PF driver refused while no VF exists'),
    'i915-sriov-dkms-105-echo-enoent.txt': (errno.ENOENT, 'does not configure SR-IOV through sysfs'),
    'k8s-rdma-sriov-dev-plugin-19-tee-enosys.txt': (errno.ENOSYS, 'does not configure SR-IOV through sysfs'),
    'doca-platform-58-ebusy.txt': (errno.EBUSY, 'the PF driver refused while no VF exists'),
}
# artifact -> substrings read in it by hand (what the module, the double or the docs rely on)
CONTENTS = {
    'i915-sriov-dkms-143-enoent-erange.txt': ['write error: No such file or directory',
                                              'echo 8(>7) > /sys/devices/pci0000:00/0000:00:02.0/sriov_numvfs\n'
                                              '-bash: echo: write error: Numerical result out of range'],
    'i915-sriov-dkms-143-lspci-total-vfs.txt': ['Total VFs: 7', 'Number of VFs: 0'],
    'i915-sriov-dkms-105-journal.txt': ['driver does not support SR-IOV configuration via sysfs'],
    'k8s-rdma-sriov-dev-plugin-19-dmesg.txt': ["mlx4_core 0000:03:00.0: Driver doesn't support SRIOV configuration "
                                               "via sysfs."],
    'hwloc-242-pf-vf-listing.txt': ['virtfn0 -> ../0000:04:00.1/', 'virtfn3 -> ../0000:04:00.4/',
                                    'physfn -> ../0000:04:00.0/', '-r--r--r--  1 root root     4096 mai   31 14:02 '
                                                                  'sriov_totalvfs'],
    'linux-6.18-abi-sysfs-bus-pci-virtfn-physfn.txt': ['What:\t\t/sys/bus/pci/devices/.../virtfn<N>',
                                                       'Virtual Function whose index is N (0...MaxVFs-1)',
                                                       'What:\t\t/sys/bus/pci/devices/.../physfn'],
    'linux-6.18-abi-sysfs-bus-pci-sriov-totalvfs-numvfs.txt': ['Writing a 10\n\t\twhen the value of sriov_totalvfs is '
                                                               '8 will return an error.'],
    'linux-6.18-abi-sysfs-bus-pci-sriov-drivers-autoprobe.txt': ['If\n\t\tan application writes 0 to the file before '
                                                                 'enabling VFs,\n\t\tthe kernel will not bind VFs'],
    'linux-6.18-iov.c-sriov-attributes.txt': ['%d VFs already enabled. Disable before enabling %d VFs',
                                              'no driver bound to device; cannot configure SR-IOV',
                                              'driver does not support SR-IOV configuration via sysfs',
                                              'return sysfs_emit(buf, "%x\\n", pdev->sriov->vf_device);'],
    'linux-6.18-kstrtox.c-kstrtoull.txt': ["if (_tolower(s[1]) == 'x' && isxdigit(s[2]))", "if (s[0] == '+')"],
    'linux-6.18-kstrtox.c-kstrtou16.txt': ['rv = kstrtoull(s, base, &tmp);'],
    'linux-6.18-kstrtox.c-kstrtobool.txt': ["case 'o':\n\tcase 'O':"],
}


def artifacts():
    return sorted(os.path.basename(path) for path in glob.glob(os.path.join(CORPUS, '*'))
                  if not path.endswith('.source.yml') and not path.endswith('SOURCES.md'))


def read(name):
    with open(os.path.join(CORPUS, name), 'rb') as handle:
        return handle.read().decode('utf-8')


def test_every_artifact_has_an_expectation_a_sidecar_and_a_sources_row():
    names = artifacts()
    assert names and sorted(set(ERRORS) | set(CONTENTS)) == names
    sources = read('SOURCES.md')
    for name in names:
        with open(os.path.join(CORPUS, name + '.source.yml')) as handle:
            sidecar = yaml.safe_load(handle)
        assert sidecar.get('what') and sidecar.get('excerpt'), name
        assert sidecar.get('source', '').startswith('https://github.com/') or \
            (sidecar.get('repository') and sidecar.get('path') and len(sidecar.get('commit', '')) == 40), name
        assert '`%s`' % name in sources, name


@pytest.mark.parametrize('name', sorted(CONTENTS))
def test_contents_read_by_hand(name):
    text = read(name)
    for piece in CONTENTS[name]:
        assert piece in text, (name, piece)


@pytest.mark.parametrize('name', sorted(ERRORS))
def test_recorded_errors_are_the_errno_the_module_explains(name):
    number, hint = ERRORS[name]
    line = read(name).strip().splitlines()[-1]
    # bash and tee print strerror(errno); Go prints the same text in lower case
    assert line.lower().endswith(os.strerror(number).lower())
    message = explain_write_error(OSError(number, os.strerror(number)), RECORD, 'sriov_numvfs', 8)
    assert os.strerror(number) in message and hint in message
