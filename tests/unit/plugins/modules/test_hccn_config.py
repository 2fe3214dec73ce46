# -*- coding: utf-8 -*-
"""hccn_config with a scripted run_command: exact argv, no surprises."""

from __future__ import annotations

import json
import os
import stat

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils._domain import port_config as _port_config
from ansible_collections.npuops.ascend.plugins.module_utils._domain import port_table as st
from ansible_collections.npuops.ascend.plugins.module_utils._tools import hccn_tool as _hccn_tool
from ansible_collections.npuops.ascend.plugins.module_utils._tools import runner as _runner
from ansible_collections.npuops.ascend.plugins.modules import hccn_config

from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import HCCN, HOST, NPU_SMI, sample

# ---- real tool output, from the parser fixture tree (byte-for-byte cuts of tests/fixtures/captures) ----
PFC_4 = sample('hccn_tool/pfc/hixl_dev0_prio4')                  # PFC configuration / priority / enabled 0 0 0 0 1 0 0 0
IP_0 = sample('hccn_tool/ip/mc_worker0_dev0')                    # ipaddr:10.10.0.10 / netmask:255.255.255.0
IP_1 = sample('hccn_tool/ip/mc_worker0_dev1')                    # ipaddr:10.10.0.11 / netmask:255.255.255.0
GATEWAY = sample('hccn_tool/gateway/ds_910b3_dev0')              # default gateway:11.12.165.1, Iface:eth0
NETDETECT = sample('hccn_tool/netdetect/ds_910b3_dev0_address')  # netdetect address: 11.12.165.1
TLS_OFF = sample('hccn_tool/tls/mc_doc_switch_line')             # dev_id:0, tls switch[0](0:disable, 1:enable), ...
LINK_UP = sample('hccn_tool/link/mc_doc_up')                     # link status: UP
LINK_DOWN = sample('hccn_tool/link/mc_code_comment_down')        # link status: DOWN
SET_OK = sample('hccn_tool/set/ds_tls_disable_dev0')             # Cmd executed successfully!
NPU_IDLE = sample('npu_smi/info/vllm198_910b3_23.0.7_idle')      # 23.0.7, no processes
NPU_BUSY = sample('npu_smi/info/vllm5111_910b2_25.2.0_busy')     # 25.2.0, VLLMWorker_DP on every NPU

# No verbatim sample of these two exists; the fixture tree holds them as `derived` cases that follow the printf
# formats quoted in the capture files ('mtu:%u'; '%4s%8s' header + '%4d%8u' rows).
MTU_9000 = sample('hccn_tool/mtu/derived_9000')
MTU_1500 = MTU_9000.replace('9000', '1500')
DSCP_33_2 = sample('hccn_tool/dscp_to_tc/derived_full_table')   # DSCP 32-47 -> TC 2
DSCP_33_3 = DSCP_33_2.replace('  33       2', '  33       3')
# The same real outputs after a set took effect: only the value differs, the layout is the capture's.
PFC_3 = PFC_4.replace('enabled    0 0 0 0 1 0 0 0', 'enabled    0 0 0 1 0 0 0 0')
TLS_ON = TLS_OFF.replace('tls switch[0]', 'tls switch[1]')

# hccn_tool's own error texts (hccn_tool_set_and_errors.txt: stream, text, exit code)
BUSY = (11, 'hccn_tool is busy, please try again.\n', '')
LINK_IS_DOWN = (22, '', 'Execute failed: Link status is down.\n')
NO_GATEWAY = (2, '', 'Get gateway failed, because no gateway was preset there!\n')


def get(dev, query):
    return (HCCN, '-i', str(dev), '-' + query, '-g')


def sets(calls):
    return [c for c in calls if '-s' in c]


@pytest.fixture(autouse=True)
def fast(monkeypatch):
    monkeypatch.setattr(_hccn_tool, 'LINK_POLL_INTERVAL', 0.01)
    monkeypatch.setattr(_hccn_tool, 'BUSY_RETRY_DELAY', 0)


def base_commands():
    """NPU 0: PFC 4 and TLS off; NPU 1: PFC 4. Everything idle."""
    return {
        get(0, 'pfc'): (0, PFC_4, ''),
        get(0, 'tls'): (0, TLS_OFF, ''),
        get(1, 'pfc'): (0, PFC_4, ''),
        (NPU_SMI, 'info'): (0, NPU_IDLE, ''),
    }


CONFIG = [{'device': 0, 'pfc_priorities': [4], 'tls': True}, {'device': 1, 'pfc_priorities': [3]}]


def test_change_exact_argv(run_module):
    cmds = base_commands()
    cmds.update({
        get(0, 'tls'): [(0, TLS_OFF, ''), (0, TLS_ON, '')],
        get(1, 'pfc'): [(0, PFC_4, ''), (0, PFC_3, '')],
        (HCCN, '-i', '0', '-tls', '-s', 'enable', '1'): (0, SET_OK, ''),
        (HCCN, '-i', '1', '-pfc', '-s', 'bitmap', '0,0,0,1,0,0,0,0'): (0, SET_OK, ''),
        get(1, 'link'): (0, LINK_UP, ''),
    })
    res = run_module(hccn_config, {'config': CONFIG}, cmds)
    assert not res.failed, res
    out = res.result
    assert out['changed'] is True
    assert out['commands'] == ['hccn_tool -i 0 -tls -s enable 1', 'hccn_tool -i 1 -pfc -s bitmap 0,0,0,1,0,0,0,0']
    assert sorted(sets(res.calls)) == [
        [HCCN, '-i', '0', '-tls', '-s', 'enable', '1'],
        [HCCN, '-i', '1', '-pfc', '-s', 'bitmap', '0,0,0,1,0,0,0,0'],
    ]
    dev1 = [c for c in res.calls if c[:3] == [HCCN, '-i', '1']]
    assert dev1 == [list(get(1, 'pfc')), [HCCN, '-i', '1', '-pfc', '-s', 'bitmap', '0,0,0,1,0,0,0,0'],
                    list(get(1, 'link')), list(get(1, 'pfc'))]
    # the busy check ran before the first set
    first_set = min(i for i, c in enumerate(res.calls) if '-s' in c)
    assert res.calls.index([NPU_SMI, 'info']) < first_set
    assert out['before'] == [{'device': 0, 'pfc_priorities': [4], 'tls': False}, {'device': 1, 'pfc_priorities': [4]}]
    assert out['after'] == [{'device': 0, 'pfc_priorities': [4], 'tls': True}, {'device': 1, 'pfc_priorities': [3]}]
    assert out['changed_devices'] == [0, 1] and out['failed_devices'] == []
    assert out['backup_file'] is None
    assert res.warnings == []


