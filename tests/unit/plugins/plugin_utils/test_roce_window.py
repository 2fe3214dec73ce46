"""The stage 4 change window told truthfully from the nodes' stage 4 records: a node lost during or between batches, a
restore whose values are back while a link stays down, the stage 4 results of every node after a stop, the batch size
of a serial play and the message of a rollback."""

from __future__ import annotations

import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.roce import record as rec
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.verify import roce_precheck_findings
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.window import (
    batch_count,
    batches_text,
    domain_batches,
    group_domains,
    switch_domains,
    roce_batch_problems,
    roce_rollback_message,
    stop_results,
    window_stop_records,
)
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils.roce_samples import ONE_PASS

PLAYBOOKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..', 'playbooks')
BACKUP = '/var/lib/npuops/backup/hccn-%s-20261202T101500Z.json'
# what a module result is when the SSH connection broke
UNREACHABLE = {'unreachable': True, 'changed': False,
               'msg': 'Task failed: Failed to connect to the host via ssh: Connection closed by 127.0.26.2 port 22'}
ALL_TWO = ['node01', 'node02']
ALL_THREE = ['node01', 'node02', 'node03']


def node(host, changed=(), file=None, planned=None, failure=None, restore=None, done=False):
    """The stage 4 record of a node (plugins/plugin_utils/roce/record.py) with what the window reads of it."""
    record = rec.new_record(host)
    record.update(changed_devices=list(changed), failure=failure, restore=restore, done=done)
    record['restore_point'] = {'file': file, 'planned': planned}
    return record


def outcome(batch, records, all_hosts=None, restore_enabled=True):
    """The message that stops the window after a failed batch."""
    return window_stop_records(batch, records, all_hosts, restore_enabled)['message']


def stopped(batch, records, all_hosts=None):
    """The stop of a batch with the stage 4 results of every node, as npuops.ascend.stage_roce (step stop) returns it."""
    stop = window_stop_records(batch, records, all_hosts)
    stop['results'] = stop_results(stop)
    return stop


# ---- a node lost during its own set -----------------------------------------------------------------------------------

def lost_during_its_set():
    """node01 done in batch 1; node02's one-pass set lost its connection; node03 not reached."""
    return {
        'node01': node('node01', file=BACKUP % 'node01', done=True),
        'node02': node('node02', planned=BACKUP % 'node02',
                       failure=rec.lost_failure('node02', 'set', UNREACHABLE['msg'], BACKUP % 'node02')),
        'node03': node('node03'),
    }


def test_a_node_lost_during_its_set_may_be_changed_and_its_restore_point_is_named():
    message = outcome(['node02'], lost_during_its_set(), ALL_THREE)
    assert message.startswith('Stage 4 stopped: the connection to node02 broke during its change. node02: lost during its '
                              'change')
    assert ('node02: lost during its change (the connection broke: Failed to connect to the host via ssh: Connection '
            'closed by 127.0.26.2 port 22): its NPU ports MAY BE CHANGED (hccn_config goes on on the node when the '
            'connection breaks) and were neither verified nor restored; restore point '
            '/var/lib/npuops/backup/hccn-node02-20261202T101500Z.json (written before the first set: if it is missing, '
            'nothing was set). When node02 answers again, run the window again (a node that already matches changes '
            'nothing) or put it back with playbooks/rollback.yml -l node02 -e '
            'roce_lossless_rollback_file=/var/lib/npuops/backup/hccn-node02-20261202T101500Z.json.') in message
    assert 'Changed in this batch: none. Restored: none. May be changed (lost, not verified, not restored): node02.' in message
    assert 'Done and verified in earlier batches (kept): node01.' in message
    assert message.endswith('Not touched: node03. Fix the cause and run again: nodes that already match change nothing.')


