"""npuops.ascend.stage_numa: stage 6 in three steps - the settings and the run user before any change (check), the reads
and the layout's record (read), and the node's work in one task (node): the governor, the run user, the map and the
launcher through Ansible's own modules and actions, the launcher test, the undoing of a failed install, the record and
the JSON report."""

from __future__ import annotations

import hashlib
import json
import os
from unittest import mock

import pytest

from ansible_collections.npuops.ascend.plugins.action import stage_numa as action
from ansible_collections.npuops.ascend.plugins.plugin_utils import node_files
from ansible_collections.npuops.ascend.plugins.plugin_utils.numa import RUN_USER_COMMENT
from ansible_collections.npuops.ascend.tests.unit.plugins.action import stage_actions

RUN = 'R6'
MAP = '/etc/npuops/numa-bind.json'
LAUNCHER = '/usr/local/bin/npu-bind'
SETTINGS = {'governor': 'performance', 'method': 'numactl', 'run_user': 'npuops', 'run_user_existing': 'refuse',
            'npus_per_node': '2', 'max_swappiness': '10', 'thp_mode': 'never', 'host_severity': 'warn',
            'aicore_sample_seconds': '0', 'map_path': MAP, 'launcher_path': LAUNCHER, 'launcher_python': '/usr/bin/python3'}
NUMA = {'changed': False, 'nodes': [{'id': 6, 'cpus': [144, 145]}], 'cpus_total': 192,
        'npu': {'0': {'numa_node': 6, 'cpus': [144, 145], 'cpu_affinity': '144-145'},
                '1': {'numa_node': 6, 'cpus': [144, 145], 'cpu_affinity': '144-145'}}}
BINDING = [{'npu': 0, 'numa_node': 6, 'cpus': '144-145'}, {'npu': 1, 'numa_node': 6, 'cpus': '144-145'}]
HOST = {'changed': False, 'swappiness': 10, 'transparent_hugepage': 'never'}
GOVERNOR = {'changed': True, 'before': {'0': 'ondemand', '1': 'ondemand'}, 'after': {'0': 'performance', '1': 'performance'},
            'changed_cpus': '0-1', 'diff': {'before': 'ondemand\n', 'after': 'performance\n'}}
PASSWD_ABSENT = {'ansible_facts': {'getent_passwd': {'npuops': None}}}
GROUPS = {'ansible_facts': {'getent_group': {'root': ['x', '0', ''], 'wheel': ['x', '10', 'admin']}}}


class Node:
    """The node's answers: each module's result (or a list of results, one per call), and every call made."""

    def __init__(self, **answers):
        self.answers = dict({'npuops.ascend.numa_info': NUMA, 'npuops.ascend.host_info': HOST,
                             'npuops.ascend.cpu_governor': GOVERNOR, 'ansible.legacy.getent:passwd': PASSWD_ABSENT,
                             'ansible.legacy.getent:group': GROUPS, 'ansible.legacy.user': {'changed': True},
                             'ansible.legacy.file': {'changed': False},
                             'npuops.ascend.path_info': {'changed': False, 'paths': []},
                             'ansible.legacy.command': {'changed': True, 'rc': 0, 'stdout': 'npuops\n', 'stderr': ''},
                             'copy': {'changed': True, 'dest': MAP, 'diff': [{'after_header': MAP}]},
                             'template': {'changed': True, 'dest': LAUNCHER, 'diff': [{'after_header': LAUNCHER}]}},
                            **answers)
        self.calls = []
        self.modes = []  # the check mode each module ran with
        self.plugin = None

    def answer(self, name):
        answer = self.answers[name]
        if isinstance(answer, list):
            return answer.pop(0)
        return answer

    def module(self, name, args):
        key = '%s:%s' % (name, args['database']) if name == 'ansible.legacy.getent' else name
        self.calls.append((name, dict(args)))
        self.modes.append((name, self.plugin._task.check_mode))
        return dict(self.answer(key))


def run(tmp_path, step, node, check_mode=False, host='node01', **extra):
    args = dict(step=step, settings=dict(SETTINGS))
    args.update(extra)
    if step != 'check':
        args.update(run_dir=str(tmp_path / RUN), run_id=RUN)
    plugin = stage_actions.make_action(action.ActionModule, args, check_mode, lambda name: {})
    plugin._execute_module = lambda module_name, module_args, task_vars: node.module(module_name, module_args)
    node.plugin = plugin

    def get(name, task, **kwargs):
        runner = mock.MagicMock()

        def run_action(task_vars):
            node.calls.append((name, dict(task.args)))
            node.modes.append((name, plugin._task.check_mode))
            return dict(node.answer(name.rsplit('.', 1)[-1] if not task.args.get('remote_src') else 'restore'))

        runner.run.side_effect = run_action
        return runner

    plugin._shared_loader_obj = mock.MagicMock()
    plugin._shared_loader_obj.action_loader.get.side_effect = get
    plugin._task.copy.side_effect = lambda: mock.MagicMock(args={})
    with mock.patch.object(action.time, 'sleep'):
        return stage_actions.run_step(plugin, {'inventory_hostname': host, 'ansible_check_mode': check_mode})


def names(node):
    return [name for name, _args in node.calls]


def read_json(path):
    with open(path, encoding='utf-8') as handle:
        return json.load(handle)


def sha1(text):
    """The SHA-1 hex of a text as the node stores it (UTF-8): what ansible's stat and copy report."""
    return hashlib.sha1(text.encode('utf-8')).hexdigest()


