"""npuops.ascend.stage_hccl_env: stage 5 on each node - the check of the settings and of what the node has at the file's
path (nothing read when the settings are not usable), then the file written by the copy action, loaded in sh (not in a
dry run that would change it), checked against the ports stage 4 gave or one hccn_info read, the node's record and its
JSON report. The node's modules and the copy action answer from tables."""

from __future__ import annotations

import hashlib
import json
from unittest import mock

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.npuops.ascend.plugins.action import stage_hccl_env as action
from ansible_collections.npuops.ascend.plugins.plugin_utils import hccl_env, node_files, store
from ansible_collections.npuops.ascend.tests.unit.plugins.action import stage_actions
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils.roce_samples import info, port

RUN = 'R1'
H = 'node02'
PATH = '/etc/profile.d/npuops-hccl.sh'
FILE = {'path': PATH, 'owner': 'root', 'group': 'root', 'mode': '0644'}
VALUES = {'connect_timeout': 1200, 'buffsize': 200, 'rdma_sl': 4, 'rdma_tc': 132, 'task_queue_enable': 2}
CONTEXT = {'node_count': 2, 'lossless_priority': 4, 'lossless_dscp': 33}
INTENT = {'lossless_dscp': 33, 'lossless_tc': 3}
REGULAR = {'changed': False, 'stat': {'exists': True, 'islnk': False, 'isreg': True, 'mode': '0644', 'uid': 0}}
LINK = {'changed': False, 'stat': {'exists': True, 'islnk': True, 'isreg': False, 'lnk_target': '/root/x.sh'}}
DIRECTORY = {'changed': False, 'stat': {'exists': True, 'isdir': True, 'mode': '0755', 'uid': 0, 'pw_name': 'root'}}
NO_GROUP = {'changed': False, 'ansible_facts': {'getent_group': {'nosuchgroup': None}}}
LOADED = 'PATH=/bin\nHCCL_CONNECT_TIMEOUT=1200\nHCCL_BUFFSIZE=200\nHCCL_RDMA_SL=4\nHCCL_RDMA_TC=132\nTASK_QUEUE_ENABLE=2\n'


def modules(table):
    """answer(module_name) from a table."""
    def answer(name):
        return table[name]
    return answer


def check_step(run_dir, table, calls, file=None, values=None, node=H):
    """The check step; a stat answers by whether it follows links: ``table['path']`` (no) or ``table['dir']``."""
    args = dict(step='check', run_dir=str(run_dir / RUN), run_id=RUN, values=values or VALUES, context=CONTEXT,
                file=file or FILE)
    plugin = stage_actions.make_action(action.ActionModule, args)

    def execute(module_name, module_args, task_vars):
        calls.append((module_name, module_args))
        if module_name == 'npuops.ascend.path_info':
            # one read of both: each entry answers as ``table['path']`` (a link not followed) or ``table['dir']``
            if 'read' in table:
                return dict(table['read'])
            return {'changed': False, 'paths': [
                dict(table['path' if not entry['follow'] else 'dir'], path=entry['path'], follow=entry['follow'])
                for entry in module_args['paths']]}
        return dict(table[module_name])

    plugin._execute_module = execute
    return stage_actions.run_step(plugin, {'inventory_hostname': node})


def checked(**changes):
    result = hccl_env.check_result(hccl_env.hccl_env(VALUES, CONTEXT, FILE), True)
    result.update(changes)
    return result


def node_step(tmp_path, written, table, check_mode=False, calls=None, task_vars=None, **extra):
    args = dict(step='node', run_dir=str(tmp_path / RUN), run_id=RUN, result=checked(), intent=INTENT, **extra)
    calls = calls if calls is not None else []
    plugin = stage_actions.make_action(action.ActionModule, args, check_mode, modules(table), calls)
    copy_action = mock.MagicMock()
    copy_action.run.return_value = dict(written)
    plugin._shared_loader_obj = mock.MagicMock()
    plugin._shared_loader_obj.action_loader.get.return_value = copy_action
    plugin._task.copy.return_value = mock.MagicMock()
    result = stage_actions.run_step(plugin, dict(task_vars or {}, inventory_hostname=H))
    return result, plugin, copy_action


