"""One change at a time: site.yml with npuops_measure_each_stage on a fresh 2-node PoD of its own.

The benchmark of stage 1 runs again right after stages 4, 5 and 6 (npuops_measure_stages), and stage 9 says what each
stage bought, each measurement against the one before it. In the simulator's model, stage 4 makes the ports lossless
but the job only uses them once stage 5 has written HCCL_RDMA_SL/TC (the benchmark sources that file), so stage 4 alone
buys nothing and stage 5 most of the gain; stage 6 (CPU governor performance) takes off about 5 % more.
"""

import glob
import json
import os

import pytest

from conftest import GROUP_VARS, own_pod

PREFIX = os.environ.get("NPUOPS_IT_MEASURE_PREFIX", "127.0.17")
NODES = ["node01", "node02"]


@pytest.fixture(scope="module")
def pod(tmp_path_factory):
    yield from own_pod(tmp_path_factory, "measure", PREFIX, len(NODES))


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def measured_run(pod):
    with open(os.path.join(pod.inventory_dir, "group_vars", "ascend_pod.yml"), "a", encoding="utf-8") as handle:
        handle.write("baseline_command: /usr/local/sbin/npu-sim train --steps 30\nbaseline_seq_length: 4096\n"
                     "baseline_runs: 2\nregression_runs: 2\nbaseline_min_steps: 10\n")
    assert "baseline_command" not in GROUP_VARS
    rc, out = pod.playbook("site.yml", {"npuops_measure_each_stage": True, "npuops_measure_stages": [4, 5, 6],
                                        "npuops_run_id": "measured"},
                           ["--tags", "stage1,stage4,stage5,stage6,stage9"])
    assert rc == 0, out[-6000:]
    return os.path.join(pod.reports, "measured"), out


def test_each_tuning_stage_is_measured_and_stage_9_shows_what_each_bought(measured_run):
    run_dir, out = measured_run
    kept = sorted(os.path.basename(p) for p in glob.glob(os.path.join(run_dir, "pod", "measure-stage*.json")))
    assert kept == ["measure-stage4.json", "measure-stage5.json", "measure-stage6.json"]
    for name in kept:
        record = _load(os.path.join(run_dir, "pod", name))
        assert record["run"] == "measured" and record["host"] == "node01" and record["measurement"]["measured"], record
        assert len(record["measurement"]["runs"]) == 2
    report = _load(os.path.join(run_dir, "stage9-regression", "regression.json"))
    rows = dict((row["stage"], row) for row in report["steps"])
    assert sorted(rows) == [4, 5, 6, 9], report["steps"]
    step = dict((stage, dict((m["metric"], m) for m in row["metrics"])["mean_ms"]) for stage, row in rows.items())
    # stage 4 alone: the job does not use the lossless ports before stage 5 writes HCCL_RDMA_SL/TC
    assert rows[4]["against"] == "the stage 1 baseline" and rows[4]["verdict"] == "unchanged", rows[4]
    # stage 5: the cross-node part of the step at lossless speed, far more than the 5 % an improvement needs
    assert rows[5]["verdict"] == "improved" and step[5]["change_pct"] <= -20, rows[5]
    # stage 6: the CPU governor at performance, about 5 % (the model's figure)
    assert rows[6]["against"] == "the measurement after stage 5" and -7 <= step[6]["change_pct"] <= -3, rows[6]
    assert rows[9]["against"] == "the measurement after stage 6" and rows[9]["verdict"] == "unchanged", rows[9]
    # the play prints one line per stage, the report has the table
    assert "stage 5 (hccl_env): improved against the measurement after stage 4" in out
    with open(os.path.join(run_dir, "report.md"), encoding="utf-8") as handle:
        text = handle.read()
    assert "### What each stage bought" in text and "| stage 5 (hccl_env) | the measurement after stage 4 |" in text
    with open(os.path.join(run_dir, "stage9-regression", "regression.md"), encoding="utf-8") as handle:
        assert "## What each stage bought" in handle.read()


def test_without_the_option_the_measurement_plays_are_one_skipped_task(pod, measured_run):
    rc, out = pod.playbook("site.yml", {"npuops_run_id": "unmeasured"}, ["--tags", "stage5"])
    assert rc == 0, out[-4000:]
    assert not glob.glob(os.path.join(pod.reports, "unmeasured", "pod", "measure-stage*.json"))
    assert out.count("TASK [Measure what stage 5 bought, when npuops_measure_each_stage asks for it]") == 1
    assert "TASK [npuops.ascend.regression : Keep the measurement after this stage for stage 9]" not in out


