"""Samples the tests of plugins/plugin_utils/roce/ share: NPU ports that hold the lossless intent (an hccn_info
result of them, one port changed), the intent and the address plan, and parser outputs of the fixture tree."""

from __future__ import annotations

import copy
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
PARSED = os.path.join(HERE, '..', '..', 'fixtures', 'parsers', 'hccn_tool')


def parsed(query, name):
    """The parser output of a sample of the fixture tree (hccn_tool -i N -<query> -g)."""
    with open(os.path.join(PARSED, query, name + '.json'), encoding='utf-8') as handle:
        return json.load(handle)


PFC_STAT = parsed('pfc_stat', 'derived_prio4_activity')   # tx_pfc4 12.5 ms, 2 warnings; rx_pfc4 3.25 ms
LINK_STAT = parsed('link_stat', 'mc_worker0_dev0')          # 2 DOWN records, 2 UP records
STAT = parsed('stat', 'mc_910a_trimmed')                    # roce_rx_err_pkt_num 0, roce_tx_err_pkt_num 0

H = 'node01'
MASK = '255.255.255.0'
INTENT = {'lossless_priority': 4, 'lossless_dscp': 33, 'lossless_tc': 3, 'dscp_to_tc': None, 'mtu': 9000,
          'hccl_rdma_sl': None, 'hccl_rdma_tc': None}
PLAN = [{'device': d, 'address': '10.20.%d.11' % d, 'netmask': MASK} for d in range(8)]
GOOD = {'link': 'UP', 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': [{'dscp': 33, 'tc': 3}]}


def port(**changes):
    """One port of an hccn_info result that holds the intent, with ``changes``."""
    entry = copy.deepcopy(GOOD)
    entry.update(changes)
    return entry


def info(ports=None, errors=None, **by_device):
    """An hccn_info result: 8 good ports, the ones given as npu<N>=entry replaced."""
    devices = dict((str(d), port()) for d in range(8)) if ports is None else dict((str(d), e) for d, e in ports.items())
    for key, entry in by_device.items():
        devices[key[3:]] = entry
    return {'changed': False, 'devices': devices, 'errors': errors or []}


def only(found):
    """(device, check, severity, msg) of every finding."""
    return [(f['device'], f['check'], f['severity'], f['msg']) for f in found]


def dscp(tc):
    """The DSCP map of a port that maps DSCP 33 to ``tc``."""
    return [{'dscp': 33, 'tc': tc}]


# the result of a one-pass change (hccn_config) that changed NPU 0, 1 and 3 and failed on NPU 3
ONE_PASS = {
    'changed': True,
    'changed_devices': [0, 1, 3],
    'failed_devices': [3],
    'before': [{'device': 0, 'mtu': 1500, 'pfc_priorities': [], 'dscp_to_tc': dscp(2)},
               {'device': 1, 'mtu': 9000, 'pfc_priorities': [], 'dscp_to_tc': dscp(3)},
               {'device': 2, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': dscp(3)},
               {'device': 3, 'mtu': 1500, 'pfc_priorities': [], 'dscp_to_tc': dscp(2)}],
    # NPU 3 failed: its after holds only its id
    'after': [{'device': 0, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': dscp(3)},
              {'device': 1, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': dscp(3)},
              {'device': 2, 'mtu': 9000, 'pfc_priorities': [4], 'dscp_to_tc': dscp(3)},
              {'device': 3}],
}
