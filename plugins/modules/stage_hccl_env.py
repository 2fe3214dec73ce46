#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented by the action plugin plugins/action/stage_hccl_env.py; this file holds its documentation.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: stage_hccl_env
short_description: Stage 5 - check the HCCL settings and the file's path, then write, load and record the HCCL env file
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - The three steps of stage 5 (the C(hccl_env) role runs them); the gate's verdict (M(npuops.ascend.stage_gate))
    follows.
  - O(step=check) (on every node, one task, before anything is written anywhere) checks every HCCL setting and the
    file's settings with the rules of the P(npuops.ascend.hccl_env#filter) filter (O(values), O(context), O(file)) and,
    when they are usable, reads what the node has at the file's path with one M(npuops.ascend.path_info) run (the path
    itself without following a link, with the SHA-1 of a regular file, and its directory) and, for a group other than
    root, the C(ansible.builtin.getent) module. The file is sourced by root and by the launch scripts, so each of these is a
    problem that names C(hccl_env_path) or C(hccl_env_group) - a symbolic link at the path (with its target), anything
    else there that is not a regular file, a directory that is missing, is not a directory, does not belong to root or
    that the group or others can write, a group that C(getent group) does not find, and a read that failed. It returns
    the result of the filter (RV(env), RV(problems), RV(advice), RV(algo), RV(file)) and RV(settings_usable), and writes
    the node's check record (C(<run_dir>/nodes/<node>/check5.json), its problems and C(data.settings_usable),
    C(data.file)); it never fails for a problem, so that O(step=check_pod) can name the problems of every node at once
    (the role registers the result as C(hccl_env_result) for the node step).
  - O(step=check_pod) (once) reads the check records of the O(nodes) from the run's store and fails, naming every
    node and problem, when the settings of any node are not usable, or the file cannot be written as asked on any node,
    or a node has no check record of this run (a record of another run id is never used). Nothing connects to a node.
  - O(step=node) (on every node, one task) writes the file from the checked O(result) with the C(ansible.legacy.copy)
    action (its owner, group and mode, never through a link, a backup of the file it replaces; check mode and the diff
    are copy's) - unless the check step found it in place (a regular file with the same SHA-1, owner, group and mode),
    then copy is not run and the result in RV(written) says C(in_place) -, loads it in C(sh) as a launch script
    does (C(. file && env); also in check mode, but not when a dry run would change the file), reads the PFC
    priorities and the DSCP map of the NPU ports with M(npuops.ascend.hccn_info) unless O(port_settings) is given (a
    port that cannot be read is a warning finding), and turns all of it into findings - every variable of RV(env)
    must have the value it was written with once the file is loaded, and HCCL_RDMA_SL (HCCL's default 4 when the file
    does not set it) must be among the PFC priorities of every port and the DSCP that HCCL_RDMA_TC marks
    (HCCL_RDMA_TC / 4, default 132) must map to the C(lossless_tc) of O(intent); each difference fails the gate and
    says which stage or setting to fix. It writes the node's record of stage 5 (C(<run_dir>/nodes/<node>/stage5.json),
    with C(data.changed) and C(data.env)) and, when O(report) is true, the node's JSON report
    (C(<run_dir>/stage5-hccl_env/<node>.json)).
  - A O(result) with problems is refused (nothing is written).
