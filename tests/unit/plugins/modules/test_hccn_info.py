"""hccn_info with a scripted run_command fed with real hccn_tool captures."""

from __future__ import annotations

import threading

from ansible_collections.npuops.ascend.plugins.module_utils._tools import hccn_tool as _hccn_tool
from ansible_collections.npuops.ascend.plugins.module_utils._tools import runner as _runner
from ansible_collections.npuops.ascend.plugins.modules import hccn_info
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import health_findings, HCCN, HOST, NPU_SMI, TIMEOUT, sample


LIST = sample('npu_smi/list/blog_910b4_25.0.rc1.1')                    # 8 NPUs
LINK_UP = sample('hccn_tool/link/mc_doc_up')
LINK_DOWN = sample('hccn_tool/link/mc_code_comment_down')
GATEWAY = [sample('hccn_tool/gateway/ds_910b3_dev%d' % dev) for dev in range(8)]
NET_HEALTH = sample('hccn_tool/net_health/ds_910b3_dev0_success')     # Success
TLS = sample('hccn_tool/tls/cann_doc_old_format_dev0')                # full output, older format
PFC = sample('hccn_tool/pfc/hixl_dev0_prio4')                         # priority 4 enabled
OPTICAL = sample('hccn_tool/optical/mc_910a_qsfp_dev0')
STAT = sample('hccn_tool/stat/mc_910a_trimmed')
NETDETECT = sample('hccn_tool/netdetect/ds_910b3_dev0_address')
LINK_STAT = sample('hccn_tool/link_stat/mc_worker0_dev0')              # 2 link-ups, newest record LINK DOWN
IP_WITH_PROMPT = '$ hccn_tool -i 3 -ip -g\n' + sample('hccn_tool/ip/ac_910b1_dev3')   # as pasted after a shell prompt
DEVICE_USED = sample('npu_smi/errors/device_used')

# No public capture of these exists: the fixture tree holds `derived` cases that follow the printf formats of
# the driver source ('mtu:%u' and '%4s%8s' / '%4d%8u'); DSCP 46 is moved to TC 3 here.
MTU = sample('hccn_tool/mtu/derived_9000')
DSCP = sample('hccn_tool/dscp_to_tc/derived_full_table').replace('  46       2', '  46       3')

# stderr texts and exit codes as listed in hccn_tool_set_and_errors.txt (errors go to stderr, exit = code & 0xFF)
NO_IP = (13, '', 'Get ipconf failed, because no ip was preset there!\n')
NO_GATEWAY = (2, '', 'Get gateway failed, because no gateway was preset there!\n')
LINK_IS_DOWN = (22, '', 'Execute failed: Link status is down.\n')
INVALID_DEVICE = (4, '', 'Get invalid device id.\n')
PERMISSION = (12, '', 'permission denied: pls check this cmd run permission.\n')
NO_OPTICAL = (20, 'Optical module is not present.\n', '')

# the default queries in the order they run on a device (status, then the hccn_config table order)
DEFAULT = ['link', 'net_health', 'ip', 'gateway', 'mtu', 'pfc', 'dscp_to_tc', 'tls']


def ip(dev):
    return sample('hccn_tool/ip/mc_worker0_dev%d' % dev)


def argv(dev, query):
    return (HCCN, '-i', str(dev), '-' + query, '-g')


def replies(dev):
    return {
        'link': (0, LINK_UP, ''), 'ip': (0, ip(dev), ''), 'gateway': (0, GATEWAY[dev], ''),
        'net_health': (0, NET_HEALTH, ''), 'tls': (0, TLS, ''), 'pfc': (0, PFC, ''),
        'dscp_to_tc': (0, DSCP, ''), 'mtu': (0, MTU, ''), 'optical': (0, OPTICAL, ''), 'stat': (0, STAT, ''),
        'netdetect': (0, NETDETECT, ''), 'link_stat': (0, LINK_STAT, ''),
    }


def commands(devices=range(8), queries=tuple(DEFAULT), discover=True, **override):
    cmds = {}
    if discover:
        cmds[(NPU_SMI, 'info', '-l')] = (0, LIST, '')
    for dev in devices:
        for query in queries:
            cmds[argv(dev, query)] = replies(dev)[query]
    for key, value in override.items():
        dev, query = key.split('_', 1)
        cmds[argv(int(dev[1:]), query)] = value
    return cmds


