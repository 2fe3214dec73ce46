"""The change window tells the truth when it is cut short, and guards itself (playbooks/roce_lossless.yml, rollback.yml).

- A batch size the window cannot use is refused before any node is read.
- Two windows started together: one takes the PoD's lock, the other is refused before it reads anything.
- A node lost during its own set (its sshd killed right after its first set): the stop names it as "may be changed"
  with its restore point, the summary is written and the lock released.
- A node lost between batches: the stop names what is kept and what was not touched, with the summary.
- A link that stays down after the change: the batch restore sets every value back and says so ("values restored"),
  never "Still changed" or "no backup was written".
- The rollback keeps the state it overwrites in a restore point of its own, named in its message; a corrupt newest
  restore point is refused with the older ones listed.

Each case leaves the 2-node PoD untuned and every node up (rollback.yml, podctl up) for the other tests.
"""

import glob
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time

import pytest

from conftest import NODES, PODCTL, PREFIX, REPO

HCCN_TOOL = "/usr/local/Ascend/driver/tools/hccn_tool"
SIM = "/usr/local/sbin/npu-sim"
QUICK = {"roce_lossless_bench_enabled": False}  # the cross-node benchmark is not what these cases look at


def _calls(pod, node):
    path = os.path.join(pod.node_dir(node), "state", "calls.jsonl")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _set_calls(pod, node, since=0):
    return [c for c in _calls(pod, node)[since:] if c.get("tool") == "hccn_tool" and "-s" in c.get("argv", [])]


def _mtus(pod, node):
    out = pod.node(node, "sh", "-c", 'for i in 0 1 2 3 4 5 6 7; do "$0" -i $i -mtu -g; done', HCCN_TOOL)
    return re.findall(r"mtu:(\d+)", out)


def _locks(pod):
    return glob.glob(os.path.join(pod.reports, ".npuops-window-*.lock"))


def _newest_run(pod):
    runs = sorted(d for d in glob.glob(os.path.join(pod.reports, "2*Z")) if os.path.isdir(d))
    return runs[-1]


def _kill_sshd(pod, node):
    """Kill (by PID) every sshd of the node's UTS namespace, as podctl recorded it: the node drops off the network."""
    with open(os.path.join(pod.base, "pod.json"), encoding="utf-8") as handle:
        uts = json.load(handle)["nodes"][node]["uts_ns"]
    killed = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink("/proc/%s/exe" % pid) == "/usr/sbin/sshd" and os.readlink("/proc/%s/ns/uts" % pid) == uts:
                os.kill(int(pid), signal.SIGKILL)
                killed.append(int(pid))
        except OSError:
            pass
    return killed


def _kill_after_sets(pod, victim, watched, count):
    """A thread that kills the victim's sshd once the watched node made ``count`` set calls from now on."""
    since = len(_calls(pod, watched))
    done = {}

    def watch():
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and "stop" not in done:
            if len(_set_calls(pod, watched, since)) >= count:
                done["killed"] = _kill_sshd(pod, victim)
                return
            time.sleep(0.02)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread, done


def _bring_back(pod):
    """podctl up restarts a node whose sshd died (its state is kept)."""
    proc = subprocess.run([PODCTL, "up", "--nodes", str(len(NODES)), "--base", pod.base, "--address-prefix", PREFIX,
                           "--inventory", pod.inventory, "--ssh-config", os.path.join(pod.base, "ssh_config"),
                           "--flap-seconds", "1"], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _roll_back(pod, nodes=NODES):
    rc, out = pod.playbook("rollback.yml", None, ["-l", ",".join(nodes)])
    assert rc == 0, out[-3000:]
    for node in nodes:
        assert _mtus(pod, node) == ["1500"] * 8, node


def _refused_before_any_read(pod, rc, out, calls_before, text):
    assert rc == 2, out[-3000:]
    assert text in out, out[-3000:]
    assert "Traceback" not in out and "Unexpected Exception" not in out
    assert "Nothing was read or changed on any node." in out
    assert [len(_calls(pod, node)) for node in NODES] == calls_before, "a node was read"
    assert _locks(pod) == []


# ---- the batch size ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("playbook, extra, text", [
    ("roce_lossless.yml", {"roce_lossless_batch": 0}, 'roce_lossless_batch 0 is below 1: a batch of 0 nodes would be read '
                                                      'by Ansible as "every node at once"'),
    ("roce_lossless.yml", {"roce_lossless_batch": "-1"}, "roce_lossless_batch '-1' is below 1"),
    ("roce_lossless.yml", {"roce_lossless_batch": "150%"}, "roce_lossless_batch '150%' is outside 1%-100%"),
    ("roce_lossless.yml", {"roce_lossless_batch": "abc"}, "roce_lossless_batch 'abc' is not a batch size"),
    ("rollback.yml", {"rollback_batch": 0}, "rollback_batch 0 is below 1"),
], ids=["zero", "negative", "150-percent", "text", "rollback-zero"])
def test_a_batch_size_the_window_cannot_use_is_refused_before_any_node_is_read(pod, playbook, extra, text):
    calls_before = [len(_calls(pod, node)) for node in NODES]
    rc, out = pod.playbook(playbook, extra, ["--check"])
    _refused_before_any_read(pod, rc, out, calls_before, text)
    recap = out.split("PLAY RECAP")[-1]  # the last thing the run printed (a library's warning on stderr may follow)
    assert "ignored=0" in recap and "PLAY [" not in recap and "PLAY [Stage 4 change window - change" not in out


