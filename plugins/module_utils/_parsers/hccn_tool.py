# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``hccn_tool -i N -<query> -g`` output (Ascend 910B driver tools).

Every parser takes the stdout of one device's call and returns a dict with the key
``unparsed`` (lines it did not understand, always present). GET data is printed on stdout;
errors go to stderr with a non-zero exit code (a few INFO-level errors come on stdout).

A parser never raises on tool output: a line it cannot read (a malformed or out-of-range
number included) goes to ``unparsed`` and the value it would have given keeps its empty value.

Not configured / empty output: an empty stdout parses to the empty shape of the query
(``parse_ip_get('') == {'address': None, 'netmask': None, 'unparsed': []}``). What the
error texts of a failed call mean is the tool adapter's knowledge
(``plugins/module_utils/_tools/hccn_tool.py``, ``classify_error``), not the parsers'.
"""

from __future__ import annotations

import re

from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import (
    is_digits,
    keep_extra,
    lines_of,
    snake,
    to_float,
    to_int,
    to_number,
)


def _key_value(line):
    """'  key : value ' -> ('key', 'value') split at the first colon; None without a colon or a key.

    Plain string operations, not a regular expression: a line with long runs of blanks costs
    linear time.
    """
    head, sep, tail = line.partition(':')
    if not sep or not head.strip():
        return None
    return head.strip(), tail.strip()


def _result(**fields):
    fields['unparsed'] = []
    return fields


def parse_link_get(text):
    """Parse ``hccn_tool -i N -link -g``.

    Sample::

        link status: UP

    Returns ``{'link': 'UP'}`` (``'DOWN'`` when down, ``None`` for empty output). The A3 vNIC
    line ``vnic link status: UP`` adds ``vnic_link``.
    """
    out = _result(link=None)
    for line in lines_of(text):
        match = re.match(r'^\s*(vnic )?link status\s*:\s*(\S+)\s*$', line)
        if match:
            out['vnic_link' if match.group(1) else 'link'] = match.group(2)
        elif line.strip():
            out['unparsed'].append(line)
    return out


def parse_ip_get(text):
    """Parse ``hccn_tool -i N -ip -g``.

    Sample::

        ipaddr:10.10.0.10
        netmask:255.255.255.0

    Returns ``{'address': '10.10.0.10', 'netmask': '255.255.255.0'}``. No IP configured:
    stdout is empty (stderr ``Get ipconf failed, because no ip was preset there!``) and the
    result is ``{'address': None, 'netmask': None}``.
    """
    out = _result(address=None, netmask=None)
    names = {'ipaddr': 'address', 'netmask': 'netmask', 'vnic ipaddr': 'vnic_address', 'vnic netmask': 'vnic_netmask'}
    for line in lines_of(text):
        pair = _key_value(line)
        if pair and pair[0] in names:
            out[names[pair[0]]] = pair[1] or None
        elif line.strip():
            out['unparsed'].append(line)
    return out


def parse_gateway_get(text):
    """Parse ``hccn_tool -i N -gateway -g``.

    Sample::

        default gateway:11.12.165.1, Iface:eth0

    Returns ``{'gateway': '11.12.165.1', 'iface': 'eth0'}``; empty output (no gateway preset)
    gives ``None`` for both.
    """
    out = _result(gateway=None, iface=None)
    for line in lines_of(text):
        match = re.match(r'^\s*default gateway\s*:\s*([^,\s]+)\s*(?:,\s*Iface\s*:\s*(\S+))?\s*$', line)
        if match:
            out['gateway'] = match.group(1)
            out['iface'] = match.group(2)
        elif line.strip():
            out['unparsed'].append(line)
    return out


def parse_net_health_get(text):
    """Parse ``hccn_tool -i N -net_health -g``.

    Sample::

        net health status: Success

    Returns ``{'net_health': 'Success'}``. Values seen: Success, Socket fail(ed), Receive
    timeout, Unreachable, Time exceeded, Fault, Init, Thread error, Detect ip set, Unknown.
    """
    out = _result(net_health=None)
    for line in lines_of(text):
        match = re.match(r'^\s*net health status\s*:\s*(.*?)\s*$', line)
        if match:
            out['net_health'] = match.group(1)
        elif line.strip():
            out['unparsed'].append(line)
    return out


def parse_netdetect_get(text):
    """Parse ``hccn_tool -i N -netdetect -g``.

    Sample (driver source prints ``addr``, a deployment guide shows ``address``)::

        netdetect address: 11.12.165.1

    Returns ``{'netdetect': '11.12.165.1'}``.
    """
    out = _result(netdetect=None)
    for line in lines_of(text):
        match = re.match(r'^\s*netdetect addr(?:ess)?\s*:\s*(\S*)\s*$', line)
        if match:
            out['netdetect'] = match.group(1) or None
        elif line.strip():
            out['unparsed'].append(line)
    return out


def parse_mtu_get(text):
    """Parse ``hccn_tool -i N -mtu -g``.

    Sample (format of the driver source)::

        mtu:9000

    Returns ``{'mtu': 9000}``.
    """
    out = _result(mtu=None)
    for line in lines_of(text):
        match = re.match(r'^\s*mtu\s*:\s*([0-9]+)\s*$', line, re.IGNORECASE)
        value = to_int(match.group(1)) if match else None
        if value is not None:
            out['mtu'] = value
        elif line.strip():
            out['unparsed'].append(line)
    return out


def parse_pfc_get(text):
    """Parse ``hccn_tool -i N -pfc -g``.

    Sample::

        PFC configuration:
        priority   0 1 2 3 4 5 6 7
        enabled    0 0 0 0 1 0 0 0

    Returns ``{'priorities': [4], 'bitmap': '0,0,0,0,1,0,0,0'}`` (``None`` for both when the
    output is empty).

    The ``priority`` row labels the columns: each flag of ``enabled`` belongs to the priority above it, in whatever
    order that row prints them (without a ``priority`` row, eight flags are priorities 0-7). A row this parser does
    not know is kept under ``extra`` keyed by its label, by priority (``{'extra': {'paused': {4: '9', ...}}}``). A
    row with more or fewer cells than the priority row goes to ``unparsed``.
    """
    out = _result(priorities=None, bitmap=None)
    prios = None
    for line in lines_of(text):
        words = line.split()
        if not words:
            continue
        if line.strip().rstrip(':').lower() == 'pfc configuration':
            continue
        if words[0] == 'priority' and words[1:] and all(is_digits(w) for w in words[1:]) and len(set(words[1:])) == len(words) - 1:
            prios = [int(w) for w in words[1:]]
            continue
        values = words[1:]
        order = prios if prios is not None else (list(range(8)) if words[0] == 'enabled' and len(values) == 8 else None)
        if order is None or len(order) != len(values):
            out['unparsed'].append(line)
        elif words[0] == 'enabled' and all(w in ('0', '1') for w in values):
            out['priorities'] = sorted(p for p, flag in zip(order, values) if flag == '1')
            by_prio = dict(zip(order, values))
            out['bitmap'] = ','.join(by_prio.get(i, '0') for i in range(max([8] + [p + 1 for p in order])))
        elif words[0] != 'enabled':
            keep_extra(out, words[0], dict(zip(order, values)))
        else:
            out['unparsed'].append(line)
    return out


def parse_pfc_stat_get(text):
    """Parse ``hccn_tool -i N -pfc_stat -g``.

    Sample (format of the driver source)::

        tx_pfc0_duration_time=0.000ms
        tx_pfc0_duration_warn_cnt: 0

    Returns ``{'counters': {'tx_pfc0_duration_ms': 0.0, 'tx_pfc0_duration_warn_cnt': 0, ...}}``.
    """
    out = _result(counters={})
    for line in lines_of(text):
        match = re.match(r'^\s*(\w+?)(_time)?\s*=\s*([-+0-9.]+)\s*ms\s*$', line)
        value = to_float(match.group(3)) if match else None
        if value is not None:
            out['counters'][match.group(1) + '_ms'] = value
            continue
        match = re.match(r'^\s*(\w+)\s*:\s*([0-9]+)\s*$', line)
        value = to_int(match.group(2)) if match else None
        if value is not None:
            out['counters'][match.group(1)] = value
        elif line.strip():
            out['unparsed'].append(line)
    return out


def parse_dscp_to_tc_get(text):
    """Parse ``hccn_tool -i N -dscp_to_tc -g``.

    Sample (format of the driver source, ``%4s%8s`` header then ``%4d%8u`` rows)::

        dscp      tc
           0       0
          46       3

    Returns ``{'map': {0: 0, 46: 3}}`` with int keys and values.

    The columns are read by their header labels (``dscp``, ``tc``) in the order printed; without a header they are
    ``dscp tc``. A column this parser does not know is kept under ``extra`` keyed by its label, by DSCP
    (``{'extra': {'queue': {46: '5'}}}``). A row with more or fewer cells than the header, or a DSCP or TC that is not a
    number, goes to ``unparsed``.
    """
    out = _result(map={})
    labels = ['dscp', 'tc']
    for line in lines_of(text):
        words = line.split()
        if not words:
            continue
        lowered = [w.lower() for w in words]
        if 'dscp' in lowered and 'tc' in lowered and len(set(lowered)) == len(lowered):
            labels = lowered
            continue
        row = dict(zip(labels, words))
        if len(words) != len(labels) or not is_digits(row['dscp']) or not is_digits(row['tc']):
            out['unparsed'].append(line)
            continue
        dscp = int(row['dscp'])
        out['map'][dscp] = int(row['tc'])
        for label, word in zip(labels, words):
            if label not in ('dscp', 'tc'):
                out.setdefault('extra', {}).setdefault(label, {})[dscp] = word
    return out


def parse_tls_get(text):
    """Parse ``hccn_tool -i N -tls -g``.

    Sample::

        dev_id:0, tls switch[0](0:disable, 1:enable), tls preconfigured[1](0:non-preset, 1:preset), tls alarm time threshold[60]days
        dev_id:0, [pub cert] info:
        \t issuer[/C=CN/ST=GD/O=HUAWEI/OU=2012/CN=2_1thCA]
        \t start_time[Wed Feb 19 03:19:21 2020 GMT]
        \t end_time[Sat Feb 16 03:19:21 2030 GMT]

    Returns ``{'dev_id': 0, 'enabled': False, 'preconfigured': True, 'alarm_threshold_days': 60,
    'certs': {'pub': {'issuer': ..., 'start_time': ..., 'end_time': ...}}}``. Older drivers
    have no ``tls preconfigured`` (``None``); newer ones add ``subject`` and
    ``expiration_status`` (0 normal, 1 near expiration, 2 expired) per certificate.
    """
    out = _result(dev_id=None, enabled=None, preconfigured=None, alarm_threshold_days=None, certs={})
    cert = None
    for line in lines_of(text):
        if not line.strip():
            continue
        head = re.match(r'^\s*dev_id\s*:\s*([0-9]+)\s*,\s*(.*)$', line)
        if head:
            rest = head.group(2)
            dev_id = to_int(head.group(1))
            if dev_id is None:
                out['unparsed'].append(line)
                continue
            out['dev_id'] = dev_id
            block = re.match(r'^\[([^\]]+)\]\s*info\s*:\s*$', rest)
            if block:
                name = re.sub(r'\s+cert$', '', block.group(1).strip())
                cert = out['certs'].setdefault(name, {})
                continue
            switch = re.search(r'tls switch\[([01])\]', rest)
            if switch:
                out['enabled'] = switch.group(1) == '1'
                understood = True
                pre = re.search(r'tls preconfigured\[([^\]]*)\]', rest)
                if pre and pre.group(1) in ('0', '1'):
                    out['preconfigured'] = pre.group(1) == '1'
                elif pre:
                    understood = False
                alarm = re.search(r'alarm time threshold\[([^\]]*)\]', rest)
                if alarm and to_int(alarm.group(1)) is not None:
                    out['alarm_threshold_days'] = to_int(alarm.group(1))
                elif alarm:
                    understood = False
                if not understood:
                    out['unparsed'].append(line)
                cert = None
                continue
            out['unparsed'].append(line)
            continue
        field = re.match(r'^\s+(\w[\w ]*?)\[(.*)\](\(.*\))?\s*$', line)
        if field and cert is not None:
            key = snake(field.group(1))
            if key == 'tls_expiration_status':
                if is_digits(field.group(2)):
                    cert['expiration_status'] = int(field.group(2))
                else:
                    out['unparsed'].append(line)
            else:
                cert[key] = field.group(2)
        else:
            out['unparsed'].append(line)
    return out


def parse_stat_get(text):
    """Parse ``hccn_tool -i N -stat -g``.

    Sample::

        packet statistics:
        roce_rx_err_pkt_num:0
        roce_tx_err_pkt_num:0

    Returns the counters as ints: ``{'roce_rx_err_pkt_num': 0, 'roce_tx_err_pkt_num': 0}``.
    """
    out = _result()
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped or stripped.rstrip(':').lower() == 'packet statistics':
            continue
        match = re.match(r'^(\w+)\s*:\s*([0-9]+)$', stripped)
        value = to_int(match.group(2)) if match else None
        if value is not None and match.group(1) != 'unparsed':
            out[match.group(1)] = value
        else:
            out['unparsed'].append(line)
    return out


_OPTICAL_UNITS = {'C': 'c', 'mV': 'mv', 'mW': 'mw', 'mA': 'ma', 'nm': 'nm', 'dB': 'db', 'dBm': 'dbm', 'V': 'v', 'W': 'w'}


def parse_optical_get(text):
    """Parse ``hccn_tool -i N -optical -g``.

    Sample::

        optical info:
        present              : not present
        temperature          : 47 C
        Tx Power0            : 4.4035 mW
        Tx Los Flag          : 0x0
        Host SNR Lane0       : not supported

    Returns ``{'present': 'not present', 'temperature_c': 47, 'tx_power0_mw': 4.4035,
    'tx_los_flag': '0x0', 'host_snr_lane0': 'not supported'}``: the unit of a value becomes
    the key suffix, flags and vendor strings stay strings.
    """
    out = _result()
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped or stripped.rstrip(':').lower() == 'optical info':
            continue
        if stripped.rstrip('.').lower() == 'optical module is not present':
            out['present'] = 'not present'
            continue
        pair = _key_value(line)
        if not pair:
            out['unparsed'].append(line)
            continue
        label = pair[0].replace('LoL', 'Lol').replace('SNR', 'Snr').replace('Vcc', 'VCC')
        key = snake(label)
        value = pair[1]
        unit = re.match(r'^([-+]?[0-9]+(?:\.[0-9]+)?)\s+([A-Za-z]+)$', value)
        if key == 'unparsed':
            out['unparsed'].append(line)
        elif unit and unit.group(2) in _OPTICAL_UNITS:
            number = to_number(unit.group(1))
            if isinstance(number, str):
                out['unparsed'].append(line)
            else:
                out[key + '_' + _OPTICAL_UNITS[unit.group(2)]] = number
        elif key in ('vendor_part_number', 'vendor_serial_number', 'manufact_date_code', 'vendor_name'):
            out[key] = value
        else:
            out[key] = to_number(value)
    return out


def parse_lldp_get(text):
    """Parse ``hccn_tool -i N -lldp -g`` (the device-side lldptool blob).

    Sample::

        Port ID TLV
        \tIfname: 400GE1/1/20:2
        Maximum Frame Size TLV
        \t9216

    Returns ``{'tlvs': {'Port ID TLV': ['Ifname: 400GE1/1/20:2'], ...}, 'ifname': '400GE1/1/20:2',
    'max_frame_size': 9216, ...}`` (``chassis_id``, ``system_name``, ``management_address``
    when present). Output filtered to the ``Ifname`` lines gives ``ifname`` only.
    """
    out = _result(tlvs={}, ifname=None)
    current = None
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped:
            continue
        if not line[:1].isspace() and stripped.endswith('TLV'):
            current = out['tlvs'].setdefault(stripped, [])
            if stripped == 'End of LLDPDU TLV':
                current = None
            continue
        ifname = re.match(r'^Ifname\s*:\s*(\S+)$', stripped)
        if ifname:
            out['ifname'] = ifname.group(1)
        if current is None:
            if not ifname:
                out['unparsed'].append(line)
            continue
        if stripped == '...':
            out['unparsed'].append(line)
            continue
        current.append(stripped)
    _lldp_summary(out)
    return out


def _lldp_summary(out):
    tlvs = out['tlvs']
    chassis = tlvs.get('Chassis ID TLV')
    if chassis:
        out['chassis_id'] = re.sub(r'^\w+\s*:\s*', '', chassis[0])
    name = tlvs.get('System Name TLV')
    if name:
        out['system_name'] = name[0]
    mgmt = tlvs.get('Management Address TLV')
    if mgmt:
        match = re.match(r'^IPv[46]\s*:\s*(\S+)', mgmt[0])
        if match:
            out['management_address'] = match.group(1)
    size = tlvs.get('Maximum Frame Size TLV')
    if size and is_digits(size[0]):
        out['max_frame_size'] = int(size[0])


def parse_link_stat_get(text):
    """Parse ``hccn_tool -i N -link_stat -g``.

    Sample::

        [devid 0]current time        : Tue Oct 28 21:46:46 2025
        [devid 0]link up count       : 2
        [devid 0]link down count     : 1
        [devid 0]link change records :
        [devid 0]    Sun Oct  5 10:13:51 2025    LINK UP

    Returns ``{'device': 0, 'current_time': 'Tue Oct 28 21:46:46 2025', 'link_up_count': 2,
    'link_down_count': 1, 'records': [{'time': 'Sun Oct  5 10:13:51 2025', 'status': 'UP'}]}``
    (newest first). Older drivers print no ``link down count`` line: ``link_down_count`` is then
    ``None``. The history holds the last records only; the counts are totals.
    """
    out = _result(device=None, current_time=None, link_up_count=None, link_down_count=None, records=[])
    for line in lines_of(text):
        if not line.strip():
            continue
        match = re.match(r'^\s*\[(?:devid|device)\s+([0-9]+)\]\s*(.*?)\s*$', line)
        if not match or to_int(match.group(1)) is None:
            out['unparsed'].append(line)
            continue
        out['device'] = to_int(match.group(1))
        body = match.group(2)
        record = re.match(r'^(.*?)\s{2,}LINK\s+(UP|DOWN)$', body)
        if record:
            out['records'].append({'time': record.group(1), 'status': record.group(2)})
            continue
        kv = re.match(r'^(current time|link up count|link down count|link change records)\s*:\s*(.*)$', body)
        if not kv:
            out['unparsed'].append(line)
        elif kv.group(1) == 'current time':
            out['current_time'] = kv.group(2)
        elif kv.group(1) in ('link up count', 'link down count'):
            if to_int(kv.group(2)) is None:
                out['unparsed'].append(line)
            else:
                out[kv.group(1).replace(' ', '_')] = to_int(kv.group(2))
        elif kv.group(2) not in ('', 'NA'):
            out['unparsed'].append(line)
    return out


def parse_vnic(text):
    """Parse ``hccn_tool -i N -vnic -g``: the virtual NIC of the NPU (on an Atlas A3 / 910_93
    SuperPoD the address its dies use to reach each other over HCCS).

    Sample::

        vnic link status: UP
        vnic ipaddr: 192.168.2.199
        vnic netmask: 255.255.255.0

    Returns ``{'link': 'UP', 'address': '192.168.2.199', 'netmask': '255.255.255.0'}`` (``link``
    is ``'DOWN'`` when the vNIC is down; ``None`` for each value the output lacks). The plain
    ``link status:`` and ``ipaddr:`` lines of the RoCE port are not vNIC lines and go to
    ``unparsed``.
    """
    out = _result(link=None, address=None, netmask=None)
    names = {'vnic link status': 'link', 'vnic ipaddr': 'address', 'vnic netmask': 'netmask'}
    for line in lines_of(text):
        pair = _key_value(line)
        key = names.get(re.sub(r'\s+', ' ', pair[0]).lower()) if pair else None
        if key is None or not pair[1] or len(pair[1].split()) != 1:
            if line.strip():
                out['unparsed'].append(line)
            continue
        out[key] = pair[1]
    return out


def parse_speed_get(text):
    """Parse ``hccn_tool -i N -speed -g``.

    Sample::

        Speed: 100000 Mb/s

    Returns ``{'speed_mbps': 100000}`` (``None`` when the tool reports an unknown speed).
    """
    out = _result(speed_mbps=None)
    for line in lines_of(text):
        match = re.match(r'^\s*Speed\s*:\s*([0-9]+)\s*Mb/s\s*$', line)
        if match and to_int(match.group(1)) is not None:
            out['speed_mbps'] = to_int(match.group(1))
        elif re.match(r'^\s*Speed\s*:.*Unknown', line):
            continue
        elif line.strip():
            out['unparsed'].append(line)
    return out


def parse_fec_get(text):
    """Parse ``hccn_tool -i N -fec -g``.

    Sample::

        fec mode: rs FEC mode

    Returns ``{'fec': 'rs'}`` (``auto``, ``no`` or ``rs``).
    """
    out = _result(fec=None)
    for line in lines_of(text):
        match = re.match(r'^\s*fec mode\s*:\s*(\S+)\s+FEC mode\s*$', line)
        if match:
            out['fec'] = match.group(1)
        elif line.strip():
            out['unparsed'].append(line)
    return out


def parse_ping(text):
    """Parse ``hccn_tool -i N -ping -g address X``.

    Sample::

        device 3 PING 29.1.137.205
        recv seq=0,time=1.418000ms
        3 packets transmitted, 3 received, 0.00% packet loss

    Returns ``{'device': 3, 'address': '29.1.137.205', 'transmitted': 3, 'received': 3,
    'loss_pct': 0.0, 'rtt_ms': [1.418]}``.
    """
    out = _result(device=None, address=None, transmitted=None, received=None, loss_pct=None, rtt_ms=[])
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped:
            continue
        head = re.match(r'^device\s+([0-9]+)\s+PING\s+(\S+)$', stripped)
        recv = re.match(r'^recv seq=([0-9]+)\s*,\s*time=([0-9.]+)\s*ms$', stripped)
        summary = re.match(r'^([0-9]+) packets transmitted,\s*([0-9]+) received,\s*([0-9.]+)% packet loss$', stripped)
        if head and to_int(head.group(1)) is not None:
            out['device'] = to_int(head.group(1))
            out['address'] = head.group(2)
        elif recv and to_int(recv.group(1)) is not None and to_float(recv.group(2)) is not None:
            out['rtt_ms'].append(to_float(recv.group(2)))
        elif summary and None not in (to_int(summary.group(1)), to_int(summary.group(2)), to_float(summary.group(3))):
            out['transmitted'] = to_int(summary.group(1))
            out['received'] = to_int(summary.group(2))
            out['loss_pct'] = to_float(summary.group(3))
        else:
            out['unparsed'].append(line)
    return out


def parse_set(text):
    """Parse the stdout of a set command.

    Sample::

        Cmd executed successfully!

    Returns ``{'success': True}``; other stdout lines (parameter help printed after an error)
    are returned in ``unparsed``.
    """
    out = _result(success=False)
    for line in lines_of(text):
        if line.strip() == 'Cmd executed successfully!':
            out['success'] = True
        elif line.strip():
            out['unparsed'].append(line)
    return out


PARSERS = {
    'link': parse_link_get,
    'ip': parse_ip_get,
    'gateway': parse_gateway_get,
    'net_health': parse_net_health_get,
    'tls': parse_tls_get,
    'pfc': parse_pfc_get,
    'pfc_stat': parse_pfc_stat_get,
    'dscp_to_tc': parse_dscp_to_tc_get,
    'mtu': parse_mtu_get,
    'netdetect': parse_netdetect_get,
    'optical': parse_optical_get,
    'stat': parse_stat_get,
    'lldp': parse_lldp_get,
    'link_stat': parse_link_stat_get,
    'vnic': parse_vnic,
    'speed': parse_speed_get,
    'fec': parse_fec_get,
    'ping': parse_ping,
    'set': parse_set,
}
