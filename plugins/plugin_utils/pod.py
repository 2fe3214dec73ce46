# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory of a PoD checked before anything touches a node (the filter pod_problems), and the PoD-wide
comparison of a variable across the nodes that the RoCE intent check uses as well.

The documentation of the filter is in plugins/filter/pod_problems.yml.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils import hccl_rules as rules
from ansible_collections.npuops.ascend.plugins.plugin_utils.hccl_rules import (
    LOOPBACK_AND_BRIDGES,
    refused_interfaces,
    require_netaddr,
    split_socket_ifname,
)
from ansible_collections.npuops.ascend.plugins.plugin_utils.hccl_rules import integer as _integer
from ansible_collections.npuops.ascend.plugins.plugin_utils.hccl_rules import ip as _ip
from ansible_collections.npuops.ascend.plugins.plugin_utils.hccl_rules import ipv4 as _ipv4
from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import short_repr

DEFAULT_REQUIRED = ['npuops_npu_ports', 'npuops_hccl_if_ip', 'npuops_hccl_socket_ifname']
SPEC_KEYS = ('parameter_plane', 'npus_per_node', 'required', 'ranges', 'pod_wide')
PORT_KEYS = ('device', 'address', 'netmask')

# A node's name is the name of its report files (<name>.json, <name>.md, <name>.snapshot.json in the run's directory):
# letters and digits of any script, combining marks, and these; at most this many bytes in UTF-8 (a file name has 255).
HOST_NAME_PUNCTUATION = '.-_:'
HOST_NAME_MAX_BYTES = 200
HOST_NAME_RULE = ('The stages write the report of each node to files named after it (<name>.json), so a host name is made '
                  'of letters and digits (any script) and . - _ :, does not start with . or -, has no .. and is at most %d '
                  'bytes in UTF-8; rename the host in the inventory (ansible_host keeps its address)' % HOST_NAME_MAX_BYTES)
# How many nodes a sentence names before it counts the rest.
NAMED_NODES = 8
POD_WIDE_WHY = 'it is PoD-wide (every node must have the same value)'


def _problem(out, host, variable, value, text):
    if variable is None:
        sentence = '%s %s.' % (host, text)
    else:
        sentence = '%s: %s %s (value: %s).' % (host, variable, text, short_repr(value, 80))
    out.append({'host': host, 'variable': variable, 'value': value, 'problem': sentence})


def _unset(value):
    return value is None or (isinstance(value, (str, list, tuple, Mapping)) and not value)


def host_name_problem(name):
    """Why the inventory host name ``name`` cannot name a node's report files, or None when it can."""
    if not isinstance(name, str) or not name:
        return 'it is empty'
    size = len(name.encode('utf-8', 'surrogatepass'))
    if size > HOST_NAME_MAX_BYTES:
        return 'it has %d bytes in UTF-8, more than %d' % (size, HOST_NAME_MAX_BYTES)
    for char in name:
        if char not in HOST_NAME_PUNCTUATION and unicodedata.category(char)[0] not in 'LMN':
            return 'it has %r' % char
    if '..' in name:
        return "it has '..'"
    if name[0] in '.-':
        return 'it starts with %s' % name[0]
    return None


def canonical(value):
    """A key that is equal for two values the stages use alike: 4 and '4' (an INI value), equal lists and dicts."""
    if value is None or isinstance(value, bool):
        return (type(value).__name__, value)
    number = _integer(value)
    if number is not None:
        return ('int', number)
    if isinstance(value, str):
        return ('str', str(value))
    if isinstance(value, Mapping):
        return ('dict', tuple(sorted((str(key), canonical(item)) for key, item in value.items())))
    if isinstance(value, (list, tuple)):
        return ('list', tuple(canonical(item) for item in value))
    return ('repr', repr(value))


def _shown(value):
    return 'unset' if value is None else short_repr(value, 80)


def name_nodes(hosts):
    """node01, node02 ... and N other nodes."""
    named = ', '.join(hosts[:NAMED_NODES])
    rest = len(hosts) - NAMED_NODES
    return named if rest <= 0 else '%s and %d other node%s' % (named, rest, '' if rest == 1 else 's')


