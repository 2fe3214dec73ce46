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

from ansible_collections.npuops.ascend.plugins.module_utils._argspec import build_module, execute, info_result, tool_options  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._host_tools import Lscpu, Numactl  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._npu_smi import NODE_VIEWS, NpuSmi  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import numa as numa_parsers  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._runner import ModuleFailure, Runner, host_name, parse_output, unparsed_warning  # noqa: E402


def expand_cpus(text):
    """'0-23,48' -> [0, ..., 23, 48]; None, '-', 'NA' or an unreadable list -> []."""
    if not text or text.strip() in ('-', 'NA'):
        return []
    try:
        return numa_parsers.expand_cpu_list(text)
    except ValueError:
        return []


def numa_node_of(cpus, nodes):
    """The id of the node that holds most of ``cpus``; None when no node holds any."""
    best, best_count = None, 0
    wanted = set(cpus)
    for node in nodes:
        count = len(wanted.intersection(node.get('cpus') or []))
        if count > best_count:
            best, best_count = node.get('id'), count
    return best


def merge(numactl, lscpu, topo):
    """Build the result from the three parsed outputs (pure)."""
    nodes = [
        {'id': node.get('id'), 'cpus': list(node.get('cpus') or []), 'memory_mb': node.get('memory_mb'),
         'free_mb': node.get('free_mb')}
        for node in numactl.get('nodes') or []
    ]
    if not nodes:
        nodes = [{'id': int(node_id), 'cpus': list(cpus), 'memory_mb': None, 'free_mb': None}
                 for node_id, cpus in sorted((lscpu.get('numa_nodes') or {}).items(), key=lambda item: int(item[0]))]
    npu = {}
    for row in topo.get('devices') or []:
        affinity = row.get('cpu_affinity')
        cpus = expand_cpus(affinity)
        npu[str(row.get('npu'))] = {'numa_node': numa_node_of(cpus, nodes), 'cpus': cpus, 'cpu_affinity': affinity}
    cpus_total = lscpu.get('cpus')
    if not isinstance(cpus_total, int):
        cpus_total = sum(len(node['cpus']) for node in nodes)
    sockets = lscpu.get('sockets')
    return info_result(npu, [], nodes=nodes, distances=numactl.get('distances') or [], npu=npu, cpus_total=cpus_total,
                       sockets=sockets if isinstance(sockets, int) else None, model_name=lscpu.get('model_name'))


def gather(module, params, warnings):
    """Run the three tools concurrently, parse, merge. Raises ModuleFailure.

    numactl and lscpu describe the host and must work; without a usable npu-smi the host part
    is still returned, with an entry in ``errors`` and a warning, and no NPU affinity.
    """
    host = host_name()
    runner = Runner(module, params['timeout'])
    numactl = Numactl.find(module, params['numactl_path'], host)
    lscpu = Lscpu.find(module, params['lscpu_path'], host)
    argvs = [numactl.argv(), lscpu.argv()]
    npu_smi = None
    errors = []
    try:
        npu_smi = NpuSmi.find(module, runner, params['npu_smi_path'], host)
        argvs.append(npu_smi.node_view_argv('topo'))
    except ModuleFailure as exc:
        errors.append({'what': 'topo', 'cmd': None, 'rc': None, 'msg': exc.msg})
    results = runner.run_many(argvs, workers=len(argvs), return_exceptions=True)
    parsed = []
    for tool, argv, result in zip((numactl, lscpu), argvs, results):
        if isinstance(result, ModuleFailure):
            raise result.at(host)
        if isinstance(result, BaseException):
            raise result
        data, unparsed = parse_output(tool.parser, argv, tool.check(argv, *result))
        if unparsed:
            warnings.append(unparsed_warning(argv, unparsed))
        parsed.append(data)
    topo = {}
    if npu_smi is not None:
        try:
            topo = npu_smi.parse(NODE_VIEWS['topo'][1], argvs[2], npu_smi.check(argvs[2], results[2]))
        except ModuleFailure as exc:
            detail = exc.result()
            errors.append({'what': 'topo', 'cmd': detail.get('cmd'), 'rc': detail.get('rc'), 'msg': exc.msg})
        finally:
            warnings.extend(npu_smi.warnings)
    for error in errors:
        warnings.append('%s The NUMA layout of the host is returned without the NPU affinity.' % error['msg'])
    result = merge(parsed[0], parsed[1], topo)
    result['errors'] = errors
    return result


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
