# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stage 8: the DataLoader advice (dataloader_advice: workers per training rank from the NUMA node the rank is bound to)
and what a node's task of stage 8 decides from io_info's measurement (io_findings, its record and its report)."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import FAIL, WARN, finding

# The method (stage 8): 4 to 8 DataLoader workers per rank.
WORKERS = (4, 8)
# CPUs a rank keeps for itself: its main thread and the task-queue (second-level pipeline) thread, the two hot
# threads torch_npu's fine-grained binding (CPU_AFFINITY_CONF=2) gives a core each.
RESERVED = 2


def _whole(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _compact(cpus):
    cpus = sorted(set(cpus))
    parts = []
    start = prev = None
    for cpu in cpus + [None]:
        if cpu is not None and prev is not None and cpu == prev + 1:
            prev = cpu
            continue
        if start is not None:
            parts.append(str(start) if start == prev else '%d-%d' % (start, prev))
        start = prev = cpu
    return ','.join(parts)


def _line(head, cpus, ranks, reserved, low, high):
    """(workers, text) for ``ranks`` ranks sharing ``cpus`` CPUs."""
    per_rank = cpus // ranks
    workers = max(0, min(high, per_rank - reserved))
    text = ('%s: %d CPUs / %d rank%s = %d per rank, %d of them for the rank\'s main thread and its task-queue thread, so '
            'num_workers=%d' % (head, cpus, ranks, '' if ranks == 1 else 's', per_rank, reserved, workers))
    if workers < low:
        text += (', below the method\'s %d-%d: the NUMA node has too few CPUs for its ranks (fewer ranks per NUMA node, or '
                 'a host with more cores per node)' % (low, high))
    else:
        text += ' (the method: %d-%d per rank)' % (low, high)
    return per_rank, workers, text


def dataloader_advice(numa, npus_per_node=8, cpus=None, shm_mb=None, reserved=RESERVED, workers=WORKERS):
    """DataLoader workers per rank: ``{workers, basis, nodes: [{numa_node, cpus, cpu_list, npus, ranks, cpus_per_rank,
    reserved, workers, text}], shm_mb_per_worker}``."""
    name = 'dataloader_advice'
    npus = _whole(npus_per_node)
    if npus is None or npus < 1:
        raise AnsibleFilterError('%s: npus_per_node must be a whole number of at least 1, got %r' % (name, npus_per_node))
    keep = _whole(reserved)
    if keep is None or keep < 0:
        raise AnsibleFilterError('%s: reserved must be a whole number of at least 0, got %r' % (name, reserved))
    bounds = [_whole(w) for w in workers] if isinstance(workers, (list, tuple)) and len(workers) == 2 else [None]
    if None in bounds or not 1 <= bounds[0] <= bounds[1]:
        raise AnsibleFilterError('%s: workers must be two whole numbers, the lower first, got %r' % (name, workers))
    low, high = bounds
    numa = numa if isinstance(numa, Mapping) else {}
    out = {'workers': None, 'basis': None, 'nodes': [], 'shm_mb_per_worker': None}
    nodes = dict((n.get('id'), n) for n in numa.get('nodes') or [] if isinstance(n, Mapping))
    per_npu = numa.get('npu') if isinstance(numa.get('npu'), Mapping) else {}
    ranks = {}
    for npu in range(npus):
        entry = per_npu.get(str(npu)) or per_npu.get(npu) or {}
        node = _whole(entry.get('numa_node')) if isinstance(entry, Mapping) else None
        if node is not None and node in nodes:
            ranks.setdefault(node, []).append(npu)
    if ranks and not numa.get('failed'):
        out['basis'] = 'numa'
        for node in sorted(ranks):
            node_cpus = [c for c in nodes[node].get('cpus') or [] if _whole(c) is not None]
            served = ', '.join(str(n) for n in ranks[node])
            head = 'NUMA node %d (%d CPUs, %s) serves NPUs %s' % (node, len(node_cpus), _compact(node_cpus), served)
            per_rank, count, text = _line(head, len(node_cpus), len(ranks[node]), keep, low, high)
            out['nodes'].append({'numa_node': node, 'cpus': len(node_cpus), 'cpu_list': _compact(node_cpus),
                                 'npus': ranks[node], 'ranks': len(ranks[node]), 'cpus_per_rank': per_rank, 'reserved': keep,
                                 'workers': count, 'text': text})
    else:
        total = _whole(cpus) or _whole(numa.get('cpus_total'))
        if not total:
            return out
        out['basis'] = 'cpus'
        why = numa.get('msg') or 'no NPU has a NUMA node in the layout'
        per_rank, count, text = _line('no NUMA layout was read (%s)' % why, total, npus, keep, low, high)
        out['nodes'].append({'numa_node': None, 'cpus': total, 'cpu_list': None, 'npus': list(range(npus)), 'ranks': npus,
                             'cpus_per_rank': per_rank, 'reserved': keep, 'workers': count,
                             'text': text + '; bind the ranks (stage 6) and count again per NUMA node'})
    out['workers'] = min(n['workers'] for n in out['nodes'])
    all_ranks = sum(n['ranks'] for n in out['nodes'])
    if isinstance(shm_mb, (int, float)) and not isinstance(shm_mb, bool) and shm_mb > 0 and out['workers'] and all_ranks:
        out['shm_mb_per_worker'] = round(float(shm_mb) / (all_ranks * out['workers']), 1)
    return out


# ---- stage 8 on a node: the findings of io_info's measurement, the node's record and report --------------------------

IO_KEYS = ('shm', 'vmstat', 'iostat', 'fio', 'cpus')


def _text(value):
    """A value as a message shows it (None as 'None', a float with its decimal point)."""
    return str(value)


def _disk_findings(iostat, add, disk_util_max_pct, disk_await_max_ms):
    """Per block device of iostat -x over the window: a mean %util at or above its limit (saturated, for a device that
    serves requests one after another), a mean await above its limit; warnings (0 = not judged)."""
    for disk in iostat.get('devices') or []:
        name = disk.get('device')
        util = disk.get('util_mean_pct')
        if float(disk_util_max_pct) > 0 and util is not None and util >= float(disk_util_max_pct):
            add('disk_util', util, float(disk_util_max_pct),
                'disk %s is %s %% busy (iostat -x %%util, mean of %s samples, max %s %%), at or above the limit of %s %%: '
                'the disk is saturated while the job runs (sysstat iostat(1): saturation when %%util is close to 100 %% '
                'for a device serving requests serially)' % (
                    name, _text(util), _text(disk.get('samples')), _text(disk.get('util_max_pct')),
                    _text(disk_util_max_pct)), WARN)
        wait = disk.get('await_mean_ms')
        if float(disk_await_max_ms) > 0 and wait is not None and wait > float(disk_await_max_ms):
            add('disk_await', wait, float(disk_await_max_ms),
                'disk %s: requests wait %s ms on average (iostat -x await, r_await %s ms, w_await %s ms, max %s ms), above '
                'the limit of %s ms' % (name, _text(wait), _text(disk.get('r_await_mean_ms')),
                                        _text(disk.get('w_await_mean_ms')), _text(disk.get('await_max_ms')),
                                        _text(disk_await_max_ms)), WARN)


def _fio_findings(fio, add, fio_min_mb_s, fio_min_iops, fio_max_lat_ms):
    """The fio job group against its floors (bandwidth, IOPS) and its ceiling (mean latency); 0 = not judged."""
    if not fio.get('ran'):
        return
    labels = (('numjobs', '%s jobs'), ('iodepth', 'iodepth %s'), ('block_size', 'bs %s'), ('ioengine', '%s'))
    shape = ', '.join(text % fio[key] for key, text in labels if fio.get(key) is not None)
    what = 'fio %s%s on %s' % (_text(fio.get('rw') or 'read'), ' (%s)' % shape if shape else '', _text(fio.get('file')))
    bandwidth = fio.get('bw_mb_s', fio.get('read_bw_mb_s'))
    if float(fio_min_mb_s) > 0 and bandwidth is not None and bandwidth < float(fio_min_mb_s):
        add('fio_bw', bandwidth, float(fio_min_mb_s), '%s: aggregate bandwidth %s MB/s is below the floor of %s MB/s'
            % (what, _text(bandwidth), _text(fio_min_mb_s)), WARN)
    iops = fio.get('iops')
    if float(fio_min_iops) > 0 and iops is not None and iops < float(fio_min_iops):
        add('fio_iops', iops, float(fio_min_iops), '%s: aggregate %s IOPS is below the floor of %s IOPS'
            % (what, _text(iops), _text(fio_min_iops)), WARN)
    latency = fio.get('lat_mean_ms')
    if float(fio_max_lat_ms) > 0 and latency is not None and latency > float(fio_max_lat_ms):
        add('fio_lat', latency, float(fio_max_lat_ms), '%s: mean latency %s ms (99th percentile completion %s ms) is above '
            'the limit of %s ms' % (what, _text(latency), _text(fio.get('clat_p99_ms')), _text(fio_max_lat_ms)), WARN)


def io_findings(io, host, shm_min_gb=1, shm_max_used_pct=90, iowait_max_pct=5, wa_max_pct=2, fio_min_mb_s=0,
                disk_util_max_pct=95, disk_await_max_ms=20, fio_min_iops=0, fio_max_lat_ms=0):
    """The findings of stage 8 from an io_info result kept with ``failed_when: false``: /dev/shm mounted, large enough
    and not too full; the mean iowait and vmstat wa under their limits (a warning when not measured); per disk the mean
    %util and await of iostat -x under their limits (warnings); the optional fio job group (warnings below its
    bandwidth and IOPS floors or above its latency limit, 0 = not judged); io_info's own errors as warnings. A result
    without a measurement of /dev/shm is one failure. The limits are the role's values as given (their text is in the
    messages)."""
    io = io if isinstance(io, Mapping) else {}
    found = []

    def add(check, value, expected, text, severity=FAIL):
        found.append(finding(host, None, check, value, expected, text, severity))

    if 'shm' not in io:
        add('io_info', None, 'a measurement', 'io_info failed: %s' % _text(io.get('msg', 'no result')))
        return found
    shm = io.get('shm') or {}
    limit_mb = float(shm_min_gb) * 1024
    if not shm.get('mounted'):
        add('shm_mounted', False, True, '%s is not mounted (expected a tmpfs of at least %s GB for the DataLoader workers)'
            % (shm.get('path'), _text(shm_min_gb)))
    elif shm.get('size_mb') is not None and shm['size_mb'] < limit_mb:
        add('shm_size', shm['size_mb'], limit_mb, '%s is %s MB, below the minimum of %s GB (%s MB)'
            % (shm.get('path'), _text(shm['size_mb']), _text(shm_min_gb), _text(round(limit_mb, 1))))
    if shm.get('mounted') and shm.get('used_pct') is not None and shm['used_pct'] > float(shm_max_used_pct):
        add('shm_used', shm['used_pct'], float(shm_max_used_pct), '%s is %s %% used (%s MB free), above the limit of %s %%'
            % (shm.get('path'), _text(shm['used_pct']), _text(shm.get('free_mb')), _text(shm_max_used_pct)))
    iostat = io.get('iostat') or {}
    iowait = iostat.get('iowait_mean_pct')
    if iowait is None:
        add('iowait', None, float(iowait_max_pct), 'iowait not measured (iostat, package sysstat, missing or failed)', WARN)
    elif iowait >= float(iowait_max_pct):
        add('iowait', iowait, float(iowait_max_pct), 'iowait %s %% (mean of %s samples, max %s %%) is not under the limit of '
            '%s %%' % (_text(iowait), _text(iostat.get('samples')), _text(iostat.get('iowait_max_pct')), _text(iowait_max_pct)))
    vmstat = io.get('vmstat') or {}
    wa = vmstat.get('wa_mean_pct')
    if wa is None:
        add('wa', None, float(wa_max_pct), 'vmstat wa not measured (vmstat, package procps, missing or failed)', WARN)
    elif wa > float(wa_max_pct):
        add('wa', wa, float(wa_max_pct), 'vmstat wa %s %% (mean of %s samples, max %s %%) is above the limit of %s %%'
            % (_text(wa), _text(vmstat.get('samples')), _text(vmstat.get('wa_max_pct')), _text(wa_max_pct)))
    _disk_findings(iostat, add, disk_util_max_pct, disk_await_max_ms)
    _fio_findings(io.get('fio') or {}, add, fio_min_mb_s, fio_min_iops, fio_max_lat_ms)
    for error in io.get('errors') or []:
        add('io_info', None, None, (error or {}).get('msg'), WARN)
    return found


def io_record_data(io, advice):
    """The ``data`` of a node's record of stage 8: what io_info measured and the DataLoader advice."""
    io = io if isinstance(io, Mapping) else {}
    return {'io': dict((key, io[key]) for key in IO_KEYS if key in io), 'dataloader': advice}


def io_report(io, advice, findings, host, run_id, check_mode, warnings=None):
    """The node's JSON report of stage 8: what io_info measured (``warnings``: what it warned of), the advice, the
    findings."""
    io = io if isinstance(io, Mapping) else {}
    out = {'host': host, 'run': run_id, 'check_mode': bool(check_mode)}
    out.update((key, io.get(key)) for key in IO_KEYS)
    out.update(dataloader=advice, warnings=list(warnings or []), findings=list(findings))
    return out


def shm_for_advice(io):
    """The size of /dev/shm the advice divides among the workers: only when it is mounted."""
    shm = (io if isinstance(io, Mapping) else {}).get('shm')
    return shm.get('size_mb') if isinstance(shm, Mapping) and shm.get('mounted') else None
