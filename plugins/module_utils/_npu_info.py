# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What npu_info reads: the npu-smi table, the node views and the per-device views of one node (shared with health_info)."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.module_utils._argspec import info_result
from ansible_collections.npuops.ascend.plugins.module_utils._npu_smi import DEVICE_VIEWS, NODE_VIEWS, device_ids
from ansible_collections.npuops.ascend.plugins.module_utils._runner import ToolError

ALL_SUBSETS = sorted(list(DEVICE_VIEWS) + list(NODE_VIEWS) + ['processes'])
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


def gather(npu_smi, subsets, requested_devices, workers, health_view='all'):
    """Read the table, the node views and the per-device views; the info result. Raises ModuleFailure.

    ``health_view`` ``unhealthy``: the per-device ``health`` view (its error codes) is read only for
    the NPUs whose row in the table is not OK; a healthy NPU's row already says OK.
    """
    # 1. the summary table and the node-wide views, together
    node_views = [name for name in sorted(NODE_VIEWS) if name in subsets]
    argvs = [npu_smi.info_argv()] + [npu_smi.node_view_argv(name) for name in node_views]
    results = npu_smi.runner.run_many(argvs, workers, return_exceptions=True)
    table = npu_smi.parse('info', argvs[0], npu_smi.check(argvs[0], results[0]))
    npu_smi.version = table.get('version')
    node = dict((name, npu_smi.parse(NODE_VIEWS[name][1], argv, npu_smi.check(argv, result)))
                for name, argv, result in zip(node_views, argvs[1:], results[1:]))

    # 2. decide the devices
    found = device_ids(table) or npu_smi.list_devices()
    devices = choose_devices(found, requested_devices, npu_smi.host)

    # 3. the per-device views, all concurrently
    rows = dict((row.get('npu'), row) for row in table.get('devices') or [])
    plan = [(dev, name) for dev in devices for name in sorted(DEVICE_VIEWS) if name in subsets
            and not (name == 'health' and health_view == 'unhealthy' and (rows.get(dev) or {}).get('health') == 'OK')]
    argvs = [npu_smi.view_argv(name, dev) for dev, name in plan]
    results = npu_smi.runner.run_many(argvs, workers, return_exceptions=True)
    per_device = {}
    for (dev, name), argv, result in zip(plan, argvs, results):
        per_device.setdefault(dev, {})[name] = npu_smi.parse(DEVICE_VIEWS[name][1], argv, npu_smi.check(argv, result, dev))
    return assemble(npu_smi.version, table, node, devices, per_device, subsets)


def assemble(version, table, node, devices, per_device, subsets):
    rows = {}
    for row in table.get('devices') or []:
        rows.setdefault(row.get('npu'), dict(row))
    topo_rows = dict((row.get('npu'), row) for row in (node.get('topo') or {}).get('devices') or [])
    mapping_rows = (node.get('mapping') or {}).get('devices') or []
    entries = {}
    for dev in devices:
        entry = {'info': rows.get(dev, {'npu': dev})}
        entry.update(per_device.get(dev, {}))
        if 'topo' in subsets:
            entry['topo'] = topo_rows.get(dev, {})
        if 'mapping' in subsets:
            entry['mapping'] = [row for row in mapping_rows if row.get('npu') == dev]
        entries[str(dev)] = entry
    processes = [proc for proc in table.get('processes') or [] if proc.get('npu') in devices]
    facts = {'version': version, 'summary': summarise(version, devices, entries, processes)}
    if 'processes' in subsets:
        facts['processes'] = processes
    return info_result(entries, [], **facts)


def summarise(version, devices, entries, processes):
    unhealthy = []
    for dev in devices:
        entry = entries[str(dev)]
        words = [entry['info'].get('health')]
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
