"""The run's report (model, Markdown, HTML): escaping, stages that did not run, the values of the chart, and how each
stage launched the benchmark."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils import profile, report
from ansible_collections.npuops.ascend.plugins.plugin_utils.bench import scaling_ladder
from ansible_collections.npuops.ascend.plugins.plugin_utils.regression import launch_check, regression_compare
# the launches of stage 1 and stage 9 and their measurements, as the regression tests make them
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils.test_regression import BASELINE, MEASURED, _launches

BEFORE = {'measured': True, 'run': '20261202T181325Z', 'mean_ms': 2000.0, 'tokens_per_s': 100000.0,
          'tflops_per_npu': 50.0, 'mfu_pct': 16.0, 'spread_pct': 0.2, 'runs': []}


def after(**kw):
    out = {'measured': True, 'mean_ms': 1500.0, 'tokens_per_s': 133333.0, 'tflops_per_npu': 66.0, 'mfu_pct': 21.1,
           'spread_pct': 0.3, 'findings': [], 'runs': [{'run': 1, 'mean_ms': 1500.0}, {'run': 2, 'mean_ms': 1500.0},
                                                       {'run': 3, 'mean_ms': 1500.0}]}
    out.update(kw)
    return out


# ---- the run's report ------------------------------------------------------------------------------

def test_bad_input():
    with pytest.raises(AnsibleFilterError, match='expects'):
        report.run_report([])
    with pytest.raises(AnsibleFilterError, match='run_report_html expects'):
        report.run_report_html('x')


def sources():
    comparison = regression_compare(after(), BEFORE, host='node01', baseline_run='R1')
    return {
        'summary.json': {'run': 'R2', 'check_mode': False, 'nodes': {
            'node01': {'stage0': {'stage': 0, 'role': 'health_check', 'status': 'passed', 'failures': [], 'warnings': []},
                       'stage9': {'stage': 9, 'role': 'regression', 'status': 'failed',
                                  'failures': ['node01: <b>bad</b> & "worse"'], 'warnings': []}},
            'node02': {'stage0': {'stage': 0, 'role': 'health_check', 'status': 'passed', 'failures': [], 'warnings': []}}}},
        'stage0-health_check/node01.json': {'host_info': {'os': {'pretty_name': 'Debian 12', 'kernel': '6.1'}}, 'findings': [
            {'host': 'node01', 'device': 3, 'check': 'link', 'severity': 'fail', 'msg': 'node01 NPU 3: link is DOWN'},
            {'host': 'node01', 'check': 'nofile', 'severity': 'warn', 'msg': 'node01: open-file limit is 20000'}]},
        'stage9-regression/regression.json': {'host': 'node01', 'comparison': comparison, 'improvement_pct': 5,
                                              'tolerance_pct': 2, 'baseline': {'run': 'R1'}},
    }


def test_model_of_a_partial_run():
    model = report.run_report(sources())
    assert model['run'] == 'R2'
    stages = model['stages']
    assert [s[0] for s in stages['stages']] == list(range(10))
    node02 = [c['status'] for c in stages['rows'][1]['cells']]
    assert node02 == ['passed'] + ['not run'] * 9
    health = model['health']['rows'][0]
    assert health['os'] == 'Debian 12 6.1'
    assert health['cells']['ports']['status'] == 'fail' and health['cells']['host']['status'] == 'warn'
    assert health['cells']['npus']['status'] == 'ok'
    assert model['bandwidth'] == {'intra_ran': False, 'intra': [], 'cross_ran': False, 'cross': None,
                                  'scaling': {'ran': False}, 'rails': {'ran': False}}
    assert model['profile'] == {'ran': False}
    assert not model['versions']['ran'] and not model['switch']['ran']


def test_chart_values():
    chart = report.run_report(sources())['regression']['chart']
    assert [c['metric'] for c in chart] == ['mean_ms', 'tokens_per_s', 'tflops_per_npu', 'mfu_pct']
    step = chart[0]
    assert (step['before'], step['after'], step['before_frac'], step['after_frac']) == (2000.0, 1500.0, 1.0, 0.75)
    assert chart[1]['after_frac'] == 1.0 and chart[1]['before_frac'] == round(100000.0 / 133333.0, 4)


def test_nothing_ran():
    model = report.run_report({})
    page = report.run_report_html(model)
    text = report.run_report_markdown(model)
    assert 'Not run: no summary.json' in page and 'Not run: no summary.json' in text
    assert page.count('Not run.') == 7 and text.count('Not run.') == 7
    assert page.count('Not measured.') == 1 and text.count('Not measured.') == 1
    assert '### Scaling ladder (stage 4)\n\nNot run.' in text and '## Where the time goes (stage 1)\n\nNot measured.' in text
    assert '<svg' not in page


def test_html_escapes_every_text_and_is_self_contained():
    data = sources()
    data['stage0-health_check/node01.json']['host_info']['os']['pretty_name'] = '<script>alert(1)</script>'
    page = report.run_report_html(data)
    assert '<script' not in page and '&lt;script&gt;alert(1)&lt;/script&gt;' in page
    assert '<b>bad</b>' not in page and '&lt;b&gt;bad&lt;/b&gt; &amp; &quot;worse&quot;' in page
    assert 'http://' not in page.replace('xmlns="http://www.w3.org/2000/svg"', '') and 'https://' not in page
    assert '<table id="stage-table">' in page and '<svg id="regression-chart"' in page
    assert page.count('class="bar before"') == 4 and page.count('class="bar after"') == 4
    assert '<td class="failed" title="node01: &lt;b&gt;bad&lt;/b&gt;' in page


def test_markdown_escapes_table_cells():
    data = sources()
    data['stage0-health_check/node01.json']['host_info']['os']['pretty_name'] = 'a|b <i>'
    text = report.run_report_markdown(data)
    assert '| node01 | a\\|b &lt;i&gt; 6.1 | OK | 1 fail | 1 warn | OK | OK |' in text
    assert '| step time (ms) | 2000 | 1500 | -25 | improved |' in text
    assert '- stage 9: node01: &lt;b&gt;bad&lt;/b&gt; &amp; "worse"' in text


def test_bandwidth_versions_and_switch_sections():
    data = sources()
    data['stage3-hccl_bench/node01.json'] = {'peak_busbw_gb_s': 137.0, 'below_band': False,
                                             'band': {'low_gb_s': 117.6, 'theory_gb_s': 196.0}}
    data['stage4-roce_lossless/pod.json'] = {'busbw_gb_s': {'before': 3.0, 'after': 22.48, 'gate': 20.0}, 'switch': {
        'files': ['leaf-01.cfg'], 'neighbours': {'ports': [{}, {}], 'unseen': [], 'conflicts': []}, 'skipped': []}}
    data['stage4-roce_lossless/node01.json'] = {'switch_findings': [{'severity': 'fail', 'msg': 'leaf-01 frame 1518'}]}
    data['stage2-version_check/versions.json'] = {
        'fingerprints': {'node01': {'cann': '8.3.RC2', 'driver': '25.2.0'}, 'node02': {'cann': '8.3.RC2', 'driver': '24.1.0'}},
        'differences': [{'field': 'driver'}], 'drift': [{'msg': 'node02: driver changed from 25.2.0 to 24.1.0'}]}
    model = report.run_report(data)
    assert model['bandwidth']['intra'] == [{'node': 'node01', 'peak_gb_s': 137.0, 'low_gb_s': 117.6, 'theory_gb_s': 196.0,
                                            'status': 'ok'}]
    assert model['bandwidth']['cross']['after_gb_s'] == 22.48
    assert model['switch']['findings'] == [{'node': 'node01', 'severity': 'fail', 'msg': 'leaf-01 frame 1518'}]
    assert model['switch']['ports'] == 2 and model['versions']['differing'] == ['driver']
    text = report.run_report_markdown(model)
    assert '| 3 | 22.48 | 20 |' in text and '- node02: driver changed from 25.2.0 to 24.1.0' in text
    assert '- **fail** leaf-01 frame 1518' in text and 'Fields that differ between nodes: driver.' in text
    page = report.run_report_html(model)
    assert '<td class="warn">24.1.0</td>' in page and '<table id="switch-findings">' in page


# ---- how each stage launched the benchmark --------------------------------------------------------------------------

def test_the_run_report_says_how_each_stage_launched_the_benchmark():
    before, bound = _launches()
    check = launch_check(bound, before)
    comparison = regression_compare(MEASURED, dict(BASELINE, launch=before), host='node01', launch=check)
    sources = {'stage9-regression/regression.json': {
        'host': 'node01', 'command': '/usr/local/bin/npu-bind 0 -- bash pretrain.sh', 'baseline': {'run': 'R1'},
        'comparison': comparison, 'launch': {'before': before, 'after': bound, 'check': check}}}
    model = report.run_report(sources, 'R2')
    assert model['regression']['launch'] == {
        'before': '`bash pretrain.sh` on node01 as root (uid 0), without a launcher (no binding of its own), allowed CPUs '
                  '0-191 and memory nodes 0-7',
        'after': '`bash pretrain.sh` on node01 as root (uid 0), through `/usr/local/bin/npu-bind 0 --`, allowed CPUs 0-191 '
                 'and memory nodes 0-7',
        'same': False}
    markdown = report.run_report_markdown(model)
    section = markdown.split('## Before / after (stage 9)', 1)[1].split('## Versions', 1)[0]
    assert 'Not compared: stage 9 was not launched as stage 1 was (launcher none -&gt; /usr/local/bin/npu-bind 0 --)' in section
    assert '- Stage 1 launched: `bash pretrain.sh` on node01 as root (uid 0), without a launcher' in section
    assert '- Stage 9 launched: `bash pretrain.sh` on node01 as root (uid 0), through `/usr/local/bin/npu-bind 0 --`' in section
    page = report.run_report_html(model)
    part = page.split('id="regression"', 1)[1].split('id="versions"', 1)[0]
    assert '<ul class="launch"><li>Stage 1 launched: `bash pretrain.sh` on node01 as root (uid 0), without a launcher' in part
    assert 'Stage 9 launched: `bash pretrain.sh` on node01 as root (uid 0), through `/usr/local/bin/npu-bind 0 --`' in part
    # an older regression.json without launches: the section says so
    old = report.run_report({'stage9-regression/regression.json': {'host': 'node01', 'comparison': comparison}}, 'R3')
    assert old['regression']['launch'] == {'before': 'not recorded', 'after': 'not recorded', 'same': None}


def test_the_report_shows_what_each_tuning_stage_bought():
    from ansible_collections.npuops.ascend.plugins.plugin_utils.regression import stage_steps
    base = {'measured': True, 'mean_ms': 2000.0, 'spread_pct': 0.2, 'tokens_per_s': 1000.0, 'mfu_pct': 16.0, 'runs': []}
    measures = [{'stage': 4, 'role': 'roce_lossless', 'host': 'node01', 'measurement': dict(base, mean_ms=1800.0)},
                {'stage': 5, 'role': 'hccl_env', 'host': 'node01', 'measurement': dict(base, mean_ms=1900.0)}]
    steps = stage_steps(base, measures, host='node01', after=dict(base, mean_ms=1890.0))
    data = sources()
    data['stage9-regression/regression.json']['steps'] = steps['rows']
    model = report.run_report(data)
    rows = model['regression']['steps']
    assert [(r['stage'], r['verdict']) for r in rows] == [('stage 4 (roce_lossless)', 'improved'),
                                                          ('stage 5 (hccl_env)', 'worse'),
                                                          ('stage 9 (after tuning)', 'unchanged')]
    assert rows[1]['step_ms'] == 1900.0 and rows[1]['against'] == 'the measurement after stage 4'
    text = report.run_report_markdown(model)
    assert '### What each stage bought' in text
    assert '| stage 5 (hccl_env) | the measurement after stage 4 | 1900 | +5.56 | 1000 | 16 | 0.2 | worse |' in text
    page = report.run_report_html(model)
    assert 'id="stage-steps"' in page and '<td class="regressed">worse</td>' in page
    # a run that measured no stage on its own has no such section
    assert 'What each stage bought' not in report.run_report_markdown(report.run_report(sources()))


# ---- the scaling ladder of stage 4 (pod/stage4.json data.scaling) ----------------------------------------------------

def _ladder():
    """The verdict of bench.scaling_ladder as stage_roce keeps it: the 2-node rung drops below 70 %, the 4-node rung
    did not measure, the PoD rung is 92.9 % of the one-node rung and 86.7 % of stage 3's intra-node figure."""
    hosts = ['node0%d' % i for i in range(1, 9)]
    return scaling_ladder([{'nodes': 1, 'hosts': hosts[:1], 'busbw_gb_s': 140.0},
                           {'nodes': 2, 'hosts': hosts[:2], 'busbw_gb_s': 84.0},
                           {'nodes': 4, 'hosts': hosts[:4], 'busbw_gb_s': None, 'msg': 'hccl_test failed'},
                           {'nodes': 8, 'hosts': hosts, 'busbw_gb_s': 130.0}],
                          {'intra_gb_s': 150.0, 'intra_from': 'stage 3'})


