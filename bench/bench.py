# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""`make bench`: what the collection costs per host, against Ansible's own floor.

1. Fleet discovery: N simulated hosts (ansible_connection local, each with its own sysfs fixture tree of
   2, 4, 8 or 16 ports) - `ansible all -m ansible.builtin.ping` and `playbooks/discover.yml` alternate, same
   forks and configuration; the median ratio discover / ping; the same at a smaller N (cost should grow
   linearly); the facts module's own read time for 2, 8 and 16 ports.
2. The lab (podman): the full site.yml twice - the second run's changed count, handler runs and reboots -
   and a fresh node with pending firmware changes and reboots allowed: reboots in its rollout.

Results: <results>/bench.json and <results>/bench.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(REPO, 'lab'))
sys.path.insert(0, os.path.join(REPO, '.build', 'collections'))

import sysfs_fixture  # noqa: E402  pylint: disable=wrong-import-position
import yaml  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import SysfsReader  # noqa: E402

PORT_SIZES = (2, 4, 8, 16)
RECAP = re.compile(r'^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)', re.M)


def profile(ports):
    """``ports`` single-port ConnectX-6 HDR devices, ACTIVE InfiniBand at 200 Gb/s."""
    devices = []
    for index in range(ports):
        bus = 0x10 + index
        devices.append({
            'name': 'mlx5_%d' % index, 'pci_address': '0000:%02x:00.0' % bus,
            'pci_parent': 'pci0000:%02x/0000:%02x:01.0' % (bus & 0xf0, bus & 0xf0), 'pci_device_id': '0x101b',
            'hca_type': 'MT4123', 'board_id': 'MT_0000000223', 'fw_ver': '20.31.1014',
            'node_guid': '0c42:a103:00a1:%04x' % index,
            'ports': [{'number': 1, 'state': 'ACTIVE', 'phys_state': 'LinkUp', 'rate': '200 Gb/sec (4X HDR)',
                       'link_layer': 'InfiniBand', 'lid': '0x%x' % (index + 2), 'sm_lid': '0x1'}],
            'netdevs': [{'name': 'ibp%ds0' % bus, 'dev_port': 0, 'operstate': 'up', 'carrier': 1, 'type': 32}]})
    return {'devices': devices}


def build_fleet(workdir, hosts):
    inventory = {'all': {'children': {'bench': {'hosts': {}}}, 'vars': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
        'rdma_discovery_source': 'sysfs', 'rdma_discovery_report_dir': os.path.join(workdir, 'report'),
        'rdma_discovery_fail_on_mismatch': False}}}
    for index in range(hosts):
        name = 'bench-%03d' % (index + 1)
        root = os.path.join(workdir, 'hosts', name, 'sys')
        if not os.path.isdir(root):
            sysfs_fixture.build(profile(PORT_SIZES[index % len(PORT_SIZES)]), root)
        inventory['all']['children']['bench']['hosts'][name] = {'rdma_discovery_sysfs_root': root}
    path = os.path.join(workdir, 'inventory-%d.yml' % hosts)
    with open(path, 'w') as handle:
        yaml.safe_dump(inventory, handle)
    return path


def timed(argv, env):
    start = time.monotonic()
    result = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO, check=False)
    elapsed = time.monotonic() - start
    if result.returncode != 0:
        tail = (result.stdout + result.stderr)[-3000:]
        raise SystemExit('bench: %s failed (rc %d):\n%s' % (' '.join(argv[:4]), result.returncode, tail))
    return elapsed, result.stdout


def fleet(inventory, forks, pairs, env):
    ping = ['ansible', 'all', '-i', inventory, '-m', 'ansible.builtin.ping', '-f', str(forks)]
    discover = ['ansible-playbook', '-i', inventory, 'playbooks/discover.yml', '-f', str(forks)]
    rounds = []
    for _round in range(pairs):
        ping_s, _out = timed(ping, env)
        discover_s, out = timed(discover, env)
        rounds.append({'ping_s': round(ping_s, 2), 'discover_s': round(discover_s, 2),
                       'ratio': round(discover_s / ping_s, 3)})
        changed = sum(int(m[2]) for m in RECAP.findall(out))
    return {'rounds': rounds, 'median_ratio': round(statistics.median(r['ratio'] for r in rounds), 3),
            'median_ping_s': round(statistics.median(r['ping_s'] for r in rounds), 2),
            'median_discover_s': round(statistics.median(r['discover_s'] for r in rounds), 2),
            'changed_on_last_discover': changed}


