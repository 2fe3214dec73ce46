"""npuops.ascend.stage_bench: stage 3 on each node in one task - whether it applies, the script of mode torch (the copy
action), hccl_bench with the role's options, the findings, the node's record and its JSON report as the role wrote them.
The module's results are made by run_module from real samples."""

from __future__ import annotations

import json
from unittest import mock

import pytest
from ansible.errors import AnsibleActionFail
from ansible.plugins.filter.core import to_nice_json

from ansible_collections.npuops.ascend.plugins.action import stage_bench as action
from ansible_collections.npuops.ascend.plugins.modules import hccl_bench as hccl_bench_module
from ansible_collections.npuops.ascend.tests.unit.plugins.action import stage_actions
from ansible_collections.npuops.ascend.tests.unit.plugins.modules import conftest as modules_conftest
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import NPU_SMI, sample
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils.node_reads import H

run_module = modules_conftest.run_module
RUN = 'R1'
HCCL_BENCH = 'npuops.ascend.hccl_bench'
HCCL_TABLE = sample('hccl_bench/hccl_test/oam_doc_table_avg_time')   # peak busbw 41.584 GB/s on 8 ranks: below the band
HCCL_TABLE_FAST = sample('hccl_bench/hccl_test/secondhand_128rank_collapsed')
INFO_BUSY = sample('npu_smi/info/vllm5111_910b2_25.2.0_busy')
ROLE_OPTIONS = dict(mode='hccl_test', npus=8, min_bytes='8K', max_bytes='1G', step_factor=2,
                    env={'HCCL_BUFFSIZE': 200}, hccl_test_path='/usr/local/Ascend/ascend-toolkit/latest/tools/hccl_test/bin/all_reduce_test',
                    theory_busbw=196.0, band=[60.0, 75.0], timeout=900)


@pytest.fixture
def bench(run_module, tmp_path):
    """An hccl_bench result (what the module returns on the node) for a table of all_reduce_test."""
    test = tmp_path / 'all_reduce_test'
    test.write_text('#!/bin/sh\n')
    test.chmod(0o755)

    def run(output=HCCL_TABLE, info=INFO_BUSY, rc=0, err='', check_mode=False, **options):
        argv = ('/usr/bin/mpirun', '-n', '8', str(test), '-b', '8K', '-e', '1G', '-f', '2', '-p', '8')
        cmds = {(NPU_SMI, 'info'): (0, info, ''), argv: (rc, output, err)}
        res = run_module(hccl_bench_module, dict({'hccl_test_path': str(test), 'fail_below_band': False}, **options),
                         cmds, bin_paths={'mpirun': '/usr/bin/mpirun'}, check_mode=check_mode)
        return dict(res.result, failed=True) if res.failed else dict(res.result)

    return run


def node_step(tmp_path, result, check_mode=False, calls=None, task_vars=None, plugin=None, **extra):
    args = dict(step='node', run_dir=str(tmp_path / RUN), run_id=RUN, **extra)
    plugin = plugin or stage_actions.make_action(action.ActionModule, args, check_mode, lambda name: result, calls)
    return stage_actions.run_step(plugin, dict({'inventory_hostname': H}, **(task_vars or {})))


def read_json(path):
    with open(path, encoding='utf-8') as handle:
        return json.load(handle)


def test_one_module_run_with_the_role_options_records_and_reports_the_node(tmp_path, bench):
    measured = dict(bench(output=HCCL_TABLE_FAST), warnings=['hccl_bench: a warning'], deprecations=[])
    calls = []
    result = node_step(tmp_path, measured, calls=calls, **ROLE_OPTIONS)
    # the role's options, the unset ones left out, a bandwidth below the band never a failure of the module
    assert calls == [(HCCL_BENCH, dict(ROLE_OPTIONS, fail_below_band=False))]
    assert result['applies'] is True and result['changed'] is False and 'failed' not in result
    assert result['findings'] == []
    # what a task with failed_when: false registered: never failed, the output also as lines
    assert result['result']['failed'] is False and result['result']['failed_when_result'] is False
    assert result['result']['stdout_lines'] == measured['stdout'].splitlines()
    # the module's warnings are the task's own (Ansible shows them), not part of the kept result nor of the report
    assert result['warnings'] == ['hccl_bench: a warning'] and 'deprecations' not in result
    assert 'warnings' not in result['result']
    record = read_json(tmp_path / RUN / 'nodes' / H / 'stage3.json')
    assert record == result['record'] and record['status'] == 'passed' and record['role'] == 'hccl_bench'
    assert record['data'] == {'peak_busbw_gb_s': measured['peak_busbw_gb_s'], 'peak_size_bytes': measured['peak_size_bytes'],
                              'ranks': measured['ranks'], 'below_band': False, 'measured': True}
    report = tmp_path / RUN / 'stage3-hccl_bench' / ('%s.json' % H)
    assert result['report'] == str(report)
    # the layout of to_nice_json, as the role's report_files task wrote it
    expected = dict(result['result'], host=H, run=RUN, findings=[])
    assert report.read_text(encoding='utf-8') == to_nice_json(expected) + '\n'
    assert result['msg'] == 'recorded stage 3 (hccl_bench) of node-07: passed'


