# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Measurements: the bus bandwidth of stage 3's benchmark (bench_findings) and of a collective (busbw, the cross-node
expectation of stage 4 and its scaling ladder), and the training benchmark of stages 1 and 9 - the statistics of its steps, MFU against the
peak of the NPU model, the measurement of its runs and how it was launched.
"""

from __future__ import annotations

# statistics and the train log parser are imported in the functions that use them: Ansible loads every filter file of
# the collection in each task that uses any of its filters, and the filter files import this module.

import math
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.module_utils._domain.products import PEAK_TFLOPS
from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import short_repr
from ansible_collections.npuops.ascend.plugins.module_utils._parsers.hccl_bench import busbw_factor
from ansible_collections.npuops.ascend.plugins.plugin_utils.figures import figure, is_number
from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import FAIL, WARN, finding


# ---- stage 3: the intra-node bus bandwidth -------------------------------------------------------------------------

def bench_findings(result, host=None):
    """Findings of an hccl_bench result registered with failed_when: false."""
    host = host or 'this node'
    if not isinstance(result, dict) or result.get('skipped'):
        return []
    if 'rows' not in result:
        return [finding(host, None, 'hccl_bench', None, None, 'the benchmark did not run: %s' % result.get('msg'))]
    if not result.get('below_band'):
        return []
    band = result.get('band') or {}
    out = [finding(host, None, 'busbw', result.get('peak_busbw_gb_s'), '>= %s GB/s' % band.get('low_gb_s'),
                   'AllReduce bus bandwidth %s GB/s is below %s GB/s (%s %% of %s GB/s)' % (
                       result.get('peak_busbw_gb_s'), band.get('low_gb_s'), (band.get('percent') or [None])[0],
                       band.get('theory_gb_s')))]
    for busy in result.get('busy') or []:
        out.append(finding(host, busy.get('device'), 'busy', busy.get('pid'), 'no process',
                           'pid %s (%s) holds the NPU during the benchmark' % (busy.get('pid'), busy.get('name'))))
    return out


# What a node's task of stage 3 registered before it became one action call (npuops.ascend.stage_bench): the result a
# task with ``failed_when: false`` keeps, or the result of a task skipped by its condition. The node's JSON report and
# its record are made from it, so that both stay what they were.

NOT_APPLYING = {'changed': False, 'skipped': True, 'skip_reason': 'Conditional result was False',
                'false_condition': 'hccl_bench_applies'}
RECORD_KEYS = ('peak_busbw_gb_s', 'peak_size_bytes', 'ranks', 'below_band', 'skipped', 'msg')


def bench_applies(intra_node_link, hccs=True):
    """Whether stage 3 applies to a node: its chips are not linked over PCIe only. ``intra_node_link`` is what stage 0
    read of the node's product ('' or None when it was not read); then the family the PoD declares decides (``hccs``)."""
    if intra_node_link in ('', None):
        return bool(hccs)
    return intra_node_link != 'PCIe'


def registered(result):
    """A module's result as a task registers it: its output also as lines, ``failed`` always there, without its
    warnings and deprecations (Ansible shows them; the action passes them on)."""
    out = dict((key, value) for key, value in (result or {}).items()
               if not str(key).startswith('_ansible') and key not in ('warnings', 'deprecations'))
    for name in ('stdout', 'stderr'):
        if name in out and name + '_lines' not in out:
            out[name + '_lines'] = (out[name] or '').splitlines()
    out['failed'] = bool(out.get('failed', False))
    return out


def error_text(error):
    """The error of a failed module as text: a module's traceback is a string; anything else (an error object of the
    controller) is given as its text."""
    if isinstance(error, str):
        return error
    return '%s' % (getattr(error, 'message', None) or error or '(traceback unavailable)')


def kept_result(result):
    """A module's result as a task with ``failed_when: false`` registers it: never failed, the error of a failed module
    kept as ``failed_when_suppressed_exception`` (see ``registered``). A result the module skipped (check mode) is kept
    as it is: Ansible does not evaluate failed_when on it."""
    out = registered(result)
    if not out.get('skipped'):
        if out.get('exception') is not None:
            out['failed_when_suppressed_exception'] = error_text(out.pop('exception'))
        out.update(failed=False, failed_when_result=False)
    return out


def bench_record_data(result):
    """The ``data`` of a node's record of stage 3: the figures of its measurement that the PoD's bandwidth table and
    the cross-node gate of stage 4 read, and whether it measured at all."""
    result = result if isinstance(result, dict) else {}
    data = dict((key, result[key]) for key in RECORD_KEYS if key in result)
    data['measured'] = 'rows' in result
    return data


def bench_report(result, host, run_id, findings):
    """The node's JSON report of stage 3: its result with the node, the run and its findings."""
    out = dict(result if isinstance(result, dict) else {})
    out.update(host=host, run=run_id, findings=list(findings))
    return out


# ---- stage 1 on a node: its snapshot before tuning (npuops.ascend.stage_baseline) --------------------------------

SNAPSHOT_PARTS = ('npu', 'ports')


def snapshot_problem(read, host):
    """Why a node's snapshot read (a health_info result) cannot be used - the words of each part that could not be
    read, or 'not read' - or None. A result without ``failed_parts`` stands for the NPUs and the ports."""
    read = read if isinstance(read, Mapping) else {}
    parts = read.get('failed_parts', list(SNAPSHOT_PARTS))
    if not parts:
        return None
    words = []
    for part in parts:
        entry = read.get(part)
        words.append(str(entry['msg']) if isinstance(entry, Mapping) and 'msg' in entry else 'not read')
    return 'Stage 1 could not read %s for its snapshot: %s' % (host, ' | '.join(words))


