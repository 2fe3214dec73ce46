"""Stage 0's findings (health_findings, pod_port_findings), fed with module results made by run_module from real samples of
the fixture tree."""

from __future__ import annotations

import resource

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.module_utils._domain import host_info as _host_info
from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import finding
from ansible_collections.npuops.ascend.plugins.plugin_utils.health import health_findings, pod_port_findings
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils import node_reads
from ansible_collections.npuops.ascend.tests.unit.plugins.plugin_utils.node_reads import (
    ECC, HEALTH_ALARM, INFO_IDLE, LINK_DOWN, LINK_IS_DOWN, LSPCI_1, MEMINFO_NO_PAGES, NET_SOCKET_FAILED, NO_IP, NUMACTL_4,
    PLAN, TEMP, TLS_ON, H, npu_failed, npu_read, numa_read, of, ports_read,
)

# pytest finds fixtures by name in this module's namespace
host_read = node_reads.host_read
node = node_reads.node


# ---- health_findings -------------------------------------------------------------------------------------------------

def test_healthy_node_has_no_finding(node):
    data = node()
    assert data['npu']['count'] == 8 and data['ports']['count'] == 8 and data['host_info']['count'] == 8
    assert health_findings(data) == []


def test_only_what_was_read_is_checked():
    assert health_findings({'host': H, 'npu': None, 'npu_again': None, 'ports': None, 'numa': None, 'host_info': None}) == []


def test_a_tool_that_failed_is_a_finding_and_its_checks_are_left_out(node, run_module):
    failed = npu_failed(run_module)
    found = health_findings(node(npu=failed))
    assert failed['msg'].startswith('node-07: /usr/local/sbin/npu-smi info failed (rc=172): dcmi model initialized failed')
    # the module's message after the finding's subject, the node not named twice
    assert found == [{
        'host': H, 'device': None, 'check': 'npu', 'value': None, 'expected': None, 'severity': 'fail',
        'msg': 'node-07: npu_info (npu-smi) could not read the node: %s' % failed['msg'][len('node-07: '):],
    }]
    # read on a node whose inventory name is another one: the module's subject stays
    assert health_findings(node(host='a2-node07', npu=failed))[0]['msg'] == (
        'a2-node07: npu_info (npu-smi) could not read the node: %s' % failed['msg'])


@pytest.mark.parametrize('key, tool', [('ports', 'hccn_info (hccn_tool)'), ('numa', 'numa_info'), ('host_info', 'host_info')])
def test_each_read_that_failed_is_named(node, key, tool):
    failed = {'changed': False, 'msg': 'node-07: something went wrong', 'failed_when_result': False}
    found = health_findings(node(**{key: failed}))
    assert found == [finding(H, None, key, None, None, '%s could not read the node: something went wrong' % tool)]


def test_a_skipped_read_is_not_a_finding(node):
    skipped = {'changed': False, 'skipped': True, 'skip_reason': 'Conditional result was False'}
    assert health_findings(node(npu=skipped, npu_again=skipped, ports=skipped, numa=skipped, host_info=skipped)) == []


def test_npu_count(node):
    found = health_findings(node(), {'npus_per_node': 16})
    assert of('npu_count', found) == [{
        'host': H, 'device': None, 'check': 'npu_count', 'value': 8, 'expected': 16, 'severity': 'fail',
        'msg': 'node-07: npu-smi lists 8 NPUs, expected 16'}]
    assert of('npu_count', health_findings(node(), {'npus_per_node': 8})) == []


def test_health_from_the_health_view(node, run_module):
    found = health_findings(node(npu=npu_read(run_module, health_2=HEALTH_ALARM)))
    assert found == [{
        'host': H, 'device': 2, 'check': 'health', 'value': 'Alarm', 'expected': 'OK', 'severity': 'fail',
        'msg': 'node-07 NPU 2: health is Alarm (error codes A4025021, 8C03A000, 8C084E00), expected OK'}]


def test_health_from_the_table(node, run_module):
    table = INFO_IDLE.replace('| 3     910B3               | OK            |', '| 3     910B3               | Warning       |')
    found = health_findings(node(npu=npu_read(run_module, table=table)))
    assert found == [{
        'host': H, 'device': 3, 'check': 'health', 'value': 'Warning', 'expected': 'OK', 'severity': 'fail',
        'msg': 'node-07 NPU 3: health is Warning (error codes none), expected OK'}]


