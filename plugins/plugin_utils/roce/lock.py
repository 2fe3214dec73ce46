# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lock of a PoD's change window, on the controller (the action plugin npuops.ascend.window_lock).

One file per PoD, ``<dir>/.npuops-window-<pod>.lock``, created with O_EXCL and holding the run that took it: run id,
playbook, the pid of its ansible-playbook process with that process's start time, the controller's host name, the user
and the UTC start time. Every look at the file happens under an flock of its directory, so two runs that start in the
same instant see each other, and a stale lock is taken over by one of them only.

- A lock whose process is gone on this controller (no such pid, or a pid with another start time) is stale: it is taken
  over, with a warning that names the run that left it.
- A lock taken on another controller cannot be checked from here: it is never taken over.
- A lock file that cannot be read is never taken over either; the message tells the operator to remove it.
- Release removes the file only when it is still this run's.

A run in parts (site.yml with npuops_run_part, docs/awx.md) plays stage 4 in several jobs, each its own process, maybe on
another execution node: its part ``before`` takes the lock for the run (``parts``: no process, no controller), the node
parts check that their run holds it (:func:`check_held`) and the PoD part releases it. Such a lock is never stale by a
process: another run waits for that run's PoD part of stage 4, or the operator removes the file.
"""

from __future__ import annotations

import errno
import fcntl
import getpass
import json
import os
import re
import socket
import time

FORMAT = 'npuops.ascend window lock'
VERSION = 1
NOTHING = 'Nothing was read or changed on any node.'


class LockError(Exception):
    """The lock cannot be taken (held by another run, or unreadable); the text is for the operator."""


def lock_path(directory, pod):
    """The lock file of PoD ``pod`` in ``directory``."""
    safe = re.sub(r'[^A-Za-z0-9._-]', '_', str(pod or 'pod')) or 'pod'
    return os.path.join(directory, '.npuops-window-%s.lock' % safe)


def process_start(pid, proc='/proc'):
    """The start time of process ``pid`` (field 22 of /proc/PID/stat, clock ticks since boot) as text, or None."""
    try:
        with open(os.path.join(proc, str(int(pid)), 'stat'), 'rb') as handle:
            data = handle.read().decode('utf-8', 'replace')
    except (OSError, ValueError):
        return None
    # the command name (field 2) is in parentheses and may hold blanks or parentheses: split after the last ')'
    fields = data[data.rfind(')') + 2:].split()
    return fields[19] if len(fields) > 19 else None


def _cmdline(pid, proc):
    try:
        with open(os.path.join(proc, str(int(pid)), 'cmdline'), 'rb') as handle:
            return [word.decode('utf-8', 'replace') for word in handle.read().split(b'\0') if word]
    except (OSError, ValueError):
        return []


def _parent(pid, proc):
    try:
        with open(os.path.join(proc, str(int(pid)), 'stat'), 'rb') as handle:
            data = handle.read().decode('utf-8', 'replace')
        return int(data[data.rfind(')') + 2:].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def controller_pid(start=None, proc='/proc'):
    """The pid of the ansible-playbook process that runs this task: the nearest ancestor of ``start`` (default: this
    process's parent, the worker's parent) whose command line runs ansible-playbook; the parent itself when none does."""
    first = os.getppid() if start is None else int(start)
    pid = first
    for _depth in range(16):
        if pid is None or pid <= 1:
            break
        words = _cmdline(pid, proc)
        if any(os.path.basename(word).startswith('ansible-playbook') for word in words[:3]):
            return pid
        pid = _parent(pid, proc)
    return first


def alive(pid, start, proc='/proc'):
    """Whether process ``pid`` runs and is the one that took the lock (its start time, when recorded, matches)."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except (OverflowError, ValueError, TypeError):
        return False
    if start is None:
        return True
    now = process_start(pid, proc)
    return now is None or str(now) == str(start)


def holder(run, pod, playbook, pid=None, proc='/proc', host=None, user=None, started=None, parts=False):
    """The record this run writes into the lock; with ``parts``, the lock of a run in parts (held by its run id, not by
    a process)."""
    if parts:
        return {'format': FORMAT, 'version': VERSION, 'pod': str(pod), 'run': str(run), 'playbook': str(playbook or '?'),
                'parts': True, 'pid': None, 'pid_start': None, 'host': host or socket.gethostname(),
                'user': user or _user(), 'started': started or time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}
    pid = controller_pid(proc=proc) if pid is None else int(pid)
    if user is None:
        user = _user()
    return {'format': FORMAT, 'version': VERSION, 'pod': str(pod), 'run': str(run), 'playbook': str(playbook or '?'),
            'pid': pid, 'pid_start': process_start(pid, proc), 'host': host or socket.gethostname(), 'user': user,
            'started': started or time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}


def _user():
    try:
        return getpass.getuser()
    except Exception:  # pylint: disable=broad-except  # no name for the uid: the number does
        return str(os.getuid())


def _same(one, other):
    if isinstance(one, dict) and isinstance(other, dict) and (one.get('parts') or other.get('parts')):
        # a run in parts holds the lock by its run id, whichever job and controller of the run looks
        return bool(one.get('parts')) == bool(other.get('parts')) and one.get('run') == other.get('run') \
            and one.get('pod') == other.get('pod')
    keys = ('run', 'pid', 'pid_start', 'host')
    return isinstance(one, dict) and isinstance(other, dict) and all(one.get(k) == other.get(k) for k in keys)


def describe(info):
    """'run R, playbook P, pid N, started T' (with the controller when it is not this one)."""
    if info.get('parts'):
        return 'run %s in parts, %s, started %s' % (info.get('run'), info.get('playbook'), info.get('started'))
    return 'run %s, %s, pid %s%s, started %s' % (
        info.get('run'), info.get('playbook'), info.get('pid'),
        '' if info.get('host') == socket.gethostname() else ' on the controller %s' % info.get('host'), info.get('started'))


