"""npu_info with a scripted run_command fed with real npu-smi captures."""

from __future__ import annotations

import pytest

from ansible_collections.npuops.ascend.plugins.modules import npu_info
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import HOST, NPU_SMI, TIMEOUT, capture

# Real captures (see tests/fixtures/captures/INDEX.md for their sources).
INFO_BUSY = capture('npu-smi_info.txt', 63, 111)        # 25.2.0, 8 x 910B2, one process per NPU
INFO_IDLE = capture('npu-smi_info.txt', 9, 57)          # 23.0.7, 8 x 910B3, idle
INFO_NO_ROWS = capture('npu-smi_info.txt', 9, 14)       # title and header only
LIST = capture('npu-smi_info_-l.txt', 6, 31)            # Total Count 8
TOPO = capture('npu-smi_info_-t_topo.txt', 7, 25)
MAPPING = capture('npu-smi_info_-m.txt', 6, 22)
BOARD = capture('npu-smi_info_-t_board.txt', 6, 24)     # 910B, driver 25.5.1, firmware 7.8.0.6.201
HEALTH_OK = capture('npu-smi_info_-t_health.txt', 7, 9)
HEALTH_ALARM = capture('npu-smi_info_-t_health.txt', 14, 20)
HEALTH_WITH_PROMPT = capture('npu-smi_info_-t_health.txt', 6, 9)  # the collector's command line is not npu-smi output
USAGES = capture('npu-smi_info_-t_usages.txt', 6, 23)
TEMP = capture('npu-smi_info_-t_temp.txt', 6, 14)
POWER = capture('npu-smi_info_-t_power.txt', 6, 11)
ECC = capture('extra_npu-smi_info_-t_ecc.txt', 8, 16)
PCIE_ERR = capture('extra_npu-smi_info_-t_pcie-err.txt', 8, 13)
MEMORY = capture('extra_npu-smi_info_-t_memory.txt', 7, 12)
INVALID_CARD = capture('npu-smi_errors.txt', 7, 9)      # 'Invalid card id.' ... printed on stdout
DEVICE_USED = capture('npu-smi_errors.txt', 13, 13)     # 'dcmi model initialized failed, because the device is used. ret is -8020'

VIEW_OUTPUT = {'board': BOARD, 'health': HEALTH_OK, 'usages': USAGES, 'temp': TEMP, 'power': POWER,
               'ecc': ECC, 'pcie-err': PCIE_ERR, 'memory': MEMORY}


def info():
    return (NPU_SMI, 'info')


def view(name, dev):
    return (NPU_SMI, 'info', '-t', name, '-i', str(dev))


def commands(table=INFO_BUSY, views=('board', 'health', 'usages'), devices=range(8), topo=True, mapping=False, **override):
    cmds = {info(): (0, table, '')}
    if topo:
        cmds[(NPU_SMI, 'info', '-t', 'topo')] = (0, TOPO, '')
    if mapping:
        cmds[(NPU_SMI, 'info', '-m')] = (0, MAPPING, '')
    for dev in devices:
        for name in views:
            cmds[view(name, dev)] = (0, VIEW_OUTPUT[name], '')
    cmds.update(override)
    return cmds


def test_default_subsets_exact_argv_sequence(run_module):
    res = run_module(npu_info, {'workers': 1}, commands())
    assert not res.failed, res
    expected = [list(info()), [NPU_SMI, 'info', '-t', 'topo']]
    for dev in range(8):
        expected += [list(view('board', dev)), list(view('health', dev)), list(view('usages', dev))]
    assert res.calls == expected
    assert res.warnings == []


def test_default_result_shape(run_module):
    res = run_module(npu_info, {}, commands())
    result = res.result
    assert result['changed'] is False
    assert result['version'] == '25.2.0'
    assert result['count'] == 8
    assert sorted(result['devices']) == [str(dev) for dev in range(8)]
    dev0 = result['devices']['0']
    assert dev0['info']['name'] == '910B2'
    assert dev0['info']['health'] == 'OK'
    assert dev0['info']['hbm_used_mb'] == 46456
    assert dev0['info']['bus_id'] == '0000:C1:00.0'
    assert dev0['board']['software_version'] == '25.5.1'
    assert dev0['health']['health'] == 'OK'
    assert dev0['usages']['chips'][0]['hbm_capacity_mb'] == 65536
    assert dev0['topo']['cpu_affinity'] == '144-167'
    assert result['devices']['4']['topo']['cpu_affinity'] == '0-23'
    assert 'unparsed' not in dev0['board']
    assert len(result['processes']) == 8
    assert result['processes'][0] == {'npu': 0, 'chip': 0, 'pid': 16143, 'name': 'VLLMWorker_DP', 'memory_mb': 43095}
    assert result['summary'] == {
        'all_healthy': True, 'unhealthy': [], 'busy': list(range(8)),
        'driver_version': '25.5.1', 'firmware_version': '7.8.0.6.201',
    }


