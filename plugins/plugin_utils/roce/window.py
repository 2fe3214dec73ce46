# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stage 4 change window told truthfully: what each node of a stopped batch is now, the message that stops the
window, the stage 4 results of every node for the summary, the batch size check and the rollback's message.

The filters roce_batch_problems and roce_rollback_message (their documentation is in plugins/filter/<name>.yml).
Controller side only.

What a node of a batch is comes from its stage 4 record only (plugins/plugin_utils/roce/record.py, built by
npuops.ascend.stage_roce, which calls :func:`window_stop_records` with step ``stop``; :func:`record_state` tells one
node): its changed NPUs, its restore point (the file its set wrote, or the path chosen before the set), its failure
(with the phase where the connection broke, when it did), the restore after a failure in the batch, and whether it
is done (verified, in this or an earlier batch).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

# the phases of a node's stage 4 record (record.py) during and after its set
DURING = ('set', 'address', 'mtu', 'pfc', 'dscp_to_tc')
AFTER = ('ping', 'read_back', 'pfc_first')

ROLLBACK = 'playbooks/rollback.yml -l %s -e roce_lossless_rollback_file=%s'
LINK_HINT = 'check the cable, the optical module and the switch port'

# the states of a node of a stopped window (nodes.<host>.state of window_stop_records)
DONE = 'done'                  # changed and verified in an earlier batch, kept
UNTOUCHED = 'untouched'        # outside the batch and not done: the window stopped before it
UNCHANGED = 'unchanged'        # in the batch, nothing was set on it
RESTORED = 'restored'          # changed, then every value set back from its restore point (and read back)
LINK_DOWN = 'restored-link-down'  # values set back and read back, but a link stays down
NOT_RESTORED = 'not-restored'  # changed and still changed: restore by hand
LOST = 'lost'                  # the connection broke during or after its change: may be changed


def ranges(devices):
    """'0, 1, 2' of a list of NPU ids, 'none' when empty."""
    return ', '.join(str(d) for d in sorted(set(devices))) or 'none'


def _unreachable(result):
    return isinstance(result, Mapping) and bool(result.get('unreachable'))


def short_text(text):
    """A message on one line, without Ansible's 'Task failed: ' prefixes and the final full stop."""
    text = ' '.join(str(text or '').split())
    for prefix in ('Task failed: ', 'Action failed: '):
        while text.startswith(prefix):
            text = text[len(prefix):]
    return text.rstrip('. ') or 'no answer'


def lost_at(record):
    """``(phase, reason)`` where the connection to the node broke, ``(None, None)`` when it did not."""
    record = record if isinstance(record, Mapping) else {}
    failure = record.get('failure') if isinstance(record.get('failure'), Mapping) else {}
    if failure.get('lost'):
        return failure.get('phase'), failure.get('reason')
    return None, None


def _backup(record):
    point = record.get('restore_point') if isinstance(record.get('restore_point'), Mapping) else {}
    return point.get('file') or point.get('planned')


