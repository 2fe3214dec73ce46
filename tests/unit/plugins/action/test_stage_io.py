"""npuops.ascend.stage_io: stage 8 on each node in one task - io_info with the role's options, numa_info only without
the layout of stage 6, the DataLoader advice, the findings, the node's record and its JSON report as the role wrote
them. The NUMA layout is made by run_module from real captures of an Atlas 800T A2."""

from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleActionFail
from ansible.plugins.filter.core import to_nice_json

from ansible_collections.npuops.ascend.plugins.action import stage_io as action
from ansible_collections.npuops.ascend.plugins.modules import numa_info
from ansible_collections.npuops.ascend.tests.unit.plugins.action import stage_actions
from ansible_collections.npuops.ascend.tests.unit.plugins.modules import conftest as modules_conftest
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import LSCPU, NPU_SMI, NUMACTL, sample

run_module = modules_conftest.run_module
RUN = 'R1'
H = 'node01'
IO_INFO = 'npuops.ascend.io_info'
NUMA_INFO = 'npuops.ascend.numa_info'


@pytest.fixture
def a2(run_module):
    res = run_module(numa_info, {}, {(NUMACTL, '-H'): (0, sample('numa/numactl/atlas800t_a2_8node'), ''),
                                     (LSCPU,): (0, sample('numa/lscpu/blog_atlas800i_a2_new_layout'), ''),
                                     (NPU_SMI, 'info', '-t', 'topo'): (0, sample('npu_smi/topo/swift_910b3_24.1.rc1'), '')})
    assert not res.failed, res
    return res.result


def io_read(**parts):
    out = {'changed': False, 'cpus': 192, 'errors': [], 'warnings': [], 'deprecations': [],
           'shm': {'path': '/dev/shm', 'mounted': True, 'size_mb': 1024.0, 'used_pct': 0.0, 'free_mb': 1024.0},
           'iostat': {'samples': 2, 'iowait_mean_pct': 0.25, 'iowait_max_pct': 0.5},
           'vmstat': {'samples': 2, 'wa_mean_pct': 0, 'wa_max_pct': 0},
           'fio': {'ran': False, 'skipped': 'no fio_file given', 'read_bw_mb_s': None, 'file': None}}
    out.update(parts)
    return out


def node_step(tmp_path, answers, check_mode=False, calls=None, **extra):
    args = dict(step='node', run_dir=str(tmp_path / RUN), run_id=RUN, **extra)
    plugin = stage_actions.make_action(action.ActionModule, args, check_mode, lambda name: answers[name], calls)
    return stage_actions.run_step(plugin, {'inventory_hostname': H})


def read_json(path):
    with open(path, encoding='utf-8') as handle:
        return json.load(handle)


def test_io_info_and_numa_info_once_then_the_record_and_the_report(tmp_path, a2):
    calls = []
    result = node_step(tmp_path, {IO_INFO: io_read(), NUMA_INFO: a2}, calls=calls, seconds=2)
    # the role's options, fio left out without a file; the layout read here as stage 6 did not hand one on
    assert calls == [(IO_INFO, {'seconds': 2, 'shm_path': '/dev/shm', 'fio_size_mb': 8192, 'fio_runtime': 30, 'fio_numjobs': 4,
                                'fio_iodepth': 16, 'fio_ioengine': 'libaio', 'fio_rw': 'read', 'fio_block_size': '1M',
                                'timeout': 60}),
                     (NUMA_INFO, {'timeout': 60})]
    assert result['changed'] is False and result['findings'] == [] and 'failed' not in result
    assert result['dataloader']['workers'] == 8 and result['dataloader']['basis'] == 'numa'
    assert result['dataloader']['shm_mb_per_worker'] == 16.0
    record = read_json(tmp_path / RUN / 'nodes' / H / 'stage8.json')
    assert record == result['record'] and record['status'] == 'passed' and record['role'] == 'io_check'
    assert sorted(record['data']) == ['dataloader', 'io'] and sorted(record['data']['io']) == [
        'cpus', 'fio', 'iostat', 'shm', 'vmstat']
    report = tmp_path / RUN / 'stage8-io_check' / ('%s.json' % H)
    document = read_json(report)
    assert report.read_text(encoding='utf-8') == to_nice_json(document) + '\n'
    assert sorted(document) == ['check_mode', 'cpus', 'dataloader', 'findings', 'fio', 'host', 'iostat', 'run', 'shm',
                                'vmstat', 'warnings']
    assert document['host'] == H and document['run'] == RUN and document['warnings'] == [] and document['cpus'] == 192
    assert result['msg'] == 'recorded stage 8 (io_check) of node01: passed'


