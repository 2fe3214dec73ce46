"""The filter file npu_mem_size publishes the stage 7 functions of plugin_utils/serving.py that a user can call, each
with its documentation; the decisions of stage 7 stay internal to npuops.ascend.stage_serving."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import npu_mem_size as filter_file
from ansible_collections.npuops.ascend.plugins.plugin_utils import serving
from ansible_collections.npuops.ascend.tests.unit.plugins.filter.filter_docs import assert_not_published, assert_published

INTERNAL = ['mindie_config_problems', 'mindie_config_problem_lines', 'mindie_config_findings']


def test_filters_are_registered():
    assert sorted(filter_file.FilterModule().filters()) == ['npu_mem_size', 'npu_mem_size_auto', 'vllm_launch']
    assert_published(filter_file, {
        'npu_mem_size': serving.npu_mem_size,
        'npu_mem_size_auto': serving.npu_mem_size_auto,
        'vllm_launch': serving.vllm_launch,
    })


def test_the_decisions_of_stage_7_are_not_filters():
    assert_not_published(INTERNAL)
    assert all(callable(getattr(serving, name)) for name in INTERNAL)
