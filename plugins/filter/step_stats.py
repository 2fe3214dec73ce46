# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Performance arithmetic for training and collective benchmarks: step_stats, cv_percent, mfu, busbw.

The documentation of each filter is in the .yml file of the same name next to this file.
"""

from __future__ import annotations

# statistics and the train log parser are imported in the filters that use them: Ansible loads every filter file of
# the collection in each task that uses any of its filters, so a file keeps its own load light.

import math
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import short_repr
from ansible_collections.npuops.ascend.plugins.module_utils._parsers.hccl_bench import busbw_factor


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _number(name, what, value):
    if not _is_number(value):
        raise AnsibleFilterError('%s: %s must be a finite number, got %s %s' % (name, what, type(value).__name__, short_repr(value)))
    return value


def _whole(name, what, value, lowest):
    if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
        raise AnsibleFilterError('%s: %s must be an integer of at least %d, got %s' % (name, what, lowest, short_repr(value)))
    return value


def cv_percent(values):
    """Coefficient of variation in percent: sample standard deviation / |mean| x 100; [] or one value -> 0.0."""
    import statistics  # pylint: disable=import-outside-toplevel
    if not isinstance(values, (list, tuple)):
        raise AnsibleFilterError('cv_percent expects a list of numbers, got %s %s' % (type(values).__name__, short_repr(values)))
    for index, value in enumerate(values):
        if not _is_number(value):
            raise AnsibleFilterError('cv_percent: element %s at index %d is not a finite number' % (short_repr(value), index))
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    if mean == 0:
        raise AnsibleFilterError('cv_percent: the mean of %s is 0, so the coefficient of variation is not defined'
                                 % short_repr(list(values)))
    return statistics.stdev(values) / abs(mean) * 100.0


def _tokens_per_s(steps, skip, seq_length):
    """(tokens/s, how) over the measured steps: consumed tokens between log lines, else global batch x seq_length."""
    tokens = 0
    seconds = 0.0
    for index in range(max(skip, 1), len(steps)):
        before, after = steps[index - 1], steps[index]
        values = (before.get('consumed_tokens'), after.get('consumed_tokens'), before.get('iteration'), after.get('iteration'))
        if not all(_is_number(v) for v in values) or after['iteration'] <= before['iteration'] or after['consumed_tokens'] < before['consumed_tokens']:
            tokens = 0
            seconds = 0.0
            break
        tokens += after['consumed_tokens'] - before['consumed_tokens']
        seconds += (after['iteration'] - before['iteration']) * after['elapsed_ms'] / 1000.0
    if seconds > 0:
        return tokens / seconds, 'consumed_tokens'
    if seq_length is not None:
        used = steps[skip:]
        if all(_is_number(step.get('global_batch_size')) for step in used):
            seconds = sum(step['elapsed_ms'] for step in used) / 1000.0
            if seconds > 0:
                return sum(step['global_batch_size'] for step in used) * seq_length / seconds, 'global_batch_size x seq_length'
    return None, None


def step_stats(steps, skip=2, seq_length=None):
    """Statistics of the iteration times of train_log_parse steps, leaving out the first ``skip`` (warm-up) steps."""
    import statistics  # pylint: disable=import-outside-toplevel
    if isinstance(steps, Mapping) and 'steps' in steps:
        steps = steps['steps']
    if not isinstance(steps, (list, tuple)):
        raise AnsibleFilterError('step_stats expects the list of steps of train_log_parse, got %s %s'
                                 % (type(steps).__name__, short_repr(steps)))
    for index, step in enumerate(steps):
        if not isinstance(step, Mapping) or not _is_number(step.get('elapsed_ms')):
            raise AnsibleFilterError('step_stats: step %s at index %d has no elapsed_ms number' % (short_repr(step), index))
    _whole('step_stats', 'skip', skip, 0)
    if seq_length is not None:
        _whole('step_stats', 'seq_length', seq_length, 1)
    if skip >= len(steps):
        raise AnsibleFilterError('step_stats: skip=%d leaves no step to measure: the log has %d step%s. Use a smaller skip or '
                                 'a longer run.' % (skip, len(steps), '' if len(steps) == 1 else 's'))
    steps = [dict(step) for step in steps]
    times = [step['elapsed_ms'] for step in steps[skip:]]
    mean = statistics.fmean(times)
    stdev = statistics.stdev(times) if len(times) > 1 else 0.0
    tflops = [step['tflops_per_npu'] for step in steps[skip:] if _is_number(step.get('tflops_per_npu'))]
    tokens_per_s, source = _tokens_per_s(steps, skip, seq_length)
    return {
        'count': len(times),
        'skipped_warmup': skip,
        'mean_ms': mean,
        'median_ms': statistics.median(times),
        'stdev_ms': stdev,
        'cv_percent': stdev / mean * 100.0 if mean > 0 else 0.0,
        'min_ms': min(times),
        'max_ms': max(times),
        'tokens_per_s': tokens_per_s,
        'tokens_per_s_from': source,
        'tflops_per_npu': statistics.fmean(tflops) if tflops else None,
    }


def mfu(achieved_tflops_per_npu, peak_tflops_per_npu):
    """Model FLOPs utilisation in percent: achieved / peak x 100."""
    achieved = _number('mfu', 'the achieved TFLOPS per NPU', achieved_tflops_per_npu)
    peak = _number('mfu', 'the peak TFLOPS per NPU', peak_tflops_per_npu)
    if peak <= 0:
        raise AnsibleFilterError('mfu: the peak TFLOPS per NPU must be positive, got %s' % short_repr(peak))
    if achieved < 0:
        raise AnsibleFilterError('mfu: the achieved TFLOPS per NPU cannot be negative, got %s' % short_repr(achieved))
    return achieved / peak * 100.0


# operation -> factor of the bus bandwidth over the algorithm bandwidth for n ranks (nccl-tests PERFORMANCE.md)
_BUSBW = {
    'allreduce': busbw_factor,                                  # 2(n-1)/n
    'allgather': lambda ranks: busbw_factor(ranks) / 2.0,       # (n-1)/n
    'reducescatter': lambda ranks: busbw_factor(ranks) / 2.0,   # (n-1)/n
    'alltoall': lambda ranks: busbw_factor(ranks) / 2.0,        # (n-1)/n
    'broadcast': lambda ranks: 1.0,
}


def busbw(algbw_gb_s, ranks, op='allreduce'):
    """Bus bandwidth from the algorithm bandwidth of a collective over ``ranks`` ranks."""
    algbw = _number('busbw', 'the algorithm bandwidth', algbw_gb_s)
    if algbw < 0:
        raise AnsibleFilterError('busbw: the algorithm bandwidth cannot be negative, got %s' % short_repr(algbw))
    _whole('busbw', 'ranks', ranks, 1)
    key = str(op).lower().replace('_', '').replace('-', '').replace(' ', '') if isinstance(op, str) else None
    if key not in _BUSBW:
        raise AnsibleFilterError('busbw: unknown operation %s; known operations: %s' % (short_repr(op), ', '.join(sorted(_BUSBW))))
    return algbw * _BUSBW[key](ranks)


def _r(value, digits=2):
    return round(value, digits) if _is_number(value) else None


def baseline_measure(results, host=None, warmup=2, seq_length=None, peak_tflops=None, warn_pct=2.0, fail_pct=5.0):
    """Measure the benchmark runs of the baseline role (the results of its looped command task).

    Returns ``{measured, reason, runs: [{run, rc, count, mean_ms, stdev_ms, tokens_per_s, tflops_per_npu, mfu_pct}],
    mean_ms, spread_pct, tokens_per_s, tflops_per_npu, mfu_pct, findings}``; a finding of severity fail or warn
    for a run that failed or printed no iteration line, and for a spread above the limits.
    """
    import statistics  # pylint: disable=import-outside-toplevel
    from ansible_collections.npuops.ascend.plugins.module_utils._parsers.train_log import parse_train_log  # pylint: disable=import-outside-toplevel
    host = host or 'this node'
    out = {'measured': False, 'reason': None, 'runs': [], 'mean_ms': None, 'spread_pct': None, 'tokens_per_s': None,
           'tflops_per_npu': None, 'mfu_pct': None, 'findings': []}
    results = [r for r in (results or []) if isinstance(r, Mapping)]
    if not results:
        out['reason'] = 'no benchmark ran (baseline_command is empty)'
        return out
    if all(r.get('skipped') for r in results):
        out['reason'] = 'a measurement is skipped in check mode'
        return out
    for index, result in enumerate(results, 1):
        run = result.get('baseline_run', index)
        where = '%s (run %s)' % (host, run)
        if result.get('rc') != 0:
            text = (result.get('stderr') or result.get('msg') or '').strip().splitlines()
            out['findings'].append({'host': host, 'device': None, 'check': 'benchmark', 'value': result.get('rc'), 'expected': 0,
                                    'severity': 'fail', 'msg': '%s: the benchmark command failed (rc=%s): %s' % (
                                        where, result.get('rc'), text[-1] if text else 'no output')})
            continue
        parsed = parse_train_log(result.get('stdout') or '')
        try:
            stats = step_stats(parsed['steps'], skip=warmup, seq_length=seq_length)
        except AnsibleFilterError as exc:
            out['findings'].append({'host': host, 'device': None, 'check': 'benchmark', 'value': len(parsed['steps']),
                                    'expected': 'iteration lines', 'severity': 'fail',
                                    'msg': '%s: the %d iteration line(s) the benchmark printed could not be measured: %s'
                                           % (where, len(parsed['steps']), exc)})
            continue
        tflops = stats['tflops_per_npu']
        out['runs'].append({'run': run, 'rc': 0, 'count': stats['count'], 'mean_ms': _r(stats['mean_ms']),
                            'stdev_ms': _r(stats['stdev_ms']), 'tokens_per_s': _r(stats['tokens_per_s'], 1),
                            'tflops_per_npu': _r(tflops), 'mfu_pct': _r(mfu(tflops, peak_tflops)) if tflops and peak_tflops else None})
    if out['findings'] or not out['runs']:
        out['reason'] = 'the benchmark did not give a measurement on every run'
        return out
    means = [run['mean_ms'] for run in out['runs']]
    out['measured'] = True
    out['mean_ms'] = _r(statistics.fmean(means))
    out['spread_pct'] = _r(cv_percent(means), 3)
    for key in ('tokens_per_s', 'tflops_per_npu', 'mfu_pct'):
        values = [run[key] for run in out['runs'] if run[key] is not None]
        out[key] = _r(statistics.fmean(values)) if values else None
    if len(means) > 1 and out['spread_pct'] > fail_pct:
        severity = 'fail'
    elif len(means) > 1 and out['spread_pct'] > warn_pct:
        severity = 'warn'
    else:
        severity = None
    if severity:
        out['findings'].append({'host': host, 'device': None, 'check': 'spread', 'value': out['spread_pct'],
                                'expected': '<= %s %%' % (warn_pct if severity == 'warn' else fail_pct), 'severity': severity,
                                'msg': '%s: the %d runs spread by %s %% (mean step times %s ms), above %s %%: noise; find it '
                                       'before tuning' % (host, len(means), out['spread_pct'], ', '.join(str(m) for m in means),
                                                          warn_pct if severity == 'warn' else fail_pct)})
    return out


class FilterModule:
    """npuops.ascend performance filters."""

    def filters(self):
        return {
            'step_stats': step_stats,
            'baseline_measure': baseline_measure,
            'cv_percent': cv_percent,
            'mfu': mfu,
            'busbw': busbw,
        }