def record_state(record, host, restore_enabled=True):
    """What a node of a stopped batch is now, from its stage 4 record: ``{host, state, failed, changed, restore_point,
    text}``.

    ``failed`` is true for a node that needs the operator (its change failed, it was lost, or it is still changed);
    ``text`` is one sentence that starts with the node's name.
    """
    record = record if isinstance(record, Mapping) else {}
    changed = sorted(set(record.get('changed_devices') or []))
    backup = _backup(record)
    failure = record.get('failure')
    out = {'host': host, 'changed': changed, 'restore_point': backup, 'failed': bool(failure)}
    devices = 'changed NPU %s; ' % ranges(changed) if changed else ''
    back = ROLLBACK % (host, backup)

    phase, reason = lost_at(record)
    if phase in DURING:
        out.update(state=LOST, failed=True, text=(
            '%s: lost during its change (the connection broke: %s): %sits NPU ports MAY BE CHANGED (hccn_config goes on '
            'on the node when the connection breaks) and were neither verified nor restored; restore point %s (written '
            'before the first set: if it is missing, nothing was set). When %s answers again, run the window again (a '
            'node that already matches changes nothing) or put it back with %s'
            % (host, short_text(reason), devices, backup, host, back)))
        return out
    if phase in AFTER:
        out.update(state=LOST if changed else UNCHANGED, failed=True, text=(
            '%s: %slost after its change (the connection broke: %s), so it was neither verified nor restored; restore '
            'point %s. When %s answers again, run the window again or put it back with %s'
            % (host, devices or 'nothing was changed on it; ', short_text(reason), backup, host, back)
            if changed else '%s: lost (the connection broke: %s); nothing was set on it' % (host, short_text(reason))))
        return out
    if phase is not None:
        out.update(state=UNCHANGED, failed=True, text='%s: could not be reached before its change (%s); nothing was set on it'
                   % (host, short_text(reason)))
        return out

    restore = record.get('restore')
    if isinstance(restore, Mapping) and not restore.get('skipped'):
        failed_devices = restore.get('failed_devices') or []
        link_down = restore.get('link_down_devices') or []
        if _unreachable(restore):
            out.update(state=NOT_RESTORED, failed=True, text=(
                '%s: %sits restore FAILED: the connection broke (%s); restore it by hand with %s once it answers'
                % (host, devices, short_text(restore.get('msg')), back)))
        elif 'changed_devices' in restore and failed_devices and set(failed_devices) <= set(link_down):
            out.update(state=LINK_DOWN, failed=True, text=(
                '%s: %svalues restored from %s (NPU %s set back and read back), but the link of NPU %s is still not UP: '
                '%s; the settings are the ones from before the change'
                % (host, devices, backup, ranges(restore.get('changed_devices') or []), ranges(link_down), LINK_HINT)))
        elif restore.get('failed') or 'changed_devices' not in restore or failed_devices:
            # registered with failed_when: false: a failed restore has failed=false, but no changed_devices
            out.update(state=NOT_RESTORED, failed=True, text=(
                '%s: %sits restore FAILED: %s; restore it by hand with %s' % (host, devices, short_text(restore.get('msg')), back)))
        else:
            out.update(state=RESTORED, text='%s: %srestored from %s (%s)' % (
                host, devices, backup, 'NPU %s set back' % ranges(restore.get('changed_devices') or [])
                if restore.get('changed') else 'it already matched the restore point'))
        return out
    if changed and not restore_enabled:
        out.update(state=NOT_RESTORED, failed=True, text='%s: %sNOT restored (roce_lossless_restore_on_failure=false); '
                   'restore point %s' % (host, devices, backup))
    elif changed:
        out.update(state=NOT_RESTORED, failed=True, text='%s: %sNOT restored: no restore point was written' % (host, devices))
    else:
        out.update(state=UNCHANGED, text='%s: not restored: nothing was changed on it' % host)
    return out


def window_stop_records(batch, records, all_hosts=None, restore_enabled=True):
    """``{message, nodes: {host: state}}`` of a stopped batch from the stage 4 records of the nodes (``{host:
    record}``; a node of an earlier batch is done when its record says so)."""
    batch = list(batch or [])
    records = records if isinstance(records, Mapping) else {}

    def record_of(host):
        found = records.get(host)
        return found if isinstance(found, Mapping) else {}

    nodes = {}
    heads, refused = [], {}
    for host in batch:
        state = record_state(record_of(host), host, restore_enabled)
        nodes[host] = state
        failure = record_of(host).get('failure')
        if not isinstance(failure, Mapping):
            continue
        if state['state'] == LOST:
            heads.append('the connection to %s broke %s its change' % (
                host, 'during' if lost_at(record_of(host))[0] in DURING else 'after'))
        elif failure.get('stage') == 'before':
            refused.setdefault(short_text(failure.get('msg')), []).append(host)
        else:
            heads.append('the change failed on %s at "%s": %s' % (host, failure.get('task'), short_text(failure.get('msg'))))
    for msg, hosts in refused.items():
        heads.append('nothing was set on %s: %s' % (', '.join(hosts), msg))
    lines = ['Stage 4 stopped: ' + '; '.join(heads) + '.' if heads else 'Stage 4 stopped.']
    lines.extend(nodes[host]['text'] + '.' for host in batch)

    changed = [h for h in batch if nodes[h]['changed'] and nodes[h]['state'] != LOST]
    restored = [h for h in batch if nodes[h]['state'] == RESTORED]
    restored += ['%s (values; the link of NPU %s is still not UP)' % (
        h, ranges((record_of(h).get('restore') or {}).get('link_down_devices') or []))
        for h in batch if nodes[h]['state'] == LINK_DOWN]
    lost = [h for h in batch if nodes[h]['state'] == LOST]
    by_hand = [h for h in batch if nodes[h]['state'] == NOT_RESTORED]
    summary = 'Changed in this batch: %s. Restored: %s.' % (', '.join(changed) or 'none', ', '.join(restored) or 'none')
    if lost:
        summary += ' May be changed (lost, not verified, not restored): %s.' % ', '.join(lost)
    if by_hand:
        summary += ' Still changed, restore by hand: %s.' % ', '.join(by_hand)
    lines.append(summary)

    others = [h for h in (all_hosts or []) if h not in batch]
    done = [h for h in others if record_of(h).get('done')]
    untouched = [h for h in others if h not in done]
    for host in done:
        nodes[host] = {'host': host, 'state': DONE, 'failed': False, 'changed': [], 'text': '%s: changed and verified in an '
                       'earlier batch (kept); the window stopped before the cross-node check of stage 4' % host,
                       'restore_point': (record_of(host).get('restore_point') or {}).get('file')}
    for host in untouched:
        nodes[host] = {'host': host, 'state': UNTOUCHED, 'failed': False, 'changed': [], 'restore_point': None,
                       'text': '%s: not touched: the window stopped before its batch' % host}
    if done:
        lines.append('Done and verified in earlier batches (kept): %s.' % ', '.join(done))
    lines.append('Not touched: %s. Fix the cause and run again: nodes that already match change nothing.'
                 % (', '.join(untouched) or 'none'))
    order = [h for h in (all_hosts or []) if h in nodes] + [h for h in nodes if h not in (all_hosts or [])]
    return {'message': ' '.join(lines), 'nodes': dict((h, nodes[h]) for h in order)}


