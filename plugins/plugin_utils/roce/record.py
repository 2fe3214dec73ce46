# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-node record of stage 4: what one node's change planned, changed, read and verified, where it broke, its
restore point, its restore and whether it is done. npuops.ascend.stage_roce builds it step by step (plan, change,
restore) and returns it (registered as ``roce_lossless_node``); the change ticket, the batch outcome (window.py) and
the rollback of a failed batch read it. Controller side only, pure functions.

A record::

    {host, steps, plan, pending, restore_point: {planned, file}, change: {address, mtu, pfc, dscp_to_tc},
     changed_devices, ping, findings, switch_findings, port_settings, failure, restore, done}

``plan`` is the check-mode hccn_config result (only the keys the ticket and the report read), ``change`` the NPU ids
each setting changed, ``changed_devices`` every NPU id a set touched, ``failure`` ``{task, msg, stage, phase, lost, reason}``: ``phase`` is where the node broke
(:data:`BEFORE`, :data:`DURING` or :data:`AFTER` its set, or ``verify``), ``lost`` whether the connection broke there
(``reason``: what the connection said), ``stage`` ``before`` (nothing was set: the precheck or the plan) or
``change``. ``restore`` is the result of the restore from the restore point after a failure in the batch.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import FAIL, WARN, findings_text
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.plan import port_config_subset
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.ticket import changed_ports
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.verify import roce_precheck_findings
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.window import AFTER, DURING
from ansible_collections.npuops.ascend.plugins.plugin_utils.switch.findings import switch_port_findings

# where a node can break: before its first set (nothing set), during a set (may be changed), after it
BEFORE = ('precheck', 'plan', 'restore_point')
PHASES = BEFORE + DURING + AFTER
VERIFY = 'verify'
# the setting keys of each set step (the one-pass set changes them all)
STEP_KEYS = {'address': ('address', 'netmask'), 'mtu': ('mtu',), 'pfc': ('pfc_priorities',), 'dscp_to_tc': ('dscp_to_tc',)}
PLAN_KEYS = ('failed', 'msg', 'before', 'after', 'commands', 'busy')
RESTORE_KEYS = ('changed', 'changed_devices', 'failed', 'failed_devices', 'link_down_devices', 'msg', 'unreachable',
                'skipped', 'backup_file')

# what each phase is called in the messages (the names its tasks have had)
TASKS = {
    'precheck': 'Check that no node stops the change (nothing has been set yet)',
    'plan': 'Plan the change of the NPU ports (reads and compares, sets nothing)',
    'restore_point': 'Take a restore point of every NPU port of this node',
    'set': 'Set the MTU, PFC and DSCP map of every NPU port in one pass (one link flap per port)',
    'address': 'Set the planned addresses of the NPU ports',
    'mtu': 'Set the jumbo MTU on every NPU port',
    'ping': 'Ping the same NPU of the ring neighbours at the largest size the MTU allows',
    'pfc': 'Enable PFC on the lossless priority only',
    'pfc_first': 'Read the PFC pause counters (first read)',
    'dscp_to_tc': 'Map the lossless DSCP to the lossless traffic class',
    'read_back': 'Read the NPU ports back',
    'verify': 'Check the NPU ports of this node against the lossless intent',
}
# the stop of a node whose connection broke at a phase: (task, message); %(host)s, %(reason)s, %(restore)s
LOST = {
    'plan': ('Stop this node when it could not be reached for its plan (nothing was set on it)',
             '%(host)s: the connection broke before its change (%(reason)s)'),
    'restore_point': ('Stop this node when the connection broke before its first set',
                      '%(host)s: the connection broke before its change (%(reason)s)'),
    'set': ('Stop this node when the connection broke during its change (its ports may be changed)',
            '%(host)s: the connection broke during its change (%(reason)s); its restore point is %(restore)s'),
    'address': ('Stop this node when the connection broke during the address step',
                '%(host)s: the connection broke during its change (%(reason)s); its restore point is %(restore)s'),
    'mtu': ('Stop this node when the connection broke during the MTU step',
            '%(host)s: the connection broke during its change (%(reason)s); its restore point is %(restore)s'),
    'ping': ('Stop this node when the connection broke at the jumbo ping (after its change)',
             '%(host)s: the connection broke after its change (%(reason)s)'),
    'pfc': ('Stop this node when the connection broke during the PFC step',
            '%(host)s: the connection broke during its change (%(reason)s); its restore point is %(restore)s'),
    'pfc_first': ('Stop this node when the connection broke after its PFC step',
                  '%(host)s: the connection broke after its PFC step (%(reason)s)'),
    'dscp_to_tc': ('Stop this node when the connection broke during the DSCP map step',
                   '%(host)s: the connection broke during its change (%(reason)s); its restore point is %(restore)s'),
    'read_back': ('Stop this node when the connection broke while its ports were read back',
                  '%(host)s: the connection broke after its change (%(reason)s)'),
}


