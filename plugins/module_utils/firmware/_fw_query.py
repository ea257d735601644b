# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Read ConnectX firmware inventories (``mlxfwmanager --query``, ``flint q``, ``mstflint q``) and judge drift.

Two layouts, both printed by NVIDIA's tools and by their open-source twins in mstflint:

``mlxfwmanager -d DEV --query`` (and ``mlxup``, built from the same source, mlxfwupdate/mlxfwmanager.cpp), one block
per device, the version rows sorted by component name; ``FW (Running)`` appears when the firmware on flash is not
the one running (burned, not yet activated by a firmware reset or a reboot)::

    Device #1:
    ----------

      Device Type:      ConnectX6DX
      Part Number:      MCX623106AC-CDA_Ax
      Description:      ConnectX-6 Dx EN adapter card; 100GbE; Dual-port QSFP56; PCIe 4.0 x16; Crypto and Secure Boot
      PSID:             MT_0000000436
      PCI Device Name:  03:00.0
      Base GUID:        1c34da030073458a
      Versions:         Current        Available
         FW             22.45.3608     N/A
         FW (Running)   22.43.1020     N/A
         UEFI Virtio blk   22.4.0010      N/A

      Status:           No matching image found

``flint -d DEV q`` / ``mstflint -d DEV q`` (and ``-i IMAGE q`` for an image file), one ``Key: value`` per line,
``FW Version(Running)`` under the same condition (flint/subcommands.cpp)::

    Image type:            FS4
    FW Version:            20.35.1012
    FW Version(Running):   20.34.1002
    Rom Info:              type=UEFI version=14.28.15 cpu=AMD64,AARCH64
                           type=PXE version=3.6.804 cpu=AMD64
    Description:           UID                GuidsNumber
    Base GUID:             043f720300f04c46        8
    PSID:                  MT_0000000228

