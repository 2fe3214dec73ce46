#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented by the action plugin plugins/action/stage_health.py; this file holds its documentation.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: stage_health
short_description: Stage 0 - a node's health against the limits, and the ports of the nodes against each other
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - The two parts of stage 0 (the C(health_check) role runs them); the gate's verdict (M(npuops.ascend.stage_gate))
    follows.
  - O(step=node) (on every node, one task) runs M(npuops.ascend.health_info) on the node with the options below and
    the play's C(module_defaults) for it, returns each part it read (a module that could not run at all stands for
    every part), checks the node against the limits (NPU count and health, ECC, temperature, product family, links,
    addresses against O(plan), net_health, huge pages, NPUs on PCIe; swappiness, open-file limit and NUMA nodes as
    warnings), and writes the node's record of stage 0 to the run's store (C(<run_dir>/nodes/<node>/stage0.json)) with
    C(data.ports) (the address, netmask and TLS switch of each port under C(devices), what the PoD part checks) and
    C(data.product) (the product the NPUs showed). With O(report), it writes the node's report on the controller -
    C(<run_dir>/stage0-health_check/<node>.json) (C(host), C(run), C(stage), the parts C(npu), C(ports), C(numa),
    C(host_info), and the C(findings)) and C(<node>.md), rendered from the role's C(report.md.j2) template with the
    task's variables.
  - A part that cannot be read, or a module that cannot run at all, is a finding of the node, never a failure of the
    task, so that the gate names every node at once.
  - O(step=pod) (once, C(run_once)) reads the records of stage 0 of the nodes still in the play from the store - never
    the facts of other nodes - and, when O(ports) is true, checks their ports across the PoD (an address outside
    O(parameter_plane) or used twice, a netmask or TLS switch that differs from most ports); it writes the PoD record
    of stage 0 (C(<run_dir>/pod/stage0.json)) with these findings, each naming its node. A node without a record is
    left out here; the verdict names it. With O(report), the report of each node these findings name is written again
    with them (read back from its C(<node>.json)).
  - Read-only on the nodes; never reports a change. Records and reports are written in check mode too.
options:
  step:
    description: Which part; see the description.
    type: str
    required: true
    choices: [node, pod]
  npu:
    description: With O(step=node), the O(npuops.ascend.health_info#module:npu) option, and check the NPUs.
    type: bool
    default: true
  npu_subset:
    description: With O(step=node), the O(npuops.ascend.health_info#module:npu_subset) of the NPU read.
    type: list
    elements: str
    default: [board, health, ecc, topo, processes]
  health_view:
    description: With O(step=node), the O(npuops.ascend.health_info#module:health_view) of the NPU read.
    type: str
    choices: [all, unhealthy]
    default: unhealthy
  ecc_again:
    description:
      - With O(step=node), read the ECC counters again at the end (O(npuops.ascend.health_info#module:ecc_again)) and
        check that single-bit errors did not grow.
    type: bool
    default: true
  ecc_again_scope:
    description: With O(step=node), the O(npuops.ascend.health_info#module:ecc_again_scope).
    type: str
    choices: [errors, all]
    default: errors
  ports:
    description:
      - Read and check the NPU ports (O(npuops.ascend.health_info#module:ports)); with O(step=pod), check them across
        the PoD.
    type: bool
    default: true
  port_queries:
    description: With O(step=node), the O(npuops.ascend.health_info#module:port_queries) of the port read.
    type: list
    elements: str
    default: [link, ip, net_health, tls]
  host:
    description: With O(step=node), read and check the NUMA layout and the host (O(npuops.ascend.health_info#module:host)).
    type: bool
    default: true
  npus_per_node:
    description: With O(step=node), the devices the node must list in C(npu-smi info) and on PCIe.
    type: int
    default: 8
  max_temp_c:
    description: With O(step=node), the highest NPU temperature in C that passes.
    type: int
    default: 80
  min_hugepages:
    description: With O(step=node), the fewest huge pages that pass.
    type: int
    default: 1
  max_swappiness:
    description: With O(step=node), the highest C(vm.swappiness) without a warning.
    type: int
    default: 10
  min_nofile:
    description: With O(step=node), the lowest open-file limit without a warning.
    type: int
    default: 65535
  product_family:
    description: With O(step=node), the product family the NPUs must show (see docs/products.md); unset, not checked.
    type: str
  plan:
    description: With O(step=node), the planned ports of the node, C([{device, address, netmask}]).
    type: list
    elements: dict
    default: []
  parameter_plane:
    description: With O(step=pod), the network (CIDR) every port address must lie in; unset, not checked.
    type: str
  active:
    description: With O(step=pod), the nodes still in the play; default C(ansible_play_hosts).
    type: list
    elements: str
  report:
    description:
      - Write the node's report (O(step=node)), and add the findings across the PoD to the reports of the nodes they
        name (O(step=pod)).
      - The C(report.md.j2) template is looked up as the template lookup looks it up (the role's C(templates/)).
    type: bool
    default: false
extends_documentation_fragment:
  - npuops.ascend.attributes
  - npuops.ascend.run_store
attributes:
  check_mode:
    support: full
    details:
      - The same read runs in check mode, and the records are written.
  diff_mode:
    support: none
  idempotent:
    support: full
    details:
      - Never reports a change.
  platform:
    support: full
    platforms: posix
    description: The module runs on the node; the records are written on the controller.
seealso:
  - module: npuops.ascend.health_info
  - module: npuops.ascend.stage_gate
"""

EXAMPLES = r"""
# The stage roles pass the run's directory and id (gate_run_dir, gate_run_id); here they are written out.
- name: Read every node, check it and record it
  npuops.ascend.stage_health:
    step: node
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    max_temp_c: 85
    plan: "{{ npuops_npu_ports | default([]) }}"
  register: health

- name: Check the ports across the PoD from the records
  npuops.ascend.stage_health:
    step: pod
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    parameter_plane: "{{ npuops_parameter_plane | default(omit) }}"
  register: health_pod
  run_once: true
"""

RETURN = r"""
npu:
  description: With O(step=node), the NPU part of M(npuops.ascend.health_info) (null when O(npu) is false).
  returned: step is node
  type: dict
npu_again:
  description: With O(step=node), the second read of the ECC counters.
  returned: step is node
  type: dict
ports:
  description: With O(step=node), the ports part.
  returned: step is node
  type: dict
numa:
  description: With O(step=node), the NUMA part.
  returned: step is node
  type: dict
host_info:
  description: With O(step=node), the host part.
  returned: step is node
  type: dict
record:
  description: With O(step=node), the node's record of stage 0.
  returned: step is node
  type: dict
findings:
  description:
    - With O(step=node), the node's findings. With O(step=pod), the findings across the PoD, each naming its node
      (C(host)); empty when O(ports) is false.
  returned: always
  type: list
  elements: dict
  sample: [{host: node03, device: 2, check: ip_conflict, value: 10.20.2.11, expected: unique, severity: fail,
            msg: "node03 NPU 2: address 10.20.2.11 is used by node01 NPU 2, node03 NPU 2"}]
missing:
  description: With O(step=pod), the nodes of the play without a usable record of stage 0 (left out of the check).
  returned: step is pod
  type: list
  elements: str
path:
  description: The record written.
  returned: always
  type: str
report:
  description: With O(step=node) and O(report), the JSON report written (the Markdown one is beside it).
  returned: step is node and report is true
  type: str
reports:
  description: With O(step=pod), the JSON reports written again with the findings across the PoD.
  returned: step is pod
  type: list
  elements: str
msg:
  description: What was recorded or checked.
  returned: always
  type: str
"""
