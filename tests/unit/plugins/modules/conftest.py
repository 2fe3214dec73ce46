"""Shared helpers for module tests: run a module's main() against a scripted run_command.

Use in a test module::

    from ansible_collections.npuops.ascend.plugins.modules import hccn_info

    def test_x(run_module):
        res = run_module(hccn_info, {'devices': [0], 'queries': ['link']}, {
            (HCCN, '-i', '0', '-link', '-g'): (0, sample('hccn_tool/link/mc_doc_up'), ''),
        })
        assert not res.failed
        assert res.calls == [[HCCN, '-i', '0', '-link', '-g']]

``commands`` is the reply table of the recording fake (tests/unit/plugins/fakes.py). Tool
output comes from the parser fixture tree (tests/unit/fixtures/parsers), whose samples are
byte-for-byte cuts of the real captures: :func:`sample`.
"""

from __future__ import annotations

import os
import platform
import time

import pytest

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.npuops.ascend.tests.unit.plugins.fakes import RecordingRun

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

TREE = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'parsers'))


def sample(case):
    """The text of a parser fixture case, ``<tool>/<query>/<case>`` (tests/unit/fixtures/parsers), as printed."""
    with open(os.path.join(TREE, case + '.txt'), 'rb') as handle:
        return handle.read().decode('utf-8')


def fake_host_files(tmp_path, monkeypatch, meminfo):
    """Point host_info at host files in ``tmp_path`` filled with real samples (os-release of openEuler 22.03 SP1,
    ``meminfo`` as given, swappiness 10, THP never), no PCI sysfs, an openEuler aarch64 kernel and 65535 open files.
    Returns the paths by FILES key."""
    import resource  # pylint: disable=import-outside-toplevel  # POSIX only, like the module
    from ansible_collections.npuops.ascend.plugins.module_utils._domain import host_info as _host_info  # pylint: disable=import-outside-toplevel
    files = {}
    for what, text in (('os_release', sample('host/os_release/openeuler_2203_lts_sp1')), ('meminfo', meminfo),
                       ('swappiness', '10\n'), ('thp', sample('host/thp/netcore_enabled_never'))):
        path = tmp_path / what
        path.write_text(text)
        files[what] = str(path)
    monkeypatch.setattr(_host_info, 'FILES', files)
    monkeypatch.setattr(_host_info, 'PCI_DEVICES', str(tmp_path / 'no-sysfs'))
    monkeypatch.setattr(platform, 'release', lambda: '5.10.0-136.12.0.86.oe2203sp1.aarch64')
    monkeypatch.setattr(platform, 'machine', lambda: 'aarch64')
    monkeypatch.setattr(resource, 'getrlimit', lambda which: (65535, 65535) if which == resource.RLIMIT_NOFILE else (-1, -1))
    return files


def health_findings(data, limits=None):
    """The controller-side check of stage 0, imported when a test uses it: the node-side compat run (Python 3.9,
    module_utils only) cannot import the controller's ansible, so those tests skip there."""
    try:
        from ansible_collections.npuops.ascend.plugins.plugin_utils.health import health_findings as real
    except (ImportError, SyntaxError) as exc:
        pytest.skip('controller-side filter not importable here: %s' % exc)
    return real(data, limits)


class ModuleExit(Exception):
    def __init__(self, payload, failed):
        super().__init__(payload.get('msg', ''))
        self.payload = payload
        self.failed = failed


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
    """Return ``run(module, args, commands=None, *, bin_paths=None, delay=0.0, check_mode=False, strict=True, default=None)``.

    ``module`` is the imported module object; its ``main()`` runs with ``args`` as module
    arguments. ``get_bin_path`` finds the tools of DEFAULT_BIN_PATHS updated by ``bin_paths``
    (a None value means not found), ``platform.node()`` is HOST, and ``delay`` seconds are
    slept in every faked call; ``default(argv)`` answers an argv that is not in ``commands`` (see
    RecordingRun). Returns a :class:`ModuleRun` with the exit_json/fail_json
    payload (``result``), ``failed``, the argv ``calls`` in order, and the ``warnings``.
    """

    def run(module, args, commands=None, bin_paths=None, delay=0.0, check_mode=False, strict=True, default=None):
        fake = RecordingRun(commands, delay, default)
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
