"""ascend_diagnose: known codes in CANN logs, counted with first/last time, from real log lines.

The log files are cut from tests/fixtures/captures/plog_samples.txt (real lines, each case with its source).
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils._domain import diagnose as _diagnose
from ansible_collections.npuops.ascend.plugins.modules import ascend_diagnose

CAPTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'captures',
                                        'plog_samples.txt'))


def cases():
    """The cases of the capture file: name -> its lines (verbatim, without the comment lines)."""
    found = {}
    name = None
    with open(CAPTURES, encoding='utf-8') as handle:
        for raw in handle:
            line = raw.rstrip('\n')
            if line.startswith('# case: '):
                name = line[len('# case: '):].strip()
                found[name] = []
            elif not line.strip():
                name = None
            elif name is not None and not line.startswith('# source:'):
                found[name].append(line)
    return found


CASES = cases()


def write(tmp_path, name, *case_names, repeat=1):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for case in case_names:
        lines.extend(CASES[case])
    path.write_text('\n'.join(lines * repeat) + '\n', encoding='utf-8')
    return path


def by_code(result):
    return dict((finding['code'], finding) for finding in result['findings'])


def test_capture_file_has_a_source_per_case():
    with open(CAPTURES, encoding='utf-8') as handle:
        text = handle.read()
    assert text.count('\n# case: ') == len(CASES) >= 14
    assert text.count('\n# source: https://github.com/') == len(CASES)
    assert all(CASES.values())


def test_ei0006_plog_and_message_counted_with_first_and_last_time(run_module, tmp_path):
    log = write(tmp_path, 'plog/plog-2717288_20250723034557123.log', 'ei0006_plog', 'ei0006_message_pid')
    res = run_module(ascend_diagnose, {'paths': [str(tmp_path / 'plog')]})
    assert not res.failed, res
    found = by_code(res.result)
    assert list(found) == ['EI0006']
    ei0006 = found['EI0006']
    # one "wait socket establish timeout" plog line + one EI0006 message line
    assert ei0006['count'] == 2
    assert ei0006['first_seen'] == '2025-04-08T18:07:20.444436'
    assert ei0006['last_seen'] == '2025-07-23T03:49:57.177194'
    assert ei0006['files'] == [str(log)]
    assert 'HCCL_CONNECT_TIMEOUT' in ei0006['fix'] and 'atlaserrorcode_15_0246' in ei0006['source']
    assert res.result['changed'] is False
    assert res.result['files_read'] == [str(log)]
    assert res.calls == []


@pytest.mark.parametrize('case, code, count, first, last', [
    ('ei0006_message', 'EI0006', 1, '2024-08-05T18:15:21.270506', '2024-08-05T18:15:21.270506'),
    ('ej0001_message', 'EJ0001', 1, '2024-05-21T11:57:54.167645', '2024-05-21T11:57:54.167645'),
    ('ej0001_message_pid', 'EJ0001', 1, '2025-04-24T16:14:56.975866', '2025-04-24T16:14:56.975866'),
    ('ej0001_plog', 'EJ0001', 1, '2022-12-01T03:02:29.002576', '2022-12-01T03:02:29.002576'),
    ('el0004_message', 'EL0004', 1, '2025-08-26T03:58:55.257127', '2025-08-26T03:58:55.257127'),
    ('ei0002_message', 'EI0002', 1, '2025-10-11T15:09:34.713335', '2025-10-11T15:09:34.713335'),
    ('libascendcl', 'libascendcl_not_found', 1, None, None),
    ('aclnn_not_found', 'aclnn_op_not_found', 1, None, None),
])
def test_each_known_code_from_real_lines(run_module, tmp_path, case, code, count, first, last):
    write(tmp_path, 'logs/%s.log' % case, case, repeat=3)
    res = run_module(ascend_diagnose, {'paths': [str(tmp_path / 'logs')]})
    assert not res.failed, res
    found = by_code(res.result)
    assert list(found) == [code]
    assert found[code]['count'] == 3 * count
    assert (found[code]['first_seen'], found[code]['last_seen']) == (first, last)
    assert found[code]['cause'] and found[code]['fix'] and found[code]['source']


def test_ei0001_by_its_code(run_module, tmp_path):
    # No real EI0001 line was found in public sources; this line only carries the code in the message format above.
    path = tmp_path / 'plog-1.log'
    path.write_text('EI0001: [PID: 1] 2025-01-02-03:04:05.006.007 synthetic line with the code only\n')
    res = run_module(ascend_diagnose, {'paths': [str(path)]})
    assert by_code(res.result)['EI0001']['first_seen'] == '2025-01-02T03:04:05.006007'
    assert 'atlaserrorcode_15_0240' in by_code(res.result)['EI0001']['source']


def test_internal_error_family(run_module, tmp_path):
    write(tmp_path, 'a/plog-1.log', 'ei9999_message', 'ez9999_message')
    write(tmp_path, 'b/plog-2.log', 'e39999_message', 'eh9999_message')
    res = run_module(ascend_diagnose, {'paths': [str(tmp_path / 'a'), str(tmp_path / 'b' / 'plog-2.log')]})
    family = by_code(res.result)['E?9999']
    assert family['count'] == 5
    assert sorted(family['codes']) == ['E39999', 'EH9999', 'EI9999', 'EZ9999']
    assert family['first_seen'] == '2024-10-21T10:42:00.358410'
    assert family['last_seen'] == '2025-12-12T12:10:10.639672'
    assert len(family['files']) == 2


def test_link_error_info_names_the_device_of_ei0006(run_module, tmp_path):
    # The LINK_ERROR_INFO block follows the timeout line; the file names device 0 only, so the EI0006 line is device 0's.
    write(tmp_path, 'plog/plog-106335_20260521213758.log', 'ei0006_link_error_info')
    res = run_module(ascend_diagnose, {'paths': [str(tmp_path / 'plog')]})
    ei0006 = by_code(res.result)['EI0006']
    assert (ei0006['count'], ei0006['devices'], ei0006['lines_without_device']) == (1, [0], 0)
    assert ei0006['first_seen'] == '2026-05-21T21:39:58.707629'


def test_device_of_a_line_of_a_file_and_of_a_directory(run_module, tmp_path):
    # chipId in the line itself (EI9999 chip 3; its "Inner Error!" line has no device but its file names only chip 3)
    write(tmp_path, 'logs/plog-1.log', 'ei9999_message')
    # a file naming two devices: the lines naming one keep theirs, the others cannot be tied to one
    write(tmp_path, 'logs/plog-2.log', 'e39999_message', 'ei9999_message', 'ej0001_message')
    # a file naming none
    write(tmp_path, 'logs/plog-3.log', 'el0004_message')
    # a device-side log directory
    write(tmp_path, 'logs/device-5/device-77_20250826.log', 'el0004_message')
    res = run_module(ascend_diagnose, {'paths': [str(tmp_path / 'logs')]})
    found = by_code(res.result)
    family = found['E?9999']
    # plog-1: 2 lines -> chip 3; plog-2: E39999 -> chip 0, EI9999 line with chipId -> 3, "Inner Error!" -> none
    assert (family['count'], family['devices'], family['lines_without_device']) == (5, [0, 3], 1)
    assert (found['EJ0001']['devices'], found['EJ0001']['lines_without_device']) == ([], 1)
    assert (found['EL0004']['count'], found['EL0004']['devices'], found['EL0004']['lines_without_device']) == (2, [5], 1)


def test_a_line_before_since_still_names_the_device_of_its_file(run_module, tmp_path):
    path = tmp_path / 'plog-9.log'
    path.write_text('\n'.join(CASES['ei0006_link_error_info'][:1] + CASES['ei0006_message']) + '\n', encoding='utf-8')
    res = run_module(ascend_diagnose, {'paths': [str(path)], 'since': '2024-08-05'})
    assert by_code(res.result)['EI0006']['devices'] == []
    path.write_text('\n'.join(CASES['ei0006_link_error_info'] + CASES['ei0006_message']) + '\n', encoding='utf-8')
    res = run_module(ascend_diagnose, {'paths': [str(path)], 'since': '2026-01-01'})
    ei0006 = by_code(res.result)['EI0006']
    # the 2024 EI0006 message is before since: not counted; the device line of 2026 ties the counted line to device 0
    assert (ei0006['count'], ei0006['devices'], ei0006['lines_without_device']) == (1, [0], 0)


def test_findings_sorted_by_count(run_module, tmp_path):
    write(tmp_path, 'logs/a.log', 'el0004_message')
    write(tmp_path, 'logs/b.log', 'ei0006_message', repeat=3)
    write(tmp_path, 'logs/c.log', 'ej0001_message', repeat=2)
    res = run_module(ascend_diagnose, {'paths': [str(tmp_path / 'logs')]})
    assert [(f['code'], f['count']) for f in res.result['findings']] == [('EI0006', 3), ('EJ0001', 2), ('EL0004', 1)]


def test_directory_recursion(run_module, tmp_path):
    write(tmp_path, 'log/debug/plog/plog-1.log', 'ei0006_plog')
    write(tmp_path, 'log/run/plog/deeper/plog-2.log', 'ei0006_message')
    write(tmp_path, 'log/debug/device-0/device-3_1.log', 'ej0001_message')
    res = run_module(ascend_diagnose, {'paths': [str(tmp_path / 'log')]})
    assert len(res.result['files_read']) == 3
    assert by_code(res.result)['EI0006']['count'] == 2
    assert len(by_code(res.result)['EI0006']['files']) == 2
    assert by_code(res.result)['EJ0001']['count'] == 1


@pytest.mark.skipif(hasattr(os, 'geteuid') and os.geteuid() == 0, reason='root reads files of mode 000')
def test_unreadable_file_is_a_finding(run_module, tmp_path):
    good = write(tmp_path, 'logs/plog-1.log', 'el0004_message')
    bad = write(tmp_path, 'logs/plog-2.log', 'ei0006_plog')
    bad.chmod(0)
    try:
        res = run_module(ascend_diagnose, {'paths': [str(tmp_path / 'logs')]})
    finally:
        bad.chmod(0o644)
    assert not res.failed
    found = by_code(res.result)
    assert found['unreadable']['files'] == [str(bad)]
    assert 'Permission denied' in found['unreadable']['msgs'][0]
    assert res.result['unreadable'][0]['path'] == str(bad)
    assert res.result['files_read'] == [str(good)]
    assert 'EL0004' in found


def test_unreadable_file_as_root_too(run_module, tmp_path, monkeypatch):
    """The same through a failing open, so it runs as root as well."""
    bad = write(tmp_path, 'logs/plog-2.log', 'ei0006_plog')
    real_open = _diagnose.open_log

    def fake_open(path):
        if str(path) == str(bad):
            raise PermissionError(13, 'Permission denied', str(path))
        return real_open(path)

    monkeypatch.setattr(_diagnose, 'open_log', fake_open)
    res = run_module(ascend_diagnose, {'paths': [str(tmp_path / 'logs')]})
    assert not res.failed
    assert [f['code'] for f in res.result['findings']] == ['unreadable']
    assert res.result['files_read'] == []


def test_large_file_read_up_to_the_limit_with_a_warning(run_module, tmp_path):
    log = write(tmp_path, 'plog-big.log', 'ei0006_message', repeat=2000)
    size = log.stat().st_size
    line = len(CASES['ei0006_message'][0]) + 1
    res = run_module(ascend_diagnose, {'paths': [str(log)], 'max_bytes_per_file': line * 10})
    assert not res.failed
    assert size > line * 10
    assert by_code(res.result)['EI0006']['count'] == 10
    assert res.result['truncated'] == [str(log)]
    assert any('max_bytes_per_file' in warning and str(log) in warning for warning in res.warnings)


def test_max_files_keeps_the_newest(run_module, tmp_path):
    old = write(tmp_path, 'logs/plog-old.log', 'ej0001_message')
    new = write(tmp_path, 'logs/plog-new.log', 'el0004_message')
    os.utime(str(old), (1000000000, 1000000000))
    res = run_module(ascend_diagnose, {'paths': [str(tmp_path / 'logs')], 'max_files': 1})
    assert res.result['files_read'] == [str(new)]
    assert any('max_files' in warning for warning in res.warnings)


def test_since_drops_older_lines(run_module, tmp_path):
    write(tmp_path, 'logs/a.log', 'ei0006_message', 'ei0006_message_pid', 'ej0001_message', 'ej0001_message_pid')
    res = run_module(ascend_diagnose, {'paths': [str(tmp_path / 'logs')], 'since': '2025-01-01'})
    found = by_code(res.result)
    assert found['EI0006']['count'] == 1 and found['EI0006']['first_seen'] == '2025-04-08T18:07:20.444436'
    assert found['EJ0001']['count'] == 1


def test_no_logs_no_findings(run_module, tmp_path, monkeypatch):
    monkeypatch.setenv('HOME', str(tmp_path))
    monkeypatch.delenv('ASCEND_PROCESS_LOG_PATH', raising=False)
    res = run_module(ascend_diagnose, {})
    assert not res.failed
    assert res.result['findings'] == [] and res.result['files_read'] == []
    assert res.result['missing'] == [str(tmp_path / 'ascend/log/debug'), str(tmp_path / 'ascend/log/run')]


def test_empty_directory_and_empty_file(run_module, tmp_path):
    (tmp_path / 'empty').mkdir()
    (tmp_path / 'empty.log').write_text('')
    res = run_module(ascend_diagnose, {'paths': [str(tmp_path / 'empty'), str(tmp_path / 'empty.log')]}, check_mode=True)
    assert not res.failed and res.result['findings'] == [] and res.result['changed'] is False


def test_default_paths_expand_home_and_env(run_module, tmp_path, monkeypatch):
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    monkeypatch.setenv('ASCEND_PROCESS_LOG_PATH', str(tmp_path / 'joblog'))
    write(tmp_path, 'home/ascend/log/debug/plog/plog-1.log', 'ej0001_message')
    write(tmp_path, 'joblog/debug/plog/plog-2.log', 'el0004_message')
    # device-side logs of the standard layout are read too, and give their device
    write(tmp_path, 'home/ascend/log/run/device-6/device-3_20250102.log', 'ei0002_message')
    monkeypatch.setenv('LOGROOT', str(tmp_path / 'home'))
    res = run_module(ascend_diagnose, {})
    assert sorted(by_code(res.result)) == ['EI0002', 'EJ0001', 'EL0004']
    assert by_code(res.result)['EI0002']['devices'] == [6]
    assert res.result['paths'][-1] == str(tmp_path / 'joblog')
    res = run_module(ascend_diagnose, {'paths': ['$LOGROOT/ascend/log/debug']})
    assert list(by_code(res.result)) == ['EJ0001']


@pytest.mark.parametrize('args, message', [
    ({'paths': {'a': 1}}, 'paths'),
    ({'paths': []}, 'paths is an empty list'),
    ({'max_files': -1}, 'max_files must be 1 or more, got -1'),
    ({'max_bytes_per_file': 0}, 'max_bytes_per_file must be 1 or more, got 0'),
    ({'since': 'yesterday'}, 'since must be a time like'),
])
def test_bad_input_fails_before_reading(run_module, tmp_path, monkeypatch, args, message):
    def no_reading(*args, **kwargs):
        raise AssertionError('a file was read')

    monkeypatch.setattr(_diagnose.LogScanner, 'scan', no_reading)
    res = run_module(ascend_diagnose, args)
    assert res.failed
    assert message in res.result['msg']


# ---- torch_npu's "(PID:..., Device:N, RankID:M)" header names the device and rank of the error after it --------------

@pytest.mark.parametrize('case, code, device, rank', [
    ('ei0006_torch_npu_header', 'EI0006', 1, 1),
    ('ej0001_torch_npu_header', 'EJ0001', 3, 3),
    ('ei0002_torch_npu_header', 'EI0002', 0, 101),
])
def test_torch_npu_header_names_the_device_and_rank_of_the_code(run_module, tmp_path, case, code, device, rank):
    write(tmp_path, 'job/train.log', case)
    res = run_module(ascend_diagnose, {'paths': [str(tmp_path / 'job')]})
    found = by_code(res.result)[code]
    assert (found['count'], found['devices'], found['lines_without_device']) == (1, [device], 0)
    assert found['ranks'] == [rank]


def test_each_header_ties_its_own_error_in_a_log_of_several_processes(run_module, tmp_path):
    # one job log with the output of two processes: the file names devices 1 and 3, so only the headers can tell
    write(tmp_path, 'job/train.log', 'ei0006_torch_npu_header', 'ej0001_torch_npu_header', 'el0004_message')
    res = run_module(ascend_diagnose, {'paths': [str(tmp_path / 'job')]})
    found = by_code(res.result)
    assert (found['EI0006']['devices'], found['EI0006']['lines_without_device']) == ([1], 0)
    assert (found['EJ0001']['devices'], found['EJ0001']['lines_without_device']) == ([3], 0)
    assert (found['EI0006']['ranks'], found['EJ0001']['ranks']) == ([1], [3])
    # the EL0004 message has no header before it (a blank line ends the header's reach): no device
    assert (found['EL0004']['devices'], found['EL0004']['lines_without_device']) == ([], 1)


def test_a_message_of_another_process_is_not_tied_to_the_header(run_module, tmp_path):
    # synthetic: the EI0002 line of PID 2969 right after the header of PID 1292363
    header = CASES['ei0006_torch_npu_header'][1]
    path = tmp_path / 'train.log'
    path.write_text('\n'.join([header, CASES['ei0002_message'][0], CASES['ei0006_message'][0]]) + '\n', encoding='utf-8')
    res = run_module(ascend_diagnose, {'paths': [str(path)]})
    found = by_code(res.result)
    # the file names device 1 only (the header), so both codes end on device 1: EI0002 by the file, not by the header
    assert found['EI0002']['ranks'] == [] and found['EI0002']['devices'] == [1]
    # EI0006 without a PID of its own is within the header's reach: rank 1
    assert found['EI0006']['ranks'] == [1]


# ---- the files that can hold CANN errors come first; what was not read is said -----------------------------------------

def test_cann_logs_are_read_before_newer_junk_and_what_was_left_out_is_a_finding(run_module, tmp_path):
    plog = write(tmp_path, 'log/debug/plog/plog-4242_20250101000000000.log', 'ei0006_plog')
    device = write(tmp_path, 'log/debug/device-2/device-4242_20250101000000000.log', 'ei0006_link_error_info')
    os.utime(str(plog), (1000000000, 1000000000))
    os.utime(str(device), (1000000000, 1000000000))
    junk = tmp_path / 'log' / 'debug' / 'many'
    junk.mkdir()
    for index in range(250):
        (junk / ('f%05d' % index)).write_text('nothing to see\n')
    res = run_module(ascend_diagnose, {'paths': [str(tmp_path / 'log')]})
    assert not res.failed
    found = by_code(res.result)
    assert found['EI0006']['count'] == 2 and sorted(found['EI0006']['files']) == sorted([str(plog), str(device)])
    assert res.result['files_found'] == 252 and len(res.result['files_read']) == 200
    assert set(res.result['files_read'][:2]) == {str(plog), str(device)}   # the CANN logs first, though the oldest
    partial = found['not_all_read']
    assert partial['msg'] == 'read 200 of 252 files (the CANN logs first, then the newest): raise max_files or narrow paths'
    assert (partial['files_found'], partial['files_left_out'], partial['count']) == (252, 52, 52)
    assert 'max_files' in partial['fix'] and res.result['findings'][-1]['code'] == 'not_all_read'
    assert any('252 log files found, only 200 were read' in warning for warning in res.warnings)


def test_job_logs_come_before_other_files(run_module, tmp_path):
    log = write(tmp_path, 'job/train.log', 'el0004_message')
    os.utime(str(log), (1000000000, 1000000000))
    for index in range(3):
        (tmp_path / 'job' / ('core.%d' % index)).write_text('x\n')
    res = run_module(ascend_diagnose, {'paths': [str(tmp_path / 'job')], 'max_files': 1})
    assert res.result['files_read'] == [str(log)]
    assert by_code(res.result)['not_all_read']['msg'].startswith('read 1 of 4 files')


def test_a_truncated_file_is_part_of_what_was_not_read(run_module, tmp_path):
    log = write(tmp_path, 'plog-big.log', 'ei0006_message', repeat=50)
    res = run_module(ascend_diagnose, {'paths': [str(log)], 'max_bytes_per_file': 1000})
    partial = by_code(res.result)['not_all_read']
    assert partial['msg'] == '1 file(s) read only up to max_bytes_per_file (1000 bytes): raise max_bytes_per_file or use since'
    assert partial['files'] == [str(log)]


def test_everything_read_is_no_not_all_read_finding(run_module, tmp_path):
    write(tmp_path, 'logs/plog-1.log', 'el0004_message')
    res = run_module(ascend_diagnose, {'paths': [str(tmp_path / 'logs')]})
    assert 'not_all_read' not in by_code(res.result) and res.result['files_found'] == 1


# ---- a FIFO (or any file that is not a regular file) is never opened -----------------------------------------------------

def _unblocked(func, fifo, seconds=20):
    """func() in a thread; if it is still blocked after ``seconds``, a writer on the FIFO releases it and the test
    fails instead of hanging."""
    import threading
    box = {}

    def target():
        box['value'] = func()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        fd = os.open(str(fifo), os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        thread.join(10)
        pytest.fail('ascend_diagnose blocked in open() on the FIFO %s' % fifo)
    return box['value']


def _run_with_timeout(run_module, args, fifo):
    return _unblocked(lambda: run_module(ascend_diagnose, args), fifo)


@pytest.mark.skipif(not hasattr(os, 'mkfifo'), reason='needs os.mkfifo')
def test_a_fifo_given_in_paths_is_skipped_not_opened(run_module, tmp_path):
    fifo = tmp_path / 'f'
    os.mkfifo(str(fifo))
    res = _run_with_timeout(run_module, {'paths': [str(fifo)]}, fifo)
    assert not res.failed
    assert res.result['findings'] == [] and res.result['files_read'] == []
    assert res.result['skipped'] == [{'path': str(fifo), 'msg': '%s is a FIFO, not a log file; not read' % fifo}]
    assert any('is a FIFO, not a log file' in warning for warning in res.warnings)


@pytest.mark.skipif(not hasattr(os, 'mkfifo'), reason='needs os.mkfifo')
def test_a_fifo_and_a_broken_link_in_a_directory_are_listed_as_skipped(run_module, tmp_path):
    log = write(tmp_path, 'logs/plog-1.log', 'el0004_message')
    fifo = tmp_path / 'logs' / 'pipe'
    os.mkfifo(str(fifo))
    os.symlink(str(tmp_path / 'nowhere'), str(tmp_path / 'logs' / 'broken.log'))
    res = _run_with_timeout(run_module, {'paths': [str(tmp_path / 'logs')]}, fifo)
    assert res.result['files_read'] == [str(log)]
    assert sorted(item['path'] for item in res.result['skipped']) == sorted([str(fifo), str(tmp_path / 'logs' / 'broken.log')])


@pytest.mark.skipif(not hasattr(os, 'mkfifo'), reason='needs os.mkfifo')
def test_a_file_swapped_for_a_fifo_after_it_was_listed_is_not_read(tmp_path):
    # the second guard: open with O_NONBLOCK and check what was opened
    fifo = tmp_path / 'plog-1.log'
    os.mkfifo(str(fifo))
    scanner = _diagnose.LogScanner(10, 1000)
    _unblocked(lambda: scanner.scan_file(str(fifo)), fifo)
    assert scanner.files_read == [] and scanner.skipped[0]['msg'].endswith('is a FIFO, not a log file; not read')
