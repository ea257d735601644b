# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Check discovered RDMA ports against per-group expectations and build the fleet report.

Pure functions over plain data (the ``rdma_ports`` facts), used through the
collection's filter plugins and unit-tested directly.
"""

from __future__ import annotations

import json
import re

from ansible_collections.gpunet.rdma.plugins.plugin_utils._ledger import ACTIONS, check_envelope, check_ledger, plain
from ansible_collections.gpunet.rdma.plugins.plugin_utils._ledger import summary as ledger_summary
from ansible_collections.gpunet.rdma.plugins.module_utils.facts._rdma_inventory import is_virtual_function, roce_gid_index

EXPECTATION_KEYS = ('link_layer', 'min_active_ports', 'min_rate_gbps', 'devices')
LINK_LAYERS = ('InfiniBand', 'Ethernet')

PASS, FAIL, UNCHECKED, MISSING = 'pass', 'fail', 'unchecked', 'no facts'

# Why a port is not ACTIVE, by what the kernel says (state, physical state).
_DOWN_HINTS = {
    ('INIT', 'LinkUp'): 'link trained but the port is not configured: is a subnet manager running on this fabric?',
    ('ARMED', 'LinkUp'): 'port armed but not activated by the subnet manager',
    ('DOWN', 'Disabled'): 'port disabled: not cabled, or disabled on the switch or in firmware',
    ('DOWN', 'Polling'): 'no link partner: check the cable and the switch port',
    ('DOWN', 'Sleep'): 'port asleep: check the cable and the switch port',
    ('DOWN', 'LinkErrorRecovery'): 'link errors: check or replace the cable',
}


class ExpectationError(ValueError):
    """An expectation that cannot be checked (unknown key, wrong type)."""


def normalize_expectation(expectation, where='expectation'):
    """Validate an expectation dict and fill in defaults. ``None``/``{}`` means no expectation."""
    if not expectation:
        return None
    if not isinstance(expectation, dict):
        raise ExpectationError('%s must be a dict with keys %s, got %r'
                               % (where, ', '.join(EXPECTATION_KEYS), expectation))
    unknown = sorted(set(expectation) - set(EXPECTATION_KEYS))
    if unknown:
        raise ExpectationError('%s has unknown keys %s; known keys: %s'
                               % (where, ', '.join(unknown), ', '.join(EXPECTATION_KEYS)))
    result = {
        'link_layer': expectation.get('link_layer'),
        'min_active_ports': expectation.get('min_active_ports', 1),
        'min_rate_gbps': expectation.get('min_rate_gbps'),
        'devices': list(expectation.get('devices') or []),
    }
    if result['link_layer'] not in (None,) + LINK_LAYERS:
        raise ExpectationError('%s: link_layer must be one of %s, got %r'
                               % (where, ', '.join(LINK_LAYERS), result['link_layer']))
    if isinstance(result['min_active_ports'], bool) or not isinstance(result['min_active_ports'], int) \
            or result['min_active_ports'] < 0:
        raise ExpectationError('%s: min_active_ports must be a whole number >= 0, got %r'
                               % (where, result['min_active_ports']))
    rate = result['min_rate_gbps']
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate < 0):
        raise ExpectationError('%s: min_rate_gbps must be a number >= 0, got %r' % (where, rate))
    return result


def resolve_expectation(host_expectation, group_names, group_expectations):
    """Pick the expectation of a host: its own ``rdma_discovery_expected_ports`` first,
    then the first of its groups that ``group_expectations`` knows.

    Returns ``(group, expectation)``; ``group`` names the group the host is
    reported under (the matching group, else its first group, else ``ungrouped``).
    """
    group_names = list(group_names or [])
    group_expectations = group_expectations or {}
    matching = [g for g in group_names if g in group_expectations]
    group = matching[0] if matching else (group_names[0] if group_names else 'ungrouped')
    if host_expectation:
        return group, normalize_expectation(host_expectation, 'rdma_discovery_expected_ports')
    if matching:
        return group, normalize_expectation(group_expectations[group],
                                            'rdma_discovery_group_expectations[%s]' % group)
    return group, None


def describe_expectation(expectation):
    if expectation is None:
        return 'none'
    text = 'at least %d ACTIVE' % expectation['min_active_ports']
    if expectation['link_layer']:
        text += ' %s' % expectation['link_layer']
    text += ' port' if expectation['min_active_ports'] == 1 else ' ports'
    if expectation['min_rate_gbps'] is not None:
        text += ' >= %s Gb/s' % _fmt_number(expectation['min_rate_gbps'])
    if expectation['devices']:
        text += ' on %s' % ', '.join(expectation['devices'])
    return text


def _fmt_number(value):
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def _port_label(port):
    return '%s port %s' % (port['device'], port['port'])


def evaluate_port(port, expectation):
    """Return ``(verdict, note)`` of one port: ok, slow, down, ignored, or vf (an SR-IOV virtual function's port, which
    shares its PF's link and never counts towards an expectation)."""
    if expectation is None:
        return 'unchecked', ''
    if port.get('virtual_function'):
        return 'vf', 'SR-IOV VF of %s: not counted (expectations count physical functions)' % _pf_label(port)
    if expectation['link_layer'] and port.get('link_layer') != expectation['link_layer']:
        return 'ignored', 'link layer %s, expected %s' % (port.get('link_layer') or 'unknown',
                                                          expectation['link_layer'])
    if port.get('state') != 'ACTIVE':
        hint = _DOWN_HINTS.get((port.get('state'), port.get('physical_state')), 'port not ACTIVE')
        return 'down', hint
    minimum = expectation['min_rate_gbps']
    rate = port.get('rate_gbps')
    if minimum is not None and (rate is None or rate < minimum):
        return 'slow', 'rate %s Gb/s below the expected %s Gb/s: check cable, transceiver and switch port speed' % (
            'unknown' if rate is None else _fmt_number(rate), _fmt_number(minimum))
    return 'ok', ''


def _pf_label(port):
    return port.get('physical_function_device') or port.get('physical_function') or 'an unknown physical function'


def _natural(name):
    return [(0, int(part), '') if part.isdigit() else (1, 0, part) for part in re.split(r'([0-9]+)', str(name or ''))]


def _parent(vf, pfs):
    """The PF port a VF's port belongs to: the PF's port of the same number, else its first port; None if unknown."""
    mine = ([p for p in pfs if p.get('device') == vf.get('physical_function_device')]
            if vf.get('physical_function_device') else
            [p for p in pfs if vf.get('physical_function') and p.get('pci_address') == vf.get('physical_function')])
    mine = mine or [p for p in pfs if vf.get('device') in (p.get('vfs') or [])]
    return next((p for p in mine if p.get('port') == vf.get('port')), mine[0] if mine else None)


def link_ports(ports, devices=None):
    """Copies of the ports with their SR-IOV role, each VF's port right after its PF's port (whose ``vfs`` names it).

    The facts module gives every port ``virtual_function`` (a VF's port its PF, a PF's port its ``vfs``); for facts
    without them (cached from an older release) the host's ``rdma_devices`` tell. A VF whose PF port is not among the
    ports comes last.
    """
    by_device = dict((d.get('device'), d) for d in devices or [] if isinstance(d, dict))
    items = []
    for port in ports or []:
        item = dict(port)
        device = by_device.get(item.get('device'))
        if item.get('virtual_function') is None and device:
            item['virtual_function'] = is_virtual_function(device)
            if item['virtual_function']:
                item['physical_function'] = device.get('physical_function')
                item['physical_function_device'] = device.get('physical_function_device')
        items.append(item)
    pfs = [p for p in items if not p.get('virtual_function')]
    children = dict((id(p), []) for p in pfs)
    orphans = []
    for vf in [p for p in items if p.get('virtual_function')]:
        parent = _parent(vf, pfs)
        (children[id(parent)] if parent is not None else orphans).append(vf)
    ordered = []
    for pf in pfs:
        if pf.get('vfs') is not None or children[id(pf)]:
            pf['vfs'] = sorted(set(list(pf.get('vfs') or []) + [vf.get('device') for vf in children[id(pf)]]),
                               key=_natural)
        ordered.append(pf)
        ordered.extend(children[id(pf)])
    return ordered + orphans


def evaluate_host(ports, expectation, devices=None):
    """Check the ``rdma_ports`` of one host against a normalized expectation.

    Only ports of physical functions count: an SR-IOV VF's port (verdict ``vf``) is listed right after its PF's port
    and never satisfies ``min_active_ports``, ``min_rate_gbps`` or ``devices``. ``devices`` (the host's
    ``rdma_devices``) tells VFs apart for facts whose ports do not say.

    Returns ``{verdict, ok_ports, ports, problems}`` where every port carries
    its own ``verdict`` and ``note``.
    """
    checked = []
    for item in link_ports(ports, devices):
        verdict, note = evaluate_port(item, expectation)
        item['verdict'] = verdict
        item['note'] = note
        checked.append(item)
    ok = [p for p in checked if p['verdict'] == 'ok']
    problems = []
    if expectation is None:
        verdict = UNCHECKED
    else:
        if not checked:
            problems.append('no RDMA port found')
        if len(ok) < expectation['min_active_ports']:
            text = 'expected %s, found %d' % (describe_expectation(expectation), len(ok))
            vf_up = [p for p in checked if p['verdict'] == 'vf' and p.get('state') == 'ACTIVE']
            if vf_up:
                one = len(vf_up) == 1
                text += (' on physical functions (the %d ACTIVE SR-IOV VF port%s %s do%s not count: a VF shares its '
                         'PF\'s link)' % (len(vf_up), '' if one else 's', ', '.join(_port_label(p) for p in vf_up),
                                          'es' if one else ''))
            problems.append(text)
            for port in checked:
                if port['verdict'] in ('down', 'slow'):
                    problems.append('%s (%s): %s / %s: %s' % (_port_label(port), port.get('netdev') or 'no netdev',
                                                              port.get('state'), port.get('physical_state'),
                                                              port['note']))
        ok_devices = set(p['device'] for p in ok)
        vf_devices = dict((p['device'], p) for p in checked if p['verdict'] == 'vf')
        for device in expectation['devices']:
            if device in vf_devices:
                problems.append('%s is an SR-IOV VF of %s: expectations count physical functions; name %s in devices'
                                % (device, _pf_label(vf_devices[device]), _pf_label(vf_devices[device])))
            elif device not in ok_devices:
                problems.append('%s has no port that meets the expectation' % device)
        verdict = FAIL if problems else PASS
    return {'verdict': verdict, 'ok_ports': len(ok), 'ports': checked, 'problems': problems}


def firmware_result(module_results, host, apply, wanted=None, previous=None, targets=None):
    """Condense the per-PCI-function results of the mlxconfig module into one host record.

    ``module_results`` are the entries of a loop over devices (each with its ``item``) or the ``results`` of one
    call with ``devices``; ``targets`` ({device, pci_address} each) names the PCI functions of the latter.

    ``wanted`` names the parameters the host's group asks for; their Current and
    Next Boot values are kept. ``previous`` is the record from before an
    activation (firmware reset or reboot): its ``changes`` are kept, ``pending``
    comes from the new query.
    """
    previous_changes = dict((d['pci_address'], d['changes']) for d in (previous or {}).get('devices', []))
    by_address = dict((target.get('pci_address'), target) for target in (targets or []) if isinstance(target, dict))
    devices = []
    for result in module_results:
        item = result.get('item') or by_address.get(result.get('device')) or {}
        pci_address = item.get('pci_address') or result.get('device')
        config = result.get('config') or {}
        pending = list(result.get('pending') or [])
        names = sorted((set(wanted or []) & set(config)) | set(pending))
        devices.append({
            'device': item.get('device'),
            'pci_address': pci_address,
            'changes': previous_changes.get(pci_address, {}) if previous else result.get('changes') or {},
            'pending': pending,
            'values': dict((name, {'current': config[name].get('current'), 'next_boot': config[name].get('next_boot')})
                           for name in names if name in config),
        })
    pending = ['%s %s' % (d['device'] or d['pci_address'], name) for d in devices for name in d['pending']]
    return {
        'host': host,
        'apply': apply,
        'devices': devices,
        'changed': ['%s %s' % (d['device'] or d['pci_address'], name) for d in devices for name in sorted(d['changes'])],
        'pending': pending,
        'reboot_required': bool(pending),
        'activated': bool(previous and previous.get('reboot_required')),
    }


def runtime_state(record):
    """The container runtime record without the host name (state only)."""
    if not record:
        return None
    return dict((key, record.get(key)) for key in ('engine', 'memlock', 'runtimes', 'restart_pending'))


def firmware_state(record):
    """The part of a firmware record that describes state, not what this run did, so that
    a report written again after a run that changed nothing is byte-identical."""
    if not record:
        return None
    return {
        'apply': record['apply'],
        'pending': record['pending'],
        'reboot_required': record['reboot_required'],
        'devices': [dict((k, d[k]) for k in ('device', 'pci_address', 'pending', 'values')) for d in record['devices']],
        'inventory': [dict((k, d.get(k)) for k in FIRMWARE_INVENTORY_KEYS) for d in record.get('inventory') or []],
    }


# A card's firmware as the firmware stage found it (module mlxfwmanager): state only, what this run burned left out.
FIRMWARE_INVENTORY_KEYS = ('device', 'pci_address', 'device_type', 'part_number', 'psid', 'fw_version',
                           'running_version', 'pending_activation', 'expected_version', 'expected_psids', 'drift',
                           'state')


def firmware_inventory_rows(report):
    """One row per card of every host's firmware inventory: what it runs, what is on flash, what its group expects,
    and a status (the drift, an activation that waits, as expected, or no expectation)."""
    rows = []
    for host in report['hosts']:
        for card in ((host.get('firmware') or {}).get('inventory') or []):
            expected = [card.get('expected_version')] if card.get('expected_version') else []
            expected += ['PSID %s' % ' or '.join(card['expected_psids'])] if card.get('expected_psids') else []
            if card.get('state') == 'drift':
                status = 'drift: ' + '; '.join(line.split(': ', 1)[-1] for line in card.get('drift') or [])
            elif card.get('state') == 'pending':
                status = 'pending: %s runs after a firmware reset or reboot' % card.get('fw_version')
            elif card.get('state') == 'ok':
                status = 'as expected'
            else:
                status = 'no expectation'
            rows.append({'host': host['host'], 'device': card.get('device'), 'pci_address': card.get('pci_address'),
                         'part_number': card.get('part_number'), 'psid': card.get('psid'),
                         'running': card.get('running_version'), 'flash': card.get('fw_version'),
                         'expected': ', '.join(expected) or None, 'status': status, 'state': card.get('state')})
    return rows


def firmware_drift_hosts(hosts):
    """The hosts with a card whose firmware or PSID is not the one its group expects."""
    return sorted(set(h['host'] for h in hosts for card in ((h.get('firmware') or {}).get('inventory') or [])
                      if card.get('state') == 'drift'))


def driver_state(ofed=None, netns=None, gpudirect=None):
    """The driver stack of one host (state only): OFED, RDMA netns mode, GPUDirect; None when no stage ran."""
    if not (ofed or netns or gpudirect):
        return None
    state = {'ofed': None, 'netns': None, 'gpudirect': None}
    if ofed:
        state['ofed'] = dict((key, ofed.get(key)) for key in (
            'source', 'kernel', 'ofed_version', 'wanted_version', 'kernel_mismatch', 'restart_pending',
            'missing_modules', 'devices'))
    if netns:
        state['netns'] = dict((key, netns.get(key)) for key in ('wanted', 'live', 'persisted', 'reboot_pending'))
    if gpudirect:
        modules = gpudirect.get('modules') or {}
        state['gpudirect'] = {
            'mode': gpudirect.get('mode'),
            'load_skipped': gpudirect.get('load_skipped'),
            'persisted': gpudirect.get('persisted') or [],
            'loaded': sorted(name for name, module in modules.items() if module.get('loaded')),
            'memory_peer_version': gpudirect.get('memory_peer_version'),
            'gdrdrv_device': gpudirect.get('gdrdrv_device'),
            # who decided the mode (inventory, or the node's NVIDIA driver) and why a node has none
            'mode_from': gpudirect.get('mode_from'),
            'reason': gpudirect.get('reason'),
        }
    return state


_CLUSTER_NODE_KEYS = ('node', 'group', 'resource', 'mofed_wait', 'allocatable', 'ok', 'problem')
_CLUSTER_RESOURCE_KEYS = ('resource', 'group', 'hosts', 'if_names', 'link_types')
# Spiderpool's resources are per GPU-affine NIC, each with its macvlan network.
_PER_GPU_RESOURCE_KEYS = ('gpu', 'network', 'subnet')


def _resource_state(resource):
    state = dict((k, resource.get(k)) for k in _CLUSTER_RESOURCE_KEYS)
    state.update((k, resource[k]) for k in _PER_GPU_RESOURCE_KEYS if k in resource)
    return state


def left_alone(record):
    """What a cluster stage read and did not write because someone else owns it: the release or objects its ownership
    plan refused (``record['ownership']``), and what it left to a GitOps tool (``record['left_alone']``)."""
    ownership = record.get('ownership') if isinstance(record.get('ownership'), dict) else {}
    rows = []
    release = ownership.get('release') if isinstance(ownership.get('release'), dict) else {}
    if release.get('action') == 'refuse':
        rows.append({'object': 'helm release', 'action': 'not upgraded', 'reason': release.get('message')})
    for entry in ownership.get('objects') or []:
        if isinstance(entry, dict) and entry.get('action') == 'refuse':
            rows.append({'object': entry.get('object'), 'action': 'not applied', 'reason': entry.get('reason')})
    for entry in record.get('left_alone') or []:
        if isinstance(entry, dict):
            rows.append({'object': entry.get('object'), 'action': entry.get('action'), 'reason': entry.get('reason')})
    return rows


def cluster_state(record):
    """A cluster stage record (``network_operator_result``, ``spiderpool_result``) without what changes between runs."""
    if not record:
        return None
    return {
        'mode': record.get('mode'),
        'release': record.get('release'),
        'manifest_dir': record.get('manifest_dir'),
        'resources': [_resource_state(r) for r in record.get('resources') or []],
        'nodes': [dict((k, n.get(k)) for k in _CLUSTER_NODE_KEYS) for n in record.get('nodes') or []],
        'left_alone': left_alone(record),
    }


_VALIDATION_KEYS = ('kind', 'host', 'server', 'device', 'port', 'netdev', 'gid_index', 'average_gbps',
                    'line_rate_gbps', 'line_rate_pct', 'min_line_rate_pct', 'memlock', 'ok', 'problem',
                    'group', 'rail', 'rail_name', 'server_device', 'latency_tool', 'latency_usec', 'latency_p99_usec',
                    'max_latency_usec', 'latency_ok')
_NCCL_KEYS = ('group', 'job', 'state', 'ok', 'problem', 'transport', 'networks', 'ib_devices', 'link_layers',
              'nics_per_node', 'gdr', 'expect_gdr', 'hosts', 'ranks', 'socket_hosts', 'nccl_version', 'size_bytes',
              'busbw_gbs', 'peak_busbw_gbs', 'avg_busbw_gbs', 'line_rate_gbps', 'busbw_line_rate_pct',
              'min_busbw_pct')
_POD_CHECK_KEYS = ('group', 'pod', 'mode', 'ok', 'problem', 'interfaces', 'rules', 'routes', 'rdma', 'resources',
                   'injected')
_ALLOCATABLE_KEYS = ('node', 'group', 'resource', 'allocatable', 'ok', 'problem')


def validation_state(records, pod_results=None):
    """Every bandwidth test of the run (host records' ``tests`` and the pod-level results), or None."""
    tests = [test for record in records or [] for test in record.get('tests') or []] + list(pod_results or [])
    if not records and not pod_results:
        return None
    return [dict((k, test.get(k)) for k in _VALIDATION_KEYS) for test in tests]


def pod_validation_state(detail):
    """The controller's pod-level validation beyond the bandwidth tests: ``{nccl, pod_checks, allocatable}`` (each
    a list, the NCCL proof per group, the in-pod checks per pod, the hostdev allocatable per node), or None."""
    if not detail:
        return None
    return {'nccl': [dict((k, run.get(k)) for k in _NCCL_KEYS) for run in detail.get('nccl') or []],
            'pod_checks': [dict((k, check.get(k)) for k in _POD_CHECK_KEYS) for check in detail.get('pod_checks') or []],
            'allocatable': [dict((k, row.get(k)) for k in _ALLOCATABLE_KEYS) for row in detail.get('allocatable') or []]}


# The controller's ledger (cluster stages, pod-level validation) is reported under this name.
CONTROLLER = 'localhost'
# Stages whose detail the report also shows in a section of its own; any other stage shows in the Stages table.
HOST_SECTIONS = {'firmware': 'firmware', 'runtime': 'runtime', 'ofed': 'drivers', 'netns': 'drivers',
                 'gpudirect': 'drivers', 'validation': 'validation'}


def _detail(ledger, stage):
    entry = (ledger or {}).get(stage)
    return (entry or {}).get('detail') or None


def stage_rows(ledger):
    """The Stages table of one ledger: stage, status, changed, pending actions (allowed or waiting), problems."""
    rows = []
    for name, entry in sorted((ledger or {}).items()):
        entry = check_envelope(entry, name, detail=False)
        rows.append({'stage': name, 'status': entry['status'], 'changed': entry['changed'],
                     'pending': ['%s%s' % (item['action'], '' if item['allowed'] else
                                           ' (held by the blast-radius guard)' if 'held: ' in item['reason'] else
                                           ' (waits for permission)')
                                 for item in entry['pending']],
                     'problems': entry['problems']})
    return rows


def build_fleet_report(results, all_hosts, ledgers=None, fabrics=None):
    """Assemble the fleet report from the discovery results and the stage ledgers.

    ``results`` is a list of per-host dicts (``host``, ``group``, ``expectation``, ``source``, ``devices`` and
    what :func:`evaluate_host` returned); hosts of ``all_hosts`` without a result failed or were unreachable
    before discovery. ``ledgers`` maps a host (and ``localhost`` for the controller's stages) to its
    ``gpunet_rdma_ledger``: every stage is read from there, never from a role's own variables. ``fabrics`` is the
    ``groups`` part of the fleet's fabrics (generation and line rate per group), for the Groups section.
    """
    # One walk into plain data: what Ansible passes in templates itself on every access.
    ledgers, results, fabrics = plain(ledgers or {}), plain(results), plain(fabrics or {})
    # The ledgers this report reads, checked once: the sections below index into them without further checks.
    for host in [CONTROLLER] + [host for host in all_hosts if host != CONTROLLER]:
        check_ledger(ledgers.get(host), host)
    controller = ledgers.get(CONTROLLER) or {}
    by_host = dict((r['host'], dict(r)) for r in results)
    hosts = []
    for host in all_hosts:
        result = by_host.get(host)
        if result is None:
            result = {'host': host, 'group': None, 'verdict': MISSING, 'expectation': None, 'source': None,
                      'ok_ports': 0, 'ports': [], 'devices': [],
                      'problems': ['no facts: the host failed or was unreachable before discovery finished']}
        ledger = ledgers.get(host) or {}
        result['stages'] = stage_rows(ledger)
        result['firmware'] = firmware_state(_detail(ledger, 'firmware'))
        result['runtime'] = runtime_state(_detail(ledger, 'runtime'))
        result['drivers'] = driver_state(_detail(ledger, 'ofed'), _detail(ledger, 'netns'), _detail(ledger, 'gpudirect'))
        result['tuning'] = tuning_state(_detail(ledger, 'tuning'))
        result['sriov'] = sriov_state(_detail(ledger, 'sriov'))
        hosts.append(result)
    hosts.sort(key=lambda r: r['host'])
    host_ledgers = dict((h['host'], ledgers.get(h['host']) or {}) for h in hosts)
    if controller:
        host_ledgers[CONTROLLER] = controller
    stages = ledger_summary(host_ledgers)
    validation_records = [_detail(ledgers.get(h['host']), 'validation') for h in hosts]
    not_asked = sorted(record.get('host') for record in validation_records
                       if record and record.get('load_tests') is False and record.get('host'))
    validation = validation_state([r for r in validation_records if r],
                                  (_detail(controller, 'pod_validation') or {}).get('results'))
    pod_level = pod_validation_state(_detail(controller, 'pod_validation')) or {}
    cluster, spiderpool = _detail(controller, 'network_operator'), _detail(controller, 'spiderpool')
    counts = dict((v, len([h for h in hosts if h['verdict'] == v])) for v in (PASS, FAIL, UNCHECKED, MISSING))
    out_of_scope = [{'host': h['host'], 'group': h['group'], 'reason': scope['reason']}
                    for h, scope in ((h, _detail(ledgers.get(h['host']), 'scope')) for h in hosts)
                    if scope and not scope.get('in_scope', True)]
    failed = [h['host'] for h in hosts if h['verdict'] in (FAIL, MISSING)]
    return {
        'summary': {
            'hosts': len(hosts),
            'pass': counts[PASS],
            'fail': counts[FAIL],
            'unchecked': counts[UNCHECKED],
            'no_facts': counts[MISSING],
            # ports of physical functions; an SR-IOV VF's port shares its PF's link and is counted apart
            'ports': sum(len([p for p in h['ports'] if not p.get('virtual_function')]) for h in hosts),
            'active_ports': sum(len([p for p in h['ports'] if p.get('state') == 'ACTIVE'
                                     and not p.get('virtual_function')]) for h in hosts),
            'vf_ports': sum(len([p for p in h['ports'] if p.get('virtual_function')]) for h in hosts),
            'failed_hosts': failed,
            'stages': stages['stages'],
            'pending': stages['pending'],
            'failed_stages': stages['failed_stages'],
            'driver_kernel_mismatch_hosts': [h['host'] for h in hosts if _driver(h, 'ofed', 'kernel_mismatch')],
            'cluster_problem_nodes': [n['node'] for record in (cluster, spiderpool)
                                      for n in (cluster_state(record) or {}).get('nodes', []) if not n['ok']],
            'validation_failed': ['%s %s' % (t['host'], t['device'])
                                  for t in validation or [] if not t['ok']],
            'validation_failed_hosts': sorted(set(t['host'] for t in validation or [] if not t['ok'])),
            'nccl_failed': [run['group'] for run in pod_level.get('nccl') or [] if not run['ok']],
            'pod_checks_failed': [check['pod'] for check in pod_level.get('pod_checks') or [] if not check['ok']]
            + [row['node'] for row in pod_level.get('allocatable') or [] if not row['ok']],
            'firmware_drift_hosts': firmware_drift_hosts(hosts),
            'out_of_scope_hosts': [h['host'] for h in out_of_scope],
            'load_tests_not_asked_hosts': not_asked,
        },
        'out_of_scope': out_of_scope,
        'groups': _groups_state(fabrics, hosts),
        'hosts': hosts,
        'controller': stage_rows(controller),
        'cluster': cluster_state(cluster),
        'spiderpool': cluster_state(spiderpool),
        'validation': validation,
        'nccl': pod_level.get('nccl'),
        'pod_checks': pod_level.get('pod_checks'),
        'allocatable': pod_level.get('allocatable'),
    }


def _groups_state(fabrics, hosts):
    """Per GPU group: generation, link layer, line rate, RDMA resource, how pods get it, and its hosts' verdicts."""
    result = []
    for name, fabric in sorted((fabrics or {}).items()):
        members = [h for h in hosts if h['host'] in (fabric.get('hosts') or [])]
        result.append({'group': name, 'generation': fabric.get('generation'), 'link_layer': fabric.get('link_layer'),
                       'line_rate_gbps': fabric.get('line_rate_gbps'), 'rdma_resource': fabric.get('rdma_resource'),
                       'kubernetes': fabric.get('kubernetes'), 'hosts': len(members),
                       'pass': len([h for h in members if h['verdict'] == PASS])})
    return result


def _driver(host, stage, key):
    return ((host.get('drivers') or {}).get(stage) or {}).get(key)


def _cell(value):
    text = '' if value is None else str(value)
    return text.replace('|', '\\|').replace('\n', ' ') or '-'


def _rate_cell(port):
    rate = port.get('rate_gbps')
    return '-' if rate is None else '%s Gb/s' % _fmt_number(rate)


def gid_cell(port):
    """The GID index a RoCE test and NCCL use on the port (RoCE v2 of its IPv4 address), from its GID table."""
    if port.get('link_layer') != 'Ethernet':
        return '-'
    if not port.get('gids'):
        return 'unknown (no GID table from this source)'
    index = roce_gid_index(port)
    if index is None:
        return 'none: no IPv4 address on %s' % (port.get('netdev') or 'the port')
    entry = next(g for g in port['gids'] if g['index'] == index)
    return '%d (%s)' % (index, entry['ipv4'])


def port_verdict_text(port):
    """A port's verdict cell: the verdict, its note, and the SR-IOV VFs of a PF's port."""
    text = str(port.get('verdict') or 'unchecked') + (': %s' % port['note'] if port.get('note') else '')
    if port.get('vfs'):
        text += ' (SR-IOV VFs: %s)' % ', '.join(str(vf) for vf in port['vfs'])
    return text


def _netdev_cell(port):
    if not port.get('netdev'):
        return '-'
    if port.get('netdev_state'):
        return '%s (%s)' % (port['netdev'], port['netdev_state'])
    return port['netdev']


def _state_cell(port):
    if port.get('state') and port.get('physical_state'):
        return '%s / %s' % (port['state'], port['physical_state'])
    return port.get('state') or port.get('physical_state') or '-'


def tuning_state(record):
    """The tuning stage's record for the report: per RoCE port trust, PFC, ECN; per function Max Read Request."""
    if not record:
        return None
    ports = []
    for port in record.get('ports') or []:
        ecn = port.get('ecn') or {}
        ports.append({'interface': port.get('interface'), 'trust': port.get('trust'),
                      'pfc_priorities': list(port.get('pfc_priorities') or []), 'dcbx': port.get('dcbx'),
                      'ecn': (None if not ecn else 'firmware' if not ecn.get('supported')
                              else sorted(set(ecn.get('roce_np') or []) & set(ecn.get('roce_rp') or [])))})
    firmware = record.get('firmware') or {}
    return {'ports': ports,
            'pci': [{'device': f.get('device'), 'max_read_request': f.get('max_read_request'),
                     'max_payload': f.get('max_payload')} for f in record.get('pci') or []],
            'firmware_pending': list(firmware.get('pending') or []),
            'firmware_params': dict((record.get('wanted') or {}).get('firmware_params') or {}),
            'persisted': record.get('persisted')}


def _priorities_cell(priorities):
    return ','.join(str(p) for p in priorities) if priorities else 'none'


def _tuning_section(report):
    hosts = [h for h in report['hosts'] if h.get('tuning')]
    if not hosts:
        return []
    lines = ['', '## NIC tuning', '', '| host | port | DCBX | trust | PFC priorities | ECN priorities |',
             '| --- | --- | --- | --- | --- | --- |']
    for host in hosts:
        for port in host['tuning']['ports']:
            ecn = port['ecn']
            lines.append('| %s |' % ' | '.join(_cell(v) for v in (
                host['host'], port['interface'], port['dcbx'], port['trust'], _priorities_cell(port['pfc_priorities']),
                '-' if ecn is None else 'firmware mask (no driver ECN tree)' if ecn == 'firmware'
                else _priorities_cell(ecn))))
    lines += ['', '| host | PCI function | Max Read Request | Max Payload | firmware values | boot-time unit |',
              '| --- | --- | --- | --- | --- | --- |']
    for host in hosts:
        tuning = host['tuning']
        firmware = ', '.join('%s=%s' % item for item in sorted(tuning['firmware_params'].items())) or None
        if firmware and tuning['firmware_pending']:
            firmware += ' (pending a reboot: %s)' % ', '.join(tuning['firmware_pending'])
        for function in tuning['pci'] or [{'device': None, 'max_read_request': None, 'max_payload': None}]:
            lines.append('| %s |' % ' | '.join(_cell(v) for v in (
                host['host'], function['device'],
                '%s bytes' % function['max_read_request'] if function['max_read_request'] else None,
                '%s bytes' % function['max_payload'] if function['max_payload'] else None,
                firmware, tuning['persisted'])))
    return lines


_SRIOV_VF_KEYS = ('index', 'pci_address', 'driver', 'netdev', 'rdma_device')
# What the report says of a PF by what the stage did (a creation or change done shows as the state it reached).
_SRIOV_STATUS = {'pending': 'pending', 'waiting_for_firmware': 'waiting for firmware'}


def sriov_state(record):
    """The SR-IOV stage's record for the report (state only): per PF its counts, whether it is as wanted, its VFs."""
    if not record:
        return None
    pfs = []
    for pf in record.get('pfs') or []:
        status = _SRIOV_STATUS.get(pf.get('action'), 'as wanted')
        pfs.append({'pci_address': pf.get('pci_address'), 'name': pf.get('name'),
                    'sriov_totalvfs': pf.get('sriov_totalvfs'), 'sriov_numvfs': pf.get('sriov_numvfs'),
                    'wanted': pf.get('wanted'), 'status': status,
                    'reason': pf.get('reason') if status != 'as wanted' else None,
                    'vfs': [dict((k, vf.get(k)) for k in _SRIOV_VF_KEYS) for vf in pf.get('vfs') or []]})
    return {'unit': record.get('unit'), 'drivers_autoprobe': record.get('drivers_autoprobe'), 'pfs': pfs}


def _sriov_section(report):
    hosts = [h for h in report['hosts'] if h.get('sriov')]
    if not hosts:
        return []
    lines = ['', '## SR-IOV', '', '| host | PF | VFs | wanted | sriov_totalvfs | boot unit | status |',
             '| --- | --- | --- | --- | --- | --- | --- |']
    vf_rows = []
    for host in hosts:
        for pf in host['sriov']['pfs']:
            lines.append('| %s |' % ' | '.join(_cell(v) for v in (
                host['host'], pf['name'], pf['sriov_numvfs'], pf['wanted'], pf['sriov_totalvfs'],
                host['sriov']['unit'], pf['status'] + (': %s' % pf['reason'] if pf['reason'] else ''))))
            for vf in pf['vfs']:
                vf_rows.append('| %s |' % ' | '.join(_cell(v) for v in (
                    host['host'], pf['pci_address'], 'virtfn%s' % vf['index'], vf['pci_address'], vf['netdev'],
                    vf['rdma_device'], vf['driver'] or 'none (unbound)')))
    if vf_rows:
        lines += ['', '| host | PF | VF | PCI address | netdev | RDMA device | driver |',
                  '| --- | --- | --- | --- | --- | --- | --- |'] + vf_rows
    return lines


def _runtime_section(report):
    hosts = [h for h in report['hosts'] if h.get('runtime')]
    if not hosts:
        return []
    lines = ['', '## Container runtime', '', '| host | engine | memlock | runtimes | status |', '| --- | --- | --- | --- | --- |']
    for host in hosts:
        runtime = host['runtime']
        lines.append('| %s |' % ' | '.join(_cell(v) for v in (
            host['host'], runtime['engine'], runtime['memlock'], ', '.join(runtime['runtimes'] or []) or None,
            'restart pending' if runtime['restart_pending'] else 'as wanted')))
    return lines


def _firmware_section(report):
    rows = []
    for host in report['hosts']:
        firmware = host.get('firmware')
        for device in (firmware or {}).get('devices', []):
            for name, values in sorted(device['values'].items()):
                if name in device['pending']:
                    status = 'pending: active after a firmware reset or reboot'
                else:
                    status = 'active'
                rows.append('| %s |' % ' | '.join(_cell(v) for v in (
                    host['host'], device['device'], device['pci_address'], name, values['current'],
                    values['next_boot'], status)))
    if not any(h.get('firmware') for h in report['hosts']):
        return []
    lines = ['', '## Firmware', '']
    if not rows:
        return (lines + ['No firmware parameter is wanted or pending on the chosen devices.']
                + _firmware_inventory(report))
    return lines + ['| host | device | PCI address | parameter | current | next boot | status |',
                    '| --- | --- | --- | --- | --- | --- | --- |'] + rows + _firmware_inventory(report)


def _firmware_inventory(report):
    rows = firmware_inventory_rows(report)
    if not rows:
        return []
    keys = ('host', 'device', 'pci_address', 'part_number', 'psid', 'running', 'flash', 'expected', 'status')
    return ['', '### Firmware inventory', '',
            '| host | device | PCI address | part number | PSID | running | on flash | expected | status |',
            '| --- | --- | --- | --- | --- | --- | --- | --- | --- |'] + [
        '| %s |' % ' | '.join(_cell(row[key]) for key in keys) for row in rows]


# The driver cells of both renderings (Markdown here, HTML in _report_html): None when the stage did not run.
def ofed_text(ofed):
    if not ofed:
        return None
    if ofed.get('source') == 'inbox':
        text = 'inbox rdma-core'
    else:
        text = '%s %s' % (ofed.get('source'), ofed.get('ofed_version') or 'not installed')
        if ofed.get('wanted_version') and ofed.get('wanted_version') != ofed.get('ofed_version'):
            text += ' (wanted %s)' % ofed['wanted_version']
    if ofed.get('missing_modules'):
        text += '; missing modules: %s' % ', '.join(ofed['missing_modules'])
    return text


def netns_text(netns):
    if not netns:
        return None
    return '%s / %s' % (netns.get('live') or 'unknown', netns.get('persisted') or 'default (shared)')


def gpudirect_text(gpudirect):
    if not gpudirect:
        return None
    if gpudirect.get('mode') == 'gpu_operator':
        return 'GPU Operator'
    if gpudirect.get('mode') == 'none':
        return 'none (%s)' % (gpudirect.get('reason') or 'not used')
    if gpudirect.get('load_skipped'):
        return 'persisted %s (load skipped)' % ', '.join(gpudirect.get('persisted') or [])
    text = 'loaded %s' % (', '.join(gpudirect.get('loaded') or []) or 'none')
    if gpudirect.get('memory_peer_version'):
        text += ', nv_mem %s' % gpudirect['memory_peer_version']
    return text


def driver_problems(drivers):
    """What waits or is wrong in a host's driver stack; empty when it is as wanted."""
    ofed, netns = drivers.get('ofed') or {}, drivers.get('netns') or {}
    status = []
    if ofed.get('kernel_mismatch'):
        status.append('OFED has no modules for this kernel')
    if ofed.get('restart_pending'):
        status.append('driver restart or reboot pending')
    if netns.get('reboot_pending'):
        status.append('netns %s after reboot' % netns.get('wanted'))
    return status


def _drivers_section(report):
    hosts = [h for h in report['hosts'] if h.get('drivers')]
    if not hosts:
        return []
    lines = ['', '## Drivers', '',
             '| host | kernel | OFED | RDMA netns (live / persisted) | GPUDirect | status |',
             '| --- | --- | --- | --- | --- | --- |']
    for host in hosts:
        drivers = host['drivers']
        lines.append('| %s |' % ' | '.join(_cell(v) for v in (
            host['host'], (drivers.get('ofed') or {}).get('kernel'), ofed_text(drivers.get('ofed')),
            netns_text(drivers.get('netns')), gpudirect_text(drivers.get('gpudirect')),
            '; '.join(driver_problems(drivers)) or 'as wanted')))
    return lines


def _where(stage):
    return ('rendered to %s' % stage['manifest_dir']) if stage['mode'] == 'render' else 'applied'


def _node_rows(nodes):
    if not nodes:
        return []
    lines = ['', '| node | group | resource | mofed.wait | allocatable | status |', '| --- | --- | --- | --- | --- | --- |']
    for node in nodes:
        lines.append('| %s |' % ' | '.join(_cell(v) for v in (
            node['node'], node['group'], node['resource'], node['mofed_wait'], node['allocatable'],
            'ok' if node['ok'] else node['problem'])))
    return lines


def _cluster_section(report):
    cluster, spiderpool = report.get('cluster'), report.get('spiderpool')
    if not cluster and not spiderpool:
        return []
    lines = ['', '## Kubernetes']
    if cluster:
        lines += ['', 'NVIDIA Network Operator %s: helm values and objects %s.' % (cluster['release'], _where(cluster)),
                  '', '| resource | group | hosts | interfaces | link types |', '| --- | --- | --- | --- | --- |']
        for resource in cluster['resources']:
            lines.append('| %s |' % ' | '.join(_cell(v) for v in (
                resource['resource'], resource['group'], len(resource['hosts'] or []),
                ', '.join(resource['if_names'] or []), ', '.join(resource['link_types'] or []))))
        lines += _node_rows(cluster['nodes'])
    if spiderpool:
        lines += ['', 'Spiderpool %s: helm values and macvlan networks %s.' % (spiderpool['release'], _where(spiderpool)),
                  '', '| resource | group | GPU | hosts | interface | network | subnet |',
                  '| --- | --- | --- | --- | --- | --- | --- |']
        for resource in spiderpool['resources']:
            lines.append('| %s |' % ' | '.join(_cell(v) for v in (
                resource['resource'], resource['group'], resource.get('gpu'), len(resource['hosts'] or []),
                ', '.join(resource['if_names'] or []), resource.get('network'), resource.get('subnet'))))
        lines += _node_rows(spiderpool['nodes'])
    rows = [(name, row) for name, stage in (('Network Operator', cluster), ('Spiderpool', spiderpool)) if stage
            for row in stage.get('left_alone') or []]
    if rows:
        lines += ['', '### Left alone', '',
                  'Read, not written: another field manager, a release installed by hand or a GitOps tool owns these; '
                  'the reason names what takes them over.', '',
                  '| stage | object | what the run did not do | reason |', '| --- | --- | --- | --- |']
        lines += ['| %s |' % ' | '.join(_cell(v) for v in (name, row['object'], row['action'], row['reason']))
                  for name, row in rows]
    return lines


def _test_status(test):
    if test['ok']:
        return 'ok'
    return test['problem'] or 'failed'


def latency_cell(test):
    """A pair's latency: ``1.42 usec`` (typical, else average), with its threshold when it has one."""
    if test.get('latency_usec') is None:
        return None
    text = '%g usec' % test['latency_usec']
    if test.get('max_latency_usec') is not None:
        text += ' (max %g)' % test['max_latency_usec']
    return text


def rail_text(test):
    """A pair's rail by its identity: ``rail 2 (mlx5_2)``; None for a test that is not on a rail (listed pairs)."""
    if test.get('rail') in (None, ''):
        return None
    return 'rail %s (%s)' % (test['rail'], test['rail_name']) if test.get('rail_name') else 'rail %s' % test['rail']


def test_label(test):
    """The test column of a validation record: its kind, for a pair the server and the rail."""
    if test.get('kind') != 'pair':
        return test.get('kind')
    rail = rail_text(test)
    return 'pair from %s%s' % (test.get('server'), ', %s' % rail if rail else '')


def pair_parts(tests):
    """The text of one pair-matrix cell, one part per test: ``[rail 0 (mlx5_0): ]94.71 Gb/s, 94.7 %[, 1.42 usec]``
    (a test off the rails by its device)."""
    parts = []
    for test in tests:
        pct = test.get('line_rate_pct')
        label = rail_text(test) if test.get('rail_name') else test.get('device')
        text = '%s%s Gb/s, %s' % (('%s: ' % label) if len(tests) > 1 else '',
                                  _fmt_number(test.get('average_gbps')) if test.get('average_gbps') is not None
                                  else '-', '-' if pct is None else '%.1f %%' % pct)
        if test.get('latency_usec') is not None:
            text += ', %g usec' % test['latency_usec']
        parts.append(text)
    return parts


def pair_matrix(tests):
    """``(servers, clients, {(server, client): [tests]})`` of the cross-node pair tests."""
    pairs = [t for t in tests or [] if t.get('kind') == 'pair']
    cells = {}
    for test in pairs:
        cells.setdefault((str(test.get('server')), str(test.get('host'))), []).append(test)
    return (sorted(set(server for server, _c in cells)), sorted(set(client for _s, client in cells)), cells)


def nccl_cells(run):
    """One NCCL run's cells: group, state, transport, RDMA devices, GPUDirect RDMA, nodes, NCCL, bus bandwidth,
    share of the line rate, status."""
    devices = ', '.join(run.get('ib_devices') or []) or None
    if devices and run.get('nics_per_node'):
        devices = '%s (%d per node)' % (devices, run['nics_per_node'])
    gdr = run.get('gdr')
    if gdr and run.get('expect_gdr'):
        gdr += ' (expected)'
    busbw = None
    if run.get('busbw_gbs') is not None:
        busbw = '%g GB/s at %s' % (run['busbw_gbs'], _size(run.get('size_bytes')))
    share = None
    if run.get('busbw_line_rate_pct') is not None:
        share = '%.1f %% of %s x %s Gb/s' % (run['busbw_line_rate_pct'], run.get('nics_per_node'),
                                             _fmt_number(run.get('line_rate_gbps')))
        if run.get('min_busbw_pct') is not None:
            share += ' (min %g %%)' % run['min_busbw_pct']
    return (run.get('group'), run.get('state'), run.get('transport'), devices, gdr,
            ', '.join(run.get('hosts') or []) or None, run.get('nccl_version'), busbw, share,
            'ok' if run.get('ok') else (run.get('problem') or 'failed'))


def _size(size):
    if size is None:
        return '-'
    for unit, factor in (('GiB', 2 ** 30), ('MiB', 2 ** 20), ('KiB', 2 ** 10)):
        if size >= factor and size % factor == 0:
            return '%d %s' % (size // factor, unit)
    return '%d B' % size


def pod_check_cells(check):
    """One pod's in-pod checks: pod, group, mode, interfaces, policy routes, RDMA devices, resources, status."""
    interfaces = ', '.join('%s %s' % (i.get('name'), '/'.join(i.get('addresses') or []) or '-')
                           for i in check.get('interfaces') or []) or None
    rdma = ', '.join('%s/%s %s %s' % (r.get('device'), r.get('port'), r.get('state') or '-', r.get('netdev') or '-')
                     for r in check.get('rdma') or []) or None
    resources = ', '.join('%s=%s' % item for item in sorted((check.get('resources') or {}).items())) or None
    if resources and check.get('injected'):
        resources += ' (injected)'
    routes = '%s rules, tables %s' % (check.get('rules') or 0, ', '.join(check.get('routes') or []) or '-')
    return (check.get('pod'), check.get('group'), check.get('mode'), interfaces, routes, rdma, resources,
            'ok' if check.get('ok') else (check.get('problem') or 'failed'))


def allocatable_cells(row):
    return (row.get('node'), row.get('group'), row.get('resource'), row.get('allocatable'),
            'ok' if row.get('ok') else (row.get('problem') or 'failed'))


LOAD_TESTS_NOT_ASKED = (
    'Bandwidth and latency tests not asked for on %s: they load the links, so a run leaves them out unless '
    '`gpunet_rdma_load_tests: true`; the ports are judged from the facts (Hosts, Ports).')


def _validation_section(report):
    tests = report.get('validation')
    if tests is None:
        return []
    lines = ['', '## Validation', '']
    not_asked = (report.get('summary') or {}).get('load_tests_not_asked_hosts') or []
    if not_asked:
        lines += [LOAD_TESTS_NOT_ASKED % ', '.join(not_asked), '']
    if not tests:
        return lines + ['No bandwidth test ran (check mode, not asked for, or no ACTIVE port of the expected link '
                        'layer).']
    lines += ['| host | test | device | port | netdev | Gb/s | line rate | % of line rate | latency | memlock '
              '| status |', '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |']
    for test in tests:
        lines.append('| %s |' % ' | '.join(_cell(v) for v in (
            test['host'], test_label(test), test['device'], test['port'], test['netdev'], test['average_gbps'],
            ('%g Gb/s' % test['line_rate_gbps']) if test['line_rate_gbps'] else None,
            ('%.1f %%' % test['line_rate_pct']) if test['line_rate_pct'] is not None else None,
            latency_cell(test), test['memlock'], _test_status(test))))
    return lines


def _pair_matrix_section(report):
    servers, clients, cells = pair_matrix(report.get('validation'))
    if not cells:
        return []
    lines = ['', '## Pair matrix', '', 'Rows: the host running the perftest server; columns: the client host. Cell: '
             'average Gb/s, share of the line rate and typical latency.', '',
             '| %s |' % ' | '.join(['server \\ client'] + clients), '| %s |' % ' | '.join(['---'] * (len(clients) + 1))]
    for server in servers:
        lines.append('| %s |' % ' | '.join([_cell(server)] + [
            _cell('; '.join(pair_parts(cells[(server, client)]))) if (server, client) in cells else '-'
            for client in clients]))
    return lines


def _nccl_section(report):
    runs = report.get('nccl')
    if not runs:
        return []
    lines = ['', '## NCCL', '', '| group | job state | transport | RDMA devices | GPUDirect RDMA | nodes | NCCL '
             '| bus bandwidth | share of line rate | status |', '|%s' % (' --- |' * 10)]
    for run in runs:
        lines.append('| %s |' % ' | '.join(_cell(v) for v in nccl_cells(run)))
    return lines


def _pod_checks_section(report):
    checks, rows = report.get('pod_checks'), report.get('allocatable')
    if not checks and not rows:
        return []
    lines = ['', '## In-pod checks']
    if checks:
        lines += ['', '| pod | group | mode | interfaces | policy routes | RDMA devices | resources | status |',
                  '| --- | --- | --- | --- | --- | --- | --- | --- |']
        lines += ['| %s |' % ' | '.join(_cell(v) for v in pod_check_cells(check)) for check in checks]
    if rows:
        lines += ['', '| node | group | hostdev resource | allocatable | status |', '| --- | --- | --- | --- | --- |']
        lines += ['| %s |' % ' | '.join(_cell(v) for v in allocatable_cells(row)) for row in rows]
    return lines


def _stages_cell(stages):
    if not stages:
        return '-'
    unusual = ['%s %s' % (row['stage'], row['status']) for row in stages if row['status'] not in ('ok', 'changed')]
    changed = [row['stage'] for row in stages if row['status'] == 'changed']
    text = '; '.join(unusual) or '%d as wanted' % len(stages)
    if changed:
        text += ' (changed: %s)' % ', '.join(changed)
    return text


def _out_of_scope_section(report):
    """Hosts the host stages left alone (no GPU group, or no RDMA device), each with the reason."""
    hosts = report.get('out_of_scope') or []
    if not hosts:
        return []
    lines = ['', '## Out of scope', '',
             'Read and reported, never changed: the host stages and the host-level validation act only on hosts of a '
             'GPU group (a `gpunet_rdma_fabric`) with an RDMA device.', '',
             '| host | group | reason |', '| --- | --- | --- |']
    lines += ['| %s |' % ' | '.join(_cell(v) for v in (h['host'], h['group'], h['reason'])) for h in hosts]
    return lines


def _stages_section(report):
    rows = [(host['host'], row) for host in report['hosts'] for row in host.get('stages') or []]
    rows += [('controller', row) for row in report.get('controller') or []]
    if not rows:
        return []
    lines = ['', '## Stages', '', '| host | stage | status | changed | pending | problems |',
             '| --- | --- | --- | --- | --- | --- |']
    for host, row in rows:
        lines.append('| %s |' % ' | '.join(_cell(v) for v in (
            host, row['stage'], row['status'], 'yes' if row['changed'] else 'no', ', '.join(row['pending']) or None,
            '; '.join(row['problems']) or None)))
    return lines


def _groups_section(report):
    groups = report.get('groups') or []
    if not groups:
        return []
    lines = ['', '## Groups', '', '| group | generation | link layer | line rate | RDMA resource | pods get RDMA by | '
             'hosts | pass |', '| --- | --- | --- | --- | --- | --- | --- | --- |']
    for group in groups:
        lines.append('| %s |' % ' | '.join(_cell(v) for v in (
            group['group'], group['generation'], group['link_layer'],
            ('%s Gb/s' % _fmt_number(group['line_rate_gbps'])) if group['line_rate_gbps'] else None,
            group['rdma_resource'], group['kubernetes'], group['hosts'], group['pass'])))
    return lines


def render_markdown(report):
    """Render the fleet report as Markdown (stable output: same report, same bytes)."""
    report = plain(report)
    summary = report['summary']
    lines = [
        '# RDMA fleet report',
        '',
        '%d hosts: %d pass, %d fail, %d unchecked, %d without facts. %d ports, %d ACTIVE.%s' % (
            summary['hosts'], summary['pass'], summary['fail'], summary['unchecked'], summary['no_facts'],
            summary['ports'], summary['active_ports'],
            ' %d SR-IOV VF ports besides (never counted: a VF shares its PF\'s link).' % summary['vf_ports']
            if summary.get('vf_ports') else ''),
    ]
    if summary.get('failed_hosts'):
        lines.append('Failed hosts: %s.' % ', '.join(summary['failed_hosts']))
    actions = dict(ACTIONS)
    pending = [('%s pending' % actions[action], hosts) for action, hosts in sorted(
        (summary.get('pending') or {}).items(), key=lambda item: [name for name, _t in ACTIONS].index(item[0]))]
    pending += [('OFED needs a rebuild for the running kernel', summary.get('driver_kernel_mismatch_hosts')),
                ('stage failed', summary.get('failed_stages')),
                ('RDMA resource not reported by Kubernetes', summary.get('cluster_problem_nodes')),
                ('bandwidth below the line rate threshold', summary.get('validation_failed')),
                ("firmware other than the group's", summary.get('firmware_drift_hosts')),
                ('NCCL not on RDMA or below its bus bandwidth', summary.get('nccl_failed')),
                ('in-pod checks failed', summary.get('pod_checks_failed'))]
    lines += ['Pending: %s on %s.' % (what, ', '.join(hosts)) for what, hosts in pending if hosts]
    lines += _groups_section(report)
    lines += [
        '',
        '## Hosts',
        '',
        '| host | group | expectation | ports meeting it | source | stages | verdict |',
        '| --- | --- | --- | --- | --- | --- | --- |',
    ]
    for host in report['hosts']:
        lines.append('| %s |' % ' | '.join(_cell(v) for v in (
            host['host'], host['group'], describe_expectation(host['expectation']),
            host['ok_ports'] if host['expectation'] else '-', host['source'], _stages_cell(host.get('stages')),
            host['verdict'].upper())))
    lines += [
        '',
        '## Ports',
        '',
        '| host | group | device | port | netdev | state | link layer | rate | RoCE v2 GID (IPv4) | verdict |',
        '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ]
    for host in report['hosts']:
        for port in host['ports']:
            verdict = port_verdict_text(port)
            lines.append('| %s |' % ' | '.join(_cell(v) for v in (
                host['host'], host['group'], port['device'], port['port'], _netdev_cell(port), _state_cell(port),
                port.get('link_layer'), _rate_cell(port), gid_cell(port), verdict)))
    lines += _out_of_scope_section(report)
    lines += _stages_section(report)
    lines += _firmware_section(report)
    lines += _drivers_section(report)
    lines += _sriov_section(report)
    lines += _runtime_section(report)
    lines += _tuning_section(report)
    lines += _cluster_section(report)
    lines += _validation_section(report)
    lines += _pair_matrix_section(report)
    lines += _nccl_section(report)
    lines += _pod_checks_section(report)
    failing = [h for h in report['hosts'] if h['problems']]
    lines += ['', '## Hosts that miss expectations', '']
    if not failing:
        lines.append('None.')
    for host in failing:
        lines.append('- **%s** (%s):' % (host['host'], host['group'] or 'no group'))
        lines.extend('  - %s' % problem for problem in host['problems'])
    return '\n'.join(lines) + '\n'


def render_json(report):
    """Render the fleet report as JSON with sorted keys (stable output)."""
    return json.dumps(report, indent=2, sort_keys=True) + '\n'
