"""switch_neighbours, switch_config, switch_intent_problems: the real LLDP capture, a synthetic PoD over four
switches, golden files per family, and a check that every rendered line is one the command references show.

Regenerate the golden files with NPUOPS_REGEN_GOLDEN=1, then review the diff line by line against
../shared/reference/switch-qos.md and its sources before committing.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.filter import switch_config as module
from ansible_collections.npuops.ascend.plugins.filter.switch_config import switch_config, switch_intent_problems, switch_neighbours
from ansible_collections.npuops.ascend.plugins.module_utils._parsers.hccn_tool import parse_lldp_get

HERE = os.path.dirname(__file__)
CAPTURE = os.path.join(HERE, '..', '..', '..', 'fixtures', 'captures', 'hccn_tool_-lldp_-g.txt')
GOLDEN = os.path.join(HERE, '..', '..', 'fixtures', 'switch')
REGEN = os.environ.get('NPUOPS_REGEN_GOLDEN') == '1'

FAMILY_OF = {'leaf-a': 'huawei_ce_a', 'leaf-b': 'huawei_ce_b', 'leaf-s': 'sonic', 'leaf-c': 'cumulus'}
SWITCHES = dict((name, {'family': family}) for name, family in FAMILY_OF.items())
CASES = {
    'default': {},
    'p3_dscp26': {'lossless_priority': 3, 'lossless_dscp': 26, 'mtu': 9000},
    # DSCP 33 on priority 3: the CE default DiffServ domain puts 33 in queue 4, so CE needs its own domain
    'p3_dscp33': {'lossless_priority': 3, 'lossless_dscp': 33, 'mtu': 9000},
}


def _lldp_text(port, system_name=None, mgmt=None, chassis=None, frame=9216):
    """A device-side lldptool blob in the shape of the real capture (TLV names at column 0, values after a TAB)."""
    lines = []
    if chassis:
        lines += ['Chassis ID TLV', '\tMAC: %s' % chassis]
    lines += ['Port ID TLV', '\tIfname: %s' % port]
    if system_name:
        lines += ['System Name TLV', '\t%s' % system_name]
    if mgmt:
        lines += ['Management Address TLV', '\tIPv4: %s' % mgmt]
    if frame:
        lines += ['Maximum Frame Size TLV', '\t%d' % frame]
    lines.append('End of LLDPDU TLV')
    return '\n'.join(lines) + '\n'


def _port_name(switch, index):
    if switch in ('leaf-a', 'leaf-b'):
        return '400GE1/1/%d:%d' % (index // 2 + 1, index % 2 + 1)
    if switch == 'leaf-s':
        return 'Ethernet%d' % (index * 8)
    return 'swp%ds%d' % (index // 2 + 1, index % 2)


def synthetic_nodes():
    """2 nodes x 8 NPUs over 4 switches: NPUs 0-1 on leaf-a, 2-3 on leaf-b, 4-5 on leaf-s, 6-7 on leaf-c."""
    names = ['leaf-a', 'leaf-b', 'leaf-s', 'leaf-c']
    nodes = []
    for node_index, node in enumerate(['node01', 'node02']):
        devices = {}
        for npu in range(8):
            switch = names[npu // 2]
            index = node_index * 2 + npu % 2  # 4 ports a switch
            text = _lldp_text(_port_name(switch, index), system_name=switch, mgmt='10.0.0.%d' % (npu // 2 + 1),
                              chassis='00:11:22:33:44:%02x' % (npu // 2))
            devices[str(npu)] = {'link': 'UP', 'lldp': parse_lldp_get(text)}
        nodes.append({'node': node, 'devices': devices})
    return nodes


@pytest.fixture(scope='module')
def neighbours():
    return switch_neighbours(synthetic_nodes())


def test_filter_table():
    assert module.FilterModule().filters() == {
        'switch_neighbours': switch_neighbours,
        'switch_config': switch_config,
        'switch_intent_problems': switch_intent_problems,
    }


# --- switch_neighbours ---------------------------------------------------------------------------------------------

def test_real_capture_has_no_system_name_so_the_management_address_names_the_switch():
    with open(CAPTURE, encoding='utf-8') as handle:
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
    devices = [{'device': d, 'lldp': parse_lldp_get(_lldp_text(port, system_name='sw'))}
               for d, port in enumerate(['400GE1/1/10:1', '400GE1/1/2:1', '400GE1/1/1:2'])]
    result = switch_neighbours([{'node': 'n1', 'devices': devices}])
    assert [p['port'] for p in result['switches']['sw']['ports']] == ['400GE1/1/1:2', '400GE1/1/2:1', '400GE1/1/10:1']


def test_unseen_ports_are_reported_never_guessed():
    devices = {
        '0': {'lldp': None},
        '1': {},
        '2': {'lldp': parse_lldp_get('\tIfname: 400GE1/1/5:1\n')},  # the grep-for-Ifname output: a port, no switch
        '3': {'lldp': parse_lldp_get('System Name TLV\n\tleaf9\n')},
        '4': {'lldp': parse_lldp_get(_lldp_text('400GE1/1/5:2', system_name='leaf9'))},
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
    lldp = parse_lldp_get(_lldp_text('400GE1/1/5:1', system_name='leaf1'))
    result = switch_neighbours([{'node': 'node01', 'devices': {'0': {'lldp': lldp}}},
                                {'node': 'node02', 'devices': {'5': {'lldp': lldp}}}])
    assert result['conflicts'] == [{'switch': 'leaf1', 'port': '400GE1/1/5:1',
                                    'npus': [{'node': 'node01', 'npu': 0}, {'node': 'node02', 'npu': 5}]}]
    config = switch_config(result, {}, default_family='huawei_ce_a')
    assert config['files'] == []
    assert config['problems'][0]['key'] == 'ports' and 'node01 NPU 0, node02 NPU 5' in config['problems'][0]['msg']


@pytest.mark.parametrize('nodes', ['x', [{'devices': {}}], [{'node': 'n', 'devices': 3}], [{'node': 'n', 'devices': {'a': {}}}]])
def test_neighbours_refuse_bad_input(nodes):
    with pytest.raises(AnsibleFilterError, match='switch_neighbours'):
        switch_neighbours(nodes)


# --- golden files --------------------------------------------------------------------------------------------------

def _render(neighbours, case):
    return switch_config(neighbours, CASES[case], SWITCHES)


@pytest.mark.parametrize('case', sorted(CASES))
def test_golden_files(neighbours, case):
    result = _render(neighbours, case)
    assert result['problems'] == [] and result['skipped'] == []
    assert sorted(f['family'] for f in result['files']) == sorted(FAMILY_OF.values())
    for item in result['files']:
        path = os.path.join(GOLDEN, case, item['filename'])
        if REGEN:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w', encoding='utf-8', newline='') as handle:
                handle.write(item['content'])
        with open(path, encoding='utf-8', newline='') as handle:
            assert item['content'] == handle.read(), 'rendered %s differs from its golden file %s' % (item['filename'], path)
        assert [p['port'] for p in item['ports']] == [p['port'] for p in neighbours['switches'][item['switch']]['ports']]


def test_filenames(neighbours):
    names = sorted(f['filename'] for f in _render(neighbours, 'default')['files'])
    assert names == ['leaf-a.cfg', 'leaf-b.cfg', 'leaf-c.nvue.sh', 'leaf-s.json']


def test_deterministic(neighbours):
    first = json.dumps(_render(neighbours, 'p3_dscp33'), sort_keys=True)
    again = switch_neighbours(list(reversed(synthetic_nodes())))
    switches = dict(reversed(list(SWITCHES.items())))
    second = json.dumps(switch_config(again, CASES['p3_dscp33'], switches), sort_keys=True)
    assert first == second


def test_numbers_as_strings_from_jinja(neighbours):
    text = dict((key, str(value)) for key, value in module.INTENT_DEFAULTS.items())
    assert switch_config(neighbours, text, SWITCHES) == _render(neighbours, 'default')


# --- every line is one the reference shows -------------------------------------------------------------------------

HW = 'HW (CE6800/CE8800 V300R023C00 command reference)'
CE_COMMON = [
    (r'#', 'VRP configuration scripts separate views with "#" (Example_for_Configuring_AI_ECN.md, Configuration Scripts)'),
    (r'return', 'VRP configuration scripts end with return (Example_for_Configuring_AI_ECN.md)'),
    (r'lldp enable', HW + ' lldp_enable.json'),
    (r'dcb pfc deadlock recovery-behavior (discard|forwarding) slot \d+', HW + ' dcb_pfc_deadlock_recovery-behavior.json'),
    (r'dcb pfc', HW + ' dcb_pfc.json'),
    (r' priority [0-7]', HW + ' priority_(DCB_PFC_view).json'),
    (r' undo priority 3', HW + ' priority_(DCB_PFC_view).json (undo priority [ <priority> ])'),
    (r'diffserv domain npuops', HW + ' diffserv_domain.json'),
    (r' ip-dscp-inbound \d+ phb (be|af[1-4]|ef|cs6|cs7) green', HW + ' ip-dscp-inbound.json'),
    (r'drop-profile npuops-roce', HW + ' drop-profile.json'),
    (r' ecn buffer-size low-limit \d+ high-limit \d+ discard-percentage \d+', HW + ' ecn.json'),
    (r'interface [0-9]+GE[0-9/:]+', HW + ' (interface view; Example_for_Configuring_AI_ECN.md "interface 100GE1/0/1")'),
    (r' jumboframe enable \d+', HW + ' jumboframe_enable.json'),
    (r' undo flow-control', HW + ' flow-control(interface_view).json'),
    (r' trust dscp', HW + ' trust.json'),
    (r' trust upstream npuops', HW + ' trust_upstream.json'),
    (r' dcb pfc enable mode manual', HW + ' dcb_pfc_enable.json'),
    (r' qos queue [0-7] wred npuops-roce', HW + ' qos_queue_wred.json'),
    (r' qos queue [0-7] ecn', HW + ' qos_queue_ecn.json'),
]
ALLOWED = {
    'huawei_ce_a': CE_COMMON + [
        (r'qos buffer headroom-pool size \d+ mbytes slot \d+', HW + ' qos_buffer_headroom-pool.json'),
        (r'dcb pfc dscp-mapping enable slot \d+', HW + ' dcb_pfc_dscp-mapping_enable.json'),
        (r'dcb pfc deadlock-detect interval (10|100|500|1000)', HW + ' dcb_pfc_deadlock-detect_interval.json'),
        (r' priority [0-7] deadlock-detect time \d+', HW + ' priority_deadlock-detect_time.json'),
        (r' priority [0-7] deadlock-recovery time \d+', HW + ' priority_deadlock-recovery_time.json'),
    ],
    'huawei_ce_b': CE_COMMON + [
        (r'dcb pfc deadlock-detect timer \d+', HW + ' dcb_pfc_deadlock-detect_timer.json'),
        (r'dcb pfc deadlock-recovery timer \d+', HW + ' dcb_pfc_deadlock-recovery_timer.json'),
        (r'qos ecn enable', HW + ' qos_ecn_enable.json'),
    ],
    'cumulus': [
        (r'nv set qos roce mode lossless', 'CL RDMA-over-Converged-Ethernet-RoCE.md'),
        (r'nv set qos pfc default-global switch-priority [0-7]', 'CL _index.md (PFC) and RoCE.md (Change RoCE Configuration)'),
        (r'nv set qos pfc default-global (tx|rx) enable', 'CL _index.md (All PFC commands)'),
        (r'nv set qos mapping default-global trust both', 'CL RoCE.md (Change RoCE Configuration)'),
        (r'nv set qos mapping default-global dscp \d+ switch-priority [0-7]', 'CL RoCE.md, _index.md (Trust DSCP)'),
        (r'nv set qos egress-queue-mapping default-global switch-priority [0-7] traffic-class [03]', 'CL RoCE.md, _index.md'),
        (r'nv set qos congestion-control default-global traffic-class 3 ecn enable', 'CL _index.md (ECN: "ecn disable")'),
        (r'nv set qos congestion-control default-global traffic-class 3 (min|max)-threshold \d+', 'CL _index.md (Congestion Control)'),
        (r'nv set qos congestion-control default-global traffic-class 3 probability \d+', 'CL _index.md (ECN port groups)'),
        (r'nv set qos pfc-watchdog polling-interval \d+', 'CL _index.md (PFC Watchdog)'),
        (r'nv set interface swp[0-9s]+ link mtu \d+', 'reference section 3 (MTU) [cfg]'),
        (r'nv set interface swp[0-9s]+ qos pfc-watchdog', 'CL _index.md (PFC Watchdog)'),
        (r'nv config apply', 'CL RoCE.md'),
    ],
}
SONIC_TABLES = {  # table: (source, value keys allowed at the deepest level)
    'DSCP_TO_TC_MAP': 'SB qos_config.j2', 'TC_TO_PRIORITY_GROUP_MAP': 'SB qos_config.j2', 'TC_TO_QUEUE_MAP': 'SB qos_config.j2',
    'MAP_PFC_PRIORITY_TO_QUEUE': 'SB qos_config.j2', 'PORT_QOS_MAP': 'SB qos_config.j2 (PORT_QOS_MAP per port)',
    'BUFFER_PG': 'SB Configuration.md (dynamic model, profile NULL)', 'WRED_PROFILE': 'SB sonic-wred-profile.yang',
    'QUEUE': 'SB qos_config.j2 (QUEUE wred_profile)', 'PFC_WD': 'SB sonic-pfcwd.yang', 'PORT': 'SB Configuration.md (PORT mtu)',
}
SONIC_FIELDS = {
    'PORT_QOS_MAP': {'dscp_to_tc_map', 'tc_to_queue_map', 'tc_to_pg_map', 'pfc_to_queue_map', 'pfc_enable', 'pfcwd_sw_enable'},
    'WRED_PROFILE': {'ecn', 'wred_green_enable', 'green_min_threshold', 'green_max_threshold', 'green_drop_probability'},
    'QUEUE': {'wred_profile'}, 'PORT': {'mtu'}, 'PFC_WD': {'POLL_INTERVAL'},
}


def _all_goldens():
    out = []
    for case in sorted(CASES):
        folder = os.path.join(GOLDEN, case)
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            family = FAMILY_OF[name.split('.')[0]]
            with open(os.path.join(GOLDEN, case, name), encoding='utf-8') as handle:
                out.append((case, name, family, handle.read()))
    return out


def test_goldens_exist_for_every_case_and_family():
    assert sorted((case, family) for case, _name, family, _content in _all_goldens()) == sorted(
        (case, family) for case in CASES for family in FAMILY_OF.values())


@pytest.mark.parametrize('case,name,family,content', _all_goldens(), ids=lambda v: v if isinstance(v, str) and '\n' not in v else '')
def test_every_line_is_one_the_reference_shows(case, name, family, content):
    if family == 'sonic':
        ops = json.loads(content)
        assert isinstance(ops, list) and ops
        for op in ops:
            assert set(op) == {'op', 'path', 'value'} and op['op'] == 'add'
            parts = [p.replace('~1', '/').replace('~0', '~') for p in op['path'].split('/')[1:]]
            assert parts[0] in SONIC_TABLES, op
            if parts[0] in SONIC_FIELDS and len(parts) == 3:
                assert parts[2] in SONIC_FIELDS[parts[0]], op
            if parts[0] == 'PFC_WD' and len(parts) == 2:
                assert set(op['value']) == {'action', 'detection_time', 'restoration_time'}
            if parts[0] == 'BUFFER_PG':
                assert op['value'] == {'profile': 'NULL'}
        return
    patterns = [(re.compile(pattern + r'\Z'), source) for pattern, source in ALLOWED[family]]
    for line in content.splitlines():
        if line.startswith('# ') or (family == 'cumulus' and line.startswith('#')):
            continue
        assert any(p.match(line) for p, _source in patterns), '%s/%s: %r is not a line the reference shows' % (case, name, line)


def test_sonic_patch_order_port_qos_map_before_pfc_wd(neighbours):
    # sonic-net/sonic-buildimage#24577: PFC_WD before PORT_QOS_MAP in a GCU patch logs an error
    content = [f for f in _render(neighbours, 'default')['files'] if f['family'] == 'sonic'][0]['content']
    tables = [op['path'].split('/')[1] for op in json.loads(content)]
    assert max(i for i, t in enumerate(tables) if t == 'PORT_QOS_MAP') < min(i for i, t in enumerate(tables) if t == 'PFC_WD')
    assert content.endswith(']\n') and '\n  {\n    "op": "add",' in content


def test_json_pointer_escapes():
    assert module._pointer('PORT', 'a/b~c', 'mtu') == '/PORT/a~1b~0c/mtu'


def test_ce_default_domain_table():
    # Default Settings for Priority Mapping, table 3: 8n..8n+7 -> PHB n, 8n+4 yellow and 8n+6 red for af1-af4
    assert not module._ce_domain_needed(33, 4) and not module._ce_domain_needed(26, 3)
    assert module._ce_domain_needed(36, 4) and module._ce_domain_needed(38, 4) and module._ce_domain_needed(33, 3)
    assert not module._ce_domain_needed(46, 5) and not module._ce_domain_needed(0, 0)


# --- range refusals per family -------------------------------------------------------------------------------------

def _problem(neighbours, family, intent=None, settings=None, switch=None):
    switch = switch or [s for s, f in FAMILY_OF.items() if f == family][0]
    switches = dict(SWITCHES)
    switches[switch] = dict({'family': family}, **(settings or {}))
    result = switch_config(neighbours, intent or {}, switches)
    assert switch not in [f['switch'] for f in result['files']]
    return [p for p in result['problems'] if p['switch'] == switch]


def _assert_named(problems, family, key, value, valid):
    match = [p for p in problems if p['key'] == key]
    assert match, problems
    problem = match[0]
    assert problem['family'] == family and problem['value'] == value and problem['range'] == valid
    for text in (family, key, str(value)):
        assert text in problem['msg']


def test_ce_b_priority_6(neighbours):
    problems = _problem(neighbours, 'huawei_ce_b', {'lossless_priority': 6})
    _assert_named(problems, 'huawei_ce_b', 'lossless_priority', 6, '0-5')
    assert 'valid for the NPU' in problems[0]['msg']


@pytest.mark.parametrize('detect', [16000, 155, 5])
def test_ce_a_detect_not_interval_times_1_to_15(neighbours, detect):
    problems = _problem(neighbours, 'huawei_ce_a', {'pfcwd_detect_ms': detect})
    _assert_named(problems, 'huawei_ce_a', 'pfcwd_detect_ms', detect, 'interval x 1-15, interval 10/100/500/1000 ms')


def test_ce_a_detect_2000_needs_one_interval_with_restore(neighbours):
    # 2000 ms = 1000 ms x 2 is a valid detection time, but restore 200 ms is no multiple of 1000 ms and 2000 ms is more
    # than 15 intervals of 100 ms: F-A has one interval for both
    problems = _problem(neighbours, 'huawei_ce_a', {'pfcwd_detect_ms': 2000})
    assert [p['key'] for p in problems] == ['pfcwd_restore_ms'] and 'one interval' in problems[0]['msg']
    result = switch_config(neighbours, {'pfcwd_detect_ms': 2000, 'pfcwd_restore_ms': 3000}, SWITCHES)
    cfg = [f for f in result['files'] if f['switch'] == 'leaf-a'][0]['content']
    # the finest interval that expresses both: 500 ms x 4 and 500 ms x 6
    assert 'dcb pfc deadlock-detect interval 500\n' in cfg and ' priority 4 deadlock-detect time 4\n' in cfg
    assert ' priority 4 deadlock-recovery time 6\n' in cfg


def test_ce_a_no_common_interval(neighbours):
    problems = _problem(neighbours, 'huawei_ce_a', {'pfcwd_detect_ms': 150, 'pfcwd_restore_ms': 3000})
    assert [p['key'] for p in problems] == ['pfcwd_restore_ms'] and 'one interval' in problems[0]['msg']


@pytest.mark.parametrize('family,key,value,valid', [
    ('huawei_ce_a', 'ecn_min_bytes', 200, '320-34078720'),
    ('huawei_ce_b', 'ecn_max_bytes', 20000000, '204800-16000000'),
    ('huawei_ce_b', 'pfcwd_detect_ms', 2000, '10-1500'),
    ('huawei_ce_a', 'ecn_probability', 0, '1-100'),
    ('sonic', 'pfcwd_detect_ms', 50, '100-5000'),
    ('sonic', 'pfcwd_restore_ms', 50, '100-60000'),
    ('sonic', 'pfcwd_poll_ms', 2000, '100-1000'),
    ('cumulus', 'ecn_probability', 0, '1-100'),
    ('cumulus', 'lossless_priority', 6, '0-7 except 6'),
    ('cumulus', 'lossless_dscp', 48, '0-63 except 48'),
])
def test_range_refusals(neighbours, family, key, value, valid):
    _assert_named(_problem(neighbours, family, {key: value}), family, key, value, valid)


def test_sonic_detect_below_poll(neighbours):
    problems = _problem(neighbours, 'sonic', {'pfcwd_detect_ms': 150, 'pfcwd_poll_ms': 200})
    _assert_named(problems, 'sonic', 'pfcwd_detect_ms', 150, '>= pfcwd_poll_ms 200')


@pytest.mark.parametrize('family,frame,valid', [
    ('huawei_ce_a', 9000, '>= 9018'), ('sonic', 8000, '>= 9000'), ('cumulus', 1500, '>= 9000')])
def test_switch_mtu_below_npu_mtu(neighbours, family, frame, valid):
    _assert_named(_problem(neighbours, family, settings={'frame_size': frame}), family, 'frame_size', frame, valid)


def test_ce_frame_size_range(neighbours):
    _assert_named(_problem(neighbours, 'huawei_ce_b', settings={'frame_size': 12000}), 'huawei_ce_b', 'frame_size', 12000,
                  '1518-9500')


def test_ce_headroom_and_slot(neighbours):
    problems = _problem(neighbours, 'huawei_ce_a', settings={'headroom_mb': 64, 'slot': 'x'})
    assert sorted(p['key'] for p in problems) == ['headroom_mb', 'slot']


def test_watchdog_actions(neighbours):
    alert = _problem(neighbours, 'huawei_ce_a', {'pfcwd_action': 'alert'})
    _assert_named(alert, 'huawei_ce_a', 'pfcwd_action', 'alert', 'drop or forward')
    assert 'no log-only mode' in alert[0]['msg']
    forward_b = _problem(neighbours, 'huawei_ce_b', {'pfcwd_action': 'forward'})
    _assert_named(forward_b, 'huawei_ce_b', 'pfcwd_action', 'forward', 'drop')
    assert 'discard' in forward_b[0]['msg']
    # leaf-b (F-B) is in the network, so F-A must discard as well
    _assert_named(_problem(neighbours, 'huawei_ce_a', {'pfcwd_action': 'forward'}), 'huawei_ce_a', 'pfcwd_action', 'forward', 'drop')
    _assert_named(_problem(neighbours, 'cumulus', {'pfcwd_action': 'alert'}), 'cumulus', 'pfcwd_action', 'alert', 'drop')


def test_ce_a_forward_without_f_b(neighbours):
    switches = {'leaf-a': {'family': 'huawei_ce_a'}, 'leaf-b': {'family': 'huawei_ce_a'}, 'leaf-s': {'family': 'sonic'}}
    result = switch_config(neighbours, {'pfcwd_action': 'forward'}, switches, default_family='sonic')
    assert result['problems'] == []
    cfg = [f for f in result['files'] if f['switch'] == 'leaf-a'][0]['content']
    assert 'dcb pfc deadlock recovery-behavior forwarding slot 1\n' in cfg
    sonic = [f for f in result['files'] if f['switch'] == 'leaf-s'][0]['content']
    assert '"action": "forward"' in sonic


def test_sonic_accepts_alert(neighbours):
    result = switch_config(neighbours, {'pfcwd_action': 'alert'}, {'leaf-s': {'family': 'sonic'}})
    assert [f['switch'] for f in result['files']] == ['leaf-s']


def test_switch_without_family_is_skipped(neighbours):
    result = switch_config(neighbours, {}, {'leaf-a': {'family': 'huawei_ce_a'}, 'leaf-x': {'family': 'sonic'}})
    assert [f['switch'] for f in result['files']] == ['leaf-a']
    skipped = dict((s['switch'], s['reason']) for s in result['skipped'])
    assert sorted(skipped) == ['leaf-b', 'leaf-c', 'leaf-s', 'leaf-x']
    assert 'npuops_switches[' in skipped['leaf-b'] and 'npuops_switch_family' in skipped['leaf-b']
    assert 'no NPU port' in skipped['leaf-x']


def test_default_family(neighbours):
    result = switch_config(neighbours, {}, {'leaf-s': {'family': 'sonic'}}, default_family='cumulus')
    assert sorted((f['switch'], f['family']) for f in result['files']) == [
        ('leaf-a', 'cumulus'), ('leaf-b', 'cumulus'), ('leaf-c', 'cumulus'), ('leaf-s', 'sonic')]


def test_unknown_family(neighbours):
    result = switch_config(neighbours, {}, {'leaf-a': {'family': 'arista'}})
    problem = result['problems'][0]
    assert problem['key'] == 'family' and problem['value'] == 'arista'
    for family in module.FAMILIES:
        assert family in problem['msg']


@pytest.mark.parametrize('bad', [{'lossless_priority': 'four'}, {'speed': 1}, 'x', {'pfcwd_action': 'pause'}])
def test_switch_config_refuses_a_bad_intent(neighbours, bad):
    with pytest.raises(AnsibleFilterError, match='switch_config'):
        switch_config(neighbours, bad, SWITCHES)


def test_switch_config_refuses_bad_arguments(neighbours):
    with pytest.raises(AnsibleFilterError, match='neighbours'):
        switch_config({'ports': []}, {})
    with pytest.raises(AnsibleFilterError, match='key size is not known'):
        switch_config(neighbours, {}, {'leaf-a': {'family': 'sonic', 'size': 1}})


# --- switch_intent_problems ----------------------------------------------------------------------------------------

def test_default_intent_has_no_problems():
    assert switch_intent_problems({}) == []
    assert switch_intent_problems(None) == []
    assert switch_intent_problems(dict((k, str(v)) for k, v in module.INTENT_DEFAULTS.items())) == []


@pytest.mark.parametrize('key,value,variable,text', [
    ('lossless_priority', 8, 'npuops_lossless_priority', 'outside 0-7'),
    ('lossless_dscp', 64, 'npuops_lossless_dscp', 'outside 0-63'),
    ('lossless_dscp', 3.5, 'npuops_lossless_dscp', 'not an integer'),
    ('mtu', 1500, 'npuops_mtu', 'not a jumbo MTU'),
    ('mtu', 9800, 'npuops_mtu', 'outside 68-9702'),
    ('ecn_probability', 101, 'npuops_ecn_probability', 'percentage'),
    ('ecn_min_bytes', 'lots', 'npuops_ecn_min_bytes', 'not an integer'),
    ('pfcwd_detect_ms', 0, 'npuops_pfc_watchdog_detect_ms', 'outside 1-60000'),
    ('pfcwd_restore_ms', -1, 'npuops_pfc_watchdog_restore_ms', 'outside 0-60000'),
    ('pfcwd_poll_ms', True, 'npuops_pfc_watchdog_poll_ms', 'not an integer'),
    ('pfcwd_action', 'pause', 'npuops_pfc_watchdog_action', 'drop, forward or alert'),
])
def test_intent_problems(key, value, variable, text):
    problems = switch_intent_problems({key: value})
    assert [p['variable'] for p in problems] == [variable]
    assert problems[0]['value'] == value and text in problems[0]['problem']
    assert problems[0]['problem'].startswith(variable + ' ')


def test_ecn_min_not_below_max():
    problems = switch_intent_problems({'ecn_min_bytes': 614400, 'ecn_max_bytes': '614400'})
    assert [p['variable'] for p in problems] == ['npuops_ecn_max_bytes'] and 'npuops_ecn_min_bytes 614400' in problems[0]['problem']


def test_intent_problems_refuse_unknown_keys():
    with pytest.raises(AnsibleFilterError, match='intent key lossless_tc is not known'):
        switch_intent_problems({'lossless_tc': 3})


@pytest.mark.parametrize('switches, family, expected', [
    ({'leaf-01': 'sonic'}, None, "npuops_switches['leaf-01'] 'sonic' is not a dict of family, frame_size, headroom_mb, slot"),
    ({'leaf-01': {'family': 'juniper'}}, None,
     "npuops_switches['leaf-01'].family 'juniper' is not a switch family: the families are huawei_ce_a, huawei_ce_b, sonic, cumulus"),
    ({'leaf-01': {'famliy': 'sonic'}}, None, "npuops_switches['leaf-01'] has the unknown key(s) famliy"),
    (['leaf-01'], None, "npuops_switches ['leaf-01'] is not a dict of switch name"),
    ({}, 'cisco', "npuops_switch_family 'cisco' is not a switch family"),
])
def test_intent_problems_check_the_switch_inventory(switches, family, expected):
    found = switch_intent_problems({}, switches, family)
    assert [p['problem'] for p in found if expected in p['problem']], found


def test_intent_problems_accept_a_good_switch_inventory():
    assert switch_intent_problems({}, {'leaf-01': {'family': 'sonic', 'frame_size': 9100}, 'leaf-02': {}}, 'huawei_ce_a') == []
    assert switch_intent_problems({}) == []