def snapshot_document(read, stack, host, run_id):
    """The node's snapshot of stage 1: its NPUs, the configuration of its ports (none on a product without RoCE ports,
    whose ports part is skipped) and its software stack (a version_info result as a task registers it)."""
    ports = read.get('ports') if isinstance(read.get('ports'), Mapping) else {}
    return {'host': host, 'run': run_id, 'npu': read.get('npu'), 'ports': ports.get('config', []), 'stack': stack}


def chip_names(npu, also=()):
    """The NPU models a node's NPU read (health_info's npu part; None when not read) shows, then those of ``also`` (what
    stage 0 read), each once, in order: what the node's record of stage 1 keeps for the peak of MFU."""
    summary = npu.get('summary') if isinstance(npu, Mapping) else None
    product = summary.get('product') if isinstance(summary, Mapping) else None
    names = product.get('chip_names') if isinstance(product, Mapping) else None
    out = []
    for name in list(names if isinstance(names, list) else []) + list(also or []):
        if name not in out:
            out.append(name)
    return out


# ---- the arithmetic of a benchmark ---------------------------------------------------------------------------------

def _number(name, what, value):
    if not is_number(value):
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
        if not is_number(value):
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
        if not all(is_number(v) for v in values) or after['iteration'] <= before['iteration'] or after['consumed_tokens'] < before['consumed_tokens']:
            tokens = 0
            seconds = 0.0
            break
        tokens += after['consumed_tokens'] - before['consumed_tokens']
        seconds += (after['iteration'] - before['iteration']) * after['elapsed_ms'] / 1000.0
    if seconds > 0:
        return tokens / seconds, 'consumed_tokens'
    if seq_length is not None:
        used = steps[skip:]
        if all(is_number(step.get('global_batch_size')) for step in used):
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
        if not isinstance(step, Mapping) or not is_number(step.get('elapsed_ms')):
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
    tflops = [step['tflops_per_npu'] for step in steps[skip:] if is_number(step.get('tflops_per_npu'))]
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
    return round(value, digits) if is_number(value) else None


# ---- the peak of the NPU for MFU -----------------------------------------------------------------------------------

PEAK_SOURCE = ('dense FP16/BF16 Cube peak of the %s, %s TFLOP/s, the figure Huawei\'s torchtitan-npu divides by for MFU '
               '(torchtitan_npu/patches/tools/metrics.py)')


def _chip_names(names):
    """The chip names of ``names`` (a string or nested lists of them), upper case, blanks and an Ascend prefix left out."""
    out = []
    stack = [names]
    while stack:
        item = stack.pop()
        if item is None:
            continue
        if isinstance(item, (list, tuple, set)):
            stack.extend(item)
            continue
        text = ''.join(str(item).split()).upper()
        if text.startswith('ASCEND'):
            text = text[len('ASCEND'):]
        if text:
            out.append(text)
    return sorted(set(out))


def npu_peak_tflops(chip_names, given=None):
    """The peak TFLOP/s of one NPU for MFU: ``{tflops, variant, source, sourced, reason}``."""
    names = _chip_names(chip_names)
    variant = names[0] if len(names) == 1 else None
    if given is not None and given != '':
        try:
            value = float(given)
        except (TypeError, ValueError):
            value = None
        if isinstance(given, bool) or value is None or not math.isfinite(value) or value <= 0:
            raise AnsibleFilterError('npu_peak_tflops: the given peak must be a number above 0, got %s' % short_repr(given))
        return {'tflops': value, 'variant': variant, 'sourced': False, 'reason': None,
                'source': 'baseline_peak_tflops (%s TFLOP/s, set by the operator; not checked against a source)' % figure(value, 4)}
    out = {'tflops': None, 'variant': variant, 'source': None, 'sourced': False, 'reason': None}
    if not names:
        out['reason'] = 'the NPU model is not known (no chip name was read): set baseline_peak_tflops to the peak of your NPU'
    elif len(names) > 1:
        out['reason'] = ('the nodes carry different NPU models (%s), so no one peak applies: set baseline_peak_tflops'
                         % ', '.join(names))
    elif variant not in PEAK_TFLOPS:
        out['reason'] = ('no sourced peak is known for the %s: set baseline_peak_tflops to the figure of your NPU from its '
                         'vendor documentation' % variant)
    else:
        out.update(tflops=PEAK_TFLOPS[variant], sourced=True, source=PEAK_SOURCE % (variant, figure(PEAK_TFLOPS[variant], 4)))
    return out


def _peak(peak_tflops):
    """(tflops, source, sourced, note) of the peak given to baseline_measure: a number, an npu_peak_tflops result or None."""
    if isinstance(peak_tflops, Mapping):
        value = peak_tflops.get('tflops')
        if is_number(value) and value > 0:
            return float(value), peak_tflops.get('source'), bool(peak_tflops.get('sourced')), None if peak_tflops.get(
                'sourced') else ('MFU against a peak of %s TFLOP/s set by the operator (baseline_peak_tflops), not checked '
                                 'against a source' % figure(value, 4))
        return None, None, False, 'MFU is not computed: %s' % (peak_tflops.get('reason') or 'no peak TFLOP/s is known')
    if peak_tflops is None or peak_tflops == '':
        return None, None, False, 'no peak TFLOP/s of the NPU is known, so MFU is not computed'
    given = npu_peak_tflops(None, given=peak_tflops)
    return given['tflops'], given['source'], False, ('MFU against a peak of %s TFLOP/s set by the operator '
                                                     '(baseline_peak_tflops), not checked against a source'
                                                     % figure(given['tflops'], 4))