def module_read_times(workdir, repeats=50):
    times = {}
    for ports in (2, 8, 16):
        root = os.path.join(workdir, 'module-%d' % ports, 'sys')
        if not os.path.isdir(root):
            sysfs_fixture.build(profile(ports), root)
        samples = []
        for _sample in range(repeats):
            start = time.perf_counter()
            found, _devices = SysfsReader(root).read()
            samples.append(time.perf_counter() - start)
        assert len(found) == ports
        times[str(ports)] = round(statistics.median(samples) * 1000, 2)
    return times


def recap(output):
    return dict((m[0], {'ok': int(m[1]), 'changed': int(m[2]), 'unreachable': int(m[3]), 'failed': int(m[4])})
                for m in RECAP.findall(output))


def lab_reboots(nodes):
    counts = {}
    for node in nodes:
        result = subprocess.run(['podman', 'exec', node, 'cat', '/opt/gpunet-lab/firmware/calls.log'],
                                capture_output=True, text=True, check=False)
        counts[node] = sum(1 for line in result.stdout.splitlines() if line and json.loads(line)[0] == 'reboot')
    return counts


def site_argv(workdir):
    manifests = tempfile.mkdtemp(prefix='bench-manifests-', dir=workdir)
    return ['ansible-playbook', '-i', 'inventory/lab', 'playbooks/site.yml',
            '-e', 'rdma_discovery_report_dir=%s' % tempfile.mkdtemp(prefix='bench-report-', dir=workdir),
            '-e', 'network_operator_manifest_dir=%s' % manifests,
            '-e', 'spiderpool_manifest_dir=%s/spiderpool' % manifests,
            '-e', 'rdma_validate_manifest_dir=%s/validation' % manifests]


def lab_size(env, scale, workdir):
    """The lab at LAB_SCALE=scale: site.yml once to converge, then the no-op site.yml, discover.yml and ping on
    the same nodes, each timed in this run."""
    env = dict(env, LAB_SCALE=str(scale))
    subprocess.run(['bash', 'lab/lab.sh', 'up'], cwd=REPO, env=env, check=True, capture_output=True)
    timed(['ansible-playbook', '-i', 'inventory/lab', 'lab/prepare.yml'], env)
    site = site_argv(workdir)
    first_s, first = timed(site, env)
    nodes = sorted(name for name in recap(first) if name != 'localhost')
    before = lab_reboots(nodes)
    noop_s, noop = timed(site, env)
    after = lab_reboots(nodes)
    discover_s, _out = timed(['ansible-playbook', '-i', 'inventory/lab', 'playbooks/discover.yml',
                              '-e', 'rdma_discovery_report_dir=%s' % tempfile.mkdtemp(dir=workdir)], env)
    ping_s, _out = timed(['ansible', '-i', 'inventory/lab', 'all', '-m', 'ansible.builtin.ping'], env)
    return {'scale': scale, 'hosts': len(nodes), 'first_run_s': round(first_s, 1), 'noop_s': round(noop_s, 1),
            'discover_s': round(discover_s, 1), 'ping_s': round(ping_s, 1),
            'noop_over_discover': round(noop_s / discover_s, 2),
            'first_run_changed': sum(r['changed'] for r in recap(first).values()),
            'noop_changed': sum(r['changed'] for r in recap(noop).values()),
            'noop_handlers': noop.count('RUNNING HANDLER'),
            'noop_batches': noop.count('PLAY [Disruptive steps]'),
            'noop_reboots': sum(after[n] - before[n] for n in nodes)}