def test_a_bandwidth_below_the_band_is_a_finding_with_the_busy_npus(tmp_path, bench):
    result = node_step(tmp_path, bench())
    assert [f['check'] for f in result['findings']] == ['busbw'] + ['busy'] * 8
    record = read_json(tmp_path / RUN / 'nodes' / H / 'stage3.json')
    assert record['status'] == 'failed' and record['data']['below_band'] is True
    assert record['failures'][0] == 'node-07: AllReduce bus bandwidth 41.584 GB/s is below 117.6 GB/s (60.0 % of 196.0 GB/s)'


def test_a_benchmark_that_did_not_run_is_a_finding_not_a_failure_of_the_task(tmp_path, bench):
    broken = bench(output='', rc=127, err=sample('hccl_bench/hccl_test/faq_libmpi_missing'))
    assert broken['failed'] is True
    result = node_step(tmp_path, broken)
    assert 'failed' not in result and result['result']['failed'] is False
    assert [f['check'] for f in result['findings']] == ['hccl_bench']
    data = read_json(tmp_path / RUN / 'nodes' / H / 'stage3.json')['data']
    assert data['measured'] is False and data['msg'] == broken['msg']


def test_a_node_linked_over_pcie_runs_nothing_and_is_recorded_as_skipped(tmp_path):
    calls = []
    result = node_step(tmp_path, None, calls=calls, intra_node_link='PCIe', report=True)
    assert calls == [] and result['applies'] is False and result['changed'] is False
    record = read_json(tmp_path / RUN / 'nodes' / H / 'stage3.json')
    assert record['status'] == 'skipped' and record['data'] == {'skipped': True, 'measured': False}
    # the report of a task skipped by its condition
    assert read_json(tmp_path / RUN / 'stage3-hccl_bench' / ('%s.json' % H)) == {
        'changed': False, 'skipped': True, 'skip_reason': 'Conditional result was False',
        'false_condition': 'hccl_bench_applies', 'host': H, 'run': RUN, 'findings': []}
    # without what stage 0 read, the family the PoD declares decides
    assert node_step(tmp_path, None, calls=calls, hccs=False)['applies'] is False and calls == []


def test_check_mode_measures_nothing_and_records_skipped(tmp_path, bench):
    result = node_step(tmp_path, bench(check_mode=True), check_mode=True)
    record = read_json(tmp_path / RUN / 'nodes' / H / 'stage3.json')
    assert record['status'] == 'skipped' and record['check_mode'] is True and result['findings'] == []
    # as the task registered it: failed_when is not evaluated on a skipped result
    assert 'failed_when_result' not in result['result'] and result['result']['failed'] is False


def test_no_report_when_switched_off(tmp_path, bench):
    result = node_step(tmp_path, bench(output=HCCL_TABLE_FAST), report=False)
    assert 'report' not in result and not (tmp_path / RUN / 'stage3-hccl_bench').exists()
    assert (tmp_path / RUN / 'nodes' / H / 'stage3.json').exists()


def torch_plugin(tmp_path, copied, measured, calls, check_mode=False):
    args = dict(step='node', run_dir=str(tmp_path / RUN), run_id=RUN, mode='torch', script_dest='/opt/b.py')
    plugin = stage_actions.make_action(action.ActionModule, args, check_mode, lambda name: measured, calls)
    copy_action = mock.MagicMock()
    copy_action.run.return_value = copied
    plugin._shared_loader_obj = mock.MagicMock()
    plugin._shared_loader_obj.action_loader.get.return_value = copy_action
    return plugin, copy_action


def test_mode_torch_copies_the_script_with_the_copy_action_and_passes_it(tmp_path, bench):
    calls = []
    diff = {'before': {'path': '/opt/b.py'}, 'after': {'path': '/opt/b.py'}}
    plugin, copy_action = torch_plugin(tmp_path, {'changed': True, 'diff': diff}, bench(output=HCCL_TABLE_FAST), calls)
    result = node_step(tmp_path, None, plugin=plugin)
    name = plugin._shared_loader_obj.action_loader.get.call_args[0][0]
    task = plugin._shared_loader_obj.action_loader.get.call_args[1]['task']
    assert name == 'ansible.legacy.copy' and task.args == {'src': 'allreduce_bench.py', 'dest': '/opt/b.py', 'mode': '0644'}
    assert copy_action.run.call_count == 1
    assert result['changed'] is True and result['diff'] == diff
    assert calls[0][1]['script'] == '/opt/b.py' and calls[0][1]['mode'] == 'torch'


def test_a_failed_copy_fails_the_task_before_any_measurement(tmp_path):
    calls = []
    plugin, dummy = torch_plugin(tmp_path, {'failed': True, 'msg': 'could not find or access allreduce_bench.py'}, {}, calls)
    result = node_step(tmp_path, None, plugin=plugin)
    assert result['failed'] is True and result['msg'] == 'could not find or access allreduce_bench.py'
    assert calls == [] and not (tmp_path / RUN / 'nodes' / H / 'stage3.json').exists()


def test_a_report_that_cannot_be_written_says_where(tmp_path, bench):
    (tmp_path / RUN).mkdir()
    (tmp_path / RUN / 'stage3-hccl_bench').write_text('a file, not a directory')
    with pytest.raises(AnsibleActionFail, match='report_files: could not write the reports to .*stage3-hccl_bench'):
        node_step(tmp_path, bench(output=HCCL_TABLE_FAST))


def test_a_bad_run_id_is_refused(tmp_path):
    with pytest.raises(AnsibleActionFail, match='stage_bench: '):
        stage_actions.run_step(stage_actions.make_action(action.ActionModule, dict(
            step='node', run_dir=str(tmp_path), run_id='../x'), answer=lambda name: {}), {'inventory_hostname': H})
