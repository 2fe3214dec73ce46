# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Desired state of the NPU ports: validation, want vs have, hccn_tool argv rendering.

Pure functions only: no AnsibleModule, no subprocess, standard library only, Python >= 3.9.
Everything that decides what hccn_config will do lives here, so it can be tested without a
module, and every comparison quirk is in one place.

Vocabulary (the ``config`` option of hccn_config, one dict per device)::

    {device: 0, address: '10.0.0.10', netmask: '255.255.255.0', gateway: '10.0.0.1',
     netdetect: '10.0.0.1', mtu: 9000, pfc_priorities: [4], dscp_to_tc: [{dscp: 33, tc: 3}],
     tls: false}

Internally ``dscp_to_tc`` is a dict ``{dscp: tc}``; ``export_device`` turns it back into the
list form used by the option and the return values.

Addresses are checked with the standard library ``ipaddress`` module, which exists on every
managed node; ``netaddr`` is a controller-side dependency (filters) and is not used here.
"""

from __future__ import annotations

import ipaddress
import json
import re

MTU_MIN = 68
MTU_MAX = 9702
PFC_MAX_PRIORITIES = 4
PRIORITY_MAX = 7
DSCP_MAX = 63
TC_MAX = 3

ATTRIBUTES = ('address', 'netmask', 'gateway', 'netdetect', 'mtu', 'pfc_priorities', 'dscp_to_tc', 'tls')

# attribute -> hccn_tool query name (DESIGN section 3 vocabulary)
ATTRIBUTE_QUERY = {
    'address': 'ip',
    'netmask': 'ip',
    'gateway': 'gateway',
    'netdetect': 'netdetect',
    'mtu': 'mtu',
    'pfc_priorities': 'pfc',
    'dscp_to_tc': 'dscp_to_tc',
    'tls': 'tls',
}

# Order of the queries and of the set commands on one device: the IP first (the gateway must
# lie in its segment, hccn_tool refuses a gateway without an IP), then the gateway and the
# detection address, then the settings that may bounce the link, TLS last.
QUERY_ORDER = ('ip', 'gateway', 'netdetect', 'mtu', 'pfc', 'dscp_to_tc', 'tls')

# Changing these makes the port renegotiate; the module waits for `-link -g` to say UP.
LINK_AFFECTING_QUERIES = ('mtu', 'pfc')

BACKUP_FORMAT = 'npuops.ascend.hccn_config.backup'
BACKUP_VERSION = 1

# "not configured" answers of the GET commands (stderr, exit code = internal code & 0xFF)
_NOT_CONFIGURED = {
    'ip': re.compile(r'no ip was preset there', re.I),
    'gateway': re.compile(r'no gateway was preset there', re.I),
    # No capture shows -netdetect -g on a port without a netdetect address; the driver source has no
    # dedicated message, so the generic DSMI failure (0x4001) is read as "not set", as hccn_info does.
    'netdetect': re.compile(r'no \w+ was preset there|^Command execute failed!$', re.I | re.M),
}

BUSY_RC = 11
BUSY_TEXT = 'hccn_tool is busy, please try again.'


class ConfigError(ValueError):
    """A request that must not reach hccn_tool; ``errors`` lists every problem found."""

    def __init__(self, errors):
        self.errors = list(errors)
        super().__init__('; '.join(self.errors))


class BackupError(ValueError):
    """A backup document that cannot be restored."""


# --------------------------------------------------------------------------------------------
# validation and normalisation of the request
# --------------------------------------------------------------------------------------------

def _ipv4(value):
    return ipaddress.IPv4Address(str(value).strip())


def _netmask(value):
    """Return the dotted netmask for '255.255.255.0', '24' or '/24'; raise ValueError."""
    text = str(value).strip().lstrip('/')
    if text.isdigit():
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


def _check_host_address(prefix, address, netmask, errors):
    net = network_of(address, netmask)
    addr = _ipv4(address)
    if net.prefixlen < 31 and addr in (net.network_address, net.broadcast_address):
        kind = 'network' if addr == net.network_address else 'broadcast'
        errors.append('%s: address %s is the %s address of %s; choose a host address' % (prefix, address, kind, net))
    if addr.is_loopback or addr.is_multicast or addr.is_unspecified:
        errors.append('%s: address %s is not a unicast host address' % (prefix, address))


def _normalise_entry(entry, errors):
    """Validate one config entry; return the normalised dict (only the keys that were set)."""
    device = entry.get('device')
    if device is None or isinstance(device, bool):
        errors.append('config entry %r: device is required (the NPU id used by hccn_tool -i)' % (entry,))
        return None
    try:
        device = int(device)
    except (TypeError, ValueError):
        errors.append('config entry %r: device %r is not an integer' % (entry, device))
        return None
    prefix = 'NPU %d' % device
    if device < 0:
        errors.append('%s: device id must be 0 or greater' % prefix)
        return None
    out = {'device': device}

    address = entry.get('address')
    netmask = entry.get('netmask')
    if (address is None) != (netmask is None):
        errors.append('%s: address and netmask must be given together (hccn_tool -ip -s sets both at once)' % prefix)
    elif address is not None:
        try:
            out['address'] = str(_ipv4(address))
        except ValueError:
            errors.append('%s: address %r is not a valid IPv4 address' % (prefix, address))
        try:
            out['netmask'] = _netmask(netmask)
        except ValueError as exc:
            errors.append('%s: netmask %r is not valid: %s' % (prefix, netmask, exc))
        if 'address' in out and 'netmask' in out:
            _check_host_address(prefix, out['address'], out['netmask'], errors)

    for key in ('gateway', 'netdetect'):
        value = entry.get(key)
        if value is None:
            continue
        try:
            out[key] = str(_ipv4(value))
        except ValueError:
            errors.append('%s: %s %r is not a valid IPv4 address' % (prefix, key, value))
            continue
        if _ipv4(value).is_unspecified:
            errors.append('%s: %s 0.0.0.0 cannot be set; hccn_tool has no way to clear it' % (prefix, key))
    if 'gateway' in out and 'address' in out and 'netmask' in out:
        net = network_of(out['address'], out['netmask'])
        if _ipv4(out['gateway']) not in net:
            errors.append('%s: gateway %s is not in the subnet %s of address %s' % (prefix, out['gateway'], net, out['address']))
        elif out['gateway'] == out['address']:
            errors.append('%s: gateway %s is the port\'s own address' % (prefix, out['gateway']))

    mtu = entry.get('mtu')
    if mtu is not None:
        try:
            mtu = int(mtu)
        except (TypeError, ValueError):
            errors.append('%s: mtu %r is not an integer' % (prefix, mtu))
        else:
            if mtu < MTU_MIN or mtu > MTU_MAX:
                errors.append('%s: mtu %d is outside %d-%d (hccn_tool -mtu -s size accepts %d to %d)'
                              % (prefix, mtu, MTU_MIN, MTU_MAX, MTU_MIN, MTU_MAX))
            else:
                out['mtu'] = mtu

    prios = entry.get('pfc_priorities')
    if prios is not None:
        ok = True
        values = []
        for prio in prios:
            try:
                value = int(prio)
            except (TypeError, ValueError):
                errors.append('%s: PFC priority %r is not an integer' % (prefix, prio))
                ok = False
                continue
            if value < 0 or value > PRIORITY_MAX:
                errors.append('%s: PFC priority %d is outside 0-%d' % (prefix, value, PRIORITY_MAX))
                ok = False
            values.append(value)
        values = sorted(set(values))
        if len(values) > PFC_MAX_PRIORITIES:
            errors.append('%s: %d PFC priorities requested (%s); the 910B allows at most %d'
                          % (prefix, len(values), ','.join(str(v) for v in values), PFC_MAX_PRIORITIES))
            ok = False
        if ok:
            out['pfc_priorities'] = values

    mapping = entry.get('dscp_to_tc')
    if mapping is not None:
        table = {}
        ok = True
        for item in mapping:
            item = item or {}
            try:
                dscp = int(item.get('dscp'))
                tc = int(item.get('tc'))
            except (TypeError, ValueError):
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
        if ok:
            out['dscp_to_tc'] = table

    tls = entry.get('tls')
    if tls is not None:
        if isinstance(tls, bool):
            out['tls'] = tls
        else:
            errors.append('%s: tls must be true or false, got %r' % (prefix, tls))
    return out


def validate_config(config):
    """Validate and normalise the ``config`` option; raise ConfigError listing every problem.

    Checks inside the request only (see ``check_against_have`` for checks that need the
    current state): value ranges, address/netmask/gateway consistency, duplicate devices and
    duplicate addresses. Returns the normalised entries sorted by device.
    """
    errors = []
    entries = []
    seen = {}
    for entry in config or []:
        norm = _normalise_entry(entry or {}, errors)
        if norm is None:
            continue
        if norm['device'] in seen:
            errors.append('NPU %d: the device appears more than once in config; merge the entries' % norm['device'])
            continue
        seen[norm['device']] = norm
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


def queries_for(entry):
    """Return the GET queries needed to compare ``entry`` (in QUERY_ORDER).

    A new address needs the current gateway (it must stay inside the subnet) and a new
    gateway needs the current address, so those two queries come together.
    """
    needed = set(ATTRIBUTE_QUERY[key] for key in entry if key in ATTRIBUTE_QUERY)
    if 'ip' in needed or 'gateway' in needed:
        needed.update(('ip', 'gateway'))
    return [q for q in QUERY_ORDER if q in needed]


# --------------------------------------------------------------------------------------------
# argv rendering
# --------------------------------------------------------------------------------------------

def get_argv(tool, device, query):
    """``hccn_tool -i D -<query> -g``."""
    return [tool, '-i', str(device), '-' + query, '-g']


def link_argv(tool, device):
    return get_argv(tool, device, 'link')


def pfc_bitmap(priorities):
    """[4] -> '0,0,0,0,1,0,0,0'."""
    bits = ['0'] * (PRIORITY_MAX + 1)
    for prio in priorities:
        bits[int(prio)] = '1'
    return ','.join(bits)


def set_argvs(tool, device, query, after):
    """Return the set argv lists that bring ``query`` of ``device`` to ``after``.

    ``after`` holds the attributes of that query (for dscp_to_tc only the changed DSCPs).
    """
    base = [tool, '-i', str(device)]
    if query == 'ip':
        return [base + ['-ip', '-s', 'address', after['address'], 'netmask', after['netmask']]]
    if query == 'gateway':
        return [base + ['-gateway', '-s', 'gateway', after['gateway']]]
    if query == 'netdetect':
        return [base + ['-netdetect', '-s', 'address', after['netdetect']]]
    if query == 'mtu':
        return [base + ['-mtu', '-s', 'size', str(after['mtu'])]]
    if query == 'pfc':
        return [base + ['-pfc', '-s', 'bitmap', pfc_bitmap(after['pfc_priorities'])]]
    if query == 'dscp_to_tc':
        return [base + ['-dscp_to_tc', '-s', 'dscp', str(dscp), 'tc', str(tc)]
                for dscp, tc in sorted(after['dscp_to_tc'].items())]
    if query == 'tls':
        return [base + ['-tls', '-s', 'enable', '1' if after['tls'] else '0']]
    raise ValueError('unknown hccn_tool query %r' % query)


def command_string(argv, tool_name='hccn_tool'):
    """Printable form of an argv list, with the tool shown by its plain name."""
    words = [tool_name] + [str(a) for a in argv[1:]]
    return ' '.join(words)


# --------------------------------------------------------------------------------------------
# current state from parsed GET output
# --------------------------------------------------------------------------------------------

def is_not_configured(query, rc, stdout, stderr):
    """True when a failed GET only means "nothing is configured" (e.g. `-ip -g`, exit 13)."""
    pattern = _NOT_CONFIGURED.get(query)
    if pattern is None or rc == 0:
        return False
    return bool(pattern.search(stderr or '') or pattern.search(stdout or ''))


def is_busy(rc, stdout, stderr):
    """hccn_tool's own "try again" answer (0x300B, exit 11, printed on stdout)."""
    text = (stdout or '') + (stderr or '')
    return rc == BUSY_RC and 'busy' in text and 'try again' in text


