"""npuops.ascend.stage_baseline: stage 1 on each node in one task - health_info and version_info once each, the snapshot
as the role wrote it, a part that cannot be read stopping the node with the tool's words, the node's record with the NPU
models - and, once, the check of the benchmark's runs recording every node again. The NPU read is made by run_module
from real samples; the runs printed real training-log lines."""

from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleActionFail
from ansible.plugins.filter.core import to_nice_json

from ansible_collections.npuops.ascend.plugins.action import stage_baseline as action
from ansible_collections.npuops.ascend.plugins.plugin_utils import store
from ansible_collections.npuops.ascend.tests.unit.plugins.action import stage_actions
from ansible_collections.npuops.ascend.tests.unit.plugins.modules import conftest as modules_conftest
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import sample
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils.node_reads import npu_read

run_module = modules_conftest.run_module
RUN = 'R1'
HEALTH_INFO = 'npuops.ascend.health_info'
VERSION_INFO = 'npuops.ascend.version_info'
PORTS = {'devices': {'0': {'mtu': 1500}}, 'config': [{'device': 0, 'mtu': 1500, 'tls': False, 'gateway': None}]}
STACK = {'changed': False, 'driver': '23.0.7', 'fingerprint': 'f1', 'warnings': [], 'deprecations': []}
MIXTRAL = sample('train_log/train_log/megatron_lm_h100_mixtral_throughput')


@pytest.fixture
def npu(run_module):
    return npu_read(run_module, subsets=('board', 'health', 'processes'))


def snapshot_read(npu, **parts):
    out = {'changed': False, 'npu': npu, 'ports': PORTS, 'failed_parts': [], 'warnings': []}
    out.update(parts)
    return out


def node_step(tmp_path, node, modules, check_mode=False, calls=None, **extra):
    args = dict(step='node', run_dir=str(tmp_path / RUN), run_id=RUN, **extra)
    plugin = stage_actions.make_action(action.ActionModule, args, check_mode, lambda name: modules[name], calls)
    return stage_actions.run_step(plugin, {'inventory_hostname': node})


def runs_step(tmp_path, active, check_mode=False, **extra):
    args = dict(step='runs', run_dir=str(tmp_path / RUN), run_id=RUN, **extra)
    plugin = stage_actions.make_action(action.ActionModule, args, check_mode, lambda name: {})
    return stage_actions.run_step(plugin, {'inventory_hostname': active[0], 'ansible_play_hosts': active})


def read_json(path):
    with open(path, encoding='utf-8') as handle:
        return json.load(handle)


def test_the_node_step_reads_once_writes_the_snapshot_and_records_the_npu_models(tmp_path, npu):
    calls = []
    result = node_step(tmp_path, 'node01', {HEALTH_INFO: snapshot_read(npu), VERSION_INFO: STACK}, calls=calls,
                       stage0_chip_names=['910B3', '910B4'])
    assert calls == [(HEALTH_INFO, action.SNAPSHOT_READ), (VERSION_INFO, {})]
    assert action.SNAPSHOT_READ == {'npu_subset': ['board', 'health', 'usages', 'processes'], 'health_view': 'all',
                                    'ecc_again': False, 'host': False,
                                    'port_queries': ['link', 'ip', 'gateway', 'mtu', 'pfc', 'dscp_to_tc', 'tls']}
    assert result['changed'] is False and 'failed' not in result
    path = tmp_path / RUN / 'stage1-baseline' / 'node01.snapshot.json'
    assert result['snapshot'] == str(path)
    stack = {'changed': False, 'driver': '23.0.7', 'fingerprint': 'f1', 'failed': False}
    expected = {'host': 'node01', 'run': RUN, 'npu': npu, 'ports': PORTS['config'], 'stack': stack}
    assert path.read_text(encoding='utf-8') == to_nice_json(expected) + '\n'
    # the models of the snapshot first, then those only stage 0 saw, each once
    models = npu['summary']['product']['chip_names']
    assert models == ['910B3'] and result['chip_names'] == ['910B3', '910B4']
    record = read_json(tmp_path / RUN / 'nodes' / 'node01' / 'stage1.json')
    assert record == result['record'] and record['status'] == 'skipped' and record['data'] == {'chip_names': ['910B3', '910B4']}


