# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Community SONiC: the configuration is a JSON patch of config_db for the generic config updater (GCU), from
sonic-buildimage qos_config.j2 and the yang models. A JSON patch has no comments: what it leaves at the switch default
is said in the documentation of switch_config."""

from __future__ import annotations

import json

from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.common import setting

MODELS = {'sonic': 'community SONiC (config_db, GCU JSON patch)'}
EXTENSION = 'json'

# sonic-pfcwd.yang; qos_config.j2
SONIC_DETECT = (100, 5000)
SONIC_RESTORE = (100, 60000)
SONIC_POLL = (100, 1000)
SONIC_MTU_DEFAULT = 9100
SONIC_WRED_PROFILE = 'AZURE_LOSSLESS'
SONIC_STOCK_GREEN_MAX = 2097152  # qos_config.j2 AZURE_LOSSLESS green_max_threshold


def check(problems, family, intent, settings, families):
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
    mtu = setting(problems, settings, 'frame_size', SONIC_MTU_DEFAULT, 68, 9216, 'the port MTU of the PORT table')
    if mtu is not None and mtu < intent['mtu']:
        problems.add('frame_size', mtu, '>= %d' % intent['mtu'],
                     'is below the NPU MTU %d: the port MTU (PORT mtu) must carry the NPU packets' % intent['mtu'])
    return {'mtu': mtu}


def pointer(*parts):
    """The JSON pointer (RFC 6901) of a config_db path."""
    return ''.join('/' + str(part).replace('~', '~0').replace('/', '~1') for part in parts)


def _op(path, value):
    return {'op': 'add', 'path': path, 'value': value}


def render(name, family, intent, ports, checked):
    priority, dscp = str(intent['lossless_priority']), str(intent['lossless_dscp'])
    names = [port['port'] for port in ports]
    ops = [_op(pointer('DSCP_TO_TC_MAP', 'AZURE', dscp), priority),
           _op(pointer('TC_TO_PRIORITY_GROUP_MAP', 'AZURE', priority), priority),
           _op(pointer('TC_TO_QUEUE_MAP', 'AZURE', priority), priority),
           _op(pointer('MAP_PFC_PRIORITY_TO_QUEUE', 'AZURE', priority), priority)]
    thresholds = [('green_min_threshold', intent['ecn_min_bytes']), ('green_max_threshold', intent['ecn_max_bytes'])]
    if intent['ecn_min_bytes'] >= SONIC_STOCK_GREEN_MAX:
        thresholds.reverse()  # raise the maximum before the minimum passes the stock maximum
    wred = [('ecn', 'ecn_all'), ('wred_green_enable', 'true')] + thresholds + [
        ('green_drop_probability', intent['ecn_probability'])]
    ops += [_op(pointer('WRED_PROFILE', SONIC_WRED_PROFILE, key), str(value)) for key, value in wred]
    ops += [_op(pointer('PORT', port, 'mtu'), str(checked['mtu'])) for port in names]
    for port in names:
        ops += [_op(pointer('PORT_QOS_MAP', port, key), value) for key, value in (
            ('dscp_to_tc_map', 'AZURE'), ('tc_to_queue_map', 'AZURE'), ('tc_to_pg_map', 'AZURE'),
            ('pfc_to_queue_map', 'AZURE'), ('pfc_enable', priority), ('pfcwd_sw_enable', priority))]
    ops += [_op(pointer('BUFFER_PG', '%s|%s' % (port, priority)), {'profile': 'NULL'}) for port in names]
    ops += [_op(pointer('QUEUE', '%s|%s' % (port, priority), 'wred_profile'), SONIC_WRED_PROFILE) for port in names]
    ops.append(_op(pointer('PFC_WD', 'GLOBAL', 'POLL_INTERVAL'), str(intent['pfcwd_poll_ms'])))
    ops += [_op(pointer('PFC_WD', port), {'action': intent['pfcwd_action'], 'detection_time': str(intent['pfcwd_detect_ms']),
                                          'restoration_time': str(intent['pfcwd_restore_ms'])}) for port in names]
    return json.dumps(ops, indent=2, separators=(',', ': ')) + '\n'
