# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stage 9, the regression check: whether stage 9 launched the benchmark as stage 1 did (launch_check), its measurement
against the stage 1 baseline (regression_compare) and the lines the play prints of it (regression_lines).
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.figures import figure, is_number, signed
from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import FAIL, WARN, finding

NOT_RUN = 'not run'

# metric key of a measurement, label, unit, True when a higher value is better
METRICS = (
    ('mean_ms', 'step time', 'ms', False),
    ('tokens_per_s', 'tokens/s', 'tokens/s', True),
    ('tflops_per_npu', 'TFLOP/s per NPU', 'TFLOP/s', True),
    ('mfu_pct', 'MFU', '%', True),
    ('comm_share_pct', 'communication share', '%', False),
    ('aicore_pct', 'AICore usage', '%', True),
)

# ---- the launch of stage 9 against the launch of stage 1 ----------------------------------------------------------

# field of a launch record, its label, and whether it is observed on the node (compared only when both sides have it)
LAUNCH_FIELDS = (('host', 'node', False), ('command', 'command', False), ('launcher', 'launcher', False),
                 ('run_user', 'run user', False), ('chdir', 'directory', False), ('user', 'user', True),
                 ('cpus_allowed', 'CPUs allowed', True), ('mems_allowed', 'memory nodes allowed', True))


def _shown(value):
    if value is None or value == [] or value == '':
        return 'none'
    return ' '.join(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value)


def launch_check(after, before, change=None, baseline_run=None):
    """Whether stage 9 (``after``) was launched as stage 1 (``before``) was; ``change`` names a difference that is the
    change under test. Returns ``{comparable, same, declared, differences, findings, before_recorded}``."""
    if not isinstance(after, Mapping):
        raise AnsibleFilterError('launch_check expects the launch record of stage 9 (benchmark_launch), got %s'
                                 % type(after).__name__)
    before = before if isinstance(before, Mapping) else {}
    change = change if isinstance(change, str) and change.strip() else None
    host = after.get('host') or 'this node'
    since = ' of run %s' % baseline_run if baseline_run else ''
    out = {'comparable': True, 'same': True, 'declared': change, 'differences': [], 'findings': [],
           'before_recorded': bool(before)}
    if not before:
        out['findings'].append({'host': host, 'device': None, 'check': 'launch', 'value': None, 'expected': 'a launch record',
                                'severity': WARN,
                                'msg': '%s: the stage 1 baseline%s records no launch (it was kept before launches were '
                                       'recorded), so stage 9 cannot check that both ran the same way; run stage 1 again '
                                       'for a baseline that records it' % (host, since)})
        return out
    for key, label, observed in LAUNCH_FIELDS:
        old, new = before.get(key), after.get(key)
        if observed and (old is None or new is None):
            continue
        if (old or None) != (new or None):
            out['differences'].append({'field': key, 'label': label, 'before': old, 'after': new})
    if not out['differences']:
        return out
    out['same'] = False
    text = '; '.join('%s %s -> %s' % (d['label'], _shown(d['before']), _shown(d['after'])) for d in out['differences'])
    labels = ', '.join(d['label'] for d in out['differences'])
    if change:
        out['findings'].append({'host': host, 'device': None, 'check': 'launch', 'value': labels,
                                'expected': 'the launch of stage 1', 'severity': WARN,
                                'msg': '%s: stage 9 was not launched as stage 1%s was (%s); compared anyway because '
                                       'regression_launch_change names it as the change under test: %s'
                                       % (host, since, text, change)})
        return out
    out['comparable'] = False
    out['findings'].append({'host': host, 'device': None, 'check': 'launch', 'value': labels,
                            'expected': 'the launch of stage 1', 'severity': FAIL,
                            'msg': '%s: stage 9 was not launched as stage 1%s was (%s), so its measurement is not compared '
                                   'with the baseline: a different launch can show as a regression or an improvement of its '
                                   'own. Launch stage 9 as stage 1 was launched (regression_command, regression_run_user, '
                                   'regression_launcher), or name the difference as the change under test in '
                                   'regression_launch_change' % (host, since, text)})
    return out


# ---- the comparison with the baseline --------------------------------------------------------------------------

