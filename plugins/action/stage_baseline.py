# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of npuops.ascend.stage_baseline: stage 1 (the baseline before tuning) on each node and over its runs.

``step: node`` (one task per node) takes the node's snapshot - health_info reads the NPUs and their ports in one
module run, version_info the software stack; a part that cannot be read stops the node with the tool's words - writes
it to ``<run dir>/stage1-baseline/<node>.snapshot.json`` and writes the node's record of stage 1 with the NPU models
it showed (``data.chip_names``), as not measured (``skipped``). ``step: runs`` (once, after the benchmark's runs)
checks the runs and their spread (``measured``, ``findings``) and records each node of the play again with them (its
own findings, ``skipped`` when nothing was measured), its ``data`` kept; with ``profile`` (profile_info's result read
on the benchmark's host), the split of the profiled steps, its bottleneck verdict and findings
(plugins/plugin_utils/profile.py) go to the host's record (``data.profile``) and to the result (``profile``). The decisions are in
plugins/plugin_utils/bench.py, the store in plugins/plugin_utils/store.py.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail, AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.npuops.ascend.plugins.action.stage_bench import shown, write_node_report
from ansible_collections.npuops.ascend.plugins.plugin_utils import bench, parts, profile, store
from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import WARN, finding
from ansible_collections.npuops.ascend.plugins.plugin_utils.stage_action import StageAction

ROLE = 'baseline'
STAGE = 1
SNAPSHOT_READ = dict(npu_subset=['board', 'health', 'usages', 'processes'], health_view='all', ecc_again=False,
                     port_queries=['link', 'ip', 'gateway', 'mtu', 'pfc', 'dscp_to_tc', 'tls'], host=False)
ARGUMENT_SPEC = dict(
    step=dict(type='str', required=True, choices=['node', 'runs']),
    run_dir=dict(type='path', required=True),
    run_id=dict(type='str', required=True),
    snapshot=dict(type='bool', default=True),
    stage0_chip_names=dict(type='list', elements='str', default=[]),
    results=dict(type='list', elements='dict', default=[]),
    host=dict(type='str'),
    warmup=dict(type='int', default=10),
    seq_length=dict(type='raw'),
    peak_tflops=dict(type='raw'),
    warn_pct=dict(type='raw', default=2),
    fail_pct=dict(type='raw', default=5),
    min_steps=dict(type='int', default=40),
    active=dict(type='list', elements='str'),
    profile=dict(type='dict'),
    profile_comm_max_pct=dict(type='raw', default=profile.COMM_MAX_PCT),
    profile_aicore_min_pct=dict(type='raw', default=profile.AICORE_MIN_PCT),
    profile_free_max_pct=dict(type='raw', default=profile.FREE_MAX_PCT),
)


def without_internals(result):
    return dict((key, value) for key, value in (result or {}).items() if not str(key).startswith('_ansible'))


class ActionModule(StageAction):
    """Stage 1: the node's snapshot and record in one task; the runs' check and the records again, once."""

    NAME = 'stage_baseline'
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def snapshot(self, node, run_id, args, task_vars):
        """``(npu part, failure)``: the node's snapshot written, or the failed task's result."""
        read = self.run_module('health_info', dict(SNAPSHOT_READ), task_vars)
        if read.get('failed'):
            return None, without_internals(read)
        problem = bench.snapshot_problem(read, node)
        if problem:
            return None, dict(failed=True, changed=False, msg=problem, **shown(read))
        stack = self.run_module('version_info', {}, task_vars)
        if stack.get('failed'):
            return None, without_internals(stack)
        document = bench.snapshot_document(read, bench.registered(stack), node, run_id)
        path = write_node_report(os.path.join(args['run_dir'], 'stage1-baseline'), '%s.snapshot.json' % node, document)
        warned = shown(read)
        for key, values in shown(stack).items():
            warned[key] = warned.get(key, []) + values
        return read.get('npu'), dict(snapshot=path, **warned)

    def step_node(self, args, run_id, task_vars):
        node = store.check_node(task_vars.get('inventory_hostname'))
        out, npu = dict(changed=False), None
        if args['snapshot']:
            npu, done = self.snapshot(node, run_id, args, task_vars)
            if done.get('failed'):
                return done
            out.update(done)
        names = bench.chip_names(npu, args['stage0_chip_names'])
        record = store.make_record(run_id, node, STAGE, ROLE, [], skipped=True, check_mode=self.check_mode,
                                   data={'chip_names': names})
        path = store.write_record(args['run_dir'], record)
        out.update(chip_names=names, record=record, path=path,
                   msg='recorded stage 1 (baseline) of %s: %s' % (node, record['status']))
        return out

    def profile_split(self, args):
        """The profile kept in the baseline (profile.profile_record), None without one; a profile that could not be
        read is kept as its error with a warning naming the host."""
        read = args.get('profile')
        if not read or read.get('skipped'):
            return None
        host = str(args['host'])
        if read.get('failed') or not read.get('steps'):
            # failed_when false keeps a failed read's result with failed false: no step figures is the sign
            text = 'the profiler output could not be read: %s' % (read.get('msg') or 'no reason given')
            return {'host': host, 'error': read.get('msg'), 'steps': [], 'summary': {}, 'bottleneck': None,
                    'findings': [finding(host, None, 'profile_read', None, 'a readable profile', text, WARN)]}
        try:
            return profile.profile_record(read, host, args['profile_comm_max_pct'], args['profile_aicore_min_pct'],
                                          args['profile_free_max_pct'])
        except profile.ProfileError as exc:
            raise AnsibleActionFail('stage_baseline: %s' % exc) from exc

    def step_runs(self, args, run_id, task_vars):
        active = args['active'] if args['active'] is not None else store.without_lost(args['run_dir'], run_id, parts.play_nodes(task_vars)[1])
        try:
            checked = bench.baseline_measure(args['results'], host=args['host'], warmup=args['warmup'],
                                             seq_length=args['seq_length'], peak_tflops=args['peak_tflops'],
                                             warn_pct=args['warn_pct'], fail_pct=args['fail_pct'],
                                             min_steps=args['min_steps'])
        except AnsibleFilterError as exc:
            raise AnsibleActionFail(to_native(exc.message)) from exc
        kept = self.profile_split(args)
        findings = list(checked['findings']) + (kept['findings'] if kept else [])
        records, problems = store.read_stage(args['run_dir'], run_id, active, STAGE)
        written = []
        for node in active:
            if node in records:
                data = dict(records[node].get('data') or {})
                if kept and node == str(args['host']):
                    data['profile'] = kept
                record = store.make_record(run_id, node, STAGE, ROLE, findings, not checked['measured'],
                                           self.check_mode, data)
                written.append(store.write_record(args['run_dir'], record))
        return dict(changed=False, measured=checked['measured'], findings=findings, records=written, profile=kept,
                    missing=[p['host'] for p in problems],
                    msg='recorded stage 1 (baseline) of %d node(s): %s' % (
                        len(written), 'measured' if checked['measured'] else 'not measured (%s)' % checked['reason']))
