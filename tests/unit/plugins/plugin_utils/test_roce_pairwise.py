"""The search for a slow node (plugins/plugin_utils/roce/pairwise.py): the ring of nodes, the pairwise benchmarks and
the findings of the cross-node benchmark with what the slow node's ports show."""

from __future__ import annotations

import copy

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.pairwise import (
    crossnode_findings,
    pairwise_culprit,
    ring_neighbours,
    ring_pairs,
    search_round,
)
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils.roce_samples import LINK_STAT, STAT, port


# ---- pairwise_culprit -----------------------------------------------------------------------------------------------

def looped(hosts, busbw=None, failed=False):
    """One result of the looped hccl_bench task (register of a loop over ring_pairs)."""
    result = {'item': list(hosts), 'ansible_loop_var': 'item', 'changed': False, 'failed': failed}
    if busbw is None:
        result['msg'] = 'mpirun exited 1: ssh: connect to host node03 port 22: Connection refused'
    else:
        result.update(peak_busbw_gb_s=busbw, below_band=busbw < 20.0, rows=[])
    return result


RING4 = [(['node01', 'node02'], 22.1), (['node02', 'node03'], 9.8), (['node03', 'node04'], 10.2), (['node04', 'node01'], 22.4)]


def test_the_slow_node_of_a_ring_of_four():
    verdict = pairwise_culprit([{'hosts': h, 'busbw': b} for h, b in RING4], 20)
    assert verdict['culprit'] == 'node03'
    assert verdict['suspects'] == ['node03']
    assert verdict['slow_pairs'] == [{'hosts': ['node02', 'node03'], 'busbw': 9.8, 'slow': True},
                                     {'hosts': ['node03', 'node04'], 'busbw': 10.2, 'slow': True}]
    assert [p['busbw'] for p in verdict['pairs']] == [9.8, 10.2, 22.1, 22.4]
    assert verdict['msg'] == ('node03 is in every slow pair (node02 + node03 9.8 GB/s, node03 + node04 10.2 GB/s) and in no '
                              'fast one: it is the slow node')


def test_looped_results_give_the_same_verdict():
    looped_results = [looped(h, b) for h, b in RING4]
    assert pairwise_culprit(looped_results, '20') == pairwise_culprit([{'hosts': h, 'busbw': b} for h, b in RING4], 20.0)


def test_the_slow_node_of_a_ring_of_three():
    verdict = pairwise_culprit([looped(['node01', 'node02'], 21.0), looped(['node02', 'node03'], 8.0),
                                looped(['node03', 'node01'], 7.5)], 20)
    assert (verdict['culprit'], verdict['suspects']) == ('node03', ['node03'])
    assert verdict['msg'] == ('node03 is in every slow pair (node02 + node03 8.0 GB/s, node03 + node01 7.5 GB/s) and in no '
                              'fast one: it is the slow node')


def test_no_slow_pair():
    verdict = pairwise_culprit([{'hosts': h, 'busbw': 22.0} for h, _b in RING4], 20)
    assert verdict == {'pairs': [{'hosts': h, 'busbw': 22.0, 'slow': False} for h, _b in RING4], 'slow_pairs': [],
                       'culprit': None, 'culprits': [], 'suspects': [], 'slow_paths': [],
                       'msg': 'every pair reaches 20.0 GB/s; the slow run needs more than two nodes to show'}


def test_a_pair_at_the_threshold_is_not_slow():
    assert pairwise_culprit([{'hosts': ['node01', 'node02'], 'busbw': 20.0}], 20)['slow_pairs'] == []


def test_slow_pairs_that_share_no_node():
    verdict = pairwise_culprit([{'hosts': ['node01', 'node02'], 'busbw': 9.0}, {'hosts': ['node02', 'node03'], 'busbw': 22.0},
                                {'hosts': ['node03', 'node04'], 'busbw': 8.5}, {'hosts': ['node04', 'node01'], 'busbw': 22.0}], 20)
    assert (verdict['culprit'], verdict['suspects']) == (None, [])
    assert verdict['msg'] == ('the slow pairs (node01 + node02 9.0 GB/s, node03 + node04 8.5 GB/s) share no node: more than '
                              'one link is slow')


