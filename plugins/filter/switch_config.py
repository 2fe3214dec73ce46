# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The switch side of the lossless RoCE plane: switch_neighbours, switch_config, switch_intent_problems.

``switch_neighbours`` turns the LLDP data the NPU ports received (module hccn_info, query lldp) into a map
of leaf switches and their ports. ``switch_config`` renders the PoD's QoS intent for the ports of each switch
in the syntax of its family, and ``switch_intent_problems`` checks the intent itself.

Every rendered line is one that the command references show (see the .yml documentation of each filter
for the sources: Huawei CloudEngine CE6800/CE8800 V300R023C00 command reference and configuration guide,
sonic-buildimage qos_config.j2 and yang models, Cumulus Linux 5.12 QoS and RoCE documentation). What the
references do not show is left at the switch default and said so in a comment (CE, Cumulus) or in the docs
(SONiC, whose JSON patch has no comments).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils._hccl_rules import DSCP_MAX, PRIORITY_MAX, integer, show

# the NPU side: hccn_tool -mtu -s accepts 68 to 9702 on the 910B (as in roce.py)
MTU_MIN = 68
MTU_MAX = 9702
JUMBO_MIN = 4096
ETHERNET_OVERHEAD = 18  # 14 bytes of Ethernet header + 4 bytes of FCS: a CE jumboframe is a frame length
TIME_MAX_MS = 60000

FAMILIES = ('huawei_ce_a', 'huawei_ce_b', 'sonic', 'cumulus')
FAMILY_MODELS = {
    'huawei_ce_a': 'Huawei CloudEngine CE6855/CE6863E/CE6885/CE8855/CE8851-32CQ4BQ',
    'huawei_ce_b': 'Huawei CloudEngine CE6860/CE6866/CE8850/CE8851-32CQ8DQ/CE8851K',
    'sonic': 'community SONiC (config_db, GCU JSON patch)',
    'cumulus': 'NVIDIA Cumulus Linux 5.x (NVUE)',
}
EXTENSIONS = {'huawei_ce_a': 'cfg', 'huawei_ce_b': 'cfg', 'sonic': 'json', 'cumulus': 'nvue.sh'}
ACTIONS = ('drop', 'forward', 'alert')

INTENT_DEFAULTS = {
    'lossless_priority': 4,
    'lossless_dscp': 33,
    'mtu': 9000,
    'ecn_min_bytes': 204800,
    'ecn_max_bytes': 614400,
    'ecn_probability': 5,
    'pfcwd_detect_ms': 200,
    'pfcwd_restore_ms': 200,
    'pfcwd_action': 'drop',
    'pfcwd_poll_ms': 200,
}
INTENT_VARIABLES = {
    'lossless_priority': 'npuops_lossless_priority',
    'lossless_dscp': 'npuops_lossless_dscp',
    'mtu': 'npuops_mtu',
    'ecn_min_bytes': 'npuops_ecn_min_bytes',
    'ecn_max_bytes': 'npuops_ecn_max_bytes',
    'ecn_probability': 'npuops_ecn_probability',
    'pfcwd_detect_ms': 'npuops_pfc_watchdog_detect_ms',
    'pfcwd_restore_ms': 'npuops_pfc_watchdog_restore_ms',
    'pfcwd_action': 'npuops_pfc_watchdog_action',
    'pfcwd_poll_ms': 'npuops_pfc_watchdog_poll_ms',
}
INTENT_KEYS = tuple(INTENT_DEFAULTS)
SWITCH_KEYS = ('family', 'frame_size', 'headroom_mb', 'slot')

# Huawei CE (command reference V300R023C00): ranges per family
CE = {
    'huawei_ce_a': {'priority': (0, 7), 'ecn_low': (320, 34078720), 'ecn_high_max': 34078720, 'fa': True},
    'huawei_ce_b': {'priority': (0, 5), 'ecn_low': (128, 16000000), 'ecn_high_max': 16000000, 'fa': False},
}
CE_FRAME = (1518, 9500)
CE_FRAME_DEFAULT = 9216
CE_INTERVALS = (10, 100, 500, 1000)  # dcb pfc deadlock-detect interval (F-A)
CE_DETECT_UNITS = (1, 15)  # priority P deadlock-detect time T (F-A)
CE_RECOVERY_UNITS = (0, 31)  # priority P deadlock-recovery time R (F-A); 0 = no recovery
CE_B_TIMER = (10, 1500)  # dcb pfc deadlock-detect timer / deadlock-recovery timer (F-B)
CE_HEADROOM_MB = (1, 30)  # qos buffer headroom-pool size: F-A 16 to 30720 KB
CE_PHB = ('be', 'af1', 'af2', 'af3', 'af4', 'ef', 'cs6', 'cs7')  # ip-dscp-inbound: queues 0 to 7
CE_DOMAIN = 'npuops'
CE_DROP_PROFILE = 'npuops-roce'

