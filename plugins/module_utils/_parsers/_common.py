# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small text helpers shared by the parsers (standard library only, Python 3.9)."""

from __future__ import annotations

import re

# Numbers are plain ASCII decimals: a Unicode digit or a NUL byte makes a value text, not a number.
_INT_RE = re.compile(r'^[-+]?[0-9]+$')
_FLOAT_RE = re.compile(r'^[-+]?[0-9]+\.[0-9]+$')
_LOOSE_FLOAT_RE = re.compile(r'^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$')
_CPU_ITEM_RE = re.compile(r'^([0-9]+)(?:-([0-9]+))?$')

MAX_DIGITS = 64
"""The longest number (in digits) a parser converts; longer ones are not tool output (and Python refuses to convert
strings of more than a few thousand digits). Vendor counters are 64-bit: 20 digits."""

MAX_CPUS = 65536
"""A sane maximum for CPU numbers: CPU lists and ranges may name CPUs 0 .. MAX_CPUS - 1, far more than any host has."""

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


def to_int(value):
    """Return the int of a plain decimal string ('42', '-7'), else None.

    Only ASCII digits count, at most :data:`MAX_DIGITS` of them: ``to_int('NA')``,
    ``to_int('1e9')``, ``to_int('0x1f')``, an Arabic-Indic digit and a 5000-digit string are all None.
    """
    if isinstance(value, str):
        stripped = value.strip()
        if len(stripped) <= MAX_DIGITS + 1 and _INT_RE.match(stripped) and len(stripped.lstrip('+-')) <= MAX_DIGITS:
            return int(stripped)
    return None


def to_float(value):
    """Return the float of a plain decimal string ('4.4035', '1.', '.5', '7'), else None (same rules as :func:`to_int`)."""
    if isinstance(value, str):
        stripped = value.strip()
        if len(stripped) <= MAX_DIGITS + 2 and _LOOSE_FLOAT_RE.match(stripped):
            return float(stripped)
    return None


def is_digits(word):
    """True for a non-empty string of ASCII digits no longer than :data:`MAX_DIGITS` (superscript and other
    Unicode digits are not, although ``str.isdigit`` accepts them)."""
    return isinstance(word, str) and 0 < len(word) <= MAX_DIGITS and word.isascii() and word.isdigit()


def to_number(value):
    """Return an int or float for a plain decimal string, else the string unchanged (see :func:`to_int`)."""
    if isinstance(value, str):
        stripped = value.strip()
        number = to_int(stripped)
        if number is not None:
            return number
        if len(stripped) <= MAX_DIGITS + 2 and _FLOAT_RE.match(stripped):
            return float(stripped)
    return value


EXTRA = 'extra'
"""Where a table parser keeps a column it does not know: ``row['extra'][<header label as printed>] = value``."""

_COLUMN_GAP_RE = re.compile(r'\s{2,}|\t')


def split_columns(text):
    """The columns of a header or row whose columns are parted by two or more blanks (or a tab): 'NPU ID   Chip
    Name' -> ['NPU ID', 'Chip Name']; a single blank stays inside a column."""
    return [piece for piece in _COLUMN_GAP_RE.split(text.strip()) if piece]


def keep_extra(row, label, value):
    """Keep the value of a column the parser does not know under ``row['extra']``, keyed by its header label."""
    row.setdefault(EXTRA, {})[label] = value


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


def short_repr(value, width=60):
    """repr of a value for an error message, cut to ``width`` characters."""
    if isinstance(value, int) and value.bit_length() > 200:
        return '<an integer of %d bits>' % value.bit_length()
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + '...'


def cpu_number(value, limit=MAX_CPUS):
    """Return ``value`` as a CPU number: an int, an integral float or a string of ASCII digits, 0 <= n < ``limit``.

    Raises ValueError naming the value for anything else (booleans, negative numbers, 1.7, '0-3', None).
    """
    if isinstance(value, bool):
        raise ValueError('%s is a boolean, not a CPU number' % short_repr(value))
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        if not value.is_integer():
            raise ValueError('%s is not a whole number, so not a CPU number' % short_repr(value))
        number = int(value)
    elif isinstance(value, str) and is_digits(value.strip()):
        number = int(value.strip())
    elif isinstance(value, str) and len(value.strip()) > MAX_DIGITS and value.strip().isascii() and value.strip().isdigit():
        raise ValueError('CPU %s goes beyond %d, the highest CPU number accepted' % (short_repr(value.strip()), limit - 1))
    else:
        raise ValueError('%s is not a CPU number (a non-negative integer)' % short_repr(value))
    if number < 0:
        raise ValueError('%s is negative, not a CPU number' % short_repr(value))
    if number >= limit:
        raise ValueError('CPU %s goes beyond %d, the highest CPU number accepted' % (short_repr(number), limit - 1))
    return number


def _bounded(digits, limit, item):
    """int of a run of ASCII digits, or ValueError when it is ``limit`` or more (checked on the text first)."""
    significant = digits.lstrip('0') or '0'
    if len(significant) > len(str(limit)) or int(significant) >= limit:
        raise ValueError('CPU %s%s goes beyond %d, the highest CPU number accepted'
                         % ('range ' if '-' in item else '', short_repr(item).strip("'"), limit - 1))
    return int(significant)


def expand_cpu_list(value, limit=MAX_CPUS):
    """Expand a CPU list string into sorted unique ints: '0-2,5' -> [0, 1, 2, 5].

    Commas and whitespace both separate items. ``limit`` is the highest CPU number accepted plus one
    (default :data:`MAX_CPUS`). Raises ValueError on malformed input (non-ASCII digits, descending
    ranges) and on a CPU number or range end of ``limit`` or more, before building any list:
    ``expand_cpu_list('0-99999999999')`` raises "CPU range 0-99999999999 goes beyond 65535, the
    highest CPU number accepted". An int or a list of CPU numbers is checked with :func:`cpu_number`.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [cpu_number(value, limit)]
    if isinstance(value, (list, tuple, set, frozenset)):
        return sorted({cpu_number(v, limit) for v in value})
    if not isinstance(value, str):
        raise ValueError('%s is not a CPU list' % short_repr(value))
    spans = []
    for item in re.split(r'[,\s]+', value.strip()):
        if not item:
            continue
        match = _CPU_ITEM_RE.match(item)
        if not match:
            raise ValueError('not a CPU list item: %s' % short_repr(item))
        first = _bounded(match.group(1), limit, item)
        last = _bounded(match.group(2), limit, item) if match.group(2) is not None else first
        if last < first:
            raise ValueError('descending CPU range: %s' % short_repr(item))
        spans.append((first, last))
    cpus = set()
    for first, last in spans:
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def compact_cpu_list(cpus, limit=MAX_CPUS):
    """Compact CPU numbers into a range string: [0, 1, 2, 5] -> '0-2,5'.

    Every element must be a CPU number (:func:`cpu_number`); ValueError names the first that is not.
    """
    runs = []
    for num in sorted({cpu_number(c, limit) for c in cpus}):
        if runs and num == runs[-1][1] + 1:
            runs[-1][1] = num
        else:
            runs.append([num, num])
    return ','.join(str(first) if first == last else '%d-%d' % (first, last) for first, last in runs)
