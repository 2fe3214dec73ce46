"""baseline_measure over looped command results that printed real training-log lines."""

from __future__ import annotations

import re

import pytest

from ansible_collections.npuops.ascend.plugins.filter import step_stats as perf
from ansible_collections.npuops.ascend.plugins.filter.step_stats import baseline_measure
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import sample

# Real logs (tests/fixtures/captures/train_log.txt).
MIXTRAL = sample('train_log/train_log/megatron_lm_h100_mixtral_throughput')   # 6 lines, TFLOP/s per GPU, no consumed tokens
QWEN = sample('train_log/train_log/mindspeed_llm_fsdp2_pretrain_qwen3_8b')     # 3 lines with consumed tokens
POLARIS = sample('train_log/train_log/megatron_deepspeed_polaris_tgs')          # 2 lines with consumed tokens and TFLOPs
TIMERS_ONLY = sample('train_log/train_log/megatron_deepspeed_aurora_escape_and_timers')   # 2 iteration lines among timers

_ELAPSED = re.compile(r'(elapsed time per iteration \(ms\): )([0-9.]+)')


def scaled(text, factor):
    """The same log with every elapsed time multiplied by ``factor`` (one decimal, as Megatron prints it)."""
    if factor == 1:
        return text
    return _ELAPSED.sub(lambda m: m.group(1) + '%.1f' % (float(m.group(2)) * factor), text)


def runs(text, factors):
    """The results of the looped command task of the baseline role, one run per factor."""
    return [{'changed': False, 'rc': 0, 'stdout': scaled(text, factor), 'stderr': '', 'cmd': ['bash', 'pretrain.sh'],
             'baseline_run': index, 'ansible_loop_var': 'baseline_run', 'failed': False}
            for index, factor in enumerate(factors, 1)]


def test_filter_table():
    assert perf.FilterModule().filters()['baseline_measure'] is baseline_measure


def test_scaled_log_keeps_the_real_layout():
    line = scaled(MIXTRAL, 1.03).splitlines()[2]
    assert line.startswith(' [2024-04-06 02:57:10] iteration       17/     100 | consumed samples:         2176 | '
                           'elapsed time per iteration (ms): 5877.5 | throughput per GPU (TFLOP/s/GPU): 228.9 |')


def test_spread_under_2_percent_passes():
    out = baseline_measure(runs(MIXTRAL, [1.0, 1.01, 0.99]), host='node01', warmup=2, seq_length=4096, peak_tflops=989)
    assert out['measured'] is True
    assert out['reason'] is None
    assert out['findings'] == []
    # the four steps after the two warm-up steps: 5706.3, 5361.6, 5470.7 and 5829.9 ms
    assert out['runs'][0] == {'run': 1, 'rc': 0, 'count': 4, 'mean_ms': 5592.12, 'stdev_ms': 214.06, 'tokens_per_s': 93754.7,
                              'tflops_per_npu': 233.8, 'mfu_pct': 23.64}
    assert [run['mean_ms'] for run in out['runs']] == [5592.12, 5648.05, 5536.2]
    assert out['spread_pct'] == 1.0
    assert out['mean_ms'] == 5592.12


def test_spread_between_2_and_5_percent_warns():
    out = baseline_measure(runs(MIXTRAL, [1.0, 1.03, 0.97]), host='node01', warmup=2)
    assert out['measured'] is True
    assert out['spread_pct'] == 3.0
    assert out['findings'] == [{
        'host': 'node01', 'device': None, 'check': 'spread', 'value': 3.0, 'expected': '<= 2.0 %', 'severity': 'warn',
        'msg': 'node01: the 3 runs spread by 3.0 % (mean step times 5592.12, 5759.88, 5424.38 ms), above 2.0 %: noise; '
               'find it before tuning'}]


def test_spread_above_5_percent_fails_naming_host_and_mean_step_times():
    out = baseline_measure(runs(MIXTRAL, [1.0, 1.08, 0.92]), host='node01', warmup=2)
    assert out['measured'] is True
    assert out['findings'] == [{
        'host': 'node01', 'device': None, 'check': 'spread', 'value': 8.0, 'expected': '<= 5.0 %', 'severity': 'fail',
        'msg': 'node01: the 3 runs spread by 8.0 % (mean step times 5592.12, 6039.5, 5144.75 ms), above 5.0 %: noise; '
               'find it before tuning'}]


def test_limits_of_the_spread_are_options():
    results = runs(MIXTRAL, [1.0, 1.03, 0.97])
    assert baseline_measure(results, warmup=2, warn_pct=4.0)['findings'] == []
    assert [f['severity'] for f in baseline_measure(results, warmup=2, warn_pct=1.0, fail_pct=2.5)['findings']] == ['fail']


def test_one_run_has_no_spread_finding():
    out = baseline_measure(runs(MIXTRAL, [1.0]), host='node01', warmup=2)
    assert (out['measured'], out['spread_pct'], out['findings']) == (True, 0.0, [])


