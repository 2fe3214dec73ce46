# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of npuops.ascend.report_files: write report files on the controller, in this process.

The stage roles write a JSON report per node and a Markdown report per PoD. Written with
``ansible.builtin.copy`` delegated to localhost, every file costs a module run on the controller
(a Python process: about 0.45 s of CPU), which made report writing a large part of the controller's
work at 16 or 32 nodes. This plugin writes the files directly: no module, no connection.
"""

from __future__ import annotations

import os
import stat
import tempfile

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_bytes, to_native, to_text
from ansible.plugins.action import ActionBase

ARGUMENT_SPEC = dict(
    dir=dict(type='path', required=True),
    files=dict(type='list', elements='dict', required=True, options=dict(
        name=dict(type='str', required=True),
        content=dict(type='raw', required=True),
    )),
    mode=dict(type='raw', default='0644'),
    dir_mode=dict(type='raw', default='0755'),
)


def file_mode(value, option):
    """An octal permission string ('0644', '644') or an int (0o644) -> int; anything else is an error."""
    if isinstance(value, bool):
        raise ValueError('%s must be an octal mode such as "0644", got %r' % (option, value))
    if isinstance(value, int):
        mode = value
    else:
        text = to_text(value).strip()
        if not text or any(ch not in '01234567' for ch in text):
            raise ValueError('%s must be an octal mode such as "0644", got %r' % (option, value))
        mode = int(text, 8)
    if mode < 0 or mode > 0o7777:
        raise ValueError('%s must be an octal mode between 0000 and 7777, got %r' % (option, value))
    return mode


def check_files(files):
    """Refuse a file list that would write outside the directory, twice to one name, or a non-text content."""
    seen = set()
    problems = []
    for index, entry in enumerate(files):
        name = entry['name']
        if not name or name in ('.', '..') or '/' in name or '\0' in name:
            problems.append('files[%d].name must be a plain file name without "/", got %r' % (index, name))
        elif name in seen:
            problems.append('files[%d].name %r is given twice' % (index, name))
        seen.add(name)
        if not isinstance(entry['content'], str):
            problems.append('files[%d].content (%s) must be text, got %s; use to_nice_json for data'
                            % (index, name, type(entry['content']).__name__))
    return problems


def write_file(directory, name, content, mode):
    """Write one file atomically (a temporary file in the same directory, then rename). Returns its path."""
    path = os.path.join(directory, name)
    handle, tmp = tempfile.mkstemp(prefix='.%s.' % name, dir=directory)
    try:
        with os.fdopen(handle, 'wb') as out:
            out.write(to_bytes(content, errors='surrogate_or_strict'))
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def write_reports(directory, files, mode=0o644, dir_mode=0o755):
    """Create the directory (and its parents) and write every file; returns the paths written."""
    os.makedirs(directory, mode=dir_mode, exist_ok=True)
    if not stat.S_ISDIR(os.stat(directory).st_mode):
        raise NotADirectoryError(directory)
    return [write_file(directory, entry['name'], entry['content'], mode) for entry in files]


class ActionModule(ActionBase):
    """Writes report files on the controller; never connects to the node."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # nothing is copied to the node

        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        try:
            mode = file_mode(args['mode'], 'mode')
            dir_mode = file_mode(args['dir_mode'], 'dir_mode')
        except ValueError as exc:
            raise AnsibleActionFail(to_native(exc)) from exc
        problems = check_files(args['files'])
        if problems:
            raise AnsibleActionFail('report_files: nothing was written: %s.' % '; '.join(problems))

        directory = args['dir']
        try:
            paths = write_reports(directory, args['files'], mode, dir_mode)
        except OSError as exc:
            raise AnsibleActionFail(
                'report_files: could not write the reports to %s on the controller: %s. Check that the report '
                'directory (gate_report_dir) is on a writable file system with space left.' % (directory, to_native(exc))) from exc

        # A report on the controller is not a change to the PoD: changed stays false, so that a second
        # run of a playbook reports no change; check mode writes its reports too (the change ticket).
        result.update(changed=False, dir=directory, files=paths,
                      msg='wrote %d report file(s) to %s' % (len(paths), directory))
        return result