# ---- the warm-up of a run ------------------------------------------------------------------------------------------

def _warmup_split(steps, warmup):
    """(lines left out, iterations measured) of the iteration lines of one run.

    A line covers the iterations since the line before it (the first line: since the same interval before it, or
    from the start). Lines that cover any of the first ``warmup`` iterations are left out. Without increasing
    iteration numbers every line counts as one iteration."""
    numbers = [step.get('iteration') for step in steps]
    whole = all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in numbers)
    if numbers and whole and all(b > a for a, b in zip(numbers, numbers[1:])):
        first = numbers[1] - numbers[0] if len(numbers) > 1 else numbers[0]
        starts = [max(0, numbers[0] - first)] + numbers[:-1]
        skip = sum(1 for start in starts if start < warmup)
        return skip, (numbers[-1] - starts[skip]) if skip < len(numbers) else 0
    skip = min(warmup, len(steps))
    return skip, len(steps) - skip


def baseline_measure(results, host=None, warmup=10, seq_length=None, peak_tflops=None, warn_pct=2.0, fail_pct=5.0,
                     min_steps=40):
    """Measure the benchmark runs of the baseline role (the results of its looped command task).

    Returns ``{measured, reason, runs: [{run, rc, count, steps, mean_ms, stdev_ms, tokens_per_s, tflops_per_npu,
    mfu_pct}], mean_ms, spread_pct, tokens_per_s, tflops_per_npu, mfu_pct, warmup_steps, min_steps, peak_tflops,
    peak_source, peak_sourced, mfu_note, findings}``; a finding of severity fail for a run that failed, printed no
    iteration line or measured fewer than ``min_steps`` iterations after the ``warmup`` ones, and for a spread above
    the limits (warn / fail).
    """
    import statistics  # pylint: disable=import-outside-toplevel
    from ansible_collections.npuops.ascend.plugins.module_utils._parsers.train_log import parse_train_log  # pylint: disable=import-outside-toplevel
    _whole('baseline_measure', 'warmup', warmup, 0)
    _whole('baseline_measure', 'min_steps', min_steps, 0)
    host = host or 'this node'
    peak, peak_source, peak_sourced, mfu_note = _peak(peak_tflops)
    out = {'measured': False, 'reason': None, 'runs': [], 'mean_ms': None, 'spread_pct': None, 'tokens_per_s': None,
           'tflops_per_npu': None, 'mfu_pct': None, 'findings': [], 'warmup_steps': warmup, 'min_steps': min_steps,
           'peak_tflops': peak, 'peak_source': peak_source, 'peak_sourced': peak_sourced, 'mfu_note': mfu_note}
    results = [r for r in (results or []) if isinstance(r, Mapping)]
    if not results:
        out['reason'] = 'no benchmark ran (baseline_command is empty)'
        return out
    if all(r.get('skipped') for r in results):
        out['reason'] = 'a measurement is skipped in check mode'
        return out
    for index, result in enumerate(results, 1):
        run = result.get('baseline_run', result.get('regression_run', index))
        where = '%s (run %s)' % (host, run)
        if result.get('rc') != 0:
            text = (result.get('stderr') or result.get('msg') or '').strip().splitlines()
            out['findings'].append({'host': host, 'device': None, 'check': 'benchmark', 'value': result.get('rc'), 'expected': 0,
                                    'severity': FAIL, 'msg': '%s: the benchmark command failed (rc=%s): %s' % (
                                        where, result.get('rc'), text[-1] if text else 'no output')})
            continue
        steps = parse_train_log(result.get('stdout') or '')['steps']
        if not steps:
            out['findings'].append({'host': host, 'device': None, 'check': 'benchmark', 'value': 0, 'expected': 'iteration lines',
                                    'severity': FAIL,
                                    'msg': "%s: the benchmark printed no iteration line ('iteration N/M | ... | elapsed time "
                                           "per iteration (ms): ... |'): check that it is a MindSpeed / Megatron training run "
                                           "and that its log reaches stdout" % where})
            continue
        skip, measured = _warmup_split(steps, warmup)
        last = steps[-1].get('iteration', len(steps))
        if skip >= len(steps):
            out['findings'].append({'host': host, 'device': None, 'check': 'steps', 'value': 0, 'expected': '>= %d' % max(min_steps, 1),
                                    'severity': FAIL,
                                    'msg': '%s: the %d iteration line(s) the benchmark printed end at iteration %s, within the %d '
                                           'warm-up iteration(s) left out (baseline_warmup_steps): nothing is left to measure; '
                                           'run more iterations' % (where, len(steps), last, warmup)})
            continue
        if measured < min_steps:
            out['findings'].append({'host': host, 'device': None, 'check': 'steps', 'value': measured, 'expected': '>= %d' % min_steps,
                                    'severity': FAIL,
                                    'msg': '%s: %d iteration(s) measured after the %d warm-up iteration(s) left out (the log '
                                           'ends at iteration %s), fewer than %d: the method runs 50-100 iterations, leaves out '
                                           'the first 10 and averages 40; run more iterations, or lower baseline_min_steps'
                                           % (where, measured, warmup, last, min_steps)})
            continue
        stats = step_stats(steps, skip=skip, seq_length=seq_length)
        tflops = stats['tflops_per_npu']
        out['runs'].append({'run': run, 'rc': 0, 'count': stats['count'], 'steps': measured, 'mean_ms': _r(stats['mean_ms']),
                            'stdev_ms': _r(stats['stdev_ms']), 'tokens_per_s': _r(stats['tokens_per_s'], 1),
                            'tflops_per_npu': _r(tflops), 'mfu_pct': _r(mfu(tflops, peak)) if tflops and peak else None})
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
        severity = FAIL
    elif len(means) > 1 and out['spread_pct'] > warn_pct:
        severity = WARN
    else:
        severity = None
    if severity:
        out['findings'].append({'host': host, 'device': None, 'check': 'spread', 'value': out['spread_pct'],
                                'expected': '<= %s %%' % (warn_pct if severity == WARN else fail_pct), 'severity': severity,
                                'msg': '%s: the %d runs spread by %s %% (mean step times %s ms), above %s %%: noise; find it '
                                       'before tuning' % (host, len(means), out['spread_pct'], ', '.join(str(m) for m in means),
                                                          warn_pct if severity == WARN else fail_pct)})
    return out


