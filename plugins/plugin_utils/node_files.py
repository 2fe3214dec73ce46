# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a file or directory a stage writes is already in place on the node, from one npuops.ascend.path_info run.

A stage action asks ``path_info`` once for every path it is about to hand to Ansible's copy, template or file action
and calls the action only for what is not in place: on a run that changes nothing, a node costs one module run instead
of two per file (copy's stat and file) and one per directory. What is in place is exactly what the action would leave
untouched - a regular file (never a link) with the same SHA-1, owner, group and mode, or a directory with the same
owner, group and mode; anything else, or anything that could not be read, goes to the action as before, so its check
mode, diff, backup and errors are unchanged.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping


def checksum(text):
    """The SHA-1 of ``text`` as the node stores it (UTF-8), the checksum copy and stat report."""
    data = text.encode('utf-8') if isinstance(text, str) else bytes(text)
    return hashlib.sha1(data).hexdigest()


def entry(path, follow=False, with_checksum=False):
    """One entry of path_info's ``paths`` option."""
    return {'path': path, 'follow': bool(follow), 'checksum': bool(with_checksum)}


def stats(result):
    """``{path: stat}`` from a path_info result; empty when the module failed, and a path it could not examine is left
    out (such a path is never in place)."""
    if not isinstance(result, Mapping) or result.get('failed') or not isinstance(result.get('paths'), list):
        return {}
    out = {}
    for item in result['paths']:
        if isinstance(item, Mapping) and not item.get('failed') and isinstance(item.get('stat'), Mapping):
            out[item.get('path')] = item['stat']
    return out


def _mode(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value), 8)
    except (TypeError, ValueError):
        return None  # a symbolic mode (u=rw,...) is left to the action


def _same_account(wanted, name, ident):
    if wanted is None:
        return True  # the action would keep whatever owner or group the file has
    wanted = str(wanted)
    return wanted == name or (wanted.isdigit() and ident is not None and int(wanted) == ident)


def in_place(stat, kind, owner=None, group=None, mode=None, sha1=None):
    """Whether ``stat`` (path_info's, follow false for a file) is what copy/template (``kind`` file, with ``sha1``) or
    file state=directory (``kind`` directory) would leave as it is."""
    if not isinstance(stat, Mapping) or not stat.get('exists') or stat.get('islnk'):
        return False
    if kind == 'file':
        if not stat.get('isreg') or not sha1 or stat.get('checksum') != sha1:
            return False
    elif kind == 'directory':
        if not stat.get('isdir'):
            return False
    else:
        raise ValueError('kind must be file or directory, got %r' % (kind,))
    if mode is not None:
        wanted = _mode(mode)
        if wanted is None or _mode(stat.get('mode')) != wanted:
            return False
    return _same_account(owner, stat.get('pw_name'), stat.get('uid')) and \
        _same_account(group, stat.get('gr_name'), stat.get('gid'))


def kept(path, kind, sha1=None):
    """The result recorded for a path that was in place (what the action would have returned, without its run)."""
    out = {'changed': False, 'failed': False, 'path' if kind == 'directory' else 'dest': path, 'in_place': True,
           'msg': '%s is in place (%s)' % (path, 'same owner, group and mode' if kind == 'directory'
                                           else 'same content, owner, group and mode')}
    if sha1:
        out['checksum'] = sha1
    return out
