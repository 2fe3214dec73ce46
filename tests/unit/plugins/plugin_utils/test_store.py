"""The run's store: one record per node per stage, read back only when it is this run's record of this node and stage,
never through a link; the summary of a run made from the records."""

from __future__ import annotations

import datetime
import json
import os

import pytest

from ansible_collections.npuops.ascend.plugins.plugin_utils import store
from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import finding

RUN = '20261205T101500Z'
NOW = datetime.datetime(2026, 12, 5, 10, 16, 2, tzinfo=datetime.timezone.utc)


def findings():
    return [finding('node01', 3, 'mtu', 1500, 9000, 'MTU is 1500, expected 9000'),
            finding('node02', None, 'swappiness', 60, 10, 'vm.swappiness is 60, expected at most 10', severity='warn'),
            finding('node01', None, 'swappiness', 60, 10, 'vm.swappiness is 60, expected at most 10', severity='warn')]


def test_a_record_keeps_only_the_findings_of_its_node_and_says_its_status():
    record = store.make_record(RUN, 'node01', 4, 'roce_lossless', findings() + findings(), now=NOW,
                               data={'busbw_gb_s': 21.5})
    assert record == {
        'schema': 'npuops.ascend/stage-record', 'version': 1, 'run': RUN, 'node': 'node01', 'stage': 4,
        'role': 'roce_lossless', 'status': 'failed', 'check_mode': False, 'time': '2026-12-05T10:16:02Z',
        'failures': ['node01 NPU 3: MTU is 1500, expected 9000'],
        'warnings': ['node01: vm.swappiness is 60, expected at most 10'],
        'findings': [findings()[0], findings()[2]], 'data': {'busbw_gb_s': 21.5}}
    assert set(record) == set(store.RECORD_KEYS)
    assert store.make_record(RUN, 'node02', 0, 'health_check', findings())['status'] == 'passed'
    assert store.make_record(RUN, 'node01', 1, 'baseline', findings(), skipped=True)['status'] == 'skipped'
    assert store.make_record(RUN, 'node03', 0, 'health_check', findings(), check_mode=1)['check_mode'] is True


def test_a_result_decided_for_the_node_replaces_what_the_findings_say():
    record = store.make_record(RUN, 'node01', 4, 'roce_lossless', findings(),
                               result={'status': 'stopped', 'failures': [], 'warnings': ['node01: kept as it was']})
    assert (record['status'], record['failures'], record['warnings']) == ('stopped', [], ['node01: kept as it was'])
    with pytest.raises(store.StoreError, match="status 'gone'"):
        store.make_record(RUN, 'node01', 4, 'roce_lossless', [], result={'status': 'gone'})


@pytest.mark.parametrize('run_id', ['', '../x', 'a/b', '.hidden', 'x' * 129, 'run id', None, 'ok\n'])
def test_a_run_id_that_cannot_name_a_directory_is_refused(run_id):
    with pytest.raises(store.StoreError, match='npuops_run_id'):
        store.check_run_id(run_id)


@pytest.mark.parametrize('node', ['', '.', '..', 'a/b', '.node', 'a\0b', None])
def test_a_node_name_that_cannot_name_a_directory_is_refused(node):
    with pytest.raises(store.StoreError, match='rename the host'):
        store.make_record(RUN, node, 0, 'health_check', [])


@pytest.mark.parametrize('stage', [-1, 10, '3', True, None, 2.0])
def test_a_stage_is_a_number_from_0_to_9(stage):
    with pytest.raises(store.StoreError, match='0 to 9'):
        store.record_path('/tmp/run', 'node01', stage)


def test_records_are_written_where_the_schema_says_and_read_back(tmp_path):
    run_dir = str(tmp_path / RUN)
    record = store.make_record(RUN, 'node01', 0, 'health_check', findings(), now=NOW)
    path = store.write_record(run_dir, record)
    assert path == os.path.join(run_dir, 'nodes', 'node01', 'stage0.json')
    assert json.load(open(path)) == record
    assert oct(os.stat(path).st_mode & 0o777) == '0o644'
    assert os.listdir(os.path.dirname(path)) == ['stage0.json']  # no temporary file left
    assert store.read_record(run_dir, RUN, 'node01', 0) == (record, None)


