#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented by the action plugin plugins/action/stage_roce.py; this file holds its documentation.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: stage_roce
short_description: Stage 4 - one node's change of its NPU ports to lossless RoCE, kept in one record
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - The node's part of stage 4 (the C(roce_lossless) role runs it, in C(site.yml) and batch by batch in the change
    window C(playbooks/roce_lossless.yml)). Every step returns the node's record of the change (RV(record)); the role
    registers it and gives it to the next step, so the batch, its restore and its stop read the records of the nodes
    of the batch, never other facts of the nodes.
  - O(step=precheck) reads the links, the addresses, the NPU processes (and LLDP unless O(switch_check=off)) and HCCL's
    values in the env file with M(npuops.ascend.health_info) and sets C(roce_lossless_precheck_health),
    C(roce_lossless_before) and C(roce_lossless_blockers) (what stops the change) on the node; a node that cannot be
    reached is a finding, not a failure. It writes the node's check record of stage 4
    (C(<run_dir>/nodes/<node>/check4.json), with the messages of what stops the change as its problems and, with
    O(lldp), the LLDP data of its NPU ports in C(data.lldp)).
  - O(step=lldp) keeps the node's LLDP data for the switch files - from the check record when the precheck of this
    run read it, else read with M(npuops.ascend.hccn_info) (query C(lldp)) and written to the check record (the switch
    files run alone, C(playbooks/switch_config.yml)). A read that fails fails the node.
  - O(step=neighbours) (once) builds the neighbour map of the PoD (the switch and port of each node's NPUs, the NPUs
    LLDP does not show, the switch ports claimed twice) from the LLDP data in the check records of the O(hosts), and
    fails naming every node without LLDP data of this run.
  - O(step=plan) plans the change with M(npuops.ascend.hccn_config) in check mode (O(want)); when something is to
    change, it chooses the path of the node's restore point on the controller (C(<backup_dir>/hccn-<node>-<run_id>.json)),
    so that the path is known even when the connection breaks during the set. A node whose record already holds a
    failure (refused by the batch's precheck) plans nothing.
  - O(step=change) changes the node only when every node of its batch (O(records)) was planned without a failure. With
    O(steps=together) one M(npuops.ascend.hccn_config) run sets every port in one pass and writes the restore point
    before its first set; with O(steps=stepwise) a full restore point is taken first, then the addresses (with
    O(addresses=apply)), the MTU, the jumbo ping, PFC, the first read of the pause counters and the DSCP map, one
    module run each. Then the jumbo ping (M(npuops.ascend.hccn_ping)) to the same NPU of the ring neighbours already
    at the new MTU (the nodes of O(done_hosts) and of the batch), the read-back (M(npuops.ascend.hccn_info)), and the
    verification of the ports against the O(intent), of HCCL's values in the env file (warnings) and of the PFC pause
    counters between two reads. It sets C(roce_lossless_port_settings), C(roce_lossless_after) and
    C(roce_lossless_switch_findings) on the node.
  - A connection that breaks at any phase, or a module that fails, is kept in the record's C(failure) with the phase
    (C(plan), C(restore_point), C(set), C(address), C(mtu), C(ping), C(pfc), C(pfc_first), C(dscp_to_tc),
    C(read_back), C(verify)) and the message of the stop; the task itself does not fail, so the other nodes of the
    batch go on to their restore and the stop names what each node is.
  - O(step=restore) restores the node from the restore point its set wrote when a node of its batch failed, unless
    O(restore) is false or the connection to the node broke.
  - O(step=refused) records the failure of a node the batch's precheck refused (O(task), O(msg), O(lost), O(reason)).
  - O(step=stop) (once) tells what a stopped batch left on every node, from the records (O(records)) - RV(message),
    RV(nodes) (what each node is now) and RV(results) (the stage 4 line of each node for the run's summary).
  - O(step=record) writes the node's record of stage 4 to the run's store (C(<run_dir>/nodes/<node>/stage4.json)) with
    the node's findings, its switch findings and more O(findings), and, with O(report), the node's JSON
    report C(<run_dir>/stage4-roce_lossless/<node>.json).
  - O(step=pairwise) (once, when the PoD is below the gate after the change) searches for the slow nodes in rounds of
    disjoint pairs of O(hosts), each round one M(npuops.ascend.hccl_bench) run of all its pairs at once
    (O(npuops.ascend.hccl_bench#module:host_groups)) - round 1 the nodes two by two in their order, then every node of a
    slow pair against its own node of a fast pair - until every node is cleared or named, or O(max_rounds). Two slow
    nodes anywhere in 8, 16 or 32 nodes are named in 2 rounds. It returns the verdict of
    P(npuops.ascend.pairwise_culprit#filter) (RV(culprits), RV(slow_pairs), the pairs with their round) and changes
    nothing.
  - O(step=batches) (once, in the change window before any change) cuts O(hosts) into batches that follow failure
    domains - with O(domain=switch) the nodes whose NPU ports share a leaf switch in the LLDP data of their check records
    of this run, with O(domain=group) the first group of O(domain_groups) each node is in (O(groups)) - each domain in
    batches of at most O(size) nodes (RV(order), RV(serial), RV(batches)). A node whose domain is not known, or a size
    the window does not accept, fails the task naming every problem.
  - O(step=pod) (once) keeps the PoD part of stage 4 in the PoD record of the run's store (C(<run_dir>/pod/stage4.json)),
    which the gate and the summary read with the nodes' records. With O(phase=before) (the part before of a run in
    parts) it keeps the cross-node benchmark before the change (O(result)). With O(phase=after) it adds the benchmark
    after the change and the findings of the PoD - the benchmark's, named after the first slow node of O(pairwise) or
    else the first of O(hosts), and the slow nodes with their ports (O(culprit_ports)). With O(ladder) it also measures
    the scaling ladder - the AllReduce on the first 1, 2, 4, ... nodes of O(hosts), one M(npuops.ascend.hccl_bench) run
    per rung with the options of O(bench), the rung of the whole PoD being O(result) - and keeps it in C(data.scaling)
    (rungs with their nodes, busbw and efficiency against the one-node rung), with a finding for the first cross-node
    rung below C(min_pct) of O(ladder) of the one-node rung or its C(intra_min_pct) of the intra-node figure of
    O(expected), named after the node the pairwise search or the ladder points at and the NPU whose port stands out
    in O(culprit_ports). With O(rails) it measures each rail on its own (C(data.rails)), a rail below C(min_pct) of one
    port's line rate or of the median of the rails a finding naming NPU d and the node whose port d stands out in
    O(culprit_ports). It returns RV(findings) and both measurements (RV(bench)).
  - O(step=ecn) (every node, in the PoD part of a run in parts, after O(step=pod)) checks whether the switch marked ECN on
    the node's ports under the benchmark after the change - only when that benchmark reached the gate (the PoD record
    says), it reads the node's CNP counters again (M(npuops.ascend.hccn_info), query V(stat)) and compares them with
    those its record of stage 4 kept after the change (O(cnp)); a port whose counters did not grow is a finding of
    severity O(ecn_severity), added to the node's record (RV(findings)). It changes nothing on the node.
options:
  step:
    description: Which part; see the description.
    type: str
    required: true
    choices: [precheck, lldp, neighbours, plan, change, restore, refused, stop, record, pairwise, batches, pod, ecn]
  record:
    description: The node's record so far (C(roce_lossless_node.record) of the step before); unset, a new record.
    type: raw
  phases:
    description:
      - With O(step=change), run only these phases of the change, in their order (the stepwise change runs one task
        per step); unset, every phase of O(steps).
    type: list
    elements: str
  stop_with_batch:
    description:
      - With O(step=change), run no phase when another node of the batch (O(records)) has already failed, as in a
        play with C(any_errors_fatal) (site.yml); the node is then restored with its batch. Off, each node of a
        serial batch of the change window goes on with its own phases.
    type: bool
    default: false
  plan:
    description: With O(step=precheck), the planned ports of the node; the addresses are checked against them.
    type: list
    elements: dict
  lldp:
    description: With O(step=precheck), keep the LLDP data of the node in its check record for the switch files (read it when the precheck did not).
    type: bool
    default: false
  ecn:
    description:
      - With O(step=record), the CNP counters around the cross-node benchmark (C(first), C(second)) and the
        C(severity) of a port that saw no ECN mark.
    type: dict
  records:
    description:
      - With O(step=change) and O(step=restore), the records of the nodes of the batch, keyed by node; with
        O(step=stop), the records of every node of the play.
    type: dict
    default: {}
  batch:
    description: The nodes of the batch; default C(ansible_play_batch).
    type: list
    elements: str
  hosts:
    description:
      - Every node of the play, in order (the ring of the jumbo ping, the stop); default C(ansible_play_hosts_all).
      - With O(step=neighbours), the nodes of the neighbour map.
      - With O(step=pairwise), the nodes to search, in order (round 1 pairs them two by two).
      - With O(step=batches), the nodes of the window, in order.
    type: list
    elements: str
  mpi_hosts:
    description: With O(step=pairwise) and O(step=pod), the name MPI reaches a node by, keyed by node (C(npuops_mpi_host)); a node not in it by its own name.
    type: dict
    default: {}
  bench:
    description:
      - With O(step=pairwise), the options of M(npuops.ascend.hccl_bench) for every round (npus, sizes, env, paths,
        band, timeout); its O(npuops.ascend.hccl_bench#module:host_groups) are the pairs of the round.
      - With O(step=pod) and O(ladder), the same options for every rung of the scaling ladder below the whole PoD (its
        O(npuops.ascend.hccl_bench#module:hosts) are the rung's nodes).
    type: dict
    default: {}
  threshold:
    description: With O(step=pairwise), the bus bandwidth in GB/s below which a pair is slow (the gate). Required then.
    type: float
  domain:
    description: With O(step=batches), the failure domains - V(switch) (leaf switches in LLDP) or V(group) (O(domain_groups)).
    type: str
    choices: [switch, group]
  domain_groups:
    description: With O(domain=group), the inventory groups that are the failure domains, in the order to change them.
    type: list
    elements: str
    default: []
  groups:
    description: With O(domain=group), the inventory's groups (Ansible's C(groups)).
    type: dict
    default: {}
  size:
    description: With O(step=batches), the most nodes of a batch - a whole number or a percentage of the nodes (C(roce_lossless_batch)).
    type: raw
    default: 1
  max_rounds:
    description: With O(step=pairwise), the most rounds to measure; V(0) (the default) allows one per node.
    type: int
    default: 0
  want:
    description: The desired settings of the node's ports, the O(npuops.ascend.hccn_config#module:config) of the change.
    type: list
    elements: dict
    default: []
  steps:
    description: How the ports are set, C(roce_lossless_steps).
    type: str
    choices: [together, stepwise]
    default: together
  addresses:
    description: Whether the planned addresses are set (C(apply)) or only checked, C(roce_lossless_addresses).
    type: str
    choices: [check, apply, ignore]
    default: check
  allow_busy:
    description: Change ports of NPUs that run processes.
    type: bool
    default: false
  timeout:
    description: The timeout of each tool call on the node, in seconds.
    type: int
    default: 60
  link_timeout:
    description: How long a set waits for each link to come up again, in seconds.
    type: int
    default: 60
  counter_queries:
    description: The queries of the two reads of the pause counters (C(pfc_stat), C(stat)); empty, not read.
    type: list
    elements: str
    default: []
  backup_dir:
    description: The directory of the restore points on the node.
    type: str
    default: /var/lib/npuops/backup
  devices:
    description: The NPU ids of the node.
    type: list
    elements: raw
    default: []
  intent:
    description: The lossless intent (C(mtu), C(lossless_priority), C(lossless_dscp), C(lossless_tc), ...).
    type: dict
    default: {}
  ping:
    description: Ping the ring neighbours at the new MTU.
    type: bool
    default: true
  ping_count:
    description: Pings per target.
    type: int
    default: 3
  ports:
    description: The planned ports of every node (C(device), C(address), C(netmask)), keyed by node (the ping's targets).
    type: dict
    default: {}
  done_hosts:
    description: The nodes changed and verified in earlier batches.
    type: list
    elements: str
    default: []
  before:
    description: The precheck's read of the node's ports (links, addresses, LLDP).
    type: raw
  blockers:
    description: The precheck's findings of the node; its warnings go to the node's findings.
    type: list
    elements: dict
    default: []
  hccl_env:
    description: HCCL's variables in the managed env file, as the precheck read them.
    type: dict
    default: {}
  hccl_env_file:
    description: The path of that file, named in the findings.
    type: str
    default: the HCCL env file
  pfc_max_pause_ms_per_s:
    description: The highest PFC pause time per second on the lossless priority.
    type: float
    default: 100.0
  switch_check:
    description: The severity of the switch findings, or C(off).
    type: str
    choices: [fail, warn, 'off']
    default: fail
  restore:
    description: With O(step=restore) and O(step=stop), whether a failed batch is restored (C(roce_lossless_restore_on_failure)).
    type: bool
    default: true
  task:
    description: With O(step=refused), the name of the task that refused the node.
    type: str
  msg:
    description: With O(step=refused), its message.
    type: str
  lost:
    description: With O(step=refused), whether the connection to the node broke.
    type: bool
    default: false
  reason:
    description: With O(step=refused), what the connection said.
    type: str
  findings:
    description: With O(step=record), more findings for the node's record (the PoD's go to the PoD record, O(step=pod)).
    type: list
    elements: dict
    default: []
  cnp:
    description:
      - With O(step=record), the CNP counters read after the change (an M(npuops.ascend.hccn_info) result with the query
        V(stat)); the record keeps them per NPU with its LLDP neighbour from O(before), for the ECN check of the PoD part
        of a run in parts (O(step=ecn)).
    type: raw
  phase:
    description:
      - With O(step=pod), V(before) or V(after) the change. With O(step=neighbours), V(after) when the node parts of a
        run in parts changed the nodes already (the message of a missing node says so).
    type: str
    choices: [before, after]
  result:
    description: With O(step=pod), the M(npuops.ascend.hccl_bench) result of the cross-node benchmark of O(phase).
    type: raw
  expected:
    description: With O(step=pod), what the gate expects across nodes (P(npuops.ascend.crossnode_busbw_expected#filter)).
    type: raw
  pairwise:
    description: With O(step=pod), the result of O(step=pairwise), when the search ran.
    type: raw
  culprit_ports:
    description: With O(step=pod), the M(npuops.ascend.hccn_info) reads of the slow nodes' ports (a loop's register).
    type: raw
  ladder:
    description:
      - With O(step=pod) and O(phase=after), the scaling ladder - C(enabled) (default true), C(rungs) (node counts; empty,
        the powers of two below the PoD), C(max_rungs) (default 8), C(min_pct) (default 70, percent of the one-node
        rung) and C(intra_min_pct) (default 85, percent of the intra-node figure). Unset, no ladder.
    type: dict
  rails:
    description:
      - With O(step=pod) and O(phase=after), each rail on its own (NPU d of every node of O(hosts) over its own port), one
        M(npuops.ascend.hccl_bench) call with C(rails) and the options of O(bench) at its largest size, one NPU per node -
        C(mode) (V(auto), the default - only when the PoD's benchmark is below its gate or the ladder has a finding;
        V(always); V(off)), C(min_pct) (default 85, percent of one port's line rate and of the median of the rails),
        C(devices) (the NPU ids; empty, every NPU of O(bench)) and C(line_rate) (GB/s of one port, default 25), capped by
        the intra-node figure of O(expected). Kept in C(data.rails) of the PoD record, with its findings. Unset, no rails.
    type: dict
  ecn_severity:
    description: With O(step=ecn), the severity of a port that saw no ECN mark.
    type: str
    choices: [fail, warn]
    default: warn
  switch_findings:
    description: With O(step=record), the node's switch findings (with the ECN check); unset, the record's.
    type: list
    elements: dict
  gate:
    description: With O(step=record), write the record of stage 4 to the run's store.
    type: bool
    default: true
  report:
    description: With O(step=record), write the node's JSON report.
    type: bool
    default: true
extends_documentation_fragment:
  - npuops.ascend.attributes
  - npuops.ascend.run_store
attributes:
  check_mode:
    support: full
    details:
      - The sets run in check mode and report what they would change; the plan always runs in check mode. Records and
        reports are written in check mode too.
  diff_mode:
    support: full
    details:
      - The diffs of the sets (and of the restore).
  idempotent:
    support: full
    details:
      - A node that holds the intent has nothing to plan and changes nothing.
  platform:
    support: full
    platforms: posix
    description: The modules run on the node; the records are kept on the controller.
seealso:
  - module: npuops.ascend.hccn_config
  - module: npuops.ascend.hccn_ping
  - module: npuops.ascend.hccn_info
  - module: npuops.ascend.stage_gate
"""

EXAMPLES = r"""
# The roce_lossless role passes the run's directory and id (gate_run_dir, gate_run_id) and builds the node's want
# from the PoD's lossless intent (roce_lossless_want, roce_lossless_intent); here they are written out.
- name: Set the lossless intent of the PoD and the desired settings of the 8 NPU ports of this node
  ansible.builtin.set_fact:
    roce_intent: {mtu: 9000, lossless_priority: 4, lossless_dscp: 33, lossless_tc: 3}
    roce_want:
      - {device: 0, mtu: 9000, pfc_priorities: [4], dscp_to_tc: [{dscp: 33, tc: 3}]}
      - {device: 1, mtu: 9000, pfc_priorities: [4], dscp_to_tc: [{dscp: 33, tc: 3}]}
      - {device: 2, mtu: 9000, pfc_priorities: [4], dscp_to_tc: [{dscp: 33, tc: 3}]}
      - {device: 3, mtu: 9000, pfc_priorities: [4], dscp_to_tc: [{dscp: 33, tc: 3}]}
      - {device: 4, mtu: 9000, pfc_priorities: [4], dscp_to_tc: [{dscp: 33, tc: 3}]}
      - {device: 5, mtu: 9000, pfc_priorities: [4], dscp_to_tc: [{dscp: 33, tc: 3}]}
      - {device: 6, mtu: 9000, pfc_priorities: [4], dscp_to_tc: [{dscp: 33, tc: 3}]}
      - {device: 7, mtu: 9000, pfc_priorities: [4], dscp_to_tc: [{dscp: 33, tc: 3}]}

- name: Plan the change of this node
  npuops.ascend.stage_roce:
    step: plan
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    want: "{{ roce_want }}"
  register: roce_lossless_node

- name: Change, ping, read back and verify this node
  npuops.ascend.stage_roce:
    step: change
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    record: "{{ roce_lossless_node.record }}"
    records: "{{ dict(ansible_play_batch | zip(ansible_play_batch | map('extract', hostvars)
                                                | map(attribute='roce_lossless_node.record'))) }}"
    want: "{{ roce_want }}"
    devices: [0, 1, 2, 3, 4, 5, 6, 7]
    intent: "{{ roce_intent }}"
  register: roce_lossless_node

- name: Record the node's change and write its JSON report
  npuops.ascend.stage_roce:
    step: record
    run_dir: "{{ playbook_dir }}/npuops-reports/20261205T101500Z"
    run_id: 20261205T101500Z
    record: "{{ roce_lossless_node.record }}"
    intent: "{{ roce_intent }}"
"""

RETURN = r"""
record:
  description:
    - The node's record of stage 4 - C(host), C(steps), C(plan) (the plan's C(before), C(after), C(commands), C(busy),
      C(msg), C(failed)), C(pending), C(restore_point) (C(planned), C(file)), C(change) (the NPU ids changed per
      setting - C(address), C(mtu), C(pfc), C(dscp_to_tc)), C(changed_devices), C(ping) (the ping's summary),
      C(findings), C(switch_findings), C(port_settings), C(failure) (C(task), C(msg), C(stage), C(phase), C(lost),
      C(reason)), C(restore) (the restore's result) and C(done).
  returned: step is plan, change, restore, refused or record
  type: dict
check_record:
  description: With O(step=precheck), and O(step=lldp) when it read LLDP, the check record written.
  returned: step is precheck, or lldp with a read
  type: str
lldp:
  description: With O(step=lldp), the node's LLDP data C({node, devices}) (the devices of M(npuops.ascend.hccn_info)).
  returned: step is lldp
  type: dict
neighbours:
  description:
    - With O(step=neighbours), the neighbour map - C(switches) (by name, with C(chassis_id), C(management_address) and
      C(ports)), C(ports) (C(node), C(npu), C(switch), C(port), C(max_frame_size)), C(unseen) (C(node), C(npu), C(reason))
      and C(conflicts) (C(switch), C(port), C(npus)).
  returned: step is neighbours
  type: dict
plan:
  description: With O(step=plan), what the change ticket shows of the node (absent when the node was not reached).
  returned: step is plan and the node was reached
  type: dict
culprits:
  description: With O(step=pairwise), the slow nodes found, each slow with a node that reaches the gate and in no fast pair.
  returned: step is pairwise
  type: list
  elements: str
culprit:
  description: With O(step=pairwise), the slow node when there is exactly one, else null.
  returned: step is pairwise
  type: str
slow_pairs:
  description: With O(step=pairwise), the slow pairs (C(hosts), C(busbw), C(slow), C(round)), in the order measured.
  returned: step is pairwise
  type: list
  elements: dict
rounds:
  description: With O(step=pairwise), how many rounds were measured.
  returned: step is pairwise
  type: int
findings:
  description: With O(step=pod), the findings of the PoD kept in the PoD record (each names its node); with O(step=ecn),
    those of the node's ECN marks added to its record.
  returned: step is pod or ecn
  type: list
  elements: dict
bench:
  description: With O(step=pod), the cross-node benchmark results by phase (C(before), C(after)) the PoD record holds.
  returned: step is pod
  type: dict
order:
  description: With O(step=batches), the nodes in the order to change them (domain after domain).
  returned: step is batches
  type: list
  elements: str
serial:
  description: With O(step=batches), the number of nodes of each batch, in order (the serial play's list).
  returned: step is batches
  type: list
  elements: int
batches:
  description: With O(step=batches), each batch as C(domain) and C(hosts).
  returned: step is batches
  type: list
  elements: dict
message:
  description: With O(step=stop), the message that stops the window.
  returned: step is stop
  type: str
nodes:
  description:
    - With O(step=stop), what every node is now, keyed by node - C(host), C(state), C(failed), C(changed),
      C(restore_point), C(text).
  returned: step is stop
  type: dict
results:
  description: With O(step=stop), the stage 4 result of every node for the run's summary.
  returned: step is stop
  type: dict
path:
  description: With O(step=record), the record written (when O(gate) is true).
  returned: step is record
  type: str
"""