def test_the_stop_of_a_lost_node_gives_every_node_its_state_and_its_summary_line():
    stop = stopped(['node02'], lost_during_its_set(), ALL_THREE)
    assert [(host, node['state']) for host, node in stop['nodes'].items()] == [
        ('node01', 'done'), ('node02', 'lost'), ('node03', 'untouched')]
    assert stop['nodes']['node02']['restore_point'] == BACKUP % 'node02'
    assert stop['message'] == outcome(['node02'], lost_during_its_set(), ALL_THREE)
    results = stop['results']
    assert results['node02']['stage4']['status'] == 'failed'
    assert results['node02']['stage4']['failures'] == [stop['nodes']['node02']['text']]
    assert results['node01']['stage4'] == {
        'stage': 4, 'role': 'roce_lossless', 'status': 'stopped', 'failures': [],
        'warnings': ['node01: changed and verified in an earlier batch (kept); the window stopped before the cross-node '
                     'check of stage 4']}
    assert results['node03']['stage4']['warnings'] == ['node03: not touched: the window stopped before its batch']


def test_a_node_lost_after_its_set_changed_it_for_sure():
    records = lost_during_its_set()
    records['node02'].update(changed_devices=list(range(8)),
                             failure=rec.lost_failure('node02', 'ping', UNREACHABLE['msg']))
    records['node02']['restore_point']['file'] = BACKUP % 'node02'
    message = outcome(['node02'], records, ALL_THREE)
    assert message.startswith('Stage 4 stopped: the connection to node02 broke after its change. ')
    assert ('node02: changed NPU 0, 1, 2, 3, 4, 5, 6, 7; lost after its change (the connection broke: Failed to connect '
            'to the host via ssh: Connection closed by 127.0.26.2 port 22), so it was neither verified nor restored; '
            'restore point %s.' % (BACKUP % 'node02')) in message
    assert 'May be changed (lost, not verified, not restored): node02.' in message


def test_the_other_nodes_of_a_batch_with_a_lost_node_are_restored():
    records = lost_during_its_set()
    records['node03'] = node('node03', changed=[0, 1], file=BACKUP % 'node03',
                             restore={'changed': True, 'changed_devices': [0, 1], 'failed': False})
    message = outcome(['node02', 'node03'], records, ALL_THREE)
    assert 'node03: changed NPU 0, 1; restored from %s (NPU 0, 1 set back).' % (BACKUP % 'node03') in message
    assert ('Changed in this batch: node03. Restored: node03. May be changed (lost, not verified, not restored): '
            'node02.') in message
    assert message.endswith('Not touched: none. Fix the cause and run again: nodes that already match change nothing.')


# ---- a node lost between batches --------------------------------------------------------------------------------------

def test_a_node_lost_before_its_batch_is_named_with_what_is_kept_and_what_was_not_touched():
    finding_text = ('node02: could not be reached (Failed to connect to the host via ssh: ssh: connect to host '
                    '127.0.26.2 port 22: Connection refused); nothing was read or set on it')
    records = {
        'node01': node('node01', done=True),
        'node02': node('node02', failure=rec.refused_failure(
            'Check that no node stops the change (nothing has been set yet)', finding_text, lost=True,
            reason='Failed to connect to the host via ssh: ssh: connect to host 127.0.26.2 port 22: Connection refused')),
        'node03': node('node03'),
    }
    stop = stopped(['node02'], records, ALL_THREE)
    message = stop['message']
    assert message.startswith('Stage 4 stopped: nothing was set on node02: %s.' % finding_text)
    assert ('node02: could not be reached before its change (Failed to connect to the host via ssh: ssh: connect to host '
            '127.0.26.2 port 22: Connection refused); nothing was set on it.') in message
    assert 'Changed in this batch: none. Restored: none. Done and verified in earlier batches (kept): node01.' in message
    assert message.endswith('Not touched: node03. Fix the cause and run again: nodes that already match change nothing.')
    assert stop['nodes']['node02']['state'] == 'unchanged'
    assert stop['results']['node02']['stage4']['status'] == 'failed'


def test_a_refused_batch_of_two_nodes_says_the_reason_once():
    records = {host: node(host, failure=rec.refused_failure('Check that no node stops the change (nothing has been set yet)',
                                                            'node02 NPU 3: link is DOWN before the change'))
               for host in ('node01', 'node02')}
    message = outcome(ALL_TWO, records, ALL_TWO)
    assert message.startswith('Stage 4 stopped: nothing was set on node01, node02: node02 NPU 3: link is DOWN before the '
                              'change. node01: not restored: nothing was changed on it.')


