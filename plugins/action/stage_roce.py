# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of npuops.ascend.stage_roce: the node's part of stage 4 (lossless RoCE) in one call per step, built
around the node's record (plugins/plugin_utils/roce/record.py).

``step: precheck`` reads the node before the first change and writes its check record of stage 4 (the problems that
stop the change and, for the switch files, the LLDP data of its NPU ports); ``step: lldp`` reads LLDP when no check
record of this run holds it (the switch files run alone); ``step: neighbours`` (once) builds the PoD's neighbour map
from the nodes' check records. ``step: plan`` plans the change (hccn_config in check mode) and chooses the restore point's path on the controller;
``step: change`` sets the ports in one pass or step by step, pings the ring neighbours at the new MTU, reads the ports
back and verifies them; ``step: restore`` restores the node from its restore point when a node of its batch failed;
``step: refused`` records a node the batch's precheck refused; ``step: stop`` (once) tells what a stopped batch left on
every node; ``step: record`` writes the node's stage 4 record and report. A broken connection at any phase is caught
and kept in the record with the phase (the node is neither failed nor unreachable for Ansible: the batch decides);
every step returns the record (registered as ``roce_lossless_node``). ``step: pairwise`` (once, when the PoD is below
the gate after the change) searches for the slow nodes in rounds of disjoint pairs, each round one hccl_bench run of
all its pairs at once, and returns the verdict of pairwise_culprit. ``step: batches`` (once, before the change) cuts
the window's nodes into batches that follow failure domains (the leaf switches of the LLDP neighbour map from the
check records, or inventory groups). ``step: pod`` (once) keeps the PoD part of stage 4 in the PoD record of the
run's store: with ``phase: before`` the cross-node benchmark before the change; with ``phase: after`` the benchmark
after it and its findings (the pairwise search's slow nodes, their ports) and, with ``ladder``, the scaling ladder
(the AllReduce on 1, 2, 4, ... nodes, its efficiency against one node) and, with ``rails``, each rail on its own (NPU d
of every node over its own port, against the port's line rate and the other rails). ``step: ecn`` (every node, in the PoD part of
a run in parts) reads the node's CNP counters again after that benchmark and adds to its record whether the switch
marked ECN on its ports (against the counters its record kept after the change).
"""

from __future__ import annotations

import os
import time

from ansible.errors import AnsibleActionFail, AnsibleConnectionFailure
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.filter.core import to_nice_json

try:  # ansible-core 2.19+: variables an action sets on its host, as set_fact sets them
    from ansible.plugins.action import VariableLayer
except ImportError:  # pragma: no cover - kept for a core without it
    VariableLayer = None

from ansible_collections.npuops.ascend.plugins.action.report_files import write_reports
from ansible_collections.npuops.ascend.plugins.plugin_utils import store
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce import record as rec
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce import window
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.window import (
    batches_text,
    domain_batches,
    group_domains,
    roce_batch_problems,
    switch_domains,
)
from ansible_collections.npuops.ascend.plugins.plugin_utils.bench import (
    SCALING_MAX_RUNGS,
    bench_findings,
    rail_check,
    scaling_ladder,
    scaling_rungs,
)
from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import WARN, finding
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.pairwise import (
    crossnode_findings,
    pairwise_culprit,
    ring_neighbours,
    search_round,
)
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.plan import port_config_subset
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.verify import (
    hccl_alignment_findings,
    pfc_steady_findings,
    roce_port_findings,
)
from ansible_collections.npuops.ascend.plugins.plugin_utils.stage_action import StageAction
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.findings import switch_ecn_findings, switch_pfc_findings
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.neighbours import switch_neighbours

ROLE = 'roce_lossless'
STAGE = 4
ARGUMENT_SPEC = dict(
    step=dict(type='str', required=True, choices=['precheck', 'lldp', 'neighbours', 'plan', 'change', 'restore', 'refused',
                                                  'stop', 'record', 'pairwise', 'batches', 'pod', 'ecn']),
    run_dir=dict(type='path', required=True),
    run_id=dict(type='str', required=True),
    record=dict(type='raw'),
    records=dict(type='dict', default={}),
    batch=dict(type='list', elements='str'),
    hosts=dict(type='list', elements='str'),
    want=dict(type='list', elements='dict', default=[]),
    steps=dict(type='str', choices=['together', 'stepwise'], default='together'),
    addresses=dict(type='str', choices=['check', 'apply', 'ignore'], default='check'),
    allow_busy=dict(type='bool', default=False),
    timeout=dict(type='int', default=60),
    link_timeout=dict(type='int', default=60),
    counter_queries=dict(type='list', elements='str', default=[]),
    backup_dir=dict(type='str', default='/var/lib/npuops/backup'),
    devices=dict(type='list', elements='raw', default=[]),
    intent=dict(type='dict', default={}),
    ping=dict(type='bool', default=True),
    ping_count=dict(type='int', default=3),
    ports=dict(type='dict', default={}),
    plan=dict(type='list', elements='dict'),
    phases=dict(type='list', elements='str'),
    stop_with_batch=dict(type='bool', default=False),
    lldp=dict(type='bool', default=False),
    done_hosts=dict(type='list', elements='str', default=[]),
    before=dict(type='raw'),
    blockers=dict(type='list', elements='dict', default=[]),
    hccl_env=dict(type='dict', default={}),
    hccl_env_file=dict(type='str', default='the HCCL env file'),
    pfc_max_pause_ms_per_s=dict(type='float', default=100.0),
    switch_check=dict(type='str', choices=['fail', 'warn', 'off'], default='fail'),
    restore=dict(type='bool', default=True),
    task=dict(type='str'),
    msg=dict(type='str'),
    lost=dict(type='bool', default=False),
    reason=dict(type='str'),
    findings=dict(type='list', elements='dict', default=[]),
    switch_findings=dict(type='list', elements='dict'),
    ecn=dict(type='dict'),
    gate=dict(type='bool', default=True),
    report=dict(type='bool', default=True),
    mpi_hosts=dict(type='dict', default={}),
    bench=dict(type='dict', default={}),
    threshold=dict(type='float'),
    max_rounds=dict(type='int', default=0),
    domain=dict(type='str', choices=['switch', 'group']),
    domain_groups=dict(type='list', elements='str', default=[]),
    groups=dict(type='dict', default={}),
    size=dict(type='raw', default=1),
    phase=dict(type='str', choices=['before', 'after']),
    result=dict(type='raw'),
    expected=dict(type='raw'),
    pairwise=dict(type='raw'),
    culprit_ports=dict(type='raw'),
    ecn_severity=dict(type='str', choices=['fail', 'warn'], default='warn'),
    cnp=dict(type='raw'),
    ladder=dict(type='dict'),
    rails=dict(type='dict'),
)


class ActionModule(StageAction):
    """Stage 4 on a node: plan, change, restore, and the record every step keeps."""

    NAME = 'stage_roce'
    ARGUMENT_SPEC = ARGUMENT_SPEC

    # ---- running the node's modules ----------------------------------------------------------------------------

    def _remove_tmp_path(self, tmp_path, force=False):
        try:
            return super()._remove_tmp_path(tmp_path, force)
        except AnsibleConnectionFailure:  # the connection broke: the record says so, the temporary files stay
            return False

    def _module(self, name, args, task_vars, out, check_mode=None, diff=None):
        """One module run; a broken connection is a result with ``unreachable`` (as ignore_unreachable registers it).
        Its diff and warnings go up into the action's result ``out``."""
        saved = (self._task.check_mode, self._task.diff)
        if check_mode is not None:
            self._task.check_mode = check_mode
        if diff is not None:
            self._task.diff = diff
        try:
            result = dict(self.run_module(name, args, task_vars))
        except AnsibleConnectionFailure as exc:
            result = {'unreachable': True, 'changed': False, 'msg': to_native(exc)}
        finally:
            self._task.check_mode, self._task.diff = saved
        if result.get('unreachable'):
            result.setdefault('msg', 'no answer')
            return result
        for key in ('warnings', 'deprecations'):
            if result.get(key):
                out.setdefault(key, []).extend(result[key])
        if result.get('diff') and (diff is None or diff):
            diffs = result['diff'] if isinstance(result['diff'], list) else [result['diff']]
            out.setdefault('diff', []).extend(diffs)
        return result

    def _set_facts(self, out, facts):
        """Set variables of the node the way set_fact does (for this play and the later ones of the run)."""
        if VariableLayer is not None:
            try:
                self.register_host_variables(facts, VariableLayer.EPHEMERAL_FACT)
                return
            except (RuntimeError, AttributeError, LookupError, ReferenceError):  # no task context (a unit test)
                pass
        out['ansible_facts'] = facts

    @staticmethod
    def _own_record(args, task_vars):
        host = task_vars.get('inventory_hostname')
        return rec.copy_record(args['record'] if isinstance(args['record'], dict) else None, host, args['steps'])

    def _finish(self, record, out=None, changed=False):
        out = dict(out or {})
        out.update(changed=bool(changed), record=record,
                   msg='%s: %s' % (record['host'], (record.get('failure') or {}).get('msg') or
                                   ('done' if record.get('done') else 'recorded')))
        return out

    # ---- steps -------------------------------------------------------------------------------------------------

    def step_precheck(self, args, run_id, task_vars):
        host = task_vars.get('inventory_hostname')
        out = {}
        switch = args['switch_check'] != 'off'
        read = self._module('health_info', dict(
            # MTU, PFC and the DSCP map are read once, by the plan of the change
            port_queries=['link', 'ip'] + (['lldp'] if switch else []), npu_subset=['processes'], ecc_again=False,
            host=False, env_files=[args['hccl_env_file']], devices=args['devices'], timeout=args['timeout']),
            task_vars, out)
        before = rec.precheck_parts(read)[0]
        blockers = rec.precheck_blockers(read, host, args['plan'], args['allow_busy'], args['switch_check'],
                                         int(args['intent'].get('mtu', 9000)))
        facts = dict(roce_lossless_precheck_health=read, roce_lossless_before=before, roce_lossless_blockers=blockers)
        stops = [b for b in blockers if b.get('severity') == 'fail']
        data = {}
        if args['lldp']:  # the neighbour map of the switch files: the precheck's LLDP, else a read of its own
            lldp_read = None
            if not rec.has_lldp(before):
                lldp_read = self._module('hccn_info', dict(queries=['lldp'], devices=args['devices'],
                                                           timeout=args['timeout']), task_vars, out)
            data['lldp'] = {'node': host, 'devices': rec.lldp_devices(before, lldp_read)}
        # the node's check record of stage 4: what stops its change, and the LLDP data the switch files read
        check = store.make_check(run_id, host, STAGE, ROLE, [b.get('msg') for b in stops], check_mode=self.check_mode,
                                 data=data)
        out['check_record'] = store.write_check(args['run_dir'], check)
        self._set_facts(out, facts)
        out.update(changed=False, blockers=blockers,
                   msg='%s: %d finding(s) stop the change' % (host, len(stops)) if stops else '%s: ready' % host)
        return out

    def step_lldp(self, args, run_id, task_vars):
        """The node's LLDP data in its check record of stage 4: kept when the precheck of this run read it, else read."""
        host = store.check_node(task_vars.get('inventory_hostname'))
        records, dummy = store.read_checks(args['run_dir'], run_id, [host], STAGE)
        have = records.get(host) or {}
        if 'lldp' in (have.get('data') or {}):
            return dict(changed=False, lldp=have['data']['lldp'], msg='%s: LLDP as the precheck of this run read it' % host)
        out = {}
        read = self._module('hccn_info', dict(queries=['lldp'], devices=args['devices'], timeout=args['timeout']),
                            task_vars, out)
        if read.get('failed') or read.get('unreachable'):
            return dict(read, changed=False)
        lldp = {'node': host, 'devices': rec.lldp_devices(None, read)}
        check = store.make_check(run_id, host, STAGE, ROLE, have.get('problems') or [], check_mode=self.check_mode,
                                 data=dict(have.get('data') or {}, lldp=lldp))
        out.update(changed=False, lldp=lldp, check_record=store.write_check(args['run_dir'], check),
                   msg='%s: LLDP read on %d NPU port(s)' % (host, len(lldp['devices'])))
        return out

    def step_neighbours(self, args, run_id, task_vars):
        """The PoD's neighbour map from the LLDP data in the check records of the nodes (``hosts``) of this run."""
        hosts = args['hosts'] or []
        records, missing = store.read_checks(args['run_dir'], run_id, hosts, STAGE)
        for host, record in records.items():
            if 'lldp' not in (record.get('data') or {}):
                missing[host] = 'its check record of stage 4 holds no LLDP data (the precheck ran without the switch files)'
        if missing:
            lines = ['%s: %s' % (host, missing[host]) for host in hosts if host in missing]
            if args['phase'] == 'after':  # the PoD part of a run in parts: the node parts changed their nodes already
                state = ('the node parts of stage 4 may have changed the other nodes; the PoD part keeps the lock of the '
                         'ports: run the node parts that are missing, then this PoD part again')
            else:
                state = 'nothing was changed on any node'
            return dict(changed=False, failed=True, msg=(
                'The neighbour map of the switch files cannot be built: %d node(s) have no LLDP data of run %s; %s: %s'
                % (len(lines), run_id, state, ' | '.join(lines))))
        neighbours = switch_neighbours([records[host]['data']['lldp'] for host in hosts])
        return dict(changed=False, neighbours=neighbours,
                    msg='%d NPU port(s) seen on %d switch(es), %d not seen' % (
                        len(neighbours['ports']), len(neighbours['switches']), len(neighbours['unseen'])))

    def step_plan(self, args, run_id, task_vars):
        record = self._own_record(args, task_vars)
        if record.get('failure'):  # refused by the batch's precheck: nothing is planned
            return self._finish(record)
        out = {}
        host = record['host']
        plan = self._module('hccn_config', dict(
            config=args['want'], allow_busy=args['allow_busy'], timeout=args['timeout'],
            # one pass: when nothing is to change, this is the first read of the pause counters (else the set's own)
            read_after=args['counter_queries'] if args['steps'] == 'together' else []),
            task_vars, out, check_mode=True, diff=False)
        record['plan'] = rec.plan_part(plan)
        record['pending'] = rec.pending(plan)
        if 'read' in plan:
            record['plan_read'] = {'read': plan['read'], 'read_at': plan.get('read_at')}
        record['failure'] = rec.step_failure(host, 'plan', plan)
        if record['pending']:
            record['restore_point']['planned'] = rec.backup_path(args['backup_dir'], host, run_id)
        if not rec.unreachable(plan):
            out['plan'] = record['plan']  # what the change ticket of the batch shows of this node
        return self._finish(record, out)

    def step_refused(self, args, run_id, task_vars):
        record = self._own_record(args, task_vars)
        if not record.get('failure'):
            record['failure'] = rec.refused_failure(args['task'], args['msg'], args['lost'], args['reason'])
        return self._finish(record)

    def step_change(self, args, run_id, task_vars):
        record = self._own_record(args, task_vars)
        batch = args['batch'] if args['batch'] is not None else list(task_vars.get('ansible_play_batch') or [])
        if record.get('failure') or not rec.batch_planned(args['records'], batch):
            return self._finish(record)
        if args['stop_with_batch'] and rec.batch_failed(rec.other_records(args['records'], record['host']), batch):
            # a play with any_errors_fatal (site.yml): another node of the batch failed, so this one goes no further;
            # it is restored with the batch and the stop names the node that failed
            return self._finish(record)
        out = {}
        state = dict(record.get('state') or {})
        changed = False
        for phase in rec.change_phases(args['steps'], args['phases']):
            changed = getattr(self, '_phase_' + phase)(args, task_vars, record, state, batch, out) or changed
            if record.get('failure'):
                break
        record['state'] = state
        return self._finish(record, out, changed)

    def _broke(self, record, phase, result, restore=None):
        """Keep the failure of a phase in the record; True when the node broke there."""
        failure = rec.step_failure(record['host'], phase, result, restore)
        if failure:
            record['failure'] = failure
        return bool(failure)

    def _set_step(self, args, task_vars, record, out, phase, keys, link=True, together=False):
        """One set of the change: the one-pass set of every setting, or one step of the stepwise change."""
        point = record['restore_point']
        module_args = dict(config=rec.step_config(args['want'], keys, args['addresses'] if together else None),
                           allow_busy=args['allow_busy'], timeout=args['timeout'])
        if link:
            module_args['link_timeout'] = args['link_timeout']
        if together:
            module_args.update(backup=True, backup_dir=args['backup_dir'],
                               backup_name=os.path.basename(point['planned']), read_after=args['counter_queries'])
        elif point.get('file'):
            module_args['restore_point'] = point['file']
        result = self._module('hccn_config', module_args, task_vars, out)
        record['changed_devices'] = sorted(set(record.get('changed_devices') or []) | set(result.get('changed_devices') or []))
        record['change'].update(rec.changed_by_step(phase, result, together=together))
        if together:
            point['file'] = result.get('backup_file')
        self._broke(record, phase, result, point['planned'] if together else point.get('file'))
        return result

    def _phase_set(self, args, task_vars, record, state, batch, out):
        if not record['pending']:
            return False
        result = self._set_step(args, task_vars, record, out, 'set', None, together=True)
        state['step_all'] = dict((key, result[key]) for key in ('after', 'read', 'read_at') if key in result)
        state['mtu_changed'] = bool(result.get('changed'))
        return bool(result.get('changed'))

    def _phase_restore_point(self, args, task_vars, record, state, batch, out):
        if not record['pending']:
            return False
        point = record['restore_point']
        result = self._module('hccn_config', dict(
            state='gathered', config=port_config_subset(args['want'], 'device'), backup=True,
            backup_dir=args['backup_dir'], backup_name=os.path.basename(point['planned']), timeout=args['timeout']),
            task_vars, out)
        point['file'] = result.get('backup_file')
        self._broke(record, 'restore_point', result)
        return False

    def _phase_address(self, args, task_vars, record, state, batch, out):
        if not record['pending'] or args['addresses'] != 'apply':
            return False
        return bool(self._set_step(args, task_vars, record, out, 'address', ['address', 'netmask'], link=False)
                    .get('changed'))

    def _phase_mtu(self, args, task_vars, record, state, batch, out):
        if not record['pending']:
            return False
        result = self._set_step(args, task_vars, record, out, 'mtu', 'mtu')
        state['mtu_changed'] = bool(result.get('changed'))
        return bool(result.get('changed'))

    def _phase_pfc(self, args, task_vars, record, state, batch, out):
        if not record['pending']:
            return False
        result = self._set_step(args, task_vars, record, out, 'pfc', 'pfc_priorities')
        state['pfc_changed'] = bool(result.get('changed'))
        return bool(result.get('changed'))

    def _phase_pfc_first(self, args, task_vars, record, state, batch, out):
        queries = args['counter_queries']
        if queries and not (self.check_mode and state.get('pfc_changed')):
            read = self._module('hccn_info', dict(queries=queries, devices=args['devices'], timeout=args['timeout']),
                                task_vars, out)
            if self._broke(record, 'pfc_first', read):
                return False
            state['pfc_first'] = read
        state['pfc_first_at'] = time.time()
        return False

    def _phase_dscp_to_tc(self, args, task_vars, record, state, batch, out):
        if not record['pending']:
            return False
        return bool(self._set_step(args, task_vars, record, out, 'dscp_to_tc', 'dscp_to_tc', link=False).get('changed'))

    def _phase_ping(self, args, task_vars, record, state, batch, out):
        """The jumbo ping: every NPU to the same NPU of its ring neighbours that are at the new MTU already."""
        host, check_mode = record['host'], self.check_mode
        together = args['steps'] == 'together'
        hosts = args['hosts'] if args['hosts'] is not None else list(task_vars.get('ansible_play_hosts_all') or [])
        ring = [h for h in hosts if h in list(args['done_hosts']) + list(batch)]
        neighbours = ring_neighbours(ring, host)
        if not (args['ping'] and neighbours and not (check_mode and state.get('mtu_changed'))):
            return False
        targets = [port.get('address') for other in neighbours for port in (args['ports'].get(other) or [])]
        read_after = []
        if together:  # after a one-pass change, the verification's reading in this module run
            plan = rec.plan_with_read(record)
            step_all = state.get('step_all') or {}
            reads_back = rec.read_back(record['pending'], args['before'], plan)
            first = rec.counters_first(check_mode, record['pending'], step_all, plan, {})[0]
            read_after = rec.verify_queries(step_all, reads_back, first, args['counter_queries'])
        ping = self._module('hccn_ping', dict(
            mode='subnet', targets=targets, size=int(args['intent'].get('mtu')) - 28, count=args['ping_count'],
            devices=args['devices'], fail_on_unreachable=True, timeout=args['timeout'], read_after=read_after),
            task_vars, out)
        record['ping'] = ping.get('summary')
        if 'read' in ping and not ping.get('unreachable'):
            state['ping_read'] = ping['read']
        self._broke(record, 'ping', ping)
        return False

    def _phase_verify(self, args, task_vars, record, state, batch, out):
        """The read-back (unless the jumbo ping read the ports right after its pings) and the verification."""
        host, check_mode = record['host'], self.check_mode
        before, plan, pending = args['before'], rec.plan_with_read(record), record['pending']
        step_all = state.get('step_all') or {}
        reads_back = rec.read_back(pending, before, plan)
        first, first_at = rec.counters_first(check_mode, pending, step_all, plan, state.get('pfc_first') or {})
        if first_at is None:
            first_at = state.get('pfc_first_at') or 0
        after = state.get('ping_read')
        if after is None:
            after = {}
            queries = rec.verify_queries(step_all, reads_back, first, args['counter_queries'])
            if queries:
                after = self._module('hccn_info', dict(queries=queries, devices=args['devices'], timeout=args['timeout']),
                                     task_vars, out)
                if self._broke(record, 'read_back', after):
                    return False
        intent = args['intent']
        ports = rec.port_readings(check_mode, pending, plan, after, step_all, reads_back, before)
        seconds = max(time.time() - float(first_at or 0), 0.1)
        has_first = isinstance(first, dict) and 'devices' in first
        findings = list(rec.warnings_of(args['blockers']))
        for reading in ports:
            findings.extend(roce_port_findings(reading, intent, host, args['devices']))
        alignment = hccl_alignment_findings(args['hccl_env'], intent, host, args['hccl_env_file'])
        findings.extend(dict(f, severity='warn') for f in alignment)
        if has_first:
            findings.extend(pfc_steady_findings(first, after, seconds, host, intent.get('lossless_priority'),
                                                args['pfc_max_pause_ms_per_s']))
        record['findings'] = findings
        record['port_settings'] = ports[-1]
        record['switch_findings'] = (
            switch_pfc_findings(first, after, seconds, host, intent.get('lossless_priority'), before,
                                args['switch_check'])
            if has_first and args['switch_check'] != 'off' else [])
        # for the stages after this one and the cross-node checks: the port settings verified here (stage 5 checks
        # HCCL_RDMA_SL/TC against them), the reading after the change (its CNP counters) and the switch findings
        self._set_facts(out, dict(roce_lossless_port_settings=ports[-1], roce_lossless_after=after,
                                  roce_lossless_switch_findings=record['switch_findings']))
        failure = rec.verify_failure(host, findings)
        if failure:
            record['failure'] = failure
        else:
            record['done'] = True
        return False

    def step_restore(self, args, run_id, task_vars):
        record = self._own_record(args, task_vars)
        batch = args['batch'] if args['batch'] is not None else list(task_vars.get('ansible_play_batch') or [])
        if not rec.needs_restore(record, args['records'], batch, args['restore']):
            return self._finish(record)
        out = {}
        result = self._module('hccn_config', dict(
            restore_from=record['restore_point']['file'], allow_busy=args['allow_busy'],
            link_timeout=args['link_timeout'], timeout=args['timeout']), task_vars, out)
        record['restore'] = rec.restore_part(result)
        return self._finish(record, out, bool(result.get('changed')) and not result.get('unreachable'))

    def step_stop(self, args, run_id, task_vars):
        batch = args['batch'] if args['batch'] is not None else list(task_vars.get('ansible_play_batch') or [])
        hosts = args['hosts'] if args['hosts'] is not None else list(task_vars.get('ansible_play_hosts_all') or [])
        stop = window.window_stop_records(batch, args['records'], hosts, args['restore'])
        stop['results'] = window.stop_results(stop)
        return dict(stop, changed=False, msg=stop['message'])

    def step_record(self, args, run_id, task_vars):
        record = self._own_record(args, task_vars)
        host = store.check_node(record['host'])
        out = dict(changed=False, record=record)
        if args['switch_findings'] is not None:
            record['switch_findings'] = list(args['switch_findings'])
        if args['ecn']:  # did the switch ports mark ECN under the benchmark (only a run at the gate tells)
            ecn = args['ecn']
            record['switch_findings'] = list(record.get('switch_findings') or []) + switch_ecn_findings(
                ecn.get('first'), ecn.get('second'), host, args['intent'].get('lossless_priority', 4), args['before'],
                ecn.get('severity') or 'warn')
        if args['gate']:
            findings = list(record.get('findings') or []) + list(record.get('switch_findings') or []) + args['findings']
            data = rec.record_data(record, args['blockers'])
            if args['cnp'] is not None:  # the CNP counters after the change, for the ECN check of a PoD part
                data['cnp'] = rec.cnp_reading(args['cnp'], args['before'])
            stored = store.make_record(run_id, host, STAGE, ROLE, findings, check_mode=self.check_mode, data=data)
            out['path'] = store.write_record(args['run_dir'], stored)
            out['msg'] = 'recorded stage %d (%s) of %s: %s' % (STAGE, ROLE, host, stored['status'])
        if args['report']:
            report = rec.node_report(record, host, run_id, self.check_mode, args['steps'])
            write_reports(os.path.join(args['run_dir'], 'stage4-roce_lossless'),
                          [{'name': '%s.json' % host, 'content': to_nice_json(report) + '\n'}])
        return out

    def step_pairwise(self, args, run_id, task_vars):
        """The search for slow nodes: rounds of disjoint pairs of ``hosts`` (search_round), each measured at once by one
        hccl_bench run with ``host_groups`` (``bench`` holds its other options, ``mpi_hosts`` the name MPI knows a node
        by), until no pair is left or ``max_rounds`` (default: the number of nodes); the verdict of pairwise_culprit
        with the rounds it took. Changes nothing."""
        hosts = list(args['hosts'] or [])
        if args['threshold'] is None:
            raise AnsibleActionFail('stage_roce: step pairwise needs threshold (the bus bandwidth in GB/s below which a pair '
                                    'is slow).')
        names = dict((str(k), str(v)) for k, v in (args['mpi_hosts'] or {}).items() if v)
        limit = args['max_rounds'] if args['max_rounds'] > 0 else max(1, len(hosts))
        results = []
        out = {}
        stopped = None
        number = 0
        while number < limit:
            pairs = search_round(hosts, results, args['threshold'])
            if not pairs:
                break
            number += 1
            bench = dict(args['bench'], host_groups=[[names.get(host, host) for host in pair] for pair in pairs])
            bench.pop('hosts', None)
            run = self._module('hccl_bench', bench, task_vars, out)
            if run.get('skipped'):
                return dict(changed=False, skipped=True, msg=run.get('msg') or 'the benchmark does not run in check mode')
            if run.get('failed') or run.get('unreachable'):
                stopped = 'round %d (%s) did not run: %s' % (number, ', '.join(' + '.join(p) for p in pairs), run.get('msg'))
                break
            for pair, entry in zip(pairs, run.get('runs') or []):
                results.append({'hosts': pair, 'round': number, 'msg': entry.get('msg'),
                                'busbw': None if entry.get('failed') else entry.get('peak_busbw_gb_s')})
        verdict = pairwise_culprit(results, args['threshold'])
        if stopped:
            verdict['msg'] = '%s; the search stopped: %s' % (verdict['msg'], stopped) if results else \
                'the search for the slow node stopped: %s' % stopped
        out.update(verdict)
        out.update(changed=False, rounds=number)
        return out

    def step_pod(self, args, run_id, task_vars):
        """The PoD part of stage 4 in the PoD record of the run's store (``pod/stage4.json``): ``phase: before`` keeps
        the cross-node benchmark before the change (``result``) with what the gate expects (``expected``); ``phase:
        after`` adds the benchmark after it and the findings of the PoD: the benchmark's (named after the first slow node
        of ``pairwise``, else the first of ``hosts``) and the pairwise search's with the slow nodes' ports; with
        ``ladder`` ({enabled, rungs, max_rungs, min_pct, intra_min_pct}) also the scaling ladder (``data.scaling``,
        its rungs measured with the options of ``bench``) and its findings; with ``rails`` ({mode, min_pct, devices,
        line_rate}) each rail on its own (``data.rails``, see _rails) and its findings."""
        hosts = [str(host) for host in args['hosts'] or []]
        if args['phase'] is None:
            raise AnsibleActionFail('stage_roce: step pod needs phase (before or after).')
        previous, problem = store.read_pod_record(args['run_dir'], run_id, STAGE)
        data = dict((previous or {}).get('data') or {})
        if problem and args['phase'] == 'after':
            raise AnsibleActionFail('stage_roce: %s; run stage 4 again from its part before.' % problem)
        bench = dict(data.get('bench') or {})
        bench[args['phase']] = args['result']
        data.update(bench=bench, expected=args['expected'])
        findings = []
        if args['phase'] == 'after':
            pairwise = args['pairwise'] if isinstance(args['pairwise'], dict) else None
            blame = ((pairwise or {}).get('culprits') or []) + hosts
            findings = crossnode_findings(bench_findings(args['result'], blame[0] if blame else None), pairwise,
                                          args['culprit_ports'], args['expected'])
            data['pairwise'] = pairwise
            if args['ladder'] and args['ladder'].get('enabled', True):
                data['scaling'] = self._ladder(args, hosts, pairwise, task_vars)
                findings.extend(data['scaling'].get('findings') or [])
            if args['rails'] is not None:
                data['rails'] = self._rails(args, hosts, pairwise, data.get('scaling'), task_vars)
                findings.extend(data['rails'].get('findings') or [])
        stored = store.make_pod_record(run_id, STAGE, ROLE, findings, check_mode=self.check_mode, data=data)
        path = store.write_pod_record(args['run_dir'], stored)
        return dict(changed=False, findings=stored['findings'], bench=bench, path=path,
                    msg='recorded the PoD part of stage 4 (%s): %d finding(s)' % (args['phase'], len(stored['findings'])))

    def _ladder(self, args, hosts, pairwise, task_vars):
        """The scaling ladder after the change: the AllReduce on the first 1, 2, 4, ... nodes of ``hosts``
        (scaling_rungs of ``ladder.rungs``), each rung one hccl_bench run with the options of ``bench`` at its largest
        size; the rung of the whole PoD is the benchmark after the change (``result``). Returns scaling_ladder's
        verdict (its findings name the node, and the NPU the pairwise search's port read points at) or why it did
        not run. Changes nothing."""
        ladder = args['ladder']
        result = args['result'] if isinstance(args['result'], dict) else {}
        if result.get('skipped'):
            return {'skipped': True, 'rungs': [], 'findings': [], 'msg': 'the ladder does not run in check mode'}
        if result.get('peak_busbw_gb_s') is None:
            return {'skipped': True, 'rungs': [], 'findings': [],
                    'msg': 'the ladder did not run: the benchmark of the PoD did not measure (%s)' % result.get('msg')}
        wanted = [int(r) if isinstance(r, str) and r.strip().isdigit() else r for r in ladder.get('rungs') or []]
        counts = scaling_rungs(len(hosts), wanted or None, int(ladder.get('max_rungs') or SCALING_MAX_RUNGS))
        names = dict((str(k), str(v)) for k, v in (args['mpi_hosts'] or {}).items() if v)
        out = {}
        rungs = []
        for count in counts:
            chosen = hosts[:count]
            if count == len(hosts):
                rungs.append({'nodes': count, 'hosts': chosen, 'busbw_gb_s': result.get('peak_busbw_gb_s'),
                              'msg': 'the benchmark of the PoD after the change'})
                continue
            bench = dict(args['bench'], hosts=[names.get(host, host) for host in chosen])
            bench.pop('host_groups', None)
            run = self._module('hccl_bench', bench, task_vars, out)
            rungs.append({'nodes': count, 'hosts': chosen, 'msg': run.get('msg'),
                          'busbw_gb_s': None if run.get('failed') or run.get('unreachable') else run.get('peak_busbw_gb_s')})
        verdict = scaling_ladder(rungs, args['expected'], float(ladder.get('min_pct', 70.0)),
                                 float(ladder.get('intra_min_pct', 85.0)), pairwise, args['culprit_ports'])
        return verdict

    RAIL_MODES = ('auto', 'always', 'off')

    def _rails(self, args, hosts, pairwise, scaling, task_vars):
        """Each rail on its own after the change: NPU d of every node of ``hosts`` over its own port, one hccl_bench call
        with ``rails`` (one run per NPU id of ``rails.devices``, all at once, one NPU per node) and the options of
        ``bench`` at its largest size. ``rails.mode``: ``always`` measures; ``auto`` (default) only when the PoD's
        benchmark is below its gate or the scaling ladder has a finding (the rails then tell which NPU); ``off`` never.
        Returns rail_check's verdict against ``rails.line_rate`` (GB/s, default 25) capped by the intra-node figure of
        ``expected``, with ``mode`` and ``why``, or why it did not measure. Changes nothing."""
        rails = args['rails']
        mode = str(rails.get('mode') or 'auto')
        if mode not in self.RAIL_MODES:
            raise AnsibleActionFail('stage_roce: rails.mode must be one of %s, got %r.' % (', '.join(self.RAIL_MODES), mode))
        try:
            min_pct = float(rails.get('min_pct', 85.0))
            line_rate = float(rails.get('line_rate', 25.0))
            devices = [int(device) for device in rails.get('devices') or []]
        except (TypeError, ValueError) as exc:
            raise AnsibleActionFail('stage_roce: rails needs numbers for min_pct and line_rate and NPU ids for devices: %s.'
                                    % to_native(exc)) from exc
        result = args['result'] if isinstance(args['result'], dict) else {}
        skipped = {'mode': mode, 'skipped': True, 'rails': [], 'findings': []}
        if mode == 'off':
            return dict(skipped, msg='the rails are not measured (mode off)')
        if result.get('skipped') or self.check_mode:
            return dict(skipped, msg='the rails do not run in check mode')
        if len(hosts) < 2:
            return dict(skipped, msg='the rails need 2 nodes or more, the PoD has %d' % len(hosts))
        below = bool(result.get('below_band')) or result.get('peak_busbw_gb_s') is None
        ladder = bool((scaling or {}).get('findings'))
        if mode == 'auto' and not (below or ladder):
            return dict(skipped, msg='the rails are not measured: the PoD\'s benchmark reached its gate and the scaling '
                                     'ladder has no finding (mode auto)')
        why = ('mode always' if mode == 'always' else
               'the PoD\'s benchmark is below its gate' if below else 'the scaling ladder has a finding')
        if not devices:
            devices = list(range(int(args['bench'].get('npus') or 8)))
        names = dict((str(k), str(v)) for k, v in (args['mpi_hosts'] or {}).items() if v)
        bench = dict(args['bench'], hosts=[names.get(host, host) for host in hosts], rails=devices, npus=1,
                     theory_busbw=line_rate, band=[min(min_pct, 99.0), 100.0], fail_below_band=False)
        bench.pop('host_groups', None)
        run = self._module('hccl_bench', bench, task_vars, {})
        if run.get('skipped'):
            return dict(skipped, msg=run.get('msg') or 'the rails do not run in check mode')
        if run.get('failed') or run.get('unreachable') or not isinstance(run.get('runs'), list):
            text = 'the rails (NPU %s of %s) did not run: %s' % (', '.join(str(d) for d in devices), ', '.join(hosts),
                                                                 run.get('msg'))
            return dict(skipped, why=why, msg=text, findings=[
                finding(hosts[0], None, 'crossnode_rail', None, 'a measurement of every rail', text, WARN)])
        verdict = rail_check(run['runs'], line_rate, args['expected'], min_pct, args['culprit_ports'], pairwise, hosts)
        verdict.update(mode=mode, why=why, devices=devices)
        return verdict

    def step_ecn(self, args, run_id, task_vars):
        """Whether the switch marked ECN on this node's ports under the benchmark after the change of the PoD part (a
        run in parts): only when that benchmark reached the gate (the PoD record says), the node's CNP counters are read
        again (hccn_info, query stat) and compared with those its record of stage 4 kept after the change
        (``data.cnp``); the findings go into its record. Changes nothing on the node."""
        host = store.check_node(task_vars.get('inventory_hostname'))
        pod, problem = store.read_pod_record(args['run_dir'], run_id, STAGE)
        if problem:
            raise AnsibleActionFail('stage_roce: %s; run the PoD part of stage 4 again.' % problem)
        after = (((pod or {}).get('data') or {}).get('bench') or {}).get('after')
        after = after if isinstance(after, dict) else {}
        if after.get('peak_busbw_gb_s') is None or after.get('below_band', True):
            return dict(changed=False, findings=[], msg='ECN marks of %s not checked: the cross-node benchmark after the '
                                                        'change did not reach the gate' % host)
        record, problem = store.read_record(args['run_dir'], run_id, host, STAGE)
        first = ((record or {}).get('data') or {}).get('cnp')
        if problem or not isinstance(first, dict):
            return dict(changed=False, findings=[], msg='ECN marks of %s not checked: %s' % (
                host, problem or 'its record of stage 4 holds no CNP counters after the change'))
        out = {}
        second = self._module('hccn_info', {'queries': ['stat'], 'devices': args['devices'], 'timeout': args['timeout']},
                              task_vars, out, check_mode=False, diff=False)
        if second.get('failed') or second.get('unreachable'):
            findings = [finding(host, None, 'switch_ecn', None, 'CNP counters', 'the CNP counters could not be read '
                                'after the cross-node benchmark, so ECN marking is not checked: %s' % second.get('msg'),
                                WARN)]
        else:
            findings = switch_ecn_findings(first, second, host, args['intent'].get('lossless_priority', 4), first,
                                           args['ecn_severity'])
        data = dict(record.get('data') or {})
        data['switch_findings'] = [f for f in data.get('switch_findings') or [] if f.get('check') != 'switch_ecn'] + findings
        kept = [f for f in record.get('findings') or [] if f.get('check') != 'switch_ecn']
        stored = store.make_record(run_id, host, STAGE, ROLE, kept + findings, check_mode=self.check_mode, data=data)
        out.update(changed=False, findings=findings, path=store.write_record(args['run_dir'], stored),
                   msg='%s: %d finding(s) of the ECN marks under the benchmark' % (host, len(findings)))
        return out

    def step_batches(self, args, run_id, task_vars):
        """The window's batches by failure domain: ``domain`` ``switch`` (nodes that share a leaf switch in the LLDP data
        of their check records of this run) or ``group`` (the first of ``domain_groups`` a node is in, from ``groups``);
        each domain cut into batches of at most ``size`` nodes. Fails, naming every problem, before any change."""
        hosts = list(args['hosts'] or [])
        problems = roce_batch_problems(args['size'], 'roce_lossless_batch')
        if args['domain'] is None:
            problems.append('step batches needs domain (switch or group)')
        elif args['domain'] == 'switch':
            records, missing = store.read_checks(args['run_dir'], run_id, hosts, STAGE)
            lldp = []
            for host in hosts:
                data = (records.get(host) or {}).get('data') or {}
                if 'lldp' in data:
                    lldp.append(data['lldp'])
                else:
                    missing.setdefault(host, 'its check record of stage 4 holds no LLDP data')
            problems.extend('%s: %s' % (host, missing[host]) for host in hosts if host in missing)
            domains, more = switch_domains(hosts, switch_neighbours(lldp) if lldp else {})
            problems.extend(more if not missing else [])
        else:
            domains, more = group_domains(hosts, args['domain_groups'], args['groups'])
            problems.extend(more)
        if problems:
            return dict(changed=False, failed=True, msg=(
                'The batches of the change window cannot follow the failure domains (roce_lossless_batch_domain=%s): %s. '
                'Nothing was changed on any node.' % (args['domain'], ' | '.join(problems))))
        plan = domain_batches(hosts, domains, args['size'], args['domain_groups'] if args['domain'] == 'group' else None)
        return dict(plan, changed=False, msg=batches_text(plan))
