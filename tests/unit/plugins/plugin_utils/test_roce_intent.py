"""The lossless RoCE intent (plugins/plugin_utils/roce/intent.py): hccl_rdma_tc, the valid intents and every problem as
a whole sentence, and the intent of every node of a PoD compared."""

from __future__ import annotations

import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.intent import INTENT_VARIABLES, hccl_rdma_tc, lossless_values, roce_intent_problems

HERE = os.path.dirname(os.path.abspath(__file__))


INTENT = {
    'lossless_priority': 4,
    'lossless_dscp': 33,
    'lossless_tc': 3,
    'dscp_to_tc': [{'dscp': 33, 'tc': 3}, {'dscp': 48, 'tc': 1}],
    'mtu': 9000,
    'hccl_rdma_sl': None,
    'hccl_rdma_tc': None,
}


# --- hccl_rdma_tc -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('dscp, tc', [(33, 132), (0, 0), (26, 104), (63, 252), ('33', 132)])
def test_hccl_rdma_tc(dscp, tc):
    assert hccl_rdma_tc(dscp) == tc


@pytest.mark.parametrize('dscp, message', [
    (64, 'hccl_rdma_tc: dscp 64 is outside 0-63: a DSCP has 6 bits'),
    (-1, 'hccl_rdma_tc: dscp -1 is outside 0-63: a DSCP has 6 bits'),
    (True, 'hccl_rdma_tc: dscp True is not an integer: a DSCP is an integer from 0 to 63'),
    (33.0, 'hccl_rdma_tc: dscp 33.0 is not an integer: a DSCP is an integer from 0 to 63'),
    ('af41', "hccl_rdma_tc: dscp 'af41' is not an integer: a DSCP is an integer from 0 to 63"),
    (None, 'hccl_rdma_tc: dscp None is not an integer: a DSCP is an integer from 0 to 63'),
])
def test_hccl_rdma_tc_refuses(dscp, message):
    with pytest.raises(AnsibleFilterError) as error:
        hccl_rdma_tc(dscp)
    assert str(error.value) == message


# --- roce_intent_problems -----------------------------------------------------------------------------------------

def test_a_consistent_intent_has_no_problem():
    assert roce_intent_problems(INTENT) == []


def test_consistent_intent_with_hccl_values_and_strings():
    intent = dict(INTENT, lossless_priority='4', mtu='9000', hccl_rdma_sl=4, hccl_rdma_tc=132)
    assert roce_intent_problems(intent) == []


def test_lossless_dscp_missing_from_the_map_is_not_a_problem():
    assert roce_intent_problems(dict(INTENT, dscp_to_tc=[{'dscp': 48, 'tc': 1}])) == []
    assert roce_intent_problems(dict(INTENT, dscp_to_tc=None)) == []


def test_the_same_entry_twice_is_not_a_problem():
    assert roce_intent_problems(dict(INTENT, dscp_to_tc=[{'dscp': 33, 'tc': 3}, {'dscp': 33, 'tc': 3}])) == []


@pytest.mark.parametrize('mtu', [4096, 9702])
def test_mtu_bounds_pass(mtu):
    assert roce_intent_problems(dict(INTENT, mtu=mtu)) == []


TC_RANGE = 'the 910B has the traffic classes 0 to 3 (hccn_tool -dscp_to_tc -s dscp 33 tc %s exits 10 with "The value of tc ' \
           'you input is out of the valid range!")'


