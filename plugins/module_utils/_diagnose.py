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
Python 3.9 compatible: this file runs on the managed nodes.
"""

from __future__ import annotations

import os
import re

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
# A line that names the device it is about (see the module docstring).
LINE_DEVICE_RE = re.compile(r'comm error, device\[(\d+)\]|\bdevice\(chipId:(\d+)')
DEVICE_DIR_RE = re.compile(r'^device-(\d+)$')


def line_device(line):
    """The device id a log line names, or None."""
    match = LINE_DEVICE_RE.search(line)
    if not match:
        return None
    return int(match.group(1) if match.group(1) is not None else match.group(2))


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
        self.unreadable = []
        self.missing = []
        self.truncated = []
        self.warnings = []

    # --- which files -------------------------------------------------------------------------------------------
    def collect(self, paths):
        """The files under ``paths`` (files as given, directories recursively), newest first, at most max_files."""
        files = []
        seen = set()
        for given in paths:
            path = expand(given)
            if not os.path.lexists(path):
                self.missing.append(path)
                continue
            if os.path.isdir(path):
                for found in self._walk(path):
                    if found not in seen:
                        seen.add(found)
                        files.append(found)
            elif path not in seen:
                seen.add(path)
                files.append(path)
        files.sort(key=self._mtime, reverse=True)
        if len(files) > self.max_files:
            self.warnings.append('ascend_diagnose: %d log files found, only the %d newest were read (max_files)' % (
                len(files), self.max_files))
            files = files[:self.max_files]
        return files

    def _walk(self, top):
        found = []

        def onerror(exc):
            self._unreadable(getattr(exc, 'filename', None) or top, exc)

        for root, dirs, names in os.walk(top, onerror=onerror):
            dirs.sort()
            for name in sorted(names):
                path = os.path.join(root, name)
                if os.path.isfile(path):
                    found.append(path)
        return found

    @staticmethod
    def _mtime(path):
        try:
            return os.stat(path).st_mtime
        except OSError:
            return 0.0

    # --- reading -----------------------------------------------------------------------------------------------
    def scan(self, paths):
        for path in self.collect(paths):
            self.scan_file(path)
        return self

    def scan_file(self, path):
        try:
            handle = open(path, 'rb')
        except OSError as exc:
            self._unreadable(path, exc)
            return
        budget = self.max_bytes
        read = 0
        last_time = None
        hits = []
        named = set()
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
                    when = line_time(line)
                    if when is not None:
                        last_time = when
                    else:
                        when = last_time
                    if self.since and when is not None and when < self.since:
                        continue
                    hits.extend((entry, device) for entry in self._match(line, when, path))
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
        """Give each counted line of a file its device: its own, else the file's single one, else the directory's."""
        of_file = directory_device(path)
        if of_file is None and len(named) == 1:
            of_file = next(iter(named))
        for entry, device in hits:
            device = of_file if device is None else device
            if device is None:
                entry['lines_without_device'] += 1
            elif device not in entry['devices']:
                entry['devices'].append(device)
                entry['devices'].sort()

    def _count(self, row, when, path):
        code = row['code']
        entry = self.found.get(code)
        if entry is None:
            entry = self.found[code] = {
                'code': code, 'count': 0, 'first_seen': None, 'last_seen': None, 'files': [],
                'cause': row['cause'], 'fix': row['fix'], 'source': row['source'],
                'devices': [], 'lines_without_device': 0,
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
    def findings(self):
        """The findings, most frequent first (then by code)."""
        return sorted(self.found.values(), key=lambda entry: (-entry['count'], entry['code']))

    def result(self):
        return {
            'changed': False,
            'findings': self.findings(),
            'files_read': list(self.files_read),
            'unreadable': list(self.unreadable),
            'missing': list(self.missing),
            'truncated': list(self.truncated),
        }


def series_codes(line):
    """The E?9999 codes in a line (E39999, EZ9999, ...)."""
    return ['E%s9999' % letter for letter in SERIES_RE.findall(line)]
