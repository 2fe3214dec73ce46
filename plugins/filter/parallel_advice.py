# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parallel-strategy advice of the method: parallel_advice.

The logic is in plugins/plugin_utils/parallel.py; the documentation of the filter is in parallel_advice.yml next to this
file.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.parallel import parallel_advice


class FilterModule:
    """npuops.ascend parallel-strategy filter."""

    def filters(self):
        return {
            'parallel_advice': parallel_advice,
        }
