# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser tests over the fixture tree tests/unit/fixtures/parsers/<tool>/<query>/<case>.{txt,json,source}.

Each ``.txt`` is one sample of vendor output split byte for byte from tests/fixtures/captures;
``.json`` is the expected parse; ``.source`` names the capture, its lines and the kind of
sample (real, doc, mock or derived). The ``errors`` query of a tool runs the
``classify_error`` of the tool's adapter.
"""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils._parsers import (
    cpupower, hccl_bench, hccn_tool, host, npu_smi, numa, train_log, versions)
from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import MAX_CPUS, compact_cpu_list, expand_cpu_list, unit_key
from ansible_collections.npuops.ascend.plugins.module_utils._tools import hccn_tool as _hccn_tool
from ansible_collections.npuops.ascend.plugins.module_utils._tools import npu_smi as _npu_smi

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.normpath(os.path.join(HERE, '..', '..', 'fixtures', 'parsers'))
CAPTURES = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'fixtures', 'captures'))

MODULES = {'hccn_tool': hccn_tool, 'npu_smi': npu_smi, 'numa': numa, 'versions': versions, 'hccl_bench': hccl_bench,
           'cpupower': cpupower, 'train_log': train_log, 'host': host}
ELISION = ('...', '... ...')


def _read(path):
    with open(path, encoding='utf-8') as handle:
        return handle.read()


def _source(path):
    fields = {}
    for line in _read(path).splitlines():
        key, sep, value = line.partition(':')
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def _cases():
    found = []
    for tool in sorted(os.listdir(TREE)):
        if not os.path.isdir(os.path.join(TREE, tool)):
            continue
        for query in sorted(os.listdir(os.path.join(TREE, tool))):
            folder = os.path.join(TREE, tool, query)
            for name in sorted(os.listdir(folder)):
                if name.endswith('.txt'):
                    found.append(pytest.param(tool, query, os.path.join(folder, name[:-4]), id='%s/%s/%s' % (tool, query, name[:-4])))
    return found


CASES = _cases()


ADAPTERS = {'hccn_tool': _hccn_tool, 'npu_smi': _npu_smi}


def _run(tool, query, text):
    if query == 'errors':
        found = ADAPTERS[tool].classify_error(text)
        if found is not None:
            found.pop('hint')
        return found
    return MODULES[tool].PARSERS[query](text)


def _plain(value):
    """JSON round trip: int dict keys become strings, as in the expected files."""
    return json.loads(json.dumps(value))


def test_tree_is_not_empty():
    assert len(CASES) > 100


@pytest.mark.parametrize('tool,query,base', CASES)
def test_fixture_parses_to_expected(tool, query, base):
    expected = json.loads(_read(base + '.json'))
    assert _plain(_run(tool, query, _read(base + '.txt'))) == expected


@pytest.mark.parametrize('tool,query,base', CASES)
def test_fixture_has_a_source_note_naming_a_capture(tool, query, base):
    source = _source(base + '.source')
    assert source['kind'] in ('real', 'doc', 'mock', 'derived')
    capture = source['capture'].rsplit('/', 1)[-1]
    assert os.path.exists(os.path.join(CAPTURES, capture)), capture


@pytest.mark.parametrize('tool,query,base', CASES)
def test_samples_are_verbatim_lines_of_their_capture(tool, query, base):
    source = _source(base + '.source')
    if source['kind'] == 'derived':
        pytest.skip('derived from format notes, not cut from a capture')
    capture = _read(os.path.join(CAPTURES, source['capture'].rsplit('/', 1)[-1]))
    text = _read(base + '.txt')
    if text:
        assert text in capture + '\n'


@pytest.mark.parametrize('tool,query,base', [c for c in CASES if c.values[1] != 'errors'])
def test_real_samples_leave_nothing_unparsed(tool, query, base):
    """The 'please report' warning must never fire on a real sample (elision marks of a doc aside)."""
    source = _source(base + '.source')
    parsed = _run(tool, query, _read(base + '.txt'))
    assert isinstance(parsed['unparsed'], list)
    if source.get('elided') == 'yes':
        assert parsed['unparsed'] and all(line.strip() in ELISION for line in parsed['unparsed'])
    else:
        assert parsed['unparsed'] == []


@pytest.mark.parametrize('module', sorted(MODULES.values(), key=lambda m: m.__name__), ids=lambda m: m.__name__.rsplit('.', 1)[-1])
def test_every_parser_has_a_docstring_sample_and_handles_empty_text(module):
    for query, parser in module.PARSERS.items():
        assert parser.__doc__ and 'Sample' in parser.__doc__, query
        for empty in ('', None):
            result = parser(empty)
            assert isinstance(result, dict) and result['unparsed'] == [], query


def test_parser_tables_cover_the_documented_queries():
    assert set(hccn_tool.PARSERS) >= {'link', 'ip', 'gateway', 'net_health', 'tls', 'pfc', 'pfc_stat', 'dscp_to_tc', 'mtu', 'netdetect',
                                      'optical', 'stat', 'lldp', 'link_stat'}
    assert set(npu_smi.PARSERS) >= {'info', 'list', 'mapping', 'board', 'health', 'ecc', 'temp', 'power', 'usages', 'common', 'topo',
                                    'proc_mem', 'pcie_err', 'memory'}


def _fixture(path):
    return _read(os.path.join(TREE, path))


def test_info_five_digit_hbm_without_space_before_slash():
    parsed = npu_smi.parse_info(_fixture('npu_smi/info/vllm5111_910b2_25.2.0_busy.txt'))
    first = parsed['devices'][0]
    assert (first['hbm_used_mb'], first['hbm_total_mb']) == (46456, 65536)
    assert isinstance(first['power_w'], float) and isinstance(first['temp_c'], int)


def test_info_process_table():
    parsed = npu_smi.parse_info(_fixture('npu_smi/info/vllm5111_910b2_25.2.0_busy.txt'))
    assert len(parsed['processes']) == 8
    assert parsed['processes'][7] == {'npu': 7, 'chip': 0, 'pid': 16150, 'name': 'VLLMWorker_DP', 'memory_mb': 43094, 'container_pid': None}


def test_info_empty_process_name_and_byte_header():
    text = ('+----------------------+---------------+----------------------------------------------------+\n'
            '| NPU     Chip         | Process id    | Process name             | Process memory(B)       |\n'
            '+======================+===============+====================================================+\n'
            '| 3       0            | 4242          |                          | 1073741824              |\n')
    parsed = npu_smi.parse_info(text)
    assert parsed['processes'] == [{'npu': 3, 'chip': 0, 'pid': 4242, 'name': '', 'memory_mb': 1024, 'container_pid': None}]
    assert parsed['unparsed'] == []


def test_info_width_does_not_matter():
    narrow = _fixture('npu_smi/info/yuanrong_910a_91col_warning.txt')
    wide = '\n'.join(line[:-1] + '      |' if line.startswith('|') else line for line in narrow.splitlines())
    assert npu_smi.parse_info(wide)['devices'] == npu_smi.parse_info(narrow)['devices']


def test_info_a3_rows_keep_both_dies():
    parsed = npu_smi.parse_info(_fixture('npu_smi/info/derived_a3_two_dies.txt'))
    assert [(d['npu'], d['chip'], d['phy_id'], d['power_w']) for d in parsed['devices']] == [(0, 0, 0, 165.3), (0, 1, 1, None)]


def test_info_driver_warning_line_is_kept_apart():
    text = _fixture('npu_smi/info/swift_910b3_24.1.rc1_no_process_table.txt')
    text += '[WARNING]The driver package may not be completely installed, which may cause function abnormal. Please reinstall it.\n'
    parsed = npu_smi.parse_info(text)
    assert parsed['unparsed'] == [] and len(parsed['warnings']) == 1


def test_mapping_mcu_rows():
    parsed = npu_smi.parse_mapping(_fixture('npu_smi/mapping/blog_910b4_with_mcu.txt'))
    mcu = [d for d in parsed['devices'] if d['name'] == 'Mcu']
    assert len(mcu) == 8 and all(d['logic_id'] is None and d['chip'] == 1 for d in mcu)


def test_topo_multipul_legend_typo():
    text = ('\t   NPU0       NPU1       CPU Affinity\n'
            'NPU0       X          HCCS       0-23\n'
            'NPU1       HCCS       X          0-23\n'
            '\nLegend:\n\n'
            '  X    = Self\n'
            '  PXB  = Path traversing multipul PCIe switches\n')
    parsed = npu_smi.parse_topo(text)
    assert parsed['unparsed'] == []
    assert parsed['legend']['PXB'] == 'Path traversing multipul PCIe switches'
    assert parsed['devices'][1] == {'npu': 1, 'links': {'NPU0': 'HCCS'}, 'cpu_affinity': '0-23'}


def test_health_accepts_both_keys():
    for key in ('Health Status', 'Health'):
        parsed = npu_smi.parse_health('\t%-30s : Warning\n' % key)
        assert parsed['health'] == 'Warning' and parsed['unparsed'] == []


def test_npu_smi_errors():
    assert _npu_smi.classify_error('Invalid card id.\n')['error'] == 'invalid_card'
    assert _npu_smi.classify_error(_fixture('npu_smi/info/vllm198_910b3_23.0.7_idle.txt')) is None


def test_hccn_not_configured_path():
    error = _hccn_tool.classify_error('Get ipconf failed, because no ip was preset there!\n')
    assert error['not_configured'] is True
    assert hccn_tool.parse_ip_get('') == {'address': None, 'netmask': None, 'unparsed': []}
    assert _hccn_tool.classify_error('Execute failed: Link status is down.')['not_configured'] is False


def test_dscp_map_has_int_keys():
    parsed = hccn_tool.parse_dscp_to_tc_get(_fixture('hccn_tool/dscp_to_tc/derived_single_dscp.txt'))
    assert parsed['map'] == {33: 2}


def test_net_health_and_netdetect_variants():
    assert hccn_tool.parse_net_health_get('net health status: Receive timeout\n')['net_health'] == 'Receive timeout'
    assert hccn_tool.parse_netdetect_get('netdetect addr: 1.2.3.4\n')['netdetect'] == '1.2.3.4'
    assert hccn_tool.parse_netdetect_get('netdetect address: 1.2.3.4\n')['netdetect'] == '1.2.3.4'


def test_unknown_line_is_returned_not_dropped():
    parsed = hccn_tool.parse_link_get('link status: UP\nsomething new\n')
    assert parsed == {'link': 'UP', 'unparsed': ['something new']}


def test_hccl_test_accepts_both_time_headers():
    for header in ('aveg_time(us):', 'avg_time(us):'):
        text = 'data_size(Bytes): | %s | alg_bandwidth(GB/s): | check_result:\n1024 | 60.70 | 0.01687 | NULL\n' % header
        parsed = hccl_bench.parse_hccl_test(text)
        assert parsed['rows'][0]['check_result'] == 'NULL' and parsed['unparsed'] == []


def test_busbw_factor():
    assert hccl_bench.busbw_factor(8) == pytest.approx(1.75)
    assert hccl_bench.busbw_factor(1) == 0.0


def test_cpu_list_round_trip():
    assert expand_cpu_list('0-3,48') == [0, 1, 2, 3, 48]
    assert expand_cpu_list('144-167') == list(range(144, 168))
    assert compact_cpu_list([48, 0, 1, 2, 3]) == '0-3,48'
    assert compact_cpu_list([]) == ''
    assert numa.compact_cpu_list(numa.expand_cpu_list('0-23,48-71')) == '0-23,48-71'
    with pytest.raises(ValueError):
        expand_cpu_list('3-1')
    with pytest.raises(ValueError):
        expand_cpu_list('a-b')


def test_cpu_list_is_bounded():
    assert MAX_CPUS == 65536
    assert expand_cpu_list('65535') == [65535]
    with pytest.raises(ValueError, match=r'CPU range 0-99999999999 goes beyond 65535, the highest CPU number accepted'):
        expand_cpu_list('0-99999999999')
    with pytest.raises(ValueError, match='goes beyond 7'):
        expand_cpu_list('0-8', limit=8)
    assert expand_cpu_list('0-7', limit=8) == list(range(8))
    for bad in ('1' * 5000, '0-' + '9' * 5000, '\u0663', '1\x002', 'x-NA', '144-16'):
        with pytest.raises(ValueError):
            expand_cpu_list(bad)
    with pytest.raises(ValueError, match='negative'):
        compact_cpu_list([-1, 2])


def test_cpupower_policy_lines():
    parse = cpupower.parse_frequency_info_policy
    # the reflowed copy of the TiDB English guide keeps 'within this range.' on the governor line
    text = ('analyzing CPU 0:\n'
            'current policy: frequency should be within 1.20 GHz and 3.10 GHz.\n'
            '              The governor "performance" may decide which speed to use within this range.\n')
    assert parse(text) == {'cpus': {0: 'performance'}, 'unparsed': []}
    assert parse('analyzing CPU 65536:\n') == {'cpus': {}, 'unparsed': ['analyzing CPU 65536:']}
    orphan = '                  The governor "powersave" may decide which speed to use'
    assert parse(orphan + '\n') == {'cpus': {}, 'unparsed': [orphan]}
    assert parse('analyzing CPU 1:\nsomething new\n') == {'cpus': {1: None}, 'unparsed': ['something new']}


def test_unit_keys():
    assert unit_key('HBM Capacity(MB)') == 'hbm_capacity_mb'
    assert unit_key('Aicore Usage Rate(%)') == 'aicore_usage_pct'
    assert unit_key('NPU Temperature (C)') == 'npu_temperature_c'
    assert unit_key('NPU Real-time Power(W)') == 'npu_real_time_power_w'
    assert unit_key('Aicore curFreq(MHZ)') == 'aicore_cur_freq_mhz'


def test_info_26x_process_table_has_a_container_pid_column():
    """npu-smi 26.x prints a fifth process cell, 'Process id in container': memory stays memory, the name stays the name."""
    parsed = npu_smi.parse_info(_fixture('npu_smi/info/noroot_910b3_26.1.0_container_pid.txt'))
    assert parsed['processes'] == [{'npu': 0, 'chip': 0, 'pid': 485946, 'name': 'pytest', 'memory_mb': 5175, 'container_pid': None}]
    assert parsed['unparsed'] == [] and len(parsed['devices']) == 8
    # a process started in a container: its pid there (the same row with the NA replaced, a synthetic input)
    text = _fixture('npu_smi/info/hushell_910b3_26_indented.txt').replace('| NA                      |', '| 4242                    |')
    assert npu_smi.parse_info(text)['processes'] == [
        {'npu': 0, 'chip': 0, 'pid': 1712733, 'name': 'sglangschedul', 'memory_mb': 48954, 'container_pid': 4242}]