def regression_compare(after, before, host=None, improvement_pct=5.0, tolerance_pct=2.0, spread_warn_pct=2.0,
                       spread_fail_pct=5.0, baseline_run=None, launch=None):
    """Compare a stage 9 measurement (baseline_measure output) with the stage 1 baseline.

    Returns ``{host, compared, reason, metrics: [{metric, label, unit, higher_is_better, before, after, change_pct,
    gain_pct, verdict}], improved: [labels], regressed: [labels], verdict, findings}``; ``verdict`` of a metric is
    ``improved`` (better by improvement_pct or more), ``regressed`` (worse by more than tolerance_pct), ``unchanged``
    or ``not available``. ``launch`` (launch_check of the two launches): a launch of stage 9 that differs from stage 1's
    and is not the declared change under test is not compared; its findings are kept.
    """
    name = 'regression_compare'
    for what, value in (('improvement_pct', improvement_pct), ('tolerance_pct', tolerance_pct),
                        ('spread_warn_pct', spread_warn_pct), ('spread_fail_pct', spread_fail_pct)):
        if not is_number(value) or value < 0:
            raise AnsibleFilterError('%s: %s must be a number of at least 0, got %r' % (name, what, value))
    if after is not None and not isinstance(after, Mapping):
        raise AnsibleFilterError('%s expects the measurement of baseline_measure, got %s' % (name, type(after).__name__))
    if before is not None and not isinstance(before, Mapping):
        raise AnsibleFilterError('%s: the baseline must be a dictionary (baseline.json), got %s' % (name, type(before).__name__))
    host = host or 'this node'
    after, before = after or {}, before or {}
    since = ' of run %s' % baseline_run if baseline_run else ''
    out = {'host': host, 'compared': False, 'reason': None, 'metrics': [], 'improved': [], 'regressed': [],
           'verdict': NOT_RUN, 'findings': []}
    # the measurement's own failures (a run failed, no iteration line) are kept; its spread is judged here
    out['findings'] = [dict(f) for f in after.get('findings') or [] if isinstance(f, Mapping) and f.get('check') != 'spread']
    if not after.get('measured'):
        out['reason'] = after.get('reason') or 'the benchmark was not measured'
        return out
    if not before.get('measured'):
        out['reason'] = 'no stage 1 baseline to compare with (run stage 1 with baseline_command set)'
        out['findings'].append({'host': host, 'device': None, 'check': 'baseline', 'value': None, 'expected': 'baseline.json',
                                'severity': WARN, 'msg': '%s: %s' % (host, out['reason'])})
        return out
    if isinstance(launch, Mapping):
        out['launch'] = launch
        out['findings'] += [dict(f) for f in launch.get('findings') or [] if isinstance(f, Mapping)]
        if not launch.get('comparable', True):
            out['reason'] = 'stage 9 was not launched as stage 1 was (%s): the two measurements are not comparable' % '; '.join(
                '%s %s -> %s' % (d.get('label'), _shown(d.get('before')), _shown(d.get('after')))
                for d in launch.get('differences') or [])
            return out
    spread = after.get('spread_pct')
    if is_number(spread) and spread > spread_warn_pct:
        severity = FAIL if spread > spread_fail_pct else WARN
        limit = spread_fail_pct if severity == FAIL else spread_warn_pct
        out['findings'].append({'host': host, 'device': None, 'check': 'spread', 'value': spread, 'expected': '<= %s %%' % limit,
                                'severity': severity,
                                'msg': '%s: the %d runs after tuning spread by %s %% (mean step times %s ms), above %s %%: the '
                                       'comparison is not reliable; find the noise and run stage 9 again'
                                       % (host, len(after.get('runs') or []), figure(spread, 3),
                                          ', '.join(figure(r.get('mean_ms')) for r in after.get('runs') or []), figure(limit))})
    for key, label, unit, higher in METRICS:
        old, new = before.get(key), after.get(key)
        row = {'metric': key, 'label': label, 'unit': unit, 'higher_is_better': higher, 'before': old, 'after': new,
               'change_pct': None, 'gain_pct': None, 'verdict': 'not available'}
        if key in SHARE_METRICS:
            _share_row(row, host, since, tolerance_pct, out['findings'])
        elif is_number(old) and is_number(new) and old != 0:
            change = (new - old) / abs(old) * 100.0
            gain = change if higher else -change
            row['change_pct'] = round(change, 2)
            row['gain_pct'] = round(gain, 2)
            if gain >= improvement_pct:
                row['verdict'] = 'improved'
                out['improved'].append(label)
            elif -gain > tolerance_pct:
                row['verdict'] = 'regressed'
                out['regressed'].append(label)
                out['findings'].append({
                    'host': host, 'device': None, 'check': 'regression_' + key, 'value': new, 'expected': old,
                    'severity': FAIL,
                    'msg': '%s: %s %s -> %s %s (%s %%) after tuning, worse than the stage 1 baseline%s by more than the '
                           '%s %% tolerance; find what changed since stage 1 (the stage reports of this run) before '
                           'using the PoD' % (host, label, figure(old), figure(new), unit, signed(change), since,
                                              figure(tolerance_pct))})
            else:
                row['verdict'] = 'unchanged'
        out['metrics'].append(row)
    out['compared'] = True
    if out['regressed']:
        out['verdict'] = 'regressed'
    elif out['improved']:
        out['verdict'] = 'improved'
    else:
        out['verdict'] = 'unchanged'
        out['findings'].append({'host': host, 'device': None, 'check': 'improvement', 'value': None,
                                'expected': '>= %s %%' % figure(improvement_pct), 'severity': WARN,
                                'msg': '%s: no metric improved by %s %% or more over the stage 1 baseline%s: the tuning of '
                                       'stages 2-8 does not show in the benchmark' % (host, figure(improvement_pct), since)})
    return out