def _pick(parsed, *keys):
    for key in keys:
        value = parsed.get(key)
        if value not in (None, ''):
            return value
    return None


def _addr_or_none(value):
    if value in (None, ''):
        return None
    try:
        addr = _ipv4(value)
    except ValueError:
        return str(value)
    return None if addr.is_unspecified else str(addr)


def have_from_parsed(query, parsed):
    """Turn one parser result (or None for "not configured") into module vocabulary.

    Returns a dict of the attributes that ``query`` covers. Unconfigured values are None.
    """
    parsed = parsed or {}
    if query == 'ip':
        address = _addr_or_none(_pick(parsed, 'address', 'ipaddr'))
        netmask = _addr_or_none(_pick(parsed, 'netmask'))
        return {'address': address, 'netmask': netmask}
    if query == 'gateway':
        return {'gateway': _addr_or_none(_pick(parsed, 'gateway', 'address'))}
    if query == 'netdetect':
        return {'netdetect': _addr_or_none(_pick(parsed, 'netdetect', 'address'))}
    if query == 'mtu':
        mtu = parsed.get('mtu')
        return {'mtu': int(mtu) if mtu is not None else None}
    if query == 'pfc':
        prios = parsed.get('priorities')
        if prios is None and parsed.get('bitmap'):
            prios = [i for i, bit in enumerate(str(parsed['bitmap']).split(',')) if bit.strip() == '1']
        return {'pfc_priorities': sorted(int(p) for p in prios) if prios is not None else None}
    if query == 'dscp_to_tc':
        table = parsed.get('map')
        if table is None:
            return {'dscp_to_tc': None}
        return {'dscp_to_tc': dict((int(k), int(v)) for k, v in table.items())}
    if query == 'tls':
        enabled = parsed.get('enabled')
        return {'tls': bool(enabled) if enabled is not None else None}
    raise ValueError('unknown hccn_tool query %r' % query)


