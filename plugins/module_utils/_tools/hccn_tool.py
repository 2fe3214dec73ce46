# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""hccn_tool, the NPU port tool of the Ascend driver: everything the collection knows about it.

One home for: the argv of its GET, SET and ping calls; its error texts and the one meaning
each has; its busy policy; the hints that go with its errors; and :class:`HccnTool`, which
runs it for a task. Modules and roles use only this adapter, never raw argv or texts.

The tool (910B driver) prints GET data on stdout and errors on stderr (a few INFO-level ones,
such as the busy answer, on stdout), with exit code = internal error code & 0xFF.
Sources of the texts: tests/fixtures/captures/hccn_tool_set_and_errors.txt.
Python 3.9 compatible: this file runs on the managed nodes.
"""

from __future__ import annotations

import re
import threading
import time

from ansible_collections.npuops.ascend.plugins.module_utils._parsers import hccn_tool as parsers
from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import lines_of
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import (
    ModuleFailure,
    cmd_to_text,
    find_tool,
    failed_call,
    in_parallel,
    parse_output,
    tool_output,
    unparsed_warning,
    where,
)

NAME = 'hccn_tool'
MISSING_HINT = 'the Ascend driver (hccn_tool) may be missing or not installed'
SET_OK = 'Cmd executed successfully!'

# What a failed call means. One meaning per vendor text, whichever module asks.
UNSET = 'unset'            # the queried setting is not configured: its value is null, nothing failed
UNANSWERED = 'unanswered'  # the port cannot answer this query now (link down, not supported): value unknown
BUSY = 'busy'              # another call holds the device: retried once, then a failure
FAILED = 'failed'          # anything else

BUSY_RC = 11
BUSY_RETRY_DELAY = 1.0
LINK_POLL_INTERVAL = 0.5

DEFAULT_HINT = 'Run the command on the host to see the full error and check the port with `hccn_tool -i N -link -g`.'
_DEVICE_HINT = 'The device does not exist on this host: compare the requested devices with `npu-smi info -l`.'
_SYNTAX_HINT = 'This hccn_tool does not accept that syntax: check `hccn_tool -h` of your driver version.'

# (pattern, kind, meaning, hint); first match wins, line by line.
ERRORS = (
    (r'Get ipconf failed, because no ip was preset there', 'no_ip', UNSET,
     'The port has no address; configure one with npuops.ascend.hccn_config.'),
    (r'Get gateway failed, because no gateway was preset there', 'no_gateway', UNSET,
     'The port has no gateway; configure one with npuops.ascend.hccn_config.'),
    (r'Get invalid device id|The device is not exist', 'invalid_device', FAILED, _DEVICE_HINT),
    (r'Link status is down', 'link_down', UNANSWERED,
     'The port link is down: check the cable, the optical module and the switch port.'),
    (r'hccn_tool is busy', 'busy', BUSY,
     'Another hccn_tool call holds the device: run the task again when it is idle.'),
    (r'permission denied', 'permission_denied', FAILED, 'Run the task as root (become: true).'),
    (r'not supported on this product', 'not_supported', UNANSWERED,
     'This product or driver does not support it: remove it from the request.'),
    (r'Optical module is not present', 'optical_not_present', UNANSWERED,
     'No optical module is seated in the port: check the transceiver.'),
    (r'The value of \w+ you input is out of the valid range', 'out_of_range', FAILED,
     'The driver rejected the value as out of range for this product.'),
    (r'The number of pfc priority queues exceeds the maximum value', 'pfc_limit', FAILED,
     'The driver limits the number of PFC priorities: request fewer.'),
    (r'Get unknown option', 'unknown_option', FAILED, _SYNTAX_HINT),
    (r'Get invalid parameters|The total count of input parameters is wrong', 'invalid_parameters', FAILED, _SYNTAX_HINT),
    (r'Get invalid major cmd', 'invalid_command', FAILED,
     'This hccn_tool does not know that query: remove it from the request or update the driver.'),
    (r'ip address configured is conflicted', 'ip_conflict', FAILED,
     'Another port already uses this address: choose a unique address.'),
    (r'ip address you configured is invalid', 'invalid_address', FAILED, 'Give a valid IPv4 host address.'),
    (r"segment of configured gateway doesn't match", 'gateway_mismatch', FAILED,
     'The gateway must be in the subnet of the port address.'),
    (r'Unable to configure gateway, because ip is not configured', 'gateway_without_ip', FAILED,
     'Set the address and netmask of the port first, in the same request.'),
    (r'cmd line execute timeout', 'timeout', FAILED, 'The driver did not answer in time: check dmesg and `npu-smi info`.'),
    (r'User aborts command', 'aborted', FAILED, 'The command was interrupted; run the task again.'),
    # the generic DSMI failure (0x4001) and its variants: a real failure for every query
    (r'Command execute failed|Cmd execute failed|Execute failed', 'failed', FAILED, DEFAULT_HINT),
)
_COMPILED = tuple((re.compile(pattern, re.I), kind, meaning, hint) for pattern, kind, meaning, hint in ERRORS)

_VNIC_HINT = ('This device or driver gives no vNIC data: the vNIC is read on Atlas A3 (910_93) nodes whose hccn_tool '
              'has -vnic; on other products or older drivers remove vnic from the queries.')
# A query whose failures mean something narrower than ERRORS says: {query: {kind: (meaning, hint)}}.
# -vnic -g has no product check of its own: where the device has no vNIC its DSMI query fails with the
# generic 'Command execute failed!', and an hccn_tool without the command answers 'Get invalid major cmd.'.
# For this query both mean "no vNIC here", an answer about the device, not a failure of the task.
BY_QUERY = {
    'vnic': {'failed': (UNANSWERED, _VNIC_HINT), 'invalid_command': (UNANSWERED, _VNIC_HINT),
             'not_supported': (UNANSWERED, _VNIC_HINT)},
}


def classify_error(text, query=None):
    """What an error text of hccn_tool means (for ``query``, when :data:`BY_QUERY` narrows it).

    Sample (stderr of ``hccn_tool -i 0 -ip -g`` on a port without an address, exit 13)::

        Get ipconf failed, because no ip was preset there!

    Returns ``{'error': 'no_ip', 'meaning': 'unset', 'not_configured': True, 'message': <the line>,
    'hint': ...}``, or None when the text holds no known error. A meaning taken from
    :data:`BY_QUERY` adds ``'query': <query>``.
    """
    for line in lines_of(text):
        for pattern, kind, meaning, hint in _COMPILED:
            if pattern.search(line):
                found = {'error': kind, 'meaning': meaning, 'not_configured': meaning == UNSET,
                         'message': line.strip(), 'hint': hint}
                narrower = BY_QUERY.get(query, {}).get(kind)
                if narrower:
                    found.update(meaning=narrower[0], not_configured=narrower[0] == UNSET, hint=narrower[1], query=query)
                return found
    return None


# ---------------------------------------------------------------------------------------------
# argv
# ---------------------------------------------------------------------------------------------

def get_argv(tool, device, query, *words):
    """``hccn_tool -i D -<query> -g [words...]``."""
    return [tool, '-i', str(device), '-' + query, '-g'] + [str(w) for w in words]


def set_argv(tool, device, query, *words):
    """``hccn_tool -i D -<query> -s words...``."""
    return [tool, '-i', str(device), '-' + query, '-s'] + [str(w) for w in words]


def ping_argv(tool, device, target, count=None, size=None):
    """``hccn_tool -i D -ping -g address T [pkt N] [size S]``."""
    words = ['address', target]
    if count is not None:
        words += ['pkt', count]
    if size is not None:
        words += ['size', size]
    return get_argv(tool, device, 'ping', *words)


def command_string(argv):
    """Printable form of an hccn_tool argv, with the tool shown by its plain name."""
    return ' '.join([NAME] + [str(a) for a in argv[1:]])


def device_of(argv):
    """The ``-i`` device of an hccn_tool argv."""
    return argv[argv.index('-i') + 1] if '-i' in argv else None


def query_of(argv):
    """The query of an hccn_tool argv (``vnic`` of ``... -i 0 -vnic -g``), or None."""
    if '-i' not in argv:
        return None
    pos = argv.index('-i') + 2
    word = str(argv[pos]) if pos < len(argv) else ''
    return word[1:] if word.startswith('-') else None


# ---------------------------------------------------------------------------------------------
# one call and what it means
# ---------------------------------------------------------------------------------------------

class Reply:
    """One finished call: argv, rc, stdout, stderr, and what a failure means (:data:`ERRORS`)."""

    def __init__(self, argv, rc, stdout, stderr):
        self.argv = argv
        self.rc = rc
        self.stdout = stdout or ''
        self.stderr = stderr or ''
        self.error = None if rc == 0 else classify_error('%s\n%s' % (self.stderr, self.stdout), query_of(argv))
        self.silent = False  # a GET that exited 0 without printing anything, twice (see HccnTool.read)

    @property
    def ok(self):
        return self.rc == 0 and not self.silent

    @property
    def meaning(self):
        """None for success, else UNSET, UNANSWERED, BUSY or FAILED."""
        if self.ok:
            return None
        if self.silent:
            return UNANSWERED
        return self.error['meaning'] if self.error else FAILED

    @property
    def hint(self):
        return self.error['hint'] if self.error else DEFAULT_HINT

    @property
    def words(self):
        if self.silent:
            return 'the tool exited 0 without printing anything, twice'
        return tool_output(self.stdout, self.stderr)

    def failure(self, subject, then=''):
        """The ToolError for this reply: command, rc, the tool's words, the hint, then ``then``."""
        return failed_call(self.argv, self.rc, self.stdout, self.stderr, hint=self.hint, subject=subject, then=then)

    def detail(self):
        """cmd, rc, stdout and stderr for a result entry."""
        return {'cmd': cmd_to_text(self.argv), 'rc': self.rc, 'stdout': self.stdout, 'stderr': self.stderr}


