"""The inventory check of a PoD (plugins/plugin_utils/pod.py, the filter pod_problems): one failing and one passing case
for each inventory rule, and the argument errors."""

from __future__ import annotations

import copy

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.pod import pod_problems

SPEC = {
    'parameter_plane': '10.20.0.0/16',
    'npus_per_node': 8,
    'required': ['npuops_npu_ports', 'npuops_hccl_if_ip', 'npuops_hccl_socket_ifname'],
    'ranges': {'npuops_lossless_priority': [0, 7], 'npuops_lossless_dscp': [0, 63], 'npuops_mtu': [68, 9702]},
}
HOSTS = ['a2-node01', 'a2-node02']


def _node(index):
    return {
        'npuops_npu_ports': [{'device': d, 'address': '10.20.%d.%d' % (d, index + 10), 'netmask': '255.255.0.0'} for d in range(8)],
        'npuops_hccl_if_ip': '192.168.1.%d' % (index + 10),
        'npuops_hccl_socket_ifname': 'enp189s0f0',
        'npuops_lossless_priority': 4,
        'npuops_lossless_dscp': 34,
        'npuops_mtu': 9000,
        'ansible_host': '192.168.1.%d' % (index + 10),
    }


def _hostvars():
    return {'a2-node01': _node(1), 'a2-node02': _node(2), 'login': {'ansible_host': '192.168.1.2'}}


def _problems(hostvars, spec=None, hosts=None):
    return pod_problems(hostvars, hosts or HOSTS, spec or SPEC)


def _one(problems):
    assert len(problems) == 1, problems
    return problems[0]


def test_a_good_pod_has_no_problem():
    assert _problems(_hostvars()) == []


def test_values_from_group_level_are_the_hosts_values():
    hostvars = _hostvars()
    for host in HOSTS:
        hostvars[host]['npuops_mtu'] = '9000'   # an INI group variable is a string
    assert _problems(hostvars) == []


# --- required ---------------------------------------------------------------------------------------

@pytest.mark.parametrize('empty', [None, '', []], ids=['null', 'empty string', 'empty list'])
def test_required_variable_missing(empty):
    hostvars = _hostvars()
    hostvars['a2-node02']['npuops_hccl_if_ip'] = empty
    problem = _one(_problems(hostvars))
    assert (problem['host'], problem['variable'], problem['value']) == ('a2-node02', 'npuops_hccl_if_ip', empty)
    assert problem['problem'].startswith('a2-node02: npuops_hccl_if_ip is not set; it is required for every node of the PoD')


def test_required_variable_absent_and_custom_required_list():
    hostvars = _hostvars()
    del hostvars['a2-node01']['npuops_hccl_socket_ifname']
    assert _one(_problems(hostvars))['problem'] == ('a2-node01: npuops_hccl_socket_ifname is not set; it is required '
                                                    'for every node of the PoD (value: None).')
    assert _problems(hostvars, dict(SPEC, required=['npuops_npu_ports'])) == []


def test_host_not_in_inventory():
    problem = _one(_problems(_hostvars(), hosts=['a2-node01', 'a2-node02', 'a2-node09']))
    assert problem == {'host': 'a2-node09', 'variable': None, 'value': None, 'problem': 'a2-node09 is not a host of this inventory.'}


# --- npuops_npu_ports -------------------------------------------------------------------------------

def test_ports_not_a_list():
    hostvars = _hostvars()
    hostvars['a2-node01']['npuops_npu_ports'] = '10.20.0.11'
    problem = _one(_problems(hostvars))
    assert problem['problem'] == "a2-node01: npuops_npu_ports must be a list of {device, address, netmask} (value: '10.20.0.11')."