def test_per_device_calls_run_concurrently(run_module):
    cmds = commands(table=INFO_IDLE, views=('board',), topo=False)
    res = run_module(npu_info, {'gather_subset': ['board']}, cmds, delay=0.2)
    assert not res.failed, res
    # 1 table call + 8 board calls of 0.2 s each: 1.8 s one after the other, about 0.4 s in parallel
    assert res.max_in_flight == 8
    assert res.elapsed < 1.0
    assert res.result['summary']['busy'] == []
    assert 'processes' not in res.result


def test_workers_bound_concurrency(run_module):
    cmds = commands(table=INFO_IDLE, views=('board',), topo=False)
    res = run_module(npu_info, {'gather_subset': ['board'], 'workers': 3}, cmds, delay=0.05)
    assert res.max_in_flight == 3


def test_gather_all(run_module):
    views = ('board', 'ecc', 'health', 'memory', 'pcie-err', 'power', 'temp', 'usages')
    res = run_module(npu_info, {'gather_subset': ['all'], 'devices': [0, 1], 'workers': 1},
                     commands(views=views, devices=(0, 1), mapping=True))
    assert not res.failed, res
    assert res.calls == [list(info()), [NPU_SMI, 'info', '-m'], [NPU_SMI, 'info', '-t', 'topo']] + [
        list(view(name, dev)) for dev in (0, 1) for name in views]
    dev1 = res.result['devices']['1']
    assert set(dev1) == {'info', 'board', 'ecc', 'health', 'memory', 'pcie_err', 'power', 'temp', 'usages', 'topo', 'mapping'}
    assert dev1['mapping'] == [{'npu': 1, 'chip': 0, 'logic_id': 1, 'name': 'Ascend 910B4'},
                               {'npu': 1, 'chip': 1, 'logic_id': None, 'name': 'Mcu'}]
    assert dev1['pcie_err']['chips'][0]['rx_error_count'] == 991
    assert res.result['count'] == 2
    assert [proc['npu'] for proc in res.result['processes']] == [0, 1]
    assert res.warnings == []


def test_devices_option_limits_calls(run_module):
    res = run_module(npu_info, {'devices': [3], 'gather_subset': ['health'], 'workers': 1},
                     commands(views=('health',), devices=(3,), topo=False))
    assert res.calls == [list(info()), list(view('health', 3))]
    assert list(res.result['devices']) == ['3']
    assert res.result['summary']['busy'] == [3]


def test_unknown_device_fails_before_per_device_calls(run_module):
    res = run_module(npu_info, {'devices': [3, 9]}, commands())
    assert res.failed
    assert res.result['msg'].startswith('NPU 9 on node-07: not listed by npu-smi (found [0, 1, 2, 3, 4, 5, 6, 7])')
    assert 'devices option' in res.result['msg']
    assert res.calls == [list(info()), [NPU_SMI, 'info', '-t', 'topo']]


def test_device_list_falls_back_to_info_l(run_module):
    cmds = commands(table=INFO_NO_ROWS, views=('health',), topo=False)
    cmds[(NPU_SMI, 'info', '-l')] = (0, LIST, '')
    res = run_module(npu_info, {'gather_subset': ['health'], 'workers': 1}, cmds)
    assert not res.failed, res
    assert res.calls[:2] == [list(info()), [NPU_SMI, 'info', '-l']]
    assert res.result['count'] == 8
    # no table row: health unknown, so not healthy
    assert res.result['summary']['all_healthy'] is False


def test_unhealthy_device_in_summary(run_module):
    cmds = commands(table=INFO_IDLE, views=('health',), topo=False)
    cmds[view('health', 2)] = (0, HEALTH_ALARM, '')
    res = run_module(npu_info, {'gather_subset': ['health']}, cmds)
    assert res.result['summary']['all_healthy'] is False
    assert res.result['summary']['unhealthy'] == [2]
    assert res.result['devices']['2']['health']['error_codes'] == ['A4025021', '8C03A000', '8C084E00']
    assert res.result['summary']['driver_version'] == '23.0.7'
    assert res.result['summary']['firmware_version'] is None


def test_failing_device_query_names_host_device_command_and_tool_text(run_module):
    cmds = commands(table=INFO_IDLE, views=('board',), topo=False)
    cmds[view('board', 3)] = (215, INVALID_CARD, '')
    res = run_module(npu_info, {'gather_subset': ['board']}, cmds)
    assert res.failed
    result = res.result
    assert result['msg'] == (
        'NPU 3 on node-07: /usr/local/sbin/npu-smi info -t board -i 3 failed (rc=215): Invalid card id. '
        'Error parameter of -i Usage: npu-smi info <watch|proc|-h|-m|-l|-t type> [Options...]. '
        'The NPU id does not exist on this host: compare the devices option with `npu-smi info -l`.')
    assert result['cmd'] == '/usr/local/sbin/npu-smi info -t board -i 3'
    assert result['rc'] == 215
    assert result['stdout'] == INVALID_CARD
    assert result['stderr'] == ''
    assert 'exception' not in result


