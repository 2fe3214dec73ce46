"""The filter file mindie_config_problems publishes the stage 7 functions of plugin_utils/serving.py, each with its
documentation."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import mindie_config_problems as filter_file
from ansible_collections.npuops.ascend.plugins.plugin_utils import serving
from ansible_collections.npuops.ascend.tests.unit.plugins.filter.filter_docs import assert_published


def test_filters_are_registered():
    assert sorted(filter_file.FilterModule().filters()) == [
        'mindie_config_findings', 'mindie_config_problem_lines', 'mindie_config_problems', 'npu_mem_size',
        'npu_mem_size_auto', 'vllm_launch']
    assert_published(filter_file, {
        'npu_mem_size': serving.npu_mem_size,
        'npu_mem_size_auto': serving.npu_mem_size_auto,
        'mindie_config_problems': serving.mindie_config_problems,
        'mindie_config_problem_lines': serving.mindie_config_problem_lines,
        'mindie_config_findings': serving.mindie_config_findings,
        'vllm_launch': serving.vllm_launch,
    })