def stop_results(stop):
    """``{host: {stage4: gate result}}`` of a :func:`window_stop_records` for the run's summary: ``failed`` for the nodes that
    need the operator, ``stopped`` for the others, with the node's sentence."""
    out = {}
    for host, node in ((stop or {}).get('nodes') or {}).items():
        failed = bool(node.get('failed'))
        text = str(node.get('text'))
        out[host] = {'stage4': {'stage': 4, 'role': 'roce_lossless', 'status': 'failed' if failed else 'stopped',
                                'failures': [text] if failed else [], 'warnings': [] if failed else [text]}}
    return out


# ---- the batch size of a serial play --------------------------------------------------------------------------------

def roce_batch_problems(value, name='roce_lossless_batch'):
    """[] when ``value`` is a batch size the window accepts (a whole number >= 1, or a whole percentage 1-100 written
    with %), else one sentence naming the variable, the value and what is accepted."""
    accepted = 'give a whole number of nodes (1 or more) or a percentage of the nodes from 1% to 100%, such as 25%'
    shown = repr(value) if isinstance(value, str) else str(value)
    if isinstance(value, bool) or value is None:
        return ['%s %s is not a batch size: %s' % (name, shown, accepted)]
    if isinstance(value, float):
        if not value.is_integer():
            return ['%s %s is not a whole number of nodes: %s' % (name, shown, accepted)]
        value = int(value)
    if isinstance(value, int):
        if value < 1:
            return ['%s %d is below 1: a batch of %d nodes would be read by Ansible as "every node at once"; %s'
                    % (name, value, value, accepted)]
        return []
    if isinstance(value, (list, tuple)):
        return ['%s %s is a list: the change window takes one batch size; %s' % (name, shown, accepted)]
    text = str(value).strip()
    if text.isdigit() and text.isascii():
        return roce_batch_problems(int(text), name)
    if text.endswith('%'):
        number = text[:-1].strip()
        if not (number.isdigit() and number.isascii()):
            return ['%s %s is not a percentage of nodes: %s' % (name, shown, accepted)]
        pct = int(number)
        if pct < 1 or pct > 100:
            return ['%s %s is outside 1%%-100%%: %s' % (name, shown, accepted)]
        return []
    if text.startswith('-') and text[1:].isdigit() and text.isascii():
        return ['%s %s is below 1: a negative batch would be read by Ansible as "every node at once"; %s'
                % (name, shown, accepted)]
    return ['%s %s is not a batch size: %s' % (name, shown, accepted)]


# ---- batches that follow failure domains -----------------------------------------------------------------------------

