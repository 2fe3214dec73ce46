# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The HCCL and RoCE rules the inventory check, the RoCE intent, the HCCL environment and the switch intent share.

- ``netaddr`` (None when the library is missing) and ``require_netaddr(filter_name)``;
- ``ipv4(text)``, ``ip(text)``: strict address parsing; ``integer(value)``: an int from an int or a
  string of ASCII digits (an INI inventory gives strings), never from a boolean or a float;
- ``split_socket_ifname(text)`` and ``refused_interfaces(...)``: the HCCL_SOCKET_IFNAME syntax and the
  interfaces HCCL must not use for its host socket;
- ``rdma_sl_problem(...)``, ``rdma_tc_problem(...)``: HCCL_RDMA_SL and HCCL_RDMA_TC against the PoD's
  lossless priority and DSCP, as one sentence naming the variable and the value; ``HCCL_DEFAULT_RDMA_SL`` and
  ``HCCL_DEFAULT_RDMA_TC``: what HCCL uses when they are not set;
- ``file_mode(value)``, ``write_bits(mode)``, ``special_bits(mode)``, ``path_kind(text)``, ``GROUP_RE``: the rules of a
  file that root sources (octal mode without group/other write bits, a plain absolute path, a group name or number).
"""

from __future__ import annotations

import re
import sys

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.module_utils._domain.products import PRIORITY_MAX
from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import short_repr

RDMA_TC_MAX = 255
# HCCL's values when HCCL_RDMA_SL / HCCL_RDMA_TC are not set: priority 4, ToS byte 132 (DSCP 33)
HCCL_DEFAULT_RDMA_SL = 4
HCCL_DEFAULT_RDMA_TC = 132
# HCCL's own words when it refuses HCCL_RDMA_TC (error EI0001)
RDMA_TC_EI0001 = 'EI0001 "range[0, 255], Must be a multiple of 4"'

# interface names (Linux: at most 15 bytes, no '/', no blanks, not '.' or '..')
IFNAME_RE = re.compile(r'^[A-Za-z0-9_.:@+-]{1,15}$')

# Interfaces HCCL must never use for its host socket: (match, whole name, sample, shown as, what it is).
# ``whole``: the name must equal ``match`` (lo), else any name starting with ``match`` is refused;
# ``sample`` is the name a prefix of HCCL_SOCKET_IFNAME is compared with (prefix "d" matches docker0).
LOOPBACK_AND_BRIDGES = (
    ('lo', True, 'lo', 'lo', 'the loopback interface'),
    ('docker', False, 'docker0', 'docker0', 'a docker bridge'),
    ('virbr', False, 'virbr0', 'virbr0', 'a libvirt bridge'),
    ('br-', False, 'br-', 'br-*', 'a docker network bridge'),
)
CNI_BRIDGES = (
    ('cni', False, 'cni0', 'cni*', 'a container network (CNI) bridge'),
)


# a group as chown takes it: a name (useradd/groupadd's rules, at most 32 characters) or a number
GROUP_RE = re.compile(r'^(?:[A-Za-z_][A-Za-z0-9_.-]{0,30}[A-Za-z0-9_.$-]?|[0-9]{1,10})$')
_OCTAL_MODE_RE = re.compile(r'^[0-7]{3,4}$')


def show(value, width=80):
    """A value as a problem sentence shows it: its repr (numbers plain, strings quoted), shortened to ``width``."""
    return short_repr(value, width)


def __getattr__(name):
    """``netaddr`` is imported on first use, not when Ansible loads the filter plugins: a task's worker loads every
    filter file of the collection to find one filter, and most tasks need no address arithmetic."""
    if name != 'netaddr':
        raise AttributeError('module %r has no attribute %r' % (__name__, name))
    try:
        import netaddr as library  # pylint: disable=import-outside-toplevel
    except ImportError:  # reported when a filter that needs it is used, not when Ansible loads the plugins
        library = None
    globals()['netaddr'] = library
    return library


def _netaddr():
    return sys.modules[__name__].netaddr


def require_netaddr(name):
    if _netaddr() is None:
        raise AnsibleFilterError('%s needs the Python library netaddr on the controller: pip install netaddr '
                                 '(it is in the requirements.txt of npuops.ascend)' % name)


def ipv4(text):
    """netaddr.IPAddress of a dotted-quad string, else None ('10.1' and '010.0.0.1' are refused)."""
    if not isinstance(text, str):
        return None
    netaddr = _netaddr()
    try:
        return netaddr.IPAddress(text, 4, flags=netaddr.INET_PTON)
    except (netaddr.AddrFormatError, ValueError, TypeError):
        return None


def ip(text):
    """netaddr.IPAddress of an IPv4 or IPv6 address string, else None."""
    address = ipv4(text)
    if address is not None or not isinstance(text, str):
        return address
    netaddr = _netaddr()
    try:
        return netaddr.IPAddress(text, 6)
    except (netaddr.AddrFormatError, ValueError, TypeError):
        return None


def ipv4_network(text):
    """netaddr.IPNetwork of 'a.b.c.d/len' (a dotted-quad address and a prefix length 0-32), else None."""
    if not isinstance(text, str) or text.count('/') != 1:
        return None
    address, length = text.strip().split('/')
    address = ipv4(address)
    if address is None or not re.match(r'^[0-9]{1,2}$', length) or int(length) > 32:
        return None
    return _netaddr().IPNetwork('%s/%s' % (address, length))


def integer(value):
    """The int of an int or of a string of at most 18 ASCII digits (with an optional minus), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.match(r'^-?[0-9]{1,18}$', value.strip()):
        return int(value.strip())
    return None


