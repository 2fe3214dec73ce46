"""The filter file run_report: each filter name maps to its function in plugins/plugin_utils/."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import run_report
from ansible_collections.npuops.ascend.plugins.plugin_utils import regression, report


def test_filter_table():
    assert sorted(run_report.FilterModule().filters()) == ['regression_compare', 'regression_lines', 'run_report',
                                                           'run_report_html', 'run_report_markdown']


def test_each_filter_is_the_function_of_its_topic():
    assert run_report.FilterModule().filters() == {
        'regression_compare': regression.regression_compare,
        'regression_lines': regression.regression_lines,
        'run_report': report.run_report,
        'run_report_markdown': report.run_report_markdown,
        'run_report_html': report.run_report_html,
    }
