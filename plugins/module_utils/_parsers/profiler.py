# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers of the torch_npu profiler's ASCEND_PROFILER_OUTPUT files and of msprof-analyze's cluster files.

Standard library only, Python 3.9 (runs on the node). Every CSV column is found BY ITS HEADER (spaces and case left
out of the match), so columns added over the versions (a leading ``Device_id``, ``Preparing``, ``OP State``,
``Step Id``) move nothing. The traps the parsers handle:

- Units: the CSV files give microseconds, the communication JSON files milliseconds; every figure returned here is in
  microseconds (``*_us``) whatever the file said.
- ``Device_id`` of step_trace_time.csv is the device the rank ran on, not the rank: the rank comes from the
  profiler's directory (``profiler_info_<rank>.json``) or from the cluster file's ``Index``.
- The step time is ``Stage + Bubble`` (Stage: the step without the receive operators, Bubble: the receive operators),
  which equals ``Computing + Communication(Not Overlapped) + Free``; an old file without Stage uses the sum.
- Communication kernels are typed ``HCCL`` (older CANN) or ``COMMUNICATION`` (newer) in ``Accelerator Core`` and
  their names change shape over the versions (``hcom_allReduce__445_2``, ``hcom_allReduce__606_0_1``): a kernel is
  communication when its core type is one of those or its name starts with ``hcom_``, never by a longer pattern.
- cluster_step_trace_time.csv adds ``stage`` rows whose figures are the MAXIMA over a pipeline stage's ranks: they are
  returned apart, never as a rank.
- The communication matrix files hold aggregates (``-top1``, ``-middle``, ``-bottom1..3``, ``-total`` in the cluster
  file, ``Total Op Info`` in the per-rank file) and the local ``i-i`` link (a copy inside one NPU): only one figure
  per link (the total when present) is returned, and the local link is left out.
"""

from __future__ import annotations

import csv
import io
import math
import re

COMM_CORE_TYPES = ('HCCL', 'COMMUNICATION')
COMPUTE_CORE_TYPES = ('AI_CORE', 'AI_VECTOR_CORE', 'MIX_AIC', 'MIX_AIV')
COMM_PREFIX = 'hcom_'
TOTAL_OP_INFO = 'total op info'

# step_trace_time.csv / cluster_step_trace_time.csv: our key -> the header (matched without spaces and case)
STEP_COLUMNS = (
    ('computing_us', 'Computing'),
    ('comm_not_overlapped_us', 'Communication(Not Overlapped)'),
    ('overlapped_us', 'Overlapped'),
    ('communication_us', 'Communication'),
    ('free_us', 'Free'),
    ('stage_us', 'Stage'),
    ('bubble_us', 'Bubble'),
    ('comm_not_overlapped_excl_recv_us', 'Communication(Not Overlapped and Exclude Receive)'),
    ('preparing_us', 'Preparing'),
)
OP_STAT_COLUMNS = (
    ('count', 'Count'),
    ('total_us', 'Total Time(us)'),
    ('min_us', 'Min Time(us)'),
    ('avg_us', 'Avg Time(us)'),
    ('max_us', 'Max Time(us)'),
    ('ratio_pct', 'Ratio(%)'),
)


class ProfilerParseError(ValueError):
    """A file that is not the profiler's output (says which file and what is missing)."""


def header_key(text):
    """A header as it is matched: no spaces, lower case (``Communication (Not Overlapped)`` = ``...(not overlapped)``)."""
    return re.sub(r'\s+', '', str(text or '')).lower()


def number(text):
    """A float from a CSV cell (``1736413971558972.912\\t`` and `` 12 `` included); None for N/A, empty or text."""
    value = str(text if text is not None else '').strip().strip('"').strip()
    if not value or value.upper() in ('N/A', 'NA', 'NONE', 'NULL', '-'):
        return None
    try:
        result = float(value)
    except ValueError:
        return None
    return result if not math.isnan(result) and not math.isinf(result) else None


def read_table(text, what, required=()):
    """``(headers, rows)``: the CSV's rows as dicts keyed by header_key; ``required`` headers must be there."""
    if text is None or not str(text).strip():
        raise ProfilerParseError('%s is empty' % what)
    reader = csv.reader(io.StringIO(str(text).lstrip('\ufeff')))
    rows = [row for row in reader if any(cell.strip() for cell in row)]
    if not rows:
        raise ProfilerParseError('%s has no header' % what)
    headers = [header_key(cell) for cell in rows[0]]
    missing = [name for name in required if header_key(name) not in headers]
    if missing:
        raise ProfilerParseError('%s has no column %s (header: %s)' % (what, ', '.join(missing), ','.join(rows[0])))
    table = []
    for row in rows[1:]:
        table.append(dict((headers[index], cell) for index, cell in enumerate(row) if index < len(headers)))
    return headers, table


