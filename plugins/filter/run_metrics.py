# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run's metrics for monitoring: run_metrics.

The logic is in plugins/plugin_utils/metrics.py; the documentation of the filter is in run_metrics.yml next to this file.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.metrics import run_metrics


class FilterModule:
    """npuops.ascend metrics filter."""

    def filters(self):
        return {
            'run_metrics': run_metrics,
        }
