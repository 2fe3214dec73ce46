"""Stage 9: launch_check (was stage 9 launched as stage 1 was), regression_compare and regression_lines - verdicts and
limits, and the comparison refused, or kept with a warning, when the launches differ."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils import regression
from ansible_collections.npuops.ascend.plugins.plugin_utils.bench import benchmark_launch
from ansible_collections.npuops.ascend.plugins.plugin_utils.regression import launch_check

BEFORE = {'measured': True, 'run': '20261202T181325Z', 'mean_ms': 2000.0, 'tokens_per_s': 100000.0,
          'tflops_per_npu': 50.0, 'mfu_pct': 16.0, 'spread_pct': 0.2, 'runs': []}


def after(**kw):
    out = {'measured': True, 'mean_ms': 1500.0, 'tokens_per_s': 133333.0, 'tflops_per_npu': 66.0, 'mfu_pct': 21.1,
           'spread_pct': 0.3, 'findings': [], 'runs': [{'run': 1, 'mean_ms': 1500.0}, {'run': 2, 'mean_ms': 1500.0},
                                                       {'run': 3, 'mean_ms': 1500.0}]}
    out.update(kw)
    return out


# ---- regression_compare, regression_lines --------------------------------------------------------------------------

def test_improvement():
    out = regression.regression_compare(after(), BEFORE, host='node01', baseline_run='R1')
    assert out['compared'] and out['verdict'] == 'improved'
    rows = dict((m['metric'], m) for m in out['metrics'])
    assert rows['mean_ms']['change_pct'] == -25.0 and rows['mean_ms']['gain_pct'] == 25.0
    assert rows['mean_ms']['verdict'] == 'improved'
    assert rows['comm_share_pct']['verdict'] == 'not available' and rows['aicore_pct']['verdict'] == 'not available'
    assert out['findings'] == [] and out['regressed'] == []
    assert regression.regression_lines(out, '/r/baseline.json') == [
        'node01: improved against /r/baseline.json', 'step time 2000 -> 1500 ms (-25 %): improved',
        'tokens/s 100000 -> 133333 tokens/s (+33.33 %): improved',
        'TFLOP/s per NPU 50 -> 66 TFLOP/s (+32 %): improved', 'MFU 16 -> 21.1 % (+31.88 %): improved']


def test_regression_beyond_the_tolerance_fails_naming_node_and_metric():
    out = regression.regression_compare(after(mean_ms=2050.0, tokens_per_s=97600.0, tflops_per_npu=49.5, mfu_pct=15.9),
                                        BEFORE, host='node01', baseline_run='R1')
    assert out['verdict'] == 'regressed' and out['regressed'] == ['step time', 'tokens/s']
    fails = [f for f in out['findings'] if f['severity'] == 'fail']
    assert [f['check'] for f in fails] == ['regression_mean_ms', 'regression_tokens_per_s']
    assert fails[0]['msg'] == ('node01: step time 2000 -> 2050 ms (+2.5 %) after tuning, worse than the stage 1 baseline '
                               'of run R1 by more than the 2 % tolerance; find what changed since stage 1 (the stage '
                               'reports of this run) before using the PoD')
    assert fails[0]['host'] == 'node01' and fails[0]['value'] == 2050.0 and fails[0]['expected'] == 2000.0


@pytest.mark.parametrize('mean, verdict', [(1900.0, 'improved'), (1901.0, 'unchanged'), (2040.0, 'unchanged'),
                                           (2040.2, 'regressed')])
def test_limits_are_inclusive_for_an_improvement_and_exclusive_for_a_regression(mean, verdict):
    out = regression.regression_compare(after(mean_ms=mean), BEFORE)
    assert dict((m['metric'], m['verdict']) for m in out['metrics'])['mean_ms'] == verdict


def test_nothing_improved_is_a_warning():
    out = regression.regression_compare(after(mean_ms=1990.0, tokens_per_s=100500.0, tflops_per_npu=50.2, mfu_pct=16.05),
                                        BEFORE, host='node01')
    assert out['verdict'] == 'unchanged'
    assert [(f['severity'], f['check']) for f in out['findings']] == [('warn', 'improvement')]


def test_no_baseline_and_no_measurement():
    out = regression.regression_compare(after(), {}, host='node01')
    assert not out['compared'] and out['findings'][0]['severity'] == 'warn'
    assert out['findings'][0]['msg'].startswith('node01: no stage 1 baseline to compare with')
    skipped = regression.regression_compare({'measured': False, 'reason': 'a measurement is skipped in check mode'}, BEFORE)
    assert skipped['reason'] == 'a measurement is skipped in check mode' and skipped['findings'] == []
    assert regression.regression_lines(skipped) == ['this node: not compared: a measurement is skipped in check mode']


def test_noisy_runs_after_tuning_fail_and_failed_runs_are_kept():
    failed = {'host': 'node01', 'check': 'benchmark', 'severity': 'fail', 'msg': 'node01 (run 2): failed'}
    spread = {'host': 'node01', 'check': 'spread', 'severity': 'fail', 'msg': 'stage 1 wording'}
    out = regression.regression_compare(after(spread_pct=7.5, findings=[failed, spread]), BEFORE, host='node01')
    checks = [(f['check'], f['severity']) for f in out['findings']]
    assert ('benchmark', 'fail') in checks and ('spread', 'fail') in checks
    assert not any(f['msg'] == 'stage 1 wording' for f in out['findings'])


@pytest.mark.parametrize('kwargs, text', [({'improvement_pct': -1}, 'improvement_pct must be'),
                                          ({'tolerance_pct': 'x'}, 'tolerance_pct must be')])
def test_bad_limits(kwargs, text):
    with pytest.raises(AnsibleFilterError, match=text):
        regression.regression_compare(after(), BEFORE, **kwargs)


def test_bad_input():
    with pytest.raises(AnsibleFilterError, match='expects the measurement'):
        regression.regression_compare([1], BEFORE)


# ---- launch_check --------------------------------------------------------------------------------------------------

ID_ROOT = {'rc': 0, 'stdout': 'uid=0(root) gid=0(root) groups=0(root)', 'stderr': '', 'item': ['id']}
STATUS = {'rc': 0, 'stdout': 'Cpus_allowed_list:\t0-191\nMems_allowed_list:\t0-7', 'stderr': '', 'item': ['grep']}
CONFIG = {'host': 'node01', 'command': '/usr/local/sbin/npu-sim train --steps 50', 'launcher': '', 'launcher_args': [],
          'run_user': '', 'chdir': '', 'environment': {'HCCL_RDMA_SL': '4'}}


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


# ---- regression_compare with the launches of stage 1 and stage 9 ---------------------------------------------------

def _launches():
    probe = {'results': [{'rc': 0, 'stdout': 'uid=0(root) gid=0(root) groups=0(root)'},
                         {'rc': 0, 'stdout': 'Cpus_allowed_list:\t0-191\nMems_allowed_list:\t0-7'}]}
    config = {'host': 'node01', 'command': 'bash pretrain.sh', 'launcher': '', 'launcher_args': [], 'run_user': ''}
    before = benchmark_launch(config, probe)
    bound = benchmark_launch(dict(config, launcher='/usr/local/bin/npu-bind', launcher_args=['0', '--']), probe)
    return before, bound


MEASURED = {'measured': True, 'mean_ms': 1900.0, 'tokens_per_s': 105000.0, 'tflops_per_npu': 52.0, 'mfu_pct': 17.6,
            'spread_pct': 0.3, 'findings': [], 'runs': [{'run': 1, 'mean_ms': 1900.0}]}
BASELINE = {'measured': True, 'mean_ms': 2000.0, 'tokens_per_s': 100000.0, 'tflops_per_npu': 50.0, 'mfu_pct': 16.9,
            'spread_pct': 0.2, 'runs': []}


def test_regression_compare_refuses_a_different_launch():
    before, bound = _launches()
    check = launch_check(bound, before, baseline_run='R1')
    out = regression.regression_compare(MEASURED, dict(BASELINE, launch=before), host='node01', launch=check)
    assert out['compared'] is False and out['verdict'] == 'not run' and out['metrics'] == []
    assert out['reason'] == ('stage 9 was not launched as stage 1 was (launcher none -> /usr/local/bin/npu-bind 0 --): '
                             'the two measurements are not comparable')
    assert [(f['severity'], f['check']) for f in out['findings']] == [('fail', 'launch')]
    assert out['launch'] is check


def test_regression_compare_with_the_same_launch_compares():
    before, _bound = _launches()
    check = launch_check(before, before)
    out = regression.regression_compare(MEASURED, dict(BASELINE, launch=before), host='node01', launch=check)
    assert out['compared'] is True and out['verdict'] == 'improved' and out['findings'] == []


def test_regression_compare_keeps_the_warning_of_a_declared_launch_change():
    before, bound = _launches()
    check = launch_check(bound, before, change='per-rank binding of stage 6')
    out = regression.regression_compare(MEASURED, dict(BASELINE, launch=before), host='node01', launch=check)
    assert out['compared'] is True and out['verdict'] == 'improved'
    assert [(f['severity'], f['check']) for f in out['findings']] == [('warn', 'launch')]


# ---- stage_steps: what each tuning stage bought --------------------------------------------------------------------

def _m(mean_ms, spread_pct=0.5, mfu_pct=None):
    return {'measured': True, 'mean_ms': mean_ms, 'spread_pct': spread_pct, 'tokens_per_s': None, 'mfu_pct': mfu_pct,
            'runs': [{'mean_ms': mean_ms}, {'mean_ms': mean_ms}]}


def test_stage_steps_judges_each_stage_against_the_one_before_within_the_noise():
    measures = [{'stage': 5, 'role': 'hccl_env', 'host': 'node01', 'measurement': _m(950.0, spread_pct=4.0)},
                {'stage': 4, 'role': 'roce_lossless', 'host': 'node01', 'measurement': _m(1000.0)},
                {'stage': 6, 'role': 'numa_bind', 'host': 'node01', 'measurement': _m(1000.0, spread_pct=0.5)}]
    out = regression.stage_steps(_m(1000.0), measures, host='node01', after=_m(990.0))
    rows = out['rows']
    # in stage order, whatever the order read; stage 9 last
    assert [r['stage'] for r in rows] == [4, 5, 6, 9]
    # stage 5: 5 % faster, but its own spread is 4 %: better (>= 5 % improvement)
    assert rows[1]['verdict'] == 'improved' and rows[1]['margin_pct'] == 4.0
    # stage 6: 5.3 % slower than after stage 5, whose spread of 4 % is the margin: worse
    assert rows[2]['verdict'] == 'worse' and rows[2]['margin_pct'] == 4.0
    assert [f['value'] for f in out['findings']] == [6]
    # stage 9: 1 % faster than after stage 6, inside the 2 % tolerance: unchanged
    assert rows[3]['verdict'] == 'unchanged' and rows[3]['role'] == 'regression'


def test_stage_steps_a_change_inside_the_spread_is_no_change():
    measures = [{'stage': 4, 'measurement': _m(1040.0, spread_pct=5.0)}]
    out = regression.stage_steps(_m(1000.0), measures)
    assert out['rows'][0]['verdict'] == 'unchanged' and out['findings'] == []
    assert out['rows'][0]['role'] == 'roce_lossless' and out['rows'][0]['host'] == 'this node'


def test_stage_steps_an_unmeasured_stage_is_skipped_and_the_next_compared_with_the_last_measured():
    measures = [{'stage': 4, 'measurement': {'measured': False, 'reason': 'a measurement is skipped in check mode'}},
                {'stage': 5, 'measurement': _m(900.0)}]
    rows = regression.stage_steps(_m(1000.0), measures)['rows']
    assert rows[0]['verdict'] == 'not run' and rows[0]['reason'] == 'a measurement is skipped in check mode'
    assert rows[1]['against'] == 'the stage 1 baseline' and rows[1]['verdict'] == 'improved'
    # no baseline: nothing to compare the first with
    rows = regression.stage_steps({}, measures)['rows']
    assert rows[1]['verdict'] == 'not compared'
    assert regression.stage_step_lines({'rows': rows})[1] == 'stage 5 (hccl_env): nothing to compare with (the stage 1 baseline was not measured)'


@pytest.mark.parametrize('kwargs, text', [
    ({'tolerance_pct': -1}, 'tolerance_pct must be a number of at least 0'),
    ({'measures': 'x'}, 'expects the list of measurements after each stage'),
])
def test_stage_steps_refuses_bad_input(kwargs, text):
    args = dict({'baseline': _m(1000.0), 'measures': []}, **kwargs)
    with pytest.raises(AnsibleFilterError, match=text):
        regression.stage_steps(**args)


# ---- training_ladder: the training benchmark on 1, 2, ... nodes -----------------------------------------------------

def _log(step_ms, tflops, steps=14):
    lines = []
    for index in range(1, steps + 1):
        lines.append(' [2026-12-05 10:00:%02d] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): '
                     '%.1f | throughput per GPU (TFLOP/s/GPU): %.1f | learning rate: 1.000000E-05 | global batch size: '
                     '64 | lm loss: 1.000000E+00 | loss scale: 1.0 | grad norm: 1.000 | number of skipped iterations: 0 | '
                     'number of nan iterations: 0 |' % (index % 60, index, steps, index * 64, step_ms, tflops))
    return '\n'.join(lines)


def _rung(nodes, step_ms, tflops, rc=0):
    return {'item': nodes, 'rc': rc, 'stdout': _log(step_ms, tflops) if rc == 0 else '', 'stderr': 'boom' if rc else ''}


POD = ['node01', 'node02', 'node03', 'node04']


def test_training_ladder_efficiency_per_npu_and_the_first_rung_below_the_limit():
    ladder = regression.training_ladder([_rung(4, 1600.0, 60.0), _rung(1, 900.0, 100.0), _rung(2, 1000.0, 90.0)],
                                        pod=POD, host='node01', warmup=2, min_steps=1)
    assert [(r['nodes'], r['efficiency_pct'], r['by']) for r in ladder['rungs']] == [
        (1, 100.0, 'TFLOP/s per NPU'), (2, 90.0, 'TFLOP/s per NPU'), (4, 60.0, 'TFLOP/s per NPU')]
    assert ladder['rungs'][2]['hosts'] == POD
    # the 4-node rung falls below 70 %: the nodes it adds to the 2-node rung are named
    assert [(f['host'], f['severity'], f['value']) for f in ladder['findings']] == [('node03', 'fail', 60.0), ('node04', 'fail', 60.0)]
    assert ladder['findings'][0]['msg'].startswith('node03: the training benchmark over 4 nodes (node01, node02, node03, node04) '
                                                   'runs at 60 % of one node per NPU (1 node 100 %, 2 nodes 90 %, 4 nodes 60 %')
    assert regression.training_ladder_lines(ladder) == [
        'training benchmark scaling (efficiency per NPU against one node, at least 70 %): 1 node 100 %, 2 nodes 90 %, 4 nodes 60 %']


def test_training_ladder_by_step_time_without_tflops_and_a_failed_rung():
    rungs = [_rung(1, 900.0, 0.0), _rung(2, 1800.0, 0.0), _rung(4, 0, 0, rc=1)]
    for rung in rungs[:2]:
        rung['stdout'] = rung['stdout'].replace(' throughput per GPU (TFLOP/s/GPU): 0.0 |', '')
    ladder = regression.training_ladder(rungs, pod=POD, warmup=2)
    expected = [(1, 100.0, True), (2, 50.0, True), (4, None, False)]
    assert [(r['nodes'], r['efficiency_pct'], r['measured']) for r in ladder['rungs']] == expected
    assert ladder['rungs'][1]['by'] == 'step time (per-NPU batch fixed)'
    assert 'the benchmark command failed (rc=1)' in ladder['rungs'][2]['reason']
    assert [f['host'] for f in ladder['findings']] == ['node02']
    # no one-node figure: no efficiency, no finding
    ladder = regression.training_ladder([_rung(2, 1000.0, 90.0)], pod=POD)
    assert ladder['findings'] == [] and ladder['reason'] == 'the one-node rung did not measure: no efficiency'
    with pytest.raises(AnsibleFilterError, match='min_pct must be a number above 0'):
        regression.training_ladder([], min_pct=0)


# ---- linearity_ladder: the training benchmark on 1, 2, 4, 8 NPUs of one node ------------------------------------------

def test_linearity_ladder_warns_on_the_first_rung_below_95_naming_the_npus_it_adds():
    rungs = [_rung(8, 1800.0, 50.0), _rung(1, 900.0, 100.0), _rung(2, 905.0, 99.0), _rung(4, 910.0, 97.5)]
    ladder = regression.linearity_ladder(rungs, host='node02', warmup=2)
    assert [(r['npus'], r['devices'], r['efficiency_pct']) for r in ladder['rungs']] == [
        (1, [0], 100.0), (2, [0, 1], 99.0), (4, [0, 1, 2, 3], 97.5), (8, list(range(8)), 50.0)]
    # a warning, not a failure: 95 % is what a healthy node reaches, the method sets no limit
    assert [(f['host'], f['device'], f['check'], f['severity'], f['value']) for f in ladder['findings']] == [
        ('node02', None, 'training_linearity', 'warn', 50.0)]
    msg = ladder['findings'][0]['msg']
    assert msg.startswith('node02: the training benchmark on 8 NPUs of the node (0, 1, 2, 3, 4, 5, 6, 7) runs at 50 % of one '
                          'NPU per NPU (1 NPU 100 %, 2 NPUs 99 %, 4 NPUs 97.5 %, 8 NPUs 50 %')
    assert 'this rung adds NPU 4, 5, 6, 7: check their health (stage 0' in msg
    assert regression.linearity_lines(ladder) == [
        'training benchmark inside the node (linearity per NPU against one NPU, near 95 %): 1 NPU 100 %, 2 NPUs 99 %, '
        '4 NPUs 97.5 %, 8 NPUs 50 %']


def test_linearity_ladder_names_the_npu_stage_0_found_and_follows_the_devices_given():
    rungs = [_rung(1, 900.0, 100.0), _rung(2, 1800.0, 50.0)]
    ladder = regression.linearity_ladder(rungs, host='node01', devices=[4, 5, 6, 7], warmup=2,
                                         suspects={5: 'aicore_throttle (900)', 0: 'temperature (99)'})
    assert ladder['rungs'][1]['devices'] == [4, 5]
    assert [(f['host'], f['device']) for f in ladder['findings']] == [('node01', 5)]
    assert ladder['findings'][0]['msg'].startswith('node01 NPU 5: the training benchmark on 2 NPUs of the node (4, 5)')
    assert ladder['findings'][0]['msg'].endswith('an earlier stage of this run found on NPU 5: aicore_throttle (900)')
    # a limit of the operator's, and none below it
    assert regression.linearity_ladder(rungs, host='node01', warmup=2, min_pct=40)['findings'] == []


def test_linearity_ladder_without_the_rung_of_one_npu_and_bad_input():
    ladder = regression.linearity_ladder([_rung(2, 900.0, 100.0)], host='node01', warmup=2)
    assert ladder['findings'] == [] and ladder['reason'] == 'the rung of one NPU did not measure: no linearity'
    assert regression.linearity_lines({'rungs': []}) == []
    with pytest.raises(AnsibleFilterError, match='min_pct must be a number above 0'):
        regression.linearity_ladder([], min_pct=101)
    with pytest.raises(AnsibleFilterError, match='expects the results of the looped command task'):
        regression.linearity_ladder('x')
