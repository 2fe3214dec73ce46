# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run command-line tools for the modules: the generic layer under the per-tool adapters.

Private to this collection. What it guarantees:

* argv lists only, never a shell; no ``~`` or ``$VAR`` expansion of arguments;
* the C locale (``LC_ALL=C``, ``LANG=C``), so the parsers always see the English texts;
* the vendor install paths are searched before ``PATH`` (``hccn_tool`` usually is not on it);
  an explicit path option is the only place looked at, never silently replaced;
* a per-call timeout through coreutils ``timeout -k 5 N`` when that binary exists;
* one concurrency helper, :func:`in_parallel`, a bounded thread pool with results in input order;
* one failure type, :class:`ModuleFailure` (a message plus the result keys for ``fail_json``),
  and :class:`ToolError` for a command that could not run or failed (cmd, rc, stdout, stderr);
* one way to say where something happened: :func:`where` (``NPU 3 on node-07`` or ``node-07``),
  given to a failure as its ``subject`` and never spliced into a message afterwards.

What each tool prints and what its errors mean lives in the adapter of that tool
(``hccn_tool.py``, ``npu_smi.py``, ``host_tools.py`` beside this file), not here. Helpers raise; only a
module's ``main()`` turns a :class:`ModuleFailure` into ``fail_json``.
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
# AnsibleModule.run_command waits for output with select() in steps of 1 s and stops when a step
# ends without output and the process has exited: a command that was silent for a second and
# then wrote its answer and exited at that moment comes back with rc 0 and nothing read. Seen
# under load (16 nodes on 2 cores: a jumbo ping and a net_health read answered "nothing"). A
# command that only reads (``run(..., read=True)``: a GET of a vendor tool, a listing) and came
# back so (rc 0, no output at all, at least this long) is run once more; a command that sets or
# writes something is never run twice (its effect is verified by a read instead).
SILENT_RETRY_AFTER = 0.9


def cmd_to_text(cmd):
    """Return argv as one copy-pasteable shell line."""
    if cmd is None:
        return None
    if isinstance(cmd, str):
        return cmd
    return ' '.join(shlex.quote(str(arg)) for arg in cmd)


def host_name():
    """The managed node's name, for messages."""
    return platform.node() or 'this host'


def where(host=None, device=None):
    """The subject of a message: ``NPU 3 on node-07``, or ``node-07`` without a device."""
    host = host or host_name()
    if device is None:
        return host
    return 'NPU %s on %s' % (device, host)


def sentence(text):
    """``text`` ending with a full stop (unless it already ends with . ! or ?), for joining messages."""
    text = text.rstrip()
    return text if text.endswith(('.', '!', '?')) else text + '.'


def tool_output(stdout, stderr):
    """The tool's own words: stderr and stdout stripped and joined (npu-smi prints its errors on stdout)."""
    parts = [text.strip() for text in (stderr, stdout) if text and text.strip()]
    return ' / '.join(' '.join(part.split('\n')) for part in parts) or '(no output)'


class ModuleFailure(Exception):
    """Something the task must fail with: a message and the other result keys.

    ``subject`` says where it happened (see :func:`where`); the full message is
    ``<subject>: <text>``. :meth:`at` fills the subject in when the raiser did not know it.
    """

    def __init__(self, msg, subject=None, **result):
        self.text = msg
        self.subject = subject
        self.extra = result
        super().__init__(msg)

    @property
    def msg(self):
        if self.subject:
            return '%s: %s' % (self.subject, self.text)
        return self.text

    def __str__(self):
        return self.msg

    def at(self, host=None, device=None):
        """Set where the failure happened unless it is already known; returns self."""
        if not self.subject:
            self.subject = where(host, device)
        return self

    def result(self):
        """The keys a module passes to ``fail_json``."""
        out = dict(self.extra)
        out['msg'] = self.msg
        return out


class ToolError(ModuleFailure):
    """A command could not be found, failed to start, failed, or timed out.

    ``cmd`` is the argv that was asked for (without the ``timeout`` prefix); ``rc`` is None
    when the command never ran.
    """

    def __init__(self, cmd=None, rc=None, stdout='', stderr='', msg='', subject=None, **extra):
        self.cmd = list(cmd) if cmd is not None and not isinstance(cmd, str) else cmd
        self.rc = rc
        self.stdout = stdout or ''
        self.stderr = stderr or ''
        super().__init__(msg or 'Command %s failed (rc=%s)' % (cmd_to_text(cmd), rc), subject=subject, **extra)

    def result(self):
        out = super().result()
        out.update(cmd=cmd_to_text(self.cmd), rc=self.rc, stdout=self.stdout, stderr=self.stderr)
        return out


def failed_call(argv, rc, stdout, stderr, hint='', subject=None, then=''):
    """The ToolError for a call that answered with an error: the command, its rc, the tool's words, what to do."""
    words = sentence(tool_output(stdout, stderr))
    text = '%s failed (rc=%s): %s' % (cmd_to_text(argv), rc, words)
    for part in (hint, then):
        if part:
            text += ' ' + part
    return ToolError(cmd=argv, rc=rc, stdout=stdout, stderr=stderr, msg=text, subject=subject)


