# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The switch side of the lossless RoCE plane.

- ``neighbours``: the leaf switches and ports the NPU ports see in LLDP (switch_neighbours);
- ``intent``: the PoD's QoS intent and the switch inventory, and their problems (switch_intent_problems);
- ``files``: the configuration file of every leaf switch (switch_config), each rendered by the module of its family
  (``huawei_ce``, ``sonic``, ``cumulus``; their interface is described in ``common``);
- ``findings``: what the switch ports do, checked from the hosts (LLDP, PFC and CNP counters).

``RENDERERS`` maps each switch family name to the module that checks and renders it; ``FAMILIES`` are the names, in
the order the messages list them.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.switch import cumulus, huawei_ce, sonic

RENDERERS = dict((family, module) for module in (huawei_ce, sonic, cumulus) for family in module.MODELS)
FAMILIES = tuple(RENDERERS)
