# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of npuops.ascend.stage_serving: stage 7 (the serving engine) in three parts.

``step: check`` (on every node) checks the node's stage 7 variables and, when npuMemSize is ``auto`` and a run is
under way, reads the free HBM and the processes of its NPUs and the npuMemSize its config.json holds, decides
npuMemSize and records that decision; it writes the node's check record to the run's store. ``step: check_pod``
(once) reads the check records of the play's nodes and stops the stage on every node when any node has a problem
(or no check record of this run), before anything is written. ``step: node`` (on every node) merges the settings into MindIE's config.json
and reads it back, or writes the vLLM-Ascend launch files, sweeps the running service when an endpoint is set,
records the node's result and writes its JSON report. The decisions are in plugins/plugin_utils/serving.py.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.common.text.converters import to_native, to_text

from ansible_collections.npuops.ascend.plugins.action.report_files import write_reports
from ansible_collections.npuops.ascend.plugins.plugin_utils import serving, store
from ansible_collections.npuops.ascend.plugins.plugin_utils.stage_action import StageAction

ROLE = 'mindie_config'
STAGE = 7
REPORT_DIR = 'stage7-mindie_config'
HIDDEN = "the output has been hidden due to the fact that 'no_log: true' was specified for this result"
ARGUMENT_SPEC = dict(
    step=dict(type='str', required=True, choices=['check', 'check_pod', 'node']),
    run_dir=dict(type='path'),
    run_id=dict(type='str'),
    values=dict(type='dict', default={}, no_log=False),
    decide=dict(type='bool', default=False),
    nodes=dict(type='list', elements='str', default=[]),
    path=dict(type='str'),
    model_index=dict(type='int', default=0),
    reserve_gb=dict(type='raw', default=4),
    fraction=dict(type='raw', default=serving.DEFAULT_FRACTION),
    timeout=dict(type='int', default=60),
    npu_mem=dict(type='dict'),
    owner=dict(type='str'),
    group=dict(type='str'),
    backup=dict(type='bool', default=True),
    vllm_dir=dict(type='str', default='/etc/npuops'),
    vllm_owner=dict(type='str', default='root'),
    vllm_group=dict(type='str', default='root'),
    bench_endpoint=dict(type='str'),
    bench_api=dict(type='str', choices=['completions', 'chat'], default='completions'),
    bench_model=dict(type='str'),
    bench_concurrency=dict(type='list', elements='int', default=[1, 8, 32, 128]),
    bench_max_tokens=dict(type='int', default=128),
    bench_requests=dict(type='int', default=0),
    bench_timeout=dict(type='int', default=60),
    bench_p99_p50_max=dict(type='float', default=serving.BENCH_P99_P50_MAX),
    bench_knee_gain_pct=dict(type='float', default=serving.BENCH_KNEE_GAIN_PCT),
    bench_p99_severity=dict(type='str', choices=list(serving.BENCH_SEVERITIES), default='warn'),
    bench_drop_severity=dict(type='str', choices=list(serving.BENCH_SEVERITIES), default='fail'),
    report=dict(type='bool', default=True),
)


class _Failed(Exception):
    """A part of the node's work failed: its result ends the step, as a failed task would."""

    def __init__(self, result):
        super().__init__(result.get('msg'))
        self.result = result