def pod_record(scaling):
    return {'schema': 'npuops.ascend/pod-record', 'version': 1, 'run': 'R2', 'stage': 4, 'role': 'roce_lossless',
            'findings': scaling.get('findings', []), 'data': {'bench': {}, 'scaling': scaling}}


def test_the_report_shows_the_scaling_ladder_of_stage_4():
    data = sources()
    data['pod/stage4.json'] = pod_record(_ladder())
    model = report.run_report(data)
    sc = model['bandwidth']['scaling']
    assert sc['ran'] and not sc['skipped']
    assert [(r['nodes'], r['busbw_gb_s'], r['efficiency_pct'], r['pct_of_intra'], r['status']) for r in sc['rungs']] == [
        (1, 140.0, 100.0, None, 'base'), (2, 84.0, 60.0, 56.0, 'fail'), (4, None, None, None, 'not measured'),
        (8, 130.0, 92.9, 86.7, 'ok')]
    assert sc['rungs'][1]['hosts'] == 'node01, node02' and sc['rungs'][3]['hosts'] == 'node01, node02 ... node08'
    assert (sc['one_node_gb_s'], sc['intra_gb_s'], sc['intra_from'], sc['min_pct'], sc['intra_min_pct']) == (
        140.0, 150.0, 'stage 3', 70.0, 85.0)
    assert len(sc['findings']) == 2 and sc['findings'][0].startswith('node01: the AllReduce over 2 nodes')
    text = report.run_report_markdown(model)
    section = text.split('### Scaling ladder (stage 4)', 1)[1].split('## Before / after', 1)[0]
    assert '| nodes | hosts | busbw (GB/s) | efficiency % | % of intra-node | result |' in section
    assert '| 2 | node01, node02 | 84 | 60 | 56 | fail |' in section
    assert '| 4 | node01, node02, node03, node04 | - | - | - | not measured |' in section
    assert '| 8 | node01, node02 ... node08 | 130 | 92.9 | 86.7 | ok |' in section
    assert 'one-node rung (140 GB/s), a cross-node rung at least 70 % (roce_lossless_scaling_min_pct' in section
    assert 'intra-node figure 150 GB/s (stage 3), at least 85 % (roce_lossless_crossnode_min_pct_of_intra' in section
    assert '- node02: the AllReduce over 2 nodes (node01, node02) reaches 84 GB/s, 60 %' in section
    assert '- 4 node(s) not measured: hccl_test failed' in section
    page = report.run_report_html(model)
    part = page.split('<h3>Scaling ladder (stage 4)</h3>', 1)[1].split('id="regression"', 1)[0]
    assert '<table id="scaling-ladder">' in part
    assert ('<tr><td class="num">2</td><td>node01, node02</td><td class="num">84</td><td class="num">60</td>'
            '<td class="num">56</td><td class="fail">fail</td></tr>') in part
    assert '<td class="notrun">not measured</td>' in part and '<td class="ok">ok</td>' in part
    assert '<li>node01: the AllReduce over 2 nodes' in part
    assert '<li>4 node(s) not measured: hccl_test failed</li>' in part