# ---- check: the settings play ------------------------------------------------------------------------------------

def test_check_refuses_bad_settings_before_reading_anything(tmp_path):
    node = Node()
    result = run(tmp_path, 'check', node, settings=dict(SETTINGS, run_user='root', max_swappiness=500))
    assert result['failed'] is True and node.calls == []
    assert result['msg'] == (
        "node01: the stage 6 settings are not usable (2 problem(s)), so nothing was changed on any node: "
        "numa_bind_run_user 'root': the workload must run as a non-root user; choose another user (default npuops) | "
        "numa_bind_max_swappiness 500 is outside 0-200 (the kernel's range of vm.swappiness)")


def test_check_reads_the_run_user_and_refuses_an_account_stage_6_did_not_create(tmp_path):
    node = Node(**{'ansible.legacy.getent:passwd': {'ansible_facts': {'getent_passwd': {
        'npuops': ['x', '1001', '1001', 'Someone', '/home/npuops', '/bin/bash']}}}})
    result = run(tmp_path, 'check', node)
    assert names(node) == ['ansible.legacy.getent', 'ansible.legacy.getent']
    assert node.calls[0][1] == {'database': 'passwd', 'key': 'npuops', 'fail_key': False}
    assert result['failed'] is True and result['msg'].endswith('. Nothing was changed on any node.')
    assert result['msg'].startswith('node01: the run user npuops already exists (uid 1001, shell /bin/bash, '
                                    "comment 'Someone') and stage 6 did not create it")
    assert 'ansible_facts' not in result  # the reads set no fact


def test_check_without_the_run_user_reads_nothing_and_a_missing_user_is_planned(tmp_path):
    node = Node()
    assert run(tmp_path, 'check', node, check_run_user=False) == {
        'changed': False, 'msg': 'the stage 6 settings of node01 are usable'}
    assert node.calls == []
    result = run(tmp_path, 'check', node)
    assert not result.get('failed') and result['run_user_plan']['manage'] is True
    assert result['run_user_plan']['state'] == 'absent'


def test_check_of_the_run_user_alone_skips_the_settings(tmp_path):
    node = Node()
    result = run(tmp_path, 'check', node, settings=dict(SETTINGS, max_swappiness=500), check_settings=False)
    assert not result.get('failed') and names(node) == ['ansible.legacy.getent', 'ansible.legacy.getent']


def test_a_group_list_that_cannot_be_read_is_a_warning_of_the_plan(tmp_path):
    mine = ['x', '990', '990', RUN_USER_COMMENT, '/home/npuops', '/sbin/nologin']
    node = Node(**{'ansible.legacy.getent:passwd': {'ansible_facts': {'getent_passwd': {'npuops': mine}}},
                   'ansible.legacy.getent:group': {'failed': True, 'msg': 'no enumeration'}})
    plan = run(tmp_path, 'check', node)['run_user_plan']
    assert plan['manage'] is True and plan['state'] == 'created by stage 6'
    assert plan['warnings'] == ['node01: the groups of the run user npuops could not be listed (getent group), so its '
                                'membership of root, wheel, sudo, admin, docker, lxd, libvirt, disk, kmem, shadow was '
                                'not checked']


# ---- read: before any change ---------------------------------------------------------------------------------------

def test_read_always_checks_the_settings(tmp_path):
    node = Node()
    result = run(tmp_path, 'read', node, settings=dict(SETTINGS, method='bogus'), check_settings=False)
    assert result['failed'] is True and node.calls == []
    assert "numa_bind_method 'bogus' is not a binding method" in result['msg']
    assert not (tmp_path / RUN).exists()


def test_read_records_the_layout_and_keeps_the_numa_info_keys(tmp_path):
    node = Node()
    result = run(tmp_path, 'read', node)
    assert names(node) == ['npuops.ascend.numa_info', 'npuops.ascend.host_info', 'ansible.legacy.getent',
                           'ansible.legacy.getent']
    assert result['map'] == BINDING and result['nodes'] == NUMA['nodes'] and result['cpus_total'] == 192
    assert result['numa']['npu'] == NUMA['npu'] and result['host_info']['swappiness'] == 10
    record = read_json(tmp_path / RUN / 'nodes' / 'node01' / 'stage6.json')
    assert record['status'] == 'passed' and record['data'] == {} and record['role'] == 'numa_bind'
    assert result['changed'] is False and not result.get('failed')


def test_a_layout_that_cannot_be_read_is_a_failed_record_not_a_failed_task(tmp_path):
    node = Node(**{'npuops.ascend.numa_info': {'failed': True, 'msg': 'node01: numactl not found'}})
    result = run(tmp_path, 'read', node, settings=dict(SETTINGS, host_severity='ignore'))
    assert not result.get('failed') and result['map'] == [] and 'nodes' not in result
    assert result['host_info'] == {'changed': False, 'skipped': True}
    assert 'npuops.ascend.host_info' not in names(node)
    record = read_json(result['path'])
    assert record['status'] == 'failed'
    assert record['failures'] == ['node01: the NUMA layout could not be read, so no NPU is bound and stage 6 changed nothing on '
                                  'the node: node01: numactl not found']


