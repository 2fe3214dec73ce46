#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented by the action plugin plugins/action/stage_io.py; this file holds its documentation.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: stage_io
short_description: Stage 8 - a node's data pipeline and IO, its DataLoader advice, its findings, record and report
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - The part of stage 8 on each node (the C(io_check) role runs it in one task per node); the PoD's report (from the
    records, M(npuops.ascend.stage_gate) O(npuops.ascend.stage_gate#module:step=read)) and the gate's verdict follow
    once.
  - O(step=node) runs M(npuops.ascend.io_info) on the node with the options below and the play's C(module_defaults) for
    it (C(/dev/shm), vmstat and iostat sampled together, the optional fio read). A result without a measurement is a
    finding of the node, never a failure of the task.
  - The DataLoader advice (P(npuops.ascend.dataloader_advice#filter)) counts the CPUs of the NUMA node each rank is
    bound to, from O(numa) (the layout stage 6 read in this run) or, without it, from M(npuops.ascend.numa_info) run on
    the node; without a layout it counts the CPUs of the node, and says so.
  - The findings - C(/dev/shm) not mounted, smaller than O(shm_min_gb) or more than O(shm_max_used_pct) % used, a mean
    iowait not under O(iowait_max_pct), a mean vmstat wa above O(wa_max_pct) (failures); iowait or wa not measured, a
    fio read below O(fio_min_mb_s), an error of io_info (warnings) - name the node.
  - It writes the node's record of stage 8 to the run's store (C(<run_dir>/nodes/<node>/stage8.json)) with C(data.io)
    (C(shm), C(vmstat), C(iostat), C(fio), C(cpus) as measured) and C(data.dataloader) (the advice), and, when O(report)
    is true, the node's JSON report (C(<run_dir>/stage8-io_check/<node>.json)).
  - Read-only on the nodes; records and reports are written in check mode too.
options:
  step:
    description: Which part; see the description.
    type: str
    required: true
    choices: [node]
  seconds:
    description: The O(npuops.ascend.io_info#module:seconds) of the sampling window.
    type: int
    default: 5
  shm_path:
    description: The O(npuops.ascend.io_info#module:shm_path).
    type: str
    default: /dev/shm
  fio_file:
    description: The O(npuops.ascend.io_info#module:fio_file); unset, fio does not run.
    type: str
  fio_size_mb:
    description: The O(npuops.ascend.io_info#module:fio_size_mb).
    type: int
    default: 1024
  fio_runtime:
    description: The O(npuops.ascend.io_info#module:fio_runtime).
    type: int
    default: 30
  timeout:
    description: The O(npuops.ascend.io_info#module:timeout), also of numa_info.
    type: int
    default: 60
  shm_min_gb:
    description: The smallest C(/dev/shm) that passes, GB (1024 MB); a number, shown in the messages as given.
    type: raw
    default: 1
  shm_max_used_pct:
    description: The largest share of C(/dev/shm) in use that passes, percent; shown as given.
    type: raw
    default: 90
  iowait_max_pct:
    description: The mean iostat C(%iowait) must be under this, percent; shown as given.
    type: raw
    default: 5
  wa_max_pct:
    description: The mean vmstat C(wa) must not exceed this, percent; shown as given.
    type: raw
    default: 2
  fio_min_mb_s:
    description: A fio read bandwidth under this (MB/s) is a warning; 0 reports the bandwidth only.
    type: raw
    default: 0
  numa:
    description:
      - The NUMA layout stage 6 read in this run (a M(npuops.ascend.numa_info) result with C(nodes)); unset or without
        C(nodes), numa_info runs on the node.
    type: dict
  npus_per_node:
    description: NPUs per node (one training rank each), for the DataLoader advice.
    type: int
    default: 8
  dataloader_workers:
    description: The method's range of DataLoader workers per rank, the lower first.
    type: list
    elements: int
    default: [4, 8]
  dataloader_reserved_cpus:
    description: CPUs each rank keeps for its main thread and its task-queue thread.
    type: int
    default: 2
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
      - The same measurement runs in check mode (fio does not), and the record and the report are written.
  diff_mode:
    support: none
  idempotent:
    support: full
    details:
      - Never changes a node.
  platform:
    support: full
    platforms: posix
    description: The modules run on the node; the record and the report are written on the controller.
seealso:
  - module: npuops.ascend.io_info
  - module: npuops.ascend.numa_info
  - module: npuops.ascend.stage_gate
"""

EXAMPLES = r"""
# The stage roles pass the run's directory and id (gate_run_dir, gate_run_id); here they are written out.
- name: Measure every node's IO, advise its DataLoader and record it
  npuops.ascend.stage_io:
    step: node
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    seconds: 5
    iowait_max_pct: 5
  register: io
"""

RETURN = r"""
io:
  description:
    - The result of M(npuops.ascend.io_info) as a task with C(failed_when=false) keeps it (C(failed) false), without its
      warnings (the task's own).
  returned: always
  type: dict
numa:
  description: The result of M(npuops.ascend.numa_info), when it ran (no O(numa) given).
  returned: when numa_info ran
  type: dict
dataloader:
  description: The DataLoader advice, as P(npuops.ascend.dataloader_advice#filter) returns it.
  returned: always
  type: dict
findings:
  description: The node's findings.
  returned: always
  type: list
  elements: dict
record:
  description: The node's record of stage 8.
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
