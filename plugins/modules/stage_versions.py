#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented by the action plugin plugins/action/stage_versions.py; this file holds its documentation.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: stage_versions
short_description: Stage 2 - a node's software stack against the table, and the nodes against each other
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - The two parts of stage 2 (the C(version_check) role runs them); the gate's verdict (M(npuops.ascend.stage_gate))
    follows.
  - O(step=node) (on every node, one task) runs M(npuops.ascend.version_info) and M(npuops.ascend.npu_info) (boards) on
    the node, with the play's C(module_defaults) for them, checks the pairings against O(compatibility), and writes the
    node's record of stage 2 to the run's store (C(<run_dir>/nodes/<node>/stage2.json)) with its fingerprint in
    C(data.fingerprint).
  - O(step=pod) (once, C(run_once)) reads the records of stage 2 of the nodes still in the play from the store - never
    the facts of other nodes - finds the fields whose value differs between nodes (a failure for each node that
    differs from most), compares with the fingerprints of the previous run kept in O(history), keeps this run's there
    (not in check mode), and writes the PoD record of stage 2 (C(<run_dir>/pod/stage2.json)). A node without a record
    is left out here; the verdict names it.
  - Read-only on the nodes; never reports a change. Records are written in check mode too.
options:
  step:
    description: Which part; see the description.
    type: str
    required: true
    choices: [node, pod]
  compatibility:
    description:
      - With O(step=node), the compatibility table (the C(version_check) role's C(version_check_compatibility)).
    type: dict
    default: {}
  unknown_is_fatal:
    description: With O(step=node), a pairing the table does not know is a failure instead of a warning.
    type: bool
    default: false
  python:
    description: With O(step=node), the O(npuops.ascend.version_info#module:python) to read the packages with.
    type: path
  packages:
    description: With O(step=node), the O(npuops.ascend.version_info#module:packages) to read.
    type: list
    elements: str
    default: [torch, torch_npu]
  env_files:
    description: With O(step=node), the O(npuops.ascend.version_info#module:env_files) to read.
    type: list
    elements: path
    default: []
  env_prefixes:
    description: With O(step=node), the O(npuops.ascend.version_info#module:env_prefixes) to report.
    type: list
    elements: str
    default: [HCCL_, ASCEND_, TASK_QUEUE_, PYTORCH_NPU_]
  history:
    description:
      - With O(step=pod), the file on the controller that keeps the fingerprints of the previous run; unset, the run is
        not compared with the previous one and nothing is kept.
    type: path
  active:
    description: With O(step=pod), the nodes still in the play; default C(ansible_play_hosts).
    type: list
    elements: str
extends_documentation_fragment:
  - npuops.ascend.attributes
  - npuops.ascend.run_store
  - npuops.ascend.attributes.controller
attributes:
  platform:
    support: full
    platforms: posix
    description: The modules run on the node; the records are written on the controller.
seealso:
  - module: npuops.ascend.version_info
  - module: npuops.ascend.stage_gate
"""

EXAMPLES = r"""
# The version_check role passes the run's directory and id (gate_run_dir, gate_run_id) and its compatibility table.
- name: Read the software stack of every node and record it
  npuops.ascend.stage_versions:
    step: node
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    compatibility: {}

- name: Compare the nodes from their records, and with the previous run
  npuops.ascend.stage_versions:
    step: pod
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    history: "{{ playbook_dir }}/npuops-reports/fingerprints.json"
  register: versions
  run_once: true
"""

RETURN = r"""
stack:
  description: With O(step=node), the result of M(npuops.ascend.version_info).
  returned: step is node
  type: dict
boards:
  description: With O(step=node), the result of M(npuops.ascend.npu_info) with the boards.
  returned: step is node
  type: dict
fingerprint:
  description: With O(step=node), the node's fingerprint (equal on two nodes exactly when their stacks are equal).
  returned: step is node
  type: dict
  sample: {driver: 25.2.0, firmware: 7.7.0.6.236, cann: 8.3.RC2}
record:
  description: With O(step=node), the node's record of stage 2.
  returned: step is node
  type: dict
findings:
  description:
    - With O(step=node), the node's findings. With O(step=pod), every node's findings (in the order of the play),
      then those over the PoD.
  returned: always
  type: list
  elements: dict
fingerprints:
  description: "With O(step=pod), C({node: fingerprint}) of the nodes with a record."
  returned: step is pod
  type: dict
differences:
  description: With O(step=pod), the fields whose value is not the same on every node, C([{field, values}]).
  returned: step is pod
  type: list
  elements: dict
pod_findings:
  description: With O(step=pod), a failure for each node whose value of a field differs from what most nodes have.
  returned: step is pod
  type: list
  elements: dict
drift:
  description: With O(step=pod), what changed on which node since the previous run, C([{host, field, before, after, msg}]).
  returned: step is pod
  type: list
  elements: dict
path:
  description: The record written.
  returned: always
  type: str
msg:
  description: What was recorded or compared.
  returned: always
  type: str
"""
