# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Performance filters: step_stats, cv_percent, mfu, busbw, the measurement of a benchmark (baseline_measure) and how it
was launched (benchmark_launch, launch_text), the peak of an NPU model (npu_peak_tflops) and the bus
bandwidth expected across nodes (crossnode_busbw_expected).

The logic is in plugins/plugin_utils/bench.py; the documentation of each filter is in the
.yml file of the same name next to this file.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.bench import (
    baseline_measure,
    benchmark_launch,
    busbw,
    crossnode_busbw_expected,
    cv_percent,
    launch_text,
    mfu,
    npu_peak_tflops,
    step_stats,
)


class FilterModule:
    """npuops.ascend performance filters."""

    def filters(self):
        return {
            'step_stats': step_stats,
            'baseline_measure': baseline_measure,
            'benchmark_launch': benchmark_launch,
            'launch_text': launch_text,
            'npu_peak_tflops': npu_peak_tflops,
            'crossnode_busbw_expected': crossnode_busbw_expected,
            'cv_percent': cv_percent,
            'mfu': mfu,
            'busbw': busbw,
        }
