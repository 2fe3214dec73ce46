# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of npuops.ascend.stage_gate: record a node's result of a stage in the run's store, judge the stage over the
PoD from the records, write the run's summary. Runs in the controller's process and never connects to the node.

The decisions are in plugins/plugin_utils/gate.py (the verdict and its message) and plugins/plugin_utils/store.py
(the record, its paths and checks); this file maps the task's options onto them.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail, AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.action import ActionBase

from ansible_collections.npuops.ascend.plugins.plugin_utils import gate, metrics, parts, store

ARGUMENT_SPEC = dict(
    step=dict(type='str', required=True, choices=['record', 'read', 'pod', 'verdict', 'summary', 'plan', 'reached']),
    run_dir=dict(type='path', required=True),
    run_id=dict(type='str', required=True),
    stage=dict(type='int'),
    role=dict(type='str', default=''),
    findings=dict(type='list', elements='dict', default=[]),
    skipped=dict(type='bool', default=False),
    data=dict(type='dict', default={}),
    nodes=dict(type='list', elements='str'),
    active=dict(type='list', elements='str'),
    results=dict(type='dict', default={}),
    failed=dict(type='list', elements='str'),
    max_lost=dict(type='raw', default=0),
    write_summary=dict(type='bool'),
    metrics_file=dict(type='str'),
    part=dict(type='str', choices=list(parts.PARTS)),
)
REQUIRED_BY_STEP = {'record': ('stage',), 'read': ('stage',), 'pod': ('stage',), 'verdict': ('stage',), 'summary': (), 'plan': (), 'reached': ()}


