"""plugins/filter/roce_batch_problems.py publishes the change window functions of plugins/plugin_utils/roce/window.py."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import roce_batch_problems as filter_file
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce import window
from ansible_collections.npuops.ascend.tests.unit.plugins.filter.filter_docs import assert_not_published, assert_published


def test_each_filter_is_its_plugin_utils_function_and_documented():
    assert_published(filter_file, {
        'roce_batch_problems': window.roce_batch_problems,
        'roce_rollback_message': window.roce_rollback_message,
    })


def test_the_stop_of_a_batch_is_not_a_filter():
    # npuops.ascend.stage_roce (step stop) tells a stopped batch from the nodes' records
    assert_not_published(['roce_window_stop'])
