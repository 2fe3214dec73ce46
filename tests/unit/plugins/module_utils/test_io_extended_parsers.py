# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The extended IO parsers of stage 8 against real samples (tests/unit/fixtures/io, each with a .source file):
``iostat -x`` device reports of sysstat before 12 (``Device:``, ``await``, ``svctm``) and of sysstat 12 (``Device``,
``r_await``/``w_await`` only, ``aqu-sz``), and fio's JSON output of fio 3.1 (no ``bw_bytes``) and fio 3.42 (between
plain lines of ``--output-format=json,normal``)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils._parsers import io

FIXTURES = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'fixtures', 'io'))


def sample(name):
    with open(os.path.join(FIXTURES, name + '.txt'), encoding='utf-8') as handle:
        return handle.read()


def test_every_sample_names_its_source():
    names = sorted(name[:-4] for name in os.listdir(FIXTURES) if name.endswith('.txt'))
    assert names
    for name in names:
        with open(os.path.join(FIXTURES, name + '.source'), encoding='utf-8') as handle:
            text = handle.read()
        assert text.startswith('source: ') and 'kind: real' in text, name


def test_iostat_x_old_sysstat_with_await_and_svctm():
    got = io.parse_iostat_devices(sample('iostat_x_sysstat10_await'))
    assert got['unparsed'] == []
    assert got['reports'] == [[{
        'device': 'xvdf', 'rrqm_s': 0.0, 'wrqm_s': 2934.0, 'r_s': 0.0, 'w_s': 2000.0, 'read_kb_s': 0.0,
        'write_kb_s': round(48.69 * 1024, 3), 'extra': {'avgrq-sz': 49.86}, 'queue': 2.59, 'await_ms': 1.3,
        'r_await_ms': 0.0, 'w_await_ms': 1.3, 'svctm_ms': 0.5, 'util_pct': 99.6}]]


def test_iostat_x_old_sysstat_after_a_cpu_report():
    text = sample('iostat_x_sysstat10_cpu')
    got = io.parse_iostat_devices(text)
    assert got['unparsed'] == []
    rows = got['reports'][0]
    assert [row['device'] for row in rows] == ['sdq', 'sda']
    assert rows[0]['util_pct'] == 20.65 and rows[0]['await_ms'] == 8.39 and rows[0]['r_await_ms'] == 17.76
    assert rows[1]['w_await_ms'] == 25.28 and rows[1]['read_kb_s'] == 9450.37 and rows[1]['queue'] == 0.04
    # the CPU report of the same text is the other parser's
    cpu = io.parse_iostat(text)
    assert cpu['reports'][0]['iowait_pct'] == 7.31 and cpu['unparsed'] == []


def test_iostat_x_sysstat_12_reads_the_new_columns_by_label():
    text = sample('iostat_x_sysstat12')
    got = io.parse_iostat_devices(text)
    assert got['unparsed'] == []
    assert 'await' not in got['columns'] and 'aqu-sz' in got['columns']
    dm0, nvme = got['reports'][0]
    assert dm0 == {'device': 'dm-0', 'r_s': 23.8, 'read_kb_s': 898.8, 'rrqm_s': 0.0, 'extra': {
        '%rrqm': 0.0, 'rareq-sz': 37.7, '%wrqm': 0.0, 'wareq-sz': 8.75, 'f/s': 0.0}, 'r_await_ms': 0.25, 'w_s': 285.7,
        'write_kb_s': 2498.9, 'wrqm_s': 0.0, 'w_await_ms': 4.09, 'f_await_ms': 0.0, 'queue': 1.17, 'util_pct': 1.19}
    assert nvme['device'] == 'nvme0n1' and nvme['util_pct'] == 0.97 and 'await_ms' not in nvme
    assert io.parse_iostat(text)['cpus'] == 8


def test_iostat_x_reports_and_bad_rows():
    text = ('Device            r/s     rkB/s   r_await  %util\nsda    1.00  2.00  3.00  4.00\nsdb    1.00  2.00  x  4.00\n'
            'sdc 1.00\n\nDevice            r/s     rkB/s   r_await  %util\nsda    5.00  6.00  7.00  99.00\n')
    got = io.parse_iostat_devices(text)   # synthetic: a damaged and a short row
    assert len(got['reports']) == 2 and got['reports'][1][0]['util_pct'] == 99.0
    assert got['unparsed'] == ['sdb    1.00  2.00  x  4.00', 'sdc 1.00']


@pytest.mark.parametrize('text', ['', 'Device\n', 'Device: r/s r/s\nsda 1 2\n', '\x00\xff', 'garbage line\n'])
def test_iostat_x_never_raises(text):
    got = io.parse_iostat_devices(text)
    assert isinstance(got['reports'], list)


def test_fio_json_3_1_without_bw_bytes():
    got = io.parse_fio_json(sample('fio_json_3.1_sync_write'))
    assert got['unparsed'] == [] and got['errors'] == [] and got['job_errors'] == []
    assert got['version'] == '3.1' and got['jobs'] == 1
    assert got['read'] is None and got['trim'] is None
    write = got['write']
    assert write['bw_mib_s'] == round(1753471 * 1024 / 1024.0 ** 2, 3)
    assert write['iops'] == 438367.893 and write['runtime_ms'] == 598 and write['total_ios'] == 262144
    assert write['io_mib'] == 1024.0
    assert write['lat_mean_ms'] == round(2117.878979 / 1e6, 4) and write['clat_p99_ms'] == round(6176 / 1e6, 4)
    assert got['disk_util'] == [{'name': 'dm-1', 'util_pct': 0.0}, {'name': 'dm-0', 'util_pct': 0.0},
                                {'name': 'nvme0n1', 'util_pct': 0.0}]


def test_fio_json_3_42_between_plain_lines():
    got = io.parse_fio_json(sample('fio_json_normal_3.42_libaio_randwrite'))
    assert got['unparsed'] == [] and got['version'] == '3.42-6-g219f'
    write = got['write']
    assert write['bw_mb_s'] == 5.096 and write['bw_mib_s'] == round(5096143 / 1024.0 ** 2, 3)
    assert write['iops'] == 1244.176 and write['clat_p99_ms'] == 1.6957 and write['lat_mean_ms'] == 0.8008
    assert got['disk_util'] == [{'name': 'nvme8n13', 'util_pct': 97.9}]


def test_fio_json_sums_jobs_without_group_reporting():
    # synthetic: the real 3.42 job twice (two jobs of one run, no --group_reporting)
    import json
    text = sample('fio_json_normal_3.42_libaio_randwrite')
    start = text.index('{')
    document, _end = json.JSONDecoder().raw_decode(text[start:])
    document['jobs'] = document['jobs'] * 2
    got = io.parse_fio_json(json.dumps(document))
    assert got['jobs'] == 2 and got['write']['iops'] == round(2 * 1244.175582, 3)
    assert got['write']['lat_mean_ms'] == 0.8008 and got['write']['total_ios'] == 2 * 12443


@pytest.mark.parametrize('text', ['', 'fio: file /x: No space left on device\n', '{"jobs": 3}', '{"jobs": [{"read": 1}]}',
                                  '{ "jobs" : [ ', '\x00'])
def test_fio_json_never_raises(text):
    got = io.parse_fio_json(text)
    assert got['read'] is None
    if text.startswith('fio:'):
        assert got['errors'] == ['file /x: No space left on device']
