# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The PoD-wide reading of the ascend_diagnose results of every node: diagnose_summary.

The logic is in plugins/plugin_utils/diagnose.py; the documentation of the filter is in diagnose_summary.yml next to this
file.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.diagnose import diagnose_summary


class FilterModule:
    """npuops.ascend diagnosis filter."""

    def filters(self):
        return {'diagnose_summary': diagnose_summary}
