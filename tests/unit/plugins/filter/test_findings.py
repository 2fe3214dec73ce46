"""The stage findings filters, fed with module results made by run_module from real samples of the fixture tree."""

from __future__ import annotations

import os
import resource

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.filter import health_findings as findings
from ansible_collections.npuops.ascend.plugins.filter.health_findings import (
    bench_findings,
    finding,
    findings_text,
    fingerprint_diff,
    fingerprint_drift,
    fingerprint_findings,
    gate_message,
    health_findings,
    lost_node_finding,
    pod_port_findings,
    stage_summary,
    summary_lines,
    version_findings,
)
from ansible_collections.npuops.ascend.plugins.modules import hccl_bench, hccn_info, host_info, npu_info, numa_info, version_info
from ansible_collections.npuops.ascend.plugins.module_utils import _host_info
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import HCCN, HOST, LSCPU, NPU_SMI, NUMACTL, sample

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
with open(os.path.join(ROOT, 'roles', 'version_check', 'vars', 'main.yml')) as _handle:
    TABLE = yaml.safe_load(_handle)['version_check_compatibility']
SOURCE = TABLE['torch_npu']['source']

# ---- real samples --------------------------------------------------------------------------------------------------

INFO_IDLE = sample('npu_smi/info/vllm198_910b3_23.0.7_idle')       # 8 x 910B3 OK, 54-59 C, driver 23.0.7
INFO_BUSY = sample('npu_smi/info/vllm5111_910b2_25.2.0_busy')
TOPO = sample('npu_smi/topo/swift_910b3_24.1.rc1')                   # affinity 144-167, 96-119, 0-23, 48-71
BOARD = sample('npu_smi/board/mc_910a_card_23.0.5')                  # software 23.0.5, firmware 7.1.0.7.220
HEALTH_OK = sample('npu_smi/health/mc_910a_ok')
HEALTH_ALARM = sample('npu_smi/health/mc_910a_alarm_three_codes')
ECC = sample('npu_smi/ecc/drv950_doc_hbm_only')                     # every counter 0
TEMP = sample('npu_smi/temp/tg_910b_with_mcu')                        # NPU 39 C
POWER = sample('npu_smi/power/tg_910b')
DEVICE_USED = sample('npu_smi/errors/device_used')

LINK_UP = sample('hccn_tool/link/mc_doc_up')
LINK_DOWN = sample('hccn_tool/link/mc_code_comment_down')
NET_OK = sample('hccn_tool/net_health/ds_910b3_dev0_success')
NET_SOCKET_FAILED = sample('hccn_tool/net_health/mc_910a_socket_failed')
TLS_OFF = sample('hccn_tool/tls/cann_doc_old_format_dev0')
TLS_ON = TLS_OFF.replace('tls switch[0]', 'tls switch[1]')           # the same output with the switch on
PFC = sample('hccn_tool/pfc/hixl_dev0_prio4')
NO_IP = (13, '', 'Get ipconf failed, because no ip was preset there!\n')   # hccn_tool_set_and_errors.txt
LINK_IS_DOWN = (22, '', 'Execute failed: Link status is down.\n')

NUMACTL_8 = sample('numa/numactl/atlas800t_a2_8node')                # 8 nodes x 24 CPUs, 0-191
NUMACTL_4 = sample('numa/numactl/lkml_kunpeng920_2s_4node')          # 4 nodes x 24 CPUs, 0-95
LSCPU_HOST = sample('numa/lscpu/blog_atlas800i_a2_new_layout')

MEMINFO_64_PAGES = sample('host/meminfo/aarch64_64k_grep_huge_64_pages')
MEMINFO_NO_PAGES = sample('host/meminfo/aarch64_64k_full_4_18')
OS_RELEASE = sample('host/os_release/openeuler_2203_lts_sp1')
THP = sample('host/thp/netcore_enabled_never')
LSPCI_8 = sample('host/lspci/atlas_a2_kunpeng_full')                # plain lspci of an 8 x d802 node
LSPCI_1 = sample('host/lspci/mock_910c_n')

