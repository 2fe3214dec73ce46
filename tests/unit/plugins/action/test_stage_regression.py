"""npuops.ascend.stage_regression: the PoD part of stage 9 in one task on the controller - the runs after tuning
measured as stage 1 measures them (real training-log lines), the launch checked against stage 1's, the comparison with
the baseline, regression.json, and the record of every node of the play."""

from __future__ import annotations

import json
import re

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.npuops.ascend.plugins.action import stage_regression as action
from ansible_collections.npuops.ascend.plugins.plugin_utils import bench, store
from ansible_collections.npuops.ascend.tests.unit.plugins.action import stage_actions
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import sample

RUN = 'R1'
NODES = ['node01', 'node02', 'node03']
MIXTRAL = sample('train_log/train_log/megatron_lm_h100_mixtral_throughput')
ID_ROOT = {'rc': 0, 'stdout': 'uid=0(root) gid=0(root) groups=0(root)', 'stderr': '', 'item': ['id']}
STATUS = {'rc': 0, 'stdout': 'Cpus_allowed_list:\t0-191\nMems_allowed_list:\t0-7', 'stderr': '', 'item': ['grep']}
CONFIG = {'host': 'node01', 'command': '/usr/local/sbin/npu-sim train --steps 50', 'launcher': '', 'launcher_args': [],
          'run_user': '', 'chdir': '', 'environment': {'HCCL_RDMA_SL': '4'}}
PATH = '/r/npuops-reports/R1/stage1-baseline/baseline.json'


def runs(count=2, stdout=MIXTRAL):
    return [{'changed': False, 'rc': 0, 'stdout': stdout, 'stderr': '', 'regression_run': index, 'failed': False}
            for index in range(1, count + 1)]


def launch(**changes):
    return dict(bench.benchmark_launch(CONFIG, {'results': [ID_ROOT, STATUS]}), **changes)


def baseline(**changes):
    measured = bench.baseline_measure([dict(r, baseline_run=r['regression_run']) for r in runs()], host='node01',
                                      warmup=16, min_steps=1, peak_tflops=400)
    return dict(measured, run=RUN, command=CONFIG['command'], launch=launch(), **changes)


def compare(tmp_path, check_mode=False, **extra):
    args = dict(step='compare', run_dir=str(tmp_path / RUN), run_id=RUN, host='node01', warmup=16, min_steps=1,
                baseline_path=PATH, command=CONFIG['command'])
    args.update(extra)
    plugin = stage_actions.make_action(action.ActionModule, args, check_mode, lambda name: {})
    return stage_actions.run_step(plugin, {'inventory_hostname': NODES[0], 'ansible_play_hosts': NODES})


def read_json(path):
    with open(path, encoding='utf-8') as handle:
        return json.load(handle)


def test_the_same_runs_are_compared_every_node_recorded_and_the_report_written(tmp_path):
    result = compare(tmp_path, results=runs(), baseline=baseline(), launch=launch())
    assert result['changed'] is False and result['measurement']['measured'] is True
    assert result['launch_check']['same'] is True and result['comparison']['compared'] is True
    # the peak stage 1 kept is the peak of the runs after tuning (no operator figure)
    assert result['measurement']['peak_tflops'] == 400
    assert result['comparison']['verdict'] == 'unchanged'
    assert result['lines'][0] == 'node01: unchanged against %s' % PATH
    # every node of the play is recorded; the findings name the node that ran the benchmark
    records = dict((node, store.read_record(str(tmp_path / RUN), RUN, node, 9)[0]) for node in NODES)
    assert [records[node]['status'] for node in NODES] == ['passed', 'passed', 'passed']
    assert [f['host'] for f in records['node01']['findings']] == [f['host'] for f in result['comparison']['findings']]
    assert records['node02']['findings'] == [] and records['node01']['role'] == 'regression'
    report = read_json(result['report'])
    assert result['report'] == str(tmp_path / RUN / 'stage9-regression' / 'regression.json')
    assert report['run'] == RUN and report['host'] == 'node01' and report['command'] == CONFIG['command']
    assert report['baseline']['path'] == PATH and report['baseline']['run'] == RUN
    assert report['after'] == result['measurement'] and report['comparison'] == result['comparison']
    assert report['launch']['before'] == report['launch']['after'] == launch()
    assert report['launch']['check'] == result['launch_check']
    assert (report['improvement_pct'], report['tolerance_pct']) == (5.0, 2.0)
    assert result['msg'] == 'recorded stage 9 (regression) of 3 node(s): unchanged'


