# -*- coding: utf-8 -*-
"""hccn_ping with a scripted run_command."""

from __future__ import annotations

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils._tools import hccn_tool as _hccn_tool
from ansible_collections.npuops.ascend.plugins.modules import hccn_ping
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import HCCN, HOST, NPU_SMI, TIMEOUT, sample

IP_3 = sample('hccn_tool/ip/ac_910b1_dev3')           # ipaddr:29.1.112.213 / netmask:255.255.0.0
IP_0 = sample('hccn_tool/ip/mc_worker0_dev0')             # ipaddr:10.10.0.10
IP_1 = sample('hccn_tool/ip/mc_worker0_dev1')           # ipaddr:10.10.0.11
PING_3 = sample('hccn_tool/ping/ac_910b1_dev3')       # device 3 PING 29.1.137.205 ... 0.00% packet loss
PING_0 = sample('hccn_tool/ping/ds_910b3_dev0')       # device 0 PING 11.12.165.80
PING_1 = sample('hccn_tool/ping/ds_910b3_dev1')       # device 1 PING 11.12.165.80
NPU_LIST = sample('npu_smi/list/blog_910b4_25.0.rc1.1')
# The real summary line with every packet lost (only the counts differ from the capture).
PING_3_LOST = PING_3.splitlines(True)[0] + '3 packets transmitted, 0 received, 100.00% packet loss\n'
NO_IP = (13, '', 'Get ipconf failed, because no ip was preset there!\n')


def ping(dev, target, *extra):
    return (HCCN, '-i', str(dev), '-ping', '-g', 'address', target) + tuple(extra)


def test_mesh_exact_argv_and_results(run_module):
    cmds = {
        (HCCN, '-i', '3', '-ip', '-g'): (0, IP_3, ''),
        ping(3, '29.1.137.205', 'pkt', '3', 'size', '8972'): (0, PING_3, ''),
    }
    res = run_module(hccn_ping, {'devices': [3], 'targets': ['29.1.112.213', '29.1.137.205'], 'count': 3, 'size': 8972}, cmds)
    assert not res.failed, res
    assert res.calls == [[HCCN, '-i', '3', '-ip', '-g'], list(ping(3, '29.1.137.205', 'pkt', '3', 'size', '8972'))]
    assert res.result['changed'] is False
    assert res.result['pairs'] == [{'device': 3, 'source': '29.1.112.213', 'target': '29.1.137.205', 'reachable': True,
                                    'loss_pct': 0.0, 'rtt_avg_ms': 0.497}]
    assert res.result['summary'] == {'pairs': 1, 'reachable': 1, 'unreachable': 0, 'lossy': 0, 'errors': 0}
    assert res.warnings == []


def test_devices_from_npu_smi_and_concurrency(run_module):
    cmds = {(NPU_SMI, 'info', '-l'): (0, NPU_LIST, '')}
    for dev in range(8):
        cmds[(HCCN, '-i', str(dev), '-ip', '-g')] = (0, IP_0.replace('10.10.0.10', '10.10.0.1%d' % dev), '')
        cmds[ping(dev, '11.12.165.80')] = (0, PING_0.replace('device 0', 'device %d' % dev), '')
    res = run_module(hccn_ping, {'targets': ['11.12.165.80']}, cmds, delay=0.02)
    assert not res.failed, res
    assert [p['device'] for p in res.result['pairs']] == list(range(8))
    assert res.result['summary']['reachable'] == 8
    assert res.max_in_flight > 1


def test_ring_neighbours_only(run_module):
    ring = ['10.10.0.10', '10.10.0.11', '11.12.165.80']
    cmds = {
        (HCCN, '-i', '0', '-ip', '-g'): (0, IP_0, ''),
        (HCCN, '-i', '1', '-ip', '-g'): (0, IP_1, ''),
        ping(0, '10.10.0.11'): (0, PING_0.replace('11.12.165.80', '10.10.0.11'), ''),
        ping(0, '11.12.165.80'): (0, PING_0, ''),
        ping(1, '11.12.165.80'): (0, PING_1, ''),
        ping(1, '10.10.0.10'): (0, PING_1.replace('11.12.165.80', '10.10.0.10'), ''),
    }
    res = run_module(hccn_ping, {'devices': [0, 1], 'targets': ring, 'mode': 'ring'}, cmds)
    assert not res.failed, res
    assert [(p['device'], p['target']) for p in res.result['pairs']] == [
        (0, '10.10.0.11'), (0, '11.12.165.80'), (1, '11.12.165.80'), (1, '10.10.0.10')]