def pod_wide_difference(variable, values, why=POD_WIDE_WHY, default=None):
    """(odd hosts, odd value, sentence) when ``values`` [(host, value)] differ between the hosts, else None.

    The value most hosts have is the reference; on a tie, ``default`` (the value of a host that does not set the
    variable: the others set it for themselves), then the value of the first host. The sentence names every other value
    with its hosts, then the reference with its hosts.
    """
    groups = {}
    for host, value in values:
        groups.setdefault(canonical(value), [value, []])[1].append(host)
    if len(groups) < 2:
        return None
    order = list(groups)
    usual = canonical(default)
    reference = max(order, key=lambda key: (len(groups[key][1]), key == usual, -order.index(key)))
    odd = ['%s on %s' % (_shown(groups[key][0]), name_nodes(groups[key][1])) for key in order if key != reference]
    first_odd = next(key for key in order if key != reference)
    sentence = '%s is %s but %s on %s: %s; set it once in group_vars, not in host_vars or per host' % (
        variable, ', '.join(odd[:-1]) + ' and ' + odd[-1] if len(odd) > 1 else odd[0], _shown(groups[reference][0]),
        name_nodes(groups[reference][1]), why)
    return groups[first_odd][1], groups[first_odd][0], sentence


def _bad_interface(name, exact):
    """Why HCCL must not use the interface(s) ``name`` selects (exact name, or prefix when not ``exact``), or None."""
    for _name, shown, _what, as_prefix in refused_interfaces([name], exact, LOOPBACK_AND_BRIDGES):
        if as_prefix:
            return 'the prefix %s also matches %s' % (name, shown)
        return '%s is a loopback or bridge interface' % name
    return None


def _check_ifname(out, host, value):
    variable = 'npuops_hccl_socket_ifname'
    if not isinstance(value, str) or not value.strip():
        _problem(out, host, variable, value, 'must be a non-empty string of interface names or prefixes')
        return
    try:
        exclude, exact, names = split_socket_ifname(value)
    except ValueError as exc:
        _problem(out, host, variable, value, 'is not a valid HCCL_SOCKET_IFNAME value: %s' % exc)
        return
    if exclude:
        return
    for name in names:
        why = _bad_interface(name, exact)
        if why:
            _problem(out, host, variable, value, 'selects an interface HCCL must not use: %s' % why)


def _check_ports(out, host, ports, plane, npus, seen):
    variable = 'npuops_npu_ports'
    if not isinstance(ports, (list, tuple)):
        _problem(out, host, variable, ports, 'must be a list of {device, address, netmask}')
        return
    devices = {}
    for index, port in enumerate(ports):
        if not isinstance(port, Mapping) or set(port) != set(PORT_KEYS):
            _problem(out, host, variable, port, 'item %d must have exactly the keys device, address and netmask' % index)
            continue
        device = port['device']
        if isinstance(device, bool) or not isinstance(device, int) or not 0 <= device < npus:
            _problem(out, host, variable, port, 'item %d has device %s, not an NPU id from 0 to %d' % (index, short_repr(device), npus - 1))
            continue
        if device in devices:
            _problem(out, host, variable, port, 'lists NPU %d twice (items %d and %d)' % (device, devices[device], index))
            continue
        devices[device] = index
        address, netmask = _ipv4(port['address']), _ipv4(port['netmask'])
        if address is None:
            _problem(out, host, variable, port, 'NPU %d has address %s, not an IPv4 address' % (device, short_repr(port['address'])))
            continue
        if netmask is None or not netmask.is_netmask() or int(netmask) == 0:
            _problem(out, host, variable, port, 'NPU %d has netmask %s, not an IPv4 netmask' % (device, short_repr(port['netmask'])))
            continue
        network = rules.netaddr.IPNetwork('%s/%s' % (address, netmask))
        if network.prefixlen < 31 and address in (network.network, network.broadcast):
            _problem(out, host, variable, port, 'NPU %d address %s is the %s address of %s, not a host address'
                     % (device, address, 'network' if address == network.network else 'broadcast', network.cidr))
            continue
        if plane is not None and address not in plane:
            _problem(out, host, variable, port, 'NPU %d address %s is outside the parameter plane %s' % (device, address, plane))
            continue
        seen.append((host, device, str(address), str(netmask), port))
    missing = [device for device in range(npus) if device not in devices]
    if missing:
        _problem(out, host, variable, ports, 'has no port for NPU %s (every NPU 0-%d needs exactly one)'
                 % (', '.join(str(device) for device in missing), npus - 1))