def test_a_set_that_answered_nothing_is_never_sent_again(run_module, monkeypatch):
    # the runner asks a silent GET again (an answer run_command may have lost), never a set: the set's effect is read
    # back instead (here the read-back finds the new bitmap, so the change stands)
    monkeypatch.setattr(_runner, 'SILENT_RETRY_AFTER', 0.0)
    cmds = base_commands()
    cmds.update({
        get(0, 'tls'): [(0, TLS_OFF, ''), (0, TLS_ON, '')],
        get(1, 'pfc'): [(0, PFC_4, ''), (0, PFC_3, '')],
        (HCCN, '-i', '0', '-tls', '-s', 'enable', '1'): (0, '', ''),
        (HCCN, '-i', '1', '-pfc', '-s', 'bitmap', '0,0,0,1,0,0,0,0'): (0, '', ''),
        get(1, 'link'): (0, LINK_UP, ''),
    })
    res = run_module(hccn_config, {'config': CONFIG}, cmds)
    assert not res.failed, res
    assert sorted(sets(res.calls)) == [
        [HCCN, '-i', '0', '-tls', '-s', 'enable', '1'],
        [HCCN, '-i', '1', '-pfc', '-s', 'bitmap', '0,0,0,1,0,0,0,0'],
    ]
    assert res.result['changed_devices'] == [0, 1] and res.result['failed_devices'] == []


def test_no_change_runs_no_set(run_module):
    res = run_module(hccn_config, {'config': [{'device': 0, 'pfc_priorities': [4], 'tls': False}]}, base_commands())
    assert not res.failed, res
    assert res.result['changed'] is False
    assert res.result['commands'] == []
    assert res.calls == [list(get(0, 'pfc')), list(get(0, 'tls'))]
    assert 'diff' not in res.result


def test_check_mode_and_diff(run_module):
    res = run_module(hccn_config, {'config': CONFIG, 'backup': True, 'backup_dir': '/nonexistent/never'},
                     base_commands(), check_mode=True)
    assert not res.failed, res
    assert res.result['changed'] is True
    assert sets(res.calls) == []
    assert res.result['backup_file'] is None
    assert res.result['commands'] == ['hccn_tool -i 0 -tls -s enable 1', 'hccn_tool -i 1 -pfc -s bitmap 0,0,0,1,0,0,0,0']
    assert res.result['diff'] == [
        {'before_header': 'NPU 0 on %s' % HOST, 'after_header': 'NPU 0 on %s' % HOST,
         'before': 'pfc_priorities: [4]\ntls: false\n', 'after': 'pfc_priorities: [4]\ntls: true\n'},
        {'before_header': 'NPU 1 on %s' % HOST, 'after_header': 'NPU 1 on %s' % HOST,
         'before': 'pfc_priorities: [4]\n', 'after': 'pfc_priorities: [3]\n'},
    ]
    assert res.result['after'][1] == {'device': 1, 'pfc_priorities': [3]}


def test_mtu_dscp_ip_gateway_argv(run_module):
    cmds = {
        get(2, 'ip'): (0, IP_0, ''),
        get(2, 'gateway'): NO_GATEWAY,
        get(2, 'mtu'): [(0, MTU_1500, ''), (0, MTU_9000, '')],
        get(2, 'dscp_to_tc'): [(0, DSCP_33_2, ''), (0, DSCP_33_3, '')],
        (NPU_SMI, 'info'): (0, NPU_IDLE, ''),
        (HCCN, '-i', '2', '-gateway', '-s', 'gateway', '10.10.0.1'): (0, SET_OK, ''),
        (HCCN, '-i', '2', '-mtu', '-s', 'size', '9000'): (0, SET_OK, ''),
        (HCCN, '-i', '2', '-dscp_to_tc', '-s', 'dscp', '33', 'tc', '3'): (0, SET_OK, ''),
        get(2, 'link'): (0, LINK_UP, ''),
    }
    # after the gateway set the gateway query answers with the real line, value substituted
    cmds[get(2, 'gateway')] = [NO_GATEWAY, (0, GATEWAY.replace('11.12.165.1', '10.10.0.1'), '')]
    config = [{'device': 2, 'gateway': '10.10.0.1', 'mtu': 9000, 'dscp_to_tc': [{'dscp': 33, 'tc': 3}, {'dscp': 32, 'tc': 2}]}]
    res = run_module(hccn_config, {'config': config}, cmds)
    assert not res.failed, res
    assert sets(res.calls) == [
        [HCCN, '-i', '2', '-gateway', '-s', 'gateway', '10.10.0.1'],
        [HCCN, '-i', '2', '-mtu', '-s', 'size', '9000'],
        [HCCN, '-i', '2', '-dscp_to_tc', '-s', 'dscp', '33', 'tc', '3'],
    ]
    assert res.result['before'] == [{'device': 2, 'gateway': None, 'mtu': 1500,
                                     'dscp_to_tc': [{'dscp': 32, 'tc': 2}, {'dscp': 33, 'tc': 2}]}]


@pytest.mark.parametrize('entry, needle', [
    ({'device': 5, 'dscp_to_tc': [{'dscp': 33, 'tc': 4}]}, 'NPU 5: TC 4 for DSCP 33 is outside 0-3'),
    ({'device': 0, 'mtu': 9800}, 'NPU 0: mtu 9800 is outside 68-9702'),
    ({'device': 0, 'pfc_priorities': [0, 1, 2, 3, 4]}, 'the 910B allows at most 4'),
    ({'device': 0, 'address': '10.0.0.1', 'netmask': '255.255.255.0', 'gateway': '10.0.9.1'}, 'is not in the subnet'),
])
def test_validation_refuses_before_any_call(run_module, entry, needle):
    res = run_module(hccn_config, {'config': [entry]}, {})
    assert res.failed
    assert needle in res.result['msg']
    assert 'nothing was changed' in res.result['msg']
    assert res.calls == []


def test_duplicates_refused(run_module):
    config = [{'device': 0, 'address': '10.0.0.5', 'netmask': '24'}, {'device': 1, 'address': '10.0.0.5', 'netmask': '24'},
              {'device': 1, 'tls': False}]
    res = run_module(hccn_config, {'config': config}, {})
    assert res.failed and res.calls == []
    assert 'appears more than once' in res.result['msg'] and 'requested for NPUs 0, 1' in res.result['msg']


def test_gateway_outside_current_subnet_refused_with_zero_sets(run_module):
    cmds = {get(0, 'ip'): (0, IP_0, ''), get(0, 'gateway'): (0, GATEWAY, '')}
    res = run_module(hccn_config, {'config': [{'device': 0, 'gateway': '10.10.1.1'}]}, cmds)
    assert res.failed
    assert 'NPU 0: gateway 10.10.1.1 is not in the subnet 10.10.0.0/24 of the port address 10.10.0.10' in res.result['msg']
    assert sets(res.calls) == []


def test_busy_refusal(run_module):
    cmds = base_commands()
    cmds[(NPU_SMI, 'info')] = (0, NPU_BUSY, '')
    res = run_module(hccn_config, {'config': CONFIG}, cmds)
    assert res.failed
    assert 'NPU 0: pid 16143 (VLLMWorker_DP)' in res.result['msg']
    assert 'allow_busy=true' in res.result['msg']
    assert sets(res.calls) == []
    assert res.result['changed'] is False


def test_busy_allowed_warns(run_module):
    cmds = base_commands()
    cmds.update({
        (NPU_SMI, 'info'): (0, NPU_BUSY, ''),
        get(0, 'tls'): [(0, TLS_OFF, ''), (0, TLS_ON, '')],
        (HCCN, '-i', '0', '-tls', '-s', 'enable', '1'): (0, SET_OK, ''),
    })
    res = run_module(hccn_config, {'config': [{'device': 0, 'tls': True}], 'allow_busy': True}, cmds)
    assert not res.failed, res
    assert any('allow_busy=true' in w and 'pid 16143' in w for w in res.warnings)


