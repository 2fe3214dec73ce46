# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate between two stages: its verdict over the run's records, its message, the finding of a lost node, and the
run's summary lines."""

from __future__ import annotations

from ansible_collections.npuops.ascend.plugins.plugin_utils import store
from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import FAIL, WARN, finding, findings_text


def gate_message(findings, stage, name):
    """The gate's fail_msg: the failing nodes, then each problem once with the nodes and NPUs that have it."""
    failures = [f for f in findings or [] if f.get('severity') == FAIL]
    if not failures:
        return 'stage %s (%s): gate passed' % (stage, name)
    hosts = sorted(set(f.get('host') for f in failures))
    return 'Stage %s (%s) gate failed on %d node(s) (%s): %s' % (
        stage, name, len(hosts), ', '.join(str(h) for h in hosts), findings_text(failures))


def lost_node_finding(host):
    """The finding for a node that dropped out of the play before the gate."""
    text = 'the node dropped out before the gate (unreachable, or a task failed on it); see the errors above'
    return finding(host, None, 'reachable', None, None, text)


def summary_lines(summary):
    """One line per node per stage: 'node01  stage0 health_check  passed'."""
    lines = []
    for host, stages in sorted(((summary or {}).get('nodes') or {}).items()):
        if not stages:
            lines.append('%-12s no stage ran' % host)
        for key in sorted(stages, key=lambda k: int(k[5:]) if k[5:].isdigit() else 99):
            item = stages[key]
            extra = ''
            if item.get('failures'):
                extra = ' (%d failure(s))' % len(item['failures'])
            elif item.get('warnings'):
                extra = ' (%d warning(s))' % len(item['warnings'])
            lines.append('%-12s stage%s %-14s %s%s' % (host, item.get('stage'), item.get('role'), item.get('status'), extra))
    return lines


def verdict(run_dir, run_id, stage, role, nodes, active):
    """The gate of one stage over the PoD, from the records in the run's store.

    ``nodes`` are the nodes of the play, ``active`` those still in it: a node that dropped out is lost; an active node
    without a usable record of this stage in this run's store is a failure too (never silently passed). Returns
    ``{passed, msg, failures, warnings, findings, nodes}``: ``findings`` every failure and warning, ``msg`` the gate's
    message (the same text the run stops with).
    """
    active = list(active or [])
    lost = [lost_node_finding(node) for node in nodes or [] if node not in active]
    records, problems = store.read_stage(run_dir, run_id, active, stage)
    pod, pod_problem = store.read_pod_record(run_dir, run_id, stage)
    if pod_problem:  # not a node's problem: the PoD part of the stage left nothing usable
        raise store.StoreError('stage %s (%s): %s; run the stage again' % (stage, role, pod_problem))
    pod_findings = (pod or {}).get('findings') or []
    found = []
    for node in active:
        found.extend((records.get(node) or {}).get('findings') or [])
        found.extend(f for f in pod_findings if str(f.get('host')) == node and f not in found)
    found = found + problems + lost
    failures = [f for f in found if f.get('severity') == FAIL]
    warnings = [f for f in found if f.get('severity') == WARN]
    if failures:
        msg = gate_message(found, stage, role)
    else:
        msg = 'Stage %s (%s) gate passed on %d node(s).' % (stage, role, len(active))
    return {'passed': not failures, 'msg': msg, 'failures': [f.get('msg') for f in failures],
            'warnings': [f.get('msg') for f in warnings], 'findings': failures + warnings, 'nodes': sorted(records)}
