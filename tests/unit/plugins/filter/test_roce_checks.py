"""The stage 4 and stage 5 checks of roce_checks: the ports against the lossless intent, the precheck, the PFC pause
counters between two reads, the change ticket, the pairwise search for the slow node, the batch outcome and the
HCCL env checks, each message as a whole sentence."""

from __future__ import annotations

import copy
import json
import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.filter import roce_port_findings as roce_checks
from ansible_collections.npuops.ascend.plugins.filter.roce_port_findings import (
    crossnode_findings,
    hccl_alignment_findings,
    hccl_env_findings,
    hccl_env_problem_lines,
    pairwise_culprit,
    pfc_steady_findings,
    port_config_subset,
    ring_neighbours,
    ring_pairs,
    changed_ports,
    roce_batch_outcome,
    roce_change_ticket,
    roce_desired_config,
    roce_port_findings,
    roce_precheck_findings,
)

HERE = os.path.dirname(os.path.abspath(__file__))
FILTERS = os.path.join(HERE, '..', '..', '..', '..', 'plugins', 'filter')
PARSED = os.path.join(HERE, '..', '..', 'fixtures', 'parsers', 'hccn_tool')


def parsed(query, name):
    """The parser output of a sample of the fixture tree (hccn_tool -i N -<query> -g)."""
    with open(os.path.join(PARSED, query, name + '.json'), encoding='utf-8') as handle:
        return json.load(handle)


PFC_STAT = parsed('pfc_stat', 'derived_prio4_activity')   # tx_pfc4 12.5 ms, 2 warnings; rx_pfc4 3.25 ms
LINK_STAT = parsed('link_stat', 'mc_worker0_dev0')          # 2 DOWN records, 2 UP records
STAT = parsed('stat', 'mc_910a_trimmed')                    # roce_rx_err_pkt_num 0, roce_tx_err_pkt_num 0

H = 'node01'
MASK = '255.255.255.0'
INTENT = {'lossless_priority': 4, 'lossless_dscp': 33, 'lossless_tc': 3, 'dscp_to_tc': None, 'mtu': 9000,
          'hccl_rdma_sl': None, 'hccl_rdma_tc': None}
