# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stage 6 (role numa_bind): the per-rank launch of a job on one node, from the binding map.

One process per NPU of the map. Local rank r is the map's r-th NPU (the map binds NPUs 0 to N-1, so local rank r is
NPU r, as npu-bind and a torchrun job that selects its device by LOCAL_RANK expect); the global rank is the node's
index in the run's node list times N plus r, the world size the node count times N.

OMP_NUM_THREADS of a rank: the CPUs of its NUMA node (the union of the CPU lists the map gives the NPUs on that node,
numa_info's affinity CPUs from ``npu-smi info -t topo``) divided among the NPUs bound to that node - the rank's share,
at least 1. The shares are consecutive slices of the node's CPUs in NPU order; when the CPUs do not divide evenly the
first NPUs get one CPU more. On an Atlas 800T A2 two NPUs share each NUMA node of 24 CPUs: 12 threads each, NPU 0 on
144-155, NPU 1 on 156-167.

CPU_AFFINITY_CONF (torch_npu, Ascend Extension for PyTorch, environment variable CPU_AFFINITY_CONF, hiascend.com
PyTorch documentation, from the 6.0.0 releases): ``<mode>,npu<d>:<first>-<last>,...`` - mode 1 coarse binding (every
thread of the NPU's process on its range), 2 fine binding (the main thread and the task-queue threads on cores of
their own in the range); ``npu<d>:<a>-<b>`` sets NPU d's range to the closed interval a-b, and one NPU may have
several (``npu0:0-2,npu0:4-5``). The ranges written are each NPU's share above.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import compact_cpu_list, expand_cpu_list
from ansible_collections.npuops.ascend.plugins.plugin_utils.numa import _whole

# torchrun's default rendezvous port (torch.distributed.run --master_port, default 29500)
DEFAULT_MASTER_PORT = 29500
# CPU_AFFINITY_CONF modes: 0 not written (torch_npu before 6.0.0 does not read it), 1 coarse, 2 fine
AFFINITY_MODES = (0, 1, 2)
OMP_RULE = ('the CPUs of the NPU\'s NUMA node divided among the NPUs bound to that node (consecutive slices in NPU '
            'order, the first NPUs one CPU more when they do not divide evenly), at least 1')
AFFINITY_SOURCE = ('torch_npu CPU_AFFINITY_CONF (Ascend Extension for PyTorch environment variables, hiascend.com; '
                   'torch_npu 6.0.0 and later)')


def _error(text):
    raise AnsibleFilterError('numa_bind launch: %s' % text)


def cpu_list(text):
    """'144-167,170' -> [144, ..., 167, 170] (the parsers' CPU list reader); a malformed list raises, naming it."""
    try:
        return expand_cpu_list(str(text or ''))
    except ValueError as exc:
        _error('the CPU list %r is not a list of CPU numbers and ranges (for example 0-23,48): %s' % (text, exc))
        raise  # unreachable: _error raises


def cpu_ranges(cpus):
    """[(first, last)] of the consecutive runs of a sorted CPU list."""
    out = []
    for cpu in sorted(set(cpus)):
        if out and cpu == out[-1][1] + 1:
            out[-1] = (out[-1][0], cpu)
        else:
            out.append((cpu, cpu))
    return out


def compact(cpus):
    """[0, 1, 2, 5] -> '0-2,5'."""
    return compact_cpu_list(cpus)


def _entries(binding, npus_per_node):
    """The map's entries of NPUs 0..N-1 in NPU order; every problem raises, naming it."""
    if isinstance(binding, Mapping):
        binding = binding.get('npus')
    if not isinstance(binding, (list, tuple)) or not binding:
        _error('the binding map lists no NPU (expected [{npu, numa_node, cpus}, ...] from stage 6)')
    count = _whole(npus_per_node)
    if count is None or count < 1:
        _error('npus_per_node %r is not a number of NPUs above 0' % (npus_per_node,))
    by_npu = {}
    for entry in binding:
        if not isinstance(entry, Mapping) or _whole(entry.get('npu')) is None:
            _error('the binding map entry %r has no NPU number' % (entry,))
        npu = _whole(entry['npu'])
        if npu in by_npu:
            _error('the binding map lists NPU %d twice' % npu)
        if _whole(entry.get('numa_node')) is None:
            _error('the binding map gives NPU %d no NUMA node' % npu)
        if not cpu_list(entry.get('cpus')):
            _error('the binding map gives NPU %d no CPUs' % npu)
        by_npu[npu] = entry
    missing = [npu for npu in range(count) if npu not in by_npu]
    if missing:
        _error('the binding map does not bind NPU%s %s of the %d NPUs per node, so %s would run unbound: run stage 6 '
               'on a node where npu-smi info -t topo gives every NPU its CPU affinity'
               % ('s' if len(missing) > 1 else '', ', '.join(str(npu) for npu in missing), count,
                  'their ranks' if len(missing) > 1 else 'its rank'))
    extra = sorted(npu for npu in by_npu if npu >= count)
    if extra:
        _error('the binding map binds NPU %s, beyond the %d NPUs per node (0-%d)'
               % (', '.join(str(npu) for npu in extra), count, count - 1))
    return [by_npu[npu] for npu in range(count)]


def cpu_shares(binding, npus_per_node):
    """{npu: {numa_node, node_cpus, cpus}}: each NPU's share of its NUMA node's CPUs (see the module's rule)."""
    entries = _entries(binding, npus_per_node)
    per_node = {}
    for entry in entries:
        per_node.setdefault(_whole(entry['numa_node']), []).append(entry)
    shares = {}
    for node, members in per_node.items():
        node_cpus = sorted(set(cpu for entry in members for cpu in cpu_list(entry['cpus'])))
        count = len(members)
        size, extra = divmod(len(node_cpus), count)
        start = 0
        for index, entry in enumerate(members):
            take = size + (1 if index < extra else 0)
            share = node_cpus[start:start + take]
            start += take
            if not share:  # fewer CPUs than NPUs on the node: the NPUs share them round-robin
                share = [node_cpus[index % len(node_cpus)]]
            shares[_whole(entry['npu'])] = {'numa_node': node, 'node_cpus': node_cpus, 'cpus': share}
    return shares


def affinity_conf(shares, mode):
    """CPU_AFFINITY_CONF ``<mode>,npu<d>:<a>-<b>,...`` of the shares; None for mode 0."""
    mode = _whole(mode)
    if mode not in AFFINITY_MODES:
        _error('numa_bind_cpu_affinity_conf %r is not 0 (off), 1 (coarse) or 2 (fine binding)' % (mode,))
    if not mode:
        return None
    parts = [str(mode)]
    for npu in sorted(shares):
        parts += ['npu%d:%d-%d' % (npu, first, last) for first, last in cpu_ranges(shares[npu]['cpus'])]
    return ','.join(parts)


def _address(value):
    return isinstance(value, str) and value.strip() == value and value != '' and not any(
        char.isspace() or char in '\'"\\;&|$`<>' for char in value)


def _node_rank(node, nodes):
    """The place of ``node`` in the run's node list; a bad list or a node not in it raises."""
    if not isinstance(nodes, (list, tuple)) or not nodes or not all(isinstance(name, str) and name for name in nodes):
        _error('the node list %r is not a list of node names' % (nodes,))
    if len(set(nodes)) != len(nodes):
        _error('the node list names a node twice: %s' % ', '.join(sorted(set(n for n in nodes if nodes.count(n) > 1))))
    if node not in nodes:
        _error('%s is not in the run\'s node list (%s), so it has no node rank' % (node, ', '.join(nodes)))
    return list(nodes).index(node)


def rank_launch(binding, node, nodes, master_addr, master_port=DEFAULT_MASTER_PORT, npus_per_node=8,
                affinity_mode=0, method='numactl'):
    """The per-rank launch of ``node``: the ranks (LOCAL_RANK, RANK, WORLD_SIZE, the NPU, its NUMA node, memory node
    and CPU share, OMP_NUM_THREADS), CPU_AFFINITY_CONF and the torchrun and msrun arguments of this node.

    ``binding`` is the map's ``npus`` (or the map), ``nodes`` the run's node list in order (the first node is the
    master), ``master_addr`` the address the other nodes reach the first node at.
    """
    node_rank = _node_rank(node, nodes)
    if not _address(master_addr):
        _error('the master address %r is not a host name or address (no spaces or shell characters): set '
               'numa_bind_master_addr, or npuops_hccl_if_ip of the first node (%s)' % (master_addr, nodes[0]))
    port = _whole(master_port)
    if port is None or not 1 <= port <= 65535:
        _error('the master port %r is not a port from 1 to 65535' % (master_port,))
    shares = cpu_shares(binding, npus_per_node)
    per_node = len(shares)
    world = len(nodes) * per_node
    conf = affinity_conf(shares, affinity_mode)
    ranks = []
    for local in range(per_node):
        share = shares[local]
        env = {'LOCAL_RANK': str(local), 'RANK': str(node_rank * per_node + local), 'WORLD_SIZE': str(world),
               'LOCAL_WORLD_SIZE': str(per_node), 'MASTER_ADDR': master_addr, 'MASTER_PORT': str(port),
               'OMP_NUM_THREADS': str(max(1, len(share['cpus'])))}
        if conf:
            env['CPU_AFFINITY_CONF'] = conf
        ranks.append({'local_rank': local, 'rank': node_rank * per_node + local, 'npu': local,
                      'numa_node': share['numa_node'],
                      'memory_node': share['numa_node'] if method == 'numactl' else None,
                      'numa_cpus': compact(share['node_cpus']), 'cpus': compact(share['cpus']),
                      'omp_num_threads': max(1, len(share['cpus'])), 'env': env})
    torchrun = ['--nnodes=%d' % len(nodes), '--node_rank=%d' % node_rank, '--nproc_per_node=%d' % per_node,
                '--master_addr=%s' % master_addr, '--master_port=%d' % port]
    msrun = ['--worker_num=%d' % world, '--local_worker_num=%d' % per_node, '--master_addr=%s' % master_addr,
             '--master_port=%d' % port, '--node_rank=%d' % node_rank]
    return {'node': node, 'node_rank': node_rank, 'nnodes': len(nodes), 'nodes': list(nodes),
            'nproc_per_node': per_node, 'world_size': world, 'master_addr': master_addr, 'master_port': port,
            'omp_num_threads_rule': OMP_RULE, 'cpu_affinity_conf': conf,
            'cpu_affinity_ranges': affinity_conf(shares, 1)[2:], 'cpu_affinity_source': AFFINITY_SOURCE,
            'ranks': ranks, 'torchrun': torchrun, 'msrun': msrun}


def launch_document(settings, launch, binding, node):
    """The launch file stage 6 writes beside the map (numa_bind_launch_path), in the order it is written.

    ``settings`` holds the map and launcher paths and the method, ``launch`` {nodes, master_addr, master_port,
    affinity_mode, npus_per_node}."""
    plan = rank_launch(binding, node, launch.get('nodes'), launch.get('master_addr'),
                       launch.get('master_port', DEFAULT_MASTER_PORT), launch.get('npus_per_node'),
                       launch.get('affinity_mode', 0), settings.get('method', 'numactl'))
    document = {'managed_by': 'npuops.ascend (role numa_bind, stage 6)', 'map': settings['map_path'],
                'launcher': settings['launcher_path'], 'method': settings.get('method', 'numactl')}
    document.update(plan)
    return document


def master_address(override, nodes, records, node=None, own_addr=None):
    """The master address: ``override`` when set; else this node's own launch address when it is the first node of
    ``nodes``; else the launch address the first node recorded in its stage 6 record of this run (``records``:
    {node: record}). Raises naming what is missing."""
    if node is not None:
        _node_rank(node, nodes)
    if isinstance(override, str) and override.strip():
        return override.strip()
    if not isinstance(nodes, (list, tuple)) or not nodes:
        _error('the node list %r is not a list of node names' % (nodes,))
    first = nodes[0]
    if node == first and own_addr:
        return own_addr
    record = (records or {}).get(first) if isinstance(records, Mapping) else None
    address = ((record or {}).get('data') or {}).get('launch_addr') if isinstance(record, Mapping) else None
    if not address:
        _error('the master address is unknown: the first node %s has no launch address in its stage 6 record of this '
               'run (it did not run stage 6\'s read step, or its record was left out with --skip-tags). Set '
               'numa_bind_master_addr to the address the nodes reach %s at' % (first, first))
    return address


def launch_problems(launch):
    """The problems of the launch settings of stage 6 (the ``launch`` option of npuops.ascend.stage_numa); empty when
    the launch files are off or the settings are usable."""
    if not isinstance(launch, Mapping) or not launch.get('enabled'):
        return []
    problems = []
    for key in ('path', 'script_path'):
        value = launch.get(key)
        if not isinstance(value, str) or not value.startswith('/') or value.endswith('/'):
            problems.append('numa_bind_launch_%s %r is not an absolute file path' % (key, value))
    port = _whole(launch.get('master_port'))
    if port is None or not 1 <= port <= 65535:
        problems.append('numa_bind_master_port %r is not a port from 1 to 65535' % (launch.get('master_port'),))
    if _whole(launch.get('affinity_mode')) not in AFFINITY_MODES:
        problems.append('numa_bind_cpu_affinity_conf %r is not 0 (off), 1 (coarse) or 2 (fine binding)'
                        % (launch.get('affinity_mode'),))
    grace = _whole(launch.get('grace_seconds', 10))
    if grace is None or not 0 <= grace <= 3600:
        problems.append('numa_bind_launch_grace_seconds %r is outside 0-3600' % (launch.get('grace_seconds'),))
    master = launch.get('master_addr')
    if master not in (None, '') and not _address(master):
        problems.append('numa_bind_master_addr %r is not a host name or address' % (master,))
    return problems