def test_multi_bit_ecc(node, run_module):
    ecc = ECC.replace('HBM Double Bit Error Count               : 0', 'HBM Double Bit Error Count               : 3')
    found = health_findings(node(npu=npu_read(run_module, ecc_4=ecc)))
    assert found == [{
        'host': H, 'device': 4, 'check': 'ecc_multi_bit', 'value': 3, 'expected': 0, 'severity': 'fail',
        'msg': 'node-07 NPU 4: 3 multi-bit ECC error(s), expected 0'}]


def test_multi_bit_ecc_counts_the_aggregate(node, run_module):
    ecc = ECC.replace('HBM Double Bit Aggregate Total Err Cnt   : 0', 'HBM Double Bit Aggregate Total Err Cnt   : 5')
    found = health_findings(node(npu=npu_read(run_module, ecc_1=ecc)))
    assert [(f['device'], f['check'], f['value']) for f in found] == [(1, 'ecc_multi_bit', 5)]


def test_single_bit_ecc_growing(node, run_module):
    grown = ECC.replace('HBM Single Bit Error Count               : 0', 'HBM Single Bit Error Count               : 12')
    found = health_findings(node(npu_again=npu_read(run_module, ['ecc'], ecc_5=grown)))
    assert found == [{
        'host': H, 'device': 5, 'check': 'ecc_single_bit_growing', 'value': 12, 'expected': 0, 'severity': 'fail',
        'msg': 'node-07 NPU 5: single-bit ECC errors grew from 0 to 12 between two reads'}]


def test_single_bit_ecc_that_did_not_grow(node, run_module):
    same = ECC.replace('HBM Single Bit Error Count               : 0', 'HBM Single Bit Error Count               : 12')
    data = node(npu=npu_read(run_module, ecc_5=same), npu_again=npu_read(run_module, ['ecc'], ecc_5=same))
    assert health_findings(data) == []
    assert health_findings(dict(data, npu_again=None)) == []


def test_temperature(node, run_module):
    hot = TEMP.replace('NPU Temperature (C)            : 39', 'NPU Temperature (C)            : 85')
    found = health_findings(node(npu=npu_read(run_module, temp_6=hot)))
    assert found == [{
        'host': H, 'device': 6, 'check': 'temperature', 'value': 85, 'expected': 80, 'severity': 'fail',
        'msg': 'node-07 NPU 6: temperature 85 C is above 80 C'}]


def test_temperature_at_the_limit(node, run_module):
    warm = TEMP.replace('NPU Temperature (C)            : 39', 'NPU Temperature (C)            : 80')
    assert health_findings(node(npu=npu_read(run_module, temp_6=warm))) == []


def test_temperature_of_the_table(node):
    # the table says 58 C for NPUs 4 and 6, 59 C for NPU 7; the temp view 39 C
    found = health_findings(node(), {'max_temp_c': 58})
    assert [(f['device'], f['check'], f['value']) for f in found] == [(7, 'temperature', 59)]
    assert found[0]['msg'] == 'node-07 NPU 7: temperature 59 C is above 58 C'


def test_link(node, run_module):
    found = health_findings(node(ports=ports_read(run_module, link_3=LINK_DOWN)))
    assert found == [{
        'host': H, 'device': 3, 'check': 'link', 'value': 'DOWN', 'expected': 'UP', 'severity': 'fail',
        'msg': 'node-07 NPU 3: link is DOWN, expected UP'}]


def test_no_address(node, run_module):
    found = health_findings(node(ports=ports_read(run_module, ip_2=NO_IP)))
    assert found == [{
        'host': H, 'device': 2, 'check': 'address', 'value': None, 'expected': '10.10.0.12', 'severity': 'fail',
        'msg': 'node-07 NPU 2: the port has no IP address'}]


def test_an_address_that_could_not_be_read_is_not_a_missing_address(node, run_module):
    # a query the port could not answer says nothing about the address: the finding carries the tool's words
    found = health_findings(node(ports=ports_read(run_module, ip_2=LINK_IS_DOWN)))
    assert [(f['device'], f['check'], f['severity']) for f in found] == [(2, 'address', 'fail')]
    assert found[0]['msg'] == 'node-07 NPU 2: the address could not be read: ip not read: Execute failed: Link status is down. (rc=22)'


