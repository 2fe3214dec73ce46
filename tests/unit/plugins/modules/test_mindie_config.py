# -*- coding: utf-8 -*-
"""mindie_config on a copy of the real default config.json of MindIE Service (tests/unit/fixtures/mindie)."""

from __future__ import annotations

import copy
import json
import os
import stat

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils._domain import mindie as _mindie
from ansible_collections.npuops.ascend.plugins.modules import mindie_config
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import HOST

FIXTURE = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'mindie', 'config_default.json'))
with open(FIXTURE, 'rb') as _handle:
    DEFAULT_BYTES = _handle.read()
DEFAULT = json.loads(DEFAULT_BYTES.decode('utf-8'))


@pytest.fixture
def conf(tmp_path):
    path = tmp_path / 'conf' / 'config.json'
    path.parent.mkdir()
    path.write_bytes(DEFAULT_BYTES)
    os.chmod(str(path), 0o640)
    return path


def run(run_module, path, settings, check_mode=False, **extra):
    args = {'path': str(path), 'settings': settings}
    args.update(extra)
    return run_module(mindie_config, args, check_mode=check_mode)


def mode_of(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def test_the_fixture_is_the_default_file_and_every_table_key_is_in_it():
    values = _mindie.file_values(DEFAULT)
    # every key of the table except the ones the shipped default leaves out exists at its path in the real file
    assert sorted(set(_mindie.KEYS) - set(values)) == []
    assert _mindie.json_path('npuMemSize') == 'BackendConfig.ModelDeployConfig.ModelConfig[0].npuMemSize'
    assert _mindie.json_path('maxBatchSize') == 'BackendConfig.ScheduleConfig.maxBatchSize'
    assert _mindie.json_path('port') == 'ServerConfig.port'
    assert _mindie.json_path('npuDeviceIds') == 'BackendConfig.npuDeviceIds'
    assert _mindie.config_problems(DEFAULT, {}) == []


def test_a_merge_of_three_keys_keeps_every_other_key_and_value(run_module, conf):
    res = run(run_module, conf, {'maxBatchSize': 64, 'npuMemSize': 40, 'httpsEnabled': False})
    assert not res.failed, res
    assert res.result['changed'] is True
    expected = copy.deepcopy(DEFAULT)
    expected['BackendConfig']['ScheduleConfig']['maxBatchSize'] = 64
    expected['BackendConfig']['ModelDeployConfig']['ModelConfig'][0]['npuMemSize'] = 40
    expected['ServerConfig']['httpsEnabled'] = False
    text = conf.read_text()
    assert json.loads(text) == expected
    # key order and indent of the file kept
    assert list(json.loads(text)) == list(DEFAULT)
    assert '\n    "ServerConfig": {\n        "ipAddress": "127.0.0.1",' in text
    assert res.result['changes'] == [
        {'key': 'httpsEnabled', 'path': 'ServerConfig.httpsEnabled', 'before': True, 'after': False},
        {'key': 'maxBatchSize', 'path': 'BackendConfig.ScheduleConfig.maxBatchSize', 'before': 200, 'after': 64},
        {'key': 'npuMemSize', 'path': 'BackendConfig.ModelDeployConfig.ModelConfig[0].npuMemSize', 'before': -1, 'after': 40},
    ]
    assert res.result['settings_after'] == {'maxBatchSize': 64, 'npuMemSize': 40, 'httpsEnabled': False}
    assert mode_of(conf) == 0o640
    assert os.listdir(str(conf.parent)) == ['config.json']


def test_unknown_keys_of_the_file_survive_unchanged(run_module, conf):
    doc = copy.deepcopy(DEFAULT)
    doc['BackendConfig']['ScheduleConfig']['someFutureKey'] = {'nested': [1, 2, {'x': 'ü'}]}
    doc['BackendConfig']['ModelDeployConfig']['ModelConfig'][0]['plugin_params'] = '{"plugin_type":"mtp"}'
    doc['NewSection'] = {'a': None}
    conf.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding='utf-8')
    res = run(run_module, conf, {'maxPrefillTokens': 16384, 'maxInputTokenLen': 8192})
    assert not res.failed, res
    after = json.loads(conf.read_text(encoding='utf-8'))
    doc['BackendConfig']['ScheduleConfig']['maxPrefillTokens'] = 16384
    doc['BackendConfig']['ModelDeployConfig']['maxInputTokenLen'] = 8192
    assert after == doc
    assert conf.read_text(encoding='utf-8').startswith('{\n  "Version"')   # indent 2 of this file kept