def restrict_to_request(want, have):
    """Keep only the attributes (and, for dscp_to_tc, the DSCPs) that ``want`` mentions."""
    out = {'device': want['device']}
    for key in ATTRIBUTES:
        if key not in want:
            continue
        value = have.get(key)
        if key == 'dscp_to_tc' and value is not None:
            value = dict((d, value[d]) for d in want['dscp_to_tc'] if d in value)
        out[key] = value
    return out


# --------------------------------------------------------------------------------------------
# want vs have
# --------------------------------------------------------------------------------------------

def check_against_have(want, have):
    """Checks that need the current state; return a list of messages (empty when fine)."""
    errors = []
    prefix = 'NPU %d' % want['device']
    address = want.get('address', have.get('address'))
    netmask = want.get('netmask', have.get('netmask'))
    gateway = want.get('gateway', have.get('gateway'))
    if 'gateway' in want and (address is None or netmask is None):
        errors.append('%s: gateway %s requested but the port has no IP address; set address and netmask too '
                      '(hccn_tool: "Unable to configure gateway, because ip is not configured!")' % (prefix, want['gateway']))
    elif gateway is not None and address is not None and netmask is not None:
        net = network_of(address, netmask)
        if _ipv4(gateway) not in net:
            if 'gateway' in want:
                errors.append('%s: gateway %s is not in the subnet %s of the port address %s'
                              % (prefix, gateway, net, address))
            else:
                errors.append('%s: the new address %s/%s leaves the current gateway %s outside the subnet %s; '
                              'set gateway in the same request' % (prefix, address, netmask, gateway, net))
    return errors