@pytest.mark.parametrize('key, value, variable, message', [
    ('lossless_priority', 8, 'npuops_lossless_priority', 'npuops_lossless_priority 8 is outside 0-7: PFC has the 8 priorities 0 to 7'),
    ('lossless_priority', True, 'npuops_lossless_priority',
     'npuops_lossless_priority True is not an integer from 0 to 7: PFC has the 8 priorities 0 to 7'),
    ('lossless_priority', None, 'npuops_lossless_priority',
     'npuops_lossless_priority None is not set: the lossless RoCE intent needs it, an integer from 0 to 7'),
    ('lossless_dscp', 64, 'npuops_lossless_dscp', 'npuops_lossless_dscp 64 is outside 0-63: a DSCP has 6 bits'),
    ('lossless_dscp', 'af41', 'npuops_lossless_dscp', "npuops_lossless_dscp 'af41' is not an integer from 0 to 63: a DSCP has 6 bits"),
    ('lossless_tc', 4, 'npuops_lossless_tc', 'npuops_lossless_tc 4 is outside 0-3: ' + TC_RANGE % 4),
    ('lossless_tc', 3.5, 'npuops_lossless_tc', 'npuops_lossless_tc 3.5 is not an integer from 0 to 3: ' + TC_RANGE % 3.5),
    ('mtu', 9703, 'npuops_mtu', 'npuops_mtu 9703 is outside 68-9702: hccn_tool -mtu -s size accepts 68 to 9702 on the 910B'),
    ('mtu', 67, 'npuops_mtu', 'npuops_mtu 67 is outside 68-9702: hccn_tool -mtu -s size accepts 68 to 9702 on the 910B'),
    ('mtu', 1500, 'npuops_mtu',
     'npuops_mtu 1500 is not a jumbo MTU: RDMA on the lossless parameter plane is expected at a jumbo MTU, so this '
     'collection accepts 4096 to 9702 (9000 is usual)'),
    ('mtu', '9000x', 'npuops_mtu',
     "npuops_mtu '9000x' is not an integer from 68 to 9702: hccn_tool -mtu -s size accepts 68 to 9702 on the 910B"),
    ('dscp_to_tc', [{'dscp': 33, 'tc': 2}], 'npuops_dscp_to_tc',
     "npuops_dscp_to_tc [{'dscp': 33, 'tc': 2}] maps the lossless DSCP 33 to TC 2, not to the lossless TC 3: the RDMA "
     "traffic would leave the lossless queue"),
    ('dscp_to_tc', [{'dscp': 10, 'tc': 2}, {'dscp': 10, 'tc': 1}], 'npuops_dscp_to_tc',
     "npuops_dscp_to_tc [{'dscp': 10, 'tc': 2}, {'dscp': 10, 'tc': 1}] maps DSCP 10 twice, to TC 2 and TC 1: a DSCP has one "
     "traffic class"),
    ('dscp_to_tc', [{'dscp': 26, 'tc': 4}], 'npuops_dscp_to_tc',
     "npuops_dscp_to_tc [{'dscp': 26, 'tc': 4}] entry 0 maps DSCP 26 to tc 4, not a traffic class from 0 to 3: hccn_tool on "
     "the 910B rejects it (-dscp_to_tc -s dscp 26 tc 4 exits 10)"),
    ('dscp_to_tc', [{'dscp': 64, 'tc': 1}], 'npuops_dscp_to_tc',
     "npuops_dscp_to_tc [{'dscp': 64, 'tc': 1}] entry 0 has dscp 64, not a DSCP from 0 to 63"),
    ('dscp_to_tc', [{'dscp': 26, 'prio': 1}], 'npuops_dscp_to_tc',
     "npuops_dscp_to_tc [{'dscp': 26, 'prio': 1}] entry 0 {'dscp': 26, 'prio': 1} is not a {dscp, tc} entry: each entry "
     "has exactly the keys dscp and tc"),
    ('dscp_to_tc', {'33': 3}, 'npuops_dscp_to_tc', "npuops_dscp_to_tc {'33': 3} is not a list of {dscp, tc} entries"),
    ('hccl_rdma_sl', 3, 'npuops_hccl_rdma_sl',
     'npuops_hccl_rdma_sl 3 is not the lossless priority 4: HCCL_RDMA_SL must be the PFC-enabled priority, so set 4, or the '
     'RDMA traffic of HCCL is not protected by PFC'),
    ('hccl_rdma_sl', 8, 'npuops_hccl_rdma_sl',
     'npuops_hccl_rdma_sl 8 is outside 0-7: HCCL_RDMA_SL is the PFC-enabled priority of the RDMA traffic'),
    ('hccl_rdma_sl', False, 'npuops_hccl_rdma_sl',
     'npuops_hccl_rdma_sl False is not an integer: HCCL_RDMA_SL is the PFC-enabled priority of the RDMA traffic, 0 to 7'),
    ('hccl_rdma_tc', 130, 'npuops_hccl_rdma_tc',
     'npuops_hccl_rdma_tc 130 is not a multiple of 4: HCCL_RDMA_TC is the ToS byte, DSCP x 4 (the DSCP sits in bits 2-7), '
     'and HCCL rejects it (EI0001 "range[0, 255], Must be a multiple of 4")'),
    ('hccl_rdma_tc', 256, 'npuops_hccl_rdma_tc',
     'npuops_hccl_rdma_tc 256 is outside 0-255: HCCL_RDMA_TC is the ToS byte, DSCP x 4 (132 for DSCP 33), and HCCL rejects '
     'it (EI0001 "range[0, 255], Must be a multiple of 4")'),
    ('hccl_rdma_tc', 128, 'npuops_hccl_rdma_tc',
     'npuops_hccl_rdma_tc 128 marks the RDMA traffic with DSCP 32, not the lossless DSCP 33: HCCL_RDMA_TC is DSCP x 4, so '
     'set 132'),
    ('hccl_rdma_tc', 1.5, 'npuops_hccl_rdma_tc',
     'npuops_hccl_rdma_tc 1.5 is not an integer: HCCL_RDMA_TC is the ToS byte, DSCP x 4, an integer 0-255 and a multiple of '
     '4 (132 for DSCP 33)'),
])
def test_intent_problem(key, value, variable, message):
    problems = roce_intent_problems(dict(INTENT, **{key: value}))
    assert problems == [{'variable': variable, 'value': value, 'problem': message}]