def test_the_scaling_ladder_that_did_not_measure_says_why():
    data = {'pod/stage4.json': pod_record({'skipped': True, 'rungs': [], 'findings': [],
                                           'msg': 'the ladder does not run in check mode'})}
    model = report.run_report(data, 'R2')
    assert model['bandwidth']['scaling']['skipped'] and model['bandwidth']['scaling']['rungs'] == []
    assert 'Not measured: the ladder does not run in check mode' in report.run_report_markdown(model)
    assert '<p class="notrun">Not measured: the ladder does not run in check mode</p>' in report.run_report_html(model)
    # a PoD record of stage 4 without a ladder (roce_lossless_scaling_ladder false): not run
    model = report.run_report({'pod/stage4.json': {'data': {'bench': {'after': {}}}}}, 'R2')
    assert model['bandwidth']['scaling'] == {'ran': False}
    assert '### Scaling ladder (stage 4)\n\nNot run.' in report.run_report_markdown(model)


# ---- where the time goes (stage 1, baseline.json profile) ------------------------------------------------------------

def _step(comm, free, util, device=3):
    return {'rank': 0, 'device_id': device, 'step': '10', 'step_time_us': 1200000.0,
            'comm_not_overlapped_us': 12000.0 * comm, 'compute_share_pct': 100.0 - comm - free, 'comm_share_pct': comm,
            'free_share_pct': free, 'aicore_util_pct': util, 'aicore_from': 'kernel_details'}