def read_json(path):
    with open(path, encoding='utf-8') as handle:
        return json.load(handle)


# ---- step check ----------------------------------------------------------------------------------------------------

def test_the_check_reads_the_path_and_its_directory_and_not_the_root_group(tmp_path):
    calls = []
    result = check_step(tmp_path, {'path': REGULAR, 'dir': DIRECTORY}, calls)
    assert [name for name, _args in calls] == ['npuops.ascend.path_info']
    assert calls[0][1] == {'paths': [{'path': PATH, 'follow': False, 'checksum': True},
                                     {'path': '/etc/profile.d', 'follow': True, 'checksum': False}]}
    assert result['path_state'] == REGULAR['stat']  # for the node step, which leaves a file in place alone
    assert result['problems'] == [] and result['settings_usable'] is True and result['file'] == FILE
    assert result['env'] == hccl_env.hccl_env(VALUES, CONTEXT, FILE)['env'] and result['changed'] is False
    assert 'failed' not in result


def test_the_check_looks_up_another_group_and_names_a_missing_one(tmp_path):
    calls = []
    result = check_step(tmp_path, {'path': REGULAR, 'dir': DIRECTORY, 'ansible.legacy.getent': NO_GROUP}, calls,
                        file=dict(FILE, group='nosuchgroup'))
    assert calls[-1] == ('ansible.legacy.getent', {'database': 'group', 'key': 'nosuchgroup', 'fail_key': False})
    assert [p['variable'] for p in result['problems']] == ['hccl_env_group'] and result['file'] is None
    assert result['settings_usable'] is True and 'failed' not in result   # the role's assert names every node


def test_a_link_at_the_path_is_a_problem_of_the_node(tmp_path):
    result = check_step(tmp_path, {'path': LINK, 'dir': DIRECTORY}, [])
    assert result['problems'][0]['problem'].startswith(
        "hccl_env_path '/etc/profile.d/npuops-hccl.sh' is a symbolic link to '/root/x.sh'")
    assert result['settings_usable'] is True


@pytest.mark.parametrize('read, problem', [
    ({'failed': True, 'msg': 'path_info: paths must be absolute'},
     "hccl_env_path '/etc/profile.d/npuops-hccl.sh' could not be checked on this node: path_info: paths must be absolute"),
    ({'changed': False, 'paths': [{'path': PATH, 'failed': True, 'msg': 'could not examine %s: Permission denied' % PATH},
                                  {'path': '/etc/profile.d', 'stat': DIRECTORY['stat']}]},
     "hccl_env_path '/etc/profile.d/npuops-hccl.sh' could not be checked on this node: could not examine "
     "/etc/profile.d/npuops-hccl.sh: Permission denied"),
])
def test_a_path_that_cannot_be_read_is_a_problem_of_the_node(tmp_path, read, problem):
    result = check_step(tmp_path, {'read': read}, [])
    assert result['problems'][0]['problem'] == problem and result['file'] is None and 'path_state' not in result


def test_settings_with_problems_read_nothing_on_the_node(tmp_path):
    calls = []
    result = check_step(tmp_path, {}, calls, file=dict(FILE, mode='0666'), values=dict(VALUES, buffsize=0))
    assert calls == []
    assert result['settings_usable'] is False and len(result['problems']) == 2 and result['file'] is None
    assert 'failed' not in result


def test_the_check_needs_its_settings():
    with pytest.raises(AnsibleActionFail) as error:
        stage_actions.run_step(stage_actions.make_action(action.ActionModule, {'step': 'check', 'values': VALUES}),
                               {'inventory_hostname': H})
    assert str(error.value) == 'stage_hccl_env: step check needs run_dir, run_id, file'
    with pytest.raises(AnsibleActionFail) as error:
        stage_actions.run_step(stage_actions.make_action(action.ActionModule, {'step': 'check_pod', 'run_id': RUN}),
                               {'inventory_hostname': H})
    assert str(error.value) == 'stage_hccl_env: step check_pod needs run_dir, nodes'


