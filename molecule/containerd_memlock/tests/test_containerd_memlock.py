# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Real containerd on the instance: the generated spec reaches a container, and a bad change is rolled back."""

from __future__ import annotations

import json
import os
import re
import subprocess

import testinfra

SPEC = '/etc/containerd/rdma-base-spec.json'
CONFIG = '/etc/containerd/config.toml'
MEMLOCK = 4194304
SCENARIO = os.environ['MOLECULE_SCENARIO_DIRECTORY']
INVENTORY = os.environ['MOLECULE_INVENTORY_FILE']


def node(name):
    return testinfra.get_host('podman://%s' % name)


def run_container_with_generated_spec(host, name):
    """Run busybox through containerd with the role's spec (directory rootfs) and return its `ulimit -l`."""
    script = (
        'import json; s = json.load(open("%s")); '
        's["root"] = {"path": "/opt/memlock-test/rootfs", "readonly": True}; '
        's["process"]["args"] = ["/bin/busybox", "sh", "-c", "ulimit -l"]; s["process"]["terminal"] = False; '
        'json.dump(s, open("/opt/memlock-test/run-spec.json", "w"))' % SPEC)
    host.check_output("python3 -c '%s'" % script)
    return host.check_output('ctr run --rm --config /opt/memlock-test/run-spec.json %s' % name).strip()


def test_spec_has_memlock_and_keeps_nofile():
    rlimits = json.loads(node('ctd-node').file(SPEC).content_string)['process']['rlimits']
    assert rlimits == [{'hard': 1024, 'soft': 1024, 'type': 'RLIMIT_NOFILE'},
                       {'hard': MEMLOCK, 'soft': MEMLOCK, 'type': 'RLIMIT_MEMLOCK'}]


def runtime_specs(dump):
    """runtime -> base_runtime_spec of a `containerd config dump` (tomllib: an independent TOML parser)."""
    import tomllib
    runtimes = tomllib.loads(dump)['plugins']['io.containerd.grpc.v1.cri']['containerd']['runtimes']
    return dict((name, table.get('base_runtime_spec', '')) for name, table in runtimes.items())


def test_config_dump_shows_the_spec_on_runc():
    dump = node('ctd-node').check_output('containerd config dump')
    assert runtime_specs(dump)['runc'] == SPEC


def test_drop_in_layout_gets_the_spec_on_runc_and_nvidia():
    """ctd-node has imports + conf.d/99-nvidia.toml: the drop-in's CRI section is the one containerd 1.6 uses."""
    host = node('ctd-node')
    assert runtime_specs(host.check_output('containerd config dump')) == {'runc': SPEC, 'nvidia': SPEC}
    dropin = host.file('/etc/containerd/conf.d/99-nvidia.toml').content_string
    assert dropin.count('base_runtime_spec = "%s"' % SPEC) == 2
    assert 'base_runtime_spec' not in host.file(CONFIG).content_string  # ignored by 1.6, so left alone


def test_tomlkit_installed_from_the_distribution():
    host = node('ctd-node')
    assert host.package('python3-tomlkit').is_installed
    host.check_output('python3 -c "import tomlkit"')


def test_cri_plugin_loaded():
    plugins = node('ctd-node').check_output('ctr plugins ls')
    cri = [line.split() for line in plugins.splitlines() if line.startswith('io.containerd.grpc.v1') and ' cri ' in line]
    assert cri and cri[0][-1] == 'ok'


