# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A parser never raises on tool output.

Every ``.txt`` case of the fixture tree (tests/unit/fixtures/parsers) and the docstring sample of
every parser in every ``PARSERS`` table are damaged in seeded, reproducible ways (truncation,
junk numbers such as ``NA``/``1e9``/``0x1f``/a 5000-digit number, NUL bytes, non-ASCII digits,
doubled colons, swapped or dropped lines, huge or descending CPU ranges, long runs of blanks) and
parsed again. Every
result must be a dict whose ``unparsed`` is a list of strings. A failure names the case and the
mutation seed; ``_mutants(text, seed, count)`` rebuilds the text.
"""

from __future__ import annotations

import math
import os
import random
import re
import time
import zlib

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils._parsers import (
    cpupower, hccl_bench, hccn_tool, host, npu_smi, numa, train_log, versions)
from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import expand_cpu_list
from ansible_collections.npuops.ascend.plugins.module_utils._tools import hccn_tool as _hccn_tool
from ansible_collections.npuops.ascend.plugins.module_utils._tools import npu_smi as _npu_smi
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import parse_output

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.normpath(os.path.join(HERE, '..', '..', 'fixtures', 'parsers'))

FAMILIES = {'hccn_tool': hccn_tool, 'npu_smi': npu_smi, 'numa': numa, 'versions': versions, 'hccl_bench': hccl_bench,
            'cpupower': cpupower, 'train_log': train_log, 'host': host}
MUTATIONS_PER_FAMILY = 600

HUGE = '9' * 5000
JUNK = ('NA', 'x', '1e9', '0x1f', '', '-1', '1.2.3', '.', '-', HUGE, '\u0663', '\uff13', '\u00b2', '\x00',
        '0-99999999999', '144-16', 'x-NA', '0-' + HUGE)
ODD_DIGITS = ('\u0663', '\uff13', '\u00b2', '\u2460', '\u0e53')


def _read(path):
    with open(path, encoding='utf-8') as handle:
        return handle.read()


def _docstring_sample(func):
    """The literal block after the 'Sample...::' line of a parser docstring, dedented."""
    lines = (func.__doc__ or '').splitlines()
    for index, line in enumerate(lines):
        if line.strip().startswith('Sample'):
            base = len(line) - len(line.lstrip(' '))
            start = next(i for i in range(index, len(lines)) if lines[i].rstrip().endswith('::'))
            block = []
            for body in lines[start + 1:]:
                if body.strip() and len(body) - len(body.lstrip(' ')) <= base:
                    break
                block.append(body)
            indent = min(len(b) - len(b.lstrip(' ')) for b in block if b.strip())
            return '\n'.join(b[indent:] for b in block).strip('\n') + '\n'
    return ''


ADAPTERS = {'hccn_tool': _hccn_tool, 'npu_smi': _npu_smi}


def _runner_of(family, query):
    return ADAPTERS[family].classify_error if query == 'errors' else FAMILIES[family].PARSERS[query]


def _base_texts():
    """{(family, query): [(case id, text)]}: the fixture cases plus the docstring sample of each parser."""
    texts = {}
    for family in sorted(os.listdir(TREE)):
        if family not in FAMILIES:
            continue
        for query in sorted(os.listdir(os.path.join(TREE, family))):
            folder = os.path.join(TREE, family, query)
            for name in sorted(os.listdir(folder)):
                if name.endswith('.txt'):
                    texts.setdefault((family, query), []).append(('%s/%s/%s' % (family, query, name[:-4]),
                                                                  _read(os.path.join(folder, name))))
    for family, module in FAMILIES.items():
        for query, parser in module.PARSERS.items():
            texts.setdefault((family, query), []).append(('%s/%s/<docstring>' % (family, query), _docstring_sample(parser)))
    return texts


BASE = _base_texts()


# --- mutations -----------------------------------------------------------------------------

def _truncate(text, rng):
    return text[:rng.randrange(len(text) + 1)]


def _digits_to_junk(text, rng):
    runs = list(re.finditer(r'[0-9]+', text))
    if not runs:
        return text + rng.choice(JUNK)
    run = rng.choice(runs)
    return text[:run.start()] + rng.choice(JUNK) + text[run.end():]


def _insert(text, rng, piece):
    at = rng.randrange(len(text) + 1)
    return text[:at] + piece + text[at:]


def _insert_nul(text, rng):
    return _insert(text, rng, '\x00')


def _insert_odd_digit(text, rng):
    return _insert(text, rng, rng.choice(ODD_DIGITS))


def _odd_digits_in_a_run(text, rng):
    runs = list(re.finditer(r'[0-9]+', text))
    if not runs:
        return _insert_odd_digit(text, rng)
    run = rng.choice(runs)
    odd = rng.choice(ODD_DIGITS)
    return text[:run.start()] + odd * len(run.group(0)) + text[run.end():]


def _double_colon(text, rng):
    colons = [m.start() for m in re.finditer(':', text)]
    if not colons:
        return _insert(text, rng, '::')
    at = rng.choice(colons)
    return text[:at] + '::' + text[at + 1:]


def _swap_lines(text, rng):
    lines = text.split('\n')
    if len(lines) < 2:
        return text
    first, second = rng.sample(range(len(lines)), 2)
    lines[first], lines[second] = lines[second], lines[first]
    return '\n'.join(lines)


def _drop_line(text, rng):
    lines = text.split('\n')
    del lines[rng.randrange(len(lines))]
    return '\n'.join(lines)


def _duplicate_line(text, rng):
    lines = text.split('\n')
    at = rng.randrange(len(lines))
    lines.insert(at, lines[at])
    return '\n'.join(lines)


def _delete_char(text, rng):
    if not text:
        return text
    at = rng.randrange(len(text))
    return text[:at] + text[at + 1:]


def _huge_range(text, rng):
    ranges = list(re.finditer(r'[0-9]+(?:-[0-9]+)?', text))
    piece = rng.choice(('0-99999999999', '99999999999', '144-16', 'x-NA', '0-' + HUGE, '65536', '0-65536'))
    if not ranges:
        return _insert(text, rng, piece)
    found = rng.choice(ranges)
    return text[:found.start()] + piece + text[found.end():]


def _huge_number(text, rng):
    return _insert(text, rng, HUGE)


def _long_blanks(text, rng):
    return _insert(text, rng, rng.choice((' ', '\t')) * 3000)


def _tabs_and_crs(text, rng):
    return text.replace(' ', '\t', rng.randrange(1, 4)).replace('\n', '\r\n', rng.randrange(0, 3))


MUTATORS = (_truncate, _digits_to_junk, _insert_nul, _insert_odd_digit, _odd_digits_in_a_run, _double_colon, _swap_lines,
            _drop_line, _duplicate_line, _delete_char, _huge_range, _huge_number, _long_blanks, _tabs_and_crs)


def _mutants(text, seed, count):
    """``count`` damaged copies of ``text``; the same seed gives the same copies."""
    rng = random.Random(seed)
    out = []
    for index in range(count):
        mutated = text
        # every mutator comes first in turn (from a seed-dependent start), then up to two random ones
        for mutator in [MUTATORS[(seed + index) % len(MUTATORS)]] + rng.sample(MUTATORS, rng.randrange(0, 3)):
            mutated = mutator(mutated, rng)
        out.append(mutated)
    return out


def _check(result, query):
    if query == 'errors':
        assert result is None or isinstance(result, dict)
        return
    assert isinstance(result, dict), type(result)
    assert isinstance(result.get('unparsed'), list), result.get('unparsed')
    assert all(isinstance(line, str) for line in result['unparsed'])


def _failures(family):
    """Run every mutant of every base text of ``family``; return (count, failures)."""
    groups = [(query, case, text) for (fam, query), cases in sorted(BASE.items()) if fam == family for case, text in cases]
    per_text = max(4, math.ceil(MUTATIONS_PER_FAMILY / len(groups)))
    count = 0
    failures = []
    for query, case, text in groups:
        runner = _runner_of(family, query)
        seed = zlib.crc32(case.encode('utf-8'))
        for index, mutated in enumerate(_mutants(text, seed, per_text)):
            count += 1
            try:
                _check(runner(mutated), query)
            except Exception as exc:  # the point of the test: report every raise, not the first
                failures.append('%s mutant %d (seed %d): %s: %s' % (case, index, seed, type(exc).__name__, str(exc)[:200]))
    return count, failures


@pytest.mark.parametrize('family', sorted(FAMILIES))
def test_mutated_samples_never_make_a_parser_raise(family):
    count, failures = _failures(family)
    assert count >= 200, count
    assert not failures, '%d of %d mutants failed, e.g.:\n%s' % (len(failures), count, '\n'.join(failures[:8]))


def test_every_parser_reads_every_sample_of_every_tool():
    """Foreign text (another query's output, another tool's) is unparsed lines, never an exception."""
    texts = [text for cases in BASE.values() for _case, text in cases]
    failures = []
    for family, module in sorted(FAMILIES.items()):
        for query, parser in sorted(module.PARSERS.items()):
            for text in texts:
                try:
                    _check(parser(text), query)
                except Exception as exc:  # collect them all
                    failures.append('%s/%s on %r: %s: %s' % (family, query, text[:60], type(exc).__name__, exc))
    assert not failures, '\n'.join(failures[:8])


def test_every_parser_has_text_to_chew_on():
    for family, module in FAMILIES.items():
        for query, parser in module.PARSERS.items():
            assert _docstring_sample(parser).strip(), (family, query)
            assert BASE[(family, query)], (family, query)


# --- the lines that used to raise --------------------------------------------------------------

TLS_HEAD = 'dev_id:0, tls switch[1](0:disable, 1:enable), tls preconfigured[1](0:non-preset, 1:preset), tls alarm time threshold[60]days\n'
TLS_CERT = 'dev_id:0, [pub cert] info:\n\t issuer[/C=CN/O=HUAWEI]\n'


@pytest.mark.parametrize('junk', ['NA', 'x', '1e9', '0x1f', '', '-1', HUGE, '\u0663'], ids=lambda j: repr(j)[:12])
def test_tls_expiration_status_that_is_not_a_number(junk):
    line = '\t tls expiration status[%s](0:normal, 1:expiring, 2:expired)' % junk
    parsed = hccn_tool.parse_tls_get(TLS_HEAD + TLS_CERT + line + '\n')
    assert parsed['unparsed'] == [line]
    assert parsed['certs'] == {'pub': {'issuer': '/C=CN/O=HUAWEI'}}
    assert (parsed['enabled'], parsed['alarm_threshold_days']) == (True, 60)


def test_tls_alarm_threshold_that_is_not_a_number():
    head = TLS_HEAD.replace('[60]days', '[NA]days')
    parsed = hccn_tool.parse_tls_get(head)
    assert parsed['unparsed'] == [head.rstrip('\n')]
    assert parsed['alarm_threshold_days'] is None and parsed['enabled'] is True


@pytest.mark.parametrize('value', [HUGE, '\u0663\u0663', '9000x', '1e4'], ids=['5000 digits', 'arabic-indic', 'suffix', 'exponent'])
def test_mtu_that_is_not_a_number(value):
    line = 'mtu:%s' % value
    assert hccn_tool.parse_mtu_get(line + '\n') == {'mtu': None, 'unparsed': [line]}


@pytest.mark.parametrize('cpus', ['0 1 x', '0 1\x002', '\u0663 4', '0 99999999999', '0 ' + HUGE, 'x-NA', '144-16'])
def test_numactl_cpu_line_that_is_not_a_cpu_list(cpus):
    line = 'node 0 cpus: %s' % cpus
    parsed = numa.parse_numactl('available: 1 nodes (0)\n' + line + '\nnode 0 size: 193050 MB\n')
    assert parsed['unparsed'] == [line]
    assert parsed['nodes'] == [{'id': 0, 'cpus': [], 'memory_mb': 193050, 'free_mb': None}]


@pytest.mark.parametrize('cpus', ['x-NA', '144-16', '0-99999999999', '0-' + HUGE, '0-2\x00', '\u0663-7', '0,,x'])
def test_lscpu_numa_line_that_is_not_a_cpu_list(cpus):
    line = 'NUMA node0 CPU(s):    %s' % cpus
    parsed = numa.parse_lscpu('NUMA node(s):         1\n' + line + '\nNUMA node1 CPU(s):    24-47\n')
    assert parsed['unparsed'] == [line]
    assert parsed['numa_nodes'] == {1: list(range(24, 48))}


def test_lscpu_label_that_would_clobber_the_parser_keys():
    parsed = numa.parse_lscpu('NUMA nodes):         8\nNUMA node0 CPU(s):   0-1\n')
    assert parsed['numa_nodes'] == {0: [0, 1]} and parsed['unparsed'] == ['NUMA nodes):         8']


def test_topo_affinity_that_is_not_a_cpu_list():
    text = '\t   NPU0       CPU Affinity\nNPU0       X          0-99999999999\n'
    parsed = npu_smi.parse_topo(text)
    assert parsed['devices'] == [{'npu': 0, 'links': {}, 'cpu_affinity': None}]
    assert parsed['unparsed'] == ['NPU0       X          0-99999999999']


def test_cpupower_cpu_beyond_the_bound():
    parsed = cpupower.parse_frequency_info_policy('analyzing CPU 99999999999:\n  Unable to determine current policy\n')
    assert parsed == {'cpus': {}, 'unparsed': ['analyzing CPU 99999999999:']}


def test_version_brackets_stay_linear():
    """A long value of bracket groups and spaces used to take exponential time before it failed."""
    value = '[a]  ' * 16 + 'x'
    started = time.monotonic()
    parsed = versions.parse_version_info('compatible_version=%s\n' % value)
    assert time.monotonic() - started < 1.0
    assert parsed['compatible_version'] == value


@pytest.mark.parametrize('parser, line', [
    (npu_smi.parse_board, '\tNPU ID' + ' ' * 20000 + 'x'),
    (npu_smi.parse_health, '\t' + ' ' * 20000 + ': node type' + ' ' * 20000 + 'x'),
    (hccn_tool.parse_optical_get, 'temperature' + ' ' * 20000 + 'x'),
    (hccn_tool.parse_ip_get, ' ' * 20000 + 'ipaddr' + ' ' * 20000),
], ids=['board', 'health', 'optical', 'ip'])
def test_long_blank_runs_cost_linear_time(parser, line):
    """The key/value split used to backtrack in cubic time over long runs of blanks."""
    started = time.monotonic()
    parsed = parser(line + '\n')
    assert time.monotonic() - started < 1.0
    assert isinstance(parsed['unparsed'], list)


def test_huge_range_is_refused_before_it_is_built():
    started = time.monotonic()
    with pytest.raises(ValueError, match='goes beyond 65535'):
        expand_cpu_list('0-99999999999')
    assert time.monotonic() - started < 0.5


def test_module_path_sees_unparsed_lines_not_a_tool_error():
    """_runner.parse_output turns a parser exception into a ToolError; malformed output no longer gets there."""
    line = '\t tls expiration status[NA](0:normal, 1:expiring, 2:expired)'
    data, unparsed = parse_output(hccn_tool.PARSERS['tls'], ['hccn_tool', '-i', '0', '-tls', '-g'], TLS_HEAD + TLS_CERT + line + '\n')
    assert unparsed == [line] and data['enabled'] is True
