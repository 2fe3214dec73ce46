# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    """The attributes every module documents, with the usual support levels."""

    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check mode and return the changed status it predicts, without modifying the node.
  diff_mode:
    description: Returns what has changed (or would change, in check mode) when run with C(--diff).
  idempotent:
    description:
      - When run twice in a row outside check mode with the same arguments, the second run reports no change.
      - This assumes that nothing else changed the node in a relevant way in between.
"""

    # Read-only modules.
    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - This module only reads; it runs the same read-only commands in check mode.
  diff_mode:
    support: N/A
    details:
      - This module does not modify the node.
  idempotent:
    support: full
    details:
      - This module does not modify the node.
"""

    ACTIONGROUP_NPU = r"""
options: {}
attributes:
  action_group:
    description: Use C(group/npuops.ascend.npu) in C(module_defaults) to set the shared options of this module once per play.
    support: full
    membership:
      - npuops.ascend.npu
"""

    # The actions of the run's store and the stages: they write their records and reports on the controller, in check
    # mode too, and never report a change.
    CONTROLLER = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - Runs in check mode as well; what it writes (records, reports) is on the controller, never a change to the PoD.
  diff_mode:
    support: none
  idempotent:
    support: full
    details:
      - Never reports a change.
  platform:
    support: full
    platforms: posix
    description: Runs on the controller only.
"""
