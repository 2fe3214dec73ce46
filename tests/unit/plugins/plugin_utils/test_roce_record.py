"""The per-node record of stage 4 (plugins/plugin_utils/roce/record.py): the failure with the phase it broke at, the
restore point known before the set, the readings the verification uses, the batch decisions (planned, failed,
restore, done), and what the store and the node's report get from it; and the stop of a batch told from the records
(window.py)."""

from __future__ import annotations

import pytest

from ansible_collections.npuops.ascend.plugins.plugin_utils.roce import record as rec
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce import window
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils.roce_samples import ONE_PASS, info

BACKUP = '/var/lib/npuops/backup/hccn-node02-R1.json'
UNREACHABLE = {'unreachable': True, 'changed': False, 'msg': 'Failed to connect to the host via ssh: Connection refused'}
PLAN = {'changed': False, 'before': [{'device': 0, 'mtu': 1500}], 'after': [{'device': 0, 'mtu': 9000}],
        'commands': ['hccn_tool -i 0 -mtu -s 9000'], 'busy': [], 'read': {'devices': {}}, 'read_at': 5.0,
        'diff': [{'before': 'x'}]}


# ---- the failure and its phase --------------------------------------------------------------------------------------

@pytest.mark.parametrize('phase, stage, text', [
    ('plan', 'before', 'node02: the connection broke before its change (Connection refused)'),
    ('restore_point', 'change', 'node02: the connection broke before its change (Connection refused)'),
    ('set', 'change', 'node02: the connection broke during its change (Connection refused); its restore point is '
                      + BACKUP),
    ('mtu', 'change', 'node02: the connection broke during its change (Connection refused); its restore point is '
                      + BACKUP),
    ('ping', 'change', 'node02: the connection broke after its change (Connection refused)'),
    ('pfc_first', 'change', 'node02: the connection broke after its PFC step (Connection refused)'),
    ('read_back', 'change', 'node02: the connection broke after its change (Connection refused)'),
])
def test_a_broken_connection_is_kept_with_the_phase_and_the_message_of_its_stop(phase, stage, text):
    failure = rec.step_failure('node02', phase, {'unreachable': True, 'msg': 'Connection refused'}, BACKUP)
    assert failure['msg'] == text
    assert failure['stage'] == stage and failure['phase'] == phase and failure['lost'] is True
    assert failure['reason'] == 'Connection refused'
    assert failure['task'].startswith('Stop this node when ')


def test_a_module_that_failed_is_kept_with_its_own_message_and_the_name_of_its_step():
    failure = rec.step_failure('node02', 'set', {'failed': True, 'msg': 'NPU 3: the link stayed DOWN'})
    assert failure == {'task': 'Set the MTU, PFC and DSCP map of every NPU port in one pass (one link flap per port)',
                       'msg': 'NPU 3: the link stayed DOWN', 'stage': 'change', 'phase': 'set', 'lost': False,
                       'reason': None}
    assert rec.step_failure('node02', 'plan', {'failed': True})['msg'] == \
        'the connection to the node broke before its change'
    assert rec.step_failure('node02', 'mtu', {'failed': True})['msg'] == 'the connection to the node broke'
    assert rec.step_failure('node02', 'mtu', {'changed': True}) is None
    assert rec.step_failure('node02', 'mtu', {}) is None


def test_a_node_the_precheck_refused_failed_before_anything_was_set():
    failure = rec.refused_failure('Check that no node stops the change (nothing has been set yet)', 'node02 NPU 3: pid',
                                  lost=True, reason='no route')
    assert failure['stage'] == 'before' and failure['phase'] == 'precheck' and failure['reason'] == 'no route'
    assert rec.refused_failure(None, None)['msg'] == 'the connection to the node broke before its change'
    assert rec.refused_failure('t', 'm', lost=False, reason='ignored')['reason'] is None


