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


def lost_limit(value, total):
    """How many nodes a run may lose and go on (``npuops_max_lost_nodes``: a count, or a percentage of ``total`` nodes
    rounded down); 0 for anything else (a lost node stops the run)."""
    text = str(value if value is not None else 0).strip()
    try:
        if text.endswith('%'):
            return max(0, int(float(text[:-1]) / 100.0 * total))
        return max(0, int(text))
    except ValueError:
        return 0


def lost_problems(value):
    """[] when ``value`` is a ``npuops_max_lost_nodes`` the run accepts (a whole number from 0, or a whole percentage
    from 0% to 100%), else one sentence naming the variable, the value and what is accepted."""
    text = str(value).strip() if not isinstance(value, bool) and value is not None else ''
    number = text[:-1].strip() if text.endswith('%') else text
    if number.isdigit() and number.isascii() and (not text.endswith('%') or int(number) <= 100):
        return []
    return ['npuops_max_lost_nodes %r is not a number of nodes: give a whole number from 0 (0, the default: a lost node '
            'stops the run) or a percentage of the nodes from 0%% to 100%%, such as 5%%' % (value,)]


def lost_finding(host, stage, role, count, limit):
    """The warning for a node lost before the gate of a stage, when the run may go on without it."""
    text = ('lost before the gate of stage %s (%s): unreachable; the run goes on without it (%d of at most %d lost '
            'node(s), npuops_max_lost_nodes)' % (stage, role, count, limit))
    return finding(host, None, 'reachable', None, None, text, severity=WARN)


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
    for host, item in sorted(((summary or {}).get('lost') or {}).items()):
        lines.append('%-12s lost before the gate of stage%s %s (unreachable); the run went on without it' % (
            host, item.get('stage'), item.get('role')))
    return lines


def verdict(run_dir, run_id, stage, role, nodes, active, failed=None, max_lost=0):
    """The gate of one stage over the PoD, from the records in the run's store.

    ``nodes`` are the nodes of the play, ``active`` those still in it: a node that dropped out is lost; an active node
    without a usable record of this stage in this run's store is a failure too (never silently passed). With
    ``max_lost`` (npuops_max_lost_nodes: a count or a percentage of ``nodes``) above 0, the nodes that dropped out
    unreachable (not in ``failed``, the nodes a task failed on) are lost: while the run's lost nodes are no more than
    the limit each is a warning at the first gate after it was lost (a lost-node record keeps it out of later gates'
    findings) and the run goes on without it; above the limit, or a node a task failed on, is a failure. ``failed``
    None means unknown: every node that dropped out counts as failed. Returns ``{passed, msg, failures, warnings,
    findings, nodes, lost}``: ``findings`` every failure and warning, ``msg`` the gate's message (the same text the run
    stops with), ``lost`` the nodes lost at this gate.
    """
    # a node this run already lost (its lost-node record) stays lost, also in a PoD part that never connected to it
    active = store.without_lost(run_dir, run_id, active)
    dropped = [node for node in nodes or [] if node not in active]
    failed = set(dropped if failed is None else failed)
    unreachable = [node for node in dropped if node not in failed]
    limit = lost_limit(max_lost, len(nodes or []))
    known = store.read_lost(run_dir, run_id, unreachable) if limit else {}
    new = [node for node in unreachable if node not in known]
    lost_now = []
    if limit and unreachable and len(unreachable) <= limit:
        lost = [lost_node_finding(node) for node in dropped if node in failed]
        for node in new:
            store.write_lost(run_dir, store.make_lost(run_id, node, stage, role))
            lost.append(lost_finding(node, stage, role, len(unreachable), limit))
            lost_now.append(node)
    elif limit and unreachable:
        text = ('%d node(s) lost (%s), more than npuops_max_lost_nodes allows (%d of %d node(s)); the run stops'
                % (len(unreachable), ', '.join(unreachable), limit, len(nodes)))
        lost = [lost_node_finding(node) for node in dropped if node in failed]
        lost.extend(finding(node, None, 'reachable', None, None, text) for node in unreachable)
    else:
        lost = [lost_node_finding(node) for node in dropped]
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
            'warnings': [f.get('msg') for f in warnings], 'findings': failures + warnings, 'nodes': sorted(records),
            'lost': lost_now}
