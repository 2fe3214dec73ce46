"""A workload launched as a non-root user (stage 6 runs ranks through npu-bind as the run user) can use the
simulator's read-only tools: the state is read without its root-owned lock file, the call log is skipped, and the
numactl shim still launches the command with the binding in its environment. Writes still need root."""

import json
import os
import shutil
import subprocess
import tempfile

import pytest

from npu_sim import node as node_mod
from npu_sim import statefile
from simhelpers import TOOLS

NOBODY = 65534
# the interpreter the installed wrappers use; the test runner's own may live under /root
PYTHON = "/usr/bin/python3"

pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the tools as another user"),
              pytest.mark.skipif(not os.access(PYTHON, os.X_OK), reason="needs %s" % PYTHON)]


@pytest.fixture
def node():
    """A node state in a directory any user can traverse (pytest's own tmp dirs are private to root)."""
    top = tempfile.mkdtemp(prefix="npu-sim-nonroot-")
    os.chmod(top, 0o755)
    path = os.path.join(top, "state", "state.json")
    statefile.save(path, node_mod.new_state("node01", 1))
    with open(statefile.calls_path(path), "w", encoding="utf-8"):
        pass
    try:
        yield path
    finally:
        shutil.rmtree(top)


def _as_nobody(path, *argv):
    def drop():
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": TOOLS, "NPU_SIM_STATE": path}
    return subprocess.run([PYTHON, "-m", "npu_sim"] + list(argv), capture_output=True, text=True, env=env,
                          preexec_fn=drop, cwd="/", timeout=60, check=False)


def _log(path):
    with open(statefile.calls_path(path), encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def test_files_are_root_owned_and_not_writable_by_others(node):
    for name in (node, node + ".lock", statefile.calls_path(node)):
        assert os.stat(name).st_uid == 0 and not os.stat(name).st_mode & 0o002, name


def test_non_root_reads_without_the_lock_and_leaves_no_call_log(node):
    proc = _as_nobody(node, "npu-smi", "info", "-t", "usages", "-i", "0")
    assert proc.returncode == 0, proc.stderr
    assert "Aicore Usage Rate(%)" in proc.stdout and proc.stderr == ""
    assert _log(node) == []
    assert statefile.calls_path(node, for_writing=False) == os.path.join(os.path.dirname(node), "calls.jsonl")


def test_numactl_shim_launches_as_non_root_with_the_binding(node):
    proc = _as_nobody(node, "numactl", "-N", "4", "-m", "4", "--", "env")
    assert proc.returncode == 0, proc.stderr
    assert "NPU_SIM_NUMA_NODE=4\n" in proc.stdout and "NPU_SIM_MEM_NODE=4\n" in proc.stdout


def test_training_runs_as_non_root_and_is_faster_when_bound(node):
    bound = _as_nobody(node, "numactl", "-N", "6", "-m", "6", "--", PYTHON, "-m", "npu_sim", "npu-sim", "train",
                       "--steps", "3", "--seed", "1")
    unbound = _as_nobody(node, "npu-sim", "train", "--steps", "3", "--seed", "1")
    assert bound.returncode == 0 and unbound.returncode == 0, bound.stderr + unbound.stderr

    def last_ms(text):
        return float(text.strip().splitlines()[-1].split("elapsed time per iteration (ms):")[1].split("|")[0])
    assert last_ms(bound.stdout) < last_ms(unbound.stdout)


def test_root_still_logs_and_non_root_still_cannot_set(node):
    proc = _as_nobody(node, "hccn_tool", "-i", "0", "-mtu", "-s", "size", "9000")
    assert proc.returncode == 12 and "permission denied: pls check this cmd run permission." in proc.stderr
    assert statefile.load(node)["npus"][0]["net"]["mtu"] == 1500
    assert _log(node) == []
    root = subprocess.run([PYTHON, "-m", "npu_sim", "hccn_tool", "-i", "0", "-mtu", "-g"], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": TOOLS, "NPU_SIM_STATE": node}, timeout=60, check=False)
    assert root.returncode == 0, root.stderr
    assert [entry["argv"] for entry in _log(node)] == [["hccn_tool", "-i", "0", "-mtu", "-g"]]
