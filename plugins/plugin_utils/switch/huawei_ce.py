# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Huawei CloudEngine switches, in the two families of the command reference (CE6800/CE8800 V300R023C00): F-A
(huawei_ce_a) and F-B (huawei_ce_b), which differ in their ranges and in how they set the PFC deadlock watchdog.
The configuration is a VRP script; what the references do not show is left at the switch default and said so in a
comment."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.common import header, setting

MODELS = {
    'huawei_ce_a': 'Huawei CloudEngine CE6855/CE6863E/CE6885/CE8855/CE8851-32CQ4BQ',
    'huawei_ce_b': 'Huawei CloudEngine CE6860/CE6866/CE8850/CE8851-32CQ8DQ/CE8851K',
}
EXTENSION = 'cfg'

ETHERNET_OVERHEAD = 18  # 14 bytes of Ethernet header + 4 bytes of FCS: a CE jumboframe is a frame length
# ranges per family (command reference V300R023C00)
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


def _watchdog_fa(problems, detect, restore):
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


def check(problems, family, intent, settings, families):
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
    frame = setting(problems, settings, 'frame_size', CE_FRAME_DEFAULT, CE_FRAME[0], CE_FRAME[1],
                    'jumboframe enable takes a frame length of 1518 to 9500 on these models')
    needed = intent['mtu'] + ETHERNET_OVERHEAD
    if frame is not None and frame < needed:
        problems.add('frame_size', frame, '>= %d' % needed,
                     'is below the NPU MTU %d + %d: jumboframe enable is a frame length (Ethernet header and FCS included), '
                     'so a %d-byte IP packet needs a frame of %d' % (intent['mtu'], ETHERNET_OVERHEAD, intent['mtu'], needed))
    slot = setting(problems, settings, 'slot', 1, 1, 64, 'the slot id of the recovery-behavior, dscp-mapping and '
                   'headroom-pool commands')
    headroom = None
    if fa:
        headroom = setting(problems, settings, 'headroom_mb', 4, CE_HEADROOM_MB[0], CE_HEADROOM_MB[1],
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
    elif action == 'forward' and 'huawei_ce_b' in families:
        problems.add('pfcwd_action', action, 'drop',
                     'cannot be used while an F-B switch (CE6866/CE6860/CE8851-32CQ8DQ/CE8850/CE8851K) is in the PFC '
                     'network: the configuration guide requires discard on all devices of such a network')
    detect, restore = intent['pfcwd_detect_ms'], intent['pfcwd_restore_ms']
    timers = None
    if fa:
        timers = _watchdog_fa(problems, detect, restore)
    else:
        ok = problems.ranged('pfcwd_detect_ms', detect, CE_B_TIMER[0], CE_B_TIMER[1],
                             'dcb pfc deadlock-detect timer is 10 to 1500 ms')
        ok = problems.ranged('pfcwd_restore_ms', restore, CE_B_TIMER[0], CE_B_TIMER[1],
                             'dcb pfc deadlock-recovery timer is 10 to 1500 ms') and ok
        timers = (detect, restore) if ok else None
    return {'frame': frame, 'slot': slot, 'headroom': headroom, 'timers': timers}


def domain_needed(dscp, priority):
    """True when the CE default DiffServ domain does not put ``dscp`` green into queue ``priority``.

    The default domain (QoS configuration guide, Default Settings for Priority Mapping, table 3) maps DSCP 8n to
    8n+7 to PHB n (be, af1-af4, ef, cs6, cs7 = queues 0-7), green, except DSCP 8n+4 (yellow) and 8n+6 (red)
    for n = 1 to 4 (af1-af4).
    """
    queue = dscp // 8
    colored = 1 <= queue <= 4 and dscp % 8 in (4, 6)
    return queue != priority or colored


def render(name, family, intent, ports, checked):
    fa = CE[family]['fa']
    priority, dscp = intent['lossless_priority'], intent['lossless_dscp']
    slot, timers = checked['slot'], checked['timers']
    behavior = 'discard' if intent['pfcwd_action'] == 'drop' else 'forwarding'
    domain = domain_needed(dscp, priority)
    lines = header(name, family, MODELS[family], intent, ports)
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