def test_default_queries_exact_argv_sequence(run_module):
    res = run_module(hccn_info, {'workers': 1}, commands())
    assert not res.failed, res
    # the devices are read concurrently: the order of the calls between devices is not fixed
    assert res.calls[0] == [NPU_SMI, 'info', '-l']
    assert sorted(res.calls) == sorted([[NPU_SMI, 'info', '-l']] + [list(argv(dev, query)) for dev in range(8) for query in DEFAULT])
    assert res.warnings == []


def test_result_shape(run_module):
    res = run_module(hccn_info, {}, commands())
    result = res.result
    assert result['changed'] is False
    assert result['errors'] == []
    assert result['count'] == 8
    assert sorted(result['devices']) == [str(dev) for dev in range(8)]
    dev7 = result['devices']['7']
    assert dev7['link'] == 'UP'
    assert dev7['address'] == '10.10.0.17'
    assert dev7['netmask'] == '255.255.255.0'
    assert dev7['gateway'] == '11.12.165.1'
    assert dev7['net_health'] == 'Success'
    assert dev7['mtu'] == 9000
    assert dev7['pfc_priorities'] == [4]
    assert {'dscp': 46, 'tc': 3} in dev7['dscp_to_tc'] and len(dev7['dscp_to_tc']) == 64
    assert dev7['tls'] is False
    assert set(dev7) == {'link', 'address', 'netmask', 'gateway', 'net_health', 'tls', 'pfc_priorities', 'dscp_to_tc', 'mtu'}
    # the same settings as a list in the hccn_config option shape
    config7 = result['config'][7]
    assert config7 == dict(((k, v) for k, v in dev7.items() if k not in ('link', 'net_health')), device=7)
    assert config7['device'] == 7
    # the parsers' own output stays available
    assert result['raw']['7']['pfc'] == {'priorities': [4], 'bitmap': '0,0,0,0,1,0,0,0'}
    assert result['raw']['7']['dscp_to_tc']['map'][46] == 3
    assert result['raw']['7']['tls']['enabled'] is False
    assert set(result['raw']['7']) == set(DEFAULT)


def test_calls_to_one_device_never_overlap(run_module):
    """hccn_tool answers busy to concurrent calls on one device: devices run in parallel, queries one after another."""
    res = run_module(hccn_info, {'devices': [0], 'workers': 8}, commands(devices=[0], discover=False), delay=0.02)
    assert not res.failed, res
    assert res.max_in_flight == 1
    assert len(res.calls) == len(DEFAULT)


def test_busy_answer_is_retried_once(run_module, monkeypatch):
    monkeypatch.setattr(_hccn_tool, 'BUSY_RETRY_DELAY', 0)
    busy = (11, 'hccn_tool is busy, please try again.\n', '')
    cmds = commands(devices=[0], queries=['link'], discover=False, d0_link=[busy, (0, LINK_UP, '')])
    res = run_module(hccn_info, {'devices': [0], 'queries': ['link']}, cmds)
    assert not res.failed, res
    assert res.calls == [list(argv(0, 'link'))] * 2
    assert res.result['devices']['0'] == {'link': 'UP'}


def test_all_device_queries_run_concurrently(run_module):
    # every link call waits until all 8 are running at once: calls made one after the other (or fewer at a time)
    # break the barrier and fail the run. A barrier, not a timing, so a loaded machine cannot fail the test.
    barrier = threading.Barrier(8, timeout=10)

    def delay(argv):
        if '-link' in argv:
            barrier.wait()
        return 0

    res = run_module(hccn_info, {'queries': ['link']}, commands(queries=['link']), delay=delay)
    assert not res.failed, res
    assert res.max_in_flight == 8
    assert not barrier.broken


def test_workers_bound_concurrency(run_module):
    res = run_module(hccn_info, {'queries': ['link', 'pfc'], 'workers': 4}, commands(queries=['link', 'pfc']), delay=0.05)
    assert res.max_in_flight == 4


def test_devices_option_skips_discovery(run_module):
    res = run_module(hccn_info, {'devices': [2, 5], 'queries': ['link', 'ip'], 'workers': 1},
                     commands(devices=[2, 5], queries=['link', 'ip'], discover=False))
    assert sorted(res.calls) == sorted([list(argv(2, 'link')), list(argv(2, 'ip')), list(argv(5, 'link')), list(argv(5, 'ip'))])
    assert res.result['devices']['5']['address'] == '10.10.0.15'


def test_query_order_follows_the_table_not_the_option(run_module):
    res = run_module(hccn_info, {'devices': [0], 'queries': ['pfc', 'link'], 'workers': 1},
                     commands(devices=[0], queries=['link', 'pfc'], discover=False))
    assert res.calls == [list(argv(0, 'link')), list(argv(0, 'pfc'))]


