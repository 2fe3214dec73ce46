# -*- coding: utf-8 -*-
"""cpu_governor with a scripted run_command (cpupower) and a temporary sysfs tree."""

from __future__ import annotations

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils._parsers import cpupower as cpupower_parsers
from ansible_collections.npuops.ascend.plugins.module_utils._tools import cpufreq as _cpufreq
from ansible_collections.npuops.ascend.plugins.modules import cpu_governor
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import CPUPOWER, HOST

# `cpupower -c ... frequency-info -p` in the layout printed by cpupower's get_policy() (kernel
# tools/power/cpupower); no capture from an Atlas host exists.
POLICY = ('analyzing CPU %d:\n'
          '  current policy: frequency should be within 2.60 GHz and 2.60 GHz.\n'
          '                  The governor "%s" may decide which speed to use\n'
          '                  within this range.\n')
SET_ERROR = ('Error setting new values. Common errors:\n'
             '- Do you have proper administration rights? (super-user?)\n'
             '- Is the governor you requested available and modprobed?\n')


def policy(**govs):
    return ''.join(POLICY % (int(cpu[3:]), gov) for cpu, gov in sorted(govs.items(), key=lambda kv: int(kv[0][3:])))


INFO_ALL = (CPUPOWER, '-c', 'all', 'frequency-info', '-p')
SET_ALL = (CPUPOWER, '-c', 'all', 'frequency-set', '-g', 'performance')


def test_parse_policy():
    parsed = cpupower_parsers.PARSERS['policy'](policy(cpu0='ondemand', cpu1='performance') + 'analyzing CPU 2:\n *is offline\n')
    assert parsed == {'cpus': {0: 'ondemand', 1: 'performance', 2: None}, 'unparsed': []}


def test_cpu_lists():
    assert _cpufreq.expand_cpus(['0-3', '8', '10,11']) == [0, 1, 2, 3, 8, 10, 11]
    assert _cpufreq.compact([0, 1, 2, 3, 8, 10, 11]) == '0-3,8,10-11'
    with pytest.raises(ValueError):
        _cpufreq.expand_cpus(['3-1'])


def test_plan_is_pure_and_decides_everything():
    decided = _cpufreq.plan({0: 'ondemand', 1: 'performance', 2: None, 4: 'ondemand'}, 'performance', [0, 1, 2, 3, 4, 9])
    assert decided == {'before': {0: 'ondemand', 1: 'performance', 4: 'ondemand'}, 'todo': [0, 4],
                       'expected': {0: 'performance', 1: 'performance', 4: 'performance'}, 'everything': False,
                       'without': [2], 'holes': [3], 'beyond': [9]}
    assert _cpufreq.plan({0: 'ondemand', 1: 'ondemand'}, 'performance', None)['everything'] is True


def test_cpupower_change(run_module):
    cmds = {
        INFO_ALL: [(0, policy(cpu0='ondemand', cpu1='ondemand'), ''), (0, policy(cpu0='performance', cpu1='performance'), '')],
        SET_ALL: (0, 'Setting cpu: 0\nSetting cpu: 1\n', ''),
    }
    res = run_module(cpu_governor, {'governor': 'performance'}, cmds)
    assert not res.failed, res
    assert res.calls == [list(INFO_ALL), list(SET_ALL), list(INFO_ALL)]
    assert res.result['changed'] is True and res.result['method'] == 'cpupower'
    assert res.result['before'] == {'0': 'ondemand', '1': 'ondemand'}
    assert res.result['after'] == {'0': 'performance', '1': 'performance'}
    assert res.result['changed_cpus'] == '0-1'


def test_cpupower_no_change(run_module):
    res = run_module(cpu_governor, {'governor': 'performance'}, {INFO_ALL: (0, policy(cpu0='performance', cpu1='performance'), '')})
    assert not res.failed and res.result['changed'] is False
    assert res.calls == [list(INFO_ALL)]


def test_check_mode_diff(run_module):
    res = run_module(cpu_governor, {'governor': 'performance'},
                     {INFO_ALL: (0, policy(cpu0='ondemand', cpu1='performance', cpu2='ondemand'), '')}, check_mode=True)
    assert not res.failed and res.result['changed'] is True
    assert res.calls == [list(INFO_ALL)]
    assert res.result['commands'] == ['%s -c 0,2 frequency-set -g performance' % CPUPOWER]
    assert res.result['diff'] == {'before_header': 'CPU governors on %s' % HOST, 'after_header': 'CPU governors on %s' % HOST,
                                  'before': 'ondemand: 0,2\nperformance: 1\n', 'after': 'performance: 0-2\n'}


