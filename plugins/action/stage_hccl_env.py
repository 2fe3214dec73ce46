# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of npuops.ascend.stage_hccl_env: stage 5 (the managed HCCL environment file) in three steps.

``step: check`` (one task per node, before anything is written) checks every HCCL setting and the file's settings
(the hccl_env rules) and, when they are usable, reads what the node has at the file's path: the path itself (a link is
not followed), its directory, and the file's group when it is not root. It writes the node's check record to the run's
store and returns the hccl_env result with the node's problems (the role registers it as ``hccl_env_result``).
``step: check_pod`` (once) reads the check records of the play's nodes from the store and stops every node when any
node has a problem, or has no check record of this run.
``step: node`` writes the file from that checked result with the ansible.legacy.copy action (backup, check mode and
diff are copy's), loads it in sh as a launch script does, reads the NPU ports when stage 4 of this run did not give
their settings, turns all of it into findings, and writes the node's record of stage 5 and its JSON report on the
controller. The decisions are in plugins/plugin_utils/hccl_env.py, the store in plugins/plugin_utils/store.py.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.filter.core import to_nice_json

from ansible_collections.npuops.ascend.plugins.action.report_files import write_reports
from ansible_collections.npuops.ascend.plugins.plugin_utils import hccl_env, node_files, store
from ansible_collections.npuops.ascend.plugins.plugin_utils.stage_action import StageAction

ARGUMENT_SPEC = dict(
    step=dict(type='str', required=True, choices=['check', 'check_pod', 'node']),
    run_dir=dict(type='path'),
    run_id=dict(type='str'),
    values=dict(type='raw'),
    context=dict(type='raw'),
    file=dict(type='raw'),
    result=dict(type='dict'),
    check_ports=dict(type='bool', default=True),
    port_settings=dict(type='raw'),
    devices=dict(type='raw'),
    timeout=dict(type='int', default=60),
    intent=dict(type='dict', default={}),
    log_level_min=dict(type='int', default=3),
    allow_loopback_if_ip=dict(type='bool', default=False),
    report=dict(type='bool', default=True),
    nodes=dict(type='list', elements='str'),
    path=dict(type='str'),
)
LOAD_KEYS = ('msg', 'rc', 'cmd', 'stdout', 'stderr')
REQUIRED_BY_STEP = {'check': ('run_dir', 'run_id', 'values', 'file'), 'check_pod': ('run_dir', 'run_id', 'nodes'),
                    'node': ('run_dir', 'run_id', 'result')}


class ActionModule(StageAction):
    """Stage 5 on a node: its settings and its file's path checked, then the file written, loaded and recorded."""

    NAME = 'stage_hccl_env'
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def run(self, tmp=None, task_vars=None):
        step = self._task.args.get('step')
        missing = [name for name in REQUIRED_BY_STEP.get(step, ()) if self._task.args.get(name) is None]
        if missing:
            raise AnsibleActionFail('%s: step %s needs %s' % (self.NAME, step, ', '.join(missing)))
        return super().run(tmp, task_vars)

    def _module(self, name, args, task_vars):
        return self._execute_module(module_name=name, module_args=args, task_vars=task_vars)

    def step_check(self, args, run_id, task_vars):
        node = store.check_node(task_vars.get('inventory_hostname'))
        out = self._check(args, task_vars)
        record = store.make_check(run_id, node, hccl_env.STAGE, hccl_env.ROLE, hccl_env.problem_texts(out),
                                  check_mode=self.check_mode, data=hccl_env.check_data(out))
        out['check_record'] = store.write_check(args['run_dir'], record)
        return out

    def _check(self, args, task_vars):
        try:
            result = hccl_env.hccl_env(args['values'], args['context'], args['file'])
        except AnsibleError as exc:
            raise AnsibleActionFail(to_native(exc.message)) from exc
        if result['problems']:
            # the settings cannot be used: nothing is read on the node
            return dict(hccl_env.check_result(result, False), changed=False,
                        msg='%d problem(s) in the settings' % len(result['problems']))
        path = result['file']['path']
        # one read for the file's path (a link is not followed; its SHA-1 lets the node step leave a file in place
        # alone) and its directory
        read = self._module('npuops.ascend.path_info', hccl_env.path_info_args(path), task_vars)
        path_stat, dir_stat = hccl_env.path_info_stats(read)
        lookup = hccl_env.group_lookup_args(result['file']['group'])
        group_entry = self._module('ansible.legacy.getent', lookup, task_vars) if lookup is not None else None
        checked = hccl_env.hccl_env_node_check(result, path_stat, dir_stat, group_entry)
        if not checked['problems']:
            checked['path_state'] = path_stat.get('stat')
        return dict(hccl_env.check_result(checked, True), changed=False,
                    msg='%d problem(s) at the file\'s path on this node' % len(checked['problems'])
                        if checked['problems'] else 'the settings and the file\'s path are usable')

    def step_check_pod(self, args, run_id, task_vars):
        """Every node's check of this run, from the store: one message naming every problem of every node."""
        checks, missing = store.read_checks(args['run_dir'], run_id, args['nodes'], hccl_env.STAGE)
        message = hccl_env.pod_check_message(checks, missing, args['path'] or 'the HCCL environment file')
        if message:
            return dict(changed=False, failed=True, msg=message)
        return dict(changed=False, msg='the stage 5 settings and file paths of %d node(s) are usable' % len(checks))

    def _write(self, copy_args, task_vars):
        """Run the ansible.legacy.copy action, as ansible.builtin.template does, so that backup, check mode and diff are
        copy's own."""
        new_task = self._task.copy()
        new_task.args = copy_args
        copy_action = self._shared_loader_obj.action_loader.get(
            'ansible.legacy.copy', task=new_task, connection=self._connection, play_context=self._play_context,
            loader=self._loader, templar=self._templar, shared_loader_obj=self._shared_loader_obj)
        return copy_action.run(task_vars=task_vars)

    def _load(self, path, task_vars):
        """Load the file in sh on the node, also in check mode (a read)."""
        with self.task_check_mode(False):
            return self._module('ansible.legacy.command', hccl_env.load_args(path), task_vars)

    def step_node(self, args, run_id, task_vars):
        node = store.check_node(task_vars.get('inventory_hostname'))
        checked = args['result']
        try:
            copy_args = hccl_env.file_copy_args(checked)
        except AnsibleError as exc:
            raise AnsibleActionFail(to_native(exc.message)) from exc
        sha1 = node_files.checksum(copy_args['content'])
        if node_files.in_place(checked.get('path_state'), 'file', copy_args['owner'], copy_args['group'],
                               copy_args['mode'], sha1):
            # the check step just read the file: same content, owner, group and mode, so copy would change nothing
            written = node_files.kept(copy_args['dest'], 'file', sha1)
        else:
            written = self._write(copy_args, task_vars)
        changed = bool(written.get('changed'))
        out = dict(changed=changed, written=dict((key, value) for key, value in written.items() if key != 'diff'))
        if 'diff' in written:
            out['diff'] = written['diff']
        if written.get('failed'):
            return dict(out, failed=True, msg=written.get('msg'))
        loaded = None
        if not hccl_env.load_skipped(self.check_mode, changed):
            loaded = self._load(copy_args['dest'], task_vars)
            loaded['changed'] = False
            out['loaded'] = loaded
            if loaded.get('failed'):
                # the file was written but a shell cannot load it: the command's own failure
                return dict(out, failed=True, **dict((key, loaded[key]) for key in LOAD_KEYS if key in loaded))
        stage4_given = 'port_settings' in self._task.args
        read = None
        if args['check_ports'] and not stage4_given:
            read = self.run_module('hccn_info', hccl_env.ports_read_args(args['devices'], args['timeout']), task_vars)
            read['failed'] = False  # a port that cannot be read is a warning finding, never a failure of the task
            out['ports'] = read
        ports = hccl_env.ports_to_check(args['check_ports'], stage4_given, args['port_settings'], read)
        findings = hccl_env.hccl_env_findings(checked, node, None if loaded is None else loaded.get('stdout'), ports,
                                              args['intent'], log_level_min=args['log_level_min'],
                                              allow_loopback_if_ip=args['allow_loopback_if_ip'])
        record = store.make_record(run_id, node, hccl_env.STAGE, hccl_env.ROLE, findings, check_mode=self.check_mode,
                                   data=hccl_env.record_data(checked, changed, copy_args['content']))
        out.update(findings=findings, record=record, path=store.write_record(args['run_dir'], record),
                   msg='recorded stage 5 (hccl_env) of %s: %s' % (node, record['status']))
        if args['report']:
            document = hccl_env.node_report(node, run_id, checked, changed, findings)
            out['report'] = self._report(os.path.join(args['run_dir'], hccl_env.REPORT_DIR), node, document)
        return out

    def _report(self, directory, node, document):
        try:
            return write_reports(directory, [{'name': '%s.json' % node, 'content': to_nice_json(document) + '\n'}])[0]
        except OSError as exc:
            raise AnsibleActionFail('%s: could not write the report to %s on the controller: %s. Check that the report '
                                    'directory (gate_report_dir) is on a writable file system with space left.'
                                    % (self.NAME, directory, to_native(exc))) from exc
