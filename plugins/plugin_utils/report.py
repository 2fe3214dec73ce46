# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run's report: run_report reads the JSON reports of one run (``{path relative to the run directory: content}``) into
one model that says for every section whether its stage ran; run_report_markdown and run_report_html render that model
(the HTML page is self-contained: inline CSS and an inline SVG chart, no script, every text escaped).
"""

from __future__ import annotations

import html
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.bench import CROSSNODE_INTRA_SOURCE, SCALING_SOURCE, launch_text
from ansible_collections.npuops.ascend.plugins.plugin_utils.figures import figure, is_number, signed
from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import FAIL, WARN
from ansible_collections.npuops.ascend.plugins.plugin_utils.profile import AICORE_SOURCE, COMM_SOURCE, FREE_SOURCE
from ansible_collections.npuops.ascend.plugins.plugin_utils.regression import NOT_RUN

STAGES = (
    (0, 'health_check'), (1, 'baseline'), (2, 'version_check'), (3, 'hccl_bench'), (4, 'roce_lossless'),
    (5, 'hccl_env'), (6, 'numa_bind'), (7, 'mindie_config'), (8, 'io_check'), (9, 'regression'),
)

# stage 0 finding checks -> column of the health matrix
HEALTH_COLUMNS = (
    ('npus', 'NPUs', ('npu', 'npu_count', 'health', 'ecc_multi_bit', 'ecc_single_bit_growing', 'temperature')),
    ('ports', 'ports', ('ports', 'link', 'address', 'net_health', 'ip_conflict', 'netmask', 'tls', 'subnet')),
    ('host', 'NUMA / memory', ('numa', 'numa_node', 'hugepages', 'swappiness', 'nofile', 'host_info')),
    ('pcie', 'PCIe', ('pcie',)),
)


def _mapping(value):
    return value if isinstance(value, Mapping) else {}


# ---- the run's report: model ---------------------------------------------------------------------

def _node_files(sources, folder):
    """{node: content} of <folder>/<node>.json (pod.json and summary-like files left out)."""
    out = {}
    prefix = folder + '/'
    for path, content in sources.items():
        if path.startswith(prefix) and path.endswith('.json') and '/' not in path[len(prefix):]:
            node = path[len(prefix):-len('.json')]
            if node not in ('pod', 'versions', 'baseline', 'regression') and not node.endswith('.snapshot'):
                out[node] = _mapping(content)
    return dict(sorted(out.items()))


def _cell(findings):
    fails = [f for f in findings if f.get('severity') == FAIL]
    warns = [f for f in findings if f.get('severity') == WARN]
    status = FAIL if fails else (WARN if warns else 'ok')
    return {'status': status, 'fails': len(fails), 'warns': len(warns),
            'messages': [str(f.get('msg')) for f in fails + warns]}


def _health(sources):
    nodes = _node_files(sources, 'stage0-health_check')
    if not nodes:
        return {'ran': False}
    rows = []
    for node, data in nodes.items():
        findings = [f for f in data.get('findings') or [] if isinstance(f, Mapping)]
        os_info = _mapping(_mapping(data.get('host_info')).get('os'))
        system = ' '.join(str(v) for v in (os_info.get('pretty_name'), os_info.get('kernel')) if v) or '-'
        cells = {}
        known = set()
        for key, _label, checks in HEALTH_COLUMNS:
            known.update(checks)
            cells[key] = _cell([f for f in findings if f.get('check') in checks])
        cells['other'] = _cell([f for f in findings if f.get('check') not in known])
        rows.append({'node': node, 'os': system, 'cells': cells})
    return {'ran': True, 'columns': [(k, label) for k, label, _c in HEALTH_COLUMNS] + [('other', 'other')], 'rows': rows}


def _stages(summary):
    nodes = _mapping(_mapping(summary).get('nodes'))
    if not nodes:
        return {'ran': False, 'check_mode': False, 'stages': [], 'rows': []}
    roles = dict(STAGES)
    for results in nodes.values():
        for result in _mapping(results).values():
            result = _mapping(result)
            if is_number(result.get('stage')) and result.get('role'):
                roles[int(result['stage'])] = str(result['role'])
    stages = [(number, roles[number]) for number in sorted(roles)]
    rows = []
    for node in sorted(nodes):
        results = _mapping(nodes[node])
        cells = []
        for number, _role in stages:
            result = _mapping(results.get('stage%d' % number))
            cells.append({'stage': number, 'status': str(result.get('status') or NOT_RUN),
                          'failures': [str(m) for m in result.get('failures') or []],
                          'warnings': [str(m) for m in result.get('warnings') or []]})
        rows.append({'node': node, 'cells': cells})
    return {'ran': True, 'check_mode': bool(_mapping(summary).get('check_mode')), 'stages': stages, 'rows': rows}


def _bandwidth(sources):
    intra = []
    for node, data in _node_files(sources, 'stage3-hccl_bench').items():
        band = _mapping(data.get('band'))
        below = data.get('below_band')
        intra.append({'node': node, 'peak_gb_s': data.get('peak_busbw_gb_s'), 'low_gb_s': band.get('low_gb_s'),
                      'theory_gb_s': band.get('theory_gb_s'),
                      'status': FAIL if below else ('ok' if below is not None else '-')})
    pod = _mapping(sources.get('stage4-roce_lossless/pod.json'))
    cross = None
    if pod:
        busbw = _mapping(pod.get('busbw_gb_s'))
        cross = {'before_gb_s': busbw.get('before'), 'after_gb_s': busbw.get('after'), 'gate_gb_s': busbw.get('gate'),
                 'check_mode': bool(pod.get('check_mode'))}
    return {'intra_ran': bool(intra), 'intra': intra, 'cross_ran': cross is not None, 'cross': cross,
            'scaling': _scaling(sources), 'rails': _rails(sources)}


def _hosts_text(hosts):
    hosts = [str(h) for h in hosts or []]
    return ', '.join(hosts) if len(hosts) <= 4 else '%s, %s ... %s' % (hosts[0], hosts[1], hosts[-1])


def _scaling(sources):
    """The scaling ladder of stage 4 (``data.scaling`` of the PoD record ``pod/stage4.json``, bench.scaling_ladder):
    ``{ran, skipped, msg, rungs: [{nodes, hosts, busbw_gb_s, efficiency_pct, pct_of_intra, status}], one_node_gb_s,
    intra_gb_s, intra_from, min_pct, intra_min_pct, findings}``; a cross-node rung is ``fail`` below either limit."""
    scaling = _mapping(_mapping(_mapping(sources.get('pod/stage4.json')).get('data')).get('scaling'))
    if not scaling:
        return {'ran': False}
    min_pct, intra_min = scaling.get('min_pct'), scaling.get('intra_min_pct')
    rungs = []
    for rung in scaling.get('rungs') or []:
        rung = _mapping(rung)
        eff, share = rung.get('efficiency_pct'), rung.get('pct_of_intra')
        if rung.get('nodes') == 1:
            status = 'base'
        elif not is_number(rung.get('busbw_gb_s')):
            status = 'not measured'
        elif (is_number(eff) and is_number(min_pct) and eff < min_pct) or \
                (is_number(share) and is_number(intra_min) and share < intra_min):
            status = FAIL
        else:
            status = 'ok'
        rungs.append({'nodes': rung.get('nodes'), 'hosts': _hosts_text(rung.get('hosts')),
                      'busbw_gb_s': rung.get('busbw_gb_s'), 'efficiency_pct': eff, 'pct_of_intra': share,
                      'status': status, 'msg': rung.get('msg')})
    return {'ran': True, 'skipped': bool(scaling.get('skipped')), 'msg': scaling.get('msg'), 'rungs': rungs,
            'one_node_gb_s': scaling.get('one_node_gb_s'), 'intra_gb_s': scaling.get('intra_gb_s'),
            'intra_from': scaling.get('intra_from'), 'min_pct': min_pct, 'intra_min_pct': intra_min,
            'findings': [str(_mapping(f).get('msg')) for f in scaling.get('findings') or []]}


SCALING_HEADER = ['nodes', 'hosts', 'busbw (GB/s)', 'efficiency %', '% of intra-node', 'result']


def _rails(sources):
    """Each rail on its own (``data.rails`` of ``pod/stage4.json``, bench.rail_check): ``{ran, skipped, msg, why, rows:
    [{device, busbw_gb_s, pct_of_expected, pct_of_median, status}], expected_gb_s, basis, min_pct, findings}``."""
    rails = _mapping(_mapping(_mapping(sources.get('pod/stage4.json')).get('data')).get('rails'))
    if not rails:
        return {'ran': False}
    min_pct = rails.get('min_pct')
    rows = []
    for rail in rails.get('rails') or []:
        rail = _mapping(rail)
        expected, median = rail.get('pct_of_expected'), rail.get('pct_of_median')
        if not is_number(rail.get('busbw_gb_s')):
            status = 'not measured'
        elif is_number(min_pct) and any(is_number(v) and v < min_pct for v in (expected, median)):
            status = FAIL
        else:
            status = 'ok'
        rows.append({'device': rail.get('device'), 'busbw_gb_s': rail.get('busbw_gb_s'), 'pct_of_expected': expected,
                     'pct_of_median': median, 'status': status})
    return {'ran': True, 'skipped': bool(rails.get('skipped')), 'msg': rails.get('msg'), 'why': rails.get('why'),
            'rows': rows, 'expected_gb_s': rails.get('expected_gb_s'), 'basis': rails.get('basis'), 'min_pct': min_pct,
            'findings': [str(_mapping(f).get('msg')) for f in rails.get('findings') or []]}


RAILS_HEADER = ['rail (NPU)', 'busbw (GB/s)', '% of expected', '% of the median rail', 'result']


def _rail_cells(row):
    return [row['device'], row['busbw_gb_s'], row['pct_of_expected'], row['pct_of_median'], row['status']]


def _rails_text(rl):
    return ('Each rail is NPU d of every node over its own port, one NPU per node (measured because %s). Expected %s GB/s '
            '(%s); a rail below %s %% of it or of the median rail fails (roce_lossless_rail_min_pct; %s).' % (
                rl['why'] or 'asked', figure(rl['expected_gb_s']), rl['basis'] or 'the line rate of a port',
                figure(rl['min_pct']), CROSSNODE_INTRA_SOURCE))


def _scaling_cells(rung):
    return [rung['nodes'], rung['hosts'], rung['busbw_gb_s'], rung['efficiency_pct'], rung['pct_of_intra'], rung['status']]


def _unmeasured(sc):
    """Why a rung did not measure, one sentence per such rung."""
    return ['%s node(s) not measured: %s' % (figure(r['nodes']), r['msg'] or 'no figure')
            for r in sc['rungs'] if r['status'] == 'not measured']


def _scaling_text(sc):
    """What the ladder's figures are measured against, with the limits and their sources."""
    return ('Efficiency = busbw of the rung / busbw of the one-node rung (%s GB/s), a cross-node rung at least %s %% '
            '(roce_lossless_scaling_min_pct; %s); share of the intra-node figure %s GB/s (%s), at least %s %% '
            '(roce_lossless_crossnode_min_pct_of_intra; %s).' % (
                figure(sc['one_node_gb_s']), figure(sc['min_pct']), SCALING_SOURCE, figure(sc['intra_gb_s']),
                sc['intra_from'] or 'none', figure(sc['intra_min_pct']), CROSSNODE_INTRA_SOURCE))


