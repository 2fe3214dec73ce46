# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of npuops.ascend.stage_versions: stage 2 (versions and cross-node consistency) in two parts.

``step: node`` runs the node's modules (version_info, npu_info boards) in one task, checks the pairings against the
compatibility table and the kernel against its floor and writes the node's record of stage 2 to the run's store. ``step: pod`` (once) reads the
records of the nodes still in the play - never other nodes' facts - compares their fingerprints with each other and
with the previous run, keeps this run's fingerprints for the next one, and writes the PoD record of stage 2. The
decisions are in plugins/plugin_utils/versions.py, the store in plugins/plugin_utils/store.py.
"""

from __future__ import annotations

from ansible.module_utils.common.text.converters import to_native

from ansible_collections.npuops.ascend.plugins.plugin_utils import parts, store, versions
from ansible_collections.npuops.ascend.plugins.plugin_utils.stage_action import StageAction

ROLE = 'version_check'
STAGE = 2
ARGUMENT_SPEC = dict(
    step=dict(type='str', required=True, choices=['node', 'pod']),
    run_dir=dict(type='path', required=True),
    run_id=dict(type='str', required=True),
    compatibility=dict(type='dict', default={}),
    unknown_is_fatal=dict(type='bool', default=False),
    python=dict(type='path'),
    packages=dict(type='list', elements='str', default=['torch', 'torch_npu', 'mindspeed', 'vllm', 'vllm_ascend']),
    mindie_path=dict(type='path'),
    min_kernel=dict(type='str'),
    env_files=dict(type='list', elements='path', default=[]),
    env_prefixes=dict(type='list', elements='str', default=['HCCL_', 'ASCEND_', 'TASK_QUEUE_', 'PYTORCH_NPU_']),
    history=dict(type='path'),
    active=dict(type='list', elements='str'),
)


class ActionModule(StageAction):
    """Stage 2 on a node (its modules, its record) and over the PoD (from the records)."""

    NAME = 'stage_versions'
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def step_node(self, args, run_id, task_vars):
        node = task_vars.get('inventory_hostname')
        stack_args = dict(packages=args['packages'], env_files=args['env_files'], env_prefixes=args['env_prefixes'])
        for key in ('python', 'mindie_path'):
            if args[key]:
                stack_args[key] = args[key]
        stack = self.run_module('version_info', stack_args, task_vars)
        if stack.get('failed'):
            return dict(stack, msg='%s: reading the software stack failed: %s' % (node, stack.get('msg')))
        boards = self.run_module('npu_info', {'gather_subset': ['board']}, task_vars)
        if boards.get('failed'):
            return dict(boards, stack=stack, msg='%s: reading the NPU boards failed: %s' % (node, boards.get('msg')))
        checked = versions.version_findings(stack, boards, args['compatibility'], host=node,
                                            unknown_is_fatal=args['unknown_is_fatal'], min_kernel=args['min_kernel'])
        record = store.make_record(run_id, node, STAGE, ROLE, checked['findings'],
                                   check_mode=self.check_mode,
                                   data={'fingerprint': checked['fingerprint']})
        path = store.write_record(args['run_dir'], record)
        warnings = list(stack.get('warnings') or []) + list(boards.get('warnings') or [])
        out = dict(changed=False, stack=stack, boards=boards, fingerprint=checked['fingerprint'],
                   findings=checked['findings'], record=record, path=path,
                   msg='recorded stage 2 (version_check) of %s: %s' % (node, record['status']))
        if warnings:
            out['warnings'] = warnings
        return out

    def step_pod(self, args, run_id, task_vars):
        active = args['active'] if args['active'] is not None else store.without_lost(args['run_dir'], run_id, parts.play_nodes(task_vars)[1])
        records, dummy = store.read_stage(args['run_dir'], run_id, active, STAGE)
        previous, problem = versions.read_history(args['history']) if args['history'] else ({}, None)
        part = versions.pod_part(records, active, previous)
        out = dict(changed=False, **part)
        warnings = [problem] if problem else []
        if args['history'] and not self.check_mode:
            try:
                versions.write_history(args['history'], run_id, part['fingerprints'])
            except OSError as exc:
                warnings.append('could not keep the fingerprints of this run in %s for the next run: %s'
                                % (args['history'], to_native(exc)))
        record = store.make_pod_record(run_id, STAGE, ROLE, part['pod_findings'],
                                       check_mode=self.check_mode,
                                       data={'differences': part['differences'], 'drift': part['drift']})
        out['path'] = store.write_pod_record(args['run_dir'], record)
        out['msg'] = '%d node(s) compared: %d field(s) differ, %d change(s) since the previous run' % (
            len(part['fingerprints']), len(part['differences']), len(part['drift']))
        if warnings:
            out['warnings'] = warnings
        return out
