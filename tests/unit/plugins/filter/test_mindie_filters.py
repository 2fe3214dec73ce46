# -*- coding: utf-8 -*-
"""npu_mem_size, mindie_config_problems, mindie_config_findings and vllm_launch: values and refusals as sentences."""

from __future__ import annotations

import json
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.filter import mindie_config_problems as mindie_module
from ansible_collections.npuops.ascend.plugins.filter.mindie_config_problems import (
    mindie_config_findings, mindie_config_problem_lines, mindie_config_problems, npu_mem_size, vllm_launch)


def info_row(npu, used, total=65536):
    return {'info': {'npu': npu, 'chip': 0, 'hbm_used_mb': used, 'hbm_total_mb': total}}


# free: 62 GB, 60 GB, 61 GB
NPUS = {'changed': False, 'devices': {'0': info_row(0, 2048), '1': info_row(1, 4096), '2': info_row(2, 3072)}}


def test_filters_are_registered():
    assert sorted(mindie_module.FilterModule().filters()) == [
        'mindie_config_findings', 'mindie_config_problem_lines', 'mindie_config_problems', 'npu_mem_size', 'vllm_launch']


def test_npu_mem_size_uses_the_fullest_npu():
    # floor((60 - 20 - 4) x 0.8) = floor(28.8) = 28
    assert npu_mem_size(NPUS, 20, 4) == 28
    # only NPUs 0 and 2: floor((61 - 20 - 4) x 0.8) = 29
    assert npu_mem_size(NPUS, 20, 4, devices=[0, 2]) == 29
    assert npu_mem_size(NPUS, 20.5, 0, 1.0) == 39
    assert npu_mem_size(NPUS, '20', '4') == 28


def test_npu_mem_size_falls_back_to_the_usages_view():
    npus = {'devices': {'0': {'info': {'hbm_total_mb': 0, 'hbm_used_mb': 0},
                              'usages': {'npu': 0, 'chips': [{'chip': 0, 'hbm_capacity_mb': 65536, 'hbm_usage_pct': 25}]}}}}
    # 48 GB free: floor((48 - 10 - 2) x 0.8) = 28
    assert npu_mem_size(npus, 10, 2) == 28


@pytest.mark.parametrize('args, message', [
    ((NPUS, -1), 'npu_mem_size: weights_gb -1 is negative; it must be 0.0 or more'),
    ((NPUS, 'x'), "npu_mem_size: weights_gb 'x' is not a number"),
    ((NPUS, None), 'npu_mem_size: weights_gb None is not a number'),
    ((NPUS, True), 'npu_mem_size: weights_gb True is not a number'),
    ((NPUS, 10, -4), 'npu_mem_size: reserve_gb -4 is negative'),
    ((NPUS, 10, 'nan'), "npu_mem_size: reserve_gb 'nan' is not a finite number"),
    ((NPUS, 10, 0, 1.5), 'npu_mem_size: fraction 1.5 must be more than 0 and at most 1'),
    ((NPUS, 10, 0, 0), 'npu_mem_size: fraction 0 must be more than 0 and at most 1'),
    (('text', 10), "npu_mem_size: the input must be the registered result of npuops.ascend.npu_info (a dict with devices), got 'text'"),
    ((NPUS, 10, 0, 0.8, [7]), 'npu_mem_size: NPU 7 not in the npu_info result (it has 0, 1, 2)'),
    (({'devices': {'0': {'info': {}}}}, 10), 'npu_mem_size: NPU 0 has no HBM figures in the npu_info result'),
    ((NPUS, 58), 'npu_mem_size: NPU 1 has 60.0 GB of free HBM; 58 GB of weights and 4 GB of reserve leave nothing for the '
                 'KV cache (npuMemSize would be -2, MindIE needs -1 or more than 0)'),
])
def test_npu_mem_size_refusals(args, message):
    if len(args) == 2 and args[1] == 58:
        args = args + (4,)
    with pytest.raises(AnsibleFilterError) as caught:
        npu_mem_size(*args)
    assert message in str(caught.value)


def values(**overrides):
    out = {'engine': 'mindie', 'service': 'llm', 'settings': {'maxBatchSize': 64}, 'npu_mem_size': None,
           'weights_gb': None, 'mode': '0640', 'vllm_model': None, 'vllm_args': {}, 'vllm_env': {}}
    out.update(overrides)
    return out


def test_problems_of_a_good_node_are_none():
    assert mindie_config_problems(values()) == []
    assert mindie_config_problems(values(npu_mem_size='auto', weights_gb=20)) == []
    assert mindie_config_problems(values(engine='vllm', settings={}, vllm_model='/data/qwen',
                                         vllm_args={'tensor-parallel-size': 8}, vllm_env={'TASK_QUEUE_ENABLE': 1})) == []
    assert mindie_config_problems(values(engine='none')) == []


