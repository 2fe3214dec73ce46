# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The LLDP neighbour map: the leaf switches and ports the NPU ports of the PoD see (module hccn_info, query lldp),
the NPU ports that see none, and the switch ports that more than one NPU claims."""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.npuops.ascend.plugins.plugin_utils.hccl_rules import integer, show
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.common import error, natural_key


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
                error('switch_neighbours', '%s has the device key %s, not a device id' % (where, show(key)))
            out.append((device, entry))
    elif isinstance(devices, (list, tuple)):
        for index, entry in enumerate(devices):
            device = integer(entry.get('device')) if isinstance(entry, Mapping) else None
            if device is None:
                error('switch_neighbours', '%s[%d] %s has no integer device' % (where, index, show(entry)))
            out.append((device, entry))
    else:
        error('switch_neighbours', '%s %s is neither the devices dict of npuops.ascend.hccn_info nor a list of entries'
              % (where, show(devices)))
    return sorted(out, key=lambda item: item[0])


def switch_neighbours(nodes):
    """The leaf switches and ports the NPU ports of the PoD see in LLDP."""
    if not isinstance(nodes, (list, tuple)):
        error('switch_neighbours', 'nodes %s is not a list of {node, devices}' % show(nodes))
    switches = {}
    ports = []
    unseen = []
    for index, item in enumerate(nodes):
        if not isinstance(item, Mapping) or not isinstance(item.get('node'), str) or 'devices' not in item:
            error('switch_neighbours', 'nodes[%d] %s is not a {node, devices} entry (node: the inventory hostname, devices: '
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
