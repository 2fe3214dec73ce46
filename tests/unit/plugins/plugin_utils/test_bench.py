"""Measurements: bench_findings on hccl_bench results made by run_module from real samples; step_stats, cv_percent, mfu,
busbw and the cross-node expectation on real training logs and on every error path; baseline_measure over looped command
results that printed real training-log lines (the warm-up and the least number of measured iterations of the method, the
peak of the NPU model for MFU); and the record of how the benchmark was launched (benchmark_launch, launch_text)."""

from __future__ import annotations

import inspect
import os
import re

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.modules import hccl_bench as hccl_bench_module
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import hccl_bench
from ansible_collections.npuops.ascend.plugins.module_utils._parsers.train_log import parse_train_log
from ansible_collections.npuops.ascend.plugins.plugin_utils import bench as perf
from ansible_collections.npuops.ascend.plugins.plugin_utils.bench import baseline_measure, bench_findings
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import NPU_SMI, sample
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils.node_reads import INFO_IDLE, H

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'parsers', 'train_log', 'train_log')

INFO_BUSY = sample('npu_smi/info/vllm5111_910b2_25.2.0_busy')
HCCL_TABLE = sample('hccl_bench/hccl_test/oam_doc_table_avg_time')   # peak algbw 23.76245 GB/s: busbw 41.584 on 8 ranks
HCCL_TABLE_FAST = sample('hccl_bench/hccl_test/secondhand_128rank_collapsed')

# Real logs (tests/fixtures/captures/train_log.txt).
MIXTRAL = sample('train_log/train_log/megatron_lm_h100_mixtral_throughput')   # 6 lines, TFLOP/s per GPU, no consumed tokens
QWEN = sample('train_log/train_log/mindspeed_llm_fsdp2_pretrain_qwen3_8b')     # 3 lines with consumed tokens
POLARIS = sample('train_log/train_log/megatron_deepspeed_polaris_tgs')          # 2 lines with consumed tokens and TFLOPs
TIMERS_ONLY = sample('train_log/train_log/megatron_deepspeed_aurora_escape_and_timers')   # 2 iteration lines among timers

_ELAPSED = re.compile(r'(elapsed time per iteration \(ms\): )([0-9.]+)')
_HEAD = re.compile(r'iteration +[0-9]+/ +[0-9]+ \| consumed samples: +[0-9]+ \|')
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def npu_peak_tflops(*args, **kwargs):
    return perf.npu_peak_tflops(*args, **kwargs)


def benchmark_launch(*args, **kwargs):
    return perf.benchmark_launch(*args, **kwargs)


def launch_text(*args, **kwargs):
    return perf.launch_text(*args, **kwargs)