def batch_count(value, total):
    """The nodes of one batch for a size the window accepts (roce_batch_problems) among ``total`` nodes, the way Ansible
    reads ``serial``: a percentage is that share of the nodes, rounded down, at least 1."""
    text = str(value).strip()
    if text.endswith('%'):
        return max(1, int(int(text[:-1]) / 100.0 * total))
    return max(1, int(float(text)))


def switch_domains(hosts, neighbours):
    """{node: domain} from the LLDP neighbour map (``neighbours``: switch_neighbours of the nodes): two nodes whose NPU
    ports share a leaf switch are in the same domain (a leaf that fails takes both down), so a domain is a connected
    part of the node-switch graph, named after its switches. Returns (domains, problems): a node none of whose NPU
    ports was seen in LLDP is a problem (its domain is not known)."""
    hosts = list(hosts)
    switches = {}
    for port in (neighbours or {}).get('ports') or []:
        if port.get('node') in hosts and port.get('switch'):
            switches.setdefault(port['node'], set()).add(port['switch'])
    parent = dict((host, host) for host in hosts)

    def root(host):
        while parent[host] != host:
            parent[host] = parent[parent[host]]
            host = parent[host]
        return host

    owner = {}
    for host in hosts:
        for switch in sorted(switches.get(host, ())):
            if switch in owner:
                parent[root(host)] = root(owner[switch])
            else:
                owner[switch] = host
    members = {}
    for host in hosts:
        if host in switches:
            members.setdefault(root(host), []).append(host)
    domains = {}
    for group in members.values():
        names = sorted(set(switch for host in group for switch in switches[host]))
        name = '+'.join(names) if len(names) <= 4 else '%s+...+%s (%d switches)' % (names[0], names[-1], len(names))
        for host in group:
            domains[host] = name
    problems = ['%s: none of its NPU ports was seen in LLDP, so the leaf switches it hangs on are not known' % host
                for host in hosts if host not in switches]
    return domains, problems


def group_domains(hosts, names, groups):
    """{node: domain} from inventory groups: a node's domain is the first group of ``names`` it is in (``groups``: the
    inventory's groups, as Ansible's ``groups``). Returns (domains, problems): an unknown group, or a node in none of
    them, is a problem."""
    problems = []
    names = [str(name) for name in names or []]
    groups = groups or {}
    if not names:
        problems.append('roce_lossless_domain_groups is empty: with roce_lossless_batch_domain=group it names the '
                        'inventory groups that are the failure domains (racks, leaf pairs), in the order to change them')
    for name in names:
        if name not in groups:
            problems.append('roce_lossless_domain_groups names %s, which is not a group of the inventory' % name)
    domains = {}
    for host in hosts:
        for name in names:
            if host in (groups.get(name) or []):
                domains[host] = name
                break
    if names:
        problems.extend('%s: it is in none of the groups of roce_lossless_domain_groups (%s)' % (host, ', '.join(names))
                        for host in hosts if host not in domains)
    return domains, problems


def domain_batches(hosts, domains, batch, order=None):
    """The batches of the change window when they follow failure domains: the nodes of each domain together (domains in
    the order of ``order``, then in the order their first node has in ``hosts``), each domain cut into batches of at
    most ``batch`` nodes (a size roce_batch_problems accepts; a percentage is of all the nodes), so that no batch holds
    two domains.

    Returns ``{order, serial, batches, domains}``: ``order`` the nodes in the order to change them (the serial play's
    hosts), ``serial`` the size of each batch (the serial play's list), ``batches`` ``[{domain, hosts}]`` and
    ``domains`` ``{domain: [nodes]}``.
    """
    hosts = list(hosts)
    size = batch_count(batch, len(hosts))
    members = dict((name, []) for name in order or [] if name in domains.values())
    for host in hosts:
        members.setdefault(domains[host], []).append(host)
    changed, serial, batches = [], [], []
    for name, group in members.items():
        for start in range(0, len(group), size):
            chunk = group[start:start + size]
            changed.extend(chunk)
            serial.append(len(chunk))
            batches.append({'domain': name, 'hosts': chunk})
    return {'order': changed, 'serial': serial, 'batches': batches, 'domains': members}