def test_a_second_run_changes_nothing(run_module, conf):
    settings = {'maxBatchSize': 64, 'worldSize': 8, 'npuDeviceIds': [[0, 1, 2, 3, 4, 5, 6, 7]]}
    assert run(run_module, conf, settings).result['changed'] is True
    written = conf.read_bytes()
    stamp = os.stat(str(conf)).st_mtime_ns
    again = run(run_module, conf, settings)
    assert not again.failed
    assert again.result['changed'] is False
    assert again.result['changes'] == []
    assert 'diff' not in again.result
    assert conf.read_bytes() == written
    assert os.stat(str(conf)).st_mtime_ns == stamp


def test_the_unchanged_default_is_no_change(run_module, conf):
    res = run(run_module, conf, {'maxBatchSize': 200})
    assert res.result['changed'] is False
    assert conf.read_bytes() == DEFAULT_BYTES      # its own formatting is left alone


def test_check_mode_writes_nothing_and_shows_the_diff(run_module, conf):
    res = run(run_module, conf, {'maxBatchSize': 64}, check_mode=True)
    assert not res.failed
    assert res.result['changed'] is True
    assert conf.read_bytes() == DEFAULT_BYTES
    diff = res.result['diff']
    assert diff['before'] == DEFAULT_BYTES.decode('utf-8')
    assert '"maxBatchSize": 64' in diff['after']
    assert json.loads(diff['after'])['BackendConfig']['ScheduleConfig']['maxBatchSize'] == 64
    assert diff['before_header'] == str(conf)
    assert res.result['settings_after'] == {'maxBatchSize': 64}


def test_mode_0640_is_enforced_and_a_backup_kept(run_module, conf):
    os.chmod(str(conf), 0o666)
    res = run(run_module, conf, {'maxBatchSize': 64}, backup=True)
    assert not res.failed, res
    assert mode_of(conf) == 0o640
    backup = res.result['backup_file']
    assert backup and os.path.dirname(backup) == str(conf.parent)
    with open(backup, 'rb') as handle:
        assert handle.read() == DEFAULT_BYTES
    # a mode alone is also a change
    os.chmod(str(conf), 0o644)
    again = run(run_module, conf, {'maxBatchSize': 64})
    assert again.result['changed'] is True
    assert mode_of(conf) == 0o640
    assert run(run_module, conf, {'maxBatchSize': 64}).result['changed'] is False


def test_mode_0600_is_accepted(run_module, conf):
    res = run(run_module, conf, {}, mode='0600')
    assert res.result['changed'] is True
    assert mode_of(conf) == 0o600


def test_model_index_places_the_model_keys(run_module, conf):
    doc = copy.deepcopy(DEFAULT)
    doc['BackendConfig']['ScheduleConfig']['templateType'] = 'Mix'
    doc['BackendConfig']['ModelDeployConfig']['ModelConfig'].append(dict(doc['BackendConfig']['ModelDeployConfig']['ModelConfig'][0]))
    conf.write_text(json.dumps(doc, indent=4))
    res = run(run_module, conf, {'modelName': 'draft'}, model_index=1)
    assert not res.failed, res
    models = json.loads(conf.read_text())['BackendConfig']['ModelDeployConfig']['ModelConfig']
    assert [m['modelName'] for m in models] == ['llama_65b', 'draft']