# ---- how a benchmark was launched ----------------------------------------------------------------------------------

# A run user drops root's rights for the benchmark alone: runuser (util-linux) runs the command as the user without a
# login shell (so an account with /sbin/nologin works), in a new session (setsid) so that it has no controlling terminal
# of root's to write into; --wait returns the command's exit code.
RUN_AS = ('setsid', '--wait', 'runuser', '-u')
_USER_FIRST = 'abcdefghijklmnopqrstuvwxyz_'
_USER_REST = _USER_FIRST + '0123456789-.'


def _text_or_none(name, what, value):
    if value is None or value == '':
        return None
    if not isinstance(value, str):
        raise AnsibleFilterError('%s: %s must be a string, got %s %s' % (name, what, type(value).__name__, short_repr(value)))
    return value


def _probe(probe):
    """{user, uid, cpus_allowed, mems_allowed, probe_error} from the results of the probe task (``id``, then the
    ``Cpus_allowed_list`` / ``Mems_allowed_list`` lines of /proc/self/status, both run the way the benchmark runs)."""
    import re  # pylint: disable=import-outside-toplevel
    found = {'user': None, 'uid': None, 'cpus_allowed': None, 'mems_allowed': None, 'probe_error': None}
    results = probe.get('results') if isinstance(probe, Mapping) else probe
    for result in results or []:
        if not isinstance(result, Mapping) or result.get('skipped'):
            continue
        if result.get('rc') != 0:
            text = (result.get('stderr') or result.get('msg') or result.get('stdout') or '').strip().splitlines()
            found['probe_error'] = found['probe_error'] or (text[-1] if text else 'rc=%s' % result.get('rc'))
            continue
        stdout = result.get('stdout') or ''
        match = re.search(r'uid=(\d+)\(([^)]*)\)', stdout)
        if match:
            found['uid'], found['user'] = int(match.group(1)), match.group(2)
        for key, label in (('cpus_allowed', 'Cpus_allowed_list'), ('mems_allowed', 'Mems_allowed_list')):
            match = re.search(r'(?m)^%s:\s*(\S+)' % label, stdout)
            if match:
                found[key] = match.group(1)
    return found


def benchmark_launch(config, probe=None):
    """How a benchmark is launched: the configured command, launcher and run user, and (from ``probe``) the user and
    the CPUs and memory nodes the kernel lets it use."""
    import shlex  # pylint: disable=import-outside-toplevel
    name = 'benchmark_launch'
    if not isinstance(config, Mapping):
        raise AnsibleFilterError('%s expects a dict {host, command, launcher, launcher_args, run_user, chdir, environment, '
                                 'env_file}, got %s' % (name, type(config).__name__))
    command = _text_or_none(name, 'command', config.get('command'))
    launcher = _text_or_none(name, 'launcher', config.get('launcher'))
    args = config.get('launcher_args') or []
    if not isinstance(args, (list, tuple)) or not all(isinstance(a, (str, int)) and not isinstance(a, bool) for a in args):
        raise AnsibleFilterError('%s: launcher_args must be a list of strings, got %s' % (name, short_repr(args)))
    run_user = _text_or_none(name, 'run_user', config.get('run_user'))
    if run_user is not None and (run_user[0] not in _USER_FIRST or any(c not in _USER_REST for c in run_user) or len(run_user) > 32):
        raise AnsibleFilterError('%s: run_user %s is not a user name (lower case letters, digits, _, - and ., starting with a '
                                 'letter or _)' % (name, short_repr(run_user)))
    environment = config.get('environment') or {}
    if not isinstance(environment, Mapping):
        raise AnsibleFilterError('%s: environment must be a dict, got %s' % (name, type(environment).__name__))
    launch_words = ([launcher] + [str(a) for a in args]) if launcher else []
    prefix = (list(RUN_AS) + [run_user, '--'] if run_user else []) + launch_words
    record = {'host': _text_or_none(name, 'host', config.get('host')), 'command': command, 'launcher': launch_words,
              'run_user': run_user, 'prefix': prefix, 'prefix_text': ' '.join(shlex.quote(word) for word in prefix),
              'chdir': _text_or_none(name, 'chdir', config.get('chdir')), 'environment': sorted(str(k) for k in environment),
              'env_file': _text_or_none(name, 'env_file', config.get('env_file')), 'observed': False, 'user': None,
              'uid': None, 'cpus_allowed': None, 'mems_allowed': None, 'probe_error': None}
    if probe is not None:
        record.update(_probe(probe))
        record['observed'] = record['user'] is not None
    return record


