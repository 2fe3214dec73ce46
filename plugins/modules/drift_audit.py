#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented by the action plugin plugins/action/drift_audit.py; this file holds its documentation.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: drift_audit
short_description: The drift audit - every setting the collection manages on a node against the intent and the last run
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - The task of C(playbooks/audit.yml) (role C(audit)). It changes nothing on any node.
  - O(step=node) reads the node in four module runs - M(npuops.ascend.health_info) (the NPU ports, the host settings,
    the HCCL env file and O(hccn_conf)), M(npuops.ascend.path_info) (the files of stages 5-7 with their SHA-1),
    M(npuops.ascend.cpu_governor) in check mode and, for a MindIE node, M(npuops.ascend.mindie_config) in check mode -
    and compares what it read with O(want) (the intent of stage 4), O(governor), O(max_swappiness), O(thp_mode) and
    the newest applied records (not a dry run, status C(passed)) of stages 4-7 of the node in O(report_dir) - the
    variables of the HCCL env file, the files (C(data.files)) and MindIE's managed settings the last run wrote.
  - Every finding names the node, the NPU (or none), the setting, what was expected and what was found, and the playbook
    that brings it back (C(playbooks/roce_lossless.yml) for the ports, C(playbooks/site.yml --tags hccl_env),
    C(numa_bind) or C(mindie_config) for the others). It writes the node's audit record
    C(<report_dir>/audit/<audit_id>/nodes/<node>.json) and never fails for drift.
  - It also states what the driver keeps across a reboot - the port settings with a key in O(hccn_conf)
    (C(address_N), C(netmask_N), ...), which the driver restores at boot; MTU, PFC and the DSCP map have none, so a
    reboot brings them back at the driver defaults.
  - O(step=pod) (once) reads the audit records of O(nodes) (never their facts), writes C(audit.json) and C(audit.md)
    beside them, and fails naming every drifted setting, or a node without an audit record.
options:
  step:
    description: The node's audit (C(node)), or the PoD's verdict from the node records (C(pod), once).
    type: str
    required: true
    choices: [node, pod]
  report_dir:
    description: The report directory (C(npuops_report_dir)) that holds the runs to compare with and the audits.
    type: path
    required: true
  audit_id:
    description: The audit's id (the directory name of its records under C(<report_dir>/audit/)).
    type: str
    required: true
  nodes:
    description: The nodes whose audit records O(step=pod) reads.
    type: list
    elements: str
    default: []
  devices:
    description: The NPU ids whose ports are read.
    type: list
    elements: int
    default: []
  want:
    description:
      - The intended port settings, an M(npuops.ascend.hccn_config) C(config) list (P(npuops.ascend.roce_desired_config#filter)
        of the inventory's intent, as stage 4 computes it). Empty - the ports are not audited (a product without RoCE
        ports).
    type: list
    elements: dict
    default: []
  intent:
    description:
      - The lossless intent of stage 4 (C(roce_lossless_intent) - C(lossless_priority), C(lossless_dscp), ...). With
        O(want), the C(HCCL_RDMA_SL) and C(HCCL_RDMA_TC) of the HCCL env file are checked against its PFC priority and
        DSCP (the inventory may have changed since the last applied run).
    type: dict
    default: {}
  hccl_env_file:
    description: The HCCL env file of stage 5 (an absolute path). Its variables are compared with the last applied record.
    type: str
  hccn_conf:
    description: The driver's file of the port settings it restores at boot.
    type: str
    default: /etc/hccn.conf
  governor:
    description: The CPU governor stage 6 sets; not given - the governor is not audited.
    type: str
  max_swappiness:
    description: The highest C(vm.swappiness) stage 6 accepts; not given - not audited.
    type: int
  thp_mode:
    description: The transparent huge page mode stage 6 expects; not given - not audited.
    type: str
  model_index:
    description: The model of MindIE's C(ModelConfig) list whose settings stage 7 manages.
    type: int
    default: 0
  timeout:
    description: Seconds each tool call on the node may take.
    type: int
    default: 60
  fail_on_drift:
    description:
      - (pod) Fail when a node drifted or was not audited. False for an audit that only reports (its verdict in
        RV(status), RV(msg), C(audit.md) and the metrics).
    type: bool
    default: true
  metrics_file:
    description:
      - (pod) Write the audit's metrics in the Prometheus text format (docs/metrics.md) - per node the drifted settings
        and whether it was read - atomically to this file (an absolute path ending in C(.prom) in a directory that
        exists), or to C(metrics.prom) beside C(audit.json) when empty. Not given - no metrics.
    type: str
extends_documentation_fragment:
  - npuops.ascend.attributes
attributes:
  check_mode:
    support: full
    details:
      - It only reads the nodes, in check mode as well; its records are written on the controller.
  diff_mode:
    support: none
  idempotent:
    support: full
    details:
      - Never reports a change.
  platform:
    support: full
    platforms: posix
    description: The modules run on the node; the audit records are written on the controller.
seealso:
  - module: npuops.ascend.health_info
  - module: npuops.ascend.path_info
  - module: npuops.ascend.cpu_governor
  - module: npuops.ascend.mindie_config
"""

EXAMPLES = r"""
# The audit role passes the stage roles' intent (roce_lossless_want, numa_bind_governor, ...); here it is written out.
- name: Audit this node against the lossless intent and the last applied run in the report directory
  npuops.ascend.drift_audit:
    step: node
    report_dir: "{{ playbook_dir }}/npuops-reports"
    audit_id: audit-20261206T080000Z
    devices: [0, 1, 2, 3, 4, 5, 6, 7]
    want: "{{ range(8) | npuops.ascend.roce_desired_config({'mtu': 9000, 'lossless_priority': 4, 'lossless_dscp': 33,
                                                             'lossless_tc': 3}) }}"
    hccl_env_file: /etc/profile.d/npuops-hccl.sh
    governor: performance
    max_swappiness: 10
    thp_mode: never

