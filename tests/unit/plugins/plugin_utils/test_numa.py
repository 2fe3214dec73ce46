"""Stage 6: the settings check, the binding map, the findings and the AI Core statistics."""

from __future__ import annotations

import hashlib

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.numa import (
    RUN_USER_COMMENT,
    aicore_stats,
    changed_parts,
    getent_table,
    launcher_test_due,
    launcher_test_text,
    map_dirs,
    map_document,
    node_data,
    node_report,
    numa_bind_findings,
    numa_bind_map,
    numa_bind_problems,
    numa_bind_restore,
    numa_bind_run_user,
    record_files,
    run_user_failure,
    settings_failure,
    skipped_parts,
)

SETTINGS = {'governor': 'performance', 'method': 'numactl', 'run_user': 'npuops', 'npus_per_node': '8',
            'max_swappiness': '10', 'thp_mode': 'never', 'host_severity': 'warn', 'aicore_sample_seconds': '0',
            'map_path': '/etc/npuops/numa-bind.json', 'launcher_path': '/usr/local/bin/npu-bind',
            'launcher_python': '/usr/bin/python3', 'run_user_existing': 'refuse'}
AFFINITY = {0: (6, 144), 1: (6, 144), 2: (4, 96), 3: (4, 96), 4: (0, 0), 5: (0, 0), 6: (2, 48), 7: (2, 48)}
NUMA = {'npu': dict((str(npu), {'numa_node': node, 'cpus': list(range(first, first + 24)),
                                'cpu_affinity': '%d-%d' % (first, first + 23)})
                    for npu, (node, first) in AFFINITY.items())}
MAP = numa_bind_map(NUMA, 8)
GOVERNOR = {'changed': True, 'before': {'0': 'ondemand'}, 'after': {'0': 'performance', '1': 'performance'}}
HOST = {'swappiness': 10, 'transparent_hugepage': 'never'}


def context(**changes):
    ctx = {'npus_per_node': 8, 'numa': NUMA, 'governor_enabled': True, 'governor': 'performance',
           'governor_result': GOVERNOR, 'host_info': HOST, 'host_severity': 'warn', 'max_swappiness': 10,
           'thp_mode': 'never', 'launcher_check': {'rc': 0, 'stdout': 'npuops\n', 'stderr': ''}, 'run_user': 'npuops',
           'launcher_path': '/usr/local/bin/npu-bind'}
    ctx.update(changes)
    return ctx


def test_good_settings_have_no_problem():
    assert numa_bind_problems(SETTINGS) == []
    assert numa_bind_problems(dict(SETTINGS, method='taskset', thp_mode='any', host_severity='ignore')) == []


@pytest.mark.parametrize('change, problem', [
    ({'governor': 'turbo'}, "numa_bind_governor 'turbo' is not a cpufreq governor: use one of performance, powersave, "
                            "ondemand, schedutil, conservative, userspace"),
    ({'method': 'bogus'}, "numa_bind_method 'bogus' is not a binding method: use numactl (CPUs and memory of the NPU's "
                          "NUMA node, numactl -N/-m) or taskset (the NPU's affinity CPUs only)"),
    ({'run_user': 'root'}, "numa_bind_run_user 'root': the workload must run as a non-root user; choose another user "
                           "(default npuops)"),
    ({'run_user': 'Bad User'}, "numa_bind_run_user 'Bad User' is not a valid user name (lower case letters, digits, _, - "
                               "and ., starting with a letter or _, at most 32 characters)"),
    ({'npus_per_node': 0}, 'npuops_npus_per_node 0 is not a number of NPUs from 1 to 64'),
    ({'max_swappiness': '500'}, "numa_bind_max_swappiness '500' is outside 0-200 (the kernel's range of vm.swappiness)"),
    ({'max_swappiness': True}, "numa_bind_max_swappiness True is outside 0-200 (the kernel's range of vm.swappiness)"),
    ({'thp_mode': 'sometimes'}, "numa_bind_thp_mode 'sometimes' is not a transparent hugepage mode: use always, madvise, "
                                "never, or any to skip the check"),
    ({'host_severity': 'off'}, "numa_bind_host_severity 'off' must be one of warn, fail, ignore"),
    ({'aicore_sample_seconds': -1}, 'numa_bind_aicore_sample_seconds -1 is outside 0-3600 (0 turns the sampling off)'),
    ({'launcher_path': 'npu-bind'}, "numa_bind_launcher_path 'npu-bind' is not an absolute file path"),
    ({'map_path': '/etc/npuops/'}, "numa_bind_map_path '/etc/npuops/' is not an absolute file path"),
    ({'run_user_existing': 'take'}, "numa_bind_run_user_existing 'take' must be refuse (stop when the run user exists "
                                    "and stage 6 did not create it) or use (run the ranks as that account, left as it "
                                    "is)"),
])
def test_each_bad_setting_is_named_in_full(change, problem):
    assert numa_bind_problems(dict(SETTINGS, **change)) == [problem]