def test_not_configured_ip_and_gateway_are_null_not_errors(run_module):
    cmds = commands(devices=[0, 1], queries=['ip', 'gateway'], discover=False, d1_ip=NO_IP, d1_gateway=NO_GATEWAY)
    res = run_module(hccn_info, {'devices': [0, 1], 'queries': ['ip', 'gateway']}, cmds)
    assert not res.failed, res
    assert res.result['devices']['1'] == {'address': None, 'netmask': None, 'gateway': None}
    assert res.result['devices']['0']['address'] == '10.10.0.10'
    assert res.result['errors'] == []
    assert res.warnings == []


def test_link_down_is_recorded_per_query(run_module):
    cmds = commands(devices=[0, 3], queries=['link', 'pfc'], discover=False, d3_link=(0, LINK_DOWN, ''), d3_pfc=LINK_IS_DOWN)
    res = run_module(hccn_info, {'devices': [0, 3], 'queries': ['link', 'pfc']}, cmds)
    assert not res.failed, res
    assert res.result['devices']['3'] == {'link': 'DOWN', 'pfc_priorities': None}
    assert res.result['devices']['0']['pfc_priorities'] == [4]
    assert res.result['config'][1] == {'device': 3, 'pfc_priorities': None}
    assert 'pfc' not in res.result['raw']['3']
    assert res.result['errors'] == [{
        'device': 3, 'query': 'pfc', 'cmd': HCCN + ' -i 3 -pfc -g', 'rc': 22, 'stdout': '',
        'stderr': 'Execute failed: Link status is down.\n',
        'msg': 'NPU 3 on node-07: pfc not read: Execute failed: Link status is down. (rc=22)',
    }]


def test_optical_not_present_and_nested_queries(run_module):
    queries = ['optical', 'stat', 'netdetect']
    cmds = commands(devices=[0, 1], queries=queries, discover=False, d1_optical=NO_OPTICAL)
    res = run_module(hccn_info, {'devices': [0, 1], 'queries': queries}, cmds)
    assert not res.failed, res
    dev0 = res.result['devices']['0']
    assert dev0['optical']['temperature_c'] == 47
    assert dev0['stat'] == {'roce_rx_err_pkt_num': 0, 'roce_tx_err_pkt_num': 0}
    assert dev0['netdetect'] == '11.12.165.1'
    assert res.result['devices']['1']['optical'] is None
    assert [(err['device'], err['query'], err['rc']) for err in res.result['errors']] == [(1, 'optical', 20)]


def test_link_stat_is_nested_with_count_and_records(run_module):
    cmds = commands(devices=[0, 1], queries=['link', 'link_stat'], discover=False, d1_link_stat=LINK_IS_DOWN)
    res = run_module(hccn_info, {'devices': [0, 1], 'queries': ['link_stat', 'link']}, cmds)
    assert not res.failed, res
    assert sorted(res.calls) == sorted(list(argv(dev, query)) for dev in (0, 1) for query in ('link', 'link_stat'))
    stat = res.result['devices']['0']['link_stat']
    assert stat['link_up_count'] == 2
    assert stat['records'][0] == {'time': 'Tue Aug  1 14:44:40 2022', 'status': 'DOWN'}
    assert len(stat['records']) == 4
    assert res.result['devices']['1']['link_stat'] is None
    assert [(err['device'], err['query'], err['rc']) for err in res.result['errors']] == [(1, 'link_stat', 22)]


def test_invalid_device_id_fails_clearly(run_module):
    cmds = commands(devices=[0], queries=['link'], discover=False, d9_link=INVALID_DEVICE)
    res = run_module(hccn_info, {'devices': [0, 9], 'queries': ['link']}, cmds)
    assert res.failed
    assert res.result['msg'] == (
        'NPU 9 on node-07: /usr/local/Ascend/driver/tools/hccn_tool -i 9 -link -g failed (rc=4): Get invalid device id. '
        'The device does not exist on this host: compare the requested devices with `npu-smi info -l`.')
    assert res.result['cmd'] == HCCN + ' -i 9 -link -g'
    assert res.result['rc'] == 4
    assert res.result['stderr'] == 'Get invalid device id.\n'
    assert res.result['stdout'] == ''


