# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stage 4, the switch side checked from the hosts (no switch access): what the leaf switch port
advertises in LLDP, and what the NPU port's counters say the switch does (PFC frames on another
priority, no CNP under load).

Findings have the shape of :mod:`findings` plus ``switch`` and ``switch_port`` (the LLDP
neighbour of the NPU port, null when none was seen). The action npuops.ascend.stage_roce runs these checks.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import FAIL, WARN, finding

# Ethernet header (14 bytes) + FCS (4): the frame of a full-size IP packet of MTU bytes, untagged
FRAME_OVERHEAD = 18
PRIORITIES = range(8)
CNP_KEYS = ('roce_tx_cnp_pkt_num', 'roce_rx_cnp_pkt_num')


def _devices(info):
    """{device id: entry} of an hccn_info result (devices keyed by id) or of a list of entries with ``device``."""
    if isinstance(info, Mapping):
        devices = info.get('devices') or {}
        if isinstance(devices, Mapping):
            return dict((int(key), value) for key, value in devices.items()
                        if str(key).isdigit() and isinstance(value, Mapping))
        info = devices
    if isinstance(info, (list, tuple)):
        return dict((int(item['device']), item) for item in info
                    if isinstance(item, Mapping) and str(item.get('device', '')).isdigit())
    return {}


def _severity(value, name):
    if value not in (FAIL, WARN):
        raise AnsibleFilterError('%s: severity must be fail or warn, got %r' % (name, value))
    return value


def _int(value, what, name):
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('%s: %s must be an integer, got %r' % (name, what, value)) from exc


def neighbour_of(entry):
    """The LLDP neighbour of one hccn_info device entry: ``{switch, port, max_frame_size}``, or None when the
    entry has no LLDP data or no port name."""
    lldp = entry.get('lldp') if isinstance(entry, Mapping) else None
    if not isinstance(lldp, Mapping) or not lldp.get('ifname'):
        return None
    name = lldp.get('system_name') or lldp.get('management_address') or lldp.get('chassis_id')
    size = lldp.get('max_frame_size')
    return {'switch': name, 'port': lldp['ifname'], 'max_frame_size': size if isinstance(size, int) else None}


def _where(neighbour):
    if neighbour is None:
        return 'the switch port (no LLDP neighbour seen)'
    return 'switch %s port %s' % (neighbour['switch'] or '(unnamed)', neighbour['port'])


def _switch_finding(host, dev, neighbour, check, value, expected, text, severity):
    item = finding(host, dev, check, value, expected, text, severity)
    item['switch'] = neighbour['switch'] if neighbour else None
    item['switch_port'] = neighbour['port'] if neighbour else None
    return item


def switch_port_findings(info, host=None, mtu=9000, severity=FAIL):
    """Findings of what the switch ports advertise in LLDP: no neighbour, no switch identity, and a maximum frame size
    below what an MTU ``mtu`` frame needs (``mtu`` + 18)."""
    name = 'switch_port_findings'
    host = host or 'this node'
    mtu = _int(mtu, 'mtu', name)
    severity = _severity(severity, name)
    need = mtu + FRAME_OVERHEAD
    out = []
    for dev, entry in sorted(_devices(info).items()):
        if 'lldp' not in entry:
            continue
        neighbour = neighbour_of(entry)
        if neighbour is None:
            out.append(_switch_finding(
                host, dev, None, 'switch_lldp', None, 'an LLDP neighbour',
                'no LLDP neighbour on the port (hccn_tool -lldp -g shows no Port ID), so the switch side cannot be checked '
                'from the host: enable LLDP on the leaf switch (CloudEngine has it off by default: lldp enable) or check '
                'the cable', WARN))
            continue
        if not neighbour['switch']:
            out.append(_switch_finding(
                host, dev, neighbour, 'switch_lldp', None, 'a switch name',
                'the LLDP data of %s names no switch (no System Name, Management Address or Chassis ID TLV): its switch '
                'file cannot be rendered' % _where(neighbour), WARN))
        size = neighbour['max_frame_size']
        if size is None:
            out.append(_switch_finding(
                host, dev, neighbour, 'switch_frame', None, '>= %d' % need,
                '%s sends no Maximum Frame Size TLV, so its MTU cannot be checked from the host; make sure the port '
                'carries %d-byte frames (MTU %d + %d bytes of Ethernet header and FCS)'
                % (_where(neighbour), need, mtu, FRAME_OVERHEAD), WARN))
        elif size < need:
            out.append(_switch_finding(
                host, dev, neighbour, 'switch_frame', size, '>= %d' % need,
                '%s advertises a maximum frame size of %d bytes, below the %d bytes an MTU %d frame needs (%d bytes of '
                'Ethernet header and FCS): the switch drops jumbo frames; raise the port frame size first (CloudEngine '
                'jumboframe enable 9216, SONiC PORT mtu, Cumulus link mtu; the switch files of stage 4 have it)'
                % (_where(neighbour), size, need, mtu, FRAME_OVERHEAD), severity))
    return out