# ---- stage 1: where the time of a step goes (profiler) -------------------------------------------------------------

PROFILE_ROWS = (
    ('compute_share_pct', 'computing (% of the step)', None, None, None),
    ('comm_share_pct', 'communication not overlapped (% of the step)', 'comm_max_pct', '<=',
     'baseline_profile_comm_max_pct; ' + COMM_SOURCE),
    ('free_share_pct', 'free: host, data loading, launch (% of the step)', 'free_max_pct', '<=', FREE_SOURCE),
    ('aicore_util_pct', 'AI Core utilisation (%)', 'aicore_min_pct', '>=',
     'baseline_profile_aicore_min_pct; ' + AICORE_SOURCE),
)


def _profile(sources):
    """The split of the profiled steps of stage 1 (``profile`` of ``stage1-baseline/baseline.json``, the same as
    ``data.profile`` of the benchmark host's stage 1 record; profile.profile_record): the means over the profiled ranks
    and steps, each against its limit, and the bottleneck verdict. ``{ran, host, error, step_ms, rows: [{figure,
    value, limit, status, source}], layer, msg, findings}``."""
    kept = _mapping(_mapping(sources.get('stage1-baseline/baseline.json')).get('profile'))
    if not kept:
        return {'ran': False}
    verdict = _mapping(kept.get('bottleneck'))
    figures = _mapping(verdict.get('figures'))
    limits = _mapping(kept.get('thresholds'))
    rows = []
    for key, label, limit_key, sense, source in PROFILE_ROWS:
        value, limit = figures.get(key), limits.get(limit_key) if limit_key else None
        status = '-'
        if is_number(value) and is_number(limit):
            status = 'ok' if (value <= limit if sense == '<=' else value >= limit) else WARN
        rows.append({'figure': label, 'value': value, 'limit': '%s %s' % (sense, figure(limit)) if is_number(limit) else '-',
                     'status': status, 'source': source or '-'})
    step_us = figures.get('step_time_us')
    return {'ran': True, 'host': kept.get('host'), 'error': kept.get('error'), 'rows': rows,
            'step_ms': round(step_us / 1000.0, 2) if is_number(step_us) else None,
            'layer': verdict.get('layer'), 'msg': verdict.get('msg'),
            'findings': [str(_mapping(f).get('msg')) for f in kept.get('findings') or []]}


