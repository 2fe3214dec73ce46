"""health_info with a scripted run_command fed with real npu-smi, hccn_tool, numactl, lscpu and lspci captures."""

from __future__ import annotations

import os

import pytest

from ansible_collections.npuops.ascend.plugins.module_utils._tools import hccn_tool as _hccn_tool
from ansible_collections.npuops.ascend.plugins.modules import health_info
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import (
    fake_host_files, health_findings, HCCN, HOST, LSCPU, NPU_SMI, NUMACTL, sample)

# Real samples (tests/fixtures/captures, cut byte for byte into tests/unit/fixtures/parsers).
INFO_BUSY = sample('npu_smi/info/vllm5111_910b2_25.2.0_busy')          # 25.2.0, 8 x 910B2, every row OK
INFO_910A_WARNING = sample('npu_smi/info/yuanrong_910a_91col_warning')  # 4 x 910A, every row Warning
TOPO = sample('npu_smi/topo/swift_910b3_24.1.rc1')
BOARD = sample('npu_smi/board/tg_910b_card_25.5.1')
ECC = sample('npu_smi/ecc/drv950_doc_hbm_only')
HEALTH_ALARM = sample('npu_smi/health/mc_910a_alarm_three_codes')
LINK_UP = sample('hccn_tool/link/mc_doc_up')
NET_HEALTH = sample('hccn_tool/net_health/ds_910b3_dev0_success')
TLS = sample('hccn_tool/tls/cann_doc_old_format_dev0')
PFC = sample('hccn_tool/pfc/hixl_dev0_prio4')
NUMACTL_H = sample('numa/numactl/atlas800t_a2_8node')
LSCPU_HOST = sample('numa/lscpu/blog_atlas800i_a2_new_layout')
MEMINFO_HUGE = sample('host/meminfo/aarch64_64k_grep_huge_64_pages')
LSPCI = '/usr/sbin/lspci'
LSPCI_ARGV = (LSPCI, '-D', '-n', '-d', '19e5:')
LSPCI_NONE = sample('host/lspci/vm_D_n_d19e5_empty')
PERMISSION = (12, '', 'permission denied: pls check this cmd run permission.\n')   # hccn_tool, exit = code & 0xFF


PORT_QUERIES = ['link', 'net_health', 'ip', 'tls', 'pfc']   # the order they run on a device


def ip(dev):
    return sample('hccn_tool/ip/mc_worker0_dev%d' % dev)


def view(name, dev):
    return (NPU_SMI, 'info', '-t', name, '-i', str(dev))


def port(dev, query):
    return (HCCN, '-i', str(dev), '-' + query, '-g')


def commands(table=INFO_BUSY, devices=range(8)):
    cmds = {(NPU_SMI, 'info'): (0, table, ''), (NPU_SMI, 'info', '-t', 'topo'): (0, TOPO, ''),
            (NUMACTL, '-H'): (0, NUMACTL_H, ''), (LSCPU,): (0, LSCPU_HOST, ''), LSPCI_ARGV: (0, LSPCI_NONE, '')}
    for dev in devices:
        cmds[view('board', dev)] = (0, BOARD, '')
        cmds[view('ecc', dev)] = (0, ECC, '')
        cmds[port(dev, 'link')] = (0, LINK_UP, '')
        cmds[port(dev, 'net_health')] = (0, NET_HEALTH, '')
        cmds[port(dev, 'ip')] = (0, ip(dev), '')
        cmds[port(dev, 'tls')] = (0, TLS, '')
        cmds[port(dev, 'pfc')] = (0, PFC, '')
    return cmds


@pytest.fixture
def host(tmp_path, monkeypatch):
    """The host files host_info reads, in tmp_path, filled with real samples (huge pages set)."""
    monkeypatch.setattr(_hccn_tool, 'BUSY_RETRY_DELAY', 0)
    return fake_host_files(tmp_path, monkeypatch, MEMINFO_HUGE)


def run(run_module, args=None, cmds=None, **kwargs):
    return run_module(health_info, args or {}, commands() if cmds is None else cmds, bin_paths={'lspci': LSPCI}, **kwargs)