def test_port_with_wrong_keys():
    hostvars = _hostvars()
    hostvars['a2-node01']['npuops_npu_ports'][3] = {'device': 3, 'ip': '10.20.3.11', 'netmask': '255.255.0.0'}
    problems = _problems(hostvars)
    assert [p['problem'].split(' (value')[0] for p in problems] == [
        'a2-node01: npuops_npu_ports item 3 must have exactly the keys device, address and netmask',
        'a2-node01: npuops_npu_ports has no port for NPU 3 (every NPU 0-7 needs exactly one)']


@pytest.mark.parametrize('device', [8, -1, '3', True, None])
def test_port_device_out_of_range(device):
    hostvars = _hostvars()
    hostvars['a2-node01']['npuops_npu_ports'][7]['device'] = device
    problems = _problems(hostvars)
    assert 'item 7 has device %r, not an NPU id from 0 to 7' % (device,) in problems[0]['problem']
    assert problems[1]['problem'].startswith('a2-node01: npuops_npu_ports has no port for NPU 7')


def test_port_device_twice_and_missing():
    hostvars = _hostvars()
    hostvars['a2-node02']['npuops_npu_ports'][5]['device'] = 4
    texts = [p['problem'] for p in _problems(hostvars)]
    assert texts[0].startswith('a2-node02: npuops_npu_ports lists NPU 4 twice (items 4 and 5)')
    assert texts[1].startswith('a2-node02: npuops_npu_ports has no port for NPU 5 (every NPU 0-7 needs exactly one)')


def test_fewer_npus_per_node():
    hostvars = _hostvars()
    for host in HOSTS:
        hostvars[host]['npuops_npu_ports'] = hostvars[host]['npuops_npu_ports'][:4]
    assert _problems(hostvars, dict(SPEC, npus_per_node=4)) == []
    assert 'has no port for NPU 4, 5, 6, 7' in _problems(hostvars)[0]['problem']


@pytest.mark.parametrize('address', ['10.20.300.1', '10.20.1', '10.20.0.011', 'fe80::1', 12, ''])
def test_port_address_not_ipv4(address):
    hostvars = _hostvars()
    hostvars['a2-node01']['npuops_npu_ports'][0]['address'] = address
    problem = _one(_problems(hostvars))
    assert 'NPU 0 has address %r, not an IPv4 address' % (address,) in problem['problem']


@pytest.mark.parametrize('netmask', ['255.0.255.0', '0.0.0.0', '16', '255.255.0.0.0'])
def test_port_netmask_invalid(netmask):
    hostvars = _hostvars()
    hostvars['a2-node01']['npuops_npu_ports'][0]['netmask'] = netmask
    problem = _one(_problems(hostvars))
    assert 'NPU 0 has netmask %r, not an IPv4 netmask' % netmask in problem['problem']


@pytest.mark.parametrize('address, which', [('10.20.0.0', 'network'), ('10.20.255.255', 'broadcast')])
def test_port_network_or_broadcast_address(address, which):
    hostvars = _hostvars()
    hostvars['a2-node01']['npuops_npu_ports'][0]['address'] = address
    problem = _one(_problems(hostvars))
    assert problem['problem'].startswith('a2-node01: npuops_npu_ports NPU 0 address %s is the %s address of 10.20.0.0/16, '
                                         'not a host address' % (address, which))


def test_port_host_address_of_a_small_subnet_passes():
    hostvars = _hostvars()
    for host in HOSTS:
        for port in hostvars[host]['npuops_npu_ports']:
            port['netmask'] = '255.255.255.0'
    hostvars['a2-node01']['npuops_npu_ports'][0]['address'] = '10.20.0.255'
    assert 'broadcast address of 10.20.0.0/24' in _one(_problems(hostvars))['problem']
    hostvars['a2-node01']['npuops_npu_ports'][0]['address'] = '10.20.0.254'
    assert _problems(hostvars) == []