PLAN = [{'device': d, 'address': '10.20.%d.11' % d, 'netmask': MASK} for d in range(8)]
GOOD = {'link': 'UP', 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': [{'dscp': 33, 'tc': 3}]}


def port(**changes):
    """One port of an hccn_info result that holds the intent, with ``changes``."""
    entry = copy.deepcopy(GOOD)
    entry.update(changes)
    return entry


def info(ports=None, errors=None, **by_device):
    """An hccn_info result: 8 good ports, the ones given as npu<N>=entry replaced."""
    devices = dict((str(d), port()) for d in range(8)) if ports is None else dict((str(d), e) for d, e in ports.items())
    for key, entry in by_device.items():
        devices[key[3:]] = entry
    return {'changed': False, 'devices': devices, 'errors': errors or []}


def only(found):
    """(device, check, severity, msg) of every finding."""
    return [(f['device'], f['check'], f['severity'], f['msg']) for f in found]


def test_filter_table():
    assert sorted(roce_checks.FilterModule().filters()) == [
        'changed_ports', 'crossnode_findings', 'hccl_alignment_findings', 'hccl_env_findings', 'hccl_env_problem_lines',
        'pairwise_culprit', 'pfc_steady_findings', 'port_config_subset', 'ring_neighbours', 'ring_pairs', 'roce_batch_outcome',
        'roce_change_ticket', 'roce_desired_config', 'roce_port_findings', 'roce_precheck_findings']


@pytest.mark.parametrize('name', sorted(roce_checks.FilterModule().filters()))
def test_every_filter_has_its_documentation(name):
    with open(os.path.join(FILTERS, name + '.yml'), encoding='utf-8') as handle:
        doc = yaml.safe_load(handle)
    assert doc['DOCUMENTATION']['name'] == name
    assert doc['DOCUMENTATION']['version_added'] == '0.1.0'
    assert '_input' in doc['DOCUMENTATION']['options']
    assert 'npuops.ascend.%s' % name in doc['EXAMPLES']
    assert '_value' in doc['RETURN']


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


# ---- roce_change_ticket ---------------------------------------------------------------------------------------------

def dscp(tc):
    return [{'dscp': 33, 'tc': tc}]


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


# ---- pairwise_culprit -----------------------------------------------------------------------------------------------

def looped(hosts, busbw=None, failed=False):
    """One result of the looped hccl_bench task (register of a loop over ring_pairs)."""
    result = {'item': list(hosts), 'ansible_loop_var': 'item', 'changed': False, 'failed': failed}
    if busbw is None:
        result['msg'] = 'mpirun exited 1: ssh: connect to host node03 port 22: Connection refused'
    else:
        result.update(peak_busbw_gb_s=busbw, below_band=busbw < 20.0, rows=[])
    return result


RING4 = [(['node01', 'node02'], 22.1), (['node02', 'node03'], 9.8), (['node03', 'node04'], 10.2), (['node04', 'node01'], 22.4)]


def test_the_slow_node_of_a_ring_of_four():
    verdict = pairwise_culprit([{'hosts': h, 'busbw': b} for h, b in RING4], 20)
    assert verdict['culprit'] == 'node03'
    assert verdict['suspects'] == ['node03']
    assert verdict['slow_pairs'] == [{'hosts': ['node02', 'node03'], 'busbw': 9.8, 'slow': True},
                                     {'hosts': ['node03', 'node04'], 'busbw': 10.2, 'slow': True}]
    assert [p['busbw'] for p in verdict['pairs']] == [9.8, 10.2, 22.1, 22.4]
    assert verdict['msg'] == ('node03 is in every slow pair (node02 + node03 9.8 GB/s, node03 + node04 10.2 GB/s) and in no '
                              'fast one: it is the slow node')


def test_looped_results_give_the_same_verdict():
    looped_results = [looped(h, b) for h, b in RING4]
    assert pairwise_culprit(looped_results, '20') == pairwise_culprit([{'hosts': h, 'busbw': b} for h, b in RING4], 20.0)


def test_the_slow_node_of_a_ring_of_three():
    verdict = pairwise_culprit([looped(['node01', 'node02'], 21.0), looped(['node02', 'node03'], 8.0),
                                looped(['node03', 'node01'], 7.5)], 20)
    assert (verdict['culprit'], verdict['suspects']) == ('node03', ['node03'])
    assert verdict['msg'] == ('node03 is in every slow pair (node02 + node03 8.0 GB/s, node03 + node01 7.5 GB/s) and in no '
                              'fast one: it is the slow node')


def test_no_slow_pair():
    verdict = pairwise_culprit([{'hosts': h, 'busbw': 22.0} for h, _b in RING4], 20)
    assert verdict == {'pairs': [{'hosts': h, 'busbw': 22.0, 'slow': False} for h, _b in RING4], 'slow_pairs': [],
                       'culprit': None, 'suspects': [],
                       'msg': 'every pair reaches 20.0 GB/s; the slow run needs more than two nodes to show'}


def test_a_pair_at_the_threshold_is_not_slow():
    assert pairwise_culprit([{'hosts': ['node01', 'node02'], 'busbw': 20.0}], 20)['slow_pairs'] == []


def test_slow_pairs_that_share_no_node():
    verdict = pairwise_culprit([{'hosts': ['node01', 'node02'], 'busbw': 9.0}, {'hosts': ['node02', 'node03'], 'busbw': 22.0},
                                {'hosts': ['node03', 'node04'], 'busbw': 8.5}, {'hosts': ['node04', 'node01'], 'busbw': 22.0}], 20)
    assert (verdict['culprit'], verdict['suspects']) == (None, [])
    assert verdict['msg'] == ('the slow pairs (node01 + node02 9.0 GB/s, node03 + node04 8.5 GB/s) share no node: more than '
                              'one link is slow')


def test_one_slow_pair_whose_nodes_are_fast_with_their_other_neighbours():
    verdict = pairwise_culprit([{'hosts': ['node01', 'node02'], 'busbw': 9.0}, {'hosts': ['node02', 'node03'], 'busbw': 22.0},
                                {'hosts': ['node03', 'node04'], 'busbw': 22.5}, {'hosts': ['node04', 'node01'], 'busbw': 22.0}], 20)
    assert (verdict['culprit'], verdict['suspects']) == (None, [])
    assert verdict['msg'] == ('only node01 + node02 9.0 GB/s is slow and both nodes reach 20.0 GB/s with their other '
                              'neighbour: the path between them is slow, not one node')


def test_every_pair_slow_points_at_every_node():
    verdict = pairwise_culprit([looped(['node01', 'node02'], 9.0), looped(['node02', 'node03'], 8.0),
                                looped(['node03', 'node01'], 7.0)], 20)
    assert (verdict['culprit'], verdict['suspects']) == (None, ['node01', 'node02', 'node03'])
    assert verdict['msg'] == ('the slow pairs (node01 + node02 9.0 GB/s, node02 + node03 8.0 GB/s, node03 + node01 7.0 GB/s) '
                              'point at node01 or node02 or node03')


def test_a_pair_whose_benchmark_failed_counts_as_slow():
    verdict = pairwise_culprit([looped(['node01', 'node02'], 22.1), looped(['node02', 'node03'], 9.8),
                                looped(['node03', 'node04'], failed=True), looped(['node04', 'node01'], 22.4)], 20)
    assert verdict['culprit'] == 'node03'
    assert verdict['pairs'][0] == {'hosts': ['node03', 'node04'], 'busbw': None, 'slow': True}
    assert verdict['msg'] == ('node03 is in every slow pair (node02 + node03 9.8 GB/s, node03 + node04 (no result)) and in '
                              'no fast one: it is the slow node')


@pytest.mark.parametrize('results, message', [
    (['node01 + node02'], r"^pairwise_culprit: each result is \{hosts: \[a, b\], busbw: GB/s\} or a looped hccl_bench result, "
                          r"got 'node01 \+ node02'$"),
    ([{'busbw': 9.0}], r"pairwise_culprit: each result is .*got \{'busbw': 9.0\}"),
    ([{'hosts': 'node01,node02', 'busbw': 9.0}], r'pairwise_culprit: each result is'),
])
def test_pairwise_culprit_wants_pairs(results, message):
    with pytest.raises(AnsibleFilterError, match=message):
        pairwise_culprit(results, 20)


def test_pairwise_culprit_wants_a_threshold():
    with pytest.raises(AnsibleFilterError, match=r'^pairwise_culprit: threshold must be a number of GB/s'):
        pairwise_culprit([], 'fast')
    assert pairwise_culprit(None, 20)['pairs'] == []


# ---- changed_ports --------------------------------------------------------------------------------------------------

ONE_PASS = {
    'changed': True,
    'changed_devices': [0, 1, 3],
    'failed_devices': [3],
    'before': [{'device': 0, 'mtu': 1500, 'pfc_priorities': [], 'dscp_to_tc': dscp(2)},
               {'device': 1, 'mtu': 9000, 'pfc_priorities': [], 'dscp_to_tc': dscp(3)},
               {'device': 2, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': dscp(3)},
               {'device': 3, 'mtu': 1500, 'pfc_priorities': [], 'dscp_to_tc': dscp(2)}],
    # NPU 3 failed: its after holds only its id
    'after': [{'device': 0, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': dscp(3)},
              {'device': 1, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': dscp(3)},
              {'device': 2, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': dscp(3)},
              {'device': 3}],
}


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


# ---- roce_batch_outcome ---------------------------------------------------------------------------------------------

BACKUP = '/var/lib/npuops/backup/hccn-%s-20261202T101500Z.json'
SKIPPED = {'changed': False, 'skipped': True, 'skip_reason': 'Conditional result was False'}
ALL_HOSTS = ['node01', 'node02', 'node03', 'node04', 'node05', 'node06']


def steps(mtu=(), pfc=(), dscp_devices=(), address=None):
    return {'roce_lossless_step_address': address or SKIPPED,
            'roce_lossless_step_mtu': {'changed': bool(mtu), 'changed_devices': list(mtu)},
            'roce_lossless_step_pfc': {'changed': bool(pfc), 'changed_devices': list(pfc)},
            'roce_lossless_step_dscp': {'changed': bool(dscp_devices), 'changed_devices': list(dscp_devices)}}


def hostvars_of_a_failed_batch():
    """node01, node02 done in an earlier batch; node03-node05 this batch; node06 not reached."""
    return {
        'node01': {'roce_lossless_done': True},
        'node02': {'roce_lossless_done': True},
        'node03': dict(steps(mtu=range(8), pfc=[0, 1, 2]),
                       roce_lossless_failure={'task': 'Enable PFC on the lossless priority only',
                                              'msg': 'NPU 3 on node03: the link did not come back UP within 60 s.'},
                       roce_lossless_backup_file=BACKUP % 'node03',
                       roce_lossless_restore={'changed': True, 'changed_devices': [0, 1, 2, 3, 4, 5, 6, 7], 'failed': False}),
        'node04': dict(steps(mtu=[0, 1, 2, 3, 5, 6, 7]),
                       roce_lossless_backup_file=BACKUP % 'node04',
                       roce_lossless_restore={'changed': False, 'failed': True,
                                              'msg': 'NPU 2 on node04: hccn_tool timed out after 60 s'}),
        'node05': dict(steps(), roce_lossless_backup_file=None, roce_lossless_restore=SKIPPED),
        'node06': {},
    }


def test_batch_outcome_with_a_restore_that_worked_and_one_that_failed():
    message = roce_batch_outcome(['node03', 'node04', 'node05'], hostvars_of_a_failed_batch(), ALL_HOSTS)
    assert message == (
        'Stage 4 stopped: the change failed on node03 at "Enable PFC on the lossless priority only": NPU 3 on node03: the '
        'link did not come back UP within 60 s. '
        'node03: changed NPU 0, 1, 2, 3, 4, 5, 6, 7; restored from /var/lib/npuops/backup/hccn-node03-20261202T101500Z.json '
        '(NPU 0, 1, 2, 3, 4, 5, 6, 7 set back). '
        'node04: changed NPU 0, 1, 2, 3, 5, 6, 7; its restore FAILED: NPU 2 on node04: hccn_tool timed out after 60 s; '
        'restore it by hand with playbooks/rollback.yml -l node04 -e '
        'roce_lossless_rollback_file=/var/lib/npuops/backup/hccn-node04-20261202T101500Z.json. '
        'node05: not restored: nothing was changed on it. '
        'Changed in this batch: node03, node04. Restored: node03. Still changed, restore by hand: node04. '
        'Done and verified in earlier batches (kept): node01, node02. '
        'Not touched: node06. Fix the cause and run again: nodes that already match change nothing.')


def test_batch_outcome_points_at_the_rollback_playbook_with_the_variable_it_reads():
    message = roce_batch_outcome(['node03', 'node04', 'node05'], hostvars_of_a_failed_batch(), ALL_HOSTS)
    with open(os.path.join(FILTERS, '..', '..', 'playbooks', 'rollback.yml'), encoding='utf-8') as handle:
        playbook = handle.read()
    assert 'playbooks/rollback.yml -l node04 -e roce_lossless_rollback_file=' + BACKUP % 'node04' in message
    assert '-e roce_lossless_rollback_file=' in playbook


def test_batch_outcome_of_a_restore_that_found_nothing_to_set_back():
    hostvars = hostvars_of_a_failed_batch()
    hostvars['node03']['roce_lossless_restore'] = {'changed': False, 'changed_devices': [], 'failed': False}
    assert ('node03: changed NPU 0, 1, 2, 3, 4, 5, 6, 7; restored from %s (it already matched the restore point).'
            % (BACKUP % 'node03')) in roce_batch_outcome(['node03'], hostvars, ALL_HOSTS)


def test_batch_outcome_of_a_failed_restore_as_registered_with_failed_when_false():
    # failed_when: false resets 'failed'; a restore without changed_devices, or with failed devices, did not restore
    hostvars = hostvars_of_a_failed_batch()
    hostvars['node03']['roce_lossless_restore'] = {'changed': False, 'failed': False, 'failed_when_result': False,
                                                   'msg': 'NPU 1 on node03: hccn_tool not found'}
    hostvars['node04']['roce_lossless_restore'] = {'changed': True, 'failed': False, 'changed_devices': [0, 1],
                                                   'failed_devices': [2], 'msg': 'NPU 2 on node04: link stayed DOWN'}
    message = roce_batch_outcome(['node03', 'node04'], hostvars, ALL_HOSTS)
    assert 'node03: changed NPU 0, 1, 2, 3, 4, 5, 6, 7; its restore FAILED: NPU 1 on node03: hccn_tool not found;' in message
    assert 'node04: changed NPU 0, 1, 2, 3, 5, 6, 7; its restore FAILED: NPU 2 on node04: link stayed DOWN;' in message
    assert 'Restored: none. Still changed, restore by hand: node03, node04. ' in message


def test_batch_outcome_with_restore_on_failure_off():
    hostvars = hostvars_of_a_failed_batch()
    for host in ('node03', 'node04'):
        hostvars[host]['roce_lossless_restore'] = SKIPPED
    message = roce_batch_outcome(['node03', 'node04', 'node05'], hostvars, ALL_HOSTS, False)
    assert ('node03: changed NPU 0, 1, 2, 3, 4, 5, 6, 7; NOT restored (roce_lossless_restore_on_failure=false); restore point '
            '/var/lib/npuops/backup/hccn-node03-20261202T101500Z.json.') in message
    assert ('node04: changed NPU 0, 1, 2, 3, 5, 6, 7; NOT restored (roce_lossless_restore_on_failure=false); restore point '
            '/var/lib/npuops/backup/hccn-node04-20261202T101500Z.json.') in message
    assert 'Changed in this batch: node03, node04. Restored: none. Still changed, restore by hand: node03, node04. ' in message


def test_batch_outcome_of_a_changed_node_without_a_restore_point():
    hostvars = hostvars_of_a_failed_batch()
    hostvars['node03'].update(roce_lossless_backup_file=None, roce_lossless_restore=SKIPPED)
    message = roce_batch_outcome(['node03'], hostvars, ALL_HOSTS)
    assert 'node03: changed NPU 0, 1, 2, 3, 4, 5, 6, 7; NOT restored: no restore point was written. ' in message
    assert 'Restored: none. Still changed, restore by hand: node03. ' in message
    assert message.endswith('Not touched: node04, node05, node06. Fix the cause and run again: nodes that already match change '
                            'nothing.')


def test_batch_outcome_of_the_first_batch_of_one_node():
    hostvars = {'node01': dict(steps(mtu=[4], address={'changed': True, 'changed_devices': [4, 5]}),
                               roce_lossless_failure={'task': 'Set the jumbo MTU on every NPU port', 'msg': 'failed'},
                               roce_lossless_backup_file=BACKUP % 'node01',
                               roce_lossless_restore={'changed': True, 'changed_devices': [4, 5], 'failed': False})}
    assert roce_batch_outcome(['node01'], hostvars, ['node01', 'node02']) == (
        'Stage 4 stopped: the change failed on node01 at "Set the jumbo MTU on every NPU port": failed. '
        'node01: changed NPU 4, 5; restored from /var/lib/npuops/backup/hccn-node01-20261202T101500Z.json (NPU 4, 5 set '
        'back). Changed in this batch: node01. Restored: node01. '
        'Not touched: node02. Fix the cause and run again: nodes that already match change nothing.')


class Undefined(dict):
    """A hostvars entry whose variables fail to template, as an undefined variable does."""

    def __contains__(self, name):
        return True

    def __getitem__(self, name):
        raise RuntimeError("'roce_lossless_failure' is undefined")


def test_batch_outcome_of_a_one_pass_change_that_failed_half_way():
    hostvars = {
        'node01': {'roce_lossless_step_all': ONE_PASS, 'roce_lossless_step_mtu': SKIPPED,
                   'roce_lossless_failure': {'task': 'Set the MTU, PFC and DSCP map of every NPU port in one pass',
                                             'msg': '1 of 3 NPU ports failed'},
                   'roce_lossless_backup_file': BACKUP % 'node01',
                   'roce_lossless_restore': {'changed': True, 'changed_devices': [0, 1, 3], 'failed': False}},
        'node02': {'roce_lossless_step_all': SKIPPED, 'roce_lossless_backup_file': None, 'roce_lossless_restore': SKIPPED},
    }
    message = roce_batch_outcome(['node01', 'node02'], hostvars, ['node01', 'node02'])
    assert 'node01: changed NPU 0, 1, 3; restored from %s (NPU 0, 1, 3 set back).' % (BACKUP % 'node01') in message
    assert 'node02: not restored: nothing was changed on it.' in message
    assert 'Changed in this batch: node01. Restored: node01.' in message


def test_batch_outcome_treats_unknown_or_failing_variables_as_unset():
    assert roce_batch_outcome(['node09'], {'node09': Undefined()}, None) == (
        'Stage 4 stopped. node09: not restored: nothing was changed on it. Changed in this batch: none. Restored: none. '
        'Not touched: none. Fix the cause and run again: nodes that already match change nothing.')
    assert roce_batch_outcome(['node10'], {}, ['node10']).startswith('Stage 4 stopped. node10: not restored: nothing was changed')


# ---- crossnode_findings ---------------------------------------------------------------------------------------------

BENCH = [{'host': 'node03', 'device': None, 'check': 'busbw', 'value': 12.4, 'expected': '>= 20.0 GB/s', 'severity': 'fail',
          'msg': 'node03: AllReduce bus bandwidth 12.4 GB/s is below 20.0 GB/s (80.0 % of 25.0 GB/s)'}]
PAIRWISE = pairwise_culprit([{'hosts': h, 'busbw': b} for h, b in RING4], 20)


def culprit_ports(**by_device):
    """An hccn_info result of [link, mtu, pfc, link_stat, stat] of 8 ports alike (the samples);
    npu<N>={key: value} changes one port (link_stat and stat are merged)."""
    devices = {}
    for d in range(8):
        entry = port(link_stat=copy.deepcopy(LINK_STAT), stat=copy.deepcopy(STAT))
        del entry['dscp_to_tc']
        for key, value in by_device.get('npu%d' % d, {}).items():
            if key in ('link_stat', 'stat'):
                entry[key].update(value)
            else:
                entry[key] = value
        devices[str(d)] = entry
    return {'changed': False, 'devices': devices, 'errors': []}


def test_crossnode_findings_without_the_pairwise_search_are_the_bench_findings():
    out = crossnode_findings(BENCH)
    assert out == BENCH
    assert out[0] is not BENCH[0]
    assert crossnode_findings(BENCH, None, culprit_ports()) == BENCH
    assert crossnode_findings([], PAIRWISE, culprit_ports()) == []
    assert crossnode_findings(None, PAIRWISE) == []


def test_crossnode_names_the_port_of_the_slow_node_that_stands_out():
    records = [{'status': 'DOWN', 'time': 'Wed Dec  2 10:%02d:00 2026' % m} for m in range(5)]
    ports = culprit_ports(npu6={'link_stat': {'link_up_count': 7, 'records': records},
                                'stat': {'mac_rx_bad_pkt_num': 37, 'roce_new_pkt_rty_num': 1200, 'roce_rx_err_pkt_num': 0}})
    out = crossnode_findings(BENCH, PAIRWISE, ports)
    assert out[:1] == BENCH
    assert out[1] == {
        'host': 'node03', 'device': None, 'check': 'pairwise', 'value': 'node03', 'expected': None, 'severity': 'fail',
        'msg': 'node03: node03 is in every slow pair (node02 + node03 9.8 GB/s, node03 + node04 10.2 GB/s) and in no fast '
               'one: it is the slow node. Its ports that stand out: NPU 6 (MTU 9000, PFC [4], link UP): link DOWN records 5 '
               '(other ports 2), mac_rx_bad_pkt_num 37 (other ports 0), roce_new_pkt_rty_num 1200 (other ports 0)'}


def test_crossnode_when_no_port_of_the_slow_node_stands_out():
    out = crossnode_findings(BENCH, PAIRWISE, culprit_ports())
    assert out[1]['msg'] == (
        'node03: node03 is in every slow pair (node02 + node03 9.8 GB/s, node03 + node04 10.2 GB/s) and in no fast one: it is '
        'the slow node. No port of it stands out (8 ports: MTU 9000, PFC [4], link UP, the same link history and error '
        'counters): look at the node itself (the switch uplinks of its ports, NIC firmware, CPU load, a job sharing the node)')


def test_crossnode_lists_the_differing_settings_when_no_port_stands_out():
    out = crossnode_findings(BENCH, PAIRWISE, culprit_ports(npu2={'mtu': 1500}))
    assert '. No port of it stands out (8 ports: MTU 1500/9000, PFC [4], link UP, ' in out[1]['msg']


def test_crossnode_when_the_ports_of_the_slow_node_could_not_be_read():
    out = crossnode_findings(BENCH, PAIRWISE, {'failed': True, 'msg': 'hccn_tool was not found', 'changed': False})
    assert out[1]['msg'].endswith('it is the slow node. Its ports could not be read: hccn_tool was not found')
    assert out[1]['host'] == 'node03'


def test_crossnode_without_a_culprit_blames_the_bench_node():
    pairwise = pairwise_culprit([{'hosts': ['node01', 'node02'], 'busbw': 9.0}, {'hosts': ['node03', 'node04'], 'busbw': 8.5},
                                 {'hosts': ['node02', 'node03'], 'busbw': 22.0}, {'hosts': ['node04', 'node01'], 'busbw': 22.0}],
                                20)
    out = crossnode_findings(BENCH, pairwise, None)
    assert out[1] == {'host': 'node03', 'device': None, 'check': 'pairwise', 'value': None, 'expected': None, 'severity': 'fail',
                      'msg': 'node03: %s' % pairwise['msg']}


# ---- hccl_env_problem_lines, hccl_env_findings ----------------------------------------------------------------------

def test_hccl_env_problem_lines():
    result = {'env': [], 'advice': [], 'problems': [
        {'variable': 'hccl_env_buffsize', 'value': 2147483648, 'problem': 'hccl_env_buffsize 2147483648 is not a size in MB'},
        'HCCL_IF_IP is a loopback address']}
    assert hccl_env_problem_lines([result, 'node02']) == ['node02: hccl_env_buffsize 2147483648 is not a size in MB',
                                                          'node02: HCCL_IF_IP is a loopback address']
    assert hccl_env_problem_lines((None, 'node03')) == []
    assert hccl_env_problem_lines(({'problems': []}, 'node03')) == []


HCCL_RESULT = {'env': [['HCCL_CONNECT_TIMEOUT', '600'], ['HCCL_BUFFSIZE', '200'], ['HCCL_RDMA_SL', '4'],
                       ['HCCL_RDMA_TC', '132']], 'problems': [], 'advice': []}
LOADED = 'PATH=/usr/bin:/bin\nHCCL_CONNECT_TIMEOUT=600\nHCCL_BUFFSIZE=200\nHCCL_RDMA_SL=4\nHCCL_RDMA_TC=132\nPWD=/root\n'
HCCL_INTENT = {'lossless_dscp': 33, 'lossless_tc': 3}


def test_hccl_env_that_loads_and_matches_the_ports_has_no_finding():
    assert hccl_env_findings(HCCL_RESULT, H, LOADED, info(), HCCL_INTENT) == []


def test_hccl_env_value_missing_after_loading():
    loaded = LOADED.replace('HCCL_BUFFSIZE=200\n', '')
    assert hccl_env_findings(HCCL_RESULT, H, loaded) == [
        {'host': H, 'device': None, 'check': 'HCCL_BUFFSIZE', 'value': None, 'expected': '200', 'severity': 'fail',
         'msg': "node01: HCCL_BUFFSIZE is unset after loading the env file in sh, expected '200'"}]


def test_hccl_env_value_different_after_loading():
    loaded = LOADED.replace('HCCL_RDMA_TC=132', 'HCCL_RDMA_TC=33')
    assert only(hccl_env_findings(HCCL_RESULT, H, loaded)) == [
        (None, 'HCCL_RDMA_TC', 'fail', "node01: HCCL_RDMA_TC is '33' after loading the env file in sh, expected '132'")]


def test_hccl_env_not_loaded_is_not_checked():
    assert hccl_env_findings(HCCL_RESULT, H, None) == []


def test_hccl_env_against_ports_that_differ():
    ports = info(npu2=port(pfc_priorities=[3]), npu5=port(dscp_to_tc=[{'dscp': 33, 'tc': 0}]))
    expected = [
        (2, 'HCCL_RDMA_SL', 'fail', 'node01 NPU 2: HCCL_RDMA_SL=4 but the port has PFC on [3]: the RDMA traffic would not be '
                                    'lossless; run stage 4 (roce_lossless) or fix npuops_lossless_priority'),
        (5, 'HCCL_RDMA_TC', 'fail', 'node01 NPU 5: HCCL_RDMA_TC=132 marks DSCP 33, which the port maps to TC 0, not the '
                                    'lossless TC 3; run stage 4 (roce_lossless) or fix npuops_lossless_dscp')]
    assert only(hccl_env_findings(HCCL_RESULT, H, LOADED, ports, HCCL_INTENT)) == expected
    # the planned config list of a stage 4 dry run is checked the same way
    config = [dict(entry, device=int(dev)) for dev, entry in ports['devices'].items()]
    assert only(hccl_env_findings(HCCL_RESULT, H, LOADED, config, HCCL_INTENT)) == expected


def test_hccl_env_without_rdma_values_is_checked_with_hccls_defaults():
    result = {'env': [['HCCL_BUFFSIZE', '200']], 'problems': []}
    ports = info(npu1=port(pfc_priorities=[3]), npu4=port(dscp_to_tc=[{'dscp': 33, 'tc': 1}]))
    found = hccl_env_findings(result, H, None, ports, {'lossless_dscp': '33', 'lossless_tc': '3'})
    assert [(f['device'], f['check'], f['value'], f['expected']) for f in found] == [
        (1, 'HCCL_RDMA_SL', 4, [3]), (4, 'HCCL_RDMA_TC', 132, '3')]
    # a port that holds SL 4 and DSCP 33 -> TC 3 agrees with the defaults
    assert hccl_env_findings(result, H, None, info(), HCCL_INTENT) == []


def test_hccl_env_rdma_tc_of_another_dscp():
    result = {'env': [['HCCL_RDMA_SL', '4'], ['HCCL_RDMA_TC', '192']], 'problems': []}
    ports = info(ports=dict((d, port(dscp_to_tc=[{'dscp': 33, 'tc': 3}, {'dscp': 48, 'tc': 1}])) for d in range(2)))
    assert [f['msg'] for f in hccl_env_findings(result, H, None, ports, HCCL_INTENT)] == [
        'node01 NPU %d: HCCL_RDMA_TC=192 marks DSCP 48, which the port maps to TC 1, not the lossless TC 3; run stage 4 '
        '(roce_lossless) or fix npuops_lossless_dscp' % d for d in range(2)]


def test_hccl_env_ports_whose_pfc_or_map_could_not_be_read_and_no_intent():
    ports = info(npu0=port(pfc_priorities=None, dscp_to_tc=None), npu1=port(dscp_to_tc=[{'dscp': 33, 'tc': 0}]))
    # NPU 0 (PFC and map unread) gives nothing; NPU 1 maps the DSCP elsewhere
    assert [(f['device'], f['check']) for f in hccl_env_findings(HCCL_RESULT, H, None, ports, HCCL_INTENT)] == [
        (1, 'HCCL_RDMA_TC')]
    # without the lossless TC the map is not checked
    assert hccl_env_findings(HCCL_RESULT, H, None, ports, None) == []


def test_hccl_env_ports_that_could_not_be_read_are_a_warning():
    assert hccl_env_findings(HCCL_RESULT, H, LOADED, {'failed': True, 'msg': 'hccn_tool was not found', 'changed': False},
                             HCCL_INTENT) == [
        {'host': H, 'device': None, 'check': 'ports', 'value': None, 'expected': 'read', 'severity': 'warn',
         'msg': 'node01: the NPU ports could not be read to check HCCL_RDMA_SL/TC: hccn_tool was not found'}]


@pytest.mark.parametrize('ports', [None, SKIPPED, []])
def test_hccl_env_ports_not_read_on_purpose_are_no_finding(ports):
    assert hccl_env_findings(HCCL_RESULT, H, LOADED, ports, HCCL_INTENT) == []


# ---- ring_pairs, ring_neighbours ------------------------------------------------------------------------------------

@pytest.mark.parametrize('hosts, pairs', [
    ([], []),
    (None, []),
    (['node01'], []),
    (['node01', 'node02'], [['node01', 'node02']]),
    (['node01', 'node02', 'node03'], [['node01', 'node02'], ['node02', 'node03'], ['node03', 'node01']]),
    (['node01', 'node02', 'node03', 'node04'],
     [['node01', 'node02'], ['node02', 'node03'], ['node03', 'node04'], ['node04', 'node01']]),
])
def test_ring_pairs(hosts, pairs):
    assert ring_pairs(hosts) == pairs


@pytest.mark.parametrize('hosts, host, neighbours', [
    (['node01'], 'node01', []),
    (['node01', 'node02'], 'node01', ['node02']),
    (['node01', 'node02'], 'node02', ['node01']),
    (['node01', 'node02', 'node03'], 'node01', ['node02', 'node03']),
    (['node01', 'node02', 'node03'], 'node03', ['node01', 'node02']),
    (['node01', 'node02', 'node03', 'node04'], 'node01', ['node02', 'node04']),
    (['node01', 'node02', 'node03', 'node04'], 'node03', ['node04', 'node02']),
    (['node01', 'node02', 'node03', 'node04'], 'node09', []),
    (None, 'node01', []),
])
def test_ring_neighbours(hosts, host, neighbours):
    assert ring_neighbours(hosts, host) == neighbours


def test_port_values_that_could_not_be_read_are_said_so():
    ports = info(npu1=port(link=None, mtu=None), npu2=port(dscp_to_tc=[{'dscp': 32, 'tc': 2}]))
    assert only(roce_port_findings(ports, INTENT, H)) == [
        (1, 'link', 'fail', 'node01 NPU 1: the link state could not be read'),
        (1, 'mtu', 'fail', 'node01 NPU 1: the MTU could not be read'),
        (2, 'dscp_to_tc', 'fail', 'node01 NPU 2: DSCP 33 is not in the map read back, expected the lossless TC 3, so '
                                  'HCCL_RDMA_TC=132 traffic leaves the lossless queue')]


# ---- roce_intent_problems over every node of a PoD ------------------------------------------------------------------

from ansible_collections.npuops.ascend.plugins.filter import roce_intent_problems as roce_intent  # noqa: E402

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
    assert roce_intent.roce_intent_problems(pod_hostvars(), PODHOSTS) == []
    # an INI group variable is a string of digits; the role default for a variable no node sets
    assert roce_intent.roce_intent_problems(pod_hostvars(node02={'npuops_mtu': '9000'}), PODHOSTS) == []
    assert roce_intent.roce_intent_problems({host: {} for host in PODHOSTS}, PODHOSTS) == []


def test_a_host_override_of_the_priority_is_refused_naming_hosts_and_values():
    problems = roce_intent.roce_intent_problems(pod_hostvars(node02={'npuops_lossless_priority': 3}), PODHOSTS)
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
    problems = roce_intent.roce_intent_problems(hostvars, ['node01', 'node02'])
    assert problems[0]['problem'].startswith('npuops_mtu is 4200 on node01 but 9000 on node02: ')
    assert problems[0]['hosts'] == ['node01']


def test_a_value_one_node_sets_and_the_others_take_by_default_differs():
    # node01 and node03 do not set the MTU: they take 9000, the default of the roles
    hostvars = pod_hostvars(node02={'npuops_mtu': 4200})
    for host in ('node01', 'node03'):
        del hostvars[host]['npuops_mtu']
    problems = roce_intent.roce_intent_problems(hostvars, PODHOSTS)
    assert [p['problem'].split(':')[0] for p in problems] == ['npuops_mtu is 4200 on node02 but 9000 on node01, node03']


@pytest.mark.parametrize('variable, value', [
    ('npuops_lossless_dscp', 34), ('npuops_lossless_tc', 2), ('npuops_dscp_to_tc', [{'dscp': 33, 'tc': 3}]),
    ('npuops_hccl_rdma_sl', 4), ('npuops_hccl_rdma_tc', 132),
])
def test_every_intent_variable_is_compared(variable, value):
    problems = roce_intent.roce_intent_problems(pod_hostvars(node03={variable: value}), PODHOSTS)
    assert [p['variable'] for p in problems] == [variable]
    assert problems[0]['problem'].startswith('%s is %r on node03 but ' % (variable, value))


def test_a_bad_value_on_one_node_is_named_with_its_node():
    problems = roce_intent.roce_intent_problems(pod_hostvars(node02={'npuops_lossless_priority': 9}), PODHOSTS)
    assert [p['problem'] for p in problems] == [
        'npuops_lossless_priority is 9 on node02 but 4 on node01, node03: the lossless RoCE intent is PoD-wide (stage 4 sets '
        'it on every port of every node and stage 5 derives HCCL_RDMA_SL and HCCL_RDMA_TC from it); set it once in '
        'group_vars, not in host_vars or per host',
        'node02: npuops_lossless_priority 9 is outside 0-7: PFC has the 8 priorities 0 to 7']


def test_a_bad_intent_shared_by_every_node_is_reported_once_without_the_nodes():
    problems = roce_intent.roce_intent_problems(pod_hostvars(**{host: {'npuops_lossless_tc': 4} for host in PODHOSTS}), PODHOSTS)
    assert len(problems) == 1
    assert problems[0]['problem'].startswith('npuops_lossless_tc 4 is outside 0-3')


def test_values_the_stages_read_alike_make_one_intent():
    hostvars = pod_hostvars(**{host: {'npuops_lossless_tc': 4} for host in PODHOSTS})
    hostvars['node02']['npuops_mtu'] = '9000'
    problems = roce_intent.roce_intent_problems(hostvars, PODHOSTS)
    assert [p['problem'][:40] for p in problems] == ['npuops_lossless_tc 4 is outside 0-3: the']


def test_hosts_not_in_hostvars_are_left_to_pod_problems():
    assert roce_intent.roce_intent_problems(pod_hostvars(), PODHOSTS + ['node09']) == []


def test_the_defaults_are_the_roles_defaults():
    # the intent of a node that sets nothing is what roles/roce_lossless/vars/main.yml gives it
    with open(os.path.join(ROLES, 'roce_lossless', 'vars', 'main.yml'), encoding='utf-8') as handle:
        role_intent = yaml.safe_load(handle)['roce_lossless_intent']
    assert sorted(role_intent) == sorted(roce_intent.INTENT_VARIABLES)
    for key, (variable, default) in roce_intent.INTENT_VARIABLES.items():
        template = role_intent[key]
        assert template.startswith('{{ %s | default(' % variable), template
        assert yaml.safe_load(template.split('default(', 1)[1].rsplit(')', 1)[0].replace('none', 'null')) == default, key


@pytest.mark.parametrize('hostvars, hosts, message', [
    ([], PODHOSTS, 'roce_intent_problems: with hosts, the input must be hostvars, got list'),
    ({}, 'node01', "roce_intent_problems: hosts must be a list of inventory hostnames, got 'node01'"),
])
def test_pod_intent_argument_errors(hostvars, hosts, message):
    with pytest.raises(AnsibleFilterError) as error:
        roce_intent.roce_intent_problems(hostvars, hosts)
    assert str(error.value) == message
