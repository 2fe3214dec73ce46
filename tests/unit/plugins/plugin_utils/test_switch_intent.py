"""switch_intent_problems: the family-independent problems of the switch QoS intent and of the switch inventory; the
checked intent the renderers take."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.switch import intent as module
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.intent import checked_intent, switch_intent_problems


def test_default_intent_has_no_problems():
    assert switch_intent_problems({}) == []
    assert switch_intent_problems(None) == []
    assert switch_intent_problems(dict((k, str(v)) for k, v in module.INTENT_DEFAULTS.items())) == []


@pytest.mark.parametrize('key,value,variable,text', [
    ('lossless_priority', 8, 'npuops_lossless_priority', 'outside 0-7'),
    ('lossless_dscp', 64, 'npuops_lossless_dscp', 'outside 0-63'),
    ('lossless_dscp', 3.5, 'npuops_lossless_dscp', 'not an integer'),
    ('mtu', 1500, 'npuops_mtu', 'not a jumbo MTU'),
    ('mtu', 9800, 'npuops_mtu', 'outside 68-9702'),
    ('ecn_probability', 101, 'npuops_ecn_probability', 'percentage'),
    ('ecn_min_bytes', 'lots', 'npuops_ecn_min_bytes', 'not an integer'),
    ('pfcwd_detect_ms', 0, 'npuops_pfc_watchdog_detect_ms', 'outside 1-60000'),
    ('pfcwd_restore_ms', -1, 'npuops_pfc_watchdog_restore_ms', 'outside 0-60000'),
    ('pfcwd_poll_ms', True, 'npuops_pfc_watchdog_poll_ms', 'not an integer'),
    ('pfcwd_action', 'pause', 'npuops_pfc_watchdog_action', 'drop, forward or alert'),
])
def test_intent_problems(key, value, variable, text):
    problems = switch_intent_problems({key: value})
    assert [p['variable'] for p in problems] == [variable]
    assert problems[0]['value'] == value and text in problems[0]['problem']
    assert problems[0]['problem'].startswith(variable + ' ')


def test_ecn_min_not_below_max():
    problems = switch_intent_problems({'ecn_min_bytes': 614400, 'ecn_max_bytes': '614400'})
    assert [p['variable'] for p in problems] == ['npuops_ecn_max_bytes'] and 'npuops_ecn_min_bytes 614400' in problems[0]['problem']


def test_intent_problems_refuse_unknown_keys():
    with pytest.raises(AnsibleFilterError, match='intent key lossless_tc is not known'):
        switch_intent_problems({'lossless_tc': 3})


@pytest.mark.parametrize('switches, family, expected', [
    ({'leaf-01': 'sonic'}, None, "npuops_switches['leaf-01'] 'sonic' is not a dict of family, frame_size, headroom_mb, slot"),
    ({'leaf-01': {'family': 'juniper'}}, None,
     "npuops_switches['leaf-01'].family 'juniper' is not a switch family: the families are huawei_ce_a, huawei_ce_b, sonic, cumulus"),
    ({'leaf-01': {'famliy': 'sonic'}}, None, "npuops_switches['leaf-01'] has the unknown key(s) famliy"),
    (['leaf-01'], None, "npuops_switches ['leaf-01'] is not a dict of switch name"),
    ({}, 'cisco', "npuops_switch_family 'cisco' is not a switch family"),
])
def test_intent_problems_check_the_switch_inventory(switches, family, expected):
    found = switch_intent_problems({}, switches, family)
    assert [p['problem'] for p in found if expected in p['problem']], found


def test_intent_problems_accept_a_good_switch_inventory():
    assert switch_intent_problems({}, {'leaf-01': {'family': 'sonic', 'frame_size': 9100}, 'leaf-02': {}}, 'huawei_ce_a') == []
    assert switch_intent_problems({}) == []


def test_checked_intent_has_the_defaults_and_numbers_as_int():
    values = checked_intent({'lossless_priority': '3', 'mtu': None}, 'switch_config')
    assert values == dict(module.INTENT_DEFAULTS, lossless_priority=3)
    assert all(isinstance(value, int) for key, value in values.items() if key != 'pfcwd_action')


def test_checked_intent_names_the_filter_and_every_problem():
    with pytest.raises(AnsibleFilterError, match=r'^switch_config: the intent has problems .*npuops_lossless_priority 9 .*'
                                                 r'npuops_mtu 100 '):
        checked_intent({'lossless_priority': 9, 'mtu': 100}, 'switch_config')
