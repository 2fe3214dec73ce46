# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``npu-smi`` output.

The summary table (``npu-smi info``) is read by splitting rows on ``|`` and cells on
whitespace, never by column offsets: its width differs between driver versions (91, 98, 99
columns and wider on A3, 116 from 25.x), and its columns change (26.x adds ``Process id in
container`` to the process table). Every table (the summary table, ``-m``, ``-t topo``) is read by
its header labels: a column is found by its label wherever it is printed, a column this parser
does not know is kept under ``extra`` keyed by its label, and a row with more or fewer cells than
its header is flagged (``unparsed``, or ``errors`` for a device), never read as other columns.
The ``-t <type>`` and ``-l`` views are ``key : value`` lines (keys padded to 30 or 40).

Every parser returns a dict with ``unparsed`` (lines not understood, always present) and never
raises on tool output: a line it cannot read (a malformed or out-of-range number included) goes to
``unparsed``. npu-smi prints its errors on stdout; what they mean is the tool adapter's
knowledge (``plugins/module_utils/_tools/npu_smi.py``, ``classify_error``).
"""

from __future__ import annotations

import re

from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import (
    expand_cpu_list,
    is_digits,
    keep_extra,
    lines_of,
    short_repr,
    snake,
    split_columns,
    to_int,
    to_number,
    typed_value,
    unit_key,
)

_BUS_RE = re.compile(r'^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$')
# a pair starts at a word start: scanning a long word without '/' stays linear
_FRACTION_RE = re.compile(r'(?<!\S)([^\s/]+)\s*/\s*(\S+)')
# row and column labels of `-t topo`: 'NPU3' (one per NPU) or 'Phy-ID3' (A3: one per die, by physical id)
_TOPO_LABEL_RE = re.compile(r'^(NPU|Phy-ID)([0-9]{1,9})$')
_NO_PROCESS_RE = re.compile(r'^No running processes found in NPU\s+([0-9]+)\s*$')
# a header label of a 'used / total' pair: 'Hugepages-Usage(page)', 'Memory-Usage(MB)', 'HBM-Usage(MB)'
_USAGE_RE = re.compile(r'^(.+)-Usage\(([^()]+)\)$')

# The value keys of every device of the summary table; None where the table has no such column
# (310, 310P and 310B print no HBM column, the oldest drivers no Hugepages column).
_VALUE_KEYS = ('power_w', 'temp_c', 'hugepages_used_pages', 'hugepages_total_pages', 'aicore_pct',
               'memory_used_mb', 'memory_total_mb', 'hbm_used_mb', 'hbm_total_mb')

# The header labels of the summary table this parser knows, and the keys they give. A label it does not know is kept
# under 'extra', keyed by the label as printed (see _common.keep_extra).
_ID_LABELS = {'NPU': 'npu', 'NPU ID': 'npu', 'Chip': 'chip', 'Phy-ID': 'phy_id', 'Device': 'device'}
_NAME_LABEL = 'Name'
_TEXT_LABELS = {'Health': 'health', 'Bus-Id': 'bus_id'}
_PLAIN_LABELS = {'Power(W)': 'power_w', 'Temp(C)': 'temp_c', 'AICore(%)': 'aicore_pct'}
_PAIR_LABELS = {'Hugepages-Usage(page)': ('hugepages_used_pages', 'hugepages_total_pages'),
                'Memory-Usage(MB)': ('memory_used_mb', 'memory_total_mb'),
                'HBM-Usage(MB)': ('hbm_used_mb', 'hbm_total_mb')}
# labels of more than one word that are one label, not one per word
_PHRASES = ('NPU ID',)

# Without header rows the rows are read in the 910 layout (cells: ids, health or bus id, values); such a row may
# carry fewer pairs than the layout names (a 310 row has no HBM pair).
_NPU_LAYOUT = [('ids', ['NPU', 'Name']), ('text', ['Health']), ('values', ['Power(W)', 'Temp(C)', 'Hugepages-Usage(page)'])]
_CHIP_LAYOUT = [('ids', ['Chip']), ('text', ['Bus-Id']), ('values', ['AICore(%)', 'Memory-Usage(MB)', 'HBM-Usage(MB)'])]

# The process table: header label -> key; 'Process memory(<unit>)' gives memory_mb in MB.
_PROCESS_LABELS = {'NPU': 'npu', 'NPU ID': 'npu', 'Chip': 'chip', 'Process id': 'pid', 'Process name': 'name',
                   'Process id in container': 'container_pid'}
_PROCESS_MEMORY_RE = re.compile(r'^Process memory\((B|KB|MB)\)$')
_MEMORY_SCALE = {'B': 1024 * 1024, 'KB': 1024, 'MB': 1}


def _number_or_none(value):
    value = value.strip()
    if value in ('-', 'NA', ''):
        return None
    return to_number(value)


def _split_metrics(cell):
    """Split a metrics cell into plain tokens and 'a / b' pairs, keeping their order of kind."""
    fractions = [(_number_or_none(a), _number_or_none(b)) for a, b in _FRACTION_RE.findall(cell)]
    rest = _FRACTION_RE.sub(' ', cell).split()
    return [_number_or_none(t) for t in rest], fractions


def _labels(cell):
    """The labels of one header cell, in the order printed.

    Labels are parted by two or more blanks; a piece with a unit ('NPU Util(%)') is one label per unit, a piece
    without one is a label per word ('NPU  Name' is 'NPU' and 'Name') unless it is a known phrase ('NPU ID').
    """
    labels = []
    for piece in split_columns(cell):
        if '(' in piece:
            words = []
            for word in piece.split():
                words.append(word)
                if word.endswith(')'):
                    labels.append(' '.join(words))
                    words = []
            labels.extend(words)
        elif piece in _PHRASES:
            labels.append(piece)
        else:
            labels.extend(piece.split())
    return labels


def _cell_spec(labels):
    """(kind, labels) of one header cell: 'ids' (NPU, Chip and the like, with Name), 'text' (one label, no unit:
    Health, Bus-Id) or 'values' (labels with units: plain numbers and 'used / total' pairs)."""
    if labels and labels[0] in _ID_LABELS and not any('(' in label for label in labels):
        return ('ids', labels)
    if len(labels) == 1 and '(' not in labels[0]:
        return ('text', labels)
    return ('values', labels)


def _header(cells):
    return [_cell_spec(_labels(cell)) for cell in cells]


def _value_columns(labels):
    """(plain keys, pair keys) of the labels of a values cell; a key of a label this parser does not know is
    ('extra', label)."""
    plain, pairs = [], []
    for label in labels:
        if label in _PAIR_LABELS:
            pairs.append(_PAIR_LABELS[label])
        elif _USAGE_RE.match(label):
            pairs.append(('extra', label))
        else:
            plain.append(_PLAIN_LABELS.get(label, ('extra', label)))
    return tuple(plain), tuple(pairs)


def _store(row, key, value):
    if isinstance(key, tuple):
        keep_extra(row, key[1], value)
    else:
        row[key] = value


def _read_values(row, text, labels, lenient):
    """Store the values of a value cell in ``row``; the reason when they do not fit the header, else None.

    With a header the row must carry exactly its plain values and pairs; in the 910 layout without one
    (``lenient``) it may carry fewer pairs (a 310 row has no HBM pair).
    """
    plain, pairs = _split_metrics(text)
    for value in plain + [value for pair in pairs for value in pair]:
        if isinstance(value, str):
            return 'not a number: %s' % short_repr(value)
    plain_keys, pair_keys = _value_columns(labels)
    if len(plain) != len(plain_keys) or len(pairs) > len(pair_keys) or (not lenient and len(pairs) != len(pair_keys)):
        return ('the row carries %d value(s) and %d pair(s), %s %d value(s) and %s%d pair(s)'
                % (len(plain), len(pairs), 'the 910 layout' if lenient else 'its header', len(plain_keys),
                   'up to ' if lenient else '', len(pair_keys)))
    for key, value in zip(plain_keys, plain):
        _store(row, key, value)
    for key, pair in zip(pair_keys, pairs):
        if key[0] == 'extra':
            keep_extra(row, key[1], list(pair))
        else:
            row[key[0]], row[key[1]] = pair
    return None


def _read_ids(row, cell, labels, chip):
    """Read the ids (and the name) of an NPU or chip cell into ``row``; the reason when it cannot.

    Ids take one word each, the name the words left. In a chip cell a second id (Phy-ID, Device) may be '-' or
    'NA' (None) or missing (None), and two numbers under a bare 'Chip' keep the second as ``phy_id``.
    """
    words = cell.split()
    ids = [label for label in labels if label != _NAME_LABEL]
    named = _NAME_LABEL in labels
    if chip:
        if not named and len(ids) == 1 and len(words) == 2:
            ids = ids + ['Phy-ID']
        if not named and 0 < len(words) < len(ids):
            words = words + [None] * (len(ids) - len(words))
        if not words or (not named and len(words) != len(ids)):
            return 'not a chip id: %s' % short_repr(cell)
    elif len(words) < len(ids):
        return 'the cell %s carries fewer ids than its header names (%s)' % (short_repr(cell), ', '.join(ids))
    if named:
        before = labels.index(_NAME_LABEL)
        head, tail = ids[:before], ids[before:]
        taken = words[:len(head)] + (words[len(words) - len(tail):] if tail else [])
        name = ' '.join(words[len(head):len(words) - len(tail)])
        row['name'] = name or None
        words = taken
    for position, (label, word) in enumerate(zip(ids, words)):
        if label not in _ID_LABELS:
            keep_extra(row, label, word if word is None else to_number(word))
        elif word is None or (position and word in ('-', 'NA')):
            row[_ID_LABELS[label]] = None
        elif is_digits(word):
            row[_ID_LABELS[label]] = int(word)
        elif chip:
            return 'not a chip id: %s' % short_repr(cell)
        else:
            return 'not an id: %s' % short_repr(word)
    return None


def _read_row(row, cells, spec, lenient, chip):
    """Read an NPU row or a chip row by the cells of its header; the reason when it cannot, else None."""
    if lenient:
        cells = cells[:2] + [' '.join(cells[2:])]
    elif len(cells) != len(spec):
        return 'the row has %d cells, its header %d' % (len(cells), len(spec))
    for cell, (kind, labels) in zip(cells, spec):
        if kind == 'ids':
            msg = _read_ids(row, cell, labels, chip)
        elif kind == 'text':
            label = labels[0]
            if label == 'Bus-Id':
                row['bus_id'] = cell if cell not in ('-', 'NA', '') else None
            elif label in _TEXT_LABELS:
                row[_TEXT_LABELS[label]] = cell
            else:
                keep_extra(row, label, cell)
            msg = None
        else:
            msg = _read_values(row, cell, labels, lenient)
        if msg is not None:
            return msg
    return None


def _index(spec, wanted):
    """The index of the first cell whose labels include one of ``wanted``, else None."""
    for index, (_kind, labels) in enumerate(spec):
        if any(label in wanted for label in labels):
            return index
    return None


def parse_info(text):
    """Parse the ``npu-smi info`` summary table.

    Sample (25.2.0, one process per NPU)::

        | npu-smi 25.2.0                   Version: 25.2.0                                               |
        | NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
        | Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
        | 0     910B2               | OK            | 101.4       38                0    / 0             |
        | 0                         | 0000:C1:00.0  | 0           0    / 0          46456/ 65536         |
        | NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
        | 0       0                 | 16143         | VLLMWorker_DP            | 43095                   |

    Returns ``{'version': '25.2.0', 'npu_smi_version': '25.2.0', 'devices': [{'npu': 0,
    'chip': 0, 'name': '910B2', 'health': 'OK', 'power_w': 101.4, 'temp_c': 38,
    'hugepages_used_pages': 0, 'hugepages_total_pages': 0, 'aicore_pct': 0,
    'memory_used_mb': 0, 'memory_total_mb': 0, 'hbm_used_mb': 46456, 'hbm_total_mb': 65536,
    'bus_id': '0000:C1:00.0'}], 'processes': [{'npu': 0, 'chip': 0, 'pid': 16143,
    'name': 'VLLMWorker_DP', 'memory_mb': 43095, 'container_pid': None}], 'warnings': []}``.

    Every cell is read by the label of its header cell, in whatever order the header prints them: the cells of a
    row are parted by ``|``, the labels of a header cell by two or more blanks, the values of a row by blanks
    (``a / b`` is one pair). One device per chip row, in the order printed. A column the table lacks gives
    ``None`` (no HBM column on 310, 310P and 310B, no Hugepages column before 21.0.4). The second label of the
    chip header names the second number of a chip row: ``Chip  Phy-ID`` (A3, two dies per NPU) adds ``phy_id``,
    ``Chip    Device`` (310, 310P, 310B; a 310P Duo card has two chips under one card id, one bus id) adds
    ``device``, the chip's logic id. A value shown as ``-`` or ``NA`` (die-1 power of an A3, power of a 310P, bus
    id of a 310B) becomes ``None``. Without header rows the rows are read in the 910 layout.

    The process table: ``Process memory(B)`` (old 910A layout) is converted to MB; ``Process id in container``
    (26.x: the process id inside its container, ``NA`` for a process of the host) gives ``container_pid``, which
    is ``None`` when the table has no such column. A column this parser does not know, of either table, is kept
    under ``extra`` keyed by its header label (``{'extra': {'Fan-Speed(%)': 30}}``; a pair as ``[used, total]``).

    An NPU whose rows cannot be read (a value that is not a number, more or fewer values or cells than the
    header names, a chip row missing) is not a device: it becomes an entry of ``errors`` ``{'npu': 3, 'msg':
    ..., 'lines': [the raw rows]}`` (``npu`` None for a chip row without its NPU row). ``errors`` is there only
    when such an NPU was found. A process row that does not fit its header goes to ``unparsed``.
    """
    out = {'version': None, 'npu_smi_version': None, 'devices': [], 'processes': [], 'warnings': [], 'unparsed': []}
    errors = []
    section = 'devices'
    npu_spec = chip_spec = process_spec = None
    pending = None  # the NPU row read last, until its chip row comes: {'npu', 'row', 'msg', 'lines'}

    def close():
        """The NPU row read last never got its chip row."""
        if pending is not None:
            errors.append({'npu': pending['npu'], 'msg': pending['msg'] or 'the chip row of NPU %d is missing' % pending['npu'],
                           'lines': pending['lines']})

    for line in lines_of(text):
        stripped = line.strip()
        if not stripped or stripped.startswith('+'):
            continue
        if not stripped.startswith('|'):
            if stripped.startswith('[WARNING]'):
                out['warnings'].append(stripped)
            else:
                out['unparsed'].append(line)
            continue
        cells = [c.strip() for c in stripped.strip('|').split('|')]
        title = re.match(r'^npu-smi\s+(\S+)\s+Version:\s*(\S+)$', ' '.join(cells))
        if title:
            out['npu_smi_version'] = title.group(1)
            out['version'] = title.group(2)
            continue
        if 'Process id' in cells:
            close()
            section, pending = 'processes', None
            process_spec = [split_columns(cell) for cell in cells]
            continue
        spec = _header(cells)
        if _index(spec, ('Health',)) is not None and _index(spec, ('NPU', 'NPU ID')) is not None:
            close()
            section, pending, npu_spec = 'devices', None, spec
            continue
        if section == 'devices' and _index(spec, ('Bus-Id',)) is not None:
            chip_spec = spec
            continue
        if _NO_PROCESS_RE.match(' '.join(cells)):
            continue
        if section == 'processes':
            row = _process_row(cells, process_spec)
            if row is None:
                out['unparsed'].append(line)
            else:
                out['processes'].append(row)
            continue
        bus_at = _index(chip_spec, ('Bus-Id',)) if chip_spec else 1
        npu_at = _index(npu_spec, ('NPU', 'NPU ID')) if npu_spec else 0
        if bus_at is not None and len(cells) > bus_at and (len(cells) >= 3 or chip_spec) and (
                _BUS_RE.match(cells[bus_at]) or cells[bus_at] in ('-', 'NA', '')):
            # a chip row: the second row of an NPU
            if pending is None:
                errors.append({'npu': None, 'msg': 'a chip row without its NPU row', 'lines': [line]})
                continue
            pending['lines'].append(line)
            row, msg = pending['row'], pending['msg']
            if msg is None:
                msg = _read_row(row, cells, chip_spec or _CHIP_LAYOUT, chip_spec is None, True)
            if msg is None:
                for key in _VALUE_KEYS:
                    row.setdefault(key, None)
                out['devices'].append(row)
            else:
                errors.append({'npu': pending['npu'], 'msg': msg, 'lines': pending['lines']})
            pending = None
            continue
        first = cells[npu_at].split() if npu_at is not None and len(cells) > npu_at else []
        if (len(cells) >= 3 or npu_spec) and first and is_digits(first[0]):
            # an NPU row: id, name, health and the values of the NPU
            close()
            row = {}
            msg = _read_row(row, cells, npu_spec or _NPU_LAYOUT, npu_spec is None, False)
            pending = {'npu': int(first[0]), 'row': row, 'lines': [line], 'msg': msg}
            row['npu'] = pending['npu']
            continue
        out['unparsed'].append(line)
    close()
    if errors:
        out['errors'] = errors
    return out


def _process_row(cells, spec):
    """One row of the process table read by the labels of its header, or None when it does not fit them."""
    if spec is None or len(cells) != len(spec):
        return None
    row = {'npu': None, 'chip': None, 'pid': None, 'name': None, 'memory_mb': None, 'container_pid': None}
    for cell, labels in zip(cells, spec):
        words = [cell] if len(labels) == 1 else cell.split()
        if len(words) != len(labels):
            return None
        for label, word in zip(labels, words):
            key = _PROCESS_LABELS.get(label)
            memory = _PROCESS_MEMORY_RE.match(label)
            if key == 'name':
                row['name'] = word
            elif key in ('npu', 'chip', 'pid'):
                if not is_digits(word):
                    return None
                row[key] = int(word)
            elif key == 'container_pid':
                if is_digits(word):
                    row[key] = int(word)
                elif word not in ('NA', '-', ''):
                    return None
            elif memory:
                value = _number_or_none(word)
                if value is not None and not isinstance(value, int):
                    return None
                row['memory_mb'] = None if value is None else value // _MEMORY_SCALE[memory.group(1)]
            else:
                keep_extra(row, label, word)
    if row['npu'] is None or row['pid'] is None:
        return None
    return row


def _kv_lines(text):
    """Yield (line, label, value) for 'key : value' lines and (line, None, None) for others.

    The first colon splits the line and needs a blank before it and, when a value follows, after
    it (``Key : value``; not ``Key: value`` nor ``Key :value``). A blank line gives (line, None,
    None) too; callers test ``line.strip()`` first. A continuation line (nothing before the colon)
    has the label ''. String operations, not a regular expression: long runs of blanks cost
    linear time.
    """
    for line in lines_of(text):
        head, sep, tail = line.partition(':')
        if line.strip() and sep and head[-1:].isspace() and (not tail or tail[0].isspace()):
            yield line, head.strip(), tail.strip()
        else:
            yield line, None, None


_NPU_ERROR_RE = re.compile(r'^(Failed to query|Invalid (card|chip) id|This device does not support|dcmi model|dcmi module|'
                           r'There is no NPU card|Command or option is not found|Failed to execute npu-smi)')


def parse_list(text):
    """Parse ``npu-smi info -l``.

    Sample::

        \tTotal Count                    : 8

        \tNPU ID                         : 0
        \tChip Count                     : 1

    Returns ``{'total_count': 8, 'devices': [{'npu': 0, 'chip_count': 1}, ...]}``; Product
    Name / Serial Number lines of non-server boards become snake_case keys of the device.
    """
    out = {'total_count': None, 'devices': [], 'unparsed': []}
    current = None
    for line, label, value in _kv_lines(text):
        if not line.strip():
            continue
        if not label:
            out['unparsed'].append(line)
            continue
        key = unit_key(label)
        if key in ('total_count', 'card_count'):
            out['total_count'] = to_number(value)
        elif key == 'npu_id':
            current = {'npu': to_number(value)}
            out['devices'].append(current)
        elif current is not None:
            current[key] = typed_value(key, value)
        else:
            out['unparsed'].append(line)
    return out


_MAPPING_COLUMNS = {'npu_id': 'npu', 'chip_id': 'chip', 'chip_logic_id': 'logic_id', 'chip_phy_id': 'phy_id', 'chip_name': 'name'}
_MAPPING_LAYOUT = ['NPU ID', 'Chip ID', 'Chip Logic ID', 'Chip Name']


def parse_mapping(text):
    """Parse ``npu-smi info -m``.

    Sample::

        \tNPU ID                         Chip ID                        Chip Logic ID                  Chip Name
        \t0                              0                              0                              Ascend 910B4
        \t0                              1                              -                              Mcu

    Returns ``{'devices': [{'npu': 0, 'chip': 0, 'logic_id': 0, 'name': 'Ascend 910B4'},
    {'npu': 0, 'chip': 1, 'logic_id': None, 'name': 'Mcu'}]}``.

    Columns are parted by two or more blanks (a tab) and read by their header labels, in the order printed
    (``Chip Phy-ID`` of an A3 gives ``phy_id``); a column this parser does not know is kept under ``extra`` keyed
    by its label. Without a header the columns are those of the sample. A row with more or fewer columns than the
    header, or whose NPU ID is not a number, goes to ``unparsed``.
    """
    out = {'devices': [], 'unparsed': []}
    labels = list(_MAPPING_LAYOUT)
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped:
            continue
        words = split_columns(stripped)
        if 'NPU ID' in words:
            labels = words
            continue
        keys = [_MAPPING_COLUMNS.get(snake(label)) for label in labels]
        npu = words[keys.index('npu')] if 'npu' in keys and len(words) == len(labels) else None
        if npu is None or not is_digits(npu):
            out['unparsed'].append(line)
            continue
        row = {}
        for label, key, word in zip(labels, keys, words):
            if key is None:
                keep_extra(row, label, word)
            else:
                row[key] = word if key == 'name' else _number_or_none(word)
        out['devices'].append(row)
    return out


def parse_board(text):
    """Parse ``npu-smi info -t board -i N [-c C]``.

    Sample::

        \tNPU ID                         : 0
        \tSoftware Version               : 25.5.1
        \tFirmware Version               : 7.8.0.6.201
        \tPCI Device ID                  : 0xD802
        \tChip Count                     : 1

    Returns snake_case keys: ``{'npu': 0, 'software_version': '25.5.1',
    'firmware_version': '7.8.0.6.201', 'pci_device_id': '0xD802', 'chip_count': 1}``
    (``Chip ID`` becomes ``chip``). Versions, names and serials stay strings.
    """
    out = {'unparsed': []}
    for line, label, value in _kv_lines(text):
        if not line.strip():
            continue
        if not label:
            out['unparsed'].append(line)
            continue
        key = unit_key(label)
        key = {'npu_id': 'npu', 'chip_id': 'chip'}.get(key, key)
        if key == 'unparsed':
            out['unparsed'].append(line)
            continue
        out[key] = typed_value(key, value)
    return out


_HEALTH_RANK = {'OK': 0, 'Warning': 1, 'Alarm': 2, 'Critical': 3}


def parse_health(text):
    """Parse ``npu-smi info -t health -i N [-c C]``.

    Sample (Alarm with three codes)::

        \tHealth Status                  : Alarm
        \tError Code                     : A4025021 8C03A000 8C084E00
        \tError Information              : ascend_monitor adda heart beat lost error

        \t                               : node type=adda, sensor type=Heartbeat Sensor, event state=Heartbeat Lost.

    Returns ``{'health': 'Alarm', 'error_codes': ['A4025021', '8C03A000', '8C084E00'],
    'error_information': ['ascend_monitor adda heart beat lost error', 'node type=adda, ...']}``
    (``npu``/``chip`` when the view prints them; ``NA`` gives empty lists). Accepts the key
    ``Health`` as well as ``Health Status``. A view with one block per chip (two dies of an A3
    NPU) gives the worst health word and the error codes of every chip.
    """
    out = {'npu': None, 'health': None, 'error_codes': [], 'error_information': [], 'unparsed': []}
    for line, label, value in _kv_lines(text):
        if not line.strip():
            continue
        if label is None:
            out['unparsed'].append(line)
            continue
        key = unit_key(label)
        if key in ('health', 'health_status'):
            # an NPU of two chips (A3 dies, 310P Duo) prints one block per chip: the worst word stands for the NPU
            if out['health'] is None or _HEALTH_RANK.get(value, len(_HEALTH_RANK)) > _HEALTH_RANK.get(out['health'], len(_HEALTH_RANK)):
                out['health'] = value
        elif key == 'error_code':
            out['error_codes'] += [code for code in ([] if value in ('NA', '') else value.split()) if code not in out['error_codes']]
        elif key in ('error_information', ''):
            if value not in ('NA', ''):
                out['error_information'].append(value)
        elif key in ('npu_id', 'chip_id'):
            out[key[:-3]] = to_number(value)
        elif key == 'unparsed':
            out['unparsed'].append(line)
        else:
            out[key] = typed_value(key, value)
    return out


_PROC_RE = re.compile(r'^\s*Process id:\s*([0-9]+)\s+Process name:(.*?)\s*Process memory\((\w+)\)\s*:\s*([0-9]+)\s*$')


def _chip_view(text, chip_lines=None):
    """Read a per-chip '-t <type>' view into {npu, chip_count, chips: [...]}.

    A 'Chip ID' (or 'Chip Name') line closes a block that already holds data and opens one
    when it comes first (``-t common``); a blank line ends a block that knows its chip.
    ``chip_lines`` is a callable given (line, block) that consumes non key/value lines.
    """
    out = {'npu': None, 'chips': [], 'errors': [], 'unparsed': []}
    block = {}

    def flush():
        if block:
            entry = {'chip': block.pop('chip', None)}
            entry.update(block)
            out['chips'].append(entry)
            block.clear()

    for line, label, value in _kv_lines(text):
        stripped = line.strip()
        if not stripped:
            if 'chip' in block and len(block) > 1:
                flush()
            continue
        if not label:
            if chip_lines is not None and chip_lines(line, block):
                continue
            if _NPU_ERROR_RE.match(stripped):
                out['errors'].append(stripped)
            else:
                out['unparsed'].append(line)
            continue
        key = unit_key(label)
        if key == 'npu_id':
            flush()
            out['npu'] = to_number(value)
        elif key == 'chip_count':
            out['chip_count'] = to_number(value)
        elif key == 'chip_id' or (key == 'chip_name' and block and 'chip' not in block):
            number = to_number(value) if key == 'chip_id' else None
            if block and 'chip' not in block:
                block['chip'] = number
                if key == 'chip_name':
                    block['chip_name'] = value
                flush()
            else:
                flush()
                block['chip'] = number
        else:
            block[key] = typed_value(key, value)
    flush()
    return out


def parse_usages(text):
    """Parse ``npu-smi info -t usages -i N``.

    Sample::

        \tNPU ID                         : 0
        \tChip Count                     : 1

        \tHBM Capacity(MB)               : 65536
        \tHBM Usage Rate(%)              : 5
        \tAicore Usage Rate(%)           : 0
        \tChip ID                        : 0

    Returns ``{'npu': 0, 'chip_count': 1, 'chips': [{'chip': 0, 'hbm_capacity_mb': 65536,
    'hbm_usage_pct': 5, 'aicore_usage_pct': 0}], 'errors': []}``.
    """
    return _chip_view(text)


def parse_temp(text):
    """Parse ``npu-smi info -t temp -i N``.

    Sample::

        \tNPU Temperature (C)            : 39
        \tChip ID                        : 0

        \tLM75A_TE (C)                   : 36
        \tChip Name                      : MCU

    Returns ``{'chips': [{'chip': 0, 'npu_temperature_c': 39}, {'chip': None,
    'chip_name': 'MCU', 'lm75a_te_c': 36}], ...}``.
    """
    return _chip_view(text)


def parse_power(text):
    """Parse ``npu-smi info -t power -i N``.

    Sample::

        \tNPU Real-time Power(W)         : 103.5
        \tChip ID                        : 0

    Returns ``{'chips': [{'chip': 0, 'npu_real_time_power_w': 103.5}], ...}``.
    """
    return _chip_view(text)


def parse_common(text):
    """Parse ``npu-smi info -t common -i N`` (``Chip ID`` opens the chip block here).

    Sample::

        \tChip ID                        : 0
        \tAicore Freq(MHZ)               : 900
        \tTemperature(C)                 : 41

    Returns ``{'chips': [{'chip': 0, 'aicore_freq_mhz': 900, 'temperature_c': 41}], ...}``.
    """
    return _chip_view(text)


def parse_memory(text):
    """Parse ``npu-smi info -t memory -i N``.

    Sample::

        \tHBM Capacity(MB)               : 65536
        \tHBM Clock Speed(MHz)           : 1600
        \tHBM Manufacturer ID            : 0x56

    Returns ``{'chips': [{'chip': None, 'hbm_capacity_mb': 65536, 'hbm_clock_speed_mhz': 1600,
    'hbm_manufacturer_id': '0x56'}], ...}``.
    """
    return _chip_view(text)


def parse_ecc(text):
    """Parse ``npu-smi info -t ecc -i N`` (keys padded to 40).

    Sample::

        \tHBM Single Bit Error Count               : 0
        \tHBM Double Bit Error Count               : 0

    Returns ``{'chips': [{'chip': None, 'hbm_single_bit_error_count': 0,
    'hbm_double_bit_error_count': 0}], ...}``.
    """
    return _chip_view(text)


def parse_pcie_err(text):
    """Parse ``npu-smi info -t pcie-err -i N``.

    Sample::

        NPU ID                         : 0
        RX Error Count                 : 991
        Retry Count                    : 415

    Returns ``{'npu': 0, 'chips': [{'chip': None, 'rx_error_count': 991, 'retry_count': 415}], ...}``.
    """
    return _chip_view(text)


def parse_proc_mem(text):
    """Parse ``npu-smi info -t proc-mem -i N [-c C]``.

    Sample::

        \tNPU ID                         : 0
        \tProcess id:1654497 Process name:python            Process memory(MB):177
        \tChip ID                        : 0

    Returns ``{'npu': 0, 'chips': [{'chip': 0, 'processes': [{'pid': 1654497, 'name': 'python',
    'memory_mb': 177}]}], ...}``; ``No process in device.`` gives an empty list and an
    unresolvable process name is ``''``.
    """

    def chip_lines(line, block):
        stripped = line.strip()
        match = _PROC_RE.match(line)
        if match and to_int(match.group(1)) is not None and to_int(match.group(4)) is not None:
            memory = int(match.group(4))
            if match.group(3) == 'B':
                memory //= 1024 * 1024
            block.setdefault('processes', []).append({'pid': int(match.group(1)), 'name': match.group(2).strip(), 'memory_mb': memory})
            return True
        if stripped.rstrip('.') == 'No process in device':
            block.setdefault('processes', [])
            return True
        return stripped.rstrip('.') == 'Get pid name failed'

    return _chip_view(text, chip_lines)


def parse_topo(text):
    """Parse ``npu-smi info -t topo``.

    Sample::

        \t   NPU0       NPU1       CPU Affinity
        NPU0       X          HCCS       144-167
        NPU1       HCCS       X          144-167

        Legend:

          X    = Self
          HCCS = Connection traversing HCCS.

    Returns ``{'devices': [{'npu': 0, 'links': {'NPU1': 'HCCS'}, 'cpu_affinity': '144-167'},
    ...], 'legend': {'X': 'Self', 'HCCS': 'Connection traversing HCCS.'}}``; the device's own
    ``X`` cell is left out of ``links``. An affinity that is not a CPU list (``144-16``, a CPU
    beyond ``MAX_CPUS``) puts its row in ``unparsed`` and gives ``cpu_affinity: None``.

    An A3 labels rows and columns by die, ``Phy-ID0`` ... (``SIO`` between the two dies of one
    NPU, ``HCCS`` or ``HCCS_SW`` between others) and may print no CPU Affinity column: its
    devices are ``{'phy_id': 12, 'links': {'Phy-ID13': 'SIO'}, 'cpu_affinity': None}``.

    The header labels (parted by two or more blanks) say what each cell of a row is, in the order printed; a column
    this parser does not know is kept under ``extra`` keyed by its label. A row with more cells than the header, or
    fewer than its link columns, goes to ``unparsed`` and gives no device.
    """
    out = {'devices': [], 'legend': {}, 'unparsed': []}
    columns = None
    in_legend = False
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped:
            continue
        words = stripped.split()
        if stripped.rstrip(':') == 'Legend':
            in_legend = True
            continue
        if in_legend:
            match = re.match(r'^(\S+)\s*=\s*(.*)$', stripped)
            if match:
                out['legend'][match.group(1)] = match.group(2)
            else:
                out['unparsed'].append(line)
            continue
        label = _TOPO_LABEL_RE.match(words[0])
        if columns is None and 'X' not in words and any(_TOPO_LABEL_RE.match(word) for word in words):
            columns = split_columns(stripped)
            continue
        if columns is not None and label:
            device = _topo_row(words, columns, label)
            if device is None or device.pop('bad_affinity', False):
                out['unparsed'].append(line)
            if device is not None:
                out['devices'].append(device)
            continue
        out['unparsed'].append(line)
    return out


def _topo_row(words, columns, label):
    """The device of a topology row, its cells read by the column labels; None when the row has more cells than the
    header, or fewer than its link columns. Cells missing after the link columns (a blank affinity) are None."""
    values = words[1:]
    links_only = [column for column in columns if _TOPO_LABEL_RE.match(column)]
    if len(values) == len(links_only) < len(columns) and columns[:len(links_only)] == links_only:
        values = values + [None] * (len(columns) - len(values))
    if len(values) != len(columns):
        return None
    key = 'npu' if label.group(1) == 'NPU' else 'phy_id'
    device = {key: int(label.group(2)), 'links': {}, 'cpu_affinity': None}
    for column, value in zip(columns, values):
        if _TOPO_LABEL_RE.match(column):
            if column != words[0]:
                device['links'][column] = value
        elif column == 'CPU Affinity':
            if _cpu_affinity_ok(value or ''):
                device['cpu_affinity'] = value or None
            else:
                device['bad_affinity'] = True
        else:
            keep_extra(device, column, value)
    return device


def _cpu_affinity_ok(text):
    """True for an empty affinity, '-'/'NA', or a CPU list that :func:`expand_cpu_list` accepts."""
    if text in ('', '-', 'NA'):
        return True
    try:
        expand_cpu_list(text)
    except ValueError:
        return False
    return True


PARSERS = {
    'info': parse_info,
    'list': parse_list,
    'mapping': parse_mapping,
    'board': parse_board,
    'health': parse_health,
    'ecc': parse_ecc,
    'temp': parse_temp,
    'power': parse_power,
    'usages': parse_usages,
    'common': parse_common,
    'topo': parse_topo,
    'proc_mem': parse_proc_mem,
    'pcie_err': parse_pcie_err,
    'memory': parse_memory,
}