def test_problems_needs_a_dict():
    with pytest.raises(AnsibleFilterError, match='expects a dict of settings, got list'):
        numa_bind_problems([])


def test_map_binds_every_npu_to_its_numa_node():
    assert MAP[0] == {'npu': 0, 'numa_node': 6, 'cpus': '144-167'}
    assert [(e['npu'], e['numa_node'], e['cpus']) for e in MAP][2:] == [
        (2, 4, '96-119'), (3, 4, '96-119'), (4, 0, '0-23'), (5, 0, '0-23'), (6, 2, '48-71'), (7, 2, '48-71')]
    assert numa_bind_map({'npu': {'0': {'numa_node': 1, 'cpus': [5, 3, 4, 9]}}}, 1) == [
        {'npu': 0, 'numa_node': 1, 'cpus': '3-5,9'}]


def test_map_leaves_out_npus_without_a_node_and_takes_only_the_first_n():
    numa = {'npu': dict(NUMA['npu'], **{'3': {'numa_node': None, 'cpus': [], 'cpu_affinity': None}})}
    assert [e['npu'] for e in numa_bind_map(numa, 8)] == [0, 1, 2, 4, 5, 6, 7]
    assert [e['npu'] for e in numa_bind_map(NUMA, 2)] == [0, 1]


@pytest.mark.parametrize('numa, count, text', [
    ('x', 8, 'expects the result of npuops.ascend.numa_info, got str'),
    (NUMA, 0, 'npus_per_node 0 is not a number of NPUs above 0'),
])
def test_map_errors(numa, count, text):
    with pytest.raises(AnsibleFilterError, match=text):
        numa_bind_map(numa, count)


def test_a_tuned_node_has_no_finding():
    assert numa_bind_findings(MAP, 'node01', context()) == []


def test_a_missing_npu_and_a_wrong_governor_fail_naming_node_and_npu():
    numa = {'npu': dict(NUMA['npu'], **{'3': {'numa_node': None, 'cpus': [], 'cpu_affinity': '900-901'}})}
    found = numa_bind_findings([e for e in MAP if e['npu'] != 3], 'node02', context(
        numa=numa, governor_result={'after': {'0': 'performance', '1': 'ondemand'}}))
    assert [(f['device'], f['check'], f['severity'], f['msg']) for f in found] == [
        (3, 'numa_map', 'fail', "node02 NPU 3: not in the binding map (npu-smi info -t topo shows CPU affinity "
                                "'900-901', which is on no NUMA node of numactl -H); ranks on this NPU would run "
                                "unbound. Check npu-smi and the driver"),
        (None, 'governor', 'fail', 'node02: CPU governor is ondemand, performance, not performance')]


def test_governor_not_checked_when_disabled_or_skipped():
    assert numa_bind_findings(MAP, 'n', context(governor_enabled=False, governor_result={'after': {'0': 'ondemand'}})) == []
    assert numa_bind_findings(MAP, 'n', context(governor_result={'skipped': True})) == []


def test_failed_reads_and_tasks():
    found = numa_bind_findings([], 'n', context(numa={'failed': True, 'msg': 'numactl: not found'},
                                                governor_result={'failed': True, 'msg': 'cpupower: rc=1'}))
    assert [f['msg'] for f in found] == [
        'n: the NUMA layout could not be read, so no NPU is bound and stage 6 changed nothing on the node: numactl: not found',
        'n: the CPU governor could not be set to performance: cpupower: rc=1']