def _counter(entry, query, key):
    counters = entry.get(query) if isinstance(entry, Mapping) else None
    if not isinstance(counters, Mapping):
        return None
    if isinstance(counters.get('counters'), Mapping):
        counters = counters['counters']
    value = counters.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _grew(first, second, query, key):
    a, b = _counter(first, query, key), _counter(second, query, key)
    if a is None or b is None or b < a:
        return None if a is None or b is None else 0
    return b - a


def switch_pfc_findings(first, second, seconds, host=None, priority=4, neighbours=None, severity=FAIL):
    """Findings of the PFC pause frames the NPU ports received between two hccn_info reads with the query ``stat``:
    frames received on a priority other than the lossless ``priority`` mean the switch runs PFC on another priority."""
    name = 'switch_pfc_findings'
    host = host or 'this node'
    priority = _int(priority, 'priority', name)
    severity = _severity(severity, name)
    try:
        seconds = float(seconds)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('%s: seconds must be a number, got %r' % (name, seconds)) from exc
    if not 0 <= priority <= 7:
        raise AnsibleFilterError('%s: priority must be 0-7, got %d' % (name, priority))
    names = _devices(neighbours)
    before, after = _devices(first), _devices(second)
    out = []
    for dev in sorted(set(before) & set(after)):
        neighbour = neighbour_of(names.get(dev, {}))
        others = []
        for prio in PRIORITIES:
            if prio == priority:
                continue
            grown = _grew(before[dev], after[dev], 'stat', 'mac_rx_pfc_pri%d_pkt_num' % prio)
            if grown:
                others.append((prio, grown))
        if not others:
            continue
        text = ', '.join('%d on priority %d' % (count, prio) for prio, count in others)
        out.append(_switch_finding(
            host, dev, neighbour, 'switch_pfc', [prio for prio, _count in others], 'priority %d only' % priority,
            '%s paused the NPU on another priority than the lossless %d (PFC frames received in %.1f s: %s; '
            'mac_rx_pfc_priN_pkt_num of hccn_tool -stat -g): the switch runs PFC on a priority that HCCL does not use '
            '(HCCL_RDMA_SL %d), so RDMA traffic on priority %d is not protected there; set PFC on priority %d on the '
            'switch port (the switch files of stage 4 have it)'
            % (_where(neighbour), priority, seconds, text, priority, priority, priority), severity))
    return out


def switch_ecn_findings(first, second, host=None, priority=4, neighbours=None, severity=WARN):
    """Findings of the CNP counters of the NPU ports between two hccn_info reads with the query ``stat`` around a
    cross-node benchmark: a port that neither sent nor received a CNP saw no ECN mark from the switch."""
    name = 'switch_ecn_findings'
    host = host or 'this node'
    priority = _int(priority, 'priority', name)
    severity = _severity(severity, name)
    names = _devices(neighbours)
    before, after = _devices(first), _devices(second)
    out = []
    for dev in sorted(set(before) & set(after)):
        neighbour = neighbour_of(names.get(dev, {}))
        grown = [_grew(before[dev], after[dev], 'stat', key) for key in CNP_KEYS]
        if any(value is None for value in grown):
            out.append(_switch_finding(
                host, dev, neighbour, 'switch_ecn', None, 'CNP counters',
                'the CNP counters (%s of hccn_tool -stat -g) could not be read before and after the cross-node benchmark, '
                'so ECN marking on %s is not checked' % (', '.join(CNP_KEYS), _where(neighbour)), WARN))
            continue
        if sum(grown):
            continue
        out.append(_switch_finding(
            host, dev, neighbour, 'switch_ecn', 0, '> 0',
            'no CNP was sent or received during the cross-node benchmark (%s did not grow): %s does not seem to mark ECN '
            'on queue %d, so congestion is handled by PFC pauses alone; enable ECN on that queue of the switch port '
            '(the switch files of stage 4 have it)' % (' and '.join(CNP_KEYS), _where(neighbour), priority), severity))
    return out