def test_a_missing_record_or_one_of_another_run_or_node_is_a_failure_never_used(tmp_path):
    run_dir = str(tmp_path / RUN)
    store.write_record(run_dir, store.make_record('20261101T000000Z', 'node01', 2, 'version_check', [], now=NOW))
    other = store.make_record(RUN, 'node02', 2, 'version_check', [], now=NOW)
    store.write_record(run_dir, other)
    os.replace(os.path.join(run_dir, 'nodes', 'node02', 'stage2.json'), os.path.join(run_dir, 'nodes', 'node02', 'stage3.json'))
    os.makedirs(os.path.join(run_dir, 'nodes', 'node04'))
    with open(os.path.join(run_dir, 'nodes', 'node04', 'stage2.json'), 'w') as handle:
        handle.write('{"schema": "npuops.ascend/stage-record", "version": 1, "run": ')
    records, problems = store.read_stage(run_dir, RUN, ['node01', 'node03', 'node04'], 2)
    assert records == {}
    assert [p['host'] for p in problems] == ['node01', 'node03', 'node04']
    assert all(p['severity'] == 'fail' and p['check'] == 'stage_record' for p in problems)
    assert 'is of run 20261101T000000Z, not of this run %s: a record of another run is never used' % RUN in problems[0]['msg']
    assert problems[1]['msg'].startswith('node03: no record of stage 2 in the run store (%s/nodes/node03/stage2.json)' % run_dir)
    assert 'is not valid JSON' in problems[2]['msg']
    assert store.read_record(run_dir, RUN, 'node02', 3)[1].endswith(
        'is the record of node02 stage 2, not of node02 stage 3')


@pytest.mark.parametrize('change, problem', [
    ({'schema': 'other'}, "is not a stage record (schema 'other'"),
    ({'version': 2}, 'has record version 2; this collection reads version 1'),
    ({'status': 'great'}, "has the status 'great'"),
])
def test_a_record_of_another_shape_is_refused(tmp_path, change, problem):
    record = dict(store.make_record(RUN, 'node01', 5, 'hccl_env', []), **change)
    store.write_record(str(tmp_path), record)
    assert problem in store.read_record(str(tmp_path), RUN, 'node01', 5)[1]


def test_the_store_does_not_follow_links(tmp_path):
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    run_dir = tmp_path / RUN
    (run_dir / 'nodes').mkdir(parents=True)
    os.symlink(str(elsewhere), str(run_dir / 'nodes' / 'node01'))
    with pytest.raises(store.StoreError, match='is not a directory .* does not follow links'):
        store.write_record(str(run_dir), store.make_record(RUN, 'node01', 0, 'health_check', []))
    assert os.listdir(str(elsewhere)) == []
    # a record that is a link to a file is not read
    good = store.make_record(RUN, 'node02', 0, 'health_check', [])
    store.write_record(str(elsewhere), good)
    (run_dir / 'nodes' / 'node02').mkdir()
    os.symlink(str(elsewhere / 'nodes' / 'node02' / 'stage0.json'), str(run_dir / 'nodes' / 'node02' / 'stage0.json'))
    record, problem = store.read_record(str(run_dir), RUN, 'node02', 0)
    assert record is None and 'cannot be read' in problem
    os.symlink(str(elsewhere / 'x.json'), str(run_dir / 'summary.json'))
    with pytest.raises(store.StoreError, match='summary.json is a link'):
        store.write_summary(str(run_dir), {})


def test_the_summary_is_made_from_the_records_of_this_run(tmp_path):
    run_dir = str(tmp_path / RUN)
    store.write_record(run_dir, store.make_record(RUN, 'node01', 0, 'health_check', findings()))
    store.write_record(run_dir, store.make_record(RUN, 'node01', 2, 'version_check', []))
    store.write_record(run_dir, store.make_record(RUN, 'node02', 0, 'health_check', findings()))
    store.write_record(run_dir, store.make_record('older', 'node02', 2, 'version_check', []))
    document = store.summary(run_dir, RUN, ['node02', 'node01', 'node03'], check_mode=True)
    assert document == {'run': RUN, 'check_mode': True, 'nodes': {
        'node02': {'stage0': {'stage': 0, 'role': 'health_check', 'status': 'passed', 'failures': [],
                              'warnings': ['node02: vm.swappiness is 60, expected at most 10']}},
        'node01': {'stage0': {'stage': 0, 'role': 'health_check', 'status': 'failed',
                              'failures': ['node01 NPU 3: MTU is 1500, expected 9000'],
                              'warnings': ['node01: vm.swappiness is 60, expected at most 10']},
                   'stage2': {'stage': 2, 'role': 'version_check', 'status': 'passed', 'failures': [], 'warnings': []}},
        'node03': {}}}
    path = store.write_summary(run_dir, document)
    # the same bytes as to_nice_json wrote before
    assert open(path).read() == json.dumps(document, indent=4, sort_keys=True, separators=(',', ': ')) + '\n'