DRIVER = sample('versions/version_info/mc_driver_23.0.7')            # family V100R001C15, firmware 7.0.0-7.1.99
DRIVER_25 = sample('versions/version_info/docker_driver_25.3.rc1')   # family V100R001C23, firmware 6.4.x and 7.0.0-8.9.9
FIRMWARE = sample('versions/version_info/mc_firmware_7.1.0.11.220')
TOOLKIT = sample('versions/install_info/vllm198_toolkit_8.0.0')        # declares V100R001C15 to C20
TOOLKIT_82 = sample('versions/install_info/vllm_toolkit_8.2.RC1')
TOOLKIT_70 = sample('versions/install_info/mc_toolkit_7.0.T10')        # declares C29, C30, C13, R003C10, R003C11
VERSION_CFG = sample('versions/version_cfg/notes_cann_8.0.0_full')

HCCL_TABLE = sample('hccl_bench/hccl_test/oam_doc_table_avg_time')   # peak algbw 23.76245 GB/s: busbw 41.584 on 8 ranks
HCCL_TABLE_FAST = sample('hccl_bench/hccl_test/secondhand_128rank_collapsed')

H = HOST   # the node's name in the findings, as the modules name it
PLAN = [{'device': dev, 'address': '10.10.0.1%d' % dev, 'netmask': '255.255.255.0'} for dev in range(8)]   # the worker0 samples


# ---- module results on the samples ----------------------------------------------------------------------------------

NPU_VIEWS = {'board': BOARD, 'health': HEALTH_OK, 'ecc': ECC, 'temp': TEMP, 'power': POWER}
HEALTH_SUBSETS = ('board', 'health', 'ecc', 'temp', 'power', 'topo', 'processes')


def npu_read(run_module, subsets=HEALTH_SUBSETS, table=INFO_IDLE, **changed):
    """npu_info on the samples; ``changed`` maps '<view>_<device>' to the output of that one call."""
    cmds = {(NPU_SMI, 'info'): (0, table, ''), (NPU_SMI, 'info', '-t', 'topo'): (0, TOPO, '')}
    for dev in range(8):
        for view in subsets:
            if view in NPU_VIEWS:
                cmds[(NPU_SMI, 'info', '-t', view, '-i', str(dev))] = (0, changed.get('%s_%d' % (view, dev), NPU_VIEWS[view]), '')
    res = run_module(npu_info, {'gather_subset': list(subsets)}, cmds)
    assert not res.failed, res
    return res.result


def npu_failed(run_module):
    res = run_module(npu_info, {'gather_subset': ['health']}, {(NPU_SMI, 'info'): (172, DEVICE_USED, '')})
    assert res.failed
    return res.result


PORT_QUERIES = ('link', 'ip', 'net_health', 'tls', 'pfc')


def ports_read(run_module, devices=range(8), queries=PORT_QUERIES, ip=None, **changed):
    """hccn_info on the samples; ``ip`` maps a device to its ip sample, ``changed`` '<query>_<device>' to a reply."""
    replies = {'link': LINK_UP, 'net_health': NET_OK, 'tls': TLS_OFF, 'pfc': PFC}
    cmds = {}
    for dev in devices:
        for query in queries:
            text = sample((ip or {}).get(dev, 'hccn_tool/ip/mc_worker0_dev%d' % dev)) if query == 'ip' else replies[query]
            reply = changed.get('%s_%d' % (query, dev), text)
            cmds[(HCCN, '-i', str(dev), '-' + query, '-g')] = reply if isinstance(reply, tuple) else (0, reply, '')
    res = run_module(hccn_info, {'devices': list(devices), 'queries': list(queries)}, cmds)
    assert not res.failed, res
    return res.result


def numa_read(run_module, numactl=NUMACTL_8):
    cmds = {(NUMACTL, '-H'): (0, numactl, ''), (LSCPU,): (0, LSCPU_HOST, ''), (NPU_SMI, 'info', '-t', 'topo'): (0, TOPO, '')}
    res = run_module(numa_info, {}, cmds)
    assert not res.failed, res
    return res.result


