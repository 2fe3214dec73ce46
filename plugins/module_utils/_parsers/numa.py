# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``numactl -H`` and ``lscpu``, and CPU list helpers.

``expand_cpu_list('0-23,48') == [0, 1, ..., 23, 48]`` and
``compact_cpu_list([0, 1, 2, 48]) == '0-2,48'`` convert between the range strings of
``lscpu``/``npu-smi info -t topo`` and lists of CPU numbers.
"""

from __future__ import annotations

import re

from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import (
    compact_cpu_list,
    expand_cpu_list,
    lines_of,
    snake,
    typed_value,
)

__all__ = ['PARSERS', 'compact_cpu_list', 'expand_cpu_list', 'parse_lscpu', 'parse_numactl']


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
    """
    out = {'available': None, 'nodes': [], 'distances': [], 'unparsed': []}
    nodes = {}
    columns = None
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped or stripped == 'node distances:' or stripped == 'No distance information available.':
            continue
        match = re.match(r'^available:\s*(\d+)\s+nodes?\b', stripped)
        if match:
            out['available'] = int(match.group(1))
            continue
        match = re.match(r'^node\s+(\d+)\s+(cpus|size|free):\s*(.*)$', stripped)
        if match:
            node = nodes.get(int(match.group(1)))
            if node is None:
                node = nodes[int(match.group(1))] = {'id': int(match.group(1)), 'cpus': [], 'memory_mb': None, 'free_mb': None}
            if match.group(2) == 'cpus':
                node['cpus'] = [int(c) for c in match.group(3).split()]
                continue
            size = re.match(r'^(\d+)\s*MB$', match.group(3))
            if size:
                node['memory_mb' if match.group(2) == 'size' else 'free_mb'] = int(size.group(1))
                continue
        elif re.match(r'^node(\s+\d+)+$', stripped):
            columns = [int(c) for c in stripped.split()[1:]]
            continue
        else:
            row = re.match(r'^(\d+):((?:\s+\d+)+)$', stripped)
            if row and columns is not None:
                out['distances'].append([int(c) for c in row.group(2).split()])
                continue
        out['unparsed'].append(line)
    out['nodes'] = [nodes[key] for key in sorted(nodes)]
    return out


_LSCPU_SECTIONS = {'Caches (sum of all)': 'cache', 'Vulnerabilities': 'vulnerability'}


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
        numa = re.match(r'^NUMA node(\d+) CPU\(s\)$', label)
        if numa:
            out['numa_nodes'][int(numa.group(1))] = expand_cpu_list(value) if value else []
            continue
        if not indent:
            section = None
        if not value and not indent:
            section = _LSCPU_SECTIONS.get(label, label)
            continue
        key = _lscpu_key(label, section)
        out[key] = typed_value(key, value)
    return out


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