# the profiler's shares (a percent of the step): judged by the points they move, never a verdict of their own (the
# step time, tokens/s and MFU are the verdict; the shares say where the time went)
SHARE_METRICS = ('comm_share_pct', 'aicore_pct')


def _share_row(row, host, since, tolerance_pct, findings):
    old, new = row['before'], row['after']
    if not (is_number(old) and is_number(new)):
        return
    points = new - old
    gain = points if row['higher_is_better'] else -points
    row['change_pp'] = round(points, 2)
    row['change_pct'] = round(points / abs(old) * 100.0, 2) if old else None
    row['gain_pct'] = round(gain, 2)
    if gain >= tolerance_pct:
        row['verdict'] = 'improved'
    elif -gain > tolerance_pct:
        row['verdict'] = 'worse'
        findings.append({'host': host, 'device': None, 'check': 'profile_' + row['metric'], 'value': new, 'expected': old,
                         'severity': WARN,
                         'msg': '%s: the %s of a step moved from %s %% to %s %% (%s points) since the stage 1 baseline%s: '
                                'see where the time goes in the profiles of both (profile_info)'
                                % (host, row['label'], figure(old), figure(new), signed(points), since)})
    else:
        row['verdict'] = 'unchanged'


def profile_lines(change):
    """Where the time of a step went before and after tuning (profile.compare), in one line; [] without one."""
    if not isinstance(change, Mapping) or not change.get('shares'):
        return []
    labels = (('compute_share_pct', 'computing'), ('comm_share_pct', 'communication not overlapped'),
              ('free_share_pct', 'free'), ('aicore_util_pct', 'AI Core'))
    parts = []
    for key, label in labels:
        share = change['shares'].get(key) or {}
        if share.get('before') is not None or share.get('after') is not None:
            parts.append('%s %s -> %s %%' % (label, figure(share.get('before')), figure(share.get('after'))))
    layer = change.get('layer') or {}
    return ['where the time of a step goes (profiler): %s; held back by %s -> %s'
            % ('; '.join(parts), layer.get('before') or 'unknown', layer.get('after') or 'unknown')]


def regression_lines(comparison, baseline=None):
    """One line per compared metric of regression_compare, for the play's output."""
    comparison = comparison if isinstance(comparison, Mapping) else {}
    host = comparison.get('host') or 'this node'
    against = ' against %s' % baseline if baseline else ''
    if not comparison.get('compared'):
        return ['%s: not compared%s: %s' % (host, against, comparison.get('reason') or 'no measurement')]
    out = ['%s: %s%s' % (host, comparison.get('verdict'), against)]
    for row in comparison.get('metrics') or []:
        if row.get('change_pct') is not None:
            out.append('%s %s -> %s %s (%s %%): %s' % (row['label'], figure(row['before']), figure(row['after']), row['unit'],
                                                       signed(row['change_pct']), row['verdict']))
    return out


# ---- what each tuning stage bought (npuops_measure_each_stage) ------------------------------------------------------