# ---- the lock -------------------------------------------------------------------------------------------------------

def test_two_windows_started_together_one_holds_the_lock_and_the_other_is_refused(pod):
    argv = [os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", pod.inventory_dir,
            os.path.join(REPO, "playbooks", "roce_lossless.yml"), "-e", json.dumps(QUICK)]
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_HOST_KEY_CHECKING="False",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_FORKS="8")
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", subprocess.run(
        [os.path.join(REPO, "tools", "dev", "collections_root.sh"), REPO], capture_output=True, text=True,
        check=True).stdout.strip())
    runs = [subprocess.Popen(argv, cwd=pod.reports, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for _run in range(2)]
    outs = [run.communicate(timeout=600)[0] for run in runs]
    codes = sorted(run.returncode for run in runs)
    assert codes == [0, 2], "\n=====\n".join(out[-2500:] for out in outs)
    refused = outs[[run.returncode for run in runs].index(2)]
    winner = runs[[run.returncode for run in runs].index(0)]
    lock_pattern = re.escape(os.path.join(pod.reports, ".npuops-window-ascend_pod.lock"))
    assert re.search(r"another change window \(run \d{8}T\d{6}Z, roce_lossless\.yml, pid %d, started [0-9T:-]+Z\) holds "
                     r"the lock %s for PoD ascend_pod: wait for it or remove %s if that run is gone\. Nothing was read or "
                     r"changed on any node\." % (winner.pid, lock_pattern, lock_pattern),
                     refused), refused[-3000:]
    # the refused window read nothing: it never got to the precheck
    assert "Read the NPU ports and the NPU processes before the change" not in refused
    assert _locks(pod) == []
    for node in NODES:
        assert _mtus(pod, node) == ["9000"] * 8
        assert len(glob.glob(os.path.join(pod.node_dir(node), "npuops", "backup", "hccn-%s-*.json" % node))) >= 1
    _roll_back(pod)


# ---- a node lost during the window ---------------------------------------------------------------------------------

def _proc_start(pid):
    with open("/proc/%d/stat" % pid, encoding="utf-8") as handle:
        data = handle.read()
    return data[data.rfind(")") + 2:].split()[19]


def test_stage_4_of_site_yml_takes_the_lock_of_the_pod(pod):
    # a window of this PoD that runs (here: this test process holds its lock) stops stage 4 of site.yml before it reads
    # or changes a port; once it is gone, stage 4 runs, takes the lock and releases it at its end
    lock = os.path.join(pod.reports, ".npuops-window-ascend_pod.lock")
    holder = {"format": "npuops.ascend window lock", "version": 1, "pod": "ascend_pod", "run": "20261205T000000Z",
              "playbook": "roce_lossless.yml", "pid": os.getpid(), "pid_start": _proc_start(os.getpid()),
              "host": socket.gethostname(), "user": "root", "started": "2026-12-05T00:00:00Z"}
    with open(lock, "w", encoding="utf-8") as handle:
        json.dump(holder, handle)
    try:
        before = pod.snapshot()
        calls_before = [len(_set_calls(pod, node)) for node in NODES]
        rc, out = pod.playbook("site.yml", QUICK, ["--tags", "stage4"])
        assert rc == 2, out[-3000:]
        assert ("another change window (run 20261205T000000Z, roce_lossless.yml, pid %d, started 2026-12-05T00:00:00Z) "
                "holds the lock %s for PoD ascend_pod" % (os.getpid(), lock)) in out, out[-3000:]
        assert "Read the NPU ports and the NPU processes before the change" not in out
        assert pod.snapshot() == before
        assert [len(_set_calls(pod, node)) for node in NODES] == calls_before
    finally:
        os.unlink(lock)
    rc, out = pod.playbook("site.yml", QUICK, ["--tags", "stage4"])
    assert rc == 0, out[-3000:]
    assert "Take the lock of the PoD's NPU ports for stage 4" in out and _locks(pod) == []
    _roll_back(pod)


def test_a_node_lost_during_its_own_set_is_reported_as_may_be_changed_with_its_restore_point(pod):
    thread, killed = _kill_after_sets(pod, "node02", "node02", 1)
    try:
        rc, out = pod.playbook("roce_lossless.yml", QUICK)
    finally:
        killed["stop"] = True
        thread.join(5)
        _bring_back(pod)
    assert killed.get("killed"), "node02's sshd was not killed: %s" % out[-2000:]
    assert rc == 2, out[-3000:]
    assert "Stage 4 stopped: the connection to node02 broke during its change." in out, out[-3000:]
    match = re.search(r"node02: lost during its change \(the connection broke: [^)]*\): its NPU ports MAY BE CHANGED "
                      r"\(hccn_config goes on on the node when the connection breaks\) and were neither verified nor "
                      r"restored; restore point (/var/lib/npuops/backup/hccn-node02-\d{8}T\d{6}Z\.json) \(written before "
                      r"the first set: if it is missing, nothing was set\)\. When node02 answers again, run the window "
                      r"again \(a node that already matches changes nothing\) or put it back with playbooks/rollback\.yml "
                      r"-l node02 -e roce_lossless_rollback_file=\1\.", out)
    assert match, out[-3000:]
    assert "May be changed (lost, not verified, not restored): node02. Done and verified in earlier batches (kept): " \
           "node01. Not touched: none." in out
    # the restore point named on the controller is the one the node wrote before its first set
    assert os.path.exists(os.path.join(pod.node_dir("node02"), "npuops", "backup", os.path.basename(match.group(1))))
    run = _newest_run(pod)
    with open(os.path.join(run, "summary.json"), encoding="utf-8") as handle:
        summary = json.load(handle)
    assert summary["nodes"]["node02"]["stage4"]["status"] == "failed"
    assert "MAY BE CHANGED" in summary["nodes"]["node02"]["stage4"]["failures"][0]
    assert summary["nodes"]["node01"]["stage4"]["status"] == "stopped"
    with open(os.path.join(run, "stage4-roce_lossless", "pod.json"), encoding="utf-8") as handle:
        stopped = json.load(handle)["stopped"]
    assert stopped["nodes"]["node02"]["state"] == "lost"
    assert stopped["nodes"]["node02"]["restore_point"] == match.group(1)
    assert _locks(pod) == []
    _roll_back(pod)


def test_a_node_lost_between_batches_stops_the_window_with_what_is_kept_and_the_summary(pod):
    # node01's one-pass change makes 24 sets; node02 drops off right after them, before its own batch
    node02_calls = len(_calls(pod, "node02"))
    thread, killed = _kill_after_sets(pod, "node02", "node01", 24)
    try:
        rc, out = pod.playbook("roce_lossless.yml", QUICK)
    finally:
        killed["stop"] = True
        thread.join(5)
        _bring_back(pod)
    assert killed.get("killed"), out[-2000:]
    assert rc == 2, out[-3000:]
    assert re.search(r"Stage 4 stopped: nothing was set on node02: node02: could not be reached \([^)]*\); nothing was "
                     r"read or set on it", out), out[-3000:]
    assert "node02: could not be reached before its change (" in out
    assert "Changed in this batch: none. Restored: none. Done and verified in earlier batches (kept): node01. Not " \
           "touched: none." in out
    assert _set_calls(pod, "node02", node02_calls) == []
    with open(os.path.join(_newest_run(pod), "summary.json"), encoding="utf-8") as handle:
        summary = json.load(handle)
    assert summary["nodes"]["node02"]["stage4"]["status"] == "failed"
    assert summary["nodes"]["node01"]["stage4"]["warnings"] == [
        "node01: changed and verified in an earlier batch (kept); the window stopped before the cross-node check of stage 4"]
    assert _locks(pod) == []
    assert _mtus(pod, "node01") == ["9000"] * 8 and _mtus(pod, "node02") == ["1500"] * 8
    _roll_back(pod, ["node01"])  # node02 was never changed


# ---- a link stuck down: the batch restore tells what it did ---------------------------------------------------------

def test_a_restore_that_set_every_value_back_says_so_though_a_link_stays_down(pod):
    pod.node("node02", SIM, "fault", "set", "link-stuck-down", "--device", "5")
    try:
        rc, out = pod.playbook("roce_lossless.yml", dict(QUICK, roce_lossless_link_timeout=3))
        mtus = _mtus(pod, "node02")
    finally:
        pod.node("node02", SIM, "fault", "clear")
    assert rc == 2, out[-3000:]
    assert re.search(r"node02: changed NPU 0, 1, 2, 3, 4, 5, 6, 7; values restored from "
                     r"/var/lib/npuops/backup/hccn-node02-\d{8}T\d{6}Z\.json \(NPU 0, 1, 2, 3, 4, 5, 6, 7 set back and read "
                     r"back\), but the link of NPU 5 is still not UP: check the cable, the optical module and the switch "
                     r"port; the settings are the ones from before the change\.", out), out[-3000:]
    assert "Changed in this batch: node02. Restored: node02 (values; the link of NPU 5 is still not UP). Done and " \
           "verified in earlier batches (kept): node01." in out
    assert "Still changed" not in out and "its restore FAILED" not in out
    assert "no backup was written" not in out
    assert mtus == ["1500"] * 8  # the values are really back
    _roll_back(pod)


# ---- the rollback's own restore point -------------------------------------------------------------------------------

def _write_restore_point(pod, node, name, devices):
    path = os.path.join(pod.node_dir(node), "npuops", "backup", name)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"format": "npuops.ascend.hccn_config.backup", "version": 1, "host": node,
                   "created": "2026-12-01T00:00:00Z", "devices": devices}, handle)
    os.chmod(path, 0o600)
    return path