def diff_device(want, have):
    """Return {query: after} for the queries of ``want`` whose values differ from ``have``.

    ``after`` holds the attributes to set for that query; for dscp_to_tc only the DSCPs whose
    TC differs. Comparison quirks: addresses compare as IPv4 values, PFC priorities as sets.
    """
    changes = {}
    if 'address' in want:
        if (have.get('address'), have.get('netmask')) != (want['address'], want['netmask']):
            changes['ip'] = {'address': want['address'], 'netmask': want['netmask']}
    for key in ('gateway', 'netdetect', 'mtu', 'tls'):
        if key in want and have.get(key) != want[key]:
            changes[ATTRIBUTE_QUERY[key]] = {key: want[key]}
    if 'pfc_priorities' in want:
        current = have.get('pfc_priorities')
        if current is None or sorted(set(current)) != want['pfc_priorities']:
            changes['pfc'] = {'pfc_priorities': want['pfc_priorities']}
    if 'dscp_to_tc' in want:
        current = have.get('dscp_to_tc') or {}
        delta = dict((d, t) for d, t in want['dscp_to_tc'].items() if current.get(d) != t)
        if delta:
            changes['dscp_to_tc'] = {'dscp_to_tc': delta}
    return changes


def render_device(tool, device, changes):
    """Ordered set argv lists for one device (QUERY_ORDER)."""
    argvs = []
    for query in QUERY_ORDER:
        if query in changes:
            argvs.extend(set_argvs(tool, device, query, changes[query]))
    return argvs


