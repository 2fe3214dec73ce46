"""npuops.ascend.stage_serving: stage 7 - the node's check (its variables, npuMemSize auto decided and recorded), the
check over every node that stops the stage before anything is written, and the node's work in one call (config.json
merged and read back, or the vLLM launch files with the secrets kept out of the result and the diff; the load sweep;
the record and the JSON report)."""

from __future__ import annotations

import base64
import hashlib
import json
import os

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.npuops.ascend.plugins.action import stage_serving as action
from ansible_collections.npuops.ascend.plugins.plugin_utils import store
from ansible_collections.npuops.ascend.tests.unit.plugins.action import stage_actions

RUN = 'R1'
PATH = '/usr/local/Ascend/mindie/latest/mindie-service/conf/config.json'
MINDIE = {'engine': 'mindie', 'service': 'mindie', 'settings': {'maxBatchSize': 64}, 'npu_mem_size': None,
          'weights_gb': None, 'mode': '0640', 'vllm_model': None, 'vllm_args': {}, 'vllm_env': {},
          'env_path': '/etc/npuops/vllm-mindie.env', 'secret_env_path': '/etc/npuops/vllm-mindie.secrets'}
KEY, TOKEN = 'sk-SECRET-123', 'hf_SECRET456'
VLLM = dict(MINDIE, engine='vllm', service='qwen', settings={}, vllm_model='/data/qwen',
            vllm_args={'tensor-parallel-size': 8, 'api-key': KEY}, vllm_env={'TASK_QUEUE_ENABLE': 1, 'HF_TOKEN': TOKEN},
            env_path='/v/vllm-qwen.env', secret_env_path='/v/vllm-qwen.secrets')
DEFAULT_TEXT = open(os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'mindie', 'config_default.json')).read()


def npus(busy=(), used=2048):
    devices = dict((str(npu), {'info': {'npu': npu, 'chip': 0, 'hbm_used_mb': used, 'hbm_total_mb': 65536}})
                   for npu in range(8))
    processes = [{'npu': npu, 'pid': 100 + npu, 'name': 'mindieservice', 'memory_mb': 40960} for npu in busy]
    return {'changed': False, 'devices': devices, 'summary': {'busy': list(busy)}, 'processes': processes}


def make(args, answers, check_mode=False, calls=None):
    return stage_actions.make_action(action.ActionModule, args, check_mode, lambda name: answers[name], calls)


def run(plugin, node='node01', **task_vars):
    return stage_actions.run_step(plugin, dict(task_vars, inventory_hostname=node))


def read_json(path):
    with open(path, encoding='utf-8') as handle:
        return json.load(handle)


# --- check ------------------------------------------------------------------------------------------------------------

def test_the_check_of_the_settings_play_reads_nothing_and_records_the_node(tmp_path):
    calls = []
    args = dict(step='check', run_dir=str(tmp_path / RUN), run_id=RUN,
                values=dict(MINDIE, settings={'maxPreemptCount': 300, 'maxBatchSize': 200}))
    result = run(make(args, {}, calls=calls), 'node02')
    assert calls == []
    assert result['host'] == 'node02' and result['npu_mem'] is None and 'failed' not in result
    problem = 'maxPreemptCount 300 is more than maxBatchSize 200: MindIE needs maxPreemptCount <= maxBatchSize'
    assert result['problems'] == [problem]
    check = read_json(result['check_record'])
    assert result['check_record'] == str(tmp_path / RUN / 'nodes' / 'node02' / 'check7.json')
    assert check['schema'] == 'npuops.ascend/check-record' and check['run'] == RUN and check['stage'] == 7
    assert check['problems'] == [problem] and check['usable'] is False and check['data'] == {'npu_mem': None}
    assert not (tmp_path / RUN / 'nodes' / 'node02' / 'stage7.json').exists()   # no decision, no stage record
    good = run(make(dict(args, values=MINDIE), {}), 'node01')
    assert read_json(good['check_record'])['usable'] is True
    pod = run(make(dict(step='check_pod', run_dir=str(tmp_path / RUN), run_id=RUN, nodes=['node01', 'node02', 'node03']),
                   {}))
    assert pod['failed'] is True
    assert pod['msg'] == ('The stage 7 settings are not usable (2 problem(s)), so nothing was written on any node: '
                          'node02: %s | node03: no check record of stage 7 in the run store (%s): the check did not '
                          'run on this node' % (problem, tmp_path / RUN / 'nodes' / 'node03' / 'check7.json'))
    pod = run(make(dict(step='check_pod', run_dir=str(tmp_path / RUN), run_id=RUN, nodes=['node01']), {}))
    assert 'failed' not in pod and pod['msg'] == 'the stage 7 settings of 1 node(s) are usable'
    stale = run(make(dict(step='check_pod', run_dir=str(tmp_path / RUN), run_id='R0', nodes=['node01']), {}))
    assert stale['failed'] is True and 'is of run R1, not of this run R0: a record of another run is never used' in stale['msg']


