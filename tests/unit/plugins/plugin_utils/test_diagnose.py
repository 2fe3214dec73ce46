"""diagnose_summary: how far a code reaches - every node read (pod), several nodes, one node, or one card of one node;
unread nodes are named, not counted."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.diagnose import diagnose_summary


def _finding(code, count, devices=(), without=None, first='2025-07-23T03:49:57.177194', last='2025-07-23T03:59:57.000000'):
    found = {'code': code, 'count': count, 'first_seen': first, 'last_seen': last, 'files': ['/root/ascend/log/debug/plog/p.log'],
             'cause': 'cause of %s' % code, 'fix': 'fix of %s' % code, 'source': 'doc of %s' % code,
             'devices': list(devices)}
    found['lines_without_device'] = (0 if devices else count) if without is None else without
    return found


def test_every_node_is_pod_wide_one_node_is_a_node_fault():
    results = {'node01': {'findings': [_finding('EI0006', 3, [1, 4])]},
               'node02': {'findings': [_finding('EI0006', 5, [0]), _finding('EJ0001', 9)]},
               'node03': {'findings': [_finding('EI0006', 1)]}}
    out = diagnose_summary(results, 'pod7')
    assert [(c['code'], c['scope'], c['nodes']) for c in out['codes']] == [
        ('EI0006', 'pod', ['node01', 'node02', 'node03']), ('EJ0001', 'node', ['node02'])]
    assert out['codes'][0]['cards'] == ['node01:1', 'node01:4', 'node02:0']
    assert out['lines'][0] == 'PoD pod7: 3 node(s), 2 known error code(s) found'
    assert 'EI0006: on every node (3/3) - a PoD-wide cause (a timeout, a setting or the job, shared by every node), not one bad card' in out['lines']
    assert ('EJ0001: on node02 only (1/3 nodes), no card named in the logs - a fault of that node (host, driver or the '
            'job there), not of one card and not PoD-wide') in out['lines']
    assert '  node node01: 3 line(s), cards 1, 4, first 2025-07-23T03:49:57.177194, last 2025-07-23T03:59:57.000000' in out['lines']
    assert '  node node03: 1 line(s), no card named in the logs, first 2025-07-23T03:49:57.177194, last 2025-07-23T03:59:57.000000' \
        in out['lines']
    assert '  fix: fix of EJ0001' in out['lines']


def test_one_card_of_one_node_is_a_card_fault():
    results = {'node01': {'findings': [_finding('EI0006', 4, [3])]}, 'node02': {'findings': []}, 'node03': {'findings': []}}
    entry = diagnose_summary(results)['codes'][0]
    assert (entry['scope'], entry['cards']) == ('card', ['node01:3'])
    lines = diagnose_summary(results)['lines']
    assert lines[1].startswith('EI0006: on card 3 of node01 only (1/3 nodes) - a fault of that card or of what only it uses')
    assert lines[2].startswith('  node node01: 4 line(s), card 3, first')


@pytest.mark.parametrize('devices, without, scope, words', [
    ([3], 1, 'node', 'card 3 (+1 line(s) naming no card)'),   # a line that names no card may be another card's
    ([2, 3], 0, 'node', 'cards 2, 3'),
    ([], 2, 'node', 'no card named in the logs'),
])
def test_one_node_but_not_one_card(devices, without, scope, words):
    out = diagnose_summary({'node01': {'findings': [_finding('EL0004', 2, devices, without)]}, 'node02': {'findings': []}})
    assert out['codes'][0]['scope'] == scope
    assert out['lines'][1] == ('EL0004: on node01 only (1/2 nodes), %s - a fault of that node (host, driver or the job '
                               'there), not of one card and not PoD-wide' % words)


def test_several_nodes_but_not_all_are_local_faults():
    results = {'node01': {'findings': [_finding('EI0002', 1, [0])]}, 'node02': {'findings': [_finding('EI0002', 2, [5])]},
               'node03': {'findings': []}}
    entry = diagnose_summary(results)['codes'][0]
    assert (entry['scope'], entry['cards']) == ('nodes', ['node01:0', 'node02:5'])
    assert diagnose_summary(results)['lines'][1] == \
        'EI0002: on node01, node02 only (2/3 nodes) - local faults of those nodes, not PoD-wide'


def test_unread_nodes_are_named_and_not_counted():
    results = {'node01': {'findings': [_finding('EL0004', 2, [1])]}, 'node02': {'failed': True, 'msg': 'unreachable'}}
    out = diagnose_summary(results)
    assert out['unread'] == ['node02'] and 'logs not read on: node02' in out['lines']
    # one node read: a code there is not called PoD-wide
    assert out['codes'][0]['scope'] == 'card'


def test_a_result_without_device_fields_names_no_card():
    old = _finding('EJ0001', 3)
    del old['devices'], old['lines_without_device']
    out = diagnose_summary({'node01': {'findings': [old]}, 'node02': {'findings': []}})
    assert out['codes'][0]['scope'] == 'node'
    assert out['codes'][0]['per_node'][0]['lines_without_device'] == 3


def test_no_finding_says_so_and_bad_input_is_refused():
    assert diagnose_summary({'node01': {'findings': []}})['lines'][-1] == 'no known error code in the logs of any node'
    with pytest.raises(AnsibleFilterError, match='expects'):
        diagnose_summary(['node01'])


def _not_all_read(found, read):
    return {'code': 'not_all_read', 'count': found - read, 'first_seen': None, 'last_seen': None, 'files': [],
            'devices': [], 'ranks': [], 'lines_without_device': 0, 'files_found': found, 'files_left_out': found - read,
            'msg': 'read %d of %d files (the CANN logs first, then the newest): raise max_files or narrow paths' % (read, found),
            'cause': 'Not every log file was read', 'fix': 'Raise max_files', 'source': 'ascend_diagnose'}


def test_a_node_not_read_in_full_is_said_and_never_called_clean():
    results = {'node01': {'findings': [_not_all_read(100006, 200)]}, 'node02': {'findings': []}}
    out = diagnose_summary(results)
    assert out['codes'] == []
    assert out['incomplete'] == [{'node': 'node01', 'msg': 'read 200 of 100006 files (the CANN logs first, then the newest): '
                                                           'raise max_files or narrow paths'}]
    assert out['lines'][0] == 'PoD ascend_pod: 2 node(s), 0 known error code(s) found'
    assert ('not every log file was read on node01: read 200 of 100006 files (the CANN logs first, then the newest): '
            'raise max_files or narrow paths') in out['lines']
    assert 'no known error code in the logs of any node' not in out['lines']
    assert out['lines'][-1] == ('no known error code in the files that were read; the logs of node01 were not read in full, '
                                'so an error may be in what was left out')


def test_a_node_not_read_in_full_next_to_a_code_keeps_the_code_scope():
    results = {'node01': {'findings': [_finding('EI0006', 2, [1]), _not_all_read(300, 200)]},
               'node02': {'findings': [_finding('EI0006', 1, [4])]}}
    out = diagnose_summary(results)
    assert [(c['code'], c['scope']) for c in out['codes']] == [('EI0006', 'pod')]
    assert any(line.startswith('not every log file was read on node01: read 200 of 300') for line in out['lines'])


def test_ranks_named_by_torch_npu_are_shown_with_the_cards():
    found = _finding('EI0006', 1, [1])
    found['ranks'] = [1]
    out = diagnose_summary({'node01': {'findings': [found]}, 'node02': {'findings': []}})
    assert out['codes'][0]['per_node'][0]['ranks'] == [1]
    assert out['lines'][2].startswith('  node node01: 1 line(s), card 1 (rank 1), first')
