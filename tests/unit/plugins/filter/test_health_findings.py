"""The filter file health_findings: each filter name maps to its function in plugins/plugin_utils/."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.filter import health_findings
from ansible_collections.npuops.ascend.plugins.plugin_utils import bench, findings, gate, health, versions


def test_filter_table():
    assert sorted(health_findings.FilterModule().filters()) == [
        'bench_findings', 'findings_text', 'fingerprint_diff', 'fingerprint_drift', 'fingerprint_findings', 'gate_message',
        'health_findings', 'lost_node_finding', 'pod_port_findings', 'summary_lines', 'version_findings']


def test_each_filter_is_the_function_of_its_topic():
    assert health_findings.FilterModule().filters() == {
        'health_findings': health.health_findings,
        'pod_port_findings': health.pod_port_findings,
        'version_findings': versions.version_findings,
        'fingerprint_diff': versions.fingerprint_diff,
        'fingerprint_findings': versions.fingerprint_findings,
        'fingerprint_drift': versions.fingerprint_drift,
        'bench_findings': bench.bench_findings,
        'findings_text': findings.findings_text,
        'gate_message': gate.gate_message,
        'lost_node_finding': gate.lost_node_finding,
        'summary_lines': gate.summary_lines,
    }
