# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The IO parsers (vmstat, iostat, fio, /proc/mounts) against every real sample of tests/fixtures/captures.

A capture file holds samples, each after a ``# source:`` line; annotation lines start with ``# ``. Every sample is
parsed with no unparsed line, and its values are asserted; odd input goes to ``unparsed`` without raising.
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils._parsers import io

CAPTURES = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'captures'))


def samples(name):
    """{source: text} of a capture file, in file order (annotation lines dropped, trailing blank lines kept out)."""
    found = []
    with open(os.path.join(CAPTURES, name), encoding='utf-8') as handle:
        lines = handle.read().split('\n')
    current = None
    for line in lines:
        if line.startswith('# source:'):
            current = [line[len('# source:'):].strip(), []]
            found.append(current)
        elif current is not None and not (line.startswith('# ') or line == '#'):
            current[1].append(line)
    result = []
    for source, body in found:
        while body and not body[-1].strip():
            body.pop()
        result.append((source, '\n'.join(body) + '\n'))
    return result


def one(name, contains):
    matching = [text for source, text in samples(name) if contains in source]
    assert len(matching) == 1, (name, contains)
    return matching[0]


# ------------------------------------------------------------------------------------------------ vmstat

VMSTAT_COLUMNS = ['r', 'b', 'swpd', 'free', 'buff', 'cache', 'si', 'so', 'bi', 'bo', 'in', 'cs', 'us', 'sy', 'id', 'wa', 'st']


@pytest.mark.parametrize('source,text', samples('vmstat.txt'))
def test_every_vmstat_sample_parses_completely(source, text):
    parsed = io.parse_vmstat(text)
    assert parsed['unparsed'] == [], source
    assert parsed['samples'], source
    for sample in parsed['samples']:
        assert 'wa' in sample and 'id' in sample


def test_vmstat_procps_ng_4():
    parsed = io.parse_vmstat(one('vmstat.txt', 'procps-ng 4.0.2'))
    assert parsed['columns'] == VMSTAT_COLUMNS
    assert len(parsed['samples']) == 4
    first = parsed['samples'][0]
    assert first['free'] == 24085136 and first['us'] == 30 and first['id'] == 63 and first['wa'] == 0


def test_vmstat_wide_values_and_id_100():
    parsed = io.parse_vmstat(one('vmstat.txt', 'dkluffy'))
    assert [s['wa'] for s in parsed['samples']] == [1, 0, 0, 0]
    assert parsed['samples'][1]['id'] == 100
    assert parsed['samples'][0]['free'] == 2448924


def test_vmstat_old_procps_without_st():
    parsed = io.parse_vmstat(one('vmstat.txt', 'sensu-community-plugins'))
    assert parsed['columns'] == VMSTAT_COLUMNS[:-1]
    assert parsed['samples'] == [dict(zip(VMSTAT_COLUMNS, [2, 0, 152388, 226112, 11092, 1087072, 0, 2, 1, 1, 0, 1, 47, 22, 27, 1]))]


def test_vmstat_time_column_of_a_collector():
    parsed = io.parse_vmstat(one('vmstat.txt', 'Exadata'))
    assert [s['time'] for s in parsed['samples']] == ['20:21:01', '20:21:06', '20:21:11']
    assert parsed['samples'][0]['r'] == 56 and parsed['samples'][0]['cs'] == 188310 and parsed['samples'][0]['wa'] == 0


def test_vmstat_odd_lines_are_unparsed():
    text = ('procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----\n'
            ' 1  0 garbage\n'
            ' r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st\n'
            ' 1  0      0 100 1 1 0 0 0 0 1 1 1 1 97 1 0\n'
            ' 1  0      0 100 1 1 0 0 0 0 1 1 1 1 97 1\n'
            'vmstat: bad delay\n')
    parsed = io.parse_vmstat(text)
    assert parsed['unparsed'] == [' 1  0 garbage', ' 1  0      0 100 1 1 0 0 0 0 1 1 1 1 97 1', 'vmstat: bad delay']
    assert len(parsed['samples']) == 1


@pytest.mark.parametrize('text', ['', None, '\x00\x01', '1 2 3', 'r b us sy id\n' + '9' * 5000])
def test_vmstat_never_raises(text):
    parsed = io.parse_vmstat(text)
    assert isinstance(parsed['unparsed'], list)


# ------------------------------------------------------------------------------------------------ iostat

@pytest.mark.parametrize('source,text', samples('iostat_-c.txt'))
def test_every_iostat_sample_parses_completely(source, text):
    parsed = io.parse_iostat(text)
    assert parsed['unparsed'] == [], source
    assert parsed['reports'], source
    assert parsed['cpus'] and parsed['kernel'] and parsed['arch'] == 'x86_64'


def test_iostat_c_1_3():
    parsed = io.parse_iostat(one('iostat_-c.txt', 'iostat -c 1 3'))
    assert (parsed['system'], parsed['kernel'], parsed['host'], parsed['date'], parsed['cpus']) == (
        'Linux', '3.10.0-957.21.3.el7.x86_64', 'frytea-dev-test', '07/14/2020', 2)
    assert parsed['reports'][0] == {'user_pct': 0.4, 'nice_pct': 0.0, 'system_pct': 0.31, 'iowait_pct': 0.0,
                                    'steal_pct': 0.0, 'idle_pct': 99.29}
    assert [r['idle_pct'] for r in parsed['reports']] == [99.29, 99.5, 99.5]


