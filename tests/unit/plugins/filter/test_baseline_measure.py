"""baseline_measure over looped command results that printed real training-log lines: the warm-up and the least number
of measured iterations of the method, the peak of the NPU model for MFU, and the record of how the benchmark was
launched (benchmark_launch, launch_check, launch_text)."""

from __future__ import annotations

import inspect
import os
import re

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.filter import step_stats as perf
from ansible_collections.npuops.ascend.plugins.filter.step_stats import baseline_measure
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import sample

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


def launch_check(*args, **kwargs):
    return perf.launch_check(*args, **kwargs)


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


def test_filter_table():
    assert perf.FilterModule().filters()['baseline_measure'] is baseline_measure


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


def _launch(**kw):
    record = benchmark_launch(CONFIG, {'results': [ID_ROOT, STATUS]})
    record.update(kw)
    return record


def test_the_same_launch_is_comparable():
    check = launch_check(_launch(), _launch())
    assert check == {'comparable': True, 'same': True, 'declared': None, 'differences': [], 'findings': [],
                     'before_recorded': True}


def test_a_different_launch_is_not_compared_and_fails():
    after = _launch(user='npuops', uid=996, launcher=['/usr/local/bin/npu-bind', '0', '--'], cpus_allowed='144-167',
                    mems_allowed='6')
    check = launch_check(after, _launch(), baseline_run='R1')
    assert check['comparable'] is False and check['same'] is False
    assert [d['field'] for d in check['differences']] == ['launcher', 'user', 'cpus_allowed', 'mems_allowed']
    assert check['findings'] == [{
        'host': 'node01', 'device': None, 'check': 'launch', 'value': 'launcher, user, CPUs allowed, memory nodes allowed',
        'expected': 'the launch of stage 1', 'severity': 'fail',
        'msg': 'node01: stage 9 was not launched as stage 1 of run R1 was (launcher none -> /usr/local/bin/npu-bind 0 --; '
               'user root -> npuops; CPUs allowed 0-191 -> 144-167; memory nodes allowed 0-7 -> 6), so its measurement '
               'is not compared with the baseline: a different launch can show as a regression or an improvement of '
               'its own. Launch stage 9 as stage 1 was launched (regression_command, regression_run_user, '
               'regression_launcher), or name the difference as the change under test in regression_launch_change'}]


def test_a_declared_difference_is_compared_with_a_warning():
    after = _launch(user='npuops', uid=996)
    check = launch_check(after, _launch(), change='the run user of stage 6')
    assert check['comparable'] is True and check['same'] is False and check['declared'] == 'the run user of stage 6'
    assert [(f['severity'], f['msg']) for f in check['findings']] == [(
        'warn', 'node01: stage 9 was not launched as stage 1 was (user root -> npuops); compared anyway because '
                'regression_launch_change names it as the change under test: the run user of stage 6')]


def test_a_baseline_without_a_launch_record_warns():
    check = launch_check(_launch(), {})
    assert check['comparable'] is True and check['before_recorded'] is False
    assert [(f['severity'], f['check']) for f in check['findings']] == [('warn', 'launch')]
    assert 'records no launch' in check['findings'][0]['msg']


def test_unobserved_fields_are_not_compared():
    # the probe failed on one side: user and bindings are unknown there, the configured launch is still compared
    after = benchmark_launch(CONFIG)
    assert launch_check(after, _launch())['comparable'] is True
    assert launch_check(benchmark_launch(dict(CONFIG, run_user='npuops')), _launch())['comparable'] is False


def test_the_launch_text_names_the_run_user():
    record = benchmark_launch(dict(CONFIG, run_user='npuops'), {'results': [
        {'rc': 0, 'stdout': 'uid=995(npuops) gid=995(npuops) groups=995(npuops)'}, STATUS]})
    assert launch_text(record).startswith('`/usr/local/sbin/npu-sim train --steps 50` on node01 as npuops (uid 995, through '
                                          'runuser), without a launcher')
    assert launch_text(benchmark_launch(CONFIG)).startswith('`/usr/local/sbin/npu-sim train --steps 50` on node01 as the '
                                                            'connection user, without a launcher')
    assert launch_text(None) == 'not recorded'