PROFILE_HEADER = ['figure', 'mean', 'limit', 'result', 'source of the limit']


def _profile_cells(row):
    return [row['figure'], row['value'], row['limit'], row['status'], row['source']]


def _versions(sources):
    data = _mapping(sources.get('stage2-version_check/versions.json'))
    if not data:
        return {'ran': False}
    prints = dict((str(k), _mapping(v)) for k, v in sorted(_mapping(data.get('fingerprints')).items()))
    fields = sorted(set(field for fp in prints.values() for field in fp))
    differing = set(str(_mapping(d).get('field')) for d in data.get('differences') or [])
    return {'ran': True, 'fields': fields, 'differing': sorted(differing),
            'rows': [{'node': node, 'values': [fp.get(field) for field in fields]} for node, fp in prints.items()],
            'drift': [str(_mapping(d).get('msg')) for d in data.get('drift') or []]}


def _switch(sources):
    nodes = _node_files(sources, 'stage4-roce_lossless')
    pod = _mapping(sources.get('stage4-roce_lossless/pod.json'))
    switch = _mapping(pod.get('switch'))
    if not nodes and not switch:
        return {'ran': False}
    findings = []
    for node, data in nodes.items():
        for item in data.get('switch_findings') or []:
            if isinstance(item, Mapping):
                findings.append({'node': node, 'severity': str(item.get('severity') or '-'), 'msg': str(item.get('msg'))})
    neighbours = _mapping(switch.get('neighbours'))
    return {'ran': True, 'findings': findings, 'files': [str(f) for f in switch.get('files') or []],
            'ports': len(neighbours.get('ports') or []), 'unseen': len(neighbours.get('unseen') or []),
            'conflicts': len(neighbours.get('conflicts') or []),
            'skipped': [str(s) for s in switch.get('skipped') or []], 'has_switch': bool(switch)}


def _chart(comparison):
    """Bars of the metrics both runs have: each metric scaled to the larger of its two values."""
    out = []
    for row in comparison.get('metrics') or []:
        old, new = row.get('before'), row.get('after')
        if not (is_number(old) and is_number(new)) or max(abs(old), abs(new)) == 0:
            continue
        top = max(abs(old), abs(new))
        out.append({'metric': row.get('metric'), 'label': str(row.get('label')), 'unit': str(row.get('unit')),
                    'before': old, 'after': new, 'before_frac': round(abs(old) / top, 4),
                    'after_frac': round(abs(new) / top, 4), 'verdict': row.get('verdict')})
    return out


def _launches(data):
    """How stage 1 and stage 9 launched the benchmark, one sentence each."""
    launch = _mapping(data.get('launch'))
    check = _mapping(launch.get('check'))
    return {'before': launch_text(launch.get('before')), 'after': launch_text(launch.get('after')),
            'same': check.get('same') if check else None}


