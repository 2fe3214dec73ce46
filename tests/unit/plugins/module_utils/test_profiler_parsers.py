"""The profiler parsers against the real msprof-analyze / torch_npu captures (fixtures/profiler/SOURCE.md), and small
synthetic variants for each trap (labelled synthetic)."""

import json
import os

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils._parsers import profiler as p

FIX = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'profiler')


def fixture(name):
    with open(os.path.join(FIX, name), encoding='utf-8', newline='') as handle:
        return handle.read()


# --- real captures ---------------------------------------------------------------------------------------------------

def test_cluster_step_trace_real_ranks_and_stage_row():
    rows = p.parse_step_trace(fixture('cluster_step_trace_time.csv'))
    ranks = [row for row in rows if row['kind'] == 'rank']
    stages = [row for row in rows if row['kind'] == 'stage']
    assert [row['rank'] for row in ranks] == list(range(8))
    assert len(stages) == 1 and stages[0]['rank'] is None and stages[0]['ranks'] == list(range(8))
    first = ranks[0]
    assert first['computing_us'] == pytest.approx(80309.68717187493)
    assert first['comm_not_overlapped_us'] == pytest.approx(683731.2897031249)
    # step time = Stage + Bubble = Computing + Communication(Not Overlapped) + Free (to the rounding of the file)
    assert first['step_time_us'] == pytest.approx(1754645.75)
    for row in ranks:
        parts = row['computing_us'] + row['comm_not_overlapped_us'] + row['free_us']
        assert row['step_time_us'] == pytest.approx(parts, rel=1e-5)
    # the stage row holds maxima over its ranks, not a rank's figures
    assert stages[0]['free_us'] == pytest.approx(max(row['free_us'] for row in ranks))
    assert stages[0]['comm_not_overlapped_us'] == pytest.approx(max(row['comm_not_overlapped_us'] for row in ranks))


def test_cluster_step_trace_real_split_shares():
    rows = [row for row in p.parse_step_trace(fixture('cluster_step_trace_time.csv')) if row['kind'] == 'rank']
    split = p.rank_split(rows[:1])
    assert split[0]['comm_share_pct'] == pytest.approx(100.0 * 683731.2897031249 / 1754645.75, abs=0.01)
    assert split[0]['free_share_pct'] == pytest.approx(56.46, abs=0.01)
    assert split[0]['aicore_util_pct'] is None and split[0]['aicore_from'] is None


def test_cluster_communication_real_ms_to_us_per_rank():
    ops = p.parse_cluster_communication(json.loads(fixture('cluster_communication.json')))
    assert len(ops) == 4
    assert sorted(set(op['rank'] for op in ops)) == [0, 1]
    first = [op for op in ops if op['op'] == 'hcom_broadcast__501_0@6297232067196334501' and op['rank'] == 0][0]
    assert first['elapse_us'] == pytest.approx(121736.94384375)  # 121.73694384375 ms in the file
    assert first['op_type'] == 'hcom_broadcast' and first['ranks_group'] == [0, 1]
    assert first['bandwidth']['HCCS']['bandwidth_gbs'] == pytest.approx(2.7012)


def test_kernel_details_real_older_layout_hccl_core_type():
    kernels = p.parse_kernel_details(fixture('kernel_details_hccl.csv'))
    comm = [k for k in kernels if k['comm']]
    assert len(comm) == 19 and all(k['core'] == 'HCCL' for k in comm)
    assert not any(k['compute'] for k in comm)
    summary = p.kernel_summary(kernels)
    assert list(summary) == ['1']
    top = summary['1']['top_comm_ops']
    assert top[0]['op'] == 'hcom_broadcast' and top[0]['count'] == 2
    assert top[0]['total_us'] == pytest.approx(308926.68 + 62.94)
    expected = {'hcom_broadcast', 'hcom_allReduce', 'hcom_allGather', 'hcom_reduceScatter'}
    assert {item['op'] for item in top} == expected
    assert summary['1']['compute_busy_us'] > 0


def test_kernel_details_real_newer_layout_op_state_and_tab_in_start():
    kernels = p.parse_kernel_details(fixture('kernel_details_opstate.csv'))
    assert len(kernels) == 29 and not any(k['comm'] for k in kernels)
    # "1736413971558972.912\t": the start time carries a tab in this layout
    assert kernels[0]['start_us'] == pytest.approx(1736413971558972.912)
    summary = p.kernel_summary(kernels)['19']
    total = sum(k['duration_us'] for k in kernels)
    # identical rows (the same start and duration) and overlapping kernels count once
    assert 0 < summary['compute_busy_us'] < total


# --- synthetic variants of each trap ---------------------------------------------------------------------------------

STEP_V1 = ('Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,'
           'Communication(Not Overlapped and exclude receive)\n1,600,250,50,300,150,1000,0,250\n')
STEP_V3 = ('Device_id,Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,'
           'Communication(Not Overlapped and Exclude Receive),Preparing\n'
           '5,10,600,250,50,300,150,900,100,200,20\n5,11,700,200,50,250,100,1000,0,200,20\n')