def test_selected_cpus(run_module):
    info = (CPUPOWER, '-c', '0-1,4', 'frequency-info', '-p')
    setc = (CPUPOWER, '-c', '4', 'frequency-set', '-g', 'performance')
    cmds = {
        info: [(0, policy(cpu0='performance', cpu1='performance', cpu4='schedutil'), ''),
               (0, policy(cpu0='performance', cpu1='performance', cpu4='performance'), '')],
        setc: (0, 'Setting cpu: 4\n', ''),
    }
    res = run_module(cpu_governor, {'governor': 'performance', 'cpus': ['0-1', '4']}, cmds)
    assert not res.failed, res
    assert res.calls == [list(info), list(setc), list(info)]


def test_rc0_but_not_applied(run_module):
    cmds = {INFO_ALL: (0, policy(cpu0='ondemand', cpu1='ondemand'), ''), SET_ALL: (0, 'Setting cpu: 0\nSetting cpu: 1\n', '')}
    res = run_module(cpu_governor, {'governor': 'performance'}, cmds)
    assert res.failed
    assert res.result['msg'].startswith('CPUs 0-1 on %s: governor still ondemand after `%s -c all frequency-set -g performance` (rc=0)'
                                        % (HOST, CPUPOWER))


def test_set_failure(run_module):
    cmds = {INFO_ALL: (0, policy(cpu0='ondemand'), ''), SET_ALL: (237, '', SET_ERROR)}
    res = run_module(cpu_governor, {'governor': 'performance'}, cmds)
    assert res.failed
    assert res.result['rc'] == 237 and res.result['stderr'] == SET_ERROR
    assert 'Run as root' in res.result['msg']


@pytest.fixture
def sysfs(tmp_path, monkeypatch):
    for cpu, gov in ((0, 'ondemand'), (1, 'performance'), (2, 'ondemand')):
        base = tmp_path / ('cpu%d' % cpu) / 'cpufreq'
        base.mkdir(parents=True)
        (base / 'scaling_governor').write_text(gov + '\n')
        (base / 'scaling_available_governors').write_text('conservative ondemand userspace powersave performance schedutil\n')
    (tmp_path / 'cpu3').mkdir()          # no cpufreq directory
    monkeypatch.setattr(_cpufreq, 'SYSFS_CPU', str(tmp_path))
    return tmp_path


def test_sysfs_change(run_module, sysfs):
    res = run_module(cpu_governor, {'governor': 'performance', 'method': 'sysfs'}, {})
    assert not res.failed, res
    assert res.calls == []
    assert res.result['changed_cpus'] == '0,2'
    for cpu in range(3):
        assert (sysfs / ('cpu%d' % cpu) / 'cpufreq' / 'scaling_governor').read_text().strip() == 'performance'
    again = run_module(cpu_governor, {'governor': 'performance', 'method': 'sysfs'}, {})
    assert again.result['changed'] is False


def test_sysfs_check_mode_writes_nothing(run_module, sysfs):
    res = run_module(cpu_governor, {'governor': 'performance', 'method': 'sysfs'}, {}, check_mode=True)
    assert res.result['changed'] is True
    assert (sysfs / 'cpu0' / 'cpufreq' / 'scaling_governor').read_text().strip() == 'ondemand'


def test_sysfs_unavailable_governor_refused(run_module, sysfs):
    (sysfs / 'cpu0' / 'cpufreq' / 'scaling_available_governors').write_text('ondemand performance\n')
    res = run_module(cpu_governor, {'governor': 'schedutil', 'method': 'sysfs'}, {})
    assert res.failed
    assert 'CPU 0 on %s: the kernel does not offer the schedutil governor' % HOST in res.result['msg']
    assert (sysfs / 'cpu2' / 'cpufreq' / 'scaling_governor').read_text().strip() == 'ondemand'


def test_auto_falls_back_to_sysfs(run_module, sysfs):
    res = run_module(cpu_governor, {'governor': 'ondemand'}, {}, bin_paths={'cpupower': None})
    assert not res.failed and res.result['method'] == 'sysfs'
    assert res.result['changed_cpus'] == '1'


