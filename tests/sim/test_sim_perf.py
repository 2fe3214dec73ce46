"""The performance MODEL: busbw conditions, step time ordering, output shapes."""

import json
import re
import statistics

import pytest

from npu_sim import perf

LINE = re.compile(r"^ \[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] iteration +(\d+)/ +(\d+) \| consumed samples: +\d+ \| "
                  r"elapsed time per iteration \(ms\): (\d+\.\d) \| throughput per GPU \(TFLOP/s/GPU\): \d+\.\d \| "
                  r"learning rate: \d\.\d{6}E[-+]\d\d \| global batch size: +\d+ \| lm loss: \d\.\d{6}E[-+]\d\d \| "
                  r"loss scale: 1\.0 \| grad norm: \d+\.\d{3} \| number of skipped iterations: +0 \| number of nan iterations: +0 \|$")

TUNED_ENV = {"HCCL_RDMA_SL": "4", "HCCL_RDMA_TC": "132"}


def _tune(node, mtu=9000):
    for npu in node.data["npus"]:
        npu["net"]["pfc"] = [0, 0, 0, 0, 1, 0, 0, 0]
        npu["net"]["dscp_to_tc"][33] = 3
        npu["net"]["mtu"] = mtu
    node.save()


def _step_ms(node, env, steps=6):
    rc, out, err = node.sub("npu-sim", "train", "--steps", str(steps), "--seed", "7", env=env)
    assert rc == 0, err
    times = []
    for line in out.splitlines():
        found = LINE.match(line)
        assert found, line
        times.append(float(found.group(3)))
    return sum(times[1:]) / len(times[1:])


def test_busbw_needs_every_condition(nodes):
    one, two = nodes("node01", 1), nodes("node02", 2)
    states = [one.data, two.data]
    assert perf.inter_busbw(states, TUNED_ENV) == perf.ROCE_LOSSY_GBPS
    _tune(one)
    _tune(two)
    states = [one.reload(), two.reload()]
    assert perf.inter_busbw(states, TUNED_ENV) == 25.0 * 0.9
    assert perf.roce_check(states, TUNED_ENV) == []
    assert perf.inter_busbw(states, {"HCCL_RDMA_SL": "3", "HCCL_RDMA_TC": "132"}) == perf.ROCE_LOSSY_GBPS
    assert perf.inter_busbw(states, {"HCCL_RDMA_SL": "4", "HCCL_RDMA_TC": "128"}) == perf.ROCE_LOSSY_GBPS
    assert perf.inter_busbw(states, {"HCCL_RDMA_SL": "4"}) == perf.ROCE_LOSSY_GBPS
    _tune(two, mtu=4200)
    reasons = perf.roce_check([one.reload(), two.reload()], TUNED_ENV)
    assert any("not jumbo" in r for r in reasons) and any("MTU differs" in r for r in reasons)
    _tune(two, mtu=9200)
    assert perf.roce_check([one.reload(), two.reload()], TUNED_ENV) == ["MTU differs between ports: 9000,9200"]
    assert perf.intra_busbw() == pytest.approx(7 * 28 * 0.7) == pytest.approx(137.2)


def test_step_time_falls_with_tuning(nodes):
    one, two = nodes("node01", 1), nodes("node02", 2)
    untuned = _step_ms(one, {})
    _tune(one)
    _tune(two)
    network = _step_ms(one, TUNED_ENV)
    bound = _step_ms(one, dict(TUNED_ENV, NPU_SIM_NUMA_NODE="6"))
    one.sub("cpupower", "frequency-set", "-g", "performance")
    best = _step_ms(one, dict(TUNED_ENV, NPU_SIM_NUMA_NODE="6"))
    assert untuned > network > bound > best
    assert untuned / best > 1.5


