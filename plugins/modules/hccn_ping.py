#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: hccn_ping
short_description: Check NPU-to-NPU reachability on the RoCE parameter plane with hccn_tool -ping
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Pings from the RoCE port of each local Ascend NPU to other NPU addresses with
    C(hccn_tool -i <N> -ping -g address <A> [pkt <count>] [size <bytes>]) and returns one result per pair.
  - Devices run concurrently; the pings of one device run one after another, because C(hccn_tool) answers
    C(hccn_tool is busy, please try again.) to concurrent calls on the same device (such an answer is retried once).
  - O(mode=mesh) pings every address of O(targets) except the device's own. O(mode=ring) takes O(targets) as the ordered
    list of every NPU address of the PoD and pings only the ring neighbours of each local device (the addresses before
    and after its own).
  - Read-only; never reports a change. Whether unreachable pairs fail the task is up to the caller
    (O(fail_on_unreachable) or C(failed_when) on RV(summary)).
options:
  targets:
    description:
      - Addresses to ping. With O(mode=ring) the ordered list of all NPU addresses of the PoD (every node gets the same
        list, for example collected from the inventory's per-node port plans).
    type: list
    elements: str
    required: true
  mode:
    description:
      - V(mesh) pings every target from every device; V(ring) pings only each device's ring neighbours.
      - V(subnet) pings, from each device, only the targets in that port's own subnet (read with C(-ip -g)). On a
        parameter plane where NPU N of every node shares one subnet (one switch plane per NPU index), give it every
        NPU address of the other nodes and each device pings exactly its peers.
    type: str
    choices: [mesh, ring, subnet]
    default: mesh
  devices:
    description:
      - Local device ids (the C(-i) argument of C(hccn_tool)). By default the NPUs listed by C(npu-smi info -l).
    type: list
    elements: int
  count:
    description:
      - Packets per pair (C(pkt) keyword). The tool sends 3 when unset.
    type: int
  size:
    description:
      - Payload size in bytes (C(size) keyword), for the jumbo-frame check. V(8972) plus 28 bytes of IP and ICMP
        headers fills an MTU of 9000.
      - The public 910B C(hccn_tool) source parses only C(address) and C(pkt) for C(-ping); a driver that does not know
        C(size) answers C(Get unknown option!) (exit 3), which the module reports in RV(errors) with that hint.
    type: int
  fail_on_unreachable:
    description:
      - Fail the task when any pair is unreachable or any ping could not run. The full results are still returned.
    type: bool
    default: false
  timeout:
    description:
      - Seconds each C(hccn_tool) call may take (through coreutils C(timeout -k 5)). V(0) disables it.
    type: int
    default: 30
  workers:
    description:
      - Maximum number of devices pinging at the same time.
    type: int
    default: 8
  hccn_tool_path:
    description:
      - Path of the C(hccn_tool) binary or of its directory. When unset, C(/usr/local/Ascend/driver/tools),
        C(/usr/local/sbin), C(/usr/local/bin) and E(PATH) are searched.
    type: path
  npu_smi_path:
    description:
      - Path of the C(npu-smi) binary or of its directory, used to list the devices when O(devices) is not set.
    type: path
attributes:
  check_mode:
    support: full
    description: Only reads and pings, so it runs the same commands in check mode.
  diff_mode:
    support: none
    description: Nothing is changed, so there is no diff.
  platform:
    support: full
    platforms: posix
    description: Linux nodes with the Ascend driver (C(hccn_tool)).
notes:
  - A pair is RV(pairs[].reachable) when at least one reply came back; RV(pairs[].loss_pct) tells how many were lost.
  - The source address of each device is read with C(hccn_tool -i N -ip -g) first; a device without an address gives
    unreachable pairs with an error.
seealso:
  - module: npuops.ascend.hccn_config
  - module: npuops.ascend.hccn_info
"""

EXAMPLES = r"""
- name: Ping the same NPU of every other node (its subnet peers) with jumbo frames
  npuops.ascend.hccn_ping:
    mode: subnet
    targets: >-
      {{ ansible_play_hosts | difference([inventory_hostname]) | map('extract', hostvars, 'npu_ports')
         | flatten | map(attribute='address') | list }}
    size: 8972
  register: peers

- name: Ping the ring neighbours of every NPU with jumbo frames
  npuops.ascend.hccn_ping:
    mode: ring
    targets: "{{ pod_npu_addresses }}"
    size: 8972
    count: 3
  register: ring

- name: Fail when a pair is unreachable or loses packets
  ansible.builtin.assert:
    that:
      - ring.summary.unreachable == 0
      - ring.summary.lossy == 0
    fail_msg: "{{ ring.pairs | rejectattr('loss_pct', 'equalto', 0.0) | list }}"

- name: Full mesh from NPU 0 and 1 to two addresses, failing on any loss of reachability
  npuops.ascend.hccn_ping:
    devices: [0, 1]
    targets: [10.20.0.10, 10.20.1.10]
    fail_on_unreachable: true
"""

RETURN = r"""
pairs:
  description: One entry per (local device, target) pair, in device then target order.
  returned: always
  type: list
  elements: dict
  contains:
    device:
      description: Local device id.
      type: int
    source:
      description: Address of the local device's port; null when it has none.
      type: str
    target:
      description: Address pinged.
      type: str
    reachable:
      description: True when at least one reply came back.
      type: bool
    loss_pct:
      description: Packet loss in percent as printed by hccn_tool; null when the ping did not run.
      type: float
    rtt_avg_ms:
      description: Average round-trip time of the replies in milliseconds; null without replies.
      type: float
    error:
      description: Why the ping did not run, with the tool's own words; only present then.
      type: str
  sample:
    - {device: 3, source: 29.1.112.213, target: 29.1.137.205, reachable: true, loss_pct: 0.0, rtt_avg_ms: 0.497}
summary:
  description: Counts over RV(pairs).
  returned: always
  type: dict
  contains:
    pairs:
      description: Number of pairs.
      type: int
    reachable:
      description: Pairs with at least one reply.
      type: int
    unreachable:
      description: Pairs without any reply, including pings that could not run.
      type: int
    lossy:
      description: Reachable pairs that still lost packets.
      type: int
    errors:
      description: Pings that could not run.
      type: int
  sample: {pairs: 16, reachable: 15, unreachable: 1, lossy: 0, errors: 0}
errors:
  description: Pings or address reads that could not run, with cmd, rc, stdout, stderr and msg.
  returned: always
  type: list
  elements: dict
"""

import ipaddress  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.npuops.ascend.plugins.module_utils._parsers import hccn_tool as hccn_parsers  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import npu_smi as npu_parsers  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._runner import (  # noqa: E402
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
from ansible_collections.npuops.ascend.plugins.module_utils._state import is_busy  # noqa: E402

BUSY_RETRY_DELAY = 1.0


def ping_argv(tool, device, target, count=None, size=None):
    """``hccn_tool -i D -ping -g address T [pkt N] [size S]``."""
    argv = [tool, '-i', str(device), '-ping', '-g', 'address', target]
    if count is not None:
        argv += ['pkt', str(count)]
    if size is not None:
        argv += ['size', str(size)]
    return argv


def ring_neighbours(targets, own):
    """The addresses before and after ``own`` in the ring ``targets`` (without ``own``)."""
    if own not in targets:
        return None
    index = targets.index(own)
    out = []
    for step in (1, -1):
        peer = targets[(index + step) % len(targets)]
        if peer != own and peer not in out:
            out.append(peer)
    return out


def plan_targets(mode, targets, own, netmask=None):
    """Targets for one device; None when ring mode cannot place the device."""
    if mode == 'ring':
        return ring_neighbours(targets, own)
    if mode == 'subnet':
        try:
            network = ipaddress.ip_interface('%s/%s' % (own, netmask)).network
        except ValueError:
            return []
        return [t for t in targets if t != own and _in_network(t, network)]
    return [t for t in targets if t != own]


def _in_network(address, network):
    try:
        return ipaddress.ip_address(address) in network
    except ValueError:
        return False


def summarise(pairs):
    reachable = sum(1 for p in pairs if p['reachable'])
    return {
        'pairs': len(pairs),
        'reachable': reachable,
        'unreachable': len(pairs) - reachable,
        'lossy': sum(1 for p in pairs if p['reachable'] and (p['loss_pct'] or 0) > 0),
        'errors': sum(1 for p in pairs if p.get('error')),
    }


class Pinger:
    def __init__(self, runner, tool, host, params):
        self.runner = runner
        self.tool = tool
        self.host = host
        self.params = params
        self.netmasks = {}

    def call(self, argv):
        """Run argv (``hccn_tool -i D ...``), retrying once on busy; a ToolError names the NPU and host."""
        try:
            rc, out, err = self.runner.run_retry_once(argv, is_busy, BUSY_RETRY_DELAY)
        except ToolError as exc:
            exc.msg = 'NPU %s on %s: %s' % (argv[2], self.host, exc.msg)
            raise
        return rc, out, err

    def source(self, device):
        """Return (address or None, error dict or None, warnings)."""
        argv = [self.tool, '-i', str(device), '-ip', '-g']
        rc, out, err = self.call(argv)
        if rc != 0:
            words = tool_output(out, err)
            return None, {'device': device, 'cmd': cmd_to_text(argv), 'rc': rc, 'stdout': out, 'stderr': err,
                          'msg': 'NPU %s on %s: %s failed (rc=%s): %s The port needs an address before it can ping; '
                                 'configure it with npuops.ascend.hccn_config.'
                                 % (device, self.host, cmd_to_text(argv), rc, sentence(words))}, []
        parsed, unparsed = parse_output(hccn_parsers.PARSERS['ip'], argv, out)
        warnings = [unparsed_warning(argv, unparsed)] if unparsed else []
        self.netmasks[device] = parsed.get('netmask')
        return parsed.get('address'), None, warnings

    def ping(self, device, source, target):
        """Return (pair, error dict or None, warnings)."""
        pair = {'device': device, 'source': source, 'target': target, 'reachable': False, 'loss_pct': None, 'rtt_avg_ms': None}
        argv = ping_argv(self.tool, device, target, self.params['count'], self.params['size'])
        rc, out, err = self.call(argv)
        parsed, unparsed = parse_output(hccn_parsers.PARSERS['ping'], argv, out)
        warnings = [unparsed_warning(argv, unparsed)] if unparsed else []
        if parsed.get('loss_pct') is not None:
            # an unreachable peer makes hccn_tool exit non-zero after printing the statistics: that is data
            rtts = parsed.get('rtt_ms') or []
            received = parsed.get('received')
            pair['loss_pct'] = parsed['loss_pct']
            pair['reachable'] = bool(received) if received is not None else parsed['loss_pct'] < 100.0
            pair['rtt_avg_ms'] = round(sum(rtts) / len(rtts), 3) if rtts else None
            return pair, None, warnings
        words = tool_output(out, err)
        hint = ''
        if 'unknown option' in words.lower() and self.params['size'] is not None:
            hint = ' This hccn_tool does not accept a packet size for -ping: drop the size option.'
        msg = 'NPU %s on %s: %s failed (rc=%s): %s%s' % (device, self.host, cmd_to_text(argv), rc, sentence(words), hint)
        pair['error'] = msg
        return pair, {'device': device, 'cmd': cmd_to_text(argv), 'rc': rc, 'stdout': out, 'stderr': err, 'msg': msg}, warnings

    def run_device(self, device):
        """All pings of one device, one after another. Returns (pairs, errors, warnings)."""
        own, error, warnings = self.source(device)
        if error:
            # without its own address a device cannot be placed in a ring; in a mesh every target is unreachable
            targets = self.params['targets'] if self.params['mode'] == 'mesh' else []  # subnet and ring need the address
            pairs = [{'device': device, 'source': None, 'target': t, 'reachable': False, 'loss_pct': None,
                      'rtt_avg_ms': None, 'error': error['msg']} for t in targets]
            return pairs, [error], warnings
        targets = plan_targets(self.params['mode'], self.params['targets'], own, self.netmasks.get(device))
        if targets is None:
            msg = ('NPU %s on %s: its address %s is not in targets, so its ring neighbours are unknown; pass every NPU '
                   'address of the PoD in targets.' % (device, self.host, own))
            return [], [{'device': device, 'cmd': None, 'rc': None, 'stdout': '', 'stderr': '', 'msg': msg}], warnings + [msg]
        pairs = []
        errors = []
        for target in targets:
            pair, err, more = self.ping(device, own, target)
            pairs.append(pair)
            warnings.extend(more)
            if err:
                errors.append(err)
        return pairs, errors, warnings


def discover_devices(module, runner, params):
    npu_smi = find_tool(module, 'npu-smi', params['npu_smi_path'])
    argv = [npu_smi, 'info', '-l']
    rc, out, err = runner.run(argv)
    if rc != 0:
        raise ToolError(cmd=argv, rc=rc, stdout=out, stderr=err,
                        msg='%s: %s failed (rc=%s): %s Set the devices option.' % (
                            host_name(), cmd_to_text(argv), rc, sentence(tool_output(out, err))))
    parsed, unparsed = parse_output(npu_parsers.PARSERS['list'], argv, out)
    if unparsed:
        module.warn(unparsed_warning(argv, unparsed))
    devices = sorted(set(d['npu'] for d in parsed.get('devices') or [] if isinstance(d.get('npu'), int)))
    if not devices:
        raise ToolError(cmd=argv, rc=rc, stdout=out, stderr=err,
                        msg='%s: %s lists no NPU. Check the driver, or set the devices option.' % (host_name(), cmd_to_text(argv)))
    return devices


def main():
    module = AnsibleModule(
        argument_spec=dict(
            targets=dict(type='list', elements='str', required=True),
            mode=dict(type='str', choices=['mesh', 'ring', 'subnet'], default='mesh'),
            devices=dict(type='list', elements='int'),
            count=dict(type='int'),
            size=dict(type='int'),
            fail_on_unreachable=dict(type='bool', default=False),
            timeout=dict(type='int', default=30),
            workers=dict(type='int', default=8),
            hccn_tool_path=dict(type='path'),
            npu_smi_path=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params['timeout'] < 0 or params['workers'] < 1:
        module.fail_json(msg='hccn_ping: timeout must be >= 0 and workers >= 1.')
    if params['count'] is not None and params['count'] < 1:
        module.fail_json(msg='hccn_ping: count must be 1 or more (got %s).' % params['count'])
    if params['size'] is not None and not 1 <= params['size'] <= 9702:
        module.fail_json(msg='hccn_ping: size must be between 1 and 9702 bytes (got %s); 8972 fills an MTU of 9000.'
                             % params['size'])
    host = host_name()
    try:
        runner = Runner(module, params['timeout'])
        tool = find_tool(module, 'hccn_tool', params['hccn_tool_path'])
        devices = sorted(set(params['devices'])) if params['devices'] else discover_devices(module, runner, params)
        pinger = Pinger(runner, tool, host, params)
        workers = max(1, min(params['workers'], len(devices)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(pinger.run_device, devices))
    except ToolError as exc:
        module.fail_json(**exc.result())
    pairs = []
    errors = []
    for dev_pairs, dev_errors, warnings in results:
        pairs.extend(dev_pairs)
        errors.extend(dev_errors)
        for warning in warnings:
            module.warn(warning)
    summary = summarise(pairs)
    result = {'changed': False, 'pairs': pairs, 'summary': summary, 'errors': errors}
    bad = [p for p in pairs if not p['reachable']]
    if params['fail_on_unreachable'] and (bad or errors):
        shown = '; '.join('NPU %s -> %s' % (p['device'], p['target']) for p in bad[:8])
        more = ' (and %d more)' % (len(bad) - 8) if len(bad) > 8 else ''
        extra = ' ' + errors[0]['msg'] if errors else ''
        module.fail_json(msg='%s: %d of %d NPU pairs unreachable: %s%s. Check links (hccn_tool -i N -link -g), '
                             'addresses and switch ports.%s' % (host, len(bad), len(pairs), shown, more, extra), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
