# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small text helpers shared by the parsers (standard library only, Python 3.9)."""

from __future__ import annotations

import re

_INT_RE = re.compile(r'^[-+]?\d+$')
_FLOAT_RE = re.compile(r'^[-+]?\d+\.\d+$')

# "(MB)" style unit suffixes found in vendor keys -> our key suffix
UNIT_SUFFIX = {
    'mb': 'mb',
    'b': 'b',
    '%': 'pct',
    'c': 'c',
    'w': 'w',
    'mhz': 'mhz',
    'page': 'pages',
    'pages': 'pages',
    'us': 'us',
    'ms': 'ms',
    'bytes': 'bytes',
}

# keys whose values stay strings even when they look like numbers
_TEXT_KEY_RE = re.compile(r'(version|serial|name|model|_id_hex|bus_info|bus_id|date)')


def lines_of(text):
    """Split text into lines without line terminators; None counts as empty text."""
    if not text:
        return []
    return text.splitlines()


def to_number(value):
    """Return an int or float for a plain decimal string, else the string unchanged."""
    if isinstance(value, str):
        stripped = value.strip()
        if _INT_RE.match(stripped):
            return int(stripped)
        if _FLOAT_RE.match(stripped):
            return float(stripped)
    return value


def snake(name):
    """Turn a vendor label into a snake_case key: 'Aicore curFreq' -> 'aicore_cur_freq'."""
    name = re.sub(r'([a-z])([A-Z])', r'\1_\2', name.strip())
    name = re.sub(r'[^0-9A-Za-z]+', '_', name)
    return name.strip('_').lower()


def unit_key(label):
    """Normalise a vendor label with an optional '(unit)' into a key with our unit suffix.

    'HBM Capacity(MB)' -> 'hbm_capacity_mb', 'Aicore Usage Rate(%)' -> 'aicore_usage_pct',
    'NPU Temperature (C)' -> 'npu_temperature_c', 'DDR Hugepages Total(page)' -> 'ddr_hugepages_total_pages'.
    """
    label = label.strip()
    match = re.match(r'^(.*?)\s*\(([^()]*)\)\s*$', label)
    suffix = ''
    if match:
        unit = match.group(2).strip().lower()
        if unit in UNIT_SUFFIX:
            label = match.group(1)
            suffix = UNIT_SUFFIX[unit]
    label = re.sub(r'\bUsage Rate\b', 'Usage', label)
    key = snake(label)
    if suffix:
        key = key + '_' + suffix
    return key


def typed_value(key, value):
    """Convert a value to int/float unless the key names text (versions, names, serials)."""
    value = value.strip()
    if _TEXT_KEY_RE.search(key):
        return value
    return to_number(value)


def expand_cpu_list(value):
    """Expand a CPU list string into sorted unique ints: '0-2,5' -> [0, 1, 2, 5].

    Commas and whitespace both separate items. Raises ValueError on malformed input.
    """
    if isinstance(value, int):
        return [value]
    if isinstance(value, (list, tuple)):
        return sorted({int(v) for v in value})
    cpus = set()
    for item in re.split(r'[,\s]+', str(value).strip()):
        if not item:
            continue
        match = re.match(r'^(\d+)(?:-(\d+))?$', item)
        if not match:
            raise ValueError('not a CPU list item: %r' % item)
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise ValueError('descending CPU range: %r' % item)
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def compact_cpu_list(cpus):
    """Compact CPU numbers into a range string: [0, 1, 2, 5] -> '0-2,5'."""
    runs = []
    for num in sorted({int(c) for c in cpus}):
        if runs and num == runs[-1][1] + 1:
            runs[-1][1] = num
        else:
            runs.append([num, num])
    return ','.join(str(first) if first == last else '%d-%d' % (first, last) for first, last in runs)