@pytest.fixture
def host_read(run_module, tmp_path, monkeypatch):
    """host_info on host files in tmp_path filled with the samples."""

    def read(meminfo=MEMINFO_64_PAGES, swappiness='10\n', nofile=(65535, 65535), lspci=LSPCI_8, thp=THP):
        files = {}
        for what, text in (('os_release', OS_RELEASE), ('meminfo', meminfo), ('swappiness', swappiness), ('thp', thp)):
            files[what] = str(tmp_path / what)
            if text is None:
                if os.path.exists(files[what]):
                    os.unlink(files[what])
            else:
                (tmp_path / what).write_text(text)
        monkeypatch.setattr(_host_info, 'FILES', files)
        monkeypatch.setattr(resource, 'getrlimit', lambda which: nofile)
        argv = ('/usr/sbin/lspci', '-D', '-n', '-d', '19e5:')
        res = run_module(host_info, {}, {argv: (0, lspci, '')}, bin_paths={'lspci': '/usr/sbin/lspci'})
        assert not res.failed, res
        return res.result

    return read


@pytest.fixture
def node(run_module, host_read):
    """The registered reads of a healthy node; ``node(**replace)`` swaps some of them."""

    def make(**replace):
        data = {'host': H, 'plan': PLAN}
        for key, build in (('npu', lambda: npu_read(run_module)), ('npu_again', lambda: npu_read(run_module, ['ecc'])),
                           ('ports', lambda: ports_read(run_module)), ('numa', lambda: numa_read(run_module)),
                           ('host_info', host_read)):
            data[key] = replace.pop(key) if key in replace else build()
        data.update(replace)
        return data

    return make


def of(check, found):
    return [f for f in found if f['check'] == check]


def test_filter_table():
    assert sorted(findings.FilterModule().filters()) == [
        'bench_findings', 'findings_text', 'fingerprint_diff', 'fingerprint_drift', 'fingerprint_findings', 'gate_message',
        'health_findings', 'lost_node_finding', 'pod_port_findings', 'stage_summary', 'summary_lines', 'version_findings']


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
    assert found == [findings.finding(H, None, key, None, None, '%s could not read the node: something went wrong' % tool)]


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
        findings.finding('node01', 5, 'ip_conflict', '10.10.0.15', 'unique', 'address 10.10.0.15 is used by node01 NPU 5, node02 NPU 1'),
        findings.finding('node02', 1, 'ip_conflict', '10.10.0.15', 'unique', 'address 10.10.0.15 is used by node01 NPU 5, node02 NPU 1'),
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


# ---- gate_message, lost_node_finding, stage_summary, summary_lines ------------------------------------------------------

def test_gate_message_names_every_failing_node_and_leaves_warnings_out(node, run_module, host_read):
    data = node(ports=ports_read(run_module, link_3=LINK_DOWN), host_info=host_read(swappiness='60\n'))
    found = health_findings(data) + [lost_node_finding('node-09')]
    assert gate_message(found, 0, 'health_check') == (
        'Stage 0 (health_check) gate failed on 2 node(s) (node-07, node-09): node-07 NPU 3: link is DOWN, expected UP; '
        'node-09: the node dropped out before the gate (unreachable, or a task failed on it); see the errors above')


def test_gate_message_when_nothing_failed(node, host_read):
    found = health_findings(node(host_info=host_read(swappiness='60\n')))
    assert [f['severity'] for f in found] == ['warn']
    assert gate_message(found, 2, 'version_check') == 'stage 2 (version_check): gate passed'
    assert gate_message(None, 3, 'hccl_bench') == 'stage 3 (hccl_bench): gate passed'


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


def test_gate_message_says_each_failure_once_with_its_nodes_and_npus():
    found = ([finding(host, dev, 'mtu', 1500, 9000, MTU) for host in ('node02', 'node01') for dev in range(8)]
             + [finding('node03', 4, 'pfc', [], [4], PFC), finding('node03', 5, 'pfc', [3, 4], [4], 'PFC on 3, 4', 'warn'),
                lost_node_finding('node09')])
    assert gate_message(found, 4, 'roce_lossless') == (
        'Stage 4 (roce_lossless) gate failed on 4 node(s) (node01, node02, node03, node09): node02, node01 NPU 0-7: MTU is '
        '1500, expected 9000 (npuops_mtu); node03 NPU 4: %s; node09: the node dropped out before the gate (unreachable, or a '
        'task failed on it); see the errors above' % PFC)


def test_lost_node_finding():
    assert lost_node_finding('node-09') == {
        'host': 'node-09', 'device': None, 'check': 'reachable', 'value': None, 'expected': None, 'severity': 'fail',
        'msg': 'node-09: the node dropped out before the gate (unreachable, or a task failed on it); see the errors above'}


