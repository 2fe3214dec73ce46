"""Stage 6 (role numa_bind) on the simulated PoD: bad settings stop before any change, check mode changes nothing,
a converge passes the gate, the launcher binds and drops to the run user, and a second run changes nothing.

The simulated nodes share the host's /etc and /usr/local/bin, so the map and the launcher go to the node's own
/var/lib/npuops (the directory <node dir>/npuops on this host); the run user is created in the host's /etc/passwd,
as it would be on every real node. The tests run in the order written: the first ones need a fresh PoD.
"""

import contextlib
import json
import os
import pwd
import re
import subprocess

import pytest

from conftest import NODES, PODCTL, PREFIX

PLAYBOOK = "../tests/integration/playbooks/stage6.yml"
MAP = "/var/lib/npuops/numa-bind.json"
LAUNCHER = "/var/lib/npuops/bin/npu-bind"
LAUNCH = "/var/lib/npuops/launch.json"
NPU_LAUNCH = "/var/lib/npuops/bin/npu-launch"
EXTRA = {"numa_bind_map_path": MAP, "numa_bind_launcher_path": LAUNCHER, "numa_bind_launch_path": LAUNCH,
         "numa_bind_launch_script_path": NPU_LAUNCH}
USER = "npuops"
# an account of the host (the nodes share its /etc/passwd) that stage 6 did not create; removed after each test
VICTIM = "numa-it-victim"
VICTIM_COMMENT = "Victim Person,Room 1"
# NPU -> NUMA node of an Atlas 800T A2 (npu-smi info -t topo): NPU0/1 on CPUs 144-167
WANT = {0: (6, "144-167"), 1: (6, "144-167"), 2: (4, "96-119"), 3: (4, "96-119"),
        4: (0, "0-23"), 5: (0, "0-23"), 6: (2, "48-71"), 7: (2, "48-71")}


def _files(pod, node):
    """The map and the launcher as this host sees them (None when absent)."""
    root = os.path.join(pod.node_dir(node), "npuops")
    out = {}
    for name, path in (("map", "numa-bind.json"), ("launcher", os.path.join("bin", "npu-bind"))):
        full = os.path.join(root, path)
        out[name] = open(full).read() if os.path.exists(full) else None
    return out


def _state(pod):
    return dict((node, (pod.snapshot()[node]["state"], _files(pod, node))) for node in NODES)


def _governor(pod, node):
    text = pod.node(node, "cpupower", "-c", "0-191", "frequency-info", "-p")
    return set(re.findall(r'The governor "(\w+)"', text))


def _recap(output):
    return dict((host, int(changed)) for host, changed in re.findall(r"^(node\d+)\s+: ok=\d+\s+changed=(\d+)", output, re.M))


@contextlib.contextmanager
def _account(name, comment):
    """A login account on this host (and so on every simulated node) for the duration of a test."""
    subprocess.run(["userdel", name], capture_output=True, check=False)
    subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/bash", "--comment", comment, name], check=True,
                   capture_output=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], capture_output=True, check=False)


def _bind(pod, node, *argv):
    """npu-bind on a node: (rc, stdout, stderr), whatever the exit code."""
    proc = subprocess.run([PODCTL, "exec", "--base", pod.base, node, "--", LAUNCHER] + list(argv), capture_output=True,
                          text=True, timeout=120, check=False)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize("extra, words", [
    ({"numa_bind_governor": "turbo"},
     ["value of numa_bind_governor must be one of: performance, powersave, ondemand", "got: turbo"]),
    ({"numa_bind_method": "bogus"}, ["value of numa_bind_method must be one of: numactl, taskset, got: bogus"]),
    ({"numa_bind_run_user": "root"},
     ["numa_bind_run_user 'root': the workload must run as a non-root user", "nothing was changed on any node"]),
    ({"numa_bind_max_swappiness": 500},
     ["numa_bind_max_swappiness 500 is outside 0-200 (the kernel's range of vm.swappiness)"]),
], ids=["governor-turbo", "method-bogus", "run-user-root", "swappiness-500"])
def test_bad_setting_stops_before_any_change(pod, extra, words):
    before = _state(pod)
    rc, out = pod.playbook(PLAYBOOK, dict(EXTRA, **extra))
    assert rc != 0, out
    for text in words:
        assert text in out, out
    assert _state(pod) == before
    assert _governor(pod, NODES[0]) == {"ondemand"}


