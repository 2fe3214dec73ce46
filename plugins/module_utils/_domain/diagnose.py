# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Known errors in CANN process logs (plog, run logs) and the reader that finds them, for ``ascend_diagnose``.

:data:`KNOWLEDGE` is the table of what the module knows: per code its signature (a regular expression over one log
line), the cause, the fix and the source (official document ids). :class:`LogScanner` reads files line by line (never
a whole file), with a byte budget per file, and counts each code once per line with the first and last time it was
seen. Lines without a time of their own (the continuation lines of an error message) take the last time seen in the
same file. Unreadable files become findings of code ``unreadable``.

Each counted line is also given the NPU it concerns, when the logs say so: a line that names its device (the
LINK_ERROR_INFO block HCCL prints with EI0006, ``|  comm error, device[1]``; the runtime's device errors,
``device(chipId:3, dieId:0)``), else the one device a file names (a plog file is written by one process, and a
training or serving process drives one NPU), else the directory of device-side logs (``debug/device-3/``, doc
logreference_0002). A line of a file that names several devices, or none, counts as ``lines_without_device``.

torch_npu prints a header before the CANN error message it raises, ``[ERROR] 2025-04-08-18:07:20 (PID:1292363,
Device:1, RankID:1) ERR01100 OPS call acl api failed.``: the code lines that follow it (up to a blank line, a Python
``Traceback``, the next such header or :data:`HEADER_SPAN` lines, and only lines of the same process when they print
a ``[PID: n]``) are tied to that device and rank. ``Device`` is the device id the process used (its logical id: with
``ASCEND_RT_VISIBLE_DEVICES`` or inside a container it can differ from the NPU id of ``npu-smi``).