def test_port_outside_the_parameter_plane():
    hostvars = _hostvars()
    hostvars['a2-node02']['npuops_npu_ports'][6]['address'] = '10.21.6.12'
    problem = _one(_problems(hostvars))
    assert problem['problem'].startswith('a2-node02: npuops_npu_ports NPU 6 address 10.21.6.12 is outside the parameter plane 10.20.0.0/16')
    assert problem['value'] == {'device': 6, 'address': '10.21.6.12', 'netmask': '255.255.0.0'}
    assert _problems(hostvars, dict(SPEC, parameter_plane='10.0.0.0/8')) == []


def test_one_netmask_across_the_pod():
    hostvars = _hostvars()
    for port in hostvars['a2-node02']['npuops_npu_ports'][:2]:
        port['netmask'] = '255.255.255.0'
    problems = _problems(hostvars)
    assert [p['problem'].split(' (value')[0] for p in problems] == [
        'a2-node02: npuops_npu_ports NPU 0 has netmask 255.255.255.0 but the PoD uses one netmask, 255.255.0.0 on 14 of 16 ports',
        'a2-node02: npuops_npu_ports NPU 1 has netmask 255.255.255.0 but the PoD uses one netmask, 255.255.0.0 on 14 of 16 ports']


def test_address_used_twice_across_the_pod_names_both_hosts_and_devices():
    hostvars = _hostvars()
    hostvars['a2-node02']['npuops_npu_ports'][3]['address'] = hostvars['a2-node01']['npuops_npu_ports'][5]['address']
    problem = _one(_problems(hostvars))
    assert problem['problem'].startswith('a2-node02: npuops_npu_ports NPU 3 address 10.20.5.11 is also used by NPU 5 on a2-node01')


def test_address_used_twice_on_one_host():
    hostvars = _hostvars()
    hostvars['a2-node01']['npuops_npu_ports'][1]['address'] = '10.20.0.11'
    assert 'NPU 1 address 10.20.0.11 is also used by NPU 0 on a2-node01' in _one(_problems(hostvars))['problem']


def test_without_a_parameter_plane_addresses_are_not_placed():
    hostvars = _hostvars()
    hostvars['a2-node02']['npuops_npu_ports'][6]['address'] = '172.16.6.12'
    spec = dict(SPEC)
    del spec['parameter_plane']
    assert _problems(hostvars, spec) == []


# --- npuops_hccl_if_ip ------------------------------------------------------------------------------

@pytest.mark.parametrize('value', ['192.168.1.300', 'node01', '192.168.1', 8])
def test_hccl_if_ip_not_an_address(value):
    hostvars = _hostvars()
    hostvars['a2-node01']['npuops_hccl_if_ip'] = value
    problem = _one(_problems(hostvars))
    assert problem['problem'] == 'a2-node01: npuops_hccl_if_ip is not an IP address (value: %r).' % (value,)


def test_hccl_if_ip_inside_the_parameter_plane():
    hostvars = _hostvars()
    hostvars['a2-node01']['npuops_hccl_if_ip'] = '10.20.0.11'
    problem = _one(_problems(hostvars))
    assert problem['problem'].startswith('a2-node01: npuops_hccl_if_ip lies inside the parameter plane 10.20.0.0/16')


def test_hccl_if_ip_ipv6_passes():
    hostvars = _hostvars()
    hostvars['a2-node01']['npuops_hccl_if_ip'] = 'fd00::11'
    assert _problems(hostvars) == []


# --- npuops_hccl_socket_ifname ----------------------------------------------------------------------

@pytest.mark.parametrize('value', ['enp189s0f0', 'eth,enp', '=eth0', '=eth0,eth1', '^lo,docker0', '^=virbr0', '^br-', 'bond0.100', 'eth0:1'])
def test_socket_ifname_valid(value):
    hostvars = _hostvars()
    hostvars['a2-node01']['npuops_hccl_socket_ifname'] = value
    assert _problems(hostvars) == []