INVALID = [
    ({'maxBatchSizee': 64}, "'maxBatchSizee' is not a MindIE setting this module knows (did you mean maxBatchSize?)"),
    ({'npumemsize': 40}, "'npumemsize' is not a MindIE setting this module knows (did you mean npuMemSize?)"),
    ({'maxBatchSize': '64'}, "maxBatchSize must be an integer (a JSON number), got '64'"),
    ({'maxBatchSize': True}, 'maxBatchSize must be an integer (a JSON number), got true'),
    ({'maxBatchSize': 0}, 'maxBatchSize must be 1 to 819200, got 0'),
    ({'npuMemSize': 0}, 'npuMemSize must be -1 (size the KV cache from the free memory) or 1 to 2147483647 GB per NPU, got 0'),
    ({'npuMemSize': -2}, 'npuMemSize must be -1 (size the KV cache from the free memory) or 1 to 2147483647 GB per NPU, got -2'),
    ({'httpsEnabled': 'false'}, "httpsEnabled must be true or false (a JSON boolean), got 'false'"),
    ({'port': 80}, 'port must be 1024 to 65535, got 80'),
    ({'ipAddress': 'node-07'}, "ipAddress must be an IPv4 or IPv6 address, got 'node-07'"),
    ({'backendType': 'cuda'}, "backendType must be one of 'atb', 'ms', 'torch', got 'cuda'"),
    ({'modelWeightPath': 'weights/qwen'}, 'modelWeightPath must be an absolute path'),
    ({'npuDeviceIds': [0, 1, 2, 3]}, 'npuDeviceIds must be a list with one list of NPU ids per model instance'),
    ({'npuDeviceIds': [[0, 1, 1, 3]]}, 'npuDeviceIds[0] lists an NPU twice: [0, 1, 1, 3]'),
    ({'cacheBlockSize': 256}, 'cacheBlockSize must be 1 to 128, got 256'),
    # rules between settings
    ({'maxPrefillTokens': 4096, 'maxInputTokenLen': 8192},
     'maxPrefillTokens 4096 is less than maxInputTokenLen 8192: MindIE needs maxPrefillTokens >= maxInputTokenLen'),
    ({'maxPreemptCount': 300, 'maxBatchSize': 200, 'cpuMemSize': 5},
     'maxPreemptCount 300 is more than maxBatchSize 200: MindIE needs maxPreemptCount <= maxBatchSize'),
    # rules with values of the file (maxPrefillTokens 8192, cpuMemSize 0, worldSize 4, maxBatchSize 200)
    ({'maxInputTokenLen': 16384},
     'maxPrefillTokens 8192 is less than maxInputTokenLen 16384 (maxPrefillTokens from the file)'),
    ({'maxPreemptCount': 10},
     'cpuMemSize is 0 while maxPreemptCount is 10 (cpuMemSize from the file): MindIE allows cpuMemSize 0 only when '
     'maxPreemptCount is 0'),
    ({'maxPreemptCount': 201}, 'maxPreemptCount 201 is more than maxBatchSize 200 (maxBatchSize from the file)'),
    ({'npuDeviceIds': [[0, 1, 2, 3, 4, 5, 6, 7]]},
     'npuDeviceIds[0] [0, 1, 2, 3, 4, 5, 6, 7] has 8 NPU(s) but worldSize is 4 (worldSize from the file): each instance '
     'needs exactly worldSize NPUs'),
    ({'worldSize': 8}, 'npuDeviceIds[0] [0, 1, 2, 3] has 4 NPU(s) but worldSize is 8 (npuDeviceIds from the file)'),
    ({'npuDeviceIds': [[0, 1, 2, 3], [4, 5, 6, 7]]},
     'npuDeviceIds has 2 list(s) but modelInstanceNumber is 1 (modelInstanceNumber from the file)'),
    ({'port': 1120}, 'port and multiNodesInferPort are both 1120 (multiNodesInferPort from the file): MindIE needs them different'),
    ({'ipAddress': '0.0.0.0'}, 'ipAddress 0.0.0.0 listens on every address, which MindIE refuses unless allowAllZeroIpListening is true'),
]


@pytest.mark.parametrize('settings, message', INVALID, ids=[str(sorted(s.items()))[:50] for s, _m in INVALID])
def test_invalid_settings_fail_before_anything_is_written(run_module, conf, settings, message):
    res = run(run_module, conf, settings, backup=True)
    assert res.failed
    assert message in res.result['msg']
    assert res.result['msg'].startswith('%s on %s: ' % (conf, HOST))
    assert 'nothing was written' in res.result['msg']
    assert any(message.split(' (')[0][:40] in problem for problem in res.result['problems'])
    assert conf.read_bytes() == DEFAULT_BYTES
    assert os.listdir(str(conf.parent)) == ['config.json']


