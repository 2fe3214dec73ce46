"""The NPU ports of a node against the lossless intent (plugins/plugin_utils/roce/verify.py): after the change,
before it (the precheck), the PFC pause counters between two reads and HCCL_RDMA_SL / HCCL_RDMA_TC as a launch sees
them, each message as a whole sentence."""

from __future__ import annotations

import copy

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.verify import (
    hccl_alignment_findings,
    pfc_steady_findings,
    roce_port_findings,
    roce_precheck_findings,
)
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils.roce_samples import H, INTENT, MASK, PFC_STAT, PLAN, info, only, port


# ---- roce_port_findings -------------------------------------------------------------------------------------------

def test_ports_that_hold_the_intent_have_no_finding():
    assert roce_port_findings(info(), INTENT, H, list(range(8))) == []


def test_intent_given_as_strings_of_digits_is_accepted():
    intent = dict(INTENT, mtu='9000', lossless_priority='4', lossless_dscp='33', lossless_tc='3')
    assert roce_port_findings(info(), intent, H) == []


def test_link_down():
    assert roce_port_findings(info(npu3=port(link='DOWN')), INTENT, H) == [
        {'host': H, 'device': 3, 'check': 'link', 'value': 'DOWN', 'expected': 'UP', 'severity': 'fail',
         'msg': 'node01 NPU 3: link is DOWN, expected UP'}]


def test_wrong_mtu():
    assert roce_port_findings(info(npu0=port(mtu=1500)), INTENT, H) == [
        {'host': H, 'device': 0, 'check': 'mtu', 'value': 1500, 'expected': 9000, 'severity': 'fail',
         'msg': 'node01 NPU 0: MTU is 1500, expected 9000 (npuops_mtu)'}]


@pytest.mark.parametrize('have, enabled', [([3], '3'), ([], 'none'), ([0, 3], '0, 3')])
def test_pfc_not_on_the_lossless_priority(have, enabled):
    assert roce_port_findings(info(npu5=port(pfc_priorities=have)), INTENT, H) == [
        {'host': H, 'device': 5, 'check': 'pfc', 'value': have, 'expected': [4], 'severity': 'fail',
         'msg': 'node01 NPU 5: PFC is not enabled on priority 4 (enabled: %s), so HCCL_RDMA_SL=4 traffic is not lossless'
                % enabled}]


def test_pfc_on_more_priorities_than_the_lossless_one_is_a_warning():
    assert only(roce_port_findings(info(npu2=port(pfc_priorities=[3, 4])), INTENT, H)) == [
        (2, 'pfc', 'warn',
         'node01 NPU 2: PFC is enabled on priorities 3, 4, more than the lossless priority 4 (npuops_lossless_priority)')]


@pytest.mark.parametrize('table', [[{'dscp': 33, 'tc': 0}, {'dscp': 48, 'tc': 3}], {'33': 0, '48': 3}])
def test_lossless_dscp_on_another_traffic_class(table):
    assert roce_port_findings(info(npu7=port(dscp_to_tc=table)), INTENT, H) == [
        {'host': H, 'device': 7, 'check': 'dscp_to_tc', 'value': 0, 'expected': 3, 'severity': 'fail',
         'msg': 'node01 NPU 7: DSCP 33 maps to TC 0, expected the lossless TC 3, so HCCL_RDMA_TC=132 traffic leaves '
                'the lossless queue'}]


def test_pfc_and_dscp_map_that_could_not_be_read():
    found = roce_port_findings(info(npu1=port(pfc_priorities=None, dscp_to_tc=None)), INTENT, H)
    assert only(found) == [(1, 'pfc', 'fail', 'node01 NPU 1: PFC could not be read'),
                           (1, 'dscp_to_tc', 'fail', 'node01 NPU 1: the DSCP map could not be read')]
    assert [(f['value'], f['expected']) for f in found] == [(None, [4]), (None, {33: 3})]


def test_a_port_that_was_not_read_back():
    ports = info()
    del ports['devices']['6']
    assert roce_port_findings(ports, INTENT, H, [0, 1, 2, 3, 4, 5, 6, 7]) == [
        {'host': H, 'device': 6, 'check': 'port', 'value': None, 'expected': 'read', 'severity': 'fail',
         'msg': 'node01 NPU 6: the port was not read back'}]
    # without devices only the ports that were read are checked
    assert roce_port_findings(ports, INTENT, H) == []