def test_one_slow_pair_whose_nodes_are_fast_with_their_other_neighbours():
    verdict = pairwise_culprit([{'hosts': ['node01', 'node02'], 'busbw': 9.0}, {'hosts': ['node02', 'node03'], 'busbw': 22.0},
                                {'hosts': ['node03', 'node04'], 'busbw': 22.5}, {'hosts': ['node04', 'node01'], 'busbw': 22.0}], 20)
    assert (verdict['culprit'], verdict['suspects']) == (None, [])
    assert verdict['msg'] == ('only node01 + node02 9.0 GB/s is slow and both nodes reach 20.0 GB/s with another node: '
                              'the path between them is slow, not one node')


def test_every_pair_slow_points_at_every_node():
    verdict = pairwise_culprit([looped(['node01', 'node02'], 9.0), looped(['node02', 'node03'], 8.0),
                                looped(['node03', 'node01'], 7.0)], 20)
    assert (verdict['culprit'], verdict['suspects']) == (None, ['node01', 'node02', 'node03'])
    assert verdict['msg'] == ('the slow pairs (node01 + node02 9.0 GB/s, node02 + node03 8.0 GB/s, node03 + node01 7.0 GB/s) '
                              'point at node01 or node02 or node03')


def test_a_pair_whose_benchmark_failed_counts_as_slow():
    verdict = pairwise_culprit([looped(['node01', 'node02'], 22.1), looped(['node02', 'node03'], 9.8),
                                looped(['node03', 'node04'], failed=True), looped(['node04', 'node01'], 22.4)], 20)
    assert verdict['culprit'] == 'node03'
    assert verdict['pairs'][0] == {'hosts': ['node03', 'node04'], 'busbw': None, 'slow': True}
    assert verdict['msg'] == ('node03 is in every slow pair (node02 + node03 9.8 GB/s, node03 + node04 (no result)) and in '
                              'no fast one: it is the slow node')


@pytest.mark.parametrize('results, message', [
    (['node01 + node02'], r"^pairwise_culprit: each result is \{hosts: \[a, b\], busbw: GB/s\} or a looped hccl_bench result, "
                          r"got 'node01 \+ node02'$"),
    ([{'busbw': 9.0}], r"pairwise_culprit: each result is .*got \{'busbw': 9.0\}"),
    ([{'hosts': 'node01,node02', 'busbw': 9.0}], r'pairwise_culprit: each result is'),
])
def test_pairwise_culprit_wants_pairs(results, message):
    with pytest.raises(AnsibleFilterError, match=message):
        pairwise_culprit(results, 20)


def test_pairwise_culprit_wants_a_threshold():
    with pytest.raises(AnsibleFilterError, match=r'^pairwise_culprit: threshold must be a number of GB/s'):
        pairwise_culprit([], 'fast')
    assert pairwise_culprit(None, 20)['pairs'] == []


# ---- crossnode_findings ---------------------------------------------------------------------------------------------

BENCH = [{'host': 'node03', 'device': None, 'check': 'busbw', 'value': 12.4, 'expected': '>= 20.0 GB/s', 'severity': 'fail',
          'msg': 'node03: AllReduce bus bandwidth 12.4 GB/s is below 20.0 GB/s (80.0 % of 25.0 GB/s)'}]
PAIRWISE = pairwise_culprit([{'hosts': h, 'busbw': b} for h, b in RING4], 20)


def culprit_ports(**by_device):
    """An hccn_info result of [link, mtu, pfc, link_stat, stat] of 8 ports alike (the samples);
    npu<N>={key: value} changes one port (link_stat and stat are merged)."""
    devices = {}
    for d in range(8):
        entry = port(link_stat=copy.deepcopy(LINK_STAT), stat=copy.deepcopy(STAT))
        del entry['dscp_to_tc']
        for key, value in by_device.get('npu%d' % d, {}).items():
            if key in ('link_stat', 'stat'):
                entry[key].update(value)
            else:
                entry[key] = value
        devices[str(d)] = entry
    return {'changed': False, 'devices': devices, 'errors': []}