def _regression(sources):
    data = _mapping(sources.get('stage9-regression/regression.json'))
    if not data:
        return {'ran': False}
    comparison = _mapping(data.get('comparison'))
    return {'ran': True, 'host': data.get('host'), 'check_mode': bool(data.get('check_mode')), 'launch': _launches(data),
            'command': data.get('command'), 'baseline_run': _mapping(data.get('baseline')).get('run'),
            'compared': bool(comparison.get('compared')), 'reason': comparison.get('reason') or data.get('reason'),
            'verdict': comparison.get('verdict') or NOT_RUN, 'metrics': list(comparison.get('metrics') or []),
            'improvement_pct': data.get('improvement_pct'), 'tolerance_pct': data.get('tolerance_pct'),
            'findings': [str(_mapping(f).get('msg')) for f in comparison.get('findings') or []],
            'chart': _chart(comparison), 'steps': _steps(data), 'ladder': _training_ladder(comparison),
            'linearity': _linearity(comparison)}


def _training_ladder(comparison):
    """The training benchmark on 1, 2, ... nodes (regression_scaling_command): one row per rung."""
    ladder = _mapping(comparison.get('scaling'))
    rows = []
    for rung in ladder.get('rungs') or []:
        rung = _mapping(rung)
        hosts = list(rung.get('hosts') or [])
        shown = ', '.join(hosts) if len(hosts) <= 3 else '%s, %s ... %s' % (hosts[0], hosts[1], hosts[-1])
        rows.append({'nodes': rung.get('nodes'), 'hosts': shown, 'step_ms': rung.get('mean_ms'),
                     'tflops_per_npu': rung.get('tflops_per_npu'), 'efficiency_pct': rung.get('efficiency_pct'),
                     'status': ('not measured' if not rung.get('measured') else
                                'fail' if (rung.get('efficiency_pct') is not None and rung.get('nodes', 1) > 1
                                           and rung['efficiency_pct'] < (ladder.get('min_pct') or 0)) else 'ok')})
    return {'rows': rows, 'min_pct': ladder.get('min_pct')}


LADDER_HEADER = ['nodes', 'hosts', 'step time (ms)', 'TFLOP/s per NPU', 'efficiency %', 'result']


def _linearity(comparison):
    """The training benchmark on 1, 2, 4, ... NPUs of one node (regression_linearity_command): one row per rung."""
    ladder = _mapping(comparison.get('linearity'))
    rows = []
    for rung in ladder.get('rungs') or []:
        rung = _mapping(rung)
        devices = ', '.join(str(d) for d in rung.get('devices') or [])
        low = (rung.get('efficiency_pct') is not None and (rung.get('npus') or 1) > 1
               and rung['efficiency_pct'] < (ladder.get('min_pct') or 0))
        rows.append({'nodes': rung.get('npus'), 'hosts': devices, 'step_ms': rung.get('mean_ms'),
                     'tflops_per_npu': rung.get('tflops_per_npu'), 'efficiency_pct': rung.get('efficiency_pct'),
                     'status': 'not measured' if not rung.get('measured') else 'warn' if low else 'ok'})
    return {'rows': rows, 'min_pct': ladder.get('min_pct')}


LINEARITY_HEADER = ['NPUs', 'NPU ids', 'step time (ms)', 'TFLOP/s per NPU', 'linearity %', 'result']


def _ladder_cells(row):
    return [row['nodes'], row['hosts'], row['step_ms'], row['tflops_per_npu'], row['efficiency_pct'], row['status']]


def _steps(data):
    """What each tuning stage bought (npuops_measure_each_stage): one row per measurement, each against the one
    before it: ``{stage, against, step_ms, change_pct, tokens_per_s, mfu_pct, spread_pct, verdict}``."""
    out = []
    for row in data.get('steps') or []:
        row = _mapping(row)
        metrics = dict((_mapping(m).get('metric'), _mapping(m)) for m in row.get('metrics') or [])
        step = metrics.get('mean_ms', {})
        stage = row.get('stage')
        out.append({'stage': 'stage 9 (after tuning)' if stage == 9 else 'stage %s (%s)' % (stage, row.get('role')),
                    'against': row.get('against'), 'step_ms': step.get('after'), 'change_pct': step.get('change_pct'),
                    'tokens_per_s': metrics.get('tokens_per_s', {}).get('after'),
                    'mfu_pct': metrics.get('mfu_pct', {}).get('after'), 'spread_pct': row.get('spread_pct'),
                    'verdict': row.get('verdict') or NOT_RUN, 'reason': row.get('reason')})
    return out


STEP_HEADER = ['after', 'against', 'step time (ms)', 'change %', 'tokens/s', 'MFU %', 'spread %', 'verdict']


def _step_cells(row):
    return [row['stage'], row['against'], row['step_ms'], signed(row['change_pct']) if row['change_pct'] is not None else '-',
            row['tokens_per_s'], row['mfu_pct'], row['spread_pct'], row['verdict']]


def run_report(sources, run_id=None):
    """The model of a run's report from its JSON reports ``{path relative to the run directory: content}``."""
    if not isinstance(sources, Mapping):
        raise AnsibleFilterError('run_report expects {path relative to the run directory: parsed JSON}, got %s'
                                 % type(sources).__name__)
    sources = dict((str(k).replace('\\', '/').lstrip('./'), v) for k, v in sources.items())
    summary = _mapping(sources.get('summary.json'))
    return {
        'run': str(run_id or summary.get('run') or '-'),
        'stages': _stages(summary),
        'health': _health(sources),
        'profile': _profile(sources),
        'bandwidth': _bandwidth(sources),
        'regression': _regression(sources),
        'versions': _versions(sources),
        'switch': _switch(sources),
    }


def _model(value, name):
    if not isinstance(value, Mapping):
        raise AnsibleFilterError('%s expects the model of run_report or the sources of a run, got %s' % (name, type(value).__name__))
    return value if 'stages' in value and 'health' in value else run_report(value)


