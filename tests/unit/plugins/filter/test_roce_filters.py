"""npu_ip_plan, hccl_rdma_tc, roce_intent_problems: the simulated PoD's plan, the valid cases, and every refusal as a whole sentence."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils import _hccl_rules
from ansible_collections.npuops.ascend.plugins.filter import roce_intent_problems as roce
from ansible_collections.npuops.ascend.plugins.filter.roce_intent_problems import hccl_rdma_tc, npu_ip_plan, roce_intent_problems

RAIL = {'network': '10.20.0.0/16', 'layout': 'rail', 'prefix': 24, 'host_offset': 10}
MASK24 = '255.255.255.0'

INTENT = {
    'lossless_priority': 4,
    'lossless_dscp': 33,
    'lossless_tc': 3,
    'dscp_to_tc': [{'dscp': 33, 'tc': 3}, {'dscp': 48, 'tc': 1}],
    'mtu': 9000,
    'hccl_rdma_sl': None,
    'hccl_rdma_tc': None,
}


def test_filter_table():
    assert roce.FilterModule().filters() == {
        'npu_ip_plan': npu_ip_plan,
        'hccl_rdma_tc': hccl_rdma_tc,
        'roce_intent_problems': roce_intent_problems,
    }


# --- npu_ip_plan --------------------------------------------------------------------------------------------------

SIMULATED_POD = {
    1: ['10.20.0.11', '10.20.1.11', '10.20.2.11', '10.20.3.11', '10.20.4.11', '10.20.5.11', '10.20.6.11', '10.20.7.11'],
    2: ['10.20.0.12', '10.20.1.12', '10.20.2.12', '10.20.3.12', '10.20.4.12', '10.20.5.12', '10.20.6.12', '10.20.7.12'],
    3: ['10.20.0.13', '10.20.1.13', '10.20.2.13', '10.20.3.13', '10.20.4.13', '10.20.5.13', '10.20.6.13', '10.20.7.13'],
    4: ['10.20.0.14', '10.20.1.14', '10.20.2.14', '10.20.3.14', '10.20.4.14', '10.20.5.14', '10.20.6.14', '10.20.7.14'],
}


@pytest.mark.parametrize('node', [1, 2, 3, 4])
def test_rail_plan_is_the_simulated_pods_plan(node):
    assert npu_ip_plan(RAIL, node) == [{'device': d, 'address': SIMULATED_POD[node][d], 'netmask': MASK24} for d in range(8)]


def test_rail_plan_node_1_npu_3():
    assert npu_ip_plan(RAIL, 1)[3] == {'device': 3, 'address': '10.20.3.11', 'netmask': MASK24}


def test_rail_plan_defaults_are_the_simulated_pods():
    assert npu_ip_plan({'network': '10.20.0.0/16'}, 2) == npu_ip_plan(RAIL, 2)


def test_rail_plan_last_node_that_fits():
    assert npu_ip_plan(RAIL, 244)[7] == {'device': 7, 'address': '10.20.7.254', 'netmask': MASK24}


def test_flat_plan():
    plan = dict(RAIL, layout='flat')
    assert npu_ip_plan(plan, 1)[0] == {'device': 0, 'address': '10.20.0.10', 'netmask': '255.255.0.0'}
    assert [port['address'] for port in npu_ip_plan(plan, 2)] == ['10.20.0.%d' % host for host in range(18, 26)]
    assert npu_ip_plan(plan, 40)[7]['address'] == '10.20.1.73'      # host 10 + 39 x 8 + 7 = 329 = 256 + 73


def test_fewer_npus():
    assert npu_ip_plan(RAIL, 1, npus=2) == [{'device': 0, 'address': '10.20.0.11', 'netmask': MASK24},
                                            {'device': 1, 'address': '10.20.1.11', 'netmask': MASK24}]


def test_explicit_plan_is_validated_and_normalised():
    plan = [{'device': str(d), 'address': ' 10.20.%d.11' % d, 'netmask': 24 if d % 2 else MASK24} for d in reversed(range(8))]
    assert npu_ip_plan(plan, 1) == [{'device': d, 'address': SIMULATED_POD[1][d], 'netmask': MASK24} for d in range(8)]


def _port_list(**changes):
    ports = [{'device': d, 'address': SIMULATED_POD[1][d], 'netmask': MASK24} for d in range(8)]
    for index, port in changes.items():
        ports[int(index.lstrip('p'))] = port
    return ports


@pytest.mark.parametrize('plan, node, npus, message', [
    (RAIL, 0, 8, 'npu_ip_plan: node_index 0 is not a node number: nodes are numbered from 1'),
    (RAIL, '1st', 8, "npu_ip_plan: node_index '1st' is not a node number: nodes are numbered from 1"),
    (RAIL, 1, 0, 'npu_ip_plan: npus 0 is not a number of NPUs: it must be an integer from 1 to 1024 (8 on an Atlas 800T A2)'),
    (RAIL, 1, 2 ** 70,
     'npu_ip_plan: npus 1180591620717411303424 is not a number of NPUs: it must be an integer from 1 to 1024 (8 on an Atlas '
     '800T A2)'),
    (dict(RAIL, network='2001:db8::/64'), 1, 8,
     "npu_ip_plan: network '2001:db8::/64' is not an IPv4 network in CIDR form such as 10.20.0.0/16: the NPU RoCE ports take "
     "IPv4 addresses"),
    (dict(RAIL, network='10.20.0.0'), 1, 8,
     "npu_ip_plan: network '10.20.0.0' is not an IPv4 network in CIDR form such as 10.20.0.0/16: the NPU RoCE ports take "
     "IPv4 addresses"),
    (dict(RAIL, network='10.20.0.5/16'), 1, 8,
     "npu_ip_plan: network '10.20.0.5/16' has host bits set: the network of that address is 10.20.0.0/16"),
    (dict(RAIL, network='10.20.0.0/22'), 1, 8,
     'npu_ip_plan: network 10.20.0.0/22 has 4 /24 subnets, fewer than the 8 NPUs of a node: the rail layout puts NPU d in '
     'subnet d, so use a shorter network prefix or a longer prefix than 24'),
    (RAIL, 245, 8,
     'npu_ip_plan: node_index 245 gives host number 255 (host_offset 10 + node 245) in the /24 subnets of 10.20.0.0/16, but '
     'a /24 has host numbers 1 to 254, so with host_offset 10 nodes 1 to 244 fit'),
    (dict(RAIL, prefix=16), 1, 8,
     'npu_ip_plan: prefix 16 is not a prefix length from 17 to 30: the rail subnets must be longer than the /16 of network '
     '10.20.0.0/16 and hold hosts besides the network and broadcast address'),
    (dict(RAIL, prefix=31), 1, 8,
     'npu_ip_plan: prefix 31 is not a prefix length from 17 to 30: the rail subnets must be longer than the /16 of network '
     '10.20.0.0/16 and hold hosts besides the network and broadcast address'),
    (dict(RAIL, network='10.0.0.0/30'), 1, 8,
     "npu_ip_plan: network '10.0.0.0/30' is too small for the rail layout: the rail subnets are longer than the network and "
     "at most /30, so the network must be /29 or shorter"),
    (dict(RAIL, layout='mesh'), 1, 8,
     "npu_ip_plan: layout 'mesh' is not a layout: rail (NPU d of every node in the d-th subnet of network) or flat (every "
     "port of the PoD in network itself)"),
    (dict(RAIL, host_offset=-1), 1, 8,
     'npu_ip_plan: host_offset -1 is not an integer of at least 0: it is added to every host number'),
    (dict(RAIL, netwrok='10.20.0.0/16'), 1, 8,
     'npu_ip_plan: plan key netwrok is not known: the keys are network, layout, prefix, host_offset'),
    (dict(RAIL, layout='flat', host_offset=0), 1, 8,
     'npu_ip_plan: node_index 1 NPU 0 would get 10.20.0.0, the network address of 10.20.0.0/16: with the flat layout NPU d '
     'of node n is host number host_offset + (n - 1) x 8 + d, so host_offset must be at least 1'),
    (dict(RAIL, layout='flat', network='10.20.0.0/24'), 31, 8,
     'npu_ip_plan: node_index 31 NPU 5 would get host number 255 of 10.20.0.0/24, which is the broadcast address: with '
     'host_offset 10 and 8 NPUs a node, nodes 1 to 30 fit'),
    (dict(RAIL, layout='flat', network='10.20.0.0/28'), 1, 8,
     'npu_ip_plan: node_index 1 NPU 5 would get host number 15 of 10.20.0.0/28, which is the broadcast address: with '
     'host_offset 10 and 8 NPUs a node, no node fits'),
    ('10.20.0.0/16', 1, 8,
     "npu_ip_plan: plan '10.20.0.0/16' is neither a list of {device, address, netmask} nor a dict {network, layout, prefix, "
     "host_offset}"),
    (_port_list(p3={'device': 3, 'address': '10.20.3.11'}), 1, 8,
     "npu_ip_plan: plan[3] {'device': 3, 'address': '10.20.3.11'} is not a port: each item has exactly the keys device, "
     "address and netmask"),
    (_port_list(p3={'device': 8, 'address': '10.20.3.11', 'netmask': MASK24}), 1, 8,
     'npu_ip_plan: plan[3].device 8 is not an NPU id: the devices are 0 to 7'),
    (_port_list(p3={'device': 2, 'address': '10.20.3.11', 'netmask': MASK24}), 1, 8,
     'npu_ip_plan: plan[3].device 2 is listed twice: every NPU 0 to 7 has exactly one port'),
    (_port_list(p3={'device': 3, 'address': '10.20.3', 'netmask': MASK24}), 1, 8,
     "npu_ip_plan: plan[3].address '10.20.3' is not an IPv4 address: the NPU RoCE ports take dotted-quad IPv4 addresses"),
    (_port_list(p3={'device': 3, 'address': '10.20.3.255', 'netmask': MASK24}), 1, 8,
     'npu_ip_plan: plan[3].address 10.20.3.255 is the broadcast address of 10.20.3.0/24, not a host address'),
    (_port_list(p3={'device': 3, 'address': '10.20.3.11', 'netmask': '255.0.255.0'}), 1, 8,
     "npu_ip_plan: plan[3].netmask '255.0.255.0' is not an IPv4 netmask such as 255.255.255.0 or a prefix length such as 24"),
    (_port_list(p3={'device': 3, 'address': '10.20.3.11', 'netmask': 33}), 1, 8,
     'npu_ip_plan: plan[3].netmask 33 is not a netmask: a prefix length is 1 to 32'),
    (_port_list(p3={'device': 3, 'address': '10.20.2.11', 'netmask': MASK24}), 1, 8,
     'npu_ip_plan: plan[3].address 10.20.2.11 is also the address of NPU 2: every port needs its own address'),
    (_port_list()[:7], 1, 8, 'npu_ip_plan: plan has no port for NPU 7: every NPU 0 to 7 needs exactly one'),
])
def test_npu_ip_plan_refuses(plan, node, npus, message):
    with pytest.raises(AnsibleFilterError) as error:
        npu_ip_plan(plan, node, npus)
    assert str(error.value) == message


def test_npu_ip_plan_without_netaddr(monkeypatch):
    monkeypatch.setattr(_hccl_rules, 'netaddr', None)
    with pytest.raises(AnsibleFilterError) as error:
        npu_ip_plan(RAIL, 1)
    assert str(error.value) == ('npu_ip_plan needs the Python library netaddr on the controller: pip install netaddr '
                                '(it is in the requirements.txt of npuops.ascend)')


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
