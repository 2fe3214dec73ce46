# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run's report: run_report, run_report_markdown, run_report_html.

The logic is in plugins/plugin_utils/report.py; the documentation of each filter is in the .yml file of
the same name next to this file.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.report import run_report, run_report_html, run_report_markdown


class FilterModule:
    """npuops.ascend report filters."""

    def filters(self):
        return {
            'run_report': run_report,
            'run_report_markdown': run_report_markdown,
            'run_report_html': run_report_html,
        }