def test_one_run_reads_every_part_with_one_call_per_query_and_device(run_module, host):
    res = run(run_module)
    assert not res.failed, res
    result = res.result
    assert result['changed'] is False and result['failed_parts'] == []
    assert result['npu']['count'] == 8 and result['ports']['count'] == 8
    # no NPU shows single-bit ECC errors (the real sample has none): none is read again
    assert result['npu_again']['count'] == 0 and 'none was read again' in result['npu_again']['msg']
    assert result['numa']['npu']['0']['numa_node'] == 6
    assert result['host_info']['memory']['hugepages_total'] == 64
    calls = [tuple(call) for call in res.calls]
    # every row of the table is OK: no per-device health view; temperature and power come from the table
    assert not [call for call in calls if call[:4] == (NPU_SMI, 'info', '-t', 'health')]
    assert not [call for call in calls if call[:4] in ((NPU_SMI, 'info', '-t', 'temp'), (NPU_SMI, 'info', '-t', 'power'))]
    for dev in range(8):
        assert calls.count(view('board', dev)) == 1
        assert calls.count(view('ecc', dev)) == 1
        for query in PORT_QUERIES:
            assert calls.count(port(dev, query)) == 1
    # the table and the topology once: the NUMA part and the second ECC read reuse the npu part's readings
    assert calls.count((NPU_SMI, 'info')) == 1
    assert calls.count((NPU_SMI, 'info', '-t', 'topo')) == 1
    assert len(calls) == 1 + 1 + 8 * 2 + 8 * 5 + 2 + 1   # 61: table, topo, board+ecc, ports, numactl+lscpu, lspci
    assert result['numa']['errors'] == []
    dev0 = result['npu']['devices']['0']
    assert dev0['info']['health'] == 'OK' and 'health' not in dev0 and 'temp' not in dev0
    assert result['ports']['devices']['0']['link'] == 'UP'
    assert result['ports']['devices']['0']['pfc_priorities'] == [4]
    assert res.warnings == []


def ecc_with_single_bit_errors(count):
    """The real HBM-only ECC sample with its current single-bit count set to ``count`` (the field as printed)."""
    line = 'HBM Single Bit Error Count               : 0'
    assert line in ECC
    return ECC.replace(line, line[:-1] + str(count))


def test_ecc_again_reads_only_the_npus_with_single_bit_errors_and_sees_them_grow(run_module, host):
    cmds = commands()
    cmds[view('ecc', 5)] = [(0, ecc_with_single_bit_errors(3), ''), (0, ecc_with_single_bit_errors(7), '')]
    res = run(run_module, {}, cmds)
    assert not res.failed, res
    calls = [tuple(call) for call in res.calls]
    assert [dev for dev in range(8) if calls.count(view('ecc', dev)) == 2] == [5]
    assert [dev for dev in range(8) if calls.count(view('ecc', dev)) == 1] == [0, 1, 2, 3, 4, 6, 7]
    # the second read comes after every other part, and the table is not read again
    last_port = max(i for i, call in enumerate(calls) if call[0] == HCCN)
    assert [i for i, call in enumerate(calls) if call == view('ecc', 5)][1] > last_port
    assert calls.count((NPU_SMI, 'info')) == 1
    again = res.result['npu_again']
    assert again['count'] == 1 and list(again['devices']) == ['5']
    found = health_findings({'host': 'node07', 'npu': res.result['npu'], 'npu_again': again}, {'npus_per_node': 8})
    assert [(f['check'], f['device'], f['msg']) for f in found] == [
        ('ecc_single_bit_growing', 5, 'node07 NPU 5: single-bit ECC errors grew from 3 to 7 between two reads')]


def test_ecc_again_scope_all_reads_every_npu_again(run_module, host):
    res = run(run_module, {'ecc_again_scope': 'all', 'ports': False, 'host': False})
    assert not res.failed, res
    calls = [tuple(call) for call in res.calls]
    assert [calls.count(view('ecc', dev)) for dev in range(8)] == [2] * 8
    assert res.result['npu_again']['count'] == 8 and calls.count((NPU_SMI, 'info')) == 1


