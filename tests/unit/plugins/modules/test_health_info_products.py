"""health_info on other products than the A2: an A3 node (two dies per NPU, one port per die) and an Atlas 300I Duo host
(310P3, no RoCE port). The summary tables are real captures; the -l and -m listings follow the A3 shape the captures
show (Chip Count 2 per NPU; Chip Logic ID and Chip Phy-ID columns)."""

from __future__ import annotations

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils._tools import hccn_tool as _hccn_tool
from ansible_collections.npuops.ascend.plugins.modules import health_info
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import (
    fake_host_files, health_findings, HCCN, HOST, LSCPU, NPU_SMI, NUMACTL, sample)
# the host side of the A2 tests (real numactl, lscpu, meminfo and lspci samples)
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.test_health_info import (
    LINK_UP, LSCPU_HOST, LSPCI, LSPCI_ARGV, LSPCI_NONE, MEMINFO_HUGE, NUMACTL_H)

INFO_A3 = sample('npu_smi/info/vllm2666_a3_16dies_24.1.rc3.7')      # real: 8 x Ascend910, two dies each, Phy-ID 0-15
INFO_DUO = sample('npu_smi/info/vllm1563_310p3_duo_25.0.rc1.1')     # real: one 300I Duo card (NPU 8), two 310P3 chips
TOPO_A3 = sample('npu_smi/topo/sglang30453_a3_two_dies')

KV = '\t%-30s : %s'
LIST_A3 = '\n'.join([KV % ('Total Count', 8), ''] + sum(([KV % ('NPU ID', npu), KV % ('Chip Count', 2), ''] for npu in range(8)), [])) + '\n'
MAP_HEAD = '\t' + ''.join('%-31s' % label for label in ('NPU ID', 'Chip ID', 'Chip Logic ID', 'Chip Phy-ID')) + 'Chip Name'
MAP_A3 = '\n'.join([MAP_HEAD] + ['\t%-31d%-31d%-31d%-31d%s' % (npu, chip, npu * 2 + chip, npu * 2 + chip, 'Ascend910')
                                 for npu in range(8) for chip in range(2)]) + '\n'


def port(dev, query):
    return (HCCN, '-i', str(dev), '-' + query, '-g')


def base(table):
    return {(NPU_SMI, 'info'): (0, table, ''), (NUMACTL, '-H'): (0, NUMACTL_H, ''), (LSCPU,): (0, LSCPU_HOST, ''),
            LSPCI_ARGV: (0, LSPCI_NONE, '')}


@pytest.fixture
def host(tmp_path, monkeypatch):
    monkeypatch.setattr(_hccn_tool, 'BUSY_RETRY_DELAY', 0)
    return fake_host_files(tmp_path, monkeypatch, MEMINFO_HUGE)


ARGS = {'npu_subset': ['topo'], 'ecc_again': False, 'port_queries': ['link']}


def test_a3_node_keeps_both_dies_and_reads_one_port_per_die(run_module, host):
    cmds = base(INFO_A3)
    cmds[(NPU_SMI, 'info', '-t', 'topo')] = (0, TOPO_A3, '')
    cmds[(NPU_SMI, 'info', '-l')] = (0, LIST_A3, '')
    cmds[(NPU_SMI, 'info', '-m')] = (0, MAP_A3, '')
    for dev in range(16):
        cmds[port(dev, 'link')] = (0, LINK_UP, '')
    res = run_module(health_info, ARGS, cmds, bin_paths={'lspci': LSPCI})
    assert not res.failed, res
    npu = res.result['npu']
    assert npu['count'] == 8
    product = npu['summary']['product']
    assert (product['family'], product['npus'], product['chips'], product['intra_node_link']) == ('A3', 8, 16, 'HCCS+SIO')
    dies = npu['devices']['6']['dies']
    assert [(die['chip'], die['phy_id']) for die in dies] == [(0, 12), (1, 13)]
    # the topology of the capture names dies 12 and 13 (Phy-ID12/13): each die of NPU 6 carries its own row, SIO to the other
    assert dies[0]['topo']['links'].get('Phy-ID13') == 'SIO' and dies[1]['topo']['links'].get('Phy-ID12') == 'SIO'
    # the die rows show power '-' on die 1: not a value, not a failure
    assert dies[1]['power_w'] is None and npu['summary']['all_healthy'] is True
    ports = res.result['ports']
    assert sorted(int(dev) for dev in ports['devices']) == list(range(16))
    calls = [tuple(call) for call in res.calls]
    assert (NPU_SMI, 'info', '-m') in calls
    findings = health_findings({'host': 'a3-node', 'npu': npu, 'ports': ports}, {'npus_per_node': 16})
    assert [f for f in findings if f['check'] in ('npu_count', 'health', 'link')] == []
    wrong = health_findings({'host': 'a3-node', 'npu': npu}, {'npus_per_node': 8})
    assert [f['msg'] for f in wrong if f['check'] == 'npu_count'] == [
        'a3-node: npu-smi lists 8 NPUs with 16 devices (dies or chips), expected 8']


