"""npuops.ascend.window_lock: the lock of a PoD's change window - taken once, refused to a second run with the holder
named, a stale lock (its process gone) taken over with a warning, never a lock of another controller, released only by
its own run; and the action run by ansible-playbook, which finds its own ansible-playbook process."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading

import pytest

from ansible_collections.npuops.ascend.plugins.action import window_lock as action
from ansible_collections.npuops.ascend.plugins.plugin_utils.roce import lock

COLLECTIONS_ROOT = os.path.abspath(os.path.join(os.path.dirname(action.__file__), '..', '..', '..', '..', '..'))
ANSIBLE_PLAYBOOK = shutil.which('ansible-playbook', path=os.path.dirname(sys.executable)) or shutil.which('ansible-playbook')


def dead_pid():
    """A pid that ran and is gone (a child that exited and was reaped)."""
    proc = subprocess.Popen([sys.executable, '-c', 'pass'])
    proc.wait()
    return proc.pid


def info(run='20261203T101500Z', pid=None, **kwargs):
    return lock.holder(run, 'ascend_pod', 'roce_lossless.yml', pid=os.getpid() if pid is None else pid, **kwargs)


def test_the_lock_file_is_named_after_the_pod_in_the_directory(tmp_path):
    assert lock.lock_path(str(tmp_path), 'ascend_pod') == str(tmp_path / '.npuops-window-ascend_pod.lock')
    assert lock.lock_path(str(tmp_path), '../pod a') == str(tmp_path / '.npuops-window-.._pod_a.lock')


def test_the_first_run_takes_the_lock_and_writes_who_holds_it(tmp_path):
    path = lock.lock_path(str(tmp_path / 'reports'), 'ascend_pod')
    mine = info()
    assert lock.acquire(path, mine) == {'taken_over': None, 'again': False}
    with open(path) as handle:
        written = json.load(handle)
    assert written == mine
    assert written['pid'] == os.getpid() and written['pid_start'] == lock.process_start(os.getpid())
    assert written['host'] == socket.gethostname() and written['run'] == '20261203T101500Z'
    assert oct(os.stat(path).st_mode & 0o777) == '0o644'


def test_a_second_run_is_refused_with_the_holder_named(tmp_path):
    path = lock.lock_path(str(tmp_path), 'ascend_pod')
    first = info(started='2026-12-03T10:15:00Z')
    lock.acquire(path, first)
    # another live process: this test's parent
    second = info(run='20261203T101501Z', pid=os.getppid())
    with pytest.raises(lock.LockError) as caught:
        lock.acquire(path, second)
    assert str(caught.value) == (
        'another change window (run 20261203T101500Z, roce_lossless.yml, pid %d, started 2026-12-03T10:15:00Z) holds the '
        'lock %s for PoD ascend_pod: wait for it or remove %s if that run is gone. Nothing was read or changed on any '
        'node.' % (os.getpid(), path, path))
    with open(path) as handle:
        assert json.load(handle) == first


def test_the_same_run_taking_it_again_keeps_it(tmp_path):
    path = lock.lock_path(str(tmp_path), 'ascend_pod')
    lock.acquire(path, info())
    assert lock.acquire(path, info()) == {'taken_over': None, 'again': True}


def test_a_stale_lock_whose_process_is_gone_is_taken_over_with_a_warning(tmp_path):
    path = lock.lock_path(str(tmp_path), 'ascend_pod')
    stale = info(run='20261202T090000Z', pid=dead_pid(), started='2026-12-02T09:00:00Z')
    stale['pid_start'] = '1'
    with open(path, 'w') as handle:
        json.dump(stale, handle)
    mine = info()
    outcome = lock.acquire(path, mine)
    assert outcome['taken_over'] == stale
    with open(path) as handle:
        assert json.load(handle) == mine
    assert lock.takeover_warning(path, stale) == (
        'took over the lock %s for PoD ascend_pod from run 20261202T090000Z, roce_lossless.yml, pid %d, started '
        '2026-12-02T09:00:00Z: that process is gone without releasing it (killed, or its controller stopped). Check what '
        'that run left: its report directory, and playbooks/rollback.yml for a node it may have changed.'
        % (path, stale['pid']))


def test_a_lock_whose_pid_now_belongs_to_another_process_is_stale(tmp_path):
    path = lock.lock_path(str(tmp_path), 'ascend_pod')
    recycled = info(run='20261202T090000Z', pid=os.getppid())
    recycled['pid_start'] = 'not-the-start-time-of-that-pid'
    with open(path, 'w') as handle:
        json.dump(recycled, handle)
    assert lock.acquire(path, info())['taken_over'] == recycled


def test_a_lock_of_another_controller_is_never_taken_over(tmp_path):
    path = lock.lock_path(str(tmp_path), 'ascend_pod')
    other = info(run='20261203T080000Z', pid=dead_pid(), host='controller-b', started='2026-12-03T08:00:00Z')
    with open(path, 'w') as handle:
        json.dump(other, handle)
    with pytest.raises(lock.LockError) as caught:
        lock.acquire(path, info())
    assert ('another change window (run 20261203T080000Z, roce_lossless.yml, pid %d on the controller controller-b, started '
            '2026-12-03T08:00:00Z) holds the lock %s for PoD ascend_pod; this controller cannot see whether that run still '
            'goes on: wait for it, or remove %s if that run is gone.' % (other['pid'], path, path)) in str(caught.value)


@pytest.mark.parametrize('content, text', [('{"half": ', 'cannot be read'), ('[1, 2]', 'is not a change window lock'),
                                           ('{"format": "other"}', 'is not a change window lock')])
def test_a_lock_that_cannot_be_read_is_not_taken_over(tmp_path, content, text):
    path = lock.lock_path(str(tmp_path), 'ascend_pod')
    with open(path, 'w') as handle:
        handle.write(content)
    with pytest.raises(lock.LockError, match=text):
        lock.acquire(path, info())
    with open(path) as handle:
        assert handle.read() == content


def test_a_symbolic_link_in_place_of_the_lock_is_refused(tmp_path):
    target = tmp_path / 'elsewhere'
    target.write_text('x')
    path = lock.lock_path(str(tmp_path), 'ascend_pod')
    os.symlink(str(target), path)
    with pytest.raises(lock.LockError, match='is a symbolic link'):
        lock.acquire(path, info())
    assert target.read_text() == 'x'


def test_release_removes_only_the_runs_own_lock(tmp_path):
    path = lock.lock_path(str(tmp_path), 'ascend_pod')
    mine = info()
    lock.acquire(path, mine)
    other = info(run='20261203T101501Z', pid=os.getppid())
    assert lock.release(path, other)['released'] is False
    assert os.path.exists(path)
    assert lock.release(path, mine) == {'released': True, 'msg': 'released the lock %s' % path}
    assert not os.path.exists(path)
    assert lock.release(path, mine) == {'released': False, 'msg': 'no lock %s to release' % path}


def test_runs_that_start_together_get_one_lock(tmp_path):
    """The directory lock makes the look-and-create atomic: of eight threads that start at once, one takes the lock."""
    path = lock.lock_path(str(tmp_path), 'ascend_pod')
    barrier = threading.Barrier(8)
    outcomes = []

    def take(number):
        mine = info(run='run%d' % number, pid=os.getpid())
        barrier.wait()
        try:
            outcomes.append(lock.acquire(path, mine))
        except lock.LockError as exc:
            outcomes.append(str(exc))

    threads = [threading.Thread(target=take, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    taken = [o for o in outcomes if isinstance(o, dict)]
    assert len(taken) == 1 and taken[0] == {'taken_over': None, 'again': False}
    assert len([o for o in outcomes if isinstance(o, str) and 'holds the lock' in o]) == 7


def parts(run='run-parts-1', host=None):
    return lock.holder(run, 'ascend_pod', 'site.yml', parts=True, host=host, started='2026-12-05T21:00:00Z')


def test_a_run_in_parts_holds_the_lock_by_its_run_id_across_jobs_and_controllers(tmp_path):
    path = lock.lock_path(str(tmp_path), 'ascend_pod')
    taken = parts()
    assert taken['parts'] is True and taken['pid'] is None
    assert lock.acquire(path, taken) == {'taken_over': None, 'again': False}
    # a node part of the same run, another job on another execution node, finds it held
    other_job = parts(host='execution-node-2')
    assert lock.check_held(path, other_job)['run'] == 'run-parts-1'
    assert lock.acquire(path, other_job)['again'] is True
    # another run in parts, a change window, a node part of another run: refused, naming the run and how it ends
    for intruder in (parts(run='run-parts-2'), info(run='20261205T210100Z')):
        with pytest.raises(lock.LockError) as caught:
            lock.acquire(path, intruder)
        text = str(caught.value)
        assert 'run run-parts-1 in parts' in text and '-e npuops_run_part=pod -e npuops_run_id=run-parts-1' in text
        assert path in text and lock.NOTHING in text
    with pytest.raises(lock.LockError, match='held by another run .*run run-parts-1 in parts.*not by run run-parts-2'):
        lock.check_held(path, parts(run='run-parts-2'))
    # the same run id without parts (one run of site.yml) does not hold it either
    with pytest.raises(lock.LockError, match='held by another run'):
        lock.check_held(path, info(run='run-parts-1'))
    # the PoD part releases it, from any job of the run
    assert lock.release(path, parts(host='execution-node-3'))['released'] is True
    assert not os.path.exists(path)


def test_a_node_part_without_the_part_before_is_refused_naming_it(tmp_path):
    path = lock.lock_path(str(tmp_path / 'reports'), 'ascend_pod')
    with pytest.raises(lock.LockError) as caught:
        lock.check_held(path, parts())
    assert '-e npuops_run_part=before -e npuops_run_id=run-parts-1 --tags stage4' in str(caught.value)
    assert not os.path.exists(path)


def test_a_node_part_finds_a_lock_left_by_a_gone_process_not_held_and_says_to_run_the_part_before(tmp_path):
    path = lock.lock_path(str(tmp_path), 'ascend_pod')
    lock.acquire(path, info(run='whole-slow', pid=dead_pid()))  # one run of site.yml that stopped at its gate
    with pytest.raises(lock.LockError) as caught:
        lock.check_held(path, parts())
    text = str(caught.value)
    assert text.startswith('no run holds the lock') and 'run whole-slow' in text and 'its process is gone' in text
    assert '-e npuops_run_part=before -e npuops_run_id=run-parts-1' in text
    # the part before takes it over, with the warning of a stale lock
    assert lock.acquire(path, parts())['taken_over']['run'] == 'whole-slow'


def test_a_lock_of_a_run_in_parts_is_never_stale_by_a_process(tmp_path):
    path = lock.lock_path(str(tmp_path), 'ascend_pod')
    lock.acquire(path, parts())
    with pytest.raises(lock.LockError, match='remove .* if that run is gone'):
        lock.acquire(path, info(run='20261205T210200Z', pid=dead_pid()))
    with open(path) as handle:
        assert json.load(handle)['run'] == 'run-parts-1'


def test_controller_pid_is_the_nearest_ansible_playbook_ancestor(tmp_path):
    proc = tmp_path / 'proc'
    for pid, ppid, argv in ((40, 1, ['/usr/bin/python3', '/venv/bin/ansible-playbook', 'site.yml']),
                            (41, 40, ['/usr/bin/python3', '/venv/bin/ansible-playbook', 'site.yml']),
                            (50, 41, ['/usr/bin/python3', '/venv/bin/ansible-playbook', 'window.yml']),
                            (51, 50, ['ansible-playbook [worker]'])):
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / 'stat').write_text('%d (python3) S %d 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n'
                                              % (pid, ppid, 1000 + pid))
        (proc / str(pid) / 'cmdline').write_bytes(b'\0'.join(w.encode() for w in argv) + b'\0')
    assert lock.controller_pid(51, str(proc)) == 51  # the worker's own title starts with ansible-playbook
    (proc / '51' / 'cmdline').write_bytes(b'python3\0-c\0worker\0')
    assert lock.controller_pid(51, str(proc)) == 50  # the nearest ansible-playbook: the nested run, not the outer one
    assert lock.process_start(50, str(proc)) == '1050'
    assert lock.controller_pid(99, str(proc)) == 99  # nothing known: the start itself


# ---- the action run by ansible-playbook ------------------------------------------------------------------------------

INVENTORY = """\
[pod]
node01
node02