def test_every_step_needs_the_run_store(tmp_path):
    with pytest.raises(AnsibleActionFail, match='step check needs run_dir and run_id'):
        run(make(dict(step='check', values=MINDIE, decide=True), {}))
    with pytest.raises(AnsibleActionFail, match='step check_pod needs run_dir and run_id'):
        run(make(dict(step='check_pod', run_id=RUN, nodes=['node01']), {}))
    with pytest.raises(AnsibleActionFail, match='step node needs run_dir and run_id'):
        run(make(dict(step='node', run_id=RUN, values=MINDIE, path=PATH), {}))
    with pytest.raises(AnsibleActionFail, match='the run id .* cannot name a run directory'):
        run(make(dict(step='node', run_id='../x', run_dir=str(tmp_path), values=MINDIE, path=PATH), {}))


def test_the_check_decides_npu_mem_size_at_rest_and_records_it(tmp_path):
    calls = []
    values = dict(MINDIE, npu_mem_size='auto', weights_gb=10)
    args = dict(step='check', run_dir=str(tmp_path / RUN), run_id=RUN, values=values, decide=True, path=PATH,
                timeout=30)
    answers = {'npuops.ascend.npu_info': npus(), 'npuops.ascend.mindie_config': {'settings_before': {'npuMemSize': -1}}}
    plugin = make(args, answers, calls=calls)
    result = run(plugin)
    assert [name for name, _args in calls] == ['npuops.ascend.npu_info', 'npuops.ascend.mindie_config']
    assert calls[0][1] == {'gather_subset': ['usages', 'processes'], 'timeout': 30}
    assert calls[1][1] == {'path': PATH, 'model_index': 0, 'mode': '0640'}     # a read: no settings
    # floor((62 - 10 - 4) x 0.8) = 38
    assert result['npu_mem']['npuMemSize'] == 38 and result['npu_mem']['source'] == 'computed'
    record = read_json(tmp_path / RUN / 'nodes' / 'node01' / 'stage7.json')
    assert record['data'] == {'npu_mem': result['npu_mem']} and record['status'] == 'passed'
    assert record['role'] == 'mindie_config'
    # the read ran as a check-mode task without diff, and the task is as it was after it
    assert plugin._task.check_mode is False


def test_the_check_keeps_the_files_value_while_a_model_holds_the_npus_and_fails_without_one(tmp_path):
    values = dict(MINDIE, npu_mem_size='auto', weights_gb=10)
    args = dict(step='check', run_dir=str(tmp_path / RUN), run_id=RUN, values=values, decide=True, path=PATH)
    busy = npus(busy=range(8), used=50000)
    kept = run(make(args, {'npuops.ascend.npu_info': busy,
                           'npuops.ascend.mindie_config': {'settings_before': {'npuMemSize': 30}}}))
    assert kept['npu_mem']['npuMemSize'] == 30 and kept['npu_mem']['source'] == 'kept'
    none = run(make(args, {'npuops.ascend.npu_info': busy,
                           'npuops.ascend.mindie_config': {'settings_before': {'npuMemSize': -1}}}), 'node02')
    assert none['npu_mem']['npuMemSize'] is None
    record = read_json(tmp_path / RUN / 'nodes' / 'node02' / 'stage7.json')
    assert record['status'] == 'failed' and record['findings'][0]['check'] == 'npu_mem_size'
    pod = run(make(dict(step='check_pod', run_dir=str(tmp_path / RUN), run_id=RUN, nodes=['node01', 'node02']), {}))
    assert pod['failed'] is True
    assert pod['msg'].startswith('Stage 7 stopped before anything was written on any node: node02: npuMemSize auto '
                                 'cannot be computed now: NPU 0, 1, 2, 3, 4, 5, 6, 7 run processes (pid ')
    assert 'and config.json holds npuMemSize -1 (no value to keep)' in pod['msg']


