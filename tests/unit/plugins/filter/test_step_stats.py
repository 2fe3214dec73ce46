"""The filter file step_stats: each filter name maps to its function in plugins/plugin_utils/."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import step_stats
from ansible_collections.npuops.ascend.plugins.plugin_utils import bench


def test_filter_table():
    assert sorted(step_stats.FilterModule().filters()) == ['baseline_measure', 'benchmark_launch', 'busbw', 'crossnode_busbw_expected',
                                                           'cv_percent', 'launch_text', 'mfu', 'npu_peak_tflops',
                                                           'step_stats']


def test_each_filter_is_the_function_of_its_topic():
    filters = step_stats.FilterModule().filters()
    assert filters['baseline_measure'] is bench.baseline_measure
    assert filters == {
        'step_stats': bench.step_stats,
        'cv_percent': bench.cv_percent,
        'mfu': bench.mfu,
        'busbw': bench.busbw,
        'baseline_measure': bench.baseline_measure,
        'benchmark_launch': bench.benchmark_launch,
        'launch_text': bench.launch_text,
        'npu_peak_tflops': bench.npu_peak_tflops,
        'crossnode_busbw_expected': bench.crossnode_busbw_expected,
    }
