"""Huawei CloudEngine F-A (huawei_ce_a) and F-B (huawei_ce_b): every rendered line is one the command reference shows,
the default DiffServ domain, and what each family refuses of the intent and of the switch settings."""

from __future__ import annotations

import pytest

from ansible_collections.npuops.ascend.plugins.plugin_utils.switch import huawei_ce
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.files import switch_config
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.neighbours import switch_neighbours
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils import switch_pod as pod


@pytest.fixture(scope='module')
def neighbours():
    return switch_neighbours(pod.synthetic_nodes())


# --- every line is one the reference shows -------------------------------------------------------------------------

HW = 'HW (CE6800/CE8800 V300R023C00 command reference)'
CE_COMMON = [
    (r'#', 'VRP configuration scripts separate views with "#" (Example_for_Configuring_AI_ECN.md, Configuration Scripts)'),
    (r'return', 'VRP configuration scripts end with return (Example_for_Configuring_AI_ECN.md)'),
    (r'lldp enable', HW + ' lldp_enable.json'),
    (r'dcb pfc deadlock recovery-behavior (discard|forwarding) slot \d+', HW + ' dcb_pfc_deadlock_recovery-behavior.json'),
    (r'dcb pfc', HW + ' dcb_pfc.json'),
    (r' priority [0-7]', HW + ' priority_(DCB_PFC_view).json'),
    (r' undo priority 3', HW + ' priority_(DCB_PFC_view).json (undo priority [ <priority> ])'),
    (r'diffserv domain npuops', HW + ' diffserv_domain.json'),
    (r' ip-dscp-inbound \d+ phb (be|af[1-4]|ef|cs6|cs7) green', HW + ' ip-dscp-inbound.json'),
    (r'drop-profile npuops-roce', HW + ' drop-profile.json'),
    (r' ecn buffer-size low-limit \d+ high-limit \d+ discard-percentage \d+', HW + ' ecn.json'),
    (r'interface [0-9]+GE[0-9/:]+', HW + ' (interface view; Example_for_Configuring_AI_ECN.md "interface 100GE1/0/1")'),
    (r' jumboframe enable \d+', HW + ' jumboframe_enable.json'),
    (r' undo flow-control', HW + ' flow-control(interface_view).json'),
    (r' trust dscp', HW + ' trust.json'),
    (r' trust upstream npuops', HW + ' trust_upstream.json'),
    (r' dcb pfc enable mode manual', HW + ' dcb_pfc_enable.json'),
    (r' qos queue [0-7] wred npuops-roce', HW + ' qos_queue_wred.json'),
    (r' qos queue [0-7] ecn', HW + ' qos_queue_ecn.json'),
]
ALLOWED = {
    'huawei_ce_a': CE_COMMON + [
        (r'qos buffer headroom-pool size \d+ mbytes slot \d+', HW + ' qos_buffer_headroom-pool.json'),
        (r'dcb pfc dscp-mapping enable slot \d+', HW + ' dcb_pfc_dscp-mapping_enable.json'),
        (r'dcb pfc deadlock-detect interval (10|100|500|1000)', HW + ' dcb_pfc_deadlock-detect_interval.json'),
        (r' priority [0-7] deadlock-detect time \d+', HW + ' priority_deadlock-detect_time.json'),
        (r' priority [0-7] deadlock-recovery time \d+', HW + ' priority_deadlock-recovery_time.json'),
    ],
    'huawei_ce_b': CE_COMMON + [
        (r'dcb pfc deadlock-detect timer \d+', HW + ' dcb_pfc_deadlock-detect_timer.json'),
        (r'dcb pfc deadlock-recovery timer \d+', HW + ' dcb_pfc_deadlock-recovery_timer.json'),
        (r'qos ecn enable', HW + ' qos_ecn_enable.json'),
    ],
}


def test_both_families_have_golden_files():
    assert sorted(set(family for _case, _name, family, _content in pod.all_goldens(huawei_ce.MODELS))) == [
        'huawei_ce_a', 'huawei_ce_b']


@pytest.mark.parametrize('case,name,family,content', pod.all_goldens(huawei_ce.MODELS),
                         ids=lambda v: v if isinstance(v, str) and '\n' not in v else '')
def test_every_line_is_one_the_reference_shows(case, name, family, content):
    pod.assert_reference_lines(case, name, family, content, ALLOWED[family])


def test_ce_default_domain_table():
    # Default Settings for Priority Mapping, table 3: 8n..8n+7 -> PHB n, 8n+4 yellow and 8n+6 red for af1-af4
    assert not huawei_ce.domain_needed(33, 4) and not huawei_ce.domain_needed(26, 3)
    assert huawei_ce.domain_needed(36, 4) and huawei_ce.domain_needed(38, 4) and huawei_ce.domain_needed(33, 3)
    assert not huawei_ce.domain_needed(46, 5) and not huawei_ce.domain_needed(0, 0)


# --- range refusals ------------------------------------------------------------------------------------------------

