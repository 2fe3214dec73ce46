# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters of stage 4: the desired port settings, the change ticket, the pairwise search for a slow node and the
cross-node check.

The logic is in plugins/plugin_utils/roce/ (plan.py, ticket.py, pairwise.py); the
documentation of each filter is in the .yml file of the same name next to this file.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.pairwise import crossnode_findings, pairwise_culprit, ring_pairs
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.plan import roce_desired_config
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.ticket import roce_change_ticket


class FilterModule:
    """npuops.ascend stage 4 filters."""

    def filters(self):
        return {
            'roce_desired_config': roce_desired_config,
            'roce_change_ticket': roce_change_ticket,
            'pairwise_culprit': pairwise_culprit,
            'crossnode_findings': crossnode_findings,
            'ring_pairs': ring_pairs,
        }