def gate_result(stage, role, status, failures=(), warnings=()):
    """What the gate role records per stage in gate_results."""
    return {'stage': stage, 'role': role, 'status': status, 'failures': list(failures), 'warnings': list(warnings)}


HOSTVARS = {
    'node01': {'gate_results': {'stage0': gate_result(0, 'health_check', 'passed', warnings=['node01: vm.swappiness is 60']),
                                'stage2': gate_result(2, 'version_check', 'passed')}},
    'node02': {'gate_results': {'stage0': gate_result(0, 'health_check', 'failed', failures=['a', 'b']),
                                'stage10': gate_result(10, 'tuning', 'skipped')}},
    'node03': {},
}


def test_stage_summary():
    summary = stage_summary(['node01', 'node02', 'node03'], HOSTVARS, '20260101T000000Z', check_mode=1)
    assert summary == {'run': '20260101T000000Z', 'check_mode': True, 'nodes': {
        'node01': HOSTVARS['node01']['gate_results'], 'node02': HOSTVARS['node02']['gate_results'], 'node03': {}}}
    assert stage_summary(['node04'], HOSTVARS) == {'run': None, 'check_mode': False, 'nodes': {'node04': {}}}


def test_summary_lines():
    lines = summary_lines(stage_summary(['node02', 'node01', 'node03'], HOSTVARS, 'r1'))
    assert lines == [
        'node01       stage0 health_check   passed (1 warning(s))',
        'node01       stage2 version_check  passed',
        'node02       stage0 health_check   failed (2 failure(s))',
        'node02       stage10 tuning         skipped',
        'node03       no stage ran',
    ]
    assert summary_lines(None) == []


# ---- version_findings, fingerprints ----------------------------------------------------------------------------------

PYTHON = '/opt/venvs/train/bin/python3'


@pytest.fixture
def stack_read(run_module, tmp_path, monkeypatch):
    """version_info on version files in tmp_path filled with the samples, and the given package versions."""
    for key in list(os.environ):
        if key.startswith(('HCCL_', 'ASCEND_', 'TASK_QUEUE_', 'PYTORCH_NPU_')):
            monkeypatch.delenv(key)

    def read(driver=DRIVER, firmware=FIRMWARE, toolkit=TOOLKIT, torch='2.1.0', torch_npu='2.1.0.post10', name='node'):
        root = tmp_path / name
        for path, text in (('driver/version.info', driver), ('firmware/version.info', firmware),
                           ('toolkit/aarch64-linux/ascend_toolkit_install.info', toolkit), ('toolkit/version.cfg', VERSION_CFG)):
            if text is not None:
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_text(text)
        argv = (PYTHON, '-c', version_info.PACKAGES_SCRIPT, 'torch', 'torch_npu')
        out = '{"torch": %s, "torch_npu": %s}\n' % tuple('"%s"' % v if v else 'null' for v in (torch, torch_npu))
        args = {'driver_path': str(root / 'driver'), 'firmware_path': str(root / 'firmware'),
                'toolkit_path': str(root / 'toolkit'), 'python': PYTHON}
        res = run_module(version_info, args, {argv: (0, out, '')})
        assert not res.failed, res
        return res.result

    return read


def boards_read(run_module, **changed):
    return npu_read(run_module, ['board'], **changed)


def board_of(software, firmware):
    return BOARD.replace('23.0.5', software).replace('7.1.0.7.220', firmware)


def loaded(run_module, version='23.0.7', firmware='7.1.0.7.220'):
    """The board view of a node whose NPUs run the given driver and firmware (the 23.0.5 board sample, edited)."""
    text = board_of(version, firmware)
    return boards_read(run_module, **dict(('board_%d' % dev, text) for dev in range(8)))


def test_a_consistent_stack_has_no_finding(run_module, stack_read):
    stack = stack_read()
    checked = version_findings(stack, loaded(run_module), TABLE, host=H)
    assert checked['findings'] == []
    assert checked['fingerprint'] == {
        'driver': '23.0.7', 'firmware': '7.1.0.11.220', 'cann': '8.0.0', 'package:torch': '2.1.0',
        'package:torch_npu': '2.1.0.post10', 'npu_driver': '23.0.7', 'npu_firmware': '7.1.0.7.220'}