def test_read_refuses_the_run_user_before_the_record(tmp_path):
    node = Node(**{'ansible.legacy.getent:passwd': {'ansible_facts': {'getent_passwd': {
        'npuops': ['x', '0', '0', 'root', '/root', '/bin/bash']}}}})
    result = run(tmp_path, 'read', node)
    assert result['failed'] is True and 'it has uid 0 (root)' in result['msg']
    assert not (tmp_path / RUN / 'nodes').exists()


# ---- node: the changes -----------------------------------------------------------------------------------------------

def read_result(tmp_path, node=None, **settings):
    return run(tmp_path, 'read', node or Node(), settings=dict(SETTINGS, **settings))


def test_the_node_step_runs_every_part_in_order_and_records_it(tmp_path):
    read = read_result(tmp_path)
    node = Node()
    result = run(tmp_path, 'node', node, read=read)
    assert names(node) == ['npuops.ascend.cpu_governor', 'npuops.ascend.path_info', 'ansible.legacy.user',
                           'ansible.legacy.file', 'ansible.legacy.file', 'ansible.legacy.copy',
                           'ansible.legacy.template', 'ansible.legacy.command']
    calls = dict((name, args) for name, args in node.calls)
    assert calls['ansible.legacy.user'] == {'name': 'npuops', 'system': True, 'shell': '/sbin/nologin',
                                            'create_home': True, 'comment': RUN_USER_COMMENT}
    assert [args['path'] for name, args in node.calls if name == 'ansible.legacy.file'] == ['/etc/npuops', '/usr/local/bin']
    copy = calls['ansible.legacy.copy']
    assert (copy['dest'], copy['mode'], copy['owner'], copy['group'], copy['backup']) == (MAP, '0644', 'root', 'root', True)
    assert copy['content'].endswith('}\n') and copy['content'].startswith('{\n    "managed_by": "npuops.ascend')
    assert json.loads(copy['content']) == {'managed_by': 'npuops.ascend (role numa_bind, stage 6)', 'method': 'numactl',
                                           'run_user': 'npuops', 'visible_devices': False, 'npus_per_node': 2,
                                           'npus': BINDING}
    assert calls['ansible.legacy.template'] == {'src': 'npu-bind.j2', 'dest': LAUNCHER, 'owner': 'root', 'group': 'root',
                                                'mode': '0755', 'backup': True}
    assert calls['ansible.legacy.command'] == {'argv': [LAUNCHER, '0', '--', 'id', '-un']}
    assert result['changed'] is True and result['findings'] == []
    assert result['diff'] == [GOVERNOR['diff'], {'after_header': MAP}, {'after_header': LAUNCHER}]
    record = read_json(result['path'])
    assert record['status'] == 'passed'
    assert record['data'] == {'npus': BINDING, 'governor_before': ['ondemand'], 'governor_after': ['performance'],
                              'swappiness': 10, 'transparent_hugepage': 'never', 'launcher_test': 'runs as npuops',
                              'changed': ['user', 'map', 'launcher', 'governor'], 'undone': [], 'backups': [],
                              'aicore': {}, 'files': [
                                  # the map's text as the copy got it; the launcher was not rendered here and the
                                  # template's result has no checksum
                                  {'kind': 'map', 'path': MAP, 'checksum': sha1(copy['content']), 'owner': 'root',
                                   'group': 'root', 'mode': '0644'},
                                  {'kind': 'launcher', 'path': LAUNCHER, 'checksum': None, 'owner': 'root',
                                   'group': 'root', 'mode': '0755'}]}
    report = read_json(result['report'])
    assert result['report'] == str(tmp_path / RUN / 'stage6-numa_bind' / 'node01.json')
    assert report['launcher_check'] == 'npuops\n' and report['governor']['wanted'] == 'performance'
    assert report['changed'] == {'user': True, 'map': True, 'launcher': True, 'governor': True}
    assert report['aicore'] is None and report['run_user_account'] == 'absent' and report['check_mode'] is False


def test_a_second_run_changes_nothing(tmp_path):
    read = read_result(tmp_path)
    same = {'changed': False, 'diff': [{'before': 'x', 'after': 'x'}]}
    node = Node(**{'npuops.ascend.cpu_governor': dict(GOVERNOR, changed=False, before=GOVERNOR['after']),
                   'ansible.legacy.user': {'changed': False}, 'copy': same, 'template': same})
    result = run(tmp_path, 'node', node, read=read)
    assert result['changed'] is False and 'diff' not in result
    assert read_json(result['path'])['data']['changed'] == []


def in_place(path, sha1=None, mode='0644', kind='file', **changes):
    stat = dict({'exists': True, 'isreg': kind == 'file', 'isdir': kind == 'directory', 'islnk': False, 'mode': mode,
                 'uid': 0, 'gid': 0, 'pw_name': 'root', 'gr_name': 'root'}, **changes)
    if sha1:
        stat['checksum'] = sha1
    return {'path': path, 'follow': kind == 'directory', 'stat': stat}


