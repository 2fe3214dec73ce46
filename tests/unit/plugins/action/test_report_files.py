"""npuops.ascend.report_files: the helpers, and the action run by ansible-playbook for hosts it must not connect to."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import textwrap

import pytest

from ansible_collections.npuops.ascend.plugins.action import report_files

COLLECTIONS_ROOT = os.path.abspath(os.path.join(os.path.dirname(report_files.__file__), '..', '..', '..', '..', '..'))
ANSIBLE_PLAYBOOK = shutil.which('ansible-playbook', path=os.path.dirname(sys.executable)) or shutil.which('ansible-playbook')


def entries(*pairs):
    return [dict(name=name, content=content) for name, content in pairs]


# ---- helpers ---------------------------------------------------------------------------------------

@pytest.mark.parametrize('value, expected', [('0644', 0o644), ('644', 0o644), ('0600', 0o600), (0o640, 0o640), ('2775', 0o2775)])
def test_file_mode_accepts_octal(value, expected):
    assert report_files.file_mode(value, 'mode') == expected


@pytest.mark.parametrize('value', ['0648', 'rw-r--r--', '', 'u+rw', True, '99999', -1, 0o17777])
def test_file_mode_refuses_what_is_not_an_octal_mode(value):
    with pytest.raises(ValueError, match='mode'):
        report_files.file_mode(value, 'mode')


@pytest.mark.parametrize('name', ['', '.', '..', 'a/b.json', '../escape.json', '/etc/passwd', 'nul\0.json'])
def test_check_files_refuses_a_name_outside_the_directory(name):
    problems = report_files.check_files(entries((name, 'x')))
    assert len(problems) == 1 and 'plain file name' in problems[0]


def test_check_files_refuses_a_name_given_twice_and_content_that_is_not_text():
    problems = report_files.check_files(entries(('a.json', 'x'), ('a.json', 'y'), ('b.json', {'k': 1}), ('c.json', None)))
    assert problems == [
        "files[1].name 'a.json' is given twice",
        'files[2].content (b.json) must be text, got dict; use to_nice_json for data',
        'files[3].content (c.json) must be text, got NoneType; use to_nice_json for data',
    ]


def test_check_files_accepts_plain_names():
    assert report_files.check_files(entries(('node01.json', '{}\n'), ('node01.md', '# x\n'), ('.hidden', ''))) == []


def test_write_reports_creates_the_parents_writes_every_file_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / 'run' / 'stage0-health_check'
    paths = report_files.write_reports(str(target), entries(('a.json', '{"a": 1}\n'), ('b.md', 'ü €\n')), 0o640, 0o750)
    assert paths == [str(target / 'a.json'), str(target / 'b.md')]
    assert (target / 'a.json').read_text() == '{"a": 1}\n'
    assert (target / 'b.md').read_bytes() == 'ü €\n'.encode()
    assert stat.S_IMODE(os.stat(target / 'a.json').st_mode) == 0o640
    assert sorted(os.listdir(target)) == ['a.json', 'b.md']


def test_write_reports_replaces_an_existing_file_whole(tmp_path):
    (tmp_path / 'a.json').write_text('old and much longer content\n')
    report_files.write_reports(str(tmp_path), entries(('a.json', 'new\n')))
    assert (tmp_path / 'a.json').read_text() == 'new\n'


def test_write_reports_on_a_file_in_place_of_the_directory_raises(tmp_path):
    (tmp_path / 'taken').write_text('a file')
    with pytest.raises(OSError):
        report_files.write_reports(str(tmp_path / 'taken'), entries(('a.json', 'x')))


# ---- through ansible-playbook ----------------------------------------------------------------------
# The hosts point at a closed port of the loopback address: a task that tried to connect would fail.

INVENTORY = """\
[pod]
node01
node02
node03