# SONiC (sonic-pfcwd.yang; qos_config.j2)
SONIC_DETECT = (100, 5000)
SONIC_RESTORE = (100, 60000)
SONIC_POLL = (100, 1000)
SONIC_MTU_DEFAULT = 9100
SONIC_WRED_PROFILE = 'AZURE_LOSSLESS'
SONIC_STOCK_GREEN_MAX = 2097152  # qos_config.j2 AZURE_LOSSLESS green_max_threshold

# Cumulus (RoCE and QoS pages, CL 5.12)
CUMULUS_ROCE_TC = 3
CUMULUS_ROCE_SP = 3
CUMULUS_CNP_SP = 6
CUMULUS_CNP_DSCP = 48
CUMULUS_MTU_DEFAULT = 9216


def _error(name, text):
    raise AnsibleFilterError('%s: %s' % (name, text))


def natural_key(text):
    """Sort key putting 400GE1/1/2:1 before 400GE1/1/10:1 and node2 before node10."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r'([0-9]+)', str(text))]


# --- switch_intent_problems ----------------------------------------------------------------------------------------

def _intent_values(intent, name):
    if intent is None:
        intent = {}
    if not isinstance(intent, Mapping):
        _error(name, 'intent %s is not a dict of %s' % (show(intent), ', '.join(INTENT_KEYS)))
    unknown = sorted(str(key) for key in set(intent) - set(INTENT_KEYS))
    if unknown:
        _error(name, 'intent key %s is not known: the keys are %s' % (', '.join(unknown), ', '.join(INTENT_KEYS)))
    values = dict(INTENT_DEFAULTS)
    values.update((key, value) for key, value in intent.items() if value is not None)
    return values


def _add(out, key, value, text):
    variable = INTENT_VARIABLES[key]
    out.append({'variable': variable, 'value': value, 'problem': '%s %s %s' % (variable, show(value), text)})


def _ranged(out, values, key, low, high, why):
    value = values[key]
    number = integer(value)
    if number is None:
        _add(out, key, value, 'is not an integer from %d to %d: %s' % (low, high, why))
        return None
    if not low <= number <= high:
        _add(out, key, value, 'is outside %d-%d: %s' % (low, high, why))
        return None
    return number


def _inventory_problems(out, switches, default_family):
    """Problems of npuops_switches / npuops_switch_family (their shape and the family names)."""
    if default_family is not None and default_family not in FAMILIES:
        out.append({'variable': 'npuops_switch_family', 'value': default_family,
                    'problem': 'npuops_switch_family %s is not a switch family: the families are %s'
                               % (show(default_family), ', '.join(FAMILIES))})
    if switches is None:
        return
    if not isinstance(switches, Mapping):
        out.append({'variable': 'npuops_switches', 'value': switches,
                    'problem': 'npuops_switches %s is not a dict of switch name (as LLDP names it) -> {%s}'
                               % (show(switches), ', '.join(SWITCH_KEYS))})
        return
    for switch in sorted(switches, key=lambda name: natural_key(str(name))):
        settings = switches[switch]
        where = 'npuops_switches[%s]' % show(switch)
        if not isinstance(settings, Mapping):
            out.append({'variable': 'npuops_switches', 'value': settings,
                        'problem': '%s %s is not a dict of %s' % (where, show(settings), ', '.join(SWITCH_KEYS))})
            continue
        unknown = sorted(str(key) for key in set(settings) - set(SWITCH_KEYS))
        if unknown:
            out.append({'variable': 'npuops_switches', 'value': unknown,
                        'problem': '%s has the unknown key(s) %s: the keys are %s'
                                   % (where, ', '.join(unknown), ', '.join(SWITCH_KEYS))})
        family = settings.get('family')
        if family is not None and family not in FAMILIES:
            out.append({'variable': 'npuops_switches', 'value': family,
                        'problem': '%s.family %s is not a switch family: the families are %s'
                                   % (where, show(family), ', '.join(FAMILIES))})


def switch_intent_problems(intent, switches=None, default_family=None):
    """Family-independent problems of the switch QoS intent, and of the switch inventory when given: a list of
    {variable, value, problem}."""
    values = _intent_values(intent, 'switch_intent_problems')
    out = []
    _inventory_problems(out, switches, default_family)
    _ranged(out, values, 'lossless_priority', 0, PRIORITY_MAX, 'PFC has the 8 priorities 0 to 7')
    _ranged(out, values, 'lossless_dscp', 0, DSCP_MAX, 'a DSCP has 6 bits')
    mtu = _ranged(out, values, 'mtu', MTU_MIN, MTU_MAX, 'hccn_tool -mtu -s size accepts 68 to 9702 on the 910B')
    if mtu is not None and mtu < JUMBO_MIN:
        _add(out, 'mtu', values['mtu'], 'is not a jumbo MTU: this collection runs RDMA on the lossless plane at %d to %d '
             '(9000 is usual)' % (JUMBO_MIN, MTU_MAX))
    low = _ranged(out, values, 'ecn_min_bytes', 1, 2 ** 32, 'the ECN marking threshold is a queue depth in bytes')
    high = _ranged(out, values, 'ecn_max_bytes', 1, 2 ** 32, 'the ECN marking threshold is a queue depth in bytes')
    if low is not None and high is not None and low >= high:
        _add(out, 'ecn_max_bytes', values['ecn_max_bytes'], 'is not above npuops_ecn_min_bytes %d: marking starts at the '
             'minimum and reaches the probability at the maximum, so the maximum must be larger' % low)
    _ranged(out, values, 'ecn_probability', 0, 100, 'it is a percentage')
    _ranged(out, values, 'pfcwd_detect_ms', 1, TIME_MAX_MS, 'it is a time in milliseconds')
    _ranged(out, values, 'pfcwd_restore_ms', 0, TIME_MAX_MS, 'it is a time in milliseconds')
    _ranged(out, values, 'pfcwd_poll_ms', 1, TIME_MAX_MS, 'it is a time in milliseconds')
    action = values['pfcwd_action']
    if action not in ACTIONS:
        _add(out, 'pfcwd_action', action, 'is not a watchdog action: drop, forward or alert (the SONiC PFC_WD actions)')
    return out


def _intent(intent, name):
    """The intent with defaults, numbers as int; an error listing the problems when it has any."""
    values = _intent_values(intent, name)
    problems = switch_intent_problems(values)
    if problems:
        _error(name, 'the intent has problems (check it with npuops.ascend.switch_intent_problems first): %s'
               % '; '.join(problem['problem'] for problem in problems))
    return dict((key, value if key == 'pfcwd_action' else integer(value)) for key, value in values.items())


# --- switch_neighbours ---------------------------------------------------------------------------------------------

def _identity(value):
    """A usable identity string (a masked '...' or an empty value is none)."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    if not value or not value.strip('.'):
        return None
    return value


