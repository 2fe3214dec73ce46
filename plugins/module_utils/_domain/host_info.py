# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What host_info reads: OS, huge pages, swappiness, transparent huge pages, open-file limit, NPUs on PCIe (shared with health_info)."""

from __future__ import annotations

import os
import platform
import re
import resource

from ansible_collections.npuops.ascend.plugins.module_utils._argspec import info_result
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import host as host_parsers
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import (
    ModuleFailure,
    Runner,
    failed_call,
    find_tool,
    host_name,
    parse_output,
    unparsed_warning,
)

FILES = {
    'os_release': '/etc/os-release',
    'meminfo': '/proc/meminfo',
    'swappiness': '/proc/sys/vm/swappiness',
    'thp': '/sys/kernel/mm/transparent_hugepage/enabled',
}
PCI_DEVICES = '/sys/bus/pci/devices'
LSPCI_DIRS = ['/usr/sbin', '/sbin']
MEMORY_KEYS = ('mem_total_kb', 'mem_available_kb', 'hugepages_total', 'hugepages_free', 'hugepagesize_kb')
ACCELERATOR_CLASS = '1200'   # PCI class 12h "Processing accelerators", subclass 00


def is_accelerator(device):
    """A processing accelerator: class 12xx, or, where lspci printed names only, the class name."""
    if device.get('class'):
        return device['class'].startswith(ACCELERATOR_CLASS[:2])
    return device.get('class_name') == 'Processing accelerators'


def read_file(path):
    with open(path, 'rb') as handle:
        return handle.read().decode('utf-8', errors='replace')


def pci_vendor_problem(vendor):
    """Why a pci_vendor value is refused, or None."""
    if not re.match(r'^[0-9a-fA-F]{4}$', vendor or ''):
        return 'pci_vendor must be four hex digits (got %s); Huawei is 19e5.' % vendor
    return None


class HostReader:
    """Reads the host; ``params`` holds pci_vendor, lspci_path and timeout (the module's own by default)."""

    def __init__(self, module, warnings, params=None):
        self.module = module
        self.params = module.params if params is None else params
        self.warnings = warnings
        self.errors = []

    def parsed(self, what, parser):
        """The parse of one of FILES; None (and an error entry) when it cannot be read."""
        path = FILES[what]
        try:
            text = read_file(path)
        except OSError as exc:
            self.errors.append({'what': what, 'path': path, 'msg': '%s: %s could not be read: %s' % (host_name(), path, exc)})
            return None
        data, unparsed = parse_output(parser, ['cat', path], text)
        if unparsed:
            self.warnings.append(unparsed_warning(['cat', path], unparsed))
        return data

    def npus_by_lspci(self, vendor):
        runner = Runner(self.module, self.params['timeout'])
        tool = find_tool(self.module, 'lspci', self.params['lspci_path'], extra_dirs=LSPCI_DIRS,
                         missing_hint='it comes with the pciutils package')
        argv = [tool, '-D', '-n', '-d', vendor + ':']
        rc, out, err = runner.run(argv, read=True)
        if rc != 0:
            raise failed_call(argv, rc, out, err, subject=host_name(), hint='Run lspci on the host to see the error.')
        data, unparsed = parse_output(host_parsers.PARSERS['lspci'], argv, out)
        if unparsed:
            self.warnings.append(unparsed_warning(argv, unparsed))
        return data.get('devices') or []

    def npus_by_sysfs(self, vendor):
        found = []
        try:
            names = sorted(os.listdir(PCI_DEVICES))
        except OSError as exc:
            self.errors.append({'what': 'pci', 'path': PCI_DEVICES, 'msg': '%s: %s could not be read: %s' % (host_name(), PCI_DEVICES, exc)})
            return found
        for name in names:
            try:
                ids = dict((leaf, read_file(os.path.join(PCI_DEVICES, name, leaf)).strip().lower())
                           for leaf in ('vendor', 'device', 'class', 'revision'))
            except OSError:
                continue
            if ids['vendor'] != '0x' + vendor:
                continue
            found.append({'address': name, 'vendor': vendor, 'device': ids['device'][2:], 'class': ids['class'][2:6],
                          'revision': ids['revision'][2:]})
        return found

    def npus(self):
        vendor = self.params['pci_vendor'].lower()
        try:
            devices = self.npus_by_lspci(vendor)
        except ModuleFailure as exc:
            if self.params['lspci_path']:
                raise
            self.warnings.append('%s Reading the NPUs from %s instead.' % (exc.msg, PCI_DEVICES))
            devices = self.npus_by_sysfs(vendor)
        return dict((d['address'], dict((key, d.get(key)) for key in ('class', 'vendor', 'device', 'revision')))
                    for d in devices if is_accelerator(d))

    def gather(self):
        os_release = self.parsed('os_release', host_parsers.PARSERS['os_release']) or {}
        meminfo = self.parsed('meminfo', host_parsers.PARSERS['meminfo']) or {}
        thp = self.parsed('thp', host_parsers.PARSERS['thp']) or {}
        swappiness = None
        try:
            swappiness = int(read_file(FILES['swappiness']).strip())
        except (OSError, ValueError) as exc:
            self.errors.append({'what': 'swappiness', 'path': FILES['swappiness'],
                                'msg': '%s: %s could not be read: %s' % (host_name(), FILES['swappiness'], exc)})
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        devices = self.npus()
        return info_result(
            devices, self.errors,
            os={'id': os_release.get('id'), 'version_id': os_release.get('version_id'),
                'pretty_name': os_release.get('pretty_name'), 'kernel': platform.release(), 'machine': platform.machine()},
            memory=dict((key, meminfo.get(key)) for key in MEMORY_KEYS),
            swappiness=swappiness,
            transparent_hugepage=thp.get('mode'),
            nofile={'soft': None if soft == resource.RLIM_INFINITY else soft,
                    'hard': None if hard == resource.RLIM_INFINITY else hard},
        )
