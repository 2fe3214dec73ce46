# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""io_info with a scripted run_command: vmstat and iostat run together, missing tools, check mode, the fio file."""

from __future__ import annotations

import os

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils._domain import io as _io
from ansible_collections.npuops.ascend.plugins.modules import io_info

VMSTAT = '/usr/bin/vmstat'
IOSTAT = '/usr/bin/iostat'
FIO = '/usr/bin/fio'
TOOLS = {'vmstat': VMSTAT, 'iostat': IOSTAT}
CAPTURES = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'captures'))


def capture(name, contains):
    """The sample of a capture file whose '# source:' line contains ``contains`` (verbatim lines, annotations dropped)."""
    with open(os.path.join(CAPTURES, name), encoding='utf-8') as handle:
        lines = handle.read().split('\n')
    out, taking = [], False
    for line in lines:
        if line.startswith('# source:'):
            if taking:
                break
            taking = contains in line
            continue
        if taking and not line.startswith('# '):
            out.append(line)
    while out and not out[-1].strip():
        out.pop()
    assert out, contains
    return '\n'.join(out) + '\n'


VMSTAT_OUT = capture('vmstat.txt', 'procps-ng 4.0.2')          # 4 rows: since boot + 3
IOSTAT_OUT = capture('iostat_-c.txt', 'iostat -m 2 3')          # 3 reports: since boot + 2
IO_FIXTURES = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'fixtures', 'io'))


def io_sample(name):
    with open(os.path.join(IO_FIXTURES, name + '.txt'), encoding='utf-8') as handle:
        return handle.read()


# fio's JSON (fio 3.42, between the plain lines of --output-format=json,normal)
FIO_OUT = io_sample('fio_json_normal_3.42_libaio_randwrite')
# two reports of iostat -x of sysstat before 12 (the real report twice: the first is the one since boot)
IOSTAT_X_OUT = io_sample('iostat_x_sysstat10_cpu') + '\n' + io_sample('iostat_x_sysstat10_cpu')


@pytest.fixture
def shm(tmp_path, monkeypatch):
    """A fake /proc/mounts naming a temporary directory as the tmpfs of shm_path."""
    shm_dir = tmp_path / 'shm'
    shm_dir.mkdir()
    mounts = tmp_path / 'mounts'
    mounts.write_text('proc /proc proc rw 0 0\ntmpfs %s tmpfs rw,nosuid,nodev,relatime,size=1048576k 0 0\n' % shm_dir)
    monkeypatch.setattr(_io, 'MOUNTS', str(mounts))
    return str(shm_dir)


def args(shm_dir, **more):
    out = {'seconds': 3, 'shm_path': shm_dir}
    out.update(more)
    return out


def test_vmstat_and_iostat_run_concurrently(run_module, shm):
    commands = {(VMSTAT, '1', '4'): (0, VMSTAT_OUT, ''), (IOSTAT, '-x', '1', '4'): (0, IOSTAT_OUT, '')}
    res = run_module(io_info, args(shm), commands, bin_paths=TOOLS, delay=0.3)
    assert not res.failed, res.result
    assert res.max_in_flight == 2
    assert res.elapsed < 0.55
    assert sorted(res.calls) == sorted([[VMSTAT, '1', '4'], [IOSTAT, '-x', '1', '4']])
    result = res.result
    assert result['changed'] is False
    assert result['vmstat']['samples'] == 3 and result['vmstat']['wa_pct'] == [0, 0, 0]
    assert result['vmstat']['wa_mean_pct'] == 0.0 and result['vmstat']['wa_max_pct'] == 0
    assert result['iostat']['iowait_pct'] == [1.3, 0.94]
    assert result['iostat']['iowait_mean_pct'] == 1.12 and result['iostat']['iowait_max_pct'] == 1.3
    assert result['iostat']['cpus'] == 80 and result['cpus'] == 80
    assert result['shm']['mounted'] is True and result['shm']['fstype'] == 'tmpfs'
    assert 'nosuid' in result['shm']['options'] and result['shm']['size_mb'] > 0
    assert result['fio']['ran'] is False and result['fio']['skipped'] == 'no fio_file given'
    assert res.warnings == []


def test_missing_tools_give_nulls_and_name_the_package(run_module, shm):
    res = run_module(io_info, args(shm), {}, bin_paths={'vmstat': None, 'iostat': None})
    assert not res.failed, res.result
    assert res.calls == []
    assert res.result['vmstat']['wa_mean_pct'] is None and res.result['iostat']['iowait_mean_pct'] is None
    text = ' '.join(res.warnings)
    assert 'vmstat not found' in text and 'procps' in text
    assert 'iostat not found' in text and 'sysstat' in text


