# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lossless RoCE intent of a PoD and its problems: the filters roce_intent_problems and hccl_rdma_tc, and the
intent's values as the stage 4 decisions take them (:func:`lossless_values`).

The intent is ``{lossless_priority, lossless_dscp, lossless_tc, dscp_to_tc, mtu, hccl_rdma_sl, hccl_rdma_tc}``; the
hardware limits come from the product table (plugins/module_utils/_domain/products.py). The documentation of each
filter is in plugins/filter/<name>.yml.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.module_utils._domain.products import DSCP_MAX, MTU_MAX, MTU_MIN, PRIORITY_MAX, TC_MAX
from ansible_collections.npuops.ascend.plugins.plugin_utils import hccl_rules as rules
from ansible_collections.npuops.ascend.plugins.plugin_utils.hccl_rules import integer, show
from ansible_collections.npuops.ascend.plugins.plugin_utils.pod import canonical, name_nodes, pod_wide_difference

# the lowest MTU this collection accepts on the lossless parameter plane (RDMA at a jumbo MTU)
JUMBO_MIN = 4096


INTENT_KEYS = ('lossless_priority', 'lossless_dscp', 'lossless_tc', 'dscp_to_tc', 'mtu', 'hccl_rdma_sl', 'hccl_rdma_tc')
# Each key of the intent: the variable a node takes it from and the value of a node that does not set it (the defaults of
# roles/roce_lossless/vars/main.yml, which stage 4 uses, and of hccl_env, which derives HCCL_RDMA_SL/TC from them).
INTENT_VARIABLES = {
    'lossless_priority': ('npuops_lossless_priority', 4),
    'lossless_dscp': ('npuops_lossless_dscp', 33),
    'lossless_tc': ('npuops_lossless_tc', 3),
    'dscp_to_tc': ('npuops_dscp_to_tc', None),
    'mtu': ('npuops_mtu', 9000),
    'hccl_rdma_sl': ('npuops_hccl_rdma_sl', None),
    'hccl_rdma_tc': ('npuops_hccl_rdma_tc', None),
}
INTENT_WHY = ('the lossless RoCE intent is PoD-wide (stage 4 sets it on every port of every node and stage 5 derives '
              'HCCL_RDMA_SL and HCCL_RDMA_TC from it)')


def _error(name, text):
    raise AnsibleFilterError('%s: %s' % (name, text))


def lossless_values(intent, name):
    """(mtu, lossless_priority, lossless_dscp, lossless_tc) of an intent as integers; an AnsibleFilterError of the
    filter ``name`` when one is missing or not an integer."""
    if not isinstance(intent, Mapping):
        raise AnsibleFilterError('%s: intent must be a dict with mtu, lossless_priority, lossless_dscp and lossless_tc, got %r'
                                 % (name, intent))
    try:
        return (int(intent['mtu']), int(intent['lossless_priority']), int(intent['lossless_dscp']),
                int(intent['lossless_tc']))
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError('%s: intent needs integer mtu, lossless_priority, lossless_dscp and lossless_tc (%s); '
                                 'validate it with npuops.ascend.roce_intent_problems first' % (name, exc)) from exc


def hccl_rdma_tc(dscp):
    """The HCCL_RDMA_TC value (the ToS byte) of a DSCP: DSCP x 4."""
    number = integer(dscp)
    if number is None:
        _error('hccl_rdma_tc', 'dscp %s is not an integer: a DSCP is an integer from 0 to %d' % (show(dscp), DSCP_MAX))
    if not 0 <= number <= DSCP_MAX:
        _error('hccl_rdma_tc', 'dscp %s is outside 0-%d: a DSCP has 6 bits' % (show(dscp), DSCP_MAX))
    return number * 4


def _add(out, variable, value, text):
    out.append({'variable': variable, 'value': value, 'problem': '%s %s %s' % (variable, show(value), text)})


def _ranged(out, variable, value, low, high, why):
    """The integer of ``value`` when it lies in [low, high], else None with the problem recorded."""
    if value is None:
        _add(out, variable, value, 'is not set: the lossless RoCE intent needs it, an integer from %d to %d' % (low, high))
        return None
    number = integer(value)
    if number is None:
        _add(out, variable, value, 'is not an integer from %d to %d: %s' % (low, high, why))
        return None
    if not low <= number <= high:
        _add(out, variable, value, 'is outside %d-%d: %s' % (low, high, why))
        return None
    return number


def _mtu(out, value):
    variable = 'npuops_mtu'
    mtu = _ranged(out, variable, value, MTU_MIN, MTU_MAX, 'hccn_tool -mtu -s size accepts %d to %d on the 910B' % (MTU_MIN, MTU_MAX))
    if mtu is not None and mtu < JUMBO_MIN:
        _add(out, variable, value, 'is not a jumbo MTU: RDMA on the lossless parameter plane is expected at a jumbo MTU, so '
             'this collection accepts %d to %d (9000 is usual)' % (JUMBO_MIN, MTU_MAX))