def test_a_failed_run_fails():
    results = runs(MIXTRAL, [1.0, 1.0, 1.0])
    results[1] = dict(results[1], rc=1, stdout='', failed=False,
                      stderr='[rank0]: Traceback (most recent call last):\n[rank0]: RuntimeError: NPU out of memory.\n')
    out = baseline_measure(results, host='node01', warmup=2)
    assert out['measured'] is False
    assert out['reason'] == 'the benchmark did not give a measurement on every run'
    assert out['findings'] == [{
        'host': 'node01', 'device': None, 'check': 'benchmark', 'value': 1, 'expected': 0, 'severity': 'fail',
        'msg': 'node01 (run 2): the benchmark command failed (rc=1): [rank0]: RuntimeError: NPU out of memory.'}]
    assert [run['run'] for run in out['runs']] == [1, 3]
    assert out['mean_ms'] is None and out['spread_pct'] is None


def test_a_run_stopped_by_the_task_timeout_fails():
    result = {'failed': False, 'msg': 'The command action failed to execute in the expected time frame (3600) and was terminated',
              'baseline_run': 1}
    out = baseline_measure([result], host='node01')
    assert out['findings'][0]['msg'] == ('node01 (run 1): the benchmark command failed (rc=None): The command action failed to '
                                         'execute in the expected time frame (3600) and was terminated')
    assert out['measured'] is False


def test_check_mode_skipped_results_are_not_measured():
    skipped = [{'changed': False, 'skipped': True, 'msg': 'Command would have run if not in check mode', 'rc': None,
                'baseline_run': index} for index in (1, 2, 3)]
    out = baseline_measure(skipped, host='node01')
    assert out == {'measured': False, 'reason': 'a measurement is skipped in check mode', 'runs': [], 'mean_ms': None,
                   'spread_pct': None, 'tokens_per_s': None, 'tflops_per_npu': None, 'mfu_pct': None, 'findings': []}


def test_no_benchmark_command():
    assert baseline_measure([], host='node01')['reason'] == 'no benchmark ran (baseline_command is empty)'
    assert baseline_measure(None)['measured'] is False


def test_no_iteration_lines_fails():
    results = runs(MIXTRAL, [1.0])
    results[0]['stdout'] = 'Training finished.\n'
    out = baseline_measure(results, host='node01', warmup=2)
    assert out['measured'] is False
    assert out['findings'] == [{
        'host': 'node01', 'device': None, 'check': 'benchmark', 'value': 0, 'expected': 'iteration lines', 'severity': 'fail',
        'msg': 'node01 (run 1): the 0 iteration line(s) the benchmark printed could not be measured: step_stats: skip=2 leaves '
               'no step to measure: the log has 0 steps. Use a smaller skip or a longer run.'}]


def test_fewer_iteration_lines_than_warm_up_steps_fails():
    out = baseline_measure(runs(TIMERS_ONLY, [1.0]), host='node01', warmup=2)
    assert out['findings'][0]['msg'] == (
        'node01 (run 1): the 2 iteration line(s) the benchmark printed could not be measured: step_stats: skip=2 leaves no '
        'step to measure: the log has 2 steps. Use a smaller skip or a longer run.')
    assert baseline_measure(runs(TIMERS_ONLY, [1.0]), host='node01', warmup=1)['measured'] is True


def test_tokens_per_s_from_consumed_tokens():
    out = baseline_measure(runs(QWEN, [1.0, 1.0]), host='node01', warmup=1)
    # steps 2 and 3: 2 x 32768 tokens in 1.8799 + 1.76999 s
    assert out['runs'][0]['tokens_per_s'] == round(65536 / (1.8799 + 1.76999), 1) == 17955.6
    assert out['tokens_per_s'] == 17955.6
    assert (out['tflops_per_npu'], out['mfu_pct']) == (None, None)


def test_tokens_per_s_from_global_batch_and_seq_length():
    out = baseline_measure(runs(MIXTRAL, [1.0]), warmup=2, seq_length=4096)
    # 4 steps x 128 samples x 4096 tokens in 5.7063 + 5.3616 + 5.4707 + 5.8299 s
    assert out['tokens_per_s'] == round(4 * 128 * 4096 / (5.7063 + 5.3616 + 5.4707 + 5.8299), 2)
    assert baseline_measure(runs(MIXTRAL, [1.0]), warmup=2)['tokens_per_s'] is None


def test_tflops_and_mfu():
    out = baseline_measure(runs(POLARIS, [1.0, 1.0, 1.0]), host='node01', warmup=1, peak_tflops=312)
    assert out['runs'][0]['tflops_per_npu'] == 68.63
    assert out['mfu_pct'] == round(68.63 / 312 * 100, 2) == 22.0
    assert out['tokens_per_s'] == round((629145600 - 625999872) / 14.5414, 1)
    assert baseline_measure(runs(POLARIS, [1.0]), warmup=1)['mfu_pct'] is None


@pytest.mark.parametrize('junk', [None, 'text', 3])
def test_entries_that_are_not_results_are_left_out(junk):
    out = baseline_measure([junk] + runs(MIXTRAL, [1.0]), warmup=2)
    assert out['measured'] is True and len(out['runs']) == 1
