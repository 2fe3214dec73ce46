# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NPU ports as the stage 4 and 5 decisions read them: the ports of an ``hccn_info`` result or of an
``hccn_config`` config list by NPU id, a port's DSCP map, and a port value as a message shows it."""

from __future__ import annotations

from collections.abc import Mapping


def by_device(info):
    """{device id: entry} of an hccn_info result or of a list of config entries."""
    if isinstance(info, Mapping):
        found = info.get('devices') or {}
        return dict((int(key), value) for key, value in found.items() if str(key).isdigit() and isinstance(value, Mapping))
    if isinstance(info, (list, tuple)):
        return dict((int(item['device']), item) for item in info if isinstance(item, Mapping) and 'device' in item)
    return {}


def dscp_map(entry):
    """{dscp: tc} of one port (the map as a dict or as a list of {dscp, tc}), None when it was not read."""
    value = entry.get('dscp_to_tc')
    if isinstance(value, Mapping):
        return dict((int(k), v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return dict((int(item['dscp']), item['tc']) for item in value if isinstance(item, Mapping) and 'dscp' in item)
    return None


def port_text(value):
    """A port value in a message: '[4, 5]' for a list, 'unset' for None."""
    if isinstance(value, list):
        return '[%s]' % ', '.join(str(v) for v in value)
    return 'unset' if value is None else str(value)
