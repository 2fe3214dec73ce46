# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The RoCE parameter plane of a PoD: npu_ip_plan, hccl_rdma_tc, roce_intent_problems.

The documentation of each filter is in the .yml file of the same name next to this file.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.filter.pod_problems import canonical, name_nodes, pod_wide_difference
from ansible_collections.npuops.ascend.plugins.plugin_utils import _hccl_rules as rules
from ansible_collections.npuops.ascend.plugins.plugin_utils._hccl_rules import DSCP_MAX, PRIORITY_MAX, integer, show

# hccn_tool on the 910B: -mtu -s size accepts 68 to 9702; -dscp_to_tc -s dscp D tc T accepts tc 0 to 3
MTU_MIN = 68
MTU_MAX = 9702
JUMBO_MIN = 4096
MAX_NPUS = 1024
TC_MAX = 3

PLAN_KEYS = ('network', 'layout', 'prefix', 'host_offset')
PLAN_DEFAULTS = {'layout': 'rail', 'prefix': 24, 'host_offset': 10}
LAYOUTS = ('rail', 'flat')
PORT_KEYS = ('device', 'address', 'netmask')

INTENT_KEYS = ('lossless_priority', 'lossless_dscp', 'lossless_tc', 'dscp_to_tc', 'mtu', 'hccl_rdma_sl', 'hccl_rdma_tc')
# Each key of the intent: the variable a node takes it from and the value of a node that does not set it (the defaults of
# roles/roce_lossless/vars/main.yml, which stage 4 uses, and of hccl_env, which derives HCCL_RDMA_SL/TC from them).
INTENT_VARIABLES = {
    'lossless_priority': ('npuops_lossless_priority', 4),
    'lossless_dscp': ('npuops_lossless_dscp', 33),
    'lossless_tc': ('npuops_lossless_tc', 3),
    'dscp_to_tc': ('npuops_dscp_to_tc', None),
    'mtu': ('npuops_mtu', 9000),
    'hccl_rdma_sl': ('npuops_hccl_rdma_sl', None),
    'hccl_rdma_tc': ('npuops_hccl_rdma_tc', None),
}
INTENT_WHY = ('the lossless RoCE intent is PoD-wide (stage 4 sets it on every port of every node and stage 5 derives '
              'HCCL_RDMA_SL and HCCL_RDMA_TC from it)')


def _error(name, text):
    raise AnsibleFilterError('%s: %s' % (name, text))


# --- hccl_rdma_tc --------------------------------------------------------------------------------------------------

def hccl_rdma_tc(dscp):
    """The HCCL_RDMA_TC value (the ToS byte) of a DSCP: DSCP x 4."""
    number = integer(dscp)
    if number is None:
        _error('hccl_rdma_tc', 'dscp %s is not an integer: a DSCP is an integer from 0 to %d' % (show(dscp), DSCP_MAX))
    if not 0 <= number <= DSCP_MAX:
        _error('hccl_rdma_tc', 'dscp %s is outside 0-%d: a DSCP has 6 bits' % (show(dscp), DSCP_MAX))
    return number * 4


# --- npu_ip_plan ---------------------------------------------------------------------------------------------------

def _netmask_of(value, where):
    """The dotted netmask of a dotted netmask or a prefix length (24, '24', '/24')."""
    text = value.strip().lstrip('/') if isinstance(value, str) else value
    length = integer(text)
    if length is not None:
        if not 1 <= length <= 32:
            _error('npu_ip_plan', '%s %s is not a netmask: a prefix length is 1 to 32' % (where, show(value)))
        return str(rules.netaddr.IPNetwork('0.0.0.0/%d' % length).netmask)
    mask = rules.ipv4(text.strip()) if isinstance(text, str) else None
    if mask is None or not mask.is_netmask() or int(mask) == 0:
        _error('npu_ip_plan', '%s %s is not an IPv4 netmask such as 255.255.255.0 or a prefix length such as 24'
               % (where, show(value)))
    return str(mask)