def batches_text(plan):
    """One line: '2 failure domains (leaf-01+leaf-02: node01-node04 ...), 4 batches of at most 2 nodes, one domain at a
    time'."""
    parts = ['%s: %s' % (name, ', '.join(group)) for name, group in plan['domains'].items()]
    return '%d failure domain(s) (%s), %d batch(es) of at most %d node(s), never two domains in one batch' % (
        len(plan['domains']), '; '.join(parts), len(plan['batches']), max(plan['serial'] or [0]))


# ---- the rollback playbook ------------------------------------------------------------------------------------------

def _stamp(mtime):
    try:
        return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(float(mtime)))
    except (TypeError, ValueError, OverflowError):
        return '?'


def roce_rollback_message(result, host, choice, found=None, automatic=False, check_mode=False):
    """``{failed, msg}`` of one node's rollback from the restore point ``choice``; ``found`` is the find result of the
    restore points (or its ``files``); see roce_rollback_message.yml."""
    if result is not None and not isinstance(result, Mapping):
        raise AnsibleFilterError('roce_rollback_message: the input must be the registered result of hccn_config, got %r'
                                 % (result,))
    files = found.get('files') if isinstance(found, Mapping) else found
    return _rollback_message(result, host, choice, files or [], bool(automatic), bool(check_mode))


def _rollback_message(result, host, choice, found, automatic, check_mode):
    result = result if isinstance(result, Mapping) else {}
    own = result.get('backup_file')
    undo = (' The state before this rollback is kept in %s: to undo the rollback, run %s.' % (own, ROLLBACK % (host, own))
            if own else '')
    changed = result.get('changed_devices') or []
    if _unreachable(result):
        return {'failed': True, 'msg': '%s: the connection broke during the rollback from %s (%s): its NPU ports may be '
                                       'partly restored. When it answers again, run the rollback again (ports that '
                                       'match the restore point are not set again).' % (host, choice, short_text(result.get('msg')))}
    # registered with failed_when: false, a failed restore has failed=false; a restore that ran has changed_devices
    failed_run = bool(result.get('failed') or result.get('failed_devices') or 'changed_devices' not in result)
    if not failed_run:
        if check_mode and result.get('changed'):
            return {'failed': False, 'msg': '%s: would restore NPU %s from the restore point %s (dry run; the real run '
                                            'first keeps the current state in a restore point of its own).'
                                            % (host, ranges(_diff_devices(result)), choice)}
        if result.get('changed'):
            return {'failed': False, 'msg': '%s: restored NPU %s from the restore point %s.%s'
                                            % (host, ranges(changed), choice, undo)}
        return {'failed': False, 'msg': '%s: the ports already match the restore point %s; nothing was set.' % (host, choice)}
    link_down = result.get('link_down_devices') or []
    failed = result.get('failed_devices') or []
    if changed and failed and set(failed) <= set(link_down):
        text = ('%s: values restored from %s (NPU %s set back and read back), but the link of NPU %s is still not UP: %s.%s'
                % (host, choice, ranges(changed), ranges(link_down), LINK_HINT, undo))
        return {'failed': True, 'msg': text}
    msg = '%s: the rollback from %s failed: %s' % (host, choice, short_text(result.get('msg')))
    if changed:
        msg += '. Set back: NPU %s; failed: NPU %s.%s Or fix the cause and run the rollback again.' % (
            ranges(changed), ranges(failed), undo)
        return {'failed': True, 'msg': msg}
    msg += '. Nothing was set on %s.' % host
    others = [f for f in (found or []) if isinstance(f, Mapping) and f.get('path') != choice]
    if automatic and others:
        listed = sorted(others, key=lambda f: float(f.get('mtime') or 0), reverse=True)
        msg += (' The newest restore point was tried because none was named; the other restore points on %s, newest '
                'first: %s. Name one with -e roce_lossless_rollback_file=PATH (check what it holds first).'
                % (host, ', '.join('%s (%s)' % (f.get('path'), _stamp(f.get('mtime'))) for f in listed[:10])))
        if len(listed) > 10:
            msg += ' %d older ones are not listed.' % (len(listed) - 10)
    return {'failed': True, 'msg': msg}


def _diff_devices(result):
    out = []
    for item in result.get('diff') or []:
        header = str((item or {}).get('before_header') or '')
        words = header.split()
        if len(words) >= 2 and words[0] == 'NPU' and words[1].isdigit():
            out.append(int(words[1]))
    return out
