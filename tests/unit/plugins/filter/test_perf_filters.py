"""train_log_parse, step_stats, cv_percent, mfu and busbw on real training logs and on every error path."""

from __future__ import annotations

import json
import os
import re

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.filter import npu_smi_parse as parsers
from ansible_collections.npuops.ascend.plugins.filter import step_stats as perf
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import hccl_bench, train_log

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'parsers', 'train_log', 'train_log')


def _log(name):
    with open(os.path.join(FIXTURES, name + '.txt'), encoding='utf-8') as handle:
        return handle.read()


def _expected(name):
    with open(os.path.join(FIXTURES, name + '.json'), encoding='utf-8') as handle:
        return json.load(handle)


# --- train_log_parse ------------------------------------------------------------------------------

def test_filter_tables():
    assert sorted(perf.FilterModule().filters()) == ['baseline_measure', 'benchmark_launch', 'busbw', 'crossnode_busbw_expected',
                                                     'cv_percent', 'launch_check', 'launch_text', 'mfu', 'npu_peak_tflops',
                                                     'step_stats']
    assert 'train_log_parse' in parsers.FilterModule().filters()


@pytest.mark.parametrize('name', ['megatron_lm_h100_mixtral_throughput', 'ascendspeed_llama65b_line_cut_in_field',
                                  'megatron_deepspeed_polaris_tgs', 'mindspeed_llm_fsdp2_pretrain_qwen3_8b'])
def test_train_log_parse_real_logs(name):
    assert json.loads(json.dumps(parsers.train_log_parse(_log(name)))) == _expected(name)


def test_train_log_parse_fields_of_a_real_megatron_line():
    steps = parsers.train_log_parse(_log('megatron_lm_h100_mixtral_throughput'))['steps']
    assert [s['iteration'] for s in steps] == [15, 16, 17, 71, 72, 73]
    assert steps[0] == {'iteration': 15, 'iterations': 100, 'elapsed_ms': 5926.4, 'consumed_samples': 1920,
                        'consumed_tokens': None, 'global_batch_size': 128, 'lm_loss': 1.957101, 'grad_norm': 2.853,
                        'tflops_per_npu': 220.4, 'tokens_per_s': None, 'tokens_per_npu_per_s': None,
                        'samples_per_s': None, 'mfu_pct': None, 'skipped': 0, 'nan': 0}


def test_train_log_parse_joins_the_cut_modellink_line():
    parsed = parsers.train_log_parse(_log('ascendspeed_llama65b_line_cut_in_field'))
    step = parsed['steps'][0]
    assert (step['global_batch_size'], step['skipped'], step['nan'], step['samples_per_s'], step['tflops_per_npu']) == (256, 0, 0, 7.57, 107.09)
    assert parsed['other_lines'] == 1 and parsed['unparsed'] == []   # the 'time (ms)' line


def test_train_log_parse_counts_other_lines_of_a_real_log():
    parsed = parsers.train_log_parse(_log('megatron_deepspeed_aurora_escape_and_timers'))
    assert [s['iteration'] for s in parsed['steps']] == [1, 2]
    assert parsed['other_lines'] == 10 and parsed['unparsed'] == []


def test_train_log_parse_accepts_lines_and_bytes():
    text = _log('megatron_llm_no_throughput')
    assert parsers.train_log_parse(text.splitlines()) == parsers.train_log_parse(text)
    assert parsers.train_log_parse(text.encode()) == parsers.train_log_parse(text)
    assert parsers.train_log_parse(None) == {'steps': [], 'other_lines': 0, 'unparsed': []}


def test_unreadable_iteration_lines_go_to_unparsed_and_nan_reads_as_none():
    text = (' [2026-06-22 19:28:40] iteration        5/      20 | elapsed time per iteration (ms): NA | learning rate: 1.0E-05 |\n'
            'the log field is `elapsed time per iteration (ms)`\n'
            ' [2026-06-22 19:28:41] iteration        6/      20 | elapsed time per iteration (ms): 1200.0 | lm loss: x |\n'
            ' [2026-06-22 19:28:42] iteration        7/      20 | elapsed time per iteration (ms): 1190.0 | lm loss: nan | grad norm: inf |\n'
            'saving checkpoint at iteration       7 to ckpt\n')
    parsed = parsers.train_log_parse(text)
    assert len(parsed['unparsed']) == 3 and parsed['other_lines'] == 1
    assert [(s['iteration'], s['lm_loss'], s['grad_norm']) for s in parsed['steps']] == [(7, None, None)]


