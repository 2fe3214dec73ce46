"""plugins/filter/hccl_env.py publishes the HCCL environment functions of plugins/plugin_utils/hccl_env.py (this file is
not test_hccl_env.py: that name tests plugins/plugin_utils/hccl_env.py)."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import hccl_env as filter_file
from ansible_collections.npuops.ascend.plugins.plugin_utils import hccl_env
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce import verify
from ansible_collections.npuops.ascend.tests.unit.plugins.filter.filter_docs import assert_not_published, assert_published


def test_each_filter_is_its_plugin_utils_function_and_documented():
    assert_published(filter_file, {
        'hccl_env': hccl_env.hccl_env,
        'hccl_env_file': hccl_env.hccl_env_file,
    })


def test_the_decisions_of_stage_5_are_not_filters():
    assert_not_published(['hccl_env_node_check', 'hccl_env_findings', 'hccl_alignment_findings'])
    assert callable(hccl_env.hccl_env_node_check) and callable(hccl_env.hccl_env_findings)
    assert callable(verify.hccl_alignment_findings)