class ActionModule(StageAction):
    """Stage 7 on a node (its check, its configuration, its record) and the check over the PoD."""

    NAME = 'stage_serving'
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def run(self, tmp=None, task_vars=None):
        dummy, checked = self.validate_argument_spec(argument_spec=self.ARGUMENT_SPEC)
        if checked['run_dir'] is None or checked['run_id'] is None:
            raise AnsibleActionFail('%s: step %s needs run_dir and run_id (the run store).' % (self.NAME, checked['step']))
        return super().run(tmp, task_vars)

    # --- the parts run on the node ----------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _task_as(self, check_mode=None, diff=None, no_log=None):
        """Run what follows as a task with check mode, diff or no_log set (the modules read them from the task)."""
        saved = (self._task.check_mode, self._task.diff, self._task.no_log)
        try:
            if check_mode is not None:
                self._task.check_mode = check_mode
            if diff is not None:
                self._task.diff = diff
            if no_log is not None:
                self._task.no_log = no_log
            yield
        finally:
            self._task.check_mode, self._task.diff, self._task.no_log = saved

    def _builtin(self, name, module_args, task_vars):
        return self._execute_module(module_name='ansible.legacy.%s' % name, module_args=module_args, task_vars=task_vars)

    def _copy(self, task_vars, secret=False, **copy_args):
        """A file with the given content, written by the copy action (backup, check mode and diff are copy's); a
        secret one with no_log and no diff."""
        new_task = self._task.copy()
        new_task.args = copy_args
        if secret:
            new_task.no_log = True
            new_task.diff = False
        copy_action = self._shared_loader_obj.action_loader.get(
            'ansible.legacy.copy', task=new_task, connection=self._connection, play_context=self._play_context,
            loader=self._loader, templar=self._templar, shared_loader_obj=self._shared_loader_obj)
        return copy_action.run(task_vars=task_vars)

    @staticmethod
    def _take(out, part, secret=False):
        """Fold a part's result into the step's: its change, its diff (never a secret file's); a failure ends it."""
        if part.get('failed'):
            raise _Failed({'failed': True, 'msg': HIDDEN if secret else part.get('msg', 'failed without a message')})
        out['changed'] = out['changed'] or bool(part.get('changed'))
        diff = None if secret else part.get('diff')
        if diff:
            out['diff'].extend(diff if isinstance(diff, list) else [diff])
        return part

    # --- steps ------------------------------------------------------------------------------------------------------

    def step_check(self, args, run_id, task_vars):
        node = store.check_node(task_vars.get('inventory_hostname'))
        values = args['values']
        problems = serving.mindie_config_problems(values)
        out = dict(changed=False, host=node, problems=problems, npu_mem=None)
        if args['decide'] and not problems:
            npus = self.run_module('npu_info', {'gather_subset': ['usages', 'processes'], 'timeout': args['timeout']},
                                   task_vars)
            if npus.get('failed'):
                return dict(out, failed=True, msg=npus.get('msg'), npus=npus)
            with self._task_as(check_mode=True, diff=False):  # a read: never a change, never a diff
                current = self.run_module('mindie_config', {'path': args['path'], 'model_index': args['model_index'],
                                                            'mode': values.get('mode')}, task_vars)
            settings = values.get('settings') or {}
            devices = settings['npuDeviceIds'][0] if 'npuDeviceIds' in settings else None
            decided = serving.npu_mem_size_auto(npus, current, values.get('weights_gb'), args['reserve_gb'],
                                                args['fraction'], devices)
            # the node's record of stage 7 until the node step replaces it: a node whose npuMemSize cannot be decided
            # has a failure there
            record = store.make_record(run_id, node, STAGE, ROLE, serving.npu_mem_findings(node, decided),
                                       check_mode=self.check_mode, data={'npu_mem': decided})
            store.write_record(args['run_dir'], record)
            out.update(npu_mem=decided, record=record)
        check = store.make_check(run_id, node, STAGE, ROLE, problems, check_mode=self.check_mode,
                                 data={'npu_mem': out['npu_mem']})
        out['check_record'] = store.write_check(args['run_dir'], check)
        out['msg'] = ('%s: %d problem(s) in the stage 7 variables' % (node, len(problems)) if problems
                      else '%s: npuMemSize %s' % (node, out['npu_mem']['msg'] or out['npu_mem']['problem'])
                      if out['npu_mem'] else '%s: the stage 7 variables are usable' % node)
        return out

    def step_check_pod(self, args, run_id, task_vars):
        """Every node's check of this run, from the store: one message naming every problem of every node."""
        records, missing = store.read_checks(args['run_dir'], run_id, args['nodes'], STAGE)
        checks = serving.checks_of_records(records, missing)
        message = serving.settings_message(checks) or serving.npu_mem_message(checks)
        if message:
            return dict(changed=False, failed=True, msg=message)
        return dict(changed=False, msg='the stage 7 settings of %d node(s) are usable' % len(checks))

    def step_node(self, args, run_id, task_vars):
        node = store.check_node(task_vars.get('inventory_hostname'))
        values = dict(args['values'], path=args['path'], vllm_dir=args['vllm_dir'])
        out = dict(changed=False, diff=[], findings=[], secrets_msg=None, files=[])
        try:
            parts = self._configure(node, values, args, task_vars, out)
            if values.get('engine') != 'none' and args['bench_endpoint']:
                parts['sweep'] = self.run_module('serving_bench', {
                    'endpoint': args['bench_endpoint'], 'api': args['bench_api'],
                    'model': serving.bench_model(args['bench_model'], parts.get('effective')),
                    'concurrency': args['bench_concurrency'], 'max_tokens': args['bench_max_tokens'],
                    'requests': args['bench_requests'], 'timeout': args['bench_timeout']}, task_vars)
                out['findings'] = out['findings'] + serving.bench_findings(
                    node, args['bench_endpoint'], parts['sweep'], args['bench_p99_p50_max'], args['bench_knee_gain_pct'],
                    args['bench_p99_severity'], args['bench_drop_severity'])
                if parts['sweep'].get('levels'):  # the knee and the saturation tokens/s of the node's record
                    parts['judged'] = serving.bench_judgement(parts['sweep']['levels'], args['bench_knee_gain_pct'],
                                                              args['bench_p99_p50_max'])
        except _Failed as exc:
            return dict(exc.result, changed=out['changed'], diff=out['diff'])
        entry = serving.report_entry(node, run_id, values, findings=out['findings'], **parts)
        # the record's data: the report's entry, the line of the secrets file (names only, never a value) and the
        # files the node step left (serving.mindie_files / vllm_files; no checksum of the secrets file)
        record = store.make_record(run_id, node, STAGE, ROLE, out['findings'], skipped=values.get('engine') == 'none',
                                   check_mode=self.check_mode,
                                   data=dict(entry, secrets_msg=out['secrets_msg'], files=out['files']))
        out.update(record=record, path=store.write_record(args['run_dir'], record), entry=entry)
        if args['report']:
            directory = os.path.join(args['run_dir'], REPORT_DIR)
            try:
                out['report'] = write_reports(directory, [{'name': '%s.json' % node, 'content': json.dumps(
                    entry, indent=4, sort_keys=True, separators=(',', ': ')) + '\n'}])[0]
            except OSError as exc:
                raise AnsibleActionFail('report_files: could not write the reports to %s on the controller: %s. Check '
                                        'that the report directory (gate_report_dir) is on a writable file system with '
                                        'space left.' % (directory, to_native(exc))) from exc
        if not out['diff']:
            del out['diff']
        out['msg'] = 'recorded stage 7 (mindie_config) of %s: %s' % (node, record['status'])
        return out

    def _configure(self, node, values, args, task_vars, out):
        """The engine's part of the node step; returns the parts of the node's report entry."""
        engine = values.get('engine')
        if engine == 'mindie':
            return self._mindie(node, values, args, task_vars, out)
        if engine == 'vllm':
            return self._vllm(values, args, task_vars, out)
        return {}

    def _mindie(self, node, values, args, task_vars, out):
        decided = None
        if values.get('npu_mem_size') == 'auto':
            decided = args['npu_mem']
            if not decided or decided.get('npuMemSize') is None:
                raise _Failed({'failed': True, 'msg': 'stage_serving: npuMemSize auto of %s was not decided: the check of '
                                                      'stage 7 (tag mindie_config_validate) must run before' % node})
        effective = serving.effective_settings(values.get('settings'), values.get('npu_mem_size'), decided)
        module_args = {'path': args['path'], 'settings': effective, 'model_index': args['model_index'],
                       'mode': values.get('mode'), 'backup': args['backup']}
        for name in ('owner', 'group'):
            if args[name]:
                module_args[name] = args[name]
        # a failure of MindIE's rules is a finding that names the node and the rule, not a failed task
        result = self.run_module('mindie_config', module_args, task_vars)
        out['changed'] = out['changed'] or bool(result.get('changed'))
        if result.get('diff'):
            out['diff'].extend(result['diff'] if isinstance(result['diff'], list) else [result['diff']])
        text = None
        if 'settings_after' in result and not self.check_mode:
            read = self._take(out, self._builtin('slurp', {'src': args['path']}, task_vars))
            text = to_text(base64.b64decode(read['content']), errors='surrogate_or_strict')
        out['findings'] = serving.mindie_config_findings(result, effective, node, text, args['model_index'])
        out['files'] = serving.mindie_files(args['path'], result, text, module_args)
        out['mindie_config'] = dict((key, value) for key, value in result.items() if key != 'diff')
        return {'effective': effective, 'result': result, 'npu_mem': decided}

    def _vllm(self, values, args, task_vars, out):
        try:
            launch = serving.vllm_launch(values)
        except AnsibleError as exc:
            raise _Failed({'failed': True, 'msg': to_native(exc.message)}) from exc
        owner, group, directory = args['vllm_owner'], args['vllm_group'], args['vllm_dir']
        paths = serving.vllm_paths(directory, values.get('service'))
        self._take(out, self._builtin('file', {'path': directory, 'state': 'directory', 'owner': owner, 'group': group,
                                               'mode': '0755'}, task_vars))
        self._take(out, self._copy(task_vars, content=launch['env_text'], dest=paths['vllm_env'], owner=owner,
                                   group=group, mode=serving.VLLM_ENV_MODE, backup=True))
        if launch['secret_names']:
            # the key and the secret variables: no_log and no diff, no backup (an old key stays nowhere); only the
            # names are said
            secret_text = serving.vllm_launch(values, secrets=True)['secret_env_text']
            written = self._take(out, self._copy(task_vars, secret=True, content=secret_text,
                                                 dest=launch['secret_env_path'], owner=owner, group=group,
                                                 mode=serving.VLLM_SECRETS_MODE, backup=False), secret=True)
            out['secrets_msg'] = serving.secrets_message(launch['secret_env_path'], launch['secret_names'],
                                                         bool(written.get('changed')), self.check_mode)
        else:
            self._take(out, self._builtin('file', {'path': launch['secret_env_path'], 'state': 'absent'}, task_vars))
        self._take(out, self._copy(task_vars, content=launch['script_text'], dest=paths['vllm_script'], owner=owner,
                                   group=group, mode=serving.VLLM_SCRIPT_MODE, backup=True))
        out['vllm_launch'] = launch
        out['files'] = serving.vllm_files(launch, paths, owner, group)
        return {'launch': launch}
