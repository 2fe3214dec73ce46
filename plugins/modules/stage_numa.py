#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented by the action plugin plugins/action/stage_numa.py; this file holds its documentation.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: stage_numa
short_description: Stage 6 - the NUMA binding of every NPU, the CPU governor and the rank launcher on a node
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - The steps of stage 6 (the C(numa_bind) role runs them), each one task per node; the gate's verdict
    (M(npuops.ascend.stage_gate)) follows.
  - O(step=check) (the settings play, reads only) checks O(settings) (each against its choices or range, the run user
    never C(root); one sentence per problem naming the variable) and, with O(check_run_user), reads the run user's
    account and the groups on the node (C(getent passwd), C(getent group)) and fails - so that every node stops with
    C(any_errors_fatal) before any change - on an account stage 6 did not create (unless C(run_user_existing) is
    C(use)), one with uid 0 or in a group that gives root, or a missing one when O(run_user_create) is false. It needs
    no run store.
  - O(step=read) (the stage, before any change) makes the same checks (the settings whatever O(check_settings) says,
    unless O(skip_tags) has C(numa_bind_validate)),
    reads the NUMA layout and the NPU affinity (M(npuops.ascend.numa_info)) and, unless C(host_severity) is C(ignore),
    vm.swappiness and the transparent hugepage mode (M(npuops.ascend.host_info)), works out the binding of every NPU
    (P(npuops.ascend.numa_bind_map#filter)) and writes the node's record of stage 6 with the findings of its layout, so
    that the gate can stop every node before the first change.
  - O(step=node) takes the result of O(step=read) in O(read) and does the rest on the node - the AI Core samples
    before (M(npuops.ascend.npu_info), about once a second for C(aicore_sample_seconds)), the CPU governor
    (M(npuops.ascend.cpu_governor)), the run user (M(ansible.builtin.user), only when the read step said it may manage
    it and it is not already in place - an account stage 6 created, with the shell O(run_user_shell) and a home
    directory that exists -, retried O(run_user_retries) times a second apart), the directories (M(ansible.builtin.file)), the binding map
    (the M(ansible.builtin.copy) action) and the launcher (the M(ansible.builtin.template) action of the role's
    C(npu-bind.j2)), both root-owned with a backup of the file they replace - after one M(npuops.ascend.path_info)
    read of all of them and of the run user's home, so that a directory or file already in place (same owner, group, mode and, for a file, the
    SHA-1 of what would be written) is not handed to its action -, the launcher test C(npu-bind 0 -- id -un)
    (M(ansible.builtin.command), also in check mode unless a change it depends on is only predicted), the undoing of
    the map and the launcher this run wrote when the test did not print the run user (put back from the backup, or
    removed), the AI Core samples after, the findings (an NPU missing from the map, a layout that could not be read, a
    governor other than the wanted one, a launcher test that failed with what was put back; vm.swappiness and the
    transparent hugepage mode with the severity C(host_severity); the warnings of the run user check), the node's record
    of stage 6 and, with O(report), its JSON report C(<run_dir>/stage6-numa_bind/<node>.json) on the controller.
  - Check mode, diff and idempotence are those of the modules and actions it runs; the diffs of the parts that change
    are returned together. A part that fails (the user, a directory, the map, the launcher, an undo) fails the task
    with that part's own result; the governor, the layout and the launcher test become findings instead.
options:
  step:
    description: Which part; see the description.
    type: str
    required: true
    choices: [check, read, node]
  run_dir:
    description:
      - The run's directory on the controller (C(<report dir>/<run id>)), created when missing; the role passes
        C(gate_run_dir). Required with O(step=read) and O(step=node); O(step=check) writes no record.
    type: path
  run_id:
    description:
      - The id of the run, written into every record (see M(npuops.ascend.stage_gate)); the role passes C(gate_run_id).
        Required with O(step=read) and O(step=node).
    type: str
  settings:
    description:
      - The settings of stage 6 as the role's C(numa_bind_settings) holds them - C(governor), C(method), C(run_user),
        C(run_user_existing), C(npus_per_node), C(max_swappiness), C(thp_mode), C(host_severity),
        C(aicore_sample_seconds), C(map_path), C(launcher_path), C(launcher_python).
    type: dict
    required: true
  check_settings:
    description: With O(step=check), check O(settings) (O(step=read) always does).
    type: bool
    default: true
  check_run_user:
    description: With O(step=check) and O(step=read), read and check the run user on the node.
    type: bool
    default: true
  run_user_create:
    description: Create the run user when it is missing; when false, a missing run user stops every node.
    type: bool
    default: true
  run_user_shell:
    description: With O(step=node), the login shell of a run user stage 6 creates.
    type: str
    default: /sbin/nologin
  run_user_retries:
    description: With O(step=node), how many more times the creation of the run user is tried, a second apart.
    type: int
    default: 10
  governor_enabled:
    description: With O(step=node), set the governor C(settings.governor) and check it.
    type: bool
    default: true
  visible_devices:
    description: With O(step=node), the map tells the launcher to export C(ASCEND_RT_VISIBLE_DEVICES).
    type: bool
    default: false
  verify:
    description: With O(step=node), run the launcher test.
    type: bool
    default: true
  report:
    description: With O(step=node), write the node's JSON report.
    type: bool
    default: true
  timeout:
    description: Timeout of each vendor-tool call, seconds.
    type: int
    default: 60
  read:
    description: With O(step=node), the result of O(step=read) on this node.
    type: dict
    default: {}
  skip_tags:
    description:
      - With O(step=read) and O(step=node), the tags C(--skip-tags) gave (the role passes C(ansible_skip_tags)); the
        part of a tag is left out - C(numa_bind_validate) the settings check, C(numa_bind_host) the host read,
        C(numa_bind_user) the run user, C(numa_bind_launcher) the run user, the map, the launcher and its test,
        C(numa_bind_governor) the governor, C(numa_bind_aicore) the samples, C(numa_bind_gate) the records and the
        JSON report, C(numa_bind_report) the node's record and its JSON report.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - npuops.ascend.attributes
attributes:
  check_mode:
    support: full
    details:
      - The modules and actions it runs predict their changes; the reads and the launcher test run (the test not when
        the run user, the map or the launcher would change first). Records and reports are written.
  diff_mode:
    support: full
    details:
      - The diffs of the governor, the run user, the directories, the map and the launcher, as their modules show them.
  idempotent:
    support: full
  platform:
    support: full
    platforms: posix
    description: The modules run on the node; the records and the reports are written on the controller.
seealso:
  - module: npuops.ascend.numa_info
  - module: npuops.ascend.cpu_governor
  - module: npuops.ascend.stage_gate
"""

EXAMPLES = r"""
# The numa_bind role builds its settings (numa_bind_settings) from its numa_bind_* variables and passes the run's
# directory and id (gate_run_dir, gate_run_id); here they are written out.
- name: Set the stage 6 settings (the numa_bind role's defaults)
  ansible.builtin.set_fact:
    numa_settings:
      governor: performance
      method: numactl
      run_user: npuops
      run_user_existing: refuse
      npus_per_node: 8
      max_swappiness: 10
      thp_mode: never
      host_severity: warn
      aicore_sample_seconds: 0
      map_path: /etc/npuops/numa-bind.json
      launcher_path: /usr/local/bin/npu-bind
      launcher_python: /usr/bin/python3

- name: Check the settings and the run user (settings play, before any stage)
  npuops.ascend.stage_numa:
    step: check
    settings: "{{ numa_settings }}"
  any_errors_fatal: true

- name: Read the layout, the host and the run user, and record the layout
  npuops.ascend.stage_numa:
    step: read
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    settings: "{{ numa_settings }}"
  register: numa_read
  any_errors_fatal: true

# The launcher is rendered from the numa_bind role's template (npu-bind.j2) and its variables, found only when the
# step runs from that role: a play of its own leaves out the run user, the map, the launcher and its test (as
# --skip-tags numa_bind_launcher does) and sets the governor and records and reports the node.
- name: Set the governor and record the node (the launcher is the role's)
  npuops.ascend.stage_numa:
    step: node
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    settings: "{{ numa_settings }}"
    read: "{{ numa_read }}"
    skip_tags: [numa_bind_launcher]
"""

RETURN = r"""
run_user_plan:
  description:
    - With O(step=check) and O(step=read), what stage 6 does with the run user (C(manage), C(state), C(comment),
      C(problems), C(warnings), and C(account) - C(uid), C(home), C(shell) - of an account that exists); absent when
      the run user was not checked.
  returned: when the run user was checked
  type: dict
numa:
  description: With O(step=read), the result of M(npuops.ascend.numa_info); its keys are also returned at the top.
  returned: step is read
  type: dict
host_info:
  description: With O(step=read), the result of M(npuops.ascend.host_info) (C(skipped) when C(host_severity) is C(ignore)).
  returned: step is read
  type: dict
map:
  description: With O(step=read), the binding, C([{npu, numa_node, cpus}]).
  returned: step is read
  type: list
  elements: dict
  sample: [{npu: 0, numa_node: 6, cpus: 144-167}]
governor:
  description: With O(step=node), the result of M(npuops.ascend.cpu_governor) (empty when not set).
  returned: step is node
  type: dict
user:
  description: With O(step=node), the result of M(ansible.builtin.user) (C(skipped) when the run user is not managed;
    C(in_place) true when it was in place and the user module did not run).
  returned: step is node
  type: dict
map_written:
  description: With O(step=node), the result of writing the map (C(backup_file) names the backup; C(in_place) true
    when it was in place and copy did not run).
  returned: step is node
  type: dict
launcher_written:
  description: With O(step=node), the result of installing the launcher (C(in_place) true when it was in place and
    the template action did not run).
  returned: step is node
  type: dict
launcher_check:
  description: With O(step=node), the result of the launcher test (C(skipped) when it did not run).
  returned: step is node
  type: dict
restored:
  description: With O(step=node), what was undone after a failed launcher test, C([{path, backup, action, mode}]).
  returned: step is node
  type: list
  elements: dict
aicore:
  description: With O(step=node), the AI Core statistics per NPU C({before, after}); null when not sampled.
  returned: step is node
  type: dict
findings:
  description: With O(step=read) (the layout) and O(step=node), the node's findings.
  returned: step is read or node
  type: list
  elements: dict
record:
  description: The node's record of stage 6.
  returned: step is read or node
  type: dict
path:
  description: The record written.
  returned: step is read or node
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
