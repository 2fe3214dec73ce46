"""The filter file diagnose_summary: its one filter is the function of plugins/plugin_utils/diagnose.py."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import diagnose_summary
from ansible_collections.npuops.ascend.plugins.plugin_utils import diagnose


def test_filter_table():
    assert diagnose_summary.FilterModule().filters() == {'diagnose_summary': diagnose.diagnose_summary}