def _step_figures(row):
    out = {}
    for key, header in STEP_COLUMNS:
        out[key] = number(row.get(header_key(header)))
    stage, bubble = out['stage_us'], out['bubble_us']
    parts = [out['computing_us'], out['comm_not_overlapped_us'], out['free_us']]
    if stage is not None and stage > 0:
        out['step_time_us'] = stage + (bubble or 0.0)
        out['step_time_from'] = 'Stage + Bubble'
    elif all(value is not None for value in parts):
        out['step_time_us'] = sum(parts)
        out['step_time_from'] = 'Computing + Communication(Not Overlapped) + Free'
    else:
        out['step_time_us'] = None
        out['step_time_from'] = None
    return out


def _ranks_of(index):
    """``(0, 1, 2)`` -> [0, 1, 2]; ``3`` -> [3]; text that holds no number -> []."""
    return [int(item) for item in re.findall(r'-?[0-9]+', str(index or ''))]


def parse_step_trace(text, what='step_trace_time.csv'):
    """Rows of step_trace_time.csv (torch_npu, one rank) or cluster_step_trace_time.csv (msprof-analyze).

    Each row: ``step`` (text as written, '' when the profiler wrote none), ``kind`` (``rank`` for a rank's row,
    ``stage`` for a cluster file's maxima over a stage's ranks, None in a per-rank file), ``rank`` (the cluster file's
    Index for a rank row, else None), ``ranks`` (a stage row's ranks), ``device_id`` (per-rank file), the figures of
    STEP_COLUMNS in microseconds, and ``step_time_us`` (Stage + Bubble)."""
    headers, table = read_table(text, what, required=('Step', 'Computing', 'Communication(Not Overlapped)', 'Free'))
    cluster = 'type' in headers and 'index' in headers
    rows = []
    for raw in table:
        row = {'step': str(raw.get('step') or '').strip(), 'kind': None, 'rank': None, 'ranks': [],
               'device_id': None}
        if cluster:
            kind = str(raw.get('type') or '').strip().lower()
            row['kind'] = kind
            ranks = _ranks_of(raw.get('index'))
            if kind == 'rank':
                row['rank'] = ranks[0] if ranks else None
                row['ranks'] = ranks[:1]
            else:
                row['ranks'] = ranks
        elif 'device_id' in headers:
            device = number(raw.get('device_id'))
            row['device_id'] = int(device) if device is not None else None
        row.update(_step_figures(raw))
        if row['computing_us'] is None and row['step_time_us'] is None:
            continue  # a line that holds no figure (a trailing note)
        rows.append(row)
    if not rows:
        raise ProfilerParseError('%s has a header but no row of figures' % what)
    return rows


def is_comm_kernel(name, core_type):
    """A communication kernel: core type HCCL (older CANN) or COMMUNICATION (newer), or a name that starts hcom_."""
    return str(core_type or '').strip().upper() in COMM_CORE_TYPES or str(name or '').strip().startswith(COMM_PREFIX)


def parse_kernel_details(text, what='kernel_details.csv'):
    """Kernels of kernel_details.csv: ``name``, ``type``, ``core`` (Accelerator Core), ``step`` (Step Id or ''),
    ``start_us``, ``duration_us``, ``wait_us``, ``comm`` (is_comm_kernel), ``compute`` (an AI Core / Vector / mixed
    kernel). Rows without a start or a duration are left out."""
    _headers, table = read_table(text, what, required=('Name', 'Accelerator Core', 'Start Time(us)', 'Duration(us)'))
    kernels = []
    for raw in table:
        start, duration = number(raw.get(header_key('Start Time(us)'))), number(raw.get(header_key('Duration(us)')))
        if start is None or duration is None:
            continue
        name = str(raw.get('name') or '').strip()
        core = str(raw.get(header_key('Accelerator Core')) or '').strip().upper()
        comm = is_comm_kernel(name, core)
        kernels.append({'name': name, 'type': str(raw.get('type') or '').strip(), 'core': core,
                        'step': str(raw.get(header_key('Step Id')) or '').strip(), 'start_us': start,
                        'duration_us': duration, 'wait_us': number(raw.get(header_key('Wait Time(us)'))),
                        'comm': comm, 'compute': (not comm) and core in COMPUTE_CORE_TYPES})
    return kernels