def test_an_existing_account_stage6_did_not_create_is_refused_before_any_change(pod):
    before = _state(pod)
    with _account(VICTIM, VICTIM_COMMENT) as account:
        rc, out = pod.playbook(PLAYBOOK, dict(EXTRA, numa_bind_run_user=VICTIM))
        assert rc != 0, out
        assert ("node01: the run user %s already exists (uid %d, shell /bin/bash, comment '%s') and stage 6 did not "
                "create it" % (VICTIM, account.pw_uid, VICTIM_COMMENT)) in out, out
        assert "set numa_bind_run_user_existing: use to run the ranks as %s exactly as it is" % VICTIM in out, out
        assert "Nothing was changed on any node" in out, out
        assert pwd.getpwnam(VICTIM) == account          # shell, comment and home untouched
    assert _state(pod) == before
    assert _governor(pod, NODES[0]) == {"ondemand"}


def test_check_mode_on_a_fresh_pod_changes_nothing_and_shows_diffs(pod):
    before = _state(pod)
    rc, out = pod.playbook(PLAYBOOK, EXTRA, args=["--check", "--diff"])
    assert rc == 0, out
    assert _state(pod) == before
    for node in NODES:
        assert _files(pod, node) == {"map": None, "launcher": None}
        assert _governor(pod, node) == {"ondemand"}
    assert "+++ after: %s" % MAP in out and '"numa_node": 6,' in out, out
    assert "+# managed by npuops.ascend (role numa_bind, stage 6)" in out, out
    assert "+++ after: CPU governors on node01" in out, out
    assert all(changed > 0 for changed in _recap(out).values()), out


def test_converge_passes_the_gate_and_writes_map_launcher_report(pod):
    rc, out = pod.playbook(PLAYBOOK, EXTRA)
    assert rc == 0, out
    assert "Check the gate on every node of the PoD at stage 6 (numa_bind)] ***\nok: [node01]" in out, out
    for node in NODES:
        data = json.loads(_files(pod, node)["map"])
        assert data["method"] == "numactl" and data["run_user"] == USER and data["npus_per_node"] == 8
        assert dict((e["npu"], (e["numa_node"], e["cpus"])) for e in data["npus"]) == WANT
        assert oct(os.stat(os.path.join(pod.node_dir(node), "npuops", "numa-bind.json")).st_mode & 0o777) == "0o644"
        assert os.stat(os.path.join(pod.node_dir(node), "npuops", "bin", "npu-bind")).st_mode & 0o777 == 0o755
        assert _governor(pod, node) == {"performance"}
    runs = sorted(os.listdir(pod.reports))
    stage = os.path.join(pod.reports, [r for r in runs if os.path.isdir(os.path.join(pod.reports, r, "stage6-numa_bind"))][-1],
                         "stage6-numa_bind")
    report = open(os.path.join(stage, "numa_bind.md")).read()
    assert "| node01 | 0 | 6 | 144-167 |" in report and "| node02 | 7 | 2 | 48-71 |" in report
    assert "Warning:** the `performance` governor" in report
    summary = json.load(open(os.path.join(os.path.dirname(stage), "summary.json")))
    assert [summary["nodes"][n]["stage6"]["status"] for n in NODES] == ["passed", "passed"], summary
    node = json.load(open(os.path.join(stage, "node01.json")))
    assert node["launcher_check"] == USER and node["findings"] == []


