# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What numa_info reads: numactl, lscpu and the npu-smi topology, merged per NPU (shared with health_info)."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.module_utils._argspec import info_result
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import numa as numa_parsers
from ansible_collections.npuops.ascend.plugins.module_utils._tools.host_tools import Lscpu, Numactl
from ansible_collections.npuops.ascend.plugins.module_utils._tools.npu_smi import NODE_VIEWS, NpuSmi
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import ModuleFailure, Runner, host_name, parse_output, unparsed_warning


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
        # an A3 topology names dies by physical id (Phy-IDn) and has no CPU Affinity column
        key = row.get('npu') if row.get('npu') is not None else row.get('phy_id')
        npu[str(key)] = {'numa_node': numa_node_of(cpus, nodes), 'cpus': cpus, 'cpu_affinity': affinity}
    cpus_total = lscpu.get('cpus')
    if not isinstance(cpus_total, int):
        cpus_total = sum(len(node['cpus']) for node in nodes)
    sockets = lscpu.get('sockets')
    return info_result(npu, [], nodes=nodes, distances=numactl.get('distances') or [], npu=npu, cpus_total=cpus_total,
                       sockets=sockets if isinstance(sockets, int) else None, model_name=lscpu.get('model_name'))


def gather(module, params, warnings, topo=None):
    """Run the three tools concurrently, parse, merge. Raises ModuleFailure.

    numactl and lscpu describe the host and must work; without a usable npu-smi the host part
    is still returned, with an entry in ``errors`` and a warning, and no NPU affinity.
    ``topo``: the parsed ``npu-smi info -t topo`` of an earlier part of the same module run
    (health_info), which is then not read again.
    """
    host = host_name()
    runner = Runner(module, params['timeout'])
    numactl = Numactl.find(module, params['numactl_path'], host)
    lscpu = Lscpu.find(module, params['lscpu_path'], host)
    argvs = [numactl.argv(), lscpu.argv()]
    npu_smi = None
    errors = []
    if topo is None:
        try:
            npu_smi = NpuSmi.find(module, runner, params['npu_smi_path'], host)
            argvs.append(npu_smi.node_view_argv('topo'))
        except ModuleFailure as exc:
            errors.append({'what': 'topo', 'cmd': None, 'rc': None, 'msg': exc.msg})
    results = runner.run_many(argvs, workers=len(argvs), return_exceptions=True, read=True)
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
    topo = topo or {}
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
