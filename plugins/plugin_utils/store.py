# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run's store on the controller: one record per node per stage, and what the PoD steps read from it.

A run directory (``<report dir>/<run id>``) holds ``nodes/<node>/stage<N>.json``: the result of stage N on that
node, written on the controller by the gate or by the stage's own action (plugins/action/stage_gate.py,
stage_versions.py); and ``pod/stage<N>.json``: what the PoD-wide part of stage N found over the nodes' records.
The PoD-wide steps (the gate's verdict, the run's summary) read these files and never the facts of other nodes, so
that the per-node part of a run and its PoD part can run in different processes. The shapes are documented in
docs/reference/records.md; ``VERSION`` changes when a key changes meaning or goes away (a new key does not change it).
"""

from __future__ import annotations

import datetime
import json
import os
import re
import stat
import tempfile

from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import FAIL, WARN, finding

SCHEMA = 'npuops.ascend/stage-record'
POD_SCHEMA = 'npuops.ascend/pod-record'
CHECK_SCHEMA = 'npuops.ascend/check-record'
LOST_SCHEMA = 'npuops.ascend/lost-node'
VERSION = 1
STATUSES = ('passed', 'failed', 'skipped', 'stopped')
RECORD_KEYS = ('schema', 'version', 'run', 'node', 'stage', 'role', 'status', 'check_mode', 'time', 'failures',
               'warnings', 'findings', 'data')
# A run id names a directory: letters, digits, '.', '_', '-', starting with a letter or digit.
RUN_ID = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,127}')
_STAGE_FILE = re.compile(r'^stage(\d)\.json$')


class StoreError(Exception):
    """The store cannot be used as asked (a bad name, a link where a directory should be, an unwritable path)."""


def check_run_id(run_id):
    """The run id when it can name a directory, else StoreError saying what is accepted."""
    text = '' if run_id is None else str(run_id)
    if not RUN_ID.fullmatch(text):
        raise StoreError('the run id %r cannot name a run directory: use 1-128 letters, digits, ".", "_" or "-", '
                         'starting with a letter or digit (npuops_run_id)' % (text,))
    return text


def check_node(node):
    """The node's inventory name when it can name a directory of the store, else StoreError."""
    text = '' if node is None else str(node)
    if not text or text in ('.', '..') or '/' in text or '\0' in text or text.startswith('.'):
        raise StoreError('the node name %r cannot name a directory of the run store (no "/", no NUL byte, not starting '
                         'with "."); rename the host in the inventory' % (text,))
    return text


def check_stage(stage):
    """The stage number 0-9, else StoreError."""
    if isinstance(stage, bool) or not isinstance(stage, int) or not 0 <= stage <= 9:
        raise StoreError('the stage must be a whole number from 0 to 9, got %r' % (stage,))
    return stage


def node_dir(run_dir, node):
    return os.path.join(run_dir, 'nodes', check_node(node))


def record_path(run_dir, node, stage):
    return os.path.join(node_dir(run_dir, node), 'stage%d.json' % check_stage(stage))


def _unique(items):
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def make_record(run_id, node, stage, role, findings, skipped=False, check_mode=False, data=None, now=None,
                result=None):
    """The record of one node's stage: its own findings (those naming it), its status and messages.

    ``findings`` may hold other nodes' findings too (a PoD-wide list is the same on every node): only this node's are
    kept. ``status`` is ``skipped`` when the stage did not measure, else ``failed`` when one of them is a failure.
    ``result`` (``{status, failures, warnings}``) is a result a PoD-wide step decided for the node (a stopped change
    window): it replaces what the findings say.
    """
    node = check_node(node)
    mine = _unique([f for f in findings or [] if isinstance(f, dict) and str(f.get('host')) == node])
    failures = [f.get('msg') for f in mine if f.get('severity') == FAIL]
    warnings = [f.get('msg') for f in mine if f.get('severity') == WARN]
    status = 'skipped' if skipped else ('failed' if failures else 'passed')
    if result:
        status = result.get('status')
        if status not in STATUSES:
            raise StoreError('the result of %s stage %s has the status %r; expected one of %s'
                             % (node, stage, status, ', '.join(STATUSES)))
        failures = [str(text) for text in result.get('failures') or []]
        warnings = [str(text) for text in result.get('warnings') or []]
    moment = now or datetime.datetime.now(datetime.timezone.utc)
    return {
        'schema': SCHEMA, 'version': VERSION, 'run': check_run_id(run_id), 'node': node, 'stage': check_stage(stage),
        'role': str(role or ''), 'status': status, 'check_mode': bool(check_mode),
        'time': moment.strftime('%Y-%m-%dT%H:%M:%SZ'), 'failures': failures, 'warnings': warnings,
        'findings': mine, 'data': dict(data or {}),
    }