def test_subnet_mode_pings_only_peers_in_the_port_subnet(run_module):
    # device 3 is 29.1.112.213/16: only the 29.1.x.x targets are its peers; 10.x and 11.x are other planes
    targets = ['10.10.0.11', '29.1.137.205', '11.12.165.80', '29.2.0.1']
    cmds = {
        (HCCN, '-i', '3', '-ip', '-g'): (0, IP_3, ''),
        ping(3, '29.1.137.205'): (0, PING_3, ''),
    }
    res = run_module(hccn_ping, {'devices': [3], 'targets': targets, 'mode': 'subnet'}, cmds)
    assert not res.failed, res
    assert res.calls == [[HCCN, '-i', '3', '-ip', '-g'], list(ping(3, '29.1.137.205'))]
    assert [(p['device'], p['target'], p['reachable']) for p in res.result['pairs']] == [(3, '29.1.137.205', True)]


def test_unreachable_is_data_not_failure(run_module):
    cmds = {
        (HCCN, '-i', '3', '-ip', '-g'): (0, IP_3, ''),
        ping(3, '29.1.137.205'): (1, PING_3_LOST, ''),
    }
    res = run_module(hccn_ping, {'devices': [3], 'targets': ['29.1.137.205']}, cmds)
    assert not res.failed, res
    pair = res.result['pairs'][0]
    assert pair['reachable'] is False and pair['loss_pct'] == 100.0 and pair['rtt_avg_ms'] is None
    assert res.result['summary']['unreachable'] == 1


def test_fail_on_unreachable(run_module):
    cmds = {
        (HCCN, '-i', '3', '-ip', '-g'): (0, IP_3, ''),
        ping(3, '29.1.137.205'): (1, PING_3_LOST, ''),
    }
    res = run_module(hccn_ping, {'devices': [3], 'targets': ['29.1.137.205'], 'fail_on_unreachable': True}, cmds)
    assert res.failed
    assert res.result['msg'].startswith('%s: 1 of 1 NPU pairs unreachable: NPU 3 -> 29.1.137.205.' % HOST)
    assert res.result['pairs'][0]['reachable'] is False


def test_no_source_address(run_module):
    res = run_module(hccn_ping, {'devices': [2], 'targets': ['10.10.0.10']}, {(HCCN, '-i', '2', '-ip', '-g'): NO_IP})
    assert not res.failed, res
    assert res.result['pairs'][0]['reachable'] is False
    assert 'no ip was preset there' in res.result['pairs'][0]['error']
    assert res.result['errors'][0]['rc'] == 13


def test_size_unknown_option_hint(run_module):
    cmds = {
        (HCCN, '-i', '3', '-ip', '-g'): (0, IP_3, ''),
        ping(3, '29.1.137.205', 'size', '8972'): (3, '', 'Get unknown option!\n'),
    }
    res = run_module(hccn_ping, {'devices': [3], 'targets': ['29.1.137.205'], 'size': 8972}, cmds)
    assert not res.failed
    assert 'drop the size option' in res.result['errors'][0]['msg']


@pytest.mark.parametrize('args', [{'size': 20000}, {'count': 0}])
def test_bad_options(run_module, args):
    res = run_module(hccn_ping, dict(args, targets=['1.1.1.1'], devices=[0]), {})
    assert res.failed and res.calls == []


@pytest.mark.parametrize('size', [0, 9703])
def test_size_outside_the_mtu_limit(run_module, size):
    res = run_module(hccn_ping, {'size': size, 'targets': ['1.1.1.1'], 'devices': [0]}, {})
    assert res.failed and res.calls == []
    assert res.result['msg'] == ('hccn_ping: size must be between 1 and 9702 bytes (got %d); 8972 fills an MTU of 9000.'
                                 % size)


def test_size_at_the_mtu_limit_is_accepted(run_module):
    cmds = {
        (HCCN, '-i', '3', '-ip', '-g'): (0, IP_3, ''),
        ping(3, '29.1.137.205', 'size', '9702'): (0, PING_3, ''),
    }
    res = run_module(hccn_ping, {'devices': [3], 'targets': ['29.1.112.213', '29.1.137.205'], 'size': 9702}, cmds)
    assert not res.failed, res
    assert res.calls[-1] == list(ping(3, '29.1.137.205', 'size', '9702'))


