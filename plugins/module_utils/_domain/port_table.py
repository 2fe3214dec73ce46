# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Desired state of the NPU ports: one attribute table drives validation, reading, diff and rendering.

Pure code: no AnsibleModule, no subprocess, standard library (plus Ansible's argument-spec
validator for backup documents), Python >= 3.9. Everything that decides what hccn_config will
do lives here, so it can be tested without a module, and every comparison quirk is in one place.

Vocabulary (the ``config`` option of hccn_config, its ``gathered`` result and the ``config``
result of hccn_info; one dict per device)::

    {device: 0, address: '10.0.0.10', netmask: '255.255.255.0', gateway: '10.0.0.1',
     netdetect: '10.0.0.1', mtu: 9000, pfc_priorities: [4], dscp_to_tc: [{dscp: 33, tc: 3}],
     tls: false}

Each row of :data:`ATTRIBUTES` (a :class:`PortAttribute`) owns some of these keys and says how
to validate them, which ``hccn_tool -<query> -g`` reads them and how its parse becomes
vocabulary, the ``-<query> -s`` words that set them, and whether setting them bounces the link.
:class:`PortTable` does the rest generically. Adding an attribute is one row, one parser and
one fixture. Internally a map attribute (``dscp_to_tc``) is a dict ``{dscp: tc}``;
:meth:`PortTable.export` turns it back into the list form of the option.