def test_train_is_deterministic_and_counts_steps(sim):
    first = sim.sub("npu-sim", "train", "--steps", "10", "--seed", "3")[1].splitlines()
    second = sim.sub("npu-sim", "train", "--steps", "10", "--seed", "3")[1].splitlines()
    strip = [line.split("] ", 1)[1] for line in first]
    assert strip == [line.split("] ", 1)[1] for line in second]
    assert len(first) == 10 and LINE.match(first[-1]).group(1) == "10"
    assert len(sim.sub("npu-sim", "train", "--steps", "10", "--log-interval", "5")[1].splitlines()) == 2


def test_busbw_command(nodes):
    one, _two = nodes("node01", 1), nodes("node02", 2)
    report = json.loads(one.sub("npu-sim", "busbw")[1])
    assert report["nodes"] == 2 and report["lossless"] is False and report["reasons"]


def test_allreduce_command(nodes):
    one, two = nodes("node01", 1), nodes("node02", 2)
    out = one.sub("npu-sim", "allreduce", "-b", "1M", "-e", "1G")[1].splitlines()
    assert out[0].startswith("the minbytes is 1048576, maxbytes is 1073741824")
    slow = float(out[-1].split("|")[2])
    _tune(one)
    _tune(two)
    fast = float(one.sub("npu-sim", "allreduce", "-b", "1M", "-e", "1G", env=TUNED_ENV)[1].splitlines()[-1].split("|")[2])
    assert fast > 5 * slow
    # busbw derived as tools do: alg * 2(n-1)/n with n = 16 ranks: every port of a node (8 x 22.5 GB/s) capped by the
    # intra-node HCCS figure (137.2), less the latency of the 1 GiB message; lossy RoCE: a few GB/s for the job
    assert 130 < fast * 2 * 15 / 16 < 137.2
    assert slow * 2 * 15 / 16 < 3.0


def test_crossnode_busbw_is_every_port_of_a_node_capped_by_hccs(nodes):
    one, two = nodes("node01", 1), nodes("node02", 2)
    states = [one.data, two.data]
    assert perf.crossnode_busbw(states, TUNED_ENV, 8) == perf.ROCE_LOSSY_GBPS   # lossy: a few GB/s for the whole job
    _tune(one)
    _tune(two)
    states = [one.reload(), two.reload()]
    assert perf.crossnode_busbw(states, TUNED_ENV, 8) == pytest.approx(min(137.2, 8 * 22.5)) == pytest.approx(137.2)
    assert perf.crossnode_busbw(states, TUNED_ENV, 4) == pytest.approx(min(3 * 28 * 0.7, 4 * 22.5)) == pytest.approx(58.8)
    assert two.sub("npu-sim", "fault", "set", "slow-node")[0] == 0
    slowed = [one.reload(), two.reload()]
    assert perf.crossnode_busbw(slowed, TUNED_ENV, 8) == pytest.approx(8 * 22.5 * 0.25) == pytest.approx(45.0)
    # the stage 4 gate: 80 % of every port of a node (8 x 25 GB/s) capped by the intra-node busbw (docs/stages)
    gate = 0.8 * min(8 * 25.0, perf.intra_busbw(states))
    assert perf.allreduce_busbw(states, 2, 8, TUNED_ENV) >= gate > perf.allreduce_busbw(slowed, 2, 8, TUNED_ENV)
    assert perf.allreduce_busbw(states, 2, 8, {}) < gate   # HCCL_RDMA_SL/TC unset: lossy


def test_train_is_deterministic_for_state_and_seed(nodes):
    one = nodes("node01", 1)
    one.data["settings"]["clock"] = 1767225600.0  # 2026-01-01 00:00:00 UTC
    one.save()
    first = one.sub("npu-sim", "train", "--steps", "4", "--seed", "3")
    again = one.sub("npu-sim", "train", "--steps", "4", "--seed", "3")
    assert first == again and first[0] == 0
    # the lines are dated from the state's clock, not from the wall clock of the run
    assert first[1].startswith(" [2026-01-01 ") or first[1].startswith(" [2025-12-31 ")
    assert one.sub("npu-sim", "train", "--steps", "4", "--seed", "4")[1] != first[1]