[pod:vars]
ansible_host=127.0.0.1
ansible_port=1
ansible_connection=ssh
ansible_ssh_common_args=-o ConnectTimeout=2
"""


def run_playbook(tmp_path, state='present', name='play.yml'):
    (tmp_path / 'inventory.ini').write_text(INVENTORY)
    (tmp_path / name).write_text(textwrap.dedent("""\
        - name: Lock
          hosts: pod
          gather_facts: false
          tasks:
            - name: Take or release the lock of the PoD
              npuops.ascend.window_lock:
                dir: "%s"
                pod: pod
                run: "run-of-{{ playbook_dir | basename }}"
                playbook: %s
                state: %s
              run_once: true
              register: taken

            - name: Show the pid that holds it
              ansible.builtin.debug:
                msg: "HOLDER {{ taken.holder.pid }}"
              run_once: true
        """) % (tmp_path / 'reports', name, state))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT, ANSIBLE_HOST_KEY_CHECKING='false',
               ANSIBLE_RETRY_FILES_ENABLED='false', ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0')
    proc = subprocess.Popen([ANSIBLE_PLAYBOOK, '-i', str(tmp_path / 'inventory.ini'), str(tmp_path / name)],
                            cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = proc.communicate(timeout=120)[0]
    return proc, output


@pytest.mark.skipif(ANSIBLE_PLAYBOOK is None, reason='ansible-playbook is not installed')
def test_the_action_records_its_ansible_playbook_process_and_a_later_run_takes_over_the_stale_lock(tmp_path):
    proc, output = run_playbook(tmp_path)
    assert proc.returncode == 0, output[-3000:]
    path = tmp_path / 'reports' / '.npuops-window-pod.lock'
    held = json.loads(path.read_text())
    # the pid is the ansible-playbook process itself, not its short-lived worker
    assert held['pid'] == proc.pid, output[-2000:]
    assert 'HOLDER %d' % proc.pid in output
    # that run ended without releasing: the next one takes the lock over and says so
    proc2, output2 = run_playbook(tmp_path)
    assert proc2.returncode == 0, output2[-3000:]
    assert 'took over the lock %s for PoD pod from run run-of-' % path in output2
    assert json.loads(path.read_text())['pid'] == proc2.pid
    proc3, output3 = run_playbook(tmp_path, state='absent')
    assert proc3.returncode == 0 and 'the lock %s is held by another run now' % path in output3
    assert path.exists()
