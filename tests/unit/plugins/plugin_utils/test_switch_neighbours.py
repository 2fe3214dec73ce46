"""switch_neighbours: the real LLDP capture, a synthetic PoD over four switches, the ports no switch is known for, and
the ports two NPUs claim."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.module_utils._parsers.hccn_tool import parse_lldp_get
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.neighbours import switch_neighbours
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils import switch_pod as pod


@pytest.fixture(scope='module')
def neighbours():
    return switch_neighbours(pod.synthetic_nodes())


def test_real_capture_has_no_system_name_so_the_management_address_names_the_switch():
    with open(pod.CAPTURE, encoding='utf-8') as handle:
        lldp = parse_lldp_get(handle.read())
    assert 'system_name' not in lldp
    result = switch_neighbours([{'node': 'node01', 'devices': {'3': {'lldp': lldp}}}])
    name = lldp['management_address']
    assert list(result['switches']) == [name]
    switch = result['switches'][name]
    # the capture masks the chassis MAC as '...': that is no identity
    assert switch['chassis_id'] is None and switch['management_address'] == name
    assert switch['ports'] == [{'port': lldp['ifname'], 'node': 'node01', 'npu': 3, 'max_frame_size': 9216}]
    assert result['ports'] == [{'node': 'node01', 'npu': 3, 'switch': name, 'port': lldp['ifname'], 'max_frame_size': 9216}]
    assert result['unseen'] == [] and result['conflicts'] == []


def test_synthetic_pod_four_switches(neighbours):
    assert sorted(neighbours['switches']) == ['leaf-a', 'leaf-b', 'leaf-c', 'leaf-s']
    ports = [p['port'] for p in neighbours['switches']['leaf-a']['ports']]
    assert ports == ['400GE1/1/1:1', '400GE1/1/1:2', '400GE1/1/2:1', '400GE1/1/2:2']
    assert neighbours['switches']['leaf-s']['chassis_id'] == '00:11:22:33:44:02'
    assert neighbours['switches']['leaf-s']['management_address'] == '10.0.0.3'
    assert len(neighbours['ports']) == 16
    assert [(p['node'], p['npu']) for p in neighbours['ports']] == [(n, d) for n in ('node01', 'node02') for d in range(8)]
    assert neighbours['unseen'] == [] and neighbours['conflicts'] == []


def test_ports_in_natural_order():
    devices = [{'device': d, 'lldp': parse_lldp_get(pod.lldp_text(port, system_name='sw'))}
               for d, port in enumerate(['400GE1/1/10:1', '400GE1/1/2:1', '400GE1/1/1:2'])]
    result = switch_neighbours([{'node': 'n1', 'devices': devices}])
    assert [p['port'] for p in result['switches']['sw']['ports']] == ['400GE1/1/1:2', '400GE1/1/2:1', '400GE1/1/10:1']


def test_unseen_ports_are_reported_never_guessed():
    devices = {
        '0': {'lldp': None},
        '1': {},
        '2': {'lldp': parse_lldp_get('\tIfname: 400GE1/1/5:1\n')},  # the grep-for-Ifname output: a port, no switch
        '3': {'lldp': parse_lldp_get('System Name TLV\n\tleaf9\n')},
        '4': {'lldp': parse_lldp_get(pod.lldp_text('400GE1/1/5:2', system_name='leaf9'))},
    }
    result = switch_neighbours([{'node': 'node10', 'devices': devices}, {'node': 'node2', 'devices': {'0': {'lldp': None}}}])
    assert [(u['node'], u['npu']) for u in result['unseen']] == [('node2', 0), ('node10', 0), ('node10', 1), ('node10', 2),
                                                                 ('node10', 3)]
    reasons = [u['reason'] for u in result['unseen']]
    assert 'no LLDP data' in reasons[1] and 'no LLDP data' in reasons[2]
    assert 'names no switch' in reasons[3] and '400GE1/1/5:1' in reasons[3]
    assert 'no Port ID TLV' in reasons[4]
    assert list(result['switches']) == ['leaf9']


def test_two_npus_on_one_port_is_a_conflict():
    lldp = parse_lldp_get(pod.lldp_text('400GE1/1/5:1', system_name='leaf1'))
    result = switch_neighbours([{'node': 'node01', 'devices': {'0': {'lldp': lldp}}},
                                {'node': 'node02', 'devices': {'5': {'lldp': lldp}}}])
    assert result['conflicts'] == [{'switch': 'leaf1', 'port': '400GE1/1/5:1',
                                    'npus': [{'node': 'node01', 'npu': 0}, {'node': 'node02', 'npu': 5}]}]


@pytest.mark.parametrize('nodes', ['x', [{'devices': {}}], [{'node': 'n', 'devices': 3}], [{'node': 'n', 'devices': {'a': {}}}]])
def test_neighbours_refuse_bad_input(nodes):
    with pytest.raises(AnsibleFilterError, match='switch_neighbours'):
        switch_neighbours(nodes)