def test_the_precheck_of_an_unreachable_node_is_one_finding_that_names_it():
    findings = roce_precheck_findings({'unreachable': True, 'changed': False,
                                       'msg': 'Task failed: Failed to connect to the host via ssh: ssh: connect to host 127.0.26.2 '
                                              'port 22: Connection refused\n'}, [], 'node02')
    assert findings == [{
        'host': 'node02', 'device': None, 'check': 'reachable', 'value': None, 'expected': 'reachable', 'severity': 'fail',
        'msg': 'node02: could not be reached (Failed to connect to the host via ssh: ssh: connect to host 127.0.26.2 port 22: '
               'Connection refused); nothing was read or set on it: bring it back (or leave it out with -l) and run again'}]


# ---- a restore whose values are back while a link stays down ------------------------------------------------------

def link_stuck_batch():
    """node02 of batch 2: its one-pass set left NPU 5 DOWN; the restore set every value back, NPU 5 stays DOWN."""
    return {
        'node01': node('node01', done=True),
        'node02': node('node02', changed=range(8), file=BACKUP % 'node02',
                       failure=rec.module_failure('set', {'msg': 'NPU 5 on node02: link still not UP 8 s after changing '
                                                                 'MTU and PFC'}),
                       # the result of hccn_config restore_from, which does not fail the action
                       restore={'changed': True, 'failed': False, 'changed_devices': list(range(8)), 'failed_devices': [5],
                                'link_down_devices': [5],
                                'msg': 'The restore point ... is applied (values set on NPU 0-7 and read back), but the '
                                       'link of NPU 5 is still not UP.'}),
        'node03': node('node03'),
    }


def test_a_restore_that_set_every_value_back_is_a_restore_even_with_a_link_down():
    message = outcome(['node02'], link_stuck_batch(), ALL_THREE)
    assert ('node02: changed NPU 0, 1, 2, 3, 4, 5, 6, 7; values restored from %s (NPU 0, 1, 2, 3, 4, 5, 6, 7 set back and '
            'read back), but the link of NPU 5 is still not UP: check the cable, the optical module and the switch port; '
            'the settings are the ones from before the change.' % (BACKUP % 'node02')) in message
    assert ('Changed in this batch: node02. Restored: node02 (values; the link of NPU 5 is still not UP). Done and '
            'verified') in message
    assert 'Still changed' not in message
    assert 'its restore FAILED' not in message
    assert 'no backup was written' not in message


def test_a_restore_with_a_link_down_and_a_value_that_did_not_take_is_still_a_failed_restore():
    records = link_stuck_batch()
    records['node02']['restore'].update(failed_devices=[4, 5], link_down_devices=[5])
    message = outcome(['node02'], records, ALL_THREE)
    assert 'node02: changed NPU 0, 1, 2, 3, 4, 5, 6, 7; its restore FAILED:' in message
    assert 'Still changed, restore by hand: node02.' in message


def test_a_restore_that_could_not_reach_the_node_is_a_failed_restore():
    records = link_stuck_batch()
    records['node02']['restore'] = dict(UNREACHABLE)
    message = outcome(['node02'], records, ALL_THREE)
    assert ('node02: changed NPU 0, 1, 2, 3, 4, 5, 6, 7; its restore FAILED: the connection broke (Failed to connect to '
            'the host via ssh: Connection closed by 127.0.26.2 port 22); restore it by hand with playbooks/rollback.yml '
            '-l node02 -e roce_lossless_rollback_file=%s once it answers.' % (BACKUP % 'node02')) in message


# ---- the batch size ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('value', [1, 2, 50, '1', ' 3 ', '25%', '100%', '1%', 2.0, ' 10 % '])
def test_batch_sizes_the_window_accepts(value):
    assert roce_batch_problems(value) == []


