# -*- coding: utf-8 -*-
"""Pure tests of the port attribute table (desired state) used by hccn_config and hccn_info."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils._domain import port_table as st
from ansible_collections.npuops.ascend.plugins.module_utils._parsers import hccn_tool as hccn_parsers
from ansible_collections.npuops.ascend.plugins.module_utils._tools import hccn_tool as _hccn_tool

P = st.PORTS
CAPTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'captures')
TREE = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'parsers')


def capture(name):
    with open(os.path.join(CAPTURES, name)) as handle:
        return handle.read()


def sample(case):
    with open(os.path.join(TREE, case + '.txt')) as handle:
        return handle.read()


# ------------------------------------------------------------------ validation

def test_validate_normalises_and_sorts():
    entries = P.validate([
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
    ({'mtu': 9000}, "device None is not an integer"),
    ({'device': 0, 'pfc_priorities': 5}, 'pfc_priorities must be a list'),
    ({'device': 0, 'dscp_to_tc': 5}, 'dscp_to_tc must be a list'),
    ({'device': 0, 'dscp_to_tc': [5]}, 'dscp_to_tc entry 5 is not a {dscp, tc} dictionary'),
    ({'device': 1.9, 'mtu': 9000}, 'device 1.9 is not an integer'),
    ({'device': True, 'mtu': 9000}, 'device True is not an integer'),
    ({'device': 0, 'mtu': True}, 'mtu True is not an integer'),
    ({'device': 0, 'speed': 100}, 'unknown keys speed'),
])
def test_validate_refuses(entry, expected):
    with pytest.raises(st.ConfigError) as err:
        P.validate([entry])
    assert expected in str(err.value)


def test_validate_duplicates():
    with pytest.raises(st.ConfigError) as err:
        P.validate([
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
        P.validate([{'device': 0, 'mtu': 1}, {'device': 1, 'pfc_priorities': [9]}])
    assert len(err.value.errors) == 2


def test_queries_for_only_requested():
    assert P.queries_for({'device': 0, 'tls': True, 'mtu': 9000}) == ['mtu', 'tls']
    assert P.queries_for({'device': 0, 'address': 'a', 'netmask': 'b'}) == ['ip', 'gateway']
    assert P.queries_for({'device': 0, 'gateway': 'c', 'tls': False}) == ['ip', 'gateway', 'tls']


# ------------------------------------------------------------------ rendering

def test_render_exact_argv():
    want = P.validate([{
        'device': 3, 'address': '10.0.3.13', 'netmask': '255.255.255.0', 'gateway': '10.0.3.1', 'netdetect': '10.0.3.1',
        'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': [{'dscp': 46, 'tc': 3}, {'dscp': 33, 'tc': 2}], 'tls': False}])[0]
    argvs = P.render('/t/hccn_tool', 3, P.diff(want, {}))
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
    assert _hccn_tool.command_string(argvs[3]) == 'hccn_tool -i 3 -mtu -s size 9000'
    assert P.render_request('hccn_tool', [want]) == [['hccn_tool'] + a[1:] for a in argvs]


def test_pfc_bitmap():
    assert st.pfc_bitmap([]) == '0,0,0,0,0,0,0,0'
    assert st.pfc_bitmap([3, 4]) == '0,0,0,1,1,0,0,0'


def test_get_and_set_argv_come_from_the_adapter():
    assert _hccn_tool.get_argv('hccn_tool', 2, 'dscp_to_tc') == ['hccn_tool', '-i', '2', '-dscp_to_tc', '-g']
    assert _hccn_tool.set_argv('hccn_tool', 2, 'mtu', 'size', 9000) == ['hccn_tool', '-i', '2', '-mtu', '-s', 'size', '9000']
    assert _hccn_tool.ping_argv('t', 1, '10.0.0.2', 3, 8972) == ['t', '-i', '1', '-ping', '-g', 'address', '10.0.0.2',
                                                                 'pkt', '3', 'size', '8972']


# ------------------------------------------------------------------ want vs have

def test_diff_no_change():
    want = P.validate([{'device': 0, 'address': '10.10.0.10', 'netmask': '255.255.255.0', 'mtu': 9000,
                        'pfc_priorities': [4], 'dscp_to_tc': [{'dscp': 0, 'tc': 0}], 'tls': False}])[0]
    have = {'address': '10.10.0.10', 'netmask': '255.255.255.0', 'mtu': 9000, 'pfc_priorities': [4],
            'dscp_to_tc': dict((d, 0) for d in range(64)), 'tls': False}
    assert P.diff(want, have) == {}


def test_diff_partial_dscp_and_netmask_only():
    want = P.validate([{'device': 0, 'address': '10.10.0.10', 'netmask': '255.255.0.0',
                        'dscp_to_tc': [{'dscp': 0, 'tc': 0}, {'dscp': 33, 'tc': 3}]}])[0]
    have = {'address': '10.10.0.10', 'netmask': '255.255.255.0', 'dscp_to_tc': {0: 0, 33: 0}}
    changes = P.diff(want, have)
    assert changes == {'ip': {'address': '10.10.0.10', 'netmask': '255.255.0.0'}, 'dscp_to_tc': {'dscp_to_tc': {33: 3}}}
    assert P.render('hccn_tool', 0, changes)[1] == ['hccn_tool', '-i', '0', '-dscp_to_tc', '-s', 'dscp', '33', 'tc', '3']


def test_diff_unset_values_change():
    want = P.validate([{'device': 0, 'gateway': '10.0.0.1', 'pfc_priorities': []}])[0]
    changes = P.diff(want, {'gateway': None, 'pfc_priorities': None})
    assert changes == {'gateway': {'gateway': '10.0.0.1'}, 'pfc': {'pfc_priorities': []}}


def test_check_against_have():
    want = P.validate([{'device': 4, 'gateway': '10.0.1.1'}])[0]
    assert 'not in the subnet 10.0.0.0/24' in P.check_against_have(want, {'address': '10.0.0.4', 'netmask': '255.255.255.0'})[0]
    assert 'has no IP address' in P.check_against_have(want, {'address': None, 'netmask': None})[0]
    move = P.validate([{'device': 4, 'address': '10.9.0.4', 'netmask': '255.255.255.0'}])[0]
    msg = P.check_against_have(move, {'address': '10.0.0.4', 'netmask': '255.255.255.0', 'gateway': '10.0.0.1'})[0]
    assert 'leaves the current gateway 10.0.0.1 outside the subnet 10.9.0.0/24' in msg
    assert P.check_against_have(move, {'address': '10.0.0.4', 'netmask': '255.255.255.0', 'gateway': None}) == []


def test_mismatches_messages():
    want = P.validate([{'device': 3, 'pfc_priorities': [4], 'mtu': 9000, 'tls': False}])[0]
    have = {'pfc_priorities': [], 'mtu': 1500, 'tls': True}
    assert P.mismatches(want, have) == [
        'mtu is 1500, expected 9000',
        'PFC bitmap still 0,0,0,0,0,0,0,0 after setting priorities 4',
        'tls is true, expected false',
    ]
    assert P.mismatches(want, P.merge(have, P.diff(want, have))) == []


def test_merge_dscp():
    after = P.merge({'dscp_to_tc': {1: 0, 2: 0}}, {'dscp_to_tc': {'dscp_to_tc': {2: 3}}})
    assert after == {'dscp_to_tc': {1: 0, 2: 3}}


def test_restrict_to_request():
    want = {'device': 0, 'dscp_to_tc': {33: 3}, 'mtu': 9000}
    have = {'dscp_to_tc': dict((d, 0) for d in range(64)), 'mtu': 1500, 'tls': True}
    assert P.restrict(want, have) == {'device': 0, 'mtu': 1500, 'dscp_to_tc': {33: 0}}


# ------------------------------------------------------------------ have from parsed output

def test_read_shapes():
    assert P.read('ip', {'address': '10.10.0.10', 'netmask': '255.255.255.0'}) == {
        'address': '10.10.0.10', 'netmask': '255.255.255.0'}
    assert P.read('ip', None) == {'address': None, 'netmask': None}
    assert P.read('pfc', {'priorities': [4], 'bitmap': '0,0,0,0,1,0,0,0'}) == {'pfc_priorities': [4]}
    assert P.read('pfc', {'bitmap': '0,0,0,1,1,0,0,0'}) == {'pfc_priorities': [3, 4]}
    assert P.read('mtu', {'mtu': 9000}) == {'mtu': 9000}
    assert P.read('dscp_to_tc', {'map': {'0': 0, '33': 3}}) == {'dscp_to_tc': {0: 0, 33: 3}}
    assert P.read('tls', {'enabled': False}) == {'tls': False}
    assert P.read('gateway', {'gateway': '11.12.165.1', 'iface': 'eth0'}) == {'gateway': '11.12.165.1'}
    assert P.read('netdetect', {'netdetect': '0.0.0.0'}) == {'netdetect': None}
    assert P.read('netdetect', {'netdetect': '11.12.165.1'}) == {'netdetect': '11.12.165.1'}


@pytest.mark.parametrize('case', sorted(
    os.path.join(q, name[:-4]) for q in ('ip', 'gateway', 'netdetect', 'pfc', 'tls', 'dscp_to_tc', 'mtu')
    for name in os.listdir(os.path.join(TREE, 'hccn_tool', q)) if name.endswith('.txt')))
def test_every_real_sample_reads_into_the_vocabulary(case):
    query = case.split(os.sep)[0]
    parsed = hccn_parsers.PARSERS[query](sample('hccn_tool/' + case))
    have = P.read(query, parsed)
    assert set(have) == set(P.by_query[query].keys)
    # what was read validates as a request again (it can be fed back as config)
    request = dict((k, v) for k, v in P.export(dict(have, device=0)).items() if v is not None)
    if set(request) - {'device'}:
        assert P.validate([request])


def test_one_meaning_per_error_text():
    # "Command execute failed!" is the generic DSMI failure for every query, never "not configured"
    for text in ('Command execute failed!', 'Execute failed: Link status is down.'):
        assert _hccn_tool.classify_error(text)['not_configured'] is False
    assert _hccn_tool.classify_error('Command execute failed!')['meaning'] == _hccn_tool.FAILED
    assert _hccn_tool.classify_error('Execute failed: Link status is down.')['meaning'] == _hccn_tool.UNANSWERED
    assert _hccn_tool.classify_error('Get ipconf failed, because no ip was preset there!')['meaning'] == _hccn_tool.UNSET
    assert _hccn_tool.classify_error('hccn_tool is busy, please try again.')['meaning'] == _hccn_tool.BUSY
    assert _hccn_tool.classify_error('link status: UP') is None


# ------------------------------------------------------------------ diff text, backup

def test_device_diff_text():
    before = {'device': 2, 'mtu': 1500, 'pfc_priorities': [], 'dscp_to_tc': {33: 0}, 'tls': None}
    after = {'device': 2, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': {33: 3}, 'tls': False}
    diff = P.device_diff('node-07', before, after)
    assert diff['before_header'] == 'NPU 2 on node-07'
    assert diff['before'] == 'mtu: 1500\npfc_priorities: []\ndscp_to_tc:\n  dscp 33: tc 0\ntls: not set\n'
    assert diff['after'] == 'mtu: 9000\npfc_priorities: [4]\ndscp_to_tc:\n  dscp 33: tc 3\ntls: false\n'


def test_backup_roundtrip():
    devices = [{'device': 1, 'address': '10.0.0.11', 'netmask': '255.255.255.0', 'gateway': None, 'dscp_to_tc': {33: 0}},
               {'device': 0, 'mtu': 1500, 'pfc_priorities': []}]
    doc = json.loads(st.dump_backup(P.backup_document('node-07', '2026-01-01T00:00:00Z', devices)))
    assert doc['format'] == st.BACKUP_FORMAT and doc['host'] == 'node-07'
    assert [d['device'] for d in doc['devices']] == [0, 1]
    config, warnings = P.config_from_backup(doc, 'node-07')
    assert config == [{'device': 0, 'mtu': 1500, 'pfc_priorities': []},
                      {'device': 1, 'address': '10.0.0.11', 'netmask': '255.255.255.0', 'dscp_to_tc': [{'dscp': 33, 'tc': 0}]}]
    assert warnings == ['NPU 1: gateway was not set when the backup was taken; hccn_tool cannot clear it, '
                        'so the current value is left as it is']
    assert P.validate(config)


def test_backup_rejects_foreign_document():
    with pytest.raises(st.BackupError):
        P.config_from_backup({'devices': []}, 'node-07')
    with pytest.raises(st.BackupError):
        P.config_from_backup({'format': st.BACKUP_FORMAT, 'version': 99, 'devices': []}, 'node-07')


def _doc(devices, host='node-07'):
    return {'format': st.BACKUP_FORMAT, 'version': st.BACKUP_VERSION, 'host': host, 'created': 'x', 'devices': devices}


def test_backup_written_on_another_host_is_refused_unless_allowed():
    doc = _doc([{'device': 0, 'mtu': 4200}], host='some-other-node')
    with pytest.raises(st.BackupError) as err:
        P.config_from_backup(doc, 'node-07')
    assert 'written on some-other-node, not on this host node-07' in err.value.msg
    assert 'allow_other_host=true' in err.value.msg
    config, warnings = P.config_from_backup(doc, 'node-07', allow_other_host=True)
    assert config == [{'device': 0, 'mtu': 4200}]
    assert warnings == ['restoring a backup written on some-other-node on node-07 (allow_other_host=true)']


@pytest.mark.parametrize('device, needle', [
    ({'device': 0, 'pfc_priorities': {'a': 1}}, "pfc_priorities"),
    ({'device': 0, 'pfc_priorities': ['x']}, "pfc_priorities"),
    ({'device': 0, 'dscp_to_tc': 5}, 'dscp_to_tc'),
    ({'device': 0, 'dscp_to_tc': [5]}, 'dscp_to_tc'),
    ({'device': 0, 'dscp_to_tc': ['a']}, 'dscp_to_tc'),
    ({'device': 1.9, 'mtu': 4100}, "device"),
    ({'device': 0, 'mtu': 'x'}, 'mtu'),
    ({'device': 0, 'speed': 100}, 'speed'),
    ({'mtu': 4100}, 'device'),
    (5, 'devices'),
])
def test_tampered_backup_is_refused_by_the_config_checks(device, needle):
    with pytest.raises(st.BackupError) as err:
        P.config_from_backup(_doc([device]), 'node-07')
    assert 'does not pass the checks of the config option' in err.value.msg
    assert needle in err.value.msg


def test_backup_scalars_are_coerced_as_the_config_option_does():
    # Ansible turns a scalar into a one-element list for a list option: the same happens to a backup
    config, _warnings = P.config_from_backup(_doc([{'device': 0, 'pfc_priorities': 5}]), 'node-07')
    assert config == [{'device': 0, 'pfc_priorities': [5]}]


def test_backup_values_within_types_still_go_through_validate():
    config, _warnings = P.config_from_backup(_doc([{'device': 0, 'dscp_to_tc': [{'dscp': 33, 'tc': 4}]}]), 'node-07')
    with pytest.raises(st.ConfigError) as err:
        P.validate(config)
    assert 'TC 4 for DSCP 33 is outside 0-3' in err.value.msg


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
    table = st.PortTable([st.PortAttribute(row.name, row.query, row.options, row.normalise, row.read, row.render,
                                           parser=_fake_ip_parser) for row in st.ATTRIBUTES[:1]])
    config, warnings = table.parse_running_config(text[start:end] + 'hccn_tool -i 1 -lldp -g\nx\n')
    assert config == [{'device': 1, 'address': '192.161.201.10', 'netmask': '255.255.255.0'},
                      {'device': 2, 'address': None, 'netmask': None}]
    assert warnings == ['NPU 1: -lldp output is not part of hccn_config and was ignored']


def test_parse_running_config_with_the_real_parsers():
    text = ''.join('hccn_tool -i %d -ip -g\n%s' % (dev, sample('hccn_tool/ip/mc_worker0_dev%d' % dev)) for dev in (0, 1))
    text += 'hccn_tool -i 0 -pfc -g\n' + sample('hccn_tool/pfc/hixl_dev0_prio4')
    config, warnings = P.parse_running_config(text)
    assert config == [{'device': 0, 'address': '10.10.0.10', 'netmask': '255.255.255.0', 'pfc_priorities': [4]},
                      {'device': 1, 'address': '10.10.0.11', 'netmask': '255.255.255.0'}]
    assert warnings == []


# ------------------------------------------------------------------ the table is the only place that knows the attributes

FEC_MODES = ('auto', 'no', 'rs')


def _norm_fec(values, prefix, errors):
    if values['fec'] not in FEC_MODES:
        errors.append('%s: fec %r is not one of %s' % (prefix, values['fec'], ', '.join(FEC_MODES)))
        return {}
    return {'fec': values['fec']}


FEC = st.PortAttribute('fec', 'fec', {'fec': {'type': 'str', 'choices': list(FEC_MODES)}}, _norm_fec,
                       lambda parsed: {'fec': (parsed or {}).get('fec')}, lambda v: [['mode', v['fec']]], link_affecting=True)


def test_an_attribute_added_as_one_row_is_validated_rendered_and_read_back():
    table = st.PortTable(st.ATTRIBUTES + (FEC,))
    assert table.argspec()['fec'] == {'type': 'str', 'choices': ['auto', 'no', 'rs']}
    with pytest.raises(st.ConfigError) as err:
        table.validate([{'device': 2, 'fec': 'fast'}])
    assert "NPU 2: fec 'fast' is not one of auto, no, rs" in err.value.msg
    want = table.validate([{'device': 2, 'fec': 'rs', 'mtu': 9000}])[0]
    assert table.queries_for(want) == ['mtu', 'fec']
    # read back with the real parser and a real sample
    have = {'device': 2, 'mtu': 9000}
    have.update(table.read('fec', hccn_parsers.PARSERS['fec'](sample('hccn_tool/fec/mc_910a_no_fec'))))
    assert have['fec'] == 'no'
    changes = table.diff(want, have)
    assert changes == {'fec': {'fec': 'rs'}}
    assert table.render('/t/hccn_tool', 2, changes) == [['/t/hccn_tool', '-i', '2', '-fec', '-s', 'mode', 'rs']]
    assert table.link_affecting_queries() == ('mtu', 'pfc', 'fec')
    after = {'device': 2, 'mtu': 9000}
    after.update(table.read('fec', hccn_parsers.PARSERS['fec'](sample('hccn_tool/fec/mc_doc_rs_fec'))))
    assert table.mismatches(want, after) == []
    assert table.mismatches(want, have) == ['fec is no, expected rs']
    assert table.export(after) == {'device': 2, 'mtu': 9000, 'fec': 'rs'}
    assert 'fec: rs' in table.diff_text(after)


def test_a_table_refuses_two_rows_for_one_query():
    with pytest.raises(ValueError):
        st.PortTable(st.ATTRIBUTES + (st.ATTRIBUTES[3],))
