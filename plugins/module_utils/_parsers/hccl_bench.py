# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for AllReduce benchmark output: CANN ``hccl_test`` and PyTorch all-reduce scripts.

``hccl_test`` prints the algorithm bandwidth only (decimal GB/s of the per-NPU payload);
the bus bandwidth of an AllReduce over ``n`` ranks is ``algbw * busbw_factor(n)``.
"""

from __future__ import annotations

import re

from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import (
    is_digits,
    keep_extra,
    lines_of,
    to_float,
    to_int,
    to_number,
)

# hccl_test's result columns: header label (without its colon) -> key and how its value is read
_HCCL_COLUMNS = {'data_size(Bytes)': ('data_size_bytes', to_int), 'aveg_time(us)': ('avg_time_us', to_float),
                 'avg_time(us)': ('avg_time_us', to_float), 'alg_bandwidth(GB/s)': ('algbw_gb_s', to_float),
                 'check_result': ('check_result', lambda word: word if re.match(r'^\w+$', word) else None)}
_HCCL_LAYOUT = ['data_size(Bytes)', 'aveg_time(us)', 'alg_bandwidth(GB/s)', 'check_result']
_HCCL_ERROR_RE = re.compile(r'(error|Error|ERROR|failed|Fatal|retcode|return err|cannot open shared object)')
_MPI_STACK_RE = re.compile(r'^\w+\([0-9]+\)\.*:')


def busbw_factor(ranks):
    """AllReduce bus bandwidth factor 2(n-1)/n; 0.0 for fewer than two ranks."""
    ranks = int(ranks)
    return 2.0 * (ranks - 1) / ranks if ranks > 1 else 0.0


def parse_hccl_test(text):
    """Parse the output of CANN ``hccl_test`` (``all_reduce_test`` and friends).

    Sample::

        the minbytes is 8192, maxbytes is 67108864, iters is 20, warmup_iters is 5
        data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:
        524288            | 1000.00        | 0.52429              | success

    Returns ``{'minbytes': 8192, 'maxbytes': 67108864, 'iters': 20, 'warmup_iters': 5,
    'rows': [{'data_size_bytes': 524288, 'avg_time_us': 1000.0, 'algbw_gb_s': 0.52429,
    'check_result': 'success'}], 'failed_ranks': [], 'errors': [], 'warnings': [],
    'retcode': None}``. The result columns are read by their header labels in the order printed (without a
    header, in the sample's order); both ``aveg_time`` and ``avg_time`` and any spacing around ``|`` are
    accepted, and a column this parser does not know is kept under ``extra`` keyed by its label (without the
    colon). ``local rank_id N, check result failed, ...`` lines go to ``failed_ranks``; tool, HCCL and MPI error
    lines to ``errors`` (``retcode`` from ``retcode: N``). A row with a malformed number, or more or fewer cells
    than the header, is not a row (it ends in ``unparsed``).
    """
    out = {'minbytes': None, 'maxbytes': None, 'iters': None, 'warmup_iters': None, 'rows': [], 'failed_ranks': [],
           'errors': [], 'warnings': [], 'retcode': None, 'unparsed': []}
    labels = _HCCL_LAYOUT
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped:
            continue
        params = re.match(r'^the minbytes is ([0-9]+), maxbytes is ([0-9]+), iters is ([0-9]+), warmup_iters is ([0-9]+)$', stripped)
        numbers = [to_int(g) for g in params.groups()] if params else [None]
        if None not in numbers:
            out['minbytes'], out['maxbytes'], out['iters'], out['warmup_iters'] = numbers
            continue
        cells = [cell.strip() for cell in stripped.split('|')]
        if len(cells) > 1 and all(cell.endswith(':') for cell in cells) and any(cell.startswith('data_size') for cell in cells):
            labels = [cell[:-1].strip() for cell in cells]
            continue
        size_at = labels.index('data_size(Bytes)') if 'data_size(Bytes)' in labels else 0
        if len(cells) > 1 and any(_leading_digits(cells[at]) for at in (0, size_at) if at < len(cells)):
            row = _hccl_row(cells, labels)
            if row is None:
                out['unparsed'].append(line)
            else:
                out['rows'].append(row)
            continue
        rank = re.match(r'^local rank_id ([0-9]+), check result failed,\s*(.*)$', stripped)
        entry = _hccl_row([cell.strip() for cell in rank.group(2).split('|')], labels) if rank and to_int(rank.group(1)) is not None else None
        if entry is not None:
            entry['rank'] = to_int(rank.group(1))
            out['failed_ranks'].append(entry)
            continue
        if stripped.startswith('Warning:'):
            out['warnings'].append(stripped)
            continue
        if _HCCL_ERROR_RE.search(stripped) or _MPI_STACK_RE.match(stripped):
            out['errors'].append(stripped)
            code = re.search(r'retcode:\s*(-?[0-9]+)', stripped)
            if code and to_int(code.group(1)) is not None:
                out['retcode'] = to_int(code.group(1))
            continue
        out['unparsed'].append(line)
    return out


def _leading_digits(cell):
    words = cell.split()
    return bool(words) and is_digits(words[0])


def _hccl_row(cells, labels):
    """The row of result cells read by the column labels; None when the cell count differs from the header or a
    known value is malformed ('1.2.3')."""
    if len(cells) != len(labels):
        return None
    row = {'data_size_bytes': None, 'avg_time_us': None, 'algbw_gb_s': None, 'check_result': None}
    for label, cell in zip(labels, cells):
        known = _HCCL_COLUMNS.get(label)
        if known is None:
            keep_extra(row, label, to_number(cell))
            continue
        value = known[1](cell)
        if value is None:
            return None
        row[known[0]] = value
    if row['data_size_bytes'] is None:
        return None
    return row


_PREFIX_RE = re.compile(r'^\[[^\]]*\]:')
_BW_RE = re.compile(r'^(algbw|busbw):\s*([0-9.]+)\s*GBps\s*\(\s*([0-9.]+)\s*Gbps\s*\)$')
_TABLE_KEYS = ('data_size_mb', 'avg_us', 'min_us', 'max_us', 'p50_us', 'p95_us', 'p99_us', 'algbw_gb_s', 'busbw_gb_s')
_TABLE_LAYOUT = ['data_size(MB)', 'avg(us)', 'min(us)', 'max(us)', 'p50(us)', 'p95(us)', 'p99(us)', 'algbw(GB/s)', 'busbw(GB/s)']
_TABLE_LABELS = dict(zip(_TABLE_LAYOUT, _TABLE_KEYS))


def parse_torch_allreduce(text):
    """Parse the output of a PyTorch all-reduce bandwidth script (torch_npu + HCCL).

    Sample (the common ``all_reduce_bench`` text; launcher prefixes like ``[host:0]:`` are
    removed)::

        The average bandwidth of all_reduce with a 4.0GB payload (20 trials, 4 ranks):
         algbw: 218.635 GBps (1749.1 Gbps)
         busbw: 327.952 GBps (2623.6 Gbps)

    Returns ``{'op': 'all_reduce', 'payload_gb': 4.0, 'trials': 20, 'ranks': 4,
    'algbw_gb_s': 218.635, 'busbw_gb_s': 327.952, 'rows': []}``. The table form
    (``Op: allreduce | Shape: ... | Ranks: 8`` then ``data_size(MB) avg(us) ... busbw(GB/s)``
    and one row of numbers) fills ``rows`` with ``data_size_mb``, ``avg_us`` ...
    ``busbw_gb_s`` and the first row's bandwidths at the top level. Its columns are read by their header
    labels; a column this parser does not know is kept under ``extra`` keyed by its label, and a line with
    more or fewer numbers than the header goes to ``unparsed``.
    """
    out = {'op': None, 'payload_gb': None, 'trials': None, 'ranks': None, 'algbw_gb_s': None, 'busbw_gb_s': None,
           'rows': [], 'unparsed': []}
    labels = _TABLE_LAYOUT
    for line in lines_of(text):
        stripped = _PREFIX_RE.sub('', line).strip()
        if not stripped or re.match(r'^=+$', stripped):
            continue
        head = re.match(r'^The average bandwidth of (\w+) with a ([0-9.]+)\s*GB payload \(([0-9]+) trials, ([0-9]+) ranks\):$', stripped)
        values = (to_float(head.group(2)), to_int(head.group(3)), to_int(head.group(4))) if head else (None,)
        if None not in values:
            out['op'] = head.group(1)
            out['payload_gb'], out['trials'], out['ranks'] = values
            continue
        bandwidth = _BW_RE.match(stripped)
        if bandwidth and to_float(bandwidth.group(2)) is not None:
            out[bandwidth.group(1) + '_gb_s'] = to_float(bandwidth.group(2))
            continue
        if stripped.startswith('Op:') and '|' in stripped:
            fields = {}
            for part in stripped.split('|'):
                key, sep, value = part.partition(':')
                if sep:
                    fields[key.strip().lower()] = to_number(value.strip())
            if 'unparsed' in fields or 'rows' in fields:
                out['unparsed'].append(line)
            else:
                out.update(fields)
            continue
        words = stripped.split()
        if 'data_size(MB)' in words:
            labels = words
            continue
        numbers = [to_float(w) for w in words] if len(words) == len(labels) else [None]
        if None not in numbers and all(re.match(r'^[0-9.]+$', w) for w in words):
            row = dict((key, None) for key in _TABLE_KEYS)
            for label, number in zip(labels, numbers):
                key = _TABLE_LABELS.get(label)
                if key is None:
                    keep_extra(row, label, number)
                else:
                    row[key] = number
            out['rows'].append(row)
            if out['algbw_gb_s'] is None:
                out['algbw_gb_s'] = row['algbw_gb_s']
                out['busbw_gb_s'] = row['busbw_gb_s']
            continue
        out['unparsed'].append(line)
    return out


PARSERS = {
    'hccl_test': parse_hccl_test,
    'torch_allreduce': parse_torch_allreduce,
}