def role_defaults(role):
    with open(os.path.join(REPO, 'roles', role, 'defaults', 'main.yml'), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def whole_run(total, interval=1, first_ms=9800.0, ms=5900.0):
    """A whole run of ``total`` iterations logged every ``interval``, in the layout of the first line of the real
    Megatron-LM log: the first logged interval holds the graph compilation (``first_ms``), the others ``ms`` +- 1 %."""
    template = MIXTRAL.splitlines()[0]
    lines = []
    for number, iteration in enumerate(range(interval, total + 1, interval)):
        elapsed = first_ms if number == 0 else ms * (1.0 + (0.01 if number % 2 else -0.01))
        line = _HEAD.sub('iteration %8d/%8d | consumed samples: %12d |' % (iteration, total, iteration * 128), template)
        lines.append(_ELAPSED.sub(lambda m, e=elapsed: m.group(1) + '%.1f' % e, line))
    return '\n'.join(lines) + '\n'


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


def _log(name):
    with open(os.path.join(FIXTURES, name + '.txt'), encoding='utf-8') as handle:
        return handle.read()


# ---- bench_findings (stage 3) --------------------------------------------------------------------------------------

@pytest.fixture
def bench(run_module, tmp_path):
    test = tmp_path / 'all_reduce_test'
    test.write_text('#!/bin/sh\n')
    test.chmod(0o755)

    def run(output=HCCL_TABLE, info=INFO_BUSY, rc=0, err='', check_mode=False, **options):
        argv = ('/usr/bin/mpirun', '-n', '8', str(test), '-b', '8K', '-e', '1G', '-f', '2', '-p', '8')
        cmds = {(NPU_SMI, 'info'): (0, info, ''), argv: (rc, output, err)}
        return run_module(hccl_bench_module, dict({'hccl_test_path': str(test)}, **options), cmds, bin_paths={'mpirun': '/usr/bin/mpirun'},
                          check_mode=check_mode)

    return run


def test_bench_below_the_band_with_busy_npus(bench):
    result = bench(fail_below_band=False).result
    found = bench_findings(result, H)
    assert found[0] == {'host': H, 'device': None, 'check': 'busbw', 'value': 41.584, 'expected': '>= 117.6 GB/s', 'severity': 'fail',
                        'msg': 'node-07: AllReduce bus bandwidth 41.584 GB/s is below 117.6 GB/s (60.0 % of 196.0 GB/s)'}
    assert [(f['device'], f['check'], f['value']) for f in found[1:]] == [(dev, 'busy', 16143 + dev) for dev in range(8)]
    assert found[1]['msg'] == 'node-07 NPU 0: pid 16143 (VLLMWorker_DP) holds the NPU during the benchmark'


def test_bench_below_the_band_that_failed_the_task(bench):
    res = bench(info=INFO_IDLE)
    assert res.failed
    assert [f['check'] for f in bench_findings(res.result, H)] == ['busbw']


def test_bench_within_or_above_the_band(bench):
    assert bench_findings(bench(output=HCCL_TABLE_FAST).result, H) == []
    assert bench_findings(bench(output=HCCL_TABLE_FAST, band=[85, 95]).result, H) == []


def test_bench_that_did_not_run(bench):
    res = bench(output='', rc=127, err=sample('hccl_bench/hccl_test/faq_libmpi_missing'))
    assert res.failed
    assert bench_findings(res.result, H) == [{'host': H, 'device': None, 'check': 'hccl_bench', 'value': None, 'expected': None,
                                              'severity': 'fail', 'msg': 'node-07: the benchmark did not run: %s' % res.result['msg']}]


def test_bench_skipped_in_check_mode(bench):
    res = bench(check_mode=True)
    assert res.result['skipped'] is True
    assert bench_findings(res.result, H) == []
    assert bench_findings(None) == []


# --- step_stats -----------------------------------------------------------------------------------

def test_step_stats_on_a_real_log():
    steps = parse_train_log(_log('megatron_llm_no_throughput'))['steps']
    stats = perf.step_stats(steps, skip=2)
    times = [s['elapsed_ms'] for s in steps[2:]]
    assert stats['count'] == 6 and stats['skipped_warmup'] == 2
    assert stats['mean_ms'] == pytest.approx(sum(times) / 6)
    assert stats['median_ms'] == pytest.approx(sorted(times)[2] / 2 + sorted(times)[3] / 2)
    assert (stats['min_ms'], stats['max_ms']) == (min(times), max(times))
    assert stats['cv_percent'] == pytest.approx(perf.cv_percent(times))
    assert stats['tflops_per_npu'] is None
    assert stats['tokens_per_s'] is None and stats['tokens_per_s_from'] is None


def test_step_stats_tokens_from_consumed_tokens_of_a_real_log():
    steps = parse_train_log(_log('mindspeed_llm_fsdp2_pretrain_qwen3_8b'))['steps']
    stats = perf.step_stats(steps, skip=1)
    # 32768 tokens per iteration (8 samples x 4096): iterations 2 and 3 took 1879.90 ms and 1769.99 ms
    assert stats['tokens_per_s'] == pytest.approx(65536 / (1.87990 + 1.76999))
    assert stats['tokens_per_s_from'] == 'consumed_tokens'


def test_step_stats_counts_the_log_interval():
    steps = [{'iteration': 50, 'elapsed_ms': 1000.0, 'consumed_tokens': 50 * 4096},
             {'iteration': 100, 'elapsed_ms': 2000.0, 'consumed_tokens': 100 * 4096}]
    assert perf.step_stats(steps, skip=1)['tokens_per_s'] == pytest.approx(50 * 4096 / (50 * 2.0))


def test_step_stats_tokens_from_batch_and_seq_length():
    steps = parse_train_log(_log('megatron_lm_h100_mixtral_throughput'))['steps']
    stats = perf.step_stats(steps, skip=2, seq_length=4096)
    used = steps[2:]
    assert stats['tokens_per_s'] == pytest.approx(128 * 4096 * len(used) / (sum(s['elapsed_ms'] for s in used) / 1000))
    assert stats['tokens_per_s_from'] == 'global_batch_size x seq_length'
    assert stats['tflops_per_npu'] == pytest.approx(sum(s['tflops_per_npu'] for s in used) / len(used))
    assert perf.step_stats(steps, skip=2)['tokens_per_s'] is None


def test_step_stats_takes_the_whole_parse_and_one_step():
    parsed = parse_train_log(_log('derived_fsdp2_trainer_head_without_total'))
    stats = perf.step_stats(parsed, skip=0)
    assert (stats['count'], stats['stdev_ms'], stats['cv_percent'], stats['mean_ms']) == (1, 0.0, 0.0, 1502.3)


@pytest.mark.parametrize('skip, count', [(2, 2), (3, 2), (5, 0), (1, 1)])
def test_step_stats_refuses_a_skip_that_leaves_no_step(skip, count):
    steps = [{'elapsed_ms': 1.0}] * count
    with pytest.raises(AnsibleFilterError, match=r'step_stats: skip=%d leaves no step to measure: the log has %d step' % (skip, count)):
        perf.step_stats(steps, skip=skip)


@pytest.mark.parametrize('steps, message', [
    ('iteration 1', 'expects the list of steps'),
    ([{'elapsed_ms': 'x'}], r"step \{'elapsed_ms': 'x'\} at index 0 has no elapsed_ms number"),
    ([{'elapsed_ms': 1.0}, 3], 'step 3 at index 1 has no elapsed_ms number'),
    ([{'elapsed_ms': True}], 'at index 0 has no elapsed_ms number'),
])
def test_step_stats_refuses_steps_without_times(steps, message):
    with pytest.raises(AnsibleFilterError, match=message):
        perf.step_stats(steps, skip=0)


@pytest.mark.parametrize('kwargs, message', [
    ({'skip': -1}, 'skip must be an integer of at least 0, got -1'),
    ({'skip': True}, 'skip must be an integer of at least 0, got True'),
    ({'skip': '2'}, "skip must be an integer of at least 0, got '2'"),
    ({'seq_length': 0}, 'seq_length must be an integer of at least 1, got 0'),
])
def test_step_stats_refuses_bad_options(kwargs, message):
    with pytest.raises(AnsibleFilterError, match=message):
        perf.step_stats([{'elapsed_ms': 1.0}] * 3, **kwargs)


# --- cv_percent -----------------------------------------------------------------------------------

def test_cv_percent():
    assert perf.cv_percent([]) == 0.0
    assert perf.cv_percent([7.5]) == 0.0
    assert perf.cv_percent([10, 10, 10]) == 0.0
    assert perf.cv_percent([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(2.138089935299395 / 5 * 100)
    assert perf.cv_percent([-1.0, -3.0]) == pytest.approx(perf.cv_percent([1.0, 3.0]))


@pytest.mark.parametrize('values, message', [
    ([1.0, 'x'], "element 'x' at index 1 is not a finite number"),
    ([True, 1.0], 'element True at index 0 is not a finite number'),
    ([1.0, None], 'element None at index 1 is not a finite number'),
    ([1.0, float('nan')], 'element nan at index 1'),
    ([1.0, -1.0], r'the mean of \[1.0, -1.0\] is 0'),
    ('1,2,3', 'expects a list of numbers'),
])
def test_cv_percent_refuses(values, message):
    with pytest.raises(AnsibleFilterError, match=message):
        perf.cv_percent(values)


# --- mfu ------------------------------------------------------------------------------------------

def test_mfu():
    assert perf.mfu(177.0, 354) == pytest.approx(50.0)
    assert perf.mfu(0, 280.0) == 0.0


@pytest.mark.parametrize('args, message', [
    ((100.0, 0), 'the peak TFLOPS per NPU must be positive, got 0'),
    ((100.0, -354.0), 'must be positive, got -354.0'),
    ((100.0, None), 'the peak TFLOPS per NPU must be a finite number, got NoneType None'),
    ((100.0, '354'), "must be a finite number, got str '354'"),
    (('x', 354), "the achieved TFLOPS per NPU must be a finite number, got str 'x'"),
    ((-1.0, 354), 'cannot be negative, got -1.0'),
    ((True, 354), 'got bool True'),
])
def test_mfu_refuses(args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        perf.mfu(*args)


# --- busbw ----------------------------------------------------------------------------------------

@pytest.mark.parametrize('op, ranks, factor', [
    ('allreduce', 8, 1.75), ('all_reduce', 16, 1.875), ('AllReduce', 1, 0.0),
    ('allgather', 8, 0.875), ('all-gather', 2, 0.5), ('reducescatter', 8, 0.875), ('reduce_scatter', 4, 0.75),
    ('alltoall', 8, 0.875), ('broadcast', 8, 1.0), ('broadcast', 1, 1.0),
])
def test_busbw_factors(op, ranks, factor):
    assert perf.busbw(100.0, ranks, op) == pytest.approx(100.0 * factor)


def test_busbw_reuses_the_hccl_bench_factor():
    assert perf._BUSBW['allreduce'] is hccl_bench.busbw_factor
    assert perf.busbw(10.0, 8, 'allgather') == pytest.approx(hccl_bench.busbw_factor(8) / 2 * 10.0)


@pytest.mark.parametrize('args, message', [
    ((10.0, 8, 'allreduce2'), "unknown operation 'allreduce2'; known operations: allgather, allreduce, alltoall, broadcast, reducescatter"),
    ((10.0, 8, None), 'unknown operation None'),
    ((10.0, 0), 'ranks must be an integer of at least 1, got 0'),
    ((10.0, True), 'ranks must be an integer of at least 1, got True'),
    ((10.0, 8.0), 'ranks must be an integer of at least 1, got 8.0'),
    ((-1.0, 8), 'the algorithm bandwidth cannot be negative'),
    (('fast', 8), "the algorithm bandwidth must be a finite number, got str 'fast'"),
])
def test_busbw_refuses(args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        perf.busbw(*args)


# --- the cross-node bus bandwidth the stage 4 gate expects -----------------------------------------------------------

def test_crossnode_expectation_is_every_port_of_a_node_capped_by_the_intra_node_busbw():
    # 8 NPUs, one 200GE port (25 GB/s) each: 200 GB/s leave a node; the ranks cannot go faster than inside a node
    out = perf.crossnode_busbw_expected(25.0, 8, 80, intra=[137.1, 140.2])
    assert (out['rails_gb_s'], out['intra_gb_s'], out['expected_gb_s'], out['gate_gb_s']) == (200.0, 137.1, 137.1, 109.68)
    assert out['basis'] == ('expected 137.1 GB/s: 8 ports x 25 GB/s = 200 GB/s, capped by the intra-node busbw stage 3 '
                            'measured (137.1 GB/s on the slowest node)')
    # without stage 3 in the play: the lowest intra-node figure stage 3 accepts (60 % of 196 GB/s)
    floor = perf.crossnode_busbw_expected(25.0, 8, 80, intra=[], intra_floor=117.6)
    assert (floor['expected_gb_s'], floor['gate_gb_s'], floor['intra_from']) == (117.6, 94.08, 'the stage 3 gate')
    # fewer NPUs per node, fewer ports: the ports are the limit
    two = perf.crossnode_busbw_expected(25.0, 2, 80, intra=[137.1])
    assert (two['expected_gb_s'], two['gate_gb_s']) == (50.0, 40.0)
    # the gate of one 25 GB/s port (20 GB/s) passed a fabric carrying an eighth of what a node can send
    assert perf.crossnode_busbw_expected(25.0, 8, 80)['gate_gb_s'] == 160.0 > 25.0 * 0.8


@pytest.mark.parametrize('args, message', [
    ((0, 8), 'the line rate of a port must be above 0 GB/s, got 0'),
    ((25.0, 0), 'npus_per_node must be an integer of at least 1, got 0'),
    ((25.0, 8, 120), 'pct must be above 0 and at most 100, got 120'),
])
def test_crossnode_expectation_refuses(args, message):
    with pytest.raises(AnsibleFilterError, match=re.escape('crossnode_busbw_expected: ' + message)):
        perf.crossnode_busbw_expected(*args)


def test_the_crossnode_finding_says_what_was_expected_and_why():
    from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.pairwise import crossnode_findings  # pylint: disable=import-outside-toplevel
    expected = perf.crossnode_busbw_expected(25.0, 8, 80, intra=[137.1])
    bench = [{'host': 'node01', 'device': None, 'check': 'busbw', 'value': 45.0, 'expected': '>= 109.68 GB/s',
              'severity': 'fail', 'msg': 'node01: AllReduce bus bandwidth 45.0 GB/s is below 109.68 GB/s (80.0 % of 137.1 GB/s)'}]
    out = crossnode_findings(bench, None, None, expected=expected)
    assert out[0]['msg'] == ('node01: AllReduce bus bandwidth 45.0 GB/s is below 109.68 GB/s (80.0 % of 137.1 GB/s); '
                             'expected 137.1 GB/s: 8 ports x 25 GB/s = 200 GB/s, capped by the intra-node busbw stage 3 '
                             'measured (137.1 GB/s on the slowest node)')
    # other findings (the benchmark did not run, busy NPUs) are left as they are
    other = [dict(bench[0], check='busy', msg='node01: pid 7 (python) holds the NPU during the benchmark')]
    assert crossnode_findings(other, None, None, expected=expected) == other
    assert crossnode_findings(bench, None, None) == bench


# ---- baseline_measure ----------------------------------------------------------------------------------------------

def test_scaled_log_keeps_the_real_layout():
    line = scaled(MIXTRAL, 1.03).splitlines()[2]
    assert line.startswith(' [2024-04-06 02:57:10] iteration       17/     100 | consumed samples:         2176 | '
                           'elapsed time per iteration (ms): 5877.5 | throughput per GPU (TFLOP/s/GPU): 228.9 |')


def test_spread_under_2_percent_passes():
    out = baseline_measure(runs(MIXTRAL, [1.0, 1.01, 0.99]), host='node01', warmup=16, seq_length=4096, peak_tflops=989)
    assert out['measured'] is True
    assert out['reason'] is None
    assert out['findings'] == []
    # the lines at iterations 15 and 16 cover warm-up iterations (up to 16) and are left out; the four lines after
    # them: 5706.3, 5361.6, 5470.7 and 5829.9 ms, covering iterations 17-73 of the excerpt
    assert out['runs'][0] == {'run': 1, 'rc': 0, 'count': 4, 'steps': 57, 'mean_ms': 5592.12, 'stdev_ms': 214.06,
                              'tokens_per_s': 93754.7, 'tflops_per_npu': 233.8, 'mfu_pct': 23.64}
    assert [run['mean_ms'] for run in out['runs']] == [5592.12, 5648.05, 5536.2]
    assert out['spread_pct'] == 1.0
    assert out['mean_ms'] == 5592.12


def test_spread_between_2_and_5_percent_warns():
    out = baseline_measure(runs(MIXTRAL, [1.0, 1.03, 0.97]), host='node01', warmup=16)
    assert out['measured'] is True
    assert out['spread_pct'] == 3.0
    assert out['findings'] == [{
        'host': 'node01', 'device': None, 'check': 'spread', 'value': 3.0, 'expected': '<= 2.0 %', 'severity': 'warn',
        'msg': 'node01: the 3 runs spread by 3.0 % (mean step times 5592.12, 5759.88, 5424.38 ms), above 2.0 %: noise; '
               'find it before tuning'}]


def test_spread_above_5_percent_fails_naming_host_and_mean_step_times():
    out = baseline_measure(runs(MIXTRAL, [1.0, 1.08, 0.92]), host='node01', warmup=16)
    assert out['measured'] is True
    assert out['findings'] == [{
        'host': 'node01', 'device': None, 'check': 'spread', 'value': 8.0, 'expected': '<= 5.0 %', 'severity': 'fail',
        'msg': 'node01: the 3 runs spread by 8.0 % (mean step times 5592.12, 6039.5, 5144.75 ms), above 5.0 %: noise; '
               'find it before tuning'}]


def test_limits_of_the_spread_are_options():
    results = runs(MIXTRAL, [1.0, 1.03, 0.97])
    assert baseline_measure(results, warmup=16, warn_pct=4.0)['findings'] == []
    assert [f['severity'] for f in baseline_measure(results, warmup=16, warn_pct=1.0, fail_pct=2.5)['findings']] == ['fail']


def test_one_run_has_no_spread_finding():
    out = baseline_measure(runs(MIXTRAL, [1.0]), host='node01', warmup=16)
    assert (out['measured'], out['spread_pct'], out['findings']) == (True, 0.0, [])


def test_a_failed_run_fails():
    results = runs(MIXTRAL, [1.0, 1.0, 1.0])
    results[1] = dict(results[1], rc=1, stdout='', failed=False,
                      stderr='[rank0]: Traceback (most recent call last):\n[rank0]: RuntimeError: NPU out of memory.\n')
    out = baseline_measure(results, host='node01', warmup=16)
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
                   'spread_pct': None, 'tokens_per_s': None, 'tflops_per_npu': None, 'mfu_pct': None, 'findings': [],
                   'warmup_steps': 10, 'min_steps': 40, 'peak_tflops': None, 'peak_source': None, 'peak_sourced': False,
                   'mfu_note': 'no peak TFLOP/s of the NPU is known, so MFU is not computed'}


def test_no_benchmark_command():
    assert baseline_measure([], host='node01')['reason'] == 'no benchmark ran (baseline_command is empty)'
    assert baseline_measure(None)['measured'] is False


def test_no_iteration_lines_fails():
    results = runs(MIXTRAL, [1.0])
    results[0]['stdout'] = 'Training finished.\n'
    out = baseline_measure(results, host='node01', warmup=16)
    assert out['measured'] is False
    assert out['findings'] == [{
        'host': 'node01', 'device': None, 'check': 'benchmark', 'value': 0, 'expected': 'iteration lines', 'severity': 'fail',
        'msg': "node01 (run 1): the benchmark printed no iteration line ('iteration N/M | ... | elapsed time per iteration "
               "(ms): ... |'): check that it is a MindSpeed / Megatron training run and that its log reaches stdout"}]


def test_fewer_iteration_lines_than_warm_up_steps_fails():
    out = baseline_measure(runs(TIMERS_ONLY, [1.0]), host='node01', warmup=16)
    assert out['findings'][0]['msg'] == (
        'node01 (run 1): the 2 iteration line(s) the benchmark printed end at iteration 2, within the 16 warm-up '
        'iteration(s) left out (baseline_warmup_steps): nothing is left to measure; run more iterations')
    assert out['findings'][0]['check'] == 'steps'
    assert baseline_measure(runs(TIMERS_ONLY, [1.0]), host='node01', warmup=1, min_steps=1)['measured'] is True


def test_tokens_per_s_from_consumed_tokens():
    out = baseline_measure(runs(QWEN, [1.0, 1.0]), host='node01', warmup=1, min_steps=1)
    # steps 2 and 3: 2 x 32768 tokens in 1.8799 + 1.76999 s
    assert out['runs'][0]['tokens_per_s'] == round(65536 / (1.8799 + 1.76999), 1) == 17955.6
    assert out['tokens_per_s'] == 17955.6
    assert (out['tflops_per_npu'], out['mfu_pct']) == (None, None)


def test_tokens_per_s_from_global_batch_and_seq_length():
    out = baseline_measure(runs(MIXTRAL, [1.0]), warmup=16, seq_length=4096)
    # 4 steps x 128 samples x 4096 tokens in 5.7063 + 5.3616 + 5.4707 + 5.8299 s
    assert out['tokens_per_s'] == round(4 * 128 * 4096 / (5.7063 + 5.3616 + 5.4707 + 5.8299), 2)
    assert baseline_measure(runs(MIXTRAL, [1.0]), warmup=16)['tokens_per_s'] is None


def test_tflops_and_mfu():
    out = baseline_measure(runs(POLARIS, [1.0, 1.0, 1.0]), host='node01', warmup=199, min_steps=1, peak_tflops=312)
    assert out['runs'][0]['tflops_per_npu'] == 68.63
    assert out['mfu_pct'] == round(68.63 / 312 * 100, 2) == 22.0
    assert out['tokens_per_s'] == round((629145600 - 625999872) / 14.5414, 1)
    assert baseline_measure(runs(POLARIS, [1.0]), warmup=199, min_steps=1)['mfu_pct'] is None


@pytest.mark.parametrize('junk', [None, 'text', 3])
def test_entries_that_are_not_results_are_left_out(junk):
    out = baseline_measure([junk] + runs(MIXTRAL, [1.0]), warmup=16)
    assert out['measured'] is True and len(out['runs']) == 1


# ---- the warm-up and the least number of measured iterations of the method -------------------------------------
# The method: run 50-100 iterations, leave out the first 10 (compilation, warm-up), take the mean of the next 40.

def test_the_defaults_follow_the_method():
    parameters = inspect.signature(baseline_measure).parameters
    assert (parameters['warmup'].default, parameters['min_steps'].default) == (10, 40)
    defaults = role_defaults('baseline')
    assert (defaults['baseline_warmup_steps'], defaults['baseline_min_steps']) == (10, 40)
    regression = role_defaults('regression')
    assert regression['regression_warmup_steps'] == "{{ baseline_warmup_steps | default(10) }}"
    assert regression['regression_min_steps'] == "{{ baseline_min_steps | default(40) }}"


def test_a_run_of_50_iterations_leaves_out_10_and_measures_40():
    out = baseline_measure(runs(whole_run(50), [1.0, 1.0, 1.0]), host='node01')
    assert out['measured'] is True and out['findings'] == []
    assert (out['warmup_steps'], out['min_steps']) == (10, 40)
    # the compilation step (9800 ms) and the other warm-up iterations are left out: 40 lines of 5900 +- 1 %
    assert [(run['count'], run['steps']) for run in out['runs']] == [(40, 40)] * 3
    assert out['mean_ms'] == 5900.0


def test_too_few_measured_iterations_are_refused_naming_the_method():
    out = baseline_measure(runs(whole_run(20), [1.0, 1.0, 1.0]), host='node01')
    assert out['measured'] is False and out['runs'] == []
    assert out['findings'][0] == {
        'host': 'node01', 'device': None, 'check': 'steps', 'value': 10, 'expected': '>= 40', 'severity': 'fail',
        'msg': 'node01 (run 1): 10 iteration(s) measured after the 10 warm-up iteration(s) left out (the log ends at '
               'iteration 20), fewer than 40: the method runs 50-100 iterations, leaves out the first 10 and averages '
               '40; run more iterations, or lower baseline_min_steps'}
    assert len(out['findings']) == 3
    assert baseline_measure(runs(whole_run(20), [1.0]), host='node01', min_steps=10)['measured'] is True
    assert baseline_measure(runs(whole_run(20), [1.0]), host='node01', min_steps=0)['measured'] is True


def test_the_warm_up_counts_iterations_not_log_lines():
    # Megatron logs every --log-interval iterations: 100 iterations every 10 are 10 lines; the line at iteration 10
    # covers the warm-up (1-10), the 9 others cover 90 measured iterations
    out = baseline_measure(runs(whole_run(100, interval=10), [1.0]), host='node01')
    assert out['measured'] is True
    assert (out['runs'][0]['count'], out['runs'][0]['steps']) == (9, 90)
    # 20 lines, one per 5 iterations: the lines at 5 and 10 are warm-up, 18 lines and 90 iterations measured
    out = baseline_measure(runs(whole_run(100, interval=5), [1.0]), host='node01')
    assert (out['runs'][0]['count'], out['runs'][0]['steps']) == (18, 90)


@pytest.mark.parametrize('kwargs, message', [
    ({'warmup': -1}, 'warmup must be an integer of at least 0, got -1'),
    ({'min_steps': '40'}, "min_steps must be an integer of at least 0, got '40'"),
    ({'min_steps': True}, 'min_steps must be an integer of at least 0, got True'),
])
def test_bad_warm_up_or_minimum_is_an_error(kwargs, message):
    with pytest.raises(AnsibleFilterError, match=re.escape('baseline_measure: ' + message)):
        baseline_measure(runs(whole_run(50), [1.0]), **kwargs)


# ---- the peak of the NPU for MFU ---------------------------------------------------------------------------------
# Dense 16-bit Cube peak per NPU model, as Huawei's torchtitan-npu divides by for MFU
# (torchtitan_npu/patches/tools/metrics.py): 910B1 373.88, 910B2 353.8944, 910B3 294.912, 910B4 245.76 TFLOP/s.

@pytest.mark.parametrize('names, tflops, variant', [
    (['910B1'], 373.88, '910B1'),
    (['910B2'] * 8, 353.8944, '910B2'),
    ('910B3', 294.912, '910B3'),
    ([['910B4'], ['910B4']], 245.76, '910B4'),
    (['Ascend910B3'], 294.912, '910B3'),
    ([' 910b3 '], 294.912, '910B3'),
])
def test_the_peak_comes_from_the_npu_model(names, tflops, variant):
    peak = npu_peak_tflops(names)
    assert (peak['tflops'], peak['variant'], peak['sourced']) == (tflops, variant, True)
    assert 'torchtitan-npu' in peak['source'] and variant in peak['source'] and peak['reason'] is None


@pytest.mark.parametrize('names, reason', [
    ([], 'the NPU model is not known (no chip name was read): set baseline_peak_tflops to the peak of your NPU'),
    (None, 'the NPU model is not known (no chip name was read): set baseline_peak_tflops to the peak of your NPU'),
    (['910B3', '910B4'], 'the nodes carry different NPU models (910B3, 910B4), so no one peak applies: set '
                         'baseline_peak_tflops'),
    (['910A'], 'no sourced peak is known for the 910A: set baseline_peak_tflops to the figure of your NPU from its '
               'vendor documentation'),
])
def test_no_peak_without_one_known_model(names, reason):
    peak = npu_peak_tflops(names)
    assert (peak['tflops'], peak['sourced'], peak['reason']) == (None, False, reason)


def test_a_peak_given_by_the_operator_is_labelled_unsourced():
    peak = npu_peak_tflops(['910B3'], given=313)
    assert (peak['tflops'], peak['sourced'], peak['variant']) == (313.0, False, '910B3')
    assert peak['source'] == 'baseline_peak_tflops (313 TFLOP/s, set by the operator; not checked against a source)'
    with pytest.raises(AnsibleFilterError, match='npu_peak_tflops: the given peak must be a number above 0, got -1'):
        npu_peak_tflops([], given=-1)


def test_the_role_takes_the_peak_from_the_npu_model_by_default():
    assert role_defaults('baseline')['baseline_peak_tflops'] is None


def test_mfu_carries_the_source_of_its_peak():
    log = whole_run(50)
    out = baseline_measure(runs(log, [1.0]), host='node01', peak_tflops=npu_peak_tflops(['910B3']))
    assert (out['peak_tflops'], out['peak_sourced']) == (294.912, True)
    tflops = out['runs'][0]['tflops_per_npu']
    assert out['mfu_pct'] == round(tflops / 294.912 * 100, 2) and out['mfu_note'] is None
    given = baseline_measure(runs(log, [1.0]), host='node01', peak_tflops=313)
    assert (given['peak_tflops'], given['peak_sourced']) == (313.0, False)
    assert given['mfu_note'] == ('MFU against a peak of 313 TFLOP/s set by the operator (baseline_peak_tflops), not '
                                 'checked against a source')
    unknown = baseline_measure(runs(log, [1.0]), host='node01', peak_tflops=npu_peak_tflops(['910A']))
    assert unknown['mfu_pct'] is None and unknown['runs'][0]['mfu_pct'] is None
    assert unknown['mfu_note'] == ('MFU is not computed: no sourced peak is known for the 910A: set baseline_peak_tflops '
                                   'to the figure of your NPU from its vendor documentation')


# ---- how the benchmark was launched ------------------------------------------------------------------------------

ID_ROOT = {'rc': 0, 'stdout': 'uid=0(root) gid=0(root) groups=0(root)', 'stderr': '', 'item': ['id']}
STATUS = {'rc': 0, 'stdout': 'Cpus_allowed_list:\t0-191\nMems_allowed_list:\t0-7', 'stderr': '', 'item': ['grep']}
CONFIG = {'host': 'node01', 'command': '/usr/local/sbin/npu-sim train --steps 50', 'launcher': '', 'launcher_args': [],
          'run_user': '', 'chdir': '', 'environment': {'HCCL_RDMA_SL': '4'}}


def test_the_launch_record_says_command_user_binding_and_environment():
    plan = benchmark_launch(CONFIG)
    assert plan['prefix'] == [] and plan['prefix_text'] == '' and plan['observed'] is False
    record = benchmark_launch(CONFIG, {'results': [ID_ROOT, STATUS]})
    assert record == {
        'host': 'node01', 'command': '/usr/local/sbin/npu-sim train --steps 50', 'launcher': [], 'run_user': None,
        'prefix': [], 'prefix_text': '', 'chdir': None, 'environment': ['HCCL_RDMA_SL'], 'env_file': None,
        'observed': True, 'user': 'root', 'uid': 0, 'cpus_allowed': '0-191', 'mems_allowed': '0-7', 'probe_error': None}
    assert launch_text(record) == ('`/usr/local/sbin/npu-sim train --steps 50` on node01 as root (uid 0), without a '
                                   'launcher (no binding of its own), allowed CPUs 0-191 and memory nodes 0-7; '
                                   'environment: HCCL_RDMA_SL')


def test_a_run_user_and_a_launcher_go_before_the_command():
    config = dict(CONFIG, run_user='npuops', launcher='/usr/local/bin/npu-bind', launcher_args=['0', '--'])
    record = benchmark_launch(config)
    assert record['prefix'] == ['setsid', '--wait', 'runuser', '-u', 'npuops', '--', '/usr/local/bin/npu-bind', '0', '--']
    assert record['prefix_text'] == 'setsid --wait runuser -u npuops -- /usr/local/bin/npu-bind 0 --'
    assert record['launcher'] == ['/usr/local/bin/npu-bind', '0', '--'] and record['run_user'] == 'npuops'
    with pytest.raises(AnsibleFilterError, match="benchmark_launch: run_user 'root;id' is not a user name"):
        benchmark_launch(dict(CONFIG, run_user='root;id'))


def test_a_probe_that_failed_is_recorded_with_the_tool_words():
    failed = {'rc': 2, 'stdout': '', 'stderr': '', 'msg': "[Errno 2] No such file or directory: b'/nonexistent/npu-bind'"}
    record = benchmark_launch(dict(CONFIG, launcher='/nonexistent/npu-bind'), {'results': [failed, failed]})
    assert record['observed'] is False and record['user'] is None
    assert record['probe_error'] == "[Errno 2] No such file or directory: b'/nonexistent/npu-bind'"


def test_the_launch_text_names_the_run_user():
    record = benchmark_launch(dict(CONFIG, run_user='npuops'), {'results': [
        {'rc': 0, 'stdout': 'uid=995(npuops) gid=995(npuops) groups=995(npuops)'}, STATUS]})
    assert launch_text(record).startswith('`/usr/local/sbin/npu-sim train --steps 50` on node01 as npuops (uid 995, through '
                                          'runuser), without a launcher')
    assert launch_text(benchmark_launch(CONFIG)).startswith('`/usr/local/sbin/npu-sim train --steps 50` on node01 as the '
                                                            'connection user, without a launcher')
    assert launch_text(None) == 'not recorded'


# ---- what stage 3's node task keeps of the benchmark (stage_bench) --------------------------------------------------

def test_bench_applies_from_the_link_stage_0_read_else_the_declared_family():
    assert perf.bench_applies('HCCS') is True and perf.bench_applies('HCCS', hccs=False) is True
    assert perf.bench_applies('PCIe') is False and perf.bench_applies('PCIe', hccs=True) is False
    assert perf.bench_applies('', hccs=False) is False and perf.bench_applies(None) is True


def test_kept_result_is_what_failed_when_false_registers(bench):
    broken = bench(output='', rc=127, err='mpirun: error while loading shared libraries')
    kept = perf.kept_result(dict(broken.result, failed=True, _ansible_no_log=False, warnings=['w'], deprecations=[]))
    assert kept['failed'] is False and kept['failed_when_result'] is False and '_ansible_no_log' not in kept
    assert 'warnings' not in kept and 'deprecations' not in kept
    assert kept['msg'] == broken.result['msg']
    assert perf.kept_result({'stdout': 'a\nb', 'stderr': None}) == {
        'stdout': 'a\nb', 'stdout_lines': ['a', 'b'], 'stderr': None, 'stderr_lines': [], 'failed': False,
        'failed_when_result': False}
    assert perf.kept_result({'stdout_lines': ['kept'], 'stdout': 'x'})['stdout_lines'] == ['kept']
    # the error of a failed module is kept as text under the name Ansible gives it
    kept = perf.kept_result({'failed': True, 'msg': 'torchrun not found', 'exception': 'Traceback: ...'})
    assert kept['failed_when_suppressed_exception'] == 'Traceback: ...' and 'exception' not in kept
    kept = perf.kept_result({'failed': True, 'msg': 'torchrun not found', 'exception': object()})
    assert isinstance(kept['failed_when_suppressed_exception'], str)
    # a result the module skipped (check mode): failed_when is not evaluated on it
    assert perf.kept_result({'changed': False, 'skipped': True, 'msg': 'm'}) == {
        'changed': False, 'skipped': True, 'msg': 'm', 'failed': False}


def test_bench_record_data_keeps_the_figures_and_whether_it_measured(bench):
    result = bench(output=HCCL_TABLE, fail_below_band=False).result
    assert perf.bench_record_data(result) == {'peak_busbw_gb_s': 41.584, 'peak_size_bytes': 67108864, 'ranks': 8,
                                              'below_band': True, 'msg': result['msg'], 'measured': True}
    assert 'rows' in result and 'rows' not in perf.bench_record_data(result)
    assert perf.bench_record_data(perf.NOT_APPLYING) == {'skipped': True, 'measured': False}
    assert perf.bench_record_data({'msg': 'no mpirun'}) == {'msg': 'no mpirun', 'measured': False}
    assert perf.bench_record_data(None) == {'measured': False}


def test_bench_report_adds_the_node_the_run_and_the_findings():
    source = {'changed': False, 'peak_busbw_gb_s': 137.0, 'host': 'old'}
    expected = {'changed': False, 'peak_busbw_gb_s': 137.0, 'host': H, 'run': 'R1', 'findings': []}
    assert perf.bench_report(source, H, 'R1', ()) == expected
    assert source['host'] == 'old'


def test_registered_keeps_failed_and_the_lines():
    assert perf.registered({'changed': False, 'driver': '23.0.7', 'warnings': ['w']}) == {
        'changed': False, 'driver': '23.0.7', 'failed': False}
    assert perf.registered({'failed': True, 'msg': 'x'})['failed'] is True


# ---- stage 1's snapshot of a node (stage_baseline) -----------------------------------------------------------------

def test_snapshot_problem_names_each_part_in_the_words_of_its_tool():
    assert perf.snapshot_problem({'failed_parts': []}, 'node02') is None
    read = {'failed_parts': ['npu', 'ports'], 'npu': {'msg': 'node02: npu-smi not found'}, 'ports': {'failed': True}}
    assert perf.snapshot_problem(read, 'node02') == (
        'Stage 1 could not read node02 for its snapshot: node02: npu-smi not found | not read')
    # a result without failed_parts stands for the NPUs and the ports
    assert perf.snapshot_problem({'msg': 'gone'}, 'node02') == 'Stage 1 could not read node02 for its snapshot: not read | not read'
    assert perf.snapshot_problem(None, 'n') == 'Stage 1 could not read n for its snapshot: not read | not read'


def test_snapshot_document_keeps_the_port_configuration_only():
    read = {'npu': {'count': 8}, 'ports': {'devices': {}, 'config': [{'device': 0}]}, 'failed_parts': []}
    assert perf.snapshot_document(read, {'driver': 'd'}, 'node01', 'R1') == {
        'host': 'node01', 'run': 'R1', 'npu': {'count': 8}, 'ports': [{'device': 0}], 'stack': {'driver': 'd'}}
    assert perf.snapshot_document({'npu': {}, 'ports': {'skipped': True}}, {}, 'n', 'R1')['ports'] == []
    assert perf.snapshot_document({'npu': {}}, {}, 'n', 'R1')['ports'] == []


def test_chip_names_from_the_snapshot_then_stage_0_each_once():
    npu = {'summary': {'product': {'chip_names': ['910B3', '910B4']}}}
    assert perf.chip_names(npu, ['910B4', '910B1']) == ['910B3', '910B4', '910B1']
    assert perf.chip_names(None, ['910B2']) == ['910B2']
    assert perf.chip_names({'summary': {'product': None}}) == []


# ---- the scaling ladder of stage 4 ---------------------------------------------------------------------------------

@pytest.mark.parametrize('pod, rungs, max_rungs, expected', [
    (1, None, 8, [1]),
    (2, None, 8, [1, 2]),
    (3, [], 8, [1, 2, 3]),
    (4, None, 8, [1, 2, 4]),
    (6, None, 8, [1, 2, 4, 6]),
    (1024, None, 8, [1, 2, 8, 16, 64, 128, 512, 1024]),    # 11 powers of two thinned to 8, 2 and the PoD kept
    (1000, None, 4, [1, 2, 512, 1000]),
    (6, [3, 16, 3], 8, [1, 3, 6]),                          # the operator's rungs: 1 and the PoD added, 16 left out
])
def test_the_rungs_of_the_ladder(pod, rungs, max_rungs, expected):
    assert perf.scaling_rungs(pod, rungs, max_rungs) == expected


@pytest.mark.parametrize('args, message', [
    ((0,), 'pod_nodes must be an integer of at least 1'),
    ((4, '2,4'), 'rungs must be a list of node counts'),
    ((4, [2, 0]), 'a rung'),
    ((4, None, 1), 'max_rungs must be an integer of at least 2'),
])
def test_the_rungs_refuse(args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        perf.scaling_rungs(*args)


def _rungs(*figures):
    hosts = ['node%02d' % i for i in range(1, 5)]
    counts = [1, 2, 4][:len(figures)]
    return [{'nodes': n, 'hosts': hosts[:n], 'busbw_gb_s': busbw} for n, busbw in zip(counts, figures)]


def _ports_of(node, **devices):
    """The read of a slow node's ports as the pairwise search registers it (a loop over the slow nodes): 8 ports, the
    link history of a real capture on every one (one flap of the change each), more DOWN records on ``devices``."""
    entries = {}
    for dev in range(8):
        records = [{'status': 'DOWN'}, {'status': 'UP'}] * (1 + devices.get('npu%d' % dev, 0))
        entries[str(dev)] = {'link': 'UP', 'mtu': 9000, 'pfc_priorities': [4], 'link_stat': {'records': records}}
    return {'results': [{'item': node, 'changed': False, 'devices': entries}]}


def test_a_healthy_ladder_has_no_finding_and_the_efficiency_of_every_rung(bench):
    # the one-node rung from the hccl_bench result of a real table (busbw 41.584 on 8 ranks)
    one = bench(output=HCCL_TABLE, info=INFO_IDLE, fail_below_band=False).result['peak_busbw_gb_s']
    out = perf.scaling_ladder(_rungs(one, 40.5, 39.9), {'intra_gb_s': 41.0, 'intra_from': 'stage 3'})
    assert out['findings'] == []
    assert [(r['nodes'], r['efficiency_pct'], r['pct_of_intra']) for r in out['rungs']] == [
        (1, 100.0, None), (2, 97.4, 98.8), (4, 96.0, 97.3)]
    assert (out['one_node_gb_s'], out['intra_gb_s'], out['intra_from']) == (41.584, 41.0, 'stage 3')


def test_a_rung_below_70_percent_names_the_node_the_pairwise_search_names_and_its_port():
    pairwise = {'culprits': ['node03'], 'culprit': 'node03', 'msg': 'node03 is in every slow pair'}
    out = perf.scaling_ladder(_rungs(137.0, 136.3, 45.0), {'intra_gb_s': 137.2, 'intra_from': 'stage 3'},
                              pairwise=pairwise, culprit_ports=_ports_of('node03', npu3=3))
    assert [(f['host'], f['device'], f['check'], f['value'], f['expected'], f['severity']) for f in out['findings']] == [
        ('node03', 3, 'scaling', 32.8, '>= 70 %', 'fail')]
    msg = out['findings'][0]['msg']
    assert msg.startswith('node03 NPU 3: the AllReduce over 4 nodes (node01, node02, node03, node04) reaches 45 GB/s, '
                          '32.8 % of the one-node figure 137 GB/s, below 70 % (the method, section 1')
    assert '; the ladder: 1 node 137 GB/s (100 %), 2 nodes 136.3 GB/s (99.5 %), 4 nodes 45 GB/s (32.8 %); ' in msg
    assert msg.endswith('the pairwise search names node03; its port stands out: link DOWN records 4 (other ports 1)')


def test_a_rung_below_70_percent_without_the_search_names_the_node_it_adds_or_both_of_two():
    # node04 slow: rung 2 passes, rung 4 adds node03 and node04 - with rung 3 it adds node04 alone
    hosts = ['node01', 'node02', 'node03', 'node04']
    rungs = [{'nodes': n, 'hosts': hosts[:n], 'busbw_gb_s': b} for n, b in ((1, 137.0), (2, 136.0), (3, 135.0), (4, 45.0))]
    out = perf.scaling_ladder(rungs)
    assert [(f['host'], f['device']) for f in out['findings']] == [('node04', None)]
    assert out['findings'][0]['msg'].endswith('node04 is the node this rung adds; no port of it was read or stands out, '
                                              'so the NPU is not named')
    assert out['intra_from'] == 'the one-node rung'
    # a PoD of two: both nodes are new to the ports, the ladder cannot tell them apart, so both are named
    out = perf.scaling_ladder(_rungs(137.0, 40.0))
    assert [(f['host'], f['check']) for f in out['findings']] == [('node01', 'scaling'), ('node02', 'scaling')]
    assert 'the ladder cannot tell node01, node02 apart (the pairwise search needs more than 2 nodes)' in out['findings'][0]['msg']


def test_a_rung_above_70_but_below_85_percent_of_stage_3_is_the_cross_node_finding():
    out = perf.scaling_ladder(_rungs(120.0, 110.0), {'intra_gb_s': 137.2, 'intra_from': 'stage 3'})
    assert [(f['host'], f['check'], f['value'], f['expected']) for f in out['findings']] == [
        ('node01', 'crossnode_intra', 80.2, '>= 85 %'), ('node02', 'crossnode_intra', 80.2, '>= 85 %')]
    assert '80.2 % of the intra-node figure 137.2 GB/s (stage 3), below 85 % (the method, stage 4' in out['findings'][0]['msg']
    # the floor of the gate is no measurement: the one-node rung stands for the intra-node figure; thresholds are options
    out = perf.scaling_ladder(_rungs(120.0, 110.0), {'intra_gb_s': 117.6, 'intra_from': 'the stage 3 gate'})
    assert out['findings'] == [] and out['intra_from'] == 'the one-node rung'
    assert [f['check'] for f in perf.scaling_ladder(_rungs(120.0, 110.0), min_pct=95)['findings']] == ['scaling'] * 2


def test_a_ladder_whose_one_node_rung_did_not_measure_has_no_efficiency():
    rungs = _rungs(None, 40.0)
    rungs[0]['msg'] = 'mpirun exited 1'
    out = perf.scaling_ladder(rungs)
    assert out['findings'] == [] and out['msg'] == 'the one-node rung did not measure (mpirun exited 1): no efficiency'
    assert [r['efficiency_pct'] for r in out['rungs']] == [None, None]


@pytest.mark.parametrize('kwargs, message', [
    ({'rungs': []}, 'rungs must be a non-empty list'),
    ({'rungs': _rungs(1.0), 'min_pct': 0}, 'min_pct must be above 0 and at most 100'),
    ({'rungs': _rungs(1.0), 'intra_min_pct': 'x'}, 'intra_min_pct must be above 0'),
])
def test_the_ladder_refuses(kwargs, message):
    with pytest.raises(AnsibleFilterError, match=message):
        perf.scaling_ladder(**kwargs)


# ---- stage 4: each rail on its own ----------------------------------------------------------------------------------

TWO = ['node01', 'node02']
STAGE3_137 = {'intra_gb_s': 137.2, 'intra_from': 'stage 3'}


def _rails(*figures, hosts=None):
    """hccl_bench's runs with rails: NPU d's figure, or a failed run for None."""
    hosts = TWO if hosts is None else hosts
    return [{'device': d, 'hosts': list(hosts), 'peak_busbw_gb_s': b, 'ranks': len(hosts)} if b is not None else
            {'device': d, 'hosts': list(hosts), 'failed': True, 'msg': 'node01: mpirun exited 1'}
            for d, b in enumerate(figures)]


def test_healthy_rails_meet_the_port_and_have_no_finding():
    out = perf.rail_check(_rails(*([22.47] * 8)), 25.0, STAGE3_137, hosts=TWO)
    assert out['findings'] == []
    assert (out['expected_gb_s'], out['median_gb_s'], out['min_pct']) == (25.0, 22.47, 85.0)
    assert out['basis'] == 'the line rate of one port 25 GB/s'   # stage 3's 137.2 GB/s does not cap one port
    assert [(r['device'], r['busbw_gb_s'], r['pct_of_expected'], r['pct_of_median'], r['msg']) for r in out['rails']][:2] == [
        (0, 22.47, 89.9, 100.0, None), (1, 22.47, 89.9, 100.0, None)]


def test_a_slow_rail_of_two_nodes_names_the_first_node_and_says_the_port_read_does_not_tell():
    figures = [22.47] * 8
    figures[3] = 2.25
    out = perf.rail_check(_rails(*figures), 25.0, STAGE3_137, hosts=TWO)
    assert [(f['host'], f['device'], f['check'], f['value'], f['expected'], f['severity']) for f in out['findings']] == [
        ('node01', 3, 'crossnode_rail', 9.0, '>= 85 %', 'fail')]
    msg = out['findings'][0]['msg']
    assert msg.startswith('node01 NPU 3: rail 3 (NPU 3 of node01, node02, each over its own port) reaches 2.25 GB/s, 9 % '
                          'of the 25 GB/s one port is expected to carry (the line rate of one port 25 GB/s), below 85 % '
                          '(the method, stage 4: the 2-node re-test reaches at least 85 % of the intra-node level)')
    assert '; the rails: NPU 0 22.5, NPU 1 22.5, NPU 2 22.5, NPU 3 2.2, NPU 4 22.5' in msg
    assert msg.endswith("the port read does not tell which node's port 3 it is (no slow node was named and read: the "
                        "pairwise search runs below the gate on 3 nodes or more); check port 3 of every node of the rail")
    # the threshold is an option: at 95 % the healthy rails (89.9 %) are findings too
    assert len(perf.rail_check(_rails(*figures), 25.0, STAGE3_137, min_pct=95, hosts=TWO)['findings']) == 8


def test_a_slow_rail_names_the_node_whose_port_stands_out_in_the_pairwise_read():
    figures = [22.4] * 8
    figures[3] = 5.6
    pairwise = {'culprits': ['node02', 'node03'], 'culprit': 'node02', 'msg': 'node02 and node03 are in every slow pair'}
    ports = _ports_of('node03', npu3=3)
    ports['results'].append(_ports_of('node02', npu6=2)['results'][0])
    out = perf.rail_check(_rails(*figures, hosts=['node01', 'node02', 'node03']), 25.0, STAGE3_137, pairwise=pairwise,
                          culprit_ports=ports, hosts=['node01', 'node02', 'node03'])
    assert [(f['host'], f['device'], f['value']) for f in out['findings']] == [('node03', 3, 22.4)]
    assert out['findings'][0]['msg'].endswith("its port stands out in the read of the slow nodes' ports: link DOWN "
                                              "records 4 (other ports 1)")


def test_a_slow_rail_whose_port_does_not_stand_out_names_the_pairwise_culprits():
    figures = [22.4] * 8
    figures[2] = 9.0
    pairwise = {'culprits': ['node03'], 'culprit': 'node03'}
    out = perf.rail_check(_rails(*figures, hosts=['node01', 'node02', 'node03']), 25.0, STAGE3_137, pairwise=pairwise,
                          culprit_ports=_ports_of('node03', npu5=2), hosts=['node01', 'node02', 'node03'])
    assert [(f['host'], f['device']) for f in out['findings']] == [('node03', 2)]
    assert out['findings'][0]['msg'].endswith('the pairwise search names node03; no read of its ports singles out port 2')
    # a slow node the search names that is not a node of the rails is not blamed
    out = perf.rail_check(_rails(*figures), 25.0, STAGE3_137, pairwise=pairwise, hosts=TWO)
    assert [(f['host'], f['device']) for f in out['findings']] == [('node01', 2)]


def test_a_rail_far_below_the_others_is_a_finding_even_when_it_meets_the_expected_figure():
    # stage 3 measured a low intra-node figure (10 GB/s): it caps what one port is expected to carry
    out = perf.rail_check(_rails(24.0, 24.0, 24.0, 19.0), 25.0, {'intra_gb_s': 10.0, 'intra_from': 'stage 3'}, hosts=TWO)
    assert out['expected_gb_s'] == 10.0 and out['basis'] == ('the line rate of one port 25 GB/s, capped by the intra-node '
                                                             'busbw 10 GB/s (stage 3)')
    assert [(f['host'], f['device'], f['value']) for f in out['findings']] == [('node01', 3, 79.2)]
    assert 'reaches 19 GB/s, 79.2 % of the median of the rails 24 GB/s, below 85 % (' in out['findings'][0]['msg']
    assert 'although it meets the expected 10 GB/s' in out['findings'][0]['msg']
    # 21 GB/s is 87.5 % of the median: no finding
    assert perf.rail_check(_rails(24.0, 24.0, 24.0, 21.0), 25.0, {'intra_gb_s': 10.0, 'intra_from': 'stage 3'})['findings'] == []


def test_a_rail_that_did_not_run_is_a_warning_and_has_no_figure():
    out = perf.rail_check(_rails(22.4, None), 25.0, 117.6, hosts=TWO)
    assert out['rails'][1] == {'device': 1, 'busbw_gb_s': None, 'pct_of_expected': None, 'pct_of_median': None,
                               'msg': 'node01: mpirun exited 1'}
    assert [(f['host'], f['device'], f['severity'], f['expected']) for f in out['findings']] == [
        ('node01', 1, 'warn', '>= 21.25 GB/s')]
    assert out['findings'][0]['msg'] == ('node01 NPU 1: rail 1 (NPU 1 of node01, node02, each over its own port) did not '
                                         'measure: node01: mpirun exited 1')
    # the hosts come from the runs when not given
    assert perf.rail_check(_rails(22.4, 2.0, hosts=['a', 'b']), 25.0)['findings'][0]['host'] == 'a'


def test_the_floor_of_the_stage_3_gate_caps_a_slow_port_rate_only():
    out = perf.rail_check(_rails(50.0), 100.0, {'intra_gb_s': 60.0, 'intra_from': 'the stage 3 gate'})
    assert out['expected_gb_s'] == 60.0 and out['rails'][0]['pct_of_expected'] == 83.3
    assert out['basis'].endswith('capped by the intra-node busbw 60 GB/s (the stage 3 gate)')
    assert [f['value'] for f in out['findings']] == [83.3]


@pytest.mark.parametrize('args, kwargs, message', [
    ((_rails(20.0), 25.0), {'min_pct': 0}, 'rail_check: min_pct must be above 0 and at most 100'),
    ((_rails(20.0), 25.0), {'min_pct': 'x'}, 'rail_check: min_pct must be above 0'),
    (([{'peak_busbw_gb_s': 20.0}], 25.0), {}, 'rail_check: runs must be a list of'),
    (({'device': 0}, 25.0), {}, 'rail_check: runs must be a list of'),
    ((_rails(20.0), 0), {}, 'crossnode_busbw_expected: the line rate of a port must be above 0'),
])
def test_the_rail_check_refuses(args, kwargs, message):
    with pytest.raises(AnsibleFilterError, match=re.escape(message)):
        perf.rail_check(*args, **kwargs)