def test_the_verification_fails_with_every_problem_in_one_message():
    findings = [{'host': 'node02', 'device': d, 'check': 'mtu', 'severity': 'fail',
                 'msg': 'node02 NPU %d: MTU is 1500, expected 9000 (npuops_mtu)' % d} for d in (0, 1)]
    findings.append({'host': 'node02', 'device': None, 'check': 'HCCL_RDMA_SL', 'severity': 'warn', 'msg': 'node02: w'})
    failure = rec.verify_failure('node02', findings)
    assert failure['msg'] == ('node02: the NPU ports do not hold the lossless intent after the change (2 problem(s)): '
                              'node02 NPU 0-1: MTU is 1500, expected 9000 (npuops_mtu)')
    assert failure['task'] == 'Check the NPU ports of this node against the lossless intent'
    assert failure['stage'] == 'change' and failure['lost'] is False
    assert rec.verify_failure('node02', findings[2:]) is None


# ---- the plan and the restore point ---------------------------------------------------------------------------------

def test_the_record_keeps_what_the_ticket_and_the_report_read_of_the_plan():
    assert rec.plan_part(PLAN) == dict((k, PLAN[k]) for k in ('changed', 'before', 'after', 'commands', 'busy')
                                       if k != 'changed')
    assert rec.plan_part(UNREACHABLE) == {'msg': UNREACHABLE['msg']}
    assert rec.plan_part(None) is None
    assert rec.pending(PLAN) is True
    assert rec.pending({'commands': []}) is False and rec.pending(None) is False


def test_the_restore_point_is_named_on_the_controller_before_the_set():
    assert rec.backup_path('/var/lib/npuops/backup//', 'node02', 'R1') == BACKUP
    assert rec.backup_path('/b', 'pod a/node:1', 'R1') == '/b/hccn-pod_a_node_1-R1.json'
    record = rec.new_record('node02')
    assert rec.restore_point(record) is None
    record['restore_point']['planned'] = BACKUP
    assert rec.restore_point(record) == BACKUP
    record['restore_point']['file'] = '/other.json'
    assert rec.restore_point(record) == '/other.json'


def test_a_one_pass_set_is_told_apart_per_setting_and_a_step_is_its_own():
    changed = rec.changed_by_step('set', ONE_PASS, together=True)
    assert changed == {'address': [], 'mtu': [0, 3], 'pfc': [0, 1, 3], 'dscp_to_tc': [0, 3]}
    assert rec.changed_by_step('pfc', {'changed_devices': [1, 2]}) == {'pfc': [1, 2]}
    assert rec.changed_by_step('pfc', None) == {}
    assert rec.changed_devices({'changed_devices': [3, 1, 3]}) == [1, 3]


def test_copy_record_builds_on_a_copy():
    record = rec.new_record('node02')
    again = rec.copy_record(record)
    again['restore_point']['file'] = BACKUP
    assert record['restore_point']['file'] is None
    assert rec.copy_record(None, 'node03', 'stepwise')['steps'] == 'stepwise'


# ---- the readings of the verification -------------------------------------------------------------------------------

def test_the_ports_are_read_back_after_a_change_or_without_readings_to_reuse():
    assert rec.read_back(True, info(), PLAN) is True
    assert rec.read_back(False, info(), PLAN) is False
    assert rec.read_back(False, None, PLAN) is True
    assert rec.read_back(False, info(), {'commands': []}) is True


def test_the_first_read_of_the_counters_is_the_sets_else_the_plans_else_the_stepwise_read():
    step_all = {'read': {'devices': {'0': {}}}, 'read_at': 9.0}
    assert rec.counters_first(False, True, step_all, PLAN, {}) == (step_all['read'], 9.0)
    assert rec.counters_first(False, False, {}, PLAN, {}) == (PLAN['read'], 5.0)
    assert rec.counters_first(False, True, {}, {}, {'devices': {}}) == ({'devices': {}}, None)
    # check mode with a pending change: nothing changed, no rate to measure
    assert rec.counters_first(True, True, step_all, PLAN, {}) == ({}, 9.0)