def test_one_tool_missing_the_other_still_measures(run_module, shm):
    commands = {(VMSTAT, '1', '4'): (0, VMSTAT_OUT, '')}
    res = run_module(io_info, args(shm), commands, bin_paths={'vmstat': VMSTAT, 'iostat': None})
    assert not res.failed
    assert res.result['vmstat']['samples'] == 3 and res.result['iostat']['iowait_mean_pct'] is None
    assert any('sysstat' in warning for warning in res.warnings)


def test_a_failing_tool_is_an_error_entry_not_a_crash(run_module, shm):
    commands = {(VMSTAT, '1', '4'): (0, VMSTAT_OUT, ''), (IOSTAT, '-x', '1', '4'): (1, '', 'Cannot open /proc/stat')}
    res = run_module(io_info, args(shm), commands, bin_paths=TOOLS)
    assert not res.failed
    assert res.result['errors'][0]['what'] == 'iostat' and res.result['errors'][0]['rc'] == 1
    assert 'Cannot open /proc/stat' in res.result['errors'][0]['msg']


def test_timeout_covers_the_window(run_module, shm):
    commands = {('/usr/bin/timeout', '-k', '5', '45', VMSTAT, '1', '31'): (0, VMSTAT_OUT, ''),
                ('/usr/bin/timeout', '-k', '5', '45', IOSTAT, '-x', '1', '31'): (0, IOSTAT_OUT, '')}
    res = run_module(io_info, args(shm, seconds=30), commands, bin_paths=dict(TOOLS, timeout='/usr/bin/timeout'))
    assert not res.failed, res.result


def test_check_mode_skips_fio_and_says_so(run_module, shm, tmp_path):
    target = str(tmp_path / 'fio.test')
    commands = {(VMSTAT, '1', '4'): (0, VMSTAT_OUT, ''), (IOSTAT, '-x', '1', '4'): (0, IOSTAT_OUT, '')}
    res = run_module(io_info, args(shm, fio_file=target), commands, bin_paths=dict(TOOLS, fio=FIO), check_mode=True)
    assert not res.failed
    assert all(call[0] != FIO for call in res.calls)
    assert res.result['fio']['ran'] is False and res.result['fio']['skipped'].startswith('check mode')
    assert any('check mode' in warning for warning in res.warnings)
    assert not os.path.exists(target)


def test_fio_runs_bounded_and_removes_its_file(run_module, shm, tmp_path):
    target = str(tmp_path / 'fio.test')
    fio_argv = (FIO, '--name=npuops-read', '--filename=%s' % target, '--rw=read', '--bs=1M', '--size=64M', '--numjobs=4',
                '--iodepth=16', '--ioengine=libaio', '--direct=1', '--runtime=5', '--group_reporting', '--unlink=1',
                '--output-format=json')

    def fio_writes_and_leaves_the_file():
        with open(target, 'w') as handle:
            handle.write('x')
        return (0, FIO_OUT, '')

    commands = {(VMSTAT, '1', '4'): (0, VMSTAT_OUT, ''), (IOSTAT, '-x', '1', '4'): (0, IOSTAT_OUT, ''),
                fio_argv: fio_writes_and_leaves_the_file}
    res = run_module(io_info, args(shm, fio_file=target, fio_size_mb=64, fio_runtime=5), commands, bin_paths=dict(TOOLS, fio=FIO))
    assert not res.failed, res.result
    fio = res.result['fio']
    assert fio['ran'] is True and fio['removed'] is True
    # the sample is a write job: the aggregate is its write side, the read side stays empty
    assert fio['bw_mb_s'] == 5.096 and fio['iops'] == 1244.176 and fio['runtime_ms'] == 10001
    assert fio['lat_mean_ms'] == 0.8008 and fio['clat_p99_ms'] == 1.6957 and fio['read_bw_mb_s'] is None
    assert fio['disk_util'] == [{'name': 'nvme8n13', 'util_pct': 97.9}] and fio['version'] == '3.42-6-g219f'
    assert (fio['numjobs'], fio['iodepth'], fio['ioengine'], fio['rw']) == (4, 16, 'libaio', 'read')
    assert not os.path.exists(target)
    assert res.calls[-1] == list(fio_argv)


def test_fio_missing_is_skipped_with_a_warning(run_module, shm, tmp_path):
    commands = {(VMSTAT, '1', '4'): (0, VMSTAT_OUT, ''), (IOSTAT, '-x', '1', '4'): (0, IOSTAT_OUT, '')}
    res = run_module(io_info, args(shm, fio_file=str(tmp_path / 'f')), commands, bin_paths=dict(TOOLS, fio=None))
    assert not res.failed
    assert res.result['fio']['ran'] is False and 'not installed' in res.result['fio']['skipped']
    assert any('package fio' in warning for warning in res.warnings)