@pytest.mark.parametrize('value, text', [
    (0, 'roce_lossless_batch 0 is below 1: a batch of 0 nodes would be read by Ansible as "every node at once"'),
    ('0', 'roce_lossless_batch 0 is below 1'),
    (-1, 'roce_lossless_batch -1 is below 1'),
    ('-1', "roce_lossless_batch '-1' is below 1: a negative batch would be read by Ansible as \"every node at once\""),
    ('150%', "roce_lossless_batch '150%' is outside 1%-100%"),
    ('0%', "roce_lossless_batch '0%' is outside 1%-100%"),
    ('abc', "roce_lossless_batch 'abc' is not a batch size"),
    ('12.5%', "roce_lossless_batch '12.5%' is not a percentage of nodes"),
    (2.5, 'roce_lossless_batch 2.5 is not a whole number of nodes'),
    (True, 'roce_lossless_batch True is not a batch size'),
    (None, 'roce_lossless_batch None is not a batch size'),
    ([1, 2], 'roce_lossless_batch [1, 2] is a list: the change window takes one batch size'),
    ('\u0663', "roce_lossless_batch '\u0663' is not a batch size"),
])
def test_batch_sizes_the_window_refuses(value, text):
    problems = roce_batch_problems(value)
    assert len(problems) == 1
    assert problems[0].startswith(text)
    assert problems[0].endswith('give a whole number of nodes (1 or more) or a percentage of the nodes from 1% to 100%, '
                                'such as 25%')


def test_batch_problems_name_the_variable_they_check():
    assert roce_batch_problems('all', 'rollback_batch')[0].startswith("rollback_batch 'all' is not a batch size")


# ---- the rollback ----------------------------------------------------------------------------------------------------

OWN = '/var/lib/npuops/backup/before-rollback-node01-20261203T080000Z.json'
CHOICE = BACKUP % 'node01'
FOUND = {'files': [{'path': CHOICE, 'mtime': 1764670500.0},
                   {'path': '/var/lib/npuops/backup/hccn-node01-20261101T090000Z.json', 'mtime': 1761987600.0},
                   {'path': '/var/lib/npuops/backup/hccn-node01-20261120T120000Z.json', 'mtime': 1763640000.0}]}


def test_a_rollback_names_its_own_restore_point_as_the_way_back():
    result = {'changed': True, 'changed_devices': list(range(8)), 'failed_devices': [], 'backup_file': OWN}
    assert roce_rollback_message(result, 'node01', CHOICE) == {'failed': False, 'msg': (
        'node01: restored NPU 0, 1, 2, 3, 4, 5, 6, 7 from the restore point %s. The state before this rollback is kept in '
        '%s: to undo the rollback, run playbooks/rollback.yml -l node01 -e roce_lossless_rollback_file=%s.'
        % (CHOICE, OWN, OWN))}


def test_a_rollback_that_fails_half_way_says_what_was_set_back_and_how_to_go_back():
    result = {'changed': True, 'failed': False, 'failed_when_result': False, 'changed_devices': [0, 1, 3, 4, 5, 6, 7],
              'failed_devices': [2], 'backup_file': OWN,
              'msg': '1 of 8 NPU ports failed (changed: 0, 1, 3, 4, 5, 6, 7; failed: 2). NPU 2 on node01: ... The ip address '
                     'configured is conflicted!'}
    out = roce_rollback_message(result, 'node01', CHOICE)
    assert out['failed']
    assert out['msg'].startswith('node01: the rollback from %s failed: 1 of 8 NPU ports failed' % CHOICE)
    assert out['msg'].endswith(
        'Set back: NPU 0, 1, 3, 4, 5, 6, 7; failed: NPU 2. The state before this rollback is kept in %s: to undo the '
        'rollback, run playbooks/rollback.yml -l node01 -e roce_lossless_rollback_file=%s. Or fix the cause and run the '
        'rollback again.' % (OWN, OWN))


def test_a_corrupt_newest_restore_point_lists_the_older_ones_newest_first():
    result = {'changed': False, 'failed': True, 'backup_file': None,
              'msg': 'node01: restore_from %s: cannot read the backup: Unterminated string starting at: line 1 column 40 '
                     '(char 39). Nothing was changed.' % CHOICE}
    out = roce_rollback_message(result, 'node01', CHOICE, FOUND, automatic=True)
    assert out['failed']
    assert out['msg'] == (
        'node01: the rollback from %s failed: node01: restore_from %s: cannot read the backup: Unterminated string '
        'starting at: line 1 column 40 (char 39). Nothing was changed. Nothing was set on node01. The newest restore point '
        'was tried because none was named; the other restore points on node01, newest first: '
        '/var/lib/npuops/backup/hccn-node01-20261120T120000Z.json (2025-11-20T12:00:00Z), '
        '/var/lib/npuops/backup/hccn-node01-20261101T090000Z.json (2025-11-01T09:00:00Z). Name one with -e '
        'roce_lossless_rollback_file=PATH (check what it holds first).' % (CHOICE, CHOICE))


