"""The judgement of stage 7's load sweep (plugins/plugin_utils/serving.py): the knee, the saturation throughput,
falling throughput and the P99 / P50 limit of the method, and the findings that name node, endpoint, level and values."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.serving import (
    bench_findings, bench_judgement, bench_knee_text, report_entry)

URL = 'http://127.0.0.1:1025'


def level(concurrency, tokens_per_s, p50=100.0, p99=120.0, succeeded=8, failed=0, errors=()):
    """One level of a serving_bench result (the module's RETURN shape)."""
    return {'concurrency': concurrency, 'requests': succeeded + failed, 'succeeded': succeeded, 'failed': failed,
            'errors': list(errors), 'wall_s': 1.0, 'output_tokens': int(tokens_per_s), 'tokens_per_s': tokens_per_s,
            'ttft_ms': {'mean': 10.0, 'p50': 10.0, 'p99': 12.0}, 'tpot_ms': {'mean': 5.0, 'p50': 5.0, 'p99': 6.0},
            'latency_ms': {'p50': p50, 'p99': p99}}


def test_the_knee_is_the_level_before_the_first_flat_step():
    judged = bench_judgement([level(1, 100.0), level(8, 700.0), level(32, 1500.0), level(128, 1560.0)])
    assert [row['gain_pct'] for row in judged['levels']] == [None, 600.0, 114.3, 4.0]
    assert judged['knee'] == 32 and judged['saturated'] is True
    assert judged['saturation_tokens_per_s'] == 1560.0 and judged['peak_concurrency'] == 128
    assert judged['drops'] == [] and judged['tails'] == [] and judged['errors'] == []
    assert judged['summary'] == ('knee at concurrency 32: the next level (128) gains 4 %, less than 10 %; saturation '
                                 'throughput 1560 output tokens/s (at concurrency 128)')


def test_the_gain_threshold_is_the_operators():
    levels = [level(1, 100.0), level(8, 700.0), level(32, 1500.0), level(128, 1560.0)]
    assert bench_judgement(levels, knee_gain_pct=3)['knee'] is None
    assert bench_judgement(levels, knee_gain_pct=150)['knee'] == 8


def test_a_sweep_that_still_rises_has_no_knee_and_says_to_add_a_level():
    judged = bench_judgement([level(8, 700.0), level(1, 100.0), level(32, 1500.0)])   # sorted by concurrency
    assert [row['concurrency'] for row in judged['levels']] == [1, 8, 32]
    assert judged['knee'] is None and judged['saturated'] is False and judged['saturation_tokens_per_s'] is None
    assert judged['peak_tokens_per_s'] == 1500.0
    assert judged['summary'].startswith('no knee within the sweep: throughput still rose 114.3 % from concurrency 8 to '
                                        '32 (1500 tokens/s), more than the 10 %')


def test_one_level_or_none_is_no_knee():
    assert 'fewer than two levels' in bench_judgement([level(1, 100.0)])['summary']
    judged = bench_judgement([])
    assert judged['knee'] is None and judged['peak_tokens_per_s'] is None and 'fewer than two' in judged['summary']
    assert bench_knee_text(None) == 'not judged'


def test_levels_without_output_are_left_out_and_their_failures_kept():
    judged = bench_judgement([level(1, 100.0), level(8, 0.0, succeeded=0, failed=8, errors=['HTTP 503']),
                              level(32, 105.0, succeeded=6, failed=2, errors=['TimeoutError: timed out'])])
    assert [row['concurrency'] for row in judged['levels']] == [1, 32]
    assert judged['knee'] == 1
    assert judged['errors'] == [{'concurrency': 8, 'failed': 8, 'requests': 8, 'errors': ['HTTP 503']},
                                {'concurrency': 32, 'failed': 2, 'requests': 8, 'errors': ['TimeoutError: timed out']}]


def test_falling_throughput_is_measured_against_the_best_lower_level():
    judged = bench_judgement([level(1, 100.0), level(8, 700.0), level(32, 660.0), level(128, 500.0)])
    assert judged['knee'] == 8
    # 660 is 5.7 % below 700: inside the 10 % band; 500 is 28.6 % below it
    assert judged['drops'] == [{'concurrency': 128, 'tokens_per_s': 500.0, 'from_concurrency': 8,
                                'from_tokens_per_s': 700.0, 'fall_pct': 28.6}]


def test_p99_above_twice_p50_is_a_tail():
    judged = bench_judgement([level(1, 100.0, p50=100.0, p99=200.0), level(8, 700.0, p50=100.0, p99=201.0)])
    assert [(row['concurrency'], row['p99_p50']) for row in judged['tails']] == [(8, 2.01)]
    assert bench_judgement([level(8, 700.0, p50=100.0, p99=201.0)], p99_p50_max=2.5)['tails'] == []


def test_findings_name_node_endpoint_level_values_threshold_and_source():
    result = {'levels': [level(1, 100.0), level(8, 700.0, p50=150.0, p99=512.4), level(32, 450.0)], 'skipped': None}
    found = bench_findings('node01', URL, result)
    assert [(f['check'], f['severity'], f['value']) for f in found] == [
        ('serving_throughput', 'fail', 450.0), ('serving_p99', 'warn', 3.42)]
    assert found[0]['msg'] == (
        'node01: the load sweep of http://127.0.0.1:1025: output throughput falls to 450 tokens/s at concurrency 32 '
        'from 700 tokens/s at concurrency 8 (-35.7 %, more than 10 %); throughput must rise with concurrency until it '
        'saturates and then hold (threshold: the method, stage 7 verification; the band is '
        'mindie_config_bench_knee_gain_pct). Falling throughput under load means preemption or KV cache swapping: '
        'lower maxBatchSize or give the KV cache more HBM (npuMemSize)')
    assert found[1]['msg'] == (
        'node01: the load sweep of http://127.0.0.1:1025: at concurrency 8 the P99 latency 512.4 ms is 3.42 x the P50 '
        '(150 ms), more than 2 x (threshold: the method, stage 7 verification, P99 less than 2 x P50; '
        'mindie_config_bench_p99_p50_max). A P99 jump means requests queue or are preempted')
    assert found[1]['expected'] == '<= 2 x P50' and found[0]['expected'] == '>= 700 tokens/s'


def test_severities_and_limits_are_options():
    result = {'levels': [level(1, 100.0), level(8, 700.0, p50=150.0, p99=512.4), level(32, 450.0)]}
    found = bench_findings('node02', URL, result, p99_p50_max=4, knee_gain_pct=30, p99_severity='fail',
                           drop_severity='warn')
    assert [(f['check'], f['severity']) for f in found] == [('serving_throughput', 'warn')]
    found = bench_findings('node02', URL, result, p99_severity='fail')
    assert [(f['check'], f['severity']) for f in found] == [('serving_throughput', 'fail'), ('serving_p99', 'fail')]
    with pytest.raises(AnsibleFilterError, match='p99_severity must be fail or warn'):
        bench_findings('node02', URL, result, p99_severity='error')
    with pytest.raises(AnsibleFilterError, match='knee_gain_pct -1 is negative'):
        bench_findings('node02', URL, result, knee_gain_pct=-1)


def test_failed_requests_at_a_level_are_a_warning():
    result = {'levels': [level(1, 100.0), level(8, 650.0, succeeded=14, failed=2, errors=['HTTP 503 : busy'])]}
    found = bench_findings('node01', URL, result)
    assert [(f['check'], f['severity'], f['value']) for f in found] == [('serving_errors', 'warn', 2)]
    assert found[0]['msg'] == ('node01: the load sweep of http://127.0.0.1:1025: 2 of 16 requests failed at concurrency '
                               '8 (HTTP 503 : busy); the figures of that level count only the others')


def test_a_healthy_sweep_and_check_mode_have_no_findings():
    healthy = {'levels': [level(1, 100.0), level(8, 700.0), level(32, 1500.0), level(128, 1520.0)]}
    assert bench_findings('node01', URL, healthy) == []
    assert bench_findings('node01', URL, {'levels': [], 'skipped': 'check mode: no request was sent'}) == []


def test_the_report_entry_carries_the_judgement():
    judged = bench_judgement([level(1, 100.0), level(8, 700.0), level(32, 720.0)])
    entry = report_entry('node01', 'R1', {'engine': 'mindie', 'path': '/c.json'}, sweep={'levels': []}, judged=judged)
    assert entry['sweep_judgement']['knee'] == 8 and entry['sweep_judgement']['saturation_tokens_per_s'] == 720.0
    assert report_entry('node01', 'R1', {'engine': 'none'})['sweep_judgement'] is None