def test_failed_reads_and_tasks_as_registered_with_failed_when_false():
    # failed_when: false resets 'failed' to False in the registered result; the missing return keys tell the failure
    numa = {'changed': False, 'failed': False, 'failed_when_result': False, 'cmd': 'numactl',
            'msg': 'node03: numactl not found: looked in /usr/local/sbin and PATH.'}
    governor = {'changed': False, 'failed': False, 'failed_when_result': False, 'msg': 'node03: cpupower not found'}
    found = numa_bind_findings([], 'node03', context(numa=numa, governor_result=governor))
    assert [(f['check'], f['severity']) for f in found] == [('numa_map', 'fail'), ('governor', 'fail')]
    assert 'numactl not found' in found[0]['msg'] and 'cpupower not found' in found[1]['msg']
    # a governor task that did not run (disabled by tags: the default {}) is not a failure
    assert numa_bind_findings(MAP, 'n', context(governor_result={})) == []


def test_swappiness_and_thp_are_warnings_by_default_or_fail_or_ignored():
    host = {'swappiness': 60, 'transparent_hugepage': 'always'}
    found = numa_bind_findings(MAP, 'node01', context(host_info=host))
    assert [(f['check'], f['severity'], f['msg']) for f in found] == [
        ('swappiness', 'warn', 'node01: vm.swappiness is 60, above 10: the kernel may swap out host memory of the '
                               'training processes; set it with sysctl (vm.swappiness=10)'),
        ('transparent_hugepage', 'warn', 'node01: transparent hugepages are always, not never '
                                         '(/sys/kernel/mm/transparent_hugepage/enabled)')]
    assert {f['severity'] for f in numa_bind_findings(MAP, 'n', context(host_info=host, host_severity='fail'))} == {'fail'}
    assert numa_bind_findings(MAP, 'n', context(host_info=host, host_severity='ignore')) == []
    assert numa_bind_findings(MAP, 'n', context(host_info=dict(host, swappiness=10), thp_mode='any')) == []


def test_launcher_check_must_print_the_run_user():
    found = numa_bind_findings(MAP, 'n', context(launcher_check={'rc': 1, 'stdout': '', 'stderr': 'npu-bind: boom\n'}))
    assert [f['msg'] for f in found] == ['n: /usr/local/bin/npu-bind did not run a test command as npuops (rc=1): '
                                         'npu-bind: boom']
    assert numa_bind_findings(MAP, 'n', context(launcher_check={'skipped': True})) == []


def _sample(values):
    return {'devices': dict((str(npu), {'usages': {'chips': [{'chip': 0, 'aicore_usage_pct': value}]}})
                            for npu, value in enumerate(values))}


def test_aicore_stats_mean_and_variance_per_npu():
    stats = aicore_stats({'results': [_sample([10, 0]), _sample([20, 0]), {'failed': True}, _sample([30, 3])]})
    assert stats == {0: {'mean': 20.0, 'variance': 66.67, 'samples': 3}, 1: {'mean': 1.0, 'variance': 2.0, 'samples': 3}}
    assert aicore_stats([]) == {}


# ---- the run user on the node: create it, keep the one stage 6 created, refuse anyone else's ----

# getent passwd / getent group entries as ansible.builtin.getent returns them (the fields after the name)
OURS = ['x', '998', '998', RUN_USER_COMMENT, '/home/npuops', '/sbin/nologin']
ALICE = ['x', '1001', '1001', 'Victim Person,Room 1', '/home/alice', '/bin/bash']
GROUPS = {'root': ['x', '0', ''], 'sudo': ['x', '27', 'bob'], 'docker': ['x', '999', ''], 'alice': ['x', '1001', ''],
          'npuops': ['x', '998', ''], 'HwHiAiUser': ['x', '1000', 'alice,npuops']}


def user_context(**changes):
    ctx = {'run_user': 'npuops', 'existing': 'refuse', 'create': True, 'groups': GROUPS}
    ctx.update(changes)
    return ctx


def test_the_run_user_comment_marks_the_accounts_stage6_created():
    assert RUN_USER_COMMENT == 'Ascend workload (npuops.ascend npu-bind)'


