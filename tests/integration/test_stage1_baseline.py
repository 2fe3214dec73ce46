"""Stage 1's snapshot: the NPUs and their ports read in one module run per node, and a node that cannot be read
stops the stage with the tool's words (site.yml --tags stage1 on the 2-node PoD; stage 1 changes nothing)."""

import glob
import json
import os

SIM = "/usr/local/sbin/npu-sim"


def _snapshot(pod, node):
    paths = sorted(glob.glob(os.path.join(pod.reports, "*", "stage1-baseline", node + ".snapshot.json")), key=os.path.getmtime)
    with open(paths[-1], encoding="utf-8") as handle:
        return json.load(handle)


def test_snapshot_holds_every_npu_and_every_port(pod):
    before = pod.snapshot()
    rc, out = pod.playbook("site.yml", None, ["--tags", "stage1"])
    assert rc == 0, out[-3000:]
    for node in ("node01", "node02"):
        snap = _snapshot(pod, node)
        assert sorted(snap["npu"]["devices"]) == [str(d) for d in range(8)]
        assert [p["device"] for p in snap["ports"]] == list(range(8))
        assert {p["mtu"] for p in snap["ports"]} == {1500}
        assert all("tls" in p and "gateway" in p for p in snap["ports"])
        assert snap["stack"]["driver"] and snap["stack"]["fingerprint"]
    assert pod.snapshot() == before


def test_a_node_whose_ports_cannot_be_read_stops_the_stage_with_the_tool_words(pod):
    pod.node("node02", SIM, "fault", "set", "missing-tool", "--value", "hccn_tool")
    try:
        rc, out = pod.playbook("site.yml", None, ["--tags", "stage1"])
    finally:
        pod.node("node02", SIM, "fault", "clear", "missing-tool")
    assert rc == 2, out[-3000:]
    assert "Stage 1 could not read node02 for its snapshot: node02: hccn_tool not found" in out
    assert "Stage 1 could not read node01" not in out


def test_the_profiled_split_is_kept_in_the_baseline(pod):
    """The simulated job writes the torch_npu profiler's files (NPU_SIM_PROFILE_DIR); stage 1 reads them on the
    benchmark's host and keeps the split: the untuned PoD's lossy RoCE makes communication the bottleneck."""
    where = "/var/lib/npuops/profile-it"
    rc, out = pod.playbook("site.yml", {"baseline_command": SIM + " train --steps 12", "baseline_runs": 1,
                                        "baseline_warmup_steps": 2, "baseline_min_steps": 1, "baseline_profile_dir": where,
                                        "baseline_environment": {"NPU_SIM_PROFILE_DIR": where}},
                           ["--tags", "stage1"])
    assert rc == 0, out[-3000:]
    paths = sorted(glob.glob(os.path.join(pod.reports, "*", "stage1-baseline", "baseline.json")), key=os.path.getmtime)
    with open(paths[-1], encoding="utf-8") as handle:
        kept = json.load(handle)["profile"]
    assert kept["host"] == "node01" and len(kept["steps"]) == 2
    assert kept["bottleneck"]["layer"] == "communication"
    assert kept["steps"][0]["comm_share_pct"] > 15
    assert any(f["check"] == "profile_comm_share" for f in kept["findings"])
