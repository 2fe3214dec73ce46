# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``npu-smi`` output.

The summary table (``npu-smi info``) is read by splitting rows on ``|`` and cells on
whitespace, never by column offsets: its width differs between driver versions (91, 98, 99
columns and wider on A3). The ``-t <type>``, ``-l`` and ``-m`` views are ``key : value``
lines (keys padded to 30 or 40) or whitespace tables.

Every parser returns a dict with ``unparsed`` (lines not understood, always present) and never
raises on tool output: a line it cannot read (a malformed or out-of-range number included) goes to
``unparsed``. npu-smi prints its errors on stdout; what they mean is the tool adapter's
knowledge (``plugins/module_utils/_npu_smi.py``, ``classify_error``).
"""

from __future__ import annotations

import re

from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import (
    expand_cpu_list,
    is_digits,
    lines_of,
    short_repr,
    snake,
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
# Without header rows the values are read in the 910 layout: (plain keys, pair keys) of the NPU row and of the chip row.
_NPU_ROW = (('power_w', 'temp_c'), (('hugepages_used_pages', 'hugepages_total_pages'),))
_CHIP_ROW = (('aicore_pct',), (('memory_used_mb', 'memory_total_mb'), ('hbm_used_mb', 'hbm_total_mb')))
# the second label of the chip header names the second number of a chip row
_CHIP_LABELS = {'Phy-ID': 'phy_id', 'Device': 'device'}


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


def _columns(cell):
    """(plain keys, pair keys) of the value cell of a header row, in the order printed.

    'Power(W)    Temp(C)           Hugepages-Usage(page)' gives (('power_w', 'temp_c'),
    (('hugepages_used_pages', 'hugepages_total_pages'),)); a label this parser does not know
    gets a key made the same way ('Foo-Usage(MB)' gives 'foo_used_mb' / 'foo_total_mb').
    """
    plain, pairs = [], []
    for label in cell.split():
        usage = _USAGE_RE.match(label)
        if usage:
            unit = unit_key('x(%s)' % usage.group(2))[2:] or snake(usage.group(2))
            stem = snake(usage.group(1))
            pairs.append(('%s_used_%s' % (stem, unit), '%s_total_%s' % (stem, unit)))
        else:
            plain.append(unit_key(label))
    return tuple(plain), tuple(pairs)


def _read_values(row, text, columns, default):
    """Store the values of a value cell in ``row``; the reason when they do not fit the header, else None.

    With a header (``columns``) the row must carry exactly its plain values and pairs; without
    one (``default``) it may carry fewer pairs than the 910 layout (a 310 row has no HBM pair).
    """
    plain, pairs = _split_metrics(text)
    for value in plain + [value for pair in pairs for value in pair]:
        if isinstance(value, str):
            return 'not a number: %s' % short_repr(value)
    plain_keys, pair_keys = columns or default
    if len(plain) != len(plain_keys) or len(pairs) > len(pair_keys) or (columns and len(pairs) != len(pair_keys)):
        return ('the row carries %d value(s) and %d pair(s), %s %d value(s) and %s%d pair(s)'
                % (len(plain), len(pairs), 'its header' if columns else 'the 910 layout', len(plain_keys),
                   '' if columns else 'up to ', len(pair_keys)))
    for key, value in zip(plain_keys, plain):
        row[key] = value
    for (used, total), (first, second) in zip(pair_keys, pairs):
        row[used], row[total] = first, second
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
    'name': 'VLLMWorker_DP', 'memory_mb': 43095}], 'warnings': []}``.

    One device per chip row, in the order printed: the header rows say which values a row
    carries, and a column the table lacks gives ``None`` (no HBM column on 310, 310P and 310B, no
    Hugepages column before 21.0.4). The second label of the chip header names the second
    number of a chip row: ``Chip  Phy-ID`` (A3, two dies per NPU) adds ``phy_id``, ``Chip
    Device`` (310, 310P, 310B; a 310P Duo card has two chips under one card id, one bus id)
    adds ``device``, the chip's logic id. A value shown as ``-`` or ``NA`` (die-1 power of an
    A3, power of a 310P, bus id of a 310B) becomes ``None``. A ``Process memory(B)`` header
    (old 910A layout) is converted to MB.

    An NPU whose rows cannot be read (a value that is not a number, more or fewer values than
    the header names, a chip row missing) is not a device: it becomes an entry of ``errors``
    ``{'npu': 3, 'msg': ..., 'lines': [the raw rows]}`` (``npu`` None for a chip row without
    its NPU row). ``errors`` is there only when such an NPU was found.
    """
    out = {'version': None, 'npu_smi_version': None, 'devices': [], 'processes': [], 'warnings': [], 'unparsed': []}
    errors = []
    section = 'devices'
    process_scale = 1
    npu_columns = chip_columns = None
    chip_label = None
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
        first = cells[0].split()
        title = re.match(r'^npu-smi\s+(\S+)\s+Version:\s*(\S+)$', ' '.join(cells))
        if title:
            out['npu_smi_version'] = title.group(1)
            out['version'] = title.group(2)
            continue
        if first[:2] == ['NPU', 'Name']:
            close()
            section, pending = 'devices', None
            npu_columns = _columns(' '.join(cells[2:])) if len(cells) > 2 else None
            continue
        if first[:1] == ['Chip'] and len(cells) > 1 and cells[1] == 'Bus-Id':
            section = 'devices'
            chip_label = _CHIP_LABELS.get(first[1], snake(first[1])) if len(first) > 1 else None
            chip_columns = _columns(' '.join(cells[2:])) if len(cells) > 2 else None
            continue
        if first[:2] == ['NPU', 'Chip'] and len(cells) > 1 and cells[1].startswith('Process id'):
            close()
            section, pending = 'processes', None
            unit = re.search(r'Process memory\((\w+)\)', stripped)
            process_scale = 1024 * 1024 if unit and unit.group(1) == 'B' else 1
            continue
        idle = _NO_PROCESS_RE.match(' '.join(cells))
        if idle:
            continue
        if section == 'processes' and _process_row(cells, process_scale, out):
            continue
        if section == 'devices' and len(cells) >= 3 and (_BUS_RE.match(cells[1]) or cells[1] in ('-', 'NA', '')):
            # a chip row: the second row of an NPU
            if pending is None:
                errors.append({'npu': None, 'msg': 'a chip row without its NPU row', 'lines': [line]})
                continue
            pending['lines'].append(line)
            row, msg = pending['row'], pending['msg']
            if msg is None:
                msg = _chip_row(cells, row, chip_columns, chip_label)
            if msg is None:
                for key in _VALUE_KEYS:
                    row.setdefault(key, None)
                out['devices'].append(row)
            else:
                errors.append({'npu': pending['npu'], 'msg': msg, 'lines': pending['lines']})
            pending = None
            continue
        if section == 'devices' and len(cells) >= 3 and first and is_digits(first[0]):
            # an NPU row: id, name, health and the values of the NPU
            close()
            row = {'npu': int(first[0]), 'name': cells[0][len(first[0]):].strip() or None, 'health': cells[1]}
            pending = {'npu': row['npu'], 'row': row, 'lines': [line],
                       'msg': _read_values(row, ' '.join(cells[2:]), npu_columns, _NPU_ROW)}
            continue
        out['unparsed'].append(line)
    close()
    if errors:
        out['errors'] = errors
    return out