def test_a_restore_point_that_cannot_be_read_is_a_failure_as_registered_with_failed_when_false():
    # failed_when: false resets 'failed': the restore that never ran has no changed_devices
    result = {'changed': False, 'failed': False, 'failed_when_result': False,
              'msg': 'node01: restore_from %s: cannot read the backup: Unterminated string. Nothing was changed.' % CHOICE}
    out = roce_rollback_message(result, 'node01', CHOICE, FOUND, automatic=True)
    assert out['failed'] and 'the other restore points on node01, newest first' in out['msg']


def test_a_named_restore_point_that_cannot_be_read_lists_nothing_else():
    result = {'changed': False, 'failed': True, 'msg': 'cannot read the backup. Nothing was changed.'}
    out = roce_rollback_message(result, 'node01', CHOICE, FOUND, automatic=False)
    assert 'other restore points' not in out['msg'] and out['msg'].endswith('Nothing was set on node01.')


def test_a_rollback_that_matches_already_and_a_dry_run():
    assert roce_rollback_message({'changed': False, 'changed_devices': [], 'failed_devices': []}, 'node01', CHOICE) == {
        'failed': False, 'msg': 'node01: the ports already match the restore point %s; nothing was set.' % CHOICE}
    dry = {'changed': True, 'changed_devices': [], 'failed_devices': [],
           'diff': [{'before_header': 'NPU 0 on node01'}, {'before_header': 'NPU 3 on node01'}]}
    assert roce_rollback_message(dry, 'node01', CHOICE, check_mode=True)['msg'] == (
        'node01: would restore NPU 0, 3 from the restore point %s (dry run; the real run first keeps the current state in '
        'a restore point of its own).' % CHOICE)


def test_a_rollback_whose_link_stays_down_has_its_values_back():
    result = {'changed': True, 'failed': False, 'changed_devices': list(range(8)), 'failed_devices': [5],
              'link_down_devices': [5], 'backup_file': OWN, 'msg': '...'}
    out = roce_rollback_message(result, 'node01', CHOICE)
    assert out['failed']
    assert out['msg'].startswith('node01: values restored from %s (NPU 0, 1, 2, 3, 4, 5, 6, 7 set back and read back), but '
                                 'the link of NPU 5 is still not UP: check the cable, the optical module and the switch '
                                 'port. The state before this rollback is kept in %s' % (CHOICE, OWN))


def test_a_rollback_cut_by_a_lost_connection_may_be_partly_done():
    out = roce_rollback_message(dict(UNREACHABLE), 'node01', CHOICE)
    assert out['failed'] and 'its NPU ports may be partly restored' in out['msg']


def test_rollback_message_wants_a_result():
    with pytest.raises(AnsibleFilterError, match='the registered result of hccn_config'):
        roce_rollback_message('failed', 'node01', CHOICE)


# ---- the message of a stopped batch ----------------------------------------------------------------------------------

ALL_HOSTS = ['node01', 'node02', 'node03', 'node04', 'node05', 'node06']


def records_of_a_failed_batch():
    """node01, node02 done in an earlier batch; node03-node05 this batch; node06 not reached."""
    return {
        'node01': node('node01', done=True),
        'node02': node('node02', done=True),
        # its MTU set changed NPU 0-7, its PFC set NPU 0-2 before it failed
        'node03': node('node03', changed=range(8), file=BACKUP % 'node03',
                       failure={'task': 'Enable PFC on the lossless priority only',
                                'msg': 'NPU 3 on node03: the link did not come back UP within 60 s.'},
                       restore={'changed': True, 'changed_devices': [0, 1, 2, 3, 4, 5, 6, 7], 'failed': False}),
        'node04': node('node04', changed=[0, 1, 2, 3, 5, 6, 7], file=BACKUP % 'node04',
                       restore={'changed': False, 'failed': True, 'msg': 'NPU 2 on node04: hccn_tool timed out after 60 s'}),
        'node05': node('node05'),
        'node06': node('node06'),
    }