@pytest.mark.parametrize('value, why', [
    ('lo', 'lo is a loopback or bridge interface'),
    ('=docker0', 'docker0 is a loopback or bridge interface'),
    ('eth0,virbr0', 'virbr0 is a loopback or bridge interface'),
    ('=br-3f2a1b0c', 'br-3f2a1b0c is a loopback or bridge interface'),
    ('l', 'the prefix l also matches lo'),
    ('br', 'the prefix br also matches br-*'),
    ('e,d', 'the prefix d also matches docker0'),
])
def test_socket_ifname_selects_a_forbidden_interface(value, why):
    hostvars = _hostvars()
    hostvars['a2-node01']['npuops_hccl_socket_ifname'] = value
    problem = _one(_problems(hostvars))
    assert problem['problem'] == ('a2-node01: npuops_hccl_socket_ifname selects an interface HCCL must not use: %s (value: %r).'
                                  % (why, value))


@pytest.mark.parametrize('value', ['eth0 eth1', 'eth0,', '^', '==eth0', 'averyveryverylongname0', 'eth/0', 3, '   '])
def test_socket_ifname_not_valid(value):
    hostvars = _hostvars()
    hostvars['a2-node01']['npuops_hccl_socket_ifname'] = value
    problem = _one(_problems(hostvars))
    assert problem['variable'] == 'npuops_hccl_socket_ifname'
    assert ('is not a valid HCCL_SOCKET_IFNAME value' in problem['problem']
            or 'must be a non-empty string of interface names' in problem['problem'])


# --- ranges -----------------------------------------------------------------------------------------

@pytest.mark.parametrize('name, value', [('npuops_lossless_priority', 8), ('npuops_lossless_dscp', -1), ('npuops_mtu', 9703),
                                         ('npuops_mtu', 67), ('npuops_mtu', '10000')])
def test_ranged_value_outside(name, value):
    hostvars = _hostvars()
    hostvars['a2-node02'][name] = value
    low, high = SPEC['ranges'][name]
    assert _one(_problems(hostvars))['problem'] == 'a2-node02: %s is outside the range %d to %d (value: %r).' % (name, low, high, value)


@pytest.mark.parametrize('value', [4.5, 'four', True, [4]])
def test_ranged_value_not_an_integer(value):
    hostvars = _hostvars()
    hostvars['a2-node02']['npuops_lossless_priority'] = value
    assert _one(_problems(hostvars))['problem'] == ('a2-node02: npuops_lossless_priority must be an integer from 0 to 7 (value: %r).'
                                                    % (value,))


@pytest.mark.parametrize('name, value', [('npuops_lossless_priority', 0), ('npuops_lossless_priority', 7), ('npuops_mtu', 68),
                                         ('npuops_mtu', 9702), ('npuops_lossless_dscp', 63)])
def test_ranged_value_bounds_pass(name, value):
    hostvars = _hostvars()
    hostvars['a2-node02'][name] = value
    assert _problems(hostvars) == []


def test_unset_ranged_variable_is_not_a_problem():
    hostvars = _hostvars()
    del hostvars['a2-node02']['npuops_mtu']
    assert _problems(hostvars) == []


def test_every_problem_names_host_variable_and_value():
    hostvars = copy.deepcopy(_hostvars())
    hostvars['a2-node01']['npuops_mtu'] = 20000
    hostvars['a2-node01']['npuops_hccl_socket_ifname'] = 'lo'
    hostvars['a2-node02']['npuops_npu_ports'][0]['address'] = '10.20.0.0'
    problems = _problems(hostvars)
    assert len(problems) == 3
    for problem in problems:
        assert set(problem) == {'host', 'variable', 'value', 'problem'}
        assert problem['problem'].startswith(problem['host'] + ': ' + problem['variable'] + ' ')
        assert '(value: ' in problem['problem']


# --- argument errors --------------------------------------------------------------------------------

