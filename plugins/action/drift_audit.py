# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of npuops.ascend.drift_audit: the drift audit of playbooks/audit.yml.

``step: node`` reads, changing nothing, every setting the collection manages on the node - the NPU ports, the HCCL env
file and /etc/hccn.conf, the host settings (one health_info run), the files of stages 5-7 (one path_info run), the CPU
governor (cpu_governor in check mode) and MindIE's managed settings (mindie_config in check mode) - compares them with
the intent it is given and with the newest applied records of stages 4-7 in the report directory
(plugins/plugin_utils/audit.py), and writes the node's audit record ``<report dir>/audit/<audit id>/nodes/<node>.json``.
It never fails for drift: ``step: pod`` (once) reads every node's audit record, writes ``audit.json`` and ``audit.md``
beside them and fails naming every drifted setting (node, NPU, setting, expected, found, the playbook that brings it
back) or a node without a record.
"""

from __future__ import annotations

import datetime
import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.npuops.ascend.plugins.action.report_files import write_reports
from ansible_collections.npuops.ascend.plugins.plugin_utils import audit, metrics, node_files, store
from ansible_collections.npuops.ascend.plugins.plugin_utils.stage_action import StageAction

ARGUMENT_SPEC = dict(
    step=dict(type='str', required=True, choices=['node', 'pod']),
    report_dir=dict(type='path', required=True),
    audit_id=dict(type='str', required=True),
    nodes=dict(type='list', elements='str', default=[]),
    devices=dict(type='list', elements='int', default=[]),
    want=dict(type='list', elements='dict', default=[]),
    intent=dict(type='dict', default={}),
    hccl_env_file=dict(type='str'),
    hccn_conf=dict(type='str', default='/etc/hccn.conf'),
    governor=dict(type='str'),
    max_swappiness=dict(type='int'),
    thp_mode=dict(type='str'),
    model_index=dict(type='int', default=0),
    timeout=dict(type='int', default=60),
    metrics_file=dict(type='str'),
    fail_on_drift=dict(type='bool', default=True),
)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


class ActionModule(StageAction):
    """Audits one node (``node``) or sums up the PoD's audit (``pod``); changes nothing on any node."""

    NAME = 'drift_audit'
    ARGUMENT_SPEC = ARGUMENT_SPEC

    ID_OPTION = 'audit_id'
    DIR_OPTION = 'report_dir'

    def check_args(self, args):
        for path in (args['hccl_env_file'], args['hccn_conf']):
            if path and not os.path.isabs(path):
                raise AnsibleActionFail('drift_audit: %s is not an absolute path; nothing was read' % path)

    def step_node(self, args, audit_id, task_vars):
        node = store.check_node(task_vars.get('inventory_hostname'))
        report_dir, want = args['report_dir'], args['want']
        records, compared = {}, {}
        for stage in audit.AUDITED_STAGES:
            records[stage], why = audit.last_applied(report_dir, node, stage)
            compared[stage] = 'run %s' % records[stage]['run'] if records[stage] else why
        queries = sorted(set(audit.PORT_QUERY[key] for entry in want for key in entry if key in audit.PORT_QUERY))
        env_files = [path for path in (args['hccl_env_file'], args['hccn_conf'] if want else None) if path]
        files = audit.record_files(records, args['hccl_env_file'])
        with self.task_check_mode(False):  # reads only
            read = self.run_module('health_info', dict(
                npu=False, ports=bool(want), port_queries=queries or ['mtu'], host=True, devices=args['devices'],
                env_files=env_files, timeout=args['timeout']), task_vars)
            stats = node_files.stats(self.run_module('path_info', dict(
                paths=[node_files.entry(item['path'], with_checksum=True) for item in files]), task_vars)) if files else {}
        if read.get('failed') and not read.get('host_info'):
            return dict(failed=True, changed=False, msg='drift_audit: the node %s could not be read: %s' % (
                node, read.get('msg')))
        with self.task_check_mode(True):  # what a run would change is what drifted
            governor = self.run_module('cpu_governor', dict(governor=args['governor'], timeout=args['timeout']),
                                       task_vars) if args['governor'] else None
            stage7 = records.get(7)
            data7 = (stage7 or {}).get('data') or {}
            serving = self.run_module('mindie_config', dict(path=data7['file'], settings=data7['settings'],
                                                            model_index=args['model_index']), task_vars) \
                if data7.get('engine') == 'mindie' and data7.get('file') and data7.get('settings') else None
        env_read = (read.get('env_files') or {}).get(args['hccl_env_file']) if args['hccl_env_file'] else None
        env_findings = audit.env_drift(node, env_read, records.get(5), args['hccl_env_file'],
                                       args['intent'] if want else None)
        findings = (audit.port_drift(node, want, read.get('ports'), records.get(4))
                    + audit.intent_changes(node, want, records.get(4))
                    + env_findings
                    + audit.file_drift(node, files, stats, dict((s, (records[s] or {}).get('run')) for s in records),
                                       env_findings)
                    + audit.governor_drift(node, governor, args['governor'], records.get(6))
                    + audit.host_drift(node, read.get('host_info'), args['max_swappiness'], args['thp_mode'])
                    + audit.serving_drift(node, serving, stage7))
        persisted = audit.persistence(node, (read.get('env_files') or {}).get(args['hccn_conf']), args['devices'],
                                      args['hccn_conf'], [key for key in audit.PORT_SETTINGS
                                                          if any(key in entry for entry in want)]) if want else None
        document = audit.node_document(audit_id, node, findings, compared, persisted, _now())
        path = audit.write_node(report_dir, document)
        drift = [f for f in findings if f['severity'] == 'fail']
        return dict(changed=False, findings=findings, compared=compared, persistence=persisted, path=path,
                    status=document['status'],
                    msg='%s: %s' % (node, '%d setting(s) drifted' % len(drift) if drift else 'no drift'))

    def step_pod(self, args, audit_id, task_vars):
        report_dir = args['report_dir']
        documents, missing = audit.read_nodes(report_dir, audit_id, args['nodes'])
        document, failed, msg = audit.summary(audit_id, documents, missing, _now())
        directory = audit.audit_dir(report_dir, audit_id)
        store.own_dir(directory)
        written = write_reports(directory, [{'name': 'audit.md', 'content': audit.markdown(document)}])
        store.write_json(os.path.join(directory, 'audit.json'), document)
        report = written[0] if written else None
        metrics_file = None
        if args['metrics_file'] is not None:
            try:
                path = metrics.metrics_path(directory, args['metrics_file'], 'audit_metrics_file')
            except ValueError as exc:
                raise AnsibleActionFail('drift_audit: %s; the audit itself is in %s' % (to_native(exc), report)) from exc
            metrics_file = metrics.write_text(path, metrics.audit_metrics(document))
        if failed:
            msg += '. The report, with what each node keeps across a reboot: %s' % report
        persisted = [item['msg'] for node, item in sorted(document['persistence'].items()) if item and item.get('msg')]
        return dict(changed=False, failed=failed and args['fail_on_drift'], msg=msg, status=document['status'],
                    drifted=document['drifted'],
                    persistence=persisted, report=report, metrics=metrics_file,
                    path=os.path.join(directory, 'audit.json'))
