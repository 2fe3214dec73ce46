# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the Ascend vendor tools (npu-smi, hccn_tool) and the host tools next to them.

Private to this collection. What it guarantees:

* argv lists only, never a shell; no ``~`` or ``$VAR`` expansion of arguments;
* the C locale (``LC_ALL=C``, ``LANG=C``), so the parsers always see the English texts;
* the vendor install paths are searched before ``PATH`` (``hccn_tool`` usually is not on it);
* a per-call timeout through coreutils ``timeout -k 5 N`` when that binary exists;
* a bounded thread pool for the per-device calls, results in input order;
* one exception type, :class:`ToolError`, carrying cmd, rc, stdout and stderr.

Helpers here raise; only a module's ``main()`` turns an exception into ``fail_json``.
Python 3.9 compatible: this file runs on the managed nodes.
"""

from __future__ import annotations

import os
import platform
import shlex
import time
from concurrent.futures import ThreadPoolExecutor

# Where the Ascend driver installs its tools, searched in this order before PATH.
VENDOR_DIRS = ('/usr/local/Ascend/driver/tools', '/usr/local/sbin', '/usr/local/bin')

C_LOCALE = {'LC_ALL': 'C', 'LANG': 'C'}

DEFAULT_TIMEOUT = 30
DEFAULT_WORKERS = 8
KILL_AFTER = 5
# coreutils timeout: 124 when the command was stopped by TERM, 137 (128 + KILL) when it
# had to be killed after the -k grace period.
TIMEOUT_RCS = (124, 137)

# Hint per tool name for the "not found" error.
_PACKAGE_HINT = {
    'npu-smi': 'the Ascend driver (npu-smi) may be missing or not installed',
    'hccn_tool': 'the Ascend driver (hccn_tool) may be missing or not installed',
    'numactl': 'it comes with the numactl package',
    'lscpu': 'it comes with util-linux',
    'cpupower': 'it comes with the kernel tools package (kernel-tools or linux-tools)',
}


def cmd_to_text(cmd):
    """Return argv as one copy-pasteable shell line."""
    if cmd is None:
        return None
    if isinstance(cmd, str):
        return cmd
    return ' '.join(shlex.quote(str(arg)) for arg in cmd)


class ToolError(Exception):
    """A vendor tool could not be found, failed to start, failed, or timed out.

    ``cmd`` is the argv that was asked for (without the ``timeout`` prefix), ``rc`` is None
    when the command never ran. ``msg`` is the full user-facing sentence.
    """

    def __init__(self, cmd=None, rc=None, stdout='', stderr='', msg=''):
        self.cmd = list(cmd) if cmd is not None and not isinstance(cmd, str) else cmd
        self.rc = rc
        self.stdout = stdout or ''
        self.stderr = stderr or ''
        self.msg = msg or 'Command %s failed (rc=%s)' % (cmd_to_text(cmd), rc)
        super().__init__(self.msg)

    def result(self):
        """The keys a module passes to ``fail_json``: msg, cmd, rc, stdout, stderr."""
        return {
            'msg': self.msg,
            'cmd': cmd_to_text(self.cmd),
            'rc': self.rc,
            'stdout': self.stdout,
            'stderr': self.stderr,
        }


def tool_output(stdout, stderr):
    """The tool's own words: stderr and stdout stripped and joined (npu-smi errors are on stdout)."""
    parts = [text.strip() for text in (stderr, stdout) if text and text.strip()]
    return ' / '.join(' '.join(part.split('\n')) for part in parts) or '(no output)'


def sentence(text):
    """``text`` ending with a full stop (unless it already ends with . ! or ?), for joining messages."""
    text = text.rstrip()
    return text if text.endswith(('.', '!', '?')) else text + '.'


def find_tool(module, name, override=None, extra_dirs=None):
    """Return the absolute path of ``name``.

    ``override`` (a module option such as ``npu_smi_path``) is either the tool itself or a
    directory holding it; when it is given it is the only place looked at, so a wrong
    setting is reported instead of silently replaced. Otherwise ``extra_dirs``, the vendor
    directories and ``PATH`` are searched, in that order.
    """
    if override:
        candidate = os.path.join(override, name) if os.path.isdir(override) else override
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
        raise ToolError(
            cmd=[name], msg='%s: %s not found at %s (set by the module option): no executable file there. '
            'Point the option at the %s binary or leave it unset to search %s and PATH.'
            % (host_name(), name, override, name, ', '.join(VENDOR_DIRS)))
    dirs = list(extra_dirs or []) + list(VENDOR_DIRS)
    path = module.get_bin_path(name, opt_dirs=dirs)
    if path:
        return path
    hint = _PACKAGE_HINT.get(name, 'the package that provides it may be missing')
    raise ToolError(
        cmd=[name], msg='%s: %s not found: looked in %s and PATH. %s%s; install it or set the path option of the module.'
        % (host_name(), name, ', '.join(dirs), hint[0].upper(), hint[1:]))