def test_train_log_parse_value_variants():
    text = ('[20251023 12:39:12][rank-63/64][INFO ] [--------trainer.py:2382] :  iteration      424/   40000 | '
            'elapsed time per iteration (ms): 16601.3/17219.3 | throughput per GPU (TFLOP/s/GPU): 11.9/11.5 | '
            'tokens per GPU (tokens/s/GPU): 246.7/238.1 | global batch size:    64 |\n'
            'iteration      100/     200 | elapsed time per iteration (ms): 100.0 | compute per GPU (TFLOP/s/GPU): 496.3 (avg 496.1) |\n')
    steps = parsers.train_log_parse(text)['steps']
    assert [(s['elapsed_ms'], s['tflops_per_npu'], s['tokens_per_npu_per_s']) for s in steps] == [(16601.3, 11.9, 246.7), (100.0, 496.3, None)]


def test_a_train_log_parser_bug_is_reported_as_a_filter_error(monkeypatch):
    def broken(text):
        return 1 // 0

    monkeypatch.setitem(train_log.PARSERS, 'train_log', broken)
    with pytest.raises(AnsibleFilterError, match=r'train_log_parse: the train_log parser \(broken\) failed .*ZeroDivisionError.*please report'):
        parsers.train_log_parse('iteration 1/ 2 | elapsed time per iteration (ms): 1.0 |')


def test_train_log_parse_refuses_a_dict():
    with pytest.raises(AnsibleFilterError, match='train_log_parse expects the text output'):
        parsers.train_log_parse({'steps': []})


# --- step_stats -----------------------------------------------------------------------------------

def test_step_stats_on_a_real_log():
    steps = parsers.train_log_parse(_log('megatron_llm_no_throughput'))['steps']
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
    steps = parsers.train_log_parse(_log('mindspeed_llm_fsdp2_pretrain_qwen3_8b'))['steps']
    stats = perf.step_stats(steps, skip=1)
    # 32768 tokens per iteration (8 samples x 4096): iterations 2 and 3 took 1879.90 ms and 1769.99 ms
    assert stats['tokens_per_s'] == pytest.approx(65536 / (1.87990 + 1.76999))
    assert stats['tokens_per_s_from'] == 'consumed_tokens'


def test_step_stats_counts_the_log_interval():
    steps = [{'iteration': 50, 'elapsed_ms': 1000.0, 'consumed_tokens': 50 * 4096},
             {'iteration': 100, 'elapsed_ms': 2000.0, 'consumed_tokens': 100 * 4096}]
    assert perf.step_stats(steps, skip=1)['tokens_per_s'] == pytest.approx(50 * 4096 / (50 * 2.0))


def test_step_stats_tokens_from_batch_and_seq_length():
    steps = parsers.train_log_parse(_log('megatron_lm_h100_mixtral_throughput'))['steps']
    stats = perf.step_stats(steps, skip=2, seq_length=4096)
    used = steps[2:]
    assert stats['tokens_per_s'] == pytest.approx(128 * 4096 * len(used) / (sum(s['elapsed_ms'] for s in used) / 1000))
    assert stats['tokens_per_s_from'] == 'global_batch_size x seq_length'
    assert stats['tflops_per_npu'] == pytest.approx(sum(s['tflops_per_npu'] for s in used) / len(used))
    assert perf.step_stats(steps, skip=2)['tokens_per_s'] is None


def test_step_stats_takes_the_whole_parse_and_one_step():
    parsed = parsers.train_log_parse(_log('derived_fsdp2_trainer_head_without_total'))
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


# --- regression_compare with the launches of stage 1 and stage 9 ---------------------------------------------------

def _launches():
    from ansible_collections.npuops.ascend.plugins.filter import run_report  # pylint: disable=import-outside-toplevel
    probe = {'results': [{'rc': 0, 'stdout': 'uid=0(root) gid=0(root) groups=0(root)'},
                         {'rc': 0, 'stdout': 'Cpus_allowed_list:\t0-191\nMems_allowed_list:\t0-7'}]}
    config = {'host': 'node01', 'command': 'bash pretrain.sh', 'launcher': '', 'launcher_args': [], 'run_user': ''}
    before = perf.benchmark_launch(config, probe)
    bound = perf.benchmark_launch(dict(config, launcher='/usr/local/bin/npu-bind', launcher_args=['0', '--']), probe)
    return run_report, before, bound