def _device_entries(devices, where):
    """[(device id, entry)] of a hccn_info ``devices`` value: a dict keyed by id, or a list of entries with ``device``."""
    out = []
    if isinstance(devices, Mapping):
        for key, entry in devices.items():
            device = integer(key)
            if device is None:
                _error('switch_neighbours', '%s has the device key %s, not a device id' % (where, show(key)))
            out.append((device, entry))
    elif isinstance(devices, (list, tuple)):
        for index, entry in enumerate(devices):
            device = integer(entry.get('device')) if isinstance(entry, Mapping) else None
            if device is None:
                _error('switch_neighbours', '%s[%d] %s has no integer device' % (where, index, show(entry)))
            out.append((device, entry))
    else:
        _error('switch_neighbours', '%s %s is neither the devices dict of npuops.ascend.hccn_info nor a list of entries'
               % (where, show(devices)))
    return sorted(out, key=lambda item: item[0])


def switch_neighbours(nodes):
    """The leaf switches and ports the NPU ports of the PoD see in LLDP."""
    if not isinstance(nodes, (list, tuple)):
        _error('switch_neighbours', 'nodes %s is not a list of {node, devices}' % show(nodes))
    switches = {}
    ports = []
    unseen = []
    for index, item in enumerate(nodes):
        if not isinstance(item, Mapping) or not isinstance(item.get('node'), str) or 'devices' not in item:
            _error('switch_neighbours', 'nodes[%d] %s is not a {node, devices} entry (node: the inventory hostname, devices: '
                   'the devices of npuops.ascend.hccn_info with queries [lldp])' % (index, show(item)))
        node = item['node']
        for device, entry in _device_entries(item['devices'], 'nodes[%d].devices' % index):
            lldp = entry.get('lldp') if isinstance(entry, Mapping) else None
            if not isinstance(lldp, Mapping):
                unseen.append({'node': node, 'npu': device, 'reason': 'no LLDP data: the lldp query failed or was not run, '
                               'or the switch port sends no LLDP (on Huawei CE LLDP is off until lldp enable)'})
                continue
            port = _identity(lldp.get('ifname'))
            if port is None:
                unseen.append({'node': node, 'npu': device, 'reason': 'the LLDP data has no Port ID TLV with an Ifname, so '
                               'the switch port is not known'})
                continue
            system_name = _identity(lldp.get('system_name'))
            management = _identity(lldp.get('management_address'))
            chassis = _identity(lldp.get('chassis_id'))
            name = system_name or management or chassis
            if name is None:
                unseen.append({'node': node, 'npu': device, 'reason': 'the LLDP data of port %s names no switch: no System '
                               'Name, Management Address or Chassis ID TLV' % port})
                continue
            frame = lldp.get('max_frame_size')
            frame = frame if isinstance(frame, int) and not isinstance(frame, bool) else None
            switch = switches.setdefault(name, {'name': name, 'chassis_id': None, 'management_address': None, 'ports': []})
            switch['chassis_id'] = switch['chassis_id'] or chassis
            switch['management_address'] = switch['management_address'] or management
            switch['ports'].append({'port': port, 'node': node, 'npu': device, 'max_frame_size': frame})
            ports.append({'node': node, 'npu': device, 'switch': name, 'port': port, 'max_frame_size': frame})
    for switch in switches.values():
        switch['ports'].sort(key=lambda p: (natural_key(p['port']), natural_key(p['node']), p['npu']))
    ports.sort(key=lambda p: (natural_key(p['node']), p['npu']))
    unseen.sort(key=lambda p: (natural_key(p['node']), p['npu']))
    claims = {}
    for port in ports:
        claims.setdefault((port['switch'], port['port']), []).append({'node': port['node'], 'npu': port['npu']})
    conflicts = [{'switch': key[0], 'port': key[1], 'npus': npus}
                 for key, npus in sorted(claims.items(), key=lambda kv: (natural_key(kv[0][0]), natural_key(kv[0][1])))
                 if len(npus) > 1]
    return {'switches': switches, 'ports': ports, 'unseen': unseen, 'conflicts': conflicts}