def test_what_is_in_place_costs_one_read_and_no_file_copy_or_template_run(tmp_path):
    read = read_result(tmp_path)
    first = Node()
    run(tmp_path, 'node', first, read=read)
    content = dict(first.calls)['ansible.legacy.copy']['content']
    launcher = '#!/usr/bin/python3\nprint("npu-bind")\n'
    node = Node(**{'npuops.ascend.cpu_governor': dict(GOVERNOR, changed=False, before=GOVERNOR['after']),
                   'ansible.legacy.user': {'changed': False},
                   'npuops.ascend.path_info': {'changed': False, 'paths': [
                       in_place('/etc/npuops', mode='0755', kind='directory'),
                       in_place('/usr/local/bin', mode='0755', kind='directory'),
                       in_place(MAP, node_files.checksum(content)),
                       in_place(LAUNCHER, node_files.checksum(launcher), mode='0755')]}})
    with mock.patch.object(action.ActionModule, '_render_launcher', return_value=launcher):
        result = run(tmp_path, 'node', node, read=read)
    assert names(node) == ['npuops.ascend.cpu_governor', 'npuops.ascend.path_info', 'ansible.legacy.user',
                           'ansible.legacy.command']
    assert dict(node.calls)['npuops.ascend.path_info'] == {'paths': [
        {'path': '/etc/npuops', 'follow': True, 'checksum': False},
        {'path': '/usr/local/bin', 'follow': True, 'checksum': False},
        {'path': MAP, 'follow': False, 'checksum': True}, {'path': LAUNCHER, 'follow': False, 'checksum': True}]}
    assert result['changed'] is False and 'diff' not in result
    assert result['map_written']['in_place'] is True and result['launcher_written']['dest'] == LAUNCHER
    assert read_json(result['path'])['data']['changed'] == [] and result['launcher_check']['rc'] == 0
    # the files found in place are the files the record names, with the SHA-1 of their texts
    assert [(item['kind'], item['path'], item['checksum'], item['mode'])
            for item in read_json(result['path'])['data']['files']] == [
        ('map', MAP, sha1(content), '0644'), ('launcher', LAUNCHER, sha1(launcher), '0755')]


@pytest.mark.parametrize('what, changes', [
    ('map', {'checksum': '0' * 40}), ('map', {'mode': '0666'}), ('map', {'pw_name': 'npuops', 'uid': 1001}),
    ('map', {'islnk': True, 'isreg': False, 'lnk_target': '/tmp/evil'}), ('launcher', {'checksum': None}),
])
def test_a_file_not_quite_in_place_goes_to_its_action(tmp_path, what, changes):
    read = read_result(tmp_path)
    first = Node()
    run(tmp_path, 'node', first, read=read)
    content = dict(first.calls)['ansible.legacy.copy']['content']
    launcher = '#!/usr/bin/python3\n'
    entries = {'map': in_place(MAP, node_files.checksum(content)),
               'launcher': in_place(LAUNCHER, node_files.checksum(launcher), mode='0755')}
    entries[what]['stat'].update(changes)
    node = Node(**{'npuops.ascend.path_info': {'changed': False, 'paths': [
        in_place('/etc/npuops', mode='0755', kind='directory'), in_place('/usr/local/bin', mode='0755', kind='directory'),
        entries['map'], entries['launcher']]}})
    with mock.patch.object(action.ActionModule, '_render_launcher', return_value=launcher):
        run(tmp_path, 'node', node, read=read)
    ran = names(node)
    assert 'ansible.legacy.file' not in ran
    assert ('ansible.legacy.copy' in ran) == (what == 'map') and ('ansible.legacy.template' in ran) == (what == 'launcher')


def test_a_failed_read_of_the_paths_hands_every_file_to_its_action(tmp_path):
    read = read_result(tmp_path)
    node = Node(**{'npuops.ascend.path_info': {'failed': True, 'msg': 'boom'}})
    with mock.patch.object(action.ActionModule, '_render_launcher', return_value='x'):
        run(tmp_path, 'node', node, read=read)
    assert names(node).count('ansible.legacy.file') == 2
    assert 'ansible.legacy.copy' in names(node) and 'ansible.legacy.template' in names(node)


def test_a_failed_launcher_test_puts_back_the_map_and_removes_a_new_launcher(tmp_path):
    read = read_result(tmp_path)
    backup = MAP + '.123.2026-12-05@10:00:00~'
    node = Node(**{'copy': {'changed': True, 'dest': MAP, 'backup_file': backup},
                   'ansible.legacy.command': {'failed': True, 'rc': 1, 'stdout': '',
                                              'stderr': 'taskset: failed to set pid 7\n', 'msg': 'non-zero return code'},
                   'restore': {'changed': True}, 'ansible.legacy.file': [{'changed': False}, {'changed': False},
                                                                         {'changed': True}]})
    result = run(tmp_path, 'node', node, read=read)
    assert not result.get('failed')
    assert node.calls[-2:] == [('ansible.legacy.copy', {'src': backup, 'dest': MAP, 'remote_src': True, 'owner': 'root',
                                                        'group': 'root', 'mode': '0644'}),
                               ('ansible.legacy.file', {'path': LAUNCHER, 'state': 'absent'})]
    assert result['restored'] == [{'path': MAP, 'backup': backup, 'action': 'restore', 'mode': '0644'},
                                  {'path': LAUNCHER, 'backup': None, 'action': 'remove', 'mode': '0755'}]
    record = read_json(result['path'])
    assert record['status'] == 'failed'
    assert record['failures'] == ['node01: %s did not run a test command as npuops (rc=1): taskset: failed to set pid 7. The files '
                                  'of this run were undone: %s put back from %s; %s removed (it did not exist before)'
                                  % (LAUNCHER, MAP, backup, LAUNCHER)]
    assert record['data']['launcher_test'] == 'failed' and record['data']['undone'] == [MAP, LAUNCHER]
    assert record['data']['backups'] == [backup]
    assert record['data']['files'] == []   # what the run undid is not what it left
    report = read_json(result['report'])
    assert report['backups'] == {'map': backup, 'launcher': None} and report['restored'] == result['restored']
    assert result['launcher_check']['failed'] is False  # as a task with failed_when: false registered it