def test_fio_failure_still_removes_the_file(run_module, shm, tmp_path):
    target = str(tmp_path / 'fio.test')

    def fails():
        with open(target, 'w') as handle:
            handle.write('x')
        return (1, '', 'fio: No space left on device')

    res = run_module(io_info, args(shm, fio_file=target), {}, bin_paths=dict(TOOLS, fio=FIO),
                     default=lambda argv: fails() if argv[0] == FIO else (0, VMSTAT_OUT if argv[0] == VMSTAT else IOSTAT_OUT, ''),
                     strict=False)
    assert res.failed
    assert 'No space left on device' in res.result['msg'] and res.result['msg'].startswith('node-07: ')
    assert not os.path.exists(target)


def test_existing_fio_file_is_never_overwritten(run_module, shm, tmp_path):
    target = tmp_path / 'precious'
    target.write_text('data')
    res = run_module(io_info, args(shm, fio_file=str(target)), {}, bin_paths=dict(TOOLS, fio=FIO))
    assert res.failed and res.calls == []
    assert res.result['msg'] == ('node-07: fio_file %s already exists; io_info never overwrites a file. Give a path that does '
                                 'not exist (it is created for the test and removed afterwards).' % target)
    assert target.read_text() == 'data'


@pytest.mark.parametrize('bad,text', [
    ({'seconds': 0}, 'seconds must be 1-300, got 0'),
    ({'fio_size_mb': 100000}, 'fio_size_mb must be 1-65536, got 100000'),
    ({'fio_runtime': 601}, 'fio_runtime must be 1-600, got 601'),
    ({'fio_block_size': '1 M'}, 'fio_block_size must be a number with an optional k, m or g suffix'),
])
def test_bounds(run_module, shm, bad, text):
    res = run_module(io_info, args(shm, **bad), {}, bin_paths=TOOLS)
    assert res.failed and text in res.result['msg'] and res.calls == []


def test_shm_not_mounted(run_module, tmp_path, monkeypatch):
    mounts = tmp_path / 'mounts'
    mounts.write_text('proc /proc proc rw 0 0\n')
    monkeypatch.setattr(_io, 'MOUNTS', str(mounts))
    commands = {(VMSTAT, '1', '4'): (0, VMSTAT_OUT, ''), (IOSTAT, '-x', '1', '4'): (0, IOSTAT_OUT, '')}
    res = run_module(io_info, args(str(tmp_path)), commands, bin_paths=TOOLS)
    assert not res.failed
    assert res.result['shm']['mounted'] is False and res.result['shm']['size_mb'] is None
    assert any('is not a mount point' in warning for warning in res.warnings)


def test_iostat_x_devices_per_disk(run_module, shm):
    commands = {(VMSTAT, '1', '4'): (0, VMSTAT_OUT, ''), (IOSTAT, '-x', '1', '4'): (0, IOSTAT_X_OUT, '')}
    res = run_module(io_info, args(shm), commands, bin_paths=TOOLS)
    assert not res.failed, res.result
    iostat = res.result['iostat']
    assert iostat['iowait_pct'] == [7.31]     # the first report (since boot) is left out
    assert [disk['device'] for disk in iostat['devices']] == ['sda', 'sdq']
    sdq = iostat['devices'][1]
    assert sdq['samples'] == 1 and sdq['util_max_pct'] == 20.65 and sdq['await_mean_ms'] == 8.39
    assert sdq['r_await_mean_ms'] == 17.76 and sdq['w_await_mean_ms'] == 3.35 and sdq['queue_mean'] == 1.45
    assert 'svctm' in iostat['device_columns']


def test_await_of_sysstat_12_is_weighted_by_the_requests():
    # sysstat 12 prints no combined await: r_await and w_await weighted by r/s and w/s (the real nvme0n1 row)
    row = {'device': 'nvme0n1', 'r_s': 21.5, 'r_await_ms': 0.18, 'w_s': 272.1, 'w_await_ms': 1.69, 'util_pct': 0.97}
    assert _io._weighted_await(row) == round((21.5 * 0.18 + 272.1 * 1.69) / (21.5 + 272.1), 2)
    summary = _io.device_summary([[row, {'device': 'loop0', 'util_pct': 100.0}]])
    assert [disk['device'] for disk in summary] == ['nvme0n1']


@pytest.mark.parametrize('name,value', [('fio_numjobs', 0), ('fio_iodepth', 2000)])
def test_fio_ranges(run_module, shm, name, value):
    res = run_module(io_info, args(shm, **{name: value}), {}, bin_paths=TOOLS)
    assert res.failed and name in res.result['msg']
