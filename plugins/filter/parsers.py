# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the vendor-output parsers: npu_smi_parse, hccn_parse, cpu_list.

The documentation of each filter is in the .yml file of the same name next to this file.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.module_utils._parsers import hccn_tool, npu_smi
from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import compact_cpu_list, expand_cpu_list


def _text(value, name):
    if value is None:
        return ''
    if isinstance(value, bytes):
        return value.decode('utf-8', errors='replace')
    if isinstance(value, (list, tuple)):
        return '\n'.join(str(line) for line in value)
    if not isinstance(value, str):
        raise AnsibleFilterError('%s expects the text output of the tool, got %s' % (name, type(value).__name__))
    return value


def _parse(table, name, text, query):
    parser = table.get(str(query).replace('-', '_'))
    if parser is None:
        raise AnsibleFilterError('%s: unknown query %r; known queries: %s' % (name, query, ', '.join(sorted(table))))
    return parser(_text(text, name))


def npu_smi_parse(text, view='info'):
    """Parse npu-smi output: view is info, list, mapping, board, health, ecc, temp, power, usages, common, topo,
    proc_mem, pcie_err or memory."""
    return _parse(npu_smi.PARSERS, 'npu_smi_parse', text, view)


def hccn_parse(text, query):
    """Parse hccn_tool output of one device: query is link, ip, gateway, net_health, tls, pfc, pfc_stat, dscp_to_tc,
    mtu, netdetect, optical, stat, lldp, link_stat (also speed, fec, ping, set)."""
    return _parse(hccn_tool.PARSERS, 'hccn_parse', text, query)


def cpu_list(value):
    """Range string -> list of ints ('0-2,5' -> [0, 1, 2, 5]); list of ints -> compact range string."""
    try:
        if isinstance(value, (list, tuple, set)):
            return compact_cpu_list(value)
        return expand_cpu_list(value)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('cpu_list: %s' % exc) from exc


class FilterModule:
    """npuops.ascend parser filters."""

    def filters(self):
        return {
            'npu_smi_parse': npu_smi_parse,
            'hccn_parse': hccn_parse,
            'cpu_list': cpu_list,
        }