def test_check_mode_skips_the_launcher_test_after_a_predicted_change(tmp_path):
    read = read_result(tmp_path)
    node = Node()
    result = run(tmp_path, 'node', node, check_mode=True, read=read)
    assert 'ansible.legacy.command' not in names(node)
    assert result['launcher_check'] == {'changed': False, 'skipped': True}
    record = read_json(result['path'])
    assert record['check_mode'] is True and record['data']['launcher_test'] == 'skipped' and record['status'] == 'passed'
    # a dry run names the files it would write
    content = dict(node.calls)['ansible.legacy.copy']['content']
    assert [(item['kind'], item['checksum']) for item in record['data']['files']] == [('map', sha1(content)),
                                                                                      ('launcher', None)]
    assert read_json(result['report'])['check_mode'] is True


def test_check_mode_runs_the_launcher_test_for_real_when_nothing_would_change(tmp_path):
    read = read_result(tmp_path)
    node = Node(**{'ansible.legacy.user': {'changed': False}, 'copy': {'changed': False}, 'template': {'changed': False}})
    result = run(tmp_path, 'node', node, check_mode=True, read=read)
    modes = dict(node.modes)
    assert modes['ansible.legacy.command'] is False  # check_mode: false for the test, as before
    assert modes['ansible.legacy.copy'] is True and modes['ansible.legacy.user'] is True
    assert node.plugin._task.check_mode is True  # put back after the test
    assert result['launcher_check']['rc'] == 0 and read_json(result['path'])['data']['launcher_test'] == 'runs as npuops'


def test_the_ai_core_samples_run_outside_check_mode(tmp_path):
    read = read_result(tmp_path)
    node = Node(**{'npuops.ascend.npu_info': {'devices': {}}})
    run(tmp_path, 'node', node, check_mode=True, read=read, settings=dict(SETTINGS, aicore_sample_seconds='1'))
    assert [mode for name, mode in node.modes if name == 'npuops.ascend.npu_info'] == [False, False]
    assert dict(node.modes)['npuops.ascend.cpu_governor'] is True


def test_the_run_user_is_retried_while_the_passwd_lock_is_held(tmp_path):
    read = read_result(tmp_path)
    lock = {'failed': True, 'msg': 'useradd: cannot lock /etc/passwd; try again later.'}
    node = Node(**{'ansible.legacy.user': [lock, lock, {'changed': True}]})
    result = run(tmp_path, 'node', node, read=read)
    assert names(node).count('ansible.legacy.user') == 3 and result['user']['attempts'] == 3
    assert not result.get('failed')


def test_a_run_user_that_cannot_be_created_fails_the_node_with_its_own_message(tmp_path):
    read = read_result(tmp_path)
    lock = {'failed': True, 'msg': 'useradd: cannot lock /etc/passwd; try again later.'}
    node = Node(**{'ansible.legacy.user': lock})
    result = run(tmp_path, 'node', node, read=read, run_user_retries=2)
    assert names(node) == ['npuops.ascend.cpu_governor', 'npuops.ascend.path_info'] + ['ansible.legacy.user'] * 3
    assert result['failed'] is True and result['msg'] == lock['msg'] and result['attempts'] == 3
    assert result['changed'] is True  # the governor was set before
    assert read_json(tmp_path / RUN / 'nodes' / 'node01' / 'stage6.json')['data'] == {}  # the layout's record stays


def test_an_account_the_read_step_does_not_manage_is_left_alone(tmp_path):
    mine = ['x', '1001', '1001', 'Someone', '/home/npuops', '/bin/bash']
    read = read_result(tmp_path, Node(**{'ansible.legacy.getent:passwd': {'ansible_facts': {'getent_passwd': {
        'npuops': mine}}}}), run_user_existing='use')
    node = Node()
    result = run(tmp_path, 'node', node, read=read, settings=dict(SETTINGS, run_user_existing='use'))
    assert 'ansible.legacy.user' not in names(node) and result['user'] == {'changed': False, 'skipped': True}
    assert read_json(result['report'])['run_user_account'] == 'existing, used as it is'


def test_without_governor_report_or_test(tmp_path):
    read = read_result(tmp_path)
    node = Node()
    result = run(tmp_path, 'node', node, read=read, governor_enabled=False, verify=False, report=False)
    assert 'npuops.ascend.cpu_governor' not in names(node) and 'ansible.legacy.command' not in names(node)
    assert 'report' not in result and not (tmp_path / RUN / 'stage6-numa_bind').exists()
    data = read_json(result['path'])['data']
    assert data['governor_before'] == [] and data['launcher_test'] == 'skipped' and 'governor' not in data['changed']


def test_the_ai_core_usage_is_sampled_before_and_after(tmp_path):
    read = read_result(tmp_path)
    usage = {'devices': {'0': {'usages': {'chips': [{'aicore_usage_pct': 40}]}}}}
    node = Node(**{'npuops.ascend.npu_info': [usage, dict(usage, failed=True), usage,
                                              {'devices': {'0': {'usages': {'chips': [{'aicore_usage_pct': 60}]}}}}]})
    result = run(tmp_path, 'node', node, read=read, settings=dict(SETTINGS, aicore_sample_seconds='2'))
    assert names(node)[:2] == ['npuops.ascend.npu_info'] * 2 and names(node)[-1] == 'npuops.ascend.npu_info'
    assert result['aicore'] == {'before': {0: {'mean': 40.0, 'variance': 0.0, 'samples': 2}},
                                'after': {0: {'mean': 50.0, 'variance': 100.0, 'samples': 2}}}
    assert read_json(result['report'])['aicore']['after'] == {'0': {'mean': 50.0, 'variance': 100.0, 'samples': 2}}


