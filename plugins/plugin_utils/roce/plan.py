# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan of the RoCE parameter plane: the addresses of a node's NPU ports (the filter npu_ip_plan) and the port
config stage 4 asks hccn_config for (roce_desired_config, and port_config_subset for one step of a change).

The documentation of each filter is in plugins/filter/<name>.yml.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils import hccl_rules as rules
from ansible_collections.npuops.ascend.plugins.plugin_utils.hccl_rules import integer, show
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.intent import lossless_values


MAX_NPUS = 1024
PLAN_KEYS = ('network', 'layout', 'prefix', 'host_offset')
PLAN_DEFAULTS = {'layout': 'rail', 'prefix': 24, 'host_offset': 10}
LAYOUTS = ('rail', 'flat')
PORT_KEYS = ('device', 'address', 'netmask')


def _error(name, text):
    raise AnsibleFilterError('%s: %s' % (name, text))


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


# --- the port config of the change ------------------------------------------------------------------------------


def port_config_subset(config, keys):
    """Only ``device`` and ``keys`` of every entry of an hccn_config ``config`` list (one step of a change)."""
    keys = [keys] if isinstance(keys, str) else list(keys or [])
    return [dict((k, v) for k, v in entry.items() if k == 'device' or k in keys) for entry in config or []
            if isinstance(entry, Mapping) and any(k in entry for k in keys)]


def roce_desired_config(devices, intent, ports=None, addresses='check'):
    """The hccn_config ``config`` of one node for the lossless intent: per device MTU, PFC priority and DSCP map,
    with the planned address and netmask when ``addresses`` is ``apply``."""
    mtu, priority, dscp, tc = lossless_values(intent, 'roce_desired_config')
    extra = intent.get('dscp_to_tc') or []
    if not isinstance(extra, (list, tuple)):
        raise AnsibleFilterError('roce_desired_config: intent dscp_to_tc must be a list of {dscp, tc}, got %r' % (extra,))
    table = dict((int(item['dscp']), int(item['tc'])) for item in extra)
    table[dscp] = tc
    planned = dict((int(port['device']), port) for port in ports or [])
    out = []
    for device in devices or []:
        device = int(device)
        entry = {'device': device, 'mtu': mtu, 'pfc_priorities': [priority],
                 'dscp_to_tc': [{'dscp': key, 'tc': table[key]} for key in sorted(table)]}
        if addresses == 'apply':
            if device not in planned:
                raise AnsibleFilterError('roce_desired_config: NPU %d has no planned address (npuops_npu_ports or '
                                         'npuops_npu_ip_plan)' % device)
            entry['address'] = str(planned[device]['address'])
            entry['netmask'] = str(planned[device]['netmask'])
        out.append(entry)
    return out
