# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of npuops.ascend.stage_numa: stage 6 (the NUMA binding, the CPU governor and the rank launcher) in
three steps, each one task per node.

``step: check`` (the settings play) checks the settings of stage 6 and, when asked, reads the run user's account and
the groups on the node and refuses a run user stage 6 must not take over; it changes nothing. ``step: read`` (the stage,
before any change) does the same checks, reads the NUMA layout and the host settings, works out the binding and records
the layout's findings in the run's store, so that the gate can stop every node before the first change. ``step: node``
does the rest on the node: the AI Core samples, the governor, the run user, the directories, the map and the launcher
(with backups), the launcher test as the run user, the undoing of the map and the launcher when the test fails, the
findings, the node's record and its JSON report.

The node's work runs through Ansible's own modules and actions (cpu_governor, user, file, copy, template, command), so
check mode, --diff and idempotence are theirs. The decisions are in plugins/plugin_utils/numa.py.
"""

from __future__ import annotations

import os
import time

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.action import ActionBase
from ansible.plugins.filter.core import to_nice_json
from ansible.template import trust_as_template

from ansible_collections.npuops.ascend.plugins.action.report_files import write_reports
from ansible_collections.npuops.ascend.plugins.plugin_utils import launch as rank_launch
from ansible_collections.npuops.ascend.plugins.plugin_utils import node_files, numa, store
from ansible_collections.npuops.ascend.plugins.plugin_utils.stage_action import StageAction

ROLE = 'numa_bind'
STAGE = 6
REPORT_DIR = 'stage6-numa_bind'
# the keys of a numa_info result a later stage reads from this step's result (stage 8: the DataLoader advice)
NUMA_KEYS = ('count', 'devices', 'errors', 'nodes', 'distances', 'npu', 'cpus_total')
ARGUMENT_SPEC = dict(
    step=dict(type='str', required=True, choices=['check', 'read', 'node']),
    run_dir=dict(type='path'),
    run_id=dict(type='str'),
    settings=dict(type='dict', required=True),
    check_settings=dict(type='bool', default=True),
    check_run_user=dict(type='bool', default=True),
    run_user_create=dict(type='bool', default=True),
    run_user_shell=dict(type='str', default='/sbin/nologin'),
    run_user_retries=dict(type='int', default=10),
    governor_enabled=dict(type='bool', default=True),
    visible_devices=dict(type='bool', default=False),
    verify=dict(type='bool', default=True),
    report=dict(type='bool', default=True),
    timeout=dict(type='int', default=60),
    read=dict(type='dict', default={}),
    skip_tags=dict(type='list', elements='str', default=[]),
    # the per-rank launch beside the map: {enabled, path, script_path, nodes, addr (this node's address), master_addr,
    # master_port, affinity_mode}; None: no launch file and no npu-launch
    launch=dict(type='dict', default=None),
)
MAP_MODE = numa.FILE_MODES['map']
LAUNCHER_MODE = numa.FILE_MODES['launcher']
LAUNCHER_TEMPLATE = 'npu-bind.j2'
LAUNCH_MODE = numa.FILE_MODES['launch']
LAUNCH_SCRIPT_MODE = numa.FILE_MODES['launch_script']
LAUNCH_TEMPLATE = 'npu-launch.j2'


def failed_when_false(result):
    """A module result as a task with ``failed_when: false`` registers it."""
    out = dict(result or {})
    out['failed'] = False
    return out


def skipped():
    """What a task registers when its condition is false."""
    return {'changed': False, 'skipped': True}


def launch_on(args):
    """The launch settings when stage 6 writes the launch file and npu-launch, else None."""
    launch = args.get('launch')
    return launch if isinstance(launch, dict) and launch.get('enabled') else None


def settings_problems(args):
    """Every problem of the settings of stage 6: the binding's and the launch's."""
    return numa.numa_bind_problems(args['settings']) + rank_launch.launch_problems(args.get('launch'))


class ActionModule(StageAction):
    """Stage 6 on a node: the checks before any change, then the binding, the governor and the launcher."""

    NAME = 'stage_numa'
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def run(self, tmp=None, task_vars=None):
        if self._task.args.get('step') != 'check':
            return super().run(tmp, task_vars)
        # the settings play runs before the run's store exists: no run id, no record
        result = ActionBase.run(self, tmp, task_vars)
        del tmp
        try:
            dummy, args = self.validate_argument_spec(argument_spec=self.ARGUMENT_SPEC)
            result.update(self.step_check(args, None, task_vars or {}))
        finally:
            if self._connection is not None and getattr(self._connection, '_shell', None) is not None:
                self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    # ---- the parts ----------------------------------------------------------------------------------------------

    def _builtin(self, name, args, task_vars):
        return self._execute_module(module_name='ansible.legacy.%s' % name, module_args=args, task_vars=task_vars)

    def _action(self, name, args, task_vars):
        """Run one of Ansible's actions (copy, template) as a task of its own would, with this task's check mode and
        diff."""
        new_task = self._task.copy()
        new_task.args = dict(args)
        action = self._shared_loader_obj.action_loader.get(
            'ansible.legacy.%s' % name, task=new_task, connection=self._connection, play_context=self._play_context,
            loader=self._loader, templar=self._templar, shared_loader_obj=self._shared_loader_obj)
        return action.run(task_vars=task_vars)

    def _path_states(self, entries, task_vars):
        """``{path: stat}`` of ``entries`` from one npuops.ascend.path_info run (read-only, also in check mode); empty
        when it could not run, so that every path goes to its action."""
        with self.task_check_mode(False):
            return node_files.stats(self.run_module('path_info', dict(paths=entries), task_vars))

    def _render_launcher(self, task_vars, name=LAUNCHER_TEMPLATE):
        """The launcher (or npu-launch) as the template action renders it from the role's template (to compare its
        checksum with the node's file), or None when it cannot be rendered here (the template action then runs and
        reports why)."""
        try:
            source = self._find_needle('templates', name)
            text = self._loader.get_text_file_contents(source)
            templar = self._templar.copy_with_new_env(available_variables=task_vars)
            return templar.template(trust_as_template(text), escape_backslashes=False)
        except Exception:  # pylint: disable=broad-exception-caught  # any failure: the template action decides
            return None

    def _checks(self, args, node, task_vars):
        """The settings check and the run user's check; returns the run user plan (None when not checked) or a
        failure."""
        settings = args['settings']
        if args['check_settings']:
            failure = numa.settings_failure(node, settings_problems(args))
            if failure:
                return None, dict(failed=True, changed=False, msg=failure)
        if not args['check_run_user']:
            return None, None
        passwd = self._builtin('getent', dict(database='passwd', key=settings['run_user'], fail_key=False), task_vars)
        groups = self._builtin('getent', dict(database='group'), task_vars)
        plan = numa.numa_bind_run_user(numa.getent_table(passwd, 'passwd') or {}, node, {
            'run_user': settings['run_user'], 'existing': settings.get('run_user_existing', 'refuse'),
            'create': args['run_user_create'], 'groups': numa.getent_table(groups, 'group')})
        failure = numa.run_user_failure(plan)
        if failure:
            return plan, dict(failed=True, changed=False, msg=failure, run_user_plan=plan)
        return plan, None

    def _aicore(self, seconds, task_vars):
        """Mean and variance of the AI Core usage per NPU over ``seconds`` samples about a second apart."""
        samples = []
        with self.task_check_mode(False):
            for index in range(seconds):
                if index:
                    time.sleep(1)
                samples.append(failed_when_false(self.run_module(
                    'npu_info', dict(gather_subset=['usages'], timeout=self._timeout), task_vars)))
        return numa.aicore_stats(samples)

    def _user(self, args, plan, task_vars):
        """Create or keep the run user, retrying while another node holds the passwd lock."""
        settings = args['settings']
        user_args = dict(name=settings['run_user'], system=True, shell=args['run_user_shell'], create_home=True,
                         comment=plan['comment'])
        attempts = max(0, args['run_user_retries']) + 1
        for attempt in range(1, attempts + 1):
            result = self._builtin('user', dict(user_args), task_vars)
            if not result.get('failed'):
                break
            if attempt < attempts:
                time.sleep(1)
        if attempts > 1:
            result['attempts'] = attempt
        return result

    # ---- the steps ----------------------------------------------------------------------------------------------

    def step_check(self, args, run_id, task_vars):
        node = store.check_node(task_vars.get('inventory_hostname'))
        plan, failure = self._checks(args, node, task_vars)
        if failure:
            return failure
        out = dict(changed=False, msg='the stage 6 settings of %s are usable' % node)
        if plan is not None:
            out.update(run_user_plan=plan,
                       msg='%s; the run user %s: %s' % (out['msg'], args['settings']['run_user'], plan['state']))
        return out

    def step_read(self, args, run_id, task_vars):
        node = store.check_node(task_vars.get('inventory_hostname'))
        settings = args['settings']
        self._timeout = args['timeout']
        skip = numa.skipped_parts(args['skip_tags'])
        if 'settings' not in skip:  # whatever check_settings says: the stage checks its own settings
            failure = numa.settings_failure(node, settings_problems(args))
            if failure:
                return dict(failed=True, changed=False, msg=failure)
        layout = failed_when_false(self.run_module('numa_info', dict(timeout=self._timeout), task_vars))
        if settings['host_severity'] != 'ignore' and 'host' not in skip:
            host_info = failed_when_false(self.run_module('host_info', dict(timeout=self._timeout), task_vars))
        else:
            host_info = skipped()
        binding = numa.numa_bind_map(layout, settings['npus_per_node']) if 'npu' in layout else []
        plan, failure = self._checks(dict(args, check_settings=False, check_run_user='run_user' not in skip), node,
                                     task_vars)
        if failure:
            return failure
        findings = numa.numa_bind_findings(binding, node, {
            'npus_per_node': settings['npus_per_node'], 'numa': layout, 'governor_enabled': False,
            'host_severity': 'ignore'})
        out = dict((key, layout[key]) for key in NUMA_KEYS if key in layout)
        out.update(changed=False, numa=layout, host_info=host_info, map=binding, run_user_plan=plan, findings=findings,
                   msg='read the NUMA layout of %s (stage 6)' % node)
        launch = launch_on(args)
        if 'layout_record' not in skip:
            # the node's launch address goes into its record: the other nodes read the first node's as the master's
            record = store.make_record(run_id, node, STAGE, ROLE, findings, check_mode=self.check_mode,
                                       data={'launch_addr': launch['addr']} if launch and launch.get('addr') else None)
            out.update(record=record, path=store.write_record(args['run_dir'], record),
                       msg='recorded the NUMA layout of %s before any change (stage 6): %s' % (node, record['status']))
        return out

    def step_node(self, args, run_id, task_vars):
        node = store.check_node(task_vars.get('inventory_hostname'))
        settings = args['settings']
        read = args['read']
        self._timeout = args['timeout']
        skip = numa.skipped_parts(args['skip_tags'])
        layout, binding = read.get('numa') or {}, read.get('map') or []
        plan = read.get('run_user_plan') or {}
        seconds = 0 if 'aicore' in skip else numa._whole(settings['aicore_sample_seconds']) or 0
        governor_enabled = args['governor_enabled'] and 'governor' not in skip
        parts = dict(host_info=read.get('host_info') or {}, run_user_plan=plan, user={}, map={}, launcher={},
                     launch={}, launch_script={}, governor={}, launcher_check={}, restored=[], aicore={})
        launch = launch_on(args) if 'launcher' not in skip else None
        if launch:
            # the per-rank launch is worked out before any change: a node it cannot be written for changes nothing
            try:
                parts['launch_document'] = self._launch_document(args, launch, binding, node, run_id)
            except AnsibleError as exc:
                return dict(failed=True, changed=False, msg='%s: the per-rank launch of stage 6 cannot be written, so '
                            'nothing was changed on the node: %s' % (node, to_native(exc.message)))
            if launch.get('addr'):
                parts['launch_addr'] = launch['addr']
        diffs, changed = [], False

        def done(result):
            nonlocal changed
            if result.get('changed'):
                changed = True
                if result.get('diff'):
                    diffs.extend(result['diff'] if isinstance(result['diff'], list) else [result['diff']])
            return result

        def stop(result):
            # the part's own result and message, as its task failed before
            out = dict(result, failed=True, changed=changed)
            out.pop('diff', None)
            if diffs:
                out['diff'] = diffs
            return out

        if seconds > 0:
            parts['aicore']['before'] = self._aicore(seconds, task_vars)
        if governor_enabled:
            parts['governor'] = done(failed_when_false(self.run_module(
                'cpu_governor', dict(governor=settings['governor'], timeout=self._timeout), task_vars)))
        # one read of what is there: the run user's home, the directories, the map and the launcher
        files = self._files(args, binding, plan, skip, task_vars, parts.get('launch_document')) \
            if ('user' not in skip and plan.get('manage')) or 'launcher' not in skip else None
        if files is not None:
            # what the record's files name: the SHA-1 of each text and its path (numa.record_files)
            parts['sums'] = files['sums']
            parts['paths'] = {'map': settings['map_path'], 'launcher': settings['launcher_path'],
                              'launch': (launch or {}).get('path'), 'launch_script': (launch or {}).get('script_path')}
        if 'user' not in skip:
            parts['user'] = skipped()
            if plan.get('manage'):
                home = numa.run_user_home(plan)
                if numa.run_user_in_place(plan, args['run_user_shell'], files['there'].get(home)):
                    parts['user'] = dict(node_files.kept(home, 'directory'), name=settings['run_user'],
                                         msg='the run user %s is in place (created by stage 6, shell %s, home %s)'
                                             % (settings['run_user'], args['run_user_shell'], home))
                else:
                    parts['user'] = done(self._user(args, plan, task_vars))
                if parts['user'].get('failed'):
                    return stop(parts['user'])
        if 'launcher' not in skip:
            failure = self._install(args, files, parts, done, task_vars)
            if failure:
                return stop(failure)
        if seconds > 0:
            parts['aicore']['after'] = self._aicore(seconds, task_vars)
        findings = numa.numa_bind_findings(binding, node, {
            'npus_per_node': settings['npus_per_node'], 'numa': layout,
            'governor_enabled': args['governor_enabled'], 'governor': settings['governor'],
            'governor_result': parts['governor'], 'host_info': parts['host_info'],
            'host_severity': settings['host_severity'], 'max_swappiness': settings['max_swappiness'],
            'thp_mode': settings['thp_mode'], 'launcher_check': parts['launcher_check'],
            'run_user': settings['run_user'], 'launcher_path': settings['launcher_path'],
            'restored': parts['restored'], 'run_user_plan': plan})
        out = dict(changed=changed, findings=findings, governor=parts['governor'], user=parts['user'],
                   map_written=parts['map'], launcher_written=parts['launcher'],
                   launcher_check=parts['launcher_check'], restored=parts['restored'], aicore=parts['aicore'] or None,
                   msg='stage 6 (numa_bind) of %s: the record is left out (--skip-tags)' % node)
        if 'record' not in skip:
            record = store.make_record(run_id, node, STAGE, ROLE, findings, check_mode=self.check_mode,
                                       data=numa.node_data(binding, parts))
            out.update(record=record, path=store.write_record(args['run_dir'], record),
                       msg='recorded stage 6 (numa_bind) of %s: %s' % (node, record['status']))
        if args['report'] and 'report' not in skip:
            document = numa.node_report(node, run_id, task_vars.get('ansible_check_mode', self.check_mode),
                                        dict(settings, governor_enabled=args['governor_enabled'],
                                             launch_path=(launch or {}).get('path'),
                                             launch_script_path=(launch or {}).get('script_path')),
                                        binding, parts, findings)
            directory = os.path.join(args['run_dir'], REPORT_DIR)
            try:
                out['report'] = write_reports(directory, [{'name': '%s.json' % node,
                                                           'content': to_nice_json(document) + '\n'}])[0]
            except OSError as exc:
                raise AnsibleActionFail('stage_numa: could not write the report of %s to %s on the controller: %s. '
                                        'Check that the report directory (gate_report_dir) is on a writable file '
                                        'system with space left.' % (node, directory, to_native(exc))) from exc
        if launch:
            out.update(launch_written=parts['launch'], launch_script_written=parts['launch_script'],
                       launch=parts['launch_document'])
        if diffs:
            out['diff'] = diffs
        return out

    def _launch_document(self, args, launch, binding, node, run_id):
        """The launch file's document; the master address from numa_bind_master_addr, this node's own address when
        it is the first node, or the first node's record of this run."""
        nodes = list(launch.get('nodes') or [])
        records = {}
        override = launch.get('master_addr')
        if not (isinstance(override, str) and override.strip()) and nodes and nodes[0] != node:
            record, dummy = store.read_record(args['run_dir'], run_id, nodes[0], STAGE)
            records = {nodes[0]: record} if record else {}
        master = rank_launch.master_address(override, nodes, records, node, launch.get('addr'))
        settings = args['settings']
        return rank_launch.launch_document(settings, dict(launch, master_addr=master,
                                                          npus_per_node=settings['npus_per_node']), binding, node)

    def _files(self, args, binding, plan, skip, task_vars, binding_launch=None):
        """What the node step writes (the map's text, the rendered launcher) and one path_info read of what is there:
        the run user's home (when stage 6 manages it), the directories, the map and the launcher."""
        settings = args['settings']
        content = to_nice_json(numa.map_document(dict(settings, visible_devices=args['visible_devices']), binding),
                               sort_keys=False) + '\n'
        launcher = self._render_launcher(task_vars)
        launch = launch_on(args) if 'launcher' not in skip else None
        launch_text = launch_script = None
        if launch and binding_launch is not None:
            launch_text = to_nice_json(binding_launch, sort_keys=False) + '\n'
            launch_script = self._render_launcher(task_vars, LAUNCH_TEMPLATE)
        others = (launch['path'], launch['script_path']) if launch_text else ()
        files = dict(directories=numa.map_dirs(settings['map_path'], settings['launcher_path'], *others),
                     content=content, launcher=launcher, launch=launch_text, launch_script=launch_script,
                     sums={'map': node_files.checksum(content),
                           'launcher': node_files.checksum(launcher) if launcher else None,
                           'launch': node_files.checksum(launch_text) if launch_text else None,
                           'launch_script': node_files.checksum(launch_script) if launch_script else None})
        entries = []
        home = numa.run_user_home(plan) if 'user' not in skip else None
        if home:
            entries.append(node_files.entry(home, follow=True))
        if 'launcher' not in skip:
            entries += [node_files.entry(directory, follow=True) for directory in files['directories']]
            entries.append(node_files.entry(settings['map_path'], with_checksum=True))
            if launcher:
                entries.append(node_files.entry(settings['launcher_path'], with_checksum=True))
            if launch_text:
                entries.append(node_files.entry(launch['path'], with_checksum=True))
                if launch_script:
                    entries.append(node_files.entry(launch['script_path'], with_checksum=True))
        files['there'] = self._path_states(entries, task_vars) if entries else {}
        return files

    def _install(self, args, files, parts, done, task_vars):
        """The directories, the map and the launcher (with backups), the launcher test, and the undoing of what this
        run wrote when the test fails; returns the result of a part that failed, else None. What ``files`` (one
        path_info read) found already in place is not handed to the file, copy or template action."""
        settings = args['settings']
        directories, content, sums, there = files['directories'], files['content'], files['sums'], files['there']
        for directory in directories:
            if node_files.in_place(there.get(directory), 'directory', 'root', 'root', '0755'):
                continue
            result = done(self._builtin('file', dict(path=directory, state='directory', owner='root', group='root',
                                                     mode='0755'), task_vars))
            if result.get('failed'):
                return result
        for kind, path, mode, source in (('map', settings['map_path'], MAP_MODE, {'content': content}),
                                         ('launcher', settings['launcher_path'], LAUNCHER_MODE, {'src': LAUNCHER_TEMPLATE})):
            if self._put_file(parts, kind, path, mode, sums[kind], there, source, done, task_vars).get('failed'):
                return parts[kind]
        failure = self._install_launch(args, files, parts, done, task_vars)
        if failure:
            return failure
        parts['launcher_check'] = skipped()
        if numa.launcher_test_due(args['verify'], self.check_mode, (parts['map'], parts['launcher'], parts['user'])):
            with self.task_check_mode(False):
                check = self._builtin('command', dict(argv=[settings['launcher_path'], '0', '--', 'id', '-un']),
                                      task_vars)
            parts['launcher_check'] = dict(failed_when_false(check), changed=False)
        # a launcher that does not work must not replace one that did: what this run wrote is undone
        parts['restored'] = numa.numa_bind_restore(dict((kind, parts[kind]) for kind in numa.FILE_KINDS),
                                                   parts['launcher_check'], settings['run_user'])
        for item in parts['restored']:
            if item['action'] == 'restore':
                result = done(self._action('copy', dict(src=item['backup'], dest=item['path'], remote_src=True,
                                                        owner='root', group='root', mode=item['mode']), task_vars))
            else:
                result = done(self._builtin('file', dict(path=item['path'], state='absent'), task_vars))
            if result.get('failed'):
                return result
        return None

    def _install_launch(self, args, files, parts, done, task_vars):
        """The launch file (JSON, as the map) and npu-launch (template, as the launcher), with backups, when stage 6
        writes them; what ``files`` found in place is kept. Returns the result of a part that failed, else None."""
        if not files.get('launch'):
            return None
        launch, sums, there = args['launch'], files['sums'], files['there']
        for kind, path, mode, source in (('launch', launch['path'], LAUNCH_MODE, {'content': files['launch']}),
                                         ('launch_script', launch['script_path'], LAUNCH_SCRIPT_MODE,
                                          {'src': LAUNCH_TEMPLATE})):
            if self._put_file(parts, kind, path, mode, sums[kind], there, source, done, task_vars).get('failed'):
                return parts[kind]
        return None

    def _put_file(self, parts, kind, path, mode, checksum, there, source, done, task_vars):
        """One root-owned file of stage 6 (``parts[kind]``): kept when the read of ``there`` shows it in place (a file,
        root's, ``mode``, ``checksum``), else written with a backup - ``source`` ``{content}`` through copy, ``{src}``
        (a template of the role) through template. Returns the part's result."""
        if node_files.in_place(there.get(path), 'file', 'root', 'root', mode, checksum):
            parts[kind] = node_files.kept(path, 'file', checksum)
        else:
            module = 'template' if 'src' in source else 'copy'
            parts[kind] = done(self._action(module, dict(source, dest=path, owner='root', group='root', mode=mode,
                                                         backup=True), task_vars))
        return parts[kind]
