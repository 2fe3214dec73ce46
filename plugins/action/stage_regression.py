# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of npuops.ascend.stage_regression: the PoD part of stage 9 (the regression check), once, after the
benchmark's runs.

``step: compare`` measures the runs after tuning against the peak stage 1 used (or the operator's), checks that the
benchmark was launched as stage 1 launched it, compares the measurement with the stage 1 baseline, writes
``<run dir>/stage9-regression/regression.json`` and records every node of the play (the findings name the node that
ran the benchmark; ``skipped`` when nothing was measured). With the measurements a run kept after each tuning stage
(npuops_measure_each_stage), it also says what each stage bought (``steps``: each against the one before it).

``step: stage`` (npuops_measure_each_stage) measures the benchmark's runs made right after tuning stage ``stage`` and
keeps the measurement in ``<run dir>/pod/measure-stage<N>.json`` for stage 9. It runs in the controller's process and never connects to a
node. The decisions are in plugins/plugin_utils/bench.py (the measurement) and plugins/plugin_utils/regression.py (the
launch check and the comparison), the store in plugins/plugin_utils/store.py.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail, AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.filter.core import to_nice_json

from ansible_collections.npuops.ascend.plugins.action.report_files import write_reports
from ansible_collections.npuops.ascend.plugins.plugin_utils import bench, parts, profile, regression, store
from ansible_collections.npuops.ascend.plugins.plugin_utils.figures import figure
from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import WARN, finding
from ansible_collections.npuops.ascend.plugins.plugin_utils.stage_action import StageAction

ROLE = 'regression'
STAGE = 9
REPORT_DIR = 'stage9-regression'
PERCENTS = ('improvement_pct', 'tolerance_pct', 'spread_warn_pct', 'spread_fail_pct')
NOT_RUN = {'measured': False, 'reason': 'regression_run_enabled is false'}
ARGUMENT_SPEC = dict(
    step=dict(type='str', required=True, choices=['compare', 'stage']),
    stage=dict(type='int'),
    run_dir=dict(type='path', required=True),
    run_id=dict(type='str', required=True),
    run_enabled=dict(type='bool', default=True),
    results=dict(type='list', elements='dict', default=[]),
    host=dict(type='str'),
    command=dict(type='str', default=''),
    warmup=dict(type='int', default=10),
    min_steps=dict(type='int', default=40),
    seq_length=dict(type='raw'),
    peak_tflops=dict(type='raw'),
    baseline=dict(type='dict', default={}),
    baseline_path=dict(type='str'),
    launch=dict(type='dict'),
    launch_change=dict(type='raw'),
    improvement_pct=dict(type='raw', default=5.0),
    tolerance_pct=dict(type='raw', default=2.0),
    spread_warn_pct=dict(type='raw', default=2.0),
    spread_fail_pct=dict(type='raw', default=5.0),
    active=dict(type='list', elements='str'),
    report=dict(type='bool', default=True),
    profile=dict(type='dict'),
    scaling_results=dict(type='list', elements='dict', default=[]),
    scaling_hosts=dict(type='list', elements='str', default=[]),
    scaling_min_pct=dict(type='raw', default=regression.SCALING_MIN_PCT),
    linearity_results=dict(type='list', elements='dict', default=[]),
    linearity_devices=dict(type='list', elements='int'),
    linearity_min_pct=dict(type='raw', default=regression.LINEARITY_MIN_PCT),
    profile_comm_max_pct=dict(type='raw', default=15.0),
    profile_aicore_min_pct=dict(type='raw', default=80.0),
    profile_free_max_pct=dict(type='raw', default=10.0),
)


def node_suspects(run_dir, run_id, host):
    """{device: what} of the NPUs of ``host`` that stage 0 of this run found something on (its record's findings), for
    the linearity ladder to name the NPU a rung adds; {} when there is no such record."""
    if not host:
        return {}
    record, _problem = store.read_record(run_dir, run_id, host, 0)
    suspects = {}
    for item in (record or {}).get('findings') or []:
        if (isinstance(item, dict) and isinstance(item.get('device'), int) and item.get('device') not in suspects
                and item.get('severity') in ('fail', 'warn')):
            suspects[item['device']] = '%s (%s)' % (item.get('check'), item.get('value'))
    return suspects


def given(value):
    """Whether an optional number was given (not null, not an empty string)."""
    return value is not None and str(value) != ''


def baseline_peak(peak_tflops, baseline):
    """The peak for MFU: the operator's figure when given, else the one stage 1 kept in its baseline with its source."""
    if given(peak_tflops):
        return peak_tflops
    baseline = baseline or {}
    return {'tflops': baseline.get('peak_tflops'), 'source': baseline.get('peak_source'),
            'sourced': bool(baseline.get('peak_sourced', False)),
            'reason': baseline.get('mfu_note') or 'the stage 1 baseline records no peak'}


def with_shares(measurement, kept):
    """A measurement (or the stage 1 baseline) with the profiler's communication share and AI Core use of its
    profile (profile.profile_record), for the comparison of those two metrics; unchanged without a profile."""
    if not isinstance(kept, dict) or not kept.get('steps'):
        return measurement
    figures = (kept.get('bottleneck') or {}).get('figures') or profile.bottleneck(kept)['figures']
    out = dict(measurement)
    for key, source in (('comm_share_pct', 'comm_share_pct'), ('aicore_pct', 'aicore_util_pct')):
        if out.get(key) is None and figures.get(source) is not None:
            out[key] = figures[source]
    return out


def profile_after(args):
    """What stage 9 keeps of the profile its runs wrote (profile.profile_record), None without one; a profile that
    could not be read is kept as its error with a warning naming the host."""
    read = args.get('profile')
    if not read or read.get('skipped'):
        return None
    host = str(args['host'] or 'this node')
    if read.get('failed') or not read.get('steps'):
        text = 'the profiler output after tuning could not be read: %s' % (read.get('msg') or 'no reason given')
        return {'host': host, 'error': read.get('msg'), 'steps': [], 'summary': {}, 'bottleneck': None,
                'findings': [finding(host, None, 'profile_read', None, 'a readable profile', text, WARN)]}
    return profile.profile_record(read, host, args['profile_comm_max_pct'], args['profile_aicore_min_pct'],
                                  args['profile_free_max_pct'])


def pod_report(run_id, args, check_mode, measurement, comparison, launch_check, steps=None):
    """The document of ``regression.json``: the run, the baseline it was compared with, the runs after tuning, the
    comparison and both launches."""
    baseline = dict(args['baseline'] or {}, path=args['baseline_path'])
    return {
        'run': run_id, 'host': args['host'], 'check_mode': bool(check_mode), 'command': args['command'] or '',
        'baseline': baseline, 'after': measurement if args['run_enabled'] else {}, 'comparison': comparison,
        'launch': {'before': (args['baseline'] or {}).get('launch'), 'after': args['launch'], 'check': launch_check},
        'improvement_pct': args['improvement_pct'], 'tolerance_pct': args['tolerance_pct'],
        'steps': (steps or {}).get('rows') or [],
    }


class ActionModule(StageAction):
    """Stage 9 over the PoD: the runs measured, the launch checked, the comparison made and every node recorded."""

    NAME = 'stage_regression'
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def _measure(self, args, baseline, pct):
        return bench.baseline_measure(
            args['results'], host=args['host'], warmup=args['warmup'], min_steps=args['min_steps'],
            seq_length=int(args['seq_length']) if given(args['seq_length']) else None,
            peak_tflops=baseline_peak(args['peak_tflops'], baseline), warn_pct=pct['spread_warn_pct'],
            fail_pct=pct['spread_fail_pct'])

    def step_stage(self, args, run_id, task_vars):
        stage = args['stage']
        if stage not in store.MEASURED_STAGES:
            raise AnsibleActionFail('%s: step stage needs stage, one of the tuning stages %s (got %r)'
                                    % (self.NAME, ', '.join(str(s) for s in store.MEASURED_STAGES), stage))
        baseline = args['baseline'] or {}
        try:
            pct = dict((name, float(args[name])) for name in PERCENTS)
            measurement = self._measure(args, baseline, pct) if args['run_enabled'] else dict(NOT_RUN)
        except (AnsibleFilterError, ValueError, TypeError) as exc:
            raise AnsibleActionFail('%s: %s' % (self.NAME, to_native(getattr(exc, 'message', exc)))) from exc
        record = store.make_measure(run_id, stage, regression.STAGE_ROLES.get(stage), args['host'], measurement,
                                    check_mode=self.check_mode)
        path = store.write_measure(args['run_dir'], record)
        if measurement.get('measured'):
            text = 'after stage %d: step time %s ms, %s tokens/s, MFU %s %% (spread %s %% over %d runs)' % (
                stage, figure(measurement.get('mean_ms')), figure(measurement.get('tokens_per_s')),
                figure(measurement.get('mfu_pct')), figure(measurement.get('spread_pct'), 3),
                len(measurement.get('runs') or []))
        else:
            text = 'after stage %d: not measured (%s)' % (stage, measurement.get('reason') or 'no run')
        return dict(changed=False, measurement=measurement, path=path, msg='%s: %s' % (args['host'] or 'this node', text))

    def step_compare(self, args, run_id, task_vars):
        active = args['active'] if args['active'] is not None else store.without_lost(args['run_dir'], run_id, parts.play_nodes(task_vars)[1])
        baseline = args['baseline'] or {}
        # the stage 1 run the baseline comes from (None when the baseline was not kept by this run), else its path
        baseline_run = baseline.get('run', args['baseline_path'])
        try:
            pct = dict((name, float(args[name])) for name in PERCENTS)
            if args['run_enabled']:
                measurement = self._measure(args, baseline, pct)
            else:
                measurement = dict(NOT_RUN)
            kept = profile_after(args)
            if kept is not None:
                measurement = dict(with_shares(measurement, kept), profile=kept)
            before_profile = baseline.get('profile') if isinstance(baseline.get('profile'), dict) else None
            baseline = with_shares(baseline, before_profile)
            launch_check = None
            if args['launch'] is not None:
                launch_check = regression.launch_check(args['launch'], baseline.get('launch'),
                                                       change=args['launch_change'], baseline_run=baseline_run)
            comparison = regression.regression_compare(
                measurement, baseline, host=args['host'], baseline_run=baseline_run, launch=launch_check, **pct)
            if kept is not None and kept.get('steps'):
                comparison['findings'] += [dict(f, severity=WARN) for f in kept.get('findings') or []]
                if before_profile and before_profile.get('steps'):
                    comparison['profile'] = profile.compare(before_profile, kept)
            elif kept is not None:
                comparison['findings'] += kept['findings']
            if args['scaling_results']:
                comparison['scaling'] = regression.training_ladder(
                    args['scaling_results'], pod=args['scaling_hosts'], host=args['host'], warmup=args['warmup'], min_steps=args['min_steps'],
                    seq_length=int(args['seq_length']) if given(args['seq_length']) else None,
                    min_pct=float(args['scaling_min_pct']))
                comparison['findings'] += comparison['scaling']['findings']
            if args['linearity_results']:
                comparison['linearity'] = regression.linearity_ladder(
                    args['linearity_results'], host=args['host'], devices=args['linearity_devices'], warmup=args['warmup'],
                    min_steps=args['min_steps'], seq_length=int(args['seq_length']) if given(args['seq_length']) else None,
                    min_pct=float(args['linearity_min_pct']), suspects=node_suspects(args['run_dir'], run_id, args['host']))
                comparison['findings'] += comparison['linearity']['findings']
            lines = regression.regression_lines(comparison, args['baseline_path'])
            lines += regression.profile_lines(comparison.get('profile'))
            lines += regression.training_ladder_lines(comparison.get('scaling'))
            lines += regression.linearity_lines(comparison.get('linearity'))
            measures, problems = store.read_measures(args['run_dir'], run_id)
            steps = regression.stage_steps(baseline, measures, host=args['host'], after=measurement,
                                           improvement_pct=pct['improvement_pct'], tolerance_pct=pct['tolerance_pct'])
        except (AnsibleFilterError, ValueError, TypeError, profile.ProfileError) as exc:
            raise AnsibleActionFail('%s: %s' % (self.NAME, to_native(getattr(exc, 'message', exc)))) from exc
        for problem in problems:
            self._display.warning('%s: %s' % (self.NAME, problem))
        lines += regression.stage_step_lines(steps)
        measured = bool(measurement.get('measured'))
        written = []
        findings = comparison['findings'] + steps['findings']
        for node in active:
            record = store.make_record(run_id, node, STAGE, ROLE, findings, skipped=not measured,
                                       check_mode=self.check_mode)
            written.append(store.write_record(args['run_dir'], record))
        out = dict(changed=False, measurement=measurement, launch_check=launch_check, comparison=comparison,
                   steps=steps['rows'], lines=lines, records=written,
                   msg='recorded stage 9 (regression) of %d node(s): %s' % (len(written), comparison['verdict']))
        if args['report']:
            directory = os.path.join(args['run_dir'], REPORT_DIR)
            document = pod_report(run_id, args, self.check_mode, measurement, comparison, launch_check, steps)
            try:
                out['report'] = write_reports(directory, [{'name': 'regression.json',
                                                           'content': to_nice_json(document) + '\n'}])[0]
            except OSError as exc:
                raise AnsibleActionFail('%s: could not write the report to %s on the controller: %s. Check that the '
                                        'report directory (gate_report_dir) is on a writable file system with space '
                                        'left.' % (self.NAME, directory, to_native(exc))) from exc
        return out
