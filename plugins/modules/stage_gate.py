#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented by the action plugin plugins/action/stage_gate.py; this file holds its documentation.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: stage_gate
short_description: Record a node's result of a stage in the run's store, and judge the stage over the PoD
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - The gate between two stages and the run's store, in steps that the internal C(gate) role and the stage roles
    run. The store is the run's directory on the controller; the record of one node's stage is
    C(<run_dir>/nodes/<node>/stage<N>.json), its shape is documented in the collection's docs/reference/records.md.
  - O(step=record) (on every node) writes this node's record of the stage - its own findings out of O(findings), its
    status (V(passed), V(failed), or V(skipped) with O(skipped)), its failures and warnings, and O(data).
  - O(step=read) (once, C(run_once)) reads the records of the stage of the nodes still in the play, for a PoD-wide
    step that works on them instead of on other nodes' facts; a node without a usable record is listed in RV(missing)
    (the verdict names it).
  - O(step=pod) (once) writes the PoD record of the stage (C(<run_dir>/pod/stage<N>.json)) with O(findings) over the PoD,
    each naming its node, and O(data). The verdict counts each of its findings for the node it names.
  - O(step=verdict) (once, C(run_once)) reads the records of the stage of every node still in the play from the store,
    never the facts of other nodes. It fails, with one message that names every failing node and NPU, when a record
    holds a failure, when a node that is still in the play has no record of this stage in this run's store (or a
    record of another run, which is never used), and when a node of the play dropped out (unreachable, or a task
    failed on it) - unless O(max_lost) lets the run lose it; a node that dropped out unreachable (not in O(failed))
    is then named once as a warning and kept in C(<run_dir>/nodes/<node>/lost.json) while the run's lost nodes are no
    more than the limit. A node with a lost-node record of this run stays lost at every later gate, also in a part of
    the run that never connected to it. It writes C(<run_dir>/summary.json) from every record of the run, except in a
    node part (O(write_summary)).
  - O(step=plan) (once) writes the plan of the run (C(<run_dir>/pod/plan.json), the nodes of the PoD, O(nodes)) in a
    part that sees the whole inventory (O(part) V(all) or V(pod)); in a node part (O(part=nodes)), whose play holds
    only its slice of the PoD, it reads the plan (none yet before the PoD part of the first stage ran) and fails on the
    plan of another run or when a node of the play is not in it.
  - O(step=reached) (once) returns the nodes of O(nodes) this run goes on with (RV(reached)) and those it already lost
    (RV(lost), their lost-node records). site.yml's settings play puts the first in the group its stage plays run on,
    so that no later part of a run connects to a lost node again.
  - O(step=summary) (once) writes the records of O(results) first, then C(<run_dir>/summary.json), and returns it
    with one line per node per stage.
  - It runs inside the controller's Ansible process and never connects to the node. Records and the summary are
    written in check mode too (with C(check_mode) true); they are reports on the controller, never a change to the PoD.
  - Files are written atomically (a temporary file, then a rename); a link where a directory or the summary of the
    store should be is refused, and records are read without following links.