def busy_us(intervals):
    """Time covered by the union of ``(start, duration)`` intervals (overlapping kernels counted once)."""
    total, end = 0.0, None
    for start, duration in sorted((s, d) for s, d in intervals if d and d > 0):
        stop = start + duration
        if end is None or start >= end:
            total += duration
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


def kernel_summary(kernels, top=5):
    """Per step (Step Id; '' when the file has none): ``compute_busy_us`` (union of the compute kernels' time),
    ``comm_busy_us`` (union of the communication kernels' time), kernel counts, and the ``top`` communication
    operators by total duration (an hcom_ name folded to its operator: ``hcom_allReduce__445_2`` -> ``hcom_allReduce``)."""
    steps = {}
    for kernel in kernels:
        steps.setdefault(kernel['step'], []).append(kernel)
    out = {}
    for step, items in steps.items():
        comm_ops = {}
        for kernel in items:
            if kernel['comm']:
                label = _op_type(kernel['name']) if kernel['name'].startswith(COMM_PREFIX) else (
                    kernel['type'] or kernel['name'])
                entry = comm_ops.setdefault(label, {'op': label, 'count': 0, 'total_us': 0.0})
                entry['count'] += 1
                entry['total_us'] += kernel['duration_us']
        ranked = sorted(comm_ops.values(), key=lambda item: -item['total_us'])[:top]
        out[step] = {
            'kernels': len(items),
            'compute_kernels': sum(1 for k in items if k['compute']),
            'comm_kernels': sum(1 for k in items if k['comm']),
            'compute_busy_us': busy_us((k['start_us'], k['duration_us']) for k in items if k['compute']),
            'comm_busy_us': busy_us((k['start_us'], k['duration_us']) for k in items if k['comm']),
            'top_comm_ops': [dict(item, total_us=round(item['total_us'], 3)) for item in ranked],
        }
    return out


def parse_op_statistic(text, what='op_statistic.csv'):
    """Rows of op_statistic.csv: ``op_type``, ``core`` (Core Type), ``device_id`` (when written), the figures of
    OP_STAT_COLUMNS (times in microseconds) and ``comm`` (is_comm_kernel on the type and core)."""
    headers, table = read_table(text, what, required=('OP Type', 'Core Type', 'Total Time(us)'))
    rows = []
    for raw in table:
        total = number(raw.get(header_key('Total Time(us)')))
        if total is None:
            continue
        op_type = str(raw.get(header_key('OP Type')) or '').strip()
        core = str(raw.get(header_key('Core Type')) or '').strip().upper()
        row = {'op_type': op_type, 'core': core, 'comm': is_comm_kernel(op_type, core), 'device_id': None}
        if 'device_id' in headers:
            device = number(raw.get('device_id'))
            row['device_id'] = int(device) if device is not None else None
        for key, header in OP_STAT_COLUMNS:
            row[key] = number(raw.get(header_key(header)))
        rows.append(row)
    return rows


def op_statistic_busy_us(rows):
    """Sum of Total Time(us) of the compute operators (AI Core, Vector, mixed) of op_statistic.csv: an upper bound of
    the busy time (operators on different streams can overlap; kernel_details.csv gives the union)."""
    return sum(row['total_us'] for row in rows if not row['comm'] and row['core'] in COMPUTE_CORE_TYPES)


def _ms_to_us(value):
    figure = number(value)
    return None if figure is None else figure * 1000.0


def _time_info(entry):
    info = entry.get('Communication Time Info') if isinstance(entry, dict) else None
    if not isinstance(info, dict):
        return None
    out = {}
    for key, name in (('elapse_us', 'Elapse Time(ms)'), ('transit_us', 'Transit Time(ms)'),
                      ('wait_us', 'Wait Time(ms)'), ('synchronization_us', 'Synchronization Time(ms)'),
                      ('idle_us', 'Idle Time(ms)')):
        out[key] = _ms_to_us(info.get(name))
    bandwidth = {}
    for transport, figures in (entry.get('Communication Bandwidth Info') or {}).items():
        if isinstance(figures, dict):
            bandwidth[str(transport)] = {'size_mb': number(figures.get('Transit Size(MB)')),
                                         'transit_us': _ms_to_us(figures.get('Transit Time(ms)')),
                                         'bandwidth_gbs': number(figures.get('Bandwidth(GB/s)'))}
    out['bandwidth'] = bandwidth
    return out


