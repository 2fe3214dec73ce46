"""The filter file dataloader_advice: its one filter is the function of plugins/plugin_utils/dataloader.py."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import dataloader_advice
from ansible_collections.npuops.ascend.plugins.plugin_utils import dataloader


def test_filter_table():
    assert dataloader_advice.FilterModule().filters() == {'dataloader_advice': dataloader.dataloader_advice}