def test_what_the_verification_reads():
    assert rec.verify_queries({'after': []}, True, {'devices': {}}, ['pfc_stat']) == ['link', 'pfc_stat']
    assert rec.verify_queries({}, True, {}, ['pfc_stat']) == ['link', 'mtu', 'pfc', 'dscp_to_tc']
    assert rec.verify_queries({}, False, {'devices': {}}, ['pfc_stat', 'stat']) == ['pfc_stat', 'stat']
    assert rec.verify_queries({}, False, {}, ['pfc_stat']) == []


def test_the_readings_the_ports_are_verified_from():
    before, after = info(), info()
    assert rec.port_readings(True, True, PLAN, after, {}, True, before) == [PLAN['after']]
    assert rec.port_readings(False, True, PLAN, after, {'after': ['x']}, True, before) == [after, ['x']]
    assert rec.port_readings(False, True, PLAN, after, {}, True, before) == [after]
    assert rec.port_readings(False, False, PLAN, after, {}, False, before) == [before, PLAN['after']]


def test_the_precheck_warnings_go_to_the_findings():
    blockers = [{'severity': 'warn', 'check': 'busy'}, {'severity': 'fail', 'check': 'link'}, 'x']
    assert rec.warnings_of(blockers) == [{'severity': 'warn', 'check': 'busy'}]


# ---- the batch ------------------------------------------------------------------------------------------------------

def planned(host, **extra):
    record = rec.new_record(host)
    record.update(dict(dict(plan=rec.plan_part(PLAN), pending=True), **extra))
    record['restore_point'].update(planned=BACKUP)
    return record


def test_a_batch_changes_only_when_every_node_was_planned():
    records = {'node01': planned('node01'), 'node02': planned('node02')}
    assert rec.batch_planned(records, ['node01', 'node02']) is True
    assert rec.batch_planned(records, ['node01', 'node02', 'node03']) is False
    records['node02']['failure'] = rec.lost_failure('node02', 'plan', 'gone')
    assert rec.batch_planned(records, ['node01', 'node02']) is False
    records['node02'] = planned('node02', plan={'failed': True, 'msg': 'busy'})
    assert rec.batch_planned(records, ['node01', 'node02']) is False


def test_a_failed_batch_restores_the_nodes_with_a_restore_point_that_can_be_reached():
    ok, failed, lost = planned('node01'), planned('node02'), planned('node03')
    ok['restore_point']['file'] = failed['restore_point']['file'] = BACKUP
    failed['failure'] = rec.module_failure('set', {'msg': 'boom'})
    lost['failure'] = rec.lost_failure('node03', 'set', 'gone', BACKUP)
    records = {'node01': ok, 'node02': failed, 'node03': lost}
    batch = list(records)
    assert rec.batch_failed(records, batch) is True
    assert rec.needs_restore(ok, records, batch) is True
    assert rec.needs_restore(failed, records, batch) is True
    assert rec.needs_restore(lost, records, batch) is False  # its connection broke: neither verified nor restored
    assert rec.needs_restore(ok, records, batch, restore_enabled=False) is False
    assert rec.needs_restore(ok, {'node01': ok}, ['node01']) is False  # nothing failed
    no_point = planned('node04')
    assert rec.needs_restore(no_point, records, batch) is False  # its set wrote no restore point


def test_the_done_nodes_and_the_plans_of_the_ticket():
    done, lost, refused = planned('node01', done=True), planned('node02'), rec.new_record('node03')
    lost['failure'] = rec.lost_failure('node02', 'plan', 'gone')
    lost['plan'] = {'msg': 'gone'}
    refused['failure'] = rec.refused_failure('t', 'm')
    records = {'node01': done, 'node02': lost, 'node03': refused}
    assert rec.done_hosts(records, ['node01', 'node02', 'node03']) == ['node01']
    assert rec.ticket_plans(records, ['node01', 'node02', 'node03']) == {'node01': done['plan']}
    assert rec.restore_part({'changed': True, 'changed_devices': [1], 'diff': [], 'invocation': {}}) == \
        {'changed': True, 'changed_devices': [1]}
    assert rec.restore_part(None) is None


# ---- the store's record and the node's report -----------------------------------------------------------------------