options:
  step:
    description: Which part; see the description.
    type: str
    required: true
    choices: [check, check_pod, node]
  run_dir:
    description:
      - The run's directory on the controller (C(<report dir>/<run id>)), created when missing; the stage roles pass
        C(gate_run_dir). Required.
    type: path
  run_id:
    description:
      - The id of the run, written into every record; 1-128 letters, digits, C(.), C(_) or C(-), starting with a letter
        or digit; the stage roles pass C(gate_run_id). Required.
    type: str
  nodes:
    description: With O(step=check_pod), the nodes whose check records are read (the role passes C(ansible_play_hosts)).
    type: list
    elements: str
  path:
    description: With O(step=check_pod), the file's path, for the message.
    type: str
  values:
    description: With O(step=check), the settings, as the P(npuops.ascend.hccl_env#filter) filter takes them.
    type: raw
  context:
    description: With O(step=check), the facts of the PoD the checks need, as the P(npuops.ascend.hccl_env#filter) filter
      takes them.
    type: raw
  file:
    description: With O(step=check), the file's settings C({path, owner, group, mode}).
    type: raw
  result:
    description: With O(step=node), the result of O(step=check) on this node, without problems.
    type: dict
  check_ports:
    description: With O(step=node), check HCCL_RDMA_SL and HCCL_RDMA_TC against the NPU ports.
    type: bool
    default: true
  port_settings:
    description:
      - With O(step=node), the port settings to check against instead of reading the ports (stage 4 of the same run
        gives the settings it verified, or in a dry run those it would set); given as null, the ports are not checked.
    type: raw
  devices:
    description: With O(step=node), the O(npuops.ascend.hccn_info#module:devices) of the port read.
    type: raw
  timeout:
    description: With O(step=node), the O(npuops.ascend.hccn_info#module:timeout) of the port read.
    type: int
    default: 60
  intent:
    description: With O(step=node), C({lossless_dscp, lossless_tc}) of the PoD's lossless intent.
    type: dict
    default: {}
  report:
    description: With O(step=node), write the node's JSON report beside the record.
    type: bool
    default: true
extends_documentation_fragment:
  - npuops.ascend.attributes
attributes:
  check_mode:
    support: full
    details:
      - The reads run in check mode; the file is not written, and the records and reports are.
  diff_mode:
    support: full
    details:
      - The diff of the file, from the copy action.
  idempotent:
    support: full
  platform:
    support: full
    platforms: posix
    description: The modules run on the node; the records and reports are written on the controller.
seealso:
  - module: npuops.ascend.hccn_info
  - module: npuops.ascend.stage_gate
"""

EXAMPLES = r"""
# The hccl_env role passes its settings and the run's directory and id (gate_run_dir, gate_run_id); here they are
# written out.
- name: Check the settings and what is at the file's path on every node
  npuops.ascend.stage_hccl_env:
    step: check
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    values: {connect_timeout: 1200, buffsize: 200, rdma_sl: 4, rdma_tc: 132, task_queue_enable: 2}
    context: {node_count: "{{ ansible_play_hosts_all | length }}", lossless_priority: 4, lossless_dscp: 33}
    file: {path: /etc/profile.d/npuops-hccl.sh, owner: root, group: root, mode: "0644"}
  register: hccl_env_result

- name: Stop every node when any node has a problem (read from the check records)
  npuops.ascend.stage_hccl_env:
    step: check_pod
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    nodes: "{{ ansible_play_hosts }}"
    path: /etc/profile.d/npuops-hccl.sh
  run_once: true

- name: Write the file, load it, check it against the ports and record the node
  npuops.ascend.stage_hccl_env:
    step: node
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    result: "{{ hccl_env_result }}"
    intent: {lossless_dscp: 33, lossless_tc: 3}
"""

RETURN = r"""
env:
  description: With O(step=check), the rendered environment, C([[NAME, value]]).
  returned: step is check
  type: list
  elements: list
problems:
  description: With O(step=check), every problem of the settings and of the file's path on this node.
  returned: step is check
  type: list
  elements: dict
advice:
  description: With O(step=check), the advice on the settings.
  returned: step is check
  type: list
  elements: str
algo:
  description: With O(step=check), how HCCL_ALGO was decided (C(setting), C(value), C(why)).
  returned: step is check
  type: dict
file:
  description: With O(step=check), the checked file settings C({path, owner, group, mode}); null with a problem.
  returned: step is check
  type: dict
path_state:
  description: With O(step=check) and no problem, what path_info read at the file's path (C(exists) false when
    nothing is there); the node step compares it with the file it would write.
  returned: step is check and there is no problem
  type: dict
settings_usable:
  description: With O(step=check), false when the settings have problems (then nothing was read on the node).
  returned: step is check
  type: bool
check_record:
  description: With O(step=check), the check record written (C(<run_dir>/nodes/<node>/check5.json)).
  returned: step is check
  type: str
written:
  description: With O(step=node), the result of the copy action, or C(in_place) true with C(dest) and C(checksum) when
    the file was in place and copy did not run.
  returned: step is node
  type: dict
loaded:
  description: With O(step=node), the result of the command that loaded the file (absent when it was not loaded).
  returned: step is node and the file was loaded
  type: dict
ports:
  description: With O(step=node), the hccn_info read of the ports (absent when it was not read).
  returned: step is node and the ports were read
  type: dict
findings:
  description: With O(step=node), the node's findings.
  returned: step is node
  type: list
  elements: dict
record:
  description: With O(step=node), the node's record of stage 5.
  returned: step is node
  type: dict
path:
  description: With O(step=node), the record written.
  returned: step is node
  type: str
report:
  description: With O(step=node) and O(report), the JSON report written.
  returned: step is node and report is true
  type: str
msg:
  description: What was checked or recorded.
  returned: always
  type: str
"""