def test_the_rollback_keeps_the_state_it_overwrites_and_names_it(pod):
    rc, out = pod.playbook("roce_lossless.yml", QUICK, ["-l", "node01"])
    assert rc == 0, out[-3000:]
    window_point = sorted(glob.glob(os.path.join(pod.node_dir("node01"), "npuops", "backup", "hccn-node01-*.json")),
                          key=os.path.getmtime)[-1]
    # a restore point whose NPU 2 address belongs to node02: the restore of NPU 2 fails half-way through the node
    conflict = _write_restore_point(pod, "node01", "hccn-node01-zz-conflict.json", [
        {"device": d, "address": "10.20.%d.%d" % (d, 12 if d == 2 else 11), "netmask": "255.255.255.0", "mtu": 1500,
         "pfc_priorities": []} for d in range(8)])
    try:
        rc, out = pod.playbook("rollback.yml", None, ["-l", "node01"])
        assert rc == 2, out[-3000:]
        assert "Set back: NPU 0, 1, 3, 4, 5, 6, 7; failed: NPU 2." in out, out[-3000:]
        assert "The ip address configured is conflicted!" in out
        assert "no backup was written" not in out
        own = re.search(r"The state before this rollback is kept in (/var/lib/npuops/backup/before-rollback-node01-"
                        r"\d{8}T\d{6}Z\.json): to undo the rollback, run playbooks/rollback\.yml -l node01 -e "
                        r"roce_lossless_rollback_file=\1\.", out)
        assert own, out[-3000:]
        assert _mtus(pod, "node01") == ["1500", "1500", "9000", "1500", "1500", "1500", "1500", "1500"]
        assert _locks(pod) == []
        # the way back the message names puts back the state before the rollback
        rc, out = pod.playbook("rollback.yml", {"roce_lossless_rollback_file": own.group(1)}, ["-l", "node01"])
        assert rc == 0, out[-3000:]
        assert "node01: restored NPU 0, 1, 3, 4, 5, 6, 7 from the restore point %s." % own.group(1) in out
        assert _mtus(pod, "node01") == ["9000"] * 8
    finally:
        os.unlink(conflict)
    # a newest restore point that cannot be read is refused, with the others listed; no older one is tried by itself
    broken = os.path.join(pod.node_dir("node01"), "npuops", "backup", "hccn-node01-zz-broken.json")
    with open(broken, "w", encoding="utf-8") as handle:
        handle.write('{"format": "npuops.ascend.hccn_config.backup", "host": "node0')
    try:
        rc, out = pod.playbook("rollback.yml", None, ["-l", "node01"])
    finally:
        os.unlink(broken)
    assert rc == 2, out[-3000:]
    assert "cannot read the backup" in out and "Nothing was set on node01." in out
    assert re.search(r"the other restore points on node01, newest first: /var/lib/npuops/backup/%s \(\d{4}-\d\d-\d\dT[0-9:]+Z\)"
                     % re.escape(os.path.basename(window_point)), out), out[-3000:]
    assert _mtus(pod, "node01") == ["9000"] * 8
    _roll_back(pod, ["node01"])