options:
  step:
    description: What to do; see the description.
    type: str
    required: true
    choices: [record, read, pod, verdict, summary, plan, reached]
  stage:
    description: The stage number, 0-9. Required by every step but O(step=summary).
    type: int
  role:
    description: The role of the stage, for the record and the messages.
    type: str
    default: ""
  findings:
    description:
      - With O(step=record), the findings of the stage, each C({host, device, check, value, expected, severity, msg});
        only those that name this node (C(host)) go into its record, so one PoD-wide list can be passed on every node.
      - With O(step=pod), the findings over the PoD, each naming its node.
    type: list
    elements: dict
    default: []
  skipped:
    description: With O(step=record), the stage did not measure on this node (check mode, or it does not apply).
    type: bool
    default: false
  data:
    description:
      - With O(step=record), what the stage hands to later PoD-wide steps, kept in the node's record as it is.
      - With O(step=pod), what the PoD part computed, kept in the PoD record.
    type: dict
    default: {}
  nodes:
    description:
      - The nodes of the play; default C(ansible_play_hosts_all) (in the PoD part of a run in parts, the nodes of the PoD
        group C(npuops_pod_group)) and the nodes of that group this run lost earlier (their lost-node records).
    type: list
    elements: str
  active:
    description: The nodes still in the play; default C(ansible_play_hosts). A node of O(nodes) not in it is lost.
    type: list
    elements: str
  failed:
    description:
      - With O(step=verdict), the nodes a task failed on; the other nodes that dropped out of the play were unreachable.
      - Default the strategy's list of failed hosts of the play (C(ansible_failed_hosts)); when there is none, every node
        that dropped out counts as failed.
    type: list
    elements: str
  max_lost:
    description:
      - With O(step=verdict), how many unreachable nodes the run may lose and go on without - a whole number, or a
        percentage of O(nodes) such as V(5%) (C(npuops_max_lost_nodes)). V(0) (the default) - a lost node fails the
        gate. Anything else fails the task with the rule.
    type: raw
    default: 0
  part:
    description:
      - The part of the run this task is in (C(npuops_run_part)) - V(all) one run over the PoD, V(nodes) the node part of
        a stage on one slice of the PoD, V(pod) the PoD part over the whole PoD, V(before) the PoD part of stage 4 before
        its node parts (judged like V(pod)). Default the variable C(npuops_run_part), else V(all).
    type: str
    choices: [all, nodes, pod, before]
  write_summary:
    description:
      - With O(step=verdict), write C(<run_dir>/summary.json). Default true, but false in a node part (O(part=nodes)),
        which sees only its slice; the PoD part writes the summary of every node.
    type: bool
  metrics_file:
    description:
      - With O(step=verdict), when the verdict stops the run - the file its metrics go to (Prometheus text format, for
        node_exporter's textfile collector), written atomically from the JSON reports of the run directory, since the
        play of the run's report after the gate does not run. Empty - C(<run_dir>/metrics.prom). Default the variable
        C(npuops_metrics_file). A path that cannot be written is a warning, never the verdict.
    type: str
  results:
    description:
      - "With O(step=summary), results that a PoD-wide step decided for some nodes,
        C({node: {stageN: {stage, role, status, failures, warnings}}}), written as those nodes' records before the
        summary."
      - The stopped change window uses it for every node of the PoD (its nodes that failed are no longer in
        the play). C(status) is one of V(passed), V(failed), V(skipped), V(stopped).
    type: dict
    default: {}
extends_documentation_fragment:
  - npuops.ascend.attributes
  - npuops.ascend.run_store
  - npuops.ascend.attributes.controller
seealso:
  - module: npuops.ascend.report_files
"""

EXAMPLES = r"""
# The stage roles pass the run's directory and id (gate_run_dir, gate_run_id); here they are written out.
- name: Record this node's result of stage 3, with what the PoD step needs
  npuops.ascend.stage_gate:
    step: record
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    stage: 3
    role: hccl_bench
    findings: []
    data:
      peak_busbw_gb_s: 171.2

- name: Read the records of stage 3 of every node for a PoD-wide step
  npuops.ascend.stage_gate:
    step: read
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    stage: 3
  register: bench_records
  run_once: true

- name: Check the gate of stage 3 on every node of the PoD
  npuops.ascend.stage_gate:
    step: verdict
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    stage: 3
    role: hccl_bench
  run_once: true
  any_errors_fatal: true

- name: Write the run's summary
  npuops.ascend.stage_gate:
    step: summary
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
  run_once: true
  register: run_summary
"""

RETURN = r"""
record:
  description: With O(step=record) or O(step=pod), the record written.
  returned: step is record or pod
  type: dict
  sample:
    schema: npuops.ascend/stage-record
    version: 1
    run: 20261205T101500Z
    node: node01
    stage: 0
    role: health_check
    status: passed
    check_mode: false
    time: "2026-12-05T10:16:02Z"
    failures: []
    warnings: ["node01: vm.swappiness is 60, expected at most 10"]
    findings: []
    data: {}
records:
  description:
    - "With O(step=read), C({node: record}) of the nodes still in the play with a usable record of the stage."
    - With O(step=summary), the paths of the records written for O(results).
  returned: step is read or summary
  type: raw
data:
  description: "With O(step=read), C({node: data}) of those records, in the order of the play."
  returned: step is read
  type: dict
missing:
  description: With O(step=read), the nodes still in the play without a usable record of the stage.
  returned: step is read
  type: list
  elements: str
path:
  description: The file written (the record, or the summary), or the run plan read (O(step=plan) in a node part).
  returned: step is record, pod, summary or plan
  type: str
  sample: /srv/npuops-reports/20261205T101500Z/nodes/node01/stage0.json
failures:
  description:
    - With O(step=verdict), the message of every failure of the stage over the PoD, lost nodes and missing records
      included. The warnings are shown as warnings; every finding is in the records.
  returned: step is verdict
  type: list
  elements: str
lost:
  description:
    - With O(step=verdict), the nodes lost at this gate (named in its warnings, recorded as lost).
    - With O(step=reached), the nodes of O(nodes) this run lost earlier.
  returned: step is verdict or reached
  type: list
  elements: str
reached:
  description: With O(step=reached), the nodes of O(nodes) the run goes on with (no lost-node record of this run).
  returned: step is reached
  type: list
  elements: str
plan:
  description: With O(step=plan), the run's plan - C({schema, version, run, nodes, time}).
  returned: step is plan
  type: dict
  sample:
    schema: npuops.ascend/run-plan
    version: 1
    run: pod-20261205
    nodes: [node01, node02, node03, node04]
    time: "2026-12-05T10:15:02Z"
summary:
  description: The path of C(summary.json) (O(step=verdict), unless in a node part), or its content (O(step=summary)).
  returned: step is verdict (not in a node part) or summary
  type: raw
lines:
  description: With O(step=summary), one line per node per stage, such as C(node01       stage0 health_check   passed).
  returned: step is summary
  type: list
  elements: str
msg:
  description: What was recorded, or the gate's verdict (the message the run stops with when it failed).
  returned: always
  type: str
  sample: Stage 0 (health_check) gate passed on 4 node(s).
"""