def test_unexpected_tool_error_fails_with_hint(run_module):
    cmds = commands(devices=[0], queries=['ip'], discover=False, d0_ip=PERMISSION)
    res = run_module(hccn_info, {'devices': [0], 'queries': ['ip']}, cmds)
    assert res.failed
    assert 'failed (rc=12): permission denied: pls check this cmd run permission.' in res.result['msg']
    assert res.result['msg'].endswith('Run the task as root (become: true).')


def test_timeout(run_module):
    cmds = {(TIMEOUT, '-k', '5', '3') + argv(0, 'link'): (0, LINK_UP, ''),
            (TIMEOUT, '-k', '5', '3') + argv(1, 'link'): (137, '', '')}
    res = run_module(hccn_info, {'devices': [0, 1], 'queries': ['link'], 'timeout': 3}, cmds, bin_paths={'timeout': TIMEOUT})
    assert res.failed
    assert res.result['msg'].startswith('NPU 1 on node-07: ' + HCCN + ' -i 1 -link -g timed out after 3 s.')
    assert res.result['rc'] == 137


def test_missing_hccn_tool(run_module):
    res = run_module(hccn_info, {'devices': [0]}, {}, bin_paths={'hccn_tool': None})
    assert res.failed
    assert res.result['msg'].startswith(HOST + ': hccn_tool not found: looked in /usr/local/Ascend/driver/tools')
    assert 'Ascend driver (hccn_tool) may be missing' in res.result['msg']
    assert res.calls == []


def test_missing_npu_smi_without_devices_fails(run_module):
    res = run_module(hccn_info, {}, {}, bin_paths={'npu-smi': None})
    assert res.failed
    assert 'npu-smi not found' in res.result['msg']
    assert res.result['msg'].endswith('set the devices option, or fallback_devices.')


def test_missing_npu_smi_uses_fallback_devices(run_module):
    cmds = commands(devices=[0, 1], queries=['link'], discover=False)
    res = run_module(hccn_info, {'queries': ['link'], 'fallback_devices': [0, 1], 'workers': 1}, cmds, bin_paths={'npu-smi': None})
    assert not res.failed, res
    assert sorted(res.calls) == [list(argv(0, 'link')), list(argv(1, 'link'))]


def test_failing_discovery_uses_fallback_devices(run_module):
    cmds = commands(devices=[0], queries=['link'], discover=False)
    cmds[(NPU_SMI, 'info', '-l')] = (172, DEVICE_USED, '')
    res = run_module(hccn_info, {'queries': ['link'], 'fallback_devices': [0], 'workers': 1}, cmds)
    assert not res.failed, res
    assert res.calls == [[NPU_SMI, 'info', '-l'], list(argv(0, 'link'))]


def test_failing_discovery_without_fallback(run_module):
    res = run_module(hccn_info, {'queries': ['link']}, {(NPU_SMI, 'info', '-l'): (172, DEVICE_USED, '')})
    assert res.failed
    assert res.result['msg'].startswith('node-07: /usr/local/sbin/npu-smi info -l failed (rc=172): dcmi model initialized failed')
    assert res.result['stdout'] == DEVICE_USED


def test_unparsed_output_warns_with_command(run_module):
    cmds = commands(devices=[3], queries=['ip'], discover=False, d3_ip=(0, IP_WITH_PROMPT, ''))
    res = run_module(hccn_info, {'devices': [3], 'queries': ['ip']}, cmds)
    assert not res.failed
    assert res.result['devices']['3'] == {'address': '29.1.112.213', 'netmask': '255.255.0.0'}
    assert len(res.warnings) == 1
    assert HCCN + ' -i 3 -ip -g' in res.warnings[0]
    assert "'$ hccn_tool -i 3 -ip -g'" in res.warnings[0]
    assert 'please report this with your driver version' in res.warnings[0]


def test_invalid_query_rejected(run_module):
    res = run_module(hccn_info, {'queries': ['route']}, {})
    assert res.failed
    assert 'queries' in res.result['msg']
    assert res.calls == []


def test_generic_failure_fails_every_query_netdetect_included(run_module):
    failure = (1, '', 'Command execute failed!\n')   # hccn_tool_set_and_errors.txt: 0x4001, exit 1
    for query in ('netdetect', 'link'):
        cmds = commands(devices=[0], queries=[query], discover=False, **{'d0_' + query: failure})
        res = run_module(hccn_info, {'devices': [0], 'queries': [query]}, cmds)
        assert res.failed
        assert res.result['msg'] == ('NPU 0 on node-07: %s -i 0 -%s -g failed (rc=1): Command execute failed! %s'
                                     % (HCCN, query, _hccn_tool.DEFAULT_HINT))


