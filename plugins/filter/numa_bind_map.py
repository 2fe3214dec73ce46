# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of stage 6 (role numa_bind): the NPU binding map and the AI Core statistics.

The logic lives in plugins/plugin_utils/numa.py; the documentation of each filter is in the .yml file of the same name.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.numa import aicore_stats, numa_bind_map


class FilterModule:
    """npuops.ascend NUMA binding filters (stage 6)."""

    def filters(self):
        return {
            'numa_bind_map': numa_bind_map,
            'aicore_stats': aicore_stats,
        }
