# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift audit (playbooks/audit.yml): every setting the collection manages, as a node has it now, against the
inventory's intent and the last applied run's records; and what the node keeps across a reboot.

A node's audit reads its NPU ports, the HCCL env file, the CPU governor, the files of stage 6 and 7 and the host
settings stage 6 checks (the action plugins/action/drift_audit.py reads them, changing nothing), and this module decides:

- the ports (MTU, PFC priorities, DSCP->TC, with ``roce_lossless_addresses: apply`` also the address and netmask)
  against the intent of the inventory (the ``roce_desired_config`` of stage 4); the last applied stage 4 record says
  what that run set;
- the HCCL env file: the variables the last applied stage 5 record says it writes, then its content, owner, mode;
- the governor against ``numa_bind_governor``; ``vm.swappiness`` and the THP mode against ``numa_bind_max_swappiness``
  and ``numa_bind_thp_mode``;
- the files of stages 6 and 7 (``data.files`` of their last applied records: path, SHA-1, owner, group, mode); MindIE's
  managed settings, as the mindie_config module reads them in check mode, against the record's ``settings``;
- what /etc/hccn.conf keeps: the driver restores the keys it holds there after a reboot; a port setting without a key
  there comes back at the driver's default.

Every finding names the node, the NPU (or none), the setting, what was expected and what was found, and the playbook
that sets it again (``fix``). "Applied" is a record of a run that was not a dry run, with the status ``passed``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ansible_collections.npuops.ascend.plugins.plugin_utils import store
from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import WARN, finding, findings_text, span
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.ports import by_device, dscp_map, port_text
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.verify import hccl_alignment_findings

SCHEMA = 'npuops.ascend/audit-node'
SUMMARY_SCHEMA = 'npuops.ascend/audit'
VERSION = 1
AUDIT_DIR = 'audit'
AUDITED_STAGES = (4, 5, 6, 7)

FIX = {
    4: 'playbooks/roce_lossless.yml (npuops.ascend.roce_lossless) sets it again',
    5: 'playbooks/site.yml --tags hccl_env writes it again',
    6: 'playbooks/site.yml --tags numa_bind sets it again',
    7: 'playbooks/site.yml --tags mindie_config writes it again',
    'host': 'no playbook of the collection sets it (stage 6 only checks it): set it on the node (sysctl, the kernel '
            'command line or a tuned profile)',
}
UNREAD = 'nothing could be compared: make it readable on the node and run the audit again'
PORT_SETTINGS = ('mtu', 'pfc_priorities', 'dscp_to_tc', 'address', 'netmask')
PORT_QUERY = {'mtu': 'mtu', 'pfc_priorities': 'pfc', 'dscp_to_tc': 'dscp_to_tc', 'address': 'ip', 'netmask': 'ip'}
# the keys of /etc/hccn.conf the driver restores at boot (address_N=, netmask_N=, netdetect_N=, gateway_N=,
# send_arp_status_N=); a setting of stage 4 is kept only where a key of its name is there
BOOT_KEYS = ('address', 'netmask', 'netdetect', 'gateway', 'send_arp_status')
CONF_KEYS = {'address': 'address', 'netmask': 'netmask', 'mtu': 'mtu', 'pfc_priorities': 'pfc', 'dscp_to_tc': 'dscp_to_tc'}
BY_SETTING = ('mindie_config',)
FILE_KINDS = {
    'hccl_env': (5, 'the HCCL env file'), 'map': (6, 'the binding map'), 'launcher': (6, 'the launcher npu-bind'),
    'launch': (6, 'the per-rank launch file'), 'launch_script': (6, 'npu-launch'),
    'mindie_config': (7, "MindIE's config.json"), 'vllm_env': (7, 'the vLLM env file'),
    'vllm_script': (7, 'the vLLM launch script'), 'vllm_secrets': (7, 'the vLLM secrets file'),
}


def applied(record):
    """None when ``record`` is what a run applied (not a dry run, status passed), else why it is not."""
    if record.get('check_mode'):
        return 'a dry run (--check)'
    if record.get('status') != 'passed':
        return 'its status is %s' % record.get('status')
    return None


