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
      - IPv4 addresses to ping. With O(mode=ring) the ordered list of all NPU addresses of the PoD (every node gets the
        same list, for example collected from the inventory's per-node port plans).
      - Anything that is not a dotted IPv4 address fails the task before any call.
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
      - Also fails when no pair was pinged at all (no targets, or none in a device's subnet), because then nothing was
        checked.
    type: bool
    default: false
  read_after:
    description:
      - Queries of M(npuops.ascend.hccn_info) to read from every pinged device after the pings, in the same module run,
        returned in RV(read) with the time in RV(read_at). A change window reads the links and the pause counters of
        its ports this way right after the jumbo ping instead of in a module run of its own.
      - Read also when pairs are unreachable, before O(fail_on_unreachable) fails the task, so the failed result holds
        the links of the ports that did not answer.
      - A query that cannot be read is an entry of the C(errors) of RV(read), as in M(npuops.ascend.hccn_info), not a
        failure.
    type: list
    elements: str
    choices: [link, net_health, ip, gateway, netdetect, mtu, pfc, dscp_to_tc, tls, pfc_stat, optical, stat, lldp, link_stat, vnic]
    default: []
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
    description: Linux nodes with the Ascend driver (C(hccn_tool)).
notes:
  - A pair is RV(pairs[].reachable) when at least one reply came back; RV(pairs[].loss_pct) tells how many were lost.
  - The source address of each device is read with C(hccn_tool -i N -ip -g) first; a device without an address, or
    whose address cannot be read, gives unreachable pairs with an error that says which of the two happened.
  - O(npu_smi_path) is used only to list the devices when O(devices) is not set.
seealso:
  - module: npuops.ascend.hccn_config
  - module: npuops.ascend.hccn_info
"""

EXAMPLES = r"""
- name: Ping the same NPU of every other node (its subnet peers) with jumbo frames
  npuops.ascend.hccn_ping:
    mode: subnet
    targets: >-
      {{ ansible_play_hosts | difference([inventory_hostname]) | map('extract', hostvars, 'npuops_npu_ports')
         | flatten | map(attribute='address') | list }}
    size: 8972
  register: peers

- name: Ping the ring neighbours of NPU 0 on its rail (NPU 0 of the previous and the next node) with jumbo frames
  npuops.ascend.hccn_ping:
    mode: ring
    devices: [0]
    targets: >-
      {{ ansible_play_hosts | map('extract', hostvars, 'npuops_npu_ports') | map('selectattr', 'device', 'equalto', 0)
         | flatten | map(attribute='address') | list }}
    size: 8972
    count: 3
  register: ring

- name: Fail when a pair is unreachable or loses packets
  ansible.builtin.assert:
    that:
      - ring.summary.unreachable == 0
      - ring.summary.lossy == 0
    fail_msg: "Pairs that lose packets: {{ ring.pairs | rejectattr('loss_pct', 'equalto', 0.0) | list | to_json }}"

- name: Mesh from NPU 0 to the NPU 0 of two nodes (its own address is skipped), failing on any loss of reachability
  npuops.ascend.hccn_ping:
    devices: [0]
    targets: [10.20.0.11, 10.20.0.12]
    fail_on_unreachable: true

- name: Ping the subnet peers, then read the links and the pause counters in the same run
  npuops.ascend.hccn_ping:
    mode: subnet
    targets: >-
      {{ ansible_play_hosts | difference([inventory_hostname]) | map('extract', hostvars, 'npuops_npu_ports')
         | flatten | map(attribute='address') | list }}
    size: 8972
    fail_on_unreachable: true
    read_after: [link, pfc_stat]
  register: after_ping

- name: Show the link of every port after the ping
  ansible.builtin.debug:
    msg: "{{ after_ping.read.devices | dict2items | map(attribute='value.link') | list }}"
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
read:
  description:
    - What O(read_after) read after the pings, in the shape of the M(npuops.ascend.hccn_info) result (C(devices) keyed
      by device id, C(summary), C(errors)).
  returned: when O(read_after) is given and the module got as far as the pings
  type: dict
  sample: {devices: {'0': {link: UP}}, summary: {devices: 1}, errors: []}
read_at:
  description: When the O(read_after) reading started, in seconds since the epoch (UTC).
  returned: when O(read_after) is given and the module got as far as the pings
  type: float
  sample: 1764806400.123
"""

import ipaddress  # noqa: E402
import time  # noqa: E402

from ansible_collections.npuops.ascend.plugins.module_utils._argspec import build_module, execute, tool_options  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._domain.hccn_info import ALL_QUERIES, gather  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._domain.products import MTU_MAX  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import hccn_tool as hccn_parsers  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._tools import hccn_tool as _hccn_tool  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._tools.hccn_tool import HccnTool, ping_argv  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._tools.npu_smi import discover_devices  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import (  # noqa: E402
    ModuleFailure,
    Runner,
    host_name,
    in_parallel,
    parse_output,
    unparsed_warning,
)

SIZE_MAX = MTU_MAX  # the largest ping payload hccn_tool takes is the largest MTU


def check_targets(targets):
    """Every target as a dotted IPv4 address; a list of problems (empty when fine)."""
    bad = []
    for target in targets:
        try:
            ipaddress.IPv4Address(target)
        except ValueError:
            bad.append(repr(target))
    return bad


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
        return [t for t in targets if t != own and ipaddress.ip_address(t) in network]
    return [t for t in targets if t != own]


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
    def __init__(self, hccn, params):
        self.hccn = hccn
        self.params = params

    def source(self, device):
        """Return (address, netmask, error dict or None, warnings)."""
        reading = self.hccn.read(device, 'ip')
        if reading.parsed is not None and reading.parsed.get('address'):
            return reading.parsed['address'], reading.parsed.get('netmask'), None, reading.warnings()
        reply = reading.reply
        subject = self.hccn.subject(device)
        if reply.ok:
            msg = ('%s: %s printed no address. The port needs one before it can ping; configure it with '
                   'npuops.ascend.hccn_config.' % (subject, _hccn_tool.command_string(reply.argv)))
        elif reading.meaning == _hccn_tool.UNSET:
            msg = reply.failure(subject, 'It cannot ping without one.').msg
        else:
            msg = reply.failure(subject, 'The address of the port could not be read, so it did not ping.').msg
        return None, None, dict(reply.detail(), device=device, msg=msg), reading.warnings()

    def ping(self, device, source, target):
        """Return (pair, error dict or None, warnings)."""
        pair = {'device': device, 'source': source, 'target': target, 'reachable': False, 'loss_pct': None, 'rtt_avg_ms': None}
        # a ping only reads (-ping -g): an answer the runner lost is asked for once more
        reply = self.hccn.call(ping_argv(self.hccn.path, device, target, self.params['count'], self.params['size']), read=True)
        parsed, unparsed = parse_output(hccn_parsers.PARSERS['ping'], reply.argv, reply.stdout)
        warnings = [unparsed_warning(reply.argv, unparsed)] if unparsed else []
        if parsed.get('loss_pct') is not None:
            # an unreachable peer makes hccn_tool exit non-zero after printing the statistics: that is data
            rtts = parsed.get('rtt_ms') or []
            received = parsed.get('received')
            pair['loss_pct'] = parsed['loss_pct']
            pair['reachable'] = bool(received) if received is not None else parsed['loss_pct'] < 100.0
            pair['rtt_avg_ms'] = round(sum(rtts) / len(rtts), 3) if rtts else None
            return pair, None, warnings
        then = ''
        if reply.error and reply.error['error'] == 'unknown_option' and self.params['size'] is not None:
            then = 'This hccn_tool does not accept a packet size for -ping: drop the size option.'
        failure = reply.failure(self.hccn.subject(device), then)
        pair['error'] = failure.msg
        return pair, dict(reply.detail(), device=device, msg=failure.msg), warnings

    def run_device(self, device):
        """All pings of one device, one after another. Returns (pairs, errors, warnings)."""
        own, netmask, error, warnings = self.source(device)
        if error:
            # without its own address a device cannot be placed in a ring or a subnet; in a mesh every target is unreachable
            targets = self.params['targets'] if self.params['mode'] == 'mesh' else []
            pairs = [{'device': device, 'source': None, 'target': t, 'reachable': False, 'loss_pct': None,
                      'rtt_avg_ms': None, 'error': error['msg']} for t in targets]
            return pairs, [error], warnings
        targets = plan_targets(self.params['mode'], self.params['targets'], own, netmask)
        if targets is None:
            msg = ('%s: its address %s is not in targets, so its ring neighbours are unknown; pass every NPU address of '
                   'the PoD in targets.' % (self.hccn.subject(device), own))
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


def run(module, params, warnings):
    host = host_name()
    bad = check_targets(params['targets'])
    if bad:
        raise ModuleFailure('targets must be IPv4 addresses; not valid: %s. Nothing was pinged.' % ', '.join(bad), subject=host)
    runner = Runner(module, params['timeout'])
    hccn = HccnTool.find(module, runner, params['hccn_tool_path'], host)
    devices, more = discover_devices(module, runner, params['devices'], params['npu_smi_path'], host,
                                     then='Set the devices option.')
    warnings.extend(more)
    pinger = Pinger(hccn, params)
    pairs, errors = [], []
    for outcome in in_parallel(pinger.run_device, sorted(devices), params['workers']):
        if isinstance(outcome, BaseException):
            raise outcome
        pairs.extend(outcome[0])
        errors.extend(outcome[1])
        warnings.extend(outcome[2])
    result = {'changed': False, 'pairs': pairs, 'summary': summarise(pairs), 'errors': errors}
    if params['read_after']:
        # the same devices, right after their pings; read also when a pair failed, so a failed result shows the links
        started = time.time()
        result['read'] = gather(module, dict(params, queries=params['read_after'], devices=sorted(devices),
                                             fallback_devices=None), warnings)
        result['read_at'] = round(started, 3)
    if not params['fail_on_unreachable']:
        return result
    bad = [p for p in pairs if not p['reachable']]
    if not pairs and not errors:
        raise ModuleFailure('no NPU pair was pinged (targets: %d, mode %s), so reachability was not checked. Give the '
                            'addresses of the peer NPUs in targets.' % (len(params['targets']), params['mode']),
                            subject=host, **result)
    if bad or errors:
        shown = '; '.join('NPU %s -> %s' % (p['device'], p['target']) for p in bad[:8])
        more = ' (and %d more)' % (len(bad) - 8) if len(bad) > 8 else ''
        extra = ' ' + errors[0]['msg'] if errors else ''
        raise ModuleFailure('%d of %d NPU pairs unreachable: %s%s. Check links (hccn_tool -i N -link -g), addresses and '
                            'switch ports.%s' % (len(bad), len(pairs), shown, more, extra), subject=host, **result)
    return result


def main():
    argument_spec = dict(
        targets=dict(type='list', elements='str', required=True),
        mode=dict(type='str', choices=['mesh', 'ring', 'subnet'], default='mesh'),
        devices=dict(type='list', elements='int'),
        count=dict(type='int'),
        size=dict(type='int'),
        fail_on_unreachable=dict(type='bool', default=False),
        read_after=dict(type='list', elements='str', choices=ALL_QUERIES, default=[]),
    )
    argument_spec.update(tool_options())
    module = build_module('hccn_ping', argument_spec, supports_check_mode=True)
    params = module.params
    if params['count'] is not None and params['count'] < 1:
        module.fail_json(msg='hccn_ping: count must be 1 or more (got %s).' % params['count'])
    if params['size'] is not None and not 1 <= params['size'] <= SIZE_MAX:
        module.fail_json(msg='hccn_ping: size must be between 1 and %d bytes (got %s); 8972 fills an MTU of 9000.'
                             % (SIZE_MAX, params['size']))
    execute(module, lambda warnings: run(module, params, warnings))


if __name__ == '__main__':
    main()