def test_firmware_outside_the_range_of_the_driver(run_module, stack_read):
    checked = version_findings(stack_read(), loaded(run_module, firmware='7.8.0.6.201'), TABLE, host=H)
    assert checked['findings'] == [{
        'host': H, 'device': None, 'check': 'firmware_pairing', 'value': '7.8.0.6.201', 'expected': [['7.0.0', '7.1.99']],
        'severity': 'fail', 'msg': 'node-07: firmware 7.8.0.6.201 is outside the range driver 23.0.7 declares '
                                   '(compatible_version_fw [7.0.0,7.1.99]): known bad'}]


def test_firmware_inside_one_of_several_ranges(run_module, stack_read):
    stack = stack_read(driver=DRIVER_25)
    checked = version_findings(stack, loaded(run_module, '25.3.rc1', '7.8.0.6.201'), TABLE, host=H)
    assert of('firmware_pairing', checked['findings']) == []


def test_firmware_of_version_info_is_checked_too(run_module, stack_read):
    stack = stack_read(firmware=FIRMWARE.replace('Version=7.1.0.11.220', 'Version=7.2.0.1.100'))
    assert [(f['check'], f['value']) for f in version_findings(stack, loaded(run_module), TABLE)['findings']] == [
        ('firmware_pairing', '7.2.0.1.100')]


def test_driver_family_not_declared_by_cann(run_module, stack_read):
    checked = version_findings(stack_read(toolkit=TOOLKIT_70), loaded(run_module), TABLE, host=H)
    assert of('cann_pairing', checked['findings']) == [{
        'host': H, 'device': None, 'check': 'cann_pairing', 'value': 'V100R001C15',
        'expected': ['V100R001C29', 'V100R001C30', 'V100R001C13', 'V100R003C10', 'V100R003C11'], 'severity': 'fail',
        'msg': 'node-07: CANN 7.0.T10 declares the driver families V100R001C29, V100R001C30, V100R001C13, V100R003C10, '
               'V100R003C11, the driver 23.0.7 is V100R001C15: known bad'}]


def test_driver_not_paired_with_the_cann_release_is_unknown(run_module, stack_read):
    stack = stack_read(toolkit=TOOLKIT_82, torch='2.1.0', torch_npu='2.1.0.post13')
    checked = version_findings(stack, loaded(run_module), TABLE, host=H)
    assert checked['findings'] == [{
        'host': H, 'device': None, 'check': 'cann_hdk', 'value': '23.0.7',
        'expected': ['25.2.0', '25.0.RC1', '24.1.0', '24.1.RC3', '24.1.RC2'], 'severity': 'warn',
        'msg': 'node-07: driver 23.0.7 is not among the HDK releases CANN 8.2.RC1 is paired with (25.2.0, 25.0.RC1, 24.1.0, '
               '24.1.RC3, 24.1.RC2; MindIE 2.1.RC1 installation page)'}]
    fatal = version_findings(stack, loaded(run_module), TABLE, host=H, unknown_is_fatal=True)
    assert [f['severity'] for f in fatal['findings']] == ['fail']


def test_torch_other_than_the_one_torch_npu_is_built_for(run_module, stack_read):
    checked = version_findings(stack_read(torch='2.3.1'), loaded(run_module), TABLE, host=H)
    assert checked['findings'] == [{
        'host': H, 'device': None, 'check': 'torch_pairing', 'value': '2.3.1', 'expected': '2.1.0', 'severity': 'fail',
        'msg': 'node-07: torch 2.3.1 with torch_npu 2.1.0.post10, which is built for torch 2.1.0 (%s): known bad' % SOURCE}]


def test_a_local_build_tag_of_torch_is_the_same_release(run_module, stack_read):
    assert version_findings(stack_read(torch='2.1.0+cpu'), loaded(run_module), TABLE)['findings'] == []


def test_torch_npu_tested_with_another_cann_is_a_warning(run_module, stack_read):
    checked = version_findings(stack_read(torch='2.4.0', torch_npu='2.4.0'), loaded(run_module), TABLE, host=H)
    assert checked['findings'] == [{
        'host': H, 'device': None, 'check': 'torch_npu_cann', 'value': '8.0.0', 'expected': '8.0.RC3', 'severity': 'warn',
        'msg': 'node-07: torch_npu 2.4.0 was tested with CANN 8.0.RC3, this node runs CANN 8.0.0 (%s)' % SOURCE}]


