"""Stage 8 (io_check) on the simulated PoD: the gate passes on a clean PoD, the iowait and shm-full faults stop it
naming the node and the value, check mode changes nothing, and each node has its own /dev/shm."""

import glob
import json
import os
import re

import pytest

PLAYBOOK = "../tests/integration/playbooks/stage8.yml"
FAST = {"io_check_seconds": 2}


def _reports(pod):
    return sorted(glob.glob(os.path.join(pod.reports, "*", "stage8-io_check")))


def test_each_node_has_its_own_shm(pod):
    for node in ("node01", "node02"):
        mounts = pod.node(node, "grep", " /dev/shm ", "/proc/mounts")
        assert "tmpfs /dev/shm tmpfs rw,nosuid,nodev" in mounts and "size=1048576k" in mounts
    out = pod.node("node01", "vmstat", "1", "2")
    assert out.startswith("procs -----------memory----------")
    assert "(node01)" in pod.node("node01", "iostat", "-c", "1", "2")


def test_mindie_default_config_is_on_every_node(pod):
    for node in ("node01", "node02"):
        out = pod.node(node, "stat", "-c", "%a", "/usr/local/Ascend/mindie/latest/mindie-service/conf/config.json")
        assert out.strip() == "640"


def test_gate_passes_on_a_clean_pod(pod):
    rc, out = pod.playbook(PLAYBOOK, FAST)
    assert rc == 0, out
    report = _reports(pod)[-1]
    for node in ("node01", "node02"):
        with open(os.path.join(report, node + ".json")) as handle:
            data = json.load(handle)
        assert data["shm"]["mounted"] is True and data["shm"]["size_mb"] == 1024.0
        assert data["iostat"]["samples"] == 2 and data["iostat"]["iowait_mean_pct"] < 1
        assert data["vmstat"]["wa_mean_pct"] == 0 and data["cpus"] == 192
        assert [f for f in data["findings"] if f["severity"] == "fail"] == []
    with open(os.path.join(report, "io_check.md")) as handle:
        text = handle.read()
    # per rank from the NUMA node it is bound to: 24 CPUs / 2 ranks - 2 for the rank's own threads, capped at the
    # method's 8 (half the host's CPUs per NPU, 12, overran the node)
    assert "`num_workers=8` per rank" in text and "num_workers=12" not in text and "pin_memory=True" in text
    assert ("NUMA node 6 (24 CPUs, 144-167) serves NPUs 0, 1: 24 CPUs / 2 ranks = 12 per rank, 2 of them for the rank's "
            "main thread and its task-queue thread, so num_workers=8 (the method: 4-8 per rank)") in text
    with open(os.path.join(report, "node01.json")) as handle:
        assert json.load(handle)["dataloader"]["workers"] == 8


def test_iowait_fault_stops_the_gate_naming_node_and_value(pod):
    pod.node("node02", "npu-sim", "fault", "set", "iowait", "--value", "20")
    try:
        rc, out = pod.playbook(PLAYBOOK, FAST)
    finally:
        pod.node("node02", "npu-sim", "fault", "clear", "iowait")
    assert rc != 0, out
    found = re.search(r"node02: iowait ([0-9.]+) % \(mean of 2 samples, max [0-9.]+ %\) is not under the limit of 5 %", out)
    assert found and 18.0 <= float(found.group(1)) <= 22.0, out
    found = re.search(r"node02: vmstat wa ([0-9.]+) % .* is above the limit of 2 %", out)
    assert found and 18.0 <= float(found.group(1)) <= 22.0, out
    assert "node01: iowait" not in out


def test_shm_full_stops_the_gate(pod):
    pod.node("node01", "npu-sim", "fault", "set", "shm-full")
    try:
        df = pod.node("node01", "df", "-k", "/dev/shm")
        assert " 100% /dev/shm" in df
        rc, out = pod.playbook(PLAYBOOK, FAST)
    finally:
        pod.node("node01", "npu-sim", "fault", "clear", "shm-full")
    assert rc != 0, out
    assert "node01: /dev/shm is 100.0 % used" in out and "above the limit of 90 %" in out
    assert " 0% /dev/shm" in pod.node("node01", "df", "-k", "/dev/shm")


def test_check_mode_changes_nothing(pod):
    before = pod.snapshot()
    rc, out = pod.playbook(PLAYBOOK, FAST, args=["--check", "--diff"])
    assert rc == 0, out
    assert "changed=0" in out
    assert pod.snapshot() == before


@pytest.mark.parametrize("node", ["node01", "node02"])
def test_nothing_left_in_shm(pod, node):
    assert pod.node(node, "ls", "-A", "/dev/shm").strip() == ""