@pytest.mark.parametrize('part, answer', [('ansible.legacy.file', {'failed': True, 'msg': 'chown failed'}),
                                          ('copy', {'failed': True, 'msg': 'Destination not writable'})])
def test_a_part_that_fails_fails_the_node_with_its_own_result(tmp_path, part, answer):
    read = read_result(tmp_path)
    node = Node(**{part: answer})
    result = run(tmp_path, 'node', node, read=read)
    assert result['failed'] is True and result['msg'] == answer['msg']
    assert 'ansible.legacy.template' not in names(node) and 'ansible.legacy.command' not in names(node)


def test_skip_tags_leave_their_parts_out(tmp_path):
    read = run(tmp_path, 'read', Node(), skip_tags=['numa_bind_host', 'numa_bind_launcher'],
               settings=dict(SETTINGS, method='bogus'))
    assert read['failed'] is True  # the settings are checked unless numa_bind_validate is skipped
    node = Node()
    read = run(tmp_path, 'read', node, skip_tags=['numa_bind_host', 'numa_bind_launcher', 'numa_bind_validate'],
               settings=dict(SETTINGS, method='bogus'))
    assert names(node) == ['npuops.ascend.numa_info'] and read['run_user_plan'] is None
    assert read['host_info'] == {'changed': False, 'skipped': True} and 'record' in read
    node = Node()
    result = run(tmp_path, 'node', node, read=read, skip_tags=['numa_bind_launcher', 'numa_bind_governor'])
    assert node.calls == [] and result['changed'] is False and result['findings'] == []
    data = read_json(result['path'])['data']
    assert data['launcher_test'] == 'skipped' and data['changed'] == [] and data['governor_after'] == []
    assert data['files'] == []   # numa_bind_launcher skipped: no file handled
    assert read_json(result['report'])['governor']['wanted'] == 'performance'


def test_skipping_the_gate_leaves_out_the_records_and_the_report(tmp_path):
    read = run(tmp_path, 'read', Node(), skip_tags=['numa_bind_gate'])
    assert 'record' not in read and not (tmp_path / RUN / 'nodes').exists()
    node = Node()
    result = run(tmp_path, 'node', node, read=read, skip_tags=['numa_bind_gate'])
    assert 'ansible.legacy.command' in names(node) and 'record' not in result and 'report' not in result
    assert not (tmp_path / RUN).exists()


def test_the_launcher_is_rendered_from_the_roles_template_with_the_tasks_variables():
    import os
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    template = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'numa_bind', 'templates',
                            'npu-bind.j2')
    loader = DataLoader()
    plugin = action.ActionModule(mock.MagicMock(), mock.MagicMock(), mock.MagicMock(), loader=loader,
                                 templar=Templar(loader=loader), shared_loader_obj=None)
    plugin._find_needle = lambda folder, name: os.path.abspath(template) if (folder, name) == ('templates', 'npu-bind.j2') else None
    text = plugin._render_launcher({'numa_bind_launcher_python': '/opt/py/bin/python3', 'numa_bind_map_path': MAP})
    assert text.startswith('#!/opt/py/bin/python3\n') and 'MAP = "%s"' % MAP in text
    assert text.endswith('\n') and '{{' not in text
    plugin._find_needle = mock.MagicMock(side_effect=OSError('no template'))
    assert plugin._render_launcher({}) is None  # the template action then runs and says why


OURS = ['x', '990', '990', RUN_USER_COMMENT, '/home/npuops', '/sbin/nologin']


@pytest.mark.parametrize('home, shell, user_runs', [
    (in_place('/home/npuops', mode='0700', kind='directory', pw_name='npuops', uid=990), '/sbin/nologin', False),
    ({'path': '/home/npuops', 'stat': {'exists': False}}, '/sbin/nologin', True),  # the user module creates the home
    (in_place('/home/npuops', mode='0700', kind='directory'), '/bin/bash', True),  # the user module sets the shell
])
def test_a_run_user_stage_6_created_and_kept_is_not_handed_to_the_user_module(tmp_path, home, shell, user_runs):
    passwd = {'ansible_facts': {'getent_passwd': {'npuops': list(OURS[:5]) + [shell]}}}
    read = read_result(tmp_path, node=Node(**{'ansible.legacy.getent:passwd': passwd}))
    assert read['run_user_plan']['account'] == {'uid': '990', 'home': '/home/npuops', 'shell': shell}
    node = Node(**{'npuops.ascend.path_info': {'changed': False, 'paths': [home]}})
    result = run(tmp_path, 'node', node, read=read)
    assert dict(node.calls)['npuops.ascend.path_info']['paths'][0] == {'path': '/home/npuops', 'follow': True,
                                                                       'checksum': False}
    assert ('ansible.legacy.user' in names(node)) is user_runs
    if not user_runs:
        assert result['user']['in_place'] is True and result['user']['changed'] is False
        assert result['user']['msg'] == 'the run user npuops is in place (created by stage 6, shell /sbin/nologin, home /home/npuops)'


