"""hccn_info and health_info with the vnic query (hccn_tool -i N -vnic -g) and link_stat with its link down count.

vNIC answers are the documentation samples of tests/fixtures/captures/hccn_tool_-vnic_-g.txt (cut into
tests/unit/fixtures/parsers/hccn_tool/vnic); the error answers are the texts of hccn_tool_set_and_errors.txt
with the exit codes it lists (exit = code & 0xFF).
"""

from __future__ import annotations

import yaml

from ansible_collections.npuops.ascend.plugins.module_utils._tools import hccn_tool as _hccn_tool
from ansible_collections.npuops.ascend.plugins.modules import hccn_info, health_info
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import HCCN, sample

VNIC_UP = sample('hccn_tool/vnic/hccl_doc_loop_dev0')          # UP, 192.168.2.199/24
VNIC_DOWN = sample('hccn_tool/vnic/derived_a3_down')           # DOWN, an A3-style address (derived)
LINK_UP = sample('hccn_tool/link/mc_doc_up')
LINK_STAT_NEW = sample('hccn_tool/link_stat/hccl_doc_link_down_count')   # newer driver: link down count 1
LINK_STAT_OLD = sample('hccn_tool/link_stat/mc_worker0_dev0')            # 23.0.7: no link down count line

# How a device without a vNIC may answer (no public A2 capture exists): the generic DSMI failure of the
# source's tool_vnic_cmd_execute, the answer of an hccn_tool without the command, and the product answer.
EXECUTE_FAILED = (1, '', 'Command execute failed!\n')
UNKNOWN_COMMAND = (3, '', 'Get invalid major cmd.\nEnter [ hccn_tool -h ] for more details.\n')
NOT_SUPPORTED = (13, 'The command is not supported on this product.\n', '')
PERMISSION = (12, '', 'permission denied: pls check this cmd run permission.\n')


def argv(dev, query):
    return (HCCN, '-i', str(dev), '-' + query, '-g')


def test_vnic_query_runs_its_argv_and_nests_the_parse(run_module):
    cmds = {argv(0, 'vnic'): (0, VNIC_UP, ''), argv(1, 'vnic'): (0, VNIC_DOWN, '')}
    res = run_module(hccn_info, {'devices': [0, 1], 'queries': ['vnic'], 'workers': 1}, cmds)
    assert not res.failed, res
    assert res.calls == [list(argv(0, 'vnic')), list(argv(1, 'vnic'))]
    assert res.result['devices']['0'] == {'vnic': {'link': 'UP', 'address': '192.168.2.199', 'netmask': '255.255.255.0'}}
    assert res.result['devices']['1']['vnic']['link'] == 'DOWN'
    assert res.result['raw']['1']['vnic']['address'] == '192.24.3.184'
    assert res.result['errors'] == []
    assert res.warnings == []


def test_vnic_runs_after_the_other_queries_of_a_device(run_module):
    cmds = {argv(0, 'link'): (0, LINK_UP, ''), argv(0, 'vnic'): (0, VNIC_UP, '')}
    res = run_module(hccn_info, {'devices': [0], 'queries': ['vnic', 'link']}, cmds)
    assert res.calls == [list(argv(0, 'link')), list(argv(0, 'vnic'))]
    assert res.result['devices']['0'] == {'link': 'UP', 'vnic': {'link': 'UP', 'address': '192.168.2.199', 'netmask': '255.255.255.0'}}