def launch_text(record):
    """One sentence that says how a benchmark was launched, from its launch record."""
    if not isinstance(record, Mapping) or not record:
        return 'not recorded'
    notes = []
    if record.get('uid') is not None:
        notes.append('uid %s' % record['uid'])
    if record.get('run_user'):
        notes.append('through runuser')
    user = record.get('user') or record.get('run_user') or 'the connection user'
    text = '`%s` on %s as %s%s' % (record.get('command') or '-', record.get('host') or '-', user,
                                   ' (%s)' % ', '.join(notes) if notes else '')
    launcher = record.get('launcher') or []
    text += ', through `%s`' % ' '.join(str(w) for w in launcher) if launcher else ', without a launcher (no binding of its own)'
    if record.get('cpus_allowed') or record.get('mems_allowed'):
        text += ', allowed CPUs %s and memory nodes %s' % (record.get('cpus_allowed') or '?', record.get('mems_allowed') or '?')
    if record.get('chdir'):
        text += ', in %s' % record['chdir']
    env = list(record.get('environment') or [])
    if record.get('env_file'):
        env.insert(0, 'the variables of %s' % record['env_file'])
    if env:
        text += '; environment: %s' % ', '.join(env)
    if record.get('probe_error'):
        text += ' (the launch could not be observed: %s)' % record['probe_error']
    return text


# ---- the bus bandwidth expected across nodes -----------------------------------------------------------------------

def crossnode_busbw_expected(line_rate, npus_per_node, pct=80, intra=None, intra_floor=None):
    """The bus bandwidth (GB/s, as hccl_test's busbw of every rank) expected of a cross-node AllReduce and its gate.

    Returns ``{expected_gb_s, gate_gb_s, pct, rails_gb_s, intra_gb_s, intra_from, basis}``: the NPUs per node, one RoCE
    port each, times the line rate of a port, capped by the intra-node bus bandwidth (the lowest of ``intra``, stage 3's
    peaks; without them ``intra_floor``)."""
    name = 'crossnode_busbw_expected'
    rate = _number(name, 'the line rate of a port', line_rate)
    if rate <= 0:
        raise AnsibleFilterError('%s: the line rate of a port must be above 0 GB/s, got %s' % (name, short_repr(line_rate)))
    ports = _whole(name, 'npus_per_node', npus_per_node, 1)
    share = _number(name, 'pct', pct)
    if not 0 < share <= 100:
        raise AnsibleFilterError('%s: pct must be above 0 and at most 100, got %s' % (name, short_repr(pct)))
    peaks = [v for v in (intra or []) if is_number(v) and v > 0] if isinstance(intra, (list, tuple)) else (
        [intra] if is_number(intra) and intra > 0 else [])
    rails = rate * ports
    out = {'pct': share, 'rails_gb_s': round(rails, 3), 'intra_gb_s': None, 'intra_from': None}
    if peaks:
        out['intra_gb_s'], out['intra_from'] = round(min(peaks), 3), 'stage 3'
    elif is_number(intra_floor) and intra_floor > 0:
        out['intra_gb_s'], out['intra_from'] = round(intra_floor, 3), 'the stage 3 gate'
    expected = min(rails, out['intra_gb_s']) if out['intra_gb_s'] else rails
    out['expected_gb_s'] = round(expected, 3)
    out['gate_gb_s'] = round(expected * share / 100.0, 3)
    basis = '%d ports x %s GB/s = %s GB/s' % (ports, figure(rate, 4), figure(rails, 4))
    if out['intra_from'] == 'stage 3':
        basis += ', capped by the intra-node busbw stage 3 measured (%s GB/s on the slowest node)' % figure(out['intra_gb_s'], 4)
    elif out['intra_from']:
        basis += ', capped by the lowest intra-node busbw stage 3 accepts (%s GB/s; stage 3 did not run in this play)' % figure(
            out['intra_gb_s'], 4)
    out['basis'] = 'expected %s GB/s: %s' % (figure(expected, 4), basis)
    return out


# ---- stage 4: the scaling ladder of the PoD's AllReduce ------------------------------------------------------------

# At most this many rungs by default: 1 node, the PoD, and powers of two between, thinned evenly on a big PoD.
SCALING_MAX_RUNGS = 8
SCALING_SOURCE = ('the method, section 1: AllReduce linearity near 95 % on one node of 8 NPUs, below 70 % on 2 x 8 is '
                  'the communication gap (RoCE retransmission, PFC back-pressure, algorithm not matching the topology)')
CROSSNODE_INTRA_SOURCE = 'the method, stage 4: the 2-node re-test reaches at least 85 % of the intra-node level'


def _thin(counts, limit):
    """``counts`` (sorted, first 1, last the PoD) cut to ``limit``: the first, the last and evenly spaced ones between."""
    if len(counts) <= limit:
        return counts
    middle = counts[1:-1]
    want = limit - 2
    picked = [middle[round(index * (len(middle) - 1) / max(want - 1, 1))] for index in range(want)] if want > 0 else []
    return [counts[0]] + sorted(set(picked)) + [counts[-1]]