def _walk_ops(node, path, found):
    """Entries holding ``Communication Time Info`` under ``node``, with the keys that lead to them."""
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if not isinstance(value, dict):
            continue
        if 'Communication Time Info' in value:
            found.append((path + [str(key)], value))
        else:
            _walk_ops(value, path + [str(key)], found)


def _op_type(name):
    """``hcom_allReduce__445_2`` / ``hcom_allReduce__606_0_1@123`` -> ``hcom_allReduce``; other names as written."""
    base = str(name).split('@', maxsplit=1)[0]
    return base.split('__')[0] if base.startswith(COMM_PREFIX) else base


def parse_communication(data, what='communication.json'):
    """Operators of a rank's communication.json (``{step: {collective|p2p: {op: {...}}}}``): ``step``, ``group``,
    ``op``, ``op_type``, and the Communication Time Info figures in MICROSECONDS (the file says ms). The
    ``Total Op Info`` aggregate is left out."""
    if not isinstance(data, dict):
        raise ProfilerParseError('%s is not a JSON object' % what)
    found = []
    _walk_ops(data, [], found)
    ops = []
    for path, entry in found:
        name = path[-1]
        if name.strip().lower() == TOTAL_OP_INFO:
            continue
        figures = _time_info(entry)
        ops.append(dict(figures, step=path[0] if len(path) > 1 else '', group=path[1] if len(path) > 2 else '',
                        op=name, op_type=_op_type(name)))
    return ops


def parse_cluster_communication(data, what='cluster_communication.json'):
    """Operators of msprof-analyze's cluster_communication.json (``{group: {step: {op: {rank: {...}}}}}``): one
    entry per operator and rank, with ``rank`` and ``ranks_group`` added; times in microseconds; aggregates (a key
    ``Total Op Info``) left out."""
    if not isinstance(data, dict):
        raise ProfilerParseError('%s is not a JSON object' % what)
    ops = []
    for group, steps in data.items():
        for step, operators in (steps or {}).items() if isinstance(steps, dict) else ():
            for name, ranks in (operators or {}).items() if isinstance(operators, dict) else ():
                if str(name).strip().lower() == TOTAL_OP_INFO or not isinstance(ranks, dict):
                    continue
                for rank, entry in ranks.items():
                    figures = _time_info(entry)
                    if figures is None or not str(rank).strip().lstrip('-').isdigit():
                        continue
                    ops.append(dict(figures, group=str(group), ranks_group=_ranks_of(group), step=str(step),
                                    op=str(name), op_type=_op_type(name), rank=int(rank)))
    return ops


LINK_RE = re.compile(r'^\s*(-?[0-9]+)\s*-\s*(-?[0-9]+)\s*$')


def _link_tables(node, path, found):
    if not isinstance(node, dict):
        return
    links = dict((key, value) for key, value in node.items() if LINK_RE.match(str(key)) and isinstance(value, dict))
    if links:
        found.append((path, links))
        return
    for key, value in node.items():
        _link_tables(value, path + [str(key)], found)


def parse_communication_matrix(data, what='communication_matrix.json'):
    """Links of communication_matrix.json (a rank) or cluster_communication_matrix.json: ``src``, ``dst``,
    ``transport``, ``size_mb``, ``transit_us`` (the file says ms), ``bandwidth_gbs``, ``op`` and ``step``.

    Only one figure per operator and link: where the file holds aggregates (``<op>-top1@g``, ``-middle``,
    ``-bottom1..3``, ``-total``) only ``-total`` is kept; ``Total Op Info`` is left out; the local link ``i-i``
    (a copy inside one NPU, transport LOCAL) is left out."""
    if not isinstance(data, dict):
        raise ProfilerParseError('%s is not a JSON object' % what)
    found = []
    _link_tables(data, [], found)
    aggregated = any(re.search(r'-total@|-total$', path[-1]) for path, _links in found if path)
    out = []
    for path, links in found:
        op = path[-1] if path else ''
        if op.strip().lower() == TOTAL_OP_INFO:
            continue
        if aggregated and not re.search(r'-total@|-total$', op):
            continue
        for link, figures in links.items():
            src, dst = (int(part) for part in LINK_RE.match(link).groups())
            if src == dst:
                continue
            out.append({'src': src, 'dst': dst, 'transport': str(figures.get('Transport Type') or ''),
                        'size_mb': number(figures.get('Transit Size(MB)')),
                        'transit_us': _ms_to_us(figures.get('Transit Time(ms)')),
                        'bandwidth_gbs': number(figures.get('Bandwidth(GB/s)')), 'op': op,
                        'group': next((p for p in path[:-1] if p.startswith('(')), ''),
                        'step': next((p for p in path[:-1] if not p.startswith('(') and p not in ('collective', 'p2p')),
                                     '')})
    return out