def test_net_health_and_link_that_could_not_be_read(node, run_module):
    found = health_findings(node(ports=ports_read(run_module, net_health_1=LINK_IS_DOWN, link_5=LINK_IS_DOWN)))
    texts = dict((f['device'], f['msg']) for f in found)
    assert [(f['device'], f['check']) for f in found] == [(1, 'net_health'), (5, 'link')]
    assert texts[1] == 'node-07 NPU 1: net_health could not be read: net_health not read: Execute failed: Link status is down. (rc=22)'
    assert texts[5] == 'node-07 NPU 5: the link could not be read: link not read: Execute failed: Link status is down. (rc=22)'


def test_address_differs_from_the_plan(node):
    plan = [dict(port, address='10.10.0.21') if port['device'] == 1 else port for port in PLAN]
    found = health_findings(node(plan=plan))
    assert found == [{
        'host': H, 'device': 1, 'check': 'address', 'value': '10.10.0.11/255.255.255.0', 'expected': '10.10.0.21/255.255.255.0',
        'severity': 'fail', 'msg': 'node-07 NPU 1: address 10.10.0.11/255.255.255.0 differs from the inventory plan '
                                   '10.10.0.21/255.255.255.0'}]


def test_netmask_differs_from_the_plan(node):
    plan = [dict(port, netmask='255.255.0.0') if port['device'] == 0 else port for port in PLAN]
    assert [(f['device'], f['check'], f['expected']) for f in health_findings(node(plan=plan))] == [(0, 'address', '10.10.0.10/255.255.0.0')]


def test_without_a_plan_any_address_is_accepted(node):
    assert health_findings(node(plan=[])) == []


def test_net_health(node, run_module):
    found = health_findings(node(ports=ports_read(run_module, net_health_0=NET_SOCKET_FAILED)))
    assert found == [{
        'host': H, 'device': 0, 'check': 'net_health', 'value': 'Socket failed', 'expected': 'Success', 'severity': 'fail',
        'msg': 'node-07 NPU 0: net_health is Socket failed, expected Success'}]


def test_a_query_the_port_could_not_answer_is_a_warning(node, run_module):
    ports = ports_read(run_module, link_3=LINK_DOWN, pfc_3=LINK_IS_DOWN)
    found = health_findings(node(ports=ports))
    assert [f['check'] for f in found] == ['link', 'pfc']
    assert found[1] == {
        'host': H, 'device': 3, 'check': 'pfc', 'value': None, 'expected': None, 'severity': 'warn',
        'msg': 'node-07 NPU 3: pfc not read: Execute failed: Link status is down. (rc=22)'}
    assert ports['errors'][0]['msg'] == 'NPU 3 on node-07: pfc not read: Execute failed: Link status is down. (rc=22)'


def test_hugepages(node, host_read):
    found = health_findings(node(host_info=host_read(meminfo=MEMINFO_NO_PAGES)))
    assert found == [{
        'host': H, 'device': None, 'check': 'hugepages', 'value': 0, 'expected': '>= 1', 'severity': 'fail',
        'msg': 'node-07: 0 huge pages configured, expected at least 1 (vm.nr_hugepages)'}]
    assert health_findings(node(host_info=host_read(meminfo=MEMINFO_NO_PAGES)), {'min_hugepages': 0}) == []


def test_swappiness_is_a_warning(node, host_read):
    found = health_findings(node(host_info=host_read(swappiness='60\n')))
    assert found == [{
        'host': H, 'device': None, 'check': 'swappiness', 'value': 60, 'expected': '<= 10', 'severity': 'warn',
        'msg': 'node-07: vm.swappiness is 60, the method recommends at most 10'}]
    assert health_findings(node(host_info=host_read(swappiness='0\n'))) == []


def test_nofile_is_a_warning(node, host_read):
    found = health_findings(node(host_info=host_read(nofile=(1024, 524288))))
    assert found == [{
        'host': H, 'device': None, 'check': 'nofile', 'value': 1024, 'expected': '>= 65535', 'severity': 'warn',
        'msg': 'node-07: open-file limit is 1024, the method recommends at least 65535 (ulimit -n)'}]
    assert health_findings(node(host_info=host_read(nofile=(resource.RLIM_INFINITY, resource.RLIM_INFINITY)))) == []