@pytest.mark.parametrize('passwd, changes, manage, state', [
    ({'npuops': None}, {}, True, 'absent'),                    # missing: created
    ({}, {}, True, 'absent'),
    ({'npuops': OURS}, {}, True, 'created by stage 6'),        # created by an earlier run: kept as the role wants it
    ({'npuops': OURS}, {'create': False}, False, 'created by stage 6'),
    ({'alice': ALICE}, {'run_user': 'alice', 'existing': 'use'}, False, 'existing, used as it is'),
])
def test_run_user_plan(passwd, changes, manage, state):
    plan = numa_bind_run_user(passwd, 'node01', user_context(**changes))
    assert (plan['manage'], plan['state'], plan['problems']) == (manage, state, [])
    assert plan['comment'] == RUN_USER_COMMENT


def test_an_existing_account_stage6_did_not_create_is_refused_by_default():
    plan = numa_bind_run_user({'alice': ALICE}, 'node01', user_context(run_user='alice'))
    assert plan['manage'] is False and plan['state'] == 'existing, not created by stage 6'
    assert plan['problems'] == [
        "node01: the run user alice already exists (uid 1001, shell /bin/bash, comment 'Victim Person,Room 1') and stage "
        "6 did not create it (its comment is not 'Ascend workload (npuops.ascend npu-bind)'): making it the run user "
        "would set its shell to /sbin/nologin and its comment. Choose an unused name for numa_bind_run_user (default "
        "npuops), or set numa_bind_run_user_existing: use to run the ranks as alice exactly as it is"]


def test_a_missing_run_user_that_may_not_be_created_is_refused():
    plan = numa_bind_run_user({'npuops': None}, 'node02', user_context(create=False))
    assert plan['manage'] is False
    assert plan['problems'] == ['node02: the run user npuops does not exist and numa_bind_run_user_create is false: '
                                'create the account, or set numa_bind_run_user_create: true']


@pytest.mark.parametrize('entry, groups, why', [
    (['x', '0', '0', 'Toor', '/root', '/bin/sh'], GROUPS, 'it has uid 0 (root), so the code of every rank would run as '
                                                          'root. Choose another account for numa_bind_run_user'),
    (['x', '1001', '0', 'Alice', '/home/alice', '/bin/bash'], GROUPS,
     "it is in the group root, which gives root or root's data, so the code of every rank could act as root. Choose "
     "another account for numa_bind_run_user, or take alice out of that group"),
    (ALICE, dict(GROUPS, sudo=['x', '27', 'bob,alice']),
     "it is in the group sudo, which gives root or root's data, so the code of every rank could act as root. Choose "
     "another account for numa_bind_run_user, or take alice out of that group"),
    (ALICE, dict(GROUPS, docker=['x', '999', 'alice'], wheel=['x', '10', 'alice']),
     "it is in the groups docker, wheel, which give root or root's data, so the code of every rank could act as root. "
     "Choose another account for numa_bind_run_user, or take alice out of those groups"),
], ids=['uid-0', 'primary-group-root', 'sudo', 'docker-and-wheel'])
def test_a_run_user_with_root_powers_is_refused_even_when_told_to_use_it(entry, groups, why):
    plan = numa_bind_run_user({'alice': entry}, 'node01', user_context(run_user='alice', existing='use', groups=groups))
    assert plan['manage'] is False
    assert plan['problems'] == ['node01: the run user alice may not run the ranks: %s' % why]


def test_an_account_stage6_created_that_later_joined_docker_is_refused():
    plan = numa_bind_run_user({'npuops': OURS}, 'node01', user_context(groups=dict(GROUPS, docker=['x', '999', 'npuops'])))
    assert [p.split(':')[1].strip() for p in plan['problems']] == [
        "the run user npuops may not run the ranks"]


def test_an_unreadable_group_list_is_a_warning():
    plan = numa_bind_run_user({'npuops': OURS}, 'node01', user_context(groups=None))
    assert plan['problems'] == [] and plan['warnings'] == [
        'node01: the groups of the run user npuops could not be listed (getent group), so its membership of root, wheel, '
        'sudo, admin, docker, lxd, libvirt, disk, kmem, shadow was not checked']


# ---- a failed launcher test puts the previous map and launcher back ----

MAP_WRITTEN = {'changed': True, 'dest': '/etc/npuops/numa-bind.json', 'backup_file': '/etc/npuops/numa-bind.json.7.2026~'}
LAUNCHER_WRITTEN = {'changed': True, 'dest': '/usr/local/bin/npu-bind', 'backup_file': '/usr/local/bin/npu-bind.7.2026~'}
FAILED_CHECK = {'rc': 1, 'stdout': '', 'stderr': 'taskset: failed to set pid 0\'s affinity: Invalid argument'}