def test_an_absent_run_user_is_created_without_reading_a_home(tmp_path):
    read = read_result(tmp_path)
    node = Node()
    run(tmp_path, 'node', node, read=read)
    assert all(entry['path'] != '/home/npuops' for entry in dict(node.calls)['npuops.ascend.path_info']['paths'])
    assert 'ansible.legacy.user' in names(node)


# ---- the per-rank launch beside the map: the launch file and npu-launch ----------------------------------------------

LAUNCH_FILE = '/etc/npuops/launch.json'
LAUNCH_SCRIPT = '/usr/local/bin/npu-launch'
LAUNCH = {'enabled': True, 'path': LAUNCH_FILE, 'script_path': LAUNCH_SCRIPT, 'nodes': ['node01', 'node02'],
          'addr': '127.0.1.1', 'master_addr': '', 'master_port': 29500, 'affinity_mode': 0, 'grace_seconds': 10}


def launch_read(tmp_path, host='node01', **changes):
    return run(tmp_path, 'read', Node(), host=host, launch=dict(LAUNCH, **changes))


def test_the_read_step_records_the_nodes_launch_address(tmp_path):
    launch_read(tmp_path)
    record = read_json(tmp_path / RUN / 'nodes' / 'node01' / 'stage6.json')
    assert record['data'] == {'launch_addr': '127.0.1.1'}


def test_the_node_step_writes_the_launch_file_and_npu_launch_beside_the_map_and_the_launcher(tmp_path):
    launch_read(tmp_path)  # node01's record: the master address
    read = launch_read(tmp_path, host='node02', addr='127.0.1.2')
    node = Node()
    result = run(tmp_path, 'node', node, host='node02', read=read, launch=dict(LAUNCH, addr='127.0.1.2'))
    assert names(node) == ['npuops.ascend.cpu_governor', 'npuops.ascend.path_info', 'ansible.legacy.user',
                           'ansible.legacy.file', 'ansible.legacy.file', 'ansible.legacy.copy',
                           'ansible.legacy.template', 'ansible.legacy.copy', 'ansible.legacy.template',
                           'ansible.legacy.command']
    copies = [args for name, args in node.calls if name == 'ansible.legacy.copy']
    templates = [args for name, args in node.calls if name == 'ansible.legacy.template']
    assert [(c['dest'], c['mode'], c['owner'], c['group'], c['backup']) for c in copies] == [
        (MAP, '0644', 'root', 'root', True), (LAUNCH_FILE, '0644', 'root', 'root', True)]
    assert templates[1] == {'src': 'npu-launch.j2', 'dest': LAUNCH_SCRIPT, 'owner': 'root', 'group': 'root',
                            'mode': '0755', 'backup': True}
    document = json.loads(copies[1]['content'])
    assert document['map'] == MAP and document['launcher'] == LAUNCHER and document['node_rank'] == 1
    assert document['master_addr'] == '127.0.1.1'  # node01's, from its record of this run
    assert [(r['rank'], r['npu'], r['numa_node'], r['cpus'], r['omp_num_threads']) for r in document['ranks']] == [
        (2, 0, 6, '144', 1), (3, 1, 6, '145', 1)]
    assert document['torchrun'] == ['--nnodes=2', '--node_rank=1', '--nproc_per_node=2', '--master_addr=127.0.1.1',
                                    '--master_port=29500']
    data = read_json(result['path'])['data']
    assert data['launch_addr'] == '127.0.1.2'
    assert [(item['kind'], item['path'], item['checksum'], item['mode']) for item in data['files']] == [
        ('map', MAP, sha1(copies[0]['content']), '0644'), ('launcher', LAUNCHER, None, '0755'),
        ('launch', LAUNCH_FILE, sha1(copies[1]['content']), '0644'), ('launch_script', LAUNCH_SCRIPT, None, '0755')]
    assert data['changed'] == ['user', 'map', 'launcher', 'launch', 'launch_script', 'governor']
    report = read_json(result['report'])
    assert report['launch_path'] == LAUNCH_FILE and report['launch_script_path'] == LAUNCH_SCRIPT
    assert report['changed']['launch'] is True and report['launch']['world_size'] == 4
    assert result['launch']['node'] == 'node02'


def test_launch_files_in_place_are_not_written_again(tmp_path):
    read = launch_read(tmp_path)
    first = Node()
    script = '#!/usr/bin/python3\nprint("npu-launch")\n'
    with mock.patch.object(action.ActionModule, '_render_launcher', return_value=script):
        run(tmp_path, 'node', first, read=read, launch=LAUNCH)
    copies = [args['content'] for name, args in first.calls if name == 'ansible.legacy.copy']
    node = Node(**{'npuops.ascend.cpu_governor': dict(GOVERNOR, changed=False, before=GOVERNOR['after']),
                   'ansible.legacy.user': {'changed': False},
                   'npuops.ascend.path_info': {'changed': False, 'paths': [
                       in_place('/etc/npuops', mode='0755', kind='directory'),
                       in_place('/usr/local/bin', mode='0755', kind='directory'),
                       in_place(MAP, node_files.checksum(copies[0])),
                       in_place(LAUNCHER, node_files.checksum(script), mode='0755'),
                       in_place(LAUNCH_FILE, node_files.checksum(copies[1])),
                       in_place(LAUNCH_SCRIPT, node_files.checksum(script), mode='0755')]}})
    with mock.patch.object(action.ActionModule, '_render_launcher', return_value=script):
        result = run(tmp_path, 'node', node, read=read, launch=LAUNCH)
    assert [entry['path'] for entry in dict(node.calls)['npuops.ascend.path_info']['paths']] == [
        '/etc/npuops', '/usr/local/bin', MAP, LAUNCHER, LAUNCH_FILE, LAUNCH_SCRIPT]
    assert names(node) == ['npuops.ascend.cpu_governor', 'npuops.ascend.path_info', 'ansible.legacy.user',
                           'ansible.legacy.command']
    assert result['changed'] is False and 'diff' not in result
    assert result['launch_written']['in_place'] is True and result['launch_script_written']['in_place'] is True


