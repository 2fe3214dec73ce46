# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of npuops.ascend.window_lock: take or release the lock of a PoD's change window on the controller.

The logic (the lock file, its directory lock, stale locks) is in plugins/plugin_utils/roce/lock.py.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.action import ActionBase

from ansible_collections.npuops.ascend.plugins.plugin_utils.roce import lock

ARGUMENT_SPEC = dict(
    dir=dict(type='path', required=True),
    pod=dict(type='str', required=True),
    run=dict(type='str', required=True),
    playbook=dict(type='str', default='?'),
    state=dict(type='str', choices=['present', 'absent', 'held'], default='present'),
    parts=dict(type='bool', default=False),
)


class ActionModule(ActionBase):
    """Takes or releases the change window lock of a PoD; never connects to the node."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # nothing is copied to the node

        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        path = lock.lock_path(args['dir'], args['pod'])
        info = lock.holder(args['run'], args['pod'], args['playbook'], parts=args['parts'])
        result.update(changed=False, path=path, holder=info)
        if args['state'] == 'held':
            try:
                current = lock.check_held(path, info)
            except lock.LockError as exc:
                raise AnsibleActionFail(to_native(exc)) from exc
            except OSError as exc:
                raise AnsibleActionFail('window_lock: could not read the lock %s: %s. %s' % (path, to_native(exc), lock.NOTHING)) from exc
            result.update(msg='run %s holds the lock %s since %s' % (info['run'], path, current.get('started')))
            return result
        if args['state'] == 'absent':
            try:
                outcome = lock.release(path, info)
            except OSError as exc:
                raise AnsibleActionFail('window_lock: could not release the lock %s: %s' % (path, to_native(exc))) from exc
            result.update(released=outcome['released'], msg=outcome['msg'])
            if not outcome['released']:
                result['warnings'] = [outcome['msg']]
            return result
        try:
            outcome = lock.acquire(path, info)
        except lock.LockError as exc:
            raise AnsibleActionFail(to_native(exc)) from exc
        except OSError as exc:
            raise AnsibleActionFail('window_lock: could not take the lock %s for PoD %s: %s. Check that the report directory '
                                    '(npuops_report_dir) is on a writable file system. %s'
                                    % (path, args['pod'], to_native(exc), lock.NOTHING)) from exc
        result.update(taken_over=outcome['taken_over'],
                      msg='%s the lock %s for PoD %s (run %s, pid %s)' % (
                          'holds' if outcome['again'] else 'took', path, args['pod'], info['run'], info['pid']))
        if outcome['taken_over']:
            result['warnings'] = [lock.takeover_warning(path, outcome['taken_over'])]
        return result
