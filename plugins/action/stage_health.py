# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of npuops.ascend.stage_health: stage 0 (the health check) in two parts.

``step: node`` runs health_info on the node in one task, keeps each part it read, checks the node against the limits
and writes the node's record of stage 0 to the run's store, with the ports and the product the NPUs showed in its
``data``; with ``report`` it writes the node's report (``<run dir>/stage0-health_check/<node>.json`` and ``.md``, the
Markdown from the role's template). ``step: pod`` (once) reads the records of the nodes still in the play - never other
nodes' facts - checks the ports across the PoD and writes the PoD record of stage 0; with ``report``, the report of each
node that a finding across the PoD names is written again with it. The decisions are in plugins/plugin_utils/health.py,
the store in plugins/plugin_utils/store.py. Link quality over time (plugins/plugin_utils/links.py): the node step keeps
the optical power, the port error counters, the link history and the ECC counts of every NPU in the record's
``data.links``, judges the Rx power, and compares the counters with the newest stage 0 record of the same node in
another run directory of the report directory (read through the store, never another node's facts).
"""

from __future__ import annotations

import datetime
import json
import os

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.filter.core import to_nice_json
from ansible.template import trust_as_template

from ansible_collections.npuops.ascend.plugins.action.report_files import write_reports
from ansible_collections.npuops.ascend.plugins.plugin_utils import health, links, parts, store
from ansible_collections.npuops.ascend.plugins.plugin_utils.stage_action import StageAction

ROLE = 'health_check'
STAGE = 0
PARTS = ('npu', 'npu_again', 'ports', 'numa', 'host_info', 'container')
REPORT_DIR = 'stage0-health_check'
REPORT_TEMPLATE = 'report.md.j2'
REPORT_PARTS = ('npu', 'ports', 'numa', 'host_info', 'container')
ARGUMENT_SPEC = dict(
    step=dict(type='str', required=True, choices=['node', 'pod']),
    run_dir=dict(type='path', required=True),
    run_id=dict(type='str', required=True),
    npu=dict(type='bool', default=True),
    npu_subset=dict(type='list', elements='str', default=['board', 'health', 'ecc', 'common', 'pcie_err', 'topo', 'processes']),
    health_view=dict(type='str', choices=['all', 'unhealthy'], default='unhealthy'),
    ecc_again=dict(type='bool', default=True),
    ecc_again_scope=dict(type='str', choices=['errors', 'all'], default='errors'),
    ports=dict(type='bool', default=True),
    port_queries=dict(type='list', elements='str', default=['link', 'ip', 'net_health', 'tls', 'optical', 'stat', 'link_stat']),
    host=dict(type='bool', default=True),
    npus_per_node=dict(type='int', default=health.HEALTH_LIMITS['npus_per_node']),
    max_temp_c=dict(type='int', default=health.HEALTH_LIMITS['max_temp_c']),
    # a number or null (null: not checked); raw, as a float option refuses an explicit null
    max_power_w=dict(type='raw'),
    max_power_over_median_pct=dict(type='raw', default=health.HEALTH_LIMITS['max_power_over_median_pct']),
    max_pcie_errors=dict(type='int', default=health.HEALTH_LIMITS['max_pcie_errors']),
    min_aicore_freq_pct=dict(type='float', default=health.HEALTH_LIMITS['min_aicore_freq_pct']),
    throttle_temp_c=dict(type='int', default=health.HEALTH_LIMITS['throttle_temp_c']),
    optical_margin_db=dict(type='float', default=links.LINK_LIMITS['optical_margin_db']),
    counter_growth=dict(type='str', choices=list(links.GROWTH_SEVERITIES), default=links.LINK_LIMITS['counter_growth']),
    container=dict(type='str', choices=['auto', 'always', 'never'], default='auto'),
    container_root=dict(type='path', default='/'),
    min_hugepages=dict(type='int', default=health.HEALTH_LIMITS['min_hugepages']),
    max_swappiness=dict(type='int', default=health.HEALTH_LIMITS['max_swappiness']),
    min_nofile=dict(type='int', default=health.HEALTH_LIMITS['min_nofile']),
    product_family=dict(type='str'),
    plan=dict(type='list', elements='dict', default=[]),
    parameter_plane=dict(type='str'),
    active=dict(type='list', elements='str'),
    report=dict(type='bool', default=False),
)
MODULE_OPTIONS = ('npu', 'npu_subset', 'health_view', 'ecc_again', 'ecc_again_scope', 'ports', 'port_queries', 'host',
                  'container', 'container_root')
LIMITS = ('npus_per_node', 'max_temp_c', 'min_hugepages', 'max_swappiness', 'min_nofile', 'product_family',
          'max_power_w', 'max_power_over_median_pct', 'max_pcie_errors', 'min_aicore_freq_pct', 'throttle_temp_c')


OPTIONAL_NUMBERS = ('max_power_w', 'max_power_over_median_pct')


def optional_numbers(args):
    """``args`` with the options that take a number or null checked and converted; AnsibleActionFail otherwise."""
    out = dict(args)
    for name in OPTIONAL_NUMBERS:
        value = out.get(name)
        if value is None or (isinstance(value, str) and value.strip().lower() in ('', 'none', 'null')):
            out[name] = None
            continue
        try:
            out[name] = float(value)
        except (TypeError, ValueError):
            raise AnsibleActionFail('stage_health: %s must be a number or null, got %r' % (name, value)) from None
        if isinstance(value, bool) or out[name] < 0:
            raise AnsibleActionFail('stage_health: %s must be a number >= 0 or null, got %r' % (name, value))
    return out


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
        'container': parts['container'] if args['container'] != 'never' else None,
    }


PORT_KEYS = ('address', 'netmask', 'tls')


def node_report(node, run_id, parts, findings):
    """The document of the node's ``<node>.json``: what each part read, and the findings that name the node."""
    out = {'host': node, 'run': run_id, 'stage': STAGE}
    for part in REPORT_PARTS:
        out[part] = (parts or {}).get(part) or {}
    out['findings'] = list(findings or [])
    return out


def pod_findings_of(findings, node):
    return [f for f in findings or [] if isinstance(f, dict) and f.get('host') == node]


def node_data(parts, args, link_data=None):
    """The record's ``data``: what the PoD part checks of each port (``{devices: {id: {address, netmask, tls}}}``;
    None when the ports are not checked), the product the NPUs showed and the power of each NPU (``{id: W}``; both
    None when the NPUs were not read), and the link quality of every NPU (``links``, see links.node_links; None when
    neither the ports nor the NPUs were read)."""
    ports = None
    if args['ports']:
        devices = (parts['ports'] or {}).get('devices')
        ports = {'devices': dict((str(dev), dict((key, entry[key]) for key in PORT_KEYS if key in entry))
                                 for dev, entry in (devices.items() if isinstance(devices, dict) else ())
                                 if isinstance(entry, dict))}
    summary = (parts['npu'] or {}).get('summary') if args['npu'] else None
    product = summary.get('product') if isinstance(summary, dict) else None
    power = health.node_powers(parts['npu']) if args['npu'] and isinstance(parts['npu'], dict) else None
    return {'ports': ports, 'product': product or None, 'power': power or None, 'links': link_data}


def link_quality(node, run_dir, run_id, parts, args, when):
    """``(data.links, findings)`` of the node: what its ports and NPUs show now, the Rx power judged, and the counters
    compared with the newest stage 0 record of the node in another run of the report directory (``links.compared``
    says with which, or why there is none)."""
    port_part = parts['ports'] if args['ports'] and isinstance(parts['ports'], dict) else None
    npu_part = parts['npu'] if args['npu'] and isinstance(parts['npu'], dict) else None
    data = links.node_links(port_part, npu_part, when)
    if data is None:
        return None, []
    findings = links.optical_findings(node, data, args['optical_margin_db'])
    previous, skipped = links.previous_record(run_dir, node)
    if previous is None:
        data['compared'] = links.no_comparison(run_dir, skipped)
    else:
        grown, data['compared'] = links.compare(node, data, previous, run_id, args['counter_growth'],
                                                changed=links.changed_by_stage4(run_dir, node, previous))
        findings += grown
    return data, findings


class ActionModule(StageAction):
    """Stage 0 on a node (its read, its findings, its record) and over the PoD (the ports, from the records)."""

    NAME = 'stage_health'
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def step_node(self, args, run_id, task_vars):
        args = optional_numbers(args)
        node = store.check_node(task_vars.get('inventory_hostname'))
        options = dict((name, args[name]) for name in MODULE_OPTIONS)
        options['container_npus'] = args['npus_per_node']
        when = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
        read = self.run_module('health_info', options, task_vars)
        parts = split_parts(read)
        limits = dict((name, args[name]) for name in LIMITS)
        findings = health.health_findings(dict(checked_parts(parts, args), host=node, plan=args['plan']), limits)
        link_data, link_findings = link_quality(node, args['run_dir'], run_id, parts, args, when)
        findings = findings + link_findings
        record = store.make_record(run_id, node, STAGE, ROLE, findings, check_mode=self.check_mode,
                                   data=node_data(parts, args, link_data))
        path = store.write_record(args['run_dir'], record)
        out = dict(changed=False, findings=findings, record=record, path=path, links=link_data,
                   msg='recorded stage 0 (health_check) of %s: %s' % (node, record['status']))
        out.update(parts)
        if read.get('warnings'):
            out['warnings'] = list(read['warnings'])
        if args['report']:
            out['report'] = self._write_report(args['run_dir'], node, run_id, parts, findings, [], task_vars)
        return out

    def _markdown(self, node, node_part, pod_findings, task_vars):
        """The node's Markdown report from the role's template, rendered as the template lookup renders it."""
        text = self._loader.get_text_file_contents(self._find_needle('templates', REPORT_TEMPLATE))
        variables = dict(task_vars, inventory_hostname=node, health_check_node=node_part,
                         health_check_pod={'findings': pod_findings})
        templar = self._templar.copy_with_new_env(available_variables=variables)
        return templar.template(trust_as_template(text), escape_backslashes=False)

    def _write_report(self, run_dir, node, run_id, parts, findings, pod_findings, task_vars):
        """Write ``<node>.json`` and ``<node>.md``: the node's parts, its own findings and those of the PoD naming it."""
        document = node_report(node, run_id, parts, list(findings) + list(pod_findings))
        node_part = dict(parts, findings=list(findings))
        directory = os.path.join(run_dir, REPORT_DIR)
        try:
            markdown = self._markdown(node, node_part, pod_findings, task_vars)
            return write_reports(directory, [{'name': '%s.json' % node, 'content': to_nice_json(document) + '\n'},
                                             {'name': '%s.md' % node, 'content': markdown}])[0]
        except OSError as exc:
            raise AnsibleActionFail('stage_health: could not write the report of %s to %s on the controller: %s. Check '
                                    'that the report directory (gate_report_dir) is on a writable file system with '
                                    'space left.' % (node, directory, to_native(exc))) from exc

    def _report_again(self, run_dir, run_id, node, pod_findings, task_vars):
        """The node's report written again with the findings across the PoD that name it (read back from its JSON)."""
        path = os.path.join(run_dir, REPORT_DIR, '%s.json' % node)
        try:
            with open(path, encoding='utf-8') as handle:
                document = json.load(handle)
        except (OSError, ValueError):
            return None  # no report of the node in this run (the node step did not write one): nothing to add to
        own = [f for f in document.get('findings') or [] if f not in pod_findings]
        parts = dict((part, document.get(part) or {}) for part in REPORT_PARTS)
        return self._write_report(run_dir, node, run_id, parts, own, pod_findings, task_vars)

    def step_pod(self, args, run_id, task_vars):
        args = optional_numbers(args)
        active = args['active'] if args['active'] is not None else store.without_lost(args['run_dir'], run_id, parts.play_nodes(task_vars)[1])
        records, problems = store.read_stage(args['run_dir'], run_id, active, STAGE)
        findings = []
        if args['ports']:
            ports = dict((node, (records[node].get('data') or {}).get('ports')) for node in active if node in records)
            try:
                findings = health.pod_port_findings(ports, args['parameter_plane'])
            except AnsibleError as exc:
                raise AnsibleActionFail('stage_health: %s' % to_native(exc.message)) from exc
        if args['npu'] and args['max_power_over_median_pct'] is not None:
            power = dict((node, (records[node].get('data') or {}).get('power')) for node in active if node in records)
            findings = findings + health.pod_power_findings(power, args['max_power_over_median_pct'])
        record = store.make_pod_record(run_id, STAGE, ROLE, findings, check_mode=self.check_mode)
        path = store.write_pod_record(args['run_dir'], record)
        reports = []
        if args['report']:
            for node in active:
                mine = pod_findings_of(findings, node)
                if mine:
                    written = self._report_again(args['run_dir'], run_id, node, mine, task_vars)
                    if written:
                        reports.append(written)
        return dict(changed=False, findings=findings, missing=[p['host'] for p in problems], path=path, reports=reports,
                    msg='%d node(s) checked across the PoD: %d finding(s) over the ports and the NPU power'
                        % (len(records), len(record['findings'])) if args['ports'] or args['npu']
                        else 'neither the ports nor the NPUs are checked: no finding across the PoD')