def test_devices_given_as_strings_and_the_default_host():
    assert only(roce_port_findings(info(npu4=port(mtu=1500)), INTENT, devices=['4', '5'])) == [
        (4, 'mtu', 'fail', 'this node NPU 4: MTU is 1500, expected 9000 (npuops_mtu)')]


def test_the_config_list_of_a_check_mode_plan_gives_the_same_findings():
    ports = info(npu0=port(mtu=1500), npu2=port(link='DOWN', pfc_priorities=[]))
    config = [dict(entry, device=int(dev)) for dev, entry in ports['devices'].items()]
    assert roce_port_findings(config, INTENT, H, range(8)) == roce_port_findings(ports, INTENT, H, range(8))
    assert [(f['device'], f['check']) for f in roce_port_findings(config, INTENT, H, range(8))] == [
        (0, 'mtu'), (2, 'link'), (2, 'pfc')]


def test_only_what_was_read_is_checked():
    ports = info(ports={0: {'mtu': 1500}, 1: {'link': 'UP'}})
    assert only(roce_port_findings(ports, INTENT, H)) == [(0, 'mtu', 'fail', 'node01 NPU 0: MTU is 1500, expected 9000 (npuops_mtu)')]


@pytest.mark.parametrize('intent, message', [
    (None, r'roce_port_findings: intent must be a dict with mtu, lossless_priority, lossless_dscp and lossless_tc, got None'),
    ({'mtu': 9000, 'lossless_priority': 4, 'lossless_dscp': 33},
     r"roce_port_findings: intent needs integer mtu, lossless_priority, lossless_dscp and lossless_tc \('lossless_tc'\); "
     r'validate it with npuops.ascend.roce_intent_problems first'),
    (dict(INTENT, mtu='jumbo'), r'roce_port_findings: intent needs integer mtu, .*invalid literal.*roce_intent_problems first'),
    (dict(INTENT, lossless_tc=None), r'roce_port_findings: intent needs integer mtu, .*NoneType.*roce_intent_problems first'),
])
def test_a_bad_intent_is_an_error(intent, message):
    with pytest.raises(AnsibleFilterError, match=message):
        roce_port_findings(info(), intent, H)


# ---- roce_precheck_findings -----------------------------------------------------------------------------------------

def ip_info(**by_device):
    """An hccn_info result of [link, ip, mtu, pfc, dscp_to_tc] on the planned addresses."""
    ports = dict((d, port(address='10.20.%d.11' % d, netmask=MASK)) for d in range(8))
    result = info(ports)
    for key, entry in by_device.items():
        result['devices'][key[3:]] = entry
    return result


def test_precheck_of_a_ready_node_has_no_finding():
    assert roce_precheck_findings(ip_info(), [], H, PLAN, False) == []


def test_precheck_link_down():
    assert roce_precheck_findings(ip_info(npu2=port(link='DOWN', address='10.20.2.11', netmask=MASK)), [], H, PLAN) == [
        {'host': H, 'device': 2, 'check': 'link', 'value': 'DOWN', 'expected': 'UP', 'severity': 'fail',
         'msg': 'node01 NPU 2: link is DOWN before the change: stage 4 does not tune a broken port; fix the cable, optics or '
                'switch port (stage 0 lists them) and run again'}]


def test_precheck_address_that_differs_from_the_plan():
    before = ip_info(npu3=port(address='10.20.3.99', netmask=MASK), npu4=port(address=None, netmask=None))
    found = roce_precheck_findings(before, [], H, PLAN)
    assert [(f['device'], f['check'], f['value'], f['expected'], f['severity']) for f in found] == [
        (3, 'address', '10.20.3.99/255.255.255.0', '10.20.3.11/255.255.255.0', 'fail'),
        (4, 'address', None, '10.20.4.11/255.255.255.0', 'fail')]
    assert found[0]['msg'] == (
        'node01 NPU 3: the port has 10.20.3.99/255.255.255.0, the plan (npuops_npu_ports / npuops_npu_ip_plan) says '
        '10.20.3.11/255.255.255.0: fix the plan, or set roce_lossless_addresses=apply to set the planned address')
    assert found[1]['msg'].startswith('node01 NPU 4: the port has no address, the plan (npuops_npu_ports / '
                                      'npuops_npu_ip_plan) says 10.20.4.11/255.255.255.0: ')