def check_pod(tmp_path, nodes, run_id=RUN):
    args = dict(step='check_pod', run_dir=str(tmp_path / RUN), run_id=run_id, nodes=nodes, path=PATH)
    return stage_actions.run_step(stage_actions.make_action(action.ActionModule, args), {'inventory_hostname': 'node01'})


def test_the_check_records_the_node_and_the_pod_step_passes_on_the_records(tmp_path):
    result = check_step(tmp_path, {'path': REGULAR, 'dir': DIRECTORY}, [], node='node01')
    check_step(tmp_path, {'path': REGULAR, 'dir': DIRECTORY}, [], node='node02')
    record = read_json(result['check_record'])
    assert result['check_record'] == str(tmp_path / RUN / 'nodes' / 'node01' / 'check5.json')
    assert record['schema'] == 'npuops.ascend/check-record' and record['run'] == RUN and record['stage'] == 5
    assert record['usable'] is True and record['problems'] == []
    assert record['data'] == {'settings_usable': True, 'file': FILE}
    pod = check_pod(tmp_path, ['node01', 'node02'])
    assert 'failed' not in pod and pod['msg'] == 'the stage 5 settings and file paths of 2 node(s) are usable'


def test_the_pod_step_names_settings_problems_first(tmp_path):
    # node01: the file's path is a link (a problem of the node); node03: the settings themselves
    check_step(tmp_path, {'path': LINK, 'dir': DIRECTORY}, [], node='node01')
    check_step(tmp_path, {}, [], values=dict(VALUES, buffsize=0), node='node03')
    pod = check_pod(tmp_path, ['node01', 'node03'])
    assert pod['failed'] is True
    assert pod['msg'].startswith('The HCCL settings are not usable (1 problem(s)), so %s was not written on any node: '
                                 'node03: hccl_env_buffsize 0' % PATH)
    assert 'node01' not in pod['msg']
    # once the settings are usable everywhere, every node's problem at the path is named, with a node not checked
    check_step(tmp_path, {'path': REGULAR, 'dir': DIRECTORY}, [], node='node03')
    pod = check_pod(tmp_path, ['node01', 'node03', 'node04'])
    assert pod['msg'].startswith('The HCCL environment file cannot be written as asked (2 problem(s)), so %s was not '
                                 'written on any node: node01: hccl_env_path \'%s\' is a symbolic link' % (PATH, PATH))
    assert (' | node04: no check record of stage 5 in the run store (%s): the check did not run on this node'
            % (tmp_path / RUN / 'nodes' / 'node04' / 'check5.json')) in pod['msg']


def test_the_pod_step_never_uses_a_check_of_another_run(tmp_path):
    check_step(tmp_path, {'path': REGULAR, 'dir': DIRECTORY}, [], node='node01')
    pod = check_pod(tmp_path, ['node01'], run_id='R2')
    assert pod['failed'] is True
    assert 'node01: the check record of stage 5 in the run store' in pod['msg']
    assert 'is of run R1, not of this run R2: a record of another run is never used' in pod['msg']
    # a link in place of the record is not followed
    path = tmp_path / RUN / 'nodes' / 'node01' / 'check5.json'
    path.unlink()
    path.symlink_to(tmp_path / 'elsewhere.json')
    (tmp_path / 'elsewhere.json').write_text('{}')
    pod = check_pod(tmp_path, ['node01'])
    assert pod['failed'] is True and 'cannot be read' in pod['msg']


# ---- step node -----------------------------------------------------------------------------------------------------

