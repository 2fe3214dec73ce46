# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the time of a training step goes: the findings, the bottleneck verdict and the before/after comparison
of a profile read by npuops.ascend.profile_info (controller side).

The method wants communication at 10-15 % of a step (COMM_MAX_PCT, the upper end) and the AI Core busy at least 80 %
of it (AICORE_MIN_PCT). The free time of a step (the NPU neither computes nor communicates: host, data loading,
operator launch) has no figure in the method; FREE_MAX_PCT is this collection's default, for the operator to set.
"""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import WARN, finding

COMM_MAX_PCT = 15.0
AICORE_MIN_PCT = 80.0
FREE_MAX_PCT = 10.0
COMM_SOURCE = "the method's 10-15 % communication share of a step"
AICORE_SOURCE = "the method's AI Core utilisation of at least 80 %"
FREE_SOURCE = 'baseline_profile_free_max_pct (the collection default; the method gives no figure)'
SHARES = ('compute_share_pct', 'comm_share_pct', 'free_share_pct', 'aicore_util_pct')
LAYERS = ('compute', 'communication', 'host/IO')


class ProfileError(ValueError):
    pass


def _float(value, name):
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise ProfileError('%s must be a number, got %r' % (name, value)) from exc


def _where(item):
    rank = item.get('rank')
    text = 'rank %s' % rank if rank is not None else 'the profiled rank'
    step = item.get('step')
    return text + (' step %s' % step if step not in (None, '') else '')


def profile_findings(profile, host, comm_max_pct=COMM_MAX_PCT, aicore_min_pct=AICORE_MIN_PCT,
                     free_max_pct=FREE_MAX_PCT):
    """Warnings for each profiled rank and step of ``profile`` (profile_info's result) read on ``host``: the
    not-overlapped communication above ``comm_max_pct`` of the step, the AI Core utilisation below
    ``aicore_min_pct``, the free time above ``free_max_pct``. The device of a finding is the NPU the rank ran on."""
    comm_max = _float(comm_max_pct, 'comm_max_pct')
    aicore_min = _float(aicore_min_pct, 'aicore_min_pct')
    free_max = _float(free_max_pct, 'free_max_pct')
    out = []
    for item in (profile or {}).get('steps') or []:
        device = item.get('device_id')
        where = _where(item)
        comm = item.get('comm_share_pct')
        if comm is not None and comm > comm_max:
            out.append(finding(host, device, 'profile_comm_share', comm, '<= %g' % comm_max,
                               '%s: communication not overlapped by computing takes %.1f %% of the step (%.1f of '
                               '%.1f ms), above %g %% (%s)' % (
                                   where, comm, (item.get('comm_not_overlapped_us') or 0) / 1000.0,
                                   (item.get('step_time_us') or 0) / 1000.0, comm_max, COMM_SOURCE), WARN))
        util = item.get('aicore_util_pct')
        if util is not None and util < aicore_min:
            out.append(finding(host, device, 'profile_aicore_util', util, '>= %g' % aicore_min,
                               '%s: the AI Core is busy %.1f %% of the step (%s), below %g %% (%s)' % (
                                   where, util, item.get('aicore_from'), aicore_min, AICORE_SOURCE), WARN))
        free = item.get('free_share_pct')
        if free is not None and free > free_max:
            out.append(finding(host, device, 'profile_free_share', free, '<= %g' % free_max,
                               '%s: the NPU is free (neither computing nor communicating: host, data loading, '
                               'launch) %.1f %% of the step, above %g %% (%s)' % (where, free, free_max,
                                                                                  FREE_SOURCE), WARN))
    return out


def _means(profile):
    steps = (profile or {}).get('steps') or []
    out = {}
    for key in SHARES + ('step_time_us',):
        values = [item.get(key) for item in steps if item.get(key) is not None]
        out[key] = round(sum(values) / len(values), 2) if values else None
    return out


def bottleneck(profile, comm_max_pct=COMM_MAX_PCT, aicore_min_pct=AICORE_MIN_PCT, free_max_pct=FREE_MAX_PCT):
    """The layer that holds the job back, from the means over the profiled ranks and steps:
    ``{layer, figures, over, msg}``. ``communication`` when its share is above ``comm_max_pct``, ``host/IO`` when the
    free share is above ``free_max_pct`` (the larger excess over its limit wins when both are), else ``compute``
    (the step is spent computing: what remains is the operators themselves, whether or not the AI Core reaches
    ``aicore_min_pct``). ``layer`` None when the profile holds no step figures."""
    comm_max = _float(comm_max_pct, 'comm_max_pct')
    aicore_min = _float(aicore_min_pct, 'aicore_min_pct')
    free_max = _float(free_max_pct, 'free_max_pct')
    figures = _means(profile)
    if figures['step_time_us'] is None:
        return {'layer': None, 'figures': figures, 'over': [], 'msg': 'no profiled step: no verdict'}
    comm, free, util = figures['comm_share_pct'], figures['free_share_pct'], figures['aicore_util_pct']
    excess = []
    if comm is not None and comm > comm_max:
        excess.append((comm - comm_max, 'communication'))
    if free is not None and free > free_max:
        excess.append((free - free_max, 'host/IO'))
    over = [layer for _excess, layer in sorted(excess, reverse=True)]
    layer = over[0] if over else 'compute'
    text = ('step %.1f ms: computing %s %%, communication (not overlapped) %s %% (limit %g), free %s %% (limit %g), '
            'AI Core %s %% (at least %g)' % (
                figures['step_time_us'] / 1000.0, figures['compute_share_pct'], comm, comm_max, free, free_max, util,
                aicore_min))
    if layer == 'communication':
        msg = 'communication holds the job back: %s' % text
    elif layer == 'host/IO':
        msg = 'the host/IO side holds the job back (the NPU waits, free): %s' % text
    elif util is not None and util < aicore_min:
        msg = 'compute holds the job back (communication and free time within their limits, AI Core under %g %%: ' \
              'the operators themselves): %s' % (aicore_min, text)
    else:
        msg = 'compute-bound as wanted (communication and free time within their limits): %s' % text
    return {'layer': layer, 'figures': figures, 'over': over, 'msg': msg}


def profile_record(profile, host, comm_max_pct=COMM_MAX_PCT, aicore_min_pct=AICORE_MIN_PCT,
                   free_max_pct=FREE_MAX_PCT):
    """What the baseline keeps of a profile: ``{host, dirs, steps, summary, bottleneck, thresholds, findings}``."""
    profile = profile or {}
    return {
        'host': host, 'dirs': profile.get('dirs') or [], 'steps': profile.get('steps') or [],
        'summary': profile.get('summary') or {},
        'bottleneck': bottleneck(profile, comm_max_pct, aicore_min_pct, free_max_pct),
        'thresholds': {'comm_max_pct': _float(comm_max_pct, 'comm_max_pct'),
                       'aicore_min_pct': _float(aicore_min_pct, 'aicore_min_pct'),
                       'free_max_pct': _float(free_max_pct, 'free_max_pct')},
        'findings': profile_findings(profile, host, comm_max_pct, aicore_min_pct, free_max_pct),
    }


def compare(before, after):
    """The change of each share between a baseline profile and one after tuning (profile_info results or the
    ``profile`` kept by profile_record): ``{shares: {key: {before, after, change_pp}}, step_time: {before_us,
    after_us, change_pct}, layer: {before, after}}``; a figure missing on either side gives null changes."""
    first, second = _means(before), _means(after)
    shares = {}
    for key in SHARES:
        a, b = first.get(key), second.get(key)
        shares[key] = {'before': a, 'after': b, 'change_pp': round(b - a, 2) if a is not None and b is not None
                       else None}
    a, b = first.get('step_time_us'), second.get('step_time_us')
    layer = {}
    for name, side in (('before', before), ('after', after)):
        kept = (side or {}).get('bottleneck')
        layer[name] = kept.get('layer') if isinstance(kept, dict) else bottleneck(side)['layer']
    return {'shares': shares,
            'step_time': {'before_us': a, 'after_us': b,
                          'change_pct': round(100.0 * (b - a) / a, 2) if a and b is not None else None},
            'layer': layer}