def test_step_trace_columns_by_header_over_versions():
    old = p.parse_step_trace(STEP_V1)[0]
    new = p.parse_step_trace(STEP_V3)
    assert old['computing_us'] == new[0]['computing_us'] == 600
    assert old['preparing_us'] is None and new[0]['preparing_us'] == 20
    # Device_id is the NPU, not the rank
    assert new[0]['device_id'] == 5 and new[0]['rank'] is None
    # step time = Stage + Bubble (a pipeline's receive time is Bubble)
    assert new[0]['step_time_us'] == 1000 and new[0]['step_time_from'] == 'Stage + Bubble'


def test_step_trace_without_stage_sums_the_parts_and_spaces_in_headers():
    text = 'Step,Computing,Communication (Not Overlapped),Free\n,700,200,100\n'
    row = p.parse_step_trace(text)[0]
    assert row['comm_not_overlapped_us'] == 200 and row['step_time_us'] == 1000 and row['step'] == ''


def test_step_trace_missing_column_names_it():
    with pytest.raises(p.ProfilerParseError, match='Computing'):
        p.parse_step_trace('Step,Free\n1,2\n')


def test_comm_kernel_by_type_or_hcom_prefix_not_by_name_shape():
    assert p.is_comm_kernel('hcom_allReduce__606_0_1', 'COMMUNICATION')
    assert p.is_comm_kernel('hcom_allReduce__445_2', 'HCCL')
    assert p.is_comm_kernel('hcom_alltoallv_', 'AI_CPU')
    assert p.is_comm_kernel('SomeNewName', 'COMMUNICATION')
    assert not p.is_comm_kernel('aclnnAllReduceMatmul', 'MIX_AIC')


def test_kernel_details_newer_communication_core_type():
    text = ('Device_id,Step Id,Name,Type,OP State,Accelerator Core,Start Time(us),Duration(us),Wait Time(us)\n'
            '0,3,aclnnMatmul_MatMulV3,MatMulV3,dynamic,AI_CORE,"100.0\t",50,0\n'
            '0,3,aclnnAdd_Add,Add,dynamic,AI_VECTOR_CORE,"120.0\t",50,0\n'
            '0,3,hcom_allReduce__606_0_1,hcom_allReduce_,N/A,COMMUNICATION,"170.0\t",30,N/A\n')
    summary = p.kernel_summary(p.parse_kernel_details(text))['3']
    assert summary['compute_busy_us'] == 70  # 100-170 covered once
    assert summary['comm_busy_us'] == 30
    assert summary['top_comm_ops'] == [{'op': 'hcom_allReduce', 'count': 1, 'total_us': 30}]


def test_communication_json_ms_to_us_and_total_op_info_left_out():
    entry = {'Communication Time Info': {'Elapse Time(ms)': 2.5, 'Transit Time(ms)': 2.0, 'Wait Time(ms)': 0.5},
             'Communication Bandwidth Info': {}}
    data = {'step7': {'collective': {'hcom_allReduce__1_0_1@9': entry, 'Total Op Info': entry}, 'p2p': {}}}
    ops = p.parse_communication(data)
    assert len(ops) == 1 and ops[0]['elapse_us'] == 2500 and ops[0]['step'] == 'step7'
    assert ops[0]['group'] == 'collective' and ops[0]['op_type'] == 'hcom_allReduce'


def test_matrix_keeps_total_aggregate_and_leaves_out_local_link():
    link = {'Transport Type': 'HCCS', 'Transit Size(MB)': 64, 'Transit Time(ms)': 0.5, 'Bandwidth(GB/s)': 128}
    local = dict(link, **{'Transport Type': 'LOCAL'})
    data = {'(0, 1)': {'step': {'allreduce-top1@g': {'0-1': link, '0-0': local},
                                'allreduce-middle@g': {'0-1': link},
                                'allreduce-total@g': {'0-1': dict(link, **{'Transit Size(MB)': 192}), '0-0': local}}}}
    links = p.parse_communication_matrix(data)
    assert len(links) == 1
    assert links[0]['size_mb'] == 192 and links[0]['transit_us'] == 500 and links[0]['group'] == '(0, 1)'
    rank_file = {'step1': {'collective': {'hcom_allReduce__1_0_1@9': {'0-1': link, '1-1': local}}}}
    assert [(item['src'], item['dst'], item['step']) for item in p.parse_communication_matrix(rank_file)] == \
        [(0, 1, 'step1')]


def test_op_statistic_busy_time_counts_compute_only():
    text = ('Device_id,OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)\n'
            '0,MatMulV2,AI_CORE,10,800,70,80,90,60\n0,hcom_allReduce_,COMMUNICATION,2,300,100,150,200,30\n'
            '0,Cast,AI_VECTOR_CORE,5,100,10,20,30,10\n')
    rows = p.parse_op_statistic(text)
    assert p.op_statistic_busy_us(rows) == 900
    split = p.rank_split(p.parse_step_trace(STEP_V1), op_stats=rows)
    assert split[0]['aicore_util_pct'] == 90.0 and split[0]['aicore_from'] == 'op_statistic'


def test_rank_split_matches_kernel_steps_to_trace_steps():
    kernels = p.parse_kernel_details(
        'Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us)\n'
        '10,MatMul,MatMul,AI_CORE,0,800\n11,MatMul,MatMul,AI_CORE,1000,500\n')
    split = p.rank_split(p.parse_step_trace(STEP_V3), kernels=kernels)
    assert [item['aicore_util_pct'] for item in split] == [80.0, 50.0]
    assert all(item['aicore_from'] == 'kernel_details' for item in split)
