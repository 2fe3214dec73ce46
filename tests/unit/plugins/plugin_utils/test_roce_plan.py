"""The plan of the RoCE parameter plane (plugins/plugin_utils/roce/plan.py): the simulated PoD's addresses, the valid
plans and every refusal as a whole sentence, and the port config stage 4 asks hccn_config for."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils import hccl_rules
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.plan import npu_ip_plan, port_config_subset, roce_desired_config
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils.roce_samples import INTENT, MASK, PLAN

RAIL = {'network': '10.20.0.0/16', 'layout': 'rail', 'prefix': 24, 'host_offset': 10}
MASK24 = '255.255.255.0'


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
    monkeypatch.setattr(hccl_rules, 'netaddr', None)
    with pytest.raises(AnsibleFilterError) as error:
        npu_ip_plan(RAIL, 1)
    assert str(error.value) == ('npu_ip_plan needs the Python library netaddr on the controller: pip install netaddr '
                                '(it is in the requirements.txt of npuops.ascend)')


# ---- roce_desired_config, port_config_subset ------------------------------------------------------------------------

def test_desired_config_of_the_default_intent():
    assert roce_desired_config([0, '1'], INTENT, PLAN) == [
        {'device': 0, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': [{'dscp': 33, 'tc': 3}]},
        {'device': 1, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': [{'dscp': 33, 'tc': 3}]}]


def test_desired_config_adds_the_extra_map_entries_and_the_lossless_one_wins():
    intent = dict(INTENT, dscp_to_tc=[{'dscp': 48, 'tc': 1}, {'dscp': 33, 'tc': 0}, {'dscp': '10', 'tc': '2'}])
    want = roce_desired_config([3], intent)
    assert want == [{'device': 3, 'mtu': 9000, 'pfc_priorities': [4],
                     'dscp_to_tc': [{'dscp': 10, 'tc': 2}, {'dscp': 33, 'tc': 3}, {'dscp': 48, 'tc': 1}]}]


@pytest.mark.parametrize('addresses', ['check', 'ignore'])
def test_desired_config_leaves_the_addresses_out_unless_applied(addresses):
    assert all('address' not in e and 'netmask' not in e for e in roce_desired_config(range(8), INTENT, PLAN, addresses))


def test_desired_config_applies_the_planned_addresses():
    want = roce_desired_config(range(8), INTENT, PLAN, 'apply')
    assert [(e['device'], e['address'], e['netmask']) for e in want] == [(d, '10.20.%d.11' % d, MASK) for d in range(8)]
    assert want[3] == {'device': 3, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': [{'dscp': 33, 'tc': 3}],
                       'address': '10.20.3.11', 'netmask': MASK}


def test_desired_config_applying_addresses_needs_every_planned_port():
    with pytest.raises(AnsibleFilterError, match=r'^roce_desired_config: NPU 7 has no planned address \(npuops_npu_ports or '
                                                 r'npuops_npu_ip_plan\)$'):
        roce_desired_config(range(8), INTENT, PLAN[:7], 'apply')
    with pytest.raises(AnsibleFilterError, match=r'roce_desired_config: NPU 0 has no planned address'):
        roce_desired_config([0], INTENT, None, 'apply')


def test_desired_config_arguments():
    with pytest.raises(AnsibleFilterError, match=r"roce_desired_config: intent dscp_to_tc must be a list of \{dscp, tc\}, "
                                                 r"got \{33: 3\}"):
        roce_desired_config([0], dict(INTENT, dscp_to_tc={33: 3}))
    with pytest.raises(AnsibleFilterError, match=r'roce_desired_config: intent must be a dict'):
        roce_desired_config([0], [])
    assert roce_desired_config(None, INTENT) == []


WANT = roce_desired_config(range(2), INTENT, PLAN, 'apply')


def test_port_config_subset_of_one_key():
    assert port_config_subset(WANT, 'mtu') == [{'device': 0, 'mtu': 9000}, {'device': 1, 'mtu': 9000}]
    assert port_config_subset(WANT, 'dscp_to_tc') == [{'device': 0, 'dscp_to_tc': [{'dscp': 33, 'tc': 3}]},
                                                      {'device': 1, 'dscp_to_tc': [{'dscp': 33, 'tc': 3}]}]


def test_port_config_subset_of_a_list_of_keys():
    assert port_config_subset(WANT, ['address', 'netmask']) == [
        {'device': 0, 'address': '10.20.0.11', 'netmask': MASK}, {'device': 1, 'address': '10.20.1.11', 'netmask': MASK}]


def test_port_config_subset_of_the_device_only_is_a_restore_point_selection():
    assert port_config_subset(WANT, 'device') == [{'device': 0}, {'device': 1}]


def test_port_config_subset_leaves_out_entries_without_the_keys():
    assert port_config_subset(roce_desired_config(range(2), INTENT), ['address', 'netmask']) == []
    assert port_config_subset(None, 'mtu') == []
    assert port_config_subset([{'device': 0, 'mtu': 9000}, 'junk', {'device': 1}], 'mtu') == [{'device': 0, 'mtu': 9000}]
