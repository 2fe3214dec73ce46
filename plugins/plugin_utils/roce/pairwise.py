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


def _threshold(threshold):
    try:
        return float(threshold)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('pairwise_culprit: threshold must be a number of GB/s (%s)' % exc) from exc


def _pairs(results, threshold):
    """The measured pairs ``{hosts, busbw, slow}`` (and ``round`` when the result has one) of ``results``."""
    pairs = []
    for item in results or []:
        if isinstance(item, Mapping) and 'hosts' not in item and isinstance(item.get('item'), (list, tuple)):
            # one result of a looped hccl_bench task: the loop item is the pair
            item = {'hosts': item['item'], 'busbw': item.get('peak_busbw_gb_s'), 'msg': item.get('msg')}
        if not isinstance(item, Mapping) or not isinstance(item.get('hosts'), (list, tuple)):
            raise AnsibleFilterError('pairwise_culprit: each result is {hosts: [a, b], busbw: GB/s} or a looped hccl_bench '
                                     'result, got %r' % (item,))
        busbw = item['busbw'] if 'busbw' in item else item.get('peak_busbw_gb_s')
        pair = {'hosts': list(item['hosts']), 'busbw': busbw, 'slow': busbw is None or float(busbw) < threshold}
        if item.get('round') is not None:
            pair['round'] = item['round']
        pairs.append(pair)
    return pairs


def _sides(pairs):
    """(cleared, culprits): the nodes of a fast pair, and the nodes of no fast pair that were slow with one of them."""
    cleared = set(host for pair in pairs if not pair['slow'] for host in pair['hosts'])
    culprits = set()
    for pair in pairs:
        if pair['slow'] and len(pair['hosts']) == 2:
            first, second = pair['hosts']
            if first in cleared and second not in cleared:
                culprits.add(second)
            elif second in cleared and first not in cleared:
                culprits.add(first)
    return cleared, culprits


def _in_order(hosts, names):
    order = dict((host, index) for index, host in enumerate(hosts))
    return sorted(names, key=lambda name: (order.get(name, len(order)), name))


def search_round(hosts, results, threshold):
    """The next round of the search for slow nodes: disjoint pairs of ``hosts`` to measure at once, [] when done.

    Round 1 pairs the nodes in their order (an odd node out waits for round 2). Then every node that is neither
    cleared (in a pair at ``threshold`` or above) nor named (slow with a cleared node) is measured against its own
    cleared node, so two or more slow nodes are named in the same round. While no node is cleared, the ring pairs
    not yet measured are taken, as many disjoint ones as there are; when none is left the search ends with
    suspects only.
    """
    hosts = list(hosts or [])
    if len(hosts) < 2:
        return []
    pairs = _pairs(results, _threshold(threshold))
    if not pairs:
        return [hosts[i:i + 2] for i in range(0, len(hosts) - 1, 2)]
    measured = set(frozenset(pair['hosts']) for pair in pairs)
    cleared, culprits = _sides(pairs)
    waiting = [host for host in hosts if host not in cleared and host not in culprits]
    out = []
    if cleared:
        references = _in_order(hosts, cleared)
        for host in waiting:
            for reference in references:
                if frozenset((host, reference)) not in measured:
                    out.append(_in_order(hosts, [host, reference]))
                    references.remove(reference)
                    break
        return out
    used = set()
    for first, second in ring_pairs(hosts):
        if frozenset((first, second)) in measured or first in used or second in used:
            continue
        out.append([first, second])
        used.update((first, second))
    return out


def _names(names):
    names = list(names)
    return names[0] if len(names) == 1 else '%s and %s' % (', '.join(names[:-1]), names[-1])