def test_check_mode_shows_the_launch_files_and_changes_nothing(tmp_path):
    read = launch_read(tmp_path)
    node = Node(**{'copy': {'changed': True, 'diff': [{'after_header': 'copied'}]}})
    result = run(tmp_path, 'node', node, check_mode=True, read=read, launch=LAUNCH)
    modes = [(name, mode) for name, mode in node.modes if name in ('ansible.legacy.copy', 'ansible.legacy.template')]
    assert modes == [('ansible.legacy.copy', True), ('ansible.legacy.template', True)] * 2
    assert result['diff'].count({'after_header': 'copied'}) == 2
    assert 'ansible.legacy.command' not in names(node)


def test_a_failed_launcher_test_also_undoes_the_launch_files(tmp_path):
    read = launch_read(tmp_path)
    backup = LAUNCH_FILE + '.1.2026-12-05@10:00:00~'
    copies = [{'changed': True, 'dest': MAP}, {'changed': True, 'dest': LAUNCH_FILE, 'backup_file': backup},
              {'changed': True}]
    node = Node(**{'copy': copies,
                   'template': [{'changed': True, 'dest': LAUNCHER}, {'changed': True, 'dest': LAUNCH_SCRIPT}],
                   'ansible.legacy.command': {'rc': 1, 'stdout': '', 'stderr': 'numactl: not found'},
                   'restore': {'changed': True}})
    result = run(tmp_path, 'node', node, read=read, launch=LAUNCH)
    assert [(item['path'], item['action']) for item in result['restored']] == [
        (MAP, 'remove'), (LAUNCHER, 'remove'), (LAUNCH_FILE, 'restore'), (LAUNCH_SCRIPT, 'remove')]
    assert read_json(result['report'])['backups']['launch'] == backup
    assert read_json(result['path'])['data']['files'] == []


@pytest.mark.parametrize('host, changes, words', [
    ('node03', {}, "node03 is not in the run's node list (node01, node02), so it has no node rank"),
    ('node02', {}, 'the first node node01 has no launch address in its stage 6 record of this run'),
])
def test_a_launch_that_cannot_be_worked_out_stops_the_node_before_any_change(tmp_path, host, changes, words):
    read = run(tmp_path, 'read', Node(), host=host, launch=dict(LAUNCH, **changes))
    node = Node()
    result = run(tmp_path, 'node', node, host=host, read=read, launch=dict(LAUNCH, **changes))
    assert result['failed'] is True and result['changed'] is False and node.calls == []
    assert result['msg'].startswith('%s: the per-rank launch of stage 6 cannot be written, so nothing was changed on '
                                    'the node: numa_bind launch: ' % host)
    assert words in result['msg']


def test_the_master_address_setting_needs_no_record(tmp_path):
    read = run(tmp_path, 'read', Node(), host='node02', skip_tags=['numa_bind_gate'],
               launch=dict(LAUNCH, master_addr='192.0.2.1'))
    node = Node()
    result = run(tmp_path, 'node', node, host='node02', read=read, skip_tags=['numa_bind_gate'],
                 launch=dict(LAUNCH, master_addr='192.0.2.1'))
    assert result['launch']['master_addr'] == '192.0.2.1' and not result.get('failed')


def test_bad_launch_settings_stop_the_check_and_the_read(tmp_path):
    for step in ('check', 'read'):
        node = Node()
        result = run(tmp_path, step, node, launch=dict(LAUNCH, master_port=0, path='x'))
        assert result['failed'] is True and node.calls == []
        assert ("numa_bind_launch_path 'x' is not an absolute file path | numa_bind_master_port 0 is not a port from 1 "
                'to 65535') in result['msg']


def test_the_launch_script_is_rendered_from_the_roles_template():
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    template = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'numa_bind', 'templates',
                            'npu-launch.j2')
    loader = DataLoader()
    plugin = action.ActionModule(mock.MagicMock(), mock.MagicMock(), mock.MagicMock(), loader=loader,
                                 templar=Templar(loader=loader), shared_loader_obj=None)
    plugin._find_needle = lambda folder, name: os.path.abspath(template) if name == 'npu-launch.j2' else None
    text = plugin._render_launcher({'numa_bind_launcher_python': '/usr/bin/python3', 'numa_bind_launch_path': LAUNCH_FILE,
                                    'numa_bind_launcher_path': LAUNCHER, 'numa_bind_launch_grace_seconds': 5},
                                   'npu-launch.j2')
    assert text.startswith('#!/usr/bin/python3\n') and 'LAUNCH = "%s"' % LAUNCH_FILE in text
    assert 'LAUNCHER = "%s"' % LAUNCHER in text and 'GRACE_SECONDS = 5\n' in text and '{{' not in text
