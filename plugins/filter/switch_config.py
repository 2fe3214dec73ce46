# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The switch side of the lossless RoCE plane: switch_neighbours, switch_config, switch_intent_problems.

The logic lives in plugins/plugin_utils/switch/ (neighbours, files and one module per switch family, intent); the
documentation of each filter is in the .yml file of the same name next to this file.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.files import switch_config
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.intent import switch_intent_problems
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.neighbours import switch_neighbours


class FilterModule:
    """npuops.ascend switch-side QoS filters."""

    def filters(self):
        return {
            'switch_neighbours': switch_neighbours,
            'switch_config': switch_config,
            'switch_intent_problems': switch_intent_problems,
        }
