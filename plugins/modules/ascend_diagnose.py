#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ascend_diagnose
short_description: Find known Ascend error codes in the CANN process logs (plog, run logs) of a node
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Reads the CANN process logs of the node line by line, never a whole file at once, and finds the errors it knows
    (EI0006, EJ0001, EL0004, EI0001, EI0002, the internal errors E?9999 such as EZ9999 or EL9999, a missing
    C(libascendcl.so), an aclnn operator missing from C(libopapi.so)).
  - Returns one finding per code with how often it was seen, the first and last time (from the time stamps of the log
    lines), the files it was seen in, and the cause, fix and official source of a shipped knowledge table.
  - Says which NPUs a finding concerns when the logs name them (C(devices) of RV(findings)), from a line naming its device
    (the C(|  comm error, device[1]) line of the LINK_ERROR_INFO block HCCL prints with EI0006, or
    C(device(chipId:3, dieId:0)) in the runtime's device errors), else the one device its file names (a plog file is
    written by one process, which drives one NPU), else the C(device-<id>) directory of device-side logs. Lines that
    cannot be tied to one device are counted in C(lines_without_device). This is what tells a fault of one card from a
    fault of the node or of the PoD (see the C(npuops.ascend.diagnose_summary) filter).
  - In the output of a job, torch_npu prints a header before the CANN message it raises, such as
    C([ERROR] 2025-04-08-18:07:20 (PID:1292363, Device:1, RankID:1) ERR01100 OPS call acl api failed.). The code lines
    that follow it (up to a blank line, a Python traceback, the next header or 20 lines, and only lines of the same
    process when they print a process id) are tied to that device and rank (C(devices), C(ranks) of RV(findings)).
    That device is the id the process used, its logical id; with C(ASCEND_RT_VISIBLE_DEVICES) or in a container it can
    differ from the NPU id C(npu-smi) shows.
  - Reads regular files only. A FIFO, socket, device node or broken link is never opened (a file is also opened
    without blocking and checked again); it is listed in RV(skipped), with a warning when it was given in O(paths).
  - The CANN logs are read first (C(plog-*), C(device-*) files and the C(plog), C(device-<id>) directories), then the
    other C(*.log), C(*.txt), C(*.out), C(*.err) files, then the rest, the newest first within each, at most
    O(max_files) files. When not every file was read in full (more files than O(max_files), or a file larger than
    O(max_bytes_per_file)), a finding of code C(not_all_read) says how many were read and what to do, so that no
    finding never means the logs were searched when they were not.
  - A file or directory that cannot be read is a finding of code C(unreadable), never a failure.
  - Only reads; never reports a change.
options:
  paths:
    description:
      - Log files or directories to read; directories are read recursively. C(~) and C($VAR) are expanded on the node.
      - When not given, the standard log directories C(~/ascend/log/debug) and C(~/ascend/log/run) (host-side logs
        in C(plog/), device-side logs in C(device-<id>/)), plus C($ASCEND_PROCESS_LOG_PATH) when that variable is set
        for the module.
      - A path that does not exist is listed in RV(missing), not an error.
    type: list
    elements: str
  max_files:
    description:
      - Read at most this many files, the CANN logs first, then other log files, then the rest, the newest (by
        modification time) first within each. When files were left out, a warning and a finding of code
        C(not_all_read) say so.
    type: int
    default: 200
  max_bytes_per_file:
    description:
      - Read at most this many bytes of each file (from its start); a warning names each file read only in part, and
        the finding C(not_all_read) counts them.
    type: int
    default: 67108864
  since:
    description:
      - Only count log lines at or after this time (node local time, as the logs write it), C(YYYY-MM-DD),
        C(YYYY-MM-DD HH:MM[:SS]) or C(YYYY-MM-DDTHH:MM[:SS]). Lines without a time take the time of the line before.
    type: str
extends_documentation_fragment:
  - npuops.ascend.attributes
  - npuops.ascend.attributes.info_module
attributes:
  platform:
    support: full
    platforms: posix
    description: Linux nodes whose NPU processes write CANN logs (plog, run logs).
notes:
  - The log files are written by the processes that use the NPUs (C($HOME) of the user that ran them); run the task as
    that user, or with become, to read them.
  - HCCL stuck at its first step has no log line of its own; it shows as EI0006 (connection) or EI0002 (execution
    timeout) when HCCL gives up, which this module reports.
seealso:
  - module: npuops.ascend.health_info
"""

EXAMPLES = r"""
- name: Look for known errors in the standard log directories
  npuops.ascend.ascend_diagnose:
  register: diag

