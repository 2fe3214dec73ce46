# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    """The options shared by the modules that run the Ascend tools."""

    # Every module that runs a tool.
    DOCUMENTATION = r"""
options:
  timeout:
    description:
      - Seconds each tool call may take before it is stopped (through coreutils C(timeout -k 5)).
      - V(0) disables the limit. Without the C(timeout) binary on the node calls are not limited.
    type: int
    default: 30
"""

    # The other options every module of the npuops.ascend.npu action group accepts.
    GROUP = r"""
options:
  workers:
    description:
      - Maximum number of tool calls (or devices) handled at the same time.
    type: int
    default: 8
  hccn_tool_path:
    description:
      - Path of the C(hccn_tool) binary, or of the directory holding it.
      - When set, only this place is used, and a wrong path fails the task. When unset,
        C(/usr/local/Ascend/driver/tools), C(/usr/local/sbin), C(/usr/local/bin) and then E(PATH) are searched.
      - Modules that do not run C(hccn_tool) accept and ignore it, so that C(module_defaults) of the action group can
        set it once.
    type: path
  npu_smi_path:
    description:
      - Path of the C(npu-smi) binary, or of the directory holding it. Searched like O(hccn_tool_path) when unset.
      - Modules that do not run C(npu-smi) accept and ignore it, so that C(module_defaults) of the action group can
        set it once.
    type: path
"""
