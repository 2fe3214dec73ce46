# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of npuops.ascend.settings_check: check the options of several of the collection's roles in one task.

Ansible checks a role's options against its argument spec with one task per role and entry point (the
``validate_argument_spec`` task it puts in front of the role). site.yml checks every stage's options before the first
change; done by Ansible, that was one task per stage and node. This action runs the same check - ansible-core's
``ArgumentSpecValidator`` over the role's ``meta/argument_specs.yml``, on the values the task sees (inventory, extra vars,
role defaults in scope), templated as Ansible templates them - for every role it is given, in one task, and says every
problem of every role at once.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.action import ActionBase

ARGUMENT_SPEC = dict(
    roles=dict(type='list', elements='dict', required=True, options=dict(
        role=dict(type='str', required=True),
        entry_point=dict(type='str', default='main'),
    )),
)
# plugins/action/settings_check.py -> the collection's root
COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def spec_path(role):
    """The argument specs of one of the collection's roles; a role name is a plain name."""
    if not role or role.startswith('.') or '/' in role:
        raise ValueError('settings_check: %r is not a role of the collection' % (role,))
    return os.path.join(COLLECTION_ROOT, 'roles', role, 'meta', 'argument_specs.yml')


def validate(spec, values):
    """ansible-core's role check of ``values`` against an entry point's options; returns the error messages."""
    validator = ArgumentSpecValidator(spec)
    try:
        outcome = validator.validate(values, validate_role_argument_spec=True)
    except TypeError:  # an ansible-core without the role flag
        outcome = validator.validate(values)
    return list(outcome.error_messages)


class ActionModule(ActionBase):
    """Checks the options of the listed roles on this node, from the controller; never connects to the node."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    def _load(self, path):
        """The role's argument specs as Ansible loads them (their defaults may be templates, as in a role)."""
        try:
            return self._loader.load_from_file(path, trusted_as_template=True)
        except TypeError:  # a loader without the flag
            return self._loader.load_from_file(path)

    def _templated_defaults(self, spec):
        """The options with their templated defaults: Ansible templates the spec of a role's check as task arguments."""
        out = {}
        for name, option in spec.items():
            option = dict(option or {})
            if isinstance(option.get('default'), str) and '{{' in option['default']:
                option['default'] = self._templar.template(option['default'])
            out[name] = option
        return out

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)

        problems, checked = [], []
        for entry in args['roles']:
            role, point = entry['role'], entry['entry_point']
            if role.startswith('npuops.ascend.'):
                role = role[len('npuops.ascend.'):]
            try:
                path = spec_path(role)
                specs = (self._load(path) or {}).get('argument_specs') or {}
            except (ValueError, OSError) as exc:
                raise AnsibleActionFail(to_native(exc)) from exc
            except Exception as exc:  # the loader's own errors (missing file, YAML)
                raise AnsibleActionFail('settings_check: cannot read the argument specs of role %s (%s): %s'
                                        % (role, path, to_native(exc))) from exc
            if point not in specs:
                raise AnsibleActionFail('settings_check: role %s has no entry point %r in %s' % (role, point, path))
            spec = self._templated_defaults(specs[point].get('options') or {})
            values = dict((name, task_vars[name]) for name in spec if name in task_vars)
            values = self._templar.template(values)
            errors = validate(spec, values)
            checked.append('%s (%s)' % (role, point))
            if errors:
                problems.append('%s (%s): %s' % (role, point, '; '.join(errors)))
        result['changed'] = False
        if problems:
            result.update(failed=True, problems=problems,
                          msg='Validation of arguments failed, nothing was changed: %s' % ' | '.join(problems))
        else:
            result.update(checked=checked,
                          msg='the options of %d role entry point(s) are valid: %s' % (len(checked), ', '.join(checked)))
        return result