def test_a_slower_run_after_tuning_is_a_regression_of_the_node_that_ran_it(tmp_path):
    slower = MIXTRAL.replace('elapsed time per iteration (ms): ', 'elapsed time per iteration (ms): 1')
    assert slower != MIXTRAL
    result = compare(tmp_path, results=runs(stdout=slower), baseline=baseline(), launch=launch())
    assert result['comparison']['verdict'] == 'regressed'
    one = store.read_record(str(tmp_path / RUN), RUN, 'node01', 9)[0]
    two = store.read_record(str(tmp_path / RUN), RUN, 'node02', 9)[0]
    assert one['status'] == 'failed' and any('regress' in text or 'worse' in text for text in one['failures'])
    assert two['status'] == 'passed'


def test_a_launch_other_than_stage_1s_is_not_compared_and_fails(tmp_path):
    result = compare(tmp_path, results=runs(), baseline=baseline(), launch=launch(run_user='mindie'))
    assert result['launch_check']['same'] is False and result['comparison']['compared'] is False
    assert store.read_record(str(tmp_path / RUN), RUN, 'node01', 9)[0]['status'] == 'failed'
    # named as the change under test, the launch is compared (with a warning)
    result = compare(tmp_path, results=runs(), baseline=baseline(), launch=launch(run_user='mindie'),
                     launch_change='the run user')
    assert result['comparison']['compared'] is True and result['launch_check']['declared'] == 'the run user'


def test_without_runs_every_node_is_skipped_and_says_why(tmp_path):
    result = compare(tmp_path, run_enabled=False, baseline=baseline(), check_mode=True)
    assert result['measurement'] == {'measured': False, 'reason': 'regression_run_enabled is false'}
    assert result['launch_check'] is None and result['comparison']['compared'] is False
    assert result['comparison']['reason'] == 'regression_run_enabled is false'
    record = store.read_record(str(tmp_path / RUN), RUN, 'node03', 9)[0]
    assert record['status'] == 'skipped' and record['check_mode'] is True
    report = read_json(result['report'])
    assert report['after'] == {} and report['check_mode'] is True and report['launch']['after'] is None
    # the runs enabled but none ran (no command, check mode): measured as stage 1 would, nothing measured
    result = compare(tmp_path, results=[], baseline=baseline())
    assert result['measurement']['measured'] is False and 'report' in result


def test_the_operators_peak_wins_and_no_report_when_off(tmp_path):
    result = compare(tmp_path, results=runs(), baseline=baseline(), launch=launch(), peak_tflops='500', report=False)
    assert result['measurement']['peak_tflops'] == 500.0 and 'report' not in result
    assert not (tmp_path / RUN / 'stage9-regression').exists()


@pytest.mark.parametrize('extra, text', [
    (dict(tolerance_pct='a lot'), "could not convert string to float: 'a lot'"),
    (dict(improvement_pct=-1), 'improvement_pct must be a number of at least 0'),
    (dict(run_id='../x'), 'cannot name a run directory'),
])
def test_bad_input_is_refused_with_what_was_wrong(tmp_path, extra, text):
    with pytest.raises(AnsibleActionFail, match='stage_regression: .*') as error:
        compare(tmp_path, results=runs(), baseline=baseline(), **extra)
    assert text in str(error.value)
    assert not (tmp_path / RUN / 'nodes').exists()


