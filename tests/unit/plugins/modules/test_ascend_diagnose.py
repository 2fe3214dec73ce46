"""ascend_diagnose: known codes in CANN logs, counted with first/last time, from real log lines.

The log files are cut from tests/fixtures/captures/plog_samples.txt (real lines, each case with its source).
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils import _diagnose
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
    """The same through a failing open(), so it runs as root as well."""
    bad = write(tmp_path, 'logs/plog-2.log', 'ei0006_plog')
    real_open = open

    def fake_open(path, *args, **kwargs):
        if str(path) == str(bad):
            raise PermissionError(13, 'Permission denied', str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(_diagnose, 'open', fake_open, raising=False)
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