def _own_dir(path):
    """Create a directory of the store, or accept an existing one; a link or a file there is refused."""
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise StoreError('%s is not a directory (a link or a file is there); the run store does not follow links. '
                         'Remove it, or choose another report directory (npuops_report_dir)' % path)


def write_record(run_dir, record):
    """Write the record atomically to ``<run dir>/nodes/<node>/stage<N>.json``; returns the path."""
    os.makedirs(run_dir, mode=0o755, exist_ok=True)
    _own_dir(os.path.join(run_dir, 'nodes'))
    directory = node_dir(run_dir, record['node'])
    _own_dir(directory)
    path = record_path(run_dir, record['node'], record['stage'])
    return write_json(path, record)


def write_json(path, document, indent=2):
    """Write a JSON document atomically, mode 0644: a temporary file in the same directory, then a rename over
    ``path`` (a link at ``path`` is replaced, never followed). ``indent=4`` is the layout of Ansible's to_nice_json."""
    directory = os.path.dirname(path) or '.'
    handle, tmp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), dir=directory)
    try:
        with os.fdopen(handle, 'w', encoding='utf-8') as out:
            json.dump(document, out, indent=indent, sort_keys=True, separators=(',', ': '))
            out.write('\n')
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    return path


def _load(path):
    """The JSON document at path, read without following a link; (document, None) or (None, problem)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
    except FileNotFoundError:
        return None, 'missing'
    except OSError as exc:
        return None, 'cannot be read (%s)' % (exc.strerror or exc)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, 'is not a regular file'
        with os.fdopen(fd, 'r', encoding='utf-8') as handle:
            fd = None
            return json.load(handle), None
    except (ValueError, UnicodeDecodeError) as exc:
        return None, 'is not valid JSON (%s)' % exc
    except OSError as exc:
        return None, 'cannot be read (%s)' % (exc.strerror or exc)
    finally:
        if fd is not None:
            os.close(fd)


def _header_problem(record, schema, kind, run_id):
    """Why a document of the store is not a record of this run of the given schema (its schema, its version, its run
    id); None when it is."""
    if not isinstance(record, dict) or record.get('schema') != schema:
        return 'is not a %s (schema %r, expected %r)' % (kind, record.get('schema') if isinstance(record, dict) else None,
                                                         schema)
    if record.get('version') != VERSION:
        return 'has record version %r; this collection reads version %d' % (record.get('version'), VERSION)
    if record.get('run') != run_id:
        return 'is of run %s, not of this run %s: a record of another run is never used' % (record.get('run'), run_id)
    return None


def record_problem(record, run_id, node, stage):
    """Why a record read from this run's store cannot be used for this node and stage; None when it can."""
    problem = _header_problem(record, SCHEMA, 'stage record', run_id)
    if problem:
        return problem
    if record.get('node') != node or record.get('stage') != stage:
        return 'is the record of %s stage %s, not of %s stage %s' % (record.get('node'), record.get('stage'), node, stage)
    if record.get('status') not in STATUSES:
        return 'has the status %r (expected one of %s)' % (record.get('status'), ', '.join(STATUSES))
    return None


