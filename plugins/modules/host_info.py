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

from ansible_collections.npuops.ascend.plugins.module_utils._argspec import build_module, execute, tool_options  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._domain.host_info import HostReader, pci_vendor_problem  # noqa: E402


def main():
    argument_spec = dict(
        pci_vendor=dict(type='str', default='19e5'),
        lspci_path=dict(type='path'),
    )
    argument_spec.update(tool_options('timeout'))
    module = build_module('host_info', argument_spec, supports_check_mode=True)
    problem = pci_vendor_problem(module.params['pci_vendor'])
    if problem:
        module.fail_json(msg='host_info: %s' % problem)
    execute(module, lambda warnings: HostReader(module, warnings).gather())


if __name__ == '__main__':
    main()
