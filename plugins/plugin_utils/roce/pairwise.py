# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The search for a slow node across the PoD: the ring of nodes (ring_pairs, ring_neighbours), the benchmarks of
neighbouring pairs (pairwise_culprit) and the findings of the cross-node benchmark with what the slow node's ports show
(crossnode_findings).

The documentation of each filter is in plugins/filter/<name>.yml.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import finding
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.ports import by_device, port_text


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
        entries = by_device(culprit_ports)
        outliers = _standing_out(entries)
        if outliers:
            shown = []
            for dev in sorted(outliers):
                entry = entries[dev]
                shown.append('NPU %d (MTU %s, PFC %s, link %s): %s' % (
                    dev, entry.get('mtu'), port_text(entry.get('pfc_priorities')), entry.get('link'), ', '.join(outliers[dev])))
            detail += '. Its ports that stand out: ' + '; '.join(shown)
        else:
            mtus = sorted(set(str(e.get('mtu')) for e in entries.values()))
            pfcs = sorted(set(port_text(e.get('pfc_priorities')) for e in entries.values()))
            links = sorted(set(str(e.get('link')) for e in entries.values()))
            detail += ('. No port of it stands out (%d ports: MTU %s, PFC %s, link %s, the same link history and error '
                       'counters): look at the node itself (the switch uplinks of its ports, NIC firmware, CPU load, a job '
                       'sharing the node)' % (len(entries), '/'.join(mtus), '/'.join(pfcs), '/'.join(links)))
    elif culprit and isinstance(culprit_ports, Mapping):
        detail += '. Its ports could not be read: %s' % culprit_ports.get('msg')
    out.append(finding(host, None, 'pairwise', culprit, None, detail))
    return out