def _dscp_map(out, value, dscp, tc):
    variable = 'npuops_dscp_to_tc'
    if value is None:
        return
    if not isinstance(value, (list, tuple)):
        _add(out, variable, value, 'is not a list of {dscp, tc} entries')
        return
    table = {}
    for index, entry in enumerate(value):
        if not isinstance(entry, Mapping) or set(entry) != {'dscp', 'tc'}:
            _add(out, variable, value, 'entry %d %s is not a {dscp, tc} entry: each entry has exactly the keys dscp and tc'
                 % (index, show(entry)))
            continue
        entry_dscp, entry_tc = integer(entry['dscp']), integer(entry['tc'])
        if entry_dscp is None or not 0 <= entry_dscp <= DSCP_MAX:
            _add(out, variable, value, 'entry %d has dscp %s, not a DSCP from 0 to %d' % (index, show(entry['dscp']), DSCP_MAX))
            continue
        if entry_tc is None or not 0 <= entry_tc <= TC_MAX:
            shown = show(entry['tc'])
            _add(out, variable, value, 'entry %d maps DSCP %d to tc %s, not a traffic class from 0 to %d: hccn_tool on the 910B '
                 'rejects it (-dscp_to_tc -s dscp %d tc %s exits 10)' % (index, entry_dscp, shown, TC_MAX, entry_dscp, shown))
            continue
        if entry_dscp in table and table[entry_dscp] != entry_tc:
            _add(out, variable, value, 'maps DSCP %d twice, to TC %d and TC %d: a DSCP has one traffic class'
                 % (entry_dscp, table[entry_dscp], entry_tc))
            continue
        table[entry_dscp] = entry_tc
    if dscp is not None and tc is not None and dscp in table and table[dscp] != tc:
        _add(out, variable, value, 'maps the lossless DSCP %d to TC %d, not to the lossless TC %d: the RDMA traffic would leave '
             'the lossless queue' % (dscp, table[dscp], tc))


def roce_intent_problems(intent, hosts=None):
    """The problems of the PoD's lossless RoCE intent: a list of {variable, value, problem}, empty when it is consistent.

    With ``hosts``, ``intent`` is hostvars: the intent of every host is read from its npuops_* variables, any difference
    between the hosts is a problem, and each different intent is checked (its problems name its hosts).
    """
    if hosts is not None:
        return _pod_intent_problems(intent, hosts)
    return _intent_problems(intent)


def _pod_intent_problems(hostvars, hosts):
    if not isinstance(hostvars, Mapping):
        _error('roce_intent_problems', 'with hosts, the input must be hostvars, got %s' % type(hostvars).__name__)
    if isinstance(hosts, str) or not isinstance(hosts, (list, tuple)) or not all(isinstance(host, str) for host in hosts):
        _error('roce_intent_problems', 'hosts must be a list of inventory hostnames, got %s' % show(hosts))
    intents = []
    for host in hosts:
        if host not in hostvars:
            continue   # pod_problems names it
        hostv = hostvars[host]
        intents.append((host, dict((key, hostv[variable] if variable in hostv else default)
                                   for key, (variable, default) in INTENT_VARIABLES.items())))
    out = []
    for key, (variable, default) in INTENT_VARIABLES.items():
        found = pod_wide_difference(variable, [(host, intent[key]) for host, intent in intents], INTENT_WHY, default)
        if found:
            odd_hosts, value, sentence = found
            out.append({'variable': variable, 'value': value, 'hosts': odd_hosts, 'problem': sentence})
    groups = {}   # the hosts of each different intent (4 and '4' are the same value)
    for host, intent in intents:
        groups.setdefault(canonical(intent), (intent, []))[1].append(host)
    for intent, group_hosts in groups.values():
        for problem in _intent_problems(intent):
            if len(groups) > 1:
                problem = dict(problem, hosts=group_hosts, problem='%s: %s' % (name_nodes(group_hosts), problem['problem']))
            out.append(problem)
    return out


def _intent_problems(intent):
    if not isinstance(intent, Mapping):
        _error('roce_intent_problems', 'intent %s is not a dict of %s' % (show(intent), ', '.join(INTENT_KEYS)))
    unknown = sorted(str(key) for key in set(intent) - set(INTENT_KEYS))
    if unknown:
        _error('roce_intent_problems', 'intent key %s is not known: the keys are %s' % (', '.join(unknown), ', '.join(INTENT_KEYS)))
    out = []
    priority = _ranged(out, 'npuops_lossless_priority', intent.get('lossless_priority'), 0, PRIORITY_MAX,
                       'PFC has the %d priorities 0 to %d' % (PRIORITY_MAX + 1, PRIORITY_MAX))
    dscp = _ranged(out, 'npuops_lossless_dscp', intent.get('lossless_dscp'), 0, DSCP_MAX, 'a DSCP has 6 bits')
    tc_value = intent.get('lossless_tc')
    tc_shown = show(tc_value) if integer(tc_value) is None else integer(tc_value)
    tc = _ranged(out, 'npuops_lossless_tc', tc_value, 0, TC_MAX,
                 'the 910B has the traffic classes 0 to %d (hccn_tool -dscp_to_tc -s dscp %d tc %s exits 10 with "The value of tc '
                 'you input is out of the valid range!")' % (TC_MAX, 33 if dscp is None else dscp, tc_shown))
    _dscp_map(out, intent.get('dscp_to_tc'), dscp, tc)
    _mtu(out, intent.get('mtu'))
    sl_value = intent.get('hccl_rdma_sl')
    if sl_value is not None:
        text = rules.rdma_sl_problem('npuops_hccl_rdma_sl', sl_value, priority)
        if text:
            out.append({'variable': 'npuops_hccl_rdma_sl', 'value': sl_value, 'problem': text})
    rdma_tc = intent.get('hccl_rdma_tc')
    if rdma_tc is not None:
        text = rules.rdma_tc_problem('npuops_hccl_rdma_tc', rdma_tc, dscp)
        if text:
            out.append({'variable': 'npuops_hccl_rdma_tc', 'value': rdma_tc, 'problem': text})
    return out