class ActionModule(ActionBase):
    """Records, reads, judges and summarises the stages of a run on the controller."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # nothing is copied to the node
        task_vars = task_vars or {}

        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        missing = [name for name in REQUIRED_BY_STEP[args['step']] if args[name] is None]
        if missing:
            raise AnsibleActionFail('stage_gate: step %s needs %s' % (args['step'], ', '.join(missing)))
        args['check_mode'] = bool(self._play_context.check_mode)
        try:
            if args['part'] is None:  # the run's part (npuops_run_part) unless the task says
                args['part'] = parts.run_part(task_vars)
            play = parts.play_nodes(dict(task_vars, npuops_run_part=args['part']))
        except parts.PartError as exc:
            raise AnsibleActionFail('stage_gate: %s.' % exc) from exc
        if args['metrics_file'] is None and args['step'] == 'verdict':
            # the run's file of metrics (npuops_metrics_file, the PoD-wide default '') unless the task says
            given = task_vars.get('npuops_metrics_file')
            args['metrics_file'] = '' if given is None else str(self._templar.template(given) or '')
        if args['nodes'] is None:
            # the nodes of the play, and those of the PoD group this run lost in an earlier part or process (the
            # plays leave them out; a gate still counts them against npuops_max_lost_nodes)
            group = (task_vars.get('groups') or {}).get(task_vars.get('npuops_pod_group') or parts.DEFAULT_GROUP) or []
            inside = set(play[0])
            outside = [str(node) for node in group if str(node) not in inside]
            lost = store.read_lost(args['run_dir'], args['run_id'], outside)
            args['nodes'] = play[0] + [str(node) for node in group if str(node) in lost]
        args['active'] = args['active'] if args['active'] is not None else play[1]
        if args['failed'] is None and isinstance(task_vars.get('ansible_failed_hosts'), list):
            # the nodes a task failed on, as the strategy counts them; the others that dropped out were unreachable
            args['failed'] = list(task_vars['ansible_failed_hosts'])
        try:
            args['run_id'] = store.check_run_id(args['run_id'])
            if args['stage'] is not None:
                store.check_stage(args['stage'])
            result.update(getattr(self, '_' + args['step'])(args, task_vars))
        except store.StoreError as exc:
            raise AnsibleActionFail('stage_gate: %s.' % to_native(exc)) from exc
        except OSError as exc:
            raise AnsibleActionFail('stage_gate: could not use the run store %s on the controller: %s. Check that the '
                                    'report directory (npuops_report_dir) is on a writable file system with space left.'
                                    % (args['run_dir'], to_native(exc))) from exc
        return result

    @staticmethod
    def _record(args, task_vars):
        record = store.make_record(args['run_id'], task_vars.get('inventory_hostname'), args['stage'], args['role'],
                                   args['findings'], args['skipped'], args['check_mode'], args['data'])
        path = store.write_record(args['run_dir'], record)
        msg = 'recorded stage %d (%s) of %s: %s' % (record['stage'], record['role'], record['node'], record['status'])
        return dict(changed=False, record=record, path=path, msg=msg)

    @staticmethod
    def _read(args, task_vars):
        active = store.without_lost(args['run_dir'], args['run_id'], args['active'])
        records, problems = store.read_stage(args['run_dir'], args['run_id'], active, args['stage'])
        data = dict((node, records[node].get('data') or {}) for node in active if node in records)
        msg = 'read the stage %d records of %d of %d node(s)' % (args['stage'], len(records), len(active))
        return dict(changed=False, records=records, data=data, missing=[p['host'] for p in problems], msg=msg)

    @staticmethod
    def _pod(args, task_vars):
        record = store.make_pod_record(args['run_id'], args['stage'], args['role'], args['findings'],
                                       args['check_mode'], args['data'])
        path = store.write_pod_record(args['run_dir'], record)
        msg = 'recorded the PoD part of stage %d (%s): %d finding(s)' % (record['stage'], record['role'],
                                                                         len(record['findings']))
        return dict(changed=False, record=record, path=path, msg=msg)

    @staticmethod
    def _verdict(args, task_vars):
        problems = gate.lost_problems(args['max_lost'])
        if problems:
            raise AnsibleActionFail('stage_gate: %s.' % problems[0])
        outcome = gate.verdict(args['run_dir'], args['run_id'], args['stage'], args['role'], args['nodes'],
                               args['active'], failed=args['failed'], max_lost=args['max_lost'])
        out = dict(changed=False, failures=outcome['failures'], lost=outcome['lost'], msg=outcome['msg'])
        # a node part (npuops_run_part=nodes) sees only its slice: the PoD part writes the run's summary
        if args['write_summary'] if args['write_summary'] is not None else args['part'] != 'nodes':
            document = store.summary(args['run_dir'], args['run_id'], args['nodes'], args['check_mode'])
            out['summary'] = store.write_summary(args['run_dir'], document)
            if not outcome['passed'] and args['metrics_file'] is not None:
                # the run stops here, before the report play: the metrics of what it did so far, so that monitoring
                # sees the stop (node_exporter's textfile collector; npuops_metrics_file)
                try:
                    out['metrics'] = metrics.write_run_metrics(args['run_dir'], args['run_id'], args['metrics_file'])
                except (OSError, ValueError, AnsibleFilterError) as exc:
                    out.setdefault('warnings', []).append('the metrics of the stopped run were not written: %s'
                                                          % to_native(exc))
        if outcome['warnings']:
            out['warnings'] = out.get('warnings', []) + outcome['warnings']
        if not outcome['passed']:
            out['failed'] = True
        return out

    @staticmethod
    def _plan(args, task_vars):
        """The run's plan: the nodes of the PoD. A part that sees the whole inventory (part all or pod) writes it; a node
        part reads it (its play holds only its slice), fails on another run's plan or a node outside it, and goes on
        without one (the node part of stage 0 comes first)."""
        if args['part'] != 'nodes':
            record = store.make_plan(args['run_id'], args['nodes'])
            path = store.write_plan(args['run_dir'], record)
            return dict(changed=False, plan=record, path=path,
                        msg='recorded the plan of run %s: %d node(s)' % (args['run_id'], len(record['nodes'])))
        record, problem = store.read_plan(args['run_dir'], args['run_id'])
        if problem:
            raise AnsibleActionFail('stage_gate: %s. Every part of a run in parts uses the same npuops_run_id and '
                                    'report directory; a plan of another run is never used.' % problem)
        if record is None:  # the node part of stage 0 comes before any PoD part: nothing to check the slice against yet
            return dict(changed=False, plan=None, path=store.plan_path(args['run_dir']),
                        msg='run %s has no plan yet (the PoD part of stage 0 writes it)' % args['run_id'])
        outside = [node for node in args['nodes'] if node not in record['nodes']]
        if outside:
            raise AnsibleActionFail('stage_gate: %s are not nodes of the plan of run %s (%s): a node part runs on a '
                                    'slice of the PoD the plan was written for; use the same inventory.'
                                    % (', '.join(outside), args['run_id'], store.plan_path(args['run_dir'])))
        return dict(changed=False, plan=record, path=store.plan_path(args['run_dir']),
                    msg='read the plan of run %s: %d node(s), %d in this part'
                    % (args['run_id'], len(record['nodes']), len(args['nodes'])))

    @staticmethod
    def _reached(args, task_vars):
        """The nodes the plays of this run go on with: the nodes of the play (in the PoD part, of the PoD group) without
        those the run already lost (their lost-node records), so that no later part connects to them again."""
        reached = store.without_lost(args['run_dir'], args['run_id'], args['nodes'])
        lost = [node for node in args['nodes'] if node not in reached]
        if lost:
            msg = '%d node(s), %d lost by an earlier part of run %s (%s): left out' % (
                len(reached), len(lost), args['run_id'], ', '.join(lost))
        else:
            msg = '%d node(s), none lost' % len(reached)
        return dict(changed=False, reached=reached, lost=lost, msg=msg)

    @staticmethod
    def _summary(args, task_vars):
        written = []
        for node, stages in sorted(args['results'].items()):
            for _key, decided in sorted((stages or {}).items()):
                stage = store.check_stage(decided.get('stage') if isinstance(decided, dict) else None)
                record = store.make_record(args['run_id'], node, stage, decided.get('role') or args['role'], [],
                                           check_mode=args['check_mode'], result=decided)
                written.append(store.write_record(args['run_dir'], record))
        document = store.summary(args['run_dir'], args['run_id'], args['nodes'], args['check_mode'])
        # a node part sees only its slice: the records are written, the PoD part writes the summary of every node
        if not (args['write_summary'] if args['write_summary'] is not None else args['part'] != 'nodes'):
            return dict(changed=False, path=None, summary=document, records=written, lines=gate.summary_lines(document),
                        msg='recorded %d result(s); the PoD part writes the summary' % len(written))
        path = store.write_summary(args['run_dir'], document)
        return dict(changed=False, path=path, summary=document, records=written, lines=gate.summary_lines(document),
                    msg='wrote %s' % path)