@pytest.mark.parametrize('hostvars, hosts, spec, message', [
    ([], HOSTS, SPEC, 'the first argument must be hostvars, got list'),
    ({}, 'a2-node01', SPEC, "hosts must be a list of inventory hostnames, got 'a2-node01'"),
    ({}, [1], SPEC, 'hosts must be a list of inventory hostnames'),
    ({}, HOSTS, 'spec', "spec must be a dict, got str 'spec'"),
    ({}, HOSTS, dict(SPEC, parameter_planes='10.0.0.0/8'), 'unknown spec key parameter_planes; known keys: parameter_plane, npus_per_node'),
    ({}, HOSTS, dict(SPEC, parameter_plane='10.20.0.0/33'), "parameter_plane '10.20.0.0/33' is not an IPv4 CIDR"),
    ({}, HOSTS, dict(SPEC, parameter_plane='fd00::/8'), "parameter_plane 'fd00::/8' is not an IPv4 CIDR"),
    ({}, HOSTS, dict(SPEC, npus_per_node=0), 'npus_per_node must be a positive integer, got 0'),
    ({}, HOSTS, dict(SPEC, required='npuops_mtu'), "required must be a list of variable names, got 'npuops_mtu'"),
    ({}, HOSTS, dict(SPEC, ranges=[0, 7]), 'ranges must be a dict of variable: \\[low, high\\]'),
    ({}, HOSTS, dict(SPEC, ranges={'npuops_mtu': [9702, 68]}), 'the range of npuops_mtu must be \\[low, high\\] with integers low <= high'),
    ({}, HOSTS, dict(SPEC, ranges={'npuops_mtu': [68]}), 'the range of npuops_mtu must be'),
])
def test_argument_errors(hostvars, hosts, spec, message):
    with pytest.raises(AnsibleFilterError, match=message):
        pod_problems(hostvars, hosts, spec)


# --- inventory host names ---------------------------------------------------------------------------

def _renamed(old, new):
    hostvars = _hostvars()
    hostvars[new] = hostvars.pop(old)
    return hostvars, [new if host == old else host for host in HOSTS]


@pytest.mark.parametrize('name, why', [
    ('../../../tmp/x', "'/'"),
    ('node/01', "'/'"),
    ('node01;touch pwned', "';'"),
    ('node01$(id)', "'$'"),
    ('node 01', "' '"),
    ('node\t01', "'\\t'"),
    ('node\n01', "'\\n'"),
    ('node\x1b[31m01', "'\\x1b'"),
    ('node\u202e10', "'\\u202e'"),
    ('node\\01', "'\\\\'"),
    ('a..b', "'..'"),
    ('..', "'..'"),
    ('.', 'starts with .'),
    ('.hidden', 'starts with .'),
    ('-rf', 'starts with -'),
    ('n' * 201, '201 bytes'),
    ('节' * 67, '201 bytes'),
])
def test_a_host_name_that_cannot_name_a_report_file_is_refused(name, why):
    hostvars, hosts = _renamed('a2-node02', name)
    problem = _one(_problems(hostvars, hosts=hosts))
    assert (problem['host'], problem['variable'], problem['value']) == (name, 'inventory_hostname', name)
    text = problem['problem']
    assert text.startswith('%r: the inventory host name is not usable' % name), text
    assert why in text, text
    # the rule is stated, and what to do
    assert 'letters and digits (any script)' in text and "rename the host in the inventory" in text, text


@pytest.mark.parametrize('name', ['nöde01-节点', 'a2-node09', 'node_01', 'node01.pod.example', '10.0.0.11', 'fd00::11',
                                  'नोड01', 'n' * 200, 'NODE01'])
def test_usable_host_names_pass(name):
    hostvars, hosts = _renamed('a2-node02', name)
    assert _problems(hostvars, hosts=hosts) == []


# --- one subnet per NPU of a node (rail layout) -------------------------------------------------------