def read_record(run_dir, run_id, node, stage):
    """``(record, None)`` when this run's store holds a usable record of the node's stage, else ``(None, problem)``."""
    path = record_path(run_dir, node, stage)
    record, problem = _load(path)
    if problem == 'missing':
        return None, 'no record of stage %d in the run store (%s): the stage did not record a result for this node' % (
            stage, path)
    if problem is None:
        problem = record_problem(record, run_id, node, stage)
        if problem is None:
            return record, None
    return None, 'the record of stage %d in the run store (%s) %s' % (stage, path, problem)


def read_stage(run_dir, run_id, nodes, stage):
    """The records of one stage for the given nodes: ``(records by node, findings for the nodes without one)``."""
    records, problems = {}, []
    for node in nodes or []:
        record, problem = read_record(run_dir, run_id, node, stage)
        if record is not None:
            records[node] = record
        else:
            problems.append(finding(node, None, 'stage_record', None, 'record of run %s' % run_id, problem))
    return records, problems


def node_stages(run_dir, run_id, node):
    """``{stageN: record}`` of every usable record of one node in this run's store (others are left out)."""
    out = {}
    try:
        names = os.listdir(node_dir(run_dir, node))
    except OSError:
        return out
    for name in sorted(names):
        match = _STAGE_FILE.match(name)
        if not match:
            continue
        stage = int(match.group(1))
        record, problem = read_record(run_dir, run_id, node, stage)
        if problem is None:
            out['stage%d' % stage] = record
    return out


def own_dir(path):
    """Create a directory of the store, or accept an existing one (a link or a file there is refused)."""
    _own_dir(path)


def load_json(path):
    """``(document, None)`` or ``(None, problem)`` of a JSON file of the store, read without following a link."""
    return _load(path)


