# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What is at a few paths of a node, read in one module run (npuops.ascend.path_info).

The stage actions ask it before they hand a file to Ansible's own copy, template or file action: a file that is already
in place (same content, owner, group and mode) then costs no further module run. Each entry has the keys of
``ansible.builtin.stat`` that the callers use, so its result can stand where a stat result did.
Python 3.9 compatible: this file runs on the managed nodes.
"""

from __future__ import annotations

import errno
import grp
import hashlib
import os
import pwd
import stat

CHUNK = 1024 * 1024


def _name(lookup, ident):
    try:
        return lookup(ident)[0]
    except (KeyError, OverflowError):
        return None


def _sha1(path, follow=False):
    """The SHA-1 of a regular file, read without following a link (O_NOFOLLOW) unless ``follow``, and never blocking on
    a FIFO."""
    digest = hashlib.sha1()
    flags = os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0)
    if not follow:
        flags |= getattr(os, 'O_NOFOLLOW', 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None  # replaced by something else between the stat and the open
        while True:
            block = os.read(fd, CHUNK)
            if not block:
                break
            digest.update(block)
    finally:
        os.close(fd)
    return digest.hexdigest()


def read_path(path, follow=False, checksum=False):
    """The stat of ``path`` (a link is followed only with ``follow``): ``exists`` false when nothing is there; a path
    that cannot be examined raises OSError (the caller reports it)."""
    try:
        info = os.stat(path) if follow else os.lstat(path)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return {'exists': False}
        raise
    mode = info.st_mode
    out = {
        'exists': True,
        'isreg': stat.S_ISREG(mode),
        'isdir': stat.S_ISDIR(mode),
        'islnk': stat.S_ISLNK(mode),
        'isfifo': stat.S_ISFIFO(mode),
        'issock': stat.S_ISSOCK(mode),
        'ischr': stat.S_ISCHR(mode),
        'isblk': stat.S_ISBLK(mode),
        'mode': '%04o' % stat.S_IMODE(mode),
        'uid': info.st_uid,
        'gid': info.st_gid,
        'pw_name': _name(pwd.getpwuid, info.st_uid),
        'gr_name': _name(grp.getgrgid, info.st_gid),
        'size': info.st_size,
    }
    if out['islnk']:
        out['lnk_target'] = os.readlink(path)
    if checksum and out['isreg']:
        out['checksum'] = _sha1(path, follow)
    return out


def read_paths(entries):
    """One result per entry of ``entries`` ({path, follow, checksum}), in order: ``{path, follow, stat}`` or, when the
    path could not be examined, ``{path, follow, failed: true, msg}``."""
    results = []
    for entry in entries:
        path = entry['path']
        item = {'path': path, 'follow': bool(entry.get('follow'))}
        try:
            item['stat'] = read_path(path, item['follow'], bool(entry.get('checksum')))
        except OSError as exc:
            item.update(failed=True, msg='could not examine %s: %s' % (path, exc.strerror or exc))
        except ValueError as exc:  # a NUL byte in the path
            item.update(failed=True, msg='could not examine %r: %s' % (path, exc))
        results.append(item)
    return results
