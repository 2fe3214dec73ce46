# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The PoD's QoS intent for the switches (lossless priority and DSCP, MTU, ECN, PFC watchdog) and the switch
inventory (npuops_switches, npuops_switch_family): their family-independent problems, and the checked intent the
renderers take."""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.npuops.ascend.plugins.module_utils._domain.products import MTU_MAX, MTU_MIN
from ansible_collections.npuops.ascend.plugins.module_utils._domain.products import DSCP_MAX, PRIORITY_MAX
from ansible_collections.npuops.ascend.plugins.plugin_utils.hccl_rules import integer, show
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch import FAMILIES
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.common import error, natural_key

JUMBO_MIN = 4096
TIME_MAX_MS = 60000
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


def _intent_values(intent, name):
    if intent is None:
        intent = {}
    if not isinstance(intent, Mapping):
        error(name, 'intent %s is not a dict of %s' % (show(intent), ', '.join(INTENT_KEYS)))
    unknown = sorted(str(key) for key in set(intent) - set(INTENT_KEYS))
    if unknown:
        error(name, 'intent key %s is not known: the keys are %s' % (', '.join(unknown), ', '.join(INTENT_KEYS)))
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


def checked_intent(intent, name):
    """The intent with defaults, numbers as int; an error of filter ``name`` listing the problems when it has any."""
    values = _intent_values(intent, name)
    problems = switch_intent_problems(values)
    if problems:
        error(name, 'the intent has problems (check it with npuops.ascend.switch_intent_problems first): %s'
              % '; '.join(problem['problem'] for problem in problems))
    return dict((key, value if key == 'pfcwd_action' else integer(value)) for key, value in values.items())