def test_hccl_rdma_tc_33_is_the_dscp():
    problems = roce_intent_problems(dict(INTENT, hccl_rdma_tc=33))
    assert problems == [{
        'variable': 'npuops_hccl_rdma_tc', 'value': 33,
        'problem': 'npuops_hccl_rdma_tc 33 is the DSCP, not the ToS byte: HCCL_RDMA_TC takes the ToS byte DSCP x 4, so 132 '
                   'for DSCP 33, and HCCL rejects 33 (EI0001 "range[0, 255], Must be a multiple of 4")'}]


def test_hccl_rdma_tc_equal_to_a_dscp_that_is_a_multiple_of_4():
    problems = roce_intent_problems(dict(INTENT, lossless_dscp=32, dscp_to_tc=[], hccl_rdma_tc=32))
    assert [p['problem'] for p in problems] == [
        'npuops_hccl_rdma_tc 32 is the DSCP, not the ToS byte: HCCL_RDMA_TC takes the ToS byte DSCP x 4, so 128 for DSCP 32, '
        'and 32 would mark the RDMA traffic with DSCP 8']


def test_several_problems_each_name_variable_and_value():
    intent = dict(INTENT, lossless_priority=9, lossless_tc=7, mtu=100000, hccl_rdma_tc=33)
    problems = roce_intent_problems(intent)
    assert [p['variable'] for p in problems] == ['npuops_lossless_priority', 'npuops_lossless_tc', 'npuops_mtu',
                                                 'npuops_hccl_rdma_tc']
    for problem in problems:
        assert problem['problem'].startswith('%s %r ' % (problem['variable'], problem['value']))


def test_an_invalid_lossless_dscp_skips_the_comparisons():
    problems = roce_intent_problems(dict(INTENT, lossless_dscp=99, hccl_rdma_tc=132))
    assert [p['variable'] for p in problems] == ['npuops_lossless_dscp']


