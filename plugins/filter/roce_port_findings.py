# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters of stages 4 and 5: the ports against the lossless intent, PFC pause counters between two reads, the
change ticket, the pairwise search for a slow node, the batch outcome, and the HCCL environment against the ports.

The logic is in plugins/plugin_utils/roce/ (verify.py, plan.py, ticket.py, pairwise.py, window.py) and
plugins/plugin_utils/hccl_env.py; the documentation of each filter is in the .yml file of the same name next to this
file.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.hccl_env import hccl_env_findings, hccl_env_problem_lines
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.pairwise import crossnode_findings, pairwise_culprit, ring_neighbours, ring_pairs
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.plan import port_config_subset, roce_desired_config
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.ticket import changed_ports, roce_change_ticket
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.verify import (
    hccl_alignment_findings,
    pfc_steady_findings,
    roce_port_findings,
    roce_precheck_findings,
)


class FilterModule:
    """npuops.ascend stage 4 checks."""

    def filters(self):
        return {
            'roce_port_findings': roce_port_findings,
            'roce_desired_config': roce_desired_config,
            'roce_precheck_findings': roce_precheck_findings,
            'port_config_subset': port_config_subset,
            'changed_ports': changed_ports,
            'hccl_alignment_findings': hccl_alignment_findings,
            'pfc_steady_findings': pfc_steady_findings,
            'roce_change_ticket': roce_change_ticket,
            'pairwise_culprit': pairwise_culprit,
            'crossnode_findings': crossnode_findings,
            'hccl_env_problem_lines': hccl_env_problem_lines,
            'hccl_env_findings': hccl_env_findings,
            'ring_pairs': ring_pairs,
            'ring_neighbours': ring_neighbours,
        }