def test_batch_outcome_with_a_restore_that_worked_and_one_that_failed():
    message = outcome(['node03', 'node04', 'node05'], records_of_a_failed_batch(), ALL_HOSTS)
    assert message == (
        'Stage 4 stopped: the change failed on node03 at "Enable PFC on the lossless priority only": NPU 3 on node03: the '
        'link did not come back UP within 60 s. '
        'node03: changed NPU 0, 1, 2, 3, 4, 5, 6, 7; restored from /var/lib/npuops/backup/hccn-node03-20261202T101500Z.json '
        '(NPU 0, 1, 2, 3, 4, 5, 6, 7 set back). '
        'node04: changed NPU 0, 1, 2, 3, 5, 6, 7; its restore FAILED: NPU 2 on node04: hccn_tool timed out after 60 s; '
        'restore it by hand with playbooks/rollback.yml -l node04 -e '
        'roce_lossless_rollback_file=/var/lib/npuops/backup/hccn-node04-20261202T101500Z.json. '
        'node05: not restored: nothing was changed on it. '
        'Changed in this batch: node03, node04. Restored: node03. Still changed, restore by hand: node04. '
        'Done and verified in earlier batches (kept): node01, node02. '
        'Not touched: node06. Fix the cause and run again: nodes that already match change nothing.')


def test_batch_outcome_points_at_the_rollback_playbook_with_the_variable_it_reads():
    message = outcome(['node03', 'node04', 'node05'], records_of_a_failed_batch(), ALL_HOSTS)
    with open(os.path.join(PLAYBOOKS, 'rollback.yml'), encoding='utf-8') as handle:
        playbook = handle.read()
    assert 'playbooks/rollback.yml -l node04 -e roce_lossless_rollback_file=' + BACKUP % 'node04' in message
    assert '-e roce_lossless_rollback_file=' in playbook


def test_batch_outcome_of_a_restore_that_found_nothing_to_set_back():
    records = records_of_a_failed_batch()
    records['node03']['restore'] = {'changed': False, 'changed_devices': [], 'failed': False}
    assert ('node03: changed NPU 0, 1, 2, 3, 4, 5, 6, 7; restored from %s (it already matched the restore point).'
            % (BACKUP % 'node03')) in outcome(['node03'], records, ALL_HOSTS)


def test_batch_outcome_of_a_failed_restore_as_registered_with_failed_when_false():
    # a restore whose result does not say failed but has no changed_devices, or has failed devices, did not restore
    records = records_of_a_failed_batch()
    records['node03']['restore'] = {'changed': False, 'failed': False, 'failed_when_result': False,
                                    'msg': 'NPU 1 on node03: hccn_tool not found'}
    records['node04']['restore'] = {'changed': True, 'failed': False, 'changed_devices': [0, 1],
                                    'failed_devices': [2], 'msg': 'NPU 2 on node04: link stayed DOWN'}
    message = outcome(['node03', 'node04'], records, ALL_HOSTS)
    assert 'node03: changed NPU 0, 1, 2, 3, 4, 5, 6, 7; its restore FAILED: NPU 1 on node03: hccn_tool not found;' in message
    assert 'node04: changed NPU 0, 1, 2, 3, 5, 6, 7; its restore FAILED: NPU 2 on node04: link stayed DOWN;' in message
    assert 'Restored: none. Still changed, restore by hand: node03, node04. ' in message


def test_batch_outcome_with_restore_on_failure_off():
    records = records_of_a_failed_batch()
    for host in ('node03', 'node04'):
        records[host]['restore'] = None
    message = outcome(['node03', 'node04', 'node05'], records, ALL_HOSTS, False)
    assert ('node03: changed NPU 0, 1, 2, 3, 4, 5, 6, 7; NOT restored (roce_lossless_restore_on_failure=false); restore point '
            '/var/lib/npuops/backup/hccn-node03-20261202T101500Z.json.') in message
    assert ('node04: changed NPU 0, 1, 2, 3, 5, 6, 7; NOT restored (roce_lossless_restore_on_failure=false); restore point '
            '/var/lib/npuops/backup/hccn-node04-20261202T101500Z.json.') in message
    assert 'Changed in this batch: node03, node04. Restored: none. Still changed, restore by hand: node03, node04. ' in message