def last_applied(report_dir, node, stage):
    """``(record, why)``: the node's newest applied record of ``stage`` in the report directory, else None and why."""
    record, skipped = store.newest_record(report_dir, node, stage, applied)
    if record is not None:
        return record, None
    why = 'no run in %s applied stage %d on %s' % (report_dir, stage, node)
    if skipped:
        why += ' (%s)' % '; '.join(skipped[:3])
    return None, why


def _drift(host, device, setting, found, expected, text, stage, severity='fail', fix=None):
    fix = fix or FIX[stage]
    item = finding(host, device, setting, found, expected, '%s; %s' % (text, fix), severity)
    item['fix'] = fix
    item['stage'] = stage if isinstance(stage, int) else None
    return item


def _applied_note(record, device, setting):
    """' (run R set it to X)' from the stage 4 record's plan, else ''."""
    if not record:
        return ''
    after = by_device(((record.get('data') or {}).get('plan') or {}).get('after') or [])
    entry = after.get(device) or {}
    if setting not in entry:
        return ' (run %s left it at its intent)' % record.get('run')
    value = entry[setting]
    if setting == 'dscp_to_tc':
        value = dscp_map(entry)
    return ' (run %s set %s)' % (record.get('run'), port_text(value) if not isinstance(value, dict)
                                 else ', '.join('DSCP %s -> TC %s' % pair for pair in sorted(value.items())))


def port_drift(host, want, read, record=None):
    """Findings of the ports read now (an hccn_info result) against the intent's config list ``want``."""
    if not want:
        return []
    if not isinstance(read, Mapping) or read.get('failed'):
        msg = (read or {}).get('msg') if isinstance(read, Mapping) else None
        return [_drift(host, None, 'ports', None, 'read', 'the NPU ports could not be read (%s)' % (msg or 'no result'), 4,
                       fix=UNREAD)]
    entries = by_device(read)
    out = []
    for wanted in want:
        device = int(wanted['device'])
        entry = entries.get(device)
        if entry is None:
            out.append(_drift(host, device, 'port', None, 'read', 'the port was not read', 4, fix=UNREAD))
            continue
        for setting in PORT_SETTINGS:
            if setting not in wanted:
                continue
            expected, found = wanted[setting], entry.get(setting)
            note = _applied_note(record, device, setting)
            if setting == 'dscp_to_tc':
                table = dscp_map(entry)
                differ = dict((int(p['dscp']), p['tc']) for p in expected
                              if table is None or table.get(int(p['dscp'])) != p['tc'])
                if differ:
                    have = ', '.join('DSCP %d -> %s' % (d, 'TC %s' % table[d] if table and d in table else 'unmapped')
                                     for d in sorted(differ)) if table is not None else 'unread'
                    out.append(_drift(host, device, 'dscp_to_tc', have,
                                      ', '.join('DSCP %d -> TC %s' % pair for pair in sorted(differ.items())),
                                      'dscp_to_tc is %s, expected %s%s' % (
                                          have, ', '.join('DSCP %d -> TC %s' % pair for pair in sorted(differ.items())),
                                          note), 4))
                continue
            if setting == 'pfc_priorities':
                same = isinstance(found, list) and sorted(found) == sorted(expected)
            else:
                same = found is not None and str(found) == str(expected)
            if not same:
                out.append(_drift(host, device, setting, found, expected, '%s is %s, expected %s%s' % (
                    setting, port_text(found) if found is not None else 'unread', port_text(expected), note), 4))
    return out


def intent_changes(host, want, record):
    """Warnings where the intent differs from what the last applied stage 4 run set (the inventory changed since)."""
    if not record or not want:
        return []
    after = by_device(((record.get('data') or {}).get('plan') or {}).get('after') or [])
    out = []
    for wanted in want:
        device = int(wanted['device'])
        entry = after.get(device) or {}
        for setting in PORT_SETTINGS:
            if setting in wanted and setting in entry:
                same = (dscp_map(entry) == dscp_map(wanted)) if setting == 'dscp_to_tc' else \
                    sorted(entry[setting]) == sorted(wanted[setting]) if setting == 'pfc_priorities' else \
                    str(entry[setting]) == str(wanted[setting])
                if not same:
                    out.append(_drift(host, device, 'intent_' + setting, entry[setting], wanted[setting],
                                      'the inventory now wants %s %s, run %s set %s' % (
                                          setting, port_text(wanted[setting]), record.get('run'),
                                          port_text(entry[setting])), 4, WARN))
    return out


