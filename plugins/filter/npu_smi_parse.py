# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the vendor-output parsers: npu_smi_parse, hccn_parse, train_log_parse, cpu_list.

The documentation of each filter is in the .yml file of the same name next to this file. The file
itself is named after one of its filters: Galaxy lists every .py file under plugins/filter/ as a
filter of the file's name, and a name that is no filter would show there as an undocumented one.
"""

from __future__ import annotations

# The parsers are imported in the filter that uses them: Ansible loads every filter file of the collection in each
# task that uses any of its filters, so a file keeps its own load light.

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import (
    MAX_CPUS,
    compact_cpu_list,
    cpu_number,
    expand_cpu_list,
    short_repr,
)


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
    key = str(query).replace('-', '_')
    parser = table.get(key)
    if parser is None:
        raise AnsibleFilterError('%s: unknown query %r; known queries: %s' % (name, query, ', '.join(sorted(table))))
    text = _text(text, name)
    try:
        return parser(text)
    except Exception as exc:  # parsers never raise on tool output: this is a parser bug, not bad input
        raise AnsibleFilterError('%s: the %s parser (%s) failed on this text with %s: %s. This is a bug in the '
                                 'npuops.ascend parsers; please report it with the text that was parsed.'
                                 % (name, key, getattr(parser, '__name__', parser), type(exc).__name__, exc)) from exc


def npu_smi_parse(text, view='info'):
    """Parse npu-smi output: view is info, list, mapping, board, health, ecc, temp, power, usages, common, topo,
    proc_mem, pcie_err or memory."""
    from ansible_collections.npuops.ascend.plugins.module_utils._parsers import npu_smi  # pylint: disable=import-outside-toplevel
    return _parse(npu_smi.PARSERS, 'npu_smi_parse', text, view)


def hccn_parse(text, query):
    """Parse hccn_tool output of one device: query is link, ip, gateway, net_health, tls, pfc, pfc_stat, dscp_to_tc,
    mtu, netdetect, optical, stat, lldp, link_stat (also speed, fec, ping, set)."""
    from ansible_collections.npuops.ascend.plugins.module_utils._parsers import hccn_tool  # pylint: disable=import-outside-toplevel
    return _parse(hccn_tool.PARSERS, 'hccn_parse', text, query)


def train_log_parse(text):
    """Parse the iteration lines of a MindSpeed / Megatron / ModelLink training log (the whole log text)."""
    from ansible_collections.npuops.ascend.plugins.module_utils._parsers import train_log  # pylint: disable=import-outside-toplevel
    return _parse(train_log.PARSERS, 'train_log_parse', text, 'train_log')


def cpu_list(value):
    """Range string -> list of ints ('0-2,5' -> [0, 1, 2, 5]); list of CPU numbers -> compact range string.

    CPU numbers are 0 .. MAX_CPUS - 1. A list holds ints (or integral floats) or strings of digits;
    booleans, negative numbers, fractions and ranges are refused, naming the element.
    """
    if isinstance(value, (list, tuple, set, frozenset)):
        ordered = isinstance(value, (list, tuple))
        for index, element in enumerate(value if ordered else sorted(value, key=short_repr)):
            try:
                cpu_number(element, MAX_CPUS)
            except ValueError as exc:
                where = ' at index %d' % index if ordered else ''
                raise AnsibleFilterError('cpu_list: list element %s%s is not a CPU number: %s'
                                         % (short_repr(element), where, exc)) from exc
        return compact_cpu_list(value)
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise AnsibleFilterError('cpu_list expects a CPU range string or a list of CPU numbers, got %s %s'
                                 % (type(value).__name__, short_repr(value)))
    try:
        return expand_cpu_list(value)
    except ValueError as exc:
        raise AnsibleFilterError('cpu_list: cannot expand %s: %s' % (short_repr(value), exc)) from exc


class FilterModule:
    """npuops.ascend parser filters."""

    def filters(self):
        return {
            'npu_smi_parse': npu_smi_parse,
            'hccn_parse': hccn_parse,
            'train_log_parse': train_log_parse,
            'cpu_list': cpu_list,
        }