def test_batch_outcome_of_a_changed_node_without_a_restore_point():
    records = records_of_a_failed_batch()
    records['node03'].update(restore_point={'file': None, 'planned': None}, restore=None)
    message = outcome(['node03'], records, ALL_HOSTS)
    assert 'node03: changed NPU 0, 1, 2, 3, 4, 5, 6, 7; NOT restored: no restore point was written. ' in message
    assert 'Restored: none. Still changed, restore by hand: node03. ' in message
    assert message.endswith('Not touched: node04, node05, node06. Fix the cause and run again: nodes that already match change '
                            'nothing.')


def test_batch_outcome_of_the_first_batch_of_one_node():
    # its address set changed NPU 4 and 5, its MTU set NPU 4
    records = {'node01': node('node01', changed=[4, 5], file=BACKUP % 'node01',
                              failure={'task': 'Set the jumbo MTU on every NPU port', 'msg': 'failed'},
                              restore={'changed': True, 'changed_devices': [4, 5], 'failed': False})}
    assert outcome(['node01'], records, ['node01', 'node02']) == (
        'Stage 4 stopped: the change failed on node01 at "Set the jumbo MTU on every NPU port": failed. '
        'node01: changed NPU 4, 5; restored from /var/lib/npuops/backup/hccn-node01-20261202T101500Z.json (NPU 4, 5 set '
        'back). Changed in this batch: node01. Restored: node01. '
        'Not touched: node02. Fix the cause and run again: nodes that already match change nothing.')


def test_batch_outcome_of_a_one_pass_change_that_failed_half_way():
    records = {
        'node01': node('node01', changed=ONE_PASS['changed_devices'], file=BACKUP % 'node01',
                       failure={'task': 'Set the MTU, PFC and DSCP map of every NPU port in one pass',
                                'msg': '1 of 3 NPU ports failed'},
                       restore={'changed': True, 'changed_devices': [0, 1, 3], 'failed': False}),
        'node02': node('node02'),
    }
    message = outcome(['node01', 'node02'], records, ['node01', 'node02'])
    assert 'node01: changed NPU 0, 1, 3; restored from %s (NPU 0, 1, 3 set back).' % (BACKUP % 'node01') in message
    assert 'node02: not restored: nothing was changed on it.' in message
    assert 'Changed in this batch: node01. Restored: node01.' in message


def test_batch_outcome_treats_a_missing_or_broken_record_as_a_node_that_did_nothing():
    assert outcome(['node09'], {'node09': 'not a record'}, None) == (
        'Stage 4 stopped. node09: not restored: nothing was changed on it. Changed in this batch: none. Restored: none. '
        'Not touched: none. Fix the cause and run again: nodes that already match change nothing.')
    assert outcome(['node10'], {}, ['node10']).startswith('Stage 4 stopped. node10: not restored: nothing was changed')


# ---- batches that follow failure domains -----------------------------------------------------------------------------

def neighbours(layout):
    """A neighbour map (switch_neighbours) from {node: [switch of NPU 0, switch of NPU 1, ...]}."""
    return {'ports': [{'node': node, 'npu': npu, 'switch': switch, 'port': '400GE1/1/%d' % npu}
                      for node, switches in layout.items() for npu, switch in enumerate(switches)],
            'switches': {}, 'unseen': [], 'conflicts': []}


RAILS_A = ['leaf-01', 'leaf-01', 'leaf-02', 'leaf-02']
RAILS_B = ['rackB-leaf-01', 'rackB-leaf-01', 'rackB-leaf-02', 'rackB-leaf-02']
NODES8 = ['node%02d' % i for i in range(1, 9)]


@pytest.mark.parametrize('value, total, count', [
    (1, 8, 1), ('3', 8, 3), (3.0, 8, 3), ('25%', 8, 2), ('10%', 8, 1), ('100%', 8, 8), ('50%', 5, 2)])
def test_batch_count_reads_a_size_as_ansible_reads_serial(value, total, count):
    assert batch_count(value, total) == count