def test_link_stuck_down(run_module):
    cmds = base_commands()
    cmds.update({
        (HCCN, '-i', '1', '-pfc', '-s', 'bitmap', '0,0,0,1,0,0,0,0'): (0, SET_OK, ''),
        get(1, 'link'): (0, LINK_DOWN, ''),
    })
    res = run_module(hccn_config, {'config': [{'device': 1, 'pfc_priorities': [3]}], 'link_timeout': 1}, cmds)
    assert res.failed
    assert res.result['failed_devices'] == [1] and res.result['changed_devices'] == [1]
    assert 'NPU 1 on %s: link still not UP 1 s after changing PFC' % HOST in res.result['msg']
    polls = [c for c in res.calls if c == list(get(1, 'link'))]
    assert len(polls) > 3
    assert 0.9 < res.elapsed < 5


def test_ports_that_flap_together_do_not_all_poll(run_module):
    """Eight ports set at once flap together: one polls its link, the others read theirs once it is UP."""
    import threading
    import time
    # each port's link is DOWN for this long after its MTU set (as on the switch, per port): long enough that the eight
    # sets, made concurrently, fall inside one another's flap also on a busy machine
    flap = 0.6
    up_at, guard = {}, threading.Lock()

    def link_model(argv):
        dev = int(argv[2])
        if argv[3:] == ['-mtu', '-s', 'size', '9000']:
            with guard:
                up_at[dev] = time.monotonic() + flap
            return (0, SET_OK, '')
        if argv[3:] == ['-link', '-g']:
            return (0, LINK_UP if time.monotonic() >= up_at.get(dev, 0) else LINK_DOWN, '')
        if argv[3:] == ['-mtu', '-g']:
            return (0, MTU_9000 if dev in up_at else MTU_1500, '')
        return None

    config = [{'device': dev, 'mtu': 9000} for dev in range(8)]
    res = run_module(hccn_config, {'config': config}, {(NPU_SMI, 'info'): (0, NPU_IDLE, '')}, default=link_model)
    assert not res.failed, res
    assert res.result['changed_devices'] == list(range(8))
    polls = [c for c in res.calls if c[3:] == ['-link', '-g']]
    # every port read its own link at least once after its flap ...
    assert sorted(set(int(c[2]) for c in polls)) == list(range(8))
    # ... but only one port polled through the flap: 0.6 s at 0.01 s a poll is about 60 reads for that port, where
    # eight ports polling each would make about 480; a busy machine spreads the sets (a port whose flap ends later polls
    # on for the rest of it), so the bound is half of what eight pollers would make
    assert len(polls) < 8 * (flap / 0.01) / 2, len(polls)
    assert res.elapsed < flap + 2


def test_a_port_that_stays_down_does_not_hide_the_others(run_module):
    """The port that polls for the others never comes UP: the others are still read and reported UP."""
    cmds = {(NPU_SMI, 'info'): (0, NPU_IDLE, '')}
    for dev in (0, 1, 2):
        cmds[(HCCN, '-i', str(dev), '-mtu', '-s', 'size', '9000')] = (0, SET_OK, '')
        cmds[get(dev, 'mtu')] = [(0, MTU_1500, ''), (0, MTU_9000, '')]
        cmds[get(dev, 'link')] = (0, LINK_DOWN if dev == 1 else LINK_UP, '')
    res = run_module(hccn_config, {'config': [{'device': d, 'mtu': 9000} for d in (0, 1, 2)], 'link_timeout': 1}, cmds)
    assert res.failed
    assert res.result['failed_devices'] == [1]
    assert res.result['changed_devices'] == [0, 1, 2]
    assert 'NPU 1 on %s: link still not UP 1 s after changing MTU' % HOST in res.result['msg']
    assert res.elapsed < 5


PFC_STAT = sample('hccn_tool/pfc_stat/derived_prio4_activity')


def test_read_after_follows_the_change_in_the_same_run(run_module):
    """read_after: the counters are read once the link is UP again and the values were read back."""
    cmds = base_commands()
    cmds.update({
        get(1, 'pfc'): [(0, PFC_4, ''), (0, PFC_3, '')],
        (HCCN, '-i', '1', '-pfc', '-s', 'bitmap', '0,0,0,1,0,0,0,0'): (0, SET_OK, ''),
        get(1, 'link'): (0, LINK_UP, ''),
        get(1, 'pfc_stat'): (0, PFC_STAT, ''),
    })
    res = run_module(hccn_config, {'config': [{'device': 1, 'pfc_priorities': [3]}], 'read_after': ['pfc_stat']}, cmds)
    assert not res.failed, res
    dev1 = [c for c in res.calls if c[:3] == [HCCN, '-i', '1']]
    assert dev1[-3:] == [list(get(1, 'link')), list(get(1, 'pfc')), list(get(1, 'pfc_stat'))]
    read = res.result['read']
    assert read['errors'] == [] and list(read['devices']) == ['1']
    assert read['devices']['1']['pfc_stat']['counters']['tx_pfc4_duration_ms'] == 12.5
    assert isinstance(res.result['read_at'], float) and res.result['read_at'] > 1.7e9


@pytest.mark.parametrize('check_mode', [False, True])
def test_read_after_when_nothing_differs(run_module, check_mode):
    """Nothing to set (also in check mode): the counters are read right after the comparison, no set runs."""
    cmds = base_commands()
    cmds.update({get(1, 'pfc_stat'): (0, PFC_STAT, ''), get(1, 'stat'): (0, sample('hccn_tool/stat/mc_doc_elided'), '')})
    res = run_module(hccn_config, {'config': [{'device': 1, 'pfc_priorities': [4]}], 'read_after': ['pfc_stat', 'stat']},
                     cmds, check_mode=check_mode)
    assert not res.failed, res
    assert sets(res.calls) == []
    assert res.calls[-2:] == [list(get(1, 'pfc_stat')), list(get(1, 'stat'))]
    assert res.result['changed'] is False
    assert sorted(res.result['read']['devices']['1']) == ['pfc_stat', 'stat']


def test_read_after_is_not_read_by_a_check_mode_plan_of_a_change(run_module):
    """Check mode with a change pending: the ports are not as the task would leave them, so nothing is read."""
    cmds = base_commands()
    res = run_module(hccn_config, {'config': [{'device': 1, 'pfc_priorities': [3]}], 'read_after': ['pfc_stat']},
                     cmds, check_mode=True)
    assert not res.failed, res
    assert res.result['changed'] is True and res.result['commands'] == ['hccn_tool -i 1 -pfc -s bitmap 0,0,0,1,0,0,0,0']
    assert 'read' not in res.result and 'read_at' not in res.result
    assert [c for c in res.calls if '-pfc_stat' in c] == []


def test_read_after_is_not_read_when_the_change_fails(run_module):
    cmds = base_commands()
    cmds.update({
        (HCCN, '-i', '1', '-pfc', '-s', 'bitmap', '0,0,0,1,0,0,0,0'): (0, SET_OK, ''),
        get(1, 'link'): (0, LINK_UP, ''),
    })
    res = run_module(hccn_config, {'config': [{'device': 1, 'pfc_priorities': [3]}], 'read_after': ['pfc_stat']}, cmds)
    assert res.failed
    assert 'read' not in res.result
    assert list(get(1, 'pfc_stat')) not in res.calls