# ---- Markdown ------------------------------------------------------------------------------------

def _md(value):
    """A Markdown table cell: HTML-escaped, pipes and line breaks neutralised."""
    text = html.escape(figure(value) if value is None or is_number(value) else str(value), quote=False)
    return text.replace('|', '\\|').replace('\r', ' ').replace('\n', ' ')


def _md_table(header, rows):
    lines = ['| ' + ' | '.join(_md(h) for h in header) + ' |', '|' + '---|' * len(header)]
    lines.extend('| ' + ' | '.join(_md(c) for c in row) + ' |' for row in rows)
    return lines


def _cell_text(cell):
    if cell['status'] == 'ok':
        return 'OK'
    parts = []
    if cell['fails']:
        parts.append('%d fail' % cell['fails'])
    if cell['warns']:
        parts.append('%d warn' % cell['warns'])
    return ', '.join(parts)


def run_report_markdown(model):
    """The run's report in Markdown."""
    model = _model(model, 'run_report_markdown')
    out = ['# Run %s' % _md(model['run']), '']
    stages = model['stages']
    out += ['## Stage results', '']
    if stages['ran']:
        if stages['check_mode']:
            out += ['Dry run (check mode): the measuring stages were skipped.', '']
        out += _md_table(['node'] + ['%d %s' % tuple(s) for s in stages['stages']],
                         [[row['node']] + [c['status'] for c in row['cells']] for row in stages['rows']])
        problems = [(row['node'], c['stage'], m) for row in stages['rows'] for c in row['cells'] for m in c['failures']]
        if problems:
            out += [''] + ['- stage %d: %s' % (stage, _md(msg)) for _node, stage, msg in problems]
    else:
        out.append('Not run: no summary.json in the run directory.')
    health = model['health']
    out += ['', '## Health (stage 0)', '']
    if health['ran']:
        out += _md_table(['node', 'OS / kernel'] + [label for _k, label in health['columns']],
                         [[r['node'], r['os']] + [_cell_text(r['cells'][k]) for k, _l in health['columns']] for r in health['rows']])
        msgs = [m for r in health['rows'] for k, _l in health['columns'] for m in r['cells'][k]['messages']]
        if msgs:
            out += [''] + ['- %s' % _md(m) for m in msgs]
    else:
        out.append('Not run.')
    prof = model.get('profile') or {'ran': False}
    out += ['', '## Where the time goes (stage 1)', '']
    if not prof['ran']:
        out.append('Not measured.')
    elif prof['error'] or not prof['layer']:
        out.append('Not measured on %s: %s' % (_md(prof['host']), _md(prof['error'] or prof['msg'] or 'no profiled step')))
    else:
        out += ['Means over the profiled ranks and steps of the benchmark on %s (step %s ms), from the torch_npu '
                "profiler's output (baseline_profile_dir)." % (_md(prof['host']), _md(prof['step_ms'])), '']
        out += _md_table(PROFILE_HEADER, [_profile_cells(r) for r in prof['rows']])
        out += ['', 'Bottleneck: **%s**: %s' % (_md(prof['layer']), _md(prof['msg']))]
    if prof['ran'] and prof['findings']:
        out += [''] + ['- %s' % _md(m) for m in prof['findings']]
    bw = model['bandwidth']
    out += ['', '## Bus bandwidth', '', '### Intra-node AllReduce (stage 3)', '']
    if bw['intra_ran']:
        out += _md_table(['node', 'peak busbw (GB/s)', 'gate (GB/s)', 'HCCS theory (GB/s)', 'result'],
                         [[r['node'], r['peak_gb_s'], r['low_gb_s'], r['theory_gb_s'], r['status']] for r in bw['intra']])
    else:
        out.append('Not run.')
    out += ['', '### Cross-node AllReduce (stage 4)', '']
    if bw['cross_ran']:
        c = bw['cross']
        out += _md_table(['before (GB/s)', 'after (GB/s)', 'gate (GB/s)'], [[c['before_gb_s'], c['after_gb_s'], c['gate_gb_s']]])
    else:
        out.append('Not run.')
    sc = bw.get('scaling') or {'ran': False}
    out += ['', '### Scaling ladder (stage 4)', '']
    if not sc['ran']:
        out.append('Not run.')
    elif sc['skipped'] or not sc['rungs']:
        out.append('Not measured: %s' % _md(sc['msg'] or 'no rung'))
    else:
        if sc['msg']:
            out += [_md(sc['msg']), '']
        out += _md_table(SCALING_HEADER, [_scaling_cells(r) for r in sc['rungs']])
        out += ['', _md(_scaling_text(sc))]
        if sc['findings'] or _unmeasured(sc):
            out += [''] + ['- %s' % _md(m) for m in _unmeasured(sc) + sc['findings']]
    rl = bw.get('rails') or {'ran': False}
    if rl['ran']:
        out += ['', '### Rails (stage 4)', '']
        if rl['skipped'] or not rl['rows']:
            out.append('Not measured: %s' % _md(rl['msg'] or 'no rail'))
        else:
            out += _md_table(RAILS_HEADER, [_rail_cells(r) for r in rl['rows']])
            out += ['', _md(_rails_text(rl))]
            out += [''] + ['- %s' % _md(m) for m in rl['findings']] if rl['findings'] else []
    reg = model['regression']
    out += ['', '## Before / after (stage 9)', '']
    if not reg['ran']:
        out.append('Not run.')
    elif not reg['compared']:
        out.append('Not compared: %s' % _md(reg['reason']))
    else:
        args = (_md(reg['host']), _md(reg['baseline_run']), _md(reg['verdict']), _md(reg['improvement_pct']),
                _md(reg['tolerance_pct']))
        out += ['Measured on %s, compared with the stage 1 baseline of run %s: **%s** (improvement from %s %%, '
                'tolerance %s %%).' % args, '']
        out += _md_table(['metric', 'before', 'after', 'change %', 'verdict'],
                         [[_metric_name(m), m['before'], m['after'],
                           signed(m['change_pct']) if m['change_pct'] is not None else '-', m['verdict']]
                          for m in reg['metrics']])
    if reg['ran'] and reg['ladder']['rows']:
        out += ['', '### Training benchmark on 1, 2, ... nodes', '',
                'Scaling efficiency per NPU against one node; below %s %% is the communication gap the method names.'
                % _md(reg['ladder']['min_pct']), '']
        out += _md_table(LADDER_HEADER, [_ladder_cells(r) for r in reg['ladder']['rows']])
    if reg['ran'] and reg['linearity']['rows']:
        out += ['', '### Training benchmark on 1, 2, ... NPUs of one node', '',
                'Linearity per NPU against one NPU; the method gives near %s %% for one node of 8 NPUs (below it is a '
                'warning).' % _md(reg['linearity']['min_pct']), '']
        out += _md_table(LINEARITY_HEADER, [_ladder_cells(r) for r in reg['linearity']['rows']])
    if reg['ran'] and reg['steps']:
        out += ['', '### What each stage bought', '',
                'The benchmark measured right after each tuning stage (npuops_measure_each_stage), each against the '
                'measurement before it.', '']
        out += _md_table(STEP_HEADER, [_step_cells(r) for r in reg['steps']])
    if reg['ran']:
        out += ['', '- Stage 1 launched: %s' % _md(reg['launch']['before']), '- Stage 9 launched: %s' % _md(reg['launch']['after'])]
    if reg['ran'] and reg['findings']:
        out += [''] + ['- %s' % _md(m) for m in reg['findings']]
    ver = model['versions']
    out += ['', '## Versions (stage 2)', '']
    if ver['ran']:
        out += _md_table(['node'] + ver['fields'], [[r['node']] + r['values'] for r in ver['rows']])
        out += ['', 'Fields that differ between nodes: %s.' % (_md(', '.join(ver['differing'])) if ver['differing'] else 'none')]
        out += ['', 'Drift since the previous run: %s' % ('none.' if not ver['drift'] else '')]
        out += ['- %s' % _md(m) for m in ver['drift']]
    else:
        out.append('Not run.')
    sw = model['switch']
    out += ['', '## Switch side (stage 4)', '']
    if sw['ran']:
        if sw['has_switch']:
            out += ['Switch files: %s; %d port(s) in the neighbour map, %d unseen, %d conflict(s).'
                    % (_md(', '.join(sw['files']) or 'none'), sw['ports'], sw['unseen'], sw['conflicts']), '']
        out += ['- **%s** %s' % (_md(f['severity']), _md(f['msg'])) for f in sw['findings']] or ['No switch-side finding.']
    else:
        out.append('Not run.')
    return '\n'.join(out) + '\n'