def test_nodes_that_share_a_leaf_are_one_domain():
    layout = dict((node, RAILS_A if i < 4 else RAILS_B) for i, node in enumerate(NODES8))
    domains, problems = switch_domains(NODES8, neighbours(layout))
    assert problems == []
    assert domains == dict((node, 'leaf-01+leaf-02' if i < 4 else 'rackB-leaf-01+rackB-leaf-02')
                           for i, node in enumerate(NODES8))


def test_a_node_that_bridges_two_leaf_groups_joins_them_and_an_unseen_node_is_a_problem():
    layout = {'node01': ['leaf-01'], 'node02': ['leaf-02'], 'node03': ['leaf-01', 'leaf-02'], 'node04': ['leaf-09']}
    domains, problems = switch_domains(['node01', 'node02', 'node03', 'node04', 'node05'], neighbours(layout))
    assert domains == {'node01': 'leaf-01+leaf-02', 'node02': 'leaf-01+leaf-02', 'node03': 'leaf-01+leaf-02',
                       'node04': 'leaf-09'}
    assert problems == ['node05: none of its NPU ports was seen in LLDP, so the leaf switches it hangs on are not known']


def test_a_domain_of_many_switches_has_a_short_name():
    layout = {'node01': ['leaf-%02d' % i for i in range(1, 9)]}
    domains, dummy = switch_domains(['node01'], neighbours(layout))
    assert domains == {'node01': 'leaf-01+...+leaf-08 (8 switches)'}


def test_group_domains_take_the_first_listed_group_of_a_node():
    groups = {'all': NODES8, 'rack_a': NODES8[:4], 'rack_b': NODES8[4:], 'gpu': ['node01']}
    domains, problems = group_domains(NODES8, ['rack_b', 'rack_a'], groups)
    assert problems == []
    assert [domains[node] for node in NODES8] == ['rack_a'] * 4 + ['rack_b'] * 4


@pytest.mark.parametrize('names, groups, problem', [
    ([], {'all': ['node01']}, 'roce_lossless_domain_groups is empty: with roce_lossless_batch_domain=group it names'),
    (['rack_x'], {'all': ['node01']}, 'roce_lossless_domain_groups names rack_x, which is not a group of the inventory'),
    (['rack_a'], {'rack_a': ['node02']}, 'node01: it is in none of the groups of roce_lossless_domain_groups (rack_a)'),
])
def test_group_domains_name_what_is_wrong(names, groups, problem):
    dummy, problems = group_domains(['node01'], names, groups)
    assert any(text.startswith(problem) for text in problems), problems


def test_batches_never_hold_two_domains():
    domains = dict((node, 'A' if i < 5 else 'B') for i, node in enumerate(NODES8))
    plan = domain_batches(NODES8, domains, 2)
    assert plan['batches'] == [{'domain': 'A', 'hosts': ['node01', 'node02']}, {'domain': 'A', 'hosts': ['node03', 'node04']},
                               {'domain': 'A', 'hosts': ['node05']}, {'domain': 'B', 'hosts': ['node06', 'node07']},
                               {'domain': 'B', 'hosts': ['node08']}]
    assert plan['serial'] == [2, 2, 1, 2, 1]
    assert plan['order'] == NODES8
    assert plan['domains'] == {'A': NODES8[:5], 'B': NODES8[5:]}
    assert batches_text(plan) == ('2 failure domain(s) (A: node01, node02, node03, node04, node05; B: node06, node07, node08), '
                                  '5 batch(es) of at most 2 node(s), never two domains in one batch')


def test_batches_keep_the_domains_in_the_order_of_their_first_node():
    hosts = ['node01', 'node02', 'node03', 'node04']
    plan = domain_batches(hosts, {'node01': 'B', 'node02': 'A', 'node03': 'B', 'node04': 'A'}, '50%')
    assert plan['order'] == ['node01', 'node03', 'node02', 'node04']
    assert plan['serial'] == [2, 2]
    assert [b['domain'] for b in plan['batches']] == ['B', 'A']


def test_batches_take_the_domains_in_the_order_given():
    hosts = ['node01', 'node02', 'node03']
    plan = domain_batches(hosts, {'node01': 'A', 'node02': 'B', 'node03': 'A'}, 5, ['B', 'C', 'A'])
    assert (plan['order'], plan['serial'], list(plan['domains'])) == (['node02', 'node01', 'node03'], [1, 2], ['B', 'A'])
