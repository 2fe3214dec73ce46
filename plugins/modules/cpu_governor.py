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
      - V(auto) uses C(cpupower) when it is installed and sysfs otherwise. When O(cpupower_path) is set, that binary
        must exist, and a wrong path fails the task instead of falling back to sysfs.
    type: str
    choices: [auto, cpupower, sysfs]
    default: auto
  cpus:
    description:
      - CPUs to manage, as numbers or ranges (V(0-23), V(48)). All CPUs with a cpufreq driver when unset.
      - CPUs above the highest CPU of the host (as cpupower or sysfs report it), or above 65535, fail the task before
        anything is set. CPUs the host does not report below that, and CPUs without a cpufreq policy, are left alone
        with a warning.
    type: list
    elements: str
  cpupower_path:
    description:
      - Path of the C(cpupower) binary or its directory; searched in the vendor paths and E(PATH) when unset.
    type: path
extends_documentation_fragment:
  - npuops.ascend.tool_options
  - npuops.ascend.attributes
attributes:
  check_mode:
    support: full
    details: Reads the governors and reports what would change, without setting anything.
  diff_mode:
    support: full
    details: Shows the CPUs per governor before and after.
  idempotent:
    support: full
    details: Only CPUs whose governor differs are set; a second run changes nothing.
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

from ansible_collections.npuops.ascend.plugins.module_utils._argspec import build_module, execute, tool_options  # noqa: E402
from ansible_collections.npuops.ascend.plugins.module_utils._tools.cpufreq import (  # noqa: E402
    GOVERNORS,
    by_governor,
    choose_backend,
    compact,
    expand_cpus,
    no_policy_message,
    plan,
)
from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import ModuleFailure, Runner, host_name  # noqa: E402


def _by_cpu(state):
    return dict((str(cpu), gov) for cpu, gov in sorted(state.items()))


def run(module, params, warnings):
    """Read, decide, stop in check mode, set, read back. Raises ModuleFailure."""
    host = host_name()
    governor = params['governor']
    try:
        selected = expand_cpus(params['cpus']) if params['cpus'] else None
    except ValueError as exc:
        raise ModuleFailure('cpus: %s; use numbers or ranges like 0-23.' % exc, subject=host) from None
    backend = choose_backend(module, Runner(module, params['timeout']), params['method'], params['cpupower_path'], host)
    current, more = backend.read(selected)
    warnings.extend(more)
    decided = plan(current, governor, selected)
    where = 'by `%s`' % ' '.join(backend.info_argv(selected)) if backend.name == 'cpupower' else 'in %s' % backend.root
    if decided['beyond']:
        highest = max(current) if current else None
        raise ModuleFailure('cpus: CPUs %s do not exist on this host (%s). Nothing was changed.'
                            % (compact(decided['beyond']), 'the highest CPU reported %s is %s' % (where, highest)
                               if highest is not None else 'no CPU is reported %s' % where), subject=host)
    if decided['without']:
        warnings.append('%s: CPUs %s have no cpufreq policy (offline or no driver) and are left alone.'
                        % (host, compact(decided['without'])))
    if decided['holes']:
        warnings.append('%s: CPUs %s are not reported %s and are left alone; check that they exist and are online '
                        '(lscpu).' % (host, compact(decided['holes']), where))
    before = decided['before']
    if not before:
        raise ModuleFailure(no_policy_message(backend, where), subject=host)
    todo = decided['todo']
    result = {'changed': bool(todo), 'method': backend.name, 'changed_cpus': compact(todo), 'before': _by_cpu(before),
              'after': _by_cpu(decided['expected'] if todo else before), 'commands': []}
    if not todo:
        return result
    result['commands'] = backend.commands(todo, governor, decided['everything'])
    result['diff'] = {'before_header': 'CPU governors on %s' % host, 'after_header': 'CPU governors on %s' % host,
                      'before': by_governor(before), 'after': by_governor(decided['expected'])}
    if module.check_mode:
        return result
    backend.apply(todo, governor, decided['everything'])
    after, dummy = backend.read(selected)
    after = dict((cpu, gov) for cpu, gov in after.items() if cpu in before)
    result['after'] = _by_cpu(after)
    wrong = sorted(cpu for cpu in before if after.get(cpu) != governor)
    if wrong:
        seen = sorted(set(str(after.get(cpu)) for cpu in wrong))
        how = result['commands'][0] if len(result['commands']) == 1 else 'writing scaling_governor'
        raise ModuleFailure('governor still %s after `%s` (rc=0). Check that the %s governor is available and not '
                            'overridden by a daemon (tuned, power-profiles-daemon).' % ('/'.join(seen), how, governor),
                            subject='CPUs %s on %s' % (compact(wrong), host), **result)
    return result


def main():
    argument_spec = dict(
        governor=dict(type='str', required=True, choices=GOVERNORS),
        method=dict(type='str', choices=['auto', 'cpupower', 'sysfs'], default='auto'),
        cpus=dict(type='list', elements='str'),
        cpupower_path=dict(type='path'),
    )
    argument_spec.update(tool_options('timeout'))
    module = build_module('cpu_governor', argument_spec, supports_check_mode=True)
    execute(module, lambda warnings: run(module, module.params, warnings))


if __name__ == '__main__':
    main()
