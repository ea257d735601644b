# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Lab test double of NVIDIA MFT's mlxfwmanager, after mstflint's mlxfwupdate/mlxfwmanager.cpp (the open-source
source of mlxfwmanager and mlxup).

    mlxfwmanager [-d DEVICE] [--query] [-i IMAGE] [-u] [-f] [-y|--no]

Prints what mlxfwmanager prints: one block per device (printDeviceInfoQuery(): Device Type, Part Number,
Description, PSID, PCI Device Name, Base GUID, Base MAC, the Versions table with Current and Available, a
``FW (Running)`` row while the firmware on flash is not the running one, the Status), and in update mode the lines
of recorded runs ("Found N device(s) requiring firmware update...", "Updating FW ...", "Restart needed for updates
to take effect."). Decides as the source does: the image matches a device only by its PSID ("No matching image
found" otherwise, and in update mode nothing is burned and the exit code is 9, or 255 with -f); an image older than
the flash is "Up to date" and only burned with -f ("Forced update required"). A burn writes the flash only: the
running version stays until a firmware reset (mlxfwreset double) or a reboot (lab-reboot double) activates it
(_firmware_state.activate).

Firmware images: the lab cannot hold real ones, so a lab image is a JSON file
``{"gpunet_lab_firmware_image": 1, "psid": "MT_0000000223", "version": "20.35.1012"}`` (optional ``roms``:
{"PXE": "3.6.0502"}); any other file is refused as the real tool refuses a file that is not an image
("-E- Error parsing file: PATH", exit 17).
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _firmware_state import (  # noqa: E402  pylint: disable=wrong-import-position
    adapter_paths,
    find_device,
    load,
    log_call,
    pci_of,
    save,
    state_files,
)

# mlxfwupdate/err_msgs.h
RC_QUERY_FAILED, RC_BAD_ARGS, RC_IMG_NOT_FOUND, RC_FILE_PARSE_FAILED, RC_ERRORS = 1, 3, 9, 17, 255
IMAGE_MARKER = 'gpunet_lab_firmware_image'
NO_IMAGE = 'No matching image found'
USAGE = ('    NAME:\n        mlxfwmanager\n    SYNOPSIS:\n        mlxfwmanager [-d <device>] [-i <image file>] [-u] '
         '[-f] [-y] [--query]\n')


def version_key(version):
    try:
        return tuple(int(part) for part in str(version).split('.'))
    except ValueError:
        return (str(version),)


def parse_args(args):
    options = {'device': None, 'image': None, 'query': False, 'update': False, 'force': False, 'yes': None}
    while args:
        word = args.pop(0)
        if word in ('-d', '--dev', '-i', '--image-file'):
            if not args:
                sys.stdout.write('-E- Missing argument for flag %s\n%s' % (word, USAGE))
                sys.exit(RC_BAD_ARGS)
            options['device' if word in ('-d', '--dev') else 'image'] = args.pop(0)
        elif word == '--query':
            options['query'] = True
        elif word in ('-u', '--update'):
            options['update'] = True
        elif word in ('-f', '--force'):
            options['force'] = True
        elif word in ('-y', '--yes'):
            options['yes'] = True
        elif word == '--no':
            options['yes'] = False
        else:
            sys.stdout.write('-E- Unknown flag "%s"\n%s' % (word, USAGE))
            sys.exit(RC_BAD_ARGS)
    return options


def load_image(path):
    """The lab image's {psid, version, roms}, or None when the file is not a lab image."""
    try:
        with open(path) as handle:
            image = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(image, dict) or image.get(IMAGE_MARKER) != 1:
        return None
    if not isinstance(image.get('psid'), str) or not isinstance(image.get('version'), str):
        return None
    image.setdefault('roms', {})
    return image


def firmware_of(state):
    firmware = state.get('fw')
    if not firmware:
        return None
    return firmware


def status_of(firmware, image, force):
    """checkAndDisplayDeviceQuery1Dev(): only the FW component decides (the ROM comparison is disabled there)."""
    if image is None or image['psid'] != firmware['psid']:
        return NO_IMAGE
    device, offered = version_key(firmware['flash']), version_key(image['version'])
    update, keep = int(device < offered), int(device > offered)
    if update and not keep:
        return 'Update required'
    if force:
        return 'Forced update required'
    return 'Up to date'


def print_device(index, name, state, firmware, image, status):
    matches = status != NO_IMAGE
    out = sys.stdout.write
    out('Device #%d:\n----------\n\n' % index)
    out('  Device Type:      %s\n' % state.get('device_type', 'N/A'))
    out('  Part Number:      %s\n' % (state.get('name') or 'N/A'))
    out('  Description:      %s\n' % (state.get('description') or ''))
    out('  PSID:             %s\n' % firmware['psid'])
    out('  PCI Device Name:  %s\n' % name)
    if firmware.get('base_guid'):
        out('  Base GUID:        %s\n' % firmware['base_guid'])
    if firmware.get('base_mac'):
        out('  Base MAC:         %s\n' % firmware['base_mac'])
    out('  Versions:         %-14s %-14s\n' % ('Current', 'Available'))
    out('     FW             %-14s %-14s\n' % (firmware['flash'], image['version'] if matches else 'N/A'))
    rows = dict((name, (version, None)) for name, version in (firmware.get('roms') or {}).items())
    if firmware['running'] != firmware['flash']:
        rows['FW (Running)'] = (firmware['running'], None)
    for rom, version in ((image or {}).get('roms') or {}).items() if matches else ():
        rows[rom] = (rows.get(rom, ('N/A', None))[0], version)
    for rom in sorted(rows):
        current, available = rows[rom]
        out('     %-12s   %-14s %-14s\n' % (rom, current, available or 'N/A'))
    out('\n  Status:           %s\n\n' % status)


def burn(path, state, image):
    """Write the image to the adapter's flash (every function of the card shows it); the running firmware changes
    only when a reset or reboot activates it."""
    for member in adapter_paths(path):
        member_state = state if member == path else load(member)
        member_state['fw']['flash'] = image['version']
        if image.get('roms'):
            member_state['fw']['roms'] = dict(image['roms'])
        save(member, member_state)


def main(argv):
    log_call('mlxfwmanager', argv[1:])
    options = parse_args(list(argv[1:]))
    out = sys.stdout.write
    image = None
    if options['image'] is not None:
        image = load_image(options['image'])
        if image is None:
            out('-E- Error parsing file: %s\n' % options['image'])
            return RC_FILE_PARSE_FAILED
    if options['device'] is not None:
        path, state = find_device(options['device'])
        if path is None or firmware_of(state) is None:
            out('Querying Mellanox devices firmware ...\n\n')
            sys.stderr.write('-E- Failed to query %s device, error : No such file or directory\n'
                             % options['device'])
            return RC_QUERY_FAILED
        devices = [(path, state, options['device'])]
    else:
        devices = [(path, load(path), pci_of(path)) for path in state_files()]
        devices = [(path, state, name) for path, state, name in devices if firmware_of(state)]
        if not devices:
            sys.stderr.write("-E- No devices found or specified, mst might be stopped, run 'mst start' to load MST "
                             "modules\n")
            return 20
    out('Querying Mellanox devices firmware ...\n\n')
    statuses = []
    for index, (path, state, name) in enumerate(devices, 1):
        status = status_of(state['fw'], image, options['force'])
        statuses.append(status)
        print_device(index, name, state, state['fw'], image, status)
    if options['query']:
        return 0
    wanted = [i for i, status in enumerate(statuses) if status in ('Update required', 'Forced update required')]
    unmatched = [i for i, status in enumerate(statuses) if status == NO_IMAGE]
    # The summary of checkAndDisplay(): on stdout after "---------", or the error alone on stderr.
    if wanted:
        if options['update']:
            out('---------\nFound %d device(s) requiring firmware update...\n' % len(wanted))
        else:
            out('---------\nFound %d device(s) requiring firmware update. Please use -u flag to perform the '
                'update.\n' % len(wanted))
    elif image is not None and unmatched:
        sys.stderr.write('---------\n-E- Could not find matching firmware images for %d device(s).\n'
                         % len(unmatched))
    rc = RC_IMG_NOT_FOUND if image is not None and unmatched and not wanted else 0
    if not options['update']:
        return rc
    out('\n')
    if not options['force']:
        if not wanted:
            return rc
        answer = options['yes']
        if answer is None:
            out('Perform FW update? [y/N]: ')
            sys.stdout.flush()
            answer = sys.stdin.readline().strip().lower().startswith('y')
        if not answer:
            out('No updates performed\n')
            return rc
    burned = 0
    for index, (path, state, _name) in enumerate(devices, 1):
        if statuses[index - 1] == NO_IMAGE:
            out('Device #%d: Error - no matching image found\n' % index)
        elif index - 1 not in wanted:
            out('Device #%d: Up to date\n' % index)
        else:
            out('Device #%d: Updating FW ...     \nFSMST_INITIALIZE -   OK          \n'
                'Writing Boot image component -   OK          \nDone\n' % index)
            burn(path, state, image)
            burned += 1
    if burned:
        out('\nRestart needed for updates to take effect.\n')
    if unmatched:
        sys.stderr.write('-E- One or more errors were encountered.\n')
        return RC_ERRORS
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