# A scheduled audit that only reports: the metrics file for node_exporter's textfile collector, no failed play
- name: Say whether any node drifted, from the node records of this audit
  npuops.ascend.drift_audit:
    step: pod
    report_dir: "{{ playbook_dir }}/npuops-reports"
    audit_id: audit-20261206T080000Z
    nodes: "{{ ansible_play_hosts_all }}"
    metrics_file: ""
    fail_on_drift: false
  register: audit
  run_once: true

- name: Show the verdict
  ansible.builtin.debug:
    msg: "{{ audit.msg }}"
  run_once: true
"""

RETURN = r"""
findings:
  description:
    - (node) The node's findings, C({host, device, check, value, expected, severity, msg, fix, stage}) - C(check) is the
      setting, C(value) what was found, C(fix) the playbook that brings it back. C(fail) is drift; C(warn) an intent that
      changed since the last applied run.
  returned: step=node
  type: list
  elements: dict
compared:
  description: (node) Per stage 4-7, the run whose record was compared, or why none was.
  returned: step=node
  type: dict
persistence:
  description:
    - (node) What O(hccn_conf) keeps across a reboot - C(path), C(exists), C(kept) (setting to the NPUs with a key),
      C(lost) (managed settings without a key) and C(msg). Null when the ports are not audited.
    - (pod) The C(msg) of every node's.
  returned: always
  type: raw
status:
  description: C(clean) or C(drift).
  returned: always
  type: str
drifted:
  description: (pod) The nodes with drift.
  returned: step=pod
  type: list
  elements: str
path:
  description: The audit record (node) or C(audit.json) (pod) written.
  returned: always
  type: str
report:
  description: (pod) C(audit.md) written.
  returned: step=pod
  type: str
metrics:
  description: (pod) The metrics file written, null without O(metrics_file).
  returned: step=pod
  type: str
msg:
  description: The node's count of drifted settings, or the PoD's verdict naming every one.
  returned: always
  type: str
"""