def test_the_node_step_writes_loads_reads_the_ports_and_records(tmp_path):
    calls = []
    written = {'changed': True, 'diff': [{'after': 'x'}], 'dest': PATH}
    table = {'ansible.legacy.command': {'changed': True, 'rc': 0, 'stdout': LOADED},
             'npuops.ascend.hccn_info': info()}
    result, plugin, copy_action = node_step(tmp_path, written, table, calls=calls, devices=[0, 1], timeout=30)
    # the copy action, with the checked settings and the text of the file
    loader_args = plugin._shared_loader_obj.action_loader.get.call_args
    assert loader_args[0] == ('ansible.legacy.copy',)
    new_task = loader_args[1]['task']
    assert new_task.args == hccl_env.file_copy_args(checked())
    assert result['changed'] is True and result['diff'] == written['diff'] and 'failed' not in result
    assert result['written'] == {'changed': True, 'dest': PATH}   # the diff is shown once
    # the load (never a change) and one port read
    assert calls == [('ansible.legacy.command', hccl_env.load_args(PATH)),
                     ('npuops.ascend.hccn_info', {'queries': ['pfc', 'dscp_to_tc'], 'timeout': 30, 'devices': [0, 1]})]
    assert result['loaded']['changed'] is False
    assert result['findings'] == []
    record = read_json(tmp_path / RUN / 'nodes' / H / 'stage5.json')
    assert record == result['record'] and record['status'] == 'passed' and record['role'] == 'hccl_env'
    assert record['data'] == {'changed': True, 'env': checked()['env'], 'algo': checked()['algo'],
                              'advice': checked()['advice'],
                              'file': dict((key, checked()['file'][key]) for key in ('path', 'owner', 'group', 'mode')),
                              'files': [{'kind': 'hccl_env', 'path': PATH, 'owner': 'root', 'group': 'root',
                                         'mode': '0644',
                                         'checksum': hashlib.sha1(new_task.args['content'].encode()).hexdigest()}]}
    report = read_json(tmp_path / RUN / 'stage5-hccl_env' / ('%s.json' % H))
    assert report == hccl_env.node_report(H, RUN, checked(), True, [])
    with open(tmp_path / RUN / 'stage5-hccl_env' / ('%s.json' % H), encoding='utf-8') as handle:
        assert handle.read().startswith('{\n    "advice"')   # the layout of to_nice_json
    assert result['msg'] == 'recorded stage 5 (hccl_env) of node02: passed'


def in_place_state(**changes):
    content = hccl_env.file_copy_args(checked())['content']
    return dict({'exists': True, 'isreg': True, 'islnk': False, 'mode': '0644', 'uid': 0, 'gid': 0, 'pw_name': 'root',
                 'gr_name': 'root', 'checksum': node_files.checksum(content)}, **changes)


def test_a_file_the_check_found_in_place_is_not_handed_to_copy(tmp_path):
    calls = []
    table = {'ansible.legacy.command': {'changed': True, 'rc': 0, 'stdout': LOADED}, 'npuops.ascend.hccn_info': info()}
    args = dict(step='node', run_dir=str(tmp_path / RUN), run_id=RUN, result=checked(path_state=in_place_state()),
                intent=INTENT)
    plugin = stage_actions.make_action(action.ActionModule, args, False, modules(table), calls)
    plugin._shared_loader_obj = mock.MagicMock()
    result = stage_actions.run_step(plugin, {'inventory_hostname': H})
    plugin._shared_loader_obj.action_loader.get.assert_not_called()
    assert result['changed'] is False and 'diff' not in result and result['written']['in_place'] is True
    assert [name for name, _args in calls] == ['ansible.legacy.command', 'npuops.ascend.hccn_info']  # still loaded
    assert read_json(result['path'])['status'] == 'passed'
    # the file found in place is what the record names: its text's SHA-1, as the node's stat reported it
    text = hccl_env.file_copy_args(checked())['content']
    assert [(item['kind'], item['path'], item['checksum']) for item in read_json(result['path'])['data']['files']] == [
        ('hccl_env', PATH, hashlib.sha1(text.encode('utf-8')).hexdigest())]


