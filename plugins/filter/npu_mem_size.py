# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stage 7, the serving engine: npu_mem_size, npu_mem_size_auto, vllm_launch.

The logic lives in plugins/plugin_utils/serving.py; the documentation of each filter is in the .yml file of the same
name next to this file.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.serving import (
    npu_mem_size,
    npu_mem_size_auto,
    vllm_launch,
)


class FilterModule:
    """npuops.ascend serving engine filters (stage 7)."""

    def filters(self):
        return {
            'npu_mem_size': npu_mem_size,
            'npu_mem_size_auto': npu_mem_size_auto,
            'vllm_launch': vllm_launch,
        }