def _explicit_plan(plan, npus):
    out = {}
    addresses = {}
    for index, port in enumerate(plan):
        where = 'plan[%d]' % index
        if not isinstance(port, Mapping) or set(port) != set(PORT_KEYS):
            _error('npu_ip_plan', '%s %s is not a port: each item has exactly the keys device, address and netmask'
                   % (where, show(port)))
        device = integer(port['device'])
        if device is None or not 0 <= device < npus:
            _error('npu_ip_plan', '%s.device %s is not an NPU id: the devices are 0 to %d' % (where, show(port['device']), npus - 1))
        if device in out:
            _error('npu_ip_plan', '%s.device %d is listed twice: every NPU 0 to %d has exactly one port' % (where, device, npus - 1))
        address = rules.ipv4(port['address'].strip()) if isinstance(port['address'], str) else None
        if address is None:
            _error('npu_ip_plan', '%s.address %s is not an IPv4 address: the NPU RoCE ports take dotted-quad IPv4 addresses'
                   % (where, show(port['address'])))
        netmask = _netmask_of(port['netmask'], '%s.netmask' % where)
        network = rules.netaddr.IPNetwork('%s/%s' % (address, netmask))
        if network.prefixlen < 31 and address in (network.network, network.broadcast):
            _error('npu_ip_plan', '%s.address %s is the %s address of %s, not a host address'
                   % (where, address, 'network' if address == network.network else 'broadcast', network.cidr))
        if str(address) in addresses:
            _error('npu_ip_plan', '%s.address %s is also the address of NPU %d: every port needs its own address'
                   % (where, address, addresses[str(address)]))
        addresses[str(address)] = device
        out[device] = {'device': device, 'address': str(address), 'netmask': netmask}
    missing = [str(device) for device in range(npus) if device not in out]
    if missing:
        _error('npu_ip_plan', 'plan has no port for NPU %s: every NPU 0 to %d needs exactly one' % (', '.join(missing), npus - 1))
    return [out[device] for device in range(npus)]


def _plan_settings(plan):
    unknown = sorted(str(key) for key in set(plan) - set(PLAN_KEYS))
    if unknown:
        _error('npu_ip_plan', 'plan key %s is not known: the keys are %s' % (', '.join(unknown), ', '.join(PLAN_KEYS)))
    settings = dict(PLAN_DEFAULTS)
    settings.update((key, value) for key, value in plan.items() if value is not None)
    text = settings.get('network')
    network = rules.ipv4_network(text)
    if network is None:
        _error('npu_ip_plan', 'network %s is not an IPv4 network in CIDR form such as 10.20.0.0/16: the NPU RoCE ports '
               'take IPv4 addresses' % show(text))
    if network.ip != network.network:
        _error('npu_ip_plan', 'network %s has host bits set: the network of that address is %s' % (show(text), network.cidr))
    layout = settings['layout']
    if layout not in LAYOUTS:
        _error('npu_ip_plan', 'layout %s is not a layout: rail (NPU d of every node in the d-th subnet of network) or flat '
               '(every port of the PoD in network itself)' % show(layout))
    if network.prefixlen > (29 if layout == 'rail' else 30):
        _error('npu_ip_plan', 'network %s is too small for the %s layout: %s' % (
            show(text), layout, 'the rail subnets are longer than the network and at most /30, so the network must be /29 '
            'or shorter' if layout == 'rail' else 'a flat network needs host addresses besides the network and broadcast '
            'address, so it is at most /30'))
    offset = integer(settings['host_offset'])
    if offset is None or offset < 0:
        _error('npu_ip_plan', 'host_offset %s is not an integer of at least 0: it is added to every host number'
               % show(settings['host_offset']))
    prefix = None
    if layout == 'rail':
        prefix = integer(settings['prefix'])
        if prefix is None or not network.prefixlen < prefix <= 30:
            _error('npu_ip_plan', 'prefix %s is not a prefix length from %d to 30: the rail subnets must be longer than the /%d '
                   'of network %s and hold hosts besides the network and broadcast address'
                   % (show(settings['prefix']), network.prefixlen + 1, network.prefixlen, network.cidr))
    return network, layout, prefix, offset


def _fit(nodes):
    return 'nodes 1 to %d fit' % nodes if nodes > 1 else 'only node 1 fits' if nodes == 1 else 'no node fits'


