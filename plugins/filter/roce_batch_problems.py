# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters of the stage 4 change window: roce_batch_problems (the batch size of a serial play) and
roce_rollback_message (one node's rollback).

The logic is in plugins/plugin_utils/roce/window.py; the documentation of each filter is in the .yml file of the same
name next to this file.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.window import roce_batch_problems, roce_rollback_message


class FilterModule:
    """npuops.ascend stage 4 change window filters."""

    def filters(self):
        return {
            'roce_batch_problems': roce_batch_problems,
            'roce_rollback_message': roce_rollback_message,
        }