class _DirLock:
    """flock of the lock's directory while the file is looked at."""

    def __init__(self, directory):
        self.directory = directory
        self.fd = None

    def __enter__(self):
        self.fd = os.open(self.directory, os.O_RDONLY | getattr(os, 'O_DIRECTORY', 0))
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        try:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        finally:
            os.close(self.fd)


def _read(path):
    """The record in the lock file, None when there is none; LockError when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LockError('the lock %s is a symbolic link, which this collection never creates: remove it. %s'
                            % (path, NOTHING)) from exc
        raise LockError('the lock %s cannot be read (%s): if no change window runs on this PoD, remove it. %s'
                        % (path, exc, NOTHING)) from exc
    with os.fdopen(fd, 'rb') as handle:
        data = handle.read(65536)
    try:
        info = json.loads(data.decode('utf-8'))
    except ValueError as exc:
        raise LockError('the lock %s cannot be read (%s): if no change window runs on this PoD, remove it. %s'
                        % (path, exc, NOTHING)) from exc
    if not isinstance(info, dict) or info.get('format') != FORMAT:
        raise LockError('the lock %s is not a change window lock of this collection: if no change window runs on this '
                        'PoD, remove it. %s' % (path, NOTHING))
    return info


def _create(path, info):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0), 0o644)
    with os.fdopen(fd, 'w') as handle:
        handle.write(json.dumps(info, sort_keys=True) + '\n')
        handle.flush()
        os.fsync(handle.fileno())


def acquire(path, info, proc='/proc'):
    """Take the lock at ``path`` for ``info`` (:func:`holder`).

    Returns ``{'taken_over': <the stale holder> or None, 'again': bool}``; raises LockError when another run holds it,
    when it was taken on another controller, or when it cannot be read.
    """
    directory = os.path.dirname(path) or '.'
    os.makedirs(directory, 0o755, exist_ok=True)
    with _DirLock(directory):
        current = _read(path)
        if current is None:
            _create(path, info)
            return {'taken_over': None, 'again': False}
        if _same(current, info):
            return {'taken_over': None, 'again': True}
        pod = info.get('pod')
        if current.get('parts'):
            raise LockError(
                '%s holds the lock %s for PoD %s: its PoD part of stage 4 releases it (ansible-playbook '
                'npuops.ascend.site -e npuops_run_part=pod -e npuops_run_id=%s --tags stage4); wait for it, or remove %s '
                'if that run is gone. %s' % (describe(current), path, pod, current.get('run'), path, NOTHING))
        if current.get('host') != info.get('host'):
            raise LockError(
                'another change window (%s) holds the lock %s for PoD %s; this controller cannot see whether that run '
                'still goes on: wait for it, or remove %s if that run is gone. %s'
                % (describe(current), path, pod, path, NOTHING))
        if alive(current.get('pid'), current.get('pid_start'), proc):
            raise LockError('another change window (%s) holds the lock %s for PoD %s: wait for it or remove %s if that '
                            'run is gone. %s' % (describe(current), path, pod, path, NOTHING))
        os.unlink(path)
        _create(path, info)
        return {'taken_over': current, 'again': False}


def check_held(path, info, proc='/proc'):
    """LockError unless the lock at ``path`` is held by ``info`` (the node part of a run in parts: its part before
    took it). Returns the holder."""
    directory = os.path.dirname(path) or '.'
    current = None
    if os.path.isdir(directory):
        with _DirLock(directory):
            current = _read(path)
    stale = current is not None and not current.get('parts') and current.get('host') == info.get('host') \
        and not alive(current.get('pid'), current.get('pid_start'), proc)
    if current is None or stale:
        raise LockError(
            'no run holds the lock %s of PoD %s%s: the node part of stage 4 of run %s changes ports only after the part '
            'before took it (ansible-playbook npuops.ascend.site -e npuops_run_part=before -e npuops_run_id=%s --tags '
            'stage4). %s' % (path, info.get('pod'), ' (%s left it, its process is gone)' % describe(current) if stale else '',
                             info.get('run'), info.get('run'), NOTHING))
    if not _same(current, info):
        raise LockError('the lock %s of PoD %s is held by another run (%s), not by run %s in parts: wait for it, then run '
                        'the part before of stage 4 of this run again. %s'
                        % (path, info.get('pod'), describe(current), info.get('run'), NOTHING))
    return current


def release(path, info):
    """Remove the lock when it is still ``info``'s. Returns ``{'released': bool, 'msg': str}``."""
    directory = os.path.dirname(path) or '.'
    if not os.path.isdir(directory):
        return {'released': False, 'msg': 'no lock %s to release (its directory is gone)' % path}
    with _DirLock(directory):
        try:
            current = _read(path)
        except LockError as exc:
            return {'released': False, 'msg': 'the lock was not released: %s' % exc}
        if current is None:
            return {'released': False, 'msg': 'no lock %s to release' % path}
        if not _same(current, info):
            return {'released': False, 'msg': 'the lock %s is held by another run now (%s); it was left as it is'
                                              % (path, describe(current))}
        os.unlink(path)
        return {'released': True, 'msg': 'released the lock %s' % path}


def takeover_warning(path, stale):
    """The warning after a stale lock was taken over."""
    return ('took over the lock %s for PoD %s from %s: that process is gone without releasing it (killed, or its '
            'controller stopped). Check what that run left: its report directory, and playbooks/rollback.yml for a node '
            'it may have changed.' % (path, stale.get('pod'), describe(stale)))