def test_nothing_is_put_back_when_the_launcher_test_passed_or_did_not_run():
    for check in ({'rc': 0, 'stdout': 'npuops\n'}, {'skipped': True}, {}):
        assert numa_bind_restore({'map': MAP_WRITTEN, 'launcher': LAUNCHER_WRITTEN}, check, 'npuops') == []


def test_a_failed_launcher_test_puts_back_what_this_run_replaced():
    assert numa_bind_restore({'map': MAP_WRITTEN, 'launcher': {'changed': False, 'dest': '/usr/local/bin/npu-bind'}},
                             FAILED_CHECK, 'npuops') == [
        {'path': '/etc/npuops/numa-bind.json', 'backup': '/etc/npuops/numa-bind.json.7.2026~', 'action': 'restore',
         'mode': '0644'}]
    # the test printed another user than the run user: a failure too
    undo = numa_bind_restore({'map': MAP_WRITTEN, 'launcher': LAUNCHER_WRITTEN}, {'rc': 0, 'stdout': 'root\n'}, 'npuops')
    assert [(r['path'], r['mode']) for r in undo] == [('/etc/npuops/numa-bind.json', '0644'),
                                                      ('/usr/local/bin/npu-bind', '0755')]


def test_a_file_this_run_created_is_removed_when_the_launcher_test_fails():
    new = {'changed': True, 'dest': '/usr/local/bin/npu-bind'}
    assert numa_bind_restore({'launcher': new}, FAILED_CHECK, 'npuops') == [
        {'path': '/usr/local/bin/npu-bind', 'backup': None, 'action': 'remove', 'mode': '0755'}]


def test_the_launcher_finding_says_what_was_put_back():
    restored = numa_bind_restore({'map': MAP_WRITTEN, 'launcher': {'changed': True, 'dest': '/usr/local/bin/npu-bind'}},
                                 FAILED_CHECK, 'npuops')
    found = numa_bind_findings(MAP, 'node01', context(launcher_check=FAILED_CHECK, restored=restored))
    assert [f['msg'] for f in found] == [
        "node01: /usr/local/bin/npu-bind did not run a test command as npuops (rc=1): taskset: failed to set pid 0's "
        "affinity: Invalid argument. The files of this run were undone: /etc/npuops/numa-bind.json put back from "
        "/etc/npuops/numa-bind.json.7.2026~; /usr/local/bin/npu-bind removed (it did not exist before)"]


def test_run_user_warnings_become_findings():
    plan = numa_bind_run_user({'npuops': OURS}, 'node01', user_context(groups=None))
    found = numa_bind_findings(MAP, 'node01', context(run_user_plan=plan))
    assert [(f['check'], f['severity']) for f in found] == [('run_user', 'warn')]


# ---- the decisions of the stage action npuops.ascend.stage_numa ----------------------------------------------------

def test_the_settings_failure_names_the_node_and_counts_the_problems():
    assert settings_failure('node01', []) is None
    assert settings_failure('node01', ['a', 'b']) == ('node01: the stage 6 settings are not usable (2 problem(s)), so '
                                                      'nothing was changed on any node: a | b')


def test_the_run_user_failure_joins_the_problems():
    assert run_user_failure({'problems': []}) is None and run_user_failure(None) is None
    assert run_user_failure({'problems': ['n1: x', 'n1: y']}) == 'n1: x | n1: y. Nothing was changed on any node.'


def test_getent_tables():
    assert getent_table({'ansible_facts': {'getent_group': {'root': ['x', '0', '']}}}, 'group') == {'root': ['x', '0', '']}
    assert getent_table({'failed': True, 'ansible_facts': {'getent_group': {}}}, 'group') is None
    assert getent_table({}, 'passwd') is None and getent_table(None, 'passwd') is None


def test_the_map_document_in_its_order():
    document = map_document(dict(SETTINGS, visible_devices=True), MAP)
    assert list(document) == ['managed_by', 'method', 'run_user', 'visible_devices', 'npus_per_node', 'npus']
    assert document['npus_per_node'] == 8 and document['visible_devices'] is True and document['npus'] == MAP
    assert document['managed_by'] == 'npuops.ascend (role numa_bind, stage 6)'