def test_precheck_without_a_plan_does_not_look_at_the_addresses():
    assert roce_precheck_findings(ip_info(npu3=port(address='10.20.3.99', netmask=MASK)), [], H, None) == []


PROCESSES = [{'npu': 0, 'chip': 0, 'pid': 16143, 'name': 'python3', 'memory_mb': 43095},
             {'npu': 5, 'chip': 0, 'pid': 16150, 'name': 'python3', 'memory_mb': 43095}]


def test_precheck_busy_npus_stop_the_change():
    assert only(roce_precheck_findings(ip_info(), PROCESSES, H, PLAN)) == [
        (0, 'busy', 'fail', 'node01 NPU 0: pid 16143 (python3) runs on the NPU: its RDMA connections break while the links '
                            'flap; stop the job first, or set roce_lossless_allow_busy=true'),
        (5, 'busy', 'fail', 'node01 NPU 5: pid 16150 (python3) runs on the NPU: its RDMA connections break while the links '
                            'flap; stop the job first, or set roce_lossless_allow_busy=true')]


def test_precheck_busy_npus_with_allow_busy_are_warnings():
    found = roce_precheck_findings(ip_info(), PROCESSES[:1], H, PLAN, True)
    assert found == [{'host': H, 'device': 0, 'check': 'busy', 'value': 16143, 'expected': 'no process', 'severity': 'warn',
                      'msg': 'node01 NPU 0: pid 16143 (python3) runs on the NPU: its RDMA connections break while the links '
                             'flap; changing it anyway because roce_lossless_allow_busy=true'}]


@pytest.mark.parametrize('before, text', [
    ({'failed': True, 'msg': 'hccn_tool was not found in /usr/local/Ascend/driver/tools'},
     'hccn_tool was not found in /usr/local/Ascend/driver/tools'),
    (None, 'no result'),
    ({'changed': False}, 'no result'),
])
def test_precheck_of_ports_that_could_not_be_read(before, text):
    assert roce_precheck_findings(before, PROCESSES, H, PLAN) == [
        {'host': H, 'device': None, 'check': 'ports', 'value': None, 'expected': 'read', 'severity': 'fail',
         'msg': 'node01: the NPU ports could not be read: %s' % text}]


def test_precheck_queries_hccn_info_could_not_answer():
    error = {'device': 3, 'query': 'pfc', 'cmd': 'hccn_tool -i 3 -pfc -g', 'rc': 22, 'stdout': '',
             'stderr': 'Execute failed: Link status is down.',
             'msg': 'NPU 3 on node01: pfc not read: Execute failed: Link status is down. (rc=22)'}
    before = ip_info(npu3=port(address='10.20.3.11', netmask=MASK, pfc_priorities=None))
    before['errors'] = [error]
    assert only(roce_precheck_findings(before, [], H, PLAN)) == [
        (3, 'pfc', 'fail', 'node01 NPU 3: could not read pfc before the change: Execute failed: Link status is down. (rc=22)')]


# ---- hccl_alignment_findings ----------------------------------------------------------------------------------------

ENV_FILE = '/etc/profile.d/npuops-hccl.sh'


def test_hccl_values_that_match_the_intent_have_no_finding():
    assert hccl_alignment_findings({'HCCL_RDMA_SL': '4', 'HCCL_RDMA_TC': '132'}, INTENT, H, ENV_FILE) == []
    assert hccl_alignment_findings({'HCCL_RDMA_SL': 4, 'HCCL_RDMA_TC': 132}, INTENT, H, ENV_FILE) == []


@pytest.mark.parametrize('env', [{}, None, {'HCCL_RDMA_SL': '', 'HCCL_RDMA_TC': None}, 'not a dict'])
def test_unset_hccl_values_have_no_finding(env):
    assert hccl_alignment_findings(env, INTENT, H, ENV_FILE) == []


def test_hccl_rdma_sl_other_than_the_pfc_priority():
    assert hccl_alignment_findings({'HCCL_RDMA_SL': '3', 'HCCL_RDMA_TC': '132'}, INTENT, H, ENV_FILE) == [
        {'host': H, 'device': None, 'check': 'HCCL_RDMA_SL', 'value': '3', 'expected': 4, 'severity': 'fail',
         'msg': 'node01: HCCL_RDMA_SL=3 in /etc/profile.d/npuops-hccl.sh, but PFC is enabled on priority 4: HCCL_RDMA_SL '
                'must equal the PFC priority (run stage 5, hccl_env, to rewrite it)'}]


