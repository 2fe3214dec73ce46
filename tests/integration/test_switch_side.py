"""The switch side of the stage 4 intent on the simulated PoD: the switch files rendered from LLDP, and each injected
switch-side mismatch (a smaller maximum frame size, PFC on another priority, no ECN) found from the hosts and named by
node, NPU, switch and switch port.

The simulator cables NPU d of node n to switch leaf-0<d//2+1>, port 400GE1/<d//2+1>/<n+1>:<d%2+1> (docs/simulator.md).
"""

import glob
import json
import os

import pytest

from conftest import NODES

FAMILIES = {"npuops_switch_family": "huawei_ce_a",
            "npuops_switches": {"leaf-02": {"family": "huawei_ce_b"}, "leaf-03": {"family": "sonic"},
                                "leaf-04": {"family": "cumulus"}}}


def port_of(node_index, device):
    return "leaf-%02d" % (device // 2 + 1), "400GE1/%d/%d:%d" % (device // 2 + 1, node_index + 1, device % 2 + 1)


@pytest.fixture
def clean_faults(pod):
    yield
    for node in NODES:
        pod.node(node, "npu-sim", "fault", "clear")


def newest_run(pod):
    runs = sorted(glob.glob(os.path.join(pod.reports, "*", "switch")), key=os.path.getmtime)
    assert runs, "no switch directory under %s" % pod.reports
    return runs[-1]


def test_switch_files_from_lldp_change_nothing(pod):
    before = pod.snapshot()
    rc, out = pod.playbook("switch_config.yml", FAMILIES)
    assert rc == 0, out
    assert pod.snapshot() == before
    switch_dir = newest_run(pod)
    files = sorted(os.listdir(switch_dir))
    assert files == ["leaf-01.cfg", "leaf-02.cfg", "leaf-03.json", "leaf-04.nvue.sh", "neighbours.json"], files
    with open(os.path.join(switch_dir, "neighbours.json"), encoding="utf-8") as handle:
        neighbours = json.load(handle)
    assert neighbours["unseen"] == [] and neighbours["conflicts"] == []
    assert len(neighbours["ports"]) == 8 * len(NODES)
    # every port of leaf-01 (NPU 0 and 1 of each node) has its interface section in the CloudEngine file, no other
    with open(os.path.join(switch_dir, "leaf-01.cfg"), encoding="utf-8") as handle:
        ce = handle.read()
    wanted = sorted(port_of(index, dev)[1] for index in (1, 2) for dev in (0, 1))
    interfaces = sorted(line.split()[1] for line in ce.splitlines() if line.startswith("interface "))
    assert interfaces == wanted
    assert "undo priority 3" not in ce or "priority 4" in ce
    with open(os.path.join(switch_dir, "leaf-03.json"), encoding="utf-8") as handle:
        patch = json.load(handle)
    paths = [op["path"] for op in patch]
    assert "/DSCP_TO_TC_MAP/AZURE/33" in paths
    assert any(path.startswith("/PFC_WD/") for path in paths)
    # PORT_QOS_MAP comes before PFC_WD (SONiC applies a watchdog only on a lossless port)
    first_wd = min(i for i, path in enumerate(paths) if path.startswith("/PFC_WD/"))
    assert max(i for i, path in enumerate(paths) if path.startswith("/PORT_QOS_MAP/")) < first_wd
    assert "switch files in" in out


def test_small_switch_frame_stops_stage4_before_any_change(pod, clean_faults):
    pod.node("node02", "npu-sim", "fault", "set", "switch-frame", "--device", "3", "--value", "1518")
    before = pod.snapshot()
    rc, out = pod.playbook("roce_lossless.yml")
    assert rc != 0, out
    switch, port = port_of(2, 3)
    assert ("node02 NPU 3: switch %s port %s advertises a maximum frame size of 1518 bytes, below the 9018 bytes an MTU "
            "9000 frame needs" % (switch, port)) in out, out
    assert "before anything was set" in out
    assert pod.snapshot() == before


def test_pfc_on_another_switch_priority_is_named_at_the_gate(pod, clean_faults):
    pod.node("node02", "npu-sim", "fault", "set", "switch-pfc-priority", "--device", "6", "--value", "3")
    rc, out = pod.playbook("roce_lossless.yml")
    assert rc != 0, out
    switch, port = port_of(2, 6)
    assert "node02 NPU 6: switch %s port %s paused the NPU on another priority than the lossless 4" % (switch, port) in out
    assert "Stage 4 (roce_lossless) gate failed" in out
    # the NPU side holds the intent: the switch finding goes to the gate, it does not undo the change
    pfc = pod.node("node02", "/usr/local/Ascend/driver/tools/hccn_tool", "-i", "6", "-pfc", "-g")
    assert "enabled    0 0 0 0 1 0 0 0" in pfc, pfc


def test_no_ecn_is_found_under_the_benchmark(pod, clean_faults):
    pod.node("node02", "npu-sim", "fault", "set", "switch-no-ecn", "--device", "5")
    rc, out = pod.playbook("roce_lossless.yml", {"roce_lossless_switch_ecn_required": True})
    assert rc != 0, out
    switch, port = port_of(2, 5)
    assert ("node02 NPU 5: no CNP was sent or received during the cross-node benchmark (roce_tx_cnp_pkt_num and "
            "roce_rx_cnp_pkt_num did not grow): switch %s port %s does not seem to mark ECN on queue 4" % (switch, port)) in out
    # only the faulted port: every other port saw CNP
    assert out.count("no CNP was sent or received") == out.count("node02 NPU 5: no CNP")
