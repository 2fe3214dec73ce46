"""The gate: its verdict over the run's records, its message, the finding of a lost node, and the run's summary lines."""

from __future__ import annotations

import pytest

from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import finding
from ansible_collections.npuops.ascend.plugins.plugin_utils import store
from ansible_collections.npuops.ascend.plugins.plugin_utils.gate import (
    gate_message,
    lost_limit,
    lost_node_finding,
    lost_problems,
    summary_lines,
    verdict,
)
from ansible_collections.npuops.ascend.plugins.plugin_utils.health import health_findings
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils import node_reads
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils.node_reads import LINK_DOWN, ports_read

# pytest finds fixtures by name in this module's namespace
host_read = node_reads.host_read
node = node_reads.node

MTU = 'MTU is 1500, expected 9000 (npuops_mtu)'
PFC = 'PFC is not enabled on priority 4 (enabled: none), so HCCL_RDMA_SL=4 traffic is not lossless'


def test_gate_message_names_every_failing_node_and_leaves_warnings_out(node, run_module, host_read):
    data = node(ports=ports_read(run_module, link_3=LINK_DOWN), host_info=host_read(swappiness='60\n'))
    found = health_findings(data) + [lost_node_finding('node-09')]
    assert gate_message(found, 0, 'health_check') == (
        'Stage 0 (health_check) gate failed on 2 node(s) (node-07, node-09): node-07 NPU 3: link is DOWN, expected UP; '
        'node-09: the node dropped out before the gate (unreachable, or a task failed on it); see the errors above')


def test_gate_message_when_nothing_failed(node, host_read):
    found = health_findings(node(host_info=host_read(swappiness='60\n')))
    assert [f['severity'] for f in found] == ['warn']
    assert gate_message(found, 2, 'version_check') == 'stage 2 (version_check): gate passed'
    assert gate_message(None, 3, 'hccl_bench') == 'stage 3 (hccl_bench): gate passed'


def test_gate_message_says_each_failure_once_with_its_nodes_and_npus():
    found = ([finding(host, dev, 'mtu', 1500, 9000, MTU) for host in ('node02', 'node01') for dev in range(8)]
             + [finding('node03', 4, 'pfc', [], [4], PFC), finding('node03', 5, 'pfc', [3, 4], [4], 'PFC on 3, 4', 'warn'),
                lost_node_finding('node09')])
    assert gate_message(found, 4, 'roce_lossless') == (
        'Stage 4 (roce_lossless) gate failed on 4 node(s) (node01, node02, node03, node09): node02, node01 NPU 0-7: MTU is '
        '1500, expected 9000 (npuops_mtu); node03 NPU 4: %s; node09: the node dropped out before the gate (unreachable, or a '
        'task failed on it); see the errors above' % PFC)


def test_lost_node_finding():
    assert lost_node_finding('node-09') == {
        'host': 'node-09', 'device': None, 'check': 'reachable', 'value': None, 'expected': None, 'severity': 'fail',
        'msg': 'node-09: the node dropped out before the gate (unreachable, or a task failed on it); see the errors above'}


def gate_result(stage, role, status, failures=(), warnings=()):
    """A node's stage in summary.json."""
    return {'stage': stage, 'role': role, 'status': status, 'failures': list(failures), 'warnings': list(warnings)}


SUMMARY = {'run': 'r1', 'check_mode': False, 'nodes': {
    'node02': {'stage0': gate_result(0, 'health_check', 'failed', failures=['a', 'b']),
               'stage10': gate_result(10, 'tuning', 'skipped')},
    'node01': {'stage0': gate_result(0, 'health_check', 'passed', warnings=['node01: vm.swappiness is 60']),
               'stage2': gate_result(2, 'version_check', 'passed')},
    'node03': {},
}}


def test_summary_lines():
    lines = summary_lines(SUMMARY)
    assert lines == [
        'node01       stage0 health_check   passed (1 warning(s))',
        'node01       stage2 version_check  passed',
        'node02       stage0 health_check   failed (2 failure(s))',
        'node02       stage10 tuning         skipped',
        'node03       no stage ran',
    ]
    assert summary_lines(None) == []


