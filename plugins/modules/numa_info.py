#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: numa_info
short_description: Gather the NUMA layout of a node and the NUMA node of each Ascend NPU
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Runs C(numactl -H), C(lscpu) and C(npu-smi info -t topo) concurrently and merges them.
  - Without a usable C(npu-smi) (missing, or failing) the host part is still returned, with an entry in RV(errors), a
    warning, and no NPU in RV(devices); C(numactl) and C(lscpu) must work.
  - Returns the NUMA nodes with their CPUs and memory, the CPU count and sockets, and for every NPU its
    CPU affinity and the NUMA node that holds those CPUs, which is what CPU binding of a training or
    serving process needs.
  - A line of output that the parsers do not recognise is reported as a warning that names the command;
    please report it together with your driver version.
  - Read-only; never reports a change.
options:
  numactl_path:
    description:
      - Path of the C(numactl) binary, or of the directory holding it.
      - When unset, the Ascend driver directories, C(/usr/local/sbin), C(/usr/local/bin) and then E(PATH) are searched.
    type: path
  lscpu_path:
    description:
      - Path of the C(lscpu) binary, or of the directory holding it. Searched like O(numactl_path) when unset.
    type: path
extends_documentation_fragment:
  - npuops.ascend.tool_options
  - npuops.ascend.tool_options.group
  - npuops.ascend.attributes
  - npuops.ascend.attributes.info_module
  - npuops.ascend.attributes.actiongroup_npu
attributes:
  platform:
    support: full
    platforms: posix
    description: Linux nodes with numactl, util-linux (lscpu) and the Ascend driver (npu-smi).
notes:
  - NPU keys in RV(devices) and RV(npu) are strings (V('0') ... V('7')), as in every JSON result.
  - The three tools run concurrently (O(workers) does not limit them); O(hccn_tool_path) is not used.
  - On an Atlas 800T A2 (4 x Kunpeng 920, 192 CPUs) there are 8 NUMA nodes of 24 CPUs, and two NPUs share each of
    the nodes 0, 2, 4 and 6.
seealso:
  - module: npuops.ascend.npu_info
"""

EXAMPLES = r"""
- name: Read the NUMA layout and the NPU affinity
  npuops.ascend.numa_info:
  register: numa

- name: Show the CPUs to bind the process of NPU 0 to
  ansible.builtin.debug:
    msg: "NPU 0 -> NUMA node {{ numa.npu['0'].numa_node }}, CPUs {{ numa.npu['0'].cpu_affinity }}"
"""

RETURN = r"""
count:
  description: Number of NPUs in RV(devices).
  returned: success
  type: int
  sample: 8
devices:
  description: Per NPU (keyed by the NPU id as a string), the same entries as RV(npu).
  returned: success
  type: dict
errors:
  description: Parts that could not be read without failing the task (the NPU affinity when npu-smi is missing or fails).
  returned: success
  type: list
  elements: dict
nodes:
  description: The NUMA nodes from C(numactl -H) (from C(lscpu) when numactl lists none, then without memory).
  returned: success
  type: list
  elements: dict
  contains:
    id:
      description: NUMA node id.
      type: int
    cpus:
      description: CPU numbers of the node.
      type: list
      elements: int
    memory_mb:
      description: Memory of the node in MB (C(size) of C(numactl -H)); null when not known.
      type: int
    free_mb:
      description: Free memory of the node in MB at the time of the call; null when not known.
      type: int
  sample: [{id: 0, cpus: [0, 1, 2, 23], memory_mb: 193050, free_mb: 38779}]
distances:
  description: The NUMA distance matrix of C(numactl -H), one row per node.
  returned: success
  type: list
  elements: list
  sample: [[10, 11], [11, 10]]
npu:
  description:
    - Per NPU (keyed by the NPU id as a string), from the C(CPU Affinity) column of C(npu-smi info -t topo).
    - The same entries as RV(devices), under the name the stage roles use.
  returned: success
  type: dict
  contains:
    numa_node:
      description: The NUMA node holding the NPU's affinity CPUs (the node with most of them); null when unknown.
      type: int
    cpus:
      description: The affinity CPUs as a list.
      type: list
      elements: int
    cpu_affinity:
      description: The affinity as npu-smi prints it.
      type: str
  sample: {"0": {numa_node: 6, cpus: [144, 145, 167], cpu_affinity: 144-167}}
cpus_total:
  description: Number of CPUs (C(CPU(s)) of C(lscpu), else the CPUs of all NUMA nodes).
  returned: success
  type: int
  sample: 192
sockets:
  description: Number of CPU sockets from C(lscpu); null when lscpu does not know it (it prints C(-) in some containers).
  returned: success
  type: int
  sample: 4
model_name:
  description: The CPU model name from C(lscpu).
  returned: success
  type: str
  sample: Kunpeng-920
cmd:
  description: The failing command, on failure.
  returned: failure
  type: str
rc:
  description: The exit code of the failing command, on failure.
  returned: failure
  type: int
stdout:
  description: Standard output of the failing command.
  returned: failure
  type: str
stderr:
  description: Standard error of the failing command.
  returned: failure
  type: str
"""

from ansible_collections.npuops.ascend.plugins.module_utils._argspec import build_module, execute, tool_options  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._domain.numa_info import gather  # noqa: E402


def main():
    argument_spec = dict(
        numactl_path=dict(type='path'),
        lscpu_path=dict(type='path'),
    )
    argument_spec.update(tool_options())
    module = build_module('numa_info', argument_spec, supports_check_mode=True)
    execute(module, lambda warnings: gather(module, module.params, warnings))


if __name__ == '__main__':
    main()