def split_socket_ifname(text):
    """(exclude, exact, names) of an HCCL_SOCKET_IFNAME value; ValueError with the reason when it is not one.

    The syntax (CANN environment variable reference, HCCL_SOCKET_IFNAME): a comma list of interface names,
    prefixes unless preceded by ``=`` (exact names); a leading ``^`` excludes them instead.
    """
    text = text.strip()
    exclude = text.startswith('^')
    body = text[1:] if exclude else text
    exact = body.startswith('=')
    body = body[1:] if exact else body
    names = body.split(',')
    for name in names:
        if not IFNAME_RE.match(name) or name in ('.', '..'):
            raise ValueError('%s is not an interface name (a comma list of names, optionally after ^ to exclude and = for '
                             'exact names)' % short_repr(name))
    return exclude, exact, names


def refused_interfaces(names, exact, never=LOOPBACK_AND_BRIDGES, management=None):
    """[(name, shown, what, as_prefix)] for each selected name that is, or as a prefix also matches, a refused interface.

    ``as_prefix`` is False when ``name`` itself is the refused interface (``shown`` is then the name), True when the
    prefix ``name`` would also select ``shown``. One entry per name, the first rule that matches.
    """
    out = []
    for name in names:
        lowered = name.lower()
        found = None
        for match, whole, _sample, _shown, what in never:
            if (lowered == match) if whole else lowered.startswith(match):
                found = (name, name, what, False)
                break
        if found is None and management and name == management:
            found = (name, name, 'the management interface', False)
        if found is None and not exact:
            for _match, _whole, sample, shown, what in never:
                if sample.startswith(lowered):
                    found = (name, shown, what, True)
                    break
            if found is None and management and management.startswith(name):
                found = (name, management, 'the management interface', True)
        if found is not None:
            out.append(found)
    return out


def rdma_sl_problem(variable, value, priority):
    """Why ``value`` is not a valid HCCL_RDMA_SL for the lossless ``priority`` (None: not compared), or None."""
    number = integer(value)
    if number is None:
        return ('%s %s is not an integer: HCCL_RDMA_SL is the PFC-enabled priority of the RDMA traffic, 0 to %d'
                % (variable, show(value), PRIORITY_MAX))
    if not 0 <= number <= PRIORITY_MAX:
        return ('%s %s is outside 0-%d: HCCL_RDMA_SL is the PFC-enabled priority of the RDMA traffic'
                % (variable, show(value), PRIORITY_MAX))
    if priority is not None and number != priority:
        return ('%s %s is not the lossless priority %d: HCCL_RDMA_SL must be the PFC-enabled priority, so set %d, or the '
                'RDMA traffic of HCCL is not protected by PFC' % (variable, show(value), priority, priority))
    return None


