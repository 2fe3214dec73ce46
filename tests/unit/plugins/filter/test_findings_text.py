"""The filter file findings_text: each filter name maps to its function in plugins/plugin_utils/; the stages' internal
checks (health, versions, the gate's text) are not published as filters."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import findings_text
from ansible_collections.npuops.ascend.plugins.plugin_utils import bench, findings, gate


def test_each_filter_is_the_function_of_its_topic():
    assert findings_text.FilterModule().filters() == {
        'findings_text': findings.findings_text,
        'bench_findings': bench.bench_findings,
        'summary_lines': gate.summary_lines,
    }
