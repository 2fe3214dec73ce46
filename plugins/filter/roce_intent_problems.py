# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters of the lossless RoCE intent and the address plan: roce_intent_problems, hccl_rdma_tc, npu_ip_plan.

The logic is in plugins/plugin_utils/roce/ (intent.py, plan.py); the documentation of each filter is in the .yml file of
the same name next to this file.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.intent import hccl_rdma_tc, roce_intent_problems
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.plan import npu_ip_plan


class FilterModule:
    """npuops.ascend RoCE parameter-plane filters."""

    def filters(self):
        return {
            'npu_ip_plan': npu_ip_plan,
            'hccl_rdma_tc': hccl_rdma_tc,
            'roce_intent_problems': roce_intent_problems,
        }