Which files: regular files only (a FIFO, socket or device node is never opened, it is listed in ``skipped``), opened
with ``O_NONBLOCK`` as a second guard; the CANN logs first (``plog-*``/``device-*`` files and the ``plog``, ``device-<id>``
directories of doc logreference_0002/0004), then the other ``*.log``/``*.txt``/``*.out``/``*.err`` files, then the rest,
newest first within each; at most ``max_files`` of them. What was left out (files over the budget, files read only in
part) is a finding of code ``not_all_read`` that says how much was read and what to do.
Python 3.9 compatible: this file runs on the managed nodes.
"""

from __future__ import annotations

import os
import re
import stat

# The standard log directories of a process on an Ascend host, before ~ and $VAR expansion: host-side logs in plog/,
# device-side logs (HCCP, AI CPU) in device-<id>/ under each (doc logreference_0002).
DEFAULT_DIRS = ('~/ascend/log/debug', '~/ascend/log/run')
LOG_PATH_ENV = 'ASCEND_PROCESS_LOG_PATH'
# Longest line taken in one piece; the rest of a longer line is read as further lines.
LINE_LIMIT = 65536

CODE_FORMAT = 'doc troubleshooting_0225 (error code format: level, module, number; 9000-9999 are internal errors)'

# code -> signature, cause, fix, source. Order matters only for the display of the table.
KNOWLEDGE = (
    {
        'code': 'EI0006',
        'signature': r'\bEI0006\b|wait socket establish timeout|Getting socket times out',
        'cause': 'HCCL could not set up its sockets with a peer rank in time (Get_Socket_Timeout): the peer did not '
                 'connect within HCCL_CONNECT_TIMEOUT (default 120 s), or the link between them is broken.',
        'fix': 'Look first at ranks with other (earlier) errors. If every rank reports it, compare the earliest and '
               'latest error times with HCCL_CONNECT_TIMEOUT and raise it on all ranks alike. Check the link '
               '(hccn_tool -i DEV -link -g), that TLS is the same on all NPUs (hccn_tool -i DEV -tls -g), and the '
               'device IPs (subnet, VLAN, duplicates); the plog keywords are "wait socket establish timeout" and '
               '"LINK_ERROR_INFO".',
        'source': 'atlaserrorcode_15_0246 (CANN 8.5.0); hcclug_000050',
    },
    {
        'code': 'EJ0001',
        'signature': r'\bEJ0001\b|Failed to initialize the HCCP process',
        'cause': 'The HCCP process of the NPU could not start (HCCP_Process_Initialization_Failure), usually because '
                 'the previous training process still holds the device.',
        'fix': 'Kill the previous training process, wait 10 s, then start again (npu-smi info shows what still runs '
               'on the NPU).',
        'source': 'atlaserrorcode_15_0251, atlaserrorcode_15_0252 (CANN 8.5.0)',
    },
    {
        'code': 'EL0004',
        'signature': r'\bEL0004\b',
        'cause': 'The driver could not allocate the memory a module asked for (Memory_Allocation_Failure): not enough '
                 'device memory is free.',
        'fix': 'Stop the applications that hold NPU memory and are not needed (npu-smi info), or ask for less '
               '(smaller batch, fewer concurrent jobs on the card).',
        'source': 'atlaserrorcode_15_0267 (CANN 9.0.0)',
    },
    {
        'code': 'EI0001',
        'signature': r'\bEI0001\b',
        'cause': 'An HCCL environment variable has a value HCCL does not accept; the message names the variable and '
                 'its allowed range.',
        'fix': 'Set the variable named in the message to a value in the range it gives (e.g. HCCL_CONNECT_TIMEOUT, '
               'HCCL_BUFFSIZE, HCCL_RDMA_TC) on every node, then restart the job.',
        'source': 'atlaserrorcode_15_0240 (HCCL error index)',
    },
    {
        'code': 'EI0002',
        'signature': r'\bEI0002\b|wait execution of the Notify register times out',
        'cause': 'A collective operation timed out waiting for a peer rank (Communication_Error_Timeout): a rank '
                 'failed or stalled earlier, ran slower than HCCL_EXEC_TIMEOUT allows, got a different number of '
                 'samples, or the network lost packets.',
        'fix': 'If only some ranks report it, find the earlier error on the other ranks. If all do, compare the error '
               'times against HCCL_EXEC_TIMEOUT and raise it; make the sample counts equal on every NPU; '
               'grep -rn "error cqe" in the plog points to the network.',
        'source': 'atlaserrorcode_15_0242 (CANN 9.0.0); hcclug_000059',
    },
    {
        'code': 'libascendcl_not_found',
        'signature': r'libascendcl\.so: cannot open shared object file',
        'cause': 'The AscendCL library of the CANN toolkit is not on the library path of the process: the CANN '
                 'environment was not set (set_env.sh not sourced) or the toolkit is missing.',
        'fix': 'Source /usr/local/Ascend/ascend-toolkit/set_env.sh in the environment that starts the job (or add '
               'its lib64 to LD_LIBRARY_PATH); install the toolkit if it is absent.',
        'source': 'logreference_0002 (CANN install layout); CANN installation guide, environment variables',
    },
    {
        'code': 'aclnn_op_not_found',
        'signature': r'aclnn\w*(?: or aclnn\w*GetWorkspaceSize)?\s*(?:\.\.\.\s*)?not in libopapi\.so',
        'cause': 'torch_npu called an aclnn operator that the installed operator library (libopapi.so of the CANN '
                 'ops / custom op package) does not contain: CANN older than torch_npu or the framework expects, or a '
                 'custom operator package that is not installed or not on ASCEND_CUSTOM_OPP_PATH.',
        'fix': 'Install the CANN (kernels/ops) version paired with this torch_npu, or install the custom op package '
               'and source its set_env.bash so ASCEND_CUSTOM_OPP_PATH names it.',
        'source': 'torch_npu OpApiInterface (error text); ' + CODE_FORMAT,
    },
    {
        'code': 'E?9999',
        'signature': r'\bE[0-9A-Z]9999\b',
        'cause': 'An internal error of a CANN module (E39999 AI CPU, EE9999 runtime, EH9999 ACL, EI9999 HCCL, EJ9999 '
                 'HCCP, EL9999 driver, EZ9999 operators); the lines after it say what failed. EL9999 with '
                 '"halMemAlloc failed" or "out of memory" is device memory exhaustion.',
        'fix': 'Read the message lines that follow the code; for out of memory check the other jobs on the NPU and '
               'reduce the batch size; otherwise collect the logs (msnpureport) and contact Huawei support.',
        'source': 'atlaserrorcode_15_0314 (CANN 8.0.RC1); troubleshooting_0118',
    },
)

NOT_ALL_READ = {
    'code': 'not_all_read',
    'cause': 'Not every log file was read: more files than max_files were found under the paths, or a file was larger '
             'than max_bytes_per_file. An error in what was left out is not in the findings.',
    'fix': 'Raise max_files (or max_bytes_per_file), or narrow paths to the logs of the job (its plog and device-<id> '
           'directories, or since=), and run again.',
    'source': 'ascend_diagnose',
}

UNREADABLE = {
    'code': 'unreadable',
    'cause': 'A log file or directory could not be read by the user the module runs as.',
    'fix': 'Run the task as the user that owns the logs (become) or give that user read access.',
    'source': 'ascend_diagnose',
}

# The time of a plog line "[ERROR] HCCL(123,python):2024-05-20-10:11:12.345.678 ..." or of an error message
# "EI0006: [PID: 1] 2025-04-08-18:07:20.444.436 ...": date, time, milliseconds, microseconds.
TIME_RE = re.compile(r'(\d{4}-\d{2}-\d{2})[- ](\d{2}:\d{2}:\d{2})(?:\.(\d{3})(?:\.(\d{3}))?)?')
SINCE_RE = re.compile(r'^\s*(\d{4}-\d{2}-\d{2})(?:[-T ](\d{2}:\d{2}(?::\d{2})?)(?:\.(\d{1,6}))?)?\s*$')
SERIES_RE = re.compile(r'\bE([0-9A-Z])9999\b')
# torch_npu's header before the CANN message it raises: "[ERROR] 2025-04-08-18:07:20 (PID:1292363, Device:1, RankID:1)"
TORCH_HEADER_RE = re.compile(r'\(PID:\s*(\d+),\s*Device:\s*(-?\d+),\s*RankID:\s*(-?\d+)\)')
# the process id a CANN message line prints: "EI0006: [PID: 1292363] ...", "EZ9999[PID: 3473945] ..."
LINE_PID_RE = re.compile(r'\[PID:\s*(\d+)\]')
# how many lines after a torch_npu header its device and rank reach at most
HEADER_SPAN = 20
PY_TRACEBACK = 'Traceback (most recent call last)'
# CANN log files by name: host-side plog-<pid>_<time>.log, device-side device-<pid>_<time>.log (doc logreference_0002,
# MindCluster fault diagnosis "CANN App Logs"), device-app-<pid>_*, device-os_*, event_* (doc logreference_0004)
CANN_LOG_NAME_RE = re.compile(r'^(plog|device|device-app|device-os|event)[-_].*\.log$')
CANN_LOG_DIR_RE = re.compile(r'^(plog|device-\d+|device-app-\d+|device-os|event)$')
JOB_LOG_EXTENSIONS = ('.log', '.txt', '.out', '.err')
# A line that names the device it is about (see the module docstring).
LINE_DEVICE_RE = re.compile(r'comm error, device\[(\d+)\]|\bdevice\(chipId:(\d+)')
DEVICE_DIR_RE = re.compile(r'^device-(\d+)$')


def line_device(line):
    """The device id a log line names, or None."""
    match = LINE_DEVICE_RE.search(line)
    if not match:
        return None
    return int(match.group(1) if match.group(1) is not None else match.group(2))


def torch_header(line):
    """(pid, device or None, rank or None) of a torch_npu error header line, or None."""
    match = TORCH_HEADER_RE.search(line)
    if not match:
        return None
    pid, device, rank = (int(group) for group in match.groups())
    return pid, (device if device >= 0 else None), (rank if rank >= 0 else None)


def line_pid(line):
    """The process id a CANN message line prints (``[PID: n]``), or None."""
    match = LINE_PID_RE.search(line)
    return int(match.group(1)) if match else None


def log_class(path):
    """0 for a CANN log (by its name or directory), 1 for another log-like file, 2 for anything else."""
    name = os.path.basename(path)
    if CANN_LOG_NAME_RE.match(name) or CANN_LOG_DIR_RE.match(os.path.basename(os.path.dirname(path))):
        return 0
    return 1 if name.lower().endswith(JOB_LOG_EXTENSIONS) else 2


def file_kind(mode):
    """What a non-regular file is, in words."""
    for test, word in ((stat.S_ISFIFO, 'a FIFO'), (stat.S_ISSOCK, 'a socket'), (stat.S_ISCHR, 'a character device'),
                       (stat.S_ISBLK, 'a block device'), (stat.S_ISDIR, 'a directory')):
        if test(mode):
            return word
    return 'not a regular file'


def open_log(path):
    """Open a log file for reading without blocking on a FIFO; OSError (or ValueError naming what it is) when the
    path is no regular file."""
    flags = os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0) | getattr(os, 'O_NOCTTY', 0) | getattr(os, 'O_CLOEXEC', 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ValueError('%s is %s, not a log file; not read' % (path, file_kind(mode)))
        return os.fdopen(fd, 'rb')
    except BaseException:
        os.close(fd)
        raise


def directory_device(path):
    """The device id of a file under a ``device-<id>`` directory of device-side logs, or None."""
    match = DEVICE_DIR_RE.match(os.path.basename(os.path.dirname(path)))
    return int(match.group(1)) if match else None


def line_time(line):
    """The time of a log line as ``YYYY-MM-DDTHH:MM:SS.ffffff``, or None when it has none."""
    match = TIME_RE.search(line)
    if not match:
        return None
    day, clock, milli, micro = match.groups()
    return '%sT%s.%s%s' % (day, clock, milli or '000', micro or '000')


def parse_since(text):
    """``since`` as the time format of :func:`line_time`; raises ValueError with what is accepted."""
    match = SINCE_RE.match(text or '')
    if not match:
        raise ValueError('since must be a time like 2024-05-20, 2024-05-20 10:11:12 or 2024-05-20T10:11:12, got %r' % text)
    day, clock, frac = match.groups()
    clock = clock or '00:00:00'
    if len(clock) == 5:
        clock += ':00'
    return '%sT%s.%s' % (day, clock, (frac or '').ljust(6, '0'))


def default_paths(environ=None):
    """The standard log directories, with ``$ASCEND_PROCESS_LOG_PATH`` when it is set."""
    environ = os.environ if environ is None else environ
    paths = list(DEFAULT_DIRS)
    if environ.get(LOG_PATH_ENV):
        paths.append(environ[LOG_PATH_ENV])
    return paths


def expand(path):
    return os.path.abspath(os.path.expanduser(os.path.expandvars(path)))


class LogScanner:
    """Scan log files for the codes of :data:`KNOWLEDGE`."""

    def __init__(self, max_files, max_bytes_per_file, since=None, knowledge=KNOWLEDGE):
        self.max_files = max_files
        self.max_bytes = max_bytes_per_file
        self.since = since
        self.rows = [(row, re.compile(row['signature'])) for row in knowledge]
        self.found = {}
        self.files_read = []
        self.files_found = 0
        self.left_out = 0
        self.unreadable = []
        self.missing = []
        self.skipped = []
        self.truncated = []
        self.warnings = []
        self._mtimes = {}

    # --- which files -------------------------------------------------------------------------------------------
    def collect(self, paths):
        """The regular files under ``paths`` (files as given, directories recursively), at most max_files of them:
        the CANN logs first, then other log files, then the rest (:func:`log_class`), the newest first in each."""
        files = []
        seen = set()
        for given in paths:
            path = expand(given)
            if not os.path.lexists(path):
                self.missing.append(path)
                continue
            if os.path.isdir(path):
                found = self._walk(path)
            else:
                found = [path] if self._regular(path, given=True) else []
            for name in found:
                if name not in seen:
                    seen.add(name)
                    files.append(name)
        files.sort(key=lambda name: (log_class(name), -self._mtimes.get(name, 0.0), name))
        self.files_found = len(files)
        if len(files) > self.max_files:
            self.left_out = len(files) - self.max_files
            self.warnings.append('ascend_diagnose: %d log files found, only %d were read (the CANN logs first, then the '
                                 'newest): raise max_files or narrow paths' % (len(files), self.max_files))
            files = files[:self.max_files]
        return files

    def _regular(self, path, given):
        """True for a regular file (a link to one included); anything else is listed in ``skipped``, never opened."""
        try:
            info = os.stat(path)
        except OSError as exc:
            self._skip(path, '%s: %s; not read' % (path, getattr(exc, 'strerror', None) or exc), given)
            return False
        if not stat.S_ISREG(info.st_mode):
            self._skip(path, '%s is %s, not a log file; not read' % (path, file_kind(info.st_mode)), given)
            return False
        self._mtimes[path] = info.st_mtime
        return True

    def _skip(self, path, message, given):
        self.skipped.append({'path': path, 'msg': message})
        if given:
            self.warnings.append('ascend_diagnose: %s' % message)

    def _walk(self, top):
        found = []

        def onerror(exc):
            self._unreadable(getattr(exc, 'filename', None) or top, exc)

        for root, dirs, names in os.walk(top, onerror=onerror):
            dirs.sort()
            for name in sorted(names):
                path = os.path.join(root, name)
                if self._regular(path, given=False):
                    found.append(path)
        return found

    # --- reading -----------------------------------------------------------------------------------------------
    def scan(self, paths):
        for path in self.collect(paths):
            self.scan_file(path)
        return self

    def scan_file(self, path):
        try:
            handle = open_log(path)
        except ValueError as exc:
            self._skip(path, str(exc), True)
            return
        except OSError as exc:
            self._unreadable(path, exc)
            return
        budget = self.max_bytes
        read = 0
        last_time = None
        hits = []
        named = set()
        header = None   # the torch_npu header in reach: {'pid', 'device', 'rank', 'left'}
        try:
            with handle:
                while read < budget:
                    raw = handle.readline(min(LINE_LIMIT, budget - read))
                    if not raw:
                        break
                    read += len(raw)
                    line = raw.decode('utf-8', 'replace')
                    device = line_device(line)
                    if device is not None:
                        named.add(device)
                    header = self._header(line, header, named)
                    rank = None
                    if device is None and header is not None and header['device'] is not None and line_pid(line) in (None, header['pid']):
                        device, rank = header['device'], header['rank']
                    when = line_time(line)
                    if when is not None:
                        last_time = when
                    else:
                        when = last_time
                    if self.since and when is not None and when < self.since:
                        continue
                    hits.extend((entry, device, rank) for entry in self._match(line, when, path))
                more = bool(handle.read(1))
        except OSError as exc:
            self._attribute(path, hits, named)
            self._unreadable(path, exc)
            return
        self._attribute(path, hits, named)
        self.files_read.append(path)
        if more:
            self.truncated.append(path)
            self.warnings.append('ascend_diagnose: %s is larger than max_bytes_per_file (%d bytes); only its first %d '
                                 'bytes were read' % (path, self.max_bytes, read))

    @staticmethod
    def _header(line, header, named):
        """The torch_npu header whose device the line after it belongs to (see the module docstring)."""
        found = torch_header(line)
        if found is not None:
            pid, device, rank = found
            if device is not None:
                named.add(device)
            return {'pid': pid, 'device': device, 'rank': rank, 'left': HEADER_SPAN}
        if header is None or not line.strip() or PY_TRACEBACK in line or header['left'] <= 0:
            return None
        header['left'] -= 1
        return header

    def _match(self, line, when, path):
        matched = []
        for row, signature in self.rows:
            if signature.search(line):
                entry = self._count(row, when, path)
                matched.append(entry)
                if 'codes' in entry:
                    for code in series_codes(line):
                        if code not in entry['codes']:
                            entry['codes'].append(code)
        return matched

    @staticmethod
    def _attribute(path, hits, named):
        """Give each counted line of a file its device: its own (or its torch_npu header's), else the file's single
        one, else the directory's."""
        of_file = directory_device(path)
        if of_file is None and len(named) == 1:
            of_file = next(iter(named))
        for entry, device, rank in hits:
            device = of_file if device is None else device
            if device is None:
                entry['lines_without_device'] += 1
            elif device not in entry['devices']:
                entry['devices'].append(device)
                entry['devices'].sort()
            if rank is not None and rank not in entry['ranks']:
                entry['ranks'].append(rank)
                entry['ranks'].sort()

    def _count(self, row, when, path):
        code = row['code']
        entry = self.found.get(code)
        if entry is None:
            entry = self.found[code] = {
                'code': code, 'count': 0, 'first_seen': None, 'last_seen': None, 'files': [],
                'cause': row['cause'], 'fix': row['fix'], 'source': row['source'],
                'devices': [], 'ranks': [], 'lines_without_device': 0,
            }
            if code == 'E?9999':
                entry['codes'] = []
        entry['count'] += 1
        if when is not None:
            if entry['first_seen'] is None or when < entry['first_seen']:
                entry['first_seen'] = when
            if entry['last_seen'] is None or when > entry['last_seen']:
                entry['last_seen'] = when
        if path not in entry['files']:
            entry['files'].append(path)
        return entry

    def _unreadable(self, path, exc):
        message = '%s: %s' % (path, getattr(exc, 'strerror', None) or exc)
        self.unreadable.append({'path': path, 'msg': message})
        entry = self._count(UNREADABLE, None, path)
        entry.setdefault('msgs', []).append(message)

    # --- result ------------------------------------------------------------------------------------------------
    def not_all_read(self):
        """The finding that says what was not read (files over max_files, files cut at max_bytes_per_file), or None."""
        if not self.left_out and not self.truncated:
            return None
        parts = []
        if self.left_out:
            parts.append('read %d of %d files (the CANN logs first, then the newest): raise max_files or narrow paths'
                         % (self.files_found - self.left_out, self.files_found))
        if self.truncated:
            parts.append('%d file(s) read only up to max_bytes_per_file (%d bytes): raise max_bytes_per_file or use since'
                         % (len(self.truncated), self.max_bytes))
        entry = {'code': NOT_ALL_READ['code'], 'count': self.left_out + len(self.truncated), 'first_seen': None,
                 'last_seen': None, 'files': list(self.truncated), 'devices': [], 'ranks': [], 'lines_without_device': 0,
                 'files_found': self.files_found, 'files_left_out': self.left_out, 'msg': '; '.join(parts)}
        entry.update((key, NOT_ALL_READ[key]) for key in ('cause', 'fix', 'source'))
        return entry

    def findings(self):
        """The findings, most frequent first (then by code); ``not_all_read`` last."""
        found = sorted(self.found.values(), key=lambda entry: (-entry['count'], entry['code']))
        partial = self.not_all_read()
        return found + ([partial] if partial else [])

    def result(self):
        return {
            'changed': False,
            'findings': self.findings(),
            'files_found': self.files_found,
            'files_read': list(self.files_read),
            'unreadable': list(self.unreadable),
            'missing': list(self.missing),
            'skipped': list(self.skipped),
            'truncated': list(self.truncated),
        }


def series_codes(line):
    """The E?9999 codes in a line (E39999, EZ9999, ...)."""
    return ['E%s9999' % letter for letter in SERIES_RE.findall(line)]