def test_a_node_with_bad_settings_reads_nothing_and_the_settings_message_comes_first(tmp_path):
    calls = []
    values = dict(MINDIE, npu_mem_size='auto', weights_gb=None)
    args = dict(step='check', run_dir=str(tmp_path / RUN), run_id=RUN, values=values, decide=True, path=PATH)
    bad = run(make(args, {}, calls=calls))
    assert calls == [] and bad['npu_mem'] is None and len(bad['problems']) == 1
    undecided = store.make_check(RUN, 'node02', 7, 'mindie_config', [], data={'npu_mem': {'problem': 'x'}})
    store.write_check(str(tmp_path / RUN), undecided)
    pod = run(make(dict(step='check_pod', run_dir=str(tmp_path / RUN), run_id=RUN, nodes=['node01', 'node02']), {}))
    assert pod['msg'] == ('The stage 7 settings are not usable (1 problem(s)), so nothing was written on any node: '
                          'node01: mindie_config_npu_mem_size auto needs mindie_config_weights_gb, the weights per NPU in '
                          'GB (0 or more), got None')
    assert read_json(bad['check_record'])['problems'] == bad['problems']
    pod = run(make(dict(step='check_pod', run_dir=str(tmp_path / RUN), run_id=RUN, nodes=['node02']), {}))
    assert pod['msg'] == 'Stage 7 stopped before anything was written on any node: node02: x'


# --- node: MindIE -----------------------------------------------------------------------------------------------------

def mindie_result(changed=True, after=None):
    return {'changed': changed, 'path': PATH, 'settings_after': after or {'maxBatchSize': 64},
            'changes': [{'key': 'maxBatchSize', 'path': 'BackendConfig.ScheduleConfig.maxBatchSize', 'before': 200,
                         'after': 64}] if changed else [],
            'backup_file': PATH + '.1~' if changed else None,
            'diff': {'before': '{}', 'after': '{"maxBatchSize": 64}', 'after_header': PATH}}


def node_args(tmp_path, values, **extra):
    return dict(step='node', run_dir=str(tmp_path / RUN), run_id=RUN, values=values, path=PATH, **extra)


def slurp(text):
    return {'content': base64.b64encode(text.encode()).decode(), 'encoding': 'base64'}


def test_the_node_merges_reads_back_records_and_reports(tmp_path):
    calls = []
    text = DEFAULT_TEXT.replace('"maxBatchSize" : 200', '"maxBatchSize" : 64')
    text = text.replace('"maxBatchSize": 200', '"maxBatchSize": 64')
    answers = {'npuops.ascend.mindie_config': mindie_result(), 'ansible.legacy.slurp': slurp(text)}
    result = run(make(node_args(tmp_path, MINDIE, owner='mindie'), answers, calls=calls), 'node02')
    assert [name for name, _args in calls] == ['npuops.ascend.mindie_config', 'ansible.legacy.slurp']
    assert calls[0][1] == {'path': PATH, 'settings': {'maxBatchSize': 64}, 'model_index': 0, 'mode': '0640',
                           'backup': True, 'owner': 'mindie'}
    assert result['changed'] is True and result['diff'] == [mindie_result()['diff']]
    assert result['findings'] == [] and 'diff' not in result['mindie_config']
    entry = read_json(tmp_path / RUN / 'stage7-mindie_config' / 'node02.json')
    # the record: the report's entry, and the file as read back after the write, with its SHA-1
    files = [{'kind': 'mindie_config', 'path': PATH, 'checksum': hashlib.sha1(text.encode('utf-8')).hexdigest(),
              'owner': 'mindie', 'group': None, 'mode': '0640'}]
    assert entry == result['entry'] and result['record']['data'] == dict(entry, secrets_msg=None, files=files)
    assert entry['changes'][0]['key'] == 'maxBatchSize' and entry['backup_file'] == PATH + '.1~'
    assert entry['file'] == PATH and entry['settings'] == {'maxBatchSize': 64} and entry['load_sweep'] is None
    with open(tmp_path / RUN / 'stage7-mindie_config' / 'node02.json', encoding='utf-8') as handle:
        assert handle.read() == json.dumps(entry, indent=4, sort_keys=True) + '\n'     # to_nice_json's layout
    assert read_json(tmp_path / RUN / 'nodes' / 'node02' / 'stage7.json')['status'] == 'passed'