- name: Read the logs of a training job written elsewhere, only from today
  npuops.ascend.ascend_diagnose:
    paths:
      - /data/jobs/job42/ascend_log
      - $HOME/ascend/log/run/plog
    since: "2024-05-20"
    max_bytes_per_file: 10485760
  register: diag_job

- name: Show the codes found
  ansible.builtin.debug:
    msg: "{{ diag.findings | map(attribute='code') | list }}"
"""

RETURN = r"""
findings:
  description:
    - One entry per code found, the most frequent first. C(count) counts log lines; C(first_seen) and C(last_seen)
      are C(YYYY-MM-DDTHH:MM:SS.ffffff) from the log lines (null when no line had a time); C(files) lists the files.
    - C(devices) lists the NPU ids the lines of the code were tied to (see the description), C(lines_without_device)
      counts the lines that could not be tied to one NPU. C(ranks) lists the ranks a torch_npu header named for them.
    - Code C(not_all_read) is not an error of the logs but of the reading; C(msg) says what was read and what to do
      (for example that 200 of 100006 files were read and max_files should be raised or paths narrowed), and it has
      C(files_found) and C(files_left_out); its C(files) are the files read only in part.
    - C(cause), C(fix) and C(source) (official document ids) come from the knowledge table.
    - Code C(E?9999) has C(codes), the internal error codes seen (C(EZ9999), C(EL9999) ...); code C(unreadable) has
      C(msgs), what could not be read and why.
  returned: success
  type: list
  elements: dict
  sample:
    - code: EI0006
      count: 12
      first_seen: "2025-07-23T03:49:57.177194"
      last_seen: "2025-07-23T03:49:57.177282"
      files: [/root/ascend/log/debug/plog/plog-2717288_20250723034557123.log]
      devices: [3]
      ranks: []
      lines_without_device: 0
      cause: HCCL could not set up its sockets with a peer rank in time ...
      fix: Look first at ranks with other (earlier) errors ...
      source: atlaserrorcode_15_0246 (CANN 8.5.0); hcclug_000050
files_found:
  description: How many regular files were found under O(paths), read or not.
  returned: success
  type: int
files_read:
  description: The files read (in full or up to O(max_bytes_per_file)).
  returned: success
  type: list
  elements: str
unreadable:
  description: The files and directories that could not be read, with the reason (C(path), C(msg)).
  returned: success
  type: list
  elements: dict
skipped:
  description: The paths that are not regular files (a FIFO, a socket, a device node, a broken link) and were not
    opened, with the reason (C(path), C(msg)).
  returned: success
  type: list
  elements: dict
missing:
  description: The paths that do not exist on the node.
  returned: success
  type: list
  elements: str
truncated:
  description: The files read only up to O(max_bytes_per_file).
  returned: success
  type: list
  elements: str
paths:
  description: The paths read, after the defaults and C(~)/C($VAR) expansion.
  returned: success
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.npuops.ascend.plugins.module_utils._domain.diagnose import (  # noqa: E402
    LogScanner,
    default_paths,
    expand,
    parse_since,
)


def problems(params):
    """What is wrong with the options, before any file is read."""
    found = []
    paths = params['paths']
    if paths is not None:
        if not paths:
            found.append('paths is an empty list; leave it out to read the standard log directories')
        elif any(not str(path).strip() for path in paths):
            found.append('paths has an empty entry: %r' % (paths,))
    for name in ('max_files', 'max_bytes_per_file'):
        if params[name] < 1:
            found.append('%s must be 1 or more, got %d' % (name, params[name]))
    if params['since'] is not None:
        try:
            parse_since(params['since'])
        except ValueError as exc:
            found.append(str(exc))
    return found


def main():
    argument_spec = dict(
        paths=dict(type='list', elements='str'),
        max_files=dict(type='int', default=200),
        max_bytes_per_file=dict(type='int', default=64 * 1024 * 1024),
        since=dict(type='str'),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    found = problems(module.params)
    if found:
        module.fail_json(msg='ascend_diagnose: %s.' % '; '.join(found))
    paths = module.params['paths'] or default_paths()
    since = parse_since(module.params['since']) if module.params['since'] is not None else None
    scanner = LogScanner(module.params['max_files'], module.params['max_bytes_per_file'], since).scan(paths)
    for warning in scanner.warnings:
        module.warn(warning)
    result = scanner.result()
    result['paths'] = [expand(path) for path in paths]
    module.exit_json(**result)


if __name__ == '__main__':
    main()
