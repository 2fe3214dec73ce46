# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NPU ports of one node as a resource: read, guard, back up, apply, verify, restore.

:class:`PortConfig` is the logic of the hccn_config module (whose file keeps only the
documentation, the argument spec and a short ``main``). It decides with the pure port
attribute table (:mod:`.port_table`) and acts through the hccn_tool and npu-smi adapters.
:func:`vocabulary` turns what the adapter read into the table's vocabulary; hccn_info uses
it too, so both modules speak the same shape.
Python 3.9 compatible: this file runs on the managed nodes.
"""

from __future__ import annotations

import json
import os
import re
import time

from ansible_collections.npuops.ascend.plugins.module_utils._domain.port_table import PORTS, BackupError, ConfigError, dump_backup, backup_filename
from ansible_collections.npuops.ascend.plugins.module_utils._tools import hccn_tool as _hccn_tool
from ansible_collections.npuops.ascend.plugins.module_utils._tools.hccn_tool import HccnTool
from ansible_collections.npuops.ascend.plugins.module_utils._tools.npu_smi import NpuSmi, discover_devices
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import (
    ModuleFailure,
    Runner,
    cmd_to_text,
    host_name,
    in_parallel,
    sentence,
)

NOTHING_CHANGED = 'Nothing was changed.'


def vocabulary(table, device, readings):
    """What the adapter read for one device, in the table's vocabulary.

    ``readings`` is ``{query: Reading}``. Returns ``(have, problems, warnings)``: ``have``
    holds every key of the queries read (null when not configured or not answered);
    ``problems`` are the readings that did not give a value for another reason than "not
    configured" (the caller decides whether that is fatal); ``warnings`` are the parser's.
    """
    have = {'device': device}
    problems = []
    warnings = []
    for query, reading in readings.items():
        warnings.extend(reading.warnings())
        if reading.meaning is None:
            have.update(table.read(query, reading.parsed))
            continue
        have.update(table.read(query, None))
        if reading.meaning != _hccn_tool.UNSET:
            problems.append(reading)
    return have, problems, warnings


def undo_hint(backup_file, restoring=None):
    """What a user does to return a node to the state before a failed change.

    ``restoring`` is the restore point a restore (restore_from) applies: its failure is finished by applying it
    again, and with a backup of its own the state before the restore can be put back too.
    """
    if backup_file and restoring:
        return ('restore the state before this restore with npuops.ascend.hccn_config and restore_from: %s, or apply '
                'the restore point %s again once the cause is fixed' % (backup_file, restoring))
    if backup_file:
        return 'restore the previous state with npuops.ascend.hccn_config and restore_from: %s' % backup_file
    if restoring:
        return 'apply the restore point %s again (hccn_config restore_from) once the cause is fixed' % restoring
    return 'restore the previous values by hand (no backup was written; use backup=true next time)'


#: A backup_name: a plain file name, no directory, not hidden.
BACKUP_NAME = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9._-]{0,200}$')


def backup_name_problem(name):
    """None when ``name`` can be the file name of a backup, else why not."""
    if name is None:
        return None
    if not BACKUP_NAME.match(name) or name in ('.', '..'):
        return ('backup_name must be a plain file name of letters, digits, ".", "_" and "-" that does not start with '
                '"." (got %r)' % name)
    return None


def write_backup(backup_dir, host, document, name=None):
    """Write a backup document (0600, never over an existing file); return its path. Raises OSError.

    ``name`` is the file name the caller chose (so that it knows the path even when it loses the connection during the
    task); a file of that name that exists already is an error. Without it the name is hccn-<host>-<UTC time>.json,
    with a counter when that exists.
    """
    if not os.path.isdir(backup_dir):
        os.makedirs(backup_dir, 0o700)
    data = dump_backup(document).encode('utf-8')
    if name:
        path = os.path.join(backup_dir, name)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0), 0o600)
        except FileExistsError:
            raise OSError('a file named %s exists already; a restore point is never overwritten' % name) from None
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        return path
    base = backup_filename(host, time.strftime('%Y%m%dT%H%M%SZ', time.gmtime()))
    for attempt in range(100):
        name = base if attempt == 0 else base.replace('.json', '-%d.json' % attempt)
        path = os.path.join(backup_dir, name)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        return path
    raise OSError('no free backup file name for %s in %s' % (base, backup_dir))


def _ids(devices):
    return ', '.join(str(d) for d in devices) or 'none'


def _value_text(value):
    """A value read back, short: [4] for a PFC list, 33->3 for DSCP map entries."""
    if isinstance(value, list) and value and all(isinstance(item, dict) and len(item) == 2 for item in value):
        return ', '.join('%s->%s' % tuple(item.values()) for item in value)
    if isinstance(value, list):
        return '[%s]' % ', '.join(str(item) for item in value)
    return str(value)


class PortConfig:
    """hccn_config's states on one node. Collects ``warnings``; raises ModuleFailure."""

    def __init__(self, module, table=PORTS):
        self.module = module
        self.params = module.params
        self.table = table
        self.host = host_name()
        self.warnings = []
        self.runner = Runner(module, self.params['timeout'])
        self._hccn = None

    @property
    def hccn(self):
        if self._hccn is None:
            self._hccn = HccnTool.find(self.module, self.runner, self.params['hccn_tool_path'], self.host)
        return self._hccn

    def run(self):
        """Run the requested state; the result dict for exit_json."""
        try:
            return getattr(self, self.params['state'])()
        except ModuleFailure as exc:
            exc.at(self.host)
            raise

    # ---- states without the node ---------------------------------------------------------
    def rendered(self):
        entries = self.table.validate(self.params['config'])
        argvs = self.table.render_request(_hccn_tool.NAME, entries)
        return {'changed': False, 'rendered': [_hccn_tool.command_string(a) for a in argvs]}

    def parsed(self):
        parsed, warnings = self.table.parse_running_config(self.params['running_config'])
        self.warnings.extend(warnings)
        return {'changed': False, 'parsed': parsed}

    # ---- reading -------------------------------------------------------------------------
    def read(self, plan, tolerate=None):
        """``plan`` is [(device, queries)]; returns {device: have} in vocabulary.

        A query the port cannot answer right now fails the task before anything changes,
        or with ``tolerate`` (the sentence added to the warning) gives null and a warning;
        any other failure always fails.
        """
        readings = self.hccn.read_devices(plan, self.params['workers'])
        haves = {}
        for device, _queries in plan:
            have, problems, warnings = vocabulary(self.table, device, readings[device])
            self.warnings.extend(warnings)
            for reading in problems:
                if tolerate and reading.meaning == _hccn_tool.UNANSWERED:
                    self.warnings.append(reading.reply.failure(self.hccn.subject(device), tolerate).msg)
                    continue
                raise reading.reply.failure(self.hccn.subject(device), NOTHING_CHANGED)
            haves[device] = have
        return haves

    def gathered(self):
        devices, warnings = discover_devices(
            self.module, self.runner, [item['device'] for item in self.params['config'] or []],
            self.params['npu_smi_path'], self.host, then='Give the devices in config.')
        self.warnings.extend(warnings)
        devices = sorted(devices)
        haves = self.read([(d, list(self.table.queries)) for d in devices], tolerate='Its values are returned as null.')
        result = {'changed': False, 'gathered': [self.table.export(haves[d]) for d in devices], 'backup_file': None}
        if self.params['backup'] and not self.module.check_mode:
            # a restore point for a change made by several tasks (the roce_lossless role): every attribute of every
            # device read; a restore sets only what differs then. Writing a backup changes nothing on the ports.
            document = self.table.backup_document(self.host, time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
                                                  [haves[d] for d in devices])
            try:
                result['backup_file'] = write_backup(self.params['backup_dir'], self.host, document,
                                                     self.params.get('backup_name'))
            except OSError as exc:
                raise ModuleFailure('could not write the backup in %s: %s. Nothing was changed; fix backup_dir or set '
                                    'backup=false.' % (self.params['backup_dir'], exc), **result) from exc
        return result

    # ---- merged --------------------------------------------------------------------------
    def load_restore(self, path):
        """The ``config`` held by a backup file written by this module."""
        if not os.path.isabs(path):
            raise BackupError('restore_from %s: give the absolute path of the backup file. %s' % (path, NOTHING_CHANGED))
        try:
            with open(path) as handle:
                document = json.load(handle)
        except (OSError, ValueError) as exc:
            raise BackupError('restore_from %s: cannot read the backup: %s. %s' % (path, exc, NOTHING_CHANGED)) from exc
        try:
            config, warnings = self.table.config_from_backup(document, self.host, self.params['allow_other_host'])
        except BackupError as exc:
            raise BackupError('restore_from %s: %s. %s' % (path, exc.text, NOTHING_CHANGED)) from exc
        self.warnings.extend(warnings)
        return config

    def busy_guard(self, devices, result):
        """Refuse (or, in check mode / with allow_busy, warn) when NPU processes run on ``devices``."""
        params = self.params
        try:
            npu_smi = NpuSmi.find(self.module, self.runner, params['npu_smi_path'], self.host)
            busy = npu_smi.processes(devices, then='The busy check could not run, so nothing was changed; fix npu-smi '
                                                   'or set allow_busy=true to skip the check.')
            self.warnings.extend(npu_smi.warnings)
        except ModuleFailure as exc:
            if not (params['allow_busy'] or self.module.check_mode):
                raise
            self.warnings.append('%s The busy check was skipped.' % sentence(exc.msg))
            return
        if not busy:
            return
        result['busy'] = busy
        listing = ', '.join('NPU %s: pid %s (%s)' % (b['device'], b['pid'], b['name']) for b in busy)
        if params['allow_busy']:
            self.warnings.append('%s: changing NPU ports while processes run on them (allow_busy=true): %s' % (self.host, listing))
        elif self.module.check_mode:
            self.warnings.append('%s: processes run on NPUs that would change: %s. The real run will refuse unless '
                                 'allow_busy=true.' % (self.host, listing))
        else:
            refused = dict(result)
            refused['changed'] = False
            raise ModuleFailure('refusing to change NPU ports while processes run on them: %s. Stop the job, or set '
                                'allow_busy=true. %s' % (listing, NOTHING_CHANGED), **refused)

    def apply_device(self, step, undo):
        """Apply one device's commands, wait for its link, read back; a dict: device, ran, have, error, link_down.

        ``undo`` is the sentence that tells how to go back (:func:`undo_hint`).
        """
        entry, changes, argvs = step['entry'], step['changes'], step['argvs']
        device = entry['device']
        subject = self.hccn.subject(device)
        outcome = {'device': device, 'ran': False, 'have': None, 'error': None, 'link_down': False}
        for argv in argvs:
            try:
                reply = self.hccn.call(argv)
            except ModuleFailure as exc:
                outcome['error'] = dict(exc.result(), msg='%s Then %s.' % (sentence(exc.msg), undo))
                return outcome
            if not reply.ok:
                if outcome['ran']:
                    then = 'Earlier commands on this device were applied, later ones were not run; to undo them, %s.' % undo
                else:
                    then = 'Nothing was changed on this device.'
                outcome['error'] = reply.failure(subject, then).result()
                return outcome
            outcome['ran'] = True
        bouncing = [row.name for row in self.table.rows if row.link_affecting and row.query in changes]
        if bouncing:
            up, last = self.hccn.wait_link_up(device, self.params['link_timeout'])
            if not up:
                argv = self.hccn.link_argv(device)
                link = {'cmd': cmd_to_text(argv), 'rc': None, 'stdout': last, 'stderr': ''}
                changed_names = ' and '.join(n.upper() for n in bouncing)
                after = '%s s after changing %s (%s: %s)' % (self.params['link_timeout'], changed_names, cmd_to_text(argv), last)
                if self.params['restore_from']:
                    return self.link_down_after_restore(step, outcome, link, after, undo)
                outcome['error'] = dict(link, msg='%s: link still not UP %s. Check the switch port (its MTU and PFC must '
                                                  'match), or %s.' % (subject, after, undo))
                return outcome
        try:
            readings = self.hccn.read_device(device, self.table.queries_for(entry))
        except ModuleFailure as exc:
            outcome['error'] = dict(exc.result(), msg='%s Could not read the values back; %s.' % (sentence(exc.msg), undo))
            return outcome
        have, problems, warnings = vocabulary(self.table, device, readings)
        self.warnings.extend(warnings)
        if problems:
            failure = problems[0].reply.failure(subject, 'Could not read the values back; %s.' % undo)
            outcome['error'] = failure.result()
            return outcome
        outcome['have'] = have
        wrong = self.table.mismatches(entry, have)
        if wrong:
            outcome['error'] = {
                'msg': '%s: %s (hccn_tool rc=0). Check that the driver supports these set commands, or %s.'
                       % (subject, '; '.join(wrong), undo),
                'cmd': cmd_to_text(argvs[-1]), 'rc': 0, 'stdout': '', 'stderr': '',
            }
        return outcome

    def link_down_after_restore(self, step, outcome, link, after, undo):
        """A restore whose sets all answered rc=0 but whose link did not come back UP: read back what the port can
        answer with its link down. When every value read is the restore point's, the values are back and only the link
        is down (``link_down``): the cabling, the optical module or the switch port, not the settings."""
        entry = step['entry']
        device = entry['device']
        subject = self.hccn.subject(device)
        try:
            readings = self.hccn.read_device(device, self.table.queries_for(entry))
        except ModuleFailure as exc:
            outcome['error'] = dict(link, msg='%s: link still not UP %s, and the values could not be read back (%s); %s.'
                                              % (subject, after, sentence(exc.msg).rstrip('.'), undo))
            return outcome
        have, problems, warnings = vocabulary(self.table, device, readings)
        self.warnings.extend(warnings)
        unread = set()
        for query, reading in readings.items():
            if reading.meaning == _hccn_tool.UNANSWERED:
                unread.update(key for key in self.table.read(query, None) if key != 'device')
            elif reading in problems:
                outcome['error'] = reading.reply.failure(subject, 'The link is still not UP %s; %s.' % (after, undo)).result()
                return outcome
        readable = dict((key, value) for key, value in entry.items() if key == 'device' or key not in unread)
        outcome['have'] = have
        wrong = self.table.mismatches(readable, have)
        if wrong:
            outcome['error'] = dict(link, msg='%s: link still not UP %s, and %s; %s.' % (subject, after, '; '.join(wrong), undo))
            return outcome
        shown = self.table.export(self.table.restrict(readable, have))
        values = '; '.join('%s %s' % (key, _value_text(shown[key])) for key in shown if key != 'device') or 'nothing'
        missing = sorted(key for key in entry if key in unread)
        outcome['link_down'] = True
        outcome['error'] = dict(link, msg=(
            '%s: the values of the restore point %s were set (every hccn_tool set answered rc=0; read back: %s%s), but '
            'the link is still not UP %s: check the cable, the optical module and the switch port.'
            % (subject, self.params['restore_from'], values,
               '; %s cannot be read while the link is down' % ', '.join(missing) if missing else '', after)))
        return outcome

    def merged(self):
        result = self.merge()
        queries = self.params.get('read_after') or []
        devices = [entry['device'] for entry in result['before']]
        # in check mode with changes pending the ports are not as the task would leave them: nothing to read after
        if queries and devices and not (self.module.check_mode and result['changed']):
            result.update(self.read_after(queries, devices))
        return result

    def read_after(self, queries, devices):
        """``read_after``: hccn_info's reading of ``queries`` on ``devices`` once the change is made (or found not
        needed), in the same module run; ``read_at`` is when it started (seconds since the epoch)."""
        # here, not at the top: hccn_info.py imports this file
        from ansible_collections.npuops.ascend.plugins.module_utils._domain.hccn_info import gather  # pylint: disable=import-outside-toplevel
        started = time.time()
        reading = gather(self.module, dict(self.params, queries=queries, devices=devices, fallback_devices=None),
                         self.warnings)
        return {'read': reading, 'read_at': round(started, 3)}

    def merge(self):
        params = self.params
        config = self.load_restore(params['restore_from']) if params['restore_from'] else params['config']
        entries = self.table.validate(config)
        result = {'changed': False, 'before': [], 'after': [], 'commands': [], 'changed_devices': [], 'failed_devices': [],
                  'link_down_devices': [], 'backup_file': None}
        if not entries:
            return result
        # A restore is what brings a port back after a change left it broken (a link that stays down cannot
        # answer a PFC query): there a value that cannot be read is set from the backup without comparing.
        tolerate = ('The value from the backup is set without comparing it with the current one.'
                    if params['restore_from'] else None)
        haves = self.read([(e['device'], self.table.queries_for(e)) for e in entries], tolerate=tolerate)
        problems = []
        for entry in entries:
            problems.extend(self.table.check_against_have(entry, haves[entry['device']]))
        if problems:
            raise ConfigError(problems)

        plan = []
        for entry in entries:
            have = haves[entry['device']]
            changes = self.table.diff(entry, have)
            step = {'entry': entry, 'changes': changes, 'argvs': self.table.render(self.hccn.path, entry['device'], changes),
                    'before': self.table.restrict(entry, have),
                    'expected': self.table.restrict(entry, self.table.merge(have, changes))}
            plan.append(step)
            result['before'].append(self.table.export(step['before']))
            result['after'].append(self.table.export(step['expected']))
            result['commands'].extend(_hccn_tool.command_string(a) for a in step['argvs'])
        todo = [step for step in plan if step['argvs']]
        if not todo:
            return result
        result['changed'] = True
        result['diff'] = [self.table.device_diff(self.host, s['before'], s['expected']) for s in todo]
        self.busy_guard([s['entry']['device'] for s in todo], result)
        if self.module.check_mode:
            return result

        if params['backup']:
            document = self.table.backup_document(self.host, time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
                                                  [s['before'] for s in todo])
            try:
                result['backup_file'] = write_backup(params['backup_dir'], self.host, document, params.get('backup_name'))
            except OSError as exc:
                refused = dict(result)
                refused['changed'] = False
                raise ModuleFailure('could not write the backup in %s: %s. Nothing was changed; fix backup_dir or set '
                                    'backup=false.' % (params['backup_dir'], exc), **refused) from exc

        # the way back a failure names: this task's backup, else the restore point the caller took before; a restore
        # is finished by applying its restore point again
        way_back = result['backup_file'] or params.get('restore_point')
        undo = undo_hint(way_back, params['restore_from'])
        outcomes = in_parallel(lambda step: self.apply_device(step, undo), todo, params['workers'])
        after = dict((s['entry']['device'], self.table.export(s['expected'])) for s in plan if not s['argvs'])
        errors = []
        for step, outcome in zip(todo, outcomes):
            device = step['entry']['device']
            if isinstance(outcome, BaseException):
                text = '%s: unexpected error: %s; %s.' % (self.hccn.subject(device), outcome, undo)
                outcome = {'device': device, 'ran': True, 'have': None, 'link_down': False,
                           'error': {'msg': text, 'cmd': None, 'rc': None, 'stdout': '', 'stderr': ''}}
            if outcome['ran']:
                result['changed_devices'].append(device)
            have = outcome['have']
            after[device] = self.table.export(self.table.restrict(step['entry'], have)) if have else {'device': device}
            if outcome['error']:
                result['failed_devices'].append(device)
                errors.append(dict(outcome['error'], device=device))
            if outcome['link_down']:
                result['link_down_devices'].append(device)
        result['after'] = [after[e['device']] for e in entries]
        result['changed'] = bool(result['changed_devices'])
        if errors:
            result['errors'] = errors
            first = errors[0]
            result.update(cmd=first.get('cmd'), rc=first.get('rc'), stdout=first.get('stdout') or '', stderr=first.get('stderr') or '')
            if result['link_down_devices'] == result['failed_devices']:
                # a restore that set every value back; only links stay down: no undo, the values are the wanted ones
                msg = ('The restore point %s is applied (values set on NPU %s and read back), but the link of NPU %s is '
                       'still not UP. %s' % (params['restore_from'], _ids(result['changed_devices']),
                                             _ids(result['link_down_devices']), ' | '.join(e['msg'] for e in errors)))
            else:
                msg = '%d of %d NPU ports failed (changed: %s; failed: %s). %s' % (
                    len(errors), len(todo), _ids(result['changed_devices']), _ids(result['failed_devices']),
                    ' | '.join(e['msg'] for e in errors))
                if result['changed_devices'] and undo not in msg:
                    msg += ' To undo the changes, %s.' % undo
            raise ModuleFailure(msg, **result)
        return result
