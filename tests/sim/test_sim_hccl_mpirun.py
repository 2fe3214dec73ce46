"""hccl_test's all_reduce_test and the mpirun stand-in: options, layout, the model behind the numbers."""

import os
import re
import sys

import pytest

from simhelpers import TOOLS, sample

TUNED_ENV = {"HCCL_RDMA_SL": "4", "HCCL_RDMA_TC": "132"}
ROW = re.compile(r"^(\d+) +\| (\d+\.\d\d) +\| (\d+\.\d{5}) +\| (success|NULL)$")


# a lossless cross-node AllReduce of 8-NPU nodes: 8 ports x 22.5 GB/s capped by the intra-node HCCS figure
LOSSLESS = min(8 * 22.5, 137.2)


def _tune(node):
    for npu in node.data["npus"]:
        npu["net"]["pfc"] = [0, 0, 0, 0, 1, 0, 0, 0]
        npu["net"]["dscp_to_tc"][33] = 3
        npu["net"]["mtu"] = 9000
    node.save()


def _rows(out):
    rows = [ROW.match(line) for line in out.splitlines()[2:]]
    assert all(rows), out
    return [(int(r.group(1)), float(r.group(2)), float(r.group(3)), r.group(4)) for r in rows]


def _busbw(alg, ranks):
    return alg * 2 * (ranks - 1) / ranks