def test_a_part_that_cannot_be_read_stops_the_node_with_the_tool_words(tmp_path, npu):
    read = snapshot_read(npu, ports={'failed': True, 'msg': 'node02: hccn_tool not found'}, failed_parts=['ports'])
    calls = []
    result = node_step(tmp_path, 'node02', {HEALTH_INFO: read, VERSION_INFO: STACK}, calls=calls)
    assert result['failed'] is True and result['msg'] == 'Stage 1 could not read node02 for its snapshot: node02: hccn_tool not found'
    assert len(calls) == 1 and not (tmp_path / RUN / 'nodes' / 'node02' / 'stage1.json').exists()
    assert not (tmp_path / RUN / 'stage1-baseline').exists()


def test_a_module_that_fails_fails_the_task_as_it_did(tmp_path, npu):
    broken = {'failed': True, 'msg': 'node02: the module failed', '_ansible_no_log': False}
    assert node_step(tmp_path, 'node02', {HEALTH_INFO: broken}) == {'failed': True, 'msg': 'node02: the module failed'}
    result = node_step(tmp_path, 'node02', {HEALTH_INFO: snapshot_read(npu), VERSION_INFO: broken})
    assert result == {'failed': True, 'msg': 'node02: the module failed'}
    assert not (tmp_path / RUN / 'nodes' / 'node02' / 'stage1.json').exists()


def test_without_the_snapshot_the_node_is_recorded_with_what_stage_0_read(tmp_path):
    calls = []
    result = node_step(tmp_path, 'node01', {}, calls=calls, snapshot=False, stage0_chip_names=['910B2'])
    assert calls == [] and 'snapshot' not in result
    assert result['record']['data'] == {'chip_names': ['910B2']} and result['record']['status'] == 'skipped'


def test_a_product_without_roce_ports_has_no_port_in_its_snapshot(tmp_path, npu):
    read = snapshot_read(npu, ports={'skipped': True, 'msg': 'no RoCE port'})
    node_step(tmp_path, 'node01', {HEALTH_INFO: read, VERSION_INFO: STACK})
    assert read_json(tmp_path / RUN / 'stage1-baseline' / 'node01.snapshot.json')['ports'] == []


def runs(factors):
    return [{'changed': False, 'rc': 0, 'stdout': MIXTRAL, 'stderr': '', 'baseline_run': index, 'failed': False}
            for index, dummy in enumerate(factors, 1)]


def test_the_runs_step_records_every_node_again_with_its_own_findings(tmp_path):
    for node in ('node01', 'node02'):
        node_step(tmp_path, node, {}, snapshot=False, stage0_chip_names=['910B3'])
    failed_run = {'changed': False, 'rc': 1, 'stdout': '', 'stderr': 'out of memory', 'baseline_run': 1, 'failed': False}
    result = runs_step(tmp_path, ['node01', 'node02', 'node03'], results=[failed_run], host='node01', warmup=16)
    assert result['measured'] is False and [f['host'] for f in result['findings']] == ['node01']
    assert result['missing'] == ['node03'] and len(result['records']) == 2
    one = read_json(tmp_path / RUN / 'nodes' / 'node01' / 'stage1.json')
    two = read_json(tmp_path / RUN / 'nodes' / 'node02' / 'stage1.json')
    # nothing measured: skipped, the failure of the run kept in the record of the node it ran on only
    assert one['status'] == 'skipped' and one['failures'] and one['data'] == {'chip_names': ['910B3']}
    assert two['status'] == 'skipped' and two['failures'] == [] and two['findings'] == []
    # measured runs: passed
    result = runs_step(tmp_path, ['node01', 'node02'], results=runs([1.0, 1.0]), host='node01', warmup=16, min_steps=1)
    assert result['measured'] is True
    assert store.read_record(str(tmp_path / RUN), RUN, 'node01', 1)[0]['status'] == 'passed'
    assert 'measured' in result['msg']


