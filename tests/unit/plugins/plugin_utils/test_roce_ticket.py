"""The change of stage 4 (plugins/plugin_utils/roce/ticket.py): the change ticket of a dry run, its link flaps from the
port table, and the ports a one-pass change changed per setting."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.ticket import LINK_AFFECTING, changed_ports, link_flaps, roce_change_ticket
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils.roce_samples import MASK, ONE_PASS, dscp


# ---- roce_change_ticket ---------------------------------------------------------------------------------------------

PLANS = {
    'node01': {
        'changed': False,
        'before': [{'device': 0, 'mtu': 1500, 'pfc_priorities': [], 'dscp_to_tc': dscp(0)},
                   {'device': 1, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': dscp(0)},
                   {'device': 2, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': dscp(3)}],
        'after': [{'device': 0, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': dscp(3)},
                  {'device': 1, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': dscp(3)},
                  {'device': 2, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': dscp(3)}],
        'commands': ['hccn_tool -i 0 -mtu -s size 9000', 'hccn_tool -i 0 -pfc -s bitmap 0,0,0,0,1,0,0,0',
                     'hccn_tool -i 0 -dscp_to_tc -s dscp 33 tc 3', 'hccn_tool -i 1 -dscp_to_tc -s dscp 33 tc 3'],
        'busy': [{'device': 0, 'pid': 16143, 'name': 'python3'}],
    },
    'node02': {
        'changed': False,
        'before': [{'device': 0, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': dscp(3)}],
        'after': [{'device': 0, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': dscp(3)}],
        'commands': [],
    },
    'node03': {'failed': True, 'msg': 'NPU 2 on node03: mtu not read: Execute failed: Link status is down. (rc=22)'},
}


def test_change_ticket():
    assert roce_change_ticket(PLANS) == [
        'Change ticket (roce_lossless): 1 node(s) of 3 change, 2 port(s), 2 link flap(s) in all (each MTU or PFC set takes '
        'its port down for a few seconds)',
        'node01: 2 port(s) change, 4 command(s)',
        '  NPU 0: DSCP 33 -> TC 3 (was 0); mtu 1500 -> 9000; pfc_priorities [] -> [4]; 2 link flaps',
        '  NPU 1: DSCP 33 -> TC 3 (was 0); 0 link flaps',
        '  NPU 0 runs pid 16143 (python3): the change is refused there unless roce_lossless_allow_busy=true',
        'node02: no change',
        'node03: not planned: NPU 2 on node03: mtu not read: Execute failed: Link status is down. (rc=22)',
    ]


def test_change_ticket_of_the_address_and_of_a_dscp_missing_before():
    plans = {'node04': {'before': [{'device': 3, 'address': '10.20.3.99', 'netmask': MASK, 'dscp_to_tc': []}],
                        'after': [{'device': 3, 'address': '10.20.3.14', 'netmask': MASK, 'dscp_to_tc': dscp(3)}],
                        'commands': ['hccn_tool -i 3 -ip -s address 10.20.3.14 netmask 255.255.255.0',
                                     'hccn_tool -i 3 -dscp_to_tc -s dscp 33 tc 3']}}
    assert roce_change_ticket(plans, 'window 2') == [
        'Change ticket (window 2): 1 node(s) of 1 change, 1 port(s), 0 link flap(s) in all (each MTU or PFC set takes its '
        'port down for a few seconds)',
        'node04: 1 port(s) change, 2 command(s)',
        '  NPU 3: address 10.20.3.99 -> 10.20.3.14; DSCP 33 -> TC 3 (was unset); 0 link flaps']


def test_change_ticket_counts_the_flaps_of_npu_1_apart_from_npu_10():
    before = [{'device': d, 'mtu': 1500, 'pfc_priorities': [4]} for d in range(16)]
    after = [{'device': d, 'mtu': 9000 if d in (1, 10) else 1500, 'pfc_priorities': [4] if d != 10 else [3, 4]}
             for d in range(16)]
    commands = ['hccn_tool -i 1 -mtu -s size 9000',
                'hccn_tool -i 10 -mtu -s size 9000', 'hccn_tool -i 10 -pfc -s bitmap 0,0,0,1,1,0,0,0']
    lines = roce_change_ticket({'node16': {'before': before, 'after': after, 'commands': commands}})
    assert lines[1:] == ['node16: 2 port(s) change, 3 command(s)',
                         '  NPU 1: mtu 1500 -> 9000; 1 link flap',
                         '  NPU 10: mtu 1500 -> 9000; pfc_priorities [4] -> [3, 4]; 2 link flaps']
    assert lines[0].startswith('Change ticket (roce_lossless): 1 node(s) of 1 change, 2 port(s), 3 link flap(s) in all')


def test_change_ticket_of_a_one_pass_change_counts_one_flap_per_port():
    lines = roce_change_ticket(PLANS, together=True)
    assert lines[0] == ('Change ticket (roce_lossless): 1 node(s) of 3 change, 2 port(s), 1 link flap(s) in all (the settings '
                        'of a port are set in one pass, which takes the port down once for a few seconds)')
    assert lines[2] == '  NPU 0: DSCP 33 -> TC 3 (was 0); mtu 1500 -> 9000; pfc_priorities [] -> [4]; 1 link flap'
    # a port without an MTU or PFC set does not flap in one pass either
    assert lines[3] == '  NPU 1: DSCP 33 -> TC 3 (was 0); 0 link flaps'


@pytest.mark.parametrize('result, text', [
    (None, 'no result'), ({'skipped': True, 'skip_reason': 'Conditional result was False'}, 'no result'),
    ('junk', 'no result'), ({'failed': True}, 'no result')])
def test_change_ticket_of_a_node_without_a_plan(result, text):
    assert roce_change_ticket({'node05': result})[1:] == ['node05: not planned: %s' % text]


def test_change_ticket_wants_a_dict():
    with pytest.raises(AnsibleFilterError, match=r'^roce_change_ticket: expects a dict \{host: registered hccn_config result\}$'):
        roce_change_ticket([PLANS['node01']])


# ---- link flaps: from the settings that change, as the port table knows them -------------------------------------

def test_the_settings_whose_set_bounces_the_link_are_mtu_and_pfc():
    assert LINK_AFFECTING == (('mtu',), ('pfc_priorities',))


@pytest.mark.parametrize('before, after, together, flaps', [
    ({'mtu': 1500}, {'mtu': 9000}, False, 1),
    ({'pfc_priorities': [3, 4]}, {'pfc_priorities': [4]}, False, 1),
    ({'mtu': 1500, 'pfc_priorities': []}, {'mtu': 9000, 'pfc_priorities': [4]}, False, 2),
    ({'mtu': 1500, 'pfc_priorities': []}, {'mtu': 9000, 'pfc_priorities': [4]}, True, 1),
    # the address, the DSCP map and TLS are set without taking the link down
    ({'address': '10.20.0.10', 'netmask': MASK, 'dscp_to_tc': dscp(0), 'tls': True},
     {'address': '10.20.0.11', 'netmask': MASK, 'dscp_to_tc': dscp(3), 'tls': False}, False, 0),
    ({'mtu': 9000, 'pfc_priorities': [4]}, {'mtu': 9000, 'pfc_priorities': [4]}, True, 0),
])
def test_link_flaps_of_one_port(before, after, together, flaps):
    assert link_flaps(before, after, together) == flaps


def test_a_plan_without_its_command_text_counts_the_flaps_of_the_settings_that_change():
    plan = {'before': [{'device': 0, 'mtu': 1500, 'pfc_priorities': []}, {'device': 1, 'mtu': 9000, 'dscp_to_tc': dscp(0)}],
            'after': [{'device': 0, 'mtu': 9000, 'pfc_priorities': [4]}, {'device': 1, 'mtu': 9000, 'dscp_to_tc': dscp(3)}]}
    lines = roce_change_ticket({'node01': plan})
    assert lines[0].startswith('Change ticket (roce_lossless): 1 node(s) of 1 change, 2 port(s), 2 link flap(s) in all')
    assert lines[1:] == ['node01: 2 port(s) change, 0 command(s)',
                         '  NPU 0: mtu 1500 -> 9000; pfc_priorities [] -> [4]; 2 link flaps',
                         '  NPU 1: DSCP 33 -> TC 3 (was 0); 0 link flaps']


def test_a_command_text_that_names_an_mtu_set_is_no_flap_when_the_mtu_stays():
    plan = {'before': [{'device': 0, 'mtu': 9000, 'dscp_to_tc': dscp(0)}],
            'after': [{'device': 0, 'mtu': 9000, 'dscp_to_tc': dscp(3)}],
            'commands': ['hccn_tool -i 0 -dscp_to_tc -s dscp 33 tc 3', 'hccn_tool -i 0 -mtu -s size 9000']}
    assert roce_change_ticket({'node01': plan})[1:] == ['node01: 1 port(s) change, 2 command(s)',
                                                        '  NPU 0: DSCP 33 -> TC 3 (was 0); 0 link flaps']


# ---- changed_ports --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('keys, devices', [
    ('mtu', [0, 3]), ('pfc_priorities', [0, 1, 3]), ('dscp_to_tc', [0, 3]), (['mtu', 'dscp_to_tc'], [0, 3]),
    # not asked for, so never changed
    (['address', 'netmask'], []), ([], [])])
def test_changed_ports_per_setting_of_a_one_pass_result(keys, devices):
    assert changed_ports(ONE_PASS, keys) == devices


@pytest.mark.parametrize('result', [None, 'junk', {'changed': False, 'skipped': True},
                                    {'changed': False, 'before': ONE_PASS['before'], 'after': ONE_PASS['before']}])
def test_changed_ports_of_a_result_that_changed_nothing(result):
    assert changed_ports(result, 'mtu') == []