def test_iostat_tabs_and_iowait():
    parsed = io.parse_iostat(one('iostat_-c.txt', 'CentOS 6'))
    assert parsed['host'] == 'localhost.localdomain' and parsed['date'] == '07/06/19' and parsed['cpus'] == 1
    assert parsed['reports'] == [{'user_pct': 0.43, 'nice_pct': 0.0, 'system_pct': 1.41, 'iowait_pct': 3.06,
                                  'steal_pct': 0.0, 'idle_pct': 95.1}]
    parsed = io.parse_iostat(one('iostat_-c.txt', 'Ubuntu 16.04'))
    assert parsed['reports'][0]['user_pct'] == 12.93 and parsed['reports'][0]['iowait_pct'] == 3.35


def test_iostat_locale_date():
    parsed = io.parse_iostat(one('iostat_-c.txt', 'Chinese locale'))
    assert parsed['date'] == '2018年12月14日' and parsed['cpus'] == 48
    assert parsed['reports'][0]['iowait_pct'] == 0.08


def test_iostat_device_tables_are_skipped():
    parsed = io.parse_iostat(one('iostat_-c.txt', 'iostat -m 2 3'))
    assert parsed['cpus'] == 80 and parsed['host'] == 'node27'
    assert [r['iowait_pct'] for r in parsed['reports']] == [0.21, 1.3, 0.94]


def test_iostat_odd_lines_are_unparsed():
    text = ('Linux 6.1 (x) \t01/01/2026 \t_aarch64_\t(192 CPU)\n\n'
            'avg-cpu:  %user   %nice %system %iowait  %steal   %idle\n'
            '           1.00    0.00    x    0.30    0.00   98.70\n'
            'avg-cpu:  %user   %weird\n'
            'Cannot open /proc/stat\n')
    parsed = io.parse_iostat(text)
    assert parsed['arch'] == 'aarch64' and parsed['cpus'] == 192
    assert parsed['reports'] == []
    # a label not known (%weird) is a column kept under extra; the line after it is not a row of numbers
    assert parsed['unparsed'] == ['           1.00    0.00    x    0.30    0.00   98.70', 'Cannot open /proc/stat']


@pytest.mark.parametrize('text', ['', None, 'avg-cpu:  %user', 'avg-cpu:  %iowait\n' + '1' * 5000, '\x00'])
def test_iostat_never_raises(text):
    assert isinstance(io.parse_iostat(text)['unparsed'], list)


# ------------------------------------------------------------------------------------------------ fio

@pytest.mark.parametrize('source,text', samples('fio_seq_read.txt'))
def test_every_fio_sample_parses_completely(source, text):
    parsed = io.parse_fio(text)
    assert parsed['unparsed'] == [], source
    assert parsed['read_bw_mib_s'] and parsed['runtime_ms']


def test_fio_full_read_job():
    parsed = io.parse_fio(one('fio_seq_read.txt', 'aws ec2 micro'))
    assert parsed == {'version': '3.1', 'job': 'myjob', 'rw': 'read', 'ioengine': 'libaio', 'iodepth': 4,
                      'read_iops': 3070.0, 'read_bw_mib_s': 11.0, 'read_bw_mb_s': 12.6, 'read_io_mib': 3598.0,
                      'runtime_ms': 300002, 'errors': [], 'unparsed': []}


def test_fio_group_summary_only():
    parsed = io.parse_fio(one('fio_seq_read.txt', 'axboe/fio#576'))
    assert parsed['read_bw_mib_s'] == 384.0 and parsed['read_bw_mb_s'] == 403.0
    assert parsed['read_io_mib'] == 32768.0 and parsed['runtime_ms'] == 85313 and parsed['read_iops'] is None


def test_fio_errors_and_odd_lines():
    text = 'fio: failed parsing rw=sideways\nsomething else\n   read: IOPS=28.8k, BW=112MiB/s (118MB/s)(4096MiB/36447msec)\n'
    parsed = io.parse_fio(text)
    assert parsed['errors'] == ['failed parsing rw=sideways']
    assert parsed['unparsed'] == ['something else']
    assert parsed['read_iops'] == 28800.0 and parsed['read_bw_mib_s'] == 112.0


@pytest.mark.parametrize('text', ['', None, 'READ: bw=xMiB/s (y), io=z (w), run=1-2msec', 'read: IOPS=1e9k', '\x00'])
def test_fio_never_raises(text):
    assert isinstance(io.parse_fio(text)['unparsed'], list)


# ------------------------------------------------------------------------------------------------ /proc/mounts

def test_mounts_real_line():
    parsed = io.parse_mounts(one('dev_shm.txt', '/proc/mounts'))
    assert parsed == {'mounted': True, 'device': 'tmpfs', 'fstype': 'tmpfs', 'options': ['rw', 'relatime', 'size=24683568k'],
                      'size_option_kb': 24683568, 'unparsed': []}


def test_mounts_last_line_wins_and_absent():
    text = ('tmpfs /dev/shm tmpfs rw,relatime,size=24683568k 0 0\n'
            'tmpfs /dev/shm tmpfs rw,nosuid,nodev,relatime,size=1048576k 0 0\nbroken\n')
    parsed = io.parse_mounts(text)
    assert parsed['size_option_kb'] == 1048576 and 'nosuid' in parsed['options']
    assert parsed['unparsed'] == ['broken']
    assert io.parse_mounts('proc /proc proc rw 0 0\n')['mounted'] is False
    assert io.parse_mounts('tmpfs /my\\040shm tmpfs rw,size=2g 0 0\n', '/my shm')['size_option_kb'] == 2 * 1024 * 1024
