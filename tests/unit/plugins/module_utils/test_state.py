# -*- coding: utf-8 -*-
"""Pure tests of the desired-state layer used by hccn_config."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils import _state as st

CAPTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'captures')


def capture(name):
    with open(os.path.join(CAPTURES, name)) as handle:
        return handle.read()


# ------------------------------------------------------------------ validation

def test_validate_normalises_and_sorts():
    entries = st.validate_config([
        {'device': 1, 'address': '10.0.1.11', 'netmask': '24', 'gateway': '10.0.1.1', 'mtu': '9000'},
        {'device': 0, 'pfc_priorities': [4, 4], 'dscp_to_tc': [{'dscp': 33, 'tc': 3}], 'tls': False},
    ])
    assert entries == [
        {'device': 0, 'pfc_priorities': [4], 'dscp_to_tc': {33: 3}, 'tls': False},
        {'device': 1, 'address': '10.0.1.11', 'netmask': '255.255.255.0', 'gateway': '10.0.1.1', 'mtu': 9000},
    ]


@pytest.mark.parametrize('entry, expected', [
    ({'device': 3, 'mtu': 9703}, 'NPU 3: mtu 9703 is outside 68-9702'),
    ({'device': 3, 'mtu': 67}, 'NPU 3: mtu 67 is outside 68-9702'),
    ({'device': 2, 'pfc_priorities': [0, 1, 2, 3, 4]}, 'NPU 2: 5 PFC priorities requested (0,1,2,3,4); the 910B allows at most 4'),
    ({'device': 2, 'pfc_priorities': [8]}, 'NPU 2: PFC priority 8 is outside 0-7'),
    ({'device': 5, 'dscp_to_tc': [{'dscp': 33, 'tc': 4}]}, '"-dscp_to_tc -s dscp 33 tc 4" exits 10'),
    ({'device': 5, 'dscp_to_tc': [{'dscp': 64, 'tc': 3}]}, 'NPU 5: DSCP 64 is outside 0-63'),
    ({'device': 5, 'dscp_to_tc': [{'dscp': 10, 'tc': 1}, {'dscp': 10, 'tc': 2}]}, 'DSCP 10 is mapped twice'),
    ({'device': 0, 'address': '10.0.0.300', 'netmask': '255.255.255.0'}, "address '10.0.0.300' is not a valid IPv4"),
    ({'device': 0, 'address': '10.0.0.3', 'netmask': '255.0.255.0'}, 'not a contiguous netmask'),
    ({'device': 0, 'address': '10.0.0.3'}, 'address and netmask must be given together'),
    ({'device': 0, 'address': '10.0.0.0', 'netmask': '255.255.255.0'}, 'is the network address of 10.0.0.0/24'),
    ({'device': 0, 'address': '10.0.0.255', 'netmask': '255.255.255.0'}, 'is the broadcast address'),
    ({'device': 0, 'address': '10.0.0.3', 'netmask': '255.255.255.0', 'gateway': '10.0.1.1'},
     'NPU 0: gateway 10.0.1.1 is not in the subnet 10.0.0.0/24 of address 10.0.0.3'),
    ({'device': 0, 'netdetect': '0.0.0.0'}, 'netdetect 0.0.0.0 cannot be set'),
    ({'device': 0, 'tls': 'yes'}, 'tls must be true or false'),
    ({'device': -1, 'mtu': 9000}, 'NPU -1: device id must be 0 or greater'),
    ({'mtu': 9000}, 'device is required'),
])
def test_validate_refuses(entry, expected):
    with pytest.raises(st.ConfigError) as err:
        st.validate_config([entry])
    assert expected in str(err.value)


def test_validate_duplicates():
    with pytest.raises(st.ConfigError) as err:
        st.validate_config([
            {'device': 0, 'address': '10.0.0.10', 'netmask': '255.255.255.0'},
            {'device': 1, 'address': '10.0.0.10', 'netmask': '255.255.255.0'},
            {'device': 1, 'mtu': 9000},
        ])
    text = str(err.value)
    assert 'NPU 1: the device appears more than once in config' in text
    assert 'address 10.0.0.10 is requested for NPUs 0, 1' in text
    assert len(err.value.errors) == 2


def test_validate_collects_every_error():
    with pytest.raises(st.ConfigError) as err:
        st.validate_config([{'device': 0, 'mtu': 1}, {'device': 1, 'pfc_priorities': [9]}])
    assert len(err.value.errors) == 2


def test_queries_for_only_requested():
    assert st.queries_for({'device': 0, 'tls': True, 'mtu': 9000}) == ['mtu', 'tls']
    assert st.queries_for({'device': 0, 'address': 'a', 'netmask': 'b'}) == ['ip', 'gateway']
    assert st.queries_for({'device': 0, 'gateway': 'c', 'tls': False}) == ['ip', 'gateway', 'tls']


# ------------------------------------------------------------------ rendering

def test_render_exact_argv():
    want = st.validate_config([{
        'device': 3, 'address': '10.0.3.13', 'netmask': '255.255.255.0', 'gateway': '10.0.3.1', 'netdetect': '10.0.3.1',
        'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': [{'dscp': 46, 'tc': 3}, {'dscp': 33, 'tc': 2}], 'tls': False}])[0]
    argvs = st.render_device('/t/hccn_tool', 3, st.diff_device(want, {}))
    assert argvs == [
        ['/t/hccn_tool', '-i', '3', '-ip', '-s', 'address', '10.0.3.13', 'netmask', '255.255.255.0'],
        ['/t/hccn_tool', '-i', '3', '-gateway', '-s', 'gateway', '10.0.3.1'],
        ['/t/hccn_tool', '-i', '3', '-netdetect', '-s', 'address', '10.0.3.1'],
        ['/t/hccn_tool', '-i', '3', '-mtu', '-s', 'size', '9000'],
        ['/t/hccn_tool', '-i', '3', '-pfc', '-s', 'bitmap', '0,0,0,0,1,0,0,0'],
        ['/t/hccn_tool', '-i', '3', '-dscp_to_tc', '-s', 'dscp', '33', 'tc', '2'],
        ['/t/hccn_tool', '-i', '3', '-dscp_to_tc', '-s', 'dscp', '46', 'tc', '3'],
        ['/t/hccn_tool', '-i', '3', '-tls', '-s', 'enable', '0'],
    ]
    assert st.command_string(argvs[3]) == 'hccn_tool -i 3 -mtu -s size 9000'


def test_pfc_bitmap():
    assert st.pfc_bitmap([]) == '0,0,0,0,0,0,0,0'
    assert st.pfc_bitmap([3, 4]) == '0,0,0,1,1,0,0,0'


def test_get_argv():
    assert st.get_argv('hccn_tool', 2, 'dscp_to_tc') == ['hccn_tool', '-i', '2', '-dscp_to_tc', '-g']
    assert st.link_argv('hccn_tool', 2) == ['hccn_tool', '-i', '2', '-link', '-g']


# ------------------------------------------------------------------ want vs have

def test_diff_no_change():
    want = st.validate_config([{'device': 0, 'address': '10.10.0.10', 'netmask': '255.255.255.0', 'mtu': 9000,
                                'pfc_priorities': [4], 'dscp_to_tc': [{'dscp': 0, 'tc': 0}], 'tls': False}])[0]
    have = {'address': '10.10.0.10', 'netmask': '255.255.255.0', 'mtu': 9000, 'pfc_priorities': [4],
            'dscp_to_tc': dict((d, 0) for d in range(64)), 'tls': False}
    assert st.diff_device(want, have) == {}


def test_diff_partial_dscp_and_netmask_only():
    want = st.validate_config([{'device': 0, 'address': '10.10.0.10', 'netmask': '255.255.0.0',
                                'dscp_to_tc': [{'dscp': 0, 'tc': 0}, {'dscp': 33, 'tc': 3}]}])[0]
    have = {'address': '10.10.0.10', 'netmask': '255.255.255.0', 'dscp_to_tc': {0: 0, 33: 0}}
    changes = st.diff_device(want, have)
    assert changes == {'ip': {'address': '10.10.0.10', 'netmask': '255.255.0.0'}, 'dscp_to_tc': {'dscp_to_tc': {33: 3}}}
    assert st.render_device('hccn_tool', 0, changes)[1] == ['hccn_tool', '-i', '0', '-dscp_to_tc', '-s', 'dscp', '33', 'tc', '3']


def test_diff_unset_values_change():
    want = st.validate_config([{'device': 0, 'gateway': '10.0.0.1', 'pfc_priorities': []}])[0]
    changes = st.diff_device(want, {'gateway': None, 'pfc_priorities': None})
    assert changes == {'gateway': {'gateway': '10.0.0.1'}, 'pfc': {'pfc_priorities': []}}


def test_check_against_have():
    want = st.validate_config([{'device': 4, 'gateway': '10.0.1.1'}])[0]
    assert 'not in the subnet 10.0.0.0/24' in st.check_against_have(want, {'address': '10.0.0.4', 'netmask': '255.255.255.0'})[0]
    assert 'has no IP address' in st.check_against_have(want, {'address': None, 'netmask': None})[0]
    move = st.validate_config([{'device': 4, 'address': '10.9.0.4', 'netmask': '255.255.255.0'}])[0]
    msg = st.check_against_have(move, {'address': '10.0.0.4', 'netmask': '255.255.255.0', 'gateway': '10.0.0.1'})[0]
    assert 'leaves the current gateway 10.0.0.1 outside the subnet 10.9.0.0/24' in msg
    assert st.check_against_have(move, {'address': '10.0.0.4', 'netmask': '255.255.255.0', 'gateway': None}) == []


def test_mismatches_messages():
    want = st.validate_config([{'device': 3, 'pfc_priorities': [4], 'mtu': 9000, 'tls': False}])[0]
    have = {'pfc_priorities': [], 'mtu': 1500, 'tls': True}
    assert st.mismatches(want, have) == [
        'mtu is 1500, expected 9000',
        'PFC bitmap still 0,0,0,0,0,0,0,0 after setting priorities 4',
        'tls is true, expected false',
    ]
    assert st.mismatches(want, st.merge(have, st.diff_device(want, have))) == []


def test_merge_dscp():
    after = st.merge({'dscp_to_tc': {1: 0, 2: 0}}, {'dscp_to_tc': {'dscp_to_tc': {2: 3}}})
    assert after == {'dscp_to_tc': {1: 0, 2: 3}}


def test_restrict_to_request():
    want = {'device': 0, 'dscp_to_tc': {33: 3}, 'mtu': 9000}
    have = {'dscp_to_tc': dict((d, 0) for d in range(64)), 'mtu': 1500, 'tls': True}
    assert st.restrict_to_request(want, have) == {'device': 0, 'mtu': 1500, 'dscp_to_tc': {33: 0}}


# ------------------------------------------------------------------ have from parsed output

def test_have_from_parsed_shapes():
    assert st.have_from_parsed('ip', {'address': '10.10.0.10', 'netmask': '255.255.255.0'}) == {
        'address': '10.10.0.10', 'netmask': '255.255.255.0'}
    assert st.have_from_parsed('ip', None) == {'address': None, 'netmask': None}
    assert st.have_from_parsed('pfc', {'priorities': [4], 'bitmap': '0,0,0,0,1,0,0,0'}) == {'pfc_priorities': [4]}
    assert st.have_from_parsed('pfc', {'bitmap': '0,0,0,1,1,0,0,0'}) == {'pfc_priorities': [3, 4]}
    assert st.have_from_parsed('mtu', {'mtu': 9000}) == {'mtu': 9000}
    assert st.have_from_parsed('dscp_to_tc', {'map': {'0': 0, '33': 3}}) == {'dscp_to_tc': {0: 0, 33: 3}}
    assert st.have_from_parsed('tls', {'enabled': False}) == {'tls': False}
    assert st.have_from_parsed('gateway', {'gateway': '11.12.165.1', 'iface': 'eth0'}) == {'gateway': '11.12.165.1'}
    assert st.have_from_parsed('netdetect', {'netdetect': '0.0.0.0'}) == {'netdetect': None}
    assert st.have_from_parsed('netdetect', {'address': '11.12.165.1'}) == {'netdetect': '11.12.165.1'}


def test_not_configured_and_busy():
    assert st.is_not_configured('ip', 13, '', 'Get ipconf failed, because no ip was preset there!\n')
    assert st.is_not_configured('gateway', 2, '', 'Get gateway failed, because no gateway was preset there!\n')
    assert not st.is_not_configured('pfc', 22, '', 'Execute failed: Link status is down.\n')
    assert not st.is_not_configured('ip', 0, 'ipaddr:10.10.0.10\n', '')
    assert st.is_not_configured('netdetect', 1, '', 'Command execute failed!\n')
    assert not st.is_not_configured('mtu', 1, '', 'Command execute failed!\n')
    assert st.is_busy(11, 'hccn_tool is busy, please try again.\n', '')
    assert not st.is_busy(12, '', 'permission denied: pls check this cmd run permission.\n')


# ------------------------------------------------------------------ diff text, backup

def test_device_diff_text():
    before = {'device': 2, 'mtu': 1500, 'pfc_priorities': [], 'dscp_to_tc': {33: 0}, 'tls': None}
    after = {'device': 2, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': {33: 3}, 'tls': False}
    diff = st.device_diff('node-07', before, after)
    assert diff['before_header'] == 'NPU 2 on node-07'
    assert diff['before'] == 'mtu: 1500\npfc_priorities: []\ndscp_to_tc:\n  dscp 33: tc 0\ntls: not set\n'
    assert diff['after'] == 'mtu: 9000\npfc_priorities: [4]\ndscp_to_tc:\n  dscp 33: tc 3\ntls: false\n'


def test_backup_roundtrip():
    devices = [{'device': 1, 'address': '10.0.0.11', 'netmask': '255.255.255.0', 'gateway': None, 'dscp_to_tc': {33: 0}},
               {'device': 0, 'mtu': 1500, 'pfc_priorities': []}]
    doc = json.loads(st.dump_backup(st.backup_document('node-07', '2026-01-01T00:00:00Z', devices)))
    assert doc['format'] == st.BACKUP_FORMAT and doc['host'] == 'node-07'
    assert [d['device'] for d in doc['devices']] == [0, 1]
    config, warnings = st.config_from_backup(doc)
    assert config == [{'device': 0, 'mtu': 1500, 'pfc_priorities': []},
                      {'device': 1, 'address': '10.0.0.11', 'netmask': '255.255.255.0', 'dscp_to_tc': [{'dscp': 33, 'tc': 0}]}]
    assert warnings == ['NPU 1: gateway was not set when the backup was taken; hccn_tool cannot clear it, '
                        'so the current value is left as it is']
    assert st.validate_config(config)


def test_backup_rejects_foreign_document():
    with pytest.raises(st.BackupError):
        st.config_from_backup({'devices': []})
    with pytest.raises(st.BackupError):
        st.config_from_backup({'format': st.BACKUP_FORMAT, 'version': 99, 'devices': []})


def test_backup_filename():
    assert st.backup_filename('node-07', '20260101T000000Z') == 'hccn-node-07-20260101T000000Z.json'
    assert st.backup_filename('a/b c', 'x') == 'hccn-a_b_c-x.json'


# ------------------------------------------------------------------ parsed state

def test_split_running_config_real_capture():
    text = capture('hccn_tool_-ip_-g.txt')
    start = text.index('/usr/local/Ascend/driver/tools/hccn_tool -i 0 -ip -g\nipaddr:10.10.0.10')
    end = text.index('# source:', start)
    blocks = st.split_running_config(text[start:end])
    assert len(blocks) == 8
    assert blocks[0] == (0, 'ip', 'ipaddr:10.10.0.10\nnetmask:255.255.255.0')
    assert blocks[7] == (7, 'ip', 'ipaddr:10.10.0.17\nnetmask:255.255.255.0')


def test_split_running_config_prompt_and_empty_block():
    text = capture('hccn_tool_-ip_-g.txt')
    start = text.index('/usr/local/Ascend/driver/tools/hccn_tool -i 1 -ip -g\nipaddr:192.161.201.10')
    end = text.index('# source:', start)
    blocks = st.split_running_config(text[start:end])
    assert blocks == [(1, 'ip', 'ipaddr:192.161.201.10\nnetmask:255.255.255.0'), (2, 'ip', '')]
    start = text.index('$ hccn_tool -i 3 -ip -g')
    assert st.split_running_config(text[start:]) == [(3, 'ip', 'ipaddr:29.1.112.213\nnetmask:255.255.0.0')]


def _fake_ip_parser(text):
    out = {'unparsed': []}
    for line in text.splitlines():
        key, _sep, value = line.partition(':')
        if key == 'ipaddr':
            out['address'] = value
        elif key == 'netmask':
            out['netmask'] = value
        elif line.strip():
            out['unparsed'].append(line)
    return out


def test_parse_running_config_with_table():
    text = capture('hccn_tool_-ip_-g.txt')
    start = text.index('/usr/local/Ascend/driver/tools/hccn_tool -i 1 -ip -g\nipaddr:192.161.201.10')
    end = text.index('# source:', start)
    config, warnings = st.parse_running_config(text[start:end] + 'hccn_tool -i 1 -lldp -g\nx\n', {'ip': _fake_ip_parser})
    assert config == [{'device': 1, 'address': '192.161.201.10', 'netmask': '255.255.255.0'},
                      {'device': 2, 'address': None, 'netmask': None}]
    assert warnings == ['NPU 1: -lldp output is not part of hccn_config and was ignored']
