# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA Network Operator objects built from discovered RDMA facts.

Pure functions: the RDMA shared device plugin configuration from each GPU group's ports,
release gates for NicClusterPolicy fields, toleration merging and JSON-patch paths.
"""

from __future__ import annotations

import json
import re

# The RDMA shared device plugin's link type names for the kernel's link layers.
LINK_TYPES = {'InfiniBand': 'infiniband', 'Ethernet': 'ether'}
RESOURCE_NAME = re.compile(r'^[a-zA-Z0-9_]+$')
# NicClusterPolicy fields and the operator release that introduced them.
FIELD_RELEASES = {
    'tolerations': (23, 7, 0),
    'deploymentTolerations': (25, 7, 0),
    'deploymentNodeAffinity': (25, 7, 0),
    'global': (26, 4, 0),
}


class NetworkOperatorError(Exception):
    """Input the operator would reject or silently misread."""


def parse_release(release):
    """``v25.1.0`` / ``25.1.0`` / ``26.4.1`` -> ``(25, 1, 0)``."""
    match = re.match(r'^v?(\d+)\.(\d+)(?:\.(\d+))?', str(release or '').strip())
    if not match:
        raise NetworkOperatorError('network operator release %r is not a version such as v25.1.0' % (release,))
    return tuple(int(part or 0) for part in match.groups())


def release_gate(spec, release):
    """Refuse NicClusterPolicy fields the chosen operator release does not have."""
    have = parse_release(release)
    problems = []
    for field, since in sorted(FIELD_RELEASES.items()):
        if field in (spec or {}) and have < since:
            problems.append('spec.%s needs Network Operator %s or later; the chosen release is %s'
                            % (field, '.'.join(str(p) for p in since), release))
    if problems:
        raise NetworkOperatorError('; '.join(problems))


def group_selectors(ports, link_types=None):
    """The selectors of one resource from the group's ports: netdevs of ACTIVE ports and their link types."""
    wanted = set(link_types or LINK_TYPES)
    chosen = [p for p in ports or [] if p.get('state') == 'ACTIVE' and p.get('netdev')
              and p.get('link_layer') in wanted]
    if not chosen:
        return None
    return {
        'ifNames': sorted(set(p['netdev'] for p in chosen)),
        'linkTypes': sorted(set(LINK_TYPES[p['link_layer']] for p in chosen)),
    }


def check_resource(entry):
    """The shared device plugin's own rules for one configList entry."""
    name = entry.get('resourceName')
    if not name or not RESOURCE_NAME.match(str(name)):
        raise NetworkOperatorError('resourceName %r must match ^[a-zA-Z0-9_]+$ (e.g. rdma_v100)' % (name,))
    if 'selectors' in entry and 'devices' in entry:
        raise NetworkOperatorError('resource %s has both selectors and devices; the plugin accepts only one' % name)
    if 'selectors' not in entry and 'devices' not in entry:
        raise NetworkOperatorError('resource %s selects no device: no ACTIVE port with a netdev was discovered '
                                   'in its group' % name)
    hca_max = entry.get('rdmaHcaMax')
    if not isinstance(hca_max, int) or isinstance(hca_max, bool) or not 0 < hca_max <= 10000:
        raise NetworkOperatorError('resource %s: rdmaHcaMax must be a positive whole number, not %r' % (name, hca_max))


def shared_device_plugin_config(groups, periodic_update_interval=None):
    """configList from ``[{resource_name, rdma_hca_max, ports, link_types?}]``; returns ``(config dict, JSON string)``."""
    config_list = []
    seen = set()
    for group in groups:
        entry = {'resourceName': group.get('resource_name'), 'rdmaHcaMax': group.get('rdma_hca_max', 63)}
        selectors = group_selectors(group.get('ports'), group.get('link_types'))
        if selectors:
            entry['selectors'] = selectors
        check_resource(entry)
        if entry['resourceName'] in seen:
            raise NetworkOperatorError('resource %s is defined twice' % entry['resourceName'])
        seen.add(entry['resourceName'])
        config_list.append(entry)
    config = {'configList': config_list}
    if periodic_update_interval is not None:
        config['periodicUpdateInterval'] = periodic_update_interval
    return config, json.dumps(config, sort_keys=True)


def _toleration_key(toleration):
    return tuple(toleration.get(k) for k in ('key', 'operator', 'value', 'effect', 'tolerationSeconds'))


def merge_tolerations(existing, wanted):
    """``existing`` followed by every ``wanted`` toleration it does not have yet (order kept, no duplicates)."""
    merged = list(existing or [])
    keys = set(_toleration_key(t) for t in merged)
    for toleration in wanted or []:
        if toleration.get('operator', 'Equal') not in ('Equal', 'Exists'):
            raise NetworkOperatorError('toleration %r: operator must be Equal or Exists' % (toleration,))
        if toleration.get('operator') == 'Exists' and toleration.get('value'):
            raise NetworkOperatorError('toleration %r: operator Exists takes no value' % (toleration,))
        if _toleration_key(toleration) not in keys:
            merged.append(dict(toleration))
            keys.add(_toleration_key(toleration))
    return merged


def json_pointer(*parts):
    """RFC 6901 path: ``~`` -> ``~0``, ``/`` -> ``~1`` (``rdma/rdma_v100`` -> ``rdma~1rdma_v100``)."""
    return ''.join('/' + str(part).replace('~', '~0').replace('/', '~1') for part in parts)


def stale_resource_patch(node_status, names):
    """JSON patch removing ``names`` from a node's status capacity and allocatable (only those present)."""
    operations = []
    for section in ('capacity', 'allocatable'):
        present = (node_status or {}).get(section) or {}
        for name in names:
            if name in present:
                operations.append({'op': 'remove', 'path': json_pointer('status', section, name)})
    return operations