def test_crossnode_findings_without_the_pairwise_search_are_the_bench_findings():
    out = crossnode_findings(BENCH)
    assert out == BENCH
    assert out[0] is not BENCH[0]
    assert crossnode_findings(BENCH, None, culprit_ports()) == BENCH
    assert crossnode_findings([], PAIRWISE, culprit_ports()) == []
    assert crossnode_findings(None, PAIRWISE) == []


def test_crossnode_names_the_port_of_the_slow_node_that_stands_out():
    records = [{'status': 'DOWN', 'time': 'Wed Dec  2 10:%02d:00 2026' % m} for m in range(5)]
    ports = culprit_ports(npu6={'link_stat': {'link_up_count': 7, 'records': records},
                                'stat': {'mac_rx_bad_pkt_num': 37, 'roce_new_pkt_rty_num': 1200, 'roce_rx_err_pkt_num': 0}})
    out = crossnode_findings(BENCH, PAIRWISE, ports)
    assert out[:1] == BENCH
    assert out[1] == {
        'host': 'node03', 'device': None, 'check': 'pairwise', 'value': 'node03', 'expected': None, 'severity': 'fail',
        'msg': 'node03: node03 is in every slow pair (node02 + node03 9.8 GB/s, node03 + node04 10.2 GB/s) and in no fast '
               'one: it is the slow node. Its ports that stand out: NPU 6 (MTU 9000, PFC [4], link UP): link DOWN records 5 '
               '(other ports 2), mac_rx_bad_pkt_num 37 (other ports 0), roce_new_pkt_rty_num 1200 (other ports 0)'}


def test_crossnode_when_no_port_of_the_slow_node_stands_out():
    out = crossnode_findings(BENCH, PAIRWISE, culprit_ports())
    assert out[1]['msg'] == (
        'node03: node03 is in every slow pair (node02 + node03 9.8 GB/s, node03 + node04 10.2 GB/s) and in no fast one: it is '
        'the slow node. No port of it stands out (8 ports: MTU 9000, PFC [4], link UP, the same link history and error '
        'counters): look at the node itself (the switch uplinks of its ports, NIC firmware, CPU load, a job sharing the node)')


def test_crossnode_lists_the_differing_settings_when_no_port_stands_out():
    out = crossnode_findings(BENCH, PAIRWISE, culprit_ports(npu2={'mtu': 1500}))
    assert '. No port of it stands out (8 ports: MTU 1500/9000, PFC [4], link UP, ' in out[1]['msg']


def test_crossnode_when_the_ports_of_the_slow_node_could_not_be_read():
    out = crossnode_findings(BENCH, PAIRWISE, {'failed': True, 'msg': 'hccn_tool was not found', 'changed': False})
    assert out[1]['msg'].endswith('it is the slow node. Its ports could not be read: hccn_tool was not found')
    assert out[1]['host'] == 'node03'


def test_crossnode_without_a_culprit_blames_the_bench_node():
    pairwise = pairwise_culprit([{'hosts': ['node01', 'node02'], 'busbw': 9.0}, {'hosts': ['node03', 'node04'], 'busbw': 8.5},
                                 {'hosts': ['node02', 'node03'], 'busbw': 22.0}, {'hosts': ['node04', 'node01'], 'busbw': 22.0}],
                                20)
    out = crossnode_findings(BENCH, pairwise, None)
    assert out[1] == {'host': 'node03', 'device': None, 'check': 'pairwise', 'value': None, 'expected': None, 'severity': 'fail',
                      'msg': 'node03: %s' % pairwise['msg']}


# ---- ring_pairs, ring_neighbours ------------------------------------------------------------------------------------

@pytest.mark.parametrize('hosts, pairs', [
    ([], []),
    (None, []),
    (['node01'], []),
    (['node01', 'node02'], [['node01', 'node02']]),
    (['node01', 'node02', 'node03'], [['node01', 'node02'], ['node02', 'node03'], ['node03', 'node01']]),
    (['node01', 'node02', 'node03', 'node04'],
     [['node01', 'node02'], ['node02', 'node03'], ['node03', 'node04'], ['node04', 'node01']]),
])
def test_ring_pairs(hosts, pairs):
    assert ring_pairs(hosts) == pairs