def _times(out):
    return [float(LINE.match(line).group(3)) for line in out.splitlines()]


def test_train_without_seed_differs_between_runs_and_with_seed_does_not(sim):
    sim.data["settings"]["clock"] = 1767225600.0
    sim.save()
    runs = [sim.sub("npu-sim", "train", "--steps", "5")[1] for _run in range(3)]
    assert len(set(runs)) == 3, "runs without --seed must differ"
    assert all(LINE.match(line) for run in runs for line in run.splitlines())
    seeded = [sim.sub("npu-sim", "train", "--steps", "5", "--seed", "11")[1] for _run in range(2)]
    assert seeded[0] == seeded[1]


def test_noise_fault_widens_the_jitter(sim):
    sim.data["settings"]["clock"] = 1767225600.0  # dated lines: the same seed gives the same text
    sim.save()
    quiet = _times(sim.sub("npu-sim", "train", "--steps", "60", "--seed", "5")[1])[1:]
    base = statistics.mean(quiet)
    assert max(abs(t / base - 1) for t in quiet) < 0.02
    assert sim.sub("npu-sim", "fault", "set", "noise")[0] == 0
    noisy = _times(sim.sub("npu-sim", "train", "--steps", "60", "--seed", "5")[1])[1:]
    spread = [t / base - 1 for t in noisy]
    assert max(abs(x) for x in spread) <= 0.081 and max(abs(x) for x in spread) > 0.05
    assert statistics.pstdev(noisy) > 3 * statistics.pstdev(quiet)
    # --seed stays reproducible under the fault; without it every run differs
    assert sim.sub("npu-sim", "train", "--steps", "8", "--seed", "5")[1] == sim.sub("npu-sim", "train", "--steps", "8", "--seed", "5")[1]
    assert sim.sub("npu-sim", "fault", "set", "noise", "--value", "20")[0] == 0
    wide = _times(sim.sub("npu-sim", "train", "--steps", "60", "--seed", "5")[1])[1:]
    assert max(abs(t / base - 1) for t in wide) > 0.12
    assert sim.sub("npu-sim", "fault", "set", "noise", "--value", "loud")[0] == 2


def test_noise_fault_shifts_successive_runs_so_three_runs_spread(sim):
    def mean_step(text):
        return statistics.mean(_times(text)[2:])
    quiet = [mean_step(sim.sub("npu-sim", "train", "--steps", "20")[1]) for _run in range(3)]
    assert statistics.pstdev(quiet) / statistics.mean(quiet) < 0.01
    assert "noisy_runs" not in sim.reload()["settings"]        # no state write without the fault
    assert sim.sub("npu-sim", "fault", "set", "noise", "--value", "10")[0] == 0
    noisy = [mean_step(sim.sub("npu-sim", "train", "--steps", "20")[1]) for _run in range(3)]
    cv = statistics.stdev(noisy) / statistics.mean(noisy)
    assert 0.07 < cv < 0.13, noisy
    assert noisy[0] > noisy[2] > noisy[1]                     # +10 %, -10 %, 0 %
    assert sim.reload()["settings"]["noisy_runs"] == 3


def test_a_held_device_halves_the_intra_busbw(nodes):
    one = nodes("node01", 1)
    assert perf.intra_busbw([one.data]) == pytest.approx(137.2)
    assert one.sub("npu-sim", "fault", "set", "process", "--device", "3")[0] == 0
    assert perf.intra_busbw([one.reload()]) == pytest.approx(68.6)
    report = json.loads(one.sub("npu-sim", "busbw")[1])
    assert report["intra_busbw_gbs"] == 68.6 and report["devices_held"] is True
    one.sub("npu-sim", "fault", "clear")
    one.data["npus"][5]["processes"] = [{"pid": 4242, "name": "python", "memory_mb": 2048}]
    one.save()
    assert perf.intra_busbw([one.data]) == pytest.approx(68.6)