def test_launcher_binds_the_rank_and_runs_it_as_the_run_user(pod):
    env = pod.node(NODES[0], LAUNCHER, "2", "--", "env")
    assert "NPU_SIM_NUMA_NODE=4\n" in env and "NPU_SIM_MEM_NODE=4\n" in env and "USER=%s\n" % USER in env
    assert "ASCEND_RT_VISIBLE_DEVICES" not in env
    assert pod.node(NODES[1], LAUNCHER, "8", "--", "id", "-un").strip() == USER
    plan = json.loads(pod.node(NODES[1], LAUNCHER, "--dry-run", "9", "--", "true"))
    assert plan["npu"] == 1 and plan["numa_node"] == 6 and plan["argv"][-6:] == ["-N", "6", "-m", "6", "--", "true"]
    train = pod.node(NODES[0], LAUNCHER, "0", "--", "/usr/local/sbin/npu-sim", "train", "--steps", "5")
    assert len(re.findall(r"elapsed time per iteration \(ms\): [\d.]+", train)) == 5, train


# what each rank of the simulated training job says at its start (tools/npu_sim/perf.py rank_line)
RANK_LINE = re.compile(r"^npu-sim train: rank (\d+) of (\d+), local rank (\d+): NPU (\d+) \(NUMA node (\d+)\); "
                       r"CPUs bound to NUMA node (\S+), memory to (\S+); OMP_NUM_THREADS=(\S+) ", re.M)


