"""npu_info with a scripted run_command fed with real npu-smi captures."""

from __future__ import annotations

import pytest

from ansible_collections.npuops.ascend.plugins.modules import npu_info
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import HOST, NPU_SMI, TIMEOUT, sample

# Real captures (see tests/fixtures/captures/INDEX.md for their sources).
INFO_BUSY = sample('npu_smi/info/vllm5111_910b2_25.2.0_busy')        # 25.2.0, 8 x 910B2, one process per NPU
INFO_IDLE = sample('npu_smi/info/vllm198_910b3_23.0.7_idle')          # 23.0.7, 8 x 910B3, idle
INFO_NO_ROWS = ''.join(INFO_IDLE.splitlines(True)[:6])       # title and header only
LIST = sample('npu_smi/list/blog_910b4_25.0.rc1.1')            # Total Count 8
TOPO = sample('npu_smi/topo/swift_910b3_24.1.rc1')
MAPPING = sample('npu_smi/mapping/blog_910b4_with_mcu')
BOARD = sample('npu_smi/board/tg_910b_card_25.5.1')     # 910B, driver 25.5.1, firmware 7.8.0.6.201
HEALTH_OK = sample('npu_smi/health/mc_910a_ok')
HEALTH_ALARM = sample('npu_smi/health/mc_910a_alarm_three_codes')
HEALTH_WITH_PROMPT = '/usr/local/bin/npu-smi info -i 0 -c 0 -t health\n' + HEALTH_OK  # the collector's command line is not npu-smi output
USAGES = sample('npu_smi/usages/tg_910b_25.5.1')
TEMP = sample('npu_smi/temp/tg_910b_with_mcu')
POWER = sample('npu_smi/power/tg_910b')
ECC = sample('npu_smi/ecc/drv950_doc_hbm_only')
PCIE_ERR = sample('npu_smi/pcie_err/drv950_zh_doc')
MEMORY = sample('npu_smi/memory/skill_validated_65536')
INVALID_CARD = sample('npu_smi/errors/mc_910a_invalid_card')      # 'Invalid card id.' ... printed on stdout
DEVICE_USED = sample('npu_smi/errors/device_used')     # 'dcmi model initialized failed, because the device is used. ret is -8020'

COMMON = sample('npu_smi/common/gpustack_test')   # 1000 of 1000 MHz
VIEW_OUTPUT = {'board': BOARD, 'health': HEALTH_OK, 'usages': USAGES, 'temp': TEMP, 'power': POWER,
               'ecc': ECC, 'pcie-err': PCIE_ERR, 'memory': MEMORY, 'common': COMMON}


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
    assert result['processes'][0] == {'npu': 0, 'chip': 0, 'pid': 16143, 'name': 'VLLMWorker_DP', 'memory_mb': 43095, 'container_pid': None}
    product = result['summary'].pop('product')
    assert result['summary'] == {
        'all_healthy': True, 'unhealthy': [], 'busy': list(range(8)),
        'driver_version': '25.5.1', 'firmware_version': '7.8.0.6.201',
    }
    assert (product['family'], product['npus'], product['chips'], product['roce_ports']) == ('A2', 8, 8, True)
    assert 'dies' not in dev0


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
    views = ('board', 'common', 'ecc', 'health', 'memory', 'pcie-err', 'power', 'temp', 'usages')
    res = run_module(npu_info, {'gather_subset': ['all'], 'devices': [0, 1], 'workers': 1},
                     commands(views=views, devices=(0, 1), mapping=True))
    assert not res.failed, res
    assert res.calls == [list(info()), [NPU_SMI, 'info', '-m'], [NPU_SMI, 'info', '-t', 'topo']] + [
        list(view(name, dev)) for dev in (0, 1) for name in views]
    dev1 = res.result['devices']['1']
    assert set(dev1) == {'info', 'board', 'common', 'ecc', 'health', 'memory', 'pcie_err', 'power', 'temp', 'usages', 'topo',
                         'mapping'}
    assert dev1['common']['chips'][0]['aicore_cur_freq_mhz'] == 1000
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
        'The NPU id does not exist on this host: compare the requested devices with `npu-smi info -l`.')
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


@pytest.mark.parametrize('args, needle', [({'workers': 0}, 'workers must be 1 or more'), ({'timeout': -1}, 'timeout must be 0 or more')])
def test_invalid_numbers(run_module, args, needle):
    res = run_module(npu_info, args, {})
    assert res.failed
    assert res.result['msg'].startswith('npu_info: ' + needle)
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
