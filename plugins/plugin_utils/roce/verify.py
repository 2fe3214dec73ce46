# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NPU ports of one node against the lossless intent: before the change (roce_precheck_findings), after it
(roce_port_findings, the PFC pause counters between two reads: pfc_steady_findings) and HCCL_RDMA_SL / HCCL_RDMA_TC as a
launch sees them (hccl_alignment_findings).

Findings have the shape of plugins/plugin_utils/findings.py. The documentation of each filter is in
plugins/filter/<name>.yml.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.module_utils._domain.products import PRIORITY_MAX
from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import WARN, finding, own_words
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.intent import lossless_values
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.ports import by_device, dscp_map
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce.window import short_text

PRIORITIES = range(PRIORITY_MAX + 1)


def roce_port_findings(info, intent, host=None, devices=None):
    """Findings of the ports read back after stage 4 against the lossless intent."""
    host = host or 'this node'
    mtu, priority, dscp, tc = lossless_values(intent, 'roce_port_findings')
    entries = by_device(info)
    out = []
    wanted = sorted(entries) if devices is None else [int(d) for d in devices]
    for dev in wanted:
        entry = entries.get(dev)
        if entry is None:
            out.append(finding(host, dev, 'port', None, 'read', 'the port was not read back'))
            continue
        if 'link' in entry and entry['link'] != 'UP':
            out.append(finding(host, dev, 'link', entry['link'], 'UP', 'link is %s, expected UP' % entry['link']
                               if entry['link'] is not None else 'the link state could not be read'))
        if 'mtu' in entry and entry['mtu'] != mtu:
            out.append(finding(host, dev, 'mtu', entry['mtu'], mtu, 'MTU is %s, expected %d (npuops_mtu)' % (entry['mtu'], mtu)
                               if entry['mtu'] is not None else 'the MTU could not be read'))
        if 'pfc_priorities' in entry:
            have = entry['pfc_priorities']
            if have is None:
                out.append(finding(host, dev, 'pfc', None, [priority], 'PFC could not be read'))
            elif priority not in have:
                out.append(finding(host, dev, 'pfc', have, [priority],
                                   'PFC is not enabled on priority %d (enabled: %s), so HCCL_RDMA_SL=%d traffic is not lossless'
                                   % (priority, ', '.join(str(p) for p in have) or 'none', priority)))
            elif len(have) > 1:
                out.append(finding(host, dev, 'pfc', have, [priority],
                                   'PFC is enabled on priorities %s, more than the lossless priority %d (npuops_lossless_priority)'
                                   % (', '.join(str(p) for p in have), priority), WARN))
        if 'dscp_to_tc' in entry:
            table = dscp_map(entry)
            if table is None:
                out.append(finding(host, dev, 'dscp_to_tc', None, {dscp: tc}, 'the DSCP map could not be read'))
            elif table.get(dscp) != tc:
                where = 'maps to TC %s' % table.get(dscp) if dscp in table else 'is not in the map read back'
                out.append(finding(host, dev, 'dscp_to_tc', table.get(dscp), tc,
                                   'DSCP %d %s, expected the lossless TC %d, so HCCL_RDMA_TC=%d traffic leaves the '
                                   'lossless queue' % (dscp, where, tc, dscp * 4)))
    return out


def hccl_alignment_findings(env, intent, host=None, source='the HCCL env file'):
    """Findings of HCCL_RDMA_SL / HCCL_RDMA_TC (as a launch would see them) against the PFC priority and the DSCP."""
    host = host or 'this node'
    _mtu, priority, dscp, _tc = lossless_values(intent, 'hccl_alignment_findings')
    env = env if isinstance(env, Mapping) else {}
    out = []
    sl = env.get('HCCL_RDMA_SL')
    if sl not in (None, '') and str(sl).strip() != str(priority):
        out.append(finding(host, None, 'HCCL_RDMA_SL', sl, priority,
                           'HCCL_RDMA_SL=%s in %s, but PFC is enabled on priority %d: HCCL_RDMA_SL must equal the PFC priority '
                           '(run stage 5, hccl_env, to rewrite it)' % (sl, source, priority)))
    rdma_tc = env.get('HCCL_RDMA_TC')
    if rdma_tc not in (None, '') and str(rdma_tc).strip() != str(dscp * 4):
        reason = ''
        if str(rdma_tc).strip() == str(dscp):
            reason = ' (%s is the DSCP itself; HCCL_RDMA_TC is the ToS byte, DSCP x 4)' % rdma_tc
        out.append(finding(host, None, 'HCCL_RDMA_TC', rdma_tc, dscp * 4,
                           'HCCL_RDMA_TC=%s in %s, but the lossless DSCP is %d, so it must be %d%s (run stage 5, hccl_env, to '
                           'rewrite it)' % (rdma_tc, source, dscp, dscp * 4, reason)))
    return out