def test_every_problem_is_listed_at_once(run_module, conf):
    res = run(run_module, conf, {'maxBatchSize': 0, 'port': 1, 'nope': 1})
    assert len(res.result['problems']) == 3
    assert conf.read_bytes() == DEFAULT_BYTES


def test_maxPreemptCount_with_cpuMemSize_is_fine(run_module, conf):
    res = run(run_module, conf, {'maxPreemptCount': 10, 'cpuMemSize': 5})
    assert not res.failed, res


@pytest.mark.parametrize('mode', ['0644', '0660', '0666', 0o644, '0750'])
def test_a_mode_wider_than_0640_is_refused(run_module, conf, mode):
    res = run(run_module, conf, {'maxBatchSize': 64}, mode=mode)
    assert res.failed
    assert 'is wider than 0640: MindIE refuses to start with a config.json' in res.result['msg']
    assert conf.read_bytes() == DEFAULT_BYTES


def test_a_symbolic_mode_is_refused(run_module, conf):
    res = run(run_module, conf, {'maxBatchSize': 64}, mode='u=rw')
    assert res.failed
    assert "mode 'u=rw' is not an octal mode such as 0640" in res.result['msg']


def test_model_index_out_of_range(run_module, conf):
    res = run(run_module, conf, {'modelName': 'x'}, model_index=1)
    assert res.failed
    assert ('model_index 1 is out of range: BackendConfig.ModelDeployConfig.ModelConfig holds 1 model(s) (index 0 to 0). '
            'Nothing was written.') in res.result['msg']
    assert conf.read_bytes() == DEFAULT_BYTES


def test_a_file_over_10_mib_is_refused(run_module, conf):
    doc = copy.deepcopy(DEFAULT)
    doc['padding'] = 'x' * (10 * 1024 * 1024)
    conf.write_text(json.dumps(doc))
    before = conf.read_bytes()
    res = run(run_module, conf, {'maxBatchSize': 64})
    assert res.failed
    assert 'MindIE reads a config.json of 1 byte to 10 MiB (10485760 bytes) only' in res.result['msg']
    assert conf.read_bytes() == before


def test_an_empty_file_is_refused(run_module, conf):
    conf.write_bytes(b'')
    res = run(run_module, conf, {'maxBatchSize': 64})
    assert res.failed
    assert 'the file has 0 bytes' in res.result['msg']


def test_a_file_that_is_not_json(run_module, conf):
    conf.write_bytes(DEFAULT_BYTES[:-20])
    res = run(run_module, conf, {'maxBatchSize': 64})
    assert res.failed
    assert 'the file is not valid JSON (' in res.result['msg']
    assert 'Restore it from the MindIE package or from a backup' in res.result['msg']
    assert conf.read_bytes() == DEFAULT_BYTES[:-20]


def test_a_json_list_is_not_a_config(run_module, conf):
    conf.write_text('[1, 2]')
    res = run(run_module, conf, {'maxBatchSize': 64})
    assert res.failed
    assert 'the file holds a JSON list, not the object of a MindIE config' in res.result['msg']


def test_a_bad_value_already_in_the_file_is_named(run_module, conf):
    doc = copy.deepcopy(DEFAULT)
    doc['BackendConfig']['ScheduleConfig']['maxBatchSize'] = '200'
    conf.write_text(json.dumps(doc, indent=4))
    res = run(run_module, conf, {'maxPrefillTokens': 9000})
    assert res.failed
    assert ("maxBatchSize must be an integer (a JSON number), got '200' (in the file, at "
            "BackendConfig.ScheduleConfig.maxBatchSize)") in res.result['msg']


def test_a_missing_file_means_mindie_is_not_installed(run_module, tmp_path):
    path = tmp_path / 'mindie' / 'latest' / 'mindie-service' / 'conf' / 'config.json'
    res = run(run_module, path, {'maxBatchSize': 64})
    assert res.failed
    assert res.result['msg'] == (
        'MindIE is not installed at %s on %s (no such file). Install MindIE Service, or point path (role: '
        'mindie_config_path) at its conf/config.json (a whl install keeps it in <install dir>/mindie_llm/conf/config.json). '
        'Nothing was written.' % (path, HOST))
    assert not path.parent.exists()