def persistence(host, conf, devices, path, managed):
    """What the driver keeps across a reboot, from /etc/hccn.conf as read (``{exists, variables, error}``):
    ``{path, exists, kept, lost, msg}``; ``kept`` maps each setting to the NPUs it has a key for, ``lost`` lists the
    managed settings (``managed``) without a key on some NPU."""
    devices = sorted(int(d) for d in devices or [])
    conf = conf if isinstance(conf, Mapping) else {}
    out = {'path': path, 'exists': bool(conf.get('exists')), 'kept': {}, 'lost': []}
    if conf.get('error'):
        out['msg'] = '%s: %s, so what the driver keeps across a reboot is not known' % (host, conf['error'])
        out['lost'] = list(managed)
        return out
    variables = conf.get('variables') or {}
    for setting in managed:
        key = CONF_KEYS.get(setting, setting)
        have = [d for d in devices if '%s_%d' % (key, d) in variables]
        out['kept'][setting] = have
        if len(have) < len(devices):
            out['lost'].append(setting)
    restored = [key for key in BOOT_KEYS if any('%s_%d' % (key, d) in variables for d in devices)]
    out['restored'] = restored
    if not out['exists']:
        out['msg'] = ('%s: there is no %s, so the driver restores no port setting at boot: after a reboot the ports '
                      'come back at the driver defaults; run playbooks/roce_lossless.yml after a reboot (the audit '
                      'finds what is lost)' % (host, path))
    elif out['lost']:
        out['msg'] = ('%s: %s holds %s of NPU %s, which the driver restores at boot; %s %s no key there, so a reboot '
                      'brings %s back at the driver defaults: run playbooks/roce_lossless.yml after a reboot (the audit '
                      'finds what is lost)' % (
                          host, path, ', '.join(restored) or 'no port setting', span(devices), ', '.join(out['lost']),
                          'has' if len(out['lost']) == 1 else 'have', 'it' if len(out['lost']) == 1 else 'them'))
    else:
        out['msg'] = '%s: %s holds every managed port setting of NPU %s, which the driver restores at boot' % (
            host, path, span(devices))
    return out


def env_drift(host, read, record, path, intent=None):
    """Findings of the HCCL env file (its variables as read, ``{exists, variables, error}``) against the variables
    of the last applied stage 5 record (``data.env``) and, with the lossless ``intent`` of the inventory, HCCL_RDMA_SL
    and HCCL_RDMA_TC against its PFC priority and DSCP (the intent may have changed since that run)."""
    read = read if isinstance(read, Mapping) else {}
    aligned = []
    if intent and read.get('exists') and not read.get('error'):
        for item in hccl_alignment_findings(read.get('variables') or {}, intent, host, source=path):
            aligned.append(dict(item, fix=FIX[5], stage=5))
    if not record:
        return aligned
    expected = dict((str(name), str(value)) for name, value in (record.get('data') or {}).get('env') or [])
    if read.get('error'):
        return [_drift(host, None, 'hccl_env_file', None, path, '%s (run %s wrote it)' % (read['error'], record.get('run')), 5)]
    if not read.get('exists'):
        return [_drift(host, None, 'hccl_env_file', 'missing', path, '%s is missing (run %s wrote it)'
                       % (path, record.get('run')), 5)]
    found = read.get('variables') or {}
    out = []
    for name, value in expected.items():
        have = found.get(name)
        if have != value:
            out.append(_drift(host, None, name, have, value, '%s is %s in %s, expected %s (run %s wrote it)' % (
                name, 'not set' if have is None else have, path, value, record.get('run')), 5))
    for name in sorted(set(found) - set(expected)):
        if name.startswith('HCCL_'):
            out.append(_drift(host, None, name, found[name], None, '%s=%s is set in %s, which run %s did not write'
                              % (name, found[name], path, record.get('run')), 5))
    said = set((f['check'], str(f['value'])) for f in out)
    return out + [f for f in aligned if (f['check'], str(f['value'])) not in said]