@pytest.mark.parametrize('intent, message', [
    ([], 'roce_intent_problems: intent [] is not a dict of lossless_priority, lossless_dscp, lossless_tc, dscp_to_tc, mtu, '
         'hccl_rdma_sl, hccl_rdma_tc'),
    (dict(INTENT, pfc=[4]), 'roce_intent_problems: intent key pfc is not known: the keys are lossless_priority, lossless_dscp, '
                            'lossless_tc, dscp_to_tc, mtu, hccl_rdma_sl, hccl_rdma_tc'),
])
def test_intent_argument_errors(intent, message):
    with pytest.raises(AnsibleFilterError) as error:
        roce_intent_problems(intent)
    assert str(error.value) == message


# ---- roce_intent_problems over every node of a PoD ------------------------------------------------------------------

PODHOSTS = ['node01', 'node02', 'node03']
ROLES = os.path.join(HERE, '..', '..', '..', '..', 'roles')


def pod_hostvars(**per_host):
    """hostvars of a 3-node PoD with the group's intent; per_host node02={'npuops_lossless_priority': 3} overrides."""
    group = {'npuops_lossless_priority': 4, 'npuops_lossless_dscp': 33, 'npuops_lossless_tc': 3, 'npuops_mtu': 9000,
             'ansible_host': '192.0.2.1'}
    hostvars = {host: dict(group) for host in PODHOSTS}
    for host, changes in per_host.items():
        hostvars[host].update(changes)
    return hostvars


def test_the_same_intent_on_every_node_passes():
    assert roce_intent_problems(pod_hostvars(), PODHOSTS) == []
    # an INI group variable is a string of digits; the role default for a variable no node sets
    assert roce_intent_problems(pod_hostvars(node02={'npuops_mtu': '9000'}), PODHOSTS) == []
    assert roce_intent_problems({host: {} for host in PODHOSTS}, PODHOSTS) == []


def test_a_host_override_of_the_priority_is_refused_naming_hosts_and_values():
    problems = roce_intent_problems(pod_hostvars(node02={'npuops_lossless_priority': 3}), PODHOSTS)
    assert len(problems) == 1, problems
    assert problems[0]['variable'] == 'npuops_lossless_priority'
    assert problems[0]['hosts'] == ['node02']
    assert problems[0]['value'] == 3
    assert problems[0]['problem'] == (
        'npuops_lossless_priority is 3 on node02 but 4 on node01, node03: the lossless RoCE intent is PoD-wide (stage 4 sets '
        'it on every port of every node and stage 5 derives HCCL_RDMA_SL and HCCL_RDMA_TC from it); set it once in '
        'group_vars, not in host_vars or per host')


def test_on_two_nodes_the_node_without_the_default_is_the_odd_one():
    # a tie: the node whose value is not the roles' default is named, whichever comes first
    hostvars = {'node01': {'npuops_mtu': 4200}, 'node02': {}}
    problems = roce_intent_problems(hostvars, ['node01', 'node02'])
    assert problems[0]['problem'].startswith('npuops_mtu is 4200 on node01 but 9000 on node02: ')
    assert problems[0]['hosts'] == ['node01']


def test_a_value_one_node_sets_and_the_others_take_by_default_differs():
    # node01 and node03 do not set the MTU: they take 9000, the default of the roles
    hostvars = pod_hostvars(node02={'npuops_mtu': 4200})
    for host in ('node01', 'node03'):
        del hostvars[host]['npuops_mtu']
    problems = roce_intent_problems(hostvars, PODHOSTS)
    assert [p['problem'].split(':')[0] for p in problems] == ['npuops_mtu is 4200 on node02 but 9000 on node01, node03']


@pytest.mark.parametrize('variable, value', [
    ('npuops_lossless_dscp', 34), ('npuops_lossless_tc', 2), ('npuops_dscp_to_tc', [{'dscp': 33, 'tc': 3}]),
    ('npuops_hccl_rdma_sl', 4), ('npuops_hccl_rdma_tc', 132),
])
def test_every_intent_variable_is_compared(variable, value):
    problems = roce_intent_problems(pod_hostvars(node03={variable: value}), PODHOSTS)
    assert [p['variable'] for p in problems] == [variable]
    assert problems[0]['problem'].startswith('%s is %r on node03 but ' % (variable, value))