class Runner:
    """Run argv lists through ``module.run_command`` with the C locale and a timeout.

    ``timeout`` is seconds per call; 0 or None disables it. The coreutils ``timeout``
    binary is looked up once; without it calls run unbounded (``timeout_enforced`` False).
    """

    def __init__(self, module, timeout=DEFAULT_TIMEOUT):
        self.module = module
        self.timeout = timeout
        self._timeout_bin = module.get_bin_path('timeout') if timeout else None

    @property
    def timeout_enforced(self):
        return bool(self._timeout_bin)

    def wrap(self, argv):
        """The argv actually executed: ``timeout -k 5 N argv...`` when a timeout applies."""
        if self._timeout_bin:
            return [self._timeout_bin, '-k', str(KILL_AFTER), str(self.timeout)] + list(argv)
        return list(argv)

    def run(self, argv):
        """Run one command, return ``(rc, stdout, stderr)``.

        A non-zero rc is returned, not raised: the caller decides what it means. Raises
        :class:`ToolError` when the command cannot be started or runs out of time.
        """
        argv = [str(arg) for arg in argv]
        try:
            rc, out, err = self.module.run_command(
                self.wrap(argv), environ_update=dict(C_LOCALE), expand_user_and_vars=False,
                handle_exceptions=False)
        except (OSError, ValueError) as exc:
            raise ToolError(cmd=argv, msg='Could not run %s: %s. Check that the file is an executable for this host.'
                            % (cmd_to_text(argv), exc)) from exc
        if self._timeout_bin and rc in TIMEOUT_RCS:
            raise ToolError(cmd=argv, rc=rc, stdout=out, stderr=err,
                            msg='%s timed out after %s s. The driver may be hung or busy; check dmesg and '
                                '`npu-smi info`, or raise the timeout option.' % (cmd_to_text(argv), self.timeout))
        return rc, out, err

    def run_retry_once(self, argv, should_retry, delay):
        """Run argv; when ``should_retry(rc, stdout, stderr)`` holds, wait ``delay`` seconds and run it once more.

        For a tool's own "busy, try again" answer (hccn_tool exit 11).
        """
        rc, out, err = self.run(argv)
        if should_retry(rc, out, err):
            time.sleep(delay)
            rc, out, err = self.run(argv)
        return rc, out, err

    def run_many(self, argvs, workers=DEFAULT_WORKERS, return_exceptions=False):
        """Run several commands concurrently, at most ``workers`` at a time.

        Returns a list of ``(rc, stdout, stderr)`` in the order of ``argvs``. With
        ``return_exceptions`` a :class:`ToolError` takes the place of its result; without it
        all calls still finish and then the first error (in input order) is raised.
        """
        argvs = list(argvs)
        if not argvs:
            return []
        workers = max(1, min(int(workers or 1), len(argvs)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(self.run, argv) for argv in argvs]
            results = []
            for future in futures:
                try:
                    results.append(future.result())
                except ToolError as exc:
                    results.append(exc)
        if not return_exceptions:
            for item in results:
                if isinstance(item, ToolError):
                    raise item
        return results


def host_name():
    """The managed node's name, for error messages."""
    return platform.node() or 'this host'


def parse_output(parser, argv, text):
    """Run a pure parser over a command's stdout.

    Returns ``(data, unparsed)``: ``data`` is the parser's dict without its ``unparsed``
    key, ``unparsed`` the list of lines it did not recognise. A parser that raises is a bug
    or an unknown format; it becomes a :class:`ToolError` instead of a traceback.
    """
    try:
        parsed = parser(text)
    except Exception as exc:  # a parser bug must not surface as a traceback
        raise ToolError(cmd=argv, rc=0, stdout=text,
                        msg='The output of %s could not be parsed (%s: %s). Please report it with your driver version '
                            'and the stdout of this result.' % (cmd_to_text(argv), type(exc).__name__, exc)) from exc
    parsed = dict(parsed or {})
    unparsed = list(parsed.pop('unparsed', None) or [])
    return parsed, unparsed


def unparsed_warning(argv, unparsed, version=None):
    """The warning text for lines a parser did not understand."""
    shown = '; '.join(repr(line) for line in unparsed[:3])
    more = ' (and %d more)' % (len(unparsed) - 3) if len(unparsed) > 3 else ''
    driver = ' (driver %s)' % version if version else ''
    return ('%d line(s) of the output of %s%s were not understood: %s%s. The values read from them are missing; '
            'please report this with your driver version.' % (len(unparsed), cmd_to_text(argv), driver, shown, more))