def test_a_device_without_vnic_is_a_per_device_error_not_a_failure(run_module):
    answers = {1: EXECUTE_FAILED, 2: UNKNOWN_COMMAND, 3: NOT_SUPPORTED}
    cmds = {argv(0, 'vnic'): (0, VNIC_UP, '')}
    for dev in range(4):
        cmds[argv(dev, 'link')] = (0, LINK_UP, '')
        if dev in answers:
            cmds[argv(dev, 'vnic')] = answers[dev]
    res = run_module(hccn_info, {'devices': [0, 1, 2, 3], 'queries': ['link', 'vnic']}, cmds)
    assert not res.failed, res
    assert res.result['devices']['0']['vnic']['address'] == '192.168.2.199'
    for dev in (1, 2, 3):
        assert res.result['devices'][str(dev)] == {'link': 'UP', 'vnic': None}
        assert 'vnic' not in res.result['raw'][str(dev)]
    assert [(err['device'], err['query'], err['rc']) for err in res.result['errors']] == [(1, 'vnic', 1), (2, 'vnic', 3), (3, 'vnic', 13)]
    first = res.result['errors'][0]
    assert first['cmd'] == HCCN + ' -i 1 -vnic -g'
    assert first['stderr'] == 'Command execute failed!\n'
    assert first['msg'].startswith('NPU 1 on node-07: vnic not read: Command execute failed! (rc=1) ')
    assert first['msg'].endswith(_hccn_tool.BY_QUERY['vnic']['failed'][1])
    assert 'Atlas A3' in first['msg']


def test_the_generic_failure_still_fails_other_queries(run_module):
    res = run_module(hccn_info, {'devices': [0], 'queries': ['link']}, {argv(0, 'link'): EXECUTE_FAILED})
    assert res.failed
    assert 'failed (rc=1): Command execute failed!' in res.result['msg']


def test_permission_denied_on_vnic_still_fails_the_task(run_module):
    res = run_module(hccn_info, {'devices': [0], 'queries': ['vnic']}, {argv(0, 'vnic'): PERMISSION})
    assert res.failed
    assert res.result['msg'].endswith('Run the task as root (become: true).')


def test_classification_is_narrower_for_vnic_only():
    plain = _hccn_tool.classify_error('Command execute failed!\n')
    assert plain['meaning'] == _hccn_tool.FAILED and 'query' not in plain
    vnic = _hccn_tool.classify_error('Command execute failed!\n', 'vnic')
    assert (vnic['error'], vnic['meaning'], vnic['query']) == ('failed', _hccn_tool.UNANSWERED, 'vnic')
    assert _hccn_tool.classify_error('Get invalid device id.\n', 'vnic')['meaning'] == _hccn_tool.FAILED
    assert _hccn_tool.query_of(list(argv(5, 'vnic'))) == 'vnic'
    assert _hccn_tool.query_of([HCCN, '-h']) is None


def test_link_stat_gives_the_link_down_count_of_newer_drivers(run_module):
    cmds = {argv(0, 'link_stat'): (0, LINK_STAT_NEW, ''), argv(1, 'link_stat'): (0, LINK_STAT_OLD, '')}
    res = run_module(hccn_info, {'devices': [0, 1], 'queries': ['link_stat']}, cmds)
    assert not res.failed, res
    new, old = res.result['devices']['0']['link_stat'], res.result['devices']['1']['link_stat']
    assert (new['link_up_count'], new['link_down_count'], len(new['records'])) == (2, 1, 3)
    assert (old['link_up_count'], old['link_down_count']) == (2, None)
    assert res.warnings == []


def test_health_info_takes_vnic_as_a_port_query(run_module):
    doc = yaml.safe_load(health_info.DOCUMENTATION)
    assert 'vnic' in doc['options']['port_queries']['choices']
    cmds = {argv(0, 'link'): (0, LINK_UP, ''), argv(0, 'vnic'): (0, VNIC_UP, ''),
            argv(1, 'link'): (0, LINK_UP, ''), argv(1, 'vnic'): EXECUTE_FAILED}
    args = {'npu': False, 'host': False, 'devices': [0, 1], 'port_queries': ['link', 'vnic']}
    res = run_module(health_info, args, cmds)
    assert not res.failed, res
    ports = res.result['ports']
    assert ports['devices']['0']['vnic']['address'] == '192.168.2.199'
    assert ports['devices']['1']['vnic'] is None
    assert [(err['device'], err['query']) for err in ports['errors']] == [(1, 'vnic')]
    assert res.result['failed_parts'] == []
