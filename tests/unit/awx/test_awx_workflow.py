# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The AWX jobs and the workflow, run the way AWX runs them: through ansible-runner (AWX's engine), over simulated
GPU nodes (sysfs fixture trees, local connection), without a controller.

What AWX does around each job is done here as AWX does it (awx/main/models/jobs.py, inventory.py, workflow.py,
tasks/callback.py): the inventory of a job slice holds every n-th host of the name-sorted inventory (host i in slice
i % n); the job's artifacts are the set_stats data of its playbook_on_stats event; the artifacts of a sliced job's
slices are merged key by key in the order the slices finish; a workflow node gets its ancestors' artifacts as extra
vars, a later node's replacing an earlier one's key by key. The workflow's job templates run without AWX's fact
cache (awx/configure.yml), so every job starts with no facts.
"""

from __future__ import annotations

import json
import os
import sys
import threading

import ansible_runner
import pytest
import yaml

import sysfs_fixture

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
HARDWARE = os.path.join(REPO, 'lab', 'hardware')
# host -> (GPU group, hardware profile); v100-3 misses its group's expectation (one port down)
FLEET = {'a100-1': ('ib_a100', 'a100'), 'a100-2': ('ib_a100', 'a100'), 'v100-1': ('ib_v100', 'v100'),
         'v100-2': ('ib_v100', 'v100'), 'v100-3': ('ib_v100', 'v100-degraded')}
FABRICS = {
    'ib_v100': {'name': 'ib_v100', 'generation': 'V100', 'link_layer': 'InfiniBand', 'line_rate_gbps': 100,
                'expected_ports': {'min_active_ports': 2}, 'rdma_resource': 'rdma/rdma_v100',
                'gpudirect': {'mode': 'none'}},
    'ib_a100': {'name': 'ib_a100', 'generation': 'A100', 'link_layer': 'InfiniBand', 'line_rate_gbps': 200,
                'expected_ports': {'min_active_ports': 1}, 'rdma_resource': 'rdma/rdma_a100',
                'gpudirect': {'mode': 'none'}},
}
SLICES = 2
# The host stage these tests run in the sliced node: GPUDirect of groups without it (mode none) records its stage in
# every node's ledger and touches nothing outside the test's directory. On a real fleet the node runs every host
# stage (awx/configure.yml skips only the later stages).
HOST_STAGE_TAGS = 'gpudirect'


class Awx:
    """How AWX runs one job of the workflow's job templates, over the simulated fleet."""

    def __init__(self, root):
        self.root = root
        self.report_dir = os.path.join(root, 'persistent', 'reports')
        for host, (_group, profile) in FLEET.items():
            sysfs_fixture.build(sysfs_fixture.load_profile(os.path.join(HARDWARE, profile + '.yml')),
                                os.path.join(root, host, 'sys'))
            os.makedirs(os.path.join(root, host, 'modules'))

    def inventory(self, hosts):
        """The inventory AWX hands a job (a slice's holds only the slice's hosts), with the groups' vars."""
        children = {}
        for group, fabric in FABRICS.items():
            members = dict((h, {'rdma_discovery_sysfs_root': os.path.join(self.root, h, 'sys'),
                                'gpudirect_modules_root': os.path.join(self.root, h, 'modules'),
                                'gpudirect_modules_load_path': os.path.join(self.root, h, 'gpunet-gpudirect.conf')})
                           for h in hosts if FLEET[h][0] == group)
            if members:
                children[group] = {'hosts': members, 'vars': {'gpunet_rdma_fabric': fabric}}
        return {'all': {'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                                 'rdma_discovery_source': 'sysfs', 'rdma_discovery_driver_facts': False,
                                 'rdma_discovery_management_path': False},
                        'children': children}}

    def run(self, ident, playbook, hosts, extravars=None, tags=None, skip_tags=None):
        """One job: returns (runner, artifacts)."""
        private = os.path.join(self.root, 'jobs', ident)
        os.makedirs(os.path.join(private, 'inventory'))
        with open(os.path.join(private, 'inventory', 'hosts.yml'), 'w') as handle:
            yaml.safe_dump(self.inventory(hosts), handle)
        runner = ansible_runner.run(
            private_data_dir=private, ident=ident, playbook=os.path.join(REPO, playbook), project_dir=REPO,
            inventory=os.path.join(private, 'inventory', 'hosts.yml'), quiet=True,
            # the job template's extra vars (awx/configure.yml): the report goes to the persistent directory
            extravars=dict(extravars or {}, rdma_discovery_report_dir=self.report_dir),
            tags=tags, skip_tags=skip_tags, fact_cache_type='',
            envvars={'ANSIBLE_COLLECTIONS_PATH': os.path.join(REPO, '.build', 'collections'),
                     'ANSIBLE_CONFIG': os.path.join(REPO, 'ansible.cfg'),
                     'PATH': os.path.dirname(sys.executable) + os.pathsep + os.environ['PATH']})
        stats = [e for e in runner.events if e['event'] == 'playbook_on_stats']
        return runner, (stats[-1]['event_data'].get('artifact_data') or {}) if stats else {}


