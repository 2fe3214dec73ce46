"""The filter file switch_port_findings publishes the switch-side checks of plugin_utils/switch/findings.py, each with
its documentation."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import switch_port_findings as filter_file
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch import findings
from ansible_collections.npuops.ascend.tests.unit.plugins.filter.filter_docs import assert_published


def test_filter_table():
    assert sorted(filter_file.FilterModule().filters()) == ['switch_ecn_findings', 'switch_pfc_findings',
                                                            'switch_port_findings']
    assert_published(filter_file, {
        'switch_port_findings': findings.switch_port_findings,
        'switch_pfc_findings': findings.switch_pfc_findings,
        'switch_ecn_findings': findings.switch_ecn_findings,
    })