def scaling_rungs(pod_nodes, rungs=None, max_rungs=SCALING_MAX_RUNGS):
    """The node counts of the scaling ladder over a PoD of ``pod_nodes`` nodes: 1 (the base of the efficiency), the
    counts of ``rungs`` that fit the PoD (empty or None: 2, 4, 8, ... below the PoD) and the PoD itself, in order;
    the default ladder keeps at most ``max_rungs`` rungs (1, the PoD and evenly spaced powers of two between)."""
    name = 'scaling_rungs'
    pod = _whole(name, 'pod_nodes', pod_nodes, 1)
    _whole(name, 'max_rungs', max_rungs, 2)
    if rungs in (None, '', []):
        counts = [1]
        while counts[-1] * 2 < pod:
            counts.append(counts[-1] * 2)
        return _thin(sorted(set(counts + [pod])), max_rungs)
    if not isinstance(rungs, (list, tuple)):
        raise AnsibleFilterError('%s: rungs must be a list of node counts, got %s' % (name, short_repr(rungs)))
    for value in rungs:
        _whole(name, 'a rung (a node count)', value, 1)
    return sorted(set([1, pod] + [value for value in rungs if value <= pod]))


def _pct(value, base):
    return round(value / base * 100.0, 1) if is_number(value) and is_number(base) and base > 0 else None


def _rung_text(rung):
    return '%d node%s %s GB/s' % (rung['nodes'], '' if rung['nodes'] == 1 else 's', figure(rung.get('busbw_gb_s'), 1))


def _ladder_blame(rungs, index, pairwise, culprit_ports):
    """(nodes, {node: [(device, why)]}, how) for the first rung that drops (``rungs[index]``): the pairwise search's
    slow nodes in it, else the nodes it adds to the rung before (all of its nodes after the one-node rung, whose ports
    carry nothing); the NPU of a named node from the read of its ports (the port that stands out)."""
    # the pairwise search's verdict and port read (plugins/plugin_utils/roce/pairwise.py) name the slow node and port
    from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.pairwise import (  # pylint: disable=import-outside-toplevel
        _ports_by_culprit, _standing_out)
    from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.ports import by_device  # pylint: disable=import-outside-toplevel
    hosts = list(rungs[index]['hosts'])
    before = rungs[index - 1]['hosts'] if index > 1 else []
    added = [host for host in hosts if host not in before]
    pairwise = pairwise if isinstance(pairwise, Mapping) else {}
    culprits = list(pairwise.get('culprits') or ([pairwise['culprit']] if pairwise.get('culprit') else []))
    named = [host for host in culprits if host in hosts]
    if named:
        how = 'the pairwise search names %s' % ', '.join(named)
    elif len(added) == 1:
        named, how = added, '%s is the node this rung adds' % added[0]
    else:
        named = added
        why = 'the pairwise search needs more than 2 nodes' if len(hosts) <= 2 else 'the pairwise search named none of them'
        how = 'the ladder cannot tell %s apart (%s)' % (', '.join(added), why)
    ports = _ports_by_culprit(culprits, culprit_ports) if culprits else {}
    npus = {}
    for host in named:
        if host in ports and ports[host].get('devices'):
            out = _standing_out(by_device(ports[host]))
            npus[host] = [(dev, ', '.join(out[dev])) for dev in sorted(out)]
    return named, npus, how


