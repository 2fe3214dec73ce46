#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: hccn_config
short_description: Configure the RoCE ports of the Ascend NPUs (address, gateway, MTU, PFC, DSCP map, TLS) with hccn_tool
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Resource module for the parameter-plane (RoCE) port of each Ascend NPU of a node, driven by C(hccn_tool).
  - Reads the current values of the requested attributes of all requested devices concurrently (only the queries
    those attributes need), compares them with O(config) and builds the exact C(hccn_tool -s) command list.
    When nothing differs no command runs and the task reports no change.
  - Every request is validated before anything is set, and the whole task stops before the first set when any
    device's request is invalid. Address, netmask and gateway are checked with the Python standard library module
    C(ipaddress) on the managed node.
  - Before any set it refuses to touch a device that runs NPU processes (from C(npu-smi info)) unless O(allow_busy=true).
  - With O(backup=true) the before-state of the devices that will change is written as JSON before the first set, and
    its path is returned in RV(backup_file); O(restore_from) applies such a file again, after checking that it was written
    on the same host and that its content passes the same checks as O(config).
  - Devices are changed concurrently; on one device the commands run in a fixed order (IP, gateway, netdetect, MTU,
    PFC, DSCP map, TLS). After an MTU or PFC change the module polls C(hccn_tool -i N -link -g) every 0.5 s until the
    link is C(UP), for at most O(link_timeout) seconds. The ports changed together flap together, so one of them polls
    through the flap and the others then read their own link (each port is reported from its own reading).
  - Exit code 0 is not taken as proof, every value is read back and compared. A device whose value did not take
    effect, whose link did not come back, or whose command failed is reported in RV(failed_devices) and fails the task,
    together with RV(changed_devices) and the backup path.
  - Calls to one device are made one at a time, because C(hccn_tool) answers C(hccn_tool is busy, please try again.)
    (exit 11) to concurrent calls on the same device; such an answer is retried once after a short delay.