def new_record(host, steps='together'):
    """The record of a node before its plan."""
    return {'host': str(host), 'steps': steps, 'plan': None, 'pending': False,
            'restore_point': {'planned': None, 'file': None},
            'change': dict((key, []) for key in STEP_KEYS), 'changed_devices': [], 'ping': None, 'findings': None, 'switch_findings': [],
            'port_settings': None, 'failure': None, 'restore': None, 'done': False, 'state': {}}


def copy_record(record, host=None, steps='together'):
    """A copy of a record to build on (a new one when ``record`` is not one)."""
    out = new_record(host if host is not None else (record or {}).get('host'), steps)
    if isinstance(record, Mapping):
        for key, value in record.items():
            out[key] = dict(value) if isinstance(value, Mapping) else value
    return out


def unreachable(result):
    """Whether a module result says that the connection to the node broke."""
    return isinstance(result, Mapping) and bool(result.get('unreachable'))


def failed(result):
    return isinstance(result, Mapping) and bool(result.get('failed'))


def stage_of(phase):
    """``before`` for a failure before the change block (the precheck, the plan), else ``change``."""
    return 'before' if phase in ('precheck', 'plan') else 'change'


def plan_part(result):
    """What the record keeps of the plan (the check-mode hccn_config result)."""
    if not isinstance(result, Mapping):
        return None
    return dict((key, result[key]) for key in PLAN_KEYS if key in result)


def pending(plan):
    """Whether the plan found anything to change."""
    return bool(isinstance(plan, Mapping) and plan.get('commands'))


def backup_path(backup_dir, host, run_id):
    """The path of a node's restore point, chosen on the controller before its set: known even when the connection
    breaks during the set."""
    safe = ''.join(c if c.isalnum() and c.isascii() or c in '._-' else '_' for c in str(host))
    return '%s/hccn-%s-%s.json' % (str(backup_dir).rstrip('/'), safe, run_id)


def restore_point(record):
    """The restore point of a node: the one its set wrote, else the path chosen for it."""
    point = (record or {}).get('restore_point') or {}
    return point.get('file') or point.get('planned')


def lost_failure(host, phase, reason, restore=None):
    """The failure of a node whose connection broke at ``phase``."""
    task, text = LOST[phase]
    reason = reason or 'no answer'
    return {'task': task, 'msg': text % {'host': host, 'reason': reason, 'restore': restore}, 'stage': stage_of(phase),
            'phase': phase, 'lost': True, 'reason': reason}


def module_failure(phase, result, default=None):
    """The failure of a node whose module failed at ``phase`` (its own message)."""
    if default is None:
        default = ('the connection to the node broke before its change' if stage_of(phase) == 'before'
                   else 'the connection to the node broke')
    msg = result.get('msg') if isinstance(result, Mapping) else None
    return {'task': TASKS.get(phase, '?'), 'msg': msg or default, 'stage': stage_of(phase), 'phase': phase,
            'lost': False, 'reason': None}


def refused_failure(task, msg, lost=False, reason=None):
    """The failure of a node the batch's precheck refused (nothing was set on it)."""
    return {'task': task or '?', 'msg': msg or 'the connection to the node broke before its change', 'stage': 'before',
            'phase': 'precheck', 'lost': bool(lost), 'reason': reason if lost else None}