def test_new_container_gets_the_configured_memlock():
    assert run_container_with_generated_spec(node('ctd-node'), 'memlock-check') == str(MEMLOCK // 1024)


def test_containerd_service_limit():
    host = node('ctd-node')
    assert host.check_output('systemctl show containerd --property LimitMEMLOCK') == 'LimitMEMLOCK=8388608'
    assert host.service('containerd').is_running


def test_old_container_is_listed_with_its_old_limit():
    """The container started before the change keeps its limit; containerd_tasks_info reports it."""
    # molecule forces colours for its own output; this one is parsed
    env = dict(os.environ, ANSIBLE_FORCE_COLOR='0', ANSIBLE_NOCOLOR='1')
    out = subprocess.run(['ansible', '-i', INVENTORY, 'ctd-node', '-m', 'gpunet.rdma.containerd_tasks_info', '-o'],
                         capture_output=True, text=True, check=True, env=env).stdout
    result = json.loads(out.split('=>', 1)[1])
    old = [t for t in result['tasks'] if t['id'] == 'old-pod-container']
    assert len(old) == 1 and old[0]['namespace'] == 'k8s.io'
    assert old[0]['memlock_soft'] not in (None, MEMLOCK)


def test_opt_in_recreation_killed_the_old_container():
    host = node('ctd-recreate')
    listed = host.check_output('ctr --namespace k8s.io task ls')
    assert 'old-pod-container' not in [line.split()[0] for line in listed.splitlines()[1:]
                                       if line.split()[-1] == 'RUNNING']
    assert run_container_with_generated_spec(host, 'memlock-check') == str(MEMLOCK // 1024)


def test_without_restart_the_change_stays_pending():
    host = node('ctd-pending')
    marker = host.file('/var/lib/gpunet-rdma/containerd-restart-pending')
    assert marker.exists
    started = int(host.check_output('systemctl show containerd --property ActiveEnterTimestamp --timestamp=unix')
                  .split('@')[1])
    assert started < marker.mtime.timestamp()  # containerd still runs with the old configuration
    assert 'base_runtime_spec = "%s"' % SPEC in host.file(CONFIG).content_string
    assert not node('ctd-node').file('/var/lib/gpunet-rdma/containerd-restart-pending').exists


def test_docker_daemon_json_merged():
    host = node('docker-node')
    config = json.loads(host.file('/etc/docker/daemon.json').content_string)
    assert config == {'log-driver': 'json-file', 'default-ulimits': {
        'nofile': {'Name': 'nofile', 'Soft': 65536, 'Hard': 65536},
        'memlock': {'Name': 'memlock', 'Soft': MEMLOCK, 'Hard': MEMLOCK}}}
    dropin = host.file('/etc/systemd/system/docker.service.d/90-gpunet-rdma-memlock.conf').content_string
    assert 'LimitMEMLOCK=8388608' in dropin


K3S_DIR = '/var/lib/rancher/k3s/agent/etc/containerd'


def test_k3s_layout_gets_a_drop_in_and_config_toml_stays_byte_identical():
    """ctd-k3s: the role found k3s, wrote its drop-in where k3s's config.toml imports, and no template."""
    import tomllib
    host = node('ctd-k3s')
    config = host.file(K3S_DIR + '/config.toml')
    assert config.sha256sum == host.file('/opt/memlock-test/k3s-config.toml.orig').sha256sum
    assert config.mode == 0o600  # k3s's own file keeps its attributes too
    assert config.content_string.startswith('# File generated by k3s. DO NOT EDIT.')
    drop_in = tomllib.loads(host.file(K3S_DIR + '/config.toml.d/99-zz-gpunet-rdma.toml').content_string)
    assert drop_in['plugins']['io.containerd.grpc.v1.cri']['containerd']['runtimes'] == {
        'runc': {'base_runtime_spec': SPEC}, 'crun': {'base_runtime_spec': SPEC}}
    assert host.check_output('ls -A %s' % K3S_DIR).split() == ['config.toml', 'config.toml.d']  # no template
    assert host.check_output('ls -A %s/config.toml.d' % K3S_DIR).split() == ['99-zz-gpunet-rdma.toml']
    rlimits = json.loads(host.file(SPEC).content_string)['process']['rlimits']
    assert {'hard': MEMLOCK, 'soft': MEMLOCK, 'type': 'RLIMIT_MEMLOCK'} in rlimits
    assert host.check_output('ls -A /etc/containerd').split() == ['rdma-base-spec.json']  # no config.toml of ours
    # k3s runs containerd: the service's own limit goes to k3s, not to a containerd unit
    limit = host.file('/etc/systemd/system/k3s.service.d/90-gpunet-rdma-memlock.conf').content_string
    assert 'LimitMEMLOCK=8388608' in limit
    assert not host.file('/etc/systemd/system/containerd.service.d').exists
    assert host.file('/var/lib/gpunet-rdma/containerd-restart-pending').content_string.startswith('k3s must restart')


def test_k3s_ledger_names_the_owner_and_the_drop_in():
    """A second run is idempotent and records who owns the configuration and where the setting is."""
    out = os.path.join(os.environ['MOLECULE_EPHEMERAL_DIRECTORY'], 'ctd-k3s-ledger.json')
    env = dict(os.environ, ANSIBLE_FORCE_COLOR='0', ANSIBLE_NOCOLOR='1')  # the recap is parsed
    play = subprocess.run(['ansible-playbook', '-i', INVENTORY, os.path.join(SCENARIO, 'ledger_probe.yml'),
                           '-e', 'ledger_probe_out=%s' % out], check=False, capture_output=True, text=True, env=env)
    assert play.returncode == 0, play.stdout[-3000:] + play.stderr[-3000:]
    # the role changes nothing on its second run; the one change is the ledger file written on the controller
    assert re.search(r'^ctd-k3s\s+: ok=\d+\s+changed=1\s', play.stdout, re.MULTILINE), play.stdout[-2000:]
    with open(out) as handle:
        runtime = json.load(handle)
    detail = runtime['detail']
    assert detail['owner'] == 'k3s' and detail['service'] == 'k3s'
    assert detail['owner_evidence'] == ('%s/config.toml starts with "# File generated by k3s. DO NOT EDIT."'
                                        % K3S_DIR)
    assert detail['config_files'] == [K3S_DIR + '/config.toml.d/99-zz-gpunet-rdma.toml']
    assert detail['regenerated'] == [K3S_DIR + '/config.toml']
    assert sorted(detail['runtimes']) == ['crun', 'runc']
    assert runtime['changed'] is False and runtime['status'] == 'pending'
    assert runtime['pending'][0]['action'] == 'runtime_restart' and runtime['pending'][0]['allowed'] is False
    assert runtime['pending'][0]['reason'].startswith('k3s ')


def test_zz_fault_is_rolled_back():
    """Runs last: breaks the spec on purpose and checks the role's rollback."""
    host = node('ctd-node')
    spec_before = host.file(SPEC).content_string
    config_before = host.file('/etc/containerd/conf.d/99-nvidia.toml').content_string
    play = subprocess.run(['ansible-playbook', '-i', INVENTORY, os.path.join(SCENARIO, 'fault_injection.yml')],
                          check=False, capture_output=True, text=True)
    assert play.returncode != 0
    output = ' '.join((play.stdout + play.stderr).split())  # failures go to stderr; the callback folds lines
    assert 'containerd did not come back with the CRI plugin after the memlock change' in output
    assert 'CRI plugin: io.containerd.grpc.v1 cri linux/amd64 error' in output
    assert host.file(SPEC).content_string == spec_before
    assert host.file('/etc/containerd/conf.d/99-nvidia.toml').content_string == config_before
    assert host.service('containerd').is_running
    test_cri_plugin_loaded()
    assert run_container_with_generated_spec(host, 'memlock-after-rollback') == str(MEMLOCK // 1024)
