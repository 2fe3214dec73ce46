"""npuops.ascend.stage_versions: stage 2 on each node (its two modules in one task, its record in the store) and over
the PoD from the records only - an outlier named from the records, a record of another run never used, the drift
against the history, check mode keeping no history. The modules' results are made by run_module from real samples."""

from __future__ import annotations

import json
import os

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.npuops.ascend.plugins.action import stage_versions as action
from ansible_collections.npuops.ascend.plugins.plugin_utils import store
from ansible_collections.npuops.ascend.tests.unit.plugins.action import stage_actions
from ansible_collections.npuops.ascend.tests.unit.plugins.modules import conftest as modules_conftest
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils import test_versions as tv

# the fixtures, bound here so that pytest finds them
run_module = modules_conftest.run_module
stack_read = tv.stack_read
RUN = 'R1'


def make_action(args, check_mode=False, modules=None, calls=None):
    return stage_actions.make_action(action.ActionModule, args, check_mode, lambda name: modules[name], calls)


@pytest.fixture
def nodes(run_module, stack_read):
    """The module results of three nodes; node03 runs another driver (its NPUs report it too)."""
    good = {'npuops.ascend.version_info': stack_read(name='a'), 'npuops.ascend.npu_info': tv.loaded(run_module)}
    odd = {'npuops.ascend.version_info': stack_read(driver=tv.DRIVER.replace('23.0.7', '23.0.6'), name='b'),
           'npuops.ascend.npu_info': tv.loaded(run_module, version='23.0.6')}
    return {'node01': good, 'node02': good, 'node03': odd}


def node_step(tmp_path, node, modules, check_mode=False, calls=None, **extra):
    args = dict(step='node', run_dir=str(tmp_path / RUN), run_id=RUN, compatibility=tv.TABLE, **extra)
    return stage_actions.run_step(make_action(args, check_mode, modules, calls), {'inventory_hostname': node})


def pod_step(tmp_path, active, check_mode=False, history=None):
    args = dict(step='pod', run_dir=str(tmp_path / RUN), run_id=RUN)
    if history:
        args['history'] = str(history)
    return stage_actions.run_step(make_action(args, check_mode),
                                  {'inventory_hostname': active[0], 'ansible_play_hosts': active})


def test_the_node_step_runs_both_modules_in_one_task_and_records_the_fingerprint(tmp_path, nodes):
    calls = []
    result = node_step(tmp_path, 'node01', nodes['node01'], calls=calls, packages=['torch'], python='/opt/py')
    assert [name for name, _args in calls] == ['npuops.ascend.version_info', 'npuops.ascend.npu_info']
    assert calls[0][1] == {'packages': ['torch'], 'env_files': [], 'python': '/opt/py',
                           'env_prefixes': ['HCCL_', 'ASCEND_', 'TASK_QUEUE_', 'PYTORCH_NPU_']}
    assert calls[1][1] == {'gather_subset': ['board']}
    assert result['changed'] is False and result['findings'] == []
    with open(tmp_path / RUN / 'nodes' / 'node01' / 'stage2.json') as handle:
        record = json.load(handle)
    assert record == result['record']
    assert record['data']['fingerprint']['driver'] == '23.0.7' and record['status'] == 'passed'


def test_the_node_step_passes_the_mindie_path_and_checks_the_kernel_floor(tmp_path, run_module, stack_read):
    old = {'npuops.ascend.version_info': stack_read(osrelease='4.19.90-2112.8.0.0131.oe1.aarch64\n', name='old'),
           'npuops.ascend.npu_info': tv.loaded(run_module)}
    calls = []
    result = node_step(tmp_path, 'node04', old, calls=calls, mindie_path='/opt/mindie/latest', min_kernel='5.10')
    assert calls[0][1]['mindie_path'] == '/opt/mindie/latest'
    assert calls[0][1]['packages'] == ['torch', 'torch_npu', 'mindspeed', 'vllm', 'vllm_ascend']
    assert [(f['check'], f['value']) for f in result['findings']] == [('kernel', '4.19.90-2112.8.0.0131.oe1.aarch64')]
    assert result['record']['status'] == 'failed'
    assert result['record']['data']['fingerprint']['kernel'] == '4.19.90-2112.8.0.0131.oe1.aarch64'
    unchecked = node_step(tmp_path, 'node05', old)
    assert unchecked['findings'] == []  # no floor given: the kernel is only fingerprinted


