"""Cumulus Linux: every NVUE command rendered is one the documentation shows, and what Cumulus refuses of the intent
and of the switch settings."""

from __future__ import annotations

import pytest

from ansible_collections.npuops.ascend.plugins.plugin_utils.switch import cumulus
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.files import switch_config
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.neighbours import switch_neighbours
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils import switch_pod as pod


@pytest.fixture(scope='module')
def neighbours():
    return switch_neighbours(pod.synthetic_nodes())


# --- every line is one the reference shows -------------------------------------------------------------------------

ALLOWED = [
    (r'nv set qos roce mode lossless', 'CL RDMA-over-Converged-Ethernet-RoCE.md'),
    (r'nv set qos pfc default-global switch-priority [0-7]', 'CL _index.md (PFC) and RoCE.md (Change RoCE Configuration)'),
    (r'nv set qos pfc default-global (tx|rx) enable', 'CL _index.md (All PFC commands)'),
    (r'nv set qos mapping default-global trust both', 'CL RoCE.md (Change RoCE Configuration)'),
    (r'nv set qos mapping default-global dscp \d+ switch-priority [0-7]', 'CL RoCE.md, _index.md (Trust DSCP)'),
    (r'nv set qos egress-queue-mapping default-global switch-priority [0-7] traffic-class [03]', 'CL RoCE.md, _index.md'),
    (r'nv set qos congestion-control default-global traffic-class 3 ecn enable', 'CL _index.md (ECN: "ecn disable")'),
    (r'nv set qos congestion-control default-global traffic-class 3 (min|max)-threshold \d+', 'CL _index.md (Congestion Control)'),
    (r'nv set qos congestion-control default-global traffic-class 3 probability \d+', 'CL _index.md (ECN port groups)'),
    (r'nv set qos pfc-watchdog polling-interval \d+', 'CL _index.md (PFC Watchdog)'),
    (r'nv set interface swp[0-9s]+ link mtu \d+', 'reference section 3 (MTU) [cfg]'),
    (r'nv set interface swp[0-9s]+ qos pfc-watchdog', 'CL _index.md (PFC Watchdog)'),
    (r'nv config apply', 'CL RoCE.md'),
]


def test_every_case_has_a_golden_file():
    assert sorted(case for case, _name, _family, _content in pod.all_goldens(cumulus.MODELS)) == sorted(pod.CASES)


@pytest.mark.parametrize('case,name,family,content', pod.all_goldens(cumulus.MODELS),
                         ids=lambda v: v if isinstance(v, str) and '\n' not in v else '')
def test_every_line_is_one_the_reference_shows(case, name, family, content):
    pod.assert_reference_lines(case, name, family, content, ALLOWED)


def test_a_priority_other_than_3_is_moved_onto_the_roce_traffic_class(neighbours):
    moved = [f for f in pod.render(neighbours, 'default')['files'] if f['family'] == 'cumulus'][0]['content']
    assert 'nv set qos egress-queue-mapping default-global switch-priority 4 traffic-class 3\n' in moved
    assert 'nv set qos egress-queue-mapping default-global switch-priority 3 traffic-class 0\n' in moved
    kept = [f for f in pod.render(neighbours, 'p3_dscp26')['files'] if f['family'] == 'cumulus'][0]['content']
    assert 'egress-queue-mapping' not in kept


# --- range refusals ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('key,value,valid', [
    ('ecn_probability', 0, '1-100'),
    ('lossless_priority', 6, '0-7 except 6'),
    ('lossless_dscp', 48, '0-63 except 48'),
])
def test_range_refusals(neighbours, key, value, valid):
    pod.assert_named(pod.problem(neighbours, 'cumulus', {key: value}), 'cumulus', key, value, valid)


def test_switch_mtu_below_npu_mtu(neighbours):
    pod.assert_named(pod.problem(neighbours, 'cumulus', settings={'frame_size': 1500}), 'cumulus', 'frame_size', 1500,
                     '>= 9000')


def test_watchdog_action_is_always_drop(neighbours):
    pod.assert_named(pod.problem(neighbours, 'cumulus', {'pfcwd_action': 'alert'}), 'cumulus', 'pfcwd_action', 'alert',
                     'drop')
    assert [f['switch'] for f in switch_config(neighbours, {}, {'leaf-c': {'family': 'cumulus'}})['files']] == ['leaf-c']
