#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented by the action plugin plugins/action/stage_baseline.py; this file holds its documentation.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: stage_baseline
short_description: Stage 1 - a node's snapshot before tuning and its record, and the check of the benchmark's runs
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - The two parts of stage 1 that record the nodes (the C(baseline) role runs them); the benchmark's runs before, and
    the baseline kept for stage 9, its reports and the gate's verdict after, are the role's own tasks.
  - O(step=node) (on every node, one task) takes the node's snapshot when O(snapshot) is true -
    M(npuops.ascend.health_info) reads the NPUs (board, health, usages, processes) and their ports (link, address,
    gateway, MTU, PFC, DSCP map, TLS) in one module run, M(npuops.ascend.version_info) the software stack, both with the
    play's C(module_defaults) for them - and writes it to C(<run_dir>/stage1-baseline/<node>.snapshot.json)
    (C(host), C(run), C(npu), C(ports), C(stack)). A part that cannot be read fails the task with the tool's words
    (C(Stage 1 could not read <node> for its snapshot) and the words). It then writes the node's record of stage 1
    (C(<run_dir>/nodes/<node>/stage1.json)) with C(data.chip_names), the NPU models of the snapshot and of
    O(stage0_chip_names), as C(skipped) (nothing measured yet).
  - O(step=runs) (once, C(run_once), after the runs) checks the benchmark's runs and their spread
    (P(npuops.ascend.baseline_measure#filter) with the operator's peak only) and records each node of the play again -
    its own findings, C(skipped) when nothing was measured, its C(data) kept. A node without a record of stage 1 is
    left out (C(missing)).
  - Read-only on the nodes; never reports a change. Snapshots and records are written in check mode too.
options:
  step:
    description: Which part; see the description.
    type: str
    required: true
    choices: [node, runs]
  snapshot:
    description: With O(step=node), take and write the node's snapshot; false records the node only.
    type: bool
    default: true
  stage0_chip_names:
    description: With O(step=node), the NPU models stage 0 read on the node, recorded after those of the snapshot.
    type: list
    elements: str
    default: []
  results:
    description: With O(step=runs), the results of the looped command task that ran the benchmark (its C(results)).
    type: list
    elements: dict
    default: []
  host:
    description: With O(step=runs), the node the benchmark ran on; the findings of the runs name it.
    type: str
  warmup:
    description: With O(step=runs), the iterations left out at the start of every run.
    type: int
    default: 10
  seq_length:
    description: With O(step=runs), tokens per sample for tokens/s when the log prints no consumed tokens; null leaves it unknown.
    type: raw
  peak_tflops:
    description: With O(step=runs), the operator's peak TFLOP/s of one NPU (C(baseline_peak_tflops)); null for none.
    type: raw
  warn_pct:
    description: With O(step=runs), the spread of the runs' mean step times above which it is a warning, percent.
    type: raw
    default: 2
  fail_pct:
    description: With O(step=runs), the spread above which it is a failure, percent.
    type: raw
    default: 5
  min_steps:
    description: With O(step=runs), the fewest iterations a run must measure after the warm-up (0 - no minimum).
    type: int
    default: 40
  active:
    description: With O(step=runs), the nodes recorded again; default C(ansible_play_hosts).
    type: list
    elements: str
  profile:
    description:
      - With O(step=runs), the result of M(npuops.ascend.profile_info) read on O(host) (a failed read is kept as a
        warning). Its split, bottleneck verdict and findings go to the record of O(host) (C(data.profile)).
    type: dict
  profile_comm_max_pct:
    description: Communication not overlapped, percent of a step, above which a profiled step warns (the method, 10-15 %).
    type: raw
    default: 15
  profile_aicore_min_pct:
    description: AI Core utilisation, percent of a step, below which a profiled step warns (the method, at least 80 %).
    type: raw
    default: 80
  profile_free_max_pct:
    description: Free (host/IO) time, percent of a step, above which a profiled step warns (the collection's default).
    type: raw
    default: 10
extends_documentation_fragment:
  - npuops.ascend.attributes
  - npuops.ascend.run_store
attributes:
  check_mode:
    support: full
    details:
      - The same reads run in check mode (the benchmark does not), and the snapshot and the records are written.
  diff_mode:
    support: none
  idempotent:
    support: full
    details:
      - Never reports a change.
  platform:
    support: full
    platforms: posix
    description: The modules run on the node; the snapshot and the records are written on the controller.
seealso:
  - module: npuops.ascend.health_info
  - module: npuops.ascend.version_info
  - module: npuops.ascend.stage_gate
"""

EXAMPLES = r"""
# The stage roles pass the run's directory and id (gate_run_dir, gate_run_id); here they are written out.
- name: Take every node's snapshot and record it
  npuops.ascend.stage_baseline:
    step: node
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    stage0_chip_names: "{{ health_check_node.npu.summary.product.chip_names | default([]) }}"
  register: baseline_node

- name: Check the runs of the benchmark and record every node again
  npuops.ascend.stage_baseline:
    step: runs
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    results: "{{ baseline_runs_result.results | default([]) }}"
    host: node01
    warmup: 10
  register: baseline_checked
  run_once: true
"""

RETURN = r"""
snapshot:
  description: With O(step=node), the snapshot written.
  returned: step is node and snapshot is true
  type: str
chip_names:
  description: With O(step=node), the NPU models recorded for the node.
  returned: step is node
  type: list
  elements: str
  sample: [910B3]
record:
  description: With O(step=node), the node's record of stage 1.
  returned: step is node
  type: dict
path:
  description: With O(step=node), the record written.
  returned: step is node
  type: str
measured:
  description: With O(step=runs), whether the runs measured the benchmark.
  returned: step is runs
  type: bool
findings:
  description: With O(step=runs), the findings of the runs and of the profile (they name O(host)).
  returned: step is runs
  type: list
  elements: dict
profile:
  description:
    - With O(step=runs), what the baseline keeps of the profile - C(host), C(dirs), C(steps), C(summary),
      C(bottleneck) (C(layer) compute, communication or host/IO, C(figures), C(over), C(msg)), C(thresholds),
      C(findings); C(error) when it could not be read; null without O(profile).
  returned: step is runs
  type: dict
records:
  description: With O(step=runs), the records written.
  returned: step is runs
  type: list
  elements: str
missing:
  description: With O(step=runs), the nodes of the play without a record of stage 1 (not recorded again).
  returned: step is runs
  type: list
  elements: str
msg:
  description: What was recorded.
  returned: always
  type: str
"""