def test_the_report_shows_where_the_time_of_a_step_goes():
    kept = profile.profile_record({'steps': [_step(22.0, 4.0, 70.0), _step(20.0, 6.0, 74.0, device=4)]}, 'node01')
    data = sources()
    data['stage1-baseline/baseline.json'] = {'measured': True, 'mean_ms': 1200.0, 'profile': kept}
    model = report.run_report(data)
    prof = model['profile']
    assert prof['ran'] and prof['host'] == 'node01' and prof['step_ms'] == 1200.0 and prof['layer'] == 'communication'
    assert [(r['value'], r['limit'], r['status']) for r in prof['rows']] == [
        (74.0, '-', '-'), (21.0, '<= 15', 'warn'), (5.0, '<= 10', 'ok'), (72.0, '>= 80', 'warn')]
    assert prof['msg'].startswith('communication holds the job back: step 1200.0 ms')
    assert len(prof['findings']) == 4   # communication and AI Core, on each of the two ranks
    text = report.run_report_markdown(model)
    section = text.split('## Where the time goes (stage 1)', 1)[1].split('## Bus bandwidth', 1)[0]
    assert 'the benchmark on node01 (step 1200 ms)' in section
    assert ("| communication not overlapped (% of the step) | 21 | &lt;= 15 | warn | baseline_profile_comm_max_pct; the "
            "method's 10-15 % communication share of a step |") in section
    assert '| AI Core utilisation (%) | 72 | &gt;= 80 | warn | baseline_profile_aicore_min_pct; the method' in section
    assert '| computing (% of the step) | 74 | - | - | - |' in section
    assert 'Bottleneck: **communication**: communication holds the job back' in section
    assert '- node01 NPU 3: rank 0 step 10: communication not overlapped by computing takes 22.0 %' in section
    page = report.run_report_html(model)
    part = page.split('id="profile"', 1)[1].split('id="busbw"', 1)[0]
    assert '<table id="profile-split">' in part
    assert '<td>free: host, data loading, launch (% of the step)</td><td class="num">5</td><td>&lt;= 10</td>' \
           '<td class="ok">ok</td>' in part
    assert 'Bottleneck: <b>communication</b>' in part


