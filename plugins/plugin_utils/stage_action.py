# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the action plugins of the stages share: the argument check, the run id, one method per step, the node's
modules run with the play's module_defaults, and the store's errors turned into one message.

A stage action sets ``NAME`` (its module name, for messages), ``ARGUMENT_SPEC`` (with a ``step`` option whose choices
are its steps) and a method ``step_<step>(args, run_id, task_vars)`` per step that returns the result keys.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.action import ActionBase

from ansible_collections.npuops.ascend.plugins.plugin_utils import store

try:  # ansible-core 2.19+: the module_defaults a play sets for the modules an action runs
    from ansible.executor.module_common import get_action_args_with_defaults
except ImportError:  # pragma: no cover - kept for a core without it
    get_action_args_with_defaults = None


class StageAction(ActionBase):
    """The base of npuops.ascend.stage_versions, stage_health, ...: dispatches ``step`` to ``step_<step>``."""

    NAME = 'stage'
    ARGUMENT_SPEC = {}
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run_module(self, name, args, task_vars):
        """Run one of the collection's modules on the node, with the play's module_defaults for it."""
        fqcn = 'npuops.ascend.%s' % name
        if get_action_args_with_defaults is not None:
            args = get_action_args_with_defaults(fqcn, args, self._task.module_defaults, self._templar,
                                                 action_groups=self._task._parent._play._action_groups)
        return self._execute_module(module_name=fqcn, module_args=args, task_vars=task_vars)

    @property
    def check_mode(self):
        return bool(self._play_context.check_mode)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=self.ARGUMENT_SPEC)
        try:
            run_id = store.check_run_id(args['run_id'])
            result.update(getattr(self, 'step_' + args['step'])(args, run_id, task_vars))
        except store.StoreError as exc:
            raise AnsibleActionFail('%s: %s.' % (self.NAME, to_native(exc))) from exc
        except OSError as exc:
            raise AnsibleActionFail('%s: could not use the run store %s on the controller: %s. Check that the report '
                                    'directory (npuops_report_dir) is on a writable file system with space left.'
                                    % (self.NAME, args['run_dir'], to_native(exc))) from exc
        finally:
            if self._connection is not None and getattr(self._connection, '_shell', None) is not None:
                self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