def _mode(value):
    try:
        return int(str(value), 8)
    except (TypeError, ValueError):
        return None


def file_drift(host, entries, stats, record_runs, env_findings=()):
    """Findings of the files of the last applied records (``entries``: ``data.files`` items with ``run`` added)
    against what path_info read now (``stats``: ``{path: stat}``, ``None`` for a path it could not examine). A file of
    the HCCL env file whose variables already differ (``env_findings``) is not said again for its content."""
    out = []
    for item in entries:
        kind, path = item.get('kind'), item.get('path')
        stage, label = FILE_KINDS.get(kind, (None, kind))
        if stage is None or not path:
            continue
        run = item.get('run') or record_runs.get(stage)
        st = stats.get(path)
        where = '%s %s' % (label, path)
        if not isinstance(st, Mapping):
            out.append(_drift(host, None, kind, None, 'readable', '%s could not be examined' % where, stage, fix=UNREAD))
            continue
        if not st.get('exists'):
            if not item.get('optional'):
                out.append(_drift(host, None, kind, 'missing', 'file', '%s is missing (run %s wrote it)' % (where, run),
                                  stage))
            continue
        if st.get('islnk'):
            out.append(_drift(host, None, kind, 'link to %s' % st.get('lnk_target'), 'file', '%s is a link to %s, '
                              'not the file run %s wrote (a link there is never followed)' % (where, st.get('lnk_target'), run),
                              stage))
            continue
        if not st.get('isreg'):
            out.append(_drift(host, None, kind, 'not a file', 'file', '%s is not a regular file' % where, stage))
            continue
        # the env file's variables and MindIE's managed settings are compared one by one (env_drift, serving_drift);
        # config.json also holds what the operator sets, so only the env file's other lines count as content here
        if item.get('checksum') and kind not in BY_SETTING and st.get('checksum') != item['checksum'] \
                and not (kind == 'hccl_env' and env_findings):
            out.append(_drift(host, None, kind, st.get('checksum'), item['checksum'], '%s changed since run %s wrote it '
                              '(SHA-1 %s, now %s)' % (where, run, item['checksum'][:12], str(st.get('checksum'))[:12]),
                              stage))
        for key, name, ident in (('owner', 'pw_name', 'uid'), ('group', 'gr_name', 'gid')):
            wanted = str(item[key]) if item.get(key) not in (None, '') else None
            if wanted and st.get(name) != wanted and not (wanted.isdigit() and st.get(ident) == int(wanted)):
                out.append(_drift(host, None, '%s_%s' % (kind, key), st.get(name), item[key], '%s belongs to %s %s, '
                                  'expected %s' % (where, key, st.get(name), item[key]), stage))
        mode = _mode(st.get('mode'))
        if item.get('mode') and mode != _mode(item['mode']):
            out.append(_drift(host, None, kind + '_mode', st.get('mode'), item['mode'], '%s has mode %s, expected %s'
                              % (where, st.get('mode'), item['mode']), stage))
        if mode is not None and mode & 0o022:
            out.append(_drift(host, None, kind + '_writable', st.get('mode'), 'not group/other-writable',
                              '%s is group- or other-writable (mode %s): root loads or runs it, so anyone who can '
                              'write it runs code as root' % (where, st.get('mode')), stage))
    return out


