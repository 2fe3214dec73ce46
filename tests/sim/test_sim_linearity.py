"""The training job on some NPUs of one node (npu-sim train --npus, ASCEND_RT_VISIBLE_DEVICES): linearity per NPU and
the slowest NPU of a synchronous job (a throttled AI Core)."""

import re

import pytest

from npu_sim import perf

TPUT = re.compile(r"elapsed time per iteration \(ms\): (\d+\.\d) \| throughput per GPU \(TFLOP/s/GPU\): (\d+\.\d) \|")


def _run(node, *args, env=None):
    rc, out, err = node.sub("npu-sim", "train", "--steps", "6", "--seed", "7", *args, env=env or {})
    assert rc == 0, err
    rows = [tuple(float(v) for v in TPUT.search(line).groups()) for line in out.splitlines()]
    assert len(rows) == 6
    steps = [r[0] for r in rows[1:]]
    tflops = [r[1] for r in rows[1:]]
    return sum(steps) / len(steps), sum(tflops) / len(tflops)


def _linearity(node, npus, env=None):
    one_tflops = _run(node, "--npus", "1", env=env)[1]
    tflops = _run(node, "--npus", str(npus), env=env)[1]
    return tflops / one_tflops * 100.0


def test_a_healthy_node_scales_near_linearly_inside(nodes):
    one = nodes("node01", 1)
    two_ms = _run(one, "--npus", "2")[0]
    eight_ms = _run(one, "--npus", "8")[0]
    one_ms = _run(one, "--npus", "1")[0]
    # one NPU moves no gradients; more NPUs move more of them over HCCS, each rung a little slower per step
    assert one_ms < two_ms < eight_ms
    for npus in (2, 4, 8):
        assert 95.0 <= _linearity(one, npus) <= 100.0
    # without --npus the job is the whole node, as before (the figure of 8 NPUs)
    whole_ms = _run(one)[0]
    assert whole_ms == pytest.approx(eight_ms, rel=0.02)


def test_a_throttled_npu_slows_the_rung_that_adds_it(nodes):
    one = nodes("node01", 1)
    assert one.sub("npu-sim", "fault", "set", "throttle", "--device", "5", "--value", "900")[0] == 0
    assert _linearity(one, 4) >= 95.0  # NPUs 0-3: NPU 5 is not in the job
    eight = _linearity(one, 8)
    assert eight == pytest.approx(50.0, abs=3.0)  # the job runs at the pace of NPU 5, at half its rated frequency
    # the NPUs the job sees decide: a job on NPUs 4-7 holds NPU 5 at once
    assert _linearity(one, 2, env={"ASCEND_RT_VISIBLE_DEVICES": "4,5,6,7"}) < 60.0
    assert _linearity(one, 2, env={"ASCEND_RT_VISIBLE_DEVICES": "6,7"}) >= 95.0


def test_npus_outside_the_node_are_refused(nodes):
    one = nodes("node01", 1)
    rc, _out, err = one.sub("npu-sim", "train", "--steps", "3", "--npus", "9")
    assert rc != 0 and "--npus must be 1-8" in err


def test_throttle_factor_is_the_slowest_npu_of_the_job():
    state = {"npus": [{"id": d, "aicore_freq_mhz": 1800} for d in range(8)],
             "faults": [{"kind": "throttle", "device": 3, "value": "600"}]}
    assert perf.throttle_factor([state], [0, 1, 2]) == 1.0
    assert perf.throttle_factor([state], [0, 3]) == pytest.approx(3.0)
    state["faults"] = [{"kind": "throttle", "device": 3}]  # no value: half the rated frequency
    assert perf.throttle_factor([state], [3]) == pytest.approx(2.0)
