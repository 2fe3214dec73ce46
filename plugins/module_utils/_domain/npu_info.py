# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What npu_info reads: the npu-smi table, the node views and the per-device views of one node (shared with health_info)."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.module_utils._argspec import info_result
from ansible_collections.npuops.ascend.plugins.module_utils._domain.products import identify
from ansible_collections.npuops.ascend.plugins.module_utils._tools.npu_smi import DEVICE_VIEWS, NODE_VIEWS, device_ids
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import ModuleFailure, ToolError, cmd_to_text

ALL_SUBSETS = sorted(list(DEVICE_VIEWS) + list(NODE_VIEWS) + ['processes'])
# Per-device views whose failure on one NPU is kept as an error of the result (``errors``, with its query) instead
# of failing the read: views that not every driver or product offers (no real 910B capture of -t pcie-err exists).
TOLERATED_VIEWS = ('common', 'pcie_err')
DEFAULT_SUBSET = ['board', 'health', 'usages', 'topo', 'processes']


def resolve_subsets(requested):
    """The set of subsets to gather: 'all' expands to every subset."""
    requested = set(requested or [])
    if 'all' in requested:
        return set(ALL_SUBSETS)
    return requested


def choose_devices(found, requested, host):
    """Decide which devices to report; fail on ids npu-smi does not list."""
    if not requested:
        return list(found)
    missing = [dev for dev in requested if dev not in found]
    if missing:
        raise ToolError(subject='NPU %s on %s' % (', '.join(str(dev) for dev in missing), host),
                        msg='not listed by npu-smi (found %s). Fix the devices option; `npu-smi info -l` lists the NPUs '
                            'of the host.' % (found or 'none'))
    return [dev for dev in found if dev in requested]


def find_health(data):
    """The health word in a parsed `-t health` view, wherever the parser put it."""
    if isinstance(data, dict):
        for key in ('health_status', 'health'):
            if isinstance(data.get(key), str):
                return data[key]
        for value in data.values():
            found = find_health(value)
            if found:
                return found
    if isinstance(data, list):
        for value in data:
            found = find_health(value)
            if found:
                return found
    return None


def gather(npu_smi, subsets, requested_devices, workers, health_view='all', table=None):
    """Read the table, the node views and the per-device views; the info result. Raises ModuleFailure.

    ``health_view`` ``unhealthy``: the per-device ``health`` view (its error codes) is read only for
    the NPUs whose row in the table is not OK; a healthy NPU's row already says OK.
    ``table``: the parsed summary table of an earlier read in the same module run (health_info reads the ECC
    counters again with it), so the table is not read twice. The parsed table and node views are left on
    ``npu_smi`` (``gathered_table``, ``node_views``) for the other parts of such a run.
    """
    # 1. the summary table and the node-wide views, together
    node_views = [name for name in sorted(NODE_VIEWS) if name in subsets]
    argvs = ([] if table is not None else [npu_smi.info_argv()]) + [npu_smi.node_view_argv(name) for name in node_views]
    results = npu_smi.runner.run_many(argvs, workers, return_exceptions=True, read=True) if argvs else []
    if table is None:
        table = npu_smi.parse('info', argvs[0], npu_smi.check(argvs[0], results[0]))
        argvs, results = argvs[1:], results[1:]
    npu_smi.version = table.get('version')
    node = dict((name, npu_smi.parse(NODE_VIEWS[name][1], argv, npu_smi.check(argv, result)))
                for name, argv, result in zip(node_views, argvs, results))
    npu_smi.gathered_table, npu_smi.node_views = table, node

    # 2. decide the devices (an NPU whose table rows could not be read is one of them: it failed)
    found = device_ids(table) or npu_smi.list_devices()
    unread = table_errors(table, npu_smi.info_argv(), npu_smi.host)
    found = found + [error['device'] for error in unread if error['device'] is not None and error['device'] not in found]
    devices = choose_devices(found, npus_of_devices(table, node, requested_devices), npu_smi.host)

    # 3. the per-device views, all concurrently
    rows = rows_by_npu(table)
    plan = [(dev, name) for dev in devices for name in sorted(DEVICE_VIEWS) if name in subsets
            and not (name == 'health' and health_view == 'unhealthy' and rows.get(dev)
                     and all(row.get('health') == 'OK' for row in rows[dev]))]
    argvs = [npu_smi.view_argv(name, dev) for dev, name in plan]
    results = npu_smi.runner.run_many(argvs, workers, return_exceptions=True, read=True)
    per_device = {}
    unread = list(unread)
    for (dev, name), argv, result in zip(plan, argvs, results):
        try:
            per_device.setdefault(dev, {})[name] = npu_smi.parse(DEVICE_VIEWS[name][1], argv, npu_smi.check(argv, result, dev))
        except ModuleFailure as exc:
            if name not in TOLERATED_VIEWS:
                raise
            # a view some drivers or products do not offer: an error of the result, the other views still count
            unread.append(dict(exc.result(), device=dev, query=name, msg=exc.msg))
    return assemble(npu_smi.version, table, node, devices, per_device, subsets, unread)


