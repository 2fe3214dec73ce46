# -*- coding: utf-8 -*-
# Copyright (c) npuops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stage 6 (role numa_bind): the settings check, the NPU binding map, the run user, the undoing of a failed install,
the findings and the AI Core statistics."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.npuops.ascend.plugins.plugin_utils.findings import FAIL, WARN, finding

GOVERNORS = ('performance', 'powersave', 'ondemand', 'schedutil', 'conservative', 'userspace')
METHODS = ('numactl', 'taskset')
THP_MODES = ('always', 'madvise', 'never')
SEVERITIES = (FAIL, WARN, 'ignore')
# vm.swappiness: 0-200 since Linux 5.8 (0-100 before)
SWAPPINESS_MAX = 200
SAMPLE_SECONDS_MAX = 3600
# the user name rules of useradd (NAME_REGEX of Debian, the shadow-utils default elsewhere)
_NAME_FIRST = 'abcdefghijklmnopqrstuvwxyz_'
_NAME_REST = _NAME_FIRST + '0123456789-.'
# the comment (GECOS) of the run user the role creates: it tells an account stage 6 created from anyone else's
RUN_USER_COMMENT = 'Ascend workload (npuops.ascend npu-bind)'
RUN_USER_EXISTING = ('refuse', 'use')
# groups whose members are root, or can become root or read root's data, without a password (sudo and wheel may ask
# for one, but the rank's code must not even be one password away): the ranks never run in them
PRIVILEGED_GROUPS = ('root', 'wheel', 'sudo', 'admin', 'docker', 'lxd', 'libvirt', 'disk', 'kmem', 'shadow')
# the modes the role writes the map and the launcher with, and the launch file and npu-launch beside them
FILE_MODES = {'map': '0644', 'launcher': '0755', 'launch': '0644', 'launch_script': '0755'}
# the files of the node step, in the order they are written
FILE_KINDS = ('map', 'launcher', 'launch', 'launch_script')
# the owner and the group of those files
FILE_OWNER = 'root'