STAGE_ROLES = {4: 'roce_lossless', 5: 'hccl_env', 6: 'numa_bind', 7: 'mindie_config', 8: 'io_check'}
# metric of a stage row: key, label, unit, True when a higher value is better
STEP_METRICS = (('mean_ms', 'step time', 'ms', False), ('tokens_per_s', 'tokens/s', 'tokens/s', True),
                ('mfu_pct', 'MFU', '%', True))


def _step_row(stage, role, host, measurement, previous, previous_label, tolerance_pct, improvement_pct):
    """One row of stage_steps: the measurement after ``stage`` against the one before it."""
    row = {'stage': stage, 'role': role, 'host': host, 'against': previous_label, 'measured': False, 'reason': None,
           'spread_pct': None, 'runs_ms': [], 'verdict': NOT_RUN, 'worse': [], 'better': [], 'metrics': []}
    if not measurement.get('measured'):
        row['reason'] = measurement.get('reason') or 'the benchmark was not measured'
        return row
    row['measured'] = True
    row['spread_pct'] = measurement.get('spread_pct')
    row['runs_ms'] = [r.get('mean_ms') for r in measurement.get('runs') or [] if isinstance(r, Mapping)]
    # a change inside the noise of either measurement is no change: the margin is the larger of the tolerance and
    # the two spreads (each the coefficient of variation of its runs' means)
    spreads = [s for s in (measurement.get('spread_pct'), (previous or {}).get('spread_pct')) if is_number(s)]
    margin = max([tolerance_pct] + spreads)
    row['margin_pct'] = round(margin, 2)
    for key, label, unit, higher in STEP_METRICS:
        old, new = (previous or {}).get(key), measurement.get(key)
        metric = {'metric': key, 'label': label, 'unit': unit, 'before': old, 'after': new, 'change_pct': None,
                  'gain_pct': None}
        if is_number(old) and is_number(new) and old != 0:
            change = (new - old) / abs(old) * 100.0
            gain = change if higher else -change
            metric['change_pct'], metric['gain_pct'] = round(change, 2), round(gain, 2)
            if -gain > margin:
                row['worse'].append(label)
            elif gain >= improvement_pct:
                row['better'].append(label)
        row['metrics'].append(metric)
    compared = [m for m in row['metrics'] if m['gain_pct'] is not None]
    if not compared:
        row['verdict'] = 'not compared'
        row['reason'] = 'nothing to compare with (%s was not measured)' % previous_label
    elif row['worse']:
        row['verdict'] = 'worse'
    elif row['better']:
        row['verdict'] = 'improved'
    else:
        row['verdict'] = 'unchanged'
    return row


def _moved(metric):
    return '%s %s -> %s %s (%s %%)' % (metric['label'], figure(metric['before']), figure(metric['after']), metric['unit'],
                                       signed(metric['change_pct']))


def stage_steps(baseline, measures, host=None, improvement_pct=5.0, tolerance_pct=2.0, after=None):
    """What each tuning stage bought: each measurement kept after a stage (store.read_measures) against the one
    before it (the stage 1 baseline for the first), then stage 9's own measurement (``after``) against the last.

    Returns ``{rows: [{stage, role, host, against, measured, reason, spread_pct, runs_ms, margin_pct, metrics: [{metric,
    label, unit, before, after, change_pct, gain_pct}], worse, better, verdict}], findings}``; a row's verdict is
    ``worse`` when a metric moved the wrong way by more than the larger of ``tolerance_pct`` and the spreads of the
    two measurements, ``improved`` when one gained ``improvement_pct`` or more, else ``unchanged``. A stage that made
    the benchmark worse is a warning naming the stage, its figures and what it was measured against.
    """
    name = 'stage_steps'
    for what, value in (('improvement_pct', improvement_pct), ('tolerance_pct', tolerance_pct)):
        if not is_number(value) or value < 0:
            raise AnsibleFilterError('%s: %s must be a number of at least 0, got %r' % (name, what, value))
    if measures is not None and not isinstance(measures, (list, tuple)):
        raise AnsibleFilterError('%s expects the list of measurements after each stage, got %s' % (name, type(measures).__name__))
    out = {'rows': [], 'findings': []}
    previous = baseline if isinstance(baseline, Mapping) and baseline.get('measured') else None
    previous_label = 'the stage 1 baseline'
    entries = [m for m in measures or [] if isinstance(m, Mapping)]
    entries = sorted(entries, key=lambda m: m.get('stage') if isinstance(m.get('stage'), int) else 99)
    if entries and isinstance(after, Mapping):
        entries.append({'stage': 9, 'role': 'regression', 'host': host, 'measurement': after})
    for entry in entries:
        stage = entry.get('stage')
        role = entry.get('role') or STAGE_ROLES.get(stage, '')
        where = entry.get('host') or host or 'this node'
        measurement = entry.get('measurement') if isinstance(entry.get('measurement'), Mapping) else {}
        row = _step_row(stage, role, where, measurement, previous, previous_label, tolerance_pct, improvement_pct)
        out['rows'].append(row)
        if row['verdict'] == 'worse':
            worse = [m for m in row['metrics'] if m['label'] in row['worse']]
            moved = '; '.join(_moved(m) for m in worse)
            what = 'stage 9 (the run after tuning)' if stage == 9 else 'stage %s (%s)' % (stage, role)
            out['findings'].append({
                'host': where, 'device': None, 'check': 'stage_step', 'value': stage, 'expected': 'no worse than %s'
                % previous_label, 'severity': WARN,
                'msg': '%s: %s made the benchmark worse: %s against %s, beyond the %s %% margin (the larger of the '
                       'tolerance and the two spreads); look at what that stage changed before keeping it'
                       % (where, what, moved, previous_label, figure(row['margin_pct']))})
        if row['measured']:
            previous, previous_label = measurement, ('the measurement after stage %s' % stage)
    return out