@pytest.mark.parametrize('changes', [{'checksum': '0' * 40}, {'mode': '0664'}, {'gr_name': 'wheel', 'gid': 10},
                                     {'islnk': True, 'isreg': False}, {'exists': False}])
def test_a_file_not_in_place_goes_to_copy(tmp_path, changes):
    table = {'ansible.legacy.command': {'changed': True, 'rc': 0, 'stdout': LOADED}, 'npuops.ascend.hccn_info': info()}
    args = dict(step='node', run_dir=str(tmp_path / RUN), run_id=RUN,
                result=checked(path_state=in_place_state(**changes)), intent=INTENT)
    plugin = stage_actions.make_action(action.ActionModule, args, False, modules(table), [])
    copy_action = mock.MagicMock()
    copy_action.run.return_value = {'changed': True, 'dest': PATH}
    plugin._shared_loader_obj = mock.MagicMock()
    plugin._shared_loader_obj.action_loader.get.return_value = copy_action
    result = stage_actions.run_step(plugin, {'inventory_hostname': H})
    assert copy_action.run.call_count == 1 and result['changed'] is True


def test_a_value_lost_in_the_shell_and_a_port_that_differs_are_findings(tmp_path):
    table = {'ansible.legacy.command': {'rc': 0, 'stdout': LOADED.replace('HCCL_BUFFSIZE=200\n', '')},
             'npuops.ascend.hccn_info': info(npu3=port(pfc_priorities=[3]))}
    result, _plugin, _copy = node_step(tmp_path, {'changed': False}, table)
    assert [(f['device'], f['check']) for f in result['findings']] == [(None, 'HCCL_BUFFSIZE'), (3, 'HCCL_RDMA_SL')]
    assert result['record']['status'] == 'failed' and result['changed'] is False and 'failed' not in result


def test_stage_4s_port_settings_are_used_instead_of_a_read(tmp_path):
    calls = []
    table = {'ansible.legacy.command': {'rc': 0, 'stdout': LOADED}}
    settings = [dict(port(pfc_priorities=[2]), device=0)]
    result, _plugin, _copy = node_step(tmp_path, {'changed': False}, table, calls=calls, port_settings=settings)
    assert [name for name, _args in calls] == ['ansible.legacy.command']
    assert [(f['device'], f['check']) for f in result['findings']] == [(0, 'HCCL_RDMA_SL')]
    # given as null: nothing to check, and still no read
    calls = []
    result, _plugin, _copy = node_step(tmp_path, {'changed': False}, table, calls=calls, port_settings=None)
    assert [name for name, _args in calls] == ['ansible.legacy.command'] and result['findings'] == []


def test_ports_that_cannot_be_read_are_a_warning_not_a_failure(tmp_path):
    table = {'ansible.legacy.command': {'rc': 0, 'stdout': LOADED},
             'npuops.ascend.hccn_info': {'failed': True, 'msg': 'hccn_tool not found'}}
    result, _plugin, _copy = node_step(tmp_path, {'changed': False}, table)
    assert 'failed' not in result and result['ports']['failed'] is False
    assert [(f['check'], f['severity']) for f in result['findings']] == [('ports', 'warn')]
    assert 'hccn_tool not found' in result['findings'][0]['msg']


def test_ports_not_checked_are_not_read(tmp_path):
    calls = []
    table = {'ansible.legacy.command': {'rc': 0, 'stdout': LOADED}}
    result, _plugin, _copy = node_step(tmp_path, {'changed': False}, table, calls=calls, check_ports=False)
    assert [name for name, _args in calls] == ['ansible.legacy.command'] and 'ports' not in result


