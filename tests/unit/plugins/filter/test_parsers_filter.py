"""The controller-side filters run the same parsers as the modules, on captured text."""

from __future__ import annotations

import json
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.filter import npu_smi_parse as parsers
from ansible_collections.npuops.ascend.plugins.module_utils import _parsers

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'parsers')


def _case(tool, query, name):
    base = os.path.join(FIXTURES, tool, query, name)
    with open(base + '.txt', encoding='utf-8') as handle:
        text = handle.read()
    with open(base + '.json', encoding='utf-8') as handle:
        expected = json.load(handle)
    return text, expected


def _jsonable(value):
    # the expected files are JSON, so integer dict keys (DSCP values) come back as strings
    return json.loads(json.dumps(value))


def test_filter_table():
    assert sorted(parsers.FilterModule().filters()) == ['cpu_list', 'hccn_parse', 'npu_smi_parse', 'train_log_parse']


def test_hccn_parse_real_pfc_sample():
    text, expected = _case('hccn_tool', 'pfc', 'hixl_dev0_prio4')
    result = parsers.hccn_parse(text, 'pfc')
    assert result['priorities'] == [4]
    assert result['bitmap'] == '0,0,0,0,1,0,0,0'
    assert _jsonable(result) == {k: v for k, v in expected.items() if not k.startswith('_')}


def test_npu_smi_parse_real_table_and_dash_in_view_name():
    text, expected = _case('npu_smi', 'info', 'vllm5111_910b2_25.2.0_busy')
    result = parsers.npu_smi_parse(text, 'info')
    assert _jsonable(result) == {k: v for k, v in expected.items() if not k.startswith('_')}
    assert len(result['devices']) == 8 and result['processes'], result['processes']
    assert parsers.npu_smi_parse('', 'proc-mem') == parsers.npu_smi_parse('', 'proc_mem')


def test_text_given_as_lines_or_bytes():
    lines = ['PFC configuration:', 'priority   0 1 2 3 4 5 6 7', 'enabled    0 0 0 1 1 0 0 0']
    assert parsers.hccn_parse(lines, 'pfc')['priorities'] == [3, 4]
    assert parsers.hccn_parse('\n'.join(lines).encode(), 'pfc')['bitmap'] == '0,0,0,1,1,0,0,0'


def test_unknown_query_names_the_known_ones():
    with pytest.raises(AnsibleFilterError, match=r"unknown query 'pfcs'.*pfc"):
        parsers.hccn_parse('', 'pfcs')
    with pytest.raises(AnsibleFilterError, match='expects the text output'):
        parsers.npu_smi_parse({'not': 'text'}, 'info')


@pytest.mark.parametrize('value, expected', [
    ('144-167', list(range(144, 168))),
    ('0-2,5,7-8', [0, 1, 2, 5, 7, 8]),
    ([0, 1, 2, 3, 48], '0-3,48'),
    ([5, 3, 4], '3-5'),
])
def test_cpu_list_both_ways(value, expected):
    assert parsers.cpu_list(value) == expected


def test_cpu_list_rejects_garbage():
    with pytest.raises(AnsibleFilterError, match='cpu_list'):
        parsers.cpu_list('0-x')


@pytest.mark.parametrize('value', ['65536', '0-65536', '70000-70001', '99999999999-99999999999', '1' * 30])
def test_cpu_list_refuses_ranges_beyond_the_bound(value):
    with pytest.raises(AnsibleFilterError, match=r'cpu_list: cannot expand .*%s.*goes beyond 65535, the highest CPU number accepted'
                       % value[:20]):
        parsers.cpu_list(value)


def test_cpu_list_bound_is_inclusive_up_to_65535():
    assert parsers.cpu_list('65534-65535') == [65534, 65535]
    assert parsers.cpu_list([65535, '0', 1.0]) == '0-1,65535'
    with pytest.raises(AnsibleFilterError, match=r'list element 65536 at index 1 .*goes beyond 65535'):
        parsers.cpu_list([0, 65536])


@pytest.mark.parametrize('value, bad', [
    ([-1, 2], '-1'),
    ([True, 2], 'True'),
    ([0, False], 'False'),
    ([1.7, 3], '1.7'),
    ([0, '0-3'], "'0-3'"),
    ([0, '-2'], "'-2'"),
    ([0, None], 'None'),
    ([0, '\u0663'], "'\u0663'"),
], ids=['negative', 'true', 'false', 'fraction', 'range string', 'negative string', 'none', 'arabic-indic digit'])
def test_cpu_list_refuses_list_elements_that_are_not_cpu_numbers(value, bad):
    with pytest.raises(AnsibleFilterError) as caught:
        parsers.cpu_list(value)
    message = str(caught.value)
    assert message.startswith('cpu_list: list element %s at index ' % bad), message


def test_cpu_list_refuses_other_types_by_name():
    with pytest.raises(AnsibleFilterError, match='expects a CPU range string or a list of CPU numbers, got dict'):
        parsers.cpu_list({'cpus': '0-3'})
    with pytest.raises(AnsibleFilterError, match='got bool'):
        parsers.cpu_list(True)


@pytest.mark.parametrize('filter_name, module, query', [
    ('hccn_parse', 'hccn_tool', 'pfc'),
    ('npu_smi_parse', 'npu_smi', 'info'),
])
def test_a_parser_bug_is_reported_as_a_filter_error(monkeypatch, filter_name, module, query):
    def broken(text):
        return 1 // 0

    # the filters import the parser modules when they run (module_utils/_parsers), so the table is patched there
    import importlib
    table = importlib.import_module('%s.%s' % (_parsers.__name__, module)).PARSERS
    monkeypatch.setitem(table, query, broken)
    with pytest.raises(AnsibleFilterError) as caught:
        getattr(parsers, filter_name)('some output', query)
    message = str(caught.value)
    assert '%s: the %s parser (broken) failed' % (filter_name, query) in message
    assert 'ZeroDivisionError' in message and 'please report it' in message
    assert isinstance(caught.value.__cause__, ZeroDivisionError)