def rollout_one_of_many(env, scale, workdir):
    """At LAB_SCALE=scale (nodes converged by lab_size): one node may activate its pending firmware change by a
    reboot (nic_firmware_apply=reboot for it alone); site.yml must run one serial batch and reboot that node once."""
    env = dict(env, LAB_SCALE=str(scale))
    node = 'lab-a100-1'
    extra = os.path.join(tempfile.mkdtemp(prefix='bench-rollout-', dir=workdir), 'rollout.yml')
    with open(extra, 'w') as handle:
        yaml.safe_dump({'all': {'children': {'lab': {'children': {'ib_a100': {'hosts': {node: {
            'nic_firmware_apply': 'reboot'}}}}}}}}, handle)
    nodes = subprocess.run([sys.executable, 'lab/lab_inventory.py', 'nodes', '--scale', str(scale)], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split()
    before = lab_reboots(nodes)
    site = site_argv(workdir)
    site[site.index('inventory/lab') + 1:site.index('inventory/lab') + 1] = ['-i', extra]
    rollout_s, out = timed(site, env)
    after = lab_reboots(nodes)
    reboots = dict((n, after[n] - before[n]) for n in nodes if after[n] != before[n])
    return {'hosts': len(nodes), 'node': node, 'rollout_s': round(rollout_s, 1),
            'batches': out.count('PLAY [Disruptive steps]'), 'reboots': reboots,
            'changed': sum(r['changed'] for r in recap(out).values())}


def markdown(results):
    fleet_big, fleet_small = results['fleet'], results['fleet_small']
    lines = ['# gpunet.rdma benchmark', '',
             'Controller: %d CPUs, forks %d. Discovery of N simulated hosts (2-16 ports each, '
             'ansible_connection local) against `ansible -m ping` on the same inventory.' % (
                 results['cpus'], results['forks']), '',
             '| N | ping (s) | discover.yml (s) | ratio (median of %d) |' % len(fleet_big['rounds']),
             '| --- | --- | --- | --- |']
    for hosts, run in ((results['hosts'], fleet_big), (results['hosts_small'], fleet_small)):
        lines.append('| %d | %s | %s | %s |' % (hosts, run['median_ping_s'], run['median_discover_s'],
                                                run['median_ratio']))
    lines += ['', 'Growth %d -> %d hosts: discover.yml x%s for x%s hosts.' % (
        results['hosts_small'], results['hosts'], results['growth'], round(results['hosts'] / results['hosts_small'], 2)),
        '', 'Facts module, sysfs read per host (median): ' + ', '.join(
            '%s ports %s ms' % (k, v) for k, v in sorted(results['module_read_ms'].items(), key=lambda kv: int(kv[0])))
        + '.']
    sizes = results.get('lab_sizes')
    if sizes:
        small, big = sizes
        lines += ['', 'Lab (podman nodes over SSH, same machine), timed in this run:', '',
                  '| nodes | first site.yml (s) | no-op site.yml (s) | discover.yml (s) | ping (s) | no-op / discover |',
                  '| --- | --- | --- | --- | --- | --- |']
        for size in sizes:
            figures = (size['hosts'], size['first_run_s'], size['noop_s'], size['discover_s'], size['ping_s'],
                       size['noop_over_discover'])
            lines.append('| %d | %s | %s | %s | %s | %s |' % figures)
        lines += ['', 'No-op site.yml %d -> %d nodes: x%s (ping on the same nodes: x%s). No-op runs: %d changed, %d '
                  'handler runs, %d disruptive batches, %d reboots.' % (
                      small['hosts'], big['hosts'], results['lab_noop_growth'], results['lab_ping_growth'],
                      small['noop_changed'] + big['noop_changed'], small['noop_handlers'] + big['noop_handlers'],
                      small['noop_batches'] + big['noop_batches'], small['noop_reboots'] + big['noop_reboots'])]
    rollout = results.get('rollout')
    if rollout:
        lines += ['', 'Rollout on %d nodes where %s alone may reboot to activate its pending firmware change: %d '
                  'serial batch(es), reboots %s, %s s.' % (
                      rollout['hosts'], rollout['node'], rollout['batches'],
                      ', '.join('%s x%d' % kv for kv in sorted(rollout['reboots'].items())) or 'none',
                      rollout['rollout_s'])]
    return '\n'.join(lines) + '\n'


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, default=200)
    parser.add_argument('--hosts-small', type=int, default=50)
    parser.add_argument('--pairs', type=int, default=3)
    parser.add_argument('--forks', type=int, default=20)
    parser.add_argument('--results', default=os.path.join(REPO, 'bench', 'results'))
    parser.add_argument('--workdir', default=os.path.join(REPO, '.build', 'bench'))
    parser.add_argument('--skip-lab', action='store_true', help='only the fleet discovery part (no podman)')
    parser.add_argument('--skip-pause', action='store_true', help='leave running lab nodes running during discovery')
    parser.add_argument('--lab-scales', type=int, nargs=2, default=(1, 3), metavar=('SMALL', 'BIG'),
                        help='LAB_SCALE of the two lab sizes (6 and 18 nodes by default)')
    args = parser.parse_args()
    env = dict(os.environ, ANSIBLE_NOCOLOR='1')
    os.makedirs(args.workdir, exist_ok=True)
    results = {'cpus': os.cpu_count(), 'forks': args.forks, 'hosts': args.hosts, 'hosts_small': args.hosts_small}
    big = build_fleet(args.workdir, args.hosts)
    small = build_fleet(args.workdir, args.hosts_small)
    print('bench: %d and %d simulated hosts in %s' % (args.hosts, args.hosts_small, args.workdir))
    # Lab nodes left running (systemd, containerd, sshd in each) would take CPU from the measurement: paused meanwhile.
    paused = subprocess.run(['podman', 'ps', '-q', '--filter', 'label=gpunet-lab=1', '--filter', 'status=running'],
                            capture_output=True, text=True, check=False).stdout.split() if not args.skip_pause else []
    if paused:
        subprocess.run(['podman', 'pause'] + paused, capture_output=True, check=False)
    try:
        results['fleet'] = fleet(big, args.forks, args.pairs, env)
        print('bench: N=%d %s' % (args.hosts, json.dumps(results['fleet']['rounds'])))
        results['fleet_small'] = fleet(small, args.forks, args.pairs, env)
        print('bench: N=%d %s' % (args.hosts_small, json.dumps(results['fleet_small']['rounds'])))
    finally:
        if paused:
            subprocess.run(['podman', 'unpause'] + paused, capture_output=True, check=False)
    results['growth'] = round(results['fleet']['median_discover_s'] / results['fleet_small']['median_discover_s'], 2)
    results['module_read_ms'] = module_read_times(args.workdir)
    if not args.skip_lab:
        # The cluster stage validates against the upstream CRDs the repository carries (or GPUNET_CRDS_DIR's).
        env['GPUNET_CRDS_DIR'] = os.environ.get('GPUNET_CRDS_DIR') or os.path.join(REPO, 'tests', 'crds')
        if not os.path.isdir(env['GPUNET_CRDS_DIR']):
            sys.exit('bench: GPUNET_CRDS_DIR=%s is not a directory; unset it to use tests/crds' % env['GPUNET_CRDS_DIR'])
        small = lab_size(env, args.lab_scales[0], args.workdir)
        print('bench: lab %s' % json.dumps(small))
        big = lab_size(env, args.lab_scales[1], args.workdir)
        print('bench: lab %s' % json.dumps(big))
        results['lab_sizes'] = [small, big]
        results['lab_noop_growth'] = round(big['noop_s'] / small['noop_s'], 2)
        results['lab_ping_growth'] = round(big['ping_s'] / small['ping_s'], 2)
        results['rollout'] = rollout_one_of_many(env, args.lab_scales[1], args.workdir)
        print('bench: rollout %s' % json.dumps(results['rollout']))
        # leave the lab as make lab makes it
        subprocess.run(['bash', 'lab/lab.sh', 'up'], cwd=REPO, env=dict(env, LAB_SCALE='1'), check=False,
                       capture_output=True)
    os.makedirs(args.results, exist_ok=True)
    with open(os.path.join(args.results, 'bench.json'), 'w') as handle:
        json.dump(results, handle, indent=2, sort_keys=True)
        handle.write('\n')
    text = markdown(results)
    with open(os.path.join(args.results, 'bench.md'), 'w') as handle:
        handle.write(text)
    print(text)
    failures = []
    if results['fleet']['median_ratio'] > 1.1:
        failures.append('discovery is %s x the ping floor at %d hosts (goal 1.1)'
                        % (results['fleet']['median_ratio'], results['hosts']))
    for size in results.get('lab_sizes', []):
        if size['noop_changed'] or size['noop_handlers'] or size['noop_reboots'] or size['noop_batches']:
            failures.append('the no-op site run on %d nodes changed, restarted, batched or rebooted something'
                            % size['hosts'])
        if size['noop_over_discover'] > 4:
            failures.append('the no-op site run on %d nodes is %s x discover.yml (goal 4)'
                            % (size['hosts'], size['noop_over_discover']))
    if results.get('lab_noop_growth') and results['lab_noop_growth'] > 1.3:
        failures.append('the no-op site run grows x%s from %d to %d nodes (goal 1.3; ping grows x%s here)' % (
            results['lab_noop_growth'], results['lab_sizes'][0]['hosts'], results['lab_sizes'][1]['hosts'],
            results['lab_ping_growth']))
    rollout = results.get('rollout')
    if rollout and (rollout['batches'] != 1 or rollout['reboots'] != {rollout['node']: 1}):
        failures.append('the rollout ran %d batches and rebooted %s (goal: one batch, %s once)'
                        % (rollout['batches'], rollout['reboots'], rollout['node']))
    for failure in failures:
        print('bench: GOAL MISSED: %s' % failure)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
