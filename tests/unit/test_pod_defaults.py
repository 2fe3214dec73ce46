# Copyright: (c) 2026, npuops maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/pod_defaults: the PoD-wide npuops_* defaults, defined once, reach the roles that depend on it, the inventory
and extra vars still override them, the dependency costs no task, and no role or playbook defaults them again."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULTS_FILE = os.path.join(REPO, 'roles', 'pod_defaults', 'defaults', 'main.yml')
ANSIBLE_PLAYBOOK = shutil.which('ansible-playbook', path=os.path.dirname(sys.executable)) or shutil.which('ansible-playbook')

with open(DEFAULTS_FILE, encoding='utf-8') as _handle:
    POD_DEFAULTS = yaml.safe_load(_handle)
POD_VARIABLES = sorted(name for name in POD_DEFAULTS if name.startswith('npuops_'))

# The one exception: a play's hosts keyword is templated before any role's defaults apply to the play's hosts, so the
# playbooks name the default of npuops_pod_group there themselves (checked against pod_defaults below).
HOSTS_LINE = re.compile(r'''^\s*(?:- )?hosts: "\{\{ npuops_pod_group \| default\('([^']*)'\) \}\}"\s*$''')
# the batch play of the change window: the nodes in failure-domain order when the first play cut them so, else the PoD
WINDOW_HOSTS_LINE = re.compile(r'''^\s*hosts: "\{\{ hostvars\['localhost'\]\.roce_lossless_window_order \| '''
                               r'''default\(npuops_pod_group \| default\('([^']*)'\), true\) \}\}"\s*$''')
# the stage plays of site.yml: the group its settings play makes of the nodes the run goes on with, on one of them in the
# PoD part of a run in parts (npuops_run_part, an extra var: a play's hosts are templated before any role default exists)
PART_HOSTS_LINE = re.compile(r'''^\s*hosts: (?:npuops_run_nodes(?:\[0\])?|"npuops_run_nodes\{\{ '\[0\]' if '''
                             r'''npuops_run_part \| default\('all'\) in \['pod', 'before'\] else '' \}\}")(\s+#.*)?\s*$''')
# the plays that end stage 4's PoD part of a run in parts: no host outside it
POD_PART_HOSTS_LINE = re.compile(r'''^\s*hosts: "\{\{ 'npuops_run_nodes(?:\[0\])?' if npuops_run_part \| default\('all'\) == 'pod' '''
                                 r'''else 'npuops_run_nodes:!npuops_run_nodes' \}\}"\s*$''')
# the settings play of site.yml: the PoD group, or its first node in the PoD parts (pod, and before of stage 4)
SETTINGS_HOSTS_LINE = re.compile(r'''^\s*hosts: "\{\{ npuops_pod_group \| default\('([^']*)'\) \}\}\{\{ '\[0\]' if '''
                                 r'''npuops_run_part \| default\('all'\) in \['pod', 'before'\] else '' \}\}"\s*$''')
# npuops_<x> | default( - not hostvars[...].npuops_<x> (another host's inventory value, without role defaults)
DEFAULTED = re.compile(r'(?<![\w.\]\'"])(npuops_[a-z0-9_]+)\s*\|\s*default\(')
USES = re.compile(r'\b((?:npuops|pod_defaults)_[a-z0-9_]+)\b')

STAGE_TASKS = """\
---
- name: Show the PoD-wide values
  ansible.builtin.debug:
    msg: "VALUES {{ inventory_hostname }} {{ npuops_pod_group }} {{ npuops_npus_per_node }} {{ npuops_mtu }}
      {{ pod_defaults_hccl_rdma_tc }} {{ pod_defaults_devices | length }}"
"""

PLAYBOOK = """\
- name: With roles
  hosts: pod
  gather_facts: false
  roles:
    - role: stage
- name: With import_role
  hosts: pod
  gather_facts: false
  tasks:
    - name: Import the stage role
      ansible.builtin.import_role:
        name: stage
- name: With include_role
  hosts: pod
  gather_facts: false
  tasks:
    - name: Include the stage role
      ansible.builtin.include_role:
        name: stage
"""


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(text)


