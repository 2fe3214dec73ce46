#!/usr/bin/python
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cpu_governor
short_description: Set the CPU frequency governor idempotently with cpupower or sysfs
version_added: 0.1.0
author:
  - npuops maintainers (@npuops)
description:
  - Reads the current governor of the CPUs, sets O(governor) only where it differs, then reads it back and fails when
    the value did not take effect (exit code 0 is not taken as proof).
  - With C(cpupower) it reads C(cpupower -c <cpus> frequency-info -p) and sets with
    C(cpupower -c <cpus> frequency-set -g <governor>); with sysfs it reads and writes
    C(/sys/devices/system/cpu/cpu<N>/cpufreq/scaling_governor).
  - The setting does not survive a reboot; make it persistent with the distribution's tool (for example a tuned
    profile or a systemd unit) when needed.
options:
  governor:
    description:
      - The governor every selected CPU should use.
    type: str
    required: true
    choices: [performance, powersave, ondemand, schedutil, conservative, userspace]
  method:
    description:
      - V(cpupower) uses the C(cpupower) tool, V(sysfs) the files under C(/sys/devices/system/cpu).
      - V(auto) uses C(cpupower) when it is installed and sysfs otherwise.
    type: str
    choices: [auto, cpupower, sysfs]
    default: auto
  cpus:
    description:
      - CPUs to manage, as numbers or ranges (V(0-23), V(48)). All CPUs with a cpufreq driver when unset.
    type: list
    elements: str
  cpupower_path:
    description:
      - Path of the C(cpupower) binary or its directory; searched in the vendor paths and E(PATH) when unset.
    type: path
  timeout:
    description:
      - Seconds each C(cpupower) call may take. V(0) disables the limit.
    type: int
    default: 30
attributes:
  check_mode:
    support: full
    description: Reads the governors and reports what would change, without setting anything.
  diff_mode:
    support: full
    description: Shows the CPUs per governor before and after.
  platform:
    support: full
    platforms: posix
    description: Linux with a cpufreq driver (for example C(cppc_cpufreq) on Kunpeng 920); setting needs root.
notes:
  - The sysfs method also checks C(scaling_available_governors) and refuses a governor the kernel does not offer
    before writing anything.
seealso:
  - module: npuops.ascend.numa_info
"""

EXAMPLES = r"""
- name: Run all CPUs with the performance governor
  npuops.ascend.cpu_governor:
    governor: performance

- name: Use the performance governor on the CPUs of NUMA nodes 0 and 1 only, through sysfs
  npuops.ascend.cpu_governor:
    governor: performance
    method: sysfs
    cpus: ["0-47"]
"""

RETURN = r"""
before:
  description: Governor per CPU before the task (CPUs without a cpufreq policy are left out).
  returned: always
  type: dict
  sample: {"0": ondemand, "1": ondemand}
after:
  description: Governor per CPU after the task (predicted in check mode, read back otherwise).
  returned: always
  type: dict
  sample: {"0": performance, "1": performance}
changed_cpus:
  description: CPUs whose governor was (or in check mode would be) changed, as a compact list.
  returned: always
  type: str
  sample: 0-191
method:
  description: The method used (V(cpupower) or V(sysfs)).
  returned: always
  type: str
  sample: cpupower
commands:
  description: The commands run (or that would run), or the sysfs writes as C(echo GOV > FILE) lines.
  returned: always
  type: list
  elements: str
cmd:
  description: The failing command, on failure.
  returned: failure
  type: str
rc:
  description: Exit code of the failing command.
  returned: failure
  type: int
stdout:
  description: Standard output of the failing command.
  returned: failure
  type: str
stderr:
  description: Standard error of the failing command.
  returned: failure
  type: str
