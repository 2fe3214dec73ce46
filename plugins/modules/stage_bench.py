#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented by the action plugin plugins/action/stage_bench.py; this file holds its documentation.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: stage_bench
short_description: Stage 3 - a node's intra-node AllReduce bus bandwidth, its findings, its record and its report
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - The part of stage 3 on each node (the C(hccl_bench) role runs it in one task per node); the PoD's bandwidth table
    (from the records, M(npuops.ascend.stage_gate) O(npuops.ascend.stage_gate#module:step=read)) and the gate's verdict
    follow once.
  - O(step=node) decides whether the stage applies to the node - its chips are linked by HCCS, from the intra-node link of
    the product stage 0 read (O(intra_node_link)), else the family the PoD declares (O(hccs)). When it does not apply,
    nothing runs on the node and the node's record of stage 3 is C(skipped).
  - When it applies, for O(mode=torch) it copies the role's AllReduce script to O(script_dest) (the copy action, with its
    check mode and diff), then runs M(npuops.ascend.hccl_bench) on the node with the options below and the play's
    C(module_defaults) for it. A bandwidth below the band, or a benchmark that could not run, is a finding of the node,
    never a failure of the task.
  - It writes the node's record of stage 3 to the run's store (C(<run_dir>/nodes/<node>/stage3.json)) with, in C(data),
    C(peak_busbw_gb_s), C(peak_size_bytes), C(ranks), C(below_band), C(skipped) and C(msg) as the benchmark returned
    them and C(measured) (whether it measured), and, when O(report) is true, the node's JSON report
    (C(<run_dir>/stage3-hccl_bench/<node>.json)), the benchmark's result with C(host), C(run) and C(findings).
  - In check mode nothing is measured (the benchmark says so) and the record is C(skipped); records and reports are
    written in check mode too.
options:
  step:
    description: Which part; see the description.
    type: str
    required: true
    choices: [node]
  intra_node_link:
    description:
      - How the node's chips are linked, as stage 0 read its product (C(HCCS), C(PCIe), ...); empty when stage 0 did
        not read it, then O(hccs) decides.
    type: str
    default: ''
  hccs:
    description: Whether the product family the PoD declares links its chips by HCCS (when O(intra_node_link) is empty).
    type: bool
    default: true
  mode:
    description: The O(npuops.ascend.hccl_bench#module:mode) of the benchmark.
    type: str
    choices: [hccl_test, torch]
    default: hccl_test
  npus:
    description: The O(npuops.ascend.hccl_bench#module:npus) that take part.
    type: int
    default: 8
  min_bytes:
    description: The O(npuops.ascend.hccl_bench#module:min_bytes).
    type: str
    default: 8K
  max_bytes:
    description: The O(npuops.ascend.hccl_bench#module:max_bytes).
    type: str
    default: 1G
  step_factor:
    description: The O(npuops.ascend.hccl_bench#module:step_factor).
    type: int
    default: 2
  iters:
    description: The O(npuops.ascend.hccl_bench#module:iters); unset, the tool's default.
    type: int
  warmup_iters:
    description: The O(npuops.ascend.hccl_bench#module:warmup_iters); unset, the tool's default.
    type: int
  env:
    description: The O(npuops.ascend.hccl_bench#module:env) of the run.
    type: dict
    default: {}
  hccl_test_path:
    description: The O(npuops.ascend.hccl_bench#module:hccl_test_path).
    type: str
    default: /usr/local/Ascend/ascend-toolkit/latest/tools/hccl_test/bin/all_reduce_test
  mpirun_path:
    description: The O(npuops.ascend.hccl_bench#module:mpirun_path); unset, searched.
    type: str
  torchrun_path:
    description: The O(npuops.ascend.hccl_bench#module:torchrun_path); unset, searched.
    type: str
  script_dest:
    description: Where the AllReduce script is copied on the node for O(mode=torch) (the module's O(npuops.ascend.hccl_bench#module:script)).
    type: str
    default: /var/lib/npuops/allreduce_bench.py
  theory_busbw:
    description: The O(npuops.ascend.hccl_bench#module:theory_busbw) in GB/s.
    type: float
    default: 196.0
  band:
    description: The O(npuops.ascend.hccl_bench#module:band), two percentages of the theory.
    type: list
    elements: float
    default: [60, 75]
  timeout:
    description: The O(npuops.ascend.hccl_bench#module:timeout) in seconds.
    type: int
    default: 900
  report:
    description: Write the node's JSON report on the controller.
    type: bool
    default: true
extends_documentation_fragment:
  - npuops.ascend.attributes
  - npuops.ascend.run_store
attributes:
  check_mode:
    support: full
    details:
      - Nothing is measured in check mode; the script's copy says what it would change, and the record (skipped) and
        the report are written.
  diff_mode:
    support: full
    details:
      - The diff of the script's copy (O(mode=torch)).
  idempotent:
    support: full
    details:
      - Changes only when the script of O(mode=torch) is copied.
  platform:
    support: full
    platforms: posix
    description: The modules run on the node; the record and the report are written on the controller.
seealso:
  - module: npuops.ascend.hccl_bench
  - module: npuops.ascend.stage_gate
"""

EXAMPLES = r"""
# The stage roles pass the run's directory and id (gate_run_dir, gate_run_id); here they are written out.
- name: Measure every node's bus bandwidth and record it
  npuops.ascend.stage_bench:
    step: node
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    intra_node_link: "{{ health_check_node.npu.summary.product.intra_node_link | default('') }}"
    band: [60, 75]
  register: bench
"""

RETURN = r"""
applies:
  description: Whether stage 3 applies to the node (its chips are linked by HCCS).
  returned: always
  type: bool
result:
  description:
    - The result of M(npuops.ascend.hccl_bench) as a task with C(failed_when=false) keeps it (C(failed) false, the output
      also as C(stdout_lines)); when the stage does not apply, a skipped result (C(skipped) true).
  returned: always
  type: dict
findings:
  description: The node's findings (a bandwidth below the band, the processes that held an NPU, a benchmark that did not run).
  returned: always
  type: list
  elements: dict
record:
  description: The node's record of stage 3.
  returned: always
  type: dict
path:
  description: The record written.
  returned: always
  type: str
report:
  description: The node's JSON report written.
  returned: when O(report) is true
  type: str
msg:
  description: What was recorded.
  returned: always
  type: str
"""