def stage_step_lines(steps):
    """One line per row of stage_steps, for the play's output (none when the run measured no stage on its own)."""
    out = []
    for row in (steps or {}).get('rows') or []:
        what = 'stage 9' if row.get('stage') == 9 else 'stage %s (%s)' % (row.get('stage'), row.get('role'))
        if not row.get('measured') or row.get('verdict') == 'not compared':
            out.append('%s: %s' % (what, row.get('reason') or row.get('verdict')))
            continue
        moved = ', '.join('%s %s %%' % (m['label'], signed(m['change_pct'])) for m in row.get('metrics') or []
                          if m.get('change_pct') is not None)
        out.append('%s: %s against %s (%s; spread %s %%)' % (what, row['verdict'], row['against'], moved,
                                                             figure(row.get('spread_pct'), 3)))
    return out


# ---- the training benchmark on 1, 2, ... nodes (regression_scaling_command) ----------------------------------------

SCALING_MIN_PCT = 70.0     # the method: 2 x 8 NPUs falling below 70 % of linear is the communication gap (§一)


def _measured_rungs(results, name, key, host, warmup, min_steps, seq_length):
    """The rungs of a looped benchmark task (each result's ``item`` the rung's count): ``[{<key>, measured, reason,
    mean_ms, tflops_per_npu, tokens_per_s, efficiency_pct, by}]`` in the order of the count, and the efficiency of each
    against the rung of 1 - TFLOP/s per NPU when the log prints it, else the step time of 1 over the rung's (the
    per-NPU batch fixed, as a data-parallel job grows). -> (rungs, the rung of 1 or None)."""
    from ansible_collections.npuops.ascend.plugins.plugin_utils import bench  # pylint: disable=import-outside-toplevel
    if results is not None and not isinstance(results, (list, tuple)):
        raise AnsibleFilterError('%s expects the results of the looped command task, got %s' % (name, type(results).__name__))
    rungs = []
    for result in results or []:
        if not isinstance(result, Mapping) or result.get('skipped'):
            continue
        try:
            count = int(result.get('item'))
        except (TypeError, ValueError):
            continue
        measured = bench.baseline_measure([dict(result, regression_run=count)], host=host, warmup=warmup,
                                          min_steps=min_steps, seq_length=seq_length)
        rung = {key: count, 'measured': bool(measured.get('measured')), 'reason': measured.get('reason'),
                'mean_ms': measured.get('mean_ms'), 'tflops_per_npu': measured.get('tflops_per_npu'),
                'tokens_per_s': measured.get('tokens_per_s'), 'efficiency_pct': None, 'by': None}
        if not rung['measured']:
            texts = [f.get('msg') for f in measured.get('findings') or [] if isinstance(f, Mapping)]
            rung['reason'] = texts[0] if texts else rung['reason']
        rungs.append(rung)
    rungs.sort(key=lambda r: r[key])
    base = next((r for r in rungs if r[key] == 1 and r['measured']), None)
    if base is None:
        return rungs, None
    for rung in rungs:
        if not rung['measured']:
            continue
        if is_number(base['tflops_per_npu']) and is_number(rung['tflops_per_npu']) and base['tflops_per_npu'] > 0:
            rung['efficiency_pct'] = round(rung['tflops_per_npu'] / base['tflops_per_npu'] * 100.0, 1)
            rung['by'] = 'TFLOP/s per NPU'
        elif is_number(base['mean_ms']) and is_number(rung['mean_ms']) and rung['mean_ms'] > 0:
            rung['efficiency_pct'] = round(base['mean_ms'] / rung['mean_ms'] * 100.0, 1)
            rung['by'] = 'step time (per-NPU batch fixed)'
    return rungs, base