def _whole(value):
    """An integer from an int or a string of digits; None otherwise (booleans and fractions are not whole numbers)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip('-').isdigit():
        return int(value.strip())
    return None


def _absolute(name, value, problems):
    if not isinstance(value, str) or not value.startswith('/') or value.endswith('/'):
        problems.append('%s %r is not an absolute file path' % (name, value))


def numa_bind_problems(settings):
    """Every problem of the stage 6 settings, as sentences; empty when they are usable."""
    if not isinstance(settings, Mapping):
        raise AnsibleFilterError('numa_bind_problems expects a dict of settings, got %s' % type(settings).__name__)
    problems = []
    governor = settings.get('governor')
    if governor not in GOVERNORS:
        problems.append('numa_bind_governor %r is not a cpufreq governor: use one of %s' % (governor, ', '.join(GOVERNORS)))
    method = settings.get('method')
    if method not in METHODS:
        problems.append('numa_bind_method %r is not a binding method: use numactl (CPUs and memory of the NPU\'s NUMA '
                        'node, numactl -N/-m) or taskset (the NPU\'s affinity CPUs only)' % (method,))
    user = settings.get('run_user')
    if not isinstance(user, str) or not user:
        problems.append('numa_bind_run_user %r is not a user name' % (user,))
    elif user == 'root' or user == '0':
        problems.append('numa_bind_run_user %r: the workload must run as a non-root user; choose another user '
                        '(default npuops)' % user)
    elif user[0] not in _NAME_FIRST or any(char not in _NAME_REST for char in user) or len(user) > 32:
        problems.append('numa_bind_run_user %r is not a valid user name (lower case letters, digits, _, - and ., '
                        'starting with a letter or _, at most 32 characters)' % user)
    npus = _whole(settings.get('npus_per_node'))
    if npus is None or not 1 <= npus <= 64:
        problems.append('npuops_npus_per_node %r is not a number of NPUs from 1 to 64' % (settings.get('npus_per_node'),))
    swappiness = _whole(settings.get('max_swappiness'))
    if swappiness is None or not 0 <= swappiness <= SWAPPINESS_MAX:
        problems.append('numa_bind_max_swappiness %r is outside 0-%d (the kernel\'s range of vm.swappiness)'
                        % (settings.get('max_swappiness'), SWAPPINESS_MAX))
    thp = settings.get('thp_mode')
    if thp not in THP_MODES + ('any',):
        problems.append('numa_bind_thp_mode %r is not a transparent hugepage mode: use always, madvise, never, or any '
                        'to skip the check' % (thp,))
    severity = settings.get('host_severity')
    if severity not in SEVERITIES:
        problems.append('numa_bind_host_severity %r must be one of warn, fail, ignore' % (severity,))
    seconds = _whole(settings.get('aicore_sample_seconds'))
    if seconds is None or not 0 <= seconds <= SAMPLE_SECONDS_MAX:
        problems.append('numa_bind_aicore_sample_seconds %r is outside 0-%d (0 turns the sampling off)'
                        % (settings.get('aicore_sample_seconds'), SAMPLE_SECONDS_MAX))
    existing = settings.get('run_user_existing', 'refuse')
    if existing not in RUN_USER_EXISTING:
        problems.append('numa_bind_run_user_existing %r must be refuse (stop when the run user exists and stage 6 did '
                        'not create it) or use (run the ranks as that account, left as it is)' % (existing,))
    _absolute('numa_bind_map_path', settings.get('map_path'), problems)
    _absolute('numa_bind_launcher_path', settings.get('launcher_path'), problems)
    _absolute('numa_bind_launcher_python', settings.get('launcher_python'), problems)
    return problems


def _member_of(name, gid, groups):
    """The privileged groups of an account: its primary group by gid, and the groups listing it as a member."""
    found = set()
    for group, fields in (groups or {}).items():
        if group not in PRIVILEGED_GROUPS or not isinstance(fields, (list, tuple)):
            continue
        group_gid = fields[1] if len(fields) > 1 else None
        members = [member.strip() for member in (fields[2] if len(fields) > 2 and fields[2] else '').split(',')]
        if name in members or (gid is not None and str(group_gid) == str(gid)):
            found.add(group)
    if str(gid) == '0':
        found.add('root')
    return sorted(found)


def numa_bind_run_user(passwd, host, context):
    """What stage 6 does with the run user on one node, from getent passwd/group, before anything changes.

    Returns ``{manage, state, comment, problems, warnings}``: ``manage`` tells whether ansible.builtin.user may create
    or update the account (only one that is missing or that stage 6 created: its comment is RUN_USER_COMMENT);
    ``problems`` (sentences naming the node) stop every node before the first change.
    """
    if not isinstance(context, Mapping):
        raise AnsibleFilterError('numa_bind_run_user expects a dict as its context, got %s' % type(context).__name__)
    name = context.get('run_user')
    existing = context.get('existing', 'refuse')
    create = context.get('create', True)
    create = create if isinstance(create, bool) else str(create).lower() in ('1', 'true', 'yes', 'on')
    groups = context.get('groups')
    entry = (passwd or {}).get(name) if isinstance(passwd, Mapping) else None
    plan = {'manage': False, 'state': None, 'comment': RUN_USER_COMMENT, 'problems': [], 'warnings': []}
    if not entry:
        plan['state'] = 'absent'
        if create:
            plan['manage'] = True
        else:
            plan['problems'].append('%s: the run user %s does not exist and numa_bind_run_user_create is false: create the '
                                    'account, or set numa_bind_run_user_create: true' % (host, name))
        return plan
    if isinstance(entry[0], (list, tuple)):  # several entries of one name (files and LDAP): the first one counts
        entry = entry[0]
    fields = list(entry) + [''] * 6
    uid, gid, comment, shell = fields[1], fields[2], fields[3], fields[5]
    plan['account'] = {'uid': uid, 'home': fields[4], 'shell': shell}
    ours = comment.strip() == RUN_USER_COMMENT
    plan['state'] = 'created by stage 6' if ours else (
        'existing, used as it is' if existing == 'use' else 'existing, not created by stage 6')
    if str(uid).strip() == '0':
        plan['problems'].append('%s: the run user %s may not run the ranks: it has uid 0 (root), so the code of every rank '
                                'would run as root. Choose another account for numa_bind_run_user' % (host, name))
        return plan
    if groups is None:
        plan['warnings'].append('%s: the groups of the run user %s could not be listed (getent group), so its membership '
                                'of %s was not checked' % (host, name, ', '.join(PRIVILEGED_GROUPS)))
    privileged = _member_of(name, gid, groups)
    if privileged:
        plan['problems'].append(
            "%s: the run user %s may not run the ranks: it is in the group%s %s, which give%s root or root's data, so the "
            'code of every rank could act as root. Choose another account for numa_bind_run_user, or take %s out of %s'
            % (host, name, 's' if len(privileged) > 1 else '', ', '.join(privileged), '' if len(privileged) > 1 else 's',
               name, 'those groups' if len(privileged) > 1 else 'that group'))
        return plan
    if ours:
        plan['manage'] = bool(create)
    elif existing != 'use':
        plan['problems'].append(
            "%s: the run user %s already exists (uid %s, shell %s, comment %r) and stage 6 did not create it (its comment "
            "is not %r): making it the run user would set its shell to /sbin/nologin and its comment. Choose an unused "
            "name for numa_bind_run_user (default npuops), or set numa_bind_run_user_existing: use to run the ranks as "
            "%s exactly as it is" % (host, name, uid, shell or 'none', comment, RUN_USER_COMMENT, name))
    return plan


def run_user_home(plan):
    """The home directory of a run user stage 6 created and may manage, to read with the files of the node step; None
    otherwise (a missing account is created by ansible.builtin.user, another one is not touched)."""
    if not isinstance(plan, Mapping) or not plan.get('manage') or plan.get('state') != 'created by stage 6':
        return None
    home = (plan.get('account') or {}).get('home')
    return home if isinstance(home, str) and home.startswith('/') else None


def run_user_in_place(plan, shell, home_stat):
    """Whether ansible.builtin.user (system, the shell, the comment, create_home) would leave the run user as it is: an
    account stage 6 created (so its comment is ours) with that shell and an existing home directory."""
    if run_user_home(plan) is None or (plan.get('account') or {}).get('shell') != shell:
        return False
    return isinstance(home_stat, Mapping) and bool(home_stat.get('exists')) and bool(home_stat.get('isdir'))


def _launcher_failed(check, user):
    """True when the launcher test ran and did not print the run user."""
    if not isinstance(check, Mapping) or 'rc' not in check or check.get('skipped'):
        return False
    return check.get('rc') != 0 or (check.get('stdout') or '').strip() != user


def numa_bind_restore(written, check, user):
    """What to undo when the launcher test failed: the map, the launcher, the launch file and npu-launch this run
    replaced or created.

    ``written`` is ``{map: result, launcher: result, launch: result, launch_script: result}`` (the last two only when
    stage 6 writes them), the registered results of the tasks
    (copy/template with ``backup: true``). Returns ``[{path, backup, action, mode}]``: ``restore`` from the backup the task made, or
    ``remove`` a file that did not exist before; empty when the test passed or did not run.
    """
    if not _launcher_failed(check, user):
        return []
    if not isinstance(written, Mapping):
        raise AnsibleFilterError('numa_bind_restore expects {map: result, launcher: result}, got %s'
                                 % type(written).__name__)
    undo = []
    for kind in FILE_KINDS:
        result = written.get(kind)
        if not isinstance(result, Mapping) or not result.get('changed') or not result.get('dest'):
            continue
        backup = result.get('backup_file') or None
        undo.append({'path': result['dest'], 'backup': backup, 'action': 'restore' if backup else 'remove',
                     'mode': FILE_MODES[kind]})
    return undo


def _undone_text(restored):
    parts = []
    for item in restored or []:
        if item.get('action') == 'restore':
            parts.append('%s put back from %s' % (item.get('path'), item.get('backup')))
        else:
            parts.append('%s removed (it did not exist before)' % item.get('path'))
    return '. The files of this run were undone: %s' % '; '.join(parts) if parts else ''


def _compact(cpus):
    cpus = sorted(set(cpus))
    parts = []
    start = prev = None
    for cpu in cpus:
        if prev is not None and cpu == prev + 1:
            prev = cpu
            continue
        if start is not None:
            parts.append(str(start) if start == prev else '%d-%d' % (start, prev))
        start = prev = cpu
    if start is not None:
        parts.append(str(start) if start == prev else '%d-%d' % (start, prev))
    return ','.join(parts)


def numa_bind_map(numa, npus_per_node):
    """The binding of NPUs 0..npus_per_node-1 from a numa_info result: [{npu, numa_node, cpus}] for each known NPU."""
    if not isinstance(numa, Mapping):
        raise AnsibleFilterError('numa_bind_map expects the result of npuops.ascend.numa_info, got %s' % type(numa).__name__)
    count = _whole(npus_per_node)
    if count is None or count < 1:
        raise AnsibleFilterError('numa_bind_map: npus_per_node %r is not a number of NPUs above 0' % (npus_per_node,))
    per_npu = numa.get('npu') or numa.get('devices') or {}
    result = []
    for npu in range(count):
        entry = per_npu.get(str(npu)) or per_npu.get(npu) or {}
        cpus = [int(cpu) for cpu in entry.get('cpus') or []]
        if entry.get('numa_node') is None or not cpus:
            continue
        result.append({'npu': npu, 'numa_node': int(entry['numa_node']), 'cpus': _compact(cpus)})
    return result


def numa_read_failed(numa):
    """True when a numa_info result (registered with failed_when: false, which resets 'failed') did not read the layout."""
    if not isinstance(numa, Mapping) or numa.get('skipped'):
        return False
    return bool(numa.get('failed')) or 'npu' not in numa


def _governors(result):
    """The set of governors after the cpu_governor task (the prediction in check mode); None when it did not run."""
    if not isinstance(result, Mapping) or result.get('skipped') or 'after' not in result:
        return None
    return sorted(set((result.get('after') or {}).values()))


def numa_bind_findings(binding, host, context):
    """Findings of one node: the map covers every NPU, the governor, swappiness and THP, the launcher check."""
    if not isinstance(context, Mapping):
        raise AnsibleFilterError('numa_bind_findings expects a dict as its context, got %s' % type(context).__name__)
    binding = binding or []
    found = []
    count = _whole(context.get('npus_per_node')) or 0
    numa = context.get('numa') or {}
    have = dict((entry['npu'], entry) for entry in binding)
    if numa_read_failed(numa):
        found.append(finding(host, None, 'numa_map', None, 'the NUMA layout',
                             'the NUMA layout could not be read, so no NPU is bound and stage 6 changed nothing on the '
                             'node: %s' % numa.get('msg', 'numa_info failed')))
    else:
        per_npu = (numa.get('npu') or {}) if isinstance(numa, Mapping) else {}
        for npu in range(count):
            if npu in have:
                continue
            entry = per_npu.get(str(npu)) or {}
            affinity = entry.get('cpu_affinity')
            if affinity:
                why = 'npu-smi info -t topo shows CPU affinity %r, which is on no NUMA node of numactl -H' % affinity
                fix = 'Check npu-smi and the driver'
            elif entry and 'cpu_affinity' in entry:
                # the row exists without an affinity: the topology of this product has no CPU Affinity column (A3)
                why = 'npu-smi info -t topo of this node has no CPU Affinity column, as on an A3 node'
                fix = 'The collection does not bind the NPUs of such a product yet; skip stage 6 (--skip-tags stage6)'
            else:
                why = 'npu-smi info -t topo lists no CPU affinity for it'
                fix = 'Check npu-smi and the driver'
            found.append(finding(host, npu, 'numa_map', None, 'a NUMA node and CPUs',
                                 'not in the binding map (%s); ranks on this NPU would run unbound. %s' % (why, fix)))
    if context.get('governor_enabled', True):
        want = context.get('governor')
        seen = _governors(context.get('governor_result'))
        result = context.get('governor_result') or {}
        if isinstance(result, Mapping) and result and not result.get('skipped') and (
                result.get('failed') or 'after' not in result):
            # registered with failed_when: false, a failed cpu_governor has failed=false but no 'after'
            found.append(finding(host, None, 'governor', None, want,
                                 'the CPU governor could not be set to %s: %s' % (want, result.get('msg'))))
        elif seen is not None and seen != [want]:
            found.append(finding(host, None, 'governor', ','.join(seen), want,
                                 'CPU governor is %s, not %s' % (', '.join(seen), want)))
    severity = context.get('host_severity', WARN)
    host_info = context.get('host_info') or {}
    if severity != 'ignore' and isinstance(host_info, Mapping) and not host_info.get('skipped'):
        limit = _whole(context.get('max_swappiness'))
        swappiness = host_info.get('swappiness')
        if swappiness is None:
            found.append(finding(host, None, 'swappiness', None, '<= %s' % limit,
                                 '/proc/sys/vm/swappiness could not be read', WARN))
        elif limit is not None and int(swappiness) > limit:
            found.append(finding(host, None, 'swappiness', swappiness, '<= %d' % limit,
                                 'vm.swappiness is %s, above %d: the kernel may swap out host memory of the training '
                                 'processes; set it with sysctl (vm.swappiness=%d)' % (swappiness, limit, limit), severity))
        want_thp = context.get('thp_mode', 'never')
        thp = host_info.get('transparent_hugepage')
        if want_thp != 'any' and thp != want_thp:
            found.append(finding(host, None, 'transparent_hugepage', thp, want_thp,
                                 'transparent hugepages are %s, not %s (/sys/kernel/mm/transparent_hugepage/enabled)'
                                 % (thp if thp else 'unknown', want_thp), severity))
    check = context.get('launcher_check') or {}
    user = context.get('run_user')
    if _launcher_failed(check, user):
        out = (check.get('stdout') or '').strip()
        found.append(finding(host, None, 'launcher', out or None, user,
                             '%s did not run a test command as %s (rc=%s): %s%s' % (
                                 context.get('launcher_path'), user, check.get('rc'),
                                 (check.get('stderr') or out or 'no output').strip(),
                                 _undone_text(context.get('restored')))))
    plan = context.get('run_user_plan') or {}
    if isinstance(plan, Mapping):
        for text in plan.get('warnings') or []:
            found.append({'host': host, 'device': None, 'check': 'run_user', 'value': None, 'expected': None,
                          'severity': WARN, 'msg': text})
    return found


def _values(sample):
    """{npu: aicore %} of one npu_info result with usages."""
    out = {}
    for key, device in ((sample or {}).get('devices') or {}).items():
        chips = ((device or {}).get('usages') or {}).get('chips') or []
        values = [chip.get('aicore_usage_pct') for chip in chips if isinstance(chip.get('aicore_usage_pct'), (int, float))]
        if values:
            out[int(key)] = sum(values) / float(len(values))
    return out


def aicore_stats(samples):
    """Mean and (population) variance of the AI Core usage per NPU over npu_info samples: {npu: {mean, variance, samples}}."""
    if isinstance(samples, Mapping):
        samples = samples.get('results') or []
    series = {}
    for sample in samples or []:
        if not isinstance(sample, Mapping) or sample.get('failed') or sample.get('skipped'):
            continue
        for npu, value in _values(sample).items():
            series.setdefault(npu, []).append(value)
    stats = {}
    for npu in sorted(series):
        values = series[npu]
        mean = sum(values) / len(values)
        variance = sum((value - mean) ** 2 for value in values) / len(values)
        stats[npu] = {'mean': round(mean, 2), 'variance': round(variance, 2), 'samples': len(values)}
    return stats


# ---- what the stage action npuops.ascend.stage_numa decides (plugins/action/stage_numa.py) -----------------------

# the tags of the parts of stage 6: --skip-tags with one of them leaves the part out, as when each part was a task of
# its own (the record needs the findings, so a skipped record also leaves out the node's JSON report)
PART_TAGS = {
    'settings': ('numa_bind_validate',),
    'host': ('numa_bind_host',),
    'run_user': ('numa_bind_user', 'numa_bind_launcher'),
    'layout_record': ('numa_bind_gate',),
    'aicore': ('numa_bind_aicore',),
    'governor': ('numa_bind_governor',),
    'user': ('numa_bind_user', 'numa_bind_launcher'),
    'launcher': ('numa_bind_launcher',),
    'record': ('numa_bind_report', 'numa_bind_gate'),
    'report': ('numa_bind_report', 'numa_bind_gate'),
}


def skipped_parts(skip_tags):
    """The parts of stage 6 that ``--skip-tags`` leaves out, sorted."""
    skip = set(skip_tags or ())
    return sorted(part for part, tags in PART_TAGS.items() if skip & set(tags))


def settings_failure(host, problems):
    """The message that stops every node when the settings of stage 6 are not usable; None when they are."""
    if not problems:
        return None
    return ('%s: the stage 6 settings are not usable (%d problem(s)), so nothing was changed on any node: %s'
            % (host, len(problems), ' | '.join(problems)))


def run_user_failure(plan):
    """The message that stops every node when the run user may not be taken over; None when it may."""
    problems = (plan or {}).get('problems') or []
    if not problems:
        return None
    return '%s. Nothing was changed on any node.' % ' | '.join(problems)


def getent_table(result, database):
    """The table a getent module result holds (``getent_<database>``); None when the read failed or holds none."""
    if not isinstance(result, Mapping) or result.get('failed'):
        return None
    return (result.get('ansible_facts') or {}).get('getent_%s' % database)


def map_document(settings, binding):
    """The binding map the launcher reads (the content of numa_bind_map_path), in the order it is written."""
    return {
        'managed_by': 'npuops.ascend (role numa_bind, stage 6)',
        'method': settings['method'],
        'run_user': settings['run_user'],
        'visible_devices': bool(settings['visible_devices']),
        'npus_per_node': _whole(settings['npus_per_node']),
        'npus': binding,
    }


def map_dirs(map_path, launcher_path, *others):
    """The directories of the map, the launcher and ``others`` (the launch file, npu-launch), each once, in that
    order."""
    out = []
    for path in (map_path, launcher_path) + others:
        directory = path.rsplit('/', 1)[0] or '/'
        if directory not in out:
            out.append(directory)
    return out


def launcher_test_due(verify, check_mode, written):
    """Whether the launcher test runs: when asked, except in check mode after a change it could not see (the user, the
    map or the launcher would change, so the node does not have what the test would run)."""
    if not verify:
        return False
    return not (check_mode and any(bool((result or {}).get('changed')) for result in written))


def launcher_test_text(check):
    """The record's ``launcher_test``: ``runs as <user>``, ``skipped`` or ``failed``."""
    check = check if isinstance(check, Mapping) else {}
    if check.get('rc', 1) == 0:
        return 'runs as %s' % (check.get('stdout') or '').strip()
    return 'skipped' if check.get('skipped') or 'rc' not in check else 'failed'


