#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: hccn_info
short_description: Gather the RoCE port settings of the Ascend NPUs of a node with hccn_tool
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Reads the parameter-plane (RoCE) port of every Ascend NPU of the node with C(hccn_tool -i <N> -<query> -g)
    and returns structured data per device.
  - Devices are read concurrently, the queries of one device one after another (C(hccn_tool) answers
    C(hccn_tool is busy, please try again.) to concurrent calls on the same device; such an answer is retried once).
  - The port settings that M(npuops.ascend.hccn_config) manages are returned in its vocabulary, in RV(devices) and as
    a list in RV(config) that can be passed unchanged as the O(npuops.ascend.hccn_config#module:config) option.
    The parsers' own output for every query is in RV(raw).
  - Conditions the tool reports as errors but that describe the port are returned as data, not failures.
    No IP address (C(no ip was preset)) gives RV(devices.address) and RV(devices.netmask) null; no gateway
    (C(no gateway was preset)) gives RV(devices.gateway) null; no netdetect address (the tool prints the address
    C(0.0.0.0)) gives RV(devices.netdetect) null. A query that cannot be answered right now (C(Link status is down.),
    C(The command is not supported on this product.), C(Optical module is not present.)) gives that query's values
    null and an entry in RV(errors).
  - Any other tool error, C(Command execute failed!) included, fails the task, naming the host, the device, the
    command, its exit code and the tool's text. An unknown device id (C(Get invalid device id.)) fails the task.
  - The exception is V(vnic). A device or driver without the vNIC query (C(Command execute failed!),
    C(Get invalid major cmd.), C(The command is not supported on this product.)) gives RV(devices.vnic) null and an
    entry in RV(errors) whose message says so; the other queries of the device are read as usual.
  - A line of C(hccn_tool) output that the parsers do not recognise is reported as a warning that names the command;
    please report it together with your driver version.
  - Read-only; never reports a change.
options:
  queries:
    description:
      - The C(hccn_tool -g) queries to run on each device.
      - V(link) gives C(link) (C(UP) or C(DOWN)) and V(net_health) gives C(net_health) (for example C(Success),
        C(Init), C(Receive timeout)).
      - V(ip), V(gateway), V(netdetect), V(mtu), V(pfc), V(dscp_to_tc) and V(tls) give the keys of
        M(npuops.ascend.hccn_config) (C(address) and C(netmask), C(gateway), C(netdetect), C(mtu),
        C(pfc_priorities), C(dscp_to_tc), C(tls)).
      - V(pfc_stat), V(optical), V(stat), V(lldp), V(link_stat) and V(vnic) each give a dictionary under their own name.
      - V(vnic) (C(hccn_tool -i <N> -vnic -g)) reads the virtual NIC of the NPU, the address the dies of an Atlas A3
        (910_93) SuperPoD use over HCCS.
      - The default is the cheap core set; V(optical), V(stat), V(lldp), V(pfc_stat), V(link_stat), V(vnic) and
        V(netdetect) are opt-in.
    type: list
    elements: str
    choices: [link, net_health, ip, gateway, netdetect, mtu, pfc, dscp_to_tc, tls, pfc_stat, optical, stat, lldp, link_stat, vnic]
    default: [link, ip, gateway, net_health, tls, pfc, dscp_to_tc, mtu]
  devices:
    description:
      - Device ids (the C(-i) argument of C(hccn_tool); on an Atlas 800T A2 the NPU ids 0 to 7).
      - By default the NPUs listed by C(npu-smi info -l).
    type: list
    elements: int
  fallback_devices:
    description:
      - Device ids to use when O(devices) is not set and C(npu-smi) is missing or fails, for example
        V([0, 1, 2, 3, 4, 5, 6, 7]) on an Atlas 800T A2.
      - When unset, a failed discovery fails the task.
    type: list
    elements: int
extends_documentation_fragment:
  - npuops.ascend.tool_options
  - npuops.ascend.tool_options.group
  - npuops.ascend.attributes
  - npuops.ascend.attributes.info_module
  - npuops.ascend.attributes.actiongroup_npu
attributes:
  platform:
    support: full
    platforms: posix
    description: Linux nodes with the Ascend driver (hccn_tool) installed.
notes:
  - Device keys in RV(devices) and RV(raw) are strings (V('0') ... V('7')), as in every JSON result.
  - O(npu_smi_path) is used only to discover the devices.
  - C(hccn_tool) prints its errors on standard error; its exit code is the internal error code modulo 256
    (for example 4 for an invalid device id, 13 for no IP, 22 for a link that is down).
  - Needs the privileges C(hccn_tool) needs on the node, usually root (C(become=true)).
seealso:
  - module: npuops.ascend.npu_info
  - module: npuops.ascend.hccn_config
"""

EXAMPLES = r"""
- name: Read link, addresses, gateway, health, TLS, PFC, DSCP map and MTU of every NPU port
  npuops.ascend.hccn_info:
  register: hccn

- name: Fail when a port is down
  ansible.builtin.assert:
    that: hccn.devices | dict2items | selectattr('value.link', 'ne', 'UP') | list | length == 0
    fail_msg: "NPU ports down on {{ inventory_hostname }}"

- name: Apply the settings read from the ports again (for example after a node was reimaged)
  npuops.ascend.hccn_config:
    config: "{{ hccn.config }}"

- name: Read optical module data and packet counters of NPU 0 and 1
  npuops.ascend.hccn_info:
    queries: [optical, stat]
    devices: [0, 1]

- name: Read the vNIC addresses of the NPUs of an Atlas A3 node (for a rank table)
  npuops.ascend.hccn_info:
    queries: [vnic]

- name: Read the ports even where npu-smi is not usable (Atlas 800T A2 ids)
  npuops.ascend.hccn_info:
    queries: [link, ip]
    fallback_devices: [0, 1, 2, 3, 4, 5, 6, 7]
"""

RETURN = r"""
count:
  description: Number of devices read.
  returned: success
  type: int
  sample: 8
devices:
  description:
    - One entry per device, keyed by the device id as a string. Only the keys of the requested queries are present.
    - The keys of M(npuops.ascend.hccn_config) (C(address) ... C(tls)) have exactly its vocabulary.
    - A key is null when the port has no such setting, or when the query could not be answered (see RV(errors)).
  returned: success
  type: dict
  contains:
    link:
      description: Link state of the NPU port.
      type: str
      returned: when link is queried
      sample: UP
    net_health:
      description: Result of the netdetect probe (C(Success), C(Init), C(Receive timeout), C(Unreachable), ...).
      type: str
      returned: when net_health is queried
      sample: Success
    address:
      description: IPv4 address of the port; null when none is configured.
      type: str
      returned: when ip is queried
      sample: 10.10.0.10
    netmask:
      description: Netmask of the port; null when no address is configured.
      type: str
      returned: when ip is queried
      sample: 255.255.255.0
    gateway:
      description: Default gateway of the port; null when none is configured.
      type: str
      returned: when gateway is queried
      sample: 11.12.165.1
    netdetect:
      description: The netdetect (probe target) address; null when none is configured.
      type: str
      returned: when netdetect is queried
    mtu:
      description: MTU of the port.
      type: int
      returned: when mtu is queried
      sample: 9000
    pfc_priorities:
      description: The priorities on which PFC is enabled (the bitmap is in RV(raw)).
      type: list
      elements: int
      returned: when pfc is queried
      sample: [4]
    dscp_to_tc:
      description: The DSCP to traffic class map, one entry per DSCP.
      type: list
      elements: dict
      returned: when dscp_to_tc is queried
      sample: [{dscp: 33, tc: 3}]
    tls:
      description: Whether TLS is enabled on the port (certificates are in RV(raw)).
      type: bool
      returned: when tls is queried
    pfc_stat:
      description: PFC pause statistics per priority.
      type: dict
      returned: when pfc_stat is queried
    optical:
      description: Optical module data (presence, temperature, vendor, power and bias per lane).
      type: dict
      returned: when optical is queried
    stat:
      description: Packet counters of the port.
      type: dict
      returned: when stat is queried
    lldp:
      description: LLDP data received from the switch port.
      type: dict
      returned: when lldp is queried
    link_stat:
      description:
        - Link history of the port as C(hccn_tool -link_stat -g) prints it, C(link_up_count), C(link_down_count) and
          C(records) (newest first, each with C(time) and C(status) V(UP) or V(DOWN)). A port that flaps shows growing counts.
        - C(link_down_count) is null with drivers that do not print it.
      type: dict
      returned: when link_stat is queried
      sample: {link_up_count: 2, link_down_count: 1, current_time: "Tue Oct 28 21:46:46 2025",
               records: [{time: "Sun Oct  5 10:13:51 2025", status: UP}]}
    vnic:
      description:
        - The virtual NIC of the NPU as C(hccn_tool -vnic -g) prints it, C(link) (V(UP) or V(DOWN)), C(address) and
          C(netmask); on an Atlas A3 (910_93) SuperPoD the address its dies use over HCCS (the C(device_ip) of a rank table).
        - Null when the device or driver gives no vNIC data (see RV(errors)).
      type: dict
      returned: when vnic is queried
      sample: {link: UP, address: 192.168.2.199, netmask: 255.255.255.0}
config:
  description:
    - The port settings of RV(devices) as a list in the shape of the O(npuops.ascend.hccn_config#module:config)
      option, one entry per device with C(device) and the keys of the requested queries that hccn_config manages.
    - It can be passed unchanged as that option (null values mean "leave as it is").
  returned: success
  type: list
  elements: dict
  sample: [{device: 0, address: 10.10.0.10, netmask: 255.255.255.0, mtu: 9000, pfc_priorities: [4], tls: false}]
raw:
  description:
    - The parsers' output per device and query, keyed by the device id as a string, then by the query name, as
      C(npuops.ascend.hccn_parse) returns it (for example C(pfc) with C(priorities) and C(bitmap), C(tls) with the
      certificate data, C(dscp_to_tc) with C(map)). Queries that gave no output are absent.
  returned: success
  type: dict
  sample: {"0": {pfc: {priorities: [4], bitmap: "0,0,0,0,1,0,0,0"}}}
errors:
  description: Queries that the tool could not answer; the device's values for that query are null.
  returned: success
  type: list
  elements: dict
  contains:
    device:
      description: Device id.
      type: int
    query:
      description: Query name.
      type: str
    cmd:
      description: The command.
      type: str
    rc:
      description: Its exit code.
      type: int
    stdout:
      description: Its standard output.
      type: str
    stderr:
      description: Its standard error.
      type: str
    msg:
      description: What happened, with the tool's own words.
      type: str
  sample:
    - device: 3
      query: pfc
      cmd: /usr/local/Ascend/driver/tools/hccn_tool -i 3 -pfc -g
      rc: 22
      stdout: ""
      stderr: "Execute failed: Link status is down."
      msg: "NPU 3 on node-07: pfc not read: Execute failed: Link status is down. (rc=22)"
cmd:
  description: The failing command, on failure.
  returned: failure
  type: str
  sample: /usr/local/Ascend/driver/tools/hccn_tool -i 9 -ip -g
rc:
  description: The exit code of the failing command, on failure.
  returned: failure
  type: int
  sample: 4
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
from ansible_collections.npuops.ascend.plugins.module_utils._domain.hccn_info import ALL_QUERIES, DEFAULT_QUERIES, gather  # noqa: E402


def main():
    argument_spec = dict(
        queries=dict(type='list', elements='str', choices=ALL_QUERIES, default=list(DEFAULT_QUERIES)),
        devices=dict(type='list', elements='int'),
        fallback_devices=dict(type='list', elements='int'),
    )
    argument_spec.update(tool_options())
    module = build_module('hccn_info', argument_spec, supports_check_mode=True)
    execute(module, lambda warnings: gather(module, module.params, warnings))


if __name__ == '__main__':
    main()
