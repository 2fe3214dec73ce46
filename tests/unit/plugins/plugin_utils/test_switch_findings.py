"""The switch-side checks from the hosts: LLDP frame size and neighbours, PFC frames received on another priority, CNP
under load. The port entries are the parser output of the real captures (the fixture tree), changed where a test says."""

from __future__ import annotations

import copy
import json
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import findings_text
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.findings import (
    neighbour_of,
    switch_ecn_findings,
    switch_pfc_findings,
    switch_port_findings,
)

HERE = os.path.dirname(os.path.abspath(__file__))
PARSED = os.path.join(HERE, '..', '..', 'fixtures', 'parsers', 'hccn_tool')
H = 'node02'


def parsed(query, name):
    with open(os.path.join(PARSED, query, name + '.json'), encoding='utf-8') as handle:
        return json.load(handle)


# real: Huarong DX511 (VRP 8.211) port 400GE1/1/20:2, Maximum Frame Size 9216, no System Name TLV, management 26.xx.xx.xx
LLDP = parsed('lldp', 'ac_910b1_dev3_elided')
# real: `hccn_tool -i N | grep Ifname` - only the port name
LLDP_IFNAME_ONLY = parsed('lldp', 'ds_910b3_grep_ifname_dev0')
# real: the documented -stat -g output, elided; the counters of the FORMAT note are filled in below
STAT = parsed('stat', 'mc_doc_elided')


def lldp(**changes):
    entry = copy.deepcopy(LLDP)
    entry.update(changes)
    return entry


def info(query, entries):
    return {'changed': False, 'devices': dict((str(dev), {query: entry}) for dev, entry in entries.items()), 'errors': []}


def stat(**counters):
    entry = copy.deepcopy(STAT)
    for prio in range(8):
        entry.setdefault('mac_rx_pfc_pri%d_pkt_num' % prio, 0)
    entry.setdefault('roce_tx_cnp_pkt_num', 0)
    entry.setdefault('roce_rx_cnp_pkt_num', 0)
    entry.update(counters)
    return entry


