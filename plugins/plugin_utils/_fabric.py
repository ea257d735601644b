# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fabric of a GPU group: one variable, ``gpunet_rdma_fabric``, in the group's group_vars.

Everything that differs between GPU generations lives there - link layer, line rate, the ports discovery
expects, the RDMA resource pods request, how pods get RDMA, and the group's stage settings - so that a new
generation is one inventory group and one group_vars file, and no role default or playbook names a group::

    gpunet_rdma_fabric:
      name: ib_a100                 # the inventory group (checked: the host must be in it)
      generation: A100              # a label for the report
      link_layer: InfiniBand        # InfiniBand | Ethernet
      line_rate_gbps: 200           # per port
      expected_ports: {min_active_ports: 1}   # link layer and min_rate_gbps default to the two above
      rdma_resource: rdma/rdma_a100
      kubernetes: shared_device_plugin        # shared_device_plugin | spiderpool | sriov | none
      platform: bare_metal                    # bare_metal | vmware_pvrdma
      firmware: {params: {LINK_TYPE_P1: IB}}  # stage settings: see each role's documentation
      netns: {mode: shared}

Free of Ansible imports.
"""

from __future__ import annotations

from collections.abc import Mapping

LINK_LAYERS = ('InfiniBand', 'Ethernet')
KUBERNETES_NETWORKS = ('shared_device_plugin', 'spiderpool', 'sriov', 'none')
# Where the group's nodes run: on the hardware, or as VMware VMs with a paravirtual RDMA adapter (PVRDMA).
PLATFORMS = ('bare_metal', 'vmware_pvrdma')
# Stage settings: fabric key -> the role that reads it (documentation of each role lists the keys).
STAGE_KEYS = {
    'firmware': 'nic_firmware',
    'ofed': 'ofed',
    'netns': 'rdma_netns',
    'gpudirect': 'gpudirect',
    'runtime': 'containerd_memlock',
    'validation': 'rdma_validate',
    'spiderpool': 'spiderpool',
    'pvrdma': 'pvrdma',
    'sriov': 'sriov_vfs',
    'tuning': 'nic_tuning',
}
TOP_KEYS = ('name', 'generation', 'link_layer', 'line_rate_gbps', 'expected_ports', 'rdma_resource', 'kubernetes',
            'platform')
EXPECTED_PORT_KEYS = ('link_layer', 'min_active_ports', 'min_rate_gbps', 'devices')


class FabricError(ValueError):
    """A fabric that cannot be used; the message names the group and the key."""


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def normalize(fabric, where='gpunet_rdma_fabric'):
    """A validated copy of one fabric with the defaults filled in."""
    if not isinstance(fabric, Mapping):
        raise FabricError('%s must be a dict (see the documentation of gpunet_rdma_fabric), got %s'
                          % (where, type(fabric).__name__))
    unknown = sorted(set(fabric) - set(TOP_KEYS) - set(STAGE_KEYS))
    if unknown:
        raise FabricError('%s has unknown keys %s; known keys: %s' % (
            where, ', '.join(unknown), ', '.join(TOP_KEYS + tuple(sorted(STAGE_KEYS)))))
    name = fabric.get('name')
    if not isinstance(name, str) or not name:
        raise FabricError('%s.name must name the inventory group the fabric belongs to (e.g. ib_a100)' % where)
    where = '%s (group %s)' % (where, name)
    link_layer = fabric.get('link_layer')
    if link_layer not in LINK_LAYERS:
        raise FabricError('%s: link_layer must be one of %s, got %r' % (where, ', '.join(LINK_LAYERS), link_layer))
    rate = fabric.get('line_rate_gbps')
    if not _number(rate) or rate <= 0:
        raise FabricError('%s: line_rate_gbps must be a number of Gb/s per port (e.g. 200), got %r' % (where, rate))
    expected = fabric.get('expected_ports') or {}
    if not isinstance(expected, Mapping):
        raise FabricError('%s: expected_ports must be a dict with keys %s' % (where, ', '.join(EXPECTED_PORT_KEYS)))
    unknown = sorted(set(expected) - set(EXPECTED_PORT_KEYS))
    if unknown:
        raise FabricError('%s: expected_ports has unknown keys %s; known keys: %s'
                          % (where, ', '.join(unknown), ', '.join(EXPECTED_PORT_KEYS)))
    expectation = {
        'link_layer': expected.get('link_layer', link_layer),
        'min_active_ports': expected.get('min_active_ports', 1),
        'min_rate_gbps': expected.get('min_rate_gbps', rate),
        'devices': list(expected.get('devices') or []),
    }
    if expectation['link_layer'] not in LINK_LAYERS + (None,):
        raise FabricError('%s: expected_ports.link_layer must be one of %s or null'
                          % (where, ', '.join(LINK_LAYERS)))
    minimum = expectation['min_active_ports']
    if not isinstance(minimum, int) or isinstance(minimum, bool) or minimum < 0:
        raise FabricError('%s: expected_ports.min_active_ports must be a whole number >= 0, got %r' % (where, minimum))
    min_rate = expectation['min_rate_gbps']
    if min_rate is not None and (not _number(min_rate) or min_rate < 0):
        raise FabricError('%s: expected_ports.min_rate_gbps must be a number >= 0 or null' % where)
    resource = fabric.get('rdma_resource')
    if resource is not None and (not isinstance(resource, str) or '/' not in resource):
        raise FabricError('%s: rdma_resource must be an extended resource name such as rdma/rdma_a100, got %r'
                          % (where, resource))
    network = fabric.get('kubernetes', 'shared_device_plugin' if resource else 'none')
    if network not in KUBERNETES_NETWORKS:
        raise FabricError('%s: kubernetes must be one of %s, got %r' % (where, ', '.join(KUBERNETES_NETWORKS), network))
    if network == 'shared_device_plugin' and not resource:
        raise FabricError('%s: kubernetes: shared_device_plugin needs rdma_resource (e.g. rdma/rdma_%s)'
                          % (where, name.split('_')[-1]))
    platform = fabric.get('platform', 'bare_metal')
    if platform not in PLATFORMS:
        raise FabricError('%s: platform must be one of %s, got %r' % (where, ', '.join(PLATFORMS), platform))
    result = {'name': name, 'generation': fabric.get('generation') or name, 'link_layer': link_layer,
              'line_rate_gbps': rate, 'expected_ports': expectation, 'rdma_resource': resource,
              'kubernetes': network, 'platform': platform}
    for key in STAGE_KEYS:
        section = fabric.get(key) or {}
        if not isinstance(section, Mapping):
            raise FabricError('%s: %s must be a dict of %s settings, got %s'
                              % (where, key, STAGE_KEYS[key], type(section).__name__))
        result[key] = dict(section)
    _check_rails(result['validation'].get('rails'), where)
    for key in ('min_line_rate_pct', 'nccl_min_busbw_pct'):
        value = result['validation'].get(key)
        if value is not None and (not _number(value) or not 0 < value <= 100):
            raise FabricError('%s: validation.%s must be a percentage above 0 and at most 100 (90 means 90 %% of the '
                              'line rate), got %r' % (where, key, value))
    return result


def _check_rails(rails, where):
    """``validation.rails``: one entry per rail, a device name, a list of names (the first one a node has) or
    ``{device, port}``. Rails are identified by these device identities, never by position among ACTIVE ports."""
    if rails is None:
        return
    if not isinstance(rails, (list, tuple)):
        raise FabricError('%s: validation.rails must be a list, one entry per rail (a device name, a list of names or '
                          '{device, port}), got %s' % (where, type(rails).__name__))
    for index, entry in enumerate(rails):
        if isinstance(entry, str) and entry:
            continue
        if isinstance(entry, (list, tuple)) and entry and all(isinstance(n, str) and n for n in entry):
            continue
        if isinstance(entry, Mapping) and isinstance(entry.get('device'), str) and entry['device'] \
                and not set(entry) - {'device', 'port'} and (entry.get('port') is None or (
                    isinstance(entry['port'], int) and not isinstance(entry['port'], bool) and entry['port'] >= 1)):
            continue
        raise FabricError('%s: validation.rails[%d] must be a device name (mlx5_0), a list of names (the first one a '
                          'node has) or {device, port} with port >= 1, got %r' % (where, index, entry))


def fleet(hosts, hostvars_of):
    """Every host's fabric: ``{groups: {name: fabric + hosts}, hosts: {host: name or None}}``.

    ``hostvars_of(host)`` returns a host's variables. Hosts without a fabric are listed with None (the report
    shows them unchecked). A host that is not in the group its fabric names, or two hosts of one group with
    different fabrics (a host_vars override of part of it), are refused naming both.
    """
    groups, by_host = {}, {}
    for host in hosts or []:
        variables = hostvars_of(host) or {}
        raw = variables.get('gpunet_rdma_fabric')
        if not raw:
            by_host[host] = None
            continue
        fabric = normalize(raw, 'gpunet_rdma_fabric of %s' % host)
        group_names = list(variables.get('group_names') or [])
        if group_names and fabric['name'] not in group_names:
            raise FabricError('%s: gpunet_rdma_fabric.name is %s, but the host is in %s; set name to the group whose '
                              'group_vars hold this fabric' % (host, fabric['name'], ', '.join(group_names)))
        known = groups.get(fabric['name'])
        if known is None:
            groups[fabric['name']] = dict(fabric, hosts=[host])
        else:
            mine = dict(known)
            mine.pop('hosts')
            if mine != fabric:
                raise FabricError('%s and %s are both in group %s but have different gpunet_rdma_fabric values (a '
                                  'host_vars override?); a fabric is per group'
                                  % (known['hosts'][0], host, fabric['name']))
            known['hosts'].append(host)
        by_host[host] = fabric['name']
    return {'groups': groups, 'hosts': by_host}