def test_layout_follows_the_real_tool(sim):
    header = sample("extra_hccl_test.txt", "hcomm")[0]
    rc, out, err = sim.sub("all_reduce_test", "-b", "8K", "-e", "64M", "-f", "2", "-p", "8")
    assert (rc, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "the minbytes is 8192, maxbytes is 67108864, iters is 20, warmup_iters is 5"
    assert lines[1] == header
    rows = _rows(out)
    assert [r[0] for r in rows] == [8192 * 2 ** i for i in range(14)]
    for line in lines[2:]:
        size, avg, alg, check = line.split(" | ")
        assert len(size) == 17 and len(avg) == 14 and len(alg) == 20 and check == "success"
    for size, avg, alg, _check in rows:
        assert alg == pytest.approx(size / avg * 1e-3, rel=2e-3)


def test_intra_node_busbw_is_70_percent_of_hccs(sim):
    rows = _rows(sim.sub("all_reduce_test", "-b", "4G", "-e", "4G")[1])
    # a very large message approaches the model's 7 x 28 GB/s x 0.7 = 137.2 GB/s
    assert _busbw(rows[-1][2], 8) == pytest.approx(137.2, rel=0.002)


def test_options_change_the_first_line_and_check_column(sim):
    out = sim.sub("all_reduce_test", "-b", "1M", "-e", "4M", "-f", "2", "-n", "50", "-w", "3", "-c", "0",
                  "-d", "bfp16", "-o", "max", "-p", "8")[1]
    assert out.splitlines()[0] == "the minbytes is 1048576, maxbytes is 4194304, iters is 50, warmup_iters is 3"
    assert [r[3] for r in _rows(out)] == ["NULL"] * 3
    long_form = sim.sub("all_reduce_test", "--minbytes=1M", "--maxbytes", "4M", "--stepfactor", "2", "--check", "0")[1]
    assert [r[:3] for r in _rows(long_form)] == [r[:3] for r in _rows(out)]
    # without -f: steps of (max - min) / 10, as hccl_test does
    assert [r[0] for r in _rows(sim.sub("all_reduce_test", "-b", "1000", "-e", "2000")[1])] == list(range(1000, 2001, 100))
    # defaults: 64M .. 64M, one row
    assert [r[0] for r in _rows(sim.sub("all_reduce_test")[1])] == [64 * 1024 * 1024]


@pytest.mark.parametrize("args,text", [
    (["-p", "9"], "Error: [-p,--npus <npus used for one node>] is invalid, npus must be greater than or equal to 1 "
                  "and less than or equal to 8."),
    (["-c", "2"], "Error: [-c,--check] is invalid, check should be 0 or 1"),
    (["-d", "fp99"], "Error: [-d,--datatype] is invalid, Use [-h,--help] to check the correct input parameter."),
    (["-b", "2M", "-e", "1M"], "invalid option: maxbytes < minbytes, Check the [-b,--minbytes] and [-e,--maxbytes] options."),
    (["-f", "1"], "Error: [-f,--stepfactor] Must be greater than 1.0f, Start step mod."),
    (["-x", "1"], "invalid option \nTry [-h --help] for more information."),
])
def test_bad_options_print_the_tools_errors(sim, args, text):
    assert sim.sub("all_reduce_test", *args) == (255, text + "\n", "")


def test_a_held_device_halves_the_measured_busbw(sim):
    fast = _rows(sim.sub("all_reduce_test", "-b", "1G", "-e", "1G")[1])[0][2]
    assert sim.sub("npu-sim", "fault", "set", "process", "--device", "2", "--value", "python:4096")[0] == 0
    slow = _rows(sim.sub("all_reduce_test", "-b", "1G", "-e", "1G")[1])[0][2]
    assert _busbw(slow, 8) == pytest.approx(_busbw(fast, 8) / 2, rel=0.01)


def _mpirun(node, *args, env=None, hostfile=None):
    """mpirun -> all_reduce_test, both through python -m npu_sim (the wrappers ignore NPU_SIM_STATE)."""
    program = [sys.executable, "-m", "npu_sim", "all_reduce_test"]
    return node.sub("mpirun", *(list(args) + program + ["-b", "1G", "-e", "1G", "-p", "8"]), env=env)


def test_mpirun_hosts_choose_the_node_count(nodes, tmp_path):
    one, two, _three = nodes("node01", 1), nodes("node02", 2), nodes("node03", 3)
    single = _rows(_mpirun(one, "-n", "8")[1])[0][2]
    assert _busbw(single, 8) == pytest.approx(137.2, rel=0.01)
    lossy = _rows(_mpirun(one, "-n", "16", "-hosts", "node01,node02")[1])[0][2]
    assert _busbw(lossy, 16) == pytest.approx(3.0, rel=0.02)
    _tune(one)
    _tune(two)
    # the first two nodes of the PoD are tuned; -genv hands the RDMA settings to the program
    tuned = _rows(_mpirun(one, "-np", "16", "-hosts", "node01:8,node02:8", "-genv", "HCCL_RDMA_SL", "4",
                          "-genv", "HCCL_RDMA_TC", "132")[1])[0][2]
    assert _busbw(tuned, 16) == pytest.approx(LOSSLESS, rel=0.02)
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("# two nodes\nnode01:8\n\nnode02 slots=8\n")
    for flag in ("-f", "-hostfile", "--hostfile", "-machinefile"):
        rc, out, err = _mpirun(one, flag, str(hostfile), "-n", "16", "-env", "HCCL_RDMA_SL", "4",
                               "-genv", "HCCL_RDMA_TC=132", "-x", "PATH")
        assert (rc, err) == (0, ""), flag
        assert _busbw(_rows(out)[0][2], 16) == pytest.approx(LOSSLESS, rel=0.02), flag
    # three hosts: the untuned node03 makes RoCE lossy again
    assert _busbw(_rows(_mpirun(one, "-hosts", "node01,node02,node03", "-genv", "HCCL_RDMA_SL", "4", "-genv",
                                "HCCL_RDMA_TC", "132")[1])[0][2], 24) == pytest.approx(3.0, rel=0.02)


def test_a_run_measures_the_node_it_runs_on_and_the_hosts_it_names(nodes):
    one, two, three = nodes("node01", 1), nodes("node02", 2), nodes("node03", 3)
    assert three.sub("npu-sim", "fault", "set", "process", "--device", "4")[0] == 0
    # a single-node run on node03 measures node03 (held device: half), not the first node of the PoD
    assert _busbw(_rows(_mpirun(three, "-n", "8")[1])[0][2], 8) == pytest.approx(68.6, rel=0.01)
    assert _busbw(_rows(_mpirun(one, "-n", "8")[1])[0][2], 8) == pytest.approx(137.2, rel=0.01)
    _tune(one)
    _tune(two)
    # node02 + node01 named by node02: both tuned, so lossless; node03 is left out although it comes later
    tuned = _rows(_mpirun(two, "-hosts", "node02,node01", "-genv", "HCCL_RDMA_SL", "4", "-genv", "HCCL_RDMA_TC", "132")[1])
    assert _busbw(tuned[0][2], 16) == pytest.approx(LOSSLESS, rel=0.02)


def test_mpirun_runs_the_program_once_and_passes_its_status(sim):
    script = "echo run; echo \"$NPU_SIM_MPI_NODES $NPU_SIM_MPI_HOSTS $NPU_SIM_MPI_NP $FOO $BAR\"; exit 7"
    rc, out, err = sim.sub("mpirun", "--allow-run-as-root", "-n", "16", "-hosts", "a,b,a", "-genv", "FOO", "1",
                           "-env", "BAR", "x y", "-ppn", "8", "sh", "-c", script)
    assert (rc, out, err) == (7, "run\n2 a,b 16 1 x y\n", "")
    assert sim.sub("mpirun", "sh", "-c", "echo $NPU_SIM_MPI_NODES")[1] == "1\n"
    rc, out, err = sim.sub("mpirun", "-n", "2", "/nonexistent/prog")
    assert (rc, out) == (255, "") and "execvp error on file /nonexistent/prog" in err
    assert sim.sub("mpirun", "--bogus", "true")[0] == 255
    assert sim.sub("mpirun", "-n", "8")[0] == 255


def test_install_writes_hccl_test_and_mpirun_at_their_paths(sim, tmp_path):
    prefix = str(tmp_path / "files")
    assert sim.sub("npu-sim", "install", "--prefix", prefix)[0] == 0
    for rel in ("Ascend/ascend-toolkit/latest/tools/hccl_test/bin/all_reduce_test", "mpich/bin/mpirun", "sbin/lspci"):
        path = os.path.join(prefix, rel)
        assert os.access(path, os.X_OK), rel
        with open(path) as handle:
            text = handle.read()
        assert text.startswith("#!/bin/sh\n") and "PYTHONPATH=%s\n" % TOOLS in text
    assert sim.sub("npu-sim", "fault", "set", "missing-tool", "--value", "all_reduce_test")[0] == 0
    assert not os.path.exists(os.path.join(prefix, "Ascend/ascend-toolkit/latest/tools/hccl_test/bin/all_reduce_test"))
    assert sim.sub("npu-sim", "fault", "clear", "missing-tool")[0] == 0
    assert os.path.exists(os.path.join(prefix, "Ascend/ascend-toolkit/latest/tools/hccl_test/bin/all_reduce_test"))


def test_calls_are_logged(sim):
    sim.sub("all_reduce_test", "-b", "8K", "-e", "8K")
    sim.sub("mpirun", "true")
    sim.sub("lspci", "-n")
    tools = sim.sub("npu-sim", "calls")[1]
    for tool in ("all_reduce_test", "mpirun", "lspci"):
        assert '"tool": "%s"' % tool in tools


def _pair_busbw(node, hosts, env=None):
    """busbw of a 16-rank all_reduce_test over ``hosts`` launched on ``node`` (tuned RDMA settings)."""
    args = ["-n", "16", "-hosts", hosts, "-genv", "HCCL_RDMA_SL", "4", "-genv", "HCCL_RDMA_TC", "132"]
    rc, out, err = _mpirun(node, *args, env=env)
    assert (rc, err) == (0, ""), err
    return _busbw(_rows(out)[0][2], 16)


def test_pairs_find_the_slow_node(nodes):
    one, two, three = nodes("node01", 1), nodes("node02", 2), nodes("node03", 3)
    for node in (one, two, three):
        _tune(node)
    assert three.sub("npu-sim", "fault", "set", "slow-node")[0] == 0          # default factor 0.25
    # a run over all three is slow, but does not say which node is to blame
    rc, out, _err = _mpirun(one, "-hosts", "node01,node02,node03", "-genv", "HCCL_RDMA_SL", "4", "-genv",
                            "HCCL_RDMA_TC", "132")
    assert _busbw(_rows(out)[0][2], 24) == pytest.approx(8 * 22.5 * 0.25, rel=0.02)
    # pairs do: the one without node03 is fast, both pairs with it are slow
    assert _pair_busbw(one, "node01,node02") == pytest.approx(LOSSLESS, rel=0.02)
    assert _pair_busbw(two, "node02,node03") == pytest.approx(8 * 22.5 * 0.25, rel=0.02)
    assert _pair_busbw(one, "node01,node03") == pytest.approx(8 * 22.5 * 0.25, rel=0.02)
    # the pair is the hosts named, wherever mpirun is started
    assert _pair_busbw(one, "node02,node03") == pytest.approx(8 * 22.5 * 0.25, rel=0.02)
    assert _pair_busbw(three, "node01,node02") == pytest.approx(LOSSLESS, rel=0.02)
    # inside node03 nothing is slow: HCCS does not use the ports
    assert _busbw(_rows(_mpirun(three, "-n", "8")[1])[0][2], 8) == pytest.approx(137.2, rel=0.01)
    assert three.sub("npu-sim", "fault", "clear", "slow-node")[0] == 0
    assert _pair_busbw(two, "node02,node03") == pytest.approx(LOSSLESS, rel=0.02)


def test_a_slow_port_slows_cross_node_runs_that_use_it(nodes):
    one, two = nodes("node01", 1), nodes("node02", 2)
    assert two.sub("npu-sim", "fault", "set", "slow-port", "--device", "5", "--value", "0.5")[0] == 0
    # untuned (lossy, 3.0 GB/s) x 0.5
    assert _busbw(_rows(_mpirun(one, "-hosts", "node01,node02")[1])[0][2], 16) == pytest.approx(1.5, rel=0.02)
    # intra-node runs are not affected, on that node either
    assert _busbw(_rows(_mpirun(two, "-n", "8")[1])[0][2], 8) == pytest.approx(137.2, rel=0.01)
    # -p 4 uses NPUs 0-3 of each node: port 5 is not in the run
    program = [sys.executable, "-m", "npu_sim", "all_reduce_test", "-b", "1G", "-e", "1G", "-p", "4"]
    out = one.sub("mpirun", "-hosts", "node01,node02", *program)[1]
    assert _busbw(_rows(out)[0][2], 8) == pytest.approx(3.0, rel=0.02)
    # two slow nodes: the ring runs at the speed of the slowest (the smallest factor), not the product
    assert one.sub("npu-sim", "fault", "set", "slow-node", "--value", "0.8")[0] == 0
    assert _busbw(_rows(_mpirun(one, "-hosts", "node01,node02")[1])[0][2], 16) == pytest.approx(1.5, rel=0.02)
    assert two.sub("npu-sim", "fault", "clear", "slow-port", "--device", "5")[0] == 0
    assert _busbw(_rows(_mpirun(one, "-hosts", "node01,node02")[1])[0][2], 16) == pytest.approx(2.4, rel=0.02)


@pytest.mark.parametrize("args", [("slow-node", "--device", "1"), ("slow-port", "--device", "1", "--value", "0"),
                                  ("slow-port", "--value", "1.5"), ("slow-node", "--value", "fast"),
                                  ("slow-port", "--device", "8")])
def test_slow_fault_validation(sim, args):
    rc, out, err = sim.sub("npu-sim", "fault", "set", *args)
    assert (rc, out) == (2, "") and err.startswith("npu-sim: ")