def test_ce_b_priority_6(neighbours):
    problems = pod.problem(neighbours, 'huawei_ce_b', {'lossless_priority': 6})
    pod.assert_named(problems, 'huawei_ce_b', 'lossless_priority', 6, '0-5')
    assert 'valid for the NPU' in problems[0]['msg']


@pytest.mark.parametrize('detect', [16000, 155, 5])
def test_ce_a_detect_not_interval_times_1_to_15(neighbours, detect):
    problems = pod.problem(neighbours, 'huawei_ce_a', {'pfcwd_detect_ms': detect})
    pod.assert_named(problems, 'huawei_ce_a', 'pfcwd_detect_ms', detect, 'interval x 1-15, interval 10/100/500/1000 ms')


def test_ce_a_detect_2000_needs_one_interval_with_restore(neighbours):
    # 2000 ms = 1000 ms x 2 is a valid detection time, but restore 200 ms is no multiple of 1000 ms and 2000 ms is more
    # than 15 intervals of 100 ms: F-A has one interval for both
    problems = pod.problem(neighbours, 'huawei_ce_a', {'pfcwd_detect_ms': 2000})
    assert [p['key'] for p in problems] == ['pfcwd_restore_ms'] and 'one interval' in problems[0]['msg']
    result = switch_config(neighbours, {'pfcwd_detect_ms': 2000, 'pfcwd_restore_ms': 3000}, pod.SWITCHES)
    cfg = [f for f in result['files'] if f['switch'] == 'leaf-a'][0]['content']
    # the finest interval that expresses both: 500 ms x 4 and 500 ms x 6
    assert 'dcb pfc deadlock-detect interval 500\n' in cfg and ' priority 4 deadlock-detect time 4\n' in cfg
    assert ' priority 4 deadlock-recovery time 6\n' in cfg


def test_ce_a_no_common_interval(neighbours):
    problems = pod.problem(neighbours, 'huawei_ce_a', {'pfcwd_detect_ms': 150, 'pfcwd_restore_ms': 3000})
    assert [p['key'] for p in problems] == ['pfcwd_restore_ms'] and 'one interval' in problems[0]['msg']


@pytest.mark.parametrize('family,key,value,valid', [
    ('huawei_ce_a', 'ecn_min_bytes', 200, '320-34078720'),
    ('huawei_ce_b', 'ecn_max_bytes', 20000000, '204800-16000000'),
    ('huawei_ce_b', 'pfcwd_detect_ms', 2000, '10-1500'),
    ('huawei_ce_a', 'ecn_probability', 0, '1-100'),
])
def test_range_refusals(neighbours, family, key, value, valid):
    pod.assert_named(pod.problem(neighbours, family, {key: value}), family, key, value, valid)


def test_switch_mtu_below_npu_mtu(neighbours):
    pod.assert_named(pod.problem(neighbours, 'huawei_ce_a', settings={'frame_size': 9000}), 'huawei_ce_a', 'frame_size',
                     9000, '>= 9018')


def test_ce_frame_size_range(neighbours):
    pod.assert_named(pod.problem(neighbours, 'huawei_ce_b', settings={'frame_size': 12000}), 'huawei_ce_b', 'frame_size',
                     12000, '1518-9500')


def test_ce_headroom_and_slot(neighbours):
    problems = pod.problem(neighbours, 'huawei_ce_a', settings={'headroom_mb': 64, 'slot': 'x'})
    assert sorted(p['key'] for p in problems) == ['headroom_mb', 'slot']


def test_watchdog_actions(neighbours):
    alert = pod.problem(neighbours, 'huawei_ce_a', {'pfcwd_action': 'alert'})
    pod.assert_named(alert, 'huawei_ce_a', 'pfcwd_action', 'alert', 'drop or forward')
    assert 'no log-only mode' in alert[0]['msg']
    forward_b = pod.problem(neighbours, 'huawei_ce_b', {'pfcwd_action': 'forward'})
    pod.assert_named(forward_b, 'huawei_ce_b', 'pfcwd_action', 'forward', 'drop')
    assert 'discard' in forward_b[0]['msg']
    # leaf-b (F-B) is in the network, so F-A must discard as well
    pod.assert_named(pod.problem(neighbours, 'huawei_ce_a', {'pfcwd_action': 'forward'}), 'huawei_ce_a', 'pfcwd_action',
                     'forward', 'drop')


def test_ce_a_forward_without_f_b(neighbours):
    switches = {'leaf-a': {'family': 'huawei_ce_a'}, 'leaf-b': {'family': 'huawei_ce_a'}, 'leaf-s': {'family': 'sonic'}}
    result = switch_config(neighbours, {'pfcwd_action': 'forward'}, switches, default_family='sonic')
    assert result['problems'] == []
    cfg = [f for f in result['files'] if f['switch'] == 'leaf-a'][0]['content']
    assert 'dcb pfc deadlock recovery-behavior forwarding slot 1\n' in cfg
    sonic = [f for f in result['files'] if f['switch'] == 'leaf-s'][0]['content']
    assert '"action": "forward"' in sonic