options:
  config:
    description:
      - The desired settings, one entry per device. Attributes that are left out are neither read nor changed.
    type: list
    elements: dict
    suboptions:
      device:
        description:
          - Device id, the C(-i) argument of C(hccn_tool) (on an Atlas 800T A2 the NPU ids 0 to 7).
        type: int
        required: true
      address:
        description:
          - IPv4 address of the port. Must be given together with O(config[].netmask); both are set by one
            C(hccn_tool -i N -ip -s address A netmask M).
          - Must be a host address of its subnet (not the network or broadcast address) and unique within O(config).
        type: str
      netmask:
        description:
          - Netmask of the port, dotted (V(255.255.255.0)) or as a prefix length (V(24)).
        type: str
      gateway:
        description:
          - Default gateway of the port, set with C(hccn_tool -i N -gateway -s gateway G).
          - Must lie in the subnet of the port address (the requested one, or the current one when the request has no
            address). The port must have, or get in the same task, an IP address.
        type: str
      netdetect:
        description:
          - Address probed by the port's network health check, set with C(hccn_tool -i N -netdetect -s address A).
        type: str
      mtu:
        description:
          - MTU of the port, 68 to 9702, set with C(hccn_tool -i N -mtu -s size N).
        type: int
      pfc_priorities:
        description:
          - Priorities (0 to 7) on which PFC is enabled; all others are disabled. At most 4 on the 910B.
          - V([]) disables PFC on every priority. Set with C(hccn_tool -i N -pfc -s bitmap b0,b1,...,b7).
        type: list
        elements: int
      dscp_to_tc:
        description:
          - DSCP to traffic class entries to set. DSCP values not listed are left as they are.
          - One C(hccn_tool -i N -dscp_to_tc -s dscp D tc T) per DSCP whose TC differs.
        type: list
        elements: dict
        suboptions:
          dscp:
            description: DSCP value, 0 to 63.
            type: int
            required: true
          tc:
            description:
              - Traffic class, 0 to 3. The 910B tool rejects 4 and higher (C(-dscp_to_tc -s dscp 33 tc 4) exits 10).
            type: int
            required: true
      tls:
        description:
          - Whether TLS is enabled on the port (C(hccn_tool -i N -tls -s enable 0|1)). All ports of a job must agree.
        type: bool
  state:
    description:
      - V(merged) reads the requested attributes and sets those that differ.
      - V(gathered) reads every attribute of the O(config) devices (only C(device) is used), or of the NPUs listed by
        C(npu-smi info -l) when O(config) is not given, and returns them in RV(gathered) in the O(config) shape.
        A query the port cannot answer (for example PFC while the link is down) gives null and a warning.
      - V(rendered) returns the commands for O(config) as if nothing were configured, in RV(rendered), without touching
        the node.
      - V(parsed) reads O(running_config) and returns it in the O(config) shape in RV(parsed), without touching the node.
      - There is no V(replaced) or V(overridden) because the factory defaults of these settings (notably the DSCP map) are not
        published for the 910B, so the module could not state honestly what "not configured" should become.
    type: str
    choices: [merged, gathered, rendered, parsed]
    default: merged
  running_config:
    description:
      - For O(state=parsed) only. Text captured from C(hccn_tool) GET commands, each output preceded by its command
        line, as printed by C(for i in 0 1 2 3 4 5 6 7; do echo "hccn_tool -i $i -ip -g"; hccn_tool -i $i -ip -g; done)
        for the queries C(ip), C(gateway), C(netdetect), C(mtu), C(pfc), C(dscp_to_tc) and C(tls).
      - The command line may carry a path or a C($ ) prompt. Blocks of other queries are ignored with a warning.
    type: str
  restore_from:
    description:
      - Absolute path of a backup file written earlier by this module with O(backup=true). Its before-state becomes the
        request (O(state=merged) only; mutually exclusive with O(config)).
      - The file must have been written on this host (its C(host) field), unless O(allow_other_host=true), and its
        devices must pass the same checks as O(config); otherwise the task fails before anything is read or set.
      - Values that were not set when the backup was taken cannot be cleared with C(hccn_tool); they are left as they
        are and reported as warnings.
      - A restore is what brings a port back after a change left it broken, so a value the port cannot report right
        now (C(Link status is down.)) is set from the backup without comparing, with a warning; a request given in
        O(config) stops before any set instead.
      - When every set of a device answered rc=0 but its link does not come back C(UP) within O(link_timeout), the
        values the port can answer with its link down are read back; when they are the restore point's, the device is
        listed in RV(link_down_devices) and the message says that the values are back and only the link is down (the
        cable, the optical module or the switch port). The task still fails.
      - A failure names the way back - the restore point applied again once the cause is fixed, and with O(backup=true)
        the backup of the state the restore overwrote.
    type: path
  allow_other_host:
    description:
      - Restore a backup written on another host (its C(host) field differs from this host's name), for example after
        a node was renamed. A warning says so.
    type: bool
    default: false
  allow_busy:
    description:
      - Change devices even while NPU processes run on them. Such processes may lose their connections.
      - When V(false) the task refuses to change a device listed with processes by C(npu-smi info), naming the device,
        the pid and the process name.
    type: bool
    default: false
  backup:
    description:
      - Write the current values of the devices that will change to O(backup_dir) before the first set, as
        C(hccn-<host>-<UTC timestamp>.json) with mode 0600.
      - With O(state=gathered), write everything that was gathered (every attribute of every device read) as such a
        file, a restore point taken before a change made by several tasks, which O(restore_from) applies in one
        task. Not written in check mode.
    type: bool
    default: false
  backup_name:
    description:
      - File name of the backup written by O(backup=true), in O(backup_dir), instead of
        C(hccn-<host>-<UTC timestamp>.json). The caller then knows the path of the restore point before the task runs,
        also when it loses the connection to the node during the task (the backup is written before the first set).
      - A plain file name of letters, digits, C(.), C(_) and C(-) that does not start with C(.). A file of that name
        that exists already is never overwritten; the task fails before anything is set.
    type: str
  backup_dir:
    description:
      - Absolute path of the directory for the backup files; created with mode 0700 when missing. A relative path is
        refused, because it would be resolved against the remote login directory.
    type: path
    default: /var/lib/npuops/backup
  restore_point:
    description:
      - A restore point taken earlier (for example by O(state=gathered) with O(backup=true) before a change made by
        several tasks). It is neither read nor written here; a failure names it as the way back (O(restore_from)) when
        this task wrote no backup of its own.
    type: path
  link_timeout:
    description:
      - Seconds to wait for the link to be C(UP) again after an MTU or PFC change, polling every 0.5 s.
      - At least V(1), because the values are read back once the link is up and a port whose link is down cannot answer.
    type: int
    default: 60
  read_after:
    description:
      - Queries of M(npuops.ascend.hccn_info) to read from every device of O(config) at the end of the task, in the
        same module run, returned in RV(read) with the time in RV(read_at). With O(state=merged) only.
      - They are read after the sets and the link wait, or right after the comparison when nothing differs. In check
        mode with changes pending nothing is read, since the ports are not in the state the task would leave them in.
      - Meant for a reading that must follow the change, such as the first of two reads of the PFC pause counters
        whose difference is a rate (V(pfc_stat), V(stat)). It saves a module run per node.
      - A query that cannot be read is an entry of the C(errors) of RV(read), as in M(npuops.ascend.hccn_info), not a failure.
        Nothing is read when the task fails.
    type: list
    elements: str
    choices: [link, net_health, ip, gateway, netdetect, mtu, pfc, dscp_to_tc, tls, pfc_stat, optical, stat, lldp, link_stat, vnic]
    default: []
extends_documentation_fragment:
  - npuops.ascend.tool_options
  - npuops.ascend.tool_options.group
  - npuops.ascend.attributes
  - npuops.ascend.attributes.actiongroup_npu
attributes:
  check_mode:
    support: full
    details: Reads, validates and computes RV(commands) and the diff, then stops; nothing is set and no backup is written
      (also not by O(state=gathered)).
  diff_mode:
    support: full
    details: Returns one before/after diff per changed device (header C(NPU <n> on <host>)).
  idempotent:
    support: full
    details: Only the values that differ are set; a second run with the same O(config) runs no set command.
  platform:
    support: full
    platforms: posix
    description: Linux nodes with the Ascend driver (C(hccn_tool), C(npu-smi)); set commands need root.
notes:
  - The busy check assumes that the NPU id printed by C(npu-smi info) is the C(hccn_tool -i) device id, which holds on
    Atlas 800T/800I A2 (8 NPUs, one chip each).
  - O(hccn_tool_path) is the tool that is run; O(npu_smi_path) is used for the busy check and by O(state=gathered) to
    list the devices.
  - RV(before) and RV(after) hold only the requested attributes; for O(config[].dscp_to_tc) only the requested DSCPs.
  - Needs root (C(become=true)) for the set commands.
seealso:
  - module: npuops.ascend.hccn_info
  - module: npuops.ascend.hccn_ping
"""

EXAMPLES = r"""
- name: Set the parameter-plane addresses and gateway of NPU 0 and 1
  npuops.ascend.hccn_config:
    config:
      - device: 0
        address: 10.20.0.10
        netmask: 255.255.255.0
        gateway: 10.20.0.1
        netdetect: 10.20.0.1
      - device: 1
        address: 10.20.1.10
        netmask: 255.255.255.0
        gateway: 10.20.1.1
        netdetect: 10.20.1.1
    backup: true
  register: npu_net

- name: Enable PFC on priority 4, map DSCP 33 to TC 3, jumbo MTU and TLS off on the NPU ports
  npuops.ascend.hccn_config:
    config:
      - {device: 0, mtu: 9000, pfc_priorities: [4], dscp_to_tc: [{dscp: 33, tc: 3}], tls: false}
      - {device: 1, mtu: 9000, pfc_priorities: [4], dscp_to_tc: [{dscp: 33, tc: 3}], tls: false}
    backup: true
    link_timeout: 90

- name: Read the ports of a reference node
  npuops.ascend.hccn_info:
  register: ports_read

- name: Apply what hccn_info read (its config result has this module's option shape)
  npuops.ascend.hccn_config:
    config: "{{ ports_read.config }}"

- name: Roll back to the values saved by the previous task
  npuops.ascend.hccn_config:
    restore_from: "{{ npu_net.backup_file }}"
    allow_busy: true

- name: Read the current settings of every NPU port
  npuops.ascend.hccn_config:
    state: gathered
  register: ports

- name: Take a restore point of every NPU port before a change made by several tasks
  npuops.ascend.hccn_config:
    state: gathered
    backup: true
  register: restore_point

- name: Show the commands a config would run on a blank node
  npuops.ascend.hccn_config:
    state: rendered
    config:
      - device: 3
        mtu: 9000
        pfc_priorities: [4]

- name: Turn captured hccn_tool output into structured config
  npuops.ascend.hccn_config:
    state: parsed
    running_config: "{{ lookup('ansible.builtin.file', 'node07-hccn.txt') }}"
"""

RETURN = r"""
before:
  description: The requested attributes of the requested devices as read before any change (O(state=merged)).
  returned: state is merged
  type: list
  elements: dict
  sample: [{device: 3, mtu: 1500, pfc_priorities: [], dscp_to_tc: [{dscp: 33, tc: 0}]}]
after:
  description:
    - The same attributes after the task. In check mode the predicted values; otherwise the values read back from the
      ports (null for a device that could not be read back).
  returned: state is merged
  type: list
  elements: dict
  sample: [{device: 3, mtu: 9000, pfc_priorities: [4], dscp_to_tc: [{dscp: 33, tc: 3}]}]
commands:
  description: The set commands that were (or in check mode would be) run, in order per device.
  returned: state is merged
  type: list
  elements: str
  sample: ["hccn_tool -i 3 -mtu -s size 9000", "hccn_tool -i 3 -pfc -s bitmap 0,0,0,0,1,0,0,0"]
changed_devices:
  description: Devices on which at least one set command succeeded (their state was modified).
  returned: state is merged
  type: list
  elements: int
  sample: [0, 1, 2]
failed_devices:
  description: Devices whose command failed, whose link did not come back, or whose value did not take effect.
  returned: state is merged
  type: list
  elements: int
  sample: [3]
link_down_devices:
  description:
    - With O(restore_from), the devices whose values of the restore point were set and read back (those the port can
      answer with its link down) but whose link did not come back C(UP) within O(link_timeout). They are in
      RV(failed_devices) too.
  returned: state is merged
  type: list
  elements: int
  sample: [5]
errors:
  description: One entry per failed device with the message and the failing command, exit code and output.
  returned: when devices failed
  type: list
  elements: dict
  sample:
    - device: 3
      msg: "NPU 3 on node-07: PFC bitmap still 0,0,0,0,0,0,0,0 after setting priorities 4 (hccn_tool rc=0). ..."
      cmd: /usr/local/Ascend/driver/tools/hccn_tool -i 3 -pfc -g
      rc: 0
      stdout: ""
      stderr: ""
backup_file:
  description:
    - Path of the backup written before the first set (O(state=merged)), or of the restore point written by
      O(state=gathered) with O(backup=true); null when none was written.
  returned: state is merged or gathered
  type: str
  sample: /var/lib/npuops/backup/hccn-node-07-20260101T120000Z.json
read:
  description:
    - What O(read_after) read, in the shape of the M(npuops.ascend.hccn_info) result (C(devices) keyed by device
      id as a string, C(errors), C(config), C(raw)).
  returned: when O(read_after) is given, the task did not fail, and it did not stop at a check-mode plan of a change
  type: dict
  sample: {count: 1, devices: {"3": {pfc_stat: {counters: {rx_pfc4_duration_ms: 3.25, tx_pfc4_duration_ms: 12.5}}}}, errors: []}
read_at:
  description: When the O(read_after) reading started, in seconds since the epoch (UTC).
  returned: when RV(read) is
  type: float
  sample: 1767268800.125
busy:
  description: NPU processes found on devices that would change (check mode, or with O(allow_busy=true)).
  returned: when processes were found
  type: list
  elements: dict
  sample: [{device: 3, pid: 12345, name: python3}]
gathered:
  description: Current settings per device in the O(config) shape (the full DSCP map).
  returned: state is gathered
  type: list
  elements: dict
rendered:
  description: The commands O(config) renders to, as if nothing were configured.
  returned: state is rendered
  type: list
  elements: str
  sample: ["hccn_tool -i 3 -mtu -s size 9000"]
parsed:
  description: O(running_config) in the O(config) shape.
  returned: state is parsed
  type: list
  elements: dict
cmd:
  description:
    - The failing command, when a read or the busy check failed.
    - When devices failed while applying, the command of the first failed device; RV(errors) has one per device.
  returned: failure
  type: str
rc:
  description: Exit code of the failing command.
  returned: failure
  type: int
stdout:
  description: Standard output of the failing command.
  returned: failure
  type: str
stderr:
  description: Standard error of the failing command.
  returned: failure
  type: str
"""

from ansible_collections.npuops.ascend.plugins.module_utils._argspec import build_module, execute, tool_options  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._domain.hccn_info import ALL_QUERIES  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._domain.port_config import PortConfig, backup_name_problem  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._domain.port_table import PORTS  # noqa: E402


def main():
    argument_spec = dict(
        config=dict(type='list', elements='dict', options=PORTS.argspec()),
        state=dict(type='str', default='merged', choices=['merged', 'gathered', 'rendered', 'parsed']),
        running_config=dict(type='str'),
        restore_from=dict(type='path'),
        allow_other_host=dict(type='bool', default=False),
        allow_busy=dict(type='bool', default=False),
        backup=dict(type='bool', default=False),
        backup_dir=dict(type='path', default='/var/lib/npuops/backup'),
        backup_name=dict(type='str'),
        link_timeout=dict(type='int', default=60),
        restore_point=dict(type='path'),
        read_after=dict(type='list', elements='str', choices=ALL_QUERIES, default=[]),
    )
    argument_spec.update(tool_options())
    module = build_module(
        'hccn_config', argument_spec,
        mutually_exclusive=[['config', 'restore_from'], ['running_config', 'config'], ['running_config', 'restore_from']],
        required_if=[['state', 'parsed', ['running_config']], ['state', 'rendered', ['config']]],
        supports_check_mode=True,
    )
    params = module.params
    if params['restore_from'] and params['state'] != 'merged':
        module.fail_json(msg='hccn_config: restore_from works with state=merged only (got state=%s).' % params['state'])
    if params['backup'] and not params['backup_dir'].startswith('/'):
        module.fail_json(msg='hccn_config: backup_dir must be an absolute path (got %s); a relative one would be resolved '
                             'against the remote login directory.' % params['backup_dir'])

    problem = backup_name_problem(params['backup_name'])
    if problem:
        module.fail_json(msg='hccn_config: %s. Nothing was changed.' % problem)

    def work(warnings):
        resource = PortConfig(module, PORTS)
        try:
            return resource.run()
        finally:
            warnings.extend(resource.warnings)

    execute(module, work)


if __name__ == '__main__':
    main()