def scaling_ladder(rungs, intra=None, min_pct=70.0, intra_min_pct=85.0, pairwise=None, culprit_ports=None):
    """The scaling ladder of the PoD's AllReduce and its findings.

    ``rungs``: ``[{nodes, hosts, busbw_gb_s (None when it did not measure), msg}]``, the first the one-node rung.
    ``intra``: the intra-node figure of stage 3 (crossnode_busbw_expected's ``intra_gb_s`` with ``intra_from``, or a
    number); without it the one-node rung stands for it. ``pairwise`` / ``culprit_ports``: the pairwise search's
    verdict and the read of its slow nodes' ports, which name the node and NPU of a rung that drops.

    Returns ``{rungs: [{nodes, hosts, busbw_gb_s, efficiency_pct, pct_of_intra, msg}], one_node_gb_s, intra_gb_s,
    intra_from, min_pct, intra_min_pct, findings}``: efficiency is a rung's busbw over the one-node rung's; a finding
    (fail) for the first cross-node rung below ``min_pct`` (the scaling gap), else for the first below ``intra_min_pct``
    of the intra-node figure, each named after the node (and NPU) the ladder or the pairwise search points at.
    """
    name = 'scaling_ladder'
    for what, value in (('min_pct', min_pct), ('intra_min_pct', intra_min_pct)):
        if not is_number(value) or not 0 < value <= 100:
            raise AnsibleFilterError('%s: %s must be above 0 and at most 100, got %s' % (name, what, short_repr(value)))
    if not isinstance(rungs, (list, tuple)) or not rungs or not all(isinstance(r, Mapping) for r in rungs):
        raise AnsibleFilterError('%s: rungs must be a non-empty list of {nodes, hosts, busbw_gb_s}, got %s'
                                 % (name, short_repr(rungs)))
    rows = []
    for rung in rungs:
        busbw = rung.get('busbw_gb_s')
        rows.append({'nodes': rung.get('nodes'), 'hosts': list(rung.get('hosts') or []),
                     'busbw_gb_s': busbw if is_number(busbw) else None, 'msg': rung.get('msg')})
    base = rows[0]['busbw_gb_s'] if rows[0]['nodes'] == 1 else None
    if isinstance(intra, Mapping):
        intra_gb_s, intra_from = intra.get('intra_gb_s'), intra.get('intra_from')
        if intra_from != 'stage 3':  # a floor of the gate is no measurement: the one-node rung stands for it
            intra_gb_s, intra_from = None, None
    else:
        intra_gb_s, intra_from = intra, 'stage 3' if is_number(intra) else None
    if not is_number(intra_gb_s) or intra_gb_s <= 0:
        intra_gb_s, intra_from = base, 'the one-node rung' if base else None
    for row in rows:
        row['efficiency_pct'] = _pct(row['busbw_gb_s'], base)
        row['pct_of_intra'] = _pct(row['busbw_gb_s'], intra_gb_s) if row['nodes'] != 1 else None
    out = {'rungs': rows, 'one_node_gb_s': base, 'intra_gb_s': intra_gb_s, 'intra_from': intra_from,
           'min_pct': min_pct, 'intra_min_pct': intra_min_pct, 'findings': []}
    if base is None or base <= 0:
        out['msg'] = 'the one-node rung did not measure (%s): no efficiency' % (rows[0].get('msg') or 'no figure')
        return out
    ladder = ', '.join(_rung_text(row) + ('' if row['efficiency_pct'] is None else ' (%s %%)' % figure(row['efficiency_pct'], 1))
                       for row in rows)
    checks = (('scaling', 'efficiency_pct', min_pct, 'of the one-node figure %s GB/s' % figure(base, 1), SCALING_SOURCE),
              ('crossnode_intra', 'pct_of_intra', intra_min_pct, 'of the intra-node figure %s GB/s (%s)' % (
                  figure(intra_gb_s, 1), intra_from), CROSSNODE_INTRA_SOURCE))
    for check, key, limit, of_what, source in checks:
        index = next((i for i, row in enumerate(rows) if row['nodes'] != 1 and row[key] is not None and row[key] < limit),
                     None)
        if index is None:
            continue
        row = rows[index]
        named, npus, how = _ladder_blame(rows, index, pairwise, culprit_ports)
        text = ('the AllReduce over %d nodes (%s) reaches %s GB/s, %s %% %s, below %s %% (%s); the ladder: %s; %s' % (
            row['nodes'], ', '.join(row['hosts']), figure(row['busbw_gb_s'], 1), figure(row[key], 1), of_what,
            figure(limit), source, ladder, how))
        for host in named or [row['hosts'][0]]:
            ports = npus.get(host) or []
            if ports:
                for device, why in ports:
                    out['findings'].append(finding(host, device, check, row[key], '>= %s %%' % figure(limit),
                                                   '%s; its port stands out: %s' % (text, why)))
            else:
                out['findings'].append(finding(host, None, check, row[key], '>= %s %%' % figure(limit), text + (
                    '; no port of it was read or stands out, so the NPU is not named' if host in named else '')))
        break  # the scaling gap covers the rung below the intra-node share as well
    return out


# ---- stage 4: each rail on its own ---------------------------------------------------------------------------------

RAIL_MEDIAN_SOURCE = 'the rails of one PoD share the fabric and the settings, so one far below the others is its own port'


def _middle(values):
    values = sorted(values)
    if not values:
        return None
    half = len(values) // 2
    return values[half] if len(values) % 2 else (values[half - 1] + values[half]) / 2.0


def _rail_blame(device, hosts, pairwise, culprit_ports):
    """[(node, why)] and how for rail ``device``: the nodes whose port ``device`` stands out in the pairwise search's
    read of its slow nodes' ports, else the slow nodes the search names, else the first of ``hosts``."""
    from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.pairwise import (  # pylint: disable=import-outside-toplevel
        _ports_by_culprit, _standing_out)
    from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.ports import by_device  # pylint: disable=import-outside-toplevel
    pairwise = pairwise if isinstance(pairwise, Mapping) else {}
    culprits = [str(h) for h in (pairwise.get('culprits') or ([pairwise['culprit']] if pairwise.get('culprit') else []))]
    if not culprits and isinstance(culprit_ports, Mapping) and isinstance(culprit_ports.get('results'), list):
        culprits = [str(item.get('item')) for item in culprit_ports['results'] if isinstance(item, Mapping) and item.get('item')]
    if hosts:
        culprits = [host for host in culprits if host in hosts]
    ports = _ports_by_culprit(culprits, culprit_ports) if culprits else {}
    standing = []
    for host in culprits:
        if host in ports and ports[host].get('devices'):
            out = _standing_out(by_device(ports[host]))
            if device in out:
                standing.append((host, 'its port stands out in the read of the slow nodes\' ports: %s' % ', '.join(out[device])))
    if standing:
        return standing
    if culprits:
        return [(host, 'the pairwise search names %s; no read of its ports singles out port %d' % (host, device))
                for host in culprits]
    first = hosts[0] if hosts else None
    return [(first, 'the port read does not tell which node\'s port %d it is (no slow node was named and read: the '
                    'pairwise search runs below the gate on 3 nodes or more); check port %d of every node of the rail'
             % (device, device))]