def test_a_job_bound_to_a_far_numa_node_shows_in_stage_9s_split_of_the_step(pod, measured_run):
    """Stage 1 profiles the job bound to NPU 0's own NUMA node (6), stage 9 the same job bound to node 0, across the
    socket link (named as the change under test): the profiler's split shows the step's free (host) time grown and the
    layer that holds the job back moved to the host side."""
    profile = {"baseline_profile_dir": "/var/lib/npuops/profile",
               "baseline_environment": {"NPU_SIM_PROFILE_DIR": "/var/lib/npuops/profile", "HCCL_RDMA_SL": "4",
                                        "HCCL_RDMA_TC": "132"},
               "baseline_command": "numactl -N 6 -m 6 /usr/local/sbin/npu-sim train --steps 30",
               "regression_command": "numactl -N 0 -m 0 /usr/local/sbin/npu-sim train --steps 30",
               "regression_launch_change": "the job bound to NUMA node 0 instead of 6", "npuops_run_id": "far"}
    rc, out = pod.playbook("site.yml", profile, ["--tags", "stage1,stage9"])
    run_dir = os.path.join(pod.reports, "far")
    report = _load(os.path.join(run_dir, "stage9-regression", "regression.json"))
    comparison = report["comparison"]
    split = comparison.get("profile")
    assert split, (rc, out[-4000:])
    assert split["shares"]["free_share_pct"]["change_pp"] >= 8, split
    assert split["shares"]["comm_share_pct"]["after"] < split["shares"]["comm_share_pct"]["before"], split
    assert split["layer"]["after"] == "host/IO", split
    metrics = dict((m["metric"], m) for m in comparison["metrics"])
    assert metrics["comm_share_pct"]["before"] is not None and metrics["aicore_pct"]["verdict"] == "worse", metrics
    # the far binding is slower: stage 9 fails on the step time, naming the node
    assert rc == 2 and metrics["mean_ms"]["verdict"] == "regressed", metrics["mean_ms"]
    assert "where the time of a step goes (profiler): " in out and "held back by " in out
    baseline = _load(os.path.join(run_dir, "stage1-baseline", "baseline.json"))
    assert baseline["profile"]["bottleneck"]["layer"] in ("compute", "communication"), baseline["profile"]["bottleneck"]


def test_the_training_benchmark_ladder_names_the_node_that_breaks_the_scaling(pod, measured_run):
    """regression_scaling_command runs the training job on 1 node, then on both: with one slow port on node02 (a
    tenth of its speed) the two-node rung falls below 70 % of one node per NPU and stage 9 names node02.
    regression_linearity_command runs it on 1, 2, 4 and 8 NPUs of node01: NPU 6 throttled to 1500 MHz holds the
    8-NPU rung below the method's 95 %, a warning naming the NPUs that rung adds."""
    pod.node("node02", "/usr/local/sbin/npu-sim", "fault", "set", "slow-port", "--device", "3", "--value", "0.1")
    pod.node("node01", "/usr/local/sbin/npu-sim", "fault", "set", "throttle", "--device", "6", "--value", "1500")
    try:
        rc, out = pod.playbook("site.yml", {"regression_scaling_command": "/usr/local/sbin/npu-sim train --steps 30 --nodes {nodes}",
                                            "regression_linearity_command":
                                                "/usr/local/sbin/npu-sim train --steps 30 --nodes 1 --npus {npus}",
                                            "npuops_run_id": "ladder"}, ["--tags", "stage9"])
    finally:
        pod.node("node02", "/usr/local/sbin/npu-sim", "fault", "clear", "slow-port")
        pod.node("node01", "/usr/local/sbin/npu-sim", "fault", "clear", "throttle")
    report = _load(os.path.join(pod.reports, "ladder", "stage9-regression", "regression.json"))
    ladder = report["comparison"]["scaling"]
    assert [(r["nodes"], r["hosts"]) for r in ladder["rungs"]] == [(1, ["node01"]), (2, ["node01", "node02"])], ladder
    assert ladder["rungs"][0]["efficiency_pct"] == 100.0 and ladder["rungs"][1]["efficiency_pct"] < 70, ladder
    assert rc == 2 and "node02: the training benchmark over 2 nodes (node01, node02) runs at " in out, out[-3000:]
    assert "training benchmark scaling (efficiency per NPU against one node, at least 70 %): 1 node 100 %, 2 nodes " in out
    summary = _load(os.path.join(pod.reports, "ladder", "summary.json"))
    assert summary["nodes"]["node02"]["stage9"]["status"] == "failed"
    assert any("training benchmark over 2 nodes" in text for text in summary["nodes"]["node02"]["stage9"]["failures"])
    linearity = report["comparison"]["linearity"]
    assert [(r["npus"], r["devices"]) for r in linearity["rungs"]] == [
        (1, [0]), (2, [0, 1]), (4, [0, 1, 2, 3]), (8, list(range(8)))], linearity
    assert all(r["efficiency_pct"] >= 95 for r in linearity["rungs"][:3]), linearity
    assert 75 < linearity["rungs"][3]["efficiency_pct"] < 90, linearity
    assert "node01: the training benchmark on 8 NPUs of the node (0, 1, 2, 3, 4, 5, 6, 7) runs at " in out, out[-3000:]
    assert "this rung adds NPU 4, 5, 6, 7" in out
    assert "training benchmark inside the node (linearity per NPU against one NPU, near 95 %): 1 NPU 100 %, " in out
    warnings = summary["nodes"]["node01"]["stage9"]["warnings"]
    assert any("training benchmark on 8 NPUs" in text for text in warnings), warnings