def render_request(tool, entries):
    """``state: rendered``: the commands for ``entries`` against a port with nothing set."""
    argvs = []
    for entry in entries:
        argvs.extend(render_device(tool, entry['device'], diff_device(entry, {})))
    return argvs


def merge(have, changes):
    """The expected state after applying ``changes`` to ``have``."""
    after = dict(have)
    for query, values in changes.items():
        if query == 'dscp_to_tc':
            table = dict(after.get('dscp_to_tc') or {})
            table.update(values['dscp_to_tc'])
            after['dscp_to_tc'] = table
        else:
            after.update(values)
    return after


def mismatches(want, have):
    """After applying: human-readable differences that remain (verification)."""
    out = []
    for query, values in sorted(diff_device(want, have).items(), key=lambda kv: QUERY_ORDER.index(kv[0])):
        if query == 'ip':
            out.append('address/netmask %s/%s, expected %s/%s'
                       % (have.get('address'), have.get('netmask'), values['address'], values['netmask']))
        elif query == 'pfc':
            current = have.get('pfc_priorities')
            out.append('PFC bitmap still %s after setting priorities %s'
                       % (pfc_bitmap(current) if current is not None else 'unknown',
                          ','.join(str(p) for p in values['pfc_priorities']) or 'none'))
        elif query == 'dscp_to_tc':
            current = have.get('dscp_to_tc') or {}
            for dscp, tc in sorted(values['dscp_to_tc'].items()):
                out.append('DSCP %d maps to TC %s, expected %d' % (dscp, current.get(dscp), tc))
        else:
            key = list(values)[0]
            out.append('%s is %s, expected %s' % (key, _show(have.get(key)), _show(values[key])))
    return out


def _show(value):
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return 'not set' if value is None else str(value)


# --------------------------------------------------------------------------------------------
# return shapes, diff text, backup documents
# --------------------------------------------------------------------------------------------

def export_device(state):
    """Internal device dict -> the option/return shape (dscp_to_tc as a list of dicts)."""
    out = {'device': state['device']}
    for key in ATTRIBUTES:
        if key not in state:
            continue
        value = state[key]
        if key == 'dscp_to_tc' and value is not None:
            value = [{'dscp': d, 'tc': t} for d, t in sorted(value.items())]
        elif key == 'pfc_priorities' and value is not None:
            value = list(value)
        out[key] = value
    return out


def diff_text(state):
    """One attribute per line, stable order, so --diff shows a readable unified diff."""
    lines = []
    for key in ATTRIBUTES:
        if key not in state:
            continue
        value = state[key]
        if key == 'dscp_to_tc' and value is not None:
            lines.append('dscp_to_tc:')
            for dscp, tc in sorted(value.items()):
                lines.append('  dscp %d: tc %d' % (dscp, tc))
        elif key == 'pfc_priorities' and value is not None:
            lines.append('pfc_priorities: [%s]' % ', '.join(str(p) for p in value))
        else:
            lines.append('%s: %s' % (key, _show(value)))
    return '\n'.join(lines) + '\n'