# ---- HTML ----------------------------------------------------------------------------------------

_CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:24px;color:#1d2733;background:#fff}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:28px 0 8px;border-bottom:2px solid #d0d7de;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border:1px solid #c3cbd4;padding:4px 8px;text-align:left;vertical-align:top}th{background:#eef2f6}
td.passed,td.ok,td.improved{background:#d8f3dc;color:#14532d}td.failed,td.fail,td.regressed{background:#fddcdc;color:#7f1d1d}
td.warn,td.skipped{background:#fff3c4;color:#6b4e00}td.notrun{background:#f2f2f2;color:#6b7280}
td.num{text-align:right;font-variant-numeric:tabular-nums}.notrun{color:#6b7280;font-style:italic}
ul{margin:4px 0 10px;padding-left:20px;font-size:13px}.meta{color:#4b5563;font-size:13px}
"""


def _e(value):
    return html.escape(figure(value) if value is None or is_number(value) else str(value), quote=True)


def _status_class(status):
    return {'not run': 'notrun', 'unchanged': 'ok', 'not available': 'notrun', 'not measured': 'notrun'}.get(status, str(status).replace(' ', ''))


def _html_table(header, rows, table_id=None):
    out = ['<table%s><thead><tr>%s</tr></thead><tbody>' % (' id="%s"' % _e(table_id) if table_id else '',
                                                           ''.join('<th>%s</th>' % _e(h) for h in header))]
    for row in rows:
        cells = []
        for cell in row:
            if isinstance(cell, tuple):
                text, css, title = (cell + (None, None))[:3]
                cells.append('<td%s%s>%s</td>' % (' class="%s"' % _e(css) if css else '',
                                                  ' title="%s"' % _e(title) if title else '', _e(text)))
            else:
                cells.append('<td%s>%s</td>' % (' class="num"' if is_number(cell) else '', _e(cell)))
        out.append('<tr>%s</tr>' % ''.join(cells))
    out.append('</tbody></table>')
    return out


def _html_list(items):
    return ['<ul>'] + ['<li>%s</li>' % _e(i) for i in items] + ['</ul>'] if items else []


def _metric_name(row):
    return row['label'] if row['unit'] == row['label'] else '%s (%s)' % (row['label'], row['unit'])


def _svg_chart(chart):
    """Horizontal bars, before (grey) and after (green when better, red when worse), per metric."""
    bar_h, gap, label_w, width = 16, 14, 170, 560
    plot = width - label_w - 150
    height = 30 + len(chart) * (2 * bar_h + gap)
    out = ['<svg id="regression-chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'role="img" aria-label="before and after of stage 9">' % (width, height, width, height),
           '<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>' % (width, height),
           '<rect x="%d" y="6" width="12" height="12" fill="#8a94a3"/><text x="%d" y="16" font-size="12">before (stage 1)</text>'
           % (label_w, label_w + 16),
           '<rect x="%d" y="6" width="12" height="12" fill="#2f9e44"/><text x="%d" y="16" font-size="12">after (stage 9)</text>'
           % (label_w + 130, label_w + 146)]
    y = 30
    for item in chart:
        colour = '#c92a2a' if item['verdict'] == 'regressed' else '#2f9e44'
        out.append('<text x="0" y="%d" font-size="12">%s</text>' % (y + bar_h + 4, _e(_metric_name(item))))
        for frac, value, fill, cls in ((item['before_frac'], item['before'], '#8a94a3', 'before'),
                                       (item['after_frac'], item['after'], colour, 'after')):
            length = max(1.0, frac * plot)
            out.append('<rect class="bar %s" data-metric="%s" x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>'
                       % (cls, _e(item['metric']), label_w, y, length, bar_h - 2, fill))
            out.append('<text x="%.1f" y="%d" font-size="11">%s</text>' % (label_w + length + 4, y + bar_h - 4, _e(value)))
            y += bar_h
        y += gap
    out.append('</svg>')
    return out


def run_report_html(model):
    """The run's report as one self-contained HTML page (inline CSS and SVG, no script, no external resource)."""
    model = _model(model, 'run_report_html')
    out = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
           '<title>npuops run %s</title>' % _e(model['run']), '<style>%s</style></head><body>' % _CSS,
           '<h1>Ascend PoD performance run %s</h1>' % _e(model['run'])]
    stages = model['stages']
    out.append('<h2 id="stages">Stage results</h2>')
    if stages['ran']:
        if stages['check_mode']:
            out.append('<p class="meta">Dry run (check mode): the measuring stages were skipped.</p>')
        out += _html_table(['node'] + ['%d %s' % tuple(s) for s in stages['stages']],
                           [[row['node']] + [(c['status'], _status_class(c['status']), '; '.join(c['failures'] + c['warnings']))
                                             for c in row['cells']] for row in stages['rows']], 'stage-table')
        out += _html_list(['stage %d: %s' % (c['stage'], m)
                           for row in stages['rows'] for c in row['cells'] for m in c['failures']])
    else:
        out.append('<p class="notrun">Not run: no summary.json in the run directory.</p>')
    health = model['health']
    out.append('<h2 id="health">Health (stage 0)</h2>')
    if health['ran']:
        out += _html_table(['node', 'OS / kernel'] + [label for _k, label in health['columns']],
                           [[r['node'], r['os']] + [(_cell_text(r['cells'][k]), r['cells'][k]['status'],
                                                     '; '.join(r['cells'][k]['messages'])) for k, _l in health['columns']]
                            for r in health['rows']], 'health-matrix')
        out += _html_list([m for r in health['rows'] for k, _l in health['columns'] for m in r['cells'][k]['messages']])
    else:
        out.append('<p class="notrun">Not run.</p>')
    prof = model.get('profile') or {'ran': False}
    out.append('<h2 id="profile">Where the time goes (stage 1)</h2>')
    if not prof['ran']:
        out.append('<p class="notrun">Not measured.</p>')
    elif prof['error'] or not prof['layer']:
        out.append('<p class="notrun">Not measured on %s: %s</p>' % (_e(prof['host']), _e(prof['error'] or prof['msg']
                                                                                          or 'no profiled step')))
    else:
        out.append('<p class="meta">Means over the profiled ranks and steps of the benchmark on %s (step %s ms), from the '
                   "torch_npu profiler's output (baseline_profile_dir).</p>" % (_e(prof['host']), _e(prof['step_ms'])))
        out += _html_table(PROFILE_HEADER, [_profile_cells(r)[:3] + [(r['status'], r['status'] if r['status'] != '-' else None),
                                                                     r['source']] for r in prof['rows']], 'profile-split')
        out.append('<p class="meta">Bottleneck: <b>%s</b>: %s</p>' % (_e(prof['layer']), _e(prof['msg'])))
    if prof['ran']:
        out += _html_list(prof['findings'])
    bw = model['bandwidth']
    out.append('<h2 id="busbw">Bus bandwidth</h2><h3>Intra-node AllReduce (stage 3)</h3>')
    if bw['intra_ran']:
        out += _html_table(['node', 'peak busbw (GB/s)', 'gate (GB/s)', 'HCCS theory (GB/s)', 'result'],
                           [[r['node'], r['peak_gb_s'], r['low_gb_s'], r['theory_gb_s'], (r['status'], r['status'])]
                            for r in bw['intra']], 'busbw-intra')
    else:
        out.append('<p class="notrun">Not run.</p>')
    out.append('<h3>Cross-node AllReduce (stage 4)</h3>')
    if bw['cross_ran']:
        c = bw['cross']
        out += _html_table(['before (GB/s)', 'after (GB/s)', 'gate (GB/s)'],
                           [[c['before_gb_s'], c['after_gb_s'], c['gate_gb_s']]], 'busbw-cross')
    else:
        out.append('<p class="notrun">Not run.</p>')
    sc = bw.get('scaling') or {'ran': False}
    out.append('<h3>Scaling ladder (stage 4)</h3>')
    if not sc['ran']:
        out.append('<p class="notrun">Not run.</p>')
    elif sc['skipped'] or not sc['rungs']:
        out.append('<p class="notrun">Not measured: %s</p>' % _e(sc['msg'] or 'no rung'))
    else:
        if sc['msg']:
            out.append('<p class="meta">%s</p>' % _e(sc['msg']))
        out += _html_table(SCALING_HEADER, [_scaling_cells(r)[:-1] + [(r['status'], _status_class(r['status']))]
                                            for r in sc['rungs']], 'scaling-ladder')
        out.append('<p class="meta">%s</p>' % _e(_scaling_text(sc)))
        out += _html_list(_unmeasured(sc) + sc['findings'])
    rl = bw.get('rails') or {'ran': False}
    if rl['ran']:
        out.append('<h3>Rails (stage 4)</h3>')
        if rl['skipped'] or not rl['rows']:
            out.append('<p class="notrun">Not measured: %s</p>' % _e(rl['msg'] or 'no rail'))
        else:
            out += _html_table(RAILS_HEADER, [_rail_cells(r)[:-1] + [(r['status'], _status_class(r['status']))]
                                              for r in rl['rows']], 'rails')
            out.append('<p class="meta">%s</p>' % _e(_rails_text(rl)))
            out += _html_list(rl['findings'])
    reg = model['regression']
    out.append('<h2 id="regression">Before / after (stage 9)</h2>')
    if not reg['ran']:
        out.append('<p class="notrun">Not run.</p>')
    elif not reg['compared']:
        out.append('<p class="notrun">Not compared: %s</p>' % _e(reg['reason']))
    else:
        args = (_e(reg['host']), _e(reg['baseline_run']), _e(reg['verdict']), _e(reg['improvement_pct']),
                _e(reg['tolerance_pct']))
        out.append('<p class="meta">Measured on %s, compared with the stage 1 baseline of run %s: <b>%s</b> (an improvement '
                   'from %s %%, a regression beyond %s %%).</p>' % args)
        out += _html_table(['metric', 'before', 'after', 'change %', 'verdict'],
                           [[_metric_name(m), m['before'], m['after'],
                             signed(m['change_pct']) if m['change_pct'] is not None else '-',
                             (m['verdict'], _status_class(m['verdict']))] for m in reg['metrics']], 'regression-table')
        if reg['chart']:
            out += _svg_chart(reg['chart'])
    if reg['ran'] and reg['ladder']['rows']:
        out.append('<h3>Training benchmark on 1, 2, ... nodes</h3>')
        out.append('<p class="meta">Scaling efficiency per NPU against one node; below %s %% is the communication gap '
                   'the method names.</p>' % _e(reg['ladder']['min_pct']))
        out += _html_table(LADDER_HEADER, [_ladder_cells(r)[:-1] + [(r['status'], _status_class(r['status']))]
                                           for r in reg['ladder']['rows']], 'training-ladder')
    if reg['ran'] and reg['linearity']['rows']:
        out.append('<h3>Training benchmark on 1, 2, ... NPUs of one node</h3>')
        out.append('<p class="meta">Linearity per NPU against one NPU; the method gives near %s %% for one node of 8 NPUs '
                   '(below it is a warning).</p>' % _e(reg['linearity']['min_pct']))
        out += _html_table(LINEARITY_HEADER, [_ladder_cells(r)[:-1] + [(r['status'], _status_class(r['status']))]
                                              for r in reg['linearity']['rows']], 'linearity-ladder')
    if reg['ran'] and reg['steps']:
        out.append('<h3>What each stage bought</h3>')
        out.append('<p class="meta">The benchmark measured right after each tuning stage (npuops_measure_each_stage), '
                   'each against the measurement before it.</p>')
        step_rows = []
        for r in reg['steps']:
            css = _status_class('regressed' if r['verdict'] == 'worse' else r['verdict'])
            step_rows.append(_step_cells(r)[:-1] + [(r['verdict'], css)])
        out += _html_table(STEP_HEADER, step_rows, 'stage-steps')
    if reg['ran']:
        out.append('<ul class="launch"><li>Stage 1 launched: %s</li><li>Stage 9 launched: %s</li></ul>'
                   % (_e(reg['launch']['before']), _e(reg['launch']['after'])))
        out += _html_list(reg['findings'])
    ver = model['versions']
    out.append('<h2 id="versions">Versions (stage 2)</h2>')
    if ver['ran']:
        out += _html_table(['node'] + ver['fields'],
                           [[r['node']] + [(v, WARN if f in ver['differing'] else None) for f, v in zip(ver['fields'], r['values'])]
                            for r in ver['rows']], 'versions')
        out.append('<p class="meta">Fields that differ between nodes: %s.</p>'
                   % (_e(', '.join(ver['differing'])) if ver['differing'] else 'none'))
        out.append('<p class="meta">Drift since the previous run: %s</p>' % ('none.' if not ver['drift'] else ''))
        out += _html_list(ver['drift'])
    else:
        out.append('<p class="notrun">Not run.</p>')
    sw = model['switch']
    out.append('<h2 id="switch">Switch side (stage 4)</h2>')
    if sw['ran']:
        if sw['has_switch']:
            out.append('<p class="meta">Switch files: %s; %d port(s) in the neighbour map, %d unseen, %d conflict(s).</p>'
                       % (_e(', '.join(sw['files']) or 'none'), sw['ports'], sw['unseen'], sw['conflicts']))
        if sw['findings']:
            out += _html_table(['node', 'severity', 'finding'],
                               [[f['node'], (f['severity'], f['severity']), f['msg']] for f in sw['findings']], 'switch-findings')
        else:
            out.append('<p class="meta">No switch-side finding.</p>')
    else:
        out.append('<p class="notrun">Not run.</p>')
    out.append('</body></html>')
    return '\n'.join(out) + '\n'
