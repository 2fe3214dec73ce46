"""profile_info: finding the profiler's output, the rank, the split per step, links refused, the cluster files."""

import os
import shutil

import pytest

from ansible_collections.npuops.ascend.plugins.modules import profile_info

FIX = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'profiler')
# synthetic (the column list of torch_npu's TraceStepTimeParser.title): 2 steps of rank 5's NPU 5
STEP_TRACE = ('Device_id,Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,'
              'Communication(Not Overlapped and Exclude Receive),Preparing\n'
              '5,19,700000,200000,50000,250000,100000,1000000,0,200000,20\n')


def make_pt(root, name, rank, kernels='kernel_details_opstate.csv', mtime=None):
    out = os.path.join(root, name, 'ASCEND_PROFILER_OUTPUT')
    os.makedirs(out)
    with open(os.path.join(root, name, 'profiler_info_%d.json' % rank), 'w') as handle:
        handle.write('{}')
    with open(os.path.join(out, 'step_trace_time.csv'), 'w') as handle:
        handle.write(STEP_TRACE)
    if kernels:
        shutil.copy(os.path.join(FIX, kernels), os.path.join(out, 'kernel_details.csv'))
    if mtime:
        os.utime(out, (mtime, mtime))
    return out


def test_newest_dir_rank_from_profiler_info_not_device_id(tmp_path):
    make_pt(str(tmp_path), 'n1_1_20250101000000000_ascend_pt', 3, mtime=1000)
    newest = make_pt(str(tmp_path), 'n1_2_20250102000000000_ascend_pt', 7, mtime=2000)
    result = profile_info.read_profile(str(tmp_path))
    assert result['dirs'] == [{'path': newest, 'rank': 7}]
    item = result['steps'][0]
    assert item['rank'] == 7 and item['device_id'] == 5
    assert item['comm_share_pct'] == 20.0 and item['free_share_pct'] == 10.0 and item['compute_share_pct'] == 70.0
    # the real kernel_details.csv of Step Id 19: its compute kernels' union over the 1 s step
    assert item['aicore_from'] == 'kernel_details' and 0 < item['aicore_util_pct'] < 1.0
    assert len(profile_info.read_profile(str(tmp_path), select='all')['steps']) == 2


def test_top_comm_ops_from_older_kernel_details(tmp_path):
    out = make_pt(str(tmp_path), 'x_ascend_pt', 0, kernels='kernel_details_hccl.csv')
    result = profile_info.read_profile(out)
    assert result['steps'][0]['top_comm_ops'][0]['op'] == 'hcom_broadcast'
    assert result['steps'][0]['top_comm_from'] == 'kernel_details'


def test_link_is_not_followed(tmp_path):
    real = make_pt(str(tmp_path / 'real'), 'r_ascend_pt', 0)
    os.remove(os.path.join(real, 'kernel_details.csv'))
    os.symlink(os.path.join(FIX, 'kernel_details_hccl.csv'), os.path.join(real, 'kernel_details.csv'))
    result = profile_info.read_profile(real)
    assert result['steps'][0]['aicore_util_pct'] is None
    assert any('not a regular file' in error['msg'] for error in result['errors'])
    os.symlink(str(tmp_path / 'real'), str(tmp_path / 'linked'))
    with pytest.raises(profile_info.ReadError, match='link'):
        profile_info.read_profile(str(tmp_path / 'linked'))


def test_no_profile_says_what_to_do(tmp_path):
    with pytest.raises(profile_info.ReadError, match='has the profiler run'):
        profile_info.read_profile(str(tmp_path))


def test_too_large_file_is_left_out(tmp_path):
    out = make_pt(str(tmp_path), 'x_ascend_pt', 0)
    with open(os.path.join(out, 'kernel_details.csv'), 'a') as handle:
        handle.write('#' * (2 * 2 ** 20))
    result = profile_info.read_profile(out, max_file_mb=1)
    assert any('max_file_mb' in error['msg'] for error in result['errors'])


def test_cluster_output_ranks_and_stage_rows(tmp_path):
    make_pt(str(tmp_path), 'a_ascend_pt', 0)
    cluster = tmp_path / 'cluster_analysis_output'
    cluster.mkdir()
    shutil.copy(os.path.join(FIX, 'cluster_step_trace_time.csv'), str(cluster / 'cluster_step_trace_time.csv'))
    result = profile_info.read_profile(str(tmp_path))
    assert len(result['cluster']['ranks']) == 8 and result['cluster']['stages'][0]['ranks'] == list(range(8))
    assert result['cluster']['links'] == []


def test_module_runs_in_check_mode(run_module, tmp_path):
    out = make_pt(str(tmp_path), 'a_ascend_pt', 2)
    res = run_module(profile_info, {'path': out}, check_mode=True)
    assert not res.failed and res.result['changed'] is False
    assert res.result['summary']['comm_share_pct'] == 20.0
    bad = run_module(profile_info, {'path': str(tmp_path / 'none')})
    assert bad.failed and 'not a directory' in bad.result['msg']