def test_busbw_report_names_what_slows_the_run(nodes):
    one, two, three = nodes("node01", 1), nodes("node02", 2), nodes("node03", 3)
    for node in (one, two, three):
        _tune(node)
    fast = json.loads(one.sub("npu-sim", "busbw", env=TUNED_ENV)[1])
    assert (fast["inter_busbw_gbs"], fast["slow_factor"], fast["slowed_by"]) == (22.5, 1.0, [])
    assert three.sub("npu-sim", "fault", "set", "slow-port", "--device", "6", "--value", "0.4")[0] == 0
    assert two.sub("npu-sim", "fault", "set", "slow-node")[0] == 0
    report = json.loads(one.sub("npu-sim", "busbw", env=TUNED_ENV)[1])
    assert report["slowed_by"] == [{"node": "node02", "kind": "slow-node", "device": None, "factor": 0.25},
                                   {"node": "node03", "kind": "slow-port", "device": 6, "factor": 0.4}]
    assert report["slow_factor"] == 0.25
    assert report["inter_busbw_gbs"] == pytest.approx(22.5 * 0.25, abs=0.01)
    assert report["intra_busbw_gbs"] == 137.2 and report["lossless"] is True and report["reasons"] == []
    # the cross-node AllReduce of the step is slower too
    assert report["step_time_ms"] > fast["step_time_ms"] + 200
    # the model functions agree with the report
    states = [one.reload(), two.reload(), three.reload()]
    assert perf.slow_factor(states) == 0.25
    assert perf.slow_factor(states[:1]) == 1.0
    assert perf.slow_factor([one.data, three.data]) == 0.4
    assert perf.slow_factor([one.data, three.data], npus_per_node=4) == 1.0


def test_slow_faults_do_not_touch_a_single_node(sim):
    before = json.loads(sim.sub("npu-sim", "busbw")[1])
    assert sim.sub("npu-sim", "fault", "set", "slow-node", "--value", "0.1")[0] == 0
    assert sim.sub("npu-sim", "fault", "set", "slow-port", "--device", "0")[0] == 0
    after = json.loads(sim.sub("npu-sim", "busbw")[1])
    assert after == before and after["slowed_by"] == [] and after["slow_factor"] == 1.0
    table = sim.sub("npu-sim", "allreduce", "-b", "1G", "-e", "1G")[1].splitlines()[-1]
    assert float(table.split("|")[2]) * 2 * 7 / 8 == pytest.approx(137.2, rel=0.01)


def test_a_job_bound_to_a_far_numa_node_is_slower_than_unbound(nodes):
    """NPU 0 of an Atlas 800T A2 sits on NUMA node 6 (npu-smi info -t topo): bound there the step is fastest, bound to
    node 0 (the other socket) slower than unbound; a job on NPU 4 (node 0) is near on node 0."""
    one, two = nodes("node01", 1), nodes("node02", 2)
    _tune(one)
    _tune(two)
    assert [n["numa_node"] for n in one.reload()["npus"]][:5:4] == [6, 0]
    unbound = _step_ms(one, TUNED_ENV)
    near = _step_ms(one, dict(TUNED_ENV, NPU_SIM_NUMA_NODE="6"))
    far = _step_ms(one, dict(TUNED_ENV, NPU_SIM_NUMA_NODE="0"))
    assert near < unbound < far
    assert far / near == pytest.approx(1.0 + perf.FAR_NUMA_PCT / 100.0, rel=0.03)
    assert _step_ms(one, dict(TUNED_ENV, NPU_SIM_NUMA_NODE="0", ASCEND_RT_VISIBLE_DEVICES="4,5")) == pytest.approx(near, rel=0.03)
