"""Tests of the vendor tool runner: locale, lookup, timeout, thread pool, errors."""

from __future__ import annotations

import os
import platform
import time

import pytest

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.npuops.ascend.plugins.module_utils._tools import hccn_tool as _hccn_tool
from ansible_collections.npuops.ascend.plugins.module_utils._tools import runner as _runner
from ansible_collections.npuops.ascend.plugins.module_utils._tools.host_tools import Numactl
from ansible_collections.npuops.ascend.tests.unit.plugins.fakes import RecordingRun
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import (
    ModuleFailure,
    Runner,
    ToolError,
    cmd_to_text,
    find_tool,
    in_parallel,
    parse_output,
    tool_output,
    unparsed_warning,
)


class FakeModule:
    """The two AnsibleModule methods the runner uses, over the recording fake.

    ``replies`` maps the last argv element to a reply; anything else answers ``out <last arg>``.
    """

    def __init__(self, replies=None, bins=None, delay=0.0):
        replies = replies or {}
        self.bins = bins or {}
        self.bin_lookups = []
        self.run_command = RecordingRun(delay=delay, default=lambda argv: replies.get(argv[-1], (0, 'out ' + argv[-1], '')))

    def get_bin_path(self, arg, required=False, opt_dirs=None):
        self.bin_lookups.append((arg, list(opt_dirs or [])))
        return self.bins.get(arg)

    @property
    def calls(self):
        return self.run_command.calls

    @property
    def kwargs(self):
        return self.run_command.kwargs

    @property
    def max_in_flight(self):
        return self.run_command.max_in_flight


# ---------------------------------------------------------------- run


def test_run_uses_argv_list_and_c_locale():
    module = FakeModule(bins={})
    runner = Runner(module, timeout=30)
    assert runner.run(['/usr/local/sbin/npu-smi', 'info', '-t', 'board', '-i', 3]) == (0, 'out 3', '')
    assert module.calls == [['/usr/local/sbin/npu-smi', 'info', '-t', 'board', '-i', '3']]
    assert module.kwargs[0]['environ_update'] == {'LC_ALL': 'C', 'LANG': 'C'}
    assert module.kwargs[0]['expand_user_and_vars'] is False
    assert module.kwargs[0].get('use_unsafe_shell', False) is False


def test_run_returns_nonzero_rc_without_raising():
    module = FakeModule(replies={'-g': (13, '', 'Get ipconf failed, because no ip was preset there!\n')})
    assert Runner(module, timeout=0).run(['hccn_tool', '-i', '0', '-ip', '-g']) == (
        13, '', 'Get ipconf failed, because no ip was preset there!\n')


def test_run_prefixes_timeout_when_available():
    module = FakeModule(bins={'timeout': '/usr/bin/timeout'})
    Runner(module, timeout=7).run(['npu-smi', 'info'])
    assert module.calls == [['/usr/bin/timeout', '-k', '5', '7', 'npu-smi', 'info']]


def test_run_without_timeout_binary_runs_plain():
    module = FakeModule(bins={})
    runner = Runner(module, timeout=7)
    runner.run(['npu-smi', 'info'])
    assert module.calls == [['npu-smi', 'info']]
    assert runner.timeout_enforced is False


def test_timeout_zero_disables_wrapping():
    module = FakeModule(bins={'timeout': '/usr/bin/timeout'})
    runner = Runner(module, timeout=0)
    runner.run(['npu-smi', 'info'])
    assert module.calls == [['npu-smi', 'info']]
    assert module.bin_lookups == []


@pytest.mark.parametrize('rc', [124, 137])
def test_timed_out_call_raises(rc):
    module = FakeModule(bins={'timeout': '/usr/bin/timeout'}, replies={'-g': (rc, '', '')})
    with pytest.raises(ToolError) as caught:
        Runner(module, timeout=7).run(['hccn_tool', '-i', '0', '-link', '-g'])
    err = caught.value
    assert 'timed out after 7 s' in err.msg
    assert err.cmd == ['hccn_tool', '-i', '0', '-link', '-g']
    assert err.rc == rc
    assert 'raise the timeout option' in err.msg


