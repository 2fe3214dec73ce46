# -*- coding: utf-8 -*-
"""npu_mem_size, mindie_config_problems, mindie_config_findings and vllm_launch: values and refusals as sentences."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.serving import (
    bench_findings, bench_model, checks_of_records, effective_settings, mindie_config_findings, mindie_config_problem_lines,
    mindie_config_problems, mindie_files, npu_mem_findings, npu_mem_message, npu_mem_size, npu_mem_size_auto,
    report_entry, secrets_message, settings_message, vllm_files, vllm_launch, vllm_paths)


def info_row(npu, used, total=65536):
    return {'info': {'npu': npu, 'chip': 0, 'hbm_used_mb': used, 'hbm_total_mb': total}}


# free: 62 GB, 60 GB, 61 GB
NPUS = {'changed': False, 'devices': {'0': info_row(0, 2048), '1': info_row(1, 4096), '2': info_row(2, 3072)}}


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
    assert mindie_config_problem_lines(['one sentence', 'node02']) == ['node02: one sentence']
    assert mindie_config_problem_lines(['', 'node02']) == []


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


# --- secrets of the vLLM launch: never on the command line, in a report or in a diff ----------------------------------

SECRET = 'sk-SECRET-APIKEY-123'
TOKEN = 'hf_SECRETTOKEN456'


def launch_values(**overrides):
    out = {'service': 'qwen', 'vllm_model': '/data/qwen', 'env_path': '/var/lib/npuops/vllm/vllm-qwen.env',
           'vllm_args': {'tensor-parallel-size': 8, 'api-key': SECRET},
           'vllm_env': {'TASK_QUEUE_ENABLE': 1, 'HF_TOKEN': TOKEN}}
    out.update(overrides)
    return out


def test_the_api_key_goes_to_the_environment_not_the_command_line():
    out = vllm_launch(launch_values())
    assert out['argv'] == ['vllm', 'serve', '/data/qwen', '--tensor-parallel-size', '8']
    for text in (out['script_text'], out['env_text'], json.dumps(out)):
        assert SECRET not in text and TOKEN not in text
    assert out['script_text'].endswith('exec vllm serve /data/qwen --tensor-parallel-size 8 "$@"\n')
    assert out['script_text'].splitlines()[3:7] == ['set -a', '. /var/lib/npuops/vllm/vllm-qwen.env',
                                                    '. /var/lib/npuops/vllm/vllm-qwen.secrets', 'set +a']
    assert out['env_text'] == ('# managed by npuops.ascend: environment of the vLLM-Ascend service qwen\n'
                               'TASK_QUEUE_ENABLE=1\n')
    assert out['secret_names'] == ['HF_TOKEN', 'VLLM_API_KEY']
    assert out['env_redacted'] == {'HF_TOKEN': '<redacted>', 'TASK_QUEUE_ENABLE': '1', 'VLLM_API_KEY': '<redacted>'}
    assert out['secret_env_path'] == '/var/lib/npuops/vllm/vllm-qwen.secrets'


def test_the_secret_file_text_is_returned_only_when_asked():
    assert 'secret_env_text' not in vllm_launch(launch_values())
    text = vllm_launch(launch_values(), secrets=True)['secret_env_text']
    assert text == ('# managed by npuops.ascend: secrets of the vLLM-Ascend service qwen (not shown in reports or diffs)\n'
                    'HF_TOKEN=%s\nVLLM_API_KEY=%s\n' % (TOKEN, SECRET))


def test_a_launch_without_secrets_sources_no_secret_file():
    out = vllm_launch(launch_values(vllm_args={'tensor-parallel-size': 8}, vllm_env={'TASK_QUEUE_ENABLE': 1}))
    assert out['secret_names'] == []
    assert '.secrets' not in out['script_text']
    assert vllm_launch(launch_values(vllm_env={}), secrets=True)['secret_env_text'].count('\n') == 2


@pytest.mark.parametrize('name, secret', [
    ('HF_TOKEN', True), ('VLLM_API_KEY', True), ('OPENAI_API_KEY', True), ('DB_PASSWORD', True), ('CLIENT_SECRET', True),
    ('hf_token', True), ('TASK_QUEUE_ENABLE', False), ('HCCL_BUFFSIZE', False), ('PYTORCH_NPU_ALLOC_CONF', False),
])
def test_secret_variable_names(name, secret):
    out = vllm_launch(launch_values(vllm_args={}, vllm_env={name: 'x'}))
    assert (name in out['secret_names']) is secret


@pytest.mark.parametrize('overrides, message', [
    ({'vllm_args': {'api-key': ['a', 'b']}},
     'mindie_config_vllm_args api-key must be one key (a string): it is passed to vllm serve as VLLM_API_KEY, which holds '
     'one key; got <redacted>'),
    ({'vllm_args': {'api_key': SECRET}, 'vllm_env': {'VLLM_API_KEY': SECRET}},
     'the API key is given twice: mindie_config_vllm_args api_key and mindie_config_vllm_env VLLM_API_KEY; keep one'),
    ({'vllm_args': {'hf-token': TOKEN}}, 'mindie_config_vllm_args hf-token would put the token on the command line of '
                                         'vllm serve, which every local user can read (ps); set HF_TOKEN in '
                                         'mindie_config_vllm_env instead'),
    ({'vllm_env': {'HF_TOKEN': [TOKEN]}}, 'mindie_config_vllm_env HF_TOKEN must be a string or a number, got <redacted>'),
])
def test_secret_refusals_never_show_the_secret(overrides, message):
    base = launch_values(vllm_args={}, vllm_env={})
    base.update(overrides)
    problems = mindie_config_problems(values(engine='vllm', settings={}, vllm_model='/data/qwen',
                                             vllm_args=base['vllm_args'], vllm_env=base['vllm_env']))
    assert any(message in problem for problem in problems), problems
    assert SECRET not in json.dumps(problems) and TOKEN not in json.dumps(problems)
    with pytest.raises(AnsibleFilterError) as caught:
        vllm_launch(base)
    assert message in str(caught.value) and SECRET not in str(caught.value) and TOKEN not in str(caught.value)


def test_a_bare_hf_token_flag_is_no_secret():
    out = vllm_launch(launch_values(vllm_args={'hf-token': True}, vllm_env={}))
    assert out['argv'][-1] == '--hf-token'


# --- npuMemSize auto: computed at rest, kept while a model holds the NPUs ---------------------------------------------

def npus(busy=(), processes=None):
    data = {'devices': {'0': info_row(0, 2048 + (40000 if 0 in busy else 0)), '1': info_row(1, 4096),
                        '2': info_row(2, 3072)},
            'summary': {'busy': sorted(busy)}}
    data['processes'] = processes if processes is not None else [
        {'npu': npu, 'chip': 0, 'pid': 139000 + 11 * npu, 'name': 'mindie', 'memory_mb': 40000} for npu in sorted(busy)]
    return data


def read(value, failed=False):
    if failed:
        return {'failed': False, 'failed_when_result': False, 'msg': '/c.json on node01: is a symbolic link to /x; ...'}
    return {'changed': False, 'settings_before': {} if value is None else {'npuMemSize': value}}


def test_auto_is_computed_while_no_process_holds_the_npus():
    out = npu_mem_size_auto(npus(), read(-1), 20, 4)
    assert out == {'npuMemSize': 28, 'source': 'computed', 'busy': [], 'problem': None,
                   'msg': 'npuMemSize 28 computed from the free HBM of NPU 0, 1, 2 (no process on them): floor((60.0 GB '
                          'free on NPU 1 - 20 GB of weights - 4 GB of reserve) x 0.8)'}


def test_auto_keeps_the_file_value_while_a_model_holds_the_npus():
    out = npu_mem_size_auto(npus(busy=[0]), read(28), 20, 4)
    assert out['npuMemSize'] == 28 and out['source'] == 'kept' and out['problem'] is None and out['busy'] == [0]
    assert out['msg'] == ('npuMemSize 28 kept from config.json: NPU 0 runs a process (pid 139000 mindie on NPU 0, 40000 MB), '
                          'so its free HBM is what the running model leaves (mostly its KV cache), not what a KV cache '
                          'can have. Stop the service and run the stage again to compute it anew')


def test_auto_refuses_while_a_model_holds_the_npus_and_the_file_has_no_value():
    for current in (read(-1), read(None)):
        out = npu_mem_size_auto(npus(busy=[0]), current, 20, 4)
        assert out['npuMemSize'] is None and out['source'] is None
        assert out['problem'].startswith(
            'npuMemSize auto cannot be computed now: NPU 0 runs a process (pid 139000 mindie on NPU 0, 40000 MB), so its '
            'free HBM is what the running model leaves (mostly its KV cache), not what a KV cache can have, and '
            'config.json holds ')
        assert out['problem'].endswith(
            ' (no value to keep). Stop the service (or those processes) and run the stage again, or set '
            'mindie_config_npu_mem_size to a number of GB, or to -1 to let MindIE size the KV cache itself when it starts')
    assert 'config.json holds npuMemSize -1 (no value' in npu_mem_size_auto(npus(busy=[0]), read(-1), 20, 4)['problem']
    assert 'config.json holds no npuMemSize (no value' in npu_mem_size_auto(npus(busy=[0]), read(None), 20, 4)['problem']


def test_auto_names_a_file_it_could_not_read():
    out = npu_mem_size_auto(npus(busy=[0]), read(None, failed=True), 20, 4)
    assert 'and config.json could not be read (/c.json on node01: is a symbolic link to /x; ...)' in out['problem']


def test_a_process_on_an_npu_of_another_instance_does_not_count():
    out = npu_mem_size_auto(npus(busy=[0]), read(-1), 20, 4, devices=[1, 2])
    assert out['source'] == 'computed' and out['npuMemSize'] == 28 and out['busy'] == []


def test_auto_turns_a_size_that_does_not_fit_into_a_problem():
    out = npu_mem_size_auto(npus(), read(-1), 58, 4)
    assert out['npuMemSize'] is None
    assert out['problem'].startswith('npu_mem_size: NPU 1 has 60.0 GB of free HBM; 58 GB of weights')


def test_auto_needs_the_process_table():
    out = npu_mem_size_auto({'devices': NPUS['devices']}, read(-1), 20, 4)
    assert out['problem'] == ('npu_mem_size_auto: the npu_info result has no process table (summary.busy); run '
                              'npuops.ascend.npu_info with gather_subset [usages, processes]')


# --- what the stage action decides (npuops.ascend.stage_serving) ----------------------------------------------------

def test_npu_mem_findings_fail_only_an_undecided_node():
    assert npu_mem_findings('node01', {'npuMemSize': 28, 'problem': None}) == []
    assert npu_mem_findings('node01', None) == []
    found = npu_mem_findings('node02', {'npuMemSize': None, 'problem': 'npuMemSize auto cannot be computed now: x'})
    assert found == [{'host': 'node02', 'device': None, 'check': 'npu_mem_size', 'value': None, 'expected': 'npuMemSize',
                      'severity': 'fail', 'msg': 'node02: npuMemSize auto cannot be computed now: x'}]


def test_settings_message_names_every_problem_of_every_node():
    checks = [{'host': 'node01', 'problems': ['a', 'b']}, {'host': 'node02', 'problems': []},
              {'skipped': True}, {'host': 'node03', 'problems': ['c']}]
    assert settings_message(checks) == ('The stage 7 settings are not usable (3 problem(s)), so nothing was written on '
                                        'any node: node01: a | node01: b | node03: c')
    assert settings_message([{'host': 'node01', 'problems': []}, {'skipped': True}]) is None
    assert settings_message([]) is None


def test_npu_mem_message_names_every_undecided_node():
    checks = [{'host': 'node01', 'problems': [], 'npu_mem': {'npuMemSize': 28, 'problem': None}},
              {'host': 'node02', 'problems': [], 'npu_mem': {'npuMemSize': None, 'problem': 'no value to keep'}},
              {'host': 'node03', 'problems': [], 'npu_mem': None}]
    assert npu_mem_message(checks) == ('Stage 7 stopped before anything was written on any node: node02: no value to '
                                       'keep')
    assert npu_mem_message(checks[:1] + checks[2:]) is None


def test_effective_settings_add_npu_mem_size_as_asked():
    settings = {'maxBatchSize': 64}
    assert effective_settings(settings, None) == settings and effective_settings(settings, '') == settings
    assert effective_settings(settings, 'auto', {'npuMemSize': 28}) == {'maxBatchSize': 64, 'npuMemSize': 28}
    assert effective_settings(settings, -1) == {'maxBatchSize': 64, 'npuMemSize': -1}
    assert effective_settings(settings, '12') == {'maxBatchSize': 64, 'npuMemSize': 12}
    assert effective_settings(None, 12.7) == {'npuMemSize': 12}
    assert settings == {'maxBatchSize': 64}


def test_bench_model_and_findings():
    assert bench_model('m', {'modelName': 'x'}) == 'm'
    assert bench_model(None, {'modelName': 'x'}) == 'x'
    assert bench_model(None, None) == '' and bench_model('', {}) == ''
    assert bench_findings('node01', 'http://h:1', {'levels': [], 'skipped': None}) == []
    assert bench_findings('node01', 'http://h:1', None) == []
    found = bench_findings('node01', 'http://h:1', {'failed': True, 'msg': 'no request succeeded'})
    assert found == [{'host': 'node01', 'device': None, 'check': 'serving_bench', 'value': None, 'expected': 'answers',
                      'severity': 'warn', 'msg': 'node01: the load sweep of http://h:1 failed: no request succeeded'}]
    assert bench_findings('node01', 'http://h:1', {'failed': True})[0]['msg'].endswith('failed: ?')


def test_secrets_message_says_names_never_values():
    names = ['HF_TOKEN', 'VLLM_API_KEY']
    assert secrets_message('/d/vllm-q.secrets', names, True, False) == (
        '/d/vllm-q.secrets was written: HF_TOKEN=<redacted>, VLLM_API_KEY=<redacted> (the values are never shown)')
    assert secrets_message('/d/s', names, True, True).startswith('/d/s would be written: ')
    assert secrets_message('/d/s', names, False, True).startswith('/d/s unchanged: ')


def test_report_entry_of_each_engine():
    values = {'engine': 'mindie', 'service': 'mindie', 'path': '/c.json', 'vllm_dir': '/v'}
    result = {'changes': [{'key': 'maxBatchSize'}], 'backup_file': '/c.json.1~'}
    entry = report_entry('node01', 'R1', values, {'maxBatchSize': 64}, result, {'npuMemSize': 28}, None, [],
                         {'levels': [{'concurrency': 1}]})
    assert entry == {'host': 'node01', 'run': 'R1', 'engine': 'mindie', 'service': 'mindie', 'file': '/c.json',
                     'settings': {'maxBatchSize': 64}, 'changes': [{'key': 'maxBatchSize'}], 'backup_file': '/c.json.1~',
                     'npu_mem_size': {'npuMemSize': 28}, 'vllm_argv': None, 'vllm_env': None, 'findings': [],
                     'load_sweep': [{'concurrency': 1}], 'sweep_judgement': None}
    vllm = report_entry('node01', 'R1', dict(values, engine='vllm', service='q'),
                        launch={'argv': ['vllm', 'serve', 'm'], 'env_redacted': {'HF_TOKEN': '<redacted>'}})
    assert vllm['file'] == '/v/vllm-q.sh' and vllm['settings'] == {} and vllm['changes'] == []
    assert vllm['vllm_argv'] == ['vllm', 'serve', 'm'] and vllm['vllm_env'] == {'HF_TOKEN': '<redacted>'}
    assert vllm['backup_file'] is None and vllm['load_sweep'] is None and vllm['npu_mem_size'] is None
    none = report_entry('node01', 'R1', dict(values, engine='none'))
    assert none['file'] is None and none['findings'] == []


def _sha1(text):
    return hashlib.sha1(text.encode('utf-8')).hexdigest()


def test_the_record_names_the_mindie_config_as_read_back():
    text = '{\n    "BackendConfig": {"ScheduleConfig": {"maxBatchSize": 64}}\n}\n'
    result = {'changed': True, 'path': '/c.json', 'settings_after': {'maxBatchSize': 64}}
    given = {'path': '/c.json', 'settings': {'maxBatchSize': 64}, 'mode': '640', 'owner': 'mindie', 'group': 'mindie'}
    assert mindie_files('/c.json', result, text, given) == [
        {'kind': 'mindie_config', 'path': '/c.json', 'checksum': _sha1(text), 'owner': 'mindie', 'group': 'mindie',
         'mode': '0640'}]
    # not read back (check mode): no checksum; owner and group not given: the module keeps the file's, null here;
    # no mode given: the module's default 0640
    assert mindie_files('/c.json', result, None, {'mode': None}) == [
        {'kind': 'mindie_config', 'path': '/c.json', 'checksum': None, 'owner': None, 'group': None, 'mode': '0640'}]
    assert mindie_files('/c.json', result, text, {'mode': 0o600})[0]['mode'] == '0600'
    # refused or failed: nothing was written, nothing is named
    refused = {'failed': True, 'msg': 'x', 'problems': ['maxPrefillTokens 8192 is less than x']}
    assert mindie_files('/c.json', refused, None, given) == []
    assert mindie_files('/c.json', {'changed': False}, None, given) == [] and mindie_files('/c.json', None, None, {}) == []


def test_the_record_names_the_vllm_files_and_never_a_checksum_of_the_secrets():
    values = {'service': 'q', 'vllm_model': '/data/q', 'vllm_args': {'api-key': 'sk-SECRET'},
              'vllm_env': {'TASK_QUEUE_ENABLE': 1}, 'secret_env_path': '/v/vllm-q.secrets'}
    launch = vllm_launch(values)
    paths = vllm_paths('/v', 'q')
    assert paths == {'vllm_env': '/v/vllm-q.env', 'vllm_script': '/v/vllm-q.sh'}
    files = vllm_files(launch, paths, 'svc', 'svcgroup')
    assert files == [
        {'kind': 'vllm_env', 'path': '/v/vllm-q.env', 'checksum': _sha1(launch['env_text']), 'owner': 'svc',
         'group': 'svcgroup', 'mode': '0640'},
        {'kind': 'vllm_secrets', 'path': '/v/vllm-q.secrets', 'checksum': None, 'owner': 'svc', 'group': 'svcgroup',
         'mode': '0640'},
        {'kind': 'vllm_script', 'path': '/v/vllm-q.sh', 'checksum': _sha1(launch['script_text']), 'owner': 'svc',
         'group': 'svcgroup', 'mode': '0750'}]
    # the env text is the one of vllm_launch (no secret in it), so its SHA-1 is of a known text
    assert launch['env_text'] == '# managed by npuops.ascend: environment of the vLLM-Ascend service q\nTASK_QUEUE_ENABLE=1\n'
    assert files[0]['checksum'] == _sha1('# managed by npuops.ascend: environment of the vLLM-Ascend service q\n'
                                         'TASK_QUEUE_ENABLE=1\n')
    secret_text = vllm_launch(values, secrets=True)['secret_env_text']
    assert _sha1(secret_text) not in json.dumps(files) and 'sk-SECRET' not in json.dumps(files)
    plain = vllm_launch(dict(values, vllm_args={}))
    assert [item['kind'] for item in vllm_files(plain, paths, 'root', 'root')] == ['vllm_env', 'vllm_script']


def test_checks_of_records():
    records = {'node02': {'problems': ['bad'], 'data': {'npu_mem': {'problem': 'x'}}}, 'node01': {'problems': []}}
    assert checks_of_records(records, {'node03': 'no record'}) == [
        {'host': 'node02', 'problems': ['bad'], 'npu_mem': {'problem': 'x'}},
        {'host': 'node01', 'problems': [], 'npu_mem': None},
        {'host': 'node03', 'problems': ['no record'], 'npu_mem': None}]
    assert checks_of_records({}, {}) == []