def _chip_row(cells, row, columns, label):
    """Read the chip row of ``row``'s NPU into it: chip id (and phy id or logic id), bus id, values. The reason when it cannot."""
    first = cells[0].split()
    if not 1 <= len(first) <= 2 or not is_digits(first[0]) or not (len(first) == 1 or is_digits(first[1]) or first[1] in ('-', 'NA')):
        return 'not a chip id: %s' % short_repr(cells[0])
    row['chip'] = int(first[0])
    if label or len(first) == 2:
        # 'Chip  Phy-ID' (A3), 'Chip    Device' (310 family); a chip row with two numbers under a bare 'Chip' keeps phy_id
        row[label or 'phy_id'] = _number_or_none(first[1]) if len(first) == 2 else None
    row['bus_id'] = cells[1] if cells[1] not in ('-', 'NA', '') else None
    return _read_values(row, ' '.join(cells[2:]), columns, _CHIP_ROW)


def _process_row(cells, scale, out):
    first = cells[0].split()
    if len(cells) < 4 or len(first) < 2 or not all(is_digits(w) for w in first) or not is_digits(cells[1]):
        return False
    memory = _number_or_none(cells[-1])
    if isinstance(memory, int) and scale != 1:
        memory = memory // scale
    out['processes'].append({
        'npu': int(first[0]),
        'chip': int(first[1]),
        'pid': int(cells[1]),
        'name': ' '.join(cells[2:-1]).strip(),
        'memory_mb': memory,
    })
    return True


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


def parse_mapping(text):
    """Parse ``npu-smi info -m``.

    Sample::

        \tNPU ID                         Chip ID                        Chip Logic ID                  Chip Name
        \t0                              0                              0                              Ascend 910B4
        \t0                              1                              -                              Mcu

    Returns ``{'devices': [{'npu': 0, 'chip': 0, 'logic_id': 0, 'name': 'Ascend 910B4'},
    {'npu': 0, 'chip': 1, 'logic_id': None, 'name': 'Mcu'}]}``.
    """
    out = {'devices': [], 'unparsed': []}
    columns = ['npu', 'chip', 'logic_id', 'name']
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith('NPU ID'):
            labels = re.split(r'\s{2,}', stripped)
            columns = [_MAPPING_COLUMNS.get(snake(label), snake(label)) for label in labels]
            continue
        words = stripped.split(None, len(columns) - 1)
        if len(words) != len(columns) or not is_digits(words[0]):
            out['unparsed'].append(line)
            continue
        row = {}
        for key, word in zip(columns, words):
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
        if columns is None and label and (len(words) == 1 or _TOPO_LABEL_RE.match(words[1]) or words[1] == 'CPU'):
            columns = [w for w in words if _TOPO_LABEL_RE.match(w)]
            continue
        if columns is not None and label and len(words) >= len(columns) + 1:
            cells = words[1:1 + len(columns)]
            links = {col: cell for col, cell in zip(columns, cells) if col != words[0]}
            rest = ' '.join(words[1 + len(columns):])
            if not _cpu_affinity_ok(rest):
                out['unparsed'].append(line)
                rest = ''
            key = 'npu' if label.group(1) == 'NPU' else 'phy_id'
            out['devices'].append({key: int(label.group(2)), 'links': links, 'cpu_affinity': rest or None})
            continue
        out['unparsed'].append(line)
    return out


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