def test_unset_netdetect_is_null_not_an_error(run_module):
    # the driver prints the device's netdetect address, 0.0.0.0 when none is set
    unset = (0, NETDETECT.replace('11.12.165.1', '0.0.0.0'), '')
    cmds = commands(devices=[0], queries=['netdetect'], discover=False, d0_netdetect=unset)
    res = run_module(hccn_info, {'devices': [0], 'queries': ['netdetect']}, cmds)
    assert not res.failed, res
    assert res.result['devices']['0'] == {'netdetect': None}
    assert res.result['errors'] == [] and res.warnings == []


def test_query_choices_cover_the_port_attribute_table():
    from ansible_collections.npuops.ascend.plugins.module_utils._domain.port_table import PORTS
    assert set(PORTS.queries) <= set(hccn_info.ALL_QUERIES)
    assert len(hccn_info.ALL_QUERIES) == len(set(hccn_info.ALL_QUERIES))


def test_a_silent_answer_is_asked_again(run_module):
    # rc 0 and nothing printed: seen under load on 32 simulated nodes (an answer that got lost); every GET of hccn_tool
    # prints its value or an error, so the adapter asks once more
    res = run_module(hccn_info, {'devices': [1], 'queries': ['link']},
                     {argv(1, 'link'): [(0, '', ''), (0, LINK_UP, '')]})
    assert not res.failed, res
    assert res.calls == [list(argv(1, 'link'))] * 2
    assert res.result['devices']['1']['link'] == 'UP' and res.result['errors'] == []


def test_a_silent_get_is_asked_again_once_only(run_module, monkeypatch):
    # one layer asks again (the adapter, for a GET): with the runner's own threshold at 0 s a GET that stays silent
    # still runs twice, never four times
    monkeypatch.setattr(_runner, 'SILENT_RETRY_AFTER', 0.0)
    res = run_module(hccn_info, {'devices': [1], 'queries': ['link']}, {argv(1, 'link'): (0, '', '')})
    assert not res.failed, res
    assert res.calls == [list(argv(1, 'link'))] * 2
    assert res.result['devices']['1']['link'] is None and res.result['errors'][0]['device'] == 1


def test_a_query_silent_twice_is_an_error_entry_never_a_value(run_module):
    res = run_module(hccn_info, {'devices': [1], 'queries': ['link', 'ip']},
                     {argv(1, 'link'): (0, '', ''), argv(1, 'ip'): (0, ip(1), '')})
    assert not res.failed, res
    assert res.result['devices']['1']['link'] is None
    assert res.result['devices']['1']['address'] is not None
    [error] = res.result['errors']
    assert (error['device'], error['query'], error['rc']) == (1, 'link', 0)
    assert error['msg'] == ('NPU 1 on %s: link not read: the tool exited 0 without printing anything, twice (rc=0)' % HOST)
    # and the health check says the link could not be read, not "link is None"
    found = health_findings({'host': HOST, 'ports': res.result}, {'npus_per_node': 1})
    assert [f['msg'] for f in found if f['check'] == 'link'] == [
        '%s NPU 1: the link could not be read: %s' % (HOST, error['msg'].split(': ', 1)[1])]


def test_npus_of_two_chips_have_one_port_per_chip_from_the_mapping(run_module):
    """An A3 lists Chip Count 2 per NPU: the ports are the chips' logic ids of `npu-smi info -m`, MCU rows left out."""
    kv = '\t%-30s : %s'
    listing = '\n'.join([kv % ('Total Count', 2), '', kv % ('NPU ID', 0), kv % ('Chip Count', 2), '',
                         kv % ('NPU ID', 1), kv % ('Chip Count', 2), '']) + '\n'
    mapping = sample('npu_smi/mapping/xllm_a3_mock')   # NPU 0 chips 0/1 (logic 0/1), its Mcu (logic -), NPU 1 chip 0 (logic 2)
    cmds = {(NPU_SMI, 'info', '-l'): (0, listing, ''), (NPU_SMI, 'info', '-m'): (0, mapping, '')}
    for dev in (0, 1, 2):
        cmds[argv(dev, 'link')] = (0, sample('hccn_tool/link/mc_doc_up'), '')
    res = run_module(hccn_info, {'queries': ['link']}, cmds)
    assert not res.failed, res
    assert sorted(res.result['devices']) == ['0', '1', '2']
    assert res.calls[:2] == [[NPU_SMI, 'info', '-l'], [NPU_SMI, 'info', '-m']]
