# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over findings and the run's summary: findings_text (the messages of findings, each said once for all its NPUs
and nodes), bench_findings (stage 3's measurement as findings) and summary_lines (summary.json as lines).

The logic is in plugins/plugin_utils/ (findings, bench, gate); the documentation of each filter is in the .yml file of
the same name next to this file.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.bench import bench_findings
from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import findings_text
from ansible_collections.npuops.ascend.plugins.plugin_utils.gate import summary_lines


class FilterModule:
    """npuops.ascend findings and summary lines."""

    def filters(self):
        return {
            'findings_text': findings_text,
            'bench_findings': bench_findings,
            'summary_lines': summary_lines,
        }
