"""The stage 6 launcher npu-bind (roles/numa_bind/templates/npu-bind.j2), rendered by Ansible's own templating and
run on this host.

The tests that drop to a run user need root (as on a node, where root starts the ranks); they run the command as the
existing unprivileged account ``nobody`` through the real util-linux ``taskset``. The rest runs as any user with stub
``taskset``/``numactl`` tools first in PATH.
"""

from __future__ import annotations

import fcntl
import json
import os
import pwd
import select
import shutil
import signal
import subprocess
import sys
import termios
import time

import pytest

templating = pytest.importorskip('ansible.template')
dataloader = pytest.importorskip('ansible.parsing.dataloader')

TEMPLATE = os.path.join(os.path.dirname(__file__), '..', '..', 'roles', 'numa_bind', 'templates', 'npu-bind.j2')
# the interpreter the run user's command uses: world-readable, unlike a virtualenv under a private home
PYTHON = '/usr/bin/python3'
RUN_USER = 'nobody'


def _compact(cpus):
    return ','.join(str(cpu) for cpu in sorted(cpus))


def launcher(tmp_path, method='numactl', run_user=RUN_USER, cpus='0-1'):
    """Render npu-bind for a map in tmp_path; returns the launcher's path."""
    map_path = tmp_path / 'numa-bind.json'
    map_path.write_text(json.dumps({'method': method, 'run_user': run_user, 'visible_devices': False, 'npus_per_node': 2,
                                    'npus': [{'npu': 0, 'numa_node': 0, 'cpus': cpus},
                                             {'npu': 1, 'numa_node': 0, 'cpus': cpus}]}))
    with open(TEMPLATE, encoding='utf-8') as handle:
        source = handle.read()
    templar = templating.Templar(loader=dataloader.DataLoader(),
                                 variables={'numa_bind_launcher_python': sys.executable, 'numa_bind_map_path': str(map_path)})
    path = tmp_path / 'npu-bind'
    path.write_text(templar.template(templating.trust_as_template(source)))
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def stub_tools(tmp_path):
    """A directory with stand-ins for taskset and numactl, for the dry runs (they are never run)."""
    tools = tmp_path / 'bin'
    tools.mkdir()
    for name in ('taskset', 'numactl'):
        (tools / name).write_text('#!/bin/sh\nexit 99\n')
        (tools / name).chmod(0o755)
    return str(tools)


def run(path, *argv, **kwargs):
    kwargs.setdefault('env', {'PATH': '/usr/sbin:/usr/bin:/sbin:/bin', 'LC_ALL': 'C.UTF-8'})
    return subprocess.run([sys.executable, path] + list(argv), capture_output=True, text=True, timeout=60, check=False,
                          cwd='/', **kwargs)


# ---- arguments -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('rank', ['\u00b2', '\u0663', '9' * 5000, '1000000', '-1', '+1', ' 1', '1.0', ''],
                         ids=['superscript-two', 'arabic-indic-three', '5000-digits', 'seven-digits', 'negative',
                              'plus', 'space', 'fraction', 'empty'])
def test_a_rank_that_is_not_a_small_ascii_number_is_bad_usage(tmp_path, stub_tools, rank):
    proc = run(launcher(tmp_path), '--dry-run', rank, '--', 'true', env={'PATH': stub_tools, 'LC_ALL': 'C'})
    assert proc.returncode == 2, proc.stderr
    assert 'Traceback' not in proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0].startswith('npu-bind: RANK ') and lines[0].endswith(
        ' is not a whole number from 0 to 999999 (the rank of the process, in the digits 0-9)'), lines
    assert len(lines[0]) < 200, lines[0]           # a huge rank is cut short in the message
    assert lines[1] == 'usage: npu-bind [--dry-run] RANK -- COMMAND [ARG...]'
    assert proc.stdout == ''


@pytest.mark.parametrize('rank, npu', [('0', 0), ('999999', 1), ('000017', 1)])
def test_ranks_up_to_six_digits_are_taken(tmp_path, stub_tools, rank, npu):
    proc = run(launcher(tmp_path), '--dry-run', rank, '--', 'true', env={'PATH': stub_tools})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)['npu'] == npu


@pytest.mark.parametrize('method, argv', [
    ('taskset', ['taskset', '-c', '--', '0-1', '-p', '1']),
    ('numactl', ['numactl', '-N', '0', '-m', '0', '--', '-p', '1']),
])
def test_the_command_is_never_read_as_options_of_the_binding_tool(tmp_path, stub_tools, method, argv):
    proc = run(launcher(tmp_path, method=method), '--dry-run', '0', '--', '-p', '1', env={'PATH': stub_tools})
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan['argv'] == [os.path.join(stub_tools, argv[0])] + argv[1:]


# ---- the drop to the run user (root only) ----------------------------------------------------------------------

def _needs_root():
    if os.geteuid() != 0:
        pytest.skip('needs root: npu-bind drops to the run user only when root starts it')
    for path in (PYTHON, shutil.which('taskset') or '/nonexistent'):
        if not os.access(path, os.X_OK):
            pytest.skip('needs %s' % path)
    try:
        pwd.getpwnam(RUN_USER)
    except KeyError:
        pytest.skip('needs the unprivileged account %s' % RUN_USER)


def _allowed_cpus():
    return _compact(os.sched_getaffinity(0))