def test_read_after_refuses_an_unknown_query(run_module):
    res = run_module(hccn_config, {'config': [{'device': 1, 'pfc_priorities': [4]}], 'read_after': ['pause']},
                     base_commands())
    assert res.failed
    assert 'read_after' in res.result['msg'] and 'pfc_stat' in res.result['msg']
    assert res.calls == []


def test_rc0_but_value_not_applied(run_module):
    cmds = base_commands()
    cmds.update({
        (HCCN, '-i', '1', '-pfc', '-s', 'bitmap', '0,0,0,1,0,0,0,0'): (0, SET_OK, ''),
        get(1, 'link'): (0, LINK_UP, ''),
    })
    res = run_module(hccn_config, {'config': [{'device': 1, 'pfc_priorities': [3]}]}, cmds)
    assert res.failed
    assert ('NPU 1 on %s: PFC bitmap still 0,0,0,0,1,0,0,0 after setting priorities 3 (hccn_tool rc=0)' % HOST) in res.result['msg']
    assert res.result['failed_devices'] == [1]
    assert res.result['after'] == [{'device': 1, 'pfc_priorities': [4]}]


def test_partial_failure_reports_both_lists_and_backup(run_module, tmp_path):
    cmds = base_commands()
    cmds.update({
        get(0, 'tls'): [(0, TLS_OFF, ''), (0, TLS_ON, '')],
        (HCCN, '-i', '0', '-tls', '-s', 'enable', '1'): (0, SET_OK, ''),
        (HCCN, '-i', '1', '-pfc', '-s', 'bitmap', '0,0,0,1,0,0,0,0'): LINK_IS_DOWN,
    })
    res = run_module(hccn_config, {'config': CONFIG, 'backup': True, 'backup_dir': str(tmp_path)}, cmds)
    assert res.failed
    out = res.result
    assert out['changed'] is True
    assert out['changed_devices'] == [0] and out['failed_devices'] == [1]
    assert out['backup_file'] and os.path.dirname(out['backup_file']) == str(tmp_path)
    assert out['backup_file'] in out['msg']
    assert 'changed: 0; failed: 1' in out['msg']
    error = out['errors'][0]
    assert error['device'] == 1 and error['rc'] == 22 and error['stderr'] == 'Execute failed: Link status is down.\n'
    assert error['cmd'] == '%s -i 1 -pfc -s bitmap 0,0,0,1,0,0,0,0' % HCCN
    assert 'Execute failed: Link status is down.' in error['msg'] and 'Nothing was changed on this device' in error['msg']


def test_busy_retry_once(run_module):
    cmds = base_commands()
    cmds.update({
        get(0, 'tls'): [(0, TLS_OFF, ''), (0, TLS_ON, '')],
        (HCCN, '-i', '0', '-tls', '-s', 'enable', '1'): [BUSY, (0, SET_OK, '')],
    })
    res = run_module(hccn_config, {'config': [{'device': 0, 'tls': True}]}, cmds)
    assert not res.failed, res
    assert sets(res.calls) == [[HCCN, '-i', '0', '-tls', '-s', 'enable', '1']] * 2


def test_busy_twice_fails(run_module):
    cmds = base_commands()
    cmds[(HCCN, '-i', '0', '-tls', '-s', 'enable', '1')] = BUSY
    res = run_module(hccn_config, {'config': [{'device': 0, 'tls': True}]}, cmds)
    assert res.failed
    assert len(sets(res.calls)) == 2
    assert 'hccn_tool is busy, please try again.' in res.result['msg']


def test_backup_written_before_first_set(run_module, tmp_path, monkeypatch):
    events = []
    real_write = _port_config.write_backup
    real_call = _hccn_tool.HccnTool.call

    def write_backup(*args):
        path = real_write(*args)
        events.append(('backup', path))
        return path

    def call(self, argv, read=False):
        events.append(('call', list(argv)))
        return real_call(self, argv, read=read)

    monkeypatch.setattr(_port_config, 'write_backup', write_backup)
    monkeypatch.setattr(_hccn_tool.HccnTool, 'call', call)
    cmds = base_commands()
    cmds.update({
        get(0, 'tls'): [(0, TLS_OFF, ''), (0, TLS_ON, '')],
        (HCCN, '-i', '0', '-tls', '-s', 'enable', '1'): (0, SET_OK, ''),
    })
    backup_dir = tmp_path / 'backup'
    res = run_module(hccn_config, {'config': [{'device': 0, 'tls': True}, {'device': 1, 'pfc_priorities': [4]}],
                                   'backup': True, 'backup_dir': str(backup_dir)}, cmds)
    assert not res.failed, res
    kinds = [e[0] if e[0] == 'backup' else ('set' if '-s' in e[1] else 'get') for e in events]
    assert kinds.index('backup') < kinds.index('set')
    path = res.result['backup_file']
    assert os.path.basename(path).startswith('hccn-%s-' % HOST) and path.endswith('.json')
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path) as handle:
        doc = json.load(handle)
    assert doc['format'] == st.BACKUP_FORMAT and doc['host'] == HOST
    assert doc['devices'] == [{'device': 0, 'tls': False}]   # only the device that changes


def test_restore_from(run_module, tmp_path):
    doc = st.PORTS.backup_document(HOST, '2026-01-01T00:00:00Z', [{'device': 1, 'pfc_priorities': [3], 'tls': None}])
    path = tmp_path / 'hccn-node-07-20260101T000000Z.json'
    path.write_text(st.dump_backup(doc))
    cmds = base_commands()
    cmds.update({
        get(1, 'pfc'): [(0, PFC_4, ''), (0, PFC_3, '')],
        (HCCN, '-i', '1', '-pfc', '-s', 'bitmap', '0,0,0,1,0,0,0,0'): (0, SET_OK, ''),
        get(1, 'link'): (0, LINK_UP, ''),
    })
    res = run_module(hccn_config, {'restore_from': str(path)}, cmds)
    assert not res.failed, res
    assert sets(res.calls) == [[HCCN, '-i', '1', '-pfc', '-s', 'bitmap', '0,0,0,1,0,0,0,0']]
    assert any('NPU 1: tls was not set when the backup was taken' in w for w in res.warnings)


def test_restore_from_foreign_file(run_module, tmp_path):
    path = tmp_path / 'x.json'
    path.write_text('{"devices": []}')
    res = run_module(hccn_config, {'restore_from': str(path)}, {})
    assert res.failed and res.calls == []
    assert 'not an hccn_config backup' in res.result['msg']


def test_read_failure_stops_before_any_set(run_module):
    cmds = base_commands()
    cmds[get(1, 'pfc')] = LINK_IS_DOWN
    res = run_module(hccn_config, {'config': CONFIG}, cmds)
    assert res.failed
    assert res.result['rc'] == 22
    assert 'NPU 1 on %s: %s -i 1 -pfc -g failed (rc=22): Execute failed: Link status is down.' % (HOST, HCCN) in res.result['msg']
    assert sets(res.calls) == []