def test_the_data_of_the_stage_4_record_and_the_report_of_the_node():
    record = planned('node02')
    record['restore_point']['file'] = BACKUP
    record['change'].update(mtu=[0, 1], pfc=[0], address=[3])
    record['findings'] = [{'host': 'node02', 'severity': 'fail', 'msg': 'a'}, {'host': 'node02', 'severity': 'warn'}]
    record['failure'] = rec.verify_failure('node02', record['findings'])
    record['ping'] = {'sent': 3}
    blockers = [{'check': 'switch_mtu', 'severity': 'warn'}, {'check': 'busy', 'severity': 'warn'}]
    data = rec.record_data(record, blockers)
    assert data == {'backup_file': BACKUP, 'changed_devices': {'mtu': [0, 1], 'pfc': [0], 'dscp_to_tc': []},
                    'failure': record['failure']['msg'], 'problems': 1, 'switch_findings': [],
                    'switch_blockers': [blockers[0]], 'plan': record['plan']}
    assert 'plan' not in rec.record_data(rec.new_record('node02'))
    assert rec.record_data(rec.new_record('node02'))['problems'] is None
    report = rec.node_report(record, 'node02', 'R1', False, 'together')
    assert report == {'host': 'node02', 'run': 'R1', 'check_mode': False, 'backup_file': BACKUP,
                      'before': PLAN['before'], 'after': PLAN['after'], 'commands': PLAN['commands'],
                      'steps': 'together', 'changed_devices': {'address': [3], 'mtu': [0, 1], 'pfc': [0], 'dscp_to_tc': []},
                      'ping': {'sent': 3}, 'findings': record['findings'], 'switch_findings': []}
    empty = rec.node_report(None, 'node02', 'R1', True, 'stepwise')
    assert empty['before'] == [] and empty['ping'] is None and empty['backup_file'] is None


# ---- the stop of a batch, from the records --------------------------------------------------------------------------

def test_the_stop_of_a_node_lost_during_its_change_from_the_records():
    done = rec.new_record('node01')
    done.update(done=True)
    done['restore_point']['file'] = '/b/hccn-node01-R1.json'
    lost = rec.new_record('node02')
    lost['restore_point']['planned'] = BACKUP
    lost['failure'] = rec.lost_failure('node02', 'set', UNREACHABLE['msg'], BACKUP)
    records = {'node01': done, 'node02': lost, 'node03': None}
    hosts = ['node01', 'node02', 'node03']
    from_records = window.window_stop_records(['node02'], records, hosts)
    assert from_records['message'].startswith('Stage 4 stopped: the connection to node02 broke during its change.')
    assert from_records['nodes']['node02']['state'] == window.LOST
    assert from_records['nodes']['node02']['restore_point'] == BACKUP
    assert from_records['nodes']['node01']['state'] == window.DONE
    assert from_records['nodes']['node03']['state'] == window.UNTOUCHED


def test_a_restored_node_and_a_node_lost_after_its_change_from_the_records():
    restored = planned('node02', changed_devices=[0, 1])
    restored['restore_point']['file'] = BACKUP
    restored['failure'] = rec.module_failure('verify', {'msg': 'node02: bad'})
    restored['restore'] = {'changed': True, 'changed_devices': [0, 1], 'failed': False}
    after = planned('node03', changed_devices=[])
    after['failure'] = rec.lost_failure('node03', 'ping', 'gone')
    stop = window.window_stop_records(['node02', 'node03'], {'node02': restored, 'node03': after},
                                      ['node01', 'node02', 'node03'])
    assert stop['nodes']['node02']['text'] == 'node02: changed NPU 0, 1; restored from %s (NPU 0, 1 set back)' % BACKUP
    assert stop['nodes']['node03']['text'] == 'node03: lost (the connection broke: gone); nothing was set on it'
    assert ('the change failed on node02 at "Check the NPU ports of this node against the lossless intent": node02: bad'
            in stop['message'])
    assert 'Changed in this batch: node02. Restored: node02.' in stop['message']
    assert 'Not touched: node01.' in stop['message']
    assert window.lost_at(after) == ('ping', 'gone') and window.lost_at(None) == (None, None)


# ---- the precheck ---------------------------------------------------------------------------------------------------