def test_ring_device_not_in_targets(run_module):
    res = run_module(hccn_ping, {'devices': [3], 'targets': ['10.0.0.1', '10.0.0.2'], 'mode': 'ring'},
                     {(HCCN, '-i', '3', '-ip', '-g'): (0, IP_3, '')})
    assert not res.failed
    assert res.result['pairs'] == []
    assert 'is not in targets' in res.result['errors'][0]['msg']


def test_busy_retry(run_module, monkeypatch):
    monkeypatch.setattr(_hccn_tool, 'BUSY_RETRY_DELAY', 0)
    cmds = {
        (HCCN, '-i', '3', '-ip', '-g'): (0, IP_3, ''),
        ping(3, '29.1.137.205'): [(11, 'hccn_tool is busy, please try again.\n', ''), (0, PING_3, '')],
    }
    res = run_module(hccn_ping, {'devices': [3], 'targets': ['29.1.137.205']}, cmds)
    assert not res.failed
    assert res.result['pairs'][0]['reachable'] is True
    assert len(res.calls) == 3


def test_no_source_address_message_reads_as_sentences(run_module):
    res = run_module(hccn_ping, {'devices': [2], 'targets': ['10.10.0.10']}, {(HCCN, '-i', '2', '-ip', '-g'): NO_IP})
    assert res.result['errors'][0]['msg'] == (
        'NPU 2 on %s: %s -i 2 -ip -g failed (rc=13): Get ipconf failed, because no ip was preset there! The port has '
        'no address; configure one with npuops.ascend.hccn_config. It cannot ping without one.' % (HOST, HCCN))


def test_timeout_names_the_npu_and_host(run_module):
    cmds = {
        (TIMEOUT, '-k', '5', '2', HCCN, '-i', '3', '-ip', '-g'): (0, IP_3, ''),
        (TIMEOUT, '-k', '5', '2', HCCN, '-i', '3', '-ping', '-g', 'address', '29.1.137.205'): (124, '', ''),
    }
    res = run_module(hccn_ping, {'devices': [3], 'targets': ['29.1.137.205'], 'timeout': 2}, cmds,
                     bin_paths={'timeout': TIMEOUT})
    assert res.failed
    assert res.result['msg'].startswith('NPU 3 on %s: %s -i 3 -ping -g address 29.1.137.205 timed out after 2 s.'
                                        % (HOST, HCCN))
    assert res.result['rc'] == 124


# ---- defects found by probing with bad input; each test failed before its fix ----

@pytest.mark.parametrize('target', ['-h', '10.0.0.300', 'fe80::1', '1.2.3.4;touch /tmp/x', '', 'node02'])
def test_targets_that_are_not_ipv4_addresses_are_refused_before_any_call(run_module, target):
    res = run_module(hccn_ping, {'devices': [0], 'targets': ['10.10.0.11', target]}, {})
    assert res.failed and res.calls == []
    assert res.result['msg'] == '%s: targets must be IPv4 addresses; not valid: %r. Nothing was pinged.' % (HOST, target)


def test_no_target_with_fail_on_unreachable_fails_because_nothing_was_checked(run_module):
    cmds = {(HCCN, '-i', '0', '-ip', '-g'): (0, IP_0, '')}
    res = run_module(hccn_ping, {'devices': [0], 'targets': [], 'fail_on_unreachable': True}, cmds)
    assert res.failed
    assert res.result['msg'].startswith('%s: no NPU pair was pinged (targets: 0, mode mesh), so reachability was not '
                                        'checked.' % HOST)
    # without fail_on_unreachable the empty result is returned as it is
    res = run_module(hccn_ping, {'devices': [0], 'targets': []}, cmds)
    assert not res.failed and res.result['summary']['pairs'] == 0


def test_subnet_mode_without_a_peer_fails_when_asked(run_module):
    cmds = {(HCCN, '-i', '3', '-ip', '-g'): (0, IP_3, '')}
    res = run_module(hccn_ping, {'devices': [3], 'targets': ['10.10.0.11'], 'mode': 'subnet', 'fail_on_unreachable': True}, cmds)
    assert res.failed and 'no NPU pair was pinged' in res.result['msg']