def test_a_profile_that_could_not_be_read_is_not_measured():
    kept = {'host': 'node01', 'error': 'no ASCEND_PROFILER_OUTPUT under /data/prof', 'steps': [], 'summary': {},
            'bottleneck': None, 'findings': [{'msg': 'node01: the profiler output could not be read: no output'}]}
    model = report.run_report({'stage1-baseline/baseline.json': {'measured': True, 'profile': kept}}, 'R2')
    assert model['profile']['ran'] and model['profile']['layer'] is None
    text = report.run_report_markdown(model)
    assert 'Not measured on node01: no ASCEND_PROFILER_OUTPUT under /data/prof' in text
    assert '- node01: the profiler output could not be read: no output' in text
    assert '<p class="notrun">Not measured on node01: no ASCEND_PROFILER_OUTPUT' in report.run_report_html(model)
    # a baseline measured without baseline_profile_dir: not measured
    model = report.run_report({'stage1-baseline/baseline.json': {'measured': True, 'profile': None}}, 'R2')
    assert model['profile'] == {'ran': False}


def test_the_report_shows_the_training_ladder_of_stage_9():
    data = sources()
    data['stage9-regression/regression.json']['comparison'] = dict(
        data['stage9-regression/regression.json']['comparison'],
        scaling={'min_pct': 70.0, 'rungs': [
            {'nodes': 1, 'hosts': ['node01'], 'measured': True, 'mean_ms': 900.0, 'tflops_per_npu': 100.0, 'efficiency_pct': 100.0},
            {'nodes': 4, 'hosts': ['node01', 'node02', 'node03', 'node04'], 'measured': True, 'mean_ms': 1500.0,
             'tflops_per_npu': 60.0, 'efficiency_pct': 60.0}]})
    model = report.run_report(data)
    rows = model['regression']['ladder']['rows']
    assert [(r['nodes'], r['status']) for r in rows] == [(1, 'ok'), (4, 'fail')]
    assert rows[1]['hosts'] == 'node01, node02 ... node04'
    text = report.run_report_markdown(model)
    assert '### Training benchmark on 1, 2, ... nodes' in text
    assert '| 4 | node01, node02 ... node04 | 1500 | 60 | 60 | fail |' in text
    assert 'id="training-ladder"' in report.run_report_html(model)
    assert 'Training benchmark on 1, 2' not in report.run_report_markdown(report.run_report(sources()))