[pod:vars]
ansible_host=127.0.0.1
ansible_port=1
ansible_connection=ssh
ansible_ssh_common_args=-o ConnectTimeout=2
"""


def run_playbook(tmp_path, tasks, *extra):
    (tmp_path / 'templates').mkdir(exist_ok=True)
    (tmp_path / 'templates' / 'node.md.j2').write_text('# {{ inventory_hostname }}\n\n{% for i in range(2) %}\nline {{ i }}\n{% endfor %}\n')
    (tmp_path / 'inventory.ini').write_text(INVENTORY)
    (tmp_path / 'play.yml').write_text(textwrap.dedent("""\
        - name: Reports
          hosts: pod
          gather_facts: false
          tasks:
        """) + textwrap.indent(textwrap.dedent(tasks), '    '))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT, ANSIBLE_HOST_KEY_CHECKING='false',
               ANSIBLE_STDOUT_CALLBACK='ansible.builtin.default', ANSIBLE_CALLBACK_RESULT_FORMAT='json',
               ANSIBLE_RETRY_FILES_ENABLED='false', ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0')
    proc = subprocess.run([ANSIBLE_PLAYBOOK, '-i', str(tmp_path / 'inventory.ini'), str(tmp_path / 'play.yml')] + list(extra),
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120, check=False)
    return proc, proc.stdout + proc.stderr


def recap(output):
    """{host: {ok, changed, unreachable, failed, ...}} from the PLAY RECAP lines."""
    stats = {}
    # only the recap's own lines: stderr after it may hold other lines with a colon (a library's deprecation warning)
    for line in output[output.index('PLAY RECAP'):].splitlines()[1:]:
        match = re.match(r'^(\S+)\s+:\s+((?:[a-z]+=\d+\s*)+)$', line)
        if match:
            stats[match.group(1)] = dict((k, int(v)) for k, v in (pair.split('=') for pair in match.group(2).split()))
    return stats


@pytest.mark.skipif(ANSIBLE_PLAYBOOK is None, reason='ansible-playbook is not installed')
@pytest.mark.parametrize('check', [False, True], ids=['run', 'check_mode'])
def test_playbook_writes_every_node_report_without_connecting_and_reports_no_change(tmp_path, check):
    out_dir = tmp_path / 'reports' / 'run1' / 'stage0'
    tasks = """\
        - name: Write the reports of this node
          npuops.ascend.report_files:
            dir: "%s"
            files:
              - name: "{{ inventory_hostname }}.json"
                content: "{{ {'host': inventory_hostname, 'n': [1, 2]} | to_nice_json }}\\n"
              - name: "{{ inventory_hostname }}.md"
                content: "{{ lookup('ansible.builtin.template', 'node.md.j2') }}"
        """ % out_dir
    proc, output = run_playbook(tmp_path, tasks, '-v', *(['--check'] if check else []))
    assert proc.returncode == 0, output[-3000:]
    stats = recap(output)
    assert sorted(stats) == ['node01', 'node02', 'node03']
    assert all(s['changed'] == 0 and s['unreachable'] == 0 and s['failed'] == 0 and s['ok'] == 1 for s in stats.values())
    assert sorted(os.listdir(out_dir)) == sorted('node0%d.%s' % (n, ext) for n in (1, 2, 3) for ext in ('json', 'md'))
    assert json.loads((out_dir / 'node02.json').read_text()) == {'host': 'node02', 'n': [1, 2]}
    assert (out_dir / 'node02.json').read_text().endswith(']\n}\n')
    # the same bytes as the template module would write: its trailing newline kept, the loop's lines as rendered
    assert (out_dir / 'node03.md').read_text() == '# node03\n\nline 0\nline 1\n'
    assert json.dumps([str(out_dir / 'node01.json'), str(out_dir / 'node01.md')]).strip('[]') in output


@pytest.mark.skipif(ANSIBLE_PLAYBOOK is None, reason='ansible-playbook is not installed')
def test_playbook_with_a_bad_file_name_fails_before_writing_anything(tmp_path):
    out_dir = tmp_path / 'reports'
    tasks = """\
        - name: Write a report with a path in its name
          npuops.ascend.report_files:
            dir: "%s"
            files:
              - name: good.json
                content: "{}\\n"
              - name: ../escape.json
                content: "{}\\n"
          run_once: true
        """ % out_dir
    proc, output = run_playbook(tmp_path, tasks)
    assert proc.returncode != 0
    msg = output
    assert 'nothing was written' in msg and "files[1].name must be a plain file name" in msg and '../escape.json' in msg
    assert not out_dir.exists() and not (tmp_path / 'escape.json').exists()


@pytest.mark.skipif(ANSIBLE_PLAYBOOK is None, reason='ansible-playbook is not installed')
def test_playbook_with_an_unwritable_directory_says_where_and_what_to_check(tmp_path):
    (tmp_path / 'taken').write_text('a file, not a directory')
    tasks = """\
        - name: Write into a path that is a file
          npuops.ascend.report_files:
            dir: "%s"
            files:
              - name: a.json
                content: "{}\\n"
            mode: "0640"
          run_once: true
        """ % (tmp_path / 'taken' / 'sub')
    proc, output = run_playbook(tmp_path, tasks)
    assert proc.returncode != 0
    msg = output
    assert 'could not write the reports to %s on the controller' % (tmp_path / 'taken' / 'sub') in msg
    assert 'gate_report_dir' in msg


@pytest.mark.skipif(ANSIBLE_PLAYBOOK is None, reason='ansible-playbook is not installed')
def test_playbook_refuses_an_unknown_option_and_a_mode_that_is_not_octal(tmp_path):
    tasks = """\
        - name: Unknown option
          npuops.ascend.report_files:
            dir: "%s"
            files: []
            owner: root
          run_once: true
          ignore_errors: true
        - name: Mode in letters
          npuops.ascend.report_files:
            dir: "%s"
            files: []
            mode: rw-r--r--
          run_once: true
          ignore_errors: true
        """ % (tmp_path / 'a', tmp_path / 'b')
    proc, output = run_playbook(tmp_path, tasks)
    assert proc.returncode == 0, output[-3000:]
    first, second = output.split('TASK [Mode in letters]')
    assert 'Unsupported parameters' in first and 'owner' in first
    assert 'mode must be an octal mode' in second
    assert not (tmp_path / 'a').exists() and not (tmp_path / 'b').exists()