def _run(tmp_path, dependency=True, extra=None):
    base = str(tmp_path)
    _write(os.path.join(base, 'inventory', 'hosts.yml'), textwrap.dedent("""\
        pod:
          hosts:
            n1: {ansible_connection: local, ansible_python_interpreter: "%s"}
            n2: {ansible_connection: local, ansible_python_interpreter: "%s"}
        """) % (sys.executable, sys.executable))
    _write(os.path.join(base, 'inventory', 'group_vars', 'pod.yml'), 'npuops_lossless_dscp: 10\n')
    _write(os.path.join(base, 'inventory', 'host_vars', 'n2.yml'), 'npuops_npus_per_node: 4\n')
    deps = '[npuops.ascend.pod_defaults]' if dependency else '[]'
    _write(os.path.join(base, 'roles', 'stage', 'meta', 'main.yml'), '---\ndependencies: %s\n' % deps)
    # without the dependency the role reads nothing of it: the same tasks, for the count of tasks only
    tasks = STAGE_TASKS if dependency else '---\n- name: Show\n  ansible.builtin.debug:\n    msg: "{{ inventory_hostname }}"\n'
    _write(os.path.join(base, 'roles', 'stage', 'tasks', 'main.yml'), tasks)
    _write(os.path.join(base, 'play.yml'), PLAYBOOK)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.environ['NPUOPS_COLLECTIONS_ROOT'], ANSIBLE_ROLES_PATH=os.path.join(
        base, 'roles'), ANSIBLE_RETRY_FILES_ENABLED='false', ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0')
    command = [ANSIBLE_PLAYBOOK, '-i', os.path.join(base, 'inventory', 'hosts.yml'), os.path.join(base, 'play.yml')]
    for key, value in (extra or {}).items():
        command += ['-e', '%s=%s' % (key, value)]
    proc = subprocess.run(command, cwd=base, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    return proc.stdout


def _values(output):
    return [line.split('VALUES ', 1)[1].strip().strip('"').split() for line in output.splitlines() if 'VALUES ' in line]


def _recap(output):
    return {m.group(1): int(m.group(2)) for m in re.finditer(r'^(\S+)\s+: ok=(\d+)', output, re.M)}


@pytest.mark.skipif(ANSIBLE_PLAYBOOK is None, reason='ansible-playbook is not installed')
def test_a_role_sees_the_defaults_and_the_inventory_overrides_them(tmp_path):
    output = _run(tmp_path)
    values = _values(output)
    # roles:, import_role and include_role, two nodes each
    assert len(values) == 6, output[-3000:]
    for host, group, npus, mtu, rdma_tc, devices in values:
        assert group == 'ascend_pod' and mtu == '9000'
        assert rdma_tc == '40'  # the derived HCCL_RDMA_TC follows the group_var DSCP 10, not the default 33
        assert (npus, devices) == (('8', '8') if host == 'n1' else ('4', '4'))  # the host_var of n2 wins


@pytest.mark.skipif(ANSIBLE_PLAYBOOK is None, reason='ansible-playbook is not installed')
def test_extra_vars_override_the_defaults(tmp_path):
    values = _values(_run(tmp_path, extra={'npuops_mtu': 4200, 'npuops_hccl_rdma_tc': 132}))
    assert len(values) == 6
    assert {(v[3], v[4]) for v in values} == {('4200', '132')}


@pytest.mark.skipif(ANSIBLE_PLAYBOOK is None, reason='ansible-playbook is not installed')
def test_the_dependency_adds_no_task(tmp_path):
    with_dependency = _run(tmp_path / 'with')
    without = _run(tmp_path / 'without', dependency=False)
    # one debug per play and node, and include_role's own task per node: the same with or without pod_defaults
    assert _recap(with_dependency) == _recap(without) == {'n1': 4, 'n2': 4}
    assert with_dependency.count('TASK [') == without.count('TASK [') == 4


def _sources():
    for top in ('roles', 'playbooks'):
        for folder, _dirs, files in os.walk(os.path.join(REPO, top)):
            if os.path.join('roles', 'pod_defaults') in folder:
                continue
            for name in sorted(files):
                if name.endswith(('.yml', '.yaml', '.j2')):
                    yield os.path.join(folder, name)


def test_pod_defaults_defines_each_variable_once_with_a_comment():
    with open(DEFAULTS_FILE, encoding='utf-8') as handle:
        lines = handle.read().splitlines()
    assert 'npuops_pod_group' in POD_VARIABLES and len(POD_VARIABLES) >= 20
    for index, line in enumerate(lines):
        match = re.match(r'^((?:npuops|pod_defaults)_[a-z0-9_]+):', line)
        if match:
            # each variable has its comment just above it (or shares that of the group it starts or continues)
            above = [text for text in lines[:index] if text and not text.startswith(' ')]
            assert above[-1].startswith('#') or re.match(r'^(npuops|pod_defaults)_', above[-1]), line


def test_no_role_or_playbook_defaults_a_pod_wide_variable_again():
    found = []
    for path in _sources():
        with open(path, encoding='utf-8') as handle:
            for number, line in enumerate(handle, 1):
                if PART_HOSTS_LINE.match(line) or POD_PART_HOSTS_LINE.match(line):
                    continue
                hosts = HOSTS_LINE.match(line) or WINDOW_HOSTS_LINE.match(line) or SETTINGS_HOSTS_LINE.match(line)
                if hosts:
                    assert hosts.group(1) == POD_DEFAULTS['npuops_pod_group'], '%s:%d' % (path, number)
                    continue
                for name in DEFAULTED.findall(line):
                    if name in POD_DEFAULTS:
                        found.append('%s:%d: %s' % (os.path.relpath(path, REPO), number, line.strip()))
    assert not found, 'defaulted again (roles/pod_defaults/defaults/main.yml has them):\n' + '\n'.join(found)


def test_every_role_that_reads_them_depends_on_pod_defaults():
    missing = []
    roles = os.path.join(REPO, 'roles')
    for role in sorted(os.listdir(roles)):
        if role == 'pod_defaults' or not os.path.isdir(os.path.join(roles, role)):
            continue
        used = set()
        for folder, _dirs, files in os.walk(os.path.join(roles, role)):
            for name in files:
                if name.endswith(('.yml', '.j2')) and name != 'argument_specs.yml':
                    with open(os.path.join(folder, name), encoding='utf-8') as handle:
                        text = handle.read()
                    # comments name the variables too: only what a template or a value reads counts
                    text = '\n'.join(line.split('#')[0] if not line.lstrip().startswith('#') else ''
                                     for line in text.splitlines())
                    used |= set(USES.findall(text)) & set(POD_DEFAULTS)
        with open(os.path.join(roles, role, 'meta', 'main.yml'), encoding='utf-8') as handle:
            deps = yaml.safe_load(handle).get('dependencies') or []
        names = [dep if isinstance(dep, str) else dep.get('role', dep.get('name')) for dep in deps]
        if used and 'npuops.ascend.pod_defaults' not in names:
            missing.append('%s reads %s' % (role, ', '.join(sorted(used))))
    assert not missing, missing