def table_errors(table, argv, host):
    """The info-result errors of the NPUs whose rows of the summary table could not be read (``errors`` of the parse)."""
    out = []
    for error in table.get('errors') or []:
        npu = error.get('npu')
        out.append({'device': npu, 'query': 'info', 'cmd': cmd_to_text(argv), 'rc': 0, 'stdout': '\n'.join(error.get('lines') or []),
                    'stderr': '', 'msg': '%s: a row of %s could not be read (%s); the raw row is in stdout. Compare it with the '
                    'output on the host and report the layout.'
                    % ('NPU %s on %s' % (npu, host) if npu is not None else host, cmd_to_text(argv), error.get('msg'))})
    return out


def rows_by_npu(table):
    """The summary-table rows of each NPU id, in order: one per NPU on an A2, one per die on an A3, one per chip on a 310P Duo."""
    rows = {}
    for row in table.get('devices') or []:
        if isinstance(row, dict):
            rows.setdefault(row.get('npu'), []).append(row)
    return rows


def npus_of_devices(table, node, requested):
    """The NPU ids of the requested device ids. They are the same on a node of one chip per NPU; on an A3 (two
    dies per NPU) or a 310P Duo card the requested ids are the dies' or chips' device ids (``hccn_tool -i``)."""
    rows = rows_by_npu(table)
    if not requested or all(len(own) < 2 for own in rows.values()):
        return requested
    mapping_rows = (node.get('mapping') or {}).get('devices') or []
    owner = dict((die_device(row, mapping_rows), npu) for npu, own in rows.items() for row in own)
    out = []
    for device in requested:
        npu = owner.get(device, device)
        if npu not in out:
            out.append(npu)
    return out


def die_device(row, mapping_rows):
    """The device id (``hccn_tool -i``, HCCL rank device) of one die or chip row of the table.

    From ``npu-smi info -m`` when it was read (its Chip Logic ID), else the row's own ``Device``
    column (310 family), else the die's physical id (A3: the logic id equals the physical id unless
    it was remapped with ``npu-smi set -t phyid-remap``; read ``mapping`` to be sure).
    """
    for item in mapping_rows:
        if item.get('npu') == row.get('npu') and item.get('chip') == row.get('chip') and isinstance(item.get('logic_id'), int):
            return item['logic_id']
    if isinstance(row.get('device'), int):
        return row['device']
    return row.get('phy_id')


def assemble(version, table, node, devices, per_device, subsets, unread=None):
    rows = rows_by_npu(table)
    topo_all = [row for row in (node.get('topo') or {}).get('devices') or [] if isinstance(row, dict)]
    topo_rows = dict((row.get('npu'), row) for row in topo_all if row.get('npu') is not None)
    # an A3 topology names dies by physical id (Phy-ID0...): each die gets its own row
    topo_phy = dict((row.get('phy_id'), row) for row in topo_all if row.get('phy_id') is not None)
    mapping_rows = (node.get('mapping') or {}).get('devices') or []
    entries = {}
    for dev in devices:
        own = rows.get(dev) or [{'npu': dev}]
        entry = {'info': dict(own[0])}
        if len(own) > 1:
            entry['dies'] = [dict(row, device=die_device(row, mapping_rows)) for row in own]
        entry.update(per_device.get(dev, {}))
        if 'topo' in subsets and topo_phy:
            entry['topo'] = topo_phy.get(own[0].get('phy_id'), {})
            for die in entry.get('dies') or []:
                die['topo'] = topo_phy.get(die.get('phy_id'), {})
        elif 'topo' in subsets:
            entry['topo'] = topo_rows.get(dev, {})
        if 'mapping' in subsets:
            entry['mapping'] = [row for row in mapping_rows if row.get('npu') == dev]
        entries[str(dev)] = entry
    processes = [proc for proc in table.get('processes') or [] if proc.get('npu') in devices]
    facts = {'version': version, 'summary': summarise(version, devices, entries, processes)}
    facts['summary']['product'] = identify(table.get('devices'))
    if 'processes' in subsets:
        facts['processes'] = processes
    # an NPU whose table rows could not be read failed: unhealthy, and the node is not all healthy
    unread = [error for error in unread or [] if error['device'] is None or error['device'] in devices]
    rows = [error for error in unread if error.get('query', 'info') == 'info']  # a tolerated view that failed is no health word
    failed = set(facts['summary']['unhealthy']) | set(error['device'] for error in rows)
    facts['summary']['unhealthy'] = [dev for dev in devices if dev in failed]
    facts['summary']['all_healthy'] = facts['summary']['all_healthy'] and not rows
    return info_result(entries, unread, **facts)


def summarise(version, devices, entries, processes):
    unhealthy = []
    for dev in devices:
        entry = entries[str(dev)]
        words = [row.get('health') for row in entry.get('dies') or [entry['info']]]
        if 'health' in entry:
            words.append(find_health(entry['health']))
        if any(word is not None and word != 'OK' for word in words) or words[0] is None:
            unhealthy.append(dev)
    boards = [entries[str(dev)].get('board') or {} for dev in devices]
    first_board = boards[0] if boards else {}
    return {
        'all_healthy': not unhealthy and bool(devices),
        'unhealthy': unhealthy,
        'busy': sorted(set(proc['npu'] for proc in processes if isinstance(proc.get('npu'), int))),
        'driver_version': first_board.get('software_version') or version,
        'firmware_version': first_board.get('firmware_version'),
    }