def test_a_module_that_failed_fails_the_node_step_with_its_words_and_no_record(tmp_path, nodes):
    broken = dict(nodes['node01'], **{'npuops.ascend.npu_info': {'failed': True, 'msg': 'npu-smi info: device busy'}})
    result = node_step(tmp_path, 'node02', broken)
    assert result['failed'] and result['msg'] == 'node02: reading the NPU boards failed: npu-smi info: device busy'
    assert not (tmp_path / RUN / 'nodes' / 'node02').exists()


def test_the_pod_step_reads_the_records_and_names_the_outlier(tmp_path, nodes):
    for node, modules in nodes.items():
        node_step(tmp_path, node, modules)
    result = pod_step(tmp_path, ['node01', 'node02', 'node03'])
    assert list(result['fingerprints']) == ['node01', 'node02', 'node03']
    assert [(f['host'], f['check']) for f in result['pod_findings']] == [('node03', 'driver'), ('node03', 'npu_driver')]
    assert result['pod_findings'][0]['msg'] == 'node03: driver is 23.0.6 while 2 other node(s) have 23.0.7 (node01, node02)'
    pod, problem = store.read_pod_record(str(tmp_path / RUN), RUN, 2)
    assert problem is None and pod['findings'] == result['pod_findings']
    assert [d['field'] for d in pod['data']['differences']] == ['driver', 'npu_driver']


def test_the_pod_step_never_uses_a_record_of_another_run(tmp_path, nodes):
    for node, modules in nodes.items():
        node_step(tmp_path, node, modules)
    path = tmp_path / RUN / 'nodes' / 'node03' / 'stage2.json'
    record = json.loads(path.read_text())
    record['run'] = 'R0'
    path.write_text(json.dumps(record))
    result = pod_step(tmp_path, ['node01', 'node02', 'node03'])
    assert list(result['fingerprints']) == ['node01', 'node02'] and result['pod_findings'] == []


def test_drift_against_the_history_which_check_mode_does_not_write(tmp_path, nodes):
    history = tmp_path / 'fingerprints.json'
    for node in ('node01', 'node02'):
        node_step(tmp_path, node, nodes['node01'])
    first = pod_step(tmp_path, ['node01', 'node02'], history=history)
    assert first['drift'] == [] and json.loads(history.read_text())['run'] == RUN
    node_step(tmp_path, 'node02', nodes['node03'])
    before = history.read_text()
    checked = pod_step(tmp_path, ['node01', 'node02'], check_mode=True, history=history)
    assert [d['msg'] for d in checked['drift']] == [
        'node02: driver changed from 23.0.7 to 23.0.6', 'node02: npu_driver changed from 23.0.7 to 23.0.6']
    assert history.read_text() == before  # a dry run keeps no history
    history.write_text('{not json')
    broken = pod_step(tmp_path, ['node01', 'node02'], history=history)
    assert broken['drift'] == [] and 'cannot be read' in broken['warnings'][0]


def test_a_bad_run_id_is_refused_before_any_module_runs(tmp_path, nodes):
    calls = []
    args = dict(step='node', run_dir=str(tmp_path / 'x'), run_id='../up')
    plugin = make_action(args, False, nodes['node01'], calls)
    with pytest.raises(AnsibleActionFail, match='run id'):
        stage_actions.run_step(plugin, {'inventory_hostname': 'node01'})
    assert calls == [] and not os.path.exists(str(tmp_path / 'x'))
