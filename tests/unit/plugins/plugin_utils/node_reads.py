"""Module results made by run_module from real samples of the fixture tree, for the tests of the stage findings.

The fixtures (``host_read``, ``node``) are found by pytest when a test module binds them to a name of its own
(``node = node_reads.node``), as the conftest of this folder does with ``run_module``.
"""

from __future__ import annotations

import os
import resource

import pytest

from ansible_collections.npuops.ascend.plugins.modules import hccn_info, host_info, npu_info, numa_info
from ansible_collections.npuops.ascend.plugins.module_utils._domain import host_info as _host_info
from ansible_collections.npuops.ascend.tests.unit.plugins.modules.conftest import HCCN, HOST, LSCPU, NPU_SMI, NUMACTL, sample

# ---- real samples --------------------------------------------------------------------------------------------------

INFO_IDLE = sample('npu_smi/info/vllm198_910b3_23.0.7_idle')       # 8 x 910B3 OK, 54-59 C, driver 23.0.7
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
OPTICAL = sample('hccn_tool/optical/mc_910a_qsfp_dev0')           # 4 lanes, 'not present', Rx lane 1 0.0054 mW
STAT = sample('hccn_tool/stat/mc_910a_trimmed')                       # roce_rx_err_pkt_num 0, roce_tx_err_pkt_num 0

NUMACTL_8 = sample('numa/numactl/atlas800t_a2_8node')                # 8 nodes x 24 CPUs, 0-191
NUMACTL_4 = sample('numa/numactl/lkml_kunpeng920_2s_4node')          # 4 nodes x 24 CPUs, 0-95
LSCPU_HOST = sample('numa/lscpu/blog_atlas800i_a2_new_layout')

MEMINFO_64_PAGES = sample('host/meminfo/aarch64_64k_grep_huge_64_pages')
MEMINFO_NO_PAGES = sample('host/meminfo/aarch64_64k_full_4_18')
OS_RELEASE = sample('host/os_release/openeuler_2203_lts_sp1')
THP = sample('host/thp/netcore_enabled_never')
LSPCI_8 = sample('host/lspci/atlas_a2_kunpeng_full')                # plain lspci of an 8 x d802 node
LSPCI_1 = sample('host/lspci/mock_910c_n')

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
    replies = {'link': LINK_UP, 'net_health': NET_OK, 'tls': TLS_OFF, 'pfc': PFC, 'optical': OPTICAL, 'stat': STAT}
    cmds = {}
    for dev in devices:
        for query in queries:
            if query == 'ip':
                text = sample((ip or {}).get(dev, 'hccn_tool/ip/mc_worker0_dev%d' % dev))
            elif query == 'link_stat':
                text = sample('hccn_tool/link_stat/mc_worker0_dev%d' % dev)   # the 8 ports of one real node
            else:
                text = replies.get(query)   # a query without a sample here needs its reply in ``changed``
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
    """The findings of one check."""
    return [f for f in found if f['check'] == check]
