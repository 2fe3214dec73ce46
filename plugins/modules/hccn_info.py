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
  - All (device x query) calls run concurrently in a bounded pool, so one task reads the whole node.
  - Conditions the tool reports as errors but that describe the port are returned as data, not failures.
    No IP address (C(no ip was preset)) gives RV(devices.address) and RV(devices.netmask) null; no gateway
    (C(no gateway was preset)) gives RV(devices.gateway) null. A query that cannot be answered right now
    (C(Link status is down.), C(The command is not supported on this product.), C(Optical module is not present.),
    and C(Command execute failed!) for V(netdetect), which a port without a netdetect address may print)
    gives that query's value null and an entry in RV(errors).
  - Any other tool error fails the task, naming the host, the device, the command, its exit code and the tool's text.
    An unknown device id (C(Get invalid device id.)) fails the task.
  - A line of C(hccn_tool) output that the parsers do not recognise is reported as a warning that names the command;
    please report it together with your driver version.
  - Read-only; never reports a change.
options:
  queries:
    description:
      - The C(hccn_tool -g) queries to run on each device.
      - V(link) gives C(link) (C(UP) or C(DOWN)); V(ip) gives C(address) and C(netmask); V(gateway) gives C(gateway);
        V(net_health) gives C(net_health) (for example C(Success), C(Init), C(Receive timeout)); V(mtu) gives C(mtu);
        V(netdetect) gives C(netdetect) (the detection address).
      - V(tls), V(pfc), V(pfc_stat), V(dscp_to_tc), V(optical), V(stat) and V(lldp) each give a dictionary under
        their own name.
      - The default is the cheap core set; V(optical), V(stat), V(lldp), V(pfc_stat) and V(netdetect) are opt-in.
    type: list
    elements: str
    choices: [link, ip, gateway, net_health, tls, pfc, pfc_stat, dscp_to_tc, mtu, netdetect, optical, stat, lldp]
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
  hccn_tool_path:
    description:
      - Path of the C(hccn_tool) binary, or of the directory holding it.
      - When set, only this place is used. When unset, C(/usr/local/Ascend/driver/tools), C(/usr/local/sbin),
        C(/usr/local/bin) and then E(PATH) are searched.
    type: path
  npu_smi_path:
    description:
      - Path of the C(npu-smi) binary (or its directory), used only to discover the devices.
      - Searched like O(hccn_tool_path) when unset.
    type: path
  timeout:
    description:
      - Seconds each tool call may take before it is stopped (through coreutils C(timeout -k 5)).
      - V(0) disables the limit. Without the C(timeout) binary on the node calls are not limited.
    type: int
    default: 30
  workers:
    description:
      - Maximum number of tool calls running at the same time.
    type: int
    default: 8
attributes:
  check_mode:
    support: full
    description: The module only reads; it runs the same read-only commands in check mode.
  diff_mode:
    support: none
    description: Nothing is changed, so there is no diff.
  platform:
    support: full
    platforms: posix
    description: Linux nodes with the Ascend driver (hccn_tool) installed.
notes:
  - Device keys in RV(devices) are strings (V('0') ... V('7')), as in every JSON result.
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

- name: Read optical module data and packet counters of NPU 0 and 1
  npuops.ascend.hccn_info:
    queries: [optical, stat]
    devices: [0, 1]

- name: Read the ports even where npu-smi is not usable (Atlas 800T A2 ids)
  npuops.ascend.hccn_info:
    queries: [link, ip]
    fallback_devices: [0, 1, 2, 3, 4, 5, 6, 7]
