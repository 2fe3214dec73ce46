"""diagnose_summary: a code on every node read is PoD-wide, on some nodes local; unread nodes are named, not counted."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.filter.diagnose_summary import diagnose_summary


def _finding(code, count, first='2025-07-23T03:49:57.177194', last='2025-07-23T03:59:57.000000'):
    return {'code': code, 'count': count, 'first_seen': first, 'last_seen': last, 'files': ['/root/ascend/log/debug/plog/p.log'],
            'cause': 'cause of %s' % code, 'fix': 'fix of %s' % code, 'source': 'doc of %s' % code}


def test_a_code_on_every_node_is_pod_wide_and_one_on_a_node_is_local():
    results = {'node01': {'findings': [_finding('EI0006', 3)]},
               'node02': {'findings': [_finding('EI0006', 5), _finding('EJ0001', 9)]},
               'node03': {'findings': [_finding('EI0006', 1)]}}
    out = diagnose_summary(results, 'pod7')
    assert [(c['code'], c['scope'], c['nodes']) for c in out['codes']] == [
        ('EI0006', 'pod', ['node01', 'node02', 'node03']), ('EJ0001', 'local', ['node02'])]
    assert out['lines'][0] == 'PoD pod7: 3 node(s), 2 known error code(s) found'
    assert 'EI0006: on every node (3/3) - a PoD-wide cause (timeout or configuration), not one bad card' in out['lines']
    assert 'EJ0001: on node02 only (1/3) - a local fault there' in out['lines']
    assert '  node node02: 5 line(s), first 2025-07-23T03:49:57.177194, last 2025-07-23T03:59:57.000000' in out['lines']
    assert '  fix: fix of EJ0001' in out['lines']


def test_unread_nodes_are_named_and_not_counted():
    results = {'node01': {'findings': [_finding('EL0004', 2)]}, 'node02': {'failed': True, 'msg': 'unreachable'}}
    out = diagnose_summary(results)
    assert out['unread'] == ['node02'] and 'logs not read on: node02' in out['lines']
    # one node read: a code there is not called PoD-wide
    assert out['codes'][0]['scope'] == 'local'


def test_no_finding_says_so_and_bad_input_is_refused():
    assert diagnose_summary({'node01': {'findings': []}})['lines'][-1] == 'no known error code in the logs of any node'
    with pytest.raises(AnsibleFilterError, match='expects'):
        diagnose_summary(['node01'])