def changed_parts(parts):
    """The names of the parts (``[(name, result)]``) whose result says it changed, in their order."""
    return [name for name, result in parts if isinstance(result, Mapping) and result.get('changed')]


def _unique_values(mapping):
    out = []
    for value in (mapping or {}).values():
        if value not in out:
            out.append(value)
    return out


def record_files(results, sums, paths):
    """The record's ``files``: one ``{kind, path, checksum, owner, group, mode}`` per file of FILE_KINDS (map,
    launcher, launch, launch_script) the node step wrote, found in place, or would write in a dry run - root's, with
    the kind's mode (FILE_MODES) and the SHA-1 of the text stage 6 put there (``sums``, else the checksum copy or
    template returned, else null when neither is known).

    ``results`` holds the parts of the node step (a kind's result is ``{}`` when it did not run: a skip tag, or no
    per-rank launch) and ``restored``; ``paths`` is ``{kind: path}`` from the settings. A part that failed or was
    skipped, and a file the run undid after a failed launcher test (put back from its backup or removed), are left
    out: what is there is not what stage 6 wrote.
    """
    results = results if isinstance(results, Mapping) else {}
    sums = sums if isinstance(sums, Mapping) else {}
    paths = paths if isinstance(paths, Mapping) else {}
    undone = set(item.get('path') for item in results.get('restored') or [] if isinstance(item, Mapping))
    out = []
    for kind in FILE_KINDS:
        result, path = results.get(kind), paths.get(kind)
        if not isinstance(result, Mapping) or not result or result.get('failed') or result.get('skipped'):
            continue
        if not path or path in undone or result.get('dest') in undone:
            continue
        out.append({'kind': kind, 'path': path, 'checksum': sums.get(kind) or result.get('checksum') or None,
                    'owner': FILE_OWNER, 'group': FILE_OWNER, 'mode': FILE_MODES[kind]})
    return out


