"""The filter file switch_config publishes the switch functions of plugin_utils/switch/, each with its documentation."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import switch_config as filter_file
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch import files, intent, neighbours
from ansible_collections.npuops.ascend.tests.unit.plugins.filter.filter_docs import assert_published


def test_filter_table():
    assert_published(filter_file, {
        'switch_neighbours': neighbours.switch_neighbours,
        'switch_config': files.switch_config,
        'switch_intent_problems': intent.switch_intent_problems,
    })