@pytest.mark.parametrize('reply, words', [
    ((4, '', 'Get invalid device id.\n'),
     'Get invalid device id. The device does not exist on this host: compare the requested devices with '
     '`npu-smi info -l`. The address of the port could not be read, so it did not ping.'),
    ((11, 'hccn_tool is busy, please try again.\n', ''),
     'hccn_tool is busy, please try again. Another hccn_tool call holds the device: run the task again when it is idle. '
     'The address of the port could not be read, so it did not ping.'),
])
def test_a_failed_address_read_says_what_happened(run_module, monkeypatch, reply, words):
    monkeypatch.setattr(_hccn_tool, 'BUSY_RETRY_DELAY', 0)
    res = run_module(hccn_ping, {'devices': [8], 'targets': ['10.10.0.10']}, {(HCCN, '-i', '8', '-ip', '-g'): reply})
    msg = res.result['errors'][0]['msg']
    assert msg == 'NPU 8 on %s: %s -i 8 -ip -g failed (rc=%d): %s' % (HOST, HCCN, reply[0], words)
    assert 'needs an address' not in msg and 'has no address' not in msg


LINK_UP = sample('hccn_tool/link/mc_doc_up')                     # link status: UP
LINK_DOWN = sample('hccn_tool/link/mc_doc_up').replace('UP', 'DOWN')


def test_read_after_reads_each_device_after_its_pings_in_the_same_run(run_module):
    """read_after: the links of the pinged devices, read after every ping (the change window's verification)."""
    cmds = {
        (HCCN, '-i', '0', '-ip', '-g'): (0, IP_0, ''),
        (HCCN, '-i', '1', '-ip', '-g'): (0, IP_1, ''),
        ping(0, '11.12.165.80'): (0, PING_0, ''),
        ping(1, '11.12.165.80'): (0, PING_1, ''),
        (HCCN, '-i', '0', '-link', '-g'): (0, LINK_UP, ''),
        (HCCN, '-i', '1', '-link', '-g'): (0, LINK_UP, ''),
    }
    res = run_module(hccn_ping, {'devices': [0, 1], 'targets': ['11.12.165.80'], 'read_after': ['link']}, cmds)
    assert not res.failed, res
    pings = [i for i, call in enumerate(res.calls) if '-ping' in call]
    links = [i for i, call in enumerate(res.calls) if '-link' in call]
    assert len(pings) == 2 and len(links) == 2 and max(pings) < min(links)
    read = res.result['read']
    assert sorted(read['devices']) == ['0', '1'] and read['errors'] == []
    assert read['devices']['0']['link'] == 'UP'
    assert isinstance(res.result['read_at'], float) and res.result['read_at'] > 1.7e9


def test_without_read_after_nothing_more_is_read(run_module):
    cmds = {(HCCN, '-i', '3', '-ip', '-g'): (0, IP_3, ''), ping(3, '29.1.137.205'): (0, PING_3, '')}
    res = run_module(hccn_ping, {'devices': [3], 'targets': ['29.1.137.205']}, cmds)
    assert not res.failed, res
    assert 'read' not in res.result and 'read_at' not in res.result
    assert len(res.calls) == 2


def test_read_after_is_in_the_failed_result_of_an_unreachable_pair(run_module):
    """A pair that does not answer fails the task with fail_on_unreachable; the result still shows its link."""
    cmds = {
        (HCCN, '-i', '3', '-ip', '-g'): (0, IP_3, ''),
        ping(3, '29.1.137.205'): (1, PING_3_LOST, ''),
        (HCCN, '-i', '3', '-link', '-g'): (0, LINK_DOWN, ''),
    }
    res = run_module(hccn_ping, {'devices': [3], 'targets': ['29.1.137.205'], 'fail_on_unreachable': True,
                                 'read_after': ['link']}, cmds)
    assert res.failed
    assert '1 of 1 NPU pairs unreachable' in res.result['msg']
    assert res.result['read']['devices']['3']['link'] == 'DOWN'


def test_read_after_refuses_an_unknown_query_before_any_call(run_module):
    res = run_module(hccn_ping, {'devices': [3], 'targets': ['29.1.137.205'], 'read_after': ['pause']}, {})
    assert res.failed
    assert 'read_after' in res.result['msg'] and res.calls == []