def test_the_runs_step_without_runs_says_why(tmp_path):
    node_step(tmp_path, 'node01', {}, snapshot=False)
    result = runs_step(tmp_path, ['node01'], host='node01', check_mode=True)
    assert result['measured'] is False
    assert result['msg'] == 'recorded stage 1 (baseline) of 1 node(s): not measured (no benchmark ran (baseline_command is empty))'
    assert read_json(tmp_path / RUN / 'nodes' / 'node01' / 'stage1.json')['check_mode'] is True


def test_a_bad_figure_is_refused_with_the_words_of_the_check(tmp_path):
    with pytest.raises(AnsibleActionFail, match='baseline_measure: warmup must be an integer of at least 0'):
        runs_step(tmp_path, ['node01'], results=runs([1.0]), host='node01', warmup=-1)


def profiled(comm, free, util):
    """profile_info's result for one profiled step of rank 0 on NPU 2 (a 1 s step)."""
    return {'changed': False, 'dirs': [{'path': '/prof/a_ascend_pt/ASCEND_PROFILER_OUTPUT', 'rank': 0}],
            'steps': [{'rank': 0, 'device_id': 2, 'step': '49', 'step_time_us': 1e6, 'comm_not_overlapped_us': comm * 1e4,
                       'compute_share_pct': 100.0 - comm - free, 'comm_share_pct': comm, 'free_share_pct': free,
                       'aicore_util_pct': util, 'aicore_from': 'kernel_details'}],
            'summary': {'comm_share_pct': comm}, 'errors': []}


def test_the_runs_step_keeps_the_profile_split_in_the_host_record(tmp_path):
    for node in ('node01', 'node02'):
        node_step(tmp_path, node, {}, snapshot=False, stage0_chip_names=['910B3'])
    result = runs_step(tmp_path, ['node01', 'node02'], results=runs([1.0, 1.0]), host='node01', warmup=16, min_steps=1,
                       profile=profiled(24.0, 3.0, 72.0), profile_comm_max_pct=15)
    kept = result['profile']
    assert kept['bottleneck']['layer'] == 'communication'
    assert sorted(f['check'] for f in result['findings']) == ['profile_aicore_util', 'profile_comm_share']
    one = read_json(tmp_path / RUN / 'nodes' / 'node01' / 'stage1.json')
    two = read_json(tmp_path / RUN / 'nodes' / 'node02' / 'stage1.json')
    assert one['data']['profile']['steps'][0]['comm_share_pct'] == 24.0 and 'profile' not in two['data']
    # a warning, not a failure: the stage passes, the message names node and NPU
    assert one['status'] == 'passed' and any('node01 NPU 2' in text and '24.0 %' in text for text in one['warnings'])
    # a profile that could not be read: a warning naming the host, no split
    failed = {'failed': True, 'msg': 'profile_info: /prof is not a directory.'}
    result = runs_step(tmp_path, ['node01'], results=runs([1.0, 1.0]), host='node01', warmup=16, min_steps=1,
                       profile=failed)
    assert result['profile']['error'] == failed['msg'] and result['findings'][0]['check'] == 'profile_read'
    # failed_when false leaves failed false on a read that failed: no step figures is still a failed read
    suppressed = {'failed': False, 'failed_when_result': False, 'rc': 127, 'msg': 'Module result deserialization failed'}
    result = runs_step(tmp_path, ['node01'], results=runs([1.0, 1.0]), host='node01', warmup=16, min_steps=1,
                       profile=suppressed)
    assert result['findings'][0]['msg'] == ('node01: the profiler output could not be read: Module result '
                                            'deserialization failed')
    # without a profile nothing is kept
    assert runs_step(tmp_path, ['node01'], results=runs([1.0, 1.0]), host='node01', warmup=16,
                     min_steps=1)['profile'] is None
