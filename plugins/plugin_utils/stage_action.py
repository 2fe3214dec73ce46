# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the action plugins of the stages share: the argument check, the run id, one method per step, the node's
modules run with the play's module_defaults, and the store's errors turned into one message.

A stage action sets ``NAME`` (its module name, for messages), ``ARGUMENT_SPEC`` (with a ``step`` option whose choices
are its steps) and a method ``step_<step>(args, run_id, task_vars)`` per step that returns the result keys.
"""

from __future__ import annotations

import contextlib

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
    # the options naming the run (checked as a run id) and the directory of its store
    ID_OPTION = 'run_id'
    DIR_OPTION = 'run_dir'
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

    @contextlib.contextmanager
    def task_check_mode(self, value):
        """Run the modules of the block with the task's check mode ``value`` (a read also in a dry run: False; what a
        change would do, never doing it: True)."""
        saved = self._task.check_mode
        self._task.check_mode = value
        try:
            yield
        finally:
            self._task.check_mode = saved

    def check_args(self, args):
        """Refuse arguments the spec cannot (AnsibleActionFail) before any step runs; nothing by default."""

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=self.ARGUMENT_SPEC)
        self.check_args(args)
        try:
            run_id = store.check_run_id(args[self.ID_OPTION])
            result.update(getattr(self, 'step_' + args['step'])(args, run_id, task_vars))
        except store.StoreError as exc:
            raise AnsibleActionFail('%s: %s.' % (self.NAME, to_native(exc))) from exc
        except OSError as exc:
            raise AnsibleActionFail('%s: could not use the run store %s on the controller: %s. Check that the report '
                                    'directory (npuops_report_dir) is on a writable file system with space left.'
                                    % (self.NAME, args[self.DIR_OPTION], to_native(exc))) from exc
        finally:
            if self._connection is not None and getattr(self._connection, '_shell', None) is not None:
                self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