def test_npu_launch_starts_one_rank_per_npu_bound_as_the_map_says(pod):
    proc = subprocess.run([PODCTL, "exec", "--base", pod.base, NODES[0], "--", NPU_LAUNCH, "--",
                           "/usr/local/sbin/npu-sim", "train", "--steps", "3"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ranks = RANK_LINE.findall(proc.stderr)
    assert sorted(int(local) for _rank, _world, local, *_rest in ranks) == list(range(8)), proc.stderr
    for rank, world, local, npu, home, cpus, memory, threads in ranks:
        # node01 is node rank 0 of 2: ranks 0-7 of 16, rank r on NPU r, bound (CPUs and memory) to that NPU's node
        assert (rank, world, npu) == (local, "16", local)
        assert int(home) == int(cpus) == int(memory) == WANT[int(npu)][0]
        assert threads == "12"  # two NPUs share each NUMA node of 24 CPUs
    assert "elapsed time per iteration" not in proc.stdout  # rank 15, on node02, prints the log
    plans = dict((node, json.loads(open(os.path.join(pod.node_dir(node), "npuops", "launch.json")).read()))
                 for node in NODES)
    assert [plans[node]["node_rank"] for node in NODES] == [0, 1]
    assert plans["node02"]["master_addr"] == plans["node01"]["master_addr"] == "%s.1" % PREFIX
    assert plans["node02"]["torchrun"][:3] == ["--nnodes=2", "--node_rank=1", "--nproc_per_node=8"]
    assert [r["cpus"] for r in plans["node02"]["ranks"][:2]] == ["144-155", "156-167"]


def test_launcher_refuses_bad_usage_unknown_npus_and_root(pod):
    node = NODES[0]
    cases = [(["x", "--", "true"], 2, "RANK 'x' is not a whole number from 0 to 999999"),
             (["\u00b2", "--", "true"], 2, "RANK '\\xb2' is not a whole number from 0 to 999999"),
             (["9" * 5000, "--", "true"], 2, "RANK '99999999999999999999...' is not a whole number from 0 to 999999"),
             (["1", "true"], 2, "missing '--' between RANK and the command"),
             (["1", "--"], 2, "no command after '--'"),
             (["1", "2", "--", "true"], 2, "expected one RANK before '--', got 2 argument(s)")]
    for argv, code, text in cases:
        rc, _out, err = _bind(pod, node, *argv)
        assert (rc, text in err) == (code, True), (argv, rc, err)
    path = os.path.join(pod.node_dir(node), "npuops", "numa-bind.json")
    original = open(path).read()
    try:
        data = json.loads(original)
        data["npus"] = [e for e in data["npus"] if e["npu"] != 3]
        open(path, "w").write(json.dumps(data))
        rc, _out, err = _bind(pod, node, "11", "--", "true")
        assert rc == 2 and "rank 11 uses NPU 3, which the binding map %s does not bind" % MAP in err, err
        data["run_user"] = "root"
        open(path, "w").write(json.dumps(data))
        rc, out, err = _bind(pod, node, "0", "--", "id", "-un")
        assert rc == 1 and out == "" and "refusing to run the command as root" in err, (rc, out, err)
    finally:
        open(path, "w").write(original)


def test_second_run_changes_nothing(pod):
    rc, out = pod.playbook(PLAYBOOK, EXTRA)
    assert rc == 0, out
    assert _recap(out) == dict((node, 0) for node in NODES), out


def test_a_failed_launcher_test_puts_the_previous_map_back(pod):
    # taskset cannot pin 144-167 on this host, so the launcher test fails: the numactl map of the last run comes back
    node = NODES[0]
    before = _files(pod, node)
    rc, out = pod.playbook(PLAYBOOK, dict(EXTRA, numa_bind_method="taskset"))
    assert rc != 0, out
    backup = re.search(r"%s put back from (%s\.[^ ;\"]+~)" % (re.escape(MAP), re.escape(MAP)), out)
    assert backup, out
    assert "did not run a test command as %s (rc=1): taskset: failed to set pid" % USER in out, out
    assert _files(pod, node) == before
    kept = os.path.join(pod.node_dir(node), "npuops", os.path.basename(backup.group(1)))
    assert json.loads(open(kept).read())["method"] == "numactl"
    runs = sorted(r for r in os.listdir(pod.reports) if os.path.isdir(os.path.join(pod.reports, r, "stage6-numa_bind")))
    record = json.load(open(os.path.join(pod.reports, runs[-1], "stage6-numa_bind", "%s.json" % node)))
    assert record["backups"]["map"] == backup.group(1) and record["backups"]["launcher"] is None
    assert record["restored"][0] == {"path": MAP, "backup": backup.group(1), "action": "restore", "mode": "0644"}
    # the launch file changed with the method (no memory node under taskset): it is put back too
    assert [(item["path"], item["action"], item["mode"]) for item in record["restored"][1:]] == [(LAUNCH, "restore", "0644")]
    assert json.loads(open(os.path.join(pod.node_dir(node), "npuops", "launch.json")).read())["method"] == "numactl"


def test_taskset_method(pod):
    # this host has fewer CPUs than an Atlas node, so taskset could not pin 144-167 here: look at the plan only
    rc, out = pod.playbook(PLAYBOOK, dict(EXTRA, numa_bind_method="taskset", numa_bind_verify_enabled=False))
    assert rc == 0, out
    plan = json.loads(pod.node(NODES[0], LAUNCHER, "--dry-run", "0", "--", "python3", "-V"))
    assert plan["method"] == "taskset" and plan["argv"][1:] == ["-c", "--", "144-167", "python3", "-V"]
    assert plan["argv"][0].endswith("/taskset") and plan["user"] == USER


def test_an_existing_account_is_used_as_it_is_when_told(pod):
    with _account(VICTIM, VICTIM_COMMENT) as account:
        rc, out = pod.playbook(PLAYBOOK, dict(EXTRA, numa_bind_run_user=VICTIM, numa_bind_run_user_existing="use"))
        assert rc == 0, out
        assert pwd.getpwnam(VICTIM) == account          # still /bin/bash, the same comment and home
        assert pod.node(NODES[0], LAUNCHER, "0", "--", "id", "-un").strip() == VICTIM
        assert json.loads(_files(pod, NODES[0])["map"])["run_user"] == VICTIM
