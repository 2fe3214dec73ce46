#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented by the action plugin plugins/action/stage_regression.py; this file holds its documentation.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: stage_regression
short_description: Stage 9 - measure the runs after tuning, compare them with the stage 1 baseline, record every node
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - The PoD part of stage 9 (the C(regression) role runs it once, C(run_once), after the benchmark's runs); the
    benchmark's launch and runs before it, the Markdown report and the gate's verdict after it, are the role's own
    tasks.
  - O(step=compare) measures the runs (O(results), the looped command task's results) as stage 1 does
    (P(npuops.ascend.baseline_measure#filter)) - MFU against O(peak_tflops) when given, else against the peak the
    stage 1 baseline kept with its source -, checks that the benchmark was launched as stage 1 launched it (O(launch)
    against the baseline's C(launch); a launch that differs and is not named by O(launch_change) is not compared and
    is a failure), compares the measurement with the baseline (a metric better by O(improvement_pct) or more is an
    improvement, one worse by more than O(tolerance_pct) a regression, which fails the stage), and records every node
    of the play (C(<run_dir>/nodes/<node>/stage9.json); the findings name the node that ran the benchmark, C(skipped)
    when nothing was measured). With O(report), it writes C(<run_dir>/stage9-regression/regression.json).
  - When the run kept measurements after its tuning stages (O(step=stage)), O(step=compare) also says what each stage
    bought - each measurement against the one before it (the stage 1 baseline for the first, stage 9's own run last)
    - in C(steps) and in C(regression.json); a stage after which the step time, tokens/s or MFU moved the wrong way by
    more than the larger of O(tolerance_pct) and the spreads of the two measurements is a warning naming that stage.
  - O(step=stage) (C(npuops_measure_each_stage)) measures the runs made right after tuning stage O(stage) as
    O(step=compare) does and keeps the measurement in C(<run_dir>/pod/measure-stage<N>.json); it compares nothing
    and records no node.
  - With O(run_enabled=false) nothing is measured (C(regression_run_enabled is false)) and every node is recorded as
    skipped.
  - Runs in the controller's process and never connects to a node; never reports a change. The records and the report
    are written in check mode too.
options:
  step:
    description: Which part; see the description.
    type: str
    required: true
    choices: [compare, stage]
  stage:
    description: The tuning stage just run (4 to 8), for O(step=stage).
    type: int
  run_enabled:
    description: Whether stage 9 ran the benchmark (C(regression_run_enabled)).
    type: bool
    default: true
  results:
    description: The results of the looped command task that ran the benchmark (its C(results)); empty when it did not run.
    type: list
    elements: dict
    default: []
  host:
    description: The node the benchmark ran on; the findings name it.
    type: str
  command:
    description: The benchmark's command as it was run, for the report.
    type: str
    default: ""
  warmup:
    description: The iterations left out at the start of every run.
    type: int
    default: 10
  min_steps:
    description: The fewest iterations a run must measure after the warm-up (0 - no minimum).
    type: int
    default: 40
  seq_length:
    description: Tokens per sample for tokens/s when the log prints no consumed tokens; null or empty leaves it unknown.
    type: raw
  peak_tflops:
    description: The operator's peak TFLOP/s of one NPU; null or empty takes the peak the stage 1 baseline kept.
    type: raw
  baseline:
    description: The stage 1 baseline (C(baseline.json)), with C(run) when it was kept by this run.
    type: dict
    default: {}
  baseline_path:
    description: Where the baseline was read from, for the messages and the report.
    type: str
  launch:
    description: How stage 9 launched the benchmark (P(npuops.ascend.benchmark_launch#filter) with its probe); omitted when it did not.
    type: dict
  launch_change:
    description: The difference of the launch that is the change under test (C(regression_launch_change)); empty for none.
    type: raw
  improvement_pct:
    description: A metric better by this much or more, percent, is an improvement.
    type: raw
    default: 5.0
  tolerance_pct:
    description: A metric worse by more than this, percent, is a regression.
    type: raw
    default: 2.0
  spread_warn_pct:
    description: The spread of the runs' mean step times above which it is a warning, percent.
    type: raw
    default: 2.0
  spread_fail_pct:
    description: The spread above which it is a failure, percent.
    type: raw
    default: 5.0
  profile:
    description:
      - For O(step=compare), what M(npuops.ascend.profile_info) read of the profiler output stage 9's runs wrote
        (C(regression_profile_dir)); omitted when none. Its split (P(npuops.ascend.profile_info#module)) gives the
        communication share and AI Core use of the step after tuning, compared with those of the stage 1 baseline's
        profile in points (a share that moved the wrong way by more than O(tolerance_pct) points is a warning, never a
        verdict), and the layer that holds the job back before and after (C(comparison.profile)). A profile that
        could not be read is a warning.
    type: dict
  profile_comm_max_pct:
    description: The largest share of a step, percent, communication not overlapped by computing may take (the method, 15).
    type: raw
    default: 15.0
  profile_aicore_min_pct:
    description: The least AI Core utilisation of a step, percent (the method, 80).
    type: raw
    default: 80.0
  profile_free_max_pct:
    description: The largest share of a step, percent, the NPU may be free (neither computing nor communicating).
    type: raw
    default: 10.0
  scaling_results:
    description:
      - For O(step=compare), the results of the looped task that ran the training benchmark once on each rung of nodes
        (C(regression_scaling_command)), each with C(item) the rung's node count (the first nodes of
        O(scaling_hosts)). Each rung is measured as stage 1
        measures a run; its scaling efficiency is its TFLOP/s per NPU over the one-node rung's (the step time ratio
        when the log prints no TFLOP/s), in C(comparison.scaling); the first rung below O(scaling_min_pct) is a
        failure naming the nodes it adds.
    type: list
    elements: dict
    default: []
  scaling_hosts:
    description: The nodes of the run in order; a rung of n nodes ran on the first n.
    type: list
    elements: str
    default: []
  scaling_min_pct:
    description: The least scaling efficiency of a rung, percent (the method - below 70 % at two nodes is the communication gap).
    type: raw
    default: 70.0
  active:
    description: The nodes recorded; default C(ansible_play_hosts).
    type: list
    elements: str
  report:
    description: Write C(<run_dir>/stage9-regression/regression.json).
    type: bool
    default: true
extends_documentation_fragment:
  - npuops.ascend.attributes
  - npuops.ascend.run_store
  - npuops.ascend.attributes.controller
seealso:
  - module: npuops.ascend.stage_baseline
  - module: npuops.ascend.stage_gate
"""

EXAMPLES = r"""
# The regression role passes the run's directory and id (gate_run_dir, gate_run_id) and its variables; here they are
# written out. The baseline is the one stage 1 kept (baseline_store), none when it has not run yet.
- name: Read the baseline stage 1 kept
  ansible.builtin.set_fact:
    baseline_kept: "{{ lookup('ansible.builtin.file', playbook_dir ~ '/npuops-reports/baseline.json', errors='ignore') or '{}' }}"
  run_once: true

- name: Compare the runs after tuning with the stage 1 baseline and record every node
  npuops.ascend.stage_regression:
    step: compare
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    results: "{{ regression_runs_result.results | default([]) }}"
    host: node01
    baseline: "{{ baseline_kept | from_json }}"
    baseline_path: "{{ playbook_dir }}/npuops-reports/baseline.json"
  register: regression_result
  run_once: true

- name: Show the before and after
  ansible.builtin.debug:
    msg: "{{ regression_result.lines }}"
  run_once: true
"""

RETURN = r"""
measurement:
  description: The runs after tuning as P(npuops.ascend.baseline_measure#filter) measures them (C(measured), C(reason), C(runs), C(spread_pct), ...).
  returned: always
  type: dict
launch_check:
  description:
    - The check of the launch against stage 1's (C(comparable), C(same), C(declared), C(differences), C(findings),
      C(before_recorded)); null without O(launch).
  returned: when step is compare
  type: dict
comparison:
  description:
    - The comparison with the baseline - C(host), C(compared), C(reason), C(metrics) (C(metric), C(label), C(unit),
      C(before), C(after), C(change_pct), C(verdict)), C(improved), C(regressed), C(verdict) and C(findings).
  returned: when step is compare
  type: dict
steps:
  description:
    - For O(step=compare), what each tuning stage bought, one row per measurement this run kept after a stage and one
      for stage 9 - C(stage), C(role), C(host), C(against), C(measured), C(reason), C(spread_pct), C(runs_ms),
      C(margin_pct), C(metrics) (C(metric), C(label), C(unit), C(before), C(after), C(change_pct), C(gain_pct)),
      C(worse), C(better) and C(verdict) (improved, unchanged, worse, not run, not compared); empty when the run kept
      none.
  returned: when step is compare
  type: list
  elements: dict
path:
  description: For O(step=stage), the file the measurement was kept in.
  returned: when step is stage
  type: str
lines:
  description: The before and after in lines, for the run's output.
  returned: when step is compare
  type: list
  elements: str
records:
  description: The records written, one per node.
  returned: when step is compare
  type: list
  elements: str
report:
  description: The report written (C(regression.json)).
  returned: when step is compare and report is true
  type: str
msg:
  description: How many nodes were recorded, and the verdict.
  returned: always
  type: str
"""