def test_the_node_fails_at_the_gate_on_a_setting_the_file_does_not_hold(tmp_path):
    answers = {'npuops.ascend.mindie_config': mindie_result(), 'ansible.legacy.slurp': slurp(DEFAULT_TEXT)}
    result = run(make(node_args(tmp_path, MINDIE, report=False), answers))
    assert [f['msg'] for f in result['findings']] == ['node01: %s holds maxBatchSize = 200, not 64' % PATH]
    assert result['record']['status'] == 'failed' and 'report' not in result
    assert not os.path.exists(tmp_path / RUN / 'stage7-mindie_config')


def test_a_refused_setting_is_a_finding_not_a_failed_task(tmp_path):
    refused = {'failed': True, 'msg': '%s on node01: ...' % PATH, 'problems': ['maxPrefillTokens 8192 is less than x']}
    result = run(make(node_args(tmp_path, MINDIE), {'npuops.ascend.mindie_config': refused}))
    assert 'failed' not in result and result['changed'] is False
    assert [f['msg'] for f in result['findings']] == ['node01: maxPrefillTokens 8192 is less than x']
    assert result['record']['data']['files'] == []   # nothing was written


def test_check_mode_reads_nothing_back_and_uses_the_decided_npu_mem_size(tmp_path):
    calls = []
    values = dict(MINDIE, npu_mem_size='auto', weights_gb=10)
    result = run(make(node_args(tmp_path, values, npu_mem={'npuMemSize': 38, 'source': 'computed', 'msg': 'm'}),
                      {'npuops.ascend.mindie_config': mindie_result(after={'maxBatchSize': 64, 'npuMemSize': 38})},
                      check_mode=True, calls=calls))
    assert [name for name, _args in calls] == ['npuops.ascend.mindie_config']
    assert calls[0][1]['settings'] == {'maxBatchSize': 64, 'npuMemSize': 38}
    assert result['entry']['npu_mem_size'] == {'npuMemSize': 38, 'source': 'computed', 'msg': 'm'}
    assert result['record']['check_mode'] is True and result['findings'] == []
    # not read back in check mode: the file is named, without a checksum
    assert result['record']['data']['files'] == [{'kind': 'mindie_config', 'path': PATH, 'checksum': None,
                                                  'owner': None, 'group': None, 'mode': '0640'}]


def test_an_undecided_auto_npu_mem_size_stops_the_node(tmp_path):
    values = dict(MINDIE, npu_mem_size='auto', weights_gb=10)
    result = run(make(node_args(tmp_path, values), {}))
    assert result['failed'] is True and 'npuMemSize auto of node01 was not decided' in result['msg']
    assert not os.path.exists(tmp_path / RUN / 'nodes')


def test_the_sweep_runs_against_the_endpoint_and_a_sweep_that_reached_nothing_is_a_warning(tmp_path):
    calls = []
    answers = {'npuops.ascend.mindie_config': mindie_result(changed=False),
               'ansible.legacy.slurp': slurp(DEFAULT_TEXT.replace('llama_65b', 'qwen-sim')),
               'npuops.ascend.serving_bench': {'failed': True, 'msg': 'no request succeeded'}}
    values = dict(MINDIE, settings={'maxBatchSize': 200, 'modelName': 'qwen-sim'})
    result = run(make(node_args(tmp_path, values, bench_endpoint='http://h:1', bench_concurrency=[1, 4],
                                bench_requests=4), answers, calls=calls))
    assert calls[-1] == ('npuops.ascend.serving_bench', {'endpoint': 'http://h:1', 'api': 'completions',
                                                         'model': 'qwen-sim', 'concurrency': [1, 4], 'max_tokens': 128,
                                                         'requests': 4, 'timeout': 60})
    assert [(f['severity'], f['msg']) for f in result['findings']] == [
        ('warn', 'node01: the load sweep of http://h:1 failed: no request succeeded')]
    assert result['record']['status'] == 'passed' and result['entry']['load_sweep'] is None


def _level(concurrency, tokens_per_s, p50=100.0, p99=110.0):
    return {'concurrency': concurrency, 'requests': 4, 'succeeded': 4, 'failed': 0, 'errors': [], 'wall_s': 1.0,
            'output_tokens': 20, 'tokens_per_s': tokens_per_s, 'ttft_ms': {'mean': 1.0, 'p50': 1.0, 'p99': 1.0},
            'tpot_ms': {'mean': 1.0, 'p50': 1.0, 'p99': 1.0}, 'latency_ms': {'p50': p50, 'p99': p99}}