def test_hccl_rdma_tc_other_than_the_tos_byte_of_the_dscp():
    assert hccl_alignment_findings({'HCCL_RDMA_TC': '128'}, INTENT, H) == [
        {'host': H, 'device': None, 'check': 'HCCL_RDMA_TC', 'value': '128', 'expected': 132, 'severity': 'fail',
         'msg': 'node01: HCCL_RDMA_TC=128 in the HCCL env file, but the lossless DSCP is 33, so it must be 132 (run stage 5, '
                'hccl_env, to rewrite it)'}]


def test_hccl_rdma_tc_set_to_the_dscp_itself_says_so():
    assert only(hccl_alignment_findings({'HCCL_RDMA_SL': '4', 'HCCL_RDMA_TC': '33'}, INTENT, H, ENV_FILE)) == [
        (None, 'HCCL_RDMA_TC', 'fail',
         'node01: HCCL_RDMA_TC=33 in /etc/profile.d/npuops-hccl.sh, but the lossless DSCP is 33, so it must be 132 (33 is '
         'the DSCP itself; HCCL_RDMA_TC is the ToS byte, DSCP x 4) (run stage 5, hccl_env, to rewrite it)')]


def test_hccl_alignment_checks_the_intent():
    with pytest.raises(AnsibleFilterError, match=r'^hccl_alignment_findings: intent must be a dict'):
        hccl_alignment_findings({}, None)


# ---- pfc_steady_findings --------------------------------------------------------------------------------------------

def pfc_read(**changes):
    """An hccn_info result of [pfc_stat] on 8 ports, each the parsed sample; npu<N>={counter: value} changes one port,
    npu<N>=None is a port whose counters could not be read."""
    devices = dict((str(d), {'pfc_stat': copy.deepcopy(PFC_STAT)}) for d in range(8))
    for key, counters in changes.items():
        if counters is None:
            devices[key[3:]]['pfc_stat'] = None
        else:
            devices[key[3:]]['pfc_stat']['counters'].update(counters)
    return {'changed': False, 'devices': devices, 'errors': []}


def test_the_sample_is_the_parser_output():
    assert PFC_STAT['counters']['tx_pfc4_duration_ms'] == 12.5
    assert PFC_STAT['counters']['tx_pfc4_duration_warn_cnt'] == 2
    assert PFC_STAT['counters']['rx_pfc4_duration_ms'] == 3.25


def test_steady_counters_have_no_finding():
    assert pfc_steady_findings(pfc_read(), pfc_read(), 10, H) == []
    # 12.5 -> 512.5 ms in 10 s is 50 ms/s, below the default 100
    assert pfc_steady_findings(pfc_read(), pfc_read(npu0={'tx_pfc4_duration_ms': 512.5}), 10, H) == []


def test_pause_time_warnings_that_grow():
    second = pfc_read(npu3={'tx_pfc4_duration_warn_cnt': 5})
    assert pfc_steady_findings(pfc_read(), second, 10, H) == [
        {'host': H, 'device': 3, 'check': 'pfc_stat', 'value': 3, 'expected': 0, 'severity': 'fail',
         'msg': 'node01 NPU 3: tx_pfc4_duration_warn_cnt grew by 3 in 10.0 s on priority 4 (pause-time warnings): the port '
                'sends long PFC pauses, a pause storm or a congested receiver'}]


def test_pause_time_errors_that_grow_on_any_priority():
    second = pfc_read(npu1={'tx_pfc0_duration_err_cnt': 1})
    assert only(pfc_steady_findings(pfc_read(), second, 2.5, H)) == [
        (1, 'pfc_stat', 'fail', 'node01 NPU 1: tx_pfc0_duration_err_cnt grew by 1 in 2.5 s on priority 0 (pause-time errors): '
                                'the port sends long PFC pauses, a pause storm or a congested receiver')]


def test_counters_that_went_down_are_not_growth():
    assert pfc_steady_findings(pfc_read(), pfc_read(npu2={'tx_pfc4_duration_warn_cnt': 0, 'tx_pfc4_duration_ms': 0.0}), 10) == []