def pairwise_culprit(results, threshold):
    """Name the slow nodes from cross-node benchmarks run on pairs of nodes.

    ``results`` is a list of ``{hosts: [a, b], busbw: GB/s or None}`` (or looped hccl_bench results, or the runs of
    hccl_bench's ``host_groups`` with their ``round``); a pair below ``threshold`` is slow. A node of a fast pair is
    cleared; a node of no fast pair that is slow with a cleared node is a culprit. Returns ``{pairs, slow_pairs,
    culprit, culprits, suspects, slow_paths, msg}``: ``culprit`` is the culprit when there is exactly one;
    ``suspects`` the culprits, else the nodes of the slow pairs that are in no fast pair; ``slow_paths`` the slow
    pairs of two cleared nodes.
    """
    threshold = _threshold(threshold)
    pairs = _pairs(results, threshold)
    hosts = []
    for pair in pairs:
        hosts.extend(host for host in pair['hosts'] if host not in hosts)
    slow = [p for p in pairs if p['slow']]
    cleared, culprits = _sides(pairs)
    culprits = _in_order(hosts, culprits)
    paths = [p for p in slow if all(host in cleared for host in p['hosts'])]
    open_pairs = [p for p in slow if p not in paths and not any(host in culprits for host in p['hosts'])]
    if culprits:
        suspects = list(culprits)
    else:
        common = set(slow[0]['hosts']) if slow else set()
        for pair in slow[1:]:
            common &= set(pair['hosts'])
        suspects = sorted(common - cleared) or sorted(set(h for p in slow for h in p['hosts']) - cleared)
    culprit = culprits[0] if len(culprits) == 1 else (suspects[0] if len(suspects) == 1 and not paths else None)
    if culprit and not culprits:
        culprits = [culprit]
    ranked = sorted(pairs, key=lambda p: (p['busbw'] is not None, p['busbw'] or 0.0))
    if not slow:
        msg = 'every pair reaches %.1f GB/s; the slow run needs more than two nodes to show' % threshold
    elif len(culprits) == 1 and all(culprits[0] in p['hosts'] for p in slow):
        msg = '%s is in every slow pair (%s) and in no fast one: it is the slow node' % (
            culprit, ', '.join(_pair_text(p) for p in slow))
    elif culprits:
        named = [p for p in slow if any(host in culprits for host in p['hosts'])]
        msg = '%s %s slow with a node that reaches %.1f GB/s and in no fast pair (%s): %s' % (
            _names(culprits), 'is' if len(culprits) == 1 else 'are each', threshold,
            ', '.join(_pair_text(p) for p in named), 'it is the slow node' if len(culprits) == 1 else 'they are the slow nodes')
        if paths:
            msg += '; the path of %s is slow as well' % ', '.join(_pair_text(p) for p in paths)
        if open_pairs:
            msg += '; %s could not be told apart' % ', '.join(_pair_text(p) for p in open_pairs)
    elif suspects:
        msg = 'the slow pairs (%s) point at %s' % (', '.join(_pair_text(p) for p in slow), ' or '.join(suspects))
    elif len(slow) == 1:
        msg = ('only %s is slow and both nodes reach %.1f GB/s with another node: the path between them is slow, not one '
               'node' % (_pair_text(slow[0]), threshold))
    else:
        msg = 'the slow pairs (%s) share no node: more than one link is slow' % ', '.join(_pair_text(p) for p in slow)
    rounds = max([p.get('round') or 0 for p in pairs] or [0])
    out = {'pairs': ranked, 'slow_pairs': slow, 'culprit': culprit, 'culprits': culprits, 'suspects': suspects,
           'slow_paths': paths, 'msg': msg}
    if rounds:
        out['rounds'] = rounds
    return out


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


def _ports_by_culprit(culprits, culprit_ports):
    """{node: hccn_info result} from the read of the culprits' ports: one result (one culprit), or the register of a
    loop over the culprits (``results``, each with its ``item``)."""
    if not isinstance(culprit_ports, Mapping):
        return {}
    if isinstance(culprit_ports.get('results'), list):
        return dict((item.get('item'), item) for item in culprit_ports['results']
                    if isinstance(item, Mapping) and item.get('item') in culprits)
    return {culprits[0]: culprit_ports} if len(culprits) == 1 else {}


def _ports_detail(ports, own):
    """What the ports of one slow node show (``own``: None for the only culprit, its name for one of several)."""
    if not ports.get('devices'):
        return '. %s could not be read: %s' % ('The ports of %s' % own if own else 'Its ports', ports.get('msg'))
    entries = by_device(ports)
    outliers = _standing_out(entries)
    if outliers:
        shown = []
        for dev in sorted(outliers):
            entry = entries[dev]
            shown.append('NPU %d (MTU %s, PFC %s, link %s): %s' % (
                dev, entry.get('mtu'), port_text(entry.get('pfc_priorities')), entry.get('link'), ', '.join(outliers[dev])))
        return '. %s that stand out: %s' % ('The ports of %s' % own if own else 'Its ports', '; '.join(shown))
    mtus = sorted(set(str(e.get('mtu')) for e in entries.values()))
    pfcs = sorted(set(port_text(e.get('pfc_priorities')) for e in entries.values()))
    links = sorted(set(str(e.get('link')) for e in entries.values()))
    return ('. No port of %s stands out (%d ports: MTU %s, PFC %s, link %s, the same link history and error counters): '
            'look at the node itself (the switch uplinks of its ports, NIC firmware, CPU load, a job sharing the node)'
            % (own or 'it', len(entries), '/'.join(mtus), '/'.join(pfcs),
               '/'.join(links)))


def crossnode_findings(findings, pairwise=None, culprit_ports=None, expected=None):
    """The findings of the cross-node benchmark (from bench_findings), with the pairwise search's verdict and what
    the slow nodes' ports show (one finding per slow node, or one for the PoD without a slow node); ``expected``
    (crossnode_busbw_expected) adds to the bandwidth finding what the gate expects and why. ``culprit_ports`` is
    the hccn_info result of the one slow node, or the register of a loop over the slow nodes."""
    out = [dict(item) for item in findings or []]
    if isinstance(expected, Mapping) and expected.get('basis'):
        for item in out:
            if item.get('check') == 'busbw':
                item['msg'] = '%s; %s' % (item.get('msg'), expected['basis'])
    if not out or not isinstance(pairwise, Mapping):
        return out
    culprits = list(pairwise.get('culprits') or ([pairwise['culprit']] if pairwise.get('culprit') else []))
    detail = pairwise.get('msg') or ''
    if not culprits:
        out.append(finding(out[0].get('host'), None, 'pairwise', None, None, detail))
        return out
    ports = _ports_by_culprit(culprits, culprit_ports)
    for culprit in culprits:
        text = detail
        if culprit in ports:
            text += _ports_detail(ports[culprit], None if len(culprits) == 1 else culprit)
        out.append(finding(culprit, None, 'pairwise', culprit, None, text))
    return out
