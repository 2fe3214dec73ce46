"""The simulated job's profiler output, read by the collection's own parsers (their correctness comes from the real
captures of tests/unit/fixtures/profiler): a lossy or slow port raises communication, no NUMA binding raises free."""

import glob
import os

from npu_sim import perf

from ansible_collections.npuops.ascend.plugins.modules import profile_info

TUNED_ENV = {"HCCL_RDMA_SL": "4", "HCCL_RDMA_TC": "132", "NPU_SIM_NUMA_NODE": "6"}


def _tune(node):
    for npu in node.data["npus"]:
        npu["net"]["pfc"] = [0, 0, 0, 0, 1, 0, 0, 0]
        npu["net"]["dscp_to_tc"][33] = 3
        npu["net"]["mtu"] = 9000
    node.data["governor"] = "performance"
    node.save()


def _profile(states, local, env, target):
    perf.train_lines(states, local, steps=5, seed=1, env=dict(env, NPU_SIM_PROFILE_DIR=str(target)), start=0)
    return profile_info.read_profile(str(target))


def test_profile_split_follows_the_state(nodes, tmp_path):
    one, two = nodes("node01", 1), nodes("node02", 2)
    _tune(one)
    _tune(two)
    states = [one.reload(), two.reload()]
    good = _profile(states, states[0], TUNED_ENV, tmp_path / "good")
    assert good["errors"] == [] and len(good["steps"]) == 2 and good["dirs"][0]["rank"] == 0
    item = good["steps"][0]
    assert abs(item["computing_us"] + item["comm_not_overlapped_us"] + item["free_us"] - item["step_time_us"]) < 1
    assert item["comm_share_pct"] < 15 and item["free_share_pct"] < 10 and item["aicore_util_pct"] > 80
    assert item["aicore_from"] == "kernel_details" and item["top_comm_from"] == "communication.json"
    assert len(glob.glob(os.path.join(str(tmp_path / "good"), "*_ascend_pt", "ASCEND_PROFILER_OUTPUT", "*"))) == 5
    lossy = _profile(states, states[0], dict(TUNED_ENV, HCCL_RDMA_TC="128"), tmp_path / "lossy")
    assert lossy["summary"]["comm_share_pct"] > 15 > good["summary"]["comm_share_pct"]
    unbound = dict(TUNED_ENV)
    unbound.pop("NPU_SIM_NUMA_NODE")
    far = _profile(states, states[0], unbound, tmp_path / "unbound")
    assert far["summary"]["free_share_pct"] > 10 > good["summary"]["free_share_pct"]
    assert far["summary"]["comm_share_pct"] < good["summary"]["comm_share_pct"]


def test_the_job_profiles_only_when_its_environment_asks(sim, tmp_path, monkeypatch):
    monkeypatch.setenv("NPU_SIM_PROFILE_DIR", str(tmp_path / "prof"))
    perf.train_lines([sim.data], sim.data, steps=3, seed=1, env={})  # the job's own environment says nothing
    assert not os.path.exists(str(tmp_path / "prof"))
    perf.train_lines([sim.data], sim.data, steps=3, seed=1)  # env None: the process environment
    assert len(glob.glob(os.path.join(str(tmp_path / "prof"), "*_ascend_pt"))) == 1