"""

import glob  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.npuops.ascend.plugins.module_utils._runner import (  # noqa: E402
    Runner,
    ToolError,
    cmd_to_text,
    find_tool,
    host_name,
    sentence,
    tool_output,
)

GOVERNORS = ['performance', 'powersave', 'ondemand', 'schedutil', 'conservative', 'userspace']
SYSFS_CPU = '/sys/devices/system/cpu'

_ANALYZING = re.compile(r'^analyzing CPU (\d+):\s*$')
_GOVERNOR = re.compile(r'The governor "([^"]+)" may decide which speed to use')
_KNOWN = (
    re.compile(r'^\s*current policy: frequency should be within .*$'),
    re.compile(r'^\s*within this range\.\s*$'),
    re.compile(r'^\s*Unable to determine current policy\s*$'),
    re.compile(r'^\s*\*is offline\s*$'),
    re.compile(r'^\s*no or unknown cpufreq driver is active on this CPU\s*$'),
)


class GovernorError(Exception):
    def __init__(self, msg, **result):
        self.msg = msg
        self.result = result
        super().__init__(msg)


def parse_policy(text):
    """Parse ``cpupower -c <cpus> frequency-info -p``; return ({cpu: governor or None}, unparsed).

    Sample::

        analyzing CPU 0:
          current policy: frequency should be within 400 MHz and 2.90 GHz.
                          The governor "performance" may decide which speed to use
                          within this range.

    A CPU without a policy (offline, no cpufreq driver) maps to None.
    """
    out = {}
    unparsed = []
    cpu = None
    for line in (text or '').splitlines():
        if not line.strip():
            continue
        match = _ANALYZING.match(line)
        if match:
            cpu = int(match.group(1))
            out[cpu] = None
            continue
        match = _GOVERNOR.search(line)
        if match and cpu is not None:
            out[cpu] = match.group(1)
            continue
        if any(p.match(line) for p in _KNOWN):
            continue
        unparsed.append(line)
    return out, unparsed


def expand_cpus(items):
    """['0-3', '8'] -> [0, 1, 2, 3, 8]; raise ValueError on anything else."""
    cpus = set()
    for item in items or []:
        for part in str(item).split(','):
            part = part.strip()
            match = re.match(r'^(\d+)(?:-(\d+))?$', part)
            if not match:
                raise ValueError('%r is not a CPU number or range' % part)
            first = int(match.group(1))
            last = int(match.group(2) or first)
            if last < first:
                raise ValueError('%r is a reversed range' % part)
            cpus.update(range(first, last + 1))
    return sorted(cpus)


def compact(cpus):
    """[0, 1, 2, 3, 8] -> '0-3,8'."""
    runs = []
    for cpu in sorted(set(cpus)):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ','.join(str(a) if a == b else '%d-%d' % (a, b) for a, b in runs)


def by_governor(state):
    """{cpu: gov} -> 'gov: cpulist' lines, for the diff."""
    groups = {}
    for cpu, gov in state.items():
        groups.setdefault(gov or 'none', []).append(cpu)
    return ''.join('%s: %s\n' % (gov, compact(cpus)) for gov, cpus in sorted(groups.items()))


class Sysfs:
    name = 'sysfs'

    def __init__(self, root):
        self.root = root

    def path(self, cpu, leaf='scaling_governor'):
        return os.path.join(self.root, 'cpu%d' % cpu, 'cpufreq', leaf)

    def all_cpus(self):
        found = []
        for path in glob.glob(os.path.join(self.root, 'cpu[0-9]*', 'cpufreq', 'scaling_governor')):
            match = re.search(r'cpu(\d+)', os.path.basename(os.path.dirname(os.path.dirname(path))))
            if match:
                found.append(int(match.group(1)))
        return sorted(found)

    def read(self, cpus):
        out = {}
        for cpu in cpus if cpus is not None else self.all_cpus():
            try:
                with open(self.path(cpu)) as handle:
                    out[cpu] = handle.read().strip()
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
                raise GovernorError('CPU %d on %s: the kernel does not offer the %s governor (available: %s). Load its module '
                                    'or choose one of those.' % (cpu, host_name(), governor, ' '.join(offered)))
        for cpu in cpus:
            path = self.path(cpu)
            try:
                with open(path, 'w') as handle:
                    handle.write(governor)
            except OSError as exc:
                raise GovernorError('CPU %d on %s: writing %s to %s failed: %s. Run as root (become: true).'
                                    % (cpu, host_name(), governor, path, exc), cmd='echo %s > %s' % (governor, path)) from exc


class Cpupower:
    name = 'cpupower'

    def __init__(self, runner, tool):
        self.runner = runner
        self.tool = tool

    @staticmethod
    def cpu_arg(cpus):
        return 'all' if cpus is None else compact(cpus)

    def read(self, cpus):
        argv = [self.tool, '-c', self.cpu_arg(cpus), 'frequency-info', '-p']
        rc, out, err = self.runner.run(argv)
        if rc != 0:
            raise ToolError(cmd=argv, rc=rc, stdout=out, stderr=err,
                            msg='%s: %s failed (rc=%s): %s Check that a cpufreq driver is loaded, or use method=sysfs.'
                                % (host_name(), cmd_to_text(argv), rc, sentence(tool_output(out, err))))
        state, unparsed = parse_policy(out)
        warnings = []
        if unparsed:
            warnings.append('%d line(s) of the output of %s were not understood: %s. Please report this with your '
                            'cpupower version.' % (len(unparsed), cmd_to_text(argv), '; '.join(repr(x) for x in unparsed[:3])))
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
            raise GovernorError('%s: %s failed (rc=%s): %s Run as root (become: true) and check that the governor is '
                                'available (cpupower frequency-info -g).'
                                % (host_name(), cmd_to_text(argv), rc, sentence(tool_output(out, err))),
                                cmd=cmd_to_text(argv), rc=rc, stdout=out, stderr=err)


def choose_backend(module, params):
    method = params['method']
    if method in ('auto', 'cpupower'):
        try:
            tool = find_tool(module, 'cpupower', params['cpupower_path'])
            return Cpupower(Runner(module, params['timeout']), tool)
        except ToolError:
            if method == 'cpupower':
                raise
    return Sysfs(SYSFS_CPU)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            governor=dict(type='str', required=True, choices=GOVERNORS),
            method=dict(type='str', choices=['auto', 'cpupower', 'sysfs'], default='auto'),
            cpus=dict(type='list', elements='str'),
            cpupower_path=dict(type='path'),
            timeout=dict(type='int', default=30),
        ),
        supports_check_mode=True,
    )
    params = module.params
    governor = params['governor']
    host = host_name()
    try:
        selected = expand_cpus(params['cpus']) if params['cpus'] else None
    except ValueError as exc:
        module.fail_json(msg='%s: cpus: %s; use numbers or ranges like 0-23.' % (host, exc))
    try:
        backend = choose_backend(module, params)
        before, warnings = backend.read(selected)
        for warning in warnings:
            module.warn(warning)
        without = sorted(cpu for cpu, gov in before.items() if gov is None)
        before = dict((cpu, gov) for cpu, gov in before.items() if gov is not None)
        if without:
            module.warn('%s: CPUs %s have no cpufreq policy (offline or no driver) and are left alone.' % (host, compact(without)))
        if selected is not None:
            missing = sorted(set(selected) - set(before) - set(without))
            if missing and backend.name == 'sysfs':
                module.warn('%s: CPUs %s have no cpufreq directory in %s and are left alone.'
                            % (host, compact(missing), SYSFS_CPU))
            elif missing:
                module.warn('%s: CPUs %s are not reported by `%s -c %s frequency-info -p` and are left alone; check that '
                            'they exist and are online (lscpu).' % (host, compact(missing), backend.tool, compact(selected)))
        if not before:
            raise GovernorError('%s: no CPU with a cpufreq policy found (method %s). Load a cpufreq driver '
                                '(e.g. cppc_cpufreq) or check the cpus option.' % (host, backend.name))
        todo = sorted(cpu for cpu, gov in before.items() if gov != governor)
        expected = dict((cpu, governor) for cpu in before)
        result = {'changed': bool(todo), 'method': backend.name, 'changed_cpus': compact(todo),
                  'before': dict((str(c), g) for c, g in sorted(before.items())),
                  'after': dict((str(c), g) for c, g in sorted(expected.items())), 'commands': []}
        if not todo:
            result['after'] = result['before']
            module.exit_json(**result)
        everything = selected is None and todo == sorted(before)
        result['commands'] = backend.commands(todo, governor, everything)
        result['diff'] = {'before_header': 'CPU governors on %s' % host, 'after_header': 'CPU governors on %s' % host,
                          'before': by_governor(before), 'after': by_governor(expected)}
        if module.check_mode:
            module.exit_json(**result)
        backend.apply(todo, governor, everything)
        after, dummy = backend.read(selected)
        after = dict((cpu, gov) for cpu, gov in after.items() if cpu in before)
        result['after'] = dict((str(c), g) for c, g in sorted(after.items()))
        wrong = sorted(cpu for cpu in before if after.get(cpu) != governor)
        if wrong:
            seen = sorted(set(str(after.get(cpu)) for cpu in wrong))
            raise GovernorError('CPUs %s on %s: governor still %s after `%s` (rc=0). Check that the %s governor is available '
                                'and not overridden by a daemon (tuned, power-profiles-daemon).'
                                % (compact(wrong), host, '/'.join(seen), result['commands'][0] if len(result['commands']) == 1
                                   else 'writing scaling_governor', governor), **result)
    except ToolError as exc:
        module.fail_json(**exc.result())
    except GovernorError as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