def test_the_directories_of_the_map_and_the_launcher():
    assert map_dirs('/etc/npuops/numa-bind.json', '/usr/local/bin/npu-bind') == ['/etc/npuops', '/usr/local/bin']
    assert map_dirs('/var/lib/npuops/a.json', '/var/lib/npuops/npu-bind') == ['/var/lib/npuops']
    assert map_dirs('/a.json', '/b') == ['/']


def test_when_the_launcher_test_runs():
    assert launcher_test_due(True, False, [{'changed': True}]) is True
    assert launcher_test_due(False, False, []) is False
    assert launcher_test_due(True, True, [{'changed': False}, {}, {'changed': True}]) is False
    assert launcher_test_due(True, True, [{'changed': False}, {}]) is True


def test_the_launcher_test_text():
    assert launcher_test_text({'rc': 0, 'stdout': 'npuops\n'}) == 'runs as npuops'
    assert launcher_test_text({'rc': 1, 'stdout': ''}) == 'failed'
    assert launcher_test_text({'changed': False, 'skipped': True}) == 'skipped'
    assert launcher_test_text({}) == 'skipped' and launcher_test_text(None) == 'skipped'


def test_changed_parts_keep_their_order():
    assert changed_parts([('user', {'changed': False}), ('map', {'changed': True}), ('launcher', {}),
                          ('governor', {'changed': True})]) == ['map', 'governor']


def test_the_record_data_and_the_report_of_a_node():
    parts = {'governor': GOVERNOR, 'host_info': HOST, 'launcher_check': {'rc': 0, 'stdout': 'npuops\n'},
             'user': {'changed': False, 'skipped': True}, 'map': {'changed': True, 'backup_file': '/m~'},
             'launcher': {'changed': False}, 'restored': [], 'aicore': {}, 'run_user_plan': {'state': 'absent'}}
    assert node_data(MAP, parts) == {
        'npus': MAP, 'governor_before': ['ondemand'], 'governor_after': ['performance'], 'swappiness': 10,
        'transparent_hugepage': 'never', 'launcher_test': 'runs as npuops', 'changed': ['map', 'governor'],
        'undone': [], 'backups': ['/m~'], 'aicore': {}, 'files': []}   # no sums and paths: no file handled
    skipped = dict(parts, host_info={'skipped': True}, governor={})
    assert node_data(MAP, skipped)['swappiness'] == '-' and node_data(MAP, skipped)['governor_after'] == []
    settings = dict(SETTINGS, governor_enabled=False)
    report = node_report('node01', 'R1', False, settings, MAP, skipped, [])
    assert report['governor'] == {'wanted': None, 'before': [], 'after': [], 'changed_cpus': ''}
    assert report['swappiness'] is None and report['aicore'] is None and report['run_user_account'] == 'absent'
    assert report['changed'] == {'user': False, 'map': True, 'launcher': False, 'governor': False}
    assert report['backups'] == {'map': '/m~', 'launcher': None} and report['launcher_check'] == 'npuops\n'


MAP_PATH, LAUNCHER_PATH = '/etc/npuops/numa-bind.json', '/usr/local/bin/npu-bind'
LAUNCH_PATH, SCRIPT_PATH = '/etc/npuops/launch.json', '/usr/local/bin/npu-launch'
PATHS = {'map': MAP_PATH, 'launcher': LAUNCHER_PATH, 'launch': LAUNCH_PATH, 'launch_script': SCRIPT_PATH}


def _sha1(text):
    return hashlib.sha1(text.encode('utf-8')).hexdigest()


