"""The filter file run_report: each filter name maps to its function in plugins/plugin_utils/."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import run_report
from ansible_collections.npuops.ascend.plugins.plugin_utils import report
from ansible_collections.npuops.ascend.tests.unit.plugins.filter.filter_docs import assert_not_published


def test_filter_table():
    assert sorted(run_report.FilterModule().filters()) == ['run_report', 'run_report_html', 'run_report_markdown']


def test_each_filter_is_the_function_of_its_topic():
    assert run_report.FilterModule().filters() == {
        'run_report': report.run_report,
        'run_report_markdown': report.run_report_markdown,
        'run_report_html': report.run_report_html,
    }


def test_the_comparison_of_stage_9_is_not_a_filter():
    # npuops.ascend.stage_regression makes it (plugins/plugin_utils/regression.py)
    assert_not_published(['regression_compare', 'regression_lines', 'launch_check'])
