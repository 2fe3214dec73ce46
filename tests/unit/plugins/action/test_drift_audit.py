"""npuops.ascend.drift_audit: a node's audit reads in four module runs (the reads outside check mode, cpu_governor and
mindie_config in check mode, so they only say what would change), compares with the newest applied records of the
report directory, writes the node's audit record; the PoD step fails from the node records alone."""

from __future__ import annotations

import json
import os

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.npuops.ascend.plugins.action import drift_audit as action
from ansible_collections.npuops.ascend.plugins.plugin_utils import node_files, store
from ansible_collections.npuops.ascend.tests.unit.plugins.action import stage_actions
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils.roce_samples import info, port

H = 'node02'
ENV_FILE = '/etc/profile.d/npuops-hccl.sh'
CONF = '/etc/hccn.conf'
ENV_TEXT = 'export HCCL_RDMA_SL=4\nexport HCCL_RDMA_TC=132\n'
MAP = '/etc/npuops/numa-bind.json'
WANT = [{'device': d, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': [{'dscp': 33, 'tc': 3}]} for d in range(8)]


def applied(report_dir, run, stage, data, check_mode=False):
    record = store.make_record(run, H, stage, 'role', [], check_mode=check_mode, data=data)
    store.write_record(os.path.join(report_dir, run), record)


@pytest.fixture
def report_dir(tmp_path):
    directory = str(tmp_path / 'reports')
    applied(directory, 'r1', 4, {'plan': {'after': WANT}})
    applied(directory, 'r1', 5, {'env': [['HCCL_RDMA_SL', '4'], ['HCCL_RDMA_TC', '132']],
                                 'files': [{'kind': 'hccl_env', 'path': ENV_FILE, 'checksum': node_files.checksum(ENV_TEXT),
                                            'owner': 'root', 'group': 'root', 'mode': '0644'}]})
    applied(directory, 'r1', 6, {'files': [{'kind': 'map', 'path': MAP, 'checksum': node_files.checksum('{}\n'),
                                            'owner': 'root', 'group': 'root', 'mode': '0644'}]})
    applied(directory, 'r1', 7, {'engine': 'mindie', 'file': '/c.json', 'settings': {'maxBatchSize': 200}})
    applied(directory, 'r2', 4, {'plan': {'after': []}}, check_mode=True)  # a dry run after it: not compared
    return directory


def stat(text, mode='0644'):
    return {'exists': True, 'isreg': True, 'islnk': False, 'mode': mode, 'uid': 0, 'gid': 0, 'pw_name': 'root',
            'gr_name': 'root', 'checksum': node_files.checksum(text)}


ANSWERS = {
    'npuops.ascend.health_info': {
        'ports': info(npu1=port(pfc_priorities=[])),
        'host_info': {'swappiness': 10, 'transparent_hugepage': 'never'},
        'env_files': {ENV_FILE: {'exists': True, 'variables': {'HCCL_RDMA_SL': '4', 'HCCL_RDMA_TC': '132'}},
                      CONF: {'exists': True, 'variables': dict(('address_%d' % d, '10.20.%d.11' % d) for d in range(8))}}},
    'npuops.ascend.path_info': {'paths': [{'path': ENV_FILE, 'stat': stat(ENV_TEXT)}, {'path': MAP, 'stat': stat('{}\n')}]},
    'npuops.ascend.cpu_governor': {'changed': True, 'before': {'0': 'ondemand', '1': 'ondemand'}, 'changed_cpus': '0-1'},
    'npuops.ascend.mindie_config': {'changed': False, 'changes': []},
}


def run(report_dir, step='node', answers=None, **extra):
    answers = answers or ANSWERS
    args = dict(step=step, report_dir=report_dir, audit_id='a1', **extra)
    calls = []
    plugin = stage_actions.make_action(action.ActionModule, args, False, lambda name: answers[name])
    fake = plugin._execute_module

    def execute(module_name, module_args, task_vars):
        calls.append((module_name, plugin._task.check_mode, module_args))
        return fake(module_name, module_args, task_vars)

    plugin._execute_module = execute
    return stage_actions.run_step(plugin, {'inventory_hostname': H}), calls


NODE = dict(devices=list(range(8)), want=WANT, hccl_env_file=ENV_FILE, hccn_conf=CONF, governor='performance',
            max_swappiness=10, thp_mode='never')


def test_a_node_read_in_four_module_runs_the_changing_ones_in_check_mode(report_dir):
    result, calls = run(report_dir, **NODE)
    assert [(name, check) for name, check, _args in calls] == [
        ('npuops.ascend.health_info', False), ('npuops.ascend.path_info', False),
        ('npuops.ascend.cpu_governor', True), ('npuops.ascend.mindie_config', True)]
    health = calls[0][2]
    assert health['npu'] is False and health['port_queries'] == ['dscp_to_tc', 'mtu', 'pfc']
    assert health['env_files'] == [ENV_FILE, CONF]
    assert calls[3][2] == {'path': '/c.json', 'settings': {'maxBatchSize': 200}, 'model_index': 0}
    assert [(f['device'], f['check']) for f in result['findings']] == [(1, 'pfc_priorities'), (None, 'governor')]
    assert result['compared'] == {4: 'run r1', 5: 'run r1', 6: 'run r1', 7: 'run r1'}  # the dry run r2 is skipped
    assert result['changed'] is False and 'failed' not in result and result['msg'] == 'node02: 2 setting(s) drifted'
    with open(result['path'], encoding='utf-8') as handle:
        document = json.load(handle)
    assert document['status'] == 'drift' and document['persistence']['restored'] == ['address']


def test_the_pod_step_fails_naming_what_drifted_from_the_node_records(report_dir):
    run(report_dir, **NODE)
    result, calls = run(report_dir, step='pod', nodes=[H, 'node01'], metrics_file='')
    assert calls == []  # nothing is read on a node
    assert result['metrics'] == os.path.join(report_dir, 'audit', 'a1', 'metrics.prom')
    with open(result['metrics'], encoding='utf-8') as handle:
        text = handle.read()
    assert 'npuops_audit_drift_findings{node="node02"} 2' in text and 'npuops_audit_node_lost{node="node01"} 1' in text
    assert result['failed'] is True and result['drifted'] == [H]
    assert 'node02 NPU 1: pfc_priorities is [], expected [4] (run r1 set [4])' in result['msg']
    assert 'not audited: node01 (no audit record: the node was not read' in result['msg']
    assert os.path.isfile(os.path.join(report_dir, 'audit', 'a1', 'audit.md'))


def test_without_an_applied_run_only_the_intent_is_compared(tmp_path):
    result, calls = run(str(tmp_path), **NODE)
    # the HCCL env file is still examined (a link or write bits for others count without a run that wrote it)
    names = [name for name, _check, _args in calls]
    assert names == ['npuops.ascend.health_info', 'npuops.ascend.path_info', 'npuops.ascend.cpu_governor']
    assert [(f['device'], f['check']) for f in result['findings']] == [(1, 'pfc_priorities'), (None, 'governor')]
    assert result['compared'][5].startswith('no run in %s applied stage 5 on node02' % tmp_path)


def test_a_relative_path_is_refused_before_anything_is_read(report_dir):
    with pytest.raises(AnsibleActionFail, match='etc/hccn.conf is not an absolute path; nothing was read'):
        args = dict(NODE)
        args['hccn_conf'] = 'etc/hccn.conf'
        run(report_dir, **args)


def test_a_metrics_file_the_collector_would_not_read_is_refused_naming_the_variable(report_dir):
    run(report_dir, **NODE)
    with pytest.raises(AnsibleActionFail, match="audit_metrics_file is 'relative.prom': it must be the absolute path"):
        run(report_dir, step='pod', nodes=[H], metrics_file='relative.prom')


def test_an_audit_that_only_reports_does_not_fail(report_dir):
    run(report_dir, **NODE)
    result, dummy = run(report_dir, step='pod', nodes=[H], fail_on_drift=False)
    assert result['failed'] is False and result['status'] == 'drift' and result['drifted'] == [H]
    assert 'node02 NPU 1: pfc_priorities is []' in result['msg'] and result['metrics'] is None
