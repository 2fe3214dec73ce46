"""The filter file run_metrics: the filter name maps to its function in plugins/plugin_utils/, and it is documented."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import run_metrics
from ansible_collections.npuops.ascend.plugins.plugin_utils import metrics
from ansible_collections.npuops.ascend.tests.unit.plugins.filter.filter_docs import assert_published


def test_the_filter_is_the_function_of_its_topic():
    assert_published(run_metrics, {'run_metrics': metrics.run_metrics})