def test_the_report_shows_the_linearity_inside_a_node_of_stage_9():
    data = sources()
    data['stage9-regression/regression.json']['comparison'] = dict(
        data['stage9-regression/regression.json']['comparison'],
        linearity={'min_pct': 95.0, 'rungs': [
            {'npus': 1, 'devices': [0], 'measured': True, 'mean_ms': 900.0, 'tflops_per_npu': 100.0, 'efficiency_pct': 100.0},
            {'npus': 4, 'devices': [0, 1, 2, 3], 'measured': True, 'mean_ms': 910.0, 'tflops_per_npu': 98.9,
             'efficiency_pct': 98.9},
            {'npus': 8, 'devices': list(range(8)), 'measured': True, 'mean_ms': 1800.0, 'tflops_per_npu': 50.0,
             'efficiency_pct': 50.0}]})
    model = report.run_report(data)
    rows = model['regression']['linearity']['rows']
    assert [(r['nodes'], r['status']) for r in rows] == [(1, 'ok'), (4, 'ok'), (8, 'warn')]
    text = report.run_report_markdown(model)
    assert '### Training benchmark on 1, 2, ... NPUs of one node' in text
    assert '| 8 | 0, 1, 2, 3, 4, 5, 6, 7 | 1800 | 50 | 50 | warn |' in text
    html = report.run_report_html(model)
    assert 'id="linearity-ladder"' in html and '<td class="warn">warn</td>' in html
    assert 'NPUs of one node' not in report.run_report_markdown(report.run_report(sources()))


def test_the_report_shows_each_rail_of_stage_4():
    data = sources()
    record = pod_record(_ladder())
    record['data']['rails'] = {
        'mode': 'auto', 'why': 'the scaling ladder has a finding', 'devices': [0, 1, 2, 3], 'min_pct': 85.0,
        'expected_gb_s': 25.0, 'median_gb_s': 22.5, 'basis': '1 port of 25 GB/s',
        'rails': [{'device': 0, 'busbw_gb_s': 22.5, 'pct_of_expected': 90.0, 'pct_of_median': 100.0},
                  {'device': 1, 'busbw_gb_s': 22.5, 'pct_of_expected': 90.0, 'pct_of_median': 100.0},
                  {'device': 2, 'busbw_gb_s': None, 'pct_of_expected': None, 'pct_of_median': None},
                  {'device': 3, 'busbw_gb_s': 2.25, 'pct_of_expected': 9.0, 'pct_of_median': 10.0}],
        'findings': [{'msg': 'node03 NPU 3: rail 3 (NPU 3 of node01, node02, node03, each over its own port) reaches 2.25'}]}
    data['pod/stage4.json'] = record
    model = report.run_report(data)
    rl = model['bandwidth']['rails']
    assert [(r['device'], r['status']) for r in rl['rows']] == [(0, 'ok'), (1, 'ok'), (2, 'not measured'), (3, 'fail')]
    text = report.run_report_markdown(model)
    section = text.split('### Rails (stage 4)', 1)[1].split('## Before / after', 1)[0]
    assert '| 3 | 2.25 | 9 | 10 | fail |' in section
    assert 'measured because the scaling ladder has a finding). Expected 25 GB/s (1 port of 25 GB/s)' in section
    assert '- node03 NPU 3: rail 3 (NPU 3 of node01, node02, node03' in section
    # the ladder's own findings stay under the ladder
    assert '- node02: the AllReduce over 2 nodes' in text.split('### Rails (stage 4)', 1)[0]
    page = report.run_report_html(model)
    assert '<table id="rails">' in page and '<li>node03 NPU 3: rail 3' in page
    # not measured (mode auto, the PoD at its gate): said so
    record['data']['rails'] = {'mode': 'auto', 'skipped': True, 'rails': [], 'findings': [],
                               'msg': 'the rails are not measured: the PoD reached its gate'}
    text = report.run_report_markdown(report.run_report(data))
    assert 'Not measured: the rails are not measured: the PoD reached its gate' in text
    assert '### Rails (stage 4)' not in report.run_report_markdown(report.run_report(sources()))