def slices(hosts, count):
    """AWX's slices: host i of the name-sorted inventory goes to slice i % count."""
    ordered = sorted(hosts)
    return [ordered[number::count] for number in range(count)]


def failed_hosts(runner):
    return sorted(set(e['event_data']['host'] for e in runner.events if e['event'] == 'runner_on_failed'))


def run_concurrently(jobs):
    """Jobs at the same time (AWX starts a sliced job's slices together); results in the order they finished."""
    finished, lock = [], threading.Lock()

    def one(job):
        result = job()
        with lock:
            finished.append(result)
    threads = [threading.Thread(target=one, args=(job,)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return finished


@pytest.fixture(scope='module')
def workflow(tmp_path_factory):
    """The workflow's discover, sliced host-stage, a later and the report node; beside them the discover job
    template's job."""
    awx = Awx(str(tmp_path_factory.mktemp('awx')))
    standalone = Awx(str(tmp_path_factory.mktemp('awx-discover')))
    results = {}

    def discover_template():
        results['discover.yml'] = standalone.run('discover-template', 'playbooks/discover.yml', list(FLEET))

    def discover_node():
        results['phase_discover'] = awx.run('phase-discover', 'playbooks/phase_discover.yml', list(FLEET))
    run_concurrently([discover_template, discover_node])

    # The sliced host-stage node: each slice a job of its own, all at once; the sliced job's artifacts are the
    # slices' artifacts merged key by key (WorkflowJob.get_effective_artifacts).
    done = run_concurrently([
        (lambda number=number, part=part: (part, awx.run('host-stages-slice-%d' % number, 'playbooks/phase_stages.yml',
                                                         part, extravars=results['phase_discover'][1],
                                                         tags=HOST_STAGE_TAGS, skip_tags='report,rollout')))
        for number, part in enumerate(slices(FLEET, SLICES))])
    ancestors = dict(results['phase_discover'][1])
    for _part, (_runner, artifacts) in done:
        ancestors.update(artifacts)
    results['slices'], results['after_slices'] = done, dict(ancestors)

    # A later node over the whole inventory changes a100-1 (an earlier run's GPUDirect persistence file is there to
    # remove): its ledger must win over the slice's in the report.
    with open(os.path.join(awx.root, 'a100-1', 'gpunet-gpudirect.conf'), 'w') as handle:
        handle.write('nvidia_peermem\n')
    results['later'] = awx.run('later', 'playbooks/phase_stages.yml', list(FLEET), extravars=ancestors,
                               tags=HOST_STAGE_TAGS, skip_tags='report,rollout')
    ancestors.update(results['later'][1])
    results['report'] = awx.run('report', 'playbooks/phase_stages.yml', list(FLEET), extravars=ancestors, tags='report')
    return results


def test_the_discover_job_template_fails_the_degraded_node_and_hands_the_summary_to_awx(workflow):
    runner, artifacts = workflow['discover.yml']
    assert runner.status == 'failed' and runner.rc == 2
    assert failed_hosts(runner) == ['v100-3']
    assert set(runner.stats['ok']) == set(FLEET)
    summary = artifacts['gpunet_rdma_report']
    assert (summary['hosts'], summary['pass'], summary['fail'], summary['failed_hosts']) == (5, 4, 1, ['v100-3'])
    # the report files are where the job template points them, outside the job's (throwaway) directory
    assert os.path.dirname(summary['report_json']).endswith(os.path.join('awx-discover0', 'persistent', 'reports'))
    with open(summary['report_json']) as handle:
        assert sorted(h['host'] for h in json.load(handle)['hosts']) == sorted(FLEET)


def test_the_discover_node_reads_every_node_and_writes_no_report(workflow):
    runner, artifacts = workflow['phase_discover']
    assert runner.status == 'successful', runner.stdout.read()[-3000:]
    assert artifacts == {}
    read = [e['event_data']['host'] for e in runner.events
            if e['event'] == 'runner_on_ok' and e['event_data']['task'].startswith('Read RDMA devices')]
    assert sorted(read) == sorted(FLEET)
    assert not [e for e in runner.events if e['event_data'].get('task', '').startswith('Write the Markdown')]


def test_each_slice_runs_only_its_hosts_and_hands_their_ledgers_on_under_a_key_of_its_own(workflow):
    partitions = slices(FLEET, SLICES)
    assert partitions == [['a100-1', 'v100-1', 'v100-3'], ['a100-2', 'v100-2']]
    keys = set()
    for part, (runner, artifacts) in workflow['slices']:
        assert runner.status == 'successful', runner.stdout.read()[-3000:]
        assert set(runner.stats['ok']) == set(part) | {'localhost'}
        (key, artifact), = [(k, v) for k, v in artifacts.items() if k.startswith('gpunet_rdma_workflow_ledgers_')]
        keys.add(key)
        assert (artifact['sequence'], artifact['hosts'], sorted(artifact['ledgers'])) == (1, part, part)
        for host in part:
            assert artifact['ledgers'][host]['gpudirect']['status'] == 'skipped'
        # the report is the report node's: no slice writes one
        assert 'gpunet_rdma_report' not in artifacts
    # the keys differ, so AWX's merge keeps every slice's
    assert len(keys) == SLICES and keys <= set(workflow['after_slices'])


def test_a_later_node_starts_from_the_slices_ledgers_and_hands_on_the_whole_fleet(workflow):
    runner, artifacts = workflow['later']
    assert runner.status == 'successful', runner.stdout.read()[-3000:]
    (artifact,) = [v for k, v in artifacts.items() if k.startswith('gpunet_rdma_workflow_ledgers_')]
    assert (artifact['sequence'], artifact['hosts']) == (2, sorted(FLEET))
    changed = dict((h, ledger['gpudirect']['changed']) for h, ledger in artifact['ledgers'].items())
    assert changed == {'a100-1': True, 'a100-2': False, 'v100-1': False, 'v100-2': False, 'v100-3': False}


def test_the_report_node_aggregates_the_handed_ledgers_and_covers_every_host(workflow):
    runner, artifacts = workflow['report']
    # the degraded node fails by itself after the report, as in site.yml
    assert failed_hosts(runner) == ['v100-3']
    assert artifacts['gpunet_rdma_workflow_coverage'] == {'jobs': 2, 'hosts': sorted(FLEET), 'missing': []}
    summary = artifacts['gpunet_rdma_report']
    assert (summary['hosts'], summary['pass'], summary['failed_hosts']) == (5, 4, ['v100-3'])
    with open(summary['report_json']) as handle:
        report = json.load(handle)
    stages = dict((h['host'], dict((s['stage'], s) for s in h['stages'])) for h in report['hosts'])
    assert sorted(stages) == sorted(FLEET)
    for host, by_stage in stages.items():
        assert by_stage['gpudirect']['status'] == 'skipped', host
        # the later node's ledger, not the slice's
        assert by_stage['gpudirect']['changed'] == (host == 'a100-1'), host
    # nothing of the hosts' stages ran again in the report node
    assert not [e for e in runner.events if 'GPUDirect' in e['event_data'].get('task', '')]