# --- switch_config: checks -----------------------------------------------------------------------------------------

class _Problems:
    def __init__(self, switch, family):
        self.switch, self.family, self.items = switch, family, []

    def add(self, key, value, valid, msg):
        self.items.append({'switch': self.switch, 'family': self.family, 'key': key, 'value': value, 'range': valid,
                           'msg': '%s (%s): %s %s %s' % (self.switch, self.family, key, show(value), msg)})

    def ranged(self, key, value, low, high, why):
        if not low <= value <= high:
            self.add(key, value, '%d-%d' % (low, high), 'is outside %d-%d on %s: %s' % (low, high, self.family, why))
            return False
        return True


def _setting(problems, settings, key, default, low, high, why):
    value = settings.get(key)
    if value is None:
        return default
    number = integer(value)
    if number is None:
        problems.add(key, value, '%d-%d' % (low, high), 'is not an integer from %d to %d: %s' % (low, high, why))
        return None
    if not problems.ranged(key, number, low, high, why):
        return None
    return number


def _ce_watchdog_fa(problems, detect, restore):
    """(interval, detect units, recovery units) for F-A, or None with the problems recorded."""
    for interval in CE_INTERVALS:
        if (detect % interval == 0 and CE_DETECT_UNITS[0] <= detect // interval <= CE_DETECT_UNITS[1]
                and restore % interval == 0 and CE_RECOVERY_UNITS[0] <= restore // interval <= CE_RECOVERY_UNITS[1]):
            return interval, detect // interval, restore // interval
    detect_ok = any(detect % i == 0 and CE_DETECT_UNITS[0] <= detect // i <= CE_DETECT_UNITS[1] for i in CE_INTERVALS)
    restore_ok = any(restore % i == 0 and CE_RECOVERY_UNITS[0] <= restore // i <= CE_RECOVERY_UNITS[1] for i in CE_INTERVALS)
    if not detect_ok:
        problems.add('pfcwd_detect_ms', detect, 'interval x 1-15, interval 10/100/500/1000 ms',
                     'is not interval x 1-15 for interval in 10/100/500/1000 ms: F-A sets the detection time as '
                     '"dcb pfc deadlock-detect interval I" times "priority P deadlock-detect time T" (T 1 to 15)')
    if not restore_ok:
        problems.add('pfcwd_restore_ms', restore, 'interval x 0-31, interval 10/100/500/1000 ms',
                     'is not interval x 0-31 for interval in 10/100/500/1000 ms: F-A sets the recovery time as '
                     '"dcb pfc deadlock-detect interval I" times "priority P deadlock-recovery time R" (R 0 to 31)')
    if detect_ok and restore_ok:
        problems.add('pfcwd_restore_ms', restore, 'detect and restore multiples of one interval (10/100/500/1000 ms)',
                     'and the detection time %d ms are not multiples of one interval: F-A has one "dcb pfc deadlock-detect '
                     'interval" (10, 100, 500 or 1000 ms) for both, with detection 1-15 and recovery 0-31 intervals' % detect)
    return None


def _check_ce(problems, family, intent, settings, b_in_network):
    limits = CE[family]
    fa = limits['fa']
    tag = 'F-A' if fa else 'F-B'
    priority = intent['lossless_priority']
    low, high = limits['priority']
    if not low <= priority <= high:
        problems.add('lossless_priority', priority, '%d-%d' % (low, high),
                     'is outside %d-%d on %s: priority 0-7 is valid for the NPU, but the DCB PFC view of the %s models accepts '
                     'priority %d to %d only (command reference, priority (DCB PFC view))' % (low, high, family, tag, low, high))
    low, high = limits['ecn_low']
    problems.ranged('ecn_min_bytes', intent['ecn_min_bytes'], low, high,
                    'the low-limit of "ecn buffer-size" on the %s models (command reference, ecn)' % tag)
    problems.ranged('ecn_max_bytes', intent['ecn_max_bytes'], intent['ecn_min_bytes'], limits['ecn_high_max'],
                    'the high-limit of "ecn buffer-size" runs from the low-limit to %d on the %s models'
                    % (limits['ecn_high_max'], tag))
    problems.ranged('ecn_probability', intent['ecn_probability'], 1, 100,
                    'discard-percentage of the ecn command is 1 to 100')
    frame = _setting(problems, settings, 'frame_size', CE_FRAME_DEFAULT, CE_FRAME[0], CE_FRAME[1],
                     'jumboframe enable takes a frame length of 1518 to 9500 on these models')
    needed = intent['mtu'] + ETHERNET_OVERHEAD
    if frame is not None and frame < needed:
        problems.add('frame_size', frame, '>= %d' % needed,
                     'is below the NPU MTU %d + %d: jumboframe enable is a frame length (Ethernet header and FCS included), '
                     'so a %d-byte IP packet needs a frame of %d' % (intent['mtu'], ETHERNET_OVERHEAD, intent['mtu'], needed))
    slot = _setting(problems, settings, 'slot', 1, 1, 64, 'the slot id of the recovery-behavior, dscp-mapping and '
                    'headroom-pool commands')
    headroom = None
    if fa:
        headroom = _setting(problems, settings, 'headroom_mb', 4, CE_HEADROOM_MB[0], CE_HEADROOM_MB[1],
                            'qos buffer headroom-pool size accepts 16 to 30720 KB on F-A, so whole megabytes 1 to 30')
    action = intent['pfcwd_action']
    if action == 'alert':
        problems.add('pfcwd_action', action, 'drop or forward',
                     'has no CE equivalent: the CE PFC deadlock detection is always on and always recovers (it forwards or '
                     'discards during the recovery time, "dcb pfc deadlock recovery-behavior"), there is no log-only mode')
    elif action == 'forward' and not fa:
        problems.add('pfcwd_action', action, 'drop',
                     'cannot be used on F-B: the configuration guide (Configuring PFC Deadlock Detection) requires every '
                     'device of a PFC network that has CE6866/CE6860/CE8851-32CQ8DQ/CE8850/CE8851K models to discard '
                     'during the deadlock recovery period')
    elif action == 'forward' and b_in_network:
        problems.add('pfcwd_action', action, 'drop',
                     'cannot be used while an F-B switch (CE6866/CE6860/CE8851-32CQ8DQ/CE8850/CE8851K) is in the PFC '
                     'network: the configuration guide requires discard on all devices of such a network')
    detect, restore = intent['pfcwd_detect_ms'], intent['pfcwd_restore_ms']
    timers = None
    if fa:
        timers = _ce_watchdog_fa(problems, detect, restore)
    else:
        ok = problems.ranged('pfcwd_detect_ms', detect, CE_B_TIMER[0], CE_B_TIMER[1],
                             'dcb pfc deadlock-detect timer is 10 to 1500 ms')
        ok = problems.ranged('pfcwd_restore_ms', restore, CE_B_TIMER[0], CE_B_TIMER[1],
                             'dcb pfc deadlock-recovery timer is 10 to 1500 ms') and ok
        timers = (detect, restore) if ok else None
    return {'frame': frame, 'slot': slot, 'headroom': headroom, 'timers': timers}


def _check_sonic(problems, intent, settings):
    problems.ranged('pfcwd_detect_ms', intent['pfcwd_detect_ms'], SONIC_DETECT[0], SONIC_DETECT[1],
                    'PFC_WD detection_time is 100 to 5000 ms (sonic-pfcwd.yang)')
    problems.ranged('pfcwd_restore_ms', intent['pfcwd_restore_ms'], SONIC_RESTORE[0], SONIC_RESTORE[1],
                    'PFC_WD restoration_time is 100 to 60000 ms (sonic-pfcwd.yang)')
    poll = intent['pfcwd_poll_ms']
    if problems.ranged('pfcwd_poll_ms', poll, SONIC_POLL[0], SONIC_POLL[1],
                       'PFC_WD GLOBAL POLL_INTERVAL is 100 to 1000 ms (sonic-pfcwd.yang)'):
        for key in ('pfcwd_detect_ms', 'pfcwd_restore_ms'):
            if intent[key] < poll:
                problems.add(key, intent[key], '>= pfcwd_poll_ms %d' % poll,
                             'is below the poll interval %d ms: sonic-pfcwd.yang requires detection_time and '
                             'restoration_time >= POLL_INTERVAL' % poll)
    mtu = _setting(problems, settings, 'frame_size', SONIC_MTU_DEFAULT, 68, 9216, 'the port MTU of the PORT table')
    if mtu is not None and mtu < intent['mtu']:
        problems.add('frame_size', mtu, '>= %d' % intent['mtu'],
                     'is below the NPU MTU %d: the port MTU (PORT mtu) must carry the NPU packets' % intent['mtu'])
    return {'mtu': mtu}


def _check_cumulus(problems, intent, settings):
    priority, dscp = intent['lossless_priority'], intent['lossless_dscp']
    if priority == CUMULUS_CNP_SP:
        problems.add('lossless_priority', priority, '0-7 except 6',
                     'is valid for the NPU, but Cumulus cannot carry RoCE on it: under "nv set qos roce" switch priority 6 '
                     'is the CNP priority (SP6 to TC6, strict)')
    if dscp == CUMULUS_CNP_DSCP:
        problems.add('lossless_dscp', dscp, '0-63 except 48',
                     'is valid for the NPU, but Cumulus RoCE maps DSCP 48 to switch priority 6 for CNP')
    problems.ranged('ecn_probability', intent['ecn_probability'], 1, 100,
                    'the marking probability of the congestion-control profile is a percentage (100 under RoCE); 0 would '
                    'never mark')
    if intent['pfcwd_action'] != 'drop':
        problems.add('pfcwd_action', intent['pfcwd_action'], 'drop',
                     'cannot be expressed on Cumulus: its PFC watchdog always discards new packets to the paused queue '
                     'during a storm, it has no forward or alert action')
    mtu = _setting(problems, settings, 'frame_size', CUMULUS_MTU_DEFAULT, 68, 9216, 'the link MTU of the interface')
    if mtu is not None and mtu < intent['mtu']:
        problems.add('frame_size', mtu, '>= %d' % intent['mtu'],
                     'is below the NPU MTU %d: the port MTU (link mtu) must carry the NPU packets' % intent['mtu'])
    return {'mtu': mtu}


# --- switch_config: rendering --------------------------------------------------------------------------------------

def _intent_line(intent):
    return ('lossless priority %(lossless_priority)d, DSCP %(lossless_dscp)d, NPU MTU %(mtu)d, ECN %(ecn_min_bytes)d-'
            '%(ecn_max_bytes)d B at %(ecn_probability)d %%, PFC watchdog detect %(pfcwd_detect_ms)d ms, restore '
            '%(pfcwd_restore_ms)d ms, poll %(pfcwd_poll_ms)d ms, action %(pfcwd_action)s' % intent)


def _header(name, family, intent, ports, prefix='#'):
    lines = ['%s npuops.ascend switch_config: generated from the PoD QoS intent; do not edit by hand' % prefix,
             '%s switch: %s' % (prefix, name),
             '%s family: %s (%s)' % (prefix, family, FAMILY_MODELS[family]),
             '%s intent: %s' % (prefix, _intent_line(intent)),
             '%s ports (%d), each cabled to one NPU:' % (prefix, len(ports))]
    for port in ports:
        frame = port.get('max_frame_size')
        lines.append('%s   %s  %s NPU %d%s' % (prefix, port['port'], port['node'], port['npu'],
                                               '' if frame is None else '  (LLDP max frame size now %d)' % frame))
    lines.append('%s check every line against your switch software version before applying it' % prefix)
    return lines


def _ce_domain_needed(dscp, priority):
    """True when the CE default DiffServ domain does not put ``dscp`` green into queue ``priority``.

    The default domain (QoS configuration guide, Default Settings for Priority Mapping, table 3) maps DSCP 8n to
    8n+7 to PHB n (be, af1-af4, ef, cs6, cs7 = queues 0-7), green, except DSCP 8n+4 (yellow) and 8n+6 (red)
    for n = 1 to 4 (af1-af4).
    """
    queue = dscp // 8
    colored = 1 <= queue <= 4 and dscp % 8 in (4, 6)
    return queue != priority or colored


def _render_ce(name, family, intent, ports, checked):
    fa = CE[family]['fa']
    priority, dscp = intent['lossless_priority'], intent['lossless_dscp']
    slot, timers = checked['slot'], checked['timers']
    behavior = 'discard' if intent['pfcwd_action'] == 'drop' else 'forwarding'
    domain = _ce_domain_needed(dscp, priority)
    lines = _header(name, family, intent, ports)
    lines.append('# not rendered: the poll interval %d ms (CE has no watchdog poll setting: %s)' % (
        intent['pfcwd_poll_ms'], 'the deadlock-detect interval is the unit of the detection and recovery times' if fa
        else 'detection and recovery take their own timers'))
    if not domain:
        lines.append('# DSCP %d is green in queue %d in the CE default DiffServ domain, so "trust dscp" is enough'
                     % (dscp, priority))
    lines += ['#', 'lldp enable', '#']
    if fa:
        lines += ['qos buffer headroom-pool size %d mbytes slot %d' % (checked['headroom'], slot), '#',
                  'dcb pfc dscp-mapping enable slot %d' % slot, '#',
                  'dcb pfc deadlock-detect interval %d' % timers[0], '#']
    else:
        lines += ['dcb pfc deadlock-detect timer %d' % timers[0], 'dcb pfc deadlock-recovery timer %d' % timers[1], '#']
    lines += ['dcb pfc deadlock recovery-behavior %s slot %d' % (behavior, slot), '#']
    if not fa:
        lines += ['qos ecn enable', '#']
    lines += ['dcb pfc', ' priority %d' % priority]
    if priority != 3:
        lines.append(' undo priority 3')
    if fa:
        lines += [' priority %d deadlock-detect time %d' % (priority, timers[1]),
                  ' priority %d deadlock-recovery time %d' % (priority, timers[2])]
    lines.append('#')
    if domain:
        lines += ['diffserv domain %s' % CE_DOMAIN, ' ip-dscp-inbound %d phb %s green' % (dscp, CE_PHB[priority]), '#']
    lines += ['drop-profile %s' % CE_DROP_PROFILE,
              ' ecn buffer-size low-limit %d high-limit %d discard-percentage %d'
              % (intent['ecn_min_bytes'], intent['ecn_max_bytes'], intent['ecn_probability']), '#']
    for port in ports:
        lines += ['interface %s' % port['port'], ' jumboframe enable %d' % checked['frame'], ' undo flow-control',
                  ' trust dscp']
        if domain:
            lines.append(' trust upstream %s' % CE_DOMAIN)
        lines += [' dcb pfc enable mode manual', ' qos queue %d wred %s' % (priority, CE_DROP_PROFILE),
                  ' qos queue %d ecn' % priority, '#']
    lines.append('return')
    return '\n'.join(lines) + '\n'


def _pointer(*parts):
    return ''.join('/' + str(part).replace('~', '~0').replace('/', '~1') for part in parts)


def _op(path, value):
    return {'op': 'add', 'path': path, 'value': value}


def _render_sonic(name, family, intent, ports, checked):
    priority, dscp = str(intent['lossless_priority']), str(intent['lossless_dscp'])
    names = [port['port'] for port in ports]
    ops = [_op(_pointer('DSCP_TO_TC_MAP', 'AZURE', dscp), priority),
           _op(_pointer('TC_TO_PRIORITY_GROUP_MAP', 'AZURE', priority), priority),
           _op(_pointer('TC_TO_QUEUE_MAP', 'AZURE', priority), priority),
           _op(_pointer('MAP_PFC_PRIORITY_TO_QUEUE', 'AZURE', priority), priority)]
    thresholds = [('green_min_threshold', intent['ecn_min_bytes']), ('green_max_threshold', intent['ecn_max_bytes'])]
    if intent['ecn_min_bytes'] >= SONIC_STOCK_GREEN_MAX:
        thresholds.reverse()  # raise the maximum before the minimum passes the stock maximum
    wred = [('ecn', 'ecn_all'), ('wred_green_enable', 'true')] + thresholds + [
        ('green_drop_probability', intent['ecn_probability'])]
    ops += [_op(_pointer('WRED_PROFILE', SONIC_WRED_PROFILE, key), str(value)) for key, value in wred]
    ops += [_op(_pointer('PORT', port, 'mtu'), str(checked['mtu'])) for port in names]
    for port in names:
        ops += [_op(_pointer('PORT_QOS_MAP', port, key), value) for key, value in (
            ('dscp_to_tc_map', 'AZURE'), ('tc_to_queue_map', 'AZURE'), ('tc_to_pg_map', 'AZURE'),
            ('pfc_to_queue_map', 'AZURE'), ('pfc_enable', priority), ('pfcwd_sw_enable', priority))]
    ops += [_op(_pointer('BUFFER_PG', '%s|%s' % (port, priority)), {'profile': 'NULL'}) for port in names]
    ops += [_op(_pointer('QUEUE', '%s|%s' % (port, priority), 'wred_profile'), SONIC_WRED_PROFILE) for port in names]
    ops.append(_op(_pointer('PFC_WD', 'GLOBAL', 'POLL_INTERVAL'), str(intent['pfcwd_poll_ms'])))
    ops += [_op(_pointer('PFC_WD', port), {'action': intent['pfcwd_action'], 'detection_time': str(intent['pfcwd_detect_ms']),
                                           'restoration_time': str(intent['pfcwd_restore_ms'])}) for port in names]
    return json.dumps(ops, indent=2, separators=(',', ': ')) + '\n'


def _render_cumulus(name, family, intent, ports, checked):
    priority, dscp = intent['lossless_priority'], intent['lossless_dscp']
    # a shell script of nv commands: `sh <switch>.nvue.sh` on the switch runs them in order
    lines = ['#!/bin/sh'] + _header(name, family, intent, ports)
    lines += [
        '# not rendered: the watchdog detection and restoration times (%d ms, %d ms). NVUE has no per-port time: the '
        'watchdog' % (intent['pfcwd_detect_ms'], intent['pfcwd_restore_ms']),
        '#   acts after "robustness" polling intervals of pause (default 3) and restores after a polling interval '
        'without pause,',
        '#   so they are left at the switch default; the action is always drop (new packets to the paused queue are '
        'discarded)',
        '# not rendered: the roce-lossless traffic pool; the RoCE documentation moves the lossless priority without it, '
        'check',
        '#   "nv show qos roce" (RoCE pool config) after applying',
        'nv set qos roce mode lossless',
        'nv set qos pfc default-global switch-priority %d' % priority,
        'nv set qos pfc default-global tx enable',
        'nv set qos pfc default-global rx enable',
        'nv set qos mapping default-global trust both',
        'nv set qos mapping default-global dscp %d switch-priority %d' % (dscp, priority)]
    if priority != CUMULUS_ROCE_SP:
        lines += ['# RoCE uses traffic class %d: move switch priority %d onto it and switch priority %d off it'
                  % (CUMULUS_ROCE_TC, priority, CUMULUS_ROCE_SP),
                  'nv set qos egress-queue-mapping default-global switch-priority %d traffic-class %d'
                  % (priority, CUMULUS_ROCE_TC),
                  'nv set qos egress-queue-mapping default-global switch-priority %d traffic-class 0' % CUMULUS_ROCE_SP]
    base = 'nv set qos congestion-control default-global traffic-class %d' % CUMULUS_ROCE_TC
    lines += ['%s ecn enable' % base, '%s min-threshold %d' % (base, intent['ecn_min_bytes']),
              '%s max-threshold %d' % (base, intent['ecn_max_bytes']),
              '%s probability %d' % (base, intent['ecn_probability']),
              'nv set qos pfc-watchdog polling-interval %d' % intent['pfcwd_poll_ms']]
    for port in ports:
        lines += ['nv set interface %s link mtu %d' % (port['port'], checked['mtu']),
                  'nv set interface %s qos pfc-watchdog' % port['port']]
    lines.append('nv config apply')
    return '\n'.join(lines) + '\n'


RENDER = {'huawei_ce_a': _render_ce, 'huawei_ce_b': _render_ce, 'sonic': _render_sonic, 'cumulus': _render_cumulus}


def _safe_name(name):
    safe = re.sub(r'[^A-Za-z0-9._-]+', '_', name).strip('._')
    return safe or 'switch'


def switch_config(neighbours, intent, switches=None, default_family=None):
    """The QoS configuration of every leaf switch of the neighbour map: {files, problems, skipped}."""
    name = 'switch_config'
    if not isinstance(neighbours, Mapping) or not isinstance(neighbours.get('switches'), Mapping):
        _error(name, 'neighbours %s is not the result of npuops.ascend.switch_neighbours' % show(neighbours))
    values = _intent(intent, name)
    switches = switches or {}
    if not isinstance(switches, Mapping):
        _error(name, 'switches %s is not a dict of switch name -> {%s}' % (show(switches), ', '.join(SWITCH_KEYS)))
    if default_family is not None and not isinstance(default_family, str):
        _error(name, 'default_family %s is not a family name' % show(default_family))
    conflicts = {}
    for conflict in neighbours.get('conflicts') or []:
        conflicts.setdefault(conflict['switch'], []).append(conflict)
    families = {}
    settings_of = {}
    for switch in neighbours['switches']:
        settings = switches.get(switch) or {}
        if not isinstance(settings, Mapping):
            _error(name, 'switches[%s] %s is not a dict of %s' % (show(switch), show(settings), ', '.join(SWITCH_KEYS)))
        unknown = sorted(str(key) for key in set(settings) - set(SWITCH_KEYS))
        if unknown:
            _error(name, 'switches[%s] key %s is not known: the keys are %s'
                   % (show(switch), ', '.join(unknown), ', '.join(SWITCH_KEYS)))
        settings_of[switch] = settings
        families[switch] = settings.get('family') or default_family
    b_in_network = 'huawei_ce_b' in families.values()
    files, problems, skipped, used = [], [], [], set()
    for switch in sorted(neighbours['switches'], key=natural_key):
        family = families[switch]
        ports = neighbours['switches'][switch].get('ports') or []
        if not family:
            skipped.append({'switch': switch, 'reason': 'no switch family: set npuops_switches[%s].family or '
                            'npuops_switch_family to one of %s' % (show(switch), ', '.join(FAMILIES))})
            continue
        found = _Problems(switch, family)
        if family not in FAMILIES:
            found.add('family', family, ', '.join(FAMILIES), 'is not a switch family: the families are %s' % ', '.join(FAMILIES))
            problems += found.items
            continue
        for conflict in conflicts.get(switch, []):
            found.add('ports', conflict['port'], 'one NPU a port',
                      'is claimed by %s in LLDP: one switch port is cabled to one NPU, so the neighbour data or the cabling '
                      'is wrong' % ', '.join('%s NPU %d' % (npu['node'], npu['npu']) for npu in conflict['npus']))
        settings = settings_of[switch]
        if family in CE:
            checked = _check_ce(found, family, values, settings, b_in_network)
        elif family == 'sonic':
            checked = _check_sonic(found, values, settings)
        else:
            checked = _check_cumulus(found, values, settings)
        if found.items:
            problems += found.items
            continue
        base = _safe_name(switch)
        filename = '%s.%s' % (base, EXTENSIONS[family])
        count = 1
        while filename in used:
            count += 1
            filename = '%s_%d.%s' % (base, count, EXTENSIONS[family])
        used.add(filename)
        files.append({'switch': switch, 'family': family, 'filename': filename,
                      'content': RENDER[family](switch, family, values, ports, checked),
                      'ports': [dict(port) for port in ports]})
    for switch in sorted(set(switches) - set(neighbours['switches']), key=natural_key):
        skipped.append({'switch': switch, 'reason': 'no NPU port of the PoD sees this switch in LLDP, so there is no port '
                        'to configure on it'})
    return {'files': files, 'problems': problems, 'skipped': skipped}


class FilterModule:
    """npuops.ascend switch-side QoS filters."""

    def filters(self):
        return {
            'switch_neighbours': switch_neighbours,
            'switch_config': switch_config,
            'switch_intent_problems': switch_intent_problems,
        }
