"""A rank of a launched job (npu-launch, torchrun: LOCAL_RANK, RANK, WORLD_SIZE in its environment) in the training
model: it runs on device LOCAL_RANK of the visible NPUs, says at its start which NPU and binding it runs with (one
line on stderr), and only the job's last rank prints the iteration lines, as MindSpeed does (print_rank_last)."""

import re

import pytest

from npu_sim import perf

RANK_LINE = re.compile(r"^npu-sim train: rank (\d+) of (\d+), local rank (\d+): NPU (\d+) \(NUMA node (\d+)\); "
                       r"CPUs bound to NUMA node (\S+), memory to (\S+); OMP_NUM_THREADS=(\S+) "
                       r"CPU_AFFINITY_CONF=(\S+) MASTER_ADDR=(\S+) MASTER_PORT=(\S+)$", re.M)
ITERATION = re.compile(r"elapsed time per iteration \(ms\): ([\d.]+)")


def rank_env(local, rank=None, world=8, node=None, **extra):
    env = {"LOCAL_RANK": str(local), "RANK": str(local if rank is None else rank), "WORLD_SIZE": str(world),
           "MASTER_ADDR": "127.0.1.1", "MASTER_PORT": "29500", "OMP_NUM_THREADS": "12"}
    if node is not None:
        env.update(NPU_SIM_NUMA_NODE=str(node), NPU_SIM_MEM_NODE=str(node))
    env.update(extra)
    return env


@pytest.mark.parametrize("env, npu", [
    ({}, 0), ({"ASCEND_RT_VISIBLE_DEVICES": "4,5"}, 4), ({"LOCAL_RANK": "3"}, 3),
    ({"LOCAL_RANK": "1", "ASCEND_RT_VISIBLE_DEVICES": "4,5"}, 5), ({"LOCAL_RANK": "x"}, 0),
])
def test_the_npu_of_a_rank_is_device_local_rank_of_the_visible_ones(env, npu):
    assert perf.job_npu(env) == npu


def test_a_rank_says_its_npu_and_binding_and_only_the_last_rank_prints_the_log(sim):
    rc, out, err = sim.sub("npu-sim", "train", "--steps", "3", "--seed", "1", env=rank_env(3, node=4))
    assert rc == 0, err
    assert out == ""  # rank 3 of 8 is not the last rank
    found = RANK_LINE.findall(err)
    assert found == [("3", "8", "3", "3", "4", "4", "4", "12", "unset", "127.0.1.1", "29500")], err
    rc, out, err = sim.sub("npu-sim", "train", "--steps", "3", "--seed", "1",
                           env=rank_env(7, node=2, CPU_AFFINITY_CONF="1,npu7:60-71"))
    assert rc == 0 and len(ITERATION.findall(out)) == 3, err
    assert RANK_LINE.search(err).group(4, 5, 6, 9) == ("7", "2", "2", "1,npu7:60-71")


def test_a_process_that_is_not_a_rank_prints_the_log_and_no_rank_line(sim):
    rc, out, err = sim.sub("npu-sim", "train", "--steps", "2", "--seed", "1")
    assert rc == 0 and err == "" and len(ITERATION.findall(out)) == 2


def test_a_rank_bound_to_another_npus_numa_node_is_slower(sim):
    # NPU 0 is on NUMA node 6 of an Atlas 800T A2, NPU 2 on node 4: node 4 is near for local rank 2, far for rank 0
    def step(local):
        rc, out, err = sim.sub("npu-sim", "train", "--steps", "4", "--seed", "5",
                               env=rank_env(local, rank=7, node=4))
        assert rc == 0, err
        return float(ITERATION.findall(out)[-1])

    assert step(0) > step(2) * 1.1