def governor_drift(host, result, governor, record=None):
    """Findings of the CPU governor (cpu_governor's check-mode result) against ``governor``."""
    if not governor:
        return []
    if not isinstance(result, Mapping) or result.get('failed'):
        msg = result.get('msg') if isinstance(result, Mapping) else 'no result'
        return [_drift(host, None, 'governor', None, governor, 'the CPU governor could not be read: %s' % msg, 6,
                       fix=UNREAD)]
    if not result.get('changed'):
        return []
    before = result.get('before') or {}
    groups = {}
    for cpu, name in before.items():
        if name != governor and str(cpu).isdigit():
            groups.setdefault(name, []).append(int(cpu))
    found = ', '.join('%s on CPUs %s' % (name, span(cpus)) for name, cpus in sorted(groups.items())) or \
        'other on CPUs %s' % result.get('changed_cpus')
    note = ' (run %s set %s)' % (record.get('run'), governor) if record else ''
    return [_drift(host, None, 'governor', sorted(groups) or None, governor, 'the CPU governor is %s, expected %s%s'
                   % (found, governor, note), 6)]


def host_drift(host, host_info, max_swappiness, thp_mode):
    """Findings of vm.swappiness and the THP mode (host_info's read) against stage 6's limits."""
    host_info = host_info if isinstance(host_info, Mapping) else {}
    out = []
    swappiness = host_info.get('swappiness')
    if max_swappiness is not None and swappiness is not None and int(swappiness) > int(max_swappiness):
        out.append(_drift(host, None, 'swappiness', swappiness, '<= %s' % max_swappiness, 'vm.swappiness is %s, '
                          'expected %s or less (numa_bind_max_swappiness)' % (swappiness, max_swappiness), 'host'))
    thp = host_info.get('transparent_hugepage')
    if thp_mode and thp and thp != thp_mode:
        out.append(_drift(host, None, 'transparent_hugepage', thp, thp_mode, 'transparent huge pages are %s, expected '
                          '%s (numa_bind_thp_mode)' % (thp, thp_mode), 'host'))
    return out


def serving_drift(host, result, record):
    """Findings of MindIE's managed settings (mindie_config's check-mode result with the record's settings)."""
    if not record:
        return []
    path = (record.get('data') or {}).get('file')
    if not isinstance(result, Mapping):
        return []
    if result.get('failed'):
        return [_drift(host, None, 'mindie_config', None, path, 'the settings of %s could not be read: %s'
                       % (path, result.get('msg')), 7, fix=UNREAD)]
    out = []
    for change in result.get('changes') or []:
        key = change.get('key')
        out.append(_drift(host, None, key, change.get('before'), change.get('after'), '%s (%s) in %s is %s, expected '
                          '%s (run %s wrote it)' % (key, change.get('path'), path, change.get('before'),
                                                    change.get('after'), record.get('run')), 7))
    return out


def record_files(records, hccl_env_file=None):
    """The ``data.files`` entries of the applied records of stages 5-7, each with the run that wrote it; without an
    entry of the HCCL env file, that file as an optional entry (no run wrote it: only a link, something other than a
    file there or write bits for group or other count)."""
    out = []
    for stage in (5, 6, 7):
        record = records.get(stage)
        for item in ((record or {}).get('data') or {}).get('files') or []:
            if isinstance(item, Mapping) and item.get('path'):
                out.append(dict(item, run=record.get('run')))
    if hccl_env_file and not any(item.get('path') == hccl_env_file for item in out):
        out.append({'kind': 'hccl_env', 'path': hccl_env_file, 'checksum': None, 'run': None, 'optional': True})
    return out


def node_document(audit_id, node, findings, compared, persisted, now):
    """The node's audit record (``<report dir>/audit/<audit id>/nodes/<node>.json``)."""
    fails = [f for f in findings if f.get('severity') == 'fail']
    return {'schema': SCHEMA, 'version': VERSION, 'audit': audit_id, 'node': node, 'time': now,
            'status': 'drift' if fails else 'clean', 'findings': findings, 'compared': compared,
            'persistence': persisted}


def audit_dir(report_dir, audit_id):
    return os.path.join(report_dir, AUDIT_DIR, store.check_run_id(audit_id))


def write_node(report_dir, document):
    """Write the node's audit record atomically; the directories are the store's own (no link followed)."""
    directory = audit_dir(report_dir, document['audit'])
    os.makedirs(report_dir, mode=0o755, exist_ok=True)  # as the runs' store: the report directory may be a link
    for step in (os.path.join(report_dir, AUDIT_DIR), directory, os.path.join(directory, 'nodes')):
        store.own_dir(step)
    return store.write_json(os.path.join(directory, 'nodes', '%s.json' % store.check_node(document['node'])), document)


