"""npuops.ascend.stage_roce: the node's part of stage 4 in one call per step - the plan in check mode with the restore
point's path chosen on the controller, the change in one pass or step by step with the jumbo ping, the read-back and
the verification, a broken connection at each phase kept in the record instead of failing the task, the restore of a
failed batch, the stop from the records, and the store's record with the node's report."""

from __future__ import annotations

import json
import os

import pytest
from ansible.errors import AnsibleActionFail, AnsibleConnectionFailure, AnsibleError

from ansible_collections.npuops.ascend.plugins.action import stage_roce as action
from ansible_collections.npuops.ascend.tests.unit.plugins.action import stage_actions
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils.roce_samples import INTENT, info

RUN = 'R1'
H = 'node02'
HOSTS = ['node01', 'node02', 'node03']
BACKUP = '/var/lib/npuops/backup/hccn-node02-R1.json'
WANT = [{'device': d, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': [{'dscp': 33, 'tc': 3}]} for d in range(8)]
BEFORE = [{'device': d, 'mtu': 1500, 'pfc_priorities': [], 'dscp_to_tc': [{'dscp': 33, 'tc': 2}]} for d in range(8)]
PORTS = dict((host, [{'device': d, 'address': '10.20.%d.%d' % (d, n + 11), 'netmask': '255.255.255.0'}
                     for d in range(2)]) for n, host in enumerate(HOSTS))
PLAN = {'changed': True, 'before': BEFORE, 'after': WANT, 'commands': ['hccn_tool -i 0 -mtu -s 9000'], 'busy': []}
SET_ALL = {'changed': True, 'changed_devices': list(range(8)), 'before': BEFORE, 'after': WANT, 'backup_file': BACKUP,
           'read': info(), 'read_at': 1.0, 'diff': [{'before_header': 'NPU 0', 'before': 'mtu: 1500\n',
                                                     'after': 'mtu: 9000\n'}]}
PING = {'changed': False, 'summary': {'sent': 24, 'lost': 0}, 'read': info()}


class Node:
    """The node's modules: each call answered in turn from ``answers`` (a result, or an exception to raise), with the
    module's name, its arguments and whether it ran in check mode recorded."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.calls = []

    def bind(self, plugin):
        def execute(module_name, module_args, task_vars):
            self.calls.append((module_name.split('.')[-1], dict(module_args), plugin._task.check_mode))
            answer = self.answers.pop(0)
            if isinstance(answer, Exception):
                raise answer
            return dict(answer)
        plugin._execute_module = execute
        return plugin

    def names(self):
        return [call[0] for call in self.calls]


def step(tmp_path, node, check_mode=False, host=H, **args):
    args = dict(dict(run_dir=str(tmp_path / RUN), run_id=RUN), **args)
    plugin = node.bind(stage_actions.make_action(action.ActionModule, args, check_mode, lambda name: {}))
    return stage_actions.run_step(plugin, {'inventory_hostname': host, 'ansible_play_batch': [host],
                                           'ansible_play_hosts_all': HOSTS})


def planned_record(tmp_path, steps='together'):
    out = step(tmp_path, Node(PLAN), step='plan', want=WANT, steps=steps, counter_queries=['pfc_stat'])
    return out['record']


def change_args(record, **extra):
    args = dict(step='change', record=record, records={H: record}, batch=[H], want=WANT, devices=list(range(8)),
                intent=dict(INTENT), ports=PORTS, hosts=HOSTS, done_hosts=['node01'], before=info(),
                counter_queries=['pfc_stat'])
    args.update(extra)
    return args


# ---- plan -----------------------------------------------------------------------------------------------------------

def test_the_plan_runs_in_check_mode_without_a_diff_and_names_the_restore_point(tmp_path):
    node = Node(dict(PLAN, read={'devices': {}}, read_at=2.0))
    out = step(tmp_path, node, step='plan', want=WANT, counter_queries=['pfc_stat'], backup_dir='/var/lib/npuops/backup/')
    assert node.names() == ['hccn_config']
    name, args, check_mode = node.calls[0]
    assert check_mode is True and args['config'] == WANT and args['read_after'] == ['pfc_stat']
    record = out['record']
    assert record['pending'] is True and record['failure'] is None
    assert record['restore_point'] == {'planned': BACKUP, 'file': None}
    assert record['plan'] == dict((k, PLAN[k]) for k in ('before', 'after', 'commands', 'busy'))
    assert out['plan'] == record['plan'] and out['changed'] is False and 'diff' not in out


def test_a_plan_with_nothing_to_change_chooses_no_restore_point_and_stepwise_reads_nothing_with_it(tmp_path):
    node = Node(dict(PLAN, commands=[]))
    record = step(tmp_path, node, step='plan', want=WANT, steps='stepwise', counter_queries=['pfc_stat'])['record']
    assert node.calls[0][1]['read_after'] == []
    assert record['pending'] is False and record['restore_point']['planned'] is None


def test_a_node_lost_at_its_plan_is_recorded_and_left_out_of_the_ticket(tmp_path):
    out = step(tmp_path, Node(AnsibleConnectionFailure('ssh: connect to host node02: Connection refused')),
               step='plan', want=WANT)
    failure = out['record']['failure']
    assert failure['phase'] == 'plan' and failure['lost'] is True and failure['stage'] == 'before'
    assert failure['msg'] == 'node02: the connection broke before its change (ssh: connect to host node02: Connection refused)'
    assert 'plan' not in out and out.get('failed') is not True and not out.get('unreachable')


def test_a_node_the_precheck_refused_plans_nothing(tmp_path):
    refused = step(tmp_path, Node(), step='refused', task='Check that no node stops the change (nothing has been set yet)',
                   msg='node02 NPU 3: pid 30780 (python)')['record']
    assert refused['failure']['phase'] == 'precheck' and refused['failure']['stage'] == 'before'
    node = Node()
    out = step(tmp_path, node, step='plan', record=refused, want=WANT)
    assert node.calls == [] and out['record']['failure'] == refused['failure'] and 'plan' not in out


# ---- change: one pass -----------------------------------------------------------------------------------------------

def test_one_pass_sets_pings_the_done_neighbours_verifies_and_is_done(tmp_path):
    record = planned_record(tmp_path)
    node = Node(SET_ALL, PING)
    out = step(tmp_path, node, **change_args(record))
    assert node.names() == ['hccn_config', 'hccn_ping']  # the ping read the ports back itself
    set_args, ping_args = node.calls[0][1], node.calls[1][1]
    assert set_args['backup'] is True and set_args['backup_name'] == os.path.basename(BACKUP)
    assert set_args['read_after'] == ['pfc_stat'] and set_args['config'] == [
        dict((k, v) for k, v in entry.items() if k != 'address') for entry in WANT]
    # node01 is done, node02 itself is in the batch, node03 is neither: only node01's ports are pinged
    assert ping_args['targets'] == ['10.20.0.11', '10.20.1.11']
    assert ping_args['size'] == 9000 - 28 and ping_args['read_after'] == ['link', 'pfc_stat']
    record = out['record']
    assert record['done'] is True and record['failure'] is None
    assert record['restore_point']['file'] == BACKUP
    assert record['change']['mtu'] == list(range(8)) and record['changed_devices'] == list(range(8))
    assert record['ping'] == {'sent': 24, 'lost': 0}
    assert [f for f in record['findings'] if f['severity'] == 'fail'] == []
    assert out['changed'] is True and out['diff'] == SET_ALL['diff']
    assert out['ansible_facts']['roce_lossless_port_settings'] == WANT  # what stage 5 reads


def test_a_connection_broken_during_the_one_pass_set_names_the_planned_restore_point(tmp_path):
    record = planned_record(tmp_path)
    node = Node(AnsibleConnectionFailure('Connection reset by peer'))
    out = step(tmp_path, node, **change_args(record))
    assert node.names() == ['hccn_config']  # no ping, no read-back
    failure = out['record']['failure']
    assert failure['phase'] == 'set' and failure['lost'] is True
    assert failure['msg'] == ('node02: the connection broke during its change (Connection reset by peer); its restore '
                              'point is ' + BACKUP)
    assert out['record']['done'] is False and out.get('failed') is not True


def test_a_connection_broken_at_the_ping_is_after_the_change(tmp_path):
    record = planned_record(tmp_path)
    out = step(tmp_path, Node(SET_ALL, {'unreachable': True, 'msg': 'timed out'}), **change_args(record))
    failure = out['record']['failure']
    assert failure['phase'] == 'ping' and failure['msg'] == 'node02: the connection broke after its change (timed out)'
    assert out['record']['change']['pfc'] == list(range(8))


def test_ports_that_do_not_hold_the_intent_fail_the_node_at_the_verification(tmp_path):
    record = planned_record(tmp_path)
    bad = info(npu3={'link': 'UP'})
    node = Node(dict(SET_ALL, after=[dict(e, mtu=1500) if e['device'] == 3 else e for e in WANT]), dict(PING, read=bad))
    failure = step(tmp_path, node, **change_args(record))['record']['failure']
    assert failure['phase'] == 'verify'
    assert failure['msg'] == ('node02: the NPU ports do not hold the lossless intent after the change (1 problem(s)): '
                              'node02 NPU 3: MTU is 1500, expected 9000 (npuops_mtu)')


def test_nothing_changes_unless_every_node_of_the_batch_was_planned(tmp_path):
    record = planned_record(tmp_path)
    other = dict(record, host='node03', failure={'phase': 'plan', 'stage': 'before', 'msg': 'busy'})
    node = Node()
    out = step(tmp_path, node, **change_args(record, records={H: record, 'node03': other}, batch=[H, 'node03']))
    assert node.calls == [] and out['record']['done'] is False and out['changed'] is False


def test_a_tuned_node_is_verified_from_the_plan_and_the_precheck_and_reads_only_the_counters(tmp_path):
    node = Node(dict(PLAN, commands=[], after=WANT, read=info(), read_at=1.0))
    record = step(tmp_path, node, step='plan', want=WANT, counter_queries=['pfc_stat'])['record']
    node = Node({'changed': False, 'summary': {}, 'read': info()})
    out = step(tmp_path, node, **change_args(record))
    assert node.names() == ['hccn_ping'] and node.calls[0][1]['read_after'] == ['pfc_stat']
    assert out['record']['done'] is True and out['changed'] is False


def test_check_mode_with_a_pending_change_verifies_the_plan_and_skips_the_jumbo_ping(tmp_path):
    record = planned_record(tmp_path)
    node = Node(dict(SET_ALL, read={}), {'changed': False, 'devices': {}})
    out = step(tmp_path, node, check_mode=True, **change_args(record))
    assert node.names() == ['hccn_config', 'hccn_info']  # the MTU is not set: no jumbo ping
    assert node.calls[1][1]['queries'] == ['link']
    assert out['record']['port_settings'] == WANT


# ---- change: step by step -------------------------------------------------------------------------------------------

def test_stepwise_follows_the_method_after_a_full_restore_point(tmp_path):
    record = planned_record(tmp_path, steps='stepwise')
    point = {'changed': False, 'backup_file': BACKUP}
    mtu = {'changed': True, 'changed_devices': list(range(8))}
    ping = {'changed': False, 'summary': {'sent': 24, 'lost': 0}}  # no read_after, no read
    node = Node(point, mtu, ping, mtu, {'devices': {}}, {'changed': True, 'changed_devices': [0]}, info())
    out = step(tmp_path, node, **change_args(record, steps='stepwise'))
    assert node.names() == ['hccn_config', 'hccn_config', 'hccn_ping', 'hccn_config', 'hccn_info', 'hccn_config',
                            'hccn_info']
    assert node.calls[0][1]['state'] == 'gathered' and node.calls[0][1]['backup_name'] == os.path.basename(BACKUP)
    assert [list(node.calls[i][1]['config'][0]) for i in (1, 3, 5)] == [
        ['device', 'mtu'], ['device', 'pfc_priorities'], ['device', 'dscp_to_tc']]
    assert all(node.calls[i][1]['restore_point'] == BACKUP for i in (1, 3, 5))
    assert 'link_timeout' not in node.calls[5][1]  # the DSCP map does not bounce the link
    assert node.calls[2][1]['read_after'] == []  # PFC and the DSCP map are read back after their steps
    assert node.calls[6][1]['queries'] == ['link', 'mtu', 'pfc', 'dscp_to_tc', 'pfc_stat']
    record = out['record']
    assert record['change'] == {'address': [], 'mtu': list(range(8)), 'pfc': list(range(8)), 'dscp_to_tc': [0]}
    assert record['done'] is True


def test_stepwise_lost_before_its_first_set_and_during_its_pfc_step(tmp_path):
    record = planned_record(tmp_path, steps='stepwise')
    out = step(tmp_path, Node({'unreachable': True, 'msg': 'gone'}), **change_args(record, steps='stepwise'))
    assert out['record']['failure']['msg'] == 'node02: the connection broke before its change (gone)'
    assert out['record']['failure']['stage'] == 'change'
    node = Node({'backup_file': BACKUP}, {'changed': True, 'changed_devices': [0]}, PING, AnsibleConnectionFailure('x'))
    failure = step(tmp_path, node, **change_args(record, steps='stepwise'))['record']['failure']
    assert failure['phase'] == 'pfc' and failure['task'] == 'Stop this node when the connection broke during the PFC step'
    assert failure['msg'] == 'node02: the connection broke during its change (x); its restore point is ' + BACKUP


# ---- restore, stop, record ------------------------------------------------------------------------------------------

def test_a_failed_batch_restores_this_node_from_its_restore_point(tmp_path):
    mine = planned_record(tmp_path)
    mine['restore_point']['file'] = BACKUP
    other = dict(planned_record(tmp_path), host='node03', failure={'phase': 'set', 'stage': 'change', 'msg': 'x'})
    node = Node({'changed': True, 'changed_devices': [0, 1], 'failed': False, 'diff': []})
    out = step(tmp_path, node, step='restore', record=mine, records={H: mine, 'node03': other}, batch=[H, 'node03'])
    assert node.names() == ['hccn_config'] and node.calls[0][1]['restore_from'] == BACKUP
    assert out['record']['restore'] == {'changed': True, 'changed_devices': [0, 1], 'failed': False}
    assert out['changed'] is True
    # a batch that did not fail, or the restore switched off: nothing runs
    node = Node()
    step(tmp_path, node, step='restore', record=mine, records={H: mine}, batch=[H])
    step(tmp_path, node, step='restore', record=mine, records={H: mine, 'node03': other}, batch=[H, 'node03'],
         restore=False)
    assert node.calls == []


def test_a_restore_that_fails_is_kept_in_the_record_and_does_not_fail_the_task(tmp_path):
    mine = planned_record(tmp_path)
    mine['restore_point']['file'] = BACKUP
    mine['failure'] = {'phase': 'verify', 'stage': 'change', 'msg': 'x', 'lost': False}
    out = step(tmp_path, Node(AnsibleConnectionFailure('gone')), step='restore', record=mine, records={H: mine},
               batch=[H])
    assert out['record']['restore']['unreachable'] is True and out.get('failed') is not True


def test_the_stop_tells_every_node_from_the_records(tmp_path):
    mine = planned_record(tmp_path)
    mine['failure'] = {'task': 'Plan the change of the NPU ports (reads and compares, sets nothing)', 'msg': 'busy',
                       'stage': 'before', 'phase': 'plan', 'lost': False}
    done = dict(planned_record(tmp_path), host='node01', done=True)
    out = step(tmp_path, Node(), step='stop', batch=[H], hosts=HOSTS, records={'node01': done, H: mine})
    assert out['message'] == (
        'Stage 4 stopped: nothing was set on node02: busy. node02: not restored: nothing was changed on it. Changed in '
        'this batch: none. Restored: none. Done and verified in earlier batches (kept): node01. Not touched: node03. Fix '
        'the cause and run again: nodes that already match change nothing.')
    assert out['nodes']['node01']['state'] == 'done' and out['results']['node02']['stage4']['status'] == 'failed'
    assert out['results']['node01']['stage4']['status'] == 'stopped'


def test_the_record_step_writes_the_stage_4_record_and_the_report_of_the_node(tmp_path):
    record = planned_record(tmp_path)
    record['findings'] = [{'host': H, 'device': 0, 'check': 'mtu', 'severity': 'fail', 'msg': 'node02 NPU 0: m'}]
    pod = [{'host': H, 'device': None, 'check': 'busbw', 'severity': 'warn', 'msg': 'node02: slow'},
           {'host': 'node01', 'device': None, 'check': 'busbw', 'severity': 'warn', 'msg': 'node01: slow'}]
    switch = [{'host': H, 'device': 1, 'check': 'switch_ecn', 'severity': 'warn', 'msg': 'node02 NPU 1: no ECN'}]
    out = step(tmp_path, Node(), step='record', record=record, findings=pod, switch_findings=switch, steps='together')
    with open(out['path'], encoding='utf-8') as handle:
        stored = json.load(handle)
    assert stored['stage'] == 4 and stored['role'] == 'roce_lossless' and stored['status'] == 'failed'
    assert [f['msg'] for f in stored['findings']] == ['node02 NPU 0: m', 'node02 NPU 1: no ECN', 'node02: slow']
    assert stored['data']['plan']['commands'] == PLAN['commands'] and stored['data']['switch_findings'] == switch
    path = tmp_path / RUN / 'stage4-roce_lossless' / 'node02.json'
    text = path.read_text(encoding='utf-8')
    assert text.startswith('{\n    "after": ') and text.endswith('}\n')  # to_nice_json's layout
    report = json.loads(text)
    assert report['host'] == H and report['run'] == RUN and report['switch_findings'] == switch
    assert report['commands'] == PLAN['commands']
    os.unlink(str(path))
    step(tmp_path, Node(), step='record', record=record, report=False)
    assert not path.exists()


def cnp(tx, rx):
    return {'devices': dict((str(d), {'stat': {'roce_tx_cnp_pkt_num': tx, 'roce_rx_cnp_pkt_num': rx}}) for d in range(2))}


def test_the_pod_step_keeps_both_benchmarks_and_the_findings_of_the_pod_in_the_pod_record(tmp_path):
    expected = {'expected_gb_s': 117.6, 'gate_gb_s': 94.08, 'basis': 'expected 117.6 GB/s'}
    out = step(tmp_path, Node(), step='pod', phase='before', hosts=HOSTS, result={'peak_busbw_gb_s': 3.0, 'rows': []},
               expected=expected)
    assert out['findings'] == [] and out['bench'] == {'before': {'peak_busbw_gb_s': 3.0, 'rows': []}}
    # the PoD part, another job: the benchmark after the change below the gate, node03 the slow node
    slow = {'peak_busbw_gb_s': 44.9, 'rows': [{}], 'below_band': True,
            'band': {'low_gb_s': 94.08, 'percent': [80.0, 100], 'theory_gb_s': 117.6}}
    pairwise = {'culprits': ['node03'], 'culprit': 'node03', 'msg': 'node03 is in every slow pair'}
    out = step(tmp_path, Node(), step='pod', phase='after', hosts=HOSTS, result=slow, expected=expected,
               pairwise=pairwise)
    assert [(f['host'], f['check']) for f in out['findings']] == [('node03', 'busbw'), ('node03', 'pairwise')]
    assert out['findings'][0]['msg'].endswith('; expected 117.6 GB/s')
    assert sorted(out['bench']) == ['after', 'before'] and out['bench']['before']['peak_busbw_gb_s'] == 3.0
    with open(out['path'], encoding='utf-8') as handle:
        stored = json.load(handle)
    assert stored['schema'] == 'npuops.ascend/pod-record' and stored['stage'] == 4 and stored['run'] == RUN
    assert stored['findings'] == out['findings'] and stored['data']['pairwise'] == pairwise
    # no slow node singled out: the finding names the first node of the PoD, never every node
    out = step(tmp_path, Node(), step='pod', phase='after', hosts=HOSTS, result=slow, expected=expected)
    assert [f['host'] for f in out['findings']] == ['node01']


AT_GATE = {'peak_busbw_gb_s': 136.5, 'rows': [{}], 'below_band': False}


def test_the_ecn_step_reads_the_counters_again_only_after_a_benchmark_at_the_gate_and_adds_to_the_record(tmp_path):
    before = {'devices': dict((str(d), {'lldp': {'ifname': '200GE1/0/%d' % d, 'system_name': 'leaf-01'}})
                              for d in range(2))}
    record = planned_record(tmp_path)
    step(tmp_path, Node(), step='record', record=record, cnp=cnp(7, 7), before=before, report=False)
    path = tmp_path / RUN / 'nodes' / H / 'stage4.json'
    stored = json.loads(path.read_text(encoding='utf-8'))
    assert stored['data']['cnp']['devices']['1'] == {'stat': {'roce_tx_cnp_pkt_num': 7, 'roce_rx_cnp_pkt_num': 7},
                                                     'lldp': before['devices']['1']['lldp']}
    assert stored['status'] == 'passed'
    # below the gate (the PoD record says) the counters tell nothing about ECN: nothing is read
    slow = {'peak_busbw_gb_s': 44.9, 'rows': [{}], 'below_band': True,
            'band': {'low_gb_s': 94.08, 'percent': [80.0, 100], 'theory_gb_s': 117.6}}
    step(tmp_path, Node(), step='pod', phase='after', hosts=HOSTS, result=slow)
    node = Node()
    out = step(tmp_path, node, step='ecn', devices=[0, 1], intent=dict(INTENT))
    assert node.calls == [] and out['findings'] == [] and 'did not reach the gate' in out['msg']
    # at the gate: node02's counters did not grow, so its ports saw no ECN mark; the record fails with them
    step(tmp_path, Node(), step='pod', phase='after', hosts=HOSTS, result=AT_GATE)
    node = Node(cnp(7, 7))
    out = step(tmp_path, node, step='ecn', devices=[0, 1], intent=dict(INTENT), ecn_severity='fail')
    assert node.names() == ['hccn_info'] and node.calls[0][1]['queries'] == ['stat'] and node.calls[0][2] is False
    assert [(f['host'], f['device'], f['severity']) for f in out['findings']] == [(H, 0, 'fail'), (H, 1, 'fail')]
    assert 'switch leaf-01 port 200GE1/0/1' in out['findings'][1]['msg']
    stored = json.loads(path.read_text(encoding='utf-8'))
    assert stored['status'] == 'failed' and [f['check'] for f in stored['findings']] == ['switch_ecn', 'switch_ecn']
    assert stored['data']['switch_findings'] == out['findings']
    # again, with the counters grown: the findings of the last check replace those of the first
    out = step(tmp_path, Node(cnp(9, 9)), step='ecn', devices=[0, 1], intent=dict(INTENT), ecn_severity='fail')
    stored = json.loads(path.read_text(encoding='utf-8'))
    assert out['findings'] == [] and stored['status'] == 'passed' and stored['data']['switch_findings'] == []
    # a node whose counters cannot be read: a warning in its record, not the end of the run
    out = step(tmp_path, Node({'failed': True, 'msg': 'hccn_tool: timeout'}), step='ecn', devices=[0, 1],
               intent=dict(INTENT))
    assert [f['severity'] for f in out['findings']] == ['warn'] and 'hccn_tool: timeout' in out['findings'][0]['msg']


def test_the_ecn_step_without_the_counters_of_the_change_reads_nothing(tmp_path):
    step(tmp_path, Node(), step='pod', phase='after', hosts=HOSTS, result=AT_GATE)
    node = Node()
    out = step(tmp_path, node, step='ecn', devices=[0, 1], intent=dict(INTENT))
    assert node.calls == [] and 'no record of stage 4' in out['msg']
    step(tmp_path, Node(), step='record', record=planned_record(tmp_path), report=False)
    out = step(tmp_path, node, step='ecn', devices=[0, 1], intent=dict(INTENT))
    assert node.calls == [] and 'holds no CNP counters' in out['msg']


def test_the_neighbour_map_of_a_pod_part_says_the_node_parts_changed_the_ports(tmp_path):
    out = step(tmp_path, Node(), step='neighbours', hosts=['node01', 'node02'])
    assert out['failed'] and 'nothing was changed on any node' in out['msg'] and 'node01: no check record' in out['msg']
    out = step(tmp_path, Node(), step='neighbours', hosts=['node01', 'node02'], phase='after')
    assert out['failed'] and 'nothing was changed' not in out['msg']
    assert 'the PoD part keeps the lock of the ports: run the node parts that are missing' in out['msg']


def test_the_pod_step_needs_its_phase(tmp_path):
    with pytest.raises(AnsibleActionFail, match='step pod needs phase'):
        step(tmp_path, Node(), step='pod', hosts=HOSTS)


# ---- precheck -------------------------------------------------------------------------------------------------------

def test_the_precheck_reads_once_and_sets_what_the_assert_and_the_change_read(tmp_path):
    read = {'changed': False, 'ports': info(npu2={'link': 'DOWN'}), 'npu': {'processes': []},
            'env_files': {'/etc/profile.d/npuops-hccl.sh': {'variables': {'HCCL_RDMA_SL': '4'}}}}
    node = Node(read, {'devices': {'0': {'lldp': {'system_name': 'leaf-01'}}}})
    out = step(tmp_path, node, step='precheck', devices=list(range(8)), switch_check='off', lldp=True,
               hccl_env_file='/etc/profile.d/npuops-hccl.sh', intent=dict(INTENT))
    assert node.names() == ['health_info', 'hccn_info']  # no LLDP in the precheck: read for the switch files
    args = node.calls[0][1]
    assert args['port_queries'] == ['link', 'ip'] and args['npu_subset'] == ['processes'] and args['host'] is False
    assert args['env_files'] == ['/etc/profile.d/npuops-hccl.sh']
    facts = out['ansible_facts']
    assert facts['roce_lossless_before'] == read['ports'] and facts['roce_lossless_precheck_health'] == read
    assert [(f['device'], f['check']) for f in facts['roce_lossless_blockers']] == [(2, 'link')]
    assert out['changed'] is False and out['msg'] == 'node02: 1 finding(s) stop the change'
    # the node's check record of stage 4: what stops its change, and the LLDP data for the switch files
    with open(out['check_record'], encoding='utf-8') as handle:
        check = json.load(handle)
    assert out['check_record'] == str(tmp_path / RUN / 'nodes' / H / 'check4.json')
    assert check['problems'] == [facts['roce_lossless_blockers'][0]['msg']] and check['usable'] is False
    assert check['data'] == {'lldp': {'node': H, 'devices': {'0': {'lldp': {'system_name': 'leaf-01'}}}}}
    # the LLDP step then reads nothing: the precheck of this run kept it
    node = Node()
    out = step(tmp_path, node, step='lldp', devices=list(range(8)))
    assert node.calls == [] and out['lldp'] == check['data']['lldp']
    assert out['msg'] == 'node02: LLDP as the precheck of this run read it'


def lldp(name, port):
    return {'lldp': {'system_name': name, 'ifname': port, 'chassis_id': 'aa:bb', 'max_frame_size': 9216}}


def test_run_alone_the_lldp_step_reads_and_records_and_the_map_is_built_from_the_records(tmp_path):
    for n, host in enumerate(HOSTS):
        node = Node({'changed': False, 'devices': {'0': lldp('leaf-01', '100GE1/0/%d' % (n + 1))}})
        out = step(tmp_path, node, host=host, step='lldp', devices=[0], timeout=30)
        assert node.calls == [('hccn_info', {'queries': ['lldp'], 'devices': [0], 'timeout': 30}, False)]
        assert out['msg'] == '%s: LLDP read on 1 NPU port(s)' % host
    out = step(tmp_path, Node(), step='neighbours', hosts=HOSTS)
    assert 'failed' not in out and out['msg'] == '3 NPU port(s) seen on 1 switch(es), 0 not seen'
    assert [(p['node'], p['npu'], p['switch'], p['port']) for p in out['neighbours']['ports']] == [
        ('node01', 0, 'leaf-01', '100GE1/0/1'), ('node02', 0, 'leaf-01', '100GE1/0/2'),
        ('node03', 0, 'leaf-01', '100GE1/0/3')]
    # a node without a record of this run, or with one that holds no LLDP data, stops the map
    step(tmp_path, Node(info()), host='node03', step='precheck', switch_check='off', intent=dict(INTENT))
    out = step(tmp_path, Node(), step='neighbours', hosts=HOSTS + ['node04'])
    assert out['failed'] is True
    assert out['msg'].startswith('The neighbour map of the switch files cannot be built: 2 node(s) have no LLDP data of '
                                 'run R1; nothing was changed on any node: node03: its check record of stage 4 holds no '
                                 'LLDP data')
    assert '| node04: no check record of stage 4 in the run store' in out['msg']


def test_an_lldp_read_that_fails_fails_the_node(tmp_path):
    out = step(tmp_path, Node(AnsibleConnectionFailure('no route to host')), step='lldp', devices=[0])
    assert out['unreachable'] is True and not (tmp_path / RUN / 'nodes' / H / 'check4.json').exists()


def test_a_node_the_precheck_cannot_reach_is_a_finding_not_a_failure(tmp_path):
    node = Node(AnsibleConnectionFailure('no route to host'))
    out = step(tmp_path, node, step='precheck', switch_check='fail', intent=dict(INTENT))
    assert node.calls[0][1]['port_queries'] == ['link', 'ip', 'lldp']
    facts = out['ansible_facts']
    assert facts['roce_lossless_precheck_health']['unreachable'] is True
    assert [f['check'] for f in facts['roce_lossless_blockers']] == ['reachable']
    assert out.get('failed') is not True
    with open(out['check_record'], encoding='utf-8') as handle:
        check = json.load(handle)
    assert check['data'] == {} and len(check['problems']) == 1   # no LLDP asked for; the node's blocker


def test_the_record_step_checks_the_ecn_marks_of_the_benchmark(tmp_path):
    record = planned_record(tmp_path)
    first = {'devices': dict((str(d), {'stat': {'np_cnp_sent': 0, 'rp_cnp_handled': 0}}) for d in range(2))}
    out = step(tmp_path, Node(), step='record', record=record, switch_findings=[], intent=dict(INTENT),
               ecn={'first': first, 'second': first, 'severity': 'warn'})
    assert out['record']['switch_findings'] and all(f['check'] == 'switch_ecn' for f in out['record']['switch_findings'])
    assert all(f['severity'] == 'warn' for f in out['record']['switch_findings'])


def test_stepwise_one_call_per_step_carries_the_record_from_step_to_step(tmp_path):
    record = planned_record(tmp_path, steps='stepwise')
    answers = {'restore_point': [{'backup_file': BACKUP}], 'address': [], 'mtu': [{'changed': True, 'changed_devices': [0]}],
               'ping': [{'summary': {'sent': 1}}], 'pfc': [{'changed': True, 'changed_devices': [0]}],
               'pfc_first': [{'devices': {}}], 'dscp_to_tc': [{'changed': False, 'changed_devices': []}],
               'verify': [info()]}
    calls = []
    for phase in ('restore_point', 'address', 'mtu', 'ping', 'pfc', 'pfc_first', 'dscp_to_tc', 'verify'):
        node = Node(*answers[phase])
        record = step(tmp_path, node, **change_args(record, steps='stepwise', phases=[phase]))['record']
        calls.append(node.names())
    assert calls == [['hccn_config'], [], ['hccn_config'], ['hccn_ping'], ['hccn_config'], ['hccn_info'],
                     ['hccn_config'], ['hccn_info']]
    assert record['restore_point']['file'] == BACKUP and record['change']['pfc'] == [0] and record['done'] is True
    # a node that failed at a step does nothing more
    record['failure'] = {'phase': 'mtu', 'stage': 'change', 'msg': 'x'}
    node = Node()
    step(tmp_path, node, **change_args(record, steps='stepwise', phases=['ping']))
    assert node.calls == []


def test_with_stop_with_batch_a_node_goes_no_further_once_another_node_of_the_batch_failed(tmp_path):
    # site.yml (any_errors_fatal): node03 failed its set, so node02 neither pings nor verifies; it is restored with the
    # batch and the stop names node03 only. Without stop_with_batch (the change window) node02 goes on.
    record = planned_record(tmp_path)
    failed = dict(record, host='node03', failure={'phase': 'set', 'stage': 'after', 'msg': 'link down'})
    records = {H: record, 'node03': failed}
    node = Node()
    out = step(tmp_path, node, **change_args(record, records=records, batch=[H, 'node03'], stop_with_batch=True,
                                             phases=['ping', 'verify']))
    assert node.calls == [] and out['record']['done'] is False and out['record']['failure'] is None
    # its own failure does not count as another node's: a node alone in its batch runs its phases
    node = Node(SET_ALL)
    out = step(tmp_path, node, **change_args(record, stop_with_batch=True, phases=['set']))
    assert node.names() == ['hccn_config'] and out['changed'] is True
    # the change window: the same batch, no stop_with_batch, node02 runs its set
    node = Node(SET_ALL)
    out = step(tmp_path, node, **change_args(record, records=records, batch=[H, 'node03'], phases=['set']))
    assert node.names() == ['hccn_config']


def test_other_records_leaves_out_the_node_itself():
    from ansible_collections.npuops.ascend.plugins.plugin_utils.roce import record as rec
    assert rec.other_records({'a': 1, 'b': 2}, 'a') == {'b': 2}
    assert rec.other_records(None, 'a') == {}


def test_a_change_call_without_phases_hands_the_record_on_unchanged(tmp_path):
    # the change window's second call of the one-pass change: no phase, no module run, the same record registered
    record = planned_record(tmp_path)
    node = Node()
    out = step(tmp_path, node, **change_args(record, phases=[], stop_with_batch=True))
    assert node.calls == [] and out['changed'] is False
    assert out['record']['plan'] == record['plan'] and out['record']['pending'] == record['pending']


# ---- pairwise: the search for slow nodes in rounds of disjoint pairs ------------------------------------------------

class Fabric:
    """hccl_bench with host_groups: every group's busbw, 9.0 GB/s with a slow node in it, else 22.5; the groups of
    each call recorded (the MPI names)."""

    def __init__(self, slow=(), fail=(), answer=None):
        self.slow = set(slow)
        self.fail = set(fail)
        self.answer = answer
        self.rounds = []
        self.args = []

    def bind(self, plugin):
        def execute(module_name, module_args, task_vars):
            assert module_name.split('.')[-1] == 'hccl_bench'
            self.args.append(dict(module_args))
            self.rounds.append([list(group) for group in module_args['host_groups']])
            if self.answer is not None:
                return dict(self.answer)
            runs = []
            for group in module_args['host_groups']:
                if self.fail & set(group):
                    runs.append({'hosts': group, 'failed': True, 'msg': 'mpirun exited 1'})
                else:
                    runs.append({'hosts': group, 'peak_busbw_gb_s': 9.0 if self.slow & set(group) else 22.5})
            return {'changed': False, 'runs': runs}
        plugin._execute_module = execute
        return plugin


def search_step(tmp_path, fabric, hosts, check_mode=False, **args):
    args = dict(dict(run_dir=str(tmp_path / RUN), run_id=RUN, step='pairwise', hosts=hosts, threshold=20,
                     bench={'npus': 8, 'max_bytes': '1G', 'fail_below_band': False}), **args)
    plugin = fabric.bind(stage_actions.make_action(action.ActionModule, args, check_mode, lambda name: {}))
    return stage_actions.run_step(plugin, {'inventory_hostname': hosts[0], 'ansible_play_batch': hosts,
                                           'ansible_play_hosts_all': hosts})


def test_pairwise_names_two_slow_nodes_in_two_rounds_of_disjoint_pairs_run_at_once(tmp_path):
    hosts = ['node%02d' % i for i in range(1, 9)]
    fabric = Fabric(slow={'mpi-node03', 'mpi-node06'})
    out = search_step(tmp_path, fabric, hosts, mpi_hosts=dict((h, 'mpi-' + h) for h in hosts))
    assert fabric.rounds == [
        [['mpi-node01', 'mpi-node02'], ['mpi-node03', 'mpi-node04'], ['mpi-node05', 'mpi-node06'], ['mpi-node07', 'mpi-node08']],
        [['mpi-node01', 'mpi-node03'], ['mpi-node02', 'mpi-node04'], ['mpi-node05', 'mpi-node07'], ['mpi-node06', 'mpi-node08']],
    ]
    assert all(args['npus'] == 8 and args['fail_below_band'] is False and 'hosts' not in args for args in fabric.args)
    assert out['rounds'] == 2 and out['changed'] is False
    assert (out['culprit'], out['culprits']) == (None, ['node03', 'node06'])
    assert out['msg'].startswith('node03 and node06 are each slow with a node that reaches 20.0 GB/s and in no fast pair (')
    assert [(p['hosts'], p['round']) for p in out['slow_pairs']] == [
        (['node03', 'node04'], 1), (['node05', 'node06'], 1), (['node01', 'node03'], 2), (['node06', 'node08'], 2)]


def test_pairwise_a_pair_that_did_not_run_counts_as_slow(tmp_path):
    hosts = ['node01', 'node02', 'node03', 'node04']
    out = search_step(tmp_path, Fabric(fail={'node04'}), hosts)
    assert out['culprit'] == 'node04'
    assert '(no result)' in out['msg']


def test_pairwise_stops_at_max_rounds_and_when_the_benchmark_fails(tmp_path):
    hosts = ['node01', 'node02', 'node03', 'node04']
    fabric = Fabric(slow={'node02'})
    out = search_step(tmp_path, fabric, hosts, max_rounds=1)
    assert len(fabric.rounds) == 1 and out['rounds'] == 1
    assert out['suspects'] == ['node01', 'node02'] and out['culprit'] is None
    failed = Fabric(answer={'failed': True, 'msg': 'node01: mpirun not found', 'changed': False})
    out = search_step(tmp_path, failed, hosts)
    assert out['msg'] == ('the search for the slow node stopped: round 1 (node01 + node02, node03 + node04) did not run: '
                          'node01: mpirun not found')
    assert out.get('failed') is not True and out['culprit'] is None


def test_pairwise_in_check_mode_is_skipped(tmp_path):
    out = search_step(tmp_path, Fabric(answer={'changed': False, 'skipped': True, 'msg': 'skipped in check mode'}),
                      ['node01', 'node02', 'node03'], check_mode=True)
    assert out['skipped'] is True and out['msg'] == 'skipped in check mode'


def test_pairwise_needs_a_threshold(tmp_path):
    with pytest.raises(AnsibleActionFail, match='step pairwise needs threshold'):
        search_step(tmp_path, Fabric(), ['node01', 'node02', 'node03'], threshold=None)


# ---- batches: the window's batches follow failure domains -----------------------------------------------------------

FOUR = ['node01', 'node02', 'node03', 'node04']


def test_batches_by_switch_come_from_the_lldp_of_the_check_records(tmp_path):
    for n, host in enumerate(FOUR):
        leaf = 'leaf-01' if n < 2 else 'rackB-leaf-01'
        node = Node({'changed': False, 'devices': {'0': lldp(leaf, '400GE1/0/%d' % (n + 1)),
                                                   '1': lldp(leaf, '400GE1/0/%d' % (n + 11))}})
        step(tmp_path, node, host=host, step='lldp', devices=[0, 1], timeout=30)
    node = Node()
    out = step(tmp_path, node, step='batches', hosts=FOUR, domain='switch', size=3)
    assert node.calls == []  # read from the records, nothing run on a node
    assert out['batches'] == [{'domain': 'leaf-01', 'hosts': ['node01', 'node02']},
                              {'domain': 'rackB-leaf-01', 'hosts': ['node03', 'node04']}]
    assert (out['order'], out['serial'], out['changed']) == (FOUR, [2, 2], False)
    assert out['msg'].startswith('2 failure domain(s) (leaf-01: node01, node02; rackB-leaf-01: node03, node04), 2 batch(es)')


def test_batches_by_switch_refuse_a_node_without_lldp_data_before_any_change(tmp_path):
    node = Node({'changed': False, 'devices': {'0': lldp('leaf-01', '400GE1/0/1')}})
    step(tmp_path, node, host='node01', step='lldp', devices=[0], timeout=30)
    out = step(tmp_path, Node(), step='batches', hosts=['node01', 'node02'], domain='switch', size=1)
    assert out['failed'] is True
    assert out['msg'].startswith('The batches of the change window cannot follow the failure domains (roce_lossless_batch_'
                                 'domain=switch): node02: no check record of stage 4 in the run store (')
    assert out['msg'].endswith('check4.json): the check did not run on this node. Nothing was changed on any node.')


def test_batches_by_group_and_their_problems(tmp_path):
    groups = {'all': FOUR, 'rack_a': ['node01', 'node03'], 'rack_b': ['node02', 'node04']}
    out = step(tmp_path, Node(), step='batches', hosts=FOUR, domain='group', domain_groups=['rack_b', 'rack_a'],
               groups=groups, size='100%')
    assert (out['order'], out['serial']) == (['node02', 'node04', 'node01', 'node03'], [2, 2])  # the groups' order
    out = step(tmp_path, Node(), step='batches', hosts=FOUR, domain='group', domain_groups=['rack_a'], groups=groups,
               size=0)
    assert out['failed'] is True
    assert 'roce_lossless_batch 0 is below 1' in out['msg']
    assert 'node02: it is in none of the groups of roce_lossless_domain_groups (rack_a)' in out['msg']
    assert out['msg'].endswith('Nothing was changed on any node.')


# ---- pod: the scaling ladder after the change -----------------------------------------------------------------------

FOUR = ['node01', 'node02', 'node03', 'node04']
LADDER = {'enabled': True, 'rungs': [], 'min_pct': 70.0, 'intra_min_pct': 85.0}
RUNG_BENCH = {'npus': 8, 'min_bytes': '1G', 'max_bytes': '1G', 'fail_below_band': False}
STAGE3 = {'expected_gb_s': 137.2, 'gate_gb_s': 109.76, 'intra_gb_s': 137.2, 'intra_from': 'stage 3', 'basis': 'expected'}


def ladder_step(tmp_path, node, result, **args):
    return step(tmp_path, node, step='pod', phase='after', hosts=FOUR, result=result, expected=STAGE3, ladder=LADDER,
                bench=RUNG_BENCH, mpi_hosts=dict((h, 'mpi-' + h) for h in FOUR), host='node01', **args)


def test_the_pod_step_measures_the_rungs_below_the_pod_and_keeps_the_ladder_in_the_pod_record(tmp_path):
    node = Node({'changed': False, 'peak_busbw_gb_s': 136.9, 'rows': [{}]}, {'changed': False, 'peak_busbw_gb_s': 136.4,
                                                                             'rows': [{}]})
    out = ladder_step(tmp_path, node, AT_GATE)
    # one hccl_bench run per rung below the PoD, on the first nodes by their MPI names; the PoD's rung is the benchmark
    assert node.names() == ['hccl_bench', 'hccl_bench']
    assert [call[1]['hosts'] for call in node.calls] == [['mpi-node01'], ['mpi-node01', 'mpi-node02']]
    assert all(call[1]['max_bytes'] == '1G' and call[1]['npus'] == 8 for call in node.calls)
    assert out['findings'] == []
    with open(out['path'], encoding='utf-8') as handle:
        scaling = json.load(handle)['data']['scaling']
    assert [(r['nodes'], r['hosts'], r['busbw_gb_s'], r['efficiency_pct']) for r in scaling['rungs']] == [
        (1, ['node01'], 136.9, 100.0), (2, ['node01', 'node02'], 136.4, 99.6), (4, FOUR, 136.5, 99.7)]


def test_a_slow_port_drops_the_rungs_with_its_node_and_the_finding_names_node_and_npu(tmp_path):
    slow = {'peak_busbw_gb_s': 45.0, 'rows': [{}], 'below_band': True,
            'band': {'low_gb_s': 109.76, 'percent': [80.0, 100], 'theory_gb_s': 137.2}}
    pairwise = {'culprits': ['node03'], 'culprit': 'node03', 'msg': 'node03 is in every slow pair'}
    records = [{'status': 'DOWN'}, {'status': 'UP'}]
    ports = {'results': [{'item': 'node03', 'devices': dict(
        (str(d), {'link': 'UP', 'mtu': 9000, 'link_stat': {'records': records * (4 if d == 5 else 1)}}) for d in range(8))}]}
    node = Node({'peak_busbw_gb_s': 136.9, 'rows': [{}]}, {'peak_busbw_gb_s': 136.4, 'rows': [{}]})
    out = ladder_step(tmp_path, node, slow, pairwise=pairwise, culprit_ports=ports)
    assert [(f['host'], f['device'], f['check']) for f in out['findings']] == [
        ('node03', None, 'busbw'), ('node03', None, 'pairwise'), ('node03', 5, 'scaling')]
    assert out['findings'][2]['msg'].startswith('node03 NPU 5: the AllReduce over 4 nodes (node01, node02, node03, node04) '
                                                'reaches 45 GB/s, 32.9 % of the one-node figure 136.9 GB/s, below 70 %')
    with open(out['path'], encoding='utf-8') as handle:
        stored = json.load(handle)
    assert stored['findings'] == out['findings']
    assert [r['efficiency_pct'] for r in stored['data']['scaling']['rungs']] == [100.0, 99.6, 32.9]


def test_the_ladder_is_not_measured_when_off_in_check_mode_or_without_the_benchmark_of_the_pod(tmp_path):
    node = Node()
    out = step(tmp_path, node, step='pod', phase='after', hosts=FOUR, result=AT_GATE, expected=STAGE3,
               ladder=dict(LADDER, enabled=False), bench=RUNG_BENCH)
    assert node.calls == [] and out['findings'] == []
    out = ladder_step(tmp_path, node, {'changed': False, 'skipped': True, 'msg': 'skipped in check mode'}, check_mode=True)
    assert node.calls == []
    failed = ladder_step(tmp_path, node, {'failed': False, 'msg': 'mpirun: cannot read host file'})
    assert node.calls == []
    with open(failed['path'], encoding='utf-8') as handle:
        scaling = json.load(handle)['data']['scaling']
    assert scaling['skipped'] is True and scaling['msg'] == ('the ladder did not run: the benchmark of the PoD did not '
                                                             'measure (mpirun: cannot read host file)')


def test_the_operators_rungs_are_measured_and_a_bad_one_fails_the_step(tmp_path):
    node = Node({'peak_busbw_gb_s': 136.9, 'rows': [{}]}, {'peak_busbw_gb_s': 136.0, 'rows': [{}]})
    step(tmp_path, node, step='pod', phase='after', hosts=FOUR, result=AT_GATE, expected=STAGE3, bench=RUNG_BENCH,
         ladder=dict(LADDER, rungs=['3', 8]))
    assert [call[1]['hosts'] for call in node.calls] == [['node01'], ['node01', 'node02', 'node03']]
    with pytest.raises(AnsibleError, match='a rung .a node count. must be an integer of at least 1'):
        step(tmp_path, Node(), step='pod', phase='after', hosts=FOUR, result=AT_GATE, ladder=dict(LADDER, rungs=[0]))


def test_a_rung_that_did_not_run_has_no_figure_and_the_ladder_goes_on(tmp_path):
    node = Node({'peak_busbw_gb_s': 136.9, 'rows': [{}]}, {'failed': True, 'msg': 'node02: mpirun exited 1'})
    out = ladder_step(tmp_path, node, AT_GATE)
    with open(out['path'], encoding='utf-8') as handle:
        rungs = json.load(handle)['data']['scaling']['rungs']
    assert [(r['nodes'], r['busbw_gb_s'], r['msg']) for r in rungs][1] == (2, None, 'node02: mpirun exited 1')
    assert out['findings'] == []


# ---- pod: each rail on its own after the change ---------------------------------------------------------------------

RAILS = {'mode': 'auto', 'min_pct': 85.0, 'devices': [0, 1, 2, 3], 'line_rate': 25.0}
SLOW = {'peak_busbw_gb_s': 18.0, 'rows': [{}], 'below_band': True,
        'band': {'low_gb_s': 109.76, 'percent': [80.0, 100], 'theory_gb_s': 137.2}}


def rail_runs(*figures, hosts=('mpi-node01', 'mpi-node02')):
    return {'changed': False, 'runs': [{'device': d, 'hosts': list(hosts), 'peak_busbw_gb_s': b, 'ranks': len(hosts)}
                                       for d, b in enumerate(figures)]}


def rails_step(tmp_path, node, result, rails=None, hosts=('node01', 'node02'), **args):
    return step(tmp_path, node, step='pod', phase='after', hosts=list(hosts), result=result, expected=STAGE3,
                rails=dict(RAILS, **(rails or {})), bench=dict(RUNG_BENCH, theory_busbw=137.2, band=[80.0, 100]),
                mpi_hosts=dict((h, 'mpi-' + h) for h in hosts), host='node01', **args)


def test_below_the_gate_the_rails_are_measured_in_one_call_and_the_slow_one_is_a_finding(tmp_path):
    node = Node(rail_runs(22.47, 22.47, 22.47, 2.25))
    out = rails_step(tmp_path, node, SLOW)
    # one hccl_bench call: the rails, the PoD's MPI names, one NPU per node, the options of bench at its largest size
    assert node.names() == ['hccl_bench']
    args = node.calls[0][1]
    assert (args['rails'], args['hosts'], args['npus']) == ([0, 1, 2, 3], ['mpi-node01', 'mpi-node02'], 1)
    assert (args['min_bytes'], args['max_bytes'], args['fail_below_band']) == ('1G', '1G', False)
    assert (args['theory_busbw'], args['band']) == (25.0, [85.0, 100.0])
    assert 'host_groups' not in args
    rail = [f for f in out['findings'] if f['check'] == 'crossnode_rail']
    assert [(f['host'], f['device'], f['value'], f['severity']) for f in rail] == [('node01', 3, 9.0, 'fail')]
    assert rail[0]['msg'].startswith('node01 NPU 3: rail 3 (NPU 3 of node01, node02, each over its own port) reaches '
                                     '2.25 GB/s, 9 % of the 25 GB/s one port is expected to carry')
    with open(out['path'], encoding='utf-8') as handle:
        stored = json.load(handle)
    rails = stored['data']['rails']
    assert (rails['mode'], rails['why'], rails['expected_gb_s'], rails['devices']) == (
        'auto', "the PoD's benchmark is below its gate", 25.0, [0, 1, 2, 3])
    assert [(r['device'], r['pct_of_expected']) for r in rails['rails']] == [(0, 89.9), (1, 89.9), (2, 89.9), (3, 9.0)]
    assert rail[0] in stored['findings']


def test_auto_at_the_gate_measures_no_rail_and_always_does(tmp_path):
    node = Node()
    out = rails_step(tmp_path, node, AT_GATE)
    assert node.calls == [] and out['findings'] == []
    with open(out['path'], encoding='utf-8') as handle:
        rails = json.load(handle)['data']['rails']
    assert rails['skipped'] is True and rails['msg'].startswith("the rails are not measured: the PoD's benchmark reached")
    node = Node(rail_runs(22.4, 22.4))
    out = rails_step(tmp_path, node, AT_GATE, rails={'mode': 'always', 'devices': ['0', '1']})
    assert node.names() == ['hccl_bench'] and node.calls[0][1]['rails'] == [0, 1]
    assert out['findings'] == []
    # without devices, every NPU the benchmark uses
    node = Node(rail_runs(*([22.4] * 8)))
    rails_step(tmp_path, node, AT_GATE, rails={'mode': 'always', 'devices': []})
    assert node.calls[0][1]['rails'] == list(range(8))


def test_auto_measures_the_rails_when_the_ladder_has_a_finding(tmp_path):
    # the PoD at its gate, but rung 2 of 4 is below 70 % of the one-node rung: the ladder's finding, then the rails
    node = Node({'peak_busbw_gb_s': 136.9, 'rows': [{}]}, {'peak_busbw_gb_s': 60.0, 'rows': [{}]},
                rail_runs(22.4, 22.4, 22.4, 22.4, 6.0, hosts=['mpi-' + h for h in FOUR]))
    out = rails_step(tmp_path, node, AT_GATE, hosts=FOUR, ladder=LADDER,
                     rails={'devices': [0, 1, 2, 3, 4]})
    assert node.names() == ['hccl_bench'] * 3
    assert node.calls[2][1]['hosts'] == ['mpi-' + h for h in FOUR] and node.calls[2][1]['rails'] == [0, 1, 2, 3, 4]
    assert [f['check'] for f in out['findings']] == ['scaling', 'scaling', 'crossnode_rail']
    assert (out['findings'][2]['host'], out['findings'][2]['device']) == ('node01', 4)
    with open(out['path'], encoding='utf-8') as handle:
        assert json.load(handle)['data']['rails']['why'] == 'the scaling ladder has a finding'


def test_the_rails_are_not_measured_when_off_in_check_mode_or_on_one_node_and_a_failed_call_is_a_warning(tmp_path):
    node = Node()
    out = rails_step(tmp_path, node, SLOW, rails={'mode': 'off'})
    assert node.calls == [] and [f['check'] for f in out['findings']] == ['busbw']
    out = rails_step(tmp_path, node, {'changed': False, 'skipped': True, 'msg': 'skipped in check mode'},
                     rails={'mode': 'always'}, check_mode=True)
    assert node.calls == [] and out['findings'] == []
    with open(out['path'], encoding='utf-8') as handle:
        assert json.load(handle)['data']['rails']['msg'] == 'the rails do not run in check mode'
    out = rails_step(tmp_path, node, SLOW, rails={'mode': 'always'}, hosts=('node01',))
    assert node.calls == []
    node = Node({'failed': True, 'msg': 'hccl_bench: rails holds 64: an NPU id is 0-63. Nothing ran.'})
    out = rails_step(tmp_path, node, SLOW, rails={'mode': 'always'})
    rail = [f for f in out['findings'] if f['check'] == 'crossnode_rail']
    assert [(f['host'], f['device'], f['severity']) for f in rail] == [('node01', None, 'warn')]
    assert rail[0]['msg'] == ('node01: the rails (NPU 0, 1, 2, 3 of node01, node02) did not run: hccl_bench: rails holds '
                              '64: an NPU id is 0-63. Nothing ran.')
    with pytest.raises(AnsibleError, match="rails.mode must be one of auto, always, off, got 'sometimes'"):
        rails_step(tmp_path, Node(), SLOW, rails={'mode': 'sometimes'})