"""

RETURN = r"""
devices:
  description:
    - One entry per device, keyed by the device id as a string. Only the keys of the requested queries are present.
    - A key is null when the port has no such setting, or when the query could not be answered (see RV(errors)).
  returned: success
  type: dict
  contains:
    link:
      description: Link state of the NPU port.
      type: str
      returned: when link is queried
      sample: UP
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
    net_health:
      description: Result of the netdetect probe (C(Success), C(Init), C(Receive timeout), C(Unreachable), ...).
      type: str
      returned: when net_health is queried
      sample: Success
    mtu:
      description: MTU of the port.
      type: int
      returned: when mtu is queried
      sample: 9000
    netdetect:
      description: The netdetect (probe target) address.
      type: str
      returned: when netdetect is queried
    tls:
      description: TLS switch and certificate data (C(enabled) and the parser's other fields).
      type: dict
      returned: when tls is queried
    pfc:
      description: PFC priorities (C(priorities), a list of ints) and C(bitmap) (C('0,0,0,0,1,0,0,0')).
      type: dict
      returned: when pfc is queried
      sample: {priorities: [4], bitmap: "0,0,0,0,1,0,0,0"}
    pfc_stat:
      description: PFC pause statistics per priority.
      type: dict
      returned: when pfc_stat is queried
    dscp_to_tc:
      description: DSCP to traffic class map (C(map), DSCP -> TC).
      type: dict
      returned: when dscp_to_tc is queried
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
errors:
  description: Queries that the tool could not answer; the device's value for that query is null.
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

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.npuops.ascend.plugins.module_utils._parsers import hccn_tool as hccn_parsers  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import npu_smi as npu_parsers  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._runner import (  # noqa: E402
    DEFAULT_TIMEOUT,
    DEFAULT_WORKERS,
    Runner,
    ToolError,
    cmd_to_text,
    find_tool,
    host_name,
    parse_output,
    sentence,
    tool_output,
    unparsed_warning,
)

# query -> the flat keys it contributes to a device entry; queries not listed here are nested under their name.
FLAT_KEYS = {
    'link': ('link',),
    'ip': ('address', 'netmask'),
    'gateway': ('gateway',),
    'net_health': ('net_health',),
    'mtu': ('mtu',),
    'netdetect': ('netdetect',),
}
ALL_QUERIES = ['link', 'ip', 'gateway', 'net_health', 'tls', 'pfc', 'pfc_stat', 'dscp_to_tc', 'mtu', 'netdetect',
               'optical', 'stat', 'lldp']
DEFAULT_QUERIES = ['link', 'ip', 'gateway', 'net_health', 'tls', 'pfc', 'dscp_to_tc', 'mtu']

# Tool texts that describe the port (value null, no error) ...
NOT_CONFIGURED = (
    ('ip', 'no ip was preset'),
    ('gateway', 'no gateway was preset'),
)
# ... tool texts that leave this query unanswered (value null, entry in errors); None = any query ...
UNANSWERED = (
    (None, 'Link status is down'),
    (None, 'is not supported on this product'),
    (None, 'Optical module is not present'),
    # the generic DSMI failure; for netdetect it is what a device without a netdetect address is expected to print
    ('netdetect', 'Command execute failed'),
)
# ... and hints for the texts that fail the task. First match wins.
HCCN_HINTS = (
    ('invalid device id', 'The device id does not exist on this host: compare the devices option with `npu-smi info -l`.'),
    ('device is not exist', 'The device id does not exist on this host: compare the devices option with `npu-smi info -l`.'),
    ('permission denied', 'Run the task as root (become: true).'),
    ('is busy', 'Another hccn_tool call holds the device: run the task again, or lower workers.'),
    ('invalid major cmd', 'This hccn_tool does not know that query: remove it from queries or update the driver.'),
)
DEFAULT_HINT = 'Run the command on the host to see the full error, and check the driver and the port with `npu-smi info`.'


def query_argv(hccn_tool, device, query):
    return [hccn_tool, '-i', str(device), '-' + query, '-g']


def classify(query, result):
    """Decide what a finished call means: 'ok', 'not_configured', 'unanswered' or 'failed'."""
    rc, out, err = result
    if rc == 0:
        return 'ok'
    text = '%s\n%s' % (err, out)
    for name, needle in NOT_CONFIGURED:
        if name == query and needle in text:
            return 'not_configured'
    for name, needle in UNANSWERED:
        if name in (None, query) and needle in text:
            return 'unanswered'
    return 'failed'


def hint_for(text):
    for needle, hint in HCCN_HINTS:
        if needle.lower() in text.lower():
            return hint
    return DEFAULT_HINT


def empty_value(query):
    """The device entry fragment for a query without a value."""
    if query in FLAT_KEYS:
        return dict.fromkeys(FLAT_KEYS[query])
    return {query: None}


def project(query, parsed):
    """The device entry fragment for a parsed query."""
    if query in FLAT_KEYS:
        return {key: parsed.get(key) for key in FLAT_KEYS[query]}
    return {query: parsed}


def discover_devices(module, runner, params):
    """Device ids to query: the option, else `npu-smi info -l`, else fallback_devices."""
    if params['devices']:
        return list(params['devices']), []
    try:
        npu_smi = find_tool(module, 'npu-smi', params['npu_smi_path'])
        argv = [npu_smi, 'info', '-l']
        rc, out, err = runner.run(argv)
        if rc != 0:
            words = tool_output(out, err)
            raise ToolError(cmd=argv, rc=rc, stdout=out, stderr=err,
                            msg='%s: %s failed (rc=%s): %s' % (host_name(), cmd_to_text(argv), rc, sentence(words)))
        parsed, unparsed = parse_output(npu_parsers.PARSERS['list'], argv, out)
        warnings = [unparsed_warning(argv, unparsed)] if unparsed else []
        ids = []
        for item in parsed.get('devices') or []:
            npu = item.get('npu') if isinstance(item, dict) else item
            if isinstance(npu, int) and npu not in ids:
                ids.append(npu)
        if not ids:
            raise ToolError(cmd=argv, rc=rc, stdout=out, stderr=err,
                            msg='%s: %s lists no NPU. Check the driver installation.' % (host_name(), cmd_to_text(argv)))
        return ids, warnings
    except ToolError as exc:
        if params['fallback_devices']:
            return list(params['fallback_devices']), []
        exc.msg += ' The devices to query could not be discovered: set the devices option, or fallback_devices.'
        raise


def gather(runner, hccn_tool, devices, queries, workers):
    """Run every (device x query) call concurrently and build the result. Raises ToolError."""
    plan = [(dev, query) for dev in devices for query in queries]
    argvs = [query_argv(hccn_tool, dev, query) for dev, query in plan]
    results = runner.run_many(argvs, workers, return_exceptions=True)

    entries = {str(dev): {} for dev in devices}
    errors = []
    warnings = []
    for (dev, query), argv, result in zip(plan, argvs, results):
        subject = 'NPU %s on %s' % (dev, host_name())
        if isinstance(result, ToolError):
            result.msg = '%s: %s' % (subject, result.msg)
            raise result
        rc, out, err = result
        outcome = classify(query, result)
        if outcome == 'failed':
            words = tool_output(out, err)
            raise ToolError(cmd=argv, rc=rc, stdout=out, stderr=err,
                            msg='%s: %s failed (rc=%s): %s %s' % (subject, cmd_to_text(argv), rc, sentence(words), hint_for(words)))
        if outcome == 'ok':
            parsed, unparsed = parse_output(hccn_parsers.PARSERS[query], argv, out)
            if unparsed:
                warnings.append(unparsed_warning(argv, unparsed))
            entries[str(dev)].update(project(query, parsed))
            continue
        entries[str(dev)].update(empty_value(query))
        if outcome == 'unanswered':
            errors.append({
                'device': dev, 'query': query, 'cmd': cmd_to_text(argv), 'rc': rc, 'stdout': out, 'stderr': err,
                'msg': '%s: %s not read: %s (rc=%s)' % (subject, query, tool_output(out, err), rc),
            })
    return {'devices': entries, 'errors': errors}, warnings


def main():
    module = AnsibleModule(
        argument_spec=dict(
            queries=dict(type='list', elements='str', choices=ALL_QUERIES, default=list(DEFAULT_QUERIES)),
            devices=dict(type='list', elements='int'),
            fallback_devices=dict(type='list', elements='int'),
            hccn_tool_path=dict(type='path'),
            npu_smi_path=dict(type='path'),
            timeout=dict(type='int', default=DEFAULT_TIMEOUT),
            workers=dict(type='int', default=DEFAULT_WORKERS),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params['timeout'] < 0 or params['workers'] < 1:
        module.fail_json(msg='hccn_info: timeout must be >= 0 and workers >= 1 (got timeout=%s, workers=%s).'
                             % (params['timeout'], params['workers']))
    queries = [query for query in ALL_QUERIES if query in params['queries']]
    try:
        runner = Runner(module, params['timeout'])
        hccn_tool = find_tool(module, 'hccn_tool', params['hccn_tool_path'])
        devices, warnings = discover_devices(module, runner, params)
        facts, more = gather(runner, hccn_tool, devices, queries, params['workers'])
    except ToolError as exc:
        module.fail_json(**exc.result())
    else:
        for warning in warnings + more:
            module.warn(warning)
        module.exit_json(changed=False, **facts)


if __name__ == '__main__':
    main()
