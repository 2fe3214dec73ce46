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
    """'2.5.1+cpu' -> '2.5.1' (a local build tag does not change the release); 'v0.9.1' -> '0.9.1'."""
    text = str(version or '').split('+', maxsplit=1)[0].strip()
    return text[1:] if text[:1] in ('v', 'V') and text[1:2].isdigit() else text


def _leading(version):
    """'5.10.0-60.18.0.50.oe2203.aarch64' -> (5, 10, 0); '3.11.6' -> (3, 11, 6); None without a leading number."""
    parts = []
    for part in str(version or '').strip().split('.'):
        digits = ''
        for char in part:
            if not char.isdigit():
                break
            digits += char
        if not digits:
            break
        parts.append(int(digits))
        if digits != part:
            break
    return tuple(parts) or None


def _at_least(version, floor):
    """Whether ``version`` >= ``floor`` on their leading numbers (missing parts count as 0); None when unknown."""
    value, low = _leading(version), _leading(floor)
    if value is None or low is None:
        return None
    width = max(len(value), len(low))
    return value + (0,) * (width - len(value)) >= low + (0,) * (width - len(low))


def _python_fits(python, row):
    """Whether a Python version lies in the row's [py_min, py_below); None when either is unknown."""
    if not python or not (row.get('py_min') or row.get('py_below')):
        return None
    low = _at_least(python, row['py_min']) if row.get('py_min') else True
    high = not _at_least(python, row['py_below']) if row.get('py_below') else True
    if low is None or high is None:
        return None
    return low and high


def _release_matches(installed, release):
    """Whether a package version is the table's release: equal, or the release followed by a build part
    ('2.1.0' matches '2.1.0', '2.1.0.post1', '2.1.0+cpu'; not '2.1.01')."""
    installed, release = _base(installed), _base(release)
    if not installed or not release:
        return False
    return installed == release or (installed.startswith(release) and not installed[len(release)].isalnum())


def _group(table, key):
    group = table.get(key) or {}
    return (group.get('rows') or [], group.get('source')) if isinstance(group, dict) else ([], None)


def engine_findings(host, stack, table, unknown):
    """The pairings of the engines and training frameworks: vLLM-Ascend with vLLM, torch, torch_npu, CANN and Python;
    MindSpeed with torch and CANN; MindIE with CANN. A release the table lists with another partner is known bad
    (a failure) except for an untested CANN (a warning); a release the table does not know is ``unknown``."""
    out = []
    packages = stack.get('packages') or {}
    cann = (stack.get('cann') or {}).get('version')
    python = stack.get('python')
    torch, torch_npu = packages.get('torch'), packages.get('torch_npu')

    vllm_ascend = packages.get('vllm_ascend')
    if vllm_ascend:
        rows, source = _group(table, 'vllm_ascend')
        row = next((r for r in rows if _base(r.get('vllm_ascend')) == _base(vllm_ascend)), None)
        if row is None:
            out.append(finding(host, None, 'vllm_ascend', vllm_ascend, 'a release of the table',
                               'vLLM-Ascend %s is not in the compatibility table (%s): pairing unknown' % (vllm_ascend, source), unknown))
        else:
            vllm = packages.get('vllm')
            allowed = [str(v) for v in (row.get('vllm') if isinstance(row.get('vllm'), list) else [row.get('vllm')])]
            if not vllm:
                out.append(finding(host, None, 'vllm_ascend_vllm', None, allowed,
                                   'vLLM-Ascend %s is installed without vLLM; it runs on vLLM %s (%s)'
                                   % (vllm_ascend, ' or '.join(allowed), source)))
            elif not any(_release_matches(vllm, v) for v in allowed):
                out.append(finding(host, None, 'vllm_ascend_vllm', vllm, allowed,
                                   'vLLM %s with vLLM-Ascend %s, which is released for vLLM %s (%s): known bad'
                                   % (vllm, vllm_ascend, ' or '.join(allowed), source)))
            if torch and row.get('torch') and _base(torch) != _base(row['torch']):
                out.append(finding(host, None, 'vllm_ascend_torch', torch, row['torch'],
                                   'torch %s with vLLM-Ascend %s, which is released for torch %s (%s): known bad'
                                   % (torch, vllm_ascend, row['torch'], source)))
            if torch_npu and row.get('torch_npu') and _base(torch_npu) != _base(row['torch_npu']):
                out.append(finding(host, None, 'vllm_ascend_torch_npu', torch_npu, row['torch_npu'],
                                   'torch_npu %s with vLLM-Ascend %s, which is released for torch_npu %s (%s): known bad'
                                   % (torch_npu, vllm_ascend, row['torch_npu'], source)))
            if _python_fits(python, row) is False:
                out.append(finding(host, None, 'vllm_ascend_python', python, [row.get('py_min'), row.get('py_below')],
                                   'Python %s is outside the >= %s, < %s that vLLM-Ascend %s supports (%s): known bad'
                                   % (python, row.get('py_min'), row.get('py_below'), vllm_ascend, source)))
            if cann and row.get('cann') and cann != row['cann']:
                out.append(finding(host, None, 'vllm_ascend_cann', cann, row['cann'],
                                   'vLLM-Ascend %s is released with CANN %s, this node runs CANN %s (%s): untested'
                                   % (vllm_ascend, row['cann'], cann, source), WARN))

    mindspeed = packages.get('mindspeed')
    if mindspeed:
        rows, source = _group(table, 'mindspeed')
        row = next((r for r in rows if _release_matches(mindspeed, r.get('mindspeed'))), None)
        if row is None:
            out.append(finding(host, None, 'mindspeed', mindspeed, 'a release of the table',
                               'MindSpeed %s is not in the compatibility table (%s): pairing unknown' % (mindspeed, source), unknown))
        else:
            allowed = [str(v) for v in row.get('torch') or []]
            if torch and allowed and _base(torch) not in allowed:
                out.append(finding(host, None, 'mindspeed_torch', torch, allowed,
                                   'torch %s with MindSpeed %s, which supports torch %s (%s): known bad'
                                   % (torch, mindspeed, ', '.join(allowed), source)))
            if cann and row.get('cann') and cann != row['cann']:
                out.append(finding(host, None, 'mindspeed_cann', cann, row['cann'],
                                   'MindSpeed %s is released with CANN %s, this node runs CANN %s (%s): untested'
                                   % (mindspeed, row['cann'], cann, source), WARN))

    mindie = stack.get('mindie') or {}
    if mindie.get('version'):
        rows, source = _group(table, 'mindie')
        release = mindie.get('release') or mindie['version']
        row = next((r for r in rows if str(r.get('mindie')) == str(release)), None)
        if row is None:
            out.append(finding(host, None, 'mindie', mindie['version'], 'a release of the table',
                               'MindIE %s is not in the compatibility table (%s): pairing unknown' % (mindie['version'], source),
                               unknown))
        elif cann and row.get('cann') and cann != row['cann']:
            out.append(finding(host, None, 'mindie_cann', cann, row['cann'],
                               'MindIE %s is built for CANN %s, this node runs CANN %s (%s): known bad'
                               % (mindie['version'], row['cann'], cann, row.get('source') or source)))
    return out


