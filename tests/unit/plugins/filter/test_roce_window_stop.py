"""plugins/filter/roce_window_stop.py publishes the change window functions of plugins/plugin_utils/roce/window.py."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import roce_window_stop as filter_file
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce import window
from ansible_collections.npuops.ascend.tests.unit.plugins.filter.filter_docs import assert_published


def test_each_filter_is_its_plugin_utils_function_and_documented():
    assert_published(filter_file, {
        'roce_window_stop': window.roce_window_stop,
        'roce_batch_problems': window.roce_batch_problems,
        'roce_rollback_message': window.roce_rollback_message,
    })