def step_failure(host, phase, result, restore=None):
    """The failure of a step's module result, None when it went well (or was skipped)."""
    if unreachable(result):
        return lost_failure(host, phase, result.get('msg'), restore)
    if failed(result):
        return module_failure(phase, result)
    return None


def changed_by_step(step, result, together=False):
    """``{setting: NPU ids}`` a set changed: a one-pass set told apart per setting, a stepwise set its own."""
    if not isinstance(result, Mapping):
        return {}
    if together:
        return dict((key, changed_ports(result, list(keys))) for key, keys in STEP_KEYS.items())
    return {step: list(result.get('changed_devices') or [])}


def changed_devices(record):
    """Every NPU id the node's sets changed (their ``changed_devices``)."""
    return sorted(set((record or {}).get('changed_devices') or []))


# ---- the phases of the change ----------------------------------------------------------------------------------------

# the phases of the change of one node, in order: in one pass, or the method's steps
TOGETHER = ('set', 'ping', 'verify')
STEPWISE = ('restore_point', 'address', 'mtu', 'ping', 'pfc', 'pfc_first', 'dscp_to_tc', 'verify')


def change_phases(steps, phases=None):
    """The phases a change call runs, in order: every phase of ``steps`` (together, stepwise), or those of ``phases``."""
    order = TOGETHER if steps == 'together' else STEPWISE
    return [phase for phase in order if phases is None or phase in phases]


def step_config(want, keys=None, addresses=None):
    """The hccn_config ``config`` of a set: ``keys`` of every port (one step), or with ``keys`` None the one-pass set
    of MTU, PFC and the DSCP map, with the addresses when ``addresses`` is apply."""
    if keys is None:
        return list(want or []) if addresses == 'apply' else port_config_subset(want, ['mtu', 'pfc_priorities',
                                                                                       'dscp_to_tc'])
    return port_config_subset(want, keys)


def plan_with_read(record):
    """The plan of a record with its read of the pause counters (``read``, ``read_at``) when it took one."""
    record = record or {}
    return dict(record.get('plan') or {}, **(record.get('plan_read') or {}))


# ---- what the change reads and verifies (the readings of the change, in one place) ---------------------------------

def read_back(pending_change, before, plan):
    """Whether the verification reads the ports back: after a change, or when the precheck or the plan has no reading
    to reuse (a node the plan found tuned is verified from those readings)."""
    return bool(pending_change or not (isinstance(before, Mapping) and 'devices' in before)
                or not (isinstance(plan, Mapping) and 'after' in plan))


def counters_first(check_mode, pending_change, step_all, plan, pfc_first):
    """The first read of the pause counters and when it started: the one-pass set's own, else the plan's (nothing to
    change), else the stepwise read after the PFC step. Empty in check mode while a change is pending."""
    step_all, plan = step_all or {}, plan or {}
    if 'read' in step_all:
        first = step_all['read']
    elif 'read' in plan:
        first = plan['read']
    else:
        first = pfc_first or {}
    if 'read_at' in step_all:
        first_at = step_all['read_at']
    elif 'read_at' in plan:
        first_at = plan['read_at']
    else:
        first_at = None
    if check_mode and pending_change:
        first = {}
    return first, first_at


def verify_queries(step_all, reads_back, first, counter_queries):
    """What the verification reads: the links, after a change that did not read MTU, PFC and the DSCP map back itself
    (the one-pass set does) also those, and the second read of the pause counters."""
    ports = (['link'] if 'after' in (step_all or {}) else ['link', 'mtu', 'pfc', 'dscp_to_tc']) if reads_back else []
    return ports + (list(counter_queries) if isinstance(first, Mapping) and 'devices' in first else [])


def port_readings(check_mode, pending_change, plan, after, step_all, reads_back, before):
    """The readings the ports are verified from, each checked for the keys it holds; in check mode with a pending
    change the ports have not changed, so the plan is verified instead. The last one holds PFC and the DSCP map."""
    plan, step_all = plan or {}, step_all or {}
    if check_mode and pending_change:
        return [plan.get('after')]
    if 'after' in step_all:
        return [after, step_all['after']]
    if reads_back:
        return [after]
    return [before, plan.get('after')]


