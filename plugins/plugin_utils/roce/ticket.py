# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The change of stage 4 told before and after: the change ticket of a dry run (roce_change_ticket) and the ports a
one-pass change changed per setting (changed_ports).

The link flaps of a port come from the port table (plugins/module_utils/_domain/port_table.py), which knows the
settings whose set bounces the link. The documentation of each filter is in plugins/filter/<name>.yml.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.module_utils._domain.port_table import PortTable
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.ports import by_device, dscp_map, port_text

# the keys of each port setting whose set takes the port down for a few seconds (hccn_config waits for the link after it)
LINK_AFFECTING = tuple(row.keys for row in PortTable().rows if row.link_affecting)


def link_flaps(before, after, together=False):
    """How often the link of a port goes down when it changes from ``before`` to ``after``: once per changed setting
    that bounces the link, at most once when the settings of the port are set in one pass (``together``)."""
    flaps = sum(1 for keys in LINK_AFFECTING if any(before.get(key) != after.get(key) for key in keys))
    return min(flaps, 1) if together else flaps


def _port_changes(before, after):
    """'mtu 1500 -> 9000' phrases of one device (a DSCP map item by item)."""
    parts = []
    for key in sorted(set(before) | set(after)):
        if key == 'device':
            continue
        old, new = before.get(key), after.get(key)
        if key == 'dscp_to_tc':
            old_map, new_map = dscp_map(before) or {}, dscp_map(after) or {}
            for dscp in sorted(new_map):
                if old_map.get(dscp) != new_map[dscp]:
                    parts.append('DSCP %d -> TC %s (was %s)' % (dscp, new_map[dscp], port_text(old_map.get(dscp))))
        elif old != new:
            parts.append('%s %s -> %s' % (key, port_text(old), port_text(new)))
    return parts


def roce_change_ticket(plans, title='roce_lossless', together=False):
    """The lines of a change ticket from the check-mode hccn_config results of every node ({host: result}).

    ``together``: the commands of a port run in one pass and its link is waited for once, so a port whose MTU and PFC
    both change flaps once.
    """
    if not isinstance(plans, Mapping):
        raise AnsibleFilterError('roce_change_ticket: expects a dict {host: registered hccn_config result}')
    lines = []
    ports = flaps = 0
    changing = []
    for host in sorted(plans):
        result = plans[host] or {}
        if not isinstance(result, Mapping) or result.get('failed') or 'before' not in result:
            lines.append('%s: not planned: %s' % (host, (result.get('msg') if isinstance(result, Mapping) else None) or 'no result'))
            continue
        befores = by_device(result.get('before') or [])
        afters = by_device(result.get('after') or [])
        commands = result.get('commands') or []
        node_lines = []
        for dev in sorted(afters):
            parts = _port_changes(befores.get(dev) or {}, afters[dev])
            if not parts:
                continue
            device_flaps = link_flaps(befores.get(dev) or {}, afters[dev], together)
            ports += 1
            flaps += device_flaps
            node_lines.append('  NPU %d: %s; %d link flap%s' % (dev, '; '.join(parts), device_flaps, '' if device_flaps == 1 else 's'))
        if node_lines:
            changing.append(host)
            lines.append('%s: %d port(s) change, %d command(s)' % (host, len(node_lines), len(commands)))
            lines.extend(node_lines)
        else:
            lines.append('%s: no change' % host)
        for busy in result.get('busy') or []:
            lines.append('  NPU %s runs pid %s (%s): the change is refused there unless roce_lossless_allow_busy=true'
                         % (busy.get('device'), busy.get('pid'), busy.get('name')))
    head = ('Change ticket (%s): %d node(s) of %d change, %d port(s), %d link flap(s) in all (%s)'
            % (title, len(changing), len(plans), ports, flaps,
               'the settings of a port are set in one pass, which takes the port down once for a few seconds' if together
               else 'each MTU or PFC set takes its port down for a few seconds'))
    return [head] + lines


def changed_ports(result, keys):
    """NPU ids an hccn_config result changed whose value of any of ``keys`` differs between ``before`` and ``after``
    (a one-pass change told apart per setting); [] for a skipped or missing result."""
    keys = [keys] if isinstance(keys, str) else list(keys or [])
    if not isinstance(result, Mapping):
        return []
    touched = set(result.get('changed_devices') or [])
    befores = by_device(result.get('before') or [])
    afters = by_device(result.get('after') or [])
    out = []
    for dev in sorted(touched):
        before, after = befores.get(dev) or {}, afters.get(dev) or {}
        if any(key in before and before.get(key) != after.get(key) for key in keys):
            out.append(dev)
    return out