def test_ecc_again_keeps_to_the_requested_devices(run_module, host):
    cmds = commands()
    for dev in (2, 6):
        cmds[view('ecc', dev)] = (0, ecc_with_single_bit_errors(1), '')
    res = run(run_module, {'devices': [0, 1, 2, 3], 'ports': False, 'host': False}, cmds)
    assert not res.failed, res
    calls = [tuple(call) for call in res.calls]
    assert calls.count(view('ecc', 2)) == 2 and view('ecc', 6) not in calls
    assert list(res.result['npu_again']['devices']) == ['2']


def test_the_numa_part_reads_the_topology_itself_when_the_npu_part_did_not(run_module, host):
    res = run(run_module, {'npu_subset': ['board', 'ecc']})
    assert not res.failed, res
    calls = [tuple(call) for call in res.calls]
    assert calls.count((NPU_SMI, 'info', '-t', 'topo')) == 1 and calls.count((NPU_SMI, 'info')) == 1
    assert res.result['numa']['npu']['0']['numa_node'] == 6 and 'topo' not in res.result['npu']['devices']['0']


def test_health_view_is_read_for_every_npu_the_table_does_not_show_as_ok(run_module, host):
    cmds = commands(table=INFO_910A_WARNING, devices=range(4))
    for dev in range(4):
        cmds[view('health', dev)] = (0, HEALTH_ALARM, '')
    res = run(run_module, {'host': False}, cmds)
    assert not res.failed, res
    calls = [tuple(call) for call in res.calls]
    assert [dev for dev in range(4) if view('health', dev) in calls] == [0, 1, 2, 3]
    assert res.result['npu']['devices']['2']['health']['error_codes'] == ['A4025021', '8C03A000', '8C084E00']
    # and the health check names the error codes
    found = health_findings({'host': 'node07', 'npu': res.result['npu'], 'npu_again': res.result['npu_again']},
                            {'npus_per_node': 4})
    texts = [f['msg'] for f in found if f['check'] == 'health']
    assert len(texts) == 4
    assert 'node07 NPU 2: health is Alarm (error codes A4025021, 8C03A000, 8C084E00), expected OK' in texts


def test_health_view_all_reads_it_for_every_npu(run_module, host):
    cmds = commands()
    for dev in range(8):
        cmds[view('health', dev)] = (0, HEALTH_ALARM, '')
    res = run(run_module, {'health_view': 'all', 'host': False, 'ports': False}, cmds)
    assert not res.failed, res
    assert sum(1 for call in res.calls if tuple(call)[:4] == (NPU_SMI, 'info', '-t', 'health')) == 8
    assert res.result['npu']['summary']['unhealthy'] == list(range(8))


def test_a_part_that_fails_is_data_and_the_other_parts_are_read(run_module, host):
    cmds = commands()
    cmds[port(2, 'link')] = PERMISSION
    res = run(run_module, {}, cmds)
    assert not res.failed, res
    result = res.result
    assert result['failed_parts'] == ['ports']
    ports = result['ports']
    assert ports['failed'] is True and 'devices' not in ports
    assert ports['msg'].startswith('NPU 2 on node-07: %s -i 2 -link -g failed (rc=12): permission denied' % HCCN)
    assert ports['rc'] == 12 and ports['cmd'] == '%s -i 2 -link -g' % HCCN
    assert result['npu']['count'] == 8 and result['numa']['npu']['7']['numa_node'] == 2 and result['npu_again']['count'] == 0
    # the health check turns it into one finding for the node, with the tool's words
    found = health_findings({'host': 'node07', 'ports': ports, 'npu': result['npu'], 'npu_again': result['npu_again']},
                            {'npus_per_node': 8})
    assert [f['check'] for f in found] == ['ports']
    assert 'hccn_info (hccn_tool) could not read the node' in found[0]['msg'] and 'permission denied' in found[0]['msg']


def test_without_npu_smi_the_npu_parts_fail_and_the_ports_use_the_fallback_devices(run_module, host):
    res = run_module(health_info, {'fallback_devices': list(range(8))}, commands(), bin_paths={'lspci': LSPCI, 'npu-smi': None})
    assert not res.failed, res
    result = res.result
    assert result['failed_parts'] == ['npu', 'npu_again']
    assert 'npu-smi not found' in result['npu']['msg'] and HOST in result['npu']['msg']
    assert result['ports']['count'] == 8
    assert result['numa']['errors'][0]['what'] == 'topo'   # the host part is read without the NPU affinity


