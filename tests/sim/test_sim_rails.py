"""Each rail on its own: all_reduce_test honours ASCEND_RT_VISIBLE_DEVICES (the -genv of mpirun), so a run with one
NPU per node (-p 1) and NPU d made the only visible one measures rail d - NPU d of every node over its own port. Only
the job's ports slow it or count its CNPs; with one NPU per node there is no HCCS part, so a healthy rail reaches the
port's 22.5 GB/s and a slow-port fault on NPU d of one node drops rail d alone."""

import re
import sys

import pytest

from npu_sim import model
from npu_sim import mpi
from npu_sim import perf

TUNED = ["-genv", "HCCL_RDMA_SL", "4", "-genv", "HCCL_RDMA_TC", "132"]
TUNED_ENV = {"HCCL_RDMA_SL": "4", "HCCL_RDMA_TC": "132"}
ROW = re.compile(r"^(\d+) +\| (\d+\.\d\d) +\| (\d+\.\d{5}) +\| (success|NULL)$")
PORT = 25.0 * 0.9  # the model's lossless figure of one 200GE port


def _tune(node):
    for npu in node.data["npus"]:
        npu["net"]["pfc"] = [0, 0, 0, 0, 1, 0, 0, 0]
        npu["net"]["dscp_to_tc"][33] = 3
        npu["net"]["mtu"] = 9000
    node.save()


def _run(node, hosts, npus, visible=None, genv=None):
    """mpirun -> all_reduce_test -b 1G -e 1G -p npus over ``hosts``, NPUs ``visible`` made visible -> (rc, out, err)."""
    args = ["-n", str(npus * len(hosts.split(","))), "-hosts", hosts] + list(TUNED if genv is None else genv)
    if visible is not None:
        args += ["-genv", "ASCEND_RT_VISIBLE_DEVICES", str(visible)]
    program = [sys.executable, "-m", "npu_sim", "all_reduce_test", "-b", "1G", "-e", "1G", "-p", str(npus)]
    return node.sub("mpirun", *(args + program), env={"ASCEND_RT_VISIBLE_DEVICES": ""})


def _busbw(node, hosts, npus, visible=None):
    rc, out, err = _run(node, hosts, npus, visible)
    assert (rc, err) == (0, ""), err
    ranks = npus * len(hosts.split(","))
    alg = float(ROW.match(out.splitlines()[-1]).group(3))
    return alg * 2 * (ranks - 1) / ranks


def _cnp(node):
    node.reload()
    return [(npu["net"].get("stats") or {}).get("roce_tx_cnp_pkt_num", 0) for npu in node.data["npus"]]


def test_the_visible_devices_are_the_jobs_npus():
    assert mpi.visible_devices({}, 8) == (list(range(8)), [])
    assert mpi.visible_devices({"ASCEND_RT_VISIBLE_DEVICES": "3"}, 8) == ([3], [])
    assert mpi.visible_devices({"ASCEND_RT_VISIBLE_DEVICES": "6, 2,6"}, 8) == ([6, 2], [])
    assert mpi.visible_devices({"ASCEND_RT_VISIBLE_DEVICES": "9,x"}, 8) == ([], ["9", "x"])
    assert mpi.job_devices({"ASCEND_RT_VISIBLE_DEVICES": "4,5,6"}, 8, 2) == [4, 5]
    assert mpi.job_devices({}, 8, 4) == [0, 1, 2, 3]