def test_rendered(run_module):
    res = run_module(hccn_config, {'state': 'rendered', 'config': [
        {'device': 0, 'address': '10.20.0.10', 'netmask': '24', 'gateway': '10.20.0.1', 'tls': False}]}, {})
    assert not res.failed, res
    assert res.calls == []
    assert res.result['rendered'] == ['hccn_tool -i 0 -ip -s address 10.20.0.10 netmask 255.255.255.0',
                                      'hccn_tool -i 0 -gateway -s gateway 10.20.0.1', 'hccn_tool -i 0 -tls -s enable 0']


def test_parsed(run_module):
    text = ''.join('/usr/local/Ascend/driver/tools/hccn_tool -i %d -ip -g\n%s' % (dev, ip) for dev, ip in ((0, IP_0), (1, IP_1)))
    text += '/usr/local/Ascend/driver/tools/hccn_tool -i 0 -pfc -g\n' + PFC_4
    res = run_module(hccn_config, {'state': 'parsed', 'running_config': text}, {})
    assert not res.failed, res
    assert res.result['parsed'] == [{'device': 0, 'address': '10.10.0.10', 'netmask': '255.255.255.0', 'pfc_priorities': [4]},
                                    {'device': 1, 'address': '10.10.0.11', 'netmask': '255.255.255.0'}]
    assert res.warnings == []


def test_gathered_tolerates_link_down(run_module):
    cmds = {
        get(1, 'ip'): (0, IP_1, ''),
        get(1, 'gateway'): NO_GATEWAY,
        get(1, 'netdetect'): (0, NETDETECT, ''),
        get(1, 'mtu'): (0, MTU_9000, ''),
        get(1, 'pfc'): LINK_IS_DOWN,
        get(1, 'dscp_to_tc'): LINK_IS_DOWN,
        get(1, 'tls'): (0, TLS_OFF, ''),
    }
    res = run_module(hccn_config, {'state': 'gathered', 'config': [{'device': 1}]}, cmds)
    assert not res.failed, res
    assert res.result['gathered'] == [{'device': 1, 'address': '10.10.0.11', 'netmask': '255.255.255.0', 'gateway': None,
                                       'netdetect': '11.12.165.1', 'mtu': 9000, 'pfc_priorities': None, 'dscp_to_tc': None,
                                       'tls': False}]
    assert len(res.warnings) == 2 and all('Link status is down' in w for w in res.warnings)
    assert sets(res.calls) == []


# hccn_tool's answer to `-ip -s` with an address another port holds (0x2007, exit 7, stderr)
IP_CONFLICT = (7, '', 'The ip address configured is conflicted!\n')


def test_busy_on_read_message_reads_as_sentences(run_module):
    cmds = {get(0, 'tls'): BUSY}
    res = run_module(hccn_config, {'config': [{'device': 0, 'tls': True}]}, cmds)
    assert res.failed
    assert res.calls == [list(get(0, 'tls'))] * 2
    assert res.result['msg'] == (
        'NPU 0 on %s: %s -i 0 -tls -g failed (rc=11): hccn_tool is busy, please try again. Another hccn_tool call '
        'holds the device: run the task again when it is idle. Nothing was changed.' % (HOST, HCCN))
    assert res.result['rc'] == 11
    assert res.result['rc'] == 11 and res.result['stdout'] == BUSY[1]


def test_ip_conflict_on_set_is_reported_without_a_rollback(run_module):
    ip_set = (HCCN, '-i', '1', '-ip', '-s', 'address', '10.10.0.11', 'netmask', '255.255.255.0')
    cmds = {
        get(1, 'ip'): (0, IP_0, ''),
        get(1, 'gateway'): NO_GATEWAY,
        (NPU_SMI, 'info'): (0, NPU_IDLE, ''),
        ip_set: IP_CONFLICT,
    }
    res = run_module(hccn_config, {'config': [{'device': 1, 'address': '10.10.0.11', 'netmask': '24'}]}, cmds)
    assert res.failed
    assert res.calls == [list(get(1, 'ip')), list(get(1, 'gateway')), [NPU_SMI, 'info'], list(ip_set)]
    out = res.result
    assert out['changed'] is False and out['changed_devices'] == [] and out['failed_devices'] == [1]
    assert out['errors'][0]['msg'] == (
        'NPU 1 on %s: %s -i 1 -ip -s address 10.10.0.11 netmask 255.255.255.0 failed (rc=7): The ip address configured '
        'is conflicted! Another port already uses this address: choose a unique address. Nothing was changed on this '
        'device.' % (HOST, HCCN))
    assert 'restore' not in out['msg'] and 'rollback' not in out['msg']
    # the failing command is in the top-level keys too, not only in errors
    assert out['cmd'] == '%s -i 1 -ip -s address 10.10.0.11 netmask 255.255.255.0' % HCCN
    assert out['rc'] == 7 and out['stderr'] == IP_CONFLICT[2] and out['stdout'] == ''


def test_failure_after_a_set_points_at_the_rollback(run_module):
    cmds = {
        get(2, 'mtu'): (0, MTU_1500, ''),
        get(2, 'tls'): (0, TLS_OFF, ''),
        (NPU_SMI, 'info'): (0, NPU_IDLE, ''),
        (HCCN, '-i', '2', '-mtu', '-s', 'size', '9000'): (0, SET_OK, ''),
        (HCCN, '-i', '2', '-tls', '-s', 'enable', '1'): LINK_IS_DOWN,
    }
    res = run_module(hccn_config, {'config': [{'device': 2, 'mtu': 9000, 'tls': True}]}, cmds)
    assert res.failed
    assert res.result['changed_devices'] == [2] and res.result['failed_devices'] == [2]
    assert res.result['errors'][0]['msg'].endswith(
        'failed (rc=22): Execute failed: Link status is down. The port link is down: check the cable, the optical module '
        'and the switch port. Earlier commands on this device were applied, later ones were not run; to undo them, '
        'restore the previous values by hand (no backup was written; use backup=true next time).')
    assert 'rollback playbook' not in res.result['msg']


# ---- defects found by probing with bad input; each test failed before its fix ----

def _write_backup(tmp_path, devices, host=HOST):
    doc = {'format': st.BACKUP_FORMAT, 'version': st.BACKUP_VERSION, 'host': host, 'created': 'x', 'devices': devices}
    path = tmp_path / 'hccn-backup.json'
    path.write_text(json.dumps(doc))
    return str(path)


def test_restore_from_a_backup_of_another_host_is_refused(run_module, tmp_path):
    path = _write_backup(tmp_path, [{'device': 0, 'mtu': 4200}], host='some-other-node')
    res = run_module(hccn_config, {'restore_from': path}, {})
    assert res.failed and res.calls == []
    assert res.result['msg'] == (
        '%s: restore_from %s: the backup was written on some-other-node, not on this host %s; restoring it here would '
        'give this node the settings (and addresses) of another one. Restore it on some-other-node, or set '
        'allow_other_host=true if that is really meant. Nothing was changed.' % (HOST, path, HOST))