def npu_ip_plan(plan, node_index, npus=8):
    """The parameter-plane addresses of one node: [{device, address, netmask}] for the NPUs 0 to npus - 1."""
    rules.require_netaddr('npu_ip_plan')
    count = integer(npus)
    if count is None or not 1 <= count <= MAX_NPUS:
        _error('npu_ip_plan', 'npus %s is not a number of NPUs: it must be an integer from 1 to %d (8 on an Atlas 800T A2)'
               % (show(npus), MAX_NPUS))
    node = integer(node_index)
    if node is None or node < 1:
        _error('npu_ip_plan', 'node_index %s is not a node number: nodes are numbered from 1' % show(node_index))
    if isinstance(plan, (list, tuple)):
        return _explicit_plan(plan, count)
    if not isinstance(plan, Mapping):
        _error('npu_ip_plan', 'plan %s is neither a list of {device, address, netmask} nor a dict {network, layout, prefix, '
               'host_offset}' % show(plan))
    network, layout, prefix, offset = _plan_settings(plan)
    if layout == 'rail':
        subnets = 2 ** (prefix - network.prefixlen)
        if subnets < count:
            _error('npu_ip_plan', 'network %s has %d /%d subnets, fewer than the %d NPUs of a node: the rail layout puts NPU d '
                   'in subnet d, so use a shorter network prefix or a longer prefix than %d'
                   % (network.cidr, subnets, prefix, count, prefix))
        size = 2 ** (32 - prefix)
        host = offset + node
        if host > size - 2:
            _error('npu_ip_plan', 'node_index %d gives host number %d (host_offset %d + node %d) in the /%d subnets of %s, but '
                   'a /%d has host numbers 1 to %d, so with host_offset %d %s'
                   % (node, host, offset, node, prefix, network.cidr, prefix, size - 2, offset, _fit(size - 2 - offset)))
        netmask = str(rules.netaddr.IPNetwork('0.0.0.0/%d' % prefix).netmask)
        return [{'device': device, 'address': str(rules.netaddr.IPAddress(int(network.network) + device * size + host)),
                 'netmask': netmask} for device in range(count)]
    broadcast = network.size - 1
    out = []
    for device in range(count):
        host = offset + (node - 1) * count + device
        if host == 0:
            _error('npu_ip_plan', 'node_index %d NPU %d would get %s, the network address of %s: with the flat layout NPU d of '
                   'node n is host number host_offset + (n - 1) x %d + d, so host_offset must be at least 1'
                   % (node, device, network.network, network.cidr, count))
        if host >= broadcast:
            _error('npu_ip_plan', 'node_index %d NPU %d would get host number %d of %s, which %s: with host_offset %d and %d NPUs '
                   'a node, %s' % (
                       node, device, host, network.cidr,
                       'is the broadcast address' if host == broadcast else 'lies outside the network (its host numbers end at %d)'
                       % (broadcast - 1), offset, count, _fit((broadcast - offset) // count)))
        out.append({'device': device, 'address': str(rules.netaddr.IPAddress(int(network.network) + host)),
                    'netmask': str(network.netmask)})
    return out


# --- roce_intent_problems ------------------------------------------------------------------------------------------

def _add(out, variable, value, text):
    out.append({'variable': variable, 'value': value, 'problem': '%s %s %s' % (variable, show(value), text)})


def _ranged(out, variable, value, low, high, why):
    """The integer of ``value`` when it lies in [low, high], else None with the problem recorded."""
    if value is None:
        _add(out, variable, value, 'is not set: the lossless RoCE intent needs it, an integer from %d to %d' % (low, high))
        return None
    number = integer(value)
    if number is None:
        _add(out, variable, value, 'is not an integer from %d to %d: %s' % (low, high, why))
        return None
    if not low <= number <= high:
        _add(out, variable, value, 'is outside %d-%d: %s' % (low, high, why))
        return None
    return number


def _mtu(out, value):
    variable = 'npuops_mtu'
    mtu = _ranged(out, variable, value, MTU_MIN, MTU_MAX, 'hccn_tool -mtu -s size accepts 68 to 9702 on the 910B')
    if mtu is not None and mtu < JUMBO_MIN:
        _add(out, variable, value, 'is not a jumbo MTU: RDMA on the lossless parameter plane is expected at a jumbo MTU, so '
             'this collection accepts %d to %d (9000 is usual)' % (JUMBO_MIN, MTU_MAX))


def _dscp_map(out, value, dscp, tc):
    variable = 'npuops_dscp_to_tc'
    if value is None:
        return
    if not isinstance(value, (list, tuple)):
        _add(out, variable, value, 'is not a list of {dscp, tc} entries')
        return
    table = {}
    for index, entry in enumerate(value):
        if not isinstance(entry, Mapping) or set(entry) != {'dscp', 'tc'}:
            _add(out, variable, value, 'entry %d %s is not a {dscp, tc} entry: each entry has exactly the keys dscp and tc'
                 % (index, show(entry)))
            continue
        entry_dscp, entry_tc = integer(entry['dscp']), integer(entry['tc'])
        if entry_dscp is None or not 0 <= entry_dscp <= DSCP_MAX:
            _add(out, variable, value, 'entry %d has dscp %s, not a DSCP from 0 to %d' % (index, show(entry['dscp']), DSCP_MAX))
            continue
        if entry_tc is None or not 0 <= entry_tc <= TC_MAX:
            shown = show(entry['tc'])
            _add(out, variable, value, 'entry %d maps DSCP %d to tc %s, not a traffic class from 0 to %d: hccn_tool on the 910B '
                 'rejects it (-dscp_to_tc -s dscp %d tc %s exits 10)' % (index, entry_dscp, shown, TC_MAX, entry_dscp, shown))
            continue
        if entry_dscp in table and table[entry_dscp] != entry_tc:
            _add(out, variable, value, 'maps DSCP %d twice, to TC %d and TC %d: a DSCP has one traffic class'
                 % (entry_dscp, table[entry_dscp], entry_tc))
            continue
        table[entry_dscp] = entry_tc
    if dscp is not None and tc is not None and dscp in table and table[dscp] != tc:
        _add(out, variable, value, 'maps the lossless DSCP %d to TC %d, not to the lossless TC %d: the RDMA traffic would leave '
             'the lossless queue' % (dscp, table[dscp], tc))


def roce_intent_problems(intent, hosts=None):
    """The problems of the PoD's lossless RoCE intent: a list of {variable, value, problem}, empty when it is consistent.

    With ``hosts``, ``intent`` is hostvars: the intent of every host is read from its npuops_* variables, any difference
    between the hosts is a problem, and each different intent is checked (its problems name its hosts).
    """
    if hosts is not None:
        return _pod_intent_problems(intent, hosts)
    return _intent_problems(intent)


def _pod_intent_problems(hostvars, hosts):
    if not isinstance(hostvars, Mapping):
        _error('roce_intent_problems', 'with hosts, the input must be hostvars, got %s' % type(hostvars).__name__)
    if isinstance(hosts, str) or not isinstance(hosts, (list, tuple)) or not all(isinstance(host, str) for host in hosts):
        _error('roce_intent_problems', 'hosts must be a list of inventory hostnames, got %s' % show(hosts))
    intents = []
    for host in hosts:
        if host not in hostvars:
            continue   # pod_problems names it
        hostv = hostvars[host]
        intents.append((host, dict((key, hostv[variable] if variable in hostv else default)
                                   for key, (variable, default) in INTENT_VARIABLES.items())))
    out = []
    for key, (variable, default) in INTENT_VARIABLES.items():
        found = pod_wide_difference(variable, [(host, intent[key]) for host, intent in intents], INTENT_WHY, default)
        if found:
            odd_hosts, value, sentence = found
            out.append({'variable': variable, 'value': value, 'hosts': odd_hosts, 'problem': sentence})
    groups = {}   # the hosts of each different intent (4 and '4' are the same value)
    for host, intent in intents:
        groups.setdefault(canonical(intent), (intent, []))[1].append(host)
    for intent, group_hosts in groups.values():
        for problem in _intent_problems(intent):
            if len(groups) > 1:
                problem = dict(problem, hosts=group_hosts, problem='%s: %s' % (name_nodes(group_hosts), problem['problem']))
            out.append(problem)
    return out


def _intent_problems(intent):
    if not isinstance(intent, Mapping):
        _error('roce_intent_problems', 'intent %s is not a dict of %s' % (show(intent), ', '.join(INTENT_KEYS)))
    unknown = sorted(str(key) for key in set(intent) - set(INTENT_KEYS))
    if unknown:
        _error('roce_intent_problems', 'intent key %s is not known: the keys are %s' % (', '.join(unknown), ', '.join(INTENT_KEYS)))
    out = []
    priority = _ranged(out, 'npuops_lossless_priority', intent.get('lossless_priority'), 0, PRIORITY_MAX,
                       'PFC has the 8 priorities 0 to 7')
    dscp = _ranged(out, 'npuops_lossless_dscp', intent.get('lossless_dscp'), 0, DSCP_MAX, 'a DSCP has 6 bits')
    tc_value = intent.get('lossless_tc')
    tc = _ranged(out, 'npuops_lossless_tc', tc_value, 0, TC_MAX,
                 'the 910B has the traffic classes 0 to 3 (hccn_tool -dscp_to_tc -s dscp %d tc %s exits 10 with "The value of tc '
                 'you input is out of the valid range!")' % (33 if dscp is None else dscp, show(tc_value) if integer(tc_value) is None
                                                             else integer(tc_value)))
    _dscp_map(out, intent.get('dscp_to_tc'), dscp, tc)
    _mtu(out, intent.get('mtu'))
    sl_value = intent.get('hccl_rdma_sl')
    if sl_value is not None:
        text = rules.rdma_sl_problem('npuops_hccl_rdma_sl', sl_value, priority)
        if text:
            out.append({'variable': 'npuops_hccl_rdma_sl', 'value': sl_value, 'problem': text})
    rdma_tc = intent.get('hccl_rdma_tc')
    if rdma_tc is not None:
        text = rules.rdma_tc_problem('npuops_hccl_rdma_tc', rdma_tc, dscp)
        if text:
            out.append({'variable': 'npuops_hccl_rdma_tc', 'value': rdma_tc, 'problem': text})
    return out


class FilterModule:
    """npuops.ascend RoCE parameter-plane filters."""

    def filters(self):
        return {
            'npu_ip_plan': npu_ip_plan,
            'hccl_rdma_tc': hccl_rdma_tc,
            'roce_intent_problems': roce_intent_problems,
        }