def test_npus_on_pcie(node, host_read):
    found = health_findings(node(host_info=host_read(lspci=LSPCI_1)))
    assert found == [{
        'host': H, 'device': None, 'check': 'pcie', 'value': 1, 'expected': 8, 'severity': 'fail',
        'msg': 'node-07: 1 NPUs visible on PCIe (lspci), expected 8: NPU 0 (bus 0000:c1:00.0), NPU 1 (bus 0000:c2:00.0), '
               'NPU 3 (bus 0000:82:00.0), NPU 4 (bus 0000:01:00.0), NPU 5 (bus 0000:02:00.0), NPU 6 (bus 0000:41:00.0), '
               'NPU 7 (bus 0000:42:00.0) are missing'}]


# lspci -D -n lines in the format of the real sample host/lspci/mock_910c_n, for the bus ids of INFO_IDLE (synthetic)
INFO_IDLE_BUSES = ['0000:c1:00.0', '0000:c2:00.0', '0000:81:00.0', '0000:82:00.0', '0000:01:00.0', '0000:02:00.0',
                   '0000:41:00.0', '0000:42:00.0']


def _lspci(buses):
    return ''.join('%s 1200: 19e5:d802 (rev 20)\n' % bus for bus in sorted(buses))


def test_the_npu_missing_from_pcie_is_named_with_its_bus_id(node, host_read):
    found = of('pcie', health_findings(node(host_info=host_read(lspci=_lspci(INFO_IDLE_BUSES[:6] + INFO_IDLE_BUSES[7:])))))
    assert [f['msg'] for f in found] == [
        'node-07: 7 NPUs visible on PCIe (lspci), expected 8: NPU 6 (bus 0000:41:00.0) is missing']


def test_an_npu_missing_from_npu_smi_too_is_named_by_its_id(node, host_read, run_module):
    rows = INFO_IDLE.splitlines(True)
    at = next(i for i, line in enumerate(rows) if line.startswith('| 6 '))
    table = ''.join(rows[:at] + rows[at + 3:])       # NPU 6's two rows and the rule after them
    found = health_findings(node(npu=npu_read(run_module, table=table),
                                 host_info=host_read(lspci=_lspci(INFO_IDLE_BUSES[:6] + INFO_IDLE_BUSES[7:]))))
    assert [f['msg'] for f in of('pcie', found)] == [
        'node-07: 7 NPUs visible on PCIe (lspci), expected 8: NPU 6 is missing from npu-smi info as well']


def test_what_host_info_could_not_read_is_a_warning(node, host_read):
    host = host_read(thp=None)
    found = health_findings(node(host_info=host))
    path = _host_info.FILES['thp']
    assert found == [{'host': H, 'device': None, 'check': 'thp', 'value': None, 'expected': None, 'severity': 'warn',
                      'msg': "node-07: %s could not be read: [Errno 2] No such file or directory: '%s'" % (path, path)}]
    assert host['errors'][0]['msg'] == found[0]['msg']   # the module's sentence, its subject not said twice
    # read on a node whose inventory name is another one: the module's subject stays
    assert health_findings(node(host='a2-node07', host_info=host))[0]['msg'] == 'a2-node07: %s' % host['errors'][0]['msg']


def test_npu_without_numa_node_is_a_warning(node, run_module):
    numa = numa_read(run_module, numactl=NUMACTL_4)    # CPUs 0-95: the affinity 144-167 and 96-119 is in no node
    found = health_findings(node(numa=numa))
    assert [(f['device'], f['severity']) for f in found] == [(0, 'warn'), (1, 'warn'), (2, 'warn'), (3, 'warn')]
    assert found[0] == {'host': H, 'device': 0, 'check': 'numa_node', 'value': None, 'expected': 'a NUMA node', 'severity': 'warn',
                        'msg': 'node-07 NPU 0: no NUMA node found for its CPU affinity (144-167)'}
    assert found[2]['msg'] == 'node-07 NPU 2: no NUMA node found for its CPU affinity (96-119)'


def test_health_findings_wants_a_dictionary():
    with pytest.raises(AnsibleFilterError, match='health_findings expects a dictionary of the registered results, got list'):
        health_findings([])