Anything else (the XML layout, another tool's output, an error line) is refused with FwQueryError naming the line.
Free of Ansible imports.
"""

from __future__ import annotations

import re

from ansible_collections.gpunet.rdma.plugins.module_utils._tool_runner import ToolRunner, fixed, option

# mlxfwmanager (NVIDIA MFT): -d DEVICE [-i IMAGE] --query, and the burn -d DEVICE -i IMAGE -u -f -y.
MLXFWMANAGER = ToolRunner('mlxfwmanager', {
    'device': option('-d'),
    'image': lambda image: ['-i', str(image)] if image else [],
    'query': fixed('--query'),
    'update': fixed('-u', '-f', '-y'),
})
# flint (MFT) and mstflint: -d DEVICE q, -i IMAGE q (what an image file holds) and -d DEVICE -i IMAGE -y burn.
FLINT = ToolRunner('flint', {
    'device': option('-d'),
    'image': option('-i'),
    'query': fixed('q'),
    'burn': fixed('-y', 'burn'),
})

# printDeviceInfoQuery() of mlxfwupdate/mlxfwmanager.cpp: every field a device block holds.
MLXFWMANAGER_FIELDS = {
    'Device Type': 'device_type', 'Part Number': 'part_number', 'Description': 'description', 'PSID': 'psid',
    'PCI Device Name': 'pci_device_name', 'Base GUID': 'base_guid', 'Base MAC': 'base_mac',
    'System GUID': 'system_guid', 'Node GUID': 'node_guid', 'Port1 MAC': 'port1_mac', 'Port1 GUID': 'port1_guid',
    'Port2 MAC': 'port2_mac', 'Port2 GUID': 'port2_guid', 'Status': 'status',
}
# Statuses of a device block (checkAndDisplayDeviceQuery1Dev()); the image matches the device's PSID in the first
# four, "No matching image found" is also what a query without an image prints.
STATUS_IMAGE_MATCHES = ('Update required', 'Up to date', 'Forced update required', 'Skipped (same version)',
                        'N/A (Mixed versions)')
STATUS_NO_IMAGE = 'No matching image found'
STATUSES = STATUS_IMAGE_MATCHES + (STATUS_NO_IMAGE, 'Multiple image files found', 'Device has unknown expansion rom',
                                   'Image has unknown expansion rom', 'Failed to open device')
# The query fields of flint/mstflint whose values the inventory keeps; other fields (dates, security attributes,
# ROM information) are read and kept as printed.
FLINT_FIELDS = {
    'Image type': 'image_type', 'FW Version': 'fw_version', 'FW Version(Running)': 'running_version',
    'Product Version': 'product_version', 'Part Number': 'part_number', 'PSID': 'psid', 'Orig PSID': 'orig_psid',
    'Base GUID': 'base_guid', 'Base MAC': 'base_mac', 'Device ID': 'device_id',
}
# The lines that open the UID table of FS3/FS4 images and the GUID table of FS2 images; not a card description.
_UID_TABLE_RE = re.compile(r'^(?:UID\s+GuidsNumber|Node\s+Port1\s+Port2|Port1\s+Port2)')
_DEVICE_HEADER_RE = re.compile(r'^Device #(?P<index>\d+):$')
_FIELD_RE = re.compile(r'^(?P<key>[A-Za-z][A-Za-z0-9 ()/_.-]*?):(?:\s+(?P<value>.*?))?\s*$')
_FOUND_RE = re.compile(r'^Found (?P<count>\d+) device\(s\) requiring firmware update')
_VERSION_RE = re.compile(r'^\d+(?:\.\d+)+$')
_UNAVAILABLE = ('', 'N/A', '--')


class FwQueryError(ValueError):
    """Output that is not a layout of the firmware tools; ``line`` holds the offending line."""

    def __init__(self, message, line=None):
        super().__init__(message)
        self.line = line


def _value(text):
    text = (text or '').strip()
    return None if text in _UNAVAILABLE else text


def _tool_error(line):
    return FwQueryError('the tool reported an error: %s' % line.strip(), line)


def _version_row(line):
    """``FW (Running)   22.43.1020     N/A`` -> ('FW (Running)', '22.43.1020', None); None for another line."""
    words = line.split()
    if len(words) < 3 or ':' in line:
        return None
    return ' '.join(words[:-2]), _value(words[-2]), _value(words[-1])


def _finish_device(device, raw):
    if device is None:
        return
    if not device.get('psid'):
        raise FwQueryError('device #%d has no PSID line' % device['index'], raw)
    versions = device['versions']
    if 'FW' not in versions:
        raise FwQueryError('device #%d has no FW row under "Versions:"' % device['index'], raw)
    device['fw_version'] = versions['FW']['current']
    running = versions.get('FW (Running)')
    device['running_version'] = running['current'] if running and running['current'] else device['fw_version']
    device['pending_activation'] = not same_version(device['running_version'], device['fw_version'])
    device['available_version'] = versions['FW']['available']
    device['part_number'] = _value(device.get('part_number'))


def parse_mlxfwmanager(text):
    """Parse ``mlxfwmanager``/``mlxup`` query or update output.

    Returns ``{'devices': [...], 'found_updates': int or None, 'restart_needed': bool, 'release_notes': [...],
    'trailer': [...], 'warnings': [...]}``; each device holds the fields of its block under the keys of
    MLXFWMANAGER_FIELDS (None when absent or N/A), ``versions`` ({component: {current, available}}), ``fw_version``
    (on flash), ``running_version``, ``pending_activation``, ``available_version`` (the image's, None without one)
    and ``index``.
    """
    if not isinstance(text, str):
        raise FwQueryError('the tool output is not text')
    result = {'devices': [], 'found_updates': None, 'restart_needed': False, 'release_notes': [], 'trailer': [],
              'warnings': []}
    device, mode, last = None, 'head', None
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            if mode == 'versions':
                mode = 'device'
            continue
        last = raw
        if mode == 'trailer':
            result['trailer'].append(line)
            found = _FOUND_RE.match(line)
            if found:
                result['found_updates'] = int(found.group('count'))
            if line.startswith('Restart needed'):
                result['restart_needed'] = True
            continue
        if line.startswith('-E-'):
            raise _tool_error(raw)
        if line.startswith('-W-'):
            result['warnings'].append(line)
            continue
        if line.startswith('<'):
            raise FwQueryError('this is the XML layout (--query-format XML); run the query without --query-format',
                               raw)
        header = _DEVICE_HEADER_RE.match(line)
        if header:
            _finish_device(device, raw)
            device = {'index': int(header.group('index')), 'versions': {}}
            device.update(dict.fromkeys(MLXFWMANAGER_FIELDS.values()))
            result['devices'].append(device)
            mode = 'underline'
            continue
        if mode == 'head':
            if line.startswith('Querying Mellanox devices firmware'):
                continue
            raise FwQueryError('not the output of mlxfwmanager (no "Device #1:" block before this line)', raw)
        if mode == 'underline':
            if set(line) != {'-'}:
                raise FwQueryError('device #%d: expected the "----------" underline' % device['index'], raw)
            mode = 'device'
            continue
        if set(line) == {'-'}:
            # "---------" closes the device blocks (the summary and the update lines follow); a dashed line under
            # "Release notes for the available Firmware:" belongs to that heading.
            if mode == 'notes' and not result['release_notes']:
                continue
            _finish_device(device, raw)
            device, mode = None, 'trailer'
            continue
        if line.startswith('Release notes for the available Firmware'):
            mode = 'notes'
            continue
        if mode == 'notes':
            result['release_notes'].append(line)
            continue
        field = _FIELD_RE.match(line)
        if field and field.group('key') in MLXFWMANAGER_FIELDS:
            key = MLXFWMANAGER_FIELDS[field.group('key')]
            if device[key] is not None:
                raise FwQueryError('device #%d: %s is printed twice' % (device['index'], field.group('key')), raw)
            device[key] = (field.group('value') or '').strip()
            mode = 'device'
            continue
        if field and field.group('key') == 'Versions':
            columns = (field.group('value') or '').split()
            if columns != ['Current', 'Available']:
                raise FwQueryError('device #%d: unknown version columns %s (known: Current Available)'
                                   % (device['index'], ' '.join(columns) or '(none)'), raw)
            mode = 'versions'
            continue
        if mode == 'versions':
            row = _version_row(line)
            if row:
                name, current, available = row
                if name in device['versions']:
                    raise FwQueryError('device #%d: version row %s is printed twice' % (device['index'], name), raw)
                device['versions'][name] = {'current': current, 'available': available}
                continue
        raise FwQueryError('device #%d: unknown line (known fields: %s, Versions)'
                           % (device['index'], ', '.join(sorted(MLXFWMANAGER_FIELDS))), raw)
    if mode in ('underline',):
        raise FwQueryError('device #%d ends before its fields' % device['index'], last)
    _finish_device(device, last)
    if not result['devices']:
        raise FwQueryError('not the output of mlxfwmanager: no "Device #" block',
                           (text.strip().splitlines() or [''])[0])
    for entry in result['devices']:
        if entry['status'] is not None and entry['status'] not in STATUSES:
            raise FwQueryError('device #%d: unknown status %r (known: %s)'
                               % (entry['index'], entry['status'], ', '.join(STATUSES)))
    return result


def parse_flint_query(text):
    """Parse ``flint``/``mstflint`` ``q`` output of a device or an image file.

    Returns a dict with the keys of FLINT_FIELDS (None when absent or N/A), ``description`` (the card's, from
    ``q full``; None otherwise), ``running_version`` (``fw_version`` when the tool printed no running version),
    ``pending_activation``, ``rom_info`` (lines), ``fields`` (every field as printed) and ``warnings``.
    """
    if not isinstance(text, str):
        raise FwQueryError('the tool output is not text')
    result = dict.fromkeys(FLINT_FIELDS.values())
    result.update({'description': None, 'rom_info': [], 'fields': {}, 'warnings': []})
    key = None
    seen_first = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith('-E-'):
            raise _tool_error(raw)
        if line.startswith('-W-'):
            result['warnings'].append(line)
            continue
        if raw[:1].isspace() and key == 'Rom Info':
            result['rom_info'].append(line)
            continue
        field = _FIELD_RE.match(line)
        if not field or raw[:1].isspace():
            raise FwQueryError('not a "Key: value" line of flint/mstflint query', raw)
        key, value = field.group('key'), (field.group('value') or '').strip()
        if not seen_first:
            if key != 'Image type':
                raise FwQueryError('not the output of flint/mstflint query (it starts with "Image type:")', raw)
            seen_first = True
        if key == 'Description':
            if not _UID_TABLE_RE.match(value):
                result['description'] = value or None
            continue
        if key == 'Rom Info':
            result['rom_info'].append(value)
        if key in ('Base GUID', 'Base MAC'):
            value = value.split()[0] if value else ''
        result['fields'][key] = value
        if key in FLINT_FIELDS:
            result[FLINT_FIELDS[key]] = _value(value)
    if not seen_first:
        raise FwQueryError('empty output: no "Image type:" line', (text.strip().splitlines() or [''])[0])
    if not result['psid']:
        raise FwQueryError('no PSID line: the firmware does not tell which board it is for (not a Mellanox image?)')
    if not result['fw_version'] and not result['running_version']:
        raise FwQueryError('no "FW Version:" line')
    if not result['fw_version']:
        # Old tools on a device without a readable flash version print the running one only.
        result['fw_version'] = result['running_version']
    if not result['running_version']:
        result['running_version'] = result['fw_version']
    result['pending_activation'] = not same_version(result['running_version'], result['fw_version'])
    return result


# ------------------------------------------------------------------ versions and drift

def version_key(version):
    """``16.35.2000`` -> (16, 35, 2000); anything else is compared as the text."""
    text = str(version).strip()
    if _VERSION_RE.match(text):
        return tuple(int(part) for part in text.split('.'))
    return (text,)


def same_version(left, right):
    if left is None or right is None:
        return left is right
    return version_key(left) == version_key(right)


def normalize_expectation(version=None, psid=None, where='firmware'):
    """Validate a group's expected firmware: ``version`` (a version, or PSID -> version) and ``psid`` (one or a list).

    Returns ``{'version': str or {psid: str} or None, 'psids': [..] or None}``; raises FwQueryError naming ``where``.
    """
    if version in (None, '', {}):
        version = None
    elif isinstance(version, dict):
        checked = {}
        for board, wanted in version.items():
            if not isinstance(board, str) or not board.strip():
                raise FwQueryError('%s.version: the keys are PSIDs such as MT_0000000223, got %r' % (where, board))
            if not isinstance(wanted, str) or not _VERSION_RE.match(wanted.strip()):
                raise FwQueryError('%s.version[%s] must be a firmware version such as 20.35.1012 (quoted in YAML), '
                                   'got %r' % (where, board, wanted))
            checked[board.strip()] = wanted.strip()
        version = checked
    elif isinstance(version, str) and _VERSION_RE.match(version.strip()):
        version = version.strip()
    else:
        raise FwQueryError('%s.version must be a firmware version such as 16.35.2000 (quoted in YAML) or a dict of '
                           'PSID to version, got %r' % (where, version))
    if psid in (None, '', []):
        psids = None
    else:
        psids = [psid] if isinstance(psid, str) else psid
        if not isinstance(psids, list) or not all(isinstance(p, str) and p.strip() for p in psids):
            raise FwQueryError('%s.psid must be a PSID such as MT_0000000008 or a list of them, got %r'
                               % (where, psid))
        psids = [p.strip() for p in psids]
    return {'version': version, 'psids': psids}


def expected_version_of(expectation, psid):
    """The version a device with ``psid`` should run, or None when the group expects none for it."""
    version = (expectation or {}).get('version')
    if isinstance(version, dict):
        return version.get(psid)
    return version


def evaluate(device, expectation, label=None):
    """Drift of one device (a parse result with psid, fw_version, running_version) against the group's expectation.

    Returns ``{'expected_version', 'expected_psids', 'drift': [...], 'state'}``; state is ``drift`` (the running
    firmware or the PSID is not what the group expects and no burned image fixes it), ``pending`` (the expected
    firmware is on flash and waits for a firmware reset or reboot), ``ok``, or ``unchecked`` (no expectation).
    """
    label = label or device.get('psid') or 'device'
    expectation = expectation or {}
    psids = expectation.get('psids')
    wanted = expected_version_of(expectation, device.get('psid'))
    drift = []
    if psids and device.get('psid') not in psids:
        drift.append('%s: PSID %s, the group expects %s' % (label, device.get('psid'), ' or '.join(psids)))
    pending = False
    if wanted and not same_version(device.get('running_version'), wanted):
        if same_version(device.get('fw_version'), wanted):
            pending = True
        else:
            flash = device.get('fw_version')
            running = device.get('running_version')
            drift.append('%s: firmware %s%s, the group expects %s' % (
                label, running, '' if same_version(flash, running) else ' (%s on flash)' % flash, wanted))
    if drift:
        state = 'drift'
    elif pending or device.get('pending_activation'):
        state = 'pending'
    elif wanted or psids:
        state = 'ok'
    else:
        state = 'unchecked'
    return {'expected_version': wanted, 'expected_psids': psids, 'drift': drift, 'state': state}
