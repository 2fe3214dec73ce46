# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""npu-smi parsers over the product line beyond the Atlas A2: 310, 310P, 310B, 910A and A3.

The samples are the fixture cases of tests/unit/fixtures/parsers/npu_smi (real captures from
tests/fixtures/captures/npu-smi_info_{310,a3,910a}.txt, npu-smi_info_-t_topo_a3.txt and
npu-smi_info_-m_products.txt); these tests name the facts each layout must keep.
"""

from __future__ import annotations

import os

from ansible_collections.npuops.ascend.plugins.module_utils._domain.npu_info import assemble, table_errors
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import npu_smi

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.normpath(os.path.join(HERE, '..', '..', 'fixtures', 'parsers', 'npu_smi'))

KEYS = {'npu', 'name', 'health', 'power_w', 'temp_c', 'hugepages_used_pages', 'hugepages_total_pages', 'chip', 'bus_id',
        'aicore_pct', 'memory_used_mb', 'memory_total_mb', 'hbm_used_mb', 'hbm_total_mb'}


def _text(query, case):
    with open(os.path.join(TREE, query, case + '.txt'), encoding='utf-8') as handle:
        return handle.read()


def _info(case):
    parsed = npu_smi.parse_info(_text('info', case))
    assert parsed['unparsed'] == [] and 'errors' not in parsed, case
    return parsed


def test_310p_duo_two_chips_share_one_bus_id_and_card_id():
    devices = _info('vllm4148_310p3_duo_25.2.0')['devices']
    assert [(d['npu'], d['chip'], d['device'], d['bus_id']) for d in devices] == [
        (64, 0, 0, '0000:03:00.0'), (64, 1, 1, '0000:03:00.0'), (32832, 0, 2, '0000:83:00.0'), (32832, 1, 3, '0000:83:00.0')]
    for device in devices:
        assert set(device) == KEYS | {'device'}
        assert device['power_w'] is None and device['hbm_used_mb'] is None and device['hbm_total_mb'] is None
        assert (device['hugepages_used_pages'], device['hugepages_total_pages']) == (0, 0)
    assert [(d['memory_used_mb'], d['memory_total_mb']) for d in devices[:2]] == [(1526, 44280), (1429, 43693)]


def test_310p_large_card_ids():
    devices = _info('vllm2712_310p3_large_card_ids_25.2.0')['devices']
    assert [d['npu'] for d in devices] == [0, 32, 96, 32768, 32800, 32896]
    assert [d['device'] for d in devices] == [0, 1, 2, 3, 4, 5]
    assert all(d['chip'] == 0 and d['memory_total_mb'] == 21527 for d in devices)


def test_310_irregular_hugepages_spacing_and_narrow_tables():
    (device,) = _info('drivers_310_23.0.0')['devices']
    assert (device['hugepages_used_pages'], device['hugepages_total_pages']) == (0, 969)
    assert (device['memory_used_mb'], device['memory_total_mb'], device['power_w']) == (577, 7759, 12.8)
    (card2144,) = _info('modelzoo_310p3_card2144_22.0.4')['devices']
    assert (card2144['npu'], card2144['device'], card2144['power_w']) == (2144, 0, None)
    assert (card2144['memory_used_mb'], card2144['memory_total_mb']) == (1807, 21527)


def test_atlas300_without_hugepages_column_four_chips_per_card():
    parsed = _info('jsc_atlas300_4x310_20.2.2')
    devices = parsed['devices']
    assert len(devices) == 20 and parsed['version'] == '20.2.2'
    assert [d['npu'] for d in devices[:5]] == [2048, 2048, 2048, 2048, 2049]
    assert [(d['chip'], d['device']) for d in devices[3:5]] == [(3, 3), (0, 4)]
    assert all(d['hugepages_used_pages'] is None and d['hugepages_total_pages'] is None for d in devices)
    assert all((d['memory_used_mb'], d['memory_total_mb']) == (2621, 8192) for d in devices)


def test_310b_and_atlas200dk_na_bus_id():
    for case, name, memory in (('readme_310b1_23.0.rc3', '310B1', (7356, 11577)), ('devboard_310b4_23.0.rc3', '310B4', (1797, 3513)),
                               ('mindx_atlas200dk_310_21.0.3.1', '310', (5324, 8192))):
        (device,) = _info(case)['devices']
        assert device['name'] == name and device['bus_id'] is None, case
        assert (device['memory_used_mb'], device['memory_total_mb']) == memory, case
    (board,) = _info('readme_310b1_23.0.rc3')['devices']
    assert (board['hugepages_used_pages'], board['hugepages_total_pages']) == (15, 15)


def test_a3_keeps_both_dies_and_phy_ids():
    devices = _info('vllm2666_a3_16dies_24.1.rc3.7')['devices']
    assert len(devices) == 16
    assert [(d['npu'], d['chip'], d['phy_id']) for d in devices[:4]] == [(0, 0, 0), (0, 1, 1), (1, 0, 2), (1, 1, 3)]
    assert all(d['power_w'] is None for d in devices if d['chip'] == 1)
    assert all(isinstance(d['power_w'], float) for d in devices if d['chip'] == 0)
    assert all(set(d) == KEYS | {'phy_id'} for d in devices)
    wide = _info('vllm12980_a3_26.0.rc2_cut')['devices']
    assert [(d['phy_id'], d['power_w'], d['hbm_used_mb']) for d in wide] == [(0, 162.6, 3419), (1, None, 2874)]


def test_910a_reads_ddr_and_hbm():
    devices = _info('paddle_910a_21.0.4')['devices']
    assert [(d['memory_used_mb'], d['memory_total_mb'], d['hbm_used_mb'], d['hbm_total_mb']) for d in devices] == [
        (839, 15170, 1, 32768), (1274, 15171, 1, 32768)]
    assert all((d['hugepages_used_pages'], d['hugepages_total_pages']) == (15, 15) for d in devices)
    old = _info('ascend_utils_910a_21.0.2')['devices']
    assert [(d['npu'], d['memory_total_mb'], d['hbm_total_mb'], d['hugepages_total_pages']) for d in old] == [
        (1, 15079, 32768, None), (4, 15079, 32768, None)]
    assert all(set(d) == KEYS for d in old)


def test_a2_rows_keep_their_shape():
    for device in _info('vllm5111_910b2_25.2.0_busy')['devices']:
        assert set(device) == KEYS


def test_unreadable_rows_become_errors_not_devices():
    parsed = npu_smi.parse_info(_text('info', 'derived_310p_unreadable_rows'))
    assert parsed['unparsed'] == []
    assert [(d['npu'], d['chip']) for d in parsed['devices']] == [(64, 0)]
    assert [(e['npu'], len(e['lines'])) for e in parsed['errors']] == [(64, 2), (32832, 1), (32832, 2), (32833, 2), (None, 1)]
    assert parsed['errors'][0]['msg'] == "not a number: '43693x'"
    assert parsed['errors'][1]['msg'] == 'the chip row of NPU 32832 is missing'
    assert all(line.startswith('|') for e in parsed['errors'] for line in e['lines'])


def test_chip_row_missing_at_the_end_and_before_the_process_table():
    header = ('| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|\n'
              '| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |\n')
    row = '| 3     910B3               | OK            | 102.8       55                0    / 0             |\n'
    process = '| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |\n'
    for text in (header + row, header + row + process):
        parsed = npu_smi.parse_info(text)
        assert parsed['devices'] == [] and parsed['unparsed'] == []
        assert parsed['errors'] == [{'npu': 3, 'msg': 'the chip row of NPU 3 is missing', 'lines': [row.rstrip('\n')]}]


def test_rows_without_header_read_in_the_910_layout():
    rows = ('| 0       310P3                 | OK              | NA           48                0     / 0             |\n'
            '| 0       0                     | 0000:01:00.0    | 0            1851 / 21527                            |\n')
    (device,) = npu_smi.parse_info(rows)['devices']
    assert (device['memory_used_mb'], device['memory_total_mb'], device['hbm_total_mb']) == (1851, 21527, None)
    assert device['phy_id'] == 0 and 'device' not in device


def test_a3_topology_by_phy_id():
    parsed = npu_smi.parse_topo(_text('topo', 'sglang30453_a3_two_dies'))
    assert parsed['unparsed'] == []
    assert parsed['devices'] == [{'phy_id': 12, 'links': {'Phy-ID13': 'SIO'}, 'cpu_affinity': None},
                                 {'phy_id': 13, 'links': {'Phy-ID12': 'SIO'}, 'cpu_affinity': None}]
    assert parsed['legend']['SIO'] == 'Path traversing the SIO bus'
    assert parsed['legend']['HCCS_SW'] == 'Connection traversing HCCS through a switch'
    four = npu_smi.parse_topo(_text('topo', 'derived_a3_four_dies_hccs'))
    assert four['devices'][0]['links'] == {'Phy-ID1': 'SIO', 'Phy-ID2': 'HCCS', 'Phy-ID3': 'HCCS'}


def test_a3_and_310p_mapping():
    a3 = npu_smi.parse_mapping(_text('mapping', 'xllm_a3_mock'))['devices']
    assert [(d['npu'], d['chip'], d['logic_id'], d['phy_id'], d['name']) for d in a3] == [
        (0, 0, 0, 0, 'Ascend910'), (0, 1, 1, 1, 'Ascend910'), (0, 2, None, None, 'Mcu'), (1, 0, 2, 2, 'Ascend910')]
    p310 = npu_smi.parse_mapping(_text('mapping', 'nputop_310p_mock'))['devices']
    assert [(d['npu'], d['chip'], d['logic_id'], d['name']) for d in p310] == [(32896, 0, 0, 'Ascend 310P3'), (32896, 1, None, 'Mcu')]


def test_npu_info_reports_unreadable_rows_as_failed_devices():
    table = npu_smi.parse_info(_text('info', 'derived_310p_unreadable_rows'))
    errors = table_errors(table, ['/usr/local/bin/npu-smi', 'info'], 'node1')
    assert [e['device'] for e in errors] == [64, 32832, 32832, 32833, None]
    assert errors[0]['msg'].startswith("NPU 64 on node1: a row of /usr/local/bin/npu-smi info could not be read (not a number: '43693x'); ")
    assert errors[4]['msg'].startswith('node1: a row of ')
    assert errors[0]['stdout'].count('\n') == 1 and errors[0]['query'] == 'info'
    result = assemble(table['version'], table, {}, [64, 32832, 32833], {}, set(), errors)
    assert result['summary']['unhealthy'] == [64, 32832, 32833]
    assert result['summary']['all_healthy'] is False
    assert [e['device'] for e in result['errors']] == [64, 32832, 32832, 32833, None]
    clean = npu_smi.parse_info(_text('info', 'vllm1563_310p3_duo_25.0.rc1.1'))
    assert table_errors(clean, ['npu-smi', 'info'], 'node1') == []
    healthy = assemble(clean['version'], clean, {}, [8], {}, set(), [])
    assert healthy['errors'] == [] and healthy['summary']['all_healthy'] is True