def rdma_tc_problem(variable, value, dscp):
    """Why ``value`` is not a valid HCCL_RDMA_TC for the lossless ``dscp`` (None: not compared), or None.

    HCCL_RDMA_TC is the ToS byte: DSCP x 4 (the DSCP sits in bits 2-7), 0-255 and a multiple of 4; HCCL refuses
    anything else with EI0001. Writing the DSCP itself (HCCL_RDMA_TC=33) is the usual mistake and is named as such.
    """
    number = integer(value)
    if number is None:
        return ('%s %s is not an integer: HCCL_RDMA_TC is the ToS byte, DSCP x 4, an integer 0-%d and a multiple of 4 '
                '(132 for DSCP 33)' % (variable, show(value), RDMA_TC_MAX))
    if dscp is not None and number == dscp and number != dscp * 4:
        text = ('%s %s is the DSCP, not the ToS byte: HCCL_RDMA_TC takes the ToS byte DSCP x 4, so %d for DSCP %d'
                % (variable, show(value), dscp * 4, dscp))
        if number % 4:
            return text + ', and HCCL rejects %d (%s)' % (number, RDMA_TC_EI0001)
        return text + ', and %d would mark the RDMA traffic with DSCP %d' % (number, number // 4)
    if not 0 <= number <= RDMA_TC_MAX:
        return ('%s %s is outside 0-%d: HCCL_RDMA_TC is the ToS byte, DSCP x 4 (132 for DSCP 33), and HCCL rejects it (%s)'
                % (variable, show(value), RDMA_TC_MAX, RDMA_TC_EI0001))
    if number % 4:
        return ('%s %s is not a multiple of 4: HCCL_RDMA_TC is the ToS byte, DSCP x 4 (the DSCP sits in bits 2-7), and HCCL '
                'rejects it (%s)' % (variable, show(value), RDMA_TC_EI0001))
    if dscp is not None and number != dscp * 4:
        return ('%s %s marks the RDMA traffic with DSCP %d, not the lossless DSCP %d: HCCL_RDMA_TC is DSCP x 4, so set %d'
                % (variable, show(value), number // 4, dscp, dscp * 4))
    return None


def file_mode(value):
    """(mode, as_number): the permission bits a file mode setting gives, as Ansible applies it, else (None, False).

    A string is 3 or 4 octal digits ('644', '0644'); a number is used as it is (YAML 1.1 reads an unquoted 0644 as 420,
    which is the mode 0644, but 644 is the mode 1204), so ``as_number`` says the value was not a string.
    """
    if isinstance(value, bool):
        return None, False
    if isinstance(value, int):
        return (value, True) if 0 <= value <= 0o7777 else (None, True)
    if isinstance(value, str) and _OCTAL_MODE_RE.match(value.strip()):
        return int(value.strip(), 8), False
    return None, False


def write_bits(mode):
    """Who besides the owner may write a file of ``mode``: None, 'the group', 'other users' or both."""
    who = [name for bit, name in ((0o020, 'the group'), (0o002, 'other users')) if mode & bit]
    return ' and '.join(who) if who else None


def special_bits(mode):
    """The setuid, setgid and sticky bits of ``mode``, as words ('the setuid bit', 'the setgid and sticky bits'), or None."""
    names = [name for bit, name in ((0o4000, 'setuid'), (0o2000, 'setgid'), (0o1000, 'sticky')) if mode & bit]
    if not names:
        return None
    return 'the %s bit%s' % (' and '.join(names), 's' if len(names) > 1 else '')


def path_kind(text):
    """'absolute' for a plain absolute file path (no '.', '..' or empty parts, no trailing '/', no blanks or control
    characters), 'relative' for a path without the leading '/', 'not plain' otherwise, None for no text."""
    if not isinstance(text, str) or not text.strip():
        return None
    text = text.strip()
    if not text.startswith('/'):
        return 'relative'
    parts = text.split('/')[1:]
    if any(part in ('', '.', '..') for part in parts) or re.search(r'[\s\x00-\x1f\x7f]', text):
        return 'not plain'
    return 'absolute'


def socket_ifname_selects(value, ifname):
    """True when the HCCL_SOCKET_IFNAME ``value`` lets HCCL use the interface ``ifname`` (CANN environment variable
    reference, HCCL_SOCKET_IFNAME: ``eth,enp`` prefixes, ``=eth0,enp0`` exact names, ``^eth`` / ``^=eth0`` the same
    excluded); ValueError when the value is not one."""
    exclude, exact, names = split_socket_ifname(value)
    matched = ifname in names if exact else any(ifname.startswith(name) for name in names)
    return not matched if exclude else matched


def interfaces_from_ip_json(text):
    """{interface name: [address, ...]} of ``ip -j addr show`` (iproute2 JSON: a list of objects with ``ifname`` and
    ``addr_info`` entries whose ``local`` is the address), or None when the text is not that JSON."""
    import json
    try:
        document = json.loads(text)
    except (TypeError, ValueError):
        return None
    if not isinstance(document, list):
        return None
    out = {}
    for item in document:
        if not isinstance(item, dict) or not isinstance(item.get('ifname'), str):
            return None
        addresses = []
        for entry in item.get('addr_info') or []:
            if isinstance(entry, dict) and isinstance(entry.get('local'), str):
                addresses.append(entry['local'])
        out.setdefault(item['ifname'], []).extend(addresses)
    return out
