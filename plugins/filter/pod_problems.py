# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inventory validation of a PoD before anything touches a node: pod_problems.

The documentation of the filter is in pod_problems.yml next to this file.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils import _hccl_rules as rules
from ansible_collections.npuops.ascend.plugins.plugin_utils._hccl_rules import (
    LOOPBACK_AND_BRIDGES,
    refused_interfaces,
    require_netaddr,
    split_socket_ifname,
)
from ansible_collections.npuops.ascend.plugins.plugin_utils._hccl_rules import integer as _integer
from ansible_collections.npuops.ascend.plugins.plugin_utils._hccl_rules import ip as _ip
from ansible_collections.npuops.ascend.plugins.plugin_utils._hccl_rules import ipv4 as _ipv4
from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import short_repr

DEFAULT_REQUIRED = ['npuops_npu_ports', 'npuops_hccl_if_ip', 'npuops_hccl_socket_ifname']
SPEC_KEYS = ('parameter_plane', 'npus_per_node', 'required', 'ranges')
PORT_KEYS = ('device', 'address', 'netmask')


def _problem(out, host, variable, value, text):
    if variable is None:
        sentence = '%s %s.' % (host, text)
    else:
        sentence = '%s: %s %s (value: %s).' % (host, variable, text, short_repr(value, 80))
    out.append({'host': host, 'variable': variable, 'value': value, 'problem': sentence})


def _unset(value):
    return value is None or (isinstance(value, (str, list, tuple, Mapping)) and not value)


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
    return plane, npus, list(required), {name: (_integer(b[0]), _integer(b[1])) for name, b in ranges.items()}


def pod_problems(hostvars, hosts, spec):
    """The inventory problems of a PoD: a list of {host, variable, value, problem}, empty when all is well."""
    require_netaddr('pod_problems')
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError('pod_problems: the first argument must be hostvars, got %s' % type(hostvars).__name__)
    if isinstance(hosts, str) or not isinstance(hosts, (list, tuple)) or not all(isinstance(host, str) for host in hosts):
        raise AnsibleFilterError('pod_problems: hosts must be a list of inventory hostnames, got %s' % short_repr(hosts))
    plane, npus, required, ranges = _spec(spec)
    out = []
    seen = []
    for host in hosts:
        if host not in hostvars:
            _problem(out, host, None, None, 'is not a host of this inventory')
            continue
        hostv = hostvars[host]
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
    _cross_checks(out, seen)
    return out


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


class FilterModule:
    """npuops.ascend inventory filters."""

    def filters(self):
        return {
            'pod_problems': pod_problems,
        }