def rail_check(runs, line_rate_gb_s, intra=None, min_pct=85.0, culprit_ports=None, pairwise=None, hosts=None):
    """Each rail on its own: NPU d of every node over its own port (hccl_bench's ``runs`` with ``rails``, one run per
    NPU id with one NPU per node), against what one port carries and against the other rails.

    ``runs``: ``[{device, peak_busbw_gb_s}]`` or ``{device, failed: true, msg}``. The expected figure of a rail is the
    port's line rate capped by the intra-node figure (crossnode_busbw_expected with one port; ``intra`` its result or a
    number). ``hosts``: the nodes of the rails (inventory names), the first named when the ports do not tell the node;
    ``pairwise`` / ``culprit_ports``: the pairwise search's verdict and its read of the slow nodes' ports.

    Returns ``{rails: [{device, busbw_gb_s, pct_of_expected, pct_of_median, msg}], expected_gb_s, median_gb_s,
    min_pct, basis, findings}``: a rail below ``min_pct`` of the expected figure is a finding (``crossnode_rail``,
    fail), and so is a rail below ``min_pct`` of the median of the rails; each names NPU d and the node whose port d
    stands out (else the pairwise search's slow nodes, else the first node). A rail that did not run is a warning."""
    name = 'rail_check'
    if not is_number(min_pct) or not 0 < min_pct <= 100:
        raise AnsibleFilterError('%s: min_pct must be above 0 and at most 100, got %s' % (name, short_repr(min_pct)))
    usable = isinstance(runs, (list, tuple)) and all(
        isinstance(r, Mapping) and isinstance(r.get('device'), int) and not isinstance(r.get('device'), bool) for r in runs)
    if not usable:
        raise AnsibleFilterError('%s: runs must be a list of {device, peak_busbw_gb_s} (hccl_bench with rails), got %s'
                                 % (name, short_repr(runs)))
    if isinstance(intra, Mapping):
        cap, source = intra.get('intra_gb_s'), intra.get('intra_from')
    else:
        cap, source = intra, 'stage 3' if is_number(intra) else None
    if source == 'stage 3':
        expected = crossnode_busbw_expected(line_rate_gb_s, 1, min_pct, intra=cap)
    else:
        expected = crossnode_busbw_expected(line_rate_gb_s, 1, min_pct, intra_floor=cap)
    expected_gb_s = expected['expected_gb_s']
    basis = 'the line rate of one port %s GB/s' % figure(expected['rails_gb_s'], 3)
    if expected['intra_gb_s'] is not None and expected['intra_gb_s'] < expected['rails_gb_s']:
        basis += ', capped by the intra-node busbw %s GB/s (%s)' % (figure(expected['intra_gb_s'], 3), expected['intra_from'])
    hosts = [str(h) for h in hosts or []]
    if not hosts and runs:
        hosts = [str(h) for h in runs[0].get('hosts') or []]
    rows = []
    for run in runs:
        busbw = run.get('peak_busbw_gb_s')
        measured = is_number(busbw) and not run.get('failed')
        rows.append({'device': run['device'], 'busbw_gb_s': busbw if measured else None,
                     'pct_of_expected': _pct(busbw, expected_gb_s) if measured else None, 'pct_of_median': None,
                     'msg': None if measured else (run.get('msg') or 'the rail did not measure')})
    median = _middle([row['busbw_gb_s'] for row in rows if row['busbw_gb_s'] is not None])
    for row in rows:
        row['pct_of_median'] = _pct(row['busbw_gb_s'], median)
    out = {'rails': rows, 'expected_gb_s': expected_gb_s, 'median_gb_s': None if median is None else round(median, 3),
           'min_pct': min_pct, 'basis': basis, 'findings': []}
    listing = ', '.join('NPU %d %s' % (row['device'], figure(row['busbw_gb_s'], 1)) for row in rows)
    nodes = ', '.join(hosts) or 'the nodes'
    for row in rows:
        device = row['device']
        what = 'rail %d (NPU %d of %s, each over its own port)' % (device, device, nodes)
        if row['busbw_gb_s'] is None:
            out['findings'].append(finding(hosts[0] if hosts else None, device, 'crossnode_rail', None,
                                           '>= %s GB/s' % figure(expected_gb_s * min_pct / 100.0),
                                           '%s did not measure: %s' % (what, row['msg']), WARN))
            continue
        if row['pct_of_expected'] < min_pct:
            text = ('%s reaches %s GB/s, %s %% of the %s GB/s one port is expected to carry (%s), below %s %% (%s)'
                    % (what, figure(row['busbw_gb_s'], 2), figure(row['pct_of_expected'], 1), figure(expected_gb_s, 2),
                       basis, figure(min_pct), CROSSNODE_INTRA_SOURCE))
            value = row['pct_of_expected']
        elif row['pct_of_median'] is not None and row['pct_of_median'] < min_pct:
            text = ('%s reaches %s GB/s, %s %% of the median of the rails %s GB/s, below %s %% (%s), although it meets '
                    'the expected %s GB/s' % (what, figure(row['busbw_gb_s'], 2), figure(row['pct_of_median'], 1),
                                              figure(median, 2), figure(min_pct), RAIL_MEDIAN_SOURCE,
                                              figure(expected_gb_s, 2)))
            value = row['pct_of_median']
        else:
            continue
        for host, why in _rail_blame(device, hosts, pairwise, culprit_ports):
            out['findings'].append(finding(host, device, 'crossnode_rail', value, '>= %s %%' % figure(min_pct),
                                           '%s; the rails: %s; %s' % (text, listing, why)))
    return out
