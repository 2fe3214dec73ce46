# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The switch files of stage 4: the PoD's QoS intent rendered for the ports of each leaf switch of the neighbour map,
in the syntax of its family, with what each family cannot express as problems.

Every rendered line is one that the command references show (see the documentation of the filter switch_config for
the sources: Huawei CloudEngine CE6800/CE8800 V300R023C00 command reference and configuration guide,
sonic-buildimage qos_config.j2 and yang models, Cumulus Linux 5.12 QoS and RoCE documentation).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ansible_collections.npuops.ascend.plugins.plugin_utils.hccl_rules import show
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch import FAMILIES, RENDERERS
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.common import Problems, error, natural_key
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.intent import SWITCH_KEYS, checked_intent


def _safe_name(name):
    safe = re.sub(r'[^A-Za-z0-9._-]+', '_', name).strip('._')
    return safe or 'switch'


def switch_config(neighbours, intent, switches=None, default_family=None):
    """The QoS configuration of every leaf switch of the neighbour map: {files, problems, skipped}."""
    name = 'switch_config'
    if not isinstance(neighbours, Mapping) or not isinstance(neighbours.get('switches'), Mapping):
        error(name, 'neighbours %s is not the result of npuops.ascend.switch_neighbours' % show(neighbours))
    values = checked_intent(intent, name)
    switches = switches or {}
    if not isinstance(switches, Mapping):
        error(name, 'switches %s is not a dict of switch name -> {%s}' % (show(switches), ', '.join(SWITCH_KEYS)))
    if default_family is not None and not isinstance(default_family, str):
        error(name, 'default_family %s is not a family name' % show(default_family))
    conflicts = {}
    for conflict in neighbours.get('conflicts') or []:
        conflicts.setdefault(conflict['switch'], []).append(conflict)
    families = {}
    settings_of = {}
    for switch in neighbours['switches']:
        settings = switches.get(switch) or {}
        if not isinstance(settings, Mapping):
            error(name, 'switches[%s] %s is not a dict of %s' % (show(switch), show(settings), ', '.join(SWITCH_KEYS)))
        unknown = sorted(str(key) for key in set(settings) - set(SWITCH_KEYS))
        if unknown:
            error(name, 'switches[%s] key %s is not known: the keys are %s'
                  % (show(switch), ', '.join(unknown), ', '.join(SWITCH_KEYS)))
        settings_of[switch] = settings
        families[switch] = settings.get('family') or default_family
    in_network = list(families.values())  # a family may be any value here (unhashable too): a list, not a set
    files, problems, skipped, used = [], [], [], set()
    for switch in sorted(neighbours['switches'], key=natural_key):
        family = families[switch]
        ports = neighbours['switches'][switch].get('ports') or []
        if not family:
            skipped.append({'switch': switch, 'reason': 'no switch family: set npuops_switches[%s].family or '
                            'npuops_switch_family to one of %s' % (show(switch), ', '.join(FAMILIES))})
            continue
        found = Problems(switch, family)
        if family not in FAMILIES:
            found.add('family', family, ', '.join(FAMILIES), 'is not a switch family: the families are %s' % ', '.join(FAMILIES))
            problems += found.items
            continue
        for conflict in conflicts.get(switch, []):
            found.add('ports', conflict['port'], 'one NPU a port',
                      'is claimed by %s in LLDP: one switch port is cabled to one NPU, so the neighbour data or the cabling '
                      'is wrong' % ', '.join('%s NPU %d' % (npu['node'], npu['npu']) for npu in conflict['npus']))
        renderer = RENDERERS[family]
        checked = renderer.check(found, family, values, settings_of[switch], in_network)
        if found.items:
            problems += found.items
            continue
        base = _safe_name(switch)
        filename = '%s.%s' % (base, renderer.EXTENSION)
        count = 1
        while filename in used:
            count += 1
            filename = '%s_%d.%s' % (base, count, renderer.EXTENSION)
        used.add(filename)
        files.append({'switch': switch, 'family': family, 'filename': filename,
                      'content': renderer.render(switch, family, values, ports, checked),
                      'ports': [dict(port) for port in ports]})
    for switch in sorted(set(switches) - set(neighbours['switches']), key=natural_key):
        skipped.append({'switch': switch, 'reason': 'no NPU port of the PoD sees this switch in LLDP, so there is no port '
                        'to configure on it'})
    return {'files': files, 'problems': problems, 'skipped': skipped}