def _pct(part, whole):
    return round(100.0 * part / whole, 2) if part is not None and whole else None


def _step_key(step):
    value = number(step)
    return str(int(value)) if value is not None else str(step or '').strip()


def rank_split(step_rows, kernels=None, op_stats=None, comm_ops=None, top=5):
    """The split of each profiled step of one rank (step_trace_time.csv rows), with the AI Core utilisation.

    Per step: ``computing_us``, ``comm_not_overlapped_us``, ``overlapped_us``, ``communication_us``, ``free_us``,
    ``step_time_us`` (Stage + Bubble), the shares of the step in percent (``compute_share_pct``,
    ``comm_share_pct`` = not-overlapped communication, ``free_share_pct`` = host/IO or idle), and
    ``aicore_util_pct``: the time at least one compute kernel (AI Core, AI Vector, mixed) runs on the NPU over the step
    time, from kernel_details.csv (union of the kernels' intervals of the step: ``aicore_from`` kernel_details), else
    from op_statistic.csv (sum of the compute operators' Total Time over the profiled steps' time, capped at 100:
    ``aicore_from`` op_statistic), else null. ``top_comm_ops``: from communication.json (elapse), else
    kernel_details.csv."""
    summary = kernel_summary(kernels or [], top) if kernels else {}
    single = len(step_rows) == 1
    total_time = sum(row['step_time_us'] or 0.0 for row in step_rows)
    op_busy = op_statistic_busy_us(op_stats) if op_stats else None
    comm_top = {}
    for op in comm_ops or []:
        key = _step_key(re.sub(r'^step', '', str(op.get('step') or ''), flags=re.I))
        fresh = {'op': op['op_type'], 'count': 0, 'total_us': 0.0}
        entry = comm_top.setdefault(key, {}).setdefault(op['op_type'], fresh)
        entry['count'] += 1
        entry['total_us'] += op.get('elapse_us') or 0.0
    out = []
    for row in step_rows:
        step_time = row.get('step_time_us')
        keys = ('step', 'rank', 'device_id', 'computing_us', 'comm_not_overlapped_us', 'overlapped_us',
                'communication_us', 'free_us', 'stage_us', 'bubble_us', 'step_time_us')
        item = dict((key, row.get(key)) for key in keys)
        item['compute_share_pct'] = _pct(row.get('computing_us'), step_time)
        item['comm_share_pct'] = _pct(row.get('comm_not_overlapped_us'), step_time)
        item['free_share_pct'] = _pct(row.get('free_us'), step_time)
        busy, source = None, None
        if summary:
            if single:
                busy = sum(entry['compute_busy_us'] for entry in summary.values())
            else:
                entry = summary.get(_step_key(row.get('step')))
                busy = entry['compute_busy_us'] if entry else None
            source = 'kernel_details' if busy is not None else None
        if busy is None and op_busy is not None and total_time:
            busy, source = op_busy * (step_time or 0.0) / total_time, 'op_statistic'
        util = _pct(busy, step_time)
        item['aicore_util_pct'] = min(100.0, util) if util is not None else None
        item['aicore_from'] = source if util is not None else None
        ops = comm_top.get(_step_key(row.get('step'))) or (next(iter(comm_top.values())) if len(comm_top) == 1 else None)
        if ops:
            ranked = sorted(ops.values(), key=lambda entry: -entry['total_us'])[:top]
            item['top_comm_ops'] = [dict(entry, total_us=round(entry['total_us'], 3)) for entry in ranked]
            item['top_comm_from'] = 'communication.json'
        elif summary:
            entry = summary.get(_step_key(row.get('step'))) or (next(iter(summary.values())) if single else None)
            item['top_comm_ops'] = entry['top_comm_ops'] if entry else []
            item['top_comm_from'] = 'kernel_details' if entry else None
        else:
            item['top_comm_ops'], item['top_comm_from'] = [], None
        out.append(item)
    return out