def _spec(spec):
    if not isinstance(spec, Mapping):
        raise AnsibleFilterError('pod_problems: spec must be a dict, got %s %s' % (type(spec).__name__, short_repr(spec)))
    unknown = sorted(set(spec) - set(SPEC_KEYS))
    if unknown:
        raise AnsibleFilterError('pod_problems: unknown spec key%s %s; known keys: %s'
                                 % ('s' if len(unknown) > 1 else '', ', '.join(unknown), ', '.join(SPEC_KEYS)))
    plane = spec.get('parameter_plane')
    if plane is not None:
        try:
            plane = rules.netaddr.IPNetwork(plane, version=4)
        except (rules.netaddr.AddrFormatError, ValueError, TypeError) as exc:
            raise AnsibleFilterError('pod_problems: parameter_plane %s is not an IPv4 CIDR such as 10.20.0.0/16'
                                     % short_repr(spec.get('parameter_plane'))) from exc
    npus = spec.get('npus_per_node', 8)
    if isinstance(npus, bool) or not isinstance(npus, int) or npus < 1:
        raise AnsibleFilterError('pod_problems: npus_per_node must be a positive integer, got %s' % short_repr(npus))
    required = spec.get('required', DEFAULT_REQUIRED)
    if not isinstance(required, (list, tuple)) or not all(isinstance(name, str) for name in required):
        raise AnsibleFilterError('pod_problems: required must be a list of variable names, got %s' % short_repr(required))
    ranges = spec.get('ranges') or {}
    if not isinstance(ranges, Mapping):
        raise AnsibleFilterError('pod_problems: ranges must be a dict of variable: [low, high], got %s' % short_repr(ranges))
    for name, bounds in ranges.items():
        if (not isinstance(bounds, (list, tuple)) or len(bounds) != 2 or _integer(bounds[0]) is None
                or _integer(bounds[1]) is None or _integer(bounds[0]) > _integer(bounds[1])):
            raise AnsibleFilterError('pod_problems: the range of %s must be [low, high] with integers low <= high, got %s'
                                     % (name, short_repr(bounds)))
    pod_wide = spec.get('pod_wide') or {}
    if not isinstance(pod_wide, Mapping) or not all(isinstance(name, str) for name in pod_wide):
        raise AnsibleFilterError('pod_problems: pod_wide must be a dict of variable: default value (the value a node that '
                                 'does not set the variable has), got %s' % short_repr(pod_wide))
    return (plane, npus, list(required), {name: (_integer(b[0]), _integer(b[1])) for name, b in ranges.items()},
            dict(pod_wide))


def pod_problems(hostvars, hosts, spec):
    """The inventory problems of a PoD: a list of {host, variable, value, problem}, empty when all is well."""
    require_netaddr('pod_problems')
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError('pod_problems: the first argument must be hostvars, got %s' % type(hostvars).__name__)
    if isinstance(hosts, str) or not isinstance(hosts, (list, tuple)) or not all(isinstance(host, str) for host in hosts):
        raise AnsibleFilterError('pod_problems: hosts must be a list of inventory hostnames, got %s' % short_repr(hosts))
    plane, npus, required, ranges, pod_wide = _spec(spec)
    out = []
    seen = []
    shared = {name: [] for name in pod_wide}
    layouts = set()
    for host in hosts:
        if host not in hostvars:
            _problem(out, host, None, None, 'is not a host of this inventory')
            continue
        why = host_name_problem(host)
        if why:
            out.append({'host': host, 'variable': 'inventory_hostname', 'value': host,
                        'problem': '%s: the inventory host name is not usable: %s. %s.'
                                   % (short_repr(host, 300), why, HOST_NAME_RULE)})
        hostv = hostvars[host]
        for name, default in pod_wide.items():
            shared[name].append((host, hostv[name] if name in hostv else default))
        plan = hostv.get('npuops_npu_ip_plan')
        if isinstance(plan, Mapping):
            layouts.add(plan.get('layout') or 'rail')
        for name in required:
            value = hostv.get(name)
            if _unset(value):
                _problem(out, host, name, value, 'is not set; it is required for every node of the PoD')
        if not _unset(hostv.get('npuops_npu_ports')):
            _check_ports(out, host, hostv['npuops_npu_ports'], plane, npus, seen)
        if_ip = hostv.get('npuops_hccl_if_ip')
        if not _unset(if_ip):
            address = _ip(if_ip)
            if address is None:
                _problem(out, host, 'npuops_hccl_if_ip', if_ip, 'is not an IP address')
            elif plane is not None and address.version == 4 and address in plane:
                _problem(out, host, 'npuops_hccl_if_ip', if_ip, 'lies inside the parameter plane %s; HCCL_IF_IP is the '
                         'host-network address and must not be an NPU port address' % plane)
        ifname = hostv.get('npuops_hccl_socket_ifname')
        if not _unset(ifname):
            _check_ifname(out, host, ifname)
        for name, (low, high) in ranges.items():
            value = hostv.get(name)
            if value is None:
                continue
            number = _integer(value)
            if number is None:
                _problem(out, host, name, value, 'must be an integer from %d to %d' % (low, high))
            elif not low <= number <= high:
                _problem(out, host, name, value, 'is outside the range %d to %d' % (low, high))
    differences = []   # first: a PoD-wide value that differs is often the cause of the problems of its nodes
    for name, values in shared.items():
        found = pod_wide_difference(name, values, default=pod_wide[name])
        if found:
            odd_hosts, value, sentence = found
            differences.append({'host': odd_hosts[0], 'variable': name, 'value': value, 'problem': sentence})
    out[:0] = differences
    _cross_checks(out, seen)
    _rail_check(out, seen, layouts.pop() if len(layouts) == 1 else None)
    return out


