"""hccn_info with a scripted run_command fed with real hccn_tool captures."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.modules import hccn_info
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import HCCN, HOST, NPU_SMI, TIMEOUT, capture

LIST = capture('npu-smi_info_-l.txt', 6, 31)                    # 8 NPUs
LINK_UP = capture('hccn_tool_-link_-g.txt', 6)
LINK_DOWN = capture('hccn_tool_-link_-g.txt', 10)
GATEWAY = [capture('hccn_tool_-gateway_-g.txt', 6 + dev) for dev in range(8)]
NET_HEALTH = capture('hccn_tool_-net_health_-g.txt', 15)        # Success
TLS = capture('hccn_tool_-tls_-g.txt', 10, 22)                  # full output, older format
PFC = capture('hccn_tool_-pfc_-g.txt', 7, 9)                    # priority 4 enabled
OPTICAL = capture('hccn_tool_-optical_-g.txt', 7, 50)
STAT = capture('hccn_tool_-stat_-g.txt', 7, 9)
NETDETECT = capture('hccn_tool_-netdetect_-g.txt', 7)
IP_WITH_PROMPT = capture('hccn_tool_-ip_-g.txt', 90, 92)        # '$ hccn_tool -i 3 -ip -g' + the two lines
DEVICE_USED = capture('npu-smi_errors.txt', 13)

# No public capture of these exists (see hccn_tool_-mtu_-g.txt, hccn_tool_-dscp_to_tc_-g.txt): the text follows
# the printf formats of the driver source quoted there, 'mtu:%u' and '%4s%8s' / '%4d%8u'.
MTU = 'mtu:9000\n'
DSCP = 'dscp      tc\n' + ''.join('%4d%8u\n' % (dscp, 3 if dscp == 46 else 0) for dscp in range(64))

# stderr texts and exit codes as listed in hccn_tool_set_and_errors.txt (errors go to stderr, exit = code & 0xFF)
NO_IP = (13, '', 'Get ipconf failed, because no ip was preset there!\n')
NO_GATEWAY = (2, '', 'Get gateway failed, because no gateway was preset there!\n')
LINK_IS_DOWN = (22, '', 'Execute failed: Link status is down.\n')
INVALID_DEVICE = (4, '', 'Get invalid device id.\n')
PERMISSION = (12, '', 'permission denied: pls check this cmd run permission.\n')
NO_OPTICAL = (20, 'Optical module is not present.\n', '')

DEFAULT = ['link', 'ip', 'gateway', 'net_health', 'tls', 'pfc', 'dscp_to_tc', 'mtu']


def ip(dev):
    return capture('hccn_tool_-ip_-g.txt', 7 + 4 * dev, 8 + 4 * dev)


def argv(dev, query):
    return (HCCN, '-i', str(dev), '-' + query, '-g')


def replies(dev):
    return {
        'link': (0, LINK_UP, ''), 'ip': (0, ip(dev), ''), 'gateway': (0, GATEWAY[dev], ''),
        'net_health': (0, NET_HEALTH, ''), 'tls': (0, TLS, ''), 'pfc': (0, PFC, ''),
        'dscp_to_tc': (0, DSCP, ''), 'mtu': (0, MTU, ''), 'optical': (0, OPTICAL, ''), 'stat': (0, STAT, ''),
        'netdetect': (0, NETDETECT, ''),
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
    assert res.calls == [[NPU_SMI, 'info', '-l']] + [list(argv(dev, query)) for dev in range(8) for query in DEFAULT]
    assert res.warnings == []


def test_result_shape(run_module):
    res = run_module(hccn_info, {}, commands())
    result = res.result
    assert result['changed'] is False
    assert result['errors'] == []
    assert sorted(result['devices']) == [str(dev) for dev in range(8)]
    dev7 = result['devices']['7']
    assert dev7['link'] == 'UP'
    assert dev7['address'] == '10.10.0.17'
    assert dev7['netmask'] == '255.255.255.0'
    assert dev7['gateway'] == '11.12.165.1'
    assert dev7['net_health'] == 'Success'
    assert dev7['mtu'] == 9000
    assert dev7['pfc'] == {'priorities': [4], 'bitmap': '0,0,0,0,1,0,0,0'}
    assert dev7['dscp_to_tc']['map'][46] == 3
    assert dev7['tls']['enabled'] is False
    assert set(dev7) == {'link', 'address', 'netmask', 'gateway', 'net_health', 'tls', 'pfc', 'dscp_to_tc', 'mtu'}


def test_all_device_queries_run_concurrently(run_module):
    res = run_module(hccn_info, {'queries': ['link']}, commands(queries=['link']), delay=0.2)
    assert not res.failed, res
    # 1 discovery call + 8 link calls of 0.2 s: 1.8 s one after the other, about 0.4 s in parallel
    assert res.max_in_flight == 8
    assert res.elapsed < 1.0


def test_workers_bound_concurrency(run_module):
    res = run_module(hccn_info, {'queries': ['link', 'pfc'], 'workers': 4}, commands(queries=['link', 'pfc']), delay=0.05)
    assert res.max_in_flight == 4


def test_devices_option_skips_discovery(run_module):
    res = run_module(hccn_info, {'devices': [2, 5], 'queries': ['link', 'ip'], 'workers': 1},
                     commands(devices=[2, 5], queries=['link', 'ip'], discover=False))
    assert res.calls == [list(argv(2, 'link')), list(argv(2, 'ip')), list(argv(5, 'link')), list(argv(5, 'ip'))]
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
    assert res.result['devices']['3'] == {'link': 'DOWN', 'pfc': None}
    assert res.result['devices']['0']['pfc']['priorities'] == [4]
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


def test_invalid_device_id_fails_clearly(run_module):
    cmds = commands(devices=[0], queries=['link'], discover=False, d9_link=INVALID_DEVICE)
    res = run_module(hccn_info, {'devices': [0, 9], 'queries': ['link']}, cmds)
    assert res.failed
    assert res.result['msg'] == (
        'NPU 9 on node-07: /usr/local/Ascend/driver/tools/hccn_tool -i 9 -link -g failed (rc=4): Get invalid device id. '
        'The device id does not exist on this host: compare the devices option with `npu-smi info -l`.')
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


def test_no_ip_text_on_another_query_is_not_data(run_module):
    # 'no ip was preset' only means "not configured" for the ip query itself
    cmds = commands(devices=[0], queries=['gateway'], discover=False, d0_gateway=NO_IP)
    res = run_module(hccn_info, {'devices': [0], 'queries': ['gateway']}, cmds)
    assert res.failed


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
    assert res.calls == [list(argv(0, 'link')), list(argv(1, 'link'))]


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


def test_check_mode_reads_the_same_and_changes_nothing(run_module):
    normal = run_module(hccn_info, {'workers': 1}, commands())
    checked = run_module(hccn_info, {'workers': 1}, commands(), check_mode=True)
    assert checked.calls == normal.calls
    assert checked.result == normal.result
    assert checked.result['changed'] is False


def test_invalid_query_rejected(run_module):
    res = run_module(hccn_info, {'queries': ['route']}, {})
    assert res.failed
    assert 'queries' in res.result['msg']
    assert res.calls == []


def test_generic_failure_is_data_only_for_netdetect(run_module):
    failure = (1, '', 'Command execute failed!\n')   # hccn_tool_set_and_errors.txt: 0x4001, exit 1
    cmds = commands(devices=[0], queries=['netdetect'], discover=False, d0_netdetect=failure)
    res = run_module(hccn_info, {'devices': [0], 'queries': ['netdetect']}, cmds)
    assert not res.failed, res
    assert res.result['devices']['0'] == {'netdetect': None}
    assert res.result['errors'][0]['query'] == 'netdetect'
    cmds = commands(devices=[0], queries=['link'], discover=False, d0_link=failure)
    assert run_module(hccn_info, {'devices': [0], 'queries': ['link']}, cmds).failed