def test_restore_from_another_host_when_allowed_warns(run_module, tmp_path):
    path = _write_backup(tmp_path, [{'device': 0, 'mtu': 4200}], host='renamed-node')
    cmds = {get(0, 'mtu'): (0, MTU_1500, ''), (NPU_SMI, 'info'): (0, NPU_IDLE, ''),
            (HCCN, '-i', '0', '-mtu', '-s', 'size', '4200'): (0, SET_OK, ''), get(0, 'link'): (0, LINK_UP, '')}
    cmds[get(0, 'mtu')] = [(0, MTU_1500, ''), (0, MTU_9000.replace('9000', '4200'), '')]
    res = run_module(hccn_config, {'restore_from': path, 'allow_other_host': True}, cmds)
    assert not res.failed, res
    assert sets(res.calls) == [[HCCN, '-i', '0', '-mtu', '-s', 'size', '4200']]
    assert res.warnings == ['restoring a backup written on renamed-node on %s (allow_other_host=true)' % HOST]


@pytest.mark.parametrize('device', [
    {'device': 0, 'pfc_priorities': {'a': 1}},
    {'device': 0, 'dscp_to_tc': 5},
    {'device': 0, 'dscp_to_tc': [5]},
    {'device': 0, 'dscp_to_tc': ['a']},
    {'device': 1.9, 'mtu': 4100},
])
def test_tampered_backup_is_refused_before_any_call(run_module, tmp_path, device):
    res = run_module(hccn_config, {'restore_from': _write_backup(tmp_path, [device])}, {})
    assert res.failed and res.calls == []
    assert 'does not pass the checks of the config option' in res.result['msg']
    assert res.result['msg'].endswith('Nothing was changed.')


def test_relative_backup_dir_is_refused(run_module):
    res = run_module(hccn_config, {'config': [{'device': 0, 'tls': True}], 'backup': True, 'backup_dir': 'relbackup'}, {})
    assert res.failed and res.calls == []
    assert res.result['msg'] == ('hccn_config: backup_dir must be an absolute path (got relbackup); a relative one would be '
                                 'resolved against the remote login directory.')


def test_relative_restore_from_is_refused(run_module):
    res = run_module(hccn_config, {'restore_from': 'hccn-node-07.json'}, {})
    assert res.failed and res.calls == []
    assert 'give the absolute path of the backup file' in res.result['msg']


@pytest.mark.parametrize('args, needle', [
    ({'link_timeout': 0}, 'link_timeout must be 1 or more (the port must be seen UP again after an MTU or PFC change), got 0'),
    ({'timeout': -1}, 'timeout must be 0 or more (0 disables the limit), got -1'),
    ({'workers': 0}, 'workers must be 1 or more (at least one call must run), got 0'),
])
def test_values_that_cannot_succeed_are_refused_before_any_call(run_module, args, needle):
    res = run_module(hccn_config, dict(args, config=[{'device': 0, 'mtu': 9000}]), {})
    assert res.failed and res.calls == []
    assert res.result['msg'] == 'hccn_config: %s.' % needle


def test_failure_with_a_backup_names_the_working_restore(run_module, tmp_path):
    cmds = base_commands()
    cmds.update({
        (HCCN, '-i', '1', '-pfc', '-s', 'bitmap', '0,0,0,1,0,0,0,0'): (0, SET_OK, ''),
        get(1, 'link'): (0, LINK_DOWN, ''),
    })
    res = run_module(hccn_config, {'config': [{'device': 1, 'pfc_priorities': [3]}], 'link_timeout': 1,
                                   'backup': True, 'backup_dir': str(tmp_path)}, cmds)
    assert res.failed
    path = res.result['backup_file']
    assert 'restore the previous state with npuops.ascend.hccn_config and restore_from: %s' % path in res.result['msg']
    assert 'rollback playbook' not in res.result['msg']


def test_gathered_reads_an_unset_netdetect_as_null_and_fails_on_a_real_error(run_module):
    cmds = {get(1, q): (0, '', '') for q in ('ip', 'gateway', 'mtu', 'pfc', 'dscp_to_tc', 'tls')}
    cmds.update({get(1, 'ip'): (0, IP_1, ''), get(1, 'gateway'): NO_GATEWAY, get(1, 'mtu'): (0, MTU_9000, ''),
                 get(1, 'pfc'): (0, PFC_4, ''), get(1, 'dscp_to_tc'): (0, DSCP_33_3, ''), get(1, 'tls'): (0, TLS_OFF, ''),
                 get(1, 'netdetect'): (0, NETDETECT.replace('11.12.165.1', '0.0.0.0'), '')})
    res = run_module(hccn_config, {'state': 'gathered', 'config': [{'device': 1}]}, cmds)
    assert not res.failed, res
    assert res.result['gathered'][0]['netdetect'] is None and res.warnings == []
    # the generic DSMI failure is a failure, for netdetect as for any other query
    cmds[get(1, 'netdetect')] = (1, '', 'Command execute failed!\n')
    res = run_module(hccn_config, {'state': 'gathered', 'config': [{'device': 1}]}, cmds)
    assert res.failed
    assert 'NPU 1 on %s: %s -i 1 -netdetect -g failed (rc=1): Command execute failed!' % (HOST, HCCN) in res.result['msg']


def test_calls_to_one_device_never_overlap(run_module):
    """hccn_tool answers busy to concurrent calls on one device: the adapter serialises them per device."""
    cmds = {get(dev, q): (0, reply, '') for dev in (0, 1) for q, reply in (('mtu', MTU_9000), ('pfc', PFC_4), ('tls', TLS_OFF))}
    res = run_module(hccn_config, {'config': [{'device': d, 'mtu': 9000, 'pfc_priorities': [4], 'tls': False} for d in (0, 1)]},
                     cmds, delay=0.05)
    assert not res.failed, res
    # two devices with three reads each and 8 workers: at most one call per device at any time
    assert res.max_in_flight == 2


# ---- one vocabulary: what hccn_info returns is a config hccn_config takes ----

def test_hccn_info_config_fed_back_changes_nothing(run_module):
    from ansible_collections.npuops.ascend.plugins.modules import hccn_info
    cmds = {}
    for dev, ip in ((0, IP_0), (1, IP_1)):
        cmds.update({get(dev, 'ip'): (0, ip, ''), get(dev, 'gateway'): NO_GATEWAY, get(dev, 'mtu'): (0, MTU_9000, ''),
                     get(dev, 'pfc'): (0, PFC_4, ''), get(dev, 'dscp_to_tc'): (0, DSCP_33_3, ''), get(dev, 'tls'): (0, TLS_OFF, ''),
                     get(dev, 'netdetect'): (0, NETDETECT, ''), get(dev, 'link'): (0, LINK_UP, '')})
    queries = ['link', 'ip', 'gateway', 'netdetect', 'mtu', 'pfc', 'dscp_to_tc', 'tls']
    info = run_module(hccn_info, {'devices': [0, 1], 'queries': queries}, cmds)
    assert not info.failed, info
    config = info.result['config']
    dscp = config[0].pop('dscp_to_tc')
    assert config[0] == {'device': 0, 'address': '10.10.0.10', 'netmask': '255.255.255.0', 'gateway': None,
                         'netdetect': '11.12.165.1', 'mtu': 9000, 'pfc_priorities': [4], 'tls': False}
    assert len(dscp) == 64 and {'dscp': 33, 'tc': 3} in dscp and {'dscp': 32, 'tc': 2} in dscp
    config[0]['dscp_to_tc'] = dscp
    again = run_module(hccn_config, {'config': config}, cmds)
    assert not again.failed, again
    assert again.result['changed'] is False and sets(again.calls) == []
    gathered = run_module(hccn_config, {'state': 'gathered', 'config': [{'device': 0}, {'device': 1}]}, cmds)
    assert gathered.result['gathered'] == config