def _counter(entry, name):
    stat = (entry or {}).get('pfc_stat') or {}
    counters = stat.get('counters') if isinstance(stat.get('counters'), Mapping) else stat
    value = counters.get(name) if isinstance(counters, Mapping) else None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def pfc_steady_findings(first, second, seconds, host=None, priority=4, max_pause_ms_per_s=100.0):
    """Findings of the PFC pause counters between two hccn_info reads ``seconds`` apart."""
    host = host or 'this node'
    try:
        seconds = float(seconds)
        limit = float(max_pause_ms_per_s)
        priority = int(priority)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('pfc_steady_findings: seconds, max_pause_ms_per_s and priority must be numbers (%s)' % exc) from exc
    if seconds <= 0:
        raise AnsibleFilterError('pfc_steady_findings: seconds must be > 0, got %s' % seconds)
    before, after = by_device(first), by_device(second)
    out = []
    for dev in sorted(set(before) & set(after)):
        if not (before[dev].get('pfc_stat') and after[dev].get('pfc_stat')):
            out.append(finding(host, dev, 'pfc_stat', None, 'two reads', 'the PFC counters could not be read twice', WARN))
            continue
        for prio in PRIORITIES:
            for name, what in (('tx_pfc%d_duration_warn_cnt' % prio, 'pause-time warnings'),
                               ('tx_pfc%d_duration_err_cnt' % prio, 'pause-time errors')):
                a, b = _counter(before[dev], name), _counter(after[dev], name)
                if a is not None and b is not None and b > a:
                    out.append(finding(host, dev, 'pfc_stat', b - a, 0,
                                       '%s grew by %d in %.1f s on priority %d (%s): the port sends long PFC pauses, a pause '
                                       'storm or a congested receiver' % (name, b - a, seconds, prio, what)))
        for direction, meaning in (('tx', 'sent'), ('rx', 'received')):
            name = '%s_pfc%d_duration_ms' % (direction, priority)
            a, b = _counter(before[dev], name), _counter(after[dev], name)
            if a is None or b is None:
                continue
            rate = (b - a) / seconds
            if rate > limit:
                out.append(finding(host, dev, 'pfc_stat', round(rate, 1), '<= %s ms/s' % limit,
                                   'PFC pauses %s on priority %d grew by %.1f ms per second (%.1f ms in %.1f s), above %s ms/s '
                                   '(roce_lossless_pfc_max_pause_ms_per_s): the lossless priority is not steady'
                                   % (meaning, priority, rate, b - a, seconds, limit)))
    return out


def roce_precheck_findings(before, processes=None, host=None, plan=None, allow_busy=False):
    """What stops the change of a node before anything is set: ports that are down or answer nothing, addresses that
    differ from the plan (when ``plan`` is given), NPU processes (a warning with ``allow_busy``)."""
    host = host or 'this node'
    out = []
    if isinstance(before, Mapping) and before.get('unreachable'):
        # the reading ran with ignore_unreachable: the connection to the node broke (or never opened)
        return [finding(host, None, 'reachable', None, 'reachable',
                        'could not be reached (%s); nothing was read or set on it: bring it back (or leave it out with -l) '
                        'and run again' % short_text(before.get('msg')))]
    if not isinstance(before, Mapping) or 'devices' not in before:
        text = (before or {}).get('msg') if isinstance(before, Mapping) else None
        return [finding(host, None, 'ports', None, 'read', 'the NPU ports could not be read: %s' % (text or 'no result'))]
    planned = dict((int(p['device']), p) for p in plan or [] if isinstance(p, Mapping) and 'device' in p)
    for dev, entry in sorted(by_device(before).items()):
        if 'link' in entry and entry['link'] != 'UP':
            out.append(finding(host, dev, 'link', entry['link'], 'UP',
                               'link is %s before the change: stage 4 does not tune a broken port; fix the cable, optics or '
                               'switch port (stage 0 lists them) and run again' % entry['link']))
        if plan is not None and dev in planned and 'address' in entry:
            want = '%s/%s' % (planned[dev].get('address'), planned[dev].get('netmask'))
            have = '%s/%s' % (entry.get('address'), entry.get('netmask')) if entry.get('address') else None
            if have != want:
                out.append(finding(host, dev, 'address', have, want,
                                   'the port has %s, the plan (npuops_npu_ports / npuops_npu_ip_plan) says %s: fix the plan, '
                                   'or set roce_lossless_addresses=apply to set the planned address'
                                   % (have or 'no address', want)))
    for error in before.get('errors') or []:
        query = error.get('query')
        text = own_words(host, error.get('device'), error.get('msg'))
        if text.startswith('%s not read: ' % query):
            text = text[len('%s not read: ' % query):]
        out.append(finding(host, error.get('device'), query or 'port', None, None,
                           'could not read %s before the change: %s' % (query, text)))
    busy = [p for p in processes or [] if isinstance(p, Mapping)]
    for proc in busy:
        dev = proc.get('npu', proc.get('device'))
        text = ('pid %s (%s) runs on the NPU: its RDMA connections break while the links flap' % (proc.get('pid'), proc.get('name')))
        if allow_busy:
            out.append(finding(host, dev, 'busy', proc.get('pid'), 'no process',
                               text + '; changing it anyway because roce_lossless_allow_busy=true', WARN))
        else:
            out.append(finding(host, dev, 'busy', proc.get('pid'), 'no process',
                               text + '; stop the job first, or set roce_lossless_allow_busy=true'))
    return out