def test_cpupower_requested_cpus_below_the_highest_it_does_not_report_are_warned(run_module):
    info = (CPUPOWER, '-c', '0-3', 'frequency-info', '-p')
    cmds = {info: (0, policy(cpu0='performance', cpu1='performance', cpu3='performance'), '')}
    res = run_module(cpu_governor, {'governor': 'performance', 'cpus': ['0-3']}, cmds)
    assert not res.failed, res
    assert res.calls == [list(info)]
    assert res.result['changed'] is False and res.result['before'] == {'0': 'performance', '1': 'performance', '3': 'performance'}
    assert res.warnings == ['%s: CPUs 2 are not reported by `%s -c 0-3 frequency-info -p` and are left alone; check that '
                            'they exist and are online (lscpu).' % (HOST, CPUPOWER)]


# ---- defects found by probing with bad input; each test failed before its fix ----

def test_cpus_above_the_highest_cpu_of_the_host_are_refused(run_module):
    info = (CPUPOWER, '-c', '0-3', 'frequency-info', '-p')
    res = run_module(cpu_governor, {'governor': 'performance', 'cpus': ['0-3']},
                     {info: (0, policy(cpu0='ondemand', cpu1='ondemand'), '')})
    assert res.failed
    assert res.calls == [list(info)]
    assert res.result['msg'] == ('%s: cpus: CPUs 2-3 do not exist on this host (the highest CPU reported by `%s -c 0-3 '
                                 'frequency-info -p` is 1). Nothing was changed.' % (HOST, CPUPOWER))


@pytest.mark.parametrize('cpus', [['0-99999999999'], ['65536'], ['0-65536']])
def test_a_huge_cpu_range_is_refused_without_building_it(run_module, cpus):
    res = run_module(cpu_governor, {'governor': 'performance', 'cpus': cpus}, {}, check_mode=True)
    assert res.failed and res.calls == []
    assert res.result['msg'].startswith('%s: cpus: ' % HOST)
    assert '65535' in res.result['msg']


def test_an_explicit_cpupower_path_is_never_replaced_by_sysfs(run_module, tmp_path):
    res = run_module(cpu_governor, {'governor': 'performance', 'cpupower_path': str(tmp_path / 'nonexistent' / 'cpupower')}, {},
                     check_mode=True)
    assert res.failed and res.calls == []
    assert 'cpupower not found at %s (set by the module option)' % (tmp_path / 'nonexistent' / 'cpupower') in res.result['msg']


def test_negative_timeout_is_refused(run_module):
    res = run_module(cpu_governor, {'governor': 'performance', 'timeout': -1}, {})
    assert res.failed and res.calls == []
    assert res.result['msg'] == 'cpu_governor: timeout must be 0 or more (0 disables the limit), got -1.'


def test_auto_without_cpupower_and_without_a_cpufreq_policy_names_the_missing_cpupower(run_module, tmp_path, monkeypatch):
    (tmp_path / 'cpu0').mkdir()          # a CPU without a cpufreq directory: no driver loaded
    (tmp_path / 'cpu1').mkdir()
    monkeypatch.setattr(_cpufreq, 'SYSFS_CPU', str(tmp_path))
    res = run_module(cpu_governor, {'governor': 'performance'}, {}, bin_paths={'cpupower': None})
    assert res.failed and res.calls == []
    assert res.result['msg'] == (
        '%s: no CPU with a cpufreq policy found (method sysfs, in %s). cpupower was not found (looked in '
        '/usr/local/Ascend/driver/tools, /usr/local/sbin, /usr/local/bin and PATH), so method auto read the sysfs files '
        'instead. Load a cpufreq driver (e.g. cppc_cpufreq) or check the cpus option; to use cpupower, install it (it '
        'comes with the kernel tools package: kernel-tools or linux-tools).' % (HOST, tmp_path))


def test_sysfs_chosen_by_the_user_without_a_cpufreq_policy_does_not_blame_cpupower(run_module, tmp_path, monkeypatch):
    (tmp_path / 'cpu0').mkdir()
    monkeypatch.setattr(_cpufreq, 'SYSFS_CPU', str(tmp_path))
    res = run_module(cpu_governor, {'governor': 'performance', 'method': 'sysfs'}, {})
    assert res.failed
    assert res.result['msg'] == ('%s: no CPU with a cpufreq policy found (method sysfs, in %s). Load a cpufreq driver '
                                 '(e.g. cppc_cpufreq) or check the cpus option.' % (HOST, tmp_path))