# ---- npuops_measure_each_stage: the measurement after each tuning stage, and what each stage bought ----------------

def scaled(factor):
    """The sample log with every step time multiplied by ``factor`` (a stage that made the step faster or slower)."""
    return re.sub(r'(elapsed time per iteration \(ms\): )([0-9.]+)',
                  lambda m: '%s%.1f' % (m.group(1), float(m.group(2)) * factor), MIXTRAL)


def measure(tmp_path, stage, factor, check_mode=False, **extra):
    args = dict(step='stage', stage=stage, run_dir=str(tmp_path / RUN), run_id=RUN, host='node01', warmup=16,
                min_steps=1, results=runs(stdout=scaled(factor)), baseline=baseline())
    args.update(extra)
    plugin = stage_actions.make_action(action.ActionModule, args, check_mode, lambda name: {})
    return stage_actions.run_step(plugin, {'inventory_hostname': NODES[0], 'ansible_play_hosts': NODES})


def test_each_stage_is_measured_and_stage_9_says_what_each_bought_naming_the_one_that_made_it_worse(tmp_path):
    assert scaled(1.0) == MIXTRAL and scaled(0.9) != MIXTRAL
    kept = measure(tmp_path, 4, 1.0)
    assert kept['path'] == str(tmp_path / RUN / 'pod' / 'measure-stage4.json') and kept['changed'] is False
    assert kept['measurement']['measured'] is True and kept['msg'].startswith('node01: after stage 4: step time ')
    measure(tmp_path, 5, 0.9)       # stage 5 made the step 10 % faster
    measure(tmp_path, 6, 0.99)      # stage 6 made it 10 % slower than after stage 5
    # the measurement files hold no node record: only stage 9 records the nodes
    assert store.read_record(str(tmp_path / RUN), RUN, 'node01', 9) == (None, None) or \
        store.read_record(str(tmp_path / RUN), RUN, 'node01', 9)[0] is None
    result = compare(tmp_path, results=runs(stdout=scaled(0.99)), baseline=baseline(), launch=launch())
    rows = dict((row['stage'], row) for row in result['steps'])
    assert sorted(rows) == [4, 5, 6, 9]
    assert rows[4]['against'] == 'the stage 1 baseline' and rows[4]['verdict'] == 'unchanged'
    assert rows[5]['against'] == 'the measurement after stage 4' and rows[5]['verdict'] == 'improved'
    assert rows[6]['against'] == 'the measurement after stage 5' and rows[6]['verdict'] == 'worse'
    assert rows[6]['role'] == 'numa_bind' and rows[6]['worse'] == ['step time']
    assert rows[9]['against'] == 'the measurement after stage 6' and rows[9]['verdict'] == 'unchanged'
    step = dict((m['metric'], m) for m in rows[6]['metrics'])['mean_ms']
    assert 9.5 < step['change_pct'] < 10.5
    # the stage that made things worse is a warning of the node that ran the benchmark, in its stage 9 record
    warned = [f for f in store.read_record(str(tmp_path / RUN), RUN, 'node01', 9)[0]['findings'] if f['check'] == 'stage_step']
    assert [(f['severity'], f['value']) for f in warned] == [('warn', 6)]
    assert warned[0]['msg'].startswith('node01: stage 6 (numa_bind) made the benchmark worse: step time ')
    assert 'against the measurement after stage 5' in warned[0]['msg']
    assert any(line.startswith('stage 6 (numa_bind): worse against the measurement after stage 5') for line in result['lines'])
    assert read_json(result['report'])['steps'] == result['steps']


def test_without_stage_measurements_stage_9_has_no_steps(tmp_path):
    result = compare(tmp_path, results=runs(), baseline=baseline(), launch=launch())
    assert result['steps'] == [] and read_json(result['report'])['steps'] == []


