# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What hccn_info reads: every requested hccn_tool query of every NPU port of one node (shared with health_info)."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.module_utils._argspec import info_result
from ansible_collections.npuops.ascend.plugins.module_utils._domain.port_config import vocabulary
from ansible_collections.npuops.ascend.plugins.module_utils._domain.port_table import PORTS
from ansible_collections.npuops.ascend.plugins.module_utils._tools import hccn_tool as _hccn_tool
from ansible_collections.npuops.ascend.plugins.module_utils._tools.hccn_tool import HccnTool
from ansible_collections.npuops.ascend.plugins.module_utils._tools.npu_smi import discover_devices
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import Runner, host_name

# Status queries: the keys they give, read straight from the parse.
STATUS = {'link': ('link',), 'net_health': ('net_health',)}
# Queries returned as the parser's dictionary under their own name (vnic: the vNIC of an A3 NPU).
NESTED = ('pfc_stat', 'optical', 'stat', 'lldp', 'link_stat', 'vnic')
# Every query in the order it runs on a device: status, the port settings of hccn_config, the rest.
ALL_QUERIES = ['link', 'net_health'] + list(PORTS.queries) + list(NESTED)
DEFAULT_QUERIES = ['link', 'ip', 'gateway', 'net_health', 'tls', 'pfc', 'dscp_to_tc', 'mtu']


def gather(module, params, warnings):
    """Read every requested query of every device; the info result. Raises ModuleFailure."""
    host = host_name()
    runner = Runner(module, params['timeout'])
    hccn = HccnTool.find(module, runner, params['hccn_tool_path'], host)
    devices, more = discover_devices(
        module, runner, params['devices'], params['npu_smi_path'], host, fallback=params['fallback_devices'],
        then='The devices to query could not be discovered: set the devices option, or fallback_devices.')
    warnings.extend(more)
    queries = [query for query in ALL_QUERIES if query in params['queries']]
    readings = hccn.read_devices([(device, queries) for device in devices], params['workers'])
    settings = [query for query in queries if query in PORTS.by_query]
    entries, config, raw, errors = {}, [], {}, []
    for device in devices:
        by_query = readings[device]
        have, problems, more = vocabulary(PORTS, device, dict((q, by_query[q]) for q in settings))
        warnings.extend(more)
        entry = PORTS.export(have)
        config.append(dict(entry))
        raw[str(device)] = dict((q, r.parsed) for q, r in by_query.items() if r.parsed is not None)
        for query in queries:
            reading = by_query[query]
            if query in STATUS or query in NESTED:
                warnings.extend(reading.warnings())
                if reading.meaning not in (None, _hccn_tool.UNSET):
                    problems.append(reading)
                parsed = reading.parsed or {}
                if query in STATUS:
                    entry.update((key, parsed.get(key)) for key in STATUS[query])
                else:
                    entry[query] = reading.parsed
        for reading in problems:
            if reading.meaning != _hccn_tool.UNANSWERED:
                raise reading.reply.failure(hccn.subject(device))
            msg = '%s: %s not read: %s (rc=%s)' % (hccn.subject(device), reading.query, reading.reply.words, reading.reply.rc)
            if (reading.reply.error or {}).get('query'):
                # a text whose meaning is narrower for this query (vnic): say what it means here
                msg += ' ' + reading.reply.hint
            errors.append(dict(reading.reply.detail(), device=device, query=reading.query, msg=msg))
        entry.pop('device')
        entries[str(device)] = entry
    return info_result(entries, errors, config=config, raw=raw)