def verify_failure(host, findings):
    """The failure of a node whose ports do not hold the intent after the change, None when they do."""
    failures = [f for f in findings or [] if isinstance(f, Mapping) and f.get('severity') == FAIL]
    if not failures:
        return None
    msg = ('%s: the NPU ports do not hold the lossless intent after the change (%d problem(s)): %s'
           % (host, len(failures), findings_text(failures)))
    return {'task': TASKS[VERIFY], 'msg': msg, 'stage': 'change', 'phase': VERIFY, 'lost': False, 'reason': None}


def warnings_of(blockers):
    """The precheck's warnings (busy NPUs changed anyway, a switch port) that go to the findings of the node."""
    return [b for b in blockers or [] if isinstance(b, Mapping) and b.get('severity') == WARN]


# ---- the precheck ---------------------------------------------------------------------------------------------------

def precheck_parts(result):
    """``(ports, npus, lost)`` of the precheck's health_info result: each part, or the whole result standing for a part
    that could not be read (it holds the message), and whether the connection broke."""
    result = result if isinstance(result, Mapping) else {}
    ports = result['ports'] if 'ports' in result else result
    npus = result['npu'] if 'npu' in result else result
    return ports, npus, bool(result.get('unreachable'))


def precheck_blockers(result, host, plan=None, allow_busy=False, switch_check='off', mtu=9000):
    """What stops the change of a node, read before anything is set (see roce_precheck_findings): with the NPU
    processes that could not be read (a failure, a warning with ``allow_busy``) and the switch ports (LLDP) unless
    ``switch_check`` is off; a node that could not be reached is one finding."""
    ports, npus, lost = precheck_parts(result)
    read = isinstance(npus, Mapping) and 'processes' in npus
    out = roce_precheck_findings(ports, (npus.get('processes') if read else None) or [], host, plan, allow_busy)
    if not read and not lost:
        out.append({'host': host, 'device': None, 'check': 'busy', 'value': None, 'expected': 'no process',
                    'severity': WARN if allow_busy else FAIL,
                    'msg': '%s: the NPU processes could not be read (%s), so the busy check cannot run%s'
                           % (host, (npus.get('msg') if isinstance(npus, Mapping) else None) or '?',
                              '' if allow_busy else '; fix npu-smi or set roce_lossless_allow_busy=true')})
    if switch_check != 'off' and not lost:
        out.extend(switch_port_findings(ports, host, mtu, switch_check))
    return out


def lldp_devices(before, lldp_read):
    """The LLDP data of a node for the neighbour map: the separate LLDP read when there was one, else the precheck's."""
    source = lldp_read if isinstance(lldp_read, Mapping) and 'devices' in lldp_read else (before or {})
    return (source.get('devices') if isinstance(source, Mapping) else None) or {}


def has_lldp(before):
    """Whether the precheck read LLDP on some port."""
    devices = (before or {}).get('devices') if isinstance(before, Mapping) else None
    return any(isinstance(entry, Mapping) and 'lldp' in entry for entry in (devices or {}).values()) \
        if isinstance(devices, Mapping) else False


# ---- the batch ------------------------------------------------------------------------------------------------------

def batch_planned(records, batch):
    """Whether every node of the batch has a plan that did not fail (and was not refused by the precheck): only then
    does any node of the batch change. A node that fails later, during its own change, does not stop the others."""
    for host in batch or []:
        record = (records or {}).get(host)
        if not isinstance(record, Mapping) or not isinstance(record.get('plan'), Mapping):
            return False
        failure = record.get('failure') if isinstance(record.get('failure'), Mapping) else {}
        if record['plan'].get('failed') or failure.get('phase') in ('precheck', 'plan'):
            return False
    return True


def other_records(records, host):
    """The records of the batch without the one of ``host``."""
    return dict((name, record) for name, record in (records or {}).items() if name != host)


def batch_failed(records, batch):
    """Whether a node of the batch failed (then every node of the batch is restored and the rollout stops)."""
    return any(isinstance((records or {}).get(host), Mapping) and records[host].get('failure') for host in batch or [])


