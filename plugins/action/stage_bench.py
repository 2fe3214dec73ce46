# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of npuops.ascend.stage_bench: the part of stage 3 (the intra-node HCCL bandwidth) on each node.

``step: node`` decides whether the stage applies to the node (its chips are linked by HCCS), copies the AllReduce
script of the role for mode torch (the ``ansible.legacy.copy`` action, so that check mode and diff stay copy's), runs
hccl_bench on the node, turns its result into findings, writes the node's record of stage 3 to the run's store and,
when asked, the node's JSON report - in one task. The decisions are in plugins/plugin_utils/bench.py, the store in
plugins/plugin_utils/store.py. The PoD's bandwidth table and the verdict stay run_once tasks that read the records.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.filter.core import to_nice_json

from ansible_collections.npuops.ascend.plugins.action.report_files import write_reports
from ansible_collections.npuops.ascend.plugins.plugin_utils import bench, store
from ansible_collections.npuops.ascend.plugins.plugin_utils.stage_action import StageAction

ROLE = 'hccl_bench'
STAGE = 3
SCRIPT = 'allreduce_bench.py'
ARGUMENT_SPEC = dict(
    step=dict(type='str', required=True, choices=['node']),
    run_dir=dict(type='path', required=True),
    run_id=dict(type='str', required=True),
    intra_node_link=dict(type='str', default=''),
    hccs=dict(type='bool', default=True),
    mode=dict(type='str', choices=['hccl_test', 'torch'], default='hccl_test'),
    npus=dict(type='int', default=8),
    min_bytes=dict(type='str', default='8K'),
    max_bytes=dict(type='str', default='1G'),
    step_factor=dict(type='int', default=2),
    iters=dict(type='int'),
    warmup_iters=dict(type='int'),
    env=dict(type='dict', default={}),
    hccl_test_path=dict(type='str', default='/usr/local/Ascend/ascend-toolkit/latest/tools/hccl_test/bin/all_reduce_test'),
    mpirun_path=dict(type='str'),
    torchrun_path=dict(type='str'),
    script_dest=dict(type='str', default='/var/lib/npuops/allreduce_bench.py'),
    theory_busbw=dict(type='float', default=196.0),
    band=dict(type='list', elements='float', default=[60, 75]),
    timeout=dict(type='int', default=900),
    report=dict(type='bool', default=True),
)
MODULE_OPTIONS = ('mode', 'npus', 'min_bytes', 'max_bytes', 'step_factor', 'iters', 'warmup_iters', 'env', 'hccl_test_path',
                  'mpirun_path', 'torchrun_path', 'theory_busbw', 'band', 'timeout')


def module_args(args):
    """The options of hccl_bench: an unset one is left out (the module's default), the script only for mode torch, and
    a bandwidth below the band is a finding, never a failure of the module."""
    out = dict((name, args[name]) for name in MODULE_OPTIONS if args[name] is not None)
    if args['mode'] == 'torch':
        out['script'] = args['script_dest']
    out['fail_below_band'] = False
    return out


def shown(result):
    """The warnings and deprecations of a module's result, for Ansible to show as the task's own."""
    return dict((key, list(result[key])) for key in ('warnings', 'deprecations') if result.get(key))


def write_node_report(directory, name, document):
    """Write the node's JSON report on the controller, as npuops.ascend.report_files writes it."""
    try:
        return write_reports(directory, [{'name': name, 'content': to_nice_json(document) + '\n'}])[0]
    except OSError as exc:
        raise AnsibleActionFail(
            'report_files: could not write the reports to %s on the controller: %s. Check that the report '
            'directory (gate_report_dir) is on a writable file system with space left.' % (directory, to_native(exc))) from exc


class ActionModule(StageAction):
    """Stage 3 on a node: the script, the measurement, the findings, the record and the report in one task."""

    NAME = 'stage_bench'
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def copy_script(self, args, task_vars):
        """Copy the role's AllReduce script to the node with the copy action (its check mode, diff and change)."""
        new_task = self._task.copy()
        new_task.args = dict(src=SCRIPT, dest=args['script_dest'], mode='0644')
        copy_action = self._shared_loader_obj.action_loader.get(
            'ansible.legacy.copy', task=new_task, connection=self._connection, play_context=self._play_context,
            loader=self._loader, templar=self._templar, shared_loader_obj=self._shared_loader_obj)
        return copy_action.run(task_vars=task_vars)

    def step_node(self, args, run_id, task_vars):
        node = store.check_node(task_vars.get('inventory_hostname'))
        applies = bench.bench_applies(args['intra_node_link'], args['hccs'])
        out = dict(changed=False, applies=applies)
        if applies and args['mode'] == 'torch':
            copied = self.copy_script(args, task_vars)
            if copied.get('failed'):
                return dict(copied, applies=applies)
            out['changed'] = bool(copied.get('changed'))
            if copied.get('diff'):
                out['diff'] = copied['diff']
        if applies:
            measured = self.run_module('hccl_bench', module_args(args), task_vars)
            result = bench.kept_result(measured)
            out['changed'] = out['changed'] or bool(result.get('changed'))
            out.update(shown(measured))
        else:
            result = dict(bench.NOT_APPLYING)
        findings = bench.bench_findings(result, node)
        record = store.make_record(run_id, node, STAGE, ROLE, findings, bool(result.get('skipped', False)),
                                   self.check_mode, bench.bench_record_data(result))
        path = store.write_record(args['run_dir'], record)
        if args['report']:
            out['report'] = write_node_report(os.path.join(args['run_dir'], 'stage3-hccl_bench'), '%s.json' % node,
                                              bench.bench_report(result, node, run_id, findings))
        out.update(result=result, findings=findings, record=record, path=path,
                   msg='recorded stage 3 (hccl_bench) of %s: %s' % (node, record['status']))
        return out
