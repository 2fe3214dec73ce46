# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the stage findings and the gate: health_findings, pod_port_findings (stage 0), version_findings and the
fingerprints (stage 2), bench_findings (stage 3), findings_text, gate_message, lost_node_finding and
summary_lines.

The logic is in plugins/plugin_utils/ (health, versions, bench, findings, gate); the documentation of each filter is in
the .yml file of the same name next to this file.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.bench import bench_findings
from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import findings_text
from ansible_collections.npuops.ascend.plugins.plugin_utils.gate import gate_message, lost_node_finding, summary_lines
from ansible_collections.npuops.ascend.plugins.plugin_utils.health import health_findings, pod_port_findings
from ansible_collections.npuops.ascend.plugins.plugin_utils.versions import fingerprint_diff, fingerprint_drift, fingerprint_findings, version_findings


class FilterModule:
    """npuops.ascend stage findings."""

    def filters(self):
        return {
            'health_findings': health_findings,
            'pod_port_findings': pod_port_findings,
            'gate_message': gate_message,
            'findings_text': findings_text,
            'lost_node_finding': lost_node_finding,
            'version_findings': version_findings,
            'fingerprint_diff': fingerprint_diff,
            'fingerprint_findings': fingerprint_findings,
            'fingerprint_drift': fingerprint_drift,
            'bench_findings': bench_findings,
            'summary_lines': summary_lines,
        }