@pytest.mark.parametrize('hosts, host, neighbours', [
    (['node01'], 'node01', []),
    (['node01', 'node02'], 'node01', ['node02']),
    (['node01', 'node02'], 'node02', ['node01']),
    (['node01', 'node02', 'node03'], 'node01', ['node02', 'node03']),
    (['node01', 'node02', 'node03'], 'node03', ['node01', 'node02']),
    (['node01', 'node02', 'node03', 'node04'], 'node01', ['node02', 'node04']),
    (['node01', 'node02', 'node03', 'node04'], 'node03', ['node04', 'node02']),
    (['node01', 'node02', 'node03', 'node04'], 'node09', []),
    (None, 'node01', []),
])
def test_ring_neighbours(hosts, host, neighbours):
    assert ring_neighbours(hosts, host) == neighbours


# ---- search_round: the search in rounds of disjoint pairs -----------------------------------------------------------

def nodes(count):
    return ['node%02d' % i for i in range(1, count + 1)]


def measure(pairs, slow_nodes=(), slow_paths=(), round_=None):
    """The simulated busbw of each pair: 22.5 GB/s, 9.0 when a slow node or a slow path is in it."""
    out = []
    for pair in pairs:
        slow = any(host in slow_nodes for host in pair) or frozenset(pair) in set(frozenset(p) for p in slow_paths)
        item = {'hosts': list(pair), 'busbw': 9.0 if slow else 22.5}
        if round_ is not None:
            item['round'] = round_
        out.append(item)
    return out


def search(hosts, slow_nodes=(), slow_paths=(), limit=10):
    """Run the search to its end: (verdict, rounds), checking that every round is made of disjoint pairs."""
    results = []
    for number in range(1, limit + 1):
        pairs = search_round(hosts, results, 20)
        if not pairs:
            return pairwise_culprit(results, 20), number - 1
        seen = [host for pair in pairs for host in pair]
        assert len(seen) == len(set(seen)), 'round %d pairs a node twice: %s' % (number, pairs)
        assert all(len(pair) == 2 and set(pair) <= set(hosts) for pair in pairs)
        results += measure(pairs, slow_nodes, slow_paths, number)
    raise AssertionError('the search did not end in %d rounds' % limit)


def test_round_one_pairs_the_nodes_in_their_order():
    assert search_round(nodes(8), [], 20) == [['node01', 'node02'], ['node03', 'node04'], ['node05', 'node06'],
                                              ['node07', 'node08']]
    assert search_round(nodes(5), [], 20) == [['node01', 'node02'], ['node03', 'node04']]
    assert search_round(nodes(1), [], 20) == [] and search_round([], [], 20) == []


def test_round_two_measures_each_suspect_against_its_own_cleared_node():
    first = measure(search_round(nodes(8), [], 20), slow_nodes={'node03', 'node06'}, round_=1)
    assert search_round(nodes(8), first, 20) == [['node01', 'node03'], ['node02', 'node04'], ['node05', 'node07'],
                                                 ['node06', 'node08']]


@pytest.mark.parametrize('count', [8, 16, 32])
def test_two_slow_nodes_anywhere_are_named_at_once_in_at_most_three_rounds(count):
    hosts = nodes(count)
    worst = 0
    for i in range(count):
        for j in range(i + 1, count):
            verdict, rounds = search(hosts, slow_nodes={hosts[i], hosts[j]})
            assert verdict['culprits'] == [hosts[i], hosts[j]], (hosts[i], hosts[j], verdict['msg'])
            assert verdict['culprit'] is None and verdict['suspects'] == [hosts[i], hosts[j]]
            worst = max(worst, rounds)
    assert worst <= 3