def node_data(binding, results):
    """The ``data`` of the node's record of stage 6: what the report of the PoD reads.

    ``results`` holds the node's parts: ``governor``, ``host_info``, ``launcher_check``, ``user``, ``map``, ``launcher``
    (results; ``{}`` when a part did not run), ``restored`` (numa_bind_restore's list) and ``aicore`` (``{}`` when not
    sampled), and for ``files`` (:func:`record_files`) ``sums`` and ``paths``, ``{kind: SHA-1}`` and ``{kind: path}``
    of the files the node step handles (absent when it handled none).
    """
    governor = results.get('governor') or {}
    host_info = results.get('host_info') or {}
    written = [results.get(kind) or {} for kind in FILE_KINDS]
    data = {
        'npus': binding,
        'governor_before': _unique_values(governor.get('before')),
        'governor_after': _unique_values(governor.get('after')),
        'swappiness': host_info.get('swappiness', '-'),
        'transparent_hugepage': host_info.get('transparent_hugepage', '-'),
        'launcher_test': launcher_test_text(results.get('launcher_check')),
        'changed': changed_parts([('user', results.get('user')), ('map', written[0]), ('launcher', written[1]),
                                  ('launch', written[2]), ('launch_script', written[3]), ('governor', governor)]),
        'undone': [item['path'] for item in results.get('restored') or []],
        'backups': [result['backup_file'] for result in written if 'backup_file' in result],
        'aicore': results.get('aicore') or {},
        'files': record_files(results, results.get('sums'), results.get('paths')),
    }
    if results.get('launch_addr'):
        # the address the other nodes reach this node at: the master address of a job whose first node this is
        data['launch_addr'] = results['launch_addr']
    return data