# What the run user's command does: push a line into the terminal (TIOCSTI), then report what it could reach.
PAYLOAD = r'''
import errno, fcntl, json, os, sys, termios
extra_fd, extra_inode = int(sys.argv[1]), int(sys.argv[2])
report = {"uid": os.getuid(), "sid": os.getsid(0)}
try:
    for char in b"echo INJECTED-BY-RUN-USER\n":
        fcntl.ioctl(0, termios.TIOCSTI, bytes([char]))
    report["tiocsti"] = "pushed"
except OSError as exc:
    report["tiocsti"] = errno.errorcode.get(exc.errno, str(exc.errno))
try:
    os.close(os.open("/dev/tty", os.O_RDWR))
    report["dev_tty"] = "opened"
except OSError as exc:
    report["dev_tty"] = errno.errorcode.get(exc.errno, str(exc.errno))
try:
    report["extra_fd"] = "open" if os.fstat(extra_fd).st_ino == extra_inode else "another file"
except OSError as exc:
    report["extra_fd"] = errno.errorcode.get(exc.errno, str(exc.errno))
print("REPORT " + json.dumps(report), flush=True)
'''


def _read_all(fd, seconds):
    """Whatever arrives on fd within `seconds` of quiet."""
    data = b''
    while True:
        ready, _w, _x = select.select([fd], [], [], seconds)
        if not ready:
            return data
        try:
            chunk = os.read(fd, 65536)
        except OSError:         # EIO: the other side is closed
            return data
        if not chunk:
            return data
        data += chunk


def _take_the_terminal():
    # runs in the child after setsid(): the pty on fd 0 becomes the controlling terminal, as for a login shell
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def test_the_run_user_gets_its_own_session_and_cannot_push_input_into_roots_terminal(tmp_path):
    _needs_root()
    path = launcher(tmp_path, method='taskset', cpus=_allowed_cpus())
    master, slave = os.openpty()
    extra = open(tmp_path / 'caller-secret', 'w')
    try:
        proc = subprocess.Popen(
            [sys.executable, path, '0', '--', PYTHON, '-c', PAYLOAD, str(extra.fileno()),
             str(os.fstat(extra.fileno()).st_ino)],
            stdin=slave, stdout=slave, stderr=slave, pass_fds=(extra.fileno(),), start_new_session=True,
            preexec_fn=_take_the_terminal, cwd='/', env={'PATH': '/usr/sbin:/usr/bin:/sbin:/bin', 'LC_ALL': 'C.UTF-8'})
        rc = proc.wait(timeout=60)
        output = _read_all(master, 0.5).decode('utf-8', 'replace')
        # input pushed into the terminal waits in its input queue, as if typed at root's prompt
        os.set_blocking(slave, False)
        pushed = _read_all(slave, 0.5)
    finally:
        extra.close()
        os.close(master)
        os.close(slave)
    assert rc == 0, output
    assert pushed == b'', 'the run user pushed %r into the terminal' % pushed
    reports = [line for line in output.splitlines() if line.startswith('REPORT ')]
    assert len(reports) == 1, output          # the command's output still reaches the caller's terminal
    report = json.loads(reports[0][len('REPORT '):])
    assert report['uid'] == pwd.getpwnam(RUN_USER).pw_uid
    assert report['tiocsti'] != 'pushed', report
    assert report['sid'] != proc.pid, report  # proc.pid leads the caller's session
    assert report['dev_tty'] == 'ENXIO', report
    assert report['extra_fd'] == 'EBADF', report


def test_sigint_to_the_launcher_reaches_the_command_and_its_exit_code_comes_back(tmp_path):
    _needs_root()
    path = launcher(tmp_path, method='taskset', cpus=_allowed_cpus())
    # os.write and os._exit: the signal may come while print() of "ready" is still returning
    code = ('import os, signal, time\n'
            'signal.signal(signal.SIGINT, lambda *a: (os.write(1, b"got SIGINT\\n"), os._exit(7)))\n'
            'os.write(1, b"ready\\n")\n'
            'time.sleep(30)\n'
            'os._exit(3)\n')
    proc = subprocess.Popen([sys.executable, path, '0', '--', PYTHON, '-c', code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd='/', env={'PATH': '/usr/sbin:/usr/bin:/sbin:/bin'})
    try:
        assert proc.stdout.readline() == 'ready\n'
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (proc.returncode, out, err) == (7, 'got SIGINT\n', '')


def test_a_command_killed_by_a_signal_is_reported_as_killed_by_it(tmp_path):
    _needs_root()
    path = launcher(tmp_path, method='taskset', cpus=_allowed_cpus())
    proc = subprocess.Popen([sys.executable, path, '0', '--', PYTHON, '-c',
                             'import time; print("ready", flush=True); time.sleep(30)'],
                            stdout=subprocess.PIPE, text=True, cwd='/', env={'PATH': '/usr/sbin:/usr/bin:/sbin:/bin'})
    try:
        assert proc.stdout.readline() == 'ready\n'
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
    assert proc.returncode == -signal.SIGTERM and time.monotonic() - started < 10


def test_the_command_runs_through_the_real_taskset_with_the_end_of_options_marker(tmp_path):
    _needs_root()
    proc = run(launcher(tmp_path, method='taskset', cpus=_allowed_cpus()), '1', '--', PYTHON, '-c',
               'import os; print(os.getuid(), sorted(os.sched_getaffinity(0)))')
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == '%d %s\n' % (pwd.getpwnam(RUN_USER).pw_uid, sorted(os.sched_getaffinity(0)))
