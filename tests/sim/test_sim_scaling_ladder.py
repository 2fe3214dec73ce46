"""The figures of stage 4's scaling ladder in the simulator: hccl_test's AllReduce under the mpirun stand-in on the
first 1, 2 and 4 nodes of a PoD. One node runs at the intra-node HCCS figure; across nodes every port (rail) of a node
carries its NPU's share, capped by HCCS, less a latency that grows with the node count; a ``slow-port`` fault on one
node slows every rung that includes that node (its rail holds the ring back) and no rung without it."""

import os
import re
import sys

import pytest

from simhelpers import TOOLS

TUNED = ["-genv", "HCCL_RDMA_SL", "4", "-genv", "HCCL_RDMA_TC", "132"]
ROW = re.compile(r"^(\d+) +\| (\d+\.\d\d) +\| (\d+\.\d{5}) +\| (success|NULL)$")
FOUR = ["node01", "node02", "node03", "node04"]


def _tune(node):
    for npu in node.data["npus"]:
        npu["net"]["pfc"] = [0, 0, 0, 0, 1, 0, 0, 0]
        npu["net"]["dscp_to_tc"][33] = 3
        npu["net"]["mtu"] = 9000
    node.save()


def _rung(node, count, npus=8):
    """busbw (GB/s) of the 1 GiB AllReduce on the first ``count`` nodes, as hccl_test's table gives it."""
    program = [sys.executable, "-c", "import sys; sys.path.insert(0, %r); from npu_sim.__main__ import main; "
               "sys.exit(main(['all_reduce_test'] + sys.argv[1:]))" % os.path.dirname(TOOLS)]
    args = ["-n", str(count * npus), "-hosts", ",".join(FOUR[:count])] + TUNED + program + [
        "-b", "1G", "-e", "1G", "-p", str(npus)]
    rc, out, err = node.sub("mpirun", *args)
    assert (rc, err) == (0, ""), err
    rows = [ROW.match(line) for line in out.splitlines()[2:]]
    assert all(rows), out
    ranks = count * npus
    return float(rows[-1].group(3)) * 2 * (ranks - 1) / ranks


def test_the_ladder_scales_at_the_hccs_figure_and_a_slow_port_drops_the_rungs_of_its_node(nodes):
    pod = [nodes(name, index) for index, name in enumerate(FOUR, 1)]
    for node in pod:
        _tune(node)
    first = pod[0]
    healthy = [_rung(first, count) for count in (1, 2, 4)]
    assert healthy[0] == pytest.approx(137.2, rel=0.01)            # HCCS inside one node
    # across nodes: 8 rails x 22.5 GB/s capped by HCCS, a little less with every doubling (the latency of the hops)
    assert healthy[0] > healthy[1] > healthy[2] > 0.95 * healthy[0]
    assert pod[2].sub("npu-sim", "fault", "set", "slow-port", "--device", "3")[0] == 0   # factor 0.25
    try:
        slowed = [_rung(first, count) for count in (1, 2, 4)]
        assert slowed[:2] == pytest.approx(healthy[:2], rel=0.001)    # rungs without node03
        assert slowed[2] == pytest.approx(8 * 22.5 * 0.25, rel=0.02)  # its rail holds the ring back
        assert slowed[2] / slowed[0] < 0.70
        # a run that leaves the slow port's NPU out is not slowed (hccl_test -p 2: NPUs 0 and 1 of each node)
        assert _rung(first, 4, npus=2) == pytest.approx(28 * 0.7, rel=0.02)
    finally:
        assert pod[2].sub("npu-sim", "fault", "clear", "slow-port")[0] == 0