def test_rc_124_without_timeout_wrapper_is_the_tools_own_rc():
    module = FakeModule(bins={}, replies={'-g': (124, '', 'x')})
    assert Runner(module, timeout=7).run(['hccn_tool', '-i', '0', '-link', '-g'])[0] == 124


def test_os_error_becomes_tool_error():
    module = FakeModule(replies={'info': OSError(8, 'Exec format error')})
    with pytest.raises(ToolError) as caught:
        Runner(module, timeout=0).run(['/usr/local/sbin/npu-smi', 'info'])
    assert 'Could not run /usr/local/sbin/npu-smi info' in caught.value.msg
    assert caught.value.rc is None


def test_run_with_real_ansible_module(monkeypatch, tmp_path):
    """The runner against the real AnsibleModule.run_command: locale, no shell, and the timeout wrapper."""
    script = tmp_path / 'fake-tool'
    script.write_text('#!/bin/sh\necho "LC_ALL=$LC_ALL LANG=$LANG args=$*"\n')
    script.chmod(0o755)
    with patch_module_args({}):
        module = basic.AnsibleModule(argument_spec={})
    runner = Runner(module, timeout=5)
    rc, out, err = runner.run([str(script), '$HOME', '~', 'a b'])
    assert rc == 0, err
    assert out == 'LC_ALL=C LANG=C args=$HOME ~ a b\n'


def test_real_timeout_stops_a_hung_tool(tmp_path):
    if not os.path.exists('/usr/bin/timeout') and not os.path.exists('/bin/timeout'):
        pytest.skip('coreutils timeout not installed')
    script = tmp_path / 'hung-tool'
    script.write_text('#!/bin/sh\nexec sleep 30\n')
    script.chmod(0o755)
    with patch_module_args({}):
        module = basic.AnsibleModule(argument_spec={})
    started = time.monotonic()
    with pytest.raises(ToolError) as caught:
        Runner(module, timeout=1).run([str(script)])
    assert time.monotonic() - started < 10
    assert 'timed out after 1 s' in caught.value.msg


# ---------------------------------------------------------------- run_many


def test_run_many_keeps_input_order_with_uneven_durations():
    # later argv finish first
    module = FakeModule(delay=lambda args: 0.05 * (5 - int(args[-1])))
    results = Runner(module, timeout=0).run_many([['tool', str(i)] for i in range(5)], workers=5)
    assert [out for _rc, out, _err in results] == ['out %d' % i for i in range(5)]


def test_run_many_runs_concurrently_and_is_bounded():
    module = FakeModule(delay=0.1)
    started = time.monotonic()
    Runner(module, timeout=0).run_many([['tool', str(i)] for i in range(9)], workers=3)
    elapsed = time.monotonic() - started
    assert module.max_in_flight == 3
    assert 0.25 < elapsed < 0.6  # 3 waves of 0.1 s, not 9


def test_run_many_default_workers_is_8():
    module = FakeModule(delay=0.05)
    Runner(module, timeout=0).run_many([['tool', str(i)] for i in range(20)])
    assert module.max_in_flight == 8


def test_run_many_empty():
    assert Runner(FakeModule(), timeout=0).run_many([]) == []


def test_run_many_raises_first_error_in_input_order_after_all_ran():
    module = FakeModule(bins={'timeout': '/usr/bin/timeout'}, replies={'1': (124, '', ''), '3': (124, '', '')})
    runner = Runner(module, timeout=9)
    with pytest.raises(ToolError) as caught:
        runner.run_many([['tool', str(i)] for i in range(5)], workers=2)
    assert caught.value.cmd == ['tool', '1']
    assert len(module.calls) == 5


def test_run_many_return_exceptions():
    module = FakeModule(bins={'timeout': '/usr/bin/timeout'}, replies={'1': (137, '', '')})
    results = Runner(module, timeout=9).run_many([['tool', '0'], ['tool', '1']], return_exceptions=True)
    assert results[0] == (0, 'out 0', '')
    assert isinstance(results[1], ToolError) and results[1].rc == 137


# ---------------------------------------------------------------- find_tool


