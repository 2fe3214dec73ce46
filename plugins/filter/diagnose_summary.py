# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The PoD-wide reading of the ascend_diagnose results of every node: diagnose_summary.

The documentation of the filter is in diagnose_summary.yml next to this file.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError


def diagnose_summary(results, group='ascend_pod'):
    """{'codes': [...], 'unread': [...], 'lines': [...]} over {host: ascend_diagnose result}."""
    if not isinstance(results, Mapping):
        raise AnsibleFilterError('diagnose_summary expects {host: ascend_diagnose result}, got %s' % type(results).__name__)
    nodes = sorted(results)
    unread = [host for host in nodes if not isinstance(results[host], Mapping) or 'findings' not in results[host]]
    seen, info = {}, {}
    for host in nodes:
        if host in unread:
            continue
        for found in results[host].get('findings') or []:
            if not isinstance(found, Mapping) or not found.get('code'):
                continue
            seen.setdefault(found['code'], []).append({'node': host, 'count': found.get('count'), 'first_seen': found.get('first_seen'),
                                                       'last_seen': found.get('last_seen'), 'files': found.get('files') or []})
            info.setdefault(found['code'], found)
    read = len(nodes) - len(unread)
    codes = []
    for code in sorted(seen, key=lambda name: (-sum(item['count'] or 0 for item in seen[name]), name)):
        where = seen[code]
        scope = 'pod' if read > 1 and len(where) == read else 'local'
        codes.append({'code': code, 'scope': scope, 'nodes': [item['node'] for item in where], 'per_node': where,
                      'cause': info[code].get('cause'), 'fix': info[code].get('fix'), 'source': info[code].get('source')})
    lines = ['PoD %s: %d node(s), %d known error code(s) found' % (group, len(nodes), len(codes))]
    if unread:
        lines.append('logs not read on: %s' % ', '.join(unread))
    for entry in codes:
        if entry['scope'] == 'pod':
            lines.append('%s: on every node (%d/%d) - a PoD-wide cause (timeout or configuration), not one bad card'
                         % (entry['code'], len(entry['nodes']), read))
        else:
            lines.append('%s: on %s only (%d/%d) - a local fault there' % (entry['code'], ', '.join(entry['nodes']), len(entry['nodes']), read))
        for item in entry['per_node']:
            lines.append('  node %s: %s line(s), first %s, last %s' % (item['node'], item['count'], item['first_seen'], item['last_seen']))
        lines.append('  cause: %s' % entry['cause'])
        lines.append('  fix: %s' % entry['fix'])
        lines.append('  source: %s' % entry['source'])
    if not codes:
        lines.append('no known error code in the logs of any node')
    return {'codes': codes, 'unread': unread, 'lines': lines}


class FilterModule:
    def filters(self):
        return {'diagnose_summary': diagnose_summary}