def device_diff(host, before, after):
    """One entry of the module's ``diff`` list (Ansible accepts a list of diffs)."""
    header = 'NPU %d on %s' % (before['device'], host)
    return {'before_header': header, 'after_header': header,
            'before': diff_text(before), 'after': diff_text(after)}


def backup_filename(host, stamp):
    """hccn-<host>-<stamp>.json with the host reduced to safe file name characters."""
    safe = re.sub(r'[^A-Za-z0-9._-]', '_', host or 'localhost')
    return 'hccn-%s-%s.json' % (safe, stamp)


def backup_document(host, created, devices):
    """The JSON document written before the first set; ``devices`` are internal dicts."""
    return {
        'format': BACKUP_FORMAT,
        'version': BACKUP_VERSION,
        'host': host,
        'created': created,
        'devices': [export_device(d) for d in sorted(devices, key=lambda d: d['device'])],
    }


def dump_backup(document):
    return json.dumps(document, indent=2, sort_keys=True) + '\n'


def config_from_backup(document):
    """Turn a backup document into a ``config`` list; return (config, warnings).

    Values that were not set at backup time (None) cannot be cleared with hccn_tool; they are
    left out of the restore and reported as warnings. Raise BackupError for a foreign file.
    """
    if not isinstance(document, dict) or document.get('format') != BACKUP_FORMAT:
        raise BackupError('not an hccn_config backup (expected "format": "%s")' % BACKUP_FORMAT)
    if document.get('version') != BACKUP_VERSION:
        raise BackupError('backup version %r is not supported (expected %d)' % (document.get('version'), BACKUP_VERSION))
    devices = document.get('devices')
    if not isinstance(devices, list):
        raise BackupError('backup has no "devices" list')
    config = []
    warnings = []
    for item in devices:
        if not isinstance(item, dict) or 'device' not in item:
            raise BackupError('backup device entry %r has no "device"' % (item,))
        entry = {'device': item['device']}
        for key in ATTRIBUTES:
            if key not in item:
                continue
            if item[key] is None:
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


# --------------------------------------------------------------------------------------------
# state: parsed
# --------------------------------------------------------------------------------------------

_COMMAND_LINE = re.compile(r'^\s*(?:[$#]\s*)?(?:\S*/)?hccn_tool\s+-i\s+(\d+)\s+-(\w+)\s+-g\b')


def split_running_config(text):
    """Split captured hccn_tool GET output into (device, query, block_text) tuples.

    The text is what a loop like ``for i in 0 1 ..; do echo "hccn_tool -i $i -ip -g";
    hccn_tool -i $i -ip -g; done`` prints: each block starts with the command line
    (optionally with a path or a ``$ `` prompt) followed by the tool's output::

        /usr/local/Ascend/driver/tools/hccn_tool -i 0 -ip -g
        ipaddr:10.10.0.10
        netmask:255.255.255.0

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


def parse_running_config(text, parsers):
    """``state: parsed``: return (config list, warnings) from captured GET output.

    ``parsers`` maps query names to parser functions (the hccn_tool PARSERS table). Blocks of
    other queries are ignored with a warning; an empty block (no output, as printed for a
    port with nothing configured) gives None values.
    """
    devices = {}
    warnings = []
    for device, query, block in split_running_config(text):
        if device is None:
            warnings.append('text before the first hccn_tool command line was ignored: %r' % block[:80])
            continue
        if query not in QUERY_ORDER:
            warnings.append('NPU %d: -%s output is not part of hccn_config and was ignored' % (device, query))
            continue
        parser = parsers.get(query)
        if parser is None:
            warnings.append('NPU %d: no parser for -%s -g; block ignored' % (device, query))
            continue
        parsed = parser(block) if block.strip() else None
        if parsed is not None and parsed.get('unparsed'):
            warnings.append('NPU %d: -%s -g lines not understood: %s; please report them with your driver version'
                            % (device, query, parsed['unparsed']))
        state = devices.setdefault(device, {'device': device})
        state.update(have_from_parsed(query, parsed))
    config = [export_device(devices[d]) for d in sorted(devices)]
    return config, warnings