def test_the_record_names_the_files_the_run_left_with_their_sha1():
    map_text, launcher_text = '{\n    "npus": []\n}\n', '#!/usr/bin/python3\nprint("npu-bind")\n'
    sums = {'map': _sha1(map_text), 'launcher': _sha1(launcher_text), 'launch': None, 'launch_script': None}
    parts = {'map': {'changed': True, 'dest': MAP_PATH, 'backup_file': MAP_PATH + '.1~'},
             'launcher': {'changed': False, 'dest': LAUNCHER_PATH, 'in_place': True}, 'launch': {},
             'launch_script': {}, 'restored': [], 'sums': sums, 'paths': PATHS}
    expected = [
        {'kind': 'map', 'path': MAP_PATH, 'checksum': _sha1(map_text), 'owner': 'root', 'group': 'root', 'mode': '0644'},
        {'kind': 'launcher', 'path': LAUNCHER_PATH, 'checksum': _sha1(launcher_text), 'owner': 'root', 'group': 'root',
         'mode': '0755'}]
    assert node_data(MAP, parts)['files'] == expected
    assert record_files(parts, sums, PATHS) == expected
    # a launch file and npu-launch: the template's own checksum when the controller could not render it, else null
    script_text = '#!/usr/bin/python3\nprint("npu-launch")\n'
    launch_text = '{"ranks": []}\n'
    with_launch = dict(parts, launch={'changed': True, 'dest': LAUNCH_PATH},
                       launch_script={'changed': True, 'dest': SCRIPT_PATH, 'checksum': _sha1(script_text)})
    files = record_files(with_launch, dict(sums, launch=_sha1(launch_text)), PATHS)
    assert [(item['kind'], item['path'], item['checksum'], item['mode']) for item in files[2:]] == [
        ('launch', LAUNCH_PATH, _sha1(launch_text), '0644'), ('launch_script', SCRIPT_PATH, _sha1(script_text), '0755')]
    unknown = record_files(dict(parts, launcher={'changed': True}), dict(sums, launcher=None), PATHS)
    assert unknown[1]['kind'] == 'launcher' and unknown[1]['checksum'] is None
    # what the run undid after a failed launcher test, a failed or skipped part, and a part that did not run are left out
    undone = dict(parts, restored=[{'path': MAP_PATH, 'backup': MAP_PATH + '.1~', 'action': 'restore', 'mode': '0644'}])
    assert [item['kind'] for item in node_data(MAP, undone)['files']] == ['launcher']
    assert record_files(dict(parts, launcher={'failed': True, 'msg': 'x'}), sums, PATHS) == expected[:1]
    assert record_files(dict(parts, map={'changed': False, 'skipped': True}), sums, PATHS) == expected[1:]
    assert record_files(dict(parts, map={}, launcher={}), sums, PATHS) == []
    assert record_files(None, None, None) == []


def test_the_parts_a_skip_tag_leaves_out():
    assert skipped_parts([]) == [] and skipped_parts(None) == [] and skipped_parts(['stage5']) == []
    assert skipped_parts(['numa_bind_launcher']) == ['launcher', 'run_user', 'user']
    assert skipped_parts(['numa_bind_gate', 'numa_bind_aicore']) == ['aicore', 'layout_record', 'record', 'report']


def test_the_run_user_is_in_place_only_when_stage_6_created_it_with_that_shell_and_a_home():
    from ansible_collections.npuops.ascend.plugins.plugin_utils.numa import run_user_home, run_user_in_place
    ours = ['x', '990', '990', RUN_USER_COMMENT, '/home/npuops', '/sbin/nologin']
    plan = numa_bind_run_user({'npuops': ours}, 'node01', user_context())
    assert plan['account'] == {'uid': '990', 'home': '/home/npuops', 'shell': '/sbin/nologin'}
    assert run_user_home(plan) == '/home/npuops'
    home = {'exists': True, 'isdir': True}
    assert run_user_in_place(plan, '/sbin/nologin', home) is True
    assert run_user_in_place(plan, '/bin/bash', home) is False  # the user module would set the shell
    assert run_user_in_place(plan, '/sbin/nologin', {'exists': False}) is False  # ... or create the home
    assert run_user_in_place(plan, '/sbin/nologin', {'exists': True, 'isdir': False}) is False
    assert run_user_in_place(plan, '/sbin/nologin', None) is False
    absent = numa_bind_run_user({'npuops': None}, 'node01', user_context())
    assert run_user_home(absent) is None and run_user_in_place(absent, '/sbin/nologin', home) is False
    theirs = numa_bind_run_user({'alice': ['x', '1001', '1001', 'Alice', '/home/alice', '/sbin/nologin']}, 'node01',
                                user_context(run_user='alice', existing='use'))
    assert theirs['manage'] is False and run_user_home(theirs) is None
    relative = dict(plan, account=dict(plan['account'], home='home/npuops'))
    assert run_user_home(relative) is None
