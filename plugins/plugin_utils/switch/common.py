# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the switch modules share: the error of a refused argument, the natural order of switch and port names, and the
interface of a family renderer.

A family module (huawei_ce, sonic, cumulus) has:

- ``MODELS``: {family name: the switch models or software it stands for}; the names are the families it renders;
- ``EXTENSION``: the file name extension of its configuration file;
- ``check(problems, family, intent, settings, families)``: records in ``problems`` (a :class:`Problems`) what the
  family cannot express of the checked ``intent`` and of the switch's ``settings`` (npuops_switches[switch]);
  ``families`` lists the family of every switch of the PoD. Returns what ``render`` needs (``checked``);
- ``render(name, family, intent, ports, checked)``: the configuration text of switch ``name`` for its ``ports``
  (entries of switch_neighbours), only called when ``check`` recorded no problem.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.hccl_rules import integer, show


def error(name, text):
    raise AnsibleFilterError('%s: %s' % (name, text))


def natural_key(text):
    """Sort key putting 400GE1/1/2:1 before 400GE1/1/10:1 and node2 before node10."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r'([0-9]+)', str(text))]


class Problems:
    """The problems of one switch: {switch, family, key, value, range, msg}."""

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


def setting(problems, settings, key, default, low, high, why):
    """The integer setting ``key`` of one switch (``default`` when unset), None with a problem recorded when refused."""
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


def _intent_line(intent):
    return ('lossless priority %(lossless_priority)d, DSCP %(lossless_dscp)d, NPU MTU %(mtu)d, ECN %(ecn_min_bytes)d-'
            '%(ecn_max_bytes)d B at %(ecn_probability)d %%, PFC watchdog detect %(pfcwd_detect_ms)d ms, restore '
            '%(pfcwd_restore_ms)d ms, poll %(pfcwd_poll_ms)d ms, action %(pfcwd_action)s' % intent)


def header(name, family, model, intent, ports, prefix='#'):
    """The comment lines that open a switch file: what generated it, the switch, its family, the intent and the ports."""
    lines = ['%s npuops.ascend switch_config: generated from the PoD QoS intent; do not edit by hand' % prefix,
             '%s switch: %s' % (prefix, name),
             '%s family: %s (%s)' % (prefix, family, model),
             '%s intent: %s' % (prefix, _intent_line(intent)),
             '%s ports (%d), each cabled to one NPU:' % (prefix, len(ports))]
    for port in ports:
        frame = port.get('max_frame_size')
        lines.append('%s   %s  %s NPU %d%s' % (prefix, port['port'], port['node'], port['npu'],
                                               '' if frame is None else '  (LLDP max frame size now %d)' % frame))
    lines.append('%s check every line against your switch software version before applying it' % prefix)
    return lines
