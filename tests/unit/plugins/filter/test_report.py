"""regression_compare, regression_lines and the run's report (model, Markdown, HTML): verdicts and limits, escaping,
stages that did not run, and the values of the chart."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.filter import run_report as report

BEFORE = {'measured': True, 'run': '20261202T181325Z', 'mean_ms': 2000.0, 'tokens_per_s': 100000.0,
          'tflops_per_npu': 50.0, 'mfu_pct': 16.0, 'spread_pct': 0.2, 'runs': []}


def after(**kw):
    out = {'measured': True, 'mean_ms': 1500.0, 'tokens_per_s': 133333.0, 'tflops_per_npu': 66.0, 'mfu_pct': 21.1,
           'spread_pct': 0.3, 'findings': [], 'runs': [{'run': 1, 'mean_ms': 1500.0}, {'run': 2, 'mean_ms': 1500.0},
                                                       {'run': 3, 'mean_ms': 1500.0}]}
    out.update(kw)
    return out


def test_filter_table():
    assert sorted(report.FilterModule().filters()) == ['regression_compare', 'regression_lines', 'run_report',
                                                       'run_report_html', 'run_report_markdown']


def test_improvement():
    out = report.regression_compare(after(), BEFORE, host='node01', baseline_run='R1')
    assert out['compared'] and out['verdict'] == 'improved'
    rows = dict((m['metric'], m) for m in out['metrics'])
    assert rows['mean_ms']['change_pct'] == -25.0 and rows['mean_ms']['gain_pct'] == 25.0
    assert rows['mean_ms']['verdict'] == 'improved'
    assert rows['comm_share_pct']['verdict'] == 'not available' and rows['aicore_pct']['verdict'] == 'not available'
    assert out['findings'] == [] and out['regressed'] == []
    assert report.regression_lines(out, '/r/baseline.json') == [
        'node01: improved against /r/baseline.json', 'step time 2000 -> 1500 ms (-25 %): improved',
        'tokens/s 100000 -> 133333 tokens/s (+33.33 %): improved',
        'TFLOP/s per NPU 50 -> 66 TFLOP/s (+32 %): improved', 'MFU 16 -> 21.1 % (+31.88 %): improved']


def test_regression_beyond_the_tolerance_fails_naming_node_and_metric():
    out = report.regression_compare(after(mean_ms=2050.0, tokens_per_s=97600.0, tflops_per_npu=49.5, mfu_pct=15.9),
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
    out = report.regression_compare(after(mean_ms=mean), BEFORE)
    assert dict((m['metric'], m['verdict']) for m in out['metrics'])['mean_ms'] == verdict


def test_nothing_improved_is_a_warning():
    out = report.regression_compare(after(mean_ms=1990.0, tokens_per_s=100500.0, tflops_per_npu=50.2, mfu_pct=16.05),
                                    BEFORE, host='node01')
    assert out['verdict'] == 'unchanged'
    assert [(f['severity'], f['check']) for f in out['findings']] == [('warn', 'improvement')]


def test_no_baseline_and_no_measurement():
    out = report.regression_compare(after(), {}, host='node01')
    assert not out['compared'] and out['findings'][0]['severity'] == 'warn'
    assert out['findings'][0]['msg'].startswith('node01: no stage 1 baseline to compare with')
    skipped = report.regression_compare({'measured': False, 'reason': 'a measurement is skipped in check mode'}, BEFORE)
    assert skipped['reason'] == 'a measurement is skipped in check mode' and skipped['findings'] == []
    assert report.regression_lines(skipped) == ['this node: not compared: a measurement is skipped in check mode']


def test_noisy_runs_after_tuning_fail_and_failed_runs_are_kept():
    failed = {'host': 'node01', 'check': 'benchmark', 'severity': 'fail', 'msg': 'node01 (run 2): failed'}
    spread = {'host': 'node01', 'check': 'spread', 'severity': 'fail', 'msg': 'stage 1 wording'}
    out = report.regression_compare(after(spread_pct=7.5, findings=[failed, spread]), BEFORE, host='node01')
    checks = [(f['check'], f['severity']) for f in out['findings']]
    assert ('benchmark', 'fail') in checks and ('spread', 'fail') in checks
    assert not any(f['msg'] == 'stage 1 wording' for f in out['findings'])


@pytest.mark.parametrize('kwargs, text', [({'improvement_pct': -1}, 'improvement_pct must be'),
                                          ({'tolerance_pct': 'x'}, 'tolerance_pct must be')])
def test_bad_limits(kwargs, text):
    with pytest.raises(AnsibleFilterError, match=text):
        report.regression_compare(after(), BEFORE, **kwargs)


def test_bad_input():
    with pytest.raises(AnsibleFilterError, match='expects the measurement'):
        report.regression_compare([1], BEFORE)
    with pytest.raises(AnsibleFilterError, match='expects'):
        report.run_report([])
    with pytest.raises(AnsibleFilterError, match='run_report_html expects'):
        report.run_report_html('x')


# ---- the run's report ------------------------------------------------------------------------------

def sources():
    comparison = report.regression_compare(after(), BEFORE, host='node01', baseline_run='R1')
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
    assert model['bandwidth'] == {'intra_ran': False, 'intra': [], 'cross_ran': False, 'cross': None}
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
    assert page.count('Not run.') == 6 and text.count('Not run.') == 6
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
