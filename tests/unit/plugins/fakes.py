"""The one recording fake of ``AnsibleModule.run_command`` used by the unit tests.

``RecordingRun(commands, delay=0.0, default=None)``: ``commands`` maps an argv (tuple or list
of str, exactly as passed to ``run_command``) to ``(rc, stdout, stderr)``, to an exception to
raise, or to a list of such replies handed out one per call (the last one repeats). An argv
not in the table is answered by ``default(argv)`` when given, else with
``(127, '', 'unexpected command')`` and recorded in ``unexpected``. A reply may be a callable
returning the reply. ``delay`` is seconds per call, or a function of the argv. Every call is
recorded in arrival order (``calls``, ``kwargs``), with the highest number of calls in flight
at once (``max_in_flight``). Thread-safe.
"""

from __future__ import annotations

import threading
import time


class RecordingRun:

    def __init__(self, commands=None, delay=0.0, default=None):
        self.table = {}
        for argv, reply in (commands or {}).items():
            replies = list(reply) if isinstance(reply, list) else [reply]
            self.table[tuple(str(arg) for arg in argv)] = replies
        self.delay = delay
        self.default = default
        self.calls = []
        self.kwargs = []
        self.unexpected = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    def __call__(self, args, **kwargs):
        key = tuple(str(arg) for arg in args)
        with self._lock:
            self.calls.append(list(args))
            self.kwargs.append(kwargs)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            replies = self.table.get(key)
            if replies is not None:
                reply = replies.pop(0) if len(replies) > 1 else replies[0]
            elif self.default is not None:
                reply = self.default(list(args))
            else:
                self.unexpected.append(list(args))
                reply = (127, '', 'unexpected command')
        try:
            delay = self.delay(list(args)) if callable(self.delay) else self.delay
            if delay:
                time.sleep(delay)
            if callable(reply):
                reply = reply()
            if isinstance(reply, BaseException):
                raise reply
            return reply
        finally:
            with self._lock:
                self.in_flight -= 1
