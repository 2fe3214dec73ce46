# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stage 4, the switch side checked from the hosts: switch_port_findings, switch_pfc_findings, switch_ecn_findings.

The logic lives in plugins/plugin_utils/switch/findings.py; the documentation of each filter is in the .yml file of
the same name next to this file.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.findings import (
    switch_ecn_findings,
    switch_pfc_findings,
    switch_port_findings,
)


class FilterModule:
    """Switch-side checks from the hosts."""

    def filters(self):
        return {
            'switch_port_findings': switch_port_findings,
            'switch_pfc_findings': switch_pfc_findings,
            'switch_ecn_findings': switch_ecn_findings,
        }