def _rail_hostvars(hosts=None):
    """NPU d of node n at 10.20.d.(10 + n)/24: one /24 per NPU rank, every node on every rail."""
    hosts = HOSTS if hosts is None else hosts
    hostvars = {}
    for index, host in enumerate(hosts, 1):
        node = _node(index)
        node['npuops_npu_ports'] = [{'device': d, 'address': '10.20.%d.%d' % (d, index + 10), 'netmask': '255.255.255.0'}
                                    for d in range(8)]
        hostvars[host] = node
    return hostvars


def test_a_rail_pod_passes():
    assert _problems(_rail_hostvars()) == []


def test_two_npus_of_a_node_in_one_subnet_of_a_rail_pod():
    hostvars = _rail_hostvars()
    hostvars['a2-node02']['npuops_npu_ports'][1]['address'] = '10.20.0.22'
    problem = _one(_problems(hostvars))
    assert (problem['host'], problem['variable']) == ('a2-node02', 'npuops_npu_ports')
    assert problem['problem'].startswith(
        'a2-node02: npuops_npu_ports puts NPU 0 and NPU 1 in one subnet, 10.20.0.0/24: the PoD has the rail layout '
        '(a2-node01 has each NPU in a subnet of its own): NPU d of every node is on rail d, in the subnet of rail d, so each '
        'NPU of a node needs a subnet of its own (value: '), problem['problem']


def test_three_npus_of_a_node_in_one_subnet_are_one_problem():
    hostvars = _rail_hostvars()
    for device in (3, 5):
        hostvars['a2-node01']['npuops_npu_ports'][device]['address'] = '10.20.1.%d' % (100 + device)
    problem = _one(_problems(hostvars))
    assert 'puts NPU 1, NPU 3 and NPU 5 in one subnet, 10.20.1.0/24' in problem['problem']


def test_a_flat_pod_has_every_port_in_one_subnet():
    # _hostvars(): every port of the PoD in 10.20.0.0/16 - the flat layout, where the NPUs of a node share the subnet
    assert _problems(_hostvars()) == []


def test_a_flat_plan_allows_npus_of_a_node_in_one_subnet_even_when_the_ports_say_otherwise():
    hostvars = _rail_hostvars()
    hostvars['a2-node02']['npuops_npu_ports'][1]['address'] = '10.20.0.22'
    for host in HOSTS:
        hostvars[host]['npuops_npu_ip_plan'] = {'network': '10.20.0.0/16', 'layout': 'flat'}
    assert _problems(hostvars) == []


def test_a_rail_plan_refuses_ports_that_put_a_node_in_one_subnet():
    hostvars = _hostvars()   # every port in 10.20.0.0/16: flat ports ...
    for host in HOSTS:
        hostvars[host]['npuops_npu_ip_plan'] = {'network': '10.20.0.0/16', 'prefix': 24}   # ... under a rail plan
    problems = _problems(hostvars)
    assert [p['host'] for p in problems] == HOSTS
    assert 'puts NPU 0, NPU 1, NPU 2, NPU 3, NPU 4, NPU 5, NPU 6 and NPU 7 in one subnet, 10.20.0.0/16: ' \
           'npuops_npu_ip_plan has the rail layout' in problems[0]['problem']


def test_a_node_with_all_npus_in_one_subnet_beside_rail_nodes_is_refused():
    hostvars = _rail_hostvars()
    hostvars['a2-node02']['npuops_npu_ports'] = [{'device': d, 'address': '10.20.0.%d' % (100 + d), 'netmask': '255.255.255.0'}
                                                 for d in range(8)]
    problem = _one(_problems(hostvars))
    assert problem['problem'].startswith('a2-node02: npuops_npu_ports puts NPU 0, NPU 1, NPU 2, NPU 3, NPU 4, NPU 5, NPU 6 '
                                         'and NPU 7 in one subnet, 10.20.0.0/24')


def test_a_port_with_another_netmask_is_reported_once():
    hostvars = _rail_hostvars()
    hostvars['a2-node02']['npuops_npu_ports'][1]['netmask'] = '255.255.0.0'   # 10.20.1.12/16 covers 10.20.0.12 too
    problem = _one(_problems(hostvars))
    assert 'NPU 1 has netmask 255.255.0.0 but the PoD uses one netmask' in problem['problem']