def find_tool(module, name, override=None, extra_dirs=None, missing_hint=None, then=''):
    """Return the absolute path of ``name``; raise :class:`ToolError` saying where it looked.

    ``override`` (a module option such as ``npu_smi_path``) is either the tool itself or a
    directory holding it; when it is given it is the only place looked at, so a wrong
    setting is reported instead of silently replaced. Otherwise ``extra_dirs``, the vendor
    directories and ``PATH`` are searched, in that order. ``missing_hint`` (from the tool's
    adapter) says which package provides the tool; ``then`` is the caller's own advice.
    """
    then = ' ' + then if then else ''
    if override:
        candidate = os.path.join(override, name) if os.path.isdir(override) else override
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
        raise ToolError(
            cmd=[name], subject=where(),
            msg='%s not found at %s (set by the module option): no executable file there. '
                'Point the option at the %s binary or leave it unset to search %s and PATH.%s'
                % (name, override, name, ', '.join(VENDOR_DIRS), then))
    dirs = list(extra_dirs or []) + list(VENDOR_DIRS)
    path = module.get_bin_path(name, opt_dirs=dirs)
    if path:
        return path
    hint = missing_hint or 'the package that provides it may be missing'
    raise ToolError(
        cmd=[name], subject=where(),
        msg='%s not found: looked in %s and PATH. %s%s; install it or set the path option of the module.%s'
            % (name, ', '.join(dirs), hint[0].upper(), hint[1:], then))


def in_parallel(func, items, workers=DEFAULT_WORKERS):
    """Run ``func(item)`` for every item, at most ``workers`` at a time.

    Returns the results in the order of ``items``; an exception raised by ``func`` takes the
    place of its result (the caller decides what it means), so every item always runs.
    """
    items = list(items)
    if not items:
        return []
    workers = max(1, min(int(workers or 1), len(items)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(func, item) for item in items]
        results = []
        for future in futures:
            try:
                results.append(future.result())
            except Exception as exc:  # reported per item by the caller
                results.append(exc)
    return results


def first_failure(results):
    """Raise the first exception found in ``results`` (input order); return the results otherwise."""
    for item in results:
        if isinstance(item, BaseException):
            raise item
    return results


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

    def run(self, argv, env=None, read=False):
        """Run one command, return ``(rc, stdout, stderr)``.

        ``env`` adds variables to the command's environment (the C locale always wins). A
        non-zero rc is returned, not raised: the caller (the tool's adapter) decides what it
        means. Raises :class:`ToolError` when the command cannot be started or runs out of time.
        ``read`` says the command only reads: only then is an answer lost to run_command's
        select() step (see SILENT_RETRY_AFTER) asked for once more; anything else runs once.
        """
        argv = [str(arg) for arg in argv]
        environ = dict((str(k), str(v)) for k, v in (env or {}).items())
        environ.update(C_LOCALE)
        rc, out, err, took = self._run_once(argv, environ)
        if read and rc == 0 and not out and not err and took >= SILENT_RETRY_AFTER:
            # maybe an answer run_command did not read (see SILENT_RETRY_AFTER): ask again, once
            rc, out, err, took = self._run_once(argv, environ)
        if self._timeout_bin and rc in TIMEOUT_RCS:
            raise ToolError(cmd=argv, rc=rc, stdout=out, stderr=err,
                            msg='%s timed out after %s s. The driver may be hung or busy; check dmesg and '
                                '`npu-smi info`, or raise the timeout option.' % (cmd_to_text(argv), self.timeout))
        return rc, out, err

    def _run_once(self, argv, environ):
        """One run_command: (rc, stdout, stderr, seconds it took)."""
        started = time.monotonic()
        try:
            rc, out, err = self.module.run_command(
                self.wrap(argv), environ_update=environ, expand_user_and_vars=False,
                handle_exceptions=False)
        except (OSError, ValueError) as exc:
            raise ToolError(cmd=argv, msg='Could not run %s: %s. Check that the file is an executable for this host.'
                            % (cmd_to_text(argv), exc)) from exc
        return rc, out, err, time.monotonic() - started

    def run_many(self, argvs, workers=DEFAULT_WORKERS, return_exceptions=False, read=False):
        """Run several commands concurrently (:func:`in_parallel`), results in the order of ``argvs``.

        With ``return_exceptions`` a :class:`ToolError` takes the place of its result; without
        it all calls still finish and then the first error (in input order) is raised. ``read``
        as for :meth:`run`.
        """
        results = in_parallel(lambda argv: self.run(argv, read=read), argvs, workers)
        return results if return_exceptions else first_failure(results)


def parse_output(parser, argv, text):
    """Run a pure parser over a command's stdout.

    Returns ``(data, unparsed)``: ``data`` is the parser's dict without its ``unparsed``
    key, ``unparsed`` the list of lines it did not recognise. Parsers never raise on tool
    output; one that does has a bug, which becomes a :class:`ToolError` asking for a report
    instead of a traceback.
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
