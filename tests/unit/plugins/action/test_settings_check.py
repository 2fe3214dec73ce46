"""npuops.ascend.settings_check: ansible-core's argument-spec check of several roles in one task - every problem of every
role said at once with Ansible's own words, role defaults in scope checked too, a role or entry point that does not
exist refused."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from ansible_collections.npuops.ascend.plugins.action import settings_check as action

COLLECTIONS_ROOT = os.path.abspath(os.path.join(os.path.dirname(action.__file__), '..', '..', '..', '..', '..'))
ANSIBLE_PLAYBOOK = shutil.which('ansible-playbook', path=os.path.dirname(sys.executable)) or shutil.which('ansible-playbook')
pytestmark = pytest.mark.skipif(ANSIBLE_PLAYBOOK is None, reason='ansible-playbook is not installed')

PLAY = """\
- name: Settings
  hosts: pod
  gather_facts: false
  tasks:
    - name: Check the options of three stages
      npuops.ascend.settings_check:
        roles: %s
      register: checked

    - name: Bring the defaults of stage 8 into the play
      ansible.builtin.import_role:
        name: npuops.ascend.io_check
        tasks_from: validate
        rolespec_validate: false

    - name: Show what was checked
      ansible.builtin.debug:
        msg: "CHECKED {{ checked.checked | join(',') }}"
"""
ROLES = ('[{role: hccl_bench, entry_point: validate}, {role: io_check, entry_point: validate}, '
         '{role: npuops.ascend.regression, entry_point: validate}]')


def run(tmp_path, roles=ROLES, *extra):
    (tmp_path / 'inventory.ini').write_text(textwrap.dedent("""\
        [pod]
        node01
        node02

        [pod:vars]
        ansible_connection=local
        ansible_python_interpreter=%s
        """) % sys.executable)
    (tmp_path / 'play.yml').write_text(PLAY % roles)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT, ANSIBLE_RETRY_FILES_ENABLED='false',
               ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0', ANSIBLE_STDOUT_CALLBACK='default')
    proc = subprocess.run([ANSIBLE_PLAYBOOK, '-i', str(tmp_path / 'inventory.ini'), str(tmp_path / 'play.yml')] + list(extra),
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=180, check=False)
    return proc, proc.stdout + proc.stderr


def test_good_options_pass_in_one_task_per_node(tmp_path):
    proc, out = run(tmp_path)
    assert proc.returncode == 0, out
    assert out.count('CHECKED hccl_bench (validate),io_check (validate),regression (validate)') == 2


def test_every_problem_of_every_role_is_said_at_once_in_ansibles_words(tmp_path):
    proc, out = run(tmp_path, ROLES, '-e', 'hccl_bench_mode=mpi', '-e', 'io_check_seconds=abc',
                    '-e', '{"regression_tolerance_pct": "2%"}')
    assert proc.returncode == 2, out
    for text in ('Validation of arguments failed, nothing was changed: hccl_bench (validate): value of hccl_bench_mode must '
                 'be one of: hccl_test, torch, got: mpi',
                 "io_check (validate): argument 'io_check_seconds' is of type str and we were unable to convert to int",
                 "regression (validate): argument 'regression_tolerance_pct' is of type str"):
        assert text in out, (text, out)
    assert 'CHECKED' not in out


def test_a_role_default_in_scope_is_checked_too(tmp_path):
    # a default of io_check that the inventory templates into a bad value is caught, as Ansible's own check would
    proc, out = run(tmp_path, ROLES, '-e', 'io_check_seconds={{ "many" }}')
    assert proc.returncode == 2, out
    assert "argument 'io_check_seconds' is of type str and we were unable to convert to int" in out


@pytest.mark.parametrize('roles, said', [
    ('[{role: nosuchrole}]', 'cannot read the argument specs of role nosuchrole'),
    ('[{role: "../x"}]', "'../x' is not a role of the collection"),
    ('[{role: hccl_bench, entry_point: intent}]', "role hccl_bench has no entry point 'intent'"),
])
def test_a_role_or_entry_point_that_does_not_exist_is_refused(tmp_path, roles, said):
    proc, out = run(tmp_path, roles)
    assert proc.returncode == 2, out
    assert said in out


def test_the_spec_path_is_inside_the_collection():
    assert action.spec_path('numa_bind').endswith(os.path.join('roles', 'numa_bind', 'meta', 'argument_specs.yml'))
    for bad in ('', '.hidden', 'a/b'):
        with pytest.raises(ValueError):
            action.spec_path(bad)
