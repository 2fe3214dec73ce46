"""Shared helpers for module tests: run a module's main() against a scripted run_command.

Use in a test module::

    from ansible_collections.npuops.ascend.plugins.modules import hccn_info

    def test_x(run_module):
        res = run_module(hccn_info, {'devices': [0], 'queries': ['link']}, {
            (HCCN, '-i', '0', '-link', '-g'): (0, capture('hccn_tool_-link_-g.txt', 6, 6), ''),
        })
        assert not res.failed
        assert res.calls == [[HCCN, '-i', '0', '-link', '-g']]

``commands`` maps an argv (tuple or list of str, exactly as the module passes it to
``run_command``) to ``(rc, stdout, stderr)``, or to a list of such tuples that are handed out
one per call (the last one repeats): use that for "get, set, get again" sequences. An argv
that is not in the table gets ``(127, '', 'unexpected command')`` and, with ``strict=True``
(the default), fails the test after the module returns.
"""

from __future__ import annotations

import os
import platform
import threading
import time

import pytest

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

HOST = 'node-07'
NPU_SMI = '/usr/local/sbin/npu-smi'
HCCN = '/usr/local/Ascend/driver/tools/hccn_tool'
NUMACTL = '/usr/bin/numactl'
LSCPU = '/usr/bin/lscpu'
CPUPOWER = '/usr/bin/cpupower'
TIMEOUT = '/usr/bin/timeout'

# What the faked get_bin_path finds. `timeout` is absent by default, so argv are not prefixed;
# pass bin_paths={'timeout': TIMEOUT} to test the timeout wrapping.
DEFAULT_BIN_PATHS = {
    'npu-smi': NPU_SMI,
    'hccn_tool': HCCN,
    'numactl': NUMACTL,
    'lscpu': LSCPU,
    'cpupower': CPUPOWER,
    'timeout': None,
}

CAPTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'captures'))


def capture(name, first, last=None):
    """Lines ``first`` to ``last`` (1-based, inclusive) of a real capture file, byte for byte.

    The slice keeps the original line endings, so the text is exactly what the tool printed
    (annotation lines starting with '# ' are outside the slices the tests take).
    """
    with open(os.path.join(CAPTURES, name), 'rb') as handle:
        lines = handle.read().decode('utf-8').splitlines(keepends=True)
    last = first if last is None else last
    if not 1 <= first <= last <= len(lines):
        raise ValueError('%s has %d lines; cannot slice %d-%d' % (name, len(lines), first, last))
    return ''.join(lines[first - 1:last])


class ModuleExit(Exception):
    def __init__(self, payload, failed):
        super().__init__(payload.get('msg', ''))
        self.payload = payload
        self.failed = failed


class FakeRunCommand:
    """Stands in for AnsibleModule.run_command; thread-safe; records every call in arrival order."""

    def __init__(self, commands=None, delay=0.0):
        self.table = {}
        for argv, reply in (commands or {}).items():
            replies = list(reply) if isinstance(reply, list) else [reply]
            self.table[tuple(str(arg) for arg in argv)] = replies
        self.delay = delay
        self.calls = []
        self.kwargs = []
        self.unexpected = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    def __call__(self, args, **kwargs):
        key = tuple(args)
        with self._lock:
            self.calls.append(list(args))
            self.kwargs.append(kwargs)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            replies = self.table.get(key)
            if replies is None:
                self.unexpected.append(list(args))
                reply = (127, '', 'unexpected command')
            else:
                reply = replies.pop(0) if len(replies) > 1 else replies[0]
        try:
            if self.delay:
                time.sleep(self.delay)
            if isinstance(reply, BaseException):
                raise reply
            return reply
        finally:
            with self._lock:
                self.in_flight -= 1


class ModuleRun:
    """What one run of a module's main() produced."""

    def __init__(self, payload, failed, fake, warnings, elapsed):
        self.result = payload
        self.failed = failed
        self.fake = fake
        self.calls = fake.calls
        self.warnings = warnings
        self.elapsed = elapsed

    @property
    def max_in_flight(self):
        return self.fake.max_in_flight

    def __repr__(self):
        return 'ModuleRun(failed=%r, result=%r, calls=%r, warnings=%r)' % (self.failed, self.result, self.calls, self.warnings)


@pytest.fixture
def run_module(monkeypatch):
    """Return ``run(module, args, commands=None, *, bin_paths=None, delay=0.0, check_mode=False, strict=True)``.

    ``module`` is the imported module object; its ``main()`` runs with ``args`` as module
    arguments. ``get_bin_path`` finds the tools of DEFAULT_BIN_PATHS updated by ``bin_paths``
    (a None value means not found), ``platform.node()`` is HOST, and ``delay`` seconds are
    slept in every faked call. Returns a :class:`ModuleRun` with the exit_json/fail_json
    payload (``result``), ``failed``, the argv ``calls`` in order, and the ``warnings``.
    """

    def run(module, args, commands=None, bin_paths=None, delay=0.0, check_mode=False, strict=True):
        fake = FakeRunCommand(commands, delay)
        paths = dict(DEFAULT_BIN_PATHS)
        paths.update(bin_paths or {})
        warnings = []

        def get_bin_path(self, arg, required=False, opt_dirs=None):
            return paths.get(arg)

        def exit_json(self, **kwargs):
            raise ModuleExit(kwargs, failed=False)

        def fail_json(self, msg, **kwargs):
            kwargs['msg'] = msg
            raise ModuleExit(kwargs, failed=True)

        monkeypatch.setattr(basic.AnsibleModule, 'run_command', fake)
        monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', get_bin_path)
        monkeypatch.setattr(basic.AnsibleModule, 'warn', lambda self, warning: warnings.append(warning))
        monkeypatch.setattr(basic.AnsibleModule, 'exit_json', exit_json)
        monkeypatch.setattr(basic.AnsibleModule, 'fail_json', fail_json)
        monkeypatch.setattr(platform, 'node', lambda: HOST)

        module_args = dict(args or {})
        if check_mode:
            module_args['_ansible_check_mode'] = True
        started = time.monotonic()
        with patch_module_args(module_args):
            with pytest.raises(ModuleExit) as caught:
                module.main()
        elapsed = time.monotonic() - started
        if strict:
            assert not fake.unexpected, 'unexpected commands: %r' % (fake.unexpected,)
        return ModuleRun(caught.value.payload, caught.value.failed, fake, warnings, elapsed)

    return run