def needs_restore(record, records, batch, restore_enabled=True):
    """Whether this node is restored from its restore point: a node of its batch failed, the restore is on, its set
    wrote a restore point and the connection to it did not break."""
    failure = (record or {}).get('failure') or {}
    return bool(batch_failed(records, batch) and restore_enabled and ((record or {}).get('restore_point') or {}).get('file')
                and not failure.get('lost'))


def restore_part(result):
    """What the record keeps of the restore (the hccn_config restore_from result, registered without failing)."""
    if not isinstance(result, Mapping):
        return None
    return dict((key, result[key]) for key in RESTORE_KEYS if key in result)


def done_hosts(records, batch):
    """The nodes of the batch that are done (verified): ring neighbours at the new MTU for later batches."""
    return [host for host in batch or [] if isinstance((records or {}).get(host), Mapping) and records[host].get('done')]


def ticket_plans(records, batch):
    """``{host: plan}`` of the nodes of the batch that were planned (reached), for the change ticket."""
    out = {}
    for host in batch or []:
        record = (records or {}).get(host)
        if not isinstance(record, Mapping) or not isinstance(record.get('plan'), Mapping):
            continue
        failure = record.get('failure') or {}
        if failure.get('phase') == 'plan' and failure.get('lost'):
            continue
        out[host] = record['plan']
    return out


# ---- the stage 4 record in the store and the report of the node -----------------------------------------------------

def record_data(record, blockers=None):
    """The ``data`` of the node's stage 4 record in the run's store (what the PoD report shows of the node);
    ``blockers`` are the precheck's findings of the node (its switch ports are kept)."""
    record = record or {}
    change = record.get('change') or {}
    findings = record.get('findings')
    failure = record.get('failure')
    data = {
        'backup_file': (record.get('restore_point') or {}).get('file'),
        'changed_devices': {'mtu': change.get('mtu') or [], 'pfc': change.get('pfc') or [],
                            'dscp_to_tc': change.get('dscp_to_tc') or []},
        'failure': failure.get('msg') if isinstance(failure, Mapping) else None,
        'problems': len([f for f in findings if f.get('severity') == FAIL]) if isinstance(findings, list) else None,
        'switch_findings': list(record.get('switch_findings') or []),
        'switch_blockers': [b for b in blockers or [] if isinstance(b, Mapping) and str(b.get('check')).startswith('switch_')],
    }
    if isinstance(record.get('plan'), Mapping):
        data['plan'] = dict(record['plan'])
    return data


def cnp_reading(read, before=None):
    """What a node's record keeps of the CNP counters read after the change (an hccn_info result with the query
    ``stat``): per device its ``stat`` and, from ``before`` (the precheck's reading), its LLDP neighbour, so that the
    ECN check of a PoD part names the switch port as the node's own check does."""
    devices = (read or {}).get('devices') if isinstance(read, Mapping) else None
    known = (before or {}).get('devices') if isinstance(before, Mapping) else None
    out = {}
    for key, entry in (devices or {}).items() if isinstance(devices, Mapping) else []:
        if not isinstance(entry, Mapping) or not isinstance(entry.get('stat'), Mapping):
            continue
        kept = {'stat': dict(entry['stat'])}
        lldp = ((known or {}).get(key) or (known or {}).get(str(key)) or {}) if isinstance(known, Mapping) else {}
        if isinstance(lldp, Mapping) and isinstance(lldp.get('lldp'), Mapping):
            kept['lldp'] = dict(lldp['lldp'])
        out[str(key)] = kept
    return {'devices': out}


def node_report(record, host, run_id, check_mode, steps):
    """The node's JSON report of stage 4 (``<host>.json``)."""
    record = record or {}
    plan = record.get('plan') or {}
    change = record.get('change') or {}
    return {
        'host': host, 'run': run_id, 'check_mode': bool(check_mode),
        'backup_file': (record.get('restore_point') or {}).get('file'),
        'before': plan.get('before', []), 'after': plan.get('after', []), 'commands': plan.get('commands', []),
        'steps': steps,
        'changed_devices': dict((key, change.get(key) or []) for key in STEP_KEYS),
        'ping': record.get('ping'),
        'findings': list(record.get('findings') or []),
        'switch_findings': list(record.get('switch_findings') or []),
    }
