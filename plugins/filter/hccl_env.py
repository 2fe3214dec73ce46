# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters of the managed HCCL environment of a node: hccl_env (validate and render) and hccl_env_file (the file
text).

The logic is in plugins/plugin_utils/hccl_env.py; the documentation of each filter is in the .yml file of the same name
next to this file, and the rules and their sources are listed in hccl_env.yml.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.hccl_env import hccl_env, hccl_env_file


class FilterModule:
    """npuops.ascend HCCL environment filters."""

    def filters(self):
        return {
            'hccl_env': hccl_env,
            'hccl_env_file': hccl_env_file,
        }