def test_a_bad_value_on_one_node_is_named_with_its_node():
    problems = roce_intent_problems(pod_hostvars(node02={'npuops_lossless_priority': 9}), PODHOSTS)
    assert [p['problem'] for p in problems] == [
        'npuops_lossless_priority is 9 on node02 but 4 on node01, node03: the lossless RoCE intent is PoD-wide (stage 4 sets '
        'it on every port of every node and stage 5 derives HCCL_RDMA_SL and HCCL_RDMA_TC from it); set it once in '
        'group_vars, not in host_vars or per host',
        'node02: npuops_lossless_priority 9 is outside 0-7: PFC has the 8 priorities 0 to 7']


def test_a_bad_intent_shared_by_every_node_is_reported_once_without_the_nodes():
    problems = roce_intent_problems(pod_hostvars(**{host: {'npuops_lossless_tc': 4} for host in PODHOSTS}), PODHOSTS)
    assert len(problems) == 1
    assert problems[0]['problem'].startswith('npuops_lossless_tc 4 is outside 0-3')


def test_values_the_stages_read_alike_make_one_intent():
    hostvars = pod_hostvars(**{host: {'npuops_lossless_tc': 4} for host in PODHOSTS})
    hostvars['node02']['npuops_mtu'] = '9000'
    problems = roce_intent_problems(hostvars, PODHOSTS)
    assert [p['problem'][:40] for p in problems] == ['npuops_lossless_tc 4 is outside 0-3: the']


def test_hosts_not_in_hostvars_are_left_to_pod_problems():
    assert roce_intent_problems(pod_hostvars(), PODHOSTS + ['node09']) == []


def test_the_defaults_are_the_roles_defaults():
    # the intent of a node that sets nothing is what roles/roce_lossless/vars/main.yml gives it: the variable, whose
    # default is in the one home of the PoD defaults (roles/pod_defaults/defaults/main.yml)
    with open(os.path.join(ROLES, 'roce_lossless', 'vars', 'main.yml'), encoding='utf-8') as handle:
        role_intent = yaml.safe_load(handle)['roce_lossless_intent']
    with open(os.path.join(ROLES, 'pod_defaults', 'defaults', 'main.yml'), encoding='utf-8') as handle:
        pod_defaults = yaml.safe_load(handle)
    assert sorted(role_intent) == sorted(INTENT_VARIABLES)
    for key, (variable, default) in INTENT_VARIABLES.items():
        assert role_intent[key] == '{{ %s }}' % variable, key
        assert pod_defaults[variable] == default, key


@pytest.mark.parametrize('hostvars, hosts, message', [
    ([], PODHOSTS, 'roce_intent_problems: with hosts, the input must be hostvars, got list'),
    ({}, 'node01', "roce_intent_problems: hosts must be a list of inventory hostnames, got 'node01'"),
])
def test_pod_intent_argument_errors(hostvars, hosts, message):
    with pytest.raises(AnsibleFilterError) as error:
        roce_intent_problems(hostvars, hosts)
    assert str(error.value) == message


# ---- the intent's values as the stage 4 decisions take them -----------------------------------------------------

def test_lossless_values_are_the_integers_of_the_intent():
    values = {'mtu': '9000', 'lossless_priority': 4, 'lossless_dscp': '33', 'lossless_tc': 3, 'dscp_to_tc': None}
    assert lossless_values(values, 'roce_port_findings') == (9000, 4, 33, 3)


@pytest.mark.parametrize('intent, message', [
    (None, r"^roce_desired_config: intent must be a dict with mtu, lossless_priority, lossless_dscp and lossless_tc, got None$"),
    ({'mtu': 9000}, r"^roce_desired_config: intent needs integer mtu, lossless_priority, lossless_dscp and lossless_tc "
                    r"\('lossless_priority'\); validate it with npuops.ascend.roce_intent_problems first")])
def test_lossless_values_of_a_bad_intent(intent, message):
    with pytest.raises(AnsibleFilterError, match=message):
        lossless_values(intent, 'roce_desired_config')