def test_a_pod_record_counts_for_the_nodes_it_names_in_the_summary(tmp_path):
    run_dir = str(tmp_path / RUN)
    for node in ('node01', 'node02'):
        store.write_record(run_dir, store.make_record(RUN, node, 2, 'version_check', []))
    outlier = finding('node02', None, 'driver', '24.1.0', '25.2.0', 'driver is 24.1.0 while 1 other node(s) have 25.2.0')
    path = store.write_pod_record(run_dir, store.make_pod_record(RUN, 2, 'version_check', [outlier, outlier],
                                                                 data={'differences': []}, now=NOW))
    assert path == os.path.join(run_dir, 'pod', 'stage2.json')
    assert store.read_pod_record(run_dir, RUN, 2)[0] == {
        'schema': 'npuops.ascend/pod-record', 'version': 1, 'run': RUN, 'stage': 2, 'role': 'version_check',
        'check_mode': False, 'time': '2026-12-05T10:16:02Z', 'findings': [outlier], 'data': {'differences': []}}
    nodes = store.summary(run_dir, RUN, ['node01', 'node02'])['nodes']
    assert nodes['node01']['stage2']['status'] == 'passed'
    assert (nodes['node02']['stage2']['status'], nodes['node02']['stage2']['failures']) == (
        'failed', ['node02: driver is 24.1.0 while 1 other node(s) have 25.2.0'])
    # a stage without a PoD record has none; one of another run is refused, never used
    assert store.read_pod_record(run_dir, RUN, 3) == (None, None)
    store.write_pod_record(run_dir, store.make_pod_record('R0', 3, 'hccl_bench', []))
    record, problem = store.read_pod_record(run_dir, RUN, 3)
    assert record is None and problem.endswith('is of run R0, not of this run %s: a record of another run is never used' % RUN)


def test_a_check_record_is_written_beside_the_stage_records_and_read_back_only_when_it_is_this_runs(tmp_path):
    run_dir = str(tmp_path / RUN)
    record = store.make_check(RUN, 'node01', 5, 'hccl_env', ['a link at the path'], check_mode=True,
                              data={'settings_usable': True}, now=NOW)
    assert record == {'schema': 'npuops.ascend/check-record', 'version': 1, 'run': RUN, 'node': 'node01', 'stage': 5,
                      'role': 'hccl_env', 'check_mode': True, 'time': '2026-12-05T10:16:02Z', 'usable': False,
                      'problems': ['a link at the path'], 'data': {'settings_usable': True}}
    path = store.write_check(run_dir, record)
    assert path == os.path.join(run_dir, 'nodes', 'node01', 'check5.json')
    store.write_check(run_dir, store.make_check('older', 'node02', 5, 'hccl_env', []))
    store.write_check(run_dir, store.make_check(RUN, 'node04', 5, 'hccl_env', []))
    store.write_json(os.path.join(run_dir, 'nodes', 'node04', 'check5.json'),
                     store.make_check(RUN, 'node01', 5, 'hccl_env', []))  # node01's record in node04's place
    os.makedirs(os.path.join(run_dir, 'nodes', 'node05'))
    with open(os.path.join(run_dir, 'nodes', 'node05', 'check5.json'), 'w') as handle:
        handle.write('{"schema": "npuops.ascend/stage-record"}')
    records, problems = store.read_checks(run_dir, RUN, ['node01', 'node02', 'node03', 'node04', 'node05'], 5)
    assert records == {'node01': record}
    assert list(problems) == ['node02', 'node03', 'node04', 'node05']
    assert 'is of run older, not of this run %s: a record of another run is never used' % RUN in problems['node02']
    assert problems['node03'] == ('no check record of stage 5 in the run store (%s): the check did not run on this '
                                  'node' % os.path.join(run_dir, 'nodes', 'node03', 'check5.json'))
    assert problems['node04'].endswith('is the check record of node01 stage 5, not of node04 stage 5')
    assert "is not a check record (schema 'npuops.ascend/stage-record'" in problems['node05']
    # a check record is not a stage record: the summary does not list it
    assert store.summary(run_dir, RUN, ['node01'])['nodes'] == {'node01': {}}
    # a link in place of a check record is not followed
    os.unlink(path)
    os.symlink(os.path.join(run_dir, 'nodes', 'node02', 'check5.json'), path)
    records, problems = store.read_checks(run_dir, RUN, ['node01'], 5)
    assert records == {} and 'cannot be read' in problems['node01']