def _check_min_pct(name, min_pct):
    if not is_number(min_pct) or not 0 < min_pct <= 100:
        raise AnsibleFilterError('%s: min_pct must be a number above 0 and at most 100, got %r' % (name, min_pct))


def training_ladder(results, pod=None, host=None, warmup=10, min_steps=1, seq_length=None, min_pct=SCALING_MIN_PCT):
    """The training benchmark run once on each rung of nodes (the results of the looped command task, each with
    ``item`` the rung's node count, run on the first nodes of ``pod``): per rung the mean step time and TFLOP/s per NPU,
    and the scaling efficiency against the one-node rung - TFLOP/s per NPU at n nodes over TFLOP/s per NPU on one node
    when the log prints it, else the one-node step time over the step time at n nodes (the per-NPU batch fixed, as a
    data-parallel job grows).

    Returns ``{rungs: [{nodes, hosts, measured, reason, mean_ms, tflops_per_npu, tokens_per_s, efficiency_pct, by}],
    min_pct, findings}``; the first rung below ``min_pct`` is a failure naming the nodes it adds to the rung before.
    """
    name = 'training_ladder'
    _check_min_pct(name, min_pct)
    host = host or 'this node'
    rungs, base = _measured_rungs(results, name, 'nodes', host, warmup, min_steps, seq_length)
    for rung in rungs:
        rung['hosts'] = [str(h) for h in (pod or [])[:rung['nodes']]]
    out = {'rungs': rungs, 'min_pct': min_pct, 'findings': []}
    if base is None:
        if rungs:
            out['reason'] = 'the one-node rung did not measure: no efficiency'
        return out
    previous = []
    for rung in out['rungs']:
        if rung['efficiency_pct'] is not None and rung['nodes'] > 1 and rung['efficiency_pct'] < min_pct:
            added = [h for h in rung['hosts'] if h not in previous] or rung['hosts']
            ladder = ', '.join('%s node%s %s %%' % (r['nodes'], '' if r['nodes'] == 1 else 's', figure(r['efficiency_pct']))
                               for r in out['rungs'] if r['efficiency_pct'] is not None)
            for node in added:
                out['findings'].append({
                    'host': node, 'device': None, 'check': 'training_scaling', 'value': rung['efficiency_pct'],
                    'expected': '>= %s %%' % figure(min_pct), 'severity': FAIL,
                    'msg': '%s: the training benchmark over %d nodes (%s) runs at %s %% of one node per NPU (%s, by %s), '
                           'below the %s %% the method calls the communication gap of a PoD (regression_scaling_min_pct); '
                           'this rung adds %s: check its NPU ports (stage 4) and HCCL settings (stage 5)'
                           % (node, rung['nodes'], ', '.join(rung['hosts']), figure(rung['efficiency_pct']), ladder,
                              rung['by'], figure(min_pct), ', '.join(added))})
            break
        if rung['measured']:
            previous = rung['hosts']
    return out


LINEARITY_MIN_PCT = 95.0   # the method, section 1: the linearity of one node of 8 NPUs is near 95 %
LINEARITY_SOURCE = 'the method, section 1: one node of 8 NPUs scales near 95 % linearly'


def rung_devices(count, devices=None):
    """The NPUs of a rung of ``count`` NPUs inside one node: the first ``count`` of ``devices`` (default 0, 1, ...)."""
    devices = list(range(count)) if devices is None else [int(d) for d in devices]
    return devices[:count]