def test_parts_switched_off_are_null_and_nothing_runs(run_module, host):
    res = run(run_module, {'npu': False, 'ports': False, 'host': False}, {})
    assert not res.failed, res
    assert res.calls == []
    assert [res.result[key] for key in ('npu', 'npu_again', 'ports', 'numa', 'host_info')] == [None] * 5


def test_ecc_again_off_reads_ecc_once(run_module, host):
    res = run(run_module, {'ecc_again': False, 'ports': False, 'host': False})
    assert not res.failed, res
    assert res.result['npu_again'] is None
    assert sum(1 for call in res.calls if tuple(call) == view('ecc', 3)) == 1


def test_check_mode_reads_the_same(run_module, host):
    normal = run(run_module)
    checked = run(run_module, check_mode=True)
    assert not checked.failed and checked.result['changed'] is False
    assert sorted(map(tuple, checked.calls)) == sorted(map(tuple, normal.calls))


@pytest.mark.parametrize('args, words', [
    ({'pci_vendor': 'zz'}, 'health_info: pci_vendor must be four hex digits (got zz); Huawei is 19e5.'),
    ({'pci_vendor': '19e55'}, 'pci_vendor must be four hex digits (got 19e55)'),
    ({'port_queries': ['link', 'speed']}, 'port_queries'),
    ({'npu_subset': ['board', 'fan']}, 'npu_subset'),
    ({'health_view': 'some'}, 'health_view'),
    ({'workers': 0}, 'health_info: workers'),
    ({'timeout': -1}, 'health_info: timeout'),
    ({'devices': ['one']}, 'devices'),
    ({'npu': 'maybe'}, 'npu'),
    ({'unknown': 1}, 'unknown'),
])
def test_bad_input_fails_before_any_call(run_module, host, args, words):
    res = run(run_module, args)
    assert res.failed
    assert words in res.result['msg']
    assert res.calls == []


def test_env_files_gives_the_variables_a_file_sets_without_running_it(run_module, host, tmp_path):
    """env_files: stage 5's file in the shape it writes (export NAME=value), read in the same module run."""
    env = tmp_path / 'npuops-hccl.sh'
    env.write_text('# Managed by npuops.ascend (stage 5, hccl_env)\n'
                   'export HCCL_RDMA_SL=4\nexport HCCL_RDMA_TC=132\n'
                   "export HCCL_SOCKET_IFNAME='enp189s0f0'\nHCCL_CONNECT_TIMEOUT=\"1200\"\n"
                   '  export HCCL_RDMA_SL=3  # set again: the later line wins, as in sh\n'
                   'echo HCCL_RDMA_TC=0 is not an assignment of this file\n')
    unreadable = tmp_path / 'locked.sh'
    unreadable.write_text('export HCCL_RDMA_SL=4\n')
    unreadable.chmod(0)
    missing = str(tmp_path / 'absent.sh')
    res = run(run_module, {'npu': False, 'ports': False, 'host': False, 'env_files': [str(env), missing, str(unreadable)]}, {})
    assert not res.failed, res
    assert res.calls == []
    files = res.result['env_files']
    assert files[str(env)] == {'exists': True, 'variables': {
        'HCCL_RDMA_SL': '3', 'HCCL_RDMA_TC': '132', 'HCCL_SOCKET_IFNAME': 'enp189s0f0', 'HCCL_CONNECT_TIMEOUT': '1200'}}
    assert files[missing] == {'exists': False, 'variables': {}}
    if os.geteuid() != 0:  # root reads a file of mode 0 anyway
        assert files[str(unreadable)]['error'].startswith('cannot read %s' % unreadable)


def test_env_files_refuses_a_relative_path(run_module, host):
    res = run(run_module, {'env_files': ['profile.d/npuops-hccl.sh']}, {})
    assert res.failed
    assert 'env_files must be absolute paths (got profile.d/npuops-hccl.sh)' in res.result['msg']
    assert res.calls == []