def test_unknown_torch_npu_warns_and_fails_when_unknown_is_fatal(run_module, stack_read):
    stack, boards = stack_read(torch='2.0.1', torch_npu='2.0.1'), loaded(run_module)
    expected = {'host': H, 'device': None, 'check': 'torch_npu', 'value': '2.0.1', 'expected': 'a release of the table',
                'severity': 'warn', 'msg': 'node-07: torch_npu 2.0.1 is not in the compatibility table (%s): pairing unknown' % SOURCE}
    assert version_findings(stack, boards, TABLE, host=H)['findings'] == [expected]
    assert version_findings(stack, boards, TABLE, host=H, unknown_is_fatal=True)['findings'] == [dict(expected, severity='fail')]


def test_without_torch_npu_nothing_is_checked_about_it(run_module, stack_read):
    assert version_findings(stack_read(torch=None, torch_npu=None), loaded(run_module), TABLE)['findings'] == []


def test_npu_running_another_driver_than_version_info(run_module, stack_read):
    boards = boards_read(run_module)        # the real board sample: driver 23.0.5 loaded, firmware 7.1.0.7.220
    checked = version_findings(stack_read(), boards, TABLE, host=H)
    assert [(f['device'], f['check']) for f in checked['findings']] == [(dev, 'driver_loaded') for dev in range(8)]
    assert checked['findings'][0] == {
        'host': H, 'device': 0, 'check': 'driver_loaded', 'value': '23.0.5', 'expected': '23.0.7', 'severity': 'fail',
        'msg': 'node-07 NPU 0: the NPU runs driver 23.0.5 but version.info says 23.0.7: the installed driver is not the '
               'loaded one (reboot pending?)'}
    assert checked['fingerprint']['npu_driver'] == '23.0.5'


def test_npus_of_one_node_on_different_firmware(run_module, stack_read):
    boards = boards_read(run_module, **dict(('board_%d' % dev, board_of('23.0.7', '7.1.0.7.220')) for dev in range(8) if dev != 3),
                         board_3=board_of('23.0.7', '7.1.0.11.220'))
    checked = version_findings(stack_read(), boards, TABLE, host=H)
    assert checked['findings'] == [{
        'host': H, 'device': 3, 'check': 'firmware', 'value': '7.1.0.11.220', 'expected': '7.1.0.7.220', 'severity': 'fail',
        'msg': 'node-07 NPU 3: firmware 7.1.0.11.220 differs from the 7.1.0.7.220 of the other NPUs of the node'}]
    assert checked['fingerprint']['npu_firmware'] == '7.1.0.11.220,7.1.0.7.220'


def test_no_driver_version_info(run_module, stack_read):
    checked = version_findings(stack_read(driver=None), loaded(run_module), TABLE, host=H)
    assert checked['findings'] == [{
        'host': H, 'device': None, 'check': 'driver', 'value': None, 'expected': 'version.info', 'severity': 'fail',
        'msg': 'node-07: no driver version.info was found; is the Ascend driver installed?'}]


def test_version_findings_arguments():
    with pytest.raises(AnsibleFilterError, match='version_findings expects the version_info result and the compatibility table'):
        version_findings(None, {}, TABLE)


def test_fingerprints_of_a_pod(run_module, stack_read):
    boards = loaded(run_module)
    prints = dict((name, version_findings(stack_read(name=name, **kwargs), boards, TABLE, host=name)['fingerprint'])
                  for name, kwargs in (('node01', {}), ('node02', {}), ('node03', {'driver': DRIVER_25, 'torch': '2.3.1'})))
    assert fingerprint_diff(prints) == [
        {'field': 'driver', 'values': {'node01': '23.0.7', 'node02': '23.0.7', 'node03': '25.3.rc1'}},
        {'field': 'package:torch', 'values': {'node01': '2.1.0', 'node02': '2.1.0', 'node03': '2.3.1'}},
    ]
    assert fingerprint_findings(prints) == [
        findings.finding('node03', None, 'driver', '25.3.rc1', '23.0.7', 'driver is 25.3.rc1 while 2 other node(s) have 23.0.7'),
        findings.finding('node03', None, 'package:torch', '2.3.1', '2.1.0', 'package:torch is 2.3.1 while 2 other node(s) have 2.1.0'),
    ]
    assert fingerprint_findings({'node01': prints['node01'], 'node02': prints['node02']}) == []