Addresses are checked with the standard library ``ipaddress`` module, which every managed
node has.
"""

from __future__ import annotations

import ipaddress
import json
import re

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.npuops.ascend.plugins.module_utils._domain.products import DSCP_MAX, MTU_MAX, MTU_MIN, PRIORITY_MAX, TC_MAX
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import hccn_tool as hccn_parsers
from ansible_collections.npuops.ascend.plugins.module_utils._tools import hccn_tool as _hccn_tool
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import ModuleFailure

# The hardware limits (MTU, priority, DSCP, traffic class) are the product table's, imported above; the count of
# lossless priorities is the port table's own.
PFC_MAX_PRIORITIES = 4

BACKUP_FORMAT = 'npuops.ascend.hccn_config.backup'
BACKUP_VERSION = 1


class ConfigError(ModuleFailure):
    """A request that must not reach hccn_tool; ``errors`` lists every problem found."""

    def __init__(self, errors, subject=None):
        self.errors = list(errors)
        super().__init__('invalid request, nothing was changed: %s' % '; '.join(self.errors), subject=subject,
                         errors=self.errors)


class BackupError(ModuleFailure):
    """A backup document that cannot be restored; nothing was changed."""


# --------------------------------------------------------------------------------------------
# value helpers shared by the rows
# --------------------------------------------------------------------------------------------

def _ipv4(value):
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError('not a string')
    return ipaddress.IPv4Address(value.strip())


def _netmask(value):
    """Return the dotted netmask for '255.255.255.0', '24' or '/24'; raise ValueError."""
    text = str(value).strip().lstrip('/')
    if text.isdigit() and text.isascii():
        prefix = int(text)
        if prefix < 1 or prefix > 32:
            raise ValueError('prefix length %s is outside 1-32' % text)
        return str(ipaddress.IPv4Network('0.0.0.0/%d' % prefix).netmask)
    mask = _ipv4(text)
    try:
        ipaddress.IPv4Network('0.0.0.0/%s' % mask)
    except ValueError:
        raise ValueError('%s is not a contiguous netmask' % text) from None
    if str(mask) == '0.0.0.0':
        raise ValueError('0.0.0.0 is not a usable netmask')
    return str(mask)


def network_of(address, netmask):
    """Return the IPv4Network of address/netmask (strict=False)."""
    return ipaddress.IPv4Network('%s/%s' % (address, netmask), strict=False)


def _int(value):
    """An int from an int or a string of ASCII digits; booleans and floats are refused."""
    if isinstance(value, bool):
        raise ValueError('a boolean')
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.match(r'^\s*-?[0-9]+\s*$', value):
        return int(value)
    raise ValueError('not an integer')


def _addr_or_none(value):
    """A read address in vocabulary form: None when unset (empty or 0.0.0.0)."""
    if value in (None, ''):
        return None
    try:
        addr = _ipv4(value)
    except ValueError:
        return str(value)
    return None if addr.is_unspecified else str(addr)


def _show(value):
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return 'not set' if value is None else str(value)


def pfc_bitmap(priorities):
    """[4] -> '0,0,0,0,1,0,0,0'."""
    bits = ['0'] * (PRIORITY_MAX + 1)
    for prio in priorities:
        bits[int(prio)] = '1'
    return ','.join(bits)


# --------------------------------------------------------------------------------------------
# the rows
# --------------------------------------------------------------------------------------------

class PortAttribute:
    """One row of the port attribute table.

    ``name``: the row's name; ``query``: the hccn_tool query that reads (``-<query> -g``) and
    sets (``-<query> -s``) it; ``options``: ``{config key: argspec}`` of the keys it owns;
    ``normalise(values, prefix, errors)``: the given keys of one entry (only those present)
    -> normalised dict, appending every problem to ``errors``; ``read(parsed)``: the parser's
    dict (None when the tool says "not configured") -> ``{key: value or None}``;
    ``render(values)``: the changed keys -> list of word lists, one set call each;
    ``link_affecting``: a set bounces the link; ``item_keys``: for a map value, the names of
    its key and value in the list form; ``needs``: other queries to read with this one;
    ``describe(have, want)``: optional mismatch text; ``parser``: the parser, by default
    ``PARSERS[query]`` of the hccn_tool parsers.
    """

    def __init__(self, name, query, options, normalise, read, render, link_affecting=False, item_keys=None,
                 needs=(), describe=None, parser=None, entry_check=None, have_check=None):
        self.name = name
        self.query = query
        self.options = options
        self.keys = tuple(options)
        self.normalise = normalise
        self.read = read
        self.render = render
        self.link_affecting = link_affecting
        self.item_keys = item_keys
        self.needs = tuple(needs)
        self.describe = describe
        self.parser = parser or hccn_parsers.PARSERS.get(query)
        self.entry_check = entry_check
        self.have_check = have_check

    @property
    def is_map(self):
        return self.item_keys is not None


def _check_host_address(prefix, address, netmask, errors):
    net = network_of(address, netmask)
    addr = _ipv4(address)
    if net.prefixlen < 31 and addr in (net.network_address, net.broadcast_address):
        kind = 'network' if addr == net.network_address else 'broadcast'
        errors.append('%s: address %s is the %s address of %s; choose a host address' % (prefix, address, kind, net))
    if addr.is_loopback or addr.is_multicast or addr.is_unspecified:
        errors.append('%s: address %s is not a unicast host address' % (prefix, address))


def _norm_ip(values, prefix, errors):
    if len(values) != 2:
        errors.append('%s: address and netmask must be given together (hccn_tool -ip -s sets both at once)' % prefix)
        return {}
    out = {}
    try:
        out['address'] = str(_ipv4(values['address']))
    except ValueError:
        errors.append('%s: address %r is not a valid IPv4 address' % (prefix, values['address']))
    try:
        out['netmask'] = _netmask(values['netmask'])
    except ValueError as exc:
        errors.append('%s: netmask %r is not valid: %s' % (prefix, values['netmask'], exc))
    if len(out) == 2:
        _check_host_address(prefix, out['address'], out['netmask'], errors)
        return out
    return {}


def _norm_address(key):
    def normalise(values, prefix, errors):
        value = values[key]
        try:
            addr = _ipv4(value)
        except ValueError:
            errors.append('%s: %s %r is not a valid IPv4 address' % (prefix, key, value))
            return {}
        if addr.is_unspecified:
            errors.append('%s: %s 0.0.0.0 cannot be set; hccn_tool has no way to clear it' % (prefix, key))
            return {}
        return {key: str(addr)}
    return normalise


def _gateway_entry_check(out, prefix, errors):
    """Inside one request: the gateway lies in the requested subnet and is not the port itself."""
    if 'gateway' in out and 'address' in out and 'netmask' in out:
        net = network_of(out['address'], out['netmask'])
        if _ipv4(out['gateway']) not in net:
            errors.append('%s: gateway %s is not in the subnet %s of address %s' % (prefix, out['gateway'], net, out['address']))
        elif out['gateway'] == out['address']:
            errors.append('%s: gateway %s is the port\'s own address' % (prefix, out['gateway']))


def _gateway_have_check(want, have, prefix):
    """Against the current state: a gateway needs an address, and must stay inside its subnet."""
    address = want.get('address', have.get('address'))
    netmask = want.get('netmask', have.get('netmask'))
    gateway = want.get('gateway', have.get('gateway'))
    if 'gateway' in want and (address is None or netmask is None):
        return ['%s: gateway %s requested but the port has no IP address; set address and netmask too '
                '(hccn_tool: "Unable to configure gateway, because ip is not configured!")' % (prefix, want['gateway'])]
    if gateway is not None and address is not None and netmask is not None:
        net = network_of(address, netmask)
        if _ipv4(gateway) not in net:
            if 'gateway' in want:
                return ['%s: gateway %s is not in the subnet %s of the port address %s' % (prefix, gateway, net, address)]
            return ['%s: the new address %s/%s leaves the current gateway %s outside the subnet %s; '
                    'set gateway in the same request' % (prefix, address, netmask, gateway, net)]
    return []


def _norm_mtu(values, prefix, errors):
    value = values['mtu']
    try:
        mtu = _int(value)
    except ValueError:
        errors.append('%s: mtu %r is not an integer' % (prefix, value))
        return {}
    if mtu < MTU_MIN or mtu > MTU_MAX:
        errors.append('%s: mtu %d is outside %d-%d (hccn_tool -mtu -s size accepts %d to %d)'
                      % (prefix, mtu, MTU_MIN, MTU_MAX, MTU_MIN, MTU_MAX))
        return {}
    return {'mtu': mtu}


def _norm_pfc(values, prefix, errors):
    prios = values['pfc_priorities']
    if not isinstance(prios, list):
        errors.append('%s: pfc_priorities must be a list of priorities 0-%d, got %r' % (prefix, PRIORITY_MAX, prios))
        return {}
    ok = True
    found = []
    for prio in prios:
        try:
            value = _int(prio)
        except ValueError:
            errors.append('%s: PFC priority %r is not an integer' % (prefix, prio))
            ok = False
            continue
        if value < 0 or value > PRIORITY_MAX:
            errors.append('%s: PFC priority %d is outside 0-%d' % (prefix, value, PRIORITY_MAX))
            ok = False
        found.append(value)
    found = sorted(set(found))
    if len(found) > PFC_MAX_PRIORITIES:
        errors.append('%s: %d PFC priorities requested (%s); the 910B allows at most %d'
                      % (prefix, len(found), ','.join(str(v) for v in found), PFC_MAX_PRIORITIES))
        ok = False
    return {'pfc_priorities': found} if ok else {}


def _norm_dscp_map(values, prefix, errors):
    mapping = values['dscp_to_tc']
    if not isinstance(mapping, list):
        errors.append('%s: dscp_to_tc must be a list of {dscp, tc} entries, got %r' % (prefix, mapping))
        return {}
    table = {}
    ok = True
    for item in mapping:
        if not isinstance(item, dict):
            errors.append('%s: dscp_to_tc entry %r is not a {dscp, tc} dictionary' % (prefix, item))
            ok = False
            continue
        try:
            dscp = _int(item.get('dscp'))
            tc = _int(item.get('tc'))
        except ValueError:
            errors.append('%s: dscp_to_tc entry %r needs integer dscp and tc' % (prefix, item))
            ok = False
            continue
        if dscp < 0 or dscp > DSCP_MAX:
            errors.append('%s: DSCP %d is outside 0-%d' % (prefix, dscp, DSCP_MAX))
            ok = False
        if tc < 0 or tc > TC_MAX:
            errors.append('%s: TC %d for DSCP %d is outside 0-%d; hccn_tool on the 910B rejects it '
                          '(e.g. "-dscp_to_tc -s dscp %d tc %d" exits 10 with "The value of tc you input is out of '
                          'the valid range!")' % (prefix, tc, dscp, TC_MAX, dscp, tc))
            ok = False
        if dscp in table and table[dscp] != tc:
            errors.append('%s: DSCP %d is mapped twice (to TC %d and TC %d)' % (prefix, dscp, table[dscp], tc))
            ok = False
        table[dscp] = tc
    return {'dscp_to_tc': table} if ok else {}


def _norm_bool(key):
    def normalise(values, prefix, errors):
        if isinstance(values[key], bool):
            return {key: values[key]}
        errors.append('%s: %s must be true or false, got %r' % (prefix, key, values[key]))
        return {}
    return normalise


def _read_ip(parsed):
    parsed = parsed or {}
    return {'address': _addr_or_none(parsed.get('address')), 'netmask': _addr_or_none(parsed.get('netmask'))}


def _read_address(key):
    def read(parsed):
        return {key: _addr_or_none((parsed or {}).get(key))}
    return read


def _read_mtu(parsed):
    mtu = (parsed or {}).get('mtu')
    return {'mtu': int(mtu) if isinstance(mtu, int) else None}


def _read_pfc(parsed):
    parsed = parsed or {}
    prios = parsed.get('priorities')
    if prios is None and parsed.get('bitmap'):
        prios = [i for i, bit in enumerate(str(parsed['bitmap']).split(',')) if bit.strip() == '1']
    return {'pfc_priorities': sorted(int(p) for p in prios) if prios is not None else None}


def _read_dscp_map(parsed):
    table = (parsed or {}).get('map')
    if table is None:
        return {'dscp_to_tc': None}
    return {'dscp_to_tc': dict((int(k), int(v)) for k, v in table.items())}


def _read_tls(parsed):
    enabled = (parsed or {}).get('enabled')
    return {'tls': bool(enabled) if enabled is not None else None}


def _describe_ip(have, want):
    return 'address/netmask %s/%s, expected %s/%s' % (have.get('address'), have.get('netmask'), want['address'], want['netmask'])


def _describe_pfc(have, want):
    current = have.get('pfc_priorities')
    return 'PFC bitmap still %s after setting priorities %s' % (
        pfc_bitmap(current) if current is not None else 'unknown',
        ','.join(str(p) for p in want['pfc_priorities']) or 'none')


def _describe_dscp(have, want):
    current = have.get('dscp_to_tc') or {}
    return '; '.join('DSCP %d maps to TC %s, expected %d' % (dscp, current.get(dscp), tc)
                     for dscp, tc in sorted(want['dscp_to_tc'].items()))


_ADDRESS = {'type': 'str'}

#: The port attributes hccn_config manages, in the order their set commands run on one device:
#: the IP first (the gateway must lie in its segment; hccn_tool refuses a gateway without an
#: IP), then the gateway and the detection address, then the settings that bounce the link,
#: TLS last.
ATTRIBUTES = (
    PortAttribute('ip', 'ip', {'address': _ADDRESS, 'netmask': _ADDRESS}, _norm_ip, _read_ip,
                  lambda v: [['address', v['address'], 'netmask', v['netmask']]],
                  needs=('gateway',), describe=_describe_ip),
    PortAttribute('gateway', 'gateway', {'gateway': _ADDRESS}, _norm_address('gateway'), _read_address('gateway'),
                  lambda v: [['gateway', v['gateway']]], needs=('ip',),
                  entry_check=_gateway_entry_check, have_check=_gateway_have_check),
    PortAttribute('netdetect', 'netdetect', {'netdetect': _ADDRESS}, _norm_address('netdetect'), _read_address('netdetect'),
                  lambda v: [['address', v['netdetect']]]),
    PortAttribute('mtu', 'mtu', {'mtu': {'type': 'int'}}, _norm_mtu, _read_mtu,
                  lambda v: [['size', v['mtu']]], link_affecting=True),
    PortAttribute('pfc', 'pfc', {'pfc_priorities': {'type': 'list', 'elements': 'int'}}, _norm_pfc, _read_pfc,
                  lambda v: [['bitmap', pfc_bitmap(v['pfc_priorities'])]], link_affecting=True, describe=_describe_pfc),
    PortAttribute('dscp_to_tc', 'dscp_to_tc',
                  {'dscp_to_tc': {'type': 'list', 'elements': 'dict',
                                  'options': {'dscp': {'type': 'int', 'required': True}, 'tc': {'type': 'int', 'required': True}}}},
                  _norm_dscp_map, _read_dscp_map,
                  lambda v: [['dscp', d, 'tc', t] for d, t in sorted(v['dscp_to_tc'].items())],
                  item_keys=('dscp', 'tc'), describe=_describe_dscp),
    PortAttribute('tls', 'tls', {'tls': {'type': 'bool'}}, _norm_bool('tls'), _read_tls,
                  lambda v: [['enable', '1' if v['tls'] else '0']]),
)


# --------------------------------------------------------------------------------------------
# the table
# --------------------------------------------------------------------------------------------

_COMMAND_LINE = re.compile(r'^\s*(?:[$#]\s*)?(?:\S*/)?hccn_tool\s+-i\s+(\d+)\s+-(\w+)\s+-g\b')


class PortTable:
    """Validation, reading, diff, rendering and backup of port settings, driven by the rows."""

    def __init__(self, rows=ATTRIBUTES):
        self.rows = tuple(rows)
        self.by_query = dict((row.query, row) for row in self.rows)
        self.by_key = dict((key, row) for row in self.rows for key in row.keys)
        self.keys = tuple(key for row in self.rows for key in row.keys)
        self.queries = tuple(row.query for row in self.rows)
        if len(self.by_query) != len(self.rows) or len(self.by_key) != len(self.keys):
            raise ValueError('every port attribute needs its own query and keys')

    # ---- the option ----------------------------------------------------------------------
    def argspec(self):
        """The suboptions of the ``config`` option: ``device`` plus every row's keys."""
        spec = {'device': {'type': 'int', 'required': True}}
        for row in self.rows:
            spec.update(row.options)
        return spec

    def link_affecting_queries(self):
        return tuple(row.query for row in self.rows if row.link_affecting)

    # ---- validation ----------------------------------------------------------------------
    def normalise_entry(self, entry, errors):
        """Validate one config entry; return the normalised dict (only the keys that were set) or None."""
        if not isinstance(entry, dict):
            errors.append('config entry %r is not a dictionary' % (entry,))
            return None
        unknown = sorted(str(k) for k in entry if k != 'device' and k not in self.by_key)
        if unknown:
            errors.append('config entry %r: unknown keys %s (known: %s)' % (entry, ', '.join(unknown), ', '.join(self.keys)))
            return None
        device = entry.get('device')
        try:
            device = _int(device)
        except ValueError:
            errors.append('config entry %r: device %r is not an integer (the NPU id used by hccn_tool -i)' % (entry, device))
            return None
        prefix = 'NPU %d' % device
        if device < 0:
            errors.append('%s: device id must be 0 or greater' % prefix)
            return None
        out = {'device': device}
        for row in self.rows:
            values = dict((key, entry[key]) for key in row.keys if entry.get(key) is not None)
            if values:
                out.update(row.normalise(values, prefix, errors))
        for row in self.rows:
            if row.entry_check:
                row.entry_check(out, prefix, errors)
        return out

    def validate(self, config):
        """Validate and normalise the ``config`` option; raise ConfigError listing every problem.

        Checks inside the request only (:meth:`check_against_have` needs the current state):
        value ranges, address/netmask/gateway consistency, duplicate devices and duplicate
        addresses. Returns the normalised entries sorted by device.
        """
        errors = []
        entries = []
        seen = set()
        for entry in config or []:
            norm = self.normalise_entry(entry, errors)
            if norm is None:
                continue
            if norm['device'] in seen:
                errors.append('NPU %d: the device appears more than once in config; merge the entries' % norm['device'])
                continue
            seen.add(norm['device'])
            entries.append(norm)
        owners = {}
        for norm in entries:
            if 'address' in norm:
                owners.setdefault(norm['address'], []).append(norm['device'])
        for address, devices in sorted(owners.items()):
            if len(devices) > 1:
                errors.append('address %s is requested for NPUs %s; every port needs its own address'
                              % (address, ', '.join(str(d) for d in devices)))
        if errors:
            raise ConfigError(errors)
        return sorted(entries, key=lambda e: e['device'])

    def check_against_have(self, want, have):
        """Checks that need the current state; a list of messages (empty when fine)."""
        errors = []
        for row in self.rows:
            if row.have_check:
                errors.extend(row.have_check(want, have, 'NPU %d' % want['device']))
        return errors

    # ---- reading -------------------------------------------------------------------------
    def queries_for(self, entry):
        """The GET queries needed to compare ``entry``, in table order (with each row's ``needs``)."""
        needed = set()
        for key in entry:
            row = self.by_key.get(key)
            if row is not None:
                needed.add(row.query)
                needed.update(row.needs)
        return [q for q in self.queries if q in needed]

    def read(self, query, parsed):
        """One parsed GET (None: not configured) -> ``{key: value or None}`` in vocabulary."""
        return self.by_query[query].read(parsed)

    # ---- comparing -----------------------------------------------------------------------
    def diff(self, want, have):
        """``{query: values to set}`` for the rows of ``want`` that differ from ``have``.

        A map attribute sets only the items whose value differs; other rows set all their
        requested keys when any of them differs.
        """
        changes = {}
        for row in self.rows:
            keys = [key for key in row.keys if key in want]
            if not keys:
                continue
            if row.is_map:
                key = keys[0]
                current = have.get(key) or {}
                delta = dict((k, v) for k, v in want[key].items() if current.get(k) != v)
                if delta:
                    changes[row.query] = {key: delta}
            elif any(have.get(key) != want[key] for key in keys):
                changes[row.query] = dict((key, want[key]) for key in keys)
        return changes

    def render(self, tool, device, changes):
        """Ordered set argv lists for one device (table order)."""
        argvs = []
        for row in self.rows:
            if row.query in changes:
                for words in row.render(changes[row.query]):
                    argvs.append(_hccn_tool.set_argv(tool, device, row.query, *words))
        return argvs

    def render_request(self, tool, entries):
        """``state: rendered``: the commands for ``entries`` against a port with nothing set."""
        argvs = []
        for entry in entries:
            argvs.extend(self.render(tool, entry['device'], self.diff(entry, {})))
        return argvs

    def merge(self, have, changes):
        """The expected state after applying ``changes`` to ``have``."""
        after = dict(have)
        for query, values in changes.items():
            for key, value in values.items():
                if self.by_query[query].is_map:
                    table = dict(after.get(key) or {})
                    table.update(value)
                    value = table
                after[key] = value
        return after

    def restrict(self, want, have):
        """Only the keys (and, for a map, the items) that ``want`` mentions."""
        out = {'device': want['device']}
        for key in self.keys:
            if key not in want:
                continue
            value = have.get(key)
            if self.by_key[key].is_map and value is not None:
                value = dict((k, value[k]) for k in want[key] if k in value)
            out[key] = value
        return out

    def mismatches(self, want, have):
        """After applying: the differences that remain, as readable texts (verification)."""
        out = []
        changes = self.diff(want, have)
        for row in self.rows:
            if row.query not in changes:
                continue
            values = changes[row.query]
            if row.describe:
                out.append(row.describe(have, values))
            else:
                out.extend('%s is %s, expected %s' % (key, _show(have.get(key)), _show(value)) for key, value in values.items())
        return out

    # ---- shapes --------------------------------------------------------------------------
    def export(self, state):
        """Internal device dict -> the option/return shape (a map as a list of item dicts)."""
        out = {'device': state['device']}
        for key in self.keys:
            if key not in state:
                continue
            value = state[key]
            row = self.by_key[key]
            if row.is_map and value is not None:
                first, second = row.item_keys
                value = [{first: k, second: v} for k, v in sorted(value.items())]
            elif isinstance(value, list):
                value = list(value)
            out[key] = value
        return out

    def diff_text(self, state):
        """One attribute per line, stable order, so --diff shows a readable unified diff."""
        lines = []
        for key in self.keys:
            if key not in state:
                continue
            value = state[key]
            row = self.by_key[key]
            if row.is_map and value is not None:
                lines.append('%s:' % key)
                lines.extend('  %s %s: %s %s' % (row.item_keys[0], k, row.item_keys[1], v) for k, v in sorted(value.items()))
            elif isinstance(value, list):
                lines.append('%s: [%s]' % (key, ', '.join(str(p) for p in value)))
            else:
                lines.append('%s: %s' % (key, _show(value)))
        return '\n'.join(lines) + '\n'

    def device_diff(self, host, before, after):
        """One entry of the module's ``diff`` list (Ansible accepts a list of diffs)."""
        header = 'NPU %d on %s' % (before['device'], host)
        return {'before_header': header, 'after_header': header,
                'before': self.diff_text(before), 'after': self.diff_text(after)}

    # ---- backup documents ----------------------------------------------------------------
    def backup_document(self, host, created, devices):
        """The JSON document written before the first set; ``devices`` are internal dicts."""
        return {
            'format': BACKUP_FORMAT,
            'version': BACKUP_VERSION,
            'host': host,
            'created': created,
            'devices': [self.export(d) for d in sorted(devices, key=lambda d: d['device'])],
        }

    def config_from_backup(self, document, host, allow_other_host=False):
        """Turn a backup document into a ``config`` list; return (config, warnings).

        The document must be an hccn_config backup written on ``host`` (unless
        ``allow_other_host``), and its devices pass the same argument-spec validation as the
        ``config`` option (then :meth:`validate`, like any request). Values that were not set
        at backup time (None) cannot be cleared with hccn_tool; they are left out and reported.
        """
        if not isinstance(document, dict) or document.get('format') != BACKUP_FORMAT:
            raise BackupError('not an hccn_config backup (expected "format": "%s")' % BACKUP_FORMAT)
        if document.get('version') != BACKUP_VERSION:
            raise BackupError('backup version %r is not supported (expected %d)' % (document.get('version'), BACKUP_VERSION))
        written_on = document.get('host')
        if written_on != host and not allow_other_host:
            raise BackupError('the backup was written on %s, not on this host %s; restoring it here would give this node '
                              'the settings (and addresses) of another one. Restore it on %s, or set allow_other_host=true '
                              'if that is really meant' % (written_on, host, written_on))
        devices = document.get('devices')
        if not isinstance(devices, list):
            raise BackupError('backup has no "devices" list')
        spec = {'devices': {'type': 'list', 'elements': 'dict', 'options': self.argspec()}}
        checked = ArgumentSpecValidator(spec).validate({'devices': devices})
        if checked.error_messages:
            raise BackupError('the backup does not pass the checks of the config option: %s'
                              % '; '.join(checked.error_messages))
        config = []
        warnings = []
        if written_on != host:
            warnings.append('restoring a backup written on %s on %s (allow_other_host=true)' % (written_on, host))
        for original, item in zip(devices, checked.validated_parameters['devices']):
            entry = {'device': item['device']}
            for key in self.keys:
                if key not in original:
                    continue
                if item.get(key) is None:
                    warnings.append('NPU %s: %s was not set when the backup was taken; hccn_tool cannot clear it, '
                                    'so the current value is left as it is' % (item['device'], key))
                    continue
                entry[key] = item[key]
            if ('address' in entry) != ('netmask' in entry):
                entry.pop('address', None)
                entry.pop('netmask', None)
                warnings.append('NPU %s: the backup holds only half of address/netmask; the IP is not restored' % item['device'])
            config.append(entry)
        return config, warnings

    # ---- state: parsed -------------------------------------------------------------------
    def parse_running_config(self, text):
        """``state: parsed``: return (config list, warnings) from captured GET output.

        The text is what a loop like ``for i in 0 1 ..; do echo "hccn_tool -i $i -ip -g";
        hccn_tool -i $i -ip -g; done`` prints: each block starts with the command line
        (optionally with a path or a ``$ `` prompt) followed by the tool's output. Blocks of
        other queries are ignored with a warning; an empty block (no output, as printed for a
        port with nothing configured) gives None values.
        """
        devices = {}
        warnings = []
        for device, query, block in split_running_config(text):
            if device is None:
                warnings.append('text before the first hccn_tool command line was ignored: %r' % block[:80])
                continue
            row = self.by_query.get(query)
            if row is None or row.parser is None:
                warnings.append('NPU %d: -%s output is not part of hccn_config and was ignored' % (device, query))
                continue
            parsed = row.parser(block) if block.strip() else None
            if parsed is not None and parsed.get('unparsed'):
                warnings.append('NPU %d: -%s -g lines not understood: %s; please report them with your driver version'
                                % (device, query, parsed['unparsed']))
            devices.setdefault(device, {'device': device}).update(row.read(parsed))
        return [self.export(devices[d]) for d in sorted(devices)], warnings


def split_running_config(text):
    """Split captured hccn_tool GET output into (device, query, block_text) tuples.

    Lines before the first command line are returned with device None.
    """
    blocks = []
    current = [None, None, []]
    for line in (text or '').splitlines():
        match = _COMMAND_LINE.match(line)
        if match:
            if current[0] is not None or any(x.strip() for x in current[2]):
                blocks.append((current[0], current[1], '\n'.join(current[2]).strip('\n')))
            current = [int(match.group(1)), match.group(2), []]
        else:
            current[2].append(line)
    if current[0] is not None or any(x.strip() for x in current[2]):
        blocks.append((current[0], current[1], '\n'.join(current[2]).strip('\n')))
    return blocks


def dump_backup(document):
    return json.dumps(document, indent=2, sort_keys=True) + '\n'


def backup_filename(host, stamp):
    """hccn-<host>-<stamp>.json with the host reduced to safe file name characters."""
    safe = re.sub(r'[^A-Za-z0-9._-]', '_', host or 'localhost')
    return 'hccn-%s-%s.json' % (safe, stamp)


#: The table hccn_config and hccn_info use.
PORTS = PortTable(ATTRIBUTES)