def test_a_measurement_of_another_run_is_left_out_with_a_warning(tmp_path):
    measure(tmp_path, 5, 0.9)
    path = tmp_path / RUN / 'pod' / 'measure-stage5.json'
    document = read_json(str(path))
    document['run'] = 'R0'
    path.write_text(json.dumps(document), encoding='utf-8')
    result = compare(tmp_path, results=runs(), baseline=baseline(), launch=launch())
    assert result['steps'] == []


@pytest.mark.parametrize('stage', [None, 3, 9])
def test_a_measurement_needs_a_tuning_stage(tmp_path, stage):
    with pytest.raises(AnsibleActionFail, match='step stage needs stage, one of the tuning stages 4, 5, 6, 7, 8'):
        measure(tmp_path, stage, 1.0)


def test_in_check_mode_a_stage_is_kept_as_not_measured(tmp_path):
    kept = measure(tmp_path, 4, 1.0, check_mode=True, results=[{'skipped': True, 'changed': False}])
    assert kept['measurement']['measured'] is False and 'not measured' in kept['msg']
    assert read_json(kept['path'])['check_mode'] is True


# ---- where the time goes: the profile after tuning against the stage 1 baseline's ----------------------------------

def _step(comm, free, util, step_time=1000000.0):
    return {'rank': 0, 'device_id': 0, 'step': '10', 'step_time_us': step_time,
            'comm_not_overlapped_us': step_time * comm / 100.0, 'compute_share_pct': 100.0 - comm - free,
            'comm_share_pct': comm, 'free_share_pct': free, 'aicore_util_pct': util, 'aicore_from': 'kernel_details'}


def test_the_profile_after_tuning_is_compared_with_the_baselines_in_points(tmp_path):
    from ansible_collections.npuops.ascend.plugins.plugin_utils import profile
    kept = profile.profile_record({'steps': [_step(30.0, 4.0, 66.0)]}, 'node01')
    # after tuning the job is bound to a far NUMA node: communication is fine now, the NPU waits for the host
    after = {'changed': False, 'steps': [_step(8.0, 20.0, 72.0)], 'summary': {}}
    result = compare(tmp_path, results=runs(), baseline=baseline(profile=kept), launch=launch(), profile=after)
    metrics = dict((m['metric'], m) for m in result['comparison']['metrics'])
    assert metrics['comm_share_pct']['before'] == 30.0 and metrics['comm_share_pct']['after'] == 8.0
    assert metrics['comm_share_pct']['change_pp'] == -22.0 and metrics['comm_share_pct']['verdict'] == 'improved'
    assert metrics['aicore_pct']['change_pp'] == 6.0 and metrics['aicore_pct']['verdict'] == 'improved'
    # the shares never make the verdict: the step time did not move
    assert result['comparison']['verdict'] == 'unchanged'
    assert result['comparison']['profile']['layer'] == {'before': 'communication', 'after': 'host/IO'}
    assert result['comparison']['profile']['shares']['free_share_pct'] == {'before': 4.0, 'after': 20.0, 'change_pp': 16.0}
    line = [text for text in result['lines'] if text.startswith('where the time of a step goes')]
    assert line == ['where the time of a step goes (profiler): computing 66 -> 72 %; communication not overlapped '
                    '30 -> 8 %; free 4 -> 20 %; AI Core 66 -> 72 %; held back by communication -> host/IO']
    # the profile's own findings after tuning are warnings of stage 9 on the node that ran it
    record = store.read_record(str(tmp_path / RUN), RUN, 'node01', 9)[0]
    assert any(f['check'] == 'profile_free_share' and f['severity'] == 'warn' for f in record['findings'])
    assert read_json(result['report'])['after']['profile']['bottleneck']['layer'] == 'host/IO'


