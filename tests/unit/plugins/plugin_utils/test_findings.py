"""findings_text: the messages of findings, each text said once with the nodes and NPUs that have it."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import finding, findings_text
from ansible_collections.npuops.ascend.plugins.plugin_utils.gate import lost_node_finding

MTU = 'MTU is 1500, expected 9000 (npuops_mtu)'
PFC = 'PFC is not enabled on priority 4 (enabled: none), so HCCL_RDMA_SL=4 traffic is not lossless'


def test_findings_text_says_the_same_text_on_every_npu_of_a_node_once():
    found = [finding('node01', dev, 'mtu', 1500, 9000, MTU) for dev in range(8)]
    assert findings_text(found) == 'node01 NPU 0-7: MTU is 1500, expected 9000 (npuops_mtu)'


def test_findings_text_names_the_nodes_that_have_the_same_npus():
    found = [finding(host, dev, 'mtu', 1500, 9000, MTU) for host in ('node01', 'node02') for dev in range(8)]
    assert findings_text(found) == 'node01, node02 NPU 0-7: MTU is 1500, expected 9000 (npuops_mtu)'


def test_findings_text_names_the_npus_of_each_node_when_they_differ():
    found = ([finding('node01', dev, 'mtu', 1500, 9000, MTU) for dev in (5, 0, 1, 2, 3, 3)]
             + [finding('node02', 7, 'mtu', 1500, 9000, MTU)])
    assert findings_text(found) == 'node01 NPU 0-3, 5, node02 NPU 7: MTU is 1500, expected 9000 (npuops_mtu)'


def test_findings_text_groups_node_findings_apart_from_npu_findings():
    text = 'vm.swappiness is 60, the method recommends at most 10'
    found = [finding('node02', None, 'swappiness', 60, '<= 10', text), finding('node03', None, 'swappiness', 60, '<= 10', text),
             finding('node03', 1, 'swappiness', 60, '<= 10', text)]
    assert findings_text(found, joiner=None) == ['node02, node03: vm.swappiness is 60, the method recommends at most 10',
                                                 'node03 NPU 1: vm.swappiness is 60, the method recommends at most 10']


def test_findings_text_keeps_a_message_that_does_not_start_with_its_subject():
    odd = {'host': 'node04', 'device': 2, 'check': 'x', 'severity': 'fail', 'msg': 'NPU 2 on node04: pfc not read (rc=22)'}
    found = [odd, dict(odd), finding('node04', 2, 'mtu', 1500, 9000, MTU)]
    assert findings_text(found, joiner=None) == ['NPU 2 on node04: pfc not read (rc=22)', 'node04 NPU 2: ' + MTU]


def test_findings_text_keeps_the_order_of_first_appearance():
    found = [finding('node02', 0, 'pfc', [], [4], PFC), finding('node01', 3, 'mtu', 1500, 9000, MTU),
             finding('node01', 0, 'pfc', [], [4], PFC), lost_node_finding('node09'), finding('node01', 1, 'pfc', [], [4], PFC)]
    assert findings_text(found, ' | ') == (
        'node02 NPU 0, node01 NPU 0-1: %s | node01 NPU 3: %s | node09: the node dropped out before the gate (unreachable, '
        'or a task failed on it); see the errors above' % (PFC, MTU))


def test_findings_text_of_nothing():
    assert findings_text([]) == ''
    assert findings_text(None, joiner=None) == []
    assert findings_text(['not a finding', None]) == ''