# ---- the attribute table drives the module: one new row, nothing else ----

def test_a_new_table_row_reaches_the_module_argspec_validation_argv_and_read_back(run_module, monkeypatch):
    from ansible_collections.npuops.ascend.tests.unit.plugins.module_utils.test_port_table import FEC
    monkeypatch.setattr(hccn_config, 'PORTS', st.PortTable(st.ATTRIBUTES + (FEC,)))
    bad = run_module(hccn_config, {'config': [{'device': 2, 'fec': 'fast'}]}, {})
    assert bad.failed and bad.calls == []
    assert 'value of fec must be one of: auto, no, rs, got: fast' in bad.result['msg']
    fec_no, fec_rs = sample('hccn_tool/fec/mc_910a_no_fec'), sample('hccn_tool/fec/mc_doc_rs_fec')
    cmds = {get(2, 'fec'): [(0, fec_no, ''), (0, fec_rs, '')], (NPU_SMI, 'info'): (0, NPU_IDLE, ''),
            (HCCN, '-i', '2', '-fec', '-s', 'mode', 'rs'): (0, SET_OK, ''), get(2, 'link'): (0, LINK_UP, '')}
    res = run_module(hccn_config, {'config': [{'device': 2, 'fec': 'rs'}]}, cmds)
    assert not res.failed, res
    assert res.result['commands'] == ['hccn_tool -i 2 -fec -s mode rs']
    assert res.calls == [list(get(2, 'fec')), [NPU_SMI, 'info'], [HCCN, '-i', '2', '-fec', '-s', 'mode', 'rs'],
                         list(get(2, 'link')), list(get(2, 'fec'))]
    assert res.result['before'] == [{'device': 2, 'fec': 'no'}] and res.result['after'] == [{'device': 2, 'fec': 'rs'}]


# ---- a restore point taken by state=gathered, and a restore onto a port whose link is down ----

def _gathered_commands():
    return {
        get(1, 'ip'): (0, IP_1, ''), get(1, 'gateway'): NO_GATEWAY, get(1, 'netdetect'): (0, NETDETECT, ''),
        get(1, 'mtu'): (0, MTU_1500, ''), get(1, 'pfc'): (0, PFC_3, ''), get(1, 'dscp_to_tc'): (0, DSCP_33_2, ''),
        get(1, 'tls'): (0, TLS_OFF, ''),
    }


def test_gathered_with_backup_writes_a_restore_point_of_everything_read(run_module, tmp_path):
    backup_dir = tmp_path / 'backup'
    res = run_module(hccn_config, {'state': 'gathered', 'config': [{'device': 1}], 'backup': True,
                                   'backup_dir': str(backup_dir)}, _gathered_commands())
    assert not res.failed, res
    assert res.result['changed'] is False and sets(res.calls) == []
    path = res.result['backup_file']
    assert os.path.dirname(path) == str(backup_dir) and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path) as handle:
        doc = json.load(handle)
    assert doc['host'] == HOST
    assert doc['devices'] == res.result['gathered']
    assert doc['devices'][0]['mtu'] == 1500 and doc['devices'][0]['pfc_priorities'] == [3]
    assert len(doc['devices'][0]['dscp_to_tc']) == 64


def test_gathered_with_backup_in_check_mode_writes_nothing(run_module, tmp_path):
    backup_dir = tmp_path / 'backup'
    res = run_module(hccn_config, {'state': 'gathered', 'config': [{'device': 1}], 'backup': True,
                                   'backup_dir': str(backup_dir), '_ansible_check_mode': True}, _gathered_commands())
    assert not res.failed, res
    assert res.result['backup_file'] is None and not backup_dir.exists()