# --- PoD-wide variables: the same on every node -----------------------------------------------------

POD_WIDE = {'npuops_npus_per_node': 8, 'npuops_product_family': 'A2', 'npuops_parameter_plane': None,
            'npuops_pfc_watchdog_action': 'drop'}
THREE = ['a2-node01', 'a2-node02', 'a2-node03']


def _three():
    return {host: _node(index) for index, host in enumerate(THREE, 1)}


def test_pod_wide_values_that_agree_pass():
    hostvars = _three()
    hostvars['a2-node02']['npuops_npus_per_node'] = 8        # set on one node, the default on the others
    hostvars['a2-node03']['npuops_npus_per_node'] = '8'      # an INI value
    assert _problems(hostvars, dict(SPEC, pod_wide=POD_WIDE), THREE) == []


def test_a_pod_wide_value_set_on_one_node_only_is_refused():
    hostvars = _three()
    hostvars['a2-node02']['npuops_pfc_watchdog_action'] = 'forward'
    problem = _one(_problems(hostvars, dict(SPEC, pod_wide=POD_WIDE), THREE))
    assert (problem['host'], problem['variable'], problem['value']) == ('a2-node02', 'npuops_pfc_watchdog_action', 'forward')
    assert problem['problem'] == (
        "npuops_pfc_watchdog_action is 'forward' on a2-node02 but 'drop' on a2-node01, a2-node03: it is PoD-wide (every "
        "node must have the same value); set it once in group_vars, not in host_vars or per host")


def test_a_pod_wide_value_that_differs_names_every_value():
    hostvars = _three()
    hostvars['a2-node01']['npuops_parameter_plane'] = '10.20.0.0/16'
    hostvars['a2-node02']['npuops_parameter_plane'] = '10.21.0.0/16'
    problem = _one(_problems(hostvars, dict(SPEC, parameter_plane=None, pod_wide=POD_WIDE), THREE))
    # a tie: the default (a node that does not set it) is the reference
    assert problem['problem'].startswith("npuops_parameter_plane is '10.20.0.0/16' on a2-node01 and '10.21.0.0/16' on "
                                         "a2-node02 but unset on a2-node03: it is PoD-wide")


def test_a_tie_without_the_default_takes_the_first_node_as_the_reference():
    hostvars = _three()
    for host, family in zip(THREE, ['A3', '910A', 'X']):
        hostvars[host]['npuops_product_family'] = family   # none has the default, A2
    problem = _one(_problems(hostvars, dict(SPEC, pod_wide=POD_WIDE), THREE))
    assert problem['problem'].startswith("npuops_product_family is '910A' on a2-node02 and 'X' on a2-node03 but 'A3' on "
                                         "a2-node01: it is PoD-wide")


def test_a_long_list_of_nodes_is_cut():
    hosts = ['n%02d' % index for index in range(1, 21)]
    hostvars = {host: _node(index) for index, host in enumerate(hosts, 1)}
    hostvars['n07']['npuops_npus_per_node'] = 16
    problem = _one(_problems(hostvars, {'pod_wide': POD_WIDE, 'npus_per_node': 8}, hosts))
    assert problem['problem'].startswith('npuops_npus_per_node is 16 on n07 but 8 on n01, n02, n03, n04, n05, n06, n08, n09 '
                                         'and 11 other nodes: it is PoD-wide')


@pytest.mark.parametrize('pod_wide, message', [
    (['npuops_mtu'], 'pod_wide must be a dict of variable: default value'),
    ({3: 1}, 'pod_wide must be a dict of variable: default value'),
])
def test_pod_wide_argument_errors(pod_wide, message):
    with pytest.raises(AnsibleFilterError, match=message):
        pod_problems({}, HOSTS, dict(SPEC, pod_wide=pod_wide))