# ---- pod_port_findings -----------------------------------------------------------------------------------------------

def test_pod_with_one_plane_has_no_finding(run_module):
    ports = {'node01': ports_read(run_module, queries=['ip', 'tls'])}
    assert pod_port_findings(ports, '10.10.0.0/24') == []


def test_ip_conflict_names_both_hosts_and_devices(run_module):
    node01 = ports_read(run_module, queries=['ip'])
    node02 = ports_read(run_module, devices=[0, 1], queries=['ip'],
                        ip={0: 'hccn_tool/ip/mc_910a_dev0', 1: 'hccn_tool/ip/mc_worker0_dev5'})
    found = pod_port_findings({'node01': node01, 'node02': node02})
    assert found == [
        finding('node01', 5, 'ip_conflict', '10.10.0.15', 'unique', 'address 10.10.0.15 is used by node01 NPU 5, node02 NPU 1'),
        finding('node02', 1, 'ip_conflict', '10.10.0.15', 'unique', 'address 10.10.0.15 is used by node01 NPU 5, node02 NPU 1'),
    ]
    assert found[0]['msg'] == 'node01 NPU 5: address 10.10.0.15 is used by node01 NPU 5, node02 NPU 1'


def test_netmask_differing_from_the_majority(run_module):
    pod = {'node01': ports_read(run_module, queries=['ip']),
           'node02': ports_read(run_module, queries=['ip'], ip=dict((dev, 'hccn_tool/ip/mc_worker9_dev%d' % dev) for dev in range(8))),
           'node03': ports_read(run_module, devices=[0, 1], queries=['ip'],
                                ip={0: 'hccn_tool/ip/mc_910a_dev0', 1: 'hccn_tool/ip/mc_910a_dev1'})}
    found = pod_port_findings(pod)
    assert [(f['host'], f['device'], f['check']) for f in found] == [('node02', dev, 'netmask') for dev in range(8)]
    assert found[0] == {'host': 'node02', 'device': 0, 'check': 'netmask', 'value': '255.255.0.0', 'expected': '255.255.255.0',
                        'severity': 'fail', 'msg': 'node02 NPU 0: netmask 255.255.0.0 differs from the 255.255.255.0 of the '
                                                   'other 10 ports'}


def test_address_outside_the_parameter_plane(run_module):
    pod = {'node01': ports_read(run_module, queries=['ip']),
           'node02': ports_read(run_module, devices=[0], queries=['ip'], ip={0: 'hccn_tool/ip/mc_910a_dev0'})}
    found = pod_port_findings(pod, '10.10.0.0/24')
    assert found == [{'host': 'node02', 'device': 0, 'check': 'subnet', 'value': '192.161.200.10', 'expected': '10.10.0.0/24',
                      'severity': 'fail', 'msg': 'node02 NPU 0: address 192.161.200.10 is outside the parameter plane 10.10.0.0/24'}]
    # a plane written with host bits is the network it lies in
    assert [f['check'] for f in pod_port_findings(pod, '10.10.0.1/24')] == ['subnet']


def test_tls_differing_from_the_majority(run_module):
    pod = {'node01': ports_read(run_module, queries=['tls']), 'node02': ports_read(run_module, devices=[0, 1], queries=['tls'], tls_1=TLS_ON)}
    found = pod_port_findings(pod)
    assert found == [{'host': 'node02', 'device': 1, 'check': 'tls', 'value': True, 'expected': False, 'severity': 'fail',
                      'msg': 'node02 NPU 1: TLS switch is on while the other 9 ports of the PoD have off; HCCL needs one '
                             'setting on every port'}]


def test_a_node_whose_read_failed_is_left_out_of_the_pod_checks(run_module):
    pod = {'node01': ports_read(run_module, queries=['ip']), 'node02': {'msg': 'node02: hccn_tool not found'}, 'node03': None}
    assert pod_port_findings(pod, '10.10.0.0/24') == []


def test_pod_port_findings_arguments():
    with pytest.raises(AnsibleFilterError, match=r"pod_port_findings: parameter_plane '10.10.0.0/33' is not a network"):
        pod_port_findings({}, '10.10.0.0/33')
    with pytest.raises(AnsibleFilterError, match=r'pod_port_findings expects \{host: hccn_info result\}, got list'):
        pod_port_findings([])
