"""Findings, bottleneck verdict and before/after comparison of a profile (plugin_utils/profile.py)."""

import pytest

from ansible_collections.npuops.ascend.plugins.plugin_utils import profile


def step(comm, free, util=90.0, rank=0, device=3, step_time=1000000.0):
    compute = 100.0 - comm - free
    return {'rank': rank, 'device_id': device, 'step': '10', 'step_time_us': step_time,
            'comm_not_overlapped_us': step_time * comm / 100.0, 'compute_share_pct': compute,
            'comm_share_pct': comm, 'free_share_pct': free, 'aicore_util_pct': util, 'aicore_from': 'kernel_details'}


def test_findings_name_node_device_value_and_source():
    found = profile.profile_findings({'steps': [step(22.0, 4.0, 70.0)]}, 'node01')
    checks = dict((item['check'], item) for item in found)
    assert set(checks) == {'profile_comm_share', 'profile_aicore_util'}
    comm = checks['profile_comm_share']
    assert comm['host'] == 'node01' and comm['device'] == 3 and comm['value'] == 22.0 and comm['severity'] == 'warn'
    assert 'node01 NPU 3' in comm['msg'] and '22.0 %' in comm['msg'] and "method's 10-15 %" in comm['msg']
    assert '220.0 of 1000.0 ms' in comm['msg']
    assert "at least 80 %" in checks['profile_aicore_util']['msg']


def test_findings_thresholds_are_options():
    steps = {'steps': [step(12.0, 12.0, 85.0)]}
    assert [item['check'] for item in profile.profile_findings(steps, 'n')] == ['profile_free_share']
    assert profile.profile_findings(steps, 'n', comm_max_pct=10, free_max_pct=20)[0]['check'] == 'profile_comm_share'
    assert profile.profile_findings(steps, 'n', free_max_pct=15) == []
    with pytest.raises(profile.ProfileError):
        profile.profile_findings(steps, 'n', comm_max_pct='many')


@pytest.mark.parametrize('comm,free,util,layer', [
    (30.0, 5.0, 60.0, 'communication'),
    (8.0, 25.0, 65.0, 'host/IO'),
    (20.0, 40.0, 40.0, 'host/IO'),  # the larger excess wins: free 30 over, communication 5 over
    (10.0, 5.0, 85.0, 'compute'),
    (10.0, 5.0, 60.0, 'compute'),
])
def test_bottleneck_layer(comm, free, util, layer):
    verdict = profile.bottleneck({'steps': [step(comm, free, util)]})
    assert verdict['layer'] == layer
    assert verdict['figures']['comm_share_pct'] == comm and '%s %%' % comm in verdict['msg']


def test_bottleneck_without_steps():
    assert profile.bottleneck({'steps': []})['layer'] is None


def test_compare_before_after():
    before = profile.profile_record({'steps': [step(30.0, 10.0, 60.0)]}, 'node01')
    after = {'steps': [step(12.0, 4.0, 84.0, step_time=800000.0)]}
    change = profile.compare(before, after)
    assert change['shares']['comm_share_pct'] == {'before': 30.0, 'after': 12.0, 'change_pp': -18.0}
    assert change['shares']['aicore_util_pct']['change_pp'] == 24.0
    assert change['step_time']['change_pct'] == -20.0
    assert change['layer'] == {'before': 'communication', 'after': 'compute'}
    assert profile.compare({'steps': []}, after)['shares']['free_share_pct']['change_pp'] is None


def test_profile_record_holds_findings_and_thresholds():
    kept = profile.profile_record({'steps': [step(22.0, 4.0)], 'dirs': [{'path': '/p', 'rank': 0}]}, 'node01',
                                  comm_max_pct=20)
    assert kept['thresholds']['comm_max_pct'] == 20.0 and kept['bottleneck']['layer'] == 'communication'
    assert [item['check'] for item in kept['findings']] == ['profile_comm_share']