def test_the_precheck_finds_what_stops_the_change_of_a_node():
    ports = info(npu3={'link': 'DOWN', 'address': '10.20.3.11', 'netmask': '255.255.255.0'})
    read = {'ports': ports, 'npu': {'processes': [{'npu': 1, 'pid': 30780, 'name': 'python'}]}}
    found = rec.precheck_blockers(read, 'node02')
    assert [(f['device'], f['check'], f['severity']) for f in found] == [(3, 'link', 'fail'), (1, 'busy', 'fail')]
    assert [f['severity'] for f in rec.precheck_blockers(read, 'node02', allow_busy=True)] == ['fail', 'warn']


def test_the_npu_processes_that_could_not_be_read_stop_the_change_unless_busy_nodes_are_allowed():
    read = {'ports': info(), 'npu': {'failed': True, 'msg': 'npu-smi: not found'}}
    found = rec.precheck_blockers(read, 'node02')
    assert found[-1]['msg'] == ('node02: the NPU processes could not be read (npu-smi: not found), so the busy check '
                                'cannot run; fix npu-smi or set roce_lossless_allow_busy=true')
    assert found[-1]['severity'] == 'fail'
    assert rec.precheck_blockers(read, 'node02', allow_busy=True)[-1]['severity'] == 'warn'
    # processes read as empty: nothing said
    assert rec.precheck_blockers({'ports': info(), 'npu': {'processes': []}}, 'node02') == []


def test_a_node_that_could_not_be_reached_is_one_finding_without_the_busy_or_switch_checks():
    found = rec.precheck_blockers(UNREACHABLE, 'node02', switch_check='fail')
    assert [f['check'] for f in found] == ['reachable']
    assert rec.precheck_parts(UNREACHABLE) == (UNREACHABLE, UNREACHABLE, True)


def test_the_lldp_data_of_a_node_for_the_neighbour_map():
    before = info(npu0={'link': 'UP', 'lldp': {'system_name': 'leaf-01'}})
    assert rec.has_lldp(before) is True and rec.has_lldp(info()) is False and rec.has_lldp(None) is False
    assert rec.lldp_devices(before, None) == before['devices']
    own = {'devices': {'0': {'lldp': {}}}}
    assert rec.lldp_devices(info(), own) == own['devices']
    assert rec.lldp_devices(None, {'unreachable': True}) == {}


# ---- the phases of the change ---------------------------------------------------------------------------------------

def test_the_phases_of_a_change_in_one_pass_or_step_by_step():
    assert rec.change_phases('together') == ['set', 'ping', 'verify']
    assert rec.change_phases('stepwise') == ['restore_point', 'address', 'mtu', 'ping', 'pfc', 'pfc_first',
                                             'dscp_to_tc', 'verify']
    assert rec.change_phases('stepwise', ['verify', 'mtu']) == ['mtu', 'verify']  # always in the method's order


def test_the_config_of_each_set():
    want = [{'device': 0, 'address': '10.0.0.1', 'netmask': '255.0.0.0', 'mtu': 9000, 'pfc_priorities': [4],
             'dscp_to_tc': []}]
    assert rec.step_config(want) == [{'device': 0, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': []}]
    assert rec.step_config(want, addresses='apply') == want
    assert rec.step_config(want, 'mtu') == [{'device': 0, 'mtu': 9000}]
    record = rec.new_record('node02')
    record.update(plan={'commands': []}, plan_read={'read': {'devices': {}}, 'read_at': 3.0})
    assert rec.plan_with_read(record) == {'commands': [], 'read': {'devices': {}}, 'read_at': 3.0}


def test_a_node_failing_during_its_own_change_does_not_stop_the_others_of_its_batch():
    failed = planned('node02')
    failed['failure'] = rec.module_failure('mtu', {'msg': 'boom'})
    assert rec.batch_planned({'node01': planned('node01'), 'node02': failed}, ['node01', 'node02']) is True
    failed['failure'] = rec.refused_failure('t', 'm')
    assert rec.batch_planned({'node01': planned('node01'), 'node02': failed}, ['node01', 'node02']) is False