@pytest.mark.parametrize('overrides, message', [
    ({'engine': 'both'}, "mindie_config_engine must be one of mindie, vllm, none, got 'both'"),
    ({'service': 'a b'}, "mindie_config_service 'a b' must be a name of letters, digits"),
    ({'vllm_model': '/data/qwen'}, 'service llm is configured for both engines: mindie_config_engine is mindie but '
                                   'mindie_config_vllm_model are set'),
    ({'engine': 'vllm', 'vllm_model': '/data/qwen'}, 'service llm is configured for both engines: mindie_config_engine '
                                                     'is vllm but mindie_config_settings is set'),
    ({'settings': {'maxBatchSiz': 1}}, "'maxBatchSiz' is not a MindIE setting this module knows (did you mean maxBatchSize?)"),
    ({'settings': {'maxPrefillTokens': 10, 'maxInputTokenLen': 20}}, 'maxPrefillTokens 10 is less than maxInputTokenLen 20'),
    ({'npu_mem_size': 'auto'}, 'mindie_config_npu_mem_size auto needs mindie_config_weights_gb'),
    ({'npu_mem_size': 0}, 'mindie_config_npu_mem_size must be auto, null or a valid npuMemSize'),
    ({'npu_mem_size': 30, 'settings': {'npuMemSize': 30}}, 'npuMemSize is given twice'),
    ({'mode': '0644'}, 'mindie_config_mode 0644 is wider than 0640, which MindIE refuses'),
])
def test_problems(overrides, message):
    problems = mindie_config_problems(values(**overrides))
    assert any(message in problem for problem in problems), problems


@pytest.mark.parametrize('overrides, message', [
    ({'vllm_args': {'device': 'npu'}}, 'mindie_config_vllm_args device: --device is gone from vLLM: deprecated in vLLM PR '
                                       '#18399'),
    ({'vllm_args': {'--device': 'npu'}}, 'removed in v0.10.0 (PR #21349)'),
    ({'vllm_args': {'swap_space': 16}}, '--swap-space is gone from vLLM'),
    ({'vllm_env': {'VLLM_USE_V1': '1'}}, 'VLLM_USE_V1 is gone from vLLM: V1 is the only engine'),
    ({'vllm_model': None}, 'mindie_config_vllm_model must name the model to serve'),
    ({'vllm_env': {'1BAD': 'x'}}, "mindie_config_vllm_env '1BAD' is not an environment variable name"),
])
def test_vllm_refusals(overrides, message):
    base = values(engine='vllm', settings={}, vllm_model='/data/qwen')
    base.update(overrides)
    problems = mindie_config_problems(base)
    assert any(message in problem for problem in problems), problems
    with pytest.raises(AnsibleFilterError) as caught:
        vllm_launch(base)
    assert message in str(caught.value)


def test_vllm_launch_renders_plain_vllm_serve():
    out = vllm_launch({'service': 'llm', 'vllm_model': '/data/qwen 7b',
                       'vllm_args': {'tensor_parallel_size': 8, 'enforce-eager': True, 'trust-remote-code': False,
                                     'additional-config': {'enable_cpu_binding': True}},
                       'vllm_env': {'TASK_QUEUE_ENABLE': 1, 'PYTORCH_NPU_ALLOC_CONF': 'expandable_segments:True'}})
    assert out['argv'] == ['vllm', 'serve', '/data/qwen 7b', '--tensor-parallel-size', '8', '--enforce-eager',
                           '--additional-config', '{"enable_cpu_binding":true}']
    assert out['env_text'] == ('# managed by npuops.ascend: environment of the vLLM-Ascend service llm\n'
                               'PYTORCH_NPU_ALLOC_CONF=expandable_segments:True\nTASK_QUEUE_ENABLE=1\n')
    assert ". /etc/npuops/vllm-llm.env\n" in out['script_text']
    assert out['script_text'].endswith("exec vllm serve '/data/qwen 7b' --tensor-parallel-size 8 --enforce-eager "
                                       "--additional-config '{\"enable_cpu_binding\":true}' \"$@\"\n")
    assert '--device' not in out['script_text']


def test_problem_lines():
    assert mindie_config_problem_lines([['a', 'b'], 'node01']) == ['node01: a', 'node01: b']
    assert mindie_config_problem_lines([None, 'node01']) == []


DEFAULT_TEXT = open(os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'mindie', 'config_default.json')).read()


def test_findings_pass_when_the_file_holds_the_settings():
    result = {'changed': False, 'path': '/c.json', 'settings_after': {}}
    assert mindie_config_findings(result, {'maxBatchSize': 200, 'npuMemSize': -1}, 'node01', DEFAULT_TEXT) == []


def test_findings_name_a_setting_the_file_does_not_hold():
    result = {'changed': True, 'path': '/c.json', 'settings_after': {'maxBatchSize': 64}}
    found = mindie_config_findings(result, {'maxBatchSize': 64}, 'node01', DEFAULT_TEXT)
    assert [f['msg'] for f in found] == ['node01: /c.json holds maxBatchSize = 200, not 64']
    assert found[0]['severity'] == 'fail'


def test_findings_in_check_mode_use_the_predicted_values():
    result = {'changed': True, 'path': '/c.json', 'settings_after': {'maxBatchSize': 64}}
    assert mindie_config_findings(result, {'maxBatchSize': 64}, 'node01', None) == []


def test_findings_of_a_failed_module_are_its_problems():
    result = {'failed': True, 'msg': 'long', 'problems': ['maxPreemptCount 300 is more than maxBatchSize 200: ...']}
    found = mindie_config_findings(result, {}, 'node02')
    assert [f['msg'] for f in found] == ['node02: maxPreemptCount 300 is more than maxBatchSize 200: ...']
    missing = mindie_config_findings({'failed': True, 'msg': 'MindIE is not installed at /x', 'problems': []}, {}, 'node02')
    assert [f['msg'] for f in missing] == ['node02: MindIE is not installed at /x']
    assert mindie_config_findings({'skipped': True}, {}, 'node02') == []
    assert json.dumps(found)


def test_findings_of_a_failure_registered_with_failed_when_false():
    result = {'changed': False, 'failed_when_result': False, 'msg': '/c.json on node02: ...', 'problems': ['a rule']}
    assert [f['msg'] for f in mindie_config_findings(result, {'maxBatchSize': 1}, 'node02')] == ['node02: a rule']