def platform_findings(host, stack, min_kernel):
    """The CANN kernels package against the toolkit, and the kernel release against the floor."""
    out = []
    cann = (stack.get('cann') or {}).get('version')
    kernels = stack.get('cann_kernels') or {}
    if cann and not kernels.get('release'):
        out.append(finding(host, None, 'cann_kernels', None, cann,
                           'no CANN kernels package (opp_kernel/version.info) next to the CANN %s toolkit: operators '
                           'fall back to online compilation or fail; install the Ascend-cann-kernels package of %s'
                           % (cann, cann), WARN))
    elif cann and kernels.get('release') != cann:
        out.append(finding(host, None, 'cann_kernels', kernels.get('release'), cann,
                           'the CANN kernels package is %s while the toolkit is %s: install the kernels of the same release '
                           '(method: toolkit and kernels of one CANN release)' % (kernels.get('release'), cann)))
    release = (stack.get('kernel') or {}).get('release')
    if min_kernel and release:
        verdict = _at_least(release, min_kernel)
        if verdict is False:
            out.append(finding(host, None, 'kernel', release, '>= %s' % min_kernel,
                               'kernel %s is older than %s (method prerequisite; version_check_min_kernel)' % (release, min_kernel)))
        elif verdict is None:
            out.append(finding(host, None, 'kernel', release, '>= %s' % min_kernel,
                               'kernel release %s has no leading version number to compare with %s' % (release, min_kernel), WARN))
    return out


def version_findings(stack, boards, table, host=None, unknown_is_fatal=False, min_kernel=None):
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
    out.extend(platform_findings(host, stack, min_kernel))
    out.extend(engine_findings(host, stack, table, unknown))
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
    """A failure for each node whose value of a field differs from what most nodes have; when no value is held by more
    nodes than every other (two nodes that disagree), a failure for every node, naming all the values."""
    out = []
    for diff in fingerprint_diff(fingerprints):
        counts = {}
        for value in diff['values'].values():
            counts[str(value)] = counts.get(str(value), 0) + 1
        ranked = sorted(counts, key=lambda v: (-counts[v], v))
        if counts[ranked[0]] == counts[ranked[1]]:
            every = ', '.join('%s %s' % (h, v) for h, v in diff['values'].items())
            for host, value in diff['values'].items():
                out.append(finding(host, None, diff['field'], value, None, '%s is %s; the nodes disagree and no value is held '
                                   'by most of them (%s)' % (diff['field'], value, every)))
            continue
        common = ranked[0]
        holders = [h for h, v in diff['values'].items() if str(v) == common]
        named = ', '.join(holders[:4]) + (', ...' if len(holders) > 4 else '')
        for host, value in diff['values'].items():
            if str(value) != common:
                others = ', '.join('%s %s' % (h, v) for h, v in diff['values'].items() if h != host and str(v) != common)
                text = '%s is %s while %d other node(s) have %s (%s)' % (diff['field'], value, counts[common], common, named)
                if others:
                    text += '; also differing: %s' % others
                out.append(finding(host, None, diff['field'], value, common, text))
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
