# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stage 2, the versions: the fingerprint and findings of one node's software stack, and the fields that differ between
nodes or changed since the previous run."""

from __future__ import annotations

import json
import os

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils import store
from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import FAIL, WARN, finding
from ansible_collections.npuops.ascend.plugins.plugin_utils.health import by_device


def _numbers(version):
    """'7.1.0.11.220' -> (7, 1, 0, 11, 220); None when a part is not a number (rc releases)."""
    parts = str(version or '').strip().split('.')
    if not parts or not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


def _in_range(version, low, high):
    """Whether ``version`` lies in [low, high], comparing as many parts as the bound has; None when unknown."""
    value, lower, upper = _numbers(version), _numbers(low), _numbers(high)
    if value is None or lower is None or upper is None:
        return None
    return value[:len(lower)] >= lower and value[:len(upper)] <= upper


def _base(version):
    """'2.5.1+cpu' -> '2.5.1' (a local build tag does not change the release)."""
    return str(version or '').split('+', maxsplit=1)[0].strip()


def version_findings(stack, boards, table, host=None, unknown_is_fatal=False):
    """Fingerprint and findings of one node's software stack (see version_findings.yml)."""
    if not isinstance(stack, dict) or not isinstance(table, dict):
        raise AnsibleFilterError('version_findings expects the version_info result and the compatibility table')
    host = host or 'this node'
    unknown = FAIL if unknown_is_fatal else WARN
    out = []
    driver, firmware, cann = stack.get('driver') or {}, stack.get('firmware') or {}, stack.get('cann') or {}
    packages = stack.get('packages') or {}
    fingerprint = dict(stack.get('fingerprint') or {})
    npu_drivers, npu_firmware = {}, {}
    for dev, entry in sorted(by_device(boards).items()):
        board = entry.get('board') or {}
        if board.get('software_version'):
            npu_drivers.setdefault(board['software_version'], []).append(dev)
        if board.get('firmware_version'):
            npu_firmware.setdefault(board['firmware_version'], []).append(dev)
    fingerprint['npu_driver'] = ','.join(sorted(npu_drivers)) or None
    fingerprint['npu_firmware'] = ','.join(sorted(npu_firmware)) or None

    if not driver.get('version'):
        text = 'no driver version.info was found; is the Ascend driver installed?'
        out.append(finding(host, None, 'driver', None, 'version.info', text))
    for version, devices in sorted(npu_drivers.items()):
        if driver.get('version') and version != driver['version']:
            for dev in devices:
                out.append(finding(host, dev, 'driver_loaded', version, driver['version'],
                                   'the NPU runs driver %s but version.info says %s: the installed driver is not the loaded '
                                   'one (reboot pending?)' % (version, driver['version'])))
    if len(npu_firmware) > 1:
        common = max(npu_firmware, key=lambda v: len(npu_firmware[v]))
        for version, devices in npu_firmware.items():
            if version != common:
                for dev in devices:
                    text = 'firmware %s differs from the %s of the other NPUs of the node' % (version, common)
                    out.append(finding(host, dev, 'firmware', version, common, text))
    ranges = driver.get('compatible_version_fw') or []
    for version in sorted(set(list(npu_firmware) + ([firmware['version']] if firmware.get('version') else []))):
        verdicts = [_in_range(version, group[0], group[-1]) for group in ranges if group]
        if ranges and verdicts and not any(verdicts) and None not in verdicts:
            out.append(finding(host, None, 'firmware_pairing', version, ranges,
                               'firmware %s is outside the range driver %s declares (compatible_version_fw %s): known bad'
                               % (version, driver.get('version'), ', '.join('[%s]' % ','.join(g) for g in ranges))))
    if cann.get('version') and driver.get('family'):
        families = cann.get('compatible_version') or []
        if families and driver['family'] not in families:
            out.append(finding(host, None, 'cann_pairing', driver['family'], families,
                               'CANN %s declares the driver families %s, the driver %s is %s: known bad'
                               % (cann['version'], ', '.join(families), driver.get('version'), driver['family'])))
        for row in table.get('cann_hdk') or []:
            if row.get('cann') == cann['version'] and driver.get('version'):
                version = str(driver['version']).lower()
                if not any(version == str(h).lower() or version.startswith(str(h).lower() + '.') for h in row.get('hdk') or []):
                    out.append(finding(host, None, 'cann_hdk', driver['version'], row.get('hdk'),
                                       'driver %s is not among the HDK releases CANN %s is paired with (%s; %s)'
                                       % (driver['version'], cann['version'], ', '.join(row.get('hdk') or []), row.get('source')),
                                       unknown))
    torch_npu, torch = packages.get('torch_npu'), packages.get('torch')
    if torch_npu:
        rows = [r for r in (table.get('torch_npu') or {}).get('rows') or [] if _base(r.get('torch_npu')) == _base(torch_npu)]
        source = (table.get('torch_npu') or {}).get('source')
        if not rows:
            out.append(finding(host, None, 'torch_npu', torch_npu, 'a release of the table',
                               'torch_npu %s is not in the compatibility table (%s): pairing unknown' % (torch_npu, source), unknown))
        else:
            row = rows[0]
            if torch and _base(torch) != row['torch']:
                out.append(finding(host, None, 'torch_pairing', torch, row['torch'],
                                   'torch %s with torch_npu %s, which is built for torch %s (%s): known bad'
                                   % (torch, torch_npu, row['torch'], source)))
            if cann.get('version') and cann['version'] != row['cann']:
                out.append(finding(host, None, 'torch_npu_cann', cann['version'], row['cann'],
                                   'torch_npu %s was tested with CANN %s, this node runs CANN %s (%s)'
                                   % (torch_npu, row['cann'], cann['version'], source), WARN))
    return {'fingerprint': fingerprint, 'findings': out}