def test_fingerprint_of_a_field_one_node_lacks():
    prints = {'node01': {'env:HCCL_BUFFSIZE': '200'}, 'node02': {'env:HCCL_BUFFSIZE': '200'}, 'node03': {}}
    assert fingerprint_diff(prints) == [{'field': 'env:HCCL_BUFFSIZE', 'values': {'node01': '200', 'node02': '200', 'node03': None}}]
    assert [f['msg'] for f in fingerprint_findings(prints)] == ['node03: env:HCCL_BUFFSIZE is None while 2 other node(s) have 200']
    with pytest.raises(AnsibleFilterError, match=r'fingerprint_diff expects \{host: fingerprint\}, got list'):
        fingerprint_diff([])


def test_fingerprint_drift():
    before = {'node01': {'driver': '23.0.7', 'cann': '8.0.0'}, 'node02': {'driver': '23.0.7'}}
    after = {'node01': {'driver': '24.1.rc1', 'cann': '8.0.0'}, 'node03': {'driver': '23.0.7'}}
    assert fingerprint_drift(before, after) == [
        {'host': 'node01', 'field': 'driver', 'before': '23.0.7', 'after': '24.1.rc1', 'msg': 'node01: driver changed from 23.0.7 to 24.1.rc1'},
        {'host': 'node02', 'field': None, 'before': None, 'after': None, 'msg': 'node02: not in this run'},
        {'host': 'node03', 'field': None, 'before': None, 'after': None, 'msg': 'node03: new node since the previous run'},
    ]
    assert fingerprint_drift({}, after) == []
    assert fingerprint_drift(before, before) == []


# ---- bench_findings --------------------------------------------------------------------------------------------------

@pytest.fixture
def bench(run_module, tmp_path):
    test = tmp_path / 'all_reduce_test'
    test.write_text('#!/bin/sh\n')
    test.chmod(0o755)

    def run(output=HCCL_TABLE, info=INFO_BUSY, rc=0, err='', check_mode=False, **options):
        argv = ('/usr/bin/mpirun', '-n', '8', str(test), '-b', '8K', '-e', '1G', '-f', '2', '-p', '8')
        cmds = {(NPU_SMI, 'info'): (0, info, ''), argv: (rc, output, err)}
        return run_module(hccl_bench, dict({'hccl_test_path': str(test)}, **options), cmds, bin_paths={'mpirun': '/usr/bin/mpirun'},
                          check_mode=check_mode)

    return run


def test_bench_below_the_band_with_busy_npus(bench):
    result = bench(fail_below_band=False).result
    found = bench_findings(result, H)
    assert found[0] == {'host': H, 'device': None, 'check': 'busbw', 'value': 41.584, 'expected': '>= 117.6 GB/s', 'severity': 'fail',
                        'msg': 'node-07: AllReduce bus bandwidth 41.584 GB/s is below 117.6 GB/s (60.0 % of 196.0 GB/s)'}
    assert [(f['device'], f['check'], f['value']) for f in found[1:]] == [(dev, 'busy', 16143 + dev) for dev in range(8)]
    assert found[1]['msg'] == 'node-07 NPU 0: pid 16143 (VLLMWorker_DP) holds the NPU during the benchmark'


def test_bench_below_the_band_that_failed_the_task(bench):
    res = bench(info=INFO_IDLE)
    assert res.failed
    assert [f['check'] for f in bench_findings(res.result, H)] == ['busbw']


def test_bench_within_or_above_the_band(bench):
    assert bench_findings(bench(output=HCCL_TABLE_FAST).result, H) == []
    assert bench_findings(bench(output=HCCL_TABLE_FAST, band=[85, 95]).result, H) == []


def test_bench_that_did_not_run(bench):
    res = bench(output='', rc=127, err=sample('hccl_bench/hccl_test/faq_libmpi_missing'))
    assert res.failed
    assert bench_findings(res.result, H) == [{'host': H, 'device': None, 'check': 'hccl_bench', 'value': None, 'expected': None,
                                              'severity': 'fail', 'msg': 'node-07: the benchmark did not run: %s' % res.result['msg']}]


def test_bench_skipped_in_check_mode(bench):
    res = bench(check_mode=True)
    assert res.result['skipped'] is True
    assert bench_findings(res.result, H) == []
    assert bench_findings(None) == []
