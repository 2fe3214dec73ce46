# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    """The run's store on the controller, as the stage actions take it (docs/reference/records.md)."""

    DOCUMENTATION = r"""
options:
  run_dir:
    description:
      - The run's directory on the controller (C(<report dir>/<run id>)), created when missing; the stage roles pass
        C(gate_run_dir).
    type: path
    required: true
  run_id:
    description:
      - The id of the run, written into every record; a record of another run id is never used. 1-128 letters, digits,
        C(.), C(_) or C(-), starting with a letter or digit; the stage roles pass C(gate_run_id).
    type: str
    required: true
"""