# ---- the verdict over the records of the run's store -------------------------------------------------------------------

def test_the_verdict_reads_node_and_pod_records_and_names_lost_and_unrecorded_nodes(tmp_path):
    run_dir = str(tmp_path / 'R1')
    mtu = finding('node01', 3, 'mtu', 1500, 9000, MTU)
    warn = finding('node02', None, 'swappiness', 60, 10, 'vm.swappiness is 60', severity='warn')
    store.write_record(run_dir, store.make_record('R1', 'node01', 2, 'version_check', [mtu]))
    store.write_record(run_dir, store.make_record('R1', 'node02', 2, 'version_check', [warn]))
    outlier = finding('node02', None, 'driver', '24.1.0', '25.2.0', 'driver is 24.1.0 while 1 other node(s) have 25.2.0')
    store.write_pod_record(run_dir, store.make_pod_record('R1', 2, 'version_check', [outlier]))
    outcome = verdict(run_dir, 'R1', 2, 'version_check', ['node01', 'node02', 'node03', 'node04'],
                      ['node01', 'node02', 'node03'])
    assert outcome['passed'] is False
    assert outcome['msg'] == (
        'Stage 2 (version_check) gate failed on 4 node(s) (node01, node02, node03, node04): node01 NPU 3: ' + MTU
        + '; node02: driver is 24.1.0 while 1 other node(s) have 25.2.0; node03: no record of stage 2 in the run store ('
        + run_dir + '/nodes/node03/stage2.json): the stage did not record a result for this node; node04: the node '
        'dropped out before the gate (unreachable, or a task failed on it); see the errors above')
    assert outcome['warnings'] == ['node02: vm.swappiness is 60']
    assert outcome['nodes'] == ['node01', 'node02']


def test_the_verdict_passes_on_records_without_failures_and_stops_on_a_foreign_pod_record(tmp_path):
    run_dir = str(tmp_path / 'R1')
    for node in ('node01', 'node02'):
        store.write_record(run_dir, store.make_record('R1', node, 0, 'health_check', []))
    outcome = verdict(run_dir, 'R1', 0, 'health_check', ['node01', 'node02'], ['node01', 'node02'])
    assert (outcome['passed'], outcome['msg']) == (True, 'Stage 0 (health_check) gate passed on 2 node(s).')
    store.write_pod_record(run_dir, store.make_pod_record('R0', 0, 'health_check', []))
    with pytest.raises(store.StoreError, match='stage 0 .health_check.: the PoD record of stage 0 .* is of run R0'):
        verdict(run_dir, 'R1', 0, 'health_check', ['node01', 'node02'], ['node01', 'node02'])


# ---- lost nodes (npuops_max_lost_nodes) ------------------------------------------------------------------------------

FOUR = ['node01', 'node02', 'node03', 'node04']


def recorded(run_dir, stage, role, nodes):
    for node in nodes:
        store.write_record(run_dir, store.make_record('R1', node, stage, role, []))


@pytest.mark.parametrize('value, total, limit', [
    (0, 10, 0), ('0', 10, 0), ('0%', 10, 0), (1, 10, 1), ('2', 10, 2), ('25%', 10, 2), ('5%', 10, 0), ('100%', 3, 3),
    ('x', 10, 0), (None, 10, 0)])
def test_lost_limit(value, total, limit):
    assert lost_limit(value, total) == limit


@pytest.mark.parametrize('value, ok', [
    (0, True), ('3', True), (' 5% ', True), ('100%', True), ('0%', True), ('101%', False), (-1, False), ('-1', False),
    ('1.5', False), ('x', False), (True, False), (None, False), ('5 %', True), ('%', False)])
def test_lost_problems(value, ok):
    problems = lost_problems(value)
    assert (problems == []) is ok, problems
    if not ok:
        assert problems[0].startswith('npuops_max_lost_nodes %r is not a number of nodes: give a whole number from 0' % (value,))


