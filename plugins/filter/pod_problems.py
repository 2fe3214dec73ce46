# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter of the inventory check of a PoD: pod_problems.

The logic is in plugins/plugin_utils/pod.py; the documentation is in pod_problems.yml next to this file.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.pod import pod_problems


class FilterModule:
    """npuops.ascend inventory filters."""

    def filters(self):
        return {
            'pod_problems': pod_problems,
        }