def test_the_sweep_is_judged_into_the_findings_and_the_record(tmp_path):
    sweep = {'changed': False, 'skipped': None,
             'levels': [_level(1, 50.0), _level(2, 100.0, p99=350.0), _level(4, 101.0), _level(8, 70.0)]}
    answers = {'npuops.ascend.mindie_config': mindie_result(changed=False),
               'ansible.legacy.slurp': slurp(DEFAULT_TEXT.replace('"maxBatchSize" : 200', '"maxBatchSize" : 64')
                                             .replace('"maxBatchSize": 200', '"maxBatchSize": 64')),
               'npuops.ascend.serving_bench': sweep}
    result = run(make(node_args(tmp_path, MINDIE, bench_endpoint='http://h:1', bench_concurrency=[1, 2, 4, 8]),
                      answers), 'node02')
    expected = [('serving_throughput', 'fail'), ('serving_p99', 'warn')]
    assert [(f['check'], f['severity']) for f in result['findings']] == expected
    assert 'falls to 70 tokens/s at concurrency 8 from 101 tokens/s at concurrency 4' in result['findings'][0]['msg']
    assert result['findings'][1]['msg'].startswith('node02: the load sweep of http://h:1: at concurrency 2 the P99 '
                                                   'latency 350 ms is 3.5 x the P50 (100 ms)')
    record = read_json(result['path'])
    assert record['status'] == 'failed'
    judged = record['data']['sweep_judgement']
    assert judged['knee'] == 2 and judged['saturation_tokens_per_s'] == 101.0 and judged['p99_p50_max'] == 2.0

    # the operator's thresholds and severities
    result = run(make(node_args(tmp_path, MINDIE, bench_endpoint='http://h:1', bench_p99_p50_max=4.0,
                                bench_knee_gain_pct=25.0, bench_drop_severity='warn'), answers), 'node02')
    assert [(f['check'], f['severity']) for f in result['findings']] == [('serving_throughput', 'warn')]
    assert read_json(result['path'])['status'] == 'passed'
    assert read_json(result['path'])['data']['sweep_judgement']['knee_gain_pct'] == 25.0


def test_engine_none_records_a_skipped_stage(tmp_path):
    calls = []
    result = run(make(node_args(tmp_path, dict(MINDIE, engine='none'), bench_endpoint='http://h:1'), {}, calls=calls))
    assert calls == [] and result['record']['status'] == 'skipped' and result['entry']['file'] is None
    assert result['record']['data']['files'] == []


# --- node: vLLM-Ascend ------------------------------------------------------------------------------------------------

class Copies:
    """The copy action's runs, answered in order."""

    def __init__(self, changed=True, fail=None):
        self.runs, self.changed, self.fail = [], changed, fail

    def __call__(self, task_vars, secret=False, **copy_args):
        self.runs.append((secret, copy_args))
        if self.fail and copy_args['dest'].endswith(self.fail):
            return {'failed': True, 'msg': 'could not write %s: %s' % (copy_args['dest'], copy_args['content'])}
        out = {'changed': self.changed, 'dest': copy_args['dest']}
        out['diff'] = [{'before': '', 'after': copy_args['content'], 'after_header': copy_args['dest']}]
        return out


def vllm_node(tmp_path, values, copies, check_mode=False, calls=None):
    diff = {'before': {'state': 'directory'}, 'after': {'state': 'directory'}}
    answers = {'ansible.legacy.file': {'changed': False, 'path': '/v', 'diff': diff}}
    plugin = make(node_args(tmp_path, values, vllm_dir='/v'), answers, check_mode, calls)
    plugin._copy = copies
    return run(plugin)


