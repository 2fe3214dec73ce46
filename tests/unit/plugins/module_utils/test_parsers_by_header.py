# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every table parser finds its columns by their header labels.

The real layouts are the fixture tree (tests/unit/fixtures/parsers, test_parsers.py). The inputs here are SYNTHETIC:
a real sample with a column added, removed, moved or damaged, to show that a parser
- reads each column by its label, in whatever order the header prints them,
- keeps a column it does not know under ``extra``, keyed by the header label as printed,
- and puts a row it cannot place (more or fewer cells than its header) in ``unparsed`` (or, for the device rows of
  ``npu-smi info``, in ``errors``), never reading its cells as other columns.
"""

from __future__ import annotations

import os

from ansible_collections.npuops.ascend.plugins.module_utils._parsers import hccl_bench, hccn_tool, io, npu_smi, numa

TREE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'fixtures', 'parsers'))


def fixture(case):
    with open(os.path.join(TREE, case), encoding='utf-8') as handle:
        return handle.read()


# ------------------------------------------------------------------------------------------------ npu-smi info

PROC_HEAD_5 = '| NPU     Chip              | Process id    | Process name       | Process memory(MB)    | Process id in container |'
PROC_ROW_5 = '| 0       0                 | 485946        | pytest             | 5175                  | NA                      |'


def test_process_columns_in_another_order_are_read_by_label():
    text = ('| NPU     Chip   | Process name       | Process id in container | Process memory(MB)    | Process id    |\n'
            '| 3       0      | python             | 17                      | 2048                  | 1234          |\n')
    parsed = npu_smi.parse_info(text)
    assert parsed['processes'] == [{'npu': 3, 'chip': 0, 'pid': 1234, 'name': 'python', 'memory_mb': 2048, 'container_pid': 17}]
    assert parsed['unparsed'] == []


def test_process_column_not_known_is_kept_under_extra():
    text = ('| NPU     Chip   | Process id    | Process name  | Process memory(MB)  | Process state |\n'
            '| 1       0      | 99            | train.py      | 300                 | R             |\n')
    parsed = npu_smi.parse_info(text)
    assert parsed['processes'] == [{'npu': 1, 'chip': 0, 'pid': 99, 'name': 'train.py', 'memory_mb': 300, 'container_pid': None,
                                    'extra': {'Process state': 'R'}}]
    assert parsed['unparsed'] == []


def test_process_row_with_a_cell_too_few_or_too_many_is_flagged_not_misread():
    # the 25.x four-cell row under the 26.x five-cell header, and a five-cell row under the 25.x four-cell header
    four = '| 0       0                 | 485946        | pytest             | 5175                  |'
    old_head = '| NPU     Chip              | Process id    | Process name       | Process memory(MB)    |'
    for head, row in ((PROC_HEAD_5, four), (old_head, PROC_ROW_5)):
        parsed = npu_smi.parse_info(head + '\n' + row + '\n')
        assert parsed['processes'] == []
        assert parsed['unparsed'] == [row]


def test_process_row_with_a_value_that_is_not_a_number_is_flagged():
    row = PROC_ROW_5.replace('5175 ', '5x75 ')
    parsed = npu_smi.parse_info(PROC_HEAD_5 + '\n' + row + '\n')
    assert (parsed['processes'], parsed['unparsed']) == ([], [row])


def test_device_cell_not_known_is_kept_under_extra():
    text = ('| NPU   Name      | Health   | Power(W)   Temp(C)   Hugepages-Usage(page) | Fan-Speed(%)  |\n'
            '| Chip            | Bus-Id   | AICore(%)  Memory-Usage(MB)  HBM-Usage(MB) | Voltage(V)    |\n'
            '| 0     910B3     | OK       | 93.1       39        0 / 0                 | 30            |\n'
            '| 0               | 0000:C1:00.0 | 2      0 / 0     3338 / 65536          | 0.9           |\n')
    parsed = npu_smi.parse_info(text)
    assert parsed.get('errors') is None, parsed.get('errors')
    device = parsed['devices'][0]
    assert (device['power_w'], device['temp_c'], device['aicore_pct'], device['hbm_used_mb'], device['bus_id']) == (
        93.1, 39, 2, 3338, '0000:C1:00.0')
    assert device['extra'] == {'Fan-Speed(%)': 30, 'Voltage(V)': 0.9}


def test_device_value_label_not_known_is_kept_under_extra_and_the_others_by_label():
    text = ('| NPU   Name      | Health   | Temp(C)   Power(W)                          |\n'
            '| Chip            | Bus-Id   | NPU Util(%)   HBM-Usage(MB)   AICore(%)     |\n'
            '| 0     910B3     | OK       | 39        93.1                              |\n'
            '| 0               | 0000:C1:00.0 | 55    3338 / 65536    2                 |\n')
    device = npu_smi.parse_info(text)['devices'][0]
    assert (device['power_w'], device['temp_c'], device['aicore_pct'], device['hbm_used_mb'], device['hbm_total_mb']) == (
        93.1, 39, 2, 3338, 65536)
    assert device['extra'] == {'NPU Util(%)': 55}
    assert device['hugepages_used_pages'] is None and device['memory_used_mb'] is None


def test_device_cells_in_another_order_are_read_by_label():
    text = ('| Health   | NPU   Name      | Power(W)   Temp(C)   Hugepages-Usage(page) |\n'
            '| Bus-Id   | Chip            | AICore(%)  Memory-Usage(MB)  HBM-Usage(MB) |\n'
            '| OK       | 5     910B3     | 93.1       39        0 / 0                 |\n'
            '| 0000:C1:00.0 | 0          | 2          0 / 0     3338 / 65536          |\n')
    parsed = npu_smi.parse_info(text)
    assert parsed['unparsed'] == [] and 'errors' not in parsed
    device = parsed['devices'][0]
    assert (device['npu'], device['name'], device['health'], device['chip'], device['bus_id'], device['hbm_used_mb']) == (
        5, '910B3', 'OK', 0, '0000:C1:00.0', 3338)


def test_device_row_with_a_cell_too_many_is_an_error_not_a_device():
    head = fixture('npu_smi/info/triton_910b4_26.0.rc1_idle.txt').splitlines()[:6]
    npu_row = '| 0     910B4               | OK            | 82.6                 32                      0    / 0                | 7 |'
    chip_row = '| 0                         | 0000:C1:00.0  | 0                    0    / 0                2871 / 32768            |'
    parsed = npu_smi.parse_info('\n'.join(head + [npu_row, chip_row]) + '\n')
    assert parsed['devices'] == []
    assert parsed['errors'] == [{'npu': 0, 'msg': 'the row has 4 cells, its header 3', 'lines': [npu_row, chip_row]}]


# ------------------------------------------------------------------------------------------------ npu-smi info -m

def test_mapping_columns_in_another_order_and_a_column_not_known():
    text = ('\tChip Name                      NPU ID                         Chip Type                      Chip ID\n'
            '\tAscend 910B4                   0                              A2                             0\n'
            '\tMcu                            0                              MCU                            1\n')
    parsed = npu_smi.parse_mapping(text)
    assert parsed['devices'] == [{'npu': 0, 'chip': 0, 'name': 'Ascend 910B4', 'extra': {'Chip Type': 'A2'}},
                                 {'npu': 0, 'chip': 1, 'name': 'Mcu', 'extra': {'Chip Type': 'MCU'}}]
    assert parsed['unparsed'] == []


def test_mapping_row_with_a_cell_too_many_is_flagged():
    lines = fixture('npu_smi/mapping/blog_910b4_with_mcu.txt').splitlines()
    bad = lines[1] + '                  7'
    parsed = npu_smi.parse_mapping('\n'.join([lines[0], bad, lines[2]]) + '\n')
    assert parsed['unparsed'] == [bad]
    assert [d['chip'] for d in parsed['devices']] == [1]


# ------------------------------------------------------------------------------------------------ npu-smi info -t topo

def test_topo_columns_in_another_order_and_a_column_not_known():
    text = ('\t   CPU Affinity    NPU1       NPU0       NUMA Affinity\n'
            'NPU0       144-167         HCCS       X          6\n'
            'NPU1       144-167         X          HCCS       6\n')
    parsed = npu_smi.parse_topo(text)
    assert parsed['devices'] == [
        {'npu': 0, 'links': {'NPU1': 'HCCS'}, 'cpu_affinity': '144-167', 'extra': {'NUMA Affinity': '6'}},
        {'npu': 1, 'links': {'NPU0': 'HCCS'}, 'cpu_affinity': '144-167', 'extra': {'NUMA Affinity': '6'}}]
    assert parsed['unparsed'] == []


def test_topo_row_with_a_cell_too_many_is_flagged_not_read_as_affinity():
    lines = fixture('npu_smi/topo/swift_910b3_24.1.rc1.txt').splitlines()
    bad = lines[1] + '       0'
    parsed = npu_smi.parse_topo('\n'.join([lines[0], bad, lines[2]]) + '\n')
    assert parsed['unparsed'] == [bad]
    assert [d['npu'] for d in parsed['devices']] == [1]


# ------------------------------------------------------------------------------------------------ hccn_tool

def test_pfc_enabled_row_shorter_than_the_priority_row_is_flagged():
    text = 'PFC configuration:\npriority   0 1 2 3 4 5 6 7\nenabled    0 0 0 1 0 0 0\n'
    parsed = hccn_tool.parse_pfc_get(text)
    assert (parsed['priorities'], parsed['bitmap']) == (None, None)
    assert parsed['unparsed'] == ['enabled    0 0 0 1 0 0 0']


def test_pfc_row_not_known_is_kept_under_extra():
    text = 'PFC configuration:\npriority   0 1 2 3 4 5 6 7\nenabled    0 0 0 0 1 0 0 0\npaused     0 0 0 0 9 0 0 0\n'
    parsed = hccn_tool.parse_pfc_get(text)
    assert parsed['priorities'] == [4] and parsed['unparsed'] == []
    assert parsed['extra'] == {'paused': {0: '0', 1: '0', 2: '0', 3: '0', 4: '9', 5: '0', 6: '0', 7: '0'}}


def test_dscp_to_tc_columns_in_another_order_and_a_column_not_known():
    text = '  tc    dscp   queue\n   3      46       5\n   0       0       0\n'
    parsed = hccn_tool.parse_dscp_to_tc_get(text)
    assert parsed['map'] == {46: 3, 0: 0}
    assert parsed['extra'] == {'queue': {46: '5', 0: '0'}}
    assert parsed['unparsed'] == []


def test_dscp_to_tc_row_with_a_cell_too_many_is_flagged():
    text = 'dscp      tc\n  46       3       1\n   0       0\n'
    parsed = hccn_tool.parse_dscp_to_tc_get(text)
    assert parsed['map'] == {0: 0}
    assert parsed['unparsed'] == ['  46       3       1']


# ------------------------------------------------------------------------------------------------ hccl_test

def test_hccl_test_columns_in_another_order_and_a_column_not_known():
    text = ('check_result: | alg_bandwidth(GB/s): | data_size(Bytes): | aveg_time(us): | bus_bandwidth(GB/s):\n'
            'success       | 0.52429              | 524288            | 1000.00        | 0.91751\n')
    parsed = hccl_bench.parse_hccl_test(text)
    assert parsed['rows'] == [{'data_size_bytes': 524288, 'avg_time_us': 1000.0, 'algbw_gb_s': 0.52429, 'check_result': 'success',
                               'extra': {'bus_bandwidth(GB/s)': 0.91751}}]
    assert parsed['unparsed'] == []


def test_hccl_test_row_with_a_cell_too_many_is_flagged():
    head = 'data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:'
    bad = '524288            | 1000.00        | 0.52429              | 0.9      | success'
    parsed = hccl_bench.parse_hccl_test(head + '\n' + bad + '\n')
    assert parsed['rows'] == [] and parsed['unparsed'] == [bad]


def test_torch_table_columns_in_another_order_and_a_column_not_known():
    text = ('busbw(GB/s)  data_size(MB)  avg(us)  min(us)  max(us)  p50(us)  p95(us)  p99(us)  algbw(GB/s)  jitter(us)\n'
            '142.71       96.00          1234.5   1200.1   1300.2   1230.0   1290.4   1299.9   81.55        3.5\n')
    parsed = hccl_bench.parse_torch_allreduce(text)
    assert parsed['rows'][0]['busbw_gb_s'] == 142.71 and parsed['rows'][0]['data_size_mb'] == 96.0
    assert parsed['rows'][0]['extra'] == {'jitter(us)': 3.5}
    assert (parsed['algbw_gb_s'], parsed['busbw_gb_s'], parsed['unparsed']) == (81.55, 142.71, [])


# ------------------------------------------------------------------------------------------------ numactl -H

def test_numactl_distance_row_with_a_cell_too_few_is_flagged():
    text = 'node distances:\nnode   0   1   2\n  0:  10  11  12\n  1:  11  10\n  2:  12  11  10\n'
    parsed = numa.parse_numactl(text)
    assert parsed['unparsed'] == ['  1:  11  10']
    assert parsed['distances'] == []


def test_numactl_distance_columns_in_another_order_are_read_by_label():
    text = 'node distances:\nnode   1   0\n  1:  10  20\n  0:  20  10\n'
    assert numa.parse_numactl(text)['distances'] == [[10, 20], [20, 10]]
    text = 'node distances:\nnode   1   0\n  1:  10  21\n  0:  20  10\n'
    # row 0 -> column 1 is 20, row 1 -> column 0 is 21
    assert numa.parse_numactl(text)['distances'] == [[10, 20], [21, 10]]


# ------------------------------------------------------------------------------------------------ iostat, vmstat

def test_iostat_cpu_column_not_known_is_kept_under_extra():
    text = 'avg-cpu:  %user   %nice %system %iowait  %steal  %guest   %idle\n           0.40    0.00    0.31    0.00    0.00    1.25   98.04\n'
    parsed = io.parse_iostat(text)
    assert parsed['reports'] == [{'user_pct': 0.4, 'nice_pct': 0.0, 'system_pct': 0.31, 'iowait_pct': 0.0, 'steal_pct': 0.0,
                                  'idle_pct': 98.04, 'extra': {'%guest': 1.25}}]
    assert parsed['unparsed'] == []


def test_vmstat_columns_in_another_order_are_read_by_label_and_a_short_row_is_flagged():
    text = (' b  r   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st\n'
            ' 0  1      0 24085136  13888 427536    0    0   327   143  329  577 30  6 63  0  0\n'
            ' 0  1      0 24085136  13888 427536    0    0   327   143  329  577 30  6 63  0\n')
    parsed = io.parse_vmstat(text)
    assert [(s['r'], s['b'], s['us']) for s in parsed['samples']] == [(1, 0, 30)]
    assert parsed['unparsed'] == [text.splitlines()[2]]