def test_a_dry_run_that_would_change_the_file_does_not_load_it(tmp_path):
    calls = []
    table = {'npuops.ascend.hccn_info': info()}
    result, _plugin, _copy = node_step(tmp_path, {'changed': True, 'diff': {'after': 'x'}}, table, check_mode=True,
                                       calls=calls)
    assert [name for name, _args in calls] == ['npuops.ascend.hccn_info'] and 'loaded' not in result
    assert result['changed'] is True and result['record']['check_mode'] is True
    assert result['record']['data']['changed'] is True
    # a dry run records the file it would write
    text = hccl_env.file_copy_args(checked())['content']
    assert result['record']['data']['files'] == [{'kind': 'hccl_env', 'path': PATH, 'owner': 'root', 'group': 'root',
                                                  'mode': '0644', 'checksum': hashlib.sha1(text.encode()).hexdigest()}]


def test_a_dry_run_without_a_change_loads_the_file_outside_check_mode(tmp_path):
    seen = []
    table = {'ansible.legacy.command': {'rc': 0, 'stdout': LOADED}, 'npuops.ascend.hccn_info': info()}
    args = dict(step='node', run_dir=str(tmp_path / RUN), run_id=RUN, result=checked(), intent=INTENT)
    plugin = stage_actions.make_action(action.ActionModule, args, True, modules(table))

    def execute(module_name, module_args, task_vars):
        seen.append((module_name, plugin._task.check_mode))
        return dict(table[module_name])

    plugin._execute_module = execute
    plugin._shared_loader_obj = mock.MagicMock()
    plugin._shared_loader_obj.action_loader.get.return_value.run.return_value = {'changed': False}
    result = stage_actions.run_step(plugin, {'inventory_hostname': H})
    assert seen == [('ansible.legacy.command', False), ('npuops.ascend.hccn_info', True)]
    assert plugin._task.check_mode is True and result['findings'] == []


def test_a_failed_write_stops_the_node_before_anything_else(tmp_path):
    calls = []
    result, _plugin, _copy = node_step(tmp_path, {'failed': True, 'msg': 'chown failed'}, {}, calls=calls)
    assert result['failed'] is True and result['msg'] == 'chown failed' and calls == []
    assert not (tmp_path / RUN / 'nodes').exists()


def test_a_file_the_shell_cannot_load_fails_the_node(tmp_path):
    table = {'ansible.legacy.command': {'failed': True, 'rc': 2, 'msg': 'non-zero return code', 'stderr': 'syntax'}}
    result, _plugin, _copy = node_step(tmp_path, {'changed': True}, table)
    assert result['failed'] is True and result['rc'] == 2 and result['msg'] == 'non-zero return code'
    assert result['changed'] is True and not (tmp_path / RUN / 'nodes').exists()


def test_no_report_when_it_is_off(tmp_path):
    table = {'ansible.legacy.command': {'rc': 0, 'stdout': LOADED}, 'npuops.ascend.hccn_info': info()}
    result, _plugin, _copy = node_step(tmp_path, {'changed': False}, table, report=False)
    assert 'report' not in result and not (tmp_path / RUN / 'stage5-hccl_env').exists()
    assert store.read_record(str(tmp_path / RUN), RUN, H, 5)[0]['status'] == 'passed'


def test_a_result_with_problems_writes_nothing(tmp_path):
    args = dict(step='node', run_dir=str(tmp_path / RUN), run_id=RUN,
                result=checked(problems=[{'problem': 'hccl_env_mode 438 is a number'}], file=None))
    plugin = stage_actions.make_action(action.ActionModule, args, answer=modules({}))
    plugin._shared_loader_obj = mock.MagicMock()
    with pytest.raises(AnsibleActionFail) as error:
        stage_actions.run_step(plugin, {'inventory_hostname': H})
    assert 'this one has 1 problem(s): hccl_env_mode 438 is a number' in str(error.value)
    assert not plugin._shared_loader_obj.action_loader.get.called


def test_the_node_step_needs_the_run_and_the_result():
    with pytest.raises(AnsibleActionFail) as error:
        stage_actions.run_step(stage_actions.make_action(action.ActionModule, {'step': 'node', 'run_dir': '/tmp/x'}),
                               {'inventory_hostname': H})
    assert str(error.value) == 'stage_hccl_env: step node needs run_id, result'
