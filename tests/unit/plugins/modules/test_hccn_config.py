# -*- coding: utf-8 -*-
"""hccn_config with a scripted run_command: exact argv, no surprises."""

from __future__ import annotations

import json
import os
import stat

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils import _state as st
from ansible_collections.npuops.ascend.plugins.modules import hccn_config

from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import HCCN, HOST, NPU_SMI, capture

# ---- real tool output, byte-for-byte slices of tests/fixtures/captures ----
PFC_4 = capture('hccn_tool_-pfc_-g.txt', 7, 9)                 # PFC configuration / priority / enabled 0 0 0 0 1 0 0 0
IP_0 = capture('hccn_tool_-ip_-g.txt', 7, 8)                   # ipaddr:10.10.0.10 / netmask:255.255.255.0
IP_1 = capture('hccn_tool_-ip_-g.txt', 11, 12)                 # ipaddr:10.10.0.11 / netmask:255.255.255.0
GATEWAY = capture('hccn_tool_-gateway_-g.txt', 6)              # default gateway:11.12.165.1, Iface:eth0
NETDETECT = capture('hccn_tool_-netdetect_-g.txt', 7)          # netdetect address: 11.12.165.1
TLS_OFF = capture('hccn_tool_-tls_-g.txt', 6)                  # dev_id:0, tls switch[0](0:disable, 1:enable), ...
LINK_UP = capture('hccn_tool_-link_-g.txt', 6)                 # link status: UP
LINK_DOWN = capture('hccn_tool_-link_-g.txt', 10)              # link status: DOWN
SET_OK = capture('hccn_tool_set_and_errors.txt', 9)            # Cmd executed successfully!
NPU_IDLE = capture('npu-smi_info.txt', 9, 57)                  # 23.0.7, no processes
NPU_BUSY = capture('npu-smi_info.txt', 63, 111)                # 25.2.0, VLLMWorker_DP on every NPU

# The same real outputs after a set took effect: only the value differs, the layout is the capture's.
PFC_3 = PFC_4.replace('enabled    0 0 0 0 1 0 0 0', 'enabled    0 0 0 1 0 0 0 0')
TLS_ON = TLS_OFF.replace('tls switch[0]', 'tls switch[1]')
# No verbatim sample of these two exists; the text follows the printf formats quoted in the capture
# files: 'mtu:%u' (hccn_tool_-mtu_-g.txt) and '%4s%8s' header + '%4d%8u' rows (hccn_tool_-dscp_to_tc_-g.txt).
MTU_1500 = 'mtu:1500\n'
MTU_9000 = 'mtu:9000\n'
DSCP_33_0 = 'dscp      tc\n  32       0\n  33       0\n  34       0\n'
DSCP_33_3 = 'dscp      tc\n  32       0\n  33       3\n  34       0\n'
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
    monkeypatch.setattr(hccn_config, 'POLL_INTERVAL', 0.01)
    monkeypatch.setattr(hccn_config, 'BUSY_RETRY_DELAY', 0)


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
        get(2, 'dscp_to_tc'): [(0, DSCP_33_0, ''), (0, DSCP_33_3, '')],
        (NPU_SMI, 'info'): (0, NPU_IDLE, ''),
        (HCCN, '-i', '2', '-gateway', '-s', 'gateway', '10.10.0.1'): (0, SET_OK, ''),
        (HCCN, '-i', '2', '-mtu', '-s', 'size', '9000'): (0, SET_OK, ''),
        (HCCN, '-i', '2', '-dscp_to_tc', '-s', 'dscp', '33', 'tc', '3'): (0, SET_OK, ''),
        get(2, 'link'): (0, LINK_UP, ''),
    }
    # after the gateway set the gateway query answers with the real line, value substituted
    cmds[get(2, 'gateway')] = [NO_GATEWAY, (0, GATEWAY.replace('11.12.165.1', '10.10.0.1'), '')]
    config = [{'device': 2, 'gateway': '10.10.0.1', 'mtu': 9000, 'dscp_to_tc': [{'dscp': 33, 'tc': 3}, {'dscp': 32, 'tc': 0}]}]
    res = run_module(hccn_config, {'config': config}, cmds)
    assert not res.failed, res
    assert sets(res.calls) == [
        [HCCN, '-i', '2', '-gateway', '-s', 'gateway', '10.10.0.1'],
        [HCCN, '-i', '2', '-mtu', '-s', 'size', '9000'],
        [HCCN, '-i', '2', '-dscp_to_tc', '-s', 'dscp', '33', 'tc', '3'],
    ]
    assert res.result['before'] == [{'device': 2, 'gateway': None, 'mtu': 1500,
                                     'dscp_to_tc': [{'dscp': 32, 'tc': 0}, {'dscp': 33, 'tc': 0}]}]


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
    real_write = hccn_config.write_backup
    real_call = hccn_config.Ports.call

    def write_backup(*args):
        path = real_write(*args)
        events.append(('backup', path))
        return path

    def call(self, argv):
        events.append(('call', list(argv)))
        return real_call(self, argv)

    monkeypatch.setattr(hccn_config, 'write_backup', write_backup)
    monkeypatch.setattr(hccn_config.Ports, 'call', call)
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
    doc = st.backup_document(HOST, '2026-01-01T00:00:00Z', [{'device': 1, 'pfc_priorities': [3], 'tls': None}])
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
    text = capture('hccn_tool_-ip_-g.txt', 6, 12) + '/usr/local/Ascend/driver/tools/hccn_tool -i 0 -pfc -g\n' + PFC_4
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