def test_slow_faults_count_only_the_jobs_ports(nodes):
    one, two = nodes("node01", 1), nodes("node02", 2)
    assert two.sub("npu-sim", "fault", "set", "slow-port", "--device", "3", "--value", "0.1")[0] == 0
    states = [one.data, two.reload()]
    assert model.slow_faults(states[1], devices=[3]) == [("slow-port", 3, 0.1)]
    assert model.slow_faults(states[1], devices=[0, 4]) == []
    assert model.slow_faults(states[1], npus=4) == [("slow-port", 3, 0.1)]   # NPUs 0-3, as before
    assert model.slow_faults(states[1], npus=3) == []
    assert perf.slow_culprits(states, devices=[3]) == [{"node": "node02", "kind": "slow-port", "device": 3, "factor": 0.1}]
    assert perf.slow_factor(states, 1, devices=[3]) == 0.1
    assert perf.slow_factor(states, 1, devices=[2]) == 1.0
    assert perf.slow_factor(states) == 0.1 and perf.slow_factor(states, 3) == 1.0   # the old callers
    # one NPU per node has no HCCS part: the port's figure times the slow factor (not capped at one HCCS link, 19.6)
    _tune(one)
    _tune(two)
    states = [one.reload(), two.reload()]
    assert perf.crossnode_busbw(states, TUNED_ENV, 1, devices=[0]) == pytest.approx(PORT)
    assert perf.crossnode_busbw(states, TUNED_ENV, 1, devices=[3]) == pytest.approx(PORT * 0.1)
    assert perf.crossnode_busbw(states, {}, 1, devices=[0]) == perf.ROCE_LOSSY_GBPS       # lossy: a few GB/s
    assert perf.crossnode_busbw(states, TUNED_ENV, 8) == pytest.approx(8 * PORT * 0.1)     # the whole job: 18 GB/s
    assert perf.crossnode_busbw(states, TUNED_ENV, 2) == pytest.approx(28 * 0.7)           # NPUs 0-1: not slowed
    # a slow node slows every rail
    assert one.sub("npu-sim", "fault", "set", "slow-node", "--value", "0.5")[0] == 0
    assert perf.crossnode_busbw([one.reload(), two.reload()], TUNED_ENV, 1, devices=[0]) == pytest.approx(PORT * 0.5)


def test_a_slow_port_drops_its_rail_only(nodes):
    one, two = nodes("node01", 1), nodes("node02", 2)
    _tune(one)
    _tune(two)
    assert two.sub("npu-sim", "fault", "set", "slow-port", "--device", "3", "--value", "0.1")[0] == 0
    # rail 3: NPU 3 of node01 and of node02, 2 ranks (busbw = algbw), its port at 10 %
    assert _busbw(one, "node01,node02", 1, visible=3) == pytest.approx(PORT * 0.1, rel=0.01)
    # every other rail is healthy: the port's 22.5 GB/s less the latency of the 1 GiB message
    for device in (0, 2, 4, 7):
        assert _busbw(one, "node01,node02", 1, visible=device) == pytest.approx(PORT, rel=0.01), device
    # the whole job on every NPU is held back by the slow rail: 8 x 22.5 x 0.1 (not capped by HCCS)
    assert _busbw(one, "node01,node02", 8) == pytest.approx(8 * PORT * 0.1, rel=0.02)
    # without ASCEND_RT_VISIBLE_DEVICES a run with -p 1 is NPU 0 of every node: rail 0
    assert _busbw(two, "node01,node02", 1) == pytest.approx(PORT, rel=0.01)
    # two visible NPUs, -p 2: the job is NPUs 3 and 5, so the slow port is in it
    assert _busbw(one, "node01,node02", 2, visible="5,3") == pytest.approx(min(28 * 0.7, 2 * PORT * 0.1), rel=0.02)


def test_a_rail_counts_its_cnps_on_its_own_npu(nodes):
    one, two = nodes("node01", 1), nodes("node02", 2)
    _tune(one)
    _tune(two)
    per_run = model.cnp_per_port([1024 ** 3], 20, 5, 2)
    assert _cnp(one) == _cnp(two) == [0] * 8
    _busbw(one, "node01,node02", 1, visible=5)
    assert _cnp(one) == _cnp(two) == [0] * 5 + [per_run] + [0] * 2
    _busbw(two, "node01,node02", 2, visible="6,7")
    assert _cnp(one) == [0] * 5 + [per_run] * 3


def test_visible_devices_the_node_does_not_have_or_fewer_than_p(nodes):
    one, _two = nodes("node01", 1), nodes("node02", 2)
    rc, out, err = _run(one, "node01,node02", 1, visible=9)
    assert (rc, out) == (1, "")
    assert err == ("npu-sim: ASCEND_RT_VISIBLE_DEVICES=9 names no NPU of node01 (NPUs 0-7): no device is visible to "
                   "the job\n")
    # hccl_test checks -p against the devices the runtime shows: one visible NPU
    rc, out, _err = _run(one, "node01,node02", 2, visible=4)
    assert (rc, out) == (255, "Error: [-p,--npus <npus used for one node>] is invalid, npus must be greater than or "
                              "equal to 1 and less than or equal to 1.\n")
