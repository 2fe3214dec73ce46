# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CPU frequency governor: the cpupower adapter, the sysfs backend, and the pure plan.

cpu_governor decides with :func:`plan` (pure) and acts through one of two backends with the
same interface (``read``, ``commands``, ``apply``): :class:`Cpupower` (the ``cpupower`` tool;
its output is read by ``_parsers/cpupower.py``) or :class:`Sysfs` (the
``/sys/devices/system/cpu/cpu<N>/cpufreq/scaling_governor`` files).
Python 3.9 compatible: this file runs on the managed nodes.
"""

from __future__ import annotations

import glob
import os
import re

from ansible_collections.npuops.ascend.plugins.module_utils._parsers import cpupower as cpupower_parsers
from ansible_collections.npuops.ascend.plugins.module_utils._parsers._common import MAX_CPUS, compact_cpu_list, expand_cpu_list
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import (
    ModuleFailure,
    ToolError,
    VENDOR_DIRS,
    cmd_to_text,
    failed_call,
    find_tool,
    parse_output,
    unparsed_warning,
    where,
)

GOVERNORS = ['performance', 'powersave', 'ondemand', 'schedutil', 'conservative', 'userspace']
SYSFS_CPU = '/sys/devices/system/cpu'
CPUPOWER = 'cpupower'
CPUPOWER_MISSING_HINT = 'it comes with the kernel tools package (kernel-tools or linux-tools)'


def expand_cpus(items):
    """['0-3', '8'] -> [0, 1, 2, 3, 8]; ValueError for anything else or beyond the sane maximum."""
    cpus = set()
    for item in items or []:
        cpus.update(expand_cpu_list(str(item), limit=MAX_CPUS))
    return sorted(cpus)


def compact(cpus):
    """[0, 1, 2, 3, 8] -> '0-3,8'."""
    return compact_cpu_list(cpus)


def by_governor(state):
    """{cpu: gov} -> 'gov: cpulist' lines, for the diff."""
    groups = {}
    for cpu, gov in state.items():
        groups.setdefault(gov or 'none', []).append(cpu)
    return ''.join('%s: %s\n' % (gov, compact(cpus)) for gov, cpus in sorted(groups.items()))


def plan(current, governor, selected):
    """Decide (pure). ``current`` is {cpu: governor or None} for the CPUs that exist.

    Returns a dict: ``before`` (CPUs with a policy), ``todo`` (CPUs to change), ``expected``,
    ``everything`` (every CPU of the host changes: one ``-c all`` call), ``without`` (CPUs
    without a policy, left alone), ``holes`` (requested CPUs the host does not report, below
    its highest one, left alone) and ``beyond`` (requested CPUs above the highest CPU the host
    reports: the request is refused).
    """
    before = dict((cpu, gov) for cpu, gov in current.items() if gov is not None)
    without = sorted(cpu for cpu, gov in current.items() if gov is None)
    holes, beyond = [], []
    if selected is not None:
        highest = max(current) if current else -1
        missing = sorted(set(selected) - set(current))
        holes = [cpu for cpu in missing if cpu <= highest]
        beyond = [cpu for cpu in missing if cpu > highest]
    todo = sorted(cpu for cpu, gov in before.items() if gov != governor)
    return {
        'before': before,
        'todo': todo,
        'expected': dict((cpu, governor) for cpu in before),
        'everything': selected is None and todo == sorted(before),
        'without': without,
        'holes': holes,
        'beyond': beyond,
    }


class Sysfs:
    name = 'sysfs'

    def __init__(self, root, host=None, instead_of=None):
        self.root = root
        self.host = host
        # why method auto read sysfs: where cpupower was looked for, or None when sysfs was asked for
        self.instead_of = instead_of

    def path(self, cpu, leaf='scaling_governor'):
        return os.path.join(self.root, 'cpu%d' % cpu, 'cpufreq', leaf)

    def all_cpus(self):
        found = []
        for path in glob.glob(os.path.join(self.root, 'cpu[0-9]*')):
            match = re.match(r'^cpu(\d+)$', os.path.basename(path))
            if match and os.path.isdir(path):
                found.append(int(match.group(1)))
        return sorted(found)

    def read(self, cpus):
        """{cpu: governor or None} for the CPUs that exist (None: no cpufreq policy); warnings."""
        existing = self.all_cpus()
        out = {}
        for cpu in existing if cpus is None else [c for c in cpus if c in existing]:
            try:
                with open(self.path(cpu)) as handle:
                    out[cpu] = handle.read().strip() or None
            except OSError:
                out[cpu] = None
        return out, []

    def available(self, cpu):
        try:
            with open(self.path(cpu, 'scaling_available_governors')) as handle:
                return handle.read().split()
        except OSError:
            return None

    def commands(self, cpus, governor, everything):
        return ['echo %s > %s' % (governor, self.path(cpu)) for cpu in cpus]

    def apply(self, cpus, governor, everything):
        for cpu in cpus:
            offered = self.available(cpu)
            if offered is not None and governor not in offered:
                raise ModuleFailure('the kernel does not offer the %s governor (available: %s). Load its module or choose '
                                    'one of those.' % (governor, ' '.join(offered)), subject='CPU %d on %s' % (cpu, self.host))
        for cpu in cpus:
            path = self.path(cpu)
            try:
                with open(path, 'w') as handle:
                    handle.write(governor)
            except OSError as exc:
                raise ModuleFailure('writing %s to %s failed: %s. Run as root (become: true).' % (governor, path, exc),
                                    subject='CPU %d on %s' % (cpu, self.host), cmd='echo %s > %s' % (governor, path)) from exc


class Cpupower:
    name = CPUPOWER

    def __init__(self, runner, path, host=None):
        self.runner = runner
        self.tool = path
        self.host = host

    @staticmethod
    def cpu_arg(cpus):
        return 'all' if cpus is None else compact(cpus)

    def info_argv(self, cpus):
        return [self.tool, '-c', self.cpu_arg(cpus), 'frequency-info', '-p']

    def read(self, cpus):
        """{cpu: governor or None} for the CPUs cpupower reports (None: offline or no driver); warnings."""
        argv = self.info_argv(cpus)
        rc, out, err = self.runner.run(argv, read=True)
        if rc != 0:
            raise failed_call(argv, rc, out, err, subject=where(self.host),
                              hint='Check that a cpufreq driver is loaded, or use method=sysfs.')
        parsed, unparsed = parse_output(cpupower_parsers.PARSERS['policy'], argv, out)
        warnings = [unparsed_warning(argv, unparsed).replace('driver version', 'cpupower version')] if unparsed else []
        state = dict(parsed.get('cpus') or {})
        if cpus is not None:
            state = dict((cpu, gov) for cpu, gov in state.items() if cpu in cpus)
        return state, warnings

    def argv(self, cpus, governor, everything):
        """``cpupower -c <cpus|all> frequency-set -g GOV``; ``all`` when every CPU changes."""
        return [self.tool, '-c', 'all' if everything else compact(cpus), 'frequency-set', '-g', governor]

    def commands(self, cpus, governor, everything):
        return [cmd_to_text(self.argv(cpus, governor, everything))]

    def apply(self, cpus, governor, everything):
        argv = self.argv(cpus, governor, everything)
        rc, out, err = self.runner.run(argv)
        if rc != 0:
            raise failed_call(argv, rc, out, err, subject=where(self.host),
                              hint='Run as root (become: true) and check that the governor is available '
                                   '(cpupower frequency-info -g).')


def choose_backend(module, runner, method, cpupower_path, host):
    """The backend for ``method``; ``auto`` falls back to sysfs only when cpupower was not given and is not found.

    The sysfs backend of such a fallback says where cpupower was looked for (``instead_of``), so that a later
    failure can name the missing tool.
    """
    if method == 'sysfs':
        return Sysfs(SYSFS_CPU, host)
    try:
        return Cpupower(runner, find_tool(module, CPUPOWER, cpupower_path, missing_hint=CPUPOWER_MISSING_HINT), host)
    except ToolError:
        if method == 'cpupower' or cpupower_path:
            raise
    return Sysfs(SYSFS_CPU, host, instead_of='%s was not found (looked in %s and PATH)' % (CPUPOWER, ', '.join(VENDOR_DIRS)))


def no_policy_message(backend, where):
    """The failure when no CPU has a cpufreq policy; names the missing cpupower when method auto fell back to sysfs."""
    text = 'no CPU with a cpufreq policy found (method %s, %s).' % (backend.name, where)
    instead_of = getattr(backend, 'instead_of', None)
    if instead_of:
        return ('%s %s, so method auto read the sysfs files instead. Load a cpufreq driver (e.g. cppc_cpufreq) or check '
                'the cpus option; to use cpupower, install it (it comes with the kernel tools package: kernel-tools or '
                'linux-tools).' % (text, instead_of))
    return '%s Load a cpufreq driver (e.g. cppc_cpufreq) or check the cpus option.' % text
