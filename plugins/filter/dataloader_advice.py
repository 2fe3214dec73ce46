# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stage 8's DataLoader advice: dataloader_advice.

The logic is in plugins/plugin_utils/dataloader.py; the documentation of the filter is in dataloader_advice.yml next to
this file.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.dataloader import dataloader_advice


class FilterModule:
    """npuops.ascend DataLoader advice."""

    def filters(self):
        return {'dataloader_advice': dataloader_advice}