def test_without_a_limit_a_lost_node_fails_the_gate_as_before(tmp_path):
    run_dir = str(tmp_path / 'R1')
    recorded(run_dir, 0, 'health_check', FOUR[:3])
    outcome = verdict(run_dir, 'R1', 0, 'health_check', FOUR, FOUR[:3], failed=[], max_lost=0)
    assert outcome['passed'] is False and outcome['lost'] == []
    assert outcome['msg'].endswith('node04: the node dropped out before the gate (unreachable, or a task failed on it); '
                                   'see the errors above')
    assert store.read_lost(run_dir, 'R1', FOUR) == {}


def test_a_node_lost_below_the_limit_is_named_once_and_the_run_goes_on(tmp_path):
    run_dir = str(tmp_path / 'R1')
    recorded(run_dir, 0, 'health_check', FOUR[:3])
    outcome = verdict(run_dir, 'R1', 0, 'health_check', FOUR, FOUR[:3], failed=[], max_lost=1)
    assert outcome['passed'] is True and outcome['lost'] == ['node04']
    assert outcome['msg'] == 'Stage 0 (health_check) gate passed on 3 node(s).'
    assert outcome['warnings'] == ['node04: lost before the gate of stage 0 (health_check): unreachable; the run goes on '
                                   'without it (1 of at most 1 lost node(s), npuops_max_lost_nodes)']
    assert store.read_lost(run_dir, 'R1', FOUR)['node04']['stage'] == 0
    # the next stage's gate: still out of the play, already named
    recorded(run_dir, 2, 'version_check', FOUR[:3])
    outcome = verdict(run_dir, 'R1', 2, 'version_check', FOUR, FOUR[:3], failed=[], max_lost=1)
    assert (outcome['passed'], outcome['warnings'], outcome['lost']) == (True, [], [])
    document = store.summary(run_dir, 'R1', FOUR)
    assert document['lost'] == {'node04': {'stage': 0, 'role': 'health_check'}}
    assert [line for line in summary_lines(document) if 'lost' in line] == [
        'node04       lost before the gate of stage0 health_check (unreachable); the run went on without it']


def test_more_lost_nodes_than_the_limit_stop_the_run_naming_them(tmp_path):
    run_dir = str(tmp_path / 'R1')
    recorded(run_dir, 0, 'health_check', FOUR[:2])
    outcome = verdict(run_dir, 'R1', 0, 'health_check', FOUR, FOUR[:2], failed=[], max_lost='25%')
    assert outcome['passed'] is False and outcome['lost'] == []
    assert outcome['msg'] == ('Stage 0 (health_check) gate failed on 2 node(s) (node03, node04): node03, node04: 2 node(s) '
                              'lost (node03, node04), more than npuops_max_lost_nodes allows (1 of 4 node(s)); the run stops')
    assert store.read_lost(run_dir, 'R1', FOUR) == {}


def test_a_node_a_task_failed_on_is_never_a_lost_node(tmp_path):
    run_dir = str(tmp_path / 'R1')
    recorded(run_dir, 1, 'baseline', FOUR[:3])
    outcome = verdict(run_dir, 'R1', 1, 'baseline', FOUR, FOUR[:3], failed=['node04'], max_lost=2)
    assert outcome['passed'] is False and outcome['lost'] == []
    assert 'node04: the node dropped out before the gate' in outcome['msg']
    # unknown failed hosts: every node that dropped out counts as failed
    outcome = verdict(run_dir, 'R1', 1, 'baseline', FOUR, FOUR[:3], failed=None, max_lost=2)
    assert outcome['passed'] is False


def test_a_lost_record_of_another_run_is_not_used(tmp_path):
    run_dir = str(tmp_path / 'R1')
    store.write_lost(run_dir, store.make_lost('R0', 'node04', 0, 'health_check'))
    assert store.read_lost(run_dir, 'R1', ['node04']) == {}
    assert 'lost' not in store.summary(run_dir, 'R1', FOUR)