def _exe(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('#!/bin/sh\n')
    path.chmod(0o755)
    return str(path)


def test_find_tool_override_file(tmp_path):
    tool = _exe(tmp_path / 'bin' / 'npu-smi')
    assert find_tool(FakeModule(), 'npu-smi', override=tool) == tool


def test_find_tool_override_directory(tmp_path):
    tool = _exe(tmp_path / 'tools' / 'hccn_tool')
    assert find_tool(FakeModule(), 'hccn_tool', override=str(tmp_path / 'tools')) == tool


def test_find_tool_override_wrong_is_an_error_not_a_fallback(tmp_path):
    module = FakeModule(bins={'npu-smi': '/usr/local/sbin/npu-smi'})
    with pytest.raises(ToolError) as caught:
        find_tool(module, 'npu-smi', override=str(tmp_path / 'nope'))
    assert str(tmp_path / 'nope') in caught.value.msg
    assert module.bin_lookups == []


def test_find_tool_override_not_executable(tmp_path):
    plain = tmp_path / 'npu-smi'
    plain.write_text('')
    with pytest.raises(ToolError):
        find_tool(FakeModule(), 'npu-smi', override=str(plain))


def test_find_tool_searches_vendor_dirs_first():
    module = FakeModule(bins={'hccn_tool': '/usr/local/Ascend/driver/tools/hccn_tool'})
    assert find_tool(module, 'hccn_tool') == '/usr/local/Ascend/driver/tools/hccn_tool'
    assert module.bin_lookups == [('hccn_tool', ['/usr/local/Ascend/driver/tools', '/usr/local/sbin', '/usr/local/bin'])]


def test_find_tool_extra_dirs_come_before_vendor_dirs():
    module = FakeModule(bins={'npu-smi': '/opt/x/npu-smi'})
    find_tool(module, 'npu-smi', extra_dirs=['/opt/x'])
    assert module.bin_lookups[0][1][:2] == ['/opt/x', '/usr/local/Ascend/driver/tools']


def test_find_tool_missing_says_where_it_looked(monkeypatch):
    monkeypatch.setattr(platform, 'node', lambda: 'node-07')
    with pytest.raises(ToolError) as caught:
        find_tool(FakeModule(), 'hccn_tool', missing_hint=_hccn_tool.MISSING_HINT)
    msg = caught.value.msg
    assert msg.startswith('node-07: hccn_tool not found: looked in /usr/local/Ascend/driver/tools, /usr/local/sbin, '
                          '/usr/local/bin and PATH')
    assert 'Ascend driver' in msg
    assert caught.value.result()['cmd'] == 'hccn_tool'


def test_find_tool_missing_host_tool_reads_as_one_instruction(monkeypatch):
    monkeypatch.setattr(platform, 'node', lambda: 'node-07')
    with pytest.raises(ToolError) as caught:
        find_tool(FakeModule(), 'numactl', missing_hint=Numactl.missing_hint)
    assert caught.value.msg.endswith('and PATH. It comes with the numactl package; install it or set the path option '
                                     'of the module.')


def test_find_tool_bad_override_names_the_host(monkeypatch, tmp_path):
    monkeypatch.setattr(platform, 'node', lambda: 'node-07')
    with pytest.raises(ToolError) as caught:
        find_tool(FakeModule(), 'npu-smi', override=str(tmp_path / 'nope'))
    assert caught.value.msg.startswith('node-07: npu-smi not found at %s (set by the module option)' % (tmp_path / 'nope'))


def test_find_tool_with_real_get_bin_path(monkeypatch, tmp_path):
    vendor = tmp_path / 'Ascend' / 'driver' / 'tools'
    on_path = tmp_path / 'path'
    expected = _exe(vendor / 'hccn_tool')
    _exe(on_path / 'hccn_tool')
    monkeypatch.setattr(_runner, 'VENDOR_DIRS', (str(vendor),))
    monkeypatch.setenv('PATH', str(on_path))
    with patch_module_args({}):
        module = basic.AnsibleModule(argument_spec={})
    assert find_tool(module, 'hccn_tool') == expected


# ---------------------------------------------------------------- errors and parsing helpers


def test_tool_error_result_has_separate_keys():
    err = ToolError(['/usr/local/sbin/npu-smi', 'info', '-t', 'board', '-i', '9'], 215, 'Invalid card id.\n', '', 'NPU 9: bad')
    assert err.result() == {
        'msg': 'NPU 9: bad', 'cmd': '/usr/local/sbin/npu-smi info -t board -i 9', 'rc': 215,
        'stdout': 'Invalid card id.\n', 'stderr': '',
    }
    assert str(err) == 'NPU 9: bad'


def test_tool_error_default_message():
    assert ToolError(['a', 'b c'], 3).msg == "Command a 'b c' failed (rc=3)"


def test_cmd_to_text_quotes():
    assert cmd_to_text(['x', 'a b', '$y']) == "x 'a b' '$y'"
    assert cmd_to_text(None) is None


def test_tool_output_joins_stderr_then_stdout():
    assert tool_output('Invalid card id.\nError parameter of -i\n', '') == 'Invalid card id. Error parameter of -i'
    assert tool_output('', 'Execute failed: Link status is down.\n') == 'Execute failed: Link status is down.'
    assert tool_output('', '') == '(no output)'


def test_parse_output_splits_unparsed():
    data, unparsed = parse_output(lambda text: {'link': 'UP', 'unparsed': ['x']}, ['t'], 'link status: UP\n')
    assert data == {'link': 'UP'}
    assert unparsed == ['x']


def test_parse_output_turns_parser_bug_into_tool_error():
    def broken(text):
        raise IndexError('list index out of range')

    with pytest.raises(ToolError) as caught:
        parse_output(broken, ['npu-smi', 'info'], 'garbage')
    assert 'could not be parsed (IndexError' in caught.value.msg
    assert caught.value.stdout == 'garbage'


def test_unparsed_warning_names_command_and_asks_for_report():
    text = unparsed_warning(['npu-smi', 'info', '-t', 'board', '-i', '0'], ['a', 'b', 'c', 'd'], '25.2.0')
    assert 'npu-smi info -t board -i 0 (driver 25.2.0)' in text
    assert 'please report this with your driver version' in text
    assert '(and 1 more)' in text


def test_host_name(monkeypatch):
    monkeypatch.setattr(platform, 'node', lambda: 'node-07')
    assert _runner.host_name() == 'node-07'
    monkeypatch.setattr(platform, 'node', lambda: '')
    assert _runner.host_name() == 'this host'


def test_find_tool_without_a_hint_says_a_package_may_be_missing(monkeypatch):
    monkeypatch.setattr(platform, 'node', lambda: 'node-07')
    with pytest.raises(ToolError) as caught:
        find_tool(FakeModule(), 'sometool')
    assert 'The package that provides it may be missing' in caught.value.msg


# ---------------------------------------------------------------- one failure type, one subject


def test_module_failure_subject_is_set_once_and_never_spliced():
    failure = ModuleFailure('refusing to change NPU ports', changed=False, busy=[1])
    assert failure.msg == 'refusing to change NPU ports'
    assert failure.at('node-07', 3) is failure
    assert failure.msg == 'NPU 3 on node-07: refusing to change NPU ports'
    failure.at('elsewhere')   # already located: unchanged
    assert failure.result() == {'msg': 'NPU 3 on node-07: refusing to change NPU ports', 'changed': False, 'busy': [1]}
    assert str(failure) == failure.msg


def test_tool_error_is_a_module_failure_with_the_call_keys():
    err = ToolError(['hccn_tool', '-i', '0', '-ip', '-g'], 13, '', 'no ip\n', 'it failed', subject=_runner.where('n1', 0))
    assert isinstance(err, ModuleFailure)
    assert err.result() == {'msg': 'NPU 0 on n1: it failed', 'cmd': 'hccn_tool -i 0 -ip -g', 'rc': 13, 'stdout': '',
                            'stderr': 'no ip\n'}


def test_where():
    assert _runner.where('n1') == 'n1'
    assert _runner.where('n1', 0) == 'NPU 0 on n1'


def test_failed_call_message_reads_as_sentences():
    err = _runner.failed_call(['t', 'x'], 4, '', 'Get invalid device id', hint='Check it.', subject='n1', then='Nothing was changed.')
    assert err.msg == 'n1: t x failed (rc=4): Get invalid device id. Check it. Nothing was changed.'
    assert (err.rc, err.stderr) == (4, 'Get invalid device id')


def test_in_parallel_keeps_order_collects_exceptions_and_runs_everything():
    seen = []

    def work(item):
        seen.append(item)
        time.sleep(0.01 * (4 - item))
        if item == 1:
            raise ValueError('one')
        return item * 10

    results = in_parallel(work, range(4), workers=4)
    assert results[0] == 0 and isinstance(results[1], ValueError) and results[2:] == [20, 30]
    assert sorted(seen) == [0, 1, 2, 3]
    assert in_parallel(work, [], workers=4) == []


# ---------------------------------------------------------------- an answer run_command did not read


class LosesFirstAnswer:
    """run_command that, like AnsibleModule.run_command's 1 s select() race, returns rc 0 and nothing for the first
    call after ``delay`` seconds, then the real answer."""

    def __init__(self, answer, delay, lost=1):
        self.answer = answer
        self.delay = delay
        self.lost = lost
        self.calls = 0

    def run_command(self, argv, **_kwargs):
        self.calls += 1
        time.sleep(self.delay)
        if self.calls <= self.lost:
            return 0, '', ''
        return self.answer

    @staticmethod
    def get_bin_path(_arg, required=False, opt_dirs=None):
        return None


def test_a_slow_call_that_answered_nothing_is_asked_again(monkeypatch):
    # seen at 16 nodes on 2 cores: `hccn_tool -i 7 -ping ...` rc 0 and no output, so a healthy pair was "unreachable"
    monkeypatch.setattr(_runner, 'SILENT_RETRY_AFTER', 0.05)
    ping = (0, 'device 7 PING 10.20.7.24\nrecv seq=0,time=0.12ms\n1 packets transmitted, 1 received, 0.00% packet loss\n', '')
    module = LosesFirstAnswer(ping, delay=0.06)
    assert Runner(module, timeout=0).run(['hccn_tool', '-i', '7', '-ping', '-g', 'address', '10.20.7.24'], read=True) == ping
    assert module.calls == 2


@pytest.mark.parametrize('argv', [
    ['hccn_tool', '-i', '0', '-pfc', '-s', 'bitmap', '0,0,0,0,1,0,0,0'],
    ['cpupower', '-c', 'all', 'frequency-set', '-g', 'performance'],
    ['fio', '--name=seq', '--rw=read'],
])
def test_a_command_that_is_not_a_read_is_never_run_twice(monkeypatch, argv):
    # a set or a write that came back silent after a select step is not sent again: its effect is read back instead
    monkeypatch.setattr(_runner, 'SILENT_RETRY_AFTER', 0.01)
    module = LosesFirstAnswer((0, 'never seen', ''), delay=0.02, lost=5)
    assert Runner(module, timeout=0).run(argv) == (0, '', '')
    assert module.calls == 1
    module = LosesFirstAnswer((0, 'never seen', ''), delay=0.02, lost=5)
    assert Runner(module, timeout=0).run_many([argv, argv], workers=2, return_exceptions=True) == [(0, '', '')] * 2
    assert module.calls == 2


def test_a_quick_silent_call_is_not_run_twice(monkeypatch):
    # a command that prints nothing quickly (no 1 s select step passed) is taken as it is
    monkeypatch.setattr(_runner, 'SILENT_RETRY_AFTER', 0.5)
    module = LosesFirstAnswer((0, 'never seen', ''), delay=0.0, lost=5)
    assert Runner(module, timeout=0).run(['cpupower', 'frequency-set', '-g', 'performance']) == (0, '', '')
    assert module.calls == 1


def test_a_call_is_asked_again_at_most_once(monkeypatch):
    monkeypatch.setattr(_runner, 'SILENT_RETRY_AFTER', 0.01)
    module = LosesFirstAnswer((0, 'never seen', ''), delay=0.02, lost=5)
    assert Runner(module, timeout=0).run(['hccn_tool', '-i', '0', '-link', '-g'], read=True) == (0, '', '')
    assert module.calls == 2
