"""What the tests of the stage actions share: an action of a stage built around a fake task, whose node's modules
answer from a table, and one step of it run with the task variables a play would give."""

from __future__ import annotations

from unittest import mock

from ansible.playbook.play_context import PlayContext

from ansible_collections.npuops.ascend.plugins.plugin_utils.stage_action import StageAction


def make_action(action_class, args, check_mode=False, answer=None, calls=None):
    """The action, its modules answered by ``answer(module_name)`` (each call recorded in ``calls``)."""
    task = mock.MagicMock()
    task.args = dict(args)
    task.async_val = 0
    task.check_mode = check_mode
    task.module_defaults = []
    task._parent._play._action_groups = {}
    play_context = PlayContext()
    play_context.check_mode = check_mode
    connection = mock.MagicMock()
    connection._shell.tmpdir = None
    plugin = action_class(task, connection, play_context, loader=None, templar=mock.MagicMock(), shared_loader_obj=None)

    def execute(module_name, module_args, task_vars):
        (calls if calls is not None else []).append((module_name, module_args))
        return dict(answer(module_name))

    plugin._execute_module = execute
    plugin._remove_tmp_path = lambda path: None
    return plugin


def run_step(plugin, task_vars):
    """Run the action's step as the task executor would, without ActionBase's own checks of the task."""
    with mock.patch.object(StageAction.__bases__[0], 'run', return_value={}):
        return plugin.run(task_vars=task_vars)
