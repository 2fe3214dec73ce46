"""The parser filters (npu_smi_parse, hccn_parse, train_log_parse, cpu_list) run the same parsers as the modules, on
captured text."""

from __future__ import annotations

import json
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.filter import npu_smi_parse as parsers
from ansible_collections.npuops.ascend.plugins.module_utils import _parsers
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import train_log

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


# ---- train_log_parse ---------------------------------------------------------------------------------------------

def _log(name):
    with open(os.path.join(FIXTURES, 'train_log', 'train_log', name + '.txt'), encoding='utf-8') as handle:
        return handle.read()


def _expected(name):
    with open(os.path.join(FIXTURES, 'train_log', 'train_log', name + '.json'), encoding='utf-8') as handle:
        return json.load(handle)


@pytest.mark.parametrize('name', ['megatron_lm_h100_mixtral_throughput', 'ascendspeed_llama65b_line_cut_in_field',
                                  'megatron_deepspeed_polaris_tgs', 'mindspeed_llm_fsdp2_pretrain_qwen3_8b'])
def test_train_log_parse_real_logs(name):
    assert json.loads(json.dumps(parsers.train_log_parse(_log(name)))) == _expected(name)


def test_train_log_parse_fields_of_a_real_megatron_line():
    steps = parsers.train_log_parse(_log('megatron_lm_h100_mixtral_throughput'))['steps']
    assert [s['iteration'] for s in steps] == [15, 16, 17, 71, 72, 73]
    assert steps[0] == {'iteration': 15, 'iterations': 100, 'elapsed_ms': 5926.4, 'consumed_samples': 1920,
                        'consumed_tokens': None, 'global_batch_size': 128, 'lm_loss': 1.957101, 'grad_norm': 2.853,
                        'tflops_per_npu': 220.4, 'tokens_per_s': None, 'tokens_per_npu_per_s': None,
                        'samples_per_s': None, 'mfu_pct': None, 'skipped': 0, 'nan': 0}


def test_train_log_parse_joins_the_cut_modellink_line():
    parsed = parsers.train_log_parse(_log('ascendspeed_llama65b_line_cut_in_field'))
    step = parsed['steps'][0]
    assert (step['global_batch_size'], step['skipped'], step['nan'], step['samples_per_s'], step['tflops_per_npu']) == (256, 0, 0, 7.57, 107.09)
    assert parsed['other_lines'] == 1 and parsed['unparsed'] == []   # the 'time (ms)' line


def test_train_log_parse_counts_other_lines_of_a_real_log():
    parsed = parsers.train_log_parse(_log('megatron_deepspeed_aurora_escape_and_timers'))
    assert [s['iteration'] for s in parsed['steps']] == [1, 2]
    assert parsed['other_lines'] == 10 and parsed['unparsed'] == []


def test_train_log_parse_accepts_lines_and_bytes():
    text = _log('megatron_llm_no_throughput')
    assert parsers.train_log_parse(text.splitlines()) == parsers.train_log_parse(text)
    assert parsers.train_log_parse(text.encode()) == parsers.train_log_parse(text)
    assert parsers.train_log_parse(None) == {'steps': [], 'other_lines': 0, 'unparsed': []}


def test_unreadable_iteration_lines_go_to_unparsed_and_nan_reads_as_none():
    text = (' [2026-06-22 19:28:40] iteration        5/      20 | elapsed time per iteration (ms): NA | learning rate: 1.0E-05 |\n'
            'the log field is `elapsed time per iteration (ms)`\n'
            ' [2026-06-22 19:28:41] iteration        6/      20 | elapsed time per iteration (ms): 1200.0 | lm loss: x |\n'
            ' [2026-06-22 19:28:42] iteration        7/      20 | elapsed time per iteration (ms): 1190.0 | lm loss: nan | grad norm: inf |\n'
            'saving checkpoint at iteration       7 to ckpt\n')
    parsed = parsers.train_log_parse(text)
    assert len(parsed['unparsed']) == 3 and parsed['other_lines'] == 1
    assert [(s['iteration'], s['lm_loss'], s['grad_norm']) for s in parsed['steps']] == [(7, None, None)]


def test_train_log_parse_value_variants():
    text = ('[20251023 12:39:12][rank-63/64][INFO ] [--------trainer.py:2382] :  iteration      424/   40000 | '
            'elapsed time per iteration (ms): 16601.3/17219.3 | throughput per GPU (TFLOP/s/GPU): 11.9/11.5 | '
            'tokens per GPU (tokens/s/GPU): 246.7/238.1 | global batch size:    64 |\n'
            'iteration      100/     200 | elapsed time per iteration (ms): 100.0 | compute per GPU (TFLOP/s/GPU): 496.3 (avg 496.1) |\n')
    steps = parsers.train_log_parse(text)['steps']
    assert [(s['elapsed_ms'], s['tflops_per_npu'], s['tokens_per_npu_per_s']) for s in steps] == [(16601.3, 11.9, 246.7), (100.0, 496.3, None)]


def test_a_train_log_parser_bug_is_reported_as_a_filter_error(monkeypatch):
    def broken(text):
        return 1 // 0

    monkeypatch.setitem(train_log.PARSERS, 'train_log', broken)
    with pytest.raises(AnsibleFilterError, match=r'train_log_parse: the train_log parser \(broken\) failed .*ZeroDivisionError.*please report'):
        parsers.train_log_parse('iteration 1/ 2 | elapsed time per iteration (ms): 1.0 |')


def test_train_log_parse_refuses_a_dict():
    with pytest.raises(AnsibleFilterError, match='train_log_parse expects the text output'):
        parsers.train_log_parse({'steps': []})
