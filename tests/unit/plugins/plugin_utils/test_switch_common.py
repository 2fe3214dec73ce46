"""What the switch family modules share: natural order, the problems of one switch, an integer setting, the header."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.common import Problems, error, header, natural_key, setting
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.intent import INTENT_DEFAULTS


def test_natural_key_orders_numbers_by_value():
    assert sorted(['node10', 'Node2', 'node1'], key=natural_key) == ['node1', 'Node2', 'node10']
    assert sorted(['400GE1/1/10:1', '400GE1/1/2:1'], key=natural_key) == ['400GE1/1/2:1', '400GE1/1/10:1']


def test_error_names_the_filter():
    with pytest.raises(AnsibleFilterError, match='^switch_config: bad$'):
        error('switch_config', 'bad')


def test_problems_name_the_switch_family_key_and_value():
    found = Problems('leaf-a', 'sonic')
    assert found.ranged('pfcwd_poll_ms', 200, 100, 1000, 'why')
    assert found.items == []
    assert not found.ranged('pfcwd_poll_ms', 50, 100, 1000, 'the reason')
    assert found.items == [{'switch': 'leaf-a', 'family': 'sonic', 'key': 'pfcwd_poll_ms', 'value': 50, 'range': '100-1000',
                            'msg': 'leaf-a (sonic): pfcwd_poll_ms 50 is outside 100-1000 on sonic: the reason'}]


@pytest.mark.parametrize('settings,value,keys', [
    ({}, 9216, []),
    ({'frame_size': '9100'}, 9100, []),
    ({'frame_size': 'big'}, None, ['frame_size']),
    ({'frame_size': 12000}, None, ['frame_size']),
])
def test_setting(settings, value, keys):
    found = Problems('leaf-c', 'cumulus')
    assert setting(found, settings, 'frame_size', 9216, 68, 9216, 'why') == value
    assert [p['key'] for p in found.items] == keys


def test_header_lists_the_ports_with_their_lldp_frame_size():
    ports = [{'port': 'swp1s0', 'node': 'node01', 'npu': 6, 'max_frame_size': 9216},
             {'port': 'swp1s1', 'node': 'node01', 'npu': 7, 'max_frame_size': None}]
    lines = header('leaf-c', 'cumulus', 'the model', INTENT_DEFAULTS, ports)
    assert lines[2] == '# family: cumulus (the model)'
    assert lines[3].startswith('# intent: lossless priority 4, DSCP 33, NPU MTU 9000')
    assert lines[5:7] == ['#   swp1s0  node01 NPU 6  (LLDP max frame size now 9216)', '#   swp1s1  node01 NPU 7']
    assert lines[-1].startswith('# check every line')
