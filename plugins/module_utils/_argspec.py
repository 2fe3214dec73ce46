# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every module shares: the common options, their one value check, and the one exit point.

The options of :data:`GROUP_OPTIONS` are accepted by every module of the
``npuops.ascend.npu`` action group (``meta/runtime.yml``), so a play sets them once with
``module_defaults: {group/npuops.ascend.npu: {timeout: 60}}``; their documentation is the
``npuops.ascend.tool_options`` doc fragment.
Python 3.9 compatible: this file runs on the managed nodes.
"""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.npuops.ascend.plugins.module_utils._tools.runner import DEFAULT_TIMEOUT, DEFAULT_WORKERS, ModuleFailure

COMMON = {
    'timeout': {'type': 'int', 'default': DEFAULT_TIMEOUT},
    'workers': {'type': 'int', 'default': DEFAULT_WORKERS},
    'hccn_tool_path': {'type': 'path'},
    'npu_smi_path': {'type': 'path'},
}
GROUP_OPTIONS = ('timeout', 'workers', 'hccn_tool_path', 'npu_smi_path')

# The lowest value each numeric option accepts, and why.
LIMITS = {
    'timeout': (0, '0 disables the limit'),
    'workers': (1, 'at least one call must run'),
    'link_timeout': (1, 'the port must be seen UP again after an MTU or PFC change'),
}


def tool_options(*names):
    """The argument spec of the shared options ``names`` (all of GROUP_OPTIONS by default)."""
    return dict((name, dict(COMMON[name])) for name in (names or GROUP_OPTIONS))


def check_limits(params):
    """The one value check of the numeric options; a message, or None when every value is fine."""
    bad = []
    for name, (low, why) in sorted(LIMITS.items()):
        value = params.get(name)
        if value is not None and value < low:
            bad.append('%s must be %d or more (%s), got %s' % (name, low, why, value))
    return '; '.join(bad) or None


def build_module(name, argument_spec, **kwargs):
    """The AnsibleModule for module ``name``, after the shared value check."""
    module = AnsibleModule(argument_spec=argument_spec, **kwargs)
    problem = check_limits(module.params)
    if problem:
        module.fail_json(msg='%s: %s.' % (name, problem))
    return module


def execute(module, work):
    """Run ``work(warnings)`` and end the module: the one place where a task exits.

    ``work`` returns the result dict, appends warnings to the list it is given, and raises
    :class:`ModuleFailure` to fail; the warnings are shown either way.
    """
    warnings = []
    try:
        result = work(warnings)
    except ModuleFailure as exc:
        for warning in warnings:
            module.warn(warning)
        module.fail_json(**exc.result())
    for warning in warnings:
        module.warn(warning)
    module.exit_json(**result)


def info_result(devices, errors=None, **facts):
    """The shape every info module returns.

    ``devices`` is keyed by the device id as a string; ``count`` is its length; ``errors``
    lists what could not be read without failing the task (device, query, cmd, rc, stdout,
    stderr, msg); ``facts`` are the module's node-wide keys. Read-only: never changed.
    """
    result = {'changed': False, 'count': len(devices), 'devices': devices, 'errors': list(errors or [])}
    result.update(facts)
    return result
