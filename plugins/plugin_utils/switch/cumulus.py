# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA Cumulus Linux 5.x: the configuration is a shell script of NVUE commands (``sh <switch>.nvue.sh`` on the
switch runs them in order), from the Cumulus Linux 5.12 QoS and RoCE documentation; what it does not show is left at
the switch default and said so in a comment."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.common import header, setting

MODELS = {'cumulus': 'NVIDIA Cumulus Linux 5.x (NVUE)'}
EXTENSION = 'nvue.sh'

# RoCE and QoS pages, CL 5.12
CUMULUS_ROCE_TC = 3
CUMULUS_ROCE_SP = 3
CUMULUS_CNP_SP = 6
CUMULUS_CNP_DSCP = 48
CUMULUS_MTU_DEFAULT = 9216


def check(problems, family, intent, settings, families):
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
    mtu = setting(problems, settings, 'frame_size', CUMULUS_MTU_DEFAULT, 68, 9216, 'the link MTU of the interface')
    if mtu is not None and mtu < intent['mtu']:
        problems.add('frame_size', mtu, '>= %d' % intent['mtu'],
                     'is below the NPU MTU %d: the port MTU (link mtu) must carry the NPU packets' % intent['mtu'])
    return {'mtu': mtu}


def render(name, family, intent, ports, checked):
    priority, dscp = intent['lossless_priority'], intent['lossless_dscp']
    # a shell script of nv commands: `sh <switch>.nvue.sh` on the switch runs them in order
    lines = ['#!/bin/sh'] + header(name, family, MODELS[family], intent, ports)
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
