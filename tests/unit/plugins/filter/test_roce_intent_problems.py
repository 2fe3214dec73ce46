"""plugins/filter/roce_intent_problems.py publishes the intent and plan functions of plugins/plugin_utils/roce/."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import roce_intent_problems as filter_file
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce import intent, plan
from ansible_collections.npuops.ascend.tests.unit.plugins.filter.filter_docs import assert_published


def test_each_filter_is_its_plugin_utils_function_and_documented():
    assert_published(filter_file, {
        'npu_ip_plan': plan.npu_ip_plan,
        'hccl_rdma_tc': intent.hccl_rdma_tc,
        'roce_intent_problems': intent.roce_intent_problems,
    })