@pytest.mark.parametrize('count', [3, 5, 7, 8, 9, 16, 32])
def test_one_slow_node_anywhere_is_named(count):
    hosts = nodes(count)
    for slow in hosts:
        verdict, rounds = search(hosts, slow_nodes={slow})
        assert (verdict['culprit'], verdict['culprits']) == (slow, [slow]), verdict['msg']
        assert rounds <= 3, (slow, rounds)
        assert verdict['msg'].startswith('%s is in every slow pair (' % slow)
        assert verdict['msg'].endswith(') and in no fast one: it is the slow node')


def test_two_slow_nodes_in_one_pair_have_their_own_message():
    verdict, rounds = search(nodes(8), slow_nodes={'node03', 'node04'})
    assert rounds == 2
    assert verdict['msg'] == ('node03 and node04 are each slow with a node that reaches 20.0 GB/s and in no fast pair '
                              '(node03 + node04 9.0 GB/s, node01 + node03 9.0 GB/s, node02 + node04 9.0 GB/s): they are the '
                              'slow nodes')
    assert [p['round'] for p in verdict['pairs'] if p['slow']] == [1, 2, 2]
    assert verdict['rounds'] == 2


def test_a_slow_path_between_two_good_nodes_is_not_a_slow_node():
    verdict, rounds = search(nodes(8), slow_paths=[('node05', 'node06')])
    assert rounds == 2
    assert (verdict['culprit'], verdict['culprits'], verdict['suspects']) == (None, [], [])
    assert verdict['slow_paths'] == [{'hosts': ['node05', 'node06'], 'busbw': 9.0, 'slow': True, 'round': 1}]
    assert verdict['msg'] == ('only node05 + node06 9.0 GB/s is slow and both nodes reach 20.0 GB/s with another node: the '
                              'path between them is slow, not one node')


def test_a_slow_node_and_a_slow_path_elsewhere():
    verdict, dummy = search(nodes(8), slow_nodes={'node02'}, slow_paths=[('node05', 'node06')])
    assert verdict['culprits'] == ['node02']
    assert verdict['msg'] == ('node02 is slow with a node that reaches 20.0 GB/s and in no fast pair (node01 + node02 9.0 '
                              'GB/s, node02 + node04 9.0 GB/s): it is the slow node; the path of node05 + node06 9.0 GB/s is '
                              'slow as well')


def test_every_node_slow_ends_on_the_ring_with_suspects_only():
    verdict, rounds = search(nodes(4), slow_nodes=set(nodes(4)))
    assert rounds == 2
    ring = [('node01', 'node02'), ('node02', 'node03'), ('node03', 'node04'), ('node04', 'node01')]
    assert sorted(tuple(p['hosts']) for p in verdict['pairs']) == ring
    assert (verdict['culprit'], verdict['culprits']) == (None, [])
    assert verdict['suspects'] == nodes(4)
    assert verdict['msg'].endswith('point at node01 or node02 or node03 or node04')


def test_a_search_round_checks_its_threshold():
    with pytest.raises(AnsibleFilterError, match='threshold must be a number'):
        search_round(nodes(4), [{'hosts': ['node01', 'node02'], 'busbw': 9.0}], 'fast')


# ---- crossnode_findings with several slow nodes ---------------------------------------------------------------------

def test_crossnode_findings_name_each_slow_node_with_its_ports():
    verdict, dummy = search(nodes(8), slow_nodes={'node03', 'node06'})
    read = {'changed': False, 'results': [
        dict(culprit_ports(npu1={'stat': {'roce_rx_err_pkt_num': 12}}), item='node03'),
        {'item': 'node06', 'failed': True, 'msg': 'no answer', 'changed': False},
    ]}
    out = crossnode_findings(BENCH, verdict, read)
    assert [(f['host'], f['value'], f['check']) for f in out[1:]] == [('node03', 'node03', 'pairwise'),
                                                                      ('node06', 'node06', 'pairwise')]
    assert out[1]['msg'] == 'node03: %s. The ports of node03 that stand out: NPU 1 (MTU 9000, PFC [4], link UP): ' \
        'roce_rx_err_pkt_num 12 (other ports 0)' % verdict['msg']
    assert out[2]['msg'] == 'node06: %s. The ports of node06 could not be read: no answer' % verdict['msg']