def node_report(host, run_id, check_mode, settings, binding, results, findings):
    """The node's report of stage 6 (``stage6-numa_bind/<node>.json``); ``results`` as for node_data."""
    governor = results.get('governor') or {}
    host_info = results.get('host_info') or {}
    written = dict((kind, results.get(kind) or {}) for kind in ('user',) + FILE_KINDS)
    check = results.get('launcher_check') or {}
    report = {
        'host': host,
        'run': run_id,
        'check_mode': bool(check_mode),
        'map_path': settings['map_path'],
        'launcher_path': settings['launcher_path'],
        'method': settings['method'],
        'run_user': settings['run_user'],
        'npus': binding,
        'governor': {
            'wanted': settings['governor'] if settings['governor_enabled'] else None,
            'before': _unique_values(governor.get('before')),
            'after': _unique_values(governor.get('after')),
            'changed_cpus': governor.get('changed_cpus', ''),
        },
        'swappiness': host_info.get('swappiness'),
        'transparent_hugepage': host_info.get('transparent_hugepage'),
        'changed': {
            'user': bool(written['user'].get('changed', False)),
            'map': bool(written['map'].get('changed', False)),
            'launcher': bool(written['launcher'].get('changed', False)),
            'governor': bool(governor.get('changed', False)),
        },
        'launcher_check': check.get('stdout'),
        'run_user_account': (results.get('run_user_plan') or {}).get('state'),
        'backups': {'map': written['map'].get('backup_file'), 'launcher': written['launcher'].get('backup_file')},
        'restored': results.get('restored') or [],
        'aicore': results.get('aicore') or None,
        'findings': findings,
    }
    document = results.get('launch_document')
    if document is not None:
        # the per-rank launch stage 6 wrote beside the map (numa_bind_launch_path) and npu-launch
        report['launch_path'] = settings.get('launch_path')
        report['launch_script_path'] = settings.get('launch_script_path')
        for kind in ('launch', 'launch_script'):
            report['changed'][kind] = bool(written[kind].get('changed', False))
            report['backups'][kind] = written[kind].get('backup_file')
        report['launch'] = document
    return report
