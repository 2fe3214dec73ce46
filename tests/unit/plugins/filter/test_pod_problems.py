"""plugins/filter/pod_problems.py publishes the inventory check of plugins/plugin_utils/pod.py."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import pod_problems as filter_file
from ansible_collections.npuops.ascend.plugins.plugin_utils import pod
from ansible_collections.npuops.ascend.tests.unit.plugins.filter.filter_docs import assert_published


def test_each_filter_is_its_plugin_utils_function_and_documented():
    assert_published(filter_file, {'pod_problems': pod.pod_problems})
