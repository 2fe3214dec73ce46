# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The PoD-wide reading of the ascend_diagnose results of every node (diagnose_summary): how far each known error code
reaches - every node, several nodes, one node or one card - and the lines that say so."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

SCOPE_TEXT = {
    'pod': 'a PoD-wide cause (a timeout, a setting or the job, shared by every node), not one bad card',
    'card': 'a fault of that card or of what only it uses (its link: cable, optics, switch port); no other card or node '
            'reports it',
    'node': 'a fault of that node (host, driver or the job there), not of one card and not PoD-wide',
    'nodes': 'local faults of those nodes, not PoD-wide',
}


# a finding about the reading itself, not an error of the logs
NOT_ALL_READ = 'not_all_read'


def _cards(devices, without, ranks=()):
    """'card 3', 'cards 0, 1 (ranks 8, 9)', with the lines no card was named for."""
    if not devices:
        return 'no card named in the logs'
    text = '%s %s' % ('card' if len(devices) == 1 else 'cards', ', '.join(str(dev) for dev in devices))
    if ranks:
        text += ' (%s %s)' % ('rank' if len(ranks) == 1 else 'ranks', ', '.join(str(rank) for rank in ranks))
    if without:
        text += ' (+%d line(s) naming no card)' % without
    return text


def _scope(where, read):
    if read > 1 and len(where) == read:
        return 'pod'
    if len(where) > 1:
        return 'nodes'
    only = where[0]
    if len(only['devices']) == 1 and not only['lines_without_device']:
        return 'card'
    return 'node'


def _headline(entry, read):
    code, where = entry['code'], entry['per_node']
    first = where[0]
    if entry['scope'] == 'pod':
        return '%s: on every node (%d/%d) - %s' % (code, len(where), read, SCOPE_TEXT['pod'])
    if entry['scope'] == 'card':
        card = first['devices'][0]
        return '%s: on card %s of %s only (1/%d nodes) - %s' % (code, card, first['node'], read, SCOPE_TEXT['card'])
    if entry['scope'] == 'node':
        cards = _cards(first['devices'], first['lines_without_device'])
        return '%s: on %s only (1/%d nodes), %s - %s' % (code, first['node'], read, cards, SCOPE_TEXT['node'])
    return '%s: on %s only (%d/%d nodes) - %s' % (code, ', '.join(entry['nodes']), len(where), read, SCOPE_TEXT['nodes'])


def diagnose_summary(results, group='ascend_pod'):
    """{'codes': [...], 'unread': [...], 'lines': [...]} over {host: ascend_diagnose result}."""
    if not isinstance(results, Mapping):
        raise AnsibleFilterError('diagnose_summary expects {host: ascend_diagnose result}, got %s' % type(results).__name__)
    nodes = sorted(results)
    unread = [host for host in nodes if not isinstance(results[host], Mapping) or 'findings' not in results[host]]
    seen, info, incomplete = {}, {}, []
    for host in nodes:
        if host in unread:
            continue
        for found in results[host].get('findings') or []:
            if not isinstance(found, Mapping) or not found.get('code'):
                continue
            if found['code'] == NOT_ALL_READ:
                incomplete.append({'node': host, 'msg': found.get('msg') or 'not every log file was read'})
                continue
            devices = sorted(dev for dev in found.get('devices') or [] if isinstance(dev, int))
            without = found.get('lines_without_device')
            if not isinstance(without, int):
                # a result without device attribution: none of its lines is tied to a card
                without = (found.get('count') or 0) if not devices else 0
            seen.setdefault(found['code'], []).append({
                'node': host, 'count': found.get('count'), 'first_seen': found.get('first_seen'),
                'last_seen': found.get('last_seen'), 'files': found.get('files') or [], 'devices': devices,
                'ranks': sorted(rank for rank in found.get('ranks') or [] if isinstance(rank, int)),
                'lines_without_device': without})
            info.setdefault(found['code'], found)
    read = len(nodes) - len(unread)
    codes = []
    for code in sorted(seen, key=lambda name: (-sum(item['count'] or 0 for item in seen[name]), name)):
        where = seen[code]
        entry = {'code': code, 'scope': _scope(where, read), 'nodes': [item['node'] for item in where], 'per_node': where,
                 'cause': info[code].get('cause'), 'fix': info[code].get('fix'), 'source': info[code].get('source')}
        entry['cards'] = ['%s:%s' % (item['node'], dev) for item in where for dev in item['devices']]
        codes.append(entry)
    lines = ['PoD %s: %d node(s), %d known error code(s) found' % (group, len(nodes), len(codes))]
    if unread:
        lines.append('logs not read on: %s' % ', '.join(unread))
    for item in incomplete:
        lines.append('not every log file was read on %s: %s' % (item['node'], item['msg']))
    for entry in codes:
        lines.append(_headline(entry, read))
        for item in entry['per_node']:
            lines.append('  node %s: %s line(s), %s, first %s, last %s' % (
                item['node'], item['count'], _cards(item['devices'], item['lines_without_device'], item['ranks']),
                item['first_seen'], item['last_seen']))
        lines.append('  cause: %s' % entry['cause'])
        lines.append('  fix: %s' % entry['fix'])
        lines.append('  source: %s' % entry['source'])
    if not codes and incomplete:
        lines.append('no known error code in the files that were read; the logs of %s were not read in full, so an error '
                     'may be in what was left out' % ', '.join(item['node'] for item in incomplete))
    elif not codes:
        lines.append('no known error code in the logs of any node')
    return {'codes': codes, 'unread': unread, 'incomplete': incomplete, 'lines': lines}