def test_vllm_files_are_written_and_no_secret_reaches_the_result_or_the_diff(tmp_path):
    calls, copies = [], Copies()
    result = vllm_node(tmp_path, VLLM, copies, calls=calls)
    assert calls == [('ansible.legacy.file', {'path': '/v', 'state': 'directory', 'owner': 'root', 'group': 'root',
                                              'mode': '0755'})]
    assert [(secret, args['dest'], args['mode'], args['backup']) for secret, args in copies.runs] == [
        (False, '/v/vllm-qwen.env', '0640', True), (True, '/v/vllm-qwen.secrets', '0640', False),
        (False, '/v/vllm-qwen.sh', '0750', True)]
    assert KEY in copies.runs[1][1]['content'] and TOKEN in copies.runs[1][1]['content']
    text = json.dumps(result)
    assert KEY not in text and TOKEN not in text
    assert [diff.get('after_header') for diff in result['diff']] == [None, '/v/vllm-qwen.env', '/v/vllm-qwen.sh']
    # the line of the secrets file is in the node's record too (the PoD step shows it from there)
    assert result['record']['data']['secrets_msg'] == result['secrets_msg']
    assert result['secrets_msg'] == ('/v/vllm-qwen.secrets was written: HF_TOKEN=<redacted>, VLLM_API_KEY=<redacted> '
                                     '(the values are never shown)')
    assert result['entry']['vllm_argv'] == ['vllm', 'serve', '/data/qwen', '--tensor-parallel-size', '8']
    assert result['entry']['vllm_env'] == {'HF_TOKEN': '<redacted>', 'TASK_QUEUE_ENABLE': '1', 'VLLM_API_KEY': '<redacted>'}
    assert result['entry']['file'] == '/v/vllm-qwen.sh' and result['findings'] == []
    # the record names the three files with the texts the copies got; never a checksum of the secrets file
    sha1 = dict((args['dest'], hashlib.sha1(args['content'].encode('utf-8')).hexdigest()) for _s, args in copies.runs)
    assert result['record']['data']['files'] == [
        {'kind': 'vllm_env', 'path': '/v/vllm-qwen.env', 'checksum': sha1['/v/vllm-qwen.env'], 'owner': 'root',
         'group': 'root', 'mode': '0640'},
        {'kind': 'vllm_secrets', 'path': '/v/vllm-qwen.secrets', 'checksum': None, 'owner': 'root', 'group': 'root',
         'mode': '0640'},
        {'kind': 'vllm_script', 'path': '/v/vllm-qwen.sh', 'checksum': sha1['/v/vllm-qwen.sh'], 'owner': 'root',
         'group': 'root', 'mode': '0750'}]
    assert sha1['/v/vllm-qwen.secrets'] not in text
    for root, _dirs, names in os.walk(tmp_path):
        for name in names:
            with open(os.path.join(root, name), encoding='utf-8') as handle:
                data = handle.read()
            assert KEY not in data and TOKEN not in data, name


def test_a_failed_secrets_file_hides_its_message(tmp_path):
    result = vllm_node(tmp_path, VLLM, Copies(fail='.secrets'))
    assert result['failed'] is True and result['msg'] == action.HIDDEN
    assert KEY not in json.dumps(result) and not os.path.exists(tmp_path / RUN / 'nodes')


def test_without_secrets_the_secrets_file_goes_and_check_mode_says_so(tmp_path):
    calls, copies = [], Copies(changed=False)
    plain = dict(VLLM, vllm_args={'tensor-parallel-size': 8}, vllm_env={'TASK_QUEUE_ENABLE': 1})
    result = vllm_node(tmp_path, plain, copies, check_mode=True, calls=calls)
    assert calls[-1] == ('ansible.legacy.file', {'path': '/v/vllm-qwen.secrets', 'state': 'absent'})
    assert [args['dest'] for _secret, args in copies.runs] == ['/v/vllm-qwen.env', '/v/vllm-qwen.sh']
    assert result['secrets_msg'] is None and result['changed'] is False
    # a dry run names what it would write; the secrets file is removed, so it is not named
    assert [(item['kind'], item['checksum']) for item in result['record']['data']['files']] == [
        ('vllm_env', hashlib.sha1(copies.runs[0][1]['content'].encode()).hexdigest()),
        ('vllm_script', hashlib.sha1(copies.runs[1][1]['content'].encode()).hexdigest())]
    assert vllm_node(tmp_path, VLLM, Copies(), check_mode=True)['secrets_msg'].startswith(
        '/v/vllm-qwen.secrets would be written: ')
    assert vllm_node(tmp_path, VLLM, Copies(changed=False))['secrets_msg'].startswith('/v/vllm-qwen.secrets unchanged: ')


def test_the_task_runs_as_check_mode_without_diff_only_for_the_read():
    plugin = make({'step': 'check'}, {})
    plugin._task.diff = True
    with plugin._task_as(check_mode=True, diff=False, no_log=True):
        assert (plugin._task.check_mode, plugin._task.diff, plugin._task.no_log) == (True, False, True)
    assert plugin._task.check_mode is False and plugin._task.diff is True
