# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``numactl -H`` and ``lscpu``, and CPU list helpers.

``expand_cpu_list('0-23,48') == [0, 1, ..., 23, 48]`` and
``compact_cpu_list([0, 1, 2, 48]) == '0-2,48'`` convert between the range strings of
``lscpu``/``npu-smi info -t topo`` and lists of CPU numbers; CPU numbers stop below
``MAX_CPUS``. The parsers never raise on tool output: a line with a malformed CPU list or number
goes to ``unparsed``.
"""

from __future__ import annotations

import re

from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import (
    MAX_CPUS,
    compact_cpu_list,
    expand_cpu_list,
    is_digits,
    lines_of,
    snake,
    to_int,
    typed_value,
)

__all__ = ['MAX_CPUS', 'PARSERS', 'compact_cpu_list', 'expand_cpu_list', 'parse_lscpu', 'parse_numactl']


def parse_numactl(text):
    """Parse ``numactl -H`` (``numactl --hardware``).

    Sample::

        available: 8 nodes (0-7)
        node 0 cpus: 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23
        node 0 size: 193050 MB
        node 0 free: 38779 MB
        node distances:
        node   0   1
          0:  10  11
          1:  11  10

    Returns ``{'available': 8, 'nodes': [{'id': 0, 'cpus': [0, ..., 23], 'memory_mb': 193050,
    'free_mb': 38779}], 'distances': [[10, 11], [11, 10]]}``.

    The distance table is read by its labels: the ``node`` row names the columns, each row starts with its node;
    ``distances[i][j]`` is the distance from the i-th to the j-th node in node order, whatever order numactl
    printed them in. A row with more or fewer numbers than the header goes to ``unparsed``, and a table that does
    not give one row per column leaves ``distances`` empty rather than misplace a row.
    """
    out = {'available': None, 'nodes': [], 'distances': [], 'unparsed': []}
    nodes = {}
    columns = None
    rows = {}
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped or stripped == 'node distances:' or stripped == 'No distance information available.':
            continue
        match = re.match(r'^available:\s*([0-9]+)\s+nodes?\b', stripped)
        if match and to_int(match.group(1)) is not None:
            out['available'] = to_int(match.group(1))
            continue
        match = re.match(r'^node\s+([0-9]+)\s+(cpus|size|free):\s*(.*)$', stripped)
        if match and to_int(match.group(1)) is not None:
            node_id = to_int(match.group(1))
            if match.group(2) == 'cpus':
                cpus = _cpu_words(match.group(3))
                if cpus is not None:
                    _node(nodes, node_id)['cpus'] = cpus
                    continue
            else:
                size = re.match(r'^([0-9]+)\s*MB$', match.group(3))
                if size and to_int(size.group(1)) is not None:
                    _node(nodes, node_id)['memory_mb' if match.group(2) == 'size' else 'free_mb'] = to_int(size.group(1))
                    continue
        elif re.match(r'^node(\s+[0-9]+)+$', stripped) and all(is_digits(c) for c in stripped.split()[1:]):
            columns = [int(c) for c in stripped.split()[1:]]
            continue
        else:
            row = re.match(r'^([0-9]+):((?:\s+[0-9]+)+)$', stripped)
            values = row.group(2).split() if row else []
            if (row and columns is not None and is_digits(row.group(1)) and len(values) == len(columns)
                    and all(is_digits(c) for c in values) and int(row.group(1)) not in rows):
                rows[int(row.group(1))] = dict(zip(columns, (int(c) for c in values)))
                continue
        out['unparsed'].append(line)
    out['nodes'] = [nodes[key] for key in sorted(nodes)]
    if columns is not None and rows and sorted(rows) == sorted(set(columns)) and len(set(columns)) == len(columns):
        # row i, column j: the distance from node i to node j, whatever the order numactl printed them in
        out['distances'] = [[rows[i][j] for j in sorted(columns)] for i in sorted(rows)]
    return out


def _node(nodes, node_id):
    node = nodes.get(node_id)
    if node is None:
        node = nodes[node_id] = {'id': node_id, 'cpus': [], 'memory_mb': None, 'free_mb': None}
    return node


def _cpu_words(text):
    """'0 1 2 3' -> [0, 1, 2, 3] in printed order; None when a word is not a CPU number below MAX_CPUS."""
    cpus = []
    for word in text.split():
        if not is_digits(word) or int(word) >= MAX_CPUS:
            return None
        cpus.append(int(word))
    return cpus


_LSCPU_SECTIONS = {'Caches (sum of all)': 'cache', 'Vulnerabilities': 'vulnerability'}
# keys the parser fills itself; a label that snake-cases to one of them is not lscpu output
_LSCPU_OWN_KEYS = ('numa_nodes', 'unparsed')


def parse_lscpu(text):
    """Parse ``lscpu`` (old flat layout and the newer indented, sectioned layout).

    Sample::

        CPU(s):                 192
          On-line CPU(s) list:  0-191
            Core(s) per socket: 48
            CPU max MHz:        2600.0000
        NUMA:
          NUMA node(s):         8
          NUMA node0 CPU(s):    0-23

    Returns snake_case fields (``cpus: 192``, ``on_line_cpus_list: '0-191'``,
    ``cores_per_socket: 48``, ``cpu_max_mhz: 2600.0``, ``numa_node_count: 8``) plus
    ``numa_nodes: {0: [0, ..., 23]}``. Caches are ``l1d_cache``... and vulnerabilities
    ``vulnerability_<name>`` in both layouts.
    """
    out = {'numa_nodes': {}, 'unparsed': []}
    section = None
    for line in lines_of(text):
        if not line.strip():
            continue
        match = re.match(r'^(\s*)([^:]+?):\s*(.*?)\s*$', line)
        if not match:
            out['unparsed'].append(line)
            continue
        indent, label, value = match.groups()
        numa = re.match(r'^NUMA node([0-9]+) CPU\(s\)$', label)
        if numa:
            cpus = _cpu_list_or_none(value)
            if to_int(numa.group(1)) is None or cpus is None:
                out['unparsed'].append(line)
            else:
                out['numa_nodes'][to_int(numa.group(1))] = cpus
            continue
        if not indent:
            section = None
        if not value and not indent:
            section = _LSCPU_SECTIONS.get(label, label)
            continue
        key = _lscpu_key(label, section)
        if key in _LSCPU_OWN_KEYS:
            out['unparsed'].append(line)
            continue
        out[key] = typed_value(key, value)
    return out


def _cpu_list_or_none(value):
    """expand_cpu_list(value), [] for an empty value, None when the value is not a CPU list."""
    if not value:
        return []
    try:
        return expand_cpu_list(value)
    except ValueError:
        return None


def _lscpu_key(label, section):
    if label == 'NUMA node(s)':
        return 'numa_node_count'
    key = snake(label.replace('(s)', 's'))
    if re.match(r'^l\d[di]?$', key):
        key += '_cache'
    elif section == 'vulnerability' and not key.startswith('vulnerability_'):
        key = 'vulnerability_' + key
    return key


PARSERS = {
    'numactl': parse_numactl,
    'lscpu': parse_lscpu,
}