def test_300i_duo_host_skips_the_ports_and_says_why(run_module, host):
    res = run_module(health_info, dict(ARGS, npu_subset=['processes'], host=False), base(INFO_DUO), bin_paths={'lspci': LSPCI})
    assert not res.failed, res
    npu = res.result['npu']
    product = npu['summary']['product']
    assert (product['family'], product['roce_ports'], product['memory'], product['chips']) == ('310P', False, 'DDR', 2)
    entry = npu['devices']['8']
    assert [(die['chip'], die['device'], die['memory_total_mb'], die['hbm_total_mb']) for die in entry['dies']] == [
        (0, 0, 44280, None), (1, 1, 43693, None)]
    ports = res.result['ports']
    assert ports['skipped'] is True and '310P3' in ports['msg'] and 'no RoCE port' in ports['msg']
    assert not [call for call in res.calls if call[0] == HCCN]
    findings = health_findings({'host': 'duo', 'npu': npu, 'ports': ports}, {'npus_per_node': 2})
    assert [f for f in findings if f['severity'] == 'fail'] == []


def test_an_unreadable_row_is_a_finding_of_that_npu(run_module, host):
    broken = INFO_DUO.replace('1462 / 43693', '1462 / 4369x')
    res = run_module(health_info, dict(ARGS, npu_subset=['processes'], ports=False, host=False), base(broken), bin_paths={'lspci': LSPCI})
    npu = res.result['npu']
    assert npu['summary']['all_healthy'] is False and npu['summary']['unhealthy'] == [8]
    findings = health_findings({'host': HOST, 'npu': npu}, {'npus_per_node': 2})
    rows = [f for f in findings if f['check'] == 'npu_row']
    assert len(rows) == 1 and rows[0]['device'] == 8 and '4369x' in rows[0]['msg']
    assert rows[0]['msg'].startswith('%s NPU 8: a row of /usr/local/sbin/npu-smi info could not be read' % HOST), rows[0]['msg']


def test_a_node_of_another_family_than_the_pod_declares_fails_stage_0(run_module, host):
    res = run_module(health_info, dict(ARGS, npu_subset=['processes'], ports=False, host=False), base(INFO_DUO),
                     bin_paths={'lspci': LSPCI})
    npu = res.result['npu']
    wrong = health_findings({'host': HOST, 'npu': npu}, {'npus_per_node': 2, 'product_family': 'A2'})
    product = [f for f in wrong if f['check'] == 'product']
    assert len(product) == 1 and product[0]['severity'] == 'fail'
    assert '310P3 chips (family 310P) but the PoD declares family A2' in product[0]['msg']
    assert 'npuops_product_family: 310P' in product[0]['msg']
    right = health_findings({'host': HOST, 'npu': npu}, {'npus_per_node': 2, 'product_family': '310P'})
    assert not [f for f in right if f['check'] == 'product']
    # unchecked when no family is given
    assert not [f for f in health_findings({'host': HOST, 'npu': npu}, {'npus_per_node': 2}) if f['check'] == 'product']


def test_the_two_chips_of_a_duo_card_are_one_pcie_function(run_module, host):
    res = run_module(health_info, dict(ARGS, npu_subset=['processes'], ports=False, host=False), base(INFO_DUO),
                     bin_paths={'lspci': LSPCI})
    npu = res.result['npu']
    host_info = {'count': 1, 'devices': {}, 'memory': {}, 'errors': []}
    assert not [f for f in health_findings({'host': HOST, 'npu': npu, 'host_info': host_info}, {'npus_per_node': 2})
                if f['check'] == 'pcie']
    missing = health_findings({'host': HOST, 'npu': npu, 'host_info': dict(host_info, count=0)}, {'npus_per_node': 2})
    assert [f['msg'] for f in missing if f['check'] == 'pcie'] == [
        '%s: 0 NPUs visible on PCIe (lspci), expected 1: NPU 8 (bus 0000:01:00.0) is missing' % HOST]