def test_detect_indent_and_render():
    assert _mindie.detect_indent('{\n\t"a": 1\n}') == '\t'
    assert _mindie.detect_indent('{"a": 1}') == 4
    assert _mindie.detect_indent(DEFAULT_BYTES.decode('utf-8')) == 4
    assert _mindie.render({'a': [1]}, 2) == '{\n  "a": [\n    1\n  ]\n}\n'


def test_closest_name():
    assert _mindie.closest('maxprefilltokens') == 'maxPrefillTokens'
    assert _mindie.closest('zzzz') is None


# --- a symbolic link at path, the backup, the owner, the directory ---------------------------------------------------

def tree(directory):
    """Every entry of ``directory``: name -> ('link', target) or ('file', bytes, mode)."""
    out = {}
    for name in sorted(os.listdir(str(directory))):
        full = os.path.join(str(directory), name)
        if os.path.islink(full):
            out[name] = ('link', os.readlink(full))
        elif os.path.isfile(full):
            with open(full, 'rb') as handle:
                out[name] = ('file', handle.read(), mode_of(full))
        else:
            out[name] = ('other',)
    return out


def test_a_link_to_a_root_only_file_is_refused_and_nothing_is_written(run_module, tmp_path):
    secret = tmp_path / 'root' / 'auth.json'
    secret.parent.mkdir()
    secret.write_text('{"auths": {"registry.example.com": {"auth": "c2VjcmV0"}}}')
    os.chmod(str(secret), 0o600)
    conf_dir = tmp_path / 'conf'
    conf_dir.mkdir()
    link = conf_dir / 'config.json'
    os.symlink(str(secret), str(link))
    before, secret_before = tree(conf_dir), tree(secret.parent)

    res = run(run_module, link, {'maxBatchSize': 64}, backup=True, owner=str(os.getuid()))
    assert res.failed
    assert res.result['msg'] == (
        '%s on %s: is a symbolic link to %s; the module does not read or write through a link (it would copy the '
        "target's content into a file the service user owns, and replace the link). Point path (role: "
        'mindie_config_path) at the real file, %s. Nothing was written.' % (link, HOST, secret, secret))
    assert tree(conf_dir) == before          # the link is kept, no backup, no temporary file
    assert tree(secret.parent) == secret_before


def test_a_link_to_a_regular_config_is_refused_and_kept(run_module, tmp_path, conf):
    other = tmp_path / 'conf-real'
    other.mkdir()
    link = other / 'config.json'
    os.symlink(str(conf), str(link))
    res = run(run_module, link, {'maxBatchSize': 64}, backup=True)
    assert res.failed
    assert 'is a symbolic link to %s;' % conf in res.result['msg']
    assert 'Point path (role: mindie_config_path) at the real file, %s.' % conf in res.result['msg']
    assert os.path.islink(str(link)) and os.readlink(str(link)) == str(conf)
    assert conf.read_bytes() == DEFAULT_BYTES and mode_of(conf) == 0o640
    assert os.listdir(str(conf.parent)) == ['config.json'] and os.listdir(str(other)) == ['config.json']


def test_a_dangling_link_is_refused_with_its_target_named(run_module, tmp_path):
    conf_dir = tmp_path / 'conf'
    conf_dir.mkdir()
    link = conf_dir / 'config.json'
    os.symlink('../gone/config.json', str(link))
    res = run(run_module, link, {'maxBatchSize': 64})
    assert res.failed
    assert ('is a symbolic link to ../gone/config.json (%s, which does not exist);' % (tmp_path / 'gone' / 'config.json')
            in res.result['msg'])
    assert 'Nothing was written.' in res.result['msg']
    assert tree(conf_dir) == {'config.json': ('link', '../gone/config.json')}


def test_a_link_put_in_place_after_the_check_is_refused_by_the_open(run_module, monkeypatch, tmp_path, conf):
    # the path is checked as a regular file, then replaced by a link before it is opened
    link = tmp_path / 'conf' / 'swapped.json'
    os.symlink(str(conf), str(link))
    real_lstat = os.lstat
    checked = []

    def lstat(path, *args, **kwargs):
        if str(path) == str(link) and not checked:      # the module's own check sees a regular file, once
            checked.append(path)
            return real_lstat(str(conf))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(_mindie.os, 'lstat', lstat)
    res = run(run_module, link, {'maxBatchSize': 64}, backup=True)
    assert res.failed
    assert 'is a symbolic link to %s;' % conf in res.result['msg']
    assert os.path.islink(str(link))
    assert conf.read_bytes() == DEFAULT_BYTES
    assert sorted(os.listdir(str(conf.parent))) == ['config.json', 'swapped.json']


