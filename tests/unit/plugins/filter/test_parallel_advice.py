"""The filter file parallel_advice: its one filter is the function of plugins/plugin_utils/parallel.py."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import parallel_advice
from ansible_collections.npuops.ascend.plugins.plugin_utils import parallel


def test_filter_table():
    assert parallel_advice.FilterModule().filters() == {'parallel_advice': parallel.parallel_advice}