def _rail_check(out, seen, declared):
    """Rail layout: each NPU of a node in a subnet of its own. Flat layout (every port of the PoD in one subnet): no rule.

    ``declared`` is the layout of npuops_npu_ip_plan (rail or flat) when the nodes have one, else None: then the ports
    decide - the PoD has the rail layout when a node has each of its NPUs in a subnet of its own. Only the ports with the
    PoD's netmask count (another netmask is a problem of its own).
    """
    if declared == 'flat' or not seen:
        return
    counts = {}
    for _host, _device, _address, netmask, _port in seen:
        counts[netmask] = counts.get(netmask, 0) + 1
    common = max(counts, key=lambda mask: (counts[mask], -list(counts).index(mask)))
    nodes = {}
    for host, device, address, netmask, port in seen:
        if netmask == common:
            cidr = str(rules.netaddr.IPNetwork('%s/%s' % (address, netmask)).cidr)
            nodes.setdefault(host, {}).setdefault(cidr, []).append((device, port))
    own = [host for host, subnets in nodes.items() if all(len(ports) == 1 for ports in subnets.values())]
    if declared == 'rail':
        why = 'npuops_npu_ip_plan has the rail layout: NPU d of every node is on rail d, in the subnet of rail d'
    elif own:
        why = ('the PoD has the rail layout (%s %s each NPU in a subnet of its own): NPU d of every node is on rail d, in '
               'the subnet of rail d' % (name_nodes(own), 'has' if len(own) == 1 else 'have'))
    else:
        return   # no node has a subnet per NPU: the flat layout, where the NPUs of a node share the subnet
    for host, subnets in nodes.items():
        for cidr, ports in sorted(subnets.items(), key=lambda item: min(device for device, _port in item[1])):
            if len(ports) > 1:
                ports = sorted(ports, key=lambda item: item[0])
                names = ['NPU %d' % device for device, _port in ports]
                value = [port for _device, port in ports]
                out.append({'host': host, 'variable': 'npuops_npu_ports', 'value': value,
                            'problem': '%s: npuops_npu_ports puts %s and %s in one subnet, %s: %s, so each NPU of a node '
                                       'needs a subnet of its own (value: %s).'
                                       % (host, ', '.join(names[:-1]), names[-1], cidr, why, short_repr(value, 80))})


def _cross_checks(out, seen):
    """One netmask across the PoD; no address used twice."""
    counts = {}
    for _host, _device, _address, netmask, _port in seen:
        counts[netmask] = counts.get(netmask, 0) + 1
    if len(counts) > 1:
        common = max(counts, key=lambda mask: (counts[mask], -list(counts).index(mask)))
        for host, device, _address, netmask, port in seen:
            if netmask != common:
                _problem(out, host, 'npuops_npu_ports', port, 'NPU %d has netmask %s but the PoD uses one netmask, %s on %d '
                         'of %d ports' % (device, netmask, common, counts[common], len(seen)))
    owners = {}
    for host, device, address, _netmask, port in seen:
        if address in owners:
            first_host, first_device = owners[address]
            _problem(out, host, 'npuops_npu_ports', port, 'NPU %d address %s is also used by NPU %d on %s'
                     % (device, address, first_device, first_host))
        else:
            owners[address] = (host, device)
