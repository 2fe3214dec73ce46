"""SONiC: the JSON patch touches only the config_db tables and fields the references show, in an order GCU accepts,
and what SONiC refuses of the intent and of the switch settings."""

from __future__ import annotations

import json

import pytest

from ansible_collections.npuops.ascend.plugins.plugin_utils.switch import sonic
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.files import switch_config
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.neighbours import switch_neighbours
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils import switch_pod as pod


@pytest.fixture(scope='module')
def neighbours():
    return switch_neighbours(pod.synthetic_nodes())


# --- every line is one the reference shows -------------------------------------------------------------------------

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


def test_every_case_has_a_golden_file():
    assert sorted(case for case, _name, _family, _content in pod.all_goldens(sonic.MODELS)) == sorted(pod.CASES)


@pytest.mark.parametrize('case,name,family,content', pod.all_goldens(sonic.MODELS),
                         ids=lambda v: v if isinstance(v, str) and '\n' not in v else '')
def test_every_line_is_one_the_reference_shows(case, name, family, content):
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


def test_sonic_patch_order_port_qos_map_before_pfc_wd(neighbours):
    # sonic-net/sonic-buildimage#24577: PFC_WD before PORT_QOS_MAP in a GCU patch logs an error
    content = [f for f in pod.render(neighbours, 'default')['files'] if f['family'] == 'sonic'][0]['content']
    tables = [op['path'].split('/')[1] for op in json.loads(content)]
    assert max(i for i, t in enumerate(tables) if t == 'PORT_QOS_MAP') < min(i for i, t in enumerate(tables) if t == 'PFC_WD')
    assert content.endswith(']\n') and '\n  {\n    "op": "add",' in content


def test_json_pointer_escapes():
    assert sonic.pointer('PORT', 'a/b~c', 'mtu') == '/PORT/a~1b~0c/mtu'


def test_ecn_minimum_above_the_stock_maximum_raises_the_maximum_first(neighbours):
    intent = {'ecn_min_bytes': sonic.SONIC_STOCK_GREEN_MAX, 'ecn_max_bytes': sonic.SONIC_STOCK_GREEN_MAX * 2}
    content = switch_config(neighbours, intent, {'leaf-s': {'family': 'sonic'}})['files'][0]['content']
    keys = [op['path'].rsplit('/', 1)[1] for op in json.loads(content) if op['path'].startswith('/WRED_PROFILE/')]
    assert keys.index('green_max_threshold') < keys.index('green_min_threshold')
    default = switch_config(neighbours, {}, {'leaf-s': {'family': 'sonic'}})['files'][0]['content']
    keys = [op['path'].rsplit('/', 1)[1] for op in json.loads(default) if op['path'].startswith('/WRED_PROFILE/')]
    assert keys.index('green_min_threshold') < keys.index('green_max_threshold')


# --- range refusals ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('key,value,valid', [
    ('pfcwd_detect_ms', 50, '100-5000'),
    ('pfcwd_restore_ms', 50, '100-60000'),
    ('pfcwd_poll_ms', 2000, '100-1000'),
])
def test_range_refusals(neighbours, key, value, valid):
    pod.assert_named(pod.problem(neighbours, 'sonic', {key: value}), 'sonic', key, value, valid)


def test_sonic_detect_below_poll(neighbours):
    problems = pod.problem(neighbours, 'sonic', {'pfcwd_detect_ms': 150, 'pfcwd_poll_ms': 200})
    pod.assert_named(problems, 'sonic', 'pfcwd_detect_ms', 150, '>= pfcwd_poll_ms 200')


def test_switch_mtu_below_npu_mtu(neighbours):
    pod.assert_named(pod.problem(neighbours, 'sonic', settings={'frame_size': 8000}), 'sonic', 'frame_size', 8000, '>= 9000')


def test_sonic_accepts_alert(neighbours):
    result = switch_config(neighbours, {'pfcwd_action': 'alert'}, {'leaf-s': {'family': 'sonic'}})
    assert [f['switch'] for f in result['files']] == ['leaf-s']