def test_a_fifo_at_path_is_refused_without_blocking(run_module, tmp_path):
    conf_dir = tmp_path / 'conf'
    conf_dir.mkdir()
    fifo = conf_dir / 'config.json'
    os.mkfifo(str(fifo))
    res = run(run_module, fifo, {'maxBatchSize': 64})
    assert res.failed
    assert 'is not a regular file (a FIFO); MindIE reads its settings from a regular config.json.' in res.result['msg']


def test_the_backup_is_never_written_through_a_link(run_module, monkeypatch, tmp_path, conf):
    import time  # pylint: disable=import-outside-toplevel
    monkeypatch.setattr(time, 'time', lambda: 1767268800.0)
    stamp = time.strftime('%Y-%m-%d@%H:%M:%S', time.localtime(1767268800.0))
    victim = tmp_path / 'victim'
    planted = '%s.%d.%s~' % (conf, os.getpid(), stamp)
    os.symlink(str(victim), planted)
    os.chmod(str(conf), 0o644)

    res = run(run_module, conf, {'maxBatchSize': 64}, backup=True)
    assert not res.failed, res
    assert not os.path.lexists(str(victim))                  # nothing written through the planted link
    assert os.path.islink(planted) and os.readlink(planted) == str(victim)
    backup = res.result['backup_file']
    assert backup != planted and backup.startswith('%s.%d.%s' % (conf, os.getpid(), stamp)) and backup.endswith('~')
    assert not os.path.islink(backup)
    with open(backup, 'rb') as handle:
        assert handle.read() == DEFAULT_BYTES
    # never wider than MindIE's 0640, whatever the old file had
    assert mode_of(backup) == 0o640
    assert json.loads(conf.read_text())['BackendConfig']['ScheduleConfig']['maxBatchSize'] == 64


def test_an_unknown_owner_is_refused_before_anything_is_written(run_module, conf):
    res = run(run_module, conf, {'maxBatchSize': 64}, owner='npuops-no-such-user', backup=True)
    assert res.failed
    assert res.result['msg'] == ("%s on %s: owner 'npuops-no-such-user' is not a user on this host; create the user MindIE "
                                 'runs as first, or fix owner (role: mindie_config_owner). Nothing was written.'
                                 % (conf, HOST))
    assert conf.read_bytes() == DEFAULT_BYTES
    assert os.listdir(str(conf.parent)) == ['config.json']


def test_an_owner_and_mode_change_alone_is_shown_and_applied(run_module, conf):
    os.chmod(str(conf), 0o600)
    res = run(run_module, conf, {'maxBatchSize': 200}, owner=str(os.getuid()), check_mode=True)
    assert res.result['changed'] is True
    assert res.result['diff']['before'] == {'mode': '0600'} and res.result['diff']['after'] == {'mode': '0640'}
    assert mode_of(conf) == 0o600
    res = run(run_module, conf, {'maxBatchSize': 200}, owner=str(os.getuid()))
    assert res.result['changed'] is True and mode_of(conf) == 0o640
    assert conf.read_bytes() == DEFAULT_BYTES


def test_a_directory_every_user_can_write_is_named_in_a_warning(run_module, conf):
    os.chmod(str(conf.parent), 0o777)
    res = run(run_module, conf, {'maxBatchSize': 64})
    assert not res.failed, res
    assert res.warnings == [
        '%s on %s: the directory %s is writable by every user (mode 0777), so any local user can replace the file MindIE '
        'reads. Make it writable by its owner only (chmod o-w %s).' % (conf, HOST, conf.parent, conf.parent)]
    os.chmod(str(conf.parent), 0o750)
    assert run(run_module, conf, {'maxBatchSize': 64}).warnings == []


def test_the_values_before_are_returned(run_module, conf):
    res = run(run_module, conf, {}, check_mode=True)
    assert not res.failed, res
    before = res.result['settings_before']
    assert before['npuMemSize'] == -1 and before['maxBatchSize'] == 200
    assert before == _mindie.file_values(DEFAULT)