def _plain_dir(path):
    """True when ``path`` is a directory and not a link (the store follows no link)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def newest_record(report_dir, node, stage, accept=None, exclude=None):
    """The newest usable record of ``node``'s stage in the runs of the report directory (one directory per run, named
    by its run id), newest meaning the record file written last: ``(record, skipped)``, ``skipped`` saying why each
    newer one could not be used; ``(None, skipped)`` when there is none. ``accept(record)`` returns None for a record
    that will do, else why not; ``exclude`` is a run id left out (the run that asks). Only this node's records are read,
    through the store (schema, version, run id and node checked); no link is followed."""
    try:
        names = os.listdir(report_dir)
    except OSError:
        return None, []
    candidates = []
    for name in names:
        if name == exclude or not RUN_ID.fullmatch(name):
            continue
        other = os.path.join(report_dir, name)
        path = record_path(other, node, stage)
        if not all(_plain_dir(step) for step in (other, os.path.join(other, 'nodes'), os.path.dirname(path))):
            continue
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            candidates.append((info.st_mtime, name))
    skipped = []
    for _mtime, name in sorted(candidates, reverse=True):
        record, problem = read_record(os.path.join(report_dir, name), name, node, stage)
        if record is None:
            skipped.append('run %s: %s' % (name, problem))
            continue
        problem = accept(record) if accept else None
        if problem is None:
            return record, skipped
        skipped.append('run %s: %s' % (name, problem))
    return None, skipped


def pod_record_path(run_dir, stage):
    return os.path.join(run_dir, 'pod', 'stage%d.json' % check_stage(stage))


def make_pod_record(run_id, stage, role, findings, check_mode=False, data=None, now=None):
    """The record of the PoD-wide part of a stage: its findings (each names its node) and what it computed."""
    moment = now or datetime.datetime.now(datetime.timezone.utc)
    return {
        'schema': POD_SCHEMA, 'version': VERSION, 'run': check_run_id(run_id), 'stage': check_stage(stage),
        'role': str(role or ''), 'check_mode': bool(check_mode), 'time': moment.strftime('%Y-%m-%dT%H:%M:%SZ'),
        'findings': _unique([f for f in findings or [] if isinstance(f, dict)]), 'data': dict(data or {}),
    }


def write_pod_record(run_dir, record):
    """Write the PoD record atomically to ``<run dir>/pod/stage<N>.json``; returns the path."""
    os.makedirs(run_dir, mode=0o755, exist_ok=True)
    directory = os.path.join(run_dir, 'pod')
    _own_dir(directory)
    path = pod_record_path(run_dir, record['stage'])
    return write_json(path, record)


def read_pod_record(run_dir, run_id, stage):
    """``(record, None)``, ``(None, None)`` when the stage has no PoD record, or ``(None, problem)``."""
    path = pod_record_path(run_dir, stage)
    record, problem = _load(path)
    if problem == 'missing':
        return None, None
    if problem is None:
        problem = _header_problem(record, POD_SCHEMA, 'PoD record', run_id)
        if problem is None and record.get('stage') != stage:
            problem = 'is the PoD record of stage %s, not of stage %s' % (record.get('stage'), stage)
        if problem is None:
            return record, None
    return None, 'the PoD record of stage %d in the run store (%s) %s' % (stage, path, problem)


def _with_pod(entry, node, pod):
    """A node's summary entry of a stage with the PoD record's findings that name the node added."""
    if not pod:
        return entry
    mine = [f for f in pod.get('findings') or [] if isinstance(f, dict) and str(f.get('host')) == node]
    failures = entry['failures'] + [f.get('msg') for f in mine if f.get('severity') == FAIL and f.get('msg') not in entry['failures']]
    warnings = entry['warnings'] + [f.get('msg') for f in mine if f.get('severity') == WARN and f.get('msg') not in entry['warnings']]
    status = 'failed' if failures and entry['status'] == 'passed' else entry['status']
    return dict(entry, status=status, failures=failures, warnings=warnings)


def summary(run_dir, run_id, nodes, check_mode=False):
    """The run's ``summary.json``: ``{run, check_mode, nodes: {node: {stageN: {stage, role, status, failures,
    warnings}}}}`` from the records in the store (a stage's PoD findings that name a node count for that node), and
    ``lost: {node: {stage, role}}`` when nodes were lost and the run went on without them (npuops_max_lost_nodes)."""
    out, pods = {}, {}
    for node in nodes or []:
        entries = {}
        for key, record in node_stages(run_dir, run_id, node).items():
            if record['stage'] not in pods:
                pods[record['stage']] = read_pod_record(run_dir, run_id, record['stage'])[0]
            entry = {name: record[name] for name in ('stage', 'role', 'status', 'failures', 'warnings')}
            entries[key] = _with_pod(entry, str(node), pods[record['stage']])
        out[str(node)] = entries
    lost = dict((node, {'stage': record['stage'], 'role': record['role']})
                for node, record in read_lost(run_dir, run_id, [str(n) for n in nodes or []]).items())
    document = {'run': run_id, 'check_mode': bool(check_mode), 'nodes': out}
    if lost:
        document['lost'] = lost
    return document


def check_path(run_dir, node, stage):
    return os.path.join(node_dir(run_dir, node), 'check%d.json' % check_stage(stage))


def make_check(run_id, node, stage, role, problems, check_mode=False, data=None, now=None):
    """The record of one node's settings check of a stage (before anything is written): its problems (text) and what
    the stage's node step needs from the check in ``data``; ``usable`` when it has no problem."""
    moment = now or datetime.datetime.now(datetime.timezone.utc)
    problems = [str(text) for text in problems or []]
    return {
        'schema': CHECK_SCHEMA, 'version': VERSION, 'run': check_run_id(run_id), 'node': check_node(node),
        'stage': check_stage(stage), 'role': str(role or ''), 'check_mode': bool(check_mode),
        'time': moment.strftime('%Y-%m-%dT%H:%M:%SZ'), 'usable': not problems, 'problems': problems,
        'data': dict(data or {}),
    }


def write_check(run_dir, record):
    """Write a check record atomically to ``<run dir>/nodes/<node>/check<N>.json``; returns the path."""
    os.makedirs(run_dir, mode=0o755, exist_ok=True)
    _own_dir(os.path.join(run_dir, 'nodes'))
    _own_dir(node_dir(run_dir, record['node']))
    return write_json(check_path(run_dir, record['node'], record['stage']), record)


def read_checks(run_dir, run_id, nodes, stage):
    """The check records of one stage for the given nodes: ``(records by node, problems by node)``, a problem saying
    why the node's check record cannot be used (no record, another run's, not a check record); both in node order."""
    records, problems = {}, {}
    for node in nodes or []:
        path = check_path(run_dir, node, stage)
        record, problem = _load(path)
        if problem == 'missing':
            problem = 'no check record of stage %d in the run store (%s): the check did not run on this node' % (
                stage, path)
        elif problem is None:
            problem = _header_problem(record, CHECK_SCHEMA, 'check record', run_id)
            if problem is None and (record.get('node') != node or record.get('stage') != stage):
                problem = 'is the check record of %s stage %s, not of %s stage %s' % (
                    record.get('node'), record.get('stage'), node, stage)
            if problem is None and not isinstance(record.get('problems'), list):
                problem = 'has no list of problems'
            if problem is None:
                records[node] = record
                continue
            problem = 'the check record of stage %d in the run store (%s) %s' % (stage, path, problem)
        else:
            problem = 'the check record of stage %d in the run store (%s) %s' % (stage, path, problem)
        problems[node] = problem
    return records, problems


def lost_path(run_dir, node):
    return os.path.join(node_dir(run_dir, node), 'lost.json')


def make_lost(run_id, node, stage, role, now=None):
    """The record of a node lost (unreachable) before the gate of ``stage``; the run went on without it."""
    moment = now or datetime.datetime.now(datetime.timezone.utc)
    return {'schema': LOST_SCHEMA, 'version': VERSION, 'run': check_run_id(run_id), 'node': check_node(node),
            'stage': check_stage(stage), 'role': str(role or ''), 'time': moment.strftime('%Y-%m-%dT%H:%M:%SZ')}


def write_lost(run_dir, record):
    """Write a lost-node record atomically to ``<run dir>/nodes/<node>/lost.json``; returns the path."""
    os.makedirs(run_dir, mode=0o755, exist_ok=True)
    _own_dir(os.path.join(run_dir, 'nodes'))
    _own_dir(node_dir(run_dir, record['node']))
    return write_json(lost_path(run_dir, record['node']), record)


def read_lost(run_dir, run_id, nodes):
    """The lost-node records of this run for ``nodes``: ``{node: record}``; a record of another run, or one that is not
    a lost-node record, is not used (the node is not known as lost)."""
    out = {}
    for node in nodes or []:
        record, problem = _load(lost_path(run_dir, node))
        if problem is None and _header_problem(record, LOST_SCHEMA, 'lost-node record', run_id) is None \
                and record.get('node') == node:
            out[node] = record
    return out


def without_lost(run_dir, run_id, nodes):
    """``nodes`` without those this run already lost (a lost-node record of this run): the nodes a PoD step expects a
    record of. A node lost in one part of a run in parts (npuops_run_part) is still in the PoD part's play, which never
    connected to it; its lost-node record keeps it out there too."""
    nodes = [str(node) for node in nodes or []]
    lost = read_lost(run_dir, run_id, nodes)
    return [node for node in nodes if node not in lost]


MEASURE_SCHEMA = 'npuops.ascend/stage-measure'
MEASURED_STAGES = (4, 5, 6, 7, 8)


def measure_path(run_dir, stage):
    return os.path.join(run_dir, 'pod', 'measure-stage%d.json' % check_stage(stage))


def make_measure(run_id, stage, role, host, measurement, check_mode=False, now=None):
    """The benchmark measured right after stage ``stage`` (npuops_measure_each_stage): on which node, and the
    measurement of bench.baseline_measure; stage 9 compares each with the one before it."""
    if check_stage(stage) not in MEASURED_STAGES:
        raise StoreError('stage %s is not a tuning stage that can be measured on its own (%s)'
                         % (stage, ', '.join(str(s) for s in MEASURED_STAGES)))
    moment = now or datetime.datetime.now(datetime.timezone.utc)
    return {'schema': MEASURE_SCHEMA, 'version': VERSION, 'run': check_run_id(run_id), 'stage': stage,
            'role': str(role or ''), 'host': str(host or ''), 'check_mode': bool(check_mode),
            'time': moment.strftime('%Y-%m-%dT%H:%M:%SZ'), 'measurement': dict(measurement or {})}


def write_measure(run_dir, record):
    """Write a stage's measurement atomically to ``<run dir>/pod/measure-stage<N>.json``; returns the path."""
    os.makedirs(run_dir, mode=0o755, exist_ok=True)
    _own_dir(os.path.join(run_dir, 'pod'))
    return write_json(measure_path(run_dir, record['stage']), record)


def read_measures(run_dir, run_id):
    """``(records, problems)``: the measurements after each tuning stage this run kept, in stage order, and a
    sentence for each file that is not one of this run's (never used then)."""
    records, problems = [], []
    for stage in MEASURED_STAGES:
        path = measure_path(run_dir, stage)
        record, problem = _load(path)
        if problem == 'missing':
            continue
        if problem is None:
            problem = _header_problem(record, MEASURE_SCHEMA, 'stage measurement', run_id)
            if problem is None and record.get('stage') != stage:
                problem = 'is the measurement of stage %s, not of stage %s' % (record.get('stage'), stage)
            if problem is None and not isinstance(record.get('measurement'), dict):
                problem = 'holds no measurement'
        if problem is None:
            records.append(record)
        else:
            problems.append('the measurement after stage %d (%s) %s' % (stage, path, problem))
    return records, problems


PLAN_SCHEMA = 'npuops.ascend/run-plan'


def plan_path(run_dir):
    return os.path.join(run_dir, 'pod', 'plan.json')


def make_plan(run_id, nodes, now=None):
    """The plan of a run: the nodes of the whole PoD, written by a part of the run that sees the whole inventory (the
    PoD part, or an unsliced run), read by the node parts, which see only their slice of it."""
    moment = now or datetime.datetime.now(datetime.timezone.utc)
    names = [check_node(node) for node in nodes or []]
    if not names:
        raise StoreError('a run plan needs the nodes of the PoD; the play has none')
    return {'schema': PLAN_SCHEMA, 'version': VERSION, 'run': check_run_id(run_id), 'nodes': names,
            'time': moment.strftime('%Y-%m-%dT%H:%M:%SZ')}


def write_plan(run_dir, record):
    """Write the run plan atomically to ``<run dir>/pod/plan.json``; returns the path."""
    os.makedirs(run_dir, mode=0o755, exist_ok=True)
    _own_dir(os.path.join(run_dir, 'pod'))
    return write_json(plan_path(run_dir), record)


def read_plan(run_dir, run_id):
    """``(plan, None)``, ``(None, None)`` when the run has no plan yet, or ``(None, problem)`` (another run's plan, a
    file that is not a plan): never used then."""
    path = plan_path(run_dir)
    record, problem = _load(path)
    if problem == 'missing':
        return None, None
    if problem is None:
        problem = _header_problem(record, PLAN_SCHEMA, 'run plan', run_id)
        if problem is None and not (isinstance(record.get('nodes'), list) and record['nodes']
                                    and all(isinstance(node, str) for node in record['nodes'])):
            problem = 'has no list of nodes'
        if problem is None:
            return record, None
    return None, 'the run plan (%s) %s' % (path, problem)


def write_summary(run_dir, document):
    """Write ``<run dir>/summary.json`` atomically; returns its path."""
    os.makedirs(run_dir, mode=0o755, exist_ok=True)
    path = os.path.join(run_dir, 'summary.json')
    if os.path.islink(path):
        raise StoreError('%s is a link; the run store does not follow links. Remove it' % path)
    return write_json(path, document, indent=4)