def linearity_ladder(results, host=None, devices=None, warmup=10, min_steps=1, seq_length=None, min_pct=LINEARITY_MIN_PCT,
                     suspects=None):
    """The training benchmark inside one node on 1, 2, 4, ... NPUs (the results of the looped command task, each with
    ``item`` the rung's NPU count, run on the first NPUs of ``devices``): per rung the mean step time, TFLOP/s per NPU
    and the linearity - the efficiency per NPU against one NPU (as training_ladder computes it across nodes).

    The first rung below ``min_pct`` is a warning (the method gives near 95 % as what a healthy node reaches, not a
    limit it sets) on ``host``, naming the NPUs the rung adds to the one before; ``suspects`` ({device: why}, what an
    earlier stage of the run found on an NPU of the node, e.g. stage 0's throttling) narrows it to those of them.

    Returns ``{rungs: [{npus, devices, measured, reason, mean_ms, tflops_per_npu, tokens_per_s, efficiency_pct, by}],
    min_pct, findings}``."""
    name = 'linearity_ladder'
    _check_min_pct(name, min_pct)
    host = host or 'this node'
    rungs, base = _measured_rungs(results, name, 'npus', host, warmup, min_steps, seq_length)
    for rung in rungs:
        rung['devices'] = rung_devices(rung['npus'], devices)
    out = {'rungs': rungs, 'min_pct': min_pct, 'findings': []}
    if base is None:
        if rungs:
            out['reason'] = 'the rung of one NPU did not measure: no linearity'
        return out
    suspects = dict((int(k), str(v)) for k, v in (suspects or {}).items() if str(k).isdigit())
    previous = []
    for rung in rungs:
        if rung['efficiency_pct'] is not None and rung['npus'] > 1 and rung['efficiency_pct'] < min_pct:
            added = [d for d in rung['devices'] if d not in previous] or rung['devices']
            named = [d for d in added if d in suspects]
            ladder = ', '.join('%s NPU%s %s %%' % (r['npus'], '' if r['npus'] == 1 else 's', figure(r['efficiency_pct']))
                               for r in rungs if r['efficiency_pct'] is not None)
            text = ('the training benchmark on %d NPUs of the node (%s) runs at %s %% of one NPU per NPU (%s, by %s), '
                    'below the %s %% linearity of %s (regression_linearity_min_pct); this rung adds NPU %s'
                    % (rung['npus'], ', '.join(str(d) for d in rung['devices']), figure(rung['efficiency_pct']),
                       ladder, rung['by'], figure(min_pct), LINEARITY_SOURCE, ', '.join(str(d) for d in added)))
            for device in named or [None]:
                why = ('; an earlier stage of this run found on NPU %d: %s' % (device, suspects[device])) if device is not None \
                    else ': check their health (stage 0: throttling, temperature, errors) and the HCCS figure of stage 3'
                out['findings'].append(finding(host, device, 'training_linearity', rung['efficiency_pct'],
                                               '>= %s %%' % figure(min_pct), text + why, severity=WARN))
            break
        if rung['measured']:
            previous = rung['devices']
    return out


def linearity_lines(ladder):
    """One line for the linearity ladder inside a node, for the play's output ([] when it did not run)."""
    rungs = (ladder or {}).get('rungs') or []
    if not rungs:
        return []
    parts = ['%s NPU%s %s' % (r['npus'], '' if r['npus'] == 1 else 's',
                              ('%s %%' % figure(r['efficiency_pct'])) if r['efficiency_pct'] is not None
                              else ('%s ms' % figure(r['mean_ms']) if r['measured'] else 'not measured'))
             for r in rungs]
    unmeasured = [r for r in rungs if not r['measured']]
    why = ('; not measured: %s' % unmeasured[0].get('reason')) if unmeasured and unmeasured[0].get('reason') else ''
    return ['training benchmark inside the node (linearity per NPU against one NPU, near %s %%): %s%s'
            % (figure(ladder.get('min_pct')), ', '.join(parts), why)]


def training_ladder_lines(ladder):
    """One line for the training ladder, for the play's output ([] when it did not run)."""
    rungs = (ladder or {}).get('rungs') or []
    if not rungs:
        return []
    parts = ['%s node%s %s' % (r['nodes'], '' if r['nodes'] == 1 else 's',
                               ('%s %%' % figure(r['efficiency_pct'])) if r['efficiency_pct'] is not None
                               else ('%s ms' % figure(r['mean_ms']) if r['measured'] else 'not measured'))
             for r in rungs]
    return ['training benchmark scaling (efficiency per NPU against one node, at least %s %%): %s'
            % (figure(ladder.get('min_pct')), ', '.join(parts))]
