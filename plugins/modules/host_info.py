#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: host_info
short_description: Gather the host settings an Ascend training node depends on (OS, hugepages, swappiness, limits, NPUs on PCIe)
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Reads, in one task, what the pre-flight check of an Ascend node looks at on the host side
    C(/etc/os-release) and the kernel release, C(/proc/meminfo) (memory and huge pages),
    C(/proc/sys/vm/swappiness), C(/sys/kernel/mm/transparent_hugepage/enabled), the open-file limit of a
    process started for the task, and the NPUs visible on PCIe.
  - The NPUs on PCIe come from C(lspci -D -n -d <vendor>:) (the vendor id of Huawei is C(19e5)); without C(lspci)
    they are read from C(/sys/bus/pci/devices), with a warning.
  - A file that cannot be read gives null values and an entry in RV(errors); it never fails the task.
  - Read-only; never reports a change.
options:
  pci_vendor:
    description:
      - PCI vendor id of the NPUs, four hex digits.
    type: str
    default: 19e5
  lspci_path:
    description:
      - Path of the C(lspci) binary or of its directory. When unset, the vendor directories, C(/usr/sbin), C(/sbin)
        and E(PATH) are searched.
    type: path
extends_documentation_fragment:
  - npuops.ascend.tool_options
  - npuops.ascend.attributes
  - npuops.ascend.attributes.info_module
attributes:
  platform:
    support: full
    platforms: posix
    description: Linux (procfs and sysfs).
notes:
  - The open-file limit is the one of the module's own process, which inherits it from the connection (an SSH
    login gets the limits of C(/etc/security/limits.conf) through PAM); a service started by systemd has its own.
seealso:
  - module: npuops.ascend.npu_info
  - module: npuops.ascend.numa_info
"""

EXAMPLES = r"""
- name: Read the host settings and the NPUs on PCIe
  npuops.ascend.host_info:
  register: host

- name: Stop when not every NPU is visible on PCIe
  ansible.builtin.assert:
    that: host.count == 8
    fail_msg: "{{ inventory_hostname }}: {{ host.count }} NPUs on PCIe, expected 8"
"""

RETURN = r"""
count:
  description: Number of NPUs on PCIe (devices of O(pci_vendor) with a processing-accelerator class).
  returned: success
  type: int
  sample: 8
devices:
  description: The NPUs on PCIe, keyed by PCI address.
  returned: success
  type: dict
  sample: {"0000:c1:00.0": {class: "1200", vendor: "19e5", device: "d802", revision: "20"}}
errors:
  description: What could not be read (C(what), C(path), C(msg)); its values are null.
  returned: success
  type: list
  elements: dict
os:
  description: From C(/etc/os-release) (C(id), C(version_id), C(pretty_name)) and the kernel (C(kernel), C(machine)).
  returned: success
  type: dict
  sample: {id: openEuler, version_id: "22.03", pretty_name: "openEuler 22.03 (LTS-SP1)", kernel: 5.10.0-136.12.0.86.oe2203sp1.aarch64,
           machine: aarch64}
memory:
  description: From C(/proc/meminfo), in kB, and the huge pages.
  returned: success
  type: dict
  sample: {mem_total_kb: 1055531456, hugepages_total: 15360, hugepages_free: 15360, hugepagesize_kb: 2048}
swappiness:
  description: C(vm.swappiness); null when it cannot be read.
  returned: success
  type: int
  sample: 10
transparent_hugepage:
  description: The active mode of C(/sys/kernel/mm/transparent_hugepage/enabled) (C(always), C(madvise) or C(never)).
  returned: success
  type: str
  sample: never
nofile:
  description: The open-file limit of the module's process (C(soft), C(hard); null for unlimited).
  returned: success
  type: dict
  sample: {soft: 65535, hard: 65535}
"""

import os  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402

from ansible_collections.npuops.ascend.plugins.module_utils._argspec import build_module, execute, info_result, tool_options  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import host as host_parsers  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._runner import (  # noqa: E402
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


class HostReader:
    def __init__(self, module, warnings):
        self.module = module
        self.params = module.params
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
        rc, out, err = runner.run(argv)
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


def main():
    argument_spec = dict(
        pci_vendor=dict(type='str', default='19e5'),
        lspci_path=dict(type='path'),
    )
    argument_spec.update(tool_options('timeout'))
    module = build_module('host_info', argument_spec, supports_check_mode=True)
    if not re.match(r'^[0-9a-fA-F]{4}$', module.params['pci_vendor']):
        module.fail_json(msg='host_info: pci_vendor must be four hex digits (got %s); Huawei is 19e5.' % module.params['pci_vendor'])
    execute(module, lambda warnings: HostReader(module, warnings).gather())


if __name__ == '__main__':
    main()
