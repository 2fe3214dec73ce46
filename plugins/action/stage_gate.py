# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of npuops.ascend.stage_gate: record a node's result of a stage in the run's store, judge the stage over the
PoD from the records, write the run's summary. Runs in the controller's process and never connects to the node.

The decisions are in plugins/plugin_utils/gate.py (the verdict and its message) and plugins/plugin_utils/store.py
(the record, its paths and checks); this file maps the task's options onto them.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.action import ActionBase

from ansible_collections.npuops.ascend.plugins.plugin_utils import gate, store

ARGUMENT_SPEC = dict(
    step=dict(type='str', required=True, choices=['record', 'read', 'pod', 'verdict', 'summary']),
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
)
REQUIRED_BY_STEP = {'record': ('stage',), 'read': ('stage',), 'pod': ('stage',), 'verdict': ('stage',), 'summary': ()}


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
        args['nodes'] = args['nodes'] if args['nodes'] is not None else list(task_vars.get('ansible_play_hosts_all') or [])
        args['active'] = args['active'] if args['active'] is not None else list(task_vars.get('ansible_play_hosts') or [])
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
        records, problems = store.read_stage(args['run_dir'], args['run_id'], args['active'], args['stage'])
        data = dict((node, records[node].get('data') or {}) for node in args['active'] if node in records)
        msg = 'read the stage %d records of %d of %d node(s)' % (args['stage'], len(records), len(args['active']))
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
        document = store.summary(args['run_dir'], args['run_id'], args['nodes'], args['check_mode'])
        out = dict(changed=False, summary=store.write_summary(args['run_dir'], document),
                   failures=outcome['failures'], lost=outcome['lost'], msg=outcome['msg'])
        if outcome['warnings']:
            out['warnings'] = outcome['warnings']
        if not outcome['passed']:
            out['failed'] = True
        return out

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
        path = store.write_summary(args['run_dir'], document)
        return dict(changed=False, path=path, summary=document, records=written, lines=gate.summary_lines(document),
                    msg='wrote %s' % path)