def test_pauses_sent_on_the_lossless_priority_above_the_limit():
    second = pfc_read(npu6={'tx_pfc4_duration_ms': 1512.5})
    assert pfc_steady_findings(pfc_read(), second, 10, H, 4, 100) == [
        {'host': H, 'device': 6, 'check': 'pfc_stat', 'value': 150.0, 'expected': '<= 100.0 ms/s', 'severity': 'fail',
         'msg': 'node01 NPU 6: PFC pauses sent on priority 4 grew by 150.0 ms per second (1500.0 ms in 10.0 s), above '
                '100.0 ms/s (roce_lossless_pfc_max_pause_ms_per_s): the lossless priority is not steady'}]


def test_pauses_received_on_the_lossless_priority_above_the_limit():
    second = pfc_read(npu0={'rx_pfc4_duration_ms': 253.25})
    assert only(pfc_steady_findings(pfc_read(), second, '5', H, '4', '40')) == [
        (0, 'pfc_stat', 'fail', 'node01 NPU 0: PFC pauses received on priority 4 grew by 50.0 ms per second (250.0 ms in '
                                '5.0 s), above 40.0 ms/s (roce_lossless_pfc_max_pause_ms_per_s): the lossless priority is not '
                                'steady')]


def test_pause_rate_at_the_limit_and_on_other_priorities_is_no_finding():
    at_limit = pfc_read(npu0={'tx_pfc4_duration_ms': 1012.5})
    assert pfc_steady_findings(pfc_read(), at_limit, 10, H, 4, 100) == []
    other_priority = pfc_read(npu0={'tx_pfc3_duration_ms': 5000.0})
    assert pfc_steady_findings(pfc_read(), other_priority, 10, H, 4, 100) == []
    # the same growth on priority 3 is checked when priority 3 is the lossless one
    assert [f['device'] for f in pfc_steady_findings(pfc_read(), other_priority, 10, H, 3, 100)] == [0]


def test_counters_that_could_not_be_read_twice_are_a_warning():
    assert pfc_steady_findings(pfc_read(), pfc_read(npu2=None), 10, H) == [
        {'host': H, 'device': 2, 'check': 'pfc_stat', 'value': None, 'expected': 'two reads', 'severity': 'warn',
         'msg': 'node01 NPU 2: the PFC counters could not be read twice'}]
    assert [f['device'] for f in pfc_steady_findings(pfc_read(npu5=None), pfc_read(), 10, H)] == [5]


def test_flat_counters_are_read_too():
    first = {'devices': {'0': {'pfc_stat': dict(PFC_STAT['counters'])}}}
    second = {'devices': {'0': {'pfc_stat': dict(PFC_STAT['counters'], tx_pfc4_duration_warn_cnt=4)}}}
    assert [f['value'] for f in pfc_steady_findings(first, second, 10, H)] == [2]


@pytest.mark.parametrize('seconds', [0, -1, '0'])
def test_pfc_seconds_must_be_positive(seconds):
    with pytest.raises(AnsibleFilterError, match=r'^pfc_steady_findings: seconds must be > 0, got '):
        pfc_steady_findings(pfc_read(), pfc_read(), seconds, H)


def test_pfc_arguments_must_be_numbers():
    with pytest.raises(AnsibleFilterError, match=r'^pfc_steady_findings: seconds, max_pause_ms_per_s and priority must be '
                                                 r'numbers'):
        pfc_steady_findings(pfc_read(), pfc_read(), 'ten', H)
    with pytest.raises(AnsibleFilterError, match=r'must be numbers'):
        pfc_steady_findings(pfc_read(), pfc_read(), 10, H, 4, None)


def test_port_values_that_could_not_be_read_are_said_so():
    ports = info(npu1=port(link=None, mtu=None), npu2=port(dscp_to_tc=[{'dscp': 32, 'tc': 2}]))
    assert only(roce_port_findings(ports, INTENT, H)) == [
        (1, 'link', 'fail', 'node01 NPU 1: the link state could not be read'),
        (1, 'mtu', 'fail', 'node01 NPU 1: the MTU could not be read'),
        (2, 'dscp_to_tc', 'fail', 'node01 NPU 2: DSCP 33 is not in the map read back, expected the lossless TC 3, so '
                                  'HCCL_RDMA_TC=132 traffic leaves the lossless queue')]