class Reading:
    """A GET reply and its parse: ``parsed`` is None unless the call succeeded."""

    def __init__(self, query, reply, parsed=None, unparsed=None):
        self.query = query
        self.reply = reply
        self.parsed = parsed
        self.unparsed = unparsed or []

    @property
    def meaning(self):
        return self.reply.meaning

    def warnings(self):
        return [unparsed_warning(self.reply.argv, self.unparsed)] if self.unparsed else []


class HccnTool:
    """hccn_tool for one task: the binary, the runner, the busy policy.

    The tool answers ``hccn_tool is busy, please try again.`` (exit 11) when another call
    holds the same device, so this class makes one call at a time per device (a lock per
    device id) while different devices run concurrently; a busy answer is retried once
    after :data:`BUSY_RETRY_DELAY` seconds.
    """

    def __init__(self, runner, path, host=None):
        self.runner = runner
        self.path = path
        self.host = host
        self._locks = {}
        self._guard = threading.Lock()
        self._link_turn = threading.Lock()  # held by the port that polls its link for the others (wait_link_up)

    @classmethod
    def find(cls, module, runner, override=None, host=None):
        """Locate the binary (``override`` is the module's ``hccn_tool_path``)."""
        return cls(runner, find_tool(module, NAME, override, missing_hint=MISSING_HINT), host)

    def subject(self, device):
        return where(self.host, device)

    def _lock(self, device):
        with self._guard:
            return self._locks.setdefault(str(device), threading.Lock())

    def call(self, argv, read=False):
        """Run one argv of this tool under its device's lock, retrying once on busy; return a Reply.

        A busy answer means the tool did not run the command, so asking again is safe for a set too.
        ``read`` (a GET, a ping): every GET of hccn_tool prints its value or an error, so a GET that
        exited 0 without printing anything lost its answer (run_command's select step, or a tool
        that did not answer under load) and is asked once more here - the only retry of a GET of
        this tool (the runner is not asked to retry). A set is never sent twice otherwise: its
        effect is read back by the caller.
        """
        device = device_of(argv)
        with self._lock(device):
            try:
                reply = self._ask(argv)
                if read and reply.rc == 0 and not reply.stdout.strip() and not reply.stderr.strip():
                    reply = self._ask(argv)
            except ModuleFailure as exc:
                exc.at(self.host, device)
                raise
        return reply

    def _ask(self, argv):
        reply = Reply(argv, *self.runner.run(argv))
        if reply.meaning == BUSY:
            time.sleep(BUSY_RETRY_DELAY)
            reply = Reply(argv, *self.runner.run(argv))
        return reply

    def get(self, device, query, *words):
        return self.call(get_argv(self.path, device, query, *words), read=True)

    def set(self, device, query, *words):
        return self.call(set_argv(self.path, device, query, *words))

    def read(self, device, query):
        """GET ``query`` of ``device`` and parse it; a Reading whatever the answer."""
        reply = self.get(device, query)
        # every GET prints its value or an error: silence, also when asked again (call), is not an answer
        reply.silent = reply.rc == 0 and not reply.stdout.strip() and not reply.stderr.strip()
        if not reply.ok:
            return Reading(query, reply)
        parsed, unparsed = parse_output(parsers.PARSERS[query], reply.argv, reply.stdout)
        return Reading(query, reply, parsed, unparsed)

    def read_device(self, device, queries):
        """Every query of one device, one after another: {query: Reading}."""
        return dict((query, self.read(device, query)) for query in queries)

    def read_devices(self, plan, workers):
        """``plan`` is [(device, [queries])]; devices in parallel. Returns {device: {query: Reading}}.

        A call that could not run (timeout, missing binary) raises, after every device finished.
        """
        results = in_parallel(lambda item: self.read_device(item[0], item[1]), plan, workers)
        out = {}
        for (device, _queries), result in zip(plan, results):
            if isinstance(result, BaseException):
                raise result
            out[device] = result
        return out

    def wait_link_up(self, device, timeout):
        """Poll ``-link -g`` every :data:`LINK_POLL_INTERVAL` s until UP; return (up, last answer).

        The ports of a node that one task changes flap together, so they do not all poll: the
        first port to wait polls its link, the others wait for it (up to their own deadline) and
        then poll their own link, which is mostly UP by then. A flap costs about ten reads per
        node instead of ten per port, and no port is reported UP without its own reading.
        """
        deadline = time.monotonic() + max(0, timeout)
        if self._link_turn.acquire(blocking=False):
            try:
                return self._poll_link(device, deadline)
            finally:
                self._link_turn.release()
        if self._link_turn.acquire(timeout=max(0.0, deadline - time.monotonic())):
            self._link_turn.release()
        return self._poll_link(device, deadline)

    def _poll_link(self, device, deadline):
        while True:
            reading = self.read(device, 'link')
            last = reading.reply.words
            if reading.parsed is not None and str(reading.parsed.get('link', '')).upper() == 'UP':
                return True, last
            if time.monotonic() >= deadline:
                return False, last
            time.sleep(LINK_POLL_INTERVAL)

    def link_argv(self, device):
        return get_argv(self.path, device, 'link')