MEASURED = {'measured': True, 'mean_ms': 1900.0, 'tokens_per_s': 105000.0, 'tflops_per_npu': 52.0, 'mfu_pct': 17.6,
            'spread_pct': 0.3, 'findings': [], 'runs': [{'run': 1, 'mean_ms': 1900.0}]}
BASELINE = {'measured': True, 'mean_ms': 2000.0, 'tokens_per_s': 100000.0, 'tflops_per_npu': 50.0, 'mfu_pct': 16.9,
            'spread_pct': 0.2, 'runs': []}


def test_regression_compare_refuses_a_different_launch():
    run_report, before, bound = _launches()
    check = perf.launch_check(bound, before, baseline_run='R1')
    out = run_report.regression_compare(MEASURED, dict(BASELINE, launch=before), host='node01', launch=check)
    assert out['compared'] is False and out['verdict'] == 'not run' and out['metrics'] == []
    assert out['reason'] == ('stage 9 was not launched as stage 1 was (launcher none -> /usr/local/bin/npu-bind 0 --): '
                             'the two measurements are not comparable')
    assert [(f['severity'], f['check']) for f in out['findings']] == [('fail', 'launch')]
    assert out['launch'] is check


def test_regression_compare_with_the_same_launch_compares():
    run_report, before, _bound = _launches()
    check = perf.launch_check(before, before)
    out = run_report.regression_compare(MEASURED, dict(BASELINE, launch=before), host='node01', launch=check)
    assert out['compared'] is True and out['verdict'] == 'improved' and out['findings'] == []


def test_regression_compare_keeps_the_warning_of_a_declared_launch_change():
    run_report, before, bound = _launches()
    check = perf.launch_check(bound, before, change='per-rank binding of stage 6')
    out = run_report.regression_compare(MEASURED, dict(BASELINE, launch=before), host='node01', launch=check)
    assert out['compared'] is True and out['verdict'] == 'improved'
    assert [(f['severity'], f['check']) for f in out['findings']] == [('warn', 'launch')]


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


def test_the_run_report_says_how_each_stage_launched_the_benchmark():
    run_report, before, bound = _launches()
    check = perf.launch_check(bound, before)
    comparison = run_report.regression_compare(MEASURED, dict(BASELINE, launch=before), host='node01', launch=check)
    sources = {'stage9-regression/regression.json': {
        'host': 'node01', 'command': '/usr/local/bin/npu-bind 0 -- bash pretrain.sh', 'baseline': {'run': 'R1'},
        'comparison': comparison, 'launch': {'before': before, 'after': bound, 'check': check}}}
    model = run_report.run_report(sources, 'R2')
    assert model['regression']['launch'] == {
        'before': '`bash pretrain.sh` on node01 as root (uid 0), without a launcher (no binding of its own), allowed CPUs '
                  '0-191 and memory nodes 0-7',
        'after': '`bash pretrain.sh` on node01 as root (uid 0), through `/usr/local/bin/npu-bind 0 --`, allowed CPUs 0-191 '
                 'and memory nodes 0-7',
        'same': False}
    markdown = run_report.run_report_markdown(model)
    section = markdown.split('## Before / after (stage 9)', 1)[1].split('## Versions', 1)[0]
    assert 'Not compared: stage 9 was not launched as stage 1 was (launcher none -&gt; /usr/local/bin/npu-bind 0 --)' in section
    assert '- Stage 1 launched: `bash pretrain.sh` on node01 as root (uid 0), without a launcher' in section
    assert '- Stage 9 launched: `bash pretrain.sh` on node01 as root (uid 0), through `/usr/local/bin/npu-bind 0 --`' in section
    page = run_report.run_report_html(model)
    part = page.split('id="regression"', 1)[1].split('id="versions"', 1)[0]
    assert '<ul class="launch"><li>Stage 1 launched: `bash pretrain.sh` on node01 as root (uid 0), without a launcher' in part
    assert 'Stage 9 launched: `bash pretrain.sh` on node01 as root (uid 0), through `/usr/local/bin/npu-bind 0 --`' in part
    # an older regression.json without launches: the section says so
    old = run_report.run_report({'stage9-regression/regression.json': {'host': 'node01', 'comparison': comparison}}, 'R3')
    assert old['regression']['launch'] == {'before': 'not recorded', 'after': 'not recorded', 'same': None}


def test_the_crossnode_finding_says_what_was_expected_and_why():
    from ansible_collections.npuops.ascend.plugins.filter.roce_port_findings import crossnode_findings  # pylint: disable=import-outside-toplevel
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