def test_failing_table_call(run_module):
    res = run_module(npu_info, {}, {info(): (172, DEVICE_USED, ''), (NPU_SMI, 'info', '-t', 'topo'): (172, DEVICE_USED, '')})
    assert res.failed
    assert res.result['msg'].startswith('node-07: /usr/local/sbin/npu-smi info failed (rc=172): dcmi model initialized failed')
    assert 'Another process or container holds the NPU' in res.result['msg']
    assert res.result['cmd'] == '/usr/local/sbin/npu-smi info'


def test_timeout(run_module):
    cmds = {
        (TIMEOUT, '-k', '5', '12', NPU_SMI, 'info'): (0, INFO_IDLE, ''),
        (TIMEOUT, '-k', '5', '12', NPU_SMI, 'info', '-t', 'health', '-i', '0'): (0, HEALTH_OK, ''),
        (TIMEOUT, '-k', '5', '12', NPU_SMI, 'info', '-t', 'health', '-i', '1'): (124, '', ''),
    }
    res = run_module(npu_info, {'gather_subset': ['health'], 'devices': [0, 1], 'timeout': 12, 'workers': 1}, cmds,
                     bin_paths={'timeout': TIMEOUT})
    assert res.failed
    assert res.result['msg'].startswith('NPU 1 on node-07: /usr/local/sbin/npu-smi info -t health -i 1 timed out after 12 s.')
    assert res.result['cmd'] == '/usr/local/sbin/npu-smi info -t health -i 1'
    assert res.result['rc'] == 124


def test_missing_npu_smi(run_module):
    res = run_module(npu_info, {}, {}, bin_paths={'npu-smi': None})
    assert res.failed
    assert res.result['msg'].startswith(HOST + ': npu-smi not found: looked in /usr/local/Ascend/driver/tools, /usr/local/sbin, '
                                        '/usr/local/bin and PATH. The Ascend driver (npu-smi) may be missing')
    assert res.calls == []


def test_npu_smi_path_option(run_module, tmp_path):
    tool = tmp_path / 'npu-smi'
    tool.write_text('#!/bin/sh\n')
    tool.chmod(0o755)
    res = run_module(npu_info, {'npu_smi_path': str(tool), 'gather_subset': ['processes']},
                     {(str(tool), 'info'): (0, INFO_BUSY, '')})
    assert not res.failed, res
    assert res.calls == [[str(tool), 'info']]


def test_unparsed_output_warns_with_command(run_module):
    cmds = commands(table=INFO_IDLE, views=('health',), devices=(0,), topo=False)
    cmds[view('health', 0)] = (0, HEALTH_WITH_PROMPT, '')
    res = run_module(npu_info, {'gather_subset': ['health'], 'devices': [0]}, cmds)
    assert not res.failed
    assert len(res.warnings) == 1
    warning = res.warnings[0]
    assert '/usr/local/sbin/npu-smi info -t health -i 0 (driver 23.0.7)' in warning
    assert "'/usr/local/bin/npu-smi info -i 0 -c 0 -t health'" in warning
    assert 'please report this with your driver version' in warning
    assert res.result['devices']['0']['health']['health'] == 'OK'


def test_check_mode_reads_the_same_and_changes_nothing(run_module):
    normal = run_module(npu_info, {'workers': 1}, commands())
    checked = run_module(npu_info, {'workers': 1}, commands(), check_mode=True)
    assert checked.calls == normal.calls
    assert checked.result == normal.result
    assert checked.result['changed'] is False


@pytest.mark.parametrize('args', [{'workers': 0}, {'timeout': -1}])
def test_invalid_numbers(run_module, args):
    res = run_module(npu_info, args, {})
    assert res.failed
    assert 'workers >= 1' in res.result['msg']
    assert res.calls == []


def test_invalid_subset_rejected(run_module):
    res = run_module(npu_info, {'gather_subset': ['nonsense']}, {})
    assert res.failed
    assert 'gather_subset' in res.result['msg']


def test_timeout_of_the_table_call_names_the_host(run_module):
    res = run_module(npu_info, {'gather_subset': ['processes']}, {(TIMEOUT, '-k', '5', '30', NPU_SMI, 'info'): (124, '', '')},
                     bin_paths={'timeout': TIMEOUT})
    assert res.failed
    assert res.result['msg'].startswith('node-07: /usr/local/sbin/npu-smi info timed out after 30 s.')