def test_gathered_backup_that_cannot_be_written_fails_and_says_nothing_changed(run_module, tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('')
    res = run_module(hccn_config, {'state': 'gathered', 'config': [{'device': 1}], 'backup': True,
                                   'backup_dir': str(blocker / 'sub')}, _gathered_commands())
    assert res.failed and sets(res.calls) == []
    assert res.result['msg'].startswith('%s: could not write the backup in %s' % (HOST, blocker / 'sub'))
    assert 'Nothing was changed; fix backup_dir or set backup=false.' in res.result['msg']


def test_restore_onto_a_port_whose_link_is_down_sets_what_it_cannot_read(run_module, tmp_path):
    """After a change left the link down, PFC cannot be read: the restore sets it from the backup anyway."""
    path = _write_backup(tmp_path, [{'device': 1, 'mtu': 1500, 'pfc_priorities': [3]}])
    cmds = {
        get(1, 'mtu'): [(0, MTU_9000, ''), (0, MTU_1500, '')],
        get(1, 'pfc'): [LINK_IS_DOWN, (0, PFC_3, '')],
        get(1, 'link'): [(0, LINK_DOWN, ''), (0, LINK_UP, '')],
        (NPU_SMI, 'info'): (0, NPU_IDLE, ''),
        (HCCN, '-i', '1', '-mtu', '-s', 'size', '1500'): (0, SET_OK, ''),
        (HCCN, '-i', '1', '-pfc', '-s', 'bitmap', '0,0,0,1,0,0,0,0'): (0, SET_OK, ''),
    }
    res = run_module(hccn_config, {'restore_from': path}, cmds)
    assert not res.failed, res
    assert sets(res.calls) == [[HCCN, '-i', '1', '-mtu', '-s', 'size', '1500'],
                               [HCCN, '-i', '1', '-pfc', '-s', 'bitmap', '0,0,0,1,0,0,0,0']]
    assert res.result['after'] == [{'device': 1, 'mtu': 1500, 'pfc_priorities': [3]}]
    assert res.result['before'] == [{'device': 1, 'mtu': 9000, 'pfc_priorities': None}]
    assert any('Link status is down' in w and 'set without comparing' in w for w in res.warnings), res.warnings


def test_merged_still_refuses_when_a_value_cannot_be_read(run_module):
    """Only a restore sets blind; a normal request stops before any set."""
    cmds = {get(1, 'pfc'): LINK_IS_DOWN, (NPU_SMI, 'info'): (0, NPU_IDLE, '')}
    res = run_module(hccn_config, {'config': [{'device': 1, 'pfc_priorities': [4]}]}, cmds)
    assert res.failed and sets(res.calls) == []
    assert 'Link status is down' in res.result['msg'] and 'Nothing was changed.' in res.result['msg']


def test_a_failure_names_the_restore_point_the_caller_took(run_module, tmp_path):
    """A step of a change made by several tasks writes no backup; its failure points at the restore point taken before."""
    point = str(tmp_path / 'hccn-node-07-restore-point.json')
    cmds = {get(1, 'pfc'): [(0, PFC_4, ''), (0, PFC_4, '')], (NPU_SMI, 'info'): (0, NPU_IDLE, ''),
            (HCCN, '-i', '1', '-pfc', '-s', 'bitmap', '0,0,0,1,0,0,0,0'): (0, SET_OK, ''), get(1, 'link'): (0, LINK_UP, '')}
    res = run_module(hccn_config, {'config': [{'device': 1, 'pfc_priorities': [3]}], 'restore_point': point}, cmds)
    assert res.failed and res.result['backup_file'] is None
    assert 'restore the previous state with npuops.ascend.hccn_config and restore_from: %s' % point in res.result['msg']
    assert 'no backup was written' not in res.result['msg']


# ---- a restore tells what it did: values back, a link still down, its own restore point, a named backup ----

def _link_stuck_restore_commands():
    """NPU 1 after a change left its link down: MTU 9000 readable, PFC unreadable; the restore's sets answer rc=0 but the
    link stays DOWN, so after the sets MTU reads back 1500 and PFC still cannot be read."""
    return {
        get(1, 'mtu'): [(0, MTU_9000, ''), (0, MTU_1500, '')],
        get(1, 'pfc'): LINK_IS_DOWN,
        get(1, 'link'): (0, LINK_DOWN, ''),
        (NPU_SMI, 'info'): (0, NPU_IDLE, ''),
        (HCCN, '-i', '1', '-mtu', '-s', 'size', '1500'): (0, SET_OK, ''),
        (HCCN, '-i', '1', '-pfc', '-s', 'bitmap', '0,0,0,1,0,0,0,0'): (0, SET_OK, ''),
    }


def test_a_restore_whose_link_stays_down_says_the_values_are_back(run_module, tmp_path):
    path = _write_backup(tmp_path, [{'device': 1, 'mtu': 1500, 'pfc_priorities': [3]}])
    res = run_module(hccn_config, {'restore_from': path, 'link_timeout': 1}, _link_stuck_restore_commands())
    assert res.failed
    out = res.result
    assert out['changed_devices'] == [1] and out['failed_devices'] == [1]
    assert out['link_down_devices'] == [1]
    # what could be read back is the restore point's value; PFC cannot be read while the link is down
    assert out['after'] == [{'device': 1, 'mtu': 1500, 'pfc_priorities': None}]
    assert ('NPU 1 on %s: the values of the restore point %s were set (every hccn_tool set answered rc=0; read back: mtu '
            '1500; pfc_priorities cannot be read while the link is down), but the link is still not UP 1 s after changing '
            'MTU and PFC' % (HOST, path)) in out['msg']
    assert 'check the cable, the optical module and the switch port' in out['msg']
    assert 'no backup was written' not in out['msg']
    assert 'To undo the changes' not in out['msg']


def test_a_restore_that_fails_half_way_points_at_its_restore_point_not_at_a_missing_backup(run_module, tmp_path):
    path = _write_backup(tmp_path, [{'device': 2, 'mtu': 1500, 'tls': False}])
    cmds = {
        get(2, 'mtu'): (0, MTU_9000, ''),
        get(2, 'tls'): (0, TLS_ON, ''),
        (NPU_SMI, 'info'): (0, NPU_IDLE, ''),
        (HCCN, '-i', '2', '-mtu', '-s', 'size', '1500'): (0, SET_OK, ''),
        (HCCN, '-i', '2', '-tls', '-s', 'enable', '0'): LINK_IS_DOWN,
        get(2, 'link'): (0, LINK_UP, ''),
    }
    res = run_module(hccn_config, {'restore_from': path}, cmds)
    assert res.failed
    msg = res.result['msg']
    assert 'no backup was written' not in msg
    assert 'apply the restore point %s again (hccn_config restore_from) once the cause is fixed' % path in msg


def test_a_restore_with_backup_keeps_the_state_it_overwrites(run_module, tmp_path):
    """The rollback takes its own restore point: the state before the restore, named in every failure."""
    path = _write_backup(tmp_path, [{'device': 2, 'mtu': 1500, 'tls': False}])
    cmds = {
        get(2, 'mtu'): (0, MTU_9000, ''),
        get(2, 'tls'): (0, TLS_ON, ''),
        (NPU_SMI, 'info'): (0, NPU_IDLE, ''),
        (HCCN, '-i', '2', '-mtu', '-s', 'size', '1500'): (0, SET_OK, ''),
        (HCCN, '-i', '2', '-tls', '-s', 'enable', '0'): LINK_IS_DOWN,
        get(2, 'link'): (0, LINK_UP, ''),
    }
    backups = tmp_path / 'backups'
    res = run_module(hccn_config, {'restore_from': path, 'backup': True, 'backup_dir': str(backups),
                                   'backup_name': 'before-rollback-node-07-20260101T000000Z.json'}, cmds)
    assert res.failed
    own = str(backups / 'before-rollback-node-07-20260101T000000Z.json')
    assert res.result['backup_file'] == own
    with open(own) as handle:
        assert json.load(handle)['devices'] == [{'device': 2, 'mtu': 9000, 'tls': True}]
    msg = res.result['msg']
    assert ('restore the state before this restore with npuops.ascend.hccn_config and restore_from: %s, or apply the '
            'restore point %s again once the cause is fixed' % (own, path)) in msg
    assert 'no backup was written' not in msg


def test_backup_name_is_the_file_name_of_the_backup(run_module, tmp_path):
    cmds = base_commands()
    cmds.update({get(0, 'tls'): [(0, TLS_OFF, ''), (0, TLS_ON, '')],
                 (HCCN, '-i', '0', '-tls', '-s', 'enable', '1'): (0, SET_OK, '')})
    res = run_module(hccn_config, {'config': [{'device': 0, 'tls': True}], 'backup': True, 'backup_dir': str(tmp_path),
                                   'backup_name': 'hccn-node07-20261202T101500Z.json'}, cmds)
    assert not res.failed, res
    assert res.result['backup_file'] == str(tmp_path / 'hccn-node07-20261202T101500Z.json')
    assert stat.S_IMODE(os.stat(res.result['backup_file']).st_mode) == 0o600


def test_backup_name_that_exists_already_is_refused_before_any_set(run_module, tmp_path):
    (tmp_path / 'hccn-node07-20261202T101500Z.json').write_text('{}')
    cmds = base_commands()
    res = run_module(hccn_config, {'config': [{'device': 0, 'tls': True}], 'backup': True, 'backup_dir': str(tmp_path),
                                   'backup_name': 'hccn-node07-20261202T101500Z.json'}, cmds)
    assert res.failed and sets(res.calls) == []
    assert 'hccn-node07-20261202T101500Z.json exists already' in res.result['msg']
    assert 'Nothing was changed' in res.result['msg']
    assert (tmp_path / 'hccn-node07-20261202T101500Z.json').read_text() == '{}'


@pytest.mark.parametrize('name', ['../hccn.json', 'sub/hccn.json', '.hidden.json', '', 'a b.json'])
def test_backup_name_must_be_a_plain_file_name(run_module, tmp_path, name):
    res = run_module(hccn_config, {'config': [{'device': 0, 'tls': True}], 'backup': True, 'backup_dir': str(tmp_path),
                                   'backup_name': name}, {})
    assert res.failed and res.calls == []
    assert 'backup_name must be a plain file name' in res.result['msg']