def read_nodes(report_dir, audit_id, nodes):
    """``(documents by node, missing nodes with why)`` of this audit's node records."""
    directory = os.path.join(audit_dir(report_dir, audit_id), 'nodes')
    documents, missing = {}, {}
    for node in nodes:
        document, problem = store.load_json(os.path.join(directory, '%s.json' % store.check_node(node)))
        if problem is None and (not isinstance(document, Mapping) or document.get('schema') != SCHEMA
                                or document.get('audit') != audit_id or document.get('node') != node):
            problem = 'is not the audit record of %s in audit %s' % (node, audit_id)
        if problem is None:
            documents[node] = document
        elif problem == 'missing':
            missing[node] = 'no audit record: the node was not read (unreachable, or it failed before its audit)'
        else:
            missing[node] = 'its audit record %s' % problem
    return documents, missing


def summary(audit_id, documents, missing, now):
    """``(document, failed, msg)`` of the PoD's audit from the node records."""
    findings = [f for node in sorted(documents) for f in documents[node].get('findings') or []]
    fails = [f for f in findings if f.get('severity') == 'fail']
    drifted = sorted(set(f['host'] for f in fails))
    document = {'schema': SUMMARY_SCHEMA, 'version': VERSION, 'audit': audit_id, 'time': now,
                'nodes': sorted(list(documents) + list(missing)), 'drifted': drifted,
                'missing': missing, 'findings': findings,
                'persistence': dict((node, documents[node].get('persistence')) for node in sorted(documents)),
                'compared': dict((node, documents[node].get('compared')) for node in sorted(documents))}
    failed = bool(fails or missing)
    if failed:
        parts = []
        if fails:
            parts.append('%d setting(s) on %s differ from the intent or from the last applied run: %s' % (
                len(fails), ', '.join(drifted), findings_text(fails, ' | ')))
        if missing:
            parts.append('not audited: %s' % '; '.join('%s (%s)' % item for item in sorted(missing.items())))
        msg = 'Drift audit %s (nothing was changed): %s' % (audit_id, '. '.join(parts))
    else:
        unapplied = sorted(node for node, doc in documents.items()
                           if not any(str(text).startswith('run ') for text in (doc.get('compared') or {}).values()))
        msg = 'Drift audit %s: every managed setting of %d node(s) is as intended and as the last applied run left it' % (
            audit_id, len(documents))
        if unapplied:
            msg += ' (%s: no applied run of stages 4-7 in the report directory, so compared with the intent only)' % (
                ', '.join(unapplied))
    document['status'] = 'drift' if failed else 'clean'
    document['msg'] = msg
    return document, failed, msg


def markdown(document):
    """audit.md: the verdict, one row per finding, what each node keeps across a reboot, what was compared."""
    lines = ['# Drift audit %s' % document['audit'], '', document['msg'], '']
    rows = document.get('findings') or []
    if rows:
        lines += ['| node | NPU | setting | expected | found | severity | brings it back |', '|---|---|---|---|---|---|---|']
        for f in rows:
            lines.append('| %s | %s | %s | %s | %s | %s | %s |' % (
                f.get('host'), '' if f.get('device') is None else f['device'], f.get('check'),
                _cell(f.get('expected')), _cell(f.get('value')), f.get('severity'), _cell(f.get('fix'))))
        lines.append('')
    lines += ['## Across a reboot (driver persistence)', '']
    for node, persisted in sorted((document.get('persistence') or {}).items()):
        lines.append('- %s' % ((persisted or {}).get('msg') or '%s: the ports were not audited' % node))
    lines += ['', '## Compared with', '']
    for node, compared in sorted((document.get('compared') or {}).items()):
        lines.append('- %s: %s' % (node, '; '.join('stage %s: %s' % item for item in sorted((compared or {}).items()))))
    return '\n'.join(lines) + '\n'


def _cell(value):
    text = port_text(value) if not isinstance(value, str) else value
    return str(text).replace('|', '\\|').replace('\n', ' ')