NAMED = info('lldp', dict((dev, lldp(system_name='leaf-%02d' % (dev // 2 + 1), ifname='400GE1/%d/2:%d' % (dev // 2 + 1, dev % 2 + 1)))
                          for dev in range(8)))


def test_neighbour_of_the_real_capture_falls_back_to_the_management_address():
    # the real capture has no System Name TLV: the switch is named by its management address
    assert neighbour_of({'lldp': LLDP}) == {'switch': '26.xx.xx.xx', 'port': '400GE1/1/20:2', 'max_frame_size': 9216}
    assert neighbour_of({'lldp': lldp(system_name='dx511-a')})['switch'] == 'dx511-a'
    assert neighbour_of({'lldp': LLDP_IFNAME_ONLY}) == {'switch': None, 'port': '400GE1/1/5:1', 'max_frame_size': None}
    assert neighbour_of({'lldp': None}) is None
    assert neighbour_of({}) is None


def test_real_capture_passes_the_frame_check_at_mtu_9000():
    assert switch_port_findings(info('lldp', {3: LLDP}), H, 9000) == []
    # 9216 - 18 = 9198 is the largest MTU the switch carries
    assert switch_port_findings(info('lldp', {3: LLDP}), H, 9198) == []
    assert len(switch_port_findings(info('lldp', {3: LLDP}), H, 9199)) == 1


def test_small_frame_size_is_named_with_switch_and_port():
    found = switch_port_findings(info('lldp', {0: lldp(), 3: lldp(max_frame_size=1518, system_name='leaf-02')}), H, 9000)
    assert len(found) == 1
    item = found[0]
    assert (item['host'], item['device'], item['check'], item['severity']) == (H, 3, 'switch_frame', 'fail')
    assert (item['value'], item['expected'], item['switch'], item['switch_port']) == (1518, '>= 9018', 'leaf-02', '400GE1/1/20:2')
    assert item['msg'].startswith('node02 NPU 3: switch leaf-02 port 400GE1/1/20:2 advertises a maximum frame size of 1518 bytes')
    assert 'MTU 9000' in item['msg'] and 'jumboframe enable 9216' in item['msg']


def test_frame_severity_warn_and_bad_severity():
    found = switch_port_findings(info('lldp', {1: lldp(max_frame_size=1518)}), H, 9000, 'warn')
    assert [f['severity'] for f in found] == ['warn']
    with pytest.raises(AnsibleFilterError, match='severity must be fail or warn'):
        switch_port_findings(info('lldp', {1: LLDP}), H, 9000, 'stop')
    with pytest.raises(AnsibleFilterError, match='mtu must be an integer'):
        switch_port_findings(info('lldp', {1: LLDP}), H, 'jumbo')


def test_no_neighbour_no_name_no_frame_tlv_are_warnings():
    found = switch_port_findings(info('lldp', {0: None, 1: LLDP_IFNAME_ONLY, 2: lldp(ifname=None)}), H, 9000)
    checks = [(f['device'], f['check'], f['severity']) for f in found]
    assert checks == [(0, 'switch_lldp', 'warn'), (1, 'switch_lldp', 'warn'), (1, 'switch_frame', 'warn'),
                      (2, 'switch_lldp', 'warn')]
    assert 'no LLDP neighbour' in found[0]['msg'] and 'lldp enable' in found[0]['msg']
    assert 'names no switch' in found[1]['msg']
    assert 'no Maximum Frame Size TLV' in found[2]['msg']


def test_ports_without_the_lldp_query_are_skipped():
    assert switch_port_findings({'devices': {'0': {'link': 'UP'}}}, H) == []
    assert switch_port_findings({'msg': 'failed'}, H) == []


def test_pfc_frames_on_another_priority_name_the_switch_port():
    first = info('stat', dict((dev, stat(mac_rx_pfc_pri4_pkt_num=10)) for dev in range(8)))
    second = copy.deepcopy(first)
    second['devices']['2']['stat']['mac_rx_pfc_pri3_pkt_num'] = 250
    second['devices']['2']['stat']['mac_rx_pfc_pri4_pkt_num'] = 10
    second['devices']['5']['stat']['mac_rx_pfc_pri4_pkt_num'] = 900      # the lossless priority: fine
    found = switch_pfc_findings(first, second, 12.5, H, 4, NAMED)
    assert len(found) == 1
    item = found[0]
    assert (item['device'], item['check'], item['value'], item['switch'], item['switch_port']) == (
        2, 'switch_pfc', [3], 'leaf-02', '400GE1/2/2:1')
    assert 'switch leaf-02 port 400GE1/2/2:1 paused the NPU on another priority than the lossless 4' in item['msg']
    assert '250 on priority 3' in item['msg'] and 'HCCL_RDMA_SL 4' in item['msg']


def test_pfc_counter_reset_or_missing_is_no_growth():
    first = info('stat', {0: stat(mac_rx_pfc_pri3_pkt_num=500), 1: stat()})
    second = info('stat', {0: stat(mac_rx_pfc_pri3_pkt_num=2), 1: STAT})
    assert switch_pfc_findings(first, second, 5, H, 4) == []


def test_pfc_without_neighbours_still_names_the_port_as_unknown():
    first = info('stat', {0: stat()})
    second = info('stat', {0: stat(mac_rx_pfc_pri0_pkt_num=3, mac_rx_pfc_pri6_pkt_num=1)})
    found = switch_pfc_findings(first, second, 5, H, 4, None, 'warn')
    assert found[0]['value'] == [0, 6] and found[0]['severity'] == 'warn' and found[0]['switch'] is None
    assert 'the switch port (no LLDP neighbour seen)' in found[0]['msg']


@pytest.mark.parametrize('args, match', [
    ((5, H, 8), 'priority must be 0-7'),
    (('soon', H, 4), 'seconds must be a number'),
    ((5, H, 'four'), 'priority must be an integer'),
    ((5, H, 4, None, 'loud'), 'severity must be fail or warn'),
])
def test_pfc_bad_arguments(args, match):
    with pytest.raises(AnsibleFilterError, match=match):
        switch_pfc_findings(info('stat', {0: stat()}), info('stat', {0: stat()}), *args)


def test_no_cnp_under_load_is_a_warning_by_default():
    first = info('stat', dict((dev, stat(roce_tx_cnp_pkt_num=7, roce_rx_cnp_pkt_num=9)) for dev in range(8)))
    second = copy.deepcopy(first)
    for dev in range(8):
        if dev != 6:
            second['devices'][str(dev)]['stat']['roce_tx_cnp_pkt_num'] += 1200
    found = switch_ecn_findings(first, second, H, 4, NAMED)
    assert [(f['device'], f['check'], f['severity'], f['switch'], f['switch_port']) for f in found] == [
        (6, 'switch_ecn', 'warn', 'leaf-04', '400GE1/4/2:1')]
    assert 'no CNP was sent or received during the cross-node benchmark' in found[0]['msg']
    assert 'does not seem to mark ECN on queue 4' in found[0]['msg']
    assert [f['severity'] for f in switch_ecn_findings(first, second, H, 4, NAMED, 'fail')] == ['fail']


def test_cnp_received_only_counts_too():
    first = info('stat', {0: stat()})
    second = info('stat', {0: stat(roce_rx_cnp_pkt_num=4)})
    assert switch_ecn_findings(first, second, H) == []


def test_cnp_unreadable_is_a_warning_not_a_pass():
    # the real trimmed capture has no CNP counters
    first = info('stat', {0: STAT})
    second = info('stat', {0: STAT})
    found = switch_ecn_findings(first, second, H, 4, None, 'fail')
    assert [(f['check'], f['severity']) for f in found] == [('switch_ecn', 'warn')]
    assert 'could not be read' in found[0]['msg']


def test_messages_group_in_the_gate_text():
    first = info('stat', dict((dev, stat()) for dev in range(2)))
    second = info('stat', dict((dev, stat()) for dev in range(2)))
    text = findings_text(switch_ecn_findings(first, second, H, 4, NAMED))
    # each port is named: two lines, one per switch port
    assert text.count('node02 NPU') == 2 and '400GE1/1/2:1' in text and '400GE1/1/2:2' in text
