# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stage 4 checks: the ports against the lossless intent, PFC pause counters between two reads,
the change ticket of a dry run, and the pairwise search for a slow node.

Findings have the shape of :mod:`findings` (``{host, device, check, value, expected, severity,
msg}``). The documentation of each filter is in the .yml file of the same name next to this file.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.filter.health_findings import WARN, _own_words, finding
from ansible_collections.npuops.ascend.plugins.plugin_utils import _roce_window

# queries whose set takes the port down for a few seconds (hccn_config waits for the link after them)
LINK_AFFECTING = ('-mtu -s', '-pfc -s')
PRIORITIES = range(8)


def _devices(info):
    """{device id: entry} of an hccn_info result or of a list of config entries."""
    if isinstance(info, Mapping):
        devices = info.get('devices') or {}
        return dict((int(key), value) for key, value in devices.items() if str(key).isdigit() and isinstance(value, Mapping))
    if isinstance(info, (list, tuple)):
        return dict((int(item['device']), item) for item in info if isinstance(item, Mapping) and 'device' in item)
    return {}


def _dscp_map(entry):
    value = entry.get('dscp_to_tc')
    if isinstance(value, Mapping):
        return dict((int(k), v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return dict((int(item['dscp']), item['tc']) for item in value if isinstance(item, Mapping) and 'dscp' in item)
    return None


def _intent(intent, name):
    if not isinstance(intent, Mapping):
        raise AnsibleFilterError('%s: intent must be a dict with mtu, lossless_priority, lossless_dscp and lossless_tc, got %r'
                                 % (name, intent))
    try:
        return (int(intent['mtu']), int(intent['lossless_priority']), int(intent['lossless_dscp']),
                int(intent['lossless_tc']))
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError('%s: intent needs integer mtu, lossless_priority, lossless_dscp and lossless_tc (%s); '
                                 'validate it with npuops.ascend.roce_intent_problems first' % (name, exc)) from exc


def roce_port_findings(info, intent, host=None, devices=None):
    """Findings of the ports read back after stage 4 against the lossless intent."""
    host = host or 'this node'
    mtu, priority, dscp, tc = _intent(intent, 'roce_port_findings')
    entries = _devices(info)
    out = []
    wanted = sorted(entries) if devices is None else [int(d) for d in devices]
    for dev in wanted:
        entry = entries.get(dev)
        if entry is None:
            out.append(finding(host, dev, 'port', None, 'read', 'the port was not read back'))
            continue
        if 'link' in entry and entry['link'] != 'UP':
            out.append(finding(host, dev, 'link', entry['link'], 'UP', 'link is %s, expected UP' % entry['link']
                               if entry['link'] is not None else 'the link state could not be read'))
        if 'mtu' in entry and entry['mtu'] != mtu:
            out.append(finding(host, dev, 'mtu', entry['mtu'], mtu, 'MTU is %s, expected %d (npuops_mtu)' % (entry['mtu'], mtu)
                               if entry['mtu'] is not None else 'the MTU could not be read'))
        if 'pfc_priorities' in entry:
            have = entry['pfc_priorities']
            if have is None:
                out.append(finding(host, dev, 'pfc', None, [priority], 'PFC could not be read'))
            elif priority not in have:
                out.append(finding(host, dev, 'pfc', have, [priority],
                                   'PFC is not enabled on priority %d (enabled: %s), so HCCL_RDMA_SL=%d traffic is not lossless'
                                   % (priority, ', '.join(str(p) for p in have) or 'none', priority)))
            elif len(have) > 1:
                out.append(finding(host, dev, 'pfc', have, [priority],
                                   'PFC is enabled on priorities %s, more than the lossless priority %d (npuops_lossless_priority)'
                                   % (', '.join(str(p) for p in have), priority), WARN))
        if 'dscp_to_tc' in entry:
            table = _dscp_map(entry)
            if table is None:
                out.append(finding(host, dev, 'dscp_to_tc', None, {dscp: tc}, 'the DSCP map could not be read'))
            elif table.get(dscp) != tc:
                where = 'maps to TC %s' % table.get(dscp) if dscp in table else 'is not in the map read back'
                out.append(finding(host, dev, 'dscp_to_tc', table.get(dscp), tc,
                                   'DSCP %d %s, expected the lossless TC %d, so HCCL_RDMA_TC=%d traffic leaves the '
                                   'lossless queue' % (dscp, where, tc, dscp * 4)))
    return out


def hccl_alignment_findings(env, intent, host=None, source='the HCCL env file'):
    """Findings of HCCL_RDMA_SL / HCCL_RDMA_TC (as a launch would see them) against the PFC priority and the DSCP."""
    host = host or 'this node'
    _mtu, priority, dscp, _tc = _intent(intent, 'hccl_alignment_findings')
    env = env if isinstance(env, Mapping) else {}
    out = []
    sl = env.get('HCCL_RDMA_SL')
    if sl not in (None, '') and str(sl).strip() != str(priority):
        out.append(finding(host, None, 'HCCL_RDMA_SL', sl, priority,
                           'HCCL_RDMA_SL=%s in %s, but PFC is enabled on priority %d: HCCL_RDMA_SL must equal the PFC priority '
                           '(run stage 5, hccl_env, to rewrite it)' % (sl, source, priority)))
    rdma_tc = env.get('HCCL_RDMA_TC')
    if rdma_tc not in (None, '') and str(rdma_tc).strip() != str(dscp * 4):
        reason = ''
        if str(rdma_tc).strip() == str(dscp):
            reason = ' (%s is the DSCP itself; HCCL_RDMA_TC is the ToS byte, DSCP x 4)' % rdma_tc
        out.append(finding(host, None, 'HCCL_RDMA_TC', rdma_tc, dscp * 4,
                           'HCCL_RDMA_TC=%s in %s, but the lossless DSCP is %d, so it must be %d%s (run stage 5, hccl_env, to '
                           'rewrite it)' % (rdma_tc, source, dscp, dscp * 4, reason)))
    return out


def _counter(entry, name):
    stat = (entry or {}).get('pfc_stat') or {}
    counters = stat.get('counters') if isinstance(stat.get('counters'), Mapping) else stat
    value = counters.get(name) if isinstance(counters, Mapping) else None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def pfc_steady_findings(first, second, seconds, host=None, priority=4, max_pause_ms_per_s=100.0):
    """Findings of the PFC pause counters between two hccn_info reads ``seconds`` apart."""
    host = host or 'this node'
    try:
        seconds = float(seconds)
        limit = float(max_pause_ms_per_s)
        priority = int(priority)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('pfc_steady_findings: seconds, max_pause_ms_per_s and priority must be numbers (%s)' % exc) from exc
    if seconds <= 0:
        raise AnsibleFilterError('pfc_steady_findings: seconds must be > 0, got %s' % seconds)
    before, after = _devices(first), _devices(second)
    out = []
    for dev in sorted(set(before) & set(after)):
        if not (before[dev].get('pfc_stat') and after[dev].get('pfc_stat')):
            out.append(finding(host, dev, 'pfc_stat', None, 'two reads', 'the PFC counters could not be read twice', WARN))
            continue
        for prio in PRIORITIES:
            for name, what in (('tx_pfc%d_duration_warn_cnt' % prio, 'pause-time warnings'),
                               ('tx_pfc%d_duration_err_cnt' % prio, 'pause-time errors')):
                a, b = _counter(before[dev], name), _counter(after[dev], name)
                if a is not None and b is not None and b > a:
                    out.append(finding(host, dev, 'pfc_stat', b - a, 0,
                                       '%s grew by %d in %.1f s on priority %d (%s): the port sends long PFC pauses, a pause '
                                       'storm or a congested receiver' % (name, b - a, seconds, prio, what)))
        for direction, meaning in (('tx', 'sent'), ('rx', 'received')):
            name = '%s_pfc%d_duration_ms' % (direction, priority)
            a, b = _counter(before[dev], name), _counter(after[dev], name)
            if a is None or b is None:
                continue
            rate = (b - a) / seconds
            if rate > limit:
                out.append(finding(host, dev, 'pfc_stat', round(rate, 1), '<= %s ms/s' % limit,
                                   'PFC pauses %s on priority %d grew by %.1f ms per second (%.1f ms in %.1f s), above %s ms/s '
                                   '(roce_lossless_pfc_max_pause_ms_per_s): the lossless priority is not steady'
                                   % (meaning, priority, rate, b - a, seconds, limit)))
    return out


def roce_precheck_findings(before, processes=None, host=None, plan=None, allow_busy=False):
    """What stops the change of a node before anything is set: ports that are down or answer nothing, addresses that
    differ from the plan (when ``plan`` is given), NPU processes (a warning with ``allow_busy``)."""
    host = host or 'this node'
    out = []
    if isinstance(before, Mapping) and before.get('unreachable'):
        # the reading ran with ignore_unreachable: the connection to the node broke (or never opened)
        return [finding(host, None, 'reachable', None, 'reachable',
                        'could not be reached (%s); nothing was read or set on it: bring it back (or leave it out with -l) '
                        'and run again' % _roce_window.short_text(before.get('msg')))]
    if not isinstance(before, Mapping) or 'devices' not in before:
        text = (before or {}).get('msg') if isinstance(before, Mapping) else None
        return [finding(host, None, 'ports', None, 'read', 'the NPU ports could not be read: %s' % (text or 'no result'))]
    planned = dict((int(p['device']), p) for p in plan or [] if isinstance(p, Mapping) and 'device' in p)
    for dev, entry in sorted(_devices(before).items()):
        if 'link' in entry and entry['link'] != 'UP':
            out.append(finding(host, dev, 'link', entry['link'], 'UP',
                               'link is %s before the change: stage 4 does not tune a broken port; fix the cable, optics or '
                               'switch port (stage 0 lists them) and run again' % entry['link']))
        if plan is not None and dev in planned and 'address' in entry:
            want = '%s/%s' % (planned[dev].get('address'), planned[dev].get('netmask'))
            have = '%s/%s' % (entry.get('address'), entry.get('netmask')) if entry.get('address') else None
            if have != want:
                out.append(finding(host, dev, 'address', have, want,
                                   'the port has %s, the plan (npuops_npu_ports / npuops_npu_ip_plan) says %s: fix the plan, '
                                   'or set roce_lossless_addresses=apply to set the planned address'
                                   % (have or 'no address', want)))
    for error in before.get('errors') or []:
        query = error.get('query')
        text = _own_words(host, error.get('device'), error.get('msg'))
        if text.startswith('%s not read: ' % query):
            text = text[len('%s not read: ' % query):]
        out.append(finding(host, error.get('device'), query or 'port', None, None,
                           'could not read %s before the change: %s' % (query, text)))
    busy = [p for p in processes or [] if isinstance(p, Mapping)]
    for proc in busy:
        dev = proc.get('npu', proc.get('device'))
        text = ('pid %s (%s) runs on the NPU: its RDMA connections break while the links flap' % (proc.get('pid'), proc.get('name')))
        if allow_busy:
            out.append(finding(host, dev, 'busy', proc.get('pid'), 'no process',
                               text + '; changing it anyway because roce_lossless_allow_busy=true', WARN))
        else:
            out.append(finding(host, dev, 'busy', proc.get('pid'), 'no process',
                               text + '; stop the job first, or set roce_lossless_allow_busy=true'))
    return out


def port_config_subset(config, keys):
    """Only ``device`` and ``keys`` of every entry of an hccn_config ``config`` list (one step of a change)."""
    keys = [keys] if isinstance(keys, str) else list(keys or [])
    return [dict((k, v) for k, v in entry.items() if k == 'device' or k in keys) for entry in config or []
            if isinstance(entry, Mapping) and any(k in entry for k in keys)]


def roce_desired_config(devices, intent, ports=None, addresses='check'):
    """The hccn_config ``config`` of one node for the lossless intent: per device MTU, PFC priority and DSCP map,
    with the planned address and netmask when ``addresses`` is ``apply``."""
    mtu, priority, dscp, tc = _intent(intent, 'roce_desired_config')
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


def _text(value):
    if isinstance(value, list):
        return '[%s]' % ', '.join(str(v) for v in value)
    return 'unset' if value is None else str(value)


def _port_changes(before, after):
    """'mtu 1500 -> 9000' phrases of one device (a DSCP map item by item)."""
    parts = []
    for key in sorted(set(before) | set(after)):
        if key == 'device':
            continue
        old, new = before.get(key), after.get(key)
        if key == 'dscp_to_tc':
            old_map, new_map = _dscp_map(before) or {}, _dscp_map(after) or {}
            for dscp in sorted(new_map):
                if old_map.get(dscp) != new_map[dscp]:
                    parts.append('DSCP %d -> TC %s (was %s)' % (dscp, new_map[dscp], _text(old_map.get(dscp))))
        elif old != new:
            parts.append('%s %s -> %s' % (key, _text(old), _text(new)))
    return parts


def roce_change_ticket(plans, title='roce_lossless', together=False):
    """The lines of a change ticket from the check-mode hccn_config results of every node ({host: result}).

    ``together``: the commands of a port run in one pass and its link is waited for once, so a port whose MTU and PFC
    both change flaps once.
    """
    if not isinstance(plans, Mapping):
        raise AnsibleFilterError('roce_change_ticket: expects a dict {host: registered hccn_config result}')
    lines = []
    ports = flaps = 0
    changing = []
    for host in sorted(plans):
        result = plans[host] or {}
        if not isinstance(result, Mapping) or result.get('failed') or 'before' not in result:
            lines.append('%s: not planned: %s' % (host, (result.get('msg') if isinstance(result, Mapping) else None) or 'no result'))
            continue
        befores = _devices(result.get('before') or [])
        afters = _devices(result.get('after') or [])
        commands = result.get('commands') or []
        node_lines = []
        for dev in sorted(afters):
            parts = _port_changes(befores.get(dev) or {}, afters[dev])
            if not parts:
                continue
            device_flaps = sum(1 for c in commands if (' -i %d ' % dev) in c and any(k in c for k in LINK_AFFECTING))
            if together:
                device_flaps = min(device_flaps, 1)
            ports += 1
            flaps += device_flaps
            node_lines.append('  NPU %d: %s; %d link flap%s' % (dev, '; '.join(parts), device_flaps, '' if device_flaps == 1 else 's'))
        if node_lines:
            changing.append(host)
            lines.append('%s: %d port(s) change, %d command(s)' % (host, len(node_lines), len(commands)))
            lines.extend(node_lines)
        else:
            lines.append('%s: no change' % host)
        for busy in result.get('busy') or []:
            lines.append('  NPU %s runs pid %s (%s): the change is refused there unless roce_lossless_allow_busy=true'
                         % (busy.get('device'), busy.get('pid'), busy.get('name')))
    head = ('Change ticket (%s): %d node(s) of %d change, %d port(s), %d link flap(s) in all (%s)'
            % (title, len(changing), len(plans), ports, flaps,
               'the settings of a port are set in one pass, which takes the port down once for a few seconds' if together
               else 'each MTU or PFC set takes its port down for a few seconds'))
    return [head] + lines


def roce_batch_outcome(batch, hostvars, all_hosts=None, restore_enabled=True):
    """The message that stops a change window after a failed batch: what failed, what changed, what was restored,
    what may be changed (a node lost during its change), and which nodes were not touched."""
    return _roce_window.batch_outcome(batch, hostvars, all_hosts, restore_enabled)


def changed_ports(result, keys):
    """NPU ids an hccn_config result changed whose value of any of ``keys`` differs between ``before`` and ``after``
    (a one-pass change told apart per setting); [] for a skipped or missing result."""
    keys = [keys] if isinstance(keys, str) else list(keys or [])
    if not isinstance(result, Mapping):
        return []
    touched = set(result.get('changed_devices') or [])
    befores = _devices(result.get('before') or [])
    afters = _devices(result.get('after') or [])
    out = []
    for dev in sorted(touched):
        before, after = befores.get(dev) or {}, afters.get(dev) or {}
        if any(key in before and before.get(key) != after.get(key) for key in keys):
            out.append(dev)
    return out


def _pair_key(hosts):
    return ' + '.join(hosts)


def _pair_text(pair):
    """'node01 + node02 12.5 GB/s', or '... (no result)' for a pair whose benchmark gave no bandwidth."""
    if pair['busbw'] is None:
        return '%s (no result)' % _pair_key(pair['hosts'])
    return '%s %s GB/s' % (_pair_key(pair['hosts']), pair['busbw'])


def pairwise_culprit(results, threshold):
    """Name the slow node from cross-node benchmarks run on pairs of nodes.

    ``results`` is a list of ``{hosts: [a, b], busbw: GB/s or None}``; a pair below ``threshold`` is slow.
    Returns ``{pairs, slow_pairs, culprit, suspects, msg}``: the culprit is the one node that every slow pair
    contains (and no fast pair does), when there is one.
    """
    try:
        threshold = float(threshold)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('pairwise_culprit: threshold must be a number of GB/s (%s)' % exc) from exc
    pairs = []
    for item in results or []:
        if isinstance(item, Mapping) and 'hosts' not in item and isinstance(item.get('item'), (list, tuple)):
            # one result of a looped hccl_bench task: the loop item is the pair
            item = {'hosts': item['item'], 'busbw': item.get('peak_busbw_gb_s'), 'msg': item.get('msg')}
        if not isinstance(item, Mapping) or not isinstance(item.get('hosts'), (list, tuple)):
            raise AnsibleFilterError('pairwise_culprit: each result is {hosts: [a, b], busbw: GB/s} or a looped hccl_bench '
                                     'result, got %r' % (item,))
        busbw = item.get('busbw')
        pairs.append({'hosts': list(item['hosts']), 'busbw': busbw,
                      'slow': busbw is None or float(busbw) < threshold})
    slow = [p for p in pairs if p['slow']]
    fast = [p for p in pairs if not p['slow']]
    in_fast = set(h for p in fast for h in p['hosts'])
    suspects = []
    if slow:
        common = set(slow[0]['hosts'])
        for pair in slow[1:]:
            common &= set(pair['hosts'])
        suspects = sorted(common - in_fast) or sorted(set(h for p in slow for h in p['hosts']) - in_fast)
    culprit = suspects[0] if len(suspects) == 1 else None
    ranked = sorted(pairs, key=lambda p: (p['busbw'] is not None, p['busbw'] or 0.0))
    if not slow:
        msg = 'every pair reaches %.1f GB/s; the slow run needs more than two nodes to show' % threshold
    elif culprit:
        msg = '%s is in every slow pair (%s) and in no fast one: it is the slow node' % (
            culprit, ', '.join(_pair_text(p) for p in slow))
    elif suspects:
        msg = 'the slow pairs (%s) point at %s' % (', '.join(_pair_text(p) for p in slow), ' or '.join(suspects))
    elif len(slow) == 1:
        msg = ('only %s is slow and both nodes reach %.1f GB/s with their other neighbour: the path between them is '
               'slow, not one node' % (_pair_text(slow[0]), threshold))
    else:
        msg = 'the slow pairs (%s) share no node: more than one link is slow' % ', '.join(_pair_text(p) for p in slow)
    return {'pairs': ranked, 'slow_pairs': slow, 'culprit': culprit, 'suspects': suspects, 'msg': msg}


# -stat -g counters that grow on a port that retrains, drops or retransmits
ERROR_COUNTERS = ('mac_rx_bad_pkt_num', 'mac_rx_fcs_err_pkt_num', 'roce_rx_err_pkt_num', 'roce_tx_err_pkt_num',
                  'roce_out_of_order_num', 'roce_new_pkt_rty_num', 'roce_qp_status_err_num')


def _port_signs(entry):
    """{sign: number} of one port: link DOWN records and the error counters."""
    history = entry.get('link_stat') or {}
    signs = {'link DOWN records': sum(1 for r in history.get('records') or [] if isinstance(r, Mapping) and r.get('status') == 'DOWN')}
    counters = entry.get('stat') or {}
    for name in ERROR_COUNTERS:
        value = counters.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            signs[name] = value
    return signs


def _median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else 0


def _standing_out(entries):
    """{device: ['name N (others M)']} for the ports whose retrains or error counters exceed the node's median: a
    change flaps every port alike, so only a port that stands out from its siblings is evidence."""
    signs = dict((dev, _port_signs(entry)) for dev, entry in entries.items())
    names = sorted(set(name for port in signs.values() for name in port))
    out = {}
    for name in names:
        values = [port.get(name, 0) for port in signs.values()]
        middle = _median(values)
        for dev, port in signs.items():
            value = port.get(name, 0)
            if value > middle and value > 0:
                out.setdefault(dev, []).append('%s %d (other ports %d)' % (name, value, middle))
    return out


def crossnode_findings(findings, pairwise=None, culprit_ports=None, expected=None):
    """The findings of the cross-node benchmark (from bench_findings), with the pairwise search's verdict and what
    the slow node's ports show; ``expected`` (crossnode_busbw_expected) adds to the bandwidth finding what the gate
    expects and why."""
    out = [dict(item) for item in findings or []]
    if isinstance(expected, Mapping) and expected.get('basis'):
        for item in out:
            if item.get('check') == 'busbw':
                item['msg'] = '%s; %s' % (item.get('msg'), expected['basis'])
    if not out or not isinstance(pairwise, Mapping):
        return out
    culprit = pairwise.get('culprit')
    host = culprit or out[0].get('host')
    detail = pairwise.get('msg') or ''
    if culprit and isinstance(culprit_ports, Mapping) and culprit_ports.get('devices'):
        entries = _devices(culprit_ports)
        outliers = _standing_out(entries)
        if outliers:
            shown = []
            for dev in sorted(outliers):
                entry = entries[dev]
                shown.append('NPU %d (MTU %s, PFC %s, link %s): %s' % (
                    dev, entry.get('mtu'), _text(entry.get('pfc_priorities')), entry.get('link'), ', '.join(outliers[dev])))
            detail += '. Its ports that stand out: ' + '; '.join(shown)
        else:
            mtus = sorted(set(str(e.get('mtu')) for e in entries.values()))
            pfcs = sorted(set(_text(e.get('pfc_priorities')) for e in entries.values()))
            links = sorted(set(str(e.get('link')) for e in entries.values()))
            detail += ('. No port of it stands out (%d ports: MTU %s, PFC %s, link %s, the same link history and error '
                       'counters): look at the node itself (the switch uplinks of its ports, NIC firmware, CPU load, a job '
                       'sharing the node)' % (len(entries), '/'.join(mtus), '/'.join(pfcs), '/'.join(links)))
    elif culprit and isinstance(culprit_ports, Mapping):
        detail += '. Its ports could not be read: %s' % culprit_ports.get('msg')
    out.append(finding(host, None, 'pairwise', culprit, None, detail))
    return out


def hccl_env_problem_lines(pair):
    """'node01: <problem>' for each problem of one node's hccl_env result; input ``[result, host]``."""
    result, host = pair
    return ['%s: %s' % (host, p.get('problem') if isinstance(p, Mapping) else p) for p in (result or {}).get('problems') or []]


HCCL_DEFAULTS = {'HCCL_RDMA_SL': 4, 'HCCL_RDMA_TC': 132}


def hccl_env_findings(result, host=None, loaded=None, ports=None, intent=None):
    """Stage 5 findings: the file, loaded by a shell, sets every value; HCCL_RDMA_SL / HCCL_RDMA_TC (written or HCCL's
    defaults) match the PFC priority and the DSCP map of every NPU port (``ports``: an hccn_info result, or the
    planned config list of stage 4 in a dry run)."""
    host = host or 'this node'
    out = []
    env = dict((name, str(value)) for name, value in (result or {}).get('env') or [])
    if loaded is not None:
        seen = dict(line.split('=', 1) for line in str(loaded).splitlines() if '=' in line)
        for name, value in sorted(env.items()):
            if seen.get(name) != value:
                out.append(finding(host, None, name, seen.get(name), value,
                                   '%s is %s after loading the env file in sh, expected %s' % (
                                       name, 'unset' if seen.get(name) is None else repr(seen.get(name)), repr(value))))
    entries = _devices(ports) if isinstance(ports, (list, tuple)) or (isinstance(ports, Mapping) and ports.get('devices')) else {}
    if entries:
        intent = intent or {}
        sl = int(env.get('HCCL_RDMA_SL', HCCL_DEFAULTS['HCCL_RDMA_SL']))
        tc_value = int(env.get('HCCL_RDMA_TC', HCCL_DEFAULTS['HCCL_RDMA_TC']))
        dscp = tc_value // 4
        lossless_tc = intent.get('lossless_tc')
        for dev, entry in sorted(entries.items()):
            priorities = entry.get('pfc_priorities')
            if priorities is not None and sl not in priorities:
                out.append(finding(host, dev, 'HCCL_RDMA_SL', sl, priorities,
                                   'HCCL_RDMA_SL=%d but the port has PFC on %s: the RDMA traffic would not be lossless; run '
                                   'stage 4 (roce_lossless) or fix npuops_lossless_priority' % (sl, _text(priorities))))
            table = _dscp_map(entry)
            if table is not None and lossless_tc is not None and table.get(dscp) != int(lossless_tc):
                out.append(finding(host, dev, 'HCCL_RDMA_TC', tc_value, lossless_tc,
                                   'HCCL_RDMA_TC=%d marks DSCP %d, which the port maps to TC %s, not the lossless TC %s; run '
                                   'stage 4 (roce_lossless) or fix npuops_lossless_dscp' % (tc_value, dscp, table.get(dscp),
                                                                                            lossless_tc)))
    elif isinstance(ports, Mapping) and not ports.get('skipped'):
        out.append(finding(host, None, 'ports', None, 'read', 'the NPU ports could not be read to check HCCL_RDMA_SL/TC: %s'
                           % ports.get('msg'), WARN))
    return out


def ring_pairs(hosts):
    """Neighbouring pairs of a ring of nodes: [[a, b], [b, c], [c, a]] (one pair for two nodes, none for one)."""
    hosts = list(hosts or [])
    if len(hosts) < 2:
        return []
    if len(hosts) == 2:
        return [hosts]
    return [[hosts[i], hosts[(i + 1) % len(hosts)]] for i in range(len(hosts))]


def ring_neighbours(hosts, host):
    """The nodes before and after ``host`` in the ring ``hosts`` (without ``host``; empty when alone)."""
    hosts = list(hosts or [])
    if host not in hosts or len(hosts) < 2:
        return []
    index = hosts.index(host)
    out = []
    for other in (hosts[(index + 1) % len(hosts)], hosts[index - 1]):
        if other != host and other not in out:
            out.append(other)
    return out


class FilterModule:
    """npuops.ascend stage 4 checks."""

    def filters(self):
        return {
            'roce_port_findings': roce_port_findings,
            'roce_desired_config': roce_desired_config,
            'roce_precheck_findings': roce_precheck_findings,
            'port_config_subset': port_config_subset,
            'changed_ports': changed_ports,
            'hccl_alignment_findings': hccl_alignment_findings,
            'pfc_steady_findings': pfc_steady_findings,
            'roce_change_ticket': roce_change_ticket,
            'pairwise_culprit': pairwise_culprit,
            'roce_batch_outcome': roce_batch_outcome,
            'crossnode_findings': crossnode_findings,
            'hccl_env_problem_lines': hccl_env_problem_lines,
            'hccl_env_findings': hccl_env_findings,
            'ring_pairs': ring_pairs,
            'ring_neighbours': ring_neighbours,
        }
