# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of npuops.ascend.stage_health: stage 0 (the health check) in two parts.

``step: node`` runs health_info on the node in one task, keeps each part it read, checks the node against the limits
and writes the node's record of stage 0 to the run's store, with the ports and the product the NPUs showed in its
``data``. ``step: pod`` (once) reads the records of the nodes still in the play - never other nodes' facts - checks the
ports across the PoD and writes the PoD record of stage 0. The decisions are in plugins/plugin_utils/health.py, the
store in plugins/plugin_utils/store.py.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.action import ActionBase

from ansible_collections.npuops.ascend.plugins.plugin_utils import health, store

try:  # ansible-core 2.19+: the module_defaults a play sets for the modules this action runs
    from ansible.executor.module_common import get_action_args_with_defaults
except ImportError:  # pragma: no cover - kept for a core without it
    get_action_args_with_defaults = None

ROLE = 'health_check'
STAGE = 0
PARTS = ('npu', 'npu_again', 'ports', 'numa', 'host_info')
ARGUMENT_SPEC = dict(
    step=dict(type='str', required=True, choices=['node', 'pod']),
    run_dir=dict(type='path', required=True),
    run_id=dict(type='str', required=True),
    npu=dict(type='bool', default=True),
    npu_subset=dict(type='list', elements='str', default=['board', 'health', 'ecc', 'topo', 'processes']),
    health_view=dict(type='str', choices=['all', 'unhealthy'], default='unhealthy'),
    ecc_again=dict(type='bool', default=True),
    ecc_again_scope=dict(type='str', choices=['errors', 'all'], default='errors'),
    ports=dict(type='bool', default=True),
    port_queries=dict(type='list', elements='str', default=['link', 'ip', 'net_health', 'tls']),
    host=dict(type='bool', default=True),
    npus_per_node=dict(type='int', default=health.HEALTH_LIMITS['npus_per_node']),
    max_temp_c=dict(type='int', default=health.HEALTH_LIMITS['max_temp_c']),
    min_hugepages=dict(type='int', default=health.HEALTH_LIMITS['min_hugepages']),
    max_swappiness=dict(type='int', default=health.HEALTH_LIMITS['max_swappiness']),
    min_nofile=dict(type='int', default=health.HEALTH_LIMITS['min_nofile']),
    product_family=dict(type='str'),
    plan=dict(type='list', elements='dict', default=[]),
    parameter_plane=dict(type='str'),
    active=dict(type='list', elements='str'),
)
MODULE_OPTIONS = ('npu', 'npu_subset', 'health_view', 'ecc_again', 'ecc_again_scope', 'ports', 'port_queries', 'host')
LIMITS = ('npus_per_node', 'max_temp_c', 'min_hugepages', 'max_swappiness', 'min_nofile', 'product_family')


def split_parts(read):
    """Each part of a health_info result; a result without the parts (the module could not run at all) stands for
    every part, so that each becomes a finding of the node."""
    whole = dict((key, value) for key, value in (read or {}).items() if not str(key).startswith('_ansible'))
    return dict((part, whole[part] if part in whole else whole) for part in PARTS)


def checked_parts(parts, args):
    """The parts the findings look at: a concern that is switched off is None (left out, not checked as empty)."""
    npu_on, host_on = args['npu'], args['host']
    return {
        'npu': parts['npu'] if npu_on else None,
        'npu_again': parts['npu_again'] if npu_on and args['ecc_again'] else None,
        'ports': parts['ports'] if args['ports'] else None,
        'numa': parts['numa'] if host_on else None,
        'host_info': parts['host_info'] if host_on else None,
    }


def node_data(parts, args):
    """The record's ``data``: the ports for the PoD part (None when they are not checked) and the product the NPUs
    showed (None when the NPUs were not read)."""
    summary = (parts['npu'] or {}).get('summary') if args['npu'] else None
    product = summary.get('product') if isinstance(summary, dict) else None
    return {'ports': parts['ports'] if args['ports'] else None, 'product': product or None}


class ActionModule(ActionBase):
    """Stage 0 on a node (its read, its findings, its record) and over the PoD (the ports, from the records)."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def _module(self, name, args, task_vars):
        """Run one of the collection's modules on the node, with the play's module_defaults for it."""
        fqcn = 'npuops.ascend.%s' % name
        if get_action_args_with_defaults is not None:
            args = get_action_args_with_defaults(fqcn, args, self._task.module_defaults, self._templar,
                                                 action_groups=self._task._parent._play._action_groups)
        return self._execute_module(module_name=fqcn, module_args=args, task_vars=task_vars)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        try:
            run_id = store.check_run_id(args['run_id'])
            if args['step'] == 'node':
                result.update(self._node(args, run_id, task_vars))
            else:
                result.update(self._pod(args, run_id, task_vars))
        except store.StoreError as exc:
            raise AnsibleActionFail('stage_health: %s.' % to_native(exc)) from exc
        except OSError as exc:
            raise AnsibleActionFail('stage_health: could not use the run store %s on the controller: %s. Check that the '
                                    'report directory (npuops_report_dir) is on a writable file system with space left.'
                                    % (args['run_dir'], to_native(exc))) from exc
        finally:
            if args['step'] == 'node':
                self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    def _node(self, args, run_id, task_vars):
        node = store.check_node(task_vars.get('inventory_hostname'))
        read = self._module('health_info', dict((name, args[name]) for name in MODULE_OPTIONS), task_vars)
        parts = split_parts(read)
        limits = dict((name, args[name]) for name in LIMITS)
        findings = health.health_findings(dict(checked_parts(parts, args), host=node, plan=args['plan']), limits)
        record = store.make_record(run_id, node, STAGE, ROLE, findings, check_mode=self._play_context.check_mode,
                                   data=node_data(parts, args))
        path = store.write_record(args['run_dir'], record)
        out = dict(changed=False, findings=findings, record=record, path=path,
                   msg='recorded stage 0 (health_check) of %s: %s' % (node, record['status']))
        out.update(parts)
        if read.get('warnings'):
            out['warnings'] = list(read['warnings'])
        return out

    def _pod(self, args, run_id, task_vars):
        active = args['active'] if args['active'] is not None else list(task_vars.get('ansible_play_hosts') or [])
        records, problems = store.read_stage(args['run_dir'], run_id, active, STAGE)
        findings = []
        if args['ports']:
            ports = dict((node, (records[node].get('data') or {}).get('ports')) for node in active if node in records)
            try:
                findings = health.pod_port_findings(ports, args['parameter_plane'])
            except AnsibleError as exc:
                raise AnsibleActionFail('stage_health: %s' % to_native(exc.message)) from exc
        record = store.make_pod_record(run_id, STAGE, ROLE, findings, check_mode=self._play_context.check_mode)
        path = store.write_pod_record(args['run_dir'], record)
        return dict(changed=False, findings=findings, missing=[p['host'] for p in problems], path=path,
                    msg='%d node(s) checked across the PoD: %d finding(s) over the ports'
                        % (len(records), len(record['findings'])) if args['ports']
                        else 'the ports are not checked (ports: false): no finding across the PoD')