def test_a_share_that_moved_the_wrong_way_is_a_warning_and_an_unreadable_profile_too(tmp_path):
    from ansible_collections.npuops.ascend.plugins.plugin_utils import profile
    kept = profile.profile_record({'steps': [_step(10.0, 4.0, 86.0)]}, 'node01')
    result = compare(tmp_path, results=runs(), baseline=baseline(profile=kept), launch=launch(),
                     profile={'steps': [_step(10.0, 20.0, 70.0)]})
    warned = [f for f in result['comparison']['findings'] if f['check'] == 'profile_aicore_pct']
    assert [f['severity'] for f in warned] == ['warn']
    assert 'the AICore usage of a step moved from 86 % to 70 % (-16 points)' in warned[0]['msg']
    result = compare(tmp_path, results=runs(), baseline=baseline(profile=kept), launch=launch(),
                     profile={'failed': False, 'msg': 'no *_ascend_pt directory under /var/lib/npuops/profile'})
    assert 'profile' not in result['comparison']
    assert [f['msg'] for f in result['comparison']['findings'] if f['check'] == 'profile_read'] == [
        'node01: the profiler output after tuning could not be read: no *_ascend_pt directory under /var/lib/npuops/profile']


def _rung(count, step_ms, tflops):
    lines = [' [2026-12-05 10:00:%02d] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f | '
             'throughput per GPU (TFLOP/s/GPU): %.1f | learning rate: 1.000000E-05 | global batch size: 64 | lm loss: '
             '1.000000E+00 | loss scale: 1.0 | grad norm: 1.000 | number of skipped iterations: 0 | number of nan '
             'iterations: 0 |' % (i, i, 20, i * 64, step_ms, tflops) for i in range(1, 21)]
    return {'item': count, 'rc': 0, 'stdout': '\n'.join(lines), 'stderr': '', 'changed': False}


def test_the_linearity_ladder_inside_the_node_names_the_npu_stage_0_found(tmp_path):
    """A rung of 8 NPUs at half the per-NPU throughput of one is a warning of stage 9 on the node that ran it; stage 0 of
    this run found NPU 5 throttling, so the finding names NPU 5 of the four the rung adds."""
    run_dir = str(tmp_path / RUN)
    health = store.make_record(RUN, 'node01', 0, 'health_check', [
        {'host': 'node01', 'device': 5, 'check': 'aicore_throttle', 'value': 900, 'expected': 1800, 'severity': 'warn',
         'msg': 'node01 NPU 5: AI Core at 900 MHz'},
        {'host': 'node01', 'device': 2, 'check': 'note', 'value': 1, 'expected': 1, 'severity': 'ok', 'msg': 'fine'}])
    store.write_record(run_dir, health)
    result = compare(tmp_path, results=runs(), baseline=baseline(), launch=launch(), linearity_devices=list(range(8)),
                     linearity_results=[_rung(1, 900.0, 100.0), _rung(2, 905.0, 99.5), _rung(4, 910.0, 98.9),
                                        _rung(8, 1800.0, 50.0)])
    ladder = result['comparison']['linearity']
    assert [(r['npus'], r['efficiency_pct']) for r in ladder['rungs']] == [(1, 100.0), (2, 99.5), (4, 98.9), (8, 50.0)]
    found = [f for f in result['comparison']['findings'] if f['check'] == 'training_linearity']
    assert [(f['host'], f['device'], f['severity']) for f in found] == [('node01', 5, 'warn')]
    assert found[0]['msg'].endswith('an earlier stage of this run found on NPU 5: aicore_throttle (900)')
    assert any(line.startswith('training benchmark inside the node (linearity per NPU against one NPU, near 95 %): 1 NPU 100 %')
               for line in result['lines'])
    record = store.read_record(run_dir, RUN, 'node01', 9)[0]
    assert [f['device'] for f in record['findings'] if f['check'] == 'training_linearity'] == [5]
    # without the record of stage 0 the rung's NPUs are named together
    assert action.node_suspects(str(tmp_path / 'other'), RUN, 'node01') == {}
