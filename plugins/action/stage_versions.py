# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of npuops.ascend.stage_versions: stage 2 (versions and cross-node consistency) in two parts.

``step: node`` runs the node's modules (version_info, npu_info boards) in one task, checks the pairings against the
compatibility table and writes the node's record of stage 2 to the run's store. ``step: pod`` (once) reads the
records of the nodes still in the play - never other nodes' facts - compares their fingerprints with each other and
with the previous run, keeps this run's fingerprints for the next one, and writes the PoD record of stage 2. The
decisions are in plugins/plugin_utils/versions.py, the store in plugins/plugin_utils/store.py.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.action import ActionBase

from ansible_collections.npuops.ascend.plugins.plugin_utils import store, versions

try:  # ansible-core 2.19+: the module_defaults a play sets for the modules this action runs
    from ansible.executor.module_common import get_action_args_with_defaults
except ImportError:  # pragma: no cover - kept for a core without it
    get_action_args_with_defaults = None

ROLE = 'version_check'
STAGE = 2
ARGUMENT_SPEC = dict(
    step=dict(type='str', required=True, choices=['node', 'pod']),
    run_dir=dict(type='path', required=True),
    run_id=dict(type='str', required=True),
    compatibility=dict(type='dict', default={}),
    unknown_is_fatal=dict(type='bool', default=False),
    python=dict(type='path'),
    packages=dict(type='list', elements='str', default=['torch', 'torch_npu']),
    env_files=dict(type='list', elements='path', default=[]),
    env_prefixes=dict(type='list', elements='str', default=['HCCL_', 'ASCEND_', 'TASK_QUEUE_', 'PYTORCH_NPU_']),
    history=dict(type='path'),
    active=dict(type='list', elements='str'),
)


class ActionModule(ActionBase):
    """Stage 2 on a node (its modules, its record) and over the PoD (from the records)."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def _module(self, name, args, task_vars):
        """Run one of the collection's modules on the node, with the play's module_defaults for it."""
        fqcn = 'npuops.ascend.%s' % name
        if get_action_args_with_defaults is not None:
            args = get_action_args_with_defaults(fqcn, args, self._task.module_defaults, self._templar,
                                                 action_groups=self._task._parent._play._action_groups)
        return self._execute_module(module_name=fqcn, module_args=args, task_vars=task_vars)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        try:
            run_id = store.check_run_id(args['run_id'])
            if args['step'] == 'node':
                result.update(self._node(args, run_id, task_vars))
            else:
                result.update(self._pod(args, run_id, task_vars))
        except store.StoreError as exc:
            raise AnsibleActionFail('stage_versions: %s.' % to_native(exc)) from exc
        except OSError as exc:
            raise AnsibleActionFail('stage_versions: could not use the run store %s on the controller: %s. Check that the '
                                    'report directory (npuops_report_dir) is on a writable file system with space left.'
                                    % (args['run_dir'], to_native(exc))) from exc
        finally:
            if args['step'] == 'node':
                self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    def _node(self, args, run_id, task_vars):
        node = task_vars.get('inventory_hostname')
        stack_args = dict(packages=args['packages'], env_files=args['env_files'], env_prefixes=args['env_prefixes'])
        if args['python']:
            stack_args['python'] = args['python']
        stack = self._module('version_info', stack_args, task_vars)
        if stack.get('failed'):
            return dict(stack, msg='%s: reading the software stack failed: %s' % (node, stack.get('msg')))
        boards = self._module('npu_info', {'gather_subset': ['board']}, task_vars)
        if boards.get('failed'):
            return dict(boards, stack=stack, msg='%s: reading the NPU boards failed: %s' % (node, boards.get('msg')))
        checked = versions.version_findings(stack, boards, args['compatibility'], host=node,
                                            unknown_is_fatal=args['unknown_is_fatal'])
        record = store.make_record(run_id, node, STAGE, ROLE, checked['findings'],
                                   check_mode=self._play_context.check_mode,
                                   data={'fingerprint': checked['fingerprint']})
        path = store.write_record(args['run_dir'], record)
        warnings = list(stack.get('warnings') or []) + list(boards.get('warnings') or [])
        out = dict(changed=False, stack=stack, boards=boards, fingerprint=checked['fingerprint'],
                   findings=checked['findings'], record=record, path=path,
                   msg='recorded stage 2 (version_check) of %s: %s' % (node, record['status']))
        if warnings:
            out['warnings'] = warnings
        return out

    def _pod(self, args, run_id, task_vars):
        active = args['active'] if args['active'] is not None else list(task_vars.get('ansible_play_hosts') or [])
        records, dummy = store.read_stage(args['run_dir'], run_id, active, STAGE)
        previous, problem = versions.read_history(args['history']) if args['history'] else ({}, None)
        part = versions.pod_part(records, active, previous)
        out = dict(changed=False, **part)
        warnings = [problem] if problem else []
        if args['history'] and not self._play_context.check_mode:
            try:
                versions.write_history(args['history'], run_id, part['fingerprints'])
            except OSError as exc:
                warnings.append('could not keep the fingerprints of this run in %s for the next run: %s'
                                % (args['history'], to_native(exc)))
        record = store.make_pod_record(run_id, STAGE, ROLE, part['pod_findings'],
                                       check_mode=self._play_context.check_mode,
                                       data={'differences': part['differences'], 'drift': part['drift']})
        out['path'] = store.write_pod_record(args['run_dir'], record)
        out['msg'] = '%d node(s) compared: %d field(s) differ, %d change(s) since the previous run' % (
            len(part['fingerprints']), len(part['differences']), len(part['drift']))
        if warnings:
            out['warnings'] = warnings
        return out