def fingerprint_diff(fingerprints):
    """The fields whose value is not the same on every node: [{field, values: {host: value}}]."""
    if not isinstance(fingerprints, dict):
        raise AnsibleFilterError('fingerprint_diff expects {host: fingerprint}, got %s' % type(fingerprints).__name__)
    fields = sorted(set(key for fp in fingerprints.values() for key in (fp or {})))
    out = []
    for field in fields:
        values = dict((host, (fp or {}).get(field)) for host, fp in sorted(fingerprints.items()))
        if len(set(str(v) for v in values.values())) > 1:
            out.append({'field': field, 'values': values})
    return out


def fingerprint_findings(fingerprints):
    """A failure for each node whose value of a field differs from what most nodes have."""
    out = []
    for diff in fingerprint_diff(fingerprints):
        counts = {}
        for value in diff['values'].values():
            counts[str(value)] = counts.get(str(value), 0) + 1
        common = sorted(counts, key=lambda v: (-counts[v], v))[0]
        for host, value in diff['values'].items():
            if str(value) != common:
                out.append(finding(host, None, diff['field'], value, common, '%s is %s while %d other node(s) have %s' % (
                    diff['field'], value, counts[common], common)))
    return out


def fingerprint_drift(previous, current):
    """What changed on which node since the previous run: [{host, field, before, after, msg}]."""
    previous, current = previous or {}, current or {}
    out = []
    if not previous:
        return out
    for host in sorted(set(previous) | set(current)):
        if host not in previous:
            out.append({'host': host, 'field': None, 'before': None, 'after': None, 'msg': '%s: new node since the previous run' % host})
            continue
        if host not in current:
            out.append({'host': host, 'field': None, 'before': None, 'after': None, 'msg': '%s: not in this run' % host})
            continue
        before, after = previous[host] or {}, current[host] or {}
        for field in sorted(set(before) | set(after)):
            if str(before.get(field)) != str(after.get(field)):
                out.append({'host': host, 'field': field, 'before': before.get(field), 'after': after.get(field),
                            'msg': '%s: %s changed from %s to %s' % (host, field, before.get(field), after.get(field))})
    return out


# ---- the PoD part of stage 2: from the nodes' records ------------------------------------------------------------------

def pod_part(records, nodes, previous=None):
    """Stage 2 over the PoD from the nodes' records (``{node: record}``, each with ``data.fingerprint``).

    ``nodes`` gives the order (the play's); a node without a record is left out (the gate names it). ``previous`` is
    the history of the previous run (``{run, nodes: {node: fingerprint}}``). Returns ``fingerprints`` (``{node:
    fingerprint}``), ``differences`` (:func:`fingerprint_diff`), ``pod_findings`` (a failure for each node that
    differs from most nodes), ``findings`` (every node's findings, then those), ``drift`` (:func:`fingerprint_drift`).
    """
    present = [node for node in nodes or [] if node in (records or {})]
    fingerprints = dict((node, ((records[node].get('data') or {}).get('fingerprint') or {})) for node in present)
    pod_findings = fingerprint_findings(fingerprints)
    node_findings = [f for node in present for f in records[node].get('findings') or []]
    before = (previous or {}).get('nodes') if isinstance(previous, dict) else None
    return {'fingerprints': fingerprints, 'differences': fingerprint_diff(fingerprints), 'pod_findings': pod_findings,
            'findings': node_findings + pod_findings,
            'drift': fingerprint_drift(before if isinstance(before, dict) else {}, fingerprints)}


def read_history(path):
    """``(history, problem)``: the fingerprints of the previous run kept at ``path``; ``({}, None)`` when there is none
    yet, ``({}, text)`` when the file cannot be used (then the run compares with nothing and says why)."""
    try:
        with open(path, encoding='utf-8') as handle:
            document = json.load(handle)
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return {}, 'the fingerprints of the previous run (%s) cannot be read (%s); this run is not compared with it' % (
            path, exc)
    if not isinstance(document, dict) or not isinstance(document.get('nodes', {}), dict):
        return {}, 'the fingerprints of the previous run (%s) are not {run, nodes}; this run is not compared with it' % path
    return document, None


def write_history(path, run_id, fingerprints):
    """Keep this run's fingerprints at ``path`` for the next run (atomically: a temporary file, then a rename)."""
    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
    return store.write_json(path, {'run': run_id, 'nodes': fingerprints}, indent=4)