def test_the_layout_of_stage_6_is_used_without_reading_it_again(tmp_path, a2):
    calls = []
    result = node_step(tmp_path, {IO_INFO: io_read()}, calls=calls, numa=a2)
    assert [name for name, dummy in calls] == [IO_INFO] and 'numa' not in result
    assert result['dataloader']['workers'] == 8
    # a layout without nodes is read again
    calls.clear()
    node_step(tmp_path, {IO_INFO: io_read(), NUMA_INFO: a2}, calls=calls, numa={'skipped': True})
    assert [name for name, dummy in calls] == [IO_INFO, NUMA_INFO]


def test_a_full_shm_fails_the_node_and_the_limits_are_shown_as_given(tmp_path, a2):
    full = io_read(shm={'path': '/dev/shm', 'mounted': True, 'size_mb': 1024.0, 'used_pct': 100.0, 'free_mb': 0.0},
                   warnings=['iostat: one sample dropped'])
    result = node_step(tmp_path, {IO_INFO: full, NUMA_INFO: a2}, shm_max_used_pct=90)
    assert [f['msg'] for f in result['findings']] == [
        'node01: /dev/shm is 100.0 % used (0.0 MB free), above the limit of 90 %']
    record = read_json(tmp_path / RUN / 'nodes' / H / 'stage8.json')
    assert record['status'] == 'failed' and record['failures'] == [result['findings'][0]['msg']]
    # io_info's warnings are the task's own and stay in the report
    assert result['warnings'] == ['iostat: one sample dropped'] and 'warnings' not in result['io']
    assert read_json(tmp_path / RUN / 'stage8-io_check' / ('%s.json' % H))['warnings'] == ['iostat: one sample dropped']


def test_io_info_that_could_not_run_is_a_finding_and_the_advice_counts_the_cpus(tmp_path):
    broken = {'failed': True, 'msg': 'node01: the module failed: /usr/bin/python3: not found'}
    numa_failed = {'failed': True, 'msg': 'numactl not found', 'cpus_total': 96}
    result = node_step(tmp_path, {IO_INFO: broken, NUMA_INFO: numa_failed})
    assert 'failed' not in result and result['io']['failed'] is False
    assert [(f['check'], f['severity']) for f in result['findings']] == [('io_info', 'fail')]
    assert result['findings'][0]['msg'] == 'node01: io_info failed: node01: the module failed: /usr/bin/python3: not found'
    assert result['dataloader']['basis'] == 'cpus' and result['dataloader']['shm_mb_per_worker'] is None
    document = read_json(tmp_path / RUN / 'stage8-io_check' / ('%s.json' % H))
    assert document['shm'] is None and document['cpus'] is None


def test_check_mode_records_as_a_dry_run_and_no_report_when_switched_off(tmp_path, a2):
    result = node_step(tmp_path, {IO_INFO: io_read(), NUMA_INFO: a2}, check_mode=True, report=False)
    assert result['record']['check_mode'] is True and 'report' not in result
    assert not (tmp_path / RUN / 'stage8-io_check').exists()


def test_a_bad_range_of_workers_is_refused(tmp_path, a2):
    with pytest.raises(AnsibleActionFail, match='stage_io: dataloader_advice: workers must be two whole numbers'):
        node_step(tmp_path, {IO_INFO: io_read(), NUMA_INFO: a2}, dataloader_workers=[8, 4])
